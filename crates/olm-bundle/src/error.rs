//! Errors of bundle reading and rendering, in upstream wording where users see upstream's.

use thiserror::Error;

/// Why a bundle could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BundleError {
    /// A file or directory could not be read.
    #[error("{path}: {message}")]
    Io {
        /// The file or directory.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// Upstream: operator-controller's bundle source.
    #[error(
        "subdirectories are not allowed within the \"manifests\" directory of the bundle image filesystem: found {}",
        olm_goenc::quote(path)
    )]
    SubdirectoryInManifests {
        /// The subdirectory found.
        path: String,
    },
    /// A manifest or metadata file is not valid YAML.
    #[error("{file}: invalid YAML: {message}")]
    Yaml {
        /// The file, relative to the bundle root.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// A manifest document is not a mapping.
    #[error("{file}: document is not an object")]
    NotAnObject {
        /// The file, relative to the bundle root.
        file: String,
    },
    /// A manifest document has no `kind`.
    #[error("{file}: object has no \"kind\"")]
    MissingKind {
        /// The file, relative to the bundle root.
        file: String,
    },
    /// Upstream: operator-controller's bundle source.
    #[error("no ClusterServiceVersion found in \"manifests\"")]
    NoCsv,
    /// Upstream (operator-framework/api loader) says "invalid bundle: contains multiple CSVs".
    #[error("invalid bundle: contains multiple CSVs ({first}, {second})")]
    MultipleCsvs {
        /// The file of the first CSV found.
        first: String,
        /// The file of the second.
        second: String,
    },
    /// Upstream (opm): "Could not find annotations file".
    #[error(
        "Could not find annotations file (metadata/annotations.yaml with an \"annotations\" block)"
    )]
    NoAnnotations,
    /// Upstream (opm's bundle parser): the CSV owns a CRD the bundle does not hold. `found`
    /// lists what the bundle provides as `group/version/Kind (plural)`, sorted as Go prints a map.
    #[error(
        "error checking provided apis in bundle {csv}: couldn't find {missing} in bundle. found: map[{}]",
        found.iter().map(|k| format!("{k}:{{}}")).collect::<Vec<_>>().join(" ")
    )]
    OwnedCrdNotInBundle {
        /// The CSV's name.
        csv: String,
        /// The owned CRD as `group/version/Kind (plural)`.
        missing: String,
        /// Every API the bundle provides, the same way.
        found: Vec<String>,
    },
    /// Upstream (opm's bundle parser): an owned CRD's name is not `<plural>.<group>`.
    #[error(
        "error checking provided apis in bundle {csv}: couldn't parse plural.group from crd name: {name}"
    )]
    OwnedCrdName {
        /// The CSV's name.
        csv: String,
        /// The name as the CSV gives it.
        name: String,
    },
    /// The CSV does not have the shape of a ClusterServiceVersion.
    #[error("{file}: invalid ClusterServiceVersion: {message}")]
    InvalidCsv {
        /// The CSV's file, relative to the bundle root.
        file: String,
        /// What does not fit, as serde reports it.
        message: String,
    },
}

/// Why a bundle could not be rendered: every message is upstream's.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RenderError {
    /// The render validators failed; messages joined by newlines as Go's `errors.Join` does.
    #[error("{}", .0.join("\n"))]
    Invalid(Vec<String>),
    /// Render options rejected (target namespaces); upstream prefix `invalid option(s): `.
    #[error("invalid option(s): {}", .0.join("\n"))]
    InvalidOptions(Vec<String>),
    /// The inline configuration does not match the bundle's schema.
    #[error("invalid ClusterExtension configuration: invalid configuration: {0}")]
    InvalidConfig(String),
    /// A generator refused the bundle (conversion webhook wiring, unsupported objects).
    #[error("{0}")]
    Generate(String),
    /// Provider-level checks that run before rendering.
    #[error("unsupported bundle: {0}")]
    Unsupported(String),
}
