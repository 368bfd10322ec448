//! The ClusterExtension a Subscription becomes (library-olm `migration.go`
//! `createClusterExtension`): the same package, channel and configuration, from the
//! ClusterCatalog the checks resolved, recording where it came from and what was acknowledged.
//!
//! One difference from upstream, because both OLMs run in one process here: the extension also
//! names the CSV whose objects its first revision takes over in place
//! ([`olm_k8s::MIGRATION_TAKES_OVER_ANNOTATION`]), and its version is pinned to the installed
//! one until the move completes, so that the revision is built from the very bundle OLM v0
//! installed. Upstream instead keeps the live objects in a revision of its own with collision
//! protection `None` and lets the catalog's revision supersede it.

use std::collections::BTreeMap;

use olm_api::ClusterExtension;
use olm_v0_api::v1::OperatorGroup;
use olm_v0_api::v1alpha1::{Approval, ClusterServiceVersion, Subscription};
use serde_json::{Value, json};

use crate::checks::Acks;

/// Annotation keeping the Subscription's spec (JSON), to restore it on rollback.
pub const SUBSCRIPTION_BACKUP: &str = "olm.operatorframework.io/migration-subscription-backup";
/// Annotation keeping the OperatorGroup's spec (JSON).
pub const OPERATOR_GROUP_BACKUP: &str = "olm.operatorframework.io/migration-operatorgroup-backup";

/// What the ClusterExtension is made from.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The Subscription.
    pub subscription: &'a Subscription,
    /// Its installed CSV.
    pub csv: &'a ClusterServiceVersion,
    /// The namespace's first OperatorGroup.
    pub operator_group: Option<&'a OperatorGroup>,
    /// The extension's name.
    pub name: &'a str,
    /// The ClusterCatalog resolved for it.
    pub catalog: &'a str,
    /// The package's default channel in that catalog, used when the Subscription names none.
    pub default_channel: Option<&'a str>,
    /// The installed version.
    pub version: &'a str,
    /// What the user acknowledged.
    pub acks: &'a Acks,
}

/// The extension, and the warnings of what does not carry over.
#[derive(Debug, Clone)]
pub struct Mapped {
    /// The ClusterExtension to create.
    pub extension: ClusterExtension,
    /// What the user should know.
    pub warnings: Vec<String>,
}

/// Whether the Subscription approves upgrades by hand: its extension keeps the version pinned.
pub fn manual(sub: &Subscription) -> bool {
    sub.spec.install_plan_approval == Some(Approval::Manual)
}

/// The ClusterExtension `source` maps to.
///
/// # Errors
///
/// A Subscription or OperatorGroup spec that does not serialise (not expected).
pub fn extension(source: &Source<'_>) -> Result<Mapped, serde_json::Error> {
    let sub = source.subscription;
    let ns = sub.metadata.namespace.clone().unwrap_or_default();
    let sub_name = sub.metadata.name.clone().unwrap_or_default();
    let mut warnings = Vec::new();
    let mut annotations = BTreeMap::from([
        (
            crate::MIGRATED_FROM_SUBSCRIPTION.to_owned(),
            format!("{ns}/{sub_name}"),
        ),
        (
            SUBSCRIPTION_BACKUP.to_owned(),
            serde_json::to_string(&sub.spec)?,
        ),
        (
            olm_k8s::MIGRATION_TAKES_OVER_ANNOTATION.to_owned(),
            format!(
                "{ns}/{}",
                source.csv.metadata.name.as_deref().unwrap_or_default()
            ),
        ),
    ]);
    if let Some(og) = source.operator_group {
        annotations.insert(
            OPERATOR_GROUP_BACKUP.to_owned(),
            serde_json::to_string(&og.spec)?,
        );
    }
    for flag in source.acks.flags() {
        annotations.insert(
            format!("olm.operatorframework.io/acknowledged-{flag}"),
            "true".to_owned(),
        );
    }
    let channel = sub
        .spec
        .channel
        .as_deref()
        .filter(|c| !c.is_empty())
        .or(source.default_channel.filter(|c| !c.is_empty()));
    if channel.is_none() {
        warnings.push(format!(
            "Could not determine defaultChannel for package {} — CE will consider all channels; verify upgrade behavior post-migration",
            olm_goenc::quote(&sub.spec.package)
        ));
    }
    let mut catalog = json!({
        "packageName": sub.spec.package,
        "version": source.version,
        "selector": {"matchLabels": {olm_k8s::METADATA_NAME_LABEL: source.catalog}},
    });
    if let Some(c) = channel {
        catalog["channels"] = json!([c]);
    }
    let mut spec = json!({
        "namespace": ns,
        "source": {"sourceType": "Catalog", "catalog": catalog},
    });
    if let Some(config) = &sub.spec.config {
        let mut config = serde_json::to_value(config)?;
        if let Some(m) = config.as_object_mut()
            && m.remove("selector").is_some()
        {
            warnings.push(
                "Subscription spec.config.selector is not supported by OLMv1 and will be dropped during migration"
                    .to_owned(),
            );
        }
        if config.as_object().is_some_and(|m| !m.is_empty()) {
            spec["config"] =
                json!({"configType": "Inline", "inline": {"deploymentConfig": config}});
        }
    }
    let extension: ClusterExtension = serde_json::from_value(json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": source.name, "annotations": annotations},
        "spec": spec,
    }))?;
    Ok(Mapped {
        extension,
        warnings,
    })
}

/// The package's default channel in a catalog's `olm.package` blob.
pub fn default_channel(package_blob: &Value) -> Option<&str> {
    package_blob
        .get("defaultChannel")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sub(spec: Value) -> Subscription {
        let mut spec = spec;
        spec["source"] = json!("community");
        spec["sourceNamespace"] = json!("olm");
        spec["name"] = json!("etcd");
        serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "etcd-sub", "namespace": "ops"}, "spec": spec,
        }))
        .expect("subscription")
    }

    fn csv() -> ClusterServiceVersion {
        serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "etcd.v0.9.4", "namespace": "ops"},
            "spec": {"displayName": "etcd", "install": {"strategy": "deployment",
                "spec": {"deployments": []}}},
        }))
        .expect("csv")
    }

    /// library-olm `createClusterExtension`: package, channel, catalog selector, the
    /// Subscription's config as `deploymentConfig` (its selector dropped with a warning), the
    /// backups and acknowledgements as annotations.
    #[test]
    fn a_subscription_maps_to_the_extension_upstream_makes() {
        let s = sub(json!({"channel": "alpha", "installPlanApproval": "Manual",
            "config": {"env": [{"name": "A", "value": "1"}], "selector": {"matchLabels": {"a": "b"}}}}));
        let og: OperatorGroup = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "og", "namespace": "ops"}, "spec": {"upgradeStrategy": "Default"},
        }))
        .expect("og");
        let c = csv();
        let acks = Acks {
            watch_scope_change: true,
            ..Acks::default()
        };
        let mapped = extension(&Source {
            subscription: &s,
            csv: &c,
            operator_group: Some(&og),
            name: "etcd-sub",
            catalog: "community",
            default_channel: Some("stable"),
            version: "0.9.4",
            acks: &acks,
        })
        .expect("mapped");
        assert!(manual(&s));
        assert_eq!(
            serde_json::to_value(&mapped.extension).expect("json"),
            json!({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
                "metadata": {"name": "etcd-sub", "annotations": {
                    "olm.operatorframework.io/acknowledged-watch-scope-change": "true",
                    "olm.operatorframework.io/migrated-from-subscription": "ops/etcd-sub",
                    "olm.operatorframework.io/migration-operatorgroup-backup": "{\"upgradeStrategy\":\"Default\"}",
                    "olm.operatorframework.io/migration-subscription-backup": serde_json::to_string(&s.spec).expect("spec"),
                    "olm.operatorframework.io/migration-takes-over": "ops/etcd.v0.9.4"}},
                "spec": {"namespace": "ops", "source": {"sourceType": "Catalog", "catalog": {
                    "packageName": "etcd", "version": "0.9.4", "channels": ["alpha"],
                    "selector": {"matchLabels": {"olm.operatorframework.io/metadata.name": "community"}},
                    "upgradeConstraintPolicy": "CatalogProvided"}},
                    "config": {"configType": "Inline", "inline": {"deploymentConfig":
                        {"env": [{"name": "A", "value": "1"}]}}}}})
        );
        assert_eq!(
            mapped.warnings,
            [
                "Subscription spec.config.selector is not supported by OLMv1 and will be dropped during migration"
            ]
        );
    }

    #[test]
    fn no_channel_anywhere_is_a_warning_and_the_default_channel_fills_in() {
        let s = sub(json!({}));
        let c = csv();
        let acks = Acks::default();
        let source = |default| Source {
            subscription: &s,
            csv: &c,
            operator_group: None,
            name: "etcd",
            catalog: "community",
            default_channel: default,
            version: "0.9.4",
            acks: &acks,
        };
        let filled = extension(&source(Some("stable"))).expect("mapped");
        let spec = serde_json::to_value(&filled.extension.spec).expect("json");
        assert_eq!(spec["source"]["catalog"]["channels"], json!(["stable"]));
        assert!(filled.warnings.is_empty());
        let open = extension(&source(None)).expect("mapped");
        assert_eq!(
            open.warnings,
            [
                "Could not determine defaultChannel for package \"etcd\" — CE will consider all channels; verify upgrade behavior post-migration"
            ]
        );
        assert!(!manual(&s));
        assert_eq!(
            default_channel(&json!({"defaultChannel": "beta"})),
            Some("beta")
        );
    }
}
