//! The decisions of OLM v1's installer, without I/O: what a ClusterExtension's status says, how
//! a rendered bundle becomes a `ClusterObjectSet` revision, and how a revision rolls out.
//!
//! What it is for: every choice the ClusterExtension and ClusterObjectSet controllers make, as
//! plain functions of what they observed and the time they are handed, table-tested with
//! upstream's vectors.
//!
//! What it is not for: talking to the API server, registries or catalog servers (the
//! `olm-controller` shell does that), resolving bundles (`olm-resolve`) or rendering them
//! (`olm-bundle`).

pub mod message;
pub mod objectset;
pub mod pack;
pub mod phase;
pub mod probe;
pub mod request;
pub mod revision;
pub mod status;
