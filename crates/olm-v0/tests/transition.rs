//! The CSV phase machine, phase by phase, with upstream's reasons and messages (OLM repo
//! `pkg/controller/operators/olm/operator.go` `transitionCSVState`, `updateInstallStatus`;
//! olmv0.md §2.3).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use olm_v0::transition::{Facts, InstallStatus, Replaced, Step, StrategyProblem, next};
use olm_v0::{Phase, Reason};

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
        } => (*phase, *reason, message.as_str()),
        other => panic!("not a status change: {other:?}"),
    }
}

#[test]
fn none_and_pending() {
    assert_eq!(
        set_of(&next(&at(Phase::None))),
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
    assert!(matches!(
        step,
        Step::Set {
            retry: true,
            if_changed: true,
            ..
        }
    ));
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
        phase: Phase::Succeeded,
        upgradeable: Err("The operator is not upgradeable".into()),
    });
    assert_eq!(
        set_of(&next(&f)),
        (
            Phase::Pending,
            Reason::OperatorConditionNotUpgradeable,
            "operator is not upgradeable: The operator is not upgradeable"
        )
    );
    // Upgradeable, but the predecessor is not Replacing yet: wait for it.
    f.replaced = Some(Replaced {
        phase: Phase::Succeeded,
        upgradeable: Ok(()),
    });
    assert_eq!(next(&f), Step::Wait);
    f.replaced = Some(Replaced {
        phase: Phase::Replacing,
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
    f.replacement = Some(("etcd.v0.9.2".into(), Phase::Pending));
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
            reason: Some(reason),
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
    // Invalid strategy is reported once.
    let again = Facts {
        reason: Some(Reason::InvalidInstallStrategy),
        requirements: Some(Err("bad".into())),
        ..at(Phase::Failed)
    };
    assert_eq!(next(&again), Step::Wait);
    // Fail forward: a Failed CSV with a replacement moves on.
    f.fail_forward = true;
    f.replacement = Some(("v2".into(), Phase::Pending));
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
    f.replacement = Some(("v2".into(), Phase::Installing));
    assert_eq!(next(&f), Step::Wait);
    f.replacement = Some(("v2".into(), Phase::Succeeded));
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
