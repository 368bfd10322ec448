//! Why a pass of an OLM v0 controller did not finish, and the one policy the kube-runtime ones
//! follow: logged with the object's name, then retried after [`Backoff::DEFAULT`]'s delay for
//! that object's run of failures.

use kube::runtime::controller::Action;
use olm_k8s::retry::{Backoff, Failures};
use tracing::warn;

/// Why a pass did not finish.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The API server refused or could not be reached; shown in its own words
    /// ([`crate::api_error::message`]), as statuses quote it.
    #[error("{}", crate::api_error::message(.0))]
    Kube(#[from] kube::Error),
    /// Anything else that must be tried again, with why.
    #[error("{0}")]
    Retry(String),
}

/// The error policy of OLM v0's kube-runtime controllers: `err` is logged naming `object` and
/// what the pass was doing (`doing`), and the object is looked at again after the backoff's
/// delay for its run of failures (`key` in `failures`).
pub(crate) fn retry_later<K: kube::ResourceExt>(
    object: &K,
    doing: &'static str,
    key: &str,
    err: &Error,
    failures: &Failures,
) -> Action {
    let delay = Backoff::DEFAULT.delay(failures.fail(key));
    warn!(name = %object.name_any(), namespace = ?object.namespace(), doing, error = %err, retry_in = ?delay, "reconcile failed; retrying");
    Action::requeue(delay)
}
