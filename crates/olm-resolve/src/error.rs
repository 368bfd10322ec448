//! Resolution errors, worded for `ClusterExtension.status.conditions`. Where upstream OLM has a
//! message for the same situation, the text is upstream's (names quoted as Go's `%q` quotes them).

use olm_catalog::{BundleName, ChannelName, PackageName};
use olm_goenc::{quote, slice};

/// Why no bundle was chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("desired catalog selector is invalid: {0}")]
    InvalidSelector(String),
    #[error("desired version range {} is invalid: {message}", quote(range))]
    InvalidVersionRange { range: String, message: String },
    #[error("{}", no_catalog(package, *selector))]
    NoCatalogSelected {
        package: PackageName,
        selector: bool,
    },
    #[error(
        "found package {} in multiple catalogs with the same priority {priority} {}: select one catalog or give the catalogs different priorities",
        quote(package),
        slice(catalogs)
    )]
    Ambiguous {
        package: PackageName,
        priority: i32,
        catalogs: Vec<String>,
    },
    #[error("catalog {} is not being served", quote(catalog))]
    NotServing { catalog: String },
    #[error("{}", no_bundles(package, version.as_deref(), channels, installed.as_deref()))]
    NoBundles {
        package: PackageName,
        /// The requested range, as written.
        version: Option<String>,
        channels: Vec<ChannelName>,
        /// The installed version, as written.
        installed: Option<String>,
    },
    #[error(
        "validating bundle {q}: bundle {q} has a dependency declared via property {} which is currently not supported",
        quote(property),
        q = quote(bundle)
    )]
    Dependency {
        bundle: BundleName,
        property: String,
    },
    #[error("{0}")]
    BundleVersion(String),
    #[error("invalid installed version {}: {message}", quote(version))]
    InstalledVersion { version: String, message: String },
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
    if let Some(v) = version.filter(|v| !v.is_empty()) {
        s.push_str(&format!("matching version {} ", quote(v)));
    }
    if !channels.is_empty() {
        s.push_str(&format!("in channels {} ", slice(channels)));
    }
    s.truncate(s.trim_end().len());
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names are quoted as Go's `%q` quotes them (upstream formats these messages with `%q`), so a
    /// control character or DEL reads `\x01`/`\x7f`, not Rust's `\u{1}`.
    #[test]
    fn names_are_quoted_like_go() {
        let e = ResolveError::NotServing {
            catalog: "c\x01\x7f".into(),
        };
        assert_eq!(e.to_string(), r#"catalog "c\x01\x7f" is not being served"#);
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
}
