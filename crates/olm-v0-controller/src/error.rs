//! Why a pass of an OLM v0 controller did not finish. Every controller, whether kube-runtime
//! runs it, the work queue ([`crate::queue::run`]) or the Operator worker, handles it with the
//! error policy of `olm_runtime::harness`.

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
