//! Shared by the `olm dev` tests: run the built binary with a state folder of its own (so a
//! developer's environment is never touched), and stop the environment however a test ends.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Every test binary compiles this module and uses only part of it.
#![allow(dead_code)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `olm ARGS` with `OLM_CACHE_DIR=state`: whether it succeeded, its stdout and its stderr.
pub fn olm(state: &Path, args: &[&str]) -> (bool, String, String) {
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

/// [`olm`] that must succeed; its stdout.
pub fn ok(state: &Path, args: &[&str]) -> String {
    let (ok, out, err) = olm(state, args);
    assert!(ok, "olm {args:?}: {out}{err}");
    out
}

/// Stops the environment of a state folder even when an assertion fails half-way.
pub struct Down<'a>(pub &'a Path);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        let _ = olm(self.0, &["dev", "down"]);
    }
}

/// kubectl against `kubeconfig` with `stdin` on its standard input (nothing when `None`): its
/// output, whether it succeeded or not.
pub fn kubectl_output(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl runs");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).expect("write to kubectl");
    }
    drop(input);
    child.wait_with_output().expect("kubectl finishes")
}

/// A real-node environment `olm dev up --node real` started in `state`, with OLM as pods.
pub struct RealEnv {
    /// The dev registry (`host:port`).
    pub registry: String,
    /// The cluster's kubeconfig.
    pub kubeconfig: PathBuf,
    /// How long `olm dev up` took.
    pub up_took: Duration,
}

/// The address (`host:port`) of the registry of the environment in `state`.
pub fn registry(state: &Path) -> String {
    let status = ok(state, &["dev", "status"]);
    status
        .lines()
        .find_map(|l| l.strip_prefix("registry: "))
        .unwrap_or_else(|| panic!("no registry in {status}"))
        .trim()
        .to_owned()
}

/// Starts a real node with OLM as pods in `state` (stop it with [`Down`]).
pub fn up_real(state: &Path) -> RealEnv {
    let started = Instant::now();
    let up = ok(state, &["dev", "up", "--node", "real"]);
    let up_took = started.elapsed();
    assert!(up.contains("olm: pods in olmv1-system from "), "{up}");
    let registry = registry(state);
    let kubeconfig = PathBuf::from(ok(state, &["dev", "kubeconfig"]).trim());
    RealEnv {
        registry,
        kubeconfig,
        up_took,
    }
}

/// Polls `ok` every 200 ms until it holds, failing with `what` and what `explain` says after
/// `timeout`. How long it took.
pub fn wait_explained(
    what: &str,
    timeout: Duration,
    mut ok: impl FnMut() -> bool,
    explain: impl Fn() -> String,
) -> Duration {
    let started = Instant::now();
    while !ok() {
        assert!(
            started.elapsed() < timeout,
            "{what}: not after {timeout:?}\n{}",
            explain()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    started.elapsed()
}

/// The example operator, built with the same profile beside `olm`.
pub fn operator_binary() -> PathBuf {
    let binary = Path::new(env!("CARGO_BIN_EXE_olm")).with_file_name("example-operator");
    assert!(
        binary.is_file(),
        "{} is missing: build it first (cargo build -p example-operator; cargo test --workspace builds it)",
        binary.display()
    );
    binary
}
