//! Whether an operator installed by a Subscription can move to OLM v1: upstream's readiness
//! checks (library-olm `migration/pkg/migration/readiness.go` `CheckReadiness`), compatibility
//! checks (`compatibility.go` `CheckCompatibility`) and catalog checks (`scan.go`), in their
//! order, with their names and messages.
//!
//! Flow of [`readiness`] then [`compatibility`]: each check appends one [`CheckResult`]; a soft
//! check that fails but was acknowledged (an [`Acks`] flag) passes with an `overridden: …`
//! message; hard checks ignore every acknowledgement. [`catalog_source`] adds a failed
//! `CatalogSource type` result only when the source cannot move, and [`catalog_availability`]
//! runs last, only when nothing failed before it.
//!
//! Caveat: like upstream, only the first OperatorGroup of the namespace is examined (a
//! namespace with two is one OLM v0 itself refuses to install into).

use olm_v0_api::v1::OperatorGroup;
use olm_v0_api::v1alpha1::{
    CatalogSource, ClusterServiceVersion, ClusterServiceVersionPhase, ConditionReason,
    InstallModeType, SourceType, Subscription, SubscriptionState,
};
use olm_v0_api::v2::OperatorCondition;
use serde::Serialize;
use serde_json::Value;

/// One check: its name as printed, whether it passed, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    /// The check's name (upstream's, e.g. `Subscription state`).
    pub name: String,
    /// Whether it passed (an acknowledged soft failure passes).
    pub passed: bool,
    /// What was found.
    pub message: String,
}

impl CheckResult {
    fn pass(name: &str, message: impl Into<String>) -> Self {
        CheckResult {
            name: name.to_owned(),
            passed: true,
            message: message.into(),
        }
    }

    fn fail(name: &str, message: impl Into<String>) -> Self {
        CheckResult {
            name: name.to_owned(),
            passed: false,
            message: message.into(),
        }
    }

    /// A soft check: failed with `failed`, or passed with `overridden` when acknowledged.
    fn soft(name: &str, acknowledged: bool, failed: String, overridden: String) -> Self {
        if acknowledged {
            Self::pass(name, overridden)
        } else {
            Self::fail(name, failed)
        }
    }
}

/// The soft checks a user has acknowledged (upstream's `--acknowledge-*` flags). Each one
/// passed is recorded on the ClusterExtension as `olm.operatorframework.io/acknowledged-<flag>`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Acks {
    /// `--acknowledge-watch-scope-change`: the operator will watch all namespaces.
    pub watch_scope_change: bool,
    /// `--acknowledge-operator-condition`: the operator's OperatorCondition use is dropped.
    pub operator_condition: bool,
    /// `--acknowledge-olmv0-api-access`: the operator reads OLM v0's API, which OLM v1 lacks.
    pub olmv0_api_access: bool,
    /// `--acknowledge-scoped-serviceaccount`: the OperatorGroup's scoped account is dropped.
    pub scoped_serviceaccount: bool,
    /// `--acknowledge-not-steady-state`: the Subscription or CSV is not settled.
    pub not_steady_state: bool,
}

impl Acks {
    /// The flag names (without `--acknowledge-`) of the acknowledgements given, in upstream's
    /// order: what the ClusterExtension's `acknowledged-<flag>` annotations record.
    pub fn flags(&self) -> Vec<&'static str> {
        [
            (self.watch_scope_change, "watch-scope-change"),
            (self.operator_condition, "operator-condition"),
            (self.olmv0_api_access, "olmv0-api-access"),
            (self.scoped_serviceaccount, "scoped-serviceaccount"),
            (self.not_steady_state, "not-steady-state"),
        ]
        .into_iter()
        .filter_map(|(on, flag)| on.then_some(flag))
        .collect()
    }
}

/// The name of the ClusterObjectSet CRD migration needs.
pub const CLUSTER_OBJECT_SET_CRD: &str = "clusterobjectsets.olm.operatorframework.io";

/// Whether the ClusterObjectSet API is there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectSetApi {
    /// The CRD is `Established`.
    Established,
    /// The CRD exists and is not established yet.
    NotEstablished,
    /// Reading it failed (not found included): the API server's message.
    Unreadable(String),
}

/// What [`readiness`] looks at.
#[derive(Debug, Clone, Copy)]
pub struct Readiness<'a> {
    /// The Subscription.
    pub subscription: &'a Subscription,
    /// Every Subscription of the cluster, as listed (the one checked among them).
    pub all_subscriptions: &'a [Subscription],
    /// Its installed CSV: `Ok(None)` when it names none, `Err` with the API server's message
    /// when reading it failed.
    pub csv: Result<Option<&'a ClusterServiceVersion>, &'a str>,
    /// The ClusterObjectSet CRD.
    pub object_set_api: &'a ObjectSetApi,
}

/// The annotation OLM v0 puts on the Subscriptions it makes for dependencies.
const GENERATED_BY: &str = "olm.generated-by";

/// Upstream's readiness checks, in order.
pub fn readiness(input: &Readiness<'_>, acks: &Acks) -> Vec<CheckResult> {
    let sub = input.subscription;
    let mut out = Vec::new();
    out.push(match input.object_set_api {
        ObjectSetApi::Established => CheckResult::pass(
            "ClusterObjectSet API",
            "ClusterObjectSet CRD is established",
        ),
        ObjectSetApi::NotEstablished => CheckResult::fail(
            "ClusterObjectSet API",
            format!(
                "ClusterObjectSet CRD {} is not established",
                olm_goenc::quote(CLUSTER_OBJECT_SET_CRD)
            ),
        ),
        ObjectSetApi::Unreadable(e) => CheckResult::fail(
            "ClusterObjectSet API",
            format!(
                "ClusterObjectSet CRD {} is required before migration: {e}",
                olm_goenc::quote(CLUSTER_OBJECT_SET_CRD)
            ),
        ),
    });
    let state = sub
        .status
        .as_ref()
        .and_then(|s| s.state.as_ref())
        .map(|s| s.as_str().to_owned())
        .unwrap_or_default();
    let steady = [
        SubscriptionState::AtLatestKnown.as_str(),
        SubscriptionState::UpgradePending.as_str(),
    ];
    out.push(if steady.contains(&state.as_str()) {
        CheckResult::pass(
            "Subscription state",
            format!("state is {}", olm_goenc::quote(&state)),
        )
    } else {
        CheckResult::soft(
            "Subscription state",
            acks.not_steady_state,
            format!(
                "must be {} or {}, got {}; pass --acknowledge-not-steady-state to override",
                olm_goenc::quote(steady[0]),
                olm_goenc::quote(steady[1]),
                olm_goenc::quote(&state)
            ),
            format!(
                "overridden: Subscription state is {} (not steady state acknowledged)",
                olm_goenc::quote(&state)
            ),
        )
    });
    let installed = installed_csv(sub);
    out.push(if installed.is_empty() {
        CheckResult::fail("Installed CSV", "no installedCSV set")
    } else {
        CheckResult::pass("Installed CSV", installed)
    });
    out.push(if sub.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(GENERATED_BY)) {
        CheckResult::fail(
            "Not a dependency",
            "olm.generated-by annotation present — operator is an OLMv0-managed dependency of another operator; do not migrate individually",
        )
    } else {
        CheckResult::pass("Not a dependency", "no olm.generated-by annotation")
    });
    let package = &sub.spec.package;
    let other = input.all_subscriptions.iter().find(|o| {
        o.spec.package == *package
            && (o.metadata.namespace != sub.metadata.namespace
                || o.metadata.name != sub.metadata.name)
    });
    out.push(match other {
        Some(o) => CheckResult::fail(
            "Package uniqueness",
            format!(
                "another Subscription {}/{} references the same package {}",
                o.metadata.namespace.as_deref().unwrap_or_default(),
                o.metadata.name.as_deref().unwrap_or_default(),
                olm_goenc::quote(package)
            ),
        ),
        None => CheckResult::pass(
            "Package uniqueness",
            format!(
                "no other Subscription references package {}",
                olm_goenc::quote(package)
            ),
        ),
    });
    if !installed.is_empty() {
        out.push(csv_health(installed, input.csv, acks));
    }
    out
}

/// `CSV health`: phase `Succeeded` with reason `InstallSucceeded`.
fn csv_health(
    name: &str,
    csv: Result<Option<&ClusterServiceVersion>, &str>,
    acks: &Acks,
) -> CheckResult {
    const NAME: &str = "CSV health";
    let csv = match csv {
        Ok(Some(csv)) => csv,
        Ok(None) => {
            return CheckResult::fail(
                NAME,
                format!(
                    "failed to get CSV {name}: clusterserviceversions.operators.coreos.com {} not found",
                    olm_goenc::quote(name)
                ),
            );
        }
        Err(e) => return CheckResult::fail(NAME, format!("failed to get CSV {name}: {e}")),
    };
    let status = csv.status.as_ref();
    let phase = status
        .and_then(|s| s.phase.as_ref())
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let reason = status
        .and_then(|s| s.reason.as_ref())
        .map(|r| r.as_str().to_owned())
        .unwrap_or_default();
    let succeeded = ClusterServiceVersionPhase::Succeeded.as_str();
    let install_succeeded = ConditionReason::InstallSucceeded.as_str();
    if phase != succeeded {
        CheckResult::soft(
            NAME,
            acks.not_steady_state,
            format!(
                "phase is {}, expected {}",
                olm_goenc::quote(&phase),
                olm_goenc::quote(succeeded)
            ),
            format!(
                "overridden: phase is {} (not at steady state acknowledged)",
                olm_goenc::quote(&phase)
            ),
        )
    } else if reason != install_succeeded {
        CheckResult::soft(
            NAME,
            acks.not_steady_state,
            format!(
                "reason is {}, expected {}",
                olm_goenc::quote(&reason),
                olm_goenc::quote(install_succeeded)
            ),
            format!(
                "overridden: reason is {} (not at steady state acknowledged)",
                olm_goenc::quote(&reason)
            ),
        )
    } else {
        CheckResult::pass(NAME, format!("phase: {phase}, reason: {reason}"))
    }
}

/// The Subscription's `status.installedCSV` (empty when unset).
pub fn installed_csv(sub: &Subscription) -> &str {
    sub.status
        .as_ref()
        .and_then(|s| s.installed_csv.as_deref())
        .unwrap_or_default()
}

/// What [`compatibility`] looks at.
#[derive(Debug, Clone, Copy)]
pub struct Compatibility<'a> {
    /// The installed CSV.
    pub csv: &'a ClusterServiceVersion,
    /// The OperatorGroups of the Subscription's namespace, as listed.
    pub operator_groups: &'a [OperatorGroup],
    /// The OperatorCondition named after the CSV, if any.
    pub operator_condition: Option<&'a OperatorCondition>,
}

/// Upstream's compatibility checks, in order.
pub fn compatibility(input: &Compatibility<'_>, acks: &Acks) -> Vec<CheckResult> {
    let csv = input.csv;
    let mut out = Vec::new();
    match input.operator_groups.first() {
        None => out.push(CheckResult::fail(
            "OperatorGroup exists",
            format!(
                "no OperatorGroup found in namespace {}",
                csv.metadata.namespace.as_deref().unwrap_or_default()
            ),
        )),
        Some(og) => operator_group_checks(og, acks, &mut out),
    }
    let all_namespaces = csv
        .spec
        .install_modes
        .iter()
        .any(|m| m.type_ == InstallModeType::AllNamespaces && m.supported);
    out.push(if all_namespaces {
        CheckResult::pass(
            "AllNamespaces install mode supported",
            "CSV supports AllNamespaces install mode",
        )
    } else {
        CheckResult::fail(
            "AllNamespaces install mode supported",
            "CSV does not declare AllNamespaces install mode as supported; --acknowledge-watch-scope-change cannot override bundle capabilities",
        )
    });
    out.extend(dependencies(csv));
    let owns_api_services = csv
        .spec
        .api_service_definitions
        .as_ref()
        .is_some_and(|d| !d.owned.is_empty());
    out.push(if owns_api_services {
        CheckResult::fail(
            "No APIService definitions",
            "CSV has spec.apiservicedefinitions.owned set; OLMv1 does not yet fully support APIService-based operators",
        )
    } else {
        CheckResult::pass(
            "No APIService definitions",
            "CSV does not define owned APIServices",
        )
    });
    out.push(match input.operator_condition {
        None => CheckResult::pass(
            "No OperatorCondition usage",
            "no OperatorCondition resource found",
        ),
        Some(c) if c.status.as_ref().is_none_or(|s| s.conditions.is_empty()) => {
            CheckResult::pass(
                "No OperatorCondition usage",
                "OperatorCondition exists but has no status entries",
            )
        }
        Some(_) => CheckResult::soft(
            "No OperatorCondition usage",
            acks.operator_condition,
            "OperatorCondition has status.conditions entries; operator actively uses the OperatorCondition API".to_owned(),
            "overridden: active OperatorCondition usage acknowledged".to_owned(),
        ),
    });
    out.push(olm_v0_api_access(csv, acks));
    out
}

/// The OperatorGroup's checks (upstream's `checkAllNamespacesMode` and neighbours).
fn operator_group_checks(og: &OperatorGroup, acks: &Acks, out: &mut Vec<CheckResult>) {
    let scope_overridden = "overridden: operator will run AllNamespaces post-migration (watch scope change acknowledged)";
    out.push(if og.spec.service_account_name.as_deref().is_some_and(|s| !s.is_empty()) {
        CheckResult::soft(
            "No scoped ServiceAccount",
            acks.scoped_serviceaccount,
            "OperatorGroup has spec.serviceAccountName set; OLMv1 does not support scoped service accounts".to_owned(),
            "overridden: operator will use cluster-admin (scoped ServiceAccount acknowledged)".to_owned(),
        )
    } else {
        CheckResult::pass(
            "No scoped ServiceAccount",
            "OperatorGroup does not use a scoped service account",
        )
    });
    let selects = og.spec.selector.as_ref().is_some_and(|s| {
        s.match_labels.as_ref().is_some_and(|l| !l.is_empty())
            || s.match_expressions.as_ref().is_some_and(|e| !e.is_empty())
    });
    out.push(if selects {
        CheckResult::soft(
            "No namespace selector",
            acks.watch_scope_change,
            "OperatorGroup has spec.selector set; OLMv1 uses AllNamespaces — pass --acknowledge-watch-scope-change to override".to_owned(),
            scope_overridden.to_owned(),
        )
    } else {
        CheckResult::pass(
            "No namespace selector",
            "OperatorGroup does not use a namespace selector",
        )
    });
    out.push(match og.spec.upgrade_strategy {
        Some(olm_v0_api::v1::UpgradeStrategy::TechPreviewUnsafeFailForward) => CheckResult::pass(
            "Upgrade strategy",
            "OperatorGroup upgradeStrategy \"TechPreviewUnsafeFailForward\" is not mapped to OLMv1 and will be ignored post-migration",
        ),
        _ => CheckResult::pass("Upgrade strategy", "upgrade strategy is Default or unset"),
    });
    out.push(if og.spec.target_namespaces.is_empty() {
        CheckResult::pass("AllNamespaces mode", "operator is in AllNamespaces mode")
    } else {
        CheckResult::soft(
            "AllNamespaces mode",
            acks.watch_scope_change,
            "OperatorGroup has spec.targetNamespaces set; operator must be in AllNamespaces mode for migration".to_owned(),
            scope_overridden.to_owned(),
        )
    });
    if let Some(status) = &og.status
        && let [one] = status.namespaces.as_slice()
        && !one.is_empty()
    {
        out.push(CheckResult::soft(
            "Namespace scope change",
            acks.watch_scope_change,
            format!(
                "OperatorGroup targets namespace {}; post-migration the operator will run in AllNamespaces mode",
                olm_goenc::quote(one)
            ),
            "overridden: watch scope change acknowledged".to_owned(),
        ));
    }
}

/// The CSV annotation listing the bundle's properties.
pub const PROPERTIES_ANNOTATION: &str = "operatorframework.io/properties";

/// The bundle's properties from the CSV annotation: a bare array or `{"properties": [...]}`.
fn properties(csv: &ClusterServiceVersion) -> Result<Vec<Value>, String> {
    let Some(text) = csv
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(PROPERTIES_ANNOTATION))
        .filter(|t| !t.is_empty())
    else {
        return Ok(Vec::new());
    };
    match serde_json::from_str::<Value>(text).map_err(|e| e.to_string())? {
        Value::Array(items) => Ok(items),
        Value::Object(mut o) => match o.remove("properties") {
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(format!("properties is not a list: {other}")),
            None => Ok(Vec::new()),
        },
        other => Err(format!("not a list of properties: {other}")),
    }
}

/// `No dependency resolution`: one failed result per `olm.package.required` or
/// `olm.gvk.required` property (OLM v1 resolves no dependencies).
fn dependencies(csv: &ClusterServiceVersion) -> Vec<CheckResult> {
    const NAME: &str = "No dependency resolution";
    let declared = csv
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(PROPERTIES_ANNOTATION))
        .is_some_and(|t| !t.is_empty());
    if !declared {
        return vec![CheckResult::pass(NAME, "no bundle properties declared")];
    }
    let props = match properties(csv) {
        Ok(p) => p,
        Err(e) => {
            return vec![CheckResult::fail(
                NAME,
                format!("failed to parse bundle properties: {e}"),
            )];
        }
    };
    let failed: Vec<CheckResult> = props
        .iter()
        .filter_map(|p| {
            let kind = p.get("type").and_then(Value::as_str)?;
            (kind == "olm.package.required" || kind == "olm.gvk.required").then(|| {
                let value = p.get("value").map(Value::to_string).unwrap_or_default();
                CheckResult::fail(NAME, format!("bundle declares {kind} dependency: {value}"))
            })
        })
        .collect();
    if failed.is_empty() {
        vec![CheckResult::pass(
            NAME,
            "no olm.package.required or olm.gvk.required properties",
        )]
    } else {
        failed
    }
}

/// `OLMv0-API RBAC`: cluster permissions on OLM v0's objects without any on OLM v1's.
fn olm_v0_api_access(csv: &ClusterServiceVersion, acks: &Acks) -> CheckResult {
    const NAME: &str = "OLMv0-API RBAC";
    const V0_RESOURCES: [&str; 5] = [
        "subscriptions",
        "installplans",
        "clusterserviceversions",
        "catalogsources",
        "*",
    ];
    let rules = csv
        .spec
        .install
        .strategy_spec
        .iter()
        .flat_map(|s| &s.cluster_permissions)
        .flat_map(|p| &p.rules);
    let (mut v0, mut v1) = (false, false);
    for rule in rules {
        let groups = rule.api_groups.as_deref().unwrap_or_default();
        if groups.iter().any(|g| g == "olm.operatorframework.io") {
            v1 = true;
        }
        let resources = rule.resources.as_deref().unwrap_or_default();
        if groups.iter().any(|g| g == "operators.coreos.com")
            && resources.iter().any(|r| V0_RESOURCES.contains(&r.as_str()))
        {
            v0 = true;
        }
    }
    match (v0, v1) {
        (false, _) => CheckResult::pass(NAME, "CSV clusterPermissions do not grant OLMv0 API access"),
        (true, true) => CheckResult::pass(
            NAME,
            "CSV clusterPermissions grant both OLMv0 and OLMv1 API access (updated for compatibility)",
        ),
        (true, false) => CheckResult::soft(
            NAME,
            acks.olmv0_api_access,
            "CSV clusterPermissions grant operators.coreos.com access without OLMv1 equivalent; pass --acknowledge-olmv0-api-access to override".to_owned(),
            "overridden: OLMv0 API RBAC without OLMv1 equivalent (olmv0-api-access acknowledged)".to_owned(),
        ),
    }
}

/// Whether the CSV's bundle requires `package` (an `olm.package.required` property naming
/// it): such an operator depends on the one being moved (upstream's `findDependents`).
pub fn requires_package(csv: &ClusterServiceVersion, package: &str) -> bool {
    properties(csv).is_ok_and(|props| {
        props.iter().any(|p| {
            p.get("type").and_then(Value::as_str) == Some("olm.package.required")
                && p.pointer("/value/packageName").and_then(Value::as_str) == Some(package)
        })
    })
}

/// The installed version: the CSV's `olm.package` property, else `spec.version`.
pub fn installed_version(csv: &ClusterServiceVersion) -> String {
    let from_properties = properties(csv).ok().and_then(|props| {
        props.iter().find_map(|p| {
            (p.get("type").and_then(Value::as_str) == Some("olm.package"))
                .then(|| p.pointer("/value/version").and_then(Value::as_str))
                .flatten()
                .map(str::to_owned)
        })
    });
    from_properties
        .or_else(|| csv.spec.version.clone())
        .unwrap_or_default()
}

/// `CatalogSource type`: a failed result when the Subscription's CatalogSource (or the one its
/// InstallPlan looked the bundle up in) is not an image-backed grpc source; `None` when it is.
///
/// `source` is the CatalogSource read: `Err` with the API server's message when that failed.
pub fn catalog_source(
    sub: &Subscription,
    source_ref: (&str, &str),
    source: Result<&CatalogSource, &str>,
) -> Option<CheckResult> {
    const NAME: &str = "CatalogSource type";
    let (ns, name) = source_ref;
    let sub_ns = sub.metadata.namespace.as_deref().unwrap_or_default();
    let sub_name = sub.metadata.name.as_deref().unwrap_or_default();
    let source = match source {
        Ok(s) => s,
        Err(e) => {
            return Some(CheckResult::fail(
                NAME,
                format!(
                    "subscription {sub_ns}/{sub_name} references CatalogSource {ns}/{name}: {e}"
                ),
            ));
        }
    };
    let image = source.spec.image.as_deref().unwrap_or_default();
    if source.spec.source_type == SourceType::Grpc && !image.is_empty() {
        return None;
    }
    Some(CheckResult::fail(
        NAME,
        format!(
            "subscription {sub_ns}/{sub_name} references non-image CatalogSource {ns}/{name} (sourceType {}, spec.image {}); only grpc CatalogSources with spec.image can be migrated",
            olm_goenc::quote(source.spec.source_type.as_str()),
            olm_goenc::quote(image)
        ),
    ))
}

/// What one ClusterCatalog offers of the Subscription's package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogOffer {
    /// The ClusterCatalog.
    pub catalog: String,
    /// Its `spec.priority`.
    pub priority: i32,
    /// Whether it serves the package.
    pub package: bool,
    /// Whether a bundle of the package has the installed version.
    pub version: bool,
    /// Whether the Subscription's channel exists in the package (true when it names none).
    pub channel: bool,
}

/// The ClusterCatalog a migrated operator will resolve from (upstream's
/// `ResolveClusterCatalog`): among the serving catalogs that could be read (`offers`, in list
/// order), those with the package, its installed version and the Subscription's channel; the
/// highest priority wins, the first listed on ties. The channel's holding the version is not
/// checked, as upstream does not.
///
/// # Errors
///
/// Upstream's message when no catalog qualifies.
pub fn resolve_catalog(
    offers: &[CatalogOffer],
    package: &str,
    version: &str,
    channel: &str,
) -> Result<String, String> {
    let mut best: Option<&CatalogOffer> = None;
    for o in offers
        .iter()
        .filter(|o| o.package && o.version && o.channel)
    {
        if best.is_none_or(|b| o.priority > b.priority) {
            best = Some(o);
        }
    }
    best.map(|b| b.catalog.clone()).ok_or_else(|| {
        let mut m = format!(
            "package {} at version {}",
            olm_goenc::quote(package),
            olm_goenc::quote(version)
        );
        if !channel.is_empty() {
            m.push_str(&format!(" in channel {}", olm_goenc::quote(channel)));
        }
        m.push_str(" not found in any serving ClusterCatalog");
        if !offers.is_empty() {
            let names: Vec<&str> = offers.iter().map(|o| o.catalog.as_str()).collect();
            m.push_str(&format!(" (queried: [{}])", names.join(" ")));
        }
        m
    })
}

/// `Catalog availability` (C7) from [`resolve_catalog`]'s answer. Upstream's message names
/// its own catalog tool; this one names `olm migrate catalogs`.
pub fn catalog_availability(package: &str, resolved: &Result<String, String>) -> CheckResult {
    const NAME: &str = "Catalog availability";
    match resolved {
        Ok(catalog) => CheckResult::pass(
            NAME,
            format!("package available in ClusterCatalog {catalog}"),
        ),
        Err(e) => CheckResult::fail(
            NAME,
            format!(
                "No ClusterCatalog found for package {}; run olm migrate catalogs first: {e}",
                olm_goenc::quote(package)
            ),
        ),
    }
}

#[cfg(test)]
mod tests;
