//! The few operating-system calls the control plane and the registry share: loopback ports,
//! the machine's own address, and signals.

use std::io;
use std::net::TcpListener;

use rustix::io::Errno;
pub(crate) use rustix::process::Signal;
use rustix::process::{Pid, kill_process, kill_process_group};

/// `N` distinct ports the kernel just handed out on 127.0.0.1, found by binding them all at
/// once and then releasing them. Another process may take one before our component binds it;
/// callers detect that from the component's log and retry.
pub(crate) fn free_ports<const N: usize>() -> io::Result<[u16; N]> {
    let mut listeners = Vec::with_capacity(N);
    for _ in 0..N {
        listeners.push(TcpListener::bind(("127.0.0.1", 0))?);
    }
    let mut ports = [0u16; N];
    for (port, listener) in ports.iter_mut().zip(&listeners) {
        *port = listener.local_addr()?.port();
    }
    Ok(ports)
}

/// The machine's first IPv4 address that is not loopback, from the kernel's local routing
/// table (`/proc/net/fib_trie`, where each `/32 host LOCAL` entry follows its address); `None`
/// on a machine with loopback only.
///
/// The gateway address a real node's CNI bridge holds (in its pod range) is not the machine's:
/// it goes with the node.
pub(crate) fn host_address() -> Option<std::net::Ipv4Addr> {
    let trie = std::fs::read_to_string("/proc/net/fib_trie").ok()?;
    machine_address(&local_addresses(&trie))
}

/// The first of `addresses` that is neither loopback nor in a real node's pod range.
fn machine_address(addresses: &[std::net::Ipv4Addr]) -> Option<std::net::Ipv4Addr> {
    addresses
        .iter()
        .copied()
        .find(|a| !a.is_loopback() && !crate::node::in_pod_range(*a))
}

/// The addresses `/proc/net/fib_trie` marks as this host's, in order.
fn local_addresses(trie: &str) -> Vec<std::net::Ipv4Addr> {
    let mut last = None;
    let mut out = Vec::new();
    for line in trie.lines() {
        let line = line.trim_start_matches([' ', '|', '+', '-']);
        if let Ok(a) = line.trim().parse::<std::net::Ipv4Addr>() {
            last = Some(a);
        } else if line.trim() == "/32 host LOCAL"
            && let Some(a) = last
            && !out.contains(&a)
        {
            out.push(a);
        }
    }
    out
}

/// Who a signal is for: one process, or every process of a process group (the group a component
/// leads, so that its own children stop with it).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target {
    /// The process with this id.
    Process(u32),
    /// The process group with this id.
    Group(u32),
}

/// Sends `signal` to `target`. A process that is already gone (`ESRCH`) is not an error: stopping
/// it was the point. An id that names no process at all (0, or beyond `pid_t`) is `InvalidInput`,
/// because kill(2) would read it as "every process of ours".
pub(crate) fn send_signal(target: Target, signal: Signal) -> io::Result<()> {
    let (Target::Process(id) | Target::Group(id)) = target;
    let pid = i32::try_from(id)
        .ok()
        .and_then(Pid::from_raw)
        .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
    let sent = match target {
        Target::Process(_) => kill_process(pid, signal),
        Target::Group(_) => kill_process_group(pid, signal),
    };
    match sent {
        Ok(()) | Err(Errno::SRCH) => Ok(()),
        Err(errno) => Err(errno.into()),
    }
}

/// SIGKILLs one process, ignoring one that is already gone: for tearing down what a node left.
pub(crate) fn kill_pid(pid: u32) {
    let _ = send_signal(Target::Process(pid), Signal::KILL);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trie as Linux prints it: local addresses are those followed by `/32 host LOCAL`.
    #[test]
    fn local_addresses_from_the_trie() {
        let trie = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n     +-- 127.0.0.0/8 2 0 2\n        |-- 127.0.0.1\n           /32 host LOCAL\n     |-- 192.0.2.0\n        /24 link UNICAST\n     |-- 192.0.2.2\n        /32 host LOCAL\nLocal:\n     |-- 192.0.2.2\n        /32 host LOCAL\n";
        assert_eq!(
            local_addresses(trie),
            [
                "127.0.0.1".parse::<std::net::Ipv4Addr>().unwrap(),
                "192.0.2.2".parse().unwrap()
            ]
        );
    }

    #[test]
    fn a_node_bridge_is_not_the_machine() {
        let local: Vec<std::net::Ipv4Addr> = ["127.0.0.1", "10.244.0.1", "192.0.2.2"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        assert_eq!(machine_address(&local), Some("192.0.2.2".parse().unwrap()));
        assert_eq!(machine_address(&local[..2]), None);
    }

    #[test]
    fn ports_are_distinct() {
        let mut ports = free_ports::<5>().expect("ports");
        ports.sort_unstable();
        assert!(ports.windows(2).all(|w| w[0] != w[1]), "{ports:?}");
        assert!(ports.iter().all(|p| *p != 0));
    }

    #[test]
    fn signalling_a_gone_process_is_fine() {
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        child.wait().expect("wait");
        // Reaped, so the pid no longer names a process of ours (it is not reused this fast).
        send_signal(Target::Process(pid), Signal::TERM).expect("ESRCH is success");
        send_signal(Target::Group(pid), Signal::TERM).expect("ESRCH is success");
    }

    #[test]
    fn an_id_that_names_no_process_is_refused() {
        for target in [
            Target::Process(0),
            Target::Group(0),
            Target::Process(u32::MAX),
        ] {
            let err = send_signal(target, Signal::TERM).expect_err("refused");
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{target:?}");
        }
    }
}
