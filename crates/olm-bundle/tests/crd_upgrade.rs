//! CRD upgrade safety: one safe and one unsafe case per check, upstream's message format, and
//! the consecutive bundle versions in `shared/data` against operator-controller's own preflight
//! (`tests/golden/crd-upgrade-pairs.txt`, made by `tools/oracles/regen.sh`).
//!
//! The one-check cases below were derived by hand from crdify's comparators and
//! operator-controller's message formatting (`crdupgradesafety.go`); the data pairs are the ones
//! the oracle decides.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use olm_bundle::Bundle;
use olm_bundle::crddiff::{CrdFilesError, check_upgrade, check_upgrade_texts, v1beta1_to_v1};
use serde_json::{Value, json};

mod oracle;

fn crd_with(scope: &str, versions: Vec<(&str, bool, Value)>, stored: &[&str]) -> Value {
    let vs: Vec<Value> = versions
        .into_iter()
        .enumerate()
        .map(|(i, (name, served, schema))| {
            json!({"name": name, "served": served, "storage": i == 0, "schema": {"openAPIV3Schema": schema}})
        })
        .collect();
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": scope, "names": {"plural": "widgets", "kind": "Widget"}, "versions": vs},
           "status": {"storedVersions": stored}})
}

/// A one-version CRD whose `spec.field` has the given schema.
fn field(schema: Value) -> Value {
    crd_with(
        "Namespaced",
        vec![(
            "v1",
            true,
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"field": schema}}}}),
        )],
        &["v1"],
    )
}

fn errors(old: &Value, new: &Value) -> Vec<String> {
    check_upgrade(old, new).errors
}

#[test]
fn identical_and_description_only_changes_are_safe() {
    let a = field(json!({"type": "string", "description": "old"}));
    let b = field(json!({"type": "string", "description": "new"}));
    assert!(errors(&a, &a).is_empty());
    assert!(errors(&a, &b).is_empty());
}

#[test]
fn scope() {
    let a = field(json!({"type": "string"}));
    let mut b = a.clone();
    b["spec"]["scope"] = json!("Cluster");
    assert_eq!(
        errors(&a, &b),
        ["scope: scope changed : \"Namespaced\" -> \"Cluster\""]
    );
}

#[test]
fn stored_version_removal() {
    let schema = json!({"type": "object"});
    let a = crd_with(
        "Namespaced",
        vec![
            ("v1", true, schema.clone()),
            ("v1beta1", true, schema.clone()),
        ],
        &["v1beta1", "v1"],
    );
    let b = crd_with("Namespaced", vec![("v1", true, schema.clone())], &["v1"]);
    assert_eq!(
        errors(&a, &b),
        ["storedVersionRemoval: stored versions removed : [v1beta1]"]
    );
    // Removing a version nothing was stored at is fine.
    let a = crd_with(
        "Namespaced",
        vec![
            ("v1", true, schema.clone()),
            ("v1beta1", true, schema.clone()),
        ],
        &["v1"],
    );
    assert!(errors(&a, &b).is_empty());
}

#[test]
fn existing_field_removal() {
    let a = field(json!({"type": "string"}));
    let b = crd_with(
        "Namespaced",
        vec![(
            "v1",
            true,
            json!({"type": "object", "properties": {"spec": {"type": "object"}}}),
        )],
        &["v1"],
    );
    let e = errors(&a, &b);
    assert_eq!(
        e[0],
        "existingFieldRemoval: removed field : v1.^.spec.field"
    );
    assert!(
        e.contains(&"v1: ^.spec.field: type: type changed : \"string\" -> \"\"".to_string()),
        "{e:?}"
    );
    // Adding a field is fine.
    assert!(errors(&b, &a).is_empty());
}

#[test]
fn type_change() {
    let e = errors(
        &field(json!({"type": "boolean"})),
        &field(json!({"type": "string"})),
    );
    assert_eq!(
        e,
        ["v1: ^.spec.field: type: type changed : \"boolean\" -> \"string\""]
    );
}

#[test]
fn required() {
    let obj = |req: Value| {
        field(
            json!({"type": "object", "required": req, "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}),
        )
    };
    assert_eq!(
        errors(&obj(json!(["a"])), &obj(json!(["a", "b"]))),
        ["v1: ^.spec.field: required: new required fields: [b]"]
    );
    assert!(errors(&obj(json!(["a", "b"])), &obj(json!(["a"]))).is_empty());
}

#[test]
fn enum_values() {
    let e = |v: Value| field(json!({"type": "string", "enum": v}));
    assert_eq!(
        errors(&e(json!(["a", "b", "c"])), &e(json!(["a"]))),
        ["v1: ^.spec.field: enum: allowed enum values removed : [\"b\" \"c\"]"]
    );
    assert!(errors(&e(json!(["a"])), &e(json!(["a", "b"]))).is_empty());
    assert_eq!(
        errors(&field(json!({"type": "string"})), &e(json!(["a"]))),
        ["v1: ^.spec.field: enum: enum constraint added when there was none previously : [\"a\"]"]
    );
}

#[test]
fn default_values() {
    let d = |v: Value| field(json!({"type": "string", "default": v}));
    let plain = field(json!({"type": "string"}));
    assert_eq!(
        errors(&plain, &d(json!("x"))),
        ["v1: ^.spec.field: default: default added when there was none previously : \"\\\"x\\\"\""]
    );
    assert_eq!(
        errors(&d(json!("x")), &plain),
        ["v1: ^.spec.field: default: default value removed : \"\\\"x\\\"\""]
    );
    assert_eq!(
        errors(&d(json!("x")), &d(json!("y"))),
        ["v1: ^.spec.field: default: default value changed : \"\\\"x\\\"\" -> \"\\\"y\\\"\""]
    );
    assert!(errors(&d(json!("x")), &d(json!("x"))).is_empty());
}

#[test]
fn maximum_family() {
    for key in ["maximum", "maxLength", "maxItems", "maxProperties"] {
        let m = |v: Option<i64>| {
            let mut s = json!({"type": "integer"});
            if let Some(v) = v {
                s[key] = json!(v);
            }
            field(s)
        };
        assert_eq!(
            errors(&m(Some(10)), &m(Some(5))),
            [format!(
                "v1: ^.spec.field: {key}: maximum decreased : 10 -> 5"
            )]
        );
        assert_eq!(
            errors(&m(None), &m(Some(5))),
            [format!(
                "v1: ^.spec.field: {key}: maximum constraint added when there was none previously : 5"
            )]
        );
        assert!(
            errors(&m(Some(5)), &m(Some(10))).is_empty(),
            "{key}: raising is safe"
        );
        assert!(
            errors(&m(Some(5)), &m(None)).is_empty(),
            "{key}: removing is safe"
        );
    }
}

#[test]
fn minimum_family() {
    for key in ["minimum", "minLength", "minItems", "minProperties"] {
        let m = |v: Option<i64>| {
            let mut s = json!({"type": "integer"});
            if let Some(v) = v {
                s[key] = json!(v);
            }
            field(s)
        };
        assert_eq!(
            errors(&m(Some(1)), &m(Some(3))),
            [format!(
                "v1: ^.spec.field: {key}: minimum increased : 1 -> 3"
            )]
        );
        assert_eq!(
            errors(&m(None), &m(Some(3))),
            [format!(
                "v1: ^.spec.field: {key}: minimum constraint added when there was none previously : 3"
            )]
        );
        assert!(
            errors(&m(Some(3)), &m(Some(1))).is_empty(),
            "{key}: lowering is safe"
        );
    }
}

#[test]
fn pattern() {
    let p = |v: Option<&str>| {
        let mut s = json!({"type": "string"});
        if let Some(v) = v {
            s["pattern"] = json!(v);
        }
        field(s)
    };
    assert_eq!(
        errors(&p(None), &p(Some("^a"))),
        ["v1: ^.spec.field: pattern: pattern added : \"\" -> \"^a\""]
    );
    assert_eq!(
        errors(&p(Some("^a")), &p(Some("^b"))),
        ["v1: ^.spec.field: pattern: pattern changed : \"^a\" -> \"^b\""]
    );
    assert_eq!(
        errors(&p(Some("^a")), &p(None)),
        ["v1: ^.spec.field: pattern: pattern removed : \"^a\" -> \"\""]
    );
    assert!(errors(&p(Some("^a")), &p(Some("^a"))).is_empty());
}

#[test]
fn nullable() {
    let n = |v: bool| field(json!({"type": "string", "nullable": v}));
    assert_eq!(
        errors(&n(false), &n(true)),
        ["v1: ^.spec.field: nullable: nullable added : false -> true"]
    );
    assert_eq!(
        errors(&n(true), &n(false)),
        ["v1: ^.spec.field: nullable: nullable removed : true -> false"]
    );
    // Absent and false are the same to the API server.
    assert!(errors(&field(json!({"type": "string"})), &n(false)).is_empty());
}

#[test]
fn one_of() {
    let o = |alts: Value| field(json!({"type": "object", "oneOf": alts}));
    let ab = json!([{"required": ["a"]}, {"required": ["b"]}]);
    let a = json!([{"required": ["a"]}]);
    // crdify's oneOf policies default to Disallow for additions and removals alike, and the
    // alternatives print as their protobuf text (gogo's generated String()).
    let alt_b = "&JSONSchemaProps{ID:,Schema:,Ref:nil,Description:,Type:,Format:,Title:,Default:nil,Maximum:nil,ExclusiveMaximum:false,Minimum:nil,ExclusiveMinimum:false,MaxLength:nil,MinLength:nil,Pattern:,MaxItems:nil,MinItems:nil,UniqueItems:false,MultipleOf:nil,Enum:[]JSON{},MaxProperties:nil,MinProperties:nil,Required:[b],Items:nil,AllOf:[]JSONSchemaProps{},OneOf:[]JSONSchemaProps{},AnyOf:[]JSONSchemaProps{},Not:nil,Properties:map[string]JSONSchemaProps{},AdditionalProperties:nil,PatternProperties:map[string]JSONSchemaProps{},Dependencies:JSONSchemaDependencies{},AdditionalItems:nil,Definitions:JSONSchemaDefinitions{},ExternalDocs:nil,Example:nil,Nullable:false,XPreserveUnknownFields:nil,XEmbeddedResource:false,XIntOrString:false,XListMapKeys:[],XListType:nil,XMapType:nil,XValidations:[]ValidationRule{},}";
    assert_eq!(
        errors(&o(a.clone()), &o(ab.clone())),
        [format!(
            "v1: ^.spec.field: oneOf: allowed oneOf schemas added: [{alt_b}]"
        )]
    );
    // Dropping the second alternative also drops the node `oneOf[1]`.
    let e = errors(&o(ab), &o(a));
    assert_eq!(
        e,
        [
            "existingFieldRemoval: removed field : v1.^.spec.field.oneOf[1]".to_string(),
            format!("v1: ^.spec.field: oneOf: allowed oneOf schemas removed: [{alt_b}]")
        ]
    );
    let e = errors(
        &field(json!({"type": "object"})),
        &o(json!([{"required": ["a"]}])),
    );
    assert!(
        e.iter().any(|l| l.starts_with(
            "v1: ^.spec.field: oneOf: oneOf constraint added when there was none previously: [&JSONSchemaProps{"
        )),
        "{e:?}"
    );
}

#[test]
fn unhandled_changes_are_condensed() {
    let e = errors(
        &field(json!({"type": "string"})),
        &field(json!({"type": "string", "format": "email", "title": "Widget"})),
    );
    assert_eq!(
        e,
        [
            "v1: ^.spec.field: unhandled: unhandled changes found (Format \"\" -> \"email\"; Title \"\" -> \"Widget\")"
        ]
    );
}

/// As the oracle showed on hawtio-operator 1.2.0 -> 1.0.0: go-cmp writes a pointer field with
/// `&` and a string list as a Go literal.
#[test]
fn unhandled_summary_writes_go_values() {
    let e = errors(
        &field(
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}),
        ),
        &field(json!({"type": "array"})),
    );
    assert_eq!(
        e,
        [
            "v1: ^.spec.field: unhandled: unhandled changes found (XListMapKeys []string{\"name\"} -> nil; XListType &\"map\" -> nil)"
        ]
    );
}

/// As the oracle showed on mercury-operator 1.0.1 -> 1.0.2: crdify takes only `properties` and
/// `items` out of a node before its unhandled check, so dropping `additionalProperties` is an
/// unhandled change of the node as well as a removed field.
#[test]
fn removed_additional_properties_is_also_unhandled() {
    let e = errors(
        &field(json!({"type": "object", "additionalProperties": {"type": "string"}})),
        &field(json!({"type": "object"})),
    );
    assert!(
        e.contains(
            &"v1: ^.spec.field: unhandled: unhandled changes found (AdditionalProperties <complex value> -> nil)"
                .to_string()
        ),
        "{e:?}"
    );
}

#[test]
fn served_versions_are_compared_unless_converted_by_webhook() {
    let v1 = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"foobarbaz": {"type": "string", "enum": ["a", "b"]}}}}});
    let v2 = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"foobarbaz": {"type": "string", "enum": ["a"]}}}}});
    let old = crd_with("Namespaced", vec![("v1", true, v1.clone())], &["v1"]);
    let new = crd_with(
        "Namespaced",
        vec![("v1", true, v1.clone()), ("v2", true, v2.clone())],
        &["v1"],
    );
    let report = check_upgrade(&old, &new);
    assert_eq!(
        report.to_string(),
        "validating upgrade for CRD \"widgets.example.com\": v1 -> v2: ^.spec.foobarbaz: enum: allowed enum values removed : [\"b\"]"
    );
    let mut webhook = new.clone();
    webhook["spec"]["conversion"] = json!({"strategy": "Webhook"});
    assert!(check_upgrade(&old, &webhook).is_safe());
    // Issues the installed CRD already had are not held against the new one...
    assert!(check_upgrade(&new, &new).is_safe());
    // ...but new ones still are.
    let mut v2b = v2.clone();
    v2b["properties"]["spec"]["properties"]["extra"] = json!({"type": "string"});
    let mut v1b = v1.clone();
    v1b["properties"]["spec"]["properties"]["extra"] = json!({"type": "boolean"});
    let newer = crd_with(
        "Namespaced",
        vec![("v1", true, v1b), ("v2", true, v2b)],
        &["v1"],
    );
    let e = check_upgrade(&new, &newer).errors;
    assert!(
        e.contains(
            &"v1 -> v2: ^.spec.extra: type: type changed : \"boolean\" -> \"string\"".to_string()
        ),
        "{e:?}"
    );
    assert!(!e.iter().any(|x| x.contains("foobarbaz")), "{e:?}");
}

/// "new required fields: [..]" lists come out in random order upstream: compare them sorted.
fn sort_required_lists(s: &str) -> String {
    const KEY: &str = "new required fields: [";
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(KEY) {
        let (head, tail) = rest.split_at(i + KEY.len());
        out.push_str(head);
        let end = tail.find(']').unwrap_or(tail.len());
        let mut names: Vec<&str> = tail[..end].split_whitespace().collect();
        names.sort_unstable();
        out.push_str(&names.join(" "));
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// A CRD as a cluster that installed it holds it: its storage version stored.
fn installed(crd: &Value) -> Value {
    let mut installed = crd.clone();
    let stored: Vec<Value> = installed
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|vs| {
            vs.iter()
                .filter(|v| v["storage"] == json!(true))
                .map(|v| v["name"].clone())
                .collect()
        })
        .unwrap_or_default();
    installed["status"] = json!({"storedVersions": stored});
    installed
}

/// A report in the oracle tables' form: `safe`, or the condition's first line and then the
/// problems sorted, one a line (upstream's order is random).
fn outcome(r: &olm_bundle::crddiff::UpgradeReport) -> String {
    if r.is_safe() {
        return "safe\n".to_string();
    }
    let text = sort_required_lists(&r.to_string());
    let prefix = format!("validating upgrade for CRD \"{}\": ", r.crd_name);
    let mut lines: Vec<&str> = text
        .strip_prefix(&prefix)
        .unwrap_or(&text)
        .split('\n')
        .collect();
    lines.sort_unstable();
    format!("unsafe: {}\n{}\n", prefix.trim_end(), lines.join("\n"))
}

/// Applies one RFC 6902 `add`, `remove` or `replace` op (object members, or `replace` of an
/// array element), as the oracle's generator does.
fn apply_op(doc: &mut Value, op: &Value) {
    let path = op["path"].as_str().unwrap();
    let (parent, last) = path.rsplit_once('/').unwrap();
    let key = last.replace("~1", "/").replace("~0", "~");
    let target = doc
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("no {parent}"));
    match (op["op"].as_str().unwrap(), target) {
        ("add" | "replace", Value::Object(m)) => {
            m.insert(key, op["value"].clone());
        }
        ("remove", Value::Object(m)) => {
            m.remove(&key)
                .unwrap_or_else(|| panic!("nothing at {path}"));
        }
        ("replace", Value::Array(a)) => a[key.parse::<usize>().unwrap()] = op["value"].clone(),
        (o, _) => panic!("op {o} at {path} not supported"),
    }
}

/// One-change mutations of one v1 CRD per package, both ways, against what operator-controller
/// v1.11.0's preflight said for the same mutation (`tests/golden/crd-upgrade-mutations.txt`, made
/// by `tools/oracles/regen.sh`; the oracle generated the mutations too, so each case carries the
/// JSON Patch op it applied).
#[test]
fn one_change_mutations_match_operator_controller() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/bundles");
    let golden =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/crd-upgrade-mutations.txt");
    let text = std::fs::read_to_string(&golden).unwrap();
    // (case, patch op, expected outcome)
    let mut cases: Vec<(String, Value, String)> = Vec::new();
    let mut lines = text.lines().filter(|l| !l.starts_with('#')).peekable();
    while let Some(head) = lines.next() {
        let (_, op) = head.split_at(head.find(" {").expect("case line without op"));
        let op: Value = serde_json::from_str(op.trim()).unwrap();
        let mut want = format!("{}\n", lines.next().expect("case without outcome"));
        while let Some(more) = lines.next_if(|l| l.starts_with("  ")) {
            want.push_str(&more[2..]);
            want.push('\n');
        }
        cases.push((head.to_string(), op, want));
    }
    assert!(cases.len() >= 1000, "only {} mutations", cases.len());
    let mut crds = std::collections::BTreeMap::new();
    let mut results = Vec::new();
    for (case, op, want) in cases {
        let f: Vec<&str> = case.split(' ').collect();
        let [bundle, crd, _, dir, ..] = f[..] else {
            panic!("bad case line {case:?}");
        };
        let base: &Value = crds.entry(format!("{bundle} {crd}")).or_insert_with(|| {
            let b = Bundle::from_dir(data.join(bundle)).unwrap();
            b.crds
                .iter()
                .find(|c| c.name() == crd)
                .unwrap()
                .object
                .clone()
        });
        let mut mutated = base.clone();
        apply_op(&mut mutated, &op);
        let (old, new) = match dir {
            "up" => (base, &mutated),
            _ => (&mutated, base),
        };
        let got = outcome(&check_upgrade(&installed(old), new));
        results.push((case, got, want));
    }
    oracle::assert_matches(&golden, "CRD upgrade mutations", &results);
}

/// Consecutive bundle versions of the data set, upgrade and downgrade, every CRD of the new
/// bundle checked against the installed one of the same name, compared with what
/// operator-controller v1.11.0's own preflight said for the same pair
/// (`tests/golden/crd-upgrade-pairs.txt`, made by `tools/oracles/regen.sh`; the installed CRD has
/// its storage version as `status.storedVersions`).
#[test]
fn data_upgrade_pairs_match_operator_controller() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/bundles");
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/crd-upgrade-pairs.txt");
    let text = std::fs::read_to_string(&golden).unwrap();
    // (header line, expected outcome with its indented lines)
    let mut cases: Vec<(String, String)> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(more) = line.strip_prefix("  ") {
            let last = cases.last_mut().expect("detail line before any case");
            last.1.push_str(more);
            last.1.push('\n');
        } else {
            let (head, outcome) = line.split_once(": ").expect("case line without outcome");
            cases.push((head.to_string(), format!("{outcome}\n")));
        }
    }
    assert!(cases.len() >= 20, "only {} pairs", cases.len());
    let mut bundles = std::collections::BTreeMap::new();
    let mut load = |pkg: &str, v: &str| -> Bundle {
        bundles
            .entry(format!("{pkg}/{v}"))
            .or_insert_with(|| Bundle::from_dir(data.join(pkg).join(v)).unwrap())
            .clone()
    };
    let mut results = Vec::new();
    for (head, want) in &cases {
        let f: Vec<&str> = head.split(' ').collect();
        let [pkg, a, "->", b, crd] = f[..] else {
            panic!("bad case line {head:?}");
        };
        let (old, new) = (load(pkg, a), load(pkg, b));
        let n = new.crds.iter().find(|n| n.name() == crd).unwrap();
        let got = match old.crds.iter().find(|o| o.name() == crd) {
            None => "new CRD\n".to_string(),
            Some(o) => outcome(&check_upgrade(&installed(&o.object), &n.object)),
        };
        results.push((head.clone(), got, want.clone()));
    }
    oracle::assert_matches(&golden, "CRD upgrade pairs", &results);
}

#[test]
fn files_without_stored_versions_assume_the_storage_version() {
    let schema = json!({"type": "object"});
    let mut old = crd_with(
        "Namespaced",
        vec![
            ("v1beta1", true, schema.clone()),
            ("v1", true, schema.clone()),
        ],
        &[],
    );
    old["status"] = json!({"storedVersions": null});
    let new = crd_with("Namespaced", vec![("v1", true, schema.clone())], &["v1"]);
    let r = check_upgrade_texts(&old.to_string(), &new.to_string()).unwrap();
    assert_eq!(
        r.reports[0].errors,
        ["storedVersionRemoval: stored versions removed : [v1beta1]"]
    );
    assert!(
        check_upgrade_texts("kind: ConfigMap\n", &new.to_string())
            .unwrap_err()
            .to_string()
            .contains("old CRD")
    );
}

fn named(name: &str, schema: Value) -> Value {
    let mut c = field(schema);
    c["metadata"]["name"] = json!(name);
    c
}

fn yaml_docs(docs: &[&Value]) -> String {
    docs.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("\n---\n")
}

/// Every CRD of a multi-document file is compared with the CRD of the same name, whatever the
/// order; a file used to be read up to its first CRD only.
#[test]
fn files_compare_every_crd_by_name() {
    let a = named("as.example.com", json!({"type": "string"}));
    let b_old = named("bs.example.com", json!({"type": "string"}));
    let b_new = named("bs.example.com", json!({"type": "integer"}));
    let r = check_upgrade_texts(&yaml_docs(&[&a, &b_old]), &yaml_docs(&[&b_new, &a])).unwrap();
    assert!(!r.is_safe());
    let unsafe_names: Vec<&str> = r
        .reports
        .iter()
        .filter(|r| !r.is_safe())
        .map(|r| r.crd_name.as_str())
        .collect();
    assert_eq!(unsafe_names, ["bs.example.com"]);
    assert_eq!(
        r.reports[0].errors,
        ["v1: ^.spec.field: type: type changed : \"string\" -> \"integer\""]
    );
    // A CRD only one side has is no comparison, but is named.
    let c = named("cs.example.com", json!({"type": "string"}));
    let r = check_upgrade_texts(&yaml_docs(&[&a, &b_old]), &yaml_docs(&[&a, &c])).unwrap();
    assert!(r.is_safe());
    assert_eq!(r.added, ["cs.example.com"]);
    assert_eq!(r.missing, ["bs.example.com"]);
}

#[test]
fn files_with_no_crd_name_in_common_are_refused() {
    let a = named("as.example.com", json!({"type": "string"}));
    let b = named("bs.example.com", json!({"type": "integer"}));
    let e = check_upgrade_texts(&a.to_string(), &b.to_string()).unwrap_err();
    assert!(matches!(e, CrdFilesError::NameMismatch { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "the old file has CRD [as.example.com] and the new file has CRD [bs.example.com]: a CRD can only be compared with the CRD of the same name"
    );
}

/// A v1beta1 CRD as the API server converts it: the top-level `validation` is every version's
/// schema and a lone `version` is the served, stored one. It used to read as having no schema.
#[test]
fn v1beta1_files_are_compared_as_the_api_server_converts_them() {
    let beta = |field_schema: Value| {
        json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "widgets.example.com"},
               "spec": {"group": "example.com", "version": "v1alpha1",
                        "names": {"plural": "widgets", "kind": "Widget"},
                        "validation": {"openAPIV3Schema": {"type": "object", "properties": {
                            "spec": {"type": "object", "properties": field_schema}}}}}})
    };
    let old =
        beta(json!({"size": {"type": "integer", "maximum": 10}, "color": {"type": "string"}}));
    let new = beta(json!({"size": {"type": "integer", "maximum": 5}}));
    let r = check_upgrade_texts(&old.to_string(), &new.to_string()).unwrap();
    assert_eq!(
        r.reports[0].errors,
        [
            "existingFieldRemoval: removed field : v1alpha1.^.spec.color",
            "v1alpha1: ^.spec.color: type: type changed : \"string\" -> \"\"",
            "v1alpha1: ^.spec.size: maximum: maximum decreased : 10 -> 5",
        ]
    );
    // Per-version schemas of a v1beta1 CRD are kept as they are.
    let converted = v1beta1_to_v1(&old);
    assert_eq!(converted["apiVersion"], json!("apiextensions.k8s.io/v1"));
    assert_eq!(converted["spec"]["scope"], json!("Namespaced"));
    assert_eq!(
        converted["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["size"]["maximum"],
        json!(10)
    );
    assert_eq!(converted["spec"]["versions"][0]["storage"], json!(true));
    // One mixed pair: an installed v1beta1 CRD replaced by its v1 form is no change at all.
    assert!(
        check_upgrade_texts(&old.to_string(), &converted.to_string())
            .unwrap()
            .is_safe()
    );
}

/// A file compared with itself is always safe. Found by fuzzing: a CRD listing one version name
/// twice, or a file holding one CRD twice, was compared entry against entry and reported fields
/// removed between a CRD and itself; both are now refused, naming the repeat.
#[test]
fn repeated_crds_and_versions_are_refused_instead_of_compared_with_themselves() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"size": {"type": "integer"}}}}});
    let mut twice = crd_with(
        "Namespaced",
        vec![("v2", true, json!({})), ("v2", false, schema)],
        &["v2"],
    );
    twice["status"] = json!({});
    let text = twice.to_string();
    let e = check_upgrade_texts(&text, &text).unwrap_err();
    assert!(matches!(e, CrdFilesError::DuplicateVersion { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        format!(
            "old CRD {:?}: spec.versions[1].name: Duplicate value: \"v2\"",
            twice["metadata"]["name"].as_str().unwrap()
        )
    );

    let a = named("as.example.com", json!({"type": "string"}));
    let a_other = named("as.example.com", json!({"type": "integer"}));
    let text = yaml_docs(&[&a, &a_other]);
    let e = check_upgrade_texts(&a.to_string(), &text).unwrap_err();
    assert_eq!(
        e.to_string(),
        "new CRD: the file holds CRD \"as.example.com\" more than once"
    );
    assert!(
        check_upgrade_texts(&a.to_string(), &a.to_string())
            .unwrap()
            .is_safe()
    );
}
