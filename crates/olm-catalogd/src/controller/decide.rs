//! What one ClusterCatalog reconcile does, decided without touching the world.
//!
//! [`decide`] looks at the object, what is stored for it and the time, and answers either with
//! the one piece of I/O it needs the outcome of ([`Work`]: unpack the image, or delete the stored
//! content) or with the final [`Plan`]. After doing the work, the shell hands its outcome to
//! [`conclude`], which always answers with a plan. The shell then writes the plan's status (if
//! any), patches the metadata (if asked), and requeues as told. Every branch is a plain
//! `#[test]` below, with upstream's controller test cases as data.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::ResourceExt;
use olm_api::catalog::{TYPE_PROGRESSING, TYPE_SERVING};
use olm_api::{
    AvailabilityMode, CatalogReason, CatalogUrls, ClusterCatalog, ClusterCatalogStatus,
    ResolvedCatalogSource, ResolvedImageSource, SourceType,
};
use olm_image::ImageRef;
use olm_k8s::{
    CATALOG_CACHE_FINALIZER, CATALOG_CONFIGS_LABEL, ConditionStatus, ConditionUpdate,
    METADATA_NAME_LABEL, set_status_condition,
};

use crate::storage::{Record, whole_seconds};

/// Message of both conditions in `Unavailable` mode.
pub const MSG_UNAVAILABLE: &str = "Catalog availability mode is set to Unavailable";
/// Progressing message after a successful unpack.
pub const MSG_SUCCEEDED: &str = "Successfully unpacked and stored content from resolved source";
/// Serving message while content is served.
pub const MSG_SERVING: &str = "Serving desired content from resolved source";

/// Everything a decision looks at.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The object as the watch delivered it.
    pub catalog: &'a ClusterCatalog,
    /// What storage serves for this catalog, if anything.
    pub stored: Option<&'a Record>,
    /// `status.urls.base` of this catalog.
    pub base_url: &'a str,
    /// The time of this reconcile; no decision reads the clock.
    pub now: jiff::Timestamp,
}

/// The I/O a decision needs the outcome of before it can finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// Resolve `reference`; unless the digest is the stored one, pull the image's configs
    /// directory and store its FBC. Report with [`Done::Unpacked`].
    Unpack {
        /// `spec.source.image.ref`.
        reference: String,
    },
    /// Delete the stored content. Report with [`Done::Deleted`], passing `then` back.
    DeleteContent {
        /// Why the content goes.
        then: AfterDelete,
    },
}

/// Why content is deleted, so that [`conclude`] knows what comes after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterDelete {
    /// The object is being deleted: let it go.
    Finalize,
    /// `availabilityMode: Unavailable`: say so.
    MakeUnavailable,
}

/// The outcome of a [`Work`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Done {
    /// The unpack stored (or, for an unchanged digest, re-confirmed) this record, or failed.
    Unpacked(Result<Record, UnpackFailure>),
    /// The content is gone, or deleting it failed with this message.
    Deleted(AfterDelete, Result<(), String>),
}

/// Why an unpack failed; [`conclude`] turns it into upstream's condition message and decides
/// whether retrying can help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnpackFailure {
    /// The reference does not parse (the error's text).
    InvalidReference(String),
    /// Resolving or pulling failed (the error's text).
    Source(String),
    /// The image has no usable `operators.operatorframework.io.index.configs.v1` label.
    MissingConfigsLabel,
    /// The image holds more than the catalog limits allow (the error's text, which names the
    /// limit and the flag that raises it). The shell does not pull that digest again.
    TooLarge(String),
    /// The content could not be loaded or written (the error's text).
    Store(String),
}

/// What the shell does to finish a reconcile, in this order.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Replace the status with this; `None` when it would not change.
    pub status: Option<ClusterCatalogStatus>,
    /// Then change the metadata.
    pub metadata: Metadata,
    /// Then come back as told.
    pub next: Next,
}

/// A change to the object's metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metadata {
    /// Nothing.
    Keep,
    /// Add our finalizer and the `olm.operatorframework.io/metadata.name` label.
    AddFinalizerAndLabel,
    /// Remove our finalizer.
    RemoveFinalizer,
}

/// When the next reconcile happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Only when the object changes.
    AwaitChange,
    /// After this long (the next poll), or earlier if the object changes.
    RequeueAfter(Duration),
    /// After the retry delay: this failure (already in status) may go away by itself.
    Retry(String),
}

/// The answer of [`decide`].
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Do this, then call [`conclude`] with its outcome.
    Work(Work),
    /// Finish with this.
    Plan(Plan),
}

/// What a decision branches on first; matched exhaustively so no combination is forgotten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Observed {
    lifecycle: Lifecycle,
    /// Our finalizer is present.
    finalizer: bool,
    /// The name label is present and right.
    labelled: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    Deleting,
    Unavailable,
    Available,
}

impl Observed {
    fn of(cat: &ClusterCatalog) -> Observed {
        let lifecycle = if cat.metadata.deletion_timestamp.is_some() {
            Lifecycle::Deleting
        } else if cat.spec.availability_mode == AvailabilityMode::Unavailable {
            Lifecycle::Unavailable
        } else {
            Lifecycle::Available
        };
        Observed {
            lifecycle,
            finalizer: cat
                .finalizers()
                .iter()
                .any(|f| f == CATALOG_CACHE_FINALIZER),
            labelled: cat.labels().get(METADATA_NAME_LABEL) == Some(&cat.name_any()),
        }
    }
}

/// Decides the first step of a reconcile.
///
/// # Flow
///
/// 1. Being deleted with our finalizer: delete the stored content ([`Work::DeleteContent`]);
///    [`conclude`] then reports Serving False/`Unavailable`, clears `resolvedSource`, `urls`
///    and `lastUnpacked`, and removes the finalizer. Without our finalizer there is nothing
///    left to do: other finalizers hold the object, not us.
/// 2. `availabilityMode: Unavailable`: delete the stored content; [`conclude`] then reports
///    Progressing True/`Succeeded` and Serving False/`UserSpecifiedUnavailable` ("Catalog
///    availability mode is set to Unavailable"), clears the served fields and removes the
///    finalizer, which has nothing left to guard.
/// 3. Finalizer or name label missing: add both in one patch and wait for the change event.
/// 4. No image source (the CRD forbids it): Progressing False/`Blocked`.
/// 5. Content stored, status already what serving it says (for this generation), and no poll
///    due: nothing to do until the next poll (plus up to 1% jitter) or a change. This is what
///    lets a restarted process serve at once without pulling: everything needed is on disk and
///    in the object's status.
/// 6. Otherwise unpack ([`Work::Unpack`]).
///
/// # Guarantees
///
/// - A pure function of its inputs: the same inputs give the same decision, jitter included.
/// - At most one piece of work per reconcile: [`conclude`] only ever returns a plan.
/// - `Plan::status` is `Some` only when it differs from the object's status, so a reconcile
///   that changes nothing writes nothing.
/// - The finalizer is removed only after the content is gone.
///
/// # Assumptions
///
/// - `inputs.stored` is what storage serves right now; a record whose content is unreadable is
///   not stored (storage drops it when it opens).
/// - The shell performs a plan in order: status, then metadata, then requeue; and it patches
///   metadata against the object's current resourceVersion.
///
/// # Caveats
///
/// - A changed generation forces an unpack even when only `priority` changed, as upstream;
///   an unchanged digest then only refreshes the poll time.
/// - Conditions of other types are kept as they are.
///
/// # Errors
///
/// None: every failure is a status to write and a [`Next`] to follow.
pub fn decide(inputs: &Inputs<'_>) -> Decision {
    let cat = inputs.catalog;
    let observed = Observed::of(cat);
    match (observed.lifecycle, observed.finalizer, observed.labelled) {
        (Lifecycle::Deleting, true, _) => Decision::Work(Work::DeleteContent {
            then: AfterDelete::Finalize,
        }),
        (Lifecycle::Deleting, false, _) => Decision::Plan(Plan::idle()),
        (Lifecycle::Unavailable, _, _) => Decision::Work(Work::DeleteContent {
            then: AfterDelete::MakeUnavailable,
        }),
        (Lifecycle::Available, false, _) | (Lifecycle::Available, true, false) => {
            Decision::Plan(Plan {
                status: None,
                metadata: Metadata::AddFinalizerAndLabel,
                next: Next::AwaitChange,
            })
        }
        (Lifecycle::Available, true, true) => source(inputs),
    }
}

/// Step 4 onwards of [`decide`]: the object is ours and wants its content served.
fn source(inputs: &Inputs<'_>) -> Decision {
    let cat = inputs.catalog;
    let Some(image) = cat.spec.source.image.as_ref() else {
        let message = format!(
            "error parsing ClusterCatalog {:?}, image source is nil",
            cat.name_any()
        );
        return Decision::Plan(failed(inputs, Failure::Terminal(message)));
    };
    let poll = poll_interval(cat);
    let current = cat.status.clone().unwrap_or_default();
    let up_to_date = inputs
        .stored
        .is_some_and(|record| served(inputs, record) == current);
    match (up_to_date, poll, inputs.stored) {
        (true, None, _) => Decision::Plan(Plan::idle()),
        (true, Some(interval), Some(record)) => match until_next_poll(record, interval, inputs.now)
        {
            Some(wait) => Decision::Plan(Plan {
                status: None,
                metadata: Metadata::Keep,
                next: Next::RequeueAfter(jitter(inputs, wait, interval)),
            }),
            None => unpack(image),
        },
        (true, Some(_), None) | (false, _, _) => unpack(image),
    }
}

fn unpack(image: &olm_api::ImageSource) -> Decision {
    Decision::Work(Work::Unpack {
        reference: image.ref_.clone(),
    })
}

/// Finishes a reconcile after the work [`decide`] asked for; see [`decide`] for the flow.
///
/// # Flow
///
/// - Content deleted for a deletion: Serving False/`Unavailable`, served fields cleared,
///   finalizer removed.
/// - Content deleted for `Unavailable`: as above, then Progressing True/`Succeeded` and Serving
///   False/`UserSpecifiedUnavailable`; the finalizer is removed if present.
/// - Deleting failed: Progressing True/`Retrying` with the error; the finalizer stays, so the
///   object cannot vanish while its content is still served. Retry.
/// - Unpacked: Progressing True/`Succeeded`, Serving True/`Available`, `resolvedSource`,
///   `urls.base` and `lastUnpacked` from the record; requeue at the next poll (plus jitter).
/// - Unpack failed: Progressing True/`Retrying` ("source catalog content: …" or "error storing
///   fbc: …"), or False/`Blocked` when no retry can help (an unparsable reference; a missing
///   configs label, or content over the catalog size limits, on an image pinned by digest, where
///   a tag could still move to a fixed image).
///   Serving and the served fields are left alone, so the last good content stays served.
///
/// # Guarantees
///
/// As [`decide`]; and never another [`Work`].
///
/// # Errors
///
/// None: failures become status and [`Next::Retry`].
pub fn conclude(inputs: &Inputs<'_>, done: Done) -> Plan {
    let cat = inputs.catalog;
    let finalizer = Observed::of(cat).finalizer;
    let remove = if finalizer {
        Metadata::RemoveFinalizer
    } else {
        Metadata::Keep
    };
    match done {
        Done::Deleted(_, Err(message)) => failed(inputs, Failure::Retry(message)),
        Done::Deleted(AfterDelete::Finalize, Ok(())) => Plan {
            status: changed(cat, not_serving(inputs)),
            metadata: remove,
            next: Next::AwaitChange,
        },
        Done::Deleted(AfterDelete::MakeUnavailable, Ok(())) => {
            let mut status = not_serving(inputs);
            set_condition(
                &mut status.conditions,
                inputs,
                TYPE_PROGRESSING,
                ConditionStatus::True,
                CatalogReason::Succeeded,
                MSG_UNAVAILABLE,
            );
            set_condition(
                &mut status.conditions,
                inputs,
                TYPE_SERVING,
                ConditionStatus::False,
                CatalogReason::UserSpecifiedUnavailable,
                MSG_UNAVAILABLE,
            );
            Plan {
                status: changed(cat, status),
                metadata: remove,
                next: Next::AwaitChange,
            }
        }
        Done::Unpacked(Ok(record)) => Plan {
            status: changed(cat, served(inputs, &record)),
            metadata: Metadata::Keep,
            next: match poll_interval(cat) {
                Some(interval) => Next::RequeueAfter(jitter(inputs, interval, interval)),
                None => Next::AwaitChange,
            },
        },
        Done::Unpacked(Err(failure)) => failed(inputs, classify(cat, failure)),
    }
}

/// A failure as upstream reports it.
enum Failure {
    /// Progressing False/`Blocked`: only a spec change can help.
    Terminal(String),
    /// Progressing True/`Retrying`.
    Retry(String),
}

fn classify(cat: &ClusterCatalog, failure: UnpackFailure) -> Failure {
    let spec_ref = cat
        .spec
        .source
        .image
        .as_ref()
        .map(|i| i.ref_.as_str())
        .unwrap_or_default();
    match failure {
        UnpackFailure::InvalidReference(e) => Failure::Terminal(format!(
            "source catalog content: error parsing image reference {spec_ref:?}: {e}"
        )),
        UnpackFailure::Source(e) => Failure::Retry(format!("source catalog content: {e}")),
        UnpackFailure::MissingConfigsLabel => blocks_a_digest(
            spec_ref,
            format!(
                "source catalog content: catalog image is missing the required label {CATALOG_CONFIGS_LABEL:?}"
            ),
        ),
        UnpackFailure::TooLarge(e) => {
            blocks_a_digest(spec_ref, format!("source catalog content: {e}"))
        }
        UnpackFailure::Store(e) => Failure::Retry(format!("error storing fbc: {e}")),
    }
}

/// A failure of the image's content itself: terminal for a reference pinned by digest, which
/// names that content for good; retried for a tag, which may move to a fixed image.
fn blocks_a_digest(spec_ref: &str, message: String) -> Failure {
    let pinned = spec_ref
        .parse::<ImageRef>()
        .is_ok_and(|r| r.digest().is_some());
    if pinned {
        Failure::Terminal(message)
    } else {
        Failure::Retry(message)
    }
}

/// Reports a failure in Progressing, leaving everything else as it is.
fn failed(inputs: &Inputs<'_>, failure: Failure) -> Plan {
    let (status, reason, message, next) = match failure {
        Failure::Retry(m) => (
            ConditionStatus::True,
            CatalogReason::Retrying,
            m.clone(),
            Next::Retry(m),
        ),
        Failure::Terminal(m) => (
            ConditionStatus::False,
            CatalogReason::Blocked,
            m,
            Next::AwaitChange,
        ),
    };
    let mut desired = inputs.catalog.status.clone().unwrap_or_default();
    set_condition(
        &mut desired.conditions,
        inputs,
        TYPE_PROGRESSING,
        status,
        reason,
        &message,
    );
    Plan {
        status: changed(inputs.catalog, desired),
        metadata: Metadata::Keep,
        next,
    }
}

impl Plan {
    /// Nothing to write, nothing to wait for.
    fn idle() -> Plan {
        Plan {
            status: None,
            metadata: Metadata::Keep,
            next: Next::AwaitChange,
        }
    }
}

/// `Some(desired)` when it differs from the object's status.
fn changed(cat: &ClusterCatalog, desired: ClusterCatalogStatus) -> Option<ClusterCatalogStatus> {
    let current = cat.status.clone().unwrap_or_default();
    (current != desired).then_some(desired)
}

/// The status that says `record` is being served.
fn served(inputs: &Inputs<'_>, record: &Record) -> ClusterCatalogStatus {
    let mut status = inputs.catalog.status.clone().unwrap_or_default();
    set_condition(
        &mut status.conditions,
        inputs,
        TYPE_PROGRESSING,
        ConditionStatus::True,
        CatalogReason::Succeeded,
        MSG_SUCCEEDED,
    );
    set_condition(
        &mut status.conditions,
        inputs,
        TYPE_SERVING,
        ConditionStatus::True,
        CatalogReason::Available,
        MSG_SERVING,
    );
    status.resolved_source = Some(ResolvedCatalogSource {
        type_: SourceType::Image,
        image: ResolvedImageSource {
            ref_: record.resolved_ref.clone(),
        },
    });
    status.urls = Some(CatalogUrls {
        base: inputs.base_url.to_string(),
    });
    status.last_unpacked = Some(Time(record.unpacked_at));
    status
}

/// The status once nothing is served any more (upstream's `updateStatusNotServing`).
fn not_serving(inputs: &Inputs<'_>) -> ClusterCatalogStatus {
    let mut status = inputs.catalog.status.clone().unwrap_or_default();
    status.resolved_source = None;
    status.urls = None;
    status.last_unpacked = None;
    set_condition(
        &mut status.conditions,
        inputs,
        TYPE_SERVING,
        ConditionStatus::False,
        CatalogReason::Unavailable,
        "",
    );
    status
}

/// `spec.source.image.pollIntervalMinutes` as a duration; `None` means never poll.
fn poll_interval(cat: &ClusterCatalog) -> Option<Duration> {
    let minutes = cat.spec.source.image.as_ref()?.poll_interval_minutes?;
    u64::try_from(minutes)
        .ok()
        .filter(|m| *m > 0)
        .map(|m| Duration::from_secs(m * 60))
}

/// How long until the next poll is due; `None` when it is due now.
fn until_next_poll(record: &Record, interval: Duration, now: jiff::Timestamp) -> Option<Duration> {
    // A record without a poll time (written before polls were recorded) is due.
    let last = record.polled_at?;
    let elapsed = Duration::try_from(now.duration_since(last)).unwrap_or(Duration::ZERO);
    interval.checked_sub(elapsed).filter(|d| !d.is_zero())
}

/// `wait` plus up to 1% of the poll interval (upstream's `requeueJitterMaxFactor`), so catalogs
/// polled at the same interval spread out. Derived from the name and the time, not a random
/// source, so a decision stays a function of its inputs.
fn jitter(inputs: &Inputs<'_>, wait: Duration, interval: Duration) -> Duration {
    let seed = inputs
        .catalog
        .name_any()
        .bytes()
        .fold(inputs.now.as_nanosecond() as u64, |h, b| {
            h.wrapping_mul(0x100_0000_01b3).wrapping_add(u64::from(b))
        });
    let max = u64::try_from(interval.as_millis() / 100).unwrap_or(u64::MAX);
    wait + Duration::from_millis(if max == 0 { 0 } else { seed % max })
}

/// Sets one condition at the object's generation, stamped with the reconcile's time.
fn set_condition(
    conditions: &mut Vec<Condition>,
    inputs: &Inputs<'_>,
    type_: &str,
    status: ConditionStatus,
    reason: CatalogReason,
    message: &str,
) {
    let update = ConditionUpdate {
        type_,
        status,
        reason: reason.as_str(),
        message,
        observed_generation: inputs.catalog.metadata.generation.unwrap_or(0),
    };
    // Whether it changed is judged on the whole status, by `changed`.
    let _ = set_status_condition(conditions, update, &Time(whole_seconds(inputs.now)));
}

/// The part of a plan a replica performs: all of it when it leads; otherwise only the coming
/// back (its work, pulling and storing, is already done), since status and metadata are the
/// leader's to write.
pub fn for_role(plan: Plan, leads: bool) -> Plan {
    if leads {
        plan
    } else {
        Plan {
            status: None,
            metadata: Metadata::Keep,
            ..plan
        }
    }
}

#[cfg(test)]
mod tests {
    //! The cases of upstream's `internal/catalogd/controllers/core/clustercatalog_controller_test.go`
    //! (operator-controller), as data: `TestCatalogdControllerReconcile`, `TestPollingRequeue` and
    //! `TestPollingReconcilerUnpack`. Like upstream, conditions are compared by type, status and
    //! reason; messages are pinned where upstream pins them (in the error it returns).

    use super::*;
    use serde_json::{Value, json};

    const NOW: &str = "2025-06-10T16:43:00Z";
    const BASE: &str = "https://catalogd-service.olmv1-system.svc/catalogs/catalog";
    const RESOLVED: &str =
        "my.org/someimage@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn now() -> jiff::Timestamp {
        NOW.parse().expect("time")
    }

    fn minutes(m: i64) -> jiff::SignedDuration {
        jiff::SignedDuration::from_mins(m)
    }

    /// A record stored `age` minutes ago and last polled `polled` minutes ago.
    fn record(age: i64, polled: i64) -> Record {
        Record {
            resolved_ref: RESOLVED.into(),
            digest: "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
                .into(),
            unpacked_at: now() - minutes(age),
            polled_at: Some(now() - minutes(polled)),
        }
    }

    /// A condition as upstream's fixtures write them.
    fn cond(type_: &str, status: &str, reason: &str, generation: i64) -> Value {
        json!({"type": type_, "status": status, "reason": reason, "message": "",
               "observedGeneration": generation, "lastTransitionTime": "2025-06-10T16:00:00Z"})
    }

    /// The status a successful unpack of `record(0, _)` writes at generation `generation`.
    fn served_status(generation: i64) -> Value {
        json!({
            "conditions": [
                {"type": "Progressing", "status": "True", "reason": "Succeeded", "message": MSG_SUCCEEDED,
                 "observedGeneration": generation, "lastTransitionTime": "2025-06-10T16:00:00Z"},
                {"type": "Serving", "status": "True", "reason": "Available", "message": MSG_SERVING,
                 "observedGeneration": generation, "lastTransitionTime": "2025-06-10T16:00:00Z"},
            ],
            "resolvedSource": {"type": "Image", "image": {"ref": RESOLVED}},
            "urls": {"base": BASE},
            "lastUnpacked": NOW,
        })
    }

    fn catalog(metadata: Value, image: Value, mode: &str, status: Value) -> ClusterCatalog {
        let mut metadata = metadata;
        metadata["name"] = json!("catalog");
        let mut object = json!({
            "apiVersion": "olm.operatorframework.io/v1",
            "kind": "ClusterCatalog",
            "metadata": metadata,
            "spec": {"source": {"type": "Image"}, "availabilityMode": mode},
        });
        if !image.is_null() {
            object["spec"]["source"]["image"] = image;
        }
        if !status.is_null() {
            object["status"] = status;
        }
        serde_json::from_value(object).expect("a ClusterCatalog")
    }

    /// Ours, labelled, at generation `generation`.
    fn owned(generation: i64) -> Value {
        json!({"finalizers": [CATALOG_CACHE_FINALIZER],
               "labels": {METADATA_NAME_LABEL: "catalog"}, "generation": generation})
    }

    fn deleting(finalizers: &[&str]) -> Value {
        json!({"finalizers": finalizers, "labels": {METADATA_NAME_LABEL: "catalog"},
               "deletionTimestamp": "2023-10-10T04:19:00Z"})
    }

    fn tag(poll: Option<i32>) -> Value {
        match poll {
            Some(p) => json!({"ref": "my.org/someimage:latest", "pollIntervalMinutes": p}),
            None => json!({"ref": "my.org/someimage:latest"}),
        }
    }

    /// What the written status must say: `(type, status, reason)` of each condition, sorted by
    /// type, and whether `resolvedSource`, `urls` and `lastUnpacked` are set.
    #[derive(Debug)]
    struct Status {
        conditions: &'static [(&'static str, &'static str, &'static str)],
        served: bool,
    }

    #[derive(Debug)]
    enum Want {
        /// The requeue, with up to 1% of the interval added.
        Requeue(Duration),
        Await,
        Retry(&'static str),
    }

    struct Case {
        /// The upstream test (and case) this one ports.
        upstream: &'static str,
        catalog: ClusterCatalog,
        stored: Option<Record>,
        /// What `decide` asks for, and what that work brought back; `None` when it answers with
        /// a plan straight away.
        work: Option<(Work, Done)>,
        status: Option<Status>,
        metadata: Metadata,
        next: Want,
    }

    const UNPACK: fn() -> Work = || Work::Unpack {
        reference: "my.org/someimage:latest".into(),
    };

    fn cases() -> Vec<Case> {
        let null = Value::Null;
        vec![
            Case {
                upstream: "TestCatalogdControllerReconcile/invalid source type, returns error \
                           (here: no image source, the other terminal source error upstream's \
                           reconcile has; an unknown type does not deserialize)",
                catalog: catalog(owned(0), null.clone(), "Available", null.clone()),
                stored: None,
                work: None,
                status: Some(Status {
                    conditions: &[("Progressing", "False", "Blocked")],
                    served: false,
                }),
                metadata: Metadata::Keep,
                next: Want::Await,
            },
            Case {
                upstream: "TestCatalogdControllerReconcile/valid source type, unpack returns error, \
                           status updated to reflect error state and error is returned",
                catalog: catalog(owned(0), tag(None), "Available", null.clone()),
                stored: None,
                work: Some((
                    UNPACK(),
                    Done::Unpacked(Err(UnpackFailure::Source("mockpuller error".into()))),
                )),
                status: Some(Status {
                    conditions: &[("Progressing", "True", "Retrying")],
                    served: false,
                }),
                metadata: Metadata::Keep,
                next: Want::Retry("source catalog content: mockpuller error"),
            },
            Case {
                upstream: "TestCatalogdControllerReconcile/valid source type, unpack returns terminal \
                           error, status updated to reflect terminal error state(Blocked) and error \
                           is returned",
                catalog: catalog(owned(0), tag(None), "Available", null.clone()),
                stored: None,
                work: Some((
                    UNPACK(),
                    Done::Unpacked(Err(UnpackFailure::InvalidReference("bad".into()))),
                )),
                status: Some(Status {
                    conditions: &[("Progressing", "False", "Blocked")],
                    served: false,
                }),
                metadata: Metadata::Keep,
                next: Want::Await,
            },
            Case {
                upstream: "TestCatalogdControllerReconcile/valid source type, unpack state == \
                           Unpacked, should reflect in status that it's progressing, and is serving",
                catalog: catalog(owned(0), tag(None), "Available", null.clone()),
                stored: None,
                work: Some((UNPACK(), Done::Unpacked(Ok(record(0, 0))))),
                status: Some(Status {
                    conditions: &[
                        ("Progressing", "True", "Succeeded"),
                        ("Serving", "True", "Available"),
                    ],
                    served: true,
                }),
                metadata: Metadata::Keep,
                next: Want::Await,
            },
            Case {
                upstream: "TestCatalogdControllerReconcile/valid source type, unpack state == \
                           Unpacked, storage fails, failure reflected in status and error returned",
                catalog: catalog(owned(0), tag(None), "Available", null.clone()),
                stored: None,
                work: Some((
                    UNPACK(),
                    Done::Unpacked(Err(UnpackFailure::Store("mockstore store error".into()))),
                )),
                status: Some(Status {
                    conditions: &[("Progressing", "True", "Retrying")],
                    served: false,
                }),
                metadata: Metadata::Keep,
                next: Want::Retry("error storing fbc: mockstore store error"),
            },
            Case {
                upstream: "TestCatalogdControllerReconcile/storage finalizer not set, storage \
                           finalizer gets set",
                catalog: catalog(json!({}), tag(None), "Available", null.clone()),
                stored: None,
                work: None,
                status: None,
                metadata: Metadata::AddFinalizerAndLabel,
                next: Want::Await,
            },
            Case {
                upstream: "TestCatalogdControllerReconcile/storage finalizer set, catalog deletion \
                           timestamp is not zero (or nil), finalizer removed",
                catalog: catalog(
                    deleting(&[CATALOG_CACHE_FINALIZER]),
                    tag(None),
                    "Available",
                    json!({
                        "conditions": [cond("Serving", "True", "Available", 0),
                                       cond("Progressing", "False", "Succeeded", 0)],
                        "resolvedSource": {"type": "Image", "image": {"ref": ""}},
                        "lastUnpacked": "2023-10-10T04:00:00Z",
                    }),
                ),
                stored: Some(record(60, 60)),
                work: Some((
                    Work::DeleteContent {
                        then: AfterDelete::Finalize,
                    },
                    Done::Deleted(AfterDelete::Finalize, Ok(())),
                )),
                status: Some(Status {
                    conditions: &[
                        ("Progressing", "False", "Succeeded"),
                        ("Serving", "False", "Unavailable"),
                    ],
                    served: false,
                }),
                metadata: Metadata::RemoveFinalizer,
                next: Want::Await,
            },
            Case {
                upstream: "TestCatalogdControllerReconcile/storage finalizer set, catalog deletion \
                           timestamp is not zero (or nil), storage delete failed, error returned, \
                           finalizer not removed and catalog continues serving",
                catalog: catalog(
                    deleting(&[CATALOG_CACHE_FINALIZER]),
                    tag(None),
                    "Available",
                    json!({
                        "urls": {"base": "URL"},
                        "conditions": [cond("Progressing", "False", "Succeeded", 0),
                                       cond("Serving", "True", "Available", 0)],
                    }),
                ),
                stored: Some(record(60, 60)),
                work: Some((
                    Work::DeleteContent {
                        then: AfterDelete::Finalize,
                    },
                    Done::Deleted(AfterDelete::Finalize, Err("mockstore delete error".into())),
                )),
                status: Some(Status {
                    conditions: &[
                        ("Progressing", "True", "Retrying"),
                        ("Serving", "True", "Available"),
                    ],
                    // Only `urls` was set, and it stays.
                    served: false,
                }),
                metadata: Metadata::Keep,
                next: Want::Retry("mockstore delete error"),
            },
            // "…unpack cleanup failed, error returned, finalizer not removed but catalog stops
            // serving" has no counterpart: there is no image cache kept beside the stored
            // content (each pull's directory is removed when the pull ends), so deleting the
            // content is the only cleanup, covered by the case above.
            Case {
                upstream: "TestCatalogdControllerReconcile/catalog availability set to disabled, \
                           status.urls should get unset",
                catalog: catalog(
                    json!({"labels": {METADATA_NAME_LABEL: "catalog"}}),
                    tag(None),
                    "Unavailable",
                    json!({
                        "urls": {"base": "URL"},
                        "lastUnpacked": "2023-10-10T04:00:00Z",
                        "resolvedSource": {"type": "Image", "image": {"ref": ""}},
                        "conditions": [cond("Serving", "True", "Available", 0),
                                       cond("Progressing", "False", "Succeeded", 0)],
                    }),
                ),
                stored: Some(record(60, 60)),
                work: Some((
                    Work::DeleteContent {
                        then: AfterDelete::MakeUnavailable,
                    },
                    Done::Deleted(AfterDelete::MakeUnavailable, Ok(())),
                )),
                status: Some(Status {
                    conditions: &[
                        ("Progressing", "True", "Succeeded"),
                        ("Serving", "False", "UserSpecifiedUnavailable"),
                    ],
                    served: false,
                }),
                metadata: Metadata::Keep,
                next: Want::Await,
            },
            Case {
                upstream: "TestCatalogdControllerReconcile/catalog availability set to disabled, \
                           finalizer should get removed",
                catalog: catalog(
                    owned(0),
                    tag(None),
                    "Unavailable",
                    json!({
                        "urls": {"base": "URL"},
                        "lastUnpacked": "2023-10-10T04:00:00Z",
                        "resolvedSource": {"type": "Image", "image": {"ref": ""}},
                        "conditions": [cond("Serving", "True", "Available", 0),
                                       cond("Progressing", "True", "Succeeded", 0)],
                    }),
                ),
                stored: Some(record(60, 60)),
                work: Some((
                    Work::DeleteContent {
                        then: AfterDelete::MakeUnavailable,
                    },
                    Done::Deleted(AfterDelete::MakeUnavailable, Ok(())),
                )),
                status: Some(Status {
                    conditions: &[
                        ("Progressing", "True", "Succeeded"),
                        ("Serving", "False", "UserSpecifiedUnavailable"),
                    ],
                    served: false,
                }),
                metadata: Metadata::RemoveFinalizer,
                next: Want::Await,
            },
            Case {
                upstream: "TestCatalogdControllerReconcile/after catalog availability set to \
                           enable, finalizer should be added",
                catalog: catalog(
                    json!({"finalizers": []}),
                    tag(None),
                    "Available",
                    json!({
                        "urls": {"base": "URL"},
                        "resolvedSource": {"type": "Image", "image": {"ref": ""}},
                        "conditions": [cond("Serving", "False", "Unavailable", 0),
                                       cond("Progressing", "False", "UserSpecifiedUnavailable", 0)],
                    }),
                ),
                stored: None,
                work: None,
                status: None,
                metadata: Metadata::AddFinalizerAndLabel,
                next: Want::Await,
            },
            Case {
                upstream: "TestCatalogdControllerReconcile/reconcile should be short-circuited if \
                           the clustercatalog has a deletion timestamp and all known finalizers \
                           have been removed",
                catalog: catalog(
                    deleting(&["finalizer"]),
                    tag(None),
                    "Available",
                    null.clone(),
                ),
                stored: None,
                work: None,
                status: None,
                metadata: Metadata::Keep,
                next: Want::Await,
            },
            Case {
                upstream: "TestPollingRequeue/ClusterCatalog with tag based image ref without any \
                           poll interval specified, requeueAfter set to 0, ie polling disabled",
                catalog: catalog(owned(0), tag(None), "Available", served_status(0)),
                stored: Some(record(0, 0)),
                work: None,
                status: None,
                metadata: Metadata::Keep,
                next: Want::Await,
            },
            Case {
                upstream: "TestPollingRequeue/ClusterCatalog with tag based image ref with poll \
                           interval specified, just polled, requeueAfter set to \
                           wait.jitter(pollInterval)",
                catalog: catalog(owned(0), tag(Some(5)), "Available", served_status(0)),
                stored: Some(record(0, 0)),
                work: None,
                status: None,
                metadata: Metadata::Keep,
                next: Want::Requeue(Duration::from_secs(5 * 60)),
            },
            Case {
                upstream: "TestPollingRequeue/ClusterCatalog with tag based image ref with poll \
                           interval specified, last polled 2m ago, requeueAfter set to \
                           wait.jitter(pollInterval-2)",
                catalog: catalog(owned(0), tag(Some(5)), "Available", served_status(0)),
                stored: Some(record(0, 2)),
                work: None,
                status: None,
                metadata: Metadata::Keep,
                next: Want::Requeue(Duration::from_secs(3 * 60)),
            },
            Case {
                upstream: "TestPollingReconcilerUnpack/ClusterCatalog being resolved the first \
                           time, unpack should run",
                catalog: catalog(owned(0), tag(Some(5)), "Available", null.clone()),
                stored: None,
                work: Some((UNPACK(), Done::Unpacked(Ok(record(0, 0))))),
                status: Some(Status {
                    conditions: &[
                        ("Progressing", "True", "Succeeded"),
                        ("Serving", "True", "Available"),
                    ],
                    served: true,
                }),
                metadata: Metadata::Keep,
                next: Want::Requeue(Duration::from_secs(5 * 60)),
            },
            Case {
                upstream: "TestPollingReconcilerUnpack/ClusterCatalog not being resolved the first \
                           time, no pollInterval mentioned, unpack should not run",
                catalog: catalog(owned(2), tag(None), "Available", served_status(2)),
                stored: Some(record(0, 0)),
                work: None,
                status: None,
                metadata: Metadata::Keep,
                next: Want::Await,
            },
            Case {
                upstream: "TestPollingReconcilerUnpack/ClusterCatalog not being resolved the first \
                           time, pollInterval mentioned, \"now\" is before next expected poll time, \
                           unpack should not run",
                catalog: catalog(owned(2), tag(Some(7)), "Available", served_status(2)),
                stored: Some(record(0, 0)),
                work: None,
                status: None,
                metadata: Metadata::Keep,
                next: Want::Requeue(Duration::from_secs(7 * 60)),
            },
            Case {
                upstream: "TestPollingReconcilerUnpack/ClusterCatalog not being resolved the first \
                           time, pollInterval mentioned, \"now\" is after next expected poll time, \
                           unpack should run",
                catalog: catalog(owned(2), tag(Some(3)), "Available", served_status(2)),
                stored: Some(record(0, 5)),
                // The digest did not move: the poll is recorded and nothing else changes.
                work: Some((UNPACK(), Done::Unpacked(Ok(record(0, 0))))),
                status: None,
                metadata: Metadata::Keep,
                next: Want::Requeue(Duration::from_secs(3 * 60)),
            },
            Case {
                upstream: "TestPollingReconcilerUnpack/ClusterCatalog not being resolved the first \
                           time, pollInterval mentioned, \"now\" is before next expected poll time, \
                           generation changed, unpack should run",
                catalog: catalog(owned(3), tag(Some(7)), "Available", served_status(2)),
                stored: Some(record(0, 0)),
                work: Some((
                    UNPACK(),
                    Done::Unpacked(Err(UnpackFailure::Source("mockpuller error".into()))),
                )),
                status: Some(Status {
                    conditions: &[
                        ("Progressing", "True", "Retrying"),
                        ("Serving", "True", "Available"),
                    ],
                    served: true,
                }),
                metadata: Metadata::Keep,
                next: Want::Retry("source catalog content: mockpuller error"),
            },
            Case {
                upstream: "TestPollingReconcilerUnpack/ClusterCatalog not being resolved the first \
                           time, no stored catalog in cache, unpack should run",
                catalog: catalog(owned(3), tag(Some(7)), "Available", served_status(2)),
                stored: None,
                work: Some((
                    UNPACK(),
                    Done::Unpacked(Err(UnpackFailure::Source("mockpuller error".into()))),
                )),
                status: Some(Status {
                    conditions: &[
                        ("Progressing", "True", "Retrying"),
                        ("Serving", "True", "Available"),
                    ],
                    served: true,
                }),
                metadata: Metadata::Keep,
                next: Want::Retry("source catalog content: mockpuller error"),
            },
            Case {
                // Upstream sets Progressing to the True it already was (and changes the
                // generation, which alone forces the unpack); here the status really differs.
                upstream: "TestPollingReconcilerUnpack/ClusterCatalog not being resolved the first \
                           time, unexpected status, unpack should run",
                catalog: catalog(owned(2), tag(Some(7)), "Available", {
                    let mut s = served_status(2);
                    s["conditions"][0]["status"] = json!("False");
                    s
                }),
                stored: Some(record(0, 0)),
                work: Some((UNPACK(), Done::Unpacked(Ok(record(0, 0))))),
                status: Some(Status {
                    conditions: &[
                        ("Progressing", "True", "Succeeded"),
                        ("Serving", "True", "Available"),
                    ],
                    served: true,
                }),
                metadata: Metadata::Keep,
                next: Want::Requeue(Duration::from_secs(7 * 60)),
            },
        ]
    }

    fn inputs<'a>(case: &'a Case) -> Inputs<'a> {
        Inputs {
            stored: case.stored.as_ref(),
            ..unstored(&case.catalog)
        }
    }

    /// The inputs of a reconcile of `catalog` with nothing stored for it.
    fn unstored(catalog: &ClusterCatalog) -> Inputs<'_> {
        Inputs {
            catalog,
            stored: None,
            base_url: BASE,
            now: now(),
        }
    }

    #[test]
    fn upstream_controller_cases() {
        for case in cases() {
            let name = case.upstream;
            let inputs = inputs(&case);
            let plan = match (decide(&inputs), &case.work) {
                (Decision::Plan(plan), None) => plan,
                (Decision::Work(work), Some((want, done))) => {
                    assert_eq!(&work, want, "{name}");
                    conclude(&inputs, done.clone())
                }
                (got, _) => panic!("{name}: decided {got:?}"),
            };
            match (&plan.status, &case.status) {
                (None, None) => {}
                (Some(status), Some(want)) => {
                    let mut got: Vec<_> = status
                        .conditions
                        .iter()
                        .map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_str()))
                        .collect();
                    got.sort();
                    assert_eq!(got, want.conditions, "{name}");
                    let served = status.resolved_source.is_some()
                        && status.urls.is_some()
                        && status.last_unpacked.is_some();
                    assert_eq!(served, want.served, "{name}: served fields");
                    if !want.served
                        && case.catalog.spec.availability_mode == AvailabilityMode::Unavailable
                    {
                        assert!(
                            status.resolved_source.is_none()
                                && status.urls.is_none()
                                && status.last_unpacked.is_none(),
                            "{name}"
                        );
                    }
                }
                (got, want) => panic!("{name}: status {got:?}, want {want:?}"),
            }
            assert_eq!(plan.metadata, case.metadata, "{name}");
            match (&plan.next, &case.next) {
                (Next::AwaitChange, Want::Await) => {}
                (Next::Retry(got), Want::Retry(want)) => assert_eq!(got, want, "{name}"),
                (Next::RequeueAfter(got), Want::Requeue(want)) => {
                    assert!(
                        *got >= *want && *got <= *want + *want / 100,
                        "{name}: requeue after {got:?}, want {want:?} plus at most 1%"
                    );
                }
                (got, want) => panic!("{name}: next {got:?}, want {want:?}"),
            }
        }
    }

    /// Writing a plan's status and deciding again must change nothing: this is what keeps a
    /// reconcile loop from writing status forever.
    #[test]
    fn a_written_status_is_not_written_again() {
        for case in cases() {
            let inputs = inputs(&case);
            let plan = match decide(&inputs) {
                Decision::Plan(plan) => plan,
                Decision::Work(_) => match &case.work {
                    Some((_, done)) => conclude(&inputs, done.clone()),
                    None => continue,
                },
            };
            let Some(status) = plan.status else { continue };
            let mut written = case.catalog.clone();
            written.status = Some(status);
            let stored = match &case.work {
                Some((_, Done::Unpacked(Ok(record)))) => Some(record),
                _ => case.stored.as_ref(),
            };
            let again = Inputs {
                catalog: &written,
                stored,
                base_url: BASE,
                now: now() + minutes(1),
            };
            let status_again = match decide(&again) {
                Decision::Plan(plan) => plan.status,
                Decision::Work(_) => match &case.work {
                    Some((_, done)) => conclude(&again, done.clone()).status,
                    None => None,
                },
            };
            assert_eq!(status_again, None, "{}", case.upstream);
        }
    }

    /// What is wrong with the image itself (no configs label; over the size limits) blocks a
    /// reference pinned by digest and is retried for a tag, which may move to a fixed image.
    #[test]
    fn a_failure_of_the_content_blocks_only_a_digest() {
        let by_tag = catalog(owned(1), tag(None), "Available", Value::Null);
        let by_digest = catalog(owned(1), json!({"ref": RESOLVED}), "Available", Value::Null);
        let too_large = "my.org/someimage@sha256:e3b0 is over the catalog image per-file size \
                         limit: \"configs/catalog.json\" holds 3221225472 bytes, more than the \
                         256Mi one file may hold (raise it with --catalog-max-file-size)";
        let cases = [
            (
                UnpackFailure::MissingConfigsLabel,
                "source catalog content: catalog image is missing the required label \
                 \"operators.operatorframework.io.index.configs.v1\""
                    .to_string(),
            ),
            (
                UnpackFailure::TooLarge(too_large.into()),
                format!("source catalog content: {too_large}"),
            ),
        ];
        for ((cat, status, reason), (failure, want)) in [
            (&by_tag, "True", "Retrying"),
            (&by_digest, "False", "Blocked"),
        ]
        .into_iter()
        .flat_map(|c| cases.iter().map(move |f| (c, f)))
        {
            let inputs = unstored(cat);
            let plan = conclude(&inputs, Done::Unpacked(Err(failure.clone())));
            let progressing = plan
                .status
                .as_ref()
                .and_then(|s| s.conditions.iter().find(|c| c.type_ == TYPE_PROGRESSING))
                .expect("Progressing");
            assert_eq!(
                (progressing.status.as_str(), progressing.reason.as_str()),
                (status, reason)
            );
            assert_eq!(&progressing.message, want);
            let next = match status {
                "True" => Next::Retry(want.clone()),
                _ => Next::AwaitChange,
            };
            assert_eq!(plan.next, next);
        }
    }

    #[test]
    fn an_unparsable_reference_is_terminal_with_upstreams_words() {
        let cat = catalog(
            owned(1),
            json!({"ref": "Not A Ref"}),
            "Available",
            Value::Null,
        );
        let inputs = unstored(&cat);
        let plan = conclude(
            &inputs,
            Done::Unpacked(Err(UnpackFailure::InvalidReference("invalid".into()))),
        );
        let message = plan
            .status
            .and_then(|s| s.conditions.into_iter().next())
            .map(|c| c.message);
        assert_eq!(
            message.as_deref(),
            Some("source catalog content: error parsing image reference \"Not A Ref\": invalid")
        );
        assert_eq!(plan.next, Next::AwaitChange);
    }

    #[test]
    fn times_are_whole_seconds_and_move_only_with_the_status() {
        let cat = catalog(owned(1), tag(None), "Available", Value::Null);
        let at = |t: &str| Inputs {
            now: t.parse().expect("time"),
            ..unstored(&cat)
        };
        let first = conclude(
            &at("2025-06-10T16:43:00.9Z"),
            Done::Unpacked(Err(UnpackFailure::Source("down".into()))),
        );
        let status = first.status.expect("status");
        assert_eq!(
            status.conditions[0].last_transition_time,
            Time("2025-06-10T16:43:00Z".parse().expect("time")),
            "truncated, as metav1.Time is written"
        );
        let mut retried = cat.clone();
        retried.status = Some(status);
        let inputs = Inputs {
            now: "2025-06-10T17:00:00Z".parse().expect("time"),
            ..unstored(&retried)
        };
        let second = conclude(
            &inputs,
            Done::Unpacked(Err(UnpackFailure::Source("still down".into()))),
        );
        let status = second.status.expect("the message changed");
        assert_eq!(
            status.conditions[0].last_transition_time,
            Time("2025-06-10T16:43:00Z".parse().expect("time")),
            "still Retrying: the transition time stays"
        );
    }

    #[test]
    fn jitter_is_a_function_of_the_inputs_and_within_one_percent() {
        let cat = catalog(owned(1), tag(Some(10)), "Available", Value::Null);
        let inputs = unstored(&cat);
        let poll = Duration::from_secs(600);
        let d = jitter(&inputs, poll, poll);
        assert_eq!(d, jitter(&inputs, poll, poll));
        assert!(d >= poll && d < poll + Duration::from_secs(6), "{d:?}");
    }

    /// A failure message past the CRD's limit is written cut as upstream cuts it (the
    /// condition setter bounds every message), not refused by the API server.
    #[test]
    fn long_messages_are_truncated_as_upstream() {
        let long = format!(
            "failed to unpack: {}",
            "é".repeat(olm_k8s::MAX_CONDITION_MESSAGE_LENGTH)
        );
        let mut conditions = Vec::new();
        let cat = catalog(owned(1), tag(Some(10)), "Available", Value::Null);
        set_condition(
            &mut conditions,
            &unstored(&cat),
            TYPE_PROGRESSING,
            ConditionStatus::True,
            CatalogReason::Retrying,
            &long,
        );
        let m = &conditions[0].message;
        assert!(m.len() <= olm_k8s::MAX_CONDITION_MESSAGE_LENGTH);
        assert!(m.starts_with("failed to unpack: éé"));
        assert!(m.ends_with(olm_k8s::TRUNCATION_SUFFIX));
    }
}

#[cfg(test)]
mod role_tests {
    use super::*;

    /// A replica that does not lead keeps only when to come back: no status, no metadata.
    #[test]
    fn followers_write_nothing() {
        let plan = Plan {
            status: Some(ClusterCatalogStatus::default()),
            metadata: Metadata::AddFinalizerAndLabel,
            next: Next::RequeueAfter(std::time::Duration::from_secs(60)),
        };
        assert_eq!(for_role(plan.clone(), true), plan);
        assert_eq!(
            for_role(plan, false),
            Plan {
                status: None,
                metadata: Metadata::Keep,
                next: Next::RequeueAfter(std::time::Duration::from_secs(60)),
            }
        );
    }
}
