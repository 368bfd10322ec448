//! Validation with operator-registry's messages, in its three layers:
//!
//! 1. load errors (see [`crate::load`]);
//! 2. fail-fast structural checks while joining blobs into packages, channels and bundles (the first
//!    failure is returned as [`ValidationError::Structure`], checks run in blob order);
//! 3. the aggregated model validation, rendered as upstream's `invalid index:` tree
//!    ([`ValidationError::Tree`]).
//!
//! # Differences from upstream
//! * Sibling order in the tree is stable: packages, channels and bundles in name order (upstream
//!   iterates Go maps, so its order changes between runs).
//! * Channel entries without an `olm.bundle` are reported for **every** channel of a package; upstream
//!   only remembers the entries of the last channel it processed per package, so a dangling entry in
//!   another channel surfaces only indirectly. When several packages have dangling entries, the first
//!   package by name is reported.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt;

use crate::index::{BundleNode, ChannelNode, Index, PackageNode};
use crate::model::*;
use crate::property::{TYPE_PACKAGE, TypedProperty};
use olm_goenc::quote;
use olm_version::blang;

/// Why a catalog is invalid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValidationError {
    /// A fail-fast structural error (upstream `ConvertToModel`), exact upstream text.
    #[error("{0}")]
    Structure(String),
    /// The aggregated model validation tree rooted at `invalid index`.
    #[error("{0}")]
    Tree(Node),
}

/// A node of the validation tree: a message and its children (leaves have none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The message at this level.
    pub message: String,
    /// The finer-grained messages under it.
    pub children: Vec<Node>,
}

impl Node {
    /// A node without children.
    pub fn leaf(message: impl Into<String>) -> Self {
        Node {
            message: message.into(),
            children: Vec::new(),
        }
    }
    fn branch(message: impl Into<String>) -> Self {
        Self::leaf(message)
    }
    fn push(&mut self, n: Node) {
        self.children.push(n);
    }
    fn push_if(&mut self, n: Node) {
        if !n.children.is_empty() {
            self.children.push(n);
        }
    }

    fn render(&self, prefix: &str, last: bool, out: &mut Vec<String>) {
        let mut line = format!("{prefix}{}", self.message);
        if !self.children.is_empty() {
            line.push(':');
        }
        out.push(line);
        // The connector of this node becomes a continuation bar (or blank) for its children.
        let base: String = if prefix.is_empty() {
            String::new()
        } else {
            let keep: String = prefix.chars().take(prefix.chars().count() - 4).collect();
            format!("{keep}{}", if last { "    " } else { "│   " })
        };
        let n = self.children.len();
        for (i, c) in self.children.iter().enumerate() {
            let is_last = i + 1 == n;
            let p = format!("{base}{}", if is_last { "└── " } else { "├── " });
            c.render(&p, is_last, out);
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut lines = Vec::new();
        self.render("", true, &mut lines);
        f.write_str(lines.join("\n").trim())
    }
}

/// Validates a catalog: structural checks, then the model tree.
pub fn validate(cat: &Catalog) -> Result<(), ValidationError> {
    build_index(cat).map(|_| ())
}

/// Joins the blobs of a catalog into an [`Index`] and validates it.
pub fn build_index(cat: &Catalog) -> Result<Index<'_>, ValidationError> {
    let idx = convert(cat).map_err(ValidationError::Structure)?;
    let tree = check_model(&idx);
    if tree.children.is_empty() {
        Ok(idx)
    } else {
        Err(ValidationError::Tree(tree))
    }
}

/// [`build_index`] for a catalog read from a ConfigMap CatalogSource: upstream loads those into
/// its SQLite registry, which keys bundles by CSV name and never had two of file-based catalogs'
/// rules: that versions are unique in a package (two CSVs of one version in different channels
/// serve there), and that a package's name is a DNS-1123 label (`PackageDependent` serves
/// there; OLM v0's own e2e suite names packages so). Every other rule holds.
pub fn build_index_for_config_map(cat: &Catalog) -> Result<Index<'_>, ValidationError> {
    let idx = convert_names(cat, false).map_err(ValidationError::Structure)?;
    let tree = check_model_rules(&idx, false);
    if tree.children.is_empty() {
        Ok(idx)
    } else {
        Err(ValidationError::Tree(tree))
    }
}

/// Like [`build_index`] but without the model tree (upstream's conversion only).
pub fn convert(cat: &Catalog) -> Result<Index<'_>, String> {
    convert_names(cat, true)
}

/// [`convert`], with package names held to DNS-1123 labels (`dns_names`) as upstream's
/// `declcfg.ConvertToModel` holds them, or not, as its SQLite loader does not.
fn convert_names(cat: &Catalog, dns_names: bool) -> Result<Index<'_>, String> {
    let mut idx = Index::default();
    for p in cat.packages() {
        if p.name.is_empty() {
            return Err("config contains package with no name".to_owned());
        }
        if idx.packages.contains_key(p.name.as_str()) {
            return Err(format!("duplicate package {}", quote(&p.name)));
        }
        let errs = if dns_names {
            olm_k8s::dns1123_label_errors(&p.name)
        } else {
            Vec::new()
        };
        if !errs.is_empty() {
            let errs: Vec<String> = errs.iter().map(ToString::to_string).collect();
            return Err(format!(
                "invalid package name {}: {}",
                quote(&p.name),
                olm_goenc::slice(&errs)
            ));
        }
        idx.packages.insert(
            &p.name,
            PackageNode {
                name: &p.name,
                package: p,
                default_channel: None,
                channels: BTreeMap::new(),
                bundles: BTreeMap::new(),
                deprecation: None,
            },
        );
    }
    let mut defined_entries: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for c in cat.channels() {
        let Some(pkg) = idx.packages.get_mut(c.package.as_str()) else {
            return Err(format!(
                "unknown package {} for channel {}",
                quote(&c.package),
                quote(&c.name)
            ));
        };
        if c.name.is_empty() {
            return Err(format!(
                "package {} contains channel with no name",
                quote(&c.package)
            ));
        }
        if pkg.channels.contains_key(c.name.as_str()) {
            return Err(format!(
                "package {} has duplicate channel {}",
                quote(&c.package),
                quote(&c.name)
            ));
        }
        let mut entries = BTreeMap::new();
        for e in c.entries() {
            if entries.insert(e.name.as_str(), e).is_some() {
                return Err(format!(
                    "invalid package {}, channel {}: duplicate entry {}",
                    quote(&c.package),
                    quote(&c.name),
                    quote(&e.name)
                ));
            }
        }
        defined_entries
            .entry(&c.package)
            .or_default()
            .extend(entries.keys().copied());
        if pkg.package.default_channel.as_str() == c.name.as_str() {
            pkg.default_channel = Some(&c.name);
        }
        pkg.channels.insert(
            &c.name,
            ChannelNode {
                name: &c.name,
                channel: Some(c),
                entries,
                deprecation: None,
            },
        );
    }
    for pkg in idx.packages.values_mut() {
        let dc = pkg.package.default_channel.as_str();
        if !dc.is_empty() && pkg.default_channel.is_none() {
            pkg.default_channel = Some(dc);
            pkg.channels.insert(
                dc,
                ChannelNode {
                    name: dc,
                    channel: None,
                    entries: BTreeMap::new(),
                    deprecation: None,
                },
            );
        }
    }
    // Property decoding is the costly part and independent per bundle: do it in parallel up front,
    // then report in blob order as upstream does.
    let bundles: Vec<&Bundle> = cat.bundles().collect();
    let decoded: Vec<Result<Vec<crate::property::PackageProperty>, String>> = {
        use rayon::prelude::*;
        bundles.par_iter().map(|b| decode_properties(b)).collect()
    };
    for (b, decoded) in bundles.into_iter().zip(decoded) {
        if b.package.is_empty() {
            return Err(format!(
                "package name must be set for bundle {}",
                quote(&b.name)
            ));
        }
        let Some(pkg) = idx.packages.get_mut(b.package.as_str()) else {
            return Err(format!(
                "unknown package {} for bundle {}",
                quote(&b.package),
                quote(&b.name)
            ));
        };
        if pkg.bundles.contains_key(b.name.as_str()) {
            return Err(format!(
                "package {} has duplicate bundle {}",
                quote(&b.package),
                quote(&b.name)
            ));
        }
        let mut packages = decoded?;
        if packages.len() != 1 {
            return Err(format!(
                "package {} bundle {} must have exactly 1 {} property, found {}",
                quote(&b.package),
                quote(&b.name),
                quote(TYPE_PACKAGE),
                packages.len()
            ));
        }
        let pp = packages.remove(0);
        if pp.package_name != b.package.as_str() {
            return Err(format!(
                "package {} does not match {} property {}",
                quote(&b.package),
                quote(TYPE_PACKAGE),
                quote(&pp.package_name)
            ));
        }
        if !b.image.is_empty()
            && let Err(e) = check_image_ref(&b.image)
        {
            return Err(format!(
                "package {} bundle {} image: invalid image pull spec {}: {e}",
                quote(&b.package),
                quote(&b.name),
                quote(&b.image)
            ));
        }
        for (i, ri) in b.related_images.iter().enumerate() {
            if !ri.image.is_empty()
                && let Err(e) = check_image_ref(&ri.image)
            {
                return Err(format!(
                    "package {} bundle {} relatedImages[{i}].image: invalid image pull spec {}: {e}",
                    quote(&b.package),
                    quote(&b.name),
                    quote(&ri.image)
                ));
            }
        }
        let version = blang::Version::parse(&pp.version).map_err(|e| {
            format!(
                "error parsing bundle {} version {}: {e}",
                quote(&b.name),
                quote(&pp.version)
            )
        })?;
        if !pp.release.is_empty() {
            check_release(&pp.release).map_err(|e| {
                format!(
                    "error parsing bundle {} release version {}: {e}",
                    quote(&b.name),
                    quote(&pp.release)
                )
            })?;
        }
        if let Some(set) = defined_entries.get_mut(b.package.as_str()) {
            set.remove(b.name.as_str());
        }
        if !pkg
            .channels
            .values()
            .any(|c| c.entries.contains_key(b.name.as_str()))
        {
            return Err(format!(
                "package {}, bundle {} not found in any channel entries",
                quote(&b.package),
                quote(&b.name)
            ));
        }
        pkg.bundles.insert(
            &b.name,
            BundleNode {
                bundle: b,
                package_property: pp,
                version,
                deprecation: None,
            },
        );
    }
    let mut dangling: Vec<(&str, &BTreeSet<&str>)> = defined_entries
        .iter()
        .filter(|(_, s)| !s.is_empty())
        .map(|(p, s)| (*p, s))
        .collect();
    dangling.sort();
    if let Some((pkg, entries)) = dangling.first() {
        return Err(format!(
            "no olm.bundle blobs found in package {} for olm.channel entries {}",
            quote(pkg),
            olm_goenc::slice(*entries)
        ));
    }
    let mut seen_deprecations: HashSet<&str> = HashSet::new();
    for d in cat.deprecations() {
        if d.package.is_empty() {
            return Err(format!(
                "package name must be set for deprecation item {}",
                d.go_v()
            ));
        }
        let Some(pkg) = idx.packages.get_mut(d.package.as_str()) else {
            return Err(format!(
                "cannot apply deprecations to an unknown package {}",
                quote(&d.package)
            ));
        };
        if !seen_deprecations.insert(&d.package) {
            return Err(format!(
                "expected a maximum of one deprecation per package: {}",
                quote(&d.package)
            ));
        }
        let mut refs: HashSet<&PackageScopedReference> = HashSet::new();
        for (i, e) in d.entries.iter().enumerate() {
            let r = &e.reference;
            if r.schema.is_empty() {
                return Err(format!(
                    "schema must be set for deprecation entry [{i}] for package {}",
                    quote(&d.package)
                ));
            }
            if !refs.insert(r) {
                return Err(format!(
                    "duplicate deprecation entry {} for package {}",
                    r.go_sharp_v(),
                    quote(&d.package)
                ));
            }
            match r.schema.as_str() {
                SCHEMA_BUNDLE => match pkg.bundles.get_mut(r.name.as_str()) {
                    Some(bn) => bn.deprecation = Some(&e.message),
                    None => {
                        return Err(format!(
                            "cannot deprecate bundle {} for package {}: bundle not found",
                            quote(&r.name),
                            quote(&d.package)
                        ));
                    }
                },
                SCHEMA_CHANNEL => match pkg.channels.get_mut(r.name.as_str()) {
                    Some(c) => c.deprecation = Some(&e.message),
                    None => {
                        return Err(format!(
                            "cannot deprecate channel {} for package {}: channel not found",
                            quote(&r.name),
                            quote(&d.package)
                        ));
                    }
                },
                SCHEMA_PACKAGE => {
                    if !r.name.is_empty() {
                        return Err(format!(
                            "package name must be empty for deprecated package {} (specified {})",
                            quote(&d.package),
                            quote(&r.name)
                        ));
                    }
                    pkg.deprecation = Some(&e.message);
                }
                _ => {
                    return Err(format!(
                        // opm's `%v` here is of the entry's index, not of the entry.
                        "cannot deprecate object {} referenced by entry {i} for package {}: object schema unknown",
                        r.go_sharp_v(),
                        quote(&d.package)
                    ));
                }
            }
        }
    }
    Ok(idx)
}

/// The `olm.package` properties of a bundle, or upstream's property parse error.
fn decode_properties(b: &Bundle) -> Result<Vec<crate::property::PackageProperty>, String> {
    let mut packages = Vec::new();
    for (i, p) in b.properties.iter().enumerate() {
        match p.parse() {
            Ok(TypedProperty::Package(pp)) => packages.push(pp),
            Ok(_) => {}
            Err(e) => {
                return Err(format!(
                    "parse properties for bundle {}: parse property[{i}] of type {}: {e}",
                    quote(&b.name),
                    quote(&p.type_)
                ));
            }
        }
    }
    Ok(packages)
}

/// Upstream `Model.Validate`, with children in name order.
pub fn check_model(idx: &Index<'_>) -> Node {
    check_model_rules(idx, true)
}

/// The model tree, with the unique-versions rule only when `unique_versions`.
fn check_model_rules(idx: &Index<'_>, unique_versions: bool) -> Node {
    let mut root = Node::branch("invalid index");
    for pkg in idx.packages.values() {
        root.push_if(check_package(pkg, unique_versions));
    }
    root
}

fn check_package(pkg: &PackageNode<'_>, unique_versions: bool) -> Node {
    let mut n = Node::branch(format!("invalid package {}", quote(pkg.name)));
    if pkg.name.is_empty() {
        n.push(Node::leaf("package name must not be empty"));
    }
    if pkg.default_channel.is_none() {
        n.push(Node::leaf("default channel must be set"));
    }
    if pkg.channels.is_empty() {
        n.push(Node::leaf("package must contain at least one channel"));
    }
    for ch in pkg.channels.values() {
        n.push_if(check_channel(pkg, ch));
    }
    if let Some(msg) = duplicate_versions(pkg).filter(|_| unique_versions) {
        n.push(Node::leaf(msg));
    }
    if let Some(d) = pkg.deprecation
        && d.is_empty()
    {
        n.push(Node::leaf("invalid deprecation: message must be set"));
    }
    n
}

fn duplicate_versions(pkg: &PackageNode<'_>) -> Option<String> {
    let mut by_version: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for (name, b) in &pkg.bundles {
        by_version
            .entry(b.version_release())
            .or_default()
            .push(name);
    }
    let dups: Vec<String> = by_version
        .into_iter()
        .filter(|(_, names)| names.len() > 1)
        .map(|(v, mut names)| {
            names.sort();
            format!("{{{v}: [{}]}}", names.join(", "))
        })
        .collect();
    (!dups.is_empty()).then(|| {
        format!(
            "duplicate versions found in bundles: {}",
            olm_goenc::slice(&dups)
        )
    })
}

fn check_channel(pkg: &PackageNode<'_>, ch: &ChannelNode<'_>) -> Node {
    let mut n = Node::branch(format!("invalid channel {}", quote(ch.name)));
    if ch.name.is_empty() {
        n.push(Node::leaf("channel name must not be empty"));
    }
    if ch.entries.is_empty() {
        n.push(Node::leaf("channel must contain at least one bundle"));
    } else if let Err(e) = ch.check_replaces_chain() {
        n.push(Node::leaf(e.to_string()));
    }
    for (name, entry) in &ch.entries {
        n.push_if(check_bundle(pkg, name, entry, pkg.bundles.get(name)));
    }
    if let Some(d) = ch.deprecation
        && d.is_empty()
    {
        n.push(Node::leaf("invalid deprecation: message must be set"));
    }
    n
}

fn check_bundle(
    pkg: &PackageNode<'_>,
    name: &str,
    entry: &ChannelEntry,
    b: Option<&BundleNode<'_>>,
) -> Node {
    let mut n = Node::branch(format!("invalid bundle {}", quote(name)));
    if name.is_empty() {
        n.push(Node::leaf("name must be set"));
    }
    if let Some(b) = b
        && !b.package_property.release.is_empty()
    {
        let want = format!("{}-v{}-{}", pkg.name, b.version, b.package_property.release);
        if name != want {
            n.push(Node::leaf(format!(
                "name {} does not match normalized name {}",
                quote(name),
                quote(&want)
            )));
        }
    }
    // Property parse errors and the olm.package count were already fatal during conversion.
    for (i, s) in entry.skips.iter().enumerate() {
        if s.is_empty() {
            n.push(Node::leaf(format!("skip[{i}] is empty")));
        }
    }
    if !entry.skip_range.is_empty()
        && let Err(e) = valid_skip_range(&entry.skip_range)
    {
        n.push(Node::leaf(format!(
            "invalid skipRange {}: {e}",
            quote(&entry.skip_range)
        )));
    }
    match b {
        None => {
            n.push(Node::leaf(format!(
                "must be exactly one property with type {}",
                quote(TYPE_PACKAGE)
            )));
            n.push(Node::leaf("bundle image must be set"));
        }
        Some(b) => {
            let has_objects = b
                .bundle
                .properties
                .iter()
                .any(|p| p.type_ == crate::property::TYPE_BUNDLE_OBJECT);
            if b.bundle.image.is_empty() && !has_objects {
                n.push(Node::leaf("bundle image must be set"));
            }
            if let Some(d) = b.deprecation
                && d.is_empty()
            {
                n.push(Node::leaf("invalid deprecation: message must be set"));
            }
            if !b.version.build.is_empty() && !b.package_property.release.is_empty() {
                n.push(Node::leaf(
                    "cannot use build metadata in version with a release version",
                ));
            }
        }
    }
    n
}

/// Checks a `skipRange` with blang's range grammar; the error displays blang's text.
pub fn valid_skip_range(s: &str) -> Result<(), blang::RangeError> {
    blang::Range::parse(s).map(drop)
}

fn check_release(r: &str) -> Result<(), String> {
    for (i, seg) in r.split('.').enumerate() {
        blang::Identifier::parse(seg)
            .map(drop)
            .map_err(|e| format!("invalid release {}: segment {i}: {e}", quote(r)))?;
    }
    Ok(())
}

/// Why an image pull spec is not one, in the words of docker's `reference.ParseNormalizedNamed`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageRefError {
    /// A bare 64-character hexadecimal name (an image ID, not a reference).
    #[error("invalid repository name ({0}), cannot specify 64-byte hexadecimal strings")]
    HexName(String),
    /// Nothing at all.
    #[error("repository name must have at least one component")]
    NoComponent,
    /// A path component with capitals.
    #[error("repository name must be lowercase")]
    Uppercase,
    /// A name longer than 255 characters.
    #[error("repository name must not be more than 255 characters")]
    NameTooLong,
    /// A digest of an algorithm other than SHA-256, -384 or -512.
    #[error("unsupported digest algorithm")]
    DigestAlgorithm,
    /// A digest of the wrong length for its algorithm.
    #[error("invalid checksum digest length")]
    DigestLength,
    /// A digest with capitals.
    #[error("invalid checksum digest format")]
    DigestFormat,
    /// Anything else the grammar refuses.
    #[error("invalid reference format")]
    Invalid,
}

/// Checks an image pull spec like docker's `reference.ParseNormalizedNamed`, with its error texts.
pub fn check_image_ref(s: &str) -> Result<(), ImageRefError> {
    if s.len() == 64
        && s.bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
    {
        return Err(ImageRefError::HexName(s.to_owned()));
    }
    let (rest, digest) = match s.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (s, None),
    };
    let (name, tag) = match rest.rfind(':') {
        Some(i) if !rest[i..].contains('/') => (&rest[..i], Some(&rest[i + 1..])),
        _ => (rest, None),
    };
    if name.is_empty() {
        return Err(if s.is_empty() {
            ImageRefError::NoComponent
        } else {
            ImageRefError::Invalid
        });
    }
    let mut comps: Vec<&str> = name.split('/').collect();
    let first = comps[0];
    if comps.len() > 1
        && (first.contains('.')
            || first.contains(':')
            || first == "localhost"
            || first.to_lowercase() != first)
    {
        let (host, port) = match first.rsplit_once(':') {
            Some((h, p)) if !h.starts_with('[') || h.ends_with(']') => (h, Some(p)),
            _ => (first, None),
        };
        let host_ok = if host.starts_with('[') {
            host.ends_with(']') && host.len() > 2
        } else {
            host.split('.').all(|c| {
                let b = c.as_bytes();
                !b.is_empty()
                    && b.iter().all(|x| x.is_ascii_alphanumeric() || *x == b'-')
                    && b[0] != b'-'
                    && b[b.len() - 1] != b'-'
            })
        };
        if !host_ok || port.is_some_and(|p| p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit()))
        {
            return Err(ImageRefError::Invalid);
        }
        comps.remove(0);
    }
    let path_ok = |c: &str| -> bool {
        // [a-z0-9]+ ((\.|_|__|-+) [a-z0-9]+)*
        let b = c.as_bytes();
        if b.is_empty() || !b[0].is_ascii_alphanumeric() || !b[b.len() - 1].is_ascii_alphanumeric()
        {
            return false;
        }
        let mut i = 0;
        while i < b.len() {
            let x = b[i];
            if x.is_ascii_lowercase() || x.is_ascii_digit() {
                i += 1;
                continue;
            }
            let start = i;
            while i < b.len() && !(b[i].is_ascii_lowercase() || b[i].is_ascii_digit()) {
                i += 1;
            }
            let sep = &c[start..i];
            if !(sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|y| y == b'-')) {
                return false;
            }
        }
        true
    };
    if !comps.iter().all(|c| path_ok(c)) {
        if comps.iter().all(|c| path_ok(&c.to_lowercase())) {
            return Err(ImageRefError::Uppercase);
        }
        return Err(ImageRefError::Invalid);
    }
    if name.len() > 255 {
        return Err(ImageRefError::NameTooLong);
    }
    if let Some(t) = tag {
        let b = t.as_bytes();
        let w = |x: u8| x.is_ascii_alphanumeric() || x == b'_';
        if b.is_empty()
            || b.len() > 128
            || !w(b[0])
            || !b.iter().all(|&x| w(x) || x == b'.' || x == b'-')
        {
            return Err(ImageRefError::Invalid);
        }
    }
    if let Some(d) = digest {
        let Some((alg, hex)) = d.split_once(':') else {
            return Err(ImageRefError::Invalid);
        };
        let alg_ok = !alg.is_empty()
            && alg.split(['-', '_', '+', '.']).all(|p| {
                let b = p.as_bytes();
                !b.is_empty()
                    && b[0].is_ascii_alphabetic()
                    && b.iter().all(|x| x.is_ascii_alphanumeric())
            });
        if !alg_ok || hex.len() < 32 || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
            return Err(ImageRefError::Invalid);
        }
        let want = match alg {
            "sha256" => 64,
            "sha384" => 96,
            "sha512" => 128,
            _ => return Err(ImageRefError::DigestAlgorithm),
        };
        if hex.len() != want {
            return Err(ImageRefError::DigestLength);
        }
        if hex.bytes().any(|c| c.is_ascii_uppercase()) {
            return Err(ImageRefError::DigestFormat);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_rendering_matches_upstream_layout() {
        let mut b = Node::branch("invalid bundle \"foo.v0.1.0+alpha.1.0.0-0.0.1\"");
        b.push(Node::leaf("name \"foo.v0.1.0+alpha.1.0.0-0.0.1\" does not match normalized name \"foo-v0.1.0+alpha.1.0.0-0.0.1\""));
        b.push(Node::leaf(
            "cannot use build metadata in version with a release version",
        ));
        let mut c = Node::branch("invalid channel \"alpha\"");
        c.push(b);
        let mut p = Node::branch("invalid package \"foo\"");
        p.push(c);
        let mut root = Node::branch("invalid index");
        root.push(p);
        assert_eq!(
            root.to_string(),
            "invalid index:\n└── invalid package \"foo\":\n    └── invalid channel \"alpha\":\n        └── invalid bundle \"foo.v0.1.0+alpha.1.0.0-0.0.1\":\n            ├── name \"foo.v0.1.0+alpha.1.0.0-0.0.1\" does not match normalized name \"foo-v0.1.0+alpha.1.0.0-0.0.1\"\n            └── cannot use build metadata in version with a release version"
        );
    }

    #[test]
    fn nested_non_last_siblings_use_bars() {
        let mut p1 = Node::branch("a");
        p1.push(Node::leaf("x"));
        let mut root = Node::branch("root");
        root.push(p1);
        root.push(Node::leaf("b"));
        assert_eq!(root.to_string(), "root:\n├── a:\n│   └── x\n└── b");
    }

    #[test]
    fn image_refs() {
        for ok in [
            "quay.io/openshift-community-operators/kube-green@sha256:21e3c746595aff170a790207f4607def2102b5410d999bc48eed4458e7fc5b2d",
            "quay.io/community-operator-pipeline-prod/foo:1.2.3",
            "busybox",
            "localhost:5000/a/b:latest",
        ] {
            assert_eq!(check_image_ref(ok), Ok(()), "{ok}");
        }
        assert_eq!(
            check_image_ref("quay.io/Foo/bar").unwrap_err().to_string(),
            "repository name must be lowercase"
        );
        assert_eq!(
            check_image_ref("quay.io/foo@md5:0123456789abcdef0123456789abcdef")
                .unwrap_err()
                .to_string(),
            "unsupported digest algorithm"
        );
        assert_eq!(
            check_image_ref("quay.io/foo@sha256:0123456789abcdef0123456789abcdef")
                .unwrap_err()
                .to_string(),
            "invalid checksum digest length"
        );
        assert_eq!(
            check_image_ref("quay.io/foo:bad tag")
                .unwrap_err()
                .to_string(),
            "invalid reference format"
        );
    }
}
