//! The configuration files of a real node's parts, as pure functions of where things live: the
//! containerd config, the CNI network, the kubelet's and kube-proxy's configurations and the
//! kubeconfigs they use. Every setting that differs from the parts' defaults is here with the
//! reason, most of them because the node shares a machine it must leave as it found it.

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// Name the real node registers under.
pub const REAL_NODE_NAME: &str = "olm-node";

/// Pod addresses of the real node (the bridge's subnet); apart from the Service range and from
/// the fake node's pod range.
pub const REAL_POD_CIDR: &str = "10.244.0.0/24";

/// The image containerd runs every pod's sandbox from; built locally and imported, since no
/// registry that serves it is reachable.
pub const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.10";

/// The cgroup (in every v1 controller) under which the kubelet puts all pods: one of its own,
/// so that tearing the node down finds every container process and removes every cgroup.
pub const CGROUP_ROOT: &str = "olm-node";

/// The name of the CNI bridge, removed on teardown.
pub const BRIDGE: &str = "olm0";

/// Registries whose image names resolve to the local registry: the ones bundles name, and `*`
/// for any other (containerd falls back to the real host after the mirror).
pub const MIRRORED: [&str; 7] = [
    "docker.io",
    "registry.k8s.io",
    "quay.io",
    "ghcr.io",
    "gcr.io",
    "registry.redhat.io",
    "*",
];

/// Where one node's files live, all under its own folder so that removing it removes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The node's folder.
    pub root: PathBuf,
}

impl Layout {
    /// The containerd config file.
    pub fn containerd_config(&self) -> PathBuf {
        self.root.join("containerd/config.toml")
    }
    /// containerd's persistent root (images, snapshots, container metadata).
    pub fn containerd_root(&self) -> PathBuf {
        self.root.join("containerd/root")
    }
    /// containerd's state folder (sockets of shims, mounted root file systems).
    pub fn containerd_state(&self) -> PathBuf {
        self.root.join("containerd/state")
    }
    /// containerd's socket: the CRI endpoint of the kubelet and `ctr`'s address.
    pub fn containerd_socket(&self) -> PathBuf {
        self.root.join("containerd/containerd.sock")
    }
    /// runc's state root, outside the machine-wide `/run/containerd/runc`.
    pub fn runc_root(&self) -> PathBuf {
        self.root.join("runc")
    }
    /// The CNI network configuration folder.
    pub fn cni_conf_dir(&self) -> PathBuf {
        self.root.join("cni/net.d")
    }
    /// host-local IPAM's allocations, instead of the machine-wide `/var/lib/cni`.
    pub fn cni_ipam_dir(&self) -> PathBuf {
        self.root.join("cni/ipam")
    }
    /// The kubelet's root folder (pod volumes, plugins), instead of `/var/lib/kubelet`.
    pub fn kubelet_root(&self) -> PathBuf {
        self.root.join("kubelet")
    }
    /// The kubelet's configuration file.
    pub fn kubelet_config(&self) -> PathBuf {
        self.root.join("kubelet.yaml")
    }
    /// The kubelet's kubeconfig.
    pub fn kubelet_kubeconfig(&self) -> PathBuf {
        self.root.join("kubelet.kubeconfig")
    }
    /// Container logs, instead of `/var/log/pods`.
    pub fn pod_logs(&self) -> PathBuf {
        self.root.join("pod-logs")
    }
    /// Flex volume plugins, instead of `/usr/libexec/kubernetes/…`, which the kubelet creates.
    pub fn volume_plugins(&self) -> PathBuf {
        self.root.join("volume-plugins")
    }
    /// kube-proxy's configuration file.
    pub fn proxy_config(&self) -> PathBuf {
        self.root.join("kube-proxy.yaml")
    }
    /// kube-proxy's kubeconfig.
    pub fn proxy_kubeconfig(&self) -> PathBuf {
        self.root.join("kube-proxy.kubeconfig")
    }
    /// The node's certificates (kubelet serving and client, kube-proxy client).
    pub fn pki(&self) -> PathBuf {
        self.root.join("pki")
    }
    /// The locally built images, as OCI archives to import.
    pub fn images(&self) -> PathBuf {
        self.root.join("images")
    }
}

/// TOML's basic string: the same escapes as JSON for what paths and addresses contain.
fn toml_str(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

fn p(path: &Path) -> String {
    toml_str(&path.display().to_string())
}

/// containerd's configuration (version 2, containerd 1.6).
///
/// - `restrict_oom_score_adj`: a machine whose root lacks CAP_SYS_RESOURCE cannot lower any
///   `oom_score_adj` below 0, and every sandbox then fails in runc with an unhelpful EOF;
/// - cgroupfs (`SystemdCgroup = false`): there is no systemd to ask;
/// - runc's root, the snapshotter, CNI folders: the node's own, not the machine's;
/// - the snapshotters that would probe the machine (aufs, btrfs, devmapper, zfs) and the `opt`
///   plugin (which writes `/opt/containerd`) are off; AppArmor is not used;
/// - `registry` (`host:port` of the local registry) becomes the mirror of every registry in
///   [`MIRRORED`], so a test satisfies `quay.io/x/y:1` by pushing `x/y:1` there.
pub fn containerd(layout: &Layout, registry: Option<&str>) -> String {
    let mut out = String::new();
    let cri = "plugins.\"io.containerd.grpc.v1.cri\"";
    let _ = writeln!(out, "version = 2");
    let _ = writeln!(out, "root = {}", p(&layout.containerd_root()));
    let _ = writeln!(out, "state = {}", p(&layout.containerd_state()));
    let _ = writeln!(
        out,
        "disabled_plugins = [\"io.containerd.internal.v1.opt\", \"io.containerd.snapshotter.v1.aufs\", \
         \"io.containerd.snapshotter.v1.btrfs\", \"io.containerd.snapshotter.v1.devmapper\", \
         \"io.containerd.snapshotter.v1.zfs\", \"io.containerd.tracing.processor.v1.otlp\"]"
    );
    let _ = writeln!(
        out,
        "\n[grpc]\n  address = {}",
        p(&layout.containerd_socket())
    );
    let ttrpc = format!("{}.ttrpc", layout.containerd_socket().display());
    let _ = writeln!(out, "\n[ttrpc]\n  address = {}", toml_str(&ttrpc));
    let _ = writeln!(out, "\n[{cri}]");
    let _ = writeln!(out, "  sandbox_image = {}", toml_str(PAUSE_IMAGE));
    let _ = writeln!(out, "  restrict_oom_score_adj = true");
    let _ = writeln!(out, "  disable_apparmor = true");
    let _ = writeln!(out, "  enable_selinux = false");
    let _ = writeln!(out, "\n[{cri}.containerd]");
    let _ = writeln!(out, "  snapshotter = \"overlayfs\"");
    let _ = writeln!(out, "  default_runtime_name = \"runc\"");
    let _ = writeln!(out, "\n[{cri}.containerd.runtimes.runc]");
    let _ = writeln!(out, "  runtime_type = \"io.containerd.runc.v2\"");
    let _ = writeln!(out, "\n[{cri}.containerd.runtimes.runc.options]");
    let _ = writeln!(out, "  SystemdCgroup = false");
    let _ = writeln!(out, "  Root = {}", p(&layout.runc_root()));
    let _ = writeln!(out, "\n[{cri}.cni]");
    let _ = writeln!(out, "  bin_dir = \"/usr/lib/cni\"");
    let _ = writeln!(out, "  conf_dir = {}", p(&layout.cni_conf_dir()));
    if let Some(registry) = registry {
        let endpoint = toml_str(&format!("http://{registry}"));
        for host in MIRRORED.iter().copied().chain([registry]) {
            let _ = writeln!(
                out,
                "\n[{cri}.registry.mirrors.{}]\n  endpoint = [{endpoint}]",
                toml_str(host)
            );
        }
    }
    out
}

/// The CNI network: one bridge ([`BRIDGE`]) with the pods' gateway on it, masquerading what
/// leaves the pod range, addresses from [`REAL_POD_CIDR`] kept in the node's folder, and port
/// mappings for `hostPort`.
pub fn cni(layout: &Layout) -> String {
    let config = serde_json::json!({
        "cniVersion": "1.0.0",
        "name": "olm",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": true,
                "ipMasq": true,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": REAL_POD_CIDR}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": layout.cni_ipam_dir(),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": true}},
        ],
    });
    let mut text = serde_json::to_string_pretty(&config).unwrap_or_default();
    text.push('\n');
    text
}

/// The kubelet's configuration (JSON, which the kubelet reads as YAML).
///
/// Beyond the folders of [`Layout`]: cgroup v1 is allowed (`failCgroupV1: false`, otherwise the
/// kubelet exits); preloaded images are used whatever name pulled them
/// (`imagePullCredentialsVerificationPolicy: NeverVerify`); swap does not stop it; disk eviction
/// thresholds are small absolute sizes, not percentages, because the node shares a build
/// machine's disk: 1 % of a 250 GiB disk is 2.5 GiB, which a cargo build's target folder can
/// leave free while a test runs, and the kubelet then evicted OLM's pods and tainted the node
/// (`disk-pressure`) so no pod was scheduled; the read-only port is off and health is on
/// loopback; clients are authenticated by the control plane's CA and authorized by it.
pub fn kubelet(
    layout: &Layout,
    ca: &Path,
    serving: (&Path, &Path),
    dns: Option<Ipv4Addr>,
) -> String {
    let mut config = serde_json::json!({
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": false,
        "imagePullCredentialsVerificationPolicy": "NeverVerify",
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": format!("/{CGROUP_ROOT}"),
        "cgroupsPerQOS": true,
        "failSwapOn": false,
        "containerRuntimeEndpoint": format!("unix://{}", layout.containerd_socket().display()),
        "podLogsDir": layout.pod_logs(),
        "volumePluginDir": layout.volume_plugins(),
        "authentication": {
            "anonymous": {"enabled": false},
            "webhook": {"enabled": true},
            "x509": {"clientCAFile": ca},
        },
        "authorization": {"mode": "Webhook"},
        "tlsCertFile": serving.0,
        "tlsPrivateKeyFile": serving.1,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "clusterDomain": "cluster.local",
        "resolvConf": "/etc/resolv.conf",
        "serializeImagePulls": false,
        "protectKernelDefaults": false,
        "evictionHard": {
            "memory.available": "64Mi",
            "nodefs.available": "100Mi",
            "imagefs.available": "100Mi",
            "nodefs.inodesFree": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "maxPods": 250,
        "rotateCertificates": false,
        "serverTLSBootstrap": false,
        "nodeStatusUpdateFrequency": "5s",
    });
    if let (Some(dns), Some(map)) = (dns, config.as_object_mut()) {
        map.insert(
            "clusterDNS".to_owned(),
            serde_json::json!([dns.to_string()]),
        );
    }
    let mut text = serde_json::to_string_pretty(&config).unwrap_or_default();
    text.push('\n');
    text
}

/// CoreDNS's configuration: Service and Pod names of the cluster (`cluster.local`) from the API
/// server, everything else forwarded to this machine's resolvers, on port 53 of the node's
/// address (the `clusterDNS` every pod's resolv.conf names) and readiness on loopback `ready`.
pub fn corefile(kubeconfig: &Path, address: Ipv4Addr, ready: u16) -> String {
    format!(
        ".:53 {{\n    bind {address}\n    errors\n    ready 127.0.0.1:{ready}\n    kubernetes cluster.local in-addr.arpa ip6.arpa {{\n        kubeconfig {kubeconfig}\n        pods insecure\n        fallthrough in-addr.arpa ip6.arpa\n    }}\n    forward . /etc/resolv.conf\n    cache 30\n    loop\n}}\n",
        kubeconfig = kubeconfig.display()
    )
}

/// The Corefile's place.
impl Layout {
    /// CoreDNS's configuration file.
    pub fn corefile(&self) -> PathBuf {
        self.root.join("Corefile")
    }
}

/// The kubelet's command line: its configuration, credentials, name, address and root folder.
pub fn kubelet_args(layout: &Layout, address: Ipv4Addr) -> Vec<String> {
    vec![
        format!("--config={}", layout.kubelet_config().display()),
        format!("--kubeconfig={}", layout.kubelet_kubeconfig().display()),
        format!("--hostname-override={REAL_NODE_NAME}"),
        format!("--node-ip={address}"),
        format!("--root-dir={}", layout.kubelet_root().display()),
        format!("--cert-dir={}", layout.pki().display()),
        "--v=1".to_owned(),
    ]
}

/// kube-proxy's configuration: iptables mode for the pod range, health and metrics on loopback,
/// and conntrack left as the machine has it (a value of zero means "do not set"), so that the
/// only machine-wide changes are its chains and `route_localnet`, both put back on teardown.
pub fn kube_proxy(layout: &Layout, pod_cidr: &str) -> String {
    let config = serde_json::json!({
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "clientConnection": {"kubeconfig": layout.proxy_kubeconfig()},
        "mode": "iptables",
        "clusterCIDR": pod_cidr,
        "hostnameOverride": REAL_NODE_NAME,
        "healthzBindAddress": "127.0.0.1:10256",
        "metricsBindAddress": "127.0.0.1:10249",
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
    });
    let mut text = serde_json::to_string_pretty(&config).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout {
            root: PathBuf::from("/tmp/w/node"),
        }
    }

    #[test]
    fn containerd_keeps_everything_in_the_node_folder_and_sets_what_this_machine_needs() {
        let text = containerd(&layout(), None);
        assert!(
            text.contains("root = \"/tmp/w/node/containerd/root\""),
            "{text}"
        );
        assert!(
            text.contains("state = \"/tmp/w/node/containerd/state\""),
            "{text}"
        );
        assert!(text.contains("address = \"/tmp/w/node/containerd/containerd.sock\""));
        assert!(text.contains("Root = \"/tmp/w/node/runc\""));
        assert!(text.contains("conf_dir = \"/tmp/w/node/cni/net.d\""));
        assert!(text.contains("restrict_oom_score_adj = true"));
        assert!(text.contains("SystemdCgroup = false"));
        assert!(text.contains("sandbox_image = \"registry.k8s.io/pause:3.10\""));
        assert!(!text.contains("mirrors"), "no registry, no mirrors: {text}");
    }

    #[test]
    fn every_mirrored_registry_and_the_registry_itself_resolve_to_it() {
        let text = containerd(&layout(), Some("127.0.0.1:5000"));
        for host in MIRRORED.iter().copied().chain(["127.0.0.1:5000"]) {
            let table = format!(
                "[plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"{host}\"]\n  endpoint = [\"http://127.0.0.1:5000\"]"
            );
            assert!(text.contains(&table), "{host}: {text}");
        }
    }

    #[test]
    fn the_cni_network_is_a_bridge_over_the_pod_range_with_its_own_ipam_folder() {
        let config: serde_json::Value = serde_json::from_str(&cni(&layout())).unwrap();
        let bridge = &config["plugins"][0];
        assert_eq!(bridge["bridge"], BRIDGE);
        assert_eq!(bridge["ipam"]["ranges"][0][0]["subnet"], REAL_POD_CIDR);
        assert_eq!(bridge["ipam"]["dataDir"], "/tmp/w/node/cni/ipam");
    }

    #[test]
    fn the_kubelet_runs_on_cgroup_v1_with_the_node_folders_and_loopback_health() {
        let text = kubelet(
            &layout(),
            Path::new("/pki/ca.crt"),
            (Path::new("/pki/kubelet.crt"), Path::new("/pki/kubelet.key")),
            Some(Ipv4Addr::new(10, 96, 0, 10)),
        );
        let config: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(config["failCgroupV1"], false);
        assert_eq!(
            config["imagePullCredentialsVerificationPolicy"],
            "NeverVerify"
        );
        assert_eq!(config["cgroupDriver"], "cgroupfs");
        assert_eq!(config["cgroupRoot"], "/olm-node");
        assert_eq!(config["podLogsDir"], "/tmp/w/node/pod-logs");
        assert_eq!(config["readOnlyPort"], 0);
        assert_eq!(config["healthzBindAddress"], "127.0.0.1");
        assert_eq!(config["authentication"]["anonymous"]["enabled"], false);
        assert_eq!(config["clusterDNS"][0], "10.96.0.10");
        assert_eq!(
            config["containerRuntimeEndpoint"],
            "unix:///tmp/w/node/containerd/containerd.sock"
        );
        let args = kubelet_args(&layout(), Ipv4Addr::new(172, 16, 0, 2));
        assert!(args.contains(&"--hostname-override=olm-node".to_owned()));
        assert!(args.contains(&"--node-ip=172.16.0.2".to_owned()));
        assert!(args.contains(&"--root-dir=/tmp/w/node/kubelet".to_owned()));
    }

    #[test]
    fn coredns_answers_cluster_names_on_the_node_address() {
        let text = corefile(
            Path::new("/w/admin.kubeconfig"),
            Ipv4Addr::new(192, 0, 2, 2),
            8181,
        );
        assert!(text.starts_with(".:53 {\n    bind 192.0.2.2\n"), "{text}");
        assert!(text.contains("kubernetes cluster.local in-addr.arpa ip6.arpa {"));
        assert!(text.contains("kubeconfig /w/admin.kubeconfig"));
        assert!(text.contains("ready 127.0.0.1:8181"));
        assert!(text.contains("forward . /etc/resolv.conf"));
    }

    #[test]
    fn kube_proxy_leaves_conntrack_alone() {
        let config: serde_json::Value =
            serde_json::from_str(&kube_proxy(&layout(), REAL_POD_CIDR)).unwrap();
        assert_eq!(config["mode"], "iptables");
        assert_eq!(config["conntrack"]["maxPerCore"], 0);
        assert_eq!(config["conntrack"]["tcpEstablishedTimeout"], "0s");
        assert_eq!(config["hostnameOverride"], REAL_NODE_NAME);
        assert_eq!(config["healthzBindAddress"], "127.0.0.1:10256");
    }
}
