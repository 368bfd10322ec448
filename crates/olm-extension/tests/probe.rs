//! Progression probes, pinned with boxcutter v0.14.0's `probing` test vectors (named per case)
//! and the messages upstream's e2e features show users.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use olm_api::ProgressionProbe;
use olm_extension::probe::{
    ProbeResult, ProbeStatus, and, condition_equal, evaluate, field_value, fields_equal, validate,
};
use serde_json::{Map, Value, json};

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("test object must be a JSON object"),
    }
}

fn result(status: ProbeStatus, messages: &[&str]) -> ProbeResult {
    ProbeResult {
        status,
        messages: messages.iter().map(|m| m.to_string()).collect(),
    }
}

/// boxcutter probing/condition_test.go `TestCondition` (Type Available, Status False).
#[test]
fn condition_probe_vectors() {
    let cases: Vec<(&str, Value, ProbeResult)> = vec![
        (
            "succeeds",
            json!({"metadata": {"generation": 1}, "status": {"conditions": [
                {"type": "Banana", "status": "True", "observedGeneration": 1},
                {"type": "Available", "status": "False", "observedGeneration": 1}]}}),
            result(
                ProbeStatus::True,
                &[r#".status.condition["Available"] is False"#],
            ),
        ),
        (
            "outdated",
            json!({"metadata": {"generation": 42}, "status": {"conditions": [
                {"type": "Available", "status": "False", "observedGeneration": 1}]}}),
            result(
                ProbeStatus::Unknown,
                &[r#".status.condition["Available"] outdated"#],
            ),
        ),
        (
            "wrong status",
            json!({"metadata": {"generation": 1}, "status": {"conditions": [
                {"type": "Available", "status": "Unknown", "observedGeneration": 1}]}}),
            result(
                ProbeStatus::False,
                &[r#".status.condition["Available"] is Unknown"#],
            ),
        ),
        (
            "not reported",
            json!({"metadata": {"generation": 1}, "status": {"conditions": [
                {"type": "Banana", "status": "True", "observedGeneration": 1}]}}),
            result(
                ProbeStatus::Unknown,
                &[r#"missing .status.condition["Available"]"#],
            ),
        ),
        (
            "malformed condition type int",
            json!({"metadata": {"generation": 1}, "status": {"conditions": [42, 56]}}),
            result(ProbeStatus::Unknown, &["malformed .status.conditions"]),
        ),
        (
            "malformed condition type string",
            json!({"metadata": {"generation": 1}, "status": {"conditions": ["42", "56"]}}),
            result(ProbeStatus::Unknown, &["malformed .status.conditions"]),
        ),
        (
            "malformed conditions array",
            json!({"metadata": {"generation": 1}, "status": {"conditions": 42}}),
            result(ProbeStatus::Unknown, &["malformed .status.conditions"]),
        ),
        (
            "missing conditions",
            json!({"metadata": {"generation": 1}, "status": {}}),
            result(ProbeStatus::Unknown, &["missing .status.conditions"]),
        ),
    ];
    for (name, o, want) in cases {
        assert_eq!(
            condition_equal(&obj(o), "Available", "False"),
            want,
            "case {name}"
        );
    }
}

/// boxcutter probing/fieldsequal_test.go `TestFieldsEqual` (`.spec.fieldA` vs `.spec.fieldB`).
#[test]
fn fields_equal_vectors() {
    let cases: Vec<(&str, Value, ProbeResult)> = vec![
        (
            "simple succeeds",
            json!({"spec": {"fieldA": "test", "fieldB": "test"}}),
            result(ProbeStatus::True, &[r#"".spec.fieldA" == ".spec.fieldB""#]),
        ),
        (
            "simple not equal",
            json!({"spec": {"fieldA": "test", "fieldB": "not test"}}),
            result(
                ProbeStatus::False,
                &[r#"".spec.fieldA" != ".spec.fieldB" expected: "test" got: "not test""#],
            ),
        ),
        (
            "complex succeeds",
            json!({"spec": {"fieldA": {"fk": "fv"}, "fieldB": {"fk": "fv"}}}),
            result(ProbeStatus::True, &[r#"".spec.fieldA" == ".spec.fieldB""#]),
        ),
        (
            "maps not equal",
            json!({"spec": {"fieldA": {"fk": "fv"}, "fieldB": {"fk": "something else"}}}),
            result(
                ProbeStatus::False,
                &[
                    r#"".spec.fieldA" != ".spec.fieldB" expected: {"fk":"fv"} got: {"fk":"something else"}"#,
                ],
            ),
        ),
        (
            "int not equal",
            json!({"spec": {"fieldA": {"fk": 1.0}, "fieldB": {"fk": 2.0}}}),
            result(
                ProbeStatus::False,
                &[r#"".spec.fieldA" != ".spec.fieldB" expected: {"fk":1} got: {"fk":2}"#],
            ),
        ),
        (
            "fieldA missing",
            json!({"spec": {"fieldB": "test"}}),
            result(ProbeStatus::False, &[r#"".spec.fieldA" missing"#]),
        ),
        (
            "fieldB missing",
            json!({"spec": {"fieldA": "test"}}),
            result(ProbeStatus::False, &[r#"".spec.fieldB" missing"#]),
        ),
    ];
    for (name, o, want) in cases {
        assert_eq!(
            fields_equal(&obj(o), ".spec.fieldA", ".spec.fieldB"),
            want,
            "case {name}"
        );
    }
}

/// boxcutter probing/fieldvalue_test.go `TestFieldValueProbe`.
#[test]
fn field_value_vectors() {
    let o = obj(json!({"spec": {"field": "test"}}));
    let cases = [
        (
            "True result with found key and equal value",
            "spec.field",
            "test",
            result(
                ProbeStatus::True,
                &[r#"value at key "spec.field" == "test""#],
            ),
        ),
        (
            "False result with missing key",
            "spec.foo",
            "test",
            result(ProbeStatus::False, &[r#"missing key: "spec.foo""#]),
        ),
        (
            "False result with found key and unequal value",
            "spec.field",
            "bar",
            result(
                ProbeStatus::False,
                &[r#"value at key "spec.field" != "bar"; expected: "bar" got: "test""#],
            ),
        ),
    ];
    for (name, path, value, want) in cases {
        assert_eq!(field_value(&o, path, value), want, "case {name}");
    }
}

/// A path through a non-map is `unstructured`'s accessor error, wrapped as boxcutter does.
#[test]
fn field_value_through_a_scalar_reports_the_accessor_error() {
    let o = obj(json!({"spec": {"field": "test"}}));
    assert_eq!(
        field_value(&o, "spec.field.deeper", "x"),
        result(
            ProbeStatus::False,
            &[
                r#"error locating key "spec.field.deeper"; .spec.field accessor error: test is of the type string, expected map[string]interface{}"#
            ]
        )
    );
}

/// boxcutter probing/probe_test.go `TestAnd`: messages of the deciding status combine in order.
#[test]
fn and_combines_messages_of_the_deciding_status() {
    let r = and(vec![
        result(ProbeStatus::False, &["error from prober1"]),
        result(ProbeStatus::False, &["error from prober2"]),
    ]);
    assert_eq!(
        r,
        result(
            ProbeStatus::False,
            &["error from prober1", "error from prober2"]
        )
    );
    let r = and(vec![
        result(ProbeStatus::True, &["success from prober1"]),
        result(ProbeStatus::True, &["success from prober2"]),
    ]);
    assert_eq!(
        r,
        result(
            ProbeStatus::True,
            &["success from prober1", "success from prober2"]
        )
    );
    // Unknown wins over False, and only its messages remain.
    let r = and(vec![
        result(ProbeStatus::False, &["f"]),
        result(ProbeStatus::Unknown, &["u"]),
        result(ProbeStatus::True, &["t"]),
    ]);
    assert_eq!(r, result(ProbeStatus::Unknown, &["u"]));
    assert_eq!(and(vec![]), result(ProbeStatus::True, &[]));
}

fn probes(v: Value) -> Vec<ProgressionProbe> {
    serde_json::from_value(v).expect("valid probes")
}

/// test/e2e/features/revision.feature "Probe failure for PersistentVolumeClaim halts phase
/// progression": the GroupKind selector and the message users see.
#[test]
fn group_kind_selector_with_field_value() {
    let p = probes(json!([{
        "selector": {"type": "GroupKind", "groupKind": {"group": "", "kind": "PersistentVolumeClaim"}},
        "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "status.phase", "value": "Bound"}}]
    }]));
    let pvc = obj(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "test-pvc"}, "status": {"phase": "Pending"}}));
    assert_eq!(
        evaluate(&p, &pvc).expect("probes build"),
        result(
            ProbeStatus::False,
            &[r#"value at key "status.phase" != "Bound"; expected: "Bound" got: "Pending""#]
        )
    );
    // boxcutter selectors_test.go "no match": objects of other kinds pass without messages.
    let cm = obj(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}));
    assert_eq!(
        evaluate(&p, &cm).expect("probes build"),
        result(ProbeStatus::True, &[])
    );
}

/// test/e2e/features/revision.feature "Phases does not progress when user-provided
/// progressionProbes do not pass": the Label selector.
#[test]
fn label_selector_with_field_value() {
    let p = probes(json!([{
        "selector": {"type": "Label", "label": {"matchLabels": {"test-label": "foo"}}},
        "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "data.foo", "value": "bar"}}]
    }]));
    let selected = obj(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "test-configmap-1", "labels": {"test-label": "foo"}}, "data": {"foo": "foo"}}));
    assert_eq!(
        evaluate(&p, &selected).expect("probes build"),
        result(
            ProbeStatus::False,
            &[r#"value at key "data.foo" != "bar"; expected: "bar" got: "foo""#]
        )
    );
    let other = obj(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "test-configmap-2", "labels": {"test-label": "bar"}}}));
    assert!(evaluate(&p, &other).expect("probes build").passed());
}

/// Match expressions: In / NotIn / Exists / DoesNotExist, and an invalid operator is an error.
#[test]
fn label_selector_expressions() {
    let p = |op: &str, values: Value| {
        probes(json!([{
            "selector": {"type": "Label", "label": {"matchExpressions": [{"key": "tier", "operator": op, "values": values}]}},
            "assertions": [{"type": "FieldValue", "fieldValue": {"fieldPath": "data.ok", "value": "yes"}}]
        }]))
    };
    let o = obj(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "labels": {"tier": "web"}}, "data": {"ok": "no"}}));
    let selected = |probes: &[ProgressionProbe]| !evaluate(probes, &o).expect("valid").passed();
    assert!(selected(&p("In", json!(["web", "db"]))));
    assert!(!selected(&p("In", json!(["db"]))));
    assert!(selected(&p("NotIn", json!(["db"]))));
    assert!(selected(&p("Exists", json!([]))));
    assert!(!selected(&p("DoesNotExist", json!([]))));
    let bad = p("Near", json!(["web"]));
    assert!(validate(&bad).is_err());
    assert!(evaluate(&bad, &o).is_err());
}

/// boxcutter probing/observedgeneration_test.go: an outdated `.status.observedGeneration` is
/// Unknown before any assertion runs; up to date or not reported runs the assertions.
#[test]
fn observed_generation_wraps_every_probe() {
    let p = probes(json!([{
        "selector": {"type": "GroupKind", "groupKind": {"group": "apps", "kind": "Deployment"}},
        "assertions": [{"type": "ConditionEqual", "conditionEqual": {"type": "Available", "status": "True"}}]
    }]));
    let outdated = obj(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "generation": 4}, "status": {"observedGeneration": 2}}));
    assert_eq!(
        evaluate(&p, &outdated).expect("valid"),
        result(ProbeStatus::Unknown, &[".status outdated"])
    );
    let current = obj(json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "generation": 4},
        "status": {"observedGeneration": 4, "conditions": [{"type": "Available", "status": "True"}]}}));
    assert_eq!(
        evaluate(&p, &current).expect("valid"),
        result(
            ProbeStatus::True,
            &[r#".status.condition["Available"] is True"#]
        )
    );
}

/// Without probes every object passes (upstream always installs an empty `And`).
#[test]
fn no_probes_pass() {
    let o = obj(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}));
    assert_eq!(
        evaluate(&[], &o).expect("valid"),
        result(ProbeStatus::True, &[])
    );
}
