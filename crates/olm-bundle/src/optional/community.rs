//! `community` (deprecated upstream): a bundle that ships APIs removed in Kubernetes 1.22 must
//! keep OpenShift clusters from upgrading past 4.8 — through `olm.maxOpenShiftVersion` in the
//! CSV's `olm.properties` annotation and the `com.redhat.openshift.versions` label of the bundle
//! image's Dockerfile, which the optional value `index-path` names (api v0.45.0
//! `pkg/validation/internal/community.go`). A bundle without such APIs passes.
//!
//! The decision is pure: the caller reads the Dockerfile ([`IndexFile::read`]) and hands it in.
//!
//! As upstream: with no `index-path`, the errors about `olm.properties` are repeated as warnings
//! and a truncated-version warning is dropped (upstream builds the warnings from the errors
//! there). Where upstream prints the removed APIs in Go map order, they are sorted.

use crate::apivalidate::{Finding, Level};
use crate::bundle::Bundle;

/// The optional value naming the bundle image's Dockerfile.
pub const INDEX_PATH_KEY: &str = "index-path";
const OCP_LABEL: &str = "com.redhat.openshift.versions";
/// The first OpenShift release without the APIs Kubernetes 1.22 removed.
const OCP_WITHOUT_V1BETA1: &str = "4.9";
const PROPERTIES: &str = "olm.properties";
const MAX_OCP: &str = "olm.maxOpenShiftVersion";
const MORE_INFO_1_22: &str =
    "More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v1-22";

/// The file `index-path` names, as far as it could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFile {
    /// The path as given.
    pub path: String,
    /// Its text, or why it could not be had.
    pub contents: Result<String, IndexFileError>,
}

/// Why the file `index-path` names could not be read, with Go's `os` error texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexFileError {
    /// `stat <path>: no such file or directory`, …
    Stat(String),
    /// The path is a directory.
    Directory,
    /// `open <path>: permission denied`, …
    Read(String),
}

impl IndexFile {
    /// Reads `path` as upstream does: stat, refuse a directory, read.
    pub fn read(path: &str) -> IndexFile {
        let go = |op: &str, e: &std::io::Error| {
            // Go prints the C library's text starting lower case, without Rust's errno suffix.
            let text = e.to_string();
            let text = text.split(" (os error").next().unwrap_or_default();
            let mut chars = text.chars();
            let text = chars.next().map_or(String::new(), |c| {
                c.to_lowercase().collect::<String>() + chars.as_str()
            });
            format!("{op} {path}: {text}")
        };
        let contents = match std::fs::metadata(path) {
            Err(e) => Err(IndexFileError::Stat(go("stat", &e))),
            Ok(m) if m.is_dir() => Err(IndexFileError::Directory),
            Ok(_) => std::fs::read(path)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(|e| IndexFileError::Read(go("open", &e))),
        };
        IndexFile {
            path: path.to_owned(),
            contents,
        }
    }
}

/// `community` on `b`; `index` is the file `index-path` names, `None` when no path was given.
pub fn validate(b: &Bundle, index: Option<&IndexFile>) -> Vec<Finding> {
    let removed = super::removed_1_22(&super::first_documents(b));
    if removed.is_empty() {
        return Vec::new();
    }
    let apis = super::removed_list(&removed);
    let mut errs = Vec::new();
    let mut warns = Vec::new();
    check_max_openshift_version(b, &apis, &mut errs, &mut warns);
    match index {
        None => {
            // Upstream makes the warnings from the errors here, and drops the earlier warnings.
            warns = errs.clone();
            warns.push(format!(
                "please, inform the path of its index image file via the the optional key values and the key {INDEX_PATH_KEY} to allow this validator check the labels configuration or migrate the API(s) for {apis}. (e.g. {INDEX_PATH_KEY}=./mypath/bundle.Dockerfile). This bundle is using APIs which were deprecated and removed in v1.22. {MORE_INFO_1_22} "
            ));
        }
        Some(file) => errs.extend(check_index_file(file, &apis)),
    }
    let csv = |level, detail: String| Finding {
        level,
        kind: "CSVFileNotValid",
        field: String::new(),
        value: Some(String::new()),
        detail: format!("({}) {detail}", b.csv.name()),
    };
    warns
        .into_iter()
        .map(|w| csv(Level::Warning, w))
        .chain(errs.into_iter().map(|e| csv(Level::Error, e)))
        .collect()
}

fn tolerant(v: &str) -> Result<olm_version::blang::Version, String> {
    olm_version::blang::Version::parse_tolerant(v).map_err(|e| e.to_string())
}

fn at_least_4_9(v: &olm_version::blang::Version) -> bool {
    tolerant(OCP_WITHOUT_V1BETA1).is_ok_and(|limit| v.cmp(&limit).is_ge())
}

/// `olm.properties` must hold `olm.maxOpenShiftVersion` below 4.9, as `major.minor`.
fn check_max_openshift_version(
    b: &Bundle,
    apis: &str,
    errs: &mut Vec<String>,
    warns: &mut Vec<String>,
) {
    let v = OCP_WITHOUT_V1BETA1;
    let properties = b.csv.raw["metadata"]["annotations"][PROPERTIES]
        .as_str()
        .unwrap_or_default();
    if properties.is_empty() {
        errs.push(format!(
            "csv.Annotations not specified {MAX_OCP} for an OCP version < {v}. This annotation is required to prevent the user from upgrading their OCP cluster before they have installed a version of their operator which is compatible with {v}. This bundle is using APIs which were deprecated and removed in v1.22. {MORE_INFO_1_22} which are no longer supported on {v}. Migrate the API(s) for {apis} or use the annotation"
        ));
        return;
    }
    let Some(list) = go_properties(properties) else {
        errs.push(format!(
            "csv.Annotations has an invalid value specified for {PROPERTIES}. Please, check the value  ({properties}) and ensure that it is an array such as: \"olm.properties\": '[{{\"type\": \"key name\", \"value\": \"key value\"}}]'"
        ));
        return;
    };
    let Some((_, max)) = list.into_iter().find(|(t, _)| t == MAX_OCP) else {
        errs.push(format!(
            "csv.Annotations.{PROPERTIES} with the key `{MAX_OCP}` and a value with an OCP version which is < {v} is required for any operator bundle that is using APIs which were deprecated and removed in v1.22. {MORE_INFO_1_22}. Migrate the API(s) for {apis} or use the annotation"
        ));
        return;
    };
    let parsed = match tolerant(&max) {
        Ok(p) => p,
        Err(e) => {
            errs.push(format!(
                "csv.Annotations.{PROPERTIES} has an invalid value. Unable to parse ({max}) using semver : {e}"
            ));
            return;
        }
    };
    let truncated = olm_version::blang::Version {
        major: parsed.major,
        minor: parsed.minor,
        patch: 0,
        pre: Vec::new(),
        build: Vec::new(),
    };
    if parsed.cmp(&truncated).is_ne() {
        warns.push(format!(
            "csv.Annotations.{PROPERTIES} has an invalid value. {MAX_OCP} must specify only major.minor versions, {parsed} will be truncated to {truncated}"
        ));
        return;
    }
    if at_least_4_9(&parsed) {
        errs.push(format!(
            "csv.Annotations.{PROPERTIES} with the key and value for {MAX_OCP} has the OCP version value {max} which is >= of {v}. This bundle is using APIs which were deprecated and removed in v1.22. {MORE_INFO_1_22}. Migrate the API(s) for {apis} or inform in this property an OCP version which is < {v}"
        ));
    }
}

/// `olm.properties` as Go's `encoding/json` reads it into a list of `{Type, Value string}`:
/// `(type, value)` pairs, keys matched without regard to case; `None` where Go fails.
fn go_properties(text: &str) -> Option<Vec<(String, String)>> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let items = match value {
        serde_json::Value::Null => return Some(Vec::new()),
        serde_json::Value::Array(items) => items,
        _ => return None,
    };
    let mut out = Vec::new();
    for item in items {
        let (mut t, mut v) = (String::new(), String::new());
        match item {
            serde_json::Value::Null => {}
            serde_json::Value::Object(fields) => {
                for (key, field) in fields {
                    let slot = if key.eq_ignore_ascii_case("type") {
                        &mut t
                    } else if key.eq_ignore_ascii_case("value") {
                        &mut v
                    } else {
                        continue;
                    };
                    match field {
                        serde_json::Value::String(s) => *slot = s,
                        serde_json::Value::Null => {}
                        _ => return None,
                    }
                }
            }
            _ => return None,
        }
        out.push((t, v));
    }
    Some(out)
}

/// Upstream's clean-up of a label value before parsing it: no quotes, no `v` anywhere.
fn clean(value: &str) -> String {
    value.replace(['\'', '"', 'v'], "")
}

/// The Dockerfile's `com.redhat.openshift.versions` label must keep the bundle below 4.9:
/// `=v4.8` or a range `v4.6-v4.8`. At most one error.
fn check_index_file(file: &IndexFile, apis: &str) -> Option<String> {
    let path = &file.path;
    let text = match &file.contents {
        Err(IndexFileError::Stat(e)) => {
            return Some(format!(
                "the index image in the path ({path}) was not found. Please, inform the path of the bundle operator index image via the the optional key values and the key {INDEX_PATH_KEY}. (e.g. {INDEX_PATH_KEY}=./mypath/bundle.Dockerfile). Error : {e}"
            ));
        }
        Err(IndexFileError::Directory) => {
            return Some(format!(
                "the index image in the path ({path}) is not file. Please, inform the path of its index image via the the optional key values and the key {INDEX_PATH_KEY}. (e.g. {INDEX_PATH_KEY}=./mypath/bundle.Dockerfile). The value informed is a diretory and not a file"
            ));
        }
        Err(IndexFileError::Read(e)) => {
            return Some(format!(
                "unable to read the index image in the path ({path}). Error : {e}"
            ));
        }
        Ok(text) => text,
    };
    let label_hint = format!(
        "to ensure that the index image will be generated with its label. (e.g. LABEL {OCP_LABEL}='4.6-4.8')"
    );
    let Some(line) = text.split('\n').find(|l| l.contains(OCP_LABEL)) else {
        return Some(format!(
            "this bundle is using APIs which were deprecated and removed in v1.22. {MORE_INFO_1_22}. Migrate the APIs for {apis} or provide compatible version(s) via the labels. (e.g. LABEL {OCP_LABEL}='4.6-4.8')"
        ));
    };
    if !line.contains('=') {
        return Some(format!("invalid syntax ({line}) for ({OCP_LABEL})"));
    }
    let parts: Vec<&str> = line.split('=').collect();
    let unparsable = |v: &str| format!("unable to parse the value ({v}) on ({OCP_LABEL})");
    if parts.len() > 2 && !parts[2].is_empty() {
        // `="=v4.8"`: exactly that release.
        let version = clean(parts[2]);
        return match tolerant(&version) {
            Err(_) => Some(unparsable(&version)),
            Ok(v) if at_least_4_9(&v) => Some(format!(
                // "geneared" is upstream's spelling.
                "this bundle is using APIs which were deprecated and removed in v1.22. {MORE_INFO_1_22}. Migrate the API(s) for {apis} or provide compatible version(s) by using the {OCP_LABEL} annotation in `metadata/annotations.yaml` to ensure that the index image will be geneared with its label. (e.g. LABEL {OCP_LABEL}='4.6-4.8')"
            )),
            Ok(_) => None,
        };
    }
    let range = clean(parts[1]);
    if range.len() <= 1 {
        return Some(format!("unable to get the range informed on {OCP_LABEL}"));
    }
    if !range.contains('-') {
        return Some(format!(
            "this bundle is using APIs which were deprecated and removed in v1.22. {MORE_INFO_1_22} The {range} allows to distribute it on >= {OCP_WITHOUT_V1BETA1}. Migrate the API(s) for {apis} or provide compatible version(s) by using the {OCP_LABEL} annotation in `metadata/annotations.yaml` {label_hint}"
        ));
    }
    let upper = range.split('-').nth(1).unwrap_or_default();
    match tolerant(upper) {
        Err(_) => Some(unparsable(upper)),
        Ok(v) if at_least_4_9(&v) => Some(format!(
            "this bundle is using APIs which were deprecated and removed in v1.22. {MORE_INFO_1_22}. Upgrade the APIs from for {apis} or provide compatible distribution version(s) by using the {OCP_LABEL} annotation in `metadata/annotations.yaml` to ensure that the index image will be generated with its label. (e.g. LABEL {OCP_LABEL}='4.6-4.8')"
        )),
        Ok(_) => None,
    }
}
