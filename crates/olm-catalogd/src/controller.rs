//! The ClusterCatalog controller: pull the image, store its FBC, report status.
//!
//! The decisions live in [`decide`], a pure function of the object, what is stored and the
//! time, table-tested without a cluster. This module is the shell around it: one reconcile
//! gathers the inputs, asks [`decide::decide`], performs the one piece of work it may ask for
//! (unpack, or delete the stored content), hands the outcome to [`decide::conclude`], then
//! writes the status, patches the metadata and requeues as the plan says. See [`decide::decide`]
//! for the flow, upstream's condition texts and which errors are terminal.
//!
//! # The name label
//! The webhook in [`crate::webhook`] sets the label at admission, as upstream; the plan's
//! metadata patch covers clusters where the webhook is not registered.
//!
//! # Logging
//! Every reconcile runs in a span carrying the catalog's name; its work and writes are logged at
//! debug, failures that will be retried at warn, and the retry itself by [`error_policy`].

pub mod decide;

use olm_runtime::watch::RecoveringExt as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt as _};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt as _, watcher};
use kube::{Client, ResourceExt};
use olm_api::{ClusterCatalog, ClusterCatalogStatus};
use olm_image::{Expect, Filter, ImageRef};
use olm_k8s::retry::Backoff;
use olm_k8s::{CATALOG_CACHE_FINALIZER, METADATA_NAME_LABEL};
use olm_runtime::harness::Harness;
use serde_json::json;
use tracing::{Instrument, debug, info, warn};

use self::decide::{Decision, Done, Inputs, Metadata, Next, Plan, UnpackFailure, Work};
use crate::storage::{Record, Storage};

/// How the controller reaches registries and how it names its URLs.
#[derive(Debug, Clone)]
pub struct Config {
    /// Host (and port) clients use to reach the catalog server, e.g.
    /// `catalogd-service.olmv1-system.svc` or `127.0.0.1:8443`.
    pub external_address: String,
    /// Whether the server speaks HTTPS (the scheme of `urls.base`).
    pub https: bool,
    /// Where images are unpacked before their FBC is stored.
    pub work_dir: PathBuf,
    /// Wait before retrying after a retryable error.
    pub retry_after: Duration,
}

/// What reconciles share.
pub struct Context {
    /// API server.
    pub client: Client,
    /// Served content.
    pub storage: Arc<Storage>,
    /// Registries.
    pub images: olm_image::Client,
    /// Settings.
    pub config: Config,
    /// The reconcile harness: metrics (when [`Context::metrics`] has any), and failures per
    /// catalog for the retry backoff ([`backoff`]).
    pub harness: Harness,
    /// Whether this process leads; `None`: it always does. A replica that does not lead pulls
    /// and stores catalogs like the leader, so that it serves them too, but writes nothing.
    pub leading: Option<tokio::sync::watch::Receiver<bool>>,
    /// Whether every catalog of the first listing has been pulled (or its failure reported).
    pub warmup: Arc<crate::warmup::Warmup>,
    /// Where reconciles are counted and timed; `None`: nowhere.
    pub metrics: Option<Arc<olm_runtime::metrics::Metrics>>,
}

/// The controller's name in metrics, as controller-runtime names upstream catalogd's.
pub const CONTROLLER: &str = "clustercatalog";

impl Context {
    fn leads(&self) -> bool {
        self.leading.as_ref().is_none_or(|l| *l.borrow())
    }
}

/// Why a reconcile did not finish: every controller's one error type.
pub use olm_runtime::harness::Error;

/// The ClusterCatalog watch: its cache, and the stream of its events that fills the cache as it
/// is polled. One watch serves the controller (which polls it) and the catalog browser (which
/// reads the cache).
pub fn watch(
    client: Client,
) -> (
    Store<ClusterCatalog>,
    impl Stream<Item = Result<watcher::Event<ClusterCatalog>, watcher::Error>> + Send + 'static,
) {
    let (store, writer) = reflector::store();
    let events = reflector::reflector(
        writer,
        watcher(Api::all(client), watcher::Config::default()),
    )
    .recovering("clustercatalogs");
    (store, events)
}

/// Runs the controller on the cache and events of [`watch`] until `shutdown` resolves.
pub async fn run(
    ctx: Arc<Context>,
    store: Store<ClusterCatalog>,
    events: impl Stream<Item = Result<watcher::Event<ClusterCatalog>, watcher::Error>> + Send + 'static,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    collect_garbage(&ctx).await;
    // A replica that starts leading writes every catalog's status at once (its own view of
    // the content it serves), rather than at each catalog's next poll.
    let became_leader = futures::stream::unfold(ctx.leading.clone(), |leading| async move {
        let mut leading = leading?;
        loop {
            leading.changed().await.ok()?;
            if *leading.borrow_and_update() {
                return Some(((), Some(leading)));
            }
        }
    });
    // The first listing tells the warm-up which catalogs to wait for.
    let warmup = ctx.warmup.clone();
    let events = events.inspect(move |event| match event {
        Ok(watcher::Event::InitApply(cat)) => warmup.listed_one(&cat.name_any()),
        Ok(watcher::Event::InitDone) => warmup.listed_all(),
        Ok(watcher::Event::Delete(cat)) => warmup.settled(&cat.name_any()),
        _ => {}
    });
    let controller =
        Controller::for_stream(events.applied_objects(), store).reconcile_all_on(became_leader);
    olm_runtime::report::run(
        "ClusterCatalog",
        controller,
        reconcile,
        error_policy,
        ctx,
        shutdown,
    )
    .await;
}

/// Deletes stored content of catalogs that no longer exist (upstream's garbage collector).
pub async fn collect_garbage(ctx: &Context) {
    let api: Api<ClusterCatalog> = Api::all(ctx.client.clone());
    let list = match api.list_metadata(&ListParams::default()).await {
        Ok(list) => list,
        Err(e) => {
            warn!(error = %e, "garbage collection: listing ClusterCatalogs failed; trying again at the next interval");
            return;
        }
    };
    let existing: std::collections::BTreeSet<String> =
        list.items.iter().map(|c| c.name_any()).collect();
    for name in ctx.storage.names() {
        if !existing.contains(&name) {
            let storage = ctx.storage.clone();
            let catalog = name.clone();
            match tokio::task::spawn_blocking(move || storage.delete(&catalog)).await {
                Ok(Ok(())) => {
                    info!(catalog = %name, "garbage collection: deleted the content of a catalog that no longer exists")
                }
                Ok(Err(e)) => {
                    warn!(catalog = %name, error = %e, "garbage collection: deleting content failed")
                }
                Err(e) => {
                    warn!(catalog = %name, error = %e, "garbage collection: deleting content failed")
                }
            }
        }
    }
}

/// A failed reconcile comes back after an exponential backoff per catalog: the retry delay,
/// doubled with each consecutive failure up to 32 times it (10 s … 5 min 20 s by default).
pub fn backoff(retry_after: std::time::Duration) -> Backoff {
    Backoff {
        base: retry_after,
        cap: retry_after.saturating_mul(32),
    }
}

/// The harness's error policy, with the [`backoff`] the harness was made with.
fn error_policy(cat: Arc<ClusterCatalog>, err: &Error, ctx: Arc<Context>) -> Action {
    ctx.harness
        .retry_object("reconciling the ClusterCatalog", &*cat, err)
}

/// One reconcile: gather, decide, do the work if asked, conclude, perform the plan.
pub async fn reconcile(cat: Arc<ClusterCatalog>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = cat.name_any();
    let span = tracing::debug_span!("reconcile", catalog = %name);
    // Upstream's words at info, which scripts and upstream's e2e suite look for in the leader's
    // log to know a catalog was reconciled.
    info!(catalog = %name, "reconcile starting");
    let work = reconcile_one(&cat, &ctx, &name).instrument(span);
    let result = ctx
        .harness
        .reconcile(&name, work, |_| olm_runtime::metrics::Outcome::Success)
        .await;
    info!(catalog = %name, "reconcile ending");
    result
}

/// [`reconcile`] without its logging and timing.
async fn reconcile_one(cat: &ClusterCatalog, ctx: &Context, name: &str) -> Result<Action, Error> {
    let stored = ctx.storage.get(name).map(|entry| entry.record.clone());
    let base_url = base_url(&ctx.config, name);
    let inputs = Inputs {
        catalog: cat,
        stored: stored.as_ref(),
        base_url: &base_url,
        now: jiff::Timestamp::now(),
    };
    let plan = match decide::decide(&inputs) {
        Decision::Plan(plan) => plan,
        Decision::Work(work) => {
            debug!(?work, "working");
            let done = perform(ctx, name, stored.as_ref(), work, inputs.now).await;
            decide::conclude(&inputs, done)
        }
    };
    let result = apply(ctx, cat, plan).await;
    ctx.warmup.settled(name);
    result
}

/// Does the work a decision asked for and reports its outcome.
async fn perform(
    ctx: &Context,
    name: &str,
    stored: Option<&Record>,
    work: Work,
    now: jiff::Timestamp,
) -> Done {
    match work {
        Work::Unpack { reference } => {
            Done::Unpacked(unpack(ctx, name, &reference, stored, now).await)
        }
        Work::DeleteContent { then } => {
            let storage = ctx.storage.clone();
            let catalog = name.to_string();
            let result = match tokio::task::spawn_blocking(move || storage.delete(&catalog)).await {
                Ok(deleted) => deleted.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            Done::Deleted(then, result)
        }
    }
}

/// Writes the plan's status, patches its metadata, and turns its `next` into an [`Action`].
async fn apply(ctx: &Context, cat: &ClusterCatalog, plan: Plan) -> Result<Action, Error> {
    let api: Api<ClusterCatalog> = Api::all(ctx.client.clone());
    let name = cat.name_any();
    let leads = ctx.leads();
    if !leads {
        debug!("not leading: content stored, status and metadata left to the leader");
    }
    let plan = decide::for_role(plan, leads);
    // The metadata patch below is conditional on the resourceVersion; after a status write it
    // must be the one that write returned.
    let written;
    let current = match plan.status {
        Some(status) => {
            written = write_status(&api, cat, status).await?;
            &written
        }
        None => cat,
    };
    match plan.metadata {
        Metadata::Keep => {}
        Metadata::AddFinalizerAndLabel => {
            debug!("adding the finalizer and the name label");
            add_finalizer_and_label(&api, current).await?;
        }
        Metadata::RemoveFinalizer => {
            debug!("removing the finalizer");
            remove_finalizer(&api, current).await?;
        }
    }
    match plan.next {
        Next::AwaitChange => Ok(Action::await_change()),
        Next::RequeueAfter(wait) => {
            debug!(catalog = %name, ?wait, "next poll");
            Ok(Action::requeue(wait))
        }
        Next::Retry(message) => Err(Error::Retry(message)),
    }
}

async fn add_finalizer_and_label(
    api: &Api<ClusterCatalog>,
    cat: &ClusterCatalog,
) -> Result<(), Error> {
    let name = cat.name_any();
    let mut finalizers = cat.finalizers().to_vec();
    if !finalizers.iter().any(|f| f == CATALOG_CACHE_FINALIZER) {
        finalizers.push(CATALOG_CACHE_FINALIZER.to_string());
    }
    // The resourceVersion makes the replace of the finalizer list conditional, so a
    // finalizer someone else added meanwhile is never dropped.
    let patch = json!({"metadata": {
        "resourceVersion": cat.resource_version(),
        "finalizers": finalizers,
        "labels": {METADATA_NAME_LABEL: name},
    }});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

async fn remove_finalizer(api: &Api<ClusterCatalog>, cat: &ClusterCatalog) -> Result<(), Error> {
    let finalizers: Vec<&String> = cat
        .finalizers()
        .iter()
        .filter(|f| *f != CATALOG_CACHE_FINALIZER)
        .collect();
    // Conditional on the resourceVersion, as when adding.
    let patch = json!({"metadata": {
        "resourceVersion": cat.resource_version(),
        "finalizers": finalizers,
    }});
    match api
        .patch(
            &cat.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Resolves the reference; pulls and stores the catalog unless the digest is already stored.
async fn unpack(
    ctx: &Context,
    name: &str,
    spec_ref: &str,
    stored: Option<&Record>,
    now: jiff::Timestamp,
) -> Result<Record, UnpackFailure> {
    let reference: ImageRef = spec_ref
        .parse()
        .map_err(|e: olm_image::ImageError| UnpackFailure::InvalidReference(e.to_string()))?;
    let source = |e: olm_image::ImageError| UnpackFailure::Source(e.to_string());
    let store_failed = |e: &dyn std::fmt::Display| UnpackFailure::Store(e.to_string());
    let digest = ctx.images.resolve(&reference).await.map_err(source)?;
    let pinned = reference.with_digest(&digest);
    if let Some(record) = stored
        && record.digest == digest.as_str()
    {
        debug!(%digest, "digest unchanged; recording the poll");
        let storage = ctx.storage.clone();
        let name = name.to_string();
        return match tokio::task::spawn_blocking(move || storage.touch(&name, now)).await {
            Ok(Ok(entry)) => Ok(entry.record.clone()),
            Ok(Err(e)) => Err(store_failed(&e)),
            Err(e) => Err(store_failed(&e)),
        };
    }

    std::fs::create_dir_all(&ctx.config.work_dir)
        .map_err(|e| UnpackFailure::Source(format!("{}: {e}", ctx.config.work_dir.display())))?;
    let work = WorkDir::new(&ctx.config.work_dir, name)
        .map_err(|e| UnpackFailure::Source(e.to_string()))?;
    // Only the directory the image's configs label names is unpacked; the label is read from
    // the image config before any layer is downloaded.
    let tree = work.0.join("fs");
    // Messages name files as they are inside the image (`configs/catalog.yaml`): the host's
    // unpack path means nothing to cluster users, and it changes with every attempt, which
    // would change the status on every retry.
    let inside = format!("{}/", tree.display());
    let source =
        |e: olm_image::ImageError| UnpackFailure::Source(e.to_string().replace(&inside, ""));
    let store_failed =
        |e: &dyn std::fmt::Display| UnpackFailure::Store(e.to_string().replace(&inside, ""));
    info!(image = %pinned, "pulling");
    let pulled = match ctx
        .images
        .pull_to_dir(&pinned, &tree, &Filter::CatalogConfigs, Expect::Catalog)
        .await
    {
        Ok(p) => p,
        Err(olm_image::ImageError::NotACatalog { label: None, .. }) => {
            return Err(UnpackFailure::MissingConfigsLabel);
        }
        // Refused while streaming, nothing kept; the client remembers the digest, so the
        // retries and polls that follow cost a manifest request each, not a download.
        Err(e @ olm_image::ImageError::TooLarge { .. }) => {
            info!(image = %pinned, error = %e, "refused");
            return Err(UnpackFailure::TooLarge(e.to_string()));
        }
        Err(e) => return Err(source(e)),
    };
    let fbc_dir = pulled
        .catalog_dir()
        .ok_or(UnpackFailure::MissingConfigsLabel)?;
    let storage = ctx.storage.clone();
    let (name, resolved, digest) = (name.to_string(), pinned.to_string(), digest.to_string());
    let result = match tokio::task::spawn_blocking(move || {
        storage.store(&name, &resolved, &digest, now, &fbc_dir)
    })
    .await
    {
        Ok(Ok(entry)) => Ok(entry.record.clone()),
        Ok(Err(e)) => Err(store_failed(&e)),
        Err(e) => Err(store_failed(&e)),
    };
    drop(work);
    if result.is_ok() {
        info!(image = %pinned, "stored");
    }
    result
}

/// A private directory for one pull, removed when dropped.
struct WorkDir(PathBuf);

impl WorkDir {
    fn new(parent: &std::path::Path, name: &str) -> std::io::Result<WorkDir> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let path = parent.join(format!(
            "{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)?;
        Ok(WorkDir(path))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The base URL of a catalog's API.
pub fn base_url(config: &Config, name: &str) -> String {
    let scheme = if config.https { "https" } else { "http" };
    format!("{scheme}://{}/catalogs/{name}", config.external_address)
}

/// Replaces the status, returning the object as written; a status the API server refuses is
/// written with its long messages shortened ([`olm_runtime::status`]).
async fn write_status(
    api: &Api<ClusterCatalog>,
    cat: &ClusterCatalog,
    status: ClusterCatalogStatus,
) -> Result<ClusterCatalog, Error> {
    let name = cat.name_any();
    let status = serde_json::to_value(status).map_err(kube::Error::SerdeError)?;
    debug!("writing status");
    let written = olm_runtime::status::write(&name, status, |status| async {
        let mut updated = cat.clone();
        updated.status = Some(serde_json::from_value(status).map_err(kube::Error::SerdeError)?);
        updated.metadata.managed_fields = None;
        api.replace_status(&name, &PostParams::default(), &updated)
            .await
    })
    .await?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_follow_the_scheme() {
        let mut config = Config {
            external_address: "catalogd-service.olmv1-system.svc".into(),
            https: true,
            work_dir: PathBuf::from("/tmp"),
            retry_after: Duration::from_secs(1),
        };
        assert_eq!(
            base_url(&config, "x"),
            "https://catalogd-service.olmv1-system.svc/catalogs/x"
        );
        config.https = false;
        assert_eq!(
            base_url(&config, "x"),
            "http://catalogd-service.olmv1-system.svc/catalogs/x"
        );
    }
}
