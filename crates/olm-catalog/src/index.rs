//! The validated catalog: packages → channels → entries, each entry joined with its bundle.
//!
//! Built by [`crate::validate::build_index`]; borrows from the [`Catalog`](crate::Catalog) it was built
//! from. Maps are `BTreeMap`s so every walk is in name order.

use std::collections::BTreeMap;

use crate::model::{Bundle, Channel, ChannelEntry, Package};
use crate::property::PackageProperty;
use olm_version::blang::Version;

/// A validated catalog's packages, by name.
#[derive(Debug, Default)]
pub struct Index<'a> {
    /// Every package, by name.
    pub packages: BTreeMap<&'a str, PackageNode<'a>>,
}

/// One package with its channels and bundles.
#[derive(Debug)]
pub struct PackageNode<'a> {
    /// The package's name.
    pub name: &'a str,
    /// Its `olm.package` blob.
    pub package: &'a Package,
    /// The default channel's name, if set.
    pub default_channel: Option<&'a str>,
    /// Every channel of the package, by name.
    pub channels: BTreeMap<&'a str, ChannelNode<'a>>,
    /// Every bundle of the package by name (a bundle may be an entry of several channels).
    pub bundles: BTreeMap<&'a str, BundleNode<'a>>,
    /// The package's deprecation message, if the package is deprecated.
    pub deprecation: Option<&'a str>,
}

/// One channel with its entries.
#[derive(Debug)]
pub struct ChannelNode<'a> {
    /// The channel's name.
    pub name: &'a str,
    /// `None` for the empty channel synthesized when `defaultChannel` names a channel with no blob.
    pub channel: Option<&'a Channel>,
    /// The channel's entries, by bundle name.
    pub entries: BTreeMap<&'a str, &'a ChannelEntry>,
    /// The channel's deprecation message, if the channel is deprecated.
    pub deprecation: Option<&'a str>,
}

/// One bundle with what validation read from its `olm.package` property.
#[derive(Debug)]
pub struct BundleNode<'a> {
    /// The `olm.bundle` blob.
    pub bundle: &'a Bundle,
    /// Its one `olm.package` property.
    pub package_property: PackageProperty,
    /// That property's version, parsed.
    pub version: Version,
    /// The bundle's deprecation message, if the bundle is deprecated.
    pub deprecation: Option<&'a str>,
}

impl BundleNode<'_> {
    /// `version` or `version-release`: the key of the duplicate-version check.
    pub fn version_release(&self) -> String {
        if self.package_property.release.is_empty() {
            self.version.to_string()
        } else {
            format!("{}-{}", self.version, self.package_property.release)
        }
    }
}

/// Why a channel's upgrade graph is invalid, in opm's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// Every entry is replaced or skipped by another.
    #[error("no channel head found in graph")]
    NoHead,
    /// More than one entry is replaced or skipped by none.
    #[error("multiple channel heads found in graph: {}", .0.join(", "))]
    MultipleHeads(Vec<String>),
    /// Following `replaces` from the head comes back: the path from the first repeated entry.
    #[error("detected cycle in replaces chain of upgrade graph: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    /// Entries neither on the head's replaces chain nor skipped.
    #[error("channel contains one or more stranded bundles: {}", .0.join(", "))]
    Stranded(Vec<String>),
}

impl<'a> ChannelNode<'a> {
    /// The channel head: the one entry no other entry replaces or skips (`skipRange` is ignored).
    ///
    /// # Errors
    ///
    /// No head, or several ([`GraphError`]).
    pub fn head(&self) -> Result<&'a ChannelEntry, GraphError> {
        let mut incoming: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for e in self.entries.values() {
            if !e.replaces.is_empty() {
                incoming.insert(&e.replaces);
            }
            for s in &e.skips {
                incoming.insert(s);
            }
        }
        let heads: Vec<&'a ChannelEntry> = self
            .entries
            .values()
            .copied()
            .filter(|e| !incoming.contains(e.name.as_str()))
            .collect();
        match heads.len() {
            0 => Err(GraphError::NoHead),
            1 => Ok(heads[0]),
            _ => Err(GraphError::MultipleHeads(
                heads.iter().map(|e| e.name.to_string()).collect(),
            )),
        }
    }

    /// Checks the replaces chain from the head: no cycle, and every entry is on the chain or skipped.
    ///
    /// # Errors
    ///
    /// What [`ChannelNode::head`] refuses, a cycle, or stranded entries ([`GraphError`]).
    pub fn check_replaces_chain(&self) -> Result<(), GraphError> {
        let head = self.head()?;
        let skipped: std::collections::HashSet<&str> = self
            .entries
            .values()
            .flat_map(|e| e.skips.iter().map(String::as_str))
            .collect();
        let mut chain: Vec<&str> = vec![head.name.as_str()];
        let mut cur = head;
        loop {
            let next = cur.replaces.as_str();
            if next.is_empty() {
                break;
            }
            if let Some(pos) = chain.iter().position(|n| *n == next) {
                let mut path: Vec<String> = chain[pos..].iter().map(|n| (*n).to_owned()).collect();
                path.push(next.to_owned());
                return Err(GraphError::Cycle(path));
            }
            chain.push(next);
            if skipped.contains(next) {
                break;
            }
            match self.entries.get(next) {
                Some(e) => cur = e,
                None => break,
            }
        }
        let on_chain: std::collections::HashSet<&str> = chain.into_iter().collect();
        let stranded: Vec<String> = self
            .entries
            .keys()
            .filter(|n| !on_chain.contains(*n) && !skipped.contains(*n))
            .map(|n| (*n).to_owned())
            .collect();
        if stranded.is_empty() {
            Ok(())
        } else {
            Err(GraphError::Stranded(stranded))
        }
    }
}
