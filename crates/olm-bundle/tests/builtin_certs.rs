//! Rendering for the built-in certificate provider. Upstream has no such provider, so the check is
//! relative: the webhook-operator bundle of upstream's regression data
//! (`test/regression/convert/testdata`, case `all-webhook-types`) rendered with `Builtin` must
//! equal upstream's output without a provider, except for the installer's annotations on the
//! webhook Service, webhook configurations and conversion CRD, and the Secret volumes every
//! provider mounts; no Issuer or Certificate is rendered. The bundle's own annotations (this one
//! carries a stale `cert-manager.io/inject-ca-from`) are left as they are. The whole render is also pinned as one golden file
//! (`tests/golden/builtin-webhook-operator.yaml`; `OLM_BLESS=1` rewrites it).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use olm_bundle::render::{RenderOptions, render, sort_manifests};
use olm_bundle::{Bundle, CertProvider, manifests_to_yaml};
use serde_json::{Value, json};

const NS: &str = "webhook-system";
/// `ObjectNameForBaseAndSuffix("webhook-operator-controller-manager-service", "cert")`.
const CERT: &str = "webhook-operator-controller-manager-service-cert";
const SERVICE: &str = "webhook-operator-controller-manager-service";

fn bundle() -> Bundle {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/upstream-regression/bundles/webhook-operator.v0.0.5");
    Bundle::from_dir(dir).unwrap()
}

fn rendered(provider: Option<CertProvider>) -> Vec<Value> {
    let opts = RenderOptions {
        install_namespace: NS.into(),
        target_namespaces: None,
        cert_provider: provider,
        deployment_config: None,
    };
    let mut objs = render(&bundle(), &opts).unwrap();
    sort_manifests(&mut objs);
    objs
}

fn kind(o: &Value) -> &str {
    o["kind"].as_str().unwrap_or("")
}

#[test]
fn builtin_adds_only_its_annotations_and_the_secret_volumes() {
    let builtin = rendered(Some(CertProvider::Builtin));
    // The render without a provider is upstream's own regression output; the Deployment's
    // volumes are the same for every provider, so they come from the cert-manager render.
    let plain = rendered(None);
    let cert_manager = rendered(Some(CertProvider::CertManager));
    assert_eq!(builtin.len(), plain.len());
    let mut seen = Vec::new();
    for (b, p) in builtin.iter().zip(&plain) {
        let mut expected = p.clone();
        match kind(p) {
            "ValidatingWebhookConfiguration"
            | "MutatingWebhookConfiguration"
            | "CustomResourceDefinition"
                if b.pointer("/spec/conversion/strategy") != Some(&json!("None")) =>
            {
                let meta = expected["metadata"].as_object_mut().unwrap();
                let a = meta.entry("annotations").or_insert_with(|| json!({}));
                a[olm_k8s::INJECT_CA_FROM_ANNOTATION] = json!(format!("{NS}/{CERT}"));
                seen.push(kind(p).to_string());
            }
            "Service" => {
                expected["metadata"]["annotations"] =
                    json!({olm_k8s::SERVING_CERT_SECRET_ANNOTATION: CERT});
                seen.push("Service".into());
            }
            "Deployment" => {
                expected = cert_manager
                    .iter()
                    .find(|o| kind(o) == "Deployment")
                    .unwrap()
                    .clone();
                assert_ne!(&expected, p, "the provider mounts its Secret");
                seen.push("Deployment".into());
            }
            _ => {}
        }
        assert_eq!(b, &expected, "{} {}", kind(b), b["metadata"]["name"]);
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "CustomResourceDefinition",
            "Deployment",
            "MutatingWebhookConfiguration",
            "Service",
            "ValidatingWebhookConfiguration"
        ]
    );
}

#[test]
fn builtin_mounts_the_secret_the_service_names() {
    let objs = rendered(Some(CertProvider::Builtin));
    let service = objs.iter().find(|o| kind(o) == "Service").unwrap();
    assert_eq!(service["metadata"]["name"], SERVICE);
    let deployment = objs.iter().find(|o| kind(o) == "Deployment").unwrap();
    let volumes = deployment
        .pointer("/spec/template/spec/volumes")
        .and_then(Value::as_array)
        .unwrap();
    let secrets: Vec<&str> = volumes
        .iter()
        .filter_map(|v| v.pointer("/secret/secretName").and_then(Value::as_str))
        .collect();
    assert_eq!(secrets, [CERT, CERT]);
    // No cert-manager objects: nothing but the installer is needed on the cluster.
    assert!(objs.iter().all(|o| o["apiVersion"] != "cert-manager.io/v1"));
}

#[test]
fn builtin_render_matches_golden_file() {
    let golden: PathBuf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/builtin-webhook-operator.yaml");
    let got = manifests_to_yaml(&rendered(Some(CertProvider::Builtin)));
    if std::env::var_os("OLM_BLESS").is_some() {
        std::fs::write(&golden, &got).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap();
    assert!(
        got == want,
        "render differs from {}; rerun with OLM_BLESS=1 if intended",
        golden.display()
    );
}
