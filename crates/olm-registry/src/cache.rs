//! The cache of a built [`Registry`]: one file, `olm-registry.v1` in the cache directory, holding
//! the registry as protobuf together with the digest of the catalog it was built from. A server
//! started on an unchanged catalog loads it instead of parsing, validating and converting again.
//!
//! The digest is SHA-256 over every regular file under the catalog directory, in path order:
//! each file's path relative to the directory, a NUL, its length and its bytes.

use std::path::{Path, PathBuf};

use prost::Message;
use sha2::{Digest, Sha256};

use crate::Registry;

/// The cache file's name in the cache directory.
pub const FILE: &str = "olm-registry.v1";

/// Why the cache cannot be used or written.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Reading the catalog or the cache, or writing the cache, failed.
    #[error("{what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// Where.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The cache was built from another catalog, and integrity is enforced.
    #[error("integrity check failed: cache requires rebuild: cache reports digest as {}, but computed digest is {}", olm_goenc::quote(.cached), olm_goenc::quote(.computed))]
    Stale {
        /// The digest the cache holds.
        cached: String,
        /// The catalog's.
        computed: String,
    },
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CacheError {
    let path = path.to_path_buf();
    move |source| CacheError::Io { what, path, source }
}

/// The digest of the catalog directory (or file) `root`.
///
/// # Errors
///
/// A file or directory that cannot be read.
pub fn digest(root: &Path) -> Result<String, CacheError> {
    let mut files = Vec::new();
    collect(root, root, &mut files)?;
    files.sort();
    let mut h = Sha256::new();
    for (rel, path) in files {
        let bytes = std::fs::read(&path).map_err(io("reading", &path))?;
        h.update(rel.as_bytes());
        h.update([0]);
        h.update((bytes.len() as u64).to_be_bytes());
        h.update(&bytes);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn collect(root: &Path, at: &Path, out: &mut Vec<(String, PathBuf)>) -> Result<(), CacheError> {
    let meta = std::fs::metadata(at).map_err(io("reading", at))?;
    if meta.is_file() {
        let rel = at
            .strip_prefix(root)
            .unwrap_or(at)
            .to_string_lossy()
            .into_owned();
        out.push((rel, at.to_path_buf()));
        return Ok(());
    }
    for entry in std::fs::read_dir(at).map_err(io("reading", at))? {
        let entry = entry.map_err(io("reading", at))?;
        collect(root, &entry.path(), out)?;
    }
    Ok(())
}

/// The registry cached in `dir`, if there is one that decodes.
///
/// # Errors
///
/// The file exists but cannot be read.
pub fn load(dir: &Path) -> Result<Option<Registry>, CacheError> {
    let path = dir.join(FILE);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(Registry::decode(bytes.as_slice()).ok()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io("reading", &path)(e)),
    }
}

/// The cache file's content for `registry` (what [`store`] writes): for images that carry the
/// cache built in advance.
pub fn bytes(registry: &Registry) -> Vec<u8> {
    registry.encode_to_vec()
}

/// Writes `registry` to `dir` (created if missing) through a temporary file, so a cut-short
/// write never leaves a half cache.
///
/// # Errors
///
/// The directory or file cannot be written.
pub fn store(dir: &Path, registry: &Registry) -> Result<(), CacheError> {
    std::fs::create_dir_all(dir).map_err(io("creating", dir))?;
    let path = dir.join(FILE);
    let tmp = dir.join(format!(".{FILE}.tmp"));
    std::fs::write(&tmp, bytes(registry)).map_err(io("writing", &tmp))?;
    std::fs::rename(&tmp, &path).map_err(io("writing", &path))?;
    Ok(())
}
