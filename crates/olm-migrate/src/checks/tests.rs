//! The checks against library-olm's: names, order and messages (`readiness.go`,
//! `compatibility.go`, `scan.go`, `catalog.go`), and its e2e `acknowledgment_test.go` rule that
//! each acknowledgement flips only its own checks and never a hard one.

use serde_json::json;

use super::*;

fn sub(status: serde_json::Value, annotations: serde_json::Value) -> Subscription {
    let mut status = status;
    status["lastUpdated"] = json!("2026-01-01T00:00:00Z");
    serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "etcd", "namespace": "ops", "annotations": annotations},
        "spec": {"name": "etcd", "source": "community", "sourceNamespace": "olm", "channel": "alpha"},
        "status": status,
    }))
    .expect("subscription")
}

fn steady() -> Subscription {
    sub(
        json!({"state": "AtLatestKnown", "installedCSV": "etcd.v0.9.4"}),
        json!({}),
    )
}

fn csv(spec: serde_json::Value, phase: &str, reason: &str) -> ClusterServiceVersion {
    let mut spec = spec;
    spec["displayName"] = json!("etcd");
    if spec.get("install").is_none() {
        spec["install"] = json!({"strategy": "deployment", "spec": {"deployments": []}});
    }
    if spec.get("installModes").is_none() {
        spec["installModes"] = json!([{"type": "AllNamespaces", "supported": true}]);
    }
    serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": "etcd.v0.9.4", "namespace": "ops", "annotations": {
            "operatorframework.io/properties":
                r#"{"properties":[{"type":"olm.package","value":{"packageName":"etcd","version":"0.9.4"}}]}"#}},
        "spec": spec,
        "status": {"phase": phase, "reason": reason},
    }))
    .expect("csv")
}

fn healthy() -> ClusterServiceVersion {
    csv(json!({"version": "0.9.2"}), "Succeeded", "InstallSucceeded")
}

fn group(spec: serde_json::Value, namespaces: serde_json::Value) -> OperatorGroup {
    serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "global", "namespace": "ops"},
        "spec": spec, "status": {"namespaces": namespaces, "lastUpdated": "2026-01-01T00:00:00Z"},
    }))
    .expect("operator group")
}

fn names(results: &[CheckResult]) -> Vec<&str> {
    results.iter().map(|c| c.name.as_str()).collect()
}

fn failed(results: &[CheckResult]) -> Vec<(&str, &str)> {
    results
        .iter()
        .filter(|c| !c.passed)
        .map(|c| (c.name.as_str(), c.message.as_str()))
        .collect()
}

fn ready(s: &Subscription, csv: Option<&ClusterServiceVersion>, acks: &Acks) -> Vec<CheckResult> {
    readiness(
        &Readiness {
            subscription: s,
            all_subscriptions: std::slice::from_ref(s),
            csv: Ok(csv),
            object_set_api: &ObjectSetApi::Established,
        },
        acks,
    )
}

#[test]
fn a_settled_operator_passes_every_readiness_check_in_order() {
    let s = steady();
    let results = ready(&s, Some(&healthy()), &Acks::default());
    assert_eq!(
        names(&results),
        [
            "ClusterObjectSet API",
            "Subscription state",
            "Installed CSV",
            "Not a dependency",
            "Package uniqueness",
            "CSV health"
        ]
    );
    assert!(failed(&results).is_empty(), "{results:?}");
    assert_eq!(results[1].message, "state is \"AtLatestKnown\"");
    assert_eq!(results[2].message, "etcd.v0.9.4");
    assert_eq!(
        results[4].message,
        "no other Subscription references package \"etcd\""
    );
    assert_eq!(
        results[5].message,
        "phase: Succeeded, reason: InstallSucceeded"
    );
}

#[test]
fn readiness_failures_say_what_upstream_says() {
    let pending = sub(
        json!({"state": "UpgradeFailed"}),
        json!({"olm.generated-by": "install-x"}),
    );
    let other = sub(json!({}), json!({}));
    let mut other = other;
    other.metadata.namespace = Some("apps".into());
    let all = [pending.clone(), other];
    let results = readiness(
        &Readiness {
            subscription: &pending,
            all_subscriptions: &all,
            csv: Ok(None),
            object_set_api: &ObjectSetApi::Unreadable(
                "customresourcedefinitions.apiextensions.k8s.io \"clusterobjectsets.olm.operatorframework.io\" not found".into(),
            ),
        },
        &Acks::default(),
    );
    assert_eq!(
        failed(&results),
        [
            (
                "ClusterObjectSet API",
                "ClusterObjectSet CRD \"clusterobjectsets.olm.operatorframework.io\" is required before migration: customresourcedefinitions.apiextensions.k8s.io \"clusterobjectsets.olm.operatorframework.io\" not found"
            ),
            (
                "Subscription state",
                "must be \"AtLatestKnown\" or \"UpgradePending\", got \"UpgradeFailed\"; pass --acknowledge-not-steady-state to override"
            ),
            ("Installed CSV", "no installedCSV set"),
            (
                "Not a dependency",
                "olm.generated-by annotation present — operator is an OLMv0-managed dependency of another operator; do not migrate individually"
            ),
            (
                "Package uniqueness",
                "another Subscription apps/etcd references the same package \"etcd\""
            ),
        ]
    );
    let unsettled = csv(json!({}), "Installing", "InstallWaiting");
    let s = steady();
    assert_eq!(
        failed(&ready(&s, Some(&unsettled), &Acks::default())),
        [(
            "CSV health",
            "phase is \"Installing\", expected \"Succeeded\""
        )]
    );
    let replacing = csv(json!({}), "Succeeded", "NeedsReinstall");
    assert_eq!(
        failed(&ready(&s, Some(&replacing), &Acks::default())),
        [(
            "CSV health",
            "reason is \"NeedsReinstall\", expected \"InstallSucceeded\""
        )]
    );
    let acked = ready(
        &s,
        Some(&unsettled),
        &Acks {
            not_steady_state: true,
            ..Acks::default()
        },
    );
    assert!(failed(&acked).is_empty());
    assert_eq!(
        acked[5].message,
        "overridden: phase is \"Installing\" (not at steady state acknowledged)"
    );
    assert_eq!(
        failed(&readiness(
            &Readiness {
                subscription: &s,
                all_subscriptions: std::slice::from_ref(&s),
                csv: Err("connection refused"),
                object_set_api: &ObjectSetApi::NotEstablished,
            },
            &Acks {
                not_steady_state: true,
                ..Acks::default()
            },
        )),
        [
            (
                "ClusterObjectSet API",
                "ClusterObjectSet CRD \"clusterobjectsets.olm.operatorframework.io\" is not established"
            ),
            (
                "CSV health",
                "failed to get CSV etcd.v0.9.4: connection refused"
            ),
        ]
    );
}

fn compat(
    csv: &ClusterServiceVersion,
    groups: &[OperatorGroup],
    condition: Option<&OperatorCondition>,
    acks: &Acks,
) -> Vec<CheckResult> {
    compatibility(
        &Compatibility {
            csv,
            operator_groups: groups,
            operator_condition: condition,
        },
        acks,
    )
}

#[test]
fn an_all_namespaces_operator_passes_every_compatibility_check_in_order() {
    let results = compat(
        &healthy(),
        &[group(json!({}), json!([""]))],
        None,
        &Acks::default(),
    );
    assert_eq!(
        names(&results),
        [
            "No scoped ServiceAccount",
            "No namespace selector",
            "Upgrade strategy",
            "AllNamespaces mode",
            "AllNamespaces install mode supported",
            "No dependency resolution",
            "No APIService definitions",
            "No OperatorCondition usage",
            "OLMv0-API RBAC",
        ]
    );
    assert!(failed(&results).is_empty(), "{results:?}");
    assert_eq!(
        results[5].message,
        "no olm.package.required or olm.gvk.required properties"
    );
}

#[test]
fn each_acknowledgement_flips_only_its_own_checks() {
    let og = group(
        json!({"targetNamespaces": ["ops"], "serviceAccountName": "scoped",
            "upgradeStrategy": "TechPreviewUnsafeFailForward"}),
        json!(["ops"]),
    );
    let rbac = json!({"clusterPermissions": [{"serviceAccountName": "etcd", "rules": [
        {"apiGroups": ["operators.coreos.com"], "resources": ["subscriptions"], "verbs": ["get"]}]}],
        "deployments": []});
    let using = csv(
        json!({"install": {"strategy": "deployment", "spec": rbac}}),
        "Succeeded",
        "InstallSucceeded",
    );
    let condition: OperatorCondition = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v2", "kind": "OperatorCondition",
        "metadata": {"name": "etcd.v0.9.4", "namespace": "ops"},
        "spec": {}, "status": {"conditions": [{"type": "Upgradeable", "status": "False",
            "reason": "Migrating", "message": "busy", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
    }))
    .expect("condition");
    let none = compat(
        &using,
        std::slice::from_ref(&og),
        Some(&condition),
        &Acks::default(),
    );
    assert_eq!(
        failed(&none),
        [
            (
                "No scoped ServiceAccount",
                "OperatorGroup has spec.serviceAccountName set; OLMv1 does not support scoped service accounts"
            ),
            (
                "AllNamespaces mode",
                "OperatorGroup has spec.targetNamespaces set; operator must be in AllNamespaces mode for migration"
            ),
            (
                "Namespace scope change",
                "OperatorGroup targets namespace \"ops\"; post-migration the operator will run in AllNamespaces mode"
            ),
            (
                "No OperatorCondition usage",
                "OperatorCondition has status.conditions entries; operator actively uses the OperatorCondition API"
            ),
            (
                "OLMv0-API RBAC",
                "CSV clusterPermissions grant operators.coreos.com access without OLMv1 equivalent; pass --acknowledge-olmv0-api-access to override"
            ),
        ]
    );
    assert_eq!(
        none[2].message,
        "OperatorGroup upgradeStrategy \"TechPreviewUnsafeFailForward\" is not mapped to OLMv1 and will be ignored post-migration"
    );
    let cases: [(Acks, &[&str]); 4] = [
        (
            Acks {
                scoped_serviceaccount: true,
                ..Acks::default()
            },
            &["No scoped ServiceAccount"],
        ),
        (
            Acks {
                watch_scope_change: true,
                ..Acks::default()
            },
            &["AllNamespaces mode", "Namespace scope change"],
        ),
        (
            Acks {
                operator_condition: true,
                ..Acks::default()
            },
            &["No OperatorCondition usage"],
        ),
        (
            Acks {
                olmv0_api_access: true,
                ..Acks::default()
            },
            &["OLMv0-API RBAC"],
        ),
    ];
    for (acks, flipped) in cases {
        let results = compat(&using, std::slice::from_ref(&og), Some(&condition), &acks);
        let still: Vec<&str> = failed(&results).iter().map(|(n, _)| *n).collect();
        let expected: Vec<&str> = failed(&none)
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| !flipped.contains(n))
            .collect();
        assert_eq!(still, expected, "{acks:?}");
        for c in results
            .iter()
            .filter(|c| flipped.contains(&c.name.as_str()))
        {
            assert!(c.message.starts_with("overridden: "), "{c:?}");
        }
    }
}

#[test]
fn hard_checks_hold_whatever_is_acknowledged() {
    let all = Acks {
        watch_scope_change: true,
        operator_condition: true,
        olmv0_api_access: true,
        scoped_serviceaccount: true,
        not_steady_state: true,
    };
    assert_eq!(
        all.flags(),
        [
            "watch-scope-change",
            "operator-condition",
            "olmv0-api-access",
            "scoped-serviceaccount",
            "not-steady-state"
        ]
    );
    let mut own = csv(
        json!({"installModes": [{"type": "OwnNamespace", "supported": true},
                {"type": "AllNamespaces", "supported": false}],
            "apiservicedefinitions": {"owned": [{"name": "hats", "group": "hats.io",
                "version": "v1", "kind": "Hat", "deploymentName": "hats"}]}}),
        "Succeeded",
        "InstallSucceeded",
    );
    own.metadata.annotations = Some(std::collections::BTreeMap::from([(
        PROPERTIES_ANNOTATION.to_owned(),
        r#"[{"type":"olm.package.required","value":{"packageName":"db","versionRange":">=1.0.0"}},{"type":"olm.gvk.required","value":{"group":"db.io","kind":"DB","version":"v1"}}]"#.to_owned(),
    )]));
    assert!(requires_package(&own, "db"));
    assert!(!requires_package(&own, "etcd"));
    let results = compat(&own, &[], None, &all);
    assert_eq!(
        failed(&results),
        [
            (
                "OperatorGroup exists",
                "no OperatorGroup found in namespace ops"
            ),
            (
                "AllNamespaces install mode supported",
                "CSV does not declare AllNamespaces install mode as supported; --acknowledge-watch-scope-change cannot override bundle capabilities"
            ),
            (
                "No dependency resolution",
                r#"bundle declares olm.package.required dependency: {"packageName":"db","versionRange":">=1.0.0"}"#
            ),
            (
                "No dependency resolution",
                r#"bundle declares olm.gvk.required dependency: {"group":"db.io","kind":"DB","version":"v1"}"#
            ),
            (
                "No APIService definitions",
                "CSV has spec.apiservicedefinitions.owned set; OLMv1 does not yet fully support APIService-based operators"
            ),
        ]
    );
    own.metadata.annotations = Some(std::collections::BTreeMap::from([(
        PROPERTIES_ANNOTATION.to_owned(),
        "{not json".to_owned(),
    )]));
    let results = compat(&own, &[], None, &all);
    assert!(
        results
            .iter()
            .any(|c| c.message.starts_with("failed to parse bundle properties: ")),
        "{results:?}"
    );
}

#[test]
fn both_olm_apis_in_the_rbac_pass_and_versions_come_from_the_properties() {
    let both = json!({"clusterPermissions": [{"serviceAccountName": "etcd", "rules": [
        {"apiGroups": ["operators.coreos.com"], "resources": ["*"], "verbs": ["get"]},
        {"apiGroups": ["olm.operatorframework.io"], "resources": ["clusterextensions"], "verbs": ["get"]}]}],
        "deployments": []});
    let c = csv(
        json!({"install": {"strategy": "deployment", "spec": both}}),
        "Succeeded",
        "InstallSucceeded",
    );
    let results = compat(&c, &[group(json!({}), json!([""]))], None, &Acks::default());
    assert_eq!(
        results.last().map(|r| r.message.as_str()),
        Some(
            "CSV clusterPermissions grant both OLMv0 and OLMv1 API access (updated for compatibility)"
        )
    );
    assert_eq!(installed_version(&healthy()), "0.9.4");
    let mut bare = healthy();
    bare.metadata.annotations = None;
    assert_eq!(installed_version(&bare), "0.9.2");
}

#[test]
fn catalog_sources_that_cannot_move_and_where_the_operator_resolves() {
    let s = steady();
    let source = |v: serde_json::Value| -> CatalogSource {
        serde_json::from_value(json!({"apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "CatalogSource", "metadata": {"name": "community", "namespace": "olm"},
            "spec": v}))
        .expect("source")
    };
    assert_eq!(
        catalog_source(
            &s,
            ("olm", "community"),
            Ok(&source(
                json!({"sourceType": "grpc", "image": "quay.io/c:1"})
            ))
        ),
        None
    );
    assert_eq!(
        catalog_source(
            &s,
            ("olm", "community"),
            Ok(&source(
                json!({"sourceType": "configmap", "configMap": "cm"})
            ))
        ),
        Some(CheckResult::fail(
            "CatalogSource type",
            "subscription ops/etcd references non-image CatalogSource olm/community (sourceType \"configmap\", spec.image \"\"); only grpc CatalogSources with spec.image can be migrated"
        ))
    );
    assert_eq!(
        catalog_source(
            &s,
            ("olm", "community"),
            Err("catalogsources.operators.coreos.com \"community\" not found")
        ),
        Some(CheckResult::fail(
            "CatalogSource type",
            "subscription ops/etcd references CatalogSource olm/community: catalogsources.operators.coreos.com \"community\" not found"
        ))
    );

    let offer = |catalog: &str, priority: i32, version: bool| CatalogOffer {
        catalog: catalog.into(),
        priority,
        package: true,
        version,
        channel: true,
    };
    let offers = [
        offer("a", 0, true),
        offer("b", 5, false),
        offer("c", 5, true),
        offer("d", 5, true),
    ];
    assert_eq!(
        resolve_catalog(&offers, "etcd", "0.9.4", "alpha"),
        Ok("c".into())
    );
    let none = resolve_catalog(&offers[1..2], "etcd", "0.9.4", "alpha");
    assert_eq!(
        none,
        Err("package \"etcd\" at version \"0.9.4\" in channel \"alpha\" not found in any serving ClusterCatalog (queried: [b])".into())
    );
    assert_eq!(
        resolve_catalog(&[], "etcd", "0.9.4", ""),
        Err("package \"etcd\" at version \"0.9.4\" not found in any serving ClusterCatalog".into())
    );
    assert_eq!(
        catalog_availability("etcd", &none).message,
        "No ClusterCatalog found for package \"etcd\"; run olm migrate catalogs first: package \"etcd\" at version \"0.9.4\" in channel \"alpha\" not found in any serving ClusterCatalog (queried: [b])"
    );
    assert_eq!(
        catalog_availability("etcd", &Ok("c".into())).message,
        "package available in ClusterCatalog c"
    );
}
