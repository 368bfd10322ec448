//! The bundle checks of operator-framework/api (what `operator-sdk bundle validate` runs by
//! default): the CSV validator and the bundle validator, with their levels, error types and
//! messages.
//!
//! These are authoring checks, separate from the render validators OLM v1 applies at install
//! time ([`crate::validate`]): a bundle can pass one set and fail the other. Covered: CSV name
//! and `replaces`, examples (`alm-examples`), install modes, `minKubeVersion`, the required
//! display name and deployments, annotation spelling, `olm.properties` usage, CRDs defined but
//! not owned (and the reverse), duplicate CRDs, service accounts that clash with the CSV's, and
//! related images. Not covered: the apiextensions CRD validation, bundle size, and the optional
//! suites (OperatorHub, good practices, deprecated APIs, multi-arch).

use std::collections::{BTreeMap, BTreeSet};

use olm_goenc::quote;
use olm_k8s::{
    OPERATOR_GROUP_ANNOTATION, OPERATOR_NAMESPACE_ANNOTATION, PROVIDED_APIS_ANNOTATION,
    SKIP_RANGE_ANNOTATION, TARGET_NAMESPACES_ANNOTATION,
};
use serde_json::Value;

use crate::bundle::Bundle;
use crate::csv::{InstallModeType, WebhookType};

/// `Error` or `Warning`, as upstream prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// An error: the bundle is refused.
    Error,
    /// A warning: reported, the bundle still passes.
    Warning,
}

/// One finding: upstream's `errors.Error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How serious the finding is.
    pub level: Level,
    /// Upstream's error type, e.g. `CSVFileNotValid`, `FieldNotFound`, `ValidationFailed`.
    pub kind: &'static str,
    /// The field the finding is about, as upstream names it; may be empty.
    pub field: String,
    /// The offending value, as upstream prints it; `None` when there is none (an empty value
    /// is still printed: `Value : …`, as Go prints an empty non-nil one).
    pub value: Option<String>,
    /// What is wrong.
    pub detail: String,
}

impl std::fmt::Display for Finding {
    /// `Error: Field <f>, Value <v>: <detail>`, dropping the parts that are empty.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let level = match self.level {
            Level::Error => "Error",
            Level::Warning => "Warning",
        };
        match (self.field.is_empty(), &self.value) {
            (false, Some(v)) => write!(
                f,
                "{level}: Field {}, Value {v}: {}",
                self.field, self.detail
            ),
            (false, None) => write!(f, "{level}: Field {}: {}", self.field, self.detail),
            (true, Some(v)) => write!(f, "{level}: Value {v}: {}", self.detail),
            (true, None) => write!(f, "{level}: {}", self.detail),
        }
    }
}

fn err(kind: &'static str, field: &str, value: &str, detail: impl Into<String>) -> Finding {
    Finding {
        level: Level::Error,
        kind,
        field: field.into(),
        value: (!value.is_empty()).then(|| value.to_owned()),
        detail: detail.into(),
    }
}

fn warn(kind: &'static str, field: &str, value: &str, detail: impl Into<String>) -> Finding {
    Finding {
        level: Level::Warning,
        kind,
        field: field.into(),
        value: (!value.is_empty()).then(|| value.to_owned()),
        detail: detail.into(),
    }
}

/// Upstream's warning for a missing `minKubeVersion`.
pub const MIN_KUBE_VERSION_WARNING: &str = "csv.Spec.minKubeVersion is not informed. It is recommended you provide this information. Otherwise, it would mean that your operator project can be distributed and installed in any cluster version available, which is not necessarily the case for all projects.";

/// The default validators for a bundle: CSV, then bundle checks. Errors first would change
/// upstream's order, so findings stay in the order the checks produce them.
pub fn validate_bundle(b: &Bundle) -> Vec<Finding> {
    let mut out = validate_csv(b);
    out.extend(bundle_checks(b));
    out
}

/// operator-registry's bundle format check of `metadata/annotations.yaml` (`ValidateBundleFormat`,
/// which `operator-sdk bundle validate` runs first), as one error naming `dir`:
/// `error validating format in <dir>: Bundle validation errors: <e1>,<e2>,…`. A missing key
/// (the default channel may be absent), a media type other than the bundle's (`registry+v1`, as
/// it has a ClusterServiceVersion), and empty channels or an empty default channel are refused.
/// Upstream lists the problems in Go's random map order; here they come in the order of the
/// keys as written below. (Its manifests and metadata directory checks compare constants with
/// themselves and never fire, so neither does this.) Then each entry of the metadata's
/// `dependencies` is checked as [`dependency_problems`] says.
pub fn validate_format(b: &Bundle, dir: &str) -> Option<Finding> {
    use crate::bundle::{
        CHANNELS_ANNOTATION, DEFAULT_CHANNEL_ANNOTATION, MANIFESTS_ANNOTATION,
        MEDIATYPE_ANNOTATION, METADATA_ANNOTATION, PACKAGE_ANNOTATION, REGISTRY_V1,
    };
    let mut problems = Vec::new();
    for key in [
        MEDIATYPE_ANNOTATION,
        MANIFESTS_ANNOTATION,
        METADATA_ANNOTATION,
        PACKAGE_ANNOTATION,
        CHANNELS_ANNOTATION,
        DEFAULT_CHANNEL_ANNOTATION,
    ] {
        let value = b.annotations.get(key);
        if value.is_none() && key != DEFAULT_CHANNEL_ANNOTATION {
            problems.push(format!("Missing annotation {}", quote(key)));
        }
        let value = value.map(String::as_str);
        match key {
            MEDIATYPE_ANNOTATION if value != Some(REGISTRY_V1) => problems.push(format!(
                "Expecting annotation {} to have value {} instead of {}",
                quote(key),
                quote(REGISTRY_V1),
                quote(value.unwrap_or_default())
            )),
            CHANNELS_ANNOTATION if value.is_none_or(str::is_empty) => {
                problems.push(format!(
                    "Expecting annotation {} to have non-empty value",
                    quote(key)
                ));
            }
            DEFAULT_CHANNEL_ANNOTATION if value == Some("") => problems.push(format!(
                "Expecting annotation {} to have non-empty value",
                quote(key)
            )),
            _ => {}
        }
    }
    for d in &b.dependencies {
        problems.extend(dependency_problems(d));
    }
    (!problems.is_empty()).then(|| {
        err(
            "ValidationFailed",
            "",
            "",
            format!(
                "error validating format in {dir}: Bundle validation errors: {}",
                problems.join(",")
            ),
        )
    })
}

/// operator-registry's check of one `dependencies` entry (`validateDependencies`): the value
/// decoded as its type's Go struct (a value that does not decode, or a type it does not know:
/// `couldn't parse dependency of type T`), then that type's own rules, in its words. Of an
/// `olm.constraint`, the CEL expression's presence is checked, not its syntax (that needs a CEL
/// environment).
pub fn dependency_problems(entry: &Value) -> Vec<String> {
    let kind = entry
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let unparsable = || vec![format!("couldn't parse dependency of type {kind}")];
    // Go decodes `null` into the zero struct; a missing value does not decode.
    let value = match entry.get("value") {
        None => return unparsable(),
        Some(Value::Null) => &Value::Object(serde_json::Map::new()),
        Some(v @ Value::Object(_)) => v,
        Some(_) => return unparsable(),
    };
    // A string field, matched as encoding/json matches keys: absent or null is empty; any other
    // JSON type does not decode.
    let field = |key: &str| -> Option<String> {
        match value
            .as_object()
            .and_then(|m| olm_goenc::json::field(m, key))
        {
            None | Some(Value::Null) => Some(String::new()),
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => None,
        }
    };
    let mut out = Vec::new();
    match kind {
        "olm.gvk" => {
            let (Some(group), Some(version), Some(kind_)) =
                (field("group"), field("version"), field("kind"))
            else {
                return unparsable();
            };
            for (v, what) in [(group, "Group"), (version, "Version"), (kind_, "Kind")] {
                if v.is_empty() {
                    out.push(format!("API {what} is empty"));
                }
            }
        }
        "olm.package" => {
            let (Some(name), Some(version)) = (field("packageName"), field("version")) else {
                return unparsable();
            };
            if name.is_empty() {
                out.push("Package name is empty".to_owned());
            }
            if version.is_empty() {
                out.push("Package version is empty".to_owned());
            } else if olm_version::blang::Range::parse(&version).is_err() {
                out.push("Invalid semver format version".to_owned());
            }
        }
        "olm.label" => {
            let Some(label) = field("label") else {
                return unparsable();
            };
            if label.is_empty() {
                out.push("Label information is missing".to_owned());
            }
        }
        "olm.constraint" => match value.get("cel") {
            None | Some(Value::Null) => out.push("The CEL field is missing".to_owned()),
            Some(Value::Object(cel)) => match cel.get("rule") {
                None | Some(Value::Null) => out.push("The CEL expression is missing".to_owned()),
                Some(Value::String(rule)) if rule.is_empty() => {
                    out.push("The CEL expression is missing".to_owned());
                }
                Some(Value::String(_)) => {}
                Some(_) => return unparsable(),
            },
            Some(_) => return unparsable(),
        },
        _ => return unparsable(),
    }
    out
}

/// True when any finding is an error.
pub fn has_errors(findings: &[Finding]) -> bool {
    findings.iter().any(|f| f.level == Level::Error)
}

/// A name that must be both a DNS-1123 subdomain and a label value (upstream checks both and
/// joins every message).
fn name_check(what: &str, value: &str, out: &mut Vec<Finding>) {
    let mut errs = olm_k8s::dns1123_subdomain_errors(value);
    errs.extend(olm_k8s::label_value_errors(value));
    if !errs.is_empty() {
        let errs: Vec<String> = errs.iter().map(ToString::to_string).collect();
        out.push(err(
            "CSVFileNotValid",
            "",
            "",
            format!("{what} {} is invalid: {}", quote(value), errs.join(",")),
        ));
    }
}

/// The CSV validator.
pub fn validate_csv(b: &Bundle) -> Vec<Finding> {
    let csv = &b.csv;
    let raw = &csv.raw;
    let mut out = Vec::new();
    if raw
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        out.push(err("FieldNotFound", "", "", "'apiVersion' is missing"));
    }
    name_check("metadata.name", csv.name(), &mut out);
    if let Some(r) = csv.spec.replaces.as_deref().filter(|r| !r.is_empty()) {
        name_check("spec.replaces", r, &mut out);
    }

    // Required fields.
    if csv.spec.display_name.as_deref().is_none_or(str::is_empty) {
        out.push(err(
            "FieldNotFound",
            "Spec.DisplayName",
            "",
            "required field missing",
        ));
    }
    if csv.spec.install.spec.deployments.is_empty() {
        out.push(err(
            "FieldNotFound",
            "Spec.InstallStrategy.StrategySpec.DeploymentSpecs",
            "",
            "required field missing",
        ));
    }

    examples(b, &mut out);

    // Install modes.
    if csv.spec.install_modes.is_empty() {
        out.push(err("CSVFileNotValid", "", "", "install modes not found"));
    } else if !csv.spec.install_modes.iter().any(|m| m.supported) {
        out.push(err(
            "CSVFileNotValid",
            "",
            "",
            "none of InstallModeTypes are supported",
        ));
    }
    let conversion =
        csv.spec.webhookdefinitions.iter().any(|w| {
            w.webhook_type == WebhookType::ConversionWebhook || !w.conversion_crds.is_empty()
        });
    let modes = csv.supported_install_modes();
    if conversion && !(modes.len() == 1 && modes[0] == InstallModeType::AllNamespaces) {
        out.push(err(
            "CSVFileNotValid",
            "",
            "",
            "only AllNamespaces InstallModeType is supported when conversionCRDs is present",
        ));
    }

    // minKubeVersion.
    match csv
        .spec
        .min_kube_version
        .as_deref()
        .filter(|v| !v.is_empty())
    {
        None => out.push(warn("FieldNotFound", "", "", MIN_KUBE_VERSION_WARNING)),
        Some(v) => {
            if olm_version::blang::Version::parse(v).is_err() {
                out.push(err(
                    "CSVFileNotValid",
                    "",
                    "",
                    format!("csv.Spec.MinKubeVersion has an invalid value: {v}"),
                ));
            }
        }
    }

    // Annotation spelling.
    const CASED: &[&str] = &[
        OPERATOR_GROUP_ANNOTATION,
        OPERATOR_NAMESPACE_ANNOTATION,
        TARGET_NAMESPACES_ANNOTATION,
        PROVIDED_APIS_ANNOTATION,
        SKIP_RANGE_ANNOTATION,
    ];
    for k in csv.annotations().keys() {
        if let Some(want) = CASED
            .iter()
            .find(|w| w.eq_ignore_ascii_case(k) && **w != k.as_str())
        {
            out.push(err(
                "ValidationFailed",
                "",
                "",
                format!("provided annotation {k} uses wrong case and should be {want} instead"),
            ));
        }
        if k == crate::bundle::PROPERTIES_ANNOTATION {
            out.push(warn(
                "PropertiesAnnotationUsed",
                "",
                "",
                "found olm.properties annotation, please define these properties in metadata/properties.yaml instead",
            ));
        }
    }
    out
}

/// `alm-examples` / `olm.examples`: present, valid JSON, each example for an owned API, each
/// owned API with an example.
fn examples(b: &Bundle, out: &mut Vec<Finding>) {
    let ann = b.csv.annotations();
    if ann.is_empty() {
        out.push(warn("CSVFileNotValid", "", "", "annotations not found"));
        return;
    }
    let text = match (ann.get("alm-examples"), ann.get("olm.examples")) {
        (None, None) => {
            out.push(warn(
                "CSVFileNotValid",
                "",
                "",
                "example annotations not found",
            ));
            return;
        }
        (Some(a), Some(_)) => {
            out.push(warn(
                "CSVFileNotValid",
                "",
                "",
                "both `alm-examples` and `olm.examples` are present. Checking only `alm-examples`",
            ));
            a
        }
        (Some(a), None) => a,
        (None, Some(o)) => o,
    };
    if text.trim().is_empty() {
        return;
    }
    let parsed: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            out.push(err("ParseError", "", "", format!("invalid example: {e}")));
            return;
        }
    };
    let Some(list) = parsed.as_array() else {
        out.push(err(
            "ParseError",
            "",
            "",
            "error decoding example CustomResource",
        ));
        return;
    };
    // Provided APIs: group/version/kind of owned CRDs (and owned APIServices).
    let mut provided: BTreeSet<(String, String, String)> = BTreeSet::new();
    for c in &b.csv.spec.customresourcedefinitions.owned {
        match c.name.split_once('.') {
            Some((_, group)) => {
                provided.insert((group.to_string(), c.version.clone(), c.kind.clone()));
            }
            None => out.push(err(
                "CSVFileNotValid",
                "",
                "",
                format!("couldn't parse plural.group from crd name: {}", c.name),
            )),
        }
    }
    for a in &b.csv.spec.apiservicedefinitions.owned {
        provided.insert((a.group.clone(), a.version.clone(), a.kind.clone()));
    }
    let mut seen = BTreeSet::new();
    for ex in list {
        let api_version = ex.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = ex
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let (group, version) = api_version
            .rsplit_once('/')
            .map_or(("", api_version), |(g, v)| (g, v));
        let gvk = (group.to_string(), version.to_string(), kind);
        if !provided.contains(&gvk) {
            out.push(err(
                "OperationFailed",
                "",
                &format!("{}/{}, Kind={}", gvk.0, gvk.1, gvk.2),
                "example must have a provided API",
            ));
        }
        seen.insert(gvk);
    }
    for gvk in provided.difference(&seen) {
        out.push(warn(
            "OperationFailed",
            "",
            &format!("{}/{}, Kind={}", gvk.0, gvk.1, gvk.2),
            "provided API should have an example annotation",
        ));
    }
}

/// Go's `schema.GroupVersionKind.String()`.
fn gvk_string(group: &str, version: &str, kind: &str) -> String {
    format!("{group}/{version}, Kind={kind}")
}

/// The bundle validator: CRDs against the CSV's owned list, service accounts, related images.
pub fn bundle_checks(b: &Bundle) -> Vec<Finding> {
    let mut out = Vec::new();
    let name = b.csv.name();
    // Every version of every CRD manifest.
    let mut bundle_gvks: Vec<(String, String, String)> = Vec::new();
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
        for v in crd
            .object
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let version = v.get("name").and_then(Value::as_str).unwrap_or("");
            bundle_gvks.push((group.into(), version.into(), kind.into()));
        }
        // v1beta1's `spec.version` repeats the first entry of `spec.versions` when both exist.
        if let Some(v) = crd.object.pointer("/spec/version").and_then(Value::as_str) {
            let g = (group.to_string(), v.to_string(), kind.to_string());
            if !bundle_gvks.contains(&g) {
                bundle_gvks.push(g);
            }
        }
    }
    let mut counts: BTreeMap<&(String, String, String), usize> = BTreeMap::new();
    for g in &bundle_gvks {
        *counts.entry(g).or_default() += 1;
    }
    for (g, n) in &counts {
        if *n > 1 {
            out.push(err(
                "BundleNotValid",
                "",
                "",
                format!(
                    "duplicate CRD {} in bundle {}",
                    quote(&gvk_string(&g.0, &g.1, &g.2)),
                    quote(name)
                ),
            ));
        }
    }
    let owned: Vec<(String, String, String)> = b
        .csv
        .spec
        .customresourcedefinitions
        .owned
        .iter()
        .map(|c| {
            (
                c.name.split_once('.').map_or("", |(_, g)| g).to_string(),
                c.version.clone(),
                c.kind.clone(),
            )
        })
        .collect();
    let in_bundle: BTreeSet<&(String, String, String)> = bundle_gvks.iter().collect();
    for o in &owned {
        if !in_bundle.contains(o) {
            out.push(err(
                "BundleNotValid",
                "",
                "",
                format!(
                    "owned CRD {} not found in bundle {}",
                    quote(&gvk_string(&o.0, &o.1, &o.2)),
                    quote(name)
                ),
            ));
        }
    }
    let owned_gk: BTreeSet<(&str, &str)> =
        owned.iter().map(|o| (o.0.as_str(), o.2.as_str())).collect();
    for g in counts.keys() {
        if !owned.contains(g) && !owned_gk.contains(&(g.0.as_str(), g.2.as_str())) {
            out.push(err(
                "BundleNotValid",
                "",
                "",
                format!(
                    "CRD {} is present in bundle {} but not defined in CSV",
                    quote(&gvk_string(&g.0, &g.1, &g.2)),
                    quote(name)
                ),
            ));
        }
    }
    // Service accounts shipped as manifests that the CSV's deployments already name.
    let deployment_sas: BTreeSet<&str> = b
        .csv
        .spec
        .install
        .spec
        .deployments
        .iter()
        .filter_map(|d| {
            d.spec
                .pointer("/template/spec/serviceAccountName")
                .and_then(Value::as_str)
        })
        .collect();
    for o in b.others.iter().filter(|o| o.kind() == "ServiceAccount") {
        if deployment_sas.contains(o.name()) {
            out.push(err(
                "BundleNotValid",
                "",
                "",
                format!(
                    "invalid service account found in bundle. This service account {} in your bundle is not valid, because a service account with the same name was already specified in your CSV. If this was unintentional, please remove the service account manifest from your bundle. If it was intentional to specify a separate service account, please rename the SA in either the bundle manifest or the CSV.",
                    o.name()
                ),
            ));
        }
    }
    for (i, r) in b.csv.spec.related_images.iter().flatten().enumerate() {
        if r.image.is_empty() {
            out.push(err(
                "BundleNotValid",
                "",
                "",
                format!("relatedImages[{i}] has an empty image field"),
            ));
        }
    }
    out
}
