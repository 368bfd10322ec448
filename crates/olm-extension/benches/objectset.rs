//! One ClusterObjectSet reconcile decision at the API's limits: 20 phases of 50 ConfigMaps
//! (1000 objects) with a label-selected probe, first with nothing on the cluster (every object
//! created, phase one only) and then in the steady state (every object observed as written,
//! every phase probed, nothing to write) — the decision made on every watch event.
//!
//! Run: `cargo bench -p olm-extension --bench objectset`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::LazyLock;

use divan::Bencher;
use jiff::Timestamp;
use olm_api::ClusterObjectSet;
use olm_extension::objectset::{Input, ObjectRef, ResolvedPhase, Write, decide};
use serde_json::{Map, Value, json};

fn main() {
    divan::main();
}

struct Fixture {
    cos: ClusterObjectSet,
    phases: Vec<ResolvedPhase>,
    observed: BTreeMap<ObjectRef, Map<String, Value>>,
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let phases: Vec<Value> = (0..20)
        .map(|p| {
            let objects: Vec<Value> = (0..50)
                .map(|o| {
                    json!({"object": {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("cm-{p}-{o}"), "namespace": "bench", "labels": {"tier": "config"}},
                        "data": {"key": "value", "ready": "yes"}}})
                })
                .collect();
            json!({"name": format!("phase-{p}"), "objects": objects})
        })
        .collect();
    let cos: ClusterObjectSet = serde_json::from_value(json!({
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
        "metadata": {"name": "bench-1", "uid": "bench-1", "generation": 1,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"olm.operatorframework.io/owner-name": "bench"}},
        "spec": {"lifecycleState": "Active", "revision": 1, "collisionProtection": "Prevent",
            "progressionProbes": [{"selector": {"type": "Label", "label": {"matchLabels": {"tier": "config"}}},
                "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "data.ready", "value": "yes"}}]}],
            "phases": phases},
    }))
    .unwrap();
    let resolved: Vec<ResolvedPhase> = cos
        .spec
        .phases
        .iter()
        .map(|p| ResolvedPhase {
            name: p.name.clone(),
            objects: p.objects.iter().filter_map(|o| o.object.clone()).collect(),
        })
        .collect();
    // The steady state: every object as the first decision would write it, as the API server
    // returns it.
    let mut observed = BTreeMap::new();
    let mut cos_done = cos.clone();
    loop {
        let d = decide(input(&cos_done, &resolved, &observed));
        if d.writes.is_empty() {
            break;
        }
        for w in d.writes {
            if let Write::Create { target, mut object } = w {
                if let Some(m) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.insert("uid".into(), json!(format!("uid-{}", target.name)));
                    m.insert("resourceVersion".into(), json!("1"));
                }
                observed.insert(target, object);
            }
        }
        cos_done.status = d.status.or(cos_done.status);
    }
    Fixture {
        cos,
        phases: resolved,
        observed,
    }
});

/// No CRD of OLM v0 in view: the usual case.
static NO_V0_OWNERS: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();

fn input<'a>(
    cos: &'a ClusterObjectSet,
    phases: &'a [ResolvedPhase],
    observed: &'a BTreeMap<ObjectRef, Map<String, Value>>,
) -> Input<'a> {
    Input {
        cos,
        resolved: Ok(phases),
        mutable_secrets: &[],
        observed,
        siblings: &[],
        v0_crd_owners: &NO_V0_OWNERS,
        now: Timestamp::from_second(1_767_225_660).unwrap(),
    }
}

#[divan::bench]
fn first_reconcile_1000_objects(b: Bencher) {
    let f = &*FIXTURE;
    let empty = BTreeMap::new();
    b.bench(|| decide(input(&f.cos, &f.phases, &empty)));
}

#[divan::bench]
fn steady_state_1000_objects(b: Bencher) {
    let f = &*FIXTURE;
    assert_eq!(f.observed.len(), 1000);
    b.bench(|| {
        let d = decide(input(&f.cos, &f.phases, &f.observed));
        assert!(d.writes.is_empty());
        d
    });
}
