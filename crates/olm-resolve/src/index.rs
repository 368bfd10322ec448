//! The resolver's view of catalogs, built once per catalog content: per package its bundles with
//! parsed versions, its channels with parsed skip ranges, and its deprecations. Resolving then only
//! filters and sorts one package's bundles, which keeps a resolution in the microseconds however
//! large the catalogs are.

use std::collections::{BTreeMap, HashMap};

use olm_catalog::model::{BundleName, Catalog, ChannelName, PackageName};
use olm_catalog::property::TypedProperty;
use olm_version::{VersionRelease, blang, masterminds};

/// Property types that declare dependencies, which OLM v1 does not support.
pub const DEPENDENCY_PROPERTIES: [&str; 3] =
    ["olm.package.required", "olm.gvk.required", "olm.constraint"];

/// One bundle of a package.
#[derive(Debug, Clone)]
pub struct BundleInfo {
    /// The bundle's name in the catalog.
    pub name: BundleName,
    /// The bundle image reference, what an installer pulls.
    pub image: String,
    /// The version and release (registry+v1 rule), or why it could not be read.
    pub version: Result<VersionRelease, String>,
    /// The version as Masterminds sees it, for version-range checks.
    pub(crate) range_version: Option<masterminds::Version>,
    /// The first dependency-declaring property type, if any.
    pub dependency: Option<&'static str>,
}

/// One channel entry's upgrade edges.
#[derive(Debug, Clone)]
pub struct EntryInfo {
    /// The bundle this entry is for.
    pub name: BundleName,
    /// The bundle this one upgrades from; empty when none.
    pub replaces: String,
    /// Further bundles this one upgrades from directly.
    pub skips: Vec<String>,
    /// The `skipRange`, when present and parsable (unparsable ranges are ignored, as upstream).
    pub skip_range: Option<blang::Range>,
}

/// One channel.
#[derive(Debug, Clone)]
pub struct ChannelInfo {
    /// The channel's name.
    pub name: ChannelName,
    /// Its entries, in catalog order.
    pub entries: Vec<EntryInfo>,
}

/// Deprecation messages of one package, by what they deprecate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deprecations {
    /// The message deprecating the whole package, if any.
    pub package: Option<String>,
    /// The message of each deprecated channel.
    pub channels: BTreeMap<ChannelName, String>,
    /// The message of each deprecated bundle.
    pub bundles: BTreeMap<BundleName, String>,
}

/// Everything the resolver needs about one package of one catalog.
#[derive(Debug, Clone, Default)]
pub struct PackageIndex {
    /// Every bundle of the package.
    pub bundles: Vec<BundleInfo>,
    /// Every channel of the package, with its upgrade edges.
    pub channels: Vec<ChannelInfo>,
    /// What the catalog deprecates in the package.
    pub deprecations: Deprecations,
}

/// One catalog's packages.
#[derive(Debug, Clone, Default)]
pub struct ContentIndex {
    /// Each package, by name: resolution looks one package up per request.
    pub packages: HashMap<PackageName, PackageIndex>,
}

impl ContentIndex {
    /// Indexes a catalog's content.
    pub fn new(catalog: &Catalog) -> ContentIndex {
        let mut packages: HashMap<PackageName, PackageIndex> = HashMap::new();
        for p in catalog.packages() {
            packages.entry(p.name.clone()).or_default();
        }
        for c in catalog.channels() {
            let entries = c
                .entries()
                .iter()
                .map(|e| EntryInfo {
                    name: e.name.clone(),
                    replaces: e.replaces.clone(),
                    skips: e.skips.clone(),
                    skip_range: (!e.skip_range.is_empty())
                        .then(|| blang::Range::parse(&e.skip_range).ok())
                        .flatten(),
                })
                .collect();
            packages
                .entry(c.package.clone())
                .or_default()
                .channels
                .push(ChannelInfo {
                    name: c.name.clone(),
                    entries,
                });
        }
        for b in catalog.bundles() {
            packages
                .entry(b.package.clone())
                .or_default()
                .bundles
                .push(bundle_info(b));
        }
        for d in catalog.deprecations() {
            let deps = &mut packages.entry(d.package.clone()).or_default().deprecations;
            for e in &d.entries {
                match e.reference.schema.as_str() {
                    "olm.package" => deps.package = Some(e.message.clone()),
                    "olm.channel" => {
                        deps.channels
                            .insert(e.reference.name.as_str().into(), e.message.clone());
                    }
                    "olm.bundle" => {
                        deps.bundles
                            .insert(e.reference.name.as_str().into(), e.message.clone());
                    }
                    _ => {}
                }
            }
        }
        ContentIndex { packages }
    }
}

fn bundle_info(b: &olm_catalog::model::Bundle) -> BundleInfo {
    let mut version = Err(format!(
        "no package property found in bundle {}",
        olm_goenc::quote(&b.name)
    ));
    let mut dependency = None;
    for p in &b.properties {
        if let Some(dep) = DEPENDENCY_PROPERTIES.iter().find(|t| **t == p.type_) {
            dependency = dependency.or(Some(*dep));
        }
        if p.type_ == "olm.package" && version.is_err() {
            version = match p.parse() {
                Ok(TypedProperty::Package(pkg)) => VersionRelease::parse_legacy(&pkg.version)
                    .map_err(|e| {
                        format!(
                            "error parsing version {} of bundle {}: {e}",
                            olm_goenc::quote(&pkg.version),
                            olm_goenc::quote(&b.name)
                        )
                    }),
                Ok(_) => continue,
                Err(e) => Err(format!("error unmarshalling package property: {e}")),
            };
        }
    }
    // Ranges are checked on the version with its release (or build metadata) taken off, as
    // Masterminds sees the bundle.
    let range_version = version
        .as_ref()
        .ok()
        .and_then(|v| masterminds::Version::parse(&v.version.to_string()).ok());
    BundleInfo {
        name: b.name.clone(),
        image: b.image.clone(),
        version,
        range_version,
        dependency,
    }
}
