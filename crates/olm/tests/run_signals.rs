//! `olm run` against a real control plane: it creates the system namespace and installs the OLM
//! v1 CRDs, answers its probes, serves one `/metrics` in controller-runtime's names plus
//! catalogd's, and stops as Kubernetes stops a pod — SIGTERM (or Ctrl-C's SIGINT) makes it exit
//! 0 promptly.
//!
//! Also prints a figure: the resident memory (VmRSS) of an idle `olm run` process. See it with
//! `cargo test -p olm --test run_signals -- --nocapture`.
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use olm_testenv::ControlPlane;

mod run_common;

use run_common::{OlmRun, STOP_TIMEOUT, free_addr, get};

#[tokio::test]
async fn olm_run_serves_probes_and_metrics_and_stops_on_signals() {
    let plane = match ControlPlane::start().await {
        Ok(p) => p,
        Err(e) => panic!("starting the local control plane failed: {e}"),
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let run = OlmRun::start(plane.kubeconfig_path(), tmp.path());

    // What startup did on the cluster.
    let client = plane.client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    assert!(
        namespaces
            .get_opt("olmv1-system")
            .await
            .expect("get")
            .is_some(),
        "the system namespace is created"
    );
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    for name in [
        "clustercatalogs.olm.operatorframework.io",
        "clusterextensions.olm.operatorframework.io",
        "clusterobjectsets.olm.operatorframework.io",
    ] {
        assert!(crds.get_opt(name).await.expect("get").is_some(), "{name}");
    }

    let (status, body) = get(run.probes, "/healthz").expect("healthz answers");
    assert!(status.contains(" 200 "), "{status}");
    assert_eq!(body, "ok");

    let (status, metrics) = get(run.metrics, "/metrics").expect("metrics answer");
    assert!(status.contains(" 200 "), "{status}");
    for family in [
        "catalogd_http_request_duration_seconds",
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds",
        "workqueue_depth",
    ] {
        assert!(
            metrics.contains(&format!("# TYPE {family} ")),
            "{family} missing from /metrics:\n{metrics}"
        );
    }
    for controller in ["clustercatalog", "clusterextension", "clusterobjectset"] {
        assert!(
            metrics.contains(&format!(
                "controller_runtime_reconcile_total{{controller=\"{controller}\",result=\"error\"}} "
            )),
            "the {controller} controller's series start at zero:\n{metrics}"
        );
    }
    assert!(
        get(run.probes, "/metrics").is_some_and(|(status, _)| status.contains(" 404 ")),
        "with an address of its own, /metrics is not on the probe port"
    );

    // The figure: resident memory once startup is over and nothing is to be done.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let rss = run.vm_rss_kib();
    println!(
        "olm run, idle (no catalogs, no extensions), {} build: VmRSS {:.1} MiB",
        if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        },
        rss as f64 / 1024.0
    );

    let (code, stderr, took) = run.stop(rustix::process::Signal::TERM);
    assert_eq!(
        code,
        Some(0),
        "exit status after SIGTERM; stderr:\n{stderr}"
    );
    assert!(stderr.contains("SIGTERM"), "the stop is logged:\n{stderr}");
    assert!(stderr.contains("stopped"), "the end is logged:\n{stderr}");
    assert!(took < STOP_TIMEOUT, "{took:?}");

    // A second start finds the namespace and CRDs in place (and updates the CRDs); Ctrl-C stops
    // it as SIGTERM does.
    let run = OlmRun::start(plane.kubeconfig_path(), tmp.path());
    let (code, stderr, _) = run.stop(rustix::process::Signal::INT);
    assert_eq!(code, Some(0), "exit status after SIGINT; stderr:\n{stderr}");
    assert!(stderr.contains("SIGINT"), "the stop is logged:\n{stderr}");
}

/// A SIGTERM while `olm run` still waits for an API server that does not answer stops it
/// promptly, with exit status 0.
#[test]
fn sigterm_during_startup_exits_zero() {
    let tmp = tempfile::tempdir().expect("tmp");
    let kubeconfig = tmp.path().join("kubeconfig");
    let log = tmp.path().join("olm-run.log");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\n\
         clusters: [{name: c, cluster: {server: \"http://127.0.0.1:1\"}}]\n\
         users: [{name: u, user: {}}]\n\
         contexts: [{name: x, context: {cluster: c, user: u}}]\n\
         current-context: x\n",
    )
    .expect("write kubeconfig");
    let catalogs = free_addr();
    let child = Command::new(env!("CARGO_BIN_EXE_olm"))
        .arg("run")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--cache-path")
        .arg(tmp.path().join("cache"))
        .args(["--catalogs-server-addr", &catalogs.to_string()])
        .args([
            "--health-probe-bind-address",
            "0",
            "--metrics-bind-address",
            "0",
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log file"))
        .spawn()
        .expect("olm run starts");
    std::thread::sleep(Duration::from_millis(500));
    let run = OlmRun {
        child,
        catalogs,
        probes: free_addr(),
        metrics: free_addr(),
        log,
    };
    let (code, stderr, took) = run.stop(rustix::process::Signal::TERM);
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    assert!(took < STOP_TIMEOUT, "{took:?}");
}
