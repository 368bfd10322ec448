//! A real local Kubernetes control plane and OCI registry for tests and `olm dev`.
//!
//! [`ControlPlane`] starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
//! (which plays the kubelet for one fake node) as plain loopback processes, so integration tests run
//! against the real API machinery: server-side validation, garbage collection, namespace
//! finalization, Deployments that become Available. The binaries are built once from Go modules by
//! `tools/controlplane/build.sh`; nothing is downloaded at test time.
//!
//! Not for: production clusters, anything reachable from outside the machine, or a fake API server
//! (tests that need a cluster use this, never a hand-written imitation).

mod binaries;
pub mod browser;
mod controlplane;
mod crd;
mod fsutil;
mod logtail;
pub mod node;
mod pki;
mod process;
pub mod registry;
pub mod slow_clients;
mod sys;

use std::path::PathBuf;

pub use binaries::{BIN_ENV, BUILD_SCRIPT, CONTROLPLANE_VERSION, bin_dir, cache_dir};
pub use controlplane::{ComponentMemory, ControlPlane, NODE_NAME, Options};
pub use crd::{CRD_FIELD_MANAGER, install_crds};
pub use logtail::LogTail;
pub use node::{NodeKind, REAL_NODE_NAME};

/// Everything that can go wrong starting or running a control plane.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The binaries were never built (or built for another version).
    #[error(
        "control plane binaries missing in {dir}: {missing}; build them with `bash {BUILD_SCRIPT}` \
         (needs Go >= 1.26), or set {BIN_ENV} to a folder that has them"
    )]
    BinariesMissing {
        /// The folder that was searched.
        dir: PathBuf,
        /// The binaries not found there, comma-separated.
        missing: String,
    },
    /// No HOME to derive the cache folder from.
    #[error(
        "HOME is not set, so the cache folder ~/.cache/olm is unknown; set HOME, OLM_CACHE_DIR or {BIN_ENV}"
    )]
    NoHome,
    /// A file or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, naming the file or process.
        what: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Certificate or key generation failed.
    #[error("generating the control plane's certificates: {0}")]
    Pki(#[from] rcgen::Error),
    /// A component stopped although nothing asked it to.
    #[error("{component} exited early ({status}); last lines of {log}:\n{tail}", log = log.display())]
    ExitedEarly {
        /// The component's name (`etcd`, `kube-apiserver`, …).
        component: String,
        /// How it exited, as the operating system reports it.
        status: String,
        /// Its log file, kept so that the whole log can be read.
        log: PathBuf,
        /// The last lines of that log, the usual place of the reason.
        tail: String,
    },
    /// A component could not bind its port because another process took it first (three times).
    #[error(
        "{component} could not bind its loopback port: address already in use; last lines of its log:\n{tail}"
    )]
    PortInUse {
        /// The component's name.
        component: String,
        /// The last lines of its log of the last attempt.
        tail: String,
    },
    /// Readiness was not reached in time.
    #[error("timed out waiting for {what}; component logs:\n{tails}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// The last lines of every component's log, to tell which one was stuck.
        tails: String,
    },
    /// The generated kubeconfig could not be loaded.
    #[error("loading the admin kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// A request to the API server failed.
    #[error("talking to the API server: {0}")]
    Kube(#[from] kube::Error),
    /// A request about one CRD failed.
    #[error("{verb} the {name} CRD: {source}")]
    Crd {
        /// What was being done to it (`applying`, `reading`).
        verb: &'static str,
        /// The CRD's name.
        name: String,
        /// The API server's error.
        #[source]
        source: kube::Error,
    },
    /// A CRD was applied but the API server did not establish it in time.
    #[error("the {name} CRD was not Established after {timeout:?}; its conditions: {conditions}")]
    CrdNotEstablished {
        /// The CRD's name.
        name: String,
        /// How long the wait was.
        timeout: std::time::Duration,
        /// Its status conditions when the wait ended, to show why it was not served.
        conditions: String,
    },
    /// Another real node runs on this machine: they would fight over iptables, the bridge and
    /// cgroups.
    #[error(
        "a real node already runs on this machine{owner}; only one can (they share iptables, the \
         CNI bridge and cgroups): stop it (`olm dev down`, or end the test that started it) first"
    )]
    NodeBusy {
        /// Who started it, when known (` (started by process N)`).
        owner: String,
    },
    /// This machine cannot run a real node; says what is missing.
    #[error("this machine cannot run a real node: {0}")]
    NodeUnsupported(String),
    /// An object built by the harness did not deserialize (a bug in the harness).
    #[error("building an object: {0}")]
    Json(#[from] serde_json::Error),
}

impl Error {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}
