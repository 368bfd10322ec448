//! Typed condition status, and `metav1.Condition` updates that are a pure function of the time
//! passed in.
//!
//! Controllers decide a condition's status, reason and message; [`set_status_condition`] folds
//! that into the status's list the way apimachinery's `meta.SetStatusCondition` does and says
//! whether anything changed, so the shell writes status only when it must and tests can pin the
//! transition time without a clock.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A condition's `status`: the closed set `metav1.ConditionStatus` allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ConditionStatus {
    /// `"True"`.
    True,
    /// `"False"`.
    False,
    /// `"Unknown"`: the controller cannot tell (yet).
    Unknown,
}

impl ConditionStatus {
    /// The string the API uses.
    pub const fn as_str(self) -> &'static str {
        match self {
            ConditionStatus::True => "True",
            ConditionStatus::False => "False",
            ConditionStatus::Unknown => "Unknown",
        }
    }
}

impl From<bool> for ConditionStatus {
    fn from(value: bool) -> ConditionStatus {
        if value {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        }
    }
}

impl fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `status` string that is not one of `True`, `False`, `Unknown` (compared exactly, as the
/// API server's enum validation and Go's string comparisons do).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("condition status {0:?} is not one of True, False, Unknown")]
pub struct InvalidConditionStatus(pub String);

impl FromStr for ConditionStatus {
    type Err = InvalidConditionStatus;

    fn from_str(s: &str) -> Result<ConditionStatus, InvalidConditionStatus> {
        match s {
            "True" => Ok(ConditionStatus::True),
            "False" => Ok(ConditionStatus::False),
            "Unknown" => Ok(ConditionStatus::Unknown),
            other => Err(InvalidConditionStatus(other.to_string())),
        }
    }
}

#[cfg(feature = "condition")]
pub use with_k8s::{
    ConditionUpdate, find_status_condition, reworded_only, set_status_condition, status_of,
};

/// How often a status whose conditions only change wording is written: at most once per pace.
///
/// A rollout's probes reword their message several times a second while the verdict stays the
/// same ("missing .status.conditions", then "condition Available missing", then "updatedReplicas
/// … not yet …"); each wording written is one status write for the API server and, where a
/// parent mirrors the condition, one more for the parent. Holding rewordings back for a second
/// keeps the message at most a second behind while a change of status or reason is written at
/// once.
pub const REWORDING_PACE: std::time::Duration = std::time::Duration::from_secs(1);

/// How long a rewording-only status write waits, given how long ago the last status write was:
/// `None` to write now (no write remembered, or one at least [`REWORDING_PACE`] ago), else the
/// time left until the pace allows it.
pub fn pace_rewording(
    since_last_write: Option<std::time::Duration>,
) -> Option<std::time::Duration> {
    let since = since_last_write?;
    REWORDING_PACE
        .checked_sub(since)
        .filter(|left| !left.is_zero())
}

#[cfg(feature = "condition")]
mod with_k8s {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

    use super::ConditionStatus;

    /// What a controller decided about one condition type.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct ConditionUpdate<'a> {
        /// The condition `type`, e.g. `Progressing`.
        pub type_: &'a str,
        /// The new status.
        pub status: ConditionStatus,
        /// A CamelCase reason.
        pub reason: &'a str,
        /// A human-readable message (may be empty).
        pub message: &'a str,
        /// The `metadata.generation` the decision was based on.
        pub observed_generation: i64,
    }

    /// `meta.SetStatusCondition` with the clock passed in: sets `update` in `conditions` and
    /// returns whether anything changed.
    ///
    /// 1. No condition of that type yet: one is appended with `lastTransitionTime = now`.
    /// 2. Otherwise the existing entry is updated in place (the list keeps its order):
    ///    - `status` differs: status set and `lastTransitionTime = now`;
    ///    - `reason`, `message`, `observedGeneration` set where they differ.
    ///
    /// The message stored is [`crate::bounded_message`]'s: sanitized and cut to the 32768 bytes
    /// the API server accepts, as upstream cuts it.
    ///
    /// Guarantees: `lastTransitionTime` moves only when the status does, so a controller that
    /// re-decides the same status on every reconcile keeps the time it first took it; `false`
    /// means `conditions` is exactly as it was, so the caller can skip the status write — also
    /// when the message decided is longer than what was stored for it.
    ///
    /// Caveats: `metav1.Time` is written with whole seconds, so pass a `now` rounded (or
    /// truncated) to seconds if the result is compared with what the API server returns.
    pub fn set_status_condition(
        conditions: &mut Vec<Condition>,
        update: ConditionUpdate<'_>,
        now: &Time,
    ) -> bool {
        let status = update.status.as_str();
        let message = crate::message::bounded_message(update.message);
        let Some(existing) = conditions.iter_mut().find(|c| c.type_ == update.type_) else {
            conditions.push(Condition {
                type_: update.type_.to_string(),
                status: status.to_string(),
                reason: update.reason.to_string(),
                message: message.into_owned(),
                observed_generation: Some(update.observed_generation),
                last_transition_time: now.clone(),
            });
            return true;
        };
        let mut changed = false;
        if existing.status != status {
            existing.status = status.to_string();
            existing.last_transition_time = now.clone();
            changed = true;
        }
        if existing.reason != update.reason {
            existing.reason = update.reason.to_string();
            changed = true;
        }
        if existing.message != message {
            existing.message = message.into_owned();
            changed = true;
        }
        if existing.observed_generation != Some(update.observed_generation) {
            existing.observed_generation = Some(update.observed_generation);
            changed = true;
        }
        changed
    }

    /// Whether `new` differs from `old` only in the wording of condition messages: the same
    /// types in the same order, each with the same status, reason, observedGeneration and
    /// transition time, and at least one message changed. Such a change says nothing new about
    /// state, so a writer may pace it (see [`super::pace_rewording`]).
    pub fn reworded_only(old: &[Condition], new: &[Condition]) -> bool {
        old.len() == new.len()
            && old.iter().zip(new).all(|(o, n)| {
                o.type_ == n.type_
                    && o.status == n.status
                    && o.reason == n.reason
                    && o.observed_generation == n.observed_generation
                    && o.last_transition_time == n.last_transition_time
            })
            && old.iter().zip(new).any(|(o, n)| o.message != n.message)
    }

    /// `meta.FindStatusCondition`: the condition of type `type_`, if any.
    pub fn find_status_condition<'a>(
        conditions: &'a [Condition],
        type_: &str,
    ) -> Option<&'a Condition> {
        conditions.iter().find(|c| c.type_ == type_)
    }

    /// The typed status of the condition of type `type_`; `None` when it is absent or its status
    /// is not one of the three values (which the API server's validation does not let through).
    /// `status_of(c, t) == Some(ConditionStatus::True)` is `meta.IsStatusConditionTrue`.
    pub fn status_of(conditions: &[Condition], type_: &str) -> Option<ConditionStatus> {
        find_status_condition(conditions, type_).and_then(|c| c.status.parse().ok())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn at(seconds: i64) -> Time {
            Time(jiff::Timestamp::from_second(seconds).expect("a valid timestamp"))
        }

        fn update(status: ConditionStatus, reason: &'static str) -> ConditionUpdate<'static> {
            ConditionUpdate {
                type_: "Progressing",
                status,
                reason,
                message: "m",
                observed_generation: 1,
            }
        }

        fn existing() -> Vec<Condition> {
            vec![
                Condition {
                    type_: "Serving".into(),
                    status: "True".into(),
                    reason: "Available".into(),
                    message: "served".into(),
                    observed_generation: Some(1),
                    last_transition_time: at(10),
                },
                Condition {
                    type_: "Progressing".into(),
                    status: "True".into(),
                    reason: "Succeeded".into(),
                    message: "m".into(),
                    observed_generation: Some(1),
                    last_transition_time: at(10),
                },
            ]
        }

        /// apimachinery's `TestSetStatusCondition` cases: what changes, whether the transition
        /// time moves, and the `changed` result.
        #[test]
        fn set_status_condition_follows_apimachinery() {
            use ConditionStatus::{False, True, Unknown};
            struct Case {
                name: &'static str,
                update: ConditionUpdate<'static>,
                changed: bool,
                status: &'static str,
                reason: &'static str,
                message: &'static str,
                generation: i64,
                transition: i64,
            }
            let cases = [
                Case {
                    name: "same status, reason, message and generation: nothing changes",
                    update: update(True, "Succeeded"),
                    changed: false,
                    status: "True",
                    reason: "Succeeded",
                    message: "m",
                    generation: 1,
                    transition: 10,
                },
                Case {
                    name: "new reason, same status: time kept",
                    update: update(True, "Retrying"),
                    changed: true,
                    status: "True",
                    reason: "Retrying",
                    message: "m",
                    generation: 1,
                    transition: 10,
                },
                Case {
                    name: "new message, same status: time kept",
                    update: ConditionUpdate {
                        message: "other",
                        ..update(True, "Succeeded")
                    },
                    changed: true,
                    status: "True",
                    reason: "Succeeded",
                    message: "other",
                    generation: 1,
                    transition: 10,
                },
                Case {
                    name: "new generation, same status: time kept",
                    update: ConditionUpdate {
                        observed_generation: 2,
                        ..update(True, "Succeeded")
                    },
                    changed: true,
                    status: "True",
                    reason: "Succeeded",
                    message: "m",
                    generation: 2,
                    transition: 10,
                },
                Case {
                    name: "status flips: time moves",
                    update: update(False, "Blocked"),
                    changed: true,
                    status: "False",
                    reason: "Blocked",
                    message: "m",
                    generation: 1,
                    transition: 20,
                },
                Case {
                    name: "to Unknown: time moves",
                    update: update(Unknown, "Succeeded"),
                    changed: true,
                    status: "Unknown",
                    reason: "Succeeded",
                    message: "m",
                    generation: 1,
                    transition: 20,
                },
            ];
            for case in cases {
                let mut conditions = existing();
                let changed = set_status_condition(&mut conditions, case.update, &at(20));
                assert_eq!(changed, case.changed, "{}", case.name);
                assert_eq!(conditions.len(), 2, "{}", case.name);
                assert_eq!(
                    conditions[0],
                    existing()[0],
                    "{}: other types untouched",
                    case.name
                );
                let c = &conditions[1];
                assert_eq!(
                    (
                        c.status.as_str(),
                        c.reason.as_str(),
                        c.message.as_str(),
                        c.observed_generation,
                        c.last_transition_time.clone(),
                    ),
                    (
                        case.status,
                        case.reason,
                        case.message,
                        Some(case.generation),
                        at(case.transition),
                    ),
                    "{}",
                    case.name
                );
            }
        }

        #[test]
        fn a_new_type_is_appended_with_now() {
            let mut conditions = existing();
            let changed = set_status_condition(
                &mut conditions,
                ConditionUpdate {
                    type_: "Installed",
                    ..update(ConditionStatus::False, "Failed")
                },
                &at(30),
            );
            assert!(changed);
            assert_eq!(conditions.len(), 3);
            assert_eq!(
                conditions[2],
                Condition {
                    type_: "Installed".into(),
                    status: "False".into(),
                    reason: "Failed".into(),
                    message: "m".into(),
                    observed_generation: Some(1),
                    last_transition_time: at(30),
                }
            );
        }

        /// Every message is stored bounded, and deciding the same over-long message again is
        /// no change: comparing with the raw text would rewrite the status on every reconcile.
        #[test]
        fn messages_are_stored_bounded() {
            let long = format!("\u{0}{}", "é".repeat(crate::MAX_CONDITION_MESSAGE_LENGTH));
            let decided = ConditionUpdate {
                message: &long,
                ..update(ConditionStatus::True, "Succeeded")
            };
            let mut conditions = existing();
            assert!(set_status_condition(&mut conditions, decided, &at(20)));
            let stored = conditions[1].message.clone();
            assert_eq!(stored, crate::bounded_message(&long));
            assert!(stored.starts_with(r"\x00éé") && stored.ends_with(crate::TRUNCATION_SUFFIX));
            assert!(stored.len() <= crate::MAX_CONDITION_MESSAGE_LENGTH);
            assert!(!set_status_condition(&mut conditions, decided, &at(30)));
            let mut fresh = Vec::new();
            set_status_condition(&mut fresh, decided, &at(20));
            assert_eq!(fresh[0].message, stored, "a new condition too");
        }

        /// operator-controller `common_controller_test.go` `TestSetStatusConditionWrapper`
        /// (PR #2169): which messages the condition setter stores with the suffix.
        #[test]
        fn set_status_condition_wrapper_upstream_vectors() {
            let max = crate::MAX_CONDITION_MESSAGE_LENGTH;
            for (name, message, truncated) in [
                (
                    "short message not truncated",
                    "This is a short message".to_string(),
                    false,
                ),
                (
                    "long message gets truncated",
                    "This is a very long message. ".repeat(2000),
                    true,
                ),
                (
                    "message at exact limit not truncated",
                    "a".repeat(max),
                    false,
                ),
                (
                    "message over limit gets truncated",
                    "a".repeat(max + 1),
                    true,
                ),
            ] {
                let mut conditions = Vec::new();
                set_status_condition(
                    &mut conditions,
                    ConditionUpdate {
                        message: &message,
                        ..update(ConditionStatus::True, "Succeeded")
                    },
                    &at(20),
                );
                let got = &conditions[0].message;
                assert!(got.len() <= max, "{name}");
                assert_eq!(got.contains(crate::TRUNCATION_SUFFIX), truncated, "{name}");
                if !truncated {
                    assert_eq!(*got, message, "{name}");
                }
            }
        }

        #[test]
        fn an_absent_generation_counts_as_a_change() {
            let mut conditions = existing();
            conditions[1].observed_generation = None;
            assert!(set_status_condition(
                &mut conditions,
                update(ConditionStatus::True, "Succeeded"),
                &at(20)
            ));
            assert_eq!(conditions[1].observed_generation, Some(1));
            assert_eq!(conditions[1].last_transition_time, at(10));
        }

        #[test]
        fn only_a_changed_message_is_a_rewording() {
            let old = existing();
            assert!(!reworded_only(&old, &old), "no change at all");
            let mut new = existing();
            new[1].message = "other".into();
            assert!(reworded_only(&old, &new));
            type Change = fn(&mut Condition);
            let changes: [(&str, Change); 5] = [
                ("reason", |c| c.reason = "Retrying".into()),
                ("status", |c| c.status = "False".into()),
                ("generation", |c| c.observed_generation = Some(2)),
                ("transition time", |c| c.last_transition_time = at(30)),
                ("type", |c| c.type_ = "Available".into()),
            ];
            for (what, change) in changes {
                let mut more = new.clone();
                change(&mut more[1]);
                assert!(!reworded_only(&old, &more), "{what} changed too");
            }
            assert!(!reworded_only(&old, &new[..1]), "a condition dropped");
            let mut added = new.clone();
            added.push(old[0].clone());
            assert!(!reworded_only(&old, &added), "a condition added");
        }

        #[test]
        fn status_of_reads_typed_status() {
            let mut conditions = existing();
            assert_eq!(
                status_of(&conditions, "Serving"),
                Some(ConditionStatus::True)
            );
            assert_eq!(status_of(&conditions, "Installed"), None);
            conditions[0].status = "true".into();
            assert_eq!(status_of(&conditions, "Serving"), None);
            assert_eq!(
                find_status_condition(&conditions, "Progressing").map(|c| c.reason.as_str()),
                Some("Succeeded")
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewordings_wait_for_the_pace() {
        use std::time::Duration;
        assert_eq!(pace_rewording(None), None, "nothing written yet");
        assert_eq!(
            pace_rewording(Some(Duration::from_millis(300))),
            Some(Duration::from_millis(700))
        );
        assert_eq!(pace_rewording(Some(REWORDING_PACE)), None);
        assert_eq!(pace_rewording(Some(Duration::from_secs(5))), None);
    }

    #[test]
    fn status_strings_are_the_apis() {
        for (status, text) in [
            (ConditionStatus::True, "True"),
            (ConditionStatus::False, "False"),
            (ConditionStatus::Unknown, "Unknown"),
        ] {
            assert_eq!(status.as_str(), text);
            assert_eq!(status.to_string(), text);
            assert_eq!(text.parse::<ConditionStatus>(), Ok(status));
            assert_eq!(
                serde_json::to_value(status).expect("serializes"),
                serde_json::json!(text)
            );
            assert_eq!(
                serde_json::from_value::<ConditionStatus>(serde_json::json!(text))
                    .expect("deserializes"),
                status
            );
        }
        assert_eq!(ConditionStatus::from(true), ConditionStatus::True);
        assert_eq!(ConditionStatus::from(false), ConditionStatus::False);
        assert_eq!(
            "true".parse::<ConditionStatus>(),
            Err(InvalidConditionStatus("true".into()))
        );
        assert!(serde_json::from_value::<ConditionStatus>(serde_json::json!("TRUE")).is_err());
    }
}
