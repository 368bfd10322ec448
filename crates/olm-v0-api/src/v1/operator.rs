//! `Operator`: a cluster-scoped view of everything that belongs to one installed operator
//! (API repo `pkg/operators/v1/operator_types.go`).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// An Operator has nothing to ask for: OLM fills in its status.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[kube(
    group = "operators.coreos.com",
    version = "v1",
    kind = "Operator",
    status = "OperatorStatus",
    schema = "disabled",
    derive = "PartialEq",
    category = "olm",
    doc = "Everything that belongs to one installed operator: its components, found by label."
)]
pub struct OperatorSpec {}

/// What OLM observed of an Operator.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OperatorStatus {
    /// The operator's components.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<Components>,
}

/// The objects labelled as belonging to an operator.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Components {
    /// The label that marks them.
    pub label_selector: LabelSelector,
    /// The objects, with their conditions.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub refs: Vec<RichReference>,
}

/// An object and its conditions.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
// The reference's fields sit beside `conditions`, and the reference is atomic in the CRD as
// `ObjectReference` is wherever it appears.
#[cfg_attr(feature = "schema", schemars(extend("x-kubernetes-map-type" = "atomic")))]
pub struct RichReference {
    /// The object.
    #[serde(flatten)]
    pub object_reference: ObjectReference,
    /// The object's conditions.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<OperatorComponentCondition>,
}

/// A condition of a component, in the common shape most kinds use.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OperatorComponentCondition {
    /// The condition's type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Why, in one CamelCase word.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Details for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the condition was last written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}
