//! `olm dev` end to end: up, kubeconfig, status, kubectl against the fake node and the OLM v0
//! CRDs, down — with its own state folder so it never touches a developer's running environment.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

fn olm(state: &Path, args: &[&str]) -> (bool, String, String) {
    let bin = olm_testenv::bin_dir().expect("control plane bin folder");
    let out = Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(args)
        .env("OLM_CACHE_DIR", state)
        .env("OLM_CONTROLPLANE_BIN", bin)
        .output()
        .expect("olm runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Stops the environment even when an assertion fails half-way.
struct Down<'a>(&'a Path);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        let _ = olm(self.0, &["dev", "down"]);
    }
}

#[test]
fn up_status_kubectl_down() {
    let state = tempfile::tempdir().expect("temp dir");
    let (ok, out, err) = olm(state.path(), &["dev", "up"]);
    assert!(ok, "olm dev up failed: {out}{err}");
    let _down = Down(state.path());

    let (ok, kubeconfig, err) = olm(state.path(), &["dev", "kubeconfig"]);
    assert!(ok, "{err}");
    let kubeconfig = kubeconfig.trim();
    assert_eq!(kubeconfig.lines().count(), 1, "only the path is printed");
    assert!(Path::new(kubeconfig).is_file());

    let (ok, status, err) = olm(state.path(), &["dev", "status"]);
    assert!(ok, "{err}");
    assert!(
        status.contains(&format!("kubeconfig: {kubeconfig}")),
        "{status}"
    );
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("registry: 127.0.0.1:")),
        "{status}"
    );

    let nodes = Command::new("kubectl")
        .args(["--kubeconfig", kubeconfig, "get", "nodes"])
        .output()
        .expect("kubectl runs");
    let nodes = String::from_utf8_lossy(&nodes.stdout);
    assert!(
        nodes.contains("kwok-node-0") && nodes.contains("Ready"),
        "{nodes}"
    );

    // The OLM v0 CRDs are applied too, and served.
    let csv_crd = Command::new("kubectl")
        .args([
            "--kubeconfig",
            kubeconfig,
            "get",
            "crd",
            "clusterserviceversions.operators.coreos.com",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Established\")].status}",
        ])
        .output()
        .expect("kubectl runs");
    assert_eq!(
        String::from_utf8_lossy(&csv_crd.stdout),
        "True",
        "{}",
        String::from_utf8_lossy(&csv_crd.stderr)
    );
    let csvs = Command::new("kubectl")
        .args(["--kubeconfig", kubeconfig, "get", "csv", "--all-namespaces"])
        .output()
        .expect("kubectl runs");
    assert!(
        csvs.status.success(),
        "{}",
        String::from_utf8_lossy(&csvs.stderr)
    );

    let (ok, _, err) = olm(state.path(), &["dev", "down"]);
    assert!(ok, "{err}");
    let (_, status, _) = olm(state.path(), &["dev", "status"]);
    assert!(
        !status.contains("registry: 127.0.0.1:"),
        "stopped: {status}"
    );
}
