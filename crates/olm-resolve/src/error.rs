//! Resolution errors, worded for `ClusterExtension.status.conditions`. Where upstream OLM has a
//! message for the same situation, the text is upstream's.

/// Why no bundle was chosen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("desired catalog selector is invalid: {0}")]
    InvalidSelector(String),
    #[error("desired version range {range:?} is invalid: {message}")]
    InvalidVersionRange { range: String, message: String },
    #[error("{}", no_catalog(package, *selector))]
    NoCatalogSelected { package: String, selector: bool },
    #[error(
        "found package {package:?} in multiple catalogs with the same priority {priority} {}: select one catalog or give the catalogs different priorities",
        go_list(catalogs)
    )]
    Ambiguous {
        package: String,
        priority: i32,
        catalogs: Vec<String>,
    },
    #[error("catalog {catalog:?} is not being served")]
    NotServing { catalog: String },
    #[error("{}", no_bundles(package, version, channels, installed.as_deref()))]
    NoBundles {
        package: String,
        version: String,
        channels: Vec<String>,
        installed: Option<String>,
    },
    #[error(
        "validating bundle {bundle:?}: bundle {bundle:?} has a dependency declared via property {property:?} which is currently not supported"
    )]
    Dependency { bundle: String, property: String },
    #[error("{0}")]
    BundleVersion(String),
    #[error("invalid installed version {version:?}: {message}")]
    InstalledVersion { version: String, message: String },
}

fn no_catalog(package: &str, selector: bool) -> String {
    if selector {
        format!(
            "no available ClusterCatalog matches the catalog selector; cannot resolve package {package:?}"
        )
    } else {
        format!("no available ClusterCatalog exists; cannot resolve package {package:?}")
    }
}

/// Go's `%v` of a string slice: `[a b]`.
fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// upstream's composition: optional installed prefix, package, version, channels; trailing space trimmed.
fn no_bundles(
    package: &str,
    version: &str,
    channels: &[String],
    installed: Option<&str>,
) -> String {
    let mut s = String::new();
    if let Some(v) = installed {
        s.push_str(&format!(
            "error upgrading from currently installed version {v:?}: "
        ));
    }
    s.push_str(&format!("no bundles found for package {package:?} "));
    if !version.is_empty() {
        s.push_str(&format!("matching version {version:?} "));
    }
    if !channels.is_empty() {
        s.push_str(&format!("in channels {} ", go_list(channels)));
    }
    s.truncate(s.trim_end().len());
    s
}
