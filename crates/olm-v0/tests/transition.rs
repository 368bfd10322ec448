//! The CSV phase machine, phase by phase, with upstream's reasons and messages (OLM repo
//! `pkg/controller/operators/olm/operator.go` `transitionCSVState`, `updateInstallStatus`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use olm_v0::olm_operator::operatorcondition::NotUpgradeable;
use olm_v0::olm_operator::status::CsvStatus;
use olm_v0::olm_operator::transition::{
    Facts, InstallStatus, Replaced, Step, StrategyProblem, next,
};
use olm_v0_api::v1alpha1::{ClusterServiceVersionPhase as Phase, ConditionReason as Reason};

fn at(phase: Phase) -> Facts {
    Facts {
        phase: Some(phase),
        ..Facts::default()
    }
}

fn healthy() -> InstallStatus {
    InstallStatus {
        strategy: None,
        apiservices: Ok(true),
        webhooks: Ok(true),
    }
}

/// (phase, reason, message) of a `Set`, or panics.
fn set_of(step: &Step) -> (Phase, Reason, &str) {
    match step {
        Step::Set {
            phase,
            reason,
            message,
            ..
        } => (phase.clone(), reason.clone(), message.as_str()),
        other => panic!("not a status change: {other:?}"),
    }
}

#[test]
fn none_and_pending() {
    assert_eq!(
        set_of(&next(&Facts::default())),
        (
            Phase::Pending,
            Reason::RequirementsUnknown,
            "requirements not yet checked"
        )
    );
    let mut f = at(Phase::Pending);
    f.requirements = Some(Ok(false));
    let step = next(&f);
    assert_eq!(
        set_of(&step),
        (
            Phase::Pending,
            Reason::RequirementsNotMet,
            "one or more requirements couldn't be found"
        )
    );
    assert!(matches!(step, Step::Set { retry: true, .. }));
    f.requirements = Some(Err("bad rule".into()));
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Failed,
            Reason::InvalidInstallStrategy,
            "install strategy invalid: bad rule"
        )
    );
    f.requirements = Some(Ok(true));
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::InstallReady,
            Reason::AllRequirementsMet,
            "all requirements found, attempting install"
        )
    );
    f.webhook_problem = Some("CSV contains repeated WebhookDescription name".into());
    assert_eq!(set_of(&next(&f)).1, Reason::InvalidWebhookDescription);
    f.webhook_problem = None;
    f.owner_conflict = Some("conflicting CRD owner in namespace".into());
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Failed,
            Reason::OwnerConflict,
            "conflicting CRD owner in namespace"
        )
    );
}

#[test]
fn replacement_chain_in_pending() {
    let mut f = at(Phase::Pending);
    f.requirements = Some(Ok(true));
    f.replaced = Some(Replaced {
        phase: Some(Phase::Succeeded),
        upgradeable: Err(NotUpgradeable::Said("migrating storage".into())),
    });
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Pending,
            Reason::OperatorConditionNotUpgradeable,
            "operator is not upgradeable: The operator is not upgradeable: migrating storage"
        )
    );
    // An Upgradeable condition the operator has not reported for the current generation:
    // upstream's words with upstream's prefix and nothing more (OLM repo
    // `pkg/controller/operators/olm/operatorconditions.go` `isOperatorUpgradeable`, and
    // `operator.go` `transitionCSVState`: `fmt.Sprintf("operator is not upgradeable: %s", condErr)`).
    let stale: olm_v0_api::v2::OperatorCondition = serde_json::from_value(serde_json::json!({
        "apiVersion": "operators.coreos.com/v2",
        "kind": "OperatorCondition",
        "metadata": {"name": "etcd.v1", "generation": 2},
        "spec": {},
        "status": {"conditions": [{"type": "Upgradeable", "status": "False", "reason": "Migrating",
            "message": "migrating", "observedGeneration": 1,
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
    }))
    .unwrap_or_else(|e| panic!("a test OperatorCondition: {e}"));
    f.replaced = Some(Replaced {
        phase: Some(Phase::Succeeded),
        upgradeable: olm_v0::olm_operator::operatorcondition::upgradeable(Some(&stale)),
    });
    assert_eq!(
        set_of(&next(&f)).2,
        r#"operator is not upgradeable: The operatorcondition status "Upgradeable"="False" is outdated"#
    );
    // Upgradeable, but the predecessor is not Replacing yet: wait for it.
    f.replaced = Some(Replaced {
        phase: Some(Phase::Succeeded),
        upgradeable: Ok(()),
    });
    assert_eq!(next(&f), Step::Wait);
    f.replaced = Some(Replaced {
        phase: Some(Phase::Replacing),
        upgradeable: Ok(()),
    });
    assert_eq!(set_of(&next(&f)).0, Phase::InstallReady);
}

#[test]
fn install_ready_installs_then_reports() {
    let mut f = at(Phase::InstallReady);
    assert_eq!(next(&f), Step::Install);
    f.install_outcome = Some(Ok(()));
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Installing,
            Reason::InstallSucceeded,
            "waiting for install components to report healthy"
        )
    );
    f.install_outcome = Some(Err(("deployments.apps is forbidden".into(), false)));
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Failed,
            Reason::InstallComponentFailed,
            "install strategy failed: deployments.apps is forbidden"
        )
    );
    f.install_outcome = Some(Err(("timeout".into(), true)));
    assert_eq!(set_of(&next(&f)).1, Reason::InstallComponentFailedNoRetry);
    // A CSV failed for good is left alone until something resets it.
    let stuck = Facts {
        reason: Some(Reason::InstallComponentFailedNoRetry),
        ..at(Phase::Failed)
    };
    assert_eq!(next(&stuck), Step::Wait);
}

#[test]
fn installing_waits_succeeds_or_times_out() {
    let mut f = at(Phase::Installing);
    f.install_status = Some(healthy());
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Succeeded,
            Reason::InstallSucceeded,
            "install strategy completed with no errors"
        )
    );
    let waiting = InstallStatus {
        strategy: Some(StrategyProblem::Waiting(
            "waiting for deployment x to become ready".into(),
        )),
        ..healthy()
    };
    f.install_status = Some(waiting);
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Installing,
            Reason::InstallWaiting,
            "installing: waiting for deployment x to become ready"
        )
    );
    f.since_transition = Some(Duration::from_secs(301));
    assert_eq!(
        set_of(&next(&f)),
        (Phase::Failed, Reason::InstallCheckFailed, "install timeout")
    );
    // A re-apply is not timed out: it changes the phase.
    f.install_status = Some(InstallStatus {
        strategy: Some(StrategyProblem::Reinstall(
            "deployment changed old hash=a, new hash=b".into(),
        )),
        ..healthy()
    });
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::InstallReady,
            Reason::InstallWaiting,
            "installing: deployment changed old hash=a, new hash=b"
        )
    );
    f.since_transition = None;
    f.install_status = Some(InstallStatus {
        strategy: Some(StrategyProblem::Unrecoverable(
            "deployment \"x\" exceeded its progress deadline".into(),
        )),
        ..healthy()
    });
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Failed,
            Reason::InstallCheckFailed,
            "install failed: deployment \"x\" exceeded its progress deadline"
        )
    );
    f.install_status = Some(InstallStatus {
        apiservices: Ok(false),
        ..healthy()
    });
    assert_eq!(set_of(&next(&f)).2, "apiServices not installed");
    f.install_status = Some(InstallStatus {
        apiservices: Err(("pods restarting".into(), true)),
        ..healthy()
    });
    assert_eq!(next(&f), Step::RequeueAfter(Duration::from_secs(10)));
    f.install_status = Some(InstallStatus {
        webhooks: Ok(false),
        ..healthy()
    });
    assert_eq!(set_of(&next(&f)).2, "webhooks not installed");
    f.deployment_unbuildable = true;
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Pending,
            Reason::NeedsReinstall,
            "calculated deployment install is bad"
        )
    );
}

#[test]
fn succeeded_watches_for_replacements_and_regressions() {
    let mut f = at(Phase::Succeeded);
    f.requirements = Some(Ok(true));
    f.install_status = Some(healthy());
    assert_eq!(set_of(&next(&f)).0, Phase::Succeeded);
    f.install_status = Some(InstallStatus {
        strategy: Some(StrategyProblem::Waiting(
            "deployment \"x\" not available: lost".into(),
        )),
        ..healthy()
    });
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Failed,
            Reason::ComponentUnhealthy,
            "installing: deployment \"x\" not available: lost"
        )
    );
    f.requirements = Some(Ok(false));
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Failed,
            Reason::RequirementsNotMet,
            "requirements no longer met"
        )
    );
    f.replacement = Some(("etcd.v0.9.2".into(), Some(Phase::Pending)));
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Replacing,
            Reason::BeingReplaced,
            "being replaced by csv: etcd.v0.9.2"
        )
    );
}

#[test]
fn failed_heals_or_fails_forward() {
    for (reason, message) in [
        (
            Reason::NoOperatorGroup,
            "InstallModes now support target namespaces",
        ),
        (
            Reason::UnsupportedOperatorGroup,
            "InstallModes now support target namespaces",
        ),
        (
            Reason::InterOperatorGroupOwnerConflict,
            "OperatorGroup no longer intersecting with conflicting owner",
        ),
        (
            Reason::CannotModifyStaticOperatorGroupProvidedApis,
            "static OperatorGroup and intersecting groups now support providedAPIs",
        ),
    ] {
        let f = Facts {
            reason: Some(reason.clone()),
            ..at(Phase::Failed)
        };
        assert_eq!(
            set_of(&next(&f)),
            (Phase::Pending, Reason::RequirementsUnknown, message),
            "{reason}"
        );
    }
    let mut f = Facts {
        reason: Some(Reason::ComponentUnhealthy),
        ..at(Phase::Failed)
    };
    f.requirements = Some(Ok(false));
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Pending,
            Reason::RequirementsNotMet,
            "requirements not met"
        )
    );
    f.requirements = Some(Ok(true));
    f.install_status = Some(InstallStatus {
        strategy: Some(StrategyProblem::Waiting("waiting".into())),
        ..healthy()
    });
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Pending,
            Reason::NeedsReinstall,
            "installing: waiting"
        )
    );
    // Fail forward: a Failed CSV with a replacement moves on.
    f.fail_forward = true;
    f.replacement = Some(("v2".into(), Some(Phase::Pending)));
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Replacing,
            Reason::BeingReplaced,
            "Fail Forward is enabled, allowing Failed csv to be replaced by csv: v2"
        )
    );
}

#[test]
fn replacing_and_deleting() {
    let mut f = at(Phase::Replacing);
    assert_eq!(
        next(&f),
        Step::Error("marked as replacement, but no replacement CSV found in cluster".into())
    );
    f.replacement = Some(("v2".into(), Some(Phase::Installing)));
    assert_eq!(next(&f), Step::Wait);
    f.replacement = Some(("v2".into(), Some(Phase::Succeeded)));
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Deleting,
            Reason::Replaced,
            "has been replaced by a newer ClusterServiceVersion that has successfully installed."
        )
    );
    // Only the oldest of a chain acts.
    f.replaces_existing = true;
    assert_eq!(next(&f), Step::Wait);
    assert_eq!(next(&at(Phase::Deleting)), Step::Delete);
}

/// The status a CSV settles in: applying the step changes nothing, so the shell writes nothing
/// and records no Event.
fn settled(status: &mut CsvStatus, f: &Facts) -> bool {
    let step = next(f);
    let (phase, reason, message) = set_of(&step);
    status
        .set_phase_if_changed(phase, reason, message, "later")
        .is_none()
}

/// Runs the machine from `start` on `facts` (the phase and reason taken from the status each
/// pass) until a pass changes nothing, and returns the status; panics after 20 passes — a CSV
/// that never settles.
fn run_until_settled(facts: &Facts) -> CsvStatus {
    let mut status = CsvStatus::default();
    for _ in 0..20 {
        let f = Facts {
            phase: status.phase.clone(),
            reason: status.reason.clone(),
            never_installed: !status.installed_once(),
            ..facts.clone()
        };
        match next(&f) {
            Step::Set {
                phase,
                reason,
                message,
                ..
            } => {
                if status
                    .set_phase_if_changed(phase, reason, &message, "now")
                    .is_none()
                {
                    return status;
                }
            }
            Step::Install => panic!("installs: {status:?}"),
            _ => return status,
        }
    }
    panic!("never settles: {:#?}", status.conditions);
}

/// A CSV whose webhook rules OLM refuses, or whose install strategy it cannot read, stays
/// Failed with that reason: no pass through Pending (upstream's certificate check finds the
/// never-issued certificate due, its reinstall check the never-built Deployment bad, and each
/// sends it back to Pending where it fails again).
#[test]
fn terminal_failures_settle() {
    // What the shell sees of a CSV that never installed: certificates missing (so "due"), the
    // Deployment not buildable without them.
    let never_built = Facts {
        cert_rotation_due: true,
        deployment_unbuildable: true,
        ..Facts::default()
    };
    let refused = Facts {
        requirements: Some(Ok(true)),
        webhook_problem: Some("Webhook rules cannot include all groups".into()),
        ..never_built.clone()
    };
    let status = run_until_settled(&refused);
    assert_eq!(
        (
            status.phase.as_ref(),
            status.reason.as_ref(),
            status.message.as_str()
        ),
        (
            Some(&Phase::Failed),
            Some(&Reason::InvalidWebhookDescription),
            "Webhook rules cannot include all groups"
        )
    );
    let history: Vec<_> = status.conditions.iter().map(|c| c.phase.as_ref()).collect();
    assert_eq!(history, [Some(&Phase::Pending), Some(&Phase::Failed)]);

    let unknown_strategy = Facts {
        requirements: Some(Err("unrecognized install strategy".into())),
        ..never_built.clone()
    };
    let status = run_until_settled(&unknown_strategy);
    assert_eq!(
        (
            status.phase.as_ref(),
            status.reason.as_ref(),
            status.message.as_str()
        ),
        (
            Some(&Phase::Failed),
            Some(&Reason::InvalidInstallStrategy),
            "install strategy invalid: unrecognized install strategy"
        )
    );

    // Settled however often it is looked at, and for a CSV that did install once too.
    for installed in [false, true] {
        let mut status = run_until_settled(&refused);
        let f = Facts {
            phase: Some(Phase::Failed),
            reason: Some(Reason::InvalidWebhookDescription),
            never_installed: !installed,
            ..refused.clone()
        };
        assert!(settled(&mut status, &f));
        let mut status = run_until_settled(&unknown_strategy);
        let f = Facts {
            phase: Some(Phase::Failed),
            reason: Some(Reason::InvalidInstallStrategy),
            never_installed: !installed,
            ..unknown_strategy.clone()
        };
        assert!(settled(&mut status, &f));
    }

    // Another operator's CRD: Failed, retried until it is gone, never Pending meanwhile.
    let conflict = Facts {
        phase: Some(Phase::Failed),
        reason: Some(Reason::OwnerConflict),
        requirements: Some(Ok(true)),
        owner_conflict: Some("conflicting CRD owner in namespace".into()),
        never_installed: true,
        ..never_built.clone()
    };
    assert_eq!(
        next(&conflict),
        Step::Set {
            phase: Phase::Failed,
            reason: Reason::OwnerConflict,
            message: "conflicting CRD owner in namespace".into(),
            retry: true,
        }
    );
}

/// Once its input changes, a CSV that failed before it ever installed is checked afresh from
/// Pending — not "repaired" with certificates or a reinstall it never had.
#[test]
fn never_installed_is_checked_afresh() {
    for reason in [
        Reason::InvalidWebhookDescription,
        Reason::InvalidInstallStrategy,
        Reason::OwnerConflict,
    ] {
        let f = Facts {
            reason: Some(reason.clone()),
            requirements: Some(Ok(true)),
            never_installed: true,
            cert_rotation_due: true,
            deployment_unbuildable: true,
            ..at(Phase::Failed)
        };
        assert_eq!(
            set_of(&next(&f)),
            (
                Phase::Pending,
                Reason::RequirementsUnknown,
                "requirements not yet checked"
            ),
            "{reason}"
        );
        // One that installed once is repaired, as upstream does.
        let installed = Facts {
            never_installed: false,
            ..f
        };
        assert_eq!(set_of(&next(&installed)).1, Reason::NeedsCertRotation);
    }
}

/// A failed install waits one backoff step (1 s doubling to 30 s) before it is tried again.
#[test]
fn failed_install_backs_off() {
    let f = |attempts, since| Facts {
        reason: Some(Reason::InstallComponentFailed),
        requirements: Some(Ok(true)),
        never_installed: true,
        install_failures: Some((attempts, Duration::from_millis(since))),
        ..at(Phase::Failed)
    };
    assert_eq!(
        next(&f(1, 400)),
        Step::RequeueAfter(Duration::from_millis(600))
    );
    assert_eq!(next(&f(3, 0)), Step::RequeueAfter(Duration::from_secs(4)));
    assert_eq!(
        next(&f(9, 1_000)),
        Step::RequeueAfter(Duration::from_secs(29))
    );
    // The step waited out: installed again, from Failed.
    assert_eq!(next(&f(3, 4_000)), Step::Install);
    // No failure recorded by this process (it restarted): tried again at once.
    let fresh = Facts {
        install_failures: None,
        ..f(1, 0)
    };
    assert_eq!(next(&fresh), Step::Install);
    // Failing the same way again changes nothing (no write, no Event) and backs off further;
    // succeeding moves on.
    let mut status = CsvStatus::default();
    status.set_phase(
        Phase::Failed,
        Reason::InstallComponentFailed,
        "install strategy failed: no deployment named ghost in the install strategy",
        "t",
    );
    let again = Facts {
        install_outcome: Some(Err((
            "no deployment named ghost in the install strategy".into(),
            false,
        ))),
        ..fresh.clone()
    };
    assert!(matches!(next(&again), Step::Set { retry: true, .. }));
    assert!(settled(&mut status, &again));
    let done = Facts {
        install_outcome: Some(Ok(())),
        ..fresh
    };
    assert_eq!(
        set_of(&next(&done)),
        (
            Phase::Installing,
            Reason::InstallSucceeded,
            "waiting for install components to report healthy"
        )
    );
    // Requirements that went missing meanwhile send it to Pending first.
    let unmet = Facts {
        requirements: Some(Ok(false)),
        ..f(3, 4_000)
    };
    assert_eq!(set_of(&next(&unmet)).0, Phase::Pending);
}

/// How a pass ends: a phase change is written once with its Event, an unchanged one is not; an
/// `Installing` CSV comes back when its install timeout is up; a renewal due sooner wins.
#[test]
fn a_pass_ends_as_its_step_says() {
    use olm_v0::olm_operator::transition::conclude;
    let installing = Step::Set {
        phase: Phase::Installing,
        reason: Reason::InstallSucceeded,
        message: "waiting for install components to report healthy".to_owned(),
        retry: false,
    };
    let entered = conclude(
        installing.clone(),
        CsvStatus::default(),
        None,
        false,
        None,
        "t1",
    );
    assert!(entered.write && entered.event.is_some());
    assert_eq!(entered.requeue, Some(Duration::from_secs(301)));
    let still = conclude(
        installing,
        entered.status.clone(),
        Some(Duration::from_secs(100)),
        false,
        Some(Duration::from_secs(60)),
        "t2",
    );
    assert!(!still.write && still.event.is_none());
    assert_eq!(still.status, entered.status, "nothing is restamped");
    assert_eq!(
        still.requeue,
        Some(Duration::from_secs(60)),
        "the renewal is sooner"
    );
    let waited = conclude(Step::Wait, entered.status.clone(), None, true, None, "t3");
    assert!(waited.write, "new requirement statuses are written");
    assert_eq!(waited.requeue, None);
    let failed = conclude(
        Step::Error("no group".to_owned()),
        CsvStatus::default(),
        None,
        false,
        Some(Duration::from_secs(5)),
        "t4",
    );
    assert_eq!(failed.retry.as_deref(), Some("no group"));
    let deleted = conclude(Step::Delete, CsvStatus::default(), None, true, None, "t5");
    assert!(deleted.delete && !deleted.write);
}
