//! `olm run` with OLM v0 registers the PackageManifest APIService only together with what
//! serves it, on a real control plane: not while no Service routes to its packageserver (an
//! unreachable APIService would keep every namespace deletion in the cluster `Terminating`), as
//! soon as one does, and no longer once it is gone or the process stops. With
//! `--packageserver-advertise-address` it routes the Service to itself, and takes the route away
//! again when it stops. A packageserver that cannot listen makes `/readyz` fail, saying why.
//!
//! Needs kubectl, the control plane binaries (`tools/controlplane/build.sh`) and an address of
//! this machine besides loopback (the aggregator may not use a loopback endpoint).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use olm_testenv::ControlPlane;

mod run_common;

use run_common::{OlmRun, exists, get, kubectl, wait_for};

const APISERVICE: &str = "v1.packages.operators.coreos.com";

fn available(kubeconfig: &Path) -> String {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args([
            "get",
            "apiservice",
            APISERVICE,
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Available\")].status}",
        ])
        .output()
        .expect("kubectl runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Creates namespace `name`, deletes it and waits (at most 30 s) until it is gone.
fn namespace_round_trip(kubeconfig: &Path, name: &str) -> Duration {
    kubectl(kubeconfig, &["create", "namespace", name], None);
    kubectl(
        kubeconfig,
        &["delete", "namespace", name, "--wait=false"],
        None,
    );
    wait_for(
        &format!("namespace {name} to be deleted"),
        Duration::from_secs(30),
        || !exists(kubeconfig, &["namespace", name]),
    )
}

/// A free port on `address`.
fn free_port(address: std::net::Ipv4Addr) -> u16 {
    std::net::TcpListener::bind((address, 0))
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_apiservice_is_registered_only_while_it_is_served() {
    let plane = ControlPlane::start()
        .await
        .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
    let node = plane
        .node_address()
        .expect("this machine has no address but loopback: the aggregator cannot reach olm");
    let kc = plane.kubeconfig_path();
    let tmp = tempfile::tempdir().unwrap();

    // OLM v0 runs and serves PackageManifests, but nothing routes to it: nothing is registered,
    // and namespaces are deleted.
    let port = free_port(node);
    let bind = format!("{node}:{port}");
    let first = OlmRun::start_with(
        kc,
        tmp.path(),
        &["--olm=both", "--packageserver-bind-address", &bind],
    );
    wait_for("the packageserver", Duration::from_secs(60), || {
        first
            .stderr()
            .contains("packageserver: serving PackageManifests")
    });
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        !exists(kc, &["apiservice", APISERVICE]),
        "{}",
        first.stderr()
    );
    let took = namespace_round_trip(kc, "without-route");
    eprintln!("without a route: no APIService, a namespace deleted in {took:?}");

    // Someone routes the Service to it: registered, and available.
    let route = format!(
        r#"{{"apiVersion": "v1", "kind": "List", "items": [
        {{"apiVersion": "v1", "kind": "Service",
          "metadata": {{"name": "packageserver-service", "namespace": "olmv1-system"}},
          "spec": {{"ports": [{{"name": "https", "port": 443}}]}}}},
        {{"apiVersion": "v1", "kind": "Endpoints",
          "metadata": {{"name": "packageserver-service", "namespace": "olmv1-system"}},
          "subsets": [{{"addresses": [{{"ip": "{node}"}}], "ports": [{{"name": "https", "port": {port}}}]}}]}}]}}"#
    );
    kubectl(kc, &["apply", "-f", "-"], Some(&route));
    let took = wait_for(
        "the APIService to be registered and available",
        Duration::from_secs(60),
        || available(kc) == "True",
    );
    eprintln!("routed: available after {took:?}");
    kubectl(kc, &["get", "packagemanifests", "-A"], None);
    namespace_round_trip(kc, "with-route");

    // The Service goes (its Endpoints with it): so does the registration.
    kubectl(
        kc,
        &[
            "delete",
            "service",
            "packageserver-service",
            "-n",
            "olmv1-system",
        ],
        None,
    );
    wait_for(
        "the APIService to be removed with its Service",
        Duration::from_secs(60),
        || !exists(kc, &["apiservice", APISERVICE]),
    );
    namespace_round_trip(kc, "route-removed");
    let (code, stderr, _) = first.stop(rustix::process::Signal::TERM);
    assert_eq!(code, Some(0), "{stderr}");

    // Routing to itself: the Service, its Endpoints and the APIService, all gone once it stops.
    let second = OlmRun::start_with(
        kc,
        tmp.path(),
        &[
            "--olm=both",
            "--packageserver-bind-address",
            &format!("{node}:0"),
            "--packageserver-advertise-address",
            &node.to_string(),
        ],
    );
    let took = wait_for(
        "the APIService of an olm routing to itself",
        Duration::from_secs(60),
        || available(kc) == "True",
    );
    eprintln!("routing to itself: available after {took:?}");
    let endpoints = kubectl(
        kc,
        &[
            "get",
            "endpoints",
            "packageserver-service",
            "-n",
            "olmv1-system",
            "-o",
            "jsonpath={.subsets[0].addresses[0].ip}",
        ],
        None,
    );
    assert_eq!(endpoints, node.to_string());
    kubectl(kc, &["get", "packagemanifests", "-A"], None);
    let (code, stderr, _) = second.stop(rustix::process::Signal::TERM);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!exists(kc, &["apiservice", APISERVICE]), "{stderr}");
    assert!(
        !exists(
            kc,
            &["service", "packageserver-service", "-n", "olmv1-system"]
        ),
        "{stderr}"
    );
    assert!(
        !exists(
            kc,
            &["endpoints", "packageserver-service", "-n", "olmv1-system"]
        ),
        "{stderr}"
    );
    let took = namespace_round_trip(kc, "after-stop");
    eprintln!("after a stop: a namespace deleted in {took:?}");
}

/// A packageserver that cannot listen (another process holds its port) fails `/readyz` and
/// says why, rather than leaving the process ready while it serves nothing; once the port is
/// free it listens, and the process is ready again.
#[tokio::test(flavor = "multi_thread")]
async fn readiness_fails_while_the_packageserver_cannot_listen() {
    let plane = ControlPlane::start()
        .await
        .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
    let kc = plane.kubeconfig_path();
    let tmp = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr");
    let run = OlmRun::spawn_with(
        kc,
        tmp.path(),
        &[
            "--olm=v0",
            "--packageserver-bind-address",
            &addr.to_string(),
        ],
    );
    let readyz = || {
        get(run.probes, "/readyz")
            .map(|(status, body)| format!("{status}\n{body}"))
            .unwrap_or_default()
    };
    let mut answer = String::new();
    wait_for("/readyz to fail", Duration::from_secs(90), || {
        answer = readyz();
        answer.contains(" 500 ")
    });
    assert!(
        answer.contains(&format!(
            "[-]packageserver failed: cannot listen on {addr} (--packageserver-bind-address): "
        )),
        "{answer}\n{}",
        run.stderr()
    );
    assert!(answer.contains("in use"), "{answer}");
    eprintln!("with its port taken: {answer}");

    drop(taken);
    let took = wait_for("/readyz to pass again", Duration::from_secs(30), || {
        readyz().contains(" 200 ")
    });
    eprintln!("ready {took:?} after the port was freed");
    assert!(
        run.stderr()
            .contains("packageserver: serving PackageManifests"),
        "{}",
        run.stderr()
    );
    let (code, stderr, _) = run.stop(rustix::process::Signal::TERM);
    assert_eq!(code, Some(0), "{stderr}");
}
