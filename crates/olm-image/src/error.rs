//! The one error type of the registry shell.

use std::path::PathBuf;

use crate::assemble::BuildError;
use crate::auth::AuthError;
use crate::limits::Exceeded;
use crate::unpack::UnpackError;

/// Why an image operation failed. Every variant names the image reference (or path) involved.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// The reference does not parse.
    #[error("invalid image reference {}: {message}", olm_goenc::quote(reference))]
    InvalidReference {
        /// What was given.
        reference: String,
        /// Why it is invalid.
        message: String,
    },
    /// The registry refused part of a push; `what` says which blob or the manifest.
    #[error("registry refused the {what} of {reference}: {message}")]
    PushRefused {
        /// The push target.
        reference: String,
        /// `layer sha256:…`, `config blob sha256:…`, `manifest sha256:…` or `authentication for push`.
        what: String,
        /// The registry's answer.
        message: String,
    },
    /// A registry request other than a push failed.
    #[error("{action} {reference}: {message}")]
    Registry {
        /// The image.
        reference: String,
        /// What we were doing, e.g. `resolving`.
        action: String,
        /// The registry's answer or the transport error.
        message: String,
    },
    /// A layer media type we cannot unpack (not a file-system layer, e.g. a Helm chart).
    #[error(
        "{reference} has a layer of media type {}, which cannot be unpacked",
        olm_goenc::quote(media_type)
    )]
    UnsupportedLayer {
        /// The image.
        reference: String,
        /// The media type.
        media_type: String,
    },
    /// The image config is not JSON.
    #[error("the config of {reference} is not valid JSON: {message}")]
    BadConfig {
        /// The image.
        reference: String,
        /// The parse error.
        message: String,
    },
    /// A catalog was asked for, but the image does not say where its catalog is.
    #[error("{reference} is not a catalog image: {}", match label {
        None => "the image config has no operators.operatorframework.io.index.configs.v1 label".to_string(),
        Some(v) => format!("its operators.operatorframework.io.index.configs.v1 label {} is not a directory inside the image", olm_goenc::quote(v)),
    })]
    NotACatalog {
        /// The image.
        reference: String,
        /// The label value, when present.
        label: Option<String>,
    },
    /// The image holds more than the client's limits allow for its kind. Refused while
    /// streaming, with nothing left on disk; the client does not download the same digest
    /// again for the same limits.
    #[error("{reference} is {exceeded}")]
    TooLarge {
        /// The image, pinned by digest.
        reference: String,
        /// What went over, and how to raise the limit.
        exceeded: Exceeded,
    },
    /// The reference pins a digest other than the one the content has.
    #[error("{reference} pins {expected}, but the image is {actual}")]
    DigestMismatch {
        /// The reference.
        reference: String,
        /// The pinned digest.
        expected: String,
        /// The actual digest.
        actual: String,
    },
    /// `olm image pull` never overwrites existing files.
    #[error("destination {0} exists and is not empty")]
    DestinationNotEmpty(PathBuf),
    /// Credentials could not be loaded.
    #[error(transparent)]
    Auth(#[from] AuthError),
    /// The image could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// A layer could not be unpacked.
    #[error(transparent)]
    Unpack(#[from] UnpackError),
    /// Local file-system trouble.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}
