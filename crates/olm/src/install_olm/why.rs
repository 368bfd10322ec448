//! Why OLM's pods are not available: what `kubectl describe` and `kubectl logs --previous`
//! would show, gathered into the error of an install that timed out. A machine that runs the
//! install unattended (CI, a provisioning script) leaves nothing else to read once the cluster
//! is gone, so the error itself must say whether the image could not be pulled, the pod could
//! not be scheduled, or the process exited, and with what.

use k8s_openapi::api::core::v1::{ContainerStatus, Event, Pod};

/// Lines, one fact each, for every pod of the Deployment that is not ready: its phase, the
/// conditions that are not true, each container's waiting or terminated state and restarts,
/// and the Warning events about it (newest last, at most `EVENTS` per pod). `logs` gives the
/// last lines a crashed container printed, by pod name.
pub(super) fn explain(pods: &[Pod], events: &[Event], logs: &[(String, String)]) -> Vec<String> {
    let mut lines = Vec::new();
    for pod in pods {
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let status = pod.status.clone().unwrap_or_default();
        let ready = status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if ready {
            continue;
        }
        let mut head = format!(
            "pod {name}: {}",
            status.phase.as_deref().unwrap_or("no phase yet")
        );
        for c in status.conditions.iter().flatten() {
            if c.status != "True" && (c.reason.is_some() || c.message.is_some()) {
                head.push_str(&format!(
                    "; {} {}: {}",
                    c.type_,
                    c.reason.as_deref().unwrap_or(""),
                    c.message.as_deref().unwrap_or("").trim()
                ));
            }
        }
        lines.push(head);
        let containers = status
            .init_container_statuses
            .iter()
            .flatten()
            .chain(status.container_statuses.iter().flatten());
        lines.extend(containers.filter_map(container));
        let mut about: Vec<&Event> = events
            .iter()
            .filter(|e| {
                e.type_.as_deref() == Some("Warning")
                    && e.involved_object.kind.as_deref() == Some("Pod")
                    && e.involved_object.name.as_deref() == Some(name)
            })
            .collect();
        about.sort_by(|a, b| {
            (a.last_timestamp.as_ref(), a.metadata.name.as_deref())
                .cmp(&(b.last_timestamp.as_ref(), b.metadata.name.as_deref()))
        });
        let skip = about.len().saturating_sub(EVENTS);
        for e in about.into_iter().skip(skip) {
            lines.push(format!(
                "  event {} (×{}): {}",
                e.reason.as_deref().unwrap_or(""),
                e.count.unwrap_or(1),
                e.message.as_deref().unwrap_or("").trim()
            ));
        }
        for (_, log) in logs.iter().filter(|(pod, _)| pod == name) {
            lines.push("  its last log lines:".to_owned());
            lines.extend(log.lines().map(|l| format!("    {l}")));
        }
    }
    lines
}

/// Events kept per pod: the newest say what is happening now.
const EVENTS: usize = 3;

/// Whether a pod's container has exited at least once, so that its previous run's log says why.
pub(super) fn crashed(pod: &Pod) -> bool {
    pod.status
        .iter()
        .flat_map(|s| s.container_statuses.iter().flatten())
        .any(|c| {
            c.restart_count > 0
                || c.last_state
                    .as_ref()
                    .is_some_and(|s| s.terminated.is_some())
        })
}

/// One line for a container that is not running and ready, or that has restarted.
fn container(c: &ContainerStatus) -> Option<String> {
    let state = c.state.clone().unwrap_or_default();
    let now = if let Some(w) = &state.waiting {
        format!(
            "waiting: {}{}",
            w.reason.as_deref().unwrap_or("no reason"),
            w.message
                .as_deref()
                .map(|m| format!(": {}", m.trim()))
                .unwrap_or_default()
        )
    } else if let Some(t) = &state.terminated {
        format!(
            "terminated: {} (exit code {}){}",
            t.reason.as_deref().unwrap_or("no reason"),
            t.exit_code,
            t.message
                .as_deref()
                .map(|m| format!(": {}", m.trim()))
                .unwrap_or_default()
        )
    } else if c.ready {
        if c.restart_count == 0 {
            return None;
        }
        "running and ready".to_owned()
    } else {
        "running, not ready (its readiness probe fails)".to_owned()
    };
    let last = c
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .map(|t| {
            format!(
                "; last exit: {} (exit code {})",
                t.reason.as_deref().unwrap_or("no reason"),
                t.exit_code
            )
        })
        .unwrap_or_default();
    Some(format!(
        "  container {}: {now}; restarted {} times{last}",
        c.name, c.restart_count
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).expect("pod")
    }

    #[test]
    fn an_image_that_cannot_be_pulled_is_named_with_the_kubelets_words() {
        let pods = [pod(serde_json::json!({
            "metadata": {"name": "olm-1"},
            "status": {
                "phase": "Pending",
                "conditions": [{"type": "Ready", "status": "False", "reason": "ContainersNotReady", "message": "containers with unready status: [manager]"}],
                "containerStatuses": [{
                    "name": "manager", "ready": false, "restartCount": 0, "image": "i", "imageID": "",
                    "state": {"waiting": {"reason": "ImagePullBackOff", "message": "Back-off pulling image \"r/olm\""}}
                }]
            }
        }))];
        let events: Vec<Event> = vec![
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "olm-1.1"},
                "involvedObject": {"kind": "Pod", "name": "olm-1"},
                "type": "Warning", "reason": "Failed", "count": 4,
                "message": "Failed to pull image \"r/olm\": not found"
            }))
            .expect("event"),
        ];
        assert_eq!(
            explain(&pods, &events, &[]),
            [
                "pod olm-1: Pending; Ready ContainersNotReady: containers with unready status: [manager]",
                "  container manager: waiting: ImagePullBackOff: Back-off pulling image \"r/olm\"; restarted 0 times",
                "  event Failed (×4): Failed to pull image \"r/olm\": not found",
            ]
        );
    }

    #[test]
    fn a_crashing_process_shows_its_exit_and_last_log_lines() {
        let p = pod(serde_json::json!({
            "metadata": {"name": "olm-2"},
            "status": {
                "phase": "Running",
                "containerStatuses": [{
                    "name": "manager", "ready": false, "restartCount": 3, "image": "i", "imageID": "",
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"reason": "Error", "exitCode": 1}}
                }]
            }
        }));
        assert!(crashed(&p));
        assert_eq!(
            explain(
                &[p],
                &[],
                &[("olm-2".to_owned(), "starting\nError: forbidden".to_owned())]
            ),
            [
                "pod olm-2: Running",
                "  container manager: waiting: CrashLoopBackOff; restarted 3 times; last exit: Error (exit code 1)",
                "  its last log lines:",
                "    starting",
                "    Error: forbidden",
            ]
        );
    }

    #[test]
    fn ready_pods_are_not_mentioned() {
        let p = pod(serde_json::json!({
            "metadata": {"name": "olm-3"},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        }));
        assert!(!crashed(&p));
        assert!(explain(&[p], &[], &[]).is_empty());
    }
}
