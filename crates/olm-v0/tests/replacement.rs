//! A new CSV waiting for the CSV it replaces: it says so, rather than keep an earlier reason
//! (`RequirementsNotMet` while every requirement is present).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use olm_v0::olm_operator::transition::{Facts, Replaced, Step, next, waiting_message};
use olm_v0_api::v1alpha1::{ClusterServiceVersionPhase as Phase, ConditionReason as Reason};

fn waiting_on(phase: Phase) -> Step {
    next(&Facts {
        phase: Some(Phase::Pending),
        reason: Some(Reason::RequirementsNotMet),
        requirements: Some(Ok(true)),
        replaced: Some(Replaced {
            phase: Some(phase),
            upgradeable: Ok(()),
        }),
        ..Facts::default()
    })
}

#[test]
fn a_csv_says_it_waits_for_the_csv_it_replaces() {
    let Step::Set {
        phase,
        reason,
        message,
        retry,
    } = waiting_on(Phase::Failed)
    else {
        panic!("not a status change");
    };
    assert_eq!(
        (phase, reason, retry),
        (Phase::Pending, Reason::AllRequirementsMet, false)
    );
    assert_eq!(
        message,
        "all requirements found, waiting for the CSV it replaces to be marked Replacing (it is Failed)"
    );
    let no_phase = "all requirements found, waiting for the CSV it replaces to be marked Replacing (it has no phase yet)";
    assert_eq!(waiting_message(None), no_phase);
    // A phase OLM does not know counts as none, as the phase machine counts it.
    assert_eq!(
        waiting_message(Some(&Phase::Other("Retired".into()))),
        no_phase
    );
    // A predecessor that succeeded is marked Replacing on its next pass: nothing to say.
    assert_eq!(waiting_on(Phase::Succeeded), Step::Wait);
    let Step::Set { phase, .. } = waiting_on(Phase::Replacing) else {
        panic!("not a status change");
    };
    assert_eq!(phase, Phase::InstallReady);
}
