//! What the pages show, read once per catalog content: packages with their metadata (from the
//! head bundle's `olm.csv.metadata`, or its CSV among `olm.bundle.object` properties), channels
//! with their heads, bundles in decreasing version, deprecations, and a lower-case text per
//! package for search.

use std::collections::BTreeMap;
use std::sync::Arc;

use olm_catalog::Catalog;
use olm_catalog::property::TypedProperty;
use olm_resolve::{CatalogInput, Content, ContentIndex};
use olm_version::VersionRelease;

/// Where a catalog comes from and how it is served.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CatalogMeta {
    /// The ClusterCatalog's name (or the local catalog's).
    pub name: String,
    /// `spec.priority`, when known.
    pub priority: Option<i32>,
    /// The image (or path) the content came from.
    pub image: String,
    /// The content's digest, when it came from an image.
    pub digest: String,
    /// When it was last unpacked (RFC 3339), when known.
    pub last_unpacked: String,
    /// How it is served (`Serving`, `Local`).
    pub state: String,
    /// Its labels, which extensions' catalog selectors match.
    pub labels: BTreeMap<String, String>,
    /// `spec.availabilityMode`.
    pub availability: olm_resolve::Availability,
}

/// One catalog, indexed for the pages.
#[derive(Debug)]
pub struct CatalogView {
    /// Its metadata.
    pub meta: CatalogMeta,
    /// Its packages by name (shared by views of the same content).
    pub packages: Arc<Vec<PackageView>>,
    /// The resolver's index of the same content, for "what would I get".
    pub index: Arc<ContentIndex>,
}

/// A package as the pages show it.
#[derive(Debug, Clone, Default)]
pub struct PackageView {
    /// Its name.
    pub name: String,
    /// Display name (the head bundle's), else empty.
    pub display_name: String,
    /// Short description (the head bundle's `description` annotation).
    pub summary: String,
    /// Long description, Markdown (the package's, else the head bundle's).
    pub description: String,
    /// The icon: media type and base64 data.
    pub icon: Option<(String, String)>,
    /// Provider name.
    pub provider: String,
    /// Keywords.
    pub keywords: Vec<String>,
    /// Categories (the `categories` annotation, split at commas).
    pub categories: Vec<String>,
    /// Capability level.
    pub capabilities: String,
    /// Links: name and URL.
    pub links: Vec<(String, String)>,
    /// Maintainers: name and e-mail.
    pub maintainers: Vec<(String, String)>,
    /// The default channel.
    pub default_channel: String,
    /// Channels by name.
    pub channels: Vec<ChannelView>,
    /// The package's deprecation message.
    pub deprecated: Option<String>,
    /// Deprecated channels' messages.
    pub channel_deprecations: BTreeMap<String, String>,
    /// Deprecated bundles' messages.
    pub bundle_deprecations: BTreeMap<String, String>,
    /// Bundles in decreasing version.
    pub bundles: Vec<BundleView>,
    /// Lower-case text searched by the search page.
    pub haystack: String,
    /// The package's blobs, for its graph.
    pub content: Catalog,
}

/// A channel: its head and its entries in decreasing version.
#[derive(Debug, Clone, Default)]
pub struct ChannelView {
    /// Its name.
    pub name: String,
    /// The head (the entry nothing replaces or skips), when there is exactly one.
    pub head: Option<String>,
    /// Entry names, in decreasing version.
    pub entries: Vec<String>,
}

/// A bundle as its page shows it.
#[derive(Debug, Clone, Default)]
pub struct BundleView {
    /// Its name.
    pub name: String,
    /// Its version (with release, as written).
    pub version: String,
    /// The release, when given.
    pub release: String,
    /// The bundle image.
    pub image: String,
    /// Related images: name and image.
    pub related_images: Vec<(String, String)>,
    /// Provided APIs (`group/version, Kind=K`).
    pub provided: Vec<String>,
    /// Required APIs and packages.
    pub required: Vec<String>,
    /// Install modes and whether each is supported.
    pub install_modes: Vec<(String, bool)>,
    /// Properties: type and JSON value.
    pub properties: Vec<(String, String)>,
    /// The CSV's annotations.
    pub annotations: BTreeMap<String, String>,
    /// `minKubeVersion`.
    pub min_kube_version: String,
    /// The channels it is in.
    pub channels: Vec<String>,
    parsed: Option<VersionRelease>,
}

impl BundleView {
    /// Its parsed version, for ordering and resolution.
    pub fn parsed_version(&self) -> Option<&VersionRelease> {
        self.parsed.as_ref()
    }
}

impl CatalogView {
    /// Indexes `catalog` for the pages.
    pub fn new(meta: CatalogMeta, catalog: Catalog) -> CatalogView {
        let index = ContentIndex::new(&catalog);
        let mut packages: BTreeMap<String, PackageView> = BTreeMap::new();
        for p in catalog.packages() {
            let view = packages.entry(p.name.as_str().to_owned()).or_default();
            view.name = p.name.as_str().to_owned();
            view.default_channel = p.default_channel.as_str().to_owned();
            view.description = p.description.clone();
            // Only base64 text can be an icon's data URL.
            view.icon = p
                .icon
                .as_ref()
                .filter(|i| {
                    !i.base64data.is_empty()
                        && i.base64data
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
                })
                .map(|i| (i.mediatype.clone(), i.base64data.clone()));
        }
        for b in catalog.bundles() {
            if let Some(view) = packages.get_mut(b.package.as_str()) {
                view.bundles.push(bundle_view(b));
            }
        }
        for c in catalog.channels() {
            let Some(view) = packages.get_mut(c.package.as_str()) else {
                continue;
            };
            let mut entries: Vec<String> = c
                .entries()
                .iter()
                .map(|e| e.name.as_str().to_owned())
                .collect();
            let replaced: std::collections::HashSet<&str> = c
                .entries()
                .iter()
                .flat_map(|e| {
                    std::iter::once(e.replaces.as_str()).chain(e.skips.iter().map(String::as_str))
                })
                .collect();
            let heads: Vec<&String> = entries
                .iter()
                .filter(|e| !replaced.contains(e.as_str()))
                .collect();
            let head = (heads.len() == 1).then(|| heads[0].clone());
            for b in view
                .bundles
                .iter_mut()
                .filter(|b| entries.contains(&b.name))
            {
                b.channels.push(c.name.as_str().to_owned());
            }
            let order: BTreeMap<&str, Option<&VersionRelease>> = view
                .bundles
                .iter()
                .map(|b| (b.name.as_str(), b.parsed.as_ref()))
                .collect();
            entries.sort_by(|a, b| {
                let va = order.get(a.as_str()).copied().flatten();
                let vb = order.get(b.as_str()).copied().flatten();
                vb.cmp(&va).then_with(|| a.cmp(b))
            });
            view.channels.push(ChannelView {
                name: c.name.as_str().to_owned(),
                head,
                entries,
            });
        }
        for d in catalog.deprecations() {
            let Some(view) = packages.get_mut(d.package.as_str()) else {
                continue;
            };
            for e in &d.entries {
                match e.reference.schema.as_str() {
                    "olm.package" => view.deprecated = Some(e.message.clone()),
                    "olm.channel" => {
                        view.channel_deprecations
                            .insert(e.reference.name.clone(), e.message.clone());
                    }
                    "olm.bundle" => {
                        view.bundle_deprecations
                            .insert(e.reference.name.clone(), e.message.clone());
                    }
                    _ => {}
                }
            }
        }
        // Each package keeps its own blobs, so a graph is drawn from one package's content.
        let mut parts: BTreeMap<String, Catalog> = BTreeMap::new();
        for blob in catalog.blobs {
            parts
                .entry(blob.package().to_owned())
                .or_default()
                .blobs
                .push(blob);
        }
        let packages = packages
            .into_values()
            .map(|mut p| {
                p.bundles
                    .sort_by(|a, b| b.parsed.cmp(&a.parsed).then_with(|| a.name.cmp(&b.name)));
                // stable-3.6 before stable-3.10, as people count.
                p.channels
                    .sort_by(|a, b| olm_catalog::order::natural(&a.name, &b.name));
                p.content = parts.remove(&p.name).unwrap_or_default();
                describe_from_head(&mut p);
                p
            })
            .collect();
        CatalogView {
            meta,
            packages: Arc::new(packages),
            index: Arc::new(index),
        }
    }

    /// The same content under other metadata (a catalog's priority or labels changed), without
    /// indexing it again.
    pub fn with_meta(&self, meta: CatalogMeta) -> CatalogView {
        CatalogView {
            meta,
            packages: self.packages.clone(),
            index: self.index.clone(),
        }
    }

    /// This catalog as the resolver sees it: its priority, labels and availability with its
    /// content, as the ClusterExtension controller passes it.
    pub fn input(&self) -> CatalogInput<'_> {
        CatalogInput {
            name: self.meta.name.clone(),
            labels: self.meta.labels.clone(),
            priority: self.meta.priority.unwrap_or(0),
            availability: self.meta.availability,
            content: Content::Served(&self.index),
        }
    }

    /// The package named `name`.
    pub fn package(&self, name: &str) -> Option<&PackageView> {
        self.packages
            .binary_search_by(|p| p.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.packages[i])
    }

    /// How many bundles it holds.
    pub fn bundle_count(&self) -> usize {
        self.packages.iter().map(|p| p.bundles.len()).sum()
    }
}

impl PackageView {
    /// The bundle named `name`.
    pub fn bundle(&self, name: &str) -> Option<&BundleView> {
        self.bundles.iter().find(|b| b.name == name)
    }

    /// The bundle the default channel leads to, else the newest.
    pub fn head(&self) -> Option<&BundleView> {
        self.channels
            .iter()
            .find(|c| c.name == self.default_channel)
            .and_then(|c| c.head.as_deref().or(c.entries.first().map(String::as_str)))
            .and_then(|h| self.bundle(h))
            .or(self.bundles.first())
    }
}

fn bundle_view(b: &olm_catalog::model::Bundle) -> BundleView {
    let mut view = BundleView {
        name: b.name.as_str().to_owned(),
        image: b.image.clone(),
        related_images: b
            .related_images
            .iter()
            .map(|r| (r.name.clone(), r.image.clone()))
            .collect(),
        ..BundleView::default()
    };
    for p in &b.properties {
        view.properties
            .push((p.type_.clone(), p.value.get().to_owned()));
        match p.parse() {
            Ok(TypedProperty::Package(pkg)) => {
                view.version = pkg.version.clone();
                view.release = pkg.release.clone();
                view.parsed = if pkg.release.is_empty() {
                    VersionRelease::parse_legacy(&pkg.version).ok()
                } else {
                    VersionRelease::parse_explicit(&pkg.version, &pkg.release).ok()
                };
            }
            Ok(TypedProperty::Gvk(g)) => view.provided.push(gvk(&g)),
            Ok(TypedProperty::GvkRequired(g)) => view.required.push(gvk(&g)),
            Ok(TypedProperty::PackageRequired(r)) => view
                .required
                .push(format!("package {} {}", r.package_name, r.version_range)),
            _ => {}
        }
    }
    if let Some(m) = b.csv_metadata_or_object() {
        for mode in m["installModes"].as_array().into_iter().flatten() {
            if let Some(t) = mode["type"].as_str() {
                view.install_modes
                    .push((t.to_owned(), mode["supported"].as_bool().unwrap_or(false)));
            }
        }
        if let Some(a) = m["annotations"].as_object() {
            view.annotations = a
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                    )
                })
                .collect();
        }
        view.min_kube_version = m["minKubeVersion"].as_str().unwrap_or_default().to_owned();
    }
    view
}

fn gvk(g: &olm_catalog::property::Gvk) -> String {
    if g.group.is_empty() {
        format!("{}, Kind={}", g.version, g.kind)
    } else {
        format!("{}/{}, Kind={}", g.group, g.version, g.kind)
    }
}

/// Display name, provider, keywords, categories, capabilities, links, maintainers and (when the
/// package has none) the description, from the head bundle ([`olm_catalog::card::Card`], which
/// `olm search` reads too); then the search text.
fn describe_from_head(p: &mut PackageView) {
    let head = p.head().map(|b| b.name.clone());
    let card = head
        .and_then(|h| p.content.bundles().find(|b| b.name.as_str() == h))
        .map(olm_catalog::card::Card::of)
        .unwrap_or_default();
    p.haystack = card.haystack(&p.name);
    p.display_name = card.display_name;
    p.provider = card.provider;
    p.keywords = card.keywords;
    p.categories = card.categories;
    p.capabilities = card.capabilities;
    p.summary = card.summary;
    p.links = card.links;
    p.maintainers = card.maintainers;
    if p.description.is_empty() {
        p.description = card.description;
    }
}
