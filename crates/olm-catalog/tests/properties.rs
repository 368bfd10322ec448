//! Property tests: the loader never panics on arbitrary input, the canonical form is a fixed point,
//! and the YAML writer's output always reads back to the same data.

use olm_catalog::write::{Format, to_string};
use olm_catalog::{load_bytes, load_jsonl};
use proptest::prelude::*;

fn scalar() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i32>().prop_map(|i| serde_json::json!(i)),
        (-1e6f64..1e6).prop_map(|f| serde_json::json!(f)),
        "\\PC{0,40}".prop_map(serde_json::Value::String),
        prop::sample::select(vec![
            "yes",
            "no",
            "on",
            "off",
            "true",
            "null",
            "~",
            "1.0",
            "0x1F",
            "012",
            "1e3",
            "2021-02-21",
            "- a",
            ": b",
            "#c",
            "a #b",
            "it's",
            "\"q\"",
            " lead",
            "trail ",
            "a\nb",
            "a\n",
            "a\n\n",
            "\n",
            "\ta",
            "x: y",
            "{a}",
            "[a]",
            "*a",
            "&a",
            "!a",
            "%a",
            "@a",
            "`a",
            "a\u{2028}b",
            "\u{85}",
            "",
            "---",
            "...",
        ])
        .prop_map(|s| serde_json::Value::String(s.to_owned())),
        "[a-z ]{70,200}".prop_map(serde_json::Value::String),
    ]
}

fn value() -> impl Strategy<Value = serde_json::Value> {
    scalar().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::Array),
            prop::collection::btree_map("[a-zA-Z0-9_.-]{1,12}", inner, 0..5)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn loader_never_panics(data in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = load_bytes(&data, "fuzz");
        let _ = load_jsonl(&data[..], "fuzz");
    }

    #[test]
    fn loader_never_panics_on_yamlish_text(text in "([a-z{}\\[\\]:,#'\"|>&*!-]| |\n|---\n){0,200}") {
        let _ = load_bytes(text.as_bytes(), "fuzz");
    }

    /// A custom blob written as YAML and as JSON reads back to the same canonical blob.
    #[test]
    fn custom_blobs_round_trip(v in prop::collection::btree_map("[a-z0-9_.-]{1,12}", value(), 0..6)) {
        // Top-level keys differing only in case are rejected by design; keep them lowercase.
        let mut obj: serde_json::Map<String, serde_json::Value> = v.into_iter().collect();
        obj.insert("schema".into(), "custom.schema".into());
        obj.insert("package".into(), "p".into());
        let text = serde_json::to_string(&serde_json::Value::Object(obj)).unwrap();
        let cat = load_bytes(text.as_bytes(), "in.json").unwrap();
        for fmt in [Format::Yaml, Format::Json] {
            let out = to_string(&cat, fmt);
            let back = load_bytes(out.as_bytes(), "out").unwrap();
            prop_assert_eq!(&back, &cat, "{:?}:\n{}", fmt, out);
        }
        let jsonl = to_string(&cat, Format::Jsonl);
        let back = load_jsonl(jsonl.as_bytes(), "out.jsonl").unwrap();
        prop_assert_eq!(to_string(&back, Format::Jsonl), jsonl);
    }
}
