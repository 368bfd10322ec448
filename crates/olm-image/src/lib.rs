//! OCI images for OLM: build, push, pull and safely unpack catalog and bundle images.
//!
//! What it is for: turning a file-based catalog directory or a registry+v1 bundle directory into
//! a reproducible image ([`assemble`]), pushing it, resolving tags to digests, pulling images and
//! unpacking their layers into a directory or a digest-keyed [`ImageCache`] without letting a
//! hostile layer write outside it ([`unpack`]) or hold more than the [`limits`] allow.
//!
//! What it is not for: understanding catalogs or bundles. It moves bytes; parsing FBC and bundle
//! manifests is `olm-catalog`'s and `olm-bundle`'s job. It does not run containers either.
//!
//! The building and unpacking halves are pure (directories and byte streams in, bytes and files
//! out); [`Client`] is the thin async shell that talks to registries through `oci-client`.
//! Registries on loopback addresses are spoken to over plain HTTP, all others over HTTPS unless
//! [`ClientOptions::protocol`] says otherwise. TLS uses rustls with the ring provider only, the same
//! provider the Kubernetes client uses, so one process never has two providers compiled in.

pub mod archive;
pub mod assemble;
pub mod auth;
pub mod cache;
mod client;
mod digest;
mod error;
pub mod limits;
pub mod mirrors;
mod reference;
pub mod runtime;
pub mod unpack;

pub use archive::oci_archive;
pub use assemble::{
    BuildError, CATALOG_CONFIGS_DIR, CATALOG_CONFIGS_LABEL, Image, Layer, RunConfig, bundle_image,
    catalog_image, layer_from_stream,
};
pub use auth::{AuthConfig, AuthError, Credential};
pub use cache::{CacheEntry, CacheMeta, ImageCache};
pub use client::{
    ACCEPTED_LAYER_MEDIA_TYPES, Client, ClientOptions, DEFAULT_SILENCE, ImageRef, Protocol, Pulled,
    install_crypto_provider,
};
pub use digest::{Digest, InvalidDigest};
pub use error::ImageError;
pub use limits::{Exceeded, Expect, Kind, Limits, RaisedBy, SizeError, Sizes};
pub use mirrors::{MirrorError, Registries};
pub use unpack::{Filter, HardLinkTarget, UnpackError, UnpackStats};
