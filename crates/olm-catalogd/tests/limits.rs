//! The limits of the catalog server's connections, over loopback TCP: upstream's write timeout
//! (a response not taken in time is cut off), its idle timeout (a kept-alive connection that
//! sends nothing is closed), the connection cap (a connection still sending its request head
//! gives way to a new one; while all are answering, further connections wait) and the share of
//! one client (beyond it, the client's new connection is not served).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::{Duration, Instant};

use olm_runtime::serve::Limits;
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

/// Two connections whose answers are not read (so both are answering) and a third that sent its
/// request, all from one client.
async fn a_third_beside_two_answering(
    addr: std::net::SocketAddr,
) -> (TcpStream, TcpStream, TcpStream) {
    let first = non_reading(addr, false).await;
    let second = non_reading(addr, false).await;
    // Until their request heads are read they could give way to the third.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut third = TcpStream::connect(addr).await.expect("connect");
    // A refused connection may be closed before this is written.
    let _ = third.write_all(&request(false)).await;
    (first, second, third)
}

/// Beyond the cap, while every connection is answering, a connection waits to be served instead
/// of being refused, and is served once another one closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_wait_for_a_free_one() {
    let server = server(Limits {
        max_connections: 2,
        ..Limits::default()
    })
    .await;
    let (first, second, mut third) = a_third_beside_two_answering(server.addr).await;
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

/// Reads off `stream` until it closes (or fails); returns what came and when it closed, or
/// `None` when it is still open after `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<(Vec<u8>, Instant)> {
    let mut got = Vec::new();
    match tokio::time::timeout(within, stream.read_to_end(&mut got)).await {
        Ok(_) => Some((got, Instant::now())),
        Err(_) => None,
    }
}

/// At the cap, a connection that has not finished its request head gives way, so a complete
/// request is answered at once; the one that waited longest goes first. It is set aside, not
/// closed: what it sends is not read, and it is closed once its head would have timed out
/// anyway (up to one more read timeout later, spread so that connections set aside together are
/// not closed together). The other one is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_still_sending_its_head_gives_way_at_the_cap() {
    let read_timeout = Duration::from_secs(3);
    let server = server(Limits {
        read_timeout,
        max_connections: 2,
        ..Limits::default()
    })
    .await;
    let partial = || async {
        let mut s = TcpStream::connect(server.addr).await.expect("connect");
        s.write_all(b"GET /catalogs/big/api/v1/all HTTP/1.1\r\n")
            .await
            .expect("write");
        (s, Instant::now())
    };
    let (mut oldest, oldest_since) = partial().await;
    // Accept order is the order of the table: the first is the one that waited longest.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (mut newer, _) = partial().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let mut complete = TcpStream::connect(server.addr).await.expect("connect");
    get_in_full(&mut complete, server.size).await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "answered after {:?}",
        started.elapsed()
    );

    // Both finish their heads: only the one still served answers.
    for s in [&mut oldest, &mut newer] {
        s.write_all(b"host: localhost\r\n\r\n")
            .await
            .expect("write");
    }
    let (head, body) = read_head(&mut newer).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    read_body(&mut newer, body.len(), server.size as usize).await;
    let (got, closed) = closed_within(&mut oldest, 2 * read_timeout + Duration::from_secs(2))
        .await
        .expect("the oldest is closed once its head would have timed out");
    assert!(got.is_empty(), "the oldest was answered");
    let held = closed - oldest_since;
    assert!(
        held >= read_timeout - Duration::from_millis(300),
        "closed after {held:?}"
    );
    server.shut().await;
}

/// A client holding its share of connections, all answering, gets no answer on its next one,
/// which is closed once its head would have timed out; another client is served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_beyond_its_share_is_not_served() {
    let read_timeout = Duration::from_secs(2);
    let server = server(Limits {
        read_timeout,
        max_connections_per_client: 2,
        ..Limits::default()
    })
    .await;
    let since = Instant::now();
    let (first, second, mut third) = a_third_beside_two_answering(server.addr).await;

    // Another address is another client.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind((std::net::Ipv4Addr::new(127, 0, 0, 2), 0).into())
        .expect("bind");
    let mut other = socket.connect(server.addr).await.expect("connect");
    get_in_full(&mut other, server.size).await;

    let (got, closed) = closed_within(&mut third, 2 * read_timeout + Duration::from_secs(2))
        .await
        .expect("the third connection is closed");
    assert!(
        got.is_empty(),
        "a third connection was answered: {} bytes",
        got.len()
    );
    assert!(
        closed - since >= read_timeout - Duration::from_millis(300),
        "closed after {:?}",
        closed - since
    );
    drop((first, second));
    server.shut().await;
}
