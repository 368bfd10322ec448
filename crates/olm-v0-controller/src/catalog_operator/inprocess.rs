//! CatalogSources served by `olm` itself: a `grpc` source with `spec.image` and the annotation
//! `olm.operatorframework.io/serve-in-process: "true"` gets no registry Pod; `olm` pulls the
//! catalog image (only its `operators.operatorframework.io.index.configs.v1` directory), loads
//! the file-based catalog and serves the registry API on a loopback port, which the source's
//! connection then dials like any registry.
//!
//! When to use it: where no registry Pod can run — a local control plane without a kubelet
//! (`olm dev`), clusters whose nodes cannot pull the catalog image, or to save the Pod's memory.
//! A Pod is what upstream runs and what other clients of the registry Service need; in-process
//! serving is only reachable by `olm` itself.
//!
//! With `spec.updateStrategy.registryPoll.interval` the image's tag is resolved again at that
//! interval, and a new digest is served in place of the old one (upstream replaces the Pod).
//!
//! ConfigMap sources (`spec.sourceType: configmap`) are always served here: their catalog is built
//! from the ConfigMap ([`olm_v0::catalog_operator::configmapsource`]) and served by
//! [`InProcess::serve`], where upstream runs a `configmap-server` Pod.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use olm_image::{Expect, Filter, ImageCache, ImageRef};

use crate::lock;

/// One served catalog.
struct Served {
    digest: String,
    address: String,
    stop: tokio::sync::oneshot::Sender<()>,
    /// When it started being served.
    since: Time,
}

/// Every catalog served in process, by `namespace/name`.
pub struct InProcess {
    images: olm_image::Client,
    cache: ImageCache,
    served: Mutex<HashMap<String, Served>>,
}

impl InProcess {
    /// Nothing served yet; images unpacked under `cache_dir`.
    pub fn new(images: olm_image::Client, cache_dir: &std::path::Path) -> InProcess {
        InProcess {
            images,
            cache: ImageCache::new(cache_dir),
            served: Mutex::default(),
        }
    }

    /// The address serving `image` for the source `key`: the current one when the image still
    /// resolves to the digest served, else a new server (the old one stopped). Also returns the
    /// digest served.
    pub async fn ensure(&self, key: &str, image: &str) -> Result<(String, String), String> {
        let reference: ImageRef = image
            .parse()
            .map_err(|e| format!("catalog image {image}: {e}"))?;
        let pulled = self
            .images
            .pull_cached(
                &reference,
                &self.cache,
                &Filter::CatalogConfigs,
                Expect::Catalog,
            )
            .await
            .map_err(|e| format!("pulling catalog image {image}: {e}"))?;
        let digest = pulled.digest.to_string();
        if let Some(s) = lock(&self.served).get(key).filter(|s| s.digest == digest) {
            return Ok((s.address.clone(), digest));
        }
        let dir = pulled.catalog_dir().ok_or_else(|| {
            format!(
                "catalog image {image} has no operators.operatorframework.io.index.configs.v1 label"
            )
        })?;
        let registry = tokio::task::spawn_blocking(move || {
            let catalog = olm_catalog::load::load_path(&dir)
                .map_err(|e| format!("loading the catalog in {}: {e}", dir.display()))?;
            olm_registry::Registry::build(&catalog, String::new())
                .map_err(|e| format!("building the registry: {e}"))
        })
        .await
        .map_err(|e| format!("loading the catalog: {e}"))??;
        let address = self.serve(key, &digest, registry).await?;
        tracing::info!(catalogsource = %key, image = %image, digest = %digest, address = %address, "serving the catalog in process");
        Ok((address, digest))
    }

    /// Serves `registry` for the source `key` on a new loopback port, as the content `version`
    /// (an image digest, a ConfigMap's uid and resourceVersion), in place of what was served.
    /// Returns the address.
    pub async fn serve(
        &self,
        key: &str,
        version: &str,
        registry: olm_registry::Registry,
    ) -> Result<String, String> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("listening on a loopback port: {e}"))?;
        let address = listener
            .local_addr()
            .map_err(|e| format!("listening on a loopback port: {e}"))?
            .to_string();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let name = key.to_owned();
        tokio::spawn(async move {
            let stop = async move {
                let _ = stopped.await;
            };
            if let Err(e) = olm_registry::server::serve(Arc::new(registry), listener, stop).await {
                tracing::warn!(catalogsource = %name, error = %e, "serving the catalog in process failed");
            }
        });
        let old = lock(&self.served).insert(
            key.to_owned(),
            Served {
                digest: version.to_owned(),
                address: address.clone(),
                stop,
                since: crate::now(),
            },
        );
        if let Some(old) = old {
            let _ = old.stop.send(());
        }
        Ok(address)
    }

    /// What is served for `key`: the content version, the address and since when.
    pub fn serving(&self, key: &str) -> Option<(String, String, Time)> {
        lock(&self.served)
            .get(key)
            .map(|s| (s.digest.clone(), s.address.clone(), s.since.clone()))
    }

    /// Stops serving `key` (its CatalogSource is gone or no longer served in process).
    pub fn forget(&self, key: &str) {
        if let Some(old) = lock(&self.served).remove(key) {
            let _ = old.stop.send(());
        }
    }
}
