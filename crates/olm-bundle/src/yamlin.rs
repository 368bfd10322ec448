//! Reading YAML into JSON values the way the Kubernetes Go tooling does (go-yaml v2 via
//! `sigs.k8s.io/yaml`): YAML 1.1 plain-scalar resolution (`yes`/`on` are booleans, `0777` is
//! octal, `1_000` is an integer; as keys too, so `y:` becomes `"true"`), timestamps stay strings,
//! map keys become strings, merge keys (`<<`) apply, and a repeated key keeps its last value.
//!
//! Decoding YAML is most of the cost of reading a bundle. Nearly all manifests are plain block
//! YAML, which a line-based fast path (`yamlfast.rs`) reads straight into values; anything it does
//! not handle goes to the full parser, whose values are built straight from granit-parser's
//! events (skipping a generic deserialisation layer makes that about twice as fast). Tests keep
//! the fast path equal to the full parser (on every data manifest and on generated YAML), and the
//! result equal to serde-saphyr's on every data manifest.

use std::collections::HashMap;

use granit_parser::{Event, Parser, ScalarStyle};
use serde_json::{Map, Number, Value};

#[path = "yamlfast.rs"]
mod fast;

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
    },
}

/// Every non-empty document of `text`.
pub fn parse_documents(text: &str) -> Result<Vec<Value>, String> {
    if let Some(docs) = fast::parse_documents(text) {
        return Ok(docs);
    }
    parse_events(text)
}

/// The full parser: every YAML construct, and every error message.
fn parse_events(text: &str) -> Result<Vec<Value>, String> {
    let mut docs = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, Value> = HashMap::new();
    let mut alias_nodes = 0usize;
    let mut root: Option<Value> = None;

    for ev in Parser::new_from_str(text) {
        let (ev, span) = ev.map_err(|e| {
            let m = e.marker();
            format!("line {} column {}: {}", m.line(), m.col() + 1, e.info())
        })?;
        let at = || format!("line {} column {}", span.start.line(), span.start.col() + 1);
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
                    .ok_or_else(|| format!("{}: unknown anchor", at()))?;
                alias_nodes += count_nodes(&v);
                if alias_nodes > MAX_ALIAS_NODES {
                    return Err(format!("{}: document expands too many aliases", at()));
                }
                Some((v, 0))
            }
            Event::Scalar(value, style, anchor, tag) => {
                let tag_suffix = tag.as_ref().and_then(|t| {
                    t.suffix_in_namespace("tag:yaml.org,2002:")
                        .map(|s| s.into_owned())
                });
                let v = scalar(value, style, tag_suffix.as_deref())
                    .map_err(|e| format!("{}: {e}", at()))?;
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
                });
                None
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq { items, anchor }) => Some((Value::Array(items), anchor)),
                _ => return Err(format!("{}: unbalanced sequence", at())),
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map { map, anchor, .. }) => Some((Value::Object(map), anchor)),
                _ => return Err(format!("{}: unbalanced mapping", at())),
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
                ..
            }) => match key.take() {
                None => {
                    *merge_pending = is_merge_key;
                    *key = Some(key_string(value).map_err(|e| format!("{}: {e}", at()))?);
                }
                Some(k) => {
                    if *merge_pending {
                        *merge_pending = false;
                        merge_into(map, value).map_err(|e| format!("{}: {e}", at()))?;
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
    let sources = match value {
        Value::Object(m) => vec![m],
        Value::Array(a) => a
            .into_iter()
            .rev()
            .map(|v| match v {
                Value::Object(m) => Ok(m),
                _ => Err("map merge requires map or sequence of maps as the value".to_string()),
            })
            .collect::<Result<_, _>>()?,
        _ => return Err("map merge requires map or sequence of maps as the value".into()),
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
    match v {
        Value::String(s) => Ok(s),
        Value::Bool(b) => Ok(b.to_string()),
        Value::Null => Ok("null".into()),
        Value::Number(ref n) => Ok(match n.as_f64() {
            Some(f) if n.is_f64() => crate::goyaml::go_format_g(f),
            _ => n.to_string(),
        }),
        _ => Err("mapping keys must be scalars".into()),
    }
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
    resolve_plain(text)
}

/// go-yaml v2's resolution of an untagged plain scalar.
fn resolve_plain(text: std::borrow::Cow<'_, str>) -> Result<Value, String> {
    let s: &str = &text;
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Ok(Value::Bool(true));
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Ok(Value::Bool(false));
        }
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF"
        | "-.inf" | "-.Inf" | "-.INF" => return Err(format!("{s} cannot be represented in JSON")),
        _ => {}
    }
    let first = s.as_bytes()[0];
    if !(first.is_ascii_digit() || first == b'+' || first == b'-' || first == b'.') {
        return Ok(Value::String(text.into_owned()));
    }
    let plain: String = s.chars().filter(|&c| c != '_').collect();
    if let Some(i) = go_parse_int(&plain) {
        return Ok(i);
    }
    if crate::goyaml::is_yaml_float(&plain)
        && let Ok(f) = plain.parse::<f64>()
        && let Some(n) = Number::from_f64(f)
    {
        return Ok(Value::Number(n));
    }
    let (neg, rest) = match plain.strip_prefix("-0b") {
        Some(r) => (true, Some(r)),
        None => (false, plain.strip_prefix("0b")),
    };
    if let Some(r) = rest
        && let Ok(u) = i64::from_str_radix(r, 2)
    {
        return Ok(Value::from(if neg { -u } else { u }));
    }
    Ok(Value::String(text.into_owned()))
}

/// `strconv.ParseInt(s, 0, 64)`, then `ParseUint`.
fn go_parse_int(s: &str) -> Option<Value> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let (digits, radix) =
        if let Some(r) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            (r, 16)
        } else if let Some(r) = body.strip_prefix("0o").or_else(|| body.strip_prefix("0O")) {
            (r, 8)
        } else if let Some(r) = body.strip_prefix("0b").or_else(|| body.strip_prefix("0B")) {
            (r, 2)
        } else if body.len() > 1 && body.starts_with('0') {
            (&body[1..], 8)
        } else {
            (body, 10)
        };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let u = u64::from_str_radix(digits, radix).ok()?;
    if neg {
        if u <= i64::MAX as u64 + 1 {
            return Some(Value::from((u as i128).wrapping_neg() as i64));
        }
        return None;
    }
    if u <= i64::MAX as u64 {
        Some(Value::from(u as i64))
    } else {
        Some(Value::from(u))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const PIECES: &[&str] = &[
        "a:",
        "b: ",
        "k: v",
        "- ",
        "-",
        "x",
        "y z",
        "'q'",
        "'it''s",
        "\"d\\n\"",
        "\"",
        "'",
        "|",
        "|-",
        "|+",
        "|2",
        ">",
        "#c",
        " #c",
        "{}",
        "[]",
        "{a: 1}",
        "1",
        "0x1F",
        "012",
        "1.5",
        "yes",
        "~",
        "---",
        "...",
        "\t",
        ":",
        " ",
        "  ",
        "\\",
        "\u{a0}",
        "&a ",
        "*a",
        "!!str ",
        "<<: ",
        "? ",
        "1e3",
        ".nan",
        "2020-01-01",
        "\"x\\ ",
        "\\t\"",
        "é",
        "%",
        "@",
        "\"a",
        "b\"",
        "'a",
        "b'",
        "-a: ",
        ":x: ",
        "x:y",
        "- a: ",
        "- - ",
        "\\ ",
        "'''",
        "a #b",
        "[a]: ",
        "?a: ",
        "\u{2000}",
        "\u{85}",
        "\"\\x41\"",
        "\"\\",
        "y: ",
        "0: ",
        "1.0: ",
        "~: ",
        "~",
    ];

    fn yamlish() -> impl Strategy<Value = String> {
        prop::collection::vec(
            (
                0usize..5,
                prop::collection::vec(prop::sample::select(PIECES), 0..4),
            ),
            0..8,
        )
        .prop_map(|lines| {
            let mut s = String::new();
            for (indent, parts) in lines {
                s.push_str(&" ".repeat(indent));
                for p in parts {
                    s.push_str(p);
                }
                s.push('\n');
            }
            s
        })
    }

    /// On every data manifest the fast path gives exactly the full parser's values (number
    /// types included), and it takes almost all of the bytes.
    #[test]
    fn fast_path_on_every_data_file() {
        fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
                    out.push(p);
                }
            }
        }
        let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
        let mut files = Vec::new();
        walk(&data.join("bundles"), &mut files);
        walk(&data.join("upstream-regression"), &mut files);
        assert!(files.len() > 700, "{} files", files.len());
        let (mut fast_bytes, mut total) = (0, 0);
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            total += text.len();
            if let Some(v) = fast::parse_documents(&text) {
                fast_bytes += text.len();
                assert_eq!(Ok(v), parse_events(&text), "{}", f.display());
            }
        }
        assert!(
            fast_bytes * 100 >= total * 93,
            "only {fast_bytes} of {total} bytes took the fast path"
        );
    }

    /// Cases where an earlier version of the fast path went wrong.
    #[test]
    fn fast_path_edge_cases() {
        for text in [
            "1<<: - \n",
            "b: \t\n - \n",
            "1<<: 1e3\n - #c\n 1\n",
            "y: 'q'#c\n",
            "y: \"\\\n\n \\t\"\n",
            "a: \"x\\t\n  \\ \"\n",
            "a: \u{2000}\n",
            "k: v\n \t #c\n",
        ] {
            if let Some(fast) = fast::parse_documents(text) {
                assert_eq!(Ok(fast), parse_events(text), "{text:?}");
            }
        }
        let deep: String = (0..150).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
        assert!(fast::parse_documents(&deep).is_none());
        assert_eq!(parse_documents(&deep), parse_events(&deep));
        for s in ["A0®\t  ", "\u{2000}", " x\t\ny ", "a\\b\t\n\n c"] {
            let v = json!({ "k": s });
            assert_eq!(parse_documents(&crate::goyaml::to_yaml(&v)).unwrap()[0], v);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// Whatever the fast path accepts, the full parser accepts with the same values.
        #[test]
        fn fast_path_agrees_with_the_full_parser(text in yamlish()) {
            if let Some(fast) = fast::parse_documents(&text) {
                prop_assert_eq!(Ok(fast), parse_events(&text), "{:?}", text);
            }
        }
    }

    #[test]
    fn yaml_1_1_scalars_like_go() {
        let v = parse_documents(
            "a: yes\nb: on\nc: 0777\nd: 1e3\ne: ~\ng: 0x1F\nh: 1_000\ni: 012\nj: 'yes'\nk: 1.0\nl: 2022-01-01\nm: -0b11\nnn: Off\no: \"1\"\np:\nq: 18446744073709551615\n",
        )
        .unwrap();
        assert_eq!(
            v[0],
            json!({"a": true, "b": true, "c": 511, "d": 1000.0, "e": null, "g": 31, "h": 1000, "i": 10, "j": "yes",
                   "k": 1.0, "l": "2022-01-01", "m": -3, "nn": false, "o": "1", "p": null, "q": 18446744073709551615u64})
        );
    }

    #[test]
    fn anchors_merges_and_errors() {
        let v = parse_documents("base: &b {x: 1, z: 2}\nd:\n  <<: *b\n  z: 3\n").unwrap();
        assert_eq!(v[0]["d"], json!({"x": 1, "z": 3}));
        assert_eq!(parse_documents("a: 1\na: 2\n").unwrap()[0], json!({"a": 2}));
        assert!(parse_documents("a: [1, 2\n").is_err());
        let bomb = "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n";
        assert!(
            parse_documents(bomb)
                .unwrap_err()
                .contains("too many aliases")
        );
    }

    #[test]
    fn documents_and_keys() {
        let v = parse_documents("---\na: 1\n---\n---\n1: x\ntrue: z\nn: w\n").unwrap();
        assert_eq!(
            v,
            vec![
                json!({"a": 1}),
                json!({"1": "x", "true": "z", "false": "w"})
            ]
        );
        assert_eq!(parse_documents("").unwrap(), Vec::<Value>::new());
        assert_eq!(
            parse_documents("b: !!binary aGVsbG8=\n").unwrap()[0],
            json!({"b": "hello"})
        );
    }
}
