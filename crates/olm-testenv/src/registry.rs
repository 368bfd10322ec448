//! A local OCI registry: Debian's `docker-registry` with our own config on a free loopback port.
//!
//! Tests and `olm dev` need a real registry that speaks the distribution API exactly as production
//! registries do, without Docker and without the network. Debian ships the CNCF distribution server
//! (v2.8) as the apt package `docker-registry`; its packaged default config listens on `:5000` with
//! htpasswd auth, so we never use it: every start writes its own config (filesystem storage,
//! deletes enabled, `http.addr` on a free `127.0.0.1` port, no auth).
//!
//! Two ways to run it:
//!
//! * [`Registry::start`] — owned by the caller: storage lives in a fresh temp dir, the process is
//!   killed and the temp dir removed when the handle is dropped. This is what tests use.
//! * [`Registry::spawn_detached`] — for `olm dev up`: the process outlives the caller, its config,
//!   storage, log and a small state file live under a caller-chosen state dir, and
//!   [`DetachedRegistry::load`] / [`DetachedRegistry::stop`] find and stop it later.
//!
//! Registries on `127.0.0.1` are spoken to over plain HTTP by `olm-image` (as container tools do),
//! so no certificates are needed.

use std::fs;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::logtail::LogTail;
use crate::sys::{Signal, Target, free_ports, send_signal};

/// The executable the Debian package installs.
pub const REGISTRY_BINARY: &str = "docker-registry";
/// The apt package that provides [`REGISTRY_BINARY`]; named in the error when it is missing.
pub const REGISTRY_APT_PACKAGE: &str = "docker-registry";

/// How long we wait for `GET /v2/` to answer 200 before giving up. The server is normally ready in
/// well under a second; the margin covers a loaded CI machine.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How many times a start is retried when the chosen port was taken between probing and binding.
const PORT_ATTEMPTS: usize = 3;
/// How many log lines an error carries.
const LOG_TAIL_LINES: usize = 30;
/// Name of the state file [`Registry::spawn_detached`] writes into its state dir.
const STATE_FILE: &str = "registry.state";

/// Why a registry could not be started, reached or stopped.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The binary is not on `PATH` (or the path given does not exist).
    #[error(
        "the local registry binary `{binary}` was not found; install it with `apt-get install -y {package}`"
    )]
    BinaryMissing {
        /// The binary we tried to run.
        binary: String,
        /// The apt package providing it.
        package: &'static str,
    },
    /// The port we picked is held by another process (after retries).
    #[error(
        "port {port} on 127.0.0.1 is already in use; the registry could not listen on it\n{log_tail}"
    )]
    PortInUse {
        /// The port that was busy.
        port: u16,
        /// The tail of the registry log.
        log_tail: LogTail,
    },
    /// The process exited before it answered `GET /v2/`.
    #[error("docker-registry exited early ({status}) before it became ready\n{log_tail}")]
    ExitedEarly {
        /// The exit status, as printed by the OS.
        status: String,
        /// The tail of the registry log.
        log_tail: LogTail,
    },
    /// The process kept running but never answered `GET /v2/` with 200.
    #[error(
        "docker-registry on {addr} did not answer GET /v2/ with 200 within {timeout:?}\n{log_tail}"
    )]
    NotReady {
        /// The address it should listen on.
        addr: SocketAddr,
        /// How long we waited.
        timeout: Duration,
        /// The tail of the registry log.
        log_tail: LogTail,
    },
    /// A detached registry's state file is missing or unreadable.
    #[error("no detached registry state in {dir}: {reason}")]
    NoState {
        /// The state dir looked in.
        dir: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// A file-system or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What we were doing.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> RegistryError {
    let context = context.into();
    move |source| RegistryError::Io { context, source }
}

/// Options for starting a registry; [`Default`] is right for tests.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    /// The executable to run; defaults to `docker-registry` found on `PATH`.
    pub binary: PathBuf,
    /// A fixed port; `None` picks a free one (so several test binaries can run at once).
    pub port: Option<u16>,
    /// Refuse every write (distribution's read-only maintenance mode); for testing how clients
    /// report a registry that refuses a push.
    pub read_only: bool,
    /// Serve HTTPS with this PEM certificate and key instead of plain HTTP, for testing TLS
    /// clients. Readiness is then checked by the TLS server's answer to a plain request.
    pub tls: Option<RegistryTls>,
    /// Require HTTP basic auth against this htpasswd file (bcrypt entries), for testing how
    /// clients use credentials. `GET /v2/` then answers 401, which counts as ready.
    pub htpasswd: Option<PathBuf>,
    /// Serve as a pull-through cache of the registry at this URL (distribution's proxy mode):
    /// a pull is answered with what that registry holds. With [`RegistryOptions::tls`], this
    /// gives clients that pull only over HTTPS a way to the plain-HTTP dev registry.
    pub proxy: Option<String>,
}

/// PEM files for [`RegistryOptions::tls`].
#[derive(Debug, Clone)]
pub struct RegistryTls {
    /// The server certificate (chain), PEM.
    pub certificate: PathBuf,
    /// Its private key, PEM.
    pub key: PathBuf,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        RegistryOptions {
            binary: PathBuf::from(REGISTRY_BINARY),
            port: None,
            read_only: false,
            tls: None,
            htpasswd: None,
            proxy: None,
        }
    }
}

/// A running `docker-registry` owned by this handle.
///
/// Dropping the handle kills the process and deletes its temp dir (storage, config, log).
/// Use [`Registry::into_detached`] to keep it running instead.
#[derive(Debug)]
pub struct Registry {
    child: Option<Child>,
    addr: SocketAddr,
    dir: PathBuf,
    /// Temp dirs are ours to delete; a detached registry's state dir belongs to the caller.
    remove_dir_on_drop: bool,
}

impl Registry {
    /// Starts a registry with storage in a fresh temp dir, on a free `127.0.0.1` port, and waits
    /// until `GET /v2/` answers 200.
    ///
    /// # Errors
    /// [`RegistryError::BinaryMissing`] names the apt package to install;
    /// [`RegistryError::PortInUse`], [`RegistryError::ExitedEarly`] and [`RegistryError::NotReady`]
    /// carry the tail of the registry log.
    pub fn start() -> Result<Registry, RegistryError> {
        Registry::start_with(&RegistryOptions::default())
    }

    /// [`Registry::start`] with explicit options.
    pub fn start_with(options: &RegistryOptions) -> Result<Registry, RegistryError> {
        let dir = make_temp_dir()?;
        match start_in(&dir, options, false) {
            Ok((child, addr)) => Ok(Registry {
                child: Some(child),
                addr,
                dir,
                remove_dir_on_drop: true,
            }),
            Err(err) => {
                // Keep the log for the caller when the error points at it; otherwise clean up.
                if !matches!(
                    err,
                    RegistryError::PortInUse { .. }
                        | RegistryError::ExitedEarly { .. }
                        | RegistryError::NotReady { .. }
                ) {
                    let _ = fs::remove_dir_all(&dir);
                }
                Err(err)
            }
        }
    }

    /// Starts a registry that outlives this process, for `olm dev up`.
    ///
    /// Everything lives under `state_dir` (created if missing):
    /// `registry/config.yml`, `registry/data/` (the image storage, kept across restarts so images
    /// pushed in one `olm dev` session are still there in the next), `registry/registry.log`, and
    /// the state file `registry.state` that [`DetachedRegistry::load`] reads.
    ///
    /// The process is put in its own process group so Ctrl-C in the terminal that ran
    /// `olm dev up` does not stop it. Returns once `GET /v2/` answers 200.
    ///
    /// If a registry recorded in `state_dir` is still running, it is returned as is instead of
    /// starting a second one.
    pub fn spawn_detached(state_dir: &Path) -> Result<DetachedRegistry, RegistryError> {
        Registry::spawn_detached_with(state_dir, &RegistryOptions::default())
    }

    /// [`Registry::spawn_detached`] with explicit options.
    pub fn spawn_detached_with(
        state_dir: &Path,
        options: &RegistryOptions,
    ) -> Result<DetachedRegistry, RegistryError> {
        if let Ok(existing) = DetachedRegistry::load(state_dir)
            && existing.is_running()
            && probe_v2(existing.addr)
        {
            return Ok(existing);
        }
        let dir = state_dir.join("registry");
        fs::create_dir_all(&dir).map_err(io_err(format!("creating {}", dir.display())))?;
        let (child, addr) = start_in(&dir, options, true)?;
        let registry = Registry {
            child: Some(child),
            addr,
            dir,
            remove_dir_on_drop: false,
        };
        registry.into_detached(state_dir)
    }

    /// Gives up ownership: the process keeps running after this handle is gone, and a state file
    /// is written to `state_dir` so [`DetachedRegistry::load`] can find it later.
    ///
    /// A registry from [`Registry::start`] keeps its storage in its temp dir, which then is no
    /// longer deleted; stopping it is up to [`DetachedRegistry::stop`]. It also stays in the
    /// caller's process group, so a Ctrl-C in the terminal still reaches it; `olm dev up` should
    /// use [`Registry::spawn_detached`], which starts it in a group of its own.
    pub fn into_detached(mut self, state_dir: &Path) -> Result<DetachedRegistry, RegistryError> {
        let Some(child) = self.child.take() else {
            return Err(RegistryError::NoState {
                dir: state_dir.to_path_buf(),
                reason: "the registry process is no longer owned by this handle".into(),
            });
        };
        self.remove_dir_on_drop = false;
        let detached = DetachedRegistry {
            pid: child.id(),
            addr: self.addr,
            dir: self.dir.clone(),
        };
        // Dropping a `Child` neither kills nor waits for it: the process simply lives on.
        drop(child);
        fs::create_dir_all(state_dir)
            .map_err(io_err(format!("creating {}", state_dir.display())))?;
        let state = format!(
            "pid={}\naddr={}\ndir={}\n",
            detached.pid,
            detached.addr,
            detached.dir.display()
        );
        let path = state_dir.join(STATE_FILE);
        fs::write(&path, state).map_err(io_err(format!("writing {}", path.display())))?;
        Ok(detached)
    }

    /// `127.0.0.1:PORT`: the host part of image references pushed to this registry,
    /// e.g. `format!("{}/catalogs/test:v1", registry.addr())`.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The directory holding config, storage and log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The registry log, for printing when a test fails.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("registry.log")
    }

    /// The last lines of the registry log.
    pub fn log_tail(&self) -> LogTail {
        LogTail::read(&self.log_path(), LOG_TAIL_LINES)
    }

    /// How many `method` requests for paths starting with `uri_prefix` (`/v2/repo/blobs/`) the
    /// registry has answered so far, as its log records them: how a test tells whether a client
    /// downloaded something. A log that cannot be read counts nothing.
    pub fn answered(&self, method: &str, uri_prefix: &str) -> usize {
        let log = fs::read_to_string(self.log_path()).unwrap_or_default();
        let method = format!("http.request.method={method} ");
        log.lines()
            .filter(|l| l.contains("msg=\"response completed") && l.contains(&method))
            .filter(|l| {
                l.split_once("http.request.uri=")
                    .map(|(_, rest)| rest.trim_start_matches('"'))
                    .is_some_and(|uri| uri.starts_with(uri_prefix))
            })
            .count()
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if self.remove_dir_on_drop {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// A registry started by [`Registry::spawn_detached`] (or [`Registry::into_detached`]) that runs
/// independently of any handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DetachedRegistry {
    /// The process id of `docker-registry`.
    pub pid: u32,
    /// `127.0.0.1:PORT`; `olm dev status` prints it as `registry: 127.0.0.1:PORT`.
    pub addr: SocketAddr,
    /// Directory holding config, storage and log.
    pub dir: PathBuf,
}

impl DetachedRegistry {
    /// Reads the state file that [`Registry::spawn_detached`] wrote into `state_dir`.
    /// Does not check that the process still runs; see [`DetachedRegistry::is_running`].
    pub fn load(state_dir: &Path) -> Result<DetachedRegistry, RegistryError> {
        let path = state_dir.join(STATE_FILE);
        let no_state = |reason: String| RegistryError::NoState {
            dir: state_dir.to_path_buf(),
            reason,
        };
        let text = fs::read_to_string(&path)
            .map_err(|e| no_state(format!("reading {}: {e}", path.display())))?;
        let (mut pid, mut addr, mut dir) = (None, None, None);
        for line in text.lines() {
            match line.split_once('=') {
                Some(("pid", v)) => pid = v.trim().parse::<u32>().ok(),
                Some(("addr", v)) => addr = v.trim().parse::<SocketAddr>().ok(),
                Some(("dir", v)) => dir = Some(PathBuf::from(v.trim())),
                _ => {}
            }
        }
        match (pid, addr, dir) {
            (Some(pid), Some(addr), Some(dir)) => Ok(DetachedRegistry { pid, addr, dir }),
            _ => Err(no_state(format!(
                "{} lacks a valid pid, addr or dir line",
                path.display()
            ))),
        }
    }

    /// Whether the recorded process still runs and is a `docker-registry` (a recycled pid of an
    /// unrelated process is not mistaken for ours).
    pub fn is_running(&self) -> bool {
        let Ok(cmdline) = fs::read(format!("/proc/{}/cmdline", self.pid)) else {
            return false;
        };
        let Ok(stat) = fs::read_to_string(format!("/proc/{}/stat", self.pid)) else {
            return false;
        };
        // A zombie (state `Z`) has exited; only its parent has not reaped it yet.
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        !zombie
            && String::from_utf8_lossy(&cmdline).contains(REGISTRY_BINARY)
            && String::from_utf8_lossy(&cmdline).contains(&*self.dir.to_string_lossy())
    }

    /// Whether `GET /v2/` answers 200 right now.
    pub fn is_ready(&self) -> bool {
        probe_v2(self.addr)
    }

    /// The registry log.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("registry.log")
    }

    /// Stops the process (SIGTERM, then SIGKILL after 5 s) and removes the state file from
    /// `state_dir`. Storage is kept, so the next [`Registry::spawn_detached`] serves the same
    /// images. Stopping a registry that is no longer running is not an error.
    pub fn stop(&self, state_dir: &Path) -> Result<(), RegistryError> {
        if self.is_running() {
            signal(self.pid, Signal::TERM)?;
            let deadline = Instant::now() + Duration::from_secs(5);
            while self.is_running() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            if self.is_running() {
                signal(self.pid, Signal::KILL)?;
            }
        }
        let path = state_dir.join(STATE_FILE);
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(format!("removing {}", path.display()))(e)),
        }
    }
}

fn signal(pid: u32, sig: Signal) -> Result<(), RegistryError> {
    send_signal(Target::Process(pid), sig).map_err(io_err(format!(
        "sending signal {} to pid {pid}",
        sig.as_raw()
    )))
}

/// Writes the config into `dir`, starts the process with its output in `dir/registry.log`, and
/// waits until it is ready. Retries with another port when the picked one was taken meanwhile.
fn start_in(
    dir: &Path,
    options: &RegistryOptions,
    detached: bool,
) -> Result<(Child, SocketAddr), RegistryError> {
    let data = dir.join("data");
    fs::create_dir_all(&data).map_err(io_err(format!("creating {}", data.display())))?;
    let attempts = if options.port.is_some() {
        1
    } else {
        PORT_ATTEMPTS
    };
    let mut last_err = None;
    for _ in 0..attempts {
        let port = match options.port {
            Some(port) => port,
            // Another process may take it before the registry binds it; then we retry.
            None => free_ports::<1>().map_err(io_err("finding a free port on 127.0.0.1"))?[0],
        };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        match start_once(dir, &data, addr, options, detached) {
            Ok(child) => return Ok((child, addr)),
            Err(err @ RegistryError::PortInUse { .. }) => last_err = Some(err),
            Err(err) => return Err(err),
        }
    }
    Err(last_err.unwrap_or_else(|| RegistryError::Io {
        context: "starting docker-registry".into(),
        source: io::Error::other("no attempt was made"),
    }))
}

fn start_once(
    dir: &Path,
    data: &Path,
    addr: SocketAddr,
    options: &RegistryOptions,
    detached: bool,
) -> Result<Child, RegistryError> {
    // A port that answers before we start anything belongs to someone else.
    if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
        return Err(RegistryError::PortInUse {
            port: addr.port(),
            log_tail: LogTail::read(&dir.join("registry.log"), LOG_TAIL_LINES),
        });
    }
    let config_path = dir.join("config.yml");
    fs::write(&config_path, config_yaml(data, addr, options))
        .map_err(io_err(format!("writing {}", config_path.display())))?;
    let log_path = dir.join("registry.log");
    let log =
        fs::File::create(&log_path).map_err(io_err(format!("creating {}", log_path.display())))?;
    let log_err = log
        .try_clone()
        .map_err(io_err(format!("opening {}", log_path.display())))?;

    let mut cmd = Command::new(&options.binary);
    cmd.arg("serve")
        .arg(&config_path)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err);
    // distribution overrides config keys from REGISTRY_* variables (REGISTRY_AUTH_FILE, used by
    // container tools for credentials, would turn into an `auth.file` section); our config must be
    // the only source.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("REGISTRY_") {
            cmd.env_remove(key);
        }
    }
    if detached {
        use std::os::unix::process::CommandExt;
        // Own process group: a terminal's Ctrl-C must not reach a detached registry. An owned
        // one stays in ours, so interrupting a test run stops it too.
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().map_err(|e| {
        if e.kind() == io::ErrorKind::NotFound {
            RegistryError::BinaryMissing {
                binary: options.binary.display().to_string(),
                package: REGISTRY_APT_PACKAGE,
            }
        } else {
            io_err(format!("starting {}", options.binary.display()))(e)
        }
    })?;

    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                let log_tail = LogTail::read(&log_path, LOG_TAIL_LINES);
                if log_tail.mentions("address already in use") {
                    return Err(RegistryError::PortInUse {
                        port: addr.port(),
                        log_tail,
                    });
                }
                return Err(RegistryError::ExitedEarly {
                    status: status.to_string(),
                    log_tail,
                });
            }
            Ok(None) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(io_err("waiting for docker-registry")(e));
            }
        }
        let ready = match (&options.tls, &options.htpasswd) {
            (Some(_), _) => probe_tls(addr),
            (None, Some(_)) => v2_status(addr) == Some(401),
            (None, None) => probe_v2(addr),
        };
        if ready {
            return Ok(child);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(RegistryError::NotReady {
                addr,
                timeout: READY_TIMEOUT,
                log_tail: LogTail::read(&log_path, LOG_TAIL_LINES),
            });
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The registry config. Uploads are not purged in the background (tests are short and the purge
/// job only adds log noise); the access log is off for the same reason.
fn config_yaml(data: &Path, addr: SocketAddr, options: &RegistryOptions) -> String {
    let read_only = options.read_only;
    let mut yaml = format!(
        "version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: {data}
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
    readonly:
      enabled: {read_only}
http:
  addr: {addr}
  secret: olm-local-registry
",
        data = yaml_quote(&data.to_string_lossy()),
    );
    if let Some(tls) = &options.tls {
        yaml.push_str(&format!(
            "  tls:\n    certificate: {}\n    key: {}\n",
            yaml_quote(&tls.certificate.to_string_lossy()),
            yaml_quote(&tls.key.to_string_lossy())
        ));
    }
    if let Some(htpasswd) = &options.htpasswd {
        yaml.push_str(&format!(
            "auth:\n  htpasswd:\n    realm: olm-local-registry\n    path: {}\n",
            yaml_quote(&htpasswd.to_string_lossy())
        ));
    }
    if let Some(remote) = &options.proxy {
        yaml.push_str(&format!("proxy:\n  remoteurl: {}\n", yaml_quote(remote)));
    }
    yaml
}

/// Double-quoted YAML scalar, so temp paths with odd characters stay one string. Go's `%q`
/// escapes (`\n`, `\t`, `\xNN`, `\uNNNN`) are all YAML double-quoted escapes too, so a newline
/// in a path stays a newline instead of being folded into a space.
fn yaml_quote(s: &str) -> String {
    olm_goenc::quote(s)
}

/// `GET /v2/` over a bare HTTP/1.0 connection: true when the status is 200. Hand-rolled so the
/// crate needs no HTTP client for a readiness check.
fn probe_v2(addr: SocketAddr) -> bool {
    v2_status(addr) == Some(200)
}

/// The status code of `GET /v2/`, or `None` when nothing answers HTTP.
fn v2_status(addr: SocketAddr) -> Option<u16> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /v2/ HTTP/1.0\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut head = [0u8; 64];
    let mut len = 0;
    while len < head.len() {
        match stream.read(&mut head[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(_) => return None,
        }
        if head[..len].contains(&b'\n') {
            break;
        }
    }
    let line = String::from_utf8_lossy(&head[..len]);
    let mut parts = line.split_whitespace();
    match (parts.next(), parts.next()) {
        (Some(v), Some(code)) if v.starts_with("HTTP/") => code.parse().ok(),
        _ => None,
    }
}

/// A TLS server answers a plain-HTTP request with an HTTP 400 once it serves; that is enough to
/// know the registry is up without a TLS client here.
fn probe_tls(addr: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /v2/ HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 16];
    matches!(stream.read(&mut head), Ok(n) if head[..n].starts_with(b"HTTP/"))
}

/// A fresh private (0700) directory under the system temp dir. Kept rather than deleted on drop
/// by `tempfile`: [`Registry`] removes it itself, and keeps it when an error points at its log.
fn make_temp_dir() -> Result<PathBuf, RegistryError> {
    tempfile::Builder::new()
        .prefix("olm-registry-")
        .tempdir()
        .map(tempfile::TempDir::keep)
        .map_err(io_err(format!(
            "creating a temp dir in {}",
            std::env::temp_dir().display()
        )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_answers_and_cleans_up() {
        let registry = match Registry::start() {
            Ok(r) => r,
            Err(e) => panic!("{e}"),
        };
        assert!(probe_v2(registry.addr()));
        assert_eq!(registry.addr().ip().to_string(), "127.0.0.1");
        let dir = registry.dir().to_path_buf();
        assert!(dir.join("config.yml").exists());
        let addr = registry.addr();
        drop(registry);
        assert!(!dir.exists(), "temp dir {} left behind", dir.display());
        assert!(!probe_v2(addr), "registry still answering after drop");
    }

    #[test]
    fn missing_binary_names_the_apt_package() {
        let options = RegistryOptions {
            binary: PathBuf::from("/nonexistent/docker-registry"),
            ..RegistryOptions::default()
        };
        let err = Registry::start_with(&options).expect_err("must fail");
        let msg = err.to_string();
        assert!(msg.contains("apt-get install -y docker-registry"), "{msg}");
    }

    #[test]
    fn early_exit_shows_the_log_tail() {
        // A stand-in that ignores `serve CONFIG`, prints to the log and fails.
        let dir = make_temp_dir().expect("temp dir");
        let script = dir.join("fake-registry");
        fs::write(
            &script,
            "#!/bin/sh\necho 'configuration error: bad storage'\nexit 3\n",
        )
        .expect("write");
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        let options = RegistryOptions {
            binary: script,
            ..RegistryOptions::default()
        };
        let err = Registry::start_with(&options).expect_err("must fail");
        let msg = err.to_string();
        assert!(matches!(err, RegistryError::ExitedEarly { .. }), "{msg}");
        assert!(msg.contains("configuration error: bad storage"), "{msg}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn busy_port_is_reported() {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let options = RegistryOptions {
            port: Some(port),
            ..RegistryOptions::default()
        };
        let err = Registry::start_with(&options).expect_err("must fail");
        assert!(
            matches!(err, RegistryError::PortInUse { port: p, .. } if p == port),
            "{err}"
        );
        assert!(err.to_string().contains("already in use"), "{err}");
    }

    #[test]
    fn detached_survives_handle_and_stops() {
        let state = make_temp_dir().expect("temp dir");
        let detached = match Registry::spawn_detached(&state) {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        };
        assert!(detached.is_running());
        assert!(detached.is_ready());
        let loaded = DetachedRegistry::load(&state).expect("state file");
        assert_eq!(loaded, detached);
        // A second spawn finds the running one instead of starting another.
        let again = Registry::spawn_detached(&state).expect("respawn");
        assert_eq!(again.pid, detached.pid);
        detached.stop(&state).expect("stop");
        // Our own child: reap it so it does not linger as a zombie in the test process.
        assert!(!detached.is_running());
        assert!(!detached.is_ready());
        assert!(DetachedRegistry::load(&state).is_err());
        let _ = fs::remove_dir_all(&state);
    }

    /// One HTTP/1.0 exchange: the status code, the head and the body.
    fn exchange(addr: SocketAddr, method: &str, path: &str, body: &[u8]) -> (u16, String, Vec<u8>) {
        let mut stream = TcpStream::connect(addr).expect("connect");
        let head = format!(
            "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).expect("write head");
        stream.write_all(body).expect("write body");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).expect("read");
        let split = answer
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a head");
        let head = String::from_utf8_lossy(&answer[..split]).into_owned();
        let code = head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .expect("a status code");
        (code, head, answer[split + 4..].to_vec())
    }

    /// A pull-through cache answers with what the registry behind it holds.
    #[test]
    fn proxy_answers_from_the_registry_behind_it() {
        let blob = b"a blob for the pull-through cache\n";
        let digest = "sha256:56a5240ba94f1b2d199c48c66830aeb1f5f7384b37f0fd29a6e128b299b8e0aa";
        let behind = Registry::start().unwrap_or_else(|e| panic!("{e}"));
        // An upload session, then its one chunk with the digest.
        let (started, head, _) =
            exchange(behind.addr(), "POST", "/v2/cache/test/blobs/uploads/", b"");
        assert_eq!(started, 202, "{head}");
        let location = head
            .lines()
            .find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("location")
                    .then(|| value.trim().to_owned())
            })
            .expect("a Location");
        let path = location
            .split_once(&behind.addr().to_string())
            .map_or(location.as_str(), |(_, path)| path);
        let (pushed, head, _) = exchange(
            behind.addr(),
            "PUT",
            &format!("{path}&digest={digest}"),
            blob,
        );
        assert_eq!(pushed, 201, "{head}");
        let proxy = Registry::start_with(&RegistryOptions {
            proxy: Some(format!("http://{}", behind.addr())),
            ..RegistryOptions::default()
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let (status, head, body) = exchange(
            proxy.addr(),
            "GET",
            &format!("/v2/cache/test/blobs/{digest}"),
            b"",
        );
        assert_eq!((status, body.as_slice()), (200, blob.as_slice()), "{head}");
    }

    #[test]
    fn config_quotes_paths() {
        let yaml = config_yaml(
            Path::new("/tmp/a \"b\""),
            "127.0.0.1:5000".parse().unwrap(),
            &RegistryOptions::default(),
        );
        assert!(
            yaml.contains("rootdirectory: \"/tmp/a \\\"b\\\"\""),
            "{yaml}"
        );
        assert!(yaml.contains("addr: 127.0.0.1:5000"));
    }

    /// The storage path the registry reads back is the path we wrote, even with a newline, a tab
    /// or a control character in it (a line break inside a double-quoted YAML scalar is read
    /// back as a space, so it must be escaped).
    #[test]
    fn config_paths_read_back_unchanged() {
        let data = "/tmp/a\nb\tc\u{1}d \"e\" \\f";
        let yaml = config_yaml(
            Path::new(data),
            "127.0.0.1:5000".parse().unwrap(),
            &RegistryOptions::default(),
        );
        let docs = olm_goenc::yamlread::parse_documents(&yaml).expect("valid YAML");
        assert_eq!(
            docs[0]["storage"]["filesystem"]["rootdirectory"],
            serde_json::json!(data),
            "{yaml}"
        );
    }
}
