//! Watches of the objects ClusterObjectSets manage: one watcher and cache per kind, shared by
//! every revision that has objects of that kind, filtered to objects installed by an extension
//! (label `olm.operatorframework.io/owner-kind=ClusterExtension`, which the controller puts on
//! everything it applies).
//!
//! Every event (an edit, a status change, a deletion) is mapped to the ClusterObjectSets named
//! in the object's owner references and handed to the controller, so drift is put back and
//! probes re-run without periodic re-applies; the caches are where probes and the collision
//! check read objects, so a reconcile makes no GET per object.
//!
//! Discovery (kind → resource, namespaced or not) is cached per kind; a kind that is not served
//! yet (a CRD applied in an earlier phase of the same revision) is not cached as missing and is
//! looked up again at the next reconcile.

use olm_runtime::watch::RecoveringExt as _;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use futures::channel::mpsc;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::discovery::{ApiCapabilities, Scope};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use olm_api::ClusterObjectSet;
use olm_extension::objectset::{Gvk, ObjectRef as Target};
use olm_k8s::{CLUSTER_EXTENSION_KIND, OWNER_KIND_LABEL};
use serde_json::{Map, Value};
use tokio::task::JoinHandle;
use tracing::debug;

use olm_runtime::written::Written;

/// How long a new cache may take to list its kind before the reconcile gives up (and retries).
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one discovery request may take before the reconcile fails (and is retried).
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a kind that no revision manages any more stays watched. Revisions come and go
/// (an upgrade's next revision, an extension removed and installed again) and mostly manage the
/// same kinds: a warm cache spares each a new list of the kind before its first write.
const LINGER: Duration = Duration::from_secs(120);

/// How a kind is served.
#[derive(Clone, Debug)]
pub struct Resource {
    /// Group, version, kind and plural.
    pub api: ApiResource,
    /// Whether objects of the kind live in namespaces.
    pub namespaced: bool,
}

struct Kind {
    store: Store<DynamicObject>,
    task: JoinHandle<()>,
    /// Since when no revision manages the kind (the watch stops [`LINGER`] later).
    unused_since: Option<Instant>,
}

/// The shared object caches and who uses them.
pub struct Watches {
    client: Client,
    trigger: mpsc::Sender<ObjectRef<ClusterObjectSet>>,
    discovery: Mutex<BTreeMap<Gvk, Resource>>,
    discovering: tokio::sync::Mutex<()>,
    kinds: Arc<Mutex<BTreeMap<Gvk, Kind>>>,
    users: Mutex<BTreeMap<String, BTreeSet<Gvk>>>,
    /// Objects as last written, until their watch event arrives: a reconcile that follows a
    /// write closely sees what it wrote instead of deciding to create the object again.
    written: Arc<Written<Map<String, Value>, Target>>,
}

/// Why a kind cannot be watched.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// Discovery failed for a reason other than the kind not being served.
    #[error("discovering {kind}: {source}")]
    Discovery {
        /// `Kind.group/version`.
        kind: String,
        /// The API error.
        source: kube::Error,
    },
    /// Discovery did not answer in time.
    #[error("discovering {0}: no answer within 10s")]
    DiscoveryTimeout(String),
    /// The initial list did not finish in time (RBAC, an unreachable API).
    #[error("watching {0}: cache did not sync within 30s")]
    Sync(String),
}

fn describe(gvk: &Gvk) -> String {
    format!("{}.{}", gvk.kind, gvk.api_version())
}

impl Watches {
    /// Watches that report events on `trigger`.
    pub fn new(client: Client, trigger: mpsc::Sender<ObjectRef<ClusterObjectSet>>) -> Watches {
        Watches {
            client,
            trigger,
            discovery: Mutex::default(),
            discovering: tokio::sync::Mutex::new(()),
            kinds: Arc::default(),
            users: Mutex::default(),
            written: Arc::default(),
        }
    }

    /// How `gvk` is served; `Ok(None)` when the API server does not serve it (yet).
    pub async fn resource(&self, gvk: &Gvk) -> Result<Option<Resource>, WatchError> {
        if let Some(r) = lock(&self.discovery).get(gvk) {
            return Ok(Some(r.clone()));
        }
        // One lookup at a time: revisions reconciled together mostly ask for the same kinds,
        // and the first answer serves the others.
        let _single = self.discovering.lock().await;
        if let Some(r) = lock(&self.discovery).get(gvk) {
            return Ok(Some(r.clone()));
        }
        let query = GroupVersionKind::gvk(&gvk.group, &gvk.version, &gvk.kind);
        let answer = tokio::time::timeout(
            DISCOVERY_TIMEOUT,
            kube::discovery::pinned_kind(&self.client, &query),
        )
        .await
        .map_err(|_| WatchError::DiscoveryTimeout(describe(gvk)))?;
        match answer {
            Ok((api, ApiCapabilities { scope, .. })) => {
                let r = Resource {
                    api,
                    namespaced: scope == Scope::Namespaced,
                };
                lock(&self.discovery).insert(gvk.clone(), r.clone());
                Ok(Some(r))
            }
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(None),
            Err(kube::Error::Discovery(_)) => Ok(None),
            Err(source) => Err(WatchError::Discovery {
                kind: describe(gvk),
                source,
            }),
        }
    }

    /// Forgets how kinds are served, after a write found a kind gone or changed.
    pub fn forget_discovery(&self, gvk: &Gvk) {
        lock(&self.discovery).remove(gvk);
    }

    /// Makes sure `user` (a ClusterObjectSet name) has synced caches of `gvks`, starting
    /// watchers as needed and stopping those only `user` needed before. Kinds not served yet
    /// are skipped.
    pub async fn ensure(&self, user: &str, gvks: &BTreeSet<Gvk>) -> Result<(), WatchError> {
        // Registered first, so that a revision freeing a kind at the same time sees this one
        // still needs it.
        let dropped = lock(&self.users)
            .insert(user.to_string(), gvks.clone())
            .unwrap_or_default();
        self.stop_unused(dropped.difference(gvks));
        let mut stores = Vec::new();
        for gvk in gvks {
            let Some(resource) = self.resource(gvk).await? else {
                continue;
            };
            let store = {
                let mut kinds = lock(&self.kinds);
                match kinds.get_mut(gvk) {
                    Some(k) => {
                        k.unused_since = None;
                        k.store.clone()
                    }
                    None => {
                        let k = self.start(gvk, &resource);
                        let store = k.store.clone();
                        kinds.insert(gvk.clone(), k);
                        store
                    }
                }
            };
            stores.push((gvk, store));
        }
        for (gvk, store) in stores {
            if !synced(&store, SYNC_TIMEOUT).await {
                return Err(WatchError::Sync(describe(gvk)));
            }
        }
        Ok(())
    }

    /// `user` needs no watch any more; kinds nobody else needs are no longer watched.
    pub fn free(&self, user: &str) {
        let dropped = lock(&self.users).remove(user).unwrap_or_default();
        self.stop_unused(dropped.iter());
    }

    /// Marks the kinds among `candidates` that nobody registered needs as unused; their watches
    /// stop [`LINGER`] later unless a revision needs them again meanwhile.
    fn stop_unused<'a>(&self, candidates: impl Iterator<Item = &'a Gvk>) {
        // The users lock is held throughout: a kind is marked only while nobody registered
        // needs it (`ensure` registers before it looks a kind up, and unmarks it).
        let users = lock(&self.users);
        let used: BTreeSet<&Gvk> = users.values().flatten().collect();
        let mut kinds = lock(&self.kinds);
        let now = Instant::now();
        let mut marked = false;
        for gvk in candidates {
            if !used.contains(gvk)
                && let Some(k) = kinds.get_mut(gvk)
                && k.unused_since.is_none()
            {
                k.unused_since = Some(now);
                marked = true;
            }
        }
        if marked {
            let (kinds, written) = (Arc::downgrade(&self.kinds), self.written.clone());
            tokio::spawn(async move {
                tokio::time::sleep(LINGER).await;
                if let Some(kinds) = kinds.upgrade() {
                    stop_expired(&kinds, &written, Instant::now());
                }
            });
        }
    }

    /// The object at `target`, as JSON: the cached copy, or what this controller wrote when
    /// the cache does not show that write yet. `None` when absent or its kind is not watched.
    pub fn get(&self, target: &Target) -> Option<Map<String, Value>> {
        let (cached, resource) = self.cached(target)?;
        let cached_version = cached
            .as_ref()
            .map(|o| o.metadata.resource_version.as_deref());
        if let Some(written) = self.written.ahead_of(target, cached_version) {
            return Some(written);
        }
        match serde_json::to_value(&*cached?) {
            Ok(Value::Object(mut m)) => {
                // Items of a list carry no apiVersion and kind (only watch events do), so after
                // a (re)list every cached object would look drifted from its manifest.
                m.entry("apiVersion")
                    .or_insert_with(|| Value::String(resource.api.api_version.clone()));
                m.entry("kind")
                    .or_insert_with(|| Value::String(resource.api.kind.clone()));
                Some(m)
            }
            _ => None,
        }
    }

    /// The cached copy of `target` (`None` inside when absent) and how its kind is served;
    /// `None` when its kind is not watched.
    fn cached(&self, target: &Target) -> Option<(Option<Arc<DynamicObject>>, Resource)> {
        let kinds = lock(&self.kinds);
        let kind = kinds.get(&target.gvk)?;
        let resource = lock(&self.discovery).get(&target.gvk)?.clone();
        let mut r = ObjectRef::<DynamicObject>::new_with(&target.name, resource.api.clone());
        if !target.namespace.is_empty() {
            r = r.within(&target.namespace);
        }
        Some((kind.store.get(&r), resource))
    }

    /// Remembers `object` as written at `target` (the API server's answer to a create or an
    /// apply), until the watch shows it. An answer the cache already holds (an apply that
    /// changed nothing keeps the resourceVersion, and no watch event follows) is not kept.
    pub fn wrote(&self, target: &Target, mut object: Map<String, Value>) {
        if let Some(Value::Object(meta)) = object.get_mut("metadata") {
            meta.remove("managedFields");
        }
        let meta = object.get("metadata");
        let field = |k: &str| {
            meta.and_then(|m| m.get(k))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let (uid, version) = (field("uid"), field("resourceVersion"));
        let cached = self.cached(target).and_then(|(c, _)| c);
        if let Some(cached) = cached
            && cached.metadata.uid == uid
            && cached.metadata.resource_version.is_some()
            && cached.metadata.resource_version == version
        {
            self.written.forget(target);
            return;
        }
        self.written
            .record(target.clone(), uid.as_deref(), version.as_deref(), object);
    }

    /// Forgets a write to `target` (the object was deleted or released).
    pub fn forget_written(&self, target: &Target) {
        self.written.forget(target);
    }

    fn start(&self, gvk: &Gvk, resource: &Resource) -> Kind {
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource.api);
        let config = watcher::Config::default()
            .labels(&format!("{OWNER_KIND_LABEL}={CLUSTER_EXTENSION_KIND}"));
        let writer = reflector::store::Writer::new(resource.api.clone());
        let store = writer.as_reader();
        let mut trigger = self.trigger.clone();
        let written = self.written.clone();
        let gvk = gvk.clone();
        let name = describe(&gvk);
        debug!(kind = %name, "watching managed objects of this kind");
        let cache = store.clone();
        let task = tokio::spawn(async move {
            // The revisions that held objects of this kind when a relist began: a deletion
            // the relist hides has no event of its own, so each of them is looked at once the
            // new list is in (it puts back what it lost).
            let mut before_relist: Vec<ObjectRef<ClusterObjectSet>> = Vec::new();
            // Nothing here reads managedFields, and for a CRD they are about as big as its
            // schema: the cache keeps objects without them.
            let events = reflector::reflector(
                writer,
                watcher(api, config).modify(|o| o.metadata.managed_fields = None),
            )
            .recovering(name.to_string());
            futures::pin_mut!(events);
            while let Some(event) = events.next().await {
                let object = match event {
                    // A (re)list: deletions missed meanwhile come with no event of their own,
                    // so nothing written before can be trusted over the new list.
                    Ok(watcher::Event::Init) => {
                        written.forget_where(|t| t.gvk == gvk);
                        // The store still holds the list before this one until InitDone.
                        let held: BTreeSet<String> = cache
                            .state()
                            .iter()
                            .flat_map(|o| owners(o))
                            .map(|r| r.name)
                            .collect();
                        before_relist = held.into_iter().map(|n| ObjectRef::new(&n)).collect();
                        continue;
                    }
                    Ok(watcher::Event::InitDone) => {
                        for owner in std::mem::take(&mut before_relist) {
                            if futures::SinkExt::send(&mut trigger, owner).await.is_err() {
                                return; // the controller stopped
                            }
                        }
                        continue;
                    }
                    Ok(
                        watcher::Event::Apply(o)
                        | watcher::Event::Delete(o)
                        | watcher::Event::InitApply(o),
                    ) => o,
                    // Logged by the recovery, which also paces the retries.
                    Err(_) => continue,
                };
                let target = Target {
                    gvk: gvk.clone(),
                    namespace: object.metadata.namespace.clone().unwrap_or_default(),
                    name: object.metadata.name.clone().unwrap_or_default(),
                };
                written.seen(&target, object.metadata.resource_version.as_deref());
                for owner in owners(&object) {
                    if futures::SinkExt::send(&mut trigger, owner).await.is_err() {
                        return; // the controller stopped
                    }
                }
            }
        });
        Kind {
            store,
            task,
            unused_since: None,
        }
    }
}

impl Drop for Watches {
    fn drop(&mut self) {
        for (_, k) in std::mem::take(&mut *lock(&self.kinds)) {
            k.task.abort();
        }
    }
}

/// Stops the watches of kinds unused for [`LINGER`] at `now`.
fn stop_expired(
    kinds: &Mutex<BTreeMap<Gvk, Kind>>,
    written: &Written<Map<String, Value>, Target>,
    now: Instant,
) {
    let mut kinds = lock(kinds);
    let expired: Vec<Gvk> = kinds
        .iter()
        .filter(|(_, k)| {
            k.unused_since
                .is_some_and(|since| now.duration_since(since) >= LINGER)
        })
        .map(|(gvk, _)| gvk.clone())
        .collect();
    for gvk in expired {
        if let Some(k) = kinds.remove(&gvk) {
            debug!(kind = %describe(&gvk), "no revision manages this kind any more; watch stopped");
            k.task.abort();
            written.forget_where(|t| t.gvk == gvk);
        }
    }
}

/// Whether `store` has listed once, waiting at most `limit`.
///
/// A store's readiness wakes only the task that polled it last, so with several reconciles
/// waiting at once the others would sleep until their own timeout; polling in short slices
/// bounds that to one slice.
pub(crate) async fn synced<K>(store: &Store<K>, limit: Duration) -> bool
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: Eq + std::hash::Hash + Clone,
{
    const SLICE: Duration = Duration::from_millis(50);
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout(SLICE, store.wait_until_ready()).await {
            Ok(r) => return r.is_ok(),
            Err(_) if tokio::time::Instant::now() < deadline => {}
            Err(_) => return false,
        }
    }
}

/// The ClusterObjectSets an object names as owners (controller or not: a revision handing an
/// object over still owns it until its teardown releases it).
fn owners(object: &DynamicObject) -> Vec<ObjectRef<ClusterObjectSet>> {
    object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|r| {
            r.kind == "ClusterObjectSet" && r.api_version.starts_with("olm.operatorframework.io/")
        })
        .map(|r| ObjectRef::new(&r.name))
        .collect()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
