//! OLM v1 resolution: given the catalogs on a cluster and a ClusterExtension's request, which
//! bundle to install or upgrade to — deterministic, fast, and explained.
//!
//! Build a [`ContentIndex`] once per catalog content, then call [`resolve`] per request.
//!
//! Not for: fetching catalogs, talking to the API server, or the OLM v0 dependency resolver.

mod error;
mod index;
mod resolve;

pub use error::ResolveError;
pub use index::{
    BundleInfo, ChannelInfo, ContentIndex, DEPENDENCY_PROPERTIES, Deprecations, EntryInfo,
    PackageIndex,
};
pub use olm_k8s::METADATA_NAME_LABEL;
pub use olm_k8s::{LabelSelector, Operator, Requirement, SelectorError};
pub use resolve::{
    Availability, CatalogInput, Content, Failure, Installed, Request, Resolution, Skipped,
    UpgradeConstraintPolicy, VersionRange, resolve,
};
