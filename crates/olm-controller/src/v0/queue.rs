//! A work queue for controllers whose unit of work is not one watched object (a namespace's
//! Subscriptions) or whose objects live in a shared cache (InstallPlans): keys arrive from
//! streams, repeats of a waiting key merge, one key is worked at a time, and a failed or
//! unfinished key comes back after its delay.

use std::collections::{BTreeSet, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::mpsc;
use futures::{FutureExt, SinkExt, Stream, StreamExt};
use olm_k8s::retry::{Backoff, Failures};
use tracing::warn;

use super::lock;
use crate::context::Shared;
use crate::metrics::Outcome;

/// What one piece of work asks for: nothing more (`None`), or another turn after a delay.
pub type Next = Option<Duration>;

/// Works keys from `inputs` with `sync` until `stop` resolves. Errors are logged with the key
/// and retried with the default backoff; each turn is measured under `name`.
pub async fn run<S, F, Fut>(
    name: &'static str,
    shared: Arc<Shared>,
    inputs: S,
    stop: impl Future<Output = ()> + Send,
    sync: F,
) where
    S: Stream<Item = Vec<String>> + Send + Unpin,
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<Next, String>>,
{
    let (retry_tx, retry_rx) = mpsc::channel::<String>(256);
    let mut inputs = futures::stream::select(inputs, retry_rx.map(|k| vec![k]));
    let mut stop = std::pin::pin!(stop);
    let failures = Failures::default();
    // Keys with a turn already scheduled: one timer per key, however often it fails.
    let scheduled: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut pending: BTreeSet<String> = BTreeSet::new();
    loop {
        if pending.is_empty() {
            tokio::select! {
                () = &mut stop => return,
                next = inputs.next() => match next {
                    Some(keys) => pending.extend(keys),
                    None => return,
                },
            }
        }
        // Everything already waiting joins this round, so a burst for one key is one turn.
        while let Some(Some(keys)) = inputs.next().now_or_never() {
            pending.extend(keys);
        }
        let Some(key) = pending.pop_first() else {
            continue;
        };
        let started = std::time::Instant::now();
        let result = sync(key.clone()).await;
        let outcome = if result.is_ok() {
            Outcome::Success
        } else {
            Outcome::Error
        };
        shared.metrics.observe(name, outcome, started.elapsed());
        let delay = match result {
            Ok(next) => {
                failures.succeed(&key);
                next
            }
            Err(e) => {
                let delay = Backoff::DEFAULT.delay(failures.fail(&key));
                warn!(controller = name, key = %key, error = %e, retry_in = ?delay, "reconciling failed; retrying");
                Some(delay)
            }
        };
        if let Some(delay) = delay {
            if !lock(&scheduled).insert(key.clone()) {
                continue;
            }
            let mut retry = retry_tx.clone();
            let scheduled = scheduled.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                lock(&scheduled).remove(&key);
                let _ = retry.send(key).await;
            });
        }
    }
}
