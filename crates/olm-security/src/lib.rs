//! The rules both OLMs share for what may run on a cluster and how it is trusted, without I/O:
//!
//! * [`certs`]: serving certificates for the webhooks and APIServices an operator serves —
//!   when one is issued, kept or renewed, what its Secret holds, and what the objects that trust
//!   it are patched to (OLM v1's built-in provider and OLM v0's CSV install use the same rules);
//! * [`permissions`]: whether a ServiceAccount's RBAC covers every object it is asked to
//!   manage, and the one message that lists what it lacks (OLM v1's pre-authorizer and OLM v0's
//!   requirement checks).
//!
//! What it is not for: making keys or reading RBAC from the cluster (the shells in
//! `olm-controller` do that and hand the results in).

pub mod certs;
pub mod permissions;
