//! The registry API's queries over a [`Registry`], with operator-registry's answers and error
//! texts (`pkg/cache/cache.go`, `pkg/cache/pkgs.go`).

use olm_goenc::quote;

use crate::api;
use crate::registry::{Entry, Registry};

/// A bundle as the single-bundle queries return it: its `replaces` and `skips` cleared.
fn trimmed(mut b: api::Bundle) -> api::Bundle {
    b.replaces.clear();
    b.skips.clear();
    b
}

fn entry(e: &Entry, replaces: &str) -> api::ChannelEntry {
    api::ChannelEntry {
        package_name: e.package.clone(),
        channel_name: e.channel.clone(),
        bundle_name: e.name.clone(),
        replaces: replaces.to_owned(),
    }
}

fn provides(r: &Registry, e: &Entry, group: &str, version: &str, kind: &str) -> bool {
    r.provided_apis(e)
        .iter()
        .any(|g| g.group == group && g.version == version && g.kind == kind)
}

/// Why a registry query has no answer, in upstream's words: the message of the gRPC status the
/// server answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// No such package.
    #[error("package {} not found", quote(.0))]
    PackageNotFound(String),
    /// No such package, as `GetBundleThatReplaces` says it (the name unquoted).
    #[error("package {0} not found")]
    PackageNotFoundUnquoted(String),
    /// No such channel in the package (or no head in it).
    #[error("package {}, channel {} not found", quote(.package), quote(.channel))]
    ChannelNotFound {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
    },
    /// No such bundle in the channel.
    #[error(
        "package {}, channel {}, bundle {} not found",
        quote(.package),
        quote(.channel),
        quote(.bundle)
    )]
    BundleNotFound {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// The bundle.
        bundle: String,
    },
    /// Nothing replaces or skips the bundle.
    #[error("no channel entries found that replace {0}")]
    NoReplacement(String),
    /// Nothing in the channel replaces or skips the bundle.
    #[error("no entry found for package {}, channel {}", quote(.package), quote(.channel))]
    NoReplacingBundle {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
    },
    /// Nothing provides the API (`group:"G" version:"V" kind:"K"`).
    #[error("no channel entries found that provide {0}")]
    NoProvider(String),
    /// Nothing in a default channel provides the API.
    #[error("no entry found that provides {0}")]
    NoDefaultProvider(String),
}

fn gvk_text(group: &str, version: &str, kind: &str) -> String {
    format!(
        "group:{} version:{} kind:{}",
        quote(group),
        quote(version),
        quote(kind)
    )
}

impl Registry {
    /// `ListPackages`: every package name (sorted).
    pub fn list_packages(&self) -> Vec<api::PackageName> {
        self.packages
            .iter()
            .map(|p| api::PackageName {
                name: p.name.clone(),
            })
            .collect()
    }

    /// `GetPackage`.
    ///
    /// # Errors
    ///
    /// `package "NAME" not found`.
    pub fn get_package(&self, name: &str) -> Result<api::Package, QueryError> {
        self.package(name)
            .cloned()
            .ok_or_else(|| QueryError::PackageNotFound(name.to_owned()))
    }

    fn channel_checked(&self, package: &str, channel: &str) -> Result<&[Entry], QueryError> {
        let pkg = self
            .package(package)
            .ok_or_else(|| QueryError::PackageNotFound(package.to_owned()))?;
        if !pkg.channels.iter().any(|c| c.name == channel) {
            return Err(QueryError::ChannelNotFound {
                package: package.to_owned(),
                channel: channel.to_owned(),
            });
        }
        Ok(self.channel(package, channel))
    }

    /// `GetBundle`.
    ///
    /// # Errors
    ///
    /// The package, channel or bundle not found, in upstream's words.
    pub fn get_bundle(
        &self,
        package: &str,
        channel: &str,
        name: &str,
    ) -> Result<api::Bundle, QueryError> {
        let entries = self.channel_checked(package, channel)?;
        entries
            .iter()
            .find(|e| e.name == name)
            .and_then(|e| self.bundle_of(e, true))
            .map(trimmed)
            .ok_or_else(|| QueryError::BundleNotFound {
                package: package.to_owned(),
                channel: channel.to_owned(),
                bundle: name.to_owned(),
            })
    }

    /// `GetBundleForChannel`: the channel head.
    ///
    /// # Errors
    ///
    /// The package or channel not found.
    pub fn get_bundle_for_channel(
        &self,
        package: &str,
        channel: &str,
    ) -> Result<api::Bundle, QueryError> {
        let entries = self.channel_checked(package, channel)?;
        entries
            .iter()
            .find(|e| e.head)
            .and_then(|e| self.bundle_of(e, true))
            .map(trimmed)
            .ok_or_else(|| QueryError::ChannelNotFound {
                package: package.to_owned(),
                channel: channel.to_owned(),
            })
    }

    /// `GetChannelEntriesThatReplace`: one entry per bundle that replaces `name`, and one per
    /// bundle skipping it (when it does not also replace it); each carries the bundle's own
    /// `replaces`.
    ///
    /// # Errors
    ///
    /// `no channel entries found that replace NAME`.
    pub fn channel_entries_that_replace(
        &self,
        name: &str,
    ) -> Result<Vec<api::ChannelEntry>, QueryError> {
        let mut out = Vec::new();
        for e in &self.entries {
            if e.replaces == name {
                out.push(entry(e, &e.replaces));
            }
            for s in &e.skips {
                if s == name && *s != e.replaces {
                    out.push(entry(e, &e.replaces));
                }
            }
        }
        if out.is_empty() {
            return Err(QueryError::NoReplacement(name.to_owned()));
        }
        Ok(out)
    }

    /// `GetBundleThatReplaces`: the bundle of the channel that replaces `name`, else one that
    /// skips it; the first by name where several do (upstream takes whichever its map yields).
    ///
    /// # Errors
    ///
    /// The package or channel not found, or no such bundle.
    pub fn bundle_that_replaces(
        &self,
        name: &str,
        package: &str,
        channel: &str,
    ) -> Result<api::Bundle, QueryError> {
        if self.package(package).is_none() {
            return Err(QueryError::PackageNotFoundUnquoted(package.to_owned()));
        }
        let entries = self.channel_checked(package, channel)?;
        entries
            .iter()
            .find(|e| e.replaces == name)
            .or_else(|| entries.iter().find(|e| e.skips.iter().any(|s| s == name)))
            .and_then(|e| self.bundle_of(e, true))
            .map(trimmed)
            .ok_or_else(|| QueryError::NoReplacingBundle {
                package: package.to_owned(),
                channel: channel.to_owned(),
            })
    }

    /// One entry for the bundle with its `replaces`, and one per skipped bundle other than
    /// that (only those in the channel unless `any_skip`).
    fn entries_for(&self, e: &Entry, any_skip: bool) -> Vec<api::ChannelEntry> {
        let mut out = vec![entry(e, &e.replaces)];
        let channel = if any_skip {
            &[][..]
        } else {
            self.channel(&e.package, &e.channel)
        };
        for s in &e.skips {
            let in_channel = channel.iter().any(|c| c.name == *s);
            if *s != e.replaces && (any_skip || in_channel) {
                out.push(entry(e, s));
            }
        }
        out
    }

    /// The entries of the bundles providing the API — channel heads only when `latest`, whose
    /// skips count only when in the channel.
    fn providers(
        &self,
        group: &str,
        version: &str,
        kind: &str,
        latest: bool,
    ) -> Result<Vec<api::ChannelEntry>, QueryError> {
        let out: Vec<api::ChannelEntry> = self
            .entries
            .iter()
            .filter(|e| (!latest || e.head) && provides(self, e, group, version, kind))
            .flat_map(|e| self.entries_for(e, !latest))
            .collect();
        if out.is_empty() {
            return Err(QueryError::NoProvider(gvk_text(group, version, kind)));
        }
        Ok(out)
    }

    /// `GetChannelEntriesThatProvide`: every bundle providing the API, with its edges.
    ///
    /// # Errors
    ///
    /// `no channel entries found that provide group:"G" version:"V" kind:"K"`.
    pub fn channel_entries_that_provide(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<Vec<api::ChannelEntry>, QueryError> {
        self.providers(group, version, kind, false)
    }

    /// `GetLatestChannelEntriesThatProvide`: the channel heads providing the API.
    ///
    /// # Errors
    ///
    /// As [`Registry::channel_entries_that_provide`].
    pub fn latest_channel_entries_that_provide(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<Vec<api::ChannelEntry>, QueryError> {
        self.providers(group, version, kind, true)
    }

    /// `GetDefaultBundleThatProvides`: among the channel heads providing the API, by package
    /// name, the first in its package's default channel.
    ///
    /// # Errors
    ///
    /// None provides it, or none in a default channel.
    pub fn default_bundle_that_provides(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Result<api::Bundle, QueryError> {
        let latest = self.latest_channel_entries_that_provide(group, version, kind)?;
        for e in &latest {
            let Some(pkg) = self.package(&e.package_name) else {
                continue;
            };
            if e.channel_name == pkg.default_channel_name {
                return self.get_bundle(&e.package_name, &e.channel_name, &e.bundle_name);
            }
        }
        Err(QueryError::NoDefaultProvider(gvk_text(
            group, version, kind,
        )))
    }

    /// `ListBundles`' `i`th bundle: bundles of every channel, by channel, package and name; the
    /// CSV and manifests left out of bundles that have an image.
    pub fn listed(&self, i: usize) -> Option<api::Bundle> {
        let at = usize::try_from(*self.listing.get(i)?).ok()?;
        let e = self.entries.get(at)?;
        self.bundle_of(e, self.image(e).is_empty())
    }
}
