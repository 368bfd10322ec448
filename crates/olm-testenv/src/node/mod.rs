//! A real node beside the control plane: containerd, the kubelet and kube-proxy, running real
//! containers on this machine (what `Options::node = NodeKind::Real` starts instead of kwok).
//!
//! The settings come from `config` (pure), the machine-wide bookkeeping — one node per machine,
//! a snapshot of what it changes, restoring it also after a crash — from `host`, and the images
//! no registry serves (the pause image) from `images`.

pub mod config;
pub mod host;
mod images;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

pub use config::{MIRRORED, PAUSE_IMAGE, REAL_NODE_NAME, REAL_POD_CIDR};

use crate::Error;
use crate::fsutil::{create_dir, write_file};
use crate::pki::NodePki;
use config::Layout;
use host::{MachineLock, Snapshot};

/// Whether `address` is in [`REAL_POD_CIDR`] (10.244.0.0/24): a pod's, or the bridge's gateway.
pub(crate) fn in_pod_range(address: Ipv4Addr) -> bool {
    address.octets()[..3] == [10, 244, 0]
}

/// Which node a control plane gets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NodeKind {
    /// kwok's fake node: pods are marked running, no container runs. Any machine, any user,
    /// many at once.
    #[default]
    Fake,
    /// A real node: containerd, kubelet, kube-proxy; containers really run. Needs root and the
    /// node's parts (`scripts/setup.sh`), and only one runs per machine.
    Real,
}

impl NodeKind {
    /// `fake` or `real`, as `olm dev` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Fake => "fake",
            NodeKind::Real => "real",
        }
    }
}

/// A real node's hold on the machine: the lock that makes it the only one, and the snapshot
/// its teardown restores.
#[derive(Debug)]
pub(crate) struct HostGuard {
    snapshot: Snapshot,
    _lock: MachineLock,
}

impl HostGuard {
    /// Puts the machine back (the node's processes must be stopped first, or they are killed).
    pub(crate) fn restore(self) {
        host::restore(&self.snapshot);
    }
}

/// A prepared, not yet started node: its files are written and the machine is recorded.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub(crate) layout: Layout,
    pub(crate) guard: HostGuard,
    pub(crate) containerd: PathBuf,
}

/// What must be true before trying: root (the node changes iptables, mounts and cgroups), the
/// parts on this machine, cgroups mounted. Names what is missing and how to get it.
pub(crate) fn check_machine(bin: &Path) -> Result<PathBuf, Error> {
    if !rustix::process::geteuid().is_root() {
        return Err(Error::NodeUnsupported(
            "it needs root (it sets up iptables, mounts, cgroups and a bridge)".to_owned(),
        ));
    }
    let containerd = crate::binaries::which("containerd").ok_or_else(|| {
        Error::NodeUnsupported(
            "containerd is not installed (scripts/setup.sh installs Debian's containerd, runc, \
             containernetworking-plugins and iptables)"
                .to_owned(),
        )
    })?;
    for tool in ["runc", "ctr", "iptables", "ip"] {
        if crate::binaries::which(tool).is_none() {
            return Err(Error::NodeUnsupported(format!(
                "{tool} is not installed (scripts/setup.sh installs it)"
            )));
        }
    }
    if !Path::new("/usr/lib/cni/bridge").is_file() {
        return Err(Error::NodeUnsupported(
            "the CNI plugins are not installed in /usr/lib/cni (Debian package \
             containernetworking-plugins)"
                .to_owned(),
        ));
    }
    for part in ["kubelet", "kube-proxy", "coredns"] {
        if !bin.join(part).is_file() {
            return Err(Error::BinariesMissing {
                dir: bin.to_owned(),
                missing: part.to_owned(),
            });
        }
    }
    if !Path::new("/sys/fs/cgroup/memory/cgroup.procs").exists()
        && !Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
    {
        return Err(Error::NodeUnsupported(
            "no cgroup hierarchy is mounted under /sys/fs/cgroup".to_owned(),
        ));
    }
    Ok(containerd)
}

/// Takes the machine, records it, and writes the node's configuration under `root`.
#[allow(clippy::too_many_arguments)] // each is one fact about the control plane the node joins
pub(crate) fn prepare(
    root: &Path,
    containerd: PathBuf,
    server: &str,
    ca_pem: &str,
    ca_file: &Path,
    pki: &NodePki,
    registry: Option<&str>,
    dns: (Ipv4Addr, &Path, u16),
) -> Result<Prepared, Error> {
    // A node left by a starter that died was put back by `recover_machine` before the
    // machine's address was chosen; the lock makes this start the only one from here on.
    let lock = MachineLock::take()?;
    let layout = Layout {
        root: root.to_owned(),
    };
    let snapshot = Snapshot::take(root, &layout.containerd_socket());
    snapshot.record()?;
    let guard = HostGuard {
        snapshot,
        _lock: lock,
    };
    for dir in [
        layout.containerd_root(),
        layout.containerd_state(),
        layout.runc_root(),
        layout.cni_conf_dir(),
        layout.cni_ipam_dir(),
        layout.kubelet_root(),
        layout.pod_logs(),
        layout.volume_plugins(),
        layout.pki(),
        layout.images(),
    ] {
        create_dir(&dir)?;
    }
    host::create_cgroups()?;
    write_file(
        &layout.containerd_config(),
        config::containerd(&layout, registry).as_bytes(),
    )?;
    write_file(
        &layout.cni_conf_dir().join("10-olm.conflist"),
        config::cni(&layout).as_bytes(),
    )?;
    write_file(
        &layout.kubelet_config(),
        config::kubelet(
            &layout,
            ca_file,
            (&pki.kubelet_serving_cert, &pki.kubelet_serving_key),
            Some(dns.0),
        )
        .as_bytes(),
    )?;
    write_file(
        &layout.corefile(),
        config::corefile(dns.1, dns.0, dns.2).as_bytes(),
    )?;
    write_file(
        &layout.kubelet_kubeconfig(),
        crate::controlplane::kubeconfig_json(
            server,
            ca_pem,
            &format!("system:node:{REAL_NODE_NAME}"),
            &pki.kubelet_client,
        )
        .as_bytes(),
    )?;
    write_file(
        &layout.proxy_config(),
        config::kube_proxy(&layout, REAL_POD_CIDR).as_bytes(),
    )?;
    write_file(
        &layout.proxy_kubeconfig(),
        crate::controlplane::kubeconfig_json(server, ca_pem, "kube-proxy", &pki.proxy_client)
            .as_bytes(),
    )?;
    Ok(Prepared {
        layout,
        guard,
        containerd,
    })
}

/// containerd's command line.
pub(crate) fn containerd_args(layout: &Layout) -> Vec<String> {
    vec![
        format!("--config={}", layout.containerd_config().display()),
        "--log-level=warn".to_owned(),
    ]
}

/// Whether containerd answers on its socket.
pub(crate) fn containerd_ready(layout: &Layout) -> bool {
    std::process::Command::new("ctr")
        .arg("--address")
        .arg(layout.containerd_socket())
        .arg("version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Builds (once per source, into `cache`) and imports the pause image.
pub(crate) fn load_images(layout: &Layout, cache: &Path) -> Result<(), Error> {
    let binary = images::pause_binary(cache)?;
    let archive = layout.images().join("pause.tar");
    write_file(&archive, &images::pause_archive(&binary)?)?;
    images::import(&layout.containerd_socket(), &archive)
}

/// CoreDNS's command line.
pub(crate) fn coredns_args(layout: &Layout) -> Vec<String> {
    vec!["-conf".to_owned(), layout.corefile().display().to_string()]
}

/// Whether CoreDNS says it is ready (its `ready` plugin on loopback `port`: the kubernetes
/// plugin has synced).
pub(crate) fn coredns_ready(port: u16) -> bool {
    use std::io::{Read as _, Write as _};
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let Ok(mut stream) =
        std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(200))
    else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(std::time::Duration::from_millis(500)));
    if stream
        .write_all(b"GET /ready HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.starts_with("HTTP/1.1 200")
}

/// kube-proxy's command line.
pub(crate) fn proxy_args(layout: &Layout) -> Vec<String> {
    vec![
        format!("--config={}", layout.proxy_config().display()),
        "--v=1".to_owned(),
    ]
}

/// Puts the machine back after a real node whose starter died without tearing it down (its
/// record in [`host::RECORD`] says what to undo); `Ok(false)` when no such node left anything.
/// [`Error::NodeBusy`] when a node is running (its starter is alive: not ours to undo).
pub fn recover_machine() -> Result<bool, Error> {
    if !Path::new(host::RECORD).exists() {
        return Ok(false);
    }
    let lock = MachineLock::take()?;
    host::recover(&lock)
}

/// Imports an OCI archive file into a running real node's containerd (so a pod can use the
/// image without a registry).
pub fn import_archive(node_root: &Path, archive: &Path) -> Result<(), Error> {
    let layout = Layout {
        root: node_root.to_owned(),
    };
    images::import(&layout.containerd_socket(), archive)
}
