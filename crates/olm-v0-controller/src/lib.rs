//! OLM v0 on a cluster, as upstream splits it into processes, each in its own room:
//!
//! * olm-operator ([`olm_operator`]): OperatorGroups, ClusterServiceVersions and their copies,
//!   the Operator aggregates, and the install of a CSV's Deployments, RBAC and serving
//!   certificates;
//! * catalog-operator ([`catalog_operator`]): CatalogSources and their registries, Subscriptions
//!   resolved against them, and InstallPlans;
//! * packageserver ([`packageserver`]): PackageManifests served as an aggregated API.
//!
//! They share the caches every controller reads ([`index`], one watch per kind), the routing of
//! each change to the objects it concerns ([`wake`]) and the removal of what deleted objects
//! leave ([`leftovers`]); [`run`] starts them all.
//!
//! Caveat: once a watch has to list again (the API server lost its history), every CSV and
//! group is looked at again: the events of the gap are not known one by one.

mod catalog_operator;
mod error;
mod index;
mod leftovers;
mod olm_operator;
pub mod packageserver;
mod queue;
mod wake;

pub use index::Index;
pub use wake::Wake;

use catalog_operator::{catalogsource, connection, installplans, subscriptions};
use olm_operator::{copies, csv, operatorgroup, operators};

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::Stream;
use futures::channel::mpsc;
use kube::runtime::watcher;
use olm_v0_api::v1alpha1::{ClusterServiceVersion, ClusterServiceVersionPhase, ConditionReason};

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

/// [`olm_v0::olm_operator::strategy::csv_owner_labels`] as a label selector.
pub(crate) fn csv_owner_selector(namespace: &str, name: &str) -> String {
    olm_v0::olm_operator::strategy::csv_owner_labels(namespace, name)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Whether `labels` carry all of [`olm_v0::olm_operator::strategy::csv_owner_labels`].
pub(crate) fn owned_by_csv(labels: &BTreeMap<String, String>, namespace: &str, name: &str) -> bool {
    olm_v0::olm_operator::strategy::csv_owner_labels(namespace, name)
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

/// Runs the OperatorGroup and CSV controllers, and the PackageManifest API as `packageserver`
/// says (reporting to `readiness` while it cannot listen), until `stop` resolves.
pub async fn run(
    shared: Arc<Shared>,
    packageserver: packageserver::Options,
    readiness: olm_runtime::health::Readiness,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let (wake, queues) = Wake::new();
    let mut tasks = tokio::task::JoinSet::new();
    let index = Index::start(&shared.client, &wake, &mut tasks);
    let stop = futures::FutureExt::shared(Box::pin(stop));
    let ready = index.ready();
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
    let operator_tx = wake.operator_sender();
    let (changed_tx, changed_rx) = mpsc::channel(256);
    // Everything once, sent while the controllers already take from the queues.
    let mut first = wake;
    let first_index = index.clone();
    let everything = async move { first.everything(&first_index).await };
    let groups = operatorgroup::run(shared.clone(), index.clone(), queues.group, stop.clone());
    let leftovers = leftovers::tidy(shared.clone(), index.clone(), queues.gone);
    let copies = copies::run(shared.clone(), index.clone(), queues.copy, stop.clone());
    let owners = operators::run(
        shared.clone(),
        index.clone(),
        operator_tx,
        queues.operator,
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
        queues.resolve,
        changed_rx,
        stop.clone(),
    );
    let plans = installplans::run(shared.clone(), index.clone(), queues.plans, stop.clone());
    let csvs = csv::run(shared, index, queues.csv, stop);
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

/// A stream that never yields: the controllers are driven by [`Wake`] alone.
fn nothing<K: Send>() -> impl Stream<Item = Result<K, watcher::Error>> + Send {
    futures::stream::pending()
}
