//! Wiring: storage, the catalog server (plain or TLS), probes and metrics, and the controller, all
//! stopped together.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use futures::StreamExt as _;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use olm_k8s::retry::Failures;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tracing::{debug, error, info, warn};

use crate::controller::{self, Config, Context};
use crate::metrics::Metrics;
use crate::server::{self, AppState};
use crate::storage::{Storage, StorageError};

/// A certificate and key for the catalog server (PEM files).
#[derive(Debug, Clone)]
pub struct Tls {
    /// Certificate chain.
    pub cert: PathBuf,
    /// Private key.
    pub key: PathBuf,
}

/// How to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Root of stored catalogs (`catalogs/`) and pulls in progress (`unpack/`).
    pub cache_dir: PathBuf,
    /// Host[:port] put into `status.urls.base`; the catalog listener's address when `None`.
    pub external_address: Option<String>,
    /// Serve HTTPS with this certificate.
    pub tls: Option<Tls>,
    /// Serve `/api/v1/metas`.
    pub metas: bool,
    /// Registry access.
    pub images: olm_image::ClientOptions,
    /// Wait before retrying a failed pull.
    pub retry_after: Duration,
    /// How often stored content of deleted catalogs is looked for.
    pub gc_interval: Duration,
    /// Serve the label-injecting admission webhook here (HTTPS with `tls`; required by the API
    /// server).
    pub webhook_addr: Option<SocketAddr>,
    /// Record request durations here instead of in metrics of the server's own, so a process
    /// that runs more than the catalog server (`olm run`) serves them on its one `/metrics`.
    pub metrics: Option<Arc<Metrics>>,
    /// Timeouts and the connection cap of the catalog listener.
    pub limits: Limits,
    /// Whether this process leads (`olm run --leader-elect`); `None`: it always does. Every
    /// replica pulls and serves catalogs; only the leader writes ClusterCatalog status and
    /// metadata.
    pub leading: Option<tokio::sync::watch::Receiver<bool>>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            cache_dir: PathBuf::from("/var/cache/catalogd"),
            external_address: None,
            tls: None,
            metas: true,
            images: olm_image::ClientOptions::default(),
            retry_after: Duration::from_secs(10),
            gc_interval: Duration::from_secs(12 * 3600),
            webhook_addr: None,
            metrics: None,
            limits: Limits::default(),
            leading: None,
        }
    }
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The cache could not be opened.
    #[error("opening the catalog cache: {0}")]
    Storage(#[from] StorageError),
    /// The certificate or key could not be loaded.
    #[error("loading the TLS certificate and key: {0}")]
    Tls(String),
    /// The webhook was asked for without a certificate.
    #[error(
        "the admission webhook needs --tls-cert and --tls-key: the API server only calls webhooks over HTTPS"
    )]
    WebhookWithoutTls,
    /// A listener failed.
    #[error("serving: {0}")]
    Io(#[from] std::io::Error),
}

/// A rustls server config (HTTP/1.1 only, as upstream) serving the certificate of `tls`, re-read
/// when its files change ([`crate::tls`]). Files that do not load now are an error.
pub fn tls_config(tls: &Tls) -> Result<Arc<rustls::ServerConfig>, RunError> {
    let certs = crate::tls::ReloadingCert::load(&tls.cert, &tls.key, crate::tls::CHECK_INTERVAL)
        .map_err(RunError::Tls)?;
    Ok(crate::tls::server_config(Arc::new(certs)))
}

/// A rustls server config (HTTP/1.1 only) from a PEM certificate chain and private key held in
/// memory.
pub fn tls_config_pem(cert: &[u8], key: &[u8]) -> Result<Arc<rustls::ServerConfig>, String> {
    let certs = crate::tls::certified_key(cert, key)?;
    Ok(crate::tls::server_config(Arc::new(
        rustls::sign::SingleCertAndKey::from(certs),
    )))
}

/// How long in-flight requests get to finish once the server is told to stop (upstream's
/// graceful shutdown timeout).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// How long the controller gets to finish its reconciles once told to stop.
pub const CONTROLLER_GRACE: Duration = Duration::from_secs(5);

/// How long a response may take, from its request's head being read to its last byte being
/// written: upstream's write timeout. A client that stops reading is cut off after it, and so is
/// one that reads too slowly to take a catalog in that time.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// Connections served at once on one listener. Beyond it, new connections wait in the kernel's
/// listen backlog (their TCP handshake completes, their request is read once a connection
/// closes) instead of being refused: a client sees a slow answer, not an error it would have to
/// retry. A connection holds about 60 KB while its client is not reading (two file chunks,
/// its buffers and state; a gzip response adds the encoder's few hundred KiB), so this bounds
/// what clients can make the server hold to tens of MB, a few hundred with gzip. Catalog
/// clients (installers, a handful of controllers) need a few connections each. Upstream (Go's
/// `net/http`) has no cap.
pub const MAX_CONNECTIONS: usize = 1024;

/// The response bytes a connection buffers for the socket before it stops pulling the body
/// (hyper's `max_buf_size`, about 400 KiB by default). Kept below [`server::CHUNK_SIZE`], so a
/// connection whose client stopped reading holds at most two chunks. hyper uses the same figure
/// for its read buffer, so it is also the largest request head accepted (larger ones get `431`):
/// twice what nginx accepts for a header line; Go's `net/http` accepts 1 MB.
pub const WRITE_BUFFER: usize = 16 * 1024;

/// Timeouts and the connection cap of one listener ([`serve_with`]). The default is what
/// upstream does, plus [`MAX_CONNECTIONS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Time to finish the TLS handshake, to send each request head, and to start the next
    /// request on a kept-alive connection: [`server::READ_TIMEOUT`]. Upstream (Go) closes idle
    /// connections after the same time, as its idle timeout falls back to its read timeout;
    /// HTTP clients open a new connection when an idle one was closed.
    pub read_timeout: Duration,
    /// Time to answer a request, from its head being read to its last byte being written:
    /// [`WRITE_TIMEOUT`]. The connection is closed when it runs out.
    pub write_timeout: Duration,
    /// Connections served at once: [`MAX_CONNECTIONS`]. Further ones wait to be accepted.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            read_timeout: server::READ_TIMEOUT,
            write_timeout: WRITE_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

/// [`serve_with`] with [`Limits::default`].
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    serve_with(listener, router, tls, Limits::default(), stop).await
}

/// Serves `router` on `listener` until `stop` flips, over TLS when `tls` is given. HTTP/1.1 only,
/// as upstream.
///
/// What one client can cost is bounded by `limits`: it gets `read_timeout` to finish its TLS
/// handshake, to send each request head and to start its next request, so idle or trickling
/// connections cannot pile up; a response is cut off after `write_timeout`; a connection holds at
/// most two [`server::CHUNK_SIZE`] chunks of response bytes the client has not taken (plus the
/// gzip encoder's state when compressing), as its body is pulled only while its
/// [`WRITE_BUFFER`] has room; and no more than `max_connections` are served at once, further
/// ones waiting in the listen backlog.
///
/// Stopping is graceful, as Kubernetes expects on SIGTERM: no new connection is accepted, idle
/// keep-alive connections are closed, and requests already being answered get up to
/// [`SHUTDOWN_GRACE`] to finish.
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let local = listener.local_addr()?;
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let mut warned_full: Option<tokio::time::Instant> = None;
    loop {
        // A slot first, then the connection: while all are taken, new ones stay in the backlog.
        let slot = match slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if warned_full.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                    warn!(listener = %local, limit = limits.max_connections, "connection limit reached; new connections wait until one closes");
                    warned_full = Some(tokio::time::Instant::now());
                }
                tokio::select! {
                    slot = slots.clone().acquire_owned() => match slot {
                        Ok(slot) => slot,
                        Err(_) => break,
                    },
                    _ = stopped(&mut stop) => break,
                }
            }
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Running out of file descriptors or a reset during accept: keep serving.
                Err(e) => {
                    warn!(listener = %local, error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stopped(&mut stop) => break,
        };
        let _ = stream.set_nodelay(true);
        let acceptor = acceptor.clone();
        let (busy_tx, busy) = watch::channel(None);
        let service = Answering {
            inner: TowerToHyperService::new(router.clone()),
            busy: Arc::new(busy_tx),
        };
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let _slot = slot;
            let mut http1 =
                hyper_util::server::conn::auto::Builder::new(TokioExecutor::new()).http1_only();
            http1
                .http1()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.read_timeout)
                .max_buf_size(WRITE_BUFFER);
            let served = match acceptor {
                Some(acceptor) => {
                    let stream =
                        match tokio::time::timeout(limits.read_timeout, acceptor.accept(stream))
                            .await
                        {
                            Ok(Ok(stream)) => stream,
                            Ok(Err(e)) => {
                                debug!(%peer, error = %e, "TLS handshake failed");
                                return;
                            }
                            Err(_) => {
                                debug!(%peer, "TLS handshake timed out");
                                return;
                            }
                        };
                    let conn = watcher.watch(http1.serve_connection(TokioIo::new(stream), service));
                    within_write_timeout(conn, busy, limits.write_timeout).await
                }
                None => {
                    let conn = watcher.watch(http1.serve_connection(TokioIo::new(stream), service));
                    within_write_timeout(conn, busy, limits.write_timeout).await
                }
            };
            match served {
                Some(Ok(())) => {}
                Some(Err(e)) => debug!(%peer, error = %e, "connection ended with an error"),
                None => {
                    debug!(%peer, timeout = ?limits.write_timeout, "response not written in time; connection closed")
                }
            }
        });
    }
    // Closed now, so new connections are refused instead of waiting in the backlog.
    drop(listener);
    let open = graceful.count();
    if open > 0 {
        info!(listener = %local, connections = open, "stopping: finishing requests in flight");
    }
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        warn!(listener = %local, grace = ?SHUTDOWN_GRACE, "stopping: requests still running after the grace period are cut off");
    }
    Ok(())
}

/// Drives a connection until it ends, or returns `None` (dropping it, which closes the socket)
/// once a response has taken longer than `timeout`. `busy` says since when the current request
/// is being answered.
///
/// The deadline is watched here, outside the connection, because a connection whose client
/// stopped reading is waiting for the socket and polls neither its response body nor any timer
/// of its own.
async fn within_write_timeout<F: Future>(
    conn: F,
    mut busy: watch::Receiver<Option<tokio::time::Instant>>,
    timeout: Duration,
) -> Option<F::Output> {
    tokio::pin!(conn);
    loop {
        let deadline = busy.borrow_and_update().map(|since| since + timeout);
        tokio::select! {
            done = &mut conn => return Some(done),
            changed = busy.changed() => if changed.is_err() {
                // The service is gone, so is any response: only the connection is left.
                return Some(conn.await);
            },
            () = sleep_until(deadline) => return None,
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The router as one connection's service: it records since when a request is being answered,
/// until its response body is done with, for [`within_write_timeout`].
struct Answering<S> {
    inner: S,
    busy: Arc<watch::Sender<Option<tokio::time::Instant>>>,
}

impl<S, B> hyper::service::Service<http::Request<hyper::body::Incoming>> for Answering<S>
where
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: http_body::Body + Send + 'static,
{
    type Response = http::Response<Answer<B>>;
    type Error = S::Error;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>,
    >;

    fn call(&self, request: http::Request<hyper::body::Incoming>) -> Self::Future {
        self.busy.send_replace(Some(tokio::time::Instant::now()));
        let done = Done(self.busy.clone());
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| Answer { body, _done: done }))
        })
    }
}

/// Marks the connection idle when dropped, that is once the response body is done with.
struct Done(Arc<watch::Sender<Option<tokio::time::Instant>>>);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.send_replace(None);
    }
}

/// A response body that carries its [`Done`].
struct Answer<B> {
    body: B,
    _done: Done,
}

impl<B: http_body::Body + Unpin> http_body::Body for Answer<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Resolves once `stop` is set (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Runs the catalog server, probes and the controller until `shutdown` resolves.
pub async fn run(
    options: Options,
    client: kube::Client,
    catalogs: TcpListener,
    probes: Option<TcpListener>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let tls = options.tls.as_ref().map(tls_config).transpose()?;
    let storage = Arc::new(Storage::open(options.cache_dir.join("catalogs"))?);
    let metrics = options.metrics.clone().unwrap_or_default();
    let catalogs_addr: SocketAddr = catalogs.local_addr()?;
    let external_address = options
        .external_address
        .clone()
        .unwrap_or_else(|| catalogs_addr.to_string());
    let (stop_tx, stop_rx) = watch::channel(false);

    // One ClusterCatalog watch: the controller polls it, the browser reads its cache and
    // learns from it when it fails.
    let (catalog_store, catalog_events) = controller::watch(client.clone());
    let problems = crate::browser::Problems::default();
    let noted = problems.clone();
    let catalog_events =
        catalog_events.inspect(move |event| noted.note(crate::browser::CATALOGS, event));
    let (cluster_watch, cluster_watching) =
        crate::browser::ClusterWatch::start(client.clone(), catalog_store.clone(), problems);
    let router = server::router(AppState {
        storage: storage.clone(),
        metrics: metrics.clone(),
        metas: options.metas,
    })
    .merge(crate::browser::router(Arc::new(
        crate::browser::Stored::new(storage.clone(), Some(cluster_watch)),
    )));
    let mut tasks = tokio::task::JoinSet::new();
    let mut watch_stop = stop_rx.clone();
    tasks.spawn(async move {
        tokio::select! {
            () = cluster_watching => {}
            () = stopped(&mut watch_stop) => {}
        }
        Ok(())
    });
    if let Some(addr) = options.webhook_addr {
        let tls = tls.clone().ok_or(RunError::WebhookWithoutTls)?;
        let listener = TcpListener::bind(addr).await?;
        tasks.spawn(serve(
            listener,
            crate::webhook::router(),
            Some(tls),
            stop_rx.clone(),
        ));
    }
    tasks.spawn(serve_with(
        catalogs,
        router,
        tls.clone(),
        options.limits,
        stop_rx.clone(),
    ));
    if let Some(probes) = probes {
        tasks.spawn(serve(
            probes,
            server::probes_router(metrics.clone()),
            None,
            stop_rx.clone(),
        ));
    }

    let ctx = Arc::new(Context {
        client,
        storage,
        images: olm_image::Client::new(options.images.clone()),
        config: Config {
            external_address,
            https: tls.is_some(),
            work_dir: options.cache_dir.join("unpack"),
            retry_after: options.retry_after,
        },
        failures: Failures::default(),
        leading: options.leading.clone(),
    });
    // Pulls interrupted by a crash leave work directories behind.
    let _ = std::fs::remove_dir_all(&ctx.config.work_dir);
    let mut controller_stop = stop_rx.clone();
    let gc_ctx = ctx.clone();
    let mut gc_stop = stop_rx.clone();
    let gc_interval = options.gc_interval;
    tasks.spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(gc_interval) => controller::collect_garbage(&gc_ctx).await,
                _ = stopped(&mut gc_stop) => return Ok(()),
            }
        }
    });
    let mut controller_deadline = stop_rx.clone();
    tasks.spawn(async move {
        let controller = controller::run(ctx, catalog_store, catalog_events, async move {
            stopped(&mut controller_stop).await;
        });
        // The controller stops once its reconciles in progress are done; but while its watch
        // is failing (API server unreachable) it may never notice the stop, so it gets a grace
        // period and is then dropped. A reconcile cut short is simply done again next time.
        tokio::select! {
            () = controller => debug!("the controller stopped"),
            () = async {
                stopped(&mut controller_deadline).await;
                tokio::time::sleep(CONTROLLER_GRACE).await;
            } => warn!(grace = ?CONTROLLER_GRACE, "stopping: the controller did not stop in time; dropping it"),
        }
        Ok(())
    });

    shutdown.await;
    info!("stopping: no new connections; the controller finishes its reconciles");
    let _ = stop_tx.send(true);
    let mut result = Ok(());
    while let Some(done) = tasks.join_next().await {
        match done {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                error!(error = %e, "a listener failed");
                result = Err(RunError::Io(e));
            }
            Err(e) => error!(error = %e, "a server task failed"),
        }
    }
    info!("stopped");
    result
}
