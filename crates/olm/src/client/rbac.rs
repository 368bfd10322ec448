//! The ServiceAccount `olm install --create-service-account` creates, and the RBAC that gives it
//! exactly what installing the bundle needs: a ClusterRole and ClusterRoleBinding for the
//! cluster-scoped rules, and a Role and RoleBinding in each namespace with namespaced rules.
//! Everything carries [`INSTALLER_FOR_LABEL`] so that `olm uninstall` finds it again.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::PolicyRule;
use olm_security::permissions::ScopedPolicyRules;
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

/// What the installer account holds (`held`, read back from its roles) widened by what the
/// next bundle needs (`needed`), scope by scope (cluster scope first, then namespaces in order):
/// the rules held, then each needed rule not held already, as it is; and how many rules were
/// added. Nothing is taken away: while upgrading, OLM removes the objects of the revision
/// before as the same account.
pub fn widen(
    held: &[ScopedPolicyRules],
    needed: &[ScopedPolicyRules],
) -> (Vec<ScopedPolicyRules>, usize) {
    let mut scopes: BTreeMap<&str, Vec<PolicyRule>> = BTreeMap::new();
    let mut added = 0;
    for (scope, new) in held
        .iter()
        .map(|s| (s, false))
        .chain(needed.iter().map(|s| (s, true)))
    {
        let rules = scopes.entry(scope.namespace.as_str()).or_default();
        for rule in &scope.missing_rules {
            if !rules.contains(rule) {
                rules.push(rule.clone());
                added += usize::from(new);
            }
        }
    }
    let widened = scopes
        .into_iter()
        .map(|(namespace, missing_rules)| ScopedPolicyRules {
            namespace: namespace.to_owned(),
            missing_rules,
        })
        .collect();
    (widened, added)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
            api_groups: Some(vec![String::new()]),
            resources: Some(resources.iter().map(|v| (*v).to_owned()).collect()),
            ..PolicyRule::default()
        }
    }

    fn scoped(namespace: &str, rules: Vec<PolicyRule>) -> ScopedPolicyRules {
        ScopedPolicyRules {
            namespace: namespace.to_owned(),
            missing_rules: rules,
        }
    }

    /// An upgrade to a bundle with a webhook: the account keeps what it had and gains the
    /// Service rules and a namespace it had no Role in; a rule held already is not repeated.
    #[test]
    fn widening_keeps_what_was_held_and_adds_what_is_new() {
        let crds = rule(&["create", "get"], &["customresourcedefinitions"]);
        let deployments = rule(&["create", "get"], &["deployments"]);
        let services = rule(&["create", "get", "list", "watch"], &["services"]);
        let webhooks = rule(&["create", "get"], &["validatingwebhookconfigurations"]);
        let held = [
            scoped("", vec![crds.clone()]),
            scoped("example-system", vec![deployments.clone()]),
        ];
        let needed = [
            scoped("", vec![crds.clone(), webhooks.clone()]),
            scoped(
                "example-system",
                vec![deployments.clone(), services.clone()],
            ),
            scoped("audit", vec![services.clone()]),
        ];
        assert_eq!(
            widen(&held, &needed),
            (
                vec![
                    scoped("", vec![crds.clone(), webhooks]),
                    scoped("audit", vec![services.clone()]),
                    scoped("example-system", vec![deployments.clone(), services]),
                ],
                3
            )
        );
        // A bundle that needs less takes nothing away, and adds nothing.
        assert_eq!(
            widen(&held, &[scoped("", vec![])]),
            (
                vec![
                    scoped("", vec![crds]),
                    scoped("example-system", vec![deployments])
                ],
                0
            )
        );
        assert_eq!(widen(&[], &[]), (vec![], 0));
    }

    #[test]
    fn one_role_per_scope_bound_to_the_account() {
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
