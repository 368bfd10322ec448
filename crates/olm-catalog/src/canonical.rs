//! Canonical JSON: the byte form operator-registry gives every blob (keys sorted byte-wise at every level,
//! compact, no HTML escaping, numbers as Go's `float64` encoder prints them). catalogd's `catalog.jsonl`
//! is exactly these blobs, one per line, so producing them while parsing means the JSONL writer is a copy.
//!
//! One writer (`Writer`) is fed by two readers: JSON text (`from_json_text`, after serde_json has
//! checked its syntax) and the `serde_json::Value`s the YAML reader returns where it needed its full
//! parser (`from_value`). YAML in the common block style arrives as canonical text from the reader.
//!
//! Nothing here recurses per level of nesting, so a document as deep as Go's decoders read
//! ([`MAX_NESTING_DEPTH`], 10,000 collections with the top level counted) costs no stack, and an error
//! deep inside costs no more than one near the top. (serde_json's own parser, with its recursion
//! limit lifted, recurses once per level, and while an error unwinds it works out the error's line
//! again at every level: 10,000 levels under a 1 MB prefix took 30 s in a debug build.) The collection
//! that would open level 10,001 fails with `exceeded max depth of 10000`.

use std::borrow::Cow;
use std::collections::HashSet;

use olm_goenc::json::{MAX_NESTING_DEPTH, nesting_too_deep, write_f64, write_str};
use olm_goenc::quote;
use serde_json::value::RawValue;
use serde_json::{Number, Value};

/// Builds canonical text from a stream of structure events (open, key, scalar, close) that a
/// reader guarantees to be balanced.
/// Whether a top-level value is copied for the loader, which reads only `schema`, `package` and
/// `name` from them: those whatever their length (a long name is still a name), other values
/// only when short, so that big descriptions are not copied twice.
pub(crate) fn top_value_kept(key: &str, value: &str) -> bool {
    value.len() <= 4096
        || ["schema", "package", "name"]
            .iter()
            .any(|n| key.eq_ignore_ascii_case(n))
}

pub(crate) struct Writer<'k> {
    out: String,
    stack: Vec<Frame>,
    /// Receives each top-level key with the canonical text of its value (empty when
    /// [`top_value_kept`] says it is not worth a copy).
    top_keys: Option<&'k mut Vec<(String, String)>>,
}

enum Frame {
    Seq {
        empty: bool,
    },
    Map {
        /// Where the map's `{` is in the output.
        base: usize,
        /// (key, start of `"key":value`, end) for each entry, in input order.
        entries: Vec<(String, usize, usize)>,
        sorted: bool,
        /// Keys seen so far, built only once the input turns out not to be sorted (sorted input
        /// cannot repeat a key without the order check noticing).
        seen: Option<HashSet<String>>,
        /// The key whose value is being written, and where its entry starts.
        key: Option<(String, usize)>,
    },
}

impl<'k> Writer<'k> {
    pub(crate) fn new(capacity: usize, top_keys: Option<&'k mut Vec<(String, String)>>) -> Self {
        Writer {
            out: String::with_capacity(capacity),
            stack: Vec::new(),
            top_keys,
        }
    }

    /// Whether the next string is a key.
    fn wants_key(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Map { key: None, .. }))
    }

    fn before_value(&mut self) {
        if let Some(Frame::Seq { empty }) = self.stack.last_mut() {
            if !*empty {
                self.out.push(',');
            }
            *empty = false;
        }
    }

    fn after_value(&mut self) {
        if let Some(Frame::Map {
            entries,
            key,
            sorted,
            ..
        }) = self.stack.last_mut()
            && let Some((k, start)) = key.take()
        {
            if let Some(last) = entries.last()
                && last.0 >= k
            {
                *sorted = false;
            }
            entries.push((k, start, self.out.len()));
        }
    }

    /// Starts a map or a sequence.
    fn open(&mut self, map: bool) -> Result<(), String> {
        if self.stack.len() >= MAX_NESTING_DEPTH {
            return Err(nesting_too_deep());
        }
        self.before_value();
        let frame = if map {
            Frame::Map {
                base: self.out.len(),
                entries: Vec::new(),
                sorted: true,
                seen: None,
                key: None,
            }
        } else {
            Frame::Seq { empty: true }
        };
        self.out.push(if map { '{' } else { '[' });
        self.stack.push(frame);
        Ok(())
    }

    pub(crate) fn open_seq(&mut self) -> Result<(), String> {
        self.open(false)
    }

    pub(crate) fn open_map(&mut self) -> Result<(), String> {
        self.open(true)
    }

    /// A key of the innermost map; a repeated key is an error.
    pub(crate) fn key(&mut self, k: String) -> Result<(), String> {
        let Some(Frame::Map {
            entries, seen, key, ..
        }) = self.stack.last_mut()
        else {
            return Err("a key outside a mapping".to_owned());
        };
        let repeated = match entries.last() {
            Some(last) if last.0 >= k => {
                let set = seen.get_or_insert_with(|| entries.iter().map(|e| e.0.clone()).collect());
                !set.insert(k.clone())
            }
            _ => seen.as_mut().is_some_and(|set| !set.insert(k.clone())),
        };
        if repeated {
            return Err(format!("duplicate key {}", quote(&k)));
        }
        if !entries.is_empty() {
            self.out.push(',');
        }
        let start = self.out.len();
        write_str(&mut self.out, &k);
        self.out.push(':');
        *key = Some((k, start));
        Ok(())
    }

    /// Ends the innermost collection, sorting a map's entries.
    pub(crate) fn close(&mut self) {
        match self.stack.pop() {
            Some(Frame::Seq { .. }) => self.out.push(']'),
            Some(Frame::Map {
                base,
                entries,
                sorted,
                ..
            }) => {
                let top = self.stack.is_empty();
                let spans = self.finish_map(base, entries, sorted);
                if top && let Some(keys) = self.top_keys.as_deref_mut() {
                    for (k, s, e) in spans {
                        let kv = &self.out[s..e];
                        let v = &kv[json_key_len(kv) + 1..];
                        let v = if top_value_kept(&k, v) {
                            v.to_owned()
                        } else {
                            String::new()
                        };
                        keys.push((k, v));
                    }
                }
                self.out.push('}');
            }
            None => {}
        }
        self.after_value();
    }

    /// Puts a map's entries in key order; returns them with their final spans.
    fn finish_map(
        &mut self,
        base: usize,
        entries: Vec<(String, usize, usize)>,
        sorted: bool,
    ) -> Vec<(String, usize, usize)> {
        if sorted {
            return entries;
        }
        let mut order: Vec<usize> = (0..entries.len()).collect();
        order.sort_by(|&a, &b| entries[a].0.cmp(&entries[b].0));
        let mut buf = String::with_capacity(self.out.len() - base);
        buf.push('{');
        let mut spans = Vec::with_capacity(entries.len());
        for (n, &i) in order.iter().enumerate() {
            if n > 0 {
                buf.push(',');
            }
            let start = base + buf.len();
            buf.push_str(&self.out[entries[i].1..entries[i].2]);
            spans.push((entries[i].0.clone(), start, base + buf.len()));
        }
        self.out.truncate(base);
        self.out.push_str(&buf);
        spans
    }

    pub(crate) fn null(&mut self) {
        self.scalar(|o| o.push_str("null"));
    }

    pub(crate) fn bool(&mut self, b: bool) {
        self.scalar(|o| o.push_str(if b { "true" } else { "false" }));
    }

    pub(crate) fn string(&mut self, s: &str) {
        self.scalar(|o| write_str(o, s));
    }

    /// A number as Go writes the `float64` it decodes it to.
    pub(crate) fn number(&mut self, n: &Number) -> Result<(), String> {
        self.before_value();
        if let Some(u) = n.as_u64() {
            olm_goenc::json::write_u64_through_float64(&mut self.out, u);
        } else if let Some(i) = n.as_i64() {
            olm_goenc::json::write_i64_through_float64(&mut self.out, i);
        } else {
            write_f64(&mut self.out, n.as_f64().unwrap_or(f64::NAN)).map_err(|e| e.to_string())?;
        }
        self.after_value();
        Ok(())
    }

    fn scalar(&mut self, write: impl FnOnce(&mut String)) {
        self.before_value();
        write(&mut self.out);
        self.after_value();
    }

    pub(crate) fn finish(self) -> String {
        self.out
    }
}

/// Length of the leading JSON string literal in `s` (which starts with `"`).
fn json_key_len(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

/// Why JSON text could not be made canonical: where (a byte offset into the text) and what, in
/// serde_json's words where it is serde_json that refuses.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TextError {
    pub offset: usize,
    pub message: String,
}

/// The canonical form of one JSON value whose syntax serde_json has already checked (it is the
/// text of a [`RawValue`]): the reader here relies on that and only splits tokens.
pub(crate) fn from_json_text(
    text: &str,
    top_keys: Option<&mut Vec<(String, String)>>,
) -> Result<String, TextError> {
    let b = text.as_bytes();
    let mut w = Writer::new(text.len(), top_keys);
    let mut i = 0;
    let fail = |offset: usize| move |message: String| TextError { offset, message };
    while let Some(&c) = b.get(i) {
        match c {
            b'[' => {
                w.open_seq().map_err(fail(i))?;
                i += 1;
            }
            b'{' => {
                w.open_map().map_err(fail(i))?;
                i += 1;
            }
            b']' | b'}' => {
                w.close();
                i += 1;
            }
            b'"' => {
                let end = string_end(b, i);
                let literal = &text[i..end];
                let s: Cow<str> = if literal.contains('\\') {
                    Cow::Owned(
                        serde_json::from_str::<String>(literal)
                            .map_err(|e| fail(i)(json_error_text(&e)))?,
                    )
                } else {
                    Cow::Borrowed(&literal[1..literal.len() - 1])
                };
                if w.wants_key() {
                    w.key(s.into_owned()).map_err(fail(i))?;
                } else {
                    w.string(&s);
                }
                i = end;
            }
            b't' => {
                w.bool(true);
                i += 4;
            }
            b'f' => {
                w.bool(false);
                i += 5;
            }
            b'n' => {
                w.null();
                i += 4;
            }
            b'-' | b'0'..=b'9' => {
                let end = i + b[i..]
                    .iter()
                    .position(|c| !matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                    .unwrap_or(b.len() - i);
                let n = serde_json::from_str::<Number>(&text[i..end])
                    .map_err(|e| fail(i)(json_error_text(&e)))?;
                w.number(&n).map_err(fail(i))?;
                i = end;
            }
            // Separators and white space.
            _ => i += 1,
        }
    }
    Ok(w.finish())
}

/// The end (one past the closing quote) of the string literal starting at `start`.
fn string_end(b: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    loop {
        match b
            .get(i..)
            .and_then(|rest| memchr::memchr2(b'"', b'\\', rest))
        {
            None => return b.len(),
            Some(j) if b[i + j] == b'\\' => i += j + 2,
            Some(j) => return i + j + 1,
        }
    }
}

/// serde_json's message without its ` at line … column …` suffix (the callers name the line).
pub(crate) fn json_error_text(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// The canonical form of a value the YAML reader built, walked without recursion.
pub(crate) fn from_value(
    v: &Value,
    top_keys: Option<&mut Vec<(String, String)>>,
) -> Result<String, String> {
    enum Step<'a> {
        Value(&'a Value),
        Key(&'a str),
        Close,
    }
    let mut w = Writer::new(0, top_keys);
    let mut todo = vec![Step::Value(v)];
    while let Some(step) = todo.pop() {
        match step {
            Step::Close => w.close(),
            Step::Key(k) => w.key(k.to_owned())?,
            Step::Value(v) => match v {
                Value::Null => w.null(),
                Value::Bool(b) => w.bool(*b),
                Value::Number(n) => w.number(n)?,
                Value::String(s) => w.string(s),
                Value::Array(items) => {
                    w.open_seq()?;
                    todo.push(Step::Close);
                    todo.extend(items.iter().rev().map(Step::Value));
                }
                Value::Object(map) => {
                    w.open_map()?;
                    todo.push(Step::Close);
                    for (k, x) in map.iter().rev() {
                        todo.push(Step::Value(x));
                        todo.push(Step::Key(k));
                    }
                }
            },
        }
    }
    Ok(w.finish())
}

/// Canonicalises a JSON text (used for values built in memory).
pub fn canonicalize_json(s: &str) -> Result<String, serde_json::Error> {
    let raw: &RawValue = serde_json::from_str(s)?;
    from_json_text(raw.get(), None).map_err(|e| serde::de::Error::custom(e.message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_keys_and_escapes_like_go() {
        let got =
            canonicalize_json(r#"{"b":1,"a":{"z":"<&>\u2028","y":[1.0,2e3,null,true]}}"#).unwrap();
        assert_eq!(
            got,
            r#"{"a":{"y":[1,2000,null,true],"z":"<&>\u2028"},"b":1}"#
        );
    }

    #[test]
    fn duplicate_keys_are_rejected() {
        assert!(canonicalize_json(r#"{"b":1,"a":2,"b":3}"#).is_err());
        assert!(canonicalize_json(r#"{"a":1,"a":2}"#).is_err());
        let e = from_json_text("[{\"x\":{\"k\":1,\"j\":2,\"k\":3}}]", None).unwrap_err();
        assert_eq!((e.offset, e.message.as_str()), (19, r#"duplicate key "k""#));
    }

    #[test]
    fn big_integers_pass_through_float64() {
        assert_eq!(
            canonicalize_json("[9007199254740993]").unwrap(),
            "[9007199254740992]"
        );
        assert_eq!(
            canonicalize_json("[12345678901234567890123]").unwrap(),
            "[1.2345678901234568e+22]"
        );
        assert_eq!(
            canonicalize_json("[-5, -0, 0.5e-7]").unwrap(),
            "[-5,-0,5e-8]"
        );
        let e = from_json_text("[1, 1e400]", None).unwrap_err();
        assert_eq!((e.offset, e.message.as_str()), (4, "number out of range"));
    }

    #[test]
    fn nested_maps_in_sequences_sort_in_place() {
        assert_eq!(
            canonicalize_json(r#"[{"b":1,"a":2},{"d":[{"z":1,"y":2}],"c":3},[]]"#).unwrap(),
            r#"[{"a":2,"b":1},{"c":3,"d":[{"y":2,"z":1}]},[]]"#
        );
        assert_eq!(
            canonicalize_json(r#" { "s" : "a\"b\\", "e" : {} , "q":"\u00e9\n" } "#).unwrap(),
            r#"{"e":{},"q":"é\n","s":"a\"b\\"}"#
        );
    }

    #[test]
    fn top_level_keys_are_reported_with_their_canonical_values() {
        let mut keys = Vec::new();
        let text = r#"{"schema":"olm.package","b":{"y":1,"x":2},"a":[1.0]}"#;
        let canon = from_json_text(text, Some(&mut keys)).unwrap();
        assert_eq!(
            canon,
            r#"{"a":[1],"b":{"x":2,"y":1},"schema":"olm.package"}"#
        );
        assert_eq!(
            keys,
            [
                ("a".to_owned(), "[1]".to_owned()),
                ("b".to_owned(), r#"{"x":2,"y":1}"#.to_owned()),
                ("schema".to_owned(), r#""olm.package""#.to_owned()),
            ]
        );
        let mut from_yaml = Vec::new();
        let v: Value = serde_json::from_str(text).unwrap();
        assert_eq!(from_value(&v, Some(&mut from_yaml)).unwrap(), canon);
        assert_eq!(from_yaml, keys);
    }

    #[test]
    fn nesting_is_limited_to_go_depth_without_recursion() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert_eq!(
            canonicalize_json(&deep(MAX_NESTING_DEPTH)).unwrap(),
            deep(MAX_NESTING_DEPTH)
        );
        let e = from_json_text(&deep(MAX_NESTING_DEPTH + 1), None).unwrap_err();
        assert_eq!(
            (e.offset, e.message.as_str()),
            (MAX_NESTING_DEPTH, "exceeded max depth of 10000")
        );
    }
}
