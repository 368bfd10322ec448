//! Starting, watching and stopping one local control plane.

use std::fmt::Write as _;
use std::future::Future;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, ServiceAccount};
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use olm_k8s::ConditionStatus;

use crate::Error;
use crate::binaries;
use crate::fsutil::{create_dir, write_file};
use crate::node::{self, HostGuard, NodeKind, REAL_NODE_NAME};
use crate::pki::Pki;
use crate::process::Component;
use crate::sys;

/// Name of the fake node kwok plays the kubelet for.
pub const NODE_NAME: &str = "kwok-node-0";

/// Pod IPs kwok hands out. Kept apart from the service range given to the apiserver.
const POD_CIDR: &str = "10.0.0.0/24";
const SERVICE_CIDR: &str = "10.96.0.0/16";

/// How often readiness probes poll: short, because start-to-ready time is what every test pays.
const POLL: Duration = Duration::from_millis(100);

/// Log lines shown when something goes wrong.
const TAIL_LINES: usize = 30;

/// Settings for [`ControlPlane::start_with`]. `Default` suits tests.
#[derive(Debug, Clone)]
pub struct Options {
    /// Folder with the binaries; `None` looks them up with [`binaries::bin_dir`].
    pub bin_dir: Option<PathBuf>,
    /// Folder under which the control plane's own work folder is created; `None` is the system
    /// temporary folder.
    pub parent_dir: Option<PathBuf>,
    /// Keep the work folder (logs, PKI, etcd data) after stop, for debugging. Also turned on by the
    /// environment variable `OLM_TESTENV_KEEP=1`.
    pub keep_dir: bool,
    /// How long to wait for the whole control plane to become ready.
    pub ready_timeout: Duration,
    /// kwok's fake node (the default) or a real one ([`NodeKind::Real`]).
    pub node: NodeKind,
    /// `host:port` of a local registry that a real node's containerd uses as the mirror of the
    /// registries images name ([`crate::node::MIRRORED`]): push `quay.io/x/y:1` there as
    /// `x/y:1`.
    pub mirror: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            bin_dir: None,
            parent_dir: None,
            keep_dir: std::env::var_os("OLM_TESTENV_KEEP").is_some_and(|v| v == "1"),
            ready_timeout: Duration::from_secs(90),
            node: NodeKind::Fake,
            mirror: None,
        }
    }
}

/// Resident memory of one component, read from `/proc/<pid>/status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentMemory {
    /// The component's name (`etcd`, `kube-apiserver`, …).
    pub name: &'static str,
    /// Its process id.
    pub pid: u32,
    /// Current resident set size in KiB (`VmRSS`).
    pub rss_kib: u64,
    /// Peak resident set size in KiB (`VmHWM`).
    pub peak_rss_kib: u64,
}

/// A running local control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
/// and kwok with one ready fake node, all on loopback ports chosen at start.
///
/// Dropping it stops every component (SIGTERM to each process group, SIGKILL after a grace period,
/// in reverse start order) and deletes the work folder. When it is dropped while a test panics, the
/// tail of every component's log is printed to stderr first, because the work folder with the full
/// logs is about to disappear.
pub struct ControlPlane {
    // Declared before `dir` so that, should `Drop` not run first, processes still stop before
    // their folder is removed.
    components: std::sync::Mutex<Vec<Component>>,
    dir: Option<tempfile::TempDir>,
    kept_dir: Option<PathBuf>,
    kubeconfig: PathBuf,
    server: String,
    client: Client,
    startup: Duration,
    node_address: Option<std::net::Ipv4Addr>,
    node: NodeKind,
    /// A real node's hold on the machine, restored after its processes stop.
    host: Option<HostGuard>,
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControlPlane")
            .field("server", &self.server)
            .field("kubeconfig", &self.kubeconfig)
            .field("components", &self.components)
            .finish_non_exhaustive()
    }
}

/// Loopback ports of one control plane.
#[derive(Debug, Clone, Copy)]
struct Ports {
    etcd_client: u16,
    etcd_peer: u16,
    apiserver: u16,
    controller_manager: u16,
    scheduler: u16,
}

impl ControlPlane {
    /// Starts a control plane with default [`Options`] and waits until it is ready.
    pub async fn start() -> Result<ControlPlane, Error> {
        ControlPlane::start_with(Options::default()).await
    }

    /// Starts a control plane and waits until it is ready.
    ///
    /// Ready means: etcd is healthy, the apiserver answers `/readyz`, the fake node is `Ready` with
    /// the `node.kubernetes.io/not-ready` taint removed (which proves kwok and the controller
    /// manager are working), and the `default` service account exists (pods are rejected before).
    ///
    /// Ports are picked free at start; another process can still grab one before the component
    /// binds it. That race is detected from the component's log and the whole start is retried on
    /// new ports, at most three times, before [`Error::PortInUse`] is returned.
    ///
    /// Caveat: every component is started with a parent-death signal tied to the calling thread,
    /// so that a killed test binary leaves no apiserver behind. Call this from a thread that lives
    /// at least as long as the returned value (a test's own thread or a runtime worker), never
    /// from `spawn_blocking`, whose idle threads exit and would take the control plane with them.
    ///
    /// Errors: [`Error::BinariesMissing`] when the binaries were not built,
    /// [`Error::ExitedEarly`] with the log tail when a component dies during start,
    /// [`Error::Timeout`] with every log tail when readiness is not reached in time.
    pub async fn start_with(options: Options) -> Result<ControlPlane, Error> {
        let bin = match &options.bin_dir {
            Some(dir) => dir.clone(),
            None => binaries::bin_dir()?,
        };
        binaries::check(&bin)?;
        if options.node == NodeKind::Real {
            node::check_machine(&bin)?;
            // A node whose starter died is cleaned up first: its bridge, processes and rules
            // would otherwise be taken for the machine's (and a node running now says so).
            if node::recover_machine()? {
                eprintln!(
                    "olm-testenv: put the machine back after a real node that was not torn down \
                     (its record was {})",
                    node::host::RECORD
                );
            }
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            match ControlPlane::try_start(&bin, &options).await {
                Err(Error::PortInUse { .. }) if attempt < 3 => continue,
                result => return result,
            }
        }
    }

    async fn try_start(bin: &Path, options: &Options) -> Result<ControlPlane, Error> {
        let started = Instant::now();
        let deadline = started + options.ready_timeout;
        let parent = options
            .parent_dir
            .clone()
            .unwrap_or_else(std::env::temp_dir);
        create_dir(&parent)?;
        let dir = tempfile::Builder::new()
            .prefix("olm-testenv-")
            .tempdir_in(&parent)
            .map_err(|source| {
                Error::io(format!("creating a folder in {}", parent.display()), source)
            })?;
        let root = dir.path().to_owned();
        for sub in ["pki", "logs", "etcd", "home"] {
            create_dir(&root.join(sub))?;
        }
        // etcd warns about (and future versions refuse) a data folder others can read.
        let etcd_dir = root.join("etcd");
        std::fs::set_permissions(&etcd_dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|source| Error::io(format!("restricting {}", etcd_dir.display()), source))?;
        let node_address = sys::host_address();
        let real = match (options.node, node_address) {
            (NodeKind::Real, Some(address)) => Some(address),
            (NodeKind::Real, None) => {
                return Err(Error::NodeUnsupported(
                    "it needs an address besides loopback, for pods to reach the API server"
                        .to_owned(),
                ));
            }
            (NodeKind::Fake, _) => None,
        };
        let pki = Pki::generate(&root.join("pki"), real.map(|a| (a, REAL_NODE_NAME)))?;
        let ports = free_ports()?;
        let server = format!("https://127.0.0.1:{}", ports.apiserver);
        let kubeconfig = root.join("admin.kubeconfig");
        write_file(
            &kubeconfig,
            kubeconfig_json(
                &server,
                &pki.ca_pem,
                "admin",
                &(pki.admin_cert_pem.clone(), pki.admin_key_pem.clone()),
            )
            .as_bytes(),
        )?;

        let mut plane = ControlPlane {
            components: std::sync::Mutex::default(),
            dir: None,
            kept_dir: None,
            kubeconfig: kubeconfig.clone(),
            server: server.clone(),
            // Replaced below once the apiserver runs; building a client does not connect.
            client: client_for(&kubeconfig).await?,
            startup: Duration::ZERO,
            node_address,
            node: options.node,
            host: None,
        };
        if options.keep_dir {
            plane.kept_dir = Some(dir.keep());
        } else {
            plane.dir = Some(dir);
        }

        let log = |name: &str| root.join("logs").join(format!("{name}.log"));
        let kc = kubeconfig.display().to_string();

        plane.spawn(bin, "etcd", etcd_args(&root, ports), &[], log("etcd"))?;
        let etcd_addr = SocketAddr::from(([127, 0, 0, 1], ports.etcd_client));
        plane
            .wait_until("etcd /health", deadline, || async move {
                etcd_healthy(etcd_addr)
            })
            .await?;

        plane.spawn(
            bin,
            "kube-apiserver",
            apiserver_args(&root, ports, &pki, real),
            &[],
            log("kube-apiserver"),
        )?;
        let client = plane.client.clone();
        plane
            .wait_until("kube-apiserver /readyz", deadline, || {
                let client = client.clone();
                async move { apiserver_ready(&client).await }
            })
            .await?;

        plane.spawn(
            bin,
            "kube-controller-manager",
            controller_manager_args(&kc, ports, &pki),
            &[],
            log("kube-controller-manager"),
        )?;
        plane.spawn(
            bin,
            "kube-scheduler",
            scheduler_args(&kc, ports),
            &[],
            log("kube-scheduler"),
        )?;
        match (real, &pki.node) {
            (Some(address), Some(node_pki)) => {
                let containerd = node::check_machine(bin)?;
                let [dns_ready] = sys::free_ports()
                    .map_err(|source| Error::io("finding a free loopback port", source))?;
                let prepared = node::prepare(
                    &root.join("node"),
                    containerd,
                    &server,
                    &pki.ca_pem,
                    &pki.ca_cert,
                    node_pki,
                    options.mirror.as_deref(),
                    (address, &kubeconfig, dns_ready),
                )?;
                plane.host = Some(prepared.guard);
                let layout = prepared.layout;
                let component = Component::spawn(
                    "containerd",
                    &prepared.containerd,
                    &node::containerd_args(&layout),
                    &[],
                    log("containerd"),
                )?;
                plane.components().push(component);
                plane
                    .wait_until("containerd to answer on its socket", deadline, || {
                        let layout = layout.clone();
                        async move { node::containerd_ready(&layout) }
                    })
                    .await?;
                node::load_images(&layout, &binaries::cache_dir()?)?;
                plane.spawn(
                    bin,
                    "kubelet",
                    node::config::kubelet_args(&layout, address),
                    &[],
                    log("kubelet"),
                )?;
                plane.spawn(
                    bin,
                    "kube-proxy",
                    node::proxy_args(&layout),
                    &[],
                    log("kube-proxy"),
                )?;
                plane.spawn(
                    bin,
                    "coredns",
                    node::coredns_args(&layout),
                    &[],
                    log("coredns"),
                )?;
                plane
                    .wait_until("CoreDNS to be ready", deadline, || async move {
                        node::coredns_ready(dns_ready)
                    })
                    .await?;
            }
            _ => {
                let home = root.join("home");
                plane.spawn(
                    bin,
                    "kwok",
                    kwok_args(&kc, &bin.join("kwok-stages.yaml"), node_ip(node_address)),
                    // kwok reads ~/.kwok/kwok.yaml when present; a private HOME keeps a user's
                    // file out.
                    &[("HOME", home.as_path())],
                    log("kwok"),
                )?;
                create_fake_node(&client).await?;
            }
        }
        let node_name = plane.node_name();
        plane
            .wait_until("the node to be Ready and untainted", deadline, || {
                let client = client.clone();
                async move { node_ready(&client, node_name).await }
            })
            .await?;
        plane
            .wait_until("the default service account", deadline, || {
                let client = client.clone();
                async move { default_service_account(&client).await }
            })
            .await?;
        plane.startup = started.elapsed();
        Ok(plane)
    }

    fn spawn(
        &mut self,
        bin: &Path,
        name: &'static str,
        args: Vec<String>,
        envs: &[(&str, &Path)],
        log: PathBuf,
    ) -> Result<(), Error> {
        let component = Component::spawn(name, &bin.join(name), &args, envs, log)?;
        self.components().push(component);
        Ok(())
    }

    /// Polls `probe` until it returns true, failing fast when a component exits and with every log
    /// tail at the deadline.
    async fn wait_until<F, Fut>(
        &mut self,
        what: &str,
        deadline: Instant,
        mut probe: F,
    ) -> Result<(), Error>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = bool>,
    {
        loop {
            self.check()?;
            if probe().await {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    what: what.to_owned(),
                    tails: self.log_tails(TAIL_LINES),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Returns an error naming the first component that has exited, with its log tail.
    ///
    /// A control plane never stops by itself, so any exit is a failure; `olm dev` calls this
    /// periodically to notice a dead component.
    pub fn check(&self) -> Result<(), Error> {
        for component in self.components().iter_mut() {
            if let Some(status) = component.exit_status() {
                let tail = component.tail(TAIL_LINES);
                let name = component.name();
                if tail.contains("address already in use") {
                    return Err(Error::PortInUse {
                        component: name.to_owned(),
                        tail,
                    });
                }
                return Err(Error::ExitedEarly {
                    component: name.to_owned(),
                    status: status.to_string(),
                    log: component.log_path().to_owned(),
                    tail,
                });
            }
        }
        Ok(())
    }

    /// A client authenticated as the cluster admin (`system:masters`).
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// Path of the admin kubeconfig, usable by kubectl and by other tools.
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// The API server URL, `https://127.0.0.1:<port>`.
    pub fn server_url(&self) -> &str {
        &self.server
    }

    /// The control plane's work folder (PKI, logs, etcd data).
    pub fn work_dir(&self) -> &Path {
        match (&self.dir, &self.kept_dir) {
            (Some(dir), _) => dir.path(),
            (None, Some(dir)) => dir,
            // Unreachable by construction: try_start always sets one of them.
            (None, None) => self.kubeconfig.parent().unwrap_or(Path::new("/")),
        }
    }

    /// Keeps the work folder (logs, PKI, etcd data) when this control plane is dropped, e.g. after
    /// a failure whose log paths a user should still be able to open.
    pub fn keep_work_dir(&mut self) {
        if let Some(dir) = self.dir.take() {
            self.kept_dir = Some(dir.keep());
        }
    }

    /// The fake node's address when it is this machine's own (any IPv4 address but loopback):
    /// a host-network pod has it, so a Service whose endpoint is such a pod reaches a server
    /// listening on this machine — which is how an aggregated APIService can be served by a
    /// test. `None` on a machine with loopback only (endpoints may not be loopback).
    pub fn node_address(&self) -> Option<std::net::Ipv4Addr> {
        self.node_address
    }

    /// The node's name: [`NODE_NAME`] for kwok's, [`REAL_NODE_NAME`] for a real one.
    pub fn node_name(&self) -> &'static str {
        match self.node {
            NodeKind::Fake => NODE_NAME,
            NodeKind::Real => REAL_NODE_NAME,
        }
    }

    /// Which node this control plane has.
    pub fn node_kind(&self) -> NodeKind {
        self.node
    }

    /// A real node's folder (containerd's root and socket, the kubelet's files), for importing
    /// images with [`crate::node::import_archive`]; `None` with kwok's node.
    pub fn node_dir(&self) -> Option<PathBuf> {
        (self.node == NodeKind::Real).then(|| self.work_dir().join("node"))
    }

    /// Time from the start call to ready.
    pub fn startup_time(&self) -> Duration {
        self.startup
    }

    /// Names and log file paths of the components, in start order.
    pub fn logs(&self) -> Vec<(&'static str, PathBuf)> {
        self.components()
            .iter()
            .map(|c| (c.name(), c.log_path().to_owned()))
            .collect()
    }

    /// The last `lines` lines of every component's log, each under a header.
    pub fn log_tails(&self, lines: usize) -> String {
        let mut out = String::new();
        for component in self.components().iter() {
            let _ = writeln!(
                out,
                "----- {} ({}) -----\n{}",
                component.name(),
                component.log_path().display(),
                component.tail(lines)
            );
        }
        out
    }

    /// Resident and peak memory of each running component.
    pub fn memory(&self) -> Vec<ComponentMemory> {
        self.components()
            .iter()
            .filter_map(|c| {
                let status = std::fs::read_to_string(format!("/proc/{}/status", c.pid())).ok()?;
                Some(ComponentMemory {
                    name: c.name(),
                    pid: c.pid(),
                    rss_kib: proc_status_kib(&status, "VmRSS:"),
                    peak_rss_kib: proc_status_kib(&status, "VmHWM:"),
                })
            })
            .collect()
    }

    /// Kills kube-apiserver (SIGKILL, as a crash would), keeps it down for `down`, starts it
    /// again with the same flags and waits until it is ready; returns when it was ready again.
    /// etcd keeps every object, but the new server's watch cache starts at the current
    /// revision: watches resuming from an older one are told it expired (`410 Gone`), which is
    /// what tests of recovery from an API server restart need to see.
    pub async fn restart_apiserver(&self, down: Duration) -> Result<Instant, Error> {
        self.with_apiserver(Component::kill)?;
        tokio::time::sleep(down).await;
        self.with_apiserver(Component::restart)??;
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            if apiserver_ready(&self.client).await {
                return Ok(Instant::now());
            }
            // An apiserver that exited again says why, with its log.
            self.check()?;
            if Instant::now() >= deadline {
                return Err(Error::Timeout {
                    what: "kube-apiserver /readyz after a restart".to_owned(),
                    tails: self.log_tails(TAIL_LINES),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    fn with_apiserver<T>(&self, f: impl FnOnce(&mut Component) -> T) -> Result<T, Error> {
        let mut components = self.components();
        let apiserver = components
            .iter_mut()
            .find(|c| c.name() == "kube-apiserver")
            .ok_or_else(|| Error::Io {
                what: "restarting kube-apiserver".to_owned(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "it is not one of the control plane's processes",
                ),
            })?;
        Ok(f(apiserver))
    }

    fn components(&self) -> std::sync::MutexGuard<'_, Vec<Component>> {
        self.components.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stops every component and removes the work folder (unless kept). Same as dropping.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "olm-testenv: control plane logs at failure (work folder {}):\n{}",
                self.work_dir().display(),
                self.log_tails(TAIL_LINES)
            );
        }
        while let Some(mut component) = self.components().pop() {
            component.stop(Duration::from_secs(5));
        }
        // Before the work folder goes: a real node's mounts live in it.
        if let Some(host) = self.host.take() {
            host.restore();
        }
        if let Some(dir) = self.dir.take() {
            // Best effort: a failure to delete a temp folder must not turn into a panic in drop.
            let _ = dir.close();
        }
    }
}

fn proc_status_kib(status: &str, key: &str) -> u64 {
    status
        .lines()
        .find_map(|line| line.strip_prefix(key))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Distinct free loopback ports for every component.
fn free_ports() -> Result<Ports, Error> {
    let [
        etcd_client,
        etcd_peer,
        apiserver,
        controller_manager,
        scheduler,
    ] = sys::free_ports().map_err(|source| Error::io("finding free loopback ports", source))?;
    Ok(Ports {
        etcd_client,
        etcd_peer,
        apiserver,
        controller_manager,
        scheduler,
    })
}

/// A kubeconfig for `server` trusting the CA `ca_pem`, as the client `(certificate, key)` PEM
/// pair; `user` names the entry.
pub(crate) fn kubeconfig_json(
    server: &str,
    ca_pem: &str,
    user: &str,
    (cert_pem, key_pem): &(String, String),
) -> String {
    use base64::Engine as _;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    // JSON is valid YAML, so kubectl and client-go read this as any kubeconfig.
    let config = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": "olm-dev",
            "cluster": {
                "server": server,
                "certificate-authority-data": b64(ca_pem),
            },
        }],
        "users": [{
            "name": user,
            "user": {
                "client-certificate-data": b64(cert_pem),
                "client-key-data": b64(key_pem),
            },
        }],
        "contexts": [{
            "name": "olm-dev",
            "context": {"cluster": "olm-dev", "user": user},
        }],
        "current-context": "olm-dev",
    });
    let mut text = serde_json::to_string_pretty(&config).unwrap_or_default();
    text.push('\n');
    text
}

async fn client_for(kubeconfig: &Path) -> Result<Client, Error> {
    let kc = Kubeconfig::read_from(kubeconfig)?;
    let config = Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

fn etcd_args(root: &Path, ports: Ports) -> Vec<String> {
    let client = format!("http://127.0.0.1:{}", ports.etcd_client);
    let peer = format!("http://127.0.0.1:{}", ports.etcd_peer);
    vec![
        "--name=default".into(),
        format!("--data-dir={}", root.join("etcd").display()),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster=default={peer}"),
        // Throw-away data: fsync only costs time.
        "--unsafe-no-fsync=true".into(),
        "--auto-compaction-retention=1".into(),
        "--log-level=warn".into(),
    ]
}

fn apiserver_args(
    root: &Path,
    ports: Ports,
    pki: &Pki,
    real_node: Option<std::net::Ipv4Addr>,
) -> Vec<String> {
    let p = |path: &Path| path.display().to_string();
    let mut args: Vec<String> = vec![format!(
        "--etcd-servers=http://127.0.0.1:{}",
        ports.etcd_client
    )];
    match real_node {
        // Pods reach the API server through the `kubernetes` Service, whose endpoint is the
        // advertised address: it must be listened on. Nothing unauthenticated gets in (no
        // anonymous requests), and the API server reaches kubelets as the admin.
        Some(address) => args.extend([
            "--bind-address=0.0.0.0".to_owned(),
            format!("--advertise-address={address}"),
            "--anonymous-auth=false".to_owned(),
            format!("--kubelet-client-certificate={}", p(&pki.admin_cert)),
            format!("--kubelet-client-key={}", p(&pki.admin_key)),
            "--kubelet-preferred-address-types=InternalIP".to_owned(),
        ]),
        // With a loopback bind address and no advertise address the apiserver looks for a
        // default-route interface and fails without one; advertising loopback in turn makes the
        // endpoint reconciler fail validation forever, so it is off (only the in-cluster
        // `kubernetes` Service loses its endpoints).
        None => args.extend([
            "--bind-address=127.0.0.1".to_owned(),
            "--advertise-address=127.0.0.1".to_owned(),
            "--endpoint-reconciler-type=none".to_owned(),
        ]),
    }
    args.extend([
        format!("--secure-port={}", ports.apiserver),
        format!("--tls-cert-file={}", p(&pki.serving_cert)),
        format!("--tls-private-key-file={}", p(&pki.serving_key)),
        format!("--cert-dir={}", root.join("pki").display()),
        format!("--client-ca-file={}", p(&pki.ca_cert)),
        // The aggregator's front-proxy identity, as kubeadm and kind configure it: it is
        // published in kube-system/extension-apiserver-authentication, where extension API
        // servers (OLM's packageserver, operators' APIServices) read whom to trust.
        format!("--requestheader-client-ca-file={}", p(&pki.front_proxy_ca)),
        format!(
            "--requestheader-allowed-names={}",
            crate::pki::FRONT_PROXY_CLIENT
        ),
        "--requestheader-username-headers=X-Remote-User".into(),
        "--requestheader-group-headers=X-Remote-Group".into(),
        "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
        format!(
            "--proxy-client-cert-file={}",
            p(&pki.front_proxy_client_cert)
        ),
        format!("--proxy-client-key-file={}", p(&pki.front_proxy_client_key)),
        "--authorization-mode=Node,RBAC".into(),
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
        format!("--service-account-key-file={}", p(&pki.sa_pub)),
        format!("--service-account-signing-key-file={}", p(&pki.sa_key)),
        // Not 10.0.0.0/24: that is kwok's default pod range.
        format!("--service-cluster-ip-range={SERVICE_CIDR}"),
        "--allow-privileged=true".into(),
        "--enable-priority-and-fairness=false".into(),
        // An APIService is reached at its Service's endpoints rather than its cluster IP (which
        // no host routes): a host-network pod's endpoint is the node address, this machine's.
        "--enable-aggregator-routing=true".into(),
        "--max-requests-inflight=0".into(),
        "--max-mutating-requests-inflight=0".into(),
        "--profiling=false".into(),
        "--v=1".into(),
    ]);
    args
}

fn controller_manager_args(kubeconfig: &str, ports: Ports, pki: &Pki) -> Vec<String> {
    let p = |path: &Path| path.display().to_string();
    vec![
        format!("--kubeconfig={kubeconfig}"),
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
        "--bind-address=127.0.0.1".into(),
        // The default port would collide between control planes running side by side.
        format!("--secure-port={}", ports.controller_manager),
        "--leader-elect=false".into(),
        "--use-service-account-credentials=false".into(),
        format!("--service-account-private-key-file={}", p(&pki.sa_key)),
        format!("--root-ca-file={}", p(&pki.ca_cert)),
        format!("--cluster-signing-cert-file={}", p(&pki.ca_cert)),
        format!("--cluster-signing-key-file={}", p(&pki.ca_key)),
        "--controllers=*".into(),
        "--kube-api-qps=1000".into(),
        "--kube-api-burst=1000".into(),
        "--profiling=false".into(),
        "--v=1".into(),
    ]
}

fn scheduler_args(kubeconfig: &str, ports: Ports) -> Vec<String> {
    vec![
        format!("--kubeconfig={kubeconfig}"),
        format!("--authentication-kubeconfig={kubeconfig}"),
        format!("--authorization-kubeconfig={kubeconfig}"),
        "--bind-address=127.0.0.1".into(),
        format!("--secure-port={}", ports.scheduler),
        "--leader-elect=false".into(),
        "--profiling=false".into(),
        "--v=1".into(),
    ]
}

fn kwok_args(kubeconfig: &str, stages: &Path, node_ip: std::net::Ipv4Addr) -> Vec<String> {
    vec![
        format!("--kubeconfig={kubeconfig}"),
        "--manage-all-nodes=false".into(),
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake".into(),
        "--manage-nodes-with-label-selector=".into(),
        "--manage-single-node=".into(),
        format!("--cidr={POD_CIDR}"),
        format!("--node-ip={node_ip}"),
        "--node-lease-duration-seconds=40".into(),
        // The standalone binary has no built-in behaviour: it needs Stage objects.
        format!("--config={}", stages.display()),
    ]
}

/// The node's address: the machine's own when it has one besides loopback (see
/// [`ControlPlane::node_address`]), else one in kwok's pod range's neighbourhood.
fn node_ip(host: Option<std::net::Ipv4Addr>) -> std::net::Ipv4Addr {
    host.unwrap_or(std::net::Ipv4Addr::new(10, 0, 0, 1))
}

/// `GET /health` over a plain TCP connection: etcd speaks HTTP/1.1 on its client port.
fn etcd_healthy(addr: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    if stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.contains("\"health\":\"true\"")
}

async fn apiserver_ready(client: &Client) -> bool {
    let Ok(request) = http::Request::get("/readyz").body(Vec::new()) else {
        return false;
    };
    matches!(client.request_text(request).await, Ok(body) if body.trim() == "ok")
}

async fn create_fake_node(client: &Client) -> Result<(), Error> {
    let node: Node = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": NODE_NAME,
            "annotations": {
                "kwok.x-k8s.io/node": "fake",
                "node.alpha.kubernetes.io/ttl": "0",
            },
            "labels": {
                "kubernetes.io/hostname": NODE_NAME,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/role": "agent",
                "node-role.kubernetes.io/agent": "",
                "type": "kwok",
            },
        },
        // No kwok taint: every node of this cluster is fake, so pods need no toleration.
    }))?;
    let nodes: Api<Node> = Api::all(client.clone());
    match nodes.create(&PostParams::default(), &node).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(err) => Err(err.into()),
    }
}

async fn node_ready(client: &Client, name: &str) -> bool {
    let nodes: Api<Node> = Api::all(client.clone());
    let Ok(node) = nodes.get(name).await else {
        return false;
    };
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conds| {
            conds
                .iter()
                .any(|c| c.type_ == "Ready" && c.status.parse() == Ok(ConditionStatus::True))
        });
    let tainted = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|taints| {
            taints
                .iter()
                .any(|t| t.key == "node.kubernetes.io/not-ready")
        });
    ready && !tainted
}

async fn default_service_account(client: &Client) -> bool {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    accounts.get_opt("default").await.ok().flatten().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_proc_status_fields() {
        let status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
        assert_eq!(proc_status_kib(status, "VmRSS:"), 1024);
        assert_eq!(proc_status_kib(status, "VmHWM:"), 2048);
        assert_eq!(proc_status_kib(status, "VmSwap:"), 0);
    }

    #[test]
    fn etcd_initial_cluster_matches_name_and_peer_url() {
        let ports = free_ports().expect("ports");
        let args = etcd_args(Path::new("/tmp/x"), ports);
        let peer = format!("http://127.0.0.1:{}", ports.etcd_peer);
        assert!(args.contains(&"--name=default".to_owned()));
        assert!(args.contains(&format!("--initial-cluster=default={peer}")));
        assert!(args.contains(&format!("--initial-advertise-peer-urls={peer}")));
    }
}
