//! The CSV phase machine (OLM repo `pkg/controller/operators/olm/operator.go`,
//! `transitionCSVState` after its membership prologue, and `updateInstallStatus`): from the
//! CSV's phase and what the shell observed, the next status and what to do.
//!
//! The shell gathers only the facts the current phase reads (each field says which): the
//! decision never talks to the cluster or reads a clock (durations are handed in), and the
//! install itself is the shell's — for `InstallReady` the decision first answers
//! [`Step::Install`], and the shell calls again with the install's outcome.
//!
//! Status settles. A [`Step::Set`] to the status the CSV already has is no change: nothing is
//! written and no Event recorded, so a CSV that stays where it is costs no write however often
//! it is looked at. A CSV fails for good (until the CSV or the cluster changes) on what no
//! repair can fix — an install strategy that cannot be read, webhook rules OLM refuses, a CRD
//! another operator owns — and a `Failed` CSV keeps checking exactly that before anything
//! else. The certificate and reinstall repairs apply only to a CSV that installed once: for one
//! that never did they find the certificate it was never issued due and the Deployment it never
//! built bad, send it back to `Pending`, where the same problem fails it again — `Failed` and
//! `Pending` alternating many times a second, a status write and an Event each, the real error
//! shown only part of the time (upstream does this for refused webhook rules, through its
//! reinstall check). One that never installed is checked afresh from `Pending` instead.

use std::time::Duration;

use olm_k8s::retry::Backoff;

use olm_v0_api::v1alpha1::{ClusterServiceVersionPhase as Phase, ConditionReason as Reason};

use crate::olm_operator::status::{CsvStatus, PhaseEvent};

/// How long `Installing` may fail to become healthy before the CSV fails with
/// `InstallCheckFailed` "install timeout".
pub const INSTALL_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// How long a CSV whose APIService is down because its pods are being disrupted waits before
/// it is looked at again, its phase unchanged.
pub const DISRUPTION_REQUEUE: Duration = Duration::from_secs(10);

/// Why an install strategy is not (yet) installed, as the installer's check reports it
/// (upstream's `StrategyError` reasons).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StrategyProblem {
    /// Cannot succeed (`InvalidStrategy`, `Timeout`, `PatchUnsuccessful`,
    /// `InsufficentPermissions`): the message.
    Unrecoverable(String),
    /// The Deployment on the cluster differs from the computed one (`DeploymentUpdated`) or its
    /// pod template lacks the CSV's annotations (`AnnotationsMissing`): install again.
    Reinstall(String),
    /// Anything else (`ComponentMissing`, `Waiting`, …): wait.
    Waiting(String),
}

/// What the install check found (`updateInstallStatus`'s inputs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstallStatus {
    /// `None` when the strategy is installed and healthy.
    pub strategy: Option<StrategyProblem>,
    /// Owned APIServices: `Ok(true)` available, `Ok(false)` not yet, `Err((message, retryable))`
    /// failed (retryable: its pods are being disrupted).
    pub apiservices: Result<bool, (String, bool)>,
    /// Webhooks: `Ok(true)` present, `Ok(false)` not yet, `Err(message)` failed.
    pub webhooks: Result<bool, String>,
}

/// The CSV that `spec.replaces` names, when it exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replaced {
    /// Its phase; `None` when it has none yet.
    pub phase: Option<Phase>,
    /// `Err(why)` when its OperatorCondition says it is not upgradeable.
    pub upgradeable: Result<(), crate::olm_operator::operatorcondition::NotUpgradeable>,
}

/// What the shell observed; see each field for the phases that read it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Facts {
    /// The CSV's phase; `None` when it has none yet (upstream's empty phase, `""`).
    pub phase: Option<Phase>,
    /// The CSV's reason.
    pub reason: Option<Reason>,
    /// Time since the last phase transition (Installing).
    pub since_transition: Option<Duration>,
    /// The group's upgrade strategy is `TechPreviewUnsafeFailForward` (Failed, Replacing).
    pub fail_forward: bool,
    /// The CSV this one replaces (Pending).
    pub replaced: Option<Replaced>,
    /// A CSV that replaces this one, by name (Succeeded, Failed with fail-forward); for Replacing
    /// the newest of the chain when failing forward, with its phase. Never the CSV itself: a
    /// `spec.replaces` naming its own CSV is ignored.
    pub replacement: Option<(String, Option<Phase>)>,
    /// This CSV itself replaces an existing CSV other than itself (Replacing: only the oldest of
    /// a chain acts).
    pub replaces_existing: bool,
    /// Requirements and permissions: `Ok(met)` or the strategy error (Pending, Succeeded, Failed).
    pub requirements: Option<Result<bool, String>>,
    /// `InvalidWebhookDescription`'s message when a webhook is repeated or not allowed
    /// (Pending, Failed).
    pub webhook_problem: Option<String>,
    /// `OwnerConflict`'s message when another CSV owns a CRD or APIService (Pending, Failed):
    /// upstream's `conflicting CRD owner in namespace` or `unable to adopt APIService`.
    pub owner_conflict: Option<String>,
    /// The CSV never reached `Installing`: nothing of its install strategy is known to be on
    /// the cluster, so there is nothing to repair or re-certify (Failed). Upstream keeps no
    /// such fact; the default (`false`) decides as upstream does.
    pub never_installed: bool,
    /// Installs that failed in a row, and the time since the last one (Failed with
    /// `InstallComponentFailed`).
    pub install_failures: Option<(u32, Duration)>,
    /// The install's outcome, once the shell ran it (InstallReady): `Err((message,
    /// unrecoverable))`.
    pub install_outcome: Option<Result<(), (String, bool)>>,
    /// The computed deployment cannot be built (certificate data missing…) (Installing,
    /// Succeeded, Failed).
    pub deployment_unbuildable: bool,
    /// The install check (Installing, Succeeded, Failed).
    pub install_status: Option<InstallStatus>,
    /// Generated APIService resources are missing or wrong: the message, and whether OLM can
    /// act on it (Succeeded, Failed).
    pub apiservice_resources: Option<(String, bool)>,
    /// An owned serving certificate is due for rotation (Succeeded, Failed).
    pub cert_rotation_due: bool,
}

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Set phase, reason and message, with an Event — when they differ from the CSV's, as
    /// upstream's `SetPhaseWithEventIfChanged`: one write and one Event per change, none per
    /// pass (upstream's `SetPhaseWithEvent` also rewrites an unchanged status, bumping its
    /// update time). `retry`: also come back with a backoff.
    Set {
        /// New phase.
        phase: Phase,
        /// New reason.
        reason: Reason,
        /// New message.
        message: String,
        /// Come back with a backoff.
        retry: bool,
    },
    /// Run the install strategy, then decide again with its outcome.
    Install,
    /// Nothing changes now; something else will wake the CSV.
    Wait,
    /// Nothing changes; look again after this long.
    RequeueAfter(Duration),
    /// Delete the CSV (Deleting).
    Delete,
    /// A sync error, retried with a backoff.
    Error(String),
}

fn set(phase: Phase, reason: Reason, message: impl Into<String>) -> Step {
    Step::Set {
        phase,
        reason,
        message: message.into(),
        retry: false,
    }
}

/// What no repair of the cluster fixes, checked in Pending and again in Failed: webhook rules
/// the guards refuse (Failed until the CSV changes), and another CSV owning one of its CRDs
/// (Failed, and a sync error, so it is looked at again until the other owner is gone).
fn unfixable_spec(f: &Facts) -> Option<Step> {
    if let Some(message) = &f.webhook_problem {
        return Some(set(
            Phase::Failed,
            Reason::InvalidWebhookDescription,
            message.clone(),
        ));
    }
    f.owner_conflict.as_ref().map(|message| Step::Set {
        phase: Phase::Failed,
        reason: Reason::OwnerConflict,
        message: message.clone(),
        retry: true,
    })
}

/// The message of a CSV whose requirements are met and that waits for the CSV it replaces to
/// make way (an addition: upstream waits without a word, keeping the earlier reason). A phase
/// OLM does not know counts as none, as in [`next`].
pub fn waiting_message(predecessor: Option<&Phase>) -> String {
    let phase = match predecessor {
        None | Some(Phase::Other(_)) => "has no phase yet".to_owned(),
        Some(p) => format!("is {p}"),
    };
    format!(
        "all requirements found, waiting for the CSV it replaces to be marked Replacing (it {phase})"
    )
}

/// The next step for a CSV that passed the membership checks. A CSV without a phase starts at
/// `Pending`; so does one whose phase OLM does not know (`""` written by another client
/// included), which no other step would ever move.
pub fn next(f: &Facts) -> Step {
    if f.reason == Some(Reason::InstallComponentFailedNoRetry) {
        return Step::Wait;
    }
    match &f.phase {
        None | Some(Phase::Other(_)) => set(
            Phase::Pending,
            Reason::RequirementsUnknown,
            "requirements not yet checked",
        ),
        Some(Phase::Pending) => pending(f),
        Some(Phase::InstallReady) => install(f),
        Some(Phase::Installing) => installing(f),
        Some(Phase::Succeeded) => succeeded(f),
        Some(Phase::Failed) => failed(f),
        Some(Phase::Replacing) => replacing(f),
        Some(Phase::Deleting) => Step::Delete,
        Some(Phase::Unknown) => Step::Wait,
    }
}

/// The install, then its outcome: `Installing`, or `Failed` — also a sync error, so a
/// recoverable failure is tried again with a backoff (an unrecoverable one is then skipped by
/// its reason).
fn install(f: &Facts) -> Step {
    match &f.install_outcome {
        None => Step::Install,
        Some(Ok(())) => set(
            Phase::Installing,
            Reason::InstallSucceeded,
            "waiting for install components to report healthy",
        ),
        Some(Err((message, unrecoverable))) => Step::Set {
            phase: Phase::Failed,
            reason: if *unrecoverable {
                Reason::InstallComponentFailedNoRetry
            } else {
                Reason::InstallComponentFailed
            },
            message: format!("install strategy failed: {message}"),
            retry: true,
        },
    }
}

fn pending(f: &Facts) -> Step {
    if let Some(Replaced {
        upgradeable: Err(why),
        ..
    }) = &f.replaced
    {
        return set(
            Phase::Pending,
            Reason::OperatorConditionNotUpgradeable,
            format!("operator is not upgradeable: {why}"),
        );
    }
    match &f.requirements {
        Some(Err(e)) => {
            return set(
                Phase::Failed,
                Reason::InvalidInstallStrategy,
                format!("install strategy invalid: {e}"),
            );
        }
        Some(Ok(false)) | None => {
            return Step::Set {
                phase: Phase::Pending,
                reason: Reason::RequirementsNotMet,
                message: "one or more requirements couldn't be found".into(),
                retry: true,
            };
        }
        Some(Ok(true)) => {}
    }
    if let Some(step) = unfixable_spec(f) {
        return step;
    }
    // Part of a replacement chain: the predecessor must have been marked Replacing first. One
    // that succeeded is marked on its next pass; any other phase may last (a Failed predecessor
    // without fail-forward upgrades waits for someone to act), and the CSV says what it waits
    // for rather than keep an earlier reason such as RequirementsNotMet.
    if let Some(replaced) = &f.replaced {
        match &replaced.phase {
            Some(Phase::Replacing) => {}
            Some(Phase::Succeeded) => return Step::Wait,
            phase => {
                return set(
                    Phase::Pending,
                    Reason::AllRequirementsMet,
                    waiting_message(phase.as_ref()),
                );
            }
        }
    }
    set(
        Phase::InstallReady,
        Reason::AllRequirementsMet,
        "all requirements found, attempting install",
    )
}

/// `updateInstallStatus`: healthy → Succeeded; else the first problem decides, the waiting ones
/// in `(phase, reason)`.
fn install_status(status: &InstallStatus, phase: Phase, reason: Reason) -> Step {
    let waiting = |message: &str| Step::Set {
        phase: phase.clone(),
        reason: reason.clone(),
        message: message.to_owned(),
        retry: false,
    };
    let apiservices_ok = matches!(status.apiservices, Ok(true));
    let webhooks_ok = matches!(status.webhooks, Ok(true));
    if status.strategy.is_none() && apiservices_ok && webhooks_ok {
        return set(
            Phase::Succeeded,
            Reason::InstallSucceeded,
            "install strategy completed with no errors",
        );
    }
    if let Some(StrategyProblem::Unrecoverable(e)) = &status.strategy {
        return set(
            Phase::Failed,
            Reason::InstallCheckFailed,
            format!("install failed: {e}"),
        );
    }
    match &status.apiservices {
        Err((_, true)) => return Step::RequeueAfter(DISRUPTION_REQUEUE),
        Err((e, false)) => {
            return set(
                Phase::Failed,
                Reason::ApiServiceInstallFailed,
                format!("APIService install failed: {e}"),
            );
        }
        Ok(false) => return waiting("apiServices not installed"),
        Ok(true) => {}
    }
    match &status.webhooks {
        Err(e) => {
            return Step::Set {
                phase: Phase::InstallReady,
                reason: reason.clone(),
                message: format!("Webhook install failed: {e}"),
                retry: false,
            };
        }
        Ok(false) => return waiting("webhooks not installed"),
        Ok(true) => {}
    }
    match &status.strategy {
        Some(StrategyProblem::Reinstall(e)) => Step::Set {
            phase: Phase::InstallReady,
            reason: reason.clone(),
            message: format!("installing: {e}"),
            retry: false,
        },
        Some(StrategyProblem::Waiting(e)) => waiting(&format!("installing: {e}")),
        _ => Step::Wait,
    }
}

fn installing(f: &Facts) -> Step {
    if f.deployment_unbuildable {
        return set(
            Phase::Pending,
            Reason::NeedsReinstall,
            "calculated deployment install is bad",
        );
    }
    let Some(status) = &f.install_status else {
        return Step::Wait;
    };
    let step = install_status(status, Phase::Installing, Reason::InstallWaiting);
    // Upstream times out a CSV that is still not healthy and whose phase this step leaves as
    // it is (a phase change restarts the transition clock).
    let phase_kept = match &step {
        Step::Set { phase, .. } => *phase == Phase::Installing,
        Step::RequeueAfter(_) => true,
        _ => false,
    };
    if phase_kept && f.since_transition.is_some_and(|d| d >= INSTALL_TIMEOUT) {
        return set(Phase::Failed, Reason::InstallCheckFailed, "install timeout");
    }
    step
}

fn succeeded(f: &Facts) -> Step {
    if let Some((name, _)) = &f.replacement {
        return set(
            Phase::Replacing,
            Reason::BeingReplaced,
            format!("being replaced by csv: {name}"),
        );
    }
    if let Some((message, _)) = &f.apiservice_resources {
        return set(
            Phase::Failed,
            Reason::ApiServiceResourceIssue,
            message.clone(),
        );
    }
    if f.cert_rotation_due {
        return set(
            Phase::Pending,
            Reason::NeedsCertRotation,
            "CSV owns resources that require a cert refresh",
        );
    }
    match &f.requirements {
        Some(Err(e)) => {
            return set(
                Phase::Failed,
                Reason::InvalidInstallStrategy,
                format!("install strategy invalid: {e}"),
            );
        }
        Some(Ok(false)) => {
            return set(
                Phase::Failed,
                Reason::RequirementsNotMet,
                "requirements no longer met",
            );
        }
        _ => {}
    }
    if f.deployment_unbuildable {
        return set(
            Phase::Pending,
            Reason::NeedsReinstall,
            "calculated deployment install is bad",
        );
    }
    match &f.install_status {
        Some(status) => install_status(status, Phase::Failed, Reason::ComponentUnhealthy),
        None => Step::Wait,
    }
}

/// A `Failed` CSV: fail forward when allowed; heal what the membership checks fixed; wait out
/// a failed install's backoff; stay `Failed` while a problem no repair fixes remains (the
/// status unchanged, so nothing is written); try a failed install again; else back to
/// `Pending` — checked afresh when it never installed, repaired (certificates, reinstall) when
/// it did.
fn failed(f: &Facts) -> Step {
    if f.fail_forward
        && let Some((name, _)) = &f.replacement
    {
        return set(
            Phase::Replacing,
            Reason::BeingReplaced,
            format!("Fail Forward is enabled, allowing Failed csv to be replaced by csv: {name}"),
        );
    }
    match &f.reason {
        Some(
            Reason::NoTargetNamespaces
            | Reason::NoOperatorGroup
            | Reason::TooManyOperatorGroups
            | Reason::UnsupportedOperatorGroup,
        ) => {
            return set(
                Phase::Pending,
                Reason::RequirementsUnknown,
                "InstallModes now support target namespaces",
            );
        }
        Some(Reason::InterOperatorGroupOwnerConflict) => {
            return set(
                Phase::Pending,
                Reason::RequirementsUnknown,
                "OperatorGroup no longer intersecting with conflicting owner",
            );
        }
        Some(Reason::CannotModifyStaticOperatorGroupProvidedApis) => {
            return set(
                Phase::Pending,
                Reason::RequirementsUnknown,
                "static OperatorGroup and intersecting groups now support providedAPIs",
            );
        }
        _ => {}
    }
    // A failed install is tried again only after a backoff step (1 s doubling to 30 s): its own
    // status writes would otherwise run Failed → Pending → InstallReady as fast as the API
    // server answers.
    if f.reason == Some(Reason::InstallComponentFailed)
        && let Some((attempts, since)) = f.install_failures
    {
        let wait = Backoff::DEFAULT.delay(attempts);
        if since < wait {
            return Step::RequeueAfter(wait - since);
        }
    }
    // What no repair fixes keeps the CSV Failed, with the error that says why. Upstream sets
    // InvalidInstallStrategy once and then goes on to the repairs below.
    match &f.requirements {
        Some(Err(e)) => {
            return set(
                Phase::Failed,
                Reason::InvalidInstallStrategy,
                format!("install strategy invalid: {e}"),
            );
        }
        Some(Ok(false)) => {
            return set(
                Phase::Pending,
                Reason::RequirementsNotMet,
                "requirements not met",
            );
        }
        _ => {}
    }
    if let Some(step) = unfixable_spec(f) {
        return step;
    }
    // A failed install is tried again from Failed, its requirements checked above: while it
    // fails the same way its status stays as it is (upstream passes through Pending and
    // InstallReady each time, three writes and three Events per attempt).
    if f.reason == Some(Reason::InstallComponentFailed) {
        return install(f);
    }
    if f.never_installed {
        return set(
            Phase::Pending,
            Reason::RequirementsUnknown,
            "requirements not yet checked",
        );
    }
    if let Some((message, actionable)) = &f.apiservice_resources {
        return if *actionable {
            set(
                Phase::Pending,
                Reason::ApiServiceResourcesNeedReinstall,
                message.clone(),
            )
        } else {
            Step::Wait
        };
    }
    if f.cert_rotation_due {
        return set(
            Phase::Pending,
            Reason::NeedsCertRotation,
            "owned APIServices need cert refresh",
        );
    }
    if f.deployment_unbuildable {
        return set(
            Phase::Pending,
            Reason::NeedsReinstall,
            "calculated deployment install is bad",
        );
    }
    match &f.install_status {
        Some(status) => install_status(status, Phase::Pending, Reason::NeedsReinstall),
        None => Step::Wait,
    }
}

fn replacing(f: &Facts) -> Step {
    if f.replaces_existing {
        return Step::Wait;
    }
    match &f.replacement {
        Some((_, Some(Phase::Succeeded))) => set(
            Phase::Deleting,
            Reason::Replaced,
            "has been replaced by a newer ClusterServiceVersion that has successfully installed.",
        ),
        Some(_) => Step::Wait,
        None => {
            Step::Error("marked as replacement, but no replacement CSV found in cluster".into())
        }
    }
}

/// How a CSV's pass ends once its [`Step`] is known (after the install, when it ran): the
/// status, whether to write it, the Event, and when or whether to look again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Concluded {
    /// The status to hold.
    pub status: CsvStatus,
    /// The Event of a phase change.
    pub event: Option<PhaseEvent>,
    /// Whether the status must be written: the phase changed, or the requirement statuses.
    pub write: bool,
    /// Look again after this long.
    pub requeue: Option<Duration>,
    /// A sync error: retried with a backoff once the status is written.
    pub retry: Option<String>,
    /// Delete the CSV (nothing else is done).
    pub delete: bool,
}

/// What the pass's end looks like (upstream's `syncClusterServiceVersion` after
/// `transitionCSVState`): a [`Step::Set`] changes the phase only when it differs, with one
/// Event; a CSV now `Installing` is looked at again once [`INSTALL_TIMEOUT`] has passed since
/// it entered the phase (`since_transition`, none when it enters now), a second late so the
/// timeout has surely passed; the status is written when the phase or the requirement
/// statuses changed; a serving certificate due for renewal (`renewal`) brings the next look
/// forward. `now` stamps a phase change.
pub fn conclude(
    step: Step,
    mut status: CsvStatus,
    since_transition: Option<Duration>,
    requirements_changed: bool,
    renewal: Option<Duration>,
    now: &str,
) -> Concluded {
    let mut requeue = None;
    let mut retry = None;
    let mut event = None;
    let mut delete = false;
    match step {
        Step::Set {
            phase,
            reason,
            message,
            retry: again,
        } => {
            let installing = phase == Phase::Installing;
            event = status.set_phase_if_changed(phase, reason, &message, now);
            if again {
                retry = Some(message);
            }
            if installing {
                let since = if event.is_some() {
                    Duration::ZERO
                } else {
                    since_transition.unwrap_or_default()
                };
                requeue = Some(INSTALL_TIMEOUT.saturating_sub(since) + Duration::from_secs(1));
            }
        }
        Step::Install | Step::Wait => {}
        Step::RequeueAfter(d) => requeue = Some(d),
        Step::Delete => delete = true,
        Step::Error(m) => retry = Some(m),
    }
    let requeue = match (requeue, renewal) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    Concluded {
        write: !delete && (event.is_some() || requirements_changed),
        status,
        event,
        requeue,
        retry,
        delete,
    }
}
