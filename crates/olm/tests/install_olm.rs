//! The install manifests: `install.yaml` is exactly what `kubectl kustomize config` renders, and
//! `olm install-olm` applies it to the real local control plane, where every object is accepted,
//! the Deployment becomes available (kwok plays its pods) and the webhook configuration gets the
//! CA of the certificate `olm run` issues itself. `olm run` is started as the manifests'
//! ServiceAccount (a token from `kubectl create token`), so it runs with the manifests' RBAC;
//! a second replica reuses the first one's certificate. `olm uninstall-olm` removes it again,
//! leaving the CRDs.
//!
//! The manifests run OLM v1 only (`--olm=v1`): a PackageManifest APIService an earlier `olm run`
//! left behind (nothing serves it: every namespace deletion would hang) is removed by `olm run`
//! at start and by `olm uninstall-olm`; a namespace created and deleted with the manifests
//! applied is gone within 30 s, and so is OLM's own namespace after the uninstall.
//!
//! Needs kubectl (with its built-in kustomize), curl and the control plane binaries
//! (`tools/controlplane/build.sh`).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use olm_testenv::ControlPlane;

mod run_common;

use run_common::{OlmRun, exists, free_addr, kubectl, wait_for};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Regenerate with `UPDATE_INSTALL=1 cargo test -p olm --test install_olm`.
#[test]
fn install_yaml_is_what_config_renders() {
    let out = Command::new("kubectl")
        .args(["kustomize"])
        .arg(root().join("config"))
        .output()
        .expect("kubectl runs");
    assert!(out.status.success(), "kubectl kustomize config: {out:?}");
    let path = root().join("install.yaml");
    if std::env::var_os("UPDATE_INSTALL").is_some_and(|v| v == "1") {
        std::fs::write(&path, &out.stdout).unwrap();
    }
    let have = std::fs::read(&path).unwrap();
    assert!(
        have == out.stdout,
        "install.yaml is not what `kubectl kustomize config` renders; run `UPDATE_INSTALL=1 cargo test -p olm --test install_olm`"
    );
}

/// A kubeconfig for the same cluster as `admin` that authenticates with `token`.
fn token_kubeconfig(admin: &Path, token: &str, out: &Path) {
    let minified = kubectl(
        admin,
        &["config", "view", "--raw", "--minify", "-o", "json"],
        None,
    );
    let mut kc: serde_json::Value = serde_json::from_str(&minified).unwrap();
    let user = kc["users"][0]["name"].clone();
    kc["users"] = serde_json::json!([{"name": user, "user": {"token": token}}]);
    std::fs::write(out, serde_json::to_vec(&kc).unwrap()).unwrap();
}

/// The PackageManifest APIService as an `olm run` with OLM v0 registered it, left behind with
/// nothing serving it (no Service even).
const STALE_APISERVICE: &str = r#"{"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
  "metadata": {"name": "v1.packages.operators.coreos.com"},
  "spec": {"group": "packages.operators.coreos.com", "version": "v1",
    "groupPriorityMinimum": 2000, "versionPriority": 15, "insecureSkipTLSVerify": true,
    "service": {"name": "packageserver-service", "namespace": "olmv1-system", "port": 443}}}"#;

/// How long namespace deletion takes: waits (at most 30 s) until `name` is gone.
fn namespace_gone_within_30s(kubeconfig: &Path, name: &str) -> Duration {
    let started = Instant::now();
    wait_for(
        &format!("namespace {name} to be deleted"),
        Duration::from_secs(30),
        || !exists(kubeconfig, &["namespace", name]),
    );
    started.elapsed()
}

fn jsonpath(kubeconfig: &Path, args: &[&str], path: &str) -> String {
    let mut all = args.to_vec();
    let expr = format!("jsonpath={path}");
    all.extend(["-o", &expr]);
    kubectl(kubeconfig, &all, None)
}

#[tokio::test(flavor = "multi_thread")]
async fn install_olm_applies_the_manifests_and_waits_until_ready() {
    let plane = ControlPlane::start()
        .await
        .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
    let admin = plane.kubeconfig_path();
    let tmp = tempfile::tempdir().unwrap();

    let started = Instant::now();
    let install_out = tmp.path().join("install.out");
    let install_err = tmp.path().join("install.err");
    let mut install = Command::new(env!("CARGO_BIN_EXE_olm"))
        .args([
            "install-olm",
            "--image",
            "localhost/olm:test",
            "--timeout",
            "150s",
        ])
        .arg("--kubeconfig")
        .arg(admin)
        .stdout(std::fs::File::create(&install_out).unwrap())
        .stderr(std::fs::File::create(&install_err).unwrap())
        .spawn()
        .unwrap();

    // olm run as the Deployment's ServiceAccount, in place of the pods kwok only pretends to run.
    wait_for("the ServiceAccount", Duration::from_secs(60), || {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(admin)
            .args([
                "get",
                "serviceaccount",
                "olm-controller-manager",
                "-n",
                "olmv1-system",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    let token = kubectl(
        admin,
        &[
            "create",
            "token",
            "olm-controller-manager",
            "-n",
            "olmv1-system",
        ],
        None,
    );
    let sa_kubeconfig = tmp.path().join("sa.kubeconfig");
    token_kubeconfig(admin, token.trim(), &sa_kubeconfig);
    let replica = |dir: &str| {
        let dir = tmp.path().join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        let webhook_port = free_addr().port().to_string();
        // As the Deployment runs it.
        let flags = [
            "--olm=v1",
            "--tls-secret=olm-serving-cert",
            "--external-address=catalogd-service.olmv1-system.svc",
            "--leader-elect",
            "--webhook-server-port",
            &webhook_port,
        ];
        OlmRun::start_with(&sa_kubeconfig, &dir, &flags)
    };
    kubectl(admin, &["apply", "-f", "-"], Some(STALE_APISERVICE));
    let first = replica("a");
    wait_for(
        "olm run --olm=v1 to remove the stale APIService",
        Duration::from_secs(30),
        || !exists(admin, &["apiservice", "v1.packages.operators.coreos.com"]),
    );

    let status = loop {
        if let Some(status) = install.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "install-olm did not finish"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let ready_in = started.elapsed();
    let out = std::fs::read_to_string(&install_out).unwrap();
    let err = std::fs::read_to_string(&install_err).unwrap();
    assert!(
        status.success(),
        "install-olm: {err}\nolm run:\n{}",
        first.stderr()
    );
    assert!(out.starts_with("OLM installed: "), "{out}");
    assert!(
        err.contains("deployments/olm-controller-manager applied"),
        "{err}"
    );
    assert!(err.contains("has its CA"), "{err}");
    eprintln!("install-olm ready in {ready_in:?}: {out}");

    // Every object of the manifests exists.
    let listed = kubectl(
        admin,
        &[
            "get",
            "-f",
            root().join("install.yaml").to_str().unwrap(),
            "-o",
            "name",
        ],
        None,
    );
    let manifests = std::fs::read_to_string(root().join("install.yaml")).unwrap();
    let docs = manifests
        .lines()
        .filter(|l| l.starts_with("kind: "))
        .count();
    assert_eq!(listed.lines().count(), docs, "{listed}");

    // The webhook trusts the CA in the Secret, and the catalog server serves a certificate
    // that CA signed for the Service's name.
    let ca_b64 = jsonpath(
        admin,
        &["get", "secret", "olm-serving-cert", "-n", "olmv1-system"],
        "{.data.ca\\.crt}",
    );
    let bundle = jsonpath(
        admin,
        &[
            "get",
            "mutatingwebhookconfiguration",
            "catalogd-mutating-webhook-configuration",
        ],
        "{.webhooks[0].clientConfig.caBundle}",
    );
    assert!(!ca_b64.is_empty());
    assert_eq!(bundle, ca_b64);
    let ca_pem = tmp.path().join("ca.pem");
    let decoded = Command::new("base64")
        .arg("-d")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut decoded = decoded;
        decoded
            .stdin
            .take()
            .unwrap()
            .write_all(ca_b64.as_bytes())
            .unwrap();
        let pem = decoded.wait_with_output().unwrap().stdout;
        std::fs::write(&ca_pem, pem).unwrap();
    }
    let host = "catalogd-service.olmv1-system.svc";
    let resolve = format!("{host}:{}:127.0.0.1", first.catalogs.port());
    let curl = Command::new("curl")
        .args([
            "--silent",
            "--show-error",
            "--output",
            "/dev/null",
            "--write-out",
            "%{http_code}",
        ])
        .arg("--cacert")
        .arg(&ca_pem)
        .args(["--resolve", &resolve])
        .arg(format!(
            "https://{host}:{}/catalogs/none/api/v1/all",
            first.catalogs.port()
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&curl.stdout), "404", "{curl:?}");

    // Running as the ServiceAccount, with the manifests' RBAC: it leads, nothing is forbidden.
    wait_for("leadership", Duration::from_secs(30), || {
        first.stderr().contains("started leading")
    });
    assert!(!first.stderr().contains("forbidden"), "{}", first.stderr());

    // A second replica serves the same certificate: nothing is issued again.
    let version = jsonpath(
        admin,
        &["get", "secret", "olm-serving-cert", "-n", "olmv1-system"],
        "{.metadata.resourceVersion}",
    );
    let second = replica("b");
    assert!(!second.stderr().contains("issuing"), "{}", second.stderr());
    assert_eq!(
        jsonpath(
            admin,
            &["get", "secret", "olm-serving-cert", "-n", "olmv1-system"],
            "{.metadata.resourceVersion}"
        ),
        version
    );

    // Installing again changes nothing and is ready at once.
    let again = Command::new(env!("CARGO_BIN_EXE_olm"))
        .args([
            "install-olm",
            "--image",
            "localhost/olm:test",
            "--timeout",
            "30s",
        ])
        .arg("--kubeconfig")
        .arg(admin)
        .output()
        .unwrap();
    assert!(again.status.success(), "{again:?}");

    // With the manifests applied, namespaces come and go.
    kubectl(admin, &["create", "namespace", "olm-install-probe"], None);
    kubectl(
        admin,
        &["delete", "namespace", "olm-install-probe", "--wait=false"],
        None,
    );
    let took = namespace_gone_within_30s(admin, "olm-install-probe");
    eprintln!("a namespace was deleted in {took:?} with the manifests applied");

    let (_, _, _) = second.stop(rustix::process::Signal::TERM);
    let (_, _, _) = first.stop(rustix::process::Signal::TERM);
    // Uninstalling removes a stale registration too: OLM's namespace could not go otherwise.
    kubectl(admin, &["apply", "-f", "-"], Some(STALE_APISERVICE));
    let removed = Command::new(env!("CARGO_BIN_EXE_olm"))
        .arg("uninstall-olm")
        .arg("--kubeconfig")
        .arg(admin)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&removed.stdout);
    assert!(removed.status.success(), "{removed:?}");
    assert!(
        String::from_utf8_lossy(&removed.stderr)
            .contains("apiservices/v1.packages.operators.coreos.com deleted"),
        "{removed:?}"
    );
    assert!(
        out.contains("left in place: CRD clusterobjectsets.olm.operatorframework.io"),
        "{out}"
    );
    kubectl(
        admin,
        &["get", "crd", "clusterextensions.olm.operatorframework.io"],
        None,
    );
    let webhooks = kubectl(
        admin,
        &["get", "mutatingwebhookconfigurations", "-o", "name"],
        None,
    );
    assert!(!webhooks.contains("catalogd"), "{webhooks}");
    let took = namespace_gone_within_30s(admin, "olmv1-system");
    eprintln!("olmv1-system was deleted in {took:?} after uninstall-olm");

    // Asked to, it takes the CRDs too; what is already gone is skipped.
    let removed = Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(["uninstall-olm", "--delete-crds"])
        .arg("--kubeconfig")
        .arg(admin)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&removed.stdout);
    assert!(removed.status.success(), "{removed:?}");
    assert_eq!(
        out,
        "OLM uninstalled; what extensions installed is left in place\n"
    );
    wait_for("the CRDs to go", Duration::from_secs(60), || {
        !kubectl(admin, &["get", "crds", "-o", "name"], None).contains("olm.operatorframework.io")
    });
}
