//! Is replacing a CustomResourceDefinition safe for the objects already stored?
//!
//! This is OLM v1's CRD upgrade-safety preflight (operator-controller with sigs.k8s.io/crdify,
//! configured as upstream configures it): CRD-wide checks (scope, removal of stored versions,
//! removal of existing fields), then property checks on the flattened schema of every version
//! present in both CRDs, and between every pair of served versions of the new CRD (skipped when
//! the new CRD converts through a webhook). Issues the old CRD already had between its own served
//! versions are not held against the new one. Description changes are ignored and enum additions
//! allowed; any schema change no check accounts for is an "unhandled" error, so unknown risks
//! fail closed.
//!
//! Both CRDs are normalised as the Go API types would see them first, so `nullable: false` and
//! an absent `nullable` are the same thing, as they are for the API server.
//!
//! Upstream iterates Go maps when collecting messages; here messages are sorted (CRD-wide checks
//! by name, then same-version results by version and path, then served-version results), so a
//! report is stable.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::naming::go_json_encode;
use crate::typed::normalize_schema;
use crate::validate::go_quote;

/// The outcome of comparing an installed CRD with its replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeReport {
    /// `metadata.name` of the new CRD.
    pub crd_name: String,
    /// One line per problem, in upstream's format: `<check>: <message>` for CRD-wide checks,
    /// `<version>: <path>: <check>: <message>` for property checks (served-version pairs are
    /// written `<a> -> <b>`).
    pub errors: Vec<String>,
}

impl UpgradeReport {
    /// Whether the upgrade has no problem at all.
    pub fn is_safe(&self) -> bool {
        self.errors.is_empty()
    }
}

impl std::fmt::Display for UpgradeReport {
    /// Upstream's condition text: `validating upgrade for CRD "<name>": ` and the problems
    /// joined by newlines.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "validating upgrade for CRD {}: {}",
            go_quote(&self.crd_name),
            self.errors.join("\n")
        )
    }
}

/// Compares an installed CRD (`old`, whose `status.storedVersions` matters) with the CRD that
/// would replace it.
pub fn check_upgrade(old: &Value, new: &Value) -> UpgradeReport {
    let crd_name = new
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut errors = Vec::new();

    // CRD-wide checks, by name.
    errors.extend(
        existing_field_removal(old, new)
            .into_iter()
            .map(|e| format!("existingFieldRemoval: {e}")),
    );
    let (old_scope, new_scope) = (str_at(old, "/spec/scope"), str_at(new, "/spec/scope"));
    if old_scope != new_scope {
        errors.push(format!(
            "scope: scope changed : {} -> {}",
            go_quote(old_scope),
            go_quote(new_scope)
        ));
    }
    let new_versions: BTreeSet<&str> = versions(new).iter().map(|(n, _)| *n).collect();
    let removed: Vec<&str> = old
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter(|v| !new_versions.contains(v))
                .collect()
        })
        .unwrap_or_default();
    if !removed.is_empty() {
        errors.push(format!(
            "storedVersionRemoval: stored versions removed : {}",
            olm_goenc::slice(&removed)
        ));
    }

    // The same version before and after.
    let new_by_name: BTreeMap<&str, &Value> = versions(new).into_iter().collect();
    for (name, old_v) in versions(old) {
        if let Some(new_v) = new_by_name.get(name) {
            for (path, msg) in compare_versions(old_v, new_v) {
                errors.push(format!("{name}: {path}: {msg}"));
            }
        }
    }

    // Served versions of the new CRD against each other, minus what the old CRD already had.
    let converts_by_webhook = str_at(new, "/spec/conversion/strategy") == "Webhook";
    if !converts_by_webhook {
        let before: BTreeSet<String> = served_pairs(old).into_iter().collect();
        errors.extend(
            served_pairs(new)
                .into_iter()
                .filter(|e| !before.contains(e)),
        );
    }
    UpgradeReport { crd_name, errors }
}

/// Why two CRD files could not be compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CrdFilesError {
    /// A file is not YAML or JSON.
    #[error("{side} CRD: invalid YAML: {message}")]
    Yaml {
        /// `old` or `new`.
        side: &'static str,
        /// The parser's message.
        message: String,
    },
    /// A file holds no CustomResourceDefinition.
    #[error("{side} CRD: no CustomResourceDefinition found")]
    NoCrd {
        /// `old` or `new`.
        side: &'static str,
    },
    /// A file holds two CRDs of one name: applying it would keep only the last, so which one
    /// to compare is not clear.
    #[error(
        "{side} CRD: the file holds CRD {} more than once",
        olm_goenc::quote(name)
    )]
    DuplicateCrd {
        /// `old` or `new`.
        side: &'static str,
        /// The repeated `metadata.name`.
        name: String,
    },
    /// A CRD lists one version name twice, which the API server refuses
    /// (`spec.versions[i].name: Duplicate value`), so no cluster holds such a CRD.
    #[error(
        "{side} CRD {}: spec.versions[{index}].name: Duplicate value: {}",
        olm_goenc::quote(crd),
        olm_goenc::quote(version)
    )]
    DuplicateVersion {
        /// `old` or `new`.
        side: &'static str,
        /// The CRD's `metadata.name`.
        crd: String,
        /// The position of the second entry of that name in `spec.versions`.
        index: usize,
        /// The repeated version name.
        version: String,
    },
    /// The files share no CRD name: a CRD is only ever replaced by the CRD of the same name.
    #[error(
        "the old file has CRD {} and the new file has CRD {}: a CRD can only be compared with the CRD of the same name",
        olm_goenc::slice(old),
        olm_goenc::slice(new)
    )]
    NameMismatch {
        /// CRD names in the old file.
        old: Vec<String>,
        /// CRD names in the new file.
        new: Vec<String>,
    },
}

/// What comparing two CRD files found: a report for every CRD in both (by name, in the new
/// file's order), and the names only one side has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilesReport {
    /// One report per CRD name present in both files.
    pub reports: Vec<UpgradeReport>,
    /// CRDs only in the new file (nothing installed to break, as upstream skips them).
    pub added: Vec<String>,
    /// CRDs only in the old file (replacing the file leaves them installed).
    pub missing: Vec<String>,
}

impl FilesReport {
    /// Whether every CRD's upgrade is safe.
    pub fn is_safe(&self) -> bool {
        self.reports.iter().all(UpgradeReport::is_safe)
    }
}

/// [`check_upgrade`] on two YAML or JSON texts, every CustomResourceDefinition of the new text
/// against the one of the same name in the old text. `apiextensions.k8s.io/v1beta1` CRDs are
/// first converted as the API server converts them ([`v1beta1_to_v1`]); upstream's preflight
/// skips such a CRD, since a cluster only ever returns v1.
///
/// A CRD read from a file usually has no `status.storedVersions` (an installed one always
/// does), which would silently disable the stored-version check; when it is missing, the old
/// CRD's storage version is taken as stored, which is what a cluster that installed it has.
pub fn check_upgrade_texts(old: &str, new: &str) -> Result<FilesReport, CrdFilesError> {
    let read = |side: &'static str, text: &str| -> Result<Vec<Value>, CrdFilesError> {
        let docs = crate::goyaml::parse_documents(text).map_err(|e| CrdFilesError::Yaml {
            side,
            message: e.to_string(),
        })?;
        let crds: Vec<Value> = docs
            .into_iter()
            .filter(|d| d.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
            .map(|d| v1beta1_to_v1(&d))
            .collect();
        if crds.is_empty() {
            return Err(CrdFilesError::NoCrd { side });
        }
        // Each CRD is matched by name and each version by name; a repeat would make the
        // comparison pick one of them, and report changes between a CRD and itself.
        let mut names = BTreeSet::new();
        for crd in &crds {
            let crd_name = str_at(crd, "/metadata/name");
            if !names.insert(crd_name) {
                return Err(CrdFilesError::DuplicateCrd {
                    side,
                    name: crd_name.to_string(),
                });
            }
            let mut seen = BTreeSet::new();
            for (index, (version, _)) in versions(crd).into_iter().enumerate() {
                if !seen.insert(version) {
                    return Err(CrdFilesError::DuplicateVersion {
                        side,
                        crd: crd_name.to_string(),
                        index,
                        version: version.to_string(),
                    });
                }
            }
        }
        Ok(crds)
    };
    let (olds, news) = (read("old", old)?, read("new", new)?);
    let name = |c: &Value| str_at(c, "/metadata/name").to_string();
    let old_names: Vec<String> = olds.iter().map(name).collect();
    let new_names: Vec<String> = news.iter().map(name).collect();
    if !new_names.iter().any(|n| old_names.contains(n)) {
        return Err(CrdFilesError::NameMismatch {
            old: old_names,
            new: new_names,
        });
    }
    let mut out = FilesReport {
        reports: Vec::new(),
        added: Vec::new(),
        missing: old_names
            .iter()
            .filter(|n| !new_names.contains(n))
            .cloned()
            .collect(),
    };
    for new_crd in &news {
        let Some(old_crd) = olds.iter().find(|o| name(o) == name(new_crd)) else {
            out.added.push(name(new_crd));
            continue;
        };
        out.reports
            .push(check_upgrade(&with_stored_versions(old_crd), new_crd));
    }
    Ok(out)
}

fn with_stored_versions(crd: &Value) -> Value {
    let mut old = crd.clone();
    let has_stored = old
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    if !has_stored {
        let stored: Vec<Value> = versions(&old)
            .into_iter()
            .filter(|(_, v)| v.get("storage").and_then(Value::as_bool).unwrap_or(false))
            .map(|(n, _)| Value::String(n.to_string()))
            .collect();
        if let Some(m) = old.as_object_mut() {
            let status = m
                .entry("status")
                .or_insert_with(|| Value::Object(Map::new()));
            if !status.is_object() {
                *status = Value::Object(Map::new());
            }
            if let Some(st) = status.as_object_mut() {
                st.insert("storedVersions".into(), Value::Array(stored));
            }
        }
    }
    old
}

/// An `apiextensions.k8s.io/v1beta1` CRD as the API server serves it as v1 (other CRDs are
/// returned unchanged): the top-level `version` becomes a served, stored entry of `versions` when
/// there is none, and the top-level `validation`, `subresources` and `additionalPrinterColumns`
/// (`JSONPath` → `jsonPath`) move into every version that has none of its own; the scope defaults
/// to `Namespaced`.
pub fn v1beta1_to_v1(crd: &Value) -> Value {
    if str_at(crd, "/apiVersion") != "apiextensions.k8s.io/v1beta1" {
        return crd.clone();
    }
    let mut out = crd.clone();
    out["apiVersion"] = Value::String("apiextensions.k8s.io/v1".into());
    let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) else {
        return out;
    };
    let validation = spec.remove("validation");
    let subresources = spec.remove("subresources");
    let columns = spec.remove("additionalPrinterColumns");
    let version = spec.remove("version");
    if !spec.contains_key("scope") {
        spec.insert("scope".into(), Value::String("Namespaced".into()));
    }
    let has_versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .is_some_and(|v| !v.is_empty());
    if !has_versions && let Some(Value::String(v)) = &version {
        spec.insert(
            "versions".into(),
            serde_json::json!([{"name": v, "served": true, "storage": true}]),
        );
    }
    let columns = columns.map(|c| {
        let mut c = c;
        for col in c.as_array_mut().into_iter().flatten() {
            if let Some(m) = col.as_object_mut()
                && let Some(p) = m.remove("JSONPath")
            {
                m.insert("jsonPath".into(), p);
            }
        }
        c
    });
    for v in spec
        .get_mut("versions")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        let Some(vm) = v.as_object_mut() else {
            continue;
        };
        if let Some(schema) = &validation
            && !vm.contains_key("schema")
        {
            vm.insert("schema".into(), schema.clone());
        }
        if let Some(sr) = &subresources
            && !vm.contains_key("subresources")
        {
            vm.insert("subresources".into(), sr.clone());
        }
        if let Some(c) = &columns
            && !vm.contains_key("additionalPrinterColumns")
        {
            vm.insert("additionalPrinterColumns".into(), c.clone());
        }
    }
    out
}

fn str_at<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

/// `(name, version object)` of every `spec.versions[]` entry.
fn versions(crd: &Value) -> Vec<(&str, &Value)> {
    crd.pointer("/spec/versions")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|v| (str_at(v, "/name"), v)).collect())
        .unwrap_or_default()
}

/// A version's schema as crdify holds it: the Go types' view ([`normalize_schema`]), numbers as
/// Go writes them, and a `null` default or example read as none (Go decodes JSON `null` into a
/// nil pointer).
fn schema_of(version: &Value) -> Value {
    let mut s = version
        .pointer("/schema/openAPIV3Schema")
        .cloned()
        .unwrap_or(Value::Null);
    normalize_schema(&mut s);
    go_numbers(&mut s);
    for_each_node_mut(&mut s, &mut |m| {
        for key in ["default", "example"] {
            if m.get(key).is_some_and(Value::is_null) {
                m.remove(key);
            }
        }
    });
    s
}

fn served_pairs(crd: &Value) -> Vec<String> {
    let mut served: Vec<(&str, &Value)> = versions(crd)
        .into_iter()
        .filter(|(_, v)| v.get("served").and_then(Value::as_bool).unwrap_or(false))
        .collect();
    served.sort_by(|a, b| kube_version_order(a.0, b.0));
    let mut out = Vec::new();
    for i in 0..served.len() {
        for j in i + 1..served.len() {
            for (path, msg) in compare_versions(served[i].1, served[j].1) {
                out.push(format!("{} -> {}: {path}: {msg}", served[i].0, served[j].0));
            }
        }
    }
    out
}

/// Kubernetes' version order (`CompareKubeAwareVersionStrings`), ascending: names that are not
/// `v<N>[alpha|beta<M>]` first (reverse alphabetical), then alpha, beta and GA versions, each by
/// number.
pub fn kube_version_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn parse(s: &str) -> Option<(u8, u64, u64)> {
        let rest = s.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: u64 = digits.parse().ok()?;
        if major == 0 {
            return None;
        }
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((2, major, 0));
        }
        let (kind, num) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            return None;
        };
        let minor: u64 = num.parse().ok()?;
        Some((kind, major, minor))
    }
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Greater,
        (None, Some(_)) => std::cmp::Ordering::Less,
        (None, None) => b.cmp(a),
    }
}

/// Every schema node by its simple path (`^.spec.foo`, `^.spec.list.items`, `^.x.allOf[0]`).
/// Nodes are borrowed: copying every subtree at every level made large CRDs quadratic.
fn flatten(schema: &Value) -> BTreeMap<String, &Value> {
    let mut out = BTreeMap::new();
    walk(schema, "^".to_string(), &mut out);
    out
}

fn walk<'a>(s: &'a Value, path: String, out: &mut BTreeMap<String, &'a Value>) {
    let Some(m) = s.as_object() else { return };
    out.insert(path.clone(), s);
    match m.get("items") {
        Some(v @ Value::Object(_)) => walk(v, format!("{path}.items"), out),
        Some(Value::Array(a)) => {
            for (i, v) in a.iter().enumerate() {
                walk(v, format!("{path}.items[{i}]"), out);
            }
        }
        _ => {}
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        for (i, v) in m
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            walk(v, format!("{path}.{key}[{i}]"), out);
        }
    }
    if let Some(v) = m.get("not") {
        walk(v, format!("{path}.not"), out);
    }
    for (k, v) in m
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        walk(v, format!("{path}.{k}"), out);
    }
    if let Some(v) = m.get("additionalProperties") {
        walk(v, format!("{path}.additionalProperties"), out);
    }
    for key in ["patternProperties", "definitions", "dependencies"] {
        for (k, v) in m.get(key).and_then(Value::as_object).into_iter().flatten() {
            walk(v, format!("{path}.{key}[{k}]"), out);
        }
    }
    if let Some(v) = m.get("additionalItems") {
        walk(v, format!("{path}.additionalItems"), out);
    }
}

/// Calls `f` on every schema node below and including `s`, by the keywords that hold schemas.
fn for_each_node_mut(s: &mut Value, f: &mut dyn FnMut(&mut Map<String, Value>)) {
    let Some(m) = s.as_object_mut() else { return };
    f(m);
    for (key, child) in m.iter_mut() {
        match (key.as_str(), child) {
            (
                "items" | "not" | "additionalProperties" | "additionalItems",
                c @ Value::Object(_),
            ) => for_each_node_mut(c, f),
            ("items" | "allOf" | "anyOf" | "oneOf", Value::Array(a)) => {
                a.iter_mut().for_each(|c| for_each_node_mut(c, f))
            }
            (
                "properties" | "patternProperties" | "definitions" | "dependencies",
                Value::Object(o),
            ) => o.values_mut().for_each(|c| for_each_node_mut(c, f)),
            _ => {}
        }
    }
}

/// Numbers as Go holds them after sigs.k8s.io/yaml: a float with an integral value is written
/// (and so compared) as an integer, so `1.0` and `1` are the same default.
fn go_numbers(v: &mut Value) {
    match v {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 1e21
            {
                // Exact: f is integral and well inside i128.
                let i = f as i128;
                if let Ok(i) = i64::try_from(i) {
                    *v = Value::from(i);
                } else if let Ok(u) = u64::try_from(i) {
                    *v = Value::from(u);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(go_numbers),
        Value::Object(m) => m.values_mut().for_each(go_numbers),
        _ => {}
    }
}

/// Keywords whose child schemas crdify takes out of a node before comparing it: each child is
/// compared at its own path. The other keywords that hold schemas (`allOf`, `additionalProperties`,
/// `not`, …) stay in the node as crdify leaves them, so a change below them is also an unhandled
/// change of the node itself.
const CHILD_KEYWORDS: &[&str] = &["properties", "items"];

fn without_children(s: &Value) -> Map<String, Value> {
    // Copies only what stays: copying the children first made every node cost its subtree.
    s.as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| !CHILD_KEYWORDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn existing_field_removal(old: &Value, new: &Value) -> Vec<String> {
    let old_by_name: BTreeMap<&str, &Value> = versions(old).into_iter().collect();
    let mut out = Vec::new();
    for (name, new_v) in versions(new) {
        let Some(old_v) = old_by_name.get(name) else {
            continue;
        };
        let (old_schema, new_schema) = (schema_of(old_v), schema_of(new_v));
        let before = flatten(&old_schema);
        let after = flatten(&new_schema);
        for path in before.keys().filter(|p| !after.contains_key(*p)) {
            out.push(format!("removed field : {name}.{path}"));
        }
    }
    out
}

/// Property checks between two versions: `(path, "<check>: <message>")`, sorted by path.
fn compare_versions(old_v: &Value, new_v: &Value) -> Vec<(String, String)> {
    let (old_schema, new_schema) = (schema_of(old_v), schema_of(new_v));
    let before = flatten(&old_schema);
    let after = flatten(&new_schema);
    let mut out = Vec::new();
    for (path, old_node) in &before {
        let mut a = without_children(old_node);
        let mut b = match after.get(path) {
            Some(n) => without_children(n),
            None => Map::new(),
        };
        if a == b {
            continue;
        }
        for msg in compare_properties(&mut a, &mut b) {
            out.push((path.clone(), msg));
        }
    }
    out
}

fn num_text(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => crate::goyaml::go_format_g(n.as_f64().unwrap_or(0.0)),
        other => other.to_string(),
    }
}

/// The bytes Go holds for a JSON value of a CRD (`apiextensionsv1.JSON.Raw`): sigs.k8s.io/yaml
/// re-encodes through a Go map, so object keys come out sorted.
fn raw(v: &Value) -> String {
    go_json_encode(&olm_goenc::json::sort_keys(v))
        .trim_end()
        .to_string()
}

/// `%v` of a Go float64 or int64 schema number.
fn go_v_number(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => crate::goyaml::go_format_g(n.as_f64().unwrap_or(0.0)),
        other => other.to_string(),
    }
}

/// `%v` of a Go string list: `[a b]`.
fn go_v_strings(v: Option<&Value>) -> String {
    let items: Vec<&str> = v
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    format!("[{}]", items.join(" "))
}

/// The generated protobuf `String()` of `*JSON`: `&JSON{Raw:*[123 125],}`.
fn pb_json(v: Option<&Value>) -> String {
    match v {
        None => "nil".into(),
        Some(v) => {
            let bytes: Vec<String> = raw(v).bytes().map(|b| b.to_string()).collect();
            format!("&JSON{{Raw:*[{}],}}", bytes.join(" "))
        }
    }
}

/// The generated protobuf `String()` of `*ExternalDocumentation`.
fn pb_external_docs(v: Option<&Value>) -> String {
    match v {
        None => "nil".into(),
        Some(v) => format!(
            "&ExternalDocumentation{{Description:{},URL:{},}}",
            str_at(v, "/description"),
            str_at(v, "/url")
        ),
    }
}

/// The generated protobuf `String()` of a `*JSONSchemaPropsOrBool`.
fn pb_or_bool(v: Option<&Value>) -> Option<String> {
    Some(match v {
        None => "nil".into(),
        Some(Value::Bool(b)) => format!("&JSONSchemaPropsOrBool{{Allows:{b},Schema:nil,}}"),
        Some(v) => format!(
            "&JSONSchemaPropsOrBool{{Allows:true,Schema:{},}}",
            pb_schema(Some(v))?
        ),
    })
}

/// The generated protobuf `String()` of a `*JSONSchemaPropsOrArray`.
fn pb_items(v: Option<&Value>) -> Option<String> {
    Some(match v {
        None => "nil".to_string(),
        Some(Value::Array(a)) => {
            let mut out =
                "&JSONSchemaPropsOrArray{Schema:nil,JSONSchemas:[]JSONSchemaProps{".to_string();
            for e in a {
                out.push_str(pb_schema(Some(e))?.trim_start_matches('&'));
                out.push(',');
            }
            out.push_str("},}");
            out
        }
        Some(v) => format!(
            "&JSONSchemaPropsOrArray{{Schema:{},JSONSchemas:[]JSONSchemaProps{{}},}}",
            pb_schema(Some(v))?
        ),
    })
}

/// The entries of the schema map `m[field]` (`properties`, `patternProperties`, `definitions`,
/// `dependencies`) sorted by key, as Go prints maps, each value as `%v` prints it (a dependency
/// is a `JSONSchemaPropsOrStringArray`: `{<Schema> <Property>}`); both printers of a schema
/// lay these out in their own way. `None` when a value's text is not reproducible.
fn go_v_map_entries<'a>(m: &'a Map<String, Value>, field: &str) -> Option<Vec<(&'a str, String)>> {
    let mut entries: Vec<(&String, &Value)> = m
        .get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .collect();
    entries.sort_by_key(|(key, _)| *key);
    entries
        .into_iter()
        .map(|(key, v)| {
            let shown = match v {
                _ if field != "dependencies" => go_v_schema(v)?,
                Value::Array(_) => format!("{{nil {}}}", go_v_strings(Some(v))),
                _ => format!("{{{} []}}", pb_schema(Some(v))?),
            };
            Some((key.as_str(), shown))
        })
        .collect()
}

/// Go's `%v` of a `JSONSchemaProps` value (not a pointer, so not its `String()`): every field in
/// struct order, separated by spaces, in braces. Fields whose type has a `String()` method
/// (`*JSON`, `*JSONSchemaProps`, `*JSONSchemaPropsOrArray`, `*JSONSchemaPropsOrBool`,
/// `*ExternalDocumentation`) print through it; other pointers print `<nil>` or their address,
/// which is not reproducible: then `None`.
fn go_v_schema(s: &Value) -> Option<String> {
    let m = s.as_object()?;
    let st = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let ptr = |k: &str| match m.get(k) {
        None => Some("<nil>".to_string()),
        Some(_) => None,
    };
    let flag = |k: &str| {
        m.get(k)
            .and_then(Value::as_bool)
            .unwrap_or(false)
            .to_string()
    };
    let list = |k: &str| -> Option<String> {
        let shown: Option<Vec<String>> = m
            .get(k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(go_v_schema)
            .collect();
        Some(format!("[{}]", shown?.join(" ")))
    };
    let map = |k: &str| -> Option<String> {
        let shown: Vec<String> = go_v_map_entries(m, k)?
            .into_iter()
            .map(|(key, v)| format!("{key}:{v}"))
            .collect();
        Some(format!("map[{}]", shown.join(" ")))
    };
    let enums: Vec<String> = m
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| {
            let bytes: Vec<String> = raw(e).bytes().map(|b| b.to_string()).collect();
            format!("{{[{}]}}", bytes.join(" "))
        })
        .collect();
    let rules: Option<Vec<String>> = m
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| {
            if r.get("reason").is_some() || r.get("optionalOldSelf").is_some() {
                return None;
            }
            let rs = |k: &str| str_at(r, &format!("/{k}")).to_string();
            Some(format!(
                "{{{} {} {} <nil> {} <nil>}}",
                rs("rule"),
                rs("message"),
                rs("messageExpression"),
                rs("fieldPath")
            ))
        })
        .collect();
    let fields = [
        st("id"),
        st("$schema"),
        ptr("$ref")?,
        st("description"),
        st("type"),
        st("format"),
        st("title"),
        pb_json(m.get("default")),
        ptr("maximum")?,
        flag("exclusiveMaximum"),
        ptr("minimum")?,
        flag("exclusiveMinimum"),
        ptr("maxLength")?,
        ptr("minLength")?,
        st("pattern"),
        ptr("maxItems")?,
        ptr("minItems")?,
        flag("uniqueItems"),
        ptr("multipleOf")?,
        format!("[{}]", enums.join(" ")),
        ptr("maxProperties")?,
        ptr("minProperties")?,
        go_v_strings(m.get("required")),
        pb_items(m.get("items"))?,
        list("allOf")?,
        list("oneOf")?,
        list("anyOf")?,
        pb_schema(m.get("not"))?,
        map("properties")?,
        pb_or_bool(m.get("additionalProperties"))?,
        map("patternProperties")?,
        map("dependencies")?,
        pb_or_bool(m.get("additionalItems"))?,
        map("definitions")?,
        pb_external_docs(m.get("externalDocs")),
        pb_json(m.get("example")),
        flag("nullable"),
        ptr("x-kubernetes-preserve-unknown-fields")?,
        flag("x-kubernetes-embedded-resource"),
        flag("x-kubernetes-int-or-string"),
        go_v_strings(m.get("x-kubernetes-list-map-keys")),
        ptr("x-kubernetes-list-type")?,
        ptr("x-kubernetes-map-type")?,
        format!("[{}]", rules?.join(" ")),
    ];
    Some(format!("{{{}}}", fields.join(" ")))
}

/// The generated protobuf `String()` of a `*JSONSchemaProps` (gogo-protobuf's, which crdify's
/// oneOf check prints). Maps of schemas print their values with Go's plain `%v` of a struct
/// ([`go_v_schema`]); when that would print a pointer address, the text is not reproducible
/// and `None` is returned.
fn pb_schema(s: Option<&Value>) -> Option<String> {
    let Some(s) = s else {
        return Some("nil".into());
    };
    let m = s.as_object()?;
    let st = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let ptr = |k: &str| match m.get(k) {
        None => "nil".to_string(),
        Some(Value::String(x)) => format!("*{x}"),
        Some(Value::Bool(b)) => format!("*{b}"),
        Some(n) => format!("*{}", go_v_number(n)),
    };
    let flag = |k: &str| {
        m.get(k)
            .and_then(Value::as_bool)
            .unwrap_or(false)
            .to_string()
    };
    let list = |k: &str| -> Option<String> {
        let mut out = "[]JSONSchemaProps{".to_string();
        for e in m.get(k).and_then(Value::as_array).into_iter().flatten() {
            out.push_str(pb_schema(Some(e))?.trim_start_matches('&'));
            out.push(',');
        }
        out.push('}');
        Some(out)
    };
    // gogo writes `<type>{key: %v,…}` with the keys sorted.
    let map = |k: &str, ty: &str| -> Option<String> {
        let mut out = format!("{ty}{{");
        for (key, shown) in go_v_map_entries(m, k)? {
            out.push_str(&format!("{key}: {shown},"));
        }
        out.push('}');
        Some(out)
    };
    let or_bool = |k: &str| pb_or_bool(m.get(k));
    let items = pb_items(m.get("items"))?;
    let mut enums = "[]JSON{".to_string();
    for e in m
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        enums.push_str(pb_json(Some(e)).trim_start_matches('&'));
        enums.push(',');
    }
    enums.push('}');
    let mut rules = "[]ValidationRule{".to_string();
    for r in m
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let rs = |k: &str| str_at(r, &format!("/{k}")).to_string();
        let rp = |k: &str| match r.get(k) {
            None => "nil".to_string(),
            Some(Value::String(x)) => format!("*{x}"),
            Some(other) => format!("*{other}"),
        };
        rules.push_str(&format!(
            "ValidationRule{{Rule:{},Message:{},MessageExpression:{},Reason:{},FieldPath:{},OptionalOldSelf:{},}},",
            rs("rule"),
            rs("message"),
            rs("messageExpression"),
            rp("reason"),
            rs("fieldPath"),
            rp("optionalOldSelf")
        ));
    }
    rules.push('}');
    let fields: Vec<(&str, String)> = vec![
        ("ID", st("id")),
        ("Schema", st("$schema")),
        ("Ref", ptr("$ref")),
        ("Description", st("description")),
        ("Type", st("type")),
        ("Format", st("format")),
        ("Title", st("title")),
        ("Default", pb_json(m.get("default"))),
        ("Maximum", ptr("maximum")),
        ("ExclusiveMaximum", flag("exclusiveMaximum")),
        ("Minimum", ptr("minimum")),
        ("ExclusiveMinimum", flag("exclusiveMinimum")),
        ("MaxLength", ptr("maxLength")),
        ("MinLength", ptr("minLength")),
        ("Pattern", st("pattern")),
        ("MaxItems", ptr("maxItems")),
        ("MinItems", ptr("minItems")),
        ("UniqueItems", flag("uniqueItems")),
        ("MultipleOf", ptr("multipleOf")),
        ("Enum", enums),
        ("MaxProperties", ptr("maxProperties")),
        ("MinProperties", ptr("minProperties")),
        ("Required", go_v_strings(m.get("required"))),
        ("Items", items),
        ("AllOf", list("allOf")?),
        ("OneOf", list("oneOf")?),
        ("AnyOf", list("anyOf")?),
        ("Not", pb_schema(m.get("not"))?),
        (
            "Properties",
            map("properties", "map[string]JSONSchemaProps")?,
        ),
        ("AdditionalProperties", or_bool("additionalProperties")?),
        (
            "PatternProperties",
            map("patternProperties", "map[string]JSONSchemaProps")?,
        ),
        (
            "Dependencies",
            map("dependencies", "JSONSchemaDependencies")?,
        ),
        ("AdditionalItems", or_bool("additionalItems")?),
        ("Definitions", map("definitions", "JSONSchemaDefinitions")?),
        ("ExternalDocs", pb_external_docs(m.get("externalDocs"))),
        ("Example", pb_json(m.get("example"))),
        ("Nullable", flag("nullable")),
        (
            "XPreserveUnknownFields",
            ptr("x-kubernetes-preserve-unknown-fields"),
        ),
        ("XEmbeddedResource", flag("x-kubernetes-embedded-resource")),
        ("XIntOrString", flag("x-kubernetes-int-or-string")),
        (
            "XListMapKeys",
            go_v_strings(m.get("x-kubernetes-list-map-keys")),
        ),
        ("XListType", ptr("x-kubernetes-list-type")),
        ("XMapType", ptr("x-kubernetes-map-type")),
        ("XValidations", rules),
    ];
    let mut out = "&JSONSchemaProps{".to_string();
    for (k, v) in fields {
        out.push_str(&format!("{k}:{v},"));
    }
    out.push('}');
    Some(out)
}

fn num_cmp(a: &Value, b: &Value) -> std::cmp::Ordering {
    let x = a.as_f64().unwrap_or(0.0);
    let y = b.as_f64().unwrap_or(0.0);
    x.partial_cmp(&y).unwrap_or(std::cmp::Ordering::Equal)
}

/// Runs every property check on two schema nodes (children removed); each check consumes the
/// keywords it understands, and whatever differs afterwards is reported as unhandled.
fn compare_properties(a: &mut Map<String, Value>, b: &mut Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();

    // default
    match (a.remove("default"), b.remove("default")) {
        (None, Some(n)) => out.push(format!(
            "default: default added when there was none previously : {}",
            go_quote(&raw(&n))
        )),
        (Some(o), None) => out.push(format!(
            "default: default value removed : {}",
            go_quote(&raw(&o))
        )),
        (Some(o), Some(n)) if o != n => out.push(format!(
            "default: default value changed : {} -> {}",
            go_quote(&raw(&o)),
            go_quote(&raw(&n))
        )),
        _ => {}
    }
    // description: not enforced, but consumed.
    a.remove("description");
    b.remove("description");
    // enum (additions allowed)
    let enums = |v: Option<Value>| -> BTreeSet<String> {
        v.and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(raw)
            .collect()
    };
    let (old_enum, new_enum) = (enums(a.remove("enum")), enums(b.remove("enum")));
    if old_enum.is_empty() && !new_enum.is_empty() {
        out.push(format!(
            "enum: enum constraint added when there was none previously : {}",
            olm_goenc::slice(&new_enum)
        ));
    } else {
        let removed: Vec<String> = old_enum.difference(&new_enum).cloned().collect();
        if !removed.is_empty() {
            out.push(format!(
                "enum: allowed enum values removed : {}",
                olm_goenc::slice(&removed)
            ));
        }
    }
    // maximum family: adding a bound or lowering it narrows what is accepted.
    for key in ["maxItems", "maxLength", "maxProperties", "maximum"] {
        match (a.remove(key), b.remove(key)) {
            (None, Some(n)) => out.push(format!(
                "{key}: maximum constraint added when there was none previously : {}",
                num_text(&n)
            )),
            (Some(o), Some(n)) if num_cmp(&n, &o).is_lt() => out.push(format!(
                "{key}: maximum decreased : {} -> {}",
                num_text(&o),
                num_text(&n)
            )),
            _ => {}
        }
    }
    for key in ["minItems", "minLength", "minProperties", "minimum"] {
        match (a.remove(key), b.remove(key)) {
            (None, Some(n)) => out.push(format!(
                "{key}: minimum constraint added when there was none previously : {}",
                num_text(&n)
            )),
            (Some(o), Some(n)) if num_cmp(&n, &o).is_gt() => out.push(format!(
                "{key}: minimum increased : {} -> {}",
                num_text(&o),
                num_text(&n)
            )),
            _ => {}
        }
    }
    // nullable
    let nb = |v: Option<Value>| v.and_then(|v| v.as_bool()).unwrap_or(false);
    match (nb(a.remove("nullable")), nb(b.remove("nullable"))) {
        (false, true) => out.push("nullable: nullable added : false -> true".into()),
        (true, false) => out.push("nullable: nullable removed : true -> false".into()),
        _ => {}
    }
    // oneOf: alternatives are compared by their protobuf text with the descriptive keywords
    // cleared; a new constraint, a removed alternative or an added one is reported, the first
    // that applies (crdify's default policies disallow both).
    let alternatives = |v: Option<Value>| -> BTreeSet<String> {
        v.and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .into_iter()
            .map(|mut s| {
                if let Some(m) = s.as_object_mut() {
                    for k in ["description", "title", "example", "externalDocs"] {
                        m.remove(k);
                    }
                }
                pb_schema(Some(&s)).unwrap_or_else(|| raw(&s))
            })
            .collect()
    };
    let (old_one, new_one) = (
        alternatives(a.remove("oneOf")),
        alternatives(b.remove("oneOf")),
    );
    let listed = |set: Vec<&String>| {
        let v: Vec<&str> = set.into_iter().map(String::as_str).collect();
        format!("[{}]", v.join(" "))
    };
    let removed: Vec<&String> = old_one.difference(&new_one).collect();
    let added: Vec<&String> = new_one.difference(&old_one).collect();
    if old_one.is_empty() && !new_one.is_empty() {
        out.push(format!(
            "oneOf: oneOf constraint added when there was none previously: {}",
            listed(new_one.iter().collect())
        ));
    } else if !removed.is_empty() {
        out.push(format!(
            "oneOf: allowed oneOf schemas removed: {}",
            listed(removed)
        ));
    } else if !added.is_empty() {
        out.push(format!(
            "oneOf: allowed oneOf schemas added: {}",
            listed(added)
        ));
    }
    // pattern
    let ps = |v: Option<Value>| {
        v.and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    let (op, np) = (ps(a.remove("pattern")), ps(b.remove("pattern")));
    if op != np {
        let what = if op.is_empty() {
            "pattern added"
        } else if np.is_empty() {
            "pattern removed"
        } else {
            "pattern changed"
        };
        out.push(format!(
            "pattern: {what} : {} -> {}",
            go_quote(&op),
            go_quote(&np)
        ));
    }
    // required: only additions break existing objects.
    let rs = |v: Option<Value>| -> BTreeSet<String> {
        v.and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    let (old_req, new_req) = (rs(a.remove("required")), rs(b.remove("required")));
    let added: Vec<String> = new_req.difference(&old_req).cloned().collect();
    if !added.is_empty() {
        out.push(format!(
            "required: new required fields: {}",
            olm_goenc::slice(&added)
        ));
    }
    // type
    let (ot, nt) = (ps(a.remove("type")), ps(b.remove("type")));
    if ot != nt {
        out.push(format!(
            "type: type changed : {} -> {}",
            go_quote(&ot),
            go_quote(&nt)
        ));
    }
    // anything left
    if a != b {
        out.push(format!("unhandled: {}", unhandled_message(a, b)));
    }
    out
}

/// go-cmp's text of one `ValidationRule`: its non-zero fields, `{Rule: "…", Message: "…"}`.
fn go_rule(r: &Value) -> String {
    let mut parts = Vec::new();
    for (k, name) in [
        ("rule", "Rule"),
        ("message", "Message"),
        ("messageExpression", "MessageExpression"),
        ("reason", "Reason"),
        ("fieldPath", "FieldPath"),
        ("optionalOldSelf", "OptionalOldSelf"),
    ] {
        match r.get(k) {
            Some(Value::String(x)) if k == "reason" => {
                parts.push(format!("{name}: &{}", go_quote(x)))
            }
            Some(Value::String(x)) if !x.is_empty() => {
                parts.push(format!("{name}: {}", go_quote(x)))
            }
            Some(Value::Bool(b)) => parts.push(format!("{name}: &{b}")),
            _ => {}
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// Go field names of `JSONSchemaProps`, in struct order, for the unhandled-change summary.
const GO_FIELDS: &[(&str, &str)] = &[
    ("id", "ID"),
    ("$schema", "Schema"),
    ("$ref", "Ref"),
    ("type", "Type"),
    ("format", "Format"),
    ("title", "Title"),
    ("default", "Default"),
    ("exclusiveMaximum", "ExclusiveMaximum"),
    ("exclusiveMinimum", "ExclusiveMinimum"),
    ("uniqueItems", "UniqueItems"),
    ("multipleOf", "MultipleOf"),
    ("allOf", "AllOf"),
    ("anyOf", "AnyOf"),
    ("not", "Not"),
    ("additionalProperties", "AdditionalProperties"),
    ("patternProperties", "PatternProperties"),
    ("dependencies", "Dependencies"),
    ("additionalItems", "AdditionalItems"),
    ("definitions", "Definitions"),
    ("externalDocs", "ExternalDocs"),
    ("example", "Example"),
    (
        "x-kubernetes-preserve-unknown-fields",
        "XPreserveUnknownFields",
    ),
    ("x-kubernetes-embedded-resource", "XEmbeddedResource"),
    ("x-kubernetes-int-or-string", "XIntOrString"),
    ("x-kubernetes-list-map-keys", "XListMapKeys"),
    ("x-kubernetes-list-type", "XListType"),
    ("x-kubernetes-map-type", "XMapType"),
    ("x-kubernetes-validations", "XValidations"),
];

/// operator-controller's condensed form of the unhandled diff:
/// `unhandled changes found (Format "" -> "email"; Title "" -> "Widget")`.
///
/// Values are written as go-cmp writes the Go field: pointers with `&` (`XListType &"map"`), a
/// string list as `[]string{"a", "b"}`, anything holding a schema as `<complex value>`, an absent
/// pointer, list or map as `nil`. When both sides hold a different complex value, go-cmp descends
/// into it; that nested text is not reproduced (`<complex value> -> <complex value> (changed)`).
fn unhandled_message(a: &Map<String, Value>, b: &Map<String, Value>) -> String {
    let show = |key: &str, v: Option<&Value>| -> Option<String> {
        let string_field = matches!(key, "id" | "$schema" | "type" | "format" | "title");
        let pointer_field = matches!(
            key,
            "$ref"
                | "multipleOf"
                | "x-kubernetes-preserve-unknown-fields"
                | "x-kubernetes-list-type"
                | "x-kubernetes-map-type"
        );
        let bool_field = matches!(
            key,
            "exclusiveMaximum"
                | "exclusiveMinimum"
                | "uniqueItems"
                | "x-kubernetes-embedded-resource"
                | "x-kubernetes-int-or-string"
        );
        let schema_field = matches!(
            key,
            "allOf"
                | "anyOf"
                | "not"
                | "additionalProperties"
                | "patternProperties"
                | "dependencies"
                | "additionalItems"
                | "definitions"
        );
        let amp = if pointer_field { "&" } else { "" };
        match v {
            Some(_) if schema_field => None,
            // Types with a String() method: go-cmp writes s"<String()>".
            Some(d) if key == "externalDocs" => {
                Some(format!("s{}", go_quote(&pb_external_docs(Some(d)))))
            }
            Some(e) if key == "example" => Some(format!("s{}", go_quote(&pb_json(Some(e))))),
            Some(Value::Array(rules)) if key == "x-kubernetes-validations" => {
                let shown: Vec<String> = rules.iter().map(go_rule).collect();
                Some(format!("ValidationRules{{{}}}", shown.join(", ")))
            }
            None if string_field => Some("\"\"".into()),
            None if bool_field => Some("false".into()),
            None => Some("nil".into()),
            Some(Value::Array(items)) if key == "x-kubernetes-list-map-keys" => {
                let quoted: Option<Vec<String>> =
                    items.iter().map(|i| i.as_str().map(go_quote)).collect();
                quoted.map(|q| format!("[]string{{{}}}", q.join(", ")))
            }
            Some(Value::String(s)) => Some(format!("{amp}{}", go_quote(s))),
            Some(Value::Bool(b)) => Some(format!("{amp}{b}")),
            Some(Value::Number(n)) => Some(format!("{amp}{}", num_text(&Value::Number(n.clone())))),
            Some(_) => None,
        }
    };
    let mut parts = Vec::new();
    let mut keys: Vec<&str> = GO_FIELDS.iter().map(|(k, _)| *k).collect();
    let mut extra: Vec<&str> = a
        .keys()
        .chain(b.keys())
        .map(String::as_str)
        .filter(|k| !keys.contains(k))
        .collect();
    extra.sort();
    extra.dedup();
    keys.extend(extra);
    for key in keys {
        let (x, y) = (a.get(key), b.get(key));
        if x == y {
            continue;
        }
        let name = GO_FIELDS
            .iter()
            .find(|(k, _)| *k == key)
            .map_or(key, |(_, n)| *n);
        if let (Some(Value::Array(xr)), Some(Value::Array(yr))) = (x, y)
            && key == "x-kubernetes-validations"
            && xr.len() == yr.len()
        {
            {
                // go-cmp descends into rules of the same count: one entry per changed field,
                // the later rule's values winning for a field name seen twice, as upstream's
                // summary keys its entries by field name.
                let mut fields: Vec<(String, String, String)> = Vec::new();
                for (p, q) in xr.iter().zip(yr) {
                    for (k, name) in [
                        ("rule", "Rule"),
                        ("message", "Message"),
                        ("messageExpression", "MessageExpression"),
                        ("fieldPath", "FieldPath"),
                    ] {
                        let (u, w) = (str_at(p, &format!("/{k}")), str_at(q, &format!("/{k}")));
                        if u != w {
                            let entry = (name.to_string(), go_quote(u), go_quote(w));
                            match fields.iter_mut().find(|f| f.0 == name) {
                                Some(f) => *f = entry,
                                None => fields.push(entry),
                            }
                        }
                    }
                }
                if !fields.is_empty() {
                    parts.extend(
                        fields
                            .into_iter()
                            .map(|(n, u, w)| format!("{n} {u} -> {w}")),
                    );
                    continue;
                }
            }
        }
        match (show(key, x), show(key, y)) {
            (Some(p), Some(q)) => parts.push(format!("{name} {p} -> {q}")),
            (None, Some(q)) if y.is_none() => parts.push(format!("{name} <complex value> -> {q}")),
            (Some(p), None) if x.is_none() => parts.push(format!("{name} {p} -> <complex value>")),
            _ => parts.push(format!(
                "{name} <complex value> -> <complex value> (changed)"
            )),
        }
    }
    format!("unhandled changes found ({})", parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_version_order_is_ascending_by_stability() {
        let mut v = vec!["v2", "v1", "v1beta1", "v1alpha1", "v1beta2", "foo", "v10"];
        v.sort_by(|a, b| kube_version_order(a, b));
        assert_eq!(
            v,
            ["foo", "v1alpha1", "v1beta1", "v1beta2", "v1", "v2", "v10"]
        );
    }
}
