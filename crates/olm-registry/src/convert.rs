//! A catalog bundle as the registry API's `Bundle` (operator-registry's
//! `ConvertModelBundleToAPIBundle`): its CSV and manifests as JSON, provided and required APIs,
//! dependencies, properties, and — for a bundle carried by an `olm.csv.metadata` property rather
//! than manifests — a stub CSV made from that metadata, as OLM v0's packageserver needs one.
//!
//! JSON is written as Go's `encoding/json` writes it (HTML-escaped strings, map keys sorted),
//! which is what clients that compare or hash these strings see from `opm serve`.

use olm_catalog::index::{BundleNode, PackageNode};
use olm_catalog::model::Bundle as CatalogBundle;
use olm_catalog::property::{
    PackageRequired, TYPE_BUNDLE_OBJECT, TYPE_CSV_METADATA, TYPE_GVK_REQUIRED,
    TYPE_PACKAGE_REQUIRED, TypedProperty,
};
use serde_json::{Map, Value, json};

use crate::api;
use crate::gostruct::{self, Shape};

/// Why a bundle cannot be served.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// More than one `olm.csv.metadata` property.
    #[error(
        "parse properties: expected at most 1 property of type \"olm.csv.metadata\", found {0}"
    )]
    ManyCsvMetadata(usize),
    /// A property that does not read as its type says.
    #[error("parse properties: {0}")]
    Property(String),
    /// A manifest that is not YAML or JSON.
    #[error(
        "package {package:?}, bundle {bundle:?}: convert bundle object property at index {index} to JSON: {reason}"
    )]
    Object {
        /// The bundle's package.
        package: String,
        /// The bundle.
        bundle: String,
        /// The property's index.
        index: usize,
        /// What went wrong.
        reason: String,
    },
}

/// Go's `json.Marshal` of `v`, with map keys sorted (as Go writes maps).
pub fn go_json(v: &Value) -> String {
    let mut out = String::new();
    olm_goenc::json::write_value_html(&mut out, &olm_goenc::json::sort_keys(v));
    out
}

/// Go's `json.Marshal` of `v` keeping the order its objects have (Go structs).
fn go_json_ordered(v: &Value) -> String {
    let mut out = String::new();
    olm_goenc::json::write_value_html(&mut out, v);
    out
}

/// The bundle's manifests as JSON (sigs.k8s.io/yaml's `ToJSON`: keys sorted), in property order.
fn objects(bundle: &CatalogBundle) -> Result<Vec<String>, ConvertError> {
    let mut out = Vec::new();
    for (index, p) in bundle.properties.iter().enumerate() {
        if p.type_ != TYPE_BUNDLE_OBJECT {
            continue;
        }
        let fail = |reason: String| ConvertError::Object {
            package: bundle.package.as_str().to_owned(),
            bundle: bundle.name.as_str().to_owned(),
            index,
            reason,
        };
        let Ok(TypedProperty::BundleObject(obj)) = p.parse() else {
            return Err(fail("not a bundle object".to_owned()));
        };
        let data = obj.decode().map_err(|e| fail(e.to_string()))?;
        let text = String::from_utf8(data).map_err(|e| fail(e.to_string()))?;
        let value = olm_goenc::yamlread::parse_document_with(
            &text,
            &olm_goenc::yamlread::Options::default(),
        )
        .map_err(|e| fail(e.to_string()))?;
        out.push(go_json(&value));
    }
    Ok(out)
}

/// The first manifest whose `kind` is `ClusterServiceVersion`.
fn csv_of(objects: &[String]) -> String {
    objects
        .iter()
        .find(|o| {
            serde_json::from_str::<Value>(o)
                .ok()
                .is_some_and(|v| v["kind"] == "ClusterServiceVersion")
        })
        .cloned()
        .unwrap_or_default()
}

/// The stub CSV of a bundle described by `olm.csv.metadata` (upstream's `csvMetadataToCsv` plus
/// name, icon, install strategy, version, related images and the description fallback), as Go
/// writes a `v1alpha1.ClusterServiceVersion`: struct fields in declaration order, empty ones
/// left out where the field says `omitempty`, structs always written.
pub fn stub_csv(package: &PackageNode<'_>, node: &BundleNode<'_>, metadata: &Value) -> String {
    let field = |k: &str| metadata.get(k).filter(|v| !v.is_null());
    let mut meta = Map::new();
    meta.insert("name".into(), json!(node.bundle.name.as_str()));
    for k in ["labels", "annotations"] {
        if let Some(Value::Object(m)) = field(k)
            && !m.is_empty()
        {
            meta.insert(
                k.into(),
                olm_goenc::json::sort_keys(&Value::Object(m.clone())),
            );
        }
    }
    let mut spec = Map::new();
    spec.insert(
        "install".into(),
        json!({"strategy": "deployment", "spec": {"deployments": null}}),
    );
    spec.insert(
        "version".into(),
        json!(node.package_property.version.as_str()),
    );
    let put = |spec: &mut Map<String, Value>, key: &str, from: &str, omit: bool, s: &Shape| {
        let v = field(from);
        if !(omit && gostruct::is_empty(v)) {
            spec.insert(key.to_owned(), gostruct::shape(v, s));
        }
    };
    put(&mut spec, "maturity", "maturity", true, &Shape::Str);
    put(
        &mut spec,
        "customresourcedefinitions",
        "crdDescriptions",
        false,
        &gostruct::CRDS,
    );
    put(
        &mut spec,
        "apiservicedefinitions",
        "apiServiceDefinitions",
        false,
        &gostruct::APISERVICES,
    );
    put(&mut spec, "nativeAPIs", "nativeAPIs", true, &gostruct::GVKS);
    put(
        &mut spec,
        "minKubeVersion",
        "minKubeVersion",
        true,
        &Shape::Str,
    );
    put(&mut spec, "displayName", "displayName", false, &Shape::Str);
    let description = field("description")
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
        .unwrap_or(&package.package.description);
    if !description.is_empty() {
        spec.insert("description".into(), json!(description));
    }
    put(&mut spec, "keywords", "keywords", true, &gostruct::STRINGS);
    put(
        &mut spec,
        "maintainers",
        "maintainers",
        true,
        &gostruct::MAINTAINERS,
    );
    put(
        &mut spec,
        "provider",
        "provider",
        false,
        &gostruct::APP_LINK,
    );
    put(&mut spec, "links", "links", true, &gostruct::APP_LINKS);
    if let Some(icon) = &package.package.icon {
        spec.insert(
            "icon".into(),
            json!([{"base64data": icon.base64data, "mediatype": icon.mediatype}]),
        );
    }
    put(
        &mut spec,
        "installModes",
        "installModes",
        true,
        &gostruct::INSTALL_MODES,
    );
    spec.insert("cleanup".into(), json!({"enabled": false}));
    if !node.bundle.related_images.is_empty() {
        spec.insert(
            "relatedImages".into(),
            Value::Array(
                node.bundle
                    .related_images
                    .iter()
                    .map(|r| json!({"name": r.name, "image": r.image}))
                    .collect(),
            ),
        );
    }
    go_json_ordered(&json!({
        "kind": "ClusterServiceVersion",
        "apiVersion": "operators.coreos.com/v1alpha1",
        "metadata": meta,
        "spec": spec,
        "status": {"cleanup": {}},
    }))
}

/// The API bundle of `node` in `channel`, with its `replaces` and `skips` there.
///
/// # Errors
///
/// Several `olm.csv.metadata` properties, or a property or manifest that does not read.
pub fn bundle(
    package: &PackageNode<'_>,
    channel: &str,
    node: &BundleNode<'_>,
    replaces: &str,
    skips: &[String],
    skip_range: &str,
) -> Result<api::Bundle, ConvertError> {
    let b = node.bundle;
    let mut provided = Vec::new();
    let mut required = Vec::new();
    let mut dependencies = Vec::new();
    let mut properties = Vec::new();
    let mut metadata = Vec::new();
    for p in &b.properties {
        let typed = p.parse().map_err(ConvertError::Property)?;
        match &typed {
            TypedProperty::Gvk(g) => provided.push(api::GroupVersionKind {
                group: g.group.clone(),
                version: g.version.clone(),
                kind: g.kind.clone(),
                plural: String::new(),
            }),
            TypedProperty::GvkRequired(g) => required.push(api::GroupVersionKind {
                group: g.group.clone(),
                version: g.version.clone(),
                kind: g.kind.clone(),
                plural: String::new(),
            }),
            TypedProperty::CsvMetadata(raw) => {
                metadata.push(serde_json::from_str::<Value>(raw.get()).unwrap_or(Value::Null));
            }
            _ => {}
        }
        match p.type_.as_str() {
            TYPE_GVK_REQUIRED => dependencies.push(api::Dependency {
                r#type: olm_catalog::property::TYPE_GVK.to_owned(),
                value: p.value.get().to_owned(),
            }),
            TYPE_PACKAGE_REQUIRED => {
                let r: PackageRequired = serde_json::from_str(p.value.get())
                    .map_err(|e| ConvertError::Property(e.to_string()))?;
                // `property.MustBuildPackage`: an `olm.package` value of that name and range,
                // written without HTML escaping (`>=1.0.0` stays as it is).
                let mut value = String::new();
                olm_goenc::json::write_value(
                    &mut value,
                    &json!({"packageName": r.package_name, "version": r.version_range}),
                );
                dependencies.push(api::Dependency {
                    r#type: olm_catalog::property::TYPE_PACKAGE.to_owned(),
                    value,
                });
            }
            _ => {}
        }
        if p.type_ != TYPE_BUNDLE_OBJECT && p.type_ != TYPE_CSV_METADATA {
            properties.push(api::Property {
                r#type: p.type_.clone(),
                value: p.value.get().to_owned(),
            });
        }
    }
    if metadata.len() > 1 {
        return Err(ConvertError::ManyCsvMetadata(metadata.len()));
    }
    let mut object = objects(b)?;
    let mut csv_json = csv_of(&object);
    if csv_json.is_empty()
        && let [m] = metadata.as_slice()
    {
        csv_json = stub_csv(package, node, m);
        if object.is_empty() {
            object = vec![csv_json.clone()];
        }
    }
    Ok(api::Bundle {
        csv_name: b.name.as_str().to_owned(),
        package_name: package.name.to_owned(),
        channel_name: channel.to_owned(),
        csv_json,
        object,
        bundle_path: b.image.clone(),
        provided_apis: provided,
        required_apis: required,
        version: node.package_property.version.clone(),
        skip_range: skip_range.to_owned(),
        dependencies,
        properties,
        replaces: replaces.to_owned(),
        skips: skips.to_vec(),
        deprecation: node.deprecation.map(|m| api::Deprecation {
            message: m.to_owned(),
        }),
    })
}
