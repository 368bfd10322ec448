//! A CSV's phase bookkeeping (API repo `pkg/operators/v1alpha1/clusterserviceversion.go`,
//! `SetPhase` and friends): every phase change is timestamped, a history entry is added when
//! phase or reason changes, the history keeps the last [`CONDITIONS_LIMIT`] entries, and a
//! Kubernetes Event accompanies each change (a `Warning` when the phase is `Failed`).
//!
//! Times are handed in as RFC 3339 strings (what the status holds), so that the decision never
//! reads a clock. Phases and reasons are the API's; `None` is upstream's empty value (`""`, a
//! CSV not yet looked at), which upstream never writes (`omitempty`).

use olm_v0_api::v1alpha1::{
    ClusterServiceVersionPhase as Phase, ClusterServiceVersionStatus, ConditionReason as Reason,
};

/// How many history entries `status.conditions` keeps (upstream's `ConditionsLengthLimit`).
pub const CONDITIONS_LIMIT: usize = 20;

/// One `status.conditions` entry: a snapshot of the status after a change.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CsvCondition {
    /// `phase`.
    pub phase: Option<Phase>,
    /// `reason`.
    pub reason: Option<Reason>,
    /// `message`.
    pub message: String,
    /// `lastUpdateTime`.
    pub last_update_time: Option<String>,
    /// `lastTransitionTime`.
    pub last_transition_time: Option<String>,
}

/// The phase part of a CSV's status.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CsvStatus {
    /// `phase`; `None` before the CSV is first looked at.
    pub phase: Option<Phase>,
    /// `reason`.
    pub reason: Option<Reason>,
    /// `message`.
    pub message: String,
    /// `lastUpdateTime`.
    pub last_update_time: Option<String>,
    /// `lastTransitionTime`.
    pub last_transition_time: Option<String>,
    /// `conditions`, oldest first.
    pub conditions: Vec<CsvCondition>,
}

/// The Event to record with a phase change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseEvent {
    /// `Warning` for `Failed`, else `Normal`.
    pub type_: &'static str,
    /// The CSV's new reason.
    pub reason: String,
    /// Its new message, cut to what an Event's note may hold.
    pub message: String,
}

/// A time as the API server writes it: UTC, to the second (how k8s-openapi writes a `Time`).
pub fn time_text(t: jiff::Timestamp) -> Option<String> {
    jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", t).ok()
}

impl CsvStatus {
    /// The phase part of a CSV's `status` (`None`: no status yet), its times as written.
    pub fn read(status: Option<&ClusterServiceVersionStatus>) -> CsvStatus {
        let Some(status) = status else {
            return CsvStatus::default();
        };
        CsvStatus {
            phase: status.phase.clone(),
            reason: status.reason.clone(),
            message: status.message.clone().unwrap_or_default(),
            last_update_time: status
                .last_update_time
                .as_ref()
                .and_then(|t| time_text(t.0)),
            last_transition_time: status
                .last_transition_time
                .as_ref()
                .and_then(|t| time_text(t.0)),
            conditions: status
                .conditions
                .iter()
                .map(|c| CsvCondition {
                    phase: c.phase.clone(),
                    reason: c.reason.clone(),
                    message: c.message.clone().unwrap_or_default(),
                    last_update_time: c.last_update_time.as_ref().and_then(|t| time_text(t.0)),
                    last_transition_time: c
                        .last_transition_time
                        .as_ref()
                        .and_then(|t| time_text(t.0)),
                })
                .collect(),
        }
    }

    /// Sets phase, reason and message at `now` (upstream's `SetPhase`): the update time always;
    /// the transition time only when the phase changes; a history entry (the new phase, reason,
    /// message and times) when the history is empty or its last entry's phase or reason differ;
    /// the history trimmed to its last [`CONDITIONS_LIMIT`] entries. The message is stored
    /// bounded ([`olm_k8s::bounded_message`]): an error that quotes a whole manifest or a binary
    /// layer must not make the status too large to write.
    pub fn set_phase(&mut self, phase: Phase, reason: Reason, message: &str, now: &str) {
        let now = Some(now.to_owned());
        self.last_update_time.clone_from(&now);
        if self.phase.as_ref() != Some(&phase) {
            self.phase = Some(phase);
            self.last_transition_time = now;
        }
        self.message = olm_k8s::bounded_message(message).into_owned();
        self.reason = Some(reason);
        let differs = self
            .conditions
            .last()
            .is_none_or(|c| c.phase != self.phase || c.reason != self.reason);
        if differs {
            self.conditions.push(CsvCondition {
                phase: self.phase.clone(),
                reason: self.reason.clone(),
                message: self.message.clone(),
                last_update_time: self.last_update_time.clone(),
                last_transition_time: self.last_transition_time.clone(),
            });
        }
        if self.conditions.len() > CONDITIONS_LIMIT {
            let extra = self.conditions.len() - CONDITIONS_LIMIT;
            self.conditions.drain(..extra);
        }
    }

    /// [`CsvStatus::set_phase`] with the Event to record (upstream's `SetPhaseWithEvent`).
    pub fn set_phase_with_event(
        &mut self,
        phase: Phase,
        reason: Reason,
        message: &str,
        now: &str,
    ) -> PhaseEvent {
        let event = PhaseEvent {
            type_: if phase == Phase::Failed {
                "Warning"
            } else {
                "Normal"
            },
            reason: reason.as_str().to_owned(),
            message: olm_k8s::truncate_note(message),
        };
        self.set_phase(phase, reason, message, now);
        event
    }

    /// [`CsvStatus::set_phase_with_event`] unless phase, reason and message are already these
    /// (upstream's `SetPhaseWithEventIfChanged`); `None` when nothing changed.
    pub fn set_phase_if_changed(
        &mut self,
        phase: Phase,
        reason: Reason,
        message: &str,
        now: &str,
    ) -> Option<PhaseEvent> {
        if self.phase.as_ref() == Some(&phase)
            && self.reason.as_ref() == Some(&reason)
            && self.message == olm_k8s::bounded_message(message)
        {
            return None;
        }
        Some(self.set_phase_with_event(phase, reason, message, now))
    }

    /// Whether the CSV ever reached `Installing` (its phase or a history entry is `Installing`
    /// or `Succeeded`): only then can its install need repair. The history keeps the last
    /// [`CONDITIONS_LIMIT`] changes, so a CSV that installed longer ago than that counts as
    /// never installed and is checked afresh from `Pending` instead of repaired — which ends
    /// in the same install.
    pub fn installed_once(&self) -> bool {
        let installed =
            |phase: &Option<Phase>| matches!(phase, Some(Phase::Installing | Phase::Succeeded));
        installed(&self.phase) || self.conditions.iter().any(|c| installed(&c.phase))
    }

    /// Whether any history entry says the CSV was replaced or is being replaced (upstream's
    /// `IsObsolete`).
    pub fn is_obsolete(&self) -> bool {
        self.conditions
            .iter()
            .any(|c| matches!(c.reason, Some(Reason::Replaced | Reason::BeingReplaced)))
    }

    /// Whether the CSV is never copied to target namespaces: the empty phase (absent, or `""`
    /// as another client may write it) or an [`uncopiable`] reason (upstream's `IsUncopiable`).
    pub fn is_uncopiable(&self) -> bool {
        self.phase.as_ref().is_none_or(|p| p.as_str().is_empty())
            || self.reason.as_ref().is_some_and(uncopiable)
    }
}

/// Whether a CSV with this reason is never copied to target namespaces (the reasons of
/// upstream's `IsUncopiable`, which also counts the empty phase): a copy (copies are not copied
/// again), or a CSV that failed its OperatorGroup checks, which leave it nothing to be copied to.
pub fn uncopiable(reason: &Reason) -> bool {
    matches!(
        reason,
        Reason::Copied
            | Reason::InvalidInstallModes
            | Reason::NoTargetNamespaces
            | Reason::UnsupportedOperatorGroup
            | Reason::NoOperatorGroup
            | Reason::TooManyOperatorGroups
            | Reason::InterOperatorGroupOwnerConflict
            | Reason::CannotModifyStaticOperatorGroupProvidedApis
    )
}

/// Whether a CSV is a copy (upstream's `IsCopied`): reason `Copied`, an `olm.operatorNamespace`
/// annotation naming another namespace, or an `olm.copiedFrom` label.
pub fn is_copied(
    namespace: &str,
    reason: Option<&Reason>,
    annotations: &std::collections::BTreeMap<String, String>,
    labels: &std::collections::BTreeMap<String, String>,
) -> bool {
    reason == Some(&Reason::Copied)
        || annotations
            .get(crate::olm_operator::membership::OPERATOR_NAMESPACE_ANNOTATION)
            .is_some_and(|ns| ns != namespace)
        || labels.contains_key(COPIED_FROM_LABEL)
}

/// Label on copied CSVs (and copied Roles/RoleBindings): the namespace they were copied from.
pub const COPIED_FROM_LABEL: &str = "olm.copiedFrom";
