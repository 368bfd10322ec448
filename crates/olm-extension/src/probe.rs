//! Progression probes: whether an observed object is ready enough for the next phase to start.
//!
//! A ClusterObjectSet's `spec.progressionProbes` are evaluated on every object of a phase, as
//! boxcutter's `probing` package evaluates them for upstream: each probe selects objects (by
//! group and kind, or by labels; objects it does not select pass it), waits for the object's
//! `status.observedGeneration` to catch up with `metadata.generation`, and then checks its
//! assertions. Results combine the way boxcutter's `And` does: any `Unknown` wins, then any
//! `False`, and the messages of the winning status are kept in order. The messages are
//! boxcutter's texts, byte for byte, because they reach users through the `Available`
//! condition ("Object ConfigMap.v1 ns/name: value at key \"data.foo\" != \"bar\"; …").
//!
//! Objects are plain JSON maps (what the API server returns), so this module needs no typed
//! Kubernetes objects and no client.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use olm_api::{Assertion, ObjectSelector, ProbeType, ProgressionProbe, SelectorType};
use serde_json::{Map, Value};

/// The outcome of a probe: boxcutter's `True`, `False` or `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeStatus {
    /// The probe passed.
    True,
    /// The probe failed.
    False,
    /// The probe could not tell (missing or outdated status).
    Unknown,
}

/// A probe status with the human-readable messages explaining it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResult {
    /// The combined status.
    pub status: ProbeStatus,
    /// Messages of the assertions that decided the status, in probe order.
    pub messages: Vec<String>,
}

impl ProbeResult {
    fn new(status: ProbeStatus, message: String) -> ProbeResult {
        ProbeResult {
            status,
            messages: vec![message],
        }
    }

    fn pass() -> ProbeResult {
        ProbeResult {
            status: ProbeStatus::True,
            messages: Vec::new(),
        }
    }

    /// Whether the object may progress.
    pub fn passed(&self) -> bool {
        self.status == ProbeStatus::True
    }
}

/// Why the probes of a ClusterObjectSet cannot be evaluated at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProbeError {
    /// A label selector uses an operator the API does not know, or `In`/`NotIn` without values.
    #[error("invalid label selector in progressionProbe ({selector}): {reason}")]
    InvalidLabelSelector {
        /// The selector, roughly as Go's `%v` prints it.
        selector: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The union discriminator says one kind of selector, but that member is missing.
    #[error("unknown progressionProbe selector type: {0}")]
    UnknownSelector(&'static str),
    /// The union discriminator says one kind of assertion, but that member is missing.
    #[error("unknown progressionProbe assertion probe type: {0}")]
    UnknownAssertion(&'static str),
}

/// Evaluates `probes` (all of them, combined with boxcutter's `And`) on `object`.
///
/// With no probes the object passes: upstream always installs the (possibly empty) progress
/// probe, and an empty `And` is `True`.
///
/// Errors: a selector or assertion that cannot be built ([`ProbeError`]); upstream fails the
/// reconcile with the same text before probing anything.
pub fn evaluate(
    probes: &[ProgressionProbe],
    object: &Map<String, Value>,
) -> Result<ProbeResult, ProbeError> {
    let mut results = Vec::with_capacity(probes.len());
    for probe in probes {
        results.push(evaluate_one(probe, object)?);
    }
    Ok(and(results))
}

/// Checks that every probe can be built, without an object: lets a caller report a broken
/// probe once instead of per object.
pub fn validate(probes: &[ProgressionProbe]) -> Result<(), ProbeError> {
    let empty = Map::new();
    for probe in probes {
        selector_matches(&probe.selector, &empty)?;
        for assertion in &probe.assertions {
            assert_one(assertion, &empty)?;
        }
    }
    Ok(())
}

fn evaluate_one(
    probe: &ProgressionProbe,
    object: &Map<String, Value>,
) -> Result<ProbeResult, ProbeError> {
    // Build the assertions first, as upstream does, so a broken assertion is an error even when
    // the selector does not match this object.
    let mut assertions = Vec::with_capacity(probe.assertions.len());
    for assertion in &probe.assertions {
        assertions.push(assert_one(assertion, object)?);
    }
    let selected = selector_matches(&probe.selector, object)?;
    // boxcutter's ObservedGenerationProbe wraps the selector.
    if let Some(observed) =
        nested(object, &["status", "observedGeneration"]).and_then(Value::as_i64)
        && observed != generation(object)
    {
        return Ok(ProbeResult::new(
            ProbeStatus::Unknown,
            ".status outdated".to_string(),
        ));
    }
    if !selected {
        return Ok(ProbeResult::pass());
    }
    Ok(and(assertions))
}

/// boxcutter's `And`: `Unknown` if any is, else `False` if any is, else `True`; the messages
/// are those of the results with the deciding status.
pub fn and(results: Vec<ProbeResult>) -> ProbeResult {
    let mut by_status: BTreeMap<u8, Vec<String>> = BTreeMap::new();
    let mut seen_false = false;
    let mut seen_unknown = false;
    for r in results {
        let rank = match r.status {
            ProbeStatus::True => 0,
            ProbeStatus::False => {
                seen_false = true;
                1
            }
            ProbeStatus::Unknown => {
                seen_unknown = true;
                2
            }
        };
        by_status.entry(rank).or_default().extend(r.messages);
    }
    let (status, rank) = if seen_unknown {
        (ProbeStatus::Unknown, 2)
    } else if seen_false {
        (ProbeStatus::False, 1)
    } else {
        (ProbeStatus::True, 0)
    };
    ProbeResult {
        status,
        messages: by_status.remove(&rank).unwrap_or_default(),
    }
}

fn assert_one(
    assertion: &Assertion,
    object: &Map<String, Value>,
) -> Result<ProbeResult, ProbeError> {
    match assertion.type_ {
        ProbeType::ConditionEqual => match &assertion.condition_equal {
            Some(c) => Ok(condition_equal(object, &c.type_, &c.status)),
            None => Err(ProbeError::UnknownAssertion("ConditionEqual")),
        },
        ProbeType::FieldsEqual => match &assertion.fields_equal {
            Some(f) => Ok(fields_equal(object, &f.field_a, &f.field_b)),
            None => Err(ProbeError::UnknownAssertion("FieldsEqual")),
        },
        ProbeType::FieldValue => match &assertion.field_value {
            Some(f) => Ok(field_value(object, &f.field_path, &f.value)),
            None => Err(ProbeError::UnknownAssertion("FieldValue")),
        },
    }
}

fn selector_matches(
    selector: &ObjectSelector,
    object: &Map<String, Value>,
) -> Result<bool, ProbeError> {
    match selector.type_ {
        SelectorType::GroupKind => match &selector.group_kind {
            Some(gk) => {
                let (group, kind) = group_kind(object);
                Ok(gk.group == group && gk.kind == kind)
            }
            None => Err(ProbeError::UnknownSelector("GroupKind")),
        },
        SelectorType::Label => match &selector.label {
            Some(label) => label_selector_matches(label, &labels(object)),
            None => Err(ProbeError::UnknownSelector("Label")),
        },
    }
}

/// The object's API group (empty for the core group) and kind.
pub fn group_kind(object: &Map<String, Value>) -> (&str, &str) {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    (group, kind)
}

fn generation(object: &Map<String, Value>) -> i64 {
    nested(object, &["metadata", "generation"])
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn labels(object: &Map<String, Value>) -> BTreeMap<&str, &str> {
    nested(object, &["metadata", "labels"])
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v)))
                .collect()
        })
        .unwrap_or_default()
}

/// `metav1.LabelSelectorAsSelector` followed by `Matches`: every `matchLabels` pair and every
/// expression must hold; an empty selector matches everything.
///
/// Errors: an unknown operator, `In`/`NotIn` without values, `Exists`/`DoesNotExist` with values.
pub fn label_selector_matches(
    selector: &LabelSelector,
    labels: &BTreeMap<&str, &str>,
) -> Result<bool, ProbeError> {
    let invalid = |reason: String| ProbeError::InvalidLabelSelector {
        selector: label_selector_text(selector),
        reason,
    };
    let mut matched = true;
    if let Some(ml) = &selector.match_labels {
        for (k, v) in ml {
            if labels.get(k.as_str()) != Some(&v.as_str()) {
                matched = false;
            }
        }
    }
    for expr in selector.match_expressions.iter().flatten() {
        let values = expr.values.as_deref().unwrap_or(&[]);
        let present = labels.get(expr.key.as_str());
        let ok = match expr.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => {
                return Err(invalid(
                    "for 'in', 'notin' operators, values set can't be empty".to_string(),
                ));
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => {
                return Err(invalid(
                    "values set must be empty for exists and does not exist".to_string(),
                ));
            }
            "In" => present.is_some_and(|v| values.iter().any(|x| x == v)),
            "NotIn" => present.is_none_or(|v| values.iter().all(|x| x != v)),
            "Exists" => present.is_some(),
            "DoesNotExist" => present.is_none(),
            other => {
                return Err(invalid(format!(
                    "{other:?} is not a valid label selector operator"
                )));
            }
        };
        matched &= ok;
    }
    Ok(matched)
}

fn label_selector_text(selector: &LabelSelector) -> String {
    let labels = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}:{v}"))
        .collect::<Vec<_>>()
        .join(" ");
    let exprs = selector
        .match_expressions
        .iter()
        .flatten()
        .map(|e| {
            format!(
                "{{{} {} [{}]}}",
                e.key,
                e.operator,
                e.values.as_deref().unwrap_or(&[]).join(" ")
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    format!("{{map[{labels}] [{exprs}]}}")
}

fn nested<'a>(object: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    let mut v = object.get(*first)?;
    for key in rest {
        v = v.as_object()?.get(*key)?;
    }
    Some(v)
}

/// `unstructured.NestedFieldNoCopy`: `Ok(None)` when a key is missing, an error (Go's text)
/// when something on the way is not a map.
fn nested_field<'a>(
    object: &'a Map<String, Value>,
    path: &[&str],
) -> Result<Option<&'a Value>, String> {
    let mut current = object;
    for (i, key) in path.iter().enumerate() {
        let Some(v) = current.get(*key) else {
            return Ok(None);
        };
        if i + 1 == path.len() {
            return Ok(Some(v));
        }
        match v {
            Value::Object(m) => current = m,
            other => {
                return Err(format!(
                    ".{} accessor error: {} is of the type {}, expected map[string]interface{{}}",
                    path[..=i].join("."),
                    go_value(other),
                    go_type(other)
                ));
            }
        }
    }
    Ok(None)
}

/// Go's `%v` of a decoded JSON value.
fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(go_value).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => format!(
            "map[{}]",
            m.iter()
                .map(|(k, v)| format!("{k}:{}", go_value(v)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

/// Go's `%T` of a decoded JSON value (unstructured decodes integers as int64).
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn go_json(v: &Value) -> String {
    let mut out = String::new();
    // json.Marshal writes map keys sorted.
    olm_goenc::json::write_value_html(&mut out, &olm_goenc::json::sort_keys(v));
    out
}

fn split_path(path: &str) -> Vec<&str> {
    path.trim_matches('.').split('.').collect()
}

/// boxcutter's `ConditionProbe`: the condition of `type_` exists, is not outdated, and has
/// `status`.
pub fn condition_equal(object: &Map<String, Value>, type_: &str, status: &str) -> ProbeResult {
    let conditions = match nested_field(object, &["status", "conditions"]) {
        Ok(Some(c)) => c,
        _ => {
            return ProbeResult::new(ProbeStatus::Unknown, "missing .status.conditions".into());
        }
    };
    let Some(conditions) = conditions.as_array() else {
        return ProbeResult::new(ProbeStatus::Unknown, "malformed .status.conditions".into());
    };
    for cond in conditions {
        let Some(cond) = cond.as_object() else {
            return ProbeResult::new(ProbeStatus::Unknown, "malformed .status.conditions".into());
        };
        if cond.get("type").and_then(Value::as_str) != Some(type_) {
            continue;
        }
        if let Some(observed) = cond.get("observedGeneration").and_then(Value::as_i64)
            && observed != generation(object)
        {
            return ProbeResult::new(
                ProbeStatus::Unknown,
                format!(".status.condition[\"{type_}\"] outdated"),
            );
        }
        return match cond.get("status") {
            Some(Value::String(s)) if s == status => ProbeResult::new(
                ProbeStatus::True,
                format!(".status.condition[\"{type_}\"] is {status}"),
            ),
            other => ProbeResult::new(
                ProbeStatus::False,
                format!(".status.condition[\"{type_}\"] is {}", go_s(other)),
            ),
        };
    }
    ProbeResult::new(
        ProbeStatus::Unknown,
        format!("missing .status.condition[\"{type_}\"]"),
    )
}

/// Go's `%s` of an `interface{}` holding a decoded JSON value.
fn go_s(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "%!s(<nil>)".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => format!("%!s(bool={b})"),
        Some(Value::Number(n)) if n.is_f64() => format!("%!s(float64={n})"),
        Some(Value::Number(n)) => format!("%!s(int64={n})"),
        Some(other) => go_value(other),
    }
}

/// boxcutter's `FieldsEqualProbe`: both fields exist and hold equal values.
pub fn fields_equal(object: &Map<String, Value>, field_a: &str, field_b: &str) -> ProbeResult {
    let Ok(Some(a)) = nested_field(object, &split_path(field_a)) else {
        return ProbeResult::new(ProbeStatus::False, format!("\"{field_a}\" missing"));
    };
    let Ok(Some(b)) = nested_field(object, &split_path(field_b)) else {
        return ProbeResult::new(ProbeStatus::False, format!("\"{field_b}\" missing"));
    };
    if a != b {
        return ProbeResult::new(
            ProbeStatus::False,
            format!(
                "\"{field_a}\" != \"{field_b}\" expected: {} got: {}",
                go_json(a),
                go_json(b)
            ),
        );
    }
    ProbeResult::new(ProbeStatus::True, format!("\"{field_a}\" == \"{field_b}\""))
}

/// boxcutter's `FieldValueProbe`: the field exists and is the string `value`.
pub fn field_value(object: &Map<String, Value>, field_path: &str, value: &str) -> ProbeResult {
    let q = olm_goenc::quote(field_path);
    let found = match nested_field(object, &split_path(field_path)) {
        Err(e) => {
            return ProbeResult::new(ProbeStatus::False, format!("error locating key {q}; {e}"));
        }
        Ok(None) => return ProbeResult::new(ProbeStatus::False, format!("missing key: {q}")),
        Ok(Some(found)) => found,
    };
    let vq = olm_goenc::quote(value);
    if found.as_str() != Some(value) {
        return ProbeResult::new(
            ProbeStatus::False,
            format!(
                "value at key {q} != {vq}; expected: {} got: {}",
                go_json(&Value::String(value.to_string())),
                go_json(found)
            ),
        );
    }
    ProbeResult::new(ProbeStatus::True, format!("value at key {q} == {vq}"))
}
