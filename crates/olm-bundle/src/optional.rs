//! operator-framework/api's optional validators as `operator-sdk bundle validate
//! --select-optional` runs them (api `pkg/validation/internal/{operatorhubv2,
//! standardcapabilities, standardcategories, operatorhub, removed_apis, good_practices}.go`,
//! operator-sdk `internal/cmd/operator-sdk/bundle/validate/optional.go`): OperatorHub metadata,
//! capability levels, categories, APIs removed from Kubernetes, and good practices, selected by
//! label (`suite=operatorframework`, `name=good-practices`, …).
//!
//! Differences: `multiarch` (it inspects images' manifest lists) and the deprecated `community`
//! validator are not built; the deprecated-API check's second, permissions-based warning is not
//! emitted; removed APIs are listed by kind in sorted order (upstream's is Go map order); an
//! invalid maintainer e-mail or link URL is described with Go's text for the common case only
//! (`mail: missing '@' or angle-addr`, `parse "…": invalid URI for request`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::apivalidate::{Finding, Level, MIN_KUBE_VERSION_WARNING};
use crate::bundle::Bundle;

/// One optional validator: its name, labels and the description `--list-optional` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validator {
    /// The `name` label.
    pub name: &'static str,
    /// Whether it is in `suite=operatorframework`.
    pub in_suite: bool,
    /// What it checks.
    pub description: &'static str,
}

/// The optional validators, in operator-sdk's order.
pub const VALIDATORS: &[Validator] = &[
    Validator {
        name: "operatorhubv2",
        in_suite: true,
        description: "OperatorHub.io metadata validation. ",
    },
    Validator {
        name: "capabilities",
        in_suite: true,
        description: "OperatorHub.io capabilities metadata validation. ",
    },
    Validator {
        name: "categories",
        in_suite: true,
        description: "OperatorHub.io categories metadata validation. ",
    },
    Validator {
        name: "operatorhub",
        in_suite: false,
        description: "Deprecated OperatorHub.io metadata validation. ",
    },
    Validator {
        name: "alpha-deprecated-apis",
        in_suite: true,
        description: "(stage: alpha) Deprecated APIs bundle validation. This validator will check if the bundle uses APIs removed in Kubernetes versions.",
    },
    Validator {
        name: "good-practices",
        in_suite: true,
        description: "Good Practices bundle validation. This validator checks that the bundle follows the recommended good practices.",
    },
];

impl Validator {
    fn labels(&self) -> BTreeMap<String, String> {
        let mut l = BTreeMap::from([("name".to_owned(), self.name.to_owned())]);
        if self.in_suite {
            l.insert("suite".to_owned(), "operatorframework".to_owned());
        }
        l
    }
}

/// The validators `selector` (a label selector) picks.
///
/// # Errors
///
/// A selector that does not parse, or operator-sdk's text for one that matches nothing.
pub fn select(selector: &str) -> Result<Vec<Validator>, String> {
    let parsed = olm_k8s::LabelSelector::parse(selector).map_err(|e| e.to_string())?;
    let picked: Vec<Validator> = VALIDATORS
        .iter()
        .filter(|v| parsed.matches(&v.labels()))
        .copied()
        .collect();
    if picked.is_empty() {
        return Err(format!(
            "invalid command args: selector {} does not match any validator labels",
            olm_goenc::quote(selector)
        ));
    }
    Ok(picked)
}

/// `--list-optional`'s table: NAME, LABELS (one per row) and DESCRIPTION.
pub fn list() -> String {
    let mut rows: Vec<[String; 3]> = vec![["NAME".into(), "LABELS".into(), "DESCRIPTION".into()]];
    for v in VALIDATORS {
        let labels: Vec<String> = v
            .labels()
            .iter()
            .map(|(k, val)| format!("{k}={val}"))
            .collect();
        for (i, l) in labels.iter().enumerate() {
            if i == 0 {
                rows.push([v.name.into(), l.clone(), v.description.into()]);
            } else {
                rows.push([String::new(), l.clone(), String::new()]);
            }
        }
    }
    let width = |c: usize| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0) + 4;
    let (w0, w1) = (width(0), width(1));
    rows.iter()
        .map(|r| {
            format!("{:w0$}{:w1$}{}", r[0], r[1], r[2])
                .trim_end()
                .to_owned()
                + "\n"
        })
        .collect()
}

/// Runs `selected` on `b` with `values` (`--optional-values`: `k8s-version`); each validator's
/// warnings come before its errors, as operator-sdk prints a result.
pub fn run(b: &Bundle, selected: &[Validator], values: &BTreeMap<String, String>) -> Vec<Finding> {
    let mut out = Vec::new();
    for v in selected {
        let mut found = match v.name {
            "operatorhubv2" => operatorhub(b, values),
            "capabilities" => capabilities(b),
            "categories" => categories(b),
            "operatorhub" => {
                let mut f = operatorhub(b, values);
                f.extend(capabilities(b));
                f.extend(categories(b));
                f.push(finding(Level::Warning, "DeprecatedValidator", None, "The \"operatorhub\" validator is deprecated; for equivalent validation use \"operatorhub/v2\", \"standardcapabilities\" and \"standardcategories\" validators"));
                f
            }
            "alpha-deprecated-apis" => deprecated_apis(b, values),
            "good-practices" => good_practices(b),
            _ => Vec::new(),
        };
        found.sort_by_key(|f| f.level != Level::Warning);
        out.extend(found);
    }
    out
}

fn finding(
    level: Level,
    kind: &'static str,
    value: Option<String>,
    detail: impl Into<String>,
) -> Finding {
    Finding {
        level,
        kind,
        field: String::new(),
        value,
        detail: detail.into(),
    }
}

/// A CSV finding as `ErrInvalidCSV` words it: an empty value and `(<csv>) ` before the detail.
fn csv_finding(b: &Bundle, level: Level, detail: impl std::fmt::Display) -> Finding {
    finding(
        level,
        "CSVFileNotValid",
        Some(String::new()),
        format!("({}) {detail}", b.csv.name()),
    )
}

fn spec(b: &Bundle) -> &Value {
    &b.csv.raw["spec"]
}

/// `operatorhubv2`: provider, maintainers, links, version, icon, minKubeVersion, and the removed
/// APIs.
fn operatorhub(b: &Bundle, values: &BTreeMap<String, String>) -> Vec<Finding> {
    let spec = spec(b);
    let mut out = Vec::new();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    if text(&spec["provider"]["name"]).trim().is_empty() {
        out.push(csv_finding(
            b,
            Level::Error,
            "csv.Spec.Provider.Name not specified",
        ));
    }
    for m in spec["maintainers"].as_array().into_iter().flatten() {
        let (name, email) = (text(&m["name"]), text(&m["email"]));
        if name.is_empty() || email.is_empty() {
            out.push(csv_finding(
                b,
                Level::Error,
                "csv.Spec.Maintainers elements should contain both name and email",
            ));
        } else if let Some(why) = email_problem(&email) {
            out.push(csv_finding(
                b,
                Level::Error,
                format!("csv.Spec.Maintainers email {email} is invalid: {why}"),
            ));
        }
    }
    for l in spec["links"].as_array().into_iter().flatten() {
        let (name, url) = (text(&l["name"]), text(&l["url"]));
        if name.is_empty() || url.is_empty() {
            out.push(csv_finding(
                b,
                Level::Error,
                "csv.Spec.Links elements should contain both name and url",
            ));
        } else if !is_request_uri(&url) {
            out.push(csv_finding(
                b,
                Level::Error,
                format!(
                    "csv.Spec.Links url {url} is invalid: parse {}: invalid URI for request",
                    olm_goenc::quote(&url)
                ),
            ));
        }
    }
    if text(&spec["version"]).is_empty() {
        out.push(csv_finding(b, Level::Error, "csv.Spec.Version must be set"));
    }
    match spec["icon"].as_array() {
        None => out.push(csv_finding(
            b,
            Level::Warning,
            "csv.Spec.Icon not specified",
        )),
        Some(icons) => {
            if icons.len() > 1 {
                out.push(csv_finding(
                    b,
                    Level::Error,
                    "csv.Spec.Icon should only have one element",
                ));
            }
            if let Some(icon) = icons.first() {
                let (data, media) = (text(&icon["base64data"]), text(&icon["mediatype"]));
                if data.is_empty() || media.is_empty() {
                    out.push(csv_finding(
                        b,
                        Level::Error,
                        "csv.Spec.Icon elements should contain both data and mediatype",
                    ));
                } else if !["image/gif", "image/jpeg", "image/png", "image/svg+xml"]
                    .contains(&media.as_str())
                {
                    out.push(csv_finding(
                        b,
                        Level::Error,
                        format!("csv.Spec.Icon {media} does not have a valid mediatype"),
                    ));
                }
            }
        }
    }
    match spec["minKubeVersion"].as_str().filter(|v| !v.is_empty()) {
        None => out.push(finding(
            Level::Warning,
            "FieldNotFound",
            None,
            MIN_KUBE_VERSION_WARNING,
        )),
        Some(v) if olm_version::blang::Version::parse(v).is_err() => out.push(csv_finding(
            b,
            Level::Error,
            format!("csv.Spec.MinKubeVersion has an invalid value: {v}"),
        )),
        Some(_) => {}
    }
    out.extend(deprecated_apis(b, values));
    out
}

/// Go's `net/mail.ParseAddress` verdict for the common mistake (no `@`, no angle address); other
/// addresses pass.
fn email_problem(email: &str) -> Option<&'static str> {
    (!email.contains('@') && !email.contains('<')).then_some("mail: missing '@' or angle-addr")
}

/// Go's `url.ParseRequestURI` acceptance: an absolute URL (with a scheme) or an absolute path.
fn is_request_uri(url: &str) -> bool {
    if url.starts_with('/') {
        return true;
    }
    let Some((scheme, _)) = url.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
}

/// The capability levels OperatorHub knows.
const CAPABILITIES: [&str; 5] = [
    "Basic Install",
    "Seamless Upgrades",
    "Full Lifecycle",
    "Deep Insights",
    "Auto Pilot",
];

fn capabilities(b: &Bundle) -> Vec<Finding> {
    match b.csv.raw["metadata"]["annotations"]["capabilities"].as_str() {
        Some(c) if !CAPABILITIES.contains(&c) => vec![csv_finding(
            b,
            Level::Error,
            format!(
                "csv.Metadata.Annotations.Capabilities {} is not a valid capabilities level",
                olm_goenc::quote(c)
            ),
        )],
        _ => Vec::new(),
    }
}

/// The standard OperatorHub categories.
const CATEGORIES: [&str; 16] = [
    "AI/Machine Learning",
    "Application Runtime",
    "Big Data",
    "Cloud Provider",
    "Developer Tools",
    "Database",
    "Integration & Delivery",
    "Logging & Tracing",
    "Monitoring",
    "Modernization & Migration",
    "Networking",
    "OpenShift Optional",
    "Security",
    "Storage",
    "Streaming & Messaging",
    "Observability",
];

fn categories(b: &Bundle) -> Vec<Finding> {
    let Some(list) = b.csv.raw["metadata"]["annotations"]["categories"].as_str() else {
        return Vec::new();
    };
    list.split(',')
        .filter(|c| !CATEGORIES.contains(&c.trim()))
        .map(|c| {
            csv_finding(
                b,
                Level::Error,
                format!(
                    "csv.Metadata.Annotations[\"categories\"] value {} is not in the set of standard categories",
                    olm_goenc::quote(c)
                ),
            )
        })
        .collect()
}

/// The APIs each Kubernetes release removed that bundles still ship: (release, group/version,
/// kinds).
const REMOVED: &[(&str, &str, &[&str])] = &[
    (
        "1.22",
        "apiextensions.k8s.io/v1beta1",
        &["CustomResourceDefinition"],
    ),
    ("1.22", "scheduling.k8s.io/v1beta1", &["PriorityClass"]),
    (
        "1.22",
        "rbac.authorization.k8s.io/v1beta1",
        &["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"],
    ),
    ("1.22", "apiregistration.k8s.io/v1beta1", &["APIService"]),
    ("1.22", "authentication.k8s.io/v1beta1", &["TokenReview"]),
    (
        "1.22",
        "authorization.k8s.io/v1beta1",
        &[
            "LocalSubjectAccessReview",
            "SelfSubjectAccessReview",
            "SubjectAccessReview",
        ],
    ),
    (
        "1.22",
        "admissionregistration.k8s.io/v1beta1",
        &[
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ],
    ),
    ("1.22", "coordination.k8s.io/v1beta1", &["Lease"]),
    ("1.22", "extensions/v1beta1", &["Ingress"]),
    (
        "1.22",
        "networking.k8s.io/v1beta1",
        &["Ingress", "IngressClass"],
    ),
    (
        "1.22",
        "storage.k8s.io/v1beta1",
        &["CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"],
    ),
    (
        "1.22",
        "certificates.k8s.io/v1beta1",
        &["CertificateSigningRequest"],
    ),
    ("1.25", "batch/v1beta1", &["CronJob"]),
    ("1.25", "discovery.k8s.io/v1beta1", &["EndpointSlice"]),
    ("1.25", "events.k8s.io/v1beta1", &["Event"]),
    ("1.25", "autoscaling/v2beta1", &["HorizontalPodAutoscaler"]),
    (
        "1.25",
        "policy/v1beta1",
        &["PodDisruptionBudget", "PodSecurityPolicy"],
    ),
    ("1.25", "node.k8s.io/v1beta1", &["RuntimeClass"]),
    ("1.26", "autoscaling/v2beta2", &["HorizontalPodAutoscaler"]),
];

/// `alpha-deprecated-apis`: one finding per Kubernetes release whose removed APIs the bundle
/// ships — an error when `k8s-version` or `minKubeVersion` is at least that release.
fn deprecated_apis(b: &Bundle, values: &BTreeMap<String, String>) -> Vec<Finding> {
    let name = b.csv.name().to_owned();
    let mut out = Vec::new();
    let tolerant = |v: &str| olm_version::blang::Version::parse_tolerant(v).ok();
    let k8s = match values.get("k8s-version").filter(|v| !v.is_empty()) {
        None => None,
        Some(v) => match tolerant(v) {
            Some(parsed) => Some(parsed),
            None => {
                out.push(finding(
                    Level::Error,
                    "ValidationFailed",
                    Some(name.clone()),
                    format!("invalid value informed via the k8s key option : {v}"),
                ));
                return out;
            }
        },
    };
    let min_kube = match spec(b)["minKubeVersion"].as_str().filter(|v| !v.is_empty()) {
        None => None,
        Some(v) => match olm_version::blang::Version::parse(v) {
            Ok(parsed) => Some(parsed),
            Err(_) => {
                out.push(finding(
                    Level::Error,
                    "ValidationFailed",
                    Some(name.clone()),
                    format!("unable to use csv.Spec.MinKubeVersion to verify the CRD/Webhook apis because it has an invalid value: {v}"),
                ));
                return out;
            }
        },
    };
    let objects = b.crds.iter().chain(&b.others).map(|o| &o.object);
    let mut found: BTreeMap<&str, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for o in objects {
        let api_version = o["apiVersion"].as_str().unwrap_or_default();
        let kind = o["kind"].as_str().unwrap_or_default();
        for (release, gv, kinds) in REMOVED {
            if *gv == api_version && kinds.contains(&kind) {
                let key = if kind == "CustomResourceDefinition" {
                    "CRD"
                } else {
                    kind
                };
                found
                    .entry(release)
                    .or_default()
                    .entry(key.to_owned())
                    .or_default()
                    .insert(
                        o["metadata"]["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_owned(),
                    );
            }
        }
    }
    for (release, kinds) in found {
        let Some(at) = tolerant(release) else {
            continue;
        };
        let entries: Vec<String> = kinds
            .iter()
            .map(|(k, names)| {
                let quoted: Vec<String> = names.iter().map(|n| olm_goenc::quote(n)).collect();
                format!("{k}: ([{}])", quoted.join(" "))
            })
            .collect();
        let listed = if entries.len() == 1 {
            entries.concat()
        } else {
            entries.iter().map(|e| format!("{e},")).collect()
        };
        let anchor = release.replace('.', "-");
        let detail = format!(
            "this bundle is using APIs which were deprecated and removed in v{release}. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v{anchor}. Migrate the API(s) for {listed}"
        );
        let error =
            k8s.as_ref().is_some_and(|v| *v >= at) || min_kube.as_ref().is_some_and(|v| *v >= at);
        let level = if error { Level::Error } else { Level::Warning };
        out.push(finding(
            level,
            "ValidationFailed",
            Some(name.clone()),
            detail,
        ));
    }
    out
}

/// `good-practices`.
fn good_practices(b: &Bundle) -> Vec<Finding> {
    let name = b.csv.name().to_owned();
    let value = Some(name.clone());
    let mut out = Vec::new();
    let spec = spec(b);
    let deployments = &spec["install"]["spec"]["deployments"];
    if deployments.is_null() {
        out.push(finding(
            Level::Error,
            "ValidationFailed",
            value.clone(),
            "unable to find a deployment to install in the CSV",
        ));
    }
    for d in deployments.as_array().into_iter().flatten() {
        for c in d
            .pointer("/spec/template/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if c.pointer("/resources/requests").is_none_or(Value::is_null) {
                out.push(finding(Level::Warning, "ValidationFailed", value.clone(), format!(
                    "unable to find the resource requests for the container: ({}). It is recommended to ensure the resource request for CPU and Memory. Be aware that for some clusters configurations it is required to specify requests or limits for those values. Otherwise, the system or quota may reject Pod creation. More info: https://master.sdk.operatorframework.io/docs/best-practices/managing-resources/",
                    c["name"].as_str().unwrap_or_default()
                )));
            }
        }
    }
    for (list, which) in [("owned", "owned"), ("required", "required")] {
        for crd in spec["customresourcedefinitions"][list]
            .as_array()
            .into_iter()
            .flatten()
        {
            if crd["description"].as_str().is_none_or(str::is_empty) {
                out.push(finding(
                    Level::Warning,
                    "ValidationFailed",
                    value.clone(),
                    format!(
                        "{which} CRD {} has an empty description",
                        olm_goenc::quote(crd["name"].as_str().unwrap_or_default())
                    ),
                ));
            }
        }
    }
    let mut channels: Vec<String> = Vec::new();
    for c in b.channels().into_iter().chain(
        b.annotations
            .get("operators.operatorframework.io.bundle.channel.default.v1")
            .cloned(),
    ) {
        let c = c.trim().to_owned();
        if !c.is_empty() && !channels.contains(&c) {
            channels.push(c);
        }
    }
    let off: Vec<String> = channels
        .iter()
        .filter(|c| {
            !["candidate", "stable", "fast"]
                .iter()
                .any(|p| c.starts_with(p))
        })
        .map(|c| olm_goenc::quote(c))
        .collect();
    if !off.is_empty() {
        out.push(finding(Level::Warning, "ValidationFailed", value.clone(), format!(
            "channel(s) [{}] are not following the recommended naming convention: https://olm.operatorframework.io/docs/best-practices/channel-naming",
            off.join(" ")
        )));
    }
    let rules = ["permissions", "clusterPermissions"]
        .iter()
        .flat_map(|k| spec["install"]["spec"][*k].as_array().into_iter().flatten())
        .flat_map(|p| p["rules"].as_array().into_iter().flatten());
    let has = |r: &Value, key: &str, wanted: &[&str]| {
        r[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|v| wanted.contains(&v))
    };
    if rules.into_iter().any(|r| {
        has(r, "apiGroups", &["apiextensions.k8s.io"])
            && has(r, "resources", &["customresourcedefinitions", "*", "[*]"])
            && has(r, "verbs", &["create", "*", "[*]", "patch"])
    }) {
        out.push(finding(Level::Warning, "ValidationFailed", value.clone(), "CSV contains permissions to create CRD. An Operator shouldn't deploy or manage other operators (such patterns are known as meta or super operators or include CRDs in its Operands). It's the Operator Lifecycle Manager's job to manage the deployment and lifecycle of operators.  Please, review the design of your solution and if you should not be using Dependency Resolution from OLM instead. More info: https://sdk.operatorframework.io/docs/best-practices/common-recommendation/"));
    }
    if !name_has_semver_suffix(&name) {
        out.push(finding(Level::Warning, "ValidationFailed", value.clone(), format!(
            "csv.metadata.Name {name} is not following the versioning convention (MAJOR.MINOR.PATCH e.g 0.0.1): https://semver.org/"
        )));
    }
    if name.split(".v").count() != 2 {
        out.push(finding(Level::Warning, "ValidationFailed", value, format!(
            "csv.metadata.Name {name} is not following the recommended naming convention: <operator-name>.v<semver> e.g. memcached-operator.v0.0.1"
        )));
    }
    out
}

/// Whether the CSV name ends in a semantic version (`MAJOR.MINOR.PATCH[-pre][+build]`).
fn name_has_semver_suffix(name: &str) -> bool {
    // The version starts after the last `v` or `.` that is followed by a digit and gives a
    // valid version to the end.
    name.char_indices()
        .filter(|(_, c)| c.is_ascii_digit())
        .filter(|(i, _)| *i == 0 || matches!(name.as_bytes().get(i - 1), Some(b'v' | b'.' | b'-')))
        .any(|(i, _)| olm_version::blang::Version::parse(&name[i..]).is_ok())
}

#[cfg(test)]
mod tests;
