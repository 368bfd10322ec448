//! One reconcile harness for every controller of olm, so that all of them count, time, log and
//! retry alike: each reconcile is counted and timed in the controller's metrics
//! ([`Harness::reconcile`]), a success ends the object's run of failures, and a failure goes
//! through one error policy ([`Harness::retry`]): the run of failures of the object grows by
//! one, the failure is logged with the controller, what the pass was doing, the object's name
//! and namespace and the delay, and the object is tried again after its backoff's delay for
//! that run (`olm_k8s::retry`).
//!
//! A controller whose retries must respect something of the object's own (a ClusterObjectSet's
//! progress deadline) adjusts the delay ([`Harness::retry_adjusted`]); the policy is otherwise
//! the same.

use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use kube::runtime::controller::Action;
use olm_k8s::retry::{Backoff, Failures};
use tracing::warn;

use crate::metrics::{Metrics, Outcome};

/// Why a reconcile did not finish: the one error type of every controller's reconcile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused or could not be reached; shown in its own words
    /// ([`crate::api_error::message`]), as statuses quote it.
    #[error("{}", crate::api_error::message(.0))]
    Kube(#[from] kube::Error),
    /// Anything else that must be tried again, with why (often already reported in status).
    #[error("{0}")]
    Retry(String),
}

/// Turning an object into JSON or back fails only on a malformed copy, which the pass can
/// neither fix nor report on a status: it is tried again like any other failure, in serde's
/// words.
impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Retry(e.to_string())
    }
}

/// The key an object's reconciles and failures go by: `namespace/name`, or its name when it
/// is cluster-scoped.
pub fn key_of<K: ResourceExt>(object: &K) -> String {
    match object.namespace() {
        Some(namespace) => format!("{namespace}/{}", object.name_any()),
        None => object.name_any(),
    }
}

/// A controller's reconcile harness: its name, metrics, runs of failures and backoff.
#[derive(Debug)]
pub struct Harness {
    controller: &'static str,
    metrics: Option<Arc<Metrics>>,
    failures: Failures,
    backoff: Backoff,
}

impl Harness {
    /// The harness of `controller` (the name its metrics and logs go by), timing reconciles in
    /// `metrics` when there are any, retrying failures after `backoff`.
    pub fn new(controller: &'static str, metrics: Option<Arc<Metrics>>, backoff: Backoff) -> Self {
        Harness {
            controller,
            metrics,
            failures: Failures::default(),
            backoff,
        }
    }

    /// The controller's name.
    pub fn controller(&self) -> &'static str {
        self.controller
    }

    /// Runs one reconcile of the object `key`: counted and timed as `outcome` says of its
    /// result ([`Outcome::Error`] when it failed); a success ends the object's run of failures.
    pub async fn reconcile<T, E>(
        &self,
        key: &str,
        work: impl Future<Output = Result<T, E>>,
        outcome: impl FnOnce(&T) -> Outcome,
    ) -> Result<T, E> {
        let timing = self.metrics.as_ref().map(|m| m.begin(self.controller, key));
        let result = work.await;
        let ended = match &result {
            Ok(value) => {
                self.failures.succeed(key);
                outcome(value)
            }
            Err(_) => Outcome::Error,
        };
        if let Some(timing) = timing {
            timing.finish(ended);
        }
        result
    }

    /// The error policy: one more failure of `key`, logged with what the pass was `doing` and
    /// the object (`name`, `namespace`; a work queue's key stands as the name); returns the
    /// delay before the next try.
    pub fn retry(
        &self,
        key: &str,
        doing: &str,
        name: &str,
        namespace: Option<&str>,
        err: &dyn Display,
    ) -> Duration {
        self.retry_adjusted(key, doing, name, namespace, err, |delay| delay)
    }

    /// [`Harness::retry`] with the backoff's delay `adjust`ed by the controller before it is
    /// logged and returned.
    pub fn retry_adjusted(
        &self,
        key: &str,
        doing: &str,
        name: &str,
        namespace: Option<&str>,
        err: &dyn Display,
        adjust: impl FnOnce(Duration) -> Duration,
    ) -> Duration {
        let delay = adjust(self.backoff.delay(self.failures.fail(key)));
        warn!(
            controller = self.controller,
            doing,
            name,
            namespace,
            error = %err,
            retry_in = ?delay,
            "reconcile failed; retrying"
        );
        delay
    }

    /// [`Harness::retry`] for a kube-runtime controller's object, keyed by [`key_of`]: looked at
    /// again after the delay.
    pub fn retry_object<K: ResourceExt>(
        &self,
        doing: &str,
        object: &K,
        err: &dyn Display,
    ) -> Action {
        let namespace = object.namespace();
        Action::requeue(self.retry(
            &key_of(object),
            doing,
            &object.name_any(),
            namespace.as_deref(),
            err,
        ))
    }

    /// Ends `key`'s run of failures outside a reconcile (an object found healthy by other
    /// means).
    pub fn succeed(&self, key: &str) {
        self.failures.succeed(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn harness() -> Harness {
        Harness::new(
            "test",
            Some(Arc::new(Metrics::default())),
            Backoff {
                base: Duration::from_secs(1),
                cap: Duration::from_secs(4),
            },
        )
    }

    #[test]
    fn failures_back_off_until_a_success() {
        let h = harness();
        let err = "boom";
        let delays: Vec<Duration> = (0..4)
            .map(|_| h.retry("ns/a", "testing", "a", Some("ns"), &err))
            .collect();
        assert_eq!(
            delays,
            [1, 2, 4, 4].map(Duration::from_secs),
            "doubling up to the cap"
        );
        assert_eq!(
            h.retry("ns/b", "testing", "b", None, &err),
            Duration::from_secs(1),
            "each object has its own run"
        );
        h.succeed("ns/a");
        assert_eq!(
            h.retry("ns/a", "testing", "a", None, &err),
            Duration::from_secs(1)
        );
        assert_eq!(
            h.retry_adjusted("ns/c", "testing", "c", None, &err, |d| d * 10),
            Duration::from_secs(10)
        );
    }

    /// Objects are keyed as `namespace/name`, cluster-scoped ones by name, and the error policy
    /// for an object counts under that key.
    #[test]
    fn objects_are_keyed_by_namespace_and_name() {
        use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some("c".to_owned());
        cm.metadata.namespace = Some("ns".to_owned());
        let mut ns = Namespace::default();
        ns.metadata.name = Some("ns".to_owned());
        assert_eq!(key_of(&cm), "ns/c");
        assert_eq!(key_of(&ns), "ns");
        let h = harness();
        let err = "boom";
        h.retry_object("testing", &cm, &err);
        assert_eq!(
            h.retry("ns/c", "testing", "c", Some("ns"), &err),
            Duration::from_secs(2),
            "the second failure of the same key"
        );
    }

    #[tokio::test]
    async fn a_successful_reconcile_ends_the_run_and_is_counted() {
        let h = harness();
        let err = "boom";
        h.retry("a", "testing", "a", None, &err);
        h.retry("a", "testing", "a", None, &err);
        let failed: Result<(), &str> = h
            .reconcile("a", async { Err("no") }, |()| Outcome::Success)
            .await;
        assert!(failed.is_err());
        assert_eq!(
            h.retry("a", "testing", "a", None, &err),
            Duration::from_secs(4),
            "a failed reconcile does not end the run"
        );
        let done: Result<u8, &str> = h
            .reconcile("a", async { Ok(7) }, |_| Outcome::Success)
            .await;
        assert_eq!(done, Ok(7));
        assert_eq!(
            h.retry("a", "testing", "a", None, &err),
            Duration::from_secs(1)
        );
        let text = h.metrics.as_ref().map(|m| m.render()).unwrap_or_default();
        assert!(
            text.contains(
                r#"controller_runtime_reconcile_total{controller="test",result="success"} 1"#
            ),
            "{text}"
        );
        assert!(
            text.contains(
                r#"controller_runtime_reconcile_total{controller="test",result="error"} 1"#
            ),
            "{text}"
        );
    }
}
