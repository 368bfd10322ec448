//! A catalog server on loopback and raw HTTP/1.1 clients for the tests of its limits.

// Each test file uses a part of this.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use olm_catalogd::metrics::Metrics;
use olm_catalogd::server::{AppState, router};
use olm_catalogd::storage::Storage;
use olm_runtime::serve::Limits;
use olm_runtime::serve::serve_with;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub struct Server {
    _dir: tempfile::TempDir,
    pub addr: SocketAddr,
    /// Length of `/api/v1/all`.
    pub size: u64,
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

/// Serves a catalog of about 10 MB, much more than loopback socket buffers take in, with these
/// limits.
pub async fn server(limits: Limits) -> Server {
    let dir = tempfile::tempdir().expect("tmp");
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).expect("mkdir");
    let cat = olm_synthetic::catalog(&olm_synthetic::Spec {
        packages: 40,
        bundles_per_package: 50,
        description_bytes: 2000,
    });
    let mut jsonl = Vec::new();
    olm_catalog::write::write_jsonl(&cat, &mut jsonl).expect("jsonl");
    // Noise keeps the gzip answer larger than socket buffers too.
    jsonl.extend_from_slice(olm_synthetic::noise_lines(1000, 3000).as_bytes());
    std::fs::write(src.join("catalog.json"), jsonl).expect("write");
    let storage = Storage::open(dir.path().join("store")).expect("open");
    let entry = storage
        .store(
            "big",
            "r@sha256:00",
            "sha256:00",
            jiff::Timestamp::now(),
            &src,
        )
        .expect("store");
    let app = router(AppState {
        storage: Arc::new(storage),
        metrics: Arc::new(Metrics::default()),
        metas: true,
    });
    let listener = olm_runtime::serve::listen(([127, 0, 0, 1], 0).into()).expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let task = tokio::spawn(serve_with(listener, app, None, limits, stopped));
    Server {
        _dir: dir,
        addr,
        size: entry.size,
        stop,
        task,
    }
}

impl Server {
    pub async fn shut(self) {
        self.stop.send(true).expect("stop");
        self.task.await.expect("join").expect("serve");
    }
}

pub fn request(gzip: bool) -> Vec<u8> {
    let encoding = if gzip {
        "accept-encoding: gzip\r\n"
    } else {
        ""
    };
    format!("GET /catalogs/big/api/v1/all HTTP/1.1\r\nhost: localhost\r\n{encoding}\r\n")
        .into_bytes()
}

/// Reads a whole response (head and body) off a connection that closes after it.
pub async fn read_all(addr: SocketAddr, gzip: bool) -> usize {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let mut req = request(gzip);
    req.truncate(req.len() - 2);
    req.extend_from_slice(b"connection: close\r\n\r\n");
    s.write_all(&req).await.expect("write");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await.expect("read");
    buf.len()
}

/// Opens a connection with a small receive buffer, so the kernel takes in little of the
/// response, and sends the request; the answer is never read.
pub async fn non_reading(addr: SocketAddr, gzip: bool) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("rcvbuf");
    let mut s = socket.connect(addr).await.expect("connect");
    s.write_all(&request(gzip)).await.expect("write");
    s
}

/// Reads a response head off `stream`; returns it and what came of the body with it.
/// Asks for `/api/v1/all` on `stream` and reads the whole answer, which must be a 200 of
/// `size` bytes; the connection stays open for the next request.
pub async fn get_in_full(stream: &mut TcpStream, size: u64) {
    stream.write_all(&request(false)).await.expect("write");
    let (head, body) = read_head(stream).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    read_body(stream, body.len(), size as usize).await;
}

pub async fn read_head(stream: &mut TcpStream) -> (String, Vec<u8>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "closed before a response head");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let body = buf.split_off(end + 4);
            return (String::from_utf8_lossy(&buf).into_owned(), body);
        }
    }
}

/// Reads what is left of a response of `length` body bytes of which `have` came with the head.
pub async fn read_body(stream: &mut TcpStream, mut have: usize, length: usize) {
    let mut chunk = vec![0u8; 64 * 1024];
    while have < length {
        let n = stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "closed after {have} of {length} bytes");
        have += n;
    }
}
