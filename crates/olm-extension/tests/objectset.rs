//! ClusterObjectSet decisions, pinned with upstream v1.11.0's vectors from
//! `internal/operator-controller/controllers/clusterobjectset_controller_test.go`,
//! `clusterobjectset_controller_internal_test.go` and `progress_deadline_test.go` (named per
//! case), boxcutter v0.14.0's object engine semantics, and the e2e feature texts.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use olm_api::{ClusterObjectSet, CollisionProtection, ObservedPhase};
use olm_extension::objectset::{
    Decision, Finalizer, Handling, Input, Next, ObjectRef, PhaseDigestError, ResolvedPhase,
    Teardown, Watch, Write, active_siblings, decide, effective_collision_protection, error_backoff,
    hold_rewording, mutable_secrets_message, on_error, previous_revisions, referenced_secrets,
    teardown_object, verify_observed_phases,
};
use olm_extension::phase::digest_resolved;
use serde_json::{Map, Value, json};

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("test object must be a JSON object"),
    }
}

fn at(s: &str) -> Timestamp {
    s.parse().expect("valid timestamp")
}

/// A revision of extension `test-ext` as upstream's `newTestClusterObjectSet` builds it: owner
/// label, bundle-version 1.0.0, generation 1, uid = name.
fn cos(name: &str, revision: i64, phases: Value) -> ClusterObjectSet {
    serde_json::from_value(json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterObjectSet",
        "metadata": {
            "name": name, "uid": name, "generation": 1,
            "creationTimestamp": "2022-01-01T00:00:00Z",
            "labels": {"olm.operatorframework.io/owner-name": "test-ext"},
            "annotations": {"olm.operatorframework.io/bundle-version": "1.0.0"},
        },
        "spec": {"lifecycleState": "Active", "revision": revision, "collisionProtection": "Prevent", "phases": phases},
    }))
    .expect("valid ClusterObjectSet")
}

fn with(mut c: ClusterObjectSet, f: impl FnOnce(&mut Value)) -> ClusterObjectSet {
    let mut v = serde_json::to_value(&c).expect("serialisable");
    f(&mut v);
    c = serde_json::from_value(v).expect("still valid");
    c
}

fn resolved(c: &ClusterObjectSet) -> Vec<ResolvedPhase> {
    c.spec
        .phases
        .iter()
        .map(|p| ResolvedPhase {
            name: p.name.clone(),
            objects: p.objects.iter().filter_map(|o| o.object.clone()).collect(),
        })
        .collect()
}

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}, "data": {"k": "v"}})
}

fn key(o: &Value) -> ObjectRef {
    ObjectRef::of(&obj(o.clone())).expect("object with a name")
}

struct Case {
    cos: ClusterObjectSet,
    observed: BTreeMap<ObjectRef, Map<String, Value>>,
    siblings: Vec<ClusterObjectSet>,
    v0_crd_owners: BTreeMap<String, Vec<(String, String)>>,
    now: Timestamp,
}

impl Case {
    fn new(cos: ClusterObjectSet) -> Case {
        Case {
            cos,
            observed: BTreeMap::new(),
            siblings: Vec::new(),
            v0_crd_owners: BTreeMap::new(),
            now: at("2022-01-01T00:00:30Z"),
        }
    }

    fn observe(mut self, o: Value) -> Case {
        self.observed.insert(key(&o), obj(o));
        self
    }

    fn decide(&self) -> Decision {
        let phases = resolved(&self.cos);
        decide(Input {
            cos: &self.cos,
            resolved: Ok(&phases),
            mutable_secrets: &[],
            observed: &self.observed,
            siblings: &self.siblings,
            v0_crd_owners: &self.v0_crd_owners,
            now: self.now,
        })
    }
}

fn condition<'a>(
    d: &'a Decision,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    d.status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
}

fn assert_condition(d: &Decision, type_: &str, status: &str, reason: &str, message: &str) {
    let c = condition(d, type_).unwrap_or_else(|| panic!("no {type_} condition in {d:#?}"));
    assert_eq!(
        (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
        (status, reason, message),
        "{type_}"
    );
    assert_eq!(c.observed_generation, Some(1));
}

/// An object as the API server returns it once this revision applied it.
fn ours(o: &Value, owner: &str, revision: i64) -> Value {
    let mut o = o.clone();
    let meta = o["metadata"].as_object_mut().expect("metadata");
    meta.insert(
        "uid".into(),
        json!(format!("uid-{}", meta["name"].as_str().unwrap_or(""))),
    );
    meta.insert("resourceVersion".into(), json!("7"));
    meta.insert(
        "labels".into(),
        json!({"olm.operatorframework.io/owner-name": "test-ext", "olm.operatorframework.io/owner-kind": "ClusterExtension", "app.kubernetes.io/managed-by": "olm.operatorframework.io"}),
    );
    meta.insert(
        "annotations".into(),
        json!({"olm.operatorframework.io/revision": revision.to_string()}),
    );
    meta.insert(
        "ownerReferences".into(),
        json!([{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet", "name": owner, "uid": owner, "controller": true, "blockOwnerDeletion": true}]),
    );
    o
}

/// clusterobjectset_controller_internal_test.go `TestComputePhaseDigest` "deterministic for
/// same content": upstream's digest, byte for byte.
#[test]
fn phase_digest_matches_upstream() {
    let objects = vec![obj(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}}),
    )];
    assert_eq!(
        digest_resolved("deploy", &objects),
        "sha256:e159e3f2c46b65df156d02407c44936c0fd7349149a89dadf190d27c67019edc"
    );
    // "different for different phase names", "different order produces different digest".
    assert_ne!(
        digest_resolved("crds", &objects),
        digest_resolved("deploy", &objects)
    );
    let two = |a: &str, b: &str| {
        vec![
            obj(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": a}})),
            obj(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": b}})),
        ]
    };
    assert_ne!(
        digest_resolved("deploy", &two("cm1", "cm2")),
        digest_resolved("deploy", &two("cm2", "cm1"))
    );
    // "empty phase produces valid digest".
    assert!(digest_resolved("empty", &[] as &[Map<String, Value>]).starts_with("sha256:"));
}

fn observed(name: &str, digest: &str) -> ObservedPhase {
    ObservedPhase {
        name: name.into(),
        digest: digest.into(),
        completed_at: None,
    }
}

/// clusterobjectset_controller_internal_test.go `TestVerifyObservedPhases`.
#[test]
fn verify_observed_phases_vectors() {
    // "passes when digests match"
    assert_eq!(
        verify_observed_phases(
            &[observed("deploy", "sha256:abc123")],
            &[observed("deploy", "sha256:abc123")]
        ),
        Ok(())
    );
    // "fails when digest changes"
    let e = verify_observed_phases(
        &[observed("deploy", "sha256:abc123")],
        &[observed("deploy", "sha256:def456")],
    )
    .expect_err("changed");
    assert_eq!(
        e.to_string(),
        "resolved content of 1 phase(s) has changed: phase \"deploy\" (expected digest sha256:abc123, got sha256:def456); a referenced object source may have been deleted and recreated with different content"
    );
    // "reports all mismatched phases"
    let e = verify_observed_phases(
        &[
            observed("deploy", "sha256:aaa"),
            observed("crds", "sha256:bbb"),
            observed("rbac", "sha256:ccc"),
        ],
        &[
            observed("deploy", "sha256:xxx"),
            observed("crds", "sha256:yyy"),
            observed("rbac", "sha256:ccc"),
        ],
    )
    .expect_err("changed")
    .to_string();
    assert!(e.contains("resolved content of 2 phase(s) has changed"));
    assert!(
        e.contains("phase \"deploy\"")
            && e.contains("phase \"crds\"")
            && !e.contains("phase \"rbac\"")
    );
    // "fails when phase count changes"
    assert_eq!(
        verify_observed_phases(
            &[observed("deploy", "sha256:abc123")],
            &[
                observed("deploy", "sha256:abc123"),
                observed("crds", "sha256:def456")
            ]
        ),
        Err(PhaseDigestError::Count {
            expected: 1,
            got: 2
        })
    );
    assert_eq!(
        PhaseDigestError::Count {
            expected: 1,
            got: 2
        }
        .to_string(),
        "number of phases has changed (expected 1 phases, got 2)"
    );
    // "fails with empty stored"
    assert!(
        verify_observed_phases(&[], &[observed("deploy", "x")])
            .expect_err("empty")
            .to_string()
            .contains("unexpectedly empty")
    );
}

/// clusterobjectset_controller_test.go `Test_effectiveCollisionProtection`.
#[test]
fn effective_collision_protection_vectors() {
    use CollisionProtection::{IfNoController as If, None as NoProtection, Prevent};
    let cases = [
        ("all empty defaults to Prevent", None, None, None, Prevent),
        ("spec only", Some(NoProtection), None, None, NoProtection),
        ("phase overrides spec", Some(Prevent), Some(If), None, If),
        (
            "object overrides phase",
            Some(Prevent),
            Some(If),
            Some(NoProtection),
            NoProtection,
        ),
        (
            "object overrides spec",
            Some(NoProtection),
            None,
            Some(Prevent),
            Prevent,
        ),
        ("phase only", None, Some(NoProtection), None, NoProtection),
        ("object only", None, None, Some(If), If),
    ];
    for (name, spec, phase, object, want) in cases {
        assert_eq!(
            effective_collision_protection(spec, phase, object),
            want,
            "{name}"
        );
    }
}

fn names(v: Vec<&ClusterObjectSet>) -> Vec<String> {
    let mut n: Vec<String> = v
        .into_iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    n.sort();
    n
}

/// clusterobjectset_controller_internal_test.go `Test_ClusterObjectSetReconciler_listSiblingRevisions`
/// and `..._listPreviousRevisions`.
#[test]
fn sibling_and_previous_revision_vectors() {
    let rev = |n: i64| {
        cos(
            &format!("rev-{n}"),
            n,
            json!([{"name": "everything", "objects": []}]),
        )
    };
    let all = vec![rev(1), rev(2), rev(3)];
    // "should return all active revisions except self"
    assert_eq!(names(active_siblings(&all[1], &all)), ["rev-1", "rev-3"]);
    // "should exclude archived revisions"
    let archived = vec![
        rev(1),
        with(rev(2), |v| v["spec"]["lifecycleState"] = json!("Archived")),
        rev(3),
    ];
    assert_eq!(names(active_siblings(&archived[2], &archived)), ["rev-1"]);
    // "should exclude deleting revisions"
    let deleting = vec![
        rev(1),
        with(rev(2), |v| {
            v["metadata"]["deletionTimestamp"] = json!("2022-01-01T00:00:00Z");
            v["metadata"]["finalizers"] = json!(["test-finalizer"]);
        }),
        rev(3),
    ];
    assert_eq!(names(active_siblings(&deleting[2], &deleting)), ["rev-1"]);
    // "should only include revisions matching owner label"
    let other = vec![
        rev(1),
        with(rev(2), |v| {
            v["metadata"]["labels"]["olm.operatorframework.io/owner-name"] = json!("test-ext-2")
        }),
        rev(3),
    ];
    assert_eq!(names(active_siblings(&other[2], &other)), ["rev-1"]);
    // "should return empty list when owner label missing"
    let unlabeled = vec![with(rev(1), |v| v["metadata"]["labels"] = json!({}))];
    assert!(active_siblings(&unlabeled[0], &unlabeled).is_empty());
    // "should return only lower-revision active siblings", "should exclude higher-revision siblings"
    assert_eq!(names(previous_revisions(&all[1], &all)), ["rev-1"]);
    assert!(previous_revisions(&all[0], &all).is_empty());
}

/// test/e2e/features/revision.feature "ClusterObjectSet blocks reconciliation when referenced
/// Secret is mutable", and `TestVerifyReferencedSecretsImmutable` "checks secret only once".
#[test]
fn mutable_secrets_block() {
    assert_eq!(
        mutable_secrets_message(&["test-ns/cos-mutable-secret".into()]).as_deref(),
        Some(
            "the following secrets are not immutable (referenced secrets must have immutable set to true): test-ns/cos-mutable-secret"
        )
    );
    assert_eq!(mutable_secrets_message(&[]), None);
    let c = cos(
        "test-ext-1",
        1,
        json!([{"name": "p", "objects": [
            {"ref": {"name": "s", "namespace": "test-ns", "key": "obj"}},
            {"ref": {"name": "s", "namespace": "test-ns", "key": "obj2"}},
            {"ref": {"name": "t", "key": "obj"}}]}]),
    );
    assert_eq!(
        referenced_secrets(&c, "olmv1-system"),
        [
            ("test-ns".to_string(), "s".to_string()),
            ("olmv1-system".to_string(), "t".to_string())
        ]
    );
    let phases = resolved(&c);
    let d = decide(Input {
        cos: &c,
        resolved: Ok(&phases),
        mutable_secrets: &["test-ns/s".to_string()],
        observed: &BTreeMap::new(),
        siblings: &[],
        v0_crd_owners: &BTreeMap::new(),
        now: at("2022-01-01T00:00:00Z"),
    });
    assert_condition(
        &d,
        "Progressing",
        "False",
        "Blocked",
        "the following secrets are not immutable (referenced secrets must have immutable set to true): test-ns/s",
    );
    assert_eq!(d.finalizer, Finalizer::Keep);
    assert!(d.writes.is_empty());
}

/// `Test_ClusterObjectSetReconciler_Reconcile_RevisionReconciliation` "sets teardown finalizer",
/// and the first reconcile of two phases: only the first phase's ConfigMap is written when its
/// Deployment probe in phase two cannot pass yet — phase two waits for phase one.
#[test]
fn first_reconcile_creates_phase_one_and_records_digests() {
    let c = with(
        cos(
            "test-ext-1",
            1,
            json!([{"name": "configuration", "objects": [{"object": cm("a")}]},
                   {"name": "deploy", "objects": [{"object": cm("b")}]}]),
        ),
        |v| {
            v["spec"]["progressionProbes"] = json!([{
                "selector": {"type": "GroupKind", "groupKind": {"group": "", "kind": "ConfigMap"}},
                "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "data.ready", "value": "yes"}}]}]);
        },
    );
    let d = Case::new(c).decide();
    assert_eq!(d.finalizer, Finalizer::Add);
    assert!(matches!(&d.watch, Watch::Ensure(g) if g.len() == 1));
    assert_eq!(d.writes.len(), 1, "phase two waits: {:#?}", d.writes);
    let Write::Create { object, target } = &d.writes[0] else {
        panic!("expected a create, got {:?}", d.writes[0]);
    };
    assert_eq!(target.name, "a");
    assert_eq!(
        object["metadata"]["labels"]["olm.operatorframework.io/owner-name"],
        json!("test-ext")
    );
    assert_eq!(
        object["metadata"]["annotations"]["olm.operatorframework.io/revision"],
        json!("1")
    );
    assert_eq!(
        object["metadata"]["ownerReferences"],
        json!([{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet", "name": "test-ext-1", "uid": "test-ext-1", "controller": true, "blockOwnerDeletion": true}])
    );
    let status = d.status.as_ref().expect("status changes");
    assert_eq!(status.observed_phases.len(), 2);
    assert_condition(
        &d,
        "Available",
        "False",
        "ProbeFailure",
        "Object ConfigMap.v1 ns/a: missing key: \"data.ready\"",
    );
    assert_condition(
        &d,
        "Progressing",
        "True",
        "RollingOut",
        "Revision 1.0.0 is rolling out.",
    );
    assert_eq!(d.next, Next::Done, "no deadline, no requeue");
}

/// "set Available:False:ProbeFailure condition when probe failures are detected": messages of
/// one object joined with " and ".
#[test]
fn probe_failure_messages_join_with_and() {
    let c = with(
        cos(
            "test-ext-1",
            1,
            json!([{"name": "somephase", "objects": [{"object": cm("my-configmap")}]}]),
        ),
        |v| {
            v["spec"]["progressionProbes"] = json!([{
                "selector": {"type": "GroupKind", "groupKind": {"group": "", "kind": "ConfigMap"}},
                "assertions": [
                    {"type": "FieldValue", "fieldValue": {"fieldPath": "data.a", "value": "1"}},
                    {"type": "FieldValue", "fieldValue": {"fieldPath": "data.k", "value": "w"}}]}]);
        },
    );
    let o = ours(&cm("my-configmap"), "test-ext-1", 1);
    let d = Case::new(c).observe(o).decide();
    assert!(d.writes.is_empty(), "idle: {:#?}", d.writes);
    assert_condition(
        &d,
        "Available",
        "False",
        "ProbeFailure",
        "Object ConfigMap.v1 ns/my-configmap: missing key: \"data.a\" and value at key \"data.k\" != \"w\"; expected: \"w\" got: \"v\"",
    );
}

/// A probe whose message changes while its verdict does not is written at most once a
/// pace; the verdict changing is written at once.
#[test]
fn probe_rewordings_are_held_back_but_verdicts_are_not() {
    let probed = |c: ClusterObjectSet| {
        with(c, |v| {
            v["spec"]["progressionProbes"] = json!([{
                "selector": {"type": "GroupKind", "groupKind": {"group": "", "kind": "ConfigMap"}},
                "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "data.a", "value": "1"}}]}]);
        })
    };
    let c = probed(cos(
        "test-ext-1",
        1,
        json!([{"name": "somephase", "objects": [{"object": cm("my-configmap")}]}]),
    ));
    let seen = |data: Value| {
        let mut o = ours(&cm("my-configmap"), "test-ext-1", 1);
        o["data"] = data;
        o
    };
    let first = Case::new(c.clone())
        .observe(seen(json!({"k": "v"})))
        .decide();
    let first = first.status.expect("first status");
    let mut written = c.clone();
    written.status = Some(first.clone());
    assert_eq!(
        hold_rewording(&c, &first, Some(Duration::from_millis(10))),
        None,
        "no status yet: written at once"
    );

    let reworded = Case::new(written.clone())
        .observe(seen(json!({"a": "2"})))
        .decide();
    assert_condition(
        &reworded,
        "Available",
        "False",
        "ProbeFailure",
        "Object ConfigMap.v1 ns/my-configmap: value at key \"data.a\" != \"1\"; expected: \"1\" got: \"2\"",
    );
    let reworded = reworded.status.expect("reworded status");
    assert_eq!(
        hold_rewording(&written, &reworded, Some(Duration::from_millis(300))),
        Some(Duration::from_millis(700))
    );
    assert_eq!(
        hold_rewording(&written, &reworded, Some(Duration::from_secs(1))),
        None
    );
    assert_eq!(
        hold_rewording(&written, &reworded, None),
        None,
        "no write remembered"
    );

    let passed = Case::new(written.clone())
        .observe(seen(json!({"a": "1"})))
        .decide();
    let passed = passed.status.expect("passed status");
    assert_eq!(
        hold_rewording(&written, &passed, Some(Duration::from_millis(10))),
        None,
        "a verdict is never held"
    );
}

/// "set Available:True:ProbesSucceeded and Succeeded:True:Succeeded conditions on successful
/// revision rollout" and "archive previous revisions on successful rollout".
#[test]
fn complete_rollout_succeeds_and_archives_older_revisions() {
    let phases = json!([{"name": "everything", "objects": [{"object": cm("a")}]}]);
    let c = cos("test-ext-3", 3, phases.clone());
    let mut case = Case::new(c).observe(ours(&cm("a"), "test-ext-3", 3));
    case.siblings = vec![
        cos("test-ext-1", 1, phases.clone()),
        cos("test-ext-2", 2, phases.clone()),
        case.cos.clone(),
    ];
    let d = case.decide();
    assert!(d.writes.is_empty());
    assert_eq!(d.archive, ["test-ext-1", "test-ext-2"]);
    assert_condition(
        &d,
        "Available",
        "True",
        "ProbesSucceeded",
        "Objects are available and pass all probes.",
    );
    assert_condition(
        &d,
        "Progressing",
        "True",
        "Succeeded",
        "Revision 1.0.0 has rolled out.",
    );
    assert_condition(
        &d,
        "Succeeded",
        "True",
        "Succeeded",
        "Revision succeeded rolling out.",
    );
    // Deciding again on the written status changes nothing.
    let mut again = case;
    again.cos.status = d.status.clone();
    assert_eq!(again.decide().status, None);
}

/// Drift: a managed object whose data was edited is applied again; one deleted is created again.
#[test]
fn drift_is_put_back() {
    let c = cos(
        "test-ext-1",
        1,
        json!([{"name": "everything", "objects": [{"object": cm("a")}]}]),
    );
    let mut edited = ours(&cm("a"), "test-ext-1", 1);
    edited["data"]["k"] = json!("changed");
    let d = Case::new(c.clone()).observe(edited).decide();
    assert!(
        matches!(&d.writes[..], [Write::Apply { object, .. }] if object["data"]["k"] == json!("v"))
    );
    let d = Case::new(c).decide();
    assert!(matches!(&d.writes[..], [Write::Create { .. }]));
}

/// Writes come in one batch per phase: an edited object of a complete first phase is put back
/// in a batch of its own, before the two creates of the second phase, which share one.
#[test]
fn writes_are_batched_by_phase() {
    let c = cos(
        "test-ext-1",
        1,
        json!([{"name": "configuration", "objects": [{"object": cm("a")}]},
               {"name": "deploy", "objects": [{"object": cm("b")}, {"object": cm("c")}]}]),
    );
    let mut edited = ours(&cm("a"), "test-ext-1", 1);
    edited["data"]["k"] = json!("changed");
    let d = Case::new(c.clone()).observe(edited).decide();
    let batches: Vec<Vec<&str>> = d
        .batches()
        .map(|b| b.iter().map(|w| w.target().name.as_str()).collect())
        .collect();
    assert_eq!(batches, [vec!["a"], vec!["b", "c"]]);
    assert!(matches!(&d.writes[0], Write::Apply { .. }));
    // Nothing to write: no batch at all.
    let d = Case::new(c)
        .observe(ours(&cm("a"), "test-ext-1", 1))
        .observe(ours(&cm("b"), "test-ext-1", 1))
        .observe(ours(&cm("c"), "test-ext-1", 1))
        .decide();
    assert_eq!(d.batches().count(), 0);
}

/// boxcutter object engine, collision protection `Prevent`: an object without our controller is
/// refused, and the message says so in a sentence (upstream prints boxcutter's report ending in
/// `Conflicting Owner: nil`; the heading is upstream's, which its e2e `update.feature` checks).
#[test]
fn prevent_refuses_a_foreign_object() {
    let c = cos(
        "test-ext-1",
        1,
        json!([{"name": "everything", "objects": [{"object": cm("a")}]}]),
    );
    let foreign = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns", "uid": "x"}, "data": {"k": "other"}});
    let d = Case::new(c).observe(foreign).decide();
    assert!(d.writes.is_empty());
    assert_eq!(d.next, Next::RequeueAfter(Duration::from_secs(10)));
    assert_condition(
        &d,
        "Progressing",
        "True",
        "Retrying",
        "revision object collisions in phase 0\nObject ConfigMap.v1 ns/a already exists and belongs to no owner (made outside OLM): delete it, or install somewhere else.",
    );
    assert!(
        condition(&d, "Available").is_none(),
        "Available only turns Unknown once reported"
    );
}

/// OLM v0's objects are never adopted, whatever the collision protection: a CRD an InstallPlan
/// created (only `olm.managed`) and a CSV's ServiceAccount are collisions even with `None`, and
/// the message names the ClusterServiceVersion and what to do.
#[test]
fn olm_v0_objects_are_never_adopted() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "natsclusters.nats.io"}});
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nats-operator", "namespace": "ops"}});
    let mut v0_crd = crd.clone();
    v0_crd["metadata"]["labels"] = json!({"olm.managed": "true"});
    let mut v0_sa = sa.clone();
    v0_sa["metadata"]["ownerReferences"] = json!([{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "name": "nats.v1.0.0", "uid": "u", "controller": false, "blockOwnerDeletion": false}]);
    for protection in ["Prevent", "IfNoController", "None"] {
        let c = with(
            cos(
                "nats-1",
                1,
                json!([{"name": "everything", "objects": [{"object": crd}, {"object": sa}]}]),
            ),
            |v| v["spec"]["collisionProtection"] = json!(protection),
        );
        let mut case = Case::new(c).observe(v0_crd.clone()).observe(v0_sa.clone());
        case.v0_crd_owners.insert(
            "natsclusters.nats.io".into(),
            vec![("ops".into(), "nats.v1.0.0".into())],
        );
        let d = case.decide();
        assert!(d.writes.is_empty(), "{protection}: {:#?}", d.writes);
        assert_condition(
            &d,
            "Progressing",
            "True",
            "Retrying",
            "revision object collisions in phase 0\n\
             Object CustomResourceDefinition.apiextensions.k8s.io/v1 natsclusters.nats.io already exists and belongs to ClusterServiceVersion \"nats.v1.0.0\" in namespace \"ops\" (OLM v0): uninstall the operator from OLM v0 first (delete its Subscription and ClusterServiceVersion).\n\
             Object ServiceAccount.v1 ops/nats-operator already exists and belongs to ClusterServiceVersion \"nats.v1.0.0\" in namespace \"ops\" (OLM v0): uninstall the operator from OLM v0 first (delete its Subscription and ClusterServiceVersion).",
        );
    }
}

/// `olm migrate`: a revision that takes over one CSV's operator adopts that CSV's objects (its
/// CRD by the CSVs listing it, its ServiceAccount by owner reference) and still refuses another
/// CSV's, and a CRD another CSV also owns.
#[test]
fn a_migration_revision_takes_over_its_csvs_objects_only() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "natsclusters.nats.io"}});
    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "nats-operator", "namespace": "ops"}});
    let mut v0_crd = crd.clone();
    v0_crd["metadata"]["labels"] = json!({"olm.managed": "true"});
    let owned_by = |csv: &str| {
        let mut o = sa.clone();
        o["metadata"]["ownerReferences"] = json!([{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "name": csv, "uid": "u", "controller": false, "blockOwnerDeletion": false}]);
        o
    };
    let revision = |takes_over: &str| {
        with(
            cos(
                "nats-1",
                1,
                json!([{"name": "everything", "objects": [{"object": crd}, {"object": sa}]}]),
            ),
            |v| {
                v["metadata"]["annotations"][olm_k8s::MIGRATION_TAKES_OVER_ANNOTATION] =
                    json!(takes_over)
            },
        )
    };
    let decide = |takes_over: &str, sa_owner: &str, crd_owners: Vec<(String, String)>| {
        let mut case = Case::new(revision(takes_over))
            .observe(v0_crd.clone())
            .observe(owned_by(sa_owner));
        case.v0_crd_owners
            .insert("natsclusters.nats.io".into(), crd_owners);
        case.decide()
    };
    let mine = vec![("ops".into(), "nats.v1.0.0".into())];
    let d = decide("ops/nats.v1.0.0", "nats.v1.0.0", mine.clone());
    assert_eq!(d.writes.len(), 2, "{:#?}", d.writes);
    for w in &d.writes {
        let Write::Apply { object, .. } = w else {
            panic!("{w:?}")
        };
        let refs = object["metadata"]["ownerReferences"].as_array().cloned();
        assert!(
            refs.unwrap_or_default()
                .iter()
                .any(|r| r["kind"] == "ClusterObjectSet" && r["controller"] == true),
            "{object:?}"
        );
    }
    // Another CSV's ServiceAccount, and a CRD two CSVs own, stay refused.
    let d = decide(
        "ops/nats.v1.0.0",
        "other.v2",
        vec![
            ("ops".into(), "nats.v1.0.0".into()),
            ("apps".into(), "nats.v1.0.0".into()),
        ],
    );
    assert!(d.writes.is_empty(), "{:#?}", d.writes);
    // The same CSV name in another namespace is another operator.
    let d = decide("apps/nats.v1.0.0", "nats.v1.0.0", mine);
    assert!(d.writes.is_empty(), "{:#?}", d.writes);
}

/// `Test_ClusterObjectSetReconciler_Reconcile_ForeignRevisionCollision` "collision object owned
/// by a foreign COS is detected"; with `None` the object is adopted instead.
#[test]
fn foreign_controller_collides_unless_protection_is_none() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"}});
    let mut existing = crd.clone();
    existing["metadata"]["ownerReferences"] = json!([{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
        "name": "ext-A-2", "uid": "ext-A-2", "controller": true, "blockOwnerDeletion": true}]);
    let c = cos(
        "ext-B-1",
        1,
        json!([{"name": "everything", "objects": [{"object": crd}]}]),
    );
    let d = Case::new(c.clone()).observe(existing.clone()).decide();
    let Some(cond) = condition(&d, "Progressing") else {
        panic!("no Progressing")
    };
    assert_eq!(
        cond.message,
        "revision object collisions in phase 0\nObject CustomResourceDefinition.apiextensions.k8s.io/v1 widgets.example.com already exists and belongs to ClusterExtension \"ext-A\" (OLM v1, revision \"ext-A-2\"): uninstall the ClusterExtension \"ext-A\" first."
    );

    let none = with(c, |v| {
        v["spec"]["phases"][0]["objects"][0]["collisionProtection"] = json!("None")
    });
    let d = Case::new(none).observe(existing).decide();
    let [Write::Apply { object, .. }] = &d.writes[..] else {
        panic!("expected adoption: {:#?}", d.writes)
    };
    assert_eq!(
        object["metadata"]["ownerReferences"],
        json!([
            {"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet", "name": "ext-A-2", "uid": "ext-A-2", "blockOwnerDeletion": true},
            {"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet", "name": "ext-B-1", "uid": "ext-B-1", "controller": true, "blockOwnerDeletion": true}
        ])
    );
    assert_eq!(d.phases[0].objects[0].handling, Handling::Updated);
}

/// `IfNoController` adopts an uncontrolled object unless boxcutter managed it before (orphaned).
#[test]
fn if_no_controller_adopts_uncontrolled_objects_only() {
    let c = with(
        cos(
            "test-ext-1",
            1,
            json!([{"name": "everything", "objects": [{"object": cm("a")}]}]),
        ),
        |v| v["spec"]["collisionProtection"] = json!("IfNoController"),
    );
    let plain = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}});
    assert!(matches!(
        &Case::new(c.clone()).observe(plain.clone()).decide().writes[..],
        [Write::Apply { .. }]
    ));
    let mut orphaned = plain;
    orphaned["metadata"]["annotations"] = json!({"olm.operatorframework.io/revision": "3"});
    let d = Case::new(c).observe(orphaned).decide();
    assert!(d.writes.is_empty());
    assert_eq!(d.next, Next::RequeueAfter(Duration::from_secs(10)));
}

/// "progressed object owned by a sibling COS is not a collision": a newer sibling wrote it, so
/// this revision leaves it alone; an older sibling's object is taken over.
#[test]
fn sibling_handover() {
    let phases = json!([{"name": "everything", "objects": [{"object": cm("a")}]}]);
    let mut case =
        Case::new(cos("test-ext-1", 1, phases.clone())).observe(ours(&cm("a"), "test-ext-2", 2));
    case.siblings = vec![cos("test-ext-2", 2, phases.clone())];
    let d = case.decide();
    assert!(d.writes.is_empty());
    assert_eq!(d.phases[0].objects[0].handling, Handling::Progressed);
    assert_eq!(d.next, Next::Done);

    let mut case =
        Case::new(cos("test-ext-2", 2, phases.clone())).observe(ours(&cm("a"), "test-ext-1", 1));
    case.siblings = vec![cos("test-ext-1", 1, phases)];
    let d = case.decide();
    let [Write::Apply { object, .. }] = &d.writes[..] else {
        panic!("expected adoption")
    };
    assert_eq!(
        object["metadata"]["annotations"]["olm.operatorframework.io/revision"],
        json!("2")
    );
    assert_eq!(
        object["metadata"]["ownerReferences"][1]["name"],
        json!("test-ext-2")
    );
    assert_eq!(
        object["metadata"]["ownerReferences"][0].get("controller"),
        None
    );
}

/// `Test_ClusterObjectSetReconciler_Reconcile_ProgressDeadline`.
#[test]
fn progress_deadline_vectors() {
    let phases = json!([{"name": "everything", "objects": [{"object": cm("a")}]}]);
    let probing = |c: ClusterObjectSet| {
        with(c, |v| {
            v["spec"]["progressDeadlineMinutes"] = json!(1);
            v["spec"]["progressionProbes"] = json!([{
                "selector": {"type": "GroupKind", "groupKind": {"group": "", "kind": "ConfigMap"}},
                "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "data.ready", "value": "yes"}}]}]);
        })
    };
    let c = probing(cos("test-ext-1", 1, phases.clone()));

    // "progressing set to false when progress deadline is exceeded": 61 s after creation.
    let mut case = Case::new(c.clone()).observe(ours(&cm("a"), "test-ext-1", 1));
    case.now = at("2022-01-01T00:01:01Z");
    let d = case.decide();
    assert_condition(
        &d,
        "Progressing",
        "False",
        "ProgressDeadlineExceeded",
        "Revision has not rolled out for 1 minute(s). Last status: Revision 1.0.0 is rolling out.",
    );
    assert_eq!(d.next, Next::Done);

    // "requeue after progressDeadline time for final progression deadline check".
    let mut case = Case::new(c.clone()).observe(ours(&cm("a"), "test-ext-1", 1));
    case.now = at("2022-01-01T00:00:00Z");
    let d = case.decide();
    assert_condition(
        &d,
        "Progressing",
        "True",
        "RollingOut",
        "Revision 1.0.0 is rolling out.",
    );
    assert_eq!(d.next, Next::RequeueAfter(Duration::from_secs(60)));

    // "recovery from ProgressDeadlineExceeded to Succeeded when revision completes".
    let mut ready = ours(&cm("a"), "test-ext-1", 1);
    ready["data"]["ready"] = json!("yes");
    let mut case = Case::new(c.clone()).observe(ready.clone());
    case.now = at("2022-01-01T00:05:00Z");
    let d = case.decide();
    assert_condition(
        &d,
        "Progressing",
        "True",
        "Succeeded",
        "Revision 1.0.0 has rolled out.",
    );

    // "no progression deadline checks on revision recovery": Succeeded is latched.
    let succeeded = with(c, |v| {
        v["status"] = json!({"conditions": [
            {"type": "Progressing", "status": "True", "reason": "Succeeded", "message": "", "observedGeneration": 1, "lastTransitionTime": "2022-01-01T00:00:10Z"},
            {"type": "Succeeded", "status": "True", "reason": "Succeeded", "message": "", "observedGeneration": 1, "lastTransitionTime": "2022-01-01T00:00:10Z"}]});
    });
    let mut case = Case::new(succeeded).observe(ours(&cm("a"), "test-ext-1", 1));
    case.now = at("2022-01-01T00:02:00Z");
    let d = case.decide();
    assert_condition(
        &d,
        "Progressing",
        "True",
        "RollingOut",
        "Revision 1.0.0 is rolling out.",
    );
    assert_eq!(d.next, Next::Done);
}

/// progress_deadline_test.go: the rate limiter caps backoff at the time left, allows one
/// immediate retry past the deadline, and leaves revisions without a deadline alone.
#[test]
fn error_backoff_is_deadline_aware() {
    let c = with(cos("test-ext-1", 1, json!([])), |v| {
        v["spec"]["progressDeadlineMinutes"] = json!(1)
    });
    let b = Duration::from_secs(40);
    assert_eq!(
        error_backoff(&c, at("2022-01-01T00:00:30Z"), b, true),
        Duration::from_secs(30)
    );
    assert_eq!(error_backoff(&c, at("2022-01-01T00:00:10Z"), b, true), b);
    assert_eq!(
        error_backoff(&c, at("2022-01-01T00:02:00Z"), b, true),
        Duration::ZERO
    );
    assert_eq!(error_backoff(&c, at("2022-01-01T00:02:00Z"), b, false), b);
    let none = cos("test-ext-1", 1, json!([]));
    assert_eq!(error_backoff(&none, at("2022-01-01T00:02:00Z"), b, true), b);
}

/// "Available condition is updated to Unknown on error if its been already set" / "is not
/// updated on error if its not already set".
#[test]
fn errors_turn_available_unknown_only_once_reported() {
    let c = cos("test-ext-1", 1, json!([]));
    let s = on_error(&c, "some error", at("2022-01-01T00:00:00Z")).expect("changes");
    assert!(s.conditions.iter().all(|c| c.type_ != "Available"));
    let p = s
        .conditions
        .iter()
        .find(|c| c.type_ == "Progressing")
        .expect("Progressing");
    assert_eq!(
        (p.status.as_str(), p.reason.as_str(), p.message.as_str()),
        ("True", "Retrying", "some error")
    );

    let available = with(c, |v| {
        v["status"] = json!({"conditions": [{"type": "Available", "status": "True", "reason": "ProbesSucceeded",
            "message": "Revision 1.0.0 is rolled out.", "observedGeneration": 1, "lastTransitionTime": "2022-01-01T00:00:00Z"}]});
    });
    let s = on_error(&available, "some error", at("2022-01-01T00:00:00Z")).expect("changes");
    let a = s
        .conditions
        .iter()
        .find(|c| c.type_ == "Available")
        .expect("Available");
    assert_eq!(
        (a.status.as_str(), a.reason.as_str(), a.message.as_str()),
        ("Unknown", "Reconciling", "some error")
    );
}

/// Resolution failures are retried with the error, and report Retrying.
#[test]
fn resolution_error_is_retried() {
    let c = cos("test-ext-1", 1, json!([]));
    let d = decide(Input {
        cos: &c,
        resolved: Err("resolving ref in phase \"p\": getting Secret ns/s: not found"),
        mutable_secrets: &[],
        observed: &BTreeMap::new(),
        siblings: &[],
        v0_crd_owners: &BTreeMap::new(),
        now: at("2022-01-01T00:00:00Z"),
    });
    assert_condition(
        &d,
        "Progressing",
        "True",
        "Retrying",
        "resolving ref in phase \"p\": getting Secret ns/s: not found",
    );
    assert!(
        matches!(d.next, Next::Error(ref e) if e.starts_with("converting to boxcutter revision: "))
    );
}

/// Changed content after the first resolution blocks (revision.feature "blocks reconciliation
/// when referenced Secret content changes").
#[test]
fn changed_phase_content_blocks() {
    let c = cos(
        "test-ext-1",
        1,
        json!([{"name": "resources", "objects": [{"object": cm("a")}]}]),
    );
    let recorded = with(c, |v| {
        v["status"] = json!({"observedPhases": [{"name": "resources", "digest": "sha256:00"}]});
    });
    let d = Case::new(recorded).decide();
    let p = condition(&d, "Progressing").expect("Progressing");
    assert_eq!((p.status.as_str(), p.reason.as_str()), ("False", "Blocked"));
    assert!(p.message.starts_with("resolved content of 1 phase(s) has changed: phase \"resources\" (expected digest sha256:00, got sha256:"));
    assert!(d.writes.is_empty());
}

/// Archival: objects this revision wrote last are deleted; objects a newer revision took over
/// lose only our owner reference; once all are gone the revision reports Archived and drops its
/// finalizer (ArchivalAndDeletion vectors).
#[test]
fn archived_revision_tears_down() {
    let phases = json!([{"name": "one", "objects": [{"object": cm("shared")}]},
                        {"name": "two", "objects": [{"object": cm("only-old")}]}]);
    let archived = with(cos("test-ext-1", 1, phases), |v| {
        v["spec"]["lifecycleState"] = json!("Archived");
        v["metadata"]["finalizers"] = json!(["olm.operatorframework.io/teardown"]);
    });
    let mut shared = ours(&cm("shared"), "test-ext-2", 2);
    shared["metadata"]["ownerReferences"] = json!([
        {"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet", "name": "test-ext-1", "uid": "test-ext-1", "blockOwnerDeletion": true},
        {"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet", "name": "test-ext-2", "uid": "test-ext-2", "controller": true, "blockOwnerDeletion": true}]);
    // Phase two goes first (reverse order) and waits for the deletion.
    let d = Case::new(archived.clone())
        .observe(shared.clone())
        .observe(ours(&cm("only-old"), "test-ext-1", 1))
        .decide();
    assert_eq!(
        d.writes,
        [Write::Delete {
            target: key(&cm("only-old")),
            uid: "uid-only-old".into(),
            resource_version: "7".into()
        }]
    );
    assert_condition(
        &d,
        "Progressing",
        "True",
        "Retrying",
        "removing revision resources that are not owned by another revision",
    );
    assert_eq!(d.next, Next::RequeueAfter(Duration::from_secs(5)));
    assert_eq!(d.finalizer, Finalizer::Keep);

    // Phase two gone: phase one's shared object is released, and the revision is archived.
    let d = Case::new(archived.clone()).observe(shared).decide();
    let [Write::ReleaseOwnership { patch, .. }] = &d.writes[..] else {
        panic!("{:#?}", d.writes)
    };
    assert_eq!(
        patch["metadata"]["ownerReferences"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_condition(
        &d,
        "Progressing",
        "False",
        "Archived",
        "revision is archived",
    );
    assert_condition(
        &d,
        "Available",
        "Unknown",
        "Archived",
        "revision is archived",
    );
    assert_eq!(d.finalizer, Finalizer::Remove);
    assert_eq!(d.watch, Watch::Free);
}

/// boxcutter `ObjectEngine.Teardown` per object.
#[test]
fn teardown_object_steps() {
    let target = key(&cm("a"));
    assert_eq!(teardown_object(&target, None, "u1", 1), Teardown::Gone);
    let mine = obj(ours(&cm("a"), "u1", 1));
    assert!(matches!(
        teardown_object(&target, Some(&mine), "u1", 1),
        Teardown::Delete(_)
    ));
    // Written by revision 2, not ours at all: nothing to do.
    let theirs = obj(ours(&cm("a"), "u2", 2));
    assert_eq!(
        teardown_object(&target, Some(&theirs), "u1", 1),
        Teardown::Gone
    );
}

/// Being deleted: watches freed, finalizer removed (objects go with their owner references).
#[test]
fn deletion_removes_the_finalizer() {
    let c = with(cos("test-ext-1", 1, json!([])), |v| {
        v["metadata"]["deletionTimestamp"] = json!("2022-01-01T00:00:00Z");
        v["metadata"]["finalizers"] = json!(["olm.operatorframework.io/teardown"]);
    });
    let d = Case::new(c).decide();
    assert_eq!(d.finalizer, Finalizer::Remove);
    assert_eq!(d.watch, Watch::Free);
    assert!(d.writes.is_empty() && d.status.is_none());
}

/// A duplicate object is a revision validation error, retried after 10 s.
#[test]
fn duplicate_objects_fail_validation() {
    let c = cos(
        "test-ext-1",
        1,
        json!([{"name": "one", "objects": [{"object": cm("a")}]}, {"name": "two", "objects": [{"object": cm("a")}]}]),
    );
    let d = Case::new(c).decide();
    assert_condition(
        &d,
        "Progressing",
        "True",
        "Retrying",
        "revision validation error: revision \"test-ext-1\" (1): v1, Kind=ConfigMap ns/a: duplicate object found in phases: one, two",
    );
    assert_eq!(d.next, Next::RequeueAfter(Duration::from_secs(10)));
}
