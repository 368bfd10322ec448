//! The few operating-system calls the control plane and the registry share: loopback ports and
//! signals.

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

#[cfg(test)]
mod tests {
    use super::*;

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
