//! A digest-keyed cache of unpacked images.
//!
//! Images are immutable once named by digest, so an unpacked tree can be reused for as long as
//! the digest is wanted, and a tag that moves simply maps to a new entry. Entries appear
//! atomically: an image is unpacked into a staging directory inside the cache root (same file
//! system) and renamed into place, so a reader never sees a half-unpacked tree and a crash leaves
//! only a staging directory, which the next [`ImageCache::clean_staging`] removes.
//!
//! Layout: `<root>/sha256/<hex>` for a whole image, `<root>/sha256/<hex>@<dir>` when only a
//! directory of it was kept (`…@configs`, or `…@catalog` for [`Filter::CatalogConfigs`]), each with a `….json` sidecar holding
//! the platform manifest digest and the config labels (written before the tree is renamed into
//! place, so a hit needs no registry round trip beyond resolving the tag); staging dirs
//! `<root>/.staging-*`.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::digest::Digest;
use crate::unpack::Filter;

/// What the cache knows about an unpacked image besides its files.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CacheMeta {
    /// Digest of the platform image manifest whose layers were unpacked.
    pub manifest_digest: String,
    /// The image config labels.
    pub labels: BTreeMap<String, String>,
}

/// A cached image: its tree and metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// The unpacked tree.
    pub path: PathBuf,
    /// Its metadata.
    pub meta: CacheMeta,
}

/// A directory of unpacked images keyed by digest.
#[derive(Debug, Clone)]
pub struct ImageCache {
    root: PathBuf,
}

impl ImageCache {
    /// A cache under `root` (created on first use).
    pub fn new(root: impl Into<PathBuf>) -> ImageCache {
        ImageCache { root: root.into() }
    }

    /// The cache root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the image `digest`, unpacked with `filter`, lives (whether or not it is there yet).
    pub fn path_for(&self, digest: &Digest, filter: &Filter) -> PathBuf {
        let name = match filter {
            Filter::All => digest.hex().to_string(),
            Filter::CatalogConfigs => format!("{}@catalog", digest.hex()),
            Filter::Under(dir) => {
                let dir = dir.to_string_lossy().replace('/', "_");
                format!("{}@{dir}", digest.hex())
            }
        };
        self.root.join("sha256").join(name)
    }

    /// The cached image, when both its tree and its metadata are there.
    pub fn get(&self, digest: &Digest, filter: &Filter) -> Option<CacheEntry> {
        let path = self.path_for(digest, filter);
        if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            return None;
        }
        let meta = fs::read(meta_path(&path)).ok()?;
        let meta: CacheMeta = serde_json::from_slice(&meta).ok()?;
        Some(CacheEntry { path, meta })
    }

    /// A fresh staging directory inside the cache root, for [`ImageCache::commit`].
    pub fn staging_dir(&self) -> io::Result<PathBuf> {
        fs::create_dir_all(&self.root)?;
        unique_dir(&self.root, ".staging-")
    }

    /// Moves a fully unpacked tree from `staged` (a directory inside a staging dir) to its place,
    /// after writing its metadata. When another process committed the same image meanwhile,
    /// theirs wins and `staged` is removed: the content is identical.
    pub fn commit(
        &self,
        staged: &Path,
        digest: &Digest,
        filter: &Filter,
        meta: &CacheMeta,
    ) -> io::Result<CacheEntry> {
        let dest = self.path_for(digest, filter);
        if let Some(parent) = dest.parent() {
            fs::create_dir_all(parent)?;
        }
        // Metadata first, each file renamed into place, so a tree is never without it.
        let staged_meta = staged.with_extension("meta-staged.json");
        fs::write(
            &staged_meta,
            serde_json::to_vec(meta).map_err(io::Error::other)?,
        )?;
        fs::rename(&staged_meta, meta_path(&dest))?;
        match fs::rename(staged, &dest) {
            Ok(()) => {}
            Err(_) if dest.is_dir() => {
                let _ = fs::remove_dir_all(staged);
            }
            Err(e) => return Err(e),
        }
        Ok(CacheEntry {
            path: dest,
            meta: meta.clone(),
        })
    }

    /// Removes every cached image except those in `keep` (any filter), like catalogd's cleanup
    /// of a catalog's previous digests.
    pub fn retain(&self, keep: &[Digest]) -> io::Result<()> {
        let dir = self.root.join("sha256");
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let hex = name.split(['@', '.']).next().unwrap_or("");
            if !keep.iter().any(|d| d.hex() == hex) {
                if entry.file_type()?.is_dir() {
                    fs::remove_dir_all(entry.path())?;
                } else {
                    fs::remove_file(entry.path())?;
                }
            }
        }
        Ok(())
    }

    /// Removes staging dirs left by interrupted unpacks. Only safe when no unpack into this cache
    /// is running, e.g. at process start.
    pub fn clean_staging(&self) -> io::Result<()> {
        let entries = match fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            if entry.file_name().to_string_lossy().starts_with(".staging-") {
                fs::remove_dir_all(entry.path())?;
            }
        }
        Ok(())
    }
}

/// `<tree>.json`.
fn meta_path(tree: &Path) -> PathBuf {
    let mut name = tree.as_os_str().to_owned();
    name.push(".json");
    PathBuf::from(name)
}

/// Creates `<parent>/<prefix><pid>-<n>` that did not exist before.
pub(crate) fn unique_dir(parent: &Path, prefix: &str) -> io::Result<PathBuf> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = parent.join(format!("{prefix}{}-{n}", std::process::id()));
        match fs::create_dir(&path) {
            Ok(()) => {
                use std::os::unix::fs::PermissionsExt;
                fs::set_permissions(&path, fs::Permissions::from_mode(0o700))?;
                return Ok(path);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(c: char) -> Digest {
        format!("sha256:{}", c.to_string().repeat(64))
            .parse()
            .expect("digest")
    }

    #[test]
    fn commit_is_atomic_and_retain_collects() {
        let root = tempfile::tempdir().expect("tempdir");
        let cache = ImageCache::new(root.path().join("cache"));
        let meta = CacheMeta {
            manifest_digest: digest('c').to_string(),
            labels: BTreeMap::from([("k".to_string(), "v".to_string())]),
        };
        let a = digest('a');
        assert_eq!(cache.get(&a, &Filter::All), None);
        let staging = cache.staging_dir().expect("staging");
        let staged = staging.join("fs");
        fs::create_dir(&staged).expect("mkdir");
        fs::write(staged.join("f"), b"x").expect("write");
        let entry = cache
            .commit(&staged, &a, &Filter::All, &meta)
            .expect("commit");
        assert_eq!(cache.get(&a, &Filter::All), Some(entry.clone()));
        assert_eq!(entry.meta, meta);
        assert!(!staged.exists());
        // A second commit of the same digest keeps the first tree.
        let staged2 = staging.join("fs2");
        fs::create_dir(&staged2).expect("mkdir");
        assert_eq!(
            cache
                .commit(&staged2, &a, &Filter::All, &meta)
                .expect("commit")
                .path,
            entry.path
        );
        assert!(!staged2.exists());
        // A tree without metadata is not a hit.
        fs::remove_file(meta_path(&entry.path)).expect("rm meta");
        assert_eq!(cache.get(&a, &Filter::All), None);

        let configs = Filter::Under("configs".into());
        let b = digest('b');
        let staged = staging.join("fs3");
        fs::create_dir(&staged).expect("mkdir");
        let b_entry = cache.commit(&staged, &b, &configs, &meta).expect("commit");
        assert!(b_entry.path.ends_with(format!("{}@configs", b.hex())));
        cache.retain(std::slice::from_ref(&b)).expect("retain");
        assert!(!entry.path.exists());
        assert!(cache.get(&b, &configs).is_some());
        assert_eq!(
            fs::read_dir(cache.root().join("sha256"))
                .expect("ls")
                .count(),
            2,
            "only b's tree and its metadata remain"
        );

        cache.clean_staging().expect("clean");
        assert_eq!(
            fs::read_dir(cache.root())
                .expect("ls")
                .filter(|e| e
                    .as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with('.')))
                .count(),
            0
        );
    }
}
