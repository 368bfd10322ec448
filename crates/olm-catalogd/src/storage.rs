//! Served catalog content on disk, keyed by catalog name and image digest, surviving restarts.
//!
//! Layout under the storage root:
//!
//! ```text
//! <root>/<catalog>/<digest-hex>/catalog.jsonl   canonical FBC, one blob per line
//! <root>/<catalog>/<digest-hex>/index.json      metas index (see crate::index)
//! <root>/<catalog>/current.json                 which digest is served, and when it was unpacked
//! <root>/<catalog>/.staging-*                   half-written content (removed at start)
//! ```
//!
//! A store writes the new digest directory beside the old one, syncs it, renames it into place,
//! then replaces `current.json` by rename; only then are older digest directories removed. A crash
//! at any point leaves either the old or the new content served, never a mix. Readers hold an
//! `Arc` of the entry they started with and an open file, so replacing or deleting content never
//! cuts a response short.
//!
//! Unlike upstream, which empties its cache directory at start and re-pulls every catalog, the
//! entries found here are served at once after a restart.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::index::{Index, Section};

/// The file served at `/api/v1/all`.
pub const CATALOG_FILE: &str = "catalog.jsonl";
/// The metas index beside it.
pub const INDEX_FILE: &str = "index.json";
/// Which digest is current.
pub const CURRENT_FILE: &str = "current.json";

/// What `current.json` records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The digest-pinned reference the content came from.
    pub resolved_ref: String,
    /// `sha256:<hex>`.
    pub digest: String,
    /// When the content was unpacked (whole seconds, as `lastUnpacked`).
    pub unpacked_at: jiff::Timestamp,
    /// When the source was last checked successfully (the poll clock survives restarts); absent
    /// in records written before polls were recorded, which makes a poll due.
    #[serde(default)]
    pub polled_at: Option<jiff::Timestamp>,
}

/// One served catalog.
#[derive(Debug)]
pub struct Entry {
    /// What was stored.
    pub record: Record,
    /// `catalog.jsonl`.
    pub path: PathBuf,
    /// Its size.
    pub size: u64,
    /// Its modification time (`Last-Modified`).
    pub modified: SystemTime,
    /// The metas index.
    pub index: Arc<Index>,
}

/// Why content could not be stored or read.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The catalog directory of the image could not be loaded as FBC.
    #[error("{0}")]
    Load(#[from] olm_catalog::LoadError),
    /// File-system trouble.
    #[error("{path}: {source}")]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> StorageError + '_ {
    move |source| StorageError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The set of served catalogs.
#[derive(Debug)]
pub struct Storage {
    root: PathBuf,
    entries: RwLock<BTreeMap<String, Arc<Entry>>>,
}

impl Storage {
    /// Opens (creating) the storage root, removes half-written content, and loads every complete
    /// entry so it can be served immediately.
    pub fn open(root: impl Into<PathBuf>) -> Result<Storage, StorageError> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(io_err(&root))?;
        let mut entries = BTreeMap::new();
        for dir in fs::read_dir(&root).map_err(io_err(&root))? {
            let dir = dir.map_err(io_err(&root))?;
            let name = dir.file_name().to_string_lossy().into_owned();
            if !dir.file_type().map(|t| t.is_dir()).unwrap_or(false) || name.starts_with('.') {
                continue;
            }
            remove_staging(&dir.path())?;
            // A catalog whose content is unreadable is simply not served; the controller will
            // find it missing and unpack it again.
            if let Ok(entry) = load_entry(&dir.path()) {
                entries.insert(name, Arc::new(entry));
            }
        }
        Ok(Storage {
            root,
            entries: RwLock::new(entries),
        })
    }

    /// The storage root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The content served for `catalog`, if any.
    pub fn get(&self, catalog: &str) -> Option<Arc<Entry>> {
        self.entries
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(catalog)
            .cloned()
    }

    /// Names of every served catalog.
    pub fn names(&self) -> Vec<String> {
        self.entries
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect()
    }

    /// Loads the FBC under `fbc_dir` and makes it the content of `catalog`. Blocking; run it
    /// off the async runtime.
    ///
    /// The content is served as it parses, without the model checks of `opm validate`
    /// (channel heads, cycles, …), as upstream's catalog server does: a catalog that works for
    /// upstream — many in the wild have a channel with two heads — works here too, and
    /// resolution copes with whatever graph it is given.
    pub fn store(
        &self,
        catalog: &str,
        resolved_ref: &str,
        digest: &str,
        unpacked_at: jiff::Timestamp,
        fbc_dir: &Path,
    ) -> Result<Arc<Entry>, StorageError> {
        let cat = olm_catalog::load_path(fbc_dir)?;
        let dir = self.root.join(catalog);
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let hex = digest.rsplit(':').next().unwrap_or(digest);
        let staging = unique_dir(&dir)?;
        let written = write_content(&staging, &cat);
        let index = match written {
            Ok(index) => index,
            Err(e) => {
                let _ = fs::remove_dir_all(&staging);
                return Err(e);
            }
        };
        let final_dir = dir.join(hex);
        if final_dir.exists() {
            fs::remove_dir_all(&final_dir).map_err(io_err(&final_dir))?;
        }
        fs::rename(&staging, &final_dir).map_err(io_err(&final_dir))?;
        let stamp = whole_seconds(unpacked_at);
        let record = Record {
            resolved_ref: resolved_ref.to_string(),
            digest: digest.to_string(),
            unpacked_at: stamp,
            polled_at: Some(stamp),
        };
        write_atomically(
            &dir.join(CURRENT_FILE),
            &serde_json::to_vec_pretty(&record).unwrap_or_default(),
        )?;
        sync_dir(&dir)?;
        // Only now is the new content the one a restart would load; drop the old digests.
        for old in fs::read_dir(&dir).map_err(io_err(&dir))? {
            let old = old.map_err(io_err(&dir))?;
            if old.file_type().map(|t| t.is_dir()).unwrap_or(false) && old.file_name() != hex {
                let _ = fs::remove_dir_all(old.path());
            }
        }
        let path = final_dir.join(CATALOG_FILE);
        let meta = fs::metadata(&path).map_err(io_err(&path))?;
        let entry = Arc::new(Entry {
            record,
            size: meta.len(),
            modified: meta.modified().map_err(io_err(&path))?,
            path,
            index: Arc::new(index),
        });
        self.entries
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(catalog.to_string(), entry.clone());
        Ok(entry)
    }

    /// Records a successful poll that found the stored digest unchanged. Content (and so
    /// `Last-Modified`) is left as it is.
    pub fn touch(
        &self,
        catalog: &str,
        polled_at: jiff::Timestamp,
    ) -> Result<Arc<Entry>, StorageError> {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        let dir = self.root.join(catalog);
        let old = entries.get(catalog).cloned().ok_or_else(|| {
            io_err(&dir)(io::Error::new(io::ErrorKind::NotFound, "no stored content"))
        })?;
        let mut record = old.record.clone();
        record.polled_at = Some(whole_seconds(polled_at));
        write_atomically(
            &dir.join(CURRENT_FILE),
            &serde_json::to_vec_pretty(&record).unwrap_or_default(),
        )?;
        let entry = Arc::new(Entry {
            record,
            path: old.path.clone(),
            size: old.size,
            modified: old.modified,
            index: old.index.clone(),
        });
        entries.insert(catalog.to_string(), entry.clone());
        Ok(entry)
    }

    /// Stops serving `catalog` and deletes its content.
    pub fn delete(&self, catalog: &str) -> Result<(), StorageError> {
        self.entries
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(catalog);
        let dir = self.root.join(catalog);
        match fs::remove_dir_all(&dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(&dir)(e)),
        }
    }
}

/// The canonical JSONL of a catalog (what `/api/v1/all` serves) and its index.
pub fn render(cat: &olm_catalog::Catalog, out: &mut dyn Write) -> io::Result<Index> {
    let mut index = Index::default();
    let mut offset = 0u64;
    let mut line = String::new();
    for blob in &cat.blobs {
        line.clear();
        match blob.raw() {
            Some(raw) => line.push_str(raw.get()),
            None => line.push_str(&olm_catalog::write::canonical_blob(blob)),
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
        let length = line.len() as u64;
        let (package, name) = index_keys(blob);
        index.add(Section { offset, length }, blob.schema(), package, name);
        offset += length;
    }
    Ok(index)
}

/// The `package` and `name` fields of a blob as catalogd reads them: an `olm.package` blob has a
/// name but no package field, and deprecations have a package but no name.
fn index_keys(blob: &olm_catalog::Blob) -> (&str, &str) {
    use olm_catalog::Blob;
    match blob {
        Blob::Package(p) => ("", p.name.as_str()),
        Blob::Channel(c) => (c.package.as_str(), c.name.as_str()),
        Blob::Bundle(b) => (b.package.as_str(), b.name.as_str()),
        Blob::Deprecations(d) => (d.package.as_str(), ""),
        Blob::Other(m) => (m.package.as_str(), m.name.as_str()),
    }
}

fn write_content(dir: &Path, cat: &olm_catalog::Catalog) -> Result<Index, StorageError> {
    let path = dir.join(CATALOG_FILE);
    let file = File::create(&path).map_err(io_err(&path))?;
    let mut writer = BufWriter::with_capacity(1 << 20, file);
    let index = render(cat, &mut writer).map_err(io_err(&path))?;
    let file = writer
        .into_inner()
        .map_err(|e| io_err(&path)(e.into_error()))?;
    file.sync_all().map_err(io_err(&path))?;
    let index_path = dir.join(INDEX_FILE);
    let json = serde_json::to_vec(&index).map_err(|e| io_err(&index_path)(io::Error::other(e)))?;
    let mut f = File::create(&index_path).map_err(io_err(&index_path))?;
    f.write_all(&json).map_err(io_err(&index_path))?;
    f.sync_all().map_err(io_err(&index_path))?;
    Ok(index)
}

fn load_entry(dir: &Path) -> Result<Entry, StorageError> {
    let current = dir.join(CURRENT_FILE);
    let bytes = fs::read(&current).map_err(io_err(&current))?;
    let record: Record = serde_json::from_slice(&bytes)
        .map_err(|e| io_err(&current)(io::Error::new(io::ErrorKind::InvalidData, e)))?;
    let hex = record.digest.rsplit(':').next().unwrap_or(&record.digest);
    let content = dir.join(hex);
    let index_path = content.join(INDEX_FILE);
    let bytes = fs::read(&index_path).map_err(io_err(&index_path))?;
    let index: Index = serde_json::from_slice(&bytes)
        .map_err(|e| io_err(&index_path)(io::Error::new(io::ErrorKind::InvalidData, e)))?;
    let path = content.join(CATALOG_FILE);
    let meta = fs::metadata(&path).map_err(io_err(&path))?;
    Ok(Entry {
        record,
        size: meta.len(),
        modified: meta.modified().map_err(io_err(&path))?,
        path,
        index: Arc::new(index),
    })
}

fn remove_staging(dir: &Path) -> Result<(), StorageError> {
    for entry in fs::read_dir(dir).map_err(io_err(dir))? {
        let entry = entry.map_err(io_err(dir))?;
        if entry.file_name().to_string_lossy().starts_with(".staging-") {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
    Ok(())
}

fn unique_dir(parent: &Path) -> Result<PathBuf, StorageError> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = parent.join(format!(".staging-{}-{n}", std::process::id()));
        match fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_err(&path)(e)),
        }
    }
}

/// Times are kept to the second, truncated, as Kubernetes writes them (`metav1.Time`).
pub(crate) fn whole_seconds(t: jiff::Timestamp) -> jiff::Timestamp {
    let trunc = jiff::TimestampRound::new()
        .smallest(jiff::Unit::Second)
        .mode(jiff::RoundMode::Trunc);
    t.round(trunc).unwrap_or(t)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StorageError> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).map_err(io_err(&tmp))?;
    f.write_all(bytes).map_err(io_err(&tmp))?;
    f.sync_all().map_err(io_err(&tmp))?;
    fs::rename(&tmp, path).map_err(io_err(path))
}

fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fbc(dir: &Path, body: &str) {
        fs::create_dir_all(dir).expect("mkdir");
        fs::write(dir.join("catalog.json"), body).expect("write");
    }

    const FOO: &str = r#"{"schema":"olm.package","name":"foo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v0.1.0"}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v0.1.0","image":"example.com/foo:v0.1.0","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"0.1.0"}}]}
"#;

    #[test]
    fn store_serves_reloads_and_replaces() {
        let tmp = tempfile::tempdir().expect("tmp");
        let src = tmp.path().join("src");
        fbc(&src, FOO);
        let storage = Storage::open(tmp.path().join("store")).expect("open");
        let now = jiff::Timestamp::now();
        let a = storage
            .store("cat", "r@sha256:aa", "sha256:aa", now, &src)
            .expect("store");
        let body = fs::read_to_string(&a.path).expect("read");
        let mut want = Vec::new();
        olm_catalog::write::write_jsonl(&olm_catalog::load_path(&src).expect("load"), &mut want)
            .expect("jsonl");
        assert_eq!(body.as_bytes(), want.as_slice());
        assert_eq!(a.index.query("olm.bundle", "foo", "").len(), 1);

        // A restart finds it without any pull.
        let reopened = Storage::open(tmp.path().join("store")).expect("reopen");
        let b = reopened.get("cat").expect("served after restart");
        assert_eq!(b.record, a.record);
        assert_eq!(b.index, a.index);

        // A new digest replaces the old directory.
        reopened
            .store("cat", "r@sha256:bb", "sha256:bb", now, &src)
            .expect("store again");
        assert!(!tmp.path().join("store/cat/aa").exists());
        assert!(tmp.path().join("store/cat/bb/catalog.jsonl").exists());

        reopened.delete("cat").expect("delete");
        assert!(reopened.get("cat").is_none());
        assert!(!tmp.path().join("store/cat").exists());
    }

    #[test]
    fn unreadable_fbc_is_refused_and_nothing_changes() {
        let tmp = tempfile::tempdir().expect("tmp");
        let src = tmp.path().join("src");
        fbc(&src, r#"{"schema":"olm.channel","package":"foo","#);
        let storage = Storage::open(tmp.path().join("store")).expect("open");
        let err = storage
            .store(
                "cat",
                "r@sha256:aa",
                "sha256:aa",
                jiff::Timestamp::now(),
                &src,
            )
            .expect_err("unreadable");
        assert!(!err.to_string().is_empty());
        assert!(storage.get("cat").is_none());
    }

    /// Upstream's catalog server serves what parses; `opm validate` would refuse this channel
    /// (two heads), catalogd does not.
    #[test]
    fn a_channel_with_two_heads_is_served() {
        let tmp = tempfile::tempdir().expect("tmp");
        let src = tmp.path().join("src");
        fbc(
            &src,
            concat!(
                r#"{"schema":"olm.package","name":"foo"}"#,
                "\n",
                r#"{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v0.1.0"},{"name":"foo.v0.2.0"}]}"#,
            ),
        );
        let storage = Storage::open(tmp.path().join("store")).expect("open");
        storage
            .store(
                "cat",
                "r@sha256:aa",
                "sha256:aa",
                jiff::Timestamp::now(),
                &src,
            )
            .expect("stored");
        assert!(storage.get("cat").is_some());
    }

    #[test]
    fn staging_leftovers_are_removed_at_open() {
        let tmp = tempfile::tempdir().expect("tmp");
        let leftover = tmp.path().join("cat/.staging-1-1");
        fs::create_dir_all(&leftover).expect("mkdir");
        let storage = Storage::open(tmp.path()).expect("open");
        assert!(!leftover.exists());
        assert!(storage.get("cat").is_none());
    }
}
