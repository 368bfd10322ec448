//! `olm dev …` subcommands: a local control plane and registry that keep running in the background
//! between commands, for trying things by hand.
//!
//! `olm dev up` re-executes this binary as a detached supervisor (`olm dev __supervise`, in its own
//! session so that closing the terminal does not stop it). The supervisor owns the control plane:
//! it starts it, writes the state file once everything is ready, checks the components every
//! second, and stops everything on SIGTERM (sent by `olm dev down`). Component processes die with
//! the supervisor even if it is killed, so no orphaned apiserver outlives it.
//!
//! Once the control plane is up, the supervisor runs `olm run` (`olm_controller::run`, OLM v1
//! and OLM v0: the CRDs of both, the catalog server, the installer's and OLM v0's controllers) as
//! a task of its own, with the catalog server on a loopback port that it also writes into each
//! ClusterCatalog's `status.urls.base`, so catalog URLs work from the host as they are.
//!
//! PackageManifests (`packages.operators.coreos.com/v1`) are an aggregated API: the API server
//! proxies them to `olm run`'s packageserver. The aggregator connects to the endpoints of the
//! Service the APIService names (`--enable-aggregator-routing`), and an endpoint may not be a
//! loopback address, so the packageserver listens on a free port of this machine's own address
//! (the fake node's) and routes `packageserver-service` there itself (a Service without
//! selector, and its Endpoints). A machine with no address but loopback cannot be reached that
//! way: the API is then not registered at all, since an APIService nobody can reach would stop
//! every namespace deletion in the cluster.
//!
//! The environment counts as ready once `olm run` answers `/readyz`, the v0 CRDs are established
//! and, where it can be served, the PackageManifest API is available.
//!
//! Everything lives in `~/.cache/olm/dev/` (or `$OLM_CACHE_DIR/dev`): `state.json`, a stable
//! `kubeconfig` path, `supervisor.log`, the control plane's work folder, the registry storage,
//! the catalog server's content (`catalogd/`) and the installer's caches (`extensions/`).

use std::fs;
use std::path::PathBuf;
use std::process::{Command as Process, ExitCode, Stdio};
use std::time::{Duration, Instant};

mod pods;

use anyhow::{Context, bail};
use olm_testenv::registry::{DetachedRegistry, Registry};
use olm_testenv::{ControlPlane, NodeKind, Options};
use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitOptions, kill_process, setsid, waitpid};
use serde::{Deserialize, Serialize};

/// Marker argument of the hidden supervisor subcommand, also used to recognise its process.
const SUPERVISE: &str = "__supervise";

/// How long `olm dev up` waits for the supervisor to report ready. Longer than the control plane's
/// own readiness timeout plus OLM's (`OLM_PODS_TIMEOUT`), so that the supervisor's own error,
/// which names the step that stuck, is what the user sees.
const UP_TIMEOUT: Duration = Duration::from_secs(330);

/// How long OLM installed as pods gets to be ready once the control plane is: the olm image is
/// pushed and pulled (a debug build is large), then the Deployments, webhook CA and
/// PackageManifest API are waited for.
const OLM_PODS_TIMEOUT: Duration = Duration::from_secs(180);

/// How many lines of the supervisor's log a timed-out `olm dev up` shows.
const LOG_TAIL_LINES: usize = 30;

/// How long `olm run` gets to install the CRDs and answer `/readyz` (longer than its own wait
/// for the CRDs, so that its error is what the user sees).
const READY_TIMEOUT: Duration = Duration::from_secs(90);

/// How long the OLM v0 CRDs get to be served (the ClusterServiceVersion CRD, with a whole pod
/// template in its schema, takes the longest).
const V0_CRD_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the PackageManifest API gets to become available once `olm run` is ready (its
/// packageserver starts when OLM v0's caches are filled).
const PACKAGES_TIMEOUT: Duration = Duration::from_secs(60);

/// How long `olm run` gets to finish its requests and reconciles and stop on `olm dev down`.
const RUN_STOP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(clap::Subcommand)]
pub enum Command {
    /// Start a local control plane (etcd, kube-apiserver, controller manager, scheduler) with one
    /// node, a local registry and `olm run` (the OLM v1 CRDs, the catalog server and the
    /// installer) in the background, and apply the OLM v0 CRDs.
    #[command(after_help = "Examples:
  olm dev up                                        a real node where this machine can run one, else kwok's
  olm dev up --node fake                            kwok's node: works anywhere, for any user
  olm dev up --node real --olm-as process           OLM in the background process, not as pods
  olm dev up --registry-alias registry.example.com  pull registry.example.com/… from the dev registry
  olm dev up --node real --layout upstream          OLM as upstream's catalogd and operator-controller Deployments")]
    Up {
        #[command(flatten)]
        options: UpOptions,
    },
    /// Stop everything `olm dev up` started.
    #[command(after_help = "Examples:
  olm dev down  stop the control plane, registry and olm run")]
    Down,
    /// Print the API server URL, the kubeconfig path, the registry address, the catalog server
    /// URL and the metrics URL of `olm run`.
    #[command(after_help = "Examples:
  olm dev status
  olm dev status | grep catalogd  the catalog server's URL (its /browse/ pages too)")]
    Status,
    /// Print only the path of the admin kubeconfig, e.g. for `kubectl --kubeconfig "$(olm dev kubeconfig)"`.
    #[command(after_help = "Examples:
  olm dev kubeconfig
  kubectl --kubeconfig \"$(olm dev kubeconfig)\" get clusterextensions
  export KUBECONFIG=\"$(olm dev kubeconfig)\"")]
    Kubeconfig,
    /// The background process started by `up` (internal).
    #[command(name = SUPERVISE, hide = true)]
    Supervise {
        /// As `up` was given.
        #[command(flatten)]
        options: UpOptions,
    },
}

/// What `olm dev up` is asked for; the supervisor gets the same arguments.
#[derive(clap::Args, Clone, Debug)]
pub struct UpOptions {
    /// The node: `real` (containerd, kubelet and kube-proxy: containers really run; needs
    /// root and `scripts/setup.sh`, one per machine), `fake` (kwok: pods are only marked
    /// running), or `auto`: real where this machine can run it, fake otherwise.
    #[arg(long, value_enum, default_value_t = NodeChoice::Auto)]
    node: NodeChoice,
    /// How OLM runs: `pods` (from its own image, installed with the manifests users apply;
    /// the default on a real node) or `process` (inside this environment's background
    /// process; the only choice on the fake node, and handy for debugging).
    #[arg(long, value_enum)]
    olm_as: Option<OlmAs>,
    /// Another name of the dev registry for OLM's own pulls (repeatable): an image named
    /// `HOST[:PORT]/…` is pulled from the dev registry, as a registries.conf rule would send it
    /// (e.g. a mirror host that exists only in a test's catalog, or a cluster-internal registry
    /// name that cannot be resolved here).
    #[arg(long = "registry-alias", value_name = "HOST[:PORT]", value_parser = registry_alias)]
    registry_aliases: Vec<String>,
    /// OLM's Deployments when it runs as pods (see `olm install-olm --layout`): `single`
    /// (olm-controller-manager) or `upstream` (catalogd-controller-manager and
    /// operator-controller-controller-manager).
    #[arg(long, value_enum, default_value_t = crate::install_olm::Layout::Single)]
    layout: crate::install_olm::Layout,
}

impl UpOptions {
    /// The same options as arguments, for the supervisor.
    fn to_args(&self) -> Vec<String> {
        let mut args = vec!["--node".to_owned(), self.node.as_arg().to_owned()];
        if let Some(o) = self.olm_as {
            args.extend(["--olm-as".to_owned(), o.as_arg().to_owned()]);
        }
        for alias in &self.registry_aliases {
            args.extend(["--registry-alias".to_owned(), alias.clone()]);
        }
        if self.layout == crate::install_olm::Layout::Upstream {
            args.extend(["--layout".to_owned(), "upstream".to_owned()]);
        }
        args
    }
}

/// A registry host as registries.conf prefixes name one: a host and an optional port, nothing
/// that would end the TOML string it is written into or name a path.
fn registry_alias(s: &str) -> Result<String, String> {
    let (host, port) = s.rsplit_once(':').map_or((s, None), |(h, p)| (h, Some(p)));
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|p| p > 0));
    if host_ok && port_ok {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a registry host: give HOST or HOST:PORT (letters, digits, '.' and '-'), no scheme or path"
        ))
    }
}

/// `olm dev up --olm-as`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OlmAs {
    /// Pods on the real node.
    Pods,
    /// A task of the background process.
    Process,
}

impl OlmAs {
    fn as_arg(self) -> &'static str {
        match self {
            OlmAs::Pods => "pods",
            OlmAs::Process => "process",
        }
    }
}

/// `olm dev up --node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NodeChoice {
    /// A real node where this machine can run one, else kwok's.
    Auto,
    /// A real node, or an error saying why not.
    Real,
    /// kwok's fake node.
    Fake,
}

impl NodeChoice {
    fn as_arg(self) -> &'static str {
        match self {
            NodeChoice::Auto => "auto",
            NodeChoice::Real => "real",
            NodeChoice::Fake => "fake",
        }
    }
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    let paths = Paths::new()?;
    match cmd {
        Command::Up { options } => up(&paths, &options),
        Command::Down => down(&paths),
        Command::Status => status(&paths),
        Command::Kubeconfig => kubeconfig(&paths),
        Command::Supervise { options } => supervise(&paths, &options),
    }
}

/// What a running environment looks like, written by the supervisor once ready.
#[derive(Debug, Serialize, Deserialize)]
struct State {
    supervisor_pid: u32,
    server: String,
    kubeconfig: PathBuf,
    registry: Option<String>,
    /// Base URL of the catalog server (absent in states written before it was run).
    #[serde(default)]
    catalogd: Option<String>,
    /// `/metrics` of `olm run` (absent in states written before it was run).
    #[serde(default)]
    metrics: Option<String>,
    work_dir: PathBuf,
    startup_seconds: f64,
    /// `real` or `fake` (absent in states written before there was a choice: fake).
    #[serde(default)]
    node: Option<String>,
    /// The node's name.
    #[serde(default)]
    node_name: Option<String>,
    /// What `--node auto` found, said once by `olm dev up`.
    #[serde(default)]
    node_note: Option<String>,
    /// How OLM runs (`pods (image …)` or `process`).
    #[serde(default)]
    olm: Option<String>,
}

struct Paths {
    dir: PathBuf,
    state: PathBuf,
    pid: PathBuf,
    error: PathBuf,
    kubeconfig: PathBuf,
    log: PathBuf,
}

impl Paths {
    fn new() -> anyhow::Result<Paths> {
        let dir = olm_testenv::cache_dir()?.join("dev");
        Ok(Paths {
            state: dir.join("state.json"),
            pid: dir.join("supervisor.pid"),
            error: dir.join("error"),
            kubeconfig: dir.join("kubeconfig"),
            log: dir.join("supervisor.log"),
            dir,
        })
    }

    fn read_state(&self) -> Option<State> {
        let text = fs::read_to_string(&self.state).ok()?;
        serde_json::from_str(&text).ok()
    }

    fn read_pid(&self) -> Option<u32> {
        fs::read_to_string(&self.pid).ok()?.trim().parse().ok()
    }

    /// The supervisor's pid if one is alive (a stale pid file of a dead or recycled process is not).
    fn live_supervisor(&self) -> Option<u32> {
        self.read_pid().filter(|pid| is_supervisor(*pid))
    }

    fn clear(&self) {
        for path in [&self.state, &self.pid, &self.kubeconfig] {
            let _ = fs::remove_file(path);
        }
    }
}

/// Whether `pid` is a live `olm dev __supervise` process.
fn is_supervisor(pid: u32) -> bool {
    let Ok(cmdline) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let zombie = fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true);
    !zombie
        && cmdline
            .split(|b| *b == 0)
            .any(|arg| arg == SUPERVISE.as_bytes())
}

fn up(paths: &Paths, options: &UpOptions) -> anyhow::Result<ExitCode> {
    if options.node == NodeChoice::Fake && options.olm_as == Some(OlmAs::Pods) {
        bail!(
            "OLM runs as pods only on a real node: use --node real (or auto), or --olm-as process"
        );
    }
    if options.layout != crate::install_olm::Layout::Single
        && (options.node == NodeChoice::Fake || options.olm_as == Some(OlmAs::Process))
    {
        bail!(
            "--layout lays out OLM's Deployments, which run only as pods on a real node: use --node real (or auto) without --olm-as process"
        );
    }
    if paths.live_supervisor().is_some() {
        if let Some(state) = paths.read_state() {
            println!("already running");
            print_status(&state);
            return Ok(ExitCode::SUCCESS);
        }
        bail!(
            "an `olm dev` supervisor is still starting or stuck (see {}); run `olm dev down` first",
            paths.log.display()
        );
    }
    fs::create_dir_all(&paths.dir).with_context(|| format!("creating {}", paths.dir.display()))?;
    paths.clear();
    let _ = fs::remove_file(&paths.error);
    remove_stale_work_dirs(&paths.dir);

    let exe = std::env::current_exe().context("locating the olm binary")?;
    let log = fs::File::create(&paths.log)
        .with_context(|| format!("creating {}", paths.log.display()))?;
    let log_err = log.try_clone()?;
    let mut process = Process::new(exe);
    process
        .args(["dev", SUPERVISE])
        .args(options.to_args())
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err);
    // The supervisor detaches itself from our terminal and session first thing (see `supervise`).
    let mut child = process.spawn().context("starting the olm dev supervisor")?;

    let started = Instant::now();
    loop {
        if let Some(state) = paths.read_state() {
            if let Some(note) = &state.node_note {
                println!("{note}");
            }
            print_status(&state);
            println!("ready in {:.1} s", state.startup_seconds);
            return Ok(ExitCode::SUCCESS);
        }
        if let Some(exit) = child.try_wait()? {
            let reason = fs::read_to_string(&paths.error)
                .unwrap_or_else(|_| format!("no error recorded; see {}", paths.log.display()));
            bail!("olm dev up failed (supervisor {exit}):\n{reason}");
        }
        if started.elapsed() > UP_TIMEOUT {
            // Stop the half-started supervisor so that a retry starts clean.
            let _ = signal(child.id(), Signal::TERM);
            bail!(
                "olm dev up: not ready after {UP_TIMEOUT:?}\n{}",
                olm_testenv::LogTail::read(&paths.log, LOG_TAIL_LINES)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Removes control plane work folders left by a supervisor that was killed before it could clean
/// up (a normal stop deletes its own). Only called when no supervisor is alive.
fn remove_stale_work_dirs(dir: &std::path::Path) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("olm-testenv-")
        {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

fn down(paths: &Paths) -> anyhow::Result<ExitCode> {
    let mut stopped_any = false;
    if let Some(pid) = paths.live_supervisor() {
        signal(pid, Signal::TERM)?;
        // The supervisor stops each component with a grace period; give it time for all of them.
        let deadline = Instant::now() + Duration::from_secs(30);
        while is_supervisor(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        if is_supervisor(pid) {
            // Components die with it (they are started with a parent-death signal).
            signal(pid, Signal::KILL)?;
        }
        stopped_any = true;
    }
    // The supervisor stops the registry itself; this covers a supervisor that was killed.
    if let Ok(registry) = DetachedRegistry::load(&paths.dir) {
        registry.stop(&paths.dir)?;
        stopped_any = true;
    }
    // And a real node it started: the machine is put back from the node's record.
    match olm_testenv::node::recover_machine() {
        Ok(true) => {
            println!("put the machine back as it was before the real node started");
            stopped_any = true;
        }
        Ok(false) => {}
        // Another process's node (a test's): not ours to touch.
        Err(olm_testenv::Error::NodeBusy { .. }) => {}
        Err(err) => eprintln!("olm dev down: putting the machine back after a real node: {err}"),
    }
    paths.clear();
    println!(
        "{}",
        if stopped_any {
            "stopped"
        } else {
            "not running"
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn status(paths: &Paths) -> anyhow::Result<ExitCode> {
    match (paths.live_supervisor(), paths.read_state()) {
        (Some(_), Some(state)) => {
            print_status(&state);
            Ok(ExitCode::SUCCESS)
        }
        (Some(_), None) => {
            println!("starting (see {})", paths.log.display());
            Ok(ExitCode::FAILURE)
        }
        (None, _) => {
            println!("not running; start it with `olm dev up`");
            // A supervisor that stopped on its own (a component died) leaves its reason behind.
            if let Ok(reason) = fs::read_to_string(&paths.error) {
                println!(
                    "the last run stopped with an error (full log: {}):\n{}",
                    paths.log.display(),
                    reason.trim_end()
                );
            }
            Ok(ExitCode::FAILURE)
        }
    }
}

fn kubeconfig(paths: &Paths) -> anyhow::Result<ExitCode> {
    match (paths.live_supervisor(), paths.read_state()) {
        (Some(_), Some(state)) => {
            println!("{}", state.kubeconfig.display());
            Ok(ExitCode::SUCCESS)
        }
        _ => bail!("olm dev is not running; start it with `olm dev up`"),
    }
}

fn print_status(state: &State) {
    println!("api server: {}", state.server);
    let kind = state.node.as_deref().unwrap_or("fake");
    match &state.node_name {
        Some(name) => println!("node: {name} ({kind})"),
        None => println!("node: {kind}"),
    }
    println!("kubeconfig: {}", state.kubeconfig.display());
    if let Some(registry) = &state.registry {
        println!("registry: {registry}");
    }
    if let Some(olm) = &state.olm {
        println!("olm: {olm}");
    }
    if let Some(catalogd) = &state.catalogd {
        println!("catalogd: {catalogd}");
    }
    if let Some(metrics) = &state.metrics {
        println!("metrics: {metrics}");
    }
}

/// Sends `sig` to `pid`; a process that is already gone is not an error.
fn signal(pid: u32, sig: Signal) -> anyhow::Result<()> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .context("pid out of range")?;
    match kill_process(pid, sig) {
        Ok(()) | Err(Errno::SRCH) => Ok(()),
        Err(errno) => {
            Err(std::io::Error::from(errno)).context(format!("signalling process {pid:?}"))
        }
    }
}

/// The detached supervisor: start, publish the state, watch, and clean up on SIGTERM.
fn supervise(paths: &Paths, options: &UpOptions) -> anyhow::Result<ExitCode> {
    // A session of its own, so that Ctrl-C or closing the terminal `olm dev up` ran in does not
    // reach the supervisor. Done here rather than between fork and exec, which needs unsafe code.
    setsid().context("leaving the terminal's session")?;
    fs::write(&paths.pid, format!("{}\n", std::process::id()))
        .with_context(|| format!("writing {}", paths.pid.display()))?;
    // A current-thread runtime keeps every component's parent thread alive for the supervisor's
    // whole life, which the parent-death signal of the components depends on.
    let runtime = crate::runtime()?;
    let result = runtime.block_on(supervise_async(paths, options));
    if let Err(err) = &result {
        let _ = fs::write(&paths.error, format!("{err:#}\n"));
        eprintln!("olm dev supervisor: {err:#}");
    }
    if let Ok(registry) = DetachedRegistry::load(&paths.dir) {
        let _ = registry.stop(&paths.dir);
        // The registry is our child: reap it, or it lingers as a zombie under an init that may
        // not collect orphans.
        if let Some(pid) = i32::try_from(registry.pid).ok().and_then(Pid::from_raw) {
            let _ = waitpid(Some(pid), WaitOptions::NOHANG);
        }
    }
    paths.clear();
    result
}

async fn supervise_async(paths: &Paths, options: &UpOptions) -> anyhow::Result<ExitCode> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;

    // The registry starts in well under a second and fails fast when it is not installed, so it
    // goes first; the control plane takes seconds.
    let registry = Registry::spawn_detached(&paths.dir)?;
    let (mut plane, node_note) = tokio::select! {
        plane = start_plane(paths, options.node, registry.addr.to_string()) => plane?,
        _ = term.recv() => return Ok(ExitCode::SUCCESS),
        _ = int.recv() => return Ok(ExitCode::SUCCESS),
    };
    fs::copy(plane.kubeconfig_path(), &paths.kubeconfig)
        .with_context(|| format!("writing {}", paths.kubeconfig.display()))?;

    let kube_config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(plane.kubeconfig_path())?,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .context("reading the control plane's kubeconfig")?;
    let client =
        kube::Client::try_from(kube_config.clone()).context("a client for the control plane")?;
    let real = plane.node_kind() == NodeKind::Real;
    let olm_as = match (options.olm_as, real) {
        (Some(OlmAs::Pods), false) => bail!(
            "OLM runs as pods only on a real node, and the node is kwok's fake one; use --olm-as process"
        ),
        (Some(chosen), _) => chosen,
        (None, true) => OlmAs::Pods,
        (None, false) => OlmAs::Process,
    };
    if olm_as == OlmAs::Process && options.layout != crate::install_olm::Layout::Single {
        bail!("--layout lays out OLM's Deployments, and OLM runs in this process: use --node real");
    }
    let mut olm = match (olm_as, plane.node_address()) {
        (OlmAs::Pods, Some(address)) => {
            let started = tokio::select! {
                started = pods::start(&client, registry.addr, address, &options.registry_aliases, options.layout, OLM_PODS_TIMEOUT) => started?,
                _ = term.recv() => return Ok(ExitCode::SUCCESS),
                _ = int.recv() => return Ok(ExitCode::SUCCESS),
            };
            Olm::Pods(started)
        }
        _ => {
            let registries_conf = paths.dir.join("registries.conf");
            write_registries_conf(&registries_conf, registry.addr, &options.registry_aliases)?;
            let mut run = OlmRun::start(
                kube_config,
                paths.dir.clone(),
                plane.node_address(),
                &registries_conf,
            )
            .await?;
            let served = plane.node_address().is_some();
            tokio::select! {
                ready = async {
                    tokio::try_join!(run.ready(), install_v0_crds(&client))?;
                    if served {
                        crate::install_olm::packages_available(&client, PACKAGES_TIMEOUT).await?;
                    }
                    anyhow::Ok(())
                } => {
                    ready?;
                }
                _ = term.recv() => {
                    run.stop().await;
                    return Ok(ExitCode::SUCCESS);
                }
                _ = int.recv() => {
                    run.stop().await;
                    return Ok(ExitCode::SUCCESS);
                }
            }
            Olm::Process(run)
        }
    };

    let state = State {
        supervisor_pid: std::process::id(),
        server: plane.server_url().to_owned(),
        kubeconfig: paths.kubeconfig.clone(),
        registry: Some(registry.addr.to_string()),
        catalogd: Some(olm.catalogs_url()),
        metrics: olm.metrics_url(),
        olm: Some(olm.describe()),
        work_dir: plane.work_dir().to_owned(),
        startup_seconds: plane.startup_time().as_secs_f64(),
        node: Some(plane.node_kind().as_str().to_owned()),
        node_name: Some(plane.node_name().to_owned()),
        node_note,
    };
    // Written to a temporary name and renamed, so `olm dev up` never reads half a file.
    let tmp = paths.state.with_extension("json.tmp");
    fs::write(&tmp, serde_json::to_vec_pretty(&state)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, &paths.state).with_context(|| format!("writing {}", paths.state.display()))?;
    println!(
        "olm dev: control plane ready in {:.1} s at {}",
        state.startup_seconds, state.server
    );

    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = int.recv() => break,
            _ = tick.tick() => {
                if let Err(err) = plane.check() {
                    // Leave the evidence; the next `olm dev up` removes the folder.
                    plane.keep_work_dir();
                    eprintln!("{}", plane.log_tails(40));
                    return Err(err).context("a control plane component stopped");
                }
                if !registry.is_running() {
                    bail!("the registry stopped; see {}", registry.log_path().display());
                }
            }
            stopped = olm.stopped() => return Err(run_stopped(stopped)),
        }
    }
    println!("olm dev: stopping");
    // Before the control plane, so the controllers do not spend their last moments retrying a
    // vanished API server.
    olm.stop().await;
    drop(plane);
    Ok(ExitCode::SUCCESS)
}

/// Starts the control plane with the node `choice` asks for; `auto` tries a real node and, when
/// this machine cannot run one, starts kwok's, with one line saying what it found. A real
/// node's containerd resolves the registries images name to the dev registry (`registry`).
async fn start_plane(
    paths: &Paths,
    choice: NodeChoice,
    registry: String,
) -> anyhow::Result<(ControlPlane, Option<String>)> {
    let options = |node| Options {
        parent_dir: Some(paths.dir.clone()),
        node,
        mirror: Some(registry.clone()),
        ..Options::default()
    };
    match choice {
        NodeChoice::Fake => Ok((
            ControlPlane::start_with(options(NodeKind::Fake)).await?,
            None,
        )),
        NodeChoice::Real => Ok((
            ControlPlane::start_with(options(NodeKind::Real))
                .await
                .context("starting the control plane with a real node (olm dev up --node real)")?,
            None,
        )),
        NodeChoice::Auto => match ControlPlane::start_with(options(NodeKind::Real)).await {
            Ok(plane) => Ok((
                plane,
                Some(
                    "this machine runs containers: the node is real (--node fake for kwok's)"
                        .to_owned(),
                ),
            )),
            Err(err) => {
                let reason = err.to_string();
                let reason = reason.lines().next().unwrap_or_default();
                let note = format!("no real node here ({reason}): the node is kwok's fake one");
                println!("olm dev: {note}");
                Ok((
                    ControlPlane::start_with(options(NodeKind::Fake)).await?,
                    Some(note),
                ))
            }
        },
    }
}

/// The registries.conf `olm run` reads in this process: the machine's own
/// (`/etc/containers/registries.conf`, when there is one) followed by a rule sending each of
/// `aliases` to the dev registry.
fn write_registries_conf(
    path: &std::path::Path,
    registry: std::net::SocketAddr,
    aliases: &[String],
) -> anyhow::Result<()> {
    let machine = olm_image::mirrors::DEFAULT_PATH;
    let mut text = match fs::read_to_string(machine) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {machine}")),
    };
    text.push_str(&pods::registry_rules(aliases, registry));
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Applies the OLM v0 CRDs (`config/crd/v0/`, built into the binary) and waits until they are
/// served (`olm run` applies them too; this wait is what makes `up` return only once they are).
async fn install_v0_crds(client: &kube::Client) -> anyhow::Result<()> {
    let crds = olm_v0_api::manifests()?;
    olm_testenv::install_crds(client, &crds, V0_CRD_TIMEOUT)
        .await
        .context("installing the OLM v0 CRDs")
}

/// Why `olm run` stopped while the environment was running (or starting).
fn run_stopped(
    stopped: Result<Result<(), olm_controller::run::RunError>, tokio::task::JoinError>,
) -> anyhow::Error {
    match stopped {
        Ok(Ok(())) => anyhow::anyhow!("olm run stopped"),
        Ok(Err(err)) => anyhow::Error::new(err).context("olm run stopped"),
        Err(err) => anyhow::Error::new(err).context("olm run stopped"),
    }
}

/// `olm run`, as a task of the supervisor.
struct OlmRun {
    catalogs: std::net::SocketAddr,
    probes: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<Result<(), olm_controller::run::RunError>>,
}

impl OlmRun {
    /// Serves on free loopback ports: catalogs on one, probes and `/metrics` on another. The
    /// catalog port is also the external address, so `status.urls.base` is reachable from the
    /// host. No admission webhook (the API server only calls webhooks over HTTPS, and a dev
    /// certificate would have to be trusted by it); the controller labels each catalog itself
    /// instead.
    ///
    /// The packageserver listens on a free port of `node_address` (this machine's own, which
    /// the API server may use as an endpoint) and routes its Service there; without one it
    /// listens on loopback, where nothing routes to it, and the API is not registered.
    async fn start(
        kube_config: kube::Config,
        cache_path: PathBuf,
        node_address: Option<std::net::Ipv4Addr>,
        registries_conf: &std::path::Path,
    ) -> anyhow::Result<OlmRun> {
        olm_image::install_crypto_provider();
        let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let packageserver = match node_address {
            Some(address) => olm_v0_controller::packageserver::Options {
                addr: std::net::SocketAddr::from((address, 0)),
                advertise: Some(address.into()),
                pod: None,
                ..olm_v0_controller::packageserver::Options::default()
            },
            None => olm_v0_controller::packageserver::Options {
                addr: loopback,
                advertise: None,
                pod: None,
                ..olm_v0_controller::packageserver::Options::default()
            },
        };
        let mut options = olm_controller::run::Options {
            cache_path: cache_path.clone(),
            catalogs_addr: loopback,
            health_probe_addr: Some(loopback),
            metrics_addr: Some(loopback),
            images: olm_image::ClientOptions {
                limits: crate::limits::from_env()?,
                ..crate::catalogd::image_options(None, registries_conf)?
            },
            packageserver,
            ..olm_controller::run::Options::default()
        };
        let listeners = olm_controller::run::Listeners::bind(&options).await?;
        let catalogs = listeners
            .catalogs
            .as_ref()
            .context("OLM v1 runs, so its catalog server listens")?
            .local_addr()?;
        let probes = listeners
            .probes
            .as_ref()
            .context("olm run has no probe listener")?
            .local_addr()?;
        options.catalogd.external_address = Some(catalogs.to_string());
        // A developer's own loopback port: the cluster page is for them.
        options.catalogd.browse_cluster = true;
        println!(
            "olm dev: olm run with the catalog server on http://{catalogs}, probes and /metrics on http://{probes}, caches in {}",
            cache_path.display()
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(olm_controller::run::serve(
            options,
            kube_config,
            listeners,
            async move {
                let _ = stopped.await;
            },
        ));
        Ok(OlmRun {
            catalogs,
            probes,
            stop: Some(stop),
            task,
        })
    }

    /// Waits until `/readyz` answers 200 (the CRDs are served and every part started), or fails
    /// with `olm run`'s own error when it stops first.
    async fn ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if readyz(self.probes).await {
                return Ok(());
            }
            if self.task.is_finished() {
                return Err(run_stopped((&mut self.task).await));
            }
            if Instant::now() > deadline {
                bail!("olm run did not become ready within {READY_TIMEOUT:?}");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    fn catalogs_url(&self) -> String {
        format!("http://{}", self.catalogs)
    }

    fn metrics_url(&self) -> String {
        format!("http://{}/metrics", self.probes)
    }

    async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if tokio::time::timeout(RUN_STOP_TIMEOUT, &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
    }
}

/// OLM in this environment: a task of the supervisor, or pods on the real node.
enum Olm {
    Process(OlmRun),
    Pods(pods::InCluster),
}

impl Olm {
    fn catalogs_url(&self) -> String {
        match self {
            Olm::Process(run) => run.catalogs_url(),
            Olm::Pods(pods) => pods.catalogd.clone(),
        }
    }

    fn metrics_url(&self) -> Option<String> {
        match self {
            Olm::Process(run) => Some(run.metrics_url()),
            Olm::Pods(_) => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Olm::Process(_) => "a process of this environment (--olm-as process)".to_owned(),
            Olm::Pods(pods) => format!(
                "pods in olmv1-system from {} (they pull the dev registry at {})",
                pods.image, pods.registry_for_pods
            ),
        }
    }

    /// Resolves when OLM stopped by itself (only a process can; pods are the cluster's).
    async fn stopped(
        &mut self,
    ) -> Result<Result<(), olm_controller::run::RunError>, tokio::task::JoinError> {
        match self {
            Olm::Process(run) => (&mut run.task).await,
            Olm::Pods(_) => std::future::pending().await,
        }
    }

    async fn stop(self) {
        match self {
            Olm::Process(run) => run.stop().await,
            Olm::Pods(pods) => pods.stop(),
        }
    }
}

/// Whether `GET /readyz` on `addr` answers 200 within a second. The listener is bound before
/// `olm run` serves it, so a connection may be accepted and then left unanswered while it starts.
async fn readyz(addr: std::net::SocketAddr) -> bool {
    tokio::time::timeout(Duration::from_secs(1), readyz_once(addr))
        .await
        .unwrap_or(false)
}

async fn readyz_once(addr: std::net::SocketAddr) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else {
        return false;
    };
    if stream
        .write_all(b"GET /readyz HTTP/1.1\r\nHost: olm\r\nConnection: close\r\n\r\n")
        .await
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).await.is_ok() && head.starts_with(b"HTTP/1.1 200")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_process_is_not_a_supervisor() {
        assert!(!is_supervisor(std::process::id()));
        assert!(!is_supervisor(u32::MAX));
    }

    #[test]
    fn state_round_trips() {
        let state = State {
            supervisor_pid: 42,
            server: "https://127.0.0.1:1".into(),
            kubeconfig: PathBuf::from("/x/kubeconfig"),
            registry: Some("127.0.0.1:2".into()),
            catalogd: Some("http://127.0.0.1:3".into()),
            metrics: Some("http://127.0.0.1:4/metrics".into()),
            work_dir: PathBuf::from("/x/w"),
            startup_seconds: 1.5,
            node: Some("real".into()),
            node_name: Some("olm-node".into()),
            node_note: None,
            olm: Some("a process of this environment (--olm-as process)".into()),
        };
        let text = serde_json::to_string(&state).expect("serialize");
        let back: State = serde_json::from_str(&text).expect("deserialize");
        assert_eq!(back.server, state.server);
        assert_eq!(back.registry, state.registry);
        assert_eq!(back.node.as_deref(), Some("real"));
        assert_eq!(back.catalogd, state.catalogd);
    }

    #[test]
    fn a_state_without_catalogd_still_reads() {
        let text = r#"{"supervisor_pid":1,"server":"https://127.0.0.1:1",
            "kubeconfig":"/x/kubeconfig","registry":null,"work_dir":"/x/w","startup_seconds":1.0}"#;
        let state: State = serde_json::from_str(text).expect("deserialize");
        assert_eq!(state.catalogd, None);
    }

    #[test]
    fn paths_live_under_the_cache_dir() {
        let paths = Paths::new().expect("paths");
        assert!(paths.dir.ends_with("dev"));
        assert_eq!(paths.kubeconfig.parent(), Some(paths.dir.as_path()));
        assert_eq!(paths.state.parent(), Some(paths.dir.as_path()));
    }

    #[test]
    fn registry_aliases_are_hosts_with_an_optional_port() {
        for ok in [
            "mirrored-registry.operator-controller-e2e.svc.cluster.local:5000",
            "quay.io",
            "10.0.0.1:443",
        ] {
            assert_eq!(registry_alias(ok).as_deref(), Ok(ok));
        }
        for bad in [
            "",
            "https://quay.io",
            "quay.io/org",
            "a:0",
            "a:99999",
            "a\"b",
            ":5000",
        ] {
            let err = registry_alias(bad).expect_err(bad);
            assert!(err.contains("is not a registry host"), "{err}");
        }
    }
}
