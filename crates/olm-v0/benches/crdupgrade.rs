//! Checking existing custom resources against an upgraded CRD's schema, as an InstallPlan does
//! before it replaces the CRD: one page of 500 objects (the shell lists 500 at a time) with a
//! schema shaped like real operators' (nested objects, enums, patterns, bounds, lists), and
//! 10,000 objects in all.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use divan::{Bencher, black_box};
use olm_v0::catalog_operator::crdupgrade::check_existing;
use serde_json::{Value, json};

fn main() {
    divan::main();
}

fn schema() -> Value {
    json!({"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {"type": "object", "required": ["replicas", "image"], "properties": {
            "replicas": {"type": "integer", "minimum": 0, "maximum": 100},
            "image": {"type": "string", "pattern": "^[a-z0-9./:-]+$", "maxLength": 255},
            "mode": {"type": "string", "enum": ["fast", "safe", "off"]},
            "resources": {"type": "object", "properties": {
                "limits": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true}}}},
            "ports": {"type": "array", "maxItems": 16, "items": {"type": "object", "required": ["port"],
                "properties": {"name": {"type": "string"}, "port": {"type": "integer", "minimum": 1, "maximum": 65535}}}}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
}

fn objects(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": format!("w-{i}"), "namespace": "ns"},
                "spec": {"replicas": i % 100, "image": format!("quay.io/example/widget:v{i}"), "mode": "safe",
                    "resources": {"limits": {"cpu": "500m", "memory": 1024}},
                    "ports": [{"name": "http", "port": 8080}, {"name": "metrics", "port": 9090}]},
                "status": {"ready": true}})
        })
        .collect()
}

#[divan::bench(args = [500, 10_000])]
fn valid_objects(bencher: Bencher, n: usize) {
    let schema = schema();
    let objects = objects(n);
    bencher.bench(|| {
        for page in objects.chunks(500) {
            check_existing(black_box(&schema), black_box(page)).unwrap();
        }
    });
}
