//! What the certificate-provider and preflight tests share: the webhook-operator bundle of
//! upstream's regression data rendered for the built-in provider, and a [`Shared`] on a test
//! control plane.

use std::path::Path;
use std::sync::Arc;

use olm_bundle::render::{RenderOptions, render};
use olm_bundle::{Bundle, CertProvider};
use olm_cluster::context::{FIELD_MANAGER, Shared};
use olm_testenv::ControlPlane;
use serde_json::Value;

/// The bundle rendered into `namespace` with [`CertProvider::Builtin`]; cluster-scoped webhook
/// configurations lose the namespace the renderer writes on them (the API server would refuse
/// it on apply), and no object carries `status`.
pub fn rendered(namespace: &str) -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/upstream-regression/bundles/webhook-operator.v0.0.5");
    let b = Bundle::from_dir(dir).expect("webhook-operator bundle");
    let opts = RenderOptions {
        install_namespace: namespace.into(),
        target_namespaces: None,
        cert_provider: Some(CertProvider::Builtin),
        deployment_config: None,
    };
    let mut objs = render(&b, &opts).expect("render");
    for o in &mut objs {
        let webhook_config = o["kind"]
            .as_str()
            .is_some_and(|k| k.ends_with("WebhookConfiguration"));
        if let Some(m) = o.as_object_mut() {
            m.remove("status");
        }
        if webhook_config && let Some(meta) = o["metadata"].as_object_mut() {
            meta.remove("namespace");
        }
    }
    objs
}

/// A [`Shared`] as `olm run` builds it, on `plane`.
pub async fn shared_for(plane: &ControlPlane, cache: &Path) -> Shared {
    let kubeconfig =
        kube::config::Kubeconfig::read_from(plane.kubeconfig_path()).expect("kubeconfig");
    let kube_config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("kube config");
    Shared {
        client: plane.client(),
        kube_config,
        system_namespace: "olmv1-system".into(),
        cache_dir: cache.to_path_buf(),
        metrics: Arc::default(),
        images: olm_image::Client::new(olm_image::ClientOptions::default()),
        cert_provider: Some(CertProvider::Builtin),
        field_manager: FIELD_MANAGER,
        global_pull_secret: None,
    }
}
