//! The one YAML reader, held to three references:
//!
//! - its own full parser: wherever the line-based fast path accepts a text (every data file, and
//!   texts generated from YAML fragments), it gives exactly the full parser's values, both as
//!   JSON values and as canonical JSON text;
//! - serde-saphyr with YAML 1.1 octals, an independent parser: the same values on every data file;
//! - the workspace's own writer: whatever `olm_goenc::yaml::to_yaml` writes reads back equal.

use std::path::{Path, PathBuf};

use olm_goenc::yamlread::{
    self, Canonical, DuplicateKeys, Options, document_canonical, fast_values, full_values,
    parse_documents,
};
use proptest::prelude::*;
use serde_json::{Value, json};

const LAST_WINS: Options = Options {
    duplicate_keys: DuplicateKeys::LastWins,
};
const REFUSE: Options = Options {
    duplicate_keys: DuplicateKeys::Error,
};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(p);
        }
    }
}

/// Canonical JSON of a value, as the catalog reader must produce it: keys sorted byte-wise,
/// compact, Go's formatting.
fn canonical_of(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            Value::Object(m) => {
                let mut entries: Vec<_> = m.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                Value::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k.clone(), sorted(v)))
                        .collect(),
                )
            }
            _ => v.clone(),
        }
    }
    let mut out = String::new();
    olm_goenc::json::write_value(&mut out, &sorted(v));
    out
}

/// The canonical reading of one document, whichever path produced it.
fn canonical_doc(doc: &str, opts: &Options) -> Result<Option<String>, yamlread::Error> {
    Ok(match document_canonical(doc, opts)? {
        Canonical::Empty => None,
        Canonical::Text(t, keys) => {
            // Each noted value is the text of that member.
            let v: serde_json::Map<String, Value> = serde_json::from_str(&t).unwrap_or_default();
            assert_eq!(keys.len(), v.len());
            for (k, r) in keys {
                assert_eq!(
                    serde_json::from_str::<Value>(&t[r]).ok().as_ref(),
                    v.get(&k)
                );
            }
            Some(t)
        }
        Canonical::Value(v) => Some(canonical_of(&v)),
        Canonical::Values(vs) => Some(vs.iter().map(canonical_of).collect::<Vec<_>>().join("\n")),
    })
}

/// Splits a stream at its `---` lines the way the catalog loader does.
fn documents(text: &str) -> Vec<&str> {
    text.split("\n---")
        .map(|d| d.strip_prefix("---").unwrap_or(d))
        .filter(|d| !d.trim().is_empty())
        .collect()
}

fn saphyr(text: &str) -> Result<Vec<Value>, String> {
    let opts = serde_saphyr::options! { legacy_octal_numbers: true };
    let docs: Vec<Value> =
        serde_saphyr::from_multiple_with_options(text, opts).map_err(|e| e.to_string())?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// Numbers compared by value: serde-saphyr reads `1.0` as a float where go-yaml's rules give a
/// float too, but it may store whole floats as integers.
fn norm(v: &Value) -> Value {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9e15 => Value::from(f as i64),
            _ => v.clone(),
        },
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), norm(v))).collect()),
        _ => v.clone(),
    }
}

/// Bundles and upstream's regression manifests (read as values), catalogs and templates (read
/// as canonical documents): the fast path agrees with the full parser everywhere it is taken, it
/// takes almost all of the bytes, and the full parser agrees with serde-saphyr.
#[test]
fn every_data_file_reads_the_same_on_both_paths_and_as_serde_saphyr() {
    let mut manifests = Vec::new();
    yaml_files(&data().join("bundles"), &mut manifests);
    yaml_files(&data().join("upstream-regression"), &mut manifests);
    let mut catalogs = Vec::new();
    yaml_files(&data().join("catalogs"), &mut catalogs);
    yaml_files(&data().join("templates"), &mut catalogs);
    assert!(manifests.len() > 700, "{} manifest files", manifests.len());
    assert!(catalogs.len() > 30, "{} catalog files", catalogs.len());

    let mut failures = Vec::new();
    let (mut fast_bytes, mut total) = (0, 0);
    for f in manifests.iter().chain(&catalogs) {
        let text = std::fs::read_to_string(f).unwrap();
        let manifest = manifests.contains(f);
        total += if manifest { text.len() } else { 0 };
        let full = full_values(&text, &LAST_WINS);
        if let Some(fast) = fast_values(&text, &LAST_WINS) {
            fast_bytes += if manifest { text.len() } else { 0 };
            if full.as_ref() != Ok(&fast) {
                failures.push(format!(
                    "{}: fast path differs from the full parser",
                    f.display()
                ));
            }
        }
        match (&full, saphyr(&text)) {
            (Ok(a), Ok(b)) => {
                let (a, b): (Vec<Value>, Vec<Value>) =
                    (a.iter().map(norm).collect(), b.iter().map(norm).collect());
                if a != b {
                    failures.push(format!("{}: values differ from serde-saphyr", f.display()));
                }
            }
            (Err(_), Err(_)) => {}
            (a, b) => failures.push(format!(
                "{}: ours {:?} / serde-saphyr {:?}",
                f.display(),
                a.as_ref().err(),
                b.err()
            )),
        }
    }
    let (mut fast_docs, mut docs) = (0, 0);
    for f in &catalogs {
        let text = std::fs::read_to_string(f).unwrap();
        for doc in documents(&text) {
            docs += 1;
            fast_docs += usize::from(fast_values(doc, &REFUSE).is_some());
            let want = full_values(doc, &REFUSE).map(|d| d.iter().map(canonical_of).next());
            if canonical_doc(doc, &REFUSE) != want {
                failures.push(format!("{}: canonical text differs", f.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        fast_bytes * 100 >= total * 93,
        "only {fast_bytes} of {total} manifest bytes took the fast path"
    );
    assert!(
        fast_docs * 100 >= docs * 95,
        "only {fast_docs} of {docs} catalog documents took the fast path"
    );
}

/// Fragments that YAML documents are made of, the awkward ones included.
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
    "|1-",
    "|-2",
    "|+1",
    ">",
    "#c",
    " #c",
    "{}",
    "[]",
    "{a: 1}",
    "1",
    "0x1F",
    "012",
    "0777",
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
    ".inf",
    "-.Inf",
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
    "\"a\"#x",
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
    "a: ",
    "a: 1",
    "1_000",
    "+1",
    "-0b11",
    "0o17",
    "\r",
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6000))]

    /// Whatever the fast path accepts, the full parser accepts with the same values; and the
    /// canonical reading of a document equals the canonical text of the full parser's value.
    #[test]
    fn fast_path_agrees_with_the_full_parser(text in yamlish()) {
        for opts in [LAST_WINS, REFUSE] {
            if let Some(fast) = fast_values(&text, &opts) {
                prop_assert_eq!(Ok(fast), full_values(&text, &opts), "{:?}", text);
            }
        }
        if !text.lines().any(|l| l.starts_with("---") || l.starts_with("...")) {
            let want = full_values(&text, &REFUSE).map(|d| {
                if d.len() > 1 {
                    Some(d.iter().map(canonical_of).collect::<Vec<_>>().join("\n"))
                } else {
                    d.iter().map(canonical_of).next()
                }
            });
            prop_assert_eq!(canonical_doc(&text, &REFUSE), want, "{:?}", text);
        }
    }
}

/// JSON values the writer may be asked to write: every kind, nested, with strings that need
/// quoting, escaping, folding or literal blocks.
fn any_value() -> impl Strategy<Value = Value> {
    let text = "([\\PC&&[^\u{2028}\u{2029}]]|[\t\n \u{7f}\u{1}\u{85}\u{feff}#:'\"-]){0,40}";
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e12f64..1e12).prop_map(|f| json!(f)),
        text.prop_map(Value::String),
        prop::sample::select(vec![
            "0777",
            "yes",
            "off",
            "~",
            "1e3",
            ".inf",
            "1_000",
            "0x1F",
            "2020-01-01",
            "12:30",
            "-",
            "- a",
            "a: b",
            "a #b",
            "\ta",
            "a\t",
            "\t",
            " a",
            "a ",
            "\n",
            "a\n\nb",
            "\"",
        ])
        .prop_map(|s| Value::String(s.to_owned())),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map("([a-zA-Z0-9_./-]|[ :#\t'\"]){1,12}", inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// What the workspace's writer produces reads back to the same value, as values and as
    /// canonical text (U+2028/U+2029 are left out: line breaks to YAML 1.1, which go-yaml writes).
    #[test]
    fn reader_inverts_the_writer(m in prop::collection::btree_map("[a-zA-Z0-9_.-]{1,12}", any_value(), 0..6)) {
        let v = Value::Object(m.into_iter().collect());
        let y = olm_goenc::yaml::to_yaml(&v);
        let back = parse_documents(&y).unwrap();
        let back = back.into_iter().next().unwrap_or(Value::Object(Default::default()));
        prop_assert_eq!(norm(&back), norm(&v), "{}", y);
        let canon = canonical_doc(&y, &REFUSE).unwrap();
        let empty = v.as_object().is_some_and(|m| m.is_empty());
        if !empty {
            prop_assert_eq!(canon, Some(canonical_of(&back)), "{}", y);
        }
    }
}

/// Things the catalog reader got wrong before both readers became one.
#[test]
fn catalog_reading_regressions() {
    // Tabs written by the writer survive a round trip through the canonical reading.
    let v = json!({"schema": "olm.package", "description": "a\tb\t\n\tc\t"});
    let y = olm_goenc::yaml::to_yaml(&v);
    assert_eq!(
        canonical_doc(&y, &REFUSE).unwrap(),
        Some(canonical_of(&v)),
        "{y}"
    );
    // A quoted scalar followed by `#` without a space is invalid YAML.
    assert!(document_canonical("a: \"a\"#x\n", &REFUSE).is_err());
    assert!(parse_documents("a: 'a'#x\n").is_err());
    // YAML 1.1 octal, as go-yaml v2 reads it.
    assert_eq!(
        canonical_doc("a: 0777\n", &REFUSE).unwrap().as_deref(),
        Some(r#"{"a":511}"#)
    );
    // Infinity cannot be JSON.
    assert!(document_canonical("a: .inf\n", &REFUSE).is_err());
    // An escaped space before a line fold is content.
    assert_eq!(
        canonical_doc("a: \"x\\t\n  \\ \"\n", &REFUSE).unwrap(),
        Some(canonical_of(
            &full_values("a: \"x\\t\n  \\ \"\n", &REFUSE).unwrap()[0]
        ))
    );
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
            .message
            .contains("too many aliases")
    );
}

/// Refused repeats name the repeat's line and the first one's; a key after a `<<` merge overrides, it does not repeat.
#[test]
fn duplicate_keys_when_refused() {
    let e = yamlread::parse_documents_with("a: 1\nb: 2\na: 3\n", &REFUSE).unwrap_err();
    assert_eq!(
        (e.line, e.message.as_str()),
        (3, r#"duplicate mapping key "a" (first at line 1)"#)
    );
    let e = document_canonical("x:\n  a: 1\n  a: 2\n", &REFUSE).unwrap_err();
    assert_eq!(
        (e.line, e.message.as_str()),
        (3, r#"duplicate mapping key "a" (first at line 2)"#)
    );
    let e = document_canonical("x: {a: 1, a: 2}\n", &REFUSE).unwrap_err();
    assert_eq!(
        (e.line, e.message.as_str()),
        (1, r#"duplicate mapping key "a""#)
    );
    let v =
        yamlread::parse_documents_with("b: &b {x: 1}\nd:\n  <<: *b\n  x: 2\n", &REFUSE).unwrap();
    assert_eq!(v[0]["d"], json!({"x": 2}));
    assert_eq!(
        canonical_doc("b: 1\na: 2\nb: 3\n", &LAST_WINS)
            .unwrap()
            .as_deref(),
        Some(r#"{"a":2,"b":3}"#)
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
    let deep: String = (0..150).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
    assert!(fast_values(&deep, &LAST_WINS).is_none());
    assert_eq!(parse_documents(&deep), full_values(&deep, &LAST_WINS));
}

/// Catalog documents nest as deep as go-yaml reads (10,000 collections, block and flow together);
/// one more is an error at the collection that crosses the limit.
#[test]
fn catalog_documents_nest_as_deep_as_go_reads() {
    let flow = |n: usize| format!("a: {}1{}\n", "[".repeat(n), "]".repeat(n));
    let block = |n: usize| format!("a:\n{}1\n", "- ".repeat(n));
    for doc in [flow, block] {
        match document_canonical(&doc(9_999), &REFUSE).unwrap() {
            Canonical::Value(v) => {
                // Walked, not printed: printing recurses.
                let (mut depth, mut at) = (0, &v["a"]);
                while let Some(inner) = at.get(0) {
                    (depth, at) = (depth + 1, inner);
                }
                assert_eq!((depth, at), (9_999, &json!(1)));
                olm_goenc::json::drop_value(v);
            }
            other => panic!("{:?}", std::mem::discriminant(&other)),
        }
    }
    let e = document_canonical(&flow(10_000), &REFUSE).unwrap_err();
    assert_eq!(
        (e.line, e.column, e.message.as_str()),
        (1, 4 + 9_999, "exceeded max depth of 10000")
    );
    let e = document_canonical(&block(10_000), &REFUSE).unwrap_err();
    assert_eq!(
        (e.line, e.column, e.message.as_str()),
        (2, 1 + 2 * 9_999, "exceeded max depth of 10000")
    );
    // An alias copies a deep anchor without recursing.
    let aliased = format!("a: &x {}1{}\nb: *x\n", "[".repeat(9_000), "]".repeat(9_000));
    match document_canonical(&aliased, &REFUSE) {
        Ok(Canonical::Value(v)) => olm_goenc::json::drop_value(v),
        other => panic!("{:?}", other.map(|c| std::mem::discriminant(&c))),
    }
}

/// The readers that hand out values keep the parser's own limit: their callers recurse.
#[test]
fn value_readers_keep_the_parsers_nesting_limit() {
    let flow = |n: usize| format!("a: {}1{}\n", "[".repeat(n), "]".repeat(n));
    assert!(parse_documents(&flow(254)).is_ok());
    let e = parse_documents(&flow(256)).unwrap_err();
    assert_eq!(e.message, "recursion limit exceeded");
}
