//! Wiring: storage, the catalog server (plain or TLS), probes and metrics, and the controller, all
//! stopped together.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
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

/// Loads a rustls server config (HTTP/1.1 only, as upstream).
pub fn tls_config(tls: &Tls) -> Result<Arc<rustls::ServerConfig>, RunError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    olm_image::install_crypto_provider();
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&tls.cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| RunError::Tls(format!("{}: {e}", tls.cert.display())))?;
    let key = PrivateKeyDer::from_pem_file(&tls.key)
        .map_err(|e| RunError::Tls(format!("{}: {e}", tls.key.display())))?;
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| RunError::Tls(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// How long in-flight requests get to finish once the server is told to stop (upstream's
/// graceful shutdown timeout).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// How long the controller gets to finish its reconciles once told to stop.
pub const CONTROLLER_GRACE: Duration = Duration::from_secs(5);

/// Serves `router` on `listener` until `stop` flips, over TLS when `tls` is given. HTTP/1.1 only,
/// as upstream; a client gets [`server::READ_TIMEOUT`] to finish its TLS handshake and to send
/// each request head, so idle or trickling connections cannot pile up.
///
/// Stopping is graceful, as Kubernetes expects on SIGTERM: no new connection is accepted, idle
/// keep-alive connections are closed, and requests already being answered get up to
/// [`SHUTDOWN_GRACE`] to finish.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let local = listener.local_addr()?;
    loop {
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
        let service = TowerToHyperService::new(router.clone());
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let mut http1 =
                hyper_util::server::conn::auto::Builder::new(TokioExecutor::new()).http1_only();
            http1
                .http1()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(server::READ_TIMEOUT);
            let served = match acceptor {
                Some(acceptor) => {
                    let stream =
                        match tokio::time::timeout(server::READ_TIMEOUT, acceptor.accept(stream))
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
                    watcher
                        .watch(http1.serve_connection(TokioIo::new(stream), service))
                        .await
                }
                None => {
                    watcher
                        .watch(http1.serve_connection(TokioIo::new(stream), service))
                        .await
                }
            };
            if let Err(e) = served {
                debug!(%peer, error = %e, "connection ended with an error");
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

    let router = server::router(AppState {
        storage: storage.clone(),
        metrics: metrics.clone(),
        metas: options.metas,
    });
    let mut tasks = tokio::task::JoinSet::new();
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
    tasks.spawn(serve(catalogs, router, tls.clone(), stop_rx.clone()));
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
        let controller = controller::run(ctx, async move {
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
