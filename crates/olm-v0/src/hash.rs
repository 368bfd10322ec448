//! The digest olm-operator writes into generated names and labels: SHA-224 of some text, as a
//! base-62 number (OLM repo `pkg/controller/operators/olm/operatorgroup.go` `hash` for
//! ClusterRole names, `pkg/lib/kubernetes/pkg/util/hash` `DeepHashObject` for the
//! `olm.deployment-spec-hash` label). One definition, so that every generated name and label
//! is spelled the same way. Also FNV-1a, which upstream uses for API labels and the
//! installed-alongside annotation keys.

use sha2::{Digest, Sha224};

/// Base-62 SHA-224 of `data`: short enough for a label value, made of name-safe characters.
pub(crate) fn base62_sha224(data: &[u8]) -> String {
    base62(&Sha224::digest(data))
}

/// FNV-1a (64-bit) of `data` in lowercase hex without padding (Go's `hash/fnv` `New64a`, printed
/// with `%x`).
pub(crate) fn fnv1a_64_hex(data: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:x}")
}

/// `bytes` (big-endian) as a base-62 number with digits `0-9a-z A-Z` (Go's `big.Int.Text(62)`),
/// no leading zeros (`"0"` for zero).
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Values Go's `hash/fnv` gives.
    #[test]
    fn fnv1a_is_gos() {
        assert_eq!(fnv1a_64_hex(b"namespace-0/name-0"), "69efe9f983f66e80");
        assert_eq!(fnv1a_64_hex(b"/"), "af63a24c860189fe");
    }

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
