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
    /// Position of its API bundle in [`Registry::bundles`].
    #[prost(uint64, tag = "7")]
    pub bundle: u64,
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
    /// Every channel's bundles, in `ListBundles` order (channel, package, name), with their
    /// `replaces` and `skips`.
    #[prost(message, repeated, tag = "2")]
    pub bundles: Vec<api::Bundle>,
    /// Every (package, channel, bundle), sorted so.
    #[prost(message, repeated, tag = "3")]
    pub entries: Vec<Entry>,
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
        let mut packages = Vec::new();
        let mut keyed: BTreeMap<(String, String, String), (api::Bundle, Entry)> = BTreeMap::new();
        for (name, pkg) in &index.packages {
            let mut channels = Vec::new();
            for (ch_name, ch) in &pkg.channels {
                let head = ch.head().map_err(BuildError::Invalid)?;
                channels.push(api::Channel {
                    name: (*ch_name).to_owned(),
                    csv_name: head.name.as_str().to_owned(),
                    deprecation: ch.deprecation.map(|m| api::Deprecation {
                        message: m.to_owned(),
                    }),
                });
                for (bundle_name, entry) in &ch.entries {
                    let Some(node) = pkg.bundles.get(bundle_name) else {
                        continue;
                    };
                    let bundle = convert::bundle(
                        pkg,
                        ch_name,
                        node,
                        &entry.replaces,
                        &entry.skips,
                        &entry.skip_range,
                    )
                    .map_err(|source| BuildError::Bundle {
                        package: (*name).to_owned(),
                        source,
                    })?;
                    let e = Entry {
                        package: (*name).to_owned(),
                        channel: (*ch_name).to_owned(),
                        name: (*bundle_name).to_owned(),
                        replaces: entry.replaces.clone(),
                        skips: entry.skips.clone(),
                        head: head.name.as_str() == *bundle_name,
                        bundle: 0,
                    };
                    keyed.insert(
                        (
                            (*ch_name).to_owned(),
                            (*name).to_owned(),
                            (*bundle_name).to_owned(),
                        ),
                        (bundle, e),
                    );
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
        let mut bundles = Vec::with_capacity(keyed.len());
        let mut entries = Vec::with_capacity(keyed.len());
        for (i, (_, (bundle, mut entry))) in keyed.into_iter().enumerate() {
            entry.bundle = i as u64;
            bundles.push(bundle);
            entries.push(entry);
        }
        entries.sort_by(|a, b| {
            (&a.package, &a.channel, &a.name).cmp(&(&b.package, &b.channel, &b.name))
        });
        Ok(Registry {
            packages,
            bundles,
            entries,
            digest,
            metas: crate::metas::collect(catalog),
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

    /// The API bundle of `entry`.
    pub fn bundle_of(&self, entry: &Entry) -> Option<&api::Bundle> {
        usize::try_from(entry.bundle)
            .ok()
            .and_then(|i| self.bundles.get(i))
    }
}
