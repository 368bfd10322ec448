//! Loading catalogs: a directory tree, one file, a reader (stdin), or catalogd's `catalog.jsonl`.
//!
//! # Order
//! The result is deterministic: files are visited depth-first with the entries of each directory in
//! byte-wise name order (the order of Go's `fs.WalkDir`), and the documents of a file keep their order.
//! Files (and the documents of large YAML files) are parsed in parallel; the order does not depend on it.
//!
//! # Decoding (operator-registry parity)
//! * Every file is parsed whatever its extension, unless excluded by an `.indexignore` file (gitignore
//!   syntax, scoped to the directory holding it; a pattern matching a parent directory excludes the
//!   files below it). `.indexignore` files themselves are skipped.
//! * A file whose first non-whitespace byte (within 4096 bytes) is `{` is a stream of JSON objects;
//!   anything else is a YAML stream split at `---` lines (only spaces or a `#` comment may follow the
//!   marker). Documents that are only whitespace are skipped; a document that is only comments decodes
//!   as `null` and fails with the missing-schema error, as upstream.
//! * YAML scalars resolve as sigs.k8s.io/yaml does for the common cases (`yes`/`no`/`on`/`off` are
//!   booleans); numbers pass through `float64`.
//! * Every blob is re-encoded as canonical JSON (see [`crate::canonical`]); `schema`, `package` and
//!   `name` are looked up case-insensitively and two top-level keys differing only in case are an error.
//! * Unlike upstream, a key repeated verbatim in one mapping is an error (upstream keeps the last one).
//! * Symbolic links are read as the files they point to (a link to a directory is not descended, as
//!   `fs.WalkDir`).
//! * Only regular files are read. opm hands every walked entry that is not a directory to its
//!   decoder and fails the whole load when one cannot be read, so a tree holding a named pipe, a
//!   socket or a device (directly or through a link, e.g. to `/dev/zero`) is refused, naming the
//!   entry and what it is, before any file is read; it is never skipped silently, which would load
//!   a catalog opm does not. Such an entry listed in `.indexignore` is never opened, as with opm.
//!   Files are opened without blocking and checked again once open, so one swapped for a pipe
//!   after the walk is refused too, not waited on.
//! * Collections may nest [`MAX_NESTING_DEPTH`] (10,000) deep in every format, the document's
//!   top level counting as the first, as Go's `encoding/json` and go-yaml allow; one level more
//!   fails with `exceeded max depth of 10000` at the line where it happens.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use olm_goenc::json::{Kind, MAX_NESTING_DEPTH, UnmarshalTypeError, nesting_too_deep};
use olm_goenc::{json_syntax, yamlread};
use rayon::prelude::*;
use serde::Deserialize;
use serde::de::Deserializer;
use serde_json::value::RawValue;

use crate::canonical;
use crate::model::*;

/// An error while loading, naming the file and (when known) the 1-based line.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum LoadError {
    /// A file or directory could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file or directory.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// A document is not valid JSON or YAML, or not a valid blob of its schema.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file (or the name given for a stream).
        path: String,
        /// The 1-based line the problem is reported at.
        line: usize,
        /// What is wrong, as opm words it.
        message: String,
    },
}

impl LoadError {
    fn io(path: &Path, e: &io::Error) -> Self {
        let message = match e.raw_os_error() {
            Some(40) => "too many levels of symbolic links".to_owned(),
            _ => strip_os_error(&e.to_string()),
        };
        LoadError::Io {
            path: path.display().to_string(),
            message,
        }
    }
    fn parse(path: &str, line: usize, message: impl Into<String>) -> Self {
        LoadError::Parse {
            path: path.to_owned(),
            line,
            message: message.into(),
        }
    }
    /// The file the error is about.
    pub fn path(&self) -> &str {
        match self {
            LoadError::Io { path, .. } | LoadError::Parse { path, .. } => path,
        }
    }
}

fn strip_os_error(s: &str) -> String {
    // "Permission denied (os error 13)" -> "permission denied", the wording Go users know.
    let s = s.split(" (os error").next().unwrap_or(s);
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Options for loading.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// Keep the canonical JSON of typed blobs (needed for a byte-exact catalogd JSONL of blobs with
    /// unknown fields; costs memory roughly equal to the catalog size).
    pub keep_raw: bool,
    /// Keep only what validation reads ([`crate::model::Blob::drop_content`]): a catalog loaded
    /// only to be validated then takes a fraction of its size in memory.
    pub validate_only: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            keep_raw: true,
            validate_only: false,
        }
    }
}

/// Loads a catalog directory (or a single file, if `path` is a file).
pub fn load_path(path: &Path) -> Result<Catalog, LoadError> {
    load_path_with(path, &LoadOptions::default())
}

/// [`load_path`] with options.
pub fn load_path_with(path: &Path, opts: &LoadOptions) -> Result<Catalog, LoadError> {
    let files = catalog_files(path)?;
    let results: Vec<Result<Vec<Blob>, LoadError>> = files
        .par_iter()
        .map_init(Vec::new, |bytes, f| {
            read_regular_into(f, bytes)?;
            load_bytes_inner(bytes, &f.display().to_string(), opts)
        })
        .collect();
    let mut blobs = Vec::new();
    for r in results {
        blobs.extend(r?);
    }
    Ok(Catalog { blobs })
}

/// The files a load of `path` reads, in walk order: `path` itself when it is a file. Every entry
/// is checked before any is read: the first one that is not a regular file fails the load without
/// touching the others.
pub(crate) fn catalog_files(path: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let meta = fs::metadata(path).map_err(|e| LoadError::io(path, &e))?;
    if meta.is_file() {
        return Ok(vec![path.to_owned()]);
    }
    if !meta.is_dir() {
        return Err(LoadError::Io {
            path: path.display().to_string(),
            message: format!(
                "is {}, not a regular file or a directory",
                kind_of(&meta.file_type())
            ),
        });
    }
    let files = walk_typed(path)?;
    for (f, ft) in &files {
        check_regular(f, ft)?;
    }
    Ok(files.into_iter().map(|(f, _)| f).collect())
}

/// Loads one file holding a JSON or YAML stream.
pub fn load_file(path: &Path) -> Result<Catalog, LoadError> {
    load_file_with(path, &LoadOptions::default())
}

/// Loads one file holding a JSON or YAML stream, with the given options.
pub fn load_file_with(path: &Path, opts: &LoadOptions) -> Result<Catalog, LoadError> {
    let bytes = read_regular(path)?;
    Ok(Catalog {
        blobs: load_bytes_inner(&bytes, &path.display().to_string(), opts)?,
    })
}

/// Loads a JSON or YAML stream from a reader; `name` labels errors (e.g. `<stdin>`).
pub fn load_reader(mut r: impl Read, name: &str) -> Result<Catalog, LoadError> {
    let mut bytes = Vec::new();
    r.read_to_end(&mut bytes).map_err(|e| LoadError::Io {
        path: name.to_owned(),
        message: e.to_string(),
    })?;
    load_bytes(&bytes, name)
}

/// Loads a JSON or YAML stream held in memory.
pub fn load_bytes(bytes: &[u8], name: &str) -> Result<Catalog, LoadError> {
    Ok(Catalog {
        blobs: load_bytes_inner(bytes, name, &LoadOptions::default())?,
    })
}

/// Loads catalogd's `catalog.jsonl` (one canonical JSON blob per line; blank lines allowed), reading in
/// chunks so the whole stream is never held in memory at once.
pub fn load_jsonl(r: impl Read, name: &str) -> Result<Catalog, LoadError> {
    load_jsonl_with(r, name, &LoadOptions::default())
}

/// Loads catalogd's `catalog.jsonl`, with the given options; see [`load_jsonl`].
pub fn load_jsonl_with(
    mut r: impl Read,
    name: &str,
    opts: &LoadOptions,
) -> Result<Catalog, LoadError> {
    const CHUNK: usize = 4 << 20;
    let mut blobs = Vec::new();
    let mut carry: Vec<u8> = Vec::new();
    let mut first_line = 1usize;
    let mut eof = false;
    while !eof {
        let mut buf = std::mem::take(&mut carry);
        // The buffer grows with what is read, up to a chunk: a small stream (one package's
        // content, as the installer fetches it) never costs a chunk-sized allocation.
        let read = (&mut r)
            .take(CHUNK as u64)
            .read_to_end(&mut buf)
            .map_err(|e| LoadError::Io {
                path: name.to_owned(),
                message: e.to_string(),
            })?;
        eof = read < CHUNK;
        let cut = if eof {
            buf.len()
        } else {
            memchr::memrchr(b'\n', &buf).map(|i| i + 1).unwrap_or(0)
        };
        if cut == 0 && !eof {
            // A line longer than the chunk: keep reading.
            carry = buf;
            continue;
        }
        carry = buf[cut..].to_vec();
        buf.truncate(cut);
        let text = std::str::from_utf8(&buf).map_err(|e| utf8_error(name, &buf, e))?;
        let lines: Vec<(usize, &str)> = text
            .split('\n')
            .enumerate()
            .map(|(i, l)| (first_line + i, l))
            .filter(|(_, l)| !l.trim().is_empty())
            .collect();
        first_line += memchr::memchr_iter(b'\n', &buf).count();
        let parsed: Vec<Result<Blob, LoadError>> = lines
            .par_iter()
            .map(|&(line, l)| {
                let doc = jsonl_doc(l.trim()).map_err(|e| LoadError::parse(name, line, e))?;
                to_blob(doc, name, line, opts)
            })
            .collect();
        for p in parsed {
            blobs.push(p?);
        }
    }
    Ok(Catalog { blobs })
}

/// A JSONL line is taken as canonical (catalogd writes it so) and kept verbatim: only the top-level
/// keys are scanned, skipping values without decoding them, which keeps JSONL loading fast. The
/// skipping does not count nesting, so a separate scan holds the line to the common limit.
fn jsonl_doc(line: &str) -> Result<TopDoc, String> {
    if !line.starts_with('{') {
        // Not an object: let the general path produce upstream's message.
        let raw: &RawValue =
            serde_json::from_str(line).map_err(|e| json_syntax_error(line, 0, &e).1)?;
        return json_doc(raw.get()).map_err(|e| e.message);
    }
    if too_deep(line.as_bytes()) {
        return Err(nesting_too_deep());
    }
    // Canonical text never repeats a key. A line that does is read the general way, which
    // refuses it as a JSON or YAML file is refused: kept verbatim, it would load here but not
    // once written out in another format.
    if repeats_a_key(line.as_bytes()) {
        let raw: &RawValue =
            serde_json::from_str(line).map_err(|e| json_syntax_error(line, 0, &e).1)?;
        return json_doc(raw.get()).map_err(|e| e.message);
    }
    let keys = top_keys(line).map_err(|e| json_syntax_error(line, 0, &e).1)?;
    Ok(TopDoc {
        canon: line.to_owned(),
        keys,
    })
}

/// The top-level keys of a JSON object with the text of their short values.
fn top_keys(line: &str) -> Result<Vec<(String, String)>, serde_json::Error> {
    struct Keys<'a>(Vec<(crate::model::Key<'a>, &'a RawValue)>);
    impl<'de> Deserialize<'de> for Keys<'de> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> serde::de::Visitor<'de> for V {
                type Value = Keys<'de>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Keys<'de>, A::Error> {
                    let mut out = Vec::new();
                    while let Some(k) = map.next_key::<crate::model::Key<'de>>()? {
                        out.push((k, map.next_value::<&'de RawValue>()?));
                    }
                    Ok(Keys(out))
                }
            }
            d.deserialize_map(V)
        }
    }
    let keys: Keys = serde_json::from_str(line)?;
    Ok(keys
        .0
        .into_iter()
        .map(|(k, v)| {
            let value = if canonical::top_value_kept(&k.0, v.get()) {
                v.get().to_owned()
            } else {
                String::new()
            };
            (k.0.into_owned(), value)
        })
        .collect())
}

/// Whether the JSON text `s` nests deeper than [`MAX_NESTING_DEPTH`]. Brackets inside strings are
/// skipped; the text is not otherwise checked (the parser that follows does that).
fn too_deep(s: &[u8]) -> bool {
    let (mut depth, mut i) = (0usize, 0usize);
    while let Some(&b) = s.get(i) {
        match b {
            b'"' => {
                let Some((end, _)) = string_end(s, i) else {
                    return false; // unterminated: the parser reports it
                };
                i = end;
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING_DEPTH {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}

/// Where the JSON string opening at `s[start]` (a `"`) ends — the index after its closing
/// quote — and whether it holds an escape; `None` when it is not terminated.
fn string_end(s: &[u8], start: usize) -> Option<(usize, bool)> {
    let (mut i, mut escaped) = (start + 1, false);
    loop {
        i += memchr::memchr2(b'"', b'\\', s.get(i..)?)? + 1;
        if s[i - 1] == b'"' {
            return Some((i, escaped));
        }
        escaped = true;
        i += 1; // the escaped byte
    }
}

/// Whether some object of the JSON text `s` holds one key twice (keys compared decoded, as the
/// general path compares them). Like [`too_deep`] it checks nothing else, and an unterminated
/// string ends the scan: broken text is the parser's to report.
fn repeats_a_key(s: &[u8]) -> bool {
    repeated_key(s, true).is_some()
}

/// The offsets of a key and of its repeat in one object of the JSON text `s`: the first one
/// found, or (`first_found` false) the repeat earliest in the text, which is the one the
/// canonical reader refuses.
fn repeated_key(s: &[u8], first_found: bool) -> Option<(usize, usize)> {
    // The keys of every open object with their offsets, one after another; each open bracket
    // records where its object's keys start (`None` for an array) and whether a key comes next.
    let mut keys: Vec<(std::borrow::Cow<'_, [u8]>, usize)> = Vec::new();
    let mut open: Vec<(Option<usize>, bool)> = Vec::new();
    let mut found: Option<(usize, usize)> = None;
    let mut i = 0usize;
    while let Some(&b) = s.get(i) {
        match b {
            b'"' => {
                let start = i;
                let (end, escaped) = string_end(s, i)?;
                i = end;
                if let Some((Some(_), next_is_key @ true)) = open.last_mut() {
                    *next_is_key = false;
                    let quoted = &s[start..i];
                    let key = if escaped {
                        let k = serde_json::from_slice::<String>(quoted).ok()?;
                        std::borrow::Cow::Owned(k.into_bytes())
                    } else {
                        std::borrow::Cow::Borrowed(&quoted[1..quoted.len() - 1])
                    };
                    keys.push((key, start));
                }
                continue;
            }
            b'{' => open.push((Some(keys.len()), true)),
            b'[' => open.push((None, false)),
            b',' => {
                if let Some((Some(_), next_is_key)) = open.last_mut() {
                    *next_is_key = true;
                }
            }
            b'}' | b']' => {
                if let Some((Some(first), _)) = open.pop() {
                    let own = keys.get_mut(first..).unwrap_or_default();
                    own.sort_unstable();
                    for w in own.windows(2).filter(|w| w[0].0 == w[1].0) {
                        // Sorted by offset within a key: w[1] is a repeat of w[0].
                        if first_found {
                            return Some((w[0].1, w[1].1));
                        }
                        if found.is_none_or(|(_, at)| w[1].1 < at) {
                            found = Some((w[0].1, w[1].1));
                        }
                    }
                    keys.truncate(first);
                }
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// A refused repeated key's message names the line of the key's first occurrence too, when it
/// is not the repeat's own line (which the location gives): `raw` is the document's text.
fn with_first_key_line(raw: &str, line: usize, message: String) -> String {
    if !message.starts_with("duplicate key ") {
        return message;
    }
    let lines_before = |at: usize| memchr::memchr_iter(b'\n', &raw.as_bytes()[..at]).count();
    match repeated_key(raw.as_bytes(), false) {
        Some((first, repeat)) if lines_before(first) != lines_before(repeat) => {
            format!("{message} (first at line {})", line + lines_before(first))
        }
        _ => message,
    }
}

fn utf8_error(name: &str, buf: &[u8], e: std::str::Utf8Error) -> LoadError {
    let line = 1 + memchr::memchr_iter(b'\n', &buf[..e.valid_up_to()]).count();
    LoadError::parse(name, line, "invalid UTF-8")
}

/// The files of a catalog tree in walk order, minus `.indexignore`d ones: every entry that is not
/// a directory (links are not followed), whatever it is.
pub fn walk(root: &Path) -> Result<Vec<PathBuf>, LoadError> {
    Ok(walk_typed(root)?.into_iter().map(|(f, _)| f).collect())
}

/// [`walk`], with each entry's type as the directory listing gives it.
fn walk_typed(root: &Path) -> Result<Vec<(PathBuf, fs::FileType)>, LoadError> {
    let mut files = Vec::new();
    let mut ignores: Vec<(PathBuf, ignore::gitignore::Gitignore)> = Vec::new();
    walk_dir(root, root, &mut files, &mut ignores)?;
    Ok(files
        .into_iter()
        .filter(|(f, _)| {
            // The deepest .indexignore that has an opinion decides (its patterns may re-include).
            let mut ignored = false;
            for (dir, gi) in &ignores {
                if let Ok(rel) = f.strip_prefix(dir) {
                    match gi.matched_path_or_any_parents(rel, false) {
                        ignore::Match::Ignore(_) => ignored = true,
                        ignore::Match::Whitelist(_) => ignored = false,
                        ignore::Match::None => {}
                    }
                }
            }
            !ignored
        })
        .collect())
}

fn walk_dir(
    root: &Path,
    dir: &Path,
    files: &mut Vec<(PathBuf, fs::FileType)>,
    ignores: &mut Vec<(PathBuf, ignore::gitignore::Gitignore)>,
) -> Result<(), LoadError> {
    let rd = fs::read_dir(dir).map_err(|e| LoadError::io(dir, &e))?;
    let mut entries: Vec<(Vec<u8>, PathBuf, fs::FileType)> = Vec::new();
    for e in rd {
        let e = e.map_err(|e| LoadError::io(dir, &e))?;
        let ft = e
            .file_type()
            .map_err(|err| LoadError::io(&e.path(), &err))?;
        entries.push((e.file_name().as_encoded_bytes().to_vec(), e.path(), ft));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, path, ft) in &entries {
        if name == b".indexignore" && ft.is_file() {
            let mut b = ignore::gitignore::GitignoreBuilder::new(dir);
            let text = fs::read_to_string(path).map_err(|e| LoadError::io(path, &e))?;
            for line in text.lines() {
                let l = line.trim();
                if l.is_empty() || l.starts_with('#') {
                    continue;
                }
                b.add_line(Some(path.clone()), l)
                    .map_err(|e| LoadError::parse(&path.display().to_string(), 0, e.to_string()))?;
            }
            let gi = b
                .build()
                .map_err(|e| LoadError::parse(&path.display().to_string(), 0, e.to_string()))?;
            let rel = dir.strip_prefix(root).unwrap_or(dir);
            ignores.push((root.join(rel), gi));
        }
    }
    for (name, path, ft) in entries {
        if ft.is_dir() {
            walk_dir(root, &path, files, ignores)?;
        } else if name != b".indexignore" {
            files.push((path, ft));
        }
    }
    Ok(())
}

/// What a file type is, for messages about entries that are not regular files.
fn kind_of(ft: &fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            return "a named pipe";
        }
        if ft.is_socket() {
            return "a socket";
        }
        if ft.is_char_device() {
            return "a character device";
        }
        if ft.is_block_device() {
            return "a block device";
        }
    }
    if ft.is_dir() {
        "a directory"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else if ft.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

const NOT_REGULAR_HINT: &str = "list it in .indexignore to leave it out";

/// Refuses an entry of the walk that is not a regular file, or a link to one. `ft` is the entry's
/// own type (a link is followed here).
fn check_regular(path: &Path, ft: &fs::FileType) -> Result<(), LoadError> {
    if ft.is_file() {
        return Ok(());
    }
    let message = if ft.is_symlink() {
        let target = fs::metadata(path).map_err(|e| LoadError::io(path, &e))?;
        if target.is_file() {
            return Ok(());
        }
        let to = fs::read_link(path)
            .map(|t| olm_goenc::quote(&t.display().to_string()))
            .unwrap_or_default();
        format!(
            "links to {to}, {}, not a regular file: {NOT_REGULAR_HINT}",
            kind_of(&target.file_type())
        )
    } else {
        format!("is {}, not a regular file: {NOT_REGULAR_HINT}", kind_of(ft))
    };
    Err(LoadError::Io {
        path: path.display().to_string(),
        message,
    })
}

/// The bytes of a regular file. Opened without blocking, so a named pipe (put in the file's place
/// after it was checked, or named directly) is refused instead of waited on; a device is refused
/// before anything is read from it.
pub(crate) fn read_regular(path: &Path) -> Result<Vec<u8>, LoadError> {
    let mut bytes = Vec::new();
    read_regular_into(path, &mut bytes)?;
    Ok(bytes)
}

/// [`read_regular`] into `bytes` (cleared first), so that a loop over many files reuses one
/// buffer: fresh pages for every file cost more, in page faults and zeroing, than reading them.
pub(crate) fn read_regular_into(path: &Path, bytes: &mut Vec<u8>) -> Result<(), LoadError> {
    let mut open = fs::OpenOptions::new();
    open.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Without effect on regular files.
        open.custom_flags(libc::O_NONBLOCK);
    }
    let mut f = open.open(path).map_err(|e| LoadError::io(path, &e))?;
    let meta = f.metadata().map_err(|e| LoadError::io(path, &e))?;
    if !meta.is_file() {
        return Err(LoadError::Io {
            path: path.display().to_string(),
            message: format!(
                "is {}, not a regular file: {NOT_REGULAR_HINT}",
                kind_of(&meta.file_type())
            ),
        });
    }
    bytes.clear();
    // The size is a hint only (a file may grow while read).
    let _ = bytes.try_reserve_exact(usize::try_from(meta.len()).unwrap_or(0));
    f.read_to_end(bytes).map_err(|e| LoadError::io(path, &e))?;
    Ok(())
}

// ---- documents ----------------------------------------------------------------------------------------

/// A document decoded to canonical JSON, with its top-level keys and their canonical values.
struct TopDoc {
    canon: String,
    keys: Vec<(String, String)>,
}

/// The document held by one JSON value whose syntax serde_json has checked.
fn json_doc(raw: &str) -> Result<TopDoc, canonical::TextError> {
    let mut keys = Vec::new();
    let canon = canonical::from_json_text(raw, Some(&mut keys))?;
    Ok(TopDoc { canon, keys })
}

/// Whether a file is read as a JSON stream (its first non-blank byte, within the first 4 KiB, is
/// `{`) rather than as YAML.
pub(crate) fn is_json_stream(text: &str) -> bool {
    let peek = &text.as_bytes()[..text.len().min(4096)];
    peek.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

pub(crate) fn load_bytes_inner(
    bytes: &[u8],
    name: &str,
    opts: &LoadOptions,
) -> Result<Vec<Blob>, LoadError> {
    let text = std::str::from_utf8(bytes).map_err(|e| utf8_error(name, bytes, e))?;
    if is_json_stream(text) {
        load_json_stream(text, name, opts)
    } else {
        load_yaml_stream(text, name, opts)
    }
}

fn load_json_stream(text: &str, name: &str, opts: &LoadOptions) -> Result<Vec<Blob>, LoadError> {
    let mut out = Vec::new();
    // Each document is first taken as raw text, which checks its syntax without recursing (and
    // without a depth limit), then made canonical, also without recursing.
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<&RawValue>();
    // Line numbers are counted incrementally: counting from the start of the file for every
    // document would make one large JSON file quadratic to load.
    let (mut counted_to, mut line) = (0usize, 1usize);
    loop {
        let offset = stream.byte_offset();
        match stream.next() {
            None => break,
            Some(Err(e)) => {
                let (at, message) = json_syntax_error(text, offset, &e);
                // opm's decoder (apimachinery's YAMLOrJSONDecoder) reads what follows the
                // first two JSON documents as YAML when JSON fails; only when that fails too is
                // the JSON error reported.
                if out.len() <= 1
                    && let Some(rest) = yaml_after_json(text, offset, name, opts)?
                {
                    out.extend(rest);
                    return Ok(out);
                }
                return Err(LoadError::parse(name, at, message));
            }
            Some(Ok(raw)) => {
                let skipped = text[offset..].len() - text[offset..].trim_start().len();
                let start = offset + skipped;
                line += memchr::memchr_iter(b'\n', &text.as_bytes()[counted_to..start]).count();
                counted_to = start;
                let raw = raw.get();
                let doc = json_doc(raw).map_err(|e| {
                    let within = memchr::memchr_iter(b'\n', &raw.as_bytes()[..e.offset]).count();
                    LoadError::parse(
                        name,
                        line + within,
                        with_first_key_line(raw, line, e.message),
                    )
                })?;
                out.push(to_blob(doc, name, line, opts)?);
            }
        }
    }
    Ok(out)
}

/// The line (1-based, in `text`) and message of a syntax error in the JSON document starting at
/// byte `start`, as Go's decoder words it (`invalid character '}' looking for beginning of
/// object key string`, `unexpected EOF`). serde_json's own, should Go's scanner find the
/// document whole (a limit of serde_json's).
fn json_syntax_error(text: &str, start: usize, e: &serde_json::Error) -> (usize, String) {
    let line_at = |at: usize| 1 + memchr::memchr_iter(b'\n', &text.as_bytes()[..at]).count();
    match json_syntax::scan_value(&text.as_bytes()[start..]) {
        json_syntax::Scan::Invalid { offset, message } => (line_at(start + offset), message),
        json_syntax::Scan::UnexpectedEof => (
            line_at(text.trim_end().len().max(start)),
            "unexpected EOF".to_owned(),
        ),
        json_syntax::Scan::Complete(_) | json_syntax::Scan::End => (e.line(), json_msg(e)),
    }
}

/// What opm's decoder makes of a JSON stream whose document at byte `offset` is not JSON: it
/// skips whitespace up to the next line and reads the rest as YAML. `None` when that fails in its
/// first document, which leaves the JSON error standing; a later YAML document's error is
/// reported as it is.
fn yaml_after_json(
    text: &str,
    offset: usize,
    name: &str,
    opts: &LoadOptions,
) -> Result<Option<Vec<Blob>>, LoadError> {
    let after = &text[offset..];
    let mut skip = None;
    for (i, c) in after.char_indices() {
        if c == '\n' {
            skip = Some(i + 1);
            break;
        }
        if !c.is_whitespace() {
            skip = Some(i);
            break;
        }
    }
    let Some(skip) = skip else {
        return Ok(None);
    };
    let rest_start = offset + skip;
    let rest = &text[rest_start..];
    let base = memchr::memchr_iter(b'\n', &text.as_bytes()[..rest_start]).count();
    let Ok(chunks) = split_yaml(rest, name) else {
        return Ok(None);
    };
    let second = chunks.get(1).map(|c| c.line);
    match load_yaml_stream(rest, name, opts) {
        Ok(blobs) => Ok(Some(blobs)),
        Err(LoadError::Parse { line, .. }) if second.is_none_or(|s| line < s) => Ok(None),
        Err(LoadError::Parse {
            path,
            line,
            message,
        }) => Err(LoadError::Parse {
            path,
            line: line + base,
            message,
        }),
        Err(e) => Err(e),
    }
}

fn json_msg(e: &serde_json::Error) -> String {
    canonical::json_error_text(e)
}

/// A YAML document: its text and the 1-based line it starts on.
struct Chunk<'a> {
    text: &'a str,
    line: usize,
}

/// Splits a YAML stream at `---` lines as apimachinery's `YAMLReader` does.
fn split_yaml<'a>(text: &'a str, name: &str) -> Result<Vec<Chunk<'a>>, LoadError> {
    let mut chunks = Vec::new();
    let mut start = 0usize;
    let mut start_line = 1usize;
    let mut pos = 0usize;
    let mut line_no = 1usize;
    let b = text.as_bytes();
    while pos < b.len() {
        let end = memchr::memchr(b'\n', &b[pos..])
            .map(|i| pos + i + 1)
            .unwrap_or(b.len());
        let line = &text[pos..end];
        if let Some(rest) = line.strip_prefix("---") {
            let trimmed = rest.trim();
            if !trimmed.is_empty() && !trimmed.starts_with('#') {
                return Err(LoadError::parse(
                    name,
                    line_no,
                    format!("invalid Yaml document separator: {trimmed}"),
                ));
            }
            // A separator that ends nothing begins the next document instead: YAMLReader
            // writes it into its empty buffer, so `---` alone, or twice, is a document.
            if pos > start {
                chunks.push(Chunk {
                    text: &text[start..pos],
                    line: start_line,
                });
                start = end;
                start_line = line_no + 1;
            }
        }
        pos = end;
        line_no += 1;
    }
    if b.len() > start {
        chunks.push(Chunk {
            text: &text[start..],
            line: start_line,
        });
    }
    Ok(chunks)
}

/// Catalog documents refuse repeated keys (the error names the repeat's line) where opm keeps the
/// last one silently: a repeat is almost always an editing mistake.
const YAML_OPTIONS: yamlread::Options = yamlread::Options {
    duplicate_keys: yamlread::DuplicateKeys::Error,
};

fn load_yaml_stream(text: &str, name: &str, opts: &LoadOptions) -> Result<Vec<Blob>, LoadError> {
    let chunks = split_yaml(text, name)?;
    let parse = |c: &Chunk| -> Result<Blob, LoadError> {
        let null = || TopDoc {
            canon: "null".to_owned(),
            keys: Vec::new(),
        };
        // A document of blank lines, comments or a lone separator is YAML's null, which opm
        // refuses as an object without a schema.
        let doc: TopDoc = if is_comment_only(c.text) {
            null()
        } else {
            let decoded = yamlread::document_canonical(c.text, &YAML_OPTIONS)
                .map_err(|e| LoadError::parse(name, c.line + e.line.max(1) - 1, e.message))?;
            match decoded {
                yamlread::Canonical::Empty => null(),
                yamlread::Canonical::Text(canon, spans) => {
                    let keys = spans
                        .into_iter()
                        .map(|(k, r)| {
                            let v = canon
                                .get(r)
                                .filter(|v| canonical::top_value_kept(&k, v))
                                .unwrap_or("");
                            (k, v.to_owned())
                        })
                        .collect();
                    TopDoc { canon, keys }
                }
                yamlread::Canonical::Value(v) => {
                    let mut keys = Vec::new();
                    let canon = canonical::from_value(&v, Some(&mut keys));
                    // However deep the value, giving it back must not recurse.
                    olm_goenc::json::drop_value(v);
                    TopDoc {
                        canon: canon.map_err(|e| LoadError::parse(name, c.line, e))?,
                        keys,
                    }
                }
                yamlread::Canonical::Values(values) => {
                    values.into_iter().for_each(olm_goenc::json::drop_value);
                    return Err(LoadError::parse(
                        name,
                        c.line,
                        "expected a single YAML document",
                    ));
                }
            }
        };
        to_blob(doc, name, c.line + leading_blank_lines(c.text), opts)
    };
    let results: Vec<Result<Blob, LoadError>> = if chunks.len() > 1 && text.len() > 256 << 10 {
        chunks.par_iter().map(parse).collect()
    } else {
        chunks.iter().map(parse).collect()
    };
    results.into_iter().collect()
}

/// Lines before a document's content: blank ones, and the separator it may start with. A
/// document with no content is named by its first line.
///
/// Stops at the first line with content, so a document is not walked to its end for this.
fn leading_blank_lines(s: &str) -> usize {
    s.lines()
        .enumerate()
        .position(|(i, l)| !(l.trim().is_empty() || (i == 0 && l.starts_with("---"))))
        .unwrap_or(0)
}

/// True when the document holds nothing but blank lines, comments and its opening separator.
fn is_comment_only(s: &str) -> bool {
    s.lines().enumerate().all(|(i, l)| {
        let t = l.trim();
        t.is_empty() || t.starts_with('#') || (i == 0 && l.starts_with("---"))
    })
}

// ---- blobs ----------------------------------------------------------------------------------------------

fn string_field(doc: &TopDoc, key: &str, name: &str, line: usize) -> Result<String, LoadError> {
    for (k, v) in &doc.keys {
        if k.eq_ignore_ascii_case(key) {
            return match serde_json::from_str::<serde_json::Value>(v) {
                Ok(serde_json::Value::String(s)) => Ok(s),
                Ok(serde_json::Value::Null) => Ok(String::new()),
                _ => Err(LoadError::parse(
                    name,
                    line,
                    format!(
                        "expected value for key {} to be a string, got {}",
                        olm_goenc::quote(key),
                        short(v)
                    ),
                )),
            };
        }
    }
    Ok(String::new())
}

fn short(v: &str) -> &str {
    if v.is_empty() { "a large value" } else { v }
}

fn to_blob(doc: TopDoc, name: &str, line: usize, opts: &LoadOptions) -> Result<Blob, LoadError> {
    if !doc.canon.starts_with('{') {
        // opm's message shows the object's text, which is empty for YAML's null (an empty
        // document, or one of only comments) and for `null` itself.
        if doc.canon == "null" {
            return Err(LoadError::parse(
                name,
                line,
                "object '' is missing root schema field",
            ));
        }
        let kind = match doc.canon.as_bytes().first() {
            Some(b'[') => Kind::Array,
            Some(b'"') => Kind::String,
            Some(b't' | b'f') => Kind::Bool,
            _ => Kind::Number,
        };
        return Err(LoadError::parse(
            name,
            line,
            UnmarshalTypeError::value(kind, "map[string]interface {}").to_string(),
        ));
    }
    // Keys that differ only in case.
    let mut lowered: Vec<(String, &str)> = doc
        .keys
        .iter()
        .map(|(k, _)| (k.to_lowercase(), k.as_str()))
        .collect();
    lowered.sort();
    let mut dups = Vec::new();
    let mut i = 0;
    while i < lowered.len() {
        let mut j = i + 1;
        while j < lowered.len() && lowered[j].0 == lowered[i].0 {
            j += 1;
        }
        if j - i > 1 {
            let mut ks: Vec<&str> = lowered[i..j].iter().map(|x| x.1).collect();
            ks.sort();
            dups.push(format!(
                "duplicate keys for key {}: {}",
                olm_goenc::quote(&lowered[i].0),
                olm_goenc::slice(ks)
            ));
        }
        i = j;
    }
    if !dups.is_empty() {
        let msg = if dups.len() == 1 {
            dups.remove(0)
        } else {
            format!("[{}]", dups.join(", "))
        };
        return Err(LoadError::parse(name, line, msg));
    }
    let schema = string_field(&doc, "schema", name, line)?;
    let package = string_field(&doc, "package", name, line)?;
    let meta_name = string_field(&doc, "name", name, line)?;
    if schema.is_empty() {
        return Err(LoadError::parse(
            name,
            line,
            format!("object '{}' is missing root schema field", doc.canon),
        ));
    }
    let canon = doc.canon;
    // serde's error names the problem; opm's names the Go field, which users know.
    let typed = |what: &str, e: serde_json::Error| {
        let message = crate::gotype::first_type_error(&schema, &canon)
            .map(|go| go.to_string())
            .unwrap_or_else(|| json_msg(&e));
        LoadError::parse(name, line, format!("parse {what}: {message}"))
    };
    let raw = |canon: String| -> Option<RawJson> {
        if opts.keep_raw {
            RawValue::from_string(canon).ok().map(RawJson)
        } else {
            None
        }
    };
    let mut blob = match schema.as_str() {
        SCHEMA_PACKAGE => {
            let mut p: Package = serde_json::from_str(&canon).map_err(|e| typed("package", e))?;
            if let Some(icon) = &mut p.icon {
                icon.base64data = canonical_base64(&icon.base64data)
                    .map_err(|m| LoadError::parse(name, line, format!("parse package: {m}")))?;
            }
            Blob::Package(Kept::decoded(p, raw(canon)))
        }
        SCHEMA_CHANNEL => {
            let c: Channel = serde_json::from_str(&canon).map_err(|e| typed("channel", e))?;
            Blob::Channel(Kept::decoded(c, raw(canon)))
        }
        SCHEMA_BUNDLE => {
            let b: Bundle = serde_json::from_str(&canon).map_err(|e| typed("bundle", e))?;
            Blob::Bundle(Kept::decoded(b, raw(canon)))
        }
        SCHEMA_DEPRECATIONS => {
            let d: Deprecation =
                serde_json::from_str(&canon).map_err(|e| typed("deprecation", e))?;
            Blob::Deprecations(Kept::decoded(d, raw(canon)))
        }
        _ => Blob::Other(Meta {
            schema,
            package,
            name: meta_name,
            blob: RawValue::from_string(canon)
                .map_err(|e| LoadError::parse(name, line, e.to_string()))?,
        }),
    };
    if opts.validate_only {
        blob.drop_content();
    }
    Ok(blob)
}

/// The icon's base64 text as opm writes it back: opm reads `base64data` into bytes (a Go
/// `[]byte` field) and encodes them again, so a YAML `|` block ending in a newline or text wrapped
/// at 76 columns comes out as one padded line.
fn canonical_base64(s: &str) -> Result<String, String> {
    olm_goenc::base64::reencode_std(s).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name longer than any description worth copying is still read as a name, in JSON and
    /// in YAML.
    #[test]
    fn long_names_load() {
        let long = format!("{}\\\"<x>", "n".repeat(5000));
        let j = format!(
            "{{\"schema\":\"olm.channel\",\"package\":\"{long}\",\"name\":\"{long}\",\"entries\":[]}}\n"
        );
        let c = load_bytes(j.as_bytes(), "a.json").unwrap();
        let Blob::Channel(ch) = &c.blobs[0] else {
            panic!("not a channel")
        };
        assert_eq!(ch.name.as_str().len(), 5000 + "\"<x>".len());
        assert_eq!(ch.package.as_str(), ch.name.as_str());
        let y = format!("schema: olm.package\nname: {}\n", "p".repeat(5000));
        let c = load_bytes(y.as_bytes(), "a.yaml").unwrap();
        assert_eq!(c.blobs[0].package().len(), 5000);
    }

    #[test]
    fn yaml_and_json_streams() {
        let y = "---\nschema: olm.package\nname: foo\ndefaultChannel: stable\n---\nSchema: custom\nname: x\nvalue: yes\n";
        let c = load_bytes(y.as_bytes(), "a.yaml").unwrap();
        assert_eq!(c.blobs.len(), 2);
        assert_eq!(
            c.blobs[1].raw().unwrap().get(),
            r#"{"Schema":"custom","name":"x","value":true}"#
        );
        let j = "{\"schema\":\"olm.package\",\"name\":\"foo\"}\n  {\"schema\":\"olm.channel\",\"package\":\"foo\",\"name\":\"a\"}";
        let c = load_bytes(j.as_bytes(), "a.json").unwrap();
        assert_eq!(c.blobs.len(), 2);
    }

    /// opm reads `icon.base64data` into Go bytes and writes them back re-encoded: a `|` block's
    /// final newline and 76-column wrapping disappear, stray bits after the last byte are
    /// dropped; the served JSONL keeps the text as written (catalogd serves the file's bytes).
    #[test]
    fn icons_come_back_as_opm_writes_them() {
        let y = "schema: olm.package\nname: p\nicon:\n  mediatype: image/png\n  base64data: |\n    QUJDREVG\n    R0hJSg==\n";
        let c = load_bytes(y.as_bytes(), "p.yaml").unwrap();
        let Blob::Package(p) = &c.blobs[0] else {
            panic!("{:?}", c.blobs[0]);
        };
        assert_eq!(p.icon.as_ref().unwrap().base64data, "QUJDREVGR0hJSg==");
        assert!(
            c.blobs[0]
                .raw()
                .unwrap()
                .get()
                .contains(r#""QUJDREVG\nR0hJSg==\n""#)
        );

        let j = r#"{"schema":"olm.package","name":"p","icon":{"base64data":"QR==","mediatype":"image/png"}}"#;
        let c = load_bytes(j.as_bytes(), "p.json").unwrap();
        let Blob::Package(p) = &c.blobs[0] else {
            panic!("{:?}", c.blobs[0]);
        };
        assert_eq!(p.icon.as_ref().unwrap().base64data, "QQ==");

        let bad = r#"{"schema":"olm.package","name":"p","icon":{"base64data":"QU\nJ","mediatype":"image/png"}}"#;
        let e = load_bytes(bad.as_bytes(), "p.json")
            .unwrap_err()
            .to_string();
        assert!(
            e.ends_with("parse package: illegal base64 data at input byte 1"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_file_and_line() {
        let y = "---\nschema: olm.package\nname: foo\n---\nschema: olm.channel\n  bad: [\n";
        let e = load_bytes(y.as_bytes(), "f.yaml").unwrap_err();
        match e {
            LoadError::Parse { path, line, .. } => {
                assert_eq!(path, "f.yaml");
                assert_eq!(line, 6);
            }
            other => panic!("{other:?}"),
        }
        let e = load_bytes(b"schema: a\nname: b\nname: c\n", "d.yaml").unwrap_err();
        assert!(matches!(e, LoadError::Parse { line: 3, .. }), "{e}");
        let e = load_bytes(b"{\"schema\":\"a\",\n\"name\":1,\n\"name\":2}", "d.json").unwrap_err();
        assert!(e.to_string().contains("duplicate key"), "{e}");
    }

    #[test]
    fn upstream_meta_errors() {
        let e = load_bytes(b"schema: a\nSchema: b\n", "x").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"x:1: duplicate keys for key "schema": [Schema schema]"#
        );
        let e = load_bytes(b"name: a\n", "x").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"x:1: object '{"name":"a"}' is missing root schema field"#
        );
        let e = load_bytes(b"schema: 5\n", "x").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"x:1: expected value for key "schema" to be a string, got 5"#
        );
        let e = load_bytes(b"--- x\nschema: a\n", "x").unwrap_err();
        assert_eq!(e.to_string(), "x:1: invalid Yaml document separator: x");
        let e = load_bytes(b"schema: olm.bundle\nname: 5\n", "x").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"x:1: expected value for key "name" to be a string, got 5"#
        );
        let e = load_bytes(b"schema: olm.bundle\nimage: 5\n", "x").unwrap_err();
        assert_eq!(
            e.to_string(),
            "x:1: parse bundle: json: cannot unmarshal number into Go struct field Bundle.image of type string"
        );
    }

    #[test]
    fn empty_and_blank_documents() {
        // Checked against opm v1.74.0: only a file of no bytes holds no documents.
        assert!(load_bytes(b"", "x").unwrap().blobs.is_empty());
        let missing = |text: &[u8]| load_bytes(text, "x").unwrap_err().to_string();
        assert_eq!(
            missing(b"\n\n"),
            "x:1: object '' is missing root schema field"
        );
        assert_eq!(
            missing(b"---\n---\n"),
            "x:1: object '' is missing root schema field"
        );
        assert_eq!(
            missing(b"---\n\n---\n"),
            "x:1: object '' is missing root schema field"
        );
        assert_eq!(
            missing(b"# just a comment\n"),
            "x:1: object '' is missing root schema field"
        );
        assert_eq!(
            missing(b"null\n"),
            "x:1: object '' is missing root schema field"
        );
        assert_eq!(
            missing(b"schema: olm.package\nname: a\n---\n\n# end\n"),
            "x:5: object '' is missing root schema field"
        );
        // A separator that opens the file, or follows another document, is not a document.
        let two = b"---\nschema: olm.package\nname: a\n---\nschema: olm.package\nname: b\n---\n";
        assert_eq!(load_bytes(two, "x").unwrap().blobs.len(), 2);
        let e = load_bytes(b"---\nschema: olm.package\nname: [\n", "x").unwrap_err();
        assert!(e.to_string().starts_with("x:3: "), "{e}");
    }

    #[test]
    fn depth_scan_skips_strings_and_escapes() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(!too_deep(deep(MAX_NESTING_DEPTH).as_bytes()));
        assert!(too_deep(deep(MAX_NESTING_DEPTH + 1).as_bytes()));
        let brackets = "[".repeat(MAX_NESTING_DEPTH + 1);
        let quoted = format!(r#"{{"a":"{brackets}\"{brackets}\\","b":1}}"#);
        assert!(!too_deep(quoted.as_bytes()));
        // Closing brackets end levels; an unterminated string ends the scan.
        let siblings = format!("[{0},{0}]", deep(MAX_NESTING_DEPTH - 1));
        assert!(!too_deep(siblings.as_bytes()));
        assert!(!too_deep(br#"{"a":"\"#));
    }

    #[test]
    fn key_scan_finds_repeats_in_nested_objects_only_within_one_object() {
        assert!(repeats_a_key(br#"{"a":1,"a":2}"#));
        assert!(repeats_a_key(br#"{"a":[{"b":1,"c":{},"b":"x"}]}"#));
        // Decoded, as the general path compares keys.
        assert!(repeats_a_key(br#"{"v":{"a":1,"a":2}}"#));
        // The same key in sibling or nested objects, and strings that look like keys, are fine.
        assert!(!repeats_a_key(
            br#"{"a":{"a":1},"b":[{"a":1},{"a":2}],"c":"a","d":["a","a"]}"#
        ));
        assert!(!repeats_a_key(br#"{"a":"","a":1","b":1}"#));
        assert!(!repeats_a_key(br#"{"a":""#));
    }

    /// JSON syntax errors in Go's words, at the offending byte's line. Within the first two
    /// documents opm's decoder reads the rest as YAML, which takes a trailing comma; from the
    /// third on the stream is JSON for good. Expectations from opm v1.74.0.
    #[test]
    fn json_syntax_errors_as_go_words_them() {
        let ok = "{\"schema\":\"olm.package\",\n\"name\":\"a\",}\n";
        assert_eq!(load_bytes(ok.as_bytes(), "t.json").unwrap().blobs.len(), 1);
        let two = "{\"schema\":\"olm.package\",\"name\":\"a\"}\n{\"schema\":\"olm.package\",\"name\":\"b\"}\n";
        for (third, line, message) in [
            (
                "{\"schema\":\"x\",\n\"v\":[1,\n\n]}",
                6,
                "invalid character ']' looking for beginning of value",
            ),
            (
                "{\"schema\":\"x\",\n }",
                4,
                "invalid character '}' looking for beginning of object key string",
            ),
            (
                "{\"a\":1,,}",
                3,
                "invalid character ',' looking for beginning of object key string",
            ),
            ("{\"a\":1", 3, "unexpected EOF"),
        ] {
            let text = format!("{two}{third}\n");
            let e = load_bytes(text.as_bytes(), "t.json").unwrap_err();
            assert_eq!(e, LoadError::parse("t.json", line, message), "{third}");
        }
        // A JSONL line that is not an object goes through the same words.
        let e = load_jsonl(&b"[1,]\n"[..], "t.jsonl").unwrap_err();
        assert_eq!(
            e,
            LoadError::parse(
                "t.jsonl",
                1,
                "invalid character ']' looking for beginning of value"
            )
        );
    }
}
