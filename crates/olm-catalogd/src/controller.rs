//! The ClusterCatalog controller: pull the image, store its FBC, report status.
//!
//! # Flow of one reconcile
//!
//! 1. Deleted: drop the served content, then remove our finalizer.
//! 2. `availabilityMode: Unavailable`: drop the content, report Progressing True/`Succeeded` and
//!    Serving False/`UserSpecifiedUnavailable` ("Catalog availability mode is set to
//!    Unavailable"), clear `resolvedSource`, `urls` and `lastUnpacked`, remove the finalizer.
//! 3. Make sure the finalizer and the `olm.operatorframework.io/metadata.name` label are present
//!    (one patch; the change event brings us back).
//! 4. Decide whether to unpack: not when content is stored, the status already says what it would
//!    say, the conditions were written for this generation, and no poll is due. This is what lets
//!    a restarted process serve at once without pulling: everything needed is on disk and in the
//!    object's status.
//! 5. Resolve the reference. A digest equal to the stored one is only a successful poll. Otherwise
//!    pull the image (only the directory its `operators.operatorframework.io.index.configs.v1`
//!    label names), validate and store the FBC.
//! 6. Failure: Progressing True/`Retrying` (or False/`Blocked` when no retry can help) with
//!    "source catalog content: …" or "error storing fbc: …"; Serving and the previous content are
//!    left alone, so the last good catalog stays served. Success: Progressing True/`Succeeded`
//!    "Successfully unpacked and stored content from resolved source", Serving True/`Available`
//!    "Serving desired content from resolved source", `resolvedSource`, `urls.base`,
//!    `lastUnpacked`; requeue at the next poll (plus up to 1% jitter).
//!
//! # Terminal errors (as upstream)
//! An unparsable reference, and a missing configs label when the spec pins a digest (a tag may
//! later point at a fixed image, so that case keeps retrying).
//!
//! # The name label
//! The webhook in [`crate::webhook`] sets the label at admission, as upstream; the patch in step 3
//! covers clusters where the webhook is not registered.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use olm_api::catalog::{TYPE_PROGRESSING, TYPE_SERVING};
use olm_api::{
    AvailabilityMode, CATALOG_CACHE_FINALIZER, CATALOG_CONFIGS_LABEL, CatalogReason, CatalogUrls,
    ClusterCatalog, ClusterCatalogStatus, METADATA_NAME_LABEL, ResolvedCatalogSource,
    ResolvedImageSource, SourceType,
};
use olm_image::{Filter, ImageRef};
use serde_json::json;

use crate::storage::{Entry, Storage};

/// Message of both conditions in `Unavailable` mode.
pub const MSG_UNAVAILABLE: &str = "Catalog availability mode is set to Unavailable";
/// Progressing message after a successful unpack.
pub const MSG_SUCCEEDED: &str = "Successfully unpacked and stored content from resolved source";
/// Serving message while content is served.
pub const MSG_SERVING: &str = "Serving desired content from resolved source";

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
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused a request.
    #[error("{0}")]
    Kube(#[from] kube::Error),
    /// A pull or store failed; already reported in status, retried after a while.
    #[error("{0}")]
    Retrying(String),
}

/// Why unpacking failed.
enum UnpackError {
    /// Report Progressing False/Blocked and wait for a spec change.
    Terminal(String),
    /// Report Progressing True/Retrying and try again.
    Retry(String),
}

fn terminal(message: String) -> UnpackError {
    UnpackError::Terminal(message)
}

/// Runs the controller until `shutdown` resolves.
pub async fn run(
    ctx: Arc<Context>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let api: Api<ClusterCatalog> = Api::all(ctx.client.clone());
    collect_garbage(&ctx).await;
    Controller::new(api, watcher::Config::default())
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {})
        .await;
}

/// Deletes stored content of catalogs that no longer exist (upstream's garbage collector).
pub async fn collect_garbage(ctx: &Context) {
    let api: Api<ClusterCatalog> = Api::all(ctx.client.clone());
    let Ok(list) = api.list_metadata(&ListParams::default()).await else {
        return;
    };
    let existing: std::collections::BTreeSet<String> =
        list.items.iter().map(|c| c.name_any()).collect();
    for name in ctx.storage.names() {
        if !existing.contains(&name) {
            let storage = ctx.storage.clone();
            let _ = tokio::task::spawn_blocking(move || storage.delete(&name)).await;
        }
    }
}

fn error_policy(_cat: Arc<ClusterCatalog>, _err: &Error, ctx: Arc<Context>) -> Action {
    Action::requeue(ctx.config.retry_after)
}

/// One reconcile; see the module docs for the flow.
pub async fn reconcile(cat: Arc<ClusterCatalog>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = cat.name_any();
    let api: Api<ClusterCatalog> = Api::all(ctx.client.clone());
    let has_finalizer = cat
        .finalizers()
        .iter()
        .any(|f| f == CATALOG_CACHE_FINALIZER);

    if cat.metadata.deletion_timestamp.is_some() {
        delete_content(&ctx, &name).await?;
        if has_finalizer {
            remove_finalizer(&api, &cat).await?;
        }
        return Ok(Action::await_change());
    }

    if cat.spec.availability_mode == AvailabilityMode::Unavailable {
        delete_content(&ctx, &name).await?;
        let mut status = cat.status.clone().unwrap_or_default();
        let generation = cat.metadata.generation.unwrap_or(0);
        set_condition(
            &mut status.conditions,
            TYPE_PROGRESSING,
            "True",
            CatalogReason::Succeeded,
            MSG_UNAVAILABLE,
            generation,
        );
        set_condition(
            &mut status.conditions,
            TYPE_SERVING,
            "False",
            CatalogReason::UserSpecifiedUnavailable,
            MSG_UNAVAILABLE,
            generation,
        );
        status.resolved_source = None;
        status.urls = None;
        status.last_unpacked = None;
        write_status(&api, &cat, status).await?;
        if has_finalizer {
            remove_finalizer(&api, &cat).await?;
        }
        return Ok(Action::await_change());
    }

    let labelled = cat.labels().get(METADATA_NAME_LABEL) == Some(&name);
    if !has_finalizer || !labelled {
        let mut finalizers = cat.finalizers().to_vec();
        if !has_finalizer {
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
        return Ok(Action::await_change());
    }

    let Some(image) = cat.spec.source.image.as_ref() else {
        // The CRD makes this impossible; say so if someone serves objects without it.
        let message =
            "source catalog content: image source is required for source type Image".to_string();
        report_failure(&api, &cat, UnpackError::Terminal(message.clone())).await?;
        return Ok(Action::await_change());
    };
    let poll = image
        .poll_interval_minutes
        .filter(|m| *m > 0)
        .map(|m| Duration::from_secs(m as u64 * 60));

    let stored = ctx.storage.get(&name);
    let generation = cat.metadata.generation.unwrap_or(0);
    if let Some(entry) = &stored {
        let expected = served_status(&cat, entry, &ctx.config);
        let current = cat.status.clone().unwrap_or_default();
        let up_to_date = same_status(&current, &expected)
            && condition(&current, TYPE_PROGRESSING).and_then(|c| c.observed_generation)
                == Some(generation);
        let due = poll.map(|p| poll_due(&entry.record.polled_at, p));
        match (up_to_date, due) {
            (true, None) => return Ok(Action::await_change()),
            (true, Some(Ok(wait))) => return Ok(Action::requeue(jitter(&name, wait, poll))),
            _ => {}
        }
    }

    match unpack(&ctx, &name, &image.ref_, stored.as_ref()).await {
        Ok(entry) => {
            let status = served_status(&cat, &entry, &ctx.config);
            write_status(&api, &cat, status).await?;
            Ok(match poll {
                Some(p) => Action::requeue(jitter(&name, p, poll)),
                None => Action::await_change(),
            })
        }
        Err(e) => {
            let retry = matches!(e, UnpackError::Retry(_));
            let message = match &e {
                UnpackError::Retry(m) | UnpackError::Terminal(m) => m.clone(),
            };
            report_failure(&api, &cat, e).await?;
            if retry {
                Err(Error::Retrying(message))
            } else {
                Ok(Action::await_change())
            }
        }
    }
}

/// `Ok(wait)` until the next poll, `Err(())` when a poll is due.
fn poll_due(polled_at: &str, interval: Duration) -> Result<Duration, ()> {
    let Ok(last) = polled_at.parse::<jiff::Timestamp>() else {
        return Err(());
    };
    let elapsed = jiff::Timestamp::now().duration_since(last);
    let elapsed = Duration::try_from(elapsed).unwrap_or(Duration::ZERO);
    interval
        .checked_sub(elapsed)
        .filter(|d| !d.is_zero())
        .ok_or(())
}

/// `wait` plus up to 1% of the poll interval, so catalogs polled at the same interval spread out.
fn jitter(name: &str, wait: Duration, poll: Option<Duration>) -> Duration {
    let Some(poll) = poll else { return wait };
    let seed = name
        .bytes()
        .fold(jiff::Timestamp::now().subsec_nanosecond() as u64, |h, b| {
            h.wrapping_mul(31).wrapping_add(b as u64)
        });
    let max = poll.as_millis() as u64 / 100;
    wait + Duration::from_millis(if max == 0 { 0 } else { seed % max })
}

async fn delete_content(ctx: &Context, name: &str) -> Result<(), Error> {
    let storage = ctx.storage.clone();
    let name = name.to_string();
    tokio::task::spawn_blocking(move || storage.delete(&name))
        .await
        .map_err(|e| Error::Retrying(e.to_string()))?
        .map_err(|e| Error::Retrying(e.to_string()))
}

async fn remove_finalizer(api: &Api<ClusterCatalog>, cat: &ClusterCatalog) -> Result<(), Error> {
    let finalizers: Vec<&String> = cat
        .finalizers()
        .iter()
        .filter(|f| *f != CATALOG_CACHE_FINALIZER)
        .collect();
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

/// Pulls (unless the digest is already stored) and stores the catalog.
async fn unpack(
    ctx: &Context,
    name: &str,
    spec_ref: &str,
    stored: Option<&Arc<Entry>>,
) -> Result<Arc<Entry>, UnpackError> {
    let reference: ImageRef = spec_ref.parse().map_err(|e| {
        terminal(format!(
            "source catalog content: error parsing image reference {spec_ref:?}: {e}"
        ))
    })?;
    let spec_pins_digest = reference.digest().is_some();
    let source =
        |e: olm_image::ImageError| UnpackError::Retry(format!("source catalog content: {e}"));
    let digest = ctx.images.resolve(&reference).await.map_err(source)?;
    let pinned = reference.with_digest(&digest);
    let now = jiff::Timestamp::now();
    if let Some(entry) = stored
        && entry.record.digest == digest.as_str()
    {
        let storage = ctx.storage.clone();
        let name = name.to_string();
        return tokio::task::spawn_blocking(move || storage.touch(&name, now))
            .await
            .map_err(|e| UnpackError::Retry(format!("error storing fbc: {e}")))?
            .map_err(|e| UnpackError::Retry(format!("error storing fbc: {e}")));
    }

    std::fs::create_dir_all(&ctx.config.work_dir).map_err(|e| {
        UnpackError::Retry(format!(
            "source catalog content: {}: {e}",
            ctx.config.work_dir.display()
        ))
    })?;
    let work = WorkDir::new(&ctx.config.work_dir, name)
        .map_err(|e| UnpackError::Retry(format!("source catalog content: {e}")))?;
    // Only the directory the image's configs label names is unpacked; the label is read from
    // the image config before any layer is downloaded.
    let tree = work.0.join("fs");
    let pulled = match ctx
        .images
        .pull_to_dir(&pinned, &tree, &Filter::CatalogConfigs)
        .await
    {
        Ok(p) => p,
        Err(olm_image::ImageError::NotACatalog { label: None, .. }) => {
            let message = format!(
                "source catalog content: catalog image is missing the required label {CATALOG_CONFIGS_LABEL:?}"
            );
            return Err(if spec_pins_digest {
                UnpackError::Terminal(message)
            } else {
                UnpackError::Retry(message)
            });
        }
        Err(e) => return Err(source(e)),
    };
    let fbc_dir = pulled.catalog_dir().ok_or_else(|| {
        UnpackError::Retry(format!(
            "source catalog content: catalog image is missing the required label {CATALOG_CONFIGS_LABEL:?}"
        ))
    })?;
    let storage = ctx.storage.clone();
    let (name, resolved, digest) = (name.to_string(), pinned.to_string(), digest.to_string());
    let result = tokio::task::spawn_blocking(move || {
        storage.store(&name, &resolved, &digest, now, &fbc_dir)
    })
    .await
    .map_err(|e| UnpackError::Retry(format!("error storing fbc: {e}")))?
    .map_err(|e| UnpackError::Retry(format!("error storing fbc: {e}")));
    drop(work);
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

/// The status that says `entry` is being served.
fn served_status(cat: &ClusterCatalog, entry: &Entry, config: &Config) -> ClusterCatalogStatus {
    let generation = cat.metadata.generation.unwrap_or(0);
    let mut status = cat.status.clone().unwrap_or_default();
    set_condition(
        &mut status.conditions,
        TYPE_PROGRESSING,
        "True",
        CatalogReason::Succeeded,
        MSG_SUCCEEDED,
        generation,
    );
    set_condition(
        &mut status.conditions,
        TYPE_SERVING,
        "True",
        CatalogReason::Available,
        MSG_SERVING,
        generation,
    );
    status.resolved_source = Some(ResolvedCatalogSource {
        type_: SourceType::Image,
        image: ResolvedImageSource {
            ref_: entry.record.resolved_ref.clone(),
        },
    });
    status.urls = Some(CatalogUrls {
        base: base_url(config, &cat.name_any()),
    });
    status.last_unpacked = entry
        .record
        .unpacked_at
        .parse::<jiff::Timestamp>()
        .ok()
        .map(Time);
    status
}

/// Equal for our purposes: same fields, conditions equal except for their transition times.
fn same_status(a: &ClusterCatalogStatus, b: &ClusterCatalogStatus) -> bool {
    let key = |c: &Condition| {
        (
            c.type_.clone(),
            c.status.clone(),
            c.reason.clone(),
            c.message.clone(),
            c.observed_generation,
        )
    };
    let mut ca: Vec<_> = a.conditions.iter().map(key).collect();
    let mut cb: Vec<_> = b.conditions.iter().map(key).collect();
    ca.sort();
    cb.sort();
    ca == cb
        && a.resolved_source == b.resolved_source
        && a.urls == b.urls
        && a.last_unpacked == b.last_unpacked
}

fn condition<'a>(status: &'a ClusterCatalogStatus, type_: &str) -> Option<&'a Condition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

/// `meta.SetStatusCondition`: the transition time moves only when the status changes.
fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: &str,
    reason: CatalogReason,
    message: &str,
    generation: i64,
) {
    let now = Time(
        jiff::Timestamp::now()
            .round(jiff::Unit::Second)
            .unwrap_or_else(|_| jiff::Timestamp::now()),
    );
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status != status {
                c.last_transition_time = now;
            }
            c.status = status.to_string();
            c.reason = reason.as_str().to_string();
            c.message = message.to_string();
            c.observed_generation = Some(generation);
        }
        None => conditions.push(Condition {
            type_: type_.to_string(),
            status: status.to_string(),
            reason: reason.as_str().to_string(),
            message: message.to_string(),
            observed_generation: Some(generation),
            last_transition_time: now,
        }),
    }
}

async fn report_failure(
    api: &Api<ClusterCatalog>,
    cat: &ClusterCatalog,
    err: UnpackError,
) -> Result<(), Error> {
    let generation = cat.metadata.generation.unwrap_or(0);
    let mut status = cat.status.clone().unwrap_or_default();
    let (flag, reason, message) = match err {
        UnpackError::Retry(m) => ("True", CatalogReason::Retrying, m),
        UnpackError::Terminal(m) => ("False", CatalogReason::Blocked, m),
    };
    set_condition(
        &mut status.conditions,
        TYPE_PROGRESSING,
        flag,
        reason,
        &truncate(&message),
        generation,
    );
    write_status(api, cat, status).await
}

/// Condition messages are limited to 32768 bytes by the CRD.
fn truncate(message: &str) -> String {
    const MAX: usize = 32768;
    if message.len() <= MAX {
        return message.to_string();
    }
    let mut end = MAX - 3;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &message[..end])
}

async fn write_status(
    api: &Api<ClusterCatalog>,
    cat: &ClusterCatalog,
    status: ClusterCatalogStatus,
) -> Result<(), Error> {
    if cat.status.as_ref().is_some_and(|s| *s == status) {
        return Ok(());
    }
    let mut updated = cat.clone();
    updated.status = Some(status);
    updated.metadata.managed_fields = None;
    api.replace_status(&cat.name_any(), &PostParams::default(), &updated)
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_keep_transition_time_while_status_holds() {
        let mut conditions = Vec::new();
        set_condition(
            &mut conditions,
            TYPE_SERVING,
            "True",
            CatalogReason::Available,
            MSG_SERVING,
            1,
        );
        let first = conditions[0].last_transition_time.clone();
        conditions[0].last_transition_time = Time(jiff::Timestamp::UNIX_EPOCH);
        set_condition(
            &mut conditions,
            TYPE_SERVING,
            "True",
            CatalogReason::Available,
            "other",
            2,
        );
        assert_eq!(
            conditions[0].last_transition_time,
            Time(jiff::Timestamp::UNIX_EPOCH)
        );
        assert_eq!(conditions[0].message, "other");
        assert_eq!(conditions[0].observed_generation, Some(2));
        set_condition(
            &mut conditions,
            TYPE_SERVING,
            "False",
            CatalogReason::Unavailable,
            "gone",
            2,
        );
        assert_ne!(
            conditions[0].last_transition_time,
            Time(jiff::Timestamp::UNIX_EPOCH)
        );
        let _ = first;
    }

    #[test]
    fn polls_are_due_after_the_interval() {
        let now = jiff::Timestamp::now();
        let minute = Duration::from_secs(60);
        assert!(poll_due(&now.to_string(), minute).is_ok());
        let old = now - jiff::SignedDuration::from_secs(120);
        assert!(poll_due(&old.to_string(), minute).is_err());
        assert!(poll_due("garbage", minute).is_err());
    }

    #[test]
    fn jitter_stays_within_one_percent() {
        let poll = Duration::from_secs(600);
        for name in ["a", "b", "operatorhubio"] {
            let d = jitter(name, poll, Some(poll));
            assert!(d >= poll && d < poll + Duration::from_secs(6), "{d:?}");
        }
    }

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
