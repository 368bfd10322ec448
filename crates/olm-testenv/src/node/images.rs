//! Images a real node needs before any registry answers: the pause image every pod's sandbox
//! runs, built here from `node/pause.c` (a static binary in a one-layer image) and imported
//! into the node's containerd, since no registry that serves `registry.k8s.io` is reachable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use olm_image::assemble::{Entry, RunConfig, image_with_config, layer_from_entries};
use olm_image::{Digest, oci_archive};

use super::config::PAUSE_IMAGE;
use crate::Error;

const PAUSE_SOURCE: &str = include_str!("../../node/pause.c");

/// The pause binary, compiled once per source into the cache (`gcc -static`: the image has no
/// libc to link against) and reused after.
pub(crate) fn pause_binary(cache: &Path) -> Result<PathBuf, Error> {
    let digest = Digest::of(PAUSE_SOURCE.as_bytes());
    let hex = digest.as_str().trim_start_matches("sha256:");
    let dir = cache.join("node").join(format!("pause-{}", &hex[..16]));
    let binary = dir.join("pause");
    if binary.is_file() {
        return Ok(binary);
    }
    crate::fsutil::create_dir(&dir)?;
    let source = dir.join("pause.c");
    crate::fsutil::write_file(&source, PAUSE_SOURCE.as_bytes())?;
    let scratch = dir.join("pause.partial");
    let out = Command::new("gcc")
        .args(["-static", "-O2", "-s", "-o"])
        .arg(&scratch)
        .arg(&source)
        .output()
        .map_err(|e| {
            Error::NodeUnsupported(format!(
                "building the pause image needs a C compiler (gcc with a static libc, Debian \
                 packages gcc and libc6-dev): {e}"
            ))
        })?;
    if !out.status.success() {
        return Err(Error::NodeUnsupported(format!(
            "gcc could not build the pause binary: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    std::fs::rename(&scratch, &binary)
        .map_err(|e| Error::io(format!("moving {} into place", binary.display()), e))?;
    Ok(binary)
}

/// The pause image as an OCI archive, named [`PAUSE_IMAGE`].
pub(crate) fn pause_archive(binary: &Path) -> Result<Vec<u8>, Error> {
    let content =
        std::fs::read(binary).map_err(|e| Error::io(format!("reading {}", binary.display()), e))?;
    let layer = layer_from_entries(&[Entry {
        path: "pause".to_owned(),
        content: Some(content),
        mode: 0o755,
        owner: 0,
    }])
    .map_err(|e| Error::io("packing the pause image", std::io::Error::other(e)))?;
    let run = RunConfig {
        entrypoint: vec!["/pause".to_owned()],
        user: "65535:65535".to_owned(),
        ..RunConfig::default()
    };
    let image = image_with_config(BTreeMap::new(), &run, vec![layer]);
    oci_archive(&image, PAUSE_IMAGE).map_err(|e| Error::io("writing the pause image archive", e))
}

/// Imports an OCI archive into the node's containerd, in the namespace the kubelet uses.
pub(crate) fn import(socket: &Path, archive: &Path) -> Result<(), Error> {
    let out = Command::new("ctr")
        .arg("--address")
        .arg(socket)
        .args(["--namespace", "k8s.io", "images", "import"])
        .arg(archive)
        .output()
        .map_err(|e| Error::io("running ctr (Debian package containerd)", e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::io(
            format!("importing {} into containerd", archive.display()),
            std::io::Error::other(String::from_utf8_lossy(&out.stderr).trim().to_owned()),
        ))
    }
}
