//! Tenant RBAC on the cluster: for a CSV whose group targets other namespaces (not all), the Roles
//! and RoleBindings of its install copied into each target namespace where its ServiceAccounts lack
//! the permissions — `olm_v0::olm_operator::tenant` decides, this reads the caches and writes.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, PostParams};
use kube::runtime::reflector::Store;
use kube::{Resource, ResourceExt};
use olm_v0::olm_operator::strategy::CsvOwner;
use olm_v0::olm_operator::tenant::{Tenancy, TenantWrite, tenant_writes};
use olm_v0_api::v1alpha1::ClusterServiceVersion;

use crate::{Index, owned_by_csv};

/// Brings the tenant RBAC of `csv` in step in each of `targets` (its group's target namespaces
/// that hold a copy) where its permissions are not already granted. Returns how many writes
/// failed (each logged).
pub async fn ensure(
    client: &kube::Client,
    index: &Index,
    csv: &ClusterServiceVersion,
    targets: &[String],
) -> usize {
    let namespace = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let uid = csv.uid().unwrap_or_default();
    let rbac = index.rbac();
    let mut failed = 0;
    for target in targets.iter().filter(|t| **t != namespace) {
        if super::requirements::granted_in(&rbac, csv, target) {
            continue;
        }
        let copies: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), target);
        let copy = match copies.get_opt(&name).await {
            Ok(Some(c)) => c,
            // Not there yet: its creation wakes the parent again.
            Ok(None) => continue,
            Err(e) => {
                tracing::warn!(csv = %name, namespace = %namespace, target = %target, error = %e, "reading a copied CSV for its tenant RBAC failed");
                failed += 1;
                continue;
            }
        };
        let owner = CsvOwner {
            name: name.clone(),
            namespace: target.clone(),
            uid: copy.uid().unwrap_or_default(),
            ..CsvOwner::default()
        };
        let tenancy = Tenancy {
            csv_uid: &uid,
            copy: &owner,
            operator_namespace: &namespace,
        };
        let owned_roles = labelled(&index.roles, &namespace, &namespace, &name);
        let owned_bindings = labelled(&index.role_bindings, &namespace, &namespace, &name);
        let target_roles = labelled(&index.roles, target, target, &name);
        let target_bindings = labelled(&index.role_bindings, target, target, &name);
        let writes = tenant_writes(
            tenancy,
            &refs(&owned_roles),
            &refs(&owned_bindings),
            &refs(&target_roles),
            &refs(&target_bindings),
        );
        for w in writes {
            if let Err(e) = write(client, target, &w).await {
                tracing::warn!(csv = %name, namespace = %namespace, target = %target, error = %e, "writing tenant RBAC failed");
                failed += 1;
            }
        }
    }
    failed
}

/// The objects in `namespace` carrying the owner labels of the CSV `owner_namespace/name`.
fn labelled<K>(store: &Store<K>, namespace: &str, owner_namespace: &str, name: &str) -> Vec<Arc<K>>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    store
        .state()
        .into_iter()
        .filter(|o| o.meta().namespace.as_deref() == Some(namespace))
        .filter(|o| owned_by_csv(o.labels(), owner_namespace, name))
        .collect()
}

fn refs<K>(objects: &[Arc<K>]) -> Vec<&K> {
    objects.iter().map(|o| &**o).collect()
}

async fn write(client: &kube::Client, namespace: &str, w: &TenantWrite) -> Result<(), kube::Error> {
    let params = PostParams {
        field_manager: Some(crate::FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    };
    let created = |e: kube::Error| match e {
        // Made meanwhile (the cache is behind): the watch brings it.
        kube::Error::Api(s) if s.code == 409 => Ok(()),
        e => Err(e),
    };
    match w {
        TenantWrite::CreateRole(role) => {
            let api: Api<Role> = Api::namespaced(client.clone(), namespace);
            api.create(&params, role).await.map(drop).or_else(created)
        }
        TenantWrite::UpdateRole(role) => {
            let api: Api<Role> = Api::namespaced(client.clone(), namespace);
            api.replace(&role.name_any(), &params, role).await.map(drop)
        }
        TenantWrite::CreateRoleBinding(binding) => {
            let api: Api<RoleBinding> = Api::namespaced(client.clone(), namespace);
            api.create(&params, binding)
                .await
                .map(drop)
                .or_else(created)
        }
    }
}

/// The parent whose tenant RBAC an RBAC object concerns: a copy's Role or RoleBinding (labelled
/// `olm.copiedFrom`) or one a CSV's install made in its own namespace; `None` for others.
pub fn parent_of(labels: &BTreeMap<String, String>) -> Option<(String, String)> {
    let (namespace, name) = olm_v0::olm_operator::adoption::owner_csv(labels)?;
    let namespace = labels
        .get(olm_v0::olm_operator::status::COPIED_FROM_LABEL)
        .map_or(namespace, String::as_str);
    Some((namespace.to_owned(), name.to_owned()))
}
