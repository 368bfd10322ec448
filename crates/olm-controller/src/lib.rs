//! The controller shells of `olm run`, both OLMs, and the process around them:
//!
//! * OLM v1's installer: the ClusterExtension and ClusterObjectSet controllers
//!   ([`extension`], [`objectset`]), the catalog client and bundle source they read from
//!   ([`catalog`], [`bundles`]), the built-in certificate provider ([`certs`]);
//! * OLM v0's olm-operator, catalog-operator and packageserver ([`v0`]): OperatorGroups, CSVs
//!   and their copies, CatalogSources, Subscriptions, InstallPlans, Operators, PackageManifests;
//! * the process: `olm run`'s wiring ([`run`]), leader election, `/metrics`, profiling, serving
//!   TLS.
//!
//! What it is for: gathering inputs (objects from watches, catalog content, bundle images),
//! handing them to the pure decisions of `olm-extension` (OLM v1) and `olm-v0` (OLM v0), and
//! carrying out what those return.
//!
//! What it is not for: deciding anything itself — status texts, revisions, phases, probes and
//! collisions are `olm-extension`'s and `olm-v0`'s; resolution is `olm-resolve`'s and
//! `olm-v0`'s resolver's; rendering `olm-bundle`'s.

pub mod api_error;
pub mod bundles;
pub mod catalog;
pub mod certs;
pub mod context;
pub mod extension;
pub mod health;
mod hold;
pub mod leader;
pub use olm_runtime::metrics;
pub mod metrics_auth;
pub mod objectset;
pub mod permissions;
pub mod profiling;
pub mod run;
pub mod serving_tls;
pub mod v0;
pub mod written;
