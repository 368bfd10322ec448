//! The committed CRDs on a real API server, written and read through the Rust types: every kind
//! is accepted and reads back as written, the defaults upstream's CRDs declare are filled in, a
//! CEL rule refuses with upstream's message, both served versions of a multi-version kind reach
//! the same objects, and an OperatorCondition override without a timestamp is accepted and read.
//!
//! Needs the control plane binaries from `tools/controlplane/build.sh`.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use kube::api::{Api, PostParams};
use kube::{Client, Resource};
use olm_testenv::ControlPlane;
use olm_v0_api::{v1, v1alpha1, v1alpha2, v2};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

const NS: &str = "default";

fn object<T: DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).unwrap()
}

/// Creates `obj` and returns what the API server stored.
async fn create<K>(api: &Api<K>, obj: &K) -> Result<K, String>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    api.create(&PostParams::default(), obj)
        .await
        .map_err(|e| match e {
            kube::Error::Api(status) => status.message,
            other => other.to_string(),
        })
}

fn csv(name: &str, release: Option<&str>) -> v1alpha1::ClusterServiceVersion {
    object(json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "displayName": "Demo",
            "version": "1.0.0",
            "release": release,
            "installModes": [{"type": "AllNamespaces", "supported": true}],
            "install": {
                "strategy": "deployment",
                "spec": {
                    "deployments": [{
                        "name": "demo",
                        "spec": {
                            "selector": {"matchLabels": {"app": "demo"}},
                            "template": {
                                "metadata": {"labels": {"app": "demo"}},
                                "spec": {"containers": [{
                                    "name": "demo",
                                    "image": "example.com/demo:1",
                                    "ports": [{"containerPort": 8080}],
                                }]},
                            },
                        },
                    }],
                },
            },
            "webhookdefinitions": [{
                "generateName": "vdemo.example.com",
                "type": "ValidatingAdmissionWebhook",
                "deploymentName": "demo",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }],
        },
    }))
}

async fn cluster_service_versions(client: &Client, failures: &mut Vec<String>) {
    let api: Api<v1alpha1::ClusterServiceVersion> = Api::namespaced(client.clone(), NS);
    match create(&api, &csv("demo.v1.0.0", Some("1.rc-2"))).await {
        Ok(stored) => {
            let webhook = &stored.spec.webhook_definitions[0];
            if webhook.container_port != Some(443) {
                failures.push(format!(
                    "webhook containerPort default: {:?}",
                    webhook.container_port
                ));
            }
            let deployment = &stored
                .spec
                .install
                .strategy_spec
                .as_ref()
                .unwrap()
                .deployment_specs[0]
                .spec;
            let labels = deployment
                .template
                .metadata
                .as_ref()
                .unwrap()
                .labels
                .as_ref();
            if labels.and_then(|l| l.get("app")).map(String::as_str) != Some("demo") {
                failures.push(format!("pod template labels pruned: {labels:?}"));
            }
            let port = &deployment.template.spec.as_ref().unwrap().containers[0]
                .ports
                .as_ref()
                .unwrap()[0];
            if port.protocol.as_deref() != Some("TCP") {
                failures.push(format!("container port protocol default: {port:?}"));
            }
            match api.get("demo.v1.0.0").await {
                Ok(read) if read.spec == stored.spec => {}
                Ok(read) => failures.push(format!("CSV reads back differently: {read:?}")),
                Err(e) => failures.push(format!("reading the CSV: {e}")),
            }
        }
        Err(e) => failures.push(format!("CSV refused: {e}")),
    }
    match create(&api, &csv("demo.v1.0.1", Some("01"))).await {
        Ok(_) => failures.push("release 01 admitted".into()),
        Err(e)
            if e.contains("numeric identifiers in release version must not have leading zeros") => {
        }
        Err(e) => failures.push(format!("release 01 refused for another reason: {e}")),
    }
}

async fn operator_groups(client: &Client, failures: &mut Vec<String>) {
    let v1alpha2: Api<v1alpha2::OperatorGroup> = Api::namespaced(client.clone(), NS);
    let v1: Api<v1::OperatorGroup> = Api::namespaced(client.clone(), NS);
    let og = v1alpha2::OperatorGroup::new(
        "old",
        v1alpha2::OperatorGroupSpec {
            target_namespaces: vec![NS.into()],
            ..Default::default()
        },
    );
    if let Err(e) = create(&v1alpha2, &og).await {
        failures.push(format!("v1alpha2 OperatorGroup refused: {e}"));
        return;
    }
    match v1.get("old").await {
        Ok(read) => {
            if read.spec.upgrade_strategy != Some(v1::UpgradeStrategy::Default) {
                failures.push(format!("upgradeStrategy default: {:?}", read.spec));
            }
            if read.spec.target_namespaces != [NS] {
                failures.push(format!("v1 reads another object: {:?}", read.spec));
            }
        }
        Err(e) => failures.push(format!("reading the OperatorGroup as v1: {e}")),
    }
}

async fn operator_conditions(client: &Client, failures: &mut Vec<String>) {
    let v2: Api<v2::OperatorCondition> = Api::namespaced(client.clone(), NS);
    let v1: Api<v1::OperatorCondition> = Api::namespaced(client.clone(), NS);
    let oc: v2::OperatorCondition = object(json!({
        "apiVersion": "operators.coreos.com/v2",
        "kind": "OperatorCondition",
        "metadata": {"name": "demo.v1.0.0", "namespace": NS},
        "spec": {
            "deployments": ["demo"],
            "overrides": [{
                "type": "Upgradeable",
                "status": "True",
                "reason": "UpgradeIsSafe",
                "message": "checked by hand",
            }],
        },
    }));
    if let Err(e) = create(&v2, &oc).await {
        failures.push(format!(
            "OperatorCondition with an untimed override refused: {e}"
        ));
        return;
    }
    match v1.get("demo.v1.0.0").await {
        Ok(read) if read.spec.overrides == oc.spec.overrides => {}
        Ok(read) => failures.push(format!("overrides read as v1: {:?}", read.spec.overrides)),
        Err(e) => failures.push(format!("reading the OperatorCondition as v1: {e}")),
    }
}

/// Creates `obj` and checks that it reads back with the spec it was written with.
async fn round_trip<K>(
    api: Api<K>,
    obj: K,
    spec: impl Fn(&K) -> serde_json::Value,
    failures: &mut Vec<String>,
) where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let kind = K::kind(&()).into_owned();
    let name = obj.meta().name.clone().unwrap_or_default();
    if let Err(e) = create(&api, &obj).await {
        failures.push(format!("{kind} refused: {e}"));
        return;
    }
    match api.get(&name).await {
        Ok(read) if spec(&read) == spec(&obj) => {}
        Ok(read) => failures.push(format!("{kind} reads back as {read:?}")),
        Err(e) => failures.push(format!("reading the {kind}: {e}")),
    }
}

#[tokio::test]
async fn crds_serve_every_kind_as_upstream_declares_it() {
    let plane = ControlPlane::start()
        .await
        .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
    let client = plane.client();
    let crds = olm_v0_api::manifests().unwrap();
    olm_testenv::install_crds(&client, &crds, Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("installing the CRDs: {e:#}"));

    let mut failures = Vec::new();
    cluster_service_versions(&client, &mut failures).await;
    operator_groups(&client, &mut failures).await;
    operator_conditions(&client, &mut failures).await;
    round_trip(
        Api::namespaced(client.clone(), NS),
        object::<v1alpha1::CatalogSource>(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "demo", "namespace": NS},
            "spec": {
                "sourceType": "grpc",
                "image": "example.com/catalog:latest",
                "priority": -100,
                "grpcPodConfig": {"securityContextConfig": "restricted", "memoryTarget": "30Mi"},
                "updateStrategy": {"registryPoll": {"interval": "10m"}},
            },
        })),
        |c| serde_json::to_value(&c.spec).unwrap(),
        &mut failures,
    )
    .await;
    round_trip(
        Api::namespaced(client.clone(), NS),
        object::<v1alpha1::Subscription>(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "demo", "namespace": NS},
            "spec": {
                "name": "demo", "source": "demo", "sourceNamespace": NS, "channel": "stable",
                "installPlanApproval": "Manual",
                "config": {"env": [{"name": "A", "value": "b"}], "nodeSelector": {"x": "y"}},
            },
        })),
        |s| serde_json::to_value(&s.spec).unwrap(),
        &mut failures,
    )
    .await;
    round_trip(
        Api::namespaced(client.clone(), NS),
        object::<v1alpha1::InstallPlan>(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
            "metadata": {"name": "install-demo", "namespace": NS},
            "spec": {
                "clusterServiceVersionNames": ["demo.v1.0.0"],
                "approval": "Automatic", "approved": true, "generation": 1,
            },
        })),
        |i| serde_json::to_value(&i.spec).unwrap(),
        &mut failures,
    )
    .await;
    round_trip(
        Api::all(client.clone()),
        v1::Operator::new("demo.default", v1::OperatorSpec {}),
        |o| serde_json::to_value(&o.spec).unwrap(),
        &mut failures,
    )
    .await;
    round_trip(
        Api::all(client.clone()),
        object::<v1::OLMConfig>(json!({
            "apiVersion": "operators.coreos.com/v1", "kind": "OLMConfig",
            "metadata": {"name": v1::OLM_CONFIG_NAME},
            "spec": {"features": {"disableCopiedCSVs": true, "packageServerSyncInterval": "5m"}},
        })),
        |c| serde_json::to_value(&c.spec).unwrap(),
        &mut failures,
    )
    .await;
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
