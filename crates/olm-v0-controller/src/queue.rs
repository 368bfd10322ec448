//! A work queue for controllers whose unit of work is not one watched object (a namespace's
//! Subscriptions) or whose objects live in a shared cache (InstallPlans): keys arrive from
//! streams, repeats of a waiting key merge, a few keys are worked at once (never one key twice
//! at once), and a failed or unfinished key comes back after its delay. Each turn runs in the
//! controller's reconcile harness (`olm_runtime::harness`), whose error policy every controller
//! follows: logged with the controller and the key, retried after the backoff's delay for the
//! key's run of failures.

use std::collections::{BTreeSet, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::channel::mpsc;
use futures::stream::FuturesUnordered;
use futures::{SinkExt, Stream, StreamExt};

use crate::error::Error;
use crate::lock;
use olm_cluster::context::Shared;
use olm_runtime::metrics::Outcome;

/// What one piece of work asks for: nothing more (`None`), or another turn after a delay.
pub type Next = Option<Duration>;

/// Works keys from `inputs` with `sync` until `stop` resolves, up to `workers` keys at once and
/// never one key twice at once. Each turn runs in the harness of the controller `name`:
/// measured under `name`, its errors logged and retried as every controller's are.
///
/// Several at once because one key's turn may wait on the network (a Subscription's bundle
/// pulled from a slow registry): with one worker, every other namespace of the cluster would
/// wait behind it. A key that arrives while its turn runs gets one more turn afterwards.
pub async fn run<S, F, Fut>(
    name: &'static str,
    shared: Arc<Shared>,
    inputs: S,
    stop: impl Future<Output = ()> + Send,
    workers: usize,
    sync: F,
) where
    S: Stream<Item = Vec<String>> + Send + Unpin,
    F: Fn(String) -> Fut,
    Fut: Future<Output = Result<Next, Error>>,
{
    let (retry_tx, retry_rx) = mpsc::channel::<String>(256);
    let mut inputs = futures::stream::select(inputs, retry_rx.map(|k| vec![k]));
    let mut stop = std::pin::pin!(stop);
    let harness = Arc::new(shared.harness(name));
    // Keys with a turn already scheduled: one timer per key, however often it fails.
    let scheduled: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut keys = Keys::default();
    let mut running = FuturesUnordered::new();
    let mut ended = false;
    loop {
        while running.len() < workers.max(1) {
            let Some(key) = keys.start() else {
                break;
            };
            let turn = sync(key.clone());
            let harness = harness.clone();
            running.push(async move {
                let result = harness.reconcile(&key, turn, |_| Outcome::Success).await;
                (key, result)
            });
        }
        if ended && running.is_empty() {
            return;
        }
        tokio::select! {
            () = &mut stop, if !ended => ended = true,
            next = inputs.next(), if !ended => match next {
                Some(batch) => keys.arrive(batch),
                None => ended = true,
            },
            Some((key, result)) = running.next(), if !running.is_empty() => {
                keys.finish(&key);
                let delay = match result {
                    Ok(next) => next,
                    Err(e) => Some(harness.retry(&key, name, &key, None, &e)),
                };
                if let Some(delay) = delay
                    && lock(&scheduled).insert(key.clone())
                {
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
        // Once stopping, nothing new starts: the turns running finish, then the loop ends.
        if ended {
            keys.waiting.clear();
        }
    }
}

/// Which keys wait, which run, and which arrived again while running: the bookkeeping of
/// [`run`], kept apart so that it can be tested without a clock.
#[derive(Debug, Default)]
struct Keys {
    /// Waiting for a turn, in key order (a burst for one key is one turn).
    waiting: BTreeSet<String>,
    /// Having a turn now.
    running: HashSet<String>,
    /// Arrived while having a turn: one more turn once it ends.
    again: HashSet<String>,
}

impl Keys {
    fn arrive(&mut self, batch: Vec<String>) {
        for key in batch {
            if self.running.contains(&key) {
                self.again.insert(key);
            } else {
                self.waiting.insert(key);
            }
        }
    }

    /// The next key to give a turn to, if any waits.
    fn start(&mut self) -> Option<String> {
        let key = self.waiting.pop_first()?;
        self.running.insert(key.clone());
        Some(key)
    }

    fn finish(&mut self, key: &str) {
        self.running.remove(key);
        if self.again.remove(key) {
            self.waiting.insert(key.to_owned());
        }
    }
}

#[cfg(test)]
mod keys_tests {
    use super::Keys;

    fn batch(keys: &[&str]) -> Vec<String> {
        keys.iter().map(|k| (*k).to_owned()).collect()
    }

    #[test]
    fn a_key_never_runs_twice_at_once_and_gets_one_more_turn_if_it_came_again() {
        let mut k = Keys::default();
        k.arrive(batch(&["b", "a", "a"]));
        assert_eq!(k.start().as_deref(), Some("a"));
        assert_eq!(k.start().as_deref(), Some("b"));
        assert_eq!(k.start(), None);
        // "a" arrives twice while it runs: one more turn, after this one.
        k.arrive(batch(&["a", "a", "c"]));
        assert_eq!(k.start().as_deref(), Some("c"));
        assert_eq!(k.start(), None);
        k.finish("a");
        assert_eq!(k.start().as_deref(), Some("a"));
        k.finish("a");
        k.finish("b");
        k.finish("c");
        assert_eq!(k.start(), None);
    }
}
