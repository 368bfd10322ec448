//! `OperatorGroup` as `operators.coreos.com/v1alpha2` serves it: v1 without `upgradeStrategy`
//! (API repo `pkg/operators/v1alpha2/operatorgroup_types.go`).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// The desired state of an OperatorGroup.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha2",
    kind = "OperatorGroup",
    namespaced,
    status = "OperatorGroupStatus",
    schema = "disabled",
    derive = "PartialEq",
    shortname = "og",
    category = "olm",
    doc = "The namespaces the operators installed in its namespace watch (the older version, without upgrade strategies)."
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
    pub namespaces: Vec<String>,
    /// The service account of `spec.serviceAccountName`, once found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_ref: Option<ObjectReference>,
    /// When the status last changed.
    pub last_updated: Time,
}
