//! OLM v0's dependency resolver (catalog-operator's `pkg/controller/registry/resolver`): from a
//! namespace's Subscriptions, its installed CSVs and the catalogs' bundles, which bundles to
//! install, or why none can be.

pub mod solver;
