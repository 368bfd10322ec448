//! The hand-written schemas and the Rust types describe the same fields: a fully populated object
//! of each kind serializes to JSON whose every field the schema declares, and the schema declares
//! no field the types cannot produce.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use serde_json::{Value, json};

/// Collects every field path of `value` (arrays contribute `[]`).
fn value_paths(value: &Value, prefix: &str, out: &mut BTreeSet<String>, free: &BTreeSet<String>) {
    if free.contains(prefix) {
        return;
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let path = format!("{prefix}.{k}");
                out.insert(path.clone());
                value_paths(v, &path, out, free);
            }
        }
        Value::Array(items) => {
            for item in items {
                value_paths(item, &format!("{prefix}[]"), out, free);
            }
        }
        _ => {}
    }
}

/// Collects every property path of `schema`, and the paths whose content is free-form.
fn schema_paths(
    schema: &Value,
    prefix: &str,
    out: &mut BTreeSet<String>,
    free: &mut BTreeSet<String>,
) {
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&json!(true))
        || schema.get("additionalProperties").is_some()
    {
        free.insert(prefix.to_string());
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            let path = format!("{prefix}.{k}");
            out.insert(path.clone());
            schema_paths(v, &path, out, free);
        }
    }
    if let Some(items) = schema.get("items") {
        schema_paths(items, &format!("{prefix}[]"), out, free);
    }
}

fn condition() -> Value {
    json!({"type": "Ready", "status": "True", "reason": "Ok", "message": "m",
           "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1})
}

fn selector() -> Value {
    json!({"matchLabels": {"a": "b"},
           "matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]})
}

fn check<T: serde::de::DeserializeOwned + serde::Serialize>(crd: olm_api::Crd, full: Value) {
    // Through the type and back: fields the type does not know are dropped here.
    let typed: T = serde_json::from_value(full.clone()).expect("sample deserializes");
    let back = serde_json::to_value(&typed).expect("serializes");
    assert_eq!(back, full, "{}: the type drops or changes fields", crd.name);

    let schema = &crd.value["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let mut declared = BTreeSet::new();
    let mut free = BTreeSet::new();
    schema_paths(schema, "", &mut declared, &mut free);
    let mut produced = BTreeSet::new();
    value_paths(&back, "", &mut produced, &free);
    let metadata: BTreeSet<_> = produced
        .iter()
        .filter(|p| p.starts_with(".metadata."))
        .cloned()
        .collect();
    let produced: BTreeSet<_> = produced.difference(&metadata).cloned().collect();
    let undeclared: Vec<_> = produced.difference(&declared).collect();
    let unproduced: Vec<_> = declared.difference(&produced).collect();
    assert!(
        undeclared.is_empty(),
        "{}: fields missing from the schema: {undeclared:?}",
        crd.name
    );
    assert!(
        unproduced.is_empty(),
        "{}: schema fields the sample lacks: {unproduced:?}",
        crd.name
    );
}

#[test]
fn cluster_catalog() {
    check::<olm_api::ClusterCatalog>(
        olm_api::cluster_catalog_crd(),
        json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
            "metadata": {"name": "c"},
            "spec": {"source": {"type": "Image", "image": {"ref": "r/x:1", "pollIntervalMinutes": 5}},
                     "priority": 3, "availabilityMode": "Unavailable"},
            "status": {"conditions": [condition()],
                       "resolvedSource": {"type": "Image", "image": {"ref": "r/x@sha256:00"}},
                       "urls": {"base": "https://x/catalogs/c"},
                       "lastUnpacked": "2026-01-01T00:00:00Z"}
        }),
    );
}

#[test]
fn cluster_extension() {
    check::<olm_api::ClusterExtension>(
        olm_api::cluster_extension_crd(),
        json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
            "metadata": {"name": "e"},
            "spec": {
                "namespace": "ns", "serviceAccount": {"name": "sa"},
                "source": {"sourceType": "Catalog", "catalog": {
                    "packageName": "p", "version": "1.0.0", "channels": ["stable"],
                    "selector": selector(), "upgradeConstraintPolicy": "SelfCertified"}},
                "install": {"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}},
                "config": {"configType": "Inline", "inline": {"watchNamespace": "x"}},
                "progressDeadlineMinutes": 10
            },
            "status": {
                "conditions": [condition()],
                "install": {"bundle": {"name": "p.v1.0.0", "version": "1.0.0", "release": "2"}},
                "activeRevisions": [{"name": "e-1", "conditions": [condition()]}]
            }
        }),
    );
}

#[test]
fn cluster_object_set() {
    check::<olm_api::ClusterObjectSet>(
        olm_api::cluster_object_set_crd(),
        json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
            "metadata": {"name": "e-1"},
            "spec": {
                "lifecycleState": "Active", "revision": 1, "collisionProtection": "Prevent",
                "progressDeadlineMinutes": 10,
                "phases": [{"name": "deploy", "collisionProtection": "None", "objects": [
                    {"object": {"apiVersion": "v1", "kind": "ConfigMap"}, "collisionProtection": "IfNoController"},
                    {"ref": {"name": "s", "namespace": "n", "key": "k"}}]}],
                "progressionProbes": [{
                    "selector": {"type": "Label", "groupKind": {"group": "apps", "kind": "Deployment"},
                                 "label": selector()},
                    "assertions": [{"type": "ConditionEqual",
                                    "conditionEqual": {"type": "Ready", "status": "True"},
                                    "fieldsEqual": {"fieldA": "a", "fieldB": "b"},
                                    "fieldValue": {"fieldPath": "status.phase", "value": "Bound"}}]
                }]
            },
            "status": {
                "conditions": [condition()],
                "observedPhases": [{"name": "deploy", "digest": "sha256:ab", "completedAt": "2026-01-01T00:00:00Z"}]
            }
        }),
    );
}
