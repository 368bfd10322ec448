//! Copied CSVs on the cluster: the watch that keeps an index of them ([`CopyIndex`]), and making
//! the copies of one CSV what `olm_v0::olm_operator::copied` says they should be.
//!
//! A copy is compared with its parent by two hashes (OLM's `copyableCSVHash`): one of its name,
//! labels, annotations and spec, one of its status. The watch computes them from each copy as it
//! arrives and keeps only where it is, its resourceVersion and the hashes, so an unchanged copy
//! costs no write and little memory. A copy is written as two requests, the object and then its
//! status, as the status subresource requires; a write cut in between is completed by the next
//! reconcile, which sees the status hash differ.

use olm_runtime::harness::{Harness, key_of};
use olm_runtime::watch::RecoveringExt as _;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Event as Recorded, EventType, Recorder};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use olm_v0_api::v1alpha1::{ClusterServiceVersion, ConditionReason};
use serde_json::{Value, json};
use tracing::{info, warn};

use crate::error::Error;
use crate::{COPY_CONTROLLER, Index, lock, nothing};
use olm_cluster::context::Shared;
use olm_runtime::metrics::Outcome;
use olm_v0::olm_operator::strategy::spec_hash;

/// How many copies are written at once.
const CONCURRENT_WRITES: usize = 16;

/// How many parents' copies are brought in step at once: one, so that copy writes (at most
/// [`CONCURRENT_WRITES`] in flight) never crowd out the CSV controller's requests.
const CONCURRENCY: u16 = 1;

/// How long a parent's changes are gathered before its copies are written: the phases of an
/// install follow each other within moments.
const DEBOUNCE: std::time::Duration = std::time::Duration::from_secs(1);

struct Ctx {
    shared: Arc<Shared>,
    index: Index,
    harness: Harness,
    recorder: Recorder,
    /// Parents (by `namespace/name`) whose disabled-copies Event was recorded.
    disabled_events: Mutex<HashSet<String>>,
    /// AllNamespaces parents (by `namespace/name`) whose disabled-copies Events are known to be
    /// gone: deleted once copies are enabled, or not looked for again in this process.
    events_cleared: Mutex<HashSet<String>>,
}

/// Runs the controller that keeps the copies of the CSVs `wake` names until `stop` resolves.
pub async fn run(
    shared: Arc<Shared>,
    index: Index,
    wake: mpsc::Receiver<ObjectRef<ClusterServiceVersion>>,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let recorder = crate::recorder(&shared.client);
    let harness = shared.harness(COPY_CONTROLLER);
    let ctx = Arc::new(Ctx {
        shared,
        index: index.clone(),
        harness,
        recorder,
        disabled_events: Mutex::default(),
        events_cleared: Mutex::default(),
    });
    let controller = Controller::for_stream(nothing(), index.csvs.clone())
        .reconcile_on(wake)
        .with_config(
            controller::Config::default()
                .concurrency(CONCURRENCY)
                .debounce(DEBOUNCE),
        );
    olm_runtime::report::run(
        COPY_CONTROLLER,
        controller,
        reconcile,
        error_policy,
        ctx,
        stop,
    )
    .await;
}

fn key(csv: &ClusterServiceVersion) -> String {
    key_of(csv)
}

fn error_policy(csv: Arc<ClusterServiceVersion>, err: &Error, ctx: Arc<Ctx>) -> Action {
    ctx.harness.retry_object("keeping copied CSVs", &*csv, err)
}

async fn reconcile(csv: Arc<ClusterServiceVersion>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    ctx.harness
        .reconcile(&key(&csv), reconcile_one(&csv, &ctx), |_| Outcome::Success)
        .await
}

/// Where the CSV's copies belong: every namespace its only group targets but its own, when the
/// CSV is copiable (a phase, no membership failure, not being deleted) and copies are not
/// disabled for it; nowhere otherwise — a CSV that is no member in good standing manages no
/// other namespace (upstream leaves such copies until another rule removes them).
async fn reconcile_one(csv: &Arc<ClusterServiceVersion>, ctx: &Arc<Ctx>) -> Result<Action, Error> {
    let namespace = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let (phase, reason) = crate::phase_and_reason(csv);
    let groups = ctx.index.groups_in(&namespace);
    let groups: Vec<(String, Vec<String>)> = groups
        .iter()
        .map(|g| {
            let targets = g.status.as_ref().map(|s| s.namespaces.clone());
            (
                g.namespace().unwrap_or_default(),
                targets.unwrap_or_default(),
            )
        })
        .collect();
    let groups: Vec<(&str, &[String])> = groups
        .iter()
        .map(|(ns, targets)| (ns.as_str(), targets.as_slice()))
        .collect();
    let namespaces = || -> Vec<String> {
        let state = ctx.index.namespaces.state();
        state.iter().map(|n| n.name_any()).collect()
    };
    let decision = olm_v0::olm_operator::copied::decide(&olm_v0::olm_operator::copied::Observed {
        phase,
        reason,
        deleting: csv.meta().deletion_timestamp.is_some(),
        groups: &groups,
        disable_copied_csvs: ctx.index.copies_disabled(),
        namespaces: &namespaces,
    });
    let olm_v0::olm_operator::copied::Decision::Copies {
        wanted,
        disabled,
        clear_disabled_events,
        tenants,
    } = decision
    else {
        return Ok(Action::await_change());
    };
    if disabled {
        lock(&ctx.events_cleared).remove(&key(csv));
        disabled_event(ctx, csv).await;
    }
    // A failure to delete disabled-copies events is retried like a failed copy write.
    let events_failed = clear_disabled_events && !delete_disabled_events(ctx, csv).await;
    let mut synced = sync(&ctx.shared.client, &ctx.index, csv, &wanted).await;
    if !tenants.is_empty() {
        synced.failed += super::tenant::ensure(&ctx.shared.client, &ctx.index, csv, &tenants).await;
    }
    if let Err(e) = report(ctx).await {
        warn!(error = %e, "writing the OLMConfig status failed");
    }
    if synced.failed > 0 {
        return Err(Error::Retry(format!(
            "{} copies of {namespace}/{name} could not be written",
            synced.failed
        )));
    }
    if events_failed {
        return Err(Error::Retry(format!(
            "the {} events of {namespace}/{name} could not be deleted",
            olm_v0::olm_operator::copied::DISABLED_EVENT_REASON
        )));
    }
    Ok(Action::await_change())
}

/// `OLMConfig cluster`'s `DisabledCopiedCSVs` condition (upstream's `syncOLMConfig`): whether
/// every settled AllNamespaces operator has a copy in each other namespace (copies enabled) or
/// none (disabled), from the caches; written when it changes, if the OLMConfig exists.
async fn report(ctx: &Ctx) -> Result<(), kube::Error> {
    let Some(config) = ctx
        .index
        .configs
        .get(&ObjectRef::new(olm_v0_api::v1::OLM_CONFIG_NAME))
    else {
        return Ok(());
    };
    let csvs = ctx.index.csvs.state();
    let operators: Vec<olm_v0::olm_operator::olmconfig::Operator<'_>> = csvs
        .iter()
        .map(|csv| olm_v0::olm_operator::olmconfig::Operator {
            namespace: csv.metadata.namespace.as_deref().unwrap_or_default(),
            name: csv.metadata.name.as_deref().unwrap_or_default(),
            all_namespaces: csv
                .annotations()
                .get(olm_v0::olm_operator::membership::TARGET_NAMESPACES_ANNOTATION)
                .is_some_and(String::is_empty),
            phase: crate::phase_and_reason(csv).0,
        })
        .collect();
    let copies_of = |namespace: &str, name: &str| -> std::collections::BTreeSet<String> {
        ctx.index.copies.of(namespace, name).into_keys().collect()
    };
    let current = config.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_ == olm_v0::olm_operator::olmconfig::DISABLED_COPIED_CSVS)
    });
    let Some(condition) = olm_v0::olm_operator::olmconfig::conclude(
        ctx.index.copies_disabled() != Some(true),
        ctx.index.namespaces.state().len(),
        &operators,
        copies_of,
        current,
        config.meta().generation,
        &crate::now(),
    ) else {
        return Ok(());
    };
    let api: Api<olm_v0_api::v1::OLMConfig> = Api::all(ctx.shared.client.clone());
    let patch = json!({
        "metadata": {"resourceVersion": config.resource_version()},
        "status": {"conditions": [condition]},
    });
    match api
        .patch_status(
            olm_v0_api::v1::OLM_CONFIG_NAME,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        // Written from a stale copy: the newer one wakes the copies again.
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes the disabled-copies events of an AllNamespaces CSV whose copies are enabled (seed
/// 001: turning `disableCopiedCSVs` off deletes them, as upstream does), once per process and
/// after each time they were recorded: events recorded before olm restarted go too. Returns
/// whether they are gone.
async fn delete_disabled_events(ctx: &Ctx, csv: &ClusterServiceVersion) -> bool {
    if lock(&ctx.events_cleared).contains(&key(csv)) {
        return true;
    }
    let namespace = csv.namespace().unwrap_or_default();
    let api: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(ctx.shared.client.clone(), &namespace);
    let selector =
        olm_v0::olm_operator::copied::disabled_events_selector(&namespace, &csv.name_any());
    if let Err(e) = api
        .delete_collection(
            &DeleteParams::default(),
            &kube::api::ListParams::default().fields(&selector),
        )
        .await
    {
        warn!(csv = %csv.name_any(), namespace = %namespace, error = %e, "deleting the disabled-copies events failed");
        return false;
    }
    lock(&ctx.disabled_events).remove(&key(csv));
    lock(&ctx.events_cleared).insert(key(csv));
    true
}

/// The Warning event on a CSV whose copies are disabled, once per process.
async fn disabled_event(ctx: &Ctx, csv: &ClusterServiceVersion) {
    if !lock(&ctx.disabled_events).insert(key(csv)) {
        return;
    }
    let namespace = csv.namespace().unwrap_or_default();
    let event = Recorded {
        type_: EventType::Warning,
        reason: olm_v0::olm_operator::copied::DISABLED_EVENT_REASON.into(),
        note: Some(olm_v0::olm_operator::copied::disabled_message(
            &namespace,
            &csv.name_any(),
        )),
        action: "Reconcile".into(),
        secondary: None,
    };
    if let Err(err) = ctx.recorder.publish(&event, &csv.object_ref(&())).await {
        warn!(csv = %csv.name_any(), namespace = %namespace, error = %err, "recording an event failed");
    }
}

/// One copy as the index keeps it: where it is, the resourceVersion its writes are conditional
/// on, and the two hashes of its content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// `metadata.resourceVersion`.
    pub resource_version: Option<String>,
    /// [`hashes`]' first: name, labels, annotations and spec.
    pub spec: String,
    /// [`hashes`]' second: status.
    pub status: String,
}

/// Every copy, by parent (`namespace`, `name`) and the namespace it is in.
///
/// Not a kube reflector store: at 10,000 namespaces five operators have 50,000 copies, and a
/// cached object per copy (an `ObjectMeta`, its maps, the store's key) costs over a kilobyte;
/// this keeps about two hundred bytes each.
#[derive(Default)]
pub struct CopyIndex {
    by_parent: std::sync::RwLock<HashMap<(String, String), BTreeMap<String, Held>>>,
    ready: tokio::sync::Notify,
    is_ready: std::sync::atomic::AtomicBool,
}

type ByParent = HashMap<(String, String), BTreeMap<String, Held>>;

impl CopyIndex {
    /// The copies of the CSV `namespace/name`, by the namespace they are in.
    pub fn of(&self, namespace: &str, name: &str) -> BTreeMap<String, Held> {
        read(&self.by_parent)
            .get(&(namespace.to_owned(), name.to_owned()))
            .cloned()
            .unwrap_or_default()
    }

    /// Every parent that has copies.
    pub fn parents(&self) -> Vec<(String, String)> {
        read(&self.by_parent).keys().cloned().collect()
    }

    /// Waits until the first full list is in.
    pub async fn wait_until_ready(&self) {
        loop {
            let notified = self.ready.notified();
            if self.is_ready.load(std::sync::atomic::Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }

    fn apply(map: &mut ByParent, copy: &ClusterServiceVersion) -> Option<(String, String)> {
        let (parent, target, held) = entry(copy)?;
        map.entry(parent.clone()).or_default().insert(target, held);
        Some(parent)
    }

    fn delete(map: &mut ByParent, copy: &ClusterServiceVersion) -> Option<(String, String)> {
        let (parent, target, _) = entry(copy)?;
        if let Some(copies) = map.get_mut(&parent) {
            copies.remove(&target);
            if copies.is_empty() {
                map.remove(&parent);
            }
        }
        Some(parent)
    }
}

fn read<T>(l: &std::sync::RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn write<T>(l: &std::sync::RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A copy's parent, its namespace and what is kept of it; `None` without the
/// `olm.copiedFrom` label.
fn entry(copy: &ClusterServiceVersion) -> Option<((String, String), String, Held)> {
    let parent_namespace = copy
        .labels()
        .get(olm_v0::olm_operator::status::COPIED_FROM_LABEL)?
        .clone();
    let (spec, status) = hashes(&json!(copy));
    Some((
        (parent_namespace, copy.name_any()),
        copy.namespace().unwrap_or_default(),
        Held {
            resource_version: copy.resource_version(),
            spec,
            status,
        },
    ))
}

/// Keeps `index` in step with the copies on the cluster (`olm.copiedFrom` set) and wakes the
/// parent of each copy that changed or went; after a repeated list (a watch that had to start
/// over), every parent and every CSV.
pub async fn watch(
    api: Api<ClusterServiceVersion>,
    copied_label: String,
    index: Index,
    mut wake: crate::Wake,
) {
    let stream = watcher::watcher(api, watcher::Config::default().labels(&copied_label))
        .recovering("clusterserviceversions (copies)");
    let mut stream = std::pin::pin!(stream);
    let mut listing: Option<ByParent> = None;
    let mut listed_once = false;
    while let Some(event) = stream.next().await {
        let parent = match event {
            Ok(Event::Init) => {
                listing = Some(ByParent::new());
                None
            }
            Ok(Event::InitApply(c)) => {
                if let Some(map) = listing.as_mut() {
                    CopyIndex::apply(map, &c);
                }
                None
            }
            Ok(Event::InitDone) => {
                if let Some(map) = listing.take() {
                    *write(&index.copies.by_parent) = map;
                }
                index
                    .copies
                    .is_ready
                    .store(true, std::sync::atomic::Ordering::Release);
                index.copies.ready.notify_waiters();
                if listed_once {
                    wake.everything(&index).await;
                }
                listed_once = true;
                None
            }
            Ok(Event::Apply(c)) => CopyIndex::apply(&mut write(&index.copies.by_parent), &c),
            Ok(Event::Delete(c)) => CopyIndex::delete(&mut write(&index.copies.by_parent), &c),
            // Logged by the recovery, which also paces the retries.
            Err(_) => None,
        };
        if let Some((namespace, name)) = parent {
            wake.copies([ObjectRef::new(&name).within(&namespace)])
                .await;
        }
    }
}

/// The spec and status hashes of a CSV given as JSON: name, labels, annotations and spec; and
/// status — `olm_v0::olm_operator::strategy::spec_hash`, which sorts keys, so equal content hashes
/// equal.
pub fn hashes(csv: &Value) -> (String, String) {
    let meta = csv.get("metadata");
    let field = |k: &str| meta.and_then(|m| m.get(k)).cloned().unwrap_or(Value::Null);
    let shallow = json!({
        "name": field("name"),
        "labels": field("labels"),
        "annotations": field("annotations"),
        "spec": csv.get("spec").cloned().unwrap_or(Value::Null),
    });
    let status = csv.get("status").cloned().unwrap_or(Value::Null);
    (spec_hash(&shallow), spec_hash(&status))
}

/// The copy of `parent` as it should be in every target namespace (upstream's `csvCopyPrototype`):
/// metadata from [`olm_v0::olm_operator::copied::copied_metadata`], the whole spec, and the
/// parent's status with reason `Copied` and the "running in … but is managing this namespace"
/// message.
pub fn prototype(parent: &ClusterServiceVersion) -> Value {
    let namespace = parent.namespace().unwrap_or_default();
    let (labels, annotations) = olm_v0::olm_operator::copied::copied_metadata(
        &namespace,
        parent.labels(),
        parent.annotations(),
    );
    let mut status = parent.status.clone().unwrap_or_default();
    status.reason = Some(ConditionReason::Copied);
    status.message = Some(olm_v0::olm_operator::copied::copied_message(&namespace));
    let mut copy = ClusterServiceVersion::new(&parent.name_any(), parent.spec.clone());
    // `{}` when empty: the hashes are of this JSON.
    copy.metadata.labels = Some(labels);
    copy.metadata.annotations = Some(annotations);
    copy.status = Some(status);
    json!(copy)
}

/// What keeping `parent`'s copies in step did.
#[derive(Debug, Default)]
pub struct Synced {
    /// Copies created or updated.
    pub written: usize,
    /// Copies deleted.
    pub deleted: usize,
    /// Writes that failed (logged; the next reconcile tries again).
    pub failed: usize,
}

/// Makes the copies of `parent` those of `wanted` namespaces (none when copies are disabled or
/// the CSV is not copiable): creates or updates a copy where its hashes differ from the
/// prototype's, and deletes the copies of this parent elsewhere.
pub async fn sync(
    client: &kube::Client,
    index: &Index,
    parent: &ClusterServiceVersion,
    wanted: &[String],
) -> Synced {
    let name = parent.name_any();
    let parent_namespace = parent.namespace().unwrap_or_default();
    let proto = prototype(parent);
    let (spec_hash, status_hash) = hashes(&proto);
    let existing = index.copies.of(&parent_namespace, &name);
    let hashes: BTreeMap<&str, (&str, &str)> = existing
        .iter()
        .map(|(ns, h)| (ns.as_str(), (h.spec.as_str(), h.status.as_str())))
        .collect();
    let (writes, deletes) =
        olm_v0::olm_operator::copied::writes(wanted, &hashes, &spec_hash, &status_hash);
    let mut synced = Synced::default();
    let results: Vec<Result<(), (String, Error)>> =
        futures::stream::iter(writes.into_iter().map(|w| {
            let proto = &proto;
            let version = existing
                .get(&w.namespace)
                .and_then(|h| h.resource_version.clone());
            async move {
                write_copy(client, &w.namespace, proto, version, w.spec, w.status)
                    .await
                    .map_err(|e| (w.namespace, e))
            }
        }))
        .buffer_unordered(CONCURRENT_WRITES)
        .collect()
        .await;
    for r in results {
        match r {
            Ok(()) => synced.written += 1,
            Err((ns, e)) => {
                synced.failed += 1;
                warn!(csv = %name, namespace = %parent_namespace, target = %ns, error = %e, "writing a copied CSV failed");
            }
        }
    }
    let results: Vec<Result<(), (String, kube::Error)>> =
        futures::stream::iter(deletes.into_iter().map(|ns| {
            let name = &name;
            async move { delete_copy(client, &ns, name).await.map_err(|e| (ns, e)) }
        }))
        .buffer_unordered(CONCURRENT_WRITES)
        .collect()
        .await;
    for r in results {
        match r {
            Ok(()) => synced.deleted += 1,
            Err((ns, e)) => {
                synced.failed += 1;
                warn!(csv = %name, namespace = %parent_namespace, target = %ns, error = %e, "deleting a copied CSV failed");
            }
        }
    }
    if synced.written + synced.deleted > 0 {
        info!(csv = %name, namespace = %parent_namespace, written = synced.written, deleted = synced.deleted, "copied CSVs in step");
    }
    synced
}

/// Deletes every copy of the CSV `namespace/name` (its parent is gone).
pub async fn remove_all(client: &kube::Client, index: &Index, namespace: &str, name: &str) {
    let targets: Vec<String> = index.copies.of(namespace, name).into_keys().collect();
    for ns in targets {
        if let Err(e) = delete_copy(client, &ns, name).await {
            warn!(csv = %name, namespace = %namespace, target = %ns, error = %e, "deleting a copied CSV failed");
        }
    }
}

/// Copy writes name OLM as their field manager.
fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(crate::FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    }
}

/// Writes the copy in `namespace`: creates it (`existing` is `None`) or replaces its metadata
/// and spec (`spec`) and status (`status`), each at the resourceVersion last seen.
async fn write_copy(
    client: &kube::Client,
    namespace: &str,
    proto: &Value,
    existing: Option<String>,
    spec: bool,
    status: bool,
) -> Result<(), Error> {
    let api: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), namespace);
    let name = proto["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut object = proto.clone();
    object["metadata"]["namespace"] = Value::String(namespace.to_owned());
    let mut typed: ClusterServiceVersion =
        serde_json::from_value(object).map_err(kube::Error::SerdeError)?;
    let parent_namespace = proto["metadata"]["labels"]
        [olm_v0::olm_operator::status::COPIED_FROM_LABEL]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let result = put(&api, &name, &mut typed, existing, spec, status).await;
    match result {
        // A same-named CSV exists there (AlreadyExists), or the cache was behind a write of a
        // moment ago (Conflict): once more at its current version, but only if it is this
        // parent's copy — a CSV someone installed in the target namespace is theirs.
        Err(kube::Error::Api(s)) if s.code == 409 => {
            let current = api.get(&name).await?;
            if !olm_v0::olm_operator::copied::may_overwrite(current.labels(), &parent_namespace) {
                return Err(Error::Retry(format!(
                    "a ClusterServiceVersion {name} that is not a copy from {parent_namespace} exists in {namespace}; it is left as it is"
                )));
            }
            Ok(put(
                &api,
                &name,
                &mut typed,
                current.resource_version(),
                true,
                true,
            )
            .await?)
        }
        other => Ok(other?),
    }
}

async fn put(
    api: &Api<ClusterServiceVersion>,
    name: &str,
    typed: &mut ClusterServiceVersion,
    existing: Option<String>,
    spec: bool,
    status: bool,
) -> Result<(), kube::Error> {
    let mut version = existing;
    if version.is_none() {
        match api.create(&post_params(), typed).await {
            Ok(created) => version = created.resource_version(),
            // AlreadyExists: [`write_copy`] decides whether it may be replaced.
            Err(e) => return Err(e),
        }
    } else if spec {
        typed.metadata.resource_version.clone_from(&version);
        version = api
            .replace(name, &post_params(), typed)
            .await?
            .resource_version();
    }
    if status {
        typed.metadata.resource_version = version;
        api.replace_status(name, &post_params(), typed).await?;
    }
    Ok(())
}

async fn delete_copy(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<(), kube::Error> {
    let api: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), namespace);
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The copy carries the parent's name, its labels and annotations as copied (an empty map
    /// written `{}`), the whole spec and the parent's status with reason `Copied`.
    #[test]
    fn prototype_of_a_parent() {
        let spec = json!({"displayName": "op", "install": {"strategy": "deployment"}});
        let parent: ClusterServiceVersion = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {
                "name": "op.v1",
                "namespace": "ops",
                "uid": "u",
                "annotations": {"olm.targetNamespaces": ""},
            },
            "spec": spec,
        }))
        .unwrap();
        assert_eq!(
            prototype(&parent),
            json!({
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "ClusterServiceVersion",
                "metadata": {
                    "name": "op.v1",
                    "labels": {"olm.copiedFrom": "ops"},
                    "annotations": {},
                },
                "spec": spec,
                "status": {
                    "reason": "Copied",
                    "message": "The operator is running in ops but is managing this namespace",
                },
            })
        );
    }
}
