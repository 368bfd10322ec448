//! Well-known label, annotation and finalizer keys: one constant each, so that a writer and a
//! reader of the same key cannot drift apart.

/// Label every ClusterCatalog carries, equal to its name, so label selectors can pick catalogs
/// by name (set by the catalog server's webhook and controller, read by resolution).
pub const METADATA_NAME_LABEL: &str = "olm.operatorframework.io/metadata.name";

/// Finalizer the catalog server puts on a ClusterCatalog until its served content is deleted.
pub const CATALOG_CACHE_FINALIZER: &str = "olm.operatorframework.io/delete-server-cache";

/// Image config label naming the directory of a catalog image that holds the file-based catalog.
pub const CATALOG_CONFIGS_LABEL: &str = "operators.operatorframework.io.index.configs.v1";

/// Annotation on an operator's pods and CSV: the namespaces its OperatorGroup targets,
/// comma-separated (empty for all namespaces).
pub const TARGET_NAMESPACES_ANNOTATION: &str = "olm.targetNamespaces";

/// Annotation on an operator's pods and CSV: the namespace the operator is installed in.
pub const OPERATOR_NAMESPACE_ANNOTATION: &str = "olm.operatorNamespace";

/// Annotation on a CSV: the OperatorGroup it belongs to.
pub const OPERATOR_GROUP_ANNOTATION: &str = "olm.operatorGroup";

/// Annotation on a CSV and its OperatorGroup: the APIs the group's operators provide.
pub const PROVIDED_APIS_ANNOTATION: &str = "olm.providedAPIs";

/// Annotation on a CSV: the version range it replaces, a blang range.
pub const SKIP_RANGE_ANNOTATION: &str = "olm.skipRange";
