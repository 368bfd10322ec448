//! `OLMConfig`: cluster-wide settings of OLM itself, one object named `cluster` (API repo
//! `pkg/operators/v1/olmconfig_types.go`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// The settings.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[kube(
    group = "operators.coreos.com",
    version = "v1",
    kind = "OLMConfig",
    plural = "olmconfigs",
    status = "OlmConfigStatus",
    schema = "disabled",
    derive = "PartialEq",
    category = "olm",
    doc = "Cluster-wide settings of OLM; the one object read is named `cluster`."
)]
pub struct OlmConfigSpec {
    /// Features to switch on or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<Features>,
}

/// The name of the one OLMConfig OLM reads.
pub const OLM_CONFIG_NAME: &str = "cluster";

/// Features of OLM that can be switched.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Features {
    /// Do not copy CSVs of AllNamespaces operators into every namespace.
    #[serde(
        default,
        rename = "disableCopiedCSVs",
        skip_serializing_if = "Option::is_none"
    )]
    pub disable_copied_csvs: Option<bool>,
    /// How often the package server refreshes its catalogs, as a Go duration (`5m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(s|m|h))+$"))
    )]
    pub package_server_sync_interval: Option<String>,
}

/// What OLM observed of its settings.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OlmConfigStatus {
    /// `DisabledCopiedCSVs`.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<Condition>,
}
