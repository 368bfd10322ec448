//! Clients that ask for a whole catalog and never read it cost the server a bounded amount of
//! memory each, and what they cost is reused once they are gone.
//!
//! Everything runs over loopback TCP in this process, and memory is this process's resident set
//! (`VmRSS`): the clients are bare sockets that hold almost nothing, so what grows is the
//! server's. The test is alone in its file so that no other test shares the process.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use olm_runtime::serve::Limits;
use support::{non_reading, read_all, server};
use tokio::net::TcpStream;

/// Non-reading clients opened at once.
const CLIENTS: usize = 1000;

/// Resident set of this process, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS");
    kib * 1024
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// The highest resident set seen while polling for `period`.
async fn peak_over(period: Duration) -> u64 {
    let end = Instant::now() + period;
    let mut peak = rss();
    while Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(50)).await;
        peak = peak.max(rss());
    }
    peak
}

/// What one connection whose client is not reading may cost beyond its two file chunks:
/// hyper's read buffer and connection state, the request and response heads, the task.
const CONNECTION_OVERHEAD: u64 = 32 * 1024;

/// Opens `CLIENTS` non-reading connections and returns the highest resident set seen while the
/// server answers them; they are closed when the returned sockets are dropped.
async fn wave(addr: SocketAddr) -> (Vec<TcpStream>, u64) {
    let mut clients = Vec::with_capacity(CLIENTS);
    for _ in 0..CLIENTS {
        clients.push(non_reading(addr, false).await);
    }
    let peak = peak_over(Duration::from_secs(3)).await;
    (clients, peak)
}

/// A non-reading client costs at most two file chunks and its connection's buffers, however
/// large the catalog, and that memory serves the next clients once it is freed. Before chunks
/// were bounded (a MiB read at a time, through a second MiB buffer) each one cost about 2 MB:
/// 1,000 of them took this test from 69 MB to 2.2 GB, 1.2 GB of it still held after they
/// closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_stays_flat_with_many_clients_that_never_read() {
    olm_testenv::slow_clients::raise_open_files(2 * CLIENTS as u64 + 256).unwrap();
    // All from one address: what is measured is what each connection costs, not shares.
    let server = server(Limits {
        max_connections_per_client: CLIENTS,
        ..Limits::default()
    })
    .await;
    // Warm up: whatever the runtime, the allocator and the server allocate once belongs to the
    // idle figure.
    for gzip in [false, true, false, true] {
        assert!(read_all(server.addr, gzip).await > 1_000_000);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = rss();

    let (clients, loaded) = wave(server.addr).await;
    drop(clients);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = rss();
    // Memory the allocator kept from the first wave serves the second: it does not add up.
    let (clients, again) = wave(server.addr).await;
    drop(clients);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after_again = rss();
    let per_client = loaded.saturating_sub(idle) / CLIENTS as u64;
    println!(
        "catalog {:.1} MB; RSS idle {:.1} MB; {CLIENTS} non-reading clients {:.1} MB \
         ({:.1} KB each, {:.2} x idle); closed {:.1} MB; {CLIENTS} more {:.1} MB; closed {:.1} MB",
        mb(server.size),
        mb(idle),
        mb(loaded),
        per_client as f64 / 1e3,
        loaded as f64 / idle as f64,
        mb(after),
        mb(again),
        mb(after_again),
    );
    let budget = 2 * olm_catalogd::server::CHUNK_SIZE as u64 + CONNECTION_OVERHEAD;
    assert!(
        per_client <= budget,
        "a non-reading client costs {per_client} bytes, more than two chunks and a connection ({budget})"
    );
    assert!(
        after <= loaded + 1_000_000,
        "memory grew after the clients closed"
    );
    assert!(
        again <= loaded + (loaded - idle) / 4,
        "a second wave grew memory from {loaded} to {again} bytes: the first one's was not freed"
    );
    assert!(after_again <= again + 1_000_000);
    server.shut().await;
}
