//! Gathering what a CSV's requirement check reads (OLM's `requirementAndPermissionStatus`):
//! its CRDs and APIServices from the caches, native APIs and ServiceAccounts from the API server,
//! and whether the cluster's RBAC gives each ServiceAccount each rule the CSV asks for; the
//! statuses and messages are `olm_v0::olm_operator::requirements`'.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::reflector::ObjectRef;
use olm_security::permissions::{Rbac, UserInfo, uncovered};
use olm_v0::olm_operator::requirements::{
    AccountFacts, ApiLookup, CrdFacts, PermissionCheck, RequirementStatus, api_statuses,
    permission_statuses,
};
use olm_v0_api::v1alpha1::{ClusterServiceVersion, StrategyDeploymentPermissions};
use serde_json::{Value, json};

use crate::Index;

/// The outcome of a requirement check: whether all are met, and the entries.
pub struct Checked {
    /// All met.
    pub met: bool,
    /// `status.requirementStatus`.
    pub statuses: Vec<RequirementStatus>,
}

/// Checks every requirement of `csv`. `server_version` is the API server's `gitVersion`.
pub async fn check(
    client: &kube::Client,
    index: &Index,
    csv: &ClusterServiceVersion,
    server_version: Option<&str>,
) -> Result<Checked, kube::Error> {
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    // Discovery first: the decision below reads only what is already at hand.
    let mut served = BTreeSet::new();
    for gvk in &csv.spec.native_apis {
        let found = kube::discovery::oneshot::pinned_kind(
            client,
            &kube::api::GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind),
        )
        .await
        .is_ok();
        if found {
            served.insert((&gvk.group, &gvk.version, &gvk.kind));
        }
    }
    // Dropped before the permission check's awaits: the lookups borrow the caches.
    let mut statuses = {
        let lookup = ApiLookup {
            crd: &|name| {
                index
                    .crds
                    .get(&ObjectRef::new(name))
                    .map(|c| CrdFacts::of(&c))
            },
            available_apiservice: &|name| {
                index
                    .apiservices
                    .get(&ObjectRef::new(name))
                    .filter(|a| available(a))
                    .and_then(|a| a.uid())
            },
            native_served: &|gvk| served.contains(&(&gvk.group, &gvk.version, &gvk.kind)),
        };
        api_statuses(csv, server_version, &lookup)
    };
    let mut met = statuses.iter().all(RequirementStatus::met);

    let (permissions_met, accounts) = permissions(client, index, csv, &namespace, &name).await?;
    met &= permissions_met;
    statuses.extend(accounts);
    Ok(Checked { met, statuses })
}

/// Whether the APIService's `Available` condition is `True`.
pub fn available(a: &APIService) -> bool {
    a.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Available" && c.status == "True")
        })
}

/// The ServiceAccount entries: each account must exist, not belong to another CSV, and hold
/// every rule asked for — namespaced rules in the CSV's namespace, cluster ones cluster-wide.
async fn permissions(
    client: &kube::Client,
    index: &Index,
    csv: &ClusterServiceVersion,
    namespace: &str,
    name: &str,
) -> Result<(bool, Vec<RequirementStatus>), kube::Error> {
    let Some(strategy) = &csv.spec.install.strategy_spec else {
        return Ok((true, Vec::new()));
    };
    if strategy.permissions.is_empty() && strategy.cluster_permissions.is_empty() {
        return Ok((true, Vec::new()));
    }
    let rbac = index.rbac();
    let accounts_api: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let mut accounts: BTreeMap<String, AccountFacts> = BTreeMap::new();
    let all = strategy
        .permissions
        .iter()
        .chain(strategy.cluster_permissions.iter());
    for p in all {
        if accounts.contains_key(&p.service_account_name) {
            continue;
        }
        let sa = accounts_api.get_opt(&p.service_account_name).await?;
        let facts = AccountFacts {
            exists: sa.is_some(),
            // Upstream's `IsOwnedByKind(sa, CSV) && !IsOwnedBy(sa, csv)`: an account that
            // this CSV owns too (an upgrade adds the new CSV beside the old) is satisfied.
            owned_by_other_csv: sa.as_ref().is_some_and(|sa| {
                let csv_owners = || {
                    sa.owner_references()
                        .iter()
                        .filter(|o| o.kind == "ClusterServiceVersion")
                };
                csv_owners().next().is_some() && !csv_owners().any(|o| o.name == name)
            }),
        };
        accounts.insert(p.service_account_name.clone(), facts);
    }
    let checks: Vec<PermissionCheck> = strategy
        .permissions
        .iter()
        .map(|p| check_rules(&rbac, p, namespace, Some(namespace)))
        .chain(
            strategy
                .cluster_permissions
                .iter()
                .map(|p| check_rules(&rbac, p, namespace, None)),
        )
        .collect();
    Ok(permission_statuses(&checks, |sa| {
        accounts.get(sa).copied().unwrap_or(AccountFacts {
            exists: false,
            owned_by_other_csv: false,
        })
    }))
}

/// Which of `p`'s rules the ServiceAccount `p` names in `namespace` holds in `scope` (a
/// namespace, or cluster-wide for `None`).
fn check_rules(
    rbac: &Rbac,
    p: &StrategyDeploymentPermissions,
    namespace: &str,
    scope: Option<&str>,
) -> PermissionCheck {
    let user = UserInfo::service_account(namespace, &p.service_account_name);
    let held = rbac.rules_for(&user, scope.unwrap_or_default());
    PermissionCheck {
        service_account: p.service_account_name.clone(),
        cluster: scope.is_none(),
        rules: p
            .rules
            .iter()
            .map(|rule| {
                let satisfied = uncovered(&held, std::slice::from_ref(rule)).is_empty();
                (rule_json(rule), satisfied)
            })
            .collect(),
    }
}

/// Whether every rule of the CSV's `permissions` and `clusterPermissions` is granted to its
/// ServiceAccount cluster-wide (what an AllNamespaces operator needs).
pub fn granted_cluster_wide(index: &Index, csv: &ClusterServiceVersion) -> bool {
    let Some(strategy) = &csv.spec.install.strategy_spec else {
        return true;
    };
    let namespace = csv.namespace().unwrap_or_default();
    let rbac = index.rbac();
    strategy
        .permissions
        .iter()
        .chain(strategy.cluster_permissions.iter())
        .all(|p| {
            check_rules(&rbac, p, &namespace, None)
                .rules
                .iter()
                .all(|(_, ok)| *ok)
        })
}

/// Whether every rule of the CSV's (namespaced) `permissions` is granted to its ServiceAccount
/// in `target` (upstream's `permissionStatus` for a target namespace).
pub fn granted_in(rbac: &Rbac, csv: &ClusterServiceVersion, target: &str) -> bool {
    let Some(strategy) = &csv.spec.install.strategy_spec else {
        return true;
    };
    let namespace = csv.namespace().unwrap_or_default();
    strategy.permissions.iter().all(|p| {
        check_rules(rbac, p, &namespace, Some(target))
            .rules
            .iter()
            .all(|(_, ok)| *ok)
    })
}

/// A rule as Go's `encoding/json` writes a `rbacv1.PolicyRule`: fields in declaration order,
/// empty ones left out.
fn rule_json(rule: &PolicyRule) -> String {
    let mut m = serde_json::Map::new();
    m.insert("verbs".into(), json!(rule.verbs));
    let mut put = |k: &str, v: &Option<Vec<String>>| {
        if let Some(v) = v.as_ref().filter(|v| !v.is_empty()) {
            m.insert(k.into(), json!(v));
        }
    };
    put("apiGroups", &rule.api_groups);
    put("resources", &rule.resources);
    put("resourceNames", &rule.resource_names);
    put("nonResourceURLs", &rule.non_resource_urls);
    let mut out = String::new();
    olm_goenc::json::write_value_html(&mut out, &Value::Object(m));
    out
}
