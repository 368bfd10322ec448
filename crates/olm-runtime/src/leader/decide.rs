//! Leader election on a `coordination.k8s.io/v1` Lease, decided purely: client-go's
//! `tryAcquireOrRenew` (k8s.io/client-go/tools/leaderelection/leaderelection.go), which
//! controller-runtime, and so upstream's catalogd and operator-controller, run.
//!
//! A candidate takes a lease that is missing, released (no holder) or not renewed for the lease
//! duration. "Not renewed" is judged by the candidate's own clock, from when it first saw the
//! lease's current record, never from the times written in it: clocks of two nodes may disagree,
//! the time since a record last changed cannot. The holder renews every retry period; if no renew
//! has succeeded for the renew deadline it stops leading (it cannot know whether another took
//! over). Every write is conditional on the resourceVersion read, so two candidates never both
//! win.

use std::time::Duration;

use jiff::Timestamp;

/// Upstream's timings (catalogd and operator-controller `main.go`): 137 s, 107 s and 26 s.
pub const LEASE_DURATION: Duration = Duration::from_secs(137);
/// See [`LEASE_DURATION`].
pub const RENEW_DEADLINE: Duration = Duration::from_secs(107);
/// See [`LEASE_DURATION`].
pub const RETRY_PERIOD: Duration = Duration::from_secs(26);

/// How long a lease lasts and how often it is renewed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timings {
    /// How long a candidate waits, from when it saw a record, before taking the lease over.
    pub lease_duration: Duration,
    /// How long the holder keeps leading without a successful renew.
    pub renew_deadline: Duration,
    /// How often the holder renews and a candidate tries.
    pub retry_period: Duration,
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            lease_duration: LEASE_DURATION,
            renew_deadline: RENEW_DEADLINE,
            retry_period: RETRY_PERIOD,
        }
    }
}

/// Election settings client-go refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TimingsError {
    /// The holder would not give up before a candidate may take over.
    #[error("the lease duration must be longer than the renew deadline")]
    LeaseNotLongerThanRenew,
    /// No room for clock jitter between renewing and retrying.
    #[error("the renew deadline must be longer than 1.2 times the retry period")]
    RenewWithoutJitterRoom,
    /// Retrying at once, forever.
    #[error("the retry period must be positive")]
    NoRetryPeriod,
}

impl Timings {
    /// client-go's checks on the settings: the holder must give up before a candidate may take
    /// over, with room for clock jitter.
    pub fn check(&self) -> Result<(), TimingsError> {
        if self.lease_duration <= self.renew_deadline {
            return Err(TimingsError::LeaseNotLongerThanRenew);
        }
        // client-go: RenewDeadline > JitterFactor (1.2) × RetryPeriod.
        if self.renew_deadline.as_secs_f64() <= 1.2 * self.retry_period.as_secs_f64() {
            return Err(TimingsError::RenewWithoutJitterRoom);
        }
        if self.retry_period.is_zero() {
            return Err(TimingsError::NoRetryPeriod);
        }
        Ok(())
    }
}

/// The fields of a Lease's spec that election reads and writes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// Who holds it; empty when released.
    pub holder: String,
    /// `leaseDurationSeconds`.
    pub lease_duration_seconds: i32,
    /// When the holder acquired it.
    pub acquire_time: Option<Timestamp>,
    /// When the holder last renewed it.
    pub renew_time: Option<Timestamp>,
    /// How many times it changed hands.
    pub transitions: i32,
}

/// What a candidate or holder does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// No Lease exists: create it, held by us.
    Create(Record),
    /// Write this record (a renew, or a takeover), conditional on the version read.
    Update(Record),
    /// Another holds the lease and renewed it recently enough: wait and look again.
    Wait {
        /// Who holds it.
        holder: String,
    },
}

/// The next step for `me`, given the lease as read (`None`: not found), when that record was
/// first seen unchanged (`observed`) and the time now.
pub fn next(
    current: Option<&Record>,
    observed: Timestamp,
    me: &str,
    now: Timestamp,
    timings: &Timings,
) -> Step {
    let fresh = |acquire_time, transitions| Record {
        holder: me.to_owned(),
        lease_duration_seconds: i32::try_from(timings.lease_duration.as_secs()).unwrap_or(i32::MAX),
        acquire_time: Some(acquire_time),
        renew_time: Some(now),
        transitions,
    };
    let Some(current) = current else {
        return Step::Create(fresh(now, 0));
    };
    let held_by_other = !current.holder.is_empty() && current.holder != me;
    if held_by_other {
        // client-go: observedTime + leaseDuration > now, with the record's own duration.
        let duration =
            Duration::from_secs(u64::try_from(current.lease_duration_seconds).unwrap_or(0));
        let expires = observed
            .checked_add(jiff::SignedDuration::try_from(duration).unwrap_or_default())
            .unwrap_or(observed);
        if expires > now {
            return Step::Wait {
                holder: current.holder.clone(),
            };
        }
    }
    if current.holder == me {
        Step::Update(fresh(
            current.acquire_time.unwrap_or(now),
            current.transitions,
        ))
    } else {
        Step::Update(fresh(now, current.transitions.saturating_add(1)))
    }
}

/// The record a holder writes when it stops leading on purpose (client-go's `release`): no
/// holder, so a candidate takes over at its next try instead of after the lease duration.
pub fn released(current: &Record, now: Timestamp) -> Record {
    Record {
        holder: String::new(),
        lease_duration_seconds: 1,
        acquire_time: Some(now),
        renew_time: Some(now),
        transitions: current.transitions,
    }
}

/// Whether a holder whose last successful renew was at `renewed` still leads at `now`.
pub fn still_leading(renewed: Timestamp, now: Timestamp, timings: &Timings) -> bool {
    now.duration_since(renewed)
        < jiff::SignedDuration::try_from(timings.renew_deadline).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap()
    }

    fn held(by: &str, transitions: i32) -> Record {
        Record {
            holder: by.into(),
            lease_duration_seconds: 137,
            acquire_time: Some(t(0)),
            renew_time: Some(t(0)),
            transitions,
        }
    }

    /// Cases after client-go's TestTryAcquireOrRenew (leaderelection_test.go): acquire a missing
    /// lease, take over an expired one, wait for a fresh one, renew our own.
    #[test]
    fn acquire_or_renew() {
        let timings = Timings::default();
        struct Case {
            name: &'static str,
            current: Option<Record>,
            observed: i64,
            now: i64,
            want: Step,
        }
        let mine = |acquire: i64, now: i64, transitions: i32| Record {
            holder: "me".into(),
            lease_duration_seconds: 137,
            acquire_time: Some(t(acquire)),
            renew_time: Some(t(now)),
            transitions,
        };
        let cases = [
            Case {
                name: "no lease: create it",
                current: None,
                observed: 0,
                now: 5,
                want: Step::Create(mine(5, 5, 0)),
            },
            Case {
                name: "held by another, seen 10 s ago: wait",
                current: Some(held("other", 0)),
                observed: 0,
                now: 10,
                want: Step::Wait {
                    holder: "other".into(),
                },
            },
            Case {
                name: "held by another, seen 136 s ago: still wait",
                current: Some(held("other", 0)),
                observed: 0,
                now: 136,
                want: Step::Wait {
                    holder: "other".into(),
                },
            },
            Case {
                name: "held by another, unchanged for the lease duration: take over",
                current: Some(held("other", 3)),
                observed: 0,
                now: 137,
                want: Step::Update(mine(137, 137, 4)),
            },
            Case {
                name: "released (no holder): take it at once",
                current: Some(Record {
                    holder: String::new(),
                    ..held("", 2)
                }),
                observed: 100,
                now: 100,
                want: Step::Update(mine(100, 100, 3)),
            },
            Case {
                name: "ours: renew, keeping the acquire time and transitions",
                current: Some(held("me", 2)),
                observed: 0,
                now: 26,
                want: Step::Update(mine(0, 26, 2)),
            },
        ];
        for c in cases {
            let got = next(c.current.as_ref(), t(c.observed), "me", t(c.now), &timings);
            assert_eq!(got, c.want, "{}", c.name);
        }
    }

    /// The record's own duration counts, not ours: a holder that asked for 15 s is taken over
    /// after 15 s.
    #[test]
    fn the_holders_duration_counts() {
        let mut short = held("other", 0);
        short.lease_duration_seconds = 15;
        let timings = Timings::default();
        assert!(matches!(
            next(Some(&short), t(0), "me", t(14), &timings),
            Step::Wait { .. }
        ));
        assert!(matches!(
            next(Some(&short), t(0), "me", t(15), &timings),
            Step::Update(r) if r.holder == "me"
        ));
    }

    #[test]
    fn leading_ends_at_the_renew_deadline() {
        let timings = Timings::default();
        assert!(still_leading(t(0), t(106), &timings));
        assert!(!still_leading(t(0), t(107), &timings));
    }

    #[test]
    fn release_clears_the_holder() {
        let r = released(&held("me", 4), t(50));
        assert_eq!(r.holder, "");
        assert_eq!(r.lease_duration_seconds, 1);
        assert_eq!(r.transitions, 4);
    }

    /// client-go's NewLeaderElector checks.
    #[test]
    fn timings_are_checked() {
        assert!(Timings::default().check().is_ok());
        let s = Duration::from_secs;
        let bad = |l, r, p| Timings {
            lease_duration: s(l),
            renew_deadline: s(r),
            retry_period: s(p),
        };
        assert_eq!(
            bad(10, 10, 2).check(),
            Err(TimingsError::LeaseNotLongerThanRenew)
        );
        assert_eq!(
            bad(10, 6, 5).check(),
            Err(TimingsError::RenewWithoutJitterRoom)
        );
        assert!(bad(4, 3, 1).check().is_ok());
    }
}
