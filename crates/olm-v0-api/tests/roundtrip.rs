//! Real CSVs from published bundles (`../shared/data/bundles/<package>/<version>/manifests/`) read
//! into [`ClusterServiceVersion`] and write back as the same JSON, apart from what neither the API
//! server nor Go keeps: fields the schema does not declare (pruned), and empty strings, lists and
//! maps, `null`s and `false` under `omitempty`. A CSV the types refuse is one the API server
//! refuses too: it lacks a field the CRD requires.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use olm_v0_api::v1alpha1::ClusterServiceVersion;
use serde_json::Value;

fn bundles_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/bundles")
}

/// Every `manifests/*.clusterserviceversion.yaml` under `dir` (`<package>/<version>/manifests/`),
/// sorted.
fn csv_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if d.file_name().is_some_and(|n| n == "manifests")
                && path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(".clusterserviceversion.yaml"))
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `v` without what an `omitempty` field drops when empty: Go writes neither an empty string,
/// list or map, nor `false`, nor `null`, so a document that spells them out reads back without
/// them.
fn without_empty(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), without_empty(v)))
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_empty).collect()),
        other => other.clone(),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) | Value::Bool(true) => false,
    }
}

/// `v` as the API server stores it under `schema`: undeclared fields pruned (`metadata` is the
/// API server's own, and not pruned by the CRD's schema).
fn pruned(v: &Value, schema: &Value) -> Value {
    if schema["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true) {
        return v.clone();
    }
    match v {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            Value::Object(
                map.iter()
                    .filter_map(|(k, v)| {
                        let sub = props.and_then(|p| p.get(k)).or(additional)?;
                        Some((k.clone(), pruned(v, sub)))
                    })
                    .collect(),
            )
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| pruned(i, &schema["items"])).collect())
        }
        other => other.clone(),
    }
}

/// The paths of fields `schema` requires and `v` lacks (or has as `null`).
fn missing_required(v: &Value, schema: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for field in schema["required"].as_array().into_iter().flatten() {
                let field = field.as_str().unwrap_or_default();
                if map.get(field).is_none_or(Value::is_null) {
                    out.push(format!("{path}.{field}"));
                }
            }
            for (k, sub) in schema["properties"].as_object().into_iter().flatten() {
                if let Some(child) = map.get(k) {
                    missing_required(child, sub, &format!("{path}.{k}"), out);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                missing_required(item, &schema["items"], &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The first place `a` and `b` differ, as a path.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let p = format!("{path}.{k}");
                match (x.get(k), y.get(k)) {
                    (Some(l), Some(r)) => {
                        if let Some(d) = first_difference(l, r, &p) {
                            return Some(d);
                        }
                    }
                    (l, r) => return Some(format!("{p}: {} vs {}", brief(l), brief(r))),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (l, r))| first_difference(l, r, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{path}: {} vs {}", brief(Some(a)), brief(Some(b)))),
    }
}

fn brief(v: Option<&Value>) -> String {
    let s = v.map_or_else(|| "(absent)".to_owned(), Value::to_string);
    s.chars().take(120).collect()
}

#[test]
fn published_csvs_read_and_write_back_unchanged() {
    let files = csv_files(&bundles_dir());
    assert!(
        files.len() >= 50,
        "expected the bundles of ../shared/data/bundles, found {} CSVs",
        files.len()
    );
    let crd = olm_v0_api::cluster_service_version().unwrap();
    let schema = &crd.value["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let mut failures = Vec::new();
    let mut refused = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let original: Value = match olm_goenc::yamlread::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{}: not YAML: {e}", path.display()));
                continue;
            }
        };
        let mut missing = Vec::new();
        missing_required(&original, schema, "", &mut missing);
        let csv: ClusterServiceVersion = match serde_json::from_value(original.clone()) {
            Ok(csv) => csv,
            Err(e) if !missing.is_empty() => {
                refused.push(format!("{}: {e} ({})", path.display(), missing.join(", ")));
                continue;
            }
            Err(e) => {
                failures.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        if !missing.is_empty() {
            failures.push(format!(
                "{}: read although the CRD requires {}",
                path.display(),
                missing.join(", ")
            ));
        }
        let mut stored = pruned(&original, schema);
        stored["metadata"] = original["metadata"].clone();
        let mut written = serde_json::to_value(&csv).unwrap();
        // The types always write their own `apiVersion` and `kind`; a few bundles misspell them.
        for v in [&mut stored, &mut written] {
            if let Value::Object(o) = v {
                o.remove("apiVersion");
                o.remove("kind");
            }
        }
        let (want, have) = (without_empty(&stored), without_empty(&written));
        if let Some(d) = first_difference(&want, &have, "") {
            failures.push(format!("{}: {d}", path.display()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The one published CSV the API server refuses too: a CRD description's resource without
    // its plural name.
    assert_eq!(refused.len(), 1, "{}", refused.join("\n"));
    assert!(
        refused[0].contains("etcdoperator.v0.9.4") && refused[0].contains(".resources[0].name"),
        "{}",
        refused[0]
    );
}
