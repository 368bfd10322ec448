//! The ServiceAccount preflight on a real control plane, with the webhook-operator bundle of
//! upstream's regression data as the objects: a missing ServiceAccount is its own error; an
//! account with no rights gets one message listing every permission; one that may manage the
//! objects but not grant the bundle's ClusterRole rules is refused only those, and the API
//! server's own escalation check agrees when the account tries; granting `escalate` and `bind`
//! makes the preflight pass, and the account, through the impersonating client, then applies
//! every object itself.
//!
//! Needs the control plane binaries from `tools/controlplane/build.sh`.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod webhook_bundle;

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::{Client, ResourceExt};
use olm_cluster::permissions::{PreflightError, impersonating_client, preflight};
use olm_testenv::ControlPlane;
use serde_json::{Value, json};

const NS: &str = "webhook-system";
const SA: &str = "installer";

async fn grant(client: &Client, name: &str, rules: Value) {
    let role: ClusterRole = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": name}, "rules": rules,
    }))
    .unwrap();
    Api::<ClusterRole>::all(client.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": NS}],
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

/// Applies `obj` as the client's identity; the API server's answer.
async fn apply_as(client: &Client, obj: &Value) -> Result<(), kube::Error> {
    let api_version = obj["apiVersion"].as_str().unwrap();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, obj["kind"].as_str().unwrap());
    let (ar, caps) = kube::discovery::pinned_kind(client, &gvk).await?;
    let api: Api<DynamicObject> = match caps.scope {
        kube::discovery::Scope::Namespaced => Api::namespaced_with(client.clone(), NS, &ar),
        kube::discovery::Scope::Cluster => Api::all_with(client.clone(), &ar),
    };
    let name = obj["metadata"]["name"].as_str().unwrap();
    api.patch(
        name,
        &PatchParams::apply("preflight-test").force(),
        &Patch::Apply(obj),
    )
    .await
    .map(|_| ())
}

fn denied(r: Result<(), PreflightError>) -> String {
    match r {
        Err(PreflightError::Denied(d)) => d.to_string(),
        other => panic!("wanted a denial, got {other:?}"),
    }
}

#[tokio::test]
async fn preflight_lists_every_missing_permission_then_passes_once_granted() {
    let plane = ControlPlane::start().await.expect("control plane");
    let client = plane.client();
    let cache = tempfile::tempdir().unwrap();
    let shared = webhook_bundle::shared_for(&plane, cache.path()).await;
    let objs = webhook_bundle::rendered(NS);
    Api::<Namespace>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NS}})).unwrap(),
        )
        .await
        .unwrap();

    // No ServiceAccount.
    let err = preflight(&shared, NS, SA, &objs).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "service account \"installer\" not found in namespace \"webhook-system\""
    );

    // A ServiceAccount without rights: everything is listed, in one message.
    Api::<ServiceAccount>::namespaced(client.clone(), NS)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": SA}})).unwrap(),
        )
        .await
        .unwrap();
    let msg = denied(preflight(&shared, NS, SA, &objs).await);
    let lines: Vec<&str> = msg.lines().collect();
    assert_eq!(
        lines[0],
        "pre-authorization failed: service account requires the following permissions to manage cluster extension:"
    );
    for want in [
        "  Namespace:\"\" APIGroups:[] Resources:[services] Verbs:[list,watch]",
        "  Namespace:\"\" APIGroups:[admissionregistration.k8s.io] Resources:[validatingwebhookconfigurations] Verbs:[create,list,watch]",
        "  Namespace:\"\" APIGroups:[apiextensions.k8s.io] Resources:[customresourcedefinitions] ResourceNames:[webhooktests.webhook.operators.coreos.io] Verbs:[delete,get,patch,update]",
        "  Namespace:\"webhook-system\" APIGroups:[apps] Resources:[deployments] Verbs:[create]",
        "  Namespace:\"webhook-system\" APIGroups:[apps] Resources:[deployments] ResourceNames:[webhook-operator-controller-manager] Verbs:[delete,get,patch,update]",
        "  Namespace:\"\" APIGroups:[webhook.operators.coreos.io] Resources:[webhooktests] Verbs:[create,delete,get,list,patch,update,watch]",
        "  Namespace:\"\" APIGroups:[webhook.operators.coreos.io] Resources:[webhooktests/status] Verbs:[get,patch,update]",
    ] {
        assert!(lines.contains(&want), "missing line {want:?} in:\n{msg}");
    }
    assert_eq!(lines.len(), 1 + 30, "every permission, once:\n{msg}");
    let mut sorted = lines[1..].to_vec();
    sorted.sort();
    assert_eq!(sorted, lines[1..], "lines are sorted");
    // The account indeed can do none of it.
    let as_sa = impersonating_client(&shared, NS, SA).unwrap();
    let service = objs.iter().find(|o| o["kind"] == "Service").unwrap();
    match apply_as(&as_sa, service).await {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 403, "{e:?}"),
        other => panic!("the account applied without rights: {other:?}"),
    }

    // Rights on every object, but not the rules the bundle's ClusterRoles grant.
    let verbs = json!([
        "get", "list", "watch", "create", "update", "patch", "delete"
    ]);
    grant(
        &client,
        "installer-objects",
        json!([
            {"apiGroups": [""], "resources": ["services", "serviceaccounts"], "verbs": verbs},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": verbs},
            {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles", "clusterrolebindings"], "verbs": verbs},
            {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"], "verbs": verbs},
            {"apiGroups": ["admissionregistration.k8s.io"], "resources": ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"], "verbs": verbs},
        ]),
    )
    .await;
    let msg = denied(preflight(&shared, NS, SA, &objs).await);
    assert!(
        !msg.contains("ResourceNames"),
        "object verbs are held now:\n{msg}"
    );
    assert!(
        msg.contains("APIGroups:[webhook.operators.coreos.io] Resources:[webhooktests]"),
        "the bundle's ClusterRole rules are not held:\n{msg}"
    );
    // The API server's escalation check agrees.
    let role = objs.iter().find(|o| o["kind"] == "ClusterRole").unwrap();
    match apply_as(&as_sa, role).await {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 403, "{e:?}");
            assert!(e.message.contains("not currently held"), "{}", e.message);
        }
        other => panic!("the API server let the account escalate: {other:?}"),
    }

    // With escalate and bind the preflight passes, and the account applies everything.
    grant(
        &client,
        "installer-rbac",
        json!([{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles", "roles"], "verbs": ["escalate", "bind"]}]),
    )
    .await;
    preflight(&shared, NS, SA, &objs).await.unwrap();
    let mut ordered = objs.clone();
    ordered.sort_by_key(|o| o["kind"] != "CustomResourceDefinition");
    for o in &ordered {
        apply_as(&as_sa, o)
            .await
            .unwrap_or_else(|e| panic!("{} {}: {e}", o["kind"], o["metadata"]["name"]));
    }
    let sas = Api::<ServiceAccount>::namespaced(client.clone(), NS)
        .list(&Default::default())
        .await
        .unwrap();
    assert!(
        sas.items
            .iter()
            .any(|s| s.name_any() == "webhook-operator-controller-manager")
    );
    plane.stop();
}
