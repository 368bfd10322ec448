//! Tenant RBAC of a MultiNamespace or SingleNamespace operator (OLM repo
//! `pkg/controller/operators/olm/operatorgroup.go`, `ensureTenantRBAC`): the Roles and
//! RoleBindings a CSV's install created in its own namespace are copied into each target
//! namespace where its ServiceAccounts lack the permissions, owned there by the CSV's copy.
//!
//! Upstream rewrites every such Role on each pass; here a Role is written only when its rules
//! differ, and RoleBindings, as upstream, only when missing.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::olm_operator::operatorgroup::MANAGED_LABEL;
use crate::olm_operator::status::COPIED_FROM_LABEL;
use crate::olm_operator::strategy::{CsvOwner, non_blocking_owner, owner_labels};

/// One write that brings a target namespace's tenant RBAC in step.
#[derive(Debug, Clone, PartialEq)]
pub enum TenantWrite {
    /// A Role to create.
    CreateRole(Role),
    /// An existing Role (as read, with its resourceVersion) with the owned Role's rules.
    UpdateRole(Role),
    /// A RoleBinding to create.
    CreateRoleBinding(RoleBinding),
}

/// What is known of a namespace when its tenant RBAC is decided.
#[derive(Debug, Clone, Copy)]
pub struct Tenancy<'a> {
    /// The CSV whose install made the Roles (in the operator's namespace).
    pub csv_uid: &'a str,
    /// The CSV's copy in the target namespace, which owns the copies there.
    pub copy: &'a CsvOwner,
    /// The CSV's (and its group's) namespace.
    pub operator_namespace: &'a str,
}

/// Whether `meta` has an owner reference to the object with `uid` (upstream's `IsOwnedBy`: the
/// owner labels alone are not trusted).
fn owned_by(meta: &ObjectMeta, uid: &str) -> bool {
    meta.owner_references.iter().flatten().any(|r| r.uid == uid)
}

fn name(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

/// The writes that make `target`'s tenant RBAC match the CSV's Roles and RoleBindings in its
/// own namespace. `owned_roles`/`owned_bindings` are those labelled as the CSV's there;
/// `target_roles`/`target_bindings` those labelled as the copy's in the target. Nothing when the
/// target is the operator's own namespace.
pub fn tenant_writes(
    t: Tenancy<'_>,
    owned_roles: &[&Role],
    owned_bindings: &[&RoleBinding],
    target_roles: &[&Role],
    target_bindings: &[&RoleBinding],
) -> Vec<TenantWrite> {
    if t.copy.namespace == t.operator_namespace {
        return Vec::new();
    }
    let existing: BTreeMap<&str, &Role> = target_roles
        .iter()
        .map(|r| (name(&r.metadata), *r))
        .collect();
    let mut out = Vec::new();
    for role in owned_roles
        .iter()
        .filter(|r| owned_by(&r.metadata, t.csv_uid))
    {
        match existing.get(name(&role.metadata)) {
            Some(current) if current.rules == role.rules => {}
            Some(current) => out.push(TenantWrite::UpdateRole(Role {
                rules: role.rules.clone(),
                ..(*current).clone()
            })),
            None => out.push(TenantWrite::CreateRole(Role {
                metadata: copied_meta(&role.metadata, t),
                rules: role.rules.clone(),
            })),
        }
    }
    for binding in owned_bindings
        .iter()
        .filter(|b| owned_by(&b.metadata, t.csv_uid))
    {
        if !target_bindings
            .iter()
            .any(|b| name(&b.metadata) == name(&binding.metadata))
        {
            out.push(TenantWrite::CreateRoleBinding(RoleBinding {
                metadata: copied_meta(&binding.metadata, t),
                ..(*binding).clone()
            }));
        }
    }
    out
}

/// The metadata of an object as it is created in the copy's namespace: its name, labels and
/// annotations, owned by the copy (a non-blocking owner reference and its owner labels),
/// labelled `olm.copiedFrom` and `olm.managed`; what the API server set on the original (uid,
/// resourceVersion, …) left out.
fn copied_meta(meta: &ObjectMeta, t: Tenancy<'_>) -> ObjectMeta {
    let mut labels = meta.labels.clone().unwrap_or_default();
    labels.extend(owner_labels(t.copy));
    labels.insert(COPIED_FROM_LABEL.into(), t.operator_namespace.to_owned());
    labels.insert(MANAGED_LABEL.into(), "true".into());
    ObjectMeta {
        name: meta.name.clone(),
        namespace: Some(t.copy.namespace.clone()),
        labels: Some(labels),
        annotations: meta.annotations.clone(),
        owner_references: Some(vec![non_blocking_owner(t.copy)]),
        ..ObjectMeta::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const CSV_UID: &str = "0000-csv";

    fn copy() -> CsvOwner {
        CsvOwner {
            name: "etcd.v1".into(),
            namespace: "tenant".into(),
            uid: "1111-copy".into(),
            ..CsvOwner::default()
        }
    }

    fn owned(kind: &str, name: &str, uid: &str) -> Value {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": kind,
            "metadata": {
                "name": name,
                "namespace": "operators",
                "uid": "role-uid",
                "resourceVersion": "12",
                "labels": {
                    "olm.owner": "etcd.v1",
                    "olm.owner.namespace": "operators",
                    "olm.owner.kind": "ClusterServiceVersion",
                    "app": "etcd",
                },
                "annotations": {"note": "kept"},
                "ownerReferences": [{"apiVersion": "operators.coreos.com/v1alpha1",
                    "kind": "ClusterServiceVersion", "name": "etcd.v1", "uid": uid}],
            },
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}],
        })
    }

    fn role(name: &str, uid: &str) -> Role {
        serde_json::from_value(owned("Role", name, uid)).unwrap()
    }

    fn tenancy(copy: &CsvOwner) -> Tenancy<'_> {
        Tenancy {
            csv_uid: CSV_UID,
            copy,
            operator_namespace: "operators",
        }
    }

    /// A missing Role and RoleBinding are created as upstream's `ensureTenantRBAC` creates them:
    /// the copy's owner labels replace the CSV's, `olm.copiedFrom` names the operator's
    /// namespace, `olm.managed` is set, and the copy is a non-blocking owner.
    #[test]
    fn creates_what_is_missing() {
        let copy = copy();
        let role = role("etcd.v1-role", CSV_UID);
        let mut binding = owned("RoleBinding", "etcd.v1-binding", CSV_UID);
        binding.as_object_mut().unwrap().remove("rules");
        binding["roleRef"] = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "etcd.v1-role"});
        binding["subjects"] =
            json!([{"kind": "ServiceAccount", "name": "etcd", "namespace": "operators"}]);
        let binding: RoleBinding = serde_json::from_value(binding).unwrap();
        let writes = tenant_writes(tenancy(&copy), &[&role], &[&binding], &[], &[]);
        let [
            TenantWrite::CreateRole(r),
            TenantWrite::CreateRoleBinding(b),
        ] = writes.as_slice()
        else {
            panic!("{writes:?}")
        };
        let (r, b) = (json!(r), json!(b));
        assert_eq!(
            r["metadata"],
            json!({
                "name": "etcd.v1-role",
                "namespace": "tenant",
                "labels": {
                    "olm.owner": "etcd.v1",
                    "olm.owner.namespace": "tenant",
                    "olm.owner.kind": "ClusterServiceVersion",
                    "app": "etcd",
                    "olm.copiedFrom": "operators",
                    "olm.managed": "true",
                },
                "annotations": {"note": "kept"},
                "ownerReferences": [{"apiVersion": "operators.coreos.com/v1alpha1",
                    "kind": "ClusterServiceVersion", "name": "etcd.v1", "uid": "1111-copy",
                    "controller": false, "blockOwnerDeletion": false}],
            })
        );
        assert_eq!(r["rules"][0]["resources"][0], "pods");
        assert_eq!(
            b["subjects"][0]["namespace"], "operators",
            "the subject stays the operator's ServiceAccount"
        );
        assert_eq!(b["roleRef"]["name"], "etcd.v1-role");
    }

    /// Objects carrying the owner labels without an owner reference to the CSV are not copied,
    /// and nothing is copied into the operator's own namespace.
    #[test]
    fn trusts_owner_references_not_labels() {
        let copy = copy();
        let foreign = role("impostor", "someone-else");
        assert!(tenant_writes(tenancy(&copy), &[&foreign], &[], &[], &[]).is_empty());
        let own = CsvOwner {
            namespace: "operators".into(),
            ..copy
        };
        let role = role("etcd.v1-role", CSV_UID);
        assert!(tenant_writes(tenancy(&own), &[&role], &[], &[], &[]).is_empty());
    }

    /// An existing Role is updated only when its rules differ; an existing RoleBinding is left.
    #[test]
    fn updates_only_changed_rules() {
        let copy = copy();
        let role = role("etcd.v1-role", CSV_UID);
        let mut current = role.clone();
        current.metadata.resource_version = Some("99".into());
        assert!(tenant_writes(tenancy(&copy), &[&role], &[], &[&current], &[]).is_empty());
        current.rules = Some(Vec::new());
        let writes = tenant_writes(tenancy(&copy), &[&role], &[], &[&current], &[]);
        let [TenantWrite::UpdateRole(u)] = writes.as_slice() else {
            panic!("{writes:?}")
        };
        let u = json!(u);
        assert_eq!(u["metadata"]["resourceVersion"], "99");
        assert_eq!(u["rules"][0]["verbs"][0], "get");
        let binding: RoleBinding =
            serde_json::from_value(owned("RoleBinding", "b", CSV_UID)).unwrap();
        assert!(tenant_writes(tenancy(&copy), &[], &[&binding], &[], &[&binding]).is_empty());
    }
}
