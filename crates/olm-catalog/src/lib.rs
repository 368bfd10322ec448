//! File-based catalogs (FBC): load, model, write, validate and migrate operator catalogs the way
//! operator-registry's `opm` does, byte-exact where tools depend on it and deterministic where upstream
//! is not.
//!
//! Not for: pulling images, serving catalogs, resolving installs, rendering templates (`olm-template`)
//! or drawing upgrade graphs (`olm-graph`); those live in other crates and build on [`Catalog`] and
//! [`index::Index`].
//!
//! The pipeline: [`load`] (directory, file, reader, catalogd JSONL) → [`model::Catalog`] →
//! [`validate::build_index`] (upstream's fail-fast checks, then the aggregated `invalid index:` tree) →
//! [`index::Index`]; [`write`] renders a catalog as opm JSON/YAML or catalogd's canonical JSONL.

pub mod canonical;
pub mod card;
mod gotype;
pub mod index;
pub mod load;
pub mod migrate;
pub mod model;
pub mod order;
pub mod property;
pub mod stream;
pub mod validate;
pub mod write;
pub mod yaml;

pub use load::{LoadError, LoadOptions, load_bytes, load_file, load_jsonl, load_path, load_reader};
pub use model::{
    Blob, Bundle, BundleName, Catalog, Channel, ChannelEntry, ChannelName, Deprecation, Meta,
    Package, PackageName,
};
pub use property::{Property, TypedProperty};
pub use validate::{ValidationError, build_index, validate};
