//! The built operator against a real API server (the local control plane, kwok's fake node: the
//! operator runs as a process on this machine, as `olm run` does in `olm dev`): it waits for the
//! Widget CRD before it says it is ready, reconciles widgets, and its webhook — registered
//! with a URL and the CA of a certificate made here — makes the API server refuse a widget over
//! the limit with the rule's message. The real-node test (`crates/olm/tests/example_operator_real.rs`)
//! does the same with OLM installing it from its bundles.
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`) and kubectl.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use olm_testenv::ControlPlane;
use serde_json::{Value, json};

const TOO_LARGE: &str = "spec.size 1000 is more than 100, the most a widget can have";
const WEBHOOK: &str = "vwidget.example.olm.operatorframework.io";

fn crd(version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../bundles/example-operator.v{version}/manifests/example.olm.operatorframework.io_widgets.yaml"
    ))
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs");
    assert!(out.status.success(), "kubectl {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn free_addr() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// `GET path`: the status code and body.
fn get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    let code = head.split(' ').nth(1)?.parse().ok()?;
    Some((code, body.to_owned()))
}

/// A CA and a serving certificate for 127.0.0.1 it signed, written as OLM mounts them
/// (`tls.crt`, `tls.key`) into `dir`; returns the CA's PEM.
fn certificates(dir: &Path) -> String {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "example-operator test CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])
        .unwrap()
        .signed_by(&leaf_key, &issuer)
        .unwrap();
    std::fs::write(dir.join("tls.crt"), leaf.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), leaf_key.serialize_pem()).unwrap();
    ca.pem()
}

/// The operator process; killed when dropped.
struct Operator {
    child: Child,
    log: PathBuf,
    probes: SocketAddr,
}

impl Operator {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn readyz(&self) -> Option<(u16, String)> {
        get(self.probes, "/readyz")
    }

    fn wait_ready(&mut self) -> Duration {
        let started = Instant::now();
        loop {
            if self.readyz().is_some_and(|(code, _)| code == 200) {
                return started.elapsed();
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("the operator exited: {status}\n{}", self.log());
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "not ready after 60 s: {:?}\n{}",
                self.readyz(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn widgets(client: kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.olm.operatorframework.io", "v1", "Widget"),
        "widgets",
    );
    Api::namespaced_with(client, "default", &resource)
}

fn widget(name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.olm.operatorframework.io/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .unwrap()
}

/// Polls the widget until its status is `want`.
async fn wait_status(api: &Api<DynamicObject>, name: &str, want: Value, operator: &Operator) {
    let started = Instant::now();
    loop {
        let status = api.get(name).await.unwrap().data["status"].clone();
        if status == want {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{name}: status {status} after 30 s, want {want}\n{}",
            operator.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn dry_run() -> PostParams {
    PostParams {
        dry_run: true,
        ..PostParams::default()
    }
}

/// Waits until the API server calls the webhook: until it refuses a dry run of a widget over
/// the limit. The refusal's message.
async fn wait_webhook(api: &Api<DynamicObject>, operator: &Operator) -> String {
    let started = Instant::now();
    loop {
        match api
            .create(&dry_run(), &widget("huge", json!({"size": 1000})))
            .await
        {
            Err(kube::Error::Api(status)) => return status.message,
            Ok(_) if started.elapsed() < Duration::from_secs(30) => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            other => panic!("the webhook never refused: {other:?}\n{}", operator.log()),
        }
    }
}

/// The message of the API server's refusal.
fn refusal(result: Result<DynamicObject, kube::Error>) -> String {
    match result {
        Err(kube::Error::Api(status)) => status.message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn reconciles_widgets_and_refuses_invalid_ones_through_its_webhook() {
    let plane = ControlPlane::start()
        .await
        .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
    let kubeconfig = plane.kubeconfig_path().to_owned();
    let tmp = tempfile::tempdir().unwrap();
    let ca = certificates(tmp.path());
    let (probes, webhook) = (free_addr(), free_addr());
    let log = tmp.path().join("operator.log");
    let mut operator = Operator {
        child: Command::new(env!("CARGO_BIN_EXE_example-operator"))
            .args(["--health-probe-bind-address", &probes.to_string()])
            .args(["--webhook-bind-address", &webhook.to_string()])
            .arg("--webhook-cert-dir")
            .arg(tmp.path())
            .env("KUBECONFIG", &kubeconfig)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("the operator starts"),
        log,
        probes,
    };

    // Without the CRD there are no widgets to list: alive, not ready, saying why.
    let started = Instant::now();
    let not_ready = loop {
        match operator.readyz() {
            Some(answer) => break answer,
            None if started.elapsed() < Duration::from_secs(30) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            None => panic!("the probes never answered\n{}", operator.log()),
        }
    };
    assert_eq!(
        not_ready,
        (
            503,
            "not ready: the widget watch has not listed widgets yet\n".to_owned()
        )
    );
    assert_eq!(get(probes, "/healthz").map(|(c, _)| c), Some(200));

    kubectl(
        &kubeconfig,
        &["apply", "-f", crd("0.2.0").to_str().unwrap()],
    );
    kubectl(
        &kubeconfig,
        &[
            "wait",
            "--for=condition=Established",
            "crd/widgets.example.olm.operatorframework.io",
            "--timeout=60s",
        ],
    );
    let took = operator.wait_ready();
    eprintln!("ready {took:?} after the CRD was established");

    let client = plane.client();
    let api = widgets(client.clone());
    api.create(&PostParams::default(), &widget("small", json!({"size": 3})))
        .await
        .unwrap();
    wait_status(
        &api,
        "small",
        json!({"ready": true, "observedGeneration": 1}),
        &operator,
    )
    .await;

    // The webhook as OLM registers it from 0.2.0's CSV, but at the process's URL.
    let configuration: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": WEBHOOK},
        "webhooks": [{
            "name": WEBHOOK,
            "clientConfig": {"url": format!("https://{webhook}/validate-widget")},
            "rules": [{
                "apiGroups": ["example.olm.operatorframework.io"],
                "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"],
                "resources": ["widgets"],
            }],
            "failurePolicy": "Fail",
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 10,
        }],
    }))
    .unwrap();
    let mut configuration = configuration;
    for hook in configuration.webhooks.iter_mut().flatten() {
        hook.client_config.ca_bundle = Some(ByteString(ca.clone().into_bytes()));
    }
    let configurations: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
    configurations
        .create(&PostParams::default(), &configuration)
        .await
        .unwrap();
    // The API server takes a moment to use a new configuration.
    let refused = wait_webhook(&api, &operator).await;
    assert_eq!(
        refused,
        format!("admission webhook \"{WEBHOOK}\" denied the request: {TOO_LARGE}")
    );

    // Refused for real, and as an update; a change within the rule goes through.
    let created = api
        .create(
            &PostParams::default(),
            &widget("huge", json!({"size": 1000})),
        )
        .await;
    assert!(refusal(created).ends_with(TOO_LARGE));
    let params = PatchParams::default();
    let grown = api
        .patch(
            "small",
            &params,
            &Patch::Merge(json!({"spec": {"size": 1000}})),
        )
        .await;
    assert!(refusal(grown).ends_with(TOO_LARGE));
    api.patch(
        "small",
        &params,
        &Patch::Merge(json!({"spec": {"size": 4, "color": "red"}})),
    )
    .await
    .unwrap();
    wait_status(
        &api,
        "small",
        json!({"ready": true, "observedGeneration": 2}),
        &operator,
    )
    .await;

    // A widget stored while no webhook ran is reported not ready, saying why; once the webhook
    // is back it can still be changed as long as its size stays.
    configurations
        .delete(WEBHOOK, &DeleteParams::default())
        .await
        .unwrap();
    let started = Instant::now();
    while let Err(e) = api
        .create(&dry_run(), &widget("old", json!({"size": 1000})))
        .await
    {
        assert!(started.elapsed() < Duration::from_secs(30), "{e}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    api.create(
        &PostParams::default(),
        &widget("old", json!({"size": 1000})),
    )
    .await
    .unwrap();
    wait_status(
        &api,
        "old",
        json!({"ready": false, "observedGeneration": 1, "message": TOO_LARGE}),
        &operator,
    )
    .await;
    configurations
        .create(&PostParams::default(), &configuration)
        .await
        .unwrap();
    wait_webhook(&api, &operator).await;
    api.patch(
        "old",
        &params,
        &Patch::Merge(json!({"spec": {"color": "blue"}})),
    )
    .await
    .unwrap();
    let worse = api
        .patch(
            "old",
            &params,
            &Patch::Merge(json!({"spec": {"size": 2000}})),
        )
        .await;
    assert!(
        refusal(worse).ends_with("spec.size 2000 is more than 100, the most a widget can have")
    );

    // Stopped with SIGTERM, as the kubelet stops it: it exits at once, and cleanly.
    let pid = operator.child.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = operator.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "still running 10 s after SIGTERM\n{}",
            operator.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}\n{}", operator.log());
    let log = operator.log();
    assert!(log.contains("admission: denied"), "{log}");
    assert!(log.contains("status written"), "{log}");
}
