//! Where the control plane binaries are found.
//!
//! They are built from Go modules by `tools/controlplane/build.sh` into a version-stamped cache
//! folder, never committed and never downloaded at test time, so a missing binary is a setup problem
//! that the error message explains how to fix.

use std::path::{Path, PathBuf};

use crate::Error;

/// The control plane version set (Kubernetes, etcd, kwok), shared with the build script so that both
/// agree on the cache folder.
pub const CONTROLPLANE_VERSION: &str =
    trim_ascii(include_str!("../../../tools/controlplane/VERSION"));

/// Environment variable naming a folder that holds the binaries, overriding the cache folder.
pub const BIN_ENV: &str = "OLM_CONTROLPLANE_BIN";

/// The script that builds the binaries, as users should run it from the repository root.
pub const BUILD_SCRIPT: &str = "tools/controlplane/build.sh";

/// Files the control plane needs from the bin folder.
pub(crate) const REQUIRED: [&str; 6] = [
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kwok",
    "kwok-stages.yaml",
];

const fn trim_ascii(s: &str) -> &str {
    s.trim_ascii()
}

/// The folder the binaries are looked up in: `$OLM_CONTROLPLANE_BIN`, else
/// `${OLM_CACHE_DIR:-~/.cache/olm}/controlplane/<version>/bin` (the build script's output).
pub fn bin_dir() -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os(BIN_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    Ok(cache_dir()?
        .join("controlplane")
        .join(CONTROLPLANE_VERSION)
        .join("bin"))
}

/// `${OLM_CACHE_DIR:-~/.cache/olm}`: the project's cache root, also used by `olm dev`.
pub fn cache_dir() -> Result<PathBuf, Error> {
    if let Some(dir) = std::env::var_os("OLM_CACHE_DIR").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .ok_or(Error::NoHome)?;
    Ok(PathBuf::from(home).join(".cache").join("olm"))
}

/// The first executable `name` on `PATH` (the node's Debian-installed parts: containerd, ctr).
pub(crate) fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|dir| dir.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Checks that every required file is present in `dir`.
pub(crate) fn check(dir: &Path) -> Result<(), Error> {
    let missing: Vec<&str> = REQUIRED
        .iter()
        .copied()
        .filter(|name| !dir.join(name).is_file())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Error::BinariesMissing {
            dir: dir.to_owned(),
            missing: missing.join(", "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_names_all_three_components() {
        assert!(CONTROLPLANE_VERSION.starts_with("k8s-"));
        assert!(CONTROLPLANE_VERSION.contains("_etcd-"));
        assert!(CONTROLPLANE_VERSION.contains("_kwok-"));
        assert!(!CONTROLPLANE_VERSION.contains(char::is_whitespace));
    }

    #[test]
    fn missing_binaries_name_the_build_script() {
        let dir = tempfile::tempdir().expect("temp dir");
        let err = check(dir.path()).expect_err("empty folder");
        let msg = err.to_string();
        assert!(msg.contains(BUILD_SCRIPT), "{msg}");
        assert!(msg.contains("kube-apiserver"), "{msg}");
    }
}
