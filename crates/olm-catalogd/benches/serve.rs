//! Figures for the catalog server over real loopback TCP:
//!
//! - `/api/v1/all` throughput (uncompressed) on a ~100 MB synthetic catalog;
//! - `/api/v1/metas?package=…` latency (p50/p99) on a synthetic 50,000-bundle catalog;
//! - resident memory while serving four ~20 MB catalogs.
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
    tokio::spawn(olm_catalogd::run::serve(listener, app, None, stopped));
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
    let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
        .env(CHILD_ENV, &served)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn server");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("address");
    let addr: SocketAddr = line.trim().parse().expect("addr");
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
