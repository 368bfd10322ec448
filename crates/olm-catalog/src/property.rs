//! Bundle, package and channel properties (`{type, value}`), their typed forms, and parsing with
//! operator-registry's error texts.
//!
//! A [`Property`] keeps its value as canonical raw JSON: most consumers never look inside
//! (`olm.csv.metadata` values are large), so values are decoded only on request with [`Property::parse`].

use std::fmt;

use olm_goenc::json::{Kind, UnmarshalTypeError};
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::model::Key;

/// A bundle's package, version and release.
pub const TYPE_PACKAGE: &str = "olm.package";
/// An API (group, version, kind) a bundle provides.
pub const TYPE_GVK: &str = "olm.gvk";
/// A package (in a version range) a bundle depends on.
pub const TYPE_PACKAGE_REQUIRED: &str = "olm.package.required";
/// An API a bundle depends on.
pub const TYPE_GVK_REQUIRED: &str = "olm.gvk.required";
/// One manifest of the bundle, base64 encoded (the older form of a bundle's CSV in a catalog).
pub const TYPE_BUNDLE_OBJECT: &str = "olm.bundle.object";
/// The CSV's metadata shown by catalog browsers (the newer form).
pub const TYPE_CSV_METADATA: &str = "olm.csv.metadata";
/// A generic dependency: a GVK, a package, a CEL rule or a combination of them.
pub const TYPE_CONSTRAINT: &str = "olm.constraint";
/// A free-form label on a bundle.
pub const TYPE_LABEL: &str = "olm.label";
/// The channel a bundle is in (used by older tooling).
pub const TYPE_CHANNEL: &str = "olm.channel";
/// Marks a bundle deprecated (the older form of `olm.deprecations`).
pub const TYPE_DEPRECATED: &str = "olm.deprecated";
/// The newest OpenShift version a bundle may run on.
pub const TYPE_MAX_OPENSHIFT_VERSION: &str = "olm.maxOpenShiftVersion";
/// The bundle's format (`registry+v1`, `plain+v0`, …).
pub const TYPE_BUNDLE_MEDIATYPE: &str = "olm.bundle.mediatype";

/// Largest accepted `olm.constraint` value (operator-framework/api `constraints.Parse`).
pub const MAX_CONSTRAINT_SIZE: usize = 2 << 16;

/// One `{type, value}` property. `value` is canonical JSON.
#[derive(Clone, Debug)]
pub struct Property {
    /// The `type` field, which decides how `value` reads.
    pub type_: String,
    /// The value, as canonical JSON.
    pub value: Box<RawValue>,
}

impl PartialEq for Property {
    fn eq(&self, o: &Self) -> bool {
        self.type_ == o.type_ && self.value.get() == o.value.get()
    }
}

impl Property {
    /// Builds a property from a serialisable value (canonicalised).
    pub fn new<T: Serialize>(type_: &str, value: &T) -> Self {
        let text = serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned());
        let canon = crate::canonical::canonicalize_json(&text).unwrap_or(text);
        let value = RawValue::from_string(canon).unwrap_or_else(|_| null_raw());
        Property {
            type_: type_.to_owned(),
            value,
        }
    }

    /// Decodes the value into its typed form; unknown types become [`TypedProperty::Other`].
    /// The error text is Go's `json.Unmarshal` message where it matters for upstream parity.
    pub fn parse(&self) -> Result<TypedProperty, String> {
        let raw = self.value.get();
        Ok(match self.type_.as_str() {
            TYPE_PACKAGE => TypedProperty::Package(decode(raw, "property.Package")?),
            TYPE_GVK => TypedProperty::Gvk(decode(raw, "property.GVK")?),
            TYPE_GVK_REQUIRED => TypedProperty::GvkRequired(decode(raw, "property.GVKRequired")?),
            TYPE_PACKAGE_REQUIRED => {
                TypedProperty::PackageRequired(decode(raw, "property.PackageRequired")?)
            }
            TYPE_BUNDLE_OBJECT => {
                TypedProperty::BundleObject(decode(raw, "property.BundleObject")?)
            }
            TYPE_CSV_METADATA => {
                check_go_struct(raw, "property.CSVMetadata", CSV_METADATA_FIELDS)?;
                TypedProperty::CsvMetadata(crate::model::RawJson(self.value.clone()))
            }
            TYPE_CONSTRAINT => TypedProperty::Constraint(Constraint::parse(raw)?),
            TYPE_LABEL => TypedProperty::Label(decode(raw, "property.Label")?),
            TYPE_CHANNEL => TypedProperty::Channel(decode(raw, "property.Channel")?),
            TYPE_DEPRECATED => TypedProperty::Deprecated,
            TYPE_MAX_OPENSHIFT_VERSION => match serde_json::from_str::<Value>(raw) {
                Ok(Value::String(s)) => TypedProperty::MaxOpenShiftVersion(s),
                _ => TypedProperty::Other(self.clone()),
            },
            TYPE_BUNDLE_MEDIATYPE => match serde_json::from_str::<Value>(raw) {
                Ok(Value::String(s)) => TypedProperty::BundleMediatype(s),
                _ => TypedProperty::Other(self.clone()),
            },
            _ => TypedProperty::Other(self.clone()),
        })
    }
}

/// `{}`, a stand-in for a property value that is no longer needed.
pub(crate) fn empty_object_raw() -> Box<RawValue> {
    RawValue::from_string("{}".to_owned()).unwrap_or_else(|_| null_raw())
}

pub(crate) fn null_raw() -> Box<RawValue> {
    RawValue::NULL.to_owned()
}

impl Serialize for Property {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Property", 2)?;
        st.serialize_field("type", &self.type_)?;
        st.serialize_field("value", &self.value)?;
        st.end()
    }
}

impl<'de> Deserialize<'de> for Property {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Property;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a property object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Property, A::Error> {
                let mut type_ = String::new();
                let mut value = None;
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    if key.0.eq_ignore_ascii_case("type") {
                        if let Some(t) = map.next_value::<Option<String>>()? {
                            type_ = t;
                        }
                    } else if key.0.eq_ignore_ascii_case("value") {
                        value = Some(map.next_value::<Box<RawValue>>()?);
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(Property {
                    type_,
                    value: value.unwrap_or_else(null_raw),
                })
            }
        }
        d.deserialize_map(V)
    }
}

/// A property decoded by type.
#[derive(Clone, Debug, PartialEq)]
pub enum TypedProperty {
    /// [`TYPE_PACKAGE`].
    Package(PackageProperty),
    /// [`TYPE_GVK`].
    Gvk(Gvk),
    /// [`TYPE_GVK_REQUIRED`].
    GvkRequired(Gvk),
    /// [`TYPE_PACKAGE_REQUIRED`].
    PackageRequired(PackageRequired),
    /// [`TYPE_BUNDLE_OBJECT`].
    BundleObject(BundleObject),
    /// The value, checked to have the `CSVMetadata` shape; see [`CsvMetadata`] to build one.
    CsvMetadata(crate::model::RawJson),
    /// [`TYPE_CONSTRAINT`].
    Constraint(Constraint),
    /// [`TYPE_LABEL`].
    Label(Label),
    /// [`TYPE_CHANNEL`].
    Channel(ChannelProperty),
    /// [`TYPE_DEPRECATED`]; its value carries nothing.
    Deprecated,
    /// [`TYPE_MAX_OPENSHIFT_VERSION`], the version as written.
    MaxOpenShiftVersion(String),
    /// [`TYPE_BUNDLE_MEDIATYPE`], the media type as written.
    BundleMediatype(String),
    /// Any other type, or a known type whose value does not have the expected shape.
    Other(Property),
}

/// `olm.package`: the bundle's package and version (strict semver), and optional release.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageProperty {
    /// The package the bundle belongs to.
    #[serde(rename = "packageName", default)]
    pub package_name: String,
    /// The bundle's version, as written.
    #[serde(default)]
    pub version: String,
    /// The release, as written; empty when absent.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub release: String,
}

/// `olm.gvk` / `olm.gvk.required`.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Gvk {
    /// The API group; empty for the core group.
    #[serde(default)]
    pub group: String,
    /// The kind.
    #[serde(default)]
    pub kind: String,
    /// The API version within the group.
    #[serde(default)]
    pub version: String,
}

/// `olm.package.required`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageRequired {
    /// The package depended on.
    #[serde(rename = "packageName", default)]
    pub package_name: String,
    /// The acceptable versions, a blang/semver range as written.
    #[serde(rename = "versionRange", default)]
    pub version_range: String,
}

/// `olm.bundle.object`: one manifest, base64 encoded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleObject {
    /// The manifest, base64 encoded.
    #[serde(default)]
    pub data: String,
}

impl BundleObject {
    /// The decoded manifest bytes (YAML or JSON).
    pub fn decode(&self) -> Result<Vec<u8>, base64::DecodeError> {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.decode(self.data.as_bytes())
    }
}

/// `olm.label`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Label {
    /// The label text.
    #[serde(default)]
    pub label: String,
}

/// `olm.channel` property (internal use).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelProperty {
    /// The channel's name.
    #[serde(rename = "channelName", default)]
    pub channel_name: String,
}

/// `olm.constraint`: a failure message and exactly one constraint body.
#[derive(Clone, Debug, PartialEq)]
pub struct Constraint {
    /// `failureMessage`: what resolution reports when the constraint is not met; may be empty.
    pub failure_message: String,
    /// What must hold.
    pub body: ConstraintBody,
}

/// The one body of an `olm.constraint`.
#[derive(Clone, Debug, PartialEq)]
pub enum ConstraintBody {
    /// `gvk`: some bundle provides this API.
    Gvk(Gvk),
    /// `package`: some bundle of this package, in the range, is installed.
    Package(PackageRequired),
    /// `cel`: a CEL rule over a candidate bundle's properties.
    Cel {
        /// The CEL expression.
        rule: String,
    },
    /// `all`: every inner constraint holds.
    All(Vec<Constraint>),
    /// `any`: at least one inner constraint holds.
    Any(Vec<Constraint>),
    /// `not`: no inner constraint holds.
    Not(Vec<Constraint>),
    /// Deprecated alias of `not`.
    None(Vec<Constraint>),
}

impl Constraint {
    /// Parses strictly (unknown fields rejected, size-limited), like operator-framework/api.
    pub fn parse(raw: &str) -> Result<Constraint, String> {
        if raw.len() > MAX_CONSTRAINT_SIZE {
            return Err(format!(
                "olm.constraint value is greater than max constraint size {MAX_CONSTRAINT_SIZE} bytes"
            ));
        }
        let v: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
        Self::from_value(&v)
    }

    fn from_value(v: &Value) -> Result<Constraint, String> {
        let obj = v
            .as_object()
            .ok_or_else(|| "json: cannot unmarshal into constraint: not an object".to_owned())?;
        let mut failure_message = String::new();
        let mut body = None;
        let mut bodies = 0;
        for (k, val) in obj {
            let lk = k.to_ascii_lowercase();
            let parsed = match lk.as_str() {
                "failuremessage" => {
                    failure_message = val.as_str().unwrap_or_default().to_owned();
                    continue;
                }
                "gvk" => ConstraintBody::Gvk(
                    serde_json::from_value(val.clone()).map_err(|e| e.to_string())?,
                ),
                "package" => ConstraintBody::Package(
                    serde_json::from_value(val.clone()).map_err(|e| e.to_string())?,
                ),
                "cel" => {
                    let rule = val
                        .get("rule")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    ConstraintBody::Cel { rule }
                }
                "all" | "any" | "not" | "none" => {
                    let list = val
                        .get("constraints")
                        .and_then(Value::as_array)
                        .map(|a| {
                            a.iter()
                                .map(Self::from_value)
                                .collect::<Result<Vec<_>, _>>()
                        })
                        .transpose()?
                        .unwrap_or_default();
                    match lk.as_str() {
                        "all" => ConstraintBody::All(list),
                        "any" => ConstraintBody::Any(list),
                        "not" => ConstraintBody::Not(list),
                        _ => ConstraintBody::None(list),
                    }
                }
                _ => return Err(format!("json: unknown field {}", olm_goenc::quote(k))),
            };
            bodies += 1;
            body = Some(parsed);
        }
        match (bodies, body) {
            (1, Some(body)) => Ok(Constraint {
                failure_message,
                body,
            }),
            (0, _) => {
                Err("constraint must have exactly one constraint type set, found none".to_owned())
            }
            _ => Err("constraint must have exactly one constraint type set".to_owned()),
        }
    }
}

/// Builder for an `olm.csv.metadata` value from a ClusterServiceVersion (JSON), as the
/// `bundle-object-to-csv-metadata` migration and registry+v1 rendering do.
pub struct CsvMetadata;

/// The shape of the Go types `olm.csv.metadata` is built from (operator-framework/api), enough to
/// reproduce `encoding/json`: unknown fields dropped, `omitempty` fields dropped when empty.
enum GoType {
    Scalar,
    /// A `bool` field: its zero value is `false`, not `""`.
    Bool,
    List(&'static GoType),
    Obj(&'static [(&'static str, bool, GoType)]),
}

use GoType::{Bool, List, Obj, Scalar};

const DESCRIPTOR: GoType = Obj(&[
    ("path", false, Scalar),
    ("displayName", true, Scalar),
    ("description", true, Scalar),
    ("x-descriptors", true, Scalar),
    ("value", true, Scalar),
]);
const RESOURCE: GoType = Obj(&[
    ("name", false, Scalar),
    ("kind", false, Scalar),
    ("version", false, Scalar),
]);
const CRD_DESCRIPTION: GoType = Obj(&[
    ("name", false, Scalar),
    ("version", false, Scalar),
    ("kind", false, Scalar),
    ("displayName", true, Scalar),
    ("description", true, Scalar),
    ("resources", true, List(&RESOURCE)),
    ("statusDescriptors", true, List(&DESCRIPTOR)),
    ("specDescriptors", true, List(&DESCRIPTOR)),
    ("actionDescriptors", true, List(&DESCRIPTOR)),
]);
const API_SERVICE_DESCRIPTION: GoType = Obj(&[
    ("name", false, Scalar),
    ("group", false, Scalar),
    ("version", false, Scalar),
    ("kind", false, Scalar),
    ("deploymentName", true, Scalar),
    ("containerPort", true, Scalar),
    ("displayName", true, Scalar),
    ("description", true, Scalar),
    ("resources", true, List(&RESOURCE)),
    ("statusDescriptors", true, List(&DESCRIPTOR)),
    ("specDescriptors", true, List(&DESCRIPTOR)),
    ("actionDescriptors", true, List(&DESCRIPTOR)),
]);
const OWNED_REQUIRED_CRDS: GoType = Obj(&[
    ("owned", true, List(&CRD_DESCRIPTION)),
    ("required", true, List(&CRD_DESCRIPTION)),
]);
const OWNED_REQUIRED_APIS: GoType = Obj(&[
    ("owned", true, List(&API_SERVICE_DESCRIPTION)),
    ("required", true, List(&API_SERVICE_DESCRIPTION)),
]);
const INSTALL_MODE: GoType = Obj(&[("type", false, Scalar), ("supported", false, Bool)]);
const APP_LINK: GoType = Obj(&[("name", true, Scalar), ("url", true, Scalar)]);
const MAINTAINER: GoType = Obj(&[("name", true, Scalar), ("email", true, Scalar)]);
const GVK_TYPE: GoType = Obj(&[
    ("group", false, Scalar),
    ("version", false, Scalar),
    ("kind", false, Scalar),
]);

/// Re-shapes a value like a Go decode + encode of the given type.
fn go_shape(v: &Value, ty: &GoType) -> Value {
    match (ty, v) {
        // Go maps and decoded YAML come out with sorted keys; only struct fields keep declaration order.
        (Scalar | Bool, v) => olm_goenc::json::sort_keys(v),
        (List(item), Value::Array(a)) => {
            Value::Array(a.iter().map(|x| go_shape(x, item)).collect())
        }
        (Obj(fields), Value::Object(m)) => {
            let mut out = serde_json::Map::new();
            for (name, omitempty, sub) in fields.iter() {
                let found = m
                    .iter()
                    .find(|(k, _)| k.as_str() == *name)
                    .or_else(|| m.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)));
                match found {
                    Some((_, x)) => {
                        let x = go_shape(x, sub);
                        if !(*omitempty && olm_goenc::json::omitted_when_empty(&x)) {
                            out.insert((*name).to_owned(), x);
                        }
                    }
                    None if !*omitempty => {
                        out.insert((*name).to_owned(), zero(sub));
                    }
                    None => {}
                }
            }
            Value::Object(out)
        }
        (_, other) => other.clone(),
    }
}

fn zero(ty: &GoType) -> Value {
    match ty {
        Scalar => Value::String(String::new()),
        Bool => Value::Bool(false),
        List(_) => Value::Null,
        Obj(_) => Value::Object(Default::default()),
    }
}

impl CsvMetadata {
    /// Picks the metadata fields out of a CSV and shapes them as operator-registry's `CSVMetadata`
    /// struct encodes them: `apiServiceDefinitions`, `crdDescriptions` and `provider` are always
    /// present (Go structs are never "empty"), other fields are omitted when empty, unknown
    /// sub-fields are dropped.
    pub fn from_csv(csv: &Value) -> Value {
        let mut out = serde_json::Map::new();
        let meta = csv.get("metadata");
        let spec = csv.get("spec");
        let mut put = |key: &str, v: Option<&Value>, ty: &GoType, always: bool| match v
            .map(|v| go_shape(v, ty))
        {
            Some(v) if !olm_goenc::json::omitted_when_empty(&v) => {
                out.insert(key.to_owned(), v);
            }
            _ if always => {
                out.insert(key.to_owned(), Value::Object(Default::default()));
            }
            _ => {}
        };
        let sp = |f: &str| spec.and_then(|s| s.get(f));
        put(
            "annotations",
            meta.and_then(|m| m.get("annotations")),
            &Scalar,
            false,
        );
        put(
            "apiServiceDefinitions",
            sp("apiservicedefinitions"),
            &OWNED_REQUIRED_APIS,
            true,
        );
        put(
            "crdDescriptions",
            sp("customresourcedefinitions"),
            &OWNED_REQUIRED_CRDS,
            true,
        );
        put("description", sp("description"), &Scalar, false);
        put("displayName", sp("displayName"), &Scalar, false);
        put(
            "installModes",
            sp("installModes"),
            &List(&INSTALL_MODE),
            false,
        );
        put("keywords", sp("keywords"), &Scalar, false);
        put("labels", meta.and_then(|m| m.get("labels")), &Scalar, false);
        put("links", sp("links"), &List(&APP_LINK), false);
        put("maintainers", sp("maintainers"), &List(&MAINTAINER), false);
        put("maturity", sp("maturity"), &Scalar, false);
        put("minKubeVersion", sp("minKubeVersion"), &Scalar, false);
        put("nativeAPIs", sp("nativeAPIs"), &List(&GVK_TYPE), false);
        put("provider", sp("provider"), &APP_LINK, true);
        Value::Object(out)
    }

    /// The `olm.csv.metadata` property for a CSV, its value in the byte order opm produces (struct
    /// fields in declaration order, map keys sorted), which `opm render -o json` shows as is.
    pub fn property(csv: &Value) -> Property {
        let mut text = String::new();
        olm_goenc::json::write_value(&mut text, &Self::from_csv(csv));
        Property {
            type_: TYPE_CSV_METADATA.to_owned(),
            value: RawValue::from_string(text).unwrap_or_else(|_| null_raw()),
        }
    }
}

// ---- Go-compatible decoding errors ------------------------------------------------------------------

#[derive(Clone, Copy)]
enum GoKind {
    String,
    Map,
    Slice,
    Struct,
}

const CSV_METADATA_FIELDS: &[(&str, &str, GoKind)] = &[
    ("annotations", "map[string]string", GoKind::Map),
    (
        "apiServiceDefinitions",
        "v1alpha1.APIServiceDefinitions",
        GoKind::Struct,
    ),
    (
        "crdDescriptions",
        "v1alpha1.CustomResourceDefinitions",
        GoKind::Struct,
    ),
    ("description", "string", GoKind::String),
    ("displayName", "string", GoKind::String),
    ("installModes", "[]v1alpha1.InstallMode", GoKind::Slice),
    ("keywords", "[]string", GoKind::Slice),
    ("labels", "map[string]string", GoKind::Map),
    ("links", "[]v1alpha1.AppLink", GoKind::Slice),
    ("maintainers", "[]v1alpha1.Maintainer", GoKind::Slice),
    ("maturity", "string", GoKind::String),
    ("minKubeVersion", "string", GoKind::String),
    ("nativeAPIs", "[]v1.GroupVersionKind", GoKind::Slice),
    ("provider", "v1alpha1.AppLink", GoKind::Struct),
];

/// A field value's kind and, for objects, the kind of the first non-string member value.
struct Shape(Kind, Option<Kind>);

struct KindOnly(Kind);

impl<'de> Deserialize<'de> for KindOnly {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShapeVisitor { members: false })
            .map(|s| KindOnly(s.0))
    }
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShapeVisitor { members: true })
    }
}

struct ShapeVisitor {
    members: bool,
}

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Shape;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_unit<E>(self) -> Result<Shape, E> {
        Ok(Shape(Kind::Null, None))
    }
    fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
        Ok(Shape(Kind::Bool, None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
        Ok(Shape(Kind::Number, None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
        Ok(Shape(Kind::Number, None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
        Ok(Shape(Kind::Number, None))
    }
    fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
        Ok(Shape(Kind::String, None))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Shape, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Shape(Kind::Array, None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let mut bad = None;
        while map.next_key::<IgnoredAny>()?.is_some() {
            if self.members {
                let k = map.next_value::<KindOnly>()?.0;
                if bad.is_none() && k != Kind::String && k != Kind::Null {
                    bad = Some(k);
                }
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(Shape(Kind::Object, bad))
    }
}

/// Top-level fields of an object with their shapes.
struct Fields<'a>(Vec<(std::borrow::Cow<'a, str>, Shape)>);

impl<'de> Deserialize<'de> for Fields<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Fields<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = map.next_key::<Key<'de>>()? {
                    out.push((k.0, map.next_value::<Shape>()?));
                }
                Ok(Fields(out))
            }
        }
        d.deserialize_map(V)
    }
}

fn kind_ok(k: Kind, want: GoKind) -> bool {
    matches!(
        (k, want),
        (Kind::Null, _)
            | (Kind::String, GoKind::String)
            | (Kind::Object, GoKind::Map | GoKind::Struct)
            | (Kind::Array, GoKind::Slice)
    )
}

/// Checks a value against the shape of a Go struct (only the listed top-level fields), producing
/// `json: cannot unmarshal X into Go value of type T` / `... into Go struct field S.f of type T`,
/// without materialising the (possibly large) value.
fn check_go_struct(
    raw: &str,
    go_type: &str,
    fields: &[(&str, &str, GoKind)],
) -> Result<(), String> {
    let obj: Fields = match serde_json::from_str(raw) {
        Ok(f) => f,
        Err(e) => {
            // Not an object (or not JSON): report its kind as Go does.
            let top: Shape = serde_json::from_str(raw).map_err(|_| e.to_string())?;
            return match top.0 {
                Kind::Null => Ok(()),
                other => Err(UnmarshalTypeError::value(other, go_type).to_string()),
            };
        }
    };
    let short = go_type.rsplit('.').next().unwrap_or(go_type);
    for (k, shape) in &obj.0 {
        let Some((name, ty, kind)) = fields.iter().find(|(n, _, _)| n.eq_ignore_ascii_case(k))
        else {
            continue;
        };
        if !kind_ok(shape.0, *kind) {
            return Err(UnmarshalTypeError::field(shape.0, short, *name, *ty).to_string());
        }
        if let (GoKind::Map, Some(bad)) = (kind, shape.1) {
            return Err(UnmarshalTypeError::field(bad, short, *name, "string").to_string());
        }
    }
    Ok(())
}

/// Decodes a small typed property with Go-like, case-insensitive field matching and Go's error texts.
fn decode<T: for<'de> Deserialize<'de> + Default + Serialize>(
    raw: &str,
    go_type: &str,
) -> Result<T, String> {
    let v: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
    let obj = match v {
        Value::Object(o) => o,
        Value::Null => return Ok(T::default()),
        other => {
            return Err(UnmarshalTypeError::value(Kind::of(&other), go_type).to_string());
        }
    };
    let names: &[&str] = match go_type {
        "property.Package" => &["packageName", "version", "release"],
        "property.GVK" | "property.GVKRequired" => &["group", "kind", "version"],
        "property.PackageRequired" => &["packageName", "versionRange"],
        "property.BundleObject" => &["data"],
        "property.Label" => &["label"],
        "property.Channel" => &["channelName"],
        _ => &[],
    };
    let short = go_type.rsplit('.').next().unwrap_or(go_type);
    let mut norm = serde_json::Map::new();
    for (k, val) in obj {
        let Some(name) = names
            .iter()
            .find(|n| n.eq_ignore_ascii_case(&k))
            .map(|n| n.to_string())
        else {
            continue;
        };
        match val {
            Value::Null => {}
            Value::String(_) => {
                norm.insert(name, val);
            }
            other => {
                return Err(
                    UnmarshalTypeError::field(Kind::of(&other), short, name, "string").to_string(),
                );
            }
        }
    }
    serde_json::from_value(Value::Object(norm)).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prop(t: &str, v: &str) -> Property {
        Property {
            type_: t.to_owned(),
            value: RawValue::from_string(v.to_owned()).unwrap(),
        }
    }

    #[test]
    fn package_property_parses_case_insensitively() {
        let p = prop(TYPE_PACKAGE, r#"{"PackageName":"foo","version":"1.0.0"}"#);
        assert_eq!(
            p.parse().unwrap(),
            TypedProperty::Package(PackageProperty {
                package_name: "foo".into(),
                version: "1.0.0".into(),
                release: String::new()
            })
        );
    }

    #[test]
    fn wrong_types_give_go_messages() {
        let p = prop(TYPE_PACKAGE, r#""foo""#);
        assert_eq!(
            p.parse().unwrap_err(),
            "json: cannot unmarshal string into Go value of type property.Package"
        );
        let p = prop(TYPE_PACKAGE, r#"{"packageName":1}"#);
        assert_eq!(
            p.parse().unwrap_err(),
            "json: cannot unmarshal number into Go struct field Package.packageName of type string"
        );
        let p = prop(TYPE_CSV_METADATA, r#"{"displayName":[]}"#);
        assert_eq!(
            p.parse().unwrap_err(),
            "json: cannot unmarshal array into Go struct field CSVMetadata.displayName of type string"
        );
    }

    #[test]
    fn constraint_parses_nested_and_rejects_unknown() {
        let p = prop(
            TYPE_CONSTRAINT,
            r#"{"failureMessage":"x","any":{"constraints":[{"gvk":{"group":"g","kind":"K","version":"v1"}},{"package":{"packageName":"p","versionRange":">=1.0.0"}}]}}"#,
        );
        match p.parse().unwrap() {
            TypedProperty::Constraint(c) => {
                assert_eq!(c.failure_message, "x");
                assert!(matches!(c.body, ConstraintBody::Any(ref l) if l.len() == 2));
            }
            other => panic!("{other:?}"),
        }
        assert!(prop(TYPE_CONSTRAINT, r#"{"bogus":{}}"#).parse().is_err());
    }

    /// Go writes a missing `bool` field as `false` (its zero value), never as `""`.
    #[test]
    fn csv_metadata_install_mode_without_supported_is_false() {
        let csv = serde_json::json!({"spec": {"installModes": [{"type": "OwnNamespace"}]}});
        let mut text = String::new();
        olm_goenc::json::write_value(&mut text, &CsvMetadata::from_csv(&csv)["installModes"]);
        assert_eq!(text, r#"[{"type":"OwnNamespace","supported":false}]"#);
    }

    #[test]
    fn unknown_types_are_kept() {
        let p = prop("custom.thing", r#"{"a":1}"#);
        assert_eq!(p.parse().unwrap(), TypedProperty::Other(p.clone()));
    }
}
