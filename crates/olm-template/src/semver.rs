//! The semver template (`olm.semver`): bundle images listed under three maturities
//! (`candidate` < `fast` < `stable`); channels, upgrade edges and the default channel follow from the
//! bundles' versions.
//!
//! ```yaml
//! schema: olm.semver
//! generateMajorChannels: true      # channels stable-v1, fast-v2, …
//! generateMinorChannels: false     # channels stable-v1.2, …  (minor is the default when neither is set)
//! defaultChannelTypePreference: "" # major | minor; "" follows what is generated
//! stable:
//!   bundles:
//!   - image: quay.io/example/operator-bundle:v1.0.0
//! ```
//!
//! # Flow
//! 1. The document is decoded strictly (unknown keys are errors, key case is ignored).
//! 2. Every distinct image is rendered once (candidate, then fast, then stable, in template order) and
//!    must yield exactly one bundle.
//! 3. Per maturity, each bundle's version comes from its `olm.package` property (strict semver); the
//!    package is that of the first bundle and every other bundle must belong to it.
//! 4. Channels are created in ascending version order per maturity; the default channel is a
//!    "high-water mark" evaluated when each channel is created, from the version of the bundle that
//!    created it: higher maturity wins, then higher version, then the preferred kind, then minor.
//! 5. Edges are added with the algorithm chosen by [`SemverEdges`].
//! 6. Since opm v1.65 the package's description and icon are copied from the ClusterServiceVersion of
//!    the last (highest) entry of the default channel ([`SemverOptions::package_metadata`]).
//!
//! # Historical edge algorithms
//! The Red Hat community catalogs were rendered by several opm releases, so the committed catalogs
//! follow different edge rules; [`SemverEdges`] selects one to reproduce them. opm v1.27–v1.36 used
//! the edge-scoped walk of v1.61+ with a last-entry rule that yields the same graphs (after a major,
//! maturity or kind change the walk state is empty), so it has no variant of its own.
//!
//! # Caveats
//! * The CSV that description and icon come from is read from an `olm.bundle.object` property holding a
//!   ClusterServiceVersion; a bundle in `olm.csv.metadata` form still gives the description, but the
//!   icon is not part of that property, so no icon is set.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use base64::Engine;
use olm_goenc::yamlread;
use olm_version::blang::Version;
use serde_json::{Map, Value};

use olm_goenc::json::{Kind as JsonKind, UnmarshalTypeError};

use crate::{BundleRenderer, TemplateError, TemplateKind, first_document};
use olm_catalog::model::{Blob, Bundle, Catalog, Channel, ChannelEntry, Icon, Package};
use olm_catalog::property::{
    BundleObject, TYPE_BUNDLE_OBJECT, TYPE_CSV_METADATA, TYPE_PACKAGE, TypedProperty,
};
use olm_goenc::quote;

pub const SCHEMA: &str = "olm.semver";

/// How upgrade edges are drawn between the entries of generated channels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SemverEdges {
    /// opm v1.61 and later (and v1.27–v1.36): one walk over all entries sorted by maturity, kind
    /// (major before minor) and version. Only the highest-Z bundle of each Y-stream gets edges: it
    /// `replaces` the previous Y-stream's top and `skips` (sorted as strings) every other lower bundle
    /// of the same maturity, kind and major version, across minor channels. No edge crosses a major
    /// version, a maturity or a channel kind.
    #[default]
    EdgeScoped,
    /// opm v1.37–v1.56 ("inchworm", channel-scoped): each channel is linked on its own. The top of
    /// each Y-stream skips the lower entries of its stream; from the second stream on it also
    /// `replaces` the previous stream's top and lists it first in `skips`. When the last two entries
    /// differ in minor version the last one replaces the one before it.
    ChannelScopedV1_37,
    /// opm v1.57–v1.60: as [`SemverEdges::ChannelScopedV1_37`], but the replaced entry is not also
    /// listed in `skips`.
    ChannelScopedV1_57,
}

/// Options for the semver template; the default is current opm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SemverOptions {
    /// Which opm release's edge algorithm to follow.
    pub edges: SemverEdges,
    /// Copy `description` and `icon` to the package from the default channel's last bundle (opm v1.65+).
    pub package_metadata: bool,
}

impl Default for SemverOptions {
    fn default() -> Self {
        SemverOptions {
            edges: SemverEdges::EdgeScoped,
            package_metadata: true,
        }
    }
}

fn err(message: impl Into<String>) -> TemplateError {
    TemplateError::render(TemplateKind::Semver, message)
}

// ---- the template document --------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Maturity {
    Candidate = 0,
    Fast = 1,
    Stable = 2,
}

impl Maturity {
    const ALL: [Maturity; 3] = [Maturity::Candidate, Maturity::Fast, Maturity::Stable];
    fn name(self) -> &'static str {
        match self {
            Maturity::Candidate => "candidate",
            Maturity::Fast => "fast",
            Maturity::Stable => "stable",
        }
    }
}

/// Channel kind; the derived order (major before minor) is upstream's stream-type priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    Major,
    Minor,
}

#[derive(Debug, Default)]
struct Template {
    schema: String,
    major: bool,
    minor: bool,
    preference: String,
    /// Images per maturity, in template order.
    images: [Vec<String>; 3],
}

const PREFIX: &str = "error unmarshaling JSON: while decoding JSON: ";

/// Picks the struct field a JSON key decodes into, as Go's `encoding/json`: an exact match, else a
/// case-insensitive one.
fn field_for<'f>(key: &str, fields: &[&'f str]) -> Option<&'f str> {
    fields
        .iter()
        .find(|f| **f == key)
        .or_else(|| fields.iter().find(|f| f.eq_ignore_ascii_case(key)))
        .copied()
}

fn type_error(v: &Value, go_struct: &str, path: &str, go_type: &str) -> String {
    format!(
        "{PREFIX}{}",
        UnmarshalTypeError::field(JsonKind::of(v), go_struct, path, go_type)
    )
}

fn decode_bundles(v: &Value, path: &str) -> Result<Vec<String>, String> {
    let m = match v {
        Value::Object(m) => m,
        other => {
            return Err(type_error(
                other,
                "SemverTemplateData",
                path,
                "semver.channelBundles",
            ));
        }
    };
    let mut out = Vec::new();
    for (k, v) in m {
        match field_for(k, &["bundles"]) {
            Some(_) => {}
            None => return Err(format!("{PREFIX}json: unknown field {}", quote(k))),
        }
        let list = match v {
            Value::Null => continue,
            Value::Array(a) => a,
            other => {
                return Err(type_error(
                    other,
                    "channelBundles",
                    &format!("{path}.bundles"),
                    "[]semver.bundleEntry",
                ));
            }
        };
        out.clear();
        for item in list {
            let e = match item {
                Value::Null => {
                    out.push(String::new());
                    continue;
                }
                Value::Object(e) => e,
                other => {
                    return Err(type_error(
                        other,
                        "channelBundles",
                        &format!("{path}.bundles"),
                        "semver.bundleEntry",
                    ));
                }
            };
            let mut image = String::new();
            for (k, v) in e {
                if field_for(k, &["image"]).is_none() {
                    return Err(format!("{PREFIX}json: unknown field {}", quote(k)));
                }
                match v {
                    Value::Null => {}
                    Value::String(s) => image = s.clone(),
                    other => {
                        return Err(type_error(
                            other,
                            "bundleEntry",
                            &format!("{path}.bundles.image"),
                            "string",
                        ));
                    }
                }
            }
            out.push(image);
        }
    }
    Ok(out)
}

/// Decodes the template strictly (sigs.k8s.io/yaml `UnmarshalStrict`).
fn decode(m: &Map<String, Value>) -> Result<Template, String> {
    const FIELDS: [&str; 7] = [
        "schema",
        "generateMajorChannels",
        "generateMinorChannels",
        "defaultChannelTypePreference",
        "candidate",
        "fast",
        "stable",
    ];
    let mut t = Template::default();
    for (k, v) in m {
        let Some(field) = field_for(k, &FIELDS) else {
            return Err(format!("{PREFIX}json: unknown field {}", quote(k)));
        };
        if v.is_null() {
            continue;
        }
        match field {
            "schema" | "defaultChannelTypePreference" => {
                let Value::String(s) = v else {
                    let ty = if field == "schema" {
                        "string"
                    } else {
                        "semver.StreamType"
                    };
                    return Err(type_error(v, "SemverTemplateData", field, ty));
                };
                if field == "schema" {
                    t.schema = s.clone();
                } else {
                    t.preference = s.clone();
                }
            }
            "generateMajorChannels" | "generateMinorChannels" => {
                let Value::Bool(b) = v else {
                    return Err(type_error(v, "SemverTemplateData", field, "bool"));
                };
                if field == "generateMajorChannels" {
                    t.major = *b;
                } else {
                    t.minor = *b;
                }
            }
            _ => {
                let i = match field {
                    "candidate" => 0,
                    "fast" => 1,
                    _ => 2,
                };
                t.images[i] = decode_bundles(v, field)?;
            }
        }
    }
    Ok(t)
}

/// Reads and checks the template (upstream `readFile`); the result has the preference resolved.
fn read(input: &[u8]) -> Result<(Template, Kind), String> {
    let doc = first_document(input).map_err(|e| format!("error converting YAML to JSON: {e}"))?;
    let t = match &doc {
        Value::Object(m) => decode(m)?,
        other => {
            return Err(format!(
                "{PREFIX}{}",
                UnmarshalTypeError::value(JsonKind::of(other), "semver.SemverTemplateData")
            ));
        }
    };
    if t.schema != SCHEMA {
        return Err(format!(
            "readFile: input file has unknown schema, should be {}",
            quote(SCHEMA)
        ));
    }
    let mut t = t;
    if !t.major && !t.minor {
        t.minor = true;
    }
    let pref = match t.preference.as_str() {
        "" => {
            if t.minor {
                Kind::Minor
            } else {
                Kind::Major
            }
        }
        "minor" if !t.minor => {
            return Err("schema attribute mismatch: DefaultChannelTypePreference set to 'minor' doesn't make sense if not generating minor-version channels".to_owned());
        }
        "major" if !t.major => {
            return Err("schema attribute mismatch: DefaultChannelTypePreference set to 'major' doesn't make sense if not generating major-version channels".to_owned());
        }
        "minor" => Kind::Minor,
        "major" => Kind::Major,
        other => {
            return Err(format!(
                "unknown DefaultChannelTypePreference: {}\nValid values are 'major' or 'minor'",
                quote(other)
            ));
        }
    };
    Ok((t, pref))
}

// ---- rendering --------------------------------------------------------------------------------------

/// Renders a semver template. See the module documentation for the steps and [`SemverOptions`].
///
/// Errors (upstream texts), all but the renderer's own wrapped as upstream wraps them:
/// `render: unable to read file: …` (decoding, `readFile: input file has unknown schema, should be
/// "olm.semver"`, the preference mismatches), `bundle reference %q resulted in %d bundles, expected 1`,
/// `render: no bundles specified or no bundles could be rendered`, and
/// `render: unable to post-process bundle info: …` (missing or invalid `olm.package` property, a
/// bundle of another package, duplicate bundle names, versions differing only in build metadata).
pub fn render(
    input: &[u8],
    renderer: &dyn BundleRenderer,
    options: &SemverOptions,
) -> Result<Catalog, TemplateError> {
    let (t, pref) = read(input).map_err(|e| err(format!("render: unable to read file: {e}")))?;

    // Render each distinct image once (in parallel); failures are reported in template order.
    let mut distinct: Vec<&str> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    for image in t.images.iter().flatten() {
        if seen.insert(image.as_str()) {
            distinct.push(image.as_str());
        }
    }
    let mut rendered_image: HashMap<&str, String> = HashMap::new();
    let mut bundles: Vec<Bundle> = Vec::with_capacity(distinct.len());
    for (image, result) in distinct
        .iter()
        .zip(crate::renderer::render_all(renderer, &distinct))
    {
        let mut got = result?;
        if got.len() != 1 {
            return Err(err(format!(
                "bundle reference {} resulted in {} bundles, expected 1",
                quote(image),
                got.len()
            )));
        }
        let b = got.remove(0);
        rendered_image.insert(image, b.image.clone());
        bundles.push(b);
    }
    if bundles.is_empty() {
        return Err(err(
            "render: no bundles specified or no bundles could be rendered",
        ));
    }

    let post = |e: String| err(format!("render: unable to post-process bundle info: {e}"));
    let mut package = String::new();
    let mut versions: [Vec<(String, Version)>; 3] = Default::default();
    let mut rendered = Rendered::new(&bundles);
    for m in Maturity::ALL {
        let vs = versions_of(
            &t.images[m as usize],
            &rendered_image,
            &mut rendered,
            &mut package,
        )
        .map_err(post)?;
        check_build_metadata(&vs).map_err(post)?;
        versions[m as usize] = vs;
    }

    let (channels, default_channel) = generate(&versions, t.major, t.minor, pref, options.edges);

    let mut pkg = Package {
        name: package.as_str().into(),
        default_channel: default_channel.as_str().into(),
        ..Default::default()
    };
    if options.package_metadata
        && let Some(ch) = channels.get(&default_channel)
        && let Some(last) = ch.entries.last()
        && let Some(b) = bundles.iter().find(|b| b.name == last.name)
    {
        let (description, icon) = csv_package_metadata(b);
        pkg.description = description;
        pkg.icon = icon;
    }

    let mut out = Catalog {
        blobs: Vec::with_capacity(1 + channels.len() + bundles.len()),
    };
    out.blobs.push(Blob::from(pkg));
    for (name, ch) in channels {
        out.blobs.push(Blob::from(Channel {
            name: name.into(),
            package: package.as_str().into(),
            entries: Some(ch.entries),
            ..Default::default()
        }));
    }
    out.blobs.extend(bundles.into_iter().map(Blob::from));
    Ok(out)
}

/// The bundles rendered from the template's images, indexed for the per-maturity passes.
struct Rendered<'a> {
    bundles: &'a [Bundle],
    /// Rendered image → index of the first bundle with that image (upstream's linear search result).
    by_image: HashMap<&'a str, usize>,
    /// Per bundle: its `olm.package` property and version, parsed on first use.
    parsed: Vec<Option<Result<(String, Version), String>>>,
}

impl<'a> Rendered<'a> {
    fn new(bundles: &'a [Bundle]) -> Self {
        let mut by_image = HashMap::with_capacity(bundles.len());
        for (i, b) in bundles.iter().enumerate() {
            by_image.entry(b.image.as_str()).or_insert(i);
        }
        Rendered {
            bundles,
            by_image,
            parsed: vec![None; bundles.len()],
        }
    }

    /// Package name and version of bundle `i` (every property must parse, as upstream's
    /// `property.Parse`; exactly one must be `olm.package`).
    fn package_version(&mut self, i: usize) -> Result<(String, Version), String> {
        let b = &self.bundles[i];
        self.parsed[i]
            .get_or_insert_with(|| {
                let mut pkgs = Vec::new();
                for (j, p) in b.properties.iter().enumerate() {
                    match p.parse() {
                        Ok(TypedProperty::Package(pp)) => pkgs.push(pp),
                        Ok(_) => {}
                        Err(e) => {
                            return Err(format!(
                                "parse properties for bundle {}: parse property[{j}] of type {}: {e}",
                                quote(&b.name),
                                quote(&p.type_)
                            ));
                        }
                    }
                }
                let [pp] = &pkgs[..] else {
                    return Err(format!(
                        "bundle {} has multiple {} properties, expected exactly 1",
                        quote(&b.name),
                        quote(TYPE_PACKAGE)
                    ));
                };
                let v = Version::parse(&pp.version).map_err(|e| {
                    format!(
                        "bundle {} has invalid version {}: {e}",
                        quote(&b.name),
                        quote(&pp.version)
                    )
                })?;
                Ok((pp.package_name.clone(), v))
            })
            .clone()
    }
}

/// Bundle name → version for the images of one maturity, in template order.
fn versions_of(
    images: &[String],
    rendered_image: &HashMap<&str, String>,
    rendered: &mut Rendered,
    package: &mut String,
) -> Result<Vec<(String, Version)>, String> {
    let mut out: Vec<(String, Version)> = Vec::with_capacity(images.len());
    let mut names: HashSet<&str> = HashSet::new();
    for image in images {
        let want = rendered_image
            .get(image.as_str())
            .map(String::as_str)
            .unwrap_or_default();
        let Some(&i) = rendered.by_image.get(want) else {
            return Err(format!(
                "supplied bundle image name {} not found in rendered bundle images",
                quote(image)
            ));
        };
        let (pkg, v) = rendered.package_version(i)?;
        if package.is_empty() {
            *package = pkg;
        } else if pkg != *package {
            return Err(format!(
                "bundle {} does not belong to this package: {}",
                quote(&pkg),
                quote(package)
            ));
        }
        let name = rendered.bundles[i].name.as_str();
        if !names.insert(name) {
            return Err(format!("duplicate bundle name {}", quote(name)));
        }
        out.push((name.to_owned(), v));
    }
    Ok(out)
}

/// Versions that differ only in build metadata cannot be ordered; every repeat is reported (in
/// template order), formatted as k8s `errors.NewAggregate` does.
fn check_build_metadata(versions: &[(String, Version)]) -> Result<(), String> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut errs: Vec<String> = Vec::new();
    for (_, v) in versions {
        let mut stripped = v.clone();
        stripped.build.clear();
        let stripped = stripped.to_string();
        if !seen.insert(stripped.clone()) {
            let e = format!(
                "bundle version {} cannot be compared to {}",
                quote(&v.to_string()),
                quote(&stripped)
            );
            if !errs.contains(&e) {
                errs.push(e);
            }
        }
    }
    let agg = match errs.len() {
        0 => return Ok(()),
        1 => errs.remove(0),
        _ => format!("[{}]", errs.join(", ")),
    };
    Err(format!(
        "encountered bundle versions which differ only by build metadata, which cannot be ordered: {agg}"
    ))
}

/// A generated channel: entries in ascending version order, with the versions alongside.
#[derive(Default)]
struct GenChannel {
    entries: Vec<ChannelEntry>,
    versions: Vec<Version>,
}

/// One entry of one channel, for the edge-scoped walk.
struct Tuple {
    maturity: Maturity,
    kind: Kind,
    channel: String,
    index: usize,
    version: Version,
}

/// The "most stable" channel seen so far; `kind` is `None` before any channel exists.
struct HighWater {
    maturity: Maturity,
    kind: Option<Kind>,
    version: Version,
    name: String,
}

impl HighWater {
    fn beats(&self, other: &HighWater, pref: Kind) -> bool {
        if self.maturity != other.maturity {
            return self.maturity > other.maturity;
        }
        if self.version != other.version {
            return self.version > other.version;
        }
        if self.kind != other.kind {
            if self.kind == Some(pref) {
                return true;
            }
            if other.kind == Some(pref) {
                return false;
            }
            return self.kind > other.kind;
        }
        false
    }
}

fn generate(
    versions: &[Vec<(String, Version)>; 3],
    major: bool,
    minor: bool,
    pref: Kind,
    edges: SemverEdges,
) -> (BTreeMap<String, GenChannel>, String) {
    let mut channels: BTreeMap<String, GenChannel> = BTreeMap::new();
    let mut tuples: Vec<Tuple> = Vec::new();
    // Upstream starts the mark at a channel-less 0.0.0, which a package of only 0.0.0
    // prereleases never beats: it would get no default channel. The first channel is the mark
    // instead; for every other package the result is the same.
    let mut mark: Option<HighWater> = None;
    for m in Maturity::ALL {
        let mut sorted: Vec<&(String, Version)> = versions[m as usize].iter().collect();
        sorted.sort_by(|a, b| a.1.cmp(&b.1));
        for (name, v) in sorted {
            let mut kinds: Vec<(Kind, String)> = Vec::with_capacity(2);
            if major {
                kinds.push((Kind::Major, format!("{}-v{}", m.name(), v.major)));
            }
            if minor {
                kinds.push((
                    Kind::Minor,
                    format!("{}-v{}.{}", m.name(), v.major, v.minor),
                ));
            }
            for (kind, cname) in kinds {
                let ch = channels.entry(cname.clone()).or_insert_with(|| {
                    let candidate = HighWater {
                        maturity: m,
                        kind: Some(kind),
                        version: v.clone(),
                        name: cname.clone(),
                    };
                    if mark.as_ref().is_none_or(|m| candidate.beats(m, pref)) {
                        mark = Some(candidate);
                    }
                    GenChannel::default()
                });
                ch.entries.push(ChannelEntry {
                    name: name.as_str().into(),
                    ..Default::default()
                });
                ch.versions.push(v.clone());
                tuples.push(Tuple {
                    maturity: m,
                    kind,
                    channel: cname,
                    index: ch.entries.len() - 1,
                    version: v.clone(),
                });
            }
        }
    }
    match edges {
        SemverEdges::EdgeScoped => link_edge_scoped(&mut channels, tuples),
        SemverEdges::ChannelScopedV1_37 => channels
            .values_mut()
            .for_each(|c| link_channel_scoped(c, true)),
        SemverEdges::ChannelScopedV1_57 => channels
            .values_mut()
            .for_each(|c| link_channel_scoped(c, false)),
    }
    (channels, mark.map(|m| m.name).unwrap_or_default())
}

fn link_edge_scoped(channels: &mut BTreeMap<String, GenChannel>, mut tuples: Vec<Tuple>) {
    tuples.sort_by(|a, b| {
        (a.maturity, a.kind)
            .cmp(&(b.maturity, b.kind))
            .then_with(|| a.version.cmp(&b.version))
    });
    let set_edges = |channels: &mut BTreeMap<String, GenChannel>,
                     t: &Tuple,
                     zmax: &str,
                     skips: &BTreeSet<String>| {
        if let Some(ch) = channels.get_mut(&t.channel) {
            let e = &mut ch.entries[t.index];
            e.replaces = zmax.to_owned();
            let s: Vec<String> = skips
                .iter()
                .filter(|s| s.as_str() != zmax)
                .cloned()
                .collect();
            if !s.is_empty() {
                e.skips = s;
            }
        }
    };
    let name_of = |channels: &BTreeMap<String, GenChannel>, t: &Tuple| {
        channels[&t.channel].entries[t.index].name.to_string()
    };
    let mut zmax = String::new();
    let mut skips: BTreeSet<String> = BTreeSet::new();
    for i in 1..tuples.len() {
        let (prev, cur) = (&tuples[i - 1], &tuples[i]);
        let stream_change = prev.maturity != cur.maturity
            || prev.kind != cur.kind
            || prev.version.major != cur.version.major;
        let y_change = prev.version.minor != cur.version.minor;
        if stream_change || y_change {
            set_edges(channels, prev, &zmax, &skips);
        }
        if stream_change {
            skips.clear();
            zmax.clear();
        } else {
            let name = name_of(channels, prev);
            if y_change {
                zmax.clone_from(&name);
            }
            skips.insert(name);
        }
    }
    if tuples.len() > 1 {
        let (pen, last) = (&tuples[tuples.len() - 2], &tuples[tuples.len() - 1]);
        if pen.maturity == last.maturity
            && pen.kind == last.kind
            && pen.version.major == last.version.major
        {
            set_edges(channels, last, &zmax, &skips);
        }
    }
}

fn link_channel_scoped(ch: &mut GenChannel, replaced_in_skips: bool) {
    let n = ch.entries.len();
    let same_y = |a: &Version, b: &Version| a.major == b.major && a.minor == b.minor;
    let (mut cur, mut probe) = (0usize, 0usize);
    let mut zmax = String::new();
    while cur < n {
        while probe < n && same_y(&ch.versions[probe], &ch.versions[cur]) {
            probe += 1;
        }
        let top = probe - 1;
        if !zmax.is_empty() {
            if replaced_in_skips {
                ch.entries[top].skips.push(zmax.clone());
            }
            ch.entries[top].replaces = zmax.clone();
        }
        zmax = ch.entries[top].name.to_string();
        while cur < top {
            let lower = ch.entries[cur].name.to_string();
            ch.entries[top].skips.push(lower);
            cur += 1;
        }
        cur += 1;
        probe = cur + 1;
    }
    if n > 1 && ch.versions[n - 1].minor != ch.versions[n - 2].minor {
        ch.entries[n - 1].replaces = ch.entries[n - 2].name.to_string();
    }
}

// ---- package description and icon ------------------------------------------------------------------

/// Description and icon from a bundle's ClusterServiceVersion: the first `olm.bundle.object` that is a
/// CSV, else the description of an `olm.csv.metadata` property.
fn csv_package_metadata(b: &Bundle) -> (String, Option<Icon>) {
    for p in b
        .properties
        .iter()
        .filter(|p| p.type_ == TYPE_BUNDLE_OBJECT)
    {
        let Ok(obj) = serde_json::from_str::<BundleObject>(p.value.get()) else {
            continue;
        };
        let Ok(bytes) = obj.decode() else { continue };
        let csv: Option<Value> = serde_json::from_slice(&bytes).ok().or_else(|| {
            std::str::from_utf8(&bytes)
                .ok()
                .and_then(|s| yamlread::parse_document_with(s, &yamlread::Options::default()).ok())
        });
        let Some(csv) =
            csv.filter(|c| c.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion"))
        else {
            continue;
        };
        let spec = csv.get("spec");
        let description = spec
            .and_then(|s| s.get("description"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let icon = spec
            .and_then(|s| s.get("icon"))
            .and_then(|i| i.get(0))
            .and_then(|i| {
                let data = i.get("base64data").and_then(Value::as_str)?;
                let mediatype = i
                    .get("mediatype")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                // Upstream keeps the decoded bytes and writes them back as standard base64.
                let engine = base64::engine::general_purpose::STANDARD;
                let bytes = engine
                    .decode(data.as_bytes())
                    .ok()
                    .filter(|b| !b.is_empty())?;
                Some(Icon {
                    base64data: engine.encode(bytes),
                    mediatype: mediatype.to_owned(),
                })
            });
        return (description, icon);
    }
    for p in b.properties.iter().filter(|p| p.type_ == TYPE_CSV_METADATA) {
        if let Ok(v) = serde_json::from_str::<Value>(p.value.get()) {
            let description = v
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            return (description, None);
        }
    }
    (String::new(), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BundleRenderError;
    use olm_catalog::property::{PackageProperty, Property};

    /// A renderer that makes a bundle `<pkg>.v<version>` of package `pkg` for image `<pkg>:<version>`.
    fn renderer(image: &str) -> Result<Vec<Bundle>, BundleRenderError> {
        let (pkg, version) = image
            .split_once(':')
            .ok_or_else(|| BundleRenderError::Failed(format!("bad image {image}")))?;
        let prop = PackageProperty {
            package_name: pkg.to_owned(),
            version: version.to_owned(),
            release: String::new(),
        };
        Ok(vec![Bundle {
            name: format!("{pkg}.v{version}").into(),
            package: pkg.into(),
            image: image.into(),
            properties: vec![Property::new(TYPE_PACKAGE, &prop)],
            ..Default::default()
        }])
    }

    fn template(head: &str, lists: &[(&str, &[&str])]) -> String {
        let mut s = format!("schema: olm.semver\n{head}");
        for (m, images) in lists {
            s.push_str(&format!("{m}:\n  bundles:\n"));
            for i in *images {
                s.push_str(&format!("  - image: {i}\n"));
            }
        }
        s
    }

    fn run(t: &str, edges: SemverEdges) -> Result<Catalog, TemplateError> {
        render(
            t.as_bytes(),
            &renderer,
            &SemverOptions {
                edges,
                package_metadata: true,
            },
        )
    }

    /// `channel: entry[>replaces][/skip,skip]` lines for compact comparison.
    fn graph(c: &Catalog) -> Vec<String> {
        let mut out = Vec::new();
        for ch in c.channels() {
            for e in ch.entries() {
                let mut s = format!("{}: {}", ch.name, e.name.trim_start_matches("op.v"));
                if !e.replaces.is_empty() {
                    s.push_str(&format!(" > {}", e.replaces.trim_start_matches("op.v")));
                }
                if !e.skips.is_empty() {
                    let sk: Vec<&str> = e
                        .skips
                        .iter()
                        .map(|s| s.trim_start_matches("op.v"))
                        .collect();
                    s.push_str(&format!(" / {}", sk.join(",")));
                }
                out.push(s);
            }
        }
        out
    }

    const DOC_EXAMPLE: &[&str] = &[
        "op:0.1.0", "op:0.1.1", "op:0.1.2", "op:0.1.3", "op:0.2.0", "op:0.2.1", "op:0.2.2",
        "op:0.3.0", "op:1.0.0", "op:1.0.1", "op:1.1.0",
    ];

    #[test]
    fn edge_scoped_major_channels() {
        // The olm-docs worked example, extended with a second major version.
        let c = run(
            &template(
                "generateMajorChannels: true\ngenerateMinorChannels: false\n",
                &[("Stable", DOC_EXAMPLE)],
            ),
            SemverEdges::EdgeScoped,
        )
        .unwrap();
        assert_eq!(
            graph(&c),
            [
                "stable-v0: 0.1.0",
                "stable-v0: 0.1.1",
                "stable-v0: 0.1.2",
                "stable-v0: 0.1.3 / 0.1.0,0.1.1,0.1.2",
                "stable-v0: 0.2.0",
                "stable-v0: 0.2.1",
                "stable-v0: 0.2.2 > 0.1.3 / 0.1.0,0.1.1,0.1.2,0.2.0,0.2.1",
                "stable-v0: 0.3.0 > 0.2.2 / 0.1.0,0.1.1,0.1.2,0.1.3,0.2.0,0.2.1",
                "stable-v1: 1.0.0",
                "stable-v1: 1.0.1 / 1.0.0",
                "stable-v1: 1.1.0 > 1.0.1 / 1.0.0",
            ]
        );
        assert_eq!(c.packages().next().unwrap().default_channel, "stable-v1");
        assert_eq!(c.packages().next().unwrap().name, "op");
    }

    #[test]
    fn edge_scoped_minor_channels_dangle_across_channels() {
        let c = run(
            &template("", &[("stable", &DOC_EXAMPLE[..8])]),
            SemverEdges::EdgeScoped,
        )
        .unwrap();
        assert_eq!(
            graph(&c),
            [
                "stable-v0.1: 0.1.0",
                "stable-v0.1: 0.1.1",
                "stable-v0.1: 0.1.2",
                "stable-v0.1: 0.1.3 / 0.1.0,0.1.1,0.1.2",
                "stable-v0.2: 0.2.0",
                "stable-v0.2: 0.2.1",
                "stable-v0.2: 0.2.2 > 0.1.3 / 0.1.0,0.1.1,0.1.2,0.2.0,0.2.1",
                "stable-v0.3: 0.3.0 > 0.2.2 / 0.1.0,0.1.1,0.1.2,0.1.3,0.2.0,0.2.1",
            ]
        );
        assert_eq!(c.packages().next().unwrap().default_channel, "stable-v0.3");
    }

    #[test]
    fn skips_sort_as_strings() {
        let c = run(
            &template(
                "generateMajorChannels: true\n",
                &[("stable", &["op:0.9.0", "op:0.10.0", "op:0.11.0"])],
            ),
            SemverEdges::EdgeScoped,
        )
        .unwrap();
        let last = c
            .channels()
            .find(|ch| ch.name == "stable-v0")
            .unwrap()
            .entries()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last.replaces, "op.v0.10.0");
        assert_eq!(last.skips, ["op.v0.9.0"]);
        let c = run(
            &template(
                "generateMajorChannels: true\ngenerateMinorChannels: false\n",
                &[(
                    "stable",
                    &["op:0.9.0", "op:0.9.1", "op:0.10.0", "op:0.10.1"],
                )],
            ),
            SemverEdges::EdgeScoped,
        )
        .unwrap();
        let last = c
            .channels()
            .next()
            .unwrap()
            .entries()
            .last()
            .unwrap()
            .clone();
        assert_eq!(last.skips, ["op.v0.10.0", "op.v0.9.0"]);
    }

    #[test]
    fn channel_scoped_variants() {
        let t = template(
            "generateMajorChannels: true\ngenerateMinorChannels: false\n",
            &[(
                "fast",
                &[
                    "op:0.1.1", "op:0.2.0", "op:0.2.1", "op:0.2.2", "op:0.2.3", "op:0.3.0",
                    "op:1.0.0", "op:1.0.1", "op:1.0.2",
                ],
            )],
        );
        // clusterpulse's committed catalog (opm v1.37–v1.56).
        assert_eq!(
            graph(&run(&t, SemverEdges::ChannelScopedV1_37).unwrap()),
            [
                "fast-v0: 0.1.1",
                "fast-v0: 0.2.0",
                "fast-v0: 0.2.1",
                "fast-v0: 0.2.2",
                "fast-v0: 0.2.3 > 0.1.1 / 0.1.1,0.2.0,0.2.1,0.2.2",
                "fast-v0: 0.3.0 > 0.2.3 / 0.2.3",
                "fast-v1: 1.0.0",
                "fast-v1: 1.0.1",
                "fast-v1: 1.0.2 / 1.0.0,1.0.1",
            ]
        );
        assert_eq!(
            graph(&run(&t, SemverEdges::ChannelScopedV1_57).unwrap()),
            [
                "fast-v0: 0.1.1",
                "fast-v0: 0.2.0",
                "fast-v0: 0.2.1",
                "fast-v0: 0.2.2",
                "fast-v0: 0.2.3 > 0.1.1 / 0.2.0,0.2.1,0.2.2",
                "fast-v0: 0.3.0 > 0.2.3",
                "fast-v1: 1.0.0",
                "fast-v1: 1.0.1",
                "fast-v1: 1.0.2 / 1.0.0,1.0.1",
            ]
        );
        // The current algorithm on the same input.
        assert_eq!(
            graph(&run(&t, SemverEdges::EdgeScoped).unwrap()),
            [
                "fast-v0: 0.1.1",
                "fast-v0: 0.2.0",
                "fast-v0: 0.2.1",
                "fast-v0: 0.2.2",
                "fast-v0: 0.2.3 > 0.1.1 / 0.2.0,0.2.1,0.2.2",
                "fast-v0: 0.3.0 > 0.2.3 / 0.1.1,0.2.0,0.2.1,0.2.2",
                "fast-v1: 1.0.0",
                "fast-v1: 1.0.1",
                "fast-v1: 1.0.2 / 1.0.0,1.0.1",
            ]
        );
    }

    /// Upstream's mark starts at 0.0.0, so a package of only 0.0.0 prereleases got no default
    /// channel (and failed validation); here the first channel created is the mark.
    #[test]
    fn only_zero_prereleases_still_get_a_default_channel() {
        let t = template("", &[("candidate", &["op:0.0.0-rc.0", "op:0.0.0-rc.1"])]);
        let c = run(&t, SemverEdges::default()).unwrap();
        assert_eq!(
            c.packages().next().unwrap().default_channel,
            "candidate-v0.0"
        );
        olm_catalog::validate::validate(&c).unwrap();
    }

    #[test]
    fn default_channel_high_water_mark() {
        // Maturity beats version.
        let c = run(
            &template(
                "generateMajorChannels: true\n",
                &[("candidate", &["op:2.0.0"]), ("stable", &["op:1.0.0"])],
            ),
            SemverEdges::EdgeScoped,
        )
        .unwrap();
        assert_eq!(c.packages().next().unwrap().default_channel, "stable-v1");
        // Both kinds generated: the preference decides between channels created by one bundle.
        let both = "generateMajorChannels: true\ngenerateMinorChannels: true\n";
        let c = run(
            &template(both, &[("stable", &["op:1.0.0"])]),
            SemverEdges::EdgeScoped,
        )
        .unwrap();
        assert_eq!(c.packages().next().unwrap().default_channel, "stable-v1.0");
        let c = run(
            &template(
                &format!("{both}defaultChannelTypePreference: major\n"),
                &[("stable", &["op:1.0.0"])],
            ),
            SemverEdges::EdgeScoped,
        )
        .unwrap();
        assert_eq!(c.packages().next().unwrap().default_channel, "stable-v1");
        // Only channel creation counts: stable-v1 was created by 1.0.0, stable-v1.1 by 1.1.0.
        let c = run(
            &template(both, &[("stable", &["op:1.0.0", "op:1.1.0"])]),
            SemverEdges::EdgeScoped,
        )
        .unwrap();
        assert_eq!(c.packages().next().unwrap().default_channel, "stable-v1.1");
        let c = run(
            &template(
                &format!("{both}defaultChannelTypePreference: major\n"),
                &[("stable", &["op:1.0.0", "op:1.1.0"])],
            ),
            SemverEdges::EdgeScoped,
        )
        .unwrap();
        assert_eq!(c.packages().next().unwrap().default_channel, "stable-v1.1");
    }

    /// operator-registry `TestGenerateChannels`: one stable list with pre-releases, rendered with
    /// each channel kind and preference; expected channels and default channels are upstream's.
    #[test]
    fn upstream_generate_channels_vectors() {
        let versions = [
            "0.1.0",
            "0.1.1",
            "1.1.0",
            "1.2.1",
            "1.3.1",
            "2.1.0",
            "1.3.1-beta",
            "2.1.1",
            "2.3.1",
            "2.3.2",
            "3.1.0",
            "3.1.1",
            "1.3.1-alpha",
            "1.4.1",
            "1.4.1-beta1",
            "1.4.1-beta2",
        ];
        let named = |image: &str| -> Result<Vec<Bundle>, BundleRenderError> {
            let version = image.trim_start_matches("a-v");
            let prop = PackageProperty {
                package_name: "a".into(),
                version: version.into(),
                release: String::new(),
            };
            Ok(vec![Bundle {
                name: image.into(),
                package: "a".into(),
                image: image.into(),
                properties: vec![Property::new(TYPE_PACKAGE, &prop)],
                ..Default::default()
            }])
        };
        let images: Vec<String> = versions.iter().map(|v| format!("a-v{v}")).collect();
        let images: Vec<&str> = images.iter().map(String::as_str).collect();
        let lines = |c: &Catalog| -> Vec<String> {
            c.channels()
                .flat_map(|ch| {
                    ch.entries().iter().map(move |e| {
                        format!(
                            "{}: {} > {} / {}",
                            ch.name,
                            e.name,
                            e.replaces,
                            e.skips.join(",")
                        )
                    })
                })
                .collect()
        };
        let major = [
            "stable-v0: a-v0.1.0 >  / ",
            "stable-v0: a-v0.1.1 >  / a-v0.1.0",
            "stable-v1: a-v1.1.0 >  / ",
            "stable-v1: a-v1.2.1 > a-v1.1.0 / ",
            "stable-v1: a-v1.3.1-alpha >  / ",
            "stable-v1: a-v1.3.1-beta >  / ",
            "stable-v1: a-v1.3.1 > a-v1.2.1 / a-v1.1.0,a-v1.3.1-alpha,a-v1.3.1-beta",
            "stable-v1: a-v1.4.1-beta1 >  / ",
            "stable-v1: a-v1.4.1-beta2 >  / ",
            "stable-v1: a-v1.4.1 > a-v1.3.1 / a-v1.1.0,a-v1.2.1,a-v1.3.1-alpha,a-v1.3.1-beta,a-v1.4.1-beta1,a-v1.4.1-beta2",
            "stable-v2: a-v2.1.0 >  / ",
            "stable-v2: a-v2.1.1 >  / a-v2.1.0",
            "stable-v2: a-v2.3.1 >  / ",
            "stable-v2: a-v2.3.2 > a-v2.1.1 / a-v2.1.0,a-v2.3.1",
            "stable-v3: a-v3.1.0 >  / ",
            "stable-v3: a-v3.1.1 >  / a-v3.1.0",
        ];
        let minor = [
            "stable-v0.1: a-v0.1.0 >  / ",
            "stable-v0.1: a-v0.1.1 >  / a-v0.1.0",
            "stable-v1.1: a-v1.1.0 >  / ",
            "stable-v1.2: a-v1.2.1 > a-v1.1.0 / ",
            "stable-v1.3: a-v1.3.1-alpha >  / ",
            "stable-v1.3: a-v1.3.1-beta >  / ",
            "stable-v1.3: a-v1.3.1 > a-v1.2.1 / a-v1.1.0,a-v1.3.1-alpha,a-v1.3.1-beta",
            "stable-v1.4: a-v1.4.1-beta1 >  / ",
            "stable-v1.4: a-v1.4.1-beta2 >  / ",
            "stable-v1.4: a-v1.4.1 > a-v1.3.1 / a-v1.1.0,a-v1.2.1,a-v1.3.1-alpha,a-v1.3.1-beta,a-v1.4.1-beta1,a-v1.4.1-beta2",
            "stable-v2.1: a-v2.1.0 >  / ",
            "stable-v2.1: a-v2.1.1 >  / a-v2.1.0",
            "stable-v2.3: a-v2.3.1 >  / ",
            "stable-v2.3: a-v2.3.2 > a-v2.1.1 / a-v2.1.0,a-v2.3.1",
            "stable-v3.1: a-v3.1.0 >  / ",
            "stable-v3.1: a-v3.1.1 >  / a-v3.1.0",
        ];
        // Both kinds: the same entries, channels sorted by name.
        let mut both: Vec<&str> = major.iter().chain(minor.iter()).copied().collect();
        both.sort_by_key(|l| l.split(':').next().unwrap_or_default().to_owned());
        let cases: [(&str, &[&str], &str); 4] = [
            ("generateMinorChannels: true\n", &minor, "stable-v3.1"),
            ("generateMajorChannels: true\n", &major, "stable-v3"),
            (
                "generateMajorChannels: true\ngenerateMinorChannels: true\ndefaultChannelTypePreference: minor\n",
                &both,
                "stable-v3.1",
            ),
            (
                "generateMajorChannels: true\ngenerateMinorChannels: true\ndefaultChannelTypePreference: major\n",
                &both,
                "stable-v3",
            ),
        ];
        for (head, want, default) in cases {
            let t = template(head, &[("stable", &images)]);
            let c = render(t.as_bytes(), &named, &SemverOptions::default()).unwrap();
            assert_eq!(lines(&c), want, "{head}");
            assert_eq!(
                c.packages().next().unwrap().default_channel,
                default,
                "{head}"
            );
        }
        // TestBailOnVersionBuildMetadata: versions equal but for build metadata cannot be ordered.
        let mut with_build = images.clone();
        with_build.extend(["a-v1.3.1-alpha+2001Jan21", "a-v1.3.1-alpha+2003May06"]);
        let t = template("", &[("stable", &with_build)]);
        let e = render(t.as_bytes(), &named, &SemverOptions::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "render: unable to post-process bundle info: encountered bundle versions which differ \
             only by build metadata, which cannot be ordered: [bundle version \"1.3.1-alpha+2001Jan21\" \
             cannot be compared to \"1.3.1-alpha\", bundle version \"1.3.1-alpha+2003May06\" cannot be \
             compared to \"1.3.1-alpha\"]"
        );
    }

    #[test]
    fn one_bundle_in_every_maturity() {
        // kubevirt-wol: the same image in all three lists.
        let c = run(
            &template(
                "generateMajorChannels: true\ngenerateMinorChannels: false\n",
                &[
                    ("Fast", &["op:0.0.2"]),
                    ("Stable", &["op:0.0.2"]),
                    ("Candidate", &["op:0.0.2"]),
                ],
            ),
            SemverEdges::EdgeScoped,
        )
        .unwrap();
        let names: Vec<&str> = c.channels().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["candidate-v0", "fast-v0", "stable-v0"]);
        assert_eq!(c.bundles().count(), 1);
        assert_eq!(c.packages().next().unwrap().default_channel, "stable-v0");
    }

    fn error_of(t: &str) -> String {
        run(t, SemverEdges::EdgeScoped).unwrap_err().to_string()
    }

    #[test]
    fn read_errors_upstream_texts() {
        assert_eq!(
            error_of("schema: olm.template.basic\n"),
            r#"render: unable to read file: readFile: input file has unknown schema, should be "olm.semver""#
        );
        assert_eq!(
            error_of("schema: olm.semver\ninvalid: x\n"),
            r#"render: unable to read file: error unmarshaling JSON: while decoding JSON: json: unknown field "invalid""#
        );
        assert_eq!(
            error_of("schema: olm.semver\nstable:\n  bundles:\n  - image: op:1.0.0\n    tag: x\n"),
            r#"render: unable to read file: error unmarshaling JSON: while decoding JSON: json: unknown field "tag""#
        );
        assert_eq!(
            error_of("schema: olm.semver\ngenerateMajorChannels: \"true\"\n"),
            "render: unable to read file: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go struct field SemverTemplateData.generateMajorChannels of type bool"
        );
        assert_eq!(
            error_of(
                "schema: olm.semver\ngenerateMajorChannels: true\ndefaultChannelTypePreference: minor\n"
            ),
            "render: unable to read file: schema attribute mismatch: DefaultChannelTypePreference set to 'minor' doesn't make sense if not generating minor-version channels"
        );
        assert_eq!(
            error_of("schema: olm.semver\ndefaultChannelTypePreference: major\n"),
            "render: unable to read file: schema attribute mismatch: DefaultChannelTypePreference set to 'major' doesn't make sense if not generating major-version channels"
        );
        assert_eq!(
            error_of("schema: olm.semver\ndefaultChannelTypePreference: patch\n"),
            "render: unable to read file: unknown DefaultChannelTypePreference: \"patch\"\nValid values are 'major' or 'minor'"
        );
    }

    #[test]
    fn capitalised_keys_and_next_line_scalars() {
        // The spelling of the real templates (openshift-integration-operator puts the image on the next line).
        let t = "---\nSchema: olm.semver\nGenerateMajorChannels: true\nGenerateMinorChannels: false\nCandidate:\n  Bundles:\n  - Image: \n      op:0.7.0\n  - Image: op:0.8.2\n";
        let c = run(t, SemverEdges::EdgeScoped).unwrap();
        assert_eq!(
            graph(&c),
            ["candidate-v0: 0.7.0", "candidate-v0: 0.8.2 > 0.7.0"]
        );
    }

    #[test]
    fn render_errors_upstream_texts() {
        assert_eq!(
            error_of("schema: olm.semver\n"),
            "render: no bundles specified or no bundles could be rendered"
        );
        let two = |image: &str| -> Result<Vec<Bundle>, BundleRenderError> {
            let mut v = renderer("op:1.0.0")?;
            v.extend(renderer("op:1.0.1")?);
            let _ = image;
            Ok(v)
        };
        let e = render(
            template("", &[("stable", &["op:1"])]).as_bytes(),
            &two,
            &SemverOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"bundle reference "op:1" resulted in 2 bundles, expected 1"#
        );
        assert_eq!(
            error_of(&template("", &[("stable", &["op:1.0.0", "other:1.1.0"])])),
            r#"render: unable to post-process bundle info: bundle "other" does not belong to this package: "op""#
        );
        assert_eq!(
            error_of(&template("", &[("stable", &["op:1.0", "other:1.1.0"])])),
            r#"render: unable to post-process bundle info: bundle "op.v1.0" has invalid version "1.0": No Major.Minor.Patch elements found"#
        );
        assert_eq!(
            error_of(&template("", &[("stable", &["op:1.0.0", "op:1.0.0"])])),
            r#"render: unable to post-process bundle info: duplicate bundle name "op.v1.0.0""#
        );
        assert_eq!(
            error_of(&template("", &[("stable", &["op:1.0.0+1", "op:1.0.0+2"])])),
            r#"render: unable to post-process bundle info: encountered bundle versions which differ only by build metadata, which cannot be ordered: bundle version "1.0.0+2" cannot be compared to "1.0.0""#
        );
        assert_eq!(
            error_of(&template(
                "",
                &[(
                    "stable",
                    &["op:1.0.0+1", "op:1.0.0+2", "op:2.0.0", "op:2.0.0+x"]
                )]
            )),
            r#"render: unable to post-process bundle info: encountered bundle versions which differ only by build metadata, which cannot be ordered: [bundle version "1.0.0+2" cannot be compared to "1.0.0", bundle version "2.0.0+x" cannot be compared to "2.0.0"]"#
        );
        let no_pkg = |image: &str| -> Result<Vec<Bundle>, BundleRenderError> {
            Ok(vec![Bundle {
                name: "x".into(),
                image: image.into(),
                ..Default::default()
            }])
        };
        let e = render(
            template("", &[("stable", &["x:1"])]).as_bytes(),
            &no_pkg,
            &SemverOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"render: unable to post-process bundle info: bundle "x" has multiple "olm.package" properties, expected exactly 1"#
        );
        let bad_prop = |image: &str| -> Result<Vec<Bundle>, BundleRenderError> {
            let mut v = renderer(image)?;
            let value = serde_json::value::RawValue::from_string("\"oops\"".to_owned()).unwrap();
            v[0].properties.insert(
                0,
                Property {
                    type_: TYPE_PACKAGE.into(),
                    value,
                },
            );
            Ok(v)
        };
        let e = render(
            template("", &[("stable", &["op:1.0.0"])]).as_bytes(),
            &bad_prop,
            &SemverOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with(
                "render: unable to post-process bundle info: parse properties for bundle \"op.v1.0.0\": \
                 parse property[0] of type \"olm.package\": "
            ),
            "{e}"
        );
        // The renderer's error is returned as is.
        let none = |image: &str| -> Result<Vec<Bundle>, BundleRenderError> {
            Err(BundleRenderError::NotFound {
                image: image.into(),
                source_name: "catalog \"c\"".into(),
            })
        };
        let e = render(
            template("", &[("stable", &["x:1"])]).as_bytes(),
            &none,
            &SemverOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"bundle image "x:1" not found in catalog "c""#
        );
    }

    #[test]
    fn package_metadata_from_the_default_channel_head() {
        use base64::Engine;
        let csv = serde_json::json!({"kind": "ClusterServiceVersion", "spec": {"description": "op does things", "icon": [{"base64data": "aWNvbg==", "mediatype": "image/png"}]}});
        let data = base64::engine::general_purpose::STANDARD.encode(csv.to_string());
        let with_csv = move |image: &str| -> Result<Vec<Bundle>, BundleRenderError> {
            let mut v = renderer(image)?;
            if image.ends_with("1.1.0") {
                v[0].properties.push(Property::new(
                    TYPE_BUNDLE_OBJECT,
                    &BundleObject { data: data.clone() },
                ));
            }
            Ok(v)
        };
        let t = template("", &[("stable", &["op:1.0.0", "op:1.1.0"])]);
        let c = render(t.as_bytes(), &with_csv, &SemverOptions::default()).unwrap();
        let p = c.packages().next().unwrap();
        assert_eq!(p.description, "op does things");
        assert_eq!(
            p.icon,
            Some(Icon {
                base64data: "aWNvbg==".into(),
                mediatype: "image/png".into()
            })
        );
        let c = render(
            t.as_bytes(),
            &with_csv,
            &SemverOptions {
                package_metadata: false,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(c.packages().next().unwrap().description, "");
    }

    proptest::proptest! {
        /// Whatever the versions, maturities and channel kinds, every edge algorithm yields a catalog
        /// that validates, and each channel's single head is its highest version.
        #[test]
        fn generated_graphs_are_valid(
            versions in proptest::collection::btree_map(
                (0u64..3, 0u64..4, 0u64..4, proptest::option::of(0u8..3)),
                1u8..8,
                1..24,
            ),
            major in proptest::bool::ANY,
            minor in proptest::bool::ANY,
            edges in 0usize..3,
        ) {
            let mut lists: [Vec<String>; 3] = Default::default();
            for ((x, y, z, pre), mask) in &versions {
                let v = match pre {
                    Some(p) => format!("op:{x}.{y}.{z}-rc.{p}"),
                    None => format!("op:{x}.{y}.{z}"),
                };
                for (i, list) in lists.iter_mut().enumerate() {
                    if mask & (1 << i) != 0 {
                        list.push(v.clone());
                    }
                }
            }
            let refs: Vec<Vec<&str>> = lists.iter().map(|l| l.iter().map(String::as_str).collect()).collect();
            let mut head = String::new();
            if major {
                head.push_str("generateMajorChannels: true\n");
            }
            if minor {
                head.push_str("generateMinorChannels: true\n");
            }
            let mut parts: Vec<(&str, &[&str])> = Vec::new();
            for (m, l) in ["candidate", "fast", "stable"].into_iter().zip(&refs) {
                if !l.is_empty() {
                    parts.push((m, l));
                }
            }
            let edges = [SemverEdges::EdgeScoped, SemverEdges::ChannelScopedV1_37, SemverEdges::ChannelScopedV1_57][edges];
            let c = run(&template(&head, &parts), edges).unwrap();
            olm_catalog::validate::validate(&c).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            for ch in c.channels() {
                let incoming: HashSet<&str> = ch
                    .entries()
                    .iter()
                    .flat_map(|e| e.skips.iter().map(String::as_str).chain(Some(e.replaces.as_str())))
                    .collect();
                let heads: Vec<&str> = ch.entries().iter().map(|e| e.name.as_str()).filter(|n| !incoming.contains(n)).collect();
                let last = ch.entries().last().map(|e| e.name.as_str());
                proptest::prop_assert_eq!(heads, last.into_iter().collect::<Vec<_>>());
            }
        }
    }
}
