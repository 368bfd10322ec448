//! Watches that come back as soon as the API server does.
//!
//! kube-runtime's default watch backoff doubles from 0.8 s up to 30 s and applies to every
//! error alike. After an API server restart that costs a minute: while the server is down each
//! watch's wait grows towards 30 s, and once it is back the first answer is `410 Gone` ("too old
//! resource version": the new server's watch cache starts at the current revision), which costs
//! one more wait before the watch lists again. Meanwhile no controller hears of anything.
//!
//! Here a watch error waits [`Backoff::WATCH`] (100 ms doubling up to 2 s), and an expired
//! resource version waits nothing: the next poll lists again. An unreachable API server is
//! reported to [`crate::reconnect`], which says so once for the whole process; each watch's
//! retries are debug lines. Any other error (forbidden, a kind not served) is the watch's own
//! problem: a warning naming it, once until the API server next comes back.
//!
//! Every watch is wrapped with [`RecoveringExt::recovering`]; kube-runtime controllers are built
//! from such streams and add no wait of their own ([`paced`]). A watch that resumes without losing its place
//! sees no event and so cannot tell that the server is back; [`crate::reconnect`] does.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures::Stream;
use kube::runtime::watcher;
use olm_k8s::retry::Backoff;
use tracing::{debug, warn};

/// Whether `e` says the watch's resource version expired (`410 Gone`), which only listing
/// again cures.
pub fn expired(e: &watcher::Error) -> bool {
    source(e).is_some_and(|k| matches!(k, kube::Error::Api(s) if s.code == 410))
        || matches!(e, watcher::Error::WatchError(status) if status.code == 410)
}

/// Whether `e` says the API server could not be reached or could not answer (no connection,
/// a broken stream, 5xx, 429): an outage, reported once by [`crate::reconnect`], not per watch.
pub fn unreachable(e: &watcher::Error) -> bool {
    match e {
        watcher::Error::WatchError(status) => status.code >= 500 || status.code == 429,
        _ => source(e).is_some_and(|k| match k {
            kube::Error::Service(_) | kube::Error::HyperError(_) | kube::Error::ReadEvents(_) => {
                true
            }
            kube::Error::Api(status) => status.code >= 500 || status.code == 429,
            _ => false,
        }),
    }
}

fn source(e: &watcher::Error) -> Option<&kube::Error> {
    match e {
        watcher::Error::InitialListFailed(k)
        | watcher::Error::WatchStartFailed(k)
        | watcher::Error::WatchFailed(k) => Some(k),
        watcher::Error::WatchError(_) | watcher::Error::NoResourceVersion => None,
    }
}

/// What a watch error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The resource version expired: list again at once; expected after any restart.
    Expired,
    /// The API server is away: wait and retry; the outage is reported once for all watches.
    Unreachable,
    /// Anything else (forbidden, a kind not served, an undecodable object): this watch's own
    /// problem, a warning once per outage-free stretch.
    Other,
}

/// What `e` is.
pub fn kind(e: &watcher::Error) -> Kind {
    if expired(e) {
        Kind::Expired
    } else if unreachable(e) {
        Kind::Unreachable
    } else {
        Kind::Other
    }
}

/// How long to wait after the `failures`-th error in a row of kind `kind`.
pub fn wait_after(failures: u32, kind: Kind) -> Duration {
    match kind {
        Kind::Expired => Duration::ZERO,
        Kind::Unreachable | Kind::Other => Backoff::WATCH.delay(failures),
    }
}

/// How loudly a watch error is logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loudness {
    /// A warning: a problem of this watch not yet reported.
    Warn,
    /// A debug line: expected, part of an outage reported once, or already reported.
    Debug,
}

/// How loudly to log an error of kind `kind` when this watch last warned at `warned` (the
/// count of API server returns then) and the count is `returns` now: a watch's own problem
/// is worth one warning until the API server comes back from an outage.
pub fn loudness(kind: Kind, warned: Option<u64>, returns: u64) -> Loudness {
    match kind {
        Kind::Other if warned != Some(returns) => Loudness::Warn,
        _ => Loudness::Debug,
    }
}

/// A watch stream that waits after errors as this module says; see [`RecoveringExt`].
pub struct Recovering<S> {
    name: Cow<'static, str>,
    stream: Pin<Box<S>>,
    waiting: Option<Pin<Box<tokio::time::Sleep>>>,
    /// Errors since the last event (expired versions not counted: they are no failure).
    failures: u32,
    /// The count of API server returns when this watch last warned.
    warned: Option<u64>,
}

/// Adds [`recovering`](RecoveringExt::recovering) to watch streams.
pub trait RecoveringExt: Sized {
    /// This watch, named `name` in logs, recovering as the module says.
    fn recovering(self, name: impl Into<Cow<'static, str>>) -> Recovering<Self>;
}

impl<S, T> RecoveringExt for S
where
    S: Stream<Item = Result<T, watcher::Error>>,
{
    fn recovering(self, name: impl Into<Cow<'static, str>>) -> Recovering<Self> {
        Recovering {
            name: name.into(),
            stream: Box::pin(self),
            waiting: None,
            failures: 0,
            warned: None,
        }
    }
}

impl<S, T> Stream for Recovering<S>
where
    S: Stream<Item = Result<T, watcher::Error>>,
{
    type Item = Result<T, watcher::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(waiting) = this.waiting.as_mut() {
            ready!(waiting.as_mut().poll(cx));
            this.waiting = None;
        }
        let item = ready!(this.stream.as_mut().poll_next(cx));
        match &item {
            Some(Err(e)) => {
                let kind = kind(e);
                if kind != Kind::Expired {
                    this.failures = this.failures.saturating_add(1);
                }
                if kind == Kind::Unreachable {
                    crate::reconnect::lost();
                }
                let returns = crate::reconnect::returns();
                match loudness(kind, this.warned, returns) {
                    Loudness::Warn => {
                        this.warned = Some(returns);
                        warn!(watch = %this.name, error = %e, "watch failed; retrying");
                    }
                    Loudness::Debug => {
                        debug!(watch = %this.name, error = %e, failures = this.failures, "watch failed; retrying")
                    }
                }
                let wait = wait_after(this.failures, kind);
                if !wait.is_zero() {
                    this.waiting = Some(Box::pin(tokio::time::sleep(wait)));
                }
            }
            Some(Ok(_)) if this.failures > 0 => {
                debug!(
                    watch = %this.name,
                    failures = this.failures,
                    "watch recovered"
                );
                this.failures = 0;
            }
            Some(Ok(_)) | None => {}
        }
        Poll::Ready(item)
    }
}

/// The trigger backoff of every `kube::runtime::Controller` in olm: none, because each of its
/// watches is a [`Recovering`] stream that already waits after its own errors. kube-runtime's
/// default would pause all of a controller's watches together after any one's error, so a
/// `410 Gone` on each of five watches after an API server restart cost five growing waits.
/// Only for controllers built from streams (`for_stream`, `owns_stream`, `watches_stream`)
/// that are all [`Recovering`]: a bare watch would retry its errors at once.
pub fn paced() -> Paced {
    Paced
}

/// See [`paced`].
#[derive(Debug, Default, Clone, Copy)]
pub struct Paced;

impl Iterator for Paced {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        Some(Duration::ZERO)
    }
}

impl kube::runtime::utils::Backoff for Paced {
    fn reset(&mut self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use kube::core::Status;

    fn gone() -> watcher::Error {
        let mut status = Status::failure("too old resource version: 1 (2)", "Expired");
        status.code = 410;
        watcher::Error::WatchError(Box::new(status))
    }

    fn no_version() -> watcher::Error {
        watcher::Error::NoResourceVersion
    }

    fn unreachable_server() -> watcher::Error {
        let refused: Box<dyn std::error::Error + Send + Sync> = "connection refused".into();
        watcher::Error::WatchStartFailed(kube::Error::Service(refused))
    }

    fn forbidden() -> watcher::Error {
        let mut status = Status::failure("forbidden", "Forbidden");
        status.code = 403;
        watcher::Error::InitialListFailed(kube::Error::Api(Box::new(status)))
    }

    #[test]
    fn an_expired_version_lists_again_at_once_and_quietly() {
        assert_eq!(kind(&gone()), Kind::Expired);
        assert_eq!(wait_after(3, Kind::Expired), Duration::ZERO);
        assert_eq!(loudness(Kind::Expired, None, 0), Loudness::Debug);
        let mut list = Status::failure("continue token expired", "Expired");
        list.code = 410;
        assert_eq!(
            kind(&watcher::Error::InitialListFailed(kube::Error::Api(
                Box::new(list)
            ))),
            Kind::Expired
        );
    }

    #[test]
    fn an_outage_waits_at_most_two_seconds_and_is_reported_once_elsewhere() {
        assert_eq!(kind(&unreachable_server()), Kind::Unreachable);
        let mut unavailable = Status::failure("the server is shutting down", "ServiceUnavailable");
        unavailable.code = 503;
        assert_eq!(
            kind(&watcher::Error::WatchError(Box::new(unavailable))),
            Kind::Unreachable
        );
        assert_eq!(wait_after(1, Kind::Unreachable), Duration::from_millis(100));
        assert_eq!(wait_after(50, Kind::Unreachable), Duration::from_secs(2));
        assert_eq!(loudness(Kind::Unreachable, None, 0), Loudness::Debug);
    }

    #[test]
    fn a_watchs_own_problem_warns_once_until_the_server_came_back() {
        assert_eq!(kind(&forbidden()), Kind::Other);
        assert_eq!(kind(&no_version()), Kind::Other);
        assert_eq!(loudness(Kind::Other, None, 0), Loudness::Warn);
        assert_eq!(loudness(Kind::Other, Some(0), 0), Loudness::Debug);
        assert_eq!(loudness(Kind::Other, Some(0), 1), Loudness::Warn);
    }

    #[test]
    fn a_controller_adds_no_wait_of_its_own() {
        let mut p = paced();
        assert_eq!(p.next(), Some(Duration::ZERO));
        assert_eq!(p.nth(100), Some(Duration::ZERO));
    }

    #[tokio::test(start_paused = true)]
    async fn errors_wait_but_an_expired_version_does_not() {
        let items = vec![
            Err(no_version()),
            Err(no_version()),
            Err(gone()),
            Ok(1),
            Err(no_version()),
        ];
        let mut s = futures::stream::iter(items).recovering("test");
        let started = tokio::time::Instant::now();
        let mut waited = Vec::new();
        while let Some(item) = s.next().await {
            waited.push((item.is_ok(), started.elapsed().as_millis()));
        }
        // 100 ms after the first error, 200 ms after the second, nothing after the expired
        // version; the event resets the count, so the last error waits 100 ms again.
        assert_eq!(
            waited,
            [
                (false, 0),
                (false, 100),
                (false, 300),
                (true, 300),
                (false, 300)
            ]
        );
    }
}
