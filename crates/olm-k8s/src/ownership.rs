//! Which lifecycle manager holds an object, read from its metadata alone.
//!
//! OLM v0 and OLM v1 share one cluster and often the same operators. Neither may take the
//! other's objects: an OLM v0 InstallPlan that updated a CRD an OLM v1 revision controls
//! stripped its owner reference and put an older schema back under the extension, and an OLM v1
//! revision that adopted a CSV's objects would pull them from under a running operator. Both
//! sides ask [`holder`] before they write, and both name the holder in the same words
//! ([`Holder`]'s `Display` and [`Holder::remedy`]), so a user reads on either side who holds the
//! object and what to do.
//!
//! The marks read, strongest first:
//! 1. a controller owner reference to an OLM v1 `ClusterObjectSet` (the extension's name from
//!    the object's `olm.operatorframework.io/owner-name` label);
//! 2. an owner reference to an OLM v0 `ClusterServiceVersion` or `InstallPlan`
//!    (`operators.coreos.com`), in the object's namespace;
//! 3. OLM v0's owner labels (`olm.owner`, `olm.owner.namespace`, `olm.owner.kind`), which it
//!    puts on cluster-scoped objects;
//! 4. any other controller owner reference;
//! 5. OLM v0's `olm.managed=true`, which its InstallPlans put on every object they create —
//!    the only mark a CRD made by OLM v0 carries.

use std::fmt;

use serde_json::{Map, Value};

use crate::labels::{
    CLUSTER_EXTENSION_KIND, OWNER_KIND_LABEL, OWNER_NAME_LABEL, V0_MANAGED_LABEL,
    V0_OWNER_KIND_LABEL, V0_OWNER_LABEL, V0_OWNER_NAMESPACE_LABEL,
};

/// The API group of OLM v1's revisions.
const V1_GROUP: &str = "olm.operatorframework.io";
/// The API group of OLM v0's objects.
const V0_GROUP: &str = "operators.coreos.com";

/// Who holds an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Holder {
    /// An OLM v1 revision controls it.
    Extension {
        /// The ClusterExtension.
        extension: String,
        /// The ClusterObjectSet (revision) that controls it.
        revision: String,
    },
    /// An OLM v0 object owns it: a ClusterServiceVersion, an InstallPlan or an OperatorGroup.
    V0Owner {
        /// The owner's kind.
        kind: String,
        /// The owner's namespace.
        namespace: String,
        /// The owner's name.
        name: String,
    },
    /// OLM v0 created it (`olm.managed=true`) without naming an owner, as it creates CRDs.
    /// The ClusterServiceVersions (`namespace`, `name`) known to own it, when the caller knows.
    V0Managed {
        /// `(namespace, name)` of the ClusterServiceVersions that list it as owned.
        csvs: Vec<(String, String)>,
    },
    /// Another controller (neither OLM).
    Controller {
        /// The controller's kind.
        kind: String,
        /// The controller's name.
        name: String,
    },
    /// Nothing claims it: made by hand or by a tool that leaves no mark.
    Nobody,
}

impl Holder {
    /// Whether OLM v0 holds the object.
    pub fn is_v0(&self) -> bool {
        matches!(self, Holder::V0Owner { .. } | Holder::V0Managed { .. })
    }

    /// What a user does so that the object can be installed by someone else.
    pub fn remedy(&self) -> String {
        match self {
            Holder::Extension { extension, .. } => {
                format!("uninstall the ClusterExtension \"{extension}\" first")
            }
            Holder::V0Owner { kind, .. } if kind == "OperatorGroup" => {
                "remove the OLM v0 OperatorGroup first".to_owned()
            }
            Holder::V0Owner { .. } | Holder::V0Managed { .. } => {
                "uninstall the operator from OLM v0 first (delete its Subscription and ClusterServiceVersion)".to_owned()
            }
            Holder::Controller { .. } => {
                "remove it from its controller, or install somewhere else".to_owned()
            }
            Holder::Nobody => "delete it, or install somewhere else".to_owned(),
        }
    }
}

impl fmt::Display for Holder {
    /// Who holds it, as the end of "it belongs to …".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Holder::Extension {
                extension,
                revision,
            } => write!(
                f,
                "ClusterExtension \"{extension}\" (OLM v1, revision \"{revision}\")"
            ),
            Holder::V0Owner {
                kind,
                namespace,
                name,
            } => write!(f, "{kind} \"{name}\" in namespace \"{namespace}\" (OLM v0)"),
            Holder::V0Managed { csvs } if csvs.is_empty() => {
                write!(f, "OLM v0 (labelled {V0_MANAGED_LABEL}=true)")
            }
            Holder::V0Managed { csvs } => {
                let names: Vec<String> = csvs
                    .iter()
                    .map(|(ns, name)| format!("\"{name}\" in namespace \"{ns}\""))
                    .collect();
                let noun = if csvs.len() == 1 {
                    "ClusterServiceVersion"
                } else {
                    "ClusterServiceVersions"
                };
                write!(f, "{noun} {} (OLM v0)", names.join(", "))
            }
            Holder::Controller { kind, name } => write!(f, "{kind} \"{name}\""),
            Holder::Nobody => f.write_str("no owner (made outside OLM)"),
        }
    }
}

/// Who holds `object` (a whole object as JSON; only its `metadata` is read).
pub fn holder(object: &Map<String, Value>) -> Holder {
    let meta = object.get("metadata");
    let text = |v: Option<&Value>, key: &str| -> String {
        v.and_then(|v| v.get(key))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let labels = meta.and_then(|m| m.get("labels"));
    let label = |key: &str| text(labels, key);
    let refs: &[Value] = meta
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let group_of = |r: &Value| -> String {
        let api_version = text(Some(r), "apiVersion");
        api_version
            .split_once('/')
            .map(|(g, _)| g.to_owned())
            .unwrap_or_default()
    };
    let is_controller = |r: &Value| r.get("controller").and_then(Value::as_bool) == Some(true);

    if let Some(r) = refs
        .iter()
        .find(|r| is_controller(r) && group_of(r) == V1_GROUP)
    {
        let revision = text(Some(r), "name");
        let extension = if label(OWNER_KIND_LABEL) == CLUSTER_EXTENSION_KIND
            && !label(OWNER_NAME_LABEL).is_empty()
        {
            label(OWNER_NAME_LABEL)
        } else {
            // Revisions are named `<extension>-<number>`.
            revision
                .rsplit_once('-')
                .filter(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                .map_or_else(|| revision.clone(), |(e, _)| e.to_owned())
        };
        return Holder::Extension {
            extension,
            revision,
        };
    }
    // OLM v0 builds its owner references from the CSV's own apiVersion, so a bundle whose CSV
    // says `apiVersion: v1alpha1` (k8gb 0.11.4's does) leaves references without the group;
    // no other API has these kinds, so a groupless one is OLM v0's too.
    if let Some(r) = refs.iter().find(|r| {
        matches!(group_of(r).as_str(), V0_GROUP | "")
            && matches!(
                text(Some(r), "kind").as_str(),
                "ClusterServiceVersion" | "InstallPlan"
            )
    }) {
        return Holder::V0Owner {
            kind: text(Some(r), "kind"),
            namespace: text(meta, "namespace"),
            name: text(Some(r), "name"),
        };
    }
    let v0_kind = label(V0_OWNER_KIND_LABEL);
    if !v0_kind.is_empty() && !label(V0_OWNER_LABEL).is_empty() {
        return Holder::V0Owner {
            kind: v0_kind,
            namespace: label(V0_OWNER_NAMESPACE_LABEL),
            name: label(V0_OWNER_LABEL),
        };
    }
    if let Some(r) = refs.iter().find(|r| is_controller(r)) {
        return Holder::Controller {
            kind: text(Some(r), "kind"),
            name: text(Some(r), "name"),
        };
    }
    if label(V0_MANAGED_LABEL) == "true" {
        return Holder::V0Managed { csvs: Vec::new() };
    }
    Holder::Nobody
}

/// Why OLM v0 leaves `object` (a `kind` named `name`) alone: `Some` when an OLM v1 revision
/// holds it, as the one sentence every OLM v0 writer reports.
pub fn v0_refusal(kind: &str, name: &str, object: &Map<String, Value>) -> Option<String> {
    match holder(object) {
        holder @ Holder::Extension { .. } => Some(format!(
            "{kind} \"{name}\" belongs to {holder}; OLM v0 does not take over objects OLM v1 manages: {}",
            holder.remedy()
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(v: Value) -> Holder {
        holder(v.as_object().unwrap_or(&Map::new()))
    }

    #[test]
    fn marks_in_order_of_strength() {
        let cases = [
            (
                "an OLM v1 revision's controller reference, extension from the owner-name label",
                json!({"metadata": {
                "labels": {"olm.operatorframework.io/owner-kind": "ClusterExtension", "olm.operatorframework.io/owner-name": "pg", "olm.managed": "true"},
                "ownerReferences": [
                    {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", "name": "pg.v1", "uid": "1"},
                    {"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet", "name": "pg-3", "uid": "2", "controller": true},
                ]}}),
                Holder::Extension {
                    extension: "pg".into(),
                    revision: "pg-3".into(),
                },
            ),
            (
                "a revision's reference without labels: the extension from the revision's name",
                json!({"metadata": {"ownerReferences": [
                    {"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet", "name": "my-ext-12", "uid": "2", "controller": true}]}}),
                Holder::Extension {
                    extension: "my-ext".into(),
                    revision: "my-ext-12".into(),
                },
            ),
            (
                "a CSV's owner reference, in the object's namespace",
                json!({"metadata": {"namespace": "ops", "ownerReferences": [
                    {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", "name": "nats.v1.0.0", "uid": "1", "controller": false}]}}),
                Holder::V0Owner {
                    kind: "ClusterServiceVersion".into(),
                    namespace: "ops".into(),
                    name: "nats.v1.0.0".into(),
                },
            ),
            (
                "a CSV's owner reference without the group, as OLM v0 writes it for a bundle whose CSV says apiVersion: v1alpha1 (k8gb 0.11.4)",
                json!({"metadata": {"namespace": "shared", "labels": {"olm.managed": "true"}, "ownerReferences": [
                    {"apiVersion": "v1alpha1", "kind": "ClusterServiceVersion", "name": "k8gb.v0.11.4", "uid": "1", "controller": false}]}}),
                Holder::V0Owner {
                    kind: "ClusterServiceVersion".into(),
                    namespace: "shared".into(),
                    name: "k8gb.v0.11.4".into(),
                },
            ),
            (
                "OLM v0's owner labels on a cluster-scoped object",
                json!({"metadata": {"labels": {"olm.owner": "nats.v1.0.0", "olm.owner.namespace": "ops", "olm.owner.kind": "ClusterServiceVersion", "olm.managed": "true"}}}),
                Holder::V0Owner {
                    kind: "ClusterServiceVersion".into(),
                    namespace: "ops".into(),
                    name: "nats.v1.0.0".into(),
                },
            ),
            (
                "another controller",
                json!({"metadata": {"ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "1", "controller": true}]}}),
                Holder::Controller {
                    kind: "ReplicaSet".into(),
                    name: "rs".into(),
                },
            ),
            (
                "a CRD an InstallPlan created: only olm.managed",
                json!({"metadata": {"labels": {"olm.managed": "true"}}}),
                Holder::V0Managed { csvs: vec![] },
            ),
            (
                "nothing",
                json!({"metadata": {"labels": {"app": "x"}}}),
                Holder::Nobody,
            ),
            ("no metadata at all", json!({}), Holder::Nobody),
        ];
        for (why, object, want) in cases {
            assert_eq!(of(object), want, "{why}");
        }
    }

    #[test]
    fn olm_v0_refuses_only_what_olm_v1_holds() {
        let held = json!({"metadata": {
            "labels": {"olm.operatorframework.io/owner-kind": "ClusterExtension", "olm.operatorframework.io/owner-name": "nats"},
            "ownerReferences": [{"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet", "name": "nats-1", "uid": "2", "controller": true}]}});
        assert_eq!(
            v0_refusal(
                "CustomResourceDefinition",
                "natsclusters.nats.io",
                held.as_object().unwrap_or(&Map::new())
            )
            .as_deref(),
            Some(
                "CustomResourceDefinition \"natsclusters.nats.io\" belongs to ClusterExtension \"nats\" (OLM v1, revision \"nats-1\"); OLM v0 does not take over objects OLM v1 manages: uninstall the ClusterExtension \"nats\" first"
            )
        );
        let own = json!({"metadata": {"labels": {"olm.managed": "true"}}});
        assert_eq!(
            v0_refusal(
                "CustomResourceDefinition",
                "x",
                own.as_object().unwrap_or(&Map::new())
            ),
            None
        );
    }

    #[test]
    fn described_as_sentences() {
        let cases = [
            (
                Holder::Extension {
                    extension: "pg".into(),
                    revision: "pg-3".into(),
                },
                "ClusterExtension \"pg\" (OLM v1, revision \"pg-3\")",
                "uninstall the ClusterExtension \"pg\" first",
            ),
            (
                Holder::V0Owner {
                    kind: "ClusterServiceVersion".into(),
                    namespace: "ops".into(),
                    name: "nats.v1".into(),
                },
                "ClusterServiceVersion \"nats.v1\" in namespace \"ops\" (OLM v0)",
                "uninstall the operator from OLM v0 first (delete its Subscription and ClusterServiceVersion)",
            ),
            (
                Holder::V0Managed {
                    csvs: vec![("a".into(), "x.v1".into()), ("b".into(), "x.v2".into())],
                },
                "ClusterServiceVersions \"x.v1\" in namespace \"a\", \"x.v2\" in namespace \"b\" (OLM v0)",
                "uninstall the operator from OLM v0 first (delete its Subscription and ClusterServiceVersion)",
            ),
            (
                Holder::V0Managed { csvs: vec![] },
                "OLM v0 (labelled olm.managed=true)",
                "uninstall the operator from OLM v0 first (delete its Subscription and ClusterServiceVersion)",
            ),
            (
                Holder::Nobody,
                "no owner (made outside OLM)",
                "delete it, or install somewhere else",
            ),
        ];
        for (holder, said, remedy) in cases {
            assert_eq!(holder.to_string(), said);
            assert_eq!(holder.remedy(), remedy);
            assert!(!said.contains("&OwnerReference"));
        }
    }
}
