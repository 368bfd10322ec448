//! Catalog YAML is read as sigs.k8s.io/yaml reads it (go-yaml v2 scalars, then JSON), by the
//! workspace's one reader. Each case here was read differently before the catalog and bundle
//! readers became one.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use olm_catalog::load::load_bytes;
use olm_catalog::write::{Format, to_string};

fn jsonl(yaml: &str) -> String {
    to_string(
        &load_bytes(yaml.as_bytes(), "catalog.yaml").unwrap(),
        Format::Jsonl,
    )
}

/// Text with tabs, written by our own opm-format YAML writer, reads back unchanged — also where
/// the writer folds a long double-quoted line right after an escaped tab.
#[test]
fn tabs_written_by_the_yaml_writer_read_back() {
    let description = "word\t ".repeat(40);
    let yaml = format!(
        "schema: olm.package\nname: foo\ndescription: {}\n",
        serde_json::Value::String(description.clone())
    );
    let cat = load_bytes(yaml.as_bytes(), "catalog.yaml").unwrap();
    let written = to_string(&cat, Format::Yaml);
    let again = load_bytes(written.as_bytes(), "catalog.yaml").unwrap();
    let want = format!(
        r#""description":{}"#,
        serde_json::Value::String(description)
    );
    assert!(
        to_string(&again, Format::Jsonl).contains(&want),
        "{written}"
    );
    assert_eq!(to_string(&again, Format::Yaml), written);
}

/// A `#` straight after a closing quote is not a comment: go-yaml refuses the document.
#[test]
fn a_comment_needs_a_space_before_it() {
    let e = load_bytes(b"schema: custom\nname: \"a\"#x\n", "c.yaml").unwrap_err();
    assert!(e.to_string().contains("c.yaml"), "{e}");
}

/// YAML 1.1 numbers: `0777` is octal, `1_000` an integer, `.inf` cannot be JSON.
#[test]
fn yaml_1_1_numbers() {
    assert_eq!(
        jsonl("schema: custom\nname: x\nmode: 0777\ncount: 1_000\n"),
        "{\"count\":1000,\"mode\":511,\"name\":\"x\",\"schema\":\"custom\"}\n"
    );
    let e = load_bytes(b"schema: custom\nname: x\nlimit: .inf\n", "c.yaml").unwrap_err();
    assert!(
        e.to_string().contains("cannot be represented in JSON"),
        "{e}"
    );
}
