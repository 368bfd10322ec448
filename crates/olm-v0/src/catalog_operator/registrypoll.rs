//! `spec.updateStrategy.registryPoll` of an image CatalogSource (OLM repo
//! `pkg/controller/registry/reconciler/grpc.go` `ensureUpdatePod`, `grpc_polling.go`; API repo
//! `catalogsource_types.go` `Poll`, `Update`, `UpdateStrategy.UnmarshalJSON`).
//!
//! A tag does not say when its content changed, so catalog-operator starts a second registry
//! Pod from the same spec every interval (the *update pod*: labelled
//! `catalogsource.operators.coreos.com/update=<source>` and `olm.catalogSource=""`, so the
//! Service does not route to it). When it is ready its container's `imageID` is compared with
//! the serving Pods': a new digest promotes the update pod (labels swapped) and retires the
//! serving Pods; the same digest deletes the update pod. A failed or crash-looping update pod
//! is deleted and reported.
//!
//! Difference from upstream: an interval of zero or less would make upstream poll on every
//! pass; here it is refused like an interval that does not parse (the 15-minute default, with
//! `InvalidIntervalError`).

use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::Pod;
use olm_v0_api::v1alpha1::{CatalogSource, SourceType};
use serde_json::{Value, json};

use crate::catalog_operator::catalogsource::CATALOG_SOURCE_LABEL;

/// The label that marks an update pod with its CatalogSource's name.
pub const UPDATE_LABEL: &str = "catalogsource.operators.coreos.com/update";
/// `status.reason` when the poll interval is unusable (upstream's
/// `CatalogSourceIntervalInvalidError`).
pub const INVALID_INTERVAL_REASON: &str = "InvalidIntervalError";
/// The interval used when the one written is unusable (upstream's `DefaultRegistryPollDuration`).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(15 * 60);
/// Go's spelling of [`DEFAULT_INTERVAL`], as the message quotes it.
const DEFAULT_INTERVAL_TEXT: &str = "15m0s";
/// How soon a source is looked at again while its update pod starts (upstream's
/// `CatalogPollingRequeuePeriod`).
pub const NOT_READY_REQUEUE: Duration = Duration::from_secs(30);
/// The longest a polled source waits between passes (upstream's
/// `queueinformer.DefaultResyncPeriod`).
pub const DEFAULT_RESYNC: Duration = Duration::from_secs(15 * 60);

/// A source's polling settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Poll {
    /// Time between polls.
    pub interval: Duration,
    /// Why the written interval was not used (`status.message` with [`INVALID_INTERVAL_REASON`]).
    pub parsing_error: Option<String>,
}

/// Upstream's `Poll()` with the interval parsed: `None` unless `registryPoll` is set on a
/// `grpc` source with an image.
pub fn poll(source: &CatalogSource) -> Option<Poll> {
    let spec = &source.spec;
    let registry_poll = spec.update_strategy.as_ref()?.registry_poll.as_ref()?;
    if spec.source_type != SourceType::Grpc || spec.image.as_deref().is_none_or(str::is_empty) {
        return None;
    }
    let raw = registry_poll.interval.as_deref().unwrap_or_default();
    let refused = |why: String| Poll {
        interval: DEFAULT_INTERVAL,
        parsing_error: Some(format!(
            "error parsing spec.updateStrategy.registryPoll.interval. Using the default value of {DEFAULT_INTERVAL_TEXT} instead. Error: {why}"
        )),
    };
    Some(match olm_goenc::duration::parse_duration(raw) {
        Err(e) => refused(e.to_string()),
        Ok(d) => match d.to_std().filter(|d| !d.is_zero()) {
            Some(interval) => Poll {
                interval,
                parsing_error: None,
            },
            None => refused(format!("the interval {raw:?} is not longer than zero")),
        },
    })
}

/// When the last poll counts from: `status.latestImageRegistryPoll`, else the creation time.
fn base(last: Option<SystemTime>, created: SystemTime) -> SystemTime {
    last.unwrap_or(created)
}

/// Upstream's `Update()`: a poll is due once the interval has passed since the last one (or
/// since the source was created).
pub fn due(poll: &Poll, last: Option<SystemTime>, created: SystemTime, now: SystemTime) -> bool {
    base(last, created)
        .checked_add(poll.interval)
        .is_some_and(|next| next < now)
}

/// Upstream's `SyncRegistryUpdateInterval`: when to look at a polled source again — the
/// interval itself when it is shorter than the default resync, else the time left until the
/// next poll, at most the default resync.
pub fn resync_after(
    poll: &Poll,
    last: Option<SystemTime>,
    created: SystemTime,
    now: SystemTime,
) -> Duration {
    if poll.interval <= DEFAULT_RESYNC {
        return poll.interval;
    }
    let next = base(last, created)
        .checked_add(poll.interval)
        .unwrap_or(now);
    next.duration_since(now)
        .unwrap_or_default()
        .min(DEFAULT_RESYNC)
}

/// What polling needs to know of a registry Pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodFacts {
    /// `metadata.name`.
    pub name: String,
    /// `status.phase`.
    pub phase: String,
    /// The `Ready` condition is `True`.
    pub ready: bool,
    /// The catalog container's `imageID` (see [`image_id`]); empty while unknown.
    pub image_id: String,
    /// A container or init container waits in `CrashLoopBackOff`.
    pub crash_looping: bool,
    /// The `DisruptionTarget` condition is `True`: the Pod is about to go.
    pub disrupted: bool,
}

impl PodFacts {
    /// The facts of `pod`.
    pub fn of(pod: &Pod) -> PodFacts {
        let status = pod.status.as_ref();
        let condition = |kind: &str| {
            status
                .and_then(|s| s.conditions.as_ref())
                .into_iter()
                .flatten()
                .any(|c| c.type_ == kind && c.status == "True")
        };
        let crash_looping = status
            .into_iter()
            .flat_map(|s| {
                s.container_statuses
                    .iter()
                    .flatten()
                    .chain(s.init_container_statuses.iter().flatten())
            })
            .any(|c| {
                c.state
                    .as_ref()
                    .and_then(|s| s.waiting.as_ref())
                    .and_then(|w| w.reason.as_deref())
                    == Some("CrashLoopBackOff")
            });
        PodFacts {
            name: pod.metadata.name.clone().unwrap_or_default(),
            phase: status.and_then(|s| s.phase.clone()).unwrap_or_default(),
            ready: condition("Ready"),
            image_id: image_id(pod),
            crash_looping,
            disrupted: condition("DisruptionTarget"),
        }
    }

    /// Upstream's `podFailed`: `Failed` or `Unknown`, or crash-looping.
    fn failed(&self) -> bool {
        self.phase == "Failed" || self.phase == "Unknown" || self.crash_looping
    }
}

/// Upstream's `imageID`: the catalog image's `imageID` — the only container's, or with
/// `extractContent` the second init container's (which runs the catalog image); empty when the
/// statuses are not yet (or not in that shape) reported.
pub fn image_id(pod: &Pod) -> String {
    let status = pod.status.as_ref();
    let init = status.and_then(|s| s.init_container_statuses.as_deref());
    let containers = status.and_then(|s| s.container_statuses.as_deref());
    match (init.unwrap_or_default(), containers.unwrap_or_default()) {
        ([_, extract], [_]) => extract.image_id.clone(),
        ([], [only]) => only.image_id.clone(),
        _ => String::new(),
    }
}

/// The next polling step for a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateStep {
    /// Start an update pod ([`update_pod`]) and stamp `status.latestImageRegistryPoll`; look
    /// again after [`NOT_READY_REQUEUE`].
    Create,
    /// The update pod failed: delete it and report `message` (reason `RegistryServerError`).
    Failed {
        /// The update pod.
        pod: String,
        /// Upstream's status message.
        message: String,
    },
    /// The update pod is not ready yet; look again after [`NOT_READY_REQUEUE`].
    Wait {
        /// The update pod.
        pod: String,
    },
    /// The update pod serves a new digest: promote it ([`promoted_labels`]) and delete
    /// `retire` (the serving Pods and any other update pod).
    Promote {
        /// The update pod.
        pod: String,
        /// Pods to delete once it serves.
        retire: Vec<String>,
    },
    /// The update pods serve what is served already: delete them.
    Discard {
        /// The update pods.
        pods: Vec<String>,
    },
    /// Nothing to do until the next poll.
    Idle,
}

/// How a failed update pod's report begins (the rest names the source and the pod).
const FAILED_POLL_PREFIX: &str =
    "couldn't ensure registry server - error ensuring update pod for catalog source ";

/// Whether a `status.message` reports a failed update pod ([`UpdateStep::Failed`]), which
/// stays until the next poll settles rather than until the next pass.
pub fn reports_failed_poll(message: &str) -> bool {
    message.starts_with(FAILED_POLL_PREFIX)
}

/// Upstream's `ensureUpdatePod` as a decision: `serving` are the Pods labelled with the source,
/// `updates` its update pods, `due` whether a poll is due ([`due`]).
pub fn update_step(
    source: &str,
    due: bool,
    serving: &[PodFacts],
    updates: &[PodFacts],
) -> UpdateStep {
    if updates.is_empty() {
        return if due {
            UpdateStep::Create
        } else {
            UpdateStep::Idle
        };
    }
    for p in updates {
        if p.failed() {
            let phase = &p.phase;
            return UpdateStep::Failed {
                pod: p.name.clone(),
                message: format!(
                    "{FAILED_POLL_PREFIX}{source}: update pod {} in a {phase} state: deleted update pod",
                    p.name
                ),
            };
        }
        if !p.ready {
            return UpdateStep::Wait {
                pod: p.name.clone(),
            };
        }
    }
    if let Some(p) = updates.iter().find(|p| image_changed(p, serving)) {
        let retire = serving
            .iter()
            .chain(updates)
            .filter(|o| o.name != p.name)
            .map(|o| o.name.clone())
            .collect();
        return UpdateStep::Promote {
            pod: p.name.clone(),
            retire,
        };
    }
    UpdateStep::Discard {
        pods: updates.iter().map(|p| p.name.clone()).collect(),
    }
}

/// Upstream's `imageChanged`: the update pod's digest is known and differs from a serving
/// Pod's (every serving Pod's digest must be known).
fn image_changed(update: &PodFacts, serving: &[PodFacts]) -> bool {
    if update.image_id.is_empty() {
        return false;
    }
    for s in serving {
        if s.image_id.is_empty() {
            return false;
        }
        if s.image_id != update.image_id {
            return true;
        }
    }
    false
}

/// The update pod for `source`: its registry Pod (`pod`, from
/// [`crate::catalog_operator::catalogsource::registry_pod`]) with `olm.catalogSource` emptied and
/// the update label set.
pub fn update_pod(mut pod: Value, source: &str) -> Value {
    if let Some(labels) = pod
        .pointer_mut("/metadata/labels")
        .and_then(Value::as_object_mut)
    {
        labels.insert(CATALOG_SOURCE_LABEL.into(), json!(""));
        labels.insert(UPDATE_LABEL.into(), json!(source));
    }
    pod
}

/// The labels that make an update pod of `source` its serving Pod (upstream's `promoteCatalog`).
pub fn promoted_labels(source: &str) -> Value {
    json!({CATALOG_SOURCE_LABEL: source, UPDATE_LABEL: ""})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`poll`] of a CatalogSource given as JSON.
    fn poll_of(source: &Value) -> Option<Poll> {
        poll(&crate::catalog_operator::catalogsource::parse(
            source.clone(),
        ))
    }

    fn source(interval: &str) -> Value {
        json!({"spec": {"sourceType": "grpc", "image": "quay.io/x/catalog:latest",
            "updateStrategy": {"registryPoll": {"interval": interval}}}})
    }

    fn every(interval: Duration) -> Poll {
        Poll {
            interval,
            parsing_error: None,
        }
    }

    const MIN: u64 = 60;

    /// Upstream's `TestSyncRegistryUpdateInterval` (`grpc_polling_test.go`): interval, seconds
    /// since the last poll (`None`: never polled), seconds since creation, expected resync.
    #[test]
    fn resync_interval_vectors() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_611_931_620);
        let ago = |s: u64| now - Duration::from_secs(s);
        let cases: [(&str, u64, Option<u64>, u64, u64); 8] = [
            (
                "PollingInterval10Minutes/FirstUpdate",
                10 * MIN,
                None,
                0,
                10 * MIN,
            ),
            (
                "PollingInterval15Minutes/FirstUpdate",
                15 * MIN,
                None,
                0,
                15 * MIN,
            ),
            (
                "PollingIntervalMultipleOfDefaultResyncPeriod",
                30 * MIN,
                Some(30 * MIN - 1),
                0,
                1,
            ),
            (
                "PollingInterval10Minutes/AlreadyUpdated",
                10 * MIN,
                Some(5 * MIN),
                0,
                10 * MIN,
            ),
            (
                "PollingInterval40Minutes/FirstUpdate",
                40 * MIN,
                None,
                35 * MIN,
                5 * MIN,
            ),
            (
                "PollingInterval40Minutes/AlreadyUpdated30MinutesAgo",
                40 * MIN,
                Some(30 * MIN),
                0,
                10 * MIN,
            ),
            (
                "PollingInterval1hour/FirstUpdate",
                60 * MIN,
                Some(15 * MIN),
                0,
                15 * MIN,
            ),
            (
                "PollingInterval10Hours/AlreadyUpdated",
                600 * MIN,
                Some(15 * MIN),
                0,
                15 * MIN,
            ),
        ];
        for (name, interval, last, created, expected) in cases {
            let got = resync_after(
                &every(Duration::from_secs(interval)),
                last.map(ago),
                ago(created),
                now,
            );
            assert_eq!(got, Duration::from_secs(expected), "{name}");
        }
    }

    #[test]
    fn a_poll_is_due_once_the_interval_has_passed() {
        let created = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let p = every(Duration::from_secs(600));
        let at = |s: u64| created + Duration::from_secs(s);
        assert!(
            !due(&p, None, created, at(600)),
            "exactly the interval is not past it"
        );
        assert!(due(&p, None, created, at(601)));
        assert!(!due(&p, Some(at(500)), created, at(1000)));
        assert!(due(&p, Some(at(500)), created, at(1101)));
    }

    #[test]
    fn only_image_grpc_sources_with_registry_poll_are_polled() {
        assert_eq!(
            poll_of(&source("10m")),
            Some(every(Duration::from_secs(600)))
        );
        let mut s = source("10m");
        s["spec"]["sourceType"] = json!("configmap");
        assert_eq!(poll_of(&s), None);
        let mut s = source("10m");
        s["spec"]["image"] = json!("");
        assert_eq!(poll_of(&s), None);
        assert_eq!(
            poll_of(&json!({"spec": {"sourceType": "grpc", "image": "x"}})),
            None
        );
    }

    /// Upstream's `UpdateStrategy.UnmarshalJSON`: an interval Go cannot parse becomes 15m with
    /// this message (its error text is Go's `time.ParseDuration`'s).
    #[test]
    fn an_unparsable_interval_falls_back_to_fifteen_minutes() {
        let p = poll_of(&source("10 minutes")).unwrap();
        assert_eq!(p.interval, DEFAULT_INTERVAL);
        assert_eq!(
            p.parsing_error.as_deref(),
            Some(
                "error parsing spec.updateStrategy.registryPoll.interval. Using the default value of 15m0s instead. Error: time: unknown unit \" minutes\" in duration \"10 minutes\""
            )
        );
        let p = poll_of(&json!({"spec": {"sourceType": "grpc", "image": "x",
            "updateStrategy": {"registryPoll": {}}}}))
        .unwrap();
        assert_eq!(p.interval, DEFAULT_INTERVAL);
        assert!(
            p.parsing_error
                .unwrap()
                .ends_with("Error: time: invalid duration \"\"")
        );
        for zero in ["0s", "-5m"] {
            let p = poll_of(&source(zero)).unwrap();
            assert_eq!(p.interval, DEFAULT_INTERVAL, "{zero}");
            assert!(p.parsing_error.is_some(), "{zero}");
        }
    }

    /// A Pod from its JSON.
    fn typed_pod(pod: Value) -> Pod {
        serde_json::from_value(pod).unwrap()
    }

    /// A container status: `fields` over the ones the API requires.
    fn container_status(fields: Value) -> Value {
        let mut s =
            json!({"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 0});
        for (k, v) in fields.as_object().into_iter().flatten() {
            s[k] = v.clone();
        }
        s
    }

    /// Upstream's `TestGetPodImageID` (`grpc_test.go`).
    #[test]
    fn image_id_vectors() {
        let status = |init: &[&str], containers: &[&str]| {
            let statuses = |ids: &[&str]| {
                ids.iter()
                    .map(|i| container_status(json!({"imageID": i})))
                    .collect::<Vec<_>>()
            };
            typed_pod(
                json!({"status": {"initContainerStatuses": statuses(init), "containerStatuses": statuses(containers)}}),
            )
        };
        assert_eq!(image_id(&status(&[], &["xyz123"])), "xyz123", "default pod");
        assert_eq!(
            image_id(&status(&["xyz123", "abc456"], &["xyz123"])),
            "abc456",
            "extractContent pod"
        );
        assert_eq!(
            image_id(&status(&[], &["xyz123", "abc456"])),
            "",
            "unexpected containers"
        );
        assert_eq!(image_id(&typed_pod(json!({"status": {}}))), "", "no status");
    }

    fn pod(name: &str, ready: bool, image_id: &str) -> PodFacts {
        PodFacts {
            name: name.into(),
            phase: "Running".into(),
            ready,
            image_id: image_id.into(),
            ..PodFacts::default()
        }
    }

    /// Upstream's `TestUpdatePodByDigest` (`grpc_test.go`) plus the other branches of
    /// `ensureUpdatePod`.
    #[test]
    fn update_steps() {
        let serving = [pod("cat-a", true, "xyz123")];
        assert_eq!(update_step("cat", false, &serving, &[]), UpdateStep::Idle);
        assert_eq!(update_step("cat", true, &serving, &[]), UpdateStep::Create);
        assert_eq!(
            update_step("cat", true, &serving, &[pod("cat-u", false, "")]),
            UpdateStep::Wait {
                pod: "cat-u".into()
            },
            "Grpc/PollingEnabled/UpdatePodNotReady/ReturnsUpdateNotReadyErr"
        );
        assert_eq!(
            update_step("cat", false, &serving, &[pod("cat-u", true, "xyz123")]),
            UpdateStep::Discard {
                pods: vec!["cat-u".into()]
            },
            "pod image ids match: not update from the registry"
        );
        assert_eq!(
            update_step("cat", false, &serving, &[pod("cat-u", true, "abc456")]),
            UpdateStep::Promote {
                pod: "cat-u".into(),
                retire: vec!["cat-a".into()]
            },
            "pod image ids do not match: update on the registry"
        );
        assert_eq!(
            update_step(
                "cat",
                false,
                &[pod("cat-a", true, "")],
                &[pod("cat-u", true, "abc456")]
            ),
            UpdateStep::Discard {
                pods: vec!["cat-u".into()]
            },
            "a serving pod's digest unknown: no promotion"
        );
        let mut failed = pod("cat-u", false, "");
        failed.phase = "Failed".into();
        assert_eq!(
            update_step("cat", false, &serving, &[failed]),
            UpdateStep::Failed {
                pod: "cat-u".into(),
                message: "couldn't ensure registry server - error ensuring update pod for catalog source cat: update pod cat-u in a Failed state: deleted update pod".into()
            }
        );
    }

    #[test]
    fn crash_looping_update_pods_count_as_failed() {
        let p = typed_pod(
            json!({"metadata": {"name": "cat-u"}, "status": {"phase": "Running",
            "containerStatuses": [container_status(json!({"imageID": "", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}))]}}),
        );
        let facts = PodFacts::of(&p);
        assert!(facts.crash_looping);
        assert!(matches!(
            update_step("cat", false, &[], &[facts]),
            UpdateStep::Failed { .. }
        ));
        let dying = typed_pod(
            json!({"metadata": {"name": "cat-a"}, "status": {"conditions": [
            {"type": "DisruptionTarget", "status": "True"}, {"type": "Ready", "status": "True"}]}}),
        );
        let facts = PodFacts::of(&dying);
        assert!(facts.disrupted && facts.ready);
    }

    #[test]
    fn update_pods_are_hidden_from_the_service_until_promoted() {
        let p = update_pod(
            json!({"metadata": {"labels": {CATALOG_SOURCE_LABEL: "cat", "olm.managed": "true"}}}),
            "cat",
        );
        assert_eq!(
            p["metadata"]["labels"],
            json!({CATALOG_SOURCE_LABEL: "", UPDATE_LABEL: "cat", "olm.managed": "true"})
        );
        assert_eq!(
            promoted_labels("cat"),
            json!({CATALOG_SOURCE_LABEL: "cat", UPDATE_LABEL: ""})
        );
    }
}
