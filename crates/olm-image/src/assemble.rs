//! Building catalog and bundle images from directories, byte for byte reproducibly.
//!
//! Everything here is pure: directories in, blobs and their digests out. Pushing is the shell's
//! job ([`crate::Client::push`]). Reproducible means the same directory always gives the same
//! image digest: entries are sorted by name, mtimes are zero, owners are 0/0 with no names,
//! modes are normalised to 0o755 (directories and executables) or 0o644, and gzip headers carry
//! no timestamp. The image config carries no creation time and no history for the same reason.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use flate2::{Compression, GzBuilder};

use crate::digest::{Digest, Hasher};

pub use olm_k8s::CATALOG_CONFIGS_LABEL;
/// Where catalog images built here keep the FBC, the value of [`CATALOG_CONFIGS_LABEL`].
pub const CATALOG_CONFIGS_DIR: &str = "/configs";

/// OCI image manifest media type; every image we build uses it.
pub const OCI_MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// OCI image config media type.
pub const OCI_CONFIG_MEDIA_TYPE: &str = "application/vnd.oci.image.config.v1+json";
/// OCI gzip layer media type; every layer we build uses it.
pub const OCI_LAYER_GZIP_MEDIA_TYPE: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// Why an image could not be built from a directory.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A required input is missing.
    #[error("{path}: {what} not found")]
    Missing {
        /// The path that should exist.
        path: PathBuf,
        /// What it should be.
        what: &'static str,
    },
    /// A symlink in the source would point outside the image once unpacked.
    #[error("{path}: symlink target {target} points outside the directory being packed")]
    SymlinkEscape {
        /// The symlink.
        path: PathBuf,
        /// Its target.
        target: PathBuf,
    },
    /// A socket, fifo or device file: images carry only files, directories and symlinks.
    #[error("{path}: only regular files, directories and symlinks can be packed")]
    UnsupportedFileType {
        /// The file.
        path: PathBuf,
    },
    /// A name starting with `.wh.` would be read as a whiteout (a deletion) when unpacked.
    #[error("{path}: names starting with \".wh.\" are reserved for layer whiteouts")]
    WhiteoutName {
        /// The file.
        path: PathBuf,
    },
    /// A file name that is not UTF-8 cannot be written portably into a tar header.
    #[error("{path}: file name is not valid UTF-8")]
    NonUtf8Name {
        /// The file.
        path: PathBuf,
    },
    /// `metadata/annotations.yaml` is not a YAML map with an `annotations` map of strings.
    #[error("{path}: invalid bundle annotations: {message}")]
    Annotations {
        /// The annotations file.
        path: PathBuf,
        /// What was wrong.
        message: String,
    },
    /// A program image (see [`crate::runtime::Program`]) asked for something it cannot hold.
    #[error("{value}: {problem}")]
    Program {
        /// The name or path asked for.
        value: String,
        /// Why it cannot be.
        problem: &'static str,
    },
    /// Reading the source failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory being read.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> BuildError + '_ {
    move |source| BuildError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// One gzip-compressed tar layer.
#[derive(Clone)]
pub struct Layer {
    data: Vec<u8>,
    digest: Digest,
    diff_id: Digest,
}

impl Layer {
    /// The compressed bytes, as stored in the registry.
    pub fn data(&self) -> &[u8] {
        &self.data
    }
    /// Digest of the compressed bytes (the blob digest in the manifest).
    pub fn digest(&self) -> &Digest {
        &self.digest
    }
    /// Digest of the uncompressed tar (the `rootfs.diff_ids` entry in the config).
    pub fn diff_id(&self) -> &Digest {
        &self.diff_id
    }
}

impl std::fmt::Debug for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Layer")
            .field("digest", &self.digest)
            .field("size", &self.data.len())
            .finish()
    }
}

/// A complete image ready to push: config, layers and the manifest that ties them together.
#[derive(Debug, Clone)]
pub struct Image {
    labels: BTreeMap<String, String>,
    config: Vec<u8>,
    config_digest: Digest,
    layers: Vec<Layer>,
    manifest: Vec<u8>,
    digest: Digest,
}

impl Image {
    /// The manifest digest: what `REF@sha256:…` names once pushed. Known before pushing because
    /// the manifest bytes are ours.
    pub fn digest(&self) -> &Digest {
        &self.digest
    }
    /// The config labels.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }
    /// The config blob (JSON).
    pub fn config(&self) -> &[u8] {
        &self.config
    }
    /// Digest of the config blob.
    pub fn config_digest(&self) -> &Digest {
        &self.config_digest
    }
    /// The layers, bottom first.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }
    /// The manifest bytes, pushed exactly as they are.
    pub fn manifest(&self) -> &[u8] {
        &self.manifest
    }
}

/// A catalog image: the FBC directory `dir` becomes `/configs/` in a single layer, and the config
/// carries `operators.operatorframework.io.index.configs.v1=/configs`, which is how catalogd
/// finds the catalog inside the image.
///
/// The catalog content is not validated here (that is `olm catalog validate`'s job); the image
/// carries exactly the files of `dir`.
pub fn catalog_image(dir: &Path) -> Result<Image, BuildError> {
    let (layer, labels) = catalog_layer(dir)?;
    Ok(image_from_layers(labels, vec![layer]))
}

/// A catalog image's `/configs` layer from `dir`, and the label that points at it.
pub(crate) fn catalog_layer(dir: &Path) -> Result<(Layer, BTreeMap<String, String>), BuildError> {
    require_dir(dir, "catalog directory")?;
    let prefix = CATALOG_CONFIGS_DIR.trim_start_matches('/');
    let layer = layer_from_dirs(&[(dir.to_path_buf(), prefix.to_string())])?;
    let labels = BTreeMap::from([(
        CATALOG_CONFIGS_LABEL.to_string(),
        CATALOG_CONFIGS_DIR.to_string(),
    )]);
    Ok((layer, labels))
}

/// A registry+v1 bundle image: `manifests/` and `metadata/` of `dir` (and `tests/` when present,
/// where operator-sdk keeps scorecard config) at the image root, labelled with every entry of
/// the `annotations` map in `metadata/annotations.yaml`, as `operator-sdk`'s bundle Dockerfile does.
pub fn bundle_image(dir: &Path) -> Result<Image, BuildError> {
    require_dir(dir, "bundle directory")?;
    require_dir(&dir.join("manifests"), "bundle manifests/ directory")?;
    let annotations_path = dir.join("metadata").join("annotations.yaml");
    if !annotations_path.is_file() {
        return Err(BuildError::Missing {
            path: annotations_path,
            what: "bundle metadata/annotations.yaml",
        });
    }
    let labels = bundle_labels(&annotations_path)?;
    let mut dirs = vec![
        (dir.join("manifests"), "manifests".to_string()),
        (dir.join("metadata"), "metadata".to_string()),
    ];
    if dir.join("tests").is_dir() {
        dirs.push((dir.join("tests"), "tests".to_string()));
    }
    let layer = layer_from_dirs(&dirs)?;
    Ok(image_from_layers(labels, vec![layer]))
}

fn require_dir(path: &Path, what: &'static str) -> Result<(), BuildError> {
    if path.is_dir() {
        Ok(())
    } else {
        Err(BuildError::Missing {
            path: path.to_path_buf(),
            what,
        })
    }
}

/// The `annotations` of a bundle's `metadata/annotations.yaml`, every scalar as the text the Go
/// side reads into its `map[string]string` (so `…: true` is the label value `true`).
fn bundle_labels(path: &Path) -> Result<BTreeMap<String, String>, BuildError> {
    let text = fs::read_to_string(path).map_err(io_at(path))?;
    let invalid = |message: String| BuildError::Annotations {
        path: path.to_path_buf(),
        message,
    };
    let doc = olm_goenc::yamlread::parse_document_with(&text, &Default::default())
        .map_err(|e| invalid(e.to_string()))?;
    let Some(annotations) = doc
        .get("annotations")
        .and_then(serde_json::Value::as_object)
    else {
        return Err(invalid("missing field `annotations`".into()));
    };
    annotations
        .iter()
        .map(|(k, v)| {
            olm_goenc::yamlread::scalar_text(v)
                .map(|s| (k.clone(), s))
                .ok_or_else(|| {
                    invalid(format!(
                        "annotation {} must be a string",
                        olm_goenc::quote(k)
                    ))
                })
        })
        .collect()
}

/// Assembles config and manifest around finished layers.
pub fn image_from_layers(labels: BTreeMap<String, String>, layers: Vec<Layer>) -> Image {
    image_with_config(labels, &RunConfig::default(), layers)
}

/// How a container of an application image starts (the OCI config's `Entrypoint`, `Cmd`,
/// `Env`, `User` and `WorkingDir`); empty fields are left out of the config, so catalog and
/// bundle images, which never run, carry none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunConfig {
    /// The executable and its first arguments.
    pub entrypoint: Vec<String>,
    /// Default arguments after the entrypoint.
    pub cmd: Vec<String>,
    /// `NAME=value` pairs.
    pub env: Vec<String>,
    /// `uid[:gid]` the process runs as.
    pub user: String,
    /// The working directory.
    pub working_dir: String,
}

/// [`image_from_layers`] for an image that runs: `run` says how its container starts.
pub fn image_with_config(
    labels: BTreeMap<String, String>,
    run: &RunConfig,
    layers: Vec<Layer>,
) -> Image {
    let config = ConfigJson {
        architecture: go_arch(),
        config: InnerConfig {
            cmd: &run.cmd,
            entrypoint: &run.entrypoint,
            env: &run.env,
            labels: &labels,
            user: &run.user,
            working_dir: &run.working_dir,
        },
        os: "linux",
        rootfs: RootFs {
            diff_ids: layers.iter().map(|l| l.diff_id.as_str()).collect(),
            kind: "layers",
        },
    };
    // Serialising plain structs, string maps and strings cannot fail.
    let config_bytes = serde_json::to_vec(&config).unwrap_or_default();
    let config_digest = Digest::of(&config_bytes);
    let manifest = ManifestJson {
        config: Descriptor {
            digest: config_digest.as_str(),
            media_type: OCI_CONFIG_MEDIA_TYPE,
            size: config_bytes.len() as u64,
        },
        layers: layers
            .iter()
            .map(|l| Descriptor {
                digest: l.digest.as_str(),
                media_type: OCI_LAYER_GZIP_MEDIA_TYPE,
                size: l.data.len() as u64,
            })
            .collect(),
        media_type: OCI_MANIFEST_MEDIA_TYPE,
        schema_version: 2,
    };
    let manifest_bytes = serde_json::to_vec(&manifest).unwrap_or_default();
    let digest = Digest::of(&manifest_bytes);
    Image {
        labels,
        config: config_bytes,
        config_digest,
        layers,
        manifest: manifest_bytes,
        digest,
    }
}

// Field order is alphabetical, like canonical JSON, so the bytes look like what other tools emit.
#[derive(serde::Serialize)]
struct ConfigJson<'a> {
    architecture: &'static str,
    config: InnerConfig<'a>,
    os: &'static str,
    rootfs: RootFs<'a>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "PascalCase")]
struct InnerConfig<'a> {
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    cmd: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    entrypoint: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    env: &'a [String],
    labels: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "str::is_empty")]
    user: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    working_dir: &'a str,
}

#[derive(serde::Serialize)]
struct RootFs<'a> {
    diff_ids: Vec<&'a str>,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct ManifestJson<'a> {
    config: Descriptor<'a>,
    layers: Vec<Descriptor<'a>>,
    media_type: &'static str,
    schema_version: u32,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor<'a> {
    digest: &'a str,
    media_type: &'static str,
    size: u64,
}

/// The Go name of the architecture we run on: images are labelled with the platform that built
/// them, as `docker build` does. Catalog and bundle content is the same on every platform.
fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" if cfg!(target_endian = "little") => "ppc64le",
        "powerpc64" => "ppc64",
        "arm" => "arm",
        "s390x" => "s390x",
        "riscv64" => "riscv64",
        other => other,
    }
}

/// Packs directories into one reproducible gzip layer. Each `(source, prefix)` puts the contents
/// of `source` under `prefix/` in the image (the prefix directories themselves are included).
/// Prefixes must be relative paths without `..`.
pub fn layer_from_dirs(dirs: &[(PathBuf, String)]) -> Result<Layer, BuildError> {
    layer_with(|tar| {
        // Never follow symlinks: a link is packed as a link (after the escape check).
        tar.follow_symlinks(false);
        let mut sorted: Vec<&(PathBuf, String)> = dirs.iter().collect();
        sorted.sort_by(|a, b| a.1.cmp(&b.1));
        let mut written_prefix_dirs = std::collections::BTreeSet::new();
        for (source, prefix) in sorted {
            let prefix = prefix.trim_matches('/');
            // Parent directories of the prefix, outermost first.
            let mut acc = String::new();
            for part in prefix.split('/').filter(|p| !p.is_empty()) {
                if !acc.is_empty() {
                    acc.push('/');
                }
                acc.push_str(part);
                if written_prefix_dirs.insert(acc.clone()) {
                    append_dir(tar, &acc, source)?;
                }
            }
            walk(tar, source, source, prefix)?;
        }
        Ok(())
    })
}

/// One entry of a layer listed explicitly: the file system of an image that runs, where owners
/// and modes matter (a cache directory its non-root user writes to, `/tmp` with its sticky bit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The path inside the image, relative (`usr/local/bin/olm`).
    pub path: String,
    /// A directory, or a file with these bytes.
    pub content: Option<Vec<u8>>,
    /// Permission bits, including the sticky bit.
    pub mode: u32,
    /// Owner and group id.
    pub owner: u32,
}

/// Packs listed entries into one reproducible gzip layer, in path order (a parent before its
/// children), each with its own mode and owner.
pub fn layer_from_entries(entries: &[Entry]) -> Result<Layer, BuildError> {
    let mut sorted: Vec<&Entry> = entries.iter().collect();
    sorted.sort_by(|a, b| a.path.cmp(&b.path));
    layer_with(|tar| {
        for e in sorted {
            let path = e.path.trim_matches('/');
            let kind = match e.content {
                Some(_) => tar::EntryType::Regular,
                None => tar::EntryType::Directory,
            };
            let mut header = base_header(kind, e.mode);
            header.set_uid(u64::from(e.owner));
            header.set_gid(u64::from(e.owner));
            let at = io_at(Path::new(path));
            match &e.content {
                Some(bytes) => {
                    header.set_size(bytes.len() as u64);
                    tar.append_data(&mut header, path, bytes.as_slice())
                        .map_err(at)?;
                }
                None => {
                    header.set_size(0);
                    tar.append_data(&mut header, format!("{path}/"), io::empty())
                        .map_err(at)?;
                }
            }
        }
        Ok(())
    })
}

/// One reproducible gzip layer holding a single regular file (mode 0o644) at `path`, whose
/// `size` bytes are read from `content` while the layer is made, never held whole: for
/// generated files of any size. Parent directories are left implicit.
///
/// The gzip stream is a series of members, one per mebibyte of the tar stream (gzip readers
/// read such a stream as one, as `gunzip` does), and a mebibyte equal to the one before it
/// is not compressed again: a file of gigabytes of one byte is made in the time it takes to
/// hash it.
///
/// # Errors
/// [`BuildError::Io`] naming `path` when `content` fails or ends before `size` bytes, or the
/// path cannot be written into a tar header.
pub fn layer_from_stream(
    path: &str,
    size: u64,
    mut content: impl io::Read,
) -> Result<Layer, BuildError> {
    const CHUNK: usize = 1 << 20;
    let path = path.trim_matches('/');
    let at = || io_at(Path::new(path));
    let mut header = base_header(tar::EntryType::Regular, 0o644);
    header.set_path(path).map_err(at())?;
    header.set_size(size);
    header.set_cksum();
    let mut members = Members::default();
    members.push(header.as_bytes()).map_err(at())?;
    let mut chunk = vec![0u8; CHUNK];
    let mut left = size;
    while left > 0 {
        let want = usize::try_from(left).map_or(CHUNK, |l| l.min(CHUNK));
        content.read_exact(&mut chunk[..want]).map_err(at())?;
        members.push(&chunk[..want]).map_err(at())?;
        left -= want as u64;
    }
    // Padding to a whole block, then the end of the archive, as tar::Builder writes them.
    let pad = usize::try_from((512 - size % 512) % 512).unwrap_or(0);
    members.push(&vec![0u8; pad + 1024]).map_err(at())?;
    Ok(members.finish())
}

/// A tar stream compressed as a series of gzip members, with the uncompressed digest.
#[derive(Default)]
struct Members {
    data: Vec<u8>,
    hasher: Hasher,
    /// The last piece compressed, and its member.
    last: Option<(Vec<u8>, Vec<u8>)>,
}

impl Members {
    fn push(&mut self, piece: &[u8]) -> io::Result<()> {
        self.hasher.update(piece);
        if let Some((raw, member)) = &self.last
            && raw.as_slice() == piece
        {
            self.data.extend_from_slice(member);
            return Ok(());
        }
        let mut gz = GzBuilder::new()
            .mtime(0)
            .write(Vec::new(), Compression::default());
        gz.write_all(piece)?;
        let member = gz.finish()?;
        self.data.extend_from_slice(&member);
        self.last = Some((piece.to_vec(), member));
        Ok(())
    }

    fn finish(self) -> Layer {
        let digest = Digest::of(&self.data);
        Layer {
            data: self.data,
            digest,
            diff_id: self.hasher.finish(),
        }
    }
}

type LayerTar = tar::Builder<HashingWriter<flate2::write::GzEncoder<Vec<u8>>>>;

/// A layer of what `fill` writes into a tar with no timestamps in its gzip header, hashed on its
/// way into the compressor.
fn layer_with(
    fill: impl FnOnce(&mut LayerTar) -> Result<(), BuildError>,
) -> Result<Layer, BuildError> {
    let gz = GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), Compression::default());
    let mut tar = tar::Builder::new(HashingWriter {
        inner: gz,
        hasher: Hasher::default(),
    });
    fill(&mut tar)?;
    let hashing = tar.into_inner().map_err(io_at(Path::new("<layer>")))?;
    let diff_id = hashing.hasher.finish();
    let data = hashing
        .inner
        .finish()
        .map_err(io_at(Path::new("<layer>")))?;
    let digest = Digest::of(&data);
    Ok(Layer {
        data,
        digest,
        diff_id,
    })
}

fn walk<W: Write>(
    tar: &mut tar::Builder<W>,
    root: &Path,
    dir: &Path,
    prefix: &str,
) -> Result<(), BuildError> {
    let mut children: Vec<(String, PathBuf)> = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_at(dir))? {
        let entry = entry.map_err(io_at(dir))?;
        let path = entry.path();
        let name = entry
            .file_name()
            .into_string()
            .map_err(|_| BuildError::NonUtf8Name { path: path.clone() })?;
        if name.starts_with(".wh.") {
            return Err(BuildError::WhiteoutName { path });
        }
        children.push((name, path));
    }
    // Byte order of names: stable across file systems and locales.
    children.sort();
    for (name, path) in children {
        let image_path = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        let meta = fs::symlink_metadata(&path).map_err(io_at(&path))?;
        let ft = meta.file_type();
        if ft.is_dir() {
            append_dir(tar, &image_path, &path)?;
            walk(tar, root, &path, &image_path)?;
        } else if ft.is_file() {
            use std::os::unix::fs::PermissionsExt;
            let mode = if meta.permissions().mode() & 0o111 != 0 {
                0o755
            } else {
                0o644
            };
            let mut header = base_header(tar::EntryType::Regular, mode);
            header.set_size(meta.len());
            // Large reads: catalog files run to megabytes, and io::copy alone reads 8 KiB a time.
            let file = io::BufReader::with_capacity(
                256 * 1024,
                fs::File::open(&path).map_err(io_at(&path))?,
            );
            tar.append_data(&mut header, &image_path, file)
                .map_err(io_at(&path))?;
        } else if ft.is_symlink() {
            let target = fs::read_link(&path).map_err(io_at(&path))?;
            let rel_parent = path
                .parent()
                .and_then(|p| p.strip_prefix(root).ok())
                .unwrap_or(Path::new(""));
            if !link_stays_inside(rel_parent, &target) {
                return Err(BuildError::SymlinkEscape { path, target });
            }
            let mut header = base_header(tar::EntryType::Symlink, 0o777);
            header.set_size(0);
            tar.append_link(&mut header, &image_path, &target)
                .map_err(io_at(&path))?;
        } else {
            return Err(BuildError::UnsupportedFileType { path });
        }
    }
    Ok(())
}

fn append_dir<W: Write>(
    tar: &mut tar::Builder<W>,
    image_path: &str,
    source: &Path,
) -> Result<(), BuildError> {
    let mut header = base_header(tar::EntryType::Directory, 0o755);
    header.set_size(0);
    tar.append_data(&mut header, format!("{image_path}/"), io::empty())
        .map_err(io_at(source))
}

fn base_header(kind: tar::EntryType, mode: u32) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_mode(mode);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header
}

/// Whether `target`, read relative to the directory `parent` (itself relative to the packed
/// root), stays inside the root. Absolute targets never do: once unpacked on a host they would
/// point into the host's file system.
///
/// Nor does a target with `..` after a name (`x/b/../..`): read as text it may stay inside, but
/// the kernel follows `x/b` first, and were `x/b` a link to `..` the climb would start from
/// there and end outside. Climbs are allowed only at the start, from the link's own directory,
/// whose ancestors are real directories; each link on the way is held to the same rule, so
/// nothing that follows links from inside the root can leave it.
pub(crate) fn link_stays_inside(parent: &Path, target: &Path) -> bool {
    let mut depth: usize = 0;
    for c in parent.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            _ => return false,
        }
    }
    let mut named = false;
    for c in target.components() {
        match c {
            Component::Normal(_) => {
                depth += 1;
                named = true;
            }
            Component::CurDir => {}
            Component::ParentDir if named => return false,
            Component::ParentDir => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

/// Hashes the uncompressed tar on its way into the compressor (the layer's diff id).
struct HashingWriter<W> {
    inner: W,
    hasher: Hasher,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A streamed layer unpacks to the file it was given, repeated mebibytes and a ragged end
    /// alike, and its diff id is the digest of the tar stream gzip readers see.
    #[test]
    fn streamed_layers_are_one_gzip_stream_with_the_right_diff_id() {
        use std::io::Read as _;
        let size = 3 * (1 << 20) + 1000;
        let content: Vec<u8> = (0..size)
            .map(|i| if i < 1 << 21 { b' ' } else { (i % 251) as u8 })
            .collect();
        let layer =
            layer_from_stream("configs/big.json", size as u64, &content[..]).expect("layer");
        let mut tar = Vec::new();
        flate2::read::MultiGzDecoder::new(layer.data())
            .read_to_end(&mut tar)
            .expect("gunzip");
        assert_eq!(layer.diff_id(), &Digest::of(&tar));
        assert_eq!(layer.digest(), &Digest::of(layer.data()));
        let mut archive = tar::Archive::new(&tar[..]);
        let mut entries = archive.entries().expect("entries");
        let mut entry = entries.next().expect("one entry").expect("entry");
        assert_eq!(entry.path().expect("path"), Path::new("configs/big.json"));
        let mut got = Vec::new();
        entry.read_to_end(&mut got).expect("read");
        assert!(got == content, "content differs");
        drop(entry);
        assert!(entries.next().is_none());
        let short = layer_from_stream("f", 10, &b"abc"[..]).expect_err("ends early");
        assert!(short.to_string().starts_with("f: "), "{short}");
        // The same input, the same layer.
        let again =
            layer_from_stream("configs/big.json", size as u64, &content[..]).expect("layer");
        assert_eq!(again.digest(), layer.digest());
    }

    #[test]
    fn links_inside_and_outside() {
        assert!(link_stays_inside(Path::new("a/b"), Path::new("../c")));
        assert!(link_stays_inside(Path::new("a"), Path::new("..")));
        assert!(!link_stays_inside(Path::new("a"), Path::new("../..")));
        assert!(!link_stays_inside(Path::new(""), Path::new("/etc/passwd")));
        assert!(!link_stays_inside(Path::new("a"), Path::new("../../etc")));
        assert!(link_stays_inside(
            Path::new("a/b"),
            Path::new("../../c/./d")
        ));
        // Climbing back out of a name: the name may be a link that leads elsewhere first.
        assert!(!link_stays_inside(Path::new(""), Path::new("x/b/../..")));
        assert!(!link_stays_inside(Path::new("a"), Path::new("b/../c")));
    }

    #[test]
    fn same_dir_same_digest_and_labels() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(dir.path().join("pkg")).expect("mkdir");
        fs::write(dir.path().join("pkg/catalog.json"), b"{}").expect("write");
        let a = catalog_image(dir.path()).expect("build");
        // Touching mtimes must not change anything.
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(dir.path().join("pkg/catalog.json"), b"{}").expect("write");
        let b = catalog_image(dir.path()).expect("build");
        assert_eq!(a.digest(), b.digest());
        assert_eq!(a.layers()[0].data(), b.layers()[0].data());
        assert_eq!(
            a.labels().get(CATALOG_CONFIGS_LABEL).map(String::as_str),
            Some("/configs")
        );
        let config: serde_json::Value = serde_json::from_slice(a.config()).expect("json");
        assert_eq!(
            config["config"]["Labels"][CATALOG_CONFIGS_LABEL],
            serde_json::json!("/configs")
        );
        assert_eq!(
            config["rootfs"]["diff_ids"][0],
            serde_json::json!(a.layers()[0].diff_id().as_str())
        );
    }

    #[test]
    fn escaping_symlink_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::os::unix::fs::symlink("../../etc/passwd", dir.path().join("evil")).expect("symlink");
        let err = catalog_image(dir.path()).expect_err("must fail");
        assert!(matches!(err, BuildError::SymlinkEscape { .. }), "{err}");
    }

    #[test]
    fn whiteout_names_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::write(dir.path().join(".wh.catalog.json"), b"{}").expect("write");
        let err = catalog_image(dir.path()).expect_err("must fail");
        assert!(matches!(err, BuildError::WhiteoutName { .. }), "{err}");
    }

    #[test]
    fn bundle_without_annotations_says_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir_all(dir.path().join("manifests")).expect("mkdir");
        let err = bundle_image(dir.path()).expect_err("must fail");
        assert!(
            err.to_string().contains("metadata/annotations.yaml"),
            "{err}"
        );
    }
}
