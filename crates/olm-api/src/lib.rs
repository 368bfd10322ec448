//! The OLM v1 API (`olm.operatorframework.io/v1`): Rust types of `ClusterCatalog`,
//! `ClusterExtension` and `ClusterObjectSet`, their condition types and reasons, the well-known
//! labels and finalizers, and the CustomResourceDefinitions the API server needs to serve them.
//!
//! What it is for: one place that says what these objects look like and which values the API
//! server accepts. Every field limit, default and CEL rule (with the message users see from
//! `kubectl`) lives in the schema functions next to each type; [`crds`] assembles them and
//! `config/crd/*.yaml` is the committed output, kept in step by `tests/crds.rs`.
//!
//! What it is not for: deciding anything. Controllers live in `olm-catalogd` and later crates.
//! This crate does not pick a Kubernetes API version for `k8s-openapi`; the binary does.

pub mod catalog;
pub mod extension;
pub mod objectset;
pub mod schema;
pub mod selector;

pub use catalog::{
    AvailabilityMode, CatalogReason, CatalogSource, CatalogUrls, ClusterCatalog,
    ClusterCatalogSpec, ClusterCatalogStatus, ImageSource, ResolvedCatalogSource,
    ResolvedImageSource, SourceType,
};
pub use extension::{
    BundleMetadata, CatalogFilter, ClusterExtension, ClusterExtensionConfig,
    ClusterExtensionInstallStatus, ClusterExtensionSpec, ClusterExtensionStatus, ConfigType,
    CrdUpgradeSafetyEnforcement, CrdUpgradeSafetyPreflightConfig, ExtensionReason,
    ExtensionSourceType, InstallConfig, PreflightConfig, RevisionStatus, ServiceAccountReference,
    SourceConfig, UpgradeConstraintPolicy,
};
pub use objectset::{
    Assertion, ClusterObjectSet, ClusterObjectSetObject, ClusterObjectSetPhase,
    ClusterObjectSetSpec, ClusterObjectSetStatus, CollisionProtection, ConditionEqualProbe,
    FieldValueProbe, FieldsEqualProbe, GroupKind, LifecycleState, ObjectSelector, ObjectSourceRef,
    ObservedPhase, ProbeType, ProgressionProbe, SelectorType,
};

use serde_json::{Value, json};

use crate::schema::{S, object, plain_object, string};

/// The API group.
pub const GROUP: &str = "olm.operatorframework.io";
/// The only version.
pub const VERSION: &str = "v1";

pub use olm_k8s::{CATALOG_CACHE_FINALIZER, CATALOG_CONFIGS_LABEL, METADATA_NAME_LABEL};

/// One CRD, ready to apply or to write out.
#[derive(Debug, Clone)]
pub struct Crd {
    /// `<plural>.olm.operatorframework.io`.
    pub name: String,
    /// The file under `config/crd/`.
    pub file_name: String,
    /// The CRD object.
    pub value: Value,
}

impl Crd {
    /// The CRD as YAML, as committed under `config/crd/`: written as controller-gen writes CRDs
    /// (sigs.k8s.io/yaml), by the workspace's one Go-compatible YAML writer.
    pub fn to_yaml(&self) -> String {
        format!("---\n{}", olm_goenc::yaml::to_yaml(&self.value))
    }
}

struct Kind {
    kind: &'static str,
    plural: &'static str,
    description: &'static str,
    columns: Value,
    spec: S,
    status: S,
    required: &'static [&'static str],
}

fn condition_column(name: &str) -> Value {
    json!({
        "jsonPath": format!(".status.conditions[?(@.type==\"{name}\")].status"),
        "name": name,
        "type": "string",
    })
}

fn age_column() -> Value {
    json!({"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"})
}

fn build(kind: Kind) -> Crd {
    let name = format!("{}.{GROUP}", kind.plural);
    let root = object(vec![
        (
            "apiVersion",
            string().doc(
                "APIVersion defines the versioned schema of this representation of an object.",
            ),
        ),
        (
            "kind",
            string().doc(
                "Kind is a string value representing the REST resource this object represents.",
            ),
        ),
        ("metadata", plain_object()),
        ("spec", kind.spec),
        ("status", kind.status),
    ])
    .doc(kind.description);
    let root = if kind.required.is_empty() {
        root
    } else {
        root.required(kind.required)
    };
    let value = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {
            "group": GROUP,
            "names": {
                "kind": kind.kind,
                "listKind": format!("{}List", kind.kind),
                "plural": kind.plural,
                "singular": kind.kind.to_lowercase(),
            },
            "scope": "Cluster",
            "versions": [{
                "additionalPrinterColumns": kind.columns,
                "name": VERSION,
                "schema": {"openAPIV3Schema": root.into_value()},
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
            }],
        },
    });
    Crd {
        file_name: format!("{GROUP}_{}.yaml", kind.plural),
        name,
        value,
    }
}

/// The ClusterCatalog CRD.
pub fn cluster_catalog_crd() -> Crd {
    build(Kind {
        kind: "ClusterCatalog",
        plural: "clustercatalogs",
        description: "ClusterCatalog makes File-Based Catalog (FBC) data available to your cluster.",
        columns: json!([
            {"jsonPath": ".status.lastUnpacked", "name": "LastUnpacked", "type": "date"},
            condition_column("Serving"),
            age_column(),
        ]),
        spec: catalog::spec_schema(),
        status: catalog::status_schema(),
        required: &["metadata", "spec"],
    })
}

/// The ClusterExtension CRD.
pub fn cluster_extension_crd() -> Crd {
    build(Kind {
        kind: "ClusterExtension",
        plural: "clusterextensions",
        description: "ClusterExtension is the Schema for the clusterextensions API",
        columns: json!([
            {"jsonPath": ".status.install.bundle.name", "name": "Installed Bundle", "type": "string"},
            {"jsonPath": ".status.install.bundle.version", "name": "Version", "type": "string"},
            condition_column("Installed"),
            condition_column("Progressing"),
            age_column(),
        ]),
        spec: extension::spec_schema(),
        status: extension::status_schema(),
        required: &[],
    })
}

/// The ClusterObjectSet CRD.
pub fn cluster_object_set_crd() -> Crd {
    build(Kind {
        kind: "ClusterObjectSet",
        plural: "clusterobjectsets",
        description: "ClusterObjectSet is an immutable snapshot of the objects of one revision of a ClusterExtension, \
                      organised in phases rolled out in order. An object is managed by one revision at a time; once the \
                      latest revision has rolled out, earlier ones are archived.",
        columns: json!([
            condition_column("Available"),
            condition_column("Progressing"),
            age_column(),
        ]),
        spec: objectset::spec_schema(),
        status: objectset::status_schema(),
        required: &[],
    })
}

/// Every CRD of the API, in a fixed order.
pub fn crds() -> Vec<Crd> {
    vec![
        cluster_catalog_crd(),
        cluster_extension_crd(),
        cluster_object_set_crd(),
    ]
}
