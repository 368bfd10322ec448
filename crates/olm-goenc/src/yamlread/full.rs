//! The full parser: every YAML construct and every error message, from granit-parser's events
//! straight into JSON values (skipping a generic deserialisation layer makes it about twice as
//! fast as going through serde).

use std::collections::HashMap;

use granit_parser::{Event, Parser, ScalarStyle, Span};
use serde_json::{Map, Value};

use super::scalar::{Scalar, resolve_plain};
use super::{DuplicateKeys, Error, Options};

/// Upper bound on nodes copied through aliases, so a "billion laughs" document fails instead of
/// exhausting memory.
const MAX_ALIAS_NODES: usize = 1_000_000;

enum Frame {
    Seq {
        items: Vec<Value>,
        anchor: usize,
    },
    Map {
        map: Map<String, Value>,
        key: Option<String>,
        merge_pending: bool,
        anchor: usize,
        /// Keys written in this mapping (not merged into it), kept only when duplicates are
        /// refused: a key after a `<<` merge overrides, it does not repeat.
        written: Option<std::collections::HashSet<String>>,
    },
}

fn at(span: &Span, message: impl Into<String>) -> Error {
    Error {
        line: span.start.line(),
        column: span.start.col() + 1,
        message: message.into(),
    }
}

/// Every non-null document of `text`.
pub(crate) fn parse_events(text: &str, opts: &Options) -> Result<Vec<Value>, Error> {
    let mut docs = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, Value> = HashMap::new();
    let mut alias_nodes = 0usize;
    let mut root: Option<Value> = None;

    for ev in Parser::new_from_str(text) {
        let (ev, span) = ev.map_err(|e| {
            let m = e.marker();
            Error {
                line: m.line(),
                column: m.col() + 1,
                message: e.info().to_string(),
            }
        })?;
        // Only a plain `<<` is a merge key; a quoted one is an ordinary key.
        let is_merge_key =
            matches!(&ev, Event::Scalar(v, ScalarStyle::Plain, _, None) if v == "<<");
        let completed: Option<(Value, usize)> = match ev {
            Event::StreamStart | Event::StreamEnd => None,
            Event::DocumentStart(..) => {
                anchors.clear();
                None
            }
            Event::DocumentEnd => {
                if let Some(v) = root.take()
                    && !v.is_null()
                {
                    docs.push(v);
                }
                None
            }
            Event::Alias(id) => {
                let v = anchors
                    .get(&id)
                    .cloned()
                    .ok_or_else(|| at(&span, "unknown anchor"))?;
                alias_nodes += count_nodes(&v);
                if alias_nodes > MAX_ALIAS_NODES {
                    return Err(at(&span, "document expands too many aliases"));
                }
                Some((v, 0))
            }
            Event::Scalar(value, style, anchor, tag) => {
                let tag_suffix = tag.as_ref().and_then(|t| {
                    t.suffix_in_namespace("tag:yaml.org,2002:")
                        .map(|s| s.into_owned())
                });
                let v = scalar(value, style, tag_suffix.as_deref()).map_err(|e| at(&span, e))?;
                Some((v, anchor))
            }
            Event::SequenceStart(_, anchor, _) => {
                stack.push(Frame::Seq {
                    items: Vec::new(),
                    anchor,
                });
                None
            }
            Event::MappingStart(_, anchor, _) => {
                stack.push(Frame::Map {
                    map: Map::new(),
                    key: None,
                    merge_pending: false,
                    anchor,
                    written: (opts.duplicate_keys == DuplicateKeys::Error).then(Default::default),
                });
                None
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq { items, anchor }) => Some((Value::Array(items), anchor)),
                _ => return Err(at(&span, "unbalanced sequence")),
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map { map, anchor, .. }) => Some((Value::Object(map), anchor)),
                _ => return Err(at(&span, "unbalanced mapping")),
            },
            _ => None,
        };
        let Some((value, anchor)) = completed else {
            continue;
        };
        if anchor != 0 {
            anchors.insert(anchor, value.clone());
        }
        match stack.last_mut() {
            None => root = Some(value),
            Some(Frame::Seq { items, .. }) => items.push(value),
            Some(Frame::Map {
                map,
                key,
                merge_pending,
                written,
                ..
            }) => match key.take() {
                None => {
                    let k = key_string(value).map_err(|e| at(&span, e))?;
                    if let Some(written) = written
                        && !is_merge_key
                        && !written.insert(k.clone())
                    {
                        return Err(at(
                            &span,
                            format!("duplicate mapping key {}", crate::quote(&k)),
                        ));
                    }
                    *merge_pending = is_merge_key;
                    *key = Some(k);
                }
                Some(k) => {
                    if *merge_pending {
                        *merge_pending = false;
                        merge_into(map, value).map_err(|e| at(&span, e))?;
                    } else {
                        // go-yaml's non-strict decoding (what Kubernetes uses): the last
                        // occurrence of a key wins.
                        map.insert(k, value);
                    }
                }
            },
        }
    }
    if let Some(v) = root.take()
        && !v.is_null()
    {
        docs.push(v);
    }
    Ok(docs)
}

fn count_nodes(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(count_nodes).sum::<usize>(),
        Value::Object(m) => 1 + m.values().map(count_nodes).sum::<usize>(),
        _ => 1,
    }
}

/// `<<: map` or `<<: [maps]`, applied where it appears as go-yaml does: merged keys overwrite
/// keys set before the merge, keys after it overwrite merged ones, and in a list of maps the
/// earlier maps win.
fn merge_into(map: &mut Map<String, Value>, value: Value) -> Result<(), String> {
    const NOT_MAPS: &str = "map merge requires map or sequence of maps as the value";
    let sources = match value {
        Value::Object(m) => vec![m],
        Value::Array(a) => a
            .into_iter()
            .rev()
            .map(|v| match v {
                Value::Object(m) => Ok(m),
                _ => Err(NOT_MAPS.to_string()),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(NOT_MAPS.into()),
    };
    for m in sources {
        for (k, v) in m {
            map.insert(k, v);
        }
    }
    Ok(())
}

/// JSON keys are strings; Go formats other scalar keys.
fn key_string(v: Value) -> Result<String, String> {
    let scalar = match v {
        Value::String(s) => return Ok(s),
        Value::Bool(b) => Scalar::Bool(b),
        Value::Null => Scalar::Null,
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Scalar::Int(i)
            } else if let Some(u) = n.as_u64() {
                Scalar::Uint(u)
            } else {
                Scalar::Float(n.as_f64().unwrap_or_default())
            }
        }
        _ => return Err("mapping keys must be scalars".into()),
    };
    Ok(scalar.into_key().into_owned())
}

fn scalar(
    text: std::borrow::Cow<'_, str>,
    style: ScalarStyle,
    core_tag: Option<&str>,
) -> Result<Value, String> {
    match core_tag {
        Some("str") => return Ok(Value::String(text.into_owned())),
        Some("binary") => {
            use base64::Engine;
            let clean: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(clean.as_bytes())
                .map_err(|e| format!("invalid !!binary value: {e}"))?;
            return Ok(Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        }
        _ => {}
    }
    if style != ScalarStyle::Plain && core_tag.is_none() {
        return Ok(Value::String(text.into_owned()));
    }
    resolve_plain(text).map(Scalar::into_value)
}
