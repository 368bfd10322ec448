//! `ClusterServiceVersion`: one version of an operator, how to install it and what it provides
//! and needs (API repo `pkg/operators/v1alpha1/clusterserviceversion_types.go`).

use std::collections::BTreeMap;

use k8s_openapi::api::admissionregistration::v1::RuleWithOperations;
use k8s_openapi::api::apps::v1::DeploymentSpec;
use k8s_openapi::api::rbac::v1::PolicyRule;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::enums::open_enum;

/// The desired state of a ClusterServiceVersion.
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "ClusterServiceVersion",
    namespaced,
    status = "ClusterServiceVersionStatus",
    schema = "disabled",
    derive = "PartialEq",
    shortname = "csv",
    shortname = "csvs",
    category = "olm",
    doc = "One version of an operator: how to install it and which APIs it provides and needs.",
    printcolumn = r#"{"name":"Display","type":"string","jsonPath":".spec.displayName","description":"The name of the CSV"}"#,
    printcolumn = r#"{"name":"Version","type":"string","jsonPath":".spec.version","description":"The version of the CSV"}"#,
    printcolumn = r#"{"name":"Release","type":"string","jsonPath":".spec.release","description":"The release of this version of the CSV"}"#,
    printcolumn = r#"{"name":"Replaces","type":"string","jsonPath":".spec.replaces","description":"The name of a CSV that this one replaces"}"#,
    printcolumn = r#"{"name":"Phase","type":"string","jsonPath":".status.phase"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterServiceVersionSpec {
    /// How the operator is installed: its Deployments and the permissions they run with.
    pub install: NamedInstallStrategy,
    /// The operator's semantic version (parse it with `olm-version`; kept as text so that any
    /// object the API server accepts can be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Dot-separated identifiers that tell apart builds of the same version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<OperatorRelease>,
    /// How mature the operator is (`alpha`, `stable`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maturity: Option<String>,
    /// The CustomResourceDefinitions the operator owns and the ones it needs.
    #[serde(
        default,
        rename = "customresourcedefinitions",
        skip_serializing_if = "Option::is_none"
    )]
    pub custom_resource_definitions: Option<CustomResourceDefinitions>,
    /// The aggregated APIs the operator serves and the ones it needs.
    #[serde(
        default,
        rename = "apiservicedefinitions",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_service_definitions: Option<ApiServiceDefinitions>,
    /// The admission and conversion webhooks the operator serves.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        rename = "webhookdefinitions",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub webhook_definitions: Vec<WebhookDescription>,
    /// Built-in APIs the cluster must serve for the operator to run.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        rename = "nativeAPIs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub native_apis: Vec<GroupVersionKind>,
    /// The oldest Kubernetes version the operator runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_kube_version: Option<String>,
    /// The operator's name as shown to people.
    pub display_name: String,
    /// What the operator does, in Markdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Words to find the operator by.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub keywords: Vec<String>,
    /// Who maintains the operator.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub maintainers: Vec<Maintainer>,
    /// Who publishes the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AppLink>,
    /// Links for more about the operator.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub links: Vec<AppLink>,
    /// The operator's icon.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub icon: Vec<Icon>,
    /// Which OperatorGroup shapes the operator supports.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub install_modes: Vec<InstallMode>,
    /// The CSV this one upgrades.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// Labels of the CSV itself; kept for tools, not read by OLM.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub labels: BTreeMap<String, String>,
    /// Annotations of the CSV itself; kept for tools, not read by OLM.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub annotations: BTreeMap<String, String>,
    /// Selects the resources that belong to the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Whether the operator's resources are cleaned up when the CSV is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<CleanupSpec>,
    /// Further CSVs this one upgrades directly.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub skips: Vec<String>,
    /// The images the operator uses, for mirroring.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub related_images: Vec<RelatedImage>,
}

/// A release: dot-separated identifiers, as semver pre-release identifiers are written.
///
/// The CRD limits it to 20 characters of alphanumerics, hyphens and dots, without leading
/// zeros in numeric identifiers; `olm-version` parses it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[serde(transparent)]
pub struct OperatorRelease(pub String);

#[cfg(feature = "schema")]
impl schemars::JsonSchema for OperatorRelease {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        "OperatorRelease".into()
    }

    // The API server's checks, with the messages users see from `kubectl`.
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "maxLength": 20,
            "x-kubernetes-validations": [
                {
                    "message": "release version must be composed of dot-separated identifiers containing only alphanumerics and hyphens",
                    "rule": "self.matches('^[0-9A-Za-z-]+(\\\\.[0-9A-Za-z-]+)*$')",
                },
                {
                    "message": "numeric identifiers in release version must not have leading zeros",
                    "rule": "!self.split('.').exists(x, x.matches('^0[0-9]+$'))",
                },
            ],
        })
    }
}

open_enum! {
    /// An OperatorGroup shape an operator may support.
    pub enum InstallModeType {
        /// Watches only the namespace it runs in.
        OwnNamespace = "OwnNamespace",
        /// Watches one namespace.
        SingleNamespace = "SingleNamespace",
        /// Watches several namespaces.
        MultiNamespace = "MultiNamespace",
        /// Watches every namespace.
        AllNamespaces = "AllNamespaces",
    }
}

/// Whether an operator supports one install mode.
//
// The one `spec.installModes[]` type: the API's, and bundle tooling's (a bundle's CSV file is the
// object OLM v0 stores). A file that leaves `supported` out reads as `false`, as Go's decoder
// reads it; the CRD still requires it and gives it no default, as upstream's does.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(transform = require_supported))]
pub struct InstallMode {
    /// The install mode.
    #[serde(rename = "type")]
    pub type_: InstallModeType,
    /// Whether it is supported.
    #[serde(default)]
    pub supported: bool,
}

/// Keeps `supported` required and without a default in the CRD, as upstream's is, although a
/// missing one reads as `false`.
#[cfg(feature = "schema")]
fn require_supported(schema: &mut schemars::Schema) {
    let object = schema.ensure_object();
    if let Some(supported) = object
        .get_mut("properties")
        .and_then(|p| p.get_mut("supported"))
        .and_then(serde_json::Value::as_object_mut)
    {
        supported.remove("default");
    }
    if let Some(required) = object
        .entry("required")
        .or_insert_with(|| serde_json::json!([]))
        .as_array_mut()
        && !required.iter().any(|r| r == "supported")
    {
        required.push("supported".into());
    }
}

/// An install strategy by name; only `deployment` exists.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NamedInstallStrategy {
    /// The strategy's name (`deployment`).
    #[serde(rename = "strategy")]
    pub strategy_name: String,
    /// The Deployments and permissions of the `deployment` strategy.
    #[serde(rename = "spec", default, skip_serializing_if = "Option::is_none")]
    pub strategy_spec: Option<StrategyDetailsDeployment>,
}

/// The name of the only install strategy.
pub const INSTALL_STRATEGY_NAME_DEPLOYMENT: &str = "deployment";

/// The permissions one service account needs.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct StrategyDeploymentPermissions {
    /// The service account the rules are granted to.
    pub service_account_name: String,
    /// The rules.
    pub rules: Vec<PolicyRule>,
}

/// One Deployment of the operator.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StrategyDeploymentSpec {
    /// The Deployment's name.
    pub name: String,
    /// The Deployment's spec.
    pub spec: DeploymentSpec,
    /// Extra labels of the Deployment object.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub label: BTreeMap<String, String>,
}

/// What the `deployment` strategy installs.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct StrategyDetailsDeployment {
    /// The Deployments.
    #[serde(rename = "deployments")]
    pub deployment_specs: Vec<StrategyDeploymentSpec>,
    /// Namespaced permissions, granted in the target namespaces.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub permissions: Vec<StrategyDeploymentPermissions>,
    /// Cluster-wide permissions.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub cluster_permissions: Vec<StrategyDeploymentPermissions>,
}

/// How a UI shows one field of a custom resource (the same shape for spec, status and actions).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    /// The field's path in the object.
    pub path: String,
    /// The field's name as shown to people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// What the field is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// `urn:alm:descriptor:…` hints for UIs.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        rename = "x-descriptors",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub x_descriptors: Vec<String>,
    /// Any JSON value. Upstream's CRD declares it a base64 string (its Go type is raw JSON), so
    /// the API server accepts only strings here, and so does this schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::raw_json"))]
    pub value: Option<Value>,
}

/// A CRD a CSV owns or needs.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CrdDescription {
    /// `<plural>.<group>`.
    pub name: String,
    /// The served version.
    pub version: String,
    /// The kind.
    pub kind: String,
    /// The kind's name as shown to people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// What the kind is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The kinds an object of this kind creates.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resources: Vec<ApiResourceReference>,
    /// UI hints for status fields.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub status_descriptors: Vec<Descriptor>,
    /// UI hints for spec fields.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub spec_descriptors: Vec<Descriptor>,
    /// UI hints for actions.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub action_descriptors: Vec<Descriptor>,
}

/// An aggregated API a CSV serves or needs.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApiServiceDescription {
    /// The resource's plural name.
    pub name: String,
    /// The API group.
    pub group: String,
    /// The API version; the APIService is named `<version>.<group>`.
    pub version: String,
    /// The kind.
    pub kind: String,
    /// The Deployment that serves the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_name: Option<String>,
    /// The port the Deployment serves the API on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_port: Option<i32>,
    /// The kind's name as shown to people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// What the kind is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The kinds an object of this kind creates.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub resources: Vec<ApiResourceReference>,
    /// UI hints for status fields.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub status_descriptors: Vec<Descriptor>,
    /// UI hints for spec fields.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub spec_descriptors: Vec<Descriptor>,
    /// UI hints for actions.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub action_descriptors: Vec<Descriptor>,
}

/// A kind an object creates.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ApiResourceReference {
    /// The resource's plural name.
    pub name: String,
    /// The kind.
    pub kind: String,
    /// The API version.
    pub version: String,
}

/// The kinds of webhook a CSV can serve; the CRD accepts only these.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum WebhookAdmissionType {
    /// A ValidatingWebhookConfiguration.
    ValidatingAdmissionWebhook,
    /// A MutatingWebhookConfiguration.
    MutatingAdmissionWebhook,
    /// A conversion webhook of the CSV's CRDs.
    ConversionWebhook,
}

/// A webhook the operator serves.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookDescription {
    /// The webhook's name; unique within the CSV.
    pub generate_name: String,
    /// Which kind of webhook.
    #[serde(rename = "type")]
    pub type_: WebhookAdmissionType,
    /// The Deployment that serves the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_name: Option<String>,
    /// The port the webhook's Service listens on (the API server fills in 443).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        feature = "schema",
        schemars(range(min = 1, max = 65535), extend("default" = 443))
    )]
    pub container_port: Option<i32>,
    /// The container port the Service forwards to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_port: Option<IntOrString>,
    /// The operations and resources the webhook is called for.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub rules: Vec<RuleWithOperations>,
    /// What happens when a call fails (`Ignore`, `Fail`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<String>,
    /// How rules match requests of other API versions (`Exact`, `Equivalent`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_policy: Option<String>,
    /// Which objects the webhook is called for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_selector: Option<LabelSelector>,
    /// Whether the webhook has side effects (`None`, `NoneOnDryRun`, …).
    pub side_effects: String,
    /// How long the API server waits for an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
    /// The AdmissionReview versions the webhook understands.
    pub admission_review_versions: Vec<String>,
    /// Whether a mutating webhook is called again after other mutations (`Never`, `IfNeeded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reinvocation_policy: Option<String>,
    /// The HTTP path the webhook is served on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_path: Option<String>,
    /// The CRDs a conversion webhook converts.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        rename = "conversionCRDs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conversion_crds: Vec<String>,
}

/// The CRDs a CSV owns and needs.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CustomResourceDefinitions {
    /// CRDs shipped and owned by this operator.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub owned: Vec<CrdDescription>,
    /// CRDs another operator must provide.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub required: Vec<CrdDescription>,
}

/// The aggregated APIs a CSV serves and needs.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ApiServiceDefinitions {
    /// APIs this operator serves.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub owned: Vec<ApiServiceDescription>,
    /// APIs another operator must serve.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub required: Vec<ApiServiceDescription>,
}

/// A group, version and kind (`metav1.GroupVersionKind`, which k8s-openapi does not have).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GroupVersionKind {
    /// The API group ("" for the core group).
    pub group: String,
    /// The API version.
    pub version: String,
    /// The kind.
    pub kind: String,
}

/// Whether cleanup on deletion is on.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CleanupSpec {
    /// Delete the operator's resources when the CSV is deleted.
    pub enabled: bool,
}

/// A maintainer.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Maintainer {
    /// Their name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Their email address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// A named link.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AppLink {
    /// The link's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// An icon.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Icon {
    /// The image, base64-encoded.
    #[serde(rename = "base64data")]
    pub data: String,
    /// Its media type (`image/svg+xml`, …).
    #[serde(rename = "mediatype")]
    pub media_type: String,
}

/// An image the operator uses.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RelatedImage {
    /// What the image is for.
    pub name: String,
    /// The image reference.
    pub image: String,
}

open_enum! {
    /// Where a CSV is in its life.
    pub enum ClusterServiceVersionPhase {
        /// Requirements not yet met.
        Pending = "Pending",
        /// Requirements met; about to install.
        InstallReady = "InstallReady",
        /// Installed; waiting for the components to become healthy.
        Installing = "Installing",
        /// Installed and healthy.
        Succeeded = "Succeeded",
        /// Failed; see the reason.
        Failed = "Failed",
        /// Declared upstream, never set.
        Unknown = "Unknown",
        /// A newer CSV is taking over.
        Replacing = "Replacing",
        /// Replaced; about to be deleted.
        Deleting = "Deleting",
    }
}

open_enum! {
    /// Why a CSV is in its phase (every reason upstream declares).
    pub enum ConditionReason {
        /// Requirements not yet checked.
        RequirementsUnknown = "RequirementsUnknown",
        /// Some requirement is missing.
        RequirementsNotMet = "RequirementsNotMet",
        /// Every requirement is present.
        AllRequirementsMet = "AllRequirementsMet",
        /// Another CSV owns the same API.
        OwnerConflict = "OwnerConflict",
        /// Installing a component failed; retried.
        InstallComponentFailed = "InstallComponentFailed",
        /// Installing a component failed; not retried until the cluster changes.
        InstallComponentFailedNoRetry = "InstallComponentFailedNoRetry",
        /// The install strategy cannot be read.
        InvalidInstallStrategy = "InvalidInstallStrategy",
        /// Waiting for components to become healthy.
        InstallWaiting = "InstallWaiting",
        /// Installed.
        InstallSucceeded = "InstallSucceeded",
        /// The install did not become healthy in time, or failed for good.
        InstallCheckFailed = "InstallCheckFailed",
        /// A component of an installed CSV is unhealthy.
        ComponentUnhealthy = "ComponentUnhealthy",
        /// A newer CSV replaces this one.
        BeingReplaced = "BeingReplaced",
        /// The newer CSV succeeded.
        Replaced = "Replaced",
        /// Components must be installed again.
        NeedsReinstall = "NeedsReinstall",
        /// Serving certificates are due for rotation.
        NeedsCertRotation = "NeedsCertRotation",
        /// Resources of an owned APIService are missing or wrong.
        ApiServiceResourceIssue = "APIServiceResourceIssue",
        /// Resources of an owned APIService must be installed again.
        ApiServiceResourcesNeedReinstall = "APIServiceResourcesNeedReinstall",
        /// An owned APIService is not available.
        ApiServiceInstallFailed = "APIServiceInstallFailed",
        /// A copy of a CSV running in another namespace.
        Copied = "Copied",
        /// The install modes repeat a type.
        InvalidInstallModes = "InvalidInstallModes",
        /// The OperatorGroup selects no namespace.
        NoTargetNamespaces = "NoTargetNamespaces",
        /// The install modes do not support the OperatorGroup.
        UnsupportedOperatorGroup = "UnsupportedOperatorGroup",
        /// No OperatorGroup in the namespace.
        NoOperatorGroup = "NoOperatorGroup",
        /// More than one OperatorGroup in the namespace.
        TooManyOperatorGroups = "TooManyOperatorGroups",
        /// Intersecting OperatorGroups provide the same API.
        InterOperatorGroupOwnerConflict = "InterOperatorGroupOwnerConflict",
        /// A static OperatorGroup would have to change its provided APIs.
        CannotModifyStaticOperatorGroupProvidedApis = "CannotModifyStaticOperatorGroupProvidedAPIs",
        /// RBAC or the OperatorGroup's service account changed.
        DetectedClusterChange = "DetectedClusterChange",
        /// A webhook description is invalid.
        InvalidWebhookDescription = "InvalidWebhookDescription",
        /// The CSV being replaced is not upgradeable.
        OperatorConditionNotUpgradeable = "OperatorConditionNotUpgradeable",
        /// Declared upstream, never set.
        WaitingOnCleanup = "WaitingOnCleanup",
    }
}

/// One entry of a CSV's phase history.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterServiceVersionCondition {
    /// The phase entered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ClusterServiceVersionPhase>,
    /// Details for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<ConditionReason>,
    /// When this entry was last written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// When the phase last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

open_enum! {
    /// Whether a requirement, or one of its dependents, is met.
    pub enum StatusReason {
        /// The requirement is present.
        Present = "Present",
        /// The requirement is missing.
        NotPresent = "NotPresent",
        /// Present, but a dependent is not satisfied.
        PresentNotSatisfied = "PresentNotSatisfied",
        /// Present, but not available.
        PresentNotAvailable = "PresentNotAvailable",
        /// A dependent is satisfied.
        Satisfied = "Satisfied",
        /// A dependent is not satisfied.
        NotSatisfied = "NotSatisfied",
    }
}

/// Whether something a requirement depends on is met.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DependentStatus {
    /// The API group.
    pub group: String,
    /// The API version.
    pub version: String,
    /// The kind.
    pub kind: String,
    /// Whether it is met.
    pub status: StatusReason,
    /// The UID of the object checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Details for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Whether one requirement of a CSV is met.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RequirementStatus {
    /// The API group.
    pub group: String,
    /// The API version.
    pub version: String,
    /// The kind.
    pub kind: String,
    /// The object's name.
    pub name: String,
    /// Whether it is met.
    pub status: StatusReason,
    /// Details for people.
    pub message: String,
    /// The UID of the object checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// What the requirement itself depends on.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub dependents: Vec<DependentStatus>,
}

/// What OLM observed of a CSV.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterServiceVersionStatus {
    /// The current phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ClusterServiceVersionPhase>,
    /// Details for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Why the CSV is in its phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<ConditionReason>,
    /// When the status was last written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// When the phase last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// The phase history, newest last.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub conditions: Vec<ClusterServiceVersionCondition>,
    /// Whether each requirement is met.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub requirement_status: Vec<RequirementStatus>,
    /// When the serving certificates were last rotated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certs_last_updated: Option<Time>,
    /// When the serving certificates are next rotated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certs_rotate_at: Option<Time>,
    /// What is left to delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<CleanupStatus>,
}

/// The resources still to be deleted.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CleanupStatus {
    /// By group and kind.
    #[serde(
        default,
        deserialize_with = "crate::go::nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub pending_deletion: Vec<ResourceList>,
}

/// Objects of one group and kind.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ResourceList {
    /// The API group.
    pub group: String,
    /// The kind.
    pub kind: String,
    /// The objects.
    pub instances: Vec<ResourceInstance>,
}

/// One object by name.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ResourceInstance {
    /// Its name.
    pub name: String,
    /// Its namespace; absent for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How each known value is spelled, checking that the spelling reads back as the value.
    fn spellings<T>(known: &[T]) -> Vec<String>
    where
        T: std::fmt::Display + std::fmt::Debug + PartialEq + for<'a> From<&'a str>,
    {
        known
            .iter()
            .map(|value| {
                let text = value.to_string();
                assert_eq!(&T::from(text.as_str()), value);
                text
            })
            .collect()
    }

    /// Upstream's spellings (API repo `pkg/operators/v1alpha1/clusterserviceversion_types.go`):
    /// users and tools match on them.
    #[test]
    fn phases_and_reasons_spelled_as_upstream() {
        assert_eq!(
            spellings(ClusterServiceVersionPhase::KNOWN),
            [
                "Pending",
                "InstallReady",
                "Installing",
                "Succeeded",
                "Failed",
                "Unknown",
                "Replacing",
                "Deleting"
            ]
        );
        assert_eq!(
            spellings(ConditionReason::KNOWN),
            [
                "RequirementsUnknown",
                "RequirementsNotMet",
                "AllRequirementsMet",
                "OwnerConflict",
                "InstallComponentFailed",
                "InstallComponentFailedNoRetry",
                "InvalidInstallStrategy",
                "InstallWaiting",
                "InstallSucceeded",
                "InstallCheckFailed",
                "ComponentUnhealthy",
                "BeingReplaced",
                "Replaced",
                "NeedsReinstall",
                "NeedsCertRotation",
                "APIServiceResourceIssue",
                "APIServiceResourcesNeedReinstall",
                "APIServiceInstallFailed",
                "Copied",
                "InvalidInstallModes",
                "NoTargetNamespaces",
                "UnsupportedOperatorGroup",
                "NoOperatorGroup",
                "TooManyOperatorGroups",
                "InterOperatorGroupOwnerConflict",
                "CannotModifyStaticOperatorGroupProvidedAPIs",
                "DetectedClusterChange",
                "InvalidWebhookDescription",
                "OperatorConditionNotUpgradeable",
                "WaitingOnCleanup",
            ]
        );
    }

    /// Upstream's empty phase (`CSVPhaseNone`, `""`) is never written (`omitempty`): here it is
    /// an absent `phase`. A `""` written by another client reads as an unknown value and is
    /// written back as it was.
    #[test]
    fn the_empty_phase_is_absent() {
        let empty = ClusterServiceVersionStatus::default();
        assert_eq!(serde_json::to_string(&empty).unwrap(), "{}");
        let read: ClusterServiceVersionStatus =
            serde_json::from_str(r#"{"phase":"","reason":""}"#).unwrap();
        assert_eq!(
            read.phase,
            Some(ClusterServiceVersionPhase::Other(String::new()))
        );
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            r#"{"phase":"","reason":""}"#
        );
    }
}
