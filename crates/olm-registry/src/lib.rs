//! OLM v0's registry API over a file-based catalog: what `opm serve` answers to OLM v0's
//! catalog-operator and packageserver over gRPC (`api.Registry`), built from a validated
//! catalog, kept in a cache file so that a restart serves at once.
//!
//! [`Registry::build`] converts the catalog once (operator-registry's model-to-API conversion,
//! [`convert`]); [`queries`] answers each RPC from it; [`server`] wires the gRPC services;
//! [`cache`] stores and loads what was built.

pub mod cache;
pub mod convert;
mod gostruct;
pub mod metas;
pub mod queries;
pub mod registry;
pub mod server;

pub use registry::Registry;

/// The registry API's messages and services (package `api`), generated from
/// `proto/registry.proto`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod api {
    tonic::include_proto!("api");

    /// The encoded descriptors of `registry.proto`, for server reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("registry_descriptor");
}
