//! Deployments built from a CSV's install strategy: the OLM repo's vectors
//! (`pkg/controller/install/deployment_test.go`) as far as they do not test its fake clients,
//! then real bundles from `../shared/data/bundles` (flux, six Deployments; the
//! multicluster-operators-subscription operator, one Deployment of three containers).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;

use olm_goenc::yamlread::{Options, parse_document_with};
use olm_v0::olm_operator::inject::{Overrides, SubscriptionConfig};
use olm_v0::olm_operator::strategy::{
    CsvOwner, SPEC_HASH_LABEL, StrategyDeployment, StrategyError, deployment_for_spec,
    orphaned_deployments, owner_labels, spec_hash, strategy_deployments,
};
use olm_v0_api::v1alpha1::ClusterServiceVersion;
use serde_json::{Map, Value, json};

/// The CSV upstream's tests own their Deployments with: no uid, so references carry `""`.
fn mock_owner() -> CsvOwner {
    CsvOwner {
        name: "clusterserviceversion-owner".into(),
        namespace: "olm-test-deployment".into(),
        ..CsvOwner::default()
    }
}

/// Upstream's `mockOwnerRefs`.
fn mock_owner_refs() -> Value {
    json!([{
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "name": "clusterserviceversion-owner",
        "uid": "",
        "controller": false,
        "blockOwnerDeletion": false,
    }])
}

fn entry(name: &str, spec: Value, label: &[(&str, &str)]) -> StrategyDeployment {
    StrategyDeployment {
        name: name.into(),
        spec: spec.as_object().unwrap().clone(),
        label: label
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    }
}

fn build(owner: &CsvOwner, e: &StrategyDeployment) -> Value {
    deployment_for_spec(owner, e, Overrides::default())
        .unwrap()
        .deployment
}

/// Upstream `TestInstallStrategyDeploymentInstallDeployments`, case "updates/creates
/// correctly": each Deployment gets the non-blocking owner reference, the owner labels (and
/// the entry's own), and a revision history of one whatever the bundle asked.
#[test]
fn install_strategy_deployment_install_deployments() {
    let owner = mock_owner();
    let entries = [
        entry(
            "test-deployment-1",
            json!({"revisionHistoryLimit": 10}),
            &[],
        ),
        entry(
            "test-deployment-2",
            json!({"revisionHistoryLimit": null}),
            &[],
        ),
        entry("test-deployment-3", json!({}), &[]),
        entry(
            "test-deployment-4",
            json!({}),
            &[("custom-label", "custom-label-value")],
        ),
    ];
    for e in &entries {
        let d = build(&owner, e);
        assert_eq!(d["metadata"]["name"], json!(e.name));
        assert_eq!(d["metadata"]["namespace"], json!("olm-test-deployment"));
        assert_eq!(
            d["metadata"]["ownerReferences"],
            mock_owner_refs(),
            "{}",
            e.name
        );
        let labels = &d["metadata"]["labels"];
        assert_eq!(labels["olm.owner"], json!("clusterserviceversion-owner"));
        assert_eq!(labels["olm.owner.namespace"], json!("olm-test-deployment"));
        if e.name == "test-deployment-4" {
            assert_eq!(labels["custom-label"], json!("custom-label-value"));
        }
        assert_eq!(d["spec"]["revisionHistoryLimit"], json!(1), "{}", e.name);
    }
}

/// A CSV as the API server hands it over, from its JSON.
fn typed(csv: Value) -> ClusterServiceVersion {
    serde_json::from_value(csv).unwrap()
}

/// A CSV of `name` in `ns` whose install strategy is `install`.
fn csv_with(install: Value) -> ClusterServiceVersion {
    typed(json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": "op.v1", "namespace": "ns"},
        "spec": {"displayName": "op", "install": install},
    }))
}

/// Upstream `TestNewStrategyDeploymentInstaller`: a strategy other than `deployment` is
/// refused, with upstream's message.
#[test]
fn new_strategy_deployment_installer() {
    let csv = csv_with(json!({"strategy": "bad", "spec": {"deployments": []}}));
    let err = strategy_deployments(&csv.spec.install).unwrap_err();
    assert_eq!(err, StrategyError::Unrecognized { name: "bad".into() });
    assert_eq!(err.to_string(), "unrecognized install strategy");
    assert!(matches!(
        strategy_deployments(&csv_with(json!({"strategy": ""})).spec.install),
        Err(StrategyError::Unrecognized { name }) if name.is_empty()
    ));
}

/// Upstream `TestInstallStrategyDeploymentCheckInstallErrors`, case "ErrorCreatingDeployment":
/// the Deployment handed to the client is exactly upstream's `testDeployment` with the CSV's
/// annotation on its pod template, a revision history of one, `olm.managed` and the spec hash
/// label (the hash being this implementation's; see `spec_hash`).
#[test]
fn install_strategy_deployment_check_install_errors() {
    let mut owner = mock_owner();
    owner.annotations = BTreeMap::from([("test".to_owned(), "annotation".to_owned())]);
    let built = deployment_for_spec(
        &owner,
        &entry("olm-dep-1", json!({}), &[]),
        Overrides::default(),
    )
    .unwrap();
    let spec = json!({
        "template": {"metadata": {"annotations": {"test": "annotation"}}},
        "revisionHistoryLimit": 1,
    });
    let hash = spec_hash(&spec);
    let want = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "olm-dep-1",
            "namespace": "olm-test-deployment",
            "labels": {
                "olm.owner": "clusterserviceversion-owner",
                "olm.owner.namespace": "olm-test-deployment",
                "olm.owner.kind": "ClusterServiceVersion",
                "olm.managed": "true",
                "olm.deployment-spec-hash": hash,
            },
            "ownerReferences": mock_owner_refs(),
        },
        "spec": spec,
    });
    assert_eq!(built.deployment, want);
    assert_eq!(built.spec_hash, hash);
}

/// An existing Deployment as upstream's cleanup tests list them, with the owner's labels.
fn owned(name: &str, uid: &str, labels: Value) -> Value {
    json!({"metadata": {
        "name": name,
        "namespace": "olm-test-deployment",
        "ownerReferences": [{
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "name": "clusterserviceversion-owner",
            "uid": uid,
            "controller": false,
            "blockOwnerDeletion": false,
        }],
        "labels": labels,
    }})
}

fn owner_label_values() -> Value {
    json!({
        "olm.owner": "clusterserviceversion-owner",
        "olm.owner.namespace": "olm-test-deployment",
        "olm.owner.kind": "ClusterServiceVersion",
    })
}

/// Upstream `TestInstallStrategyDeploymentCleanupDeployments`. Its fake client returns a
/// Deployment without the `olm.owner.kind` label, which the label query upstream makes would
/// never list; the vector adds it, since the query is made here. Its last two cases test the
/// client's list and delete errors, which are the shell's.
#[test]
fn install_strategy_deployment_cleanup_deployments() {
    let owner = mock_owner();
    let strategy = [entry("test-deployment-1", json!({}), &[])];

    // "cleanup successfully"
    let existing = [owned("test-deployment-2", "", owner_label_values())];
    assert_eq!(
        orphaned_deployments(&owner, &strategy, &existing).unwrap(),
        ["test-deployment-2"]
    );

    // "cleanup unsuccessfully as no orphaned deployments found"
    assert!(
        orphaned_deployments(&owner, &strategy, &[])
            .unwrap()
            .is_empty()
    );
}

/// What is not the CSV's, or still wanted, is kept: a Deployment in the strategy, one missing
/// an owner label (upstream's fake-client vector as it was), one owned by another uid, one of
/// another namespace.
#[test]
fn cleanup_keeps_what_is_not_an_orphan() {
    let mut owner = mock_owner();
    owner.uid = "uid-1".into();
    let strategy = [entry("wanted", json!({}), &[])];
    let mut other_namespace = owned("elsewhere", "uid-1", owner_label_values());
    other_namespace["metadata"]["namespace"] = json!("other");
    let existing = [
        owned("wanted", "uid-1", owner_label_values()),
        owned(
            "no-kind-label",
            "uid-1",
            json!({"olm.owner": "clusterserviceversion-owner", "olm.owner.namespace": "olm-test-deployment"}),
        ),
        owned("older-csv-uid", "uid-0", owner_label_values()),
        other_namespace,
        owned("zz-orphan", "uid-1", owner_label_values()),
        owned("an-orphan", "uid-1", owner_label_values()),
    ];
    assert_eq!(
        orphaned_deployments(&owner, &strategy, &existing).unwrap(),
        ["an-orphan", "zz-orphan"]
    );
    assert_eq!(
        owner_labels(&owner),
        serde_json::from_value::<BTreeMap<String, String>>(owner_label_values()).unwrap()
    );
}

/// The hash's text is pinned: keys sorted at every level, compact, Go's default escaping of
/// `<`, `>` and `&`, a trailing newline, then base-62 SHA-224 (digests computed independently
/// of this code).
#[test]
fn spec_hash_text_is_pinned() {
    // base62(sha224(b'{"a":"\u003cx\u003e \u0026","b":{"c":[1,true,null],"d":2}}\n'))
    assert_eq!(
        spec_hash(&json!({"b": {"d": 2, "c": [1, true, null]}, "a": "<x> &"})),
        "9Jl5rbO1snNQ5HLt6zuXfEcHUB5BcvyEVkc34R"
    );
    // base62(sha224(b'{}\n'))
    assert_eq!(
        spec_hash(&json!({})),
        "4JmfNSKty2gqXbrQg2UonZs2626R3g4xHXikSh"
    );
}

// --- Real bundles -----------------------------------------------------------------------------

fn bundle_csv(relative: &str) -> ClusterServiceVersion {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/bundles")
        .join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut csv = parse_document_with(&text, &Options::default()).unwrap();
    // What the API server adds once the CSV is created.
    let meta = csv["metadata"].as_object_mut().unwrap();
    meta.insert("namespace".into(), json!("operators"));
    meta.insert("uid".into(), json!("5f1c6e9a-0000-4000-8000-000000000001"));
    typed(csv)
}

fn flux() -> ClusterServiceVersion {
    bundle_csv("flux/2.3.0/manifests/flux.v2.3.0.clusterserviceversion.yaml")
}

fn pod_spec(d: &Value) -> &Map<String, Value> {
    d["spec"]["template"]["spec"].as_object().unwrap()
}

/// Every flux Deployment: named as its entry, in the CSV's namespace, labelled with its own
/// labels plus OLM's, pod annotations = the template's plus every CSV annotation, the
/// operator-condition variable last in each container, one kept revision, and a hash label
/// that is the hash of the spec written. The six hashes differ; a second build is identical.
#[test]
fn flux_deployments() {
    let csv = flux();
    let owner = CsvOwner::from_csv(&csv).unwrap();
    let entries = strategy_deployments(&csv.spec.install).unwrap();
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "helm-controller",
            "image-automation-controller",
            "image-reflector-controller",
            "kustomize-controller",
            "notification-controller",
            "source-controller",
        ]
    );
    let csv_annotations = csv.metadata.annotations.as_ref().unwrap();
    assert!(csv_annotations.contains_key("alm-examples"));

    let mut hashes = std::collections::BTreeSet::new();
    for e in &entries {
        let built = deployment_for_spec(&owner, e, Overrides::default()).unwrap();
        let d = &built.deployment;
        assert_eq!(d["metadata"]["name"], json!(e.name));
        assert_eq!(d["metadata"]["namespace"], json!("operators"));
        assert_eq!(
            d["metadata"]["ownerReferences"][0]["uid"],
            json!("5f1c6e9a-0000-4000-8000-000000000001")
        );

        let labels = d["metadata"]["labels"].as_object().unwrap();
        for (k, v) in &e.label {
            assert_eq!(labels[k], json!(v), "{} {k}", e.name);
        }
        assert_eq!(labels["app.kubernetes.io/part-of"], json!("flux"));
        assert_eq!(labels["olm.managed"], json!("true"));
        assert_eq!(labels["olm.owner"], json!("flux.v2.3.0"));
        assert_eq!(labels["olm.owner.kind"], json!("ClusterServiceVersion"));
        assert_eq!(labels.len(), e.label.len() + 5);

        let annotations = d["spec"]["template"]["metadata"]["annotations"]
            .as_object()
            .unwrap();
        assert_eq!(annotations["prometheus.io/scrape"], json!("true"));
        for (k, v) in csv_annotations {
            assert_eq!(annotations[k], json!(v), "{} {k}", e.name);
        }
        assert_eq!(annotations.len(), csv_annotations.len() + 2);

        let original = e.spec["template"]["spec"]["containers"].as_array().unwrap();
        let containers = pod_spec(d)["containers"].as_array().unwrap();
        assert_eq!(containers.len(), original.len());
        for (c, o) in containers.iter().zip(original) {
            let env = c["env"].as_array().unwrap();
            let before = o["env"].as_array().unwrap();
            assert_eq!(env[..before.len()], before[..]);
            assert_eq!(
                env[before.len()..],
                [json!({"name": "OPERATOR_CONDITION_NAME", "value": "flux.v2.3.0"})]
            );
        }
        assert_eq!(d["spec"]["revisionHistoryLimit"], json!(1));
        assert_eq!(d["spec"]["replicas"], e.spec["replicas"]);
        assert_eq!(d["spec"]["selector"], e.spec["selector"]);

        assert_eq!(labels[SPEC_HASH_LABEL], json!(built.spec_hash));
        assert_eq!(built.spec_hash, spec_hash(&d["spec"]));
        assert!(hashes.insert(built.spec_hash.clone()));
        assert_eq!(
            deployment_for_spec(&owner, e, Overrides::default()).unwrap(),
            built
        );
    }
    assert_eq!(hashes.len(), 6);
}

/// Every CSV annotation reaches the pod template, so changing any of them (here
/// `alm-examples`) changes the spec hash and rolls the operator's pods — upstream's behaviour,
/// kept.
#[test]
fn a_csv_annotation_change_changes_the_hash() {
    let csv = flux();
    let mut owner = CsvOwner::from_csv(&csv).unwrap();
    let e = &strategy_deployments(&csv.spec.install).unwrap()[0];
    let before = deployment_for_spec(&owner, e, Overrides::default()).unwrap();
    owner.annotations.insert("alm-examples".into(), "[]".into());
    let after = deployment_for_spec(&owner, e, Overrides::default()).unwrap();
    assert_ne!(before.spec_hash, after.spec_hash);
}

/// A Subscription config on a real Deployment: the author's variable keeps its place with the
/// administrator's value, and the config's fields change the hash.
#[test]
fn flux_with_a_subscription_config() {
    let csv = flux();
    let owner = CsvOwner::from_csv(&csv).unwrap();
    let e = &strategy_deployments(&csv.spec.install).unwrap()[5];
    assert_eq!(e.name, "source-controller");
    let config = SubscriptionConfig::from_config(&json!({
        "env": [{"name": "RUNTIME_NAMESPACE", "value": "flux-system"}],
        "tolerations": [{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}],
        "nodeSelector": {"node-role.kubernetes.io/infra": ""},
        "annotations": {"prometheus.io/scrape": "false", "team": "platform"},
    }))
    .unwrap();
    let plain = deployment_for_spec(&owner, e, Overrides::default()).unwrap();
    let built = deployment_for_spec(
        &owner,
        e,
        Overrides {
            config: Some(&config),
            proxy: None,
        },
    )
    .unwrap();
    let d = &built.deployment;
    let env = d["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap();
    let names: Vec<&str> = env.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "RUNTIME_NAMESPACE",
            "TUF_ROOT",
            "GOMAXPROCS",
            "GOMEMLIMIT",
            "OPERATOR_CONDITION_NAME"
        ]
    );
    assert_eq!(
        env[0],
        json!({"name": "RUNTIME_NAMESPACE", "value": "flux-system"})
    );
    assert_eq!(
        pod_spec(d)["nodeSelector"],
        json!({"node-role.kubernetes.io/infra": ""})
    );
    assert_eq!(
        pod_spec(d)["tolerations"],
        json!([{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}])
    );
    // Annotations never overwrite: the template's scrape annotation stays.
    let annotations = &d["spec"]["template"]["metadata"]["annotations"];
    assert_eq!(annotations["prometheus.io/scrape"], json!("true"));
    assert_eq!(annotations["team"], json!("platform"));
    assert_eq!(
        d["metadata"]["annotations"],
        json!({"prometheus.io/scrape": "false", "team": "platform"})
    );
    assert_ne!(built.spec_hash, plain.spec_hash);
    assert_eq!(built.spec_hash, spec_hash(&d["spec"]));
}

/// Upgrading to a CSV whose strategy drops a Deployment leaves that one (and only that one) to
/// delete.
#[test]
fn flux_orphans_after_a_deployment_is_dropped() {
    let csv = flux();
    let owner = CsvOwner::from_csv(&csv).unwrap();
    let entries = strategy_deployments(&csv.spec.install).unwrap();
    let existing: Vec<Value> = entries.iter().map(|e| build(&owner, e)).collect();
    assert!(
        orphaned_deployments(&owner, &entries, &existing)
            .unwrap()
            .is_empty()
    );
    let fewer: Vec<StrategyDeployment> = entries
        .iter()
        .filter(|e| e.name != "image-automation-controller")
        .cloned()
        .collect();
    assert_eq!(
        orphaned_deployments(&owner, &fewer, &existing).unwrap(),
        ["image-automation-controller"]
    );
}

/// Every container of a multi-container Deployment gets the variable; a config's affinity
/// with empty pod parts removes the author's pod anti-affinity and nothing else.
#[test]
fn multicluster_containers_and_affinity() {
    let csv = bundle_csv(
        "multicluster-operators-subscription/0.4.1/manifests/multicluster-operators-subscription.v0.4.1.clusterserviceversion.yaml",
    );
    let owner = CsvOwner::from_csv(&csv).unwrap();
    let entries = strategy_deployments(&csv.spec.install).unwrap();
    assert_eq!(entries.len(), 5);
    let application = &entries[0];
    assert_eq!(application.name, "multicluster-operators-application");
    let d = build(&owner, application);
    let containers = pod_spec(&d)["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 3);
    for c in containers {
        let env = c["env"].as_array().unwrap();
        assert_eq!(
            env.last().unwrap(),
            &json!({"name": "OPERATOR_CONDITION_NAME", "value": owner.name})
        );
    }

    let channel = &entries[1];
    let authored = channel.spec["template"]["spec"]["affinity"].clone();
    assert!(authored["podAntiAffinity"].is_object());
    let config = SubscriptionConfig::from_config(&json!({
        "affinity": {"podAffinity": {}, "podAntiAffinity": {}},
    }))
    .unwrap();
    let d = deployment_for_spec(
        &owner,
        channel,
        Overrides {
            config: Some(&config),
            proxy: None,
        },
    )
    .unwrap()
    .deployment;
    assert!(!pod_spec(&d).contains_key("affinity"));

    let node = json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]},
    ]}});
    let config =
        SubscriptionConfig::from_config(&json!({"affinity": {"nodeAffinity": node}})).unwrap();
    let d = deployment_for_spec(
        &owner,
        channel,
        Overrides {
            config: Some(&config),
            proxy: None,
        },
    )
    .unwrap()
    .deployment;
    assert_eq!(
        pod_spec(&d)["affinity"],
        json!({"podAntiAffinity": authored["podAntiAffinity"], "nodeAffinity": node})
    );
}

/// A malformed strategy is an error naming the place in the CSV or Deployment.
#[test]
fn malformed_strategy_names_the_place() {
    let csv = csv_with(json!({"strategy": "deployment", "spec": {"deployments": [
        {"name": "ok", "spec": {"selector": {}, "template": {}}},
        {"name": "", "spec": {"selector": {}, "template": {}}},
    ]}}));
    assert_eq!(
        strategy_deployments(&csv.spec.install)
            .unwrap_err()
            .to_string(),
        "spec.install.spec.deployments[1].name: expected a non-empty string, found an empty string"
    );
    // An entry without a name, or a label that is not a string, is refused when the CSV is
    // read, before any decision sees it.
    for entry in [
        json!({"spec": {"selector": {}, "template": {}}}),
        json!({"name": "op", "spec": {"selector": {}, "template": {}}, "label": {"a": 1}}),
    ] {
        let csv = json!({
            "metadata": {"name": "op.v1", "namespace": "ns"},
            "spec": {"displayName": "op", "install": {"strategy": "deployment", "spec": {"deployments": [entry]}}},
        });
        assert!(serde_json::from_value::<ClusterServiceVersion>(csv).is_err());
    }
    let mut csv = csv_with(json!({"strategy": "deployment"}));
    csv.metadata.namespace = None;
    assert_eq!(
        CsvOwner::from_csv(&csv).unwrap_err().to_string(),
        "metadata.namespace: expected a string, found nothing"
    );

    csv.metadata.namespace = Some("ns".into());
    let owner = CsvOwner::from_csv(&csv).unwrap();
    let bad_env = entry(
        "op",
        json!({"template": {"spec": {"containers": [{"name": "a"}, {"env": "x"}]}}}),
        &[],
    );
    assert_eq!(
        deployment_for_spec(&owner, &bad_env, Overrides::default())
            .unwrap_err()
            .to_string(),
        "spec.template.spec.containers[1].env: expected an array, found a string"
    );
    let bad_annotations = entry(
        "op",
        json!({"template": {"metadata": {"annotations": ["x"]}}}),
        &[],
    );
    assert_eq!(
        deployment_for_spec(&owner, &bad_annotations, Overrides::default())
            .unwrap_err()
            .to_string(),
        "spec.template.metadata.annotations: expected an object, found an array"
    );
}

/// A container that already sets the operator-condition variable gets the CSV's name in its
/// place.
#[test]
fn operator_condition_variable_replaces_the_authors() {
    let owner = mock_owner();
    let e = entry(
        "op",
        json!({"template": {"spec": {"containers": [{"name": "a", "env": [
            {"name": "OPERATOR_CONDITION_NAME", "value": "stale"},
            {"name": "X", "value": "1"},
        ]}]}}}),
        &[],
    );
    assert_eq!(
        build(&owner, &e)["spec"]["template"]["spec"]["containers"][0]["env"],
        json!([
            {"name": "OPERATOR_CONDITION_NAME", "value": "clusterserviceversion-owner"},
            {"name": "X", "value": "1"},
        ])
    );
}
