//! PackageManifests (`packages.operators.coreos.com/v1`, served by upstream's packageserver):
//! how a catalog's package is shown to users who browse operators (`kubectl get
//! packagemanifests`, consoles), built from what the registry API says of it.
//!
//! Upstream: `pkg/package-server/provider/registry.go` (`newPackageManifest`, the labels,
//! `setDefaultOsArchLabels`), `pkg/package-server/apis/operators/packagemanifest.go`
//! (`CreateCSVDescription`, `GetImages`), `pkg/package-server/storage/` (what a list or get
//! answers, the Table printer).
//!
//! Deterministic where upstream is not: `relatedImages` is sorted (upstream walks a Go map), and
//! entries of equal version keep the registry's order.

use std::collections::BTreeMap;

use olm_k8s::LabelSelector;
use olm_version::blang::Version;
use serde_json::{Map, Value, json};

/// The API group and version.
pub const API_VERSION: &str = "packages.operators.coreos.com/v1";
/// The kind.
pub const KIND: &str = "PackageManifest";
/// The list kind.
pub const LIST_KIND: &str = "PackageManifestList";
/// Label prefix of the operating systems a package supports.
pub const OS_LABEL_PREFIX: &str = "operatorframework.io/os";
/// Label prefix of the architectures a package supports.
pub const ARCH_LABEL_PREFIX: &str = "operatorframework.io/arch";
/// What a package without any operating system label is taken to support.
pub const DEFAULT_OS_LABEL: &str = "operatorframework.io/os.linux";
/// What a package without any architecture label is taken to support.
pub const DEFAULT_ARCH_LABEL: &str = "operatorframework.io/arch.amd64";
/// The value of a supported os/arch label.
pub const SUPPORTED: &str = "supported";

/// The CatalogSource a package comes from.
#[derive(Debug, Clone, Default)]
pub struct Catalog<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its namespace.
    pub namespace: &'a str,
    /// `spec.displayName`.
    pub display_name: &'a str,
    /// `spec.publisher`.
    pub publisher: &'a str,
    /// Its labels, which every manifest of it carries.
    pub labels: BTreeMap<String, String>,
    /// Its `metadata.creationTimestamp` (RFC 3339), the manifests' own.
    pub creation_timestamp: Option<&'a str>,
}

/// One channel of a package as the registry serves it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Channel {
    /// Its name.
    pub name: String,
    /// The CSV at its head.
    pub head: String,
    /// The head bundle's `csvJson`; `None` when the registry did not give it (the channel is then
    /// left out, as upstream leaves out a channel whose bundle cannot be read).
    pub csv_json: Option<String>,
    /// Its bundles (not deprecated ones), in any order.
    pub entries: Vec<ChannelEntry>,
    /// Its deprecation message.
    pub deprecation: Option<String>,
}

/// A bundle of a channel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelEntry {
    /// Its CSV name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its deprecation message.
    pub deprecation: Option<String>,
}

/// A package as the registry serves it.
#[derive(Debug, Clone, Copy)]
pub struct Package<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its default channel.
    pub default_channel: &'a str,
    /// Its deprecation message.
    pub deprecation: Option<&'a str>,
    /// Its channels.
    pub channels: &'a [Channel],
}

/// Why a package has no manifest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// No channel's head could be read (upstream's words).
    #[error("packagemanifest has no valid channels")]
    NoValidChannels,
}

fn deprecation(message: Option<&str>) -> Option<Value> {
    message.map(|m| json!({"message": m}))
}

fn str_at<'v>(v: &'v Value, path: &[&str]) -> &'v str {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn array_at<'v>(v: &'v Value, path: &[&str]) -> &'v [Value] {
    path.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Inserts `key` unless `value` is what Go's `omitempty` leaves out.
fn put(out: &mut Map<String, Value>, key: &str, value: Value) {
    if !olm_goenc::json::omitted_when_empty(&value) {
        out.insert(key.to_owned(), value);
    }
}

/// Only the fields listed, each as Go's `omitempty` writes it except `always`.
fn pick(v: &Value, fields: &[&str], always: &[&str]) -> Value {
    let mut out = Map::new();
    for f in fields {
        let value = v.get(*f).cloned().unwrap_or(Value::Null);
        if always.contains(f) {
            let value = if value.is_null() { json!("") } else { value };
            out.insert((*f).to_owned(), value);
        } else {
            put(&mut out, f, value);
        }
    }
    Value::Object(out)
}

fn app_link(v: Option<&Value>) -> Value {
    pick(v.unwrap_or(&Value::Null), &["name", "url"], &[])
}

/// `spec.version` as `OperatorVersion` writes it (`0.0.0` when unset); `None` when it is not
/// semver, which makes upstream's decoding of the CSV, hence the channel, fail.
fn operator_version(csv: &Value) -> Option<String> {
    match csv.get("spec").and_then(|s| s.get("version")) {
        None | Some(Value::Null) => Some("0.0.0".to_owned()),
        Some(Value::String(s)) if s.is_empty() => Some("0.0.0".to_owned()),
        Some(Value::String(s)) => Version::parse(s).ok().map(|v| v.to_string()),
        Some(_) => None,
    }
}

/// The images a CSV names: its Deployments' containers and init containers and its
/// `relatedImages` (upstream's `GetImages`), sorted.
pub fn images(csv: &Value) -> Vec<String> {
    let mut out = std::collections::BTreeSet::new();
    if str_at(csv, &["spec", "install", "strategy"]) == "deployment" {
        for d in array_at(csv, &["spec", "install", "spec", "deployments"]) {
            for list in ["containers", "initContainers"] {
                for c in array_at(d, &["spec", "template", "spec", list]) {
                    out.insert(str_at(c, &["image"]).to_owned());
                }
            }
        }
    }
    for r in array_at(csv, &["spec", "relatedImages"]) {
        out.insert(str_at(r, &["image"]).to_owned());
    }
    out.into_iter().collect()
}

/// The `currentCSVDesc` of a channel whose head is `csv` (upstream's `CreateCSVDescription`,
/// with API descriptions cut to their names, kinds and texts to keep responses small).
pub fn csv_description(csv: &Value, version: &str) -> Value {
    let spec = csv.get("spec").unwrap_or(&Value::Null);
    let mut out = Map::new();
    put(
        &mut out,
        "displayName",
        spec.get("displayName").cloned().unwrap_or_default(),
    );
    let icons: Vec<Value> = array_at(spec, &["icon"])
        .iter()
        .map(|i| pick(i, &["base64data", "mediatype"], &[]))
        .collect();
    put(&mut out, "icon", Value::Array(icons));
    out.insert("version".to_owned(), json!(version));
    out.insert("provider".to_owned(), app_link(spec.get("provider")));
    put(
        &mut out,
        "annotations",
        csv.get("metadata")
            .and_then(|m| m.get("annotations"))
            .cloned()
            .unwrap_or_default(),
    );
    put(
        &mut out,
        "keywords",
        spec.get("keywords").cloned().unwrap_or_default(),
    );
    let links: Vec<Value> = array_at(spec, &["links"])
        .iter()
        .map(|l| app_link(Some(l)))
        .collect();
    put(&mut out, "links", Value::Array(links));
    let maintainers: Vec<Value> = array_at(spec, &["maintainers"])
        .iter()
        .map(|m| pick(m, &["name", "email"], &[]))
        .collect();
    put(&mut out, "maintainers", Value::Array(maintainers));
    put(
        &mut out,
        "maturity",
        spec.get("maturity").cloned().unwrap_or_default(),
    );
    put(
        &mut out,
        "description",
        spec.get("description").cloned().unwrap_or_default(),
    );
    put(
        &mut out,
        "installModes",
        spec.get("installModes").cloned().unwrap_or_default(),
    );
    let described = |key: &str, fields: &[&str], always: &[&str]| {
        let mut m = Map::new();
        for side in ["owned", "required"] {
            let list: Vec<Value> = array_at(spec, &[key, side])
                .iter()
                .map(|d| pick(d, fields, always))
                .collect();
            put(&mut m, side, Value::Array(list));
        }
        Value::Object(m)
    };
    out.insert(
        "customresourcedefinitions".to_owned(),
        described(
            "customresourcedefinitions",
            &["name", "version", "kind", "displayName", "description"],
            &["name", "version", "kind"],
        ),
    );
    out.insert(
        "apiservicedefinitions".to_owned(),
        described(
            "apiservicedefinitions",
            &[
                "group",
                "version",
                "kind",
                "name",
                "displayName",
                "description",
            ],
            &["group", "version", "kind", "name"],
        ),
    );
    let native: Vec<Value> = array_at(spec, &["nativeAPIs"])
        .iter()
        .map(|g| {
            pick(
                g,
                &["group", "version", "kind"],
                &["group", "version", "kind"],
            )
        })
        .collect();
    put(&mut out, "nativeApis", Value::Array(native));
    put(
        &mut out,
        "minKubeVersion",
        spec.get("minKubeVersion").cloned().unwrap_or_default(),
    );
    put(
        &mut out,
        "relatedImages",
        Value::Array(images(csv).into_iter().map(Value::String).collect()),
    );
    Value::Object(out)
}

/// Adds `operatorframework.io/os.linux` and `operatorframework.io/arch.amd64` (`supported`)
/// when no label of that prefix is there: an operator that says nothing runs on linux/amd64.
pub fn default_os_arch(labels: &mut BTreeMap<String, String>) {
    let has = |prefix: &str| labels.keys().any(|k| k.starts_with(prefix));
    let (os, arch) = (has(OS_LABEL_PREFIX), has(ARCH_LABEL_PREFIX));
    if !os {
        labels.insert(DEFAULT_OS_LABEL.to_owned(), SUPPORTED.to_owned());
    }
    if !arch {
        labels.insert(DEFAULT_ARCH_LABEL.to_owned(), SUPPORTED.to_owned());
    }
}

/// The entries of a channel, newest version first (a version that is not semver counts as
/// `0.0.0`, as upstream).
fn sorted_entries(entries: &[ChannelEntry]) -> Value {
    if entries.is_empty() {
        // Upstream's nil slice.
        return Value::Null;
    }
    let zero = Version::parse("0.0.0").ok();
    let mut keyed: Vec<(Option<Version>, &ChannelEntry)> = entries
        .iter()
        .map(|e| (Version::parse(&e.version).ok().or_else(|| zero.clone()), e))
        .collect();
    keyed.sort_by(|a, b| b.0.cmp(&a.0));
    Value::Array(
        keyed
            .into_iter()
            .map(|(_, e)| {
                let mut m = Map::new();
                m.insert("name".to_owned(), json!(e.name));
                put(&mut m, "version", json!(e.version));
                if let Some(d) = deprecation(e.deprecation.as_deref()) {
                    m.insert("deprecation".to_owned(), d);
                }
                Value::Object(m)
            })
            .collect(),
    )
}

/// The PackageManifest of `package` from `catalog`, as upstream's packageserver builds it.
///
/// Flow: channels are taken in name order; a channel whose head CSV is missing or does not
/// decode is left out (and when it was the default, the first remaining channel becomes the
/// default). `status.provider` and the `provider`/`provider-url` labels come from the default
/// channel's head, or the first readable channel before it is seen. Labels are the catalog's,
/// then `catalog`, `catalog-namespace`, `provider`, `provider-url`, then every label of the
/// default channel's head CSV (the first readable one when the default is not), then the
/// linux/amd64 defaults ([`default_os_arch`]).
///
/// Errors: [`Error::NoValidChannels`] when no channel is left.
pub fn build(catalog: &Catalog<'_>, package: Package<'_>) -> Result<Value, Error> {
    let mut channels: Vec<&Channel> = package.channels.iter().collect();
    channels.sort_by(|a, b| a.name.cmp(&b.name));
    let mut labels = catalog.labels.clone();
    labels.insert("catalog".to_owned(), catalog.name.to_owned());
    labels.insert("catalog-namespace".to_owned(), catalog.namespace.to_owned());
    let mut default_channel = package.default_channel.to_owned();
    let mut provider = json!({});
    let mut provider_set = false;
    let mut default_elided = false;
    let mut default_csv: Option<Value> = None;
    let mut out_channels = Vec::new();
    for ch in channels {
        let csv = ch
            .csv_json
            .as_deref()
            .and_then(|j| serde_json::from_str::<Value>(j).ok())
            .filter(Value::is_object);
        let Some((csv, version)) = csv.and_then(|c| operator_version(&c).map(|v| (c, v))) else {
            default_elided = default_elided || ch.name == default_channel;
            continue;
        };
        let is_default = ch.name == default_channel;
        if (is_default && !default_channel.is_empty()) || !provider_set {
            provider = app_link(csv.get("spec").and_then(|s| s.get("provider")));
            labels.insert(
                "provider".to_owned(),
                str_at(&provider, &["name"]).to_owned(),
            );
            labels.insert(
                "provider-url".to_owned(),
                str_at(&provider, &["url"]).to_owned(),
            );
            provider_set = true;
        }
        let mut entry = Map::new();
        entry.insert("name".to_owned(), json!(ch.name));
        entry.insert(
            "currentCSV".to_owned(),
            json!(str_at(&csv, &["metadata", "name"])),
        );
        entry.insert("currentCSVDesc".to_owned(), csv_description(&csv, &version));
        if let Some(d) = deprecation(ch.deprecation.as_deref()) {
            entry.insert("deprecation".to_owned(), d);
        }
        entry.insert("entries".to_owned(), sorted_entries(&ch.entries));
        out_channels.push(Value::Object(entry));
        if default_csv.is_none() || is_default {
            default_csv = Some(csv);
        }
    }
    let Some(first) = out_channels.first() else {
        return Err(Error::NoValidChannels);
    };
    if default_elided {
        default_channel = str_at(first, &["name"]).to_owned();
    }
    if let Some(Value::Object(csv_labels)) = default_csv
        .as_ref()
        .and_then(|c| c.get("metadata"))
        .and_then(|m| m.get("labels"))
    {
        for (k, v) in csv_labels {
            if let Some(v) = v.as_str() {
                labels.insert(k.clone(), v.to_owned());
            }
        }
    }
    default_os_arch(&mut labels);
    let mut status = Map::new();
    status.insert("catalogSource".to_owned(), json!(catalog.name));
    status.insert(
        "catalogSourceDisplayName".to_owned(),
        json!(catalog.display_name),
    );
    status.insert(
        "catalogSourcePublisher".to_owned(),
        json!(catalog.publisher),
    );
    status.insert(
        "catalogSourceNamespace".to_owned(),
        json!(catalog.namespace),
    );
    status.insert("provider".to_owned(), provider);
    status.insert("packageName".to_owned(), json!(package.name));
    if let Some(d) = deprecation(package.deprecation) {
        status.insert("deprecation".to_owned(), d);
    }
    status.insert("channels".to_owned(), Value::Array(out_channels));
    status.insert("defaultChannel".to_owned(), json!(default_channel));
    Ok(json!({
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": package.name,
            "namespace": catalog.namespace,
            "labels": labels,
            "creationTimestamp": catalog.creation_timestamp,
        },
        "spec": {},
        "status": Value::Object(status),
    }))
}

/// What a list (or get) asks for.
#[derive(Debug, Clone, Default)]
pub struct Query<'a> {
    /// The request's namespace; `None` for all namespaces.
    pub namespace: Option<&'a str>,
    /// The namespace whose catalogs every namespace sees.
    pub global_namespace: &'a str,
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `metadata.name` from `fieldSelector`, or the name of a get.
    pub name: Option<&'a str>,
}

/// Why a field selector is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldSelectorError {
    /// A field other than `metadata.name`, or not an exact match (upstream's words).
    #[error("field label not supported: {0}")]
    Unsupported(String),
}

/// The name a `fieldSelector` requires: only `metadata.name=` (or `==`) is supported, as upstream.
pub fn field_selector_name(selector: &str) -> Result<Option<String>, FieldSelectorError> {
    let mut name = None;
    for part in selector.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (field, value, exact) = if let Some((f, v)) = part.split_once("!=") {
            (f, v, false)
        } else if let Some((f, v)) = part.split_once("==") {
            (f, v, true)
        } else if let Some((f, v)) = part.split_once('=') {
            (f, v, true)
        } else {
            (part, "", false)
        };
        if field.trim() != "metadata.name" || !exact {
            return Err(FieldSelectorError::Unsupported(field.trim().to_owned()));
        }
        name = Some(value.trim().to_owned());
    }
    Ok(name)
}

/// The manifests a request sees, in the order given: all of them for all namespaces, else those
/// of the namespace plus those of the global namespace, each shown in the requested namespace;
/// filtered by labels and name; icons stripped (upstream serves them only through the icon
/// subresource).
pub fn visible<'m>(
    manifests: impl IntoIterator<Item = &'m Value>,
    query: &Query<'_>,
) -> Vec<Value> {
    let mut out = Vec::new();
    for m in manifests.into_iter().filter(|m| matches(m, query)) {
        let mut m = m.clone();
        if let Some(ns) = query.namespace {
            m["metadata"]["namespace"] = json!(ns);
        }
        if let Some(Value::Array(channels)) = m.pointer_mut("/status/channels") {
            for c in channels {
                if let Some(Value::Object(desc)) = c.get_mut("currentCSVDesc") {
                    desc.remove("icon");
                }
            }
        }
        out.push(m);
    }
    out
}

/// Whether `query` selects `manifest` (as stored, before it is shown in the requested
/// namespace).
pub fn matches(manifest: &Value, query: &Query<'_>) -> bool {
    let namespace = str_at(manifest, &["metadata", "namespace"]);
    if let Some(ns) = query.namespace
        && namespace != ns
        && namespace != query.global_namespace
    {
        return false;
    }
    if query
        .name
        .is_some_and(|n| str_at(manifest, &["metadata", "name"]) != n)
    {
        return false;
    }
    let labels: BTreeMap<String, String> = manifest
        .get("metadata")
        .and_then(|md| md.get("labels"))
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default();
    query.labels.matches(&labels)
}

/// What the `icon` subresource answers (upstream's `LogoStorage`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icon {
    /// The image.
    pub data: Vec<u8>,
    /// Its media type.
    pub media_type: String,
    /// `"<package>.<channel>.<csv>"` (quotes included), empty for the default icon.
    pub etag: String,
}

/// The icon shown for a package whose default channel head has none: a plain operator glyph
/// (upstream serves its own logo there).
const DEFAULT_ICON: &str = r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect x="8" y="8" width="48" height="48" rx="10" fill="#4a6fa5"/><circle cx="32" cy="32" r="12" fill="none" stroke="#fff" stroke-width="5"/></svg>"##;

/// The icon of `manifest`: the first icon of its default channel's head, base64-decoded (an
/// undecodable one gives the bytes that did decode, as Go's streaming decoder does, here none),
/// else [`DEFAULT_ICON`] as `image/svg+xml`.
pub fn icon(manifest: &Value) -> Icon {
    let default_channel = str_at(manifest, &["status", "defaultChannel"]);
    let channel = manifest
        .pointer("/status/channels")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c["name"] == default_channel);
    if let Some(c) = channel
        && let Some(first) = c
            .pointer("/currentCSVDesc/icon")
            .and_then(Value::as_array)
            .and_then(|i| i.first())
    {
        use base64::Engine as _;
        let data = first["base64data"].as_str().unwrap_or_default();
        return Icon {
            data: base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .unwrap_or_default(),
            media_type: first["mediatype"].as_str().unwrap_or_default().to_owned(),
            etag: format!(
                "\"{}.{}.{}\"",
                str_at(manifest, &["metadata", "name"]),
                default_channel,
                c["currentCSV"].as_str().unwrap_or_default()
            ),
        };
    }
    Icon {
        data: DEFAULT_ICON.as_bytes().to_vec(),
        media_type: "image/svg+xml".to_owned(),
        etag: String::new(),
    }
}

/// A list response.
pub fn list(items: Vec<Value>) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": LIST_KIND,
        "metadata": {},
        "items": items,
    })
}

/// How much of each object a Table row carries (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// Nothing.
    None,
    /// Its metadata, as `PartialObjectMetadata` (kubectl's default).
    #[default]
    Metadata,
    /// All of it.
    Object,
}

const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const CREATION_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The `meta.k8s.io/v1` Table of `items` (upstream's printer: Name, Catalog — the catalog's
/// display name — and Age), ages measured at `now` (Unix seconds).
pub fn table(items: &[Value], now: i64, include: IncludeObject) -> Value {
    let rows: Vec<Value> = items
        .iter()
        .map(|m| {
            let age = str_at(m, &["metadata", "creationTimestamp"]);
            let age = parse_rfc3339(age)
                .map_or_else(|| "<unknown>".to_owned(), |t| human_duration(now - t));
            let mut row = json!({"cells": [
                str_at(m, &["metadata", "name"]),
                str_at(m, &["status", "catalogSourceDisplayName"]),
                age,
            ]});
            match include {
                IncludeObject::None => {}
                IncludeObject::Metadata => {
                    row["object"] = json!({
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": m.get("metadata").cloned().unwrap_or_default(),
                    });
                }
                IncludeObject::Object => row["object"] = m.clone(),
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": [
            {"name": "Name", "type": "string", "format": "name", "description": NAME_DOC, "priority": 0},
            {"name": "Catalog", "type": "string", "format": "", "description": "The source catalog for this package", "priority": 0},
            {"name": "Age", "type": "string", "format": "", "description": CREATION_DOC, "priority": 0},
        ],
        "rows": rows,
    })
}

/// Seconds since the Unix epoch of an RFC 3339 UTC time as the API server writes it
/// (`2006-01-02T15:04:05Z`).
fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, mo, d, h, mi, se) = (
        n(0..4)?,
        n(5..7)?,
        n(8..10)?,
        n(11..13)?,
        n(14..16)?,
        n(17..19)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    // Days from civil (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + se)
}

/// apimachinery's `duration.HumanDuration` of `secs` seconds.
pub fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".to_owned();
    }
    if secs < 0 {
        return "0s".to_owned();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        let s = secs % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    //! Vectors of upstream's `pkg/package-server/provider/registry_test.go`
    //! (`TestToPackageManifest`, `TestPackageManifestChannelsDisplayOrder`,
    //! `TestRegistryProviderListLabels`) and `provider/labels_test.go`, with a CSV cut down to the
    //! fields they look at.

    use super::*;

    /// Upstream's `TestLogoStorageConnect` and `TestLogoStorageConnectDefaultIcon`
    /// (`pkg/package-server/storage/subresources_test.go`).
    #[test]
    fn icons_come_from_the_default_channel_head() {
        let manifest = |icon: Value| {
            json!({"metadata": {"name": "pkg-a"}, "status": {"defaultChannel": "stable", "channels": [
                {"name": "alpha", "currentCSV": "csv-b", "currentCSVDesc": {"icon": [{"base64data": "YWxwaGE=", "mediatype": "image/png"}]}},
                {"name": "stable", "currentCSV": "csv-a", "currentCSVDesc": {"icon": icon}}]}})
        };
        let got = icon(&manifest(
            json!([{"base64data": "aWNvbg==", "mediatype": "image/png"}]),
        ));
        assert_eq!(got.data, b"icon");
        assert_eq!(got.media_type, "image/png");
        assert_eq!(got.etag, "\"pkg-a.stable.csv-a\"");
        let default = icon(&manifest(json!([])));
        assert_eq!(default.media_type, "image/svg+xml");
        assert!(default.data.starts_with(b"<svg"));
        assert_eq!(default.etag, "");
    }

    /// An etcd CSV as upstream's vectors use (`etcdCSVJSON`), shortened; `labels` are its
    /// metadata labels.
    fn etcd_csv(name: &str, version: &str, labels: Value) -> String {
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "ClusterServiceVersion",
            "metadata": {"name": name, "namespace": "placeholder", "labels": labels,
                "annotations": {"tectonic-visibility": "ocs"}},
            "spec": {
                "displayName": "etcd",
                "version": version,
                "provider": {"name": "CoreOS, Inc"},
                "maturity": "alpha",
                "keywords": ["etcd", "key value"],
                "links": [{"name": "Blog", "url": "https://coreos.com/etcd"}],
                "maintainers": [{"email": "support@coreos.com", "name": "CoreOS, Inc"}],
                "icon": [{"base64data": "iVBOR", "mediatype": "image/png"}],
                "installModes": [{"type": "OwnNamespace", "supported": true}],
                "customresourcedefinitions": {"owned": [{
                    "name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2",
                    "kind": "EtcdCluster", "displayName": "etcd Cluster",
                    "description": "Represents a cluster of etcd nodes.",
                    "specDescriptors": [{"path": "size", "displayName": "Size"}],
                    "resources": [{"kind": "Service", "version": "v1"}],
                }]},
                "install": {"strategy": "deployment", "spec": {"deployments": [{
                    "name": "etcd-operator",
                    "spec": {"template": {"spec": {"containers": [
                        {"name": "etcd-operator", "image": "quay.io/coreos/etcd-operator@sha256:c0301e"},
                        {"name": "etcd-backup-operator", "image": "quay.io/coreos/etcd-operator@sha256:c0301e"},
                    ]}}},
                }]}},
                "relatedImages": [{"name": "x", "image": "quay.io/coreos/etcd@sha256:aaa"}],
            },
        })
        .to_string()
    }

    fn catalog() -> Catalog<'static> {
        Catalog {
            name: "cool-operators",
            namespace: "ns",
            ..Catalog::default()
        }
    }

    fn channel(name: &str, head: &str, csv: Option<String>) -> Channel {
        Channel {
            name: name.to_owned(),
            head: head.to_owned(),
            csv_json: csv,
            ..Channel::default()
        }
    }

    fn labels_of(m: &Value) -> BTreeMap<String, String> {
        serde_json::from_value(m["metadata"]["labels"].clone()).unwrap_or_default()
    }

    fn base_labels() -> BTreeMap<String, String> {
        [
            ("catalog", "cool-operators"),
            ("catalog-namespace", "ns"),
            ("provider", "CoreOS, Inc"),
            ("provider-url", ""),
            (DEFAULT_ARCH_LABEL, SUPPORTED),
            (DEFAULT_OS_LABEL, SUPPORTED),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    fn package<'a>(default: &'a str, channels: &'a [Channel]) -> Package<'a> {
        Package {
            name: "etcd",
            default_channel: default,
            deprecation: None,
            channels,
        }
    }

    #[test]
    fn good_bundle() {
        let channels = [channel(
            "alpha",
            "etcdoperator.v0.9.2",
            Some(etcd_csv("etcdoperator.v0.9.2", "0.9.2", json!({}))),
        )];
        let m = build(&catalog(), package("alpha", &channels)).unwrap();
        assert_eq!(labels_of(&m), base_labels());
        assert_eq!(m["apiVersion"], API_VERSION);
        assert_eq!(m["kind"], KIND);
        assert_eq!(m["metadata"]["name"], "etcd");
        assert_eq!(m["metadata"]["namespace"], "ns");
        let s = &m["status"];
        assert_eq!(s["catalogSource"], "cool-operators");
        assert_eq!(s["catalogSourceNamespace"], "ns");
        assert_eq!(s["catalogSourceDisplayName"], "");
        assert_eq!(s["packageName"], "etcd");
        assert_eq!(s["provider"], json!({"name": "CoreOS, Inc"}));
        assert_eq!(s["defaultChannel"], "alpha");
        assert!(s.get("deprecation").is_none());
        let ch = &s["channels"][0];
        assert_eq!(ch["name"], "alpha");
        assert_eq!(ch["currentCSV"], "etcdoperator.v0.9.2");
        assert_eq!(ch["entries"], Value::Null);
        let d = &ch["currentCSVDesc"];
        assert_eq!(d["displayName"], "etcd");
        assert_eq!(d["version"], "0.9.2");
        assert_eq!(d["provider"], json!({"name": "CoreOS, Inc"}));
        assert_eq!(d["annotations"], json!({"tectonic-visibility": "ocs"}));
        assert_eq!(d["maturity"], "alpha");
        assert_eq!(d["keywords"], json!(["etcd", "key value"]));
        assert_eq!(
            d["links"],
            json!([{"name": "Blog", "url": "https://coreos.com/etcd"}])
        );
        assert_eq!(
            d["maintainers"],
            json!([{"name": "CoreOS, Inc", "email": "support@coreos.com"}])
        );
        assert_eq!(
            d["icon"],
            json!([{"base64data": "iVBOR", "mediatype": "image/png"}])
        );
        assert_eq!(
            d["installModes"],
            json!([{"type": "OwnNamespace", "supported": true}])
        );
        // Descriptions keep only names, kinds and texts.
        assert_eq!(
            d["customresourcedefinitions"],
            json!({"owned": [{"name": "etcdclusters.etcd.database.coreos.com",
                "version": "v1beta2", "kind": "EtcdCluster", "displayName": "etcd Cluster",
                "description": "Represents a cluster of etcd nodes."}]})
        );
        assert_eq!(d["apiservicedefinitions"], json!({}));
        assert_eq!(
            d["relatedImages"],
            json!([
                "quay.io/coreos/etcd-operator@sha256:c0301e",
                "quay.io/coreos/etcd@sha256:aaa"
            ])
        );
        assert!(d.get("nativeApis").is_none() && d.get("minKubeVersion").is_none());
    }

    #[test]
    fn extra_labels_of_the_head_csv() {
        let channels = [channel(
            "alpha",
            "etcdoperator.v0.9.2",
            Some(etcd_csv(
                "etcdoperator.v0.9.2",
                "0.9.2",
                json!({"test": "label"}),
            )),
        )];
        let m = build(&catalog(), package("alpha", &channels)).unwrap();
        let mut want = base_labels();
        want.insert("test".to_owned(), "label".to_owned());
        assert_eq!(labels_of(&m), want);
    }

    #[test]
    fn missing_bundle_elides_the_channel() {
        let channels = [
            channel(
                "alpha",
                "etcdoperator.v0.9.2",
                Some(etcd_csv("etcdoperator.v0.9.2", "0.9.2", json!({}))),
            ),
            channel("missing-bundle", "etcdoperator.v0.9.1", None),
        ];
        let m = build(&catalog(), package("alpha", &channels)).unwrap();
        assert_eq!(m["status"]["channels"].as_array().map(Vec::len), Some(1));
        assert_eq!(m["status"]["defaultChannel"], "alpha");
        // MissingBundle/DefaultChannelElided: the first remaining channel becomes the default.
        let m = build(&catalog(), package("missing-bundle", &channels)).unwrap();
        assert_eq!(m["status"]["defaultChannel"], "alpha");
        assert_eq!(labels_of(&m), base_labels());
        // A head that does not decode is elided as well.
        let bad = [channel("alpha", "x", Some("{".to_owned()))];
        assert_eq!(
            build(&catalog(), package("alpha", &bad)),
            Err(Error::NoValidChannels)
        );
    }

    #[test]
    fn no_valid_channels() {
        let channels = [channel("alpha", "etcdoperator.v0.9.2", None)];
        let e = build(&catalog(), package("alpha", &channels)).unwrap_err();
        assert_eq!(e.to_string(), "packagemanifest has no valid channels");
    }

    #[test]
    fn deprecations_of_package_channel_and_entries() {
        let mut ch = channel(
            "alpha",
            "etcdoperator.v0.9.2",
            Some(etcd_csv("etcdoperator.v0.9.2", "0.9.2", json!({}))),
        );
        ch.deprecation = Some("This channel of the package is deprecated".to_owned());
        let entry = |name: &str, version: &str, dep: Option<&str>| ChannelEntry {
            name: name.to_owned(),
            version: version.to_owned(),
            deprecation: dep.map(str::to_owned),
        };
        // Out of order: the manifest lists them by version, newest first.
        ch.entries = vec![
            entry(
                "etcdoperator.v0.6.1",
                "0.6.1",
                Some("This bundle of the package is also deprecated and has a unique message"),
            ),
            entry("etcdoperator.v0.9.2", "0.9.2", None),
            entry(
                "etcdoperator.v0.9.0",
                "0.9.0",
                Some("This bundle of the package is deprecated"),
            ),
        ];
        let channels = [ch];
        let mut pkg = package("alpha", &channels);
        pkg.deprecation = Some("This package is deprecated");
        let m = build(&catalog(), pkg).unwrap();
        assert_eq!(
            m["status"]["deprecation"],
            json!({"message": "This package is deprecated"})
        );
        let c = &m["status"]["channels"][0];
        assert_eq!(
            c["deprecation"],
            json!({"message": "This channel of the package is deprecated"})
        );
        assert_eq!(
            c["entries"],
            json!([
                {"name": "etcdoperator.v0.9.2", "version": "0.9.2"},
                {"name": "etcdoperator.v0.9.0", "version": "0.9.0",
                    "deprecation": {"message": "This bundle of the package is deprecated"}},
                {"name": "etcdoperator.v0.6.1", "version": "0.6.1",
                    "deprecation": {"message": "This bundle of the package is also deprecated and has a unique message"}},
            ])
        );
    }

    #[test]
    fn channels_in_name_order_provider_from_default() {
        let mut beta_csv: Value = serde_json::from_str(&etcd_csv(
            "etcdoperator.v0.10.1",
            "0.10.1",
            json!({"beta": "yes"}),
        ))
        .unwrap();
        beta_csv["spec"]["provider"] = json!({"name": "Beta Inc", "url": "https://beta"});
        let channels = [
            channel("beta", "etcdoperator.v0.10.1", Some(beta_csv.to_string())),
            channel(
                "alpha",
                "etcdoperator.v0.9.2",
                Some(etcd_csv("etcdoperator.v0.9.2", "0.9.2", json!({}))),
            ),
        ];
        let m = build(&catalog(), package("alpha", &channels)).unwrap();
        let names: Vec<&str> = m["status"]["channels"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(names, ["alpha", "beta"]);
        assert_eq!(m["status"]["provider"], json!({"name": "CoreOS, Inc"}));
        assert_eq!(labels_of(&m), base_labels());
        // With beta the default, its provider and labels win.
        let m = build(&catalog(), package("beta", &channels)).unwrap();
        assert_eq!(
            m["status"]["provider"],
            json!({"name": "Beta Inc", "url": "https://beta"})
        );
        let l = labels_of(&m);
        assert_eq!(l["provider"], "Beta Inc");
        assert_eq!(l["provider-url"], "https://beta");
        assert_eq!(l["beta"], "yes");
    }

    #[test]
    fn os_arch_labels_replace_the_defaults() {
        // labels_test.go: a package that names any os (arch) gets no default os (arch) label.
        let channels = [channel(
            "alpha",
            "etcdoperator.v0.9.2",
            Some(etcd_csv(
                "etcdoperator.v0.9.2",
                "0.9.2",
                json!({"operatorframework.io/os.windows": "supported",
                    "operatorframework.io/arch.arm64": "supported"}),
            )),
        )];
        let m = build(&catalog(), package("alpha", &channels)).unwrap();
        let l = labels_of(&m);
        assert_eq!(
            l.get("operatorframework.io/os.windows").map(String::as_str),
            Some(SUPPORTED)
        );
        assert_eq!(
            l.get("operatorframework.io/arch.arm64").map(String::as_str),
            Some(SUPPORTED)
        );
        assert!(!l.contains_key(DEFAULT_OS_LABEL) && !l.contains_key(DEFAULT_ARCH_LABEL));
        let mut only_os: BTreeMap<String, String> = [(
            "operatorframework.io/os.linux".to_owned(),
            SUPPORTED.to_owned(),
        )]
        .into();
        default_os_arch(&mut only_os);
        assert_eq!(
            only_os.get(DEFAULT_ARCH_LABEL).map(String::as_str),
            Some(SUPPORTED)
        );
        assert_eq!(only_os.len(), 2);
    }

    #[test]
    fn catalog_labels_and_status_fields() {
        let mut c = catalog();
        c.display_name = "Cool Operators";
        c.publisher = "Cool Inc";
        c.creation_timestamp = Some("2024-01-02T03:04:05Z");
        c.labels.insert("team".to_owned(), "a".to_owned());
        let channels = [channel(
            "alpha",
            "etcdoperator.v0.9.2",
            Some(etcd_csv("etcdoperator.v0.9.2", "0.9.2", json!({}))),
        )];
        let m = build(&c, package("alpha", &channels)).unwrap();
        assert_eq!(labels_of(&m)["team"], "a");
        assert_eq!(m["metadata"]["creationTimestamp"], "2024-01-02T03:04:05Z");
        assert_eq!(m["status"]["catalogSourceDisplayName"], "Cool Operators");
        assert_eq!(m["status"]["catalogSourcePublisher"], "Cool Inc");
    }

    #[test]
    fn non_semver_version_elides_and_unset_is_zero() {
        let mut csv: Value = serde_json::from_str(&etcd_csv("a.v1", "1.0.0", json!({}))).unwrap();
        csv["spec"]["version"] = json!("not-semver");
        let bad = [channel("alpha", "a.v1", Some(csv.to_string()))];
        assert_eq!(
            build(&catalog(), package("alpha", &bad)),
            Err(Error::NoValidChannels)
        );
        csv["spec"].as_object_mut().map(|s| s.remove("version"));
        let unset = [channel("alpha", "a.v1", Some(csv.to_string()))];
        let m = build(&catalog(), package("alpha", &unset)).unwrap();
        assert_eq!(
            m["status"]["channels"][0]["currentCSVDesc"]["version"],
            "0.0.0"
        );
    }

    fn manifest(name: &str, ns: &str, labels: Value) -> Value {
        let channels = [channel(
            "alpha",
            "x.v1",
            Some(etcd_csv("x.v1", "1.0.0", labels)),
        )];
        let c = Catalog {
            name: "cat",
            namespace: ns,
            ..Catalog::default()
        };
        let mut p = package("alpha", &channels);
        p.name = name;
        build(&c, p).unwrap()
    }

    #[test]
    fn list_scoping_labels_and_names() {
        // TestRegistryProviderListLabels and the List namespace rules.
        let all = [
            manifest("etcd", "ns", json!({})),
            manifest(
                "prometheus",
                "global",
                json!({"operatorframework.io/os.windows": "supported"}),
            ),
            manifest("other", "elsewhere", json!({})),
        ];
        let q = |namespace, labels: &str, name| Query {
            namespace,
            global_namespace: "global",
            labels: LabelSelector::parse(labels).unwrap(),
            name,
        };
        let names = |v: Vec<Value>| -> Vec<(String, String)> {
            v.iter()
                .map(|m| {
                    (
                        str_at(m, &["metadata", "namespace"]).to_owned(),
                        str_at(m, &["metadata", "name"]).to_owned(),
                    )
                })
                .collect()
        };
        let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
        assert_eq!(names(visible(&all, &q(None, "", None))).len(), 3);
        assert_eq!(
            names(visible(&all, &q(Some("ns"), "", None))),
            [pair("ns", "etcd"), pair("ns", "prometheus")]
        );
        assert_eq!(
            names(visible(
                &all,
                &q(
                    Some("ns"),
                    "operatorframework.io/os.windows=supported",
                    None
                )
            )),
            [pair("ns", "prometheus")]
        );
        assert_eq!(
            names(visible(
                &all,
                &q(None, "operatorframework.io/os.linux=supported", None)
            )),
            [pair("ns", "etcd"), pair("elsewhere", "other")]
        );
        assert_eq!(
            names(visible(&all, &q(Some("global"), "", Some("prometheus")))),
            [pair("global", "prometheus")]
        );
        assert!(visible(&all, &q(Some("ns"), "", Some("other"))).is_empty());
        // Icons are never served by list or get.
        let shown = visible(&all, &q(None, "", Some("etcd")));
        assert!(
            shown[0]["status"]["channels"][0]["currentCSVDesc"]
                .get("icon")
                .is_none()
        );
        assert!(
            all[0]["status"]["channels"][0]["currentCSVDesc"]
                .get("icon")
                .is_some()
        );
    }

    #[test]
    fn field_selectors() {
        assert_eq!(field_selector_name(""), Ok(None));
        assert_eq!(
            field_selector_name("metadata.name=etcd"),
            Ok(Some("etcd".to_owned()))
        );
        assert_eq!(
            field_selector_name("metadata.name==etcd"),
            Ok(Some("etcd".to_owned()))
        );
        assert_eq!(
            field_selector_name("metadata.namespace=x")
                .unwrap_err()
                .to_string(),
            "field label not supported: metadata.namespace"
        );
        assert!(field_selector_name("metadata.name!=etcd").is_err());
    }

    #[test]
    fn table_rows() {
        let mut m = manifest("etcd", "ns", json!({}));
        m["metadata"]["creationTimestamp"] = json!("2024-01-01T00:00:00Z");
        m["status"]["catalogSourceDisplayName"] = json!("Cool Operators");
        let now = parse_rfc3339("2024-01-01T00:05:30Z").unwrap();
        let t = table(std::slice::from_ref(&m), now, IncludeObject::Metadata);
        assert_eq!(t["kind"], "Table");
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["etcd", "Cool Operators", "5m30s"])
        );
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        let cols: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["name"].as_str())
            .collect();
        assert_eq!(cols, ["Name", "Catalog", "Age"]);
        m["metadata"]["creationTimestamp"] = Value::Null;
        let t = table(&[m], now, IncludeObject::None);
        assert_eq!(t["rows"][0]["cells"][2], "<unknown>");
        assert!(t["rows"][0].get("object").is_none());
    }

    #[test]
    fn human_durations() {
        // apimachinery's duration_test.go.
        for (secs, want) in [
            (-2, "<invalid>"),
            (-1, "0s"),
            (119, "119s"),
            (120, "2m"),
            (9 * 60 + 59, "9m59s"),
            (10 * 60, "10m"),
            (3 * 3600, "3h"),
            (7 * 3600 + 59 * 60, "7h59m"),
            (47 * 3600, "47h"),
            (2 * 86400 + 3600, "2d1h"),
            (8 * 86400, "8d"),
            (2 * 365 * 86400 + 86400, "2y1d"),
            (8 * 365 * 86400, "8y"),
        ] {
            assert_eq!(human_duration(secs), want, "{secs}");
        }
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("2000-03-01T00:00:00Z"), Some(951_868_800));
        assert_eq!(parse_rfc3339("garbage"), None);
    }
}
