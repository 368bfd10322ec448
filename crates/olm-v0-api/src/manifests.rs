//! The committed CRDs (`config/crd/v0/`), built into the crate so that a binary can apply them
//! without generating schemas: `tests/crds.rs` keeps them equal to what the types generate.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

macro_rules! committed {
    ($($plural:literal),+ $(,)?) => {
        [$((
            concat!("operators.coreos.com_", $plural, ".yaml"),
            include_str!(concat!("../../../config/crd/v0/operators.coreos.com_", $plural, ".yaml")),
        )),+]
    };
}

/// Every committed CRD file of the OLM v0 API: (file name, YAML), by file name.
pub const MANIFESTS: [(&str, &str); 8] = committed![
    "catalogsources",
    "clusterserviceversions",
    "installplans",
    "olmconfigs",
    "operatorconditions",
    "operatorgroups",
    "operators",
    "subscriptions",
];

/// A committed CRD file that does not read as a CRD (only possible if the file was edited by
/// hand and not regenerated).
#[derive(Debug, thiserror::Error)]
#[error("{file}: {source}")]
pub struct ManifestError {
    /// The file.
    pub file: &'static str,
    /// Why.
    pub source: olm_goenc::yamlread::Error,
}

/// The committed CRDs, ready to apply.
pub fn manifests() -> Result<Vec<CustomResourceDefinition>, ManifestError> {
    MANIFESTS
        .iter()
        .map(|(file, yaml)| {
            olm_goenc::yamlread::from_str(yaml).map_err(|source| ManifestError { file, source })
        })
        .collect()
}
