//! Object names derived from content, byte-compatible with operator-controller.
//!
//! Upstream names generated Roles, ClusterRoles and their bindings `<base>-<hash>`, where the hash
//! is SHA-224 over Go's `json.Encoder` output of the CSV permission (HTML-escaped, Go field order,
//! `omitempty` honoured, trailing newline) printed in base 36. Any deviation in those bytes gives a
//! different name, and a different name means OLM would see a foreign object on upgrade — so the
//! bytes are `encoding/json`'s exactly ([`olm_goenc::json`] writes them), and callers build the
//! values in Go field order (serde_json keeps insertion order in this workspace).

use serde_json::Value;
use sha2::{Digest, Sha224};

/// Kubernetes' limit for most object names (DNS-1123 label length).
const MAX_NAME_LENGTH: usize = 63;

/// `encoding/json` output of `v` followed by the newline `json.Encoder.Encode` appends.
pub fn go_json_encode(v: &Value) -> String {
    let mut out = String::new();
    olm_goenc::json::write_value_html(&mut out, v);
    out.push('\n');
    out
}

/// Base-36 SHA-224 of Go's JSON encoding of `v` (upstream `DeepHashObject`).
pub fn deep_hash(v: &Value) -> String {
    let digest = Sha224::digest(go_json_encode(v).as_bytes());
    to_base36(&digest)
}

/// Big-endian bytes as a base-36 number without leading zeros (Go `big.Int.Text(36)`).
fn to_base36(bytes: &[u8]) -> String {
    let mut num: Vec<u8> = bytes.to_vec();
    let mut digits = Vec::new();
    while num.iter().any(|&b| b != 0) {
        let mut rem: u32 = 0;
        for b in num.iter_mut() {
            let cur = (rem << 8) | u32::from(*b);
            *b = (cur / 36) as u8;
            rem = cur % 36;
        }
        digits.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[rem as usize]);
    }
    if digits.is_empty() {
        return "0".into();
    }
    digits.reverse();
    String::from_utf8_lossy(&digits).into_owned()
}

/// `<base>-<suffix>`, cutting `base` so the result fits 63 characters, exactly as upstream's
/// `ObjectNameForBaseAndSuffix` does: it compares base and suffix without the joining `-`, so a
/// name of 64 characters is kept as it is. Objects must be named as OLM names them, or an
/// upgrade from OLM would not find them.
pub fn object_name_for_base_and_suffix(base: &str, suffix: &str) -> String {
    let mut base = base;
    if base.len() + suffix.len() > MAX_NAME_LENGTH {
        let mut cut = MAX_NAME_LENGTH.saturating_sub(suffix.len() + 1);
        while cut > 0 && !base.is_char_boundary(cut) {
            cut -= 1;
        }
        base = &base[..cut];
    }
    format!("{base}-{suffix}")
}

/// The name upstream's default unique-name generator gives: `base` joined with the hash of `v`.
pub fn unique_name(base: &str, v: &Value) -> String {
    object_name_for_base_and_suffix(base, &deep_hash(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_like_go() {
        let v = json!({"b": "<a&b>", "a": [1, 2.5, null], "c": "\u{1}\n"});
        assert_eq!(
            go_json_encode(&v),
            "{\"b\":\"\\u003ca\\u0026b\\u003e\",\"a\":[1,2.5,null],\"c\":\"\\u0001\\n\"}\n"
        );
    }

    #[test]
    fn base36_of_small_numbers() {
        assert_eq!(to_base36(&[0, 35]), "z");
        assert_eq!(to_base36(&[0, 36]), "10");
        assert_eq!(to_base36(&[0]), "0");
    }

    /// operator-controller v1.11.0's `ObjectNameForBaseAndSuffix`: names of 62, 63 and 64
    /// characters are kept, one of 65 is cut to 63.
    #[test]
    fn names_are_cut_as_upstream_cuts_them() {
        let suffix = "selfsigned-issuer";
        for (total, want) in [(62, 62), (63, 63), (64, 64), (65, 63), (80, 63)] {
            let base = "b".repeat(total - suffix.len() - 1);
            let n = object_name_for_base_and_suffix(&base, suffix);
            assert_eq!(n.len(), want, "{total}");
            assert!(n.ends_with("b-selfsigned-issuer"), "{n}");
        }
    }
}
