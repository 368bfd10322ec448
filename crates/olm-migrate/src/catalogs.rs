//! Which ClusterCatalog each CatalogSource becomes (library-olm
//! `migration/pkg/catalogmigration/catalogmigration.go` `MigrateCatalogs`).
//!
//! Flow of [`plan`]:
//! 1. CatalogSources are taken sorted by namespace and name; those that are not image-backed
//!    gRPC sources are skipped, each with upstream's reason, before the others.
//! 2. Image sources sharing a name share one ClusterCatalog of that name when they all name
//!    the same image; otherwise each becomes `<name>-<namespace>`.
//! 3. For each image source: a priority outside `int32` is skipped unless acknowledged (then
//!    clamped); a catalog name already chosen in this run is shared when the image matches and
//!    an error otherwise; an existing ClusterCatalog of the same image is adopted (the one of
//!    the chosen name first, else the first by name); a name held by another image is an
//!    error; otherwise a ClusterCatalog is created.
//!
//! Guarantees: deterministic — the same objects give the same plan; nothing existing is
//! changed but an adopted catalog's `migrated-from-catalogsource` annotation, added only when
//! absent.

use std::collections::{BTreeMap, BTreeSet};

use olm_api::{AvailabilityMode, ClusterCatalog};
use olm_v0_api::v1alpha1::{CatalogSource, SourceType};

/// What becomes of one CatalogSource.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// It cannot move; why.
    Skip(String),
    /// It must not move as asked; why.
    Error(String),
    /// Another source of this run already chose the ClusterCatalog of the same image.
    Shared(String),
    /// An existing ClusterCatalog serves the same image; `annotate` when it does not yet say
    /// which CatalogSource it stands for.
    Adopt {
        /// The catalog.
        catalog: String,
        /// Whether to add the `migrated-from-catalogsource` annotation.
        annotate: bool,
    },
    /// A new ClusterCatalog.
    Create(Box<ClusterCatalog>),
}

/// One CatalogSource's part of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The CatalogSource's namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// What becomes of it.
    pub action: Action,
    /// What does not carry over (pull secrets, pod configuration).
    pub notes: Vec<String>,
}

impl Planned {
    /// `namespace/name`.
    pub fn source(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The ClusterCatalog it maps to, if any.
    pub fn catalog(&self) -> Option<&str> {
        match &self.action {
            Action::Shared(c) | Action::Adopt { catalog: c, .. } => Some(c),
            Action::Create(c) => c.metadata.name.as_deref(),
            Action::Skip(_) | Action::Error(_) => None,
        }
    }
}

/// Why a CatalogSource that is not image-backed gRPC cannot move, in upstream's words.
fn unmovable(source: &CatalogSource) -> Option<String> {
    let image = source.spec.image.as_deref().unwrap_or_default();
    match &source.spec.source_type {
        SourceType::Grpc if !image.is_empty() => None,
        SourceType::ConfigMap => {
            Some("configmap-type CatalogSource has no OLMv1 equivalent".to_owned())
        }
        SourceType::Internal => {
            Some("internal-type CatalogSource has no OLMv1 equivalent".to_owned())
        }
        SourceType::Grpc => Some(
            "grpc address-only CatalogSource (no spec.image) has no OLMv1 equivalent".to_owned(),
        ),
        SourceType::Other(t) => Some(format!("unsupported sourceType {}", olm_goenc::quote(t))),
    }
}

/// `spec.registryPoll.interval` in whole minutes (at least 1), or `None` when the catalog is
/// not polled: no interval, a zero one, or an image pinned by digest (nothing would change).
pub fn poll_minutes(source: &CatalogSource) -> Option<i32> {
    let image = source.spec.image.as_deref().unwrap_or_default();
    if image.contains("@sha256:") {
        return None;
    }
    let interval = source
        .spec
        .update_strategy
        .as_ref()?
        .registry_poll
        .as_ref()?
        .interval
        .as_deref()?;
    let nanos = olm_goenc::duration::parse_duration(interval)
        .ok()?
        .as_nanos();
    if nanos <= 0 {
        return None;
    }
    let minutes = (nanos / 60_000_000_000).max(1);
    Some(i32::try_from(minutes).unwrap_or(i32::MAX))
}

/// The ClusterCatalog names the image sources take: shared by name when every source of that
/// name has the same image, else `<name>-<namespace>` each.
fn catalog_names(sources: &[&CatalogSource]) -> BTreeMap<(String, String), String> {
    let mut by_name: BTreeMap<&str, Vec<&CatalogSource>> = BTreeMap::new();
    for s in sources {
        by_name
            .entry(s.metadata.name.as_deref().unwrap_or_default())
            .or_default()
            .push(s);
    }
    let mut names = BTreeMap::new();
    for (name, group) in by_name {
        let images: BTreeSet<&str> = group
            .iter()
            .map(|s| s.spec.image.as_deref().unwrap_or_default())
            .collect();
        for s in group {
            let ns = s.metadata.namespace.clone().unwrap_or_default();
            let chosen = if images.len() == 1 {
                name.to_owned()
            } else {
                format!("{name}-{ns}")
            };
            names.insert((ns, name.to_owned()), chosen);
        }
    }
    names
}

/// The plan for every CatalogSource of the cluster given the ClusterCatalogs that exist.
/// `acknowledge_priority_overflow` clamps a priority outside `int32` instead of skipping.
pub fn plan(
    sources: &[CatalogSource],
    catalogs: &[ClusterCatalog],
    acknowledge_priority_overflow: bool,
) -> Vec<Planned> {
    let key = |s: &CatalogSource| {
        (
            s.metadata.namespace.clone().unwrap_or_default(),
            s.metadata.name.clone().unwrap_or_default(),
        )
    };
    let mut sorted: Vec<&CatalogSource> = sources.iter().collect();
    sorted.sort_by_key(|s| key(s));
    let mut catalogs: Vec<&ClusterCatalog> = catalogs.iter().collect();
    catalogs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let (movable, unmovable_sources): (Vec<&CatalogSource>, Vec<&CatalogSource>) =
        sorted.into_iter().partition(|s| unmovable(s).is_none());
    let mut out: Vec<Planned> = unmovable_sources
        .into_iter()
        .map(|s| {
            let (namespace, name) = key(s);
            Planned {
                namespace,
                name,
                action: Action::Skip(unmovable(s).unwrap_or_default()),
                notes: Vec::new(),
            }
        })
        .collect();
    let names = catalog_names(&movable);
    let mut chosen: BTreeMap<String, String> = BTreeMap::new();
    for s in movable {
        let (namespace, name) = key(s);
        let image = s.spec.image.clone().unwrap_or_default();
        let target = names
            .get(&(namespace.clone(), name.clone()))
            .cloned()
            .unwrap_or_else(|| name.clone());
        let mut notes = Vec::new();
        if !s.spec.secrets.is_empty() {
            notes.push(format!(
                "spec.secrets ({} secret(s)) has no OLMv1 equivalent; OLMv1 uses the cluster global pull secret",
                s.spec.secrets.len()
            ));
        }
        if s.spec.grpc_pod_config.is_some() {
            notes.push(
                "spec.grpcPodConfig has no OLMv1 equivalent; catalogd manages the serving pod configuration"
                    .to_owned(),
            );
        }
        let raw_priority = s.spec.priority.unwrap_or_default();
        let priority = match i32::try_from(raw_priority) {
            Ok(p) => p,
            Err(_) if acknowledge_priority_overflow => {
                if raw_priority > 0 {
                    i32::MAX
                } else {
                    i32::MIN
                }
            }
            Err(_) => {
                out.push(Planned {
                    namespace,
                    name,
                    action: Action::Skip(format!(
                        "spec.priority {raw_priority} is out of int32 range; pass --acknowledge-priority-overflow to cap and proceed"
                    )),
                    notes,
                });
                continue;
            }
        };
        let action = if let Some(earlier) = chosen.get(&target) {
            if *earlier == image {
                Action::Shared(target.clone())
            } else {
                Action::Error(format!(
                    "ClusterCatalog {target} already selected with image {}, which does not match CatalogSource image {}",
                    olm_goenc::quote(earlier),
                    olm_goenc::quote(&image)
                ))
            }
        } else if let Some(existing) = catalogs
            .iter()
            .filter(|c| c.spec.image_ref() == image)
            .min_by_key(|c| c.metadata.name.as_deref() != Some(target.as_str()))
        {
            let annotated = existing
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(crate::MIGRATED_FROM_CATALOG_SOURCE));
            Action::Adopt {
                catalog: existing.metadata.name.clone().unwrap_or_default(),
                annotate: !annotated,
            }
        } else if let Some(held) = catalogs
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(target.as_str()))
        {
            Action::Error(format!(
                "ClusterCatalog {target} already exists with image {}, which does not match CatalogSource image {}",
                olm_goenc::quote(held.spec.image_ref()),
                olm_goenc::quote(&image)
            ))
        } else {
            Action::Create(Box::new(new_catalog(
                &target,
                &format!("{namespace}/{name}"),
                &image,
                poll_minutes(s),
                priority,
            )))
        };
        if !matches!(action, Action::Error(_)) {
            chosen.entry(target).or_insert(image);
        }
        out.push(Planned {
            namespace,
            name,
            action,
            notes,
        });
    }
    out
}

/// The ClusterCatalog a CatalogSource (`source`, `namespace/name`) becomes.
fn new_catalog(
    name: &str,
    source: &str,
    image: &str,
    poll: Option<i32>,
    priority: i32,
) -> ClusterCatalog {
    let mut catalog = ClusterCatalog::new(
        name,
        olm_api::ClusterCatalogSpec {
            source: olm_api::CatalogSource {
                type_: olm_api::SourceType::Image,
                image: Some(olm_api::ImageSource {
                    ref_: image.to_owned(),
                    poll_interval_minutes: poll,
                }),
            },
            priority,
            availability_mode: AvailabilityMode::Available,
        },
    );
    catalog.metadata.annotations = Some(BTreeMap::from([(
        crate::MIGRATED_FROM_CATALOG_SOURCE.to_owned(),
        source.to_owned(),
    )]));
    catalog
}

/// Whether any Subscription (`(sourceNamespace, source)` of each) still uses the
/// CatalogSource `namespace/name`: such a source is kept even when deletion was asked for.
pub fn referenced(namespace: &str, name: &str, subscriptions: &[(String, String)]) -> bool {
    subscriptions
        .iter()
        .any(|(ns, source)| ns == namespace && source == name)
}

/// How one CatalogSource's migration ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// A ClusterCatalog was created and serves.
    Created,
    /// An existing ClusterCatalog stands for it.
    Adopted,
    /// It cannot move.
    Skipped,
    /// It did not move.
    Error,
    /// What would be done.
    DryRun,
}

/// One CatalogSource's result.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Done {
    /// `namespace` of the CatalogSource.
    pub catalog_source_namespace: String,
    /// Its name.
    pub catalog_source_name: String,
    /// The ClusterCatalog, when there is one.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cluster_catalog_name: String,
    /// How it ended.
    pub outcome: Outcome,
    /// Why, in upstream's words.
    pub reason: String,
    /// What else to know.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The closing report of a run (upstream's `reportCatalogText`), grouped by outcome.
pub fn report(done: &[Done], dry_run: bool) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let of = |o: Outcome| done.iter().filter(move |d| d.outcome == o);
    if dry_run {
        let planned: Vec<&Done> = of(Outcome::DryRun).collect();
        if !planned.is_empty() {
            out.push_str("Would migrate:\n");
            for d in planned {
                let _ = writeln!(
                    out,
                    "  {:<40} → {}\n    {}",
                    format!("{}/{}", d.catalog_source_namespace, d.catalog_source_name),
                    d.cluster_catalog_name,
                    d.reason
                );
            }
        }
    }
    for (outcome, title) in [
        (Outcome::Created, "Created"),
        (Outcome::Adopted, "Adopted existing"),
    ] {
        let group: Vec<&Done> = of(outcome).collect();
        if !group.is_empty() {
            let _ = writeln!(out, "\n{title} ({}):", group.len());
            for d in group {
                let _ = writeln!(
                    out,
                    "  ✓ {}/{} → ClusterCatalog/{}",
                    d.catalog_source_namespace, d.catalog_source_name, d.cluster_catalog_name
                );
            }
        }
    }
    let skipped: Vec<&Done> = of(Outcome::Skipped).collect();
    if !skipped.is_empty() {
        let _ = writeln!(out, "\nSkipped ({}):", skipped.len());
        for d in skipped {
            let _ = writeln!(
                out,
                "  - {}/{}: {}",
                d.catalog_source_namespace, d.catalog_source_name, d.reason
            );
        }
    }
    let errors: Vec<&Done> = of(Outcome::Error).collect();
    if !errors.is_empty() {
        let _ = writeln!(out, "\nErrors ({}):", errors.len());
        for d in &errors {
            let _ = writeln!(
                out,
                "  ✗ {}/{}: {}",
                d.catalog_source_namespace, d.catalog_source_name, d.reason
            );
        }
        return out;
    }
    let ready = of(Outcome::Created).count() + of(Outcome::Adopted).count();
    if ready > 0 {
        let _ = writeln!(out, "\nDone: {ready} ClusterCatalog(s) ready");
    } else if dry_run {
        out.push_str("\nDry run complete.\n");
    } else {
        out.push_str("\nNo migratable CatalogSources found.\n");
    }
    out
}

#[cfg(test)]
mod tests;
