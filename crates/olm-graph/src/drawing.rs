//! The decision: which packages, channels, entries and edges a picture shows, and how each is
//! marked.

use std::collections::{BTreeMap, HashMap, HashSet};

use olm_version::blang;

use olm_catalog::model::{BundleName, Catalog, Channel, ChannelEntry, PackageName};
use olm_catalog::property::TypedProperty;
use olm_goenc::quote;

/// What to draw.
#[derive(Debug, Clone, Default)]
pub struct GraphOptions {
    /// Only this package (`-p`).
    pub package: Option<PackageName>,
    /// Only edges at or above this bundle's version, in its package (`--minimum-edge`).
    pub minimum_edge: Option<BundleName>,
    /// Mark which bundles OLM v0 would skip over (`--draw-v0-semantics`).
    pub v0_semantics: bool,
    /// Draw at most this many `skipRange` edges in all (None: all of them). A range such as
    /// `>=0.0.0 <x` on every tenth of 10,000 entries means millions of edges, which nobody can
    /// read and which take seconds and gigabytes to draw; past the limit the remaining entries'
    /// ranges are not evaluated, and a warning says how many were left out.
    pub max_skip_range_edges: Option<usize>,
}

/// Why a graph cannot be drawn; the texts are opm's, names quoted as Go's `%q` quotes them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// `--minimum-edge` names no bundle of the catalog.
    #[error("unknown minimum edge name: {}", quote(.0))]
    UnknownMinimumEdge(BundleName),
    /// A bundle property could not be read.
    #[error("parse properties for bundle {}: {message}", quote(.bundle))]
    Properties {
        /// The bundle.
        bundle: BundleName,
        /// Why its properties could not be read.
        message: String,
    },
    /// A bundle has no or several `olm.package` properties, so no one version.
    #[error("bundle {} has multiple \"olm.package\" properties, expected exactly 1", quote(.0))]
    PackageProperties(BundleName),
    /// A bundle's version is not semver.
    #[error("bundle {} has invalid version {}: {message}", quote(.bundle), quote(.version))]
    Version {
        /// The bundle.
        bundle: BundleName,
        /// Its version, as written.
        version: String,
        /// The semver parser's reason.
        message: String,
    },
}

/// How a node is decorated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodeClass {
    /// The bundle is deprecated.
    Deprecated,
    /// The bundle is deprecated and a higher entry skips it.
    DeprecatedSkipped,
    /// A higher entry skips the bundle (drawn with OLM v0 semantics only).
    Skipped,
}

impl NodeClass {
    /// The class name opm's Mermaid uses.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeClass::Deprecated => "deprecated",
            NodeClass::DeprecatedSkipped => "deprecatedskipped",
            NodeClass::Skipped => "skipped",
        }
    }
}

/// The kind of an upgrade edge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EdgeKind {
    /// The entry `skips` the older bundle.
    Skip,
    /// The entry's `skipRange`, as written.
    SkipRange(String),
    /// The entry `replaces` the older bundle.
    Replace,
}

/// One drawn edge, from an older bundle to the entry that upgrades it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// The older bundle, as the entry names it (it need not be in the catalog).
    pub from: String,
    /// The entry that upgrades it.
    pub to: String,
    /// Which edge field of the entry draws it.
    pub kind: EdgeKind,
    /// Global edge number (Mermaid's link id).
    pub id: usize,
    /// The edge leaves a bundle OLM v0 would already have skipped.
    pub flagged: bool,
}

/// One drawn entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The entry's bundle name.
    pub name: String,
    /// Its decoration, if any.
    pub class: Option<NodeClass>,
    /// Edges drawn for this entry, in drawing order.
    pub edges: Vec<Edge>,
    /// The (major, minor) stream of its version, which the SVG lays out as a column; None for
    /// a name that is no bundle of the catalog.
    pub stream: Option<(u64, u64)>,
}

/// One drawn channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelDrawing {
    /// The channel name.
    pub name: String,
    /// Whether the package's deprecations name the channel.
    pub deprecated: bool,
    /// Entries in decreasing version.
    pub nodes: Vec<Node>,
}

/// One drawn package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageDrawing {
    /// The package name.
    pub name: String,
    /// Whether the package itself is deprecated.
    pub deprecated: bool,
    /// Its drawn channels, sorted by name.
    pub channels: Vec<ChannelDrawing>,
}

/// Everything a writer needs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Drawing {
    /// Packages sorted by name.
    pub packages: Vec<PackageDrawing>,
    /// What opm prints on stderr (invalid skip ranges).
    pub warnings: Vec<String>,
}

fn zero() -> blang::Version {
    blang::Version {
        major: 0,
        minor: 0,
        patch: 0,
        pre: Vec::new(),
        build: Vec::new(),
    }
}

fn bundle_versions(catalog: &Catalog) -> Result<HashMap<&str, blang::Version>, GraphError> {
    let mut out = HashMap::new();
    for b in catalog.bundles() {
        if out.contains_key(b.name.as_str()) {
            continue;
        }
        let mut versions = Vec::new();
        for p in &b.properties {
            match p.parse() {
                Ok(TypedProperty::Package(pkg)) => versions.push(pkg.version),
                Ok(_) => {}
                Err(message) => {
                    return Err(GraphError::Properties {
                        bundle: b.name.clone(),
                        message,
                    });
                }
            }
        }
        let [version] = &versions[..] else {
            return Err(GraphError::PackageProperties(b.name.clone()));
        };
        let parsed = blang::Version::parse(version).map_err(|e| GraphError::Version {
            bundle: b.name.clone(),
            version: version.clone(),
            message: e.to_string(),
        })?;
        out.insert(b.name.as_str(), parsed);
    }
    Ok(out)
}

/// The `-p` and `--minimum-edge` filters.
struct Filter<'a> {
    opts: &'a GraphOptions,
    versions: HashMap<&'a str, blang::Version>,
    floor: blang::Version,
    floor_package: Option<PackageName>,
}

impl Filter<'_> {
    /// A bundle's version; names that are no bundle count as 0.0.0, as in opm.
    fn version(&self, name: &str) -> blang::Version {
        self.versions.get(name).cloned().unwrap_or_else(zero)
    }

    /// The channel's entries as drawn, or None when nothing of it is left.
    fn channel(&self, c: &Channel) -> Option<Vec<ChannelEntry>> {
        if self
            .opts
            .package
            .as_deref()
            .is_some_and(|p| c.package.as_str() != p)
            || self
                .floor_package
                .as_deref()
                .is_some_and(|p| c.package.as_str() != p)
        {
            return None;
        }
        let Some(min) = &self.opts.minimum_edge else {
            return (!c.entries().is_empty() || self.opts.package.is_none())
                .then(|| c.entries().to_vec());
        };
        let mut out = Vec::new();
        for ce in c.entries() {
            let mut kept = ChannelEntry {
                name: ce.name.clone(),
                ..Default::default()
            };
            if ce.name == *min {
                // The floor itself is drawn without its (older) edges.
                out.push(kept);
                continue;
            }
            if !ce.replaces.is_empty() && self.version(&ce.replaces) >= self.floor {
                kept.replaces = ce.replaces.clone();
            }
            kept.skips = ce
                .skips
                .iter()
                .filter(|s| self.version(s) >= self.floor)
                .cloned()
                .collect();
            if blang::Range::parse(&ce.skip_range).is_ok_and(|r| r.matches(&self.floor)) {
                kept.skip_range = ce.skip_range.clone();
            }
            let had_edges =
                !ce.replaces.is_empty() || !ce.skips.is_empty() || !ce.skip_range.is_empty();
            let has_edges =
                !kept.replaces.is_empty() || !kept.skips.is_empty() || !kept.skip_range.is_empty();
            if has_edges || (!had_edges && self.version(&ce.name) >= self.floor) {
                out.push(kept);
            }
        }
        (!out.is_empty()).then_some(out)
    }
}

#[derive(Default)]
struct Deprecations {
    packages: HashSet<String>,
    channels: HashSet<String>,
    bundles: HashSet<String>,
}

impl Deprecations {
    fn of(catalog: &Catalog) -> Self {
        let mut d = Deprecations::default();
        for dep in catalog.deprecations() {
            for e in &dep.entries {
                match e.reference.schema.as_str() {
                    "olm.package" => d.packages.insert(dep.package.to_string()),
                    "olm.channel" => d.channels.insert(e.reference.name.clone()),
                    "olm.bundle" => d.bundles.insert(e.reference.name.clone()),
                    _ => false,
                };
            }
        }
        d
    }
}

impl Drawing {
    /// Decides what the graph of `catalog` shows.
    pub fn new(catalog: &Catalog, opts: &GraphOptions) -> Result<Drawing, GraphError> {
        let versions = bundle_versions(catalog)?;
        let floor = match &opts.minimum_edge {
            Some(min) => versions
                .get(min.as_str())
                .cloned()
                .ok_or_else(|| GraphError::UnknownMinimumEdge(min.clone()))?,
            None => zero(),
        };
        let floor_package = opts.minimum_edge.as_ref().and_then(|min| {
            catalog
                .channels()
                .find(|c| c.entries().iter().any(|e| e.name == *min))
                .map(|c| c.package.clone())
        });
        let filter = Filter {
            opts,
            versions,
            floor,
            floor_package,
        };
        let deprecations = Deprecations::of(catalog);

        let mut channels: Vec<&Channel> = catalog.channels().collect();
        channels.sort_by(|a, b| a.name.as_str().cmp(b.name.as_str()));

        let mut packages: BTreeMap<String, PackageDrawing> = BTreeMap::new();
        let mut warnings = Vec::new();
        let mut next_id = 0usize;
        let mut range_budget = opts.max_skip_range_edges;
        for c in channels {
            let Some(entries) = filter.channel(c) else {
                continue;
            };
            let drawn = draw_channel(
                c,
                &entries,
                &filter,
                &deprecations,
                &mut next_id,
                &mut range_budget,
                &mut warnings,
            );
            packages
                .entry(c.package.to_string())
                .or_insert_with(|| PackageDrawing {
                    name: c.package.to_string(),
                    deprecated: deprecations.packages.contains(c.package.as_str()),
                    channels: Vec::new(),
                })
                .channels
                .push(drawn);
        }
        Ok(Drawing {
            packages: packages.into_values().collect(),
            warnings,
        })
    }

    /// Every drawn edge, in id order.
    pub fn edges(&self) -> impl Iterator<Item = &Edge> {
        self.packages
            .iter()
            .flat_map(|p| &p.channels)
            .flat_map(|c| &c.nodes)
            .flat_map(|n| &n.edges)
    }
}

fn draw_channel(
    c: &Channel,
    entries: &[ChannelEntry],
    filter: &Filter<'_>,
    deprecations: &Deprecations,
    next_id: &mut usize,
    range_budget: &mut Option<usize>,
    warnings: &mut Vec<String>,
) -> ChannelDrawing {
    let mut ranges_left_out = 0usize;
    let mut sorted: Vec<&ChannelEntry> = entries.iter().collect();
    sorted.sort_by_key(|e| std::cmp::Reverse(filter.version(&e.name)));

    // Bundles a higher entry skips over. An edge out of one of them is a path OLM v0 never takes.
    let mut skipped: HashSet<String> = HashSet::new();
    let v0 = filter.opts.v0_semantics;
    let mut nodes = Vec::with_capacity(sorted.len());
    for ce in sorted {
        let class = match (
            deprecations.bundles.contains(ce.name.as_str()),
            skipped.contains(ce.name.as_str()),
        ) {
            (true, true) => Some(NodeClass::DeprecatedSkipped),
            (true, false) => Some(NodeClass::Deprecated),
            (false, true) => Some(NodeClass::Skipped),
            (false, false) => None,
        };
        let mut edges = Vec::new();
        let mut push = |from: &str, kind: EdgeKind, flagged: bool| {
            edges.push(Edge {
                from: from.to_owned(),
                to: ce.name.to_string(),
                kind,
                id: *next_id,
                flagged,
            });
            *next_id += 1;
        };
        for s in &ce.skips {
            // A bundle skipped twice: the second skip edge leaves an already-skipped bundle.
            let flagged = v0 && !skipped.insert(s.clone());
            push(s, EdgeKind::Skip, flagged);
        }
        // Edges into an entry that a higher entry skips are never followed by OLM v0.
        let into_skipped = v0 && skipped.contains(ce.name.as_str());
        if !ce.skip_range.is_empty() {
            match blang::Range::parse(&ce.skip_range) {
                Ok(_) if *range_budget == Some(0) => ranges_left_out += 1,
                Ok(range) => {
                    for other in entries {
                        if range.matches(&filter.version(&other.name)) {
                            if let Some(left) = range_budget.as_mut() {
                                if *left == 0 {
                                    ranges_left_out += 1;
                                    break;
                                }
                                *left -= 1;
                            }
                            push(
                                &other.name,
                                EdgeKind::SkipRange(ce.skip_range.clone()),
                                into_skipped,
                            );
                        }
                    }
                }
                Err(e) => warnings.push(format!(
                    "warning: ignoring invalid SkipRange for package/edge {}/{}: {e}",
                    quote(&c.package),
                    quote(&ce.name)
                )),
            }
        }
        if !ce.replaces.is_empty() {
            push(&ce.replaces, EdgeKind::Replace, into_skipped);
        }
        nodes.push(Node {
            name: ce.name.to_string(),
            class,
            edges,
            stream: filter
                .versions
                .get(ce.name.as_str())
                .map(|v| (v.major, v.minor)),
        });
    }
    if ranges_left_out > 0 {
        warnings.push(format!(
            "the skipRange edges of {ranges_left_out} entries of channel {} of package {} are not drawn: more than {} in all",
            quote(&c.name),
            quote(&c.package),
            filter.opts.max_skip_range_edges.unwrap_or_default()
        ));
    }
    ChannelDrawing {
        name: c.name.to_string(),
        deprecated: deprecations.channels.contains(c.name.as_str()),
        nodes,
    }
}
