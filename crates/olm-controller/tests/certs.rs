//! The built-in certificate provider on a real control plane: the webhook-operator bundle of
//! upstream's regression data, rendered for the built-in provider and applied as installed
//! objects, gets a serving Secret whose chain a TLS client accepts for the Service's names, the
//! CA in every webhook configuration and the conversion CRD, and a pod-template annotation that
//! rolls the Deployment. Re-applying the objects as the revision does keeps the injected CA; a
//! clock moved to within a day of expiry renews everything; a deleted Secret comes back; and
//! `detect` picks cert-manager only once its API is served.
//!
//! Needs the control plane binaries from `tools/controlplane/build.sh`.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod webhook_bundle;

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, ResourceExt};
use olm_bundle::CertProvider;
use olm_cluster::certs::{self, Options};
use olm_cluster::context::{FIELD_MANAGER, Shared};
use olm_security::certs::{Decision, Held, Policy, Subject, ca_hash, decide};
use olm_testenv::ControlPlane;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::{Value, json};
use tokio::sync::oneshot;

const NS: &str = "webhook-system";
const SERVICE: &str = "webhook-operator-controller-manager-service";
const SECRET: &str = "webhook-operator-controller-manager-service-cert";
const DEPLOYMENT: &str = "webhook-operator-controller-manager";
const VWC: &str = "vwebhooktest-v1.kb.io";
const MWC: &str = "mwebhooktest-v1.kb.io";
const CRD: &str = "webhooktests.webhook.operators.coreos.io";
const TIMEOUT: Duration = Duration::from_secs(60);

fn api_for(client: &Client, obj: &Value) -> Api<DynamicObject> {
    let (group, version) = match obj["apiVersion"].as_str().unwrap().split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (
            String::new(),
            obj["apiVersion"].as_str().unwrap().to_string(),
        ),
    };
    let kind = obj["kind"].as_str().unwrap();
    let plural = match kind {
        "Service" => "services",
        "Deployment" => "deployments",
        "ServiceAccount" => "serviceaccounts",
        "ClusterRole" => "clusterroles",
        "ClusterRoleBinding" => "clusterrolebindings",
        "ValidatingWebhookConfiguration" => "validatingwebhookconfigurations",
        "MutatingWebhookConfiguration" => "mutatingwebhookconfigurations",
        "CustomResourceDefinition" => "customresourcedefinitions",
        other => panic!("no plural for {other}"),
    };
    let ar =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(&group, &version, kind), plural);
    match obj.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(ns)
            if !matches!(
                kind,
                "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration"
            ) =>
        {
            Api::namespaced_with(client.clone(), ns, &ar)
        }
        _ => Api::all_with(client.clone(), &ar),
    }
}

/// Applies the rendered objects the way a revision does: server-side, forced, under the
/// installer's field manager, labelled as installed by a ClusterExtension. Webhook configurations
/// are cluster-scoped, so the namespace the renderer writes on them is dropped.
async fn apply_as_revision(client: &Client, objs: &[Value]) -> anyhow::Result<()> {
    for o in objs {
        let mut o = o.clone();
        let kind = o["kind"].as_str().unwrap().to_string();
        if kind.ends_with("WebhookConfiguration") {
            o["metadata"].as_object_mut().unwrap().remove("namespace");
        }
        if let Some(m) = o.as_object_mut() {
            m.remove("status");
        }
        let labels = o["metadata"]
            .as_object_mut()
            .unwrap()
            .entry("labels")
            .or_insert_with(|| json!({}));
        labels[olm_k8s::OWNER_KIND_LABEL] = json!(olm_k8s::CLUSTER_EXTENSION_KIND);
        labels[olm_k8s::OWNER_NAME_LABEL] = json!("webhook-operator");
        let name = o["metadata"]["name"].as_str().unwrap().to_string();
        api_for(client, &o)
            .patch(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&o),
            )
            .await
            .with_context(|| format!("applying {kind} {name}"))?;
    }
    Ok(())
}

async fn eventually<T, F, Fut>(what: &str, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(v) = check().await? {
            return Ok(v);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out after {TIMEOUT:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

struct Pair {
    ca: Vec<u8>,
    crt: Vec<u8>,
    key: Vec<u8>,
}

fn pair_of(s: &Secret) -> Option<Pair> {
    let d = s.data.as_ref()?;
    Some(Pair {
        ca: d.get("ca.crt")?.0.clone(),
        crt: d.get("tls.crt")?.0.clone(),
        key: d.get("tls.key")?.0.clone(),
    })
}

/// What a TLS client does with the Secret: trust `ca.crt` alone and accept `tls.crt` as a
/// server certificate for each of the Service's names at `at`.
fn verify_chain(p: &Pair, at: Timestamp) {
    let ca = CertificateDer::from_pem_slice(&p.ca).unwrap();
    let crt = CertificateDer::from_pem_slice(&p.crt).unwrap();
    let anchor = webpki::anchor_from_trusted_cert(&ca).unwrap();
    let ee = webpki::EndEntityCert::try_from(&crt).unwrap();
    let time = UnixTime::since_unix_epoch(Duration::from_secs(at.as_second() as u64));
    ee.verify_for_usage(
        webpki::ALL_VERIFICATION_ALGS,
        &[anchor],
        &[],
        time,
        webpki::KeyUsage::server_auth(),
        None,
        None,
    )
    .unwrap();
    for host in [
        format!("{SERVICE}.{NS}"),
        format!("{SERVICE}.{NS}.svc"),
        format!("{SERVICE}.{NS}.svc.cluster.local"),
    ] {
        let name = ServerName::try_from(host.clone()).unwrap();
        ee.verify_is_valid_for_subject_name(&name)
            .unwrap_or_else(|e| panic!("{host}: {e:?}"));
    }
    assert!(
        String::from_utf8_lossy(&p.key).contains("PRIVATE KEY"),
        "tls.key is a PEM private key"
    );
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Every place the CA should be, as base64 (webhooks) or hash (pod template), read back.
async fn injected(client: &Client) -> anyhow::Result<(Vec<String>, Option<String>)> {
    let mut bundles = Vec::new();
    for (kind, plural, name) in [
        (
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            VWC,
        ),
        (
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            MWC,
        ),
    ] {
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind),
            plural,
        );
        let o = Api::<DynamicObject>::all_with(client.clone(), &ar)
            .get(name)
            .await?;
        bundles.push(
            o.data
                .pointer("/webhooks/0/clientConfig/caBundle")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        );
    }
    let crd = Api::<CustomResourceDefinition>::all(client.clone())
        .get(CRD)
        .await?;
    let crd = serde_json::to_value(&crd)?;
    bundles.push(
        crd.pointer("/spec/conversion/webhook/clientConfig/caBundle")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    );
    let dep = Api::<k8s_openapi::api::apps::v1::Deployment>::namespaced(client.clone(), NS)
        .get(DEPLOYMENT)
        .await?;
    let hash = dep
        .spec
        .template
        .metadata
        .and_then(|m| m.annotations)
        .and_then(|a| a.get(olm_k8s::CA_HASH_ANNOTATION).cloned());
    Ok((bundles, hash))
}

/// Waits until the Secret holds a pair other than `previous` and every place carries its CA.
async fn settled(client: &Client, previous: Option<&[u8]>) -> anyhow::Result<Pair> {
    let secrets: Api<Secret> = Api::namespaced(client.clone(), NS);
    eventually(
        "the Secret, caBundles and the rollout annotation",
        || async {
            let Some(s) = secrets.get_opt(SECRET).await? else {
                return Ok(None);
            };
            let Some(p) = pair_of(&s) else {
                return Ok(None);
            };
            if previous == Some(p.crt.as_slice()) {
                return Ok(None);
            }
            let (bundles, hash) = injected(client).await?;
            let want = b64(&p.ca);
            if bundles.iter().all(|b| *b == want) && hash.as_deref() == Some(&ca_hash(&p.ca)) {
                Ok(Some(p))
            } else {
                Ok(None)
            }
        },
    )
    .await
}

fn start(
    shared: Arc<Shared>,
    options: Options,
) -> (oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(certs::run_with(shared, options, async move {
        let _ = rx.await;
    }));
    (tx, task)
}

#[tokio::test]
async fn builtin_provider_issues_injects_rolls_and_renews() {
    let plane = ControlPlane::start().await.expect("control plane");
    let client = plane.client();
    let cache = tempfile::tempdir().unwrap();
    let shared = Arc::new(webhook_bundle::shared_for(&plane, cache.path()).await);

    assert_eq!(certs::detect(&client).await, CertProvider::Builtin);

    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NS}})).unwrap(),
        )
        .await
        .unwrap();
    let objs: Vec<Value> = webhook_bundle::rendered(NS)
        .into_iter()
        .filter(|o| {
            matches!(
                o["kind"].as_str(),
                Some(
                    "Service"
                        | "Deployment"
                        | "ValidatingWebhookConfiguration"
                        | "MutatingWebhookConfiguration"
                        | "CustomResourceDefinition"
                )
            )
        })
        .collect();
    assert_eq!(objs.len(), 5);
    apply_as_revision(&client, &objs).await.unwrap();

    // Issue.
    let (stop, task) = start(shared.clone(), Options::default());
    let first = settled(&client, None).await.unwrap();
    verify_chain(&first, Timestamp::now());
    let secret = Api::<Secret>::namespaced(client.clone(), NS)
        .get(SECRET)
        .await
        .unwrap();
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    assert_eq!(
        secret.owner_references()[0].name,
        SERVICE,
        "the Secret goes with its Service"
    );
    let subject = Subject {
        service: SERVICE.into(),
        namespace: NS.into(),
    };
    let held = Held {
        tls_crt: Some(&first.crt),
        tls_key: Some(&first.key),
        ca_crt: Some(&first.ca),
    };
    match decide(&subject, &held, Timestamp::now(), &Policy::default()) {
        Decision::Keep { renew_at, .. } => {
            let left = renew_at.duration_since(Timestamp::now());
            assert!(
                left > SignedDuration::from_hours(728 * 24),
                "valid about two years: {left:?}"
            );
        }
        other => panic!("the issued pair is not kept: {other:?}"),
    }

    // The revision applies again, without caBundle: the injected CA stays and nothing is reissued.
    apply_as_revision(&client, &objs).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (bundles, hash) = injected(&client).await.unwrap();
    assert!(bundles.iter().all(|b| *b == b64(&first.ca)), "{bundles:?}");
    assert_eq!(hash.as_deref(), Some(ca_hash(&first.ca).as_str()));
    let again = pair_of(
        &Api::<Secret>::namespaced(client.clone(), NS)
            .get(SECRET)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(again.crt, first.crt, "a valid pair is kept");

    // Near expiry: a clock 729.5 days ahead leaves less than the 24-hour margin.
    stop.send(()).unwrap();
    task.await.unwrap();
    let ahead = SignedDuration::from_hours(729 * 24 + 12);
    let clock: certs::Clock = Arc::new(move || Timestamp::now().checked_add(ahead).unwrap());
    let (stop, task) = start(
        shared.clone(),
        Options {
            policy: Policy::default(),
            clock: clock.clone(),
        },
    );
    let renewed = settled(&client, Some(&first.crt)).await.unwrap();
    assert_ne!(renewed.ca, first.ca, "a renewal brings a new CA");
    verify_chain(&renewed, clock());
    let held = Held {
        tls_crt: Some(&renewed.crt),
        tls_key: Some(&renewed.key),
        ca_crt: Some(&renewed.ca),
    };
    assert!(matches!(
        decide(&subject, &held, clock(), &Policy::default()),
        Decision::Keep { .. }
    ));

    // A deleted Secret is issued again.
    Api::<Secret>::namespaced(client.clone(), NS)
        .delete(SECRET, &DeleteParams::default())
        .await
        .unwrap();
    let reissued = settled(&client, Some(&renewed.crt)).await.unwrap();
    verify_chain(&reissued, clock());

    stop.send(()).unwrap();
    task.await.unwrap();

    // Once cert-manager's API is served, `auto` picks it.
    let cm_crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "certificates.cert-manager.io"},
        "spec": {"group": "cert-manager.io", "scope": "Namespaced",
                 "names": {"plural": "certificates", "singular": "certificate", "kind": "Certificate", "listKind": "CertificateList"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))
    .unwrap();
    olm_testenv::install_crds(&client, &[cm_crd], TIMEOUT)
        .await
        .unwrap();
    let picked = eventually("cert-manager detected", || async {
        Ok((certs::detect(&client).await == CertProvider::CertManager).then_some(()))
    })
    .await;
    assert!(picked.is_ok(), "{picked:?}");
    plane.stop();
}
