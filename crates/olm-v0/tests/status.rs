//! CSV phase bookkeeping against the API repo's vectors
//! (`pkg/operators/v1alpha1/clusterserviceversion_test.go`: `TestSetPhase`, `TestIsObsolete`,
//! `TestSetPhaseWithConditions`, `TestIsCopied`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use olm_v0::olm_operator::status::{
    CONDITIONS_LIMIT, CsvCondition, CsvStatus, is_copied, uncopiable,
};
use olm_v0_api::v1alpha1::{ClusterServiceVersionPhase as Phase, ConditionReason as Reason};

const NOW: &str = "2026-01-01T00:00:00Z";

/// A phase as upstream's vectors spell it: `""` is the empty phase, no value.
fn phase(text: &str) -> Option<Phase> {
    (!text.is_empty()).then(|| text.into())
}

/// A reason as upstream's vectors spell it: `""` is none.
fn reason(text: &str) -> Option<Reason> {
    (!text.is_empty()).then(|| text.into())
}

fn cond(phase_text: &str, reason_text: &str) -> CsvCondition {
    CsvCondition {
        phase: phase(phase_text),
        reason: reason(reason_text),
        ..CsvCondition::default()
    }
}

/// `TestSetPhase`.
#[test]
fn set_phase() {
    let cases = [
        ("NoPhase", "", vec![], Phase::Pending),
        (
            "SamePhase",
            "Pending",
            vec![cond("Pending", "")],
            Phase::Pending,
        ),
        (
            "DifferentPhase",
            "Pending",
            vec![cond("Pending", "")],
            Phase::Installing,
        ),
    ];
    for (name, from, conditions, to) in cases {
        let mut st = CsvStatus {
            phase: phase(from),
            conditions,
            ..CsvStatus::default()
        };
        st.set_phase(to.clone(), Reason::RequirementsUnknown, "test", NOW);
        assert_eq!(st.phase, Some(to), "{name}");
        assert_eq!(st.last_update_time.as_deref(), Some(NOW), "{name}");
    }
}

/// `TestIsObsolete`.
#[test]
fn obsolete() {
    let cases = [
        ("NoPhase", "", vec![], false),
        ("Pending", "Pending", vec![cond("Pending", "")], false),
        (
            "Replacing",
            "Replacing",
            vec![cond("Replacing", "BeingReplaced")],
            true,
        ),
        (
            "CSVPhaseDeleting",
            "Deleting",
            vec![cond("Deleting", "Replaced")],
            true,
        ),
    ];
    for (name, from, conditions, want) in cases {
        let st = CsvStatus {
            phase: phase(from),
            conditions,
            ..CsvStatus::default()
        };
        assert_eq!(st.is_obsolete(), want, "{name}");
    }
}

/// `TestSetPhaseWithConditions`: (name, entries before, index of the first kept entry).
#[test]
fn history_is_trimmed_to_the_limit() {
    let cases = [
        (
            "TestSetPhaseWithConditionsLengthAtLimit",
            CONDITIONS_LIMIT,
            1,
        ),
        (
            "TestSetPhaseWithConditionsLengthBelowLimit",
            CONDITIONS_LIMIT - 1,
            0,
        ),
        (
            "TestSetPhaseWithConditionsLimitExceeded",
            CONDITIONS_LIMIT + 10,
            11,
        ),
    ];
    for (name, length, start) in cases {
        let before: Vec<CsvCondition> = (0..length)
            .map(|i| cond(&format!("phase-{i}"), &format!("reason-{i}")))
            .collect();
        let mut st = CsvStatus {
            conditions: before.clone(),
            ..CsvStatus::default()
        };
        st.set_phase(Phase::Pending, Reason::RequirementsUnknown, "message", NOW);
        assert_eq!(st.conditions.len(), CONDITIONS_LIMIT, "{name}");
        assert_eq!(
            &st.conditions[..CONDITIONS_LIMIT - 1],
            &before[start..],
            "{name}"
        );
        assert_eq!(
            st.conditions.last(),
            Some(&CsvCondition {
                phase: Some(Phase::Pending),
                reason: Some(Reason::RequirementsUnknown),
                message: "message".into(),
                last_update_time: Some(NOW.into()),
                last_transition_time: Some(NOW.into()),
            }),
            "{name}"
        );
    }
}

/// A history entry is added only when phase or reason change; the transition time moves only
/// with the phase; events are Warnings for Failed; an unchanged status records nothing.
#[test]
fn history_events_and_times() {
    let mut st = CsvStatus::default();
    let e = st.set_phase_with_event(
        Phase::Pending,
        Reason::RequirementsUnknown,
        "requirements not yet checked",
        "t1",
    );
    assert_eq!(e.type_, "Normal");
    st.set_phase(
        Phase::Pending,
        Reason::RequirementsUnknown,
        "another message",
        "t2",
    );
    assert_eq!(st.conditions.len(), 1);
    assert_eq!(st.last_transition_time.as_deref(), Some("t1"));
    assert_eq!(st.last_update_time.as_deref(), Some("t2"));
    st.set_phase(
        Phase::Pending,
        Reason::RequirementsNotMet,
        "one or more requirements couldn't be found",
        "t3",
    );
    assert_eq!(st.conditions.len(), 2);
    assert_eq!(st.last_transition_time.as_deref(), Some("t1"));
    let e = st
        .set_phase_if_changed(
            Phase::Failed,
            Reason::NoOperatorGroup,
            "csv in namespace with no operatorgroups",
            "t4",
        )
        .expect("changed");
    assert_eq!(e.type_, "Warning");
    assert_eq!(e.reason, "NoOperatorGroup");
    assert_eq!(st.last_transition_time.as_deref(), Some("t4"));
    assert!(
        st.set_phase_if_changed(
            Phase::Failed,
            Reason::NoOperatorGroup,
            "csv in namespace with no operatorgroups",
            "t5"
        )
        .is_none()
    );
    assert_eq!(st.last_update_time.as_deref(), Some("t4"));
    assert!(st.is_uncopiable());
    assert!(CsvStatus::default().is_uncopiable());
}

/// Only a CSV that reached Installing counts as installed; a history of failures before the
/// install does not.
#[test]
fn installed_once() {
    let mut st = CsvStatus::default();
    assert!(!st.installed_once());
    for (phase, reason) in [
        (Phase::Pending, Reason::RequirementsUnknown),
        (Phase::Failed, Reason::InvalidWebhookDescription),
        (Phase::InstallReady, Reason::AllRequirementsMet),
        (Phase::Failed, Reason::InstallComponentFailed),
    ] {
        let what = format!("{phase}/{reason}");
        st.set_phase(phase, reason, "m", NOW);
        assert!(!st.installed_once(), "{what}");
    }
    st.set_phase(Phase::Installing, Reason::InstallSucceeded, "m", NOW);
    assert!(st.installed_once());
    st.set_phase(Phase::Failed, Reason::InstallCheckFailed, "m", NOW);
    assert!(st.installed_once());
    // Only the phase is known (a status without history): the phase decides.
    let bare = CsvStatus {
        phase: Some(Phase::Succeeded),
        ..CsvStatus::default()
    };
    assert!(bare.installed_once());
}

/// `TestIsCopied`.
#[test]
fn copied() {
    let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    };
    let none = BTreeMap::new();
    let cases = [
        (
            "no labels or annotations",
            "",
            none.clone(),
            none.clone(),
            false,
        ),
        (
            "no labels, has operatorgroup namespace annotation matching self",
            "whatever",
            map(&[("olm.operatorNamespace", "whatever")]),
            none.clone(),
            false,
        ),
        (
            "no labels, has operatorgroup namespace annotation not matching self",
            "whatever",
            map(&[("olm.operatorNamespace", "other")]),
            none.clone(),
            true,
        ),
        (
            "no annotations, labels has copied key",
            "",
            none.clone(),
            map(&[("olm.copiedFrom", "whatever")]),
            true,
        ),
    ];
    for (name, ns, annotations, labels, want) in cases {
        assert_eq!(is_copied(ns, None, &annotations, &labels), want, "{name}");
    }
    assert!(is_copied("ns", Some(&Reason::Copied), &none, &none));
}

/// `IsUncopiable`: the empty phase — absent, or `""` as another client may write it — or a
/// reason of a copy or of a failed OperatorGroup check.
#[test]
fn uncopiable_phases_and_reasons() {
    assert!(uncopiable(&Reason::Copied));
    assert!(uncopiable(
        &Reason::CannotModifyStaticOperatorGroupProvidedApis
    ));
    assert!(!uncopiable(&Reason::InstallSucceeded));
    assert!(!uncopiable(&Reason::Other("Copied ".into())));
    let with = |phase: Option<Phase>, reason: Option<Reason>| CsvStatus {
        phase,
        reason,
        ..CsvStatus::default()
    };
    assert!(with(None, None).is_uncopiable());
    assert!(with(Some(Phase::Other(String::new())), None).is_uncopiable());
    assert!(!with(Some(Phase::Other("Bogus".into())), None).is_uncopiable());
    assert!(!with(Some(Phase::Succeeded), Some(Reason::InstallSucceeded)).is_uncopiable());
    assert!(with(Some(Phase::Failed), Some(Reason::NoOperatorGroup)).is_uncopiable());
}

/// A phase message is stored bounded (upstream's 32768 bytes and suffix, raw bytes escaped) in
/// the status and its history, the Event gets what a note may hold, and setting the same
/// over-long message again is no change — comparing with the raw text would rewrite the status
/// on every sync.
#[test]
fn long_messages_are_bounded_and_stable() {
    let long = format!(
        "install strategy failed: \u{1}{}",
        "x".repeat(olm_k8s::MAX_CONDITION_MESSAGE_LENGTH)
    );
    let mut status = CsvStatus::default();
    let event =
        status.set_phase_with_event(Phase::Failed, Reason::InstallComponentFailed, &long, NOW);
    assert_eq!(status.message, olm_k8s::bounded_message(&long));
    assert!(
        status
            .message
            .starts_with(r"install strategy failed: \x01xxx")
    );
    assert!(status.message.ends_with(olm_k8s::TRUNCATION_SUFFIX));
    assert_eq!(status.message.len(), olm_k8s::MAX_CONDITION_MESSAGE_LENGTH);
    assert_eq!(status.conditions[0].message, status.message);
    assert_eq!(event.message.len(), olm_k8s::EVENT_NOTE_LIMIT);
    assert_eq!(
        status.set_phase_if_changed(Phase::Failed, Reason::InstallComponentFailed, &long, NOW),
        None
    );
}

/// The status as stored reads with its times as the API server writes them (to the second,
/// UTC), the empty phase kept as written, and no status as the empty one.
#[test]
fn read_from_the_stored_status() {
    let status: olm_v0_api::v1alpha1::ClusterServiceVersionStatus =
        serde_json::from_value(serde_json::json!({
            "phase": "Succeeded",
            "reason": "InstallSucceeded",
            "message": "install strategy completed with no errors",
            "lastUpdateTime": "2026-01-01T00:00:01.5Z",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "conditions": [
                {"phase": "", "lastTransitionTime": "2025-12-31T23:59:59Z"},
                {"phase": "Succeeded", "reason": "InstallSucceeded", "message": "done"},
            ],
        }))
        .unwrap();
    let read = CsvStatus::read(Some(&status));
    assert_eq!(read.phase, Some(Phase::Succeeded));
    assert_eq!(read.reason, Some(Reason::InstallSucceeded));
    assert_eq!(read.message, "install strategy completed with no errors");
    assert_eq!(
        read.last_update_time.as_deref(),
        Some("2026-01-01T00:00:01Z")
    );
    assert_eq!(read.last_transition_time.as_deref(), Some(NOW));
    assert_eq!(
        read.conditions,
        [
            CsvCondition {
                phase: Some(Phase::Other(String::new())),
                last_transition_time: Some("2025-12-31T23:59:59Z".into()),
                ..CsvCondition::default()
            },
            CsvCondition {
                phase: Some(Phase::Succeeded),
                reason: Some(Reason::InstallSucceeded),
                message: "done".into(),
                ..CsvCondition::default()
            },
        ]
    );
    assert_eq!(CsvStatus::read(None), CsvStatus::default());
}
