//! `olm catalog serve` against `opm serve` on the same catalog, in one run: time from start to
//! the first `SERVING` health answer (without a cache, and restarting on a built cache),
//! resident memory once ready, and `ListBundles` throughput over gRPC.
//!
//! ```sh
//! cargo build --release -p olm
//! OPM=$(tools/oracles/build.sh)/opm cargo bench -p olm-registry --bench serve
//! ```
//!
//! Environment: `OLM` (default `target/release/olm`), `OPM` (opm is left out without it),
//! `CATALOG` (default the data set's community catalog), `RUNS` (`ListBundles` calls, 20).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use olm_registry::api;
use olm_registry::api::registry_client::RegistryClient;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

async fn ready(port: u16, deadline: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < deadline {
        if let Ok(ch) = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
            .unwrap()
            .connect()
            .await
        {
            let mut health = tonic_health::pb::health_client::HealthClient::new(ch);
            if health
                .check(tonic_health::pb::HealthCheckRequest::default())
                .await
                .is_ok()
            {
                return Some(started.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(tool: &str, bin: &Path, catalog: &Path, cache: Option<&Path>) -> Server {
    let port = free_port();
    let mut cmd = Command::new(bin);
    if tool == "olm" {
        cmd.args(["catalog", "serve"]);
    } else {
        cmd.arg("serve").args(["--pprof-addr", "127.0.0.1:0"]);
    }
    cmd.arg(catalog)
        .args(["-p", &port.to_string(), "-t", "/dev/null"]);
    if let Some(c) = cache {
        cmd.arg("--cache-dir").arg(c);
    }
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Server { child, port }
}

fn build_cache(tool: &str, bin: &Path, catalog: &Path, cache: &Path) {
    let mut cmd = Command::new(bin);
    if tool == "olm" {
        cmd.args(["catalog", "serve"]);
    } else {
        cmd.arg("serve");
    }
    let ok = cmd
        .arg(catalog)
        .arg("--cache-dir")
        .arg(cache)
        .arg("--cache-only")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "{tool}: building the cache failed");
}

async fn list_bundles(port: u16, runs: usize) -> (f64, usize, usize) {
    let mut client = RegistryClient::connect(format!("http://127.0.0.1:{port}"))
        .await
        .unwrap()
        .max_decoding_message_size(64 << 20);
    let started = Instant::now();
    let (mut count, mut bytes) = (0, 0);
    for _ in 0..runs {
        let mut s = client
            .list_bundles(api::ListBundlesRequest {})
            .await
            .unwrap()
            .into_inner();
        while let Some(b) = s.message().await.unwrap() {
            count += 1;
            bytes += prost::Message::encoded_len(&b);
        }
    }
    (started.elapsed().as_secs_f64(), count, bytes)
}

#[tokio::main]
async fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let olm =
        std::env::var_os("OLM").map_or_else(|| root.join("target/release/olm"), PathBuf::from);
    let catalog = std::env::var_os("CATALOG").map_or_else(
        || root.join("../shared/data/catalogs/community-v4.21"),
        PathBuf::from,
    );
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let mut tools = vec![("olm", olm)];
    if let Some(opm) = std::env::var_os("OPM") {
        tools.push(("opm", PathBuf::from(opm)));
    }
    println!(
        "catalog {}, {runs} ListBundles calls each",
        catalog.display()
    );
    println!(
        "{:<4} {:>12} {:>12} {:>10} {:>14} {:>12}",
        "tool", "ready cold", "ready cached", "RSS MiB", "bundles/s", "MB/s"
    );
    for (tool, bin) in tools {
        let scratch = tempfile::tempdir().unwrap();
        let cold = {
            // Without a cache opm builds one in a temporary folder; olm builds in memory.
            let server = start(tool, &bin, &catalog, None);
            ready(server.port, Duration::from_secs(300)).await
        };
        let cache = scratch.path().join("cache");
        build_cache(tool, &bin, &catalog, &cache);
        let server = start(tool, &bin, &catalog, Some(&cache));
        let cached = ready(server.port, Duration::from_secs(300)).await;
        let rss = rss_mib(server.child.id());
        let (secs, count, bytes) = list_bundles(server.port, runs).await;
        println!(
            "{tool:<4} {:>10.0}ms {:>10.0}ms {rss:>10.1} {:>14.0} {:>12.1}",
            cold.map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0),
            cached.map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0),
            count as f64 / secs,
            bytes as f64 / secs / 1e6,
        );
    }
}
