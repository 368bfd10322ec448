//! One reading of what a `kube::runtime::Controller` yields, for every controller in olm.
//!
//! A controller's result stream carries four things, and only two of them are news:
//!
//! * a reconcile that succeeded: a debug line;
//! * a reconcile that failed: nothing here, the controller's error policy already logged it
//!   with the object's name and the retry delay;
//! * a queued reconcile whose object was deleted meanwhile: a debug line — deleting an object
//!   is what users do, not an error (kube-runtime reports it as one);
//! * a watch failure: as [`crate::watch`] logs them — an outage is reported once by
//!   [`crate::reconnect`], an expired resource version is expected, and any other problem is a
//!   warning once until the API server next comes back.

use std::sync::Mutex;

use kube::runtime::controller::{Action, Error};
use kube::runtime::reflector::{Lookup, ObjectRef};
use kube::runtime::watcher;
use tracing::{debug, warn};

use crate::watch::{Kind, Loudness, kind, loudness};

/// Reads the results of the controller named `controller`.
#[derive(Debug)]
struct Report {
    controller: &'static str,
    /// The count of API server returns when a watch failure was last a warning.
    warned: Mutex<Option<u64>>,
}

impl Report {
    /// A report for the controller named `controller` in logs.
    fn new(controller: &'static str) -> Report {
        Report {
            controller,
            warned: Mutex::new(None),
        }
    }

    /// Logs `result` as the module says.
    fn result<K, E>(&self, result: Result<(ObjectRef<K>, Action), Error<E, watcher::Error>>)
    where
        K: Lookup,
        E: std::error::Error + 'static,
    {
        let controller = self.controller;
        match result {
            Ok((o, _)) => {
                debug!(controller, name = %o.name, namespace = ?o.namespace, "reconciled")
            }
            Err(Error::ReconcilerFailed(..)) => {}
            Err(Error::ObjectNotFound(o)) => {
                debug!(controller, object = %o, "deleted before its reconcile; nothing to do")
            }
            Err(Error::QueueError(e)) => {
                let kind = kind(&e);
                if kind == Kind::Unreachable {
                    crate::reconnect::lost();
                }
                let returns = crate::reconnect::returns();
                let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
                match loudness(kind, *warned, returns) {
                    Loudness::Warn => {
                        *warned = Some(returns);
                        warn!(controller, error = %e, "watch failed; retrying")
                    }
                    Loudness::Debug => debug!(controller, error = %e, "watch failed; retrying"),
                }
            }
            Err(e) => warn!(controller, error = %e, "controller failed"),
        }
    }
}

/// Runs `controller` until `shutdown` resolves, as every controller in olm runs: no watch
/// backoff of its own (its watches are [`crate::watch::Recovering`] streams), every object
/// looked at again when the API server is back after an outage, and its results read by a
/// `Report` named `name`.
pub async fn run<K, ReconcilerFut, Ctx>(
    name: &'static str,
    controller: kube::runtime::Controller<K>,
    reconciler: impl FnMut(std::sync::Arc<K>, std::sync::Arc<Ctx>) -> ReconcilerFut,
    error_policy: impl Fn(std::sync::Arc<K>, &ReconcilerFut::Error, std::sync::Arc<Ctx>) -> Action,
    context: std::sync::Arc<Ctx>,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) where
    K: Clone
        + kube::Resource
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone + std::fmt::Debug + Unpin,
    ReconcilerFut: futures::TryFuture<Ok = Action> + Send + 'static,
    ReconcilerFut::Error: std::error::Error + Send + 'static,
{
    use futures::StreamExt as _;
    let report = Report::new(name);
    controller
        .trigger_backoff(crate::watch::paced())
        .reconcile_all_on(crate::reconnect::reconnections())
        .graceful_shutdown_on(shutdown)
        .run(reconciler, error_policy, context)
        .for_each(|result| {
            report.result(result);
            std::future::ready(())
        })
        .await;
}
