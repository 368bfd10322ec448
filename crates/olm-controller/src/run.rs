//! `olm run`: one process running what a cluster needs for OLM v1 — the catalog server with its
//! ClusterCatalog controller, the ClusterExtension and ClusterObjectSet controllers and the
//! certificate provider — with probes, one `/metrics` for all of them and, when asked for, CPU and
//! heap profiles ([`crate::profiling`]).
//!
//! The expected flow of [`run`]:
//!
//! 1. Bind every listener (catalog server, health probes, metrics, profiles), so a port already
//!    in use is an error before anything touches the cluster. With profiles served, jemalloc's
//!    heap profiler starts recording.
//! 2. Create the system namespace if it is missing.
//! 3. Apply the OLM v1 CRDs server-side (a newer binary updates them) and wait until the API
//!    server serves them, so no watch starts against a kind that does not exist yet.
//! 4. Choose the webhook certificate provider (`--cert-provider`; `auto` looks for
//!    cert-manager's API).
//! 5. Start the catalog server, the controllers and the probe, metrics and profiling servers, and
//!    wait.
//! 6. On shutdown: listeners close, every controller is told to stop and gets
//!    [`CONTROLLER_GRACE`] to finish its reconciles, the catalog server finishes its responses
//!    in flight (see `olm_runtime::serve::serve`), and `run` returns `Ok`.
//!
//! Guarantees: a shutdown that comes during steps 2–4 stops at once and returns `Ok`. Every part
//! stops on the same signal; nothing keeps running after `run` returns.
//!
//! Assumptions: the credentials may create namespaces and CRDs and everything the controllers
//! install (upstream's operator-controller runs as cluster-admin too).
//!
//! Caveats: steps 2–3 are retried, each failure logged, while the API server is unreachable,
//! answers 5xx or 429, or is slow to serve the CRDs — a cluster that is still starting is waited
//! for, not crashed on.
//!
//! Errors: a listener that cannot be bound, a cache directory that cannot be created, a namespace
//! or CRD the API server refuses (4xx); and, after startup, a part that stops on its own (a
//! controller's stream ending, a listener failing) — the others are then stopped too, so the
//! process exits non-zero and is restarted rather than running half of OLM.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::any;
use futures::FutureExt;
use futures::future::{BoxFuture, Shared as SharedFuture};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::{error, info, warn};

use crate::metrics::Metrics;
use olm_cluster::context::{FIELD_MANAGER, Shared};

mod component;
mod flags;
mod gates;
pub use component::Component;
pub use flags::FlagError;
pub use gates::FeatureGates;

/// The namespace OLM's own objects go to unless told otherwise (upstream's).
pub const DEFAULT_SYSTEM_NAMESPACE: &str = "olmv1-system";

/// Field owner of the CRDs `olm run` applies.
pub const CRD_FIELD_MANAGER: &str = "olm-run";

/// How long the applied CRDs get to be served.
pub const CRD_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the controllers get to finish their reconciles once told to stop.
pub const CONTROLLER_GRACE: Duration = Duration::from_secs(5);

/// The `/readyz` check that fails until this replica serves every ClusterCatalog it was started
/// with ([`olm_catalogd::warmup`]).
pub const CATALOGS_CHECK: &str = "catalogs";

/// Who issues webhook serving certificates, as chosen with `--cert-provider`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CertProviderChoice {
    /// cert-manager when its API (`cert-manager.io/v1`) is served, else the built-in provider.
    #[default]
    Auto,
    /// The built-in provider of `olm run`.
    Builtin,
    /// cert-manager.
    CertManager,
    /// OpenShift's service CA operator.
    OpenshiftServiceCa,
    /// None: bundles with webhooks are refused.
    None,
}

impl CertProviderChoice {
    /// Parses the flag's spelling.
    pub fn parse(s: &str) -> Result<CertProviderChoice, FlagError> {
        match s {
            "auto" => Ok(CertProviderChoice::Auto),
            "builtin" => Ok(CertProviderChoice::Builtin),
            "cert-manager" => Ok(CertProviderChoice::CertManager),
            "openshift-service-ca" => Ok(CertProviderChoice::OpenshiftServiceCa),
            "none" => Ok(CertProviderChoice::None),
            other => Err(FlagError::Unknown {
                what: "certificate provider",
                value: other.to_owned(),
                want: "auto, builtin, cert-manager, openshift-service-ca or none",
            }),
        }
    }
}

/// Which OLM `olm run` runs, as chosen with `--olm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Which {
    /// OLM v0 (olm-operator's controllers) only.
    V0,
    /// OLM v1 (the catalog server and the installer) only.
    V1,
    /// Both.
    #[default]
    Both,
}

impl Which {
    /// Parses the flag's spelling.
    pub fn parse(s: &str) -> Result<Which, FlagError> {
        match s {
            "v0" => Ok(Which::V0),
            "v1" => Ok(Which::V1),
            "both" => Ok(Which::Both),
            other => Err(FlagError::Unknown {
                what: "OLM",
                value: other.to_owned(),
                want: "v0, v1 or both",
            }),
        }
    }

    /// Whether OLM v0 runs.
    pub fn v0(self) -> bool {
        self != Which::V1
    }

    /// Whether OLM v1 runs.
    pub fn v1(self) -> bool {
        self != Which::V0
    }
}

/// How to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Which OLM runs (`--olm`).
    pub which: Which,
    /// Which of OLM v1's components run (`--component`); checked against `which` by [`serve`].
    pub component: Component,
    /// Where ClusterObjectSet Secrets and OLM's own objects go; created if missing.
    pub system_namespace: String,
    /// Root of every on-disk cache: the catalog server's under `catalogd/`, the installer's
    /// (bundle unpacks) under `extensions/`.
    pub cache_path: PathBuf,
    /// Where the catalog server listens.
    pub catalogs_addr: SocketAddr,
    /// The catalog server's settings; its `cache_dir`, `images`, `metrics` and `tls_profile`
    /// are set by [`run`] (from `cache_path`, `images`, the process's metrics and
    /// `tls_profile`).
    pub catalogd: olm_catalogd::Options,
    /// `/healthz` and `/readyz`; off when `None`.
    pub health_probe_addr: Option<SocketAddr>,
    /// `/metrics`; off when `None`. The same address as the probes serves all three (only
    /// when `metrics_secure` is off).
    pub metrics_addr: Option<SocketAddr>,
    /// Serve `/metrics` over HTTPS (the catalog server's certificate, else a self-signed one)
    /// to clients the API server authenticates and authorizes ([`crate::metrics_auth`]).
    pub metrics_secure: bool,
    /// Who issues webhook serving certificates.
    pub cert_provider: CertProviderChoice,
    /// Registry access, for catalog and bundle images alike.
    pub images: olm_image::ClientOptions,
    /// The ClusterExtension controller's own settings (catalog server CAs, global pull secret).
    pub extension: crate::extension::Options,
    /// Leader election (`--leader-elect`) with these timings; `None`: this process always leads.
    pub leader_election: Option<olm_runtime::leader::decide::Timings>,
    /// Serve TLS with a certificate `olm` issues and keeps in a Secret (`--tls-secret`); it
    /// replaces `catalogd.tls`, and its CA is trusted for the catalog server.
    pub serving_tls: Option<crate::serving_tls::Config>,
    /// `/debug/pprof/` over HTTPS (the certificate of secure metrics) for clients with a
    /// certificate of its CA; off when `None`.
    pub pprof: Option<crate::profiling::Config>,
    /// Where OLM v0's PackageManifest API listens and whether `olm` routes its Service itself;
    /// its `tls_profile` is set by [`run`].
    pub packageserver: olm_v0_controller::packageserver::Options,
    /// The versions, suites and key exchange groups of every TLS server: the catalog server,
    /// the label webhook, secure metrics, profiles and the PackageManifest API (`--tls-profile`
    /// and the `--tls-custom-*` flags).
    pub tls_profile: olm_tls::TlsProfile,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            which: Which::Both,
            component: Component::All,
            system_namespace: DEFAULT_SYSTEM_NAMESPACE.to_owned(),
            cache_path: PathBuf::from("/var/cache/olm"),
            catalogs_addr: SocketAddr::from(([0, 0, 0, 0], 8443)),
            catalogd: olm_catalogd::Options::default(),
            health_probe_addr: Some(SocketAddr::from(([0, 0, 0, 0], 8081))),
            metrics_addr: Some(SocketAddr::from(([0, 0, 0, 0], 8080))),
            metrics_secure: false,
            cert_provider: CertProviderChoice::Auto,
            images: olm_image::ClientOptions::default(),
            leader_election: None,
            extension: crate::extension::Options::default(),
            serving_tls: None,
            pprof: None,
            packageserver: olm_v0_controller::packageserver::Options::default(),
            tls_profile: olm_tls::TlsProfile::default(),
        }
    }
}

/// Why `olm run` could not start or stopped on its own.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A listener could not be bound.
    #[error("listening on {addr}: {source}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A cache directory could not be created.
    #[error("creating {}: {source}", path.display())]
    Cache {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The kubeconfig did not give a client.
    #[error("connecting to the API server: {0}")]
    Client(#[source] kube::Error),
    /// The system namespace could not be read or created.
    #[error("creating the system namespace {namespace}: {source}")]
    Namespace {
        /// The namespace.
        namespace: String,
        /// Why.
        source: kube::Error,
    },
    /// A generated CRD did not read as a CustomResourceDefinition (a bug of the binary).
    #[error("building the OLM v1 CRDs: {0}")]
    CrdBuild(#[source] serde_json::Error),
    /// A committed OLM v0 CRD did not read (a bug of the binary).
    #[error("building the OLM v0 CRDs: {0}")]
    V0Crds(String),
    /// `OLMConfig cluster` could not be read or created.
    #[error("creating OLMConfig cluster: {source}")]
    OlmConfig {
        /// Why.
        source: kube::Error,
    },
    /// A CRD of the API could not be applied or read back.
    #[error("installing the CRD {name}: {source}")]
    Crd {
        /// The CRD.
        name: String,
        /// Why.
        source: kube::Error,
    },
    /// The applied CRDs were not served in time.
    #[error("the CRD {name} was not established within {timeout:?}")]
    CrdNotEstablished {
        /// The first CRD still not served.
        name: String,
        /// How long was waited.
        timeout: Duration,
    },
    /// The catalog server could not start or failed.
    #[error("the catalog server: {0}")]
    Catalogd(#[from] olm_catalogd::run::RunError),
    /// Leadership was lost: the process stops so that it is restarted as a candidate.
    #[error("{0}")]
    Leader(#[from] olm_runtime::leader::LeaderError),
    /// A listener failed while serving.
    #[error("serving {what}: {source}")]
    Serve {
        /// Which listener.
        what: &'static str,
        /// Why.
        source: std::io::Error,
    },
    /// `--component` and `--olm` disagree.
    #[error(transparent)]
    Component(FlagError),
    /// A part of the process stopped before it was told to.
    #[error("{0} stopped on its own")]
    Stopped(&'static str),
    /// Secure metrics were asked for on the probes' plain HTTP address.
    #[error("serving metrics over HTTPS: {0}")]
    MetricsTls(String),
    /// The certificate of secure metrics and profiles could not be issued.
    #[error("the serving certificate of /metrics and /debug/pprof/: {0}")]
    ServingCert(String),
    /// The certificate of secure metrics and profiles could not be served.
    #[error("the serving certificate of /metrics and /debug/pprof/: {0}")]
    ServingCertTls(#[source] olm_tls::serving::TlsError),
    /// The self-issued serving certificate could not be had or kept.
    #[error("{0}")]
    ServingTls(#[from] crate::serving_tls::Error),
}

/// The process's listeners, bound before anything else happens.
#[derive(Debug)]
pub struct Listeners {
    /// The catalog server, unless the component runs none.
    pub catalogs: Option<TcpListener>,
    /// `/healthz`, `/readyz` (and `/metrics` when it has the same address).
    pub probes: Option<TcpListener>,
    /// `/metrics`, when on an address of its own.
    pub metrics: Option<TcpListener>,
    /// Whether `probes` also serves `/metrics`.
    pub metrics_on_probes: bool,
    /// `/debug/pprof/`.
    pub pprof: Option<TcpListener>,
}

impl Listeners {
    /// Binds the addresses of `options`; a port 0 gets a free port (see `local_addr`).
    pub async fn bind(options: &Options) -> Result<Listeners, RunError> {
        let catalogs = if options.which.v1() && options.component.serves_catalogs() {
            Some(bind(options.catalogs_addr).await?)
        } else {
            None
        };
        let same =
            options.metrics_addr.is_some() && options.metrics_addr == options.health_probe_addr;
        // Port 0 asks for any free port: secure metrics then simply get one of their own.
        let any_port = options.metrics_addr.is_some_and(|a| a.port() == 0);
        if same && options.metrics_secure && !any_port {
            return Err(RunError::MetricsTls(
                "the metrics address is the probes' (plain HTTP): give metrics an address of their own, or serve them plain".into(),
            ));
        }
        let shared = same && !options.metrics_secure;
        let probes = match options.health_probe_addr {
            Some(addr) => Some(bind(addr).await?),
            None => None,
        };
        let metrics = match options.metrics_addr {
            Some(addr) if !shared => Some(bind(addr).await?),
            _ => None,
        };
        let pprof = match &options.pprof {
            Some(pprof) => Some(bind(pprof.addr).await?),
            None => None,
        };
        Ok(Listeners {
            catalogs,
            probes,
            metrics,
            metrics_on_probes: shared,
            pprof,
        })
    }
}

async fn bind(addr: SocketAddr) -> Result<TcpListener, RunError> {
    olm_runtime::serve::listen(addr).map_err(|source| RunError::Listen { addr, source })
}

/// Binds the listeners of `options` and runs everything until `shutdown` resolves; see the
/// module documentation for the flow.
pub async fn run(
    options: Options,
    kube_config: kube::Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let listeners = Listeners::bind(&options).await?;
    serve(options, kube_config, listeners, shutdown).await
}

/// A stop signal every part can hold: cloneable, `Send + Sync`, resolving once `stop` flips.
type Stop = SharedFuture<BoxFuture<'static, ()>>;

fn stop_future(mut stop: watch::Receiver<bool>) -> Stop {
    async move {
        let _ = stop.wait_for(|s| *s).await;
    }
    .boxed()
    .shared()
}

/// The parts of the process, each a task whose end (before the process is told to stop)
/// stops everything: what it is, and how it ended.
type Tasks = JoinSet<(&'static str, Result<(), RunError>)>;

/// [`run`] with listeners bound by the caller (e.g. on free ports it must know beforehand).
///
/// The flow: the options checked; the shared context set up (stopping early if told to); the
/// serving certificates had before anything serves with them; then every part started — the
/// process's own (election, API server monitor, certificate upkeep), the catalog server, the
/// controllers of each OLM it runs, the listeners — and run until one ends or the process is
/// told to stop, when every part is stopped and awaited.
pub async fn serve(
    mut options: Options,
    kube_config: kube::Config,
    listeners: Listeners,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    options
        .component
        .check(options.which)
        .map_err(RunError::Component)?;
    let shutdown = shutdown.boxed().shared();
    let (stop_tx, stop_rx) = watch::channel(false);
    let stop = stop_future(stop_rx);
    options.catalogd.tls_profile = options.tls_profile.clone();
    options.packageserver.tls_profile = options.tls_profile.clone();
    if listeners.pprof.is_some() {
        // Before the caches fill: heap profiles show only what is allocated from now on.
        crate::profiling::activate_heap().await;
    }

    let setup = setup(&options, kube_config);
    let shared = tokio::select! {
        ready = setup => ready?,
        () = shutdown.clone() => {
            info!("stopping before startup finished");
            return Ok(());
        }
    };
    let serving_tls = serving_certificate(&mut options, &shared).await?;
    let tls = ListenerTls::load(&options, &listeners)?;

    let mut tasks = Tasks::new();
    let leading = spawn_process_parts(&mut tasks, &options, &shared, serving_tls, &stop);
    // What `/readyz` reports: the packageserver says here when it cannot listen, and a replica
    // is not ready before it serves the catalogs it was started with.
    let readiness = olm_runtime::health::Readiness::default();
    let catalogd_metrics = Arc::new(olm_catalogd::metrics::Metrics::default());
    let Listeners {
        catalogs,
        probes,
        metrics,
        metrics_on_probes,
        pprof,
    } = listeners;
    spawn_catalog_server(
        &mut tasks,
        &options,
        &shared,
        catalogs,
        (&leading, &catalogd_metrics, &readiness),
        &stop,
    )?;
    spawn_controllers(&mut tasks, &options, &shared, &leading, &readiness, &stop).await;
    let metrics_router = metrics_router(shared.metrics.clone(), catalogd_metrics);
    if let Some(probes) = probes {
        let mut router = olm_runtime::health::router(readiness);
        if metrics_on_probes {
            router = router.merge(metrics_router.clone());
        }
        spawn_server(
            &mut tasks,
            "the health probes",
            (probes, olm_runtime::serve::Limits::default()),
            router,
            None,
            &stop,
        );
    }
    if let Some(metrics) = metrics {
        let (metrics_router, tls) = if options.metrics_secure {
            let auth = crate::metrics_auth::Auth::new(shared.client.clone());
            let router = metrics_router.layer(axum::middleware::from_fn_with_state(
                auth,
                crate::metrics_auth::require,
            ));
            (router, tls.own.clone())
        } else {
            (metrics_router, None)
        };
        spawn_server(
            &mut tasks,
            "the metrics server",
            (metrics, olm_runtime::serve::Limits::default()),
            metrics_router,
            tls,
            &stop,
        );
    }
    if let (Some(listener), Some(tls)) = (pprof, tls.pprof) {
        spawn_server(
            &mut tasks,
            "the profiling server",
            (listener, crate::profiling::limits()),
            crate::profiling::router(stop.clone()),
            Some(tls),
            &stop,
        );
    }
    run_until_stopped(tasks, shutdown, stop_tx).await
}

/// The self-issued serving certificate, when `--tls-secret` asks for one: had before anything
/// serves with it, served by the catalog server and trusted by the installer's catalog client.
async fn serving_certificate(
    options: &mut Options,
    shared: &Shared,
) -> Result<Option<(crate::serving_tls::Config, crate::serving_tls::Serving)>, RunError> {
    let Some(config) = &options.serving_tls else {
        return Ok(None);
    };
    let serving = crate::serving_tls::ensure(&shared.client, config).await?;
    options.catalogd.tls = Some(serving.tls.clone());
    options
        .extension
        .catalogs
        .ca_certificates
        .push(serving.ca_pem.clone());
    Ok(Some((config.clone(), serving)))
}

/// The TLS of secure metrics and of profiling, loaded before anything starts: a certificate
/// that cannot be loaded stops the process at once.
struct ListenerTls {
    /// The process's own serving certificate, for secure metrics and profiling.
    own: Option<Arc<rustls::ServerConfig>>,
    /// Profiling's: the same certificate, and only the clients its CA verifies.
    pprof: Option<Arc<rustls::ServerConfig>>,
}

impl ListenerTls {
    fn load(options: &Options, listeners: &Listeners) -> Result<ListenerTls, RunError> {
        let secure_metrics = options.metrics_secure && listeners.metrics.is_some();
        let own = if secure_metrics || listeners.pprof.is_some() {
            Some(own_tls(options)?)
        } else {
            None
        };
        let pprof = match (&options.pprof, &own) {
            (Some(pprof), Some(own)) => Some(
                crate::profiling::tls(own, &pprof.clients, &options.tls_profile)
                    .map_err(RunError::ServingCertTls)?,
            ),
            _ => None,
        };
        Ok(ListenerTls { own, pprof })
    }
}

/// The process's own parts: the leader election (when asked for), the API server monitor and
/// the self-issued certificate's upkeep. Whether this process leads: always without an
/// election; with one, once it holds the lease (losing it ends the election task with an
/// error, which stops everything).
fn spawn_process_parts(
    tasks: &mut Tasks,
    options: &Options,
    shared: &Arc<Shared>,
    serving_tls: Option<(crate::serving_tls::Config, crate::serving_tls::Serving)>,
    stop: &Stop,
) -> watch::Receiver<bool> {
    let (leading_tx, leading) = watch::channel(options.leader_election.is_none());
    if let Some(timings) = options.leader_election {
        let election = olm_runtime::leader::Election::new(
            &shared.system_namespace,
            options.component.lease(),
            timings,
        );
        let client = shared.client.clone();
        let stop = stop.clone();
        tasks.spawn(async move {
            let elected = olm_runtime::leader::run(client, election, leading_tx, stop).await;
            ("the leader election", elected.map_err(RunError::from))
        });
    }
    {
        // After an outage, tells every controller once the API server answers again.
        let client = shared.client.clone();
        let stop = stop.clone();
        tasks.spawn(async move {
            olm_runtime::reconnect::monitor(client, stop).await;
            ("the API server monitor", Ok(()))
        });
    }
    if let Some((config, serving)) = serving_tls {
        let client = shared.client.clone();
        let stop = stop.clone();
        tasks.spawn(async move {
            let kept = crate::serving_tls::maintain(client, config, serving, stop).await;
            ("the serving certificate", kept.map_err(RunError::from))
        });
    }
    leading
}

/// The catalog server on `listener` (when this component serves catalogs), with `/readyz`
/// failing until every ClusterCatalog listed at start is served.
fn spawn_catalog_server(
    tasks: &mut Tasks,
    options: &Options,
    shared: &Shared,
    listener: Option<TcpListener>,
    (leading, metrics, readiness): (
        &watch::Receiver<bool>,
        &Arc<olm_catalogd::metrics::Metrics>,
        &olm_runtime::health::Readiness,
    ),
    stop: &Stop,
) -> Result<(), RunError> {
    let addr = match &listener {
        Some(l) => Some(l.local_addr().map_err(|source| RunError::Serve {
            what: "the catalog server",
            source,
        })?),
        None => None,
    };
    info!(
        catalogs = ?addr,
        component = options.component.name(),
        namespace = %shared.system_namespace,
        cache = %options.cache_path.display(),
        "starting"
    );
    let Some(listener) = listener else {
        return Ok(());
    };
    let mut catalogd = options.catalogd.clone();
    catalogd.cache_dir = options.cache_path.join("catalogd");
    catalogd.images = options.images.clone();
    catalogd.metrics = Some(metrics.clone());
    catalogd.leading = Some(leading.clone());
    catalogd.controller_metrics = Some(shared.metrics.clone());
    let (warm_tx, mut warm_rx) = watch::channel(false);
    catalogd.warmup = Some(Arc::new(olm_catalogd::warmup::Warmup::new(Some(warm_tx))));
    readiness.failing(CATALOGS_CHECK, "pulling the ClusterCatalogs' content");
    let warm = readiness.clone();
    // Not one of the parts whose end stops the process: it ends once warm.
    tokio::spawn(async move {
        while !*warm_rx.borrow_and_update() {
            if warm_rx.changed().await.is_err() {
                return;
            }
        }
        warm.passing(CATALOGS_CHECK);
        info!("serving every ClusterCatalog listed at start");
    });
    let client = shared.client.clone();
    let stop = stop.clone();
    tasks.spawn(async move {
        let served = olm_catalogd::run(catalogd, client, listener, None, stop).await;
        ("the catalog server", served.map_err(RunError::from))
    });
    Ok(())
}

/// The controllers of each OLM this component runs: OLM v1's installer (and the built-in
/// certificate provider), OLM v0's processes; without OLM v0, the PackageManifest
/// registration an earlier run left is withdrawn.
async fn spawn_controllers(
    tasks: &mut Tasks,
    options: &Options,
    shared: &Arc<Shared>,
    leading: &watch::Receiver<bool>,
    readiness: &olm_runtime::health::Readiness,
    stop: &Stop,
) {
    let installs = options.component.installs();
    if !installs {
        return;
    }
    let parts = (shared.clone(), leading, stop.clone());
    if options.which.v1() {
        let extension_options = options.extension.clone();
        spawn_controller(
            tasks,
            crate::extension::CONTROLLER,
            parts.clone(),
            move |shared, stop| crate::extension::run_with(shared, extension_options, stop),
        );
        spawn_controller(
            tasks,
            crate::objectset::CONTROLLER,
            parts.clone(),
            crate::objectset::run,
        );
        if shared.cert_provider == Some(olm_bundle::CertProvider::Builtin) {
            spawn_controller(
                tasks,
                olm_cluster::certs::CONTROLLER,
                parts.clone(),
                olm_cluster::certs::run,
            );
        }
    }
    if !options.which.v0() {
        // Nothing here serves PackageManifests: a registration an earlier `olm run` left would
        // make every namespace deletion of the cluster hang. (A catalogd beside an
        // operator-controller that runs OLM v0 leaves it to that one.)
        if olm_v0_controller::packageserver::withdraw(&shared.client, &shared.system_namespace)
            .await
        {
            info!(
                apiservice = olm_v0_controller::packageserver::APISERVICE,
                "removed the PackageManifest APIService: OLM v0 does not run"
            );
        }
        return;
    }
    for controller in [
        olm_v0_controller::GROUP_CONTROLLER,
        olm_v0_controller::OPERATOR_CONTROLLER,
        olm_v0_controller::CATALOG_SOURCE_CONTROLLER,
        olm_v0_controller::COPY_CONTROLLER,
        olm_v0_controller::SUBSCRIPTION_CONTROLLER,
        olm_v0_controller::INSTALL_PLAN_CONTROLLER,
    ] {
        shared.metrics.register(controller, 1);
    }
    let packageserver = options.packageserver.clone();
    let readiness = readiness.clone();
    spawn_controller(
        tasks,
        olm_v0_controller::CSV_CONTROLLER,
        parts,
        move |shared, stop| olm_v0_controller::run(shared, packageserver, readiness, stop),
    );
}

/// Runs the parts until told to stop, any part ending before that being a failure of the
/// whole; then stops every part and waits for it. The first failure is the result.
async fn run_until_stopped(
    mut tasks: Tasks,
    shutdown: impl Future<Output = ()>,
    stop_tx: watch::Sender<bool>,
) -> Result<(), RunError> {
    let early = tokio::select! {
        () = shutdown => None,
        done = tasks.join_next() => done,
    };
    let mut result = Ok(());
    if let Some(done) = early {
        let (what, outcome) = joined(done);
        error!(part = what, "stopped on its own; stopping everything");
        result = Err(outcome.err().unwrap_or(RunError::Stopped(what)));
    } else {
        info!("stopping: no new connections; the controllers finish their reconciles");
    }
    let _ = stop_tx.send(true);
    while let Some(done) = tasks.join_next().await {
        let (what, outcome) = joined(done);
        if let Err(e) = outcome {
            error!(part = what, error = %e, "failed while stopping");
            if result.is_ok() {
                result = Err(e);
            }
        }
    }
    info!("stopped");
    result
}

/// The name and outcome of a finished task; a panicked task counts as stopped.
fn joined(
    done: Result<(&'static str, Result<(), RunError>), tokio::task::JoinError>,
) -> (&'static str, Result<(), RunError>) {
    match done {
        Ok(done) => done,
        Err(e) => {
            error!(error = %e, "a task of olm run failed");
            ("a task", Err(RunError::Stopped("a task")))
        }
    }
}

/// Runs one controller as a task once this process leads: it is told to stop with `stop` and
/// gets [`CONTROLLER_GRACE`] after that; while its watch is failing (API server unreachable) it
/// may never notice the stop, so it is then dropped — a reconcile cut short is simply done again
/// by the next process.
fn spawn_controller<F, Fut>(
    tasks: &mut Tasks,
    name: &'static str,
    (shared, leading, stop): (Arc<Shared>, &watch::Receiver<bool>, Stop),
    controller: F,
) where
    F: FnOnce(Arc<Shared>, Stop) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    shared.metrics.register(name, 1);
    // Futures do nothing until polled: the controller starts watching only after the wait.
    let running = controller(shared, stop.clone());
    let mut leading = leading.clone();
    tasks.spawn(async move {
        tokio::select! {
            led = leading.wait_for(|l| *l) => {
                if led.is_err() {
                    // The election ended without this process leading: it is stopping.
                    return (name, Ok(()));
                }
            }
            () = stop.clone() => return (name, Ok(())),
        }
        let deadline = async {
            stop.await;
            tokio::time::sleep(CONTROLLER_GRACE).await;
        };
        tokio::select! {
            () = running => {}
            () = deadline => warn!(controller = name, grace = ?CONTROLLER_GRACE, "stopping: the controller did not stop in time; dropping it"),
        }
        (name, Ok(()))
    });
}

/// The TLS of the metrics and profiling servers: the catalog server's certificate when it has
/// one (upstream serves metrics with the process's serving certificate), otherwise one issued
/// here for `localhost` and the host name, held in memory only, as controller-runtime does
/// without a certificate.
fn own_tls(options: &Options) -> Result<Arc<rustls::ServerConfig>, RunError> {
    if let Some(tls) = &options.catalogd.tls {
        return olm_catalogd::run::tls_config(tls, &options.tls_profile)
            .map_err(|e| RunError::ServingCert(e.to_string()));
    }
    let now = jiff::Timestamp::now();
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".to_owned());
    let plan = olm_security::certs::IssuePlan {
        ca_common_name: "olm-metrics-ca".to_owned(),
        common_name: "localhost".to_owned(),
        dns_names: vec!["localhost".to_owned(), host],
        not_before: now - jiff::SignedDuration::from_hours(1),
        not_after: now + jiff::SignedDuration::from_hours(24 * 365),
    };
    let issued =
        olm_cluster::certs::issue(&plan).map_err(|e| RunError::ServingCert(e.to_string()))?;
    olm_catalogd::run::tls_config_pem(
        issued.cert_pem.as_bytes(),
        issued.key_pem.as_bytes(),
        &options.tls_profile,
    )
    .map_err(RunError::ServingCertTls)
}

fn spawn_server(
    tasks: &mut Tasks,
    what: &'static str,
    (listener, limits): (TcpListener, olm_runtime::serve::Limits),
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    stop: &Stop,
) {
    let (tx, rx) = watch::channel(false);
    let stop = stop.clone();
    tasks.spawn(async move {
        let server = olm_runtime::serve::serve_with(listener, router, tls, limits, rx);
        tokio::pin!(server);
        let served = tokio::select! {
            served = &mut server => served,
            () = stop => {
                let _ = tx.send(true);
                server.await
            }
        };
        (
            what,
            served.map_err(|source| RunError::Serve { what, source }),
        )
    });
}

/// One `/metrics` for the whole process: catalogd's request durations, then the controllers'
/// series (families in name order).
fn metrics_router(
    controllers: Arc<Metrics>,
    catalogd: Arc<olm_catalogd::metrics::Metrics>,
) -> Router {
    Router::new().route(
        "/metrics",
        any(move || {
            let text = format!("{}{}", catalogd.render(), controllers.render());
            async move {
                (
                    [(http::header::CONTENT_TYPE, "text/plain; version=0.0.4")],
                    text,
                )
            }
        }),
    )
}

/// Longest wait between two attempts to reach the API server at startup.
const STARTUP_RETRY_MAX: Duration = Duration::from_secs(10);

impl RunError {
    /// Whether trying again may help: the API server was unreachable or answered 5xx (starting,
    /// overloaded), or the CRDs were slow to be served. A refusal (4xx) is final.
    fn transient(&self) -> bool {
        let kube = match self {
            RunError::Namespace { source, .. }
            | RunError::Crd { source, .. }
            | RunError::OlmConfig { source } => source,
            RunError::CrdNotEstablished { .. } => return true,
            _ => return false,
        };
        match kube {
            kube::Error::Api(status) => status.code >= 500 || status.code == 429,
            _ => true,
        }
    }
}

/// Steps 2–4: namespace, CRDs, certificate provider; returns what the controllers share. An API
/// server that cannot be reached yet (a cluster still starting) is tried again, with each
/// failure logged, until it answers or the process is told to stop.
async fn setup(options: &Options, kube_config: kube::Config) -> Result<Arc<Shared>, RunError> {
    let client = kube::Client::try_from(kube_config.clone()).map_err(RunError::Client)?;
    let extensions_cache = options.cache_path.join("extensions");
    std::fs::create_dir_all(&extensions_cache).map_err(|source| RunError::Cache {
        path: extensions_cache.clone(),
        source,
    })?;
    let mut wait = Duration::from_millis(500);
    loop {
        let attempt = async {
            ensure_namespace(&client, &options.system_namespace).await?;
            install_crds(&client, options.which).await?;
            if options.which.v0() {
                ensure_olm_config(&client).await?;
            }
            Ok::<(), RunError>(())
        };
        match attempt.await {
            Ok(()) => break,
            Err(e) if e.transient() => {
                warn!(error = %e, retry_in = ?wait, "startup: the API server is not ready; trying again");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(STARTUP_RETRY_MAX);
            }
            Err(e) => return Err(e),
        }
    }
    let cert_provider = choose_cert_provider(&client, options.cert_provider).await;
    info!(
        cert_provider = ?cert_provider,
        choice = ?options.cert_provider,
        "webhook certificate provider"
    );
    Ok(Arc::new(Shared {
        client,
        kube_config,
        system_namespace: options.system_namespace.clone(),
        cache_dir: extensions_cache,
        metrics: Arc::new(Metrics::default()),
        images: olm_image::Client::new(options.images.clone()),
        cert_provider,
        field_manager: FIELD_MANAGER,
        global_pull_secret: options.extension.global_pull_secret.clone(),
    }))
}

/// Creates `name` unless it exists; one created meanwhile by someone else is fine.
async fn ensure_namespace(client: &kube::Client, name: &str) -> Result<(), RunError> {
    let api: Api<Namespace> = Api::all(client.clone());
    let failed = |source| RunError::Namespace {
        namespace: name.to_owned(),
        source,
    };
    if api.get_opt(name).await.map_err(failed)?.is_some() {
        return Ok(());
    }
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    match api.create(&PostParams::default(), &namespace).await {
        Ok(_) => {
            info!(namespace = name, "created the system namespace");
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(e) => Err(failed(e)),
    }
}

/// Creates `OLMConfig cluster`, with an empty spec, unless it exists — upstream ships it in
/// its install manifests, and users and tools (`kubectl patch olmconfig cluster …`, upstream's
/// e2e suite) expect to find it. One that exists is never written: it is the user's.
async fn ensure_olm_config(client: &kube::Client) -> Result<(), RunError> {
    use olm_v0_api::v1::{OLM_CONFIG_NAME, OLMConfig};
    let api: Api<OLMConfig> = Api::all(client.clone());
    let failed = |source| RunError::OlmConfig { source };
    if api
        .get_metadata_opt(OLM_CONFIG_NAME)
        .await
        .map_err(failed)?
        .is_some()
    {
        return Ok(());
    }
    let config = OLMConfig::new(OLM_CONFIG_NAME, olm_v0_api::v1::OlmConfigSpec::default());
    match api.create(&PostParams::default(), &config).await {
        Ok(_) => {
            info!(name = OLM_CONFIG_NAME, "created the OLMConfig");
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(e) => Err(failed(e)),
    }
}

/// Applies every CRD of the OLM that runs server-side (forced: the binary's CRDs win over an
/// older copy) and waits until each is `Established`.
async fn install_crds(client: &kube::Client, which: Which) -> Result<(), RunError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(CRD_FIELD_MANAGER).force();
    let mut names = Vec::new();
    let mut crds = Vec::new();
    if which.v1() {
        for crd in olm_api::crds() {
            crds.push(serde_json::from_value(crd.value).map_err(RunError::CrdBuild)?);
        }
    }
    if which.v0() {
        crds.extend(olm_v0_api::manifests().map_err(|e| RunError::V0Crds(e.to_string()))?);
    }
    for crd in crds {
        let crd: CustomResourceDefinition = crd;
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .map_err(|source| RunError::Crd {
                name: name.clone(),
                source,
            })?;
        names.push(name);
    }
    let deadline = tokio::time::Instant::now() + CRD_TIMEOUT;
    for name in names {
        loop {
            let current = api.get(&name).await.map_err(|source| RunError::Crd {
                name: name.clone(),
                source,
            })?;
            let established = current.status.and_then(|s| s.conditions).is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            });
            if established {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(RunError::CrdNotEstablished {
                    name,
                    timeout: CRD_TIMEOUT,
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Ok(())
}

/// Turns the flag into a provider; `auto` asks the API server whether cert-manager is there.
async fn choose_cert_provider(
    client: &kube::Client,
    choice: CertProviderChoice,
) -> Option<olm_bundle::CertProvider> {
    match choice {
        CertProviderChoice::CertManager => Some(olm_bundle::CertProvider::CertManager),
        CertProviderChoice::OpenshiftServiceCa => {
            Some(olm_bundle::CertProvider::OpenshiftServiceCa)
        }
        CertProviderChoice::None => None,
        CertProviderChoice::Builtin => Some(olm_bundle::CertProvider::Builtin),
        CertProviderChoice::Auto => Some(olm_cluster::certs::detect(client).await),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plain metrics may share the probes' address; secure ones may not, except that port 0
    /// (any free port) gives them one of their own.
    #[tokio::test]
    async fn metrics_share_the_probe_port_only_when_plain() {
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let options = |secure| Options {
            catalogs_addr: any,
            health_probe_addr: Some(any),
            metrics_addr: Some(any),
            metrics_secure: secure,
            ..Options::default()
        };
        let plain = Listeners::bind(&options(false)).await.unwrap();
        assert!(plain.metrics_on_probes && plain.metrics.is_none());
        let secure = Listeners::bind(&options(true)).await.unwrap();
        assert!(!secure.metrics_on_probes && secure.metrics.is_some());
        let fixed = TcpListener::bind(any).await.unwrap().local_addr().unwrap();
        let clash = Options {
            health_probe_addr: Some(fixed),
            metrics_addr: Some(fixed),
            ..options(true)
        };
        assert!(matches!(
            Listeners::bind(&clash).await,
            Err(RunError::MetricsTls(_))
        ));
    }

    #[test]
    fn cert_provider_spellings() {
        for (s, want) in [
            ("auto", CertProviderChoice::Auto),
            ("builtin", CertProviderChoice::Builtin),
            ("cert-manager", CertProviderChoice::CertManager),
            (
                "openshift-service-ca",
                CertProviderChoice::OpenshiftServiceCa,
            ),
            ("none", CertProviderChoice::None),
        ] {
            assert_eq!(CertProviderChoice::parse(s), Ok(want));
        }
        assert_eq!(
            CertProviderChoice::parse("vault").map_err(|e| e.to_string()),
            Err(r#"unknown certificate provider "vault" (want auto, builtin, cert-manager, openshift-service-ca or none)"#.to_owned())
        );
    }

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(
            kube::core::Status::failure("x", "y")
                .with_code(code)
                .boxed(),
        )
    }

    /// A cluster that is starting (unreachable, 5xx, throttling) is waited for; a refusal is not.
    #[test]
    fn which_startup_errors_are_tried_again() {
        let namespace = |source| RunError::Namespace {
            namespace: "olmv1-system".into(),
            source,
        };
        let crd = |source| RunError::Crd {
            name: "clusterextensions.olm.operatorframework.io".into(),
            source,
        };
        assert!(namespace(api_error(503)).transient());
        assert!(namespace(api_error(429)).transient());
        assert!(crd(api_error(500)).transient());
        assert!(!namespace(api_error(403)).transient());
        assert!(!crd(api_error(422)).transient());
        assert!(
            RunError::CrdNotEstablished {
                name: "x".into(),
                timeout: CRD_TIMEOUT
            }
            .transient()
        );
        assert!(!RunError::Stopped("x").transient());
    }

    #[tokio::test]
    async fn the_same_address_for_probes_and_metrics_is_one_listener() {
        let addr = SocketAddr::from(([127, 0, 0, 1], 0));
        let options = Options {
            catalogs_addr: addr,
            health_probe_addr: Some(addr),
            metrics_addr: Some(addr),
            ..Options::default()
        };
        let listeners = Listeners::bind(&options).await.expect("bind");
        assert!(listeners.probes.is_some());
        assert!(listeners.metrics.is_none());
        assert!(listeners.metrics_on_probes);
    }
}
