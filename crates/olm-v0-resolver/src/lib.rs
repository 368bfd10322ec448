//! OLM v0's dependency resolver (catalog-operator's `pkg/controller/registry/resolver`): from a
//! namespace's Subscriptions, its installed CSVs and the catalogs' bundles, which bundles to
//! install, or why none can be.
//!
//! What it is for: the decision alone, over plain data ([`Entry`] per bundle or installed CSV,
//! built from catalog content by [`entry`]), with upstream's test vectors as tables; a SAT
//! solver ([`solver`]) over the constraints upstream's resolver generates, `olm.constraint`
//! properties (CEL included) compiled by [`constraint`].
//!
//! What it is not for: fetching catalogs or writing InstallPlans (catalog-operator's shell in
//! `olm-controller`), or turning what it resolved into steps (`olm_v0::catalog_operator::steps`).

pub mod constraint;
pub mod entry;
pub mod order;
pub mod predicate;
pub mod resolve;
pub mod solver;

pub use entry::{Entry, Property, RegistryBundle, SourceKey};
pub use resolve::{Catalog, Prevented, ResolveError, Resolved, Subscription, resolve};
