//! The event-based YAML reader against serde-saphyr on every YAML file of the data set: the
//! same documents, the same values (numbers compared by value), and errors for the same files.

use std::path::{Path, PathBuf};

use olm_bundle::goyaml;
use proptest::prelude::*;
use serde_json::Value;

fn reference(text: &str) -> Result<Vec<Value>, String> {
    let opts = serde_saphyr::options! { legacy_octal_numbers: true };
    let docs: Vec<Value> =
        serde_saphyr::from_multiple_with_options(text, opts).map_err(|e| e.to_string())?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

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

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p
            .extension()
            .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
        {
            out.push(p);
        }
    }
}

#[test]
fn same_values_as_serde_saphyr_on_every_data_file() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    let mut files = Vec::new();
    yaml_files(&data.join("bundles"), &mut files);
    yaml_files(&data.join("upstream-regression"), &mut files);
    files.sort();
    assert!(files.len() > 700, "{} files", files.len());
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        match (goyaml::parse_documents(&text), reference(&text)) {
            (Ok(a), Ok(b)) => {
                let (a, b): (Vec<Value>, Vec<Value>) =
                    (a.iter().map(norm).collect(), b.iter().map(norm).collect());
                if a != b {
                    failures.push(format!("{}: values differ", f.display()));
                }
            }
            (Err(_), Err(_)) => {}
            (a, b) => failures.push(format!(
                "{}: ours {:?} / reference {:?}",
                f.display(),
                a.err(),
                b.err()
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} files differ:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Whatever the writer produces, the reader gives back. (U+2028/U+2029 are left out: they
    /// are line breaks to YAML 1.1 writers like go-yaml but content to YAML 1.2 readers.)
    #[test]
    fn reader_inverts_writer(v in prop::collection::btree_map("[a-zA-Z0-9_.-]{1,12}",
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            any::<bool>().prop_map(Value::Bool),
            "([\\PC&&[^\u{2028}\u{2029}]]|[\t\n ]){0,60}".prop_map(Value::String),
            prop::collection::vec("[\\PC&&[^\u{2028}\u{2029}]]{0,20}".prop_map(Value::String), 0..4).prop_map(Value::Array),
        ], 0..8)) {
        let v = Value::Object(v.into_iter().collect());
        let y = goyaml::to_yaml(&v);
        let back = goyaml::parse_documents(&y).unwrap();
        let back = back.into_iter().next().unwrap_or(Value::Object(Default::default()));
        prop_assert_eq!(back, v, "{}", y);
    }
}
