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

/// Label on every object an extension installs and on its ClusterObjectSets: the owner's kind
/// (`ClusterExtension`).
pub const OWNER_KIND_LABEL: &str = "olm.operatorframework.io/owner-kind";

/// Label on every object an extension installs and on its ClusterObjectSets: the owner's name.
pub const OWNER_NAME_LABEL: &str = "olm.operatorframework.io/owner-name";

/// ClusterObjectSet annotation (and object annotation): the installed package.
pub const PACKAGE_NAME_KEY: &str = "olm.operatorframework.io/package-name";

/// ClusterObjectSet annotation: the installed bundle's name.
pub const BUNDLE_NAME_KEY: &str = "olm.operatorframework.io/bundle-name";

/// ClusterObjectSet annotation (and object annotation): the installed bundle's version.
pub const BUNDLE_VERSION_KEY: &str = "olm.operatorframework.io/bundle-version";

/// ClusterObjectSet annotation: the installed bundle's image reference.
pub const BUNDLE_REFERENCE_KEY: &str = "olm.operatorframework.io/bundle-reference";

/// ClusterObjectSet annotation: the installed bundle's release, only when it has one.
pub const BUNDLE_RELEASE_KEY: &str = "olm.operatorframework.io/bundle-release";

/// Label on Secrets holding externalised ClusterObjectSet objects: the revision's name.
pub const REVISION_NAME_LABEL: &str = "olm.operatorframework.io/revision-name";

/// Type of Secrets holding externalised ClusterObjectSet objects.
pub const OBJECT_DATA_SECRET_TYPE: &str = "olm.operatorframework.io/object-data";

/// ClusterExtension finalizer: the extension's bundle unpacks are deleted with it.
pub const CLEANUP_UNPACK_CACHE_FINALIZER: &str = "olm.operatorframework.io/cleanup-unpack-cache";

/// ClusterExtension finalizer: the extension's watches are stopped with it.
pub const CLEANUP_CONTENTMANAGER_CACHE_FINALIZER: &str =
    "olm.operatorframework.io/cleanup-contentmanager-cache";

/// ClusterObjectSet finalizer: objects are torn down before the revision goes.
pub const TEARDOWN_FINALIZER: &str = "olm.operatorframework.io/teardown";

/// Value of [`OWNER_KIND_LABEL`] for objects installed by a ClusterExtension.
pub const CLUSTER_EXTENSION_KIND: &str = "ClusterExtension";

/// Annotation on a bundle's CSV and on each ClusterObjectSet: the bundle's properties as a JSON
/// array (the CSV's `olm.properties` merged with `metadata/properties.yaml`), kept on the revision
/// for operators that read bundle properties such as `olm.maxOpenShiftVersion`.
pub const OLM_PROPERTIES_ANNOTATION: &str = "olm.properties";

/// Annotation `kubectl apply` leaves on objects; a bundle manifest may carry it, and it is
/// dropped from every object of a revision because it can be as large as the object itself.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// ClusterObjectSet annotation (an addition of this implementation): `<namespace>/<name>` of the
/// ServiceAccount the ClusterObjectSet controller impersonates when it applies the revision's
/// objects. Absent when the extension names none and the controller applies as itself.
pub const SERVICE_ACCOUNT_ANNOTATION: &str = "olm.operatorframework.io/service-account";

/// ClusterObjectSet annotation (an addition of this implementation): `sha256:<hex>` of the
/// revision's immutable content, so the extension controller tells "same revision" from "new
/// revision" without an API request, even when the objects live in Secrets.
pub const REVISION_DIGEST_ANNOTATION: &str = "olm.operatorframework.io/revision-digest";

/// Annotation on a webhook Service rendered for the built-in certificate provider: the Secret
/// that is to hold the Service's serving certificate (`tls.crt`, `tls.key`, `ca.crt`).
pub const SERVING_CERT_SECRET_ANNOTATION: &str =
    "olm.operatorframework.io/serving-cert-secret-name";

/// Annotation on webhook configurations and conversion CRDs rendered for the built-in
/// certificate provider: `<namespace>/<secret>` whose `ca.crt` becomes their `caBundle`.
pub const INJECT_CA_FROM_ANNOTATION: &str = "olm.operatorframework.io/inject-ca-from";

/// Annotation on a serving-certificate Secret and on the pod template of the Deployment that
/// mounts it: hex SHA-256 of the CA, so a new CA rolls the Deployment (OLM v0's `olmcahash`).
pub const CA_HASH_ANNOTATION: &str = "olm.operatorframework.io/ca-hash";

/// Label on a Secret the built-in certificate provider issued: the Service it serves.
pub const SERVING_CERT_FOR_LABEL: &str = "olm.operatorframework.io/serving-cert-for";

/// OLM v0's owner label: the owning object's name (ClusterServiceVersion, OperatorGroup) on
/// objects an owner reference cannot point from (cluster-scoped, or another namespace).
pub const V0_OWNER_LABEL: &str = "olm.owner";

/// OLM v0's owner label: the owning object's namespace.
pub const V0_OWNER_NAMESPACE_LABEL: &str = "olm.owner.namespace";

/// OLM v0's owner label: the owning object's kind.
pub const V0_OWNER_KIND_LABEL: &str = "olm.owner.kind";

/// Label OLM v0 puts on every object it creates (`true`).
pub const V0_MANAGED_LABEL: &str = "olm.managed";

/// On a ClusterExtension made by `olm migrate`, and copied onto its revisions: the OLM v0
/// ClusterServiceVersion (`<namespace>/<name>`) whose objects the revision takes over in place.
/// Honoured only while that CSV names the extension in [`MIGRATING_TO_ANNOTATION`]: both sides
/// must agree, so no extension can take another team's operator by naming it.
pub const MIGRATION_TAKES_OVER_ANNOTATION: &str = "olm.operatorframework.io/migration-takes-over";

/// On an OLM v0 Subscription and its ClusterServiceVersion being moved to OLM v1: the
/// ClusterExtension taking it over. OLM v0 leaves objects carrying it alone (no plans, no
/// status, no repairs) until the move completes and deletes them.
pub const MIGRATING_TO_ANNOTATION: &str = "olm.operatorframework.io/migrating-to";

/// On a revision that took an operator over from OLM v0: the content digest of the revision as
/// the bundle renders it. The taken-over revision keeps the running Deployments' pod templates
/// (so that no pod restarts), and stays the extension's revision for as long as the bundle and
/// configuration render to this same digest.
pub const MIGRATION_RENDERED_DIGEST_ANNOTATION: &str =
    "olm.operatorframework.io/migration-rendered-digest";

/// On a ClusterExtension and its ClusterObjectSets being handed back to OLM v0 (`olm migrate
/// rollback`): `requested` by the client, `acknowledged` by OLM v1's controller, which from then
/// on writes nothing for that object. The client deletes them (orphaning what they hold) only
/// once every one is acknowledged: a write still in flight — a revision created, an object
/// adopted — would otherwise name an owner about to vanish, and the garbage collector would
/// delete what it holds (CRDs included).
pub const MIGRATION_ROLLBACK_ANNOTATION: &str = "olm.operatorframework.io/migration-rollback";

/// [`MIGRATION_ROLLBACK_ANNOTATION`]'s value written by the client.
pub const MIGRATION_ROLLBACK_REQUESTED: &str = "requested";

/// [`MIGRATION_ROLLBACK_ANNOTATION`]'s value written by the controller.
pub const MIGRATION_ROLLBACK_ACKNOWLEDGED: &str = "acknowledged";

/// What OLM v1's controller does with an object by its [`MIGRATION_ROLLBACK_ANNOTATION`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RollbackHold {
    /// Not being handed back: reconcile as usual.
    None,
    /// Asked to stop: write the acknowledgement, and nothing else.
    Acknowledge,
    /// Stopped: write nothing.
    Idle,
}

/// The [`RollbackHold`] of an object with `annotations`. Any value other than the two known
/// ones holds too: an object someone marked is never written by mistake.
pub fn rollback_hold(
    annotations: Option<&std::collections::BTreeMap<String, String>>,
) -> RollbackHold {
    match annotations.and_then(|a| a.get(MIGRATION_ROLLBACK_ANNOTATION)) {
        None => RollbackHold::None,
        Some(v) if v == MIGRATION_ROLLBACK_ACKNOWLEDGED => RollbackHold::Idle,
        Some(_) => RollbackHold::Acknowledge,
    }
}

/// The Secret key OLM v0 keeps a serving certificate's CA under (upstream's `olmCAKey`); OLM v1
/// reads it too, so that a certificate OLM v0 issued is kept when an operator moves.
pub const V0_CA_SECRET_KEY: &str = "olmCAKey";

/// OLM v0's pod-template annotation with the hash of the serving CA (upstream's `olmcahash`);
/// a Deployment carrying the current CA's hash under it needs no rollout from OLM v1 either.
pub const V0_CA_HASH_ANNOTATION: &str = "olmcahash";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollback_hold_is_acknowledged_once_and_then_kept() {
        let with = |v: &str| {
            std::collections::BTreeMap::from([(
                MIGRATION_ROLLBACK_ANNOTATION.to_owned(),
                v.to_owned(),
            )])
        };
        assert_eq!(rollback_hold(None), RollbackHold::None);
        assert_eq!(
            rollback_hold(Some(&std::collections::BTreeMap::new())),
            RollbackHold::None
        );
        assert_eq!(
            rollback_hold(Some(&with(MIGRATION_ROLLBACK_REQUESTED))),
            RollbackHold::Acknowledge
        );
        assert_eq!(
            rollback_hold(Some(&with(MIGRATION_ROLLBACK_ACKNOWLEDGED))),
            RollbackHold::Idle
        );
        assert_eq!(rollback_hold(Some(&with("yes"))), RollbackHold::Acknowledge);
    }
}
