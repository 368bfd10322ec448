//! `CatalogSource`: where the operators a cluster can install come from (API repo
//! `pkg/operators/v1alpha1/catalogsource_types.go`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::csv::Icon;
use crate::enums::open_enum;

/// The desired state of a CatalogSource.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "CatalogSource",
    namespaced,
    status = "CatalogSourceStatus",
    schema = "disabled",
    derive = "PartialEq",
    shortname = "catsrc",
    category = "olm",
    doc = "A repository of operators: a catalog image OLM serves over gRPC, a ConfigMap, or the address of a registry server.",
    printcolumn = r#"{"name":"Display","type":"string","jsonPath":".spec.displayName","description":"The pretty name of the catalog"}"#,
    printcolumn = r#"{"name":"Type","type":"string","jsonPath":".spec.sourceType","description":"The type of the catalog"}"#,
    printcolumn = r#"{"name":"Publisher","type":"string","jsonPath":".spec.publisher","description":"The publisher of the catalog"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSourceSpec {
    /// How the catalog is served.
    pub source_type: SourceType,
    /// Preference among catalogs offering the same package; higher wins, ties by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::go_int"))]
    pub priority: Option<i64>,
    /// The ConfigMap holding the catalog (`configmap` sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<String>,
    /// `host:port` of a registry server (`grpc` sources without an image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The catalog image OLM runs a registry server from (`grpc` sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// How the registry server's pod is scheduled and run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_pod_config: Option<GrpcPodConfig>,
    /// How often the image is checked for a new digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
    /// Pull secrets for the catalog's and its bundles' images.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub secrets: Vec<String>,
    /// The catalog's name as shown to people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// What the catalog offers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Who publishes the catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publisher: Option<String>,
    /// The catalog's icon.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<Icon>,
}

open_enum! {
    /// How a catalog is served.
    pub enum SourceType {
        /// A catalog image or the address of a registry server.
        Grpc = "grpc",
        /// A ConfigMap.
        ConfigMap = "configmap",
        /// Deprecated name of `configmap`.
        Internal = "internal",
    }
}

/// The security context of a catalog's registry pod; the CRD accepts only these.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SecurityConfig {
    /// Runs as the image's user, as before pod security admission.
    Legacy,
    /// Meets the `restricted` pod security standard.
    Restricted,
}

/// How a catalog's registry pod is scheduled and run.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GrpcPodConfig {
    /// Nodes the pod may run on, by label.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub node_selector: BTreeMap<String, String>,
    /// Taints the pod tolerates.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub tolerations: Vec<Toleration>,
    /// Scheduling constraints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// The pod's priority class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// The pod's security context; unset, it follows the namespace's pod security label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context_config: Option<SecurityConfig>,
    /// The memory the server aims to stay under: its memory request and Go memory limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_target: Option<Quantity>,
    /// Serve the catalog's content extracted from the image instead of running it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract_content: Option<ExtractContentConfig>,
}

/// Where a catalog image keeps its content.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ExtractContentConfig {
    /// The serving cache's directory in the image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_dir: Option<String>,
    /// The file-based catalog's directory in the image.
    pub catalog_dir: String,
}

/// How a catalog image is updated.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UpdateStrategy {
    /// Poll the image's tag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry_poll: Option<RegistryPoll>,
}

/// Polling of a catalog image's tag.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RegistryPoll {
    /// How often, as a Go duration (`15m`); an unreadable value means 15 minutes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<String>,
}

/// The Service a catalog's registry server is reached at.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RegistryServiceStatus {
    /// Always `grpc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The Service's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// The Service's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_namespace: Option<String>,
    /// The Service's port, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// When the Service was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,
}

/// The state of the gRPC connection to a catalog.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GrpcConnectionState {
    /// The address connected to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// gRPC's connectivity state (`READY`, `TRANSIENT_FAILURE`, …).
    pub last_observed_state: String,
    /// When the state was observed.
    #[serde(
        default,
        rename = "lastConnect",
        skip_serializing_if = "Option::is_none"
    )]
    pub last_connect_time: Option<Time>,
}

/// The ConfigMap a catalog was last read from.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapResourceReference {
    /// Its name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// Its UID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The resource version read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// When it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
}

/// What OLM observed of a catalog.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CatalogSourceStatus {
    /// Details for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Why the catalog is not served (`SpecInvalidError`, `ConfigMapError`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When the image's tag was last checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_image_registry_poll: Option<Time>,
    /// The ConfigMap last read (`configmap` sources).
    #[serde(
        default,
        rename = "configMapReference",
        skip_serializing_if = "Option::is_none"
    )]
    pub config_map_resource: Option<ConfigMapResourceReference>,
    /// The registry server's Service.
    #[serde(
        default,
        rename = "registryService",
        skip_serializing_if = "Option::is_none"
    )]
    pub registry_service_status: Option<RegistryServiceStatus>,
    /// The gRPC connection's state.
    #[serde(
        default,
        rename = "connectionState",
        skip_serializing_if = "Option::is_none"
    )]
    pub grpc_connection_state: Option<GrpcConnectionState>,
    /// Conditions, one per type.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[cfg_attr(feature = "schema", schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"])))]
    pub conditions: Vec<Condition>,
}
