//! Deployment readiness against the OLM repo's vectors
//! (`pkg/controller/install/status_viewer_test.go`, `TestDeploymentStatusViewerStatus`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use olm_v0::olm_operator::deployment::{DeploymentCondition, DeploymentFacts, Rollout, rollout};

fn cond(type_: &str, status: &str, reason: &str, message: &str) -> DeploymentCondition {
    DeploymentCondition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
    }
}

#[test]
fn status_viewer() {
    let foo = |generation: i64,
               replicas: i32,
               updated: i32,
               conditions: Vec<DeploymentCondition>| DeploymentFacts {
        name: "foo".into(),
        generation,
        observed_generation: 0,
        replicas,
        updated_replicas: updated,
        conditions,
    };
    let cases = [
        (
            foo(
                0,
                0,
                0,
                vec![cond("Progressing", "", "ProgressDeadlineExceeded", "")],
            ),
            Rollout::TimedOut("deployment \"foo\" exceeded its progress deadline".into()),
        ),
        (
            foo(
                0,
                0,
                0,
                vec![
                    cond("Progressing", "", "NotTimedOut", ""),
                    cond("Available", "True", "", ""),
                ],
            ),
            Rollout::Done("deployment \"foo\" is up-to-date and available".into()),
        ),
        (
            foo(1, 0, 0, vec![]),
            Rollout::Waiting(
                "waiting for spec update of deployment \"foo\" to be observed...".into(),
            ),
        ),
        (
            foo(0, 5, 3, vec![]),
            Rollout::Waiting(
                "deployment \"foo\" waiting for 2 outdated replica(s) to be terminated".into(),
            ),
        ),
        (
            foo(0, 0, 0, vec![]),
            Rollout::Waiting(
                "deployment \"foo\" not available: missing condition \"Available\"".into(),
            ),
        ),
        (
            foo(
                0,
                0,
                0,
                vec![cond("Available", "False", "", "test message")],
            ),
            Rollout::Waiting("deployment \"foo\" not available: test message".into()),
        ),
        (
            foo(
                0,
                0,
                0,
                vec![cond("Available", "Unknown", "", "test message")],
            ),
            Rollout::Waiting("deployment \"foo\" not available: test message".into()),
        ),
        (
            foo(0, 0, 0, vec![cond("Available", "True", "", "")]),
            Rollout::Done("deployment \"foo\" is up-to-date and available".into()),
        ),
    ];
    for (i, (facts, want)) in cases.into_iter().enumerate() {
        assert_eq!(rollout(&facts), want, "case {}", i + 1);
    }
}
