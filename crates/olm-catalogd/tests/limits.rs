//! The limits of the catalog server's connections, over loopback TCP: upstream's write timeout
//! (a response not taken in time is cut off), its idle timeout (a kept-alive connection that
//! sends nothing is closed), and the connection cap (further connections wait).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use olm_catalogd::Limits;
use support::{get_in_full, non_reading, read_body, read_head, request, server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Upstream's `WriteTimeout`: the server gives up on a response its client does not take in
/// time and closes the connection; one taken in time leaves the connection open for the next.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_not_taken_in_time_is_cut_off() {
    let write_timeout = Duration::from_secs(2);
    let server = server(Limits {
        write_timeout,
        ..Limits::default()
    })
    .await;

    // Read in time; then wait longer than the write timeout before the next request.
    let mut s = TcpStream::connect(server.addr).await.expect("connect");
    get_in_full(&mut s, server.size).await;
    tokio::time::sleep(write_timeout + Duration::from_secs(1)).await;
    // Kept alive.
    get_in_full(&mut s, server.size).await;

    // Not read in time: once the deadline passed, what the client reads ends early.
    let mut slow = non_reading(server.addr, false).await;
    let start = Instant::now();
    tokio::time::sleep(write_timeout + Duration::from_secs(1)).await;
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), slow.read_to_end(&mut got))
        .await
        .expect("the connection is closed")
        .expect("read");
    assert!(
        (got.len() as u64) < server.size,
        "the whole response ({} bytes) was sent after {:?}",
        got.len(),
        start.elapsed()
    );
    server.shut().await;
}

/// A kept-alive connection that sends nothing more is closed after the read timeout, as upstream
/// closes idle connections after its read timeout.
#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed() {
    let read_timeout = Duration::from_secs(1);
    let server = server(Limits {
        read_timeout,
        ..Limits::default()
    })
    .await;
    let mut s = TcpStream::connect(server.addr).await.expect("connect");
    get_in_full(&mut s, server.size).await;
    let start = Instant::now();
    let mut rest = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut rest))
        .await
        .expect("the idle connection is closed")
        .expect("read");
    assert!(rest.is_empty());
    assert!(
        start.elapsed() >= read_timeout - Duration::from_millis(200),
        "closed after {:?}",
        start.elapsed()
    );
    server.shut().await;
}

/// Beyond the cap a connection waits to be served instead of being refused, and is served once
/// another one closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_wait_for_a_free_one() {
    let server = server(Limits {
        max_connections: 2,
        ..Limits::default()
    })
    .await;
    let first = non_reading(server.addr, false).await;
    let second = non_reading(server.addr, false).await;
    let mut third = TcpStream::connect(server.addr).await.expect("connect");
    third.write_all(&request(false)).await.expect("write");
    let mut byte = [0u8; 1];
    assert!(
        tokio::time::timeout(Duration::from_secs(1), third.read(&mut byte))
            .await
            .is_err(),
        "a third connection was answered while two were served"
    );
    drop(first);
    let (head, body) = tokio::time::timeout(Duration::from_secs(5), read_head(&mut third))
        .await
        .expect("answered once a connection closed");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    read_body(&mut third, body.len(), server.size as usize).await;
    drop(second);
    server.shut().await;
}
