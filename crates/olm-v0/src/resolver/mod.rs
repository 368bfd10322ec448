//! OLM v0's dependency resolver (catalog-operator's `pkg/controller/registry/resolver`): from a
//! namespace's Subscriptions, its installed CSVs and the catalogs' bundles, which bundles to
//! install, or why none can be.

pub mod constraint;
pub mod entry;
pub mod order;
pub mod predicate;
pub mod resolve;
pub mod solver;

pub use entry::{Entry, Property, RegistryBundle, SourceKey};
pub use resolve::{Catalog, ResolveError, Resolved, Subscription, resolve};
