//! Every real catalog in the shared data validates clean and round-trips through every writer.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use olm_catalog::write::{Format, to_string};
use olm_catalog::{load_bytes, load_jsonl, load_path, validate};

fn data_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/catalogs")
}

fn catalog_files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for cat in std::fs::read_dir(data_root()).expect("shared data present") {
        let cat = cat.unwrap().path();
        for pkg in std::fs::read_dir(&cat).unwrap() {
            let f = pkg.unwrap().path().join("catalog.yaml");
            if f.exists() {
                out.push(f);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn real_catalogs_validate_clean() {
    for dir in std::fs::read_dir(data_root()).unwrap() {
        let dir = dir.unwrap().path();
        let cat = load_path(&dir).unwrap();
        validate(&cat).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert!(cat.bundles().count() > 700);
    }
}

/// The pipeline wrote these files with `opm`'s YAML writer, so re-rendering must give the same bytes.
#[test]
fn yaml_writer_is_byte_identical_to_opm_output() {
    let mut failures = Vec::new();
    for f in catalog_files() {
        let text = std::fs::read_to_string(&f).unwrap();
        let cat = load_bytes(text.as_bytes(), &f.display().to_string()).unwrap();
        let out = to_string(&cat, Format::Yaml);
        if out != text {
            let line = out
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            failures.push(format!(
                "{}: first difference at line {}:\n  ours:  {:?}\n  opm:   {:?}",
                f.display(),
                line + 1,
                out.lines().nth(line),
                text.lines().nth(line)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} files differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn round_trips_through_json_yaml_and_jsonl() {
    for dir in std::fs::read_dir(data_root()).unwrap() {
        let dir = dir.unwrap().path();
        let mut cat = load_path(&dir).unwrap();
        let jsonl = to_string(&cat, Format::Jsonl);
        let from_jsonl = load_jsonl(jsonl.as_bytes(), "catalog.jsonl").unwrap();
        assert_eq!(from_jsonl, cat, "JSONL round trip");
        assert_eq!(
            to_string(&from_jsonl, Format::Jsonl),
            jsonl,
            "JSONL is stable"
        );
        for fmt in [Format::Json, Format::Yaml] {
            let text = to_string(&cat, fmt);
            let mut back = load_bytes(text.as_bytes(), "rendered").unwrap();
            let mut orig = cat.clone();
            // Writers regroup blobs; compare in writer order.
            orig.blobs = olm_catalog::write::ordered(&orig)
                .into_iter()
                .cloned()
                .collect();
            back.forget_raw();
            orig.forget_raw();
            assert_eq!(back, orig, "{fmt:?} round trip");
        }
        cat.forget_raw();
        assert_eq!(
            to_string(&cat, Format::Jsonl),
            jsonl,
            "JSONL from typed fields equals the loaded canonical blobs"
        );
    }
}
