//! Figures for the catalog server over real loopback TCP:
//!
//! - `/api/v1/all` throughput (uncompressed) on a ~100 MB synthetic catalog;
//! - `/api/v1/metas?package=…` latency (p50/p99) on a synthetic 50,000-bundle catalog;
//! - resident memory while serving four ~20 MB catalogs;
//! - resident memory while 1,000 clients that never read hold `/api/v1/all` responses open
//!   (and 200 that asked for gzip), and after they closed.
//!
//! Run with `cargo bench -p olm-catalogd --bench serve`. Not a divan benchmark: these need a
//! server, a client and wall-clock percentiles rather than per-iteration timings.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use olm_catalogd::metrics::Metrics;
use olm_catalogd::server::{AppState, router};
use olm_catalogd::storage::Storage;

/// A synthetic catalog laid out as real ones are: one directory per package.
fn synthetic(dir: &Path, packages: usize, bundles: usize, description_bytes: usize) {
    let cat = olm_synthetic::catalog(&olm_synthetic::Spec {
        packages,
        bundles_per_package: bundles,
        description_bytes,
    });
    let mut by_package: std::collections::BTreeMap<String, olm_catalog::Catalog> =
        Default::default();
    for blob in cat.blobs {
        by_package
            .entry(blob.package().to_string())
            .or_default()
            .blobs
            .push(blob);
    }
    for (package, cat) in by_package {
        let pkg_dir = dir.join(package);
        std::fs::create_dir_all(&pkg_dir).expect("mkdir");
        let mut out = Vec::new();
        olm_catalog::write::write_jsonl(&cat, &mut out).expect("jsonl");
        std::fs::write(pkg_dir.join("catalog.json"), out).expect("write");
    }
}

async fn serve(storage: Arc<Storage>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = router(AppState {
        storage,
        metrics: Arc::new(Metrics::default()),
        metas: true,
    });
    let (stop, stopped) = tokio::sync::watch::channel(false);
    // Never stopped: the server lives as long as the benchmark.
    std::mem::forget(stop);
    tokio::spawn(olm_runtime::serve::serve(listener, app, None, stopped));
    addr
}

type Sender = hyper::client::conn::http1::SendRequest<http_body_util::Empty<axum::body::Bytes>>;

async fn connect(addr: SocketAddr) -> Sender {
    let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("handshake");
    tokio::spawn(conn);
    sender
}

/// GETs `path` on a kept-alive connection and returns the body length (frames are counted, not
/// copied, so the client costs as little as possible).
async fn get(sender: &mut Sender, addr: SocketAddr, path: &str) -> usize {
    sender.ready().await.expect("ready");
    let req = http::Request::get(path)
        .header("host", addr.to_string())
        .body(http_body_util::Empty::new())
        .expect("request");
    let resp = sender.send_request(req).await.expect("send");
    assert_eq!(resp.status(), 200, "{path}");
    let mut body = resp.into_body();
    let mut n = 0;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.expect("frame").into_data() {
            n += data.len();
        }
    }
    n
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    match std::env::var_os(CHILD_ENV) {
        Some(dir) => runtime.block_on(child(Path::new(&dir))),
        None => runtime.block_on(run()),
    }
}

async fn run() {
    let tmp = tempfile::tempdir().expect("tmp");
    let storage = Arc::new(Storage::open(tmp.path().join("store")).expect("open"));
    let now = jiff::Timestamp::now();

    // Throughput: one large catalog, whole-file GETs.
    let big = tmp.path().join("big");
    synthetic(&big, 400, 100, 2000);
    let entry = storage
        .store("big", "r@sha256:01", "sha256:01", now, &big)
        .expect("store big");
    let addr = serve(storage.clone()).await;
    let mut sender = connect(addr).await;
    get(&mut sender, addr, "/catalogs/big/api/v1/all").await;
    let rounds = 10;
    let start = Instant::now();
    let mut bytes = 0;
    for _ in 0..rounds {
        bytes += get(&mut sender, addr, "/catalogs/big/api/v1/all").await;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "all: {rounds} x {:.1} MB in {secs:.2} s = {:.2} GB/s",
        entry.size as f64 / 1e6,
        bytes as f64 / secs / 1e9
    );

    // Latency: one package out of a 50,000-bundle catalog.
    let many = tmp.path().join("many");
    synthetic(&many, 1000, 50, 200);
    let t = Instant::now();
    let entry = storage
        .store("many", "r@sha256:02", "sha256:02", now, &many)
        .expect("store many");
    println!(
        "store: 50,000 bundles ({:.1} MB) loaded, validated and indexed in {:.2} s",
        entry.size as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let mut sender = connect(addr).await;
    let mut times = Vec::new();
    for i in 0..3000 {
        let path = format!(
            "/catalogs/many/api/v1/metas?package=synthetic-operator-{:04}",
            i % 1000
        );
        let t = Instant::now();
        let n = get(&mut sender, addr, &path).await;
        times.push(t.elapsed());
        assert!(n > 0);
    }
    times.sort();
    println!(
        "metas?package=: {} requests, p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        times.len(),
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.99).as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3
    );
    storage.delete("big").expect("delete");
    storage.delete("many").expect("delete");

    // Memory: four ~20 MB catalogs served by a fresh process that loads them from disk, as after
    // a restart; its RSS is read while it answers requests.
    let served = tmp.path().join("served");
    let four = Storage::open(&served).expect("open");
    for i in 0..4 {
        let dir = tmp.path().join(format!("c{i}"));
        synthetic(&dir, 100, 80, 2000);
        four.store(&format!("c{i}"), "r@sha256:03", "sha256:03", now, &dir)
            .expect("store");
    }
    let (mut child, addr) = spawn_server(&served);
    let mut sender = connect(addr).await;
    let mut total = 0;
    let mut peak = 0;
    for round in 0..3 {
        for i in 0..4 {
            total += get(&mut sender, addr, &format!("/catalogs/c{i}/api/v1/all")).await;
            get(
                &mut sender,
                addr,
                &format!("/catalogs/c{i}/api/v1/metas?schema=olm.package"),
            )
            .await;
            peak = peak.max(rss_kib_of(child.id()));
        }
        let _ = round;
    }
    let _ = child.kill();
    let _ = child.wait();
    println!(
        "memory: a server process serving 4 catalogs ({:.1} MB each): peak RSS {:.1} MB over {:.0} MB sent",
        total as f64 / 12.0 / 1e6,
        peak as f64 / 1024.0,
        total as f64 / 1e6
    );

    // Slow readers: a fresh server process, clients that send a request and never read.
    let noise = tmp.path().join("noise");
    noise_catalog(&noise, 6000, 3000);
    four.store("noise", "r@sha256:04", "sha256:04", now, &noise)
        .expect("store noise");
    olm_testenv::slow_clients::raise_open_files(2 * SLOW_READERS as u64 + 256).expect("open files");
    slow_readers(&served, "/catalogs/c0/api/v1/all", false, SLOW_READERS).await;
    slow_readers(
        &served,
        "/catalogs/noise/api/v1/all",
        true,
        SLOW_GZIP_READERS,
    )
    .await;
}

/// A server process (this benchmark re-run as [`CHILD_ENV`]) serving `served`, and the address
/// it printed.
fn spawn_server(served: &Path) -> (std::process::Child, SocketAddr) {
    let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
        .env(CHILD_ENV, served)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn server");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("address");
    (child, line.trim().parse().expect("addr"))
}

/// Clients that never read, all at once.
const SLOW_READERS: usize = 1000;

/// Clients that never read a gzip answer: each makes the server compress until the socket
/// buffers are full, so fewer keep the run short.
const SLOW_GZIP_READERS: usize = 200;

/// Lines of hex noise: about half of it survives gzip, so compressed answers outgrow socket
/// buffers too.
fn noise_catalog(dir: &Path, blobs: usize, bytes: usize) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let out = olm_synthetic::noise_lines(blobs, bytes);
    std::fs::write(dir.join("catalog.json"), out).expect("write");
}

/// Clients that never read, per source address: within a client's share of connections
/// ([`olm_runtime::serve::MAX_CONNECTIONS_PER_CLIENT`]), so that every one is served.
const READERS_PER_ADDRESS: usize = 100;

/// Opens a connection from `127.0.0.2` and up ([`READERS_PER_ADDRESS`] each, the `n`th of them),
/// with a small receive buffer (so the kernel takes in little of the answer), and sends a request
/// whose answer is never read.
async fn non_reading(addr: SocketAddr, path: &str, gzip: bool, n: usize) -> tokio::net::TcpStream {
    use tokio::io::AsyncWriteExt;
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    let source = u8::try_from(2 + n / READERS_PER_ADDRESS).expect("few enough clients");
    socket
        .bind(SocketAddr::new(
            olm_testenv::slow_clients::loopback(source),
            0,
        ))
        .expect("bind");
    socket.set_recv_buffer_size(4096).expect("rcvbuf");
    let mut s = socket.connect(addr).await.expect("connect");
    let encoding = if gzip {
        "accept-encoding: gzip\r\n"
    } else {
        ""
    };
    s.write_all(format!("GET {path} HTTP/1.1\r\nhost: localhost\r\n{encoding}\r\n").as_bytes())
        .await
        .expect("write");
    s
}

/// The highest RSS of `pid` seen over `period`, in KiB.
async fn peak_rss_over(pid: u32, period: Duration) -> u64 {
    let end = Instant::now() + period;
    let mut peak = rss_kib_of(pid);
    while Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(50)).await;
        peak = peak.max(rss_kib_of(pid));
    }
    peak
}

/// A fresh server process and `clients` that GET `path` and never read; prints its RSS idle,
/// with them, and once they closed.
async fn slow_readers(served: &Path, path: &str, gzip: bool, clients: usize) {
    let (mut child, addr) = spawn_server(served);
    let pid = child.id();
    let mut sender = connect(addr).await;
    let size = get(&mut sender, addr, path).await;
    drop(sender);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle = rss_kib_of(pid);

    let mut open = Vec::with_capacity(clients);
    for n in 0..clients {
        open.push(non_reading(addr, path, gzip, n).await);
    }
    let loaded = peak_rss_over(pid, Duration::from_secs(3)).await;
    drop(open);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let closed = rss_kib_of(pid);
    let _ = child.kill();
    let _ = child.wait();
    let mb = |kib: u64| kib as f64 / 1024.0;
    println!(
        "slow readers: {clients} clients that never read {path} ({:.0} MB{}): server RSS idle \
         {:.1} MB, with them {:.1} MB ({:.1} KB each), after they closed {:.1} MB",
        size as f64 / 1e6,
        if gzip { ", asked gzipped" } else { "" },
        mb(idle),
        mb(loaded),
        loaded.saturating_sub(idle) as f64 * 1.024 / clients as f64,
        mb(closed),
    );
}

const CHILD_ENV: &str = "OLM_CATALOGD_BENCH_SERVE";

/// The server half of the memory figure: serve a storage directory until killed.
async fn child(dir: &Path) {
    let storage = Arc::new(Storage::open(dir).expect("open"));
    let addr = serve(storage).await;
    println!("{addr}");
    std::future::pending::<()>().await;
}

fn rss_kib_of(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}
