//! `olm run` keeps answering its probes and catalog requests while clients try to exhaust its
//! connections, and its unauthenticated catalog port does not tell who installed what unless
//! asked to. Against a real control plane and registry.
//!
//! The attack is the one that took `/readyz` down before connections were shed: slow clients
//! that open more connections than a listener serves (1,024), each sending part of a request head
//! and one more header line a second, reconnecting as soon as they are closed. They come from
//! `127.0.0.2` and up; the measured requests from `127.0.0.1`, on a new connection each, at the
//! kubelet's default probe timeout (1 s).
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`), Debian's `docker-registry`
//! and kubectl. Alone in its file: the figures are latencies, which other tests running in the
//! same process would skew.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::time::Duration;

use olm_testenv::ControlPlane;
use olm_testenv::registry::Registry;
use olm_testenv::slow_clients::{Attack, during, expect_fast, loopback};

mod run_common;

use run_common::{OlmRun, get, kubectl, push_small_catalog};

/// Slow connections per attack, per listener.
const SLOW: usize = 1200;

/// Requests measured per listener in each phase.
const MEASURED: usize = 100;

/// The p99 every measured request must stay under.
const P99: Duration = Duration::from_millis(100);

/// The catalog's content and `/readyz` of `run`, measured side by side.
async fn measure_both(phase: &str, run: &OlmRun) -> Result<(), String> {
    let targets = [
        ("catalog", run.catalogs, "/catalogs/small/api/v1/all"),
        ("/readyz", run.probes, "/readyz"),
    ];
    expect_fast(phase, &targets, MEASURED, P99).await
}

/// [`measure_both`] while `attack` runs against the catalog and probe ports.
async fn under_attack(phase: &str, run: &OlmRun, attack: impl Fn(SocketAddr) -> Attack) {
    let targets = [attack(run.catalogs), attack(run.probes)];
    let (fast, note) = during(&targets, Duration::from_secs(3), measure_both(phase, run))
        .await
        .expect("slow clients");
    println!("{phase}: {note}");
    fast.unwrap_or_else(|e| panic!("{e}"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_and_catalogs_answer_while_slow_clients_hold_connections() {
    // The slow clients' ends are this process's; olm run inherits the raised limit.
    olm_testenv::slow_clients::raise_open_files(8 * SLOW as u64 + 1024).unwrap();
    let plane = ControlPlane::start()
        .await
        .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
    let registry = Registry::start().unwrap_or_else(|e| panic!("a local registry: {e}"));
    let kc = plane.kubeconfig_path().to_owned();
    let tmp = tempfile::tempdir().unwrap();
    let image = format!("{}/catalogs/small:latest", registry.addr());
    push_small_catalog(tmp.path(), &image);

    let run = OlmRun::start_with(&kc, tmp.path(), &["--olm=v1"]);
    let objects = format!(
        r#"{{"apiVersion": "v1", "kind": "List", "items": [
        {{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
          "metadata": {{"name": "small"}},
          "spec": {{"source": {{"type": "Image", "image": {{"ref": "{image}"}}}}}}}},
        {{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
          "metadata": {{"name": "private-extension"}},
          "spec": {{"namespace": "private-namespace", "serviceAccount": {{"name": "installer"}},
            "source": {{"sourceType": "Catalog", "catalog": {{"packageName": "p"}}}}}}}}]}}"#
    );
    kubectl(&kc, &["apply", "-f", "-"], Some(&objects));
    kubectl(
        &kc,
        &[
            "wait",
            "--for=condition=Serving",
            "clustercatalog/small",
            "--timeout=120s",
        ],
        None,
    );

    // The cluster page is off by default: whoever reaches the catalog port learns nothing of
    // the extensions.
    let (status, body) = get(run.catalogs, "/browse/cluster").expect("an answer");
    assert!(status.contains(" 404 "), "{status}\n{body}");
    assert!(!body.contains("private-extension"), "{body}");
    let (_, catalogs_page) = get(run.catalogs, "/browse/").expect("an answer");
    assert!(
        !catalogs_page.contains("/browse/cluster"),
        "{catalogs_page}"
    );

    let idle = measure_both("idle", &run).await;
    idle.unwrap_or_else(|e| panic!("{e}"));
    under_attack("one client, 1,200 slow connections", &run, |target| {
        Attack {
            head: "GET /catalogs/small/api/v1/all HTTP/1.1\r\nHost: localhost\r\n".to_owned(),
            ..Attack::one_client(target, loopback(2), SLOW)
        }
    })
    .await;
    under_attack("20 clients, 1,200 slow connections", &run, |target| {
        Attack {
            sources: (10..30).map(loopback).collect(),
            per_source: SLOW / 20,
            ..Attack::one_client(target, loopback(10), 0)
        }
    })
    .await;
    let (code, stderr, _) = run.stop(rustix::process::Signal::TERM);
    assert_eq!(code, Some(0), "{stderr}");

    // Asked for, the page lists the extension.
    let run = OlmRun::start_with(&kc, tmp.path(), &["--olm=v1", "--browse-cluster"]);
    let mut page = String::new();
    run_common::wait_for(
        "the cluster page to list the extension",
        Duration::from_secs(30),
        || {
            page = get(run.catalogs, "/browse/cluster")
                .map(|(status, body)| format!("{status}\n{body}"))
                .unwrap_or_default();
            page.contains(" 200 ") && page.contains("private-extension")
        },
    );
    assert!(page.contains("private-namespace"), "{page}");
    let (code, stderr, _) = run.stop(rustix::process::Signal::TERM);
    assert_eq!(code, Some(0), "{stderr}");
}
