//! OLM v1's installer on a cluster, and `olm run`, the process that runs both OLMs:
//!
//! * OLM v1's installer: the ClusterExtension and ClusterObjectSet controllers
//!   ([`extension`], [`objectset`]) and the catalog client they read from ([`catalog`]);
//!   bundles, certificates and RBAC reads come from `olm-cluster`, shared with OLM v0;
//! * the process: `olm run`'s wiring ([`run`]), which starts the ClusterCatalog controller
//!   (`olm-catalogd`), this installer and OLM v0's controllers (`olm-v0-controller`), with
//!   `/metrics` ([`metrics_auth`]), profiling and serving TLS; leader election and readiness are
//!   `olm-runtime`'s.
//!
//! What it is for: gathering inputs (objects from watches, catalog content, bundle images),
//! handing them to the pure decisions of `olm-extension` (OLM v1) and `olm-v0` (OLM v0), and
//! carrying out what those return.
//!
//! What it is not for: deciding anything itself — status texts, revisions, phases, probes and
//! collisions are `olm-extension`'s and `olm-v0`'s; resolution is `olm-resolve`'s and
//! `olm-v0`'s resolver's; rendering `olm-bundle`'s.

pub mod catalog;
pub mod extension;
mod hold;
pub use olm_runtime::metrics;
pub mod metrics_auth;
pub mod objectset;
pub mod profiling;
pub mod run;
pub mod serving_tls;
