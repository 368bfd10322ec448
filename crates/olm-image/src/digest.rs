//! Content digests (`sha256:<64 hex>`), the identity of every blob and manifest.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest as _, Sha256};

/// A validated `sha256:<64 lowercase hex>` digest.
///
/// Only sha256 is accepted: it is what every registry and every OLM image uses, and a closed
/// set lets the cache use the hex part as a directory name without further checks.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest(String);

/// A string that is not a `sha256:<64 hex>` digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid digest {}: expected sha256:<64 lowercase hex characters>",
    olm_goenc::quote(.0)
)]
pub struct InvalidDigest(pub String);

impl Digest {
    /// The digest of `data`.
    pub fn of(data: &[u8]) -> Digest {
        Digest::from_sha256(Sha256::digest(data).as_slice())
    }

    /// A digest from the 32 raw bytes of a finished sha256.
    pub(crate) fn from_sha256(bytes: &[u8]) -> Digest {
        Digest(format!("sha256:{}", hex(bytes)))
    }

    /// The 64 hex characters after `sha256:`.
    pub fn hex(&self) -> &str {
        &self.0["sha256:".len()..]
    }

    /// The full `sha256:…` form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for Digest {
    type Err = InvalidDigest;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let Some(hex) = s.strip_prefix("sha256:") else {
            return Err(InvalidDigest(s.to_string()));
        };
        if hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Ok(Digest(s.to_string()))
        } else {
            Err(InvalidDigest(s.to_string()))
        }
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A sha256 computed while bytes stream through a writer or reader.
#[derive(Default)]
pub(crate) struct Hasher(Sha256);

impl Hasher {
    pub(crate) fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    pub(crate) fn finish(self) -> Digest {
        Digest::from_sha256(self.0.finalize().as_slice())
    }
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0xf)] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_of_empty_is_the_well_known_one() {
        assert_eq!(
            Digest::of(b"").as_str(),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn parse_rejects_other_forms() {
        let ok = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        assert_eq!(ok.parse::<Digest>().map(|d| d.to_string()), Ok(ok.into()));
        assert!("sha512:abcd".parse::<Digest>().is_err());
        assert!(ok.to_uppercase().parse::<Digest>().is_err());
        assert!("sha256:../../etc".parse::<Digest>().is_err());
    }

    /// The message quotes the input as Go's `%q` would: DEL as `\x7f`, a zero-width space escaped.
    #[test]
    fn invalid_digest_message_quotes_like_go() {
        assert_eq!(
            "sha256:\x7f\u{200b}"
                .parse::<Digest>()
                .unwrap_err()
                .to_string(),
            r#"invalid digest "sha256:\x7f\u200b": expected sha256:<64 lowercase hex characters>"#
        );
    }

    #[test]
    fn hasher_matches_one_shot() {
        let mut h = Hasher::default();
        h.update(b"hello ");
        h.update(b"world");
        assert_eq!(h.finish(), Digest::of(b"hello world"));
    }
}
