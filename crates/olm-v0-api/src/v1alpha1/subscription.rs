//! `Subscription`: keep one package installed from a catalog channel, and upgrade it (API repo
//! `pkg/operators/v1alpha1/subscription_types.go`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, EnvFromSource, EnvVar, ObjectReference, ResourceRequirements, Toleration, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use serde::{Deserialize, Serialize};

use super::installplan::Approval;
use crate::enums::open_enum;

/// The desired state of a Subscription.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "Subscription",
    namespaced,
    status = "SubscriptionStatus",
    schema = "disabled",
    derive = "PartialEq",
    shortname = "sub",
    shortname = "subs",
    category = "olm",
    doc = "Keeps a package installed from a catalog channel, and upgrades it as the channel moves.",
    printcolumn = r#"{"name":"Package","type":"string","jsonPath":".spec.name","description":"The package subscribed to"}"#,
    printcolumn = r#"{"name":"Source","type":"string","jsonPath":".spec.source","description":"The catalog source for the specified package"}"#,
    printcolumn = r#"{"name":"Channel","type":"string","jsonPath":".spec.channel","description":"The channel of updates to subscribe to"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionSpec {
    /// The CatalogSource's name.
    #[serde(rename = "source")]
    pub catalog_source: String,
    /// The CatalogSource's namespace.
    #[serde(rename = "sourceNamespace")]
    pub catalog_source_namespace: String,
    /// The package.
    #[serde(rename = "name")]
    pub package: String,
    /// The channel; the package's default channel when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// The CSV to install first.
    #[serde(
        default,
        rename = "startingCSV",
        skip_serializing_if = "Option::is_none"
    )]
    pub starting_csv: Option<String>,
    /// Whether InstallPlans run without approval (`Automatic`, the default) or wait for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_plan_approval: Option<Approval>,
    /// Settings applied to the operator's Deployments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<SubscriptionConfig>,
}

/// Settings a Subscription applies to every container of the operator's Deployments.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionConfig {
    /// Accepted, and applied nowhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Nodes the pods may run on, by label.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub node_selector: BTreeMap<String, String>,
    /// Taints the pods tolerate.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub tolerations: Vec<Toleration>,
    /// Compute resources of every container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Environment sources added to every container.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub env_from: Vec<EnvFromSource>,
    /// Environment variables set in every container.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub env: Vec<EnvVar>,
    /// Volumes added to the pods.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub volumes: Vec<Volume>,
    /// Volume mounts added to every container.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub volume_mounts: Vec<VolumeMount>,
    /// Scheduling constraints of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Annotations added to the Deployments and their pods.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub annotations: BTreeMap<String, String>,
}

open_enum! {
    /// Where a Subscription is in its upgrade cycle.
    pub enum SubscriptionState {
        /// An upgrade failed (only with unsafe fail-forward upgrades).
        UpgradeFailed = "UpgradeFailed",
        /// Declared upstream, never set.
        UpgradeAvailable = "UpgradeAvailable",
        /// An InstallPlan is installing the next CSV.
        UpgradePending = "UpgradePending",
        /// The latest CSV of the channel is installed.
        AtLatestKnown = "AtLatestKnown",
    }
}

open_enum! {
    /// The condition types of a Subscription; each is True when something is wrong or going on.
    pub enum SubscriptionConditionType {
        /// A catalog the Subscription may use is unhealthy or missing.
        CatalogSourcesUnhealthy = "CatalogSourcesUnhealthy",
        /// The referenced InstallPlan is gone.
        InstallPlanMissing = "InstallPlanMissing",
        /// The InstallPlan has not finished.
        InstallPlanPending = "InstallPlanPending",
        /// The InstallPlan failed.
        InstallPlanFailed = "InstallPlanFailed",
        /// Dependency resolution failed.
        ResolutionFailed = "ResolutionFailed",
        /// A bundle is being unpacked.
        BundleUnpacking = "BundleUnpacking",
        /// Unpacking a bundle failed.
        BundleUnpackFailed = "BundleUnpackFailed",
        /// The package, channel or bundle is deprecated.
        Deprecated = "Deprecated",
        /// The package is deprecated.
        PackageDeprecated = "PackageDeprecated",
        /// The channel is deprecated.
        ChannelDeprecated = "ChannelDeprecated",
        /// The bundle is deprecated.
        BundleDeprecated = "BundleDeprecated",
    }
}

/// One condition of a Subscription.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionCondition {
    /// The condition's type.
    #[serde(rename = "type")]
    pub type_: SubscriptionConditionType,
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
    pub last_heartbeat_time: Option<Time>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// What OLM observed of a Subscription.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionStatus {
    /// The CSV the Subscription is moving to.
    #[serde(
        default,
        rename = "currentCSV",
        skip_serializing_if = "Option::is_none"
    )]
    pub current_csv: Option<String>,
    /// The CSV installed by the Subscription.
    #[serde(
        default,
        rename = "installedCSV",
        skip_serializing_if = "Option::is_none"
    )]
    pub installed_csv: Option<String>,
    /// The InstallPlan (older form of `installPlanRef`).
    #[serde(
        default,
        rename = "installplan",
        skip_serializing_if = "Option::is_none"
    )]
    pub install: Option<InstallPlanReference>,
    /// Where the Subscription is in its upgrade cycle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<SubscriptionState>,
    /// Why it is in that state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The generation of the InstallPlan in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::go_int"))]
    pub install_plan_generation: Option<i64>,
    /// The InstallPlan in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_plan_ref: Option<ObjectReference>,
    /// The health of each catalog the Subscription may use.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub catalog_health: Vec<SubscriptionCatalogHealth>,
    /// The Subscription's conditions.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<SubscriptionCondition>,
    /// When the status last changed.
    pub last_updated: Time,
}

/// The InstallPlan a Subscription uses.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanReference {
    /// Its API version.
    pub api_version: String,
    /// Its kind.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// Its UID.
    #[serde(rename = "uuid")]
    pub uid: String,
}

/// The health of one catalog.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionCatalogHealth {
    /// The CatalogSource.
    pub catalog_source_ref: ObjectReference,
    /// When its health was last checked.
    pub last_updated: Time,
    /// Whether it is healthy.
    pub healthy: bool,
}
