//! The ClusterExtension controller: resolve a bundle from the served catalogs, pull and render
//! it, check it, write it as the next `ClusterObjectSet` revision, and report what happened.
//!
//! The flow of one reconcile, as upstream's step pipeline (each step may stop it):
//!
//! 1. **Finalizers.** A new extension gets `cleanup-unpack-cache` and
//!    `cleanup-contentmanager-cache`; a deleted one has its unpacked bundles dropped and the
//!    finalizers removed. Nothing else is uninstalled here: the ClusterObjectSets carry a
//!    controller reference to the extension and the installed objects one to their revision, so
//!    Kubernetes' garbage collector removes them (CRDs included).
//! 2. **Revisions.** The extension's ClusterObjectSets are read from the watch cache (never
//!    listed): archived ones are history, a `Succeeded` one is what is installed, the others are
//!    rolling out.
//! 3. **Resolve.** While a revision rolls out, its bundle stays the target and catalogs are not
//!    consulted. Otherwise the package's content is read from each selected catalog that
//!    serves ([`crate::catalog`], cached by the catalog's resolved digest) and `olm-resolve`
//!    picks the bundle. A selected catalog that serves nothing (still unpacking, or failed) is
//!    skipped, by the rule the client uses too ([`olm_extension::request::served`]); the status
//!    names it (`CatalogsSkipped`) instead of the resolution failing for every extension. A failure with a bundle installed and no matching catalog left falls back to the
//!    installed bundle so that its objects keep being maintained.
//! 4. **Unpack.** The bundle image is pulled once per digest ([`olm_cluster::bundles`]); a failed pull
//!    of the bundle already installed continues with what is installed.
//! 5. **Apply.** The bundle is rendered (its inline configuration validated) and built into a
//!    revision. When its content equals the newest revision's nothing is written. Otherwise the
//!    preflights run (CRD upgrade safety against the cluster's CRDs; the ServiceAccount's
//!    permissions when one is named) and the revision is created as `<ext>-<N+1>`, its objects
//!    externalised to Secrets when large.
//! 6. **Status.** `olm_extension::status::compute` turns what the steps observed into the status,
//!    written only when it differs.
//!
//! Guarantees: a reconcile with nothing changed makes no API request. At most one revision is
//! created per content change (names are deterministic and creation is refused when the name
//! exists). Every error is logged with the extension's name.
//!
//! Caveats: retryable failures come back with a capped exponential backoff per extension;
//! permission changes are not watched, so a granted permission is noticed at the next retry.

mod apply;
mod gather;
mod triggers;

use olm_runtime::watch::RecoveringExt as _;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use olm_api::{ClusterCatalog, ClusterExtension, ClusterExtensionStatus, ClusterObjectSet};
use olm_extension::status::{self, Resolution, Stop, StopKind};
use olm_k8s::{
    CLEANUP_CONTENTMANAGER_CACHE_FINALIZER, CLEANUP_UNPACK_CACHE_FINALIZER, OWNER_KIND_LABEL,
};
use olm_runtime::harness::Harness;
use serde_json::json;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::catalog::{CatalogOptions, Catalogs};
use crate::metrics::Outcome;
use olm_cluster::bundles::{BundleOptions, Bundles};
use olm_cluster::context::Shared;
use olm_runtime::written::Written;

/// The name this controller reports metrics under (controller-runtime's `controller` label).
pub const CONTROLLER: &str = "clusterextension";

/// How many extensions are reconciled at once: enough that a burst of new extensions installs
/// side by side, few enough that a restart with a thousand does not pull a thousand bundles
/// at the same moment.
const CONCURRENCY: u16 = 16;

/// What reconciles of this controller share.
pub struct Ctx {
    /// The process-wide context.
    pub shared: Arc<Shared>,
    /// Catalog content by (catalog, digest, package).
    pub catalogs: Arc<Catalogs>,
    /// Pulled bundles by digest.
    pub bundles: Arc<Bundles>,
    /// Every ClusterObjectSet installed by an extension, from a watch.
    pub revisions: Store<ClusterObjectSet>,
    /// Every ClusterCatalog, from a watch.
    pub catalog_store: Store<ClusterCatalog>,
    /// The names of every Namespace (metadata only), so that the install namespace's
    /// existence costs no request.
    pub namespaces: Store<PartialObjectMeta<Namespace>>,
    /// The names of every CRD (metadata only): the upgrade-safety preflight reads only the
    /// CRDs that exist.
    pub crds: Store<PartialObjectMeta<CustomResourceDefinition>>,
    /// The reconcile harness: metrics, and failures per extension for the retry backoff.
    harness: Harness,
    /// The status last written per extension, for reconciles that run on a stale copy.
    written: Written<ClusterExtensionStatus>,
    /// True once both caches have listed. A store's own readiness wakes one waiter only, so one
    /// task waits for it and every reconcile waits on this.
    ready: tokio::sync::watch::Receiver<bool>,
}

/// Why a reconcile did not finish: every controller's one error type.
pub use olm_runtime::harness::Error;

/// Settings of the ClusterExtension controller beyond what every controller shares.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// How catalog content is fetched (timeouts, extra CA certificates of the catalog server).
    pub catalogs: CatalogOptions,
    /// A `kubernetes.io/dockerconfigjson` Secret (`namespace`, `name`) whose credentials are
    /// used for every bundle pull, followed as it changes (upstream's `--global-pull-secret`).
    pub global_pull_secret: Option<(String, String)>,
}

/// Runs the controller with default [`Options`] until `shutdown` resolves.
pub async fn run(
    shared: Arc<Shared>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    run_with(shared, Options::default(), shutdown).await;
}

/// Runs the controller until `shutdown` resolves.
pub async fn run_with(
    shared: Arc<Shared>,
    options: Options,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let client = shared.client.clone();
    let installed_by_us = watcher::Config::default().labels(&format!(
        "{OWNER_KIND_LABEL}={}",
        olm_k8s::CLUSTER_EXTENSION_KIND
    ));
    let (revisions, revision_writer) = reflector::store();
    let revision_events = reflector::reflector(
        revision_writer,
        watcher(
            Api::<ClusterObjectSet>::all(client.clone()),
            installed_by_us,
        )
        // Decisions here need a revision's metadata and status, never its objects (the
        // content digest is an annotation): the cache keeps no copy of every manifest.
        .modify(|c| {
            c.spec.phases.clear();
            c.metadata.managed_fields = None;
        }),
    )
    .recovering("clusterobjectsets")
    .touched_objects();
    let (catalog_store, catalog_writer) = reflector::store();
    let catalog_events = reflector::reflector(
        catalog_writer,
        watcher(
            Api::<ClusterCatalog>::all(client.clone()),
            watcher::Config::default(),
        ),
    )
    .recovering("clustercatalogs");

    let catalogs = match Catalogs::new(options.catalogs) {
        Ok(c) => Arc::new(c),
        Err(e) => {
            tracing::error!(error = %e, "ClusterExtension controller: the catalog client cannot start");
            return;
        }
    };
    let (namespaces, namespace_task) = names_of::<Namespace>(&client);
    let (crds, crd_task) = names_of::<CustomResourceDefinition>(&client);
    let (ready_tx, ready) = tokio::sync::watch::channel(false);
    let ready_task = tokio::spawn({
        let (revisions, catalogs) = (revisions.clone(), catalog_store.clone());
        let (namespaces, crds) = (namespaces.clone(), crds.clone());
        async move {
            if revisions.wait_until_ready().await.is_ok()
                && catalogs.wait_until_ready().await.is_ok()
                && namespaces.wait_until_ready().await.is_ok()
                && crds.wait_until_ready().await.is_ok()
            {
                let _ = ready_tx.send(true);
            }
        }
    });
    let harness = shared.harness(CONTROLLER);
    let ctx = Arc::new(Ctx {
        catalogs,
        bundles: Arc::new(Bundles::new(
            shared.images.clone(),
            BundleOptions::new(shared.cache_dir.join("unpack")),
        )),
        shared,
        revisions,
        catalog_store: catalog_store.clone(),
        namespaces,
        crds,
        harness,
        written: Written::default(),
        ready,
    });
    let pull_secret_task = options.global_pull_secret.map(|(namespace, name)| {
        let (bundles, client) = (ctx.bundles.clone(), client.clone());
        tokio::spawn(async move {
            bundles
                .watch_pull_secret(client, &namespace, &name, std::future::pending::<()>())
                .await;
        })
    });
    // Nothing reads an extension's managedFields: the cache keeps none.
    let (extension_store, extension_writer) = reflector::store();
    let extension_events = reflector::reflector(
        extension_writer,
        watcher(
            Api::<ClusterExtension>::all(client),
            watcher::Config::default(),
        )
        .modify(|e| e.metadata.managed_fields = None),
    )
    .recovering("clusterextensions")
    .applied_objects();
    let controller =
        Controller::for_stream(extension_events, extension_store).owns_stream(revision_events);
    let (trigger_tx, trigger_rx) =
        futures::channel::mpsc::channel::<ObjectRef<ClusterExtension>>(256);
    let extensions = controller.store();
    let trigger_task = tokio::spawn(triggers::catalog_changes(
        catalog_events,
        extensions,
        ctx.catalogs.clone(),
        trigger_tx,
    ));
    let controller = controller
        .reconcile_on(trigger_rx)
        .with_config(kube::runtime::controller::Config::default().concurrency(CONCURRENCY));
    olm_runtime::report::run(
        "ClusterExtension",
        controller,
        reconcile,
        error_policy,
        ctx,
        shutdown,
    )
    .await;
    trigger_task.abort();
    ready_task.abort();
    namespace_task.abort();
    crd_task.abort();
    if let Some(task) = pull_secret_task {
        task.abort();
    }
}

/// A cache of the names (metadata without managed fields) of every `K`, and the task filling it.
fn names_of<K>(client: &kube::Client) -> (Store<PartialObjectMeta<K>>, tokio::task::JoinHandle<()>)
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let (store, writer) = reflector::store();
    let events = reflector::reflector(
        writer,
        // An Api of PartialObjectMeta lists and watches metadata only.
        watcher(
            Api::<PartialObjectMeta<K>>::all(client.clone()),
            watcher::Config::default(),
        )
        .modify(|m| m.metadata.managed_fields = None),
    )
    .recovering(K::plural(&()).into_owned());
    // Errors are logged by the recovery, which also paces the retries.
    let task = tokio::spawn(events.for_each(|_| async {}));
    (store, task)
}

/// Retries with a per-extension exponential backoff ([`olm_k8s::retry::Backoff::DEFAULT`]).
fn error_policy(ext: Arc<ClusterExtension>, err: &Error, ctx: Arc<Ctx>) -> Action {
    ctx.harness
        .retry_object("reconciling the ClusterExtension", &*ext, err)
}

async fn reconcile(ext: Arc<ClusterExtension>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let name = ext.name_any();
    // Upstream's words at info: scripts and upstream's e2e suite read them in the leader's log.
    info!(extension = %name, "reconcile starting");
    let work = reconcile_one(&ext, &ctx).instrument(info_span!("reconcile", extension = %name));
    let result = ctx
        .harness
        .reconcile(&name, work, |_| Outcome::Success)
        .await;
    info!(extension = %name, "reconcile ending");
    result
}

async fn reconcile_one(ext: &ClusterExtension, ctx: &Ctx) -> Result<Action, Error> {
    let name = ext.name_any();
    let api: Api<ClusterExtension> = Api::all(ctx.shared.client.clone());
    if ext.meta().deletion_timestamp.is_some() {
        return finalize(ext, ctx, &api).await;
    }
    if crate::hold::held(&api, ext).await? {
        return Ok(Action::await_change());
    }
    ensure_finalizers(ext, &api).await?;
    // Until the revision cache has listed once, an extension would look uninstalled.
    let mut ready = ctx.ready.clone();
    if ready.wait_for(|r| *r).await.is_err() {
        return Err(Error::Retry(
            "the ClusterObjectSet and ClusterCatalog caches stopped before they were filled"
                .to_string(),
        ));
    }

    let revisions = gather::revisions_of(&ctx.revisions, ext);
    let mut states = gather::revision_states(&revisions);
    let channels: Vec<String> = ext
        .spec
        .source
        .catalog
        .as_ref()
        .map(|c| c.channels.clone())
        .unwrap_or_default();

    // Validation (upstream v1.10's ServiceAccount validator): a named ServiceAccount must exist.
    if let Some(message) = gather::validate(ext, ctx).await {
        return finish(
            ext,
            ctx,
            &api,
            &states,
            Resolution::NotReached,
            Stop {
                step: status::Step::Validate,
                message,
                kind: StopKind::Retrying,
            },
        )
        .await;
    }

    let mut stop: Option<Stop> = None;
    let step = gather::resolve_step(ext, ctx, &states).await;
    let target = step.target.clone();
    if let Some(s) = step.stop {
        stop = Some(s);
    }

    let mut content = None;
    if stop.is_none()
        && let Some(target) = &target
    {
        match ctx.bundles.fetch(&target.image, &name).await {
            Ok(bundle) => content = Some(bundle),
            Err(e) if gather::is_installed(&states, target) => {
                debug!(extension = %name, error = %e, "bundle unavailable; keeping the installed revision");
            }
            Err(e) => {
                stop = Some(Stop {
                    step: status::Step::Unpack,
                    message: e.to_string(),
                    kind: StopKind::Retrying,
                });
            }
        }
    }

    if stop.is_none()
        && let Some(target) = &target
    {
        match apply::apply(ext, ctx, target, content.as_deref(), &revisions).await {
            Ok(Some(created)) => states.push(created),
            Ok(None) => {}
            Err(s) => stop = Some(s),
        }
    }

    let resolution = match &step.resolution {
        gather::Resolved::RollingOut => Resolution::SkippedRollingOut,
        gather::Resolved::Fallback => Resolution::Fallback {
            deprecations: None,
            channels: &channels,
        },
        gather::Resolved::Bundle(chosen) => Resolution::Resolved {
            bundle: chosen.bundle.clone(),
            image: &chosen.image,
            deprecations: &chosen.deprecations,
            channels: &channels,
            skipped: &chosen.skipped,
        },
        gather::Resolved::Failed(failure) => Resolution::Failed {
            message: failure.message.clone(),
            deprecations: failure.deprecations.as_deref(),
            channels: &channels,
            skipped: &failure.skipped,
        },
    };
    match stop {
        Some(stop) => finish(ext, ctx, &api, &states, resolution, stop).await,
        None => {
            write(ext, ctx, &api, &states, resolution, None).await?;
            Ok(Action::await_change())
        }
    }
}

/// Writes the status of a reconcile the pipeline stopped; a retryable stop comes back with the
/// backoff, a terminal one waits for a change.
async fn finish(
    ext: &ClusterExtension,
    ctx: &Ctx,
    api: &Api<ClusterExtension>,
    states: &[status::RevisionState],
    resolution: Resolution<'_>,
    stop: Stop,
) -> Result<Action, Error> {
    let retry = matches!(stop.kind, StopKind::Retrying).then(|| stop.message.clone());
    write(ext, ctx, api, states, resolution, Some(stop)).await?;
    match retry {
        Some(message) => Err(Error::Retry(message)),
        None => Ok(Action::await_change()),
    }
}

async fn write(
    ext: &ClusterExtension,
    ctx: &Ctx,
    api: &Api<ClusterExtension>,
    states: &[status::RevisionState],
    resolution: Resolution<'_>,
    stop: Option<Stop>,
) -> Result<(), Error> {
    let name = ext.name_any();
    let uid = ext.uid();
    // The status this reconcile's copy predates, when the previous reconcile's write has not
    // reached the cache yet.
    let written = ctx
        .written
        .newer_than(&name, uid.as_deref(), ext.resource_version().as_deref());
    let current = written.or_else(|| ext.status.clone()).unwrap_or_default();
    let new_status = status::compute(&status::Input {
        generation: ext.meta().generation.unwrap_or(0),
        now: jiff::Timestamp::now(),
        previous: Some(&current),
        revisions: Ok(states),
        resolution,
        stop,
    });
    if current == new_status {
        return Ok(());
    }
    debug!(extension = %name, conditions = %summary(&new_status.conditions), "writing status");
    let answer = write_status(ext, api, &current, &new_status).await?;
    ctx.written.record(
        name,
        uid.as_deref(),
        answer.resource_version().as_deref(),
        new_status,
    );
    Ok(())
}

/// `Type=Status/Reason` of every condition, for the log.
pub(crate) fn summary(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
) -> String {
    conditions
        .iter()
        .map(|c| format!("{}={}/{}", c.type_, c.status, c.reason))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Adds the extension's finalizers when one is missing (one patch, on first sight).
async fn ensure_finalizers(
    ext: &ClusterExtension,
    api: &Api<ClusterExtension>,
) -> Result<(), Error> {
    let have = ext.finalizers();
    let missing: Vec<&str> = [
        CLEANUP_UNPACK_CACHE_FINALIZER,
        CLEANUP_CONTENTMANAGER_CACHE_FINALIZER,
    ]
    .into_iter()
    .filter(|f| !have.iter().any(|h| h == f))
    .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut all: Vec<String> = have.to_vec();
    all.extend(missing.iter().map(|s| (*s).to_string()));
    // The resourceVersion makes this a compare-and-swap: finalizers another controller adds at
    // the same moment are never overwritten.
    let patch = json!({"metadata": {"finalizers": all, "resourceVersion": ext.resource_version()}});
    api.patch(
        &ext.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(())
}

/// Deletion: drop the extension's unpacked bundles, then its finalizers. Everything it installed
/// goes with it through garbage collection.
async fn finalize(
    ext: &ClusterExtension,
    ctx: &Ctx,
    api: &Api<ClusterExtension>,
) -> Result<Action, Error> {
    let name = ext.name_any();
    let ours = [
        CLEANUP_UNPACK_CACHE_FINALIZER,
        CLEANUP_CONTENTMANAGER_CACHE_FINALIZER,
    ];
    if !ext.finalizers().iter().any(|f| ours.contains(&f.as_str())) {
        return Ok(Action::await_change());
    }
    ctx.written.forget(&name);
    if let Err(e) = ctx.bundles.forget_owner(&name) {
        // The cache is only a cache: a leftover is collected with the next restart's wipe.
        warn!(extension = %name, error = %e, "deleting the extension's unpacked bundles failed");
    }
    let keep: Vec<&String> = ext
        .finalizers()
        .iter()
        .filter(|f| !ours.contains(&f.as_str()))
        .collect();
    let patch =
        json!({"metadata": {"finalizers": keep, "resourceVersion": ext.resource_version()}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(Action::await_change())
}

/// Writes `status` over `current` (what the object has); returns the object as written. A
/// status the API server refuses is written with its long messages shortened
/// ([`olm_runtime::status`]).
async fn write_status(
    ext: &ClusterExtension,
    api: &Api<ClusterExtension>,
    current: &ClusterExtensionStatus,
    status: &ClusterExtensionStatus,
) -> Result<ClusterExtension, Error> {
    // A merge patch only adds keys; fields the new status drops are nulled explicitly.
    let mut body = serde_json::to_value(status).unwrap_or_else(|_| json!({}));
    if let (Some(new), Ok(serde_json::Value::Object(old))) =
        (body.as_object_mut(), serde_json::to_value(current))
    {
        for key in old.keys() {
            new.entry(key.clone()).or_insert(serde_json::Value::Null);
        }
    }
    Ok(olm_runtime::status::patch(api, &ext.name_any(), None, body).await?)
}
