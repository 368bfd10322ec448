//! Objects the OLM v0 tests apply: OperatorGroups and small CSVs as JSON, and the API resources
//! to apply them with.

#![allow(dead_code)]

pub mod harness;
#[path = "../runner/mod.rs"]
pub mod runner;

use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

pub fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// The objects of OLM v0's kind `kind` (`operators.coreos.com/<version>`, `plural`) in `ns`.
pub fn olm_api(
    client: &kube::Client,
    ns: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> Api<DynamicObject> {
    Api::namespaced_with(
        client.clone(),
        ns,
        &resource("operators.coreos.com", version, kind, plural),
    )
}

/// The OperatorConditions of `ns`, once olm-operator made the one of the CSV `csv`.
pub async fn operator_conditions(
    client: &kube::Client,
    ns: &str,
    csv: &str,
) -> anyhow::Result<Api<DynamicObject>> {
    let conditions = olm_api(client, ns, "v2", "OperatorCondition", "operatorconditions");
    harness::wait(
        &format!("{csv}'s OperatorCondition"),
        || async { Ok(conditions.get_opt(csv).await?.is_some()) },
        |b| *b,
    )
    .await?;
    Ok(conditions)
}

pub fn csv_resource() -> ApiResource {
    resource(
        "operators.coreos.com",
        "v1alpha1",
        "ClusterServiceVersion",
        "clusterserviceversions",
    )
}

pub fn group_resource() -> ApiResource {
    resource(
        "operators.coreos.com",
        "v1",
        "OperatorGroup",
        "operatorgroups",
    )
}

pub fn group(namespace: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "operators.coreos.com/v1",
        "kind": "OperatorGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    })
}

/// A small CSV: one Deployment, `modes` supported (the others listed unsupported), owning the
/// CRD `<plural>.<group>` when given.
pub fn csv(
    namespace: &str,
    name: &str,
    modes: &[&str],
    owned: Option<(&str, &str, &str)>,
    extra: Value,
) -> Value {
    let all = [
        "OwnNamespace",
        "SingleNamespace",
        "MultiNamespace",
        "AllNamespaces",
    ];
    let install_modes: Vec<Value> = all
        .iter()
        .map(|m| json!({"type": m, "supported": modes.contains(m)}))
        .collect();
    let deployment = name.split('.').next().unwrap_or(name).to_owned();
    let mut spec = json!({
        "displayName": name,
        "version": "1.0.0",
        "installModes": install_modes,
        "install": {"strategy": "deployment", "spec": {"deployments": [{
            "name": deployment,
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": deployment}},
                "template": {
                    "metadata": {"labels": {"app": deployment}},
                    "spec": {"containers": [{"name": "manager", "image": "example.com/operator:v1"}]},
                },
            },
        }]}},
    });
    if let Some((plural, group, kind)) = owned {
        spec["customresourcedefinitions"] = json!({"owned": [{
            "name": format!("{plural}.{group}"), "version": "v1", "kind": kind,
        }]});
    }
    if let Value::Object(extra) = extra {
        for (k, v) in extra {
            if k == "install" {
                spec["install"]["spec"]
                    .as_object_mut()
                    .unwrap()
                    .extend(v.as_object().unwrap().clone());
            } else {
                spec[k] = v;
            }
        }
    }
    json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    })
}
