//! catalog-operator's CatalogSource registry servers on the cluster: for a `grpc` CatalogSource
//! with `spec.image`, the ServiceAccount, Service, NetworkPolicy and registry Pod that
//! `olm_v0::catalog_operator::catalogsource` describes, and `status.registryService`; a spec that
//! cannot be served gets `SpecInvalidError` with upstream's message. Pods are replaced when their
//! spec hash no longer matches; status is written only when it changes.
//!
//! Every grpc source's registry (`spec.address`, or the Service) is dialled and watched
//! ([`super::connection`]), and `status.connectionState` follows it.
//!
//! `spec.updateStrategy.registryPoll` starts an update pod every interval and promotes it when its
//! image digest differs from the serving Pod's ([`olm_v0::catalog_operator::registrypoll`]);
//! catalogs served in process re-resolve their tag instead.
//!
//! ConfigMap sources (`configmap`, `internal`) are served by olm itself ([`super::inprocess`]):
//! each pass reads the ConfigMap, and [`olm_v0::catalog_operator::configmapsource::decide`] says
//! whether to adopt it, record `status.configMapReference`, or build its catalog, and what its
//! `status.connectionState` says of the watch's dial; a ConfigMap's change (a metadata watch) wakes
//! the sources naming it. Address sources get `status.registryService` with the protocol and
//! `createdAt`, as upstream's address reconciler writes it.

use olm_runtime::harness::{Harness, key_of};
use olm_runtime::watch::RecoveringExt as _;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{WatchStreamExt as _, watcher};
use olm_v0::catalog_operator::catalogsource::pass::{self, Route};
use olm_v0::catalog_operator::catalogsource::{
    CATALOG_SOURCE_LABEL, POD_HASH_LABEL, PodInput, grpc_server_network_policy, namespace_security,
    registry_pod, registry_service, registry_service_account,
};
use olm_v0::catalog_operator::configmapsource::{self, Lookup, Serving};
use olm_v0::catalog_operator::registrypoll::{
    NOT_READY_REQUEUE, PodFacts, Poll, UPDATE_LABEL, UpdateStep, promoted_labels, update_pod,
    update_step,
};
use olm_v0_api::v1alpha1::{CatalogSource, CatalogSourceStatus};
use serde_json::{Value, json};
use tracing::{info, warn};

use super::connection::Connections;
use super::inprocess::InProcess;
use crate::error::Error;
use crate::{FIELD_MANAGER, Index};
use olm_cluster::context::Shared;
use olm_runtime::metrics::Outcome;

/// The name the CatalogSource controller's metrics and logs go by.
pub const CATALOG_SOURCE_CONTROLLER: &str = "catalogsource";

/// The image that serves extracted catalog content (`extractContent`), as upstream's default.
const OPM_IMAGE: &str = "quay.io/operator-framework/opm:latest";
/// The image holding `copy-content`, as upstream's default.
const UTIL_IMAGE: &str = "quay.io/operator-framework/olm:latest";
/// The user restricted registry Pods run as (upstream's `--set-workload-user-id` default).
const RUN_AS_USER: i64 = 1001;

struct Ctx {
    shared: Arc<Shared>,
    index: Index,
    harness: Harness,
    connections: Connections,
    wake: mpsc::Sender<ObjectRef<CatalogSource>>,
    /// Catalogs served by olm itself.
    in_process: Arc<InProcess>,
    /// ConfigMap versions that did not load, by source: the version and the status message, so
    /// that a bad ConfigMap is parsed once, not on every pass.
    failed_loads: Arc<FailedLoads>,
}

/// ConfigMap versions that did not load: by source, the version and the status message.
type FailedLoads = std::sync::Mutex<std::collections::HashMap<String, (String, String)>>;

/// Runs the controller until `stop` resolves.
pub async fn run(
    shared: Arc<Shared>,
    index: Index,
    connections: Connections,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let client = shared.client.clone();
    let (wake, woken) = mpsc::channel(256);
    let in_process = Arc::new(InProcess::new(
        shared.images.clone(),
        &shared.cache_dir.join("v0-catalogs"),
    ));
    let failed_loads = Arc::new(FailedLoads::default());
    // Deleted CatalogSources' connections are closed and in-process registries stopped.
    let forget = {
        let connections = connections.clone();
        let in_process = in_process.clone();
        let failed_loads = failed_loads.clone();
        let api = Api::<CatalogSource>::all(client.clone());
        tokio::spawn(async move {
            let events = watcher::watcher(api, watcher::Config::default())
                .recovering("catalogsources (connections)");
            let mut events = std::pin::pin!(events);
            while let Some(e) = events.next().await {
                if let Ok(watcher::Event::Delete(s)) = e {
                    connections.forget(&key(&s));
                    in_process.forget(&key(&s));
                    crate::lock(&failed_loads).remove(&key(&s));
                }
            }
        })
    };
    let harness = shared.harness(CATALOG_SOURCE_CONTROLLER);
    let ctx = Arc::new(Ctx {
        shared,
        index,
        harness,
        connections: connections.clone(),
        wake,
        in_process,
        failed_loads,
    });
    let (store, writer) = reflector::store();
    let sources_of_config_map = store.clone();
    let sources = reflector::reflector(
        writer,
        watcher::watcher(
            Api::<CatalogSource>::all(client.clone()),
            watcher::Config::default(),
        ),
    )
    .recovering("catalogsources")
    .applied_objects();
    let controller = Controller::for_stream(sources, store)
        .watches_stream(
            // Metadata only: a change of resourceVersion is all that matters, and the data is
            // read when a source naming the ConfigMap is reconciled.
            watcher::watcher(
                Api::<kube::core::PartialObjectMeta<ConfigMap>>::all(client.clone()),
                watcher::Config::default(),
            )
            .recovering("configmaps (catalog sources)")
            .touched_objects(),
            move |cm| {
                let namespace = cm.namespace().unwrap_or_default();
                let name = cm.name_any();
                sources_of_config_map
                    .state()
                    .into_iter()
                    .filter(|s| {
                        s.namespace().as_deref() == Some(namespace.as_str())
                            && s.spec.config_map.as_deref() == Some(name.as_str())
                    })
                    .map(|s| ObjectRef::from_obj(&*s))
                    .collect::<Vec<_>>()
            },
        )
        .owns_stream(
            watcher::watcher(
                Api::<Pod>::all(client),
                watcher::Config::default().labels(CATALOG_SOURCE_LABEL),
            )
            .recovering("pods (catalog registries)")
            .touched_objects(),
        )
        .reconcile_on(woken);
    olm_runtime::report::run(
        CATALOG_SOURCE_CONTROLLER,
        controller,
        reconcile,
        error_policy,
        ctx,
        stop,
    )
    .await;
    forget.abort();
    connections.close_all();
}

fn key(s: &CatalogSource) -> String {
    key_of(s)
}

fn error_policy(source: Arc<CatalogSource>, err: &Error, ctx: Arc<Ctx>) -> Action {
    ctx.harness
        .retry_object("reconciling the CatalogSource", &*source, err)
}

async fn reconcile(source: Arc<CatalogSource>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    ctx.harness
        .reconcile(&key(&source), sync(&source, &ctx), |_| Outcome::Success)
        .await
        .map(|poll| poll.map_or_else(Action::await_change, Action::requeue))
}

/// One pass: [`pass::start`] says how the source is served, the registry is made ready and its
/// address watched as that says, and [`pass::conclude`] says what the status is then.
/// `Some(interval)` when the source's image is polled.
async fn sync(source: &CatalogSource, ctx: &Ctx) -> Result<Option<Duration>, Error> {
    let current = source.status.clone().unwrap_or_default();
    let k = key(source);
    let start = pass::start(source);
    let address = match &start.route {
        Route::Invalid => {
            ctx.connections.forget(&k);
            return write_status(ctx, source, &current, start.status)
                .await
                .map(|()| None);
        }
        Route::ConfigMap => {
            return sync_config_map(ctx, source, &current).await.map(|()| None);
        }
        Route::InProcess { image } => match ctx.in_process.ensure(&k, image).await {
            Ok((address, _)) => Some(address),
            Err(e) => {
                let now = crate::now();
                let found = found(Err(&e), None, false, &now);
                let status = pass::conclude(source, &start, &found);
                write_status(ctx, source, &current, status).await?;
                return Err(Error::Retry(e));
            }
        },
        Route::Address { address } | Route::Pod { address } => {
            ctx.in_process.forget(&k);
            Some(address.clone())
        }
    };
    if let Some(address) = &address {
        ctx.connections
            .ensure(ObjectRef::from_obj(source), address, ctx.wake.clone());
    }
    let connection = ctx.connections.view(&k);
    let now = crate::now();
    let times = PollTimes {
        now: std::time::SystemTime::from(now.0),
        last: start
            .status
            .latest_image_registry_poll
            .as_ref()
            .map(|t| std::time::SystemTime::from(t.0)),
        created: source
            .metadata
            .creation_timestamp
            .as_ref()
            .map_or(std::time::SystemTime::from(now.0), |t| {
                std::time::SystemTime::from(t.0)
            }),
        stamp: now,
    };
    let poll_due = start.poll.as_ref().is_some_and(|p| times.due(p));
    match &start.route {
        Route::InProcess { .. } => {
            // The registry is olm's own: no Pod, Service or NetworkPolicy. `ensure` above
            // resolved the tag already.
            let found = found(Ok(()), connection.as_ref(), poll_due, &times.stamp);
            let status = pass::conclude(source, &start, &found);
            let next = start.poll.as_ref().map(|p| times.resync(p, &status));
            write_status(ctx, source, &current, status).await?;
            Ok(next)
        }
        Route::Pod { .. } => match ensure_registry(ctx, source).await {
            Ok(serving) => {
                let found = found(Ok(()), connection.as_ref(), false, &times.stamp);
                let mut status = pass::conclude(source, &start, &found);
                let Some(poll) = &start.poll else {
                    return write_status(ctx, source, &current, status)
                        .await
                        .map(|()| None);
                };
                let polled = poll_registry(ctx, source, poll, &serving, &times, &mut status).await;
                write_status(ctx, source, &current, status).await?;
                polled.map(Some)
            }
            Err(e) => {
                let message = e.to_string();
                let found = found(Err(&message), connection.as_ref(), false, &times.stamp);
                let status = pass::conclude(source, &start, &found);
                write_status(ctx, source, &current, status).await?;
                Err(e)
            }
        },
        Route::Address { .. } | Route::Invalid | Route::ConfigMap => {
            let found = found(Ok(()), connection.as_ref(), false, &times.stamp);
            let status = pass::conclude(source, &start, &found);
            write_status(ctx, source, &current, status)
                .await
                .map(|()| None)
        }
    }
}

/// What the pass found, for [`pass::conclude`].
fn found<'a>(
    registry: Result<(), &'a str>,
    connection: Option<&'a configmapsource::Connection>,
    poll_due: bool,
    now: &'a Time,
) -> pass::Found<'a> {
    pass::Found {
        registry,
        connection,
        poll_due,
        now,
    }
}

/// One pass of a ConfigMap source: read its ConfigMap, let
/// [`configmapsource::decide`] say what to do, do it, and write the status. A build is
/// followed by a second decision in the same pass (which then finds the catalog served or
/// failed), so a new ConfigMap version is served and reported in one pass.
async fn sync_config_map(
    ctx: &Ctx,
    source: &CatalogSource,
    current: &CatalogSourceStatus,
) -> Result<(), Error> {
    let namespace = source.namespace().unwrap_or_default();
    let name = source.spec.config_map.as_deref().unwrap_or_default();
    let k = key(source);
    let api: Api<ConfigMap> = Api::namespaced(ctx.shared.client.clone(), &namespace);
    let (lookup, data) = look_up(&api, name).await;
    // At most one build per pass: the second decision sees it served or failed.
    for _ in 0..2 {
        let serving = match ctx.in_process.serving(&k) {
            Some((version, address, since)) => Serving::Served {
                key: version,
                address,
                since,
            },
            None => match crate::lock(&ctx.failed_loads).get(&k) {
                Some((version, message)) => Serving::Failed {
                    key: version.clone(),
                    message: message.clone(),
                },
                None => Serving::Nothing,
            },
        };
        let connection = ctx.connections.view(&k);
        let now = crate::now();
        let decision =
            configmapsource::decide(source, &lookup, &serving, connection.as_ref(), &now);
        let mut status = decision.status;
        match decision.action {
            configmapsource::Action::Build { key: version } => {
                build(ctx, source, name, &version, &data).await?;
                continue;
            }
            configmapsource::Action::Adopt(patch) => {
                match api
                    .patch(
                        name,
                        &PatchParams::default(),
                        &kube::api::Patch::Merge(patch),
                    )
                    .await
                {
                    // The new version wakes the next pass through the ConfigMap watch.
                    Ok(_) => {}
                    // Changed meanwhile: that change wakes the next pass.
                    Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => {}
                    Err(e) => {
                        configmapsource::adopt_failed(
                            &mut status,
                            &olm_runtime::api_error::message(&e),
                        );
                        write_status(ctx, source, current, status).await?;
                        return Err(e.into());
                    }
                }
            }
            configmapsource::Action::None => {}
        }
        // The watch of a newly served address reports through `wake`; the decision has written
        // `connectionState` from what it reported so far.
        match serving {
            Serving::Served { address, .. } => {
                ctx.connections
                    .ensure(ObjectRef::from_obj(source), &address, ctx.wake.clone());
            }
            Serving::Nothing | Serving::Failed { .. } => ctx.connections.forget(&k),
        }
        return write_status(ctx, source, current, status).await;
    }
    Ok(())
}

/// The ConfigMap `name` as the decision reads it, and its data (none when it cannot be read).
async fn look_up(
    api: &Api<ConfigMap>,
    name: &str,
) -> (Lookup, std::collections::BTreeMap<String, String>) {
    match api.get_opt(name).await {
        Ok(Some(cm)) => {
            let meta = configmapsource::ConfigMapMeta {
                name: cm.name_any(),
                namespace: cm.namespace().unwrap_or_default(),
                uid: cm.metadata.uid.clone().unwrap_or_default(),
                resource_version: cm.metadata.resource_version.clone().unwrap_or_default(),
                labels: cm.labels().clone(),
                owner_references: cm.metadata.owner_references.clone().unwrap_or_default(),
            };
            (Lookup::Found(meta), cm.data.unwrap_or_default())
        }
        Ok(None) => (
            Lookup::Failed(format!("configmaps {name:?} not found")),
            Default::default(),
        ),
        Err(e) => (
            Lookup::Failed(olm_runtime::api_error::message(&e)),
            Default::default(),
        ),
    }
}

/// Builds the registry of the ConfigMap's `data` (version `version`) off the async threads and
/// serves it, or records why it does not load, for the next decision to see.
async fn build(
    ctx: &Ctx,
    source: &CatalogSource,
    config_map: &str,
    version: &str,
    data: &std::collections::BTreeMap<String, String>,
) -> Result<(), Error> {
    let k = key(source);
    let namespace = source.namespace().unwrap_or_default();
    let data = data.clone();
    let built = tokio::task::spawn_blocking(move || build_config_map_registry(&data))
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r);
    match built {
        Ok(registry) => {
            ctx.in_process
                .serve(&k, version, registry)
                .await
                .map_err(Error::Retry)?;
            crate::lock(&ctx.failed_loads).remove(&k);
            info!(catalogsource = %source.name_any(), namespace = %namespace, configmap = %config_map, version = %version, "serving the configmap's catalog");
        }
        Err(message) => {
            ctx.in_process.forget(&k);
            warn!(catalogsource = %source.name_any(), namespace = %namespace, configmap = %config_map, error = %message, "the configmap's catalog does not load");
            crate::lock(&ctx.failed_loads).insert(k, (version.to_owned(), message));
        }
    }
    Ok(())
}

/// The registry of a ConfigMap's data, or the status message saying why there is none.
fn build_config_map_registry(
    data: &std::collections::BTreeMap<String, String>,
) -> Result<olm_registry::Registry, String> {
    let fail = |e: &dyn std::fmt::Display| configmapsource::load_failure_message(e);
    let blobs = configmapsource::catalog_blobs(data).map_err(|e| fail(&e))?;
    let mut text = String::new();
    for blob in &blobs {
        text.push_str(&blob.to_string());
        text.push('\n');
    }
    let catalog =
        olm_catalog::load::load_bytes(text.as_bytes(), "configmap").map_err(|e| fail(&e))?;
    olm_registry::Registry::build_from_config_map(&catalog).map_err(|e| fail(&e))
}

/// When a polled source's last poll was and what the time is, as the shell read them.
struct PollTimes {
    now: std::time::SystemTime,
    last: Option<std::time::SystemTime>,
    created: std::time::SystemTime,
    /// `now` as `status.latestImageRegistryPoll` is written.
    stamp: Time,
}

impl PollTimes {
    fn due(&self, poll: &Poll) -> bool {
        olm_v0::catalog_operator::registrypoll::due(poll, self.last, self.created, self.now)
    }

    /// When to look again, counting from the poll time in `status` (just stamped or not).
    fn resync(&self, poll: &Poll, status: &CatalogSourceStatus) -> Duration {
        let last = if status.latest_image_registry_poll.as_ref() == Some(&self.stamp) {
            Some(self.now)
        } else {
            self.last
        };
        olm_v0::catalog_operator::registrypoll::resync_after(poll, last, self.created, self.now)
    }
}

/// One polling step for a source whose registry Pods exist (`serving`): start, wait for,
/// promote or discard the update pod. Returns when to look again.
async fn poll_registry(
    ctx: &Ctx,
    source: &CatalogSource,
    poll: &Poll,
    serving: &[PodFacts],
    times: &PollTimes,
    status: &mut CatalogSourceStatus,
) -> Result<Duration, Error> {
    let namespace = source.namespace().unwrap_or_default();
    let name = source.name_any();
    let pods: Api<Pod> = Api::namespaced(ctx.shared.client.clone(), &namespace);
    let updates: Vec<PodFacts> = pods
        .list(&ListParams::default().labels(&format!("{UPDATE_LABEL}={name}")))
        .await?
        .items
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(PodFacts::of)
        .collect();
    let step = update_step(&name, times.due(poll), serving, &updates);
    let grace = |seconds| DeleteParams {
        grace_period_seconds: Some(seconds),
        ..DeleteParams::default()
    };
    // A poll that settles clears the last one's failure whatever the I/O below does; a started
    // or failed update Pod is marked once its Pod was made or removed.
    if matches!(
        step,
        UpdateStep::Promote { .. } | UpdateStep::Discard { .. }
    ) {
        pass::polled(status, &step, &times.stamp);
    }
    match &step {
        UpdateStep::Create => {
            let pod = update_pod(desired_pod(ctx, source, &namespace, &name).await?, &name);
            let typed: Pod =
                serde_json::from_value(pod).map_err(|e| Error::Retry(e.to_string()))?;
            let created = pods.create(&post_params(), &typed).await?;
            info!(catalogsource = %name, namespace = %namespace, pod = %created.name_any(), "catalog update poll: started an update pod");
            pass::polled(status, &step, &times.stamp);
            return Ok(NOT_READY_REQUEUE);
        }
        UpdateStep::Wait { pod } => {
            info!(catalogsource = %name, namespace = %namespace, pod = %pod, "catalog polling: update pod has not yet reported ready");
            return Ok(NOT_READY_REQUEUE);
        }
        UpdateStep::Failed { pod, message } => {
            delete_pod(&pods, pod, &grace(1)).await?;
            pass::polled(status, &step, &times.stamp);
            return Err(Error::Retry(message.clone()));
        }
        UpdateStep::Promote { pod, retire } => {
            pods.patch(
                pod,
                &PatchParams::default(),
                &kube::api::Patch::Merge(json!({"metadata": {"labels": promoted_labels(&name)}})),
            )
            .await?;
            info!(catalogsource = %name, namespace = %namespace, pod = %pod, "catalog image changed: the update pod serves the catalog now");
            for old in retire {
                delete_pod(&pods, old, &grace(1)).await?;
            }
        }
        UpdateStep::Discard { pods: discarded } => {
            for old in discarded {
                delete_pod(&pods, old, &grace(1)).await?;
            }
        }
        UpdateStep::Idle => {}
    }
    Ok(times.resync(poll, status))
}

/// Deletes a Pod; one already gone is fine.
async fn delete_pod(pods: &Api<Pod>, name: &str, params: &DeleteParams) -> Result<(), Error> {
    match pods.delete(name, params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    }
}

/// The registry Pod `source` should have now (its ServiceAccount's pull secrets and the
/// namespace's default security profile included).
async fn desired_pod(
    ctx: &Ctx,
    source: &CatalogSource,
    namespace: &str,
    name: &str,
) -> Result<Value, Error> {
    let sa = registry_service_account(source);
    let secrets: Vec<String> = sa["imagePullSecrets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str().map(str::to_owned))
        .collect();
    let namespace_labels = ctx
        .index
        .namespaces()
        .get(namespace)
        .cloned()
        .unwrap_or_default();
    Ok(registry_pod(
        source,
        &PodInput {
            opm_image: OPM_IMAGE,
            util_image: UTIL_IMAGE,
            service_account: Some((name, &secrets)),
            run_as_user: RUN_AS_USER,
            default_security: namespace_security(&namespace_labels),
        },
    ))
}

/// Applies the ServiceAccount, Service and NetworkPolicy, and makes the registry Pod unless one
/// with the current spec hash exists (deleting those with another, and force-deleting those
/// about to be disrupted). Returns the serving Pods' facts.
async fn ensure_registry(ctx: &Ctx, source: &CatalogSource) -> Result<Vec<PodFacts>, Error> {
    let namespace = source.namespace().unwrap_or_default();
    let name = source.name_any();
    let client = &ctx.shared.client;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for object in [
        &registry_service_account(source),
        &registry_service(source),
        &grpc_server_network_policy(source),
    ] {
        crate::olm_operator::serving::apply(client, &namespace, object, &params)
            .await
            .map_err(Error::Retry)?;
    }
    let pod = desired_pod(ctx, source, &namespace, &name).await?;
    let hash = pod["metadata"]["labels"][POD_HASH_LABEL]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let pods: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let existing = pods
        .list(&ListParams::default().labels(&format!("{CATALOG_SOURCE_LABEL}={name}")))
        .await?;
    let mut serving = Vec::new();
    for p in &existing.items {
        if p.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let facts = PodFacts::of(p);
        if facts.disrupted {
            info!(catalogsource = %name, namespace = %namespace, pod = %p.name_any(), "force deleting a registry pod about to be disrupted");
            let now = DeleteParams {
                grace_period_seconds: Some(0),
                ..DeleteParams::default()
            };
            delete_pod(&pods, &p.name_any(), &now).await?;
        } else if p.labels().get(POD_HASH_LABEL) == Some(&hash) {
            serving.push(facts);
        } else {
            info!(catalogsource = %name, namespace = %namespace, pod = %p.name_any(), "replacing an outdated registry pod");
            delete_pod(&pods, &p.name_any(), &DeleteParams::default()).await?;
        }
    }
    if serving.is_empty() {
        let typed: Pod = serde_json::from_value(pod).map_err(|e| Error::Retry(e.to_string()))?;
        pods.create(&post_params(), &typed).await?;
        info!(catalogsource = %name, namespace = %namespace, "created the registry pod");
    }
    Ok(serving)
}

/// Writes `status` when it differs from `current`, whole, as upstream's `UpdateStatus` does
/// (a merge patch without a resourceVersion: a pass that read a stale copy neither conflicts
/// nor loses what it decided; [`olm_runtime::status::patch_change`]). Messages are compared and
/// written bounded, as stored, so an over-long one is not written again on every pass.
async fn write_status(
    ctx: &Ctx,
    source: &CatalogSource,
    current: &CatalogSourceStatus,
    status: CatalogSourceStatus,
) -> Result<(), Error> {
    let api: Api<CatalogSource> = Api::namespaced(
        ctx.shared.client.clone(),
        &source.namespace().unwrap_or_default(),
    );
    match olm_runtime::status::patch_change(&api, &source.name_any(), None, Some(current), &status)
        .await
    {
        Ok(_) => Ok(()),
        // Deleted meanwhile: nothing left to report on.
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
