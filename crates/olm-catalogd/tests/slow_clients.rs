//! Clients that hold connections without ever completing a request (slowloris) do not keep the
//! catalog server or its probes from answering: one client gets no more than its share of
//! connections, and when many clients fill the listener, connections still sending their request
//! head are closed to make room for complete requests.
//!
//! Before connections were shed, one client holding 1,200 slow connections (reconnecting each
//! time the 5 s header timeout closed one) filled the 1,024-connection cap: `/readyz` failed 16 of
//! 19 requests at the kubelet's 1 s timeout and `/api/v1/all` 13 of 13.
//!
//! Everything runs over loopback TCP in this process, the server on threads of its own; the slow
//! clients connect from `127.0.0.2` and up, the measured requests from `127.0.0.1`. The test is
//! alone in its file so that no other test shares the process.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use olm_catalogd::metrics::Metrics;
use olm_runtime::serve::Limits;
use olm_testenv::slow_clients::{Attack, during, expect_fast, loopback};
use support::server;

/// Slow connections per attack, per listener.
const SLOW: usize = 1200;

/// Requests measured per listener in each phase.
const MEASURED: usize = 100;

/// The p99 every measured request must stay under.
const P99: Duration = Duration::from_millis(100);

/// A catalog request and a readiness probe, measured side by side.
async fn measure_both(phase: &str, catalog: SocketAddr, probes: SocketAddr) -> Result<(), String> {
    let path = "/catalogs/big/api/v1/metas?schema=olm.package";
    let targets = [("catalog", catalog, path), ("/readyz", probes, "/readyz")];
    expect_fast(phase, &targets, MEASURED, P99).await
}

/// [`measure_both`] while `attack` runs against both listeners.
async fn under_attack(
    phase: &str,
    catalog: SocketAddr,
    probes: SocketAddr,
    attack: impl Fn(SocketAddr) -> Attack,
) {
    let measured = measure_both(phase, catalog, probes);
    let settle = Duration::from_secs(3);
    let (fast, note) = during(&[attack(catalog), attack(probes)], settle, measured)
        .await
        .expect("slow clients");
    println!("{phase}: {note}");
    fast.unwrap_or_else(|e| panic!("{e}"));
}

/// Threads of its own for each side, as if each were a process of its own: the server, the
/// client measuring it, and (started by [`SlowClients`]) the slow clients.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn complete_requests_are_answered_while_slow_clients_hold_connections() {
    // Both ends of every slow connection, on two listeners, twice the attack at most.
    olm_testenv::slow_clients::raise_open_files(8 * SLOW as u64 + 512).unwrap();
    let serving = runtime();
    let prober = runtime();
    let (server, probes_addr, stop_probes, probes_task) = serving.block_on(async {
        let server = server(Limits::default()).await;
        let probes = olm_runtime::serve::listen(([127, 0, 0, 1], 0).into()).expect("bind");
        let probes_addr = probes.local_addr().expect("addr");
        let (stop_probes, probes_stopping) = tokio::sync::watch::channel(false);
        let probes_task = tokio::spawn(olm_runtime::serve::serve(
            probes,
            olm_catalogd::server::probes_router(Arc::new(Metrics::default())),
            None,
            probes_stopping,
        ));
        (server, probes_addr, stop_probes, probes_task)
    });

    prober.block_on(async {
        let idle = measure_both("idle", server.addr, probes_addr).await;
        idle.unwrap_or_else(|e| panic!("{e}"));

        // One client, more slow connections than the listener holds: it gets its share.
        under_attack(
            "one client, 1,200 slow connections",
            server.addr,
            probes_addr,
            |target| Attack::one_client(target, loopback(2), SLOW),
        )
        .await;

        // Twenty clients of 60 each: within their shares, together beyond the cap, so slow
        // connections are set aside for complete requests.
        under_attack(
            "20 clients, 1,200 slow connections",
            server.addr,
            probes_addr,
            |target| Attack {
                sources: (10..30).map(loopback).collect(),
                per_source: SLOW / 20,
                ..Attack::one_client(target, loopback(10), 0)
            },
        )
        .await;
    });

    serving.block_on(async {
        stop_probes.send(true).expect("stop");
        probes_task.await.expect("join").expect("serve");
        server.shut().await;
    });
}
