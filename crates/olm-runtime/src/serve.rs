//! The HTTP(S) server every listener of olm runs on (the catalog server, the PackageManifest
//! API, metrics, profiling, probes): HTTP/1.1 as upstream, graceful on stop, and bounded
//! against slow and hostile clients — timeouts on every phase of a connection, connection caps
//! per listener and per client ([`connections`] decides who gives way), and backpressure that
//! keeps what a client that stops reading costs to a few chunks.

pub mod connections;

use std::collections::BTreeMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tracing::{debug, info, warn};

use connections::{Admit, Caps, ConnId, Connections};

/// How long a request may take to send its head (upstream's read timeout).
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How long in-flight requests get to finish once the server is told to stop (upstream's
/// graceful shutdown timeout).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// How long a response may take, from its request's head being read to its last byte being
/// written: upstream's write timeout. A client that stops reading is cut off after it, and so is
/// one that reads too slowly to take a catalog in that time.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// Connections served at once on one listener. A connection holds about 60 KB while its client
/// is not reading (two file chunks, its buffers and state; a gzip response adds the encoder's few
/// hundred KiB), so this bounds what clients can make the server hold to tens of MB, a few
/// hundred with gzip. When every one is taken, a connection that is not answering a request
/// (idle, or still sending its request head) makes room for a new one ([`connections`]);
/// only while all are answering do new connections wait. Upstream (Go's `net/http`) has no cap.
pub const MAX_CONNECTIONS: usize = 1024;

/// Connections one client (source address) may hold on one listener. Beyond it, the client's
/// own connection that has been idle longest since answering a request is closed to make room;
/// when it has none (all are answering, or still sending their first request, as a client that
/// trickles its headers holds them), the new one is not served. Catalog clients (installers, a
/// handful of controllers, a browser) need a few each; an eighth of [`MAX_CONNECTIONS`] leaves
/// room for clients that share an address (a NAT, a proxy, `kubectl port-forward`), while one
/// client that trickles its requests or stops reading its answers holds no more than this.
pub const MAX_CONNECTIONS_PER_CLIENT: usize = 128;

/// Connections a listener holds without serving them, per connection it serves: beyond their
/// client's share, or set aside to make room while still sending their request head, they are
/// held unread until that head would have timed out, so that their clients do not come straight
/// back (see [`serve_with`]). A held connection costs a descriptor and an entry in one queue;
/// past this many, they are closed at once.
pub const HELD_PER_CONNECTION: usize = 4;

/// The response bytes a connection buffers for the socket before it stops pulling the body
/// (hyper's `max_buf_size`, about 400 KiB by default). Kept below the catalog server's 32 KiB chunks, so a
/// connection whose client stopped reading holds at most two chunks. hyper uses the same figure
/// for its read buffer, so it is also the largest request head accepted (larger ones get `431`):
/// twice what nginx accepts for a header line; Go's `net/http` accepts 1 MB.
pub const WRITE_BUFFER: usize = 16 * 1024;

/// Timeouts and connection caps of one listener ([`serve_with`]). The default is what upstream
/// does, plus [`MAX_CONNECTIONS`] and [`MAX_CONNECTIONS_PER_CLIENT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Time to finish the TLS handshake, to send each request head, and to start the next
    /// request on a kept-alive connection: [`READ_TIMEOUT`]. Upstream (Go) closes idle
    /// connections after the same time, as its idle timeout falls back to its read timeout;
    /// HTTP clients open a new connection when an idle one was closed. Each connection gets up
    /// to a quarter more, spread so that connections accepted together do not time out
    /// together.
    pub read_timeout: Duration,
    /// Time to answer a request, from its head being read to its last byte being written:
    /// [`WRITE_TIMEOUT`]. The connection is closed when it runs out.
    pub write_timeout: Duration,
    /// Connections served at once: [`MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// Connections one client may hold at once: [`MAX_CONNECTIONS_PER_CLIENT`].
    pub max_connections_per_client: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            read_timeout: READ_TIMEOUT,
            write_timeout: WRITE_TIMEOUT,
            max_connections: MAX_CONNECTIONS,
            max_connections_per_client: MAX_CONNECTIONS_PER_CLIENT,
        }
    }
}

impl Limits {
    fn caps(&self) -> Caps {
        Caps {
            max_connections: self.max_connections.max(1),
            per_client: self.max_connections_per_client.max(1),
        }
    }
}

/// Connections the kernel completes and queues for a listener of [`listen`] before it accepts
/// them (the kernel caps it at `net.core.somaxconn`, 4096 by default). Slow clients that are
/// closed together come back together: with tokio's 1,024, a burst of 1,200 overflowed the
/// queue, and a probe's connection arriving then was dropped and retried a second later, too
/// late for the kubelet's 1 s timeout.
pub const LISTEN_BACKLOG: u32 = 4096;

/// A listener on `addr` with a queue of [`LISTEN_BACKLOG`] (and, as `TcpListener::bind`,
/// `SO_REUSEADDR`, so a restart binds while connections of the last process linger).
pub fn listen(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// [`serve_with`] with [`Limits::default`].
pub async fn serve(
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    serve_with(listener, router, tls, Limits::default(), stop).await
}

/// Serves `router` on `listener` until `stop` flips, over TLS when `tls` is given. HTTP/1.1 only,
/// as upstream.
///
/// What one client can cost is bounded by `limits`: it gets `read_timeout` to finish its TLS
/// handshake, to send each request head and to start its next request, so idle or trickling
/// connections cannot pile up; a response is cut off after `write_timeout`; a connection holds at
/// most two of the catalog server's 32 KiB chunks of response bytes the client has not taken (plus the
/// gzip encoder's state when compressing), as its body is pulled only while its
/// [`WRITE_BUFFER`] has room; and a client holds at most `max_connections_per_client`
/// connections, the listener at most `max_connections`. Who gives way when those are reached is
/// [`Connections::admit`]'s decision: connections that are not answering a request (idle, or
/// still sending their request head) make room, so slow clients never keep a complete request
/// waiting; only while every connection is answering do new ones wait. A connection idle between
/// requests that makes room is closed; one still sending its head, or one not served, is held
/// unread until its head would have timed out, and up to one more read timeout (spread by
/// connection, so that connections accepted together are not closed together), at most
/// [`HELD_PER_CONNECTION`] times `max_connections` of them, so that its client does not come
/// straight back.
///
/// Stopping is graceful, as Kubernetes expects on SIGTERM: no new connection is accepted, idle
/// keep-alive connections are closed, and requests already being answered get up to
/// [`SHUTDOWN_GRACE`] to finish.
pub async fn serve_with(
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<rustls::ServerConfig>>,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let local = listener.local_addr()?;
    let tracker = Arc::new(Tracker::new(limits.caps()));
    let holding = tokio::spawn({
        let tracker = tracker.clone();
        let stop = stop.clone();
        async move { tracker.held.run(stop).await }
    });
    let mut warned: Option<tokio::time::Instant> = None;
    let mut next = 0u64;
    'accepting: loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Running out of file descriptors or a reset during accept: keep serving.
                Err(e) => {
                    warn!(listener = %local, error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = stopped(&mut stop) => break,
        };
        next += 1;
        let id = ConnId(next);
        // A connection that is not served is held, unread, until its request head would have
        // timed out anyway: closed at once, its client would learn of it at once and come
        // straight back, and every connection it makes would cost an accept and a close.
        let deadline =
            tokio::time::Instant::now() + limits.read_timeout + spread(id, limits.read_timeout);
        // Connections accepted together do not time out together either (see `spread`).
        let read_timeout = limits.read_timeout + spread(id, limits.read_timeout / 4);
        let shed = loop {
            let (admitted, shed) = tracker.admit(id, peer);
            if admitted != Admit::Serve
                && warned.is_none_or(|t| t.elapsed() >= Duration::from_secs(60))
            {
                warn!(
                    listener = %local,
                    client = %peer.ip(),
                    limit = limits.max_connections,
                    per_client = limits.max_connections_per_client,
                    "connection limits reached: connections still sending their request head give way to new ones, clients beyond their share are not served"
                );
                warned = Some(tokio::time::Instant::now());
            }
            match admitted {
                Admit::Serve | Admit::ServeShedding(_) => break shed,
                Admit::Refuse => {
                    debug!(%peer, "not served: the client holds its share of connections, all answering");
                    break None;
                }
                Admit::Wait => {
                    tokio::select! {
                        () = tracker.room.notified() => {}
                        _ = stopped(&mut stop) => break 'accepting,
                    }
                }
            }
        };
        let Some(shed) = shed else {
            tracker.held.hold(id, stream, deadline);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let socket = Detachable::new(stream);
        let acceptor = acceptor.clone();
        let (busy_tx, busy) = watch::channel(None);
        let progress = Arc::new(Progress {
            busy: busy_tx,
            tracker: tracker.clone(),
            id,
            answered: std::sync::atomic::AtomicBool::new(false),
        });
        let service = Answering {
            inner: TowerToHyperService::new(router.clone()),
            progress: progress.clone(),
        };
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            // Taken off the table however the connection ends.
            let registered = Registered(progress);
            let mut http1 =
                hyper_util::server::conn::auto::Builder::new(TokioExecutor::new()).http1_only();
            http1
                .http1()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(read_timeout)
                .max_buf_size(WRITE_BUFFER);
            let io = socket.clone();
            let serving = async move {
                match acceptor {
                    Some(acceptor) => {
                        let stream =
                            match tokio::time::timeout(read_timeout, acceptor.accept(io)).await {
                                Ok(Ok(stream)) => stream,
                                Ok(Err(e)) => {
                                    debug!(%peer, error = %e, "TLS handshake failed");
                                    return Some(Ok(()));
                                }
                                Err(_) => {
                                    debug!(%peer, "TLS handshake timed out");
                                    return Some(Ok(()));
                                }
                            };
                        let conn =
                            watcher.watch(http1.serve_connection(TokioIo::new(stream), service));
                        within_write_timeout(conn, busy, limits.write_timeout).await
                    }
                    None => {
                        let conn = watcher.watch(http1.serve_connection(TokioIo::new(io), service));
                        within_write_timeout(conn, busy, limits.write_timeout).await
                    }
                }
            };
            tokio::pin!(serving);
            let served = tokio::select! {
                served = &mut serving => served,
                Ok(()) = shed => {
                    // The socket without hyper's and TLS's state (dropped with this task, as it
                    // returns): what holding it costs.
                    let stream = socket.detach();
                    let tracker = registered.0.tracker.clone();
                    if registered.0.answered.load(std::sync::atomic::Ordering::Relaxed) {
                        // Idle between requests: HTTP clients expect such a connection to close.
                        debug!(%peer, "closed to make room: it was idle");
                    } else if let Some(stream) = stream {
                        debug!(%peer, "set aside to make room: it was still sending its request head");
                        drop(registered);
                        tracker.held.hold(id, stream, deadline);
                    }
                    return;
                }
            };
            match served {
                Some(Ok(())) => {}
                Some(Err(e)) => debug!(%peer, error = %e, "connection ended with an error"),
                None => {
                    debug!(%peer, timeout = ?limits.write_timeout, "response not written in time; connection closed")
                }
            }
        });
    }
    // Closed now, so new connections are refused instead of waiting in the backlog.
    drop(listener);
    // Held connections are closed with the listener.
    let _ = holding.await;
    let open = graceful.count();
    if open > 0 {
        info!(listener = %local, connections = open, "stopping: finishing requests in flight");
    }
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        warn!(listener = %local, grace = ?SHUTDOWN_GRACE, "stopping: requests still running after the grace period are cut off");
    }
    Ok(())
}

/// A listener's [`Connections`], with how to close each one that is shed, and the connections
/// it holds without serving them.
struct Tracker {
    state: std::sync::Mutex<Tracked>,
    /// Woken when a connection closes or stops answering: a connection held by
    /// [`Admit::Wait`] may now be served.
    room: tokio::sync::Notify,
    held: Held,
}

struct Tracked {
    table: Connections,
    /// Closes the connection when sent to (or dropped).
    shed: BTreeMap<ConnId, oneshot::Sender<()>>,
}

impl Tracker {
    fn new(caps: Caps) -> Tracker {
        Tracker {
            state: std::sync::Mutex::new(Tracked {
                table: Connections::new(caps),
                shed: BTreeMap::new(),
            }),
            room: tokio::sync::Notify::new(),
            held: Held {
                sockets: std::sync::Mutex::new(BTreeMap::new()),
                sooner: tokio::sync::Notify::new(),
                max: caps.max_connections.saturating_mul(HELD_PER_CONNECTION),
            },
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tracked> {
        // A poisoned lock only means a task panicked while holding it; the table is whole.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Decides about connection `id` from `peer` and carries the decision out, under one lock
    /// so that no connection changes state in between: a connection shed is told to close, and
    /// one served is entered with the signal that will close it.
    fn admit(&self, id: ConnId, peer: SocketAddr) -> (Admit, Option<oneshot::Receiver<()>>) {
        let mut state = self.lock();
        let admitted = state.table.admit(peer.ip());
        if let Admit::ServeShedding(victim) = admitted {
            state.table.closed(victim);
            if let Some(close) = state.shed.remove(&victim) {
                let _ = close.send(());
            }
        }
        match admitted {
            Admit::Serve | Admit::ServeShedding(_) => {
                let (close, closing) = oneshot::channel();
                state.table.opened(id, peer.ip(), std::time::Instant::now());
                state.shed.insert(id, close);
                (admitted, Some(closing))
            }
            Admit::Refuse | Admit::Wait => (admitted, None),
        }
    }
}

/// The sockets a listener holds without reading them, each until its deadline, all closed when
/// the listener stops: one task for all of them, so holding a connection costs a descriptor and
/// an entry, and a burst of them costs no more than the accepts.
struct Held {
    sockets: std::sync::Mutex<BTreeMap<(tokio::time::Instant, ConnId), tokio::net::TcpStream>>,
    /// Woken when a socket is held whose deadline comes before all others'.
    sooner: tokio::sync::Notify,
    /// How many may be held; beyond it they are closed at once.
    max: usize,
}

impl Held {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, BTreeMap<(tokio::time::Instant, ConnId), tokio::net::TcpStream>>
    {
        // A poisoned lock only means a task panicked while holding it; the map is whole.
        self.sockets.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds `stream` (connection `id`) until `deadline`; closes it at once when [`Held::max`]
    /// are held already.
    fn hold(&self, id: ConnId, stream: tokio::net::TcpStream, deadline: tokio::time::Instant) {
        let mut sockets = self.lock();
        if sockets.len() >= self.max {
            return;
        }
        let first = sockets
            .first_key_value()
            .is_none_or(|(&(t, _), _)| deadline < t);
        sockets.insert((deadline, id), stream);
        drop(sockets);
        if first {
            self.sooner.notify_one();
        }
    }

    /// Closes each socket at its deadline, and all of them once `stop` flips.
    async fn run(&self, mut stop: watch::Receiver<bool>) {
        loop {
            let next = self.lock().first_key_value().map(|(&(t, _), _)| t);
            tokio::select! {
                () = sleep_until(next) => {
                    let now = tokio::time::Instant::now();
                    let mut sockets = self.lock();
                    while sockets.first_key_value().is_some_and(|(&(t, _), _)| t <= now) {
                        sockets.pop_first();
                    }
                }
                () = self.sooner.notified() => {}
                () = stopped(&mut stop) => {
                    self.lock().clear();
                    return;
                }
            }
        }
    }
}

/// A share of `over` that differs from connection to connection (by a multiplicative hash of its
/// number, so it is the same on every run): how much later than the read timeout a connection
/// times out, or a held one is closed. Connections accepted together (a client opening many at
/// once) would otherwise be closed together, and their clients, coming back together, would
/// make a burst the listener must work through before whatever arrives with it; spread, they
/// come back a few at a time.
fn spread(id: ConnId, over: Duration) -> Duration {
    // Fibonacci hashing: the top 10 bits of the product are spread evenly over 0..1024.
    let share = id.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 54;
    over * u32::try_from(share).unwrap_or(0) / 1024
}

/// Where one connection is: answering a request since when (for [`within_write_timeout`]), and
/// its entry in the listener's table.
struct Progress {
    busy: watch::Sender<Option<tokio::time::Instant>>,
    tracker: Arc<Tracker>,
    id: ConnId,
    /// Whether a request was ever answered on it.
    answered: std::sync::atomic::AtomicBool,
}

impl Progress {
    fn answering(&self) {
        self.answered
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.busy.send_replace(Some(tokio::time::Instant::now()));
        self.tracker.lock().table.answering(self.id);
    }

    fn done(&self) {
        self.busy.send_replace(None);
        self.tracker
            .lock()
            .table
            .waiting(self.id, std::time::Instant::now());
        self.tracker.room.notify_one();
    }
}

/// A connection's socket, shared with hyper (and TLS) so that it can be taken back from them:
/// a connection set aside to make room is then held without their buffers. Once taken, hyper
/// reads and writes fail, and the connection it serves ends.
#[derive(Clone)]
struct Detachable(Arc<std::sync::Mutex<Option<tokio::net::TcpStream>>>);

impl Detachable {
    fn new(stream: tokio::net::TcpStream) -> Detachable {
        Detachable(Arc::new(std::sync::Mutex::new(Some(stream))))
    }

    /// Takes the socket back; `None` when it was taken already.
    fn detach(&self) -> Option<tokio::net::TcpStream> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Runs `f` on the socket, or fails as a closed one would.
    fn with<T>(
        &self,
        f: impl FnOnce(std::pin::Pin<&mut tokio::net::TcpStream>) -> std::task::Poll<std::io::Result<T>>,
    ) -> std::task::Poll<std::io::Result<T>> {
        let mut socket = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match socket.as_mut() {
            Some(stream) => f(std::pin::Pin::new(stream)),
            None => std::task::Poll::Ready(Err(std::io::ErrorKind::NotConnected.into())),
        }
    }
}

impl tokio::io::AsyncRead for Detachable {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.with(|s| s.poll_read(cx, buf))
    }
}

impl tokio::io::AsyncWrite for Detachable {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.with(|s| s.poll_write(cx, buf))
    }

    fn poll_write_vectored(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.with(|s| s.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.with(|s| s.poll_flush(cx))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        self.with(|s| s.poll_shutdown(cx))
    }
}

/// Takes the connection off the table when its task ends.
struct Registered(Arc<Progress>);

impl Drop for Registered {
    fn drop(&mut self) {
        {
            let mut state = self.0.tracker.lock();
            state.table.closed(self.0.id);
            state.shed.remove(&self.0.id);
        }
        self.0.tracker.room.notify_one();
    }
}

/// Drives a connection until it ends, or returns `None` (dropping it, which closes the socket)
/// once a response has taken longer than `timeout`. `busy` says since when the current request
/// is being answered.
///
/// The deadline is watched here, outside the connection, because a connection whose client
/// stopped reading is waiting for the socket and polls neither its response body nor any timer
/// of its own.
async fn within_write_timeout<F: Future>(
    conn: F,
    mut busy: watch::Receiver<Option<tokio::time::Instant>>,
    timeout: Duration,
) -> Option<F::Output> {
    tokio::pin!(conn);
    loop {
        let deadline = busy.borrow_and_update().map(|since| since + timeout);
        tokio::select! {
            done = &mut conn => return Some(done),
            changed = busy.changed() => if changed.is_err() {
                // The service is gone, so is any response: only the connection is left.
                return Some(conn.await);
            },
            () = sleep_until(deadline) => return None,
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The router as one connection's service: it records since when a request is being answered,
/// until its response body is done with, for [`within_write_timeout`] and the listener's table.
struct Answering<S> {
    inner: S,
    progress: Arc<Progress>,
}

impl<S, B> hyper::service::Service<http::Request<hyper::body::Incoming>> for Answering<S>
where
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: http_body::Body + Send + 'static,
{
    type Response = http::Response<Answer<B>>;
    type Error = S::Error;
    type Future = std::pin::Pin<
        Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>,
    >;

    fn call(&self, request: http::Request<hyper::body::Incoming>) -> Self::Future {
        self.progress.answering();
        let done = Done(self.progress.clone());
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| Answer { body, _done: done }))
        })
    }
}

/// Marks the connection waiting when dropped, that is once the response body is done with.
struct Done(Arc<Progress>);

impl Drop for Done {
    fn drop(&mut self) {
        self.0.done();
    }
}

/// A response body that carries its [`Done`].
struct Answer<B> {
    body: B,
    _done: Done,
}

impl<B: http_body::Body + Unpin> http_body::Body for Answer<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<B::Data>, B::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Resolves once `stop` is set (or its sender is gone).
pub async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}
