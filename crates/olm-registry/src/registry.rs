//! What the registry API answers from, built once from a validated catalog: every package as
//! `GetPackage` returns it, and every (channel, package, bundle) as a full API bundle in
//! `ListBundles` order. The queries are operator-registry's (`pkg/cache/pkgs.go`); where
//! upstream walks Go maps (`ListPackages`, the entry queries, `GetBundleThatReplaces`), this
//! answers in name order, so the same catalog always gives the same stream.

use std::collections::BTreeMap;

use olm_catalog::Catalog;
use prost::Message;

use crate::api;
use crate::convert::{self, ConvertError};

/// One bundle of one channel: where it is, its edges and the APIs it provides, for the entry
/// queries; `bundle` is its index in [`Registry::bundles`].
#[derive(Clone, PartialEq, Message)]
pub struct Entry {
    /// Package.
    #[prost(string, tag = "1")]
    pub package: String,
    /// Channel.
    #[prost(string, tag = "2")]
    pub channel: String,
    /// Bundle name.
    #[prost(string, tag = "3")]
    pub name: String,
    /// What it replaces.
    #[prost(string, tag = "4")]
    pub replaces: String,
    /// What it skips.
    #[prost(string, repeated, tag = "5")]
    pub skips: Vec<String>,
    /// Whether it heads its channel.
    #[prost(bool, tag = "6")]
    pub head: bool,
    /// Position of its bundle in [`Registry::bundles`].
    #[prost(uint64, tag = "7")]
    pub bundle: u64,
    /// Its `skipRange`.
    #[prost(string, tag = "8")]
    pub skip_range: String,
}

/// A bundle's channel-independent parts, stored once however many channels list it.
#[derive(Clone, PartialEq, Message)]
pub struct Stored {
    /// The API bundle without channel, `replaces`, `skips` and `skipRange`; its `object` left
    /// empty when it is just `[csvJson]` (a stub CSV), so that text is kept once.
    #[prost(message, optional, tag = "1")]
    pub bundle: Option<api::Bundle>,
    /// `object` is `[csvJson]`.
    #[prost(bool, tag = "2")]
    pub object_is_csv: bool,
}

/// A blob of a custom schema, for `ExperimentalListPackageCustomSchemas`.
#[derive(Clone, PartialEq, Message)]
pub struct CustomMeta {
    /// Its schema.
    #[prost(string, tag = "1")]
    pub schema: String,
    /// Its package.
    #[prost(string, tag = "2")]
    pub package: String,
    /// The blob.
    #[prost(message, optional, tag = "3")]
    pub blob: Option<prost_types::Struct>,
}

/// Everything the API serves, and what a cache file holds.
#[derive(Clone, PartialEq, Message)]
pub struct Registry {
    /// Every package, by name.
    #[prost(message, repeated, tag = "1")]
    pub packages: Vec<api::Package>,
    /// Every bundle once, by package and name.
    #[prost(message, repeated, tag = "2")]
    pub bundles: Vec<Stored>,
    /// Every (package, channel, bundle), sorted so.
    #[prost(message, repeated, tag = "3")]
    pub entries: Vec<Entry>,
    /// Positions in [`Registry::entries`] in `ListBundles` order: channel, package, name.
    #[prost(uint64, repeated, tag = "6")]
    pub listing: Vec<u64>,
    /// The digest of the catalog this was built from (see [`crate::cache`]).
    #[prost(string, tag = "4")]
    pub digest: String,
    /// The custom-schema blobs.
    #[prost(message, repeated, tag = "5")]
    pub metas: Vec<CustomMeta>,
}

/// Why a catalog cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// It does not validate.
    #[error("{0}")]
    Invalid(String),
    /// A bundle does not convert.
    #[error("process package {package:?}: {source}")]
    Bundle {
        /// The package.
        package: String,
        /// Why.
        source: ConvertError,
    },
}

impl Registry {
    /// Builds the registry of `catalog`, which must validate as `opm serve` requires.
    ///
    /// # Errors
    ///
    /// A catalog that does not validate, or a bundle that does not convert.
    pub fn build(catalog: &Catalog, digest: String) -> Result<Registry, BuildError> {
        let index = olm_catalog::validate::build_index(catalog)
            .map_err(|e| BuildError::Invalid(e.to_string()))?;
        Self::from_index(catalog, &index, digest)
    }

    /// [`Registry::build`] for a ConfigMap CatalogSource's catalog, validated as upstream's
    /// SQLite loader validates it: two CSVs of one version in a package are allowed
    /// ([`olm_catalog::validate::build_index_for_config_map`]).
    ///
    /// # Errors
    ///
    /// A catalog that does not validate so, or a bundle that does not convert.
    pub fn build_from_config_map(catalog: &Catalog) -> Result<Registry, BuildError> {
        let index = olm_catalog::validate::build_index_for_config_map(catalog)
            .map_err(|e| BuildError::Invalid(e.to_string()))?;
        Self::from_index(catalog, &index, String::new())
    }

    /// The registry of `catalog`, whose validated index is `index`.
    fn from_index(
        catalog: &Catalog,
        index: &olm_catalog::index::Index<'_>,
        digest: String,
    ) -> Result<Registry, BuildError> {
        let mut packages = Vec::new();
        let mut bundles = Vec::new();
        let mut entries = Vec::new();
        for (name, pkg) in &index.packages {
            // Each bundle of the package once, channel parts left to the entries.
            let mut positions = BTreeMap::new();
            for (bundle_name, node) in &pkg.bundles {
                let mut bundle = convert::bundle(pkg, "", node, "", &[], "").map_err(|source| {
                    BuildError::Bundle {
                        package: (*name).to_owned(),
                        source,
                    }
                })?;
                let object_is_csv =
                    !bundle.csv_json.is_empty() && bundle.object == [bundle.csv_json.as_str()];
                if object_is_csv {
                    bundle.object.clear();
                }
                positions.insert(*bundle_name, bundles.len() as u64);
                bundles.push(Stored {
                    bundle: Some(bundle),
                    object_is_csv,
                });
            }
            let mut channels = Vec::new();
            for (ch_name, ch) in &pkg.channels {
                let head = ch.head().map_err(|e| BuildError::Invalid(e.to_string()))?;
                channels.push(api::Channel {
                    name: (*ch_name).to_owned(),
                    csv_name: head.name.as_str().to_owned(),
                    deprecation: ch.deprecation.map(|m| api::Deprecation {
                        message: m.to_owned(),
                    }),
                });
                for (bundle_name, entry) in &ch.entries {
                    let Some(&bundle) = positions.get(bundle_name) else {
                        continue;
                    };
                    entries.push(Entry {
                        package: (*name).to_owned(),
                        channel: (*ch_name).to_owned(),
                        name: (*bundle_name).to_owned(),
                        replaces: entry.replaces.clone(),
                        skips: entry.skips.clone(),
                        head: head.name.as_str() == *bundle_name,
                        bundle,
                        skip_range: entry.skip_range.clone(),
                    });
                }
            }
            packages.push(api::Package {
                name: (*name).to_owned(),
                channels,
                default_channel_name: pkg.default_channel.unwrap_or_default().to_owned(),
                deprecation: pkg.deprecation.map(|m| api::Deprecation {
                    message: m.to_owned(),
                }),
            });
        }
        let mut listing: Vec<u64> = (0..entries.len() as u64).collect();
        listing.sort_by(|a, b| {
            let (a, b) = (&entries[*a as usize], &entries[*b as usize]);
            (&a.channel, &a.package, &a.name).cmp(&(&b.channel, &b.package, &b.name))
        });
        Ok(Registry {
            packages,
            bundles,
            entries,
            digest,
            metas: crate::metas::collect(catalog),
            listing,
        })
    }

    /// The package `name`.
    pub fn package(&self, name: &str) -> Option<&api::Package> {
        self.packages
            .binary_search_by(|p| p.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.packages[i])
    }

    /// The entries of `package`'s `channel`.
    pub fn channel(&self, package: &str, channel: &str) -> &[Entry] {
        let start = self
            .entries
            .partition_point(|e| (e.package.as_str(), e.channel.as_str()) < (package, channel));
        let end = self.entries[start..]
            .partition_point(|e| (e.package.as_str(), e.channel.as_str()) == (package, channel));
        &self.entries[start..start + end]
    }

    /// The channel-independent bundle of `entry`.
    fn stored(&self, entry: &Entry) -> Option<&Stored> {
        usize::try_from(entry.bundle)
            .ok()
            .and_then(|i| self.bundles.get(i))
    }

    /// The bundle image of `entry` (empty for a bundle carried in the catalog).
    pub fn image(&self, entry: &Entry) -> &str {
        self.stored(entry)
            .and_then(|s| s.bundle.as_ref())
            .map_or("", |b| b.bundle_path.as_str())
    }

    /// The APIs the bundle of `entry` provides.
    pub fn provided_apis(&self, entry: &Entry) -> &[api::GroupVersionKind] {
        self.stored(entry)
            .and_then(|s| s.bundle.as_ref())
            .map_or(&[], |b| b.provided_apis.as_slice())
    }

    /// The full API bundle of `entry` in its channel, with its edges; without its CSV and
    /// manifests when `content` is false.
    pub fn bundle_of(&self, entry: &Entry, content: bool) -> Option<api::Bundle> {
        let stored = self.stored(entry)?;
        let base = stored.bundle.as_ref()?;
        let mut b = if content {
            let mut b = base.clone();
            if stored.object_is_csv {
                b.object = vec![b.csv_json.clone()];
            }
            b
        } else {
            clone_light(base)
        };
        b.channel_name.clone_from(&entry.channel);
        b.replaces.clone_from(&entry.replaces);
        b.skips.clone_from(&entry.skips);
        b.skip_range.clone_from(&entry.skip_range);
        Some(b)
    }
}

/// `base` without its CSV and manifests, cloning only the rest.
fn clone_light(base: &api::Bundle) -> api::Bundle {
    api::Bundle {
        csv_name: base.csv_name.clone(),
        package_name: base.package_name.clone(),
        bundle_path: base.bundle_path.clone(),
        provided_apis: base.provided_apis.clone(),
        required_apis: base.required_apis.clone(),
        version: base.version.clone(),
        dependencies: base.dependencies.clone(),
        properties: base.properties.clone(),
        deprecation: base.deprecation.clone(),
        ..api::Bundle::default()
    }
}
