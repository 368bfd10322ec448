//! What a real node changes on the machine it runs on, and putting it back.
//!
//! A node is host-wide state: iptables chains and rules, a bridge, network namespaces under
//! `/var/run/netns`, mounts, cgroups, symlinks in `/var/log/containers` and a few sysctls. Before
//! a node starts, [`Snapshot::take`] records what these look like; [`restore`] removes what the
//! node added and writes the sysctls back. The snapshot is also written to [`RECORD`] while the
//! node runs, so that when whoever started it dies without tearing it down (a crash, `kill -9`),
//! the next start — or `olm dev down` — finds the record and restores from it.
//!
//! Only one node may run per machine ([`MachineLock`]): two would fight over the same chains.
//!
//! The decisions (which iptables lines undo a node's, which mounts belong to it) are pure
//! functions of the text the kernel and iptables print, tested as tables below; the rest runs
//! commands and writes files.

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::config::{BRIDGE, CGROUP_ROOT};
use crate::Error;

/// The folder holding the machine-wide lock and record; in `/run`, so a reboot (which undoes
/// everything a node changed) also forgets the record.
pub const MACHINE_DIR: &str = "/run/olm-node";

/// The record of the running node's snapshot, read back after a crash.
pub const RECORD: &str = "/run/olm-node/host.json";

const LOCK: &str = "/run/olm-node/lock";

/// Sysctls the kubelet, the CNI bridge plugin or kube-proxy set; written back on teardown.
const SYSCTLS: [&str; 14] = [
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
    "net/ipv4/ip_forward",
    "net/ipv4/conf/all/forwarding",
    "net/ipv4/conf/all/route_localnet",
    "net/ipv6/conf/all/forwarding",
    "net/bridge/bridge-nf-call-iptables",
    "net/bridge/bridge-nf-call-ip6tables",
    "net/netfilter/nf_conntrack_max",
    "net/netfilter/nf_conntrack_tcp_timeout_established",
];

/// Where containerd (`/var/run/netns`) binds network namespaces; as mountinfo names it, `/var/run`
/// being a link to `/run`.
fn netns_dir() -> PathBuf {
    fs::canonicalize("/var/run/netns").unwrap_or_else(|_| PathBuf::from("/run/netns"))
}
const CONTAINER_LOGS: &str = "/var/log/containers";
const CGROUPS: &str = "/sys/fs/cgroup";

/// Chains a node creates: the kubelet's and kube-proxy's (`KUBE-…`) and the CNI plugins'
/// (`CNI-…`). Only these are ever removed.
const OWN_CHAIN_PREFIXES: [&str; 2] = ["KUBE-", "CNI-"];

/// The machine as it was before a node started.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The process that started the node (to say who holds the machine).
    pub owner_pid: u32,
    /// The node's folder: every process, mount and log link under it is the node's.
    pub node_root: PathBuf,
    /// containerd's socket, which its shims name on their command line.
    pub containerd_socket: PathBuf,
    /// `(sysctl path under /proc/sys, value)`, for those that exist.
    pub sysctls: Vec<(String, String)>,
    /// `iptables-save` output before, IPv4.
    pub iptables: String,
    /// `ip6tables-save` output before.
    pub ip6tables: String,
    /// Network namespaces that existed before.
    pub netns: Vec<String>,
}

impl Snapshot {
    /// Records the machine's current state for a node living in `node_root`.
    pub fn take(node_root: &Path, containerd_socket: &Path) -> Snapshot {
        Snapshot {
            owner_pid: std::process::id(),
            node_root: node_root.to_owned(),
            containerd_socket: containerd_socket.to_owned(),
            sysctls: sysctls(),
            iptables: save("iptables-save"),
            ip6tables: save("ip6tables-save"),
            netns: list_dir(&netns_dir()),
        }
    }

    /// Writes the record read back by [`recover`].
    pub fn record(&self) -> Result<(), Error> {
        let text = serde_json::to_vec_pretty(self)?;
        crate::fsutil::write_file(Path::new(RECORD), &text)
    }
}

/// What a node may leave on the machine, seen from outside: for tests that check a teardown left
/// nothing behind (compare one taken before the node started with one taken after).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footprint {
    /// iptables tables and chain names (IPv4, then IPv6), sorted.
    pub chains: Vec<String>,
    /// Network interfaces.
    pub links: Vec<String>,
    /// Network namespaces.
    pub netns: Vec<String>,
    /// Whether the node's cgroup exists (memory hierarchy).
    pub cgroup: bool,
    /// Whether a node's record exists.
    pub record: bool,
    /// The sysctls a node sets, with their values.
    pub sysctls: Vec<(String, String)>,
    /// Processes whose command line names containerd's shim or a kubelet.
    pub processes: Vec<String>,
}

impl Footprint {
    /// The machine now.
    pub fn now() -> Footprint {
        let mut chains = Vec::new();
        for (family, cmd) in [("ipv4", "iptables-save"), ("ipv6", "ip6tables-save")] {
            chains.extend(footprint_chains(family, &save(cmd)));
        }
        chains.sort();
        let mut processes = Vec::new();
        for entry in list_dir(Path::new("/proc")) {
            if entry.parse::<u32>().is_err() {
                continue;
            }
            let cmdline = fs::read(format!("/proc/{entry}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let first = cmdline.split(' ').next().unwrap_or_default();
            if first.ends_with("/kubelet")
                || first.ends_with("/kube-proxy")
                || first.contains("containerd-shim")
            {
                processes.push(cmdline.trim().to_owned());
            }
        }
        Footprint {
            chains,
            links: list_dir(Path::new("/sys/class/net")),
            netns: list_dir(&netns_dir()),
            cgroup: Path::new(CGROUPS).join("memory").join(CGROUP_ROOT).exists(),
            record: Path::new(RECORD).exists(),
            sysctls: sysctls(),
            processes,
        }
    }
}

/// The machine-wide lock a running node holds (an advisory lock on a file in `/run`, released
/// by the kernel when its holder exits, however it exits).
#[derive(Debug)]
pub struct MachineLock {
    _file: fs::File,
}

impl MachineLock {
    /// Takes the lock, or says who holds it.
    pub fn take() -> Result<MachineLock, Error> {
        fs::create_dir_all(MACHINE_DIR)
            .map_err(|e| Error::io(format!("creating {MACHINE_DIR}"), e))?;
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(LOCK)
            .map_err(|e| Error::io(format!("opening {LOCK}"), e))?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(MachineLock { _file: file }),
            Err(rustix::io::Errno::WOULDBLOCK) => {
                let owner = read_record()
                    .map(|s| format!(" (started by process {})", s.owner_pid))
                    .unwrap_or_default();
                Err(Error::NodeBusy { owner })
            }
            Err(e) => Err(Error::io(format!("locking {LOCK}"), e.into())),
        }
    }
}

/// The values of [`SYSCTLS`] that exist here.
fn sysctls() -> Vec<(String, String)> {
    SYSCTLS
        .iter()
        .filter_map(|k| {
            let v = fs::read_to_string(Path::new("/proc/sys").join(k)).ok()?;
            Some(((*k).to_owned(), v.trim().to_owned()))
        })
        .collect()
}

fn read_record() -> Option<Snapshot> {
    serde_json::from_slice(&fs::read(RECORD).ok()?).ok()
}

/// Puts the machine back as a node that died without teardown left it, when a record says one
/// did; `Ok(false)` when there was nothing to do. The caller holds the [`MachineLock`], so the
/// node of the record is not running.
pub fn recover(_lock: &MachineLock) -> Result<bool, Error> {
    let Some(snapshot) = read_record() else {
        return Ok(false);
    };
    restore(&snapshot);
    // Nobody else will: its starter is gone. Images and container layers make it large.
    if let Err(e) = fs::remove_dir_all(&snapshot.node_root)
        && e.kind() != io::ErrorKind::NotFound
    {
        warn(&format!("removing {}", snapshot.node_root.display()), e);
    }
    Ok(true)
}

/// Removes everything the node of `snapshot` added and writes the sysctls back: its processes
/// and its containers' processes, cgroups, mounts, network namespaces, bridge, iptables chains
/// and log links. Each step is best effort and the next runs regardless (a half-torn-down node
/// is worse than one step failing); what failed is printed.
pub fn restore(snapshot: &Snapshot) {
    let root = snapshot.node_root.display().to_string();
    let socket = snapshot.containerd_socket.display().to_string();
    kill_matching(|cmdline| cmdline.contains(&root) || cmdline.contains(&socket));
    release_cgroups();
    let netns_before: BTreeSet<&str> = snapshot.netns.iter().map(String::as_str).collect();
    let netns = netns_dir();
    let new_netns: Vec<String> = list_dir(&netns)
        .into_iter()
        .filter(|n| !netns_before.contains(n.as_str()))
        .collect();
    let mut roots = vec![snapshot.node_root.clone()];
    roots.extend(new_netns.iter().map(|n| netns.join(n)));
    if let Ok(info) = fs::read_to_string("/proc/self/mountinfo") {
        for point in mounts_under(&info, &roots) {
            if let Err(e) = rustix::mount::unmount(&point, rustix::mount::UnmountFlags::DETACH) {
                warn(&format!("unmounting {point}"), e.into());
            }
        }
    }
    for n in &new_netns {
        let path = netns.join(n);
        if let Err(e) = fs::remove_file(&path) {
            warn(&format!("removing {}", path.display()), e);
        }
    }
    if Path::new("/sys/class/net").join(BRIDGE).exists() {
        run_quiet("ip", &["link", "delete", BRIDGE], None);
    }
    for (save_cmd, restore_cmd, before) in [
        ("iptables-save", "iptables-restore", &snapshot.iptables),
        ("ip6tables-save", "ip6tables-restore", &snapshot.ip6tables),
    ] {
        let script = iptables_undo(before, &save(save_cmd));
        if !script.is_empty() {
            run_quiet(restore_cmd, &["--noflush"], Some(&script));
        }
    }
    for (key, value) in &snapshot.sysctls {
        let path = Path::new("/proc/sys").join(key);
        if fs::read_to_string(&path).is_ok_and(|now| now.trim() != value)
            && let Err(e) = fs::write(&path, value)
        {
            warn(&format!("restoring {}", path.display()), e);
        }
    }
    let logs = snapshot.node_root.join("");
    for link in list_dir(Path::new(CONTAINER_LOGS)) {
        let path = Path::new(CONTAINER_LOGS).join(link);
        if fs::read_link(&path).is_ok_and(|t| t.starts_with(&logs)) {
            let _ = fs::remove_file(&path);
        }
    }
    let _ = fs::remove_file(RECORD);
}

/// SIGKILLs every process whose command line `matches`, except this one.
fn kill_matching(matches: impl Fn(&str) -> bool) {
    let me = std::process::id();
    for entry in list_dir(Path::new("/proc")) {
        let Ok(pid) = entry.parse::<u32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(raw) = fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if matches(&cmdline) {
            crate::sys::kill_pid(pid);
        }
    }
}

/// Kills every process in the node's cgroups (its containers) and removes the cgroups, in every
/// controller hierarchy, deepest first.
fn release_cgroups() {
    let hierarchies: Vec<PathBuf> = list_dir(Path::new(CGROUPS))
        .into_iter()
        .map(|c| Path::new(CGROUPS).join(c).join(CGROUP_ROOT))
        .filter(|p| p.is_dir())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut alive = 0;
        for root in &hierarchies {
            for dir in walk_dirs(root) {
                for pid in fs::read_to_string(dir.join("cgroup.procs"))
                    .unwrap_or_default()
                    .lines()
                {
                    if let Ok(pid) = pid.trim().parse::<u32>() {
                        crate::sys::kill_pid(pid);
                        alive += 1;
                    }
                }
            }
        }
        if alive == 0 || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    for root in &hierarchies {
        let mut dirs = walk_dirs(root);
        dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for dir in dirs {
            if let Err(e) = fs::remove_dir(&dir) {
                warn(&format!("removing cgroup {}", dir.display()), e);
            }
        }
    }
}

/// `dir` and every folder below it (cgroup folders hold no symlinks).
fn walk_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_owned()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(entries) = fs::read_dir(&out[i]) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    out.push(entry.path());
                }
            }
        }
        i += 1;
    }
    out
}

/// Creates the node's cgroup in every v1 controller hierarchy (the kubelet expects its
/// `cgroupRoot` to exist), with `cpuset`'s CPUs and memory nodes copied from the top, without
/// which no task may join it.
pub fn create_cgroups() -> Result<(), Error> {
    for controller in list_dir(Path::new(CGROUPS)) {
        let top = Path::new(CGROUPS).join(&controller);
        if controller == "unified" || !top.join("cgroup.procs").exists() {
            continue;
        }
        let dir = top.join(CGROUP_ROOT);
        fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        if controller == "cpuset" {
            for file in ["cpuset.cpus", "cpuset.mems"] {
                let value = fs::read_to_string(top.join(file))
                    .map_err(|e| Error::io(format!("reading {}", top.join(file).display()), e))?;
                fs::write(dir.join(file), value.trim())
                    .map_err(|e| Error::io(format!("writing {}", dir.join(file).display()), e))?;
            }
        }
    }
    Ok(())
}

/// The mount points (from `/proc/self/mountinfo`) at or under any of `roots`, deepest first,
/// so each is unmounted before what it sits on.
pub fn mounts_under(mountinfo: &str, roots: &[PathBuf]) -> Vec<String> {
    let mut points: Vec<String> = mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(unescape_mount)
        .filter(|point| roots.iter().any(|r| Path::new(point).starts_with(r)))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
    points.dedup();
    points
}

/// mountinfo writes space, tab, newline and backslash as three-digit octal escapes.
fn unescape_mount(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let n = (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(n);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `iptables-restore --noflush` script that removes what a node added between `before` and
/// `after` (two `iptables-save` outputs): in each table, the rules of chains that existed before
/// which jump to a node chain (`KUBE-…`, `CNI-…`) created since, then those chains, flushed
/// first so that chains referring to each other can go. Rules and chains of anyone else — and
/// node chains that were already there — are left alone. Empty when there is nothing to undo.
pub fn iptables_undo(before: &str, after: &str) -> String {
    let before_tables = parse_save(before);
    let mut out = String::new();
    for (table, chains, rules) in parse_save(after) {
        let old_chains: BTreeSet<&str> = before_tables
            .iter()
            .find(|(t, _, _)| *t == table)
            .map(|(_, c, _)| c.iter().map(|(name, _)| name.as_str()).collect())
            .unwrap_or_default();
        let new_chains: Vec<&String> = chains
            .iter()
            .map(|(name, _)| name)
            .filter(|c| !old_chains.contains(c.as_str()))
            .filter(|c| OWN_CHAIN_PREFIXES.iter().any(|p| c.starts_with(p)))
            .collect();
        if new_chains.is_empty() {
            continue;
        }
        let is_new = |name: &str| new_chains.iter().any(|c| c.as_str() == name);
        let mut lines = Vec::new();
        for rule in &rules {
            let mut words = rule.split_whitespace();
            let (Some("-A"), Some(chain)) = (words.next(), words.next()) else {
                continue;
            };
            if is_new(chain) {
                continue;
            }
            let target = rule
                .split_whitespace()
                .collect::<Vec<_>>()
                .windows(2)
                .find(|w| w[0] == "-j" || w[0] == "-g")
                .map(|w| w[1]);
            if target.is_some_and(is_new) {
                lines.push(format!("-D{}", &rule[2..]));
            }
        }
        lines.extend(new_chains.iter().map(|c| format!("-F {c}")));
        lines.extend(new_chains.iter().map(|c| format!("-X {c}")));
        out.push_str(&format!("*{table}\n"));
        for line in lines {
            out.push_str(&line);
            out.push('\n');
        }
        out.push_str("COMMIT\n");
    }
    out
}

/// The chains of an `iptables-save` output that count in a [`Footprint`], as `<family> <table>
/// <chain>`. A built-in chain with no rules does not count: loading a table creates its
/// built-in chains, and they stay, empty and accepting, once a node's own chains are gone —
/// on a machine no one had used iptables on before, that is all a node's teardown leaves, and
/// it changes nothing.
fn footprint_chains(family: &str, save_text: &str) -> Vec<String> {
    const BUILT_IN: [&str; 5] = ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"];
    let mut out = Vec::new();
    for (table, chains, rules) in parse_save(save_text) {
        for (name, policy) in chains {
            let used = rules
                .iter()
                .any(|r| r.split_whitespace().nth(1) == Some(name.as_str()));
            if BUILT_IN.contains(&name.as_str()) && policy == "ACCEPT" && !used {
                continue;
            }
            out.push(format!("{family} {table} {name}"));
        }
    }
    out
}

/// One table of an `iptables-save` output: its name, its chains (name and policy, `-` for a
/// chain of one's own) and its rules (`-A …` lines).
type SavedTable = (String, Vec<(String, String)>, Vec<String>);

/// The tables of an `iptables-save` output.
fn parse_save(text: &str) -> Vec<SavedTable> {
    let mut tables: Vec<SavedTable> = Vec::new();
    for line in text.lines() {
        if let Some(table) = line.strip_prefix('*') {
            tables.push((table.trim().to_owned(), Vec::new(), Vec::new()));
        } else if let Some((_, chains, rules)) = tables.last_mut() {
            if let Some(chain) = line.strip_prefix(':') {
                let mut words = chain.split_whitespace();
                if let Some(name) = words.next() {
                    let policy = words.next().unwrap_or("-");
                    chains.push((name.to_owned(), policy.to_owned()));
                }
            } else if line.starts_with("-A ") {
                rules.push(line.to_owned());
            }
        }
    }
    tables
}

fn save(cmd: &str) -> String {
    Command::new(cmd)
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

fn run_quiet(cmd: &str, args: &[&str], stdin: Option<&str>) {
    use std::io::Write as _;
    let child = Command::new(cmd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => return warn(&format!("running {cmd}"), e),
    };
    if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
        let _ = input.write_all(text.as_bytes());
    }
    match child.wait_with_output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => eprintln!(
            "olm-testenv: {cmd} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => warn(&format!("running {cmd}"), e),
    }
}

fn warn(what: &str, e: io::Error) {
    eprintln!("olm-testenv: node teardown: {what}: {e}");
}

fn list_dir(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table loaded by a node and left with its built-in chains empty and accepting counts
    /// as nothing; a rule or another policy in a built-in chain, or any other chain, counts.
    #[test]
    fn empty_built_in_chains_leave_no_footprint() {
        let left = "*nat\n:PREROUTING ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n\
                    *filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:DOCKER - [0:0]\n\
                    -A FORWARD -j DOCKER\nCOMMIT\n";
        assert_eq!(
            footprint_chains("ipv4", left),
            ["ipv4 filter FORWARD", "ipv4 filter DOCKER"]
        );
        let dropping = "*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\nCOMMIT\n";
        assert_eq!(footprint_chains("ipv4", dropping), ["ipv4 filter FORWARD"]);
        assert!(footprint_chains("ipv4", "").is_empty());
    }

    const BEFORE: &str = "\
# Generated by iptables-save v1.8.9 (nf_tables)
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:DOCKER - [0:0]
-A FORWARD -j DOCKER
COMMIT
*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
COMMIT
";

    const AFTER: &str = "\
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:DOCKER - [0:0]
:KUBE-FIREWALL - [0:0]
:KUBE-SERVICES - [0:0]
-A INPUT -j KUBE-FIREWALL
-A FORWARD -j DOCKER
-A FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES
-A FORWARD -s 172.17.0.0/16 -j ACCEPT
-A KUBE-FIREWALL ! -s 127.0.0.0/8 -d 127.0.0.0/8 -j DROP
COMMIT
*nat
:PREROUTING ACCEPT [0:0]
:POSTROUTING ACCEPT [0:0]
:CNI-0a1b2c - [0:0]
:KUBE-POSTROUTING - [0:0]
-A POSTROUTING -s 10.244.0.5/32 -m comment --comment \"name: \\\"olm\\\" id: \\\"abc\\\"\" -j CNI-0a1b2c
-A POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING
-A CNI-0a1b2c -d 10.244.0.0/24 -j ACCEPT
-A KUBE-POSTROUTING -j MASQUERADE
COMMIT
*mangle
:PREROUTING ACCEPT [0:0]
:KUBE-KUBELET-CANARY - [0:0]
COMMIT
";

    #[test]
    fn undoes_exactly_the_rules_and_chains_a_node_added() {
        let script = iptables_undo(BEFORE, AFTER);
        let expected = "\
*filter
-D INPUT -j KUBE-FIREWALL
-D FORWARD -m conntrack --ctstate NEW -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES
-F KUBE-FIREWALL
-F KUBE-SERVICES
-X KUBE-FIREWALL
-X KUBE-SERVICES
COMMIT
*nat
-D POSTROUTING -s 10.244.0.5/32 -m comment --comment \"name: \\\"olm\\\" id: \\\"abc\\\"\" -j CNI-0a1b2c
-D POSTROUTING -m comment --comment \"kubernetes postrouting rules\" -j KUBE-POSTROUTING
-F CNI-0a1b2c
-F KUBE-POSTROUTING
-X CNI-0a1b2c
-X KUBE-POSTROUTING
COMMIT
*mangle
-F KUBE-KUBELET-CANARY
-X KUBE-KUBELET-CANARY
COMMIT
";
        assert_eq!(script, expected);
    }

    #[test]
    fn nothing_to_undo_when_nothing_was_added_or_only_others_added() {
        assert_eq!(iptables_undo(BEFORE, BEFORE), "");
        let docker_more =
            BEFORE.replace(":DOCKER - [0:0]", ":DOCKER - [0:0]\n:DOCKER-USER - [0:0]");
        assert_eq!(iptables_undo(BEFORE, &docker_more), "");
        // Node chains that were there before the node started are someone else's.
        assert_eq!(iptables_undo(AFTER, AFTER), "");
    }

    #[test]
    fn mounts_under_the_node_are_released_deepest_first() {
        let info = "\
22 1 254:0 / / rw,relatime - ext4 /dev/vda rw
90 22 0:50 / /tmp/w/node/containerd/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs rw - overlay overlay rw
91 22 0:51 / /tmp/w/node/kubelet/pods/uid/volumes/kubernetes.io~projected/kube-api-access rw - tmpfs tmpfs rw
92 22 0:4 / /var/run/netns/cni-1234 rw - nsfs nsfs rw
93 22 0:4 / /var/run/netns/other rw - nsfs nsfs rw
94 22 0:52 / /tmp/w/node rw - tmpfs tmpfs rw
95 22 0:53 / /tmp/w/node-other rw - tmpfs tmpfs rw
96 22 0:54 / /tmp/w/node/with\\040space rw - tmpfs tmpfs rw
";
        let roots = [
            PathBuf::from("/tmp/w/node"),
            PathBuf::from("/var/run/netns/cni-1234"),
        ];
        let points = mounts_under(info, &roots);
        assert_eq!(
            points,
            [
                "/tmp/w/node/containerd/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs",
                "/tmp/w/node/kubelet/pods/uid/volumes/kubernetes.io~projected/kube-api-access",
                "/var/run/netns/cni-1234",
                "/tmp/w/node/with space",
                "/tmp/w/node",
            ]
        );
    }

    #[test]
    fn a_snapshot_survives_its_record() {
        let snapshot = Snapshot {
            owner_pid: 42,
            node_root: PathBuf::from("/tmp/w/node"),
            containerd_socket: PathBuf::from("/tmp/w/node/containerd/containerd.sock"),
            sysctls: vec![("net/ipv4/ip_forward".to_owned(), "0".to_owned())],
            iptables: BEFORE.to_owned(),
            ip6tables: String::new(),
            netns: vec!["other".to_owned()],
        };
        let text = serde_json::to_string(&snapshot).unwrap();
        assert_eq!(serde_json::from_str::<Snapshot>(&text).unwrap(), snapshot);
    }
}
