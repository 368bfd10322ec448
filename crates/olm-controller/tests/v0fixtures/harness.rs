//! What the OLM v0 suites share to run: `olm run --olm v0` in this process on a real control
//! plane, their scenarios run on it by the shared runner (`tests/runner`), server-side applies
//! of the objects they make, a poll with the last value shown on a timeout, and catalogs served
//! in process by `olm catalog serve`'s registry.
//!
//! A scenario is a name and a body given the binary's environment and that name, which is also
//! the prefix of the namespaces it works in. They all run at once unless `E2E_JOBS` bounds
//! them; exclusive ones (cluster-wide changes, heavy loads) run alone after the others. When
//! a body passes, the binary's settle guard must pass for its name too. Nothing is deleted
//! after a scenario: each works in namespaces of its own.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use olm_testenv::ControlPlane;
use serde_json::Value;

use super::{resource, runner};

/// How long one wait lasts before the scenario fails: a failing InstallPlan step is retried for
/// a minute before the plan fails.
pub const WAIT: Duration = Duration::from_secs(180);

/// A control plane with `olm run --olm v0` running on it in this process.
pub struct Olm {
    /// The control plane.
    pub plane: ControlPlane,
    /// An admin client.
    pub client: Client,
    /// The port the packageserver listens on (a free one, on the node's address).
    pub packageserver_port: u16,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::result::Result<(), olm_controller::run::RunError>>,
    _cache: tempfile::TempDir,
}

impl Olm {
    /// Starts the control plane and `olm run --olm v0`, and returns once OLM v0's CRDs are
    /// established.
    pub async fn start() -> Result<Olm> {
        let plane = ControlPlane::start()
            .await
            .map_err(|e| anyhow!("starting the control plane: {e}"))?;
        let client = plane.client();
        let kubeconfig = kube::config::Kubeconfig::read_from(plane.kubeconfig_path())?;
        let config = kube::Config::from_custom_kubeconfig(
            kubeconfig,
            &kube::config::KubeConfigOptions::default(),
        )
        .await?;
        let cache = tempfile::tempdir()?;
        // A free port: another `olm` on this machine may hold the default one.
        let packageserver_addr = std::net::TcpListener::bind(std::net::SocketAddr::from((
            plane
                .node_address()
                .unwrap_or(std::net::Ipv4Addr::UNSPECIFIED),
            0,
        )))?
        .local_addr()?;
        let options = olm_controller::run::Options {
            which: olm_controller::run::Which::V0,
            cache_path: cache.path().to_path_buf(),
            health_probe_addr: None,
            metrics_addr: None,
            catalogs_addr: "127.0.0.1:0".parse()?,
            packageserver: olm_v0_controller::packageserver::Options {
                addr: packageserver_addr,
                advertise: None,
                pod: None,
                ..olm_v0_controller::packageserver::Options::default()
            },
            ..olm_controller::run::Options::default()
        };
        let listeners = olm_controller::run::Listeners::bind(&options).await?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(olm_controller::run::serve(
            options,
            config,
            listeners,
            async {
                let _ = stopped.await;
            },
        ));
        // The v0 CRDs are served once `olm run` applied them and they are established.
        let crds = Api::<CustomResourceDefinition>::all(client.clone());
        for plural in [
            "clusterserviceversions",
            "operatorgroups",
            "subscriptions",
            "installplans",
            "catalogsources",
            "operatorconditions",
            "operators",
            "olmconfigs",
        ] {
            let name = format!("{plural}.operators.coreos.com");
            wait(
                &format!("{name} established"),
                || async { Ok(crds.get_opt(&name).await?) },
                |c| {
                    c.as_ref()
                        .and_then(|c| c.status.as_ref())
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|cs| {
                            cs.iter()
                                .any(|c| c.type_ == "Established" && c.status == "True")
                        })
                },
            )
            .await?;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        Ok(Olm {
            plane,
            client,
            packageserver_port: packageserver_addr.port(),
            stop,
            task,
            _cache: cache,
        })
    }

    /// Stops `olm run`, then the control plane.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
        self.plane.stop();
    }
}

/// What a scenario does in the binary's environment `E`, given its name; also the type of the
/// binary's settle guard, given the name of the scenario that passed.
pub type Body<E> =
    for<'a> fn(&'a E, &'a str) -> Pin<Box<dyn Future<Output = Result<()>> + Send + 'a>>;

/// One scenario of an OLM v0 binary.
pub struct Scenario<E> {
    name: &'static str,
    exclusive: bool,
    body: Body<E>,
}

impl<E> Scenario<E> {
    /// A scenario that runs with the others.
    pub fn new(name: &'static str, body: Body<E>) -> Scenario<E> {
        Scenario {
            name,
            exclusive: false,
            body,
        }
    }

    /// A scenario that runs alone, after the others: it changes something cluster-wide, or
    /// loads the API server too much to share it.
    pub fn exclusive(name: &'static str, body: Body<E>) -> Scenario<E> {
        Scenario {
            name,
            exclusive: true,
            body,
        }
    }
}

/// The environment of an OLM v0 binary: `olm run --olm v0`, what the binary keeps of it (`E`),
/// and the binary's settle guard.
pub struct Suite<E> {
    olm: Olm,
    env: E,
    settles: Body<E>,
}

impl<E: Send + Sync + 'static> runner::Environment for Suite<E> {
    /// All at once, as the scenarios keep to namespaces of their own.
    const JOBS: usize = usize::MAX;

    fn work_dir(&self) -> &Path {
        self.olm.plane.work_dir()
    }

    async fn shutdown(self: Arc<Self>) {
        match Arc::try_unwrap(self) {
            Ok(suite) => suite.olm.stop().await,
            Err(_) => eprintln!("environment still in use at shutdown; dropped with the process"),
        }
    }
}

impl<E: Send + Sync + 'static> runner::Scenario for Scenario<E> {
    type Env = Suite<E>;

    fn name(&self) -> &str {
        self.name
    }

    fn exclusive(&self) -> bool {
        self.exclusive
    }

    async fn run(&self, suite: Arc<Suite<E>>) -> runner::Outcome {
        let (body, name) = (self.body, self.name);
        let env = suite.clone();
        let result = match runner::guarded(async move { body(&env.env, name).await }).await {
            Ok(()) => (suite.settles)(&suite.env, name)
                .await
                .map_err(|e| format!("{e:#}")),
            Err(e) => Err(e),
        };
        let notes = match result {
            Ok(()) => Vec::new(),
            Err(_) => runner::logs::mentioning(name)
                .into_iter()
                .map(|l| format!("olm: {l}"))
                .collect(),
        };
        runner::Outcome { result, notes }
    }
}

/// Runs the scenarios the command line selects on one `olm run --olm v0`, `env` making what
/// they are given of it and `settles` the guard each that passes must pass too; exits with
/// libtest's convention. `V0_SCENARIO=<part of a name>` selects too, as an argument would.
pub fn main<E: Send + Sync + 'static>(
    scenarios: Vec<Scenario<E>>,
    env: fn(&Olm) -> E,
    settles: Body<E>,
) {
    let mut args = runner::args();
    args.extend(std::env::var("V0_SCENARIO").ok());
    runner::main(args, scenarios, async move {
        let olm = Olm::start().await?;
        let env = env(&olm);
        Ok(Arc::new(Suite { olm, env, settles }))
    });
}

/// Polls `get` until `ok` holds or [`WAIT`] passes; a failed read is tried again, and the error
/// shows the last value (or read error) seen.
pub async fn wait<T: std::fmt::Debug, F, Fut>(
    what: &str,
    get: F,
    ok: impl Fn(&T) -> bool,
) -> Result<T>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let deadline = Instant::now() + WAIT;
    loop {
        let last = get().await;
        if let Ok(v) = &last
            && ok(v)
        {
            return last;
        }
        if Instant::now() > deadline {
            bail!("waiting for {what}: last seen {last:#?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The resource's plural of the kinds the suites apply.
fn plural(kind: &str) -> Result<&'static str> {
    Ok(match kind {
        "ClusterServiceVersion" => "clusterserviceversions",
        "OperatorGroup" => "operatorgroups",
        "OperatorCondition" => "operatorconditions",
        "OLMConfig" => "olmconfigs",
        "Namespace" => "namespaces",
        "ServiceAccount" => "serviceaccounts",
        "Role" => "roles",
        "RoleBinding" => "rolebindings",
        "ClusterRole" => "clusterroles",
        "ClusterRoleBinding" => "clusterrolebindings",
        "ConfigMap" => "configmaps",
        "Secret" => "secrets",
        "Service" => "services",
        "CustomResourceDefinition" => "customresourcedefinitions",
        "CatalogSource" => "catalogsources",
        "Subscription" => "subscriptions",
        "InstallPlan" => "installplans",
        "PriorityClass" => "priorityclasses",
        "Gauge" => "gauges",
        other => bail!("no plural known for {other}"),
    })
}

/// The API of `object`'s kind, in its namespace when it has one.
pub fn api_of(client: &Client, object: &Value) -> Result<Api<DynamicObject>> {
    let api_version = object["apiVersion"].as_str().context("apiVersion")?;
    let kind = object["kind"].as_str().context("kind")?;
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let ar = resource(group, version, kind, plural(kind)?);
    Ok(match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    })
}

/// Server-side applies `object` (forced) as `manager`.
pub async fn apply(client: &Client, manager: &str, object: &Value) -> Result<DynamicObject> {
    let name = object["metadata"]["name"].as_str().context("name")?;
    Ok(api_of(client, object)?
        .patch(
            name,
            &PatchParams::apply(manager).force(),
            &Patch::Apply(object),
        )
        .await?)
}

/// An in-process `olm catalog serve` of a file-based catalog.
pub struct Served {
    /// `127.0.0.1:PORT`.
    pub address: String,
    stop: tokio::sync::oneshot::Sender<()>,
    server: tokio::task::JoinHandle<std::result::Result<(), olm_registry::server::ServeError>>,
}

impl Served {
    /// Stops serving.
    pub async fn stop(self) -> Result<()> {
        let _ = self.stop.send(());
        self.server.await??;
        Ok(())
    }
}

/// Serves `fbc` (JSON documents) with the registry API on a free local port.
pub async fn serve_fbc(fbc: &str) -> Result<Served> {
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("catalog.json"), fbc)?;
    let catalog = olm_catalog::load::load_path(dir.path())?;
    let registry = std::sync::Arc::new(olm_registry::Registry::build(&catalog, String::new())?);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?.to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(olm_registry::server::serve(
        registry,
        listener,
        async move {
            let _ = stopped.await;
        },
    ));
    Ok(Served {
        address,
        stop,
        server,
    })
}
