//! OLM v1's installer on a cluster: the ClusterExtension and ClusterObjectSet controllers, the
//! catalog client and bundle source they read from, the built-in certificate provider, and the
//! wiring of `olm run`.
//!
//! What it is for: gathering inputs (objects from watches, catalog content, bundle images),
//! handing them to the pure decisions of `olm-extension`, and carrying out what those return.
//!
//! What it is not for: deciding anything itself — status texts, revisions, phases, probes and
//! collisions are `olm-extension`'s; resolution is `olm-resolve`'s; rendering `olm-bundle`'s.

pub mod api_error;
pub mod bundles;
pub mod catalog;
pub mod certs;
pub mod context;
pub mod extension;
pub mod health;
mod hold;
pub mod leader;
pub mod metrics;
pub mod metrics_auth;
pub mod objectset;
pub mod permissions;
pub mod profiling;
pub mod run;
pub mod serving_tls;
pub mod v0;
pub mod written;
