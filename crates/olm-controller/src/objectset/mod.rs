//! The ClusterObjectSet controller: apply a revision's objects phase by phase, keep them as
//! written, archive older revisions once this one rolled out, and tear archived ones down.
//!
//! Every decision is `olm_extension::objectset::decide`'s; this module gathers its inputs and
//! carries out what it returns. One reconcile:
//!
//! 1. **Secrets.** Each Secret the revision's `ref`s name is read once (the ref's namespace, or
//!    the system namespace; from the Secret cache when it is there): whether it is immutable, and the objects it holds
//!    (`olm_extension::pack::resolve_ref`, gzip detected by its magic bytes).
//! 2. **Watches.** For a live revision the kinds of its objects are watched through
//!    [`watches::Watches`] — one cache per kind shared by all revisions — and the observed
//!    objects are read from those caches. Sibling revisions come from the controller's own
//!    cache of ClusterObjectSets.
//! 3. **Decide**, then perform: add the teardown finalizer first; write objects in order
//!    (create with POST, server-side apply with force as [`Shared::field_manager`], delete with
//!    UID and resourceVersion preconditions, release ownership with a merge patch); archive
//!    older revisions (merge patch `lifecycleState: Archived`); write status when it changed;
//!    remove the finalizer last.
//! 4. A POST refused with `AlreadyExists` means the object exists without our owner-kind label
//!    (so outside the caches): it is read once, directly, and the decision is made again with
//!    it, which is how collision protection sees pre-existing objects.
//!
//! Objects are written with the revision's ServiceAccount when the ClusterObjectSet carries
//! the `olm.operatorframework.io/service-account` annotation (`<namespace>/<name>`): a client
//! impersonating `system:serviceaccount:<namespace>:<name>`, one per ServiceAccount, built from
//! [`Shared::kube_config`]. Reads (caches, Secrets, discovery) use the controller's identity.
//!
//! Guarantees: a revision whose objects are as written and whose status is current costs no
//! write. Every failure is logged with the ClusterObjectSet's name and reported in its
//! `Progressing` condition. Reconciles of different revisions run concurrently; one revision
//! is never reconciled twice at once (kube-runtime).
//!
//! Caveats: object-data Secrets of the system namespace (where revisions keep their objects)
//! come from a watch; Secrets elsewhere, or of another type, are read live at every reconcile.
//! Drift is detected by comparing our fields with the cached object, not
//! through managed fields, so a field the API server normalises (a quantity written `1000m`)
//! is applied again, as a no-op, on each event of that object.

mod v0owners;
pub mod watches;

use olm_runtime::watch::RecoveringExt as _;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use olm_api::{ClusterObjectSet, ClusterObjectSetStatus};
use olm_extension::objectset::{
    self, Decision, Finalizer, Gvk, Input, Next, ObjectRef as Target, ResolvedPhase, Watch, Write,
};
use olm_k8s::{OBJECT_DATA_SECRET_TYPE, SERVICE_ACCOUNT_ANNOTATION, TEARDOWN_FINALIZER};
use olm_runtime::harness::Harness;
use serde_json::{Map, Value, json};
use tracing::{Instrument, debug, info, info_span, warn};

use self::watches::Watches;
use crate::metrics::Outcome;
use olm_cluster::context::Shared;
use olm_runtime::written::Written;

/// The name this controller reports metrics under (controller-runtime's `controller` label).
pub const CONTROLLER: &str = "clusterobjectset";

/// How many revisions are reconciled at once.
const CONCURRENCY: u16 = 16;

/// How many times one reconcile decides again: after its writes completed a phase (one round
/// per phase at most), or after finding objects outside the caches.
const MAX_ROUNDS: usize = 16;

/// Writes of one phase in flight at once, per revision.
const WRITES_AT_ONCE: usize = 4;

/// What reconciles of this controller share.
pub struct Ctx {
    /// The process-wide context.
    pub shared: Arc<Shared>,
    /// Caches of managed objects.
    pub watches: Watches,
    /// Every ClusterObjectSet, from the controller's watch.
    revisions: Store<ClusterObjectSet>,
    /// Object-data Secrets of the system namespace, from a watch (others are read live).
    secrets: Store<Secret>,
    /// Clients impersonating ServiceAccounts, by `<namespace>/<name>`.
    clients: Mutex<HashMap<String, Client>>,
    /// The reconcile harness: metrics, and failures per revision for the retry backoff.
    harness: Harness,
    /// Revisions whose one immediate retry past the progress deadline was used.
    past_deadline: Mutex<HashSet<String>>,
    /// The status last written per revision, for reconciles that run on a stale copy.
    written: Written<ClusterObjectSetStatus>,
}

/// Why a reconcile did not finish: every controller's one error type.
pub use olm_runtime::harness::Error;

/// Runs the controller until `shutdown` resolves.
pub async fn run(
    shared: Arc<Shared>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let client = shared.client.clone();
    let (trigger_tx, trigger_rx) = futures::channel::mpsc::channel(1024);
    // The controller's cache holds every revision with its objects; their managedFields (as
    // big as the objects, field by field) are read by nothing here, so they are not kept.
    let (revisions, revision_writer) = reflector::store();
    let revision_events = reflector::reflector(
        revision_writer,
        watcher(
            Api::<ClusterObjectSet>::all(client.clone()),
            watcher::Config::default(),
        )
        .modify(|c| c.metadata.managed_fields = None),
    )
    .recovering("clusterobjectsets")
    .applied_objects();
    let controller = Controller::for_stream(revision_events, revisions);
    // The Secrets revisions keep their objects in: read from a cache, not once per reconcile.
    let (secrets, secret_writer) = reflector::store();
    let secret_watch = reflector::reflector(
        secret_writer,
        watcher(
            Api::<Secret>::namespaced(client.clone(), &shared.system_namespace),
            watcher::Config::default().fields(&format!("type={OBJECT_DATA_SECRET_TYPE}")),
        ),
    )
    .recovering("secrets (revision contents)");
    // Errors are logged by the recovery, which also paces the retries.
    let secret_task = tokio::spawn(secret_watch.for_each(|_| async {}));
    let harness = shared.harness(CONTROLLER);
    let ctx = Arc::new(Ctx {
        watches: Watches::new(client, trigger_tx),
        revisions: controller.store(),
        secrets,
        shared,
        clients: Mutex::default(),
        harness,
        past_deadline: Mutex::default(),
        written: Written::default(),
    });
    let controller = controller
        .reconcile_on(trigger_rx)
        .with_config(controller::Config::default().concurrency(CONCURRENCY));
    olm_runtime::report::run(
        "ClusterObjectSet",
        controller,
        reconcile,
        error_policy,
        ctx,
        shutdown,
    )
    .await;
    secret_task.abort();
}

/// Retries with a per-revision exponential backoff ([`olm_k8s::retry::Backoff::DEFAULT`]), capped at the time
/// left before the progress deadline, with one immediate retry once it has passed (upstream's
/// deadline-aware rate limiter).
fn error_policy(cos: Arc<ClusterObjectSet>, err: &Error, ctx: Arc<Ctx>) -> Action {
    let name = cos.name_any();
    let now = Timestamp::now();
    let past = objectset::deadline(&cos).is_some_and(|d| d <= now);
    let first_past = past && lock(&ctx.past_deadline).insert(name.clone());
    let delay = ctx.harness.retry_adjusted(
        &name,
        "reconciling the ClusterObjectSet",
        &name,
        None,
        err,
        |backoff| objectset::error_backoff(&cos, now, backoff, first_past),
    );
    Action::requeue(delay)
}

async fn reconcile(cos: Arc<ClusterObjectSet>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = cos.name_any();
    // Upstream's words at info: scripts and upstream's e2e suite read them in the leader's log.
    info!(clusterobjectset = %name, "reconcile starting");
    let work =
        reconcile_one(&cos, &ctx).instrument(info_span!("reconcile", clusterobjectset = %name));
    let result = ctx
        .harness
        .reconcile(&name, work, |requeue| {
            lock(&ctx.past_deadline).remove(&name);
            Outcome::of_requeue(*requeue)
        })
        .await;
    info!(clusterobjectset = %name, "reconcile ending");
    result.map(|requeue| match requeue {
        Some(d) => Action::requeue(d),
        None => Action::await_change(),
    })
}

/// What was read for one reconcile.
struct Gathered {
    mutable: Vec<String>,
    resolved: Result<Vec<ResolvedPhase>, String>,
}

async fn reconcile_one(cos: &ClusterObjectSet, ctx: &Ctx) -> Result<Option<Duration>, Error> {
    let name = cos.name_any();
    // A copy older than this controller's last status write decides from that status.
    let refreshed;
    let cos = match ctx.written.newer_than(
        &name,
        cos.uid().as_deref(),
        cos.resource_version().as_deref(),
    ) {
        Some(status) => {
            refreshed = with_status(cos, Some(status));
            &refreshed
        }
        None => cos,
    };
    let api: Api<ClusterObjectSet> = Api::all(ctx.shared.client.clone());
    let now = Timestamp::now();
    let deleting = cos.metadata.deletion_timestamp.is_some();
    if !deleting && crate::hold::held(&api, cos).await? {
        return Ok(None);
    }

    let gathered = if deleting {
        Gathered {
            mutable: Vec::new(),
            resolved: Ok(Vec::new()),
        }
    } else {
        gather(cos, ctx).await
    };

    // Watch before reading the caches; the decision below says whether the watch stays.
    if !deleting
        && gathered.mutable.is_empty()
        && let Ok(phases) = &gathered.resolved
    {
        let gvks = kinds_of(phases);
        if let Err(e) = ctx.watches.ensure(&name, &gvks).await {
            let message = format!("establish watch: {e}");
            write_status(&api, ctx, cos, objectset::on_error(cos, &message, now)).await?;
            return Err(Error::Retry(message));
        }
    }

    let mut observed = BTreeMap::new();
    if let Ok(phases) = &gathered.resolved {
        for target in phases
            .iter()
            .flat_map(|p| &p.objects)
            .filter_map(Target::of)
        {
            if let Some(o) = ctx.watches.get(&target) {
                observed.insert(target, o);
            }
        }
    }
    let siblings: Vec<ClusterObjectSet> = ctx
        .revisions
        .state()
        .iter()
        .map(|c| (**c).clone())
        .collect();
    let writer = writer_client(cos, ctx)?;

    let mut finalizer_added = false;
    let mut decision;
    let mut round = 0;
    // Objects written in this reconcile. The API server's answers count as observed, so a
    // phase they complete lets the next one go ahead at once, in the same reconcile (as
    // boxcutter's phase loop does) rather than after a watch event; a decision that would
    // write one of them again waits for the next reconcile instead.
    let mut written: BTreeSet<Target> = BTreeSet::new();
    loop {
        round += 1;
        let v0_crd_owners = v0owners::crd_owners(&ctx.shared.client, &observed).await;
        decision = objectset::decide(Input {
            cos,
            resolved: gathered
                .resolved
                .as_ref()
                .map(Vec::as_slice)
                .map_err(String::as_str),
            mutable_secrets: &gathered.mutable,
            observed: &observed,
            siblings: &siblings,
            v0_crd_owners: &v0_crd_owners,
            now,
        });
        if decision.finalizer == Finalizer::Add && !finalizer_added {
            set_finalizer(&api, cos, true).await?;
            finalizer_added = true;
        }
        if decision.writes.is_empty()
            || decision.writes.iter().any(|w| written.contains(w.target()))
        {
            break;
        }
        match perform(&decision, ctx, &writer, &mut observed).await {
            Ok(Performed::Done) if round < MAX_ROUNDS => {
                written.extend(decision.writes.iter().map(|w| w.target().clone()));
            }
            Ok(Performed::Done) => break,
            Ok(Performed::SawMore) if round < MAX_ROUNDS => continue,
            Ok(Performed::SawMore) => break,
            Err(message) => {
                let base = with_status(cos, decision.status.clone());
                let status = objectset::on_error(&base, &message, now).or(decision.status);
                write_status(&api, ctx, cos, status).await?;
                return Err(Error::Retry(message));
            }
        }
    }

    // This revision's status first, then the archive of the ones it replaces: the extension
    // must never see the previous revision archived before this one reads as succeeded (it
    // would report no bundle installed in between).
    let held = write_status(&api, ctx, cos, decision.status.clone()).await?;
    for older in &decision.archive {
        info!(clusterobjectset = %name, archived = %older, "revision rolled out; archiving the previous one");
        api.patch(
            older,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"lifecycleState": "Archived"}})),
        )
        .await
        .map_err(|e| {
            warn!(clusterobjectset = %name, archived = %older, error = %e, "archiving a previous revision failed");
            Error::Retry(format!("archive previous Revision: {e}"))
        })?;
    }
    if decision.finalizer == Finalizer::Remove {
        set_finalizer(&api, cos, false).await?;
        ctx.written.forget(&name);
    }
    if decision.watch == Watch::Free {
        ctx.watches.free(&name);
    }
    for report in &decision.phases {
        for o in &report.objects {
            debug!(clusterobjectset = %name, phase = %report.name, object = %o.target, handling = ?o.handling, probe = ?o.probe.status, "object");
        }
    }
    match decision.next {
        Next::Done => Ok(held),
        Next::RequeueAfter(d) => Ok(Some(held.map_or(d, |h| h.min(d)))),
        Next::Error(message) => Err(Error::Retry(message)),
    }
}

fn with_status(cos: &ClusterObjectSet, status: Option<ClusterObjectSetStatus>) -> ClusterObjectSet {
    let mut c = cos.clone();
    if let Some(s) = status {
        c.status = Some(s);
    }
    c
}

fn kinds_of(phases: &[ResolvedPhase]) -> BTreeSet<Gvk> {
    phases
        .iter()
        .flat_map(|p| &p.objects)
        .filter_map(Target::of)
        .map(|t| t.gvk)
        .collect()
}

/// Reads the referenced Secrets and resolves the phases.
async fn gather(cos: &ClusterObjectSet, ctx: &Ctx) -> Gathered {
    let system = ctx.shared.system_namespace.as_str();
    let mut secrets: BTreeMap<(String, String), Result<Secret, String>> = BTreeMap::new();
    let mut mutable = Vec::new();
    for (ns, secret) in objectset::referenced_secrets(cos, system) {
        let api: Api<Secret> = Api::namespaced(ctx.shared.client.clone(), &ns);
        let cached = if ns == system && secrets_ready(ctx).await {
            ctx.secrets
                .get(&ObjectRef::new(&secret).within(&ns))
                .map(|s| (*s).clone())
        } else {
            None
        };
        let read = match cached {
            Some(s) => Ok(s),
            None => api.get(&secret).await,
        };
        let got = match read {
            Ok(s) => {
                if s.immutable != Some(true) {
                    mutable.push(format!("{ns}/{secret}"));
                }
                Ok(s)
            }
            Err(e) => Err(format!(
                "getting Secret {ns}/{secret}: {}",
                olm_runtime::api_error::message(&e)
            )),
        };
        secrets.insert((ns, secret), got);
    }
    let resolved = (|| {
        let mut phases = Vec::with_capacity(cos.spec.phases.len());
        for phase in &cos.spec.phases {
            let mut objects = Vec::with_capacity(phase.objects.len());
            for o in &phase.objects {
                let object = match (&o.object, &o.ref_) {
                    (Some(object), _) => object.clone(),
                    (None, Some(r)) => {
                        let ns = match r.namespace.as_deref() {
                            Some(ns) if !ns.is_empty() => ns.to_string(),
                            _ => system.to_string(),
                        };
                        let wrap =
                            |m: String| format!("resolving ref in phase {:?}: {m}", phase.name);
                        let secret = match secrets.get(&(ns.clone(), r.name.clone())) {
                            Some(Ok(s)) => s,
                            Some(Err(m)) => return Err(wrap(m.clone())),
                            None => return Err(wrap(format!("getting Secret {ns}/{}", r.name))),
                        };
                        let data = secret.data.clone().unwrap_or_default();
                        olm_extension::pack::resolve_ref(r, &ns, &data)
                            .map_err(|e| wrap(e.to_string()))?
                    }
                    (None, None) => {
                        return Err(format!(
                            "object in phase {:?} has neither object nor ref",
                            phase.name
                        ));
                    }
                };
                objects.push(object);
            }
            phases.push(ResolvedPhase {
                name: phase.name.clone(),
                objects,
            });
        }
        Ok(phases)
    })();
    Gathered { mutable, resolved }
}

/// Whether the Secret cache has listed once (waiting briefly the first time).
async fn secrets_ready(ctx: &Ctx) -> bool {
    watches::synced(&ctx.secrets, Duration::from_secs(5)).await
}

/// The client objects are written with: the revision's ServiceAccount, impersonated, or the
/// controller itself.
fn writer_client(cos: &ClusterObjectSet, ctx: &Ctx) -> Result<Client, Error> {
    let Some(sa) = cos.annotations().get(SERVICE_ACCOUNT_ANNOTATION) else {
        return Ok(ctx.shared.client.clone());
    };
    if let Some(c) = lock(&ctx.clients).get(sa) {
        return Ok(c.clone());
    }
    let Some((ns, name)) = sa
        .split_once('/')
        .filter(|(n, s)| !n.is_empty() && !s.is_empty())
    else {
        return Err(Error::Retry(format!(
            "annotation {SERVICE_ACCOUNT_ANNOTATION} must be <namespace>/<name>, not {sa:?}"
        )));
    };
    let mut config = ctx.shared.kube_config.clone();
    config.auth_info.impersonate = Some(format!("system:serviceaccount:{ns}:{name}"));
    config.auth_info.impersonate_groups = Some(vec![
        "system:serviceaccounts".to_string(),
        format!("system:serviceaccounts:{ns}"),
        "system:authenticated".to_string(),
    ]);
    let client = Client::try_from(config).map_err(|e| {
        Error::Retry(format!(
            "failed to create revision engine: building a client for {sa}: {e}"
        ))
    })?;
    lock(&ctx.clients).insert(sa.clone(), client.clone());
    Ok(client)
}

enum Performed {
    /// Every write was made.
    Done,
    /// An object turned out to exist outside the caches; it is now in `observed`.
    SawMore,
}

/// Performs the writes batch by batch (a phase's writes together, at most
/// [`WRITES_AT_ONCE`] in flight); stops after the first batch with a failure (the first failure
/// in order is returned) or with a create that found the object already there.
async fn perform(
    decision: &Decision,
    ctx: &Ctx,
    client: &Client,
    observed: &mut BTreeMap<Target, Map<String, Value>>,
) -> Result<Performed, String> {
    for batch in decision.batches() {
        // Collected first: a stream holding the mapping closure would not be `Send` for every
        // lifetime the controller's future needs.
        let writes: Vec<_> = batch.iter().map(|w| write_one(w, ctx, client)).collect();
        let results: Vec<_> = futures::stream::iter(writes)
            .buffered(WRITES_AT_ONCE)
            .collect()
            .await;
        let mut saw_more = false;
        let mut failed = None;
        for (write, result) in batch.iter().zip(results) {
            let target = write.target();
            match result {
                Ok(Wrote::Answer(o)) => record(&ctx.watches, observed, target, &o),
                Ok(Wrote::Done) => {}
                Ok(Wrote::Exists(o)) => {
                    if let Ok(Value::Object(m)) = serde_json::to_value(&o) {
                        observed.insert(target.clone(), m);
                    }
                    saw_more = true;
                    continue;
                }
                Err(m) => {
                    if m.contains("no matches for kind")
                        || m.contains("could not find the requested resource")
                    {
                        ctx.watches.forget_discovery(&target.gvk);
                    }
                    failed.get_or_insert(format!("reconciling object {target}: {m}"));
                    continue;
                }
            }
            debug!(object = %target, write = write_name(write), "written");
        }
        if let Some(message) = failed {
            return Err(message);
        }
        if saw_more {
            return Ok(Performed::SawMore);
        }
    }
    Ok(Performed::Done)
}

/// What one write did.
enum Wrote {
    /// The API server's answer: the object as written.
    Answer(DynamicObject),
    /// Done; nothing to keep.
    Done,
    /// A create found the object there already, not in our caches: here it is, read back.
    Exists(DynamicObject),
}

async fn write_one(write: &Write, ctx: &Ctx, client: &Client) -> Result<Wrote, String> {
    let fm = ctx.shared.field_manager;
    let target = write.target();
    let resource = match ctx.watches.resource(&target.gvk).await {
        Ok(Some(r)) => r,
        Ok(None) => {
            return Err(format!(
                "no matches for kind {:?} in version {:?}",
                target.gvk.kind,
                target.gvk.api_version()
            ));
        }
        Err(e) => return Err(e.to_string()),
    };
    let api: Api<DynamicObject> = if resource.namespaced {
        if target.namespace.is_empty() {
            return Err("the kind is namespaced but the object has no namespace".to_string());
        }
        Api::namespaced_with(client.clone(), &target.namespace, &resource.api)
    } else {
        Api::all_with(client.clone(), &resource.api)
    };
    match write {
        Write::Create { object, .. } => {
            let body: DynamicObject =
                serde_json::from_value(Value::Object(object.clone())).map_err(|e| e.to_string())?;
            let pp = PostParams {
                field_manager: Some(fm.to_string()),
                ..PostParams::default()
            };
            match api.create(&pp, &body).await {
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    // Exists, but not in our caches: read it and decide again.
                    let live: Api<DynamicObject> = if resource.namespaced {
                        Api::namespaced_with(
                            ctx.shared.client.clone(),
                            &target.namespace,
                            &resource.api,
                        )
                    } else {
                        Api::all_with(ctx.shared.client.clone(), &resource.api)
                    };
                    live.get(&target.name)
                        .await
                        .map(Wrote::Exists)
                        .map_err(|e| {
                            format!(
                                "getting object after create collision: {}",
                                olm_runtime::api_error::message(&e)
                            )
                        })
                }
                Err(e) => Err(format!(
                    "creating resource: {}",
                    olm_runtime::api_error::message(&e)
                )),
                Ok(o) => Ok(Wrote::Answer(o)),
            }
        }
        Write::Apply { object, .. } => {
            let pp = PatchParams::apply(fm).force();
            api.patch(
                &target.name,
                &pp,
                &Patch::Apply(Value::Object(object.clone())),
            )
            .await
            .map(Wrote::Answer)
            .map_err(|e| format!("patching: {}", olm_runtime::api_error::message(&e)))
        }
        Write::Delete {
            uid,
            resource_version,
            ..
        } => {
            let dp = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: Some(uid.clone()).filter(|u| !u.is_empty()),
                    resource_version: Some(resource_version.clone()).filter(|r| !r.is_empty()),
                }),
                ..DeleteParams::default()
            };
            ctx.watches.forget_written(target);
            match api.delete(&target.name, &dp).await {
                Ok(_) => Ok(Wrote::Done),
                Err(kube::Error::Api(e)) if e.code == 404 => Ok(Wrote::Done),
                Err(e) => Err(format!(
                    "deleting object: {}",
                    olm_runtime::api_error::message(&e)
                )),
            }
        }
        Write::ReleaseOwnership { patch, .. } => {
            match api
                .patch(
                    &target.name,
                    &PatchParams::default(),
                    &Patch::Merge(patch.clone()),
                )
                .await
            {
                Ok(_) => {
                    ctx.watches.forget_written(target);
                    Ok(Wrote::Done)
                }
                Err(kube::Error::Api(e)) if e.code == 404 => Ok(Wrote::Done),
                Err(e) => Err(format!(
                    "releasing object: {}",
                    olm_runtime::api_error::message(&e)
                )),
            }
        }
    }
}

fn write_name(w: &Write) -> &'static str {
    match w {
        Write::Create { .. } => "create",
        Write::Apply { .. } => "apply",
        Write::Delete { .. } => "delete",
        Write::ReleaseOwnership { .. } => "release",
    }
}

/// Keeps the API server's answer to a write, for the rest of this reconcile and, through the
/// watches, for the next ones until the watch shows it.
fn record(
    watches: &Watches,
    observed: &mut BTreeMap<Target, Map<String, Value>>,
    target: &Target,
    o: &DynamicObject,
) {
    if let Ok(Value::Object(m)) = serde_json::to_value(o) {
        watches.wrote(target, m.clone());
        observed.insert(target.clone(), m);
    }
}

async fn write_status(
    api: &Api<ClusterObjectSet>,
    ctx: &Ctx,
    cos: &ClusterObjectSet,
    status: Option<ClusterObjectSetStatus>,
) -> Result<Option<Duration>, Error> {
    let Some(status) = status else {
        return Ok(None);
    };
    let name = cos.name_any();
    if let Some(wait) = objectset::hold_rewording(cos, &status, ctx.written.age(&name)) {
        debug!(clusterobjectset = %name, wait_ms = wait.as_millis(), "only messages reworded; writing later");
        return Ok(Some(wait));
    }
    debug!(clusterobjectset = %name, conditions = %crate::extension::summary(&status.conditions), "writing status");
    let body = serde_json::to_value(&status).map_err(kube::Error::SerdeError)?;
    let written = olm_runtime::status::patch(api, &name, None, body)
        .await
        .map_err(|e| {
            warn!(clusterobjectset = %name, error = %e, "writing status failed");
            Error::Kube(e)
        })?;
    ctx.written.record(
        name,
        cos.uid().as_deref(),
        written.resource_version().as_deref(),
        status,
    );
    Ok(None)
}

/// Adds or removes the teardown finalizer with a merge patch guarded by the resourceVersion
/// read, so a finalizer someone added meanwhile is never dropped.
async fn set_finalizer(
    api: &Api<ClusterObjectSet>,
    cos: &ClusterObjectSet,
    present: bool,
) -> Result<(), Error> {
    let mut finalizers: Vec<String> = cos.finalizers().to_vec();
    finalizers.retain(|f| f != TEARDOWN_FINALIZER);
    if present {
        finalizers.push(TEARDOWN_FINALIZER.to_string());
    }
    let name = cos.name_any();
    api.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {
            "resourceVersion": cos.resource_version(),
            "finalizers": finalizers,
        }})),
    )
    .await
    .map_err(|e| {
        warn!(clusterobjectset = %name, error = %e, "updating the teardown finalizer failed");
        Error::Kube(e)
    })?;
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
