//! ConfigMap CatalogSources (`spec.sourceType: configmap`, or its deprecated alias `internal`):
//! a catalog written by hand into a ConfigMap, as catalog-operator's `syncConfigMap` and
//! ConfigMap registry reconciler (OLM repo `pkg/controller/operators/catalog/operator.go`,
//! `pkg/controller/registry/reconciler/configmap.go`) and operator-registry's ConfigMap loader
//! (`pkg/sqlite/configmap.go`, `pkg/sqlite/load.go`) treat it.
//!
//! The ConfigMap's data holds three YAML lists: `customResourceDefinitions`,
//! `clusterServiceVersions` and `packages` (package manifests: `packageName`, `channels` of
//! `{name, currentCSV}`, `defaultChannel`). [`catalog_blobs`] turns them into a file-based catalog
//! (an `olm.package`, its `olm.channel`s walked from each `currentCSV` along `spec.replaces`, and
//! an `olm.bundle` per CSV carrying the CSV and the CRDs it owns), which the registry API serves
//! as it serves any catalog. [`decide`] is one pass of the CatalogSource's ConfigMap step.
//!
//! Upstream builds a SQLite database in a registry Pod (`configmap-server`); olm builds the
//! catalog in its own process. The loader's messages are upstream's, including the Go
//! formatting of a nil error (`%!s(<nil>)`) in two of them, since users match on them.

use std::collections::{BTreeMap, BTreeSet};

use jiff::SignedDuration;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use olm_bundle::bundle::{Bundle, BundleObject, PACKAGE_ANNOTATION};
use olm_bundle::csv::ClusterServiceVersion;
use olm_bundle::properties::{ObjectsMode, to_olm_bundle};
use olm_v0_api::v1alpha1::{
    CatalogSource, CatalogSourceStatus, ConfigMapResourceReference, GrpcConnectionState,
    RegistryServiceStatus,
};
use serde_json::{Map, Value, json};

use crate::catalog_operator::catalogsource::{REGISTRY_SERVER_REASON, registry_service_status};
use crate::olm_operator::operatorgroup::MANAGED_LABEL;

/// The data key of the CRD list.
pub const CRD_KEY: &str = "customResourceDefinitions";
/// The data key of the CSV list.
pub const CSV_KEY: &str = "clusterServiceVersions";
/// The data key of the package manifest list.
pub const PACKAGE_KEY: &str = "packages";
/// `status.reason` when the ConfigMap cannot be read or adopted.
pub const CONFIG_MAP_REASON: &str = "ConfigMapError";
/// The most data read from one ConfigMap: the API server's own limit on a ConfigMap, so any
/// ConfigMap it stores fits; bigger data (from elsewhere) is refused before it is parsed.
pub const MAX_DATA_BYTES: usize = 1 << 20;
/// The CSV annotation giving a bundle's `skipRange`.
const SKIP_RANGE_ANNOTATION: &str = "olm.skipRange";

/// Why a ConfigMap's data is not a catalog.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentError {
    /// The data is larger than [`MAX_DATA_BYTES`].
    #[error("the configmap's data is {size} bytes, more than the {max} read")]
    TooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// What the loader found wrong, in order; shown as Kubernetes aggregates errors (one
    /// message alone, several as `[a, b]`, repeats once).
    #[error("{}", aggregate(.0))]
    Invalid(Vec<String>),
}

/// `k8s.io/apimachinery`'s aggregate error text.
fn aggregate(messages: &[String]) -> String {
    let mut seen = BTreeSet::new();
    let unique: Vec<&str> = messages
        .iter()
        .filter(|m| seen.insert(m.as_str()))
        .map(String::as_str)
        .collect();
    match unique.as_slice() {
        [one] => (*one).to_owned(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The message a source whose ConfigMap does not load gets (upstream's `configmap-server` exits
/// with it).
pub fn load_failure_message(error: &dyn std::fmt::Display) -> String {
    format!("error loading manifests from configmap: {error}")
}

/// A YAML list of the ConfigMap as JSON values, with Go's wording for what is not one.
fn yaml_list(text: &str, go_type: &str) -> Result<Vec<Value>, String> {
    let docs = olm_goenc::yamlread::parse_documents(text).map_err(|e| {
        if e.line == 0 {
            format!("error converting YAML to JSON: yaml: {}", e.message)
        } else {
            format!(
                "error converting YAML to JSON: yaml: line {}: {}",
                e.line, e.message
            )
        }
    })?;
    let wrong = |v: &Value, ty: &str| {
        let kind = match v {
            Value::Object(_) => "object",
            Value::Array(_) => "array",
            Value::String(_) => "string",
            Value::Number(_) => "number",
            Value::Bool(_) => "bool",
            Value::Null => "null",
        };
        format!("json: cannot unmarshal {kind} into Go value of type {ty}")
    };
    match docs.into_iter().next() {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => {
            let element = go_type.trim_start_matches("[]");
            match items.iter().find(|i| !i.is_object() && !i.is_null()) {
                Some(bad) => Err(wrong(bad, element)),
                None => Ok(items.into_iter().filter(Value::is_object).collect()),
            }
        }
        Some(other) => Err(wrong(&other, go_type)),
    }
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// A CRD's API as operator-registry keys it, printed as Go prints the struct.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ApiKey {
    group: String,
    version: String,
    kind: String,
    plural: String,
}

impl std::fmt::Display for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{{{} {} {} {}}}",
            self.group, self.version, self.kind, self.plural
        )
    }
}

/// One CSV of the ConfigMap with the CRDs it owns.
struct Loaded {
    csv: ClusterServiceVersion,
    crds: Vec<Value>,
}

/// The file-based catalog (`olm.package`, `olm.channel`, `olm.bundle` blobs, in that order per
/// package, packages by name) that a ConfigMap's `data` describes.
///
/// The flow follows operator-registry's loader: the size is checked; CRDs are read (a missing
/// key stops here), each version of each keyed by group, version, kind and plural (a repeat is
/// an error); CSVs are read (a missing key or a list that does not parse stops here), each
/// gathering the CRDs it owns; packages are read likewise, and each channel is walked from its
/// `currentCSV` along `spec.replaces`, CSVs skipped by one on the way joining the channel as
/// entries of their own. Problems that do not stop the load are collected and returned together.
///
/// Guarantees: no panic and no unbounded work on any input — the data is at most
/// [`MAX_DATA_BYTES`], YAML aliases are bounded by the reader, and a `replaces` cycle is
/// reported, not followed. The output is sorted, so the same data always gives the same catalog.
///
/// Caveats: a CSV no channel reaches is not served (upstream stores it, but no query returns a
/// bundle outside a channel). Upstream's loader leaves deprecated bundles (`olm.deprecated`)
/// out of channels; a ConfigMap cannot mark one, so nothing here does.
///
/// # Errors
///
/// [`ContentError::TooLarge`], or [`ContentError::Invalid`] with upstream's messages (and olm's
/// for a `currentCSV` no CSV of the ConfigMap has, where upstream reports a database error).
pub fn catalog_blobs(data: &BTreeMap<String, String>) -> Result<Vec<Value>, ContentError> {
    let size: usize = data.iter().map(|(k, v)| k.len() + v.len()).sum();
    if size > MAX_DATA_BYTES {
        return Err(ContentError::TooLarge {
            size,
            max: MAX_DATA_BYTES,
        });
    }
    let mut errs = Vec::new();
    let invalid = |mut errs: Vec<String>, e: String| {
        errs.push(e);
        ContentError::Invalid(errs)
    };
    let Some(crd_text) = data.get(CRD_KEY) else {
        return Err(invalid(
            errs,
            format!("couldn't find expected key {CRD_KEY} in configmap"),
        ));
    };
    let crd_list = yaml_list(crd_text, "[]v1beta1.CustomResourceDefinition")
        .map_err(|e| ContentError::Invalid(vec![e]))?;
    let mut crds: BTreeMap<ApiKey, Value> = BTreeMap::new();
    for crd in crd_list {
        let mut versions: Vec<String> = crd
            .pointer("/spec/versions")
            .and_then(Value::as_array)
            .map(|vs| vs.iter().map(|v| text(v, "/name").to_owned()).collect())
            .unwrap_or_default();
        if crd.pointer("/spec/versions").is_none_or(Value::is_null) {
            let single = text(&crd, "/spec/version");
            if !single.is_empty() {
                versions = vec![single.to_owned()];
            }
        }
        for version in versions {
            let key = ApiKey {
                group: text(&crd, "/spec/group").to_owned(),
                version,
                kind: text(&crd, "/spec/names/kind").to_owned(),
                plural: text(&crd, "/spec/names/plural").to_owned(),
            };
            if crds.contains_key(&key) {
                errs.push(format!(
                    "can't add the same CRD twice in one configmap: {key}"
                ));
                continue;
            }
            crds.insert(key, crd.clone());
        }
    }
    let Some(csv_text) = data.get(CSV_KEY) else {
        return Err(invalid(
            errs,
            format!("couldn't find expected key {CSV_KEY} in configmap"),
        ));
    };
    let csv_list = match yaml_list(csv_text, "[]registry.ClusterServiceVersion") {
        Ok(l) => l,
        Err(e) if e.starts_with("json:") => {
            return Err(invalid(errs, format!("error parsing CSV list: {e}")));
        }
        Err(e) => return Err(invalid(errs, format!("error loading CSV list: {e}"))),
    };
    let mut bundles: BTreeMap<String, Loaded> = BTreeMap::new();
    for raw in csv_list {
        let name = text(&raw, "/metadata/name").to_owned();
        let csv = match ClusterServiceVersion::from_value(raw) {
            Ok(c) => c,
            Err(e) => {
                errs.push(format!("error adding operator bundle {name}//: {e}"));
                continue;
            }
        };
        let mut owned = Vec::new();
        let mut complete = true;
        for o in &csv.spec.customresourcedefinitions.owned {
            let Some((plural, group)) = o.name.split_once('.') else {
                errs.push("error parsing owned name: %!s(<nil>)".to_owned());
                continue;
            };
            let key = ApiKey {
                group: group.to_owned(),
                version: o.version.clone(),
                kind: o.kind.clone(),
                plural: plural.to_owned(),
            };
            match crds.get(&key) {
                Some(crd) => {
                    if !owned.contains(crd) {
                        owned.push(crd.clone());
                    }
                }
                None => {
                    errs.push(format!(
                        "couldn't find owned CRD in crd list {key}: %!s(<nil>)"
                    ));
                    complete = false;
                }
            }
        }
        if bundles.contains_key(&name) {
            errs.push(format!(
                "error adding operator bundle {name}/{}/: UNIQUE constraint failed: operatorbundle.name",
                csv.version()
            ));
            continue;
        }
        // Upstream stores such a bundle without the CRD; olm serves the CSVs it can serve whole.
        if complete {
            bundles.insert(name, Loaded { csv, crds: owned });
        }
    }
    let Some(package_text) = data.get(PACKAGE_KEY) else {
        return Err(invalid(
            errs,
            format!("couldn't find expected key {PACKAGE_KEY} in configmap"),
        ));
    };
    let packages = match yaml_list(package_text, "[]registry.PackageManifest") {
        Ok(l) => l,
        Err(e) if e.starts_with("json:") => {
            return Err(invalid(errs, format!("error parsing package list: {e}")));
        }
        Err(e) => return Err(invalid(errs, format!("error loading package list: {e}"))),
    };
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut claimed: BTreeMap<String, String> = BTreeMap::new();
    // Each channel's currentCSV is its package's: another package's channel that replaces it
    // (a move from one package to another) ends there, its last entry's `replaces` naming it.
    let mut heads: BTreeMap<&str, &str> = BTreeMap::new();
    for manifest in &packages {
        let package = text(manifest, "/packageName");
        for (_, head) in channels_of(manifest) {
            heads.entry(head).or_insert(package);
        }
    }
    for manifest in &packages {
        let package = text(manifest, "/packageName").to_owned();
        if out.contains_key(&package) {
            errs.push(format!(
                "error loading package {package}: failed to add package {}: UNIQUE constraint failed: package.name",
                olm_goenc::quote(&package)
            ));
            continue;
        }
        let channels = channels_of(manifest);
        let default = text(manifest, "/defaultChannel");
        let default = if channels.len() == 1 && !channels.iter().any(|(n, _)| *n == default) {
            channels[0].0
        } else {
            default
        };
        let mut blobs = Vec::new();
        if channels.iter().any(|(n, _)| *n == default) {
            blobs
                .push(json!({"schema": "olm.package", "name": package, "defaultChannel": default}));
        } else {
            errs.push(format!(
                "error loading package {package}: no default channel specified for {package}"
            ));
            blobs.push(json!({"schema": "olm.package", "name": package}));
        }
        let mut members = BTreeSet::new();
        for (channel, head) in channels {
            let foreign = |csv: &str| heads.get(csv).is_some_and(|p| *p != package);
            match walk_channel(&package, channel, head, &bundles, foreign) {
                Ok(entries) => {
                    members.extend(entries.iter().map(|e| text(e, "/name").to_owned()));
                    blobs.push(json!({"schema": "olm.channel", "package": package, "name": channel, "entries": entries}));
                }
                Err(e) => errs.push(format!("error loading package {package}: {e}")),
            }
        }
        for member in members {
            if let Some(other) = claimed.get(&member) {
                errs.push(format!(
                    "error loading package {package}: bundle {member} is already in package {other}"
                ));
                continue;
            }
            claimed.insert(member.clone(), package.clone());
            let Some(loaded) = bundles.get(&member) else {
                continue;
            };
            match bundle_blob(&package, loaded) {
                Ok(b) => blobs.push(b),
                Err(e) => errs.push(format!(
                    "error adding operator bundle {member}/{}/: {e}",
                    loaded.csv.version()
                )),
            }
        }
        out.insert(package, blobs);
    }
    if !errs.is_empty() {
        return Err(ContentError::Invalid(errs));
    }
    Ok(out.into_values().flatten().collect())
}

/// A package manifest's channels: each name and its `currentCSV`.
fn channels_of(manifest: &Value) -> Vec<(&str, &str)> {
    manifest
        .get("channels")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| (text(c, "/name"), text(c, "/currentCSV")))
        .collect()
}

/// A channel's entries: `head` and every CSV it replaces in turn, each with its `skips` and
/// `skipRange`; CSVs of the ConfigMap skipped on the way as entries without edges. The walk
/// ends before a CSV that is `foreign` (another package's channel head), which stays the last
/// entry's `replaces`.
fn walk_channel(
    package: &str,
    channel: &str,
    head: &str,
    bundles: &BTreeMap<String, Loaded>,
    foreign: impl Fn(&str) -> bool,
) -> Result<Vec<Value>, String> {
    let mut entries: BTreeMap<String, Value> = BTreeMap::new();
    let mut skipped = BTreeSet::new();
    let mut seen = BTreeSet::from([head.to_owned()]);
    let mut current = head.to_owned();
    loop {
        let Some(loaded) = bundles.get(&current) else {
            return Err(if current == head {
                format!(
                    "channel {} of package {}: its currentCSV {head} is not among the configmap's clusterServiceVersions",
                    olm_goenc::quote(channel),
                    olm_goenc::quote(package)
                )
            } else {
                format!("Invalid bundle {head}, replaces nonexistent bundle {current}")
            });
        };
        let csv = &loaded.csv.raw;
        let replaces = text(csv, "/spec/replaces").to_owned();
        let skips: Vec<String> = csv
            .pointer("/spec/skips")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
        let mut entry = Map::new();
        entry.insert("name".into(), json!(current));
        if !replaces.is_empty() {
            entry.insert("replaces".into(), json!(replaces));
        }
        if !skips.is_empty() {
            entry.insert("skips".into(), json!(skips));
        }
        if let Some(range) = loaded
            .csv
            .annotations()
            .get(SKIP_RANGE_ANNOTATION)
            .filter(|r| !r.is_empty())
        {
            entry.insert("skipRange".into(), json!(range));
        }
        entries.insert(current.clone(), Value::Object(entry));
        skipped.extend(skips);
        if replaces.is_empty() || foreign(&replaces) {
            break;
        }
        if !seen.insert(replaces.clone()) {
            return Err(format!("Cycle detected, {current} replaces {replaces}"));
        }
        current = replaces;
    }
    for name in skipped {
        if bundles.contains_key(&name) && !entries.contains_key(&name) && !foreign(&name) {
            entries.insert(name.clone(), json!({"name": name}));
        }
    }
    Ok(entries.into_values().collect())
}

/// The `olm.bundle` of a CSV and its CRDs in `package`, carried inline (no image).
fn bundle_blob(package: &str, loaded: &Loaded) -> Result<Value, String> {
    let bundle = Bundle {
        package_name: package.to_owned(),
        annotations: BTreeMap::from([(PACKAGE_ANNOTATION.to_owned(), package.to_owned())]),
        csv: loaded.csv.clone(),
        csv_file: "manifests/csv.yaml".to_owned(),
        crds: loaded
            .crds
            .iter()
            .enumerate()
            .map(|(i, crd)| BundleObject {
                file: format!("manifests/crd-{i:04}.yaml"),
                object: crd.clone(),
            })
            .collect(),
        others: Vec::new(),
        properties: Vec::new(),
        properties_file: None,
        dependencies: Vec::new(),
        metadata_errors: Vec::new(),
    };
    to_olm_bundle(&bundle, "", ObjectsMode::BundleObjects).map_err(|e| e.to_string())
}

/// The ConfigMap a source names, as the shell found it.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// It exists.
    Found(ConfigMapMeta),
    /// It could not be read; the API server's message (`configmaps "x" not found`).
    Failed(String),
}

/// What [`decide`] looks at of the ConfigMap.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConfigMapMeta {
    /// Its name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// Its uid.
    pub uid: String,
    /// Its resourceVersion.
    pub resource_version: String,
    /// Its labels.
    pub labels: BTreeMap<String, String>,
    /// Its `metadata.ownerReferences`.
    pub owner_references: Vec<OwnerReference>,
}

/// What the process serves for the source now.
#[derive(Debug, Clone, PartialEq)]
pub enum Serving {
    /// Nothing.
    Nothing,
    /// The catalog of the ConfigMap version `key` ([`serving_key`]), at `address`, since
    /// `since`.
    Served {
        /// The version served.
        key: String,
        /// Where: each version gets a registry of its own, on an address of its own.
        address: String,
        /// When it started being served.
        since: Time,
    },
    /// The ConfigMap version `key` did not load; the status message.
    Failed {
        /// The version that failed.
        key: String,
        /// [`load_failure_message`] of why.
        message: String,
    },
}

/// What the connection watch last saw of a registry: the shell's dial and health check.
#[derive(Debug, Clone, PartialEq)]
pub struct Connection {
    /// The address dialled.
    pub address: String,
    /// gRPC's name of the state: `CONNECTING`, `READY` or `TRANSIENT_FAILURE`.
    pub observed: String,
    /// When it last changed (seconds).
    pub since: Time,
}

/// What the shell does after writing the status.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Nothing more this pass.
    None,
    /// Patch the ConfigMap with this merge patch (an owner reference to the source, and
    /// `olm.managed: "false"`); its `resourceVersion` makes a stale patch fail. The patched
    /// ConfigMap's new version wakes the next pass.
    Adopt(Value),
    /// Build and serve the catalog of the ConfigMap version `key`, then decide again.
    Build {
        /// [`serving_key`] of the version to serve.
        key: String,
    },
}

/// One pass's outcome: the status to write and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The whole new `status`.
    pub status: CatalogSourceStatus,
    /// What to do.
    pub action: Action,
}

/// The version of a ConfigMap the catalog is built from: its uid and resourceVersion.
pub fn serving_key(uid: &str, resource_version: &str) -> String {
    format!("{uid}/{resource_version}")
}

fn owner_of(source: &CatalogSource) -> OwnerReference {
    OwnerReference {
        api_version: "operators.coreos.com/v1alpha1".to_owned(),
        kind: "CatalogSource".to_owned(),
        name: source.metadata.name.clone().unwrap_or_default(),
        uid: source.metadata.uid.clone().unwrap_or_default(),
        controller: Some(false),
        block_owner_deletion: Some(false),
    }
}

/// One pass of the ConfigMap step for a source of type `configmap` or `internal` whose spec
/// validated ([`crate::catalog_operator::catalogsource::validate`]).
///
/// The flow, as upstream's `syncConfigMap` and ConfigMap registry reconciler:
///
/// 1. Every pass starts from the current status without `reason` and `message`.
/// 2. The ConfigMap cannot be read: `ConfigMapError`, "failed to get catalog config map NAME:
///    ERR"; what is served stays served.
/// 3. It lacks an owner reference to the source (by uid) or the `olm.managed` label: adopt it
///    ([`Action::Adopt`]), adding the reference and `olm.managed: "false"` beside what is there.
/// 4. `status.configMapReference` does not name this uid and resourceVersion: record them with
///    `lastUpdateTime` now, and nothing more this pass (the status write wakes the next). A
///    recording that replaces another is at least the second after it: upstream's e2e suite
///    (`updateInternalCatalog`) waits for the new `lastUpdateTime` to be strictly `After` the
///    old, times the API keeps to the second, and a ConfigMap updated within the second it was
///    first recorded would otherwise tie with it for ever.
/// 5. The recorded version is served: `status.registryService` names the registry's Service,
///    `createdAt` the time that version started being served.
/// 6. The recorded version failed to load: `RegistryServerError` with why; nothing is served.
/// 7. Anything else: [`Action::Build`] of the recorded version.
/// 8. Whatever the step, `status.connectionState` follows the `connection` to what is served
///    ([`connection_state`]): gone when nothing is, kept as written while the watch has not yet
///    dialled the served address.
///
/// Guarantees: a version is built once — a failed one is not retried until the ConfigMap
/// changes, so a bad ConfigMap costs one parse, not a loop. Once the recorded version is served
/// and its registry dialled, `lastConnect` is later than `configMapReference.lastUpdateTime`.
/// The decision is a function of its arguments alone.
///
/// Caveats: upstream deletes and recreates the registry Pod on every ConfigMap change, so its
/// `createdAt` is the Pod's; here it is the time the new content was first served.
pub fn decide(
    source: &CatalogSource,
    lookup: &Lookup,
    serving: &Serving,
    connection: Option<&Connection>,
    now: &Time,
) -> Decision {
    let mut decision = configmap_step(source, lookup, serving, now);
    connection_state(&mut decision.status, serving, connection);
    decision
}

/// The status of a source whose ConfigMap could not be adopted ([`Action::Adopt`] failed):
/// upstream's `ConfigMapError` with the API server's `message`.
pub fn adopt_failed(status: &mut CatalogSourceStatus, message: &str) {
    status.reason = Some(CONFIG_MAP_REASON.to_owned());
    status.message = Some(format!(
        "unable to write owner onto catalog source configmap - {message}"
    ));
}

/// Steps 1–7 of [`decide`].
fn configmap_step(
    source: &CatalogSource,
    lookup: &Lookup,
    serving: &Serving,
    now: &Time,
) -> Decision {
    let mut status = source.status.clone().unwrap_or_default();
    status.reason = None;
    status.message = None;
    let cm_name = source.spec.config_map.as_deref().unwrap_or_default();
    let meta = match lookup {
        Lookup::Failed(message) => {
            status.reason = Some(CONFIG_MAP_REASON.to_owned());
            status.message = Some(format!(
                "failed to get catalog config map {cm_name}: {message}"
            ));
            return Decision {
                status,
                action: Action::None,
            };
        }
        Lookup::Found(meta) => meta,
    };
    let uid = source.metadata.uid.as_deref().unwrap_or_default();
    let owned = meta
        .owner_references
        .iter()
        .any(|r| r.uid == uid && r.kind == "CatalogSource");
    let labelled = meta.labels.contains_key(MANAGED_LABEL);
    if !owned || !labelled {
        let mut patch = json!({"metadata": {"resourceVersion": meta.resource_version}});
        if !owned {
            let mut refs = meta.owner_references.clone();
            refs.push(owner_of(source));
            patch["metadata"]["ownerReferences"] = json!(refs);
        }
        if !labelled {
            patch["metadata"]["labels"] = json!({MANAGED_LABEL: "false"});
        }
        return Decision {
            status,
            action: Action::Adopt(patch),
        };
    }
    let recorded = status.config_map_resource.as_ref();
    let matches = recorded.is_some_and(|r| {
        r.uid.as_deref() == Some(meta.uid.as_str())
            && r.resource_version.as_deref() == Some(meta.resource_version.as_str())
    });
    if !matches {
        // Each recording is later than the one it replaces (see [`later_than`]).
        let updated = match recorded.and_then(|r| r.last_update_time.as_ref()) {
            Some(before) => later_than(now, before),
            None => now.clone(),
        };
        status.config_map_resource = Some(ConfigMapResourceReference {
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            uid: Some(meta.uid.clone()),
            resource_version: Some(meta.resource_version.clone()),
            last_update_time: Some(updated),
        });
        return Decision {
            status,
            action: Action::None,
        };
    }
    let key = serving_key(&meta.uid, &meta.resource_version);
    let action = match serving {
        Serving::Served { key: k, since, .. } if *k == key => {
            status.registry_service_status = Some(registry_service_status(source, since.clone()));
            Action::None
        }
        Serving::Failed { key: k, message } if *k == key => {
            status.reason = Some(REGISTRY_SERVER_REASON.to_owned());
            status.message = Some(message.clone());
            Action::None
        }
        _ => Action::Build { key },
    };
    Decision { status, action }
}

/// Step 8 of [`decide`]: `status.connectionState` of a ConfigMap source.
///
/// Upstream replaces the registry Pod on every ConfigMap change and its gRPC connection goes
/// READY again, stamping `lastConnect` then — after `configMapReference.lastUpdateTime`, which
/// was recorded before the Pod was replaced. Upstream's e2e suite waits for exactly that
/// (`test/e2e/subscription_e2e_test.go`, `updateInternalCatalog`: `lastConnect` strictly
/// `After` `lastUpdateTime`, and `lastObservedState` `READY`). olm serves each version on an
/// address of its own, so the watch dials anew and its `since` is already no earlier than the
/// recording; but both are whole seconds, and olm rebuilds within the second often enough that
/// they tie, and a tie is not `After`. So while the recorded version is the one served,
/// `lastConnect` is at least the second after `lastUpdateTime`: when olm recorded that itself,
/// at most a second ahead of the clock; never behind the recording; and the same on every pass,
/// so it does not make a rewrite loop.
fn connection_state(
    status: &mut CatalogSourceStatus,
    serving: &Serving,
    connection: Option<&Connection>,
) {
    let (key, address) = match serving {
        Serving::Served { key, address, .. } => (key, address),
        Serving::Nothing | Serving::Failed { .. } => {
            status.grpc_connection_state = None;
            return;
        }
    };
    let Some(c) = connection.filter(|c| c.address == *address) else {
        return;
    };
    let reference = status.config_map_resource.as_ref();
    let recorded = reference.map(|r| {
        serving_key(
            r.uid.as_deref().unwrap_or_default(),
            r.resource_version.as_deref().unwrap_or_default(),
        )
    });
    let last_connect = match reference.and_then(|r| r.last_update_time.as_ref()) {
        Some(updated) if recorded.as_ref() == Some(key) => later_than(&c.since, updated),
        _ => c.since.clone(),
    };
    status.grpc_connection_state = Some(GrpcConnectionState {
        address: Some(c.address.clone()),
        last_observed_state: c.observed.clone(),
        last_connect_time: Some(last_connect),
    });
}

/// `since`, or the second after `updated` when `since` is not later.
fn later_than(since: &Time, updated: &Time) -> Time {
    match updated.0.checked_add(SignedDuration::from_secs(1)) {
        Ok(next) if since.0 < next => Time(next),
        _ => since.clone(),
    }
}

/// `status.registryService` of an address source: upstream's address reconciler records only
/// the protocol and when it first looked (`createdAt`), and keeps what is there.
pub fn address_registry_service(
    current: Option<&RegistryServiceStatus>,
    now: &Time,
) -> RegistryServiceStatus {
    match current {
        Some(v) => v.clone(),
        None => RegistryServiceStatus {
            protocol: Some("grpc".to_owned()),
            created_at: Some(now.clone()),
            ..RegistryServiceStatus::default()
        },
    }
}

#[cfg(test)]
mod tests {
    //! Vectors from operator-registry's `pkg/sqlite/configmap_test.go` (the loader, a
    //! `replaces` cycle) and the OLM repo's `pkg/controller/operators/catalog/operator_test.go`
    //! (`TestSyncCatalogSources`: a backing ConfigMap, one already recorded, a missing one) and
    //! `pkg/controller/registry/reconciler/configmap_test.go` (an outdated resourceVersion
    //! rebuilds the registry), with olm's own small catalog in place of upstream's example file.

    use super::*;

    /// A time as the API writes it.
    fn time(text: &str) -> Time {
        Time(
            text.parse()
                .unwrap_or_else(|e| panic!("a test time {text}: {e}")),
        )
    }

    /// A status as the API carries it.
    fn json_of(status: &CatalogSourceStatus) -> Value {
        serde_json::to_value(status).unwrap_or_else(|e| panic!("a status: {e}"))
    }

    const CRDS: &str = r#"
- apiVersion: apiextensions.k8s.io/v1
  kind: CustomResourceDefinition
  metadata:
    name: etcdclusters.etcd.database.coreos.com
  spec:
    group: etcd.database.coreos.com
    names: {kind: EtcdCluster, plural: etcdclusters, singular: etcdcluster, listKind: EtcdClusterList}
    scope: Namespaced
    versions:
    - name: v1beta2
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"#;

    fn csv(name: &str, version: &str, replaces: Option<&str>, extra: &str) -> String {
        let replaces = replaces.map_or(String::new(), |r| format!("\n    replaces: {r}"));
        format!(
            r#"
- apiVersion: operators.coreos.com/v1alpha1
  kind: ClusterServiceVersion
  metadata:
    name: {name}
    annotations: {{}}
  spec:
    version: {version}{replaces}{extra}
    installModes:
    - {{type: AllNamespaces, supported: true}}
    install:
      strategy: deployment
      spec:
        deployments:
        - name: etcd-operator
          spec:
            selector: {{matchLabels: {{name: etcd-operator}}}}
            template:
              metadata: {{labels: {{name: etcd-operator}}}}
              spec: {{containers: [{{name: etcd-operator, image: "quay.io/coreos/etcd-operator:v0.9.2"}}]}}
    customresourcedefinitions:
      owned:
      - {{name: etcdclusters.etcd.database.coreos.com, version: v1beta2, kind: EtcdCluster}}
"#
        )
    }

    const PACKAGES: &str = r#"
- packageName: etcd
  channels:
  - name: alpha
    currentCSV: etcdoperator.v0.9.2
  defaultChannel: alpha
"#;

    fn example() -> BTreeMap<String, String> {
        let csvs = [
            csv("etcdoperator.v0.6.1", "0.6.1", None, ""),
            csv(
                "etcdoperator.v0.9.0",
                "0.9.0",
                Some("etcdoperator.v0.6.1"),
                "",
            ),
            csv(
                "etcdoperator.v0.9.2",
                "0.9.2",
                Some("etcdoperator.v0.9.0"),
                "",
            ),
        ]
        .concat();
        BTreeMap::from([
            (CRD_KEY.to_owned(), CRDS.to_owned()),
            (CSV_KEY.to_owned(), csvs),
            (PACKAGE_KEY.to_owned(), PACKAGES.to_owned()),
        ])
    }

    fn invalid(data: &BTreeMap<String, String>) -> String {
        catalog_blobs(data).unwrap_err().to_string()
    }

    /// OLM's e2e "should support switching from one package to another"
    /// (`test/e2e/subscription_e2e_test.go`): package2's only CSV replaces package1's. The
    /// channel of package2 ends at package1's head, which stays package1's bundle and its
    /// `replaces`, so a Subscription moved from package1 to package2 upgrades along it.
    #[test]
    fn a_csv_may_replace_another_packages_head() {
        let csv = |name: &str, replaces: Option<&str>| {
            csv(name, "1.0.0", replaces, "").replace("etcd-operator", &format!("op-{name}"))
        };
        let packages = "- packageName: package1\n  channels: [{name: stable, currentCSV: package1.v1.0.0}]\n  defaultChannel: stable\n\
                        - packageName: package2\n  channels: [{name: stable, currentCSV: package2.v1.0.0}]\n  defaultChannel: stable\n";
        let data = BTreeMap::from([
            (CRD_KEY.to_owned(), CRDS.to_owned()),
            (
                CSV_KEY.to_owned(),
                [
                    csv("package1.v1.0.0", None),
                    csv("package2.v1.0.0", Some("package1.v1.0.0")),
                ]
                .concat(),
            ),
            (PACKAGE_KEY.to_owned(), packages.to_owned()),
        ]);
        let blobs = catalog_blobs(&data).unwrap_or_else(|e| panic!("{e}"));
        let channel = |package: &str| {
            blobs
                .iter()
                .find(|b| b["schema"] == "olm.channel" && b["package"] == package)
                .map(|b| b["entries"].clone())
        };
        assert_eq!(
            channel("package1"),
            Some(json!([{"name": "package1.v1.0.0"}]))
        );
        assert_eq!(
            channel("package2"),
            Some(json!([{"name": "package2.v1.0.0", "replaces": "package1.v1.0.0"}]))
        );
        let bundles: Vec<(&Value, &Value)> = blobs
            .iter()
            .filter(|b| b["schema"] == "olm.bundle")
            .map(|b| (&b["package"], &b["name"]))
            .collect();
        assert_eq!(
            bundles,
            [
                (&json!("package1"), &json!("package1.v1.0.0")),
                (&json!("package2"), &json!("package2.v1.0.0"))
            ]
        );
    }

    /// `TestConfigMapLoader` and `TestQuerierForConfigmap`: the example loads; the channel is the
    /// `replaces` chain from `currentCSV`, and every bundle carries its CSV and owned CRD.
    #[test]
    fn the_example_loads_as_a_file_based_catalog() {
        let blobs = catalog_blobs(&example()).unwrap();
        assert_eq!(
            blobs[0],
            json!({"schema": "olm.package", "name": "etcd", "defaultChannel": "alpha"})
        );
        assert_eq!(
            blobs[1]["entries"],
            json!([
                {"name": "etcdoperator.v0.6.1"},
                {"name": "etcdoperator.v0.9.0", "replaces": "etcdoperator.v0.6.1"},
                {"name": "etcdoperator.v0.9.2", "replaces": "etcdoperator.v0.9.0"},
            ])
        );
        let bundles: Vec<&Value> = blobs
            .iter()
            .filter(|b| b["schema"] == "olm.bundle")
            .collect();
        assert_eq!(bundles.len(), 3);
        for b in &bundles {
            assert_eq!(b["image"], "");
            let props = b["properties"].as_array().unwrap();
            let objects = props
                .iter()
                .filter(|p| p["type"] == "olm.bundle.object")
                .count();
            assert_eq!(objects, 2, "the CSV and its CRD: {b}");
            assert!(props.iter().any(|p| p["type"] == "olm.gvk"
                && p["value"] == json!({"group": "etcd.database.coreos.com", "kind": "EtcdCluster", "version": "v1beta2"})));
        }
        let text: String = blobs.iter().map(|b| format!("{b}\n")).collect();
        let catalog = olm_catalog::load::load_bytes(text.as_bytes(), "configmap").unwrap();
        olm_catalog::validate::build_index(&catalog).unwrap();
    }

    /// `TestReplaceCycle`: 0.9.0 made to replace 0.9.2.
    #[test]
    fn a_replaces_cycle_is_reported() {
        let mut data = example();
        let csvs = data[CSV_KEY].replace(
            "replaces: etcdoperator.v0.6.1",
            "replaces: etcdoperator.v0.9.2",
        );
        data.insert(CSV_KEY.to_owned(), csvs);
        assert_eq!(
            invalid(&data),
            "error loading package etcd: Cycle detected, etcdoperator.v0.9.0 replaces etcdoperator.v0.9.2"
        );
    }

    /// The loader's messages for data it cannot read, in the order it stops.
    #[test]
    fn bad_data_gets_the_loaders_messages() {
        let with = |key: &str, value: Option<&str>| {
            let mut d = example();
            match value {
                Some(v) => d.insert(key.to_owned(), v.to_owned()),
                None => d.remove(key),
            };
            invalid(&d)
        };
        let table: &[(&str, Option<&str>, &str)] = &[
            (
                CRD_KEY,
                None,
                "couldn't find expected key customResourceDefinitions in configmap",
            ),
            (
                CSV_KEY,
                None,
                "couldn't find expected key clusterServiceVersions in configmap",
            ),
            (
                PACKAGE_KEY,
                None,
                "couldn't find expected key packages in configmap",
            ),
            (
                CRD_KEY,
                Some("a: b"),
                "json: cannot unmarshal object into Go value of type []v1beta1.CustomResourceDefinition",
            ),
            (
                CSV_KEY,
                Some("- 1"),
                "error parsing CSV list: json: cannot unmarshal number into Go value of type registry.ClusterServiceVersion",
            ),
            (
                PACKAGE_KEY,
                Some("x"),
                "error parsing package list: json: cannot unmarshal string into Go value of type []registry.PackageManifest",
            ),
            (
                PACKAGE_KEY,
                Some(
                    "- packageName: etcd\n  channels: [{name: alpha, currentCSV: etcdoperator.v0.9.2}, {name: beta, currentCSV: etcdoperator.v0.9.2}]\n",
                ),
                "error loading package etcd: no default channel specified for etcd",
            ),
            (
                PACKAGE_KEY,
                Some("- packageName: etcd\n  channels: [{name: alpha, currentCSV: nope}]\n"),
                "error loading package etcd: channel \"alpha\" of package \"etcd\": its currentCSV nope is not among the configmap's clusterServiceVersions",
            ),
        ];
        for (key, value, want) in table {
            assert_eq!(with(key, *value), *want, "{key} = {value:?}");
        }
        let yaml = with(CSV_KEY, Some("- a: [b\n- c"));
        assert!(
            yaml.starts_with("error loading CSV list: error converting YAML to JSON: yaml: line "),
            "{yaml}"
        );
    }

    /// A CSV owning a CRD the list lacks, a CRD listed twice, a chain reaching a missing CSV.
    #[test]
    fn problems_that_do_not_stop_the_load_are_aggregated() {
        let mut d = example();
        d.insert(CRD_KEY.to_owned(), format!("{CRDS}{CRDS}"));
        assert_eq!(
            invalid(&d),
            "can't add the same CRD twice in one configmap: {etcd.database.coreos.com v1beta2 EtcdCluster etcdclusters}"
        );
        let mut d = example();
        d.insert(CRD_KEY.to_owned(), "[]".to_owned());
        let message = invalid(&d);
        assert!(message.starts_with("[couldn't find owned CRD in crd list {etcd.database.coreos.com v1beta2 EtcdCluster etcdclusters}: %!s(<nil>), "), "{message}");
        let mut d = example();
        let csvs = d[CSV_KEY].replace(
            "replaces: etcdoperator.v0.6.1",
            "replaces: etcdoperator.v0.5.0",
        );
        d.insert(CSV_KEY.to_owned(), csvs);
        assert_eq!(
            invalid(&d),
            "error loading package etcd: Invalid bundle etcdoperator.v0.9.2, replaces nonexistent bundle etcdoperator.v0.5.0"
        );
    }

    /// Skipped CSVs join the channel; `olm.skipRange` becomes the entry's `skipRange`.
    #[test]
    fn skips_and_skip_ranges_become_channel_edges() {
        let mut d = example();
        let csvs = [
            csv("etcdoperator.v0.6.1", "0.6.1", None, ""),
            csv("etcdoperator.v0.9.0", "0.9.0", None, ""),
            csv(
                "etcdoperator.v0.9.2",
                "0.9.2",
                Some("etcdoperator.v0.6.1"),
                "\n    skips: [etcdoperator.v0.9.0, gone]",
            )
            .replace("annotations: {}", "annotations: {olm.skipRange: '<0.9.2'}"),
        ]
        .concat();
        d.insert(CSV_KEY.to_owned(), csvs);
        let blobs = catalog_blobs(&d).unwrap();
        assert_eq!(
            blobs[1]["entries"],
            json!([
                {"name": "etcdoperator.v0.6.1"},
                {"name": "etcdoperator.v0.9.0"},
                {"name": "etcdoperator.v0.9.2", "replaces": "etcdoperator.v0.6.1",
                 "skips": ["etcdoperator.v0.9.0", "gone"], "skipRange": "<0.9.2"},
            ])
        );
    }

    /// Huge data is refused before it is parsed; any bytes give an error or a catalog, never a
    /// panic.
    #[test]
    fn huge_or_garbage_data_is_an_error() {
        let mut d = example();
        d.insert("junk".to_owned(), "x".repeat(MAX_DATA_BYTES));
        assert!(matches!(
            catalog_blobs(&d),
            Err(ContentError::TooLarge { .. })
        ));
        for junk in [
            "{",
            "- [",
            "&a [*a, *a]",
            "- !!binary x",
            "\t- a",
            "- {metadata: 3, spec: []}",
        ] {
            for key in [CRD_KEY, CSV_KEY, PACKAGE_KEY] {
                let mut d = example();
                d.insert(key.to_owned(), junk.to_owned());
                let _ = catalog_blobs(&d);
            }
        }
    }

    fn source(status: Value) -> CatalogSource {
        crate::catalog_operator::catalogsource::parse(json!({
            "metadata": {"name": "cool-catalog", "namespace": "cool-namespace", "uid": "catalog-uid"},
            "spec": {"sourceType": "configmap", "configMap": "cool-configmap"},
            "status": status,
        }))
    }

    fn adopted() -> ConfigMapMeta {
        ConfigMapMeta {
            name: "cool-configmap".into(),
            namespace: "cool-namespace".into(),
            uid: "cm-uid".into(),
            resource_version: "resource-version".into(),
            labels: BTreeMap::from([(MANAGED_LABEL.to_owned(), "false".to_owned())]),
            owner_references: vec![OwnerReference {
                kind: "CatalogSource".to_owned(),
                uid: "catalog-uid".to_owned(),
                ..OwnerReference::default()
            }],
        }
    }

    const NOW: &str = "2018-01-26T20:40:00Z";

    fn reference() -> Value {
        json!({"name": "cool-configmap", "namespace": "cool-namespace", "uid": "cm-uid",
               "resourceVersion": "resource-version", "lastUpdateTime": NOW})
    }

    /// `TestSyncCatalogSources`' ConfigMap cases and `TestConfigMapRegistryReconciler`'s
    /// outdated resourceVersion, one pass each.
    #[test]
    fn the_configmap_step_follows_upstreams_passes() {
        let key = serving_key("cm-uid", "resource-version");
        let served = Serving::Served {
            key: key.clone(),
            address: "127.0.0.1:2".into(),
            since: time(NOW),
        };
        let service = json!({"protocol": "grpc", "serviceName": "cool-catalog",
            "serviceNamespace": "cool-namespace", "port": "50051", "createdAt": NOW});
        let failed = Serving::Failed {
            key: key.clone(),
            message: "error loading manifests from configmap: x".into(),
        };
        let mut outdated = reference();
        outdated["resourceVersion"] = json!("old");
        outdated["lastUpdateTime"] = json!("2018-01-26T20:39:00Z");
        let table: Vec<(&str, Value, Lookup, Serving, Value, Action)> = vec![
            (
                "CatalogSourceWithMissingConfigMap",
                json!({}),
                Lookup::Failed("configmaps \"cool-configmap\" not found".into()),
                Serving::Nothing,
                json!({"reason": "ConfigMapError", "message": "failed to get catalog config map cool-configmap: configmaps \"cool-configmap\" not found"}),
                Action::None,
            ),
            (
                "CatalogSourceWithBackingConfigMap",
                json!({}),
                Lookup::Found(adopted()),
                Serving::Nothing,
                json!({"configMapReference": reference()}),
                Action::None,
            ),
            (
                "CatalogSourceUpdatedByDifferentCatalogOperator",
                json!({"configMapReference": reference()}),
                Lookup::Found(adopted()),
                Serving::Nothing,
                json!({"configMapReference": reference()}),
                Action::Build { key: key.clone() },
            ),
            (
                "built",
                json!({"configMapReference": reference()}),
                Lookup::Found(adopted()),
                served.clone(),
                json!({"configMapReference": reference(), "registryService": service}),
                Action::None,
            ),
            (
                "ExistingRegistry/OldPod",
                json!({"configMapReference": outdated, "registryService": service}),
                Lookup::Found(adopted()),
                Serving::Served {
                    key: serving_key("cm-uid", "old"),
                    address: "127.0.0.1:1".into(),
                    since: time(NOW),
                },
                json!({"configMapReference": reference(), "registryService": service}),
                Action::None,
            ),
            (
                "a failed load is not retried",
                json!({"configMapReference": reference(), "reason": "RegistryServerError", "message": "m"}),
                Lookup::Found(adopted()),
                failed,
                json!({"configMapReference": reference(), "reason": "RegistryServerError", "message": "error loading manifests from configmap: x"}),
                Action::None,
            ),
        ];
        for (name, status, lookup, serving, want, action) in table {
            let d = decide(&source(status), &lookup, &serving, None, &time(NOW));
            assert_eq!(json_of(&d.status), want, "{name}");
            assert_eq!(d.action, action, "{name}");
        }
    }

    /// `status.connectionState` after a ConfigMap change. Upstream's e2e `updateInternalCatalog`
    /// (OLM repo `test/e2e/subscription_e2e_test.go`) edits the ConfigMap, then waits for
    /// `lastConnect.After(configMapReference.lastUpdateTime)` with `lastObservedState` READY;
    /// metav1.Time is whole seconds, so a reconnect within the recording's second must read as
    /// the second after it.
    #[test]
    fn a_rebuilt_catalog_reconnects_after_the_recorded_change() {
        const EARLIER: &str = "2018-01-26T20:39:00Z";
        const LATER: &str = "2018-01-26T20:40:05Z";
        let key = serving_key("cm-uid", "resource-version");
        let served = |key: &str, address: &str| Serving::Served {
            key: key.into(),
            address: address.into(),
            since: time(NOW),
        };
        let connection = |address: &str, observed: &str, since: &str| Connection {
            address: address.into(),
            observed: observed.into(),
            since: time(since),
        };
        let state = |address: &str, observed: &str, last: &str| json!({"address": address, "lastObservedState": observed, "lastConnect": last});
        let old = state("127.0.0.1:1", "READY", EARLIER);
        let service = json!({"protocol": "grpc", "serviceName": "cool-catalog",
            "serviceNamespace": "cool-namespace", "port": "50051", "createdAt": NOW});
        let mut outdated = reference();
        outdated["resourceVersion"] = json!("old");
        outdated["lastUpdateTime"] = json!(EARLIER);
        let table: Vec<(&str, Value, Serving, Option<Connection>, Value)> = vec![
            (
                "the change recorded, the old version still served: lastConnect stays before it",
                json!({"configMapReference": outdated, "connectionState": old}),
                served(&serving_key("cm-uid", "old"), "127.0.0.1:1"),
                Some(connection("127.0.0.1:1", "READY", EARLIER)),
                json!({"configMapReference": reference(), "connectionState": old}),
            ),
            (
                "rebuilt, the new address not dialled yet: the state is kept as written",
                json!({"configMapReference": reference(), "connectionState": old}),
                served(&key, "127.0.0.1:2"),
                Some(connection("127.0.0.1:1", "READY", EARLIER)),
                json!({"configMapReference": reference(), "connectionState": old, "registryService": service}),
            ),
            (
                "rebuilt and READY within the recording's second: the second after it",
                json!({"configMapReference": reference(), "connectionState": old}),
                served(&key, "127.0.0.1:2"),
                Some(connection("127.0.0.1:2", "READY", NOW)),
                json!({"configMapReference": reference(), "registryService": service,
                    "connectionState": state("127.0.0.1:2", "READY", "2018-01-26T20:40:01Z")}),
            ),
            (
                "rebuilt and READY a later second: that second",
                json!({"configMapReference": reference(), "connectionState": old}),
                served(&key, "127.0.0.1:2"),
                Some(connection("127.0.0.1:2", "READY", LATER)),
                json!({"configMapReference": reference(), "registryService": service,
                    "connectionState": state("127.0.0.1:2", "READY", LATER)}),
            ),
            (
                "nothing served: no connection state",
                json!({"configMapReference": reference(), "connectionState": old}),
                Serving::Failed {
                    key: key.clone(),
                    message: "m".into(),
                },
                Some(connection("127.0.0.1:1", "READY", EARLIER)),
                json!({"configMapReference": reference(), "reason": "RegistryServerError", "message": "m"}),
            ),
        ];
        for (name, status, serving, connection, want) in table {
            let d = decide(
                &source(status),
                &Lookup::Found(adopted()),
                &serving,
                connection.as_ref(),
                &time(NOW),
            );
            assert_eq!(json_of(&d.status), want, "{name}");
            assert_eq!(d.action, Action::None, "{name}");
        }
    }

    /// A change recorded over an earlier one: upstream's e2e `updateInternalCatalog` waits for
    /// the new `configMapReference.lastUpdateTime` to be strictly `After` the old one.
    #[test]
    fn each_recorded_change_is_later_than_the_one_before() {
        let with_time = |resource_version: &str, time: &str| {
            let mut r = reference();
            r["resourceVersion"] = json!(resource_version);
            r["lastUpdateTime"] = json!(time);
            r
        };
        let table = [
            ("first recording: now", None, NOW),
            (
                "the old one an earlier second: now",
                Some("2018-01-26T20:39:59Z"),
                NOW,
            ),
            (
                "the old one this second: the next",
                Some(NOW),
                "2018-01-26T20:40:01Z",
            ),
            (
                "the old one ahead of the clock: the second after it",
                Some("2018-01-26T20:40:03Z"),
                "2018-01-26T20:40:04Z",
            ),
        ];
        for (name, before, want) in table {
            let status = match before {
                Some(t) => json!({"configMapReference": with_time("old", t)}),
                None => json!({}),
            };
            let d = decide(
                &source(status),
                &Lookup::Found(adopted()),
                &Serving::Nothing,
                None,
                &time(NOW),
            );
            assert_eq!(
                json_of(&d.status)["configMapReference"],
                with_time("resource-version", want),
                "{name}"
            );
            assert_eq!(d.action, Action::None, "{name}");
        }
    }

    /// syncConfigMap's `EnsureOwner` and the `olm.managed: "false"` label, beside what is there.
    #[test]
    fn an_unowned_configmap_is_adopted_first() {
        let mut cm = adopted();
        cm.labels.clear();
        cm.owner_references = vec![OwnerReference {
            api_version: "v1".to_owned(),
            kind: "Other".to_owned(),
            name: "other".to_owned(),
            uid: "u".to_owned(),
            ..OwnerReference::default()
        }];
        let d = decide(
            &source(json!({"reason": "ConfigMapError", "message": "m"})),
            &Lookup::Found(cm),
            &Serving::Nothing,
            None,
            &time(NOW),
        );
        assert_eq!(json_of(&d.status), json!({}));
        assert_eq!(
            d.action,
            Action::Adopt(json!({"metadata": {
                "resourceVersion": "resource-version",
                "labels": {"olm.managed": "false"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Other", "name": "other", "uid": "u"}, {
                    "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
                    "name": "cool-catalog", "uid": "catalog-uid",
                    "controller": false, "blockOwnerDeletion": false}],
            }}))
        );
    }

    /// syncConfigMap's words when the owner reference cannot be written.
    #[test]
    fn an_adoption_that_fails_says_so() {
        let mut status = CatalogSourceStatus::default();
        adopt_failed(&mut status, "configmaps \"cool-configmap\" is forbidden");
        assert_eq!(status.reason.as_deref(), Some("ConfigMapError"));
        assert_eq!(
            status.message.as_deref(),
            Some(
                "unable to write owner onto catalog source configmap - configmaps \"cool-configmap\" is forbidden"
            )
        );
    }

    /// The address reconciler's `EnsureRegistryServer`: protocol and first look only.
    #[test]
    fn address_sources_record_protocol_and_creation() {
        let now = time(NOW);
        let fresh = address_registry_service(None, &now);
        assert_eq!(
            serde_json::to_value(&fresh).unwrap_or_default(),
            json!({"protocol": "grpc", "createdAt": NOW})
        );
        let kept = RegistryServiceStatus {
            created_at: Some(time("2018-01-26T20:00:00Z")),
            ..fresh
        };
        assert_eq!(address_registry_service(Some(&kept), &now), kept);
    }
}
