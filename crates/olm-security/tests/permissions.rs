//! The ServiceAccount pre-authorizer against operator-controller v1.10's vectors
//! (`internal/operator-controller/authorization/rbac_test.go`: same manifests, same cluster RBAC,
//! same missing rules in the same order; `applier/helm_test.go` `errMissingRBAC` for the message),
//! plus the RBAC matcher's wildcard rules from Kubernetes' `rbac/validation` semantics.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleBinding};
use olm_security::permissions::{
    CLUSTER_COLLECTION_VERBS, PreAuthorizationFailed, Rbac, Request, ResourceInfo,
    ScopedPolicyRules, UserInfo, compact_rules, missing_permissions, requests, rule_allows,
    targets, uncovered, verdict,
};
use serde_json::{Value, json};

const TEST_MANIFEST: &str = r#"apiVersion: v1
kind: Service
metadata:
  name: test-service
  namespace: test-namespace
spec:
  clusterIP: None
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: test-extension-role
  namespace: test-namespace
rules:
- apiGroups: ["*"]
  resources: [serviceaccounts]
  verbs: [watch]
- apiGroups: ["*"]
  resources: [certificates]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: test-extension-binding
  namespace: test-namespace
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: test-extension-role
subjects:
- kind: ServiceAccount
  name: test-serviceaccount
  namespace: test-namespace
"#;

/// The second half repeats the first in `a-test-namespace`; its Service has no apiVersion, as
/// upstream's has.
const TEST_MANIFEST_MULTI_NAMESPACE_TAIL: &str = r#"
---
kind: Service
metadata:
  name: test-service
  namespace: a-test-namespace
spec:
  clusterIP: None
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: test-extension-role
  namespace: a-test-namespace
rules:
- apiGroups: ["*"]
  resources: [serviceaccounts]
  verbs: [watch]
- apiGroups: ["*"]
  resources: [certificates]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: test-extension-binding
  namespace: a-test-namespace
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: test-extension-role
subjects:
- kind: ServiceAccount
  name: test-serviceaccount
  namespace: a-test-namespace
"#;

fn docs(text: &str) -> Vec<Value> {
    olm_goenc::yamlread::parse_documents(text).unwrap()
}

/// Upstream's `testUser`: the ServiceAccount's name, no groups.
fn test_user() -> UserInfo {
    UserInfo {
        name: "system:serviceaccount:test-namespace:test-serviceaccount".into(),
        groups: Vec::new(),
    }
}

/// The static REST mapper upstream's tests use (core and RBAC kinds).
fn resolve(api_version: &str, kind: &str) -> Option<ResourceInfo> {
    let (group, resource, namespaced) = match kind {
        "Service" => ("", "services", true),
        "ServiceAccount" => ("", "serviceaccounts", true),
        "Namespace" => ("", "namespaces", false),
        "Deployment" => ("apps", "deployments", true),
        "Role" => ("rbac.authorization.k8s.io", "roles", true),
        "RoleBinding" => ("rbac.authorization.k8s.io", "rolebindings", true),
        "ClusterRole" => ("rbac.authorization.k8s.io", "clusterroles", false),
        "ClusterRoleBinding" => ("rbac.authorization.k8s.io", "clusterrolebindings", false),
        _ => return None,
    };
    let version = api_version
        .rsplit('/')
        .next()
        .filter(|v| !v.is_empty())
        .unwrap_or("v1");
    Some(ResourceInfo {
        group: group.into(),
        version: version.into(),
        resource: resource.into(),
        namespaced,
    })
}

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    PolicyRule {
        verbs: v(verbs),
        api_groups: Some(v(groups)),
        resources: Some(v(resources)),
        resource_names: (!names.is_empty()).then(|| v(names)),
        non_resource_urls: None,
    }
}

fn url_rule(verbs: &[&str], urls: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: verbs.iter().map(|s| s.to_string()).collect(),
        non_resource_urls: Some(urls.iter().map(|s| s.to_string()).collect()),
        ..PolicyRule::default()
    }
}

/// Upstream's cluster: a ClusterRoleBinding of the ServiceAccount to `admin-clusterrole`, whose
/// rules vary by test.
fn cluster(rules: Vec<PolicyRule>) -> Rbac {
    let role: ClusterRole = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "admin-clusterrole"},
    }))
    .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "admin-clusterrole-binding"},
        "subjects": [{"kind": "ServiceAccount", "name": "test-serviceaccount", "namespace": "test-namespace"}],
        "roleRef": {"apiGroup": "", "kind": "ClusterRole", "name": "admin-clusterrole"},
    }))
    .unwrap();
    Rbac {
        cluster_roles: vec![ClusterRole {
            rules: Some(rules),
            ..role
        }],
        cluster_role_bindings: vec![binding],
        ..Rbac::default()
    }
}

fn privileged() -> Rbac {
    cluster(vec![rule(&["*"], &["*"], &["*"], &[])])
}

fn limited() -> Rbac {
    cluster(vec![rule(&[""], &[""], &[""], &[])])
}

fn escalating() -> Rbac {
    cluster(vec![
        rule(&["*"], &["*"], &["serviceaccounts", "services"], &[]),
        rule(
            &[
                "get", "patch", "watch", "list", "create", "update", "delete", "escalate", "bind",
            ],
            &["rbac.authorization.k8s.io"],
            &[
                "roles",
                "clusterroles",
                "rolebindings",
                "clusterrolebindings",
            ],
            &[],
        ),
    ])
}

const RBAC: &str = "rbac.authorization.k8s.io";

/// `expectedSingleNamespaceMissingRules`' rules of one namespace.
fn namespaced_missing(ns: &str) -> ScopedPolicyRules {
    ScopedPolicyRules {
        namespace: ns.into(),
        missing_rules: vec![
            rule(&["create"], &["*"], &["certificates"], &[]),
            rule(&["create"], &[""], &["services"], &[]),
            rule(&["create"], &[RBAC], &["rolebindings"], &[]),
            rule(&["create"], &[RBAC], &["roles"], &[]),
            rule(
                &["delete", "get", "patch", "update"],
                &[""],
                &["services"],
                &["test-service"],
            ),
            rule(
                &["delete", "get", "patch", "update"],
                &[RBAC],
                &["rolebindings"],
                &["test-extension-binding"],
            ),
            rule(
                &["delete", "get", "patch", "update"],
                &[RBAC],
                &["roles"],
                &["test-extension-role"],
            ),
            rule(&["watch"], &["*"], &["serviceaccounts"], &[]),
        ],
    }
}

fn cluster_missing(verbs: &[&str]) -> ScopedPolicyRules {
    ScopedPolicyRules {
        namespace: String::new(),
        missing_rules: vec![
            rule(verbs, &[""], &["services"], &[]),
            rule(verbs, &[RBAC], &["rolebindings"], &[]),
            rule(verbs, &[RBAC], &["roles"], &[]),
        ],
    }
}

fn run(manifest: &str, rbac: &Rbac, extra: &[Request], verbs: &[&str]) -> Vec<ScopedPolicyRules> {
    missing_permissions(
        &test_user(),
        &docs(manifest),
        "test-namespace",
        resolve,
        rbac,
        extra,
        verbs,
    )
    .unwrap()
}

/// rbac_test.go `TestPreAuthorize_Success`.
#[test]
fn preauthorize_success() {
    assert_eq!(
        run(TEST_MANIFEST, &privileged(), &[], &CLUSTER_COLLECTION_VERBS),
        []
    );
}

/// rbac_test.go `TestPreAuthorize_MissingRBAC` and `TestPreAuthorize_NamespacedCollectionVerbs`
/// ("create verb is always checked as namespaced collection verb").
#[test]
fn preauthorize_missing_rbac() {
    assert_eq!(
        run(TEST_MANIFEST, &limited(), &[], &CLUSTER_COLLECTION_VERBS),
        [
            cluster_missing(&["list", "watch"]),
            namespaced_missing("test-namespace")
        ]
    );
}

/// rbac_test.go `TestPreAuthorizeMultiNamespace_MissingRBAC`.
#[test]
fn preauthorize_multi_namespace_missing_rbac() {
    let manifest = format!("{TEST_MANIFEST}{TEST_MANIFEST_MULTI_NAMESPACE_TAIL}");
    assert_eq!(
        run(&manifest, &limited(), &[], &CLUSTER_COLLECTION_VERBS),
        [
            cluster_missing(&["list", "watch"]),
            namespaced_missing("a-test-namespace"),
            namespaced_missing("test-namespace"),
        ]
    );
}

/// rbac_test.go `TestPreAuthorize_CheckEscalation`: `escalate` and `bind` stand in for holding
/// the rules the bundle's Role grants.
#[test]
fn preauthorize_check_escalation() {
    assert_eq!(
        run(TEST_MANIFEST, &escalating(), &[], &CLUSTER_COLLECTION_VERBS),
        []
    );
}

/// rbac_test.go `TestPreAuthorize_AdditionalRequiredPerms_MissingRBAC`.
#[test]
fn preauthorize_additional_required_perms() {
    let extra = [Request::resource("create", "", "", "pods", "")];
    assert_eq!(
        run(
            TEST_MANIFEST,
            &escalating(),
            &extra,
            &CLUSTER_COLLECTION_VERBS
        ),
        [ScopedPolicyRules {
            namespace: String::new(),
            missing_rules: vec![rule(&["create"], &[""], &["pods"], &[])],
        }]
    );
}

/// rbac_test.go `TestPreAuthorize_WithClusterCollectionVerbs` (all three cases) and the
/// privileged case of `TestPreAuthorize_NamespacedCollectionVerbs`.
#[test]
fn preauthorize_with_cluster_collection_verbs() {
    assert_eq!(
        run(TEST_MANIFEST, &limited(), &[], &[]),
        [namespaced_missing("test-namespace")],
        "no cluster collection verbs option omits cluster-scoped collection rules"
    );
    assert_eq!(
        run(TEST_MANIFEST, &limited(), &[], &["get", "patch", "update"]),
        [
            cluster_missing(&["get", "patch", "update"]),
            namespaced_missing("test-namespace")
        ],
        "cluster verbs option only checks those verbs at cluster scope"
    );
    assert_eq!(run(TEST_MANIFEST, &privileged(), &[], &[]), []);
}

/// helm_test.go `errMissingRBAC`: the message's exact lines.
#[test]
fn message_wording() {
    let failed = PreAuthorizationFailed {
        missing: vec![
            ScopedPolicyRules {
                namespace: String::new(),
                missing_rules: vec![rule(&["list", "watch"], &[""], &["services"], &[])],
            },
            ScopedPolicyRules {
                namespace: "test-namespace".into(),
                missing_rules: vec![rule(&["create"], &["*"], &["certificates"], &[])],
            },
        ],
        errors: Vec::new(),
    };
    assert_eq!(
        failed.to_string(),
        "pre-authorization failed: service account requires the following permissions to manage cluster extension:\n  Namespace:\"\" APIGroups:[] Resources:[services] Verbs:[list,watch]\n  Namespace:\"test-namespace\" APIGroups:[*] Resources:[certificates] Verbs:[create]"
    );
}

#[test]
fn verdict_lists_every_missing_permission_at_once() {
    let result = missing_permissions(
        &test_user(),
        &docs(TEST_MANIFEST),
        "test-namespace",
        resolve,
        &limited(),
        &[],
        &CLUSTER_COLLECTION_VERBS,
    );
    let msg = verdict(result).unwrap_err().to_string();
    let lines: Vec<&str> = msg.lines().collect();
    assert_eq!(lines.len(), 1 + 3 + 8, "{msg}");
    assert_eq!(
        lines[1..],
        [
            "  Namespace:\"\" APIGroups:[] Resources:[services] Verbs:[list,watch]",
            "  Namespace:\"\" APIGroups:[rbac.authorization.k8s.io] Resources:[rolebindings] Verbs:[list,watch]",
            "  Namespace:\"\" APIGroups:[rbac.authorization.k8s.io] Resources:[roles] Verbs:[list,watch]",
            "  Namespace:\"test-namespace\" APIGroups:[*] Resources:[certificates] Verbs:[create]",
            "  Namespace:\"test-namespace\" APIGroups:[*] Resources:[serviceaccounts] Verbs:[watch]",
            "  Namespace:\"test-namespace\" APIGroups:[] Resources:[services] ResourceNames:[test-service] Verbs:[delete,get,patch,update]",
            "  Namespace:\"test-namespace\" APIGroups:[] Resources:[services] Verbs:[create]",
            "  Namespace:\"test-namespace\" APIGroups:[rbac.authorization.k8s.io] Resources:[rolebindings] ResourceNames:[test-extension-binding] Verbs:[delete,get,patch,update]",
            "  Namespace:\"test-namespace\" APIGroups:[rbac.authorization.k8s.io] Resources:[rolebindings] Verbs:[create]",
            "  Namespace:\"test-namespace\" APIGroups:[rbac.authorization.k8s.io] Resources:[roles] ResourceNames:[test-extension-role] Verbs:[delete,get,patch,update]",
            "  Namespace:\"test-namespace\" APIGroups:[rbac.authorization.k8s.io] Resources:[roles] Verbs:[create]",
        ][..]
    );
    assert_eq!(
        verdict(missing_permissions(
            &test_user(),
            &docs(TEST_MANIFEST),
            "test-namespace",
            resolve,
            &privileged(),
            &[],
            &CLUSTER_COLLECTION_VERBS,
        )),
        Ok(())
    );
}

#[test]
fn unmapped_kinds_are_evaluation_errors() {
    let objs = vec![
        json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "m", "namespace": "ns"}}),
        json!({"apiVersion": "v1", "metadata": {"name": "nokind"}}),
    ];
    let msg = verdict(missing_permissions(
        &test_user(),
        &objs,
        "ns",
        resolve,
        &privileged(),
        &[],
        &[],
    ))
    .unwrap_err()
    .to_string();
    assert_eq!(
        msg,
        "pre-authorization failed: authorization evaluation error: could not get REST mapping for object 0 in manifest with GVK monitoring.coreos.com/v1, Kind=ServiceMonitor (name: m): no matches for kind \"ServiceMonitor\" in version \"monitoring.coreos.com/v1\"\ncould not decode object 1 in manifest: Object 'Kind' is missing in object"
    );
}

#[test]
fn namespaced_objects_without_namespace_go_to_the_install_namespace() {
    let objs = vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "cr", "namespace": "ignored"}}),
    ];
    let t = targets(&objs, "install", resolve).unwrap();
    assert_eq!(t[0].namespace, "install");
    assert_eq!(t[1].namespace, "", "cluster-scoped objects have none");
    let reqs = requests(&t, &CLUSTER_COLLECTION_VERBS);
    // Per resource: 4 object verbs, create per namespace, list and watch.
    assert_eq!(reqs.len(), 2 * (4 + 1 + 2));
}

/// Groups count as on the API server: a binding to `system:serviceaccounts:<ns>` grants.
#[test]
fn service_account_groups_count() {
    let mut rbac = privileged();
    rbac.cluster_role_bindings[0].subjects = Some(vec![serde_json::from_value(
        json!({"kind": "Group", "name": "system:serviceaccounts:test-namespace", "apiGroup": "rbac.authorization.k8s.io"}),
    )
    .unwrap()]);
    let sa = UserInfo::service_account("test-namespace", "test-serviceaccount");
    let req = Request::resource("get", "test-namespace", "", "services", "x");
    assert!(rbac.allows(&sa, &req));
    assert!(
        !rbac.allows(&test_user(), &req),
        "without groups, the group binding does not apply"
    );
    let other = UserInfo::service_account("other", "test-serviceaccount");
    assert!(!rbac.allows(&other, &req));
}

/// A RoleBinding grants only in its namespace; its ServiceAccount subject without a namespace
/// means the binding's.
#[test]
fn role_bindings_grant_in_their_namespace() {
    let mut rbac = cluster(vec![rule(&["get"], &[""], &["configmaps"], &[])]);
    rbac.cluster_role_bindings.clear();
    let rb: RoleBinding = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "b", "namespace": "test-namespace"},
        "subjects": [{"kind": "ServiceAccount", "name": "test-serviceaccount"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin-clusterrole"},
    }))
    .unwrap();
    rbac.role_bindings.push(rb);
    let u = test_user();
    assert!(rbac.allows(
        &u,
        &Request::resource("get", "test-namespace", "", "configmaps", "c")
    ));
    assert!(!rbac.allows(
        &u,
        &Request::resource("get", "elsewhere", "", "configmaps", "c")
    ));
    assert!(
        !rbac.allows(&u, &Request::resource("get", "", "", "configmaps", "c")),
        "not cluster-wide"
    );
}

/// Kubernetes' `RuleAllows`: verbs, groups, resources (with `*` and `*/sub`), names, URLs.
#[test]
fn rule_matcher_table() {
    let r = |verb: &str, group: &str, resource: &str, name: &str| {
        Request::resource(verb, "ns", group, resource, name)
    };
    let url = |verb: &str, path: &str| Request {
        verb: verb.into(),
        path: Some(path.into()),
        ..Request::default()
    };
    let cases: Vec<(PolicyRule, Request, bool)> = vec![
        (
            rule(&["get"], &[""], &["pods"], &[]),
            r("get", "", "pods", "p"),
            true,
        ),
        (
            rule(&["get"], &[""], &["pods"], &[]),
            r("list", "", "pods", ""),
            false,
        ),
        (
            rule(&["*"], &[""], &["pods"], &[]),
            r("delete", "", "pods", "p"),
            true,
        ),
        (
            rule(&["get"], &["*"], &["pods"], &[]),
            r("get", "apps", "pods", "p"),
            true,
        ),
        (
            rule(&["get"], &["apps"], &["pods"], &[]),
            r("get", "", "pods", "p"),
            false,
        ),
        (
            rule(&["get"], &[""], &["*"], &[]),
            r("get", "", "secrets", "s"),
            true,
        ),
        (
            rule(&["get"], &[""], &["pods"], &[]),
            r("get", "", "pods/log", "p"),
            false,
        ),
        (
            rule(&["get"], &[""], &["pods/log"], &[]),
            r("get", "", "pods/log", "p"),
            true,
        ),
        (
            rule(&["get"], &[""], &["*/log"], &[]),
            r("get", "", "pods/log", "p"),
            true,
        ),
        (
            rule(&["get"], &[""], &["*/log"], &[]),
            r("get", "", "pods", "p"),
            false,
        ),
        (
            rule(&["get"], &[""], &["*"], &[]),
            r("get", "", "pods/status", "p"),
            true,
        ),
        (
            rule(&["get"], &[""], &["pods"], &["a"]),
            r("get", "", "pods", "a"),
            true,
        ),
        (
            rule(&["get"], &[""], &["pods"], &["a"]),
            r("get", "", "pods", "b"),
            false,
        ),
        (
            rule(&["create"], &[""], &["pods"], &["a"]),
            r("create", "", "pods", ""),
            false,
        ),
        (
            url_rule(&["get"], &["/healthz"]),
            url("get", "/healthz"),
            true,
        ),
        (
            url_rule(&["get"], &["/healthz"]),
            url("get", "/healthz/ready"),
            false,
        ),
        (
            url_rule(&["get"], &["/healthz*"]),
            url("get", "/healthz/ready"),
            true,
        ),
        (url_rule(&["get"], &["*"]), url("get", "/anything"), true),
        (url_rule(&["get"], &["*"]), url("post", "/anything"), false),
        (
            rule(&["get"], &["*"], &["*"], &[]),
            url("get", "/healthz"),
            false,
        ),
        (url_rule(&["*"], &["*"]), r("get", "", "pods", "p"), false),
        (
            rule(&[""], &[""], &[""], &[]),
            r("get", "", "pods", "p"),
            false,
        ),
    ];
    for (i, (rule, req, want)) in cases.iter().enumerate() {
        assert_eq!(rule_allows(rule, req), *want, "case {i}: {rule:?} {req:?}");
    }
}

/// Kubernetes' `Covers` on the rules of rbac_test.go
/// `TestParseEscalationErrorForMissingRules_KubernetesCompatibility`: nothing held, so every
/// rule is missing; compacted as upstream's message lists them (verbs sorted here).
#[test]
fn uncovered_rules_compact_as_upstream_lists_them() {
    let want = [
        rule(&["get"], &[""], &["secrets"], &["test-secret"]),
        rule(&["get", "list", "watch"], &[""], &["configmaps"], &[]),
        rule(
            &["create", "update", "patch", "delete"],
            &["apps"],
            &["deployments", "replicasets"],
            &[],
        ),
        url_rule(&["get", "post"], &["/healthz", "/livez"]),
    ];
    let lacking = uncovered(&[], &want);
    assert_eq!(lacking.len(), 1 + 3 + 8 + 4);
    let compact = compact_rules(lacking);
    let mut got: Vec<String> = compact.iter().map(|r| format!("{r:?}")).collect();
    got.sort();
    let mut expected: Vec<String> = [
        rule(&["get", "list", "watch"], &[""], &["configmaps"], &[]),
        rule(&["get"], &[""], &["secrets"], &["test-secret"]),
        rule(
            &["create", "delete", "patch", "update"],
            &["apps"],
            &["deployments"],
            &[],
        ),
        rule(
            &["create", "delete", "patch", "update"],
            &["apps"],
            &["replicasets"],
            &[],
        ),
        url_rule(&["get"], &["/healthz"]),
        url_rule(&["post"], &["/healthz"]),
        url_rule(&["get"], &["/livez"]),
        url_rule(&["post"], &["/livez"]),
    ]
    .iter()
    .map(|r| format!("{r:?}"))
    .collect();
    expected.sort();
    assert_eq!(got, expected);

    // Held rules cover: wildcards, `*/sub`, names.
    let owner = [
        rule(&["*"], &[""], &["configmaps", "secrets"], &[]),
        rule(
            &["create", "update", "patch", "delete"],
            &["apps"],
            &["*"],
            &[],
        ),
        url_rule(&["get", "post"], &["/healthz", "/livez*"]),
    ];
    assert_eq!(uncovered(&owner, &want), []);
    let named_only = [rule(&["get"], &[""], &["secrets"], &["other"])];
    assert_eq!(
        uncovered(&named_only, &want[..1]).len(),
        1,
        "another name does not cover"
    );
    let unnamed = [rule(&["get"], &[""], &["secrets"], &["test-secret"])];
    assert_eq!(
        uncovered(&unnamed, &[rule(&["get"], &[""], &["secrets"], &[])]).len(),
        1,
        "a named rule does not cover all names"
    );
    let sub = [rule(&["get"], &[""], &["*/status"], &[])];
    assert_eq!(
        uncovered(&sub, &[rule(&["get"], &[""], &["pods/status"], &[])]),
        []
    );
}

/// A bundle ClusterRole with an aggregation rule needs full authority, as upstream requires
/// cluster-admin for it.
#[test]
fn aggregation_rule_needs_full_authority() {
    let objs = vec![json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "agg"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]},
    })];
    let rbac = cluster(vec![
        rule(&["*"], &[RBAC], &["clusterroles"], &["agg"]),
        rule(
            &["create", "list", "watch"],
            &[RBAC],
            &["clusterroles"],
            &[],
        ),
    ]);
    let missing = missing_permissions(
        &test_user(),
        &objs,
        "ns",
        resolve,
        &rbac,
        &[],
        &CLUSTER_COLLECTION_VERBS,
    )
    .unwrap();
    assert_eq!(
        missing,
        [ScopedPolicyRules {
            namespace: String::new(),
            missing_rules: vec![rule(&["*"], &["*"], &["*"], &[]), url_rule(&["*"], &["*"])],
        }]
    );
    assert_eq!(
        missing_permissions(
            &test_user(),
            &objs,
            "ns",
            resolve,
            &privileged(),
            &[],
            &CLUSTER_COLLECTION_VERBS
        )
        .unwrap(),
        []
    );
}

/// helm.go `extManagementPerms` / boxcutter.go `revisionManagementPerms`.
#[test]
fn owner_finalizers_request() {
    let r = olm_security::permissions::owner_finalizers("clusterextensions", "ext");
    assert_eq!(
        olm_security::permissions::rule_description(&r.namespace, &r.as_rule()),
        "Namespace:\"\" APIGroups:[olm.operatorframework.io] Resources:[clusterextensions/finalizers] ResourceNames:[ext] Verbs:[update]"
    );
}
