//! Blobs of schemas OLM does not interpret, kept for `ExperimentalListPackageCustomSchemas`:
//! by (schema, package), each as a `google.protobuf.Struct`.

use std::collections::BTreeMap;

use olm_catalog::Catalog;
use prost_types::value::Kind;
use serde_json::Value;

use crate::registry::CustomMeta;

/// The custom-schema blobs of a catalog.
#[derive(Debug, Default)]
pub struct Metas {
    by_key: BTreeMap<(String, String), Vec<prost_types::Struct>>,
}

/// Whether `s` is a valid schema or package name for the query
/// (`^[a-zA-Z0-9][a-zA-Z0-9._-]*$`).
fn valid(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A JSON value as a protobuf `Value`.
fn value(v: &Value) -> prost_types::Value {
    let kind = match v {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or_default()),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(a) => Kind::ListValue(prost_types::ListValue {
            values: a.iter().map(value).collect(),
        }),
        Value::Object(o) => Kind::StructValue(structure(o)),
    };
    prost_types::Value { kind: Some(kind) }
}

fn structure(o: &serde_json::Map<String, Value>) -> prost_types::Struct {
    prost_types::Struct {
        fields: o.iter().map(|(k, v)| (k.clone(), value(v))).collect(),
    }
}

/// The custom-schema blobs of `catalog` whose schema and package are valid names (others
/// cannot be asked for).
pub fn collect(catalog: &Catalog) -> Vec<CustomMeta> {
    catalog
        .others()
        .filter(|m| valid(&m.schema) && valid(&m.package))
        .filter_map(|m| match serde_json::from_str::<Value>(m.blob.get()) {
            Ok(Value::Object(o)) => Some(CustomMeta {
                schema: m.schema.clone(),
                package: m.package.clone(),
                blob: Some(structure(&o)),
            }),
            _ => None,
        })
        .collect()
}

/// A custom schema query naming a schema or package that cannot be one, in upstream's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid custom schema query: invalid {what} {}: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]*$",
    olm_goenc::quote(.value)
)]
pub struct InvalidQuery {
    /// `schema` or `package`.
    pub what: &'static str,
    /// What was asked for.
    pub value: String,
}

impl Metas {
    /// The blobs of a registry, by schema and package.
    pub fn new(list: &[CustomMeta]) -> Metas {
        let mut by_key: BTreeMap<(String, String), Vec<prost_types::Struct>> = BTreeMap::new();
        for m in list {
            by_key
                .entry((m.schema.clone(), m.package.clone()))
                .or_default()
                .push(m.blob.clone().unwrap_or_default());
        }
        Metas { by_key }
    }

    /// The blobs of `schema` in `package`.
    ///
    /// # Errors
    ///
    /// An invalid schema or package name, in upstream's words.
    pub fn list(
        &self,
        schema: &str,
        package: &str,
    ) -> Result<Vec<prost_types::Struct>, InvalidQuery> {
        for (what, s) in [("schema", schema), ("package", package)] {
            if !valid(s) {
                return Err(InvalidQuery {
                    what,
                    value: s.to_owned(),
                });
            }
        }
        Ok(self
            .by_key
            .get(&(schema.to_owned(), package.to_owned()))
            .cloned()
            .unwrap_or_default())
    }
}
