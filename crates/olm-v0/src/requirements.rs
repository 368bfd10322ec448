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
}
