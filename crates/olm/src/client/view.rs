//! What the client commands show, decided from objects and catalog content without touching
//! the cluster: search summaries, extension rows, the description of one extension, and how far
//! an install or upgrade has come.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use olm_api::{ClusterExtension, ClusterObjectSet};
use serde::Serialize;

/// One package of one catalog, as `olm search` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PackageSummary {
    /// The package.
    pub name: String,
    /// The ClusterCatalog serving it.
    pub catalog: String,
    /// The display name of the default channel's head's CSV, if any.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// The provider of that CSV, if any.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub provider: String,
    /// What a word search looks in (that CSV's metadata), not printed.
    #[serde(skip)]
    pub card: olm_catalog::card::Card,
    /// The default channel.
    pub default_channel: String,
    /// The package's deprecation message, if deprecated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<String>,
    /// Channels by name.
    pub channels: Vec<ChannelSummary>,
}

/// One channel of a package.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelSummary {
    /// The channel.
    pub name: String,
    /// The head's version (what a new install of the channel gets, deprecations aside), or the
    /// reason the channel has no single head.
    pub head: String,
    /// Every bundle version of the channel, newest first.
    pub versions: Vec<VersionSummary>,
    /// The channel's deprecation message, if deprecated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<String>,
}

/// One bundle of a channel.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionSummary {
    /// Its version (with release, when it has one).
    pub version: String,
    /// The bundle name.
    pub bundle: String,
    /// The bundle's deprecation message, if deprecated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<String>,
}

/// The packages of a catalog (only `package` when given), sorted by name.
pub fn summarize(
    catalog_name: &str,
    catalog: &olm_catalog::Catalog,
    package: Option<&str>,
) -> Result<Vec<PackageSummary>, String> {
    let idx = olm_catalog::build_index(catalog).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for p in idx.packages.values() {
        if package.is_some_and(|want| want != p.name) {
            continue;
        }
        let head_csv = p
            .default_channel
            .and_then(|dc| p.channels.get(dc))
            .and_then(|ch| ch.head().ok())
            .and_then(|h| p.bundles.get(h.name.as_str()));
        let card = head_csv
            .map(|b| olm_catalog::card::Card::of(b.bundle))
            .unwrap_or_default();
        let channels = p
            .channels
            .values()
            .map(|ch| {
                let mut versions: Vec<_> = ch
                    .entries
                    .keys()
                    .filter_map(|name| p.bundles.get(name))
                    .collect();
                versions.sort_by(|a, b| b.version.cmp(&a.version));
                ChannelSummary {
                    name: ch.name.to_owned(),
                    head: match ch.head() {
                        Ok(h) => p
                            .bundles
                            .get(h.name.as_str())
                            .map(|b| b.version_release())
                            .unwrap_or_else(|| h.name.to_string()),
                        Err(e) => format!("no head: {e}"),
                    },
                    versions: versions
                        .into_iter()
                        .map(|b| VersionSummary {
                            version: b.version_release(),
                            bundle: b.bundle.name.to_string(),
                            deprecation: b.deprecation.map(str::to_owned),
                        })
                        .collect(),
                    deprecation: ch.deprecation.map(str::to_owned),
                }
            })
            .collect();
        out.push(PackageSummary {
            name: p.name.to_owned(),
            catalog: catalog_name.to_owned(),
            display_name: card.display_name.clone(),
            provider: card.provider.clone(),
            card,
            default_channel: p.default_channel.unwrap_or_default().to_owned(),
            deprecation: p.deprecation.map(str::to_owned),
            channels,
        });
    }
    Ok(out)
}

/// The packages of `found` that match every one of `words`, best match first (then by name
/// and catalog), by [`olm_catalog::card::Card::score`]: the search `olm search WORD…` does
/// when no package is named exactly so.
pub fn ranked(found: Vec<PackageSummary>, words: &[String]) -> Vec<PackageSummary> {
    let words: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let mut scored: Vec<(u32, PackageSummary)> = found
        .into_iter()
        .filter_map(|p| Some((p.card.score(&p.name, &words)?, p)))
        .collect();
    scored.sort_by(|(sa, a), (sb, b)| {
        sb.cmp(sa)
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.catalog.cmp(&b.catalog))
    });
    scored.into_iter().map(|(_, p)| p).collect()
}

/// The first line of a message, for a table cell.
fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

/// `olm search` without a package: one row per package and catalog.
pub fn package_rows(packages: &[PackageSummary]) -> Vec<Vec<String>> {
    let mut rows = vec![row(&[
        "PACKAGE",
        "CATALOG",
        "DISPLAY NAME",
        "PROVIDER",
        "DEFAULT CHANNEL",
        "LATEST",
        "DEPRECATED",
    ])];
    for p in packages {
        let latest = p
            .channels
            .iter()
            .find(|c| c.name == p.default_channel)
            .map(|c| c.head.clone())
            .unwrap_or_default();
        rows.push(vec![
            p.name.clone(),
            p.catalog.clone(),
            p.display_name.clone(),
            p.provider.clone(),
            p.default_channel.clone(),
            latest,
            p.deprecation
                .as_deref()
                .map(first_line)
                .unwrap_or_default()
                .to_owned(),
        ]);
    }
    rows
}

/// `olm search PKG`: one row per version of each channel, the default channel first.
pub fn version_rows(packages: &[PackageSummary]) -> Vec<Vec<String>> {
    let mut rows = vec![row(&[
        "PACKAGE",
        "CATALOG",
        "CHANNEL",
        "VERSION",
        "BUNDLE",
        "DEPRECATED",
    ])];
    for p in packages {
        let mut channels: Vec<&ChannelSummary> = p.channels.iter().collect();
        channels.sort_by_key(|c| (c.name != p.default_channel, c.name.clone()));
        for c in channels {
            for v in &c.versions {
                let deprecated = v
                    .deprecation
                    .as_deref()
                    .or(c.deprecation.as_deref())
                    .or(p.deprecation.as_deref())
                    .map(first_line)
                    .unwrap_or_default();
                let channel = if c.name == p.default_channel {
                    format!("{} (default)", c.name)
                } else {
                    c.name.clone()
                };
                rows.push(vec![
                    p.name.clone(),
                    p.catalog.clone(),
                    channel,
                    v.version.clone(),
                    v.bundle.clone(),
                    deprecated.to_owned(),
                ]);
            }
        }
    }
    rows
}

fn row(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|c| (*c).to_owned()).collect()
}

/// The condition of `type_`, if set.
pub fn condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

fn conditions_of(ext: &ClusterExtension) -> &[Condition] {
    ext.status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default()
}

/// Name and version of the installed bundle, empty when none is.
fn installed_bundle(ext: &ClusterExtension) -> (String, String) {
    ext.status
        .as_ref()
        .and_then(|s| s.install.as_ref())
        .map(|i| (i.bundle.name.clone(), i.bundle.version.clone()))
        .unwrap_or_default()
}

fn status_cell(ext: &ClusterExtension, type_: &str) -> String {
    condition(conditions_of(ext), type_)
        .map(|c| c.status.clone())
        .unwrap_or_else(|| "Unknown".to_owned())
}

/// `olm list`: one row per extension, sorted by name, with the upgrade the catalogs offer (by
/// extension name) when there is one.
pub fn extension_rows(
    exts: &[ClusterExtension],
    upgrades: &BTreeMap<String, String>,
    now: jiff::Timestamp,
    wide: bool,
) -> Vec<Vec<String>> {
    let mut header = vec![
        "NAME",
        "PACKAGE",
        "NAMESPACE",
        "INSTALLED BUNDLE",
        "VERSION",
        "INSTALLED",
        "PROGRESSING",
        "UPGRADE",
        "AGE",
    ];
    if wide {
        header.push("MESSAGE");
    }
    let mut rows = vec![row(&header)];
    let mut sorted: Vec<&ClusterExtension> = exts.iter().collect();
    sorted.sort_by_key(|e| e.name_any());
    for e in sorted {
        let (bundle, version) = installed_bundle(e);
        let package = e.spec.package_name().to_owned();
        rows.push(vec![
            e.name_any(),
            package,
            e.spec.namespace.clone(),
            bundle,
            version,
            status_cell(e, "Installed"),
            progressing_cell(e),
            upgrades.get(&e.name_any()).cloned().unwrap_or_default(),
            e.metadata
                .creation_timestamp
                .as_ref()
                .map(|t| human_age(now, t.0))
                .unwrap_or_default(),
        ]);
        if wide && let Some(last) = rows.last_mut() {
            last.push(
                condition(conditions_of(e), "Progressing")
                    .map(|c| first_line(&c.message).to_owned())
                    .unwrap_or_default(),
            );
        }
    }
    rows
}

/// `Progressing` as `olm list` shows it: the status, and the reason when it is not plain
/// success, so that `True: Retrying` tells a retrying extension from one that is done.
fn progressing_cell(ext: &ClusterExtension) -> String {
    match condition(conditions_of(ext), "Progressing") {
        Some(c) if c.reason.is_empty() || c.reason == "Succeeded" => c.status.clone(),
        Some(c) => format!("{}: {}", c.status, c.reason),
        None => "Unknown".to_owned(),
    }
}

/// An age as kubectl prints it: `45s`, `12m`, `3h4m`, `5d`, `2y` (apimachinery's
/// `HumanDuration`, coarsened the same way).
pub fn human_age(now: jiff::Timestamp, then: jiff::Timestamp) -> String {
    let secs = now.duration_since(then).as_secs().max(0);
    let (m, h, d) = (secs / 60, secs / 3600, secs / 86400);
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        let s = secs % 60;
        if s == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{s}s")
        }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        let rm = m % 60;
        if rm == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{rm}m")
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 24 * 8 {
        let rh = h % 24;
        if rh == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{rh}h")
        }
    } else if h < 24 * 365 * 2 {
        format!("{d}d")
    } else if h < 24 * 365 * 8 {
        let y = d / 365;
        let rd = d % 365;
        if rd == 0 {
            format!("{y}y")
        } else {
            format!("{y}y{rd}d")
        }
    } else {
        format!("{}y", d / 365)
    }
}

/// How an install or upgrade stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Still going; what it is doing (or waiting for).
    Working(String),
    /// Installed: bundle name and version.
    Done {
        /// Bundle name.
        bundle: String,
        /// Bundle version.
        version: String,
    },
    /// Stopped and will not go on by itself: the condition's reason and message, and what to
    /// do about it.
    Stuck {
        /// `Progressing`'s reason.
        reason: String,
        /// Its message.
        message: String,
        /// What a person can do.
        advice: String,
    },
}

/// Where `ext` stands, from its conditions: installed (and no longer progressing towards
/// something else) once `Installed=True` and `Progressing` reports `Succeeded` for the current
/// generation; stuck when `Progressing` is `False` (upstream's terminal reasons `Blocked`,
/// `InvalidConfiguration`, `ProgressDeadlineExceeded`); working otherwise, with the message
/// the controller last gave.
pub fn progress(ext: &ClusterExtension) -> Progress {
    let conds = conditions_of(ext);
    let generation = ext.metadata.generation;
    let current = |c: &&Condition| generation.is_none() || c.observed_generation >= generation;
    let progressing = condition(conds, "Progressing").filter(current);
    let installed = condition(conds, "Installed").filter(current);
    let Some(progressing) = progressing else {
        return Progress::Working(if conds.is_empty() {
            WAITING_FOR_OLM.to_owned()
        } else {
            "waiting for OLM to see the change".to_owned()
        });
    };
    if progressing.status == "False"
        || (progressing.reason == "Retrying" && needs_user(&progressing.message))
    {
        let name = ext.name_any();
        return Progress::Stuck {
            reason: progressing.reason.clone(),
            message: progressing.message.clone(),
            advice: advice(
                &progressing.reason,
                &progressing.message,
                &name,
                &ext.spec.namespace,
            ),
        };
    }
    if progressing.reason == "Succeeded" && installed.is_some_and(|c| c.status == "True") {
        let (bundle, version) = installed_bundle(ext);
        if in_range(ext, &version) {
            return Progress::Done { bundle, version };
        }
        return Progress::Working(format!(
            "version {version} installed; waiting for one in the range"
        ));
    }
    Progress::Working(format!("{}: {}", progressing.reason, progressing.message))
}

/// What following says while the extension has no status at all.
pub const WAITING_FOR_OLM: &str = "waiting for OLM to pick it up";

/// Whether a `Retrying` message names something only a person can change — a missing
/// ServiceAccount or namespace, permissions the account lacks, an object another owner holds, an
/// image or tag the registry does not have — so that following stops and says what to do
/// instead of waiting out its timeout while the controller retries.
pub fn needs_user(message: &str) -> bool {
    let lower = message.to_ascii_lowercase();
    (lower.contains("service account") && lower.contains("not found"))
        || (lower.contains("namespaces") && lower.contains("not found"))
        || lower.contains("pre-authorization failed")
        || lower.contains("already exists and belongs to")
        || lower.contains("manifest unknown")
        || lower.contains("name unknown")
}

/// Whether `version` lies in the extension's version range (always, without one; a range or
/// version that does not parse counts as in range: the controller reports those itself).
fn in_range(ext: &ClusterExtension, version: &str) -> bool {
    let Some(range) = ext
        .spec
        .source
        .catalog
        .as_ref()
        .and_then(|c| c.version.as_deref())
        .filter(|r| !r.is_empty())
    else {
        return true;
    };
    match (
        olm_resolve::VersionRange::parse(range),
        olm_version::masterminds::Version::parse(version),
    ) {
        (Ok(range), Ok(v)) => range.matches(&v),
        _ => true,
    }
}

/// What to do about a stuck or retrying extension, from its reason and message.
pub fn advice(reason: &str, message: &str, name: &str, namespace: &str) -> String {
    let lower = message.to_ascii_lowercase();
    if lower.contains("pre-authorization failed") || lower.contains("permission") {
        return "grant the ServiceAccount the permissions listed above, or install with --create-service-account so that olm creates one with exactly the permissions the bundle needs".to_owned();
    }
    if lower.contains("service account") && lower.contains("not found") {
        return format!(
            "create the ServiceAccount in namespace {namespace}, or install with --create-service-account"
        );
    }
    if lower.contains("namespaces") && lower.contains("not found") {
        return format!("create namespace {namespace}, or install with --create-namespace");
    }
    if lower.contains("already exists and belongs to") {
        return format!(
            "the message names the object's owner and what to do; `olm uninstall {name}` removes this extension meanwhile"
        );
    }
    if lower.contains("manifest unknown") || lower.contains("name unknown") {
        return "the registry does not have that image or tag: check the catalog's image reference (`olm catalog list`)".to_owned();
    }
    if lower.contains("no bundles found") || lower.contains("failed to resolve") {
        return "see which channels and versions the catalogs offer with `olm search PACKAGE`, and change --channel/--version with `olm upgrade`".to_owned();
    }
    match reason {
        "InvalidConfiguration" => format!(
            "fix the configuration (--config) to match the bundle's schema, then `olm upgrade {name} --config FILE`"
        ),
        "ProgressDeadlineExceeded" => format!(
            "the operator's workloads did not become ready in time: look at them with `kubectl -n {namespace} get pods,deployments`"
        ),
        "Blocked" => format!("`olm describe {name}` shows what blocks it"),
        _ => format!("`olm describe {name}` shows the conditions and revisions"),
    }
}

/// `olm describe`: the extension's spec, status, conditions, revisions and their objects.
///
/// `unread` says why objects kept in Secrets are only counted (see [`inline_stored`]).
pub fn describe(
    ext: &ClusterExtension,
    revisions: &[ClusterObjectSet],
    unread: &[String],
    now: jiff::Timestamp,
) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let filter = ext.spec.source.catalog.as_ref();
    let _ = writeln!(out, "Name:             {}", ext.name_any());
    let _ = writeln!(
        out,
        "Package:          {}",
        filter.map(|c| c.package_name.as_str()).unwrap_or_default()
    );
    let _ = writeln!(out, "Namespace:        {}", ext.spec.namespace);
    if let Some(sa) = &ext.spec.service_account {
        let _ = writeln!(out, "Service account:  {}", sa.name);
    }
    if let Some(f) = filter {
        if let Some(v) = f.version.as_deref().filter(|v| !v.is_empty()) {
            let _ = writeln!(out, "Version range:    {v}");
        }
        if !f.channels.is_empty() {
            let _ = writeln!(out, "Channels:         {}", f.channels.join(", "));
        }
    }
    match ext.status.as_ref().and_then(|s| s.install.as_ref()) {
        Some(i) => {
            let _ = writeln!(
                out,
                "Installed bundle: {} (version {})",
                i.bundle.name, i.bundle.version
            );
        }
        None => {
            let _ = writeln!(out, "Installed bundle: none");
        }
    }
    let conds = conditions_of(ext);
    let _ = writeln!(out, "Conditions:");
    if conds.is_empty() {
        let _ = writeln!(out, "  none (is OLM running on the cluster?)");
    }
    let mut rows = vec![row(&["TYPE", "STATUS", "REASON", "AGE", "MESSAGE"])];
    for c in conds {
        rows.push(vec![
            c.type_.clone(),
            c.status.clone(),
            c.reason.clone(),
            human_age(now, c.last_transition_time.0),
            first_line(&c.message).to_owned(),
        ]);
    }
    if !conds.is_empty() {
        for line in crate::output::table(&rows).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    let _ = writeln!(out, "Revisions:");
    if revisions.is_empty() {
        let _ = writeln!(out, "  none");
    }
    let mut sorted: Vec<&ClusterObjectSet> = revisions.iter().collect();
    sorted.sort_by_key(|r| std::cmp::Reverse(r.spec.revision));
    for r in sorted {
        let state = format!("{:?}", r.spec.lifecycle_state);
        let rconds = r
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default();
        let summary: Vec<String> = rconds
            .iter()
            .map(|c| format!("{}={} ({})", c.type_, c.status, c.reason))
            .collect();
        let _ = writeln!(
            out,
            "  {} (revision {}, {state}): {}",
            r.name_any(),
            r.spec.revision,
            if summary.is_empty() {
                "no status".to_owned()
            } else {
                summary.join(", ")
            }
        );
        for c in rconds
            .iter()
            .filter(|c| c.status != "True" && !c.message.is_empty())
        {
            let _ = writeln!(out, "    {}: {}", c.type_, first_line(&c.message));
        }
        for phase in &r.spec.phases {
            let mut inline = Vec::new();
            let mut stored = 0;
            for o in &phase.objects {
                match &o.object {
                    Some(obj) => inline.push(object_label(obj)),
                    None => stored += 1,
                }
            }
            let mut line = format!(
                "    phase {}: {} object(s)",
                phase.name,
                phase.objects.len()
            );
            if stored > 0 {
                let _ = write!(line, ", {stored} kept in Secrets");
            }
            let _ = writeln!(out, "{line}");
            if stored > 0 {
                for why in unread {
                    let _ = writeln!(out, "      (not read: {})", first_line(why));
                }
            }
            for label in inline {
                let _ = writeln!(out, "      {label}");
            }
        }
    }
    match progress(ext) {
        Progress::Done { .. } => {}
        Progress::Working(what) => {
            let _ = writeln!(out, "Status:           {what}");
        }
        Progress::Stuck {
            reason,
            message,
            advice,
        } => {
            let _ = writeln!(
                out,
                "Status:           not progressing ({reason}): {}",
                first_line(&message)
            );
            let _ = writeln!(out, "What to do:       {advice}");
        }
    }
    out
}

/// Secret data by `(namespace, name)`: what `olm describe` could read of a revision's Secrets,
/// or why it could not (say, the user may not read Secrets in OLM's namespace).
pub type StoredSecrets =
    BTreeMap<(String, String), Result<BTreeMap<String, k8s_openapi::ByteString>, String>>;

/// The Secrets `revisions` keep objects in, as `(namespace, name)`; refs without a namespace
/// name none (both this implementation and upstream always write one).
pub fn stored_secret_names(revisions: &[ClusterObjectSet]) -> Vec<(String, String)> {
    let mut names: Vec<(String, String)> = revisions
        .iter()
        .flat_map(|r| &r.spec.phases)
        .flat_map(|p| &p.objects)
        .filter_map(|o| o.ref_.as_ref())
        .filter_map(|r| {
            Some((
                r.namespace.clone().filter(|n| !n.is_empty())?,
                r.name.clone(),
            ))
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Puts each object a revision keeps in a Secret back inline, so `olm describe` names it like
/// any other; returns why the objects it could not read stay stored (one line per cause).
pub fn inline_stored(revisions: &mut [ClusterObjectSet], secrets: &StoredSecrets) -> Vec<String> {
    let mut why = Vec::new();
    for o in revisions
        .iter_mut()
        .flat_map(|r| &mut r.spec.phases)
        .flat_map(|p| &mut p.objects)
        .filter(|o| o.object.is_none())
    {
        let Some(r) = &o.ref_ else { continue };
        let ns = r.namespace.clone().unwrap_or_default();
        let read = match secrets.get(&(ns.clone(), r.name.clone())) {
            Some(Ok(data)) => {
                olm_extension::pack::resolve_ref(r, &ns, data).map_err(|e| e.to_string())
            }
            Some(Err(e)) => Err(e.clone()),
            None => Err(format!("Secret {ns}/{} was not read", r.name)),
        };
        match read {
            Ok(object) => o.object = Some(object),
            Err(e) if !why.contains(&e) => why.push(e),
            Err(_) => {}
        }
    }
    why
}

/// `Kind namespace/name` of an inline object.
fn object_label(obj: &serde_json::Map<String, serde_json::Value>) -> String {
    let s = |p: &str| {
        serde_json::Value::Object(obj.clone())
            .pointer(p)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let (kind, name, ns) = (s("/kind"), s("/metadata/name"), s("/metadata/namespace"));
    if ns.is_empty() {
        format!("{kind} {name}")
    } else {
        format!("{kind} {ns}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A revision of two objects as `olm run` stores a large one: both moved into a Secret.
    fn stored_revision() -> (ClusterObjectSet, Vec<k8s_openapi::api::core::v1::Secret>) {
        let mut rev: ClusterObjectSet = serde_json::from_value(serde_json::json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterObjectSet",
            "metadata": {"name": "argocd-1"},
            "spec": {"revision": 1, "lifecycleState": "Active", "collisionProtection": "Prevent", "phases": [{"name": "deploy",
                "objects": [
                    {"object": {"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": "argocd-operator", "namespace": "argocd"}}},
                    {"object": {"apiVersion": "v1", "kind": "ServiceAccount",
                        "metadata": {"name": "argocd", "namespace": "argocd"}}}]}]},
        }))
        .expect("revision");
        let packed = olm_extension::pack::SecretPacker {
            revision_name: "argocd-1",
            owner_name: "argocd",
            system_namespace: "olmv1-system",
        }
        .pack(&rev.spec.phases)
        .expect("pack");
        olm_extension::pack::replace_inline_with_refs(&mut rev.spec.phases, &packed.refs);
        (rev, packed.secrets)
    }

    #[test]
    fn describe_names_objects_kept_in_secrets_or_says_why_not() {
        let (rev, secrets) = stored_revision();
        assert_eq!(
            stored_secret_names(std::slice::from_ref(&rev)),
            vec![("olmv1-system".to_owned(), secrets[0].name_any())]
        );
        let ext = with_conditions(1, serde_json::json!([]));
        let now = jiff::Timestamp::UNIX_EPOCH;

        let mut readable = vec![rev.clone()];
        let stored: StoredSecrets = secrets
            .iter()
            .map(|s| {
                let key = (s.namespace().unwrap_or_default(), s.name_any());
                (key, Ok(s.data.clone().unwrap_or_default()))
            })
            .collect();
        assert!(inline_stored(&mut readable, &stored).is_empty());
        let text = describe(&ext, &readable, &[], now);
        assert!(text.contains("phase deploy: 2 object(s)\n"), "{text}");
        assert!(
            text.contains("      Deployment argocd/argocd-operator\n"),
            "{text}"
        );
        assert!(
            text.contains("      ServiceAccount argocd/argocd\n"),
            "{text}"
        );

        let mut forbidden = vec![rev];
        let denied: StoredSecrets = stored
            .keys()
            .map(|k| (k.clone(), Err("reading Secret: forbidden".to_owned())))
            .collect();
        let why = inline_stored(&mut forbidden, &denied);
        assert_eq!(why, vec!["reading Secret: forbidden".to_owned()]);
        let text = describe(&ext, &forbidden, &why, now);
        assert!(
            text.contains("phase deploy: 2 object(s), 2 kept in Secrets\n      (not read: reading Secret: forbidden)\n"),
            "{text}"
        );
    }

    fn ext(v: serde_json::Value) -> ClusterExtension {
        serde_json::from_value(v).expect("extension")
    }

    fn with_conditions(generation: i64, conds: serde_json::Value) -> ClusterExtension {
        ext(serde_json::json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterExtension",
            "metadata": {"name": "argocd", "generation": generation},
            "spec": {"namespace": "argocd", "source": {"sourceType": "Catalog",
                "catalog": {"packageName": "argocd-operator"}}},
            "status": {"conditions": conds,
                "install": {"bundle": {"name": "argocd-operator.v0.6.0", "version": "0.6.0"}}},
        }))
    }

    fn cond(
        t: &str,
        status: &str,
        reason: &str,
        message: &str,
        generation: i64,
    ) -> serde_json::Value {
        serde_json::json!({"type": t, "status": status, "reason": reason, "message": message,
            "observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z"})
    }

    /// Upstream's condition sets (operator-controller's ClusterExtension status), as an install
    /// passes through them.
    #[test]
    fn progress_follows_the_conditions() {
        let cases = [
            (vec![], "working"),
            (
                vec![cond(
                    "Progressing",
                    "True",
                    "Retrying",
                    "failed to resolve bundle: no bundles found",
                    1,
                )],
                "working",
            ),
            (
                vec![
                    cond(
                        "Installed",
                        "True",
                        "Succeeded",
                        "Installed bundle x successfully",
                        1,
                    ),
                    cond(
                        "Progressing",
                        "True",
                        "Succeeded",
                        "Desired state reached",
                        1,
                    ),
                ],
                "done",
            ),
            (
                vec![
                    cond("Installed", "True", "Succeeded", "", 1),
                    cond(
                        "Progressing",
                        "True",
                        "RollingOut",
                        "Revision 0.7.0 is rolling out.",
                        1,
                    ),
                ],
                "working",
            ),
            (
                vec![cond(
                    "Progressing",
                    "False",
                    "Blocked",
                    "unsupported bundle",
                    1,
                )],
                "stuck",
            ),
            (
                vec![cond(
                    "Progressing",
                    "False",
                    "InvalidConfiguration",
                    "invalid configuration",
                    1,
                )],
                "stuck",
            ),
            (
                vec![cond(
                    "Progressing",
                    "False",
                    "ProgressDeadlineExceeded",
                    "x",
                    1,
                )],
                "stuck",
            ),
            // Conditions of an older generation say nothing about the current spec.
            (
                vec![
                    cond("Installed", "True", "Succeeded", "", 0),
                    cond("Progressing", "True", "Succeeded", "", 0),
                ],
                "working",
            ),
        ];
        for (conds, want) in cases {
            let e = with_conditions(1, serde_json::Value::Array(conds.clone()));
            let got = match progress(&e) {
                Progress::Working(_) => "working",
                Progress::Done { .. } => "done",
                Progress::Stuck { .. } => "stuck",
            };
            assert_eq!(got, want, "{conds:?}");
        }
        // Installed, but not yet the version the (new) range asks for.
        let mut pinned = with_conditions(
            1,
            serde_json::json!([
                cond("Installed", "True", "Succeeded", "", 1),
                cond("Progressing", "True", "Succeeded", "", 1)
            ]),
        );
        if let Some(c) = pinned.spec.source.catalog.as_mut() {
            c.version = Some("0.7.x".into());
        }
        assert!(matches!(progress(&pinned), Progress::Working(_)));
        let done = with_conditions(
            1,
            serde_json::json!([
                cond("Installed", "True", "Succeeded", "", 1),
                cond("Progressing", "True", "Succeeded", "", 1)
            ]),
        );
        assert_eq!(
            progress(&done),
            Progress::Done {
                bundle: "argocd-operator.v0.6.0".into(),
                version: "0.6.0".into()
            }
        );
    }

    /// A Retrying message only a person can act on stops following (with advice); a
    /// transient one keeps it going.
    #[test]
    fn retrying_on_what_only_a_person_can_fix_is_stuck() {
        for (message, want) in [
            (
                "service account \"installer\" not found in namespace \"ops\"",
                "stuck",
            ),
            ("namespaces \"ops\" not found", "stuck"),
            (
                "pre-authorization failed: service account requires the following permissions",
                "stuck",
            ),
            (
                "Object CustomResourceDefinition widgets.example.com already exists and belongs to ClusterExtension \"other\": uninstall it first.",
                "stuck",
            ),
            (
                "source catalog content: manifest unknown (MANIFEST_UNKNOWN)",
                "stuck",
            ),
            (
                "error getting service account: connection refused",
                "working",
            ),
            ("waiting for the catalog to be served", "working"),
        ] {
            let e = with_conditions(
                1,
                serde_json::json!([cond("Progressing", "True", "Retrying", message, 1)]),
            );
            let got = match progress(&e) {
                Progress::Working(_) => "working",
                Progress::Done { .. } => "done",
                Progress::Stuck { .. } => "stuck",
            };
            assert_eq!(got, want, "{message}");
        }
        let none = with_conditions(1, serde_json::json!([]));
        assert_eq!(progress(&none), Progress::Working(WAITING_FOR_OLM.into()));
    }

    /// `olm list` says why an extension is progressing, and `-o wide` adds the message.
    #[test]
    fn list_rows_show_the_progressing_reason_and_wide_the_message() {
        let e = with_conditions(
            1,
            serde_json::json!([
                cond("Installed", "False", "Failed", "", 1),
                cond(
                    "Progressing",
                    "True",
                    "Retrying",
                    "namespaces \"ops\" not found\nmore",
                    1
                )
            ]),
        );
        let now = jiff::Timestamp::now();
        let rows = extension_rows(std::slice::from_ref(&e), &BTreeMap::new(), now, false);
        assert_eq!(rows[0].len(), 9);
        assert_eq!(rows[1][6], "True: Retrying");
        let wide = extension_rows(std::slice::from_ref(&e), &BTreeMap::new(), now, true);
        assert_eq!(wide[0].last().map(String::as_str), Some("MESSAGE"));
        assert_eq!(
            wide[1].last().map(String::as_str),
            Some("namespaces \"ops\" not found")
        );
        let done = with_conditions(
            1,
            serde_json::json!([cond("Progressing", "True", "Succeeded", "", 1)]),
        );
        let rows = extension_rows(std::slice::from_ref(&done), &BTreeMap::new(), now, false);
        assert_eq!(rows[1][6], "True");
    }

    #[test]
    fn advice_names_the_fix() {
        assert!(
            advice("Retrying", "service account \"x\" not found", "e", "ns")
                .contains("--create-service-account")
        );
        assert!(
            advice("Retrying", "namespaces \"ns\" not found", "e", "ns")
                .contains("--create-namespace")
        );
        assert!(
            advice(
                "Retrying",
                "failed to resolve bundle: no bundles found for package",
                "e",
                "ns"
            )
            .contains("olm search")
        );
        assert!(advice("InvalidConfiguration", "x", "e", "ns").contains("--config"));
    }

    #[test]
    fn ages_read_as_kubectl_prints_them() {
        let now: jiff::Timestamp = "2026-01-10T00:00:00Z".parse().expect("time");
        let ago = |s: i64| {
            now.checked_sub(jiff::SignedDuration::from_secs(s))
                .expect("time")
        };
        for (secs, want) in [
            (5, "5s"),
            (119, "119s"),
            (150, "2m30s"),
            (1800, "30m"),
            (4 * 3600 + 120, "4h2m"),
            (30 * 3600, "30h"),
            (3 * 86400 + 3600, "3d1h"),
            (40 * 86400, "40d"),
        ] {
            assert_eq!(human_age(now, ago(secs)), want, "{secs}");
        }
    }

    const CATALOG: &str = r#"
{"schema":"olm.package","name":"foo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v1.0.0"},{"name":"foo.v1.1.0","replaces":"foo.v1.0.0"}]}
{"schema":"olm.channel","package":"foo","name":"candidate","entries":[{"name":"foo.v1.2.0-rc.1"}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v1.0.0","image":"r.example/foo:1.0.0","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v1.1.0","image":"r.example/foo:1.1.0","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"1.1.0"}},{"type":"olm.csv.metadata","value":{"displayName":"Foo","provider":{"name":"Foo Inc."}}}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v1.2.0-rc.1","image":"r.example/foo:1.2.0-rc.1","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"1.2.0-rc.1"}}]}
{"schema":"olm.package","name":"bar","defaultChannel":"alpha"}
{"schema":"olm.channel","package":"bar","name":"alpha","entries":[{"name":"bar.v0.1.0"}]}
{"schema":"olm.bundle","package":"bar","name":"bar.v0.1.0","image":"r.example/bar:0.1.0","properties":[{"type":"olm.package","value":{"packageName":"bar","version":"0.1.0"}}]}
{"schema":"olm.deprecations","package":"bar","entries":[{"reference":{"schema":"olm.package"},"message":"bar is no longer maintained\nuse foo"}]}
"#;

    /// `olm search WORD…`: every word must match; the provider finds foo, a word in no field
    /// finds nothing, and the exact name ranks first.
    #[test]
    fn word_search_ranks_packages_by_where_the_words_are() {
        let cat = olm_catalog::load::load_bytes(CATALOG.as_bytes(), "test").expect("catalog");
        let all = summarize("operators", &cat, None).expect("summary");
        let names = |words: &[&str]| -> Vec<String> {
            let words: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
            ranked(all.clone(), &words)
                .into_iter()
                .map(|p| p.name)
                .collect()
        };
        assert_eq!(names(&["inc."]), ["foo"]);
        assert_eq!(names(&["FOO", "inc"]), ["foo"]);
        assert_eq!(names(&["foo", "nowhere"]), Vec::<String>::new());
        assert_eq!(names(&["ba"]), ["bar"]);
        assert_eq!(names(&[]), ["bar", "foo"]);
    }

    #[test]
    fn search_summarizes_packages_channels_versions_and_deprecations() {
        let cat = olm_catalog::load::load_bytes(CATALOG.as_bytes(), "test").expect("catalog");
        let all = summarize("operators", &cat, None).expect("summary");
        let names: Vec<&str> = all.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["bar", "foo"]);
        assert_eq!(
            package_rows(&all),
            vec![
                row(&[
                    "PACKAGE",
                    "CATALOG",
                    "DISPLAY NAME",
                    "PROVIDER",
                    "DEFAULT CHANNEL",
                    "LATEST",
                    "DEPRECATED"
                ]),
                row(&[
                    "bar",
                    "operators",
                    "",
                    "",
                    "alpha",
                    "0.1.0",
                    "bar is no longer maintained"
                ]),
                row(&["foo", "operators", "Foo", "Foo Inc.", "stable", "1.1.0", ""]),
            ]
        );
        let foo = summarize("operators", &cat, Some("foo")).expect("summary");
        assert_eq!(
            version_rows(&foo),
            vec![
                row(&[
                    "PACKAGE",
                    "CATALOG",
                    "CHANNEL",
                    "VERSION",
                    "BUNDLE",
                    "DEPRECATED"
                ]),
                row(&[
                    "foo",
                    "operators",
                    "stable (default)",
                    "1.1.0",
                    "foo.v1.1.0",
                    ""
                ]),
                row(&[
                    "foo",
                    "operators",
                    "stable (default)",
                    "1.0.0",
                    "foo.v1.0.0",
                    ""
                ]),
                row(&[
                    "foo",
                    "operators",
                    "candidate",
                    "1.2.0-rc.1",
                    "foo.v1.2.0-rc.1",
                    ""
                ]),
            ]
        );
        assert!(
            summarize("operators", &cat, Some("baz"))
                .expect("summary")
                .is_empty()
        );
    }
}
