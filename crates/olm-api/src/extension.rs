//! `ClusterExtension`: a package from a catalog that the cluster should have installed.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use olm_k8s::{DNS1123_LABEL_PATTERN, DNS1123_SUBDOMAIN_PATTERN};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::schema::{
    S, array, conditions, enumeration, free_object, integer, label_selector, matches, object,
    string,
};

/// The desired state of a [`ClusterExtension`].
#[derive(CustomResource, Serialize, Deserialize, Debug, Clone, PartialEq)]
#[kube(
    group = "olm.operatorframework.io",
    version = "v1",
    kind = "ClusterExtension",
    status = "ClusterExtensionStatus",
    schema = "disabled",
    derive = "PartialEq"
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterExtensionSpec {
    /// The namespace namespaced objects go to by default; must exist. Immutable.
    pub namespace: String,
    /// The ServiceAccount whose permissions the installation is limited to; must exist in
    /// `namespace`. Without it, objects are applied with the controller's own identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ServiceAccountReference>,
    /// Where the content comes from.
    pub source: SourceConfig,
    /// Installation options (preflight checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<InstallConfig>,
    /// Bundle-specific configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ClusterExtensionConfig>,
    /// Minutes after which a rollout that has not finished counts as failed (10–720).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_minutes: Option<i32>,
}

/// The ServiceAccount an extension is installed with.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ServiceAccountReference {
    /// A DNS-1123 subdomain. Immutable.
    pub name: String,
}

/// The only source type.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExtensionSourceType {
    /// Bundles are chosen from ClusterCatalogs.
    #[default]
    Catalog,
}

/// Where an extension's content comes from (a union on `sourceType`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SourceConfig {
    /// Always `Catalog`.
    pub source_type: ExtensionSourceType,
    /// Required exactly when `sourceType` is `Catalog`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog: Option<CatalogFilter>,
}

/// Which bundles of which package are acceptable.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CatalogFilter {
    /// The package. Immutable.
    pub package_name: String,
    /// A version range in the grammar of `olm_version::VERSION_RANGE_PATTERN`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Channels to pick from (AND-ed with `version`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<String>,
    /// Which ClusterCatalogs to consider; all when absent or empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Whether the catalog's upgrade edges are enforced.
    #[serde(default)]
    pub upgrade_constraint_policy: UpgradeConstraintPolicy,
}

/// Whether upgrades must follow the catalog's upgrade graph.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpgradeConstraintPolicy {
    /// Only upgrades the package author declared (the default).
    #[default]
    CatalogProvided,
    /// Any version, up or down: the user vouches for it.
    SelfCertified,
}

/// Installation options.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InstallConfig {
    /// Preflight checks; required when `install` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preflight: Option<PreflightConfig>,
}

/// Preflight checks run before an install or upgrade.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PreflightConfig {
    /// CRD upgrade safety; required when `preflight` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crd_upgrade_safety: Option<CrdUpgradeSafetyPreflightConfig>,
}

/// The CRD upgrade-safety check.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CrdUpgradeSafetyPreflightConfig {
    /// Whether the check runs.
    pub enforcement: CrdUpgradeSafetyEnforcement,
}

/// Whether the CRD upgrade-safety check runs.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CrdUpgradeSafetyEnforcement {
    /// Skipped.
    None,
    /// Runs (the default when no preflight block is given).
    #[default]
    Strict,
}

impl ClusterExtensionSpec {
    /// The package the extension installs (empty when its source names none).
    pub fn package_name(&self) -> &str {
        self.source
            .catalog
            .as_ref()
            .map(|c| c.package_name.as_str())
            .unwrap_or_default()
    }

    /// The CRD upgrade-safety enforcement in effect: `Strict` unless the spec says otherwise.
    pub fn crd_upgrade_safety(&self) -> CrdUpgradeSafetyEnforcement {
        self.install
            .as_ref()
            .and_then(|i| i.preflight.as_ref())
            .and_then(|p| p.crd_upgrade_safety.as_ref())
            .map(|c| c.enforcement)
            .unwrap_or_default()
    }
}

/// Bundle configuration (a union on `configType`).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterExtensionConfig {
    /// Always `Inline`.
    pub config_type: ConfigType,
    /// The values, validated against the bundle's configuration schema at install time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The only configuration source.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConfigType {
    /// Values given in the ClusterExtension itself.
    #[default]
    Inline,
}

/// What the extension controller observed.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClusterExtensionStatus {
    /// `Installed`, `Progressing` and the deprecation conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The installed bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<ClusterExtensionInstallStatus>,
    /// Active (not archived) ClusterObjectSets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub active_revisions: Vec<RevisionStatus>,
}

/// The installed bundle.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterExtensionInstallStatus {
    /// Name and version.
    pub bundle: BundleMetadata,
}

/// A bundle's identity.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BundleMetadata {
    /// The bundle name (a DNS-1123 subdomain).
    pub name: String,
    /// The bundle version (semver).
    pub version: String,
    /// The bundle release, when the bundle declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,
}

/// One active ClusterObjectSet of an extension.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RevisionStatus {
    /// The ClusterObjectSet name.
    pub name: String,
    /// Its Progressing and Available conditions while it is not yet Succeeded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}

/// Condition types of a ClusterExtension.
pub mod condition_type {
    /// A bundle is installed.
    pub const INSTALLED: &str = "Installed";
    /// The extension is moving towards its desired state.
    pub const PROGRESSING: &str = "Progressing";
    /// Rollup of the three deprecation conditions.
    pub const DEPRECATED: &str = "Deprecated";
    /// The package is deprecated.
    pub const PACKAGE_DEPRECATED: &str = "PackageDeprecated";
    /// A requested channel is deprecated.
    pub const CHANNEL_DEPRECATED: &str = "ChannelDeprecated";
    /// The installed bundle is deprecated.
    pub const BUNDLE_DEPRECATED: &str = "BundleDeprecated";
    /// Mirrored from revisions when objects are applied as ClusterObjectSets.
    pub const AVAILABLE: &str = "Available";
    /// olm's own: the last resolution went on without selected catalogs that serve nothing
    /// (still unpacking, or failed), which it names. Present only while some are skipped;
    /// upstream fails the resolution instead and has no such condition.
    pub const CATALOGS_SKIPPED: &str = "CatalogsSkipped";
}

/// Reasons of a ClusterExtension's conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtensionReason {
    /// Done.
    Succeeded,
    /// Deprecated.
    Deprecated,
    /// Not deprecated.
    NotDeprecated,
    /// No catalog data to decide deprecation.
    DeprecationStatusUnknown,
    /// Failed.
    Failed,
    /// A terminal error.
    Blocked,
    /// The inline configuration does not fit the bundle's schema.
    InvalidConfiguration,
    /// A retryable error.
    Retrying,
    /// Nothing installed yet while a rollout is healthy.
    Absent,
    /// A revision is rolling out.
    RollingOut,
    /// A revision did not finish within `progressDeadlineMinutes`.
    ProgressDeadlineExceeded,
    /// `CatalogsSkipped`: a selected catalog serves no content.
    NotServing,
}

impl ExtensionReason {
    /// The reason as written in status.
    pub fn as_str(self) -> &'static str {
        match self {
            ExtensionReason::Succeeded => "Succeeded",
            ExtensionReason::Deprecated => "Deprecated",
            ExtensionReason::NotDeprecated => "NotDeprecated",
            ExtensionReason::DeprecationStatusUnknown => "DeprecationStatusUnknown",
            ExtensionReason::Failed => "Failed",
            ExtensionReason::Blocked => "Blocked",
            ExtensionReason::InvalidConfiguration => "InvalidConfiguration",
            ExtensionReason::Retrying => "Retrying",
            ExtensionReason::Absent => "Absent",
            ExtensionReason::RollingOut => "RollingOut",
            ExtensionReason::ProgressDeadlineExceeded => "ProgressDeadlineExceeded",
            ExtensionReason::NotServing => "NotServing",
        }
    }
}

const SUBDOMAIN_MESSAGE_TAIL: &str = "must be a valid DNS1123 subdomain. It must contain only lowercase alphanumeric characters, hyphens (-) or periods (.), start and end with an alphanumeric character, and be no longer than 253 characters";

/// The bundle version in status: semver, loosely.
const BUNDLE_VERSION_PATTERN: &str = r"^([0-9]+)(\.[0-9]+)?(\.[0-9]+)?(-([-0-9A-Za-z]+(\.[-0-9A-Za-z]+)*))?(\+([-0-9A-Za-z]+(-\.[-0-9A-Za-z]+)*))?";

/// A bundle release: dot-separated numeric (no leading zero) or alphanumeric identifiers.
const RELEASE_PATTERN: &str = r"^(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(\.(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*$";

pub(crate) fn spec_schema() -> S {
    let catalog = object(vec![
        (
            "channels",
            array(
                string()
                    .max_len(253)
                    .cel(
                        &matches(DNS1123_SUBDOMAIN_PATTERN),
                        "channels entries must be valid DNS1123 subdomains",
                    ),
            )
            .max_items(256)
            .doc(
                "channels restricts the installable bundles and the automatic upgrade path to these channels of the \
                 package (AND-ed with version). Each must be a DNS-1123 subdomain of at most 253 characters; at most 256 \
                 channels. When unspecified, upgrade edges across all channels are used.",
            ),
        ),
        (
            "packageName",
            string()
                .max_len(253)
                .cel("self == oldSelf", "packageName is immutable")
                .cel(
                    &matches(DNS1123_SUBDOMAIN_PATTERN),
                    &format!("packageName {SUBDOMAIN_MESSAGE_TAIL}"),
                )
                .doc(
                    "packageName is the name of the package to install. It is required, immutable, and a DNS-1123 \
                     subdomain of at most 253 characters.",
                ),
        ),
        (
            "selector",
            label_selector().doc(
                "selector filters the ClusterCatalogs used in the bundle selection process. When unspecified, all \
                 ClusterCatalogs are used.",
            ),
        ),
        (
            "upgradeConstraintPolicy",
            enumeration(&["CatalogProvided", "SelfCertified"])
                .default_value(json!("CatalogProvided"))
                .doc(
                    "upgradeConstraintPolicy says whether the catalog's upgrade paths are enforced. \"CatalogProvided\" \
                     (the default) only upgrades along edges the package author declared; \"SelfCertified\" allows any \
                     upgrade or downgrade, which can lose data: use it only after verifying the change yourself.",
                ),
        ),
        (
            "version",
            string()
                .max_len(64)
                .cel(
                    &matches(olm_version::VERSION_RANGE_PATTERN),
                    olm_version::crd::INVALID_VERSION_RANGE_MESSAGE,
                )
                .doc(
                    "version is a semver constraint: a pinned version (\"0.6.0\"), a range (\">=3.0, <3.6\"), wildcards \
                     (\"1.2.x\"), tilde (\"~1.2.3\") and caret (\"^1.2.3\") ranges, joined by commas or spaces (AND) and \
                     \"||\" (OR). At most 64 characters. When unspecified, the latest available version is installed.",
                ),
        ),
    ])
    .required(&["packageName"])
    .doc("catalog configures how information is sourced from a catalog. It is required when sourceType is \"Catalog\", and forbidden otherwise.");
    let source = object(vec![
        ("catalog", catalog),
        (
            "sourceType",
            enumeration(&["Catalog"]).doc(
                "sourceType is the type of install source; the only allowed value is \"Catalog\", which requires the catalog field.",
            ),
        ),
    ])
    .required(&["sourceType"])
    .cel(
        "has(self.sourceType) && self.sourceType == 'Catalog' ? has(self.catalog) : !has(self.catalog)",
        "catalog is required when sourceType is Catalog, and forbidden otherwise",
    )
    .doc("source selects where the content of this ClusterExtension comes from.");
    let install = object(vec![(
        "preflight",
        object(vec![(
            "crdUpgradeSafety",
            object(vec![(
                "enforcement",
                enumeration(&["None", "Strict"]).doc(
                    "enforcement is \"Strict\" (run the CRD upgrade safety check before upgrades) or \"None\" (skip it; \
                     unsafe CRD changes can lose data). Without a preflight block the check is Strict.",
                ),
            )])
            .required(&["enforcement"])
            .doc("crdUpgradeSafety configures the CRD upgrade safety check run before upgrades of installed content."),
        )])
        .cel(
            "has(self.crdUpgradeSafety)",
            "at least one of [crdUpgradeSafety] are required when preflight is specified",
        )
        .doc("preflight configures the checks run before installing or upgrading the package."),
    )])
    .cel(
        "has(self.preflight)",
        "at least one of [preflight] are required when install is specified",
    )
    .doc("install configures installation options, such as preflight checks.");
    let config = object(vec![
        (
            "configType",
            enumeration(&["Inline"]).doc("configType is the type of configuration source; the only allowed value is \"Inline\"."),
        ),
        (
            "inline",
            free_object().min_properties(1).doc(
                "inline holds configuration values given directly in the ClusterExtension, an object with at least one \
                 property, validated at install time against the bundle's configuration schema.",
            ),
        ),
    ])
    .required(&["configType"])
    .cel(
        "has(self.configType) && self.configType == 'Inline' ?has(self.inline) : !has(self.inline)",
        "inline is required when configType is Inline, and forbidden otherwise",
    )
    .doc("config is bundle-specific configuration; when not specified, the bundle's defaults are used.");
    object(vec![
        ("config", config),
        ("install", install),
        (
            "namespace",
            string()
                .max_len(63)
                .cel("self == oldSelf", "namespace is immutable")
                .cel(&matches(DNS1123_LABEL_PATTERN), "namespace must be a valid DNS1123 label")
                .doc(
                    "namespace is where the ServiceAccount must exist and where namespaced objects of the extension go by \
                     default; it must exist. Required, immutable, a DNS-1123 label of at most 63 characters.",
                ),
        ),
        (
            "progressDeadlineMinutes",
            integer("int32").max(720).min(10).doc(
                "progressDeadlineMinutes is how long, in minutes (10 to 720), an installation may take before it is \
                 considered failed. Disabled when not set.",
            ),
        ),
        (
            "serviceAccount",
            object(vec![(
                "name",
                string()
                    .max_len(253)
                    .min_len(1)
                    .cel("self == oldSelf", "name is immutable once set but may be cleared")
                    .cel(&matches(DNS1123_SUBDOMAIN_PATTERN), &format!("name {SUBDOMAIN_MESSAGE_TAIL}"))
                    .doc(
                        "name is the name of the ServiceAccount used to install and manage the package; a \
                         DNS-1123 subdomain of at most 253 characters. It cannot be changed once set, but \
                         serviceAccount may be removed.",
                    ),
            )])
            .min_properties(1)
            .doc(
                "serviceAccount is the optional ServiceAccount whose permissions bound the installation: when \
                 set, the installer checks that it holds every permission the bundle's objects need before \
                 applying them, and it must exist in the namespace of the spec. When absent, the installer \
                 manages the extension with its own identity.",
            ),
        ),
        ("source", source),
    ])
    .required(&["namespace", "source"])
    .doc("spec is the desired state of the ClusterExtension.")
}

pub(crate) fn status_schema() -> S {
    let bundle = object(vec![
        (
            "name",
            string()
                .cel(
                    &matches(DNS1123_SUBDOMAIN_PATTERN),
                    &format!("packageName {SUBDOMAIN_MESSAGE_TAIL}"),
                )
                .doc("name is the bundle name, a DNS-1123 subdomain."),
        ),
        (
            "release",
            string()
                .max_len(20)
                .cel(
                    &format!("self == '' || {}", matches(RELEASE_PATTERN)),
                    "release must be empty or consist of dot-separated identifiers (numeric without leading zeros, or alphanumeric)",
                )
                .doc("release is the bundle release, when the bundle declares one."),
        ),
        (
            "version",
            string()
                .cel(&matches(BUNDLE_VERSION_PATTERN), "version must be well-formed semver")
                .doc("version is the bundle version (semver)."),
        ),
    ])
    .required(&["name", "version"])
    .doc("bundle identifies the installed bundle.");
    object(vec![
        (
            "activeRevisions",
            array(
                object(vec![
                    (
                        "conditions",
                        conditions("conditions are the revision's Progressing and Available conditions while it has not yet succeeded."),
                    ),
                    ("name", string().doc("name of the ClusterObjectSet resource")),
                ])
                .required(&["name"])
                .doc("RevisionStatus is the observed state of a ClusterObjectSet."),
            )
            .list_map(&["name"])
            .doc("activeRevisions lists the active (non-archived) ClusterObjectSets, installed and rolling out."),
        ),
        (
            "conditions",
            conditions(
                "conditions are Installed and Progressing, and for catalog sources the deprecation conditions \
                 Deprecated, PackageDeprecated, ChannelDeprecated and BundleDeprecated.",
            ),
        ),
        (
            "install",
            object(vec![("bundle", bundle)])
                .required(&["bundle"])
                .doc("install is the current installation status."),
        ),
    ])
    .doc("status is the observed state of the ClusterExtension.")
}
