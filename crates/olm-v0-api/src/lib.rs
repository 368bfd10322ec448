//! The OLM v0 API (`operators.coreos.com`): Rust types of ClusterServiceVersion, CatalogSource,
//! Subscription, InstallPlan, OperatorGroup, OperatorCondition, Operator and OLMConfig, and the
//! CustomResourceDefinitions generated from them.
//!
//! What it is for: one place that says what these objects look like on the wire and which values
//! the API server accepts, version by version as upstream serves them (modules [`v1alpha1`],
//! [`v1`], [`v1alpha2`], [`v2`], after the API repo's `pkg/operators/<version>`). Field names and
//! optionality follow the Go JSON tags: a field without `omitempty` is required (a plain type), an
//! `omitempty` one is an `Option` (strings, numbers, structs) or an empty-by-default list, map or
//! `false`, left out when empty as Go leaves it out. Kubernetes types are k8s-openapi's, exactly
//! where upstream embeds them. String types whose values upstream only lists (phases, reasons,
//! install modes) are enums that keep unknown values; those the CRD itself limits are closed.
//!
//! The CRDs ([`crds`], with the `schema` feature, on by default) are derived from these types and
//! shaped as `controller-gen` shapes upstream's (see `schema.rs`); `config/crd/v0/*.yaml` is the
//! committed output, kept in step by `tests/crds.rs`. [`manifests`] hands the committed files to
//! a binary that only applies them: it needs neither schemars nor k8s-openapi's JSON schemas of
//! every Kubernetes type, which the `schema` feature compiles.
//!
//! # Differences from upstream
//!
//! `tests/upstream.rs` compares the generated CRDs with upstream's (the API repo's `crds/`, kept
//! in `tests/upstream/`): every property path of every version, its type, format, required list,
//! enum, pattern, default, limits and `x-kubernetes-*` markers, and the CRD's names, short names,
//! categories, scope, printer columns, subresources and served and stored versions. They are
//! equal, except:
//!
//! - Descriptions are this crate's own words (and k8s-openapi's for Kubernetes types), not
//!   upstream's Go comments; upstream's files also carry a `controller-gen` version annotation.
//! - The embedded Kubernetes types are those of the Kubernetes version the build selects for
//!   k8s-openapi (`latest`, 1.37), where upstream's come from k8s.io/api v0.36.3. The fields 1.37
//!   added are in these CRDs only, wherever the types are embedded: `PodSpec.evictionResponders`,
//!   `VolumeMount.bindMountOptions`, `HTTPGetAction.protocol`, `GRPCAction.mode`,
//!   `EmptyDirVolumeSource.mode`, `defaultUser` of the ConfigMap, Secret, DownwardAPI and
//!   Projected volume sources, and `user` of `KeyToPath`, `DownwardAPIVolumeFile` and the
//!   ClusterTrustBundle, PodCertificate and ServiceAccountToken projections. Leaving them out
//!   would make the API server drop them from objects these types write.
//!
//! # Reading objects
//!
//! A required field must be present, as the API server requires it; an optional one may be
//! absent or `null`. So an object the API server accepted reads, and one it would refuse for a
//! missing field does not (`tests/roundtrip.rs` holds published CSVs to this). Two details:
//!
//! - kube's derive makes `spec` a required field of every root type, where upstream's
//!   OperatorCondition, Operator and OLMConfig may be stored without one (`omitempty`); such an
//!   object reads as an error here. Upstream's Go clients always write `spec: {}`.
//! - OperatorCondition overrides read as [`v1::ConditionOverride`]: `metav1.Condition` with an
//!   optional `lastTransitionTime`, as upstream's CRD allows for overrides written by hand.
//!
//! What it is not for: deciding anything (that is `olm-v0`) or talking to a cluster.

#![cfg_attr(not(feature = "schema"), allow(rustdoc::broken_intra_doc_links))]

mod enums;
mod go;
mod manifests;
pub mod v1;
pub mod v1alpha1;
pub mod v1alpha2;
pub mod v2;

#[cfg(feature = "schema")]
mod crd;
#[cfg(feature = "schema")]
mod k8s_markers;
#[cfg(feature = "schema")]
mod schema;

#[cfg(feature = "schema")]
pub use crd::{
    GenerateError, catalog_source, cluster_service_version, crds, install_plan, olm_config,
    operator, operator_condition, operator_group, subscription,
};
pub use manifests::{MANIFESTS, ManifestError, manifests};
#[cfg(feature = "schema")]
pub use schema::SchemaError;

/// The API group.
pub const GROUP: &str = "operators.coreos.com";

/// One generated CRD, ready to apply or to write out.
#[derive(Debug, Clone)]
pub struct Crd {
    /// `<plural>.operators.coreos.com`.
    pub name: String,
    /// The file under `config/crd/v0/`.
    pub file_name: String,
    /// The CRD object.
    pub value: serde_json::Value,
}

impl Crd {
    /// The CRD as YAML, as committed under `config/crd/v0/` (written as sigs.k8s.io/yaml writes
    /// it, by the workspace's Go-compatible YAML writer).
    pub fn to_yaml(&self) -> String {
        format!("---\n{}", olm_goenc::yaml::to_yaml(&self.value))
    }
}
