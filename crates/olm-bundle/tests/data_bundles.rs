//! Every real bundle in `shared/data/bundles`: it parses, and it either renders or fails with the
//! message operator-controller would give. The outcome table is pinned in
//! `tests/golden/data-bundles.txt` (regenerate with `UPDATE_GOLDEN=1`).
//!
//! The same bundles, converted to `olm.bundle` blobs, are compared with the blobs the
//! community catalog pipeline published for them (`olm.csv.metadata` form).

use std::path::{Path, PathBuf};

use olm_bundle::csv::InstallModeType;
use olm_bundle::properties::{ObjectsMode, to_olm_bundle};
use olm_bundle::{Bundle, CertProvider, goyaml, render_bundle};
use serde_json::Value;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

/// `(package/version, path)` of every bundle directory, sorted.
pub fn bundle_dirs() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for pkg in std::fs::read_dir(data().join("bundles")).unwrap() {
        let pkg = pkg.unwrap().path();
        for ver in std::fs::read_dir(&pkg).unwrap() {
            let ver = ver.unwrap().path();
            if ver.join("manifests").is_dir() {
                let id = format!(
                    "{}/{}",
                    pkg.file_name().unwrap().to_string_lossy(),
                    ver.file_name().unwrap().to_string_lossy()
                );
                out.push((id, ver));
            }
        }
    }
    out.sort();
    out
}

const INSTALL_NS: &str = "operators";

/// A configuration that picks the bundle's preferred mode: all namespaces if it can, else its
/// own namespace, else another single namespace.
fn config_for(b: &Bundle) -> Option<String> {
    if b.csv.supports(&InstallModeType::AllNamespaces) {
        None
    } else if b.csv.supports(&InstallModeType::OwnNamespace) {
        Some(format!("{{\"watchNamespace\": \"{INSTALL_NS}\"}}"))
    } else if b.csv.supports(&InstallModeType::SingleNamespace) {
        Some("{\"watchNamespace\": \"watched\"}".into())
    } else {
        None
    }
}

#[test]
fn every_data_bundle_parses_and_renders_or_fails_like_upstream() {
    let mut table = String::new();
    let dirs = bundle_dirs();
    assert!(
        dirs.len() >= 70,
        "expected the 71 data bundles, found {}",
        dirs.len()
    );
    for (id, dir) in &dirs {
        let line = match Bundle::from_dir(dir) {
            Err(e) => format!("{id}: parse error: {e}"),
            Ok(b) => match render_bundle(
                &b,
                INSTALL_NS,
                config_for(&b).as_deref(),
                Some(CertProvider::CertManager),
            ) {
                Ok(objs) => {
                    // Every object must be writable as YAML and read back to the same value.
                    for o in &objs {
                        let y = goyaml::to_yaml(o);
                        let back = goyaml::parse_documents(&y).unwrap();
                        assert_eq!(
                            normalize_numbers(&back[0]),
                            normalize_numbers(o),
                            "{id}: YAML round trip"
                        );
                    }
                    format!("{id}: ok, {} objects", objs.len())
                }
                Err(e) => format!("{id}: error: {}", e.to_string().replace('\n', " | ")),
            },
        };
        table.push_str(&line);
        table.push('\n');
    }
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/data-bundles.txt");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, &table).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap_or_default();
    assert_eq!(
        table, want,
        "outcome table changed (UPDATE_GOLDEN=1 to accept)"
    );
}

/// Integral floats print as integers, as they do after Go's JSON round trip.
fn normalize_numbers(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.fract() == 0.0 && f.abs() < 1e15 {
                Value::from(f as i64)
            } else {
                v.clone()
            }
        }
        Value::Array(a) => Value::Array(a.iter().map(normalize_numbers).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), normalize_numbers(v)))
                .collect(),
        ),
        _ => v.clone(),
    }
}

/// The published `olm.bundle` blobs, keyed by bundle name.
fn published_bundles() -> std::collections::BTreeMap<String, Value> {
    let mut out = std::collections::BTreeMap::new();
    let mut files = Vec::new();
    for root in ["catalogs/community-v4.21", "templates"] {
        for pkg in std::fs::read_dir(data().join(root)).unwrap() {
            for f in std::fs::read_dir(pkg.unwrap().path()).unwrap() {
                let p = f.unwrap().path();
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                if name == "catalog.yaml" || name.starts_with("catalog-v4") {
                    files.push(p);
                }
            }
        }
    }
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for doc in goyaml::parse_documents(&text).unwrap() {
            if doc.get("schema").and_then(Value::as_str) == Some("olm.bundle") {
                let name = doc
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                out.entry(name).or_insert(doc);
            }
        }
    }
    out
}

#[test]
fn olm_bundle_blobs_match_the_published_catalog() {
    let published = published_bundles();
    let mut compared = 0;
    let mut failures = Vec::new();
    for (id, dir) in bundle_dirs() {
        let b = Bundle::from_dir(&dir).unwrap();
        let Some(want) = published.get(b.csv.name()) else {
            continue;
        };
        let image = want.get("image").and_then(Value::as_str).unwrap_or("");
        let mut got = match to_olm_bundle(&b, image, ObjectsMode::CsvMetadata) {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!("{id}: {e}"));
                continue;
            }
        };
        if let Some(m) = got.as_object_mut() {
            m.remove("schema");
        }
        let mut want = want.clone();
        if let Some(m) = want.as_object_mut() {
            m.remove("schema");
        }
        compared += 1;
        if normalize_numbers(&got) != normalize_numbers(&want) {
            let diff = first_difference(&got, &want, String::new()).unwrap_or_default();
            failures.push(format!("{id}: {diff}"));
        }
    }
    eprintln!(
        "{} of {compared} olm.bundle blobs identical to the published catalog",
        compared - failures.len()
    );
    assert!(
        compared >= 10,
        "only {compared} bundles found in the catalogs"
    );
    assert!(
        failures.is_empty(),
        "{} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn first_difference(a: &Value, b: &Value, path: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => {
                        if let Some(d) = first_difference(p, q, format!("{path}.{k}")) {
                            return Some(d);
                        }
                    }
                    (p, q) => return Some(format!("{path}.{k}: got {p:?}, want {q:?}")),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                if let Some(d) = first_difference(p, q, format!("{path}[{i}]")) {
                    return Some(d);
                }
            }
            (x.len() != y.len()).then(|| format!("{path}: got {} items, want {}", x.len(), y.len()))
        }
        _ => (a != b).then(|| format!("{path}: got {a}, want {b}")),
    }
}

/// operator-framework/api's default bundle checks on every data bundle, pinned in
/// `tests/golden/api-validation.txt` (errors and warnings per bundle).
#[test]
fn api_validators_on_every_data_bundle() {
    let mut table = String::new();
    for (id, dir) in bundle_dirs() {
        let Ok(b) = Bundle::from_dir(&dir) else {
            continue;
        };
        let findings = olm_bundle::apivalidate::validate_bundle(&b);
        table.push_str(&format!("{id}:\n"));
        for f in findings {
            table.push_str(&format!("  {f}\n"));
        }
    }
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/api-validation.txt");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &table).unwrap();
    }
    assert_eq!(
        table,
        std::fs::read_to_string(&golden).unwrap_or_default(),
        "UPDATE_GOLDEN=1 to accept"
    );
}
