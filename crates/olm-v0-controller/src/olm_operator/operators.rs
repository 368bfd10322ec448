//! `Operator` objects on the cluster: the index of what carries an `operators.coreos.com/<name>`
//! label or belongs to a CSV, the Operator controller that lists an operator's components in its
//! status (creating the Operator when components appear), and adoption, which hands a labelled
//! CSV's label on to what it owns. `olm_v0::olm_operator::operator` decides the names, keys,
//! conditions and status.
//!
//! Upstream caches every object of sixteen kinds in full (Secrets and ConfigMaps as metadata);
//! here each kind is watched as metadata only and an object is kept — kind, namespace, name,
//! its component label keys and CSV owners — only when it has one of those, so the cost is that
//! of the operators' objects, not of the cluster's. Conditions are read when an Operator's status
//! is made, from the CSV cache or one GET per component of a kind that has them.

use olm_runtime::watch::RecoveringExt as _;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ObjectMeta, Patch, PatchParams, PostParams,
};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use olm_runtime::harness::Harness;
use olm_v0::olm_operator::operator::{
    COMPONENT_KINDS, ComponentKind, ComponentRef, component_conditions, component_label_key,
    operator_names,
};
use olm_v0::olm_operator::strategy::CSV_KIND;
use olm_v0_api::v1::{Operator, OperatorStatus};
use olm_v0_api::v1alpha1::{ClusterServiceVersion, InstallPlan, Subscription};
use olm_v0_api::v2::OperatorCondition;
use serde_json::{Value, json};
use tracing::{info, warn};

use crate::Index;
use crate::error::Error;
use olm_cluster::context::Shared;
use olm_runtime::metrics::Outcome;

/// The name the Operator controller's metrics and logs go by.
pub const OPERATOR_CONTROLLER: &str = "operator";

/// How long wake-ups are gathered before they are worked off: one install changes a dozen
/// components within moments.
const DEBOUNCE: Duration = Duration::from_millis(300);

/// What the worker does.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Work {
    /// Make the Operator of this name list its components.
    Operator(String),
    /// Hand the CSV `namespace/name`'s operator labels on to what it owns.
    Adopt(String, String),
    /// Label the Subscription `namespace/name`, its installed CSV and its InstallPlan with its
    /// package's Operator.
    AdoptSubscription(String, String),
}

/// A CSV an object belongs to: by owner reference (with the CSV's uid, in the object's
/// namespace) or by owner labels (no uid).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Owner {
    namespace: String,
    name: String,
    uid: Option<String>,
}

/// What is kept of one object.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Entry {
    /// Its `operators.coreos.com/*` label keys.
    keys: Vec<String>,
    /// The CSVs it belongs to.
    owners: Vec<Owner>,
}

impl Entry {
    fn of(meta: &ObjectMeta) -> Option<Entry> {
        let labels = meta.labels.clone().unwrap_or_default();
        let keys: Vec<String> = operator_names(&labels)
            .into_iter()
            .map(|n| {
                format!(
                    "{}{n}",
                    olm_v0::olm_operator::operator::COMPONENT_LABEL_PREFIX
                )
            })
            .collect();
        let mut owners: Vec<Owner> = meta
            .owner_references
            .iter()
            .flatten()
            .filter(|r| r.kind == CSV_KIND)
            .map(|r| Owner {
                namespace: meta.namespace.clone().unwrap_or_default(),
                name: r.name.clone(),
                uid: Some(r.uid.clone()),
            })
            .collect();
        if let Some((namespace, name)) = olm_v0::olm_operator::adoption::owner_csv(&labels) {
            owners.push(Owner {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                uid: None,
            });
        }
        (!keys.is_empty() || !owners.is_empty()).then_some(Entry { keys, owners })
    }

    fn names(&self) -> impl Iterator<Item = String> + '_ {
        self.keys.iter().filter_map(|k| {
            k.strip_prefix(olm_v0::olm_operator::operator::COMPONENT_LABEL_PREFIX)
                .map(str::to_owned)
        })
    }
}

type Objects = HashMap<(String, String), Entry>;

/// The objects of every component kind that carry a component label or belong to a CSV.
pub struct ComponentIndex {
    /// By [`COMPONENT_KINDS`] position, then (namespace, name).
    kinds: RwLock<Vec<Objects>>,
    /// How many kinds have been listed once.
    listed: std::sync::atomic::AtomicUsize,
    ready: tokio::sync::Notify,
}

impl Default for ComponentIndex {
    fn default() -> Self {
        ComponentIndex {
            kinds: RwLock::new(vec![Objects::new(); COMPONENT_KINDS.len()]),
            listed: std::sync::atomic::AtomicUsize::new(0),
            ready: tokio::sync::Notify::new(),
        }
    }
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where CSVs sit in [`COMPONENT_KINDS`].
fn csv_kind() -> usize {
    COMPONENT_KINDS
        .iter()
        .position(|k| k.kind == CSV_KIND)
        .unwrap_or_default()
}

impl ComponentIndex {
    /// Records an object of kind `kind` as it is now (or that it was `deleted`) and returns the
    /// work the change makes: the Operators it was or is a component of, and, when its labels
    /// or owners changed, adoption by the CSVs it belongs to — and by itself, for a CSV whose
    /// operator labels changed: what it owns may all exist already (a Subscription labels its
    /// CSV after the install made the Deployments), and nothing else would hand them the label.
    pub fn record(&self, kind: usize, meta: &ObjectMeta, deleted: bool) -> Vec<Work> {
        let key = (
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        );
        let now = if deleted { None } else { Entry::of(meta) };
        let before = {
            let mut kinds = write(&self.kinds);
            let Some(objects) = kinds.get_mut(kind) else {
                return Vec::new();
            };
            match &now {
                Some(e) => objects.insert(key.clone(), e.clone()),
                None => objects.remove(&key),
            }
        };
        if before == now {
            // Its status may have changed: the Operators listing it show its conditions.
            return now
                .iter()
                .flat_map(Entry::names)
                .map(Work::Operator)
                .collect();
        }
        let mut work = work_for(before.as_ref(), now.as_ref());
        let keys = |e: &Option<Entry>| e.as_ref().map(|e| e.keys.clone()).unwrap_or_default();
        if kind == csv_kind() && now.is_some() && keys(&before) != keys(&now) {
            work.push(Work::Adopt(key.0, key.1));
        }
        work
    }

    /// Replaces what is kept of `kind` by a full list; the work is that of every difference.
    fn relisted(&self, kind: usize, objects: Objects) -> Vec<Work> {
        let old = {
            let mut kinds = write(&self.kinds);
            match kinds.get_mut(kind) {
                Some(slot) => std::mem::replace(slot, objects.clone()),
                None => return Vec::new(),
            }
        };
        let mut work = BTreeSet::new();
        for (k, e) in &old {
            if objects.get(k) != Some(e) {
                work.extend(work_for(Some(e), objects.get(k)));
            }
        }
        for (k, e) in &objects {
            if !old.contains_key(k) {
                work.extend(work_for(None, Some(e)));
            }
        }
        if self
            .listed
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel)
            + 2
            == COMPONENT_KINDS.len()
        {
            // Every kind but CSVs (fed by the CSV cache) has been listed.
            self.ready.notify_waiters();
        }
        work.into_iter().collect()
    }

    /// Waits until every watched kind has been listed once.
    async fn wait_until_ready(&self) {
        loop {
            let notified = self.ready.notified();
            if self.listed.load(std::sync::atomic::Ordering::Acquire) + 1 >= COMPONENT_KINDS.len() {
                return;
            }
            notified.await;
        }
    }

    /// The components labelled with `key`: kind position, namespace, name; sorted.
    fn components(&self, key: &str) -> Vec<(usize, String, String)> {
        let kinds = read(&self.kinds);
        let mut out: Vec<(usize, String, String)> = kinds
            .iter()
            .enumerate()
            .flat_map(|(i, objects)| {
                objects
                    .iter()
                    .filter(|(_, e)| e.keys.iter().any(|k| k == key))
                    .map(move |((ns, name), _)| (i, ns.clone(), name.clone()))
            })
            .collect();
        out.sort();
        out
    }

    /// What belongs to the CSV `namespace/name` (uid `uid`): kind position, namespace, name and
    /// the component label keys it already carries.
    fn owned_by(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
    ) -> Vec<(usize, String, String, Vec<String>)> {
        let kinds = read(&self.kinds);
        let mut out = Vec::new();
        for (i, objects) in kinds.iter().enumerate() {
            for ((ns, n), e) in objects {
                let owned = e.owners.iter().any(|o| {
                    o.namespace == namespace
                        && o.name == name
                        && o.uid.as_deref().is_none_or(|u| u == uid)
                });
                if owned {
                    out.push((i, ns.clone(), n.clone(), e.keys.clone()));
                }
            }
        }
        out.sort();
        out
    }
}

/// The work an entry's change makes: every Operator named before or after, and adoption by
/// every CSV it belongs to now.
fn work_for(before: Option<&Entry>, now: Option<&Entry>) -> Vec<Work> {
    let mut work = BTreeSet::new();
    for e in before.into_iter().chain(now) {
        work.extend(e.names().map(Work::Operator));
    }
    for o in now.into_iter().flat_map(|e| e.owners.iter()) {
        work.insert(Work::Adopt(o.namespace.clone(), o.name.clone()));
    }
    work.into_iter().collect()
}

/// The dynamic API of a component kind.
fn api(client: &kube::Client, kind: &ComponentKind, namespace: &str) -> Api<DynamicObject> {
    let (group, version) = kind
        .api_version
        .rsplit_once('/')
        .unwrap_or(("", kind.api_version));
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, kind.kind),
        kind.plural,
    );
    if kind.cluster_scoped {
        Api::all_with(client.clone(), &resource)
    } else {
        Api::namespaced_with(client.clone(), namespace, &resource)
    }
}

/// Watches one component kind's metadata into the index, sending the work each change makes.
async fn watch_kind<K>(client: kube::Client, index: Index, mut work: mpsc::Sender<Work>)
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let Some(kind) = COMPONENT_KINDS.iter().position(|k| k.kind == K::kind(&())) else {
        return;
    };
    let is_crd = COMPONENT_KINDS[kind].kind == "CustomResourceDefinition";
    let stream = watcher::watcher(
        Api::<kube::api::PartialObjectMeta<K>>::all(client),
        watcher::Config::default(),
    )
    .recovering(COMPONENT_KINDS[kind].plural);
    let mut stream = std::pin::pin!(stream);
    let mut listing: Option<Objects> = None;
    while let Some(event) = stream.next().await {
        let mut todo = match event {
            Ok(Event::Init) => {
                listing = Some(Objects::new());
                Vec::new()
            }
            Ok(Event::InitApply(o)) => {
                if let (Some(l), Some(e)) = (listing.as_mut(), Entry::of(&o.metadata)) {
                    l.insert((o.namespace().unwrap_or_default(), o.name_any()), e);
                }
                Vec::new()
            }
            Ok(Event::InitDone) => listing
                .take()
                .map(|l| index.components.relisted(kind, l))
                .unwrap_or_default(),
            Ok(Event::Apply(o)) => {
                let mut w = index.components.record(kind, &o.metadata, false);
                if is_crd {
                    w.extend(providers(&index, &o.name_any()));
                }
                w
            }
            Ok(Event::Delete(o)) => index.components.record(kind, &o.metadata, true),
            // Logged by the recovery, which also paces the retries.
            Err(_) => Vec::new(),
        };
        for w in todo.drain(..) {
            if work.send(w).await.is_err() {
                return;
            }
        }
    }
}

/// Adoption by the labelled CSVs that own the CRD `name` (upstream's `mapToProviders`).
fn providers(index: &Index, name: &str) -> Vec<Work> {
    index
        .csvs
        .state()
        .iter()
        .filter(|c| !operator_names(c.labels()).is_empty())
        .filter(|c| {
            c.spec
                .custom_resource_definitions
                .as_ref()
                .is_some_and(|d| d.owned.iter().any(|o| o.name == name))
        })
        .map(|c| Work::Adopt(c.namespace().unwrap_or_default(), c.name_any()))
        .collect()
}

/// The work a Subscription's change makes: adoption of what it installed, the CSV included
/// once `status.installedCSV` names it.
pub fn on_subscription(subscription: &Subscription, deleted: bool) -> Vec<Work> {
    if deleted {
        return Vec::new();
    }
    vec![Work::AdoptSubscription(
        subscription.namespace().unwrap_or_default(),
        subscription.name_any(),
    )]
}

/// The work a CSV's change makes, recorded in the index like any other component.
pub fn on_csv(index: &Index, csv: &ClusterServiceVersion, deleted: bool) -> Vec<Work> {
    index.components.record(csv_kind(), csv.meta(), deleted)
}

struct Ctx {
    shared: Arc<Shared>,
    index: Index,
    operators: Store<Operator>,
    harness: Harness,
    retry: mpsc::Sender<Work>,
}

/// Starts the component watches and runs the worker until `stop` resolves. `work` is fed by
/// the watches here and by the CSV cache's ([`on_csv`]).
pub async fn run(
    shared: Arc<Shared>,
    index: Index,
    work_tx: mpsc::Sender<Work>,
    work: mpsc::Receiver<Work>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let client = shared.client.clone();
    let mut tasks = tokio::task::JoinSet::new();
    macro_rules! watch {
        ($($k:ty),*) => {
            $(tasks.spawn(watch_kind::<$k>(client.clone(), index.clone(), work_tx.clone()));)*
        };
    }
    watch!(
        Deployment,
        Service,
        Namespace,
        APIService,
        CustomResourceDefinition,
        Subscription,
        InstallPlan,
        OperatorCondition,
        Secret,
        ConfigMap,
        ServiceAccount,
        Role,
        RoleBinding,
        ClusterRole,
        ClusterRoleBinding
    );
    let (operators, writer) = reflector::store();
    let mut operator_events = work_tx.clone();
    tasks.spawn(async move {
        let stream = reflector::reflector(
            writer,
            watcher::watcher(Api::<Operator>::all(client), watcher::Config::default())
                .recovering("operators"),
        )
        .touched_objects();
        let mut stream = std::pin::pin!(stream);
        while let Some(o) = stream.next().await {
            // Errors are logged by the recovery, which also paces the retries.
            if let Ok(o) = o
                && operator_events
                    .send(Work::Operator(o.name_any()))
                    .await
                    .is_err()
            {
                return;
            }
        }
    });
    let harness = shared.harness(OPERATOR_CONTROLLER);
    let ctx = Arc::new(Ctx {
        shared,
        index: index.clone(),
        operators: operators.clone(),
        harness,
        retry: work_tx,
    });
    let worker = work_off_all(&ctx, &operators, work);
    tokio::select! {
        () = worker => {}
        () = stop => {}
    }
    tasks.abort_all();
}

/// The worker: once the caches are complete, every labelled CSV and every Subscription once
/// (their adoption may have been missed while olm was away), then what arrives, gathered over
/// [`DEBOUNCE`] and worked off in order, each item once.
async fn work_off_all(ctx: &Arc<Ctx>, operators: &Store<Operator>, mut work: mpsc::Receiver<Work>) {
    let index = &ctx.index;
    index.components.wait_until_ready().await;
    let _ = operators.wait_until_ready().await;
    // Every labelled CSV and every Subscription once: their adoption may have been missed
    // while olm was away.
    for c in index.csvs.state() {
        for w in on_csv(index, &c, false) {
            work_off(ctx, w).await;
        }
    }
    for s in index.subscriptions.state() {
        for w in on_subscription(&s, false) {
            work_off(ctx, w).await;
        }
    }
    loop {
        let Some(first) = work.next().await else {
            return;
        };
        let mut batch = BTreeSet::from([first]);
        // Gather what arrives within the debounce.
        let deadline = tokio::time::sleep(DEBOUNCE);
        let mut deadline = std::pin::pin!(deadline);
        loop {
            tokio::select! {
                () = &mut deadline => break,
                next = work.next() => match next {
                    Some(w) => { batch.insert(w); }
                    None => break,
                },
            }
        }
        for w in batch {
            work_off(ctx, w).await;
        }
    }
}

/// Does one piece of work in the controller's harness; a failure follows the harness's error
/// policy and the work is sent again after its delay.
async fn work_off(ctx: &Arc<Ctx>, w: Work) {
    let (key, doing, namespace, name) = match &w {
        Work::Operator(name) => (
            name.clone(),
            "listing the Operator's components",
            None,
            name,
        ),
        Work::Adopt(ns, name) => (
            format!("{ns}/{name}"),
            "adopting the CSV's components",
            Some(ns),
            name,
        ),
        Work::AdoptSubscription(ns, name) => (
            format!("subscription {ns}/{name}"),
            "adopting the Subscription",
            Some(ns),
            name,
        ),
    };
    let work = async {
        match &w {
            Work::Operator(name) => reconcile_operator(ctx, name).await,
            Work::Adopt(ns, name) => adopt(ctx, ns, name).await,
            Work::AdoptSubscription(ns, name) => adopt_subscription(ctx, ns, name).await,
        }
    };
    let result = ctx
        .harness
        .reconcile(&key, work, |()| Outcome::Success)
        .await;
    if let Err(e) = result {
        let delay = ctx
            .harness
            .retry(&key, doing, name, namespace.map(String::as_str), &e);
        let mut retry = ctx.retry.clone();
        let w = w.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = retry.send(w).await;
        });
    }
}

/// Lists the Operator `name`'s components in its status, creating the Operator when it has
/// components and does not exist (upstream's `OperatorReconciler`); writes only a change.
async fn reconcile_operator(ctx: &Ctx, name: &str) -> Result<(), Error> {
    let key = match component_label_key(name) {
        Ok(k) => k,
        Err(e) => {
            warn!(operator = %name, error = %e, "no component label for this Operator");
            return Ok(());
        }
    };
    let found = ctx.index.components.components(&key);
    let existing = ctx.operators.get(&ObjectRef::new(name));
    if existing.is_none() && found.is_empty() {
        return Ok(());
    }
    let mut components = Vec::new();
    for (kind, namespace, object) in found {
        let Some(k) = COMPONENT_KINDS.get(kind) else {
            continue;
        };
        let conditions = if k.metadata_only {
            Vec::new()
        } else if k.kind == CSV_KIND {
            match ctx.index.csv(&namespace, &object) {
                Some(c) => component_conditions(CSV_KIND, &serde_json::to_value(&*c)?),
                None => continue,
            }
        } else {
            match api(&ctx.shared.client, k, &namespace)
                .get_opt(&object)
                .await?
            {
                Some(o) => component_conditions(k.kind, &serde_json::to_value(&o)?),
                // Gone meanwhile: its delete event brings this Operator back.
                None => continue,
            }
        };
        components.push((
            ComponentRef {
                kind: k.kind.to_owned(),
                api_version: k.api_version.to_owned(),
                namespace,
                name: object,
            },
            conditions,
        ));
    }
    let status: OperatorStatus =
        serde_json::from_value(olm_v0::olm_operator::operator::status(&key, &components))
            .map_err(|e| Error::Retry(format!("Operator {name} status: {e}")))?;
    let api: Api<Operator> = Api::all(ctx.shared.client.clone());
    let params = PostParams {
        field_manager: Some(crate::FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    let mut current = match existing {
        Some(o) => (*o).clone(),
        None => {
            let fresh = Operator::new(name, olm_v0_api::v1::OperatorSpec::default());
            match api.create(&params, &fresh).await {
                Ok(created) => {
                    info!(operator = %name, "created Operator for its components");
                    created
                }
                // Made meanwhile: its watch event brings it here again.
                Err(kube::Error::Api(s)) if s.code == 409 => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
    };
    if current.status.as_ref() == Some(&status) {
        return Ok(());
    }
    current.metadata.managed_fields = None;
    current.status = Some(status);
    match api.replace_status(name, &params, &current).await {
        Ok(_) => Ok(()),
        // Written from a stale copy: the newer one's event brings it here again.
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Adds the labelled CSV `namespace/name`'s component label keys to what it owns and to the
/// CRDs it owns by name (upstream's `adoptComponents`), as merge patches of the labels alone.
async fn adopt(ctx: &Ctx, namespace: &str, name: &str) -> Result<(), Error> {
    let Some(csv) = ctx.index.csv(namespace, name) else {
        return Ok(());
    };
    let keys: Vec<String> = operator_names(csv.labels())
        .iter()
        .filter_map(|n| component_label_key(n).ok())
        .collect();
    if keys.is_empty() {
        return Ok(());
    }
    let uid = csv.uid().unwrap_or_default();
    let mut targets: Vec<(usize, String, String, Vec<String>)> =
        ctx.index.components.owned_by(namespace, name, &uid);
    let crd_kind = COMPONENT_KINDS
        .iter()
        .position(|k| k.kind == "CustomResourceDefinition")
        .unwrap_or_default();
    for owned in csv
        .spec
        .custom_resource_definitions
        .iter()
        .flat_map(|d| d.owned.iter())
    {
        if let Some(crd) = ctx.index.crds.get(&ObjectRef::new(&owned.name)) {
            let held = crd.labels().keys().cloned().collect();
            targets.push((crd_kind, String::new(), owned.name.clone(), held));
        }
    }
    let mut failed = Vec::new();
    for (kind, ns, object, held) in targets {
        let missing: serde_json::Map<String, Value> = keys
            .iter()
            .filter(|k| !held.contains(k))
            .map(|k| (k.clone(), Value::String(String::new())))
            .collect();
        if missing.is_empty() {
            continue;
        }
        let Some(k) = COMPONENT_KINDS.get(kind) else {
            continue;
        };
        let patch = json!({"metadata": {"labels": missing}});
        match api(&ctx.shared.client, k, &ns)
            .patch(&object, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                warn!(csv = %name, namespace = %namespace, kind = k.kind, object = %object, error = %e, "adopting a component failed");
                failed.push(format!("{} {object}", k.kind));
            }
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::Retry(format!(
            "could not label {}",
            failed.join(", ")
        )))
    }
}

/// Labels the Subscription `namespace/name`, its installed CSV and its InstallPlan with the
/// component label of its package's Operator (`operators.coreos.com/<package>.<namespace>`,
/// upstream's adoption controller), as merge patches of that label alone. The CSV's label then
/// reaches what it owns through [`adopt`].
async fn adopt_subscription(ctx: &Ctx, namespace: &str, name: &str) -> Result<(), Error> {
    let Some(sub) = ctx
        .index
        .subscriptions
        .get(&ObjectRef::new(name).within(namespace))
    else {
        return Ok(());
    };
    let status = sub.status.as_ref();
    let csv = status
        .and_then(|s| s.installed_csv.as_deref())
        .filter(|n| !n.is_empty())
        .and_then(|n| ctx.index.csv(namespace, n));
    let plan_name = status
        .and_then(|s| s.install_plan_ref.as_ref())
        .and_then(|r| r.name.clone())
        .unwrap_or_default();
    let plan = ctx
        .index
        .installplans
        .get(&ObjectRef::new(&plan_name).within(namespace));
    let csv_name = csv.as_ref().map(|c| c.name_any());
    let plan_name = plan.as_ref().map(|p| p.name_any());
    let adoption = match olm_v0::olm_operator::operator::subscription_adoption(
        &sub.spec.package,
        namespace,
        sub.labels(),
        csv_name.as_deref().zip(csv.as_ref().map(|c| c.labels())),
        plan_name.as_deref().zip(plan.as_ref().map(|p| p.labels())),
    ) {
        Ok(a) => a,
        Err(e) => {
            warn!(subscription = %name, namespace = %namespace, error = %e, "no Operator for this Subscription");
            return Ok(());
        }
    };
    let patch = json!({"metadata": {"labels": {adoption.label_key.clone(): ""}}});
    let params = PatchParams::default();
    let merge = Patch::Merge(&patch);
    let gone = |r: Result<(), kube::Error>| match r {
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        r => r,
    };
    if adoption.subscription {
        gone(
            Api::<Subscription>::namespaced(ctx.shared.client.clone(), namespace)
                .patch(name, &params, &merge)
                .await
                .map(drop),
        )?;
    }
    if let Some(csv) = &adoption.csv {
        gone(
            Api::<ClusterServiceVersion>::namespaced(ctx.shared.client.clone(), namespace)
                .patch(csv, &params, &merge)
                .await
                .map(drop),
        )?;
    }
    if let Some(plan) = &adoption.install_plan {
        gone(
            Api::<InstallPlan>::namespaced(ctx.shared.client.clone(), namespace)
                .patch(plan, &params, &merge)
                .await
                .map(drop),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use super::*;

    fn meta(name: &str, labels: &[&str], owner: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("ns".to_owned()),
            uid: Some(format!("uid-{name}")),
            labels: Some(
                labels
                    .iter()
                    .map(|k| ((*k).to_owned(), String::new()))
                    .collect(),
            ),
            owner_references: owner.map(|o| {
                vec![OwnerReference {
                    api_version: "operators.coreos.com/v1alpha1".to_owned(),
                    kind: CSV_KIND.to_owned(),
                    name: o.to_owned(),
                    uid: format!("uid-{o}"),
                    ..OwnerReference::default()
                }]
            }),
            ..ObjectMeta::default()
        }
    }

    /// A Subscription labels its CSV after the install made the CSV's Deployment: the label
    /// change of the CSV itself must start adoption, or the Deployment never gets the label.
    #[test]
    fn a_csv_labelled_after_its_components_adopts_them() {
        let index = ComponentIndex::default();
        let deployment = COMPONENT_KINDS
            .iter()
            .position(|k| k.kind == "Deployment")
            .unwrap_or_default();
        index.record(csv_kind(), &meta("foo.v1", &[], None), false);
        let before = index.record(deployment, &meta("foo", &[], Some("foo.v1")), false);
        assert!(before.contains(&Work::Adopt("ns".into(), "foo.v1".into())));
        let label = "operators.coreos.com/foo.ns";
        let labelled = index.record(csv_kind(), &meta("foo.v1", &[label], None), false);
        assert!(
            labelled.contains(&Work::Adopt("ns".into(), "foo.v1".into())),
            "{labelled:?}"
        );
        assert!(labelled.contains(&Work::Operator("foo.ns".into())));
        // The same labels again: nothing to hand on.
        let again = index.record(csv_kind(), &meta("foo.v1", &[label], None), false);
        assert!(!again.contains(&Work::Adopt("ns".into(), "foo.v1".into())));
    }
}
