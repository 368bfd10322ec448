//! The full parser: every YAML construct and every error message, from granit-parser's events
//! straight into JSON values (skipping a generic deserialisation layer makes it about twice as
//! fast as going through serde).

use std::collections::HashMap;

use granit_parser::{Event, Parser, ScalarStyle, Span};
use serde_json::{Map, Value};

use super::scalar::{Scalar, resolve_plain};
use super::{DuplicateKeys, Error, Options};
use crate::json::{clone_value, drop_value, nesting_too_deep};

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
        /// Keys written in this mapping (not merged into it) and the line of each, kept only
        /// when duplicates are refused: a key after a `<<` merge overrides, it does not repeat.
        written: Option<std::collections::HashMap<String, usize>>,
    },
}

fn at(span: &Span, message: impl Into<String>) -> Error {
    Error {
        line: span.start.line(),
        column: span.start.col() + 1,
        message: message.into(),
    }
}

/// How deep collections may nest.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Depth {
    /// granit-parser's own limits: 255 block and 255 flow collections, each failing with
    /// `recursion limit exceeded`. For callers that walk the values recursively.
    Parser,
    /// At most this many collections, block and flow together, the top level counting as the
    /// first; failing with [`nesting_too_deep`] at the collection that would go deeper.
    Max(usize),
}

/// Everything a parse holds, given back level by level ([`drop_value`]) on every way out: an
/// error half-way through a deep document must not overflow the stack while unwinding.
#[derive(Default)]
struct Held {
    docs: Vec<Value>,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Value>,
    root: Option<Value>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.docs.drain(..).for_each(drop_value);
        self.anchors.drain().for_each(|(_, v)| drop_value(v));
        self.root.take().into_iter().for_each(drop_value);
        for frame in self.stack.drain(..) {
            match frame {
                Frame::Seq { items, .. } => items.into_iter().for_each(drop_value),
                Frame::Map { map, .. } => map.into_iter().for_each(|(_, v)| drop_value(v)),
            }
        }
    }
}

/// Every non-null document of `text`.
pub(crate) fn parse_events(text: &str, opts: &Options, depth: Depth) -> Result<Vec<Value>, Error> {
    let mut held = Held::default();
    let Held {
        docs,
        stack,
        anchors,
        root,
    } = &mut held;
    let mut alias_nodes = 0usize;
    let parser = match depth {
        Depth::Parser => Parser::new_from_str(text),
        // The parser counts block and flow nesting apart; its limits are set past ours so that
        // the error is ours, naming the limit, wherever the two are mixed.
        Depth::Max(max) => Parser::new_from_str_with_options(
            text,
            granit_parser::options! {
                flow_nesting_limit: max.saturating_add(1),
                block_nesting_limit: max.saturating_add(1),
            },
        ),
    };
    let max_depth = match depth {
        Depth::Parser => usize::MAX,
        Depth::Max(max) => max,
    };

    for ev in parser {
        let (ev, span) = ev.map_err(|e| {
            let m = e.marker();
            Error {
                line: super::problem::line_of(&e, text),
                column: m.col() + 1,
                message: super::problem::go_yaml_problem(&e, text),
            }
        })?;
        // Only a plain `<<` is a merge key; a quoted one is an ordinary key.
        let is_merge_key =
            matches!(&ev, Event::Scalar(v, ScalarStyle::Plain, _, None) if v == "<<");
        let completed: Option<(Value, usize)> = match ev {
            Event::StreamStart | Event::StreamEnd => None,
            Event::DocumentStart(..) => {
                anchors.drain().for_each(|(_, v)| drop_value(v));
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
                    .ok_or_else(|| at(&span, "unknown anchor"))?;
                alias_nodes += count_nodes(v);
                if alias_nodes > MAX_ALIAS_NODES {
                    return Err(at(&span, "document expands too many aliases"));
                }
                Some((clone_value(v), 0))
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
                if stack.len() >= max_depth {
                    return Err(at(&span, nesting_too_deep()));
                }
                stack.push(Frame::Seq {
                    items: Vec::new(),
                    anchor,
                });
                None
            }
            Event::MappingStart(_, anchor, _) => {
                if stack.len() >= max_depth {
                    return Err(at(&span, nesting_too_deep()));
                }
                stack.push(Frame::Map {
                    map: Map::new(),
                    key: None,
                    merge_pending: false,
                    anchor,
                    written: (opts.duplicate_keys == DuplicateKeys::Error).then(Default::default),
                });
                None
            }
            // A frame popped in error goes back on the stack, which is given back level by level.
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq { items, anchor }) => Some((Value::Array(items), anchor)),
                other => {
                    stack.extend(other);
                    return Err(at(&span, "unbalanced sequence"));
                }
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map { map, anchor, .. }) => Some((Value::Object(map), anchor)),
                other => {
                    stack.extend(other);
                    return Err(at(&span, "unbalanced mapping"));
                }
            },
            _ => None,
        };
        let Some((value, anchor)) = completed else {
            continue;
        };
        if anchor != 0
            && let Some(old) = anchors.insert(anchor, clone_value(&value))
        {
            drop_value(old);
        }
        match stack.last_mut() {
            None => {
                if let Some(old) = root.replace(value) {
                    drop_value(old);
                }
            }
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
                        && let Some(first) = written.insert(k.clone(), span.start.line())
                    {
                        // The location names the repeat's line; the first one's is added
                        // when it is another.
                        let mut message = format!("duplicate mapping key {}", crate::quote(&k));
                        if first != span.start.line() {
                            message.push_str(&format!(" (first at line {first})"));
                        }
                        return Err(at(&span, message));
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
                        if let Some(old) = map.insert(k, value) {
                            drop_value(old);
                        }
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
    Ok(std::mem::take(docs))
}

/// Nodes in `v`, counted without recursion (aliases may name deep values).
fn count_nodes(v: &Value) -> usize {
    let (mut n, mut todo) = (0usize, vec![v]);
    while let Some(v) = todo.pop() {
        n += 1;
        match v {
            Value::Array(a) => todo.extend(a),
            Value::Object(m) => todo.extend(m.values()),
            _ => {}
        }
    }
    n
}

/// `<<: map` or `<<: [maps]`, applied where it appears as go-yaml does: merged keys overwrite
/// keys set before the merge, keys after it overwrite merged ones, and in a list of maps the
/// earlier maps win.
fn merge_into(map: &mut Map<String, Value>, value: Value) -> Result<(), String> {
    const NOT_MAPS: &str = "map merge requires map or sequence of maps as the value";
    let sources = match value {
        Value::Object(m) => vec![m],
        Value::Array(a) if a.iter().all(Value::is_object) => a
            .into_iter()
            .rev()
            .filter_map(|v| match v {
                Value::Object(m) => Some(m),
                _ => None,
            })
            .collect(),
        other => {
            drop_value(other);
            return Err(NOT_MAPS.into());
        }
    };
    for m in sources {
        for (k, v) in m {
            if let Some(old) = map.insert(k, v) {
                drop_value(old);
            }
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
        other => {
            drop_value(other);
            return Err("mapping keys must be scalars".into());
        }
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
