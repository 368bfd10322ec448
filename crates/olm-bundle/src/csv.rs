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

/// The four install modes of OLM; anything else in a CSV is kept as `Other` and never matches.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum InstallModeType {
    AllNamespaces,
    MultiNamespace,
    OwnNamespace,
    SingleNamespace,
    #[serde(untagged)]
    Other(String),
}

impl InstallModeType {
    pub fn as_str(&self) -> &str {
        match self {
            Self::AllNamespaces => "AllNamespaces",
            Self::MultiNamespace => "MultiNamespace",
            Self::OwnNamespace => "OwnNamespace",
            Self::SingleNamespace => "SingleNamespace",
            Self::Other(s) => s,
        }
    }
}

impl std::fmt::Display for InstallModeType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InstallMode {
    #[serde(rename = "type")]
    pub mode: InstallModeType,
    #[serde(default)]
    pub supported: bool,
}

/// Webhook kinds a CSV may declare.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum WebhookType {
    ConversionWebhook,
    MutatingAdmissionWebhook,
    ValidatingAdmissionWebhook,
    #[serde(untagged)]
    Other(String),
}

impl WebhookType {
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
    pub verbs: Option<Vec<String>>,
    #[serde(default, rename = "apiGroups")]
    pub api_groups: Option<Vec<String>>,
    #[serde(default)]
    pub resources: Option<Vec<String>>,
    #[serde(default)]
    pub resource_names: Option<Vec<String>>,
    #[serde(default, rename = "nonResourceURLs")]
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
    pub service_account_name: String,
    #[serde(default)]
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
    pub name: String,
    #[serde(default)]
    pub spec: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StrategyDetailsDeployment {
    #[serde(default, rename = "deployments")]
    pub deployments: Vec<StrategyDeploymentSpec>,
    #[serde(default)]
    pub permissions: Vec<StrategyDeploymentPermissions>,
    #[serde(default)]
    pub cluster_permissions: Vec<StrategyDeploymentPermissions>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NamedInstallStrategy {
    #[serde(default)]
    pub strategy: String,
    #[serde(default)]
    pub spec: StrategyDetailsDeployment,
}

/// An owned or required CRD of the CSV; `name` is `<plural>.<group>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CrdDescription {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CustomResourceDefinitions {
    #[serde(default)]
    pub owned: Vec<CrdDescription>,
    #[serde(default)]
    pub required: Vec<CrdDescription>,
}

/// An owned or required aggregated API; the APIService is named `<version>.<group>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiServiceDescription {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub deployment_name: String,
    #[serde(default)]
    pub container_port: i32,
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiServiceDefinitions {
    #[serde(default)]
    pub owned: Vec<ApiServiceDescription>,
    #[serde(default)]
    pub required: Vec<ApiServiceDescription>,
}

/// A webhook the operator serves.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDescription {
    #[serde(default)]
    pub generate_name: String,
    #[serde(default, rename = "type")]
    pub webhook_type: WebhookType,
    #[serde(default)]
    pub deployment_name: String,
    /// Absent means 0 in the Go struct; the Service port then defaults to 443 but the client
    /// config carries the literal value, as upstream does.
    #[serde(default)]
    pub container_port: i32,
    /// `IntOrString`.
    #[serde(default)]
    pub target_port: Option<Value>,
    #[serde(default)]
    pub rules: Vec<Value>,
    #[serde(default)]
    pub failure_policy: Option<String>,
    #[serde(default)]
    pub match_policy: Option<String>,
    #[serde(default)]
    pub object_selector: Option<Value>,
    #[serde(default)]
    pub side_effects: Option<String>,
    #[serde(default)]
    pub timeout_seconds: Option<i64>,
    #[serde(default)]
    pub admission_review_versions: Option<Vec<String>>,
    #[serde(default)]
    pub reinvocation_policy: Option<String>,
    #[serde(default)]
    pub webhook_path: Option<String>,
    #[serde(default, rename = "conversionCRDs")]
    pub conversion_crds: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Maintainer {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub email: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AppLink {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub url: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Icon {
    #[serde(default)]
    pub base64data: String,
    #[serde(default)]
    pub mediatype: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RelatedImage {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub image: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Gvk {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
}

/// `spec` of the CSV (olmv0 §1.1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CsvSpec {
    #[serde(default)]
    pub install: NamedInstallStrategy,
    /// `OperatorVersion`: a semver string (YAML numbers are accepted and printed back).
    #[serde(default)]
    pub version: Option<Value>,
    #[serde(default)]
    pub release: Option<Value>,
    #[serde(default)]
    pub maturity: Option<String>,
    #[serde(default)]
    pub display_name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub keywords: Option<Vec<String>>,
    #[serde(default)]
    pub maintainers: Option<Vec<Maintainer>>,
    #[serde(default)]
    pub provider: Option<AppLink>,
    #[serde(default)]
    pub links: Option<Vec<AppLink>>,
    #[serde(default)]
    pub icon: Option<Vec<Icon>>,
    #[serde(default)]
    pub customresourcedefinitions: CustomResourceDefinitions,
    #[serde(default)]
    pub apiservicedefinitions: ApiServiceDefinitions,
    #[serde(default)]
    pub webhookdefinitions: Vec<WebhookDescription>,
    #[serde(default, rename = "nativeAPIs")]
    pub native_apis: Option<Vec<Gvk>>,
    #[serde(default)]
    pub min_kube_version: Option<String>,
    #[serde(default)]
    pub install_modes: Vec<InstallMode>,
    #[serde(default)]
    pub replaces: Option<String>,
    #[serde(default)]
    pub skips: Option<Vec<String>>,
    #[serde(default)]
    pub related_images: Option<Vec<RelatedImage>>,
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub selector: Option<Value>,
    #[serde(default)]
    pub cleanup: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObjectMeta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
}

/// A parsed CSV: the typed view plus the document it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterServiceVersion {
    pub metadata: ObjectMeta,
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
    /// Reads the typed view from a decoded document. Errors carry serde's path-less message;
    /// the caller adds the file name.
    pub fn from_value(raw: Value) -> Result<Self, String> {
        let doc: CsvDoc = serde_json::from_value(raw.clone()).map_err(|e| e.to_string())?;
        Ok(Self {
            metadata: doc.metadata,
            spec: doc.spec,
            raw,
        })
    }

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
            .map(|m| m.mode.clone())
            .collect();
        v.sort_by(|a, b| a.as_str().cmp(b.as_str()));
        v.dedup();
        v
    }

    pub fn supports(&self, mode: &InstallModeType) -> bool {
        self.spec
            .install_modes
            .iter()
            .any(|m| m.supported && &m.mode == mode)
    }

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
