//! A tiny builder for the OpenAPI v3 schemas of our CRDs.
//!
//! The schemas are written next to the types (one function per type) instead of being derived:
//! the API server's behaviour depends on every `required`, `default`, limit and CEL rule, and a
//! derive adds things the API server does not expect from these CRDs (`nullable`, `anyOf`), so the
//! schema is spelled out and `tests/schema_matches_types.rs` keeps it and the types in step.

use olm_k8s::ConditionStatus::{False, True, Unknown};
use olm_k8s::{CONDITION_REASON_PATTERN, CONDITION_TYPE_PATTERN};
use serde_json::{Map, Value, json};

/// One schema node under construction.
#[derive(Debug, Clone)]
pub struct S(Map<String, Value>);

/// An object with the given properties (in the order given; output is sorted).
pub fn object(props: Vec<(&str, S)>) -> S {
    let mut properties = Map::new();
    let mut sorted = props;
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    for (name, schema) in sorted {
        properties.insert(name.to_string(), schema.into_value());
    }
    let mut s = S::empty();
    s.0.insert("properties".into(), Value::Object(properties));
    s.0.insert("type".into(), json!("object"));
    s
}

/// A string.
pub fn string() -> S {
    S::empty().set("type", json!("string"))
}

/// A string limited to `values`.
pub fn enumeration(values: &[&str]) -> S {
    string().set("enum", json!(values))
}

/// An integer of the given format (`int32` or `int64`).
pub fn integer(format: &str) -> S {
    S::empty()
        .set("format", json!(format))
        .set("type", json!("integer"))
}

/// An integer without a declared format (Go `*int`).
pub fn plain_integer() -> S {
    S::empty().set("type", json!("integer"))
}

/// An RFC 3339 timestamp (`metav1.Time`).
pub fn date_time() -> S {
    string().set("format", json!("date-time"))
}

/// An array of `items`.
pub fn array(items: S) -> S {
    S::empty()
        .set("items", items.into_value())
        .set("type", json!("array"))
}

/// An object with no further schema (`metadata`, which the API server validates itself).
pub fn plain_object() -> S {
    S::empty().set("type", json!("object"))
}

/// An object whose content the API server keeps as given.
pub fn free_object() -> S {
    S::empty()
        .set("type", json!("object"))
        .set("x-kubernetes-preserve-unknown-fields", json!(true))
}

impl S {
    fn empty() -> S {
        S(Map::new())
    }

    fn set(mut self, key: &str, value: Value) -> S {
        self.0.insert(key.to_string(), value);
        self
    }

    /// The description shown by `kubectl explain`.
    pub fn doc(self, text: &str) -> S {
        self.set("description", json!(text.trim()))
    }
    /// Fields that must be present.
    pub fn required(self, fields: &[&str]) -> S {
        self.set("required", json!(fields))
    }
    /// The value the API server fills in when the field is absent.
    pub fn default_value(self, value: Value) -> S {
        self.set("default", value)
    }
    /// `maxLength`.
    pub fn max_len(self, n: u64) -> S {
        self.set("maxLength", json!(n))
    }
    /// `minLength`.
    pub fn min_len(self, n: u64) -> S {
        self.set("minLength", json!(n))
    }
    /// `minimum`.
    pub fn min(self, n: i64) -> S {
        self.set("minimum", json!(n))
    }
    /// `maximum`.
    pub fn max(self, n: i64) -> S {
        self.set("maximum", json!(n))
    }
    /// `maxItems`.
    pub fn max_items(self, n: u64) -> S {
        self.set("maxItems", json!(n))
    }
    /// `minItems`.
    pub fn min_items(self, n: u64) -> S {
        self.set("minItems", json!(n))
    }
    /// `minProperties`.
    pub fn min_properties(self, n: u64) -> S {
        self.set("minProperties", json!(n))
    }
    /// A regular-expression `pattern`.
    pub fn pattern(self, re: &str) -> S {
        self.set("pattern", json!(re))
    }
    /// A CEL rule and the message the API server reports when it is false.
    pub fn cel(mut self, rule: &str, message: &str) -> S {
        let entry = json!({"message": message, "rule": rule});
        match self.0.get_mut("x-kubernetes-validations") {
            Some(Value::Array(rules)) => rules.push(entry),
            _ => {
                self.0
                    .insert("x-kubernetes-validations".into(), json!([entry]));
            }
        }
        self
    }
    /// A list merged by the given keys (`x-kubernetes-list-type: map`).
    pub fn list_map(self, keys: &[&str]) -> S {
        self.set("x-kubernetes-list-map-keys", json!(keys))
            .set("x-kubernetes-list-type", json!("map"))
    }
    /// A list replaced as a whole on merge.
    pub fn atomic_list(self) -> S {
        self.set("x-kubernetes-list-type", json!("atomic"))
    }
    /// A map replaced as a whole on merge.
    pub fn atomic_map(self) -> S {
        self.set("x-kubernetes-map-type", json!("atomic"))
    }
    /// A whole embedded Kubernetes object (apiVersion, kind, metadata checked by the server).
    pub fn embedded_resource(self) -> S {
        self.set("x-kubernetes-embedded-resource", json!(true))
    }
    /// `additionalProperties` for a map.
    pub fn additional(self, values: S) -> S {
        self.set("additionalProperties", values.into_value())
    }

    /// The schema as JSON, keys sorted as `controller-gen` emits them.
    pub fn into_value(self) -> Value {
        let mut entries: Vec<(String, Value)> = self.0.into_iter().collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Value::Object(entries.into_iter().collect())
    }
}

/// `self.matches("<re>")` with the regex quoted for CEL.
pub fn matches(re: &str) -> String {
    format!("self.matches({})", cel_string(re))
}

/// A CEL double-quoted string literal.
pub fn cel_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `metav1.Condition` as the API server validates it.
pub fn condition() -> S {
    object(vec![
        (
            "lastTransitionTime",
            date_time().doc("lastTransitionTime is the last time the condition transitioned from one status to another."),
        ),
        (
            "message",
            string()
                .max_len(32768)
                .doc("message is a human readable message indicating details about the transition. This may be an empty string."),
        ),
        (
            "observedGeneration",
            integer("int64")
                .min(0)
                .doc("observedGeneration is the .metadata.generation that the condition was set based upon."),
        ),
        (
            "reason",
            string()
                .max_len(1024)
                .min_len(1)
                .pattern(CONDITION_REASON_PATTERN)
                .doc("reason contains a programmatic identifier indicating the reason for the condition's last transition."),
        ),
        (
            "status",
            enumeration(&[True.as_str(), False.as_str(), Unknown.as_str()])
                .doc("status of the condition, one of True, False, Unknown."),
        ),
        (
            "type",
            string()
                .max_len(316)
                .pattern(CONDITION_TYPE_PATTERN)
                .doc("type of condition in CamelCase or in foo.example.com/CamelCase."),
        ),
    ])
    .required(&["lastTransitionTime", "message", "reason", "status", "type"])
    .doc("Condition contains details for one aspect of the current state of this API Resource.")
}

/// A list of conditions keyed by type.
pub fn conditions(doc: &str) -> S {
    array(condition()).list_map(&["type"]).doc(doc)
}

/// `metav1.LabelSelector`.
pub fn label_selector() -> S {
    let requirement = object(vec![
        (
            "key",
            string().doc("key is the label key that the selector applies to."),
        ),
        (
            "operator",
            string().doc("operator represents a key's relationship to a set of values. Valid operators are In, NotIn, Exists and DoesNotExist."),
        ),
        (
            "values",
            array(string()).atomic_list().doc(
                "values is an array of string values. If the operator is In or NotIn, the values array must be non-empty. \
                 If the operator is Exists or DoesNotExist, the values array must be empty.",
            ),
        ),
    ])
    .required(&["key", "operator"])
    .doc("A label selector requirement is a selector that contains values, a key, and an operator that relates the key and values.");
    object(vec![
        (
            "matchExpressions",
            array(requirement)
                .atomic_list()
                .doc("matchExpressions is a list of label selector requirements. The requirements are ANDed."),
        ),
        (
            "matchLabels",
            S::empty()
                .set("type", json!("object"))
                .additional(string())
                .doc("matchLabels is a map of {key,value} pairs, each equivalent to an In requirement with a single value. The requirements are ANDed."),
        ),
    ])
    .atomic_map()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cel_strings_escape_backslashes_and_quotes() {
        assert_eq!(matches(r"^a\.b$"), r#"self.matches("^a\\.b$")"#);
        assert_eq!(cel_string("\"x\""), r#""\"x\"""#);
    }

    #[test]
    fn rules_accumulate_in_order() {
        let v = string().cel("a", "first").cel("b", "second").into_value();
        assert_eq!(
            v["x-kubernetes-validations"],
            json!([{"message": "first", "rule": "a"}, {"message": "second", "rule": "b"}])
        );
    }
}
