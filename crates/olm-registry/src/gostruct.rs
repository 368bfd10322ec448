//! JSON re-written as Go's `encoding/json` writes a struct it was decoded into: fields in the
//! struct's declaration order, unknown ones dropped, `omitempty` ones left out when empty, the
//! others written even when absent (as their zero value). The CSV parts a stub CSV is made of
//! (operator-framework/api `v1alpha1`) are described here as [`Shape`]s.

use serde_json::{Map, Value};

/// How a Go value is written.
#[derive(Debug)]
pub enum Shape {
    /// A string.
    Str,
    /// A bool.
    Bool,
    /// An integer.
    Int,
    /// `json.RawMessage` or `interface{}`: as read.
    Raw,
    /// A slice of the inner shape.
    List(&'static Shape),
    /// A struct.
    Struct(&'static [Field]),
}

/// One struct field: its JSON name, whether it is `omitempty`, and its shape.
#[derive(Debug)]
pub struct Field(pub &'static str, pub bool, pub &'static Shape);

const DESCRIPTOR: Shape = Shape::Struct(&[
    Field("path", false, &Shape::Str),
    Field("displayName", true, &Shape::Str),
    Field("description", true, &Shape::Str),
    Field("x-descriptors", true, &Shape::List(&Shape::Str)),
    Field("value", true, &Shape::Raw),
]);

const RESOURCE: Shape = Shape::Struct(&[
    Field("name", false, &Shape::Str),
    Field("kind", false, &Shape::Str),
    Field("version", false, &Shape::Str),
]);

const CRD_DESCRIPTION: Shape = Shape::Struct(&[
    Field("name", false, &Shape::Str),
    Field("version", false, &Shape::Str),
    Field("kind", false, &Shape::Str),
    Field("displayName", true, &Shape::Str),
    Field("description", true, &Shape::Str),
    Field("resources", true, &Shape::List(&RESOURCE)),
    Field("statusDescriptors", true, &Shape::List(&DESCRIPTOR)),
    Field("specDescriptors", true, &Shape::List(&DESCRIPTOR)),
    Field("actionDescriptors", true, &Shape::List(&DESCRIPTOR)),
]);

const APISERVICE_DESCRIPTION: Shape = Shape::Struct(&[
    Field("name", false, &Shape::Str),
    Field("group", false, &Shape::Str),
    Field("version", false, &Shape::Str),
    Field("kind", false, &Shape::Str),
    Field("deploymentName", true, &Shape::Str),
    Field("containerPort", true, &Shape::Int),
    Field("displayName", true, &Shape::Str),
    Field("description", true, &Shape::Str),
    Field("resources", true, &Shape::List(&RESOURCE)),
    Field("statusDescriptors", true, &Shape::List(&DESCRIPTOR)),
    Field("specDescriptors", true, &Shape::List(&DESCRIPTOR)),
    Field("actionDescriptors", true, &Shape::List(&DESCRIPTOR)),
]);

/// `CustomResourceDefinitions`.
pub const CRDS: Shape = Shape::Struct(&[
    Field("owned", true, &Shape::List(&CRD_DESCRIPTION)),
    Field("required", true, &Shape::List(&CRD_DESCRIPTION)),
]);

/// `APIServiceDefinitions`.
pub const APISERVICES: Shape = Shape::Struct(&[
    Field("owned", true, &Shape::List(&APISERVICE_DESCRIPTION)),
    Field("required", true, &Shape::List(&APISERVICE_DESCRIPTION)),
]);

/// `[]metav1.GroupVersionKind`.
pub const GVKS: Shape = Shape::List(&Shape::Struct(&[
    Field("group", false, &Shape::Str),
    Field("version", false, &Shape::Str),
    Field("kind", false, &Shape::Str),
]));

/// `[]Maintainer`.
pub const MAINTAINERS: Shape = Shape::List(&Shape::Struct(&[
    Field("name", true, &Shape::Str),
    Field("email", true, &Shape::Str),
]));

/// `AppLink`.
pub const APP_LINK: Shape = Shape::Struct(&[
    Field("name", true, &Shape::Str),
    Field("url", true, &Shape::Str),
]);

/// `[]AppLink`.
pub const APP_LINKS: Shape = Shape::List(&APP_LINK);

/// `[]InstallMode`.
pub const INSTALL_MODES: Shape = Shape::List(&Shape::Struct(&[
    Field("type", false, &Shape::Str),
    Field("supported", false, &Shape::Bool),
]));

/// `[]string`.
pub const STRINGS: Shape = Shape::List(&Shape::Str);

/// Whether Go's `omitempty` leaves `v` out (false, 0, "", an empty or nil slice, nil).
pub fn is_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => !b,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        // A struct is never empty to `omitempty`; a map is when it has no keys.
        Some(Value::Object(_)) => false,
    }
}

/// `v` (absent: `None`) as Go writes a value of `shape` decoded from it.
pub fn shape(v: Option<&Value>, s: &Shape) -> Value {
    match s {
        Shape::Str => match v {
            Some(Value::String(x)) => Value::String(x.clone()),
            _ => Value::String(String::new()),
        },
        Shape::Bool => Value::Bool(matches!(v, Some(Value::Bool(true)))),
        Shape::Int => match v {
            Some(Value::Number(n)) => Value::Number(n.clone()),
            _ => Value::from(0),
        },
        Shape::Raw => v.cloned().unwrap_or(Value::Null),
        Shape::List(inner) => match v {
            Some(Value::Array(items)) => {
                Value::Array(items.iter().map(|i| shape(Some(i), inner)).collect())
            }
            _ => Value::Null,
        },
        Shape::Struct(fields) => {
            let mut out = Map::new();
            for Field(name, omit, inner) in *fields {
                let field = v.and_then(|v| v.get(*name));
                if *omit && is_empty(field) {
                    continue;
                }
                out.insert((*name).to_owned(), shape(field, inner));
            }
            Value::Object(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A CRD description read with sorted keys is written in Go's field order, empty optional
    /// fields dropped, unknown ones dropped, missing required ones as zero values.
    #[test]
    fn crd_descriptions_in_field_order() {
        let read = json!({"owned": [{
            "description": "", "displayName": "Etcd", "extra": 1, "kind": "EtcdCluster",
            "name": "etcdclusters.etcd.database.coreos.com",
            "specDescriptors": [{"path": "size", "x-descriptors": ["a"], "value": {"b": 1}}],
        }]});
        let written = shape(Some(&read), &CRDS);
        assert_eq!(
            serde_json::to_string(&written).unwrap(),
            r#"{"owned":[{"name":"etcdclusters.etcd.database.coreos.com","version":"","kind":"EtcdCluster","displayName":"Etcd","specDescriptors":[{"path":"size","x-descriptors":["a"],"value":{"b":1}}]}]}"#
        );
        assert_eq!(shape(None, &CRDS), json!({}));
        assert_eq!(
            shape(
                Some(&json!([{"supported": true, "type": "OwnNamespace"}])),
                &INSTALL_MODES
            ),
            json!([{"type": "OwnNamespace", "supported": true}])
        );
    }
}
