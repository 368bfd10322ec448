//! What every controller of `olm run` shares: the API server connection, where things are kept,
//! and the settings chosen at startup.

use std::path::PathBuf;
use std::sync::Arc;

use olm_runtime::metrics::Metrics;

/// The field owner of every server-side apply the installer makes (upstream's).
pub const FIELD_MANAGER: &str = "olm.operatorframework.io/clusterextension-controller";

/// Handed to every controller of one `olm run` process.
pub struct Shared {
    /// The API server, as the process itself.
    pub client: kube::Client,
    /// How `client` was made; impersonating clients (an extension's ServiceAccount) start from it.
    pub kube_config: kube::Config,
    /// Where ClusterObjectSet Secrets live and OLM's own objects go.
    pub system_namespace: String,
    /// Root of on-disk caches (bundle unpacks under `unpack/`).
    pub cache_dir: PathBuf,
    /// Reconcile counters and timings, served at `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Registries.
    pub images: olm_image::Client,
    /// Who issues webhook serving certificates, chosen at startup; `None` refuses bundles with
    /// webhooks, as upstream does without a provider.
    pub cert_provider: Option<olm_bundle::CertProvider>,
    /// Field owner of server-side applies ([`FIELD_MANAGER`]).
    pub field_manager: &'static str,
    /// The cluster's global pull secret (`namespace`, `name`), merged over the image client's
    /// own credentials for bundle pulls (v1's and v0's alike).
    pub global_pull_secret: Option<(String, String)>,
}

impl Shared {
    /// The reconcile harness of `controller`: timed in this process's metrics, failures retried
    /// after the controllers' default backoff.
    pub fn harness(&self, controller: &'static str) -> olm_runtime::harness::Harness {
        olm_runtime::harness::Harness::new(
            controller,
            Some(self.metrics.clone()),
            olm_k8s::retry::Backoff::DEFAULT,
        )
    }
}
