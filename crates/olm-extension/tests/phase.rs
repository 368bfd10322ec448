//! Phase sorting and phase digests. The sorting cases are upstream's `Test_PhaseSort`
//! (`internal/operator-controller/applier/phase_test.go`, v1.11.0), one test per case; the
//! digests are what upstream's `computePhaseDigest` (`controllers/clusterobjectset_controller.go`)
//! computes for the same objects with Go's `encoding/json`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use olm_api::{ClusterObjectSetObject, ClusterObjectSetPhase};
use olm_extension::phase::{self, Phase};
use serde_json::{Map, Value, json};

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("test object must be a JSON object"),
    }
}

/// An object with only apiVersion and kind.
fn gvk(api_version: &str, kind: &str) -> Map<String, Value> {
    object(json!({"apiVersion": api_version, "kind": kind}))
}

/// An object with a name, and a namespace when non-empty.
fn named(api_version: &str, kind: &str, name: &str, namespace: &str) -> Map<String, Value> {
    let mut metadata = json!({"name": name});
    if !namespace.is_empty() {
        metadata["namespace"] = json!(namespace);
    }
    object(json!({"apiVersion": api_version, "kind": kind, "metadata": metadata}))
}

fn phase(name: Phase, objects: Vec<Map<String, Value>>) -> ClusterObjectSetPhase {
    ClusterObjectSetPhase {
        name: name.as_str().to_owned(),
        objects: objects
            .into_iter()
            .map(|o| ClusterObjectSetObject {
                object: Some(o),
                ref_: None,
                collision_protection: None,
            })
            .collect(),
        collision_protection: None,
    }
}

#[test]
fn single_deploy_obj() {
    assert_eq!(
        phase::sort(vec![gvk("apps/v1", "Deployment")]),
        vec![phase(Phase::Deploy, vec![gvk("apps/v1", "Deployment")])]
    );
}

#[test]
fn all_phases() {
    let cert = || named("cert-manager.io/v1", "Certificate", "test", "");
    let input = vec![
        gvk(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
        ),
        gvk("apps/v1", "Deployment"),
        gvk("v1", "Namespace"),
        gvk("some.api/v1", "SomeCustomResource"),
        gvk("rbac.authorization.k8s.io/v1", "ClusterRole"),
        gvk("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        gvk("rbac.authorization.k8s.io/v1", "RoleBinding"),
        gvk("rbac.authorization.k8s.io/v1", "Role"),
        gvk("v1", "PersistentVolume"),
        gvk("networking.k8s.io/v1", "NetworkPolicy"),
        gvk("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        gvk("v1", "ServiceAccount"),
        gvk("v1", "Secret"),
        gvk("v1", "Service"),
        cert(),
        gvk("autoscaling.k8s.io/v1", "VerticalPodAutoscaler"),
        gvk("monitoring.coreos.com/v1", "PrometheusRule"),
    ];
    let want = vec![
        phase(Phase::Namespaces, vec![gvk("v1", "Namespace")]),
        phase(
            Phase::Policies,
            vec![gvk("networking.k8s.io/v1", "NetworkPolicy")],
        ),
        phase(Phase::Identity, vec![gvk("v1", "ServiceAccount")]),
        phase(Phase::Configuration, vec![gvk("v1", "Secret")]),
        phase(Phase::Storage, vec![gvk("v1", "PersistentVolume")]),
        phase(
            Phase::Crds,
            vec![gvk("apiextensions.k8s.io/v1", "CustomResourceDefinition")],
        ),
        phase(
            Phase::Roles,
            vec![
                gvk("rbac.authorization.k8s.io/v1", "ClusterRole"),
                gvk("rbac.authorization.k8s.io/v1", "Role"),
            ],
        ),
        phase(
            Phase::Bindings,
            vec![
                gvk("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
                gvk("rbac.authorization.k8s.io/v1", "RoleBinding"),
            ],
        ),
        phase(Phase::Infrastructure, vec![gvk("v1", "Service"), cert()]),
        phase(
            Phase::Deploy,
            vec![
                gvk("apps/v1", "Deployment"),
                gvk("some.api/v1", "SomeCustomResource"),
            ],
        ),
        phase(
            Phase::Scaling,
            vec![gvk("autoscaling.k8s.io/v1", "VerticalPodAutoscaler")],
        ),
        phase(
            Phase::Publish,
            vec![gvk("monitoring.coreos.com/v1", "PrometheusRule")],
        ),
        phase(
            Phase::Admission,
            vec![gvk(
                "admissionregistration.k8s.io/v1",
                "ValidatingWebhookConfiguration",
            )],
        ),
    ];
    assert_eq!(phase::sort(input), want);
}

#[test]
fn sorted_and_batched() {
    let input = vec![
        gvk("apps/v1", "Deployment"),
        gvk("v1", "ConfigMap"),
        gvk("v1", "ServiceAccount"),
    ];
    assert_eq!(
        phase::sort(input),
        vec![
            phase(Phase::Identity, vec![gvk("v1", "ServiceAccount")]),
            phase(Phase::Configuration, vec![gvk("v1", "ConfigMap")]),
            phase(Phase::Deploy, vec![gvk("apps/v1", "Deployment")]),
        ]
    );
}

#[test]
fn no_objects() {
    assert_eq!(phase::sort(vec![]), vec![]);
}

#[test]
fn sort_by_group_across_infrastructure_and_deploy_phases() {
    let input = vec![
        named("apps/v1", "Deployment", "test", ""),
        named("cert-manager.io/v1", "Certificate", "test", ""),
    ];
    assert_eq!(
        phase::sort(input),
        vec![
            phase(
                Phase::Infrastructure,
                vec![named("cert-manager.io/v1", "Certificate", "test", "")]
            ),
            phase(
                Phase::Deploy,
                vec![named("apps/v1", "Deployment", "test", "")]
            ),
        ]
    );
}

#[test]
fn sort_by_version_within_same_group_and_phase() {
    let input = vec![
        named("batch/v1", "Job", "test", ""),
        named("batch/v1beta1", "CronJob", "test", ""),
    ];
    assert_eq!(
        phase::sort(input),
        vec![phase(
            Phase::Deploy,
            vec![
                named("batch/v1", "Job", "test", ""),
                named("batch/v1beta1", "CronJob", "test", ""),
            ]
        )]
    );
}

#[test]
fn sort_by_kind_within_same_group_version_and_phase() {
    let input = vec![
        named("v1", "Secret", "test", ""),
        named("v1", "ConfigMap", "test", ""),
    ];
    assert_eq!(
        phase::sort(input),
        vec![phase(
            Phase::Configuration,
            vec![
                named("v1", "ConfigMap", "test", ""),
                named("v1", "Secret", "test", ""),
            ]
        )]
    );
}

#[test]
fn sort_by_namespace_within_same_gvk_and_phase() {
    let input = vec![
        named("v1", "ConfigMap", "test", "zebra"),
        named("v1", "ConfigMap", "test", "alpha"),
        named("v1", "ConfigMap", "test", "beta"),
    ];
    assert_eq!(
        phase::sort(input),
        vec![phase(
            Phase::Configuration,
            vec![
                named("v1", "ConfigMap", "test", "alpha"),
                named("v1", "ConfigMap", "test", "beta"),
                named("v1", "ConfigMap", "test", "zebra"),
            ]
        )]
    );
}

#[test]
fn sort_by_name_within_same_gvk_namespace_and_phase() {
    let input = vec![
        named("v1", "ConfigMap", "zoo", "default"),
        named("v1", "ConfigMap", "apple", "default"),
        named("v1", "ConfigMap", "banana", "default"),
    ];
    assert_eq!(
        phase::sort(input),
        vec![phase(
            Phase::Configuration,
            vec![
                named("v1", "ConfigMap", "apple", "default"),
                named("v1", "ConfigMap", "banana", "default"),
                named("v1", "ConfigMap", "zoo", "default"),
            ]
        )]
    );
}

#[test]
fn comprehensive_sorting_all_dimensions() {
    let input = vec![
        named("apps/v1", "Deployment", "app-z", "prod"),
        named("v1", "Secret", "secret-b", "prod"),
        named("v1", "Secret", "secret-a", "prod"),
        named("v1", "ConfigMap", "config", "dev"),
        named("apps/v1", "Deployment", "app-a", "prod"),
        named("v1", "ConfigMap", "config", "prod"),
    ];
    assert_eq!(
        phase::sort(input),
        vec![
            phase(
                Phase::Configuration,
                vec![
                    named("v1", "ConfigMap", "config", "dev"),
                    named("v1", "ConfigMap", "config", "prod"),
                    named("v1", "Secret", "secret-a", "prod"),
                    named("v1", "Secret", "secret-b", "prod"),
                ]
            ),
            phase(
                Phase::Deploy,
                vec![
                    named("apps/v1", "Deployment", "app-a", "prod"),
                    named("apps/v1", "Deployment", "app-z", "prod"),
                ]
            ),
        ]
    );
}

#[test]
fn cluster_scoped_vs_namespaced_resources_empty_namespace_sorts_first() {
    let input = vec![
        named("rbac.authorization.k8s.io/v1", "ClusterRole", "admin", ""),
        named("rbac.authorization.k8s.io/v1", "ClusterRole", "viewer", ""),
        named("rbac.authorization.k8s.io/v1", "Role", "admin", "default"),
    ];
    assert_eq!(
        phase::sort(input),
        vec![phase(
            Phase::Roles,
            vec![
                named("rbac.authorization.k8s.io/v1", "ClusterRole", "admin", ""),
                named("rbac.authorization.k8s.io/v1", "ClusterRole", "viewer", ""),
                named("rbac.authorization.k8s.io/v1", "Role", "admin", "default"),
            ]
        )]
    );
}

/// Every kind of upstream's `phaseGKMap` (phase.go), and kinds it does not name.
#[test]
fn every_mapped_group_kind_and_the_deploy_default() {
    let cases = [
        ("", "Namespace", Phase::Namespaces),
        ("networking.k8s.io", "NetworkPolicy", Phase::Policies),
        ("policy", "PodDisruptionBudget", Phase::Policies),
        ("scheduling.k8s.io", "PriorityClass", Phase::Policies),
        ("", "ServiceAccount", Phase::Identity),
        ("", "Secret", Phase::Configuration),
        ("", "ConfigMap", Phase::Configuration),
        ("", "PersistentVolume", Phase::Storage),
        ("", "PersistentVolumeClaim", Phase::Storage),
        ("storage.k8s.io", "StorageClass", Phase::Storage),
        (
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            Phase::Crds,
        ),
        ("rbac.authorization.k8s.io", "ClusterRole", Phase::Roles),
        ("rbac.authorization.k8s.io", "Role", Phase::Roles),
        (
            "rbac.authorization.k8s.io",
            "ClusterRoleBinding",
            Phase::Bindings,
        ),
        ("rbac.authorization.k8s.io", "RoleBinding", Phase::Bindings),
        ("", "Service", Phase::Infrastructure),
        ("cert-manager.io", "Issuer", Phase::Infrastructure),
        ("cert-manager.io", "Certificate", Phase::Infrastructure),
        ("apps", "Deployment", Phase::Deploy),
        (
            "autoscaling.k8s.io",
            "VerticalPodAutoscaler",
            Phase::Scaling,
        ),
        ("monitoring.coreos.com", "PrometheusRule", Phase::Publish),
        ("monitoring.coreos.com", "ServiceMonitor", Phase::Publish),
        ("monitoring.coreos.com", "PodMonitor", Phase::Publish),
        ("networking.k8s.io", "Ingress", Phase::Publish),
        ("route.openshift.io", "Route", Phase::Publish),
        ("console.openshift.io", "ConsoleYAMLSample", Phase::Publish),
        ("console.openshift.io", "ConsoleQuickStart", Phase::Publish),
        ("console.openshift.io", "ConsoleCLIDownload", Phase::Publish),
        ("console.openshift.io", "ConsoleLink", Phase::Publish),
        ("console.openshift.io", "ConsolePlugin", Phase::Publish),
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration",
            Phase::Admission,
        ),
        (
            "admissionregistration.k8s.io",
            "MutatingWebhookConfiguration",
            Phase::Admission,
        ),
        // Not in the map: the group must match as well as the kind.
        ("apps", "StatefulSet", Phase::Deploy),
        ("", "Pod", Phase::Deploy),
        ("example.com", "Namespace", Phase::Deploy),
        ("", "Deployment", Phase::Deploy),
        ("extensions", "Ingress", Phase::Deploy),
    ];
    for (group, kind, want) in cases {
        assert_eq!(Phase::of(group, kind), want, "{group}/{kind}");
    }
    let names: Vec<&str> = Phase::ALL.iter().map(|p| p.as_str()).collect();
    assert_eq!(
        names,
        [
            "namespaces",
            "policies",
            "identity",
            "configuration",
            "storage",
            "crds",
            "roles",
            "bindings",
            "infrastructure",
            "deploy",
            "scaling",
            "publish",
            "admission"
        ]
    );
}

#[test]
fn input_order_does_not_matter() {
    let objects = vec![
        named("v1", "ConfigMap", "b", "ns"),
        named("apps/v1", "Deployment", "d", "ns"),
        named("v1", "ConfigMap", "a", "ns"),
        named("v1", "Namespace", "ns", ""),
        named("example.com/v1", "Widget", "w", "ns"),
    ];
    let mut reversed = objects.clone();
    reversed.reverse();
    assert_eq!(phase::sort(objects), phase::sort(reversed));
}

/// Expected values: Go's `json.Marshal(map[string]any{"name": …, "objects": …})` hashed with
/// SHA-256, as `computePhaseDigest` does, for the same objects (keys sorted at every level,
/// `<`/`&`/`>` and U+2028 escaped, 1e21 written `1e+21`).
#[test]
fn digest_matches_upstream_compute_phase_digest() {
    let rich = object(json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "spec": {"list": ["x", 1], "null": null, "int": 3, "float": 1.5, "big": 1e21, "bool": true},
        "metadata": {"namespace": "default", "name": "test-cm", "labels": {"z": "1", "a": "2"}},
        "data": {"line": "a\u{2028}b", "html": "<b&c>"},
    }));
    let p = phase(
        Phase::Deploy,
        vec![rich, named("v1", "ConfigMap", "cm-2", "default")],
    );
    let want = "sha256:00b2e2b8c65c587d40099d84473e4e7acac0ad01fcdd4e5f0f863a823297384b";
    assert_eq!(phase::digest(&p), want);
    let objects: Vec<&Map<String, Value>> =
        p.objects.iter().filter_map(|o| o.object.as_ref()).collect();
    assert_eq!(phase::digest_resolved("deploy", objects), want);

    let empty = phase(Phase::Crds, vec![]);
    assert_eq!(
        phase::digest(&empty),
        "sha256:d8c2913dde231bf73d2c07f8b4e288645dbf23f2d8e559b18b7631d1bc614ebf"
    );
}

#[test]
fn digest_changes_with_content_and_name() {
    let a = phase(Phase::Deploy, vec![named("v1", "ConfigMap", "a", "ns")]);
    let b = phase(Phase::Deploy, vec![named("v1", "ConfigMap", "b", "ns")]);
    let renamed = ClusterObjectSetPhase {
        name: "other".to_owned(),
        ..a.clone()
    };
    assert_ne!(phase::digest(&a), phase::digest(&b));
    assert_ne!(phase::digest(&a), phase::digest(&renamed));
    // An unresolved ref never digests like the object it stands for.
    let unresolved = ClusterObjectSetPhase {
        objects: vec![ClusterObjectSetObject {
            object: None,
            ref_: Some(olm_api::ObjectSourceRef {
                name: "s".into(),
                namespace: None,
                key: "k".into(),
            }),
            collision_protection: None,
        }],
        ..a.clone()
    };
    assert_ne!(phase::digest(&a), phase::digest(&unresolved));
    assert!(phase::digest(&a).starts_with("sha256:"));
    assert_eq!(phase::digest(&a).len(), 7 + 64);
}
