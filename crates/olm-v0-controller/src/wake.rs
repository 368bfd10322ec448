//! Where a change goes: each watch event is turned, by one `on_*` function per kind, into the
//! objects it concerns ([`Woken`]), which [`Wake`] sends to the controllers' queues.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use futures::channel::mpsc;
use futures::{SinkExt, Stream, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::PartialObjectMeta;
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use olm_runtime::watch::RecoveringExt as _;
use olm_v0_api::v1::{OLMConfig, OperatorGroup};
use olm_v0_api::v1alpha1::{
    CatalogSource, ClusterServiceVersion, ClusterServiceVersionPhase, ConditionReason, InstallPlan,
    Subscription,
};
use olm_v0_api::v2::OperatorCondition;

use crate::index::Index;
use crate::olm_operator::{operators, tenant};
use crate::{lock, phase_and_reason};

/// The receiving ends of [`Wake`]'s queues, one per controller.
pub(crate) struct Queues {
    pub(crate) resolve: mpsc::Receiver<String>,
    pub(crate) plans: mpsc::Receiver<String>,
    pub(crate) csv: mpsc::Receiver<ObjectRef<ClusterServiceVersion>>,
    pub(crate) copy: mpsc::Receiver<ObjectRef<ClusterServiceVersion>>,
    pub(crate) group: mpsc::Receiver<ObjectRef<OperatorGroup>>,
    pub(crate) gone: mpsc::Receiver<Gone>,
    pub(crate) operator: mpsc::Receiver<operators::Work>,
}

/// Where the watches send what they wake.
#[derive(Clone)]
pub struct Wake {
    /// Namespaces whose Subscriptions to resolve.
    resolve: mpsc::Sender<String>,
    /// InstallPlans (`namespace/name`) to execute.
    plans: mpsc::Sender<String>,
    csv: mpsc::Sender<ObjectRef<ClusterServiceVersion>>,
    copy: mpsc::Sender<ObjectRef<ClusterServiceVersion>>,
    group: mpsc::Sender<ObjectRef<OperatorGroup>>,
    gone: mpsc::Sender<Gone>,
    operator: mpsc::Sender<operators::Work>,
}

/// Something deleted whose leftovers OLM removes: a CSV's copies, a group's ClusterRoles and
/// namespace labels.
#[derive(Debug, Clone)]
pub(crate) enum Gone {
    /// The CSV `namespace/name`.
    Csv(String, String),
    /// The OperatorGroup `namespace/name`.
    Group(String, String),
    /// The APIService of that name, whose owner CSV is gone.
    ApiService(String),
}

impl Wake {
    /// The queues, bounded so that a burst of events waits for the controllers instead of
    /// growing without limit.
    pub(crate) fn new() -> (Wake, Queues) {
        let (csv_tx, csv) = mpsc::channel(1024);
        let (copy_tx, copy) = mpsc::channel(1024);
        let (group_tx, group) = mpsc::channel(1024);
        let (gone_tx, gone) = mpsc::channel(1024);
        let (operator_tx, operator) = mpsc::channel(1024);
        let (resolve_tx, resolve) = mpsc::channel(1024);
        let (plan_tx, plans) = mpsc::channel(1024);
        let wake = Wake {
            resolve: resolve_tx,
            plans: plan_tx,
            csv: csv_tx,
            copy: copy_tx,
            group: group_tx,
            gone: gone_tx,
            operator: operator_tx,
        };
        let queues = Queues {
            resolve,
            plans,
            csv,
            copy,
            group,
            gone,
            operator,
        };
        (wake, queues)
    }

    /// Where the Operator controller asks itself for more work.
    pub(crate) fn operator_sender(&self) -> mpsc::Sender<operators::Work> {
        self.operator.clone()
    }

    pub(crate) async fn csvs(
        &mut self,
        refs: impl IntoIterator<Item = ObjectRef<ClusterServiceVersion>>,
    ) {
        for r in refs {
            if self.csv.send(r).await.is_err() {
                return;
            }
        }
    }

    pub(crate) async fn copies(
        &mut self,
        refs: impl IntoIterator<Item = ObjectRef<ClusterServiceVersion>>,
    ) {
        for r in refs {
            if self.copy.send(r).await.is_err() {
                return;
            }
        }
    }

    async fn groups(&mut self, refs: impl IntoIterator<Item = ObjectRef<OperatorGroup>>) {
        for r in refs {
            if self.group.send(r).await.is_err() {
                return;
            }
        }
    }

    async fn operators(&mut self, work: impl IntoIterator<Item = operators::Work>) {
        for w in work {
            if self.operator.send(w).await.is_err() {
                return;
            }
        }
    }

    async fn keys(sender: &mut mpsc::Sender<String>, keys: impl IntoIterator<Item = String>) {
        for k in keys {
            if sender.send(k).await.is_err() {
                return;
            }
        }
    }

    async fn gone(&mut self, gone: impl IntoIterator<Item = Gone>) {
        for g in gone {
            if self.gone.send(g).await.is_err() {
                return;
            }
        }
    }

    /// Every CSV, group, Subscription namespace and InstallPlan, and the parents of every copy:
    /// after a watch listed again.
    pub(crate) async fn everything(&mut self, index: &Index) {
        let parents = index.copies.parents();
        self.gone(parents.into_iter().map(|(ns, n)| Gone::Csv(ns, n)))
            .await;
        let csvs: Vec<_> = index
            .csvs
            .state()
            .iter()
            .map(|c| ObjectRef::from_obj(&**c))
            .collect();
        let groups: Vec<_> = index
            .groups
            .state()
            .iter()
            .map(|g| ObjectRef::from_obj(&**g))
            .collect();
        // Subscriptions and InstallPlans too: a pass that failed while the API server was away
        // waits out its backoff otherwise.
        let namespaces: BTreeSet<String> = index
            .subscriptions
            .state()
            .iter()
            .filter_map(|s| s.namespace())
            .collect();
        let plans: Vec<String> = index
            .installplans
            .state()
            .iter()
            .map(|p| format!("{}/{}", p.namespace().unwrap_or_default(), p.name_any()))
            .collect();
        self.csvs(csvs.clone()).await;
        self.copies(csvs).await;
        self.groups(groups).await;
        Wake::keys(&mut self.resolve, namespaces).await;
        Wake::keys(&mut self.plans, plans).await;
    }
}

/// What a watch event concerns: the object as it is now (applied) or was (deleted).
pub(crate) enum Change<K> {
    Applied(K),
    Deleted(K),
}

/// Runs one reflector: every event updates `writer`'s cache, then `react` hears of it. After
/// the first full list, a repeated one (a watch that had to start over) wakes everything.
pub(crate) async fn watch<K, S>(
    name: &'static str,
    writer: reflector::store::Writer<K>,
    stream: S,
    index: Index,
    mut wake: Wake,
    react: impl Fn(&Index, Change<&K>) -> Woken,
) where
    K: Resource + Clone + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + Default,
    S: Stream<Item = Result<Event<K>, watcher::Error>> + Send,
{
    let mut listed_once = false;
    let events = reflector::reflector(writer, stream.recovering(name));
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        let woken = match event {
            Ok(Event::Apply(o)) => react(&index, Change::Applied(&o)),
            Ok(Event::Delete(o)) => react(&index, Change::Deleted(&o)),
            Ok(Event::InitDone) => {
                if listed_once {
                    wake.everything(&index).await;
                }
                listed_once = true;
                Woken::default()
            }
            Ok(Event::Init | Event::InitApply(_)) => Woken::default(),
            // Logged by the recovery, which also paces the retries.
            Err(_) => Woken::default(),
        };
        wake.csvs(woken.csvs).await;
        wake.copies(woken.copies).await;
        wake.groups(woken.groups).await;
        wake.gone(woken.gone).await;
        wake.operators(woken.operators).await;
        Wake::keys(&mut wake.resolve, woken.namespaces).await;
        Wake::keys(&mut wake.plans, woken.plans).await;
    }
}

/// The objects a change wakes.
#[derive(Default)]
pub(crate) struct Woken {
    csvs: Vec<ObjectRef<ClusterServiceVersion>>,
    /// Parents whose copies to bring in step.
    copies: Vec<ObjectRef<ClusterServiceVersion>>,
    groups: Vec<ObjectRef<OperatorGroup>>,
    gone: Vec<Gone>,
    /// Operators and adoptions.
    operators: Vec<operators::Work>,
    /// Namespaces whose Subscriptions to resolve.
    namespaces: Vec<String>,
    /// InstallPlans (`namespace/name`) to execute.
    plans: Vec<String>,
}

pub(crate) fn csv_ref(namespace: &str, name: &str) -> ObjectRef<ClusterServiceVersion> {
    ObjectRef::new(name).within(namespace)
}

fn group_refs(index: &Index, namespace: &str) -> Vec<ObjectRef<OperatorGroup>> {
    index
        .groups_in(namespace)
        .iter()
        .map(|g| ObjectRef::from_obj(&**g))
        .collect()
}

fn csv_refs(csvs: &[Arc<ClusterServiceVersion>]) -> Vec<ObjectRef<ClusterServiceVersion>> {
    csvs.iter().map(|c| ObjectRef::from_obj(&**c)).collect()
}

/// A CSV changed: itself, the CSVs of its namespace that replace it, every CSV it replaces
/// along the chain (one waits on the other's phase, and the oldest of a chain is the one that
/// goes once the newest succeeded), and the groups of its namespace (their provided APIs).
pub(crate) fn on_csv(index: &Index, change: Change<&ClusterServiceVersion>) -> Woken {
    let (c, deleted) = match change {
        Change::Applied(c) => (c, false),
        Change::Deleted(c) => (c, true),
    };
    let namespace = c.namespace().unwrap_or_default();
    let name = c.name_any();
    let resolve = vec![namespace.clone()];
    let mut csvs = vec![csv_ref(&namespace, &name)];
    let all = index.csvs_in(&namespace);
    for other in &all {
        if other.spec.replaces.as_deref() == Some(name.as_str()) && other.name_any() != name {
            csvs.push(ObjectRef::from_obj(&**other));
        }
    }
    let mut seen = HashSet::from([name.clone()]);
    let mut older = c.spec.replaces.clone();
    while let Some(o) = older.filter(|o| seen.insert(o.clone())) {
        let Some(found) = all.iter().find(|x| x.name_any() == o) else {
            break;
        };
        csvs.push(ObjectRef::from_obj(&**found));
        older = found.spec.replaces.clone();
    }
    Woken {
        csvs,
        copies: if deleted {
            Vec::new()
        } else {
            vec![csv_ref(&namespace, &name)]
        },
        groups: group_refs(index, &namespace),
        gone: if deleted {
            vec![Gone::Csv(namespace, name)]
        } else {
            Vec::new()
        },
        operators: operators::on_csv(index, c, deleted),
        namespaces: resolve,
        ..Woken::default()
    }
}

/// A group changed: itself, the CSVs of its namespace (their annotations and membership), and
/// its namespace's InstallPlans (the ServiceAccount they run as).
pub(crate) fn on_group(index: &Index, change: Change<&OperatorGroup>) -> Woken {
    let (g, deleted) = match change {
        Change::Applied(g) => (g, false),
        Change::Deleted(g) => (g, true),
    };
    let namespace = g.namespace().unwrap_or_default();
    let csvs = csv_refs(&index.csvs_in(&namespace));
    let plans = index
        .installplans_in(&namespace)
        .iter()
        .map(|p| format!("{namespace}/{}", p.name_any()))
        .collect();
    Woken {
        plans,
        csvs: csvs.clone(),
        copies: csvs,
        groups: group_refs(index, &namespace),
        namespaces: vec![namespace.clone()],
        gone: if deleted {
            vec![Gone::Group(namespace, g.name_any())]
        } else {
            Vec::new()
        },
        ..Woken::default()
    }
}

/// A Subscription changed: its namespace is resolved again, the CSV it installed looked at, and
/// what it installed adopted by its Operator.
pub(crate) fn on_subscription(_: &Index, change: Change<&Subscription>) -> Woken {
    let (s, deleted) = match change {
        Change::Applied(s) => (s, false),
        Change::Deleted(s) => (s, true),
    };
    let namespace = s.namespace().unwrap_or_default();
    // The CSV it installed: its Deployments carry the Subscription's config.
    let installed = s
        .status
        .as_ref()
        .and_then(|st| st.installed_csv.as_deref())
        .filter(|n| !n.is_empty())
        .map(|n| csv_ref(&namespace, n));
    Woken {
        csvs: installed.into_iter().collect(),
        namespaces: vec![namespace],
        operators: operators::on_subscription(s, deleted),
        ..Woken::default()
    }
}

/// An InstallPlan changed: it is executed, and its namespace's Subscriptions follow its phase.
pub(crate) fn on_installplan(_: &Index, change: Change<&InstallPlan>) -> Woken {
    let (Change::Applied(p) | Change::Deleted(p)) = change;
    let namespace = p.namespace().unwrap_or_default();
    Woken {
        plans: vec![format!("{namespace}/{}", p.name_any())],
        namespaces: vec![namespace],
        ..Woken::default()
    }
}

/// A CatalogSource changed (its priority, or it came or went): the namespaces with
/// Subscriptions that may use it — its own, or all of them for the global namespace's (which
/// the Subscription controller tells apart; here every namespace with Subscriptions in the
/// catalog's namespace or any, when the catalog is global, is woken by the content change
/// itself).
pub(crate) fn on_catalogsource(index: &Index, change: Change<&CatalogSource>) -> Woken {
    let (Change::Applied(c) | Change::Deleted(c)) = change;
    let namespace = c.namespace().unwrap_or_default();
    let namespaces = index
        .subscriptions
        .state()
        .iter()
        .filter_map(|s| s.namespace())
        .filter(|ns| *ns == namespace)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    Woken {
        namespaces,
        ..Woken::default()
    }
}

/// A namespace appeared, changed labels or went: groups that select namespaces by label or
/// target it, and CSVs copied to every namespace (a new one needs its copy).
pub(crate) fn on_namespace(index: &Index, change: Change<&PartialObjectMeta<Namespace>>) -> Woken {
    let n = match change {
        Change::Applied(n) | Change::Deleted(n) => n,
    };
    let name = n.name_any();
    let groups = index
        .groups
        .state()
        .iter()
        .filter(|g| {
            let by_selector = g.spec.target_namespaces.is_empty() && g.spec.selector.is_some();
            let targets = g
                .status
                .as_ref()
                .is_some_and(|s| s.namespaces.contains(&name));
            by_selector || targets || g.namespace().as_deref() == Some(name.as_str())
        })
        .map(|g| ObjectRef::from_obj(&**g))
        .collect();
    let csvs = index
        .csvs
        .state()
        .iter()
        .filter(|c| {
            c.annotations()
                .get(olm_v0::olm_operator::membership::TARGET_NAMESPACES_ANNOTATION)
                .is_some_and(|t| t.is_empty())
        })
        .map(|c| ObjectRef::from_obj(&**c))
        .collect();
    Woken {
        copies: csvs,
        groups,
        ..Woken::default()
    }
}

/// A Deployment of a CSV changed: that CSV.
pub(crate) fn on_deployment(_: &Index, change: Change<&Deployment>) -> Woken {
    let d = match change {
        Change::Applied(d) | Change::Deleted(d) => d,
    };
    Woken {
        csvs: olm_v0::olm_operator::adoption::owner_csv(d.labels())
            .map(|(namespace, name)| csv_ref(namespace, name))
            .into_iter()
            .collect(),
        ..Woken::default()
    }
}

/// A CRD changed: the CSVs that own or require it.
pub(crate) fn on_crd(index: &Index, change: Change<&CustomResourceDefinition>) -> Woken {
    let crd = match change {
        Change::Applied(c) | Change::Deleted(c) => c,
    };
    let name = crd.name_any();
    let csvs = index
        .csvs
        .state()
        .iter()
        .filter(|c| {
            c.spec
                .custom_resource_definitions
                .as_ref()
                .is_some_and(|d| {
                    d.owned
                        .iter()
                        .chain(d.required.iter())
                        .any(|r| r.name == name)
                })
        })
        .map(|c| ObjectRef::from_obj(&**c))
        .collect();
    Woken {
        csvs,
        ..Woken::default()
    }
}

/// An OperatorCondition changed: its CSV and the CSVs that would replace it (the upgrade gate).
pub(crate) fn on_condition(index: &Index, change: Change<&OperatorCondition>) -> Woken {
    let c = match change {
        Change::Applied(c) | Change::Deleted(c) => c,
    };
    let namespace = c.namespace().unwrap_or_default();
    let name = c.name_any();
    let mut csvs = vec![csv_ref(&namespace, &name)];
    csvs.extend(
        index
            .csvs_in(&namespace)
            .iter()
            .filter(|o| o.spec.replaces.as_deref() == Some(name.as_str()))
            .map(|o| ObjectRef::from_obj(&**o)),
    );
    Woken {
        csvs,
        ..Woken::default()
    }
}

/// The OLMConfig changed: the copies of every CSV (on or off).
pub(crate) fn on_config(index: &Index, _: Change<&OLMConfig>) -> Woken {
    Woken {
        copies: csv_refs(&index.csvs.state()),
        ..Woken::default()
    }
}

/// RBAC changed: the CSVs still waiting for their requirements, and those their group's account
/// could not install (of the object's namespace, or all for cluster-wide RBAC).
pub(crate) fn on_rbac<K: kube::Resource>(index: &Index, change: Change<&K>) -> Woken {
    let o = match change {
        Change::Applied(o) | Change::Deleted(o) => o,
    };
    let namespace = o.meta().namespace.clone();
    // A namespaced Role or RoleBinding of a CSV's install, or of its tenant RBAC: the parent's
    // copies controller keeps the tenant RBAC in step.
    let copies = namespace
        .as_ref()
        .and_then(|_| tenant::parent_of(o.meta().labels.as_ref()?))
        .map(|(ns, name)| csv_ref(&ns, &name))
        .into_iter()
        .collect();
    let mut csvs = Vec::new();
    for c in index.csvs.state() {
        if namespace.is_some() && c.namespace() != namespace {
            continue;
        }
        let (phase, reason) = phase_and_reason(&c);
        let no_retry = reason == Some(&ConditionReason::InstallComponentFailedNoRetry);
        if no_retry {
            lock(&index.rbac_changed).insert(format!(
                "{}/{}",
                c.namespace().unwrap_or_default(),
                c.name_any()
            ));
        }
        if no_retry || phase == Some(&ClusterServiceVersionPhase::Pending) {
            csvs.push(ObjectRef::from_obj(&*c));
        }
    }
    Woken {
        csvs,
        copies,
        ..Woken::default()
    }
}

/// An APIService changed (its availability, mostly): the CSV that owns it, and the CSVs that
/// require its group and version.
pub(crate) fn on_apiservice(index: &Index, change: Change<&APIService>) -> Woken {
    let a = match change {
        Change::Applied(a) | Change::Deleted(a) => a,
    };
    let mut csvs: Vec<_> = olm_v0::olm_operator::adoption::owner_csv(a.labels())
        .map(|(namespace, name)| csv_ref(namespace, name))
        .into_iter()
        .collect();
    let name = a.name_any();
    for c in index.csvs.state() {
        let requires = c
            .spec
            .api_service_definitions
            .iter()
            .flat_map(|d| d.required.iter())
            .any(|r| format!("{}.{}", r.version, r.group) == name);
        if requires {
            csvs.push(ObjectRef::from_obj(&*c));
        }
    }
    let orphaned = matches!(change, Change::Applied(_))
        && olm_v0::olm_operator::adoption::orphaned(a.labels(), |ns, n| index.csv(ns, n).is_some());
    Woken {
        csvs,
        gone: if orphaned {
            vec![Gone::ApiService(name)]
        } else {
            Vec::new()
        },
        ..Woken::default()
    }
}
