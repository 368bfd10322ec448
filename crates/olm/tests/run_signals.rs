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

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use olm_testenv::ControlPlane;

const STOP_TIMEOUT: Duration = Duration::from_secs(10);
const READY_TIMEOUT: Duration = Duration::from_secs(90);

fn free_addr() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr")
}

/// `GET path` on `addr`: the status line and the body (`Connection: close`).
fn get(addr: SocketAddr, path: &str) -> Option<(String, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    Some((head.lines().next()?.to_owned(), body.to_owned()))
}

/// The running `olm run` and its addresses.
struct OlmRun {
    child: Child,
    probes: SocketAddr,
    metrics: SocketAddr,
}

impl OlmRun {
    fn start(kubeconfig: &Path, cache: &Path) -> OlmRun {
        let (catalogs, probes, metrics) = (free_addr(), free_addr(), free_addr());
        let child = Command::new(env!("CARGO_BIN_EXE_olm"))
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-path")
            .arg(cache)
            .args(["--system-namespace", "olmv1-system"])
            .args(["--catalogs-server-addr", &catalogs.to_string()])
            .args(["--external-address", &catalogs.to_string()])
            .args(["--health-probe-bind-address", &probes.to_string()])
            .args(["--metrics-bind-address", &metrics.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("olm run starts");
        let mut run = OlmRun {
            child,
            probes,
            metrics,
        };
        run.wait_ready();
        run
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if get(self.probes, "/readyz").is_some_and(|(status, _)| status.contains(" 200 ")) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("olm run exited early: {status}; stderr:\n{}", self.stderr());
            }
            assert!(Instant::now() < deadline, "olm run did not become ready");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn stderr(&mut self) -> String {
        let mut stderr = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            let _ = err.read_to_string(&mut stderr);
        }
        stderr
    }

    fn vm_rss_kib(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    /// Sends `signal`, waits for the exit and returns the exit code and stderr.
    fn stop(mut self, signal: rustix::process::Signal) -> (Option<i32>, String, Duration) {
        let pid = i32::try_from(self.child.id())
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .expect("pid");
        rustix::process::kill_process(pid, signal).expect("signal sent");
        let signalled = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                let stderr = self.stderr();
                return (status.code(), stderr, signalled.elapsed());
            }
            if signalled.elapsed() > STOP_TIMEOUT {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "olm run still running {STOP_TIMEOUT:?} after {signal:?}; stderr:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for OlmRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

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
    for controller in ["clusterextension", "clusterobjectset"] {
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
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\n\
         clusters: [{name: c, cluster: {server: \"http://127.0.0.1:1\"}}]\n\
         users: [{name: u, user: {}}]\n\
         contexts: [{name: x, context: {cluster: c, user: u}}]\n\
         current-context: x\n",
    )
    .expect("write kubeconfig");
    let child = Command::new(env!("CARGO_BIN_EXE_olm"))
        .arg("run")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--cache-path")
        .arg(tmp.path().join("cache"))
        .args(["--catalogs-server-addr", &free_addr().to_string()])
        .args([
            "--health-probe-bind-address",
            "0",
            "--metrics-bind-address",
            "0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("olm run starts");
    std::thread::sleep(Duration::from_millis(500));
    let run = OlmRun {
        child,
        probes: free_addr(),
        metrics: free_addr(),
    };
    let (code, stderr, took) = run.stop(rustix::process::Signal::TERM);
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    assert!(took < STOP_TIMEOUT, "{took:?}");
}
