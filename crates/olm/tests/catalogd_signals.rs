//! `olm catalogd` stops as Kubernetes stops a pod: on SIGTERM it refuses new connections,
//! finishes the response it is sending, stops the controller and exits 0, promptly.
//!
//! No control plane is needed: the kubeconfig points at a port where nothing listens, so the
//! controller only retries its watch, and the content is put into the cache directory
//! beforehand, as a previous run would have left it.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;

const STOP_TIMEOUT: Duration = Duration::from_secs(10);

fn free_addr() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr")
}

fn kubeconfig(path: &Path) {
    std::fs::write(
        path,
        "apiVersion: v1\nkind: Config\n\
         clusters: [{name: c, cluster: {server: \"http://127.0.0.1:1\"}}]\n\
         users: [{name: u, user: {}}]\n\
         contexts: [{name: x, context: {cluster: c, user: u}}]\n\
         current-context: x\n",
    )
    .expect("write kubeconfig");
}

/// Waits until `GET path` on `addr` answers at all.
fn wait_listening(addr: SocketAddr, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(mut s) = TcpStream::connect(addr) {
            let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
            if out.starts_with("HTTP/1.1 200") {
                return;
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("olm catalogd exited early: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "olm catalogd did not start listening"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Reads one HTTP response head; returns the Content-Length and whatever body bytes came with it.
fn read_head(stream: &mut TcpStream) -> (usize, Vec<u8>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = stream.read(&mut chunk).expect("read");
        assert!(n > 0, "connection closed before the response head");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            assert!(head.starts_with("http/1.1 200"), "{head}");
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .and_then(|v| v.trim().parse().ok())
                .expect("content-length");
            return (length, buf[end + 4..].to_vec());
        }
    }
}

#[test]
fn sigterm_finishes_the_response_in_flight_and_exits_zero() {
    let tmp = tempfile::tempdir().expect("tmp");
    let community = Path::new(common::DATA).join("catalogs/community-v4.21");
    let storage =
        olm_catalogd::storage::Storage::open(tmp.path().join("cache/catalogs")).expect("open");
    let entry = storage
        .store(
            "community",
            "example.com/catalog@sha256:aa",
            "sha256:aa",
            jiff::Timestamp::now(),
            &community,
        )
        .expect("store");
    let want = std::fs::read(&entry.path).expect("stored content");
    drop(storage);
    kubeconfig(&tmp.path().join("kubeconfig"));

    let (catalogs, probes) = (free_addr(), free_addr());
    let mut child = Command::new(env!("CARGO_BIN_EXE_olm"))
        .arg("catalogd")
        .arg("--cache-dir")
        .arg(tmp.path().join("cache"))
        .arg("--kubeconfig")
        .arg(tmp.path().join("kubeconfig"))
        .args(["--catalogs-server-addr", &catalogs.to_string()])
        .args(["--health-probe-bind-address", &probes.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("olm catalogd starts");
    wait_listening(probes, &mut child);

    // A response larger than the socket buffers, so the server is still writing it when the
    // signal comes.
    let mut stream = TcpStream::connect(catalogs).expect("connect");
    stream
        .write_all(b"GET /catalogs/community/api/v1/all HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("request");
    let (length, mut body) = read_head(&mut stream);
    assert_eq!(length, want.len());
    assert!(
        body.len() < length,
        "the whole response arrived before the signal"
    );

    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .expect("pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM sent");
    let signalled = Instant::now();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        TcpStream::connect(catalogs).is_err(),
        "new connections are refused once stopping"
    );

    stream
        .set_read_timeout(Some(STOP_TIMEOUT))
        .expect("timeout");
    let mut rest = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    while body.len() + rest.len() < length {
        let n = stream.read(&mut chunk).expect("the response continues");
        assert!(n > 0, "the response was cut short");
        rest.extend_from_slice(&chunk[..n]);
    }
    body.extend_from_slice(&rest);
    assert!(
        body == want,
        "the response in flight is complete and intact"
    );
    drop(stream);

    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if signalled.elapsed() > STOP_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            let mut stderr = String::new();
            if let Some(mut err) = child.stderr.take() {
                let _ = err.read_to_string(&mut stderr);
            }
            panic!("olm catalogd still running {STOP_TIMEOUT:?} after SIGTERM; stderr:\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = err.read_to_string(&mut stderr);
    }
    assert_eq!(status.code(), Some(0), "exit status; stderr:\n{stderr}");
    assert!(stderr.contains("SIGTERM"), "the stop is logged:\n{stderr}");
}
