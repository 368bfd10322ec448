//! Which extensions a ClusterCatalog change concerns.
//!
//! Upstream re-enqueues every ClusterExtension on any catalog change. Here a new digest of a
//! catalog that was already served re-resolves only the extensions whose package content
//! changed in it ([`Catalogs::changed_packages`]); a catalog appearing, going away, starting or
//! stopping to serve, or changing labels, priority or availability re-resolves the extensions
//! whose selector matches it (before or after), since any of their resolutions may change. So
//! does a catalog that serves nothing giving a new reason (its first unpack failing after it
//! had no status), so that the extensions naming it as skipped say why it is skipped now.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use futures::{SinkExt, Stream, StreamExt};
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::Event;
use olm_api::{ClusterCatalog, ClusterExtension};
use olm_catalog::PackageName;
use tracing::debug;

use crate::catalog::Catalogs;
use olm_extension::message::sanitize_network_error;
use olm_extension::request::{selector_of, served};

/// What about a catalog matters to resolution, besides its content.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    labels: BTreeMap<String, String>,
    priority: i32,
    available: bool,
    /// Serving by the shared rule, or why not (network addresses taken out, so that a retry
    /// failing the same way is no change).
    serving: Result<(), String>,
    digest: Option<String>,
}

fn seen(c: &ClusterCatalog) -> Seen {
    let status = c.status.as_ref();
    Seen {
        labels: c.labels().clone(),
        priority: c.spec.priority,
        available: c.spec.availability_mode == olm_api::AvailabilityMode::Available,
        serving: served(c)
            .map(|_| ())
            .map_err(|why| sanitize_network_error(&why.to_string()).into_owned()),
        digest: status
            .and_then(|s| s.resolved_source.as_ref())
            .map(|r| r.image.ref_.clone()),
    }
}

/// Consumes the catalog watch and sends the extensions to re-resolve.
pub async fn catalog_changes(
    events: impl Stream<Item = Result<Event<ClusterCatalog>, kube::runtime::watcher::Error>>,
    extensions: Store<ClusterExtension>,
    catalogs: Arc<Catalogs>,
    mut tx: futures::channel::mpsc::Sender<ObjectRef<ClusterExtension>>,
) {
    let mut known: HashMap<String, Seen> = HashMap::new();
    let mut events = std::pin::pin!(events);
    while let Some(event) = events.next().await {
        let changed: Vec<(Option<Seen>, Option<Arc<ClusterCatalog>>, String)> = match event {
            Ok(Event::Apply(c) | Event::InitApply(c)) => {
                let name = c.name_any();
                let now = seen(&c);
                let before = known.insert(name.clone(), now.clone());
                if before.as_ref() == Some(&now) {
                    continue;
                }
                vec![(before, Some(Arc::new(c)), name)]
            }
            Ok(Event::Delete(c)) => {
                let name = c.name_any();
                catalogs.forget(&name);
                vec![(known.remove(&name), None, name)]
            }
            Ok(Event::Init | Event::InitDone) => continue,
            // Logged by the watch's recovery, which also paces the retries.
            Err(_) => continue,
        };
        for (before, now, name) in changed {
            let targets = match (&before, &now) {
                // Only the digest moved: only extensions of packages whose content changed.
                (Some(b), Some(c))
                    if b.labels == seen(c).labels
                        && b.priority == seen(c).priority
                        && b.available == seen(c).available
                        && b.serving.is_ok()
                        && seen(c).serving.is_ok() =>
                {
                    let packages: BTreeSet<PackageName> =
                        catalogs.changed_packages(c).await.into_iter().collect();
                    debug!(catalog = %name, changed = packages.len(), "catalog content changed");
                    of_packages(&extensions, &packages)
                }
                _ => {
                    let mut labels = Vec::new();
                    labels.extend(before.map(|b| b.labels));
                    labels.extend(now.as_ref().map(|c| c.labels().clone()));
                    selecting(&extensions, &labels)
                }
            };
            for t in targets {
                if tx.send(t).await.is_err() {
                    return;
                }
            }
        }
    }
}

fn package_of(e: &ClusterExtension) -> Option<&str> {
    e.spec
        .source
        .catalog
        .as_ref()
        .map(|c| c.package_name.as_str())
}

fn of_packages(
    extensions: &Store<ClusterExtension>,
    packages: &BTreeSet<PackageName>,
) -> Vec<ObjectRef<ClusterExtension>> {
    extensions
        .state()
        .iter()
        .filter(|e| package_of(e).is_some_and(|p| packages.contains(&PackageName::new(p))))
        .map(|e| ObjectRef::from_obj(e.as_ref()))
        .collect()
}

fn selecting(
    extensions: &Store<ClusterExtension>,
    labels: &[BTreeMap<String, String>],
) -> Vec<ObjectRef<ClusterExtension>> {
    extensions
        .state()
        .iter()
        .filter(|e| match selector_of(e) {
            Ok(sel) => labels.iter().any(|l| sel.matches(l)),
            Err(_) => false,
        })
        .map(|e| ObjectRef::from_obj(e.as_ref()))
        .collect()
}
