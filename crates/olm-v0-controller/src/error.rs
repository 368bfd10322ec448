//! Why a pass of an OLM v0 controller did not finish, and the one policy every one of them
//! follows, whether kube-runtime runs it ([`retry_later`]) or the work queue
//! ([`crate::queue::run`]) or the Operator worker: the failure is logged naming what the pass
//! was doing and what it was about, then tried again after [`Backoff::DEFAULT`]'s delay for that
//! object's (or key's) run of failures ([`retry_delay`]).

use std::time::Duration;

use kube::runtime::controller::Action;
use olm_k8s::retry::{Backoff, Failures};
use tracing::warn;

/// Why a pass did not finish.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The API server refused or could not be reached; shown in its own words
    /// ([`olm_runtime::api_error::message`]), as statuses quote it.
    #[error("{}", olm_runtime::api_error::message(.0))]
    Kube(#[from] kube::Error),
    /// Anything else that must be tried again, with why.
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

/// The error policy of OLM v0's controllers: `err` is logged with what the pass was doing
/// (`doing`: the step, or the controller for a work queue), the object's `name` and `namespace`
/// (a work queue's key stands as the name), and the delay returned: the backoff's for the run
/// of failures of `key` in `failures`. One function, so that every controller's failures read
/// and pace alike.
pub(crate) fn retry_delay(
    doing: &str,
    name: &str,
    namespace: Option<&str>,
    key: &str,
    err: &Error,
    failures: &Failures,
) -> Duration {
    let delay = Backoff::DEFAULT.delay(failures.fail(key));
    warn!(doing, name, namespace, error = %err, retry_in = ?delay, "reconcile failed; retrying");
    delay
}

/// [`retry_delay`] for kube-runtime's controllers: the object is looked at again after the
/// delay.
pub(crate) fn retry_later<K: kube::ResourceExt>(
    object: &K,
    doing: &'static str,
    key: &str,
    err: &Error,
    failures: &Failures,
) -> Action {
    let namespace = object.namespace();
    Action::requeue(retry_delay(
        doing,
        &object.name_any(),
        namespace.as_deref(),
        key,
        err,
        failures,
    ))
}
