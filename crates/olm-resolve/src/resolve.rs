//! The resolution algorithm: which catalog supplies the package, and which of its bundles the
//! ClusterExtension gets.
//!
//! 1. Catalogs that are unavailable do not exist; the selector picks among the rest.
//! 2. A selected catalog that serves no content is skipped: the others decide without it, and
//!    the result names it ([`Skipped`]) when its priority is at least that of the catalog that
//!    decided — only such a catalog could have changed the answer. When no serving catalog has
//!    the package and a catalog was skipped, the package is reported as not found in the serving
//!    catalogs, so that the person reading it knows to wait for the skipped one.
//! 3. Catalogs are grouped by priority, highest first. The first group in which any catalog
//!    contains the package decides: one such catalog is selected; several fail as ambiguous,
//!    whatever their bundles. No fall-through to a lower group once a catalog was selected.
//! 4. The selected catalog's bundles are filtered by channels, version range and, with an
//!    installed bundle and the `CatalogProvided` policy, by upgrade edges (successors).
//! 5. Preference: not deprecated, then highest version, then highest release, then name.
//! 6. The winner must not declare dependencies.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use olm_catalog::{BundleName, ChannelName, PackageName};
use olm_goenc::{quote, slice};
use olm_version::{VersionRelease, blang, masterminds};

use crate::error::ResolveError;
use crate::index::{BundleInfo, ChannelInfo, ContentIndex, Deprecations, PackageIndex};
use olm_k8s::LabelSelector;

/// Whether a catalog takes part in resolution (`spec.availabilityMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Availability {
    /// The catalog is considered (the default, `Available`).
    #[default]
    Available,
    /// The catalog is skipped, as if it did not exist (`Unavailable`).
    Unavailable,
}

/// One ClusterCatalog as resolution sees it.
#[derive(Debug, Clone)]
pub struct CatalogInput<'a> {
    /// The ClusterCatalog's name.
    pub name: String,
    /// Its labels, which the request's catalog selector matches against.
    pub labels: BTreeMap<String, String>,
    /// `spec.priority`: the highest-priority catalogs that have the package win.
    pub priority: i32,
    /// `spec.availabilityMode`.
    pub availability: Availability,
    /// What the catalog serves.
    pub content: Content<'a>,
}

/// What resolution can read of a catalog.
#[derive(Debug, Clone)]
pub enum Content<'a> {
    /// The catalog serves this content.
    Served(&'a ContentIndex),
    /// The catalog serves nothing now (never unpacked, or its unpack failed); the words say why,
    /// for the status of the extensions that skip it.
    NotServing(String),
}

/// A selected catalog resolution went on without, because it serves nothing now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The catalog's name.
    pub catalog: String,
    /// Why it serves nothing ([`Content::NotServing`]).
    pub reason: String,
}

impl std::fmt::Display for Skipped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "catalog {} was skipped (not serving: {})",
            quote(&self.catalog),
            self.reason
        )
    }
}

/// `spec.source.catalog.upgradeConstraintPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpgradeConstraintPolicy {
    /// Upgrades follow the catalog's edges (`replaces`, `skips`, `skipRange`).
    #[default]
    CatalogProvided,
    /// Any bundle matching version and channels, up or down.
    SelfCertified,
}

/// The bundle currently installed (`status.install.bundle`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The installed bundle's name.
    pub name: BundleName,
    /// Its version, as recorded in the status.
    pub version: String,
    /// An explicit release; None means the registry+v1 rule applies to `version`.
    pub release: Option<String>,
}

/// A ClusterExtension's version range (`spec.source.catalog.version`), parsed once where the
/// request is built; the text is kept as written, for messages.
#[derive(Debug, Clone)]
pub struct VersionRange {
    text: String,
    constraints: masterminds::Constraints,
}

impl VersionRange {
    /// Parses a Masterminds range.
    ///
    /// Errors: [`ResolveError::InvalidVersionRange`], worded as the resolver reports it in the
    /// ClusterExtension's status.
    pub fn parse(text: &str) -> Result<VersionRange, ResolveError> {
        masterminds::Constraints::parse(text)
            .map(|constraints| VersionRange {
                text: text.to_owned(),
                constraints,
            })
            .map_err(|e| ResolveError::InvalidVersionRange {
                range: text.to_owned(),
                message: e.to_string(),
            })
    }

    /// The range as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `v` is in the range.
    pub fn matches(&self, v: &masterminds::Version) -> bool {
        self.constraints.matches(v)
    }
}

impl std::str::FromStr for VersionRange {
    type Err = ResolveError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        VersionRange::parse(s)
    }
}

impl std::fmt::Display for VersionRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// What a ClusterExtension asks for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The package to install or upgrade.
    pub package: PackageName,
    /// Channels to restrict to; empty means every channel.
    pub channels: Vec<ChannelName>,
    /// The version range; None means any version.
    pub version: Option<VersionRange>,
    /// Which catalogs to consider; the default selects every catalog.
    pub selector: LabelSelector,
    /// Whether upgrades must follow the catalog's edges.
    pub policy: UpgradeConstraintPolicy,
    /// The bundle installed now, if any; upgrades start from it.
    pub installed: Option<Installed>,
}

/// The chosen bundle.
#[derive(Debug, Clone)]
pub struct Resolution {
    /// The catalog the bundle was taken from.
    pub catalog: String,
    /// The chosen bundle.
    pub bundle: BundleName,
    /// Its image reference, what the installer pulls.
    pub image: String,
    /// Its version and release.
    pub version: VersionRelease,
    /// Deprecations of the package in the selected catalog.
    pub deprecations: Deprecations,
    /// Catalogs skipped because they serve nothing, of a priority at least the selected
    /// catalog's (those that could have changed the answer); by name.
    pub skipped: Vec<Skipped>,
}

/// A resolution failure, with the deprecations of the selected catalog when one was selected
/// (status reports them even when no bundle matches).
#[derive(Debug, Clone)]
pub struct Failure {
    /// Why no bundle was chosen.
    pub error: ResolveError,
    /// The package's deprecations in the selected catalog; None when no catalog was selected.
    pub deprecations: Option<Box<Deprecations>>,
    /// Catalogs skipped because they serve nothing and that could have changed the answer
    /// (every skipped one when no catalog was selected); by name. A boxed slice keeps the
    /// error value small.
    pub skipped: Box<[Skipped]>,
}

impl Failure {
    /// What status and the client print: the error, then each skipped catalog
    /// (`; catalog "x" was skipped (not serving: …)`), so that a failure a catalog still
    /// unpacking may explain says so.
    pub fn message(&self) -> String {
        let mut s = self.error.to_string();
        for k in &self.skipped {
            s.push_str("; ");
            s.push_str(&k.to_string());
        }
        s
    }
}

impl From<ResolveError> for Failure {
    fn from(error: ResolveError) -> Self {
        Failure {
            error,
            deprecations: None,
            skipped: Box::default(),
        }
    }
}

/// Resolves `req` against `catalogs`. With `trace`, every decision is appended as a line of text
/// (`olm resolve --explain`).
pub fn resolve(
    catalogs: &[CatalogInput<'_>],
    req: &Request,
    mut trace: Option<&mut Vec<String>>,
) -> Result<Resolution, Failure> {
    let mut note = |line: String| {
        if let Some(t) = trace.as_deref_mut() {
            t.push(line);
        }
    };
    req.selector
        .validate()
        .map_err(|e| ResolveError::InvalidSelector(e.to_string()))?;
    let mut selected: Vec<(&CatalogInput<'_>, &ContentIndex)> = Vec::new();
    let mut skipped: Vec<(i32, Skipped)> = Vec::new();
    let mut any_selected = false;
    for c in catalogs {
        if c.availability == Availability::Unavailable {
            note(format!(
                "catalog {}: unavailable, not considered",
                quote(&c.name)
            ));
        } else if !req.selector.matches(&c.labels) {
            note(format!(
                "catalog {}: not selected by the selector",
                quote(&c.name)
            ));
        } else {
            any_selected = true;
            match &c.content {
                Content::Served(content) => selected.push((c, content)),
                Content::NotServing(reason) => {
                    note(format!(
                        "catalog {}: not serving ({reason}), skipped",
                        quote(&c.name)
                    ));
                    skipped.push((
                        c.priority,
                        Skipped {
                            catalog: c.name.clone(),
                            reason: reason.clone(),
                        },
                    ));
                }
            }
        }
    }
    if !any_selected {
        return Err(ResolveError::NoCatalogSelected {
            package: req.package.clone(),
            selector: !req.selector.is_empty(),
        }
        .into());
    }
    skipped.sort_by(|a, b| a.1.catalog.cmp(&b.1.catalog));
    // Only a skipped catalog of at least the deciding priority could have changed the answer.
    let skipped_from = |priority: Option<i32>| -> Vec<Skipped> {
        skipped
            .iter()
            .filter(|(p, _)| priority.is_none_or(|d| *p >= d))
            .map(|(_, k)| k.clone())
            .collect()
    };
    selected.sort_by(|(a, _), (b, _)| {
        b.priority
            .cmp(&a.priority)
            .then_with(|| a.name.cmp(&b.name))
    });

    let (catalog, package) = match select_catalog(&selected, req, &mut note) {
        Ok(found) => found,
        Err(Decided::Ambiguous(error, priority)) => {
            return Err(Failure {
                error,
                deprecations: None,
                skipped: skipped_from(Some(priority)).into(),
            });
        }
        Err(Decided::Nowhere) => {
            let error = if skipped.is_empty() {
                no_bundles(req)
            } else {
                ResolveError::NotInServingCatalogs {
                    package: req.package.clone(),
                }
            };
            return Err(Failure {
                error,
                deprecations: None,
                skipped: skipped_from(None).into(),
            });
        }
    };
    let skipped = skipped_from(Some(catalog.priority));
    let deprecations = package.deprecations.clone();
    let fail = |error: ResolveError| Failure {
        error,
        deprecations: Some(Box::new(deprecations.clone())),
        skipped: skipped.clone().into(),
    };

    let successors = match &req.installed {
        Some(i) if req.policy == UpgradeConstraintPolicy::CatalogProvided => {
            Some(Successors::of(i).map_err(fail)?)
        }
        _ => None,
    };
    let channels: Vec<_> = package
        .channels
        .iter()
        .filter(|c| req.channels.is_empty() || req.channels.contains(&c.name))
        .collect();

    let mut candidates: Vec<&BundleInfo> = Vec::new();
    for b in &package.bundles {
        let in_channel = req.channels.is_empty()
            || channels
                .iter()
                .any(|c| c.entries.iter().any(|e| e.name == b.name));
        if !in_channel {
            note(format!(
                "bundle {}: not in channels {}",
                quote(&b.name),
                slice(&req.channels)
            ));
            continue;
        }
        if let Some(range) = &req.version
            && !b.range_version.as_ref().is_some_and(|v| range.matches(v))
        {
            note(format!(
                "bundle {}: version outside {}",
                quote(&b.name),
                quote(range.as_str())
            ));
            continue;
        }
        if let Some(successors) = &successors
            && !successors.admits(b, &channels)
        {
            note(format!(
                "bundle {}: not an upgrade edge from the installed bundle",
                quote(&b.name)
            ));
            continue;
        }
        candidates.push(b);
    }
    candidates.sort_by(|a, b| prefer(a, b, &package.deprecations));
    let Some(winner) = candidates.first() else {
        return Err(fail(no_bundles(req)));
    };
    note(format!(
        "candidates in preference order: {}",
        slice(candidates.iter().map(|b| &b.name))
    ));
    if let Some(dep) = winner.dependency {
        return Err(fail(ResolveError::Dependency {
            bundle: winner.name.clone(),
            property: dep.to_owned(),
        }));
    }
    let version = winner
        .version
        .clone()
        .map_err(|e| fail(ResolveError::BundleVersion(e)))?;
    note(format!(
        "selected bundle {} ({}) from catalog {}",
        quote(&winner.name),
        version,
        quote(&catalog.name)
    ));
    Ok(Resolution {
        catalog: catalog.name.clone(),
        bundle: winner.name.clone(),
        image: winner.image.clone(),
        version,
        deprecations,
        skipped,
    })
}

/// Why no catalog was selected in [`select_catalog`].
enum Decided {
    /// Several catalogs of this priority have the package.
    Ambiguous(ResolveError, i32),
    /// No serving catalog has the package.
    Nowhere,
}

/// Walks priority groups of the serving catalogs from the highest; the first group where some
/// catalog has the package decides.
fn select_catalog<'c, 'a>(
    selected: &[(&'c CatalogInput<'a>, &'a ContentIndex)],
    req: &Request,
    note: &mut impl FnMut(String),
) -> Result<(&'c CatalogInput<'a>, &'a PackageIndex), Decided> {
    for group in selected.chunk_by(|(a, _), (b, _)| a.priority == b.priority) {
        let priority = group[0].0.priority;
        let holders: Vec<_> = group
            .iter()
            .filter_map(|(c, content)| content.packages.get(&req.package).map(|p| (*c, p)))
            .collect();
        match holders.as_slice() {
            [] => note(format!(
                "priority {priority}: no catalog has package {}",
                quote(&req.package)
            )),
            [(c, p)] => {
                note(format!(
                    "priority {priority}: catalog {} has package {}; selected",
                    quote(&c.name),
                    quote(&req.package)
                ));
                return Ok((*c, *p));
            }
            many => {
                return Err(Decided::Ambiguous(
                    ResolveError::Ambiguous {
                        package: req.package.clone(),
                        terms: crate::error::request_terms(
                            req.version.as_ref().map(|v| v.as_str()),
                            &req.channels,
                        ),
                        priority,
                        catalogs: many.iter().map(|(c, _)| c.name.clone()).collect(),
                    },
                    priority,
                ));
            }
        }
    }
    Err(Decided::Nowhere)
}

/// The no-bundle error for `req`, worded as upstream composes it.
fn no_bundles(req: &Request) -> ResolveError {
    ResolveError::NoBundles {
        package: req.package.clone(),
        version: req.version.as_ref().map(|v| v.as_str().to_owned()),
        channels: req.channels.clone(),
        installed: req.installed.as_ref().map(|i| i.version.clone()),
    }
}

/// What an installed bundle may move to under `CatalogProvided`: itself (same version and
/// release), or an entry of the considered channels that replaces it, skips it, or whose
/// `skipRange` contains its version.
struct Successors<'r> {
    name: &'r BundleName,
    version: VersionRelease,
    /// The installed version for skip ranges; None when blang cannot read it (no range matches).
    range_version: Option<blang::Version>,
}

impl<'r> Successors<'r> {
    fn of(i: &'r Installed) -> Result<Successors<'r>, ResolveError> {
        let version = match &i.release {
            None => VersionRelease::parse_legacy(&i.version),
            Some(r) => VersionRelease::parse_explicit(&i.version, r),
        }
        .map_err(|e| ResolveError::InstalledVersion {
            version: i.version.clone(),
            message: e.to_string(),
        })?;
        Ok(Successors {
            name: &i.name,
            version,
            range_version: blang::Version::parse(&i.version).ok(),
        })
    }

    fn admits(&self, b: &BundleInfo, channels: &[&ChannelInfo]) -> bool {
        b.version.as_ref().is_ok_and(|v| *v == self.version)
            || channels.iter().flat_map(|c| &c.entries).any(|e| {
                e.name == b.name
                    && (e.replaces == self.name.as_str()
                        || e.skips.iter().any(|s| s == self.name.as_str())
                        || e.skip_range
                            .as_ref()
                            .zip(self.range_version.as_ref())
                            .is_some_and(|(r, v)| r.matches(v)))
            })
    }
}

/// Not deprecated first, then highest version and release; unreadable versions last; then name.
fn prefer(a: &BundleInfo, b: &BundleInfo, deps: &Deprecations) -> Ordering {
    let deprecated = |x: &BundleInfo| deps.bundles.contains_key(&x.name);
    deprecated(a)
        .cmp(&deprecated(b))
        .then_with(|| match (&a.version, &b.version) {
            (Ok(x), Ok(y)) => y.cmp(x),
            (Ok(_), Err(_)) => Ordering::Less,
            (Err(_), Ok(_)) => Ordering::Greater,
            (Err(_), Err(_)) => Ordering::Equal,
        })
        .then_with(|| a.name.cmp(&b.name))
}
