//! Names and labels of the RBAC olm-operator generates for OperatorGroups (OLM repo
//! `pkg/controller/operators/olm/operatorgroup.go`): the three aggregating ClusterRoles per
//! group, and the per-API aggregation labels that feed them.

use crate::apis::ApiKey;
use crate::hash::base62_sha224;
use crate::surface::gvk_hash;

/// The three roles of each group, with the verbs of the per-API roles that aggregate into them.
pub const ROLE_SUFFIXES: [(&str, &[&str]); 3] = [
    ("admin", &["*"]),
    ("edit", &["create", "update", "patch", "delete"]),
    ("view", &["get", "list", "watch"]),
];

/// The longest Kubernetes object name.
const NAME_LIMIT: usize = 253;

/// Base-62 SHA-224 of `s` (upstream's `hash`).
pub fn hash(s: &str) -> String {
    base62_sha224(s.as_bytes())
}

/// `olm.og.<group>.<suffix>-<hash of "<ns>/<group>/<suffix>">`, the group name cut so that the
/// whole stays within 253 characters.
pub fn group_cluster_role_name(namespace: &str, group: &str, suffix: &str) -> String {
    let tail = hash(&format!("{namespace}/{group}/{suffix}"));
    // "olm.og..-" is the format's fixed text.
    let limit = NAME_LIMIT
        .saturating_sub("olm.og..-".len())
        .saturating_sub(suffix.len())
        .saturating_sub(tail.len());
    let name = if group.len() < limit {
        group
    } else {
        group.get(..limit).unwrap_or(group)
    };
    format!("olm.og.{name}.{suffix}-{tail}")
}

/// The label by which the per-API role of `suffix` for `api` aggregates into its group's
/// role: `olm.opgroup.permissions/aggregate-to-<hash>-<suffix>`.
pub fn aggregation_label(api: &ApiKey, suffix: &str) -> String {
    format!(
        "olm.opgroup.permissions/aggregate-to-{}-{suffix}",
        gvk_hash(api)
    )
}
