//! A bundle as a File-Based Catalog `olm.bundle` blob (what `opm render BUNDLE_DIR` prints).
//!
//! Properties are derived as operator-registry does: `olm.package` from the package annotation
//! and CSV version, `olm.gvk` for every CRD version (and owned APIService), `olm.gvk.required`
//! and `olm.package.required` from required APIs and `metadata/dependencies.yaml`, everything
//! else passed through; then deduplicated, sorted by type and encoded value, and the CSV itself
//! appended as `olm.csv.metadata` (what catalog pipelines publish) or as one
//! `olm.bundle.object` per manifest (opm's default), those in the order of their base64 text. Values are built in Go field order so a
//! catalog writer that keeps key order reproduces opm's bytes.

use base64::Engine;
use olm_catalog::property::CsvMetadata;
use olm_goenc::json::sort_keys;
use serde_json::{Map, Value, json};

use crate::bundle::{Bundle, PROPERTIES_ANNOTATION};
use crate::error::BundleError;
use crate::naming::go_json_encode;

/// How the CSV and manifests are carried in the blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectsMode {
    /// One `olm.csv.metadata` property (catalog pipelines, opm `--migrate-level bundle-object-to-csv-metadata`).
    CsvMetadata,
    /// One `olm.bundle.object` per manifest, base64 of its JSON (opm's default for bundle directories).
    BundleObjects,
}

/// Builds the `olm.bundle` blob for `b` pulled from `image` ("" for a directory).
///
/// Errors: a metadata file (dependencies, properties) that could not be read, since the
/// properties would be incomplete without it.
pub fn to_olm_bundle(b: &Bundle, image: &str, mode: ObjectsMode) -> Result<Value, BundleError> {
    if let Some(e) = b.metadata_errors.first() {
        return Err(e.clone());
    }
    check_provided_apis(b)?;
    let mut props = derived_properties(b);
    match mode {
        ObjectsMode::CsvMetadata => props
            .push(json!({"type": "olm.csv.metadata", "value": CsvMetadata::from_csv(&b.csv.raw)})),
        ObjectsMode::BundleObjects => {
            let mut objs: Vec<(&str, &Value)> = vec![(b.csv_file.as_str(), &b.csv.raw)];
            objs.extend(
                b.crds
                    .iter()
                    .chain(&b.others)
                    .map(|o| (o.file.as_str(), &o.object)),
            );
            // opm keeps the first document of each file.
            objs.sort_by(|a, b| a.0.cmp(b.0));
            objs.dedup_by(|a, b| a.0 == b.0);
            let mut data: Vec<String> = objs
                .into_iter()
                .map(|(_, o)| {
                    // Go marshals the unstructured object: sorted keys, HTML-escaped, compact.
                    let json = go_json_encode(&sort_keys(o));
                    base64::engine::general_purpose::STANDARD.encode(json.trim_end().as_bytes())
                })
                .collect();
            // opm sorts every property by type, then by its JSON value (`{"data":"…"}`, so by
            // the base64 text), and moves the objects after the rest keeping that order.
            data.sort_unstable();
            for data in data {
                props.push(json!({"type": "olm.bundle.object", "value": {"data": data}}));
            }
        }
    }
    let mut m = Map::new();
    m.insert("schema".into(), json!("olm.bundle"));
    m.insert("name".into(), json!(b.csv.name()));
    m.insert("package".into(), json!(b.package_name));
    m.insert("image".into(), json!(image));
    m.insert("properties".into(), Value::Array(props));
    m.insert(
        "relatedImages".into(),
        Value::Array(related_images(b, image)),
    );
    Ok(Value::Object(m))
}

/// An API as opm's bundle parser keys it: group, version, kind, plural (its field order, which
/// is also the order Go prints a map of them in).
type ApiKey<'a> = (&'a str, &'a str, &'a str, &'a str);

fn api_key_text((group, version, kind, plural): &ApiKey) -> String {
    format!("{group}/{version}/{kind} ({plural})")
}

/// opm refuses a bundle whose CSV owns a CRD (by `<plural>.<group>`, version and kind) that none
/// of the bundle's CRDs provides; owned APIServices need no object. Where several are missing
/// opm names whichever its map walk meets first; olm names the first in sorted order.
///
/// Errors: [`BundleError::OwnedCrdName`] for an owned name without a dot,
/// [`BundleError::OwnedCrdNotInBundle`] for a missing CRD.
pub fn check_provided_apis(b: &Bundle) -> Result<(), BundleError> {
    let str_at = |v: &'_ Value, p: &str| -> String {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    let mut provided: Vec<(String, String, String, String)> = Vec::new();
    for crd in &b.crds {
        let (group, kind, plural) = (
            str_at(&crd.object, "/spec/group"),
            str_at(&crd.object, "/spec/names/kind"),
            str_at(&crd.object, "/spec/names/plural"),
        );
        let mut versions: Vec<String> = crd
            .object
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(|v| str_at(v, "/name")).collect())
            .unwrap_or_default();
        // A v1beta1 CRD may name its one version at `spec.version`.
        let single = str_at(&crd.object, "/spec/version");
        if !single.is_empty() {
            versions.push(single);
        }
        for v in versions {
            provided.push((group.clone(), v, kind.clone(), plural.clone()));
        }
    }
    for a in &b.csv.spec.apiservicedefinitions.owned {
        provided.push((
            a.group.clone(),
            a.version.clone(),
            a.kind.clone(),
            a.name.clone(),
        ));
    }
    let mut provided: Vec<ApiKey> = provided
        .iter()
        .map(|(g, v, k, p)| (g.as_str(), v.as_str(), k.as_str(), p.as_str()))
        .collect();
    provided.sort_unstable();
    provided.dedup();
    let mut owned: Vec<ApiKey> = Vec::new();
    for c in &b.csv.spec.customresourcedefinitions.owned {
        let Some((plural, group)) = c.name.split_once('.') else {
            return Err(BundleError::OwnedCrdName {
                csv: b.csv.name().to_owned(),
                name: c.name.clone(),
            });
        };
        owned.push((group, c.version.as_str(), c.kind.as_str(), plural));
    }
    owned.sort_unstable();
    match owned.iter().find(|k| provided.binary_search(k).is_err()) {
        None => Ok(()),
        Some(missing) => Err(BundleError::OwnedCrdNotInBundle {
            csv: b.csv.name().to_owned(),
            missing: api_key_text(missing),
            found: provided.iter().map(api_key_text).collect(),
        }),
    }
}

/// Every property except the CSV carriers, deduplicated and sorted by type then encoded value.
pub fn derived_properties(b: &Bundle) -> Vec<Value> {
    let mut input: Vec<Value> = b.properties.iter().map(sort_keys).collect();
    let mut pkg = Map::new();
    pkg.insert("packageName".into(), json!(b.package_name));
    pkg.insert("version".into(), json!(b.csv.version()));
    let release = b.csv.release();
    if !release.is_empty() {
        pkg.insert("release".into(), json!(release));
    }
    input.push(json!({"type": "olm.package", "value": pkg}));
    if let Some(s) = b.csv.annotations().get(PROPERTIES_ANNOTATION)
        && let Ok(Value::Array(extra)) = serde_json::from_str::<Value>(s)
    {
        input.extend(extra.iter().map(sort_keys));
    }
    // The last olm.package wins.
    let last_pkg = input
        .iter()
        .rposition(|p| p.get("type").and_then(Value::as_str) == Some("olm.package"));
    let mut props: Vec<Value> = input
        .into_iter()
        .enumerate()
        .filter(|(i, p)| {
            p.get("type").and_then(Value::as_str) != Some("olm.package") || Some(*i) == last_pkg
        })
        .map(|(_, p)| p)
        .collect();

    for crd in &b.crds {
        let group = crd
            .object
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = crd
            .object
            .pointer("/spec/names/kind")
            .and_then(Value::as_str)
            .unwrap_or("");
        let mut versions: Vec<&str> = crd
            .object
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.get("name").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(v) = crd.object.pointer("/spec/version").and_then(Value::as_str) {
            versions.push(v);
        }
        for v in versions {
            props.push(gvk("olm.gvk", group, kind, v));
        }
    }
    for a in &b.csv.spec.apiservicedefinitions.owned {
        props.push(gvk("olm.gvk", &a.group, &a.kind, &a.version));
    }
    for c in &b.csv.spec.customresourcedefinitions.required {
        let group = c.name.split_once('.').map_or("", |(_, g)| g);
        props.push(gvk("olm.gvk.required", group, &c.kind, &c.version));
    }
    for a in &b.csv.spec.apiservicedefinitions.required {
        props.push(gvk("olm.gvk.required", &a.group, &a.kind, &a.version));
    }
    for d in &b.dependencies {
        let t = d.get("type").and_then(Value::as_str).unwrap_or("");
        let v = d.get("value").cloned().unwrap_or(Value::Null);
        match t {
            "olm.gvk" => {
                let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                props.push(gvk(
                    "olm.gvk.required",
                    &s("group"),
                    &s("kind"),
                    &s("version"),
                ));
            }
            "olm.package" => {
                let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                props.push(json!({"type": "olm.package.required",
                    "value": {"packageName": s("packageName"), "versionRange": s("version")}}));
            }
            _ => props.push(sort_keys(&json!({"type": t, "value": v}))),
        }
    }

    let mut keyed: Vec<(String, String, Value)> = props
        .into_iter()
        .map(|p| {
            let t = p
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let raw = p
                .get("value")
                .map(|v| go_json_encode(v).trim_end().to_string())
                .unwrap_or_default();
            (t, raw, p)
        })
        .collect();
    keyed.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    keyed.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
    keyed.into_iter().map(|(_, _, p)| p).collect()
}

fn gvk(t: &str, group: &str, kind: &str, version: &str) -> Value {
    json!({"type": t, "value": {"group": group, "kind": kind, "version": version}})
}

/// `relatedImages`: the CSV's, then the bundle image and every deployment container image not
/// already listed (with an empty name), sorted by image.
pub fn related_images(b: &Bundle, image: &str) -> Vec<Value> {
    let mut out: Vec<(String, String)> = b
        .csv
        .spec
        .related_images
        .iter()
        .flatten()
        .map(|r| (r.name.clone(), r.image.clone()))
        .collect();
    let add = |img: &str, out: &mut Vec<(String, String)>| {
        if !img.is_empty() && !out.iter().any(|(_, i)| i == img) {
            out.push((String::new(), img.to_string()));
        }
    };
    add(image, &mut out);
    for d in &b.csv.spec.install.spec.deployments {
        for key in ["initContainers", "containers"] {
            for c in d
                .spec
                .pointer(&format!("/template/spec/{key}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(img) = c.get("image").and_then(Value::as_str) {
                    add(img, &mut out);
                }
            }
        }
    }
    out.sort_by(|a, b| a.1.cmp(&b.1));
    out.into_iter()
        .map(|(name, image)| json!({"name": name, "image": image}))
        .collect()
}
