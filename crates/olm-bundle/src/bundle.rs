//! Reading a registry+v1 bundle: `manifests/` (flat) and `metadata/`.
//!
//! Objects are dispatched by `kind` only, as operator-controller does: the ClusterServiceVersion,
//! CustomResourceDefinitions, and everything else. Files are read in lexical order and every YAML
//! (or JSON) document in a file counts, so the order of CRDs and other objects — and therefore of
//! rendered manifests and `olm.bundle.object` properties — is stable.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use olm_goenc::json::{Kind, UnmarshalTypeError, sort_keys};
use rayon::prelude::*;
use serde_json::{Value, json};

use crate::csv::ClusterServiceVersion;
use crate::error::BundleError;
use crate::goyaml;
use crate::naming::go_json_encode;

/// Annotation naming the bundle's package.
pub const PACKAGE_ANNOTATION: &str = "operators.operatorframework.io.bundle.package.v1";
/// Annotation listing the bundle's channels (comma-separated).
pub const CHANNELS_ANNOTATION: &str = "operators.operatorframework.io.bundle.channels.v1";
/// Annotation naming the default channel.
pub const DEFAULT_CHANNEL_ANNOTATION: &str =
    "operators.operatorframework.io.bundle.channel.default.v1";
/// Annotation declaring the bundle format.
pub const MEDIATYPE_ANNOTATION: &str = "operators.operatorframework.io.bundle.mediatype.v1";
/// Annotation naming the manifests directory (`manifests/`).
pub const MANIFESTS_ANNOTATION: &str = "operators.operatorframework.io.bundle.manifests.v1";
/// Annotation naming the metadata directory (`metadata/`).
pub const METADATA_ANNOTATION: &str = "operators.operatorframework.io.bundle.metadata.v1";
/// The media type of a bundle with a ClusterServiceVersion.
pub const REGISTRY_V1: &str = "registry+v1";
/// CSV annotation carrying extra properties as a JSON list.
pub use olm_k8s::OLM_PROPERTIES_ANNOTATION as PROPERTIES_ANNOTATION;

/// One object of the bundle together with the file it came from (relative to the bundle root).
#[derive(Debug, Clone, PartialEq)]
pub struct BundleObject {
    /// The file the object came from, relative to the bundle root.
    pub file: String,
    /// The object, as JSON.
    pub object: Value,
}

impl BundleObject {
    /// The object's `kind`; empty when absent.
    pub fn kind(&self) -> &str {
        self.object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The object's `metadata.name`; empty when absent.
    pub fn name(&self) -> &str {
        self.object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

/// A registry+v1 bundle as read from disk or from an unpacked image.
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle {
    /// From `metadata/annotations.yaml` (`operators.operatorframework.io.bundle.package.v1`);
    /// empty when absent (the renderer rejects it with upstream's message).
    pub package_name: String,
    /// The `annotations` block of `metadata/annotations.yaml`.
    pub annotations: BTreeMap<String, String>,
    /// The bundle's ClusterServiceVersion.
    pub csv: ClusterServiceVersion,
    /// File the CSV came from.
    pub csv_file: String,
    /// CustomResourceDefinitions in file order.
    pub crds: Vec<BundleObject>,
    /// Every other object in file order.
    pub others: Vec<BundleObject>,
    /// `metadata/properties.yaml` `properties:` entries.
    pub properties: Vec<Value>,
    /// `metadata/properties.yaml`'s `properties:` entries when that file exists and is not empty
    /// (no entries when it has no such key): what operator-controller merges into the CSV's
    /// `olm.properties` annotation before rendering.
    pub properties_file: Option<Vec<Value>>,
    /// `metadata/dependencies.yaml` `dependencies:` entries.
    pub dependencies: Vec<Value>,
    /// Metadata files other than the annotations file that could not be read. Rendering does
    /// not need them (operator-controller never reads `dependencies.yaml`), but deriving
    /// catalog properties does, so [`crate::properties::to_olm_bundle`] reports them.
    pub metadata_errors: Vec<BundleError>,
}

/// A file of an unpacked bundle: path relative to the bundle root (with `/` separators) and bytes.
#[derive(Debug, Clone)]
pub struct BundleFile {
    /// The path relative to the bundle root, `/`-separated.
    pub path: String,
    /// The file's bytes.
    pub contents: Vec<u8>,
}

impl Bundle {
    /// Whether `dir` is laid out as a registry+v1 bundle (`manifests/` and `metadata/`), which is
    /// how `opm render` tells a bundle directory from catalog content.
    pub fn is_bundle_dir(dir: impl AsRef<Path>) -> bool {
        let dir = dir.as_ref();
        dir.join("manifests").is_dir() && dir.join("metadata").is_dir()
    }

    /// Reads a bundle directory.
    ///
    /// Errors name the offending file: unreadable files, malformed YAML, a subdirectory under
    /// `manifests/`, no or several CSVs, objects without `kind`.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, BundleError> {
        let dir = dir.as_ref();
        let mut files = Vec::new();
        for sub in ["manifests", "metadata"] {
            let d = dir.join(sub);
            if !d.is_dir() {
                continue;
            }
            let mut entries: Vec<PathBuf> = std::fs::read_dir(&d)
                .map_err(|e| BundleError::Io {
                    path: d.display().to_string(),
                    message: e.to_string(),
                })?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .collect();
            entries.sort();
            for p in entries {
                let fname = p
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let rel = format!("{sub}/{fname}");
                if p.is_dir() {
                    if sub == "manifests" {
                        return Err(BundleError::SubdirectoryInManifests { path: rel });
                    }
                    continue;
                }
                let contents = std::fs::read(&p).map_err(|e| BundleError::Io {
                    path: p.display().to_string(),
                    message: e.to_string(),
                })?;
                files.push(BundleFile {
                    path: rel,
                    contents,
                });
            }
        }
        Self::from_files(files)
    }

    /// Builds a bundle from files of an unpacked bundle image (paths relative to its root).
    /// Files outside `manifests/` and `metadata/` are ignored, as are dot-files.
    pub fn from_files(mut files: Vec<BundleFile>) -> Result<Self, BundleError> {
        files.sort_by(|a, b| a.path.cmp(&b.path));
        let mut annotations: Option<BTreeMap<String, String>> = None;
        let mut properties = Vec::new();
        let mut properties_file = None;
        let mut dependencies = Vec::new();
        let mut csv: Option<(String, Value)> = None;
        let mut crds = Vec::new();
        let mut others = Vec::new();
        let mut metadata_errors = Vec::new();

        // Decoding YAML dominates the cost of reading a bundle and files are independent, so
        // manifests are decoded in parallel; results are consumed in path order below.
        let decoded: Vec<Option<Result<Vec<Value>, BundleError>>> = files
            .par_iter()
            .map(|f| {
                let path = f.path.trim_start_matches("./").trim_start_matches('/');
                let is_manifest = path
                    .strip_prefix("manifests/")
                    .is_some_and(|n| !n.is_empty() && !n.starts_with('.') && !n.contains('/'));
                is_manifest.then(|| decode(path, &f.contents))
            })
            .collect();
        for (f, pre) in files.iter().zip(decoded) {
            let path = f.path.trim_start_matches("./").trim_start_matches('/');
            let (dir, name) = match path.split_once('/') {
                Some(x) => x,
                None => continue,
            };
            if name.starts_with('.') || name.is_empty() {
                continue;
            }
            match dir {
                "manifests" => {
                    if name.contains('/') {
                        return Err(BundleError::SubdirectoryInManifests {
                            path: path.to_string(),
                        });
                    }
                    let docs = match pre {
                        Some(d) => d?,
                        None => decode(path, &f.contents)?,
                    };
                    for doc in docs {
                        if !doc.is_object() {
                            return Err(BundleError::NotAnObject {
                                file: path.to_string(),
                            });
                        }
                        let kind = match doc.get("kind").and_then(Value::as_str) {
                            Some(k) if !k.is_empty() => k.to_string(),
                            _ => {
                                return Err(BundleError::MissingKind {
                                    file: path.to_string(),
                                });
                            }
                        };
                        match kind.as_str() {
                            "ClusterServiceVersion" => {
                                if let Some((first, _)) = &csv {
                                    return Err(BundleError::MultipleCsvs {
                                        first: first.clone(),
                                        second: path.to_string(),
                                    });
                                }
                                csv = Some((path.to_string(), doc));
                            }
                            "CustomResourceDefinition" => crds.push(BundleObject {
                                file: path.to_string(),
                                object: doc,
                            }),
                            _ => others.push(BundleObject {
                                file: path.to_string(),
                                object: doc,
                            }),
                        }
                    }
                }
                "metadata" => {
                    if name.contains('/') {
                        continue;
                    }
                    let docs = match decode(path, &f.contents) {
                        Ok(d) => d,
                        Err(e) if name != "annotations.yaml" => {
                            metadata_errors.push(e);
                            continue;
                        }
                        Err(e) => return Err(e),
                    };
                    let Some(doc) = docs.into_iter().next() else {
                        continue;
                    };
                    // The first metadata file with a non-empty `annotations` block wins.
                    if let Some(a) = doc
                        .get("annotations")
                        .filter(|a| a.as_object().is_some_and(|m| !m.is_empty()))
                        && annotations.is_none()
                    {
                        annotations = Some(string_map(path, a)?);
                    }
                    let listed = match doc.get("properties") {
                        Some(p) => list(path, "properties", p)?,
                        None => Vec::new(),
                    };
                    if name == "properties.yaml" && !f.contents.is_empty() {
                        properties_file = Some(listed.clone());
                    }
                    properties.extend(listed);
                    if let Some(d) = doc.get("dependencies") {
                        dependencies.extend(list(path, "dependencies", d)?);
                    }
                }
                _ => {}
            }
        }

        let Some((csv_file, csv_doc)) = csv else {
            return Err(BundleError::NoCsv);
        };
        let annotations = annotations.ok_or(BundleError::NoAnnotations)?;
        // Fail early on a malformed `olm.properties` annotation, before anything renders.
        if let Some(extra) = &properties_file {
            merged_properties(&csv_file, &csv_doc, extra)?;
        }
        let csv =
            ClusterServiceVersion::from_value(csv_doc).map_err(|e| BundleError::InvalidCsv {
                file: csv_file.clone(),
                message: e.to_string(),
            })?;
        let package_name = annotations
            .get(PACKAGE_ANNOTATION)
            .cloned()
            .unwrap_or_default();
        Ok(Bundle {
            package_name,
            annotations,
            csv,
            csv_file,
            crds,
            others,
            properties,
            properties_file,
            dependencies,
            metadata_errors,
        })
    }

    /// Channels from the bundle annotations (informational: FBC channels are authored separately).
    pub fn channels(&self) -> Vec<String> {
        self.annotations
            .get(CHANNELS_ANNOTATION)
            .map(|c| {
                c.split(',')
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// CSV annotations as the renderer sees them: with `metadata/properties.yaml` present, its
    /// properties appended to the `olm.properties` annotation's and the list written back as
    /// operator-controller writes it (see [`merged_properties`]).
    pub fn render_annotations(&self) -> BTreeMap<String, String> {
        let mut ann = self.csv.annotations();
        if let Some(extra) = &self.properties_file
            && let Ok(merged) = merged_properties(&self.csv_file, &self.csv.raw, extra)
        {
            ann.insert(PROPERTIES_ANNOTATION.to_string(), merged);
        }
        ann
    }

    /// Name of a CRD object (`metadata.name`).
    pub fn crd_names(&self) -> impl Iterator<Item = &str> {
        self.crds.iter().map(BundleObject::name)
    }
}

/// The `olm.properties` annotation operator-controller writes when `metadata/properties.yaml`
/// exists: the CSV annotation's properties, then the file's, each decoded as Go's
/// `property.Property` (`type`, then `value` as raw JSON) and the list encoded with
/// `encoding/json` — HTML characters escaped (`>` as `\u003e`), a value from the annotation
/// in its own key order, one from the YAML file with sorted keys (it went through a Go map),
/// and `null` for an empty list (Go's nil slice).
fn merged_properties(file: &str, csv: &Value, extra: &[Value]) -> Result<String, BundleError> {
    let invalid = |e: String| BundleError::InvalidCsv {
        file: file.to_string(),
        message: format!("failed to unmarshal {PROPERTIES_ANNOTATION} annotation: {e}"),
    };
    let existing = csv
        .pointer(&format!(
            "/metadata/annotations/{}",
            PROPERTIES_ANNOTATION.replace('/', "~1")
        ))
        .and_then(Value::as_str);
    let mut all: Vec<Value> = Vec::new();
    if let Some(s) = existing {
        let listed: Vec<Value> = serde_json::from_str::<Option<Vec<Value>>>(s)
            .map_err(|e| invalid(e.to_string()))?
            .unwrap_or_default();
        for p in &listed {
            all.push(as_go_property(p, false).map_err(invalid)?);
        }
    }
    for p in extra {
        all.push(as_go_property(p, true).map_err(invalid)?);
    }
    if all.is_empty() {
        return Ok("null".to_owned());
    }
    Ok(go_json_encode(&Value::Array(all)).trim_end().to_owned())
}

/// One property as Go decodes it into `property.Property` and encodes it back: fields matched
/// ignoring case, only `type` and `value` kept, a missing value written as `null`.
fn as_go_property(p: &Value, sorted: bool) -> Result<Value, String> {
    let obj = match p {
        Value::Object(o) => o,
        Value::Null => return Ok(json!({"type": "", "value": null})),
        other => {
            return Err(
                UnmarshalTypeError::value(Kind::of(other), "property.Property").to_string(),
            );
        }
    };
    let mut type_ = Value::String(String::new());
    let mut value = Value::Null;
    for (k, v) in obj {
        if k.eq_ignore_ascii_case("type") {
            match v {
                Value::String(_) => type_ = v.clone(),
                Value::Null => {}
                other => {
                    return Err(UnmarshalTypeError::field(
                        Kind::of(other),
                        "Property",
                        "type",
                        "string",
                    )
                    .to_string());
                }
            }
        } else if k.eq_ignore_ascii_case("value") {
            value = if sorted { sort_keys(v) } else { v.clone() };
        }
    }
    let mut out = serde_json::Map::new();
    out.insert("type".into(), type_);
    out.insert("value".into(), value);
    Ok(Value::Object(out))
}

fn decode(path: &str, bytes: &[u8]) -> Result<Vec<Value>, BundleError> {
    let text = std::str::from_utf8(bytes).map_err(|e| BundleError::Yaml {
        file: path.to_string(),
        message: format!("invalid UTF-8: {e}"),
    })?;
    goyaml::parse_documents(text).map_err(|message| BundleError::Yaml {
        file: path.to_string(),
        message,
    })
}

fn string_map(path: &str, v: &Value) -> Result<BTreeMap<String, String>, BundleError> {
    let mut out = BTreeMap::new();
    if let Some(m) = v.as_object() {
        for (k, v) in m {
            let Some(s) = olm_goenc::yamlread::scalar_text(v) else {
                return Err(BundleError::Yaml {
                    file: path.to_string(),
                    message: format!("annotation {} must be a string", olm_goenc::quote(k)),
                });
            };
            out.insert(k.clone(), s);
        }
    }
    Ok(out)
}

fn list(path: &str, key: &str, v: &Value) -> Result<Vec<Value>, BundleError> {
    match v {
        Value::Array(a) => Ok(a.clone()),
        Value::Null => Ok(Vec::new()),
        _ => Err(BundleError::Yaml {
            file: path.to_string(),
            message: format!("{} must be a list", olm_goenc::quote(key)),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// operator-controller v1.11.0's `copyMetadataPropertiesToCSV`: annotation entries first, in
    /// their own key order; file entries with sorted keys; `>` escaped; `null` for none.
    #[test]
    fn olm_properties_are_written_back_as_upstream_writes_them() {
        let csv = json!({"metadata": {"annotations": {
            PROPERTIES_ANNOTATION: r#"[{"value": {"z": 1, "a": ">=1"}, "type": "t1", "extra": 1}]"#
        }}});
        let file = [
            json!({"type": "t2", "value": {"z": true, "a": "x"}}),
            json!({"type": "t3"}),
        ];
        assert_eq!(
            merged_properties("csv.yaml", &csv, &file).unwrap(),
            r#"[{"type":"t1","value":{"z":1,"a":"\u003e=1"}},{"type":"t2","value":{"a":"x","z":true}},{"type":"t3","value":null}]"#
        );
        assert_eq!(
            merged_properties("csv.yaml", &json!({}), &[]).unwrap(),
            "null"
        );
        let bad = json!({"metadata": {"annotations": {PROPERTIES_ANNOTATION: r#"[{"type": 5}]"#}}});
        assert_eq!(
            merged_properties("csv.yaml", &bad, &[])
                .unwrap_err()
                .to_string(),
            "csv.yaml: invalid ClusterServiceVersion: failed to unmarshal olm.properties annotation: json: cannot unmarshal number into Go struct field Property.type of type string"
        );
    }

    #[test]
    fn bundle_directories_are_told_from_catalogs() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
        let bundles = data.join("bundles/argocd-operator");
        let version = std::fs::read_dir(&bundles)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.is_dir());
        assert!(version.is_some_and(Bundle::is_bundle_dir));
        assert!(!Bundle::is_bundle_dir(
            data.join("catalogs/community-v4.21")
        ));
        assert!(!Bundle::is_bundle_dir(data.join("no such directory")));
    }
}
