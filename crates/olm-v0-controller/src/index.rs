//! The caches every OLM v0 controller reads, and the watches that keep them.
//!
//! What the decisions of `olm-v0` read (namespaces, groups, CSVs and their copies, Deployments,
//! CRDs, OperatorConditions, OLMConfig, RBAC, APIServices, Subscriptions, InstallPlans,
//! CatalogSources) is held here, filled by one watch per kind, each run as its own task
//! ([`crate::wake::watch`]): every event updates the cache first and then wakes the objects it
//! concerns, so a reconcile always sees the change that woke it. Copies of CSVs are kept as an
//! index of where they are plus two hashes computed as they arrive (upstream keeps hashes too),
//! so that fifty thousand copies cost about ten megabytes. Deployments are watched only when OLM
//! created them (the CSV owner labels), CRDs without their schemas, namespaces by metadata.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, PartialObjectMeta};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use olm_v0_api::v1::{OLMConfig, OperatorGroup};
use olm_v0_api::v1alpha1::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription};
use olm_v0_api::v2::OperatorCondition;
use tokio::task::JoinSet;

use crate::lock;
use crate::olm_operator::{copies, operators, serving};
use crate::wake::{
    Wake, on_apiservice, on_catalogsource, on_condition, on_config, on_crd, on_csv, on_deployment,
    on_group, on_installplan, on_namespace, on_rbac, on_subscription, watch,
};

/// The label every Deployment, Role and ClusterRole olm-operator creates for a CSV carries:
/// what its Deployment watch selects.
const OWNED_BY_CSV: &str = "olm.owner.kind=ClusterServiceVersion";

/// What the controllers read, kept current by the watches.
#[derive(Clone)]
pub struct Index {
    /// Namespaces (metadata only: names and labels are all that is read).
    pub namespaces: Store<PartialObjectMeta<Namespace>>,
    /// OperatorGroups.
    pub groups: Store<OperatorGroup>,
    /// CSVs that are not copies.
    pub csvs: Store<ClusterServiceVersion>,
    /// Copies of CSVs, by parent: where they are and hashes of their content.
    pub copies: Arc<copies::CopyIndex>,
    /// Deployments OLM made for CSVs.
    pub deployments: Store<Deployment>,
    /// CRDs without their schemas.
    pub crds: Store<CustomResourceDefinition>,
    /// OperatorConditions.
    pub conditions: Store<OperatorCondition>,
    /// OLMConfigs (only `cluster` is read).
    pub configs: Store<OLMConfig>,
    /// Roles, for permission checks.
    pub roles: Store<Role>,
    /// RoleBindings, for permission checks.
    pub role_bindings: Store<RoleBinding>,
    /// ClusterRoles, for permission checks.
    pub cluster_roles: Store<ClusterRole>,
    /// ClusterRoleBindings, for permission checks.
    pub cluster_role_bindings: Store<ClusterRoleBinding>,
    /// APIServices: their availability, which owned and required ones wait for.
    pub apiservices: Store<APIService>,
    /// Subscriptions.
    pub subscriptions: Store<Subscription>,
    /// InstallPlans.
    pub installplans: Store<InstallPlan>,
    /// CatalogSources (which catalogs a namespace may resolve from, and their priority).
    pub catalogsources: Store<CatalogSource>,
    /// CSVs (`namespace/name`) that failed for want of permissions and whose RBAC changed since.
    pub(crate) rbac_changed: Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// What carries an operator's component label or belongs to a CSV.
    pub(crate) components: Arc<operators::ComponentIndex>,
}

impl Index {
    /// The OperatorGroups of `namespace`.
    pub fn groups_in(&self, namespace: &str) -> Vec<Arc<OperatorGroup>> {
        let mut out: Vec<Arc<OperatorGroup>> = self
            .groups
            .state()
            .into_iter()
            .filter(|g| g.namespace().as_deref() == Some(namespace))
            .collect();
        out.sort_by_key(|g| g.name_any());
        out
    }

    /// The CSVs (not copies) of `namespace`.
    pub fn csvs_in(&self, namespace: &str) -> Vec<Arc<ClusterServiceVersion>> {
        let mut out: Vec<Arc<ClusterServiceVersion>> = self
            .csvs
            .state()
            .into_iter()
            .filter(|c| c.namespace().as_deref() == Some(namespace))
            .collect();
        out.sort_by_key(|c| c.name_any());
        out
    }

    /// The Subscriptions of `namespace`, by name.
    pub fn subscriptions_in(&self, namespace: &str) -> Vec<Arc<Subscription>> {
        in_namespace(&self.subscriptions, namespace)
    }

    /// The InstallPlans of `namespace`, by name.
    pub fn installplans_in(&self, namespace: &str) -> Vec<Arc<InstallPlan>> {
        in_namespace(&self.installplans, namespace)
    }

    /// The CSV `namespace/name`, if it is not a copy.
    pub fn csv(&self, namespace: &str, name: &str) -> Option<Arc<ClusterServiceVersion>> {
        self.csvs.get(&ObjectRef::new(name).within(namespace))
    }

    /// Every namespace's name with its labels, sorted by name.
    pub fn namespaces(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        self.namespaces
            .state()
            .iter()
            .map(|n| (n.name_any(), n.labels().clone()))
            .collect()
    }

    /// Whether RBAC changed for the CSV `key` since it last asked (and forgets it).
    pub fn take_rbac_change(&self, key: &str) -> bool {
        lock(&self.rbac_changed).remove(key)
    }

    /// The cluster's RBAC, for permission checks.
    pub fn rbac(&self) -> olm_security::permissions::Rbac {
        fn all<K>(store: &Store<K>) -> Vec<K>
        where
            K: kube::Resource + Clone + 'static,
            K::DynamicType: Eq + std::hash::Hash + Clone,
        {
            store.state().iter().map(|o| (**o).clone()).collect()
        }
        olm_security::permissions::Rbac {
            cluster_roles: all(&self.cluster_roles),
            roles: all(&self.roles),
            cluster_role_bindings: all(&self.cluster_role_bindings),
            role_bindings: all(&self.role_bindings),
        }
    }

    /// How often registries' content is read again while they stay up: `OLMConfig cluster`'s
    /// `spec.features.packageServerSyncInterval`, 12 hours when unset or unusable.
    pub fn catalog_sync_interval(&self) -> std::time::Duration {
        let written = self
            .configs
            .get(&ObjectRef::new(olm_v0_api::v1::OLM_CONFIG_NAME))
            .and_then(|c| {
                c.spec
                    .features
                    .as_ref()
                    .and_then(|f| f.package_server_sync_interval.clone())
            });
        olm_v0::olm_operator::olmconfig::package_server_sync_interval(written.as_deref())
            .or_else(|| olm_v0::olm_operator::olmconfig::package_server_sync_interval(None))
            .unwrap_or(std::time::Duration::from_secs(12 * 3600))
    }

    /// `spec.features.disableCopiedCSVs` of `OLMConfig cluster`.
    pub fn copies_disabled(&self) -> Option<bool> {
        self.configs
            .get(&ObjectRef::new(olm_v0_api::v1::OLM_CONFIG_NAME))
            .and_then(|c| c.spec.features.as_ref().and_then(|f| f.disable_copied_csvs))
    }
}

/// The objects of `store` in `namespace`, sorted by name.
fn in_namespace<K>(store: &Store<K>, namespace: &str) -> Vec<Arc<K>>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    let mut out: Vec<Arc<K>> = store
        .state()
        .into_iter()
        .filter(|o| o.meta().namespace.as_deref() == Some(namespace))
        .collect();
    out.sort_by_key(|o| o.meta().name.clone());
    out
}

impl Index {
    /// Empty caches, and one task in `tasks` per kind that fills its cache and tells `wake`
    /// what each change concerns. The caches are complete once [`Index::ready`] returns.
    pub(crate) fn start(client: &kube::Client, wake: &Wake, tasks: &mut JoinSet<()>) -> Index {
        let (namespaces, namespace_writer) = reflector::store();
        let (groups, group_writer) = reflector::store();
        let (csvs, csv_writer) = reflector::store();
        let (deployments, deployment_writer) = reflector::store();
        let (crds, crd_writer) = reflector::store();
        let (conditions, condition_writer) = reflector::store();
        let (configs, config_writer) = reflector::store();
        let (roles, role_writer) = reflector::store();
        let (role_bindings, role_binding_writer) = reflector::store();
        let (cluster_roles, cluster_role_writer) = reflector::store();
        let (cluster_role_bindings, cluster_role_binding_writer) = reflector::store();
        let (apiservices, apiservice_writer) = reflector::store();
        let (subscriptions, subscription_writer) = reflector::store();
        let (installplans, installplan_writer) = reflector::store();
        let (catalogsources, catalogsource_writer) = reflector::store();
        let index = Index {
            namespaces,
            groups,
            csvs,
            copies: Arc::default(),
            deployments,
            crds,
            conditions,
            configs,
            roles,
            role_bindings,
            cluster_roles,
            cluster_role_bindings,
            apiservices,
            subscriptions,
            installplans,
            catalogsources,
            rbac_changed: Arc::default(),
            components: Arc::default(),
        };
        let all = watcher::Config::default;
        let copied = olm_v0::olm_operator::status::COPIED_FROM_LABEL;
        tasks.spawn(watch(
            "namespaces",
            namespace_writer,
            watcher::watcher(
                Api::<PartialObjectMeta<Namespace>>::all(client.clone()),
                all(),
            )
            .modify(|n| {
                // Names and labels are all that is read of a namespace; there may be 10,000.
                n.metadata = kube::api::ObjectMeta {
                    name: n.metadata.name.take(),
                    labels: n.metadata.labels.take(),
                    resource_version: n.metadata.resource_version.take(),
                    uid: n.metadata.uid.take(),
                    ..kube::api::ObjectMeta::default()
                };
            }),
            index.clone(),
            wake.clone(),
            on_namespace,
        ));
        tasks.spawn(watch(
            "clusterserviceversions",
            csv_writer,
            watcher::watcher(
                Api::<ClusterServiceVersion>::all(client.clone()),
                all().labels(&format!("!{copied}")),
            )
            .modify(|c| c.metadata.managed_fields = None),
            index.clone(),
            wake.clone(),
            on_csv,
        ));
        tasks.spawn(copies::watch(
            Api::<ClusterServiceVersion>::all(client.clone()),
            copied.to_owned(),
            index.clone(),
            wake.clone(),
        ));
        tasks.spawn(watch(
            "deployments",
            deployment_writer,
            watcher::watcher(
                Api::<Deployment>::all(client.clone()),
                all().labels(OWNED_BY_CSV),
            )
            .modify(|d| d.metadata.managed_fields = None),
            index.clone(),
            wake.clone(),
            on_deployment,
        ));
        tasks.spawn(watch(
            "customresourcedefinitions",
            crd_writer,
            watcher::watcher(Api::<CustomResourceDefinition>::all(client.clone()), all())
                .modify(strip_crd),
            index.clone(),
            wake.clone(),
            on_crd,
        ));
        tasks.spawn(serving::watch_secrets(client.clone(), wake.clone()));
        // The kinds read whole, every object of the cluster, without their managed fields.
        macro_rules! whole {
            ($name:literal, $writer:ident, $kind:ty, $react:expr) => {
                tasks.spawn(watch(
                    $name,
                    $writer,
                    watcher::watcher(Api::<$kind>::all(client.clone()), all())
                        .modify(|o| o.metadata.managed_fields = None),
                    index.clone(),
                    wake.clone(),
                    $react,
                ))
            };
        }
        whole!("operatorgroups", group_writer, OperatorGroup, on_group);
        whole!(
            "operatorconditions",
            condition_writer,
            OperatorCondition,
            on_condition
        );
        whole!("olmconfigs", config_writer, OLMConfig, on_config);
        whole!("apiservices", apiservice_writer, APIService, on_apiservice);
        whole!(
            "subscriptions",
            subscription_writer,
            Subscription,
            on_subscription
        );
        whole!(
            "installplans",
            installplan_writer,
            InstallPlan,
            on_installplan
        );
        whole!(
            "catalogsources",
            catalogsource_writer,
            CatalogSource,
            on_catalogsource
        );
        whole!("roles", role_writer, Role, on_rbac);
        whole!("rolebindings", role_binding_writer, RoleBinding, on_rbac);
        whole!("clusterroles", cluster_role_writer, ClusterRole, on_rbac);
        whole!(
            "clusterrolebindings",
            cluster_role_binding_writer,
            ClusterRoleBinding,
            on_rbac
        );
        index
    }

    /// Returns once every cache holds its first list: decisions read several caches at once,
    /// and none may run on a partial picture.
    pub(crate) async fn ready(&self) {
        let _ = self.namespaces.wait_until_ready().await;
        let _ = self.groups.wait_until_ready().await;
        let _ = self.csvs.wait_until_ready().await;
        self.copies.wait_until_ready().await;
        let _ = self.deployments.wait_until_ready().await;
        let _ = self.crds.wait_until_ready().await;
        let _ = self.conditions.wait_until_ready().await;
        let _ = self.configs.wait_until_ready().await;
        let _ = self.roles.wait_until_ready().await;
        let _ = self.role_bindings.wait_until_ready().await;
        let _ = self.cluster_roles.wait_until_ready().await;
        let _ = self.cluster_role_bindings.wait_until_ready().await;
        let _ = self.apiservices.wait_until_ready().await;
        let _ = self.subscriptions.wait_until_ready().await;
        let _ = self.installplans.wait_until_ready().await;
        let _ = self.catalogsources.wait_until_ready().await;
    }
}

/// A CRD as the cache keeps it: what requirement checks read, not its schemas.
fn strip_crd(crd: &mut CustomResourceDefinition) {
    crd.metadata.managed_fields = None;
    for v in &mut crd.spec.versions {
        v.schema = None;
        v.additional_printer_columns = None;
    }
    crd.spec.conversion = crd.spec.conversion.take().map(|mut c| {
        if let Some(w) = c.webhook.as_mut()
            && let Some(cc) = w.client_config.as_mut()
        {
            cc.ca_bundle = None;
        }
        c
    });
}
