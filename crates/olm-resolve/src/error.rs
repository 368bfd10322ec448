//! Resolution errors, worded for `ClusterExtension.status.conditions`. Where upstream OLM has a
//! message for the same situation, the text is upstream's (names quoted as Go's `%q` quotes them).

use olm_catalog::{BundleName, ChannelName, PackageName};
use olm_goenc::{quote, slice};
use olm_version::echo_range;

/// Why no bundle was chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The request's catalog selector breaks a rule of Kubernetes label selectors (an empty key,
    /// values given to `Exists`, none given to `In`); carries the selector's own message.
    #[error("desired catalog selector is invalid: {0}")]
    InvalidSelector(String),
    /// The requested version range is not a Masterminds constraint. The message echoes a range
    /// past the API's length limit cut at that limit ([`olm_version::echo_range`]).
    #[error("desired version range {} is invalid: {message}", quote(&echo_range(range)))]
    InvalidVersionRange {
        /// The range as written, whole.
        range: String,
        /// The constraint parser's message.
        message: String,
    },
    /// No available catalog is left after the selector (or there is none at all).
    #[error("{}", no_catalog(package, *selector))]
    NoCatalogSelected {
        /// The requested package.
        package: PackageName,
        /// Whether a non-empty selector did the excluding, which changes upstream's wording.
        selector: bool,
    },
    /// The package is in more than one catalog of the highest priority that has it, so there is
    /// no single catalog to take it from. The first sentence is upstream's
    /// (operator-controller `internal/operator-controller/resolve/catalog.go`, pinned by
    /// `test/e2e/features/install.feature`); the second says how to settle it.
    #[error(
        "{}. They have priority {priority}: select one catalog with spec.source.catalog.selector, or give the catalogs different priorities",
        ambiguous(package, terms, catalogs)
    )]
    Ambiguous {
        /// The requested package.
        package: PackageName,
        /// The request's version and channels as upstream words them after the package
        /// ([`request_terms`]); empty when the request names neither.
        terms: String,
        /// The priority the catalogs share.
        priority: i32,
        /// The catalogs that have the package at that priority, in name order.
        catalogs: Vec<String>,
    },
    /// No serving catalog has the package while some selected catalog was skipped for serving
    /// nothing: the package may be in that one ([`crate::Failure::message`] names it).
    #[error("package {} was not found in the serving catalogs", quote(package))]
    NotInServingCatalogs {
        /// The requested package.
        package: PackageName,
    },
    /// The package is found but no bundle of it matches the channels, the version range and (on
    /// an upgrade) the upgrade edges from the installed bundle.
    #[error("{}", no_bundles(package, version.as_deref(), channels, installed.as_deref()))]
    NoBundles {
        /// The requested package.
        package: PackageName,
        /// The requested range, as written.
        version: Option<String>,
        /// The requested channels; empty when every channel was allowed.
        channels: Vec<ChannelName>,
        /// The installed version, as written.
        installed: Option<String>,
    },
    /// The chosen bundle declares a dependency, which OLM v1 cannot satisfy.
    #[error(
        "validating bundle {q}: bundle {q} has a dependency declared via property {} which is currently not supported",
        quote(property),
        q = quote(bundle)
    )]
    Dependency {
        /// The chosen bundle.
        bundle: BundleName,
        /// The dependency-declaring property type it carries.
        property: String,
    },
    /// The chosen bundle's version could not be read; carries the version parser's message.
    #[error("{0}")]
    BundleVersion(String),
    /// The installed bundle's version (or release) recorded in the status cannot be parsed, so
    /// upgrade edges from it cannot be followed.
    #[error("invalid installed version {}: {message}", quote(version))]
    InstalledVersion {
        /// The installed version, as written.
        version: String,
        /// The version parser's message.
        message: String,
    },
}

fn no_catalog(package: &str, selector: bool) -> String {
    if selector {
        format!(
            "no available ClusterCatalog matches the catalog selector; cannot resolve package {}",
            quote(package)
        )
    } else {
        format!(
            "no available ClusterCatalog exists; cannot resolve package {}",
            quote(package)
        )
    }
}

/// upstream's composition: optional installed prefix, package, version, channels; trailing space trimmed.
fn no_bundles(
    package: &str,
    version: Option<&str>,
    channels: &[ChannelName],
    installed: Option<&str>,
) -> String {
    let mut s = String::new();
    if let Some(v) = installed {
        s.push_str(&format!(
            "error upgrading from currently installed version {}: ",
            quote(v)
        ));
    }
    s.push_str(&format!("no bundles found for package {} ", quote(package)));
    s.push_str(&request_terms(version, channels));
    s.truncate(s.trim_end().len());
    s
}

/// upstream's wording of an ambiguous answer: the package, the request's terms, then the
/// catalogs, which the resolver gives in name order as upstream sorts them.
fn ambiguous(package: &str, terms: &str, catalogs: &[String]) -> String {
    format!(
        "found bundles for package {} {terms}in multiple catalogs with the same priority {}",
        quote(package),
        slice(catalogs)
    )
}

/// The version and channel terms upstream inserts after the package, each followed by a space.
pub(crate) fn request_terms(version: Option<&str>, channels: &[ChannelName]) -> String {
    let mut s = String::new();
    if let Some(v) = version.filter(|v| !v.is_empty()) {
        s.push_str(&format!("matching version {} ", quote(&echo_range(v))));
    }
    if !channels.is_empty() {
        s.push_str(&format!("in channels {} ", slice(channels)));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Masterminds refuses a range of over 512 bytes; the message says so without echoing the
    /// range back in full.
    #[test]
    fn an_over_long_range_is_not_echoed_in_full() {
        let long = ">=1.0.0 ".repeat(12_500);
        let err = crate::VersionRange::parse(&long).expect_err("too long");
        assert_eq!(
            err.to_string(),
            format!(
                "desired version range \"{}…\" is invalid: constraint string is too long (max 512 bytes)",
                &long[..olm_version::MAX_VERSION_RANGE_LEN]
            )
        );
        // An admissible range is echoed whole, as upstream echoes it.
        let err = crate::VersionRange::parse("1.2.3.4").expect_err("improper");
        assert!(
            err.to_string()
                .starts_with(r#"desired version range "1.2.3.4" is invalid: "#)
        );
    }

    /// Names are quoted as Go's `%q` quotes them (upstream formats these messages with `%q`), so a
    /// control character or DEL reads `\x01`/`\x7f`, not Rust's `\u{1}`.
    #[test]
    fn names_are_quoted_like_go() {
        let e = ResolveError::NotInServingCatalogs {
            package: "c\x01\x7f".into(),
        };
        assert_eq!(
            e.to_string(),
            r#"package "c\x01\x7f" was not found in the serving catalogs"#
        );
        let e = ResolveError::NoBundles {
            package: "p\u{feff}".into(),
            version: Some("1.0.0".into()),
            channels: vec!["a".into(), "b".into()],
            installed: None,
        };
        assert_eq!(
            e.to_string(),
            r#"no bundles found for package "p\ufeff" matching version "1.0.0" in channels [a b]"#
        );
    }

    /// The ambiguity's first sentence is upstream's, with the request's terms in upstream's
    /// order (operator-controller `internal/operator-controller/resolve/catalog.go`).
    #[test]
    fn ambiguity_uses_upstream_words_then_advice() {
        let e = ResolveError::Ambiguous {
            package: "p".into(),
            terms: request_terms(Some(">=1.0.0"), &["stable".into()]),
            priority: -2,
            catalogs: vec!["a".into(), "b".into(), "c".into()],
        };
        assert_eq!(
            e.to_string(),
            r#"found bundles for package "p" matching version ">=1.0.0" in channels [stable] in multiple catalogs with the same priority [a b c]. They have priority -2: select one catalog with spec.source.catalog.selector, or give the catalogs different priorities"#
        );
    }
}
