//! `olm dev` end to end: up, kubeconfig, status, kubectl against the fake node and the OLM v0
//! CRDs, down — with its own state folder so it never touches a developer's running environment;
//! and with a real node: one per machine, and `down` puts the machine back even after the
//! supervisor was killed.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

mod dev_common;

use dev_common::{Down, olm};

#[test]
fn up_status_kubectl_down() {
    let state = tempfile::tempdir().expect("temp dir");
    let (ok, out, err) = olm(state.path(), &["dev", "up", "--node", "fake"]);
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

#[test]
fn a_real_node_is_one_per_machine_and_down_cleans_up_after_a_killed_supervisor() {
    let before = olm_testenv::node::host::Footprint::now();
    let state = tempfile::tempdir().expect("temp dir");
    let (ok, out, err) = olm(state.path(), &["dev", "up", "--node", "real"]);
    assert!(ok, "olm dev up --node real failed: {out}{err}");
    let _down = Down(state.path());
    let (_, status, _) = olm(state.path(), &["dev", "status"]);
    assert!(status.contains("node: olm-node (real)"), "{status}");

    // A second environment asks for a real node too: told clearly, nothing disturbed.
    let other = tempfile::tempdir().expect("temp dir");
    let (ok, out, err) = olm(other.path(), &["dev", "up", "--node", "real"]);
    let _other_down = Down(other.path());
    assert!(!ok, "a second real node started: {out}");
    assert!(
        err.contains("a real node already runs on this machine"),
        "{out}{err}"
    );
    // `auto` settles for the fake node and says why.
    let (ok, out, err) = olm(other.path(), &["dev", "up"]);
    assert!(ok, "{out}{err}");
    assert!(
        out.contains("no real node here (a real node already runs on this machine"),
        "{out}"
    );
    assert!(out.contains("node: kwok-node-0 (fake)"), "{out}");
    let (ok, _, err) = olm(other.path(), &["dev", "down"]);
    assert!(ok, "{err}");

    // The supervisor dies without tearing anything down …
    let pid = std::fs::read_to_string(state.path().join("dev/supervisor.pid")).unwrap();
    let killed = Command::new("kill")
        .args(["-KILL", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while Path::new(&format!("/proc/{}", pid.trim())).exists()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(
        olm_testenv::node::host::Footprint::now().record,
        "the killed node left its record"
    );
    // … and `down` puts the machine back.
    let (ok, out, err) = olm(state.path(), &["dev", "down"]);
    assert!(ok, "{err}");
    assert!(out.contains("put the machine back"), "{out}");
    assert_eq!(olm_testenv::node::host::Footprint::now(), before);
}
