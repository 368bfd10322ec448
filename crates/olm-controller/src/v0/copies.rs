//! Copied CSVs on the cluster: the watch that keeps them as metadata plus hashes, and making
//! the copies of one CSV what `olm_v0::copied` says they should be.
//!
//! A copy is compared with its parent by two hashes (OLM's `copyableCSVHash`): one of its name,
//! labels, annotations and spec, one of its status. The watch computes them from each copy as
//! it arrives and keeps only the metadata with the hashes in two annotations of the cached
//! object ([`SPEC_HASH`], [`STATUS_HASH`]; never written to the cluster), so an unchanged copy
//! costs no write and little memory. A copy is written as two requests, the object and then its
//! status, as the status subresource requires; a write cut in between is completed by the next
//! reconcile, which sees the status hash differ.

use std::collections::BTreeMap;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::channel::mpsc;
use futures::{Stream, StreamExt, TryStreamExt};
use kube::api::{Api, DeleteParams, PartialObjectMeta, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Event as Recorded, EventType, Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::{self, Event};
use kube::{Resource, ResourceExt};
use olm_k8s::retry::{Backoff, Failures};
use olm_v0::groups::NamespaceSet;
use olm_v0::phase::Phase;
use olm_v0_api::v1alpha1::ClusterServiceVersion;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tracing::{info, warn};

use super::{COPY_CONTROLLER, EVENT_SOURCE, Index, nothing};
use crate::context::Shared;
use crate::metrics::Outcome;
use crate::v0::install::status_json;

/// Cached annotation: the hash of a copy's name, labels, annotations and spec.
pub const SPEC_HASH: &str = "$copyhash-spec";
/// Cached annotation: the hash of a copy's status.
pub const STATUS_HASH: &str = "$copyhash-status";

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
    failures: Failures,
    recorder: Recorder,
    /// Parents (by `namespace/name`) whose disabled-copies Event was recorded.
    disabled_events: Mutex<HashSet<String>>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Error(String);

/// Runs the controller that keeps the copies of the CSVs `wake` names until `stop` resolves.
pub async fn run(
    shared: Arc<Shared>,
    index: Index,
    wake: mpsc::Receiver<ObjectRef<ClusterServiceVersion>>,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let recorder = Recorder::new(
        shared.client.clone(),
        Reporter {
            controller: EVENT_SOURCE.into(),
            instance: None,
        },
    );
    let ctx = Arc::new(Ctx {
        shared,
        index: index.clone(),
        failures: Failures::default(),
        recorder,
        disabled_events: Mutex::default(),
    });
    Controller::for_stream(nothing(), index.csvs.clone())
        .reconcile_on(wake)
        .with_config(
            controller::Config::default()
                .concurrency(CONCURRENCY)
                .debounce(DEBOUNCE),
        )
        .graceful_shutdown_on(stop)
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result
                && !matches!(
                    e,
                    controller::Error::ReconcilerFailed(..) | controller::Error::ObjectNotFound(..)
                )
            {
                warn!(error = %e, "copied CSV controller");
            }
        })
        .await;
}

fn key(csv: &ClusterServiceVersion) -> String {
    format!("{}/{}", csv.namespace().unwrap_or_default(), csv.name_any())
}

fn error_policy(csv: Arc<ClusterServiceVersion>, err: &Error, ctx: Arc<Ctx>) -> Action {
    let delay = Backoff::DEFAULT.delay(ctx.failures.fail(&key(&csv)));
    warn!(csv = %csv.name_any(), namespace = ?csv.namespace(), error = %err, retry_in = ?delay, "keeping copied CSVs failed; retrying");
    Action::requeue(delay)
}

/// Where the CSV's copies belong: every namespace its only group targets but its own, when the
/// CSV is copiable (a phase, no membership failure, not being deleted) and copies are not
/// disabled for it; nowhere otherwise — a CSV that is no member in good standing manages no
/// other namespace (upstream leaves such copies until another rule removes them).
async fn reconcile(csv: Arc<ClusterServiceVersion>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let started = Instant::now();
    let namespace = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let status = status_json(&csv);
    let phase = status
        .get("phase")
        .and_then(Value::as_str)
        .and_then(Phase::parse);
    let reason = status
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // On its way to a settled phase, a CSV's copies are left as they are: each phase it passes
    // through would otherwise rewrite every copy (10,000 writes per step at 10,000 namespaces),
    // and those writes would hold up the very install they report on.
    if matches!(
        phase,
        Some(Phase::Pending | Phase::InstallReady | Phase::Installing)
    ) && !olm_v0::phase::Reason::parse(reason).is_some_and(olm_v0::phase::Reason::is_uncopiable)
    {
        return Ok(Action::await_change());
    }
    let uncopiable = phase.is_none_or(|p| p == Phase::None || p == Phase::Deleting)
        || olm_v0::phase::Reason::parse(reason).is_some_and(olm_v0::phase::Reason::is_uncopiable)
        || csv.meta().deletion_timestamp.is_some();
    let groups = ctx.index.groups_in(&namespace);
    let wanted = match (uncopiable, groups.as_slice()) {
        (false, [group]) => {
            let targets = group
                .status
                .as_ref()
                .map(|s| s.namespaces.clone())
                .unwrap_or_default();
            let set = NamespaceSet::new(&targets);
            if olm_v0::copied::copies_disabled(ctx.index.copies_disabled(), &set) {
                disabled_event(&ctx, &csv).await;
                Vec::new()
            } else {
                lock(&ctx.disabled_events).remove(&key(&csv));
                let names: Vec<String> = ctx.index.namespaces().into_keys().collect();
                let group_namespace = group.namespace().unwrap_or_default();
                olm_v0::copied::copy_plan(&group_namespace, &set, &names).0
            }
        }
        _ => Vec::new(),
    };
    let synced = sync(&ctx.shared.client, &ctx.index, &csv, &wanted).await;
    let outcome = if synced.failed > 0 {
        Outcome::Error
    } else {
        ctx.failures.succeed(&key(&csv));
        Outcome::Success
    };
    ctx.shared
        .metrics
        .observe(COPY_CONTROLLER, outcome, started.elapsed());
    if let Err(e) = report(&ctx).await {
        warn!(error = %e, "writing the OLMConfig status failed");
    }
    if synced.failed > 0 {
        return Err(Error(format!(
            "{} copies of {namespace}/{name} could not be written",
            synced.failed
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
    let enabled = ctx.index.copies_disabled() != Some(true);
    let active = ctx.index.namespaces.state().len();
    let copies = ctx.index.copies.state();
    let mut mismatch = false;
    for csv in ctx.index.csvs.state() {
        let all_namespaces = csv
            .annotations()
            .get(olm_v0::membership::TARGET_NAMESPACES_ANNOTATION)
            .is_some_and(String::is_empty);
        let phase = csv
            .status
            .as_ref()
            .and_then(|s| serde_json::to_value(&s.phase).ok())
            .and_then(|p| p.as_str().and_then(Phase::parse));
        if !all_namespaces || !matches!(phase, Some(Phase::Succeeded | Phase::Failed)) {
            continue;
        }
        let namespace = csv.namespace().unwrap_or_default();
        let held: std::collections::BTreeSet<String> = copies
            .iter()
            .filter(|c| {
                c.name_any() == csv.name_any()
                    && c.labels().get(olm_v0::status::COPIED_FROM_LABEL) == Some(&namespace)
            })
            .filter_map(|c| c.namespace())
            .collect();
        mismatch |= !olm_v0::olmconfig::copies_as_expected(
            enabled,
            active,
            &std::collections::BTreeSet::new(),
            &held,
        );
    }
    let (status, reason, message) = olm_v0::olmconfig::condition(enabled, mismatch);
    let current = config
        .status
        .as_ref()
        .and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == olm_v0::olmconfig::DISABLED_COPIED_CSVS)
        })
        .cloned();
    if current
        .as_ref()
        .is_some_and(|c| c.status == status && c.reason == reason && c.message == message)
    {
        return Ok(());
    }
    let now = jiff::Timestamp::now();
    let since = match &current {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::from_second(now.as_second()).unwrap_or(now),
        ),
    };
    let condition = json!({
        "type": olm_v0::olmconfig::DISABLED_COPIED_CSVS,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
        "observedGeneration": config.meta().generation,
    });
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

/// The Warning event on a CSV whose copies are disabled, once per process.
async fn disabled_event(ctx: &Ctx, csv: &ClusterServiceVersion) {
    if !lock(&ctx.disabled_events).insert(key(csv)) {
        return;
    }
    let namespace = csv.namespace().unwrap_or_default();
    let event = Recorded {
        type_: EventType::Warning,
        reason: olm_v0::copied::DISABLED_EVENT_REASON.into(),
        note: Some(olm_v0::copied::disabled_message(
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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The watch of copies (`olm.copiedFrom` set), each reduced to its metadata and hashes.
pub fn watch_stream(
    api: Api<ClusterServiceVersion>,
    copied_label: &str,
) -> impl Stream<Item = Result<Event<PartialObjectMeta<ClusterServiceVersion>>, watcher::Error>>
+ Send
+ use<> {
    watcher::watcher(api, watcher::Config::default().labels(copied_label))
        .default_backoff()
        .map_ok(|event| match event {
            Event::Apply(c) => Event::Apply(reduce(&c)),
            Event::Delete(c) => Event::Delete(reduce(&c)),
            Event::Init => Event::Init,
            Event::InitApply(c) => Event::InitApply(reduce(&c)),
            Event::InitDone => Event::InitDone,
        })
}

/// A copy as the cache keeps it: what the copy controller reads — name, namespace, its parent's
/// namespace label, resourceVersion (writes are conditional on it) and the two hashes — and
/// nothing else: at 10,000 namespaces there are 50,000 copies of five operators, and their full
/// metadata (every CSV annotation is copied) would be most of the process's memory.
fn reduce(copy: &ClusterServiceVersion) -> PartialObjectMeta<ClusterServiceVersion> {
    let value = serde_json::to_value(copy).unwrap_or(Value::Null);
    let (spec, status) = hashes(&value);
    let labels = copy
        .labels()
        .get(olm_v0::status::COPIED_FROM_LABEL)
        .map(|from| BTreeMap::from([(olm_v0::status::COPIED_FROM_LABEL.to_owned(), from.clone())]));
    let metadata = kube::api::ObjectMeta {
        name: copy.metadata.name.clone(),
        namespace: copy.metadata.namespace.clone(),
        resource_version: copy.metadata.resource_version.clone(),
        labels,
        annotations: Some(BTreeMap::from([
            (SPEC_HASH.to_owned(), spec),
            (STATUS_HASH.to_owned(), status),
        ])),
        ..kube::api::ObjectMeta::default()
    };
    PartialObjectMeta {
        types: None,
        metadata,
        _phantom: std::marker::PhantomData,
    }
}

/// The spec and status hashes of a CSV given as JSON: name, labels, annotations and spec; and
/// status. Objects' keys are sorted by serde_json, so equal content hashes equal.
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
    (digest(&shallow), digest(&status))
}

fn digest(v: &Value) -> String {
    let text = serde_json::to_string(&olm_goenc_sorted(v)).unwrap_or_default();
    let sum = Sha256::digest(text.as_bytes());
    sum.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

/// `v` with every object's keys sorted (serde_json's map may keep insertion order).
fn olm_goenc_sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, Value> =
                m.iter().map(|(k, v)| (k, olm_goenc_sorted(v))).collect();
            Value::Object(sorted.into_iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(a) => Value::Array(a.iter().map(olm_goenc_sorted).collect()),
        other => other.clone(),
    }
}

/// The copy of `parent` as it should be in every target namespace (upstream's
/// `csvCopyPrototype`): metadata from [`olm_v0::copied::copied_metadata`], the whole spec, and
/// the parent's status with reason `Copied` and the "running in … but is managing this
/// namespace" message.
pub fn prototype(parent: &ClusterServiceVersion) -> Value {
    let namespace = parent.namespace().unwrap_or_default();
    let (labels, annotations) =
        olm_v0::copied::copied_metadata(&namespace, parent.labels(), parent.annotations());
    let mut status = status_json(parent);
    if let Value::Object(s) = &mut status {
        s.insert("reason".into(), Value::String("Copied".into()));
        s.insert(
            "message".into(),
            Value::String(olm_v0::copied::copied_message(&namespace)),
        );
    }
    json!({
        "apiVersion": ClusterServiceVersion::api_version(&()),
        "kind": ClusterServiceVersion::kind(&()),
        "metadata": {
            "name": parent.name_any(),
            "labels": labels,
            "annotations": annotations,
        },
        "spec": serde_json::to_value(&parent.spec).unwrap_or(Value::Null),
        "status": status,
    })
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
    let existing: BTreeMap<String, (String, String, Option<String>)> = index
        .copies
        .state()
        .iter()
        .filter(|c| {
            c.name_any() == name
                && c.labels().get(olm_v0::status::COPIED_FROM_LABEL) == Some(&parent_namespace)
        })
        .map(|c| {
            let a = c.annotations();
            (
                c.namespace().unwrap_or_default(),
                (
                    a.get(SPEC_HASH).cloned().unwrap_or_default(),
                    a.get(STATUS_HASH).cloned().unwrap_or_default(),
                    c.resource_version(),
                ),
            )
        })
        .collect();
    let mut writes = Vec::new();
    for ns in wanted {
        match existing.get(ns) {
            Some((s, t, _)) if *s == spec_hash && *t == status_hash => {}
            Some((s, t, version)) => writes.push((
                ns.clone(),
                version.clone(),
                *s != spec_hash,
                *t != status_hash,
            )),
            None => writes.push((ns.clone(), None, true, true)),
        }
    }
    let deletes: Vec<String> = existing
        .keys()
        .filter(|ns| !wanted.contains(ns))
        .cloned()
        .collect();
    let mut synced = Synced::default();
    let results: Vec<Result<(), (String, kube::Error)>> =
        futures::stream::iter(writes.into_iter().map(|(ns, version, spec, status)| {
            let proto = &proto;
            async move {
                write_copy(client, &ns, proto, version, spec, status)
                    .await
                    .map_err(|e| (ns, e))
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
    let targets: Vec<String> = index
        .copies
        .state()
        .iter()
        .filter(|c| {
            c.name_any() == name
                && c.labels()
                    .get(olm_v0::status::COPIED_FROM_LABEL)
                    .map(String::as_str)
                    == Some(namespace)
        })
        .filter_map(|c| c.namespace())
        .collect();
    for ns in targets {
        if let Err(e) = delete_copy(client, &ns, name).await {
            warn!(csv = %name, namespace = %namespace, target = %ns, error = %e, "deleting a copied CSV failed");
        }
    }
}

/// Copy writes name OLM as their field manager.
fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(super::FIELD_MANAGER.to_owned()),
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
) -> Result<(), kube::Error> {
    let api: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), namespace);
    let name = proto["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut object = proto.clone();
    object["metadata"]["namespace"] = Value::String(namespace.to_owned());
    let mut typed: ClusterServiceVersion =
        serde_json::from_value(object).map_err(kube::Error::SerdeError)?;
    let result = put(&api, &name, &mut typed, existing, spec, status).await;
    match result {
        // The cache was behind a write of a moment ago: once more at the copy's current version.
        Err(kube::Error::Api(s)) if s.code == 409 => {
            let current = api.get(&name).await?.resource_version();
            put(&api, &name, &mut typed, current, true, true).await
        }
        other => other,
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
            // Created meanwhile (the cache is behind): replaced instead.
            Err(kube::Error::Api(s)) if s.code == 409 => {
                version = api.get(name).await?.resource_version();
                typed.metadata.resource_version.clone_from(&version);
                version = api
                    .replace(name, &post_params(), typed)
                    .await?
                    .resource_version();
            }
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
