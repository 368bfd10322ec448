//! What every controller shell in olm runs on, so that the ClusterCatalog controller, OLM v1's
//! installer and OLM v0's controllers behave alike when the cluster misbehaves:
//!
//! * [`watch`]: a watch that lost the API server reconnects within two seconds, and one told its
//!   resource version expired (`410 Gone`, as after an API server restart) lists again at once;
//!   an outage is logged once for the whole process, not per watch and retry.
//! * [`reconnect`]: when a watch lost the API server, the server is asked every 250 ms whether
//!   it is back, and once it is every controller looks at all its objects again: work that
//!   failed during the outage does not wait out its backoff, and a watch that resumed without a
//!   new event would never have told anyone.
//! * [`report`]: one reading of a kube-runtime controller's results: a reconcile that failed was
//!   already logged by its error policy, an event for a deleted object is not an error, and a
//!   watch failure is logged as the watch recovery says.
//! * [`status`]: a status is written with every message bounded as the API server accepts it,
//!   and one the API server refuses anyway is written again with its long messages shortened to
//!   say so, instead of the refusal reaching only the log.
//! * [`metrics`]: every controller's reconciles counted and timed in controller-runtime's
//!   metric names, whichever process (and crate) runs it.
//! * [`harness`]: one reconcile harness and error policy for every controller: counted, timed,
//!   logged and retried alike.
//! * [`warnings`]: the API server's `Warning` headers (a deprecated API version, a webhook's
//!   advice), which kube-rs drops, kept for a controller to report as upstream's do.
//! * [`written`]: what a controller last wrote to each status, so a reconcile on a cache that
//!   has not caught up with its own write does not write it again.
//! * [`api_error`]: the API server's own message for a failed request, as Go's client prints it.
//! * [`leader`]: leader election on a Lease, as controller-runtime's (the decision apart, in
//!   [`leader::decide`]).
//! * [`health`]: `/healthz` and `/readyz`, with each part reporting why it cannot serve.
//! * [`serve`]: the HTTP(S) server every listener runs on (the catalog API, PackageManifests,
//!   metrics, profiling, probes), bounded against slow and hostile clients, so that OLM v0's
//!   API server and OLM v1's catalog server share one.
//!
//! What it is not for: decisions (those are pure, in the crates named for each controller) or
//! anything OLM-specific; the policy numbers live in `olm_k8s::retry`.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod api_error;
pub mod harness;
pub mod health;
pub mod leader;
pub mod metrics;
pub mod reconnect;
pub mod report;
pub mod serve;
pub mod status;
pub mod warnings;
pub mod watch;
pub mod written;
