//! The ServiceAccount `olm install --create-service-account` creates, and the RBAC that gives it
//! exactly what installing the bundle needs: a ClusterRole and ClusterRoleBinding for the
//! cluster-scoped rules, and a Role and RoleBinding in each namespace with namespaced rules.
//! Everything carries [`INSTALLER_FOR_LABEL`] so that `olm uninstall` finds it again.

use olm_extension::permissions::ScopedPolicyRules;
use serde_json::{Value, json};

/// Label on the objects created for an extension's installer account; its value is the
/// extension's name.
pub const INSTALLER_FOR_LABEL: &str = "olm.operatorframework.io/installer-for";

/// Name of the ServiceAccount, roles and bindings created for extension `ext`.
pub fn installer_name(ext: &str) -> String {
    format!("{ext}-installer")
}

/// The ServiceAccount and the roles and bindings granting it `rules`, for extension `ext`
/// installed into `namespace` with ServiceAccount `sa`.
pub fn objects(ext: &str, namespace: &str, sa: &str, rules: &[ScopedPolicyRules]) -> Vec<Value> {
    let name = installer_name(ext);
    let labels = json!({ INSTALLER_FOR_LABEL: ext });
    let subject = json!([{"kind": "ServiceAccount", "name": sa, "namespace": namespace}]);
    let mut out = vec![json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": sa, "namespace": namespace, "labels": labels},
    })];
    for scope in rules {
        let rule_values: Vec<Value> = scope
            .missing_rules
            .iter()
            .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
            .collect();
        if scope.namespace.is_empty() {
            out.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": name, "labels": labels},
                "rules": rule_values,
            }));
            out.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name, "labels": labels},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                "subjects": subject,
            }));
        } else {
            let meta = json!({"name": name, "namespace": scope.namespace, "labels": labels});
            out.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": meta,
                "rules": rule_values,
            }));
            out.push(json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": meta,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
                "subjects": subject,
            }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::PolicyRule;

    #[test]
    fn one_role_per_scope_bound_to_the_account() {
        let rule = |verbs: &[&str], resources: &[&str]| PolicyRule {
            verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
            api_groups: Some(vec![String::new()]),
            resources: Some(resources.iter().map(|v| (*v).to_owned()).collect()),
            ..PolicyRule::default()
        };
        let scoped = [
            ScopedPolicyRules {
                namespace: String::new(),
                missing_rules: vec![rule(&["create", "get"], &["namespaces"])],
            },
            ScopedPolicyRules {
                namespace: "ops".into(),
                missing_rules: vec![rule(&["create"], &["configmaps"])],
            },
        ];
        let objs = objects("argocd", "ops", "argocd-installer", &scoped);
        let kinds: Vec<&str> = objs
            .iter()
            .map(|o| o["kind"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(
            kinds,
            [
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Role",
                "RoleBinding"
            ]
        );
        assert_eq!(objs[1]["rules"][0]["resources"][0], "namespaces");
        assert_eq!(objs[2]["subjects"][0]["namespace"], "ops");
        assert_eq!(objs[3]["metadata"]["namespace"], "ops");
        for o in &objs {
            assert_eq!(o["metadata"]["labels"][INSTALLER_FOR_LABEL], "argocd");
        }
    }
}
