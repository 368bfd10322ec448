//! The checks operator-controller runs on a registry+v1 bundle before rendering it, with its
//! messages, plus the target-namespace rules of its render options.
//!
//! Each check returns its messages in upstream's order (most sort by name so the output is
//! stable); [`render_validators`] runs them all in upstream's order, and the renderer joins them
//! with newlines as Go's `errors.Join` does.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::bundle::Bundle;
use crate::csv::{InstallModeType, WebhookType};

/// Kinds a bundle may ship besides the CSV and CRDs, and whether they are namespaced
/// (operator-registry `supported_resources.go`).
pub const SUPPORTED_KINDS: &[(&str, bool)] = &[
    ("ClusterRole", false),
    ("ClusterRoleBinding", false),
    ("ConfigMap", true),
    ("ConsoleCLIDownload", false),
    ("ConsoleLink", false),
    ("ConsolePlugin", false),
    ("ConsoleQuickStart", false),
    ("ConsoleYAMLSample", false),
    ("NetworkPolicy", true),
    ("PodDisruptionBudget", true),
    ("PodMonitor", true),
    ("PriorityClass", false),
    ("PrometheusRule", true),
    ("Role", true),
    ("RoleBinding", true),
    ("Secret", true),
    ("Service", true),
    ("ServiceAccount", true),
    ("ServiceMonitor", true),
    ("VerticalPodAutoscaler", false),
];

/// `Some(namespaced)` for a supported kind.
pub fn supported_kind(kind: &str) -> Option<bool> {
    SUPPORTED_KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, n)| *n)
}

/// A render validator: a name (upstream's function name) and the check.
pub type Check = (&'static str, fn(&Bundle) -> Vec<String>);

/// Every render validator, in the order upstream runs them, then this implementation's own
/// ([`check_object_names`]).
pub const RENDER_VALIDATORS: &[Check] = &[
    (
        "CheckDeploymentSpecUniqueness",
        check_deployment_spec_uniqueness,
    ),
    (
        "CheckDeploymentNameIsDNS1123SubDomain",
        check_deployment_name_is_dns1123_subdomain,
    ),
    ("CheckCRDResourceUniqueness", check_crd_resource_uniqueness),
    ("CheckOwnedCRDExistence", check_owned_crd_existence),
    ("CheckPackageNameNotEmpty", check_package_name_not_empty),
    (
        "CheckConversionWebhookSupport",
        check_conversion_webhook_support,
    ),
    (
        "CheckWebhookDeploymentReferentialIntegrity",
        check_webhook_deployment_referential_integrity,
    ),
    ("CheckWebhookNameUniqueness", check_webhook_name_uniqueness),
    (
        "CheckWebhookNameIsDNS1123SubDomain",
        check_webhook_name_is_dns1123_subdomain,
    ),
    (
        "CheckConversionWebhookCRDReferenceUniqueness",
        check_conversion_webhook_crd_reference_uniqueness,
    ),
    (
        "CheckConversionWebhooksReferenceOwnedCRDs",
        check_conversion_webhooks_reference_owned_crds,
    ),
    ("CheckWebhookRules", check_webhook_rules),
    ("CheckObjectSupport", check_object_support),
    ("CheckObjectNames", check_object_names),
];

/// Runs every render validator; an empty result means the bundle may be rendered.
pub fn render_validators(b: &Bundle) -> Vec<String> {
    RENDER_VALIDATORS.iter().flat_map(|(_, f)| f(b)).collect()
}

/// Kubernetes `IsDNS1123Subdomain` messages as strings (empty when valid), sorted as upstream
/// sorts them before reporting.
fn sorted_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs: Vec<String> = olm_k8s::dns1123_subdomain_errors(s)
        .iter()
        .map(ToString::to_string)
        .collect();
    errs.sort();
    errs
}

fn duplicates<'a>(names: impl Iterator<Item = &'a str>) -> BTreeSet<&'a str> {
    let mut seen = BTreeSet::new();
    let mut dup = BTreeSet::new();
    for n in names {
        if !seen.insert(n) {
            dup.insert(n);
        }
    }
    dup
}

/// Upstream's `CheckDeploymentSpecUniqueness`: no two install-strategy deployments share a name.
pub fn check_deployment_spec_uniqueness(b: &Bundle) -> Vec<String> {
    duplicates(
        b.csv
            .spec
            .install
            .spec
            .deployments
            .iter()
            .map(|d| d.name.as_str()),
    )
    .into_iter()
    .map(|d| format!("cluster service version contains duplicate strategy deployment spec '{d}'"))
    .collect()
}

/// Upstream's `CheckDeploymentNameIsDNS1123SubDomain`: every deployment name is a DNS-1123
/// subdomain.
pub fn check_deployment_name_is_dns1123_subdomain(b: &Bundle) -> Vec<String> {
    let mut by_name: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for d in &b.csv.spec.install.spec.deployments {
        let errs = sorted_subdomain_errors(&d.name);
        if !errs.is_empty() {
            by_name.insert(&d.name, errs);
        }
    }
    by_name
        .into_iter()
        .map(|(n, e)| {
            format!(
                "invalid cluster service version strategy deployment name '{n}': {}",
                e.join(", ")
            )
        })
        .collect()
}

/// Upstream's `CheckCRDResourceUniqueness`: no CRD appears twice among the bundle's objects.
pub fn check_crd_resource_uniqueness(b: &Bundle) -> Vec<String> {
    duplicates(b.crd_names())
        .into_iter()
        .map(|n| format!("bundle contains duplicate custom resource definition '{n}'"))
        .collect()
}

/// Upstream's `CheckOwnedCRDExistence`: every CRD the CSV owns is shipped in the bundle.
pub fn check_owned_crd_existence(b: &Bundle) -> Vec<String> {
    let have: BTreeSet<&str> = b.crd_names().collect();
    let missing: BTreeSet<&str> = b
        .csv
        .spec
        .customresourcedefinitions
        .owned
        .iter()
        .map(|c| c.name.as_str())
        .filter(|n| !have.contains(n))
        .collect();
    missing
        .into_iter()
        .map(|n| format!("cluster service definition references owned custom resource definition '{n}' not found in bundle"))
        .collect()
}

/// Upstream's `CheckPackageNameNotEmpty`: the annotations name the package.
pub fn check_package_name_not_empty(b: &Bundle) -> Vec<String> {
    if b.package_name.is_empty() {
        vec!["package name is empty".to_string()]
    } else {
        Vec::new()
    }
}

/// Upstream's `CheckConversionWebhookSupport`: a bundle with conversion webhooks supports
/// AllNamespaces and no other install mode.
pub fn check_conversion_webhook_support(b: &Bundle) -> Vec<String> {
    let names: Vec<&str> = b
        .csv
        .spec
        .webhookdefinitions
        .iter()
        .filter(|w| w.webhook_type == WebhookType::ConversionWebhook)
        .map(|w| w.generate_name.as_str())
        .collect();
    if names.is_empty() {
        return Vec::new();
    }
    let modes = b.csv.supported_install_modes();
    if modes.len() == 1 && modes[0] == InstallModeType::AllNamespaces {
        return Vec::new();
    }
    let modes = olm_goenc::slice(modes.iter().map(InstallModeType::as_str));
    names
        .into_iter()
        .map(|n| {
            format!(
                "bundle contains conversion webhook {} and supports install modes {modes} - conversion webhooks are only supported for bundles that only support AllNamespaces install mode",
                go_quote(n)
            )
        })
        .collect()
}

/// Upstream's `CheckWebhookDeploymentReferentialIntegrity`: each webhook names a deployment of the
/// CSV.
pub fn check_webhook_deployment_referential_integrity(b: &Bundle) -> Vec<String> {
    let deployments: BTreeSet<&str> = b
        .csv
        .spec
        .install
        .spec
        .deployments
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    let mut by_dep: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
    for w in &b.csv.spec.webhookdefinitions {
        if !deployments.contains(w.deployment_name.as_str()) {
            by_dep
                .entry(&w.deployment_name)
                .or_default()
                .push((w.webhook_type.as_str(), &w.generate_name));
        }
    }
    let mut out = Vec::new();
    for (dep, mut whs) in by_dep {
        whs.sort();
        for (t, n) in whs {
            out.push(format!(
                "webhook of type '{t}' with name '{n}' references non-existent deployment '{dep}'"
            ));
        }
    }
    out
}

/// Upstream's `CheckWebhookNameUniqueness`: no two webhooks of one type share a name.
pub fn check_webhook_name_uniqueness(b: &Bundle) -> Vec<String> {
    let mut seen: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut dup: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for w in &b.csv.spec.webhookdefinitions {
        let t = w.webhook_type.as_str();
        if !seen.entry(t).or_default().insert(&w.generate_name) {
            dup.entry(t).or_default().insert(&w.generate_name);
        }
    }
    dup.into_iter()
        .flat_map(|(t, names)| {
            names
                .into_iter()
                .map(move |n| format!("duplicate webhook '{n}' of type '{t}'"))
        })
        .collect()
}

/// Upstream's `CheckWebhookNameIsDNS1123SubDomain`: every webhook name is a DNS-1123 subdomain.
pub fn check_webhook_name_is_dns1123_subdomain(b: &Bundle) -> Vec<String> {
    let mut bad: BTreeMap<&str, BTreeMap<&str, Vec<String>>> = BTreeMap::new();
    for w in &b.csv.spec.webhookdefinitions {
        let errs = sorted_subdomain_errors(&w.generate_name);
        if !errs.is_empty() {
            bad.entry(w.webhook_type.as_str())
                .or_default()
                .insert(&w.generate_name, errs);
        }
    }
    bad.into_iter()
        .flat_map(|(t, m)| {
            m.into_iter().map(move |(n, e)| {
                format!(
                    "webhook of type '{t}' has invalid name '{n}': {}",
                    e.join(",")
                )
            })
        })
        .collect()
}

/// Upstream's `CheckConversionWebhookCRDReferenceUniqueness`: no CRD is converted by two webhooks.
pub fn check_conversion_webhook_crd_reference_uniqueness(b: &Bundle) -> Vec<String> {
    let mut crd_to_wh: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for w in b
        .csv
        .spec
        .webhookdefinitions
        .iter()
        .filter(|w| w.webhook_type == WebhookType::ConversionWebhook)
    {
        for c in &w.conversion_crds {
            crd_to_wh.entry(c).or_default().push(&w.generate_name);
        }
    }
    crd_to_wh
        .into_iter()
        .filter(|(_, w)| w.len() > 1)
        .map(|(crd, mut whs)| {
            whs.sort();
            format!(
                "conversion webhooks [{}] reference same custom resource definition '{crd}'",
                whs.join(",")
            )
        })
        .collect()
}

/// Upstream's `CheckConversionWebhooksReferenceOwnedCRDs`: conversion webhooks convert only CRDs
/// the CSV owns.
pub fn check_conversion_webhooks_reference_owned_crds(b: &Bundle) -> Vec<String> {
    let mut conv: Vec<_> = b
        .csv
        .spec
        .webhookdefinitions
        .iter()
        .filter(|w| w.webhook_type == WebhookType::ConversionWebhook)
        .collect();
    if conv.is_empty() {
        return Vec::new();
    }
    let owned: BTreeSet<&str> = b
        .csv
        .spec
        .customresourcedefinitions
        .owned
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    conv.sort_by(|a, b| a.generate_name.cmp(&b.generate_name));
    let mut out = Vec::new();
    for w in conv {
        let mut crds: Vec<&str> = w.conversion_crds.iter().map(String::as_str).collect();
        crds.sort();
        for c in crds {
            if !owned.contains(c) {
                out.push(format!(
                    "conversion webhook '{}' references custom resource definition '{c}' not owned bundle",
                    w.generate_name
                ));
            }
        }
    }
    out
}

const FORBIDDEN_WEBHOOK_GROUPS: &[&str] = &["olm.operatorframework.io", "*"];
const FORBIDDEN_ADMISSION_RESOURCES: &[&str] = &[
    "*",
    "mutatingwebhookconfiguration",
    "mutatingwebhookconfigurations",
    "validatingwebhookconfiguration",
    "validatingwebhookconfigurations",
];

/// Upstream's `CheckWebhookRules`: webhook rules name neither OLM's API group nor every group
/// (`*`), nor the admission webhook configurations themselves.
pub fn check_webhook_rules(b: &Bundle) -> Vec<String> {
    let mut out = Vec::new();
    for w in b
        .csv
        .spec
        .webhookdefinitions
        .iter()
        .filter(|w| w.webhook_type != WebhookType::ConversionWebhook)
    {
        let name = go_quote(&w.generate_name);
        for rule in &w.rules {
            for group in str_list(rule.get("apiGroups")) {
                if FORBIDDEN_WEBHOOK_GROUPS.contains(&group) {
                    out.push(format!(
                        "webhook {name} contains forbidden rule: admission webhook rules cannot reference API group {}",
                        go_quote(group)
                    ));
                }
                if group == "admissionregistration.k8s.io" {
                    for res in str_list(rule.get("resources")) {
                        if FORBIDDEN_ADMISSION_RESOURCES.contains(&res.to_lowercase().as_str()) {
                            out.push(format!(
                                "webhook {name} contains forbidden rule: admission webhook rules cannot reference resource {} for API group {}",
                                go_quote(res),
                                go_quote(group)
                            ));
                        }
                    }
                }
            }
        }
    }
    out
}

/// Upstream's `CheckObjectSupport`: every object of the bundle is of a kind the renderer can
/// install.
pub fn check_object_support(b: &Bundle) -> Vec<String> {
    b.others
        .iter()
        .filter(|o| supported_kind(o.kind()).is_none())
        .map(|o| {
            format!(
                "unsupported resource {} with kind {}",
                go_quote(o.name()),
                go_quote(o.kind())
            )
        })
        .collect()
}

/// Names the API server would refuse, refused before anything is applied, each in
/// kube-apiserver's own words ([`olm_k8s::invalid_object_message`]): the ServiceAccounts the
/// CSV's permissions name, the CRDs (also `spec.names.plural` + `.` + `spec.group`, as
/// apiextensions requires) and every other object, each by the rule of its kind
/// ([`olm_k8s::NameRule`]). The install-strategy Deployments are upstream's check
/// ([`check_deployment_name_is_dns1123_subdomain`]).
///
/// Not upstream's: operator-controller leaves these to the API server, whose refusal comes
/// mid-rollout — after other objects were applied, and, for a name long enough, in a status
/// message the API server refuses in turn.
pub fn check_object_names(b: &Bundle) -> Vec<String> {
    let strategy = &b.csv.spec.install.spec;
    let accounts: BTreeSet<&str> = strategy
        .permissions
        .iter()
        .chain(&strategy.cluster_permissions)
        .map(|p| p.service_account_name.as_str())
        .filter(|n| !n.is_empty())
        .collect();
    let mut out: Vec<String> = accounts
        .into_iter()
        .filter_map(|n| name_refusal("", "ServiceAccount", n, Vec::new()))
        .collect();
    for crd in &b.crds {
        let spec = |p: &str| crd.object.pointer(p).and_then(Value::as_str).unwrap_or("");
        let name = crd.name();
        let required = format!("{}.{}", spec("/spec/names/plural"), spec("/spec/group"));
        let extra = (!name.is_empty() && name != required)
            .then(|| olm_k8s::FieldError::Invalid {
                field: "metadata.name".into(),
                value: name.into(),
                detail: r#"must be spec.names.plural+"."+spec.group"#.into(),
            })
            .into_iter()
            .collect();
        out.extend(name_refusal(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            name,
            extra,
        ));
    }
    for o in &b.others {
        let group = o
            .object
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.rsplit_once('/'))
            .map_or("", |(g, _)| g);
        out.extend(name_refusal(group, o.kind(), o.name(), Vec::new()));
    }
    out
}

/// The API server's refusal of an object named `name`, if it would refuse it; `extra` are the
/// kind's own name rules, checked after the common one.
fn name_refusal(
    group: &str,
    kind: &str,
    name: &str,
    extra: Vec<olm_k8s::FieldError>,
) -> Option<String> {
    let mut errors = olm_k8s::object_name_errors(group, kind, name);
    errors.extend(extra);
    (!errors.is_empty()).then(|| olm_k8s::invalid_object_message(group, kind, name, &errors))
}

/// Validates the target namespaces of a render against the bundle's install modes; the message
/// is upstream's, without the `invalid target namespaces [..]: ` wrapper.
pub fn validate_target_namespaces(
    b: &Bundle,
    install_namespace: &str,
    targets: &[String],
) -> Result<(), String> {
    let modes = b.csv.supported_install_modes();
    let has = |m: InstallModeType| modes.contains(&m);
    let set: BTreeSet<&str> = targets.iter().map(String::as_str).collect();
    let modes_str = olm_goenc::slice(modes.iter().map(InstallModeType::as_str));
    if set.is_empty() {
        if has(InstallModeType::MultiNamespace) {
            return Err("at least one target namespace must be specified".into());
        }
        return Err("exactly one target namespace must be specified".into());
    }
    if set.len() == 1 && set.contains("") {
        if has(InstallModeType::AllNamespaces) {
            return Ok(());
        }
        return Err(format!(
            "supported install modes {modes_str} do not support targeting all namespaces"
        ));
    }
    if set.len() == 1 {
        if targets[0] == install_namespace {
            if !has(InstallModeType::OwnNamespace) {
                return Err(format!(
                    "supported install modes {modes_str} do not support targeting own namespace"
                ));
            }
            return Ok(());
        }
        if has(InstallModeType::SingleNamespace) {
            return Ok(());
        }
    } else {
        if !has(InstallModeType::OwnNamespace) && set.contains(install_namespace) {
            return Err(format!(
                "supported install modes {modes_str} do not support targeting own namespace"
            ));
        }
        if has(InstallModeType::MultiNamespace) && !set.contains("") {
            return Ok(());
        }
    }
    Err(format!(
        "supported install modes {modes_str} do not support target namespaces {}",
        olm_goenc::slice(targets)
    ))
}

pub use olm_goenc::quote as go_quote;

fn str_list(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}
