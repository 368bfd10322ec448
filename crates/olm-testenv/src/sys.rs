//! The few operating-system calls the control plane and the registry share: loopback ports and
//! signals.

use std::io;
use std::net::TcpListener;

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

/// Sends `signal` to `pid` (a negative `pid` is a process group). A process that is already gone
/// (`ESRCH`) is not an error: stopping it was the point.
pub(crate) fn send_signal(pid: libc::pid_t, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: kill(2) takes two integers and touches no memory of ours.
    if unsafe { libc::kill(pid, signal) } == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::ESRCH) {
        return Ok(());
    }
    Err(err)
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
        let pid = libc::pid_t::try_from(child.id()).expect("pid");
        child.wait().expect("wait");
        // Reaped, so the pid no longer names a process of ours (it is not reused this fast).
        send_signal(pid, libc::SIGTERM).expect("ESRCH is success");
        let me = libc::pid_t::try_from(std::process::id()).expect("pid");
        assert!(
            send_signal(me, -1).is_err(),
            "an invalid signal is an error"
        );
    }
}
