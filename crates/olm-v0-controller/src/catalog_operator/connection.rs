//! Connections to CatalogSource registries: one task per CatalogSource dials its address
//! (`spec.address`, or the registry Service's `<svc>.<ns>.svc:50051`), checks its gRPC health and
//! records the connection's state — `CONNECTING` while dialling, `READY` once the registry says
//! it is serving, `TRANSIENT_FAILURE` when it cannot be reached or stops serving — with the time
//! of the last change, waking the CatalogSource so its `status.connectionState` follows.
//!
//! Once the registry is ready its content is read ([`super::catalogs`]) and the resolver told;
//! content that cannot be read counts as a failure, so it is read again after the backoff.
//! While the registry stays up its content is read again every OLMConfig
//! `packageServerSyncInterval` (12 hours by default), as upstream's packageserver resyncs: a
//! registry behind a stable address may change what it serves without dropping connections.
//!
//! While up, the task holds the health watch open (olm's registries answer it), so a registry
//! going away is seen at once; opm's registries only answer `Check`, so those are checked again
//! every 30 s. Either way the connection itself is watched: when it closes (the registry's Pod
//! was deleted, or restarted with new content behind the same address, as a catalog served at
//! `spec.address` is updated) the registry counts as lost at once, as gRPC's connectivity state
//! tells upstream, and its content is read anew once it is back. A lost registry is dialled
//! again after a backoff step (1 s doubling to 30 s).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::SinkExt;
use futures::channel::mpsc;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::runtime::reflector::ObjectRef;
use olm_k8s::retry::Backoff;
use olm_v0_api::v1alpha1::CatalogSource;

use super::catalogs::{self, Contents};
use crate::lock;

/// How long one dial may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(5);

/// What is known of one connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// The address dialled.
    pub address: String,
    /// gRPC's name of the state: `CONNECTING`, `READY` or `TRANSIENT_FAILURE`.
    pub observed: &'static str,
    /// When it last changed (seconds).
    pub since: Time,
}

struct Prober {
    address: String,
    task: tokio::task::JoinHandle<()>,
}

/// Every CatalogSource's connection, by `namespace/name`.
#[derive(Clone)]
pub struct Connections {
    probers: Arc<Mutex<HashMap<String, Prober>>>,
    states: Arc<Mutex<HashMap<String, State>>>,
    /// What each registry holds.
    pub contents: Contents,
    /// Hears the `namespace/name` of every CatalogSource whose content changed.
    changed: mpsc::Sender<String>,
    /// Where the resync interval is read.
    index: crate::Index,
}

impl Connections {
    /// No connections yet; `changed` hears of every content change; the resync interval is
    /// read from `index`'s OLMConfig.
    pub fn new(changed: mpsc::Sender<String>, index: crate::Index) -> Connections {
        Connections {
            probers: Arc::default(),
            states: Arc::default(),
            contents: Contents::default(),
            changed,
            index,
        }
    }

    /// The connection state of `key`, if it is watched.
    pub fn state(&self, key: &str) -> Option<State> {
        lock(&self.states).get(key).cloned()
    }

    /// [`Connections::state`] as the CatalogSource decisions read it.
    pub fn view(&self, key: &str) -> Option<olm_v0::catalog_operator::configmapsource::Connection> {
        self.state(key)
            .map(|c| olm_v0::catalog_operator::configmapsource::Connection {
                address: c.address,
                observed: c.observed.to_owned(),
                since: c.since,
            })
    }

    /// Watches `address` for the CatalogSource `source` (replacing a watch of another address);
    /// `wake` hears of every change.
    pub fn ensure(
        &self,
        source: ObjectRef<CatalogSource>,
        address: &str,
        wake: mpsc::Sender<ObjectRef<CatalogSource>>,
    ) {
        let key = format!(
            "{}/{}",
            source.namespace.clone().unwrap_or_default(),
            source.name
        );
        let mut probers = lock(&self.probers);
        if probers.get(&key).is_some_and(|p| p.address == address) {
            return;
        }
        if let Some(old) = probers.remove(&key) {
            old.task.abort();
        }
        let probe = Probe {
            key: key.clone(),
            address: address.to_owned(),
            source,
            states: self.states.clone(),
            contents: self.contents.clone(),
            changed: self.changed.clone(),
            index: self.index.clone(),
        };
        let task = tokio::spawn(watch(probe, wake));
        probers.insert(
            key,
            Prober {
                address: address.to_owned(),
                task,
            },
        );
    }

    /// Stops every watch (the controller is stopping).
    pub fn close_all(&self) {
        for (_, p) in lock(&self.probers).drain() {
            p.task.abort();
        }
    }

    /// Stops watching `key` (its CatalogSource is gone or no longer served).
    pub fn forget(&self, key: &str) {
        if let Some(p) = lock(&self.probers).remove(key) {
            p.task.abort();
        }
        lock(&self.states).remove(key);
        self.contents.forget(key);
        let mut changed = self.changed.clone();
        let _ = changed.try_send(key.to_owned());
    }
}

/// What one connection task works with.
struct Probe {
    key: String,
    address: String,
    source: ObjectRef<CatalogSource>,
    states: Arc<Mutex<HashMap<String, State>>>,
    contents: Contents,
    changed: mpsc::Sender<String>,
    index: crate::Index,
}

/// One registry's connection, for as long as its CatalogSource is served: connect, check its
/// health, read its content, then hold the connection (reading the content again each sync
/// interval) until it goes; after a failure, connect again after the backoff. Each change of
/// state wakes the CatalogSource.
async fn watch(mut probe: Probe, mut wake: mpsc::Sender<ObjectRef<CatalogSource>>) {
    let catalog = olm_v0_resolver::SourceKey::new(
        &probe.source.name,
        probe.source.namespace.as_deref().unwrap_or_default(),
    );
    let mut failures = 0u32;
    loop {
        probe.report("CONNECTING", &mut wake).await;
        match connect(&probe.address).await {
            Ok((channel, mut client, closed)) => {
                if check(&mut client).await
                    && probe
                        .read(&channel, &catalog, "registry content cannot be read")
                        .await
                {
                    failures = 0;
                    probe.report("READY", &mut wake).await;
                    if !probe
                        .while_ready(&channel, &mut client, &closed, &catalog)
                        .await
                    {
                        failures += 1;
                    }
                } else {
                    failures += 1;
                }
            }
            Err(e) => {
                tracing::debug!(catalogsource = %probe.key, address = %probe.address, error = %e, "registry not reachable");
                failures += 1;
            }
        }
        probe.report("TRANSIENT_FAILURE", &mut wake).await;
        tokio::time::sleep(Backoff::DEFAULT.delay(failures.max(1))).await;
    }
}

impl Probe {
    /// Records `observed` as the connection's state, waking the CatalogSource when it changed.
    async fn report(
        &self,
        observed: &'static str,
        wake: &mut mpsc::Sender<ObjectRef<CatalogSource>>,
    ) {
        let changed = {
            let mut states = lock(&self.states);
            let same = states
                .get(&self.key)
                .is_some_and(|s| s.observed == observed && s.address == self.address);
            if !same {
                states.insert(
                    self.key.clone(),
                    State {
                        address: self.address.clone(),
                        observed,
                        since: crate::now(),
                    },
                );
            }
            !same
        };
        if changed {
            let _ = wake.send(self.source.clone()).await;
        }
    }

    /// Reads the registry's content and keeps it, or why it cannot be read (logged with
    /// `failing`); tells resolution either way. Whether it was read.
    async fn read(
        &mut self,
        channel: &tonic::transport::Channel,
        catalog: &olm_v0_resolver::SourceKey,
        failing: &'static str,
    ) -> bool {
        let content = catalogs::fetch(channel.clone(), catalog).await;
        if let Err(e) = &content {
            tracing::warn!(catalogsource = %self.key, address = %self.address, error = %e, "{failing}");
        }
        let read = content.is_ok();
        self.contents.set(&self.key, content);
        let _ = self.changed.send(self.key.clone()).await;
        read
    }

    /// Holds a READY connection until the registry goes (its health watch ends, or the
    /// connection closes), reading the content again each sync interval; the interval is
    /// looked up every minute, so an OLMConfig edit applies soon. False when a read failed.
    async fn while_ready(
        &mut self,
        channel: &tonic::transport::Channel,
        client: &mut Client,
        closed: &Closed,
        catalog: &olm_v0_resolver::SourceKey,
    ) -> bool {
        let mut fetched = tokio::time::Instant::now();
        loop {
            let due = fetched + self.index.catalog_sync_interval();
            let wake_at = due.min(tokio::time::Instant::now() + CONFIG_LOOK);
            tokio::select! {
                () = hold(client) => return true,
                () = closed.0.notified() => return true,
                () = tokio::time::sleep_until(wake_at) => {}
            }
            if tokio::time::Instant::now() < fetched + self.index.catalog_sync_interval() {
                continue;
            }
            fetched = tokio::time::Instant::now();
            if !self
                .read(channel, catalog, "registry content cannot be read again")
                .await
            {
                return false;
            }
        }
    }
}

const SERVING: i32 = 1;
/// How often a connection looks at the resync interval again.
const CONFIG_LOOK: Duration = Duration::from_secs(60);

/// How often a registry without the health watch (opm's answers only `Check`) is checked again
/// while it is up.
const RECHECK: Duration = Duration::from_secs(30);

type Client = tonic_health::pb::health_client::HealthClient<tonic::transport::Channel>;

/// A channel to `address` (`host:port`), a health client on it, and what is told when the
/// channel's connection closes.
async fn connect(address: &str) -> Result<(tonic::transport::Channel, Client, Closed), String> {
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{address}"))
        .map_err(|e| e.to_string())?
        .connect_timeout(DIAL_TIMEOUT);
    let closed = Closed::default();
    let told = closed.clone();
    let connector = tower::service_fn(move |uri: http::Uri| {
        let told = told.clone();
        async move {
            let host = uri
                .host()
                .unwrap_or_default()
                .trim_matches(['[', ']'])
                .to_owned();
            let port = uri.port_u16().unwrap_or(80);
            let io = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
            io.set_nodelay(true)?;
            Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(Noticed { io, closed: told }))
        }
    });
    let channel = endpoint
        .connect_with_connector(connector)
        .await
        .map_err(|e| e.to_string())?;
    Ok((
        channel.clone(),
        tonic_health::pb::health_client::HealthClient::new(channel),
        closed,
    ))
}

/// Told when a connection of one channel closes. tonic dials again by itself at the next
/// request, so without this a registry restarted between two checks would look as if it had
/// never gone, and its new content would not be read.
#[derive(Clone, Default)]
struct Closed(Arc<tokio::sync::Notify>);

/// A connection that tells [`Closed`] when the channel drops it (it ended).
struct Noticed {
    io: tokio::net::TcpStream,
    closed: Closed,
}

impl Drop for Noticed {
    fn drop(&mut self) {
        // A permit is kept when nobody waits yet, so a close is never missed.
        self.closed.0.notify_one();
    }
}

impl tokio::io::AsyncRead for Noticed {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for Noticed {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Whether the registry answers `SERVING`.
async fn check(client: &mut Client) -> bool {
    let asked = client.check(tonic_health::pb::HealthCheckRequest::default());
    tokio::time::timeout(DIAL_TIMEOUT, asked)
        .await
        .is_ok_and(|r| r.is_ok_and(|r| r.into_inner().status == SERVING))
}

/// Returns once the registry stops serving: when its health watch ends or says otherwise, or —
/// for a registry without the watch — when a check fails.
async fn hold(client: &mut Client) {
    let mut watching = client.clone();
    let watch = watching
        .watch(tonic_health::pb::HealthCheckRequest::default())
        .await;
    match watch {
        Ok(stream) => {
            let mut stream = stream.into_inner();
            while let Ok(Some(r)) = stream.message().await {
                if r.status != SERVING {
                    return;
                }
            }
        }
        Err(s) if s.code() == tonic::Code::Unimplemented => loop {
            tokio::time::sleep(RECHECK).await;
            if !check(client).await {
                return;
            }
        },
        Err(_) => {}
    }
}
