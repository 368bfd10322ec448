//! OLM v0 on a cluster, as upstream splits it into processes, each in its own room:
//!
//! * olm-operator ([`olm_operator`]): OperatorGroups, ClusterServiceVersions and their copies,
//!   the Operator aggregates, and the install of a CSV's Deployments, RBAC and serving
//!   certificates;
//! * catalog-operator ([`catalog_operator`]): CatalogSources and their registries, Subscriptions
//!   resolved against them, and InstallPlans;
//! * packageserver ([`packageserver`]): PackageManifests served as an aggregated API.
//!
//! This file holds what they share: the caches every controller reads, filled by one watch per
//! kind, and [`run`], which starts them. What it is for: keeping caches of what the decisions of `olm-v0` read (namespaces, groups,
//! CSVs, their copies, Deployments, CRDs, OperatorConditions, OLMConfig), waking the right
//! object when any of them changes, and carrying out what the decisions return.
//!
//! The caches are filled by one watch per kind, each run as its own task ([`watch`]): every
//! event updates the cache first and then sends the objects it concerns to the controllers,
//! so a reconcile always sees the change that woke it. Copies of CSVs are kept as an index of
//! where they are plus two hashes computed as they arrive (upstream keeps hashes too), so that
//! fifty thousand copies cost about ten megabytes. Deployments are watched only when OLM
//! created them (the CSV owner labels), CRDs without their schemas.
//!
//! Caveat: once a watch has to list again (the API server lost its history), every CSV and
//! group is looked at again: the events of the gap are not known one by one.

mod catalog_operator;
mod error;
mod olm_operator;
pub mod packageserver;
mod queue;

use catalog_operator::{catalogsource, connection, installplans, subscriptions};
use olm_operator::{copies, csv, operatorgroup, operators, serving, tenant};

use olm_runtime::watch::RecoveringExt as _;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use futures::channel::mpsc;
use futures::{SinkExt, Stream, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, DeleteParams, PartialObjectMeta};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use olm_v0_api::v1::{OLMConfig, OperatorGroup};
use olm_v0_api::v1alpha1::{
    CatalogSource, ClusterServiceVersion, ClusterServiceVersionPhase, ConditionReason, InstallPlan,
    Subscription,
};
use olm_v0_api::v2::OperatorCondition;

use olm_cluster::context::Shared;

/// The name the CSV controller's metrics and logs go by.
pub const CSV_CONTROLLER: &str = "clusterserviceversion";
/// The name the copied-CSV controller's metrics and logs go by.
pub const COPY_CONTROLLER: &str = "copiedclusterserviceversion";
/// The name the OperatorGroup controller's metrics and logs go by.
pub const GROUP_CONTROLLER: &str = "operatorgroup";
pub use catalogsource::CATALOG_SOURCE_CONTROLLER;
pub use installplans::INSTALL_PLAN_CONTROLLER;
pub use operators::OPERATOR_CONTROLLER;
pub use subscriptions::SUBSCRIPTION_CONTROLLER;
/// Field owner of what olm-operator applies (upstream's).
pub const FIELD_MANAGER: &str = "operator-lifecycle-manager";
/// Source of the events olm-operator records (upstream's).
pub const EVENT_SOURCE: &str = "operator-lifecycle-manager";

/// The label every Deployment, Role and ClusterRole olm-operator creates for a CSV carries:
/// what its Deployment watch selects.
const OWNED_BY_CSV: &str = "olm.owner.kind=ClusterServiceVersion";

/// What the controllers read, kept current by the watches.
#[derive(Clone)]
pub struct Index {
    /// Namespaces (metadata only: names and labels are all that is read).
    pub namespaces: Store<PartialObjectMeta<Namespace>>,
    /// OperatorGroups.
    pub groups: Store<OperatorGroup>,
    /// CSVs that are not copies.
    pub csvs: Store<ClusterServiceVersion>,
    /// Copies of CSVs, by parent: where they are and hashes of their content.
    pub copies: Arc<copies::CopyIndex>,
    /// Deployments OLM made for CSVs.
    pub deployments: Store<Deployment>,
    /// CRDs without their schemas.
    pub crds: Store<CustomResourceDefinition>,
    /// OperatorConditions.
    pub conditions: Store<OperatorCondition>,
    /// OLMConfigs (only `cluster` is read).
    pub configs: Store<OLMConfig>,
    /// Roles, for permission checks.
    pub roles: Store<Role>,
    /// RoleBindings, for permission checks.
    pub role_bindings: Store<RoleBinding>,
    /// ClusterRoles, for permission checks.
    pub cluster_roles: Store<ClusterRole>,
    /// ClusterRoleBindings, for permission checks.
    pub cluster_role_bindings: Store<ClusterRoleBinding>,
    /// APIServices: their availability, which owned and required ones wait for.
    pub apiservices: Store<APIService>,
    /// Subscriptions.
    pub subscriptions: Store<Subscription>,
    /// InstallPlans.
    pub installplans: Store<InstallPlan>,
    /// CatalogSources (which catalogs a namespace may resolve from, and their priority).
    pub catalogsources: Store<CatalogSource>,
    /// CSVs (`namespace/name`) that failed for want of permissions and whose RBAC changed since.
    rbac_changed: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// What carries an operator's component label or belongs to a CSV.
    components: Arc<operators::ComponentIndex>,
}

impl Index {
    /// The OperatorGroups of `namespace`.
    pub fn groups_in(&self, namespace: &str) -> Vec<Arc<OperatorGroup>> {
        let mut out: Vec<Arc<OperatorGroup>> = self
            .groups
            .state()
            .into_iter()
            .filter(|g| g.namespace().as_deref() == Some(namespace))
            .collect();
        out.sort_by_key(|g| g.name_any());
        out
    }

    /// The CSVs (not copies) of `namespace`.
    pub fn csvs_in(&self, namespace: &str) -> Vec<Arc<ClusterServiceVersion>> {
        let mut out: Vec<Arc<ClusterServiceVersion>> = self
            .csvs
            .state()
            .into_iter()
            .filter(|c| c.namespace().as_deref() == Some(namespace))
            .collect();
        out.sort_by_key(|c| c.name_any());
        out
    }

    /// The Subscriptions of `namespace`, by name.
    pub fn subscriptions_in(&self, namespace: &str) -> Vec<Arc<Subscription>> {
        in_namespace(&self.subscriptions, namespace)
    }

    /// The InstallPlans of `namespace`, by name.
    pub fn installplans_in(&self, namespace: &str) -> Vec<Arc<InstallPlan>> {
        in_namespace(&self.installplans, namespace)
    }

    /// The CSV `namespace/name`, if it is not a copy.
    pub fn csv(&self, namespace: &str, name: &str) -> Option<Arc<ClusterServiceVersion>> {
        self.csvs.get(&ObjectRef::new(name).within(namespace))
    }

    /// Every namespace's name with its labels, sorted by name.
    pub fn namespaces(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.namespaces
            .state()
            .iter()
            .map(|n| (n.name_any(), n.labels().clone()))
            .collect()
    }

    /// Whether RBAC changed for the CSV `key` since it last asked (and forgets it).
    pub fn take_rbac_change(&self, key: &str) -> bool {
        lock(&self.rbac_changed).remove(key)
    }

    /// The cluster's RBAC, for permission checks.
    pub fn rbac(&self) -> olm_security::permissions::Rbac {
        fn all<K>(store: &Store<K>) -> Vec<K>
        where
            K: kube::Resource + Clone + 'static,
            K::DynamicType: Eq + std::hash::Hash + Clone,
        {
            store.state().iter().map(|o| (**o).clone()).collect()
        }
        olm_security::permissions::Rbac {
            cluster_roles: all(&self.cluster_roles),
            roles: all(&self.roles),
            cluster_role_bindings: all(&self.cluster_role_bindings),
            role_bindings: all(&self.role_bindings),
        }
    }

    /// How often registries' content is read again while they stay up: `OLMConfig cluster`'s
    /// `spec.features.packageServerSyncInterval`, 12 hours when unset or unusable.
    pub fn catalog_sync_interval(&self) -> std::time::Duration {
        let written = self
            .configs
            .get(&ObjectRef::new(olm_v0_api::v1::OLM_CONFIG_NAME))
            .and_then(|c| {
                c.spec
                    .features
                    .as_ref()
                    .and_then(|f| f.package_server_sync_interval.clone())
            });
        olm_v0::olmconfig::package_server_sync_interval(written.as_deref())
            .or_else(|| olm_v0::olmconfig::package_server_sync_interval(None))
            .unwrap_or(std::time::Duration::from_secs(12 * 3600))
    }

    /// `spec.features.disableCopiedCSVs` of `OLMConfig cluster`.
    pub fn copies_disabled(&self) -> Option<bool> {
        self.configs
            .get(&ObjectRef::new(olm_v0_api::v1::OLM_CONFIG_NAME))
            .and_then(|c| c.spec.features.as_ref().and_then(|f| f.disable_copied_csvs))
    }
}

/// The objects of `store` in `namespace`, sorted by name.
fn in_namespace<K>(store: &Store<K>, namespace: &str) -> Vec<Arc<K>>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    let mut out: Vec<Arc<K>> = store
        .state()
        .into_iter()
        .filter(|o| o.meta().namespace.as_deref() == Some(namespace))
        .collect();
    out.sort_by_key(|o| o.meta().name.clone());
    out
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

/// Now, to the second, as the API server writes times.
pub(crate) fn now() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    let now = jiff::Timestamp::now();
    k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        jiff::Timestamp::from_second(now.as_second()).unwrap_or(now),
    )
}

/// A CSV's `status.phase` and `status.reason` (`None` when unset).
pub(crate) fn phase_and_reason(
    csv: &ClusterServiceVersion,
) -> (
    Option<&ClusterServiceVersionPhase>,
    Option<&ConditionReason>,
) {
    let status = csv.status.as_ref();
    (
        status.and_then(|s| s.phase.as_ref()),
        status.and_then(|s| s.reason.as_ref()),
    )
}

/// A mutex's guard, whether or not a holder panicked (the data are caches and memos).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// [`olm_v0::strategy::csv_owner_labels`] as a label selector.
pub(crate) fn csv_owner_selector(namespace: &str, name: &str) -> String {
    olm_v0::strategy::csv_owner_labels(namespace, name)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether `labels` carry all of [`olm_v0::strategy::csv_owner_labels`].
pub(crate) fn owned_by_csv(labels: &BTreeMap<String, String>, namespace: &str, name: &str) -> bool {
    olm_v0::strategy::csv_owner_labels(namespace, name)
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
}

/// The Event recorder of olm-operator's controllers (upstream's event source).
pub fn recorder(client: &kube::Client) -> kube::runtime::events::Recorder {
    kube::runtime::events::Recorder::new(
        client.clone(),
        kube::runtime::events::Reporter {
            controller: EVENT_SOURCE.into(),
            instance: None,
        },
    )
}

/// Something deleted whose leftovers OLM removes: a CSV's copies, a group's ClusterRoles and
/// namespace labels.
#[derive(Debug, Clone)]
enum Gone {
    /// The CSV `namespace/name`.
    Csv(String, String),
    /// The OperatorGroup `namespace/name`.
    Group(String, String),
    /// The APIService of that name, whose owner CSV is gone.
    ApiService(String),
}

impl Wake {
    async fn csvs(&mut self, refs: impl IntoIterator<Item = ObjectRef<ClusterServiceVersion>>) {
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
enum Change<K> {
    Applied(K),
    Deleted(K),
}

/// Runs one reflector: every event updates `writer`'s cache, then `react` hears of it. After
/// the first full list, a repeated one (a watch that had to start over) wakes everything.
async fn watch<K, S>(
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
struct Woken {
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

fn csv_ref(namespace: &str, name: &str) -> ObjectRef<ClusterServiceVersion> {
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
fn on_csv(index: &Index, change: Change<&ClusterServiceVersion>) -> Woken {
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
fn on_group(index: &Index, change: Change<&OperatorGroup>) -> Woken {
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
fn on_subscription(_: &Index, change: Change<&Subscription>) -> Woken {
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
fn on_installplan(_: &Index, change: Change<&InstallPlan>) -> Woken {
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
fn on_catalogsource(index: &Index, change: Change<&CatalogSource>) -> Woken {
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
fn on_namespace(index: &Index, change: Change<&PartialObjectMeta<Namespace>>) -> Woken {
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
                .get(olm_v0::membership::TARGET_NAMESPACES_ANNOTATION)
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
fn on_deployment(_: &Index, change: Change<&Deployment>) -> Woken {
    let d = match change {
        Change::Applied(d) | Change::Deleted(d) => d,
    };
    Woken {
        csvs: olm_v0::adoption::owner_csv(d.labels())
            .map(|(namespace, name)| csv_ref(namespace, name))
            .into_iter()
            .collect(),
        ..Woken::default()
    }
}

/// A CRD changed: the CSVs that own or require it.
fn on_crd(index: &Index, change: Change<&CustomResourceDefinition>) -> Woken {
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
fn on_condition(index: &Index, change: Change<&OperatorCondition>) -> Woken {
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
fn on_config(index: &Index, _: Change<&OLMConfig>) -> Woken {
    Woken {
        copies: csv_refs(&index.csvs.state()),
        ..Woken::default()
    }
}

/// RBAC changed: the CSVs still waiting for their requirements, and those their group's account
/// could not install (of the object's namespace, or all for cluster-wide RBAC).
fn on_rbac<K: kube::Resource>(index: &Index, change: Change<&K>) -> Woken {
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
fn on_apiservice(index: &Index, change: Change<&APIService>) -> Woken {
    let a = match change {
        Change::Applied(a) | Change::Deleted(a) => a,
    };
    let mut csvs: Vec<_> = olm_v0::adoption::owner_csv(a.labels())
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
        && olm_v0::adoption::orphaned(a.labels(), |ns, n| index.csv(ns, n).is_some());
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

/// A CRD as the cache keeps it: what requirement checks read, not its schemas.
fn strip_crd(crd: &mut CustomResourceDefinition) {
    crd.metadata.managed_fields = None;
    for v in &mut crd.spec.versions {
        v.schema = None;
        v.additional_printer_columns = None;
    }
    crd.spec.conversion = crd.spec.conversion.take().map(|mut c| {
        if let Some(w) = c.webhook.as_mut()
            && let Some(cc) = w.client_config.as_mut()
        {
            cc.ca_bundle = None;
        }
        c
    });
}

/// Runs the OperatorGroup and CSV controllers, and the PackageManifest API as `packageserver`
/// says (reporting to `readiness` while it cannot listen), until `stop` resolves.
pub async fn run(
    shared: Arc<Shared>,
    packageserver: packageserver::Options,
    readiness: olm_runtime::health::Readiness,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let client = shared.client.clone();
    let (namespaces, namespace_writer) = reflector::store();
    let (groups, group_writer) = reflector::store();
    let (csvs, csv_writer) = reflector::store();
    let (deployments, deployment_writer) = reflector::store();
    let (crds, crd_writer) = reflector::store();
    let (conditions, condition_writer) = reflector::store();
    let (configs, config_writer) = reflector::store();
    let (roles, role_writer) = reflector::store();
    let (role_bindings, role_binding_writer) = reflector::store();
    let (cluster_roles, cluster_role_writer) = reflector::store();
    let (cluster_role_bindings, cluster_role_binding_writer) = reflector::store();
    let (apiservices, apiservice_writer) = reflector::store();
    let (subscriptions, subscription_writer) = reflector::store();
    let (installplans, installplan_writer) = reflector::store();
    let (catalogsources, catalogsource_writer) = reflector::store();
    let index = Index {
        namespaces,
        groups,
        csvs,
        copies: Arc::default(),
        deployments,
        crds,
        conditions,
        configs,
        roles,
        role_bindings,
        cluster_roles,
        cluster_role_bindings,
        apiservices,
        subscriptions,
        installplans,
        catalogsources,
        rbac_changed: Arc::default(),
        components: Arc::default(),
    };
    let (csv_tx, csv_rx) = mpsc::channel(1024);
    let (copy_tx, copy_rx) = mpsc::channel(1024);
    let (group_tx, group_rx) = mpsc::channel(1024);
    let (gone_tx, gone_rx) = mpsc::channel(1024);
    let (operator_tx, operator_rx) = mpsc::channel(1024);
    let (resolve_tx, resolve_rx) = mpsc::channel(1024);
    let (plan_tx, plan_rx) = mpsc::channel(1024);
    let (changed_tx, changed_rx) = mpsc::channel(256);
    let wake = Wake {
        resolve: resolve_tx,
        plans: plan_tx,
        csv: csv_tx,
        copy: copy_tx,
        group: group_tx,
        gone: gone_tx,
        operator: operator_tx.clone(),
    };
    let all = watcher::Config::default;
    let copied = olm_v0::status::COPIED_FROM_LABEL;
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(watch(
        "namespaces",
        namespace_writer,
        watcher::watcher(
            Api::<PartialObjectMeta<Namespace>>::all(client.clone()),
            all(),
        )
        .modify(|n| {
            // Names and labels are all that is read of a namespace; there may be 10,000.
            n.metadata = kube::api::ObjectMeta {
                name: n.metadata.name.take(),
                labels: n.metadata.labels.take(),
                resource_version: n.metadata.resource_version.take(),
                uid: n.metadata.uid.take(),
                ..kube::api::ObjectMeta::default()
            };
        }),
        index.clone(),
        wake.clone(),
        on_namespace,
    ));
    tasks.spawn(watch(
        "operatorgroups",
        group_writer,
        watcher::watcher(Api::<OperatorGroup>::all(client.clone()), all())
            .modify(|g| g.metadata.managed_fields = None),
        index.clone(),
        wake.clone(),
        on_group,
    ));
    tasks.spawn(watch(
        "clusterserviceversions",
        csv_writer,
        watcher::watcher(
            Api::<ClusterServiceVersion>::all(client.clone()),
            all().labels(&format!("!{copied}")),
        )
        .modify(|c| c.metadata.managed_fields = None),
        index.clone(),
        wake.clone(),
        on_csv,
    ));
    tasks.spawn(copies::watch(
        Api::<ClusterServiceVersion>::all(client.clone()),
        copied.to_owned(),
        index.clone(),
        wake.clone(),
    ));
    tasks.spawn(watch(
        "deployments",
        deployment_writer,
        watcher::watcher(
            Api::<Deployment>::all(client.clone()),
            all().labels(OWNED_BY_CSV),
        )
        .modify(|d| d.metadata.managed_fields = None),
        index.clone(),
        wake.clone(),
        on_deployment,
    ));
    tasks.spawn(watch(
        "customresourcedefinitions",
        crd_writer,
        watcher::watcher(Api::<CustomResourceDefinition>::all(client.clone()), all())
            .modify(strip_crd),
        index.clone(),
        wake.clone(),
        on_crd,
    ));
    tasks.spawn(watch(
        "operatorconditions",
        condition_writer,
        watcher::watcher(Api::<OperatorCondition>::all(client.clone()), all())
            .modify(|c| c.metadata.managed_fields = None),
        index.clone(),
        wake.clone(),
        on_condition,
    ));
    tasks.spawn(watch(
        "olmconfigs",
        config_writer,
        watcher::watcher(Api::<OLMConfig>::all(client.clone()), all())
            .modify(|c| c.metadata.managed_fields = None),
        index.clone(),
        wake.clone(),
        on_config,
    ));

    tasks.spawn(serving::watch_secrets(client.clone(), wake.clone()));
    tasks.spawn(watch(
        "apiservices",
        apiservice_writer,
        watcher::watcher(Api::<APIService>::all(client.clone()), all())
            .modify(|a| a.metadata.managed_fields = None),
        index.clone(),
        wake.clone(),
        on_apiservice,
    ));

    tasks.spawn(watch(
        "subscriptions",
        subscription_writer,
        watcher::watcher(Api::<Subscription>::all(client.clone()), all())
            .modify(|o| o.metadata.managed_fields = None),
        index.clone(),
        wake.clone(),
        on_subscription,
    ));
    tasks.spawn(watch(
        "installplans",
        installplan_writer,
        watcher::watcher(Api::<InstallPlan>::all(client.clone()), all())
            .modify(|o| o.metadata.managed_fields = None),
        index.clone(),
        wake.clone(),
        on_installplan,
    ));
    tasks.spawn(watch(
        "catalogsources",
        catalogsource_writer,
        watcher::watcher(Api::<CatalogSource>::all(client.clone()), all())
            .modify(|o| o.metadata.managed_fields = None),
        index.clone(),
        wake.clone(),
        on_catalogsource,
    ));

    macro_rules! rbac_watch {
        ($name:literal, $writer:ident, $kind:ty) => {
            tasks.spawn(watch(
                $name,
                $writer,
                watcher::watcher(Api::<$kind>::all(client.clone()), all())
                    .modify(|o| o.metadata.managed_fields = None),
                index.clone(),
                wake.clone(),
                on_rbac,
            ));
        };
    }
    rbac_watch!("roles", role_writer, Role);
    rbac_watch!("rolebindings", role_binding_writer, RoleBinding);
    rbac_watch!("clusterroles", cluster_role_writer, ClusterRole);
    rbac_watch!(
        "clusterrolebindings",
        cluster_role_binding_writer,
        ClusterRoleBinding
    );

    let stop = futures::FutureExt::shared(Box::pin(stop));
    // Decisions read several caches at once: none runs before every cache holds its first list.
    let ready = async {
        let _ = index.namespaces.wait_until_ready().await;
        let _ = index.groups.wait_until_ready().await;
        let _ = index.csvs.wait_until_ready().await;
        index.copies.wait_until_ready().await;
        let _ = index.deployments.wait_until_ready().await;
        let _ = index.crds.wait_until_ready().await;
        let _ = index.conditions.wait_until_ready().await;
        let _ = index.configs.wait_until_ready().await;
        let _ = index.roles.wait_until_ready().await;
        let _ = index.role_bindings.wait_until_ready().await;
        let _ = index.cluster_roles.wait_until_ready().await;
        let _ = index.cluster_role_bindings.wait_until_ready().await;
        let _ = index.apiservices.wait_until_ready().await;
        let _ = index.subscriptions.wait_until_ready().await;
        let _ = index.installplans.wait_until_ready().await;
        let _ = index.catalogsources.wait_until_ready().await;
    };
    tokio::select! {
        () = ready => {}
        () = stop.clone() => {
            tasks.abort_all();
            return;
        }
    }
    // Everything again whenever the API server is back after an outage.
    {
        let wake = wake.clone();
        let index = index.clone();
        tasks.spawn(olm_runtime::reconnect::on_each_return(move || {
            let mut wake = wake.clone();
            let index = index.clone();
            async move { wake.everything(&index).await }
        }));
    }
    // Everything once, sent while the controllers already take from the queues.
    let mut first = wake;
    let first_index = index.clone();
    let everything = async move { first.everything(&first_index).await };
    let groups = operatorgroup::run(shared.clone(), index.clone(), group_rx, stop.clone());
    let leftovers = tidy(shared.clone(), index.clone(), gone_rx);
    let copies = copies::run(shared.clone(), index.clone(), copy_rx, stop.clone());
    let owners = operators::run(
        shared.clone(),
        index.clone(),
        operator_tx,
        operator_rx,
        stop.clone(),
    );
    let connections = connection::Connections::new(changed_tx, index.clone());
    // Not one of `tasks`: on `stop` it takes its APIService away before it ends.
    let packages = packageserver::run(
        shared.clone(),
        index.clone(),
        connections.contents.clone(),
        packageserver,
        readiness,
        stop.clone(),
    );
    let sources = catalogsource::run(
        shared.clone(),
        index.clone(),
        connections.clone(),
        stop.clone(),
    );
    let subscriptions = subscriptions::run(
        shared.clone(),
        index.clone(),
        connections,
        resolve_rx,
        changed_rx,
        stop.clone(),
    );
    let plans = installplans::run(shared.clone(), index.clone(), plan_rx, stop.clone());
    let csvs = csv::run(shared, index, csv_rx, stop);
    let running = futures::future::join(
        futures::future::join5(groups, csvs, copies, everything, owners),
        futures::future::join4(sources, subscriptions, plans, packages),
    );
    // The tidying task only ends when every watch has; the controllers end on `stop`.
    tokio::select! {
        _ = running => {}
        () = leftovers => {}
    }
    tasks.abort_all();
}

/// Removes what deleted objects leave: a CSV's copies and APIServices once no CSV of that name
/// is in its namespace any more, a group's ClusterRoles and namespace labels, an APIService
/// whose owner CSV does not exist.
async fn tidy(shared: Arc<Shared>, index: Index, mut gone: mpsc::Receiver<Gone>) {
    while let Some(g) = gone.next().await {
        match g {
            Gone::Csv(namespace, name) => {
                if index.csv(&namespace, &name).is_none() {
                    copies::remove_all(&shared.client, &index, &namespace, &name).await;
                    let left: Vec<String> = index
                        .apiservices
                        .state()
                        .iter()
                        .filter(|a| {
                            olm_v0::adoption::owner_csv(a.labels())
                                == Some((namespace.as_str(), name.as_str()))
                        })
                        .map(|a| a.name_any())
                        .collect();
                    for service in left {
                        delete_orphaned_apiservice(&shared.client, &index, &service).await;
                    }
                }
            }
            Gone::ApiService(name) => {
                delete_orphaned_apiservice(&shared.client, &index, &name).await;
            }
            Gone::Group(namespace, name) => {
                operatorgroup::forget(&shared, &index, &namespace, &name).await;
            }
        }
    }
}

/// Deletes the APIService `name` when the caches, read now that they are complete, still say
/// its owner CSV is gone (upstream's `syncAPIService`); only the object that was judged, by
/// its uid, so one made again under the same name meanwhile stays.
async fn delete_orphaned_apiservice(client: &kube::Client, index: &Index, name: &str) {
    let Some(service) = index.apiservices.get(&ObjectRef::new(name)) else {
        return;
    };
    if !olm_v0::adoption::orphaned(service.labels(), |ns, n| index.csv(ns, n).is_some()) {
        return;
    }
    let params = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: service.uid(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match Api::<APIService>::all(client.clone())
        .delete(name, &params)
        .await
    {
        Ok(_) => {
            tracing::info!(apiservice = %name, "deleted an APIService whose owner CSV is gone")
        }
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
        Err(e) => {
            tracing::warn!(apiservice = %name, error = %e, "deleting an APIService whose owner CSV is gone failed");
        }
    }
}

/// A stream that never yields: the controllers are driven by [`Wake`] alone.
fn nothing<K: Send>() -> impl Stream<Item = Result<K, watcher::Error>> + Send {
    futures::stream::pending()
}
