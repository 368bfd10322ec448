//! Status writes on a real control plane (`olm-testenv`): a status the API server refuses for a
//! message ends up on the object in a shorter form that says so, not only in the log.
//!
//! The refusal is made with a CRD of its own whose condition messages allow 4096 bytes: every
//! status olm writes is bounded to the 32768 bytes its own CRDs allow, so they never refuse
//! one for its length.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use olm_testenv::ControlPlane;
use serde_json::json;

const GROUP: &str = "status.olm.test";

fn crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("probes.{GROUP}")},
        "spec": {
            "group": GROUP,
            "names": {"kind": "Probe", "listKind": "ProbeList", "plural": "probes", "singular": "probe"},
            "scope": "Cluster",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "status": {"type": "object", "properties": {
                        "phase": {"type": "string", "enum": ["Ok", "Failed"]},
                        "conditions": {"type": "array", "items": {"type": "object", "properties": {
                            "type": {"type": "string"},
                            "message": {"type": "string", "maxLength": 4096},
                        }}},
                    }},
                }}},
            }],
        },
    }))
    .expect("a CRD")
}

fn failed(message: &str) -> serde_json::Value {
    json!({"phase": "Failed", "conditions": [{"type": "Progressing", "message": message}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_status_is_written_shortened_and_says_why() {
    let plane = ControlPlane::start().await.expect("a control plane");
    let client = plane.client();
    olm_testenv::install_crds(&client, &[crd()], Duration::from_secs(60))
        .await
        .expect("the CRD");
    let resource = ApiResource {
        group: GROUP.into(),
        version: "v1".into(),
        api_version: format!("{GROUP}/v1"),
        kind: "Probe".into(),
        plural: "probes".into(),
    };
    let api: Api<DynamicObject> = Api::all_with(client, &resource);
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "Probe", "metadata": {"name": "p"},
    }))
    .expect("an object");
    api.create(&PostParams::default(), &object)
        .await
        .expect("created");

    // Too long for this CRD: refused, then written shortened, saying why.
    let long = format!("{}\u{0}", "install failed: ".repeat(600));
    let written = olm_runtime::status::patch(&api, "p", None, failed(&long))
        .await
        .expect("written shortened");
    let message = written.data["status"]["conditions"][0]["message"]
        .as_str()
        .expect("a message")
        .to_owned();
    assert_eq!(message.len(), olm_k8s::REFUSED_MESSAGE_LIMIT, "{message}");
    assert!(
        message.starts_with("install failed: install failed: "),
        "{message}"
    );
    assert!(
        message.contains(
            "[message shortened: the API server refused the status with the full message: "
        ) && message.contains("Too long: may not be more than 4096 bytes"),
        "{message}"
    );
    assert_eq!(
        written.data["status"]["phase"], "Failed",
        "the rest as decided"
    );

    // Writing the same again changes nothing: no new resourceVersion, so no watch event.
    let again = olm_runtime::status::patch(&api, "p", None, failed(&long))
        .await
        .expect("written shortened again");
    assert_eq!(
        again.metadata.resource_version,
        written.metadata.resource_version
    );

    // A refusal that is not about a message is returned as it is.
    let refused = olm_runtime::status::patch(&api, "p", None, json!({"phase": "Unknown"})).await;
    match refused {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422);
            assert!(s.message.contains("status.phase"), "{}", s.message);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}
