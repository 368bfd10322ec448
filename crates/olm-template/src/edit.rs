//! The Catalog Update Formulary (seed 001) as edits: what operator authors otherwise do with
//! `yq` recipes on a file-based catalog, a basic template or a semver template — add a bundle to
//! a channel, add or change a `replaces` edge, remove a bundle from a channel, substitute a
//! bundle everywhere — done on the documents and checked afterwards, so that no edit leaves a
//! broken catalog unnoticed.
//!
//! Reading and writing: a catalog file is read as YAML documents or a JSON stream and written
//! back in the same form with opm's writer (YAML keys in go-yaml's order, `---` before each
//! document; JSON indented by four spaces). A template keeps its key order, and its comments and
//! blank lines are carried over from the text it was read from (see `comments`).
//!
//! Checking: the edited graph is validated with opm's rules (a template's channels through a
//! stand-in catalog whose bundles are the channel entries), and only problems the edit
//! introduced are reported — an input that was already invalid does not block an unrelated
//! edit. Channels left without entries and channels with several heads are named in opm's
//! words.

use std::collections::BTreeSet;

use olm_goenc::json::{field, field_key};
use serde_json::{Map, Value, json};

use crate::{is_blank_yaml, yaml_documents};

mod comments;

/// What a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A file-based catalog.
    Fbc,
    /// A basic template (`olm.template.basic`).
    Basic,
    /// A semver template (`olm.semver`).
    Semver,
}

impl Kind {
    /// How users name it.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Fbc => "file-based catalog",
            Kind::Basic => "basic template",
            Kind::Semver => "semver template",
        }
    }
}

/// A parsed file: its documents and how it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// What it is.
    pub kind: Kind,
    /// Written as a JSON stream rather than YAML.
    pub json: bool,
    /// Its documents (one for a template).
    pub docs: Vec<Value>,
    /// The text a YAML template was read from, whose comments are carried over (empty for
    /// catalogs and JSON files).
    pub source: String,
}

/// One formula.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Add a bundle to a channel: an entry `name` (with its edges) in a catalog or basic
    /// template, and for a basic template with `image` also its `olm.bundle` entry; for a semver
    /// template the `image` in the `channel` archetype (`Candidate`, `Fast`, `Stable`).
    AddBundle {
        /// The channel (or semver archetype).
        channel: String,
        /// The bundle's name (not used by the semver template).
        name: String,
        /// Its bundle image (semver: required; basic: optional).
        image: Option<String>,
        /// The entry's `replaces`.
        replaces: Option<String>,
        /// The entry's `skips`.
        skips: Vec<String>,
        /// The entry's `skipRange`.
        skip_range: Option<String>,
    },
    /// Add a `replaces` edge between two bundles of the channel: `name` (which replaces nothing
    /// yet) then replaces `replaces`.
    AddReplaces {
        /// The channel.
        channel: String,
        /// The bundle that gains the edge.
        name: String,
        /// The bundle it replaces.
        replaces: String,
    },
    /// Point an existing `replaces` edge of `name` at another bundle.
    ReplaceEdge {
        /// The channel.
        channel: String,
        /// The bundle whose edge changes.
        name: String,
        /// The bundle it replaces from now on.
        replaces: String,
    },
    /// Remove the entry `name` from the channel, and from a basic template the `olm.bundle`
    /// entry of `image` when given.
    RemoveBundle {
        /// The channel.
        channel: String,
        /// The bundle.
        name: String,
        /// The bundle's image (basic template only).
        image: Option<String>,
    },
    /// Substitute a bundle everywhere in the graph: entry names, `replaces` and `skips` (for the
    /// semver template: bundle images).
    Substitute {
        /// The bundle name (semver: image) replaced.
        from: String,
        /// What replaces it.
        to: String,
    },
}

/// Why the semver template has no such formula (seed 001's note).
const SEMVER_IMPOSSIBLE: &str = "This operation is not possible for the semver template, which exclusively leverages semver ordering to generate an opinionated upgrade graph";

/// The semver template's channel archetypes, as its keys spell them.
const ARCHETYPES: [&str; 3] = ["candidate", "fast", "stable"];

// Templates are read as Go's `encoding/json` reads them, keys matched without regard to case
// (`Schema: olm.semver`, `Stable:`, `Bundles:` and `Image:` are what some authors write), so
// edits find what rendering finds.

/// The value of key `key` of an object, as Go decodes it.
fn get<'v>(value: &'v Value, key: &str) -> Option<&'v Value> {
    field(value.as_object()?, key)
}

/// The value of key `key` of an object, as Go decodes it, to change.
fn get_mut<'v>(value: &'v mut Value, key: &str) -> Option<&'v mut Value> {
    let map = value.as_object_mut()?;
    let key = field_key(map, key)?.clone();
    map.get_mut(&key)
}

/// Reads a file: a JSON stream when its first non-space byte is `{`, else YAML documents.
///
/// # Errors
///
/// The decoder's message, or a template with more than one document.
pub fn parse(text: &str) -> Result<Document, String> {
    let json = text.bytes().find(|b| !b.is_ascii_whitespace()) == Some(b'{');
    let docs: Vec<Value> = if json {
        serde_json::Deserializer::from_str(text)
            .into_iter::<Value>()
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?
    } else {
        let options = olm_goenc::yamlread::Options {
            duplicate_keys: olm_goenc::yamlread::DuplicateKeys::Error,
        };
        yaml_documents(text)
            .filter(|d| !is_blank_yaml(d))
            .map(|d| {
                olm_goenc::yamlread::parse_document_with(d, &options).map_err(|e| e.to_string())
            })
            .collect::<Result<_, _>>()?
    };
    let schema = |d: &Value| {
        get(d, "schema")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let kind = match docs.first().map(schema).as_deref() {
        Some("olm.template.basic") => Kind::Basic,
        Some("olm.semver") => Kind::Semver,
        _ => Kind::Fbc,
    };
    if kind != Kind::Fbc && docs.len() != 1 {
        return Err(format!(
            "a {} is one document; this file has {}",
            kind.describe(),
            docs.len()
        ));
    }
    Ok(Document {
        kind,
        json,
        docs,
        // Only a YAML template's comments are carried over; a catalog keeps no second copy.
        source: if kind != Kind::Fbc && !json {
            text.to_owned()
        } else {
            String::new()
        },
    })
}

/// Writes a file back in the form it was read in.
pub fn render(doc: &Document) -> String {
    let mut out = String::new();
    for d in &doc.docs {
        if doc.json {
            olm_catalog::write::indent_json(&d.to_string(), "    ", &mut out);
            out.push('\n');
        } else if doc.kind == Kind::Fbc {
            out.push_str("---\n");
            olm_goenc::yaml::to_yaml_into(d, &mut out);
        } else {
            out.push_str(&comments::keep_comments(
                &doc.source,
                &olm_goenc::yaml::to_yaml_ordered(d),
            ));
        }
    }
    out
}

/// The channel objects of a catalog or basic template (a basic template's live in `entries`).
fn channels(doc: &mut Document) -> Vec<&mut Map<String, Value>> {
    let blobs: Vec<&mut Value> = match doc.kind {
        Kind::Fbc => doc.docs.iter_mut().collect(),
        Kind::Basic => doc
            .docs
            .iter_mut()
            .filter_map(|d| get_mut(d, "entries").and_then(Value::as_array_mut))
            .flatten()
            .collect(),
        Kind::Semver => Vec::new(),
    };
    blobs
        .into_iter()
        .filter(|b| b["schema"] == "olm.channel")
        .filter_map(Value::as_object_mut)
        .collect()
}

/// The channels of `doc`, of `package` only when given.
fn channels_of<'d>(
    doc: &'d mut Document,
    package: Option<&str>,
) -> Vec<&'d mut Map<String, Value>> {
    channels(doc)
        .into_iter()
        .filter(|c| package.is_none_or(|p| c.get("package").and_then(Value::as_str) == Some(p)))
        .collect()
}

/// The one channel named `name` (of `package`, when given).
fn channel<'d>(
    doc: &'d mut Document,
    package: Option<&str>,
    name: &str,
) -> Result<&'d mut Map<String, Value>, String> {
    let q = olm_goenc::quote;
    let mut found: Vec<&mut Map<String, Value>> = channels_of(doc, package)
        .into_iter()
        .filter(|c| c.get("name").and_then(Value::as_str) == Some(name))
        .collect();
    match (found.len(), package) {
        (0, Some(p)) => Err(format!("no channel {} in package {}", q(name), q(p))),
        (0, None) => Err(format!("no channel {}", q(name))),
        (1, _) => Ok(found.remove(0)),
        (n, _) => Err(format!(
            "{n} packages have a channel {}: name the package with --package",
            q(name)
        )),
    }
}

/// A channel's entries, made a list when absent or `null`.
fn entries(channel: &mut Map<String, Value>) -> Result<&mut Vec<Value>, String> {
    let name = channel
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let slot = channel.entry("entries").or_insert_with(|| json!([]));
    if slot.is_null() {
        *slot = json!([]);
    }
    slot.as_array_mut().ok_or_else(|| {
        format!(
            "the entries of channel {} are not a list",
            olm_goenc::quote(&name)
        )
    })
}

fn entry_named<'e>(entries: &'e mut [Value], name: &str) -> Option<&'e mut Value> {
    entries.iter_mut().find(|e| e["name"] == name)
}

/// Applies `edit` to `doc`, to the channels of `package` only when given (a catalog of several
/// packages may have a channel of the same name in each).
///
/// # Errors
///
/// Why it cannot be done: the semver template's note, a missing channel or bundle, an entry that
/// exists already, an edge that is (or is not yet) there.
pub fn apply(doc: &mut Document, edit: &Edit, package: Option<&str>) -> Result<(), String> {
    let q = olm_goenc::quote;
    if doc.kind == Kind::Semver {
        return apply_semver(doc, edit);
    }
    match edit {
        Edit::AddBundle {
            channel: c,
            name,
            image,
            replaces,
            skips,
            skip_range,
        } => {
            let kind = doc.kind;
            let list = entries(channel(doc, package, c)?)?;
            if entry_named(list, name).is_some() {
                return Err(format!("bundle {} is already in channel {}", q(name), q(c)));
            }
            let mut entry = Map::new();
            entry.insert("name".into(), json!(name));
            if let Some(r) = replaces {
                entry.insert("replaces".into(), json!(r));
            }
            if !skips.is_empty() {
                entry.insert("skips".into(), json!(skips));
            }
            if let Some(r) = skip_range {
                entry.insert("skipRange".into(), json!(r));
            }
            list.push(Value::Object(entry));
            if let Some(image) = image {
                if kind != Kind::Basic {
                    return Err(
                        "a file-based catalog's bundles are rendered from their images: add the bundle with `olm catalog render`, then its channel entry here".to_owned(),
                    );
                }
                add_basic_bundle(doc, image);
            }
            Ok(())
        }
        Edit::AddReplaces {
            channel: c,
            name,
            replaces,
        }
        | Edit::ReplaceEdge {
            channel: c,
            name,
            replaces,
        } => {
            let adding = matches!(edit, Edit::AddReplaces { .. });
            let list = entries(channel(doc, package, c)?)?;
            if adding && entry_named(list, replaces).is_none() {
                if entry_named(list, name).is_none() {
                    return Err(format!(
                        "bundles {} and {} are not in channel {}",
                        q(name),
                        q(replaces),
                        q(c)
                    ));
                }
                return Err(format!("bundle {} is not in channel {}", q(replaces), q(c)));
            }
            let entry = entry_named(list, name)
                .ok_or_else(|| format!("bundle {} is not in channel {}", q(name), q(c)))?;
            match (adding, entry.get("replaces").and_then(Value::as_str)) {
                (true, Some(old)) => {
                    return Err(format!(
                        "bundle {} already replaces {}: change the edge with replace-edge",
                        q(name),
                        q(old)
                    ));
                }
                (false, None) => {
                    return Err(format!(
                        "bundle {} replaces nothing in channel {}: add the edge with add-replaces",
                        q(name),
                        q(c)
                    ));
                }
                _ => {}
            }
            entry["replaces"] = json!(replaces);
            Ok(())
        }
        Edit::RemoveBundle {
            channel: c,
            name,
            image,
        } => {
            let kind = doc.kind;
            let list = entries(channel(doc, package, c)?)?;
            let before = list.len();
            list.retain(|e| e["name"] != name.as_str());
            if list.len() == before {
                return Err(format!("bundle {} is not in channel {}", q(name), q(c)));
            }
            if let Some(image) = image {
                if kind != Kind::Basic {
                    return Err(
                        "--image names a basic template's olm.bundle entry; a file-based catalog's bundles are removed with their channel entries' blobs".to_owned(),
                    );
                }
                let list = basic_entries(doc).ok_or("the basic template has no entries")?;
                let before = list.len();
                list.retain(|e| !(e["schema"] == "olm.bundle" && e["image"] == image.as_str()));
                if list.len() == before {
                    return Err(format!("no olm.bundle entry with image {}", q(image)));
                }
            }
            Ok(())
        }
        Edit::Substitute { from, to } => {
            let mut count = 0usize;
            for c in channels_of(doc, package) {
                let Ok(list) = entries(c) else { continue };
                for e in list.iter_mut() {
                    for key in ["name", "replaces"] {
                        if e[key] == from.as_str() {
                            e[key] = json!(to);
                            count += 1;
                        }
                    }
                    if let Some(skips) = e.get_mut("skips").and_then(Value::as_array_mut) {
                        for s in skips.iter_mut().filter(|s| *s == from.as_str()) {
                            *s = json!(to);
                            count += 1;
                        }
                    }
                }
            }
            if count == 0 {
                return Err(format!("no channel entry names {}", q(from)));
            }
            Ok(())
        }
    }
}

/// A basic template's entries.
fn basic_entries(doc: &mut Document) -> Option<&mut Vec<Value>> {
    doc.docs
        .first_mut()
        .and_then(|d| get_mut(d, "entries"))
        .and_then(Value::as_array_mut)
}

/// A basic template's `olm.bundle` entry for `image`, unless there is one.
fn add_basic_bundle(doc: &mut Document, image: &str) {
    let Some(list) = basic_entries(doc) else {
        return;
    };
    if !list
        .iter()
        .any(|e| e["schema"] == "olm.bundle" && e["image"] == image)
    {
        list.push(json!({"schema": "olm.bundle", "image": image}));
    }
}

fn apply_semver(doc: &mut Document, edit: &Edit) -> Result<(), String> {
    let q = olm_goenc::quote;
    let Some(template) = doc.docs.first_mut().and_then(Value::as_object_mut) else {
        return Err("the semver template is not an object".to_owned());
    };
    match edit {
        Edit::AddBundle {
            channel,
            name,
            image,
            replaces,
            skips,
            skip_range,
        } => {
            if !name.is_empty() || replaces.is_some() || !skips.is_empty() || skip_range.is_some() {
                return Err(format!(
                    "a semver template takes only the bundle's image: --name, --replaces, --skips and --skip-range are not for it. {SEMVER_IMPOSSIBLE}"
                ));
            }
            let Some(image) = image else {
                return Err(
                    "a semver template lists bundle images: give the bundle's --image".to_owned(),
                );
            };
            let key = ARCHETYPES
                .iter()
                .find(|a| a.eq_ignore_ascii_case(channel))
                .ok_or_else(|| {
                    format!(
                        "{} is no channel archetype of the semver template (Candidate, Fast, Stable)",
                        q(channel)
                    )
                })?;
            // The template's own spelling of the key, if it has one; a new one capitalised as
            // the template's other keys are (`Schema:`, `Candidate:`).
            let capitalised = template
                .keys()
                .any(|k| k.starts_with(|c: char| c.is_ascii_uppercase()));
            let spell = |word: &str| {
                if capitalised {
                    let mut chars = word.chars();
                    chars.next().map_or_else(String::new, |c| {
                        c.to_ascii_uppercase().to_string() + chars.as_str()
                    })
                } else {
                    word.to_owned()
                }
            };
            let existing = template
                .keys()
                .find(|k| k.eq_ignore_ascii_case(key))
                .cloned()
                .unwrap_or_else(|| spell(key));
            let archetype = template.entry(existing).or_insert_with(|| json!({}));
            if archetype.is_null() {
                *archetype = json!({});
            }
            let Some(archetype) = archetype.as_object_mut() else {
                return Err(format!("the {key} archetype is not a mapping"));
            };
            let slot = field_key(archetype, "bundles")
                .cloned()
                .unwrap_or_else(|| spell("bundles"));
            let bundles = archetype.entry(slot).or_insert_with(|| json!([]));
            if bundles.is_null() {
                *bundles = json!([]);
            }
            let Value::Array(bundles) = bundles else {
                return Err(format!("the {key} archetype's bundles are not a list"));
            };
            if bundles.iter().any(|b| image_of(b) == Some(image.as_str())) {
                return Err(format!(
                    "image {} is already in the {key} archetype",
                    q(image)
                ));
            }
            // Spelled as the archetype's other bundles spell it.
            let key = bundles
                .iter()
                .find_map(|b| b.as_object().and_then(|b| field_key(b, "image")).cloned())
                .unwrap_or_else(|| spell("image"));
            let mut bundle = Map::new();
            bundle.insert(key, json!(image));
            bundles.push(Value::Object(bundle));
            Ok(())
        }
        Edit::Substitute { from, to } => {
            let mut count = 0usize;
            for key in ARCHETYPES {
                let Some(bundles) = field_key(template, key)
                    .cloned()
                    .and_then(|k| template.get_mut(&k))
                    .and_then(|a| get_mut(a, "bundles"))
                    .and_then(Value::as_array_mut)
                else {
                    continue;
                };
                if bundles.iter().any(|b| image_of(b) == Some(from.as_str()))
                    && bundles.iter().any(|b| image_of(b) == Some(to.as_str()))
                {
                    return Err(format!("image {} is already in the {key} archetype", q(to)));
                }
                for b in bundles.iter_mut() {
                    if image_of(b) == Some(from.as_str())
                        && let Some(slot) = get_mut(b, "image")
                    {
                        *slot = json!(to);
                        count += 1;
                    }
                }
            }
            if count == 0 {
                return Err(format!("no bundle image {}", q(from)));
            }
            Ok(())
        }
        _ => Err(SEMVER_IMPOSSIBLE.to_owned()),
    }
}

/// A semver template bundle's image.
fn image_of(bundle: &Value) -> Option<&str> {
    get(bundle, "image").and_then(Value::as_str)
}

/// What checking an edit found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// Problems the edit introduced, in opm's words: the edit is refused unless forced.
    pub errors: Vec<String>,
    /// What to know that opm does not fail on (yet).
    pub warnings: Vec<String>,
}

/// Separates the levels of a validation problem in [`Findings::errors`].
const LEVEL: &str = " > ";

impl Findings {
    /// The errors as opm prints its validation tree (`invalid index:` and its branches), each
    /// structural error on a line of its own.
    pub fn error_report(&self) -> Option<String> {
        use olm_catalog::validate::Node;
        if self.errors.is_empty() {
            return None;
        }
        let mut roots: Vec<Node> = Vec::new();
        for e in &self.errors {
            let mut level = &mut roots;
            for part in e.split(LEVEL) {
                let at = match level.iter().position(|n| n.message == part) {
                    Some(i) => i,
                    None => {
                        level.push(Node::leaf(part));
                        level.len() - 1
                    }
                };
                let Some(node) = level.get_mut(at) else { break };
                level = &mut node.children;
            }
        }
        Some(
            roots
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }
}

/// The seed's warning for a channel left without entries.
fn empty_channel_warning(channel: &str) -> String {
    format!(
        "channel {} has no entries left: an explicitly empty array will produce an error in opm validate",
        olm_goenc::quote(channel)
    )
}

/// Whether `problem` is a channel's "multiple channel heads" that the channel had before with
/// at least as many heads: the message names the heads, so an edit that mends part of it (three
/// heads become two) or renames one changes the text without making anything worse.
fn no_more_heads(old: &BTreeSet<String>, problem: &str) -> bool {
    const HEADS: &str = "multiple channel heads found in graph: ";
    let Some(at) = problem.find(HEADS) else {
        return false;
    };
    let (path, heads) = (
        &problem[..at],
        problem[at + HEADS.len()..].split(", ").count(),
    );
    old.iter().any(|o| {
        o.strip_prefix(path)
            .and_then(|rest| rest.strip_prefix(HEADS))
            .is_some_and(|before| before.split(", ").count() >= heads)
    })
}

/// Checks `after` against `before` (the same file before the edit).
pub fn check(before: &Document, after: &Document) -> Findings {
    let mut findings = Findings::default();
    let old = problems(before);
    for p in problems(after) {
        if !old.contains(&p) && !no_more_heads(&old, &p) {
            findings.errors.push(p);
        }
    }
    if before.kind == Kind::Basic {
        orphans(before, after, &mut findings.warnings);
    }
    let mut after = after.clone();
    for c in channels(&mut after) {
        let empty = c
            .get("entries")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if empty {
            let name = c.get("name").and_then(Value::as_str).unwrap_or_default();
            findings.warnings.push(empty_channel_warning(name));
        }
    }
    findings
}

/// Warns of bundles a basic template's channels no longer list while its `olm.bundle` entries
/// stay as they were: rendered, such a bundle is in no channel, which opm validate refuses. The
/// template cannot tell which entry is the bundle's (entries name images, not bundles), so the
/// edit cannot drop it by itself.
fn orphans(before: &Document, after: &Document, warnings: &mut Vec<String>) {
    let listed = |d: &Document| -> BTreeSet<String> {
        let mut d = d.clone();
        channels(&mut d)
            .iter()
            .filter_map(|c| c.get("entries").and_then(Value::as_array))
            .flatten()
            .filter_map(|e| e["name"].as_str().map(str::to_owned))
            .collect()
    };
    let bundle_entries = |d: &Document| {
        d.docs
            .iter()
            .filter_map(|t| get(t, "entries").and_then(Value::as_array))
            .flatten()
            .filter(|e| e["schema"] == "olm.bundle")
            .count()
    };
    let kept = bundle_entries(after);
    if kept == 0 || kept < bundle_entries(before) {
        return;
    }
    let now = listed(after);
    for name in listed(before).difference(&now) {
        warnings.push(format!(
            "bundle {} is in no channel now, but its olm.bundle entry still renders it: opm validate fails with `bundle {} not found in any channel entries` unless that entry goes too (remove-bundle --image IMAGE)",
            olm_goenc::quote(name),
            olm_goenc::quote(name)
        ));
    }
}

/// Every validation problem of `doc` as one line each (the tree's path joined with ` > `).
fn problems(doc: &Document) -> BTreeSet<String> {
    let has_bundles = doc.docs.iter().any(|d| d["schema"] == "olm.bundle");
    let stream = match doc.kind {
        Kind::Fbc if has_bundles => doc
            .docs
            .iter()
            .map(|d| format!("{d}\n"))
            .collect::<String>(),
        Kind::Fbc => stand_in(&doc.docs),
        Kind::Basic => stand_in(
            doc.docs
                .iter()
                .filter_map(|d| get(d, "entries").and_then(Value::as_array))
                .flatten(),
        ),
        Kind::Semver => return BTreeSet::new(),
    };
    let catalog = match olm_catalog::load::load_bytes(stream.as_bytes(), "edited") {
        Ok(c) => c,
        Err(e) => return BTreeSet::from([e.to_string()]),
    };
    match olm_catalog::validate::validate(&catalog) {
        Ok(()) => BTreeSet::new(),
        Err(olm_catalog::validate::ValidationError::Structure(s)) => BTreeSet::from([s]),
        Err(olm_catalog::validate::ValidationError::Tree(node)) => {
            let mut out = BTreeSet::new();
            leaves(&node, &mut Vec::new(), &mut out);
            out
        }
    }
}

fn leaves<'n>(
    node: &'n olm_catalog::validate::Node,
    path: &mut Vec<&'n str>,
    out: &mut BTreeSet<String>,
) {
    path.push(&node.message);
    if node.children.is_empty() {
        out.insert(path.join(LEVEL));
    }
    for c in &node.children {
        leaves(c, path, out);
    }
    path.pop();
}

/// A catalog standing in for a graph without bundles (a basic template's channels, or a
/// catalog file holding only packages and channels): its packages and channels, and a bundle (of
/// a made-up, distinct version and image) for every name its channels list.
fn stand_in<'v>(blobs: impl IntoIterator<Item = &'v Value>) -> String {
    let blobs: Vec<&Value> = blobs
        .into_iter()
        .filter(|b| b["schema"] == "olm.package" || b["schema"] == "olm.channel")
        .collect();
    let mut names: BTreeSet<(String, String)> = BTreeSet::new();
    for b in &blobs {
        if b["schema"] == "olm.channel" {
            let package = b["package"].as_str().unwrap_or_default();
            for e in b["entries"].as_array().into_iter().flatten() {
                if let Some(n) = e["name"].as_str() {
                    names.insert((package.to_owned(), n.to_owned()));
                }
            }
        }
    }
    let mut out: String = blobs.iter().map(|b| format!("{b}\n")).collect();
    for (i, (package, name)) in names.iter().enumerate() {
        let bundle = json!({"schema": "olm.bundle", "package": package, "name": name,
            "image": format!("stand-in.example.com/bundle:{i}"),
            "properties": [{"type": "olm.package", "value": {"packageName": package, "version": format!("0.0.{i}")}}]});
        out.push_str(&format!("{bundle}\n"));
    }
    out
}

#[cfg(test)]
mod tests;
