//! operator-framework/api's optional validators as `operator-sdk bundle validate
//! --select-optional` runs them (api v0.45.0 `pkg/validation/internal/{operatorhubv2,
//! standardcapabilities, standardcategories, operatorhub, community, removed_apis,
//! good_practices, multiarch}.go`, operator-sdk `internal/cmd/operator-sdk/bundle/validate/
//! optional.go`): OperatorHub metadata, capability levels, categories, OpenShift limits for
//! bundles with removed APIs, APIs removed from Kubernetes, good practices and the platforms of
//! the images, selected by label (`suite=operatorframework`, `name=good-practices`, …). Findings
//! print as upstream's (`tests/optional_golden.rs` holds every data bundle to upstream's own
//! output).
//!
//! Two validators look beyond the bundle: `multiarch` needs each image's platforms and
//! `community` the Dockerfile its `index-path` value names. The caller gathers those
//! ([`Gathered`]) and [`run_gathered`] decides; [`run`] is for callers that gather nothing.
//!
//! As upstream: the removed-API checks read only the first document of each manifest file; link
//! URLs are checked with a port of Go's `url.ParseRequestURI` and its error texts.
//!
//! Differences: `multiarch` reads a single-platform image's platform from its config, where
//! upstream's `docker manifest inspect` finds none and calls the image unsupported everywhere
//! (see [`multiarch`]). The channel-naming warning of `good-practices` reads the channels
//! of `metadata/annotations.yaml` (operator-sdk loads only `manifests/`, so it never sees any).
//! Where upstream lists in Go map order (the kinds of a removed-APIs message, the channels of
//! the channel-naming warning) the list is sorted. A maintainer e-mail is rejected, with Go's
//! `mail: missing '@' or angle-addr`, only when it has neither `@` nor `<`: other addresses Go's
//! `net/mail.ParseAddress` refuses pass. An `icon: []` list, which crashes upstream, gives
//! `csv.Spec.Icon should only have one element`. A bracketed host that is not an IPv6 address
//! gets `invalid host: ParseAddr("…")` without `net/netip`'s reason. A file mixing
//! CustomResourceDefinitions and other kinds counts its first CustomResourceDefinition as its
//! first document.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::apivalidate::{Finding, Level, MIN_KUBE_VERSION_WARNING};
use crate::bundle::Bundle;

pub mod community;
pub mod multiarch;

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
        name: "community",
        in_suite: false,
        description: "(stage: alpha) Community Operator bundle validation. See https://github.com/operator-framework/community-operators/blob/master/docs/packaging-required-fields.md",
    },
    Validator {
        name: "alpha-deprecated-apis",
        in_suite: true,
        description: "(stage: alpha) Deprecated APIs bundle validation. This validator can help you out verify if your bundle contains manifests which uses deprecated APIs. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/",
    },
    Validator {
        name: "good-practices",
        in_suite: true,
        description: "Good Practices bundle validation. This validator validates the bundle against criteria and suggestions defined as good practices for bundles under the operator-framework solutions. More info: https://sdk.operatorframework.io/docs/best-practices/.",
    },
    Validator {
        name: "multiarch",
        in_suite: false,
        description: "(Alpha) Multiple Architectures bundle validation. This validator validates the bundle against criteria defined to configure the support for multiple architectures. More info: https://olm.operatorframework.io/docs/advanced-tasks/ship-operator-supporting-multiarch/.",
    },
];

/// What operator-sdk logs (as a warning) when the selector is exactly `name=community`.
pub const COMMUNITY_DEPRECATED: &str = "The Optional(stage: alpha) Community Operator bundle validator is deprecated and will be removed in a future release. You can do these checks using the external validator: https://github.com/redhat-openshift-ecosystem/ocp-olm-catalog-validator/";

impl Validator {
    fn labels(&self) -> BTreeMap<String, String> {
        let mut l = BTreeMap::from([("name".to_owned(), self.name.to_owned())]);
        if self.in_suite {
            l.insert("suite".to_owned(), "operatorframework".to_owned());
        }
        l
    }
}

/// Why `--select-optional` picks no validator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    /// The selector does not parse.
    #[error(transparent)]
    Selector(#[from] olm_k8s::SelectorError),
    /// It matches no validator: operator-sdk's words.
    #[error(
        "invalid command args: selector {} does not match any validator labels",
        olm_goenc::quote(.0)
    )]
    NoMatch(String),
}

/// The validators `selector` (a label selector) picks.
///
/// # Errors
///
/// A selector that does not parse, or one that matches nothing ([`SelectError`]).
pub fn select(selector: &str) -> Result<Vec<Validator>, SelectError> {
    let parsed = olm_k8s::LabelSelector::parse(selector)?;
    let picked: Vec<Validator> = VALIDATORS
        .iter()
        .filter(|v| parsed.matches(&v.labels()))
        .copied()
        .collect();
    if picked.is_empty() {
        return Err(SelectError::NoMatch(selector.to_owned()));
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

/// What the validators that look beyond the bundle were given by the caller.
#[derive(Debug, Clone, Default)]
pub struct Gathered {
    /// For `multiarch`: each image of [`multiarch::images`], inspected. An image missing here
    /// counts as one that could not be inspected.
    pub platforms: BTreeMap<String, multiarch::Inspection>,
    /// For `community`: the file the `index-path` value names ([`community::IndexFile::read`]).
    /// With an `index-path` but no file here, the file counts as unreadable.
    pub index_file: Option<community::IndexFile>,
}

/// Runs `selected` on `b` with `values` (`--optional-values`: `k8s-version`,
/// `container-tools`, `index-path`) and nothing gathered: see [`run_gathered`].
pub fn run(b: &Bundle, selected: &[Validator], values: &BTreeMap<String, String>) -> Vec<Finding> {
    run_gathered(b, selected, values, &Gathered::default())
}

/// Runs `selected` on `b` with `values` and what the caller `gathered`; each validator's
/// warnings come before its errors, as operator-sdk prints a result.
pub fn run_gathered(
    b: &Bundle,
    selected: &[Validator],
    values: &BTreeMap<String, String>,
    gathered: &Gathered,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for v in selected {
        let mut found = match v.name {
            "operatorhubv2" => operatorhub(b, values, false),
            "capabilities" => capabilities(b),
            "categories" => categories(b),
            "operatorhub" => operatorhub(b, values, true),
            "community" => {
                let path = values
                    .get(community::INDEX_PATH_KEY)
                    .filter(|p| !p.is_empty());
                let unread = path.map(|p| community::IndexFile {
                    path: p.clone(),
                    contents: Err(community::IndexFileError::Read(format!("{p} was not read"))),
                });
                let file = path.and(gathered.index_file.as_ref().or(unread.as_ref()));
                community::validate(b, file)
            }
            "alpha-deprecated-apis" => deprecated_apis(b, values),
            "good-practices" => good_practices(b),
            "multiarch" => multiarch::validate(b, values, &gathered.platforms),
            _ => Vec::new(),
        };
        found.sort_by_key(|f| f.level != Level::Warning);
        out.extend(found);
        if v.name == "operatorhub" {
            // A result of its own, after the bundle's.
            out.push(finding(Level::Warning, "DeprecatedValidator", Some(String::new()), "The \"operatorhub\" validator is deprecated; for equivalent validation use \"operatorhub/v2\", \"standardcapabilities\" and \"standardcategories\" validators"));
        }
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

/// `operatorhubv2` (and, with `deprecated`, the `operatorhub` validator that also checks
/// capabilities and categories): provider, maintainers, links, version, icon, minKubeVersion, and
/// the removed APIs.
fn operatorhub(b: &Bundle, values: &BTreeMap<String, String>, deprecated: bool) -> Vec<Finding> {
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
        }
        if let Some(why) = email_problem(&email).filter(|_| !email.is_empty()) {
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
        }
        if let Some(why) = (!url.is_empty())
            .then(|| goparse::parse_request_uri(&url).err())
            .flatten()
        {
            out.push(csv_finding(
                b,
                Level::Error,
                format!(
                    "csv.Spec.Links url {url} is invalid: parse {}: {why}",
                    olm_goenc::quote(&url)
                ),
            ));
        }
    }
    if deprecated {
        out.extend(capabilities(b));
        out.extend(categories(b));
    }
    if version_is_zero(&spec["version"]) {
        out.push(csv_finding(b, Level::Error, "csv.Spec.Version must be set"));
    }
    match spec["icon"].as_array() {
        None => out.push(csv_finding(
            b,
            Level::Warning,
            "csv.Spec.Icon not specified",
        )),
        Some(icons) => {
            if icons.len() != 1 {
                out.push(csv_finding(
                    b,
                    Level::Error,
                    "csv.Spec.Icon should only have one element",
                ));
            }
            // Upstream indexes the first icon even in an empty list (and crashes).
            if let Some(icon) = icons.first() {
                let (data, media) = (text(&icon["base64data"]), text(&icon["mediatype"]));
                if data.is_empty() || media.is_empty() {
                    out.push(csv_finding(
                        b,
                        Level::Error,
                        "csv.Spec.Icon elements should contain both data and mediatype",
                    ));
                }
                if !media.is_empty()
                    && !["image/gif", "image/jpeg", "image/png", "image/svg+xml"]
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
    let min_kube = text(&spec["minKubeVersion"]);
    if min_kube.trim().is_empty() {
        out.push(csv_finding(b, Level::Warning, MIN_KUBE_VERSION_WARNING));
    } else if olm_version::blang::Version::parse(&min_kube).is_err() {
        out.push(csv_finding(
            b,
            Level::Error,
            format!("csv.Spec.MinKubeVersion has an invalid value: {min_kube}"),
        ));
    }
    out.extend(deprecated_apis(b, values));
    out
}

/// Whether `spec.version` is the zero version (`0.0.0`, build metadata aside) or missing, which
/// is how the typed CSV reads an absent one.
fn version_is_zero(v: &Value) -> bool {
    match v.as_str() {
        None => true,
        Some(v) => olm_version::blang::Version::parse_tolerant(v)
            .is_ok_and(|v| v.major == 0 && v.minor == 0 && v.patch == 0 && v.pre.is_empty()),
    }
}

/// Go's `net/mail.ParseAddress` verdict for the common mistake (no `@`, no angle address); other
/// addresses pass.
fn email_problem(email: &str) -> Option<&'static str> {
    (!email.contains('@') && !email.contains('<')).then_some("mail: missing '@' or angle-addr")
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

/// The APIs Kubernetes 1.22 removed that upstream looks for: (release, group/version, kinds).
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
];

/// The objects upstream's bundle loader keeps: the first document of each manifest file, in
/// file-name order, as `(file, object)`.
fn first_documents(b: &Bundle) -> Vec<(&str, &Value)> {
    let mut by_file: BTreeMap<&str, &Value> = BTreeMap::new();
    by_file.insert(b.csv_file.as_str(), &b.csv.raw);
    for o in b.crds.iter().chain(&b.others) {
        by_file.entry(o.file.as_str()).or_insert(&o.object);
    }
    by_file.into_iter().collect()
}

/// apimachinery's `ParseGroupVersion` then `WithKind`: `(group, version)`; an apiVersion with
/// more than one `/` has neither.
fn group_version(api_version: &str) -> (&str, &str) {
    match api_version.matches('/').count() {
        _ if api_version == "/" => ("", ""),
        0 => ("", api_version),
        1 => api_version.split_once('/').unwrap_or_default(),
        _ => ("", ""),
    }
}

/// The APIs removed in 1.25 that objects (and the CSV's CRD descriptions) are checked for.
const REMOVED_1_25: [(&str, &str, &str); 7] = [
    ("batch", "v1beta1", "CronJob"),
    ("discovery.k8s.io", "v1beta1", "EndpointSlice"),
    ("events.k8s.io", "v1beta1", "Event"),
    ("autoscaling", "v2beta1", "HorizontalPodAutoscaler"),
    ("policy", "v1beta1", "PodDisruptionBudget"),
    ("policy", "v1beta1", "PodSecurityPolicy"),
    ("node.k8s.io", "v1beta1", "RuntimeClass"),
];

/// Kind → names, in the order found; upstream's map of removed APIs.
type Found = BTreeMap<String, Vec<String>>;

fn add(found: &mut Found, key: &str, name: &str) {
    found
        .entry(key.to_owned())
        .or_default()
        .push(name.to_owned());
}

/// Removed in 1.22: v1beta1 CRDs (as `CRD`) and the other kinds of [`REMOVED`] for that release.
fn removed_1_22(objects: &[(&str, &Value)]) -> Found {
    let mut found = Found::new();
    let kind_of = |o: &Value| o["kind"].as_str().unwrap_or_default().to_owned();
    let api_of = |o: &Value| o["apiVersion"].as_str().unwrap_or_default().to_owned();
    let name_of = |o: &Value| {
        o["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    for (_, o) in objects {
        if kind_of(o) == "CustomResourceDefinition" && api_of(o) == "apiextensions.k8s.io/v1beta1" {
            add(&mut found, "CRD", &name_of(o));
        }
    }
    for (_, o) in objects {
        let (api, kind) = (api_of(o), kind_of(o));
        let removed = REMOVED.iter().any(|(release, gv, kinds)| {
            *release == "1.22" && *gv == api && kinds.contains(&kind.as_str())
        });
        if removed && kind != "CustomResourceDefinition" {
            add(&mut found, &kind, &name_of(o));
        }
    }
    found
}

/// Removed in 1.25: objects of the kinds of [`REMOVED_1_25`] and CSV CRD descriptions naming them
/// (as errors or warnings), and CSV permission rules on `policy` `podsecuritypolicies` (always a
/// warning).
fn removed_1_25(objects: &[(&str, &Value)]) -> (Found, Found) {
    let (mut found, mut warn) = (Found::new(), Found::new());
    let add_if_removed = |found: &mut Found, api: &str, kind: &str, name: &str| {
        let (group, version) = group_version(api);
        if REMOVED_1_25.contains(&(group, version, kind)) {
            add(found, kind, name);
        }
    };
    for (_, o) in objects {
        let api = o["apiVersion"].as_str().unwrap_or_default();
        let kind = o["kind"].as_str().unwrap_or_default();
        if api != "operators.coreos.com/v1alpha1" {
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            add_if_removed(&mut found, api, kind, name);
            continue;
        }
        if kind != "ClusterServiceVersion" {
            continue;
        }
        let spec = &o["spec"];
        let mut crd_resources = BTreeSet::new();
        for field in ["Owned", "Required"] {
            let descriptions = spec["customresourcedefinitions"][field.to_lowercase()].as_array();
            for (i, d) in descriptions.into_iter().flatten().enumerate() {
                for (j, r) in d["resources"].as_array().into_iter().flatten().enumerate() {
                    let kind = r["kind"].as_str().unwrap_or_default();
                    crd_resources.insert(format!("{}s", kind.to_lowercase()));
                    let name = format!(
                        "ClusterServiceVersion.Spec.CustomResourceDefinitions.{field}[{i}].Resource[{j}]"
                    );
                    add_if_removed(
                        &mut found,
                        r["version"].as_str().unwrap_or_default(),
                        kind,
                        &name,
                    );
                }
            }
        }
        for (field, key) in [
            ("ClusterPermissions", "clusterPermissions"),
            ("Permissions", "permissions"),
        ] {
            let perms = spec["install"]["spec"][key].as_array();
            for (i, p) in perms.into_iter().flatten().enumerate() {
                for (j, rule) in p["rules"].as_array().into_iter().flatten().enumerate() {
                    let strings = |k: &str| -> Vec<&str> {
                        rule[k]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .collect()
                    };
                    for group in strings("apiGroups") {
                        for res in strings("resources") {
                            if !crd_resources.contains(res)
                                && (group, res) == ("policy", "podsecuritypolicies")
                            {
                                add(
                                    &mut warn,
                                    res,
                                    &format!(
                                        "ClusterServiceVersion.Spec.InstallStrategy.StrategySpec.{field}[{i}].Rules[{j}]"
                                    ),
                                );
                            }
                        }
                    }
                }
            }
        }
    }
    (found, warn)
}

/// Removed in 1.26: `autoscaling/v2beta2` HorizontalPodAutoscalers.
fn removed_1_26(objects: &[(&str, &Value)]) -> Found {
    let mut found = Found::new();
    for (_, o) in objects {
        if o["apiVersion"] == "autoscaling/v2beta2" && o["kind"] == "HorizontalPodAutoscaler" {
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            add(&mut found, "HorizontalPodAutoscaler", name);
        }
    }
    found
}

/// Go's `%+q` of a string: `%q` with every non-ASCII rune escaped.
fn quote_ascii(s: &str) -> String {
    olm_goenc::quote(s)
        .chars()
        .map(|c| match c as u32 {
            0..0x80 => c.to_string(),
            n @ ..0x10000 => format!("\\u{n:04x}"),
            n => format!("\\U{n:08x}"),
        })
        .collect()
}

/// Upstream's removed-APIs message for `release` (`1.22`).
fn removed_message(release: &str, found: &Found) -> String {
    let listed = removed_list(found);
    let anchor = release.replace('.', "-");
    format!(
        "this bundle is using APIs which were deprecated and removed in v{release}. More info: https://kubernetes.io/docs/reference/using-api/deprecation-guide/#v{anchor}. Migrate the API(s) for {listed}"
    )
}

/// Upstream's list of removed APIs: `<Kind>: (["a" "b"])`, sorted by kind.
fn removed_list(found: &Found) -> String {
    let entries: Vec<String> = found
        .iter()
        .map(|(k, names)| {
            let quoted: Vec<String> = names.iter().map(|n| quote_ascii(n)).collect();
            format!("{k}: ([{}])", quoted.join(" "))
        })
        .collect();
    // Upstream ends every entry with `,` unless there is only one.
    if entries.len() == 1 {
        entries.concat()
    } else {
        entries.iter().map(|e| format!("{e},")).collect()
    }
}

/// `alpha-deprecated-apis`: one finding per Kubernetes release whose removed APIs the bundle
/// ships — an error when `k8s-version` or `minKubeVersion` is at least that release — and a
/// warning for CSV permissions on PodSecurityPolicies.
fn deprecated_apis(b: &Bundle, values: &BTreeMap<String, String>) -> Vec<Finding> {
    let name = b.csv.name().to_owned();
    let mut out = Vec::new();
    let failed =
        |level, detail: String| finding(level, "ValidationFailed", Some(name.clone()), detail);
    let tolerant = |v: &str| olm_version::blang::Version::parse_tolerant(v).ok();
    let provided = values
        .get("k8s-version")
        .map(String::as_str)
        .unwrap_or_default();
    let k8s = tolerant(provided);
    if !provided.is_empty() && k8s.is_none() {
        out.push(failed(
            Level::Error,
            format!("invalid value informed via the k8s key option : {provided}"),
        ));
    }
    let min_kube_text = spec(b)["minKubeVersion"].as_str().unwrap_or_default();
    let min_kube = tolerant(min_kube_text);
    if !min_kube_text.is_empty() && min_kube.is_none() {
        out.push(failed(Level::Error, format!("unable to use csv.Spec.MinKubeVersion to verify the CRD/Webhook apis because it has an invalid value: {min_kube_text}")));
    }
    let objects = first_documents(b);
    let (found_1_25, warn_1_25) = removed_1_25(&objects);
    let releases = [
        ("1.22", removed_1_22(&objects), Found::new()),
        ("1.25", found_1_25, warn_1_25),
        ("1.26", removed_1_26(&objects), Found::new()),
    ];
    for (release, found, warn) in releases {
        let Some(at) = tolerant(release) else {
            continue;
        };
        if !found.is_empty() {
            let error = k8s.as_ref().is_some_and(|v| *v >= at)
                || min_kube.as_ref().is_some_and(|v| *v >= at);
            let level = if error { Level::Error } else { Level::Warning };
            out.push(failed(level, removed_message(release, &found)));
        }
        if !warn.is_empty() {
            out.push(failed(Level::Warning, removed_message(release, &warn)));
        }
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
    // Upstream lists them in Go map order; sorted here.
    channels.sort();
    let off: Vec<String> = channels
        .iter()
        .filter(|c| {
            !["candidate", "stable", "fast"]
                .iter()
                .any(|p| c.starts_with(p))
        })
        .map(|c| quote_ascii(c))
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

/// Whether the CSV name ends in a semantic version as upstream finds it: the leftmost match of
/// `([0-9]+)\.([0-9]+)\.([0-9]+)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+[0-9A-Za-z-]+)?$`,
/// which must then parse as a strict semantic version.
fn name_has_semver_suffix(name: &str) -> bool {
    (0..name.len())
        .filter(|&i| name.is_char_boundary(i))
        .find(|&i| matches_semver_suffix(&name[i..]))
        .is_some_and(|i| olm_version::blang::Version::parse(&name[i..]).is_ok())
}

/// Whether all of `s` matches the version pattern of [`name_has_semver_suffix`].
fn matches_semver_suffix(s: &str) -> bool {
    let ident =
        |p: &str| !p.is_empty() && p.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-');
    let (core_pre, build) = match s.split_once('+') {
        Some((c, b)) => (c, Some(b)),
        None => (s, None),
    };
    if build.is_some_and(|b| !ident(b)) {
        return false;
    }
    let mut parts = core_pre.splitn(3, '.');
    let (Some(major), Some(minor), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let digits_end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (patch, pre) = rest.split_at(digits_end);
    let numeric = |p: &str| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit());
    numeric(major)
        && numeric(minor)
        && numeric(patch)
        && (pre.is_empty()
            || pre
                .strip_prefix('-')
                .is_some_and(|p| p.split('.').all(ident)))
}

/// Go's `net/url.ParseRequestURI`, for its verdict and error text (Go 1.26).
mod goparse {
    /// `Ok` when Go accepts `raw` as a request URI, else the error after `parse "<raw>": `.
    pub fn parse_request_uri(raw: &str) -> Result<(), String> {
        if raw.bytes().any(|b| b < b' ' || b == 0x7f) {
            return Err("net/url: invalid control character in URL".into());
        }
        if raw.is_empty() {
            return Err("empty url".into());
        }
        if raw == "*" {
            return Ok(());
        }
        let (scheme, rest) = scheme(raw)?;
        let rest = match rest.strip_suffix('?') {
            Some(r) if !r.contains('?') => r,
            _ => rest.split_once('?').map_or(rest, |(r, _)| r),
        };
        if !rest.starts_with('/') {
            return if scheme.is_empty() {
                Err("invalid URI for request".into())
            } else {
                Ok(())
            };
        }
        let mut path = rest;
        if let Some(after) = rest.strip_prefix("//").filter(|_| !scheme.is_empty()) {
            let (authority, p) = after.find('/').map_or((after, ""), |i| after.split_at(i));
            path = p;
            parse_authority(&scheme.to_ascii_lowercase(), authority)?;
        }
        unescape(path, Mode::Path)
    }

    fn scheme(raw: &str) -> Result<(&str, &str), String> {
        for (i, c) in raw.bytes().enumerate() {
            match c {
                b'a'..=b'z' | b'A'..=b'Z' => {}
                b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
                b':' if i == 0 => return Err("missing protocol scheme".into()),
                b':' => return Ok((&raw[..i], &raw[i + 1..])),
                _ => return Ok(("", raw)),
            }
        }
        Ok(("", raw))
    }

    fn parse_authority(scheme: &str, authority: &str) -> Result<(), String> {
        let (user, host) = match authority.rfind('@') {
            Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
            None => (None, authority),
        };
        parse_host(scheme, host)?;
        let Some(user) = user else {
            return Ok(());
        };
        if !user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-._:~!$&'()*+,;=%@".contains(c))
        {
            return Err("net/url: invalid userinfo".into());
        }
        match user.split_once(':') {
            None => unescape(user, Mode::User),
            Some((name, password)) => {
                unescape(name, Mode::User)?;
                unescape(password, Mode::User)
            }
        }
    }

    fn parse_host(scheme: &str, host: &str) -> Result<(), String> {
        match host.rfind('[') {
            Some(i) if i > 0 => return Err("invalid IP-literal".into()),
            Some(_) => {
                let Some(close) = host.rfind(']') else {
                    return Err("missing ']' in host".into());
                };
                let port = &host[close + 1..];
                if !valid_optional_port(port) {
                    return Err(format!(
                        "invalid port {} after host",
                        olm_goenc::quote(port)
                    ));
                }
                unescape(port, Mode::Host)?;
                let name = &host[1..close];
                match name.find("%25") {
                    Some(z) => {
                        unescape(&name[..z], Mode::Host)?;
                        unescape(&name[z..], Mode::Zone)?;
                    }
                    None => unescape(name, Mode::Host)?,
                }
                // Only an IPv6 address may be bracketed (netip.ParseAddr's own messages
                // are not reproduced).
                let addr = name.split("%25").next().unwrap_or_default();
                if addr.parse::<std::net::Ipv6Addr>().is_err() {
                    return Err(if addr.parse::<std::net::Ipv4Addr>().is_ok() {
                        "invalid IP-literal".into()
                    } else {
                        format!("invalid host: ParseAddr({})", olm_goenc::quote(name))
                    });
                }
                return Ok(());
            }
            None => {}
        }
        if let Some(first) = host.find(':') {
            let last = host.rfind(':').unwrap_or(first);
            // Go 1.26 keeps colons strict for http and https only.
            let i = if scheme == "http" || scheme == "https" {
                first
            } else {
                last
            };
            let port = &host[i..];
            if !valid_optional_port(port) {
                return Err(format!(
                    "invalid port {} after host",
                    olm_goenc::quote(port)
                ));
            }
        }
        unescape(host, Mode::Host)
    }

    fn valid_optional_port(port: &str) -> bool {
        port.is_empty()
            || port
                .strip_prefix(':')
                .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()))
    }

    #[derive(PartialEq, Eq, Clone, Copy)]
    enum Mode {
        Path,
        Host,
        Zone,
        User,
    }

    /// Whether Go escapes ASCII byte `c` in a host (or zone).
    fn host_escapes(c: u8) -> bool {
        !(c.is_ascii_alphanumeric() || b"-_.~!$&'()*+,;=:[]<>\"".contains(&c))
    }

    /// Go's `unescape` checks: well-formed `%XX`, and in a host, only non-ASCII `%`-escapes
    /// (or `%25`) and no ASCII byte a host must escape.
    fn unescape(s: &str, mode: Mode) -> Result<(), String> {
        let b = s.as_bytes();
        let escape_error = |from: usize, len: usize| {
            let end = (from + len).min(s.len());
            // Go quotes the bytes; they are valid UTF-8 here unless cut inside a rune.
            let text = String::from_utf8_lossy(&b[from..end]).into_owned();
            Err(format!("invalid URL escape {}", olm_goenc::quote(&text)))
        };
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'%' => {
                    if i + 2 >= b.len()
                        || !b[i + 1].is_ascii_hexdigit()
                        || !b[i + 2].is_ascii_hexdigit()
                    {
                        return escape_error(i, 3);
                    }
                    let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                    let v = hex(b[i + 1]) << 4 | hex(b[i + 2]);
                    let pct25 = &s[i..i + 3] == "%25";
                    if mode == Mode::Host && hex(b[i + 1]) < 8 && !pct25 {
                        return escape_error(i, 3);
                    }
                    if mode == Mode::Zone && !pct25 && v != b' ' && host_escapes(v) {
                        return escape_error(i, 3);
                    }
                    i += 3;
                }
                c => {
                    if matches!(mode, Mode::Host | Mode::Zone) && c < 0x80 && host_escapes(c) {
                        return Err(format!(
                            "invalid character {} in host name",
                            olm_goenc::quote(&(c as char).to_string())
                        ));
                    }
                    i += 1;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
