//! Wiring: storage, the catalog server (plain or TLS), probes and metrics, and the controller, all
//! stopped together.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use olm_runtime::harness::Harness;
use olm_runtime::serve::{Limits, listen, serve, serve_with, stopped};
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
    /// The versions, suites and key exchange groups every TLS server offers (`--tls-profile`
    /// and the `--tls-custom-*` flags); upstream's `intermediate` by default.
    pub tls_profile: olm_tls::TlsProfile,
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
    /// Serve `/browse/cluster`, the page of every ClusterExtension with its namespace, version
    /// and condition messages, to whoever reaches the catalog port; off by default, as that port
    /// is unauthenticated and reachable from every pod.
    pub browse_cluster: bool,
    /// Whether this process leads (`olm run --leader-elect`); `None`: it always does. Every
    /// replica pulls and serves catalogs; only the leader writes ClusterCatalog status and
    /// metadata.
    pub leading: Option<tokio::sync::watch::Receiver<bool>>,
    /// Told when every catalog of the first listing has been pulled (see [`crate::warmup`]);
    /// `olm run` holds `/readyz` until then.
    pub warmup: Option<Arc<crate::warmup::Warmup>>,
    /// Where the ClusterCatalog controller counts and times its reconciles
    /// (`controller_runtime_*{controller="clustercatalog"}`), as `olm run` does for its other
    /// controllers; `None`: not counted.
    pub controller_metrics: Option<Arc<olm_runtime::metrics::Metrics>>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            cache_dir: PathBuf::from("/var/cache/catalogd"),
            external_address: None,
            tls: None,
            tls_profile: olm_tls::TlsProfile::default(),
            metas: true,
            images: olm_image::ClientOptions::default(),
            retry_after: Duration::from_secs(10),
            gc_interval: Duration::from_secs(12 * 3600),
            webhook_addr: None,
            metrics: None,
            limits: Limits::default(),
            browse_cluster: false,
            leading: None,
            warmup: None,
            controller_metrics: None,
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
    Tls(#[from] olm_tls::serving::TlsError),
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
/// when its files change ([`crate::tls`]), with `profile`'s versions, suites and groups. Files
/// that do not load now are an error.
pub fn tls_config(
    tls: &Tls,
    profile: &olm_tls::TlsProfile,
) -> Result<Arc<rustls::ServerConfig>, RunError> {
    let certs = olm_tls::serving::ReloadingCert::load(
        &tls.cert,
        &tls.key,
        olm_tls::serving::CHECK_INTERVAL,
    )?;
    Ok(olm_tls::serving::server_config(Arc::new(certs), profile)?)
}

/// A rustls server config (HTTP/1.1 only) from a PEM certificate chain and private key held in
/// memory, with `profile`'s versions, suites and groups.
pub fn tls_config_pem(
    cert: &[u8],
    key: &[u8],
    profile: &olm_tls::TlsProfile,
) -> Result<Arc<rustls::ServerConfig>, olm_tls::serving::TlsError> {
    let certs = olm_tls::serving::certified_key(cert, key)?;
    olm_tls::serving::server_config(
        Arc::new(rustls::sign::SingleCertAndKey::from(certs)),
        profile,
    )
}

/// How long the controller gets to finish its reconciles once told to stop.
pub const CONTROLLER_GRACE: Duration = Duration::from_secs(5);

/// Runs the catalog server, probes and the controller until `shutdown` resolves.
pub async fn run(
    options: Options,
    client: kube::Client,
    catalogs: TcpListener,
    probes: Option<TcpListener>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let tls = options
        .tls
        .as_ref()
        .map(|t| tls_config(t, &options.tls_profile))
        .transpose()?;
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
    let (cluster_watch, cluster_watching) = crate::browser::ClusterWatch::start(
        client.clone(),
        catalog_store.clone(),
        problems,
        options.browse_cluster,
    );
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
        let listener = listen(addr)?;
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
        harness: Harness::new(
            crate::controller::CONTROLLER,
            options.controller_metrics.clone(),
            crate::controller::backoff(options.retry_after),
        ),
        leading: options.leading.clone(),
        warmup: options
            .warmup
            .clone()
            .unwrap_or_else(|| Arc::new(crate::warmup::Warmup::new(None))),
        metrics: options.controller_metrics.clone(),
    });
    if let Some(metrics) = &ctx.metrics {
        metrics.register(crate::controller::CONTROLLER, 1);
    }
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
