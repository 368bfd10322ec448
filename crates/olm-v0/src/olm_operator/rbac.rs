//! Names and labels of the RBAC olm-operator generates for OperatorGroups (OLM repo
//! `pkg/controller/operators/olm/operatorgroup.go`): the three aggregating ClusterRoles per
//! group, the per-API aggregation labels that feed them, and the per-API ClusterRoles of a
//! succeeded CSV that carry those labels.

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use crate::hash::base62_sha224;
use crate::olm_operator::apis::ApiKey;
use crate::olm_operator::surface::gvk_hash;

/// The three roles of each group, with the verbs of the per-API roles that aggregate into them.
pub const ROLE_SUFFIXES: [(&str, &[&str]); 3] = [
    ("admin", &["*"]),
    ("edit", &["create", "update", "patch", "delete"]),
    ("view", &["get", "list", "watch"]),
];

/// The longest Kubernetes object name.
const NAME_LIMIT: usize = 253;

/// Base-62 SHA-224 of `s` (upstream's `hash`).
pub fn hash(s: &str) -> String {
    base62_sha224(s.as_bytes())
}

/// `olm.og.<group>.<suffix>-<hash of "<ns>/<group>/<suffix>">`, the group name cut so that the
/// whole stays within 253 characters.
pub fn group_cluster_role_name(namespace: &str, group: &str, suffix: &str) -> String {
    let tail = hash(&format!("{namespace}/{group}/{suffix}"));
    // "olm.og..-" is the format's fixed text.
    let limit = NAME_LIMIT
        .saturating_sub("olm.og..-".len())
        .saturating_sub(suffix.len())
        .saturating_sub(tail.len());
    let name = if group.len() < limit {
        group
    } else {
        group.get(..limit).unwrap_or(group)
    };
    format!("olm.og.{name}.{suffix}-{tail}")
}

/// The label by which the per-API role of `suffix` for `api` aggregates into its group's
/// role: `olm.opgroup.permissions/aggregate-to-<hash>-<suffix>`.
pub fn aggregation_label(api: &ApiKey, suffix: &str) -> String {
    format!(
        "olm.opgroup.permissions/aggregate-to-{}-{suffix}",
        gvk_hash(api)
    )
}

/// What a per-API ClusterRole is owned by: the CRD or APIService that serves the API (a
/// non-blocking owner reference, so the roles go with it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiOwner<'a> {
    /// `apiextensions.k8s.io/v1` or `apiregistration.k8s.io/v1`.
    pub api_version: &'a str,
    /// `CustomResourceDefinition` or `APIService`.
    pub kind: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Its uid.
    pub uid: &'a str,
}

fn api_cluster_role(
    name: String,
    suffix: &str,
    verbs: &[&str],
    rule: (&str, &str, Option<&str>),
    key: &ApiKey,
    owner: &ApiOwner<'_>,
) -> Value {
    let (group, resource, resource_name) = rule;
    let mut r = json!({"verbs": verbs, "apiGroups": [group], "resources": [resource]});
    if let Some(n) = resource_name {
        r["resourceNames"] = json!([n]);
    }
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": name,
            "labels": {
                format!("rbac.authorization.k8s.io/aggregate-to-{suffix}"): "true",
                aggregation_label(key, suffix): "true",
                crate::olm_operator::operatorgroup::MANAGED_LABEL: "true",
            },
            "ownerReferences": [{
                "apiVersion": owner.api_version,
                "kind": owner.kind,
                "name": owner.name,
                "uid": owner.uid,
                "controller": false,
                "blockOwnerDeletion": false,
            }],
        },
        "rules": [r],
    })
}

/// The ClusterRoles a succeeded CSV gets for an API it provides (upstream's
/// `ensureClusterRolesForCSV`): `<name>-<version>-admin|edit|view` with the suffix's verbs on
/// `<group>/<resource>`, aggregating into Kubernetes' own admin, edit and view roles and into
/// the group's; for a CRD also `<name>-<version>-crdview`, `get` on the CRD itself. `name` is
/// the CRD's name or the APIService's resource; in admin, edit, view order.
///
/// Upstream's owner reference to a CRD names its kind `customresourcedefinition` (lowercase), a
/// kind no API serves; here it is `CustomResourceDefinition`, so garbage collection finds it.
pub fn provided_api_cluster_roles(
    name: &str,
    key: &ApiKey,
    owner: &ApiOwner<'_>,
    crd: bool,
) -> Vec<Value> {
    let prefix = format!("{name}-{}-", key.version);
    let mut out: Vec<Value> = ROLE_SUFFIXES
        .iter()
        .map(|(suffix, verbs)| {
            api_cluster_role(
                format!("{prefix}{suffix}"),
                suffix,
                verbs,
                (&key.group, &key.plural, None),
                key,
                owner,
            )
        })
        .collect();
    if crd {
        out.push(api_cluster_role(
            format!("{prefix}crdview"),
            "view",
            &["get"],
            (
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                Some(name),
            ),
            key,
            owner,
        ));
    }
    out
}

/// The ClusterRole an AllNamespaces operator's Role is lifted to when its namespaced
/// permissions are not already granted cluster-wide (upstream's `ensureSingletonRBAC`): the
/// Role's name and labels, its rules plus `get`, `list`, `watch` on namespaces.
pub fn lifted_cluster_role(role: &Role) -> ClusterRole {
    let mut rules = role.rules.clone().unwrap_or_default();
    rules.push(PolicyRule {
        verbs: vec!["get".into(), "list".into(), "watch".into()],
        api_groups: Some(vec![String::new()]),
        resources: Some(vec!["namespaces".into()]),
        ..PolicyRule::default()
    });
    ClusterRole {
        metadata: lifted_meta(&role.metadata),
        rules: Some(rules),
        aggregation_rule: None,
    }
}

/// The ClusterRoleBinding a lifted Role's RoleBinding becomes: its name, labels and subjects,
/// bound to the ClusterRole of the same name as the Role it bound.
pub fn lifted_cluster_role_binding(binding: &RoleBinding) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: lifted_meta(&binding.metadata),
        subjects: binding.subjects.clone(),
        role_ref: RoleRef {
            api_group: binding.role_ref.api_group.clone(),
            kind: "ClusterRole".into(),
            name: binding.role_ref.name.clone(),
        },
    }
}

/// What a lifted object keeps of the namespaced one's metadata: its name and labels.
fn lifted_meta(meta: &ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        name: meta.name.clone(),
        labels: meta.labels.clone(),
        ..ObjectMeta::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The roles of `etcdclusters.etcd.database.coreos.com` v1beta2 (upstream's
    /// `ensureClusterRolesForCSV`: names, verbs, labels).
    #[test]
    fn per_api_cluster_roles() {
        let key = ApiKey {
            group: "etcd.database.coreos.com".into(),
            version: "v1beta2".into(),
            kind: "EtcdCluster".into(),
            plural: "etcdclusters".into(),
        };
        let owner = ApiOwner {
            api_version: "apiextensions.k8s.io/v1",
            kind: "CustomResourceDefinition",
            name: "etcdclusters.etcd.database.coreos.com",
            uid: "u",
        };
        let roles =
            provided_api_cluster_roles("etcdclusters.etcd.database.coreos.com", &key, &owner, true);
        let names: Vec<&str> = roles
            .iter()
            .filter_map(|r| r["metadata"]["name"].as_str())
            .collect();
        assert_eq!(
            names,
            [
                "etcdclusters.etcd.database.coreos.com-v1beta2-admin",
                "etcdclusters.etcd.database.coreos.com-v1beta2-edit",
                "etcdclusters.etcd.database.coreos.com-v1beta2-view",
                "etcdclusters.etcd.database.coreos.com-v1beta2-crdview",
            ]
        );
        assert_eq!(
            roles[1]["rules"][0]["verbs"],
            json!(["create", "update", "patch", "delete"])
        );
        assert_eq!(
            roles[3]["rules"][0]["resourceNames"],
            json!(["etcdclusters.etcd.database.coreos.com"])
        );
        assert_eq!(
            roles[3]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-view"],
            "true"
        );
        let label = aggregation_label(&key, "admin");
        assert_eq!(roles[0]["metadata"]["labels"][label.as_str()], "true");
        assert_eq!(
            roles[0]["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
            false
        );
        // An APIService's roles have no crdview.
        assert_eq!(
            provided_api_cluster_roles("widgets", &key, &owner, false).len(),
            3
        );
    }

    /// A Role lifted for an AllNamespaces operator (upstream's `ensureSingletonRBAC`).
    #[test]
    fn lifted_roles() {
        let role: Role = serde_json::from_value(json!({
            "metadata": {"name": "op-role", "namespace": "ops", "labels": {"olm.owner": "op.v1"}},
            "rules": [{"verbs": ["*"], "apiGroups": [""], "resources": ["configmaps"]}],
        }))
        .unwrap();
        let lifted = serde_json::to_value(lifted_cluster_role(&role)).unwrap();
        assert_eq!(
            lifted["metadata"],
            json!({"name": "op-role", "labels": {"olm.owner": "op.v1"}})
        );
        assert_eq!(
            lifted["rules"][1],
            json!({"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["namespaces"]})
        );
        let binding: RoleBinding = serde_json::from_value(json!({
            "metadata": {"name": "op-binding", "namespace": "ops", "labels": {"olm.owner": "op.v1"}},
            "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "ops"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "op-role"},
        }))
        .unwrap();
        let lifted = serde_json::to_value(lifted_cluster_role_binding(&binding)).unwrap();
        assert_eq!(lifted["roleRef"]["kind"], "ClusterRole");
        assert_eq!(lifted["roleRef"]["name"], "op-role");
        assert_eq!(lifted["subjects"][0]["namespace"], "ops");
    }
}
