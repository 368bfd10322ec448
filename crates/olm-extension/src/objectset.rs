//! How a ClusterObjectSet rolls out: which objects to write, which to delete, which older
//! revisions to archive, and the status to report — as a pure function of the revision, its
//! resolved phases, the objects observed on the cluster, its sibling revisions and the time.
//!
//! [`decide`] is the controller's whole judgement; the shell in `olm-controller` gathers the
//! inputs (resolving Secret refs, reading watch caches, listing siblings), performs the
//! [`Write`]s in order, patches the siblings named in [`Decision::archive`], writes
//! [`Decision::status`] and requeues as [`Decision::next`] says. Object handling follows
//! boxcutter's object engine, which upstream's controller drives: create when absent, adopt
//! according to the effective collision protection, leave objects a newer sibling took over,
//! force our fields back on drift, and tear down in reverse phase order.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use olm_api::{
    ClusterObjectSet, ClusterObjectSetStatus, CollisionProtection, LifecycleState, ObservedPhase,
};
use olm_k8s::{
    BUNDLE_VERSION_KEY, CLUSTER_EXTENSION_KIND, ConditionStatus, ConditionUpdate, Holder,
    OWNER_KIND_LABEL, OWNER_NAME_LABEL, TEARDOWN_FINALIZER, find_status_condition, pace_rewording,
    reworded_only, set_status_condition, status_of,
};
use serde_json::{Map, Value, json};

use crate::probe::{self, ProbeResult, ProbeStatus};

/// Condition types of a ClusterObjectSet.
pub mod condition_type {
    /// The revision is rolling out, retrying, done, blocked or archived.
    pub const PROGRESSING: &str = "Progressing";
    /// The revision's objects exist and pass their probes.
    pub const AVAILABLE: &str = "Available";
    /// The revision once rolled out completely (latched).
    pub const SUCCEEDED: &str = "Succeeded";
}

/// Reasons of a ClusterObjectSet's conditions (upstream's `ClusterObjectSetReason*` and the
/// shared `Reason*` it uses).
pub mod reason {
    /// Objects are being applied or are not ready yet.
    pub const ROLLING_OUT: &str = "RollingOut";
    /// A retryable error; the message says which.
    pub const RETRYING: &str = "Retrying";
    /// Every phase is complete.
    pub const SUCCEEDED: &str = "Succeeded";
    /// Reconciliation cannot go on until a user acts (mutable Secret, changed content).
    pub const BLOCKED: &str = "Blocked";
    /// The revision is archived.
    pub const ARCHIVED: &str = "Archived";
    /// The rollout took longer than `progressDeadlineMinutes`.
    pub const PROGRESS_DEADLINE_EXCEEDED: &str = "ProgressDeadlineExceeded";
    /// All objects pass their probes.
    pub const PROBES_SUCCEEDED: &str = "ProbesSucceeded";
    /// Some object fails a probe.
    pub const PROBE_FAILURE: &str = "ProbeFailure";
    /// Availability cannot be told while an error is retried.
    pub const RECONCILING: &str = "Reconciling";
}

/// Annotation boxcutter puts on every object it applies: the number of the revision that last
/// wrote it, so an older revision never overwrites a newer one and teardown leaves what a newer
/// revision took over.
pub const REVISION_ANNOTATION: &str = "olm.operatorframework.io/revision";

/// Label boxcutter puts on every object it applies, with upstream's value.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// The value of [`MANAGED_BY_LABEL`] (upstream's field owner prefix).
pub const MANAGED_BY_VALUE: &str = "olm.operatorframework.io";

/// How long a collision or validation error waits before the next attempt (upstream's flat 10 s).
pub const COLLISION_RETRY: Duration = Duration::from_secs(10);
/// How long an unfinished teardown waits before looking again (upstream's 5 s).
pub const TEARDOWN_RETRY: Duration = Duration::from_secs(5);

/// The API version and kind of the owner reference every applied object gets.
const COS_API_VERSION: &str = "olm.operatorframework.io/v1";
const COS_KIND: &str = "ClusterObjectSet";

/// The group, version and kind of an object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Gvk {
    /// The API group; empty for the core group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind.
    pub kind: String,
}

impl Gvk {
    /// `group/version`, or `version` for the core group: the object's `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

/// Where an object lives: its kind and its (namespace, name).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef {
    /// Group, version, kind.
    pub gvk: Gvk,
    /// Empty for cluster-scoped objects.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ObjectRef {
    /// The reference of a JSON object; `None` without `apiVersion`, `kind` or `metadata.name`.
    pub fn of(object: &Map<String, Value>) -> Option<ObjectRef> {
        let api_version = object.get("apiVersion")?.as_str()?;
        let kind = object.get("kind")?.as_str()?;
        let meta = object.get("metadata")?.as_object()?;
        let name = meta.get("name")?.as_str()?;
        if api_version.is_empty() || kind.is_empty() || name.is_empty() {
            return None;
        }
        let (group, version) = match api_version.rsplit_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), api_version.to_string()),
        };
        let namespace = meta
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        Some(ObjectRef {
            gvk: Gvk {
                group,
                version,
                kind: kind.to_string(),
            },
            namespace,
            name: name.to_string(),
        })
    }
}

impl fmt::Display for ObjectRef {
    /// `Kind.group/version namespace/name`, as upstream's messages name objects; a
    /// cluster-scoped object is `Kind.group/version name` (upstream prints `/name`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}.{} {}{}{}",
            self.gvk.kind,
            self.gvk.api_version(),
            self.namespace,
            if self.namespace.is_empty() { "" } else { "/" },
            self.name
        )
    }
}

/// One phase with its objects resolved (inline objects copied, Secret refs read), in spec order.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedPhase {
    /// The phase name.
    pub name: String,
    /// The objects as the user wrote them, before the controller adds anything.
    pub objects: Vec<Map<String, Value>>,
}

/// `EffectiveCollisionProtection`: the object's setting, else the phase's, else the spec's.
pub fn effective_collision_protection(
    spec: Option<CollisionProtection>,
    phase: Option<CollisionProtection>,
    object: Option<CollisionProtection>,
) -> CollisionProtection {
    object.or(phase).or(spec).unwrap_or_default()
}

/// Why recorded and freshly resolved phase digests disagree (`verifyObservedPhases`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PhaseDigestError {
    /// Nothing was recorded, which the caller should have checked.
    #[error("stored observedPhases is unexpectedly empty")]
    Empty,
    /// Phases were added or removed.
    #[error("number of phases has changed (expected {expected} phases, got {got})")]
    Count {
        /// Recorded.
        expected: usize,
        /// Resolved now.
        got: usize,
    },
    /// Some phases resolve to different content.
    #[error(
        "resolved content of {} phase(s) has changed: {}; a referenced object source may have been deleted and recreated with different content",
        .0.len(),
        .0.iter().map(|m| format!("phase {:?} (expected digest {}, got {})", m.phase, m.expected, m.got)).collect::<Vec<_>>().join("; ")
    )]
    Changed(Vec<DigestMismatch>),
}

/// One phase whose content changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestMismatch {
    /// The phase name.
    pub phase: String,
    /// Recorded digest.
    pub expected: String,
    /// Digest now.
    pub got: String,
}

/// Compares recorded `observedPhases` with the current ones, listing every changed phase.
pub fn verify_observed_phases(
    stored: &[ObservedPhase],
    current: &[ObservedPhase],
) -> Result<(), PhaseDigestError> {
    if stored.is_empty() {
        return Err(PhaseDigestError::Empty);
    }
    if stored.len() != current.len() {
        return Err(PhaseDigestError::Count {
            expected: stored.len(),
            got: current.len(),
        });
    }
    let by_name: BTreeMap<&str, &str> = stored
        .iter()
        .map(|s| (s.name.as_str(), s.digest.as_str()))
        .collect();
    let mismatches: Vec<DigestMismatch> = current
        .iter()
        .filter_map(|c| match by_name.get(c.name.as_str()) {
            Some(prev) if *prev != c.digest => Some(DigestMismatch {
                phase: c.name.clone(),
                expected: (*prev).to_string(),
                got: c.digest.clone(),
            }),
            _ => None,
        })
        .collect();
    if mismatches.is_empty() {
        Ok(())
    } else {
        Err(PhaseDigestError::Changed(mismatches))
    }
}

/// The `Blocked` message for referenced Secrets that are not immutable (`ns/name` each, in
/// first-reference order); `None` when there are none.
pub fn mutable_secrets_message(mutable: &[String]) -> Option<String> {
    if mutable.is_empty() {
        return None;
    }
    Some(format!(
        "the following secrets are not immutable (referenced secrets must have immutable set to true): {}",
        mutable.join(", ")
    ))
}

/// The distinct Secrets the revision's refs name, `(namespace, name)` in first-reference order,
/// an empty namespace replaced by `system_namespace`.
pub fn referenced_secrets(cos: &ClusterObjectSet, system_namespace: &str) -> Vec<(String, String)> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for phase in &cos.spec.phases {
        for obj in &phase.objects {
            let Some(r) = &obj.ref_ else { continue };
            let ns = match r.namespace.as_deref() {
                Some(ns) if !ns.is_empty() => ns.to_string(),
                _ => system_namespace.to_string(),
            };
            if seen.insert((ns.clone(), r.name.clone())) {
                out.push((ns, r.name.clone()));
            }
        }
    }
    out
}

/// When the progress deadline expires, if one is running: creation time plus
/// `progressDeadlineMinutes`, unless the revision already succeeded (latched), is archived or
/// is being deleted (`durationUntilDeadline`).
pub fn deadline(cos: &ClusterObjectSet) -> Option<Timestamp> {
    let minutes = cos.spec.progress_deadline_minutes.filter(|m| *m > 0)?;
    let conditions = status_conditions(cos);
    if status_of(conditions, condition_type::SUCCEEDED) == Some(ConditionStatus::True) {
        return None;
    }
    if cos.spec.lifecycle_state == LifecycleState::Archived
        || cos.metadata.deletion_timestamp.is_some()
    {
        return None;
    }
    let created = cos.metadata.creation_timestamp.as_ref()?.0;
    created
        .checked_add(SignedDuration::from_mins(i64::from(minutes)))
        .ok()
}

/// How long a failed reconcile waits: upstream's deadline-aware rate limiter. The `backoff` the
/// caller would use is capped at the time left before the deadline; once it has passed, one
/// immediate retry (`first_past_deadline`) lets the condition flip promptly, then `backoff`.
pub fn error_backoff(
    cos: &ClusterObjectSet,
    now: Timestamp,
    backoff: Duration,
    first_past_deadline: bool,
) -> Duration {
    let Some(deadline) = deadline(cos) else {
        return backoff;
    };
    let remaining = now.duration_until(deadline);
    if remaining.is_positive() {
        let remaining = Duration::try_from(remaining).unwrap_or(backoff);
        return remaining.min(backoff);
    }
    if first_past_deadline {
        Duration::ZERO
    } else {
        backoff
    }
}

fn status_conditions(cos: &ClusterObjectSet) -> &[Condition] {
    cos.status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or(&[])
}

/// What [`decide`] needs.
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    /// The revision, as read.
    pub cos: &'a ClusterObjectSet,
    /// Its phases with refs resolved, or the error resolving them (upstream's text, e.g.
    /// `resolving ref in phase "x": getting Secret ns/name: …`).
    pub resolved: Result<&'a [ResolvedPhase], &'a str>,
    /// Referenced Secrets (`ns/name`) that exist and are not immutable.
    pub mutable_secrets: &'a [String],
    /// Objects on the cluster, as last observed.
    pub observed: &'a BTreeMap<ObjectRef, Map<String, Value>>,
    /// Every ClusterObjectSet carrying the same owner-name label (self included or not).
    pub siblings: &'a [ClusterObjectSet],
    /// The OLM v0 ClusterServiceVersions (`namespace`, `name`) that own each CRD, by CRD name:
    /// OLM v0 marks the CRDs it creates only with `olm.managed`, so a collision with one is
    /// named from these. Empty when OLM v0 is not served or no observed CRD is OLM v0's.
    pub v0_crd_owners: &'a BTreeMap<String, Vec<(String, String)>>,
    /// The time, for condition transitions and the deadline.
    pub now: Timestamp,
}

/// One request the shell makes, in the order given.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// POST the object (never server-side apply: that could take over an object that appeared
    /// meanwhile). `AlreadyExists` means the object exists but was not observed; the shell reads
    /// it and decides again.
    Create {
        /// Where.
        target: ObjectRef,
        /// The full object.
        object: Map<String, Value>,
    },
    /// Server-side apply with force, as the controller's field manager.
    Apply {
        /// Where.
        target: ObjectRef,
        /// The full apply configuration.
        object: Map<String, Value>,
    },
    /// Delete with preconditions, so a replaced object is not deleted by mistake.
    Delete {
        /// Where.
        target: ObjectRef,
        /// Precondition: the UID observed.
        uid: String,
        /// Precondition: the resourceVersion observed.
        resource_version: String,
    },
    /// JSON merge patch: drop this revision from the owner references of an object a newer
    /// revision controls.
    ReleaseOwnership {
        /// Where.
        target: ObjectRef,
        /// The merge patch.
        patch: Value,
    },
}

impl Write {
    /// The object the write is about.
    pub fn target(&self) -> &ObjectRef {
        match self {
            Write::Create { target, .. }
            | Write::Apply { target, .. }
            | Write::Delete { target, .. }
            | Write::ReleaseOwnership { target, .. } => target,
        }
    }
}

/// The teardown finalizer's fate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finalizer {
    /// Leave the finalizers as they are.
    Keep,
    /// Add [`TEARDOWN_FINALIZER`] (before any object is written).
    Add,
    /// Remove [`TEARDOWN_FINALIZER`] (after status is written).
    Remove,
}

/// What the object watches should do for this revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watch {
    /// Nothing changes.
    Keep,
    /// Watch (and cache) these kinds for this revision before objects are read again.
    Ensure(BTreeSet<Gvk>),
    /// This revision no longer needs any watch.
    Free,
}

/// When to reconcile again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// On the next event only.
    Done,
    /// After a while (probe wait with a deadline, collision, teardown in progress).
    RequeueAfter(Duration),
    /// The reconcile failed with this error (retried with backoff, see [`error_backoff`]).
    Error(String),
}

/// How one object was handled (boxcutter's `Action`).
#[derive(Debug, Clone, PartialEq)]
pub enum Handling {
    /// Absent; created.
    Created,
    /// Adopted or brought back to the desired state.
    Updated,
    /// Controlled by this revision and as desired.
    Idle,
    /// A newer sibling revision controls it.
    Progressed,
    /// Someone else's; left alone. Who holds it.
    Collision(Holder),
}

impl Handling {
    fn action(&self) -> &'static str {
        match self {
            Handling::Created => "Created",
            Handling::Updated => "Updated",
            Handling::Idle => "Idle",
            Handling::Progressed => "Progressed",
            Handling::Collision(_) => "Collision",
        }
    }
}

/// The outcome for one object of a reconciled phase.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectReport {
    /// The object.
    pub target: ObjectRef,
    /// What was done.
    pub handling: Handling,
    /// The progress probe on the object as it is (or will be, after the write).
    pub probe: ProbeResult,
}

impl ObjectReport {
    /// No collision and the progress probe passed.
    pub fn is_complete(&self) -> bool {
        !matches!(self.handling, Handling::Collision(_)) && self.probe.passed()
    }

    /// A colliding object as a sentence: the object, who holds it and what to do. Upstream
    /// prints boxcutter's report here (action, probes and Go's `OwnerReference.String()`,
    /// `Conflicting Owner: nil` for an object nobody controls), which names neither the
    /// extension nor OLM v0's owner; this names both.
    pub fn report(&self) -> String {
        match &self.handling {
            Handling::Collision(holder) => format!(
                "Object {} already exists and belongs to {holder}: {}.",
                self.target,
                holder.remedy()
            ),
            other => format!("Object {}: {}.", self.target, other.action()),
        }
    }
}

/// The outcome for one reconciled phase.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseReport {
    /// The phase name.
    pub name: String,
    /// Its objects, in spec order.
    pub objects: Vec<ObjectReport>,
}

impl PhaseReport {
    /// Every object is complete.
    pub fn is_complete(&self) -> bool {
        self.objects.iter().all(ObjectReport::is_complete)
    }
}

/// What [`decide`] asks the shell to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The teardown finalizer.
    pub finalizer: Finalizer,
    /// Object watches.
    pub watch: Watch,
    /// Object writes, in order (phase by phase).
    pub writes: Vec<Write>,
    /// Where each phase's writes end in `writes` (see [`Decision::batches`]).
    pub phase_ends: Vec<usize>,
    /// Older active sibling revisions to archive (merge patch `lifecycleState: Archived`).
    pub archive: Vec<String>,
    /// The status to write; `None` when it would not change.
    pub status: Option<ClusterObjectSetStatus>,
    /// When to come back.
    pub next: Next,
    /// The reconciled phases (up to the first incomplete one), for logs and tests.
    pub phases: Vec<PhaseReport>,
}

impl Decision {
    /// The writes in batches, one per phase, in order. The objects of one phase are distinct
    /// and nothing orders them against each other (phases are the ordering), so the shell may
    /// send a batch's requests together; a batch starts only when the one before has finished.
    pub fn batches(&self) -> impl Iterator<Item = &[Write]> {
        let mut start = 0;
        self.phase_ends
            .iter()
            .copied()
            .chain(std::iter::once(self.writes.len()))
            .filter_map(move |end| {
                let batch = self.writes.get(start..end)?;
                start = end;
                Some(batch)
            })
            .filter(|b| !b.is_empty())
    }

    fn end_phase(&mut self) {
        if self.phase_ends.last() != Some(&self.writes.len()) {
            self.phase_ends.push(self.writes.len());
        }
    }
}

struct Status {
    status: ClusterObjectSetStatus,
    generation: i64,
    now: Time,
    deadline_minutes: i32,
    exceeded: bool,
}

impl Status {
    fn set(&mut self, type_: &str, status: ConditionStatus, reason: &str, message: &str) -> bool {
        set_status_condition(
            &mut self.status.conditions,
            ConditionUpdate {
                type_,
                status,
                reason,
                message,
                observed_generation: self.generation,
            },
            &self.now,
        )
    }

    /// `markAsProgressing`: past the deadline every reason but `Succeeded` turns into
    /// Progressing False / `ProgressDeadlineExceeded`, keeping the message as "Last status".
    fn progressing(&mut self, reason: &str, message: &str) {
        if reason != reason::SUCCEEDED && self.exceeded {
            let message = format!(
                "Revision has not rolled out for {} minute(s). Last status: {message}",
                self.deadline_minutes
            );
            self.set(
                condition_type::PROGRESSING,
                ConditionStatus::False,
                reason::PROGRESS_DEADLINE_EXCEEDED,
                &message,
            );
            return;
        }
        self.set(
            condition_type::PROGRESSING,
            ConditionStatus::True,
            reason,
            message,
        );
    }

    fn not_progressing(&mut self, reason: &str, message: &str) -> bool {
        self.set(
            condition_type::PROGRESSING,
            ConditionStatus::False,
            reason,
            message,
        )
    }

    /// `setRetryingConditions`: Progressing Retrying, and Available Unknown only if Available
    /// was already reported.
    fn retrying(&mut self, message: &str) {
        self.progressing(reason::RETRYING, message);
        if find_status_condition(&self.status.conditions, condition_type::AVAILABLE).is_some() {
            self.set(
                condition_type::AVAILABLE,
                ConditionStatus::Unknown,
                reason::RECONCILING,
                message,
            );
        }
    }
}

fn to_time(now: Timestamp) -> Time {
    // metav1.Time carries whole seconds; truncating keeps re-decided conditions equal to what
    // the API server returns.
    Time(Timestamp::from_second(now.as_second()).unwrap_or(now))
}

fn start(cos: &ClusterObjectSet, now: Timestamp, exceeded: bool) -> Status {
    Status {
        status: cos.status.clone().unwrap_or_default(),
        generation: cos.metadata.generation.unwrap_or(0),
        now: to_time(now),
        deadline_minutes: cos.spec.progress_deadline_minutes.unwrap_or(0),
        exceeded,
    }
}

fn changed(
    cos: &ClusterObjectSet,
    status: ClusterObjectSetStatus,
) -> Option<ClusterObjectSetStatus> {
    let before = cos.status.clone().unwrap_or_default();
    (before != status).then_some(status)
}

/// How long to hold back writing `new` over the revision's current status, given how long ago
/// this controller last wrote it: `Some` only when `new` merely rewords condition messages
/// (same phases, statuses and reasons) and the last write is under
/// [`olm_k8s::REWORDING_PACE`] old. The shell then writes nothing and reconciles again after
/// the time returned, when the wording may have settled or a change of state arrived, which is
/// written at once.
pub fn hold_rewording(
    cos: &ClusterObjectSet,
    new: &ClusterObjectSetStatus,
    since_last_write: Option<Duration>,
) -> Option<Duration> {
    let old = cos.status.as_ref()?;
    (old.observed_phases == new.observed_phases && reworded_only(&old.conditions, &new.conditions))
        .then(|| pace_rewording(since_last_write))
        .flatten()
}

/// The status after a failure of the shell itself (a write, a watch, a list): Progressing
/// Retrying with `message` (or `ProgressDeadlineExceeded` past the deadline), Available Unknown
/// if it was reported. `None` when that is already the status.
pub fn on_error(
    cos: &ClusterObjectSet,
    message: &str,
    now: Timestamp,
) -> Option<ClusterObjectSetStatus> {
    let exceeded = deadline(cos).is_some_and(|d| d <= now);
    let archived = cos.spec.lifecycle_state == LifecycleState::Archived;
    let mut st = start(cos, now, exceeded && !archived);
    st.retrying(message);
    changed(cos, st.status)
}

/// The status when the watches of a revision being deleted or archived cannot be stopped:
/// Available Unknown / `Reconciling` with the error.
pub fn on_watch_error(
    cos: &ClusterObjectSet,
    message: &str,
    now: Timestamp,
) -> Option<ClusterObjectSetStatus> {
    let mut st = start(cos, now, false);
    st.set(
        condition_type::AVAILABLE,
        ConditionStatus::Unknown,
        reason::RECONCILING,
        message,
    );
    changed(cos, st.status)
}

fn has_finalizer(cos: &ClusterObjectSet) -> bool {
    cos.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == TEARDOWN_FINALIZER)
}

/// The active sibling revisions: same owner-name label, not this one, not archived, not being
/// deleted (`listSiblingRevisions`). Without the label there are none.
pub fn active_siblings<'a>(
    cos: &ClusterObjectSet,
    all: &'a [ClusterObjectSet],
) -> Vec<&'a ClusterObjectSet> {
    let Some(owner) = owner_name(cos) else {
        return Vec::new();
    };
    all.iter()
        .filter(|r| owner_name(r) == Some(owner))
        .filter(|r| r.metadata.name != cos.metadata.name)
        .filter(|r| r.spec.lifecycle_state != LifecycleState::Archived)
        .filter(|r| r.metadata.deletion_timestamp.is_none())
        .collect()
}

/// The active siblings with a lower revision number (`listPreviousRevisions`): the ones a
/// completed rollout archives.
pub fn previous_revisions<'a>(
    cos: &ClusterObjectSet,
    all: &'a [ClusterObjectSet],
) -> Vec<&'a ClusterObjectSet> {
    active_siblings(cos, all)
        .into_iter()
        .filter(|r| r.spec.revision < cos.spec.revision)
        .collect()
}

fn owner_name(cos: &ClusterObjectSet) -> Option<&str> {
    cos.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(OWNER_NAME_LABEL))
        .map(String::as_str)
}

/// Decides one reconcile of a ClusterObjectSet.
///
/// 1. Being deleted: free the watches and remove the teardown finalizer; the API server's
///    garbage collector removes the objects through their owner references.
/// 2. A referenced Secret is not immutable: Progressing False / `Blocked`, nothing else (this
///    wins over the progress deadline, being the more actionable message).
/// 3. Phases could not be resolved (or a probe cannot be built): Retrying, and an error so the
///    reconcile backs off.
/// 4. `observedPhases` recorded on first resolution; later, any digest change blocks.
/// 5. Archived: tear down in reverse phase order — delete objects this revision last wrote,
///    release the ones a newer revision took over — one phase at a time (Retrying "removing
///    revision resources that are not owned by another revision", requeue 5 s); once gone,
///    Progressing False / Available Unknown `Archived` ("revision is archived") and the
///    finalizer is removed.
/// 6. Active: add the finalizer, watch every kind of the revision, then reconcile phase by
///    phase: every object of a phase is written as needed and probed; the next phase starts
///    only when all objects of this one are complete.
/// 7. A collision or validation error: Retrying with upstream's text, requeue after 10 s.
/// 8. Complete: archive older active siblings; Progressing True / `Succeeded` "Revision <v> has
///    rolled out.", Available True / `ProbesSucceeded`, Succeeded True (latched).
///    Incomplete: Available False / `ProbeFailure` naming the first failing object of each
///    reconciled incomplete phase (or `RollingOut`), Progressing `RollingOut`, and a requeue at
///    the deadline if one is running.
/// 9. Past the deadline, any Progressing but `Succeeded` becomes False /
///    `ProgressDeadlineExceeded`; a later success still flips it back.
///
/// Guarantees: [`Decision::status`] is `None` when nothing changed; writes of a phase come
/// after those of the phases before it; no write touches an object controlled by another
/// owner unless collision protection allows it.
///
/// Assumptions: `observed` holds every object of the revision that exists and carries our
/// owner-kind label; an object missing from it is treated as absent (and created with a POST,
/// whose `AlreadyExists` the shell turns into an observation).
pub fn decide(input: Input<'_>) -> Decision {
    let cos = input.cos;
    let mut decision = Decision {
        finalizer: Finalizer::Keep,
        watch: Watch::Keep,
        writes: Vec::new(),
        phase_ends: Vec::new(),
        archive: Vec::new(),
        status: None,
        next: Next::Done,
        phases: Vec::new(),
    };

    if cos.metadata.deletion_timestamp.is_some() {
        decision.watch = Watch::Free;
        if has_finalizer(cos) {
            decision.finalizer = Finalizer::Remove;
        }
        return decision;
    }

    let exceeded = deadline(cos).is_some_and(|d| d <= input.now);
    let mut st = start(cos, input.now, exceeded);

    if let Some(message) = mutable_secrets_message(input.mutable_secrets) {
        st.not_progressing(reason::BLOCKED, &message);
        decision.status = changed(cos, st.status);
        return decision;
    }

    let phases = match input.resolved {
        Ok(phases) => phases,
        Err(message) => {
            st.retrying(message);
            decision.status = changed(cos, st.status);
            decision.next = Next::Error(format!("converting to boxcutter revision: {message}"));
            return decision;
        }
    };
    if let Err(e) = probe::validate(&cos.spec.progression_probes) {
        let message = e.to_string();
        st.retrying(&message);
        decision.status = changed(cos, st.status);
        decision.next = Next::Error(format!("converting to boxcutter revision: {message}"));
        return decision;
    }

    let current: Vec<ObservedPhase> = phases
        .iter()
        .map(|p| ObservedPhase {
            name: p.name.clone(),
            digest: crate::phase::digest_resolved(&p.name, &p.objects),
            completed_at: None,
        })
        .collect();
    if st.status.observed_phases.is_empty() {
        st.status.observed_phases = current;
    } else if let Err(e) = verify_observed_phases(&st.status.observed_phases, &current) {
        st.not_progressing(reason::BLOCKED, &e.to_string());
        decision.status = changed(cos, st.status);
        return decision;
    }

    let gvks: BTreeSet<Gvk> = phases
        .iter()
        .flat_map(|p| p.objects.iter())
        .filter_map(ObjectRef::of)
        .map(|r| r.gvk)
        .collect();

    if cos.spec.lifecycle_state == LifecycleState::Archived {
        return archive(input, phases, gvks, st, decision);
    }

    if !has_finalizer(cos) {
        decision.finalizer = Finalizer::Add;
    }
    decision.watch = Watch::Ensure(gvks);

    let version = cos
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(BUNDLE_VERSION_KEY))
        .map(String::as_str)
        .unwrap_or("");

    // Validation (boxcutter's revision and phase validators): every object needs a kind and a
    // name, and appears once in the revision.
    if let Some((index, message)) = validate_phases(cos, phases) {
        let message = match index {
            None => format!("revision validation error: {message}"),
            Some(i) => format!("phase {i} validation error: {message}"),
        };
        st.retrying(&message);
        decision.status = changed(cos, st.status);
        decision.next = Next::RequeueAfter(COLLISION_RETRY);
        return decision;
    }

    let siblings = active_siblings(cos, input.siblings);
    let sibling_uids: BTreeSet<&str> = siblings
        .iter()
        .filter_map(|s| s.metadata.uid.as_deref())
        .collect();
    let owner = Owner {
        name: cos.metadata.name.as_deref().unwrap_or(""),
        uid: cos.metadata.uid.as_deref().unwrap_or(""),
        revision: cos.spec.revision,
        owner_name: owner_name(cos).unwrap_or(""),
        sibling_uids: &sibling_uids,
        takes_over: cos
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(olm_k8s::MIGRATION_TAKES_OVER_ANNOTATION))
            .and_then(|v| v.split_once('/')),
    };

    let mut complete = true;
    for (index, (spec_phase, phase)) in cos.spec.phases.iter().zip(phases).enumerate() {
        let mut report = PhaseReport {
            name: phase.name.clone(),
            objects: Vec::with_capacity(phase.objects.len()),
        };
        for (i, desired) in phase.objects.iter().enumerate() {
            let protection = effective_collision_protection(
                Some(cos.spec.collision_protection),
                spec_phase.collision_protection,
                spec_phase
                    .objects
                    .get(i)
                    .and_then(|o| o.collision_protection),
            );
            let Some(target) = ObjectRef::of(desired) else {
                continue; // validated above
            };
            let outcome = reconcile_object(
                desired,
                &target,
                input.observed.get(&target),
                &owner,
                protection,
                &cos.spec.progression_probes,
                input.v0_crd_owners,
            );
            if let Some(w) = outcome.1 {
                decision.writes.push(w);
            }
            report.objects.push(outcome.0);
        }
        decision.end_phase();
        let collisions: Vec<String> = report
            .objects
            .iter()
            .filter(|o| matches!(o.handling, Handling::Collision(_)))
            .map(ObjectReport::report)
            .collect();
        let phase_complete = report.is_complete();
        decision.phases.push(report);
        if !collisions.is_empty() {
            let message = format!(
                "revision object collisions in phase {index}\n{}",
                collisions.join("\n")
            );
            st.retrying(&message);
            decision.status = changed(cos, st.status);
            decision.next = Next::RequeueAfter(COLLISION_RETRY);
            return decision;
        }
        if !phase_complete {
            complete = false;
            break;
        }
    }

    let rolling_out = format!("Revision {version} is rolling out.");
    if complete {
        decision.archive = previous_revisions(cos, input.siblings)
            .into_iter()
            .filter_map(|r| r.metadata.name.clone())
            .collect();
        st.progressing(
            reason::SUCCEEDED,
            &format!("Revision {version} has rolled out."),
        );
        st.set(
            condition_type::AVAILABLE,
            ConditionStatus::True,
            reason::PROBES_SUCCEEDED,
            "Objects are available and pass all probes.",
        );
        st.set(
            condition_type::SUCCEEDED,
            ConditionStatus::True,
            reason::SUCCEEDED,
            "Revision succeeded rolling out.",
        );
    } else {
        let failures: Vec<String> = decision
            .phases
            .iter()
            .filter(|p| !p.is_complete())
            .filter_map(|p| p.objects.iter().find(|o| !o.probe.passed()))
            .map(|o| format!("Object {}: {}", o.target, o.probe.messages.join(" and ")))
            .collect();
        if failures.is_empty() {
            st.set(
                condition_type::AVAILABLE,
                ConditionStatus::False,
                reason::ROLLING_OUT,
                &rolling_out,
            );
        } else {
            st.set(
                condition_type::AVAILABLE,
                ConditionStatus::False,
                reason::PROBE_FAILURE,
                &failures.join("\n"),
            );
        }
        st.progressing(reason::ROLLING_OUT, &rolling_out);
        if let Some(d) = deadline(cos)
            && !exceeded
        {
            let remaining = input.now.duration_until(d);
            decision.next =
                Next::RequeueAfter(Duration::try_from(remaining).unwrap_or(Duration::ZERO));
        }
    }
    decision.status = changed(cos, st.status);
    decision
}

fn validate_phases(
    cos: &ClusterObjectSet,
    phases: &[ResolvedPhase],
) -> Option<(Option<usize>, String)> {
    for (i, phase) in phases.iter().enumerate() {
        for object in &phase.objects {
            if ObjectRef::of(object).is_none() {
                return Some((
                    Some(i),
                    format!(
                        "phase {:?}: object needs apiVersion, kind and metadata.name",
                        phase.name
                    ),
                ));
            }
        }
    }
    let mut first: BTreeMap<ObjectRef, BTreeSet<&str>> = BTreeMap::new();
    for phase in phases {
        for object in &phase.objects {
            if let Some(r) = ObjectRef::of(object) {
                first.entry(r).or_default().insert(phase.name.as_str());
            }
        }
    }
    let mut counts: BTreeMap<&ObjectRef, usize> = BTreeMap::new();
    for phase in phases {
        for object in &phase.objects {
            if let Some(r) = ObjectRef::of(object)
                && let Some((k, _)) = first.get_key_value(&r)
            {
                *counts.entry(k).or_default() += 1;
            }
        }
    }
    let duplicates: Vec<String> = counts
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(r, _)| {
            let names: Vec<&str> = first[*r].iter().copied().collect();
            format!(
                "{}, Kind={} {}/{}: duplicate object found in phases: {}",
                r.gvk.api_version(),
                r.gvk.kind,
                r.namespace,
                r.name,
                names.join(", ")
            )
        })
        .collect();
    if duplicates.is_empty() {
        return None;
    }
    Some((
        None,
        format!(
            "revision {:?} ({}): {}",
            cos.metadata.name.as_deref().unwrap_or(""),
            cos.spec.revision,
            duplicates.join(", ")
        ),
    ))
}

fn archive(
    input: Input<'_>,
    phases: &[ResolvedPhase],
    gvks: BTreeSet<Gvk>,
    mut st: Status,
    mut decision: Decision,
) -> Decision {
    let cos = input.cos;
    let uid = cos.metadata.uid.as_deref().unwrap_or("");
    // Reads during teardown come from the same caches; the watch is released once done.
    decision.watch = Watch::Ensure(gvks);
    for phase in phases.iter().rev() {
        let mut gone = true;
        for desired in &phase.objects {
            let Some(target) = ObjectRef::of(desired) else {
                continue;
            };
            match teardown_object(&target, input.observed.get(&target), uid, cos.spec.revision) {
                Teardown::Gone => {}
                Teardown::Release(w) => decision.writes.push(w),
                Teardown::Delete(w) => {
                    decision.writes.push(w);
                    gone = false;
                }
            }
        }
        decision.end_phase();
        if !gone {
            // Archiving is never subject to the deadline.
            st.exceeded = false;
            st.retrying("removing revision resources that are not owned by another revision");
            decision.status = changed(cos, st.status);
            decision.next = Next::RequeueAfter(TEARDOWN_RETRY);
            return decision;
        }
    }
    const MESSAGE: &str = "revision is archived";
    st.not_progressing(reason::ARCHIVED, MESSAGE);
    st.set(
        condition_type::AVAILABLE,
        ConditionStatus::Unknown,
        reason::ARCHIVED,
        MESSAGE,
    );
    decision.status = changed(cos, st.status);
    decision.watch = Watch::Free;
    if has_finalizer(cos) {
        decision.finalizer = Finalizer::Remove;
    }
    decision
}

/// One object's teardown step (boxcutter's `ObjectEngine.Teardown`).
#[derive(Debug, Clone, PartialEq)]
pub enum Teardown {
    /// Nothing (left) to do for this revision.
    Gone,
    /// A newer revision wrote it last and we are not its controller: drop our owner reference.
    Release(Write),
    /// Ours: delete it, and wait until it is gone.
    Delete(Write),
}

/// Decides the teardown of one object: absent ⇒ gone; last written by another revision ⇒
/// release our owner reference unless we are (still) its controller; otherwise delete.
pub fn teardown_object(
    target: &ObjectRef,
    observed: Option<&Map<String, Value>>,
    owner_uid: &str,
    revision: i64,
) -> Teardown {
    let Some(actual) = observed else {
        return Teardown::Gone;
    };
    if object_revision(actual) != revision {
        let is_controller = controller_ref(actual)
            .is_some_and(|r| r.get("uid").and_then(Value::as_str) == Some(owner_uid));
        if !is_controller {
            let refs = owner_refs(actual);
            if refs
                .iter()
                .all(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid))
            {
                return Teardown::Gone;
            }
            let kept: Vec<Value> = refs
                .into_iter()
                .filter(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid))
                .collect();
            return Teardown::Release(Write::ReleaseOwnership {
                target: target.clone(),
                patch: json!({"metadata": {"ownerReferences": kept}}),
            });
        }
    }
    let meta = actual.get("metadata");
    let field = |k: &str| {
        meta.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    Teardown::Delete(Write::Delete {
        target: target.clone(),
        uid: field("uid"),
        resource_version: field("resourceVersion"),
    })
}

struct Owner<'a> {
    name: &'a str,
    uid: &'a str,
    revision: i64,
    owner_name: &'a str,
    sibling_uids: &'a BTreeSet<&'a str>,
    /// The OLM v0 CSV (`namespace`, `name`) whose objects this revision takes over in place
    /// (`olm migrate`; [`olm_k8s::MIGRATION_TAKES_OVER_ANNOTATION`]).
    takes_over: Option<(&'a str, &'a str)>,
}

impl Owner<'_> {
    /// Whether OLM v0's hold on an object is one this revision takes over: the object belongs
    /// to the CSV being migrated and to no other.
    fn takes_over(&self, holder: &Holder) -> bool {
        let Some((namespace, csv)) = self.takes_over else {
            return false;
        };
        match holder {
            Holder::V0Owner {
                kind,
                namespace: ns,
                name,
            } => kind == "ClusterServiceVersion" && ns == namespace && name == csv,
            Holder::V0Managed { csvs } => {
                !csvs.is_empty() && csvs.iter().all(|(ns, name)| ns == namespace && name == csv)
            }
            _ => false,
        }
    }
}

fn owner_refs(object: &Map<String, Value>) -> Vec<Value> {
    object
        .get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn controller_ref(object: &Map<String, Value>) -> Option<Value> {
    owner_refs(object)
        .into_iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

/// The revision annotation's number; 0 when absent or unreadable.
fn object_revision(object: &Map<String, Value>) -> i64 {
    annotation(object, REVISION_ANNOTATION)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn annotation<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    object
        .get("metadata")?
        .get("annotations")?
        .get(key)?
        .as_str()
}

/// The object as this revision writes it: the owner labels, the managed-by label, the revision
/// annotation, and owner references — those already on the object (controller released) plus
/// this revision as controller.
fn prepare(
    desired: &Map<String, Value>,
    actual: Option<&Map<String, Value>>,
    owner: &Owner<'_>,
) -> Map<String, Value> {
    let mut object = desired.clone();
    let meta = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    let Some(meta) = meta.as_object_mut() else {
        return object;
    };
    let labels = meta
        .entry("labels")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(OWNER_NAME_LABEL.into(), owner.owner_name.into());
        labels.insert(OWNER_KIND_LABEL.into(), CLUSTER_EXTENSION_KIND.into());
        labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY_VALUE.into());
    }
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(a) = annotations.as_object_mut() {
        a.insert(
            REVISION_ANNOTATION.into(),
            owner.revision.to_string().into(),
        );
    }
    let mut refs: Vec<Value> = Vec::new();
    let existing = meta
        .get("ownerReferences")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let from_actual = actual.map(owner_refs).unwrap_or_default();
    for r in from_actual.into_iter().chain(existing) {
        let uid = r.get("uid").and_then(Value::as_str);
        if uid == Some(owner.uid)
            || refs
                .iter()
                .any(|x| x.get("uid").and_then(Value::as_str) == uid)
        {
            continue;
        }
        let mut r = r;
        if let Some(m) = r.as_object_mut() {
            m.remove("controller");
        }
        refs.push(r);
    }
    let ours = json!({
        "apiVersion": COS_API_VERSION,
        "kind": COS_KIND,
        "name": owner.name,
        "uid": owner.uid,
        "controller": true,
        "blockOwnerDeletion": true,
    });
    // Keep our reference where it already is so the drift check sees an unchanged list.
    let our_index = actual
        .map(owner_refs)
        .unwrap_or_default()
        .iter()
        .position(|r| r.get("uid").and_then(Value::as_str) == Some(owner.uid));
    match our_index {
        Some(i) if i <= refs.len() => refs.insert(i, ours),
        _ => refs.push(ours),
    }
    meta.insert("ownerReferences".into(), Value::Array(refs));
    object
}

/// Whether every field of `desired` is present in `actual` with the same value (lists
/// element-wise with equal length), i.e. applying `desired` would change nothing we own.
/// `status` is left out: it is not ours to set.
pub fn contains(actual: &Value, desired: &Value) -> bool {
    match (actual, desired) {
        (Value::Object(a), Value::Object(d)) => d.iter().all(|(k, dv)| {
            a.get(k).is_some_and(|av| contains(av, dv)) || is_empty(dv) && a.get(k).is_none()
        }),
        (Value::Array(a), Value::Array(d)) => {
            a.len() == d.len() && a.iter().zip(d).all(|(av, dv)| contains(av, dv))
        }
        (a, d) => a == d,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

fn drifted(actual: &Map<String, Value>, desired: &Map<String, Value>) -> bool {
    // Compared map by map so that no object is copied on the hot path (every watch event).
    !desired
        .iter()
        .filter(|(k, _)| k.as_str() != "status")
        .all(|(k, dv)| {
            actual.get(k).is_some_and(|av| contains(av, dv))
                || is_empty(dv) && actual.get(k).is_none()
        })
}

fn reconcile_object(
    desired: &Map<String, Value>,
    target: &ObjectRef,
    observed: Option<&Map<String, Value>>,
    owner: &Owner<'_>,
    protection: CollisionProtection,
    probes: &[olm_api::ProgressionProbe],
    v0_crd_owners: &BTreeMap<String, Vec<(String, String)>>,
) -> (ObjectReport, Option<Write>) {
    let probe_of = |o: &Map<String, Value>| {
        probe::evaluate(probes, o).unwrap_or_else(|e| ProbeResult {
            status: ProbeStatus::Unknown,
            messages: vec![e.to_string()],
        })
    };
    let report = |handling: Handling, probed: &Map<String, Value>| ObjectReport {
        target: target.clone(),
        handling,
        probe: probe_of(probed),
    };
    let Some(actual) = observed else {
        let object = prepare(desired, None, owner);
        let r = report(Handling::Created, &object);
        return (
            r,
            Some(Write::Create {
                target: target.clone(),
                object,
            }),
        );
    };
    let adopt = |actual: &Map<String, Value>| {
        let object = prepare(desired, Some(actual), owner);
        let r = report(Handling::Updated, &object);
        (
            r,
            Some(Write::Apply {
                target: target.clone(),
                object,
            }),
        )
    };
    // Who holds it, read only where it decides or is reported: an object this revision
    // controls (every watch event of an installed bundle) needs neither.
    let holder = || match olm_k8s::holder(actual) {
        Holder::V0Managed { .. } if target.gvk.kind == "CustomResourceDefinition" => {
            Holder::V0Managed {
                csvs: v0_crd_owners.get(&target.name).cloned().unwrap_or_default(),
            }
        }
        other => other,
    };
    let collision = |holder: Holder| (report(Handling::Collision(holder), actual), None);
    let ctrl = controller_ref(actual);
    let ctrl_uid = ctrl
        .as_ref()
        .and_then(|r| r.get("uid"))
        .and_then(Value::as_str)
        .map(str::to_string);
    match ctrl_uid {
        None => {
            // OLM v0's objects (owned without a controller reference) are never adopted,
            // whatever the collision protection: its controllers would keep writing them, and
            // its operator runs on them — unless this revision takes its operator over
            // (`olm migrate`, with OLM v0 standing aside for that CSV). An object without a
            // controller that carries our revision annotation was orphaned by us (or the
            // garbage collector is about to delete it): never re-adopt.
            let holder = holder();
            if owner.takes_over(&holder) {
                adopt(actual)
            } else if holder.is_v0()
                || protection == CollisionProtection::Prevent
                || annotation(actual, REVISION_ANNOTATION).is_some()
            {
                collision(holder)
            } else {
                adopt(actual)
            }
        }
        Some(uid) if uid == owner.uid => {
            let object = prepare(desired, Some(actual), owner);
            if drifted(actual, &object) {
                // Probed as it is: the write only restores our fields.
                let r = report(Handling::Updated, actual);
                (
                    r,
                    Some(Write::Apply {
                        target: target.clone(),
                        object,
                    }),
                )
            } else {
                (report(Handling::Idle, actual), None)
            }
        }
        Some(uid) if owner.sibling_uids.contains(uid.as_str()) => {
            let theirs = object_revision(actual);
            match theirs.cmp(&owner.revision) {
                std::cmp::Ordering::Greater => (report(Handling::Progressed, actual), None),
                std::cmp::Ordering::Less => adopt(actual),
                std::cmp::Ordering::Equal => collision(holder()),
            }
        }
        Some(_) => {
            let holder = holder();
            if protection == CollisionProtection::None && !holder.is_v0() {
                adopt(actual)
            } else {
                collision(holder)
            }
        }
    }
}
