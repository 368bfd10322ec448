//! How long a controller waits before retrying an object whose reconcile failed.
//!
//! Every controller retries a failing object with a per-object exponential backoff, as
//! controller-runtime's per-item rate limiter does: the first retry comes after `base`, each
//! further consecutive failure doubles the wait, up to `cap`. A reconcile that succeeds resets
//! the object's count. Counts live in [`Failures`], keyed by the object's name; the delay is a
//! pure function of the count so that it can be tested without a clock.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The first wait and the longest one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after the first failure.
    pub base: Duration,
    /// The longest wait, however many failures came before.
    pub cap: Duration,
}

impl Backoff {
    /// The controllers' default: 1 s, doubling up to 30 s. Faster than controller-runtime's
    /// 1000 s cap at noticing a cause that went away (a permission granted, a registry back),
    /// while one broken object still costs at most one attempt every 30 s.
    pub const DEFAULT: Backoff = Backoff {
        base: Duration::from_secs(1),
        cap: Duration::from_secs(30),
    };

    /// A watch that lost the API server: 100 ms, doubling up to 2 s. A watch is one long
    /// request per kind, so reconnecting often costs the API server little, and a short cap is
    /// what lets every controller notice within seconds that a restarted API server is back
    /// (client-go's reflector waits up to 30 s, during which nothing is reconciled).
    pub const WATCH: Backoff = Backoff {
        base: Duration::from_millis(100),
        cap: Duration::from_secs(2),
    };

    /// The wait before retry number `attempt` (1 for the first failure).
    pub fn delay(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        self.base
            .checked_mul(1u32 << doublings)
            .map_or(self.cap, |d| d.min(self.cap))
    }
}

/// Consecutive failures per object.
#[derive(Debug, Default)]
pub struct Failures {
    counts: Mutex<HashMap<String, u32>>,
}

impl Failures {
    /// Counts one more failure of `name`; returns how many in a row there were.
    pub fn fail(&self, name: &str) -> u32 {
        let mut counts = self.lock();
        let n = counts.entry(name.to_owned()).or_insert(0);
        *n = n.saturating_add(1);
        *n
    }

    /// `name` reconciled without error: its next failure is a first one again.
    pub fn succeed(&self, name: &str) {
        self.lock().remove(name);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, u32>> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_reconnects_within_two_seconds_however_long_the_outage() {
        let ms: Vec<u128> = (1..=7)
            .map(|n| Backoff::WATCH.delay(n).as_millis())
            .collect();
        assert_eq!(ms, [100, 200, 400, 800, 1600, 2000, 2000]);
        assert_eq!(Backoff::WATCH.delay(u32::MAX), Duration::from_secs(2));
    }

    #[test]
    fn doubles_from_the_base_up_to_the_cap() {
        let b = Backoff::DEFAULT;
        let secs: Vec<u64> = (1..=8).map(|n| b.delay(n).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 30, 30, 30]);
        assert_eq!(b.delay(0), Duration::from_secs(1));
        assert_eq!(b.delay(u32::MAX), Duration::from_secs(30));
        let tiny = Backoff {
            base: Duration::from_millis(5),
            cap: Duration::from_secs(1000),
        };
        assert_eq!(tiny.delay(3), Duration::from_millis(20));
        assert_eq!(tiny.delay(40), Duration::from_secs(1000));
    }

    #[test]
    fn failures_count_in_a_row_and_reset_on_success() {
        let f = Failures::default();
        assert_eq!(f.fail("a"), 1);
        assert_eq!(f.fail("a"), 2);
        assert_eq!(f.fail("b"), 1);
        f.succeed("a");
        assert_eq!(f.fail("a"), 1);
    }
}
