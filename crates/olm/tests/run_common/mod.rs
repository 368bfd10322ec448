//! Shared by the `olm run` tests: start the built binary against a control plane on free
//! loopback ports, wait until it is ready, read its endpoints, stop it with a signal.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Every test binary compiles this module and uses only part of it.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether `kubectl get ARGS` finds the object.
pub fn exists(kubeconfig: &Path, args: &[&str]) -> bool {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("get")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Polls `ok` every 200 ms until it holds; fails the test after `timeout`. How long it took.
pub fn wait_for(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !ok() {
        assert!(started.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
    started.elapsed()
}

/// Runs kubectl against `kubeconfig` with `stdin` given, and returns its stdout; fails the
/// test when kubectl fails.
pub fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "kubectl {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);
pub const READY_TIMEOUT: Duration = Duration::from_secs(90);

pub fn free_addr() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr")
}

/// `GET path` on `addr`: the status line and the body (`Connection: close`).
pub fn get(addr: SocketAddr, path: &str) -> Option<(String, String)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let (head, body) = out.split_once("\r\n\r\n")?;
    Some((head.lines().next()?.to_owned(), body.to_owned()))
}

/// Pushes a one-package catalog, written under `dir`, to `image` with `olm image push-catalog`.
pub fn push_small_catalog(dir: &Path, image: &str) {
    let catalog = dir.join("catalog/p");
    std::fs::create_dir_all(&catalog).expect("mkdir");
    std::fs::write(
        catalog.join("catalog.json"),
        r#"{"schema":"olm.package","name":"p","defaultChannel":"stable"}"#,
    )
    .expect("write");
    let pushed = Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(["image", "push-catalog", "--content-only"])
        .arg(dir.join("catalog"))
        .arg(image)
        .output()
        .expect("olm runs");
    assert!(pushed.status.success(), "{pushed:?}");
}

/// The running `olm run` and its addresses.
pub struct OlmRun {
    pub child: Child,
    pub catalogs: SocketAddr,
    pub probes: SocketAddr,
    pub metrics: SocketAddr,
    /// Where its stderr goes: a file, so that a chatty run never blocks on a full pipe.
    pub log: std::path::PathBuf,
}

impl OlmRun {
    /// Starts `olm run` with its caches and log under `dir`.
    pub fn start(kubeconfig: &Path, dir: &Path) -> OlmRun {
        OlmRun::start_with(kubeconfig, dir, &[])
    }

    /// [`OlmRun::start`] with more flags.
    pub fn start_with(kubeconfig: &Path, dir: &Path, extra: &[&str]) -> OlmRun {
        let mut run = OlmRun::spawn_with(kubeconfig, dir, extra);
        run.wait_ready();
        run
    }

    /// [`OlmRun::start_with`] without waiting until it is ready.
    pub fn spawn_with(kubeconfig: &Path, dir: &Path, extra: &[&str]) -> OlmRun {
        let (catalogs, probes, metrics) = (free_addr(), free_addr(), free_addr());
        let log = dir.join(format!("olm-run-{}.log", catalogs.port()));
        let stderr = std::fs::File::create(&log).expect("log file");
        let child = Command::new(env!("CARGO_BIN_EXE_olm"))
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-path")
            .arg(dir.join("cache"))
            .args(["--system-namespace", "olmv1-system"])
            .args(
                (!extra
                    .iter()
                    .any(|a| a.starts_with("--catalogs-server-addr")))
                .then_some(["--catalogs-server-addr", &catalogs.to_string()])
                .into_iter()
                .flatten(),
            )
            .args(
                (!extra.iter().any(|a| a.starts_with("--external-address")))
                    .then_some(["--external-address", &catalogs.to_string()])
                    .into_iter()
                    .flatten(),
            )
            .args(["--health-probe-bind-address", &probes.to_string()])
            .args(["--metrics-bind-address", &metrics.to_string()])
            // Plain unless a test asks for it secure: most read /metrics without a token.
            .args(
                (!extra.iter().any(|a| a.starts_with("--metrics-secure")))
                    .then_some("--metrics-secure=false"),
            )
            .args(extra)
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("olm run starts");
        OlmRun {
            child,
            catalogs,
            probes,
            metrics,
            log,
        }
    }

    pub fn wait_ready(&mut self) {
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

    /// What it logged so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn vm_rss_kib(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    /// Sends `signal`, waits for the exit and returns the exit code and stderr.
    pub fn stop(mut self, signal: rustix::process::Signal) -> (Option<i32>, String, Duration) {
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

/// Runs the built `olm` with `args` and `stdin`; returns stdout, failing the test when it fails.
pub fn olm_ok(args: &[&str], stdin: Option<&str>) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("olm runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.unwrap_or_default().as_bytes())
        .expect("write stdin");
    let out = child.wait_with_output().expect("olm finishes");
    assert!(
        out.status.success(),
        "olm {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Pushes the two bundles of `examples/` to `registry`, renders the example catalog from them
/// with `olm catalog template basic` under `dir`, validates it and pushes it; returns the
/// catalog image, `<registry>/examples/catalog:latest`.
pub fn push_example_catalog(dir: &Path, registry: &str) -> String {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    for version in ["0.1.0", "0.2.0"] {
        let bundle = examples.join(format!("bundles/example-operator.v{version}"));
        olm_ok(
            &[
                "image",
                "push-bundle",
                bundle.to_str().expect("utf-8 path"),
                &format!("{registry}/examples/example-operator-bundle:v{version}"),
            ],
            None,
        );
    }
    let template = std::fs::read_to_string(examples.join("catalog/template.yaml"))
        .expect("template")
        .replace("${REGISTRY}", registry);
    let rendered = olm_ok(
        &["catalog", "template", "basic", "-", "-o", "yaml"],
        Some(&template),
    );
    let catalog = dir.join("catalog");
    std::fs::create_dir_all(&catalog).expect("mkdir");
    std::fs::write(catalog.join("catalog.yaml"), rendered).expect("write catalog");
    let catalog = catalog.to_str().expect("utf-8 path");
    olm_ok(&["catalog", "validate", catalog], None);
    let image = format!("{registry}/examples/catalog:latest");
    olm_ok(
        &["image", "push-catalog", "--content-only", catalog, &image],
        None,
    );
    image
}
