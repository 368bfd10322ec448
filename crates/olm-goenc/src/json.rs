//! Go's `encoding/json`: strings and numbers written byte for byte as `json.Marshal` writes them,
//! compact values, the kind names its decoder reports, and its error texts.
//!
//! Object names (role hashes), canonical catalog blobs and `olm.csv.metadata` values are compared
//! with upstream's bytes, so every crate writes Go JSON through these functions instead of its
//! own copy.

use std::fmt::{self, Write};

use serde_json::{Map, Number, Value};

use crate::swar;

/// Writes `s` as a JSON string the way Go's encoder does with HTML escaping off
/// (`Encoder.SetEscapeHTML(false)`, as operator-registry writes catalogs): `"` and `\` escaped,
/// control characters as `\n`, `\r`, `\t`, `\b`, `\f` or `\u00xx`, and U+2028/U+2029 escaped
/// (Go escapes those two even when HTML escaping is off, for JSONP safety).
pub fn write_str(out: &mut String, s: &str) {
    write_str_opts(out, s, false)
}

/// Like [`write_str`], also escaping `<`, `>` and `&` as `\u003c`, `\u003e`, `\u0026`: what
/// `json.Marshal` and a default `json.Encoder` write.
pub fn write_str_html(out: &mut String, s: &str) {
    write_str_opts(out, s, true)
}

/// Bytes a JSON string cannot hold as they are (or, for 0xE2, might not: U+2028/U+2029 start
/// with it), without and with HTML escaping.
const ATTENTION: [[bool; 256]; 2] = {
    let mut t = [[false; 256]; 2];
    let mut b = 0;
    while b < 256 {
        let special = b < 0x20 || b == b'"' as usize || b == b'\\' as usize || b == 0xE2;
        t[0][b] = special;
        t[1][b] = special || b == b'<' as usize || b == b'>' as usize || b == b'&' as usize;
        b += 1;
    }
    t
};

/// Whether any of the eight bytes of `w` is one of [`ATTENTION`]'s, tested all at once: a byte
/// below 0x20, or equal to one of the special bytes.
fn needs_attention(w: u64, escape_html: bool) -> bool {
    let has = |b: u8| swar::has(w, b);
    swar::has_below(w, 0x20)
        || has(b'"')
        || has(b'\\')
        || has(0xE2)
        || (escape_html && (has(b'<') || has(b'>') || has(b'&')))
}

fn write_str_opts(out: &mut String, s: &str, escape_html: bool) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let attention = &ATTENTION[usize::from(escape_html)];
    out.reserve(s.len() + 2);
    out.push('"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    loop {
        // Runs of ordinary bytes are skipped eight at a time, then one at a time.
        while let Some(word) = swar::word(bytes, i) {
            if needs_attention(word, escape_html) {
                break;
            }
            i += 8;
        }
        while i < bytes.len() && !attention[usize::from(bytes[i])] {
            i += 1;
        }
        let Some(&b) = bytes.get(i) else {
            break;
        };
        let esc: Option<&str> = match b {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            // U+2028 and U+2029 are E2 80 A8 / E2 80 A9 in UTF-8.
            0xE2 => {
                if bytes.get(i + 1) == Some(&0x80) && matches!(bytes.get(i + 2), Some(0xA8 | 0xA9))
                {
                    out.push_str(&s[start..i]);
                    out.push_str(if bytes[i + 2] == 0xA8 {
                        "\\u2028"
                    } else {
                        "\\u2029"
                    });
                    i += 3;
                    start = i;
                } else {
                    i += 1;
                }
                continue;
            }
            _ => None,
        };
        out.push_str(&s[start..i]);
        match esc {
            Some(e) => out.push_str(e),
            None => {
                out.push_str("\\u00");
                out.push(HEX[usize::from(b >> 4)] as char);
                out.push(HEX[usize::from(b & 0xf)] as char);
            }
        }
        i += 1;
        start = i;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// The error Go's encoder returns for a float JSON cannot represent.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("json: unsupported value: {}", go_float_name(*.0))]
pub struct UnsupportedValue(pub f64);

fn go_float_name(f: f64) -> &'static str {
    if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "+Inf"
    } else {
        "-Inf"
    }
}

/// Writes a float as Go's encoder writes a `float64`: shortest round-trip digits, plain notation
/// for 1e-6 ≤ |f| < 1e21 (and zero), otherwise exponent form like `1e+21` or `1e-7`.
///
/// # Errors
///
/// NaN and infinities, with Go's text (`json: unsupported value: +Inf`).
pub fn write_f64(out: &mut String, f: f64) -> Result<(), UnsupportedValue> {
    if !f.is_finite() {
        return Err(UnsupportedValue(f));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust's `{:e}` gives the shortest digits with a bare exponent (`1.5e21`, `1e-7`). Go writes
        // `1.5e+21` and `1e-07`, then trims the zero after a minus sign (`1e-7`): so only the `+`
        // of a positive exponent needs adding.
        let start = out.len();
        let _ = write!(out, "{f:e}");
        if let Some(e) = out[start..].find('e')
            && !out[start + e + 1..].starts_with('-')
        {
            out.insert(start + e + 1, '+');
        }
    } else {
        let _ = write!(out, "{f}");
    }
    Ok(())
}

/// Writes an integer as Go writes any `int` type: plain decimal.
pub fn write_i64(out: &mut String, v: i64) {
    let _ = write!(out, "{v}");
}

/// Writes an unsigned integer as Go writes any `uint` type: plain decimal.
pub fn write_u64(out: &mut String, v: u64) {
    let _ = write!(out, "{v}");
}

/// Writes an integer as Go writes it back after decoding it into `interface{}`, where every JSON
/// number becomes a `float64`: exact up to 2^53, rounded to the nearest float above (operator-registry
/// stores every catalog blob that way).
pub fn write_i64_through_float64(out: &mut String, v: i64) {
    if v.unsigned_abs() <= FLOAT64_EXACT {
        write_i64(out, v);
    } else {
        // Every i64 is finite and below 1e21 as a float, so this is plain notation and cannot fail.
        let _ = write_f64(out, v as f64);
    }
}

/// [`write_i64_through_float64`] for unsigned integers.
pub fn write_u64_through_float64(out: &mut String, v: u64) {
    if v <= FLOAT64_EXACT {
        write_u64(out, v);
    } else {
        let _ = write_f64(out, v as f64);
    }
}

/// Integers up to this magnitude survive a `float64` unchanged.
const FLOAT64_EXACT: u64 = 1 << 53;

/// Writes a decoded JSON number as Go writes it: integers as decimals, others as [`write_f64`].
///
/// A `serde_json::Number` is always finite, so no error is possible.
pub fn write_number(out: &mut String, n: &Number) {
    if let Some(i) = n.as_i64() {
        write_i64(out, i);
    } else if let Some(u) = n.as_u64() {
        write_u64(out, u);
    } else if let Some(f) = n.as_f64() {
        let _ = write_f64(out, f);
    }
}

/// Writes `v` compactly as Go's encoder writes it with HTML escaping off, objects in their own key
/// order (the order of a Go struct's fields when the caller built it so).
pub fn write_value(out: &mut String, v: &Value) {
    write_value_opts(out, v, false)
}

/// Like [`write_value`], with Go's default HTML escaping of `<`, `>` and `&` in strings and keys.
pub fn write_value_html(out: &mut String, v: &Value) {
    write_value_opts(out, v, true)
}

fn write_value_opts(out: &mut String, v: &Value, html: bool) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str_opts(out, s, html),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value_opts(out, x, html);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str_opts(out, k, html);
                out.push(':');
                write_value_opts(out, x, html);
            }
            out.push('}');
        }
    }
}

/// Whether Go's `omitempty` leaves out a field holding `v` once decoded into an interface:
/// `null`, `false`, `0`, an empty string, array or object.
pub fn omitted_when_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
    }
}

/// `v` with every object's keys in the order Go's encoder writes a `map[string]interface{}`:
/// sorted byte-wise. What a value decoded from YAML or JSON into an untyped map looks like when
/// Go writes it back, so [`write_value`] of the result gives Go's bytes.
pub fn sort_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sort_keys(&m[k.as_str()])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}

/// How deep Go's decoders let values nest, the document's own top level counting as the first
/// level: `encoding/json` refuses the array or object that would open level 10,001
/// (`maxNestingDepth`), and go-yaml, under sigs.k8s.io/yaml, stops YAML at the same depth.
/// operator-registry reads catalogs through both, so a catalog may nest this deep.
pub const MAX_NESTING_DEPTH: usize = 10_000;

/// The error for a value nested deeper than [`MAX_NESTING_DEPTH`], in go-yaml's words: it names
/// the limit, which `encoding/json`'s `exceeded max depth` does not.
pub fn nesting_too_deep() -> String {
    format!("exceeded max depth of {MAX_NESTING_DEPTH}")
}

/// Drops `v` however deep it nests, without recursion. serde_json's own `Drop` recurses once per
/// level on the caller's stack (measured in a debug build: 10,000 nested arrays need between 0.5
/// and 1 MiB, half of a spawned thread's default stack).
pub fn drop_value(v: Value) {
    let mut todo = vec![v];
    while let Some(v) = todo.pop() {
        match v {
            Value::Array(items) => todo.extend(items),
            Value::Object(map) => todo.extend(map.into_iter().map(|(_, x)| x)),
            _ => {}
        }
    }
}

/// A copy of `v` however deep it nests, made without recursion. serde_json's `Clone` recurses
/// once per level (measured in a debug build: 10,000 nested arrays need between 2 and 4 MiB, more
/// than a spawned thread's default stack).
pub fn clone_value(v: &Value) -> Value {
    /// A collection being copied: what is copied so far, and the rest of the original.
    enum Open<'a> {
        Seq(Vec<Value>, std::slice::Iter<'a, Value>),
        Map(
            Map<String, Value>,
            serde_json::map::Iter<'a>,
            Option<&'a String>,
        ),
    }
    fn open(v: &Value) -> Result<Open<'_>, Value> {
        match v {
            Value::Array(a) => Ok(Open::Seq(Vec::with_capacity(a.len()), a.iter())),
            Value::Object(m) => Ok(Open::Map(Map::with_capacity(m.len()), m.iter(), None)),
            scalar => Err(scalar.clone()),
        }
    }
    let mut stack = match open(v) {
        Ok(root) => vec![root],
        Err(scalar) => return scalar,
    };
    let mut finished: Option<Value> = None;
    while let Some(top) = stack.last_mut() {
        if let Some(done) = finished.take() {
            match top {
                Open::Seq(items, _) => items.push(done),
                Open::Map(map, _, key) => {
                    if let Some(k) = key.take() {
                        map.insert(k.clone(), done);
                    }
                }
            }
        }
        let child = match top {
            Open::Seq(_, rest) => rest.next(),
            Open::Map(_, rest, key) => rest.next().map(|(k, x)| {
                *key = Some(k);
                x
            }),
        };
        match child.map(open) {
            Some(Ok(inner)) => stack.push(inner),
            Some(Err(scalar)) => finished = Some(scalar),
            None => {
                let copy = match stack.pop() {
                    Some(Open::Seq(items, _)) => Value::Array(items),
                    Some(Open::Map(map, ..)) => Value::Object(map),
                    None => Value::Null,
                };
                if stack.is_empty() {
                    return copy;
                }
                finished = Some(copy);
            }
        }
    }
    Value::Null
}

/// The kind of a JSON value as Go's decoder names it in its errors (`cannot unmarshal array …`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool,
    /// Any number.
    Number,
    /// A string.
    String,
    /// An array.
    Array,
    /// An object.
    Object,
}

impl Kind {
    /// The kind of `v`.
    pub fn of(v: &Value) -> Kind {
        match v {
            Value::Null => Kind::Null,
            Value::Bool(_) => Kind::Bool,
            Value::Number(_) => Kind::Number,
            Value::String(_) => Kind::String,
            Value::Array(_) => Kind::Array,
            Value::Object(_) => Kind::Object,
        }
    }

    /// Go's word for the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "bool",
            Kind::Number => "number",
            Kind::String => "string",
            Kind::Array => "array",
            Kind::Object => "object",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Go's `*json.UnmarshalTypeError`: a JSON value of the wrong kind for the Go type it was decoded
/// into. `go_type` is the Go type as `reflect.Type.String()` prints it (`property.Package`,
/// `[]string`, `map[string]interface {}`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnmarshalTypeError {
    /// The value itself had the wrong kind.
    #[error("json: cannot unmarshal {kind} into Go value of type {go_type}")]
    Value {
        /// What the JSON held.
        kind: Kind,
        /// What Go wanted.
        go_type: String,
    },
    /// A field of a struct had the wrong kind; `field` is the JSON path below the struct
    /// (`substitutions.base`).
    #[error(
        "json: cannot unmarshal {kind} into Go struct field {go_struct}.{field} of type {go_type}"
    )]
    Field {
        /// What the JSON held.
        kind: Kind,
        /// The struct's unqualified type name (`Package`, `BasicTemplate`).
        go_struct: String,
        /// The field's JSON name path.
        field: String,
        /// The field's Go type.
        go_type: String,
    },
}

impl UnmarshalTypeError {
    /// `json: cannot unmarshal <kind> into Go value of type <go_type>`.
    pub fn value(kind: Kind, go_type: impl Into<String>) -> Self {
        UnmarshalTypeError::Value {
            kind,
            go_type: go_type.into(),
        }
    }

    /// `json: cannot unmarshal <kind> into Go struct field <go_struct>.<field> of type <go_type>`.
    pub fn field(
        kind: Kind,
        go_struct: impl Into<String>,
        field: impl Into<String>,
        go_type: impl Into<String>,
    ) -> Self {
        UnmarshalTypeError::Field {
            kind,
            go_struct: go_struct.into(),
            field: field.into(),
            go_type: go_type.into(),
        }
    }
}

/// The key of `m` whose value Go's `encoding/json` stores in a struct field named `name`: the
/// last key equal to it ignoring ASCII case (later keys overwrite earlier ones).
pub fn field_key<'a>(m: &'a Map<String, Value>, name: &str) -> Option<&'a String> {
    m.keys().rfind(|k| k.eq_ignore_ascii_case(name))
}

/// The value of [`field_key`].
pub fn field<'a>(m: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    m.get(field_key(m, name)?)
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_last_case_insensitive_key_wins() {
        let v: Value =
            serde_json::from_str(r#"{"Schema":"a","schema":"b","SCHEMA":"c","x":"d"}"#).unwrap();
        let m = v.as_object().unwrap();
        assert_eq!(field(m, "schema"), Some(&Value::String("c".into())));
        assert_eq!(field_key(m, "schema").map(String::as_str), Some("SCHEMA"));
        assert_eq!(field(m, "y"), None);
    }
    use super::*;
    use serde_json::json;

    fn f64_text(f: f64) -> String {
        let mut s = String::new();
        write_f64(&mut s, f).unwrap();
        s
    }

    /// Expected texts are what Go's `json.Marshal(float64)` prints (its `floatEncoder`).
    #[test]
    fn floats_as_go_writes_them() {
        let cases = [
            (1.0, "1"),
            (1.5, "1.5"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (1e100, "1e+100"),
            (1e20, "100000000000000000000"),
            (1e-7, "1e-7"),
            (1e-10, "1e-10"),
            (-2.5e-300, "-2.5e-300"),
            (0.000001, "0.000001"),
            (0.0, "0"),
            (-0.0, "-0"),
            (123456789012345678901.0, "123456789012345680000"),
            (1.2345678901234568e22, "1.2345678901234568e+22"),
        ];
        for (f, want) in cases {
            assert_eq!(f64_text(f), want, "{f}");
        }
    }

    #[test]
    fn floats_keep_what_was_written_before() {
        let mut s = "[1,".to_owned();
        write_f64(&mut s, 2e22).unwrap();
        assert_eq!(s, "[1,2e+22");
    }

    #[test]
    fn non_finite_floats_fail_with_gos_text() {
        let mut s = String::new();
        assert_eq!(
            write_f64(&mut s, f64::NAN).unwrap_err().to_string(),
            "json: unsupported value: NaN"
        );
        assert_eq!(
            write_f64(&mut s, f64::INFINITY).unwrap_err().to_string(),
            "json: unsupported value: +Inf"
        );
        assert_eq!(
            write_f64(&mut s, f64::NEG_INFINITY)
                .unwrap_err()
                .to_string(),
            "json: unsupported value: -Inf"
        );
        assert!(s.is_empty());
    }

    #[test]
    fn words_needing_attention_are_found_wherever_the_byte_is() {
        for html in [false, true] {
            for b in 0..=255u8 {
                for at in 0..8 {
                    let mut w = *b"abcdefgh";
                    w[at] = b;
                    assert_eq!(
                        needs_attention(u64::from_le_bytes(w), html),
                        ATTENTION[usize::from(html)][usize::from(b)],
                        "byte {b:#x} at {at}, html {html}"
                    );
                }
            }
        }
    }

    #[test]
    fn strings_escape_like_go() {
        let mut s = String::new();
        write_str(
            &mut s,
            "a\"\\\n\r\t\u{8}\u{c}\u{1}\u{1f}<&>\u{2028}\u{2029}\u{7f}é",
        );
        assert_eq!(
            s,
            r#""a\"\\\n\r\t\b\f\u0001\u001f<&>\u2028\u2029"#.to_owned() + "\u{7f}é\""
        );
        let mut h = String::new();
        write_str_html(&mut h, "<a&b>");
        assert_eq!(h, r#""\u003ca\u0026b\u003e""#);
    }

    #[test]
    fn values_keep_their_order_and_escape_as_asked() {
        let v = json!({"b": "<a&b>", "a": [1, 2.5, null, true, -3, 18446744073709551615u64], "c": "\u{1}\n"});
        let mut plain = String::new();
        write_value(&mut plain, &v);
        assert_eq!(
            plain,
            r#"{"b":"<a&b>","a":[1,2.5,null,true,-3,18446744073709551615],"c":"\u0001\n"}"#
        );
        let mut html = String::new();
        write_value_html(&mut html, &v);
        assert_eq!(
            html,
            r#"{"b":"\u003ca\u0026b\u003e","a":[1,2.5,null,true,-3,18446744073709551615],"c":"\u0001\n"}"#
        );
    }

    #[test]
    fn integers_through_float64_round_like_go() {
        let mut s = String::new();
        for v in [
            9007199254740992i64,
            9007199254740993,
            -9007199254740993,
            i64::MIN,
        ] {
            write_i64_through_float64(&mut s, v);
            s.push(' ');
        }
        write_u64_through_float64(&mut s, u64::MAX);
        assert_eq!(
            s,
            "9007199254740992 9007199254740992 -9007199254740992 -9223372036854776000 18446744073709552000"
        );
    }

    #[test]
    fn keys_sort_as_go_sorts_map_keys() {
        let v = json!({"b": 1, "a": [{"z": 1, "Z": 2, "é": 3}], "B": null});
        let mut s = String::new();
        write_value(&mut s, &sort_keys(&v));
        assert_eq!(s, r#"{"B":null,"a":[{"Z":2,"z":1,"é":3}],"b":1}"#);
    }

    #[test]
    fn unmarshal_type_errors_read_as_gos() {
        assert_eq!(
            UnmarshalTypeError::value(Kind::of(&json!("x")), "property.Package").to_string(),
            "json: cannot unmarshal string into Go value of type property.Package"
        );
        assert_eq!(
            UnmarshalTypeError::field(Kind::Number, "Package", "packageName", "string").to_string(),
            "json: cannot unmarshal number into Go struct field Package.packageName of type string"
        );
        let kinds: Vec<&str> = [
            json!(null),
            json!(true),
            json!(1),
            json!(""),
            json!([]),
            json!({}),
        ]
        .iter()
        .map(|v| Kind::of(v).as_str())
        .collect();
        assert_eq!(
            kinds,
            ["null", "bool", "number", "string", "array", "object"]
        );
    }

    #[test]
    fn clone_value_copies_exactly() {
        let v = json!({"b": [1, {"z": null, "a": [true, "x", 2.5]}, []], "a": {}, "c": -3});
        let c = clone_value(&v);
        assert_eq!(c, v);
        // Key order (insertion order) is kept too.
        assert_eq!(c.to_string(), v.to_string());
        assert_eq!(clone_value(&json!(7)), json!(7));
    }

    /// Far deeper than any stack would take by recursion, on a thread with a small stack.
    #[test]
    fn deep_values_copy_and_drop_without_recursion() {
        let run = std::thread::Builder::new()
            .stack_size(128 << 10)
            .spawn(|| {
                let mut v = json!(1);
                for i in 0..100_000 {
                    v = if i % 2 == 0 {
                        Value::Array(vec![v, json!(i)])
                    } else {
                        // (`json!` would serialise `v`, recursively.)
                        Value::Object(Map::from_iter([
                            ("k".to_owned(), v),
                            ("i".to_owned(), json!(i)),
                        ]))
                    };
                }
                let c = clone_value(&v);
                let mut depth = 0;
                let mut at = &c;
                while let Some(inner) = at.get(0).or_else(|| at.get("k")) {
                    at = inner;
                    depth += 1;
                }
                assert_eq!(depth, 100_000);
                drop_value(c);
                drop_value(v);
            })
            .unwrap();
        run.join().unwrap();
    }
}
