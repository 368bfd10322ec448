//! The end-to-end harness of OLM v1's install path: one real control plane (`olm-testenv`: etcd,
//! kube-apiserver, kube-controller-manager for garbage collection, kwok so Deployments become
//! Available), one real OCI registry, and `olm` running in this process, shared by every scenario
//! of a test binary. Scenarios keep out of each other's way by names: each has an id that is part
//! of its packages, catalogs, namespaces and of every object its bundles carry, and its
//! ClusterExtensions select only its own catalogs (by a label), so one scenario's unserved
//! catalog never blocks another's resolution.
//!
//! The binaries run on the shared runner (`tests/runner`, `harness = false`): the environment
//! is started once, scenarios run a few at a time, and the environment is torn down at the
//! end. Arguments: substrings selecting scenarios by name, `--list`, `--exact`; `E2E_JOBS`
//! (default 3) scenarios run at once. Each scenario gets a [`Ctx`] of its own, the settle
//! guard after its body, and its objects deleted after (`E2E_KEEP` keeps them).
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`) and Debian's
//! `docker-registry`.
//!
//! `OLM_E2E_BINARY=path/to/olm` runs `olm run` from that binary as a child process instead, so
//! that what it costs (memory, CPU) is its own; the benchmark uses it.

// Tests fail loudly on purpose; not every binary uses every helper.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

pub mod fixtures;
#[path = "../runner/mod.rs"]
pub mod runner;
#[path = "../settle/mod.rs"]
pub mod settle;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use olm_api::{ClusterCatalog, ClusterExtension, ClusterObjectSet};
use olm_image::ImageRef;
use olm_testenv::ControlPlane;
use olm_testenv::registry::Registry;
use serde_json::{Value, json};
use tokio::sync::oneshot;

#[allow(unused_imports)]
pub use fixtures::{Contents, Crd, Names, Package, entry, package};

/// How long one wait for a condition lasts before the scenario fails.
pub const WAIT: Duration = Duration::from_secs(90);
/// Label put on every ClusterCatalog a scenario creates; its ClusterExtensions select on it.
pub const SCENARIO_LABEL: &str = "e2e.olm.test/scenario";
/// Field manager of the harness's own applies.
pub const MANAGER: &str = "olm-e2e";
/// Where OLM keeps its own objects (ClusterObjectSet Secrets, certificates).
pub const SYSTEM_NAMESPACE: &str = "olmv1-system";

/// One running `olm`.
enum Olm {
    /// In this process.
    InProcess {
        stop: Option<oneshot::Sender<()>>,
        task: tokio::task::JoinHandle<Result<()>>,
    },
    /// `olm run` from `OLM_E2E_BINARY`.
    Child(tokio::process::Child),
}

/// The shared environment of one test binary.
pub struct Env {
    /// The control plane.
    pub plane: ControlPlane,
    /// The registry.
    pub registry: Registry,
    /// `127.0.0.1:PORT` of the registry.
    pub reg: String,
    /// Pushes images.
    pub images: olm_image::Client,
    olm: tokio::sync::Mutex<Option<Olm>>,
    /// Where the running `olm` serves `/metrics`, `/healthz` and `/readyz`.
    olm_addr: Mutex<Option<std::net::SocketAddr>>,
    /// The catalog server's port, kept across restarts of `olm` as a Service's address is:
    /// ClusterCatalogs' `status.urls.base` stays right while the new process starts.
    catalogs_port: Mutex<Option<u16>>,
    /// OLM's cache directory (kept across restarts of `olm`, like a pod's emptyDir is not).
    cache: tempfile::TempDir,
    /// Fixture directories.
    work: tempfile::TempDir,
    /// Bundle images already pushed, by content digest → reference.
    pushed: Mutex<BTreeMap<String, String>>,
    /// Which OLM runs.
    which: olm_controller::run::Which,
}

impl Env {
    /// Starts control plane, registry and `olm`; installs OLM's CRDs and system namespace.
    pub async fn start() -> Result<Arc<Env>> {
        Env::start_with(olm_controller::run::Which::V1).await
    }

    /// [`Env::start`] with `which` OLM running (`--olm`); with OLM v0, its CRDs are served
    /// before this returns.
    pub async fn start_with(which: olm_controller::run::Which) -> Result<Arc<Env>> {
        let plane = ControlPlane::start()
            .await
            .map_err(|e| anyhow!("starting the local control plane failed: {e}"))?;
        let registry =
            Registry::start().map_err(|e| anyhow!("these tests need a local registry: {e}"))?;
        let client = plane.client();
        let crds: Vec<CustomResourceDefinition> = olm_api::crds()
            .into_iter()
            .map(|c| serde_json::from_value(c.value))
            .collect::<Result<_, _>>()?;
        olm_testenv::install_crds(&client, &crds, WAIT).await?;
        ensure_namespace(&client, SYSTEM_NAMESPACE).await?;
        let reg = registry.addr().to_string();
        let env = Arc::new(Env {
            plane,
            registry,
            reg,
            images: olm_image::Client::new(olm_image::ClientOptions::default()),
            olm: tokio::sync::Mutex::new(None),
            olm_addr: Mutex::new(None),
            catalogs_port: Mutex::new(None),
            cache: tempfile::tempdir()?,
            work: tempfile::tempdir()?,
            pushed: Mutex::new(BTreeMap::new()),
            which,
        });
        env.start_olm().await?;
        if which.v0() {
            let crds: Api<CustomResourceDefinition> = Api::all(env.client());
            eventually(WAIT, || {
                let crds = crds.clone();
                async move { Ok(crds.get_opt("installplans.operators.coreos.com").await?) }
            })
            .await
            .context("OLM v0's CRDs were never served")?;
        }
        Ok(env)
    }

    /// A fresh client of the admin.
    pub fn client(&self) -> Client {
        self.plane.client()
    }

    /// Where `olm` keeps its caches.
    pub fn cache_dir(&self) -> &Path {
        self.cache.path()
    }

    /// Starts `olm` (ClusterCatalog controller and catalog server, ClusterExtension and
    /// ClusterObjectSet controllers, certificate provider): in this process, or as a child
    /// process when `OLM_E2E_BINARY` names a binary.
    pub async fn start_olm(&self) -> Result<()> {
        let mut guard = self.olm.lock().await;
        if guard.is_some() {
            return Ok(());
        }
        if let Some(binary) = std::env::var_os("OLM_E2E_BINARY") {
            let (child, addr) = spawn_olm_binary(self, Path::new(&binary)).await?;
            *self.olm_addr.lock().unwrap() = Some(addr);
            *guard = Some(Olm::Child(child));
            return Ok(());
        }
        let (tx, rx) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = rx.await;
        };
        let (task, addr) = spawn_olm(self, shutdown).await?;
        *self.olm_addr.lock().unwrap() = Some(addr);
        *guard = Some(Olm::InProcess {
            stop: Some(tx),
            task,
        });
        Ok(())
    }

    /// Where the running `olm` serves `/metrics` and its probes.
    pub fn olm_addr(&self) -> Option<std::net::SocketAddr> {
        *self.olm_addr.lock().unwrap()
    }

    /// The process id of `olm` when it runs as a child process.
    pub async fn olm_pid(&self) -> Option<u32> {
        match self.olm.lock().await.as_ref()? {
            Olm::Child(child) => child.id(),
            Olm::InProcess { .. } => None,
        }
    }

    /// Stops `olm` gracefully (SIGTERM for a child) and waits for it.
    pub async fn stop_olm(&self) -> Result<()> {
        let Some(olm) = self.olm.lock().await.take() else {
            return Ok(());
        };
        match olm {
            Olm::InProcess { stop, mut task } => {
                if let Some(tx) = stop {
                    let _ = tx.send(());
                }
                match tokio::time::timeout(Duration::from_secs(30), &mut task).await {
                    Ok(Ok(r)) => r,
                    Ok(Err(e)) => Err(anyhow!("olm task failed: {e}")),
                    Err(_) => {
                        task.abort();
                        bail!("olm did not stop within 30s of being asked")
                    }
                }
            }
            Olm::Child(mut child) => {
                if let Some(pid) = child.id() {
                    std::process::Command::new("kill")
                        .args(["-TERM", &pid.to_string()])
                        .status()?;
                }
                match tokio::time::timeout(Duration::from_secs(30), child.wait()).await {
                    Ok(status) => {
                        let status = status?;
                        if !status.success() {
                            bail!("olm run exited with {status}");
                        }
                        Ok(())
                    }
                    Err(_) => {
                        let _ = child.kill().await;
                        bail!("olm run did not stop within 30s of SIGTERM")
                    }
                }
            }
        }
    }

    /// Kills `olm` the hard way: its task is dropped wherever it is (a child gets SIGKILL),
    /// in-flight requests and all.
    pub async fn kill_olm(&self) {
        match self.olm.lock().await.take() {
            Some(Olm::InProcess { task, .. }) => {
                task.abort();
                let _ = task.await;
            }
            Some(Olm::Child(mut child)) => {
                let _ = child.kill().await;
            }
            None => {}
        }
    }

    /// Whether `olm` stopped on its own (it should not), with its result.
    pub async fn olm_exited(&self) -> Option<String> {
        let mut guard = self.olm.lock().await;
        match guard.as_mut()? {
            Olm::InProcess { task, .. } => task.is_finished().then(|| "olm exited".to_string()),
            Olm::Child(child) => match child.try_wait() {
                Ok(Some(status)) => Some(format!("olm run exited with {status}")),
                Ok(None) => None,
                Err(e) => Some(format!("olm run: {e}")),
            },
        }
    }

    /// Pushes `image` as `repo:tag` on the test registry; returns `REG/repo:tag`.
    pub async fn push(&self, image: &olm_image::Image, repo_tag: &str) -> Result<String> {
        let reference = format!("{}/{repo_tag}", self.reg);
        let r: ImageRef = reference.parse()?;
        self.images
            .push(image, &r)
            .await
            .with_context(|| format!("pushing {reference}: {}", self.registry.log_tail()))?;
        Ok(reference)
    }

    /// Builds and pushes a bundle image; identical content is pushed once.
    pub async fn push_bundle(&self, dir: &Path, repo_tag: &str) -> Result<String> {
        let image = olm_image::bundle_image(dir)?;
        let key = format!("{}@{repo_tag}", image.digest());
        if let Some(r) = self.pushed.lock().unwrap().get(&key) {
            return Ok(r.clone());
        }
        let r = self.push(&image, repo_tag).await?;
        self.pushed.lock().unwrap().insert(key, r.clone());
        Ok(r)
    }

    /// A fresh directory for fixtures.
    pub fn fixture_dir(&self, what: &str) -> Result<PathBuf> {
        Ok(tempfile::Builder::new()
            .prefix(what)
            .tempdir_in(self.work.path())?
            .keep())
    }

    /// Stops `olm` and the control plane.
    pub async fn shutdown(self: Arc<Env>) {
        if let Err(e) = self.stop_olm().await {
            eprintln!("stopping olm: {e:#}");
        }
        match Arc::try_unwrap(self) {
            Ok(env) => {
                env.plane.stop();
                drop(env.registry);
            }
            Err(_) => eprintln!("environment still in use at shutdown; dropped with the process"),
        }
    }
}

/// Starts the in-process `olm` (`olm_controller::run::serve`) on loopback ports chosen by the
/// system, with its caches in the environment's directory; returns its task and the address
/// serving `/metrics` and the probes.
async fn spawn_olm(
    env: &Env,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(tokio::task::JoinHandle<Result<()>>, std::net::SocketAddr)> {
    let loopback: std::net::SocketAddr = "127.0.0.1:0".parse()?;
    let catalogs_port = env.catalogs_port.lock().unwrap().unwrap_or(0);
    let options = olm_controller::run::Options {
        which: env.which,
        component: olm_controller::run::Component::All,
        system_namespace: SYSTEM_NAMESPACE.to_string(),
        cache_path: env.cache.path().to_path_buf(),
        catalogs_addr: std::net::SocketAddr::from(([127, 0, 0, 1], catalogs_port)),
        catalogd: olm_catalogd::Options {
            retry_after: Duration::from_secs(1),
            ..olm_catalogd::Options::default()
        },
        health_probe_addr: Some(loopback),
        metrics_addr: Some(loopback),
        metrics_secure: false,
        cert_provider: olm_controller::run::CertProviderChoice::Builtin,
        images: olm_image::ClientOptions::default(),
        extension: olm_controller::extension::Options::default(),
        leader_election: None,
        serving_tls: None,
        pprof: None,
        packageserver: olm_v0_controller::packageserver::Options::default(),
        tls_profile: olm_tls::TlsProfile::default(),
    };
    let listeners = olm_controller::run::Listeners::bind(&options).await?;
    if let Some(catalogs) = &listeners.catalogs {
        *env.catalogs_port.lock().unwrap() = Some(catalogs.local_addr()?.port());
    }
    let probes = listeners
        .probes
        .as_ref()
        .context("no probe listener")?
        .local_addr()?;
    let kubeconfig = kube::config::Kubeconfig::read_from(env.plane.kubeconfig_path())?;
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await?;
    let task = tokio::spawn(async move {
        olm_controller::run::serve(options, config, listeners, shutdown)
            .await
            .map_err(|e| anyhow!("olm: {e}"))
    });
    Ok((task, probes))
}

/// Starts `olm run` from `binary` as a child process with the same settings as [`spawn_olm`]
/// (its log goes to `olm.log` in the work directory) and waits until it answers `/readyz`;
/// returns the child and the address serving `/metrics` and the probes.
async fn spawn_olm_binary(
    env: &Env,
    binary: &Path,
) -> Result<(tokio::process::Child, std::net::SocketAddr)> {
    let free_port = || -> Result<u16> {
        Ok(std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port())
    };
    let catalogs_port = match *env.catalogs_port.lock().unwrap() {
        Some(port) => port,
        None => free_port()?,
    };
    *env.catalogs_port.lock().unwrap() = Some(catalogs_port);
    let probes = std::net::SocketAddr::from(([127, 0, 0, 1], free_port()?));
    let catalogs = format!("127.0.0.1:{catalogs_port}");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(env.work.path().join("olm.log"))?;
    let mut command = tokio::process::Command::new(binary);
    command
        .arg("run")
        .arg("--kubeconfig")
        .arg(env.plane.kubeconfig_path())
        .args(["--system-namespace", SYSTEM_NAMESPACE])
        .arg("--cache-path")
        .arg(env.cache.path())
        .args(["--health-probe-bind-address", &probes.to_string()])
        .args(["--metrics-bind-address", &probes.to_string()])
        .args(["--cert-provider", "builtin"])
        .args(["--catalogs-server-addr", &catalogs])
        .args(["--external-address", &catalogs])
        .args(["--webhook-server-port", "0"])
        .args([
            "--olm",
            match env.which {
                olm_controller::run::Which::V0 => "v0",
                olm_controller::run::Which::V1 => "v1",
                olm_controller::run::Which::Both => "both",
            },
        ])
        .stdout(log.try_clone()?)
        .stderr(log)
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {} run", binary.display()))?;
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(status) = child.try_wait()? {
            bail!(
                "olm run exited with {status} while starting; see {}",
                env.work.path().join("olm.log").display()
            );
        }
        if ready(probes).await {
            return Ok((child, probes));
        }
        if Instant::now() > deadline {
            bail!("olm run did not become ready within {WAIT:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Whether `GET /readyz` at `addr` answers 200.
async fn ready(addr: std::net::SocketAddr) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ask = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(b"GET /readyz HTTP/1.1\r\nHost: olm\r\nConnection: close\r\n\r\n")
            .await?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await?;
        std::io::Result::Ok(head.ends_with(b" 200"))
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(2), ask).await,
        Ok(Ok(true))
    )
}

/// Creates a namespace unless it exists.
pub async fn ensure_namespace(client: &Client, name: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// A built catalog image.
#[derive(Debug, Clone)]
pub struct BuiltCatalog {
    /// `REG/e2e/<name>-<id>:<tag>`.
    pub image: String,
}

/// Options of a ClusterCatalog.
#[derive(Debug, Clone, Default)]
pub struct CatalogOpts {
    /// `spec.priority`.
    pub priority: Option<i32>,
    /// `spec.source.image.pollIntervalMinutes`.
    pub poll_minutes: Option<i32>,
    /// Extra labels.
    pub labels: BTreeMap<String, String>,
    /// Do not add the scenario label (so the scenario's selectors do not see it).
    pub unlabelled: bool,
}

/// One scenario's handle on the environment.
pub struct Ctx {
    /// The shared environment.
    pub env: Arc<Env>,
    /// The scenario id (part of every name).
    pub id: String,
    /// Admin client.
    pub client: Client,
    /// The scenario's install namespace, `e2e-<id>` (created by [`Ctx::namespace`]).
    pub ns: String,
    created_exts: Mutex<Vec<String>>,
    created_cats: Mutex<Vec<String>>,
    created_nss: Mutex<Vec<String>>,
    log: Mutex<Vec<String>>,
}

impl Ctx {
    /// A context for scenario `id`.
    pub fn new(env: Arc<Env>, id: &str) -> Ctx {
        Ctx {
            client: env.client(),
            env,
            id: id.to_string(),
            ns: format!("e2e-{id}"),
            created_exts: Mutex::default(),
            created_cats: Mutex::default(),
            created_nss: Mutex::default(),
            log: Mutex::default(),
        }
    }

    /// Records a line for the report of this scenario.
    pub fn note(&self, line: impl Into<String>) {
        self.log.lock().unwrap().push(line.into());
    }

    /// The notes so far.
    pub fn notes(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The object names of this scenario.
    pub fn names(&self) -> Names {
        Names {
            id: self.id.clone(),
        }
    }

    /// `<base>-<id>`.
    pub fn pkg(&self, base: &str) -> String {
        format!("{base}-{}", self.id)
    }

    /// `<base>-<id>.<version>`, the bundle name in catalogs.
    pub fn bundle(&self, base: &str, version: &str) -> String {
        format!("{}.{version}", self.pkg(base))
    }

    /// Creates the scenario's namespace.
    pub async fn namespace(&self) -> Result<String> {
        self.extra_namespace(&self.ns.clone()).await
    }

    /// Creates another namespace, deleted at cleanup.
    pub async fn extra_namespace(&self, name: &str) -> Result<String> {
        ensure_namespace(&self.client, name).await?;
        self.created_nss.lock().unwrap().push(name.to_string());
        Ok(name.to_string())
    }

    /// Builds the packages' bundles, pushes them, builds and pushes the catalog image
    /// `REG/e2e/<name>-<id>:<tag>`.
    pub async fn build_catalog(
        &self,
        name: &str,
        tag: &str,
        packages: &[Package],
    ) -> Result<BuiltCatalog> {
        let mut images = BTreeMap::new();
        for p in packages {
            let pkg = self.pkg(&p.base);
            for b in &p.bundles {
                let image = match &b.image_override {
                    Some(i) => i.clone(),
                    None => {
                        let dir = self.env.fixture_dir(&format!("{pkg}-{}-", b.version))?;
                        fixtures::write_bundle(&dir, &pkg, &b.version, &b.contents, &self.id)?;
                        self.env
                            .push_bundle(&dir, &format!("bundles/{name}/{pkg}:v{}", b.version))
                            .await?
                    }
                };
                images.insert((pkg.clone(), b.version.clone()), image);
            }
        }
        let fbc = fixtures::fbc(packages, &self.id, &images);
        let dir = self
            .env
            .fixture_dir(&format!("catalog-{name}-{}-", self.id))?;
        std::fs::write(dir.join("catalog.json"), fbc)?;
        let image = olm_image::catalog_image(&dir)?;
        let image = self
            .env
            .push(&image, &format!("e2e/{name}-{}:{tag}", self.id))
            .await?;
        Ok(BuiltCatalog { image })
    }

    /// The ClusterCatalog name for `name`: `<name>-<id>`.
    pub fn catalog_name(&self, name: &str) -> String {
        format!("{name}-{}", self.id)
    }

    /// Creates (or updates by server-side apply) ClusterCatalog `<name>-<id>` for `image`.
    pub async fn apply_catalog(
        &self,
        name: &str,
        image: &str,
        opts: &CatalogOpts,
    ) -> Result<String> {
        let cname = self.catalog_name(name);
        let mut labels: serde_json::Map<String, Value> = opts
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        if !opts.unlabelled {
            labels.insert(SCENARIO_LABEL.into(), json!(self.id));
        }
        let mut image_src = json!({"ref": image});
        if let Some(p) = opts.poll_minutes {
            image_src["pollIntervalMinutes"] = json!(p);
        }
        let mut spec = json!({"source": {"type": "Image", "image": image_src}});
        if let Some(p) = opts.priority {
            spec["priority"] = json!(p);
        }
        let obj = json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": {"name": cname, "labels": labels},
            "spec": spec,
        });
        let api: Api<ClusterCatalog> = Api::all(self.client.clone());
        api.patch(
            &cname,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(&obj),
        )
        .await
        .with_context(|| format!("applying ClusterCatalog {cname}"))?;
        {
            let mut c = self.created_cats.lock().unwrap();
            if !c.contains(&cname) {
                c.push(cname.clone());
            }
        }
        Ok(cname)
    }

    /// Builds, pushes and creates a catalog, and waits until it serves this image.
    pub async fn catalog(&self, name: &str, packages: &[Package]) -> Result<String> {
        let built = self.build_catalog(name, "v1", packages).await?;
        let cname = self
            .apply_catalog(name, &built.image, &CatalogOpts::default())
            .await?;
        self.wait_serving(&cname).await?;
        Ok(cname)
    }

    /// Waits until the ClusterCatalog is Serving=True with a resolved digest.
    pub async fn wait_serving(&self, cname: &str) -> Result<ClusterCatalog> {
        let api: Api<ClusterCatalog> = Api::all(self.client.clone());
        let last = Mutex::new(String::new());
        let r = eventually(WAIT, || async {
            let c = api.get(cname).await?;
            *last.lock().unwrap() = format!("{:?}", c.status.as_ref().map(|s| &s.conditions));
            let serving = c.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "Serving" && c.status == "True")
            });
            Ok(serving.then_some(c))
        })
        .await;
        r.with_context(|| {
            format!(
                "ClusterCatalog {cname} not Serving; last conditions: {}",
                last.lock().unwrap()
            )
        })
    }

    /// Waits until the ClusterCatalog serves content of `digest_of` (its resolved ref ends with
    /// the digest of that image reference).
    pub async fn wait_catalog_resolved(&self, cname: &str, image: &str) -> Result<()> {
        let digest = self.env.images.resolve(&image.parse()?).await?;
        let api: Api<ClusterCatalog> = Api::all(self.client.clone());
        eventually(WAIT, || async {
            let c = api.get(cname).await?;
            let r = c
                .status
                .as_ref()
                .and_then(|s| s.resolved_source.as_ref())
                .map(|r| r.image.ref_.clone())
                .unwrap_or_default();
            Ok(r.ends_with(&digest.to_string()).then_some(()))
        })
        .await
        .with_context(|| format!("ClusterCatalog {cname} never resolved to {image} ({digest})"))
    }

    /// Deletes a ClusterCatalog and waits until it is gone.
    pub async fn delete_catalog(&self, cname: &str) -> Result<()> {
        let api: Api<ClusterCatalog> = Api::all(self.client.clone());
        delete_and_wait(&api, cname).await
    }

    /// The spec of a ClusterExtension for `package` that selects this scenario's catalogs.
    pub fn ext_spec(&self, base: &str) -> Value {
        json!({
            "namespace": self.ns,
            "source": {"sourceType": "Catalog", "catalog": {
                "packageName": self.pkg(base),
                "selector": {"matchLabels": {SCENARIO_LABEL: self.id}},
            }},
        })
    }

    /// Server-side applies ClusterExtension `name` with `spec` (the whole spec the harness owns).
    pub async fn apply_ext(&self, name: &str, spec: &Value) -> Result<ClusterExtension> {
        let obj = json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterExtension",
            "metadata": {"name": name},
            "spec": spec,
        });
        let api: Api<ClusterExtension> = Api::all(self.client.clone());
        let ce = api
            .patch(
                name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&obj),
            )
            .await
            .with_context(|| format!("applying ClusterExtension {name}"))?;
        {
            let mut c = self.created_exts.lock().unwrap();
            if !c.iter().any(|n| n == name) {
                c.push(name.to_string());
            }
        }
        Ok(ce)
    }

    /// The ClusterExtension.
    pub async fn get_ext(&self, name: &str) -> Result<ClusterExtension> {
        let api: Api<ClusterExtension> = Api::all(self.client.clone());
        Ok(api.get(name).await?)
    }

    /// Waits until condition `type_` of ClusterExtension `name` has `status` and `reason` (either
    /// may be empty to accept any) and a message matching `msg`. The error carries every
    /// condition seen last, which is what a report needs.
    pub async fn wait_cond(
        &self,
        name: &str,
        type_: &str,
        status: &str,
        reason: &str,
        msg: Msg<'_>,
    ) -> Result<ClusterExtension> {
        self.wait_cond_for(name, type_, status, reason, msg, WAIT)
            .await
    }

    /// [`Ctx::wait_cond`] with a chosen timeout.
    pub async fn wait_cond_for(
        &self,
        name: &str,
        type_: &str,
        status: &str,
        reason: &str,
        msg: Msg<'_>,
        timeout: Duration,
    ) -> Result<ClusterExtension> {
        let api: Api<ClusterExtension> = Api::all(self.client.clone());
        let last = Mutex::new(String::from("(never read)"));
        let r = eventually(timeout, || async {
            let ce = api.get(name).await?;
            let conds = ext_conditions(&ce);
            *last.lock().unwrap() = describe_conditions(conds, ce.metadata.generation);
            let ok = conds.iter().any(|c| {
                c.type_ == type_
                    && (status.is_empty() || c.status == status)
                    && (reason.is_empty() || c.reason == reason)
                    && msg.matches(&c.message)
                    && c.observed_generation == ce.metadata.generation
            });
            Ok(ok.then_some(ce))
        })
        .await;
        r.with_context(|| {
            format!(
                "ClusterExtension {name}: wanted {type_}={}/{} {msg}; last seen: {}",
                or_any(status),
                or_any(reason),
                last.lock().unwrap()
            )
        })
    }

    /// Waits until the extension reports Installed=True with `bundle` at `version` installed.
    pub async fn wait_installed(
        &self,
        name: &str,
        base: &str,
        version: &str,
    ) -> Result<ClusterExtension> {
        let bundle = self.bundle(base, version);
        let api: Api<ClusterExtension> = Api::all(self.client.clone());
        let last = Mutex::new(String::from("(never read)"));
        let r = eventually(WAIT, || async {
            let ce = api.get(name).await?;
            let conds = ext_conditions(&ce);
            let installed = ce
                .status
                .as_ref()
                .and_then(|s| s.install.as_ref())
                .map(|i| (i.bundle.name.clone(), i.bundle.version.clone()));
            *last.lock().unwrap() = format!(
                "install={installed:?}; {}",
                describe_conditions(conds, ce.metadata.generation)
            );
            let ok = conds
                .iter()
                .any(|c| c.type_ == "Installed" && c.status == "True")
                && installed
                    .as_ref()
                    .is_some_and(|(n, v)| *n == bundle && v == version);
            Ok(ok.then_some(ce))
        })
        .await;
        r.with_context(|| {
            format!(
                "ClusterExtension {name}: wanted {bundle} {version} installed; last seen: {}",
                last.lock().unwrap()
            )
        })
    }

    /// Asserts that for `period` the installed bundle stays at `version` (no upgrade happens).
    pub async fn stays_installed(
        &self,
        name: &str,
        base: &str,
        version: &str,
        period: Duration,
    ) -> Result<()> {
        let bundle = self.bundle(base, version);
        let end = Instant::now() + period;
        while Instant::now() < end {
            let ce = self.get_ext(name).await?;
            let installed = ce
                .status
                .as_ref()
                .and_then(|s| s.install.as_ref())
                .map(|i| i.bundle.name.clone());
            if installed.as_deref() != Some(bundle.as_str()) {
                bail!(
                    "ClusterExtension {name}: expected {bundle} to stay installed, found {installed:?}; {}",
                    describe_conditions(ext_conditions(&ce), ce.metadata.generation)
                );
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Ok(())
    }

    /// Deletes a ClusterExtension and waits until it is gone.
    pub async fn delete_ext(&self, name: &str) -> Result<()> {
        let api: Api<ClusterExtension> = Api::all(self.client.clone());
        delete_and_wait(&api, name).await
    }

    /// The conditions of ClusterObjectSets owned by extension `name`, for reports.
    pub async fn object_sets(&self, name: &str) -> Result<Vec<ClusterObjectSet>> {
        let api: Api<ClusterObjectSet> = Api::all(self.client.clone());
        let lp = kube::api::ListParams::default()
            .labels(&format!("{}={name}", olm_k8s::OWNER_NAME_LABEL));
        Ok(api.list(&lp).await?.items)
    }

    /// A dynamic API for `apiVersion`/`kind`/`plural` (namespaced when `ns` is given).
    pub fn dynamic(
        &self,
        api_version: &str,
        kind: &str,
        plural: &str,
        ns: Option<&str>,
    ) -> Api<DynamicObject> {
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), api_version.to_string()),
        };
        let ar = ApiResource {
            group: group.clone(),
            version: version.clone(),
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            plural: plural.to_string(),
        };
        match ns {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, &ar),
            None => Api::all_with(self.client.clone(), &ar),
        }
    }

    /// The dynamic API of CustomResourceDefinitions.
    pub fn crds(&self) -> Api<DynamicObject> {
        self.dynamic(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            None,
        )
    }

    /// The scenario's objects settle (`settle::assert_settles`): its ClusterExtensions, their
    /// revisions (`<extension>-<n>`), its ClusterCatalogs, the CRDs of its bundles, and what
    /// the installs put in its namespaces (Events included) — with OLM v0 running, its objects
    /// in those namespaces too.
    pub async fn settles(&self) -> Result<()> {
        use settle::{cluster_named, namespaced, resource as r};
        let exts = self.created_exts.lock().unwrap().clone();
        let cats = self.created_cats.lock().unwrap().clone();
        let nss = self.created_nss.lock().unwrap().clone();
        let group = "olm.operatorframework.io";
        let revisions = exts.clone();
        let crd_suffix = format!(".e2e-{}.e2e.olm.test", self.id);
        let mut watched = vec![
            cluster_named(
                r(group, "v1", "ClusterExtension", "clusterextensions"),
                move |n| exts.iter().any(|e| e == n),
            ),
            cluster_named(
                r(group, "v1", "ClusterObjectSet", "clusterobjectsets"),
                move |n| {
                    revisions.iter().any(|e| {
                        n.strip_prefix(e.as_str())
                            .and_then(|rest| rest.strip_prefix('-'))
                            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                    })
                },
            ),
            cluster_named(
                r(group, "v1", "ClusterCatalog", "clustercatalogs"),
                move |n| cats.iter().any(|c| c == n),
            ),
            cluster_named(
                r(
                    "apiextensions.k8s.io",
                    "v1",
                    "CustomResourceDefinition",
                    "customresourcedefinitions",
                ),
                move |n| n.ends_with(&crd_suffix),
            ),
        ];
        let mut kinds = settle::workload_kinds();
        if self.env.which.v0() {
            kinds.extend(settle::olm_v0_kinds());
        }
        for k in kinds {
            let nss = nss.clone();
            watched.push(namespaced(k, move |ns| nss.iter().any(|n| n == ns)));
        }
        let before = settle::assert_settles(&self.client, &watched).await?;
        let writes: usize = before.values().map(Vec::len).sum();
        self.note(format!(
            "settled: {writes} writes to {} objects before 10 s without one",
            before.len()
        ));
        Ok(())
    }

    /// Deletes what the scenario created (extensions first, so uninstall runs while the
    /// namespace still exists).
    pub async fn cleanup(&self) {
        let exts = self.created_exts.lock().unwrap().clone();
        let api: Api<ClusterExtension> = Api::all(self.client.clone());
        for e in exts {
            let _ = api.delete(&e, &DeleteParams::background()).await;
        }
        let cats = self.created_cats.lock().unwrap().clone();
        let capi: Api<ClusterCatalog> = Api::all(self.client.clone());
        for c in cats {
            let _ = capi.delete(&c, &DeleteParams::background()).await;
        }
        let nss = self.created_nss.lock().unwrap().clone();
        let napi: Api<Namespace> = Api::all(self.client.clone());
        for n in nss {
            let _ = napi.delete(&n, &DeleteParams::background()).await;
        }
    }
}

/// How a condition message is matched.
#[derive(Debug, Clone, Copy)]
pub enum Msg<'a> {
    /// Any message.
    Any,
    /// Exactly this text.
    Exact(&'a str),
    /// Contains this text.
    Contains(&'a str),
}

impl Msg<'_> {
    fn matches(&self, m: &str) -> bool {
        match self {
            Msg::Any => true,
            Msg::Exact(s) => m == *s,
            Msg::Contains(s) => m.contains(s),
        }
    }
}

impl std::fmt::Display for Msg<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Msg::Any => Ok(()),
            Msg::Exact(s) => write!(f, "with message {s:?}"),
            Msg::Contains(s) => write!(f, "with message containing {s:?}"),
        }
    }
}

fn or_any(s: &str) -> &str {
    if s.is_empty() { "*" } else { s }
}

/// The conditions of a ClusterExtension.
pub fn ext_conditions(ce: &ClusterExtension) -> &[Condition] {
    ce.status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default()
}

/// The condition of this type.
pub fn cond<'a>(ce: &'a ClusterExtension, type_: &str) -> Option<&'a Condition> {
    ext_conditions(ce).iter().find(|c| c.type_ == type_)
}

/// `Type=Status/Reason "message" (gen N)` for every condition, for failure reports.
pub fn describe_conditions(conds: &[Condition], generation: Option<i64>) -> String {
    if conds.is_empty() {
        return "no conditions".into();
    }
    let mut out = Vec::new();
    for c in conds {
        let stale = if c.observed_generation != generation {
            format!(
                " (observedGeneration {:?} of {:?})",
                c.observed_generation, generation
            )
        } else {
            String::new()
        };
        out.push(format!(
            "{}={}/{} {:?}{stale}",
            c.type_, c.status, c.reason, c.message
        ));
    }
    out.join("; ")
}

/// Polls `check` every 250 ms until it returns `Some` or `timeout` passes.
pub async fn eventually<T, F, Fut>(timeout: Duration, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = Instant::now() + timeout;
    let mut last_err = None;
    loop {
        match check().await {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => last_err = Some(e),
        }
        if Instant::now() > deadline {
            return match last_err {
                Some(e) => Err(e.context(format!("timed out after {timeout:?}"))),
                None => Err(anyhow!("timed out after {timeout:?}")),
            };
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Deletes `name` and waits until the API server no longer has it.
pub async fn delete_and_wait<K>(api: &Api<K>, name: &str) -> Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => return Ok(()),
        Err(e) => return Err(e.into()),
    }
    eventually(WAIT, || async {
        match api.get_opt(name).await? {
            None => Ok(Some(())),
            Some(o) => {
                let _ = o.meta().finalizers.clone();
                Ok(None)
            }
        }
    })
    .await
    .with_context(|| format!("{name} still exists (finalizers not removed?)"))
}

/// Waits until a namespaced object exists and returns it.
pub async fn wait_exists(api: &Api<DynamicObject>, name: &str) -> Result<DynamicObject> {
    eventually(WAIT, || async { Ok(api.get_opt(name).await?) })
        .await
        .with_context(|| format!("{name} never appeared"))
}

/// Waits until an object is gone.
pub async fn wait_gone(api: &Api<DynamicObject>, name: &str) -> Result<()> {
    eventually(WAIT, || async {
        Ok(api.get_opt(name).await?.is_none().then_some(()))
    })
    .await
    .with_context(|| format!("{name} still exists"))
}

/// The object's name, for messages.
pub fn name_of(o: &impl ResourceExt) -> String {
    o.name_any()
}

// ---------------------------------------------------------------------------------------------
// The scenarios, run by the shared runner.

/// A scenario's body.
pub type Body = fn(Arc<Ctx>) -> Pin<Box<dyn Future<Output = Result<()>> + Send>>;

/// One scenario.
pub struct Scenario {
    /// Its name (what a filter argument matches).
    pub name: &'static str,
    /// Its short id (unique within the binary; part of every object name).
    pub id: &'static str,
    /// Runs alone (it restarts `olm` or touches cluster-wide state).
    pub exclusive: bool,
    /// The body.
    pub body: Body,
}

/// Runs the scenarios selected by the command line on one shared environment and exits with
/// the libtest convention (101 on failure).
pub fn main(scenarios: Vec<Scenario>) {
    main_with(scenarios, olm_controller::run::Which::V1);
}

/// [`main`] with `which` OLM running.
pub fn main_with(scenarios: Vec<Scenario>, which: olm_controller::run::Which) {
    runner::main(runner::args(), scenarios, Env::start_with(which));
}

impl runner::Environment for Env {
    const JOBS: usize = 3;

    fn work_dir(&self) -> &Path {
        self.plane.work_dir()
    }

    async fn shutdown(self: Arc<Env>) {
        Env::shutdown(self).await;
    }
}

impl runner::Scenario for Scenario {
    type Env = Env;

    fn name(&self) -> &str {
        self.name
    }

    fn exclusive(&self) -> bool {
        self.exclusive
    }

    /// The body in a context of its own, then the settle guard; what the scenario created is
    /// deleted after (unless `E2E_KEEP`).
    async fn run(&self, env: Arc<Env>) -> runner::Outcome {
        let ctx = Arc::new(Ctx::new(env, self.id));
        let result = match runner::guarded((self.body)(ctx.clone())).await {
            // A scenario passes only once what it touched stops being written.
            Ok(()) => ctx.settles().await.map_err(|e| format!("hot loop: {e:#}")),
            Err(e) => Err(e),
        };
        let mut notes = ctx.notes();
        if result.is_err() {
            notes.extend(
                runner::logs::mentioning(self.id)
                    .into_iter()
                    .map(|l| format!("olm: {l}")),
            );
        }
        if !runner::keep() {
            ctx.cleanup().await;
        }
        runner::Outcome { result, notes }
    }
}

/// Wraps an `async fn(Arc<Ctx>) -> Result<()>` as a [`Scenario`] (`mod e2e` is `#[macro_use]`).
#[allow(unused_macros)]
macro_rules! scenario {
    ($name:ident, $id:literal) => {
        $crate::e2e::Scenario {
            name: stringify!($name),
            id: $id,
            exclusive: false,
            body: |ctx| Box::pin($name(ctx)),
        }
    };
    ($name:ident, $id:literal, exclusive) => {
        $crate::e2e::Scenario {
            name: stringify!($name),
            id: $id,
            exclusive: true,
            body: |ctx| Box::pin($name(ctx)),
        }
    };
}
