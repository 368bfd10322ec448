//! The ClusterServiceVersion, typed where OLM decides something from it.
//!
//! Fields OLM reads (install strategy, install modes, owned/required APIs, webhooks, versions,
//! metadata) are typed; large embedded Kubernetes types (a Deployment spec, descriptor values,
//! selectors) stay JSON values so that nothing in them is lost when they are copied into rendered
//! manifests. The original document is kept as [`ClusterServiceVersion::raw`] so it can be
//! re-emitted unchanged (for `olm.bundle.object` and `olm.csv.metadata`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The install modes and the `spec.installModes[]` entry are the API's own: a bundle's CSV is
/// the object OLM v0 stores. A mode this crate does not know is kept as `Other` and never matches.
pub use olm_v0_api::v1alpha1::{InstallMode, InstallModeType};

/// Webhook kinds a CSV may declare.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum WebhookType {
    /// Converts a CRD's stored versions.
    ConversionWebhook,
    /// A mutating admission webhook.
    MutatingAdmissionWebhook,
    /// A validating admission webhook.
    ValidatingAdmissionWebhook,
    #[serde(untagged)]
    /// Any other value in the CSV, kept as written.
    Other(String),
}

impl WebhookType {
    /// The type as spelled in the CSV.
    pub fn as_str(&self) -> &str {
        match self {
            Self::ConversionWebhook => "ConversionWebhook",
            Self::MutatingAdmissionWebhook => "MutatingAdmissionWebhook",
            Self::ValidatingAdmissionWebhook => "ValidatingAdmissionWebhook",
            Self::Other(s) => s,
        }
    }
}

impl Default for WebhookType {
    fn default() -> Self {
        Self::Other(String::new())
    }
}

impl std::fmt::Display for WebhookType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `rbac/v1 PolicyRule`. `verbs` is the one field without `omitempty`, which matters for the
/// hash that names generated roles: an absent list encodes as `null`, an empty one as `[]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    #[serde(default)]
    /// The verbs allowed; see the type's doc for `None` versus empty.
    pub verbs: Option<Vec<String>>,
    #[serde(default, rename = "apiGroups")]
    /// The API groups the rule covers.
    pub api_groups: Option<Vec<String>>,
    #[serde(default)]
    /// The resources the rule covers.
    pub resources: Option<Vec<String>>,
    #[serde(default)]
    /// The resource names the rule is limited to.
    pub resource_names: Option<Vec<String>>,
    #[serde(default, rename = "nonResourceURLs")]
    /// The non-resource URLs the rule covers (cluster rules only).
    pub non_resource_urls: Option<Vec<String>>,
}

impl PolicyRule {
    /// The rule as Go's `encoding/json` writes it: field order of the Go struct, `omitempty` on
    /// everything but `verbs`.
    pub fn to_go_value(&self) -> Value {
        let mut m = Map::new();
        m.insert(
            "verbs".into(),
            self.verbs.as_ref().map_or(Value::Null, |v| json!(v)),
        );
        let mut opt = |k: &str, v: &Option<Vec<String>>| {
            if let Some(v) = v.as_ref().filter(|v| !v.is_empty()) {
                m.insert(k.into(), json!(v));
            }
        };
        opt("apiGroups", &self.api_groups);
        opt("resources", &self.resources);
        opt("resourceNames", &self.resource_names);
        opt("nonResourceURLs", &self.non_resource_urls);
        Value::Object(m)
    }
}

/// One `permissions[]` / `clusterPermissions[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategyDeploymentPermissions {
    #[serde(default)]
    /// The service account the rules are granted to.
    pub service_account_name: String,
    #[serde(default)]
    /// The rules granted.
    pub rules: Option<Vec<PolicyRule>>,
}

impl StrategyDeploymentPermissions {
    /// Go JSON shape (`serviceAccountName`, then `rules`, neither omitempty): the input of the
    /// name hash.
    pub fn to_go_value(&self) -> Value {
        let rules = match &self.rules {
            None => Value::Null,
            Some(r) => Value::Array(r.iter().map(PolicyRule::to_go_value).collect()),
        };
        json!({"serviceAccountName": self.service_account_name, "rules": rules})
    }
}

/// One `install.spec.deployments[]` entry; `spec` is an `apps/v1 DeploymentSpec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StrategyDeploymentSpec {
    #[serde(default)]
    /// The Deployment's name.
    pub name: String,
    #[serde(default)]
    /// The `apps/v1 DeploymentSpec`, kept as JSON so that nothing in it is lost.
    pub spec: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Labels for the Deployment, when given.
    pub label: Option<BTreeMap<String, String>>,
}

/// `spec.install.spec`: what the `deployment` install strategy installs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategyDetailsDeployment {
    #[serde(default, rename = "deployments")]
    /// The Deployments to create.
    pub deployments: Vec<StrategyDeploymentSpec>,
    #[serde(default)]
    /// Namespaced RBAC for the operator's service accounts.
    pub permissions: Vec<StrategyDeploymentPermissions>,
    #[serde(default)]
    /// Cluster-wide RBAC for the operator's service accounts.
    pub cluster_permissions: Vec<StrategyDeploymentPermissions>,
}

/// `spec.install`: the install strategy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedInstallStrategy {
    #[serde(default)]
    /// The strategy's name; `deployment` is the only one OLM knows.
    pub strategy: String,
    #[serde(default)]
    /// What the strategy installs.
    pub spec: StrategyDetailsDeployment,
}

/// An owned or required CRD of the CSV; `name` is `<plural>.<group>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdDescription {
    #[serde(default)]
    /// `<plural>.<group>`.
    pub name: String,
    #[serde(default)]
    /// The API version the CSV describes.
    pub version: String,
    #[serde(default)]
    /// The kind.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// A human-readable name, if given.
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// A description, if given.
    pub description: Option<String>,
    #[serde(flatten)]
    /// Every other field (descriptors, resources), kept as written.
    pub rest: Map<String, Value>,
}

/// `spec.customresourcedefinitions`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CustomResourceDefinitions {
    #[serde(default)]
    /// The CRDs the operator provides.
    pub owned: Vec<CrdDescription>,
    #[serde(default)]
    /// The CRDs the operator needs from others.
    pub required: Vec<CrdDescription>,
}

/// An owned or required aggregated API; the APIService is named `<version>.<group>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiServiceDescription {
    #[serde(default)]
    /// The APIService's name.
    pub name: String,
    #[serde(default)]
    /// The API group.
    pub group: String,
    #[serde(default)]
    /// The API version.
    pub version: String,
    #[serde(default)]
    /// The kind served.
    pub kind: String,
    #[serde(default)]
    /// The Deployment that serves the API.
    pub deployment_name: String,
    #[serde(default)]
    /// The container port the API is served on.
    pub container_port: i32,
    #[serde(flatten)]
    /// Every other field, kept as written.
    pub rest: Map<String, Value>,
}

/// `spec.apiservicedefinitions`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiServiceDefinitions {
    #[serde(default)]
    /// The aggregated APIs the operator serves.
    pub owned: Vec<ApiServiceDescription>,
    #[serde(default)]
    /// The aggregated APIs the operator needs from others.
    pub required: Vec<ApiServiceDescription>,
}

/// A webhook the operator serves.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDescription {
    #[serde(default)]
    /// The webhook's name (used as the generated configuration's name).
    pub generate_name: String,
    #[serde(default, rename = "type")]
    /// What kind of webhook it is.
    pub webhook_type: WebhookType,
    #[serde(default)]
    /// The Deployment that serves it.
    pub deployment_name: String,
    /// Absent means 0 in the Go struct; the Service port then defaults to 443 but the client
    /// config carries the literal value, as upstream does.
    #[serde(default)]
    pub container_port: i32,
    /// `IntOrString`.
    #[serde(default)]
    pub target_port: Option<Value>,
    #[serde(default)]
    /// The admission rules (`admissionregistration/v1 RuleWithOperations`), kept as JSON.
    pub rules: Vec<Value>,
    #[serde(default)]
    /// `failurePolicy`, if given.
    pub failure_policy: Option<String>,
    #[serde(default)]
    /// `matchPolicy`, if given.
    pub match_policy: Option<String>,
    #[serde(default)]
    /// `objectSelector`, if given.
    pub object_selector: Option<Value>,
    #[serde(default)]
    /// `sideEffects`, if given.
    pub side_effects: Option<String>,
    #[serde(default)]
    /// `timeoutSeconds`, if given.
    pub timeout_seconds: Option<i64>,
    #[serde(default)]
    /// `admissionReviewVersions`, if given.
    pub admission_review_versions: Option<Vec<String>>,
    #[serde(default)]
    /// `reinvocationPolicy`, if given.
    pub reinvocation_policy: Option<String>,
    #[serde(default)]
    /// The URL path the webhook is served on, if given.
    pub webhook_path: Option<String>,
    #[serde(default, rename = "conversionCRDs")]
    /// For a conversion webhook: the CRDs it converts.
    pub conversion_crds: Vec<String>,
}

/// One `spec.maintainers[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Maintainer {
    #[serde(default)]
    /// The maintainer's name.
    pub name: String,
    #[serde(default)]
    /// The maintainer's e-mail address.
    pub email: String,
}

/// A named link (`spec.provider`, `spec.links[]`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AppLink {
    #[serde(default)]
    /// The link text.
    pub name: String,
    #[serde(default)]
    /// The address.
    pub url: String,
}

/// One `spec.icon[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Icon {
    #[serde(default)]
    /// The image bytes, base64 encoded.
    pub base64data: String,
    #[serde(default)]
    /// The image's media type.
    pub mediatype: String,
}

/// One `spec.relatedImages[]` entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RelatedImage {
    #[serde(default)]
    /// A label for the image.
    pub name: String,
    #[serde(default)]
    /// The image reference.
    pub image: String,
}

/// One `spec.nativeAPIs[]` entry: an API the operator needs from the cluster itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Gvk {
    #[serde(default)]
    /// The API group.
    pub group: String,
    #[serde(default)]
    /// The API version.
    pub version: String,
    #[serde(default)]
    /// The kind.
    pub kind: String,
}

/// `spec` of the CSV (olmv0 §1.1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsvSpec {
    #[serde(default)]
    /// How the operator is installed.
    pub install: NamedInstallStrategy,
    /// `OperatorVersion`: a semver string (YAML numbers are accepted and printed back).
    #[serde(default)]
    pub version: Option<Value>,
    #[serde(default)]
    /// `spec.release`, when given (YAML numbers are accepted as for `version`).
    pub release: Option<Value>,
    #[serde(default)]
    /// `spec.maturity` (`alpha`, `stable`, …).
    pub maturity: Option<String>,
    #[serde(default)]
    /// `spec.displayName`.
    pub display_name: Option<String>,
    #[serde(default)]
    /// `spec.description`.
    pub description: Option<String>,
    #[serde(default)]
    /// `spec.keywords`.
    pub keywords: Option<Vec<String>>,
    #[serde(default)]
    /// `spec.maintainers`.
    pub maintainers: Option<Vec<Maintainer>>,
    #[serde(default)]
    /// `spec.provider`.
    pub provider: Option<AppLink>,
    #[serde(default)]
    /// `spec.links`.
    pub links: Option<Vec<AppLink>>,
    #[serde(default)]
    /// `spec.icon`.
    pub icon: Option<Vec<Icon>>,
    #[serde(default)]
    /// The CRDs the operator owns and needs.
    pub customresourcedefinitions: CustomResourceDefinitions,
    #[serde(default)]
    /// The aggregated APIs the operator serves and needs.
    pub apiservicedefinitions: ApiServiceDefinitions,
    #[serde(default)]
    /// The webhooks the operator serves.
    pub webhookdefinitions: Vec<WebhookDescription>,
    #[serde(default, rename = "nativeAPIs")]
    /// `spec.nativeAPIs`.
    pub native_apis: Option<Vec<Gvk>>,
    #[serde(default)]
    /// `spec.minKubeVersion`: the oldest Kubernetes the operator runs on.
    pub min_kube_version: Option<String>,
    #[serde(default)]
    /// The install modes the operator supports.
    pub install_modes: Vec<InstallMode>,
    #[serde(default)]
    /// `spec.replaces`: the CSV this one upgrades from.
    pub replaces: Option<String>,
    #[serde(default)]
    /// `spec.skips`: further CSVs this one upgrades from directly.
    pub skips: Option<Vec<String>>,
    #[serde(default)]
    /// `spec.relatedImages`.
    pub related_images: Option<Vec<RelatedImage>>,
    #[serde(default)]
    /// `spec.labels`.
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    /// `spec.annotations`.
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    /// `spec.selector`, kept as JSON.
    pub selector: Option<Value>,
    #[serde(default)]
    /// `spec.cleanup`, kept as JSON.
    pub cleanup: Option<Value>,
}

/// The part of `metadata` OLM reads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObjectMeta {
    #[serde(default)]
    /// `metadata.name`: the CSV's (and the bundle's) name.
    pub name: String,
    #[serde(default)]
    /// `metadata.namespace`, if given.
    pub namespace: Option<String>,
    #[serde(default)]
    /// `metadata.annotations`.
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    /// `metadata.labels`.
    pub labels: Option<BTreeMap<String, String>>,
}

/// A parsed CSV: the typed view plus the document it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterServiceVersion {
    /// The typed `metadata`.
    pub metadata: ObjectMeta,
    /// The typed `spec`.
    pub spec: CsvSpec,
    /// The CSV exactly as read (JSON form of the YAML document).
    pub raw: Value,
}

#[derive(Deserialize)]
struct CsvDoc {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: CsvSpec,
}

impl ClusterServiceVersion {
    /// Reads the typed view from a decoded document. Errors are serde's, path-less; the caller
    /// adds the file name.
    pub fn from_value(raw: Value) -> Result<Self, serde_json::Error> {
        let doc: CsvDoc = serde_json::from_value(raw.clone())?;
        Ok(Self {
            metadata: doc.metadata,
            spec: doc.spec,
            raw,
        })
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// The CSV's `spec.version` as a string ("" when absent).
    pub fn version(&self) -> String {
        value_as_plain_string(self.spec.version.as_ref())
    }

    /// The CSV's `spec.release` as a string ("" when absent).
    pub fn release(&self) -> String {
        value_as_plain_string(self.spec.release.as_ref())
    }

    /// Install modes marked supported, sorted and deduplicated (upstream prints them as a sorted
    /// Go set).
    pub fn supported_install_modes(&self) -> Vec<InstallModeType> {
        let mut v: Vec<InstallModeType> = self
            .spec
            .install_modes
            .iter()
            .filter(|m| m.supported)
            .map(|m| m.type_.clone())
            .collect();
        v.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        v.dedup();
        v
    }

    /// Whether `mode` is listed and marked supported.
    pub fn supports(&self, mode: &InstallModeType) -> bool {
        self.spec
            .install_modes
            .iter()
            .any(|m| m.supported && &m.type_ == mode)
    }

    /// `metadata.annotations`, empty when absent.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        self.metadata.annotations.clone().unwrap_or_default()
    }
}

fn value_as_plain_string(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}
