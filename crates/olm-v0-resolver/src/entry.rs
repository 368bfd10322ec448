//! What the resolver knows of a bundle: a catalog's bundle as the registry API lists it, or a CSV
//! already in the namespace (upstream's `cache.Entry`, `newOperatorFromBundle`,
//! `newEntryFromV1Alpha1CSV`).

use olm_version::blang::{Range, Version};
use serde_json::Value;

use olm_v0::ApiKey;
use olm_v0_api::v1alpha1::ClusterServiceVersion;

/// The name of the virtual catalog that holds a namespace's CSVs.
pub const EXISTING: &str = "@existing";
/// Property type of a bundle's package and version.
pub const PACKAGE_TYPE: &str = "olm.package";
/// Property type of a provided API.
pub const GVK_TYPE: &str = "olm.gvk";
/// Property type of a bundle's label.
pub const LABEL_TYPE: &str = "olm.label";
/// Property type marking a bundle deprecated.
pub const DEPRECATED_TYPE: &str = "olm.deprecated";
/// The CSV annotation holding a bundle's properties (upstream's projection key).
pub const PROPERTIES_ANNOTATION: &str = "operatorframework.io/properties";

/// A catalog: a CatalogSource's name and namespace, or a namespace's virtual `@existing`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SourceKey {
    /// Name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
}

impl SourceKey {
    /// A CatalogSource's key.
    pub fn new(name: &str, namespace: &str) -> SourceKey {
        SourceKey {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
        }
    }

    /// The namespace's installed CSVs.
    pub fn existing(namespace: &str) -> SourceKey {
        SourceKey::new(EXISTING, namespace)
    }

    /// Whether this is a namespace's installed CSVs rather than a catalog.
    pub fn is_virtual(&self) -> bool {
        self.name == EXISTING
    }
}

impl std::fmt::Display for SourceKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.name, self.namespace)
    }
}

/// A property: its type and its value as JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Property {
    /// `olm.package`, `olm.gvk`, `olm.constraint`, …
    pub kind: String,
    /// The value, JSON text.
    pub value: String,
}

impl Property {
    /// A property from its type and JSON text.
    pub fn new(kind: &str, value: impl Into<String>) -> Property {
        Property {
            kind: kind.to_owned(),
            value: value.into(),
        }
    }

    /// The value parsed, when it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.value).ok()
    }
}

/// What the predicates read of an entry's properties, parsed once: resolution tests every
/// entry of every catalog against each dependency, and parsing property JSON each time made a
/// 50,000-bundle resolution take seconds.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// `olm.package` properties: package name and version text.
    pub packages: Vec<(String, String)>,
    /// `olm.gvk` properties: group, version, kind.
    pub gvks: Vec<(String, String, String)>,
    /// `olm.label` properties' labels.
    pub labels: Vec<String>,
}

impl Parsed {
    fn of(properties: &[Property]) -> Parsed {
        let mut parsed = Parsed::default();
        let field = |v: &Value, k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        for p in properties {
            let wanted = matches!(p.kind.as_str(), PACKAGE_TYPE | GVK_TYPE | LABEL_TYPE);
            let Some(v) = wanted.then(|| p.json()).flatten() else {
                continue;
            };
            match p.kind.as_str() {
                PACKAGE_TYPE => parsed
                    .packages
                    .push((field(&v, "packageName"), field(&v, "version"))),
                GVK_TYPE => {
                    parsed
                        .gvks
                        .push((field(&v, "group"), field(&v, "version"), field(&v, "kind")))
                }
                _ => parsed.labels.push(field(&v, "label")),
            }
        }
        parsed
    }
}

/// A bundle the resolver can choose.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    /// The CSV's name.
    pub name: String,
    /// The bundle it replaces.
    pub replaces: String,
    /// The bundles it skips.
    pub skips: Vec<String>,
    /// Its `olm.skipRange`, when it parses.
    pub skip_range: Option<Range>,
    /// Its version, parsed tolerantly; `None` when it does not parse.
    pub version: Option<Version>,
    /// APIs it provides.
    pub provided_apis: Vec<ApiKey>,
    /// APIs it requires.
    pub required_apis: Vec<ApiKey>,
    /// Its properties, including those derived for dependencies.
    pub properties: Vec<Property>,
    /// Its bundle image; empty when its content comes inline.
    pub bundle_path: String,
    /// Its package (empty for a CSV whose package is unknown).
    pub package: String,
    /// Its channel (empty for a CSV in the namespace).
    pub channel: String,
    /// Whether its channel is its package's default.
    pub default_channel: bool,
    /// Where it comes from.
    pub catalog: SourceKey,
    /// For an installed CSV, the Subscription whose `installedCSV` it is.
    pub subscription: Option<String>,
    /// Its properties parsed, filled on first use.
    pub parsed: std::sync::OnceLock<Parsed>,
}

impl Entry {
    /// What the predicates read of its properties.
    pub fn parsed(&self) -> &Parsed {
        self.parsed.get_or_init(|| Parsed::of(&self.properties))
    }

    /// Whether a property of this type is present.
    pub fn has_property(&self, kind: &str) -> bool {
        self.properties.iter().any(|p| p.kind == kind)
    }

    /// The packages named by its `olm.package` properties.
    pub fn package_names(&self) -> impl Iterator<Item = &str> + '_ {
        self.parsed().packages.iter().map(|(name, _)| name.as_str())
    }
}

/// A bundle as the registry API's `ListBundles` gives it, already out of protobuf.
#[derive(Debug, Clone, Default)]
pub struct RegistryBundle {
    /// `csvName`.
    pub csv_name: String,
    /// `packageName`.
    pub package: String,
    /// `channelName`.
    pub channel: String,
    /// `bundlePath`.
    pub bundle_path: String,
    /// `version`.
    pub version: String,
    /// `skipRange`.
    pub skip_range: String,
    /// `replaces`.
    pub replaces: String,
    /// `skips`.
    pub skips: Vec<String>,
    /// `providedApis`.
    pub provided_apis: Vec<ApiKey>,
    /// `requiredApis`.
    pub required_apis: Vec<ApiKey>,
    /// `dependencies` (legacy), type and value.
    pub dependencies: Vec<Property>,
    /// `properties`.
    pub properties: Vec<Property>,
}

/// A catalog bundle as the resolver sees it (upstream's `newOperatorFromBundle`): properties
/// synthesised from provided APIs when the bundle lists none, legacy dependencies translated to
/// `*.required` properties, else required APIs as `olm.gvk.required`.
pub fn from_registry(
    bundle: RegistryBundle,
    catalog: &SourceKey,
    default_channel: &str,
) -> Result<Entry, EntryError> {
    let mut properties = bundle.properties;
    if properties.is_empty() {
        properties = provided_properties(&bundle.provided_apis);
    }
    if bundle.dependencies.is_empty() {
        properties.extend(required_properties(&bundle.required_apis));
    } else {
        for dependency in &bundle.dependencies {
            properties.extend(legacy_dependency(dependency)?);
        }
    }
    Ok(Entry {
        default_channel: bundle.channel == default_channel,
        name: bundle.csv_name,
        replaces: bundle.replaces,
        skips: bundle.skips,
        skip_range: Range::parse(&bundle.skip_range).ok(),
        version: Version::parse_tolerant(&bundle.version).ok(),
        provided_apis: bundle.provided_apis,
        required_apis: bundle.required_apis,
        properties,
        bundle_path: bundle.bundle_path,
        package: bundle.package,
        channel: bundle.channel,
        catalog: catalog.clone(),
        subscription: None,
        parsed: std::sync::OnceLock::new(),
    })
}

/// Go's `json.Marshal` of a struct of string fields, in the given order.
fn go_object(fields: &[(&str, &str)]) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        olm_goenc::json::write_str_html(&mut out, key);
        out.push(':');
        olm_goenc::json::write_str_html(&mut out, value);
    }
    out.push('}');
    out
}

/// `olm.gvk` properties for provided APIs, sorted by value (upstream's
/// `providedAPIsToProperties`; field order group, kind, version as `GVKProperty` marshals).
fn provided_properties(apis: &[ApiKey]) -> Vec<Property> {
    let mut values: Vec<String> = apis
        .iter()
        .map(|a| {
            go_object(&[
                ("group", &a.group),
                ("kind", &a.kind),
                ("version", &a.version),
            ])
        })
        .collect();
    values.sort();
    values.dedup();
    values
        .into_iter()
        .map(|v| Property::new(GVK_TYPE, v))
        .collect()
}

/// `olm.gvk.required` properties for required APIs, sorted by value.
fn required_properties(apis: &[ApiKey]) -> Vec<Property> {
    let mut values: Vec<String> = apis
        .iter()
        .map(|a| {
            go_object(&[
                ("group", &a.group),
                ("version", &a.version),
                ("kind", &a.kind),
            ])
        })
        .collect();
    values.sort();
    values.dedup();
    values
        .into_iter()
        .map(|v| Property::new("olm.gvk.required", v))
        .collect()
}

fn string_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Why a bundle or an installed CSV cannot be read as a resolver entry, in upstream's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// A legacy `dependencies` entry whose value is not a JSON object.
    #[error(
        "failed to translate legacy dependencies to properties: failed to unmarshal legacy '{kind}' dependency: {value}"
    )]
    LegacyDependency {
        /// Its type (`olm.gvk`, `olm.package`).
        kind: String,
        /// Its value, as written.
        value: String,
    },
    /// An owned or required CRD whose name has no `.` between plural and group.
    #[error("error parsing crd name: {0}")]
    CrdName(String),
    /// The CSV's properties annotation cannot be read.
    #[error("failed to retrieve properties of csv {csv:?}: {error}")]
    Properties {
        /// The CSV's name.
        csv: String,
        /// Why.
        error: PropertiesError,
    },
}

/// Why an `operatorframework.io/properties` annotation cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to unmarshal properties annotation: {0}")]
pub struct PropertiesError(String);

/// A legacy `dependencies` entry as a property (upstream's `legacyDependenciesToProperties`);
/// unknown types are dropped.
fn legacy_dependency(dependency: &Property) -> Result<Option<Property>, EntryError> {
    let parse = |what: &str| {
        serde_json::from_str::<Value>(&dependency.value)
            .ok()
            .filter(Value::is_object)
            .ok_or_else(|| EntryError::LegacyDependency {
                kind: what.to_owned(),
                value: dependency.value.clone(),
            })
    };
    Ok(match dependency.kind.as_str() {
        "olm.gvk" => {
            let v = parse("olm.gvk")?;
            let (g, ver, k) = (
                string_field(&v, "group"),
                string_field(&v, "version"),
                string_field(&v, "kind"),
            );
            Some(Property::new(
                "olm.gvk.required",
                go_object(&[("group", &g), ("version", &ver), ("kind", &k)]),
            ))
        }
        "olm.package" => {
            let v = parse("olm.package")?;
            let (name, range) = (string_field(&v, "packageName"), string_field(&v, "version"));
            Some(Property::new(
                "olm.package.required",
                go_object(&[("packageName", &name), ("versionRange", &range)]),
            ))
        }
        "olm.label" => Some(Property::new(
            "olm.label.required",
            dependency.value.clone(),
        )),
        "olm.constraint" => Some(Property::new("olm.constraint", dependency.value.clone())),
        _ => None,
    })
}

/// A CSV in the namespace as the resolver sees it (upstream's `csvSource.Snapshot`): its
/// properties from the properties annotation, else derived from owned and required APIs plus an
/// `olm.package` inferred from the one package of the Subscriptions that installed it.
/// `installed_by` lists (Subscription name, package) of the Subscriptions whose `installedCSV` it is.
pub fn from_csv(
    csv: &ClusterServiceVersion,
    namespace: &str,
    installed_by: &[(String, String)],
) -> Result<Entry, EntryError> {
    let name = csv.metadata.name.clone().unwrap_or_default();
    let spec = &csv.spec;
    let mut provided = Vec::new();
    let mut required = Vec::new();
    let crds = spec.custom_resource_definitions.as_ref();
    for (list, into) in [
        (crds.map(|c| &c.owned), &mut provided),
        (crds.map(|c| &c.required), &mut required),
    ] {
        for crd in list.into_iter().flatten() {
            let Some((plural, group)) = crd.name.split_once('.') else {
                return Err(EntryError::CrdName(crd.name.clone()));
            };
            into.push(ApiKey {
                group: group.to_owned(),
                version: crd.version.clone(),
                kind: crd.kind.clone(),
                plural: plural.to_owned(),
            });
        }
    }
    let apis = spec.api_service_definitions.as_ref();
    for (list, into) in [
        (apis.map(|a| &a.owned), &mut provided),
        (apis.map(|a| &a.required), &mut required),
    ] {
        for api in list.into_iter().flatten() {
            into.push(ApiKey {
                group: api.group.clone(),
                version: api.version.clone(),
                kind: api.kind.clone(),
                plural: api.name.clone(),
            });
        }
    }
    let version = Version::parse(spec.version.as_deref().unwrap_or_default()).ok();
    let annotation = csv
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(PROPERTIES_ANNOTATION));
    let properties = match annotation {
        Some(text) => properties_from_annotation(text).map_err(|error| EntryError::Properties {
            csv: name.clone(),
            error,
        })?,
        None => {
            let mut properties = provided_properties(&provided);
            properties.extend(required_properties(&required));
            let mut packages: Vec<&str> = installed_by
                .iter()
                .map(|(_, p)| p.as_str())
                .filter(|p| !p.is_empty())
                .collect();
            packages.sort_unstable();
            packages.dedup();
            if let [package] = packages.as_slice() {
                // Upstream leaves the version empty rather than "0.0.0" for an unset one.
                let v = version
                    .as_ref()
                    .filter(|v| v.to_string() != "0.0.0")
                    .map(ToString::to_string)
                    .unwrap_or_default();
                properties.push(Property::new(
                    PACKAGE_TYPE,
                    go_object(&[("packageName", package), ("version", &v)]),
                ));
            }
            properties
        }
    };
    let mut entry = Entry {
        name,
        replaces: String::new(),
        skips: Vec::new(),
        skip_range: None,
        version,
        provided_apis: provided,
        required_apis: required,
        properties,
        bundle_path: String::new(),
        package: String::new(),
        channel: String::new(),
        default_channel: false,
        catalog: SourceKey::existing(namespace),
        subscription: installed_by.first().map(|(s, _)| s.clone()),
        parsed: std::sync::OnceLock::new(),
    };
    if let Some(package) = entry.package_names().last().map(str::to_owned) {
        entry.package = package;
    }
    Ok(entry)
}

/// The properties of an `operatorframework.io/properties` annotation (`{"properties":[…]}`).
pub fn properties_from_annotation(text: &str) -> Result<Vec<Property>, PropertiesError> {
    let value: Value = serde_json::from_str(text).map_err(|e| PropertiesError(e.to_string()))?;
    let list = match value.get("properties") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => {
            return Err(PropertiesError("properties is not a list".to_owned()));
        }
    };
    Ok(list
        .iter()
        .map(|p| {
            let mut value = String::new();
            olm_goenc::json::write_value_html(&mut value, p.get("value").unwrap_or(&Value::Null));
            Property::new(
                p.get("type").and_then(Value::as_str).unwrap_or_default(),
                value,
            )
        })
        .collect())
}

/// The `operatorframework.io/properties` annotation for a list of properties (upstream's
/// `PropertiesAnnotationFromPropertyList`: values embedded as raw JSON, compacted).
pub fn properties_annotation(properties: &[Property]) -> String {
    let mut out = String::from("{\"properties\":[");
    for (i, p) in properties.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"type\":");
        olm_goenc::json::write_str_html(&mut out, &p.kind);
        out.push_str(",\"value\":");
        match serde_json::from_str::<Value>(&p.value) {
            Ok(v) => olm_goenc::json::write_value_html(&mut out, &v),
            Err(_) => out.push_str("null"),
        }
        out.push('}');
    }
    out.push_str("]}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_bundle_properties_are_synthesised() {
        let bundle = RegistryBundle {
            csv_name: "a.v1".into(),
            package: "a".into(),
            channel: "stable".into(),
            version: "1.0.0".into(),
            skip_range: ">=0.5.0 <1.0.0".into(),
            provided_apis: vec![ApiKey::gvk("g", "v1", "K")],
            required_apis: vec![ApiKey::gvk("h", "v1", "R")],
            ..RegistryBundle::default()
        };
        let entry = from_registry(bundle, &SourceKey::new("cat", "ns"), "stable").unwrap();
        assert!(entry.default_channel);
        assert_eq!(
            entry.properties,
            vec![
                Property::new("olm.gvk", r#"{"group":"g","kind":"K","version":"v1"}"#),
                Property::new(
                    "olm.gvk.required",
                    r#"{"group":"h","version":"v1","kind":"R"}"#
                ),
            ]
        );
        assert!(entry.skip_range.is_some());
    }

    #[test]
    fn legacy_dependencies_are_translated() {
        let bundle = RegistryBundle {
            csv_name: "a.v1".into(),
            properties: vec![Property::new(
                "olm.package",
                r#"{"packageName":"a","version":"1.0.0"}"#,
            )],
            required_apis: vec![ApiKey::gvk("h", "v1", "R")],
            dependencies: vec![
                Property::new("olm.package", r#"{"packageName":"b","version":">1.0.0"}"#),
                Property::new("olm.gvk", r#"{"group":"g","kind":"K","version":"v1"}"#),
                Property::new("olm.label", r#"{"label":"x"}"#),
                Property::new("olm.unknown", "{}"),
            ],
            ..RegistryBundle::default()
        };
        let entry = from_registry(bundle, &SourceKey::new("cat", "ns"), "").unwrap();
        let kinds: Vec<_> = entry
            .properties
            .iter()
            .map(|p| (p.kind.as_str(), p.value.as_str()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ("olm.package", r#"{"packageName":"a","version":"1.0.0"}"#),
                (
                    "olm.package.required",
                    r#"{"packageName":"b","versionRange":"\u003e1.0.0"}"#
                ),
                (
                    "olm.gvk.required",
                    r#"{"group":"g","version":"v1","kind":"K"}"#
                ),
                ("olm.label.required", r#"{"label":"x"}"#),
            ]
        );
        let bad = RegistryBundle {
            dependencies: vec![Property::new("olm.gvk", "[")],
            ..RegistryBundle::default()
        };
        assert!(
            from_registry(bad, &SourceKey::default(), "")
                .unwrap_err()
                .to_string()
                .contains("olm.gvk")
        );
    }

    fn typed_csv(value: serde_json::Value) -> ClusterServiceVersion {
        let mut value = value;
        value["apiVersion"] = "operators.coreos.com/v1alpha1".into();
        value["kind"] = "ClusterServiceVersion".into();
        value["spec"]["install"] = serde_json::json!({"strategy": "deployment"});
        value["spec"]["displayName"] = "an operator".into();
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn csv_entries_infer_their_package() {
        let csv = typed_csv(serde_json::json!({
            "metadata": {"name": "a.v1"},
            "spec": {"version": "1.0.0", "customresourcedefinitions": {"owned": [{"name": "ks.g", "version": "v1", "kind": "K"}]}}
        }));
        let entry = from_csv(&csv, "ns", &[("sub".into(), "a".into())]).unwrap();
        assert_eq!(entry.package, "a");
        assert_eq!(entry.subscription.as_deref(), Some("sub"));
        assert_eq!(
            entry.properties[1],
            Property::new("olm.package", r#"{"packageName":"a","version":"1.0.0"}"#)
        );
        let freestanding = from_csv(&csv, "ns", &[]).unwrap();
        assert_eq!(freestanding.package, "");
        let bad = typed_csv(
            serde_json::json!({"metadata": {"name": "b"}, "spec": {"customresourcedefinitions": {"owned": [{"name": "nodot", "version": "v1", "kind": "K"}]}}}),
        );
        assert_eq!(
            from_csv(&bad, "ns", &[]).unwrap_err().to_string(),
            "error parsing crd name: nodot"
        );
    }

    #[test]
    fn properties_annotation_round_trips() {
        let props = vec![Property::new(
            "olm.package",
            r#"{"packageName":"a","version":"1.0.0"}"#,
        )];
        let text = properties_annotation(&props);
        assert_eq!(
            text,
            r#"{"properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}}]}"#
        );
        assert_eq!(properties_from_annotation(&text).unwrap(), props);
        assert!(properties_from_annotation("{").is_err());
    }
}
