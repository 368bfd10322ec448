//! Knowing that the API server is back after an outage.
//!
//! Watches notice an outage at once (their stream breaks) but not its end: a watch that
//! resumes from where it was and sees no change yields nothing, and a reconcile that failed
//! meanwhile waits out its backoff (up to 30 s). So a failing watch reports [`lost`]; [`monitor`]
//! then asks the API server whether it is ready every [`POLL`] until it is, and announces the
//! return to everyone holding [`reconnections`], who look at all their objects again.
//!
//! Process-wide on purpose: a process talks to one API server, and every controller in it wants
//! the same news. Two `olm` instances in one test process share it; an extra pass over every
//! object is all that costs.

use std::sync::LazyLock;
use std::time::Duration;

use futures::{FutureExt as _, Stream, StreamExt};
use tokio::sync::{Notify, watch};
use tracing::{info, warn};

/// How often the API server is asked whether it is back.
pub const POLL: Duration = Duration::from_millis(250);

static LOST: Notify = Notify::const_new();
static RETURNS: LazyLock<watch::Sender<u64>> = LazyLock::new(|| watch::Sender::new(0));

/// A watch lost the API server (a failure other than an expired resource version).
pub fn lost() {
    LOST.notify_one();
}

/// How many times the API server came back so far.
pub fn returns() -> u64 {
    *RETURNS.borrow()
}

/// Yields once each time the API server came back after [`lost`] was reported; nothing for the
/// returns before the call.
pub fn reconnections() -> impl Stream<Item = ()> + Send + 'static {
    let mut rx = RETURNS.subscribe();
    rx.mark_unchanged();
    futures::stream::unfold(rx, |mut rx| async move {
        rx.changed().await.ok()?;
        Some(((), rx))
    })
}

/// Until `stop` resolves: after each [`lost`], polls `client` until the API server answers,
/// then announces the return.
pub async fn monitor(client: kube::Client, stop: impl std::future::Future<Output = ()>) {
    let work = async {
        loop {
            LOST.notified().await;
            // A failure reported just after a return, or one blip: nothing to announce.
            if ready(&client).await {
                continue;
            }
            let started = tokio::time::Instant::now();
            warn!(every = ?POLL, "lost the API server; asking whether it is back");
            while !ready(&client).await {
                tokio::time::sleep(POLL).await;
            }
            info!(after = ?started.elapsed(), "the API server answers again; every controller looks at its objects again");
            RETURNS.send_modify(|n| *n = n.wrapping_add(1));
            // The outage's own reports are stale now.
            let _ = LOST.notified().now_or_never();
        }
    };
    tokio::select! {
        () = work => {}
        () = stop => {}
    }
}

/// Whether the API server says it is ready (`/readyz`): it answers `/version` before it
/// serves every resource.
async fn ready(client: &kube::Client) -> bool {
    let Ok(request) = http::Request::get("/readyz").body(Vec::new()) else {
        return false;
    };
    client.request_text(request).await.is_ok()
}

/// Drives `reconnections` into `on_return` until it ends: for shells whose queues are not
/// kube-runtime controllers.
pub async fn on_each_return<F, Fut>(mut on_return: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let returns = reconnections();
    futures::pin_mut!(returns);
    while returns.next().await.is_some() {
        on_return().await;
    }
}
