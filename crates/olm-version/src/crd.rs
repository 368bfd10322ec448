//! The admission rule for `ClusterExtension.spec.source.catalog.version`: which strings the API
//! server accepts before any controller sees them. The CRD's CEL rule, the CLI and the controller
//! all use [`VERSION_RANGE_PATTERN`], so they can never disagree.
//!
//! The pattern accepts a subset of the Masterminds grammar: no hyphen ranges, no `==` or `&&`, no
//! leading zeros, at most three numeric parts. Upstream's pattern has three typos (`\*]` for `\*`
//! in two places and `[x|X|\*]` admitting `|`): it accepts `1.*]` and refuses `1.2.* || 2.3.*`.
//! We use the corrected pattern; every string accepted by one and not the other is listed in the
//! oracle test.

use std::borrow::Cow;
use std::sync::LazyLock;

/// Longest version range the API accepts, in characters.
pub const MAX_VERSION_RANGE_LEN: usize = 64;

/// The message the API server reports when [`VERSION_RANGE_PATTERN`] does not match.
pub const INVALID_VERSION_RANGE_MESSAGE: &str = "invalid version expression";

macro_rules! comparator {
    () => {
        r"(=||!=|>|<|>=|=>|<=|=<|~|~>|\^)\s*(v?(0|[1-9]\d*|x|X|\*)(\.(0|[1-9]\d*|x|X|\*))?(\.(0|[1-9]\d*|x|X|\*))?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?)"
    };
}

/// The regular expression (RE2 syntax, valid in CEL's `matches`) a version range must match.
pub const VERSION_RANGE_PATTERN: &str = concat!(
    r"^(\s*",
    comparator!(),
    r"\s*)((?:\s+|,\s*|\s*\|\|\s*)",
    comparator!(),
    r"\s*)*$"
);

static PATTERN: LazyLock<regex::Regex> = LazyLock::new(|| {
    #[allow(clippy::expect_used)] // a constant pattern, checked by the unit test below
    regex::Regex::new(VERSION_RANGE_PATTERN).expect("VERSION_RANGE_PATTERN is a valid regex")
});

/// Whether the API server admits `s` as a ClusterExtension version range.
///
/// The empty string means "no range" and is valid: our API types omit an empty version, so the
/// server never evaluates the rule on it.
pub fn is_valid_version_range(s: &str) -> bool {
    s.is_empty() || (s.chars().count() <= MAX_VERSION_RANGE_LEN && PATTERN.is_match(s))
}

/// The API server's admission of `spec.source.catalog.version`, with its words: its length limit
/// (an over-long value is not echoed back), then the CRD's pattern.
///
/// # Errors
///
/// `spec.source.catalog.version: Too long: …` or `spec.source.catalog.version: Invalid value:
/// "…": invalid version expression`.
pub fn check_version_range(s: &str) -> Result<(), VersionRangeRefused> {
    if s.chars().count() > MAX_VERSION_RANGE_LEN {
        return Err(VersionRangeRefused::TooLong);
    }
    if !is_valid_version_range(s) {
        return Err(VersionRangeRefused::Invalid(s.to_owned()));
    }
    Ok(())
}

/// Why the API server refuses `spec.source.catalog.version`, in its words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionRangeRefused {
    /// Longer than the CRD admits (the value is not echoed back).
    #[error(
        "spec.source.catalog.version: Too long: may not be more than {MAX_VERSION_RANGE_LEN} bytes"
    )]
    TooLong,
    /// Not matching the CRD's pattern.
    #[error(
        "spec.source.catalog.version: Invalid value: {}: {INVALID_VERSION_RANGE_MESSAGE}",
        crate::go::quote(.0)
    )]
    Invalid(String),
}

/// A version range as a message echoes it: whole when it is no longer than the API admits, else
/// its first [`MAX_VERSION_RANGE_LEN`] characters and `…`. Upstream echoes a range whole, but
/// never one past the limit (the API server refuses that first), so messages about admissible
/// ranges stay upstream's, and a range of 100 KB (from a flag, or an object the server never
/// checked) does not flood a terminal or a status condition.
pub fn echo_range(s: &str) -> Cow<'_, str> {
    match s.char_indices().nth(MAX_VERSION_RANGE_LEN) {
        None => Cow::Borrowed(s),
        Some((cut, _)) => Cow::Owned(format!("{}…", &s[..cut])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_over_long_range_is_echoed_cut_at_the_limit() {
        let fits = "x".repeat(MAX_VERSION_RANGE_LEN);
        assert!(matches!(echo_range(&fits), Cow::Borrowed(s) if s == fits));
        let long = format!(
            "{}é{}",
            "1".repeat(MAX_VERSION_RANGE_LEN - 1),
            "2".repeat(100_000)
        );
        assert_eq!(
            echo_range(&long),
            format!("{}é…", "1".repeat(MAX_VERSION_RANGE_LEN - 1))
        );
    }

    #[test]
    fn pattern_compiles_and_admits_the_documented_examples() {
        for ok in [
            ">=1.2.3, <2.0.0 || >3.0.0",
            "^0 || ^3 || ^5",
            "1.2.*",
            "<= 2.x",
            "~1.2.x",
            "0.6.0",
            "*",
        ] {
            assert!(is_valid_version_range(ok), "{ok}");
        }
        for bad in [
            "1.2.3 - 2.3.4",
            "==1.2.3",
            ">1 && <2",
            "01.2.3",
            "1.2.3.4",
            "1.*]",
        ] {
            assert!(!is_valid_version_range(bad), "{bad}");
        }
    }
}
