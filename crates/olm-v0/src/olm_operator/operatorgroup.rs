//! What olm-operator keeps in step for each OperatorGroup (OLM repo
//! `pkg/controller/operators/olm/operatorgroup.go` `syncOperatorGroups`,
//! `ensureOpGroupClusterRole`; `operator.go` `syncNamespace`): the `MultipleOperatorGroup`
//! condition, `status.namespaces`, the `olm.operatorgroup.uid/<uid>` labels on target
//! namespaces, and the three aggregating ClusterRoles.

pub mod status;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::ObjectReference;
use olm_v0_api::v1::OperatorGroup;
use olm_v0_api::v1alpha1::ClusterServiceVersionPhase as Phase;

use crate::olm_operator::apis::ApiSet;
use crate::olm_operator::rbac::{ROLE_SUFFIXES, aggregation_label, group_cluster_role_name};

/// Prefix of the namespace label naming an explicit-target group that targets it.
pub const GROUP_LABEL_PREFIX: &str = "olm.operatorgroup.uid/";
/// Condition type set on every group of a namespace holding several.
pub const MULTIPLE_GROUPS_CONDITION: &str = "MultipleOperatorGroup";
/// Its reason.
pub const MULTIPLE_GROUPS_REASON: &str = "MultipleOperatorGroupsFound";
/// Its message.
pub const MULTIPLE_GROUPS_MESSAGE: &str = "Multiple OperatorGroup found in the same namespace";
/// Condition type set when the group's ServiceAccount is missing.
pub const SERVICE_ACCOUNT_CONDITION: &str = "OperatorGroupServiceAccount";
/// Its reason.
pub const SERVICE_ACCOUNT_REASON: &str = "ServiceAccountNotFound";
pub use olm_k8s::{
    V0_MANAGED_LABEL as MANAGED_LABEL, V0_OWNER_KIND_LABEL as OWNER_KIND_LABEL,
    V0_OWNER_LABEL as OWNER_LABEL, V0_OWNER_NAMESPACE_LABEL as OWNER_NAMESPACE_LABEL,
};

/// The `OperatorGroupServiceAccount` condition's message.
pub fn service_account_message(name: &str) -> String {
    format!("ServiceAccount {name} not found")
}

/// The ServiceAccount an InstallPlan in a namespace is executed as (upstream's
/// `queryServiceAccountFromNamespace`, `pkg/lib/scoped/querier.go`), from the namespace's
/// OperatorGroups. `Ok(None)` when the one managing group names no account; `Ok(Some(ref))` is
/// its `status.serviceAccountRef`.
///
/// # Errors
///
/// Upstream's texts: no group managing the namespace (groups with no `status.namespaces` do
/// not count), several, or an account named but not yet found.
pub fn attenuated_service_account(
    groups: &[&OperatorGroup],
) -> Result<Option<ObjectReference>, String> {
    let managing: Vec<&OperatorGroup> = groups
        .iter()
        .copied()
        .filter(|g| g.status.as_ref().is_some_and(|s| !s.namespaces.is_empty()))
        .collect();
    let group = match managing.as_slice() {
        [] => return Err("no operator group found that is managing this namespace".to_owned()),
        [one] => *one,
        many => {
            return Err(format!(
                "more than one operator group(s) are managing this namespace count={}",
                many.len()
            ));
        }
    };
    let Some(account) = group
        .spec
        .service_account_name
        .as_deref()
        .filter(|a| !a.is_empty())
    else {
        return Ok(None);
    };
    match group
        .status
        .as_ref()
        .and_then(|s| s.service_account_ref.clone())
    {
        Some(r) => Ok(Some(r)),
        None => Err(format!(
            "please make sure the service account exists. sa={account} operatorgroup={}/{}",
            group.metadata.namespace.as_deref().unwrap_or_default(),
            group.metadata.name.as_deref().unwrap_or_default()
        )),
    }
}

/// Whether `status.namespaces` must be rewritten for `targets` (upstream's `namespacesChanged`:
/// a different count, or a status namespace not among the targets).
pub fn namespaces_changed(status: &[String], targets: &[String]) -> bool {
    if status.len() != targets.len() {
        return true;
    }
    let targets: BTreeSet<&String> = targets.iter().collect();
    status.iter().any(|n| !targets.contains(n))
}

/// The namespaces in one of `before` and `after` but not both, sorted: those whose labels need
/// another look.
pub fn namespaces_added_or_removed(before: &[String], after: &[String]) -> Vec<String> {
    let b: BTreeSet<&String> = before.iter().collect();
    let a: BTreeSet<&String> = after.iter().collect();
    b.symmetric_difference(&a).map(|n| (*n).clone()).collect()
}

/// An OperatorGroup as namespace labelling needs it.
#[derive(Debug, Clone)]
pub struct GroupTargets<'a> {
    /// `metadata.uid`.
    pub uid: &'a str,
    /// `status.namespaces`.
    pub namespaces: &'a [String],
}

/// The labels `namespace` should carry, when they differ from `labels`: every
/// `olm.operatorgroup.uid/<uid>: ""` of a group that targets it explicitly (groups of all
/// namespaces label nothing), and no stale one. `None` when nothing changes.
pub fn namespace_labels(
    namespace: &str,
    labels: &BTreeMap<String, String>,
    groups: &[GroupTargets<'_>],
) -> Option<BTreeMap<String, String>> {
    let desired: BTreeMap<String, String> = groups
        .iter()
        .filter(|g| {
            let set = crate::olm_operator::groups::NamespaceSet::new(g.namespaces);
            set.contains(namespace) && !set.is_all_namespaces()
        })
        .map(|g| (format!("{GROUP_LABEL_PREFIX}{}", g.uid), String::new()))
        .collect();
    let current: BTreeMap<&String, &String> = labels
        .iter()
        .filter(|(k, _)| k.starts_with(GROUP_LABEL_PREFIX))
        .collect();
    let same =
        current.len() == desired.len() && desired.iter().all(|(k, v)| current.get(k) == Some(&v));
    if same {
        return None;
    }
    let mut out: BTreeMap<String, String> = labels
        .iter()
        .filter(|(k, _)| !k.starts_with(GROUP_LABEL_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.extend(desired);
    Some(out)
}

/// One of a group's three aggregating ClusterRoles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupClusterRole {
    /// Its name ([`group_cluster_role_name`]).
    pub name: String,
    /// Owner labels (the group) and `olm.managed: "true"`.
    pub labels: BTreeMap<String, String>,
    /// The `clusterRoleSelectors`: one `matchLabels {<label>: "true"}` per label, sorted; no
    /// aggregation rule at all when there are no APIs.
    pub aggregation_labels: Option<Vec<String>>,
}

/// The admin, edit and view ClusterRoles of the group `namespace/name` for `apis` (its members'
/// provided APIs and its `olm.providedAPIs`).
pub fn group_cluster_roles(namespace: &str, name: &str, apis: &ApiSet) -> Vec<GroupClusterRole> {
    ROLE_SUFFIXES
        .iter()
        .map(|(suffix, _)| {
            let labels = BTreeMap::from([
                (OWNER_LABEL.to_owned(), name.to_owned()),
                (OWNER_NAMESPACE_LABEL.to_owned(), namespace.to_owned()),
                (OWNER_KIND_LABEL.to_owned(), "OperatorGroup".to_owned()),
                (MANAGED_LABEL.to_owned(), "true".to_owned()),
            ]);
            let aggregation_labels = (!apis.is_empty()).then(|| {
                let set: BTreeSet<String> = apis
                    .0
                    .iter()
                    .map(|api| aggregation_label(api, suffix))
                    .collect();
                set.into_iter().collect()
            });
            GroupClusterRole {
                name: group_cluster_role_name(namespace, name, suffix),
                labels,
                aggregation_labels,
            }
        })
        .collect()
}

/// A CSV of the group, as [`provided_apis`] reads it.
#[derive(Debug, Clone)]
pub struct MemberApis {
    /// Its phase (`None` before it has one).
    pub phase: Option<Phase>,
    /// Whether it is being deleted.
    pub deleting: bool,
    /// The APIs it provides, without plurals.
    pub apis: ApiSet,
}

/// What the group's provided APIs come to (upstream's `syncOperatorGroups` and
/// `pruneProvidedAPIs`): the APIs its ClusterRoles aggregate — its members' and those its
/// `olm.providedAPIs` annotation lists — and, when the annotation lists APIs no member
/// provides any longer, the value to write to it (`Some(None)`: remove it). It is left alone
/// when the group's APIs are static, and while a member that provides APIs has not finished
/// its requirement check (no phase — or one OLM does not know, which it treats as none — or
/// Pending, and not being deleted): that member's APIs are not settled yet.
pub fn provided_apis(
    members: &[MemberApis],
    annotated: &ApiSet,
    static_apis: bool,
) -> (ApiSet, Option<Option<String>>) {
    let provided = members
        .iter()
        .fold(ApiSet::default(), |all, m| all.union(&m.apis));
    let checking = members.iter().any(|m| {
        matches!(m.phase, None | Some(Phase::Pending | Phase::Other(_)))
            && !m.deleting
            && !m.apis.is_empty()
    });
    let roles = provided.union(annotated);
    let prune = (!static_apis && !checking && !annotated.is_subset(&provided)).then(|| {
        let kept = annotated.intersection(&provided).to_string();
        (!kept.is_empty()).then_some(kept)
    });
    (roles, prune)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// `pruneProvidedAPIs`: an annotated API no member provides is dropped, unless the group's
    /// APIs are static or a member providing APIs is still being checked.
    #[test]
    fn provided_apis_are_pruned_once_members_settle() {
        let set = ApiSet::parse_annotation;
        let member = |phase: Option<Phase>, deleting: bool, apis: &str| MemberApis {
            phase,
            deleting,
            apis: set(apis),
        };
        let a = "A.v1.a.com";
        let ab = "A.v1.a.com,B.v1.b.com";
        let check = |name: &str,
                     members: Vec<MemberApis>,
                     (annotated, static_apis): (&str, bool),
                     roles: &str,
                     prune: Option<Option<String>>| {
            let (got_roles, got_prune) = provided_apis(&members, &set(annotated), static_apis);
            assert_eq!(got_roles, set(roles), "{name}");
            assert_eq!(got_prune, prune, "{name}");
        };
        let settled = || member(Some(Phase::Succeeded), false, a);
        check(
            "settled, nothing stale",
            vec![settled()],
            (a, false),
            a,
            None,
        );
        check(
            "a stale API dropped",
            vec![settled()],
            (ab, false),
            ab,
            Some(Some(a.to_owned())),
        );
        check("static: kept", vec![settled()], (ab, true), ab, None);
        check(
            "a member still pending: kept",
            vec![settled(), member(Some(Phase::Pending), false, "C.v1.c.com")],
            (ab, false),
            "A.v1.a.com,B.v1.b.com,C.v1.c.com",
            None,
        );
        check(
            "a pending member being deleted does not hold it",
            vec![member(None, true, "C.v1.c.com")],
            (a, false),
            "A.v1.a.com,C.v1.c.com",
            Some(None),
        );
        check(
            "no members, nothing annotated",
            vec![],
            ("", false),
            "",
            None,
        );
    }

    /// Upstream's `TestUserDefinedServiceAccountQuerier` (`pkg/lib/scoped/querier_test.go`),
    /// plus the account named but not yet found.
    #[test]
    fn attenuated_service_account_vectors() {
        let og = |name: &str, status_namespaces: Value, sa: Option<&str>, sa_ref: Option<Value>| {
            let mut g = json!({"metadata": {"name": name, "namespace": "ns"},
                "spec": {"targetNamespaces": ["ns"]},
                "status": {"namespaces": status_namespaces, "lastUpdated": "2026-01-01T00:00:00Z"}});
            if let Some(sa) = sa {
                g["spec"]["serviceAccountName"] = json!(sa);
            }
            if let Some(r) = sa_ref {
                g["status"]["serviceAccountRef"] = r;
            }
            serde_json::from_value::<OperatorGroup>(g).unwrap()
        };
        let attenuated_service_account =
            |groups: &[OperatorGroup]| -> Result<Option<Value>, String> {
                let groups: Vec<&OperatorGroup> = groups.iter().collect();
                attenuated_service_account(&groups)
                    .map(|r| r.map(|r| serde_json::to_value(r).unwrap()))
            };
        let none = "no operator group found that is managing this namespace";
        assert_eq!(
            attenuated_service_account(&[]),
            Err(none.to_owned()),
            "NoOperatorGroup"
        );
        assert_eq!(
            attenuated_service_account(&[og("og", json!([]), None, None)]),
            Err(none.to_owned()),
            "OperatorGroup/NamespaceNotInStatus"
        );
        assert_eq!(
            attenuated_service_account(&[
                og("a", json!(["ns"]), None, None),
                og("b", json!(["ns"]), None, None)
            ]),
            Err("more than one operator group(s) are managing this namespace count=2".to_owned()),
            "OperatorGroup/Multiple"
        );
        assert_eq!(
            attenuated_service_account(&[og("og", json!(["ns"]), None, None)]),
            Ok(None),
            "OperatorGroup/NamespaceInStatus/NoSA"
        );
        let r = json!({"kind": "ServiceAccount", "namespace": "ns", "name": "installer"});
        assert_eq!(
            attenuated_service_account(&[og(
                "og",
                json!(["ns"]),
                Some("installer"),
                Some(r.clone())
            )]),
            Ok(Some(r)),
            "OperatorGroup/NamespaceInStatus/ServiceAccountRef"
        );
        assert_eq!(
            attenuated_service_account(&[og("og", json!(["ns"]), Some("installer"), None)]),
            Err(
                "please make sure the service account exists. sa=installer operatorgroup=ns/og"
                    .to_owned()
            )
        );
    }

    fn v(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn status_namespaces_change_as_upstream_counts_it() {
        assert!(!namespaces_changed(&v(&["a", "b"]), &v(&["b", "a"])));
        assert!(namespaces_changed(&v(&["a"]), &v(&["a", "b"])));
        assert!(namespaces_changed(&v(&["a", "c"]), &v(&["a", "b"])));
        assert!(namespaces_changed(&[], &v(&[""])));
        assert_eq!(
            namespaces_added_or_removed(&v(&["a", "c"]), &v(&["a", "b"])),
            v(&["b", "c"])
        );
    }

    #[test]
    fn namespaces_carry_the_labels_of_explicit_groups_only() {
        let explicit = v(&["ns1", "ns2"]);
        let all = v(&[""]);
        let groups = [
            GroupTargets {
                uid: "u1",
                namespaces: &explicit,
            },
            GroupTargets {
                uid: "u2",
                namespaces: &all,
            },
        ];
        let labels = BTreeMap::from([
            ("team".to_owned(), "x".to_owned()),
            ("olm.operatorgroup.uid/stale".to_owned(), String::new()),
        ]);
        let want = BTreeMap::from([
            ("team".to_owned(), "x".to_owned()),
            ("olm.operatorgroup.uid/u1".to_owned(), String::new()),
        ]);
        assert_eq!(
            namespace_labels("ns1", &labels, &groups),
            Some(want.clone())
        );
        assert_eq!(namespace_labels("ns1", &want, &groups), None);
        let cleared = BTreeMap::from([("team".to_owned(), "x".to_owned())]);
        assert_eq!(
            namespace_labels("other", &labels, &groups),
            Some(cleared.clone())
        );
        assert_eq!(namespace_labels("other", &cleared, &groups), None);
    }

    #[test]
    fn three_roles_aggregating_per_api() {
        let apis = ApiSet::parse_annotation(
            "EtcdCluster.v1beta2.etcd.database.coreos.com,Widget.v1.example.com",
        );
        let roles = group_cluster_roles("ns", "og", &apis);
        assert_eq!(roles.len(), 3);
        assert_eq!(
            roles[0].name,
            "olm.og.og.admin-7hdvs1pJiMS8ikuUkvThunsWUnvSLPNYPbr0ec"
        );
        assert_eq!(
            roles[2].aggregation_labels.as_deref(),
            Some(
                &[
                    "olm.opgroup.permissions/aggregate-to-50cc6f60739af19b-view".to_owned(),
                    "olm.opgroup.permissions/aggregate-to-c571d720f17289d3-view".to_owned(),
                ][..]
            )
        );
        assert_eq!(roles[1].labels["olm.owner.kind"], "OperatorGroup");
        assert!(
            group_cluster_roles("ns", "og", &ApiSet::default())[0]
                .aggregation_labels
                .is_none()
        );
    }
}
