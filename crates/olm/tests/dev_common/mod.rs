//! Shared by the `olm dev` tests: run the built binary with a state folder of its own (so a
//! developer's environment is never touched), and stop the environment however a test ends.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Every test binary compiles this module and uses only part of it.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

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
