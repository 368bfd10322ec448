//! `olm migrate rollback`'s hold on OLM v1's objects: a ClusterExtension or ClusterObjectSet
//! carrying [`olm_k8s::MIGRATION_ROLLBACK_ANNOTATION`] is acknowledged once and then left
//! alone, so that the client can orphan it knowing no write of ours is still in flight (see
//! the annotation's doc). The decision is [`olm_k8s::rollback_hold`]'s; this is its shell.

use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt as _};
use tracing::info;

/// Whether `obj` is held (the reconcile must write nothing more); acknowledges a new hold with
/// one merge patch of the annotation.
pub(crate) async fn held<K>(api: &Api<K>, obj: &K) -> Result<bool, kube::Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match olm_k8s::rollback_hold(obj.meta().annotations.as_ref()) {
        olm_k8s::RollbackHold::None => Ok(false),
        olm_k8s::RollbackHold::Idle => Ok(true),
        olm_k8s::RollbackHold::Acknowledge => {
            let patch = serde_json::json!({"metadata": {"annotations": {
                olm_k8s::MIGRATION_ROLLBACK_ANNOTATION: olm_k8s::MIGRATION_ROLLBACK_ACKNOWLEDGED}}});
            api.patch(
                &obj.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
            info!(name = %obj.name_any(), "held for a rollback to OLM v0: writing nothing more for it");
            Ok(true)
        }
    }
}
