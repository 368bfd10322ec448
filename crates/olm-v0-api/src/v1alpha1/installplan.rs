//! `InstallPlan`: the resources to create to install or upgrade a set of CSVs, and whether they
//! were (API repo `pkg/operators/v1alpha1/installplan_types.go`).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use crate::enums::open_enum;

/// The desired state of an InstallPlan.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "InstallPlan",
    namespaced,
    status = "InstallPlanStatus",
    schema = "disabled",
    derive = "PartialEq",
    shortname = "ip",
    category = "olm",
    doc = "The resources to create to install or upgrade a set of CSVs, and whether they were.",
    printcolumn = r#"{"name":"CSV","type":"string","jsonPath":".spec.clusterServiceVersionNames[0]","description":"The first CSV in the list of clusterServiceVersionNames"}"#,
    printcolumn = r#"{"name":"Approval","type":"string","jsonPath":".spec.approval","description":"The approval mode"}"#,
    printcolumn = r#"{"name":"Approved","type":"boolean","jsonPath":".spec.approved"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanSpec {
    /// The CatalogSource the plan was resolved from.
    #[serde(default, rename = "source", skip_serializing_if = "Option::is_none")]
    pub catalog_source: Option<String>,
    /// That CatalogSource's namespace.
    #[serde(
        default,
        rename = "sourceNamespace",
        skip_serializing_if = "Option::is_none"
    )]
    pub catalog_source_namespace: Option<String>,
    /// The CSVs the plan installs.
    pub cluster_service_version_names: Vec<String>,
    /// Whether the plan runs without approval.
    pub approval: Approval,
    /// Whether the plan is approved.
    pub approved: bool,
    /// Counts up per namespace with every new plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::go_int"))]
    pub generation: Option<i64>,
}

open_enum! {
    /// Whether an InstallPlan waits for approval.
    pub enum Approval {
        /// Runs as soon as it is resolved.
        Automatic = "Automatic",
        /// Waits until `spec.approved` is true.
        Manual = "Manual",
    }
}

open_enum! {
    /// Where an InstallPlan is in its life.
    pub enum InstallPlanPhase {
        /// Not yet looked at.
        Unset = "",
        /// Declared upstream, never set.
        Planning = "Planning",
        /// Waits for approval.
        RequiresApproval = "RequiresApproval",
        /// Creating the resources.
        Installing = "Installing",
        /// Every resource was created.
        Complete = "Complete",
        /// Installing failed.
        Failed = "Failed",
    }
}

open_enum! {
    /// The condition types of an InstallPlan.
    pub enum InstallPlanConditionType {
        /// Declared upstream, never set.
        Resolved = "Resolved",
        /// Whether the plan's resources were created.
        Installed = "Installed",
    }
}

open_enum! {
    /// What happened to one step of an InstallPlan.
    pub enum StepStatus {
        /// Not yet looked at.
        Unknown = "Unknown",
        /// The resource does not exist yet.
        NotPresent = "NotPresent",
        /// The resource exists.
        Present = "Present",
        /// The resource was created.
        Created = "Created",
        /// The resource could not be created.
        NotCreated = "NotCreated",
        /// The resource's API is not served yet.
        WaitingForApi = "WaitingForApi",
        /// OLM cannot create resources of this kind.
        UnsupportedResource = "UnsupportedResource",
    }
}

open_enum! {
    /// The condition types of a bundle lookup.
    pub enum BundleLookupConditionType {
        /// The bundle is not unpacked yet.
        BundleLookupPending = "BundleLookupPending",
        /// Unpacking the bundle failed.
        BundleLookupFailed = "BundleLookupFailed",
    }
}

/// What OLM observed of an InstallPlan.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanStatus {
    /// Where the plan is in its life.
    pub phase: InstallPlanPhase,
    /// The plan's conditions.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<InstallPlanCondition>,
    /// The catalogs the plan was resolved from.
    pub catalog_sources: Vec<String>,
    /// The resources to create, in order.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub plan: Vec<Step>,
    /// Bundles being pulled and unpacked for the plan.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub bundle_lookups: Vec<BundleLookup>,
    /// The service account the plan's resources are created as (from the OperatorGroup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attenuated_service_account_ref: Option<ObjectReference>,
    /// When creating the resources began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// Details for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One condition of an InstallPlan.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanCondition {
    /// The condition's type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<InstallPlanConditionType>,
    /// `True`, `False` or `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// When the condition was last written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Why (`InstallComponentFailed`, `InstallCheckFailed`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Details for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One resource of an InstallPlan.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Step {
    /// The CSV the resource belongs to.
    pub resolving: String,
    /// The resource.
    pub resource: StepResource,
    /// Whether a failure to create it fails the plan.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub optional: bool,
    /// What happened to it.
    pub status: StepStatus,
}

/// A resource to create, and the catalog it came from.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct StepResource {
    /// The CatalogSource's name.
    #[serde(rename = "sourceName")]
    pub catalog_source: String,
    /// The CatalogSource's namespace.
    #[serde(rename = "sourceNamespace")]
    pub catalog_source_namespace: String,
    /// The resource's API group.
    pub group: String,
    /// The resource's API version.
    pub version: String,
    /// The resource's kind.
    pub kind: String,
    /// The resource's name.
    pub name: String,
    /// The resource as JSON text (or a reference to where it is kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
}

/// One condition of a bundle lookup.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BundleLookupCondition {
    /// The condition's type.
    #[serde(rename = "type")]
    pub type_: BundleLookupConditionType,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Why, in one CamelCase word.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Details for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the condition was last checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// A bundle being pulled and unpacked for an InstallPlan.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct BundleLookup {
    /// The bundle image.
    pub path: String,
    /// The bundle's CSV name.
    pub identifier: String,
    /// The CSV the bundle replaces.
    pub replaces: String,
    /// The CatalogSource the bundle was found in.
    pub catalog_source_ref: ObjectReference,
    /// The lookup's conditions.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<BundleLookupCondition>,
    /// The bundle's properties, as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<String>,
}
