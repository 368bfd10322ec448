//! The Go types opm decodes catalog blobs into, as far as they decide `encoding/json`'s type
//! errors, so that a blob of the wrong shape is reported as opm reports it:
//! `json: cannot unmarshal array into Go struct field ChannelEntry.entries.replaces of type string`.
//!
//! Only the error path uses this: decoding itself is the typed serde code in [`crate::model`].

use olm_goenc::json::{Kind, UnmarshalTypeError};
use serde_json::Value;

/// A Go struct: its type as `reflect` prints it (`declcfg.ChannelEntry`) and its JSON fields.
struct Struct {
    go_type: &'static str,
    fields: &'static [(&'static str, Type)],
}

impl Struct {
    fn short(&self) -> &'static str {
        self.go_type.rsplit('.').next().unwrap_or(self.go_type)
    }
}

/// The Go type of a field.
enum Type {
    String,
    /// `[]byte`: a base64 string.
    Bytes,
    Strings,
    /// `json.RawMessage`: anything.
    Raw,
    Struct(&'static Struct),
    Slice(&'static Struct),
}

const PROPERTY: Struct = Struct {
    go_type: "property.Property",
    fields: &[("type", Type::String), ("value", Type::Raw)],
};
const ICON: Struct = Struct {
    go_type: "declcfg.Icon",
    fields: &[("base64data", Type::Bytes), ("mediatype", Type::String)],
};
const PACKAGE: Struct = Struct {
    go_type: "declcfg.Package",
    fields: &[
        ("schema", Type::String),
        ("name", Type::String),
        ("defaultChannel", Type::String),
        ("icon", Type::Struct(&ICON)),
        ("description", Type::String),
        ("properties", Type::Slice(&PROPERTY)),
    ],
};
const CHANNEL_ENTRY: Struct = Struct {
    go_type: "declcfg.ChannelEntry",
    fields: &[
        ("name", Type::String),
        ("replaces", Type::String),
        ("skips", Type::Strings),
        ("skipRange", Type::String),
    ],
};
const CHANNEL: Struct = Struct {
    go_type: "declcfg.Channel",
    fields: &[
        ("schema", Type::String),
        ("package", Type::String),
        ("name", Type::String),
        ("entries", Type::Slice(&CHANNEL_ENTRY)),
        ("properties", Type::Slice(&PROPERTY)),
    ],
};
const RELATED_IMAGE: Struct = Struct {
    go_type: "declcfg.RelatedImage",
    fields: &[("name", Type::String), ("image", Type::String)],
};
const BUNDLE: Struct = Struct {
    go_type: "declcfg.Bundle",
    fields: &[
        ("schema", Type::String),
        ("name", Type::String),
        ("package", Type::String),
        ("image", Type::String),
        ("properties", Type::Slice(&PROPERTY)),
        ("relatedImages", Type::Slice(&RELATED_IMAGE)),
    ],
};
const REFERENCE: Struct = Struct {
    go_type: "declcfg.PackageScopedReference",
    fields: &[("schema", Type::String), ("name", Type::String)],
};
const DEPRECATION_ENTRY: Struct = Struct {
    go_type: "declcfg.DeprecationEntry",
    fields: &[
        ("reference", Type::Struct(&REFERENCE)),
        ("message", Type::String),
    ],
};
const DEPRECATION: Struct = Struct {
    go_type: "declcfg.Deprecation",
    fields: &[
        ("schema", Type::String),
        ("package", Type::String),
        ("entries", Type::Slice(&DEPRECATION_ENTRY)),
    ],
};

/// The first type error Go's decoder meets in the blob `canon` of `schema` (keys in the
/// canonical, sorted order opm decodes them in), if any.
pub(crate) fn first_type_error(schema: &str, canon: &str) -> Option<UnmarshalTypeError> {
    let top = match schema {
        crate::model::SCHEMA_PACKAGE => &PACKAGE,
        crate::model::SCHEMA_CHANNEL => &CHANNEL,
        crate::model::SCHEMA_BUNDLE => &BUNDLE,
        crate::model::SCHEMA_DEPRECATIONS => &DEPRECATION,
        _ => return None,
    };
    match serde_json::from_str::<Value>(canon).ok()? {
        Value::Object(o) => check_struct(&o, top, ""),
        _ => None,
    }
}

/// `path` is the dotted JSON path of `obj` below the top-level blob ("" at the top).
fn check_struct(
    obj: &serde_json::Map<String, Value>,
    s: &Struct,
    path: &str,
) -> Option<UnmarshalTypeError> {
    for (key, value) in obj {
        // Go matches field names ignoring case and reports them as declared.
        let Some((name, ty)) = s.fields.iter().find(|(n, _)| n.eq_ignore_ascii_case(key)) else {
            continue;
        };
        let field = if path.is_empty() {
            (*name).to_owned()
        } else {
            format!("{path}.{name}")
        };
        // A value of the wrong kind is reported against the struct holding the field.
        let wrong = |v: &Value, go_type: &str| {
            UnmarshalTypeError::field(Kind::of(v), s.short(), &field, go_type)
        };
        let found = match (ty, value) {
            (_, Value::Null) | (Type::Raw, _) => None,
            (Type::String | Type::Bytes, Value::String(_)) => None,
            (Type::String, _) => Some(wrong(value, "string")),
            (Type::Bytes, _) => Some(wrong(value, "[]uint8")),
            (Type::Strings, Value::Array(items)) => items
                .iter()
                .find(|i| !matches!(i, Value::String(_) | Value::Null))
                .map(|i| wrong(i, "string")),
            (Type::Strings, _) => Some(wrong(value, "[]string")),
            (Type::Struct(inner), Value::Object(o)) => check_struct(o, inner, &field),
            (Type::Struct(inner), _) => Some(wrong(value, inner.go_type)),
            (Type::Slice(inner), Value::Array(items)) => items.iter().find_map(|i| match i {
                Value::Object(o) => check_struct(o, inner, &field),
                Value::Null => None,
                other => Some(wrong(other, inner.go_type)),
            }),
            (Type::Slice(inner), _) => Some(wrong(value, &format!("[]{}", inner.go_type))),
        };
        if found.is_some() {
            return found;
        }
    }
    None
}
