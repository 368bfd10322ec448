//! What OLM v1's installer and OLM v0's controllers share on a cluster, as shells around the
//! pure rules of `olm-security` and `olm-bundle`:
//!
//! * [`context`]: what every controller of one `olm run` process is handed — the API server
//!   connection, the system namespace, caches, metrics, the registry client, the certificate
//!   provider;
//! * [`bundles`]: registry+v1 bundles pulled from their images into a disk cache shared by both
//!   OLMs, with the cluster's pull secrets;
//! * [`certs`]: webhook serving certificates issued, and the controller that keeps the Secrets
//!   of OLM v1's built-in provider current;
//! * [`permissions`]: the RBAC a ServiceAccount holds read from the cluster, the preflight that
//!   checks it against what a bundle needs, and clients that act as that account.
//!
//! What it is not for: deciding — when a certificate is renewed, what a rule covers and what a
//! bundle holds are `olm-security`'s and `olm-bundle`'s.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod bundles;
pub mod certs;
pub mod context;
pub mod permissions;
