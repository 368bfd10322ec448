//! Names and labels of the RBAC olm-operator generates for OperatorGroups (OLM repo
//! `pkg/controller/operators/olm/operatorgroup.go`): the three aggregating ClusterRoles per
//! group, and the per-API aggregation labels that feed them.

use sha2::{Digest, Sha224};

use crate::apis::ApiKey;
use crate::surface::gvk_hash;

/// The three roles of each group, with the verbs of the per-API roles that aggregate into them.
pub const ROLE_SUFFIXES: [(&str, &[&str]); 3] = [
    ("admin", &["*"]),
    ("edit", &["create", "update", "patch", "delete"]),
    ("view", &["get", "list", "watch"]),
];

/// The longest Kubernetes object name.
const NAME_LIMIT: usize = 253;

/// `text` as a base-62 number with digits `0-9a-z A-Z` (Go's `big.Int.Text(62)`), no leading
/// zeros (`"0"` for zero).
fn base62(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 62] = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut number: Vec<u8> = bytes.iter().copied().skip_while(|b| *b == 0).collect();
    let mut out = Vec::new();
    while !number.is_empty() {
        let mut rem: u32 = 0;
        let mut quotient = Vec::with_capacity(number.len());
        for &b in &number {
            let acc = (rem << 8) | u32::from(b);
            let q = acc / 62;
            rem = acc % 62;
            if !(quotient.is_empty() && q == 0) {
                quotient.push(u8::try_from(q).unwrap_or(0));
            }
        }
        out.push(DIGITS[usize::try_from(rem).unwrap_or(0)]);
        number = quotient;
    }
    if out.is_empty() {
        out.push(b'0');
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Base-62 SHA-224 of `s` (upstream's `hash`).
pub fn hash(s: &str) -> String {
    base62(&Sha224::digest(s.as_bytes()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base62_is_gos_big_int_text() {
        assert_eq!(base62(&[]), "0");
        assert_eq!(base62(&[0, 0]), "0");
        assert_eq!(base62(&[61]), "Z");
        assert_eq!(base62(&[62]), "10");
        assert_eq!(base62(&[1, 0]), "48"); // 256 = 4*62 + 8
        assert_eq!(base62(&[0xff, 0xff, 0xff, 0xff]), "4GFfc3"); // 4294967295
    }
}
