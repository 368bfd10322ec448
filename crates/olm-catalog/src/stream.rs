//! A catalog directory read one package at a time, for writers that need not hold the whole
//! catalog: opm's JSON and YAML group blobs by package in name order ([`crate::write::ordered`]),
//! so each package can be decoded, written and dropped before the next one is read. Memory then
//! follows the largest package, not the catalog.
//!
//! A first pass reads every file (in parallel) and finds which packages its documents belong to
//! from their top-level `schema`, `name` and `package` values alone ([`scan`]). That look is
//! only trusted where the text is plain enough to be certain: block YAML as opm writes it, or
//! valid JSON. Any other file is decoded in the first pass and its blobs kept until their turn,
//! so a load error in it is reported before anything is written. A second pass decodes each file
//! when the first package it holds comes up, a few files at a time in parallel, and hands each
//! package's blobs over in the order a whole-catalog load would have given them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use rayon::prelude::*;

use crate::load::{self, LoadError, LoadOptions};
use crate::model::{Blob, Catalog, SCHEMA_PACKAGE};

/// At most this many bytes of files are decoded together in the second pass (more when one
/// package alone needs more): enough to keep every core busy on a catalog of one small file per
/// package, little enough that memory stays near one package's worth.
const BATCH_BYTES: u64 = 1 << 20;

/// Calls `each` with the blobs of every package of the catalog at `path` (a directory or one
/// file), packages in name order; blobs with no package and a schema this crate does not
/// interpret come last, in one call. Concatenating [`crate::write::ordered`] of every call gives
/// the order of the whole catalog.
///
/// Errors in files decoded in the first pass are returned before `each` is called; an error in a
/// file decoded later stops the walk there.
pub fn for_each_package<E: From<LoadError>>(
    path: &Path,
    opts: &LoadOptions,
    mut each: impl FnMut(Catalog) -> Result<(), E>,
) -> Result<(), E> {
    let files = load::catalog_files(path)?;
    // First pass: which packages each file holds.
    let found: Vec<Result<Found, LoadError>> = files
        .par_iter()
        .map_init(Vec::new, |bytes, f| {
            load::read_regular_into(f, bytes)?;
            let scanned = std::str::from_utf8(bytes).ok().and_then(scan);
            match scanned {
                Some(keys) => Ok(Found::Scanned {
                    keys,
                    size: bytes.len() as u64,
                }),
                None => load::load_bytes_inner(bytes, &f.display().to_string(), opts)
                    .map(Found::Decoded),
            }
        })
        .collect();
    let mut state = State::default();
    let mut sizes = vec![0u64; files.len()];
    for (i, r) in found.into_iter().enumerate() {
        match r? {
            Found::Scanned { keys, size } => {
                sizes[i] = size;
                for k in keys {
                    state.groups.entry(k).or_default().push(i);
                }
            }
            Found::Decoded(blobs) => state.take(&files[i], i, blobs)?,
        }
    }
    // Second pass, in package order: while one batch of packages is written, the next is decoded.
    let decode = |batch: &[usize]| -> Vec<Result<Vec<Blob>, LoadError>> {
        batch
            .par_iter()
            .map_init(Vec::new, |bytes, &f| {
                load::read_regular_into(&files[f], bytes)?;
                load::load_bytes_inner(bytes, &files[f].display().to_string(), opts)
            })
            .collect()
    };
    let mut decoded = vec![false; files.len()];
    let (mut batch, mut count) = state.plan(&decoded, &sizes);
    let mut results = decode(&batch);
    while count > 0 {
        for (&f, r) in batch.iter().zip(results) {
            decoded[f] = true;
            state.take(&files[f], f, r?)?;
        }
        let mut ready = Vec::new();
        for _ in 0..count {
            let Some((key, _)) = state.groups.pop_first() else {
                break;
            };
            let blobs = state.release(&key);
            state.done = Some(key);
            if !blobs.is_empty() {
                ready.push(Catalog { blobs });
            }
        }
        (batch, count) = state.plan(&decoded, &sizes);
        let mut next = Vec::new();
        rayon::in_place_scope(|s| {
            s.spawn(|_| next = decode(&batch));
            ready.into_iter().try_for_each(&mut each)
        })?;
        results = next;
    }
    let mut loose = std::mem::take(&mut state.loose);
    loose.sort_by_key(|(f, _)| *f);
    if !loose.is_empty() {
        each(Catalog {
            blobs: loose.into_iter().flat_map(|(_, b)| b).collect(),
        })?;
    }
    Ok(())
}

/// What the first pass learnt of a file.
enum Found {
    /// The packages (group keys) of its documents, certain from a quick look; and its size.
    Scanned { keys: BTreeSet<String>, size: u64 },
    /// Its blobs, decoded because a quick look could not be certain.
    Decoded(Vec<Blob>),
}

/// The second pass's bookkeeping.
#[derive(Default)]
struct State {
    /// Packages still to be handed over, and the files that hold them.
    groups: BTreeMap<String, Vec<usize>>,
    /// Blobs decoded ahead of their package's turn, by package, tagged with their file's index.
    pending: HashMap<String, Vec<(usize, Vec<Blob>)>>,
    /// Blobs with no package and an uninterpreted schema: written after every package.
    loose: Vec<(usize, Vec<Blob>)>,
    /// The last package handed over.
    done: Option<String>,
}

impl State {
    /// Files the blobs of file `f` under their packages. A package that comes before `done` (one
    /// already handed over) means the file no longer holds what the first pass read (it was
    /// changed in between): that is refused rather than written out of order.
    fn take(&mut self, path: &Path, f: usize, blobs: Vec<Blob>) -> Result<(), LoadError> {
        let mut by_key: BTreeMap<String, Vec<Blob>> = BTreeMap::new();
        let mut loose = Vec::new();
        for b in blobs {
            if b.package().is_empty() && matches!(b, Blob::Other(_)) {
                loose.push(b);
            } else {
                by_key.entry(b.package().to_owned()).or_default().push(b);
            }
        }
        if !loose.is_empty() {
            self.loose.push((f, loose));
        }
        for (key, blobs) in by_key {
            if self.done.as_deref().is_some_and(|d| key.as_str() <= d) {
                return Err(LoadError::Parse {
                    path: path.display().to_string(),
                    line: 0,
                    message: format!(
                        "package {} appeared after it had been written: did the file change while it was read?",
                        olm_goenc::quote(&key)
                    ),
                });
            }
            self.groups.entry(key.clone()).or_default();
            self.pending.entry(key).or_default().push((f, blobs));
        }
        Ok(())
    }

    /// The next batch: the files not yet decoded of the next packages, until they fill
    /// [`BATCH_BYTES`] (at least one package), and how many packages that is.
    fn plan(&self, decoded: &[bool], sizes: &[u64]) -> (Vec<usize>, usize) {
        let (mut batch, mut bytes, mut count) = (Vec::<usize>::new(), 0u64, 0usize);
        for held in self.groups.values() {
            let new: Vec<usize> = held
                .iter()
                .copied()
                .filter(|&f| !decoded[f] && !batch.contains(&f))
                .collect();
            let more: u64 = new.iter().map(|&f| sizes[f]).sum();
            if count > 0 && bytes + more > BATCH_BYTES {
                break;
            }
            batch.extend(new);
            bytes += more;
            count += 1;
        }
        (batch, count)
    }

    /// The blobs of one package, in file order.
    fn release(&mut self, key: &str) -> Vec<Blob> {
        let mut parts = self.pending.remove(key).unwrap_or_default();
        parts.sort_by_key(|(f, _)| *f);
        parts.into_iter().flat_map(|(_, b)| b).collect()
    }
}

// ---- the quick look -----------------------------------------------------------------------------

/// The packages (a blob's [`Blob::package`]: the `name` of an `olm.package`, the `package` of
/// anything else) of every document of a file, from the top-level `schema`, `name` and `package`
/// values alone; `None` when the text is not plain enough to be certain of them without decoding
/// it. A file with no document at all gets the empty package, so that it is decoded first (and
/// fails first, as an empty document does).
pub(crate) fn scan(text: &str) -> Option<BTreeSet<String>> {
    let mut keys = if load::is_json_stream(text) {
        scan_json(text)?
    } else {
        scan_yaml(text)?
    };
    if keys.is_empty() {
        keys.insert(String::new());
    }
    Some(keys)
}

/// A document's top-level `schema`, `name` and `package`: absent, certain, or `Some(None)` when
/// present with a value the quick look does not read (quoted, a block, not a string).
#[derive(Default)]
struct Top<'a> {
    schema: Option<Option<&'a str>>,
    name: Option<Option<&'a str>>,
    package: Option<Option<&'a str>>,
    /// Whether the document has any content.
    seen: bool,
}

impl<'a> Top<'a> {
    /// Notes one top-level key; `None` (give up) for a repeated key or for one that differs from
    /// `schema`, `name` or `package` only in case, which the decoder also matches.
    fn set(&mut self, key: &str, value: Option<&'a str>) -> Option<()> {
        self.seen = true;
        let slot = match key {
            "schema" => &mut self.schema,
            "name" => &mut self.name,
            "package" => &mut self.package,
            _ if ["schema", "name", "package"]
                .iter()
                .any(|k| k.eq_ignore_ascii_case(key)) =>
            {
                return None;
            }
            _ => return Some(()),
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(value);
        Some(())
    }

    /// The document's package; `None` when it rests on a value not read with certainty.
    fn key(&self) -> Option<&'a str> {
        let field = match self.schema {
            Some(None) => return None,
            Some(Some(SCHEMA_PACKAGE)) => self.name,
            _ => self.package,
        };
        match field {
            None => Some(""),
            Some(v) => v,
        }
    }

    /// Adds the document's package to `keys` (nothing for a document without content).
    fn finish(self, keys: &mut BTreeSet<String>) -> Option<()> {
        if self.seen {
            keys.insert(self.key()?.to_owned());
        }
        Some(())
    }
}

/// The quick look at a YAML stream. Top-level keys are the lines at column 0; every other line
/// is only checked not to start something that could run on past the next such line (a quoted
/// scalar left open, a flow collection, an anchor or tag), and block scalars' content is skipped.
fn scan_yaml(text: &str) -> Option<BTreeSet<String>> {
    let mut keys = BTreeSet::new();
    let mut top = Top::default();
    // Inside a block scalar, or a plain one continued over lines, whose content is indented more
    // than this: content that is only skipped.
    let mut block: Option<usize> = None;
    // The previous line gave one of the three keys a plain value, which an indented line would
    // continue.
    let mut watch = false;
    // Inside a quoted scalar that runs over lines, opened with this quote.
    let mut quote: Option<u8> = None;
    for line in text.split('\n') {
        let indent = line.bytes().take_while(|&b| b == b' ').count();
        let rest = &line[indent..];
        if rest.is_empty() {
            continue;
        }
        if let Some(q) = quote {
            // A line at column 0 inside a quoted scalar is where readers part ways (and `---`
            // splits the document there).
            if indent == 0 {
                return None;
            }
            if let Some(end) = quote_close(line, q) {
                quote = None;
                comment_or_nothing(&line[end..])?;
            }
            continue;
        }
        if let Some(n) = block {
            if indent > n {
                if watch {
                    return None;
                }
                continue;
            }
            block = None;
        }
        if line.ends_with('\r') || rest.starts_with('\t') {
            return None;
        }
        if indent == 0 && !rest.starts_with("- ") && rest != "-" {
            watch = false;
            if line == "---" {
                std::mem::take(&mut top).finish(&mut keys)?;
                continue;
            }
            if rest.starts_with('#') {
                continue;
            }
            let (key, value) = top_level_line(line)?;
            match value_kind(value)? {
                Value::Plain(v) => {
                    let certain = olm_goenc::yamlread::plain_is_string(v);
                    top.set(key, certain.then_some(v))?;
                    watch = matches!(key, "schema" | "name" | "package");
                    block = Some(0);
                }
                Value::Block => {
                    top.set(key, None)?;
                    block = Some(0);
                }
                Value::Open(q) => {
                    top.set(key, None)?;
                    quote = Some(q);
                }
                Value::Other => top.set(key, None)?,
            }
            continue;
        }

        top.seen = true;
        // A nested line: sequence dashes, then a key or a scalar.
        let mut col = indent;
        let mut rest = rest;
        while let Some(r) = rest.strip_prefix("- ") {
            let r2 = r.trim_start_matches(' ');
            col += rest.len() - r2.len();
            rest = r2;
        }
        if rest == "-" || rest.starts_with('#') {
            continue;
        }
        let value = match rest.as_bytes()[0] {
            q @ (b'"' | b'\'') => {
                let Some(end) = quote_close(&rest[1..], q) else {
                    quote = Some(q);
                    continue;
                };
                let after = &rest[1 + end..];
                match after.strip_prefix(':') {
                    Some(v) if v.is_empty() || v.starts_with(' ') => v,
                    _ => {
                        comment_or_nothing(after)?;
                        continue;
                    }
                }
            }
            _ => match find_pair(rest, b':', b' ') {
                Some(p) => &rest[p + 2..],
                None if rest.ends_with(':') => "",
                None => rest,
            },
        };
        match value_kind(value)? {
            Value::Block => block = Some(col),
            Value::Plain(v) if !v.is_empty() => block = Some(col),
            Value::Open(q) => quote = Some(q),
            Value::Plain(_) | Value::Other => {}
        }
    }
    if quote.is_some() {
        return None;
    }
    top.finish(&mut keys)?;
    Some(keys)
}

/// A top-level line's key and value text; `None` unless the key is a simple plain word.
fn top_level_line(line: &str) -> Option<(&str, &str)> {
    let end = line
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/')))
        .unwrap_or(line.len());
    if end == 0 || !line.as_bytes()[0].is_ascii_alphanumeric() {
        return None;
    }
    let after = line[end..].strip_prefix(':')?;
    if !(after.is_empty() || after.starts_with(' ')) {
        return None;
    }
    Some((&line[..end], after))
}

/// What a value on a line is, as far as the quick look cares.
enum Value<'a> {
    /// A plain scalar, without its comment.
    Plain(&'a str),
    /// `|` or `>`: the lines that follow, indented more, are its content.
    Block,
    /// A quoted scalar that goes on to the next lines, opened with this quote.
    Open(u8),
    /// Nothing (a collection follows), a quoted scalar closed on the line, `[]` or `{}`.
    Other,
}

/// Classifies the value text after a key (or a lone scalar); `None` for what could run on past
/// the line or that opm's writer never produces (flow collections, anchors, aliases, tags).
fn value_kind(v: &str) -> Option<Value<'_>> {
    let v = v.trim_start_matches(' ');
    let Some(&first) = v.as_bytes().first() else {
        return Some(Value::Other);
    };
    match first {
        b'#' => Some(Value::Other),
        q @ (b'"' | b'\'') => match quote_close(&v[1..], q) {
            Some(end) => {
                comment_or_nothing(&v[1 + end..])?;
                Some(Value::Other)
            }
            None => Some(Value::Open(q)),
        },
        b'|' | b'>' => Some(Value::Block),
        b'[' | b'{' => {
            let t = strip_comment(v);
            (t == "[]" || t == "{}").then_some(Value::Other)
        }
        b'&' | b'*' | b'!' | b'%' | b'@' | b'`' | b'\t' => None,
        _ => Some(Value::Plain(strip_comment(v))),
    }
}

/// A plain value without a trailing comment or spaces.
fn strip_comment(v: &str) -> &str {
    let v = match find_pair(v, b' ', b'#') {
        Some(p) => &v[..p],
        None => v,
    };
    v.trim_end_matches(' ')
}

/// Where the two bytes `a`, `b` first follow each other in `s` (`str::find` of a two-byte
/// pattern, without its searcher's set-up cost on every line).
fn find_pair(s: &str, a: u8, b: u8) -> Option<usize> {
    let bytes = s.as_bytes();
    memchr::memchr_iter(a, bytes).find(|&i| bytes.get(i + 1) == Some(&b))
}

/// `Some` when `s` holds nothing but spaces and perhaps a comment.
fn comment_or_nothing(s: &str) -> Option<()> {
    let t = s.trim_start_matches(' ');
    (t.is_empty() || (t.starts_with('#') && t.len() < s.len())).then_some(())
}

/// The byte just past the quote `q` that closes a quoted scalar whose text `s` continues; `None`
/// when `s` does not close it. A backslash at the end of a line escapes the line break.
fn quote_close(s: &str, q: u8) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if q == b'"' => i += 2,
            b'\'' if q == b'\'' && b.get(i + 1) == Some(&b'\'') => i += 2,
            c if c == q => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// The quick look at a JSON stream: only documents that are valid JSON objects are read, from
/// their top-level members.
fn scan_json(text: &str) -> Option<BTreeSet<String>> {
    let mut keys = BTreeSet::new();
    let stream =
        serde_json::Deserializer::from_str(text).into_iter::<&serde_json::value::RawValue>();
    for doc in stream {
        let doc = doc.ok()?;
        let mut top = Top::default();
        json_members(doc.get().as_bytes(), &mut top)?;
        top.seen = true;
        top.finish(&mut keys)?;
    }
    Some(keys)
}

/// Notes the top-level members of one valid JSON object.
fn json_members<'a>(b: &'a [u8], top: &mut Top<'a>) -> Option<()> {
    if b.first() != Some(&b'{') {
        return None;
    }
    let mut i = 1;
    loop {
        i = skip_ws(b, i);
        match b.get(i)? {
            b'}' => return Some(()),
            b',' => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let (key, end) = json_string(b, i)?;
        i = skip_ws(b, end);
        i = skip_ws(b, i + 1); // the colon
        let key = key?;
        if b.get(i)? == &b'"' {
            let (value, end) = json_string(b, i)?;
            top.set(key, value)?;
            i = end;
        } else {
            top.set(key, None)?;
            i = skip_value(b, i)?;
        }
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// A JSON string starting at `i`: its text when it has no escapes, and the index past it.
fn json_string(b: &[u8], i: usize) -> Option<(Option<&str>, usize)> {
    let mut j = i + 1;
    let mut plain = true;
    loop {
        j += memchr::memchr2(b'"', b'\\', b.get(j..)?)?;
        if b[j] == b'"' {
            let text = std::str::from_utf8(&b[i + 1..j]).ok();
            return Some((text.filter(|_| plain), j + 1));
        }
        plain = false;
        j += 2;
    }
}

/// The index past a (valid) JSON value that is not a string, starting at `i`.
fn skip_value(b: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match *b.get(i)? {
            b'"' => i = json_string(b, i)?.1,
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' if depth > 0 => {
                depth -= 1;
                i += 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            b',' | b'}' | b']' if depth == 0 => return Some(i),
            _ => i += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Option<Vec<String>> {
        scan(text).map(|k| k.into_iter().collect())
    }

    fn some(ks: &[&str]) -> Option<Vec<String>> {
        Some(ks.iter().map(|k| (*k).to_owned()).collect())
    }

    #[test]
    fn reads_yaml_as_opm_writes_it() {
        let text = "---\ndefaultChannel: stable\nname: foo\nschema: olm.package\n---\nentries:\n- name: foo.v1\n  skips:\n  - a\nname: stable\npackage: foo\nschema: olm.channel\n---\nimage: quay.io/x/y:v1\nname: bar.v1\npackage: 3scale-bar\nproperties:\n- type: olm.csv.metadata\n  value:\n    description: |-\n      \"open quote\n      package: trap\n    x: 'it''s'\nschema: olm.bundle\n";
        assert_eq!(keys(text), some(&["3scale-bar", "foo"]));
        // A document without a package, and one of another schema without a name.
        assert_eq!(keys("schema: custom\nx: 1\n"), some(&[""]));
        assert_eq!(keys(""), some(&[""]));
        assert_eq!(keys("# only\n"), some(&[""]));
        assert_eq!(keys("---\n---\n"), some(&[""]));
        // An olm.package is its name; package: is ignored on it.
        assert_eq!(
            keys("schema: olm.package\nname: a\npackage: b\n"),
            some(&["a"])
        );
        // Quoted scalars wrapped over lines, as go-yaml writes long ones.
        assert_eq!(
            keys(
                "schema: olm.bundle\nx:\n- description: 'a: b\n    c''d'\n- \"e\\\n  f: \\\" g\" # c\ndescription: \"h\n  i\"\npackage: p\n"
            ),
            some(&["p"])
        );
        // Comments after values, and quoted values of other keys.
        assert_eq!(
            keys("schema: olm.channel # c\npackage: p\nname: \"1.0\"\n"),
            some(&["p"])
        );
    }

    #[test]
    fn gives_up_where_a_look_could_be_wrong() {
        for text in [
            // Values that are not certain strings.
            "schema: olm.channel\npackage: 1.0\n",
            "schema: olm.channel\npackage: yes\n",
            "schema: olm.channel\npackage: \"p\"\n",
            "schema: olm.channel\npackage: |\n  p\n",
            "schema: olm.channel\npackage:\n",
            "schema: \"olm.package\"\nname: a\n",
            // A plain value continued on the next line.
            "schema: olm.channel\npackage: p\n  q\n",
            // Keys the decoder matches regardless of case, and repeats.
            "schema: olm.channel\nPackage: p\n",
            "schema: olm.channel\npackage: p\npackage: q\n",
            // Things that can run on past a line, or that opm never writes.
            "schema: olm.channel\nx: \"open\npackage: trap\"\npackage: p\n",
            "schema: olm.channel\nx:\n  - 'open\npackage: trap'\npackage: p\n",
            "schema: olm.channel\nx: [a,\npackage: trap]\npackage: p\n",
            "schema: olm.channel\nx: &a 1\npackage: p\n",
            "{schema: olm.channel, package: p}\n",
            "schema: olm.channel\r\npackage: p\r\n",
            "--- {schema: olm.channel}\n",
            "\"schema\": olm.channel\npackage: p\n",
            "%YAML 1.1\n---\nschema: olm.channel\npackage: p\n",
        ] {
            assert_eq!(keys(text), None, "{text:?}");
        }
    }

    #[test]
    fn reads_valid_json_only() {
        let text = r#"{"schema":"olm.package","name":"a","icon":{"x":[1,{"name":"no"}]}}
{"schema":"olm.bundle","package":"b","name":"b.v1","properties":[{"type":"olm.package","value":{"package":"no"}}]}
{"schema":"x"}"#;
        assert_eq!(keys(text), some(&["", "a", "b"]));
        for text in [
            r#"{"schema":"olm.bundle","package":"a\u0062"}"#,
            r#"{"schema":"olm.bundle","package":"a","package":"b"}"#,
            r#"{"schema":"olm.bundle","PACKAGE":"a"}"#,
            r#"{"schema":"olm.bundle","package":"a",}"#,
            r#"{"schema":"olm.bundle","package":"a"} ["#,
        ] {
            assert_eq!(keys(text), None, "{text:?}");
        }
    }
}
