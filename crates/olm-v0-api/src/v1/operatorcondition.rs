//! `OperatorCondition` as `operators.coreos.com/v1` serves it: the conditions OLM reports to an
//! operator, and the overrides a person sets (API repo `pkg/operators/v1/operatorcondition_types.go`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// The desired state of an OperatorCondition.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[kube(
    group = "operators.coreos.com",
    version = "v1",
    kind = "OperatorCondition",
    namespaced,
    status = "OperatorConditionStatus",
    schema = "disabled",
    derive = "PartialEq",
    shortname = "condition",
    category = "olm",
    doc = "The conditions of one installed operator (named as its CSV), and the overrides a person sets."
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
}

/// What OLM observed of an OperatorCondition.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OperatorConditionStatus {
    /// The operator's conditions.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<Condition>,
}

/// A condition a person sets by hand: `metav1.Condition`, whose `lastTransitionTime` upstream's
/// CRD makes optional for overrides only, so that an override can be written without a
/// timestamp. k8s-openapi's `Condition` requires the timestamp, so it cannot read every override
/// the API server accepts; this type can, and converts from it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ConditionOverride {
    /// The condition's type, e.g. `Upgradeable`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The generation the condition was set for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Why, in one CamelCase word.
    pub reason: String,
    /// Details for people.
    pub message: String,
}

impl From<Condition> for ConditionOverride {
    fn from(c: Condition) -> ConditionOverride {
        ConditionOverride {
            type_: c.type_,
            status: c.status,
            observed_generation: c.observed_generation,
            last_transition_time: Some(c.last_transition_time),
            reason: c.reason,
            message: c.message,
        }
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for ConditionOverride {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ConditionOverride".into()
    }

    // `metav1.Condition` with its own `required` beside the reference: the CRD generator lets
    // keys next to a `$ref` win over the referenced schema's.
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = generator.subschema_for::<Condition>();
        schema.insert(
            "required".into(),
            serde_json::json!(["message", "reason", "status", "type"]),
        );
        schema
    }
}
