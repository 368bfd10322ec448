//! Shared by the CLI tests: run the built `olm` binary and find the shared test data.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Every test binary compiles this module and uses only part of it.
#![allow(dead_code)]

use std::process::Command;

/// The shared data folder (real catalogs, bundles, templates, upstream regression outputs).
pub const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data");

/// The result of one `olm` run.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `olm ARGS…` and captures its exit code and output.
pub fn olm(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(args)
        .output()
        .expect("olm runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
