//! A ClusterExtension's status, as a pure function of what one reconcile observed.
//!
//! The extension controller runs a pipeline — finalizers, validation, listing the extension's
//! ClusterObjectSets, resolving a bundle, pulling it, applying it as a revision — and stops at the
//! first step that fails. [`compute`] is handed what the pipeline saw ([`Input`]) and returns
//! the status to write: the conditions, `install.bundle` and `activeRevisions`. It reproduces,
//! condition by condition, what upstream's reconcile steps write in ClusterObjectSet mode.
//!
//! # The flow
//!
//! 1. **Start from the previous status.** Everything below *updates* [`Input::previous`]: a
//!    condition the reconcile did not get to keeps its value, and a condition set to the status
//!    it already had keeps its `lastTransitionTime` (the rule of
//!    [`olm_k8s::set_status_condition`]). Changed conditions get [`Input::now`], cut to whole
//!    seconds. Every condition written gets `observedGeneration = generation`.
//! 2. **Finalizers failed** ([`Step::Finalize`]): `Progressing` from the error (see
//!    [Progressing from an error](#progressing-from-an-error)); nothing else. A reconcile that
//!    only added finalizers and returned has no status to compute.
//! 3. **Validation failed** ([`Step::Validate`], message = the validators' errors joined with
//!    `"\n"`): `Installed` Unknown/`Failed` and `Progressing` from the error, both with the
//!    message `operation cannot proceed due to the following validation error(s): <errors>`;
//!    `compute` adds that prefix.
//! 4. **Listing revisions failed** ([`Input::revisions`] is `Err`, or [`Step::Revisions`]):
//!    `install` cleared, `Installed` Unknown/`Failed` with the listing error, `Progressing`
//!    True/`Retrying` "retrying to get installed bundle".
//! 5. Otherwise the revisions are known ([`revision_states`] reads them from the
//!    ClusterObjectSets): the **installed** revision is the newest with `succeeded`, the
//!    **rolling-out** revisions are all others, oldest first ([`installed`], [`rolling_out`]).
//! 6. **Deprecation** from [`Input::resolution`] — always all four conditions once resolution
//!    was reached:
//!    - [`Resolution::SkippedRollingOut`][]: no catalog data;
//!    - [`Resolution::Resolved`][]: catalog data;
//!    - [`Resolution::Failed`] and [`Resolution::Fallback`]: catalog data exactly when the
//!      resolver still returned deprecations;
//!    - [`Resolution::NotReached`][]: untouched.
//!
//!    With catalog data: `PackageDeprecated` True with the package's message, else False
//!    "package not deprecated"; `ChannelDeprecated` True with the messages of the deprecated
//!    channels among the spec's channels (of every deprecated channel when the spec names none),
//!    else False "channel not deprecated"; `BundleDeprecated` True with the **installed**
//!    revision's bundle message, False "bundle not deprecated", or Unknown/`Absent` "no bundle
//!    installed yet" when nothing is installed; `Deprecated` True with all those messages
//!    joined by `"\n"` (package, channels, bundle), else False "not deprecated". Empty messages
//!    count as no deprecation. Without catalog data all four are Unknown/
//!    `DeprecationStatusUnknown` "deprecation status unknown: catalog data unavailable", except
//!    `BundleDeprecated`, which is Unknown/`Absent` "no bundle installed yet" when nothing is
//!    installed.
//!
//!    `BundleDeprecated` names what runs, not what was resolved: during an upgrade it still
//!    speaks of the old bundle, and once the new revision has rolled out (in the
//!    ClusterObjectSet's own controller, whose status change triggers the next reconcile) that
//!    revision is the installed one and the conditions are recomputed against it.
//!
//!    **Skipped catalogs** (olm's own; upstream fails resolution instead): after
//!    [`Resolution::Resolved`] or [`Resolution::Failed`] that skipped selected catalogs serving
//!    nothing, `CatalogsSkipped` True/`NotServing` with `catalog "x" was skipped (not serving:
//!    …)` for each, joined by `"; "`; after one that skipped none, and in fallback, the
//!    condition is removed. Untouched when catalogs were not consulted.
//! 7. **Fallback** (no matching catalog exists; the installed bundle is kept): `Installed` from
//!    the revisions (see step 10), then the pipeline goes on.
//! 8. **Resolution failed** ([`Resolution::Failed`], or [`Step::Resolve`]): `Progressing` from
//!    the resolver's error, `Installed` from the revisions.
//! 9. **Pull or apply failed** ([`Step::Unpack`], [`Step::Apply`]): `Progressing` from
//!    `error for resolved bundle "<name>" with version "<version>": <error>` — `compute` adds
//!    the prefix, naming the bundle the pipeline was working on (the resolved bundle, the
//!    installed one in fallback, the oldest rolling-out one while a rollout is in flight).
//!    `Installed` from the revisions, except after a terminal apply error (`Blocked`,
//!    `InvalidConfiguration`), where `Progressing` says it all and `Installed` is left as it was.
//! 10. **Applied** (no stop): `activeRevisions` rebuilt — the installed revision by name only,
//!     then each rolling-out revision with its `Available` and `Progressing` conditions; the
//!     installed revision's `Available` and `Progressing` are mirrored onto the extension, then
//!     the newest rolling-out revision's `Progressing` over it (so a rollout, its retries and its
//!     `ProgressDeadlineExceeded` dominate); `Installed` from the revisions: True/`Succeeded`
//!     `Installed bundle <image> successfully` and `install.bundle` when a revision is
//!     installed, else `install` cleared and False "No bundle installed" with reason `Absent`
//!     while the newest rolling-out revision is progressing healthily, `Failed` when there is no
//!     rolling-out revision or the newest one's `Progressing` reason is `Retrying`.
//!
//! ## Progressing from an error
//!
//! [`StopKind::Retrying`] gives True/`Retrying`; [`StopKind::Blocked`] False/`Blocked`;
//! [`StopKind::InvalidConfiguration`] False/`InvalidConfiguration`. The message is the error
//! with ephemeral socket addresses removed ([`message::sanitize_network_error`]); for the two
//! terminal kinds a leading "terminal error: " is removed first, before the prefixes of steps 3
//! and 9 go in front (upstream unwraps the terminal error before wrapping it).
//!
//! # Guarantees
//!
//! - Pure and deterministic: no clock, no I/O; the same input gives the same status.
//! - Every condition message is at most 32768 bytes ([`olm_k8s::bounded_message`], applied by
//!   [`olm_k8s::set_status_condition`] and by the mirroring of revision conditions).
//! - Condition order is fixed: `Installed`, `Progressing`, `Available`, `Deprecated`,
//!   `PackageDeprecated`, `ChannelDeprecated`, `BundleDeprecated`, `CatalogsSkipped`, then any
//!   other types the previous status carried, in their previous order. (Upstream keeps the
//!   order in which types were first added; the list is a map keyed by type, so only a status
//!   diff sees the difference.)
//! - `lastTransitionTime` moves only when a condition's status does. Mirrored revision
//!   conditions take the revision's own `lastTransitionTime` when they change status, as
//!   upstream's copy does, so the extension reports when the rollout actually changed.
//! - Inconsistent inputs are read in pipeline order: the earliest failure wins (a validation
//!   stop ignores revisions and resolution; a listing error ignores the resolution; a failed
//!   resolution ignores a later stop). Revisions are sorted by `revision` here, whatever order
//!   they come in.
//!
//! # Caveats
//!
//! - Upstream also fills any *missing* `Installed`/`Progressing` with False/`Retrying` and a
//!   "failed to resolve bundle: …" or "unable to upgrade to version …" message after a
//!   resolution failure; both conditions are always set just before, so that text never
//!   reaches a status and is not reproduced.
//! - Deprecation messages are joined in the order of [`olm_resolve::Deprecations`]: the
//!   package's, then the channels' in the order the spec lists them (by name when the spec
//!   names none), then the bundle's. Upstream joins in catalog order; the two agree whenever the
//!   catalog lists the spec's channels in the spec's order. A catalog with two entries for one
//!   channel contributes one message (the index keeps the last).
//! - After a successful apply with an installed revision that carries no `Progressing`
//!   condition and nothing rolling out, `Progressing` becomes True/`Succeeded` "Desired state
//!   reached". Upstream's ClusterObjectSet mode would keep whatever `Progressing` said before;
//!   the ClusterObjectSet controller always sets `Progressing` with `Succeeded`, so the case is
//!   a revision no controller has reconciled yet.
//! - The status reflects the revisions as listed before applying (as upstream): a revision the
//!   apply just created shows up on the next reconcile, which its creation triggers.

use std::cmp::Ordering;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use olm_api::extension::condition_type as ty;
use olm_api::{
    BundleMetadata, ClusterExtensionInstallStatus, ClusterExtensionStatus, ClusterObjectSet,
    ExtensionReason, LifecycleState, RevisionStatus,
};
use olm_k8s::{
    BUNDLE_NAME_KEY, BUNDLE_REFERENCE_KEY, BUNDLE_RELEASE_KEY, BUNDLE_VERSION_KEY, ConditionStatus,
    ConditionUpdate, find_status_condition, set_status_condition, status_of,
};
use olm_resolve::{Deprecations, Skipped};

use crate::message;

/// What one reconcile of a ClusterExtension observed, as far as its status is concerned.
#[derive(Debug, Clone)]
pub struct Input<'a> {
    /// `metadata.generation`: the `observedGeneration` of every condition written.
    pub generation: i64,
    /// The time a condition that changes status transitioned (cut to whole seconds).
    pub now: jiff::Timestamp,
    /// The status as read; conditions the reconcile does not touch are kept from it.
    pub previous: Option<&'a ClusterExtensionStatus>,
    /// The extension's non-archived ClusterObjectSets, or why listing them failed.
    pub revisions: Result<&'a [RevisionState], String>,
    /// How far bundle resolution got, and what it returned.
    pub resolution: Resolution<'a>,
    /// The step that stopped the pipeline; `None` when every step ran.
    pub stop: Option<Stop>,
}

/// One non-archived ClusterObjectSet of the extension.
#[derive(Debug, Clone, PartialEq)]
pub struct RevisionState {
    /// The ClusterObjectSet's name.
    pub name: String,
    /// Its `spec.revision`.
    pub revision: i64,
    /// The bundle it installs (from its bundle name/version/release annotations).
    pub bundle: BundleMetadata,
    /// The bundle image (its bundle-reference annotation).
    pub image: String,
    /// Whether its `Succeeded` condition is True (latched once the rollout completed).
    pub succeeded: bool,
    /// Its `status.conditions`.
    pub conditions: Vec<Condition>,
}

/// What bundle resolution did in this reconcile.
#[derive(Debug, Clone)]
pub enum Resolution<'a> {
    /// The pipeline stopped before resolving: deprecation conditions are left as they were.
    NotReached,
    /// A revision is rolling out, so catalogs were not consulted and the oldest rolling-out
    /// revision is carried on: deprecation is Unknown.
    SkippedRollingOut,
    /// A bundle was chosen.
    Resolved {
        /// The chosen bundle; named in pull and apply errors.
        bundle: BundleMetadata,
        /// Its image (what the pipeline pulls; status does not print it, the `Installed`
        /// message names the installed revision's image).
        image: &'a str,
        /// The package's deprecations in the catalog the bundle came from.
        deprecations: &'a Deprecations,
        /// `spec.source.catalog.channels`.
        channels: &'a [String],
        /// Selected catalogs resolution went on without because they serve nothing.
        skipped: &'a [Skipped],
    },
    /// Resolution failed and no ClusterCatalog matching the selector exists: the installed
    /// bundle is kept and applied again.
    Fallback {
        /// Deprecations the resolver still returned (normally none: there is no catalog).
        deprecations: Option<&'a Deprecations>,
        /// `spec.source.catalog.channels`.
        channels: &'a [String],
    },
    /// Resolution failed; the pipeline stops and retries.
    Failed {
        /// The resolver's error; it becomes the `Progressing` message.
        message: String,
        /// Deprecations of the selected catalog, when the resolver got that far.
        deprecations: Option<&'a Deprecations>,
        /// `spec.source.catalog.channels`.
        channels: &'a [String],
        /// Selected catalogs resolution went on without because they serve nothing (the
        /// message names them too).
        skipped: &'a [Skipped],
    },
}

/// Where and how the pipeline stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    /// The step that failed.
    pub step: Step,
    /// The step's own error text; `compute` adds the prefixes upstream puts in front of it.
    pub message: String,
    /// Whether a retry may help.
    pub kind: StopKind,
}

/// The steps of the extension pipeline, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// Adding or running finalizers.
    Finalize,
    /// Validating the extension (message: the validators' errors joined with `"\n"`).
    Validate,
    /// Listing the extension's ClusterObjectSets (prefer [`Input::revisions`] = `Err`).
    Revisions,
    /// Resolving a bundle (prefer [`Resolution::Failed`]).
    Resolve,
    /// Pulling the bundle image; only a stop when the bundle is not the installed one
    /// ([`is_installed_bundle`]).
    Unpack,
    /// Rendering, checking and applying the bundle as a revision.
    Apply,
}

/// How an error stops the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StopKind {
    /// Retryable: `Progressing` True/`Retrying`.
    Retrying,
    /// Terminal, needs a user's change: `Progressing` False/`Blocked`.
    Blocked,
    /// Terminal because the inline configuration does not fit the bundle's schema:
    /// `Progressing` False/`InvalidConfiguration`.
    InvalidConfiguration,
}

/// The revision states of an extension's ClusterObjectSets (those labelled with its
/// `owner-name`), as upstream's ClusterObjectSet revision getter reads them: archived ones
/// skipped, sorted by `spec.revision`, the bundle taken from the bundle annotations (a missing
/// one reads as empty; `release` only when its annotation exists), `succeeded` from a True
/// `Succeeded` condition.
pub fn revision_states(sets: &[ClusterObjectSet]) -> Vec<RevisionState> {
    let mut out: Vec<RevisionState> = sets
        .iter()
        .filter(|s| s.spec.lifecycle_state != LifecycleState::Archived)
        .map(|s| {
            let annotations = s.metadata.annotations.as_ref();
            let get = |key: &str| annotations.and_then(|a| a.get(key)).cloned();
            let conditions = s
                .status
                .as_ref()
                .map(|st| st.conditions.clone())
                .unwrap_or_default();
            RevisionState {
                name: s.metadata.name.clone().unwrap_or_default(),
                revision: s.spec.revision,
                bundle: BundleMetadata {
                    name: get(BUNDLE_NAME_KEY).unwrap_or_default(),
                    version: get(BUNDLE_VERSION_KEY).unwrap_or_default(),
                    release: get(BUNDLE_RELEASE_KEY),
                },
                image: get(BUNDLE_REFERENCE_KEY).unwrap_or_default(),
                succeeded: status_of(&conditions, SUCCEEDED) == Some(ConditionStatus::True),
                conditions,
            }
        })
        .collect();
    out.sort_by(order);
    out
}

/// The installed revision: the newest one whose rollout succeeded.
pub fn installed(revisions: &[RevisionState]) -> Option<&RevisionState> {
    revisions
        .iter()
        .filter(|r| r.succeeded)
        .max_by(|a, b| order(a, b))
}

/// The revisions still rolling out (not succeeded), oldest first. The first is the one the
/// pipeline carries on while a rollout is in flight.
pub fn rolling_out(revisions: &[RevisionState]) -> Vec<&RevisionState> {
    let mut out: Vec<&RevisionState> = revisions.iter().filter(|r| !r.succeeded).collect();
    out.sort_by(|a, b| order(a, b));
    out
}

/// Whether `bundle` is the installed revision's bundle (same name and version). A pull failure
/// for such a bundle does not stop the pipeline: the apply step carries on without content and
/// keeps the installed revision, so it is no [`Step::Unpack`] stop.
pub fn is_installed_bundle(bundle: &BundleMetadata, revisions: &[RevisionState]) -> bool {
    installed(revisions)
        .is_some_and(|i| i.bundle.name == bundle.name && i.bundle.version == bundle.version)
}

/// The prefix upstream puts before pull and apply errors.
fn resolved_bundle_prefix(bundle: &BundleMetadata) -> String {
    format!(
        "error for resolved bundle {} with version {}: ",
        olm_goenc::quote(&bundle.name),
        olm_goenc::quote(&bundle.version)
    )
}

/// The ClusterObjectSet condition that latches a completed rollout.
const SUCCEEDED: &str = "Succeeded";

const VALIDATION_PREFIX: &str =
    "operation cannot proceed due to the following validation error(s): ";
const RETRYING_TO_GET_INSTALLED_BUNDLE: &str = "retrying to get installed bundle";
const NO_BUNDLE_INSTALLED: &str = "No bundle installed";
const DESIRED_STATE_REACHED: &str = "Desired state reached";
const CATALOG_DATA_UNAVAILABLE: &str = "deprecation status unknown: catalog data unavailable";
const NO_BUNDLE_INSTALLED_YET: &str = "no bundle installed yet";

/// The fixed order of the conditions `compute` writes.
const ORDER: [&str; 8] = [
    ty::INSTALLED,
    ty::PROGRESSING,
    ty::AVAILABLE,
    ty::DEPRECATED,
    ty::PACKAGE_DEPRECATED,
    ty::CHANNEL_DEPRECATED,
    ty::BUNDLE_DEPRECATED,
    ty::CATALOGS_SKIPPED,
];

/// Computes the status to write; see the [module documentation](self) for the rules.
pub fn compute(input: &Input<'_>) -> ClusterExtensionStatus {
    let now = jiff::Timestamp::from_second(input.now.as_second()).unwrap_or(input.now);
    let mut w = Writer {
        status: input.previous.cloned().unwrap_or_default(),
        generation: input.generation,
        now: Time(now),
    };
    match observe(input) {
        Observed::Finalize { message, kind } => w.progressing_from_error(message, kind),
        Observed::Validate { message, kind } => {
            let message = format!("{VALIDATION_PREFIX}{}", unwrap_terminal(message, kind));
            w.set(
                ty::INSTALLED,
                ConditionStatus::Unknown,
                ExtensionReason::Failed,
                &message,
            );
            w.progressing_from_error(&message, kind);
        }
        Observed::Listing { message } => {
            w.status.install = None;
            w.set(
                ty::INSTALLED,
                ConditionStatus::Unknown,
                ExtensionReason::Failed,
                message,
            );
            w.set(
                ty::PROGRESSING,
                ConditionStatus::True,
                ExtensionReason::Retrying,
                RETRYING_TO_GET_INSTALLED_BUNDLE,
            );
        }
        Observed::Pipeline { revisions, end } => {
            let installed = installed(revisions);
            let rolling = rolling_out(revisions);
            w.deprecation(&input.resolution, installed);
            w.catalogs_skipped(&input.resolution);
            if let Resolution::Fallback { .. } = input.resolution {
                w.installed_from(installed, &rolling);
            }
            match end {
                End::Resolve { message, kind } => {
                    w.progressing_from_error(message, kind);
                    w.installed_from(installed, &rolling);
                }
                End::Unpack { message, kind } => {
                    let bundle = working_bundle(&input.resolution, installed, &rolling);
                    w.progressing_from_bundle_error(bundle, message, kind);
                    w.installed_from(installed, &rolling);
                }
                End::Apply { message, kind } => {
                    let bundle = working_bundle(&input.resolution, installed, &rolling);
                    w.progressing_from_bundle_error(bundle, message, kind);
                    if kind == StopKind::Retrying {
                        w.installed_from(installed, &rolling);
                    }
                }
                End::Applied => w.applied(installed, &rolling),
            }
        }
    }
    w.finish()
}

/// What stopped the pipeline, read in pipeline order.
enum Observed<'i> {
    Finalize {
        message: &'i str,
        kind: StopKind,
    },
    Validate {
        message: &'i str,
        kind: StopKind,
    },
    Listing {
        message: &'i str,
    },
    Pipeline {
        revisions: &'i [RevisionState],
        end: End<'i>,
    },
}

/// How a pipeline that listed its revisions ended.
enum End<'i> {
    Resolve { message: &'i str, kind: StopKind },
    Unpack { message: &'i str, kind: StopKind },
    Apply { message: &'i str, kind: StopKind },
    Applied,
}

fn observe<'i>(input: &'i Input<'_>) -> Observed<'i> {
    let stop = input.stop.as_ref();
    if let Some(s) = stop {
        let (message, kind) = (s.message.as_str(), s.kind);
        match s.step {
            Step::Finalize => return Observed::Finalize { message, kind },
            Step::Validate => return Observed::Validate { message, kind },
            Step::Revisions | Step::Resolve | Step::Unpack | Step::Apply => {}
        }
    }
    let revisions = match &input.revisions {
        Err(message) => return Observed::Listing { message },
        Ok(revisions) => *revisions,
    };
    let end = match (stop, &input.resolution) {
        (Some(s), _) if s.step == Step::Revisions => {
            return Observed::Listing {
                message: &s.message,
            };
        }
        (stop, Resolution::Failed { message, .. }) => End::Resolve {
            message,
            kind: stop
                .filter(|s| s.step == Step::Resolve)
                .map_or(StopKind::Retrying, |s| s.kind),
        },
        (Some(s), _) => {
            let (message, kind) = (s.message.as_str(), s.kind);
            match s.step {
                Step::Unpack => End::Unpack { message, kind },
                Step::Apply => End::Apply { message, kind },
                Step::Finalize | Step::Validate | Step::Revisions | Step::Resolve => {
                    End::Resolve { message, kind }
                }
            }
        }
        (None, _) => End::Applied,
    };
    Observed::Pipeline { revisions, end }
}

/// The bundle the pipeline pulled and applied: the resolved one, the installed one in
/// fallback, the oldest rolling-out one while a rollout is in flight.
fn working_bundle<'r>(
    resolution: &'r Resolution<'_>,
    installed: Option<&'r RevisionState>,
    rolling: &[&'r RevisionState],
) -> Option<&'r BundleMetadata> {
    match resolution {
        Resolution::Resolved { bundle, .. } => Some(bundle),
        Resolution::Fallback { .. } => installed.map(|r| &r.bundle),
        Resolution::SkippedRollingOut => rolling.first().map(|r| &r.bundle),
        Resolution::NotReached | Resolution::Failed { .. } => None,
    }
}

fn order(a: &RevisionState, b: &RevisionState) -> Ordering {
    a.revision.cmp(&b.revision)
}

/// The status under construction, with the generation and time every write uses.
struct Writer {
    status: ClusterExtensionStatus,
    generation: i64,
    now: Time,
}

impl Writer {
    fn set(&mut self, type_: &str, status: ConditionStatus, reason: ExtensionReason, msg: &str) {
        set_status_condition(
            &mut self.status.conditions,
            ConditionUpdate {
                type_,
                status,
                reason: reason.as_str(),
                message: msg,
                observed_generation: self.generation,
            },
            &self.now,
        );
    }

    fn progressing_from_error(&mut self, msg: &str, kind: StopKind) {
        let (status, reason) = match kind {
            StopKind::Retrying => (ConditionStatus::True, ExtensionReason::Retrying),
            StopKind::Blocked => (ConditionStatus::False, ExtensionReason::Blocked),
            StopKind::InvalidConfiguration => (
                ConditionStatus::False,
                ExtensionReason::InvalidConfiguration,
            ),
        };
        let text = message::sanitize_network_error(unwrap_terminal(msg, kind));
        self.set(ty::PROGRESSING, status, reason, &text);
    }

    /// A pull or apply error, named after the bundle it was for. The terminal marker goes
    /// before the prefix is added, as upstream unwraps the error before wrapping it.
    fn progressing_from_bundle_error(
        &mut self,
        bundle: Option<&BundleMetadata>,
        msg: &str,
        kind: StopKind,
    ) {
        let inner = unwrap_terminal(msg, kind);
        match bundle {
            Some(b) => {
                let full = format!("{}{inner}", resolved_bundle_prefix(b));
                self.progressing_from_error(&full, kind);
            }
            None => self.progressing_from_error(inner, kind),
        }
    }

    /// `Installed` and `install` from the revisions.
    fn installed_from(&mut self, installed: Option<&RevisionState>, rolling: &[&RevisionState]) {
        match installed {
            Some(i) => {
                self.status.install = Some(ClusterExtensionInstallStatus {
                    bundle: i.bundle.clone(),
                });
                self.set(
                    ty::INSTALLED,
                    ConditionStatus::True,
                    ExtensionReason::Succeeded,
                    &format!("Installed bundle {} successfully", i.image),
                );
            }
            None => {
                self.status.install = None;
                let reason = not_installed_reason(rolling);
                self.set(
                    ty::INSTALLED,
                    ConditionStatus::False,
                    reason,
                    NO_BUNDLE_INSTALLED,
                );
            }
        }
    }

    fn deprecation(&mut self, resolution: &Resolution<'_>, installed: Option<&RevisionState>) {
        let data = match resolution {
            Resolution::NotReached => return,
            Resolution::SkippedRollingOut => None,
            Resolution::Resolved {
                deprecations,
                channels,
                ..
            } => Some((*deprecations, *channels)),
            Resolution::Fallback {
                deprecations,
                channels,
            }
            | Resolution::Failed {
                deprecations,
                channels,
                ..
            } => deprecations.map(|d| (d, *channels)),
        };
        let bundle_name = installed.map(|r| r.bundle.name.as_str());
        let Some((deps, channels)) = data else {
            for t in [
                ty::DEPRECATED,
                ty::PACKAGE_DEPRECATED,
                ty::CHANNEL_DEPRECATED,
            ] {
                self.set(
                    t,
                    ConditionStatus::Unknown,
                    ExtensionReason::DeprecationStatusUnknown,
                    CATALOG_DATA_UNAVAILABLE,
                );
            }
            let (reason, msg) = match bundle_name {
                Some(_) => (
                    ExtensionReason::DeprecationStatusUnknown,
                    CATALOG_DATA_UNAVAILABLE,
                ),
                None => (ExtensionReason::Absent, NO_BUNDLE_INSTALLED_YET),
            };
            self.set(ty::BUNDLE_DEPRECATED, ConditionStatus::Unknown, reason, msg);
            return;
        };
        let package: Vec<&str> = deps.package.as_deref().into_iter().collect();
        let channel = channel_messages(deps, channels);
        let bundle: Vec<&str> = bundle_name
            .and_then(|n| deps.bundles.get(n))
            .map(String::as_str)
            .into_iter()
            .collect();
        let (package, channel, bundle) = (nonempty(package), nonempty(channel), nonempty(bundle));
        let all: Vec<&str> = package
            .iter()
            .chain(&channel)
            .chain(&bundle)
            .copied()
            .collect();
        self.deprecated_or(ty::DEPRECATED, &all, "not deprecated");
        self.deprecated_or(ty::PACKAGE_DEPRECATED, &package, "package not deprecated");
        self.deprecated_or(ty::CHANNEL_DEPRECATED, &channel, "channel not deprecated");
        if bundle_name.is_some() {
            self.deprecated_or(ty::BUNDLE_DEPRECATED, &bundle, "bundle not deprecated");
        } else {
            self.set(
                ty::BUNDLE_DEPRECATED,
                ConditionStatus::Unknown,
                ExtensionReason::Absent,
                NO_BUNDLE_INSTALLED_YET,
            );
        }
    }

    fn deprecated_or(&mut self, type_: &str, messages: &[&str], not_deprecated: &str) {
        if messages.is_empty() {
            self.set(
                type_,
                ConditionStatus::False,
                ExtensionReason::NotDeprecated,
                not_deprecated,
            );
        } else {
            self.set(
                type_,
                ConditionStatus::True,
                ExtensionReason::Deprecated,
                &messages.join("\n"),
            );
        }
    }

    /// The apply step succeeded: revisions, mirrored conditions, `Installed`.
    fn applied(&mut self, installed: Option<&RevisionState>, rolling: &[&RevisionState]) {
        let generation = self.generation;
        let mut active = Vec::with_capacity(rolling.len() + 1);
        let mut progressing_mirrored = false;
        if let Some(i) = installed {
            for t in [ty::AVAILABLE, ty::PROGRESSING] {
                if let Some(c) = find_status_condition(&i.conditions, t) {
                    mirror(&mut self.status.conditions, c, generation);
                    progressing_mirrored |= t == ty::PROGRESSING;
                }
            }
            active.push(RevisionStatus {
                name: i.name.clone(),
                conditions: Vec::new(),
            });
        }
        for (idx, r) in rolling.iter().enumerate() {
            let mut conditions = Vec::new();
            for t in [ty::AVAILABLE, ty::PROGRESSING] {
                if let Some(c) = find_status_condition(&r.conditions, t) {
                    mirror(&mut conditions, c, generation);
                }
            }
            if idx + 1 == rolling.len() {
                match find_status_condition(&r.conditions, ty::PROGRESSING) {
                    Some(c) => mirror(&mut self.status.conditions, c, generation),
                    // Created a moment ago (in this very reconcile, or its status not written
                    // yet): it is rolling out, whatever the previous revision reported. Left
                    // alone, `Progressing` would say the previous revision's "has rolled out"
                    // for the new generation.
                    None => self.set(
                        ty::PROGRESSING,
                        ConditionStatus::True,
                        ExtensionReason::RollingOut,
                        &format!("Revision {} is rolling out.", r.bundle.version),
                    ),
                }
                progressing_mirrored = true;
            }
            active.push(RevisionStatus {
                name: r.name.clone(),
                conditions,
            });
        }
        self.status.active_revisions = active;
        if installed.is_some() && rolling.is_empty() && !progressing_mirrored {
            self.set(
                ty::PROGRESSING,
                ConditionStatus::True,
                ExtensionReason::Succeeded,
                DESIRED_STATE_REACHED,
            );
        }
        self.installed_from(installed, rolling);
    }

    /// `CatalogsSkipped` from what the last resolution skipped: True/`NotServing` naming each
    /// skipped catalog and why, removed when it skipped none (so a cluster whose catalogs all
    /// serve carries upstream's conditions only); left alone when catalogs were not consulted.
    fn catalogs_skipped(&mut self, resolution: &Resolution<'_>) {
        let skipped = match resolution {
            Resolution::NotReached | Resolution::SkippedRollingOut => return,
            Resolution::Fallback { .. } => &[][..],
            Resolution::Resolved { skipped, .. } | Resolution::Failed { skipped, .. } => *skipped,
        };
        if skipped.is_empty() {
            self.status
                .conditions
                .retain(|c| c.type_ != ty::CATALOGS_SKIPPED);
            return;
        }
        let text = skipped
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ");
        // A catalog's pull error may name ephemeral socket addresses; a retry failing the same
        // way must not rewrite the status.
        let text = message::sanitize_network_error(&text);
        self.set(
            ty::CATALOGS_SKIPPED,
            ConditionStatus::True,
            ExtensionReason::NotServing,
            &text,
        );
    }

    fn finish(mut self) -> ClusterExtensionStatus {
        let rank = |c: &Condition| {
            ORDER
                .iter()
                .position(|t| *t == c.type_)
                .unwrap_or(ORDER.len())
        };
        self.status.conditions.sort_by_key(rank);
        self.status
    }
}

/// A terminal error's text without its marker, before a prefix goes in front of it.
fn unwrap_terminal(msg: &str, kind: StopKind) -> &str {
    match kind {
        StopKind::Retrying => msg,
        StopKind::Blocked | StopKind::InvalidConfiguration => message::strip_terminal_prefix(msg),
    }
}

/// Drops empty messages: an entry without a message deprecates nothing in status.
fn nonempty(messages: Vec<&str>) -> Vec<&str> {
    messages.into_iter().filter(|m| !m.is_empty()).collect()
}

/// `Installed` False's reason: `Absent` while the newest rolling-out revision progresses
/// without error, `Failed` when nothing rolls out or the newest says `Retrying`.
fn not_installed_reason(rolling: &[&RevisionState]) -> ExtensionReason {
    let Some(latest) = rolling.last() else {
        return ExtensionReason::Failed;
    };
    match find_status_condition(&latest.conditions, ty::PROGRESSING) {
        Some(c) if c.reason == ExtensionReason::Retrying.as_str() => ExtensionReason::Failed,
        _ => ExtensionReason::Absent,
    }
}

/// The messages of the deprecated channels that matter: those the spec names, in its order
/// (each once), or every deprecated channel when it names none.
fn channel_messages<'d>(deps: &'d Deprecations, channels: &[String]) -> Vec<&'d str> {
    if channels.is_empty() {
        return deps.channels.values().map(String::as_str).collect();
    }
    let mut seen: Vec<&str> = Vec::with_capacity(channels.len());
    let mut out = Vec::new();
    for c in channels {
        if seen.contains(&c.as_str()) {
            continue;
        }
        seen.push(c);
        if let Some(m) = deps.channels.get(c.as_str()) {
            out.push(m.as_str());
        }
    }
    out
}

/// Copies a revision's condition onto a list as `meta.SetStatusCondition` does with a condition
/// that carries its own transition time: a new entry or a status change takes the revision's
/// `lastTransitionTime`; reason, message and generation are updated in place.
fn mirror(conditions: &mut Vec<Condition>, from: &Condition, generation: i64) {
    let msg = olm_k8s::bounded_message(&from.message);
    match conditions.iter_mut().find(|c| c.type_ == from.type_) {
        None => conditions.push(Condition {
            message: msg.into_owned(),
            observed_generation: Some(generation),
            ..from.clone()
        }),
        Some(c) => {
            if c.status != from.status {
                c.status.clone_from(&from.status);
                c.last_transition_time = from.last_transition_time.clone();
            }
            c.reason.clone_from(&from.reason);
            c.message = msg.into_owned();
            c.observed_generation = Some(generation);
        }
    }
}
