//! What a deleted CSV leaves that garbage collection cannot reach (OLM's `csv-cleanup`
//! finalizer and delete handler): cluster-scoped objects cannot carry an owner reference to a
//! namespaced CSV, so its webhook configurations, ClusterRoles, ClusterRoleBindings and
//! APIServices are found by its owner labels and deleted, and the conversion webhooks it put on
//! CRDs are taken off again (unless a CSV replacing it serves them now) — a webhook left pointing
//! at a Service that is gone would make every write of those objects fail.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use olm_v0_api::v1alpha1::ClusterServiceVersion;
use serde_json::json;
use tracing::info;

use crate::Index;

/// The finalizer every CSV carries (upstream's).
pub const FINALIZER: &str = "operators.coreos.com/csv-cleanup";

/// Adds the finalizer when it is missing; `true` when it wrote.
pub async fn ensure_finalizer(
    api: &Api<ClusterServiceVersion>,
    csv: &ClusterServiceVersion,
) -> Result<bool, kube::Error> {
    if csv.finalizers().iter().any(|f| f == FINALIZER) {
        return Ok(false);
    }
    let mut all = csv.finalizers().to_vec();
    all.push(FINALIZER.to_owned());
    // With the resourceVersion: finalizers others add at the same moment are kept.
    let patch = json!({"metadata": {"finalizers": all, "resourceVersion": csv.resource_version()}});
    api.patch(
        &csv.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&patch),
    )
    .await?;
    Ok(true)
}

/// Deletes what the CSV leaves cluster-wide and, once nothing of it is listed any more, removes
/// the finalizer. `false`: deletions are still under way (look again).
pub async fn finalize(
    client: &kube::Client,
    index: &Index,
    api: &Api<ClusterServiceVersion>,
    csv: &ClusterServiceVersion,
) -> Result<bool, kube::Error> {
    if !csv.finalizers().iter().any(|f| f == FINALIZER) {
        return Ok(true);
    }
    let selector = crate::csv_owner_selector(&csv.namespace().unwrap_or_default(), &csv.name_any());
    let by_owner = ListParams::default().labels(&selector);
    let mut left = 0;
    left += delete_all(
        Api::<ValidatingWebhookConfiguration>::all(client.clone()),
        &by_owner,
    )
    .await?;
    left += delete_all(
        Api::<MutatingWebhookConfiguration>::all(client.clone()),
        &by_owner,
    )
    .await?;
    left += delete_all(Api::<ClusterRoleBinding>::all(client.clone()), &by_owner).await?;
    left += delete_all(Api::<ClusterRole>::all(client.clone()), &by_owner).await?;
    left += delete_all(Api::<APIService>::all(client.clone()), &by_owner).await?;
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    let replaced = index
        .csvs_in(&namespace)
        .iter()
        .any(|c| c.spec.replaces.as_deref() == Some(name.as_str()) && c.name_any() != name);
    if !replaced {
        strip_conversion(client, csv).await?;
    }
    if left > 0 {
        return Ok(false);
    }
    let keep: Vec<&String> = csv
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER)
        .collect();
    let patch =
        json!({"metadata": {"finalizers": keep, "resourceVersion": csv.resource_version()}});
    match api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        Err(e) => return Err(e),
    }
    info!(csv = %name, namespace = %namespace, "cleaned up after the deleted CSV");
    Ok(true)
}

/// Deletes every object `params` lists but those an OLM v1 revision controls (taken over by
/// `olm migrate`, they are the extension's now); how many were still there.
async fn delete_all<K>(api: Api<K>, params: &ListParams) -> Result<usize, kube::Error>
where
    K: Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut listed = api.list_metadata(params).await?;
    listed.items.retain(|o| !held_by_olm_v1(&o.metadata));
    for o in &listed.items {
        match api.delete(&o.name_any(), &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(listed.items.len())
}

/// Whether an OLM v1 revision controls the object (a controller reference of its group).
fn held_by_olm_v1(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool {
    meta.owner_references.iter().flatten().any(|r| {
        r.controller == Some(true) && r.api_version.starts_with(&format!("{}/", olm_api::GROUP))
    })
}

/// Takes the conversion webhooks the CSV declared off its CRDs (strategy `None`).
async fn strip_conversion(
    client: &kube::Client,
    csv: &ClusterServiceVersion,
) -> Result<(), kube::Error> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let service_namespace = csv.namespace().unwrap_or_default();
    for w in &csv.spec.webhook_definitions {
        let service = olm_v0::olm_operator::webhookconfig::service_name(
            w.deployment_name.as_deref().unwrap_or_default(),
        );
        for name in &w.conversion_crds {
            let Some(crd) = crds.get_opt(name).await? else {
                continue;
            };
            if held_by_olm_v1(&crd.metadata) {
                continue;
            }
            let ours = crd
                .spec
                .conversion
                .as_ref()
                .and_then(|c| c.webhook.as_ref())
                .and_then(|w| w.client_config.as_ref())
                .and_then(|c| c.service.as_ref())
                .is_some_and(|s| s.name == service && s.namespace == service_namespace);
            if !ours {
                continue;
            }
            let patch = json!({
                "metadata": {"resourceVersion": crd.resource_version()},
                "spec": {"conversion": {"strategy": "None", "webhook": null}},
            });
            crds.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
    }
    Ok(())
}
