//! A CSV's requirement statuses (OLM repo `pkg/controller/operators/olm/requirements.go`):
//! one `status.requirementStatus` entry per thing the CSV needs — the Kubernetes version, its
//! owned and required CRDs, required and owned APIServices, native APIs — in upstream's order,
//! with upstream's statuses and messages. Whether all are met decides Pending → InstallReady.

use olm_v0_api::v1alpha1 as api;
use olm_version::masterminds::Version;

/// Status values.
pub const PRESENT: &str = "Present";
/// The thing is missing.
pub const NOT_PRESENT: &str = "NotPresent";
/// Present, but not as needed.
pub const PRESENT_NOT_SATISFIED: &str = "PresentNotSatisfied";
/// Present, but not available.
pub const PRESENT_NOT_AVAILABLE: &str = "PresentNotAvailable";

/// One `status.requirementStatus` entry.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequirementStatus {
    /// `group`.
    pub group: String,
    /// `version`.
    pub version: String,
    /// `kind`.
    pub kind: String,
    /// `name`.
    pub name: String,
    /// `status`.
    pub status: String,
    /// `message`.
    pub message: String,
    /// `uuid`.
    pub uuid: String,
    /// `dependents`: for a ServiceAccount, one entry per policy rule.
    pub dependents: Vec<DependentStatus>,
}

/// One `dependents[]` entry: a policy rule of a ServiceAccount.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DependentStatus {
    /// `group`: `rbac.authorization.k8s.io`.
    pub group: String,
    /// `version`: `v1`.
    pub version: String,
    /// `kind`: `PolicyRule`.
    pub kind: String,
    /// `Satisfied` or `NotSatisfied`.
    pub status: String,
    /// `namespaced rule:<rule JSON>` or `cluster rule:<rule JSON>`.
    pub message: String,
}

impl RequirementStatus {
    fn new(group: &str, version: &str, kind: &str, name: &str) -> RequirementStatus {
        RequirementStatus {
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            name: name.to_owned(),
            ..RequirementStatus::default()
        }
    }

    fn with(mut self, status: &str, message: &str) -> RequirementStatus {
        status.clone_into(&mut self.status);
        message.clone_into(&mut self.message);
        self
    }

    /// Whether this entry counts as met.
    pub fn met(&self) -> bool {
        matches!(self.status.as_str(), PRESENT | "DeploymentFound")
    }

    /// The entry as `status.requirementStatus` holds it: no `uuid` when empty, no
    /// `dependents` when there are none, each dependent's `message` written even when empty.
    pub fn to_api(&self) -> api::RequirementStatus {
        api::RequirementStatus {
            group: self.group.clone(),
            version: self.version.clone(),
            kind: self.kind.clone(),
            name: self.name.clone(),
            status: self.status.as_str().into(),
            message: self.message.clone(),
            uuid: (!self.uuid.is_empty()).then(|| self.uuid.clone()),
            dependents: self
                .dependents
                .iter()
                .map(|d| api::DependentStatus {
                    group: d.group.clone(),
                    version: d.version.clone(),
                    kind: d.kind.clone(),
                    status: d.status.as_str().into(),
                    uuid: None,
                    message: Some(d.message.clone()),
                })
                .collect(),
        }
    }
}

/// `spec.minKubeVersion` against the server's version (`v1.35.8`, `v1.35.8-gke.1`; `None` when
/// discovery failed); no entry without a minimum.
pub fn min_kube_version(
    csv_name: &str,
    min_kube_version: &str,
    server_version: Option<&str>,
) -> Option<RequirementStatus> {
    if min_kube_version.is_empty() {
        return None;
    }
    let entry = RequirementStatus::new(
        "operators.coreos.com",
        "v1alpha1",
        "ClusterServiceVersion",
        csv_name,
    );
    let Some(server_text) = server_version else {
        return Some(entry.with(PRESENT_NOT_SATISFIED, "Server version discovery error"));
    };
    let trimmed = server_text.strip_prefix('v').unwrap_or(server_text);
    let core = trimmed.split('-').next().unwrap_or(trimmed);
    let Ok(server) = Version::parse_strict(core) else {
        return Some(entry.with(PRESENT_NOT_SATISFIED, "Server version parsing error"));
    };
    let min_text = min_kube_version
        .strip_prefix('v')
        .unwrap_or(min_kube_version);
    let Ok(min) = Version::parse_strict(min_text) else {
        return Some(entry.with(PRESENT_NOT_SATISFIED, "CSV version parsing error"));
    };
    if min > server {
        return Some(entry.with(
            PRESENT_NOT_SATISFIED,
            &format!(
                "CSV version requirement not met: minKubeVersion ({min_kube_version}) > server version ({core})"
            ),
        ));
    }
    Some(entry.with(
        PRESENT,
        &format!(
            "CSV minKubeVersion ({min_kube_version}) less than server version ({server_text})"
        ),
    ))
}

/// A CRD on the cluster, as the check reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CrdFacts {
    /// `metadata.uid`.
    pub uid: String,
    /// `spec.versions[]`: name and whether served.
    pub versions: Vec<(String, bool)>,
    /// `Established=True`.
    pub established: bool,
    /// `NamesAccepted=True`.
    pub names_accepted: bool,
}

/// The entry of one owned or required CRD (`name`, `version` from the CSV's description).
/// `others_alongside`: other CSVs of this CSV's replacement ancestry that installed the CRD and
/// are still present (only counts for owned CRDs).
pub fn crd_status(
    name: &str,
    version: &str,
    owned: bool,
    crd: Option<&CrdFacts>,
    others_alongside: &[String],
) -> RequirementStatus {
    let entry = RequirementStatus::new(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        name,
    );
    let Some(crd) = crd else {
        return entry.with(NOT_PRESENT, "CRD is not present");
    };
    if owned && !others_alongside.is_empty() {
        return entry.with(
            PRESENT_NOT_SATISFIED,
            &format!(
                "CRD installed alongside other CSV(s): {}",
                others_alongside.join(", ")
            ),
        );
    }
    let served = crd
        .versions
        .iter()
        .find(|(n, _)| n == version)
        .is_some_and(|(_, served)| *served);
    if !served {
        return entry.with(NOT_PRESENT, "CRD version not served");
    }
    if crd.established && crd.names_accepted {
        let mut e = entry.with(PRESENT, "CRD is present and Established condition is true");
        e.uuid.clone_from(&crd.uid);
        e
    } else {
        entry.with(
            PRESENT_NOT_AVAILABLE,
            "CRD is present but the Established condition is False (not available)",
        )
    }
}

/// A required APIService `<version>.<group>`: its kind discoverable and the APIService
/// available (`Some(uid)`), else not present.
pub fn required_apiservice_status(
    group: &str,
    version: &str,
    available_uid: Option<&str>,
) -> RequirementStatus {
    let entry = RequirementStatus::new(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        &format!("{version}.{group}"),
    );
    match available_uid {
        Some(uid) => {
            let mut e = entry.with(PRESENT, "");
            uid.clone_into(&mut e.uuid);
            e
        }
        None => entry.with(NOT_PRESENT, ""),
    }
}

/// An owned APIService: the deployment it names must be one of the strategy's.
pub fn owned_apiservice_status(
    group: &str,
    version: &str,
    deployment_found: bool,
) -> RequirementStatus {
    RequirementStatus::new(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        &format!("{version}.{group}"),
    )
    .with(
        if deployment_found {
            "DeploymentFound"
        } else {
            "DeploymentNotFound"
        },
        "",
    )
}

/// One `permissions[]` or `clusterPermissions[]` entry, with each rule's check done by the
/// shell against the cluster's RBAC (in the target namespace for `permissions`, cluster-wide
/// for `clusterPermissions`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionCheck {
    /// `serviceAccountName`.
    pub service_account: String,
    /// From `clusterPermissions`.
    pub cluster: bool,
    /// Each rule as Go's `encoding/json` writes it, and whether the account holds it.
    pub rules: Vec<(String, bool)>,
}

/// What the shell found about a ServiceAccount.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountFacts {
    /// It exists in the CSV's namespace.
    pub exists: bool,
    /// Another CSV owns it.
    pub owned_by_other_csv: bool,
}

/// The ServiceAccount entries of a CSV (upstream's `permissionStatus`): one per account, with
/// one dependent per rule; `Service account does not exist`, `Service account is owned by
/// another ClusterServiceVersion` or `Policy rule not satisfied for service account` when not
/// met. Namespaced permissions are checked before cluster ones; an account in both keeps one
/// entry. Sorted by account name (upstream's order is a map's, so it varies).
pub fn permission_statuses(
    checks: &[PermissionCheck],
    account: impl Fn(&str) -> AccountFacts,
) -> (bool, Vec<RequirementStatus>) {
    let mut met = true;
    let mut by_account: std::collections::BTreeMap<String, RequirementStatus> =
        std::collections::BTreeMap::new();
    let mut ordered: Vec<&PermissionCheck> = checks.iter().filter(|c| !c.cluster).collect();
    ordered.extend(checks.iter().filter(|c| c.cluster));
    for check in ordered {
        let status = by_account
            .entry(check.service_account.clone())
            .or_insert_with(|| {
                RequirementStatus::new("", "v1", "ServiceAccount", &check.service_account)
                    .with(PRESENT, "")
            });
        let facts = account(&check.service_account);
        if !facts.exists {
            met = false;
            NOT_PRESENT.clone_into(&mut status.status);
            "Service account does not exist".clone_into(&mut status.message);
            continue;
        }
        if facts.owned_by_other_csv {
            met = false;
            PRESENT_NOT_SATISFIED.clone_into(&mut status.status);
            "Service account is owned by another ClusterServiceVersion"
                .clone_into(&mut status.message);
            continue;
        }
        let scope = if check.cluster {
            "cluster"
        } else {
            "namespaced"
        };
        for (rule, satisfied) in &check.rules {
            if !satisfied {
                met = false;
                PRESENT_NOT_SATISFIED.clone_into(&mut status.status);
                "Policy rule not satisfied for service account".clone_into(&mut status.message);
            }
            status.dependents.push(DependentStatus {
                group: "rbac.authorization.k8s.io".into(),
                version: "v1".into(),
                kind: "PolicyRule".into(),
                status: if *satisfied {
                    "Satisfied"
                } else {
                    "NotSatisfied"
                }
                .into(),
                message: format!("{scope} rule:{rule}"),
            });
        }
    }
    (met, by_account.into_values().collect())
}

/// A native API the CSV needs (`spec.nativeAPIs`), discoverable or not.
pub fn native_api_status(
    group: &str,
    version: &str,
    kind: &str,
    served: bool,
) -> RequirementStatus {
    let entry = RequirementStatus::new(group, version, kind, &format!("{version}.{group}"));
    if served {
        entry.with(PRESENT, "Native API exists")
    } else {
        entry.with(NOT_PRESENT, "Native API does not exist")
    }
}

/// What the cluster holds of the APIs a CSV names, each looked up by the shell as asked: from
/// its caches for CRDs and APIServices, from discovery (read beforehand) for native kinds.
pub struct ApiLookup<'a> {
    /// The CRD of that name, when present.
    pub crd: &'a dyn Fn(&str) -> Option<CrdFacts>,
    /// The uid of the APIService of that name (`<version>.<group>`), when it is available.
    pub available_apiservice: &'a dyn Fn(&str) -> Option<String>,
    /// Whether the kind is served.
    pub native_served: &'a dyn Fn(&api::GroupVersionKind) -> bool,
}

impl CrdFacts {
    /// What the check reads of a CRD.
    pub fn of(
        crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    ) -> CrdFacts {
        let conditions = crd
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        let is_true = |t: &str| {
            conditions
                .iter()
                .any(|c| c.type_ == t && c.status == "True")
        };
        CrdFacts {
            uid: crd.metadata.uid.clone().unwrap_or_default(),
            versions: crd
                .spec
                .versions
                .iter()
                .map(|v| (v.name.clone(), v.served))
                .collect(),
            established: is_true("Established"),
            names_accepted: is_true("NamesAccepted"),
        }
    }
}

/// Every entry of `csv` but its ServiceAccounts', in upstream's order: the Kubernetes version
/// (`server_version`, `None` when discovery failed), its owned and required CRDs (each once,
/// sorted by name, owned winning over required), the required APIServices it does not own
/// itself, its owned APIServices, its native APIs.
pub fn api_statuses(
    csv: &api::ClusterServiceVersion,
    server_version: Option<&str>,
    lookup: &ApiLookup<'_>,
) -> Vec<RequirementStatus> {
    let name = csv.metadata.name.as_deref().unwrap_or_default();
    let mut statuses = Vec::new();
    if let Some(entry) = min_kube_version(
        name,
        csv.spec.min_kube_version.as_deref().unwrap_or_default(),
        server_version,
    ) {
        statuses.push(entry);
    }
    let mut crds: std::collections::BTreeMap<&str, (&str, bool)> =
        std::collections::BTreeMap::new();
    if let Some(defs) = &csv.spec.custom_resource_definitions {
        for r in &defs.required {
            crds.insert(&r.name, (&r.version, false));
        }
        for o in &defs.owned {
            crds.insert(&o.name, (&o.version, true));
        }
    }
    for (crd, (version, owned)) in crds {
        statuses.push(crd_status(
            crd,
            version,
            owned,
            (lookup.crd)(crd).as_ref(),
            &[],
        ));
    }
    let apis = csv.spec.api_service_definitions.as_ref();
    let owned = apis.map(|a| a.owned.as_slice()).unwrap_or_default();
    let required = apis.map(|a| a.required.as_slice()).unwrap_or_default();
    for r in required {
        if owned
            .iter()
            .any(|o| o.group == r.group && o.version == r.version)
        {
            continue;
        }
        let available = (lookup.available_apiservice)(&format!("{}.{}", r.version, r.group));
        statuses.push(required_apiservice_status(
            &r.group,
            &r.version,
            available.as_deref(),
        ));
    }
    let deployments = csv.spec.install.strategy_spec.as_ref();
    for a in owned {
        let found = a.deployment_name.as_ref().is_some_and(|d| {
            deployments.is_some_and(|s| s.deployment_specs.iter().any(|x| &x.name == d))
        });
        statuses.push(owned_apiservice_status(&a.group, &a.version, found));
    }
    for gvk in &csv.spec.native_apis {
        statuses.push(native_api_status(
            &gvk.group,
            &gvk.version,
            &gvk.kind,
            (lookup.native_served)(gvk),
        ));
    }
    statuses
}

#[cfg(test)]
mod tests {
    use super::*;

    /// As written to `status.requirementStatus`: `uuid` only when known, `dependents` only
    /// when there are some, a dependent's message even when empty.
    #[test]
    fn written_as_the_api_holds_it() {
        let crd = RequirementStatus::new(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "a.b",
        )
        .with(PRESENT, "CRD is present and Established condition is true");
        let mut account =
            RequirementStatus::new("", "v1", "ServiceAccount", "sa").with(PRESENT, "");
        account.uuid = "u-1".into();
        account.dependents.push(DependentStatus {
            group: "rbac.authorization.k8s.io".into(),
            version: "v1".into(),
            kind: "PolicyRule".into(),
            status: "Satisfied".into(),
            message: String::new(),
        });
        let written = serde_json::to_value([crd.to_api(), account.to_api()]).unwrap();
        assert_eq!(
            written,
            serde_json::json!([
                {"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition",
                 "name": "a.b", "status": "Present",
                 "message": "CRD is present and Established condition is true"},
                {"group": "", "version": "v1", "kind": "ServiceAccount", "name": "sa",
                 "status": "Present", "message": "", "uuid": "u-1",
                 "dependents": [{"group": "rbac.authorization.k8s.io", "version": "v1",
                                 "kind": "PolicyRule", "status": "Satisfied", "message": ""}]},
            ])
        );
    }

    #[test]
    fn kube_version() {
        assert_eq!(min_kube_version("c", "", Some("v1.35.8")), None);
        let ok = min_kube_version("c", "1.20.0", Some("v1.35.8-gke.1")).unwrap();
        assert_eq!(ok.status, "Present");
        assert_eq!(
            ok.message,
            "CSV minKubeVersion (1.20.0) less than server version (v1.35.8-gke.1)"
        );
        let high = min_kube_version("c", "1.40.0", Some("v1.35.8")).unwrap();
        assert_eq!(
            high.message,
            "CSV version requirement not met: minKubeVersion (1.40.0) > server version (1.35.8)"
        );
        assert!(!high.met());
        assert_eq!(
            min_kube_version("c", "1.x", Some("v1.35.8"))
                .unwrap()
                .message,
            "CSV version parsing error"
        );
        assert_eq!(
            min_kube_version("c", "1.2.0", None).unwrap().message,
            "Server version discovery error"
        );
    }

    #[test]
    fn crds() {
        let crd = CrdFacts {
            uid: "u".into(),
            versions: vec![("v1".into(), true), ("v1beta1".into(), false)],
            established: true,
            names_accepted: true,
        };
        let s = crd_status("widgets.example.com", "v1", true, Some(&crd), &[]);
        assert_eq!((s.status.as_str(), s.uuid.as_str()), ("Present", "u"));
        assert_eq!(
            crd_status("w", "v1beta1", true, Some(&crd), &[]).message,
            "CRD version not served"
        );
        assert_eq!(
            crd_status("w", "v1", true, None, &[]).message,
            "CRD is not present"
        );
        assert_eq!(
            crd_status("w", "v1", true, Some(&crd), &["a.v1".into(), "a.v2".into()]).message,
            "CRD installed alongside other CSV(s): a.v1, a.v2"
        );
        // Only owned CRDs care who else installed them.
        assert!(crd_status("w", "v1", false, Some(&crd), &["a.v1".into()]).met());
        let pending = CrdFacts {
            established: false,
            ..crd
        };
        assert_eq!(
            crd_status("w", "v1", false, Some(&pending), &[]).status,
            "PresentNotAvailable"
        );
    }

    #[test]
    fn permissions() {
        let rule = r#"{"verbs":["get"],"apiGroups":[""],"resources":["pods"]}"#;
        let checks = [
            PermissionCheck {
                service_account: "op".into(),
                cluster: true,
                rules: vec![(rule.into(), false)],
            },
            PermissionCheck {
                service_account: "op".into(),
                cluster: false,
                rules: vec![(rule.into(), true)],
            },
            PermissionCheck {
                service_account: "missing".into(),
                cluster: false,
                rules: vec![(rule.into(), true)],
            },
        ];
        let (met, statuses) = permission_statuses(&checks, |sa| AccountFacts {
            exists: sa != "missing",
            owned_by_other_csv: false,
        });
        assert!(!met);
        assert_eq!(statuses.len(), 2);
        assert_eq!(statuses[0].name, "missing");
        assert_eq!(statuses[0].message, "Service account does not exist");
        let op = &statuses[1];
        assert_eq!(op.status, "PresentNotSatisfied");
        assert_eq!(op.message, "Policy rule not satisfied for service account");
        let messages: Vec<&str> = op.dependents.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                format!("namespaced rule:{rule}"),
                format!("cluster rule:{rule}")
            ]
        );
        assert_eq!(op.dependents[1].status, "NotSatisfied");
    }

    #[test]
    fn apis() {
        assert_eq!(
            owned_apiservice_status("g", "v1", false).status,
            "DeploymentNotFound"
        );
        assert!(owned_apiservice_status("g", "v1", true).met());
        assert_eq!(
            required_apiservice_status("metrics.k8s.io", "v1beta1", None).name,
            "v1beta1.metrics.k8s.io"
        );
        assert_eq!(
            native_api_status("", "v1", "Pod", true).message,
            "Native API exists"
        );
        assert_eq!(
            native_api_status("apps", "v1", "Foo", false).message,
            "Native API does not exist"
        );
    }

    /// A CSV whose spec is `spec` over the fields the API requires.
    fn csv(spec: serde_json::Value) -> api::ClusterServiceVersion {
        let mut full = serde_json::json!({
            "displayName": "CSV 1",
            "install": {"strategy": "deployment", "spec": {"deployments": []}},
        });
        for (k, v) in spec.as_object().into_iter().flatten() {
            full[k] = v.clone();
        }
        let spec = full;
        serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": "csv1", "namespace": "ns"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn established(versions: &[(&str, bool)], established: bool, names: bool) -> CrdFacts {
        CrdFacts {
            uid: "crd-uid".into(),
            versions: versions.iter().map(|(v, s)| ((*v).into(), *s)).collect(),
            established,
            names_accepted: names,
        }
    }

    /// `(name, status)` of each entry, in order.
    fn outline(statuses: &[RequirementStatus]) -> Vec<(String, String)> {
        statuses
            .iter()
            .map(|s| (format!("{}/{}", s.kind, s.name), s.status.clone()))
            .collect()
    }

    /// The CRD cases of upstream's `TestRequirementAndPermissionStatus`
    /// (`pkg/controller/operators/olm/requirements_test.go`, v0.46.0): each CSV owns `c1.g1`
    /// at the version named and the cluster holds the CRD as described.
    #[test]
    fn api_statuses_upstream_crd_cases() {
        let cases: [(&str, &str, CrdFacts, &str); 5] = [
            (
                "AllRequirementsMet",
                "v1",
                established(&[("v1", true)], true, true),
                PRESENT,
            ),
            (
                "NonServedCRDVersion",
                "v2",
                established(&[("v1", true)], true, true),
                NOT_PRESENT,
            ),
            (
                "NotEstablishedCRDVersion",
                "version-not-found",
                established(&[("v2", true)], true, true),
                NOT_PRESENT,
            ),
            (
                "NamesConflictedCRD",
                "v2",
                established(&[("v2", true)], true, false),
                PRESENT_NOT_AVAILABLE,
            ),
            (
                "CRDResourceInactive",
                "v2",
                established(&[("v2", true)], false, true),
                PRESENT_NOT_AVAILABLE,
            ),
        ];
        for (name, version, facts, want) in cases {
            let csv = csv(serde_json::json!({
                "customresourcedefinitions": {"owned": [{"name": "c1.g1", "version": version, "kind": "C1"}]},
            }));
            let crd = |n: &str| (n == "c1.g1").then(|| facts.clone());
            let lookup = ApiLookup {
                crd: &crd,
                available_apiservice: &|_| None,
                native_served: &|_| false,
            };
            let got = api_statuses(&csv, Some("v1.35.0"), &lookup);
            assert_eq!(
                outline(&got),
                [("CustomResourceDefinition/c1.g1".to_owned(), want.to_owned())],
                "{name}"
            );
        }
    }

    /// Upstream's order, each thing once: the Kubernetes version, CRDs by name (an owned CRD
    /// also listed as required is owned), required APIServices but those it owns itself, owned
    /// APIServices (whether their Deployment is the strategy's), native kinds.
    #[test]
    fn api_statuses_order_and_lookups() {
        let csv = csv(serde_json::json!({
            "minKubeVersion": "1.20.0",
            "customresourcedefinitions": {
                "owned": [{"name": "b.g", "version": "v1", "kind": "B"}],
                "required": [
                    {"name": "b.g", "version": "v1", "kind": "B"},
                    {"name": "a.g", "version": "v1", "kind": "A"},
                ],
            },
            "apiservicedefinitions": {
                "owned": [
                    {"group": "own.io", "version": "v1", "kind": "O", "name": "os", "deploymentName": "dep"},
                    {"group": "own.io", "version": "v2", "kind": "O", "name": "os", "deploymentName": "gone"},
                ],
                "required": [
                    {"group": "own.io", "version": "v1", "kind": "O", "name": "os"},
                    {"group": "up.io", "version": "v1", "kind": "U", "name": "us"},
                    {"group": "down.io", "version": "v1", "kind": "D", "name": "ds"},
                ],
            },
            "nativeAPIs": [
                {"group": "apps", "version": "v1", "kind": "Deployment"},
                {"group": "nope.io", "version": "v1", "kind": "Nope"},
            ],
            "install": {"strategy": "deployment", "spec": {"deployments": [{"name": "dep", "spec": {"selector": {}, "template": {}}}]}},
        }));
        let crd = |n: &str| (n == "b.g").then(|| established(&[("v1", true)], true, true));
        let apiservice = |n: &str| (n == "v1.up.io").then(|| "up-uid".to_owned());
        let native = |g: &api::GroupVersionKind| g.group == "apps";
        let lookup = ApiLookup {
            crd: &crd,
            available_apiservice: &apiservice,
            native_served: &native,
        };
        let got = api_statuses(&csv, Some("v1.35.0"), &lookup);
        let want = [
            ("ClusterServiceVersion/csv1", PRESENT),
            ("CustomResourceDefinition/a.g", NOT_PRESENT),
            ("CustomResourceDefinition/b.g", PRESENT),
            ("APIService/v1.up.io", PRESENT),
            ("APIService/v1.down.io", NOT_PRESENT),
            ("APIService/v1.own.io", "DeploymentFound"),
            ("APIService/v2.own.io", "DeploymentNotFound"),
            ("Deployment/v1.apps", PRESENT),
            ("Nope/v1.nope.io", NOT_PRESENT),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(n, s)| ((*n).to_owned(), (*s).to_owned()))
            .collect();
        assert_eq!(outline(&got), want);
        assert_eq!(got[2].uuid, "crd-uid");
        assert_eq!(got[3].uuid, "up-uid");
    }

    /// No `minKubeVersion`: no entry for the Kubernetes version; nothing else named, nothing
    /// listed.
    #[test]
    fn api_statuses_of_a_csv_that_needs_nothing() {
        let lookup = ApiLookup {
            crd: &|_| None,
            available_apiservice: &|_| None,
            native_served: &|_| false,
        };
        assert!(api_statuses(&csv(serde_json::json!({})), None, &lookup).is_empty());
    }
}
