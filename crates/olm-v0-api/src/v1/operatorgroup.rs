//! `OperatorGroup` (`operators.coreos.com/v1`, the stored version): the namespaces the operators
//! of a namespace watch, and the service account they are installed as (API repo
//! `pkg/operators/v1/operatorgroup_types.go`).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// The desired state of an OperatorGroup.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[kube(
    group = "operators.coreos.com",
    version = "v1",
    kind = "OperatorGroup",
    namespaced,
    status = "OperatorGroupStatus",
    schema = "disabled",
    derive = "PartialEq",
    shortname = "og",
    category = "olm",
    doc = "The namespaces the operators installed in its namespace watch, and the service account they are installed as."
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorGroupSpec {
    /// Selects the target namespaces by label (ignored when `targetNamespaces` is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The target namespaces by name; neither this nor `selector` means every namespace.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[cfg_attr(feature = "schema", schemars(extend("x-kubernetes-list-type" = "set")))]
    pub target_namespaces: Vec<String>,
    /// The service account operators are installed as; OLM's own when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,
    /// The provided APIs are fixed by the `olm.providedAPIs` annotation instead of computed.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        rename = "staticProvidedAPIs",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub static_provided_apis: bool,
    /// How failed upgrades are handled (the API server fills in `Default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(extend("default" = "Default")))]
    pub upgrade_strategy: Option<UpgradeStrategy>,
}

/// How an OperatorGroup's operators are upgraded; the CRD accepts only these.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum UpgradeStrategy {
    /// A failed install or upgrade stays failed until a person steps in.
    #[default]
    Default,
    /// A failed upgrade may be replaced by a newer one (a technology preview).
    TechPreviewUnsafeFailForward,
}

/// What OLM observed of an OperatorGroup.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OperatorGroupStatus {
    /// The target namespaces; `[""]` means every namespace.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[cfg_attr(feature = "schema", schemars(extend("x-kubernetes-list-type" = "set")))]
    pub namespaces: Vec<String>,
    /// The service account of `spec.serviceAccountName`, once found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_ref: Option<ObjectReference>,
    /// When the status last changed.
    pub last_updated: Time,
    /// `MultipleOperatorGroup` and `OperatorGroupServiceAccount`.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<Condition>,
}
