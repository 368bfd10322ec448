//! Reading YAML the way the Kubernetes Go tooling does: sigs.k8s.io/yaml, i.e. go-yaml v2 with
//! YAML 1.1 plain scalars (`yes`/`on` are booleans, `0777` is octal, `1_000` is an integer; keys
//! too, so `y:` becomes `"true"`), then JSON (map keys become strings, timestamps stay strings,
//! `.inf`/`.nan` are errors). Merge keys (`<<`) apply; a repeated key keeps its last value unless
//! the caller asks for an error ([`DuplicateKeys`]).
//!
//! This is the workspace's only YAML reader: bundles read manifests into [`serde_json::Value`]s
//! with [`parse_documents`], catalogs read each document straight into operator-registry's
//! canonical JSON text with [`to_canonical_json`]. Both go through one line-based fast path for
//! the plain block YAML nearly every file is written in, and fall back to one full parser
//! (granit-parser's events) for everything else and for every error message. One set of scalar
//! rules serves both paths, and tests hold the fast path equal to the full parser. A syntax
//! error is worded as go-yaml words it (`did not find expected key`, `found character that cannot
//! start any token`), at the line where the parser here finds it.
//!
//! Nesting: a catalog document ([`document_canonical`]) may nest
//! [`MAX_NESTING_DEPTH`](crate::json::MAX_NESTING_DEPTH) (10,000) collections deep, block and
//! flow together, as deep as opm's Go decoders read; the collection that would go one level
//! deeper fails with `exceeded max depth of 10000` at its line. Neither path recurses on the
//! caller's stack per level (values are copied and given back through
//! [`json::clone_value`](crate::json::clone_value) and [`json::drop_value`](crate::json::drop_value)).
//! The readers returning [`Value`]s keep the parser's own limits (255 nested block and 255 nested
//! flow collections, `recursion limit exceeded`), because their callers walk those values
//! recursively.

mod fast;
mod full;
mod problem;
pub(crate) mod scalar;

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value};

use crate::json::MAX_NESTING_DEPTH;
use scalar::Scalar;

/// What to do with a key that a mapping repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DuplicateKeys {
    /// The last occurrence wins, as go-yaml v2's non-strict decoding (what Kubernetes uses) does.
    #[default]
    LastWins,
    /// A repeated key is an error naming the repeat's line; keys merged in with `<<` may still be
    /// overridden.
    Error,
}

/// How to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// What a repeated mapping key means.
    pub duplicate_keys: DuplicateKeys,
}

/// A YAML syntax or conversion error, with its place in the text read (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The line of the error, counted from 1 in the text given; 0 when the error is about the
    /// whole document (a value of the wrong shape for the type asked for).
    pub line: usize,
    /// The column of the error, counted from 1.
    pub column: usize,
    /// What is wrong, without the place.
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return f.write_str(&self.message);
        }
        write!(
            f,
            "line {} column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for Error {}

/// Every non-empty document of `text`, a repeated key keeping its last value. Empty documents
/// are skipped, as the Kubernetes YAML decoders skip them.
pub fn parse_documents(text: &str) -> Result<Vec<Value>, Error> {
    parse_documents_with(text, &Options::default())
}

/// [`parse_documents`] with options.
pub fn parse_documents_with(text: &str, opts: &Options) -> Result<Vec<Value>, Error> {
    if let Some(docs) = fast_values(text, opts) {
        return Ok(docs);
    }
    full::parse_events(text, opts, full::Depth::Parser)
}

/// The one document of `text` (`null` when it has none), for files that hold a single value:
/// annotations, templates, configuration. A second document is an error.
pub fn parse_document_with(text: &str, opts: &Options) -> Result<Value, Error> {
    let mut docs = parse_documents_with(text, opts)?;
    match docs.len() {
        0 => Ok(Value::Null),
        1 => Ok(docs.remove(0)),
        n => Err(Error {
            line: 0,
            column: 0,
            message: format!("expected a single YAML document, found {n}"),
        }),
    }
}

/// The one document of `text`, decoded into `T` as Go decodes the JSON that sigs.k8s.io/yaml
/// turns it into.
pub fn from_str<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, Error> {
    from_str_with(text, &Options::default())
}

/// [`from_str`] with options.
pub fn from_str_with<T: serde::de::DeserializeOwned>(
    text: &str,
    opts: &Options,
) -> Result<T, Error> {
    let value = parse_document_with(text, opts)?;
    serde_json::from_value(value).map_err(|e| Error {
        line: 0,
        column: 0,
        message: e.to_string(),
    })
}

/// Whether a plain (unquoted, untagged) scalar reads as a string rather than as null, a boolean
/// or a number: `olm-1.0` does, `1.0`, `yes` and `~` do not. Lets a quick look at a document's
/// top-level values trust what it sees.
pub fn plain_is_string(s: &str) -> bool {
    matches!(scalar::resolve_plain(Cow::Borrowed(s)), Ok(Scalar::Str(_)))
}

/// The text go-yaml gives a `string` target for a scalar already read into JSON — a boolean or a
/// number as its JSON text, `null` as the empty string (annotations such as `…: true` are
/// strings to the Go side); `None` for a mapping or a sequence.
pub fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => Some(String::new()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Array(_) | Value::Object(_) => None,
    }
}

/// The documents of `text` through the fast path only; `None` when any of it needs the full
/// parser. For tests that hold the two paths equal.
#[doc(hidden)]
pub fn fast_values(text: &str, opts: &Options) -> Option<Vec<Value>> {
    fast::parse_documents(text, &mut Values(*opts))
}

/// The documents of `text` through the full parser only. For tests that hold the two paths equal.
#[doc(hidden)]
pub fn full_values(text: &str, opts: &Options) -> Result<Vec<Value>, Error> {
    full::parse_events(text, opts, full::Depth::Parser)
}

/// One document (the caller has split the stream at its `---` lines) as canonical JSON text —
/// keys sorted byte-wise at every level, compact, Go's string and number formatting — which is
/// the form operator-registry gives every catalog blob. `Ok(None)` for a document with no value
/// (empty or only comments), or one whose top level is not a mapping: callers report those in
/// their own words. Anything outside the fast subset is read by the full parser into a
/// [`Value`] that is returned for the caller to convert; it may nest up to
/// [`MAX_NESTING_DEPTH`] deep, so a caller that does not consume it gives it back with
/// [`drop_value`](crate::json::drop_value).
pub fn document_canonical(doc: &str, opts: &Options) -> Result<Canonical, Error> {
    if let Some(mut docs) = fast::parse_documents(doc, &mut CanonTree(*opts))
        && docs.len() <= 1
    {
        match docs.pop() {
            None => return Ok(Canonical::Empty),
            Some(Canon::Map(entries)) => {
                // Written here rather than by `Canon::write`, to note where each top-level value
                // lies: callers look at a few of them without reading the text again.
                let mut out = String::with_capacity(doc.len());
                let mut keys = Vec::with_capacity(entries.len());
                out.push('{');
                let written = entries.iter().enumerate().try_for_each(|(i, (k, v))| {
                    if i > 0 {
                        out.push(',');
                    }
                    crate::json::write_str(&mut out, k);
                    out.push(':');
                    let start = out.len();
                    v.write(&mut out)?;
                    keys.push((k.to_string(), start..out.len()));
                    Some(())
                });
                out.push('}');
                if written.is_some() {
                    return Ok(Canonical::Text(out, keys));
                }
            }
            Some(_) => {}
        }
    }
    let mut docs = full::parse_events(doc, opts, full::Depth::Max(MAX_NESTING_DEPTH))?;
    Ok(match docs.len() {
        0 => Canonical::Empty,
        1 => Canonical::Value(docs.remove(0)),
        _ => Canonical::Values(docs),
    })
}

/// One document read by [`document_canonical`].
#[derive(Debug, Clone, PartialEq)]
pub enum Canonical {
    /// No value: empty, only comments, or `null`.
    Empty,
    /// A mapping, as canonical JSON text, with each top-level key and where its value lies in
    /// the text.
    Text(String, Vec<(String, std::ops::Range<usize>)>),
    /// A value the fast path did not read (or not a mapping), for the caller to convert.
    Value(Value),
    /// More than one document where one was expected.
    Values(Vec<Value>),
}

/// Builds [`Value`]s.
struct Values(Options);

impl<'a> fast::Build<'a> for Values {
    type Node = Value;

    fn scalar(&mut self, s: Scalar<'a>) -> Option<Value> {
        Some(s.into_value())
    }

    fn seq(&mut self, items: Vec<Value>) -> Value {
        Value::Array(items)
    }

    fn map(&mut self, entries: std::vec::Drain<'_, (Cow<'a, str>, Value)>) -> Option<Value> {
        let n = entries.len();
        let mut map = Map::with_capacity(n);
        // A repeated key keeps its first position and its last value, as with inserting in turn.
        map.extend(entries.map(|(k, v)| (k.into_owned(), v)));
        if map.len() < n && self.0.duplicate_keys == DuplicateKeys::Error {
            return None;
        }
        Some(Value::Object(map))
    }
}

/// A borrowed tree for canonical text: mappings must be complete before their keys can be sorted.
enum Canon<'a> {
    Scalar(Scalar<'a>),
    Seq(Vec<Canon<'a>>),
    Map(Vec<(Cow<'a, str>, Canon<'a>)>),
}

struct CanonTree(Options);

impl<'a> fast::Build<'a> for CanonTree {
    type Node = Canon<'a>;

    fn scalar(&mut self, s: Scalar<'a>) -> Option<Canon<'a>> {
        Some(Canon::Scalar(s))
    }

    fn seq(&mut self, items: Vec<Canon<'a>>) -> Canon<'a> {
        Canon::Seq(items)
    }

    fn map(
        &mut self,
        entries: std::vec::Drain<'_, (Cow<'a, str>, Canon<'a>)>,
    ) -> Option<Canon<'a>> {
        let mut entries: Vec<_> = entries.collect();
        if !entries.windows(2).all(|w| w[0].0 < w[1].0) {
            // Stable: of repeated keys, the last stays last.
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            if entries.windows(2).any(|w| w[0].0 == w[1].0) {
                if self.0.duplicate_keys == DuplicateKeys::Error {
                    return None; // the full parser reports it, with its line
                }
                let mut kept: Vec<(Cow<'a, str>, Canon<'a>)> = Vec::with_capacity(entries.len());
                for e in entries {
                    match kept.last_mut() {
                        Some(last) if last.0 == e.0 => *last = e,
                        _ => kept.push(e),
                    }
                }
                entries = kept;
            }
        }
        Some(Canon::Map(entries))
    }
}

impl Canon<'_> {
    /// `None` for a number JSON cannot hold (never produced by the scalar rules, kept total).
    fn write(&self, out: &mut String) -> Option<()> {
        match self {
            Canon::Scalar(s) => match s {
                Scalar::Null => out.push_str("null"),
                Scalar::Bool(true) => out.push_str("true"),
                Scalar::Bool(false) => out.push_str("false"),
                Scalar::Int(i) => crate::json::write_i64(out, *i),
                Scalar::Uint(u) => crate::json::write_u64(out, *u),
                Scalar::Float(f) => crate::json::write_f64(out, *f).ok()?,
                Scalar::Str(s) => crate::json::write_str(out, s),
            },
            Canon::Seq(items) => {
                out.push('[');
                for (i, it) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    it.write(out)?;
                }
                out.push(']');
            }
            Canon::Map(entries) => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    crate::json::write_str(out, k);
                    out.push(':');
                    v.write(out)?;
                }
                out.push('}');
            }
        }
        Some(())
    }
}
