//! The OLM v0 ClusterServiceVersions that own a CRD, for naming the holder of a colliding CRD.
//!
//! OLM v0's InstallPlans mark the CRDs they create only with `olm.managed=true`; which operator
//! a CRD belongs to is written in the ClusterServiceVersions that list it as owned. A revision
//! that collides with such a CRD names those CSVs in its status, so the user knows what to
//! uninstall. They are listed only then — a collision is retried every 10 s, and a cluster
//! without OLM v0's API answers 404, which means there is nobody to name.

use std::collections::BTreeMap;

use kube::Client;
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;
use olm_extension::objectset::ObjectRef as Target;
use serde_json::{Map, Value};
use tracing::debug;

/// CRD name → `(namespace, name)` of every ClusterServiceVersion (copies left out) listing it
/// in `spec.customresourcedefinitions.owned`, sorted; empty unless `observed` holds a CRD that
/// OLM v0 made without naming an owner.
pub async fn crd_owners(
    client: &Client,
    observed: &BTreeMap<Target, Map<String, Value>>,
) -> BTreeMap<String, Vec<(String, String)>> {
    let wanted: Vec<&str> = observed
        .iter()
        .filter(|(t, o)| {
            t.gvk.kind == "CustomResourceDefinition"
                && matches!(olm_k8s::holder(o), olm_k8s::Holder::V0Managed { .. })
        })
        .map(|(t, _)| t.name.as_str())
        .collect();
    if wanted.is_empty() {
        return BTreeMap::new();
    }
    let resource = ApiResource {
        group: "operators.coreos.com".into(),
        version: "v1alpha1".into(),
        api_version: "operators.coreos.com/v1alpha1".into(),
        kind: "ClusterServiceVersion".into(),
        plural: "clusterserviceversions".into(),
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    // Copies are labelled `olm.copiedFrom`; they name the same CRDs as their original.
    let params = ListParams::default().labels("!olm.copiedFrom");
    let list = match api.list(&params).await {
        Ok(list) => list,
        Err(e) => {
            debug!(error = %e, "listing ClusterServiceVersions to name a CRD's OLM v0 owner");
            return BTreeMap::new();
        }
    };
    let mut owners: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for csv in &list.items {
        let owned = csv
            .data
            .pointer("/spec/customresourcedefinitions/owned")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|o| o.get("name").and_then(Value::as_str));
        for crd in owned.filter(|n| wanted.contains(n)) {
            owners.entry(crd.to_owned()).or_default().push((
                csv.metadata.namespace.clone().unwrap_or_default(),
                csv.metadata.name.clone().unwrap_or_default(),
            ));
        }
    }
    for list in owners.values_mut() {
        list.sort();
    }
    owners
}
