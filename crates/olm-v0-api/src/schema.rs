//! OpenAPI schemas of the types, shaped as `controller-gen` shapes them for a CRD.
//!
//! schemars derives the structure (properties, types, formats, required fields) from the Rust
//! types, and k8s-openapi's `schemars` feature gives the embedded Kubernetes types theirs. What a
//! derive cannot see is added here:
//!
//! - The markers of the Kubernetes Go types (`+listType`, `+listMapKey`, `+mapType`,
//!   `+structType`, `+default`, kubebuilder validations), which `controller-gen` turns into
//!   `x-kubernetes-*` keys, defaults and limits and which k8s-openapi does not carry: the table in
//!   [`crate::k8s_markers`], applied by definition name.
//! - `controller-gen`'s fixed schemas for some types: `IntOrString` and `Quantity` as
//!   `anyOf: [integer, string]` with `x-kubernetes-int-or-string` (and Quantity's pattern), and an
//!   embedded `ObjectMeta` as a bare `type: object` (the API server checks metadata itself).
//! - Optional fields as plain schemas: schemars describes `Option<T>` as "T or null", while a
//!   CRD leaves the field out of `required` and does not accept null.
//!
//! Everything is inlined (a CRD schema cannot use `$ref`); keys written beside a `$ref` win over
//! the referenced schema's, which is how a field's description, and a type that narrows another
//! (`ConditionOverride`), are expressed.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value, json};

use crate::k8s_markers::{Lit, MARKERS, Marker};

/// Go `int` (no `format` in the CRD, unlike `int32` and `int64`).
pub(crate) fn go_int(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "integer"})
}

/// Go `json.RawMessage`, which `controller-gen` declares a base64 string.
pub(crate) fn raw_json(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "format": "byte"})
}

/// The pattern `controller-gen` gives every `resource.Quantity`.
const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Nesting beyond this means a recursive type, which a CRD schema cannot express.
const MAX_DEPTH: usize = 64;

/// Why a schema could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// A `$ref` names no definition.
    #[error("schema reference {0:?} names no definition")]
    UnknownReference(String),
    /// The schema uses a keyword a CRD schema cannot hold.
    #[error("schema keyword {0:?} has no place in a CRD schema")]
    Unsupported(String),
    /// The type refers to itself.
    #[error(
        "schema nesting deeper than {MAX_DEPTH} levels at {0:?}: a recursive type cannot be a CRD schema"
    )]
    TooDeep(String),
}

/// The CRD schema of `T`.
pub(crate) fn crd_schema<T: JsonSchema>() -> Result<Value, SchemaError> {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| s.meta_schema = None)
        .into_generator();
    let mut root = generator.into_root_schema_for::<T>().to_value();
    let defs = match root.as_object_mut().and_then(|o| o.remove("$defs")) {
        Some(Value::Object(defs)) => defs,
        _ => Map::new(),
    };
    Shaper { defs: &defs }.shape(&root, None, 0)
}

struct Shaper<'a> {
    defs: &'a Map<String, Value>,
}

impl Shaper<'_> {
    /// `node` inlined and shaped; `def` is the Kubernetes definition it is the body of, if any.
    fn shape(&self, node: &Value, def: Option<&str>, depth: usize) -> Result<Value, SchemaError> {
        if depth > MAX_DEPTH {
            return Err(SchemaError::TooDeep(def.unwrap_or_default().to_owned()));
        }
        let Value::Object(obj) = node else {
            // `true` (anything): only reachable through types this crate does not embed.
            return Ok(json!({"x-kubernetes-preserve-unknown-fields": true}));
        };
        if let Some(Value::String(reference)) = obj.get("$ref") {
            let name = reference.trim_start_matches("#/$defs/");
            let body = self
                .defs
                .get(name)
                .ok_or_else(|| SchemaError::UnknownReference(reference.clone()))?;
            let mut out = self.shape(body, Some(name), depth + 1)?;
            let mut siblings = obj.clone();
            siblings.remove("$ref");
            let siblings = self.shape(&Value::Object(siblings), None, depth + 1)?;
            merge_over(&mut out, siblings);
            return Ok(out);
        }
        // `Option<T>` where T is a reference: `anyOf: [T, {type: null}]`.
        if let Some(Value::Array(branches)) = obj.get("anyOf") {
            let non_null: Vec<&Value> = branches.iter().filter(|b| !is_null_type(b)).collect();
            if non_null.len() == 1 && branches.len() == 2 {
                let mut out = self.shape(non_null[0], None, depth + 1)?;
                let mut siblings = obj.clone();
                siblings.remove("anyOf");
                let siblings = self.shape(&Value::Object(siblings), None, depth + 1)?;
                merge_over(&mut out, siblings);
                return Ok(out);
            }
        }
        if def == Some(OBJECT_META) {
            return Ok(json!({"type": "object"}));
        }
        // A Rust enum whose variants have docs: `oneOf` one constant each, which a CRD writes as
        // `enum`.
        if let Some(values) = obj.get("oneOf").and_then(constant_branches) {
            let mut rest = obj.clone();
            rest.remove("oneOf");
            rest.insert("type".into(), json!("string"));
            rest.insert("enum".into(), Value::Array(values));
            return self.shape(&Value::Object(rest), def, depth + 1);
        }

        let mut out = Map::new();
        for (key, value) in obj {
            match key.as_str() {
                "$schema" | "title" | "examples" => {}
                "default" if value.is_null() => {}
                "type" => {
                    out.insert(key.clone(), without_null_type(value));
                }
                "properties" => {
                    let Value::Object(props) = value else {
                        continue;
                    };
                    let mut shaped = Map::new();
                    for (name, prop) in props {
                        let mut p = self.shape(prop, None, depth + 1)?;
                        if let Some(def) = def {
                            apply_markers(&mut p, def, name);
                        }
                        shaped.insert(name.clone(), p);
                    }
                    if !shaped.is_empty() {
                        out.insert(key.clone(), Value::Object(shaped));
                    }
                }
                "items" | "additionalProperties" if value.is_object() => {
                    out.insert(key.clone(), self.shape(value, None, depth + 1)?);
                }
                "anyOf" | "allOf" | "oneOf" => {
                    let Value::Array(branches) = value else {
                        continue;
                    };
                    let shaped = branches
                        .iter()
                        .map(|b| self.shape(b, None, depth + 1))
                        .collect::<Result<Vec<_>, _>>()?;
                    out.insert(key.clone(), Value::Array(shaped));
                }
                "required" if value.as_array().is_some_and(Vec::is_empty) => {}
                "const" => {
                    out.insert("enum".into(), json!([value]));
                }
                k if KEPT.contains(&k) || k.starts_with("x-kubernetes-") => {
                    out.insert(key.clone(), value.clone());
                }
                // Anything else would be dropped without a word when the schema becomes a
                // `JSONSchemaProps`.
                k => return Err(SchemaError::Unsupported(k.to_owned())),
            }
        }
        let mut out = Value::Object(out);
        if let Some(def) = def {
            apply_markers(&mut out, def, "");
        }
        if def == Some(QUANTITY) {
            set(&mut out, "pattern", json!(QUANTITY_PATTERN));
        }
        if out.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
            && out.get("anyOf").is_none()
        {
            set(
                &mut out,
                "anyOf",
                json!([{"type": "integer"}, {"type": "string"}]),
            );
        }
        Ok(out)
    }
}

/// Keys kept as they are; everything a CRD schema may hold that needs no shaping.
const KEPT: &[&str] = &[
    "description",
    "format",
    "enum",
    "default",
    "pattern",
    "maxLength",
    "minLength",
    "minimum",
    "maximum",
    "maxItems",
    "minItems",
    "maxProperties",
    "minProperties",
    "required",
    "nullable",
    "uniqueItems",
];

/// The constants of `oneOf` branches that are each one string constant.
fn constant_branches(branches: &Value) -> Option<Vec<Value>> {
    branches
        .as_array()?
        .iter()
        .map(|b| match b.get("const") {
            Some(c @ Value::String(_)) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

fn is_null_type(v: &Value) -> bool {
    v.get("type") == Some(&json!("null"))
}

/// `["string", "null"]` → `"string"`.
fn without_null_type(t: &Value) -> Value {
    match t {
        Value::Array(types) => {
            let rest: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
            match rest.as_slice() {
                [one] => (*one).clone(),
                _ => Value::Array(rest.into_iter().cloned().collect()),
            }
        }
        other => other.clone(),
    }
}

fn set(v: &mut Value, key: &str, value: Value) {
    if let Value::Object(o) = v {
        o.insert(key.to_owned(), value);
    }
}

/// Keys of `over` replace those of `base`.
fn merge_over(base: &mut Value, over: Value) {
    if let (Value::Object(base), Value::Object(over)) = (base, over) {
        for (k, v) in over {
            base.insert(k, v);
        }
    }
}

/// The markers of `def`'s field `field` ("" for the type itself) applied to `schema`.
fn apply_markers(schema: &mut Value, def: &str, field: &str) {
    for (_, _, marker) in MARKERS.iter().filter(|(d, f, _)| *d == def && *f == field) {
        let (key, value) = match marker {
            Marker::ListType(t) => ("x-kubernetes-list-type", json!(t)),
            Marker::ListMapKeys(keys) => ("x-kubernetes-list-map-keys", json!(keys)),
            Marker::MapType(t) => ("x-kubernetes-map-type", json!(t)),
            Marker::Default(Lit::Str(s)) => ("default", json!(s)),
            Marker::Default(Lit::Bool(b)) => ("default", json!(b)),
            Marker::Pattern(p) => ("pattern", json!(p)),
            Marker::MaxLength(n) => ("maxLength", json!(n)),
            Marker::MinLength(n) => ("minLength", json!(n)),
            Marker::Minimum(n) => ("minimum", json!(n)),
            Marker::Enum(values) => ("enum", json!(values)),
            Marker::Required([]) => {
                if let Value::Object(o) = schema {
                    o.remove("required");
                }
                continue;
            }
            Marker::Required(fields) => ("required", json!(fields)),
        };
        set(schema, key, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Sample {
        /// Required.
        a: String,
        /// Optional.
        b: Option<i32>,
        c: Option<k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
        d: Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
        e: k8s_openapi::api::core::v1::PodTemplateSpec,
    }

    #[test]
    fn options_are_plain_optional_fields() {
        let s = crd_schema::<Sample>().unwrap();
        assert_eq!(s["required"], json!(["a", "e"]));
        assert_eq!(s["properties"]["b"]["type"], json!("integer"));
        assert_eq!(s["properties"]["b"]["format"], json!("int32"));
        assert!(s["properties"]["b"].get("anyOf").is_none());
    }

    #[test]
    fn int_or_string_and_quantity_take_controller_gen_shape() {
        let s = crd_schema::<Sample>().unwrap();
        let either = json!([{"type": "integer"}, {"type": "string"}]);
        assert_eq!(s["properties"]["c"]["anyOf"], either);
        assert_eq!(s["properties"]["d"]["anyOf"], either);
        assert_eq!(s["properties"]["d"]["pattern"], json!(QUANTITY_PATTERN));
    }

    #[test]
    fn embedded_metadata_is_a_bare_object_and_markers_apply() {
        let s = crd_schema::<Sample>().unwrap();
        let template = &s["properties"]["e"]["properties"];
        assert_eq!(template["metadata"]["type"], json!("object"));
        assert!(template["metadata"].get("properties").is_none());
        let ports = &template["spec"]["properties"]["containers"]["items"]["properties"]["ports"];
        assert_eq!(ports["x-kubernetes-list-type"], json!("map"));
        assert_eq!(
            ports["x-kubernetes-list-map-keys"],
            json!(["containerPort", "protocol"])
        );
        assert_eq!(
            ports["items"]["properties"]["protocol"]["default"],
            json!("TCP")
        );
    }
}
