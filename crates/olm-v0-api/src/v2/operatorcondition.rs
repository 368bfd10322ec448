//! `OperatorCondition` (`operators.coreos.com/v2`, the stored version): v1 plus the conditions
//! the operator itself writes into `spec` (API repo `pkg/operators/v2/operatorcondition_types.go`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use crate::v1::ConditionOverride;

/// The desired state of an OperatorCondition.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[kube(
    group = "operators.coreos.com",
    version = "v2",
    kind = "OperatorCondition",
    namespaced,
    status = "OperatorConditionStatus",
    schema = "disabled",
    derive = "PartialEq",
    shortname = "condition",
    category = "olm",
    doc = "The conditions of one installed operator (named as its CSV): the operator's own, the overrides a person sets, and what OLM reports."
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorConditionSpec {
    /// The operator's service accounts, allowed to write the object.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub service_accounts: Vec<String>,
    /// The operator's Deployments, which get `OPERATOR_CONDITION_NAME`.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub deployments: Vec<String>,
    /// Conditions a person sets; they win over the operator's.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub overrides: Vec<ConditionOverride>,
    /// Conditions the operator sets; OLM copies them into `status`.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<Condition>,
}

/// What OLM observed of an OperatorCondition.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OperatorConditionStatus {
    /// The operator's conditions, with the overrides applied.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<Condition>,
}
