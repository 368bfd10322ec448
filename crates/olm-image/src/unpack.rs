//! Applying image layers to a directory, safely.
//!
//! Layer tarballs come from registries we do not control, so every entry is checked before it
//! touches the disk, following what catalogd and containerd do:
//!
//! * absolute paths and paths with `..` are errors (they would write outside the target);
//! * an entry whose parent path goes through a symlink is an error (a link planted by an earlier
//!   entry or layer must not redirect later writes);
//! * symlinks whose target is absolute, climbs above the image root, or climbs back out of a
//!   name (`x/b/../..`, which the kernel reads through `x/b` first, and `x/b` may be a link to
//!   `..`) are errors, so nothing reading the unpacked tree can be led outside it; hard links
//!   must name a regular file already unpacked;
//! * device files and fifos are skipped (counted in [`UnpackStats`]), as are PAX/GNU metadata
//!   entries; owners, xattrs and mtimes are not restored;
//! * modes: directories get `0o700` plus the image's read/execute bits for group and other,
//!   files `0o600` plus the image's execute bit and group/other read bits; set-id, sticky and
//!   group/other write bits are dropped (catalogd also forces owner `rwx`);
//! * overlay whiteouts are applied: `.wh.NAME` deletes `NAME` from lower layers, and
//!   `.wh..wh..opq` empties its directory of everything lower layers put there.
//!
//! Sizes are bounded whatever the layer says ([`crate::limits`]): a regular file is admitted by
//! the size its header declares before anything is written, then counted byte by byte as it is
//! written, so a layer stops at the first byte over the per-file limit or the total, and a
//! decompression bomb costs neither memory (the stream is never buffered whole) nor more disk
//! than the limit. Once every layer is applied, what a reader of the tree would read (each link to
//! a file counted as the file) is held to the total too.
//!
//! Layers are applied in order into the same directory. [`unpack_layers`] creates that directory
//! and removes it again when anything fails, so a refused image leaves nothing behind; moving a
//! finished tree into place atomically is the caller's job (see [`crate::cache`]).

use std::collections::HashSet;
use std::fs;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use crate::assemble::link_stays_inside;
use crate::limits::{Budget, Over, Sizes};

const WHITEOUT_PREFIX: &str = ".wh.";
const OPAQUE_WHITEOUT: &str = ".wh..wh..opq";

/// A path in a message, quoted as Go's `%q` quotes (upstream's messages name paths so).
fn quote_path(p: &Path) -> String {
    olm_goenc::quote(&p.to_string_lossy())
}

/// Why a layer could not be unpacked. Each variant names the offending tar entry.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    /// An entry with an absolute path.
    #[error("layer entry {} has an absolute path; refusing to unpack it", quote_path(.0))]
    AbsolutePath(PathBuf),
    /// An entry whose path contains `..`.
    #[error("layer entry {} contains \"..\"; refusing to unpack it", quote_path(.0))]
    ParentDir(PathBuf),
    /// An entry whose parent path goes through a symlink.
    #[error(
        "layer entry {} goes through the symlink {}; refusing to unpack it",
        quote_path(path),
        quote_path(link)
    )]
    ThroughSymlink {
        /// The entry.
        path: PathBuf,
        /// The symlink on its way.
        link: PathBuf,
    },
    /// A symlink whose target leaves the image root.
    #[error(
        "layer entry {} is a symlink to {}, which points outside the image",
        quote_path(path),
        quote_path(target)
    )]
    SymlinkEscape {
        /// The symlink entry.
        path: PathBuf,
        /// Its target.
        target: PathBuf,
    },
    /// A hard link whose target is no regular file unpacked before it, or a path that could not
    /// name one. The entry is named first: the target comes from the same hostile archive.
    #[error(
        "layer entry {} is a hard link to {}, which {reason}",
        quote_path(path),
        quote_path(target)
    )]
    BadHardLink {
        /// The link entry.
        path: PathBuf,
        /// Its target, as the archive gives it.
        target: PathBuf,
        /// What is wrong with the target.
        reason: HardLinkTarget,
    },
    /// The tar stream itself is broken.
    #[error("reading layer: {0}")]
    Tar(#[source] io::Error),
    /// The layers hold more than the limits allow; nothing more was written.
    #[error("the image is too large: {0}")]
    TooLarge(Over),
    /// Writing to the target directory failed.
    #[error("unpacking {}: {source}", quote_path(path))]
    Io {
        /// The path being written.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

/// Why a hard link's target was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HardLinkTarget {
    /// The target path is absolute.
    #[error("has an absolute path; refusing to unpack it")]
    AbsolutePath,
    /// The target path contains `..`.
    #[error("contains \"..\"; refusing to unpack it")]
    ParentDir,
    /// The target path goes through a symlink unpacked earlier.
    #[error("goes through the symlink {}; refusing to unpack it", quote_path(.0))]
    ThroughSymlink(PathBuf),
    /// Nothing, or something other than a regular file, is at the target.
    #[error("is not a file unpacked before it")]
    NotUnpacked,
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> UnpackError + '_ {
    move |source| UnpackError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Which part of the image to keep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Filter {
    /// Everything (bundle images, `olm image pull`).
    #[default]
    All,
    /// Only entries under this relative directory, e.g. `configs` for a catalog whose
    /// `operators.operatorframework.io.index.configs.v1` label is `/configs`. Catalog images are
    /// often built `FROM` an opm base image, and its binaries are of no use to us.
    Under(PathBuf),
    /// Only the directory named by the image's `operators.operatorframework.io.index.configs.v1`
    /// label, as catalogd keeps. [`crate::Client`] reads the label from the image config and
    /// turns this into [`Filter::Under`] before unpacking (an image without the label is an
    /// error there); given directly to [`apply_layer`], which has no config, it keeps everything.
    CatalogConfigs,
}

impl Filter {
    /// The filter for a catalog image's configs label value (`/configs`, `/configs/`, `configs`).
    /// `None` when the value is not a clean path inside the image.
    pub fn catalog_configs(label: &str) -> Option<Filter> {
        let path = normalize(Path::new(label.trim_start_matches('/'))).ok()??;
        Some(Filter::Under(path))
    }

    fn keeps(&self, rel: &Path) -> bool {
        match self {
            Filter::All | Filter::CatalogConfigs => true,
            Filter::Under(prefix) => rel.starts_with(prefix),
        }
    }
}

/// What an unpack did, for logs and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnpackStats {
    /// Regular files written.
    pub files: u64,
    /// Directories created.
    pub dirs: u64,
    /// Symlinks and hard links created.
    pub links: u64,
    /// Whiteouts applied.
    pub whiteouts: u64,
    /// Device files, fifos and unknown entry types skipped.
    pub skipped: u64,
    /// Bytes of regular file content written.
    pub bytes: u64,
}

impl UnpackStats {
    fn add(&mut self, other: &UnpackStats) {
        self.files += other.files;
        self.dirs += other.dirs;
        self.links += other.links;
        self.whiteouts += other.whiteouts;
        self.skipped += other.skipped;
        self.bytes += other.bytes;
    }
}

/// Wraps a layer blob in a decompressor chosen by its first bytes, so gzip, zstd and plain tar
/// layers (OCI `…tar`, docker `…diff.tar`) all work whatever the media type claims.
pub fn decompress<'a, R: Read + 'a>(reader: R) -> io::Result<Box<dyn Read + 'a>> {
    let mut buffered = BufReader::with_capacity(256 * 1024, reader);
    let head = buffered.fill_buf()?;
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(flate2::bufread::MultiGzDecoder::new(buffered)))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Ok(Box::new(zstd::stream::read::Decoder::with_buffer(
            buffered,
        )?))
    } else {
        Ok(Box::new(buffered))
    }
}

/// Applies one uncompressed tar layer on top of `dest` (which must exist), counting the bytes
/// it writes against `budget` (shared by the layers of one image). On an error, what the layer
/// wrote so far stays: see [`unpack_layers`].
pub fn apply_layer<R: Read>(
    tar_stream: R,
    dest: &Path,
    filter: &Filter,
    budget: &mut Budget,
) -> Result<UnpackStats, UnpackError> {
    let mut layer = LayerApplier {
        dest,
        filter,
        budget,
        this_layer: HashSet::new(),
        known_dirs: HashSet::new(),
        stats: UnpackStats::default(),
    };
    let mut archive = tar::Archive::new(tar_stream);
    for entry in archive.entries().map_err(UnpackError::Tar)? {
        let entry = entry.map_err(UnpackError::Tar)?;
        layer.apply(entry)?;
    }
    Ok(layer.stats)
}

/// Creates `dest` and applies `layers` into it in order, within `sizes`, and sums their stats.
///
/// # Guarantees
/// - No more than `sizes.total` bytes of file content are written, and no file holds more than
///   `sizes.file`; the first byte over either stops the unpack.
/// - The finished tree, read through its links, holds no more than `sizes.total`.
/// - On any error `dest` is removed with whatever was written into it.
///
/// # Errors
/// [`UnpackError::TooLarge`] naming what went over; any other [`UnpackError`] of a layer; an
/// [`UnpackError::Io`] when `dest` exists already or cannot be created.
pub fn unpack_layers<R: Read>(
    layers: impl IntoIterator<Item = R>,
    dest: &Path,
    filter: &Filter,
    sizes: Sizes,
) -> Result<UnpackStats, UnpackError> {
    fs::create_dir(dest).map_err(io_at(dest))?;
    let unpacked = (|| {
        let mut budget = Budget::new(sizes);
        let mut total = UnpackStats::default();
        for layer in layers {
            total.add(&apply_layer(layer, dest, filter, &mut budget)?);
        }
        // Without links, a reader reads what was written, which the budget has held already.
        if total.links > 0 {
            budget
                .check_readable(readable_bytes(dest)?)
                .map_err(UnpackError::TooLarge)?;
        }
        Ok(total)
    })();
    if unpacked.is_err() {
        let _ = fs::remove_dir_all(dest);
    }
    unpacked
}

/// What a reader of every name in `root` reads: the sizes of its regular files, and of the files
/// its symlinks lead to (a hard link is a regular file of its own here). Links to directories are
/// not followed, as the catalog reader does not follow them.
fn readable_bytes(root: &Path) -> Result<u64, UnpackError> {
    let mut total = 0u64;
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).map_err(io_at(&dir))? {
            let entry = entry.map_err(io_at(&dir))?;
            let kind = entry.file_type().map_err(io_at(&entry.path()))?;
            let size = if kind.is_dir() {
                dirs.push(entry.path());
                0
            } else if kind.is_file() {
                entry.metadata().map_err(io_at(&entry.path()))?.len()
            } else if kind.is_symlink() {
                // A link that leads nowhere (or in a loop) is read as nothing.
                fs::metadata(entry.path())
                    .ok()
                    .filter(fs::Metadata::is_file)
                    .map_or(0, |m| m.len())
            } else {
                0
            };
            total = total.saturating_add(size);
        }
    }
    Ok(total)
}

/// A writer that counts what goes through it against the budget, failing the write that would
/// pass a limit (the reason is kept in `over`, since `io::copy` only passes the error on).
struct Counted<'a, W> {
    inner: W,
    budget: &'a mut Budget,
    path: &'a Path,
    over: Option<Over>,
}

impl<W: Write> Write for Counted<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Err(over) = self.budget.count(self.path, buf.len() as u64) {
            self.over = Some(over);
            return Err(io::Error::other("size limit"));
        }
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

struct LayerApplier<'a> {
    dest: &'a Path,
    filter: &'a Filter,
    budget: &'a mut Budget,
    /// Paths created by this layer; an opaque whiteout keeps them.
    this_layer: HashSet<PathBuf>,
    /// Directories verified to be real directories (not symlinks), to save syscalls on the
    /// thousands of files a catalog has. Cleared whenever something is removed.
    known_dirs: HashSet<PathBuf>,
    stats: UnpackStats,
}

impl LayerApplier<'_> {
    fn apply<R: Read>(&mut self, mut entry: tar::Entry<'_, R>) -> Result<(), UnpackError> {
        let kind = entry.header().entry_type();
        if matches!(
            kind,
            tar::EntryType::XGlobalHeader
                | tar::EntryType::XHeader
                | tar::EntryType::GNULongName
                | tar::EntryType::GNULongLink
        ) {
            return Ok(());
        }
        let raw = entry.path().map_err(UnpackError::Tar)?.into_owned();
        let Some(rel) = normalize(&raw)? else {
            // The root itself (`./`): nothing to create.
            return Ok(());
        };
        if !self.filter.keeps(&rel) {
            return Ok(());
        }
        let name = rel
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parent = rel.parent().unwrap_or(Path::new("")).to_path_buf();

        if name == OPAQUE_WHITEOUT {
            self.check_parents(&rel, &parent)?;
            let dir = self.dest.join(&parent);
            if fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
                self.clear_lower(&parent)?;
            }
            self.stats.whiteouts += 1;
            return Ok(());
        }
        if let Some(hidden) = name.strip_prefix(WHITEOUT_PREFIX) {
            self.check_parents(&rel, &parent)?;
            let victim = parent.join(hidden);
            // `.wh.` followed by `..` or `.` would name something outside its directory.
            if normalize(&victim)?.as_deref() == Some(victim.as_path()) {
                remove_any(&self.dest.join(&victim))?;
                self.known_dirs.clear();
            }
            self.stats.whiteouts += 1;
            return Ok(());
        }

        match kind {
            tar::EntryType::Directory => {
                self.ensure_parents(&rel, &parent)?;
                let path = self.dest.join(&rel);
                match fs::symlink_metadata(&path) {
                    Ok(m) if m.is_dir() => {}
                    Ok(_) => {
                        remove_any(&path)?;
                        fs::create_dir(&path).map_err(io_at(&path))?;
                    }
                    Err(_) => fs::create_dir(&path).map_err(io_at(&path))?,
                }
                let mode = entry.header().mode().unwrap_or(0o755);
                fs::set_permissions(&path, fs::Permissions::from_mode(dir_mode(mode)))
                    .map_err(io_at(&path))?;
                self.known_dirs.insert(rel.clone());
                self.stats.dirs += 1;
            }
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                // The size the archive declares (PAX included) is all its reader yields.
                let size = entry.size();
                self.budget
                    .admit(&rel, size)
                    .map_err(UnpackError::TooLarge)?;
                self.ensure_parents(&rel, &parent)?;
                let path = self.dest.join(&rel);
                let mode = entry.header().mode().unwrap_or(0o644);
                // Most paths are new: try to create first and clear the slot only when something
                // is in the way (`create_new` never follows a symlink left there).
                let create = || {
                    fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&path)
                };
                let mut file = match create() {
                    Ok(file) => file,
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        self.clear_slot(&path)?;
                        create().map_err(io_at(&path))?
                    }
                    Err(e) => return Err(io_at(&path)(e)),
                };
                // io::copy writes 8 KiB at a time; catalogs hold files of many megabytes, so
                // larger files go through a bigger buffer (a tenth of the write calls).
                let mut counted = Counted {
                    inner: &mut file,
                    budget: &mut *self.budget,
                    path: &rel,
                    over: None,
                };
                let copied = if size > 64 * 1024 {
                    let mut buffered = io::BufWriter::with_capacity(256 * 1024, &mut counted);
                    io::copy(&mut entry, &mut buffered).and_then(|n| {
                        buffered.flush()?;
                        Ok(n)
                    })
                } else {
                    io::copy(&mut entry, &mut counted)
                };
                if let Some(over) = counted.over {
                    return Err(UnpackError::TooLarge(over));
                }
                let written = copied.map_err(|e| {
                    // A short read is a broken layer, not a disk problem.
                    if e.kind() == io::ErrorKind::UnexpectedEof {
                        UnpackError::Tar(e)
                    } else {
                        UnpackError::Io {
                            path: path.clone(),
                            source: e,
                        }
                    }
                })?;
                file.set_permissions(fs::Permissions::from_mode(file_mode(mode)))
                    .map_err(io_at(&path))?;
                self.stats.files += 1;
                self.stats.bytes += written;
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name()
                    .map_err(UnpackError::Tar)?
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                if target.as_os_str().is_empty() || !link_stays_inside(&parent, &target) {
                    return Err(UnpackError::SymlinkEscape { path: rel, target });
                }
                self.ensure_parents(&rel, &parent)?;
                let path = self.dest.join(&rel);
                self.clear_slot(&path)?;
                std::os::unix::fs::symlink(&target, &path).map_err(io_at(&path))?;
                self.stats.links += 1;
            }
            tar::EntryType::Link => {
                let raw_target = entry
                    .link_name()
                    .map_err(UnpackError::Tar)?
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                let bad = |reason| UnpackError::BadHardLink {
                    path: rel.clone(),
                    target: raw_target.clone(),
                    reason,
                };
                let target = match normalize(&raw_target) {
                    Ok(Some(t)) => t,
                    Ok(None) => return Err(bad(HardLinkTarget::NotUnpacked)),
                    Err(UnpackError::AbsolutePath(_)) => {
                        return Err(bad(HardLinkTarget::AbsolutePath));
                    }
                    Err(_) => return Err(bad(HardLinkTarget::ParentDir)),
                };
                let target_parent = target.parent().unwrap_or(Path::new(""));
                match self.check_parents(&target, target_parent) {
                    Ok(()) => {}
                    Err(UnpackError::ThroughSymlink { link, .. }) => {
                        return Err(bad(HardLinkTarget::ThroughSymlink(link)));
                    }
                    Err(e) => return Err(e),
                }
                let target_path = self.dest.join(&target);
                if !fs::symlink_metadata(&target_path).is_ok_and(|m| m.is_file()) {
                    return Err(bad(HardLinkTarget::NotUnpacked));
                }
                self.ensure_parents(&rel, &parent)?;
                let path = self.dest.join(&rel);
                if path == target_path {
                    return Ok(());
                }
                self.clear_slot(&path)?;
                fs::hard_link(&target_path, &path).map_err(io_at(&path))?;
                self.stats.links += 1;
            }
            _ => {
                // Char/block devices, fifos and vendor types: never materialised.
                self.stats.skipped += 1;
                return Ok(());
            }
        }
        self.this_layer.insert(rel);
        Ok(())
    }

    /// Fails when any existing ancestor of `rel` (below `dest`) is a symlink.
    fn check_parents(&mut self, rel: &Path, parent: &Path) -> Result<(), UnpackError> {
        let mut acc = PathBuf::new();
        for c in parent.components() {
            acc.push(c);
            if self.known_dirs.contains(&acc) {
                continue;
            }
            match fs::symlink_metadata(self.dest.join(&acc)) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(UnpackError::ThroughSymlink {
                        path: rel.to_path_buf(),
                        link: acc,
                    });
                }
                Ok(m) if m.is_dir() => {
                    self.known_dirs.insert(acc.clone());
                }
                _ => return Ok(()),
            }
        }
        Ok(())
    }

    /// Creates missing ancestors of `rel` (0o700, like catalogd's implicit parents), refusing to go
    /// through symlinks and replacing non-directories that are in the way.
    fn ensure_parents(&mut self, rel: &Path, parent: &Path) -> Result<(), UnpackError> {
        let mut acc = PathBuf::new();
        for c in parent.components() {
            acc.push(c);
            if self.known_dirs.contains(&acc) {
                continue;
            }
            let path = self.dest.join(&acc);
            match fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(UnpackError::ThroughSymlink {
                        path: rel.to_path_buf(),
                        link: acc,
                    });
                }
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    remove_any(&path)?;
                    create_private_dir(&path)?;
                }
                Err(_) => create_private_dir(&path)?,
            }
            self.known_dirs.insert(acc.clone());
        }
        Ok(())
    }

    /// Makes room for a file or link at `path`: whatever a lower layer left there goes.
    fn clear_slot(&mut self, path: &Path) -> Result<(), UnpackError> {
        if fs::symlink_metadata(path).is_ok() {
            remove_any(path)?;
            self.known_dirs.clear();
        }
        Ok(())
    }

    /// Opaque whiteout: removes everything under `dir` that this layer did not create.
    fn clear_lower(&mut self, dir: &Path) -> Result<(), UnpackError> {
        let abs = self.dest.join(dir);
        let entries = fs::read_dir(&abs).map_err(io_at(&abs))?;
        let mut names: Vec<PathBuf> = Vec::new();
        for entry in entries {
            let entry = entry.map_err(io_at(&abs))?;
            names.push(dir.join(entry.file_name()));
        }
        for rel in names {
            let path = self.dest.join(&rel);
            if self.this_layer.contains(&rel) {
                if fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                    self.clear_lower(&rel)?;
                }
            } else {
                remove_any(&path)?;
            }
        }
        self.known_dirs.clear();
        Ok(())
    }
}

fn create_private_dir(path: &Path) -> Result<(), UnpackError> {
    fs::create_dir(path).map_err(io_at(path))?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o700)).map_err(io_at(path))
}

/// Removes a file, symlink (not its target) or directory tree; absent is fine.
fn remove_any(path: &Path) -> Result<(), UnpackError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path).map_err(io_at(path)),
        Ok(_) => fs::remove_file(path).map_err(io_at(path)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_at(path)(e)),
    }
}

fn dir_mode(mode: u32) -> u32 {
    0o700 | (mode & 0o055)
}

fn file_mode(mode: u32) -> u32 {
    let exec = if mode & 0o111 != 0 { 0o100 } else { 0 };
    0o600 | exec | (mode & 0o055)
}

/// A tar path made relative and clean: `./a//b/` → `a/b`; `.` → `None` (the root).
/// Absolute paths and `..` are errors.
pub(crate) fn normalize(raw: &Path) -> Result<Option<PathBuf>, UnpackError> {
    let mut out = PathBuf::new();
    for c in raw.components() {
        match c {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err(UnpackError::ParentDir(raw.to_path_buf())),
            Component::RootDir | Component::Prefix(_) => {
                return Err(UnpackError::AbsolutePath(raw.to_path_buf()));
            }
        }
    }
    Ok(if out.as_os_str().is_empty() {
        None
    } else {
        Some(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-built tar entries, so tests can say exactly the hostile thing they mean (the `tar`
    /// builder refuses some of these paths itself).
    enum E<'a> {
        Dir(&'a str),
        File(&'a str, &'a [u8]),
        FileMode(&'a str, &'a [u8], u32),
        Symlink(&'a str, &'a str),
        HardLink(&'a str, &'a str),
        Fifo(&'a str),
        CharDev(&'a str),
    }

    fn tarball(entries: &[E<'_>]) -> Vec<u8> {
        let mut out = Vec::new();
        for e in entries {
            let (name, kind, data, link, mode): (&str, tar::EntryType, &[u8], &str, u32) = match e {
                E::Dir(n) => (n, tar::EntryType::Directory, b"", "", 0o755),
                E::File(n, d) => (n, tar::EntryType::Regular, d, "", 0o644),
                E::FileMode(n, d, m) => (n, tar::EntryType::Regular, d, "", *m),
                E::Symlink(n, t) => (n, tar::EntryType::Symlink, b"", t, 0o777),
                E::HardLink(n, t) => (n, tar::EntryType::Link, b"", t, 0o644),
                E::Fifo(n) => (n, tar::EntryType::Fifo, b"", "", 0o644),
                E::CharDev(n) => (n, tar::EntryType::Char, b"", "", 0o644),
            };
            let mut h = tar::Header::new_old();
            // Write raw name bytes: `set_path` would reject `..` and absolute paths.
            let bytes = name.as_bytes();
            h.as_old_mut().name[..bytes.len()].copy_from_slice(bytes);
            let lb = link.as_bytes();
            h.as_old_mut().linkname[..lb.len()].copy_from_slice(lb);
            h.set_entry_type(kind);
            h.set_mode(mode);
            h.set_size(data.len() as u64);
            h.set_mtime(0);
            h.set_cksum();
            out.extend_from_slice(h.as_bytes());
            out.extend_from_slice(data);
            let pad = (512 - data.len() % 512) % 512;
            out.extend(std::iter::repeat_n(0u8, pad));
        }
        out.extend(std::iter::repeat_n(0u8, 1024));
        out
    }

    fn apply(dest: &Path, entries: &[E<'_>]) -> Result<UnpackStats, UnpackError> {
        apply_layer(
            &tarball(entries)[..],
            dest,
            &Filter::All,
            &mut Budget::new(Sizes::BUNDLE),
        )
    }

    /// Applies layers in order into the existing `dest`, within the bundle limits.
    fn apply_all(layers: &[&[u8]], dest: &Path) -> Result<UnpackStats, UnpackError> {
        let mut budget = Budget::new(Sizes::BUNDLE);
        let mut total = UnpackStats::default();
        for layer in layers {
            total.add(&apply_layer(*layer, dest, &Filter::All, &mut budget)?);
        }
        Ok(total)
    }

    #[test]
    fn plain_layer_unpacks_with_sane_modes() {
        let d = tempfile::tempdir().expect("tempdir");
        let stats = apply(
            d.path(),
            &[
                E::Dir("./a/"),
                E::File("./a/f.txt", b"hello"),
                E::FileMode("a/run.sh", b"#!/bin/sh", 0o4777),
                E::File("deep/implicit/x", b"x"),
            ],
        )
        .expect("apply");
        assert_eq!(stats.files, 3);
        assert_eq!(fs::read(d.path().join("a/f.txt")).expect("read"), b"hello");
        let mode = |p: &str| {
            fs::symlink_metadata(d.path().join(p))
                .expect("meta")
                .permissions()
                .mode()
                & 0o7777
        };
        assert_eq!(mode("a/f.txt"), 0o644);
        // setuid and world-write dropped, owner rwx kept.
        assert_eq!(mode("a/run.sh"), 0o755);
        assert_eq!(mode("a"), 0o755);
        assert_eq!(mode("deep"), 0o700);
    }

    #[test]
    fn absolute_path_is_rejected() {
        let d = tempfile::tempdir().expect("tempdir");
        let err = apply(d.path(), &[E::File("/etc/evil", b"x")]).expect_err("must fail");
        assert!(matches!(err, UnpackError::AbsolutePath(_)), "{err}");
    }

    #[test]
    fn parent_dir_is_rejected() {
        let outer = tempfile::tempdir().expect("tempdir");
        let dest = outer.path().join("dest");
        fs::create_dir(&dest).expect("mkdir");
        let err = apply(&dest, &[E::File("a/../../evil", b"x")]).expect_err("must fail");
        assert!(matches!(err, UnpackError::ParentDir(_)), "{err}");
        assert!(!outer.path().join("evil").exists());
    }

    #[test]
    fn escaping_symlinks_are_rejected() {
        let d = tempfile::tempdir().expect("tempdir");
        for (name, target) in [("a/up", "../../x"), ("abs", "/etc/passwd"), ("e", "")] {
            let err = apply(d.path(), &[E::Symlink(name, target)]).expect_err("must fail");
            assert!(
                matches!(err, UnpackError::SymlinkEscape { .. }),
                "{name}: {err}"
            );
        }
        // A link that stays inside is fine.
        apply(d.path(), &[E::File("t", b"t"), E::Symlink("a/ok", "../t")]).expect("inside");
        assert_eq!(fs::read(d.path().join("a/ok")).expect("read"), b"t");
    }

    #[test]
    fn a_symlink_that_climbs_back_through_another_link_is_rejected() {
        // `a/b -> ..` stays inside, and so does `c -> a/b/../..` read as text; but the kernel
        // follows `a/b` first, so `c` pointed at the parent of the target directory (the property
        // the unpack fuzz target checks). The order of the two links must not matter.
        for entries in [
            &[
                E::Dir("a"),
                E::Symlink("a/b", ".."),
                E::Symlink("c", "a/b/../.."),
            ][..],
            &[
                E::Symlink("c", "a/b/../.."),
                E::Dir("a"),
                E::Symlink("a/b", ".."),
            ][..],
        ] {
            let outer = tempfile::tempdir().expect("tempdir");
            let dest = outer.path().join("dest");
            fs::create_dir(&dest).expect("mkdir");
            let err = apply(&dest, entries).expect_err("must fail");
            assert!(
                matches!(&err, UnpackError::SymlinkEscape { path, .. } if path == Path::new("c")),
                "{err}"
            );
            assert!(fs::symlink_metadata(dest.join("c")).is_err());
        }
    }

    #[test]
    fn writing_through_a_symlink_is_rejected() {
        // `d -> .` stays inside, but `d/../x` written through it would land outside.
        let outer = tempfile::tempdir().expect("tempdir");
        let dest = outer.path().join("dest");
        fs::create_dir(&dest).expect("mkdir");
        let err = apply(
            &dest,
            &[
                E::Dir("sub"),
                E::Symlink("sub/d", ".."),
                E::File("sub/d/f", b"x"),
            ],
        )
        .expect_err("must fail");
        assert!(matches!(err, UnpackError::ThroughSymlink { .. }), "{err}");
        assert!(!dest.join("f").exists());
    }

    #[test]
    fn file_replacing_a_symlink_does_not_follow_it() {
        let outer = tempfile::tempdir().expect("tempdir");
        let dest = outer.path().join("dest");
        fs::create_dir(&dest).expect("mkdir");
        fs::write(outer.path().join("victim"), b"keep").expect("write");
        // A planted link to outside (as a hostile lower layer on disk would be).
        std::os::unix::fs::symlink("../victim", dest.join("f")).expect("symlink");
        apply(&dest, &[E::File("f", b"new")]).expect("apply");
        assert_eq!(
            fs::read(outer.path().join("victim")).expect("read"),
            b"keep"
        );
        assert_eq!(fs::read(dest.join("f")).expect("read"), b"new");
    }

    #[test]
    fn devices_and_fifos_are_skipped() {
        let d = tempfile::tempdir().expect("tempdir");
        let stats = apply(d.path(), &[E::CharDev("dev/null"), E::Fifo("pipe")]).expect("apply");
        assert_eq!(stats.skipped, 2);
        assert!(!d.path().join("pipe").exists());
        assert!(!d.path().join("dev/null").exists());
    }

    #[test]
    fn hard_links_must_name_an_unpacked_file() {
        let d = tempfile::tempdir().expect("tempdir");
        apply(d.path(), &[E::File("a", b"A"), E::HardLink("b", "a")]).expect("apply");
        assert_eq!(fs::read(d.path().join("b")).expect("read"), b"A");
        let err = apply(d.path(), &[E::HardLink("c", "missing")]).expect_err("fail");
        assert_eq!(
            err.to_string(),
            r#"layer entry "c" is a hard link to "missing", which is not a file unpacked before it"#
        );
    }

    /// The entry inside the archive is what a reader looks for; the target only says why.
    #[test]
    fn a_hostile_hard_link_is_named_by_its_entry() {
        let cases = [
            (
                vec![E::HardLink("configs/h", "/etc/passwd")],
                r#"layer entry "configs/h" is a hard link to "/etc/passwd", which has an absolute path; refusing to unpack it"#,
            ),
            (
                vec![E::HardLink("configs/h", "../../etc/passwd")],
                r#"layer entry "configs/h" is a hard link to "../../etc/passwd", which contains ".."; refusing to unpack it"#,
            ),
            (
                vec![
                    E::File("t", b"t"),
                    E::Symlink("l", "."),
                    E::HardLink("configs/h", "l/t"),
                ],
                r#"layer entry "configs/h" is a hard link to "l/t", which goes through the symlink "l"; refusing to unpack it"#,
            ),
        ];
        for (entries, want) in cases {
            let d = tempfile::tempdir().expect("tempdir");
            let err = apply(d.path(), &entries).expect_err(want);
            assert_eq!(err.to_string(), want);
        }
    }

    #[test]
    fn whiteouts_remove_lower_layer_entries() {
        let d = tempfile::tempdir().expect("tempdir");
        let lower = tarball(&[
            E::File("keep", b"k"),
            E::File("gone", b"g"),
            E::File("dir/old1", b"1"),
            E::File("dir/sub/old2", b"2"),
            E::File("other/x", b"x"),
        ]);
        let upper = tarball(&[
            E::File(".wh.gone", b""),
            E::Dir("dir"),
            E::File("dir/new", b"n"),
            E::File("dir/.wh..wh..opq", b""),
            E::File("other/.wh.x", b""),
        ]);
        let stats = apply_all(&[&lower[..], &upper[..]], d.path()).expect("apply");
        assert_eq!(stats.whiteouts, 3);
        assert!(d.path().join("keep").exists());
        assert!(!d.path().join("gone").exists());
        assert!(!d.path().join(".wh.gone").exists());
        assert!(!d.path().join("dir/old1").exists());
        assert!(!d.path().join("dir/sub").exists());
        // Created by the same layer as the opaque marker, so it stays even though it came first.
        assert_eq!(fs::read(d.path().join("dir/new")).expect("read"), b"n");
        assert!(!d.path().join("dir/.wh..wh..opq").exists());
        assert!(d.path().join("other").is_dir());
        assert!(!d.path().join("other/x").exists());
    }

    #[test]
    fn whiteout_cannot_delete_outside() {
        let outer = tempfile::tempdir().expect("tempdir");
        let dest = outer.path().join("dest");
        fs::create_dir(&dest).expect("mkdir");
        fs::write(outer.path().join("precious"), b"p").expect("write");
        let _ = apply(&dest, &[E::File(".wh..", b"")]);
        let _ = apply(&dest, &[E::File("../.wh.precious", b"")]);
        assert!(outer.path().join("precious").exists());
        assert!(dest.exists());
    }

    #[test]
    fn filter_keeps_only_the_configs_dir() {
        let d = tempfile::tempdir().expect("tempdir");
        let filter = Filter::catalog_configs("/configs/").expect("filter");
        apply_layer(
            &tarball(&[
                E::File("bin/opm", b"elf"),
                E::File("configs/p/c.json", b"{}"),
            ])[..],
            d.path(),
            &filter,
            &mut Budget::new(Sizes::CATALOG),
        )
        .expect("apply");
        assert!(!d.path().join("bin").exists());
        assert!(d.path().join("configs/p/c.json").exists());
        assert_eq!(Filter::catalog_configs("/"), None);
        assert_eq!(Filter::catalog_configs("/../x"), None);
    }

    #[test]
    fn truncated_layer_is_a_tar_error() {
        let d = tempfile::tempdir().expect("tempdir");
        let mut t = tarball(&[E::File("big", &[7u8; 4096])]);
        t.truncate(512 + 1000);
        let err = unpack_layers([&t[..]], &d.path().join("t"), &Filter::All, Sizes::BUNDLE)
            .expect_err("must fail");
        assert!(matches!(err, UnpackError::Tar(_)), "{err}");
        assert!(!d.path().join("t").exists());
    }

    #[test]
    fn compression_is_detected_by_magic() {
        use std::io::Write;
        let plain = tarball(&[E::File("f", b"z")]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&plain).expect("gz");
        let gz = gz.finish().expect("gz");
        let zst = zstd::stream::encode_all(&plain[..], 3).expect("zstd");
        for blob in [plain, gz, zst] {
            let d = tempfile::tempdir().expect("tempdir");
            let reader = decompress(std::io::Cursor::new(blob)).expect("decompress");
            let dest = d.path().join("t");
            unpack_layers([reader], &dest, &Filter::All, Sizes::BUNDLE).expect("apply");
            assert_eq!(fs::read(dest.join("f")).expect("read"), b"z");
        }
    }

    /// A tar stream of `files` files of `size` spaces each, made as it is read: a bomb of any
    /// size costs only what the reader takes from it, which `taken` counts.
    struct Spaces {
        files: u64,
        size: u64,
        /// Header or padding bytes not yet handed out; the body comes after a header.
        pending: Vec<u8>,
        body_left: u64,
        next: u64,
        taken: std::sync::Arc<std::sync::atomic::AtomicU64>,
    }

    impl Spaces {
        fn new(files: u64, size: u64) -> (Spaces, std::sync::Arc<std::sync::atomic::AtomicU64>) {
            let taken = std::sync::Arc::default();
            let spaces = Spaces {
                files,
                size,
                pending: Vec::new(),
                body_left: 0,
                next: 0,
                taken: std::sync::Arc::clone(&taken),
            };
            (spaces, taken)
        }

        /// Gzip-compressed as it is read.
        fn gzipped(self) -> impl Read {
            flate2::read::GzEncoder::new(self, flate2::Compression::fast())
        }
    }

    impl Read for Spaces {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.pending.is_empty() && self.body_left == 0 {
                if self.next < self.files {
                    let mut h = tar::Header::new_gnu();
                    h.set_path(format!("configs/f{:05}.json", self.next))?;
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_mode(0o644);
                    h.set_size(self.size);
                    h.set_cksum();
                    self.pending = h.as_bytes().to_vec();
                    self.body_left = self.size;
                    self.next += 1;
                } else if self.next == self.files {
                    self.pending = vec![0; 1024];
                    self.next += 1;
                } else {
                    return Ok(0);
                }
            }
            let n = if !self.pending.is_empty() {
                let n = buf.len().min(self.pending.len());
                buf[..n].copy_from_slice(&self.pending[..n]);
                self.pending.drain(..n);
                n
            } else {
                let n = buf
                    .len()
                    .min(usize::try_from(self.body_left).unwrap_or(usize::MAX));
                buf[..n].fill(b' ');
                self.body_left -= n as u64;
                if self.body_left == 0 {
                    let pad = (512 - self.size % 512) % 512;
                    self.pending = vec![0; pad as usize];
                }
                n
            };
            self.taken
                .fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
            Ok(n)
        }
    }

    const SMALL: Sizes = Sizes {
        total: 8 << 20,
        file: 4 << 20,
    };

    /// Unpacks a gzip layer of `files` files of `size` spaces within [`SMALL`], which must
    /// fail, and checks nothing is left behind; returns the error and how many bytes of the
    /// uncompressed stream were made (so read) before it.
    fn refuse_spaces(files: u64, size: u64) -> (UnpackError, u64) {
        let d = tempfile::tempdir().expect("tempdir");
        let dest = d.path().join("t");
        let (spaces, taken) = Spaces::new(files, size);
        let layer = decompress(spaces.gzipped()).expect("gzip");
        let err = unpack_layers([layer], &dest, &Filter::All, SMALL).expect_err("too large");
        assert!(!dest.exists(), "nothing is left behind");
        (err, taken.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// 1 GiB of spaces in 1,024 files under the per-file limit, in a gzip layer of about a
    /// megabyte: the unpack stops at the file that would pass the total, having read little
    /// more than the total from the stream, and the directory is gone.
    #[test]
    fn a_gzip_bomb_over_the_total_stops_mid_stream_and_leaves_nothing() {
        let (err, read) = refuse_spaces(1024, 1 << 20);
        assert!(
            matches!(err, UnpackError::TooLarge(Over::Total { limit }) if limit == SMALL.total),
            "{err}"
        );
        assert!(
            read < SMALL.total + (2 << 20),
            "read {read} bytes of the stream"
        );
    }

    /// One file whose header declares 3 GiB is refused before a byte of it is written.
    #[test]
    fn a_file_over_the_per_file_limit_is_refused_before_it_is_written() {
        let (err, read) = refuse_spaces(1, 3 << 30);
        match &err {
            UnpackError::TooLarge(Over::File { path, size, limit }) => {
                assert_eq!(path, Path::new("configs/f00000.json"));
                assert_eq!((*size, *limit), (3 << 30, SMALL.file));
            }
            other => panic!("{other}"),
        }
        assert!(read < 2 << 20, "read {read} bytes of the stream");
    }

    /// A file read again and again through links reads like that many files.
    #[test]
    fn links_to_a_large_file_count_each_time_they_are_read() {
        let d = tempfile::tempdir().expect("tempdir");
        // 2.5 MiB, read three times fits in 8 MiB, four times does not.
        let big = vec![b' '; 5 << 19];
        let mut entries = vec![E::File("configs/big.json", &big)];
        let names: Vec<String> = (0..3).map(|i| format!("configs/l{i}.json")).collect();
        entries.push(E::Symlink(&names[0], "big.json"));
        entries.push(E::HardLink(&names[1], "configs/big.json"));
        let layer = tarball(&entries);
        let dest = d.path().join("ok");
        unpack_layers([&layer[..]], &dest, &Filter::All, SMALL).expect("7.5 MiB read");
        entries.push(E::Symlink(&names[2], "big.json"));
        let layer = tarball(&entries);
        let dest = d.path().join("over");
        let err = unpack_layers([&layer[..]], &dest, &Filter::All, SMALL).expect_err("10 MiB read");
        assert!(
            matches!(err, UnpackError::TooLarge(Over::Links { size, .. }) if size == 4 * (5 << 19)),
            "{err}"
        );
        assert!(!dest.exists());
    }

    /// Real content is nowhere near the defaults: the largest catalog and bundle at hand unpack.
    #[test]
    fn real_catalogs_and_bundles_fit_the_default_limits() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
        for (dir, sizes) in [
            ("catalogs/community-v4.21", Sizes::CATALOG),
            ("bundles/argocd-operator/0.18.0", Sizes::BUNDLE),
        ] {
            let image = if sizes == Sizes::CATALOG {
                crate::catalog_image(&data.join(dir))
            } else {
                crate::bundle_image(&data.join(dir))
            }
            .expect("image");
            let d = tempfile::tempdir().expect("tempdir");
            let dest = d.path().join("t");
            let layers: Vec<_> = image
                .layers()
                .iter()
                .map(|l| decompress(l.data()).expect("gzip"))
                .collect();
            let stats = unpack_layers(layers, &dest, &Filter::All, sizes).expect(dir);
            assert!(stats.bytes > 1 << 20, "{dir}: {stats:?}");
            assert!(stats.bytes * 30 < sizes.total, "{dir}: {stats:?}");
        }
    }

    mod hostile_props {
        use super::*;
        use proptest::prelude::*;

        #[derive(Debug, Clone)]
        enum Kind {
            Dir,
            File,
            Symlink(String),
            HardLink(String),
        }

        fn path() -> impl Strategy<Value = String> {
            (
                any::<bool>(),
                prop::collection::vec(
                    prop::sample::select(vec!["a", "b", "..", ".", ".wh.a", ".wh..wh..opq"]),
                    1..4,
                ),
            )
                .prop_map(|(abs, parts)| {
                    format!("{}{}", if abs { "/" } else { "" }, parts.join("/"))
                })
        }

        fn entry() -> impl Strategy<Value = (String, Kind)> {
            let kind = prop_oneof![
                Just(Kind::Dir),
                Just(Kind::File),
                path().prop_map(Kind::Symlink),
                path().prop_map(Kind::HardLink),
            ];
            (path(), kind)
        }

        fn layer(entries: &[(String, Kind)]) -> Vec<u8> {
            let es: Vec<E<'_>> = entries
                .iter()
                .map(|(n, k)| match k {
                    Kind::Dir => E::Dir(n),
                    Kind::File => E::File(n, b"data"),
                    Kind::Symlink(t) => E::Symlink(n, t),
                    Kind::HardLink(t) => E::HardLink(n, t),
                })
                .collect();
            tarball(&es)
        }

        fn snapshot(root: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
            let mut out = Vec::new();
            let mut stack = vec![root.to_path_buf()];
            while let Some(dir) = stack.pop() {
                for e in fs::read_dir(&dir).expect("ls").flatten() {
                    let p = e.path();
                    let ft = e.file_type().expect("type");
                    if ft.is_dir() {
                        stack.push(p.clone());
                        out.push((p, None));
                    } else if ft.is_file() {
                        out.push((p.clone(), Some(fs::read(&p).expect("read"))));
                    } else {
                        out.push((p, None));
                    }
                }
            }
            out.sort();
            out
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(300))]

            /// Whatever two layers contain, nothing outside the target changes and every symlink
            /// inside it resolves inside it.
            #[test]
            fn hostile_layers_stay_inside(
                lower in prop::collection::vec(entry(), 0..8),
                upper in prop::collection::vec(entry(), 0..8),
            ) {
                let outer = tempfile::tempdir().expect("tempdir");
                let dest = outer.path().join("dest");
                fs::create_dir(&dest).expect("mkdir");
                fs::write(outer.path().join("a"), b"outside").expect("write");
                fs::create_dir(outer.path().join("b")).expect("mkdir");
                fs::write(outer.path().join("b/a"), b"outside").expect("write");
                let outside: Vec<_> = snapshot(outer.path())
                    .into_iter()
                    .filter(|(p, _)| !p.starts_with(&dest))
                    .collect();

                let _ = apply_all(&[&layer(&lower)[..], &layer(&upper)[..]], &dest);

                let after: Vec<_> = snapshot(outer.path())
                    .into_iter()
                    .filter(|(p, _)| !p.starts_with(&dest))
                    .collect();
                prop_assert_eq!(&outside, &after);
                let real_dest = fs::canonicalize(&dest).expect("canonicalize");
                for (p, _) in snapshot(&dest) {
                    if let Ok(real) = fs::canonicalize(&p) {
                        prop_assert!(real.starts_with(&real_dest), "{} -> {}", p.display(), real.display());
                    }
                }
            }
        }
    }
}
