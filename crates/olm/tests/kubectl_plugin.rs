//! `olm` as a kubectl plugin: linked as `kubectl-olm` on the PATH, `kubectl olm …` runs it, and
//! its usage names it `kubectl olm`. Through the real kubectl's plugin lookup.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used)]

use std::process::Command;

#[test]
fn kubectl_olm_runs_olm() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_olm"), dir.path().join("kubectl-olm")).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |args: &[&str]| {
        Command::new("kubectl")
            .args(args)
            .env("PATH", &path)
            .output()
            .expect("kubectl runs (scripts/setup.sh installs it)")
    };
    let version = run(&["olm", "--version"]);
    assert!(version.status.success(), "{version:?}");
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        format!("olm {}", env!("CARGO_PKG_VERSION"))
    );
    let listed = run(&["plugin", "list"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("kubectl-olm"),
        "{listed:?}"
    );
    let help = run(&["olm", "catalog", "--help"]);
    assert!(help.status.success(), "{help:?}");
    assert!(
        String::from_utf8_lossy(&help.stdout).contains("Usage: kubectl olm catalog"),
        "{}",
        String::from_utf8_lossy(&help.stdout)
    );
}
