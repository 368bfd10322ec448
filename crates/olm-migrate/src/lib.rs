//! Moving operators from OLM v0 to OLM v1, decided without I/O.
//!
//! What it is for: the decisions of `olm migrate`, as pure functions over the objects the
//! command reads — which checks a Subscription passes and with what words ([`checks`]), the
//! state it is in ([`scan`]), which ClusterCatalog each CatalogSource becomes ([`catalogs`]).
//! The check names, messages, states and annotation keys are upstream's
//! (operator-framework/library-olm `migration/`), word for word: its tooling and its users read
//! them, and a cluster half-moved by one tool must read the same to the other.
//!
//! What it is not for: talking to a cluster. `olm migrate` (the `olm` binary) gathers the
//! objects, calls these functions and performs what they return.

pub mod catalogs;
pub mod checks;
pub mod handover;
pub mod mapping;
pub mod scan;

/// Annotation on a ClusterExtension naming the Subscription (`<namespace>/<name>`) it was
/// migrated from.
pub const MIGRATED_FROM_SUBSCRIPTION: &str = "olm.operatorframework.io/migrated-from-subscription";

/// Annotation on a ClusterCatalog naming the CatalogSource (`<namespace>/<name>`) it was
/// migrated from.
pub const MIGRATED_FROM_CATALOG_SOURCE: &str =
    "olm.operatorframework.io/migrated-from-catalogsource";
