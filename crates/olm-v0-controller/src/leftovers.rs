//! What deleted objects leave behind and garbage collection cannot reach: a CSV's copies and
//! APIServices, a group's ClusterRoles and namespace labels.

use std::sync::Arc;

use futures::StreamExt;
use futures::channel::mpsc;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams};
use kube::runtime::reflector::ObjectRef;
use olm_cluster::context::Shared;

use crate::index::Index;
use crate::olm_operator::{copies, operatorgroup};
use crate::wake::Gone;

/// Removes what deleted objects leave: a CSV's copies and APIServices once no CSV of that name
/// is in its namespace any more, a group's ClusterRoles and namespace labels, an APIService
/// whose owner CSV does not exist.
pub(crate) async fn tidy(shared: Arc<Shared>, index: Index, mut gone: mpsc::Receiver<Gone>) {
    while let Some(g) = gone.next().await {
        match g {
            Gone::Csv(namespace, name) => {
                if index.csv(&namespace, &name).is_none() {
                    copies::remove_all(&shared.client, &index, &namespace, &name).await;
                    let left: Vec<String> = index
                        .apiservices
                        .state()
                        .iter()
                        .filter(|a| {
                            olm_v0::olm_operator::adoption::owner_csv(a.labels())
                                == Some((namespace.as_str(), name.as_str()))
                        })
                        .map(|a| a.name_any())
                        .collect();
                    for service in left {
                        delete_orphaned_apiservice(&shared.client, &index, &service).await;
                    }
                }
            }
            Gone::ApiService(name) => {
                delete_orphaned_apiservice(&shared.client, &index, &name).await;
            }
            Gone::Group(namespace, name) => {
                operatorgroup::forget(&shared, &index, &namespace, &name).await;
            }
        }
    }
}

/// Deletes the APIService `name` when the caches, read now that they are complete, still say
/// its owner CSV is gone (upstream's `syncAPIService`); only the object that was judged, by
/// its uid, so one made again under the same name meanwhile stays.
async fn delete_orphaned_apiservice(client: &kube::Client, index: &Index, name: &str) {
    let Some(service) = index.apiservices.get(&ObjectRef::new(name)) else {
        return;
    };
    if !olm_v0::olm_operator::adoption::orphaned(service.labels(), |ns, n| {
        index.csv(ns, n).is_some()
    }) {
        return;
    }
    let params = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: service.uid(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match Api::<APIService>::all(client.clone())
        .delete(name, &params)
        .await
    {
        Ok(_) => {
            tracing::info!(apiservice = %name, "deleted an APIService whose owner CSV is gone")
        }
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
        Err(e) => {
            tracing::warn!(apiservice = %name, error = %e, "deleting an APIService whose owner CSV is gone failed");
        }
    }
}
