//! Every real bundle in `shared/data/bundles`: it parses, and it renders (or is refused) exactly
//! as operator-controller's own renderer renders it. The expectation,
//! `tests/golden/data-bundles.txt`, is made by that renderer, not by this crate: see its header
//! line and `tools/oracles/README.md` (remake with `tools/oracles/regen.sh`, check with
//! `tools/oracles/check.sh`).
//!
//! The same bundles, converted to `olm.bundle` blobs, are compared with the blobs the
//! community catalog pipeline published for them (`olm.csv.metadata` form).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use olm_bundle::properties::{ObjectsMode, to_olm_bundle};
use olm_bundle::{Bundle, CertProvider, goyaml, render_bundle};
use serde_json::Value;
use sha2::{Digest, Sha256};

mod oracle;

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

/// The install namespace of every case in the oracle table.
const INSTALL_NS: &str = "operators";

/// One case of `tests/golden/data-bundles.txt`: its header line up to the outcome, and the
/// outcome with one line per rendered object.
struct OracleCase {
    id: String,
    case: Option<String>,
    config: Option<String>,
    want: String,
}

/// Reads the oracle table (see its header and `tools/oracles/README.md`): a case line is
/// `<pkg>/<version> <case> <config JSON or ->: <outcome>` (or `<pkg>/<version>: parse error: …`),
/// followed by indented object lines.
fn oracle_cases(text: &str) -> Vec<OracleCase> {
    let mut out: Vec<OracleCase> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(obj) = line.strip_prefix("  ") {
            let last = out.last_mut().expect("object line before any case");
            last.want.push_str(obj);
            last.want.push('\n');
            continue;
        }
        if let Some((id, outcome)) = line.split_once(": parse error: ") {
            out.push(OracleCase {
                id: id.to_string(),
                case: None,
                config: None,
                want: format!("parse error: {outcome}\n"),
            });
            continue;
        }
        let mut parts = line.splitn(3, ' ');
        let (Some(id), Some(case), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
            panic!("bad oracle line {line:?}");
        };
        // The configuration is compact JSON, which never holds ": ".
        let (config, outcome) = rest.split_once(": ").expect("case line without outcome");
        out.push(OracleCase {
            id: id.to_string(),
            case: Some(case.to_string()),
            config: (config != "-").then(|| config.to_string()),
            want: format!("{outcome}\n"),
        });
    }
    out
}

/// One rendered object as the oracle writes it: kind, `namespace/name` (or `name`) and the first
/// 16 hex digits of the SHA-256 of its YAML.
fn object_line(o: &Value) -> (String, String, String, String) {
    let s = |p: &str| {
        o.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let yaml = goyaml::to_yaml(o);
    let digest: String = Sha256::digest(yaml.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    (
        s("/kind"),
        s("/metadata/namespace"),
        s("/metadata/name"),
        digest,
    )
}

/// What olm gives for one case, in the oracle's form.
fn olm_outcome(dir: &Path, c: &OracleCase) -> String {
    let b = match Bundle::from_dir(dir) {
        Err(e) => return format!("parse error: {e}\n"),
        Ok(b) => b,
    };
    if c.case.is_none() {
        return "parses here\n".into();
    }
    match render_bundle(
        &b,
        INSTALL_NS,
        c.config.as_deref(),
        Some(CertProvider::CertManager),
    ) {
        Err(e) => format!("error: {}\n", e.to_string().replace('\n', " | ")),
        Ok(objs) => {
            // Every object must be writable as YAML and read back to the same value.
            for o in &objs {
                let y = goyaml::to_yaml(o);
                let back = goyaml::parse_documents(&y).unwrap();
                assert_eq!(
                    normalize_numbers(&back[0]),
                    normalize_numbers(o),
                    "{}: YAML round trip",
                    c.id
                );
            }
            let mut lines: Vec<_> = objs.iter().map(object_line).collect();
            lines.sort();
            let mut out = format!("ok, {} objects\n", objs.len());
            for (kind, ns, name, digest) in lines {
                let r = if ns.is_empty() {
                    name
                } else {
                    format!("{ns}/{name}")
                };
                out.push_str(&format!("{kind} {r} {digest}\n"));
            }
            out
        }
    }
}

/// Every real bundle in every install mode, with and without a deploymentConfig, rendered by olm
/// and compared with what operator-controller v1.11.0's own renderer gave for the same input
/// (`tests/golden/data-bundles.txt`, made by `tools/oracles/regen.sh`): the same outcome, the
/// same error text, the same set of objects, each byte for byte (by digest of its YAML).
/// Object order is not compared: upstream's is generator order, olm sorts.
#[test]
fn every_data_bundle_renders_like_operator_controller() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/data-bundles.txt");
    let cases = oracle_cases(&std::fs::read_to_string(&golden).unwrap());
    let dirs: std::collections::BTreeMap<String, PathBuf> = bundle_dirs().into_iter().collect();
    assert!(
        dirs.len() >= 70,
        "expected the 71 data bundles, found {}",
        dirs.len()
    );
    let covered: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    let missing: Vec<&String> = dirs
        .keys()
        .filter(|k| !covered.contains(k.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "bundles without oracle cases (remake the table): {missing:?}"
    );
    assert!(cases.len() >= 4 * 70, "only {} cases", cases.len());
    let results: Vec<(String, String, String)> = cases
        .iter()
        .map(|c| {
            let key = format!("{} {}", c.id, c.case.as_deref().unwrap_or("parse"));
            (key, olm_outcome(&dirs[&c.id], c), c.want.clone())
        })
        .collect();
    oracle::assert_matches(&golden, "data bundles", &results);
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

/// operator-framework/api's CSV and bundle validators on every data bundle, compared with what
/// the validators themselves (v0.45.0, the version operator-controller v1.11.0 pins) found
/// (`tests/golden/api-validation.txt`, made by `tools/oracles/regen.sh`). Findings are compared
/// sorted: the validators' own order is not part of the check.
#[test]
fn api_validators_on_every_data_bundle() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/api-validation.txt");
    let text = std::fs::read_to_string(&golden).unwrap();
    let mut want: Vec<(String, String)> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(finding) = line.strip_prefix("  ") {
            let last = want.last_mut().expect("finding before any bundle");
            last.1.push_str(finding);
            last.1.push('\n');
        } else {
            let id = line.strip_suffix(':').expect("bundle line without ':'");
            want.push((id.to_string(), String::new()));
        }
    }
    let dirs: std::collections::BTreeMap<String, PathBuf> = bundle_dirs().into_iter().collect();
    assert_eq!(want.len(), dirs.len(), "remake the table: bundles changed");
    let results: Vec<(String, String, String)> = want
        .into_iter()
        .map(|(id, want)| {
            let got = match Bundle::from_dir(&dirs[&id]) {
                Err(e) => format!("load error: {e}\n"),
                Ok(b) => {
                    let mut findings: Vec<String> = olm_bundle::apivalidate::validate_bundle(&b)
                        .iter()
                        .map(ToString::to_string)
                        .collect();
                    findings.sort();
                    findings.iter().map(|f| format!("{f}\n")).collect()
                }
            };
            (id, got, want)
        })
        .collect();
    oracle::assert_matches(&golden, "authoring checks", &results);
}
