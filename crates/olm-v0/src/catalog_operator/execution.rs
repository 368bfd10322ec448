//! What one execution pass over an `Installing` InstallPlan comes to (catalog-operator's
//! `ExecutePlan` and `transitionInstallPlanState`), once the shell has created what it could:
//! the status to write and whether to look again.
//!
//! Flow, in this order:
//!
//! 1. A step of a kind a plan may not create: `Failed`, "the InstallPlan contains invalid data"
//!    (nothing was created).
//! 2. An object OLM v1 holds (found before any step, or while one was created): `Failed` with
//!    why, at once — retrying would not change whose it is.
//! 3. A step that failed: retried (`status.message` "retrying execution due to error: …") until
//!    [`RETRY_TIMEOUT`] after `status.startTime`, then `Failed` with
//!    `Installed=False/InstallComponentFailed`; a Forbidden answer is retried without that
//!    limit, as upstream does (the plan's ServiceAccount may be granted what it lacks).
//! 4. A CRD not yet established: looked at again.
//! 5. Otherwise `Complete` with `Installed=True`.
//!
//! Every pass writes the steps' statuses, and `startTime` on the first.
//!
//! Guarantees: a function of its arguments; the time is the shell's one reading.

use std::time::Duration;

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::catalog_operator::steps::{Step, StepStatus};

pub mod phase;

/// How long a failing plan is retried (upstream's `--install-plan-retry-timeout` default).
pub const RETRY_TIMEOUT: Duration = Duration::from_secs(60);
/// How soon a plan waiting for CRDs or retrying is looked at again.
pub const REQUEUE: Duration = Duration::from_secs(2);
/// The message of a plan with a step of a kind it may not create.
pub const INVALID_DATA: &str = "the InstallPlan contains invalid data";
/// The `Installed` condition's reason when the plan failed.
pub const INSTALL_COMPONENT_FAILED: &str = "InstallComponentFailed";

/// Why a step failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepFailure {
    /// What failed, in upstream's words.
    pub message: String,
    /// The API server answered Forbidden.
    pub forbidden: bool,
    /// The object belongs to OLM v1.
    pub refused: bool,
}

/// What the pass did.
#[derive(Debug, Clone)]
pub struct Pass<'a> {
    /// The steps, with the statuses the pass gave them.
    pub steps: &'a [Step],
    /// `status.startTime` as written, empty before the first pass.
    pub started: &'a str,
    /// The time of the pass.
    pub now: Timestamp,
    /// A step is of a kind a plan may not create (nothing was created).
    pub unsupported: bool,
    /// Why OLM v1 holds objects of pending steps (found before any was created).
    pub held: Option<String>,
    /// The step that failed, if one did (the pass stopped there).
    pub failure: Option<StepFailure>,
}

/// How the plan stands after the pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Still installing (retrying, or waiting for CRDs): look again after [`REQUEUE`].
    Again,
    /// Refused: OLM v1 holds its objects.
    Refused,
    /// Failed.
    Failed,
    /// Complete.
    Complete,
}

/// [`conclude`]'s answer: the status to merge into the plan's, and how it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Conclusion {
    /// The status fields to write.
    pub status: Value,
    /// How the plan stands.
    pub ended: Ended,
}

/// The flow above.
pub fn conclude(pass: &Pass<'_>) -> Conclusion {
    let now = pass.now.to_string();
    let plan: Vec<Value> = pass.steps.iter().map(Step::to_json).collect();
    let mut status = json!({ "plan": plan });
    if pass.started.is_empty() {
        status["startTime"] = json!(now);
    }
    let failed = |mut status: Value, message: &str, ended: Ended| {
        status["phase"] = json!("Failed");
        status["conditions"] = json!([installed_condition(
            "False",
            INSTALL_COMPONENT_FAILED,
            message,
            &now
        )]);
        Conclusion { status, ended }
    };
    if pass.unsupported {
        status["message"] = json!(INVALID_DATA);
        return failed(status, INVALID_DATA, Ended::Failed);
    }
    let refused = pass.held.clone().or_else(|| {
        pass.failure
            .as_ref()
            .filter(|f| f.refused)
            .map(|f| f.message.clone())
    });
    if let Some(message) = refused {
        status["message"] = json!(message);
        return failed(status, &message, Ended::Refused);
    }
    if let Some(f) = &pass.failure {
        let started = pass.started.parse::<Timestamp>().unwrap_or(pass.now);
        let elapsed = Duration::try_from(pass.now.duration_since(started)).unwrap_or_default();
        if elapsed >= RETRY_TIMEOUT && !f.forbidden {
            return failed(status, &f.message, Ended::Failed);
        }
        status["message"] = json!(format!("retrying execution due to error: {}", f.message));
        return Conclusion {
            status,
            ended: Ended::Again,
        };
    }
    if pass
        .steps
        .iter()
        .any(|s| s.status == StepStatus::WaitingForApi)
    {
        return Conclusion {
            status,
            ended: Ended::Again,
        };
    }
    status["phase"] = json!("Complete");
    status["message"] = Value::Null;
    status["conditions"] = json!([installed_condition("True", "", "", &now)]);
    Conclusion {
        status,
        ended: Ended::Complete,
    }
}

/// The `Installed` condition as upstream's `ConditionFailed`/`ConditionMet` write it.
pub fn installed_condition(status: &str, reason: &str, message: &str, now: &str) -> Value {
    let mut c = json!({
        "type": "Installed",
        "status": status,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
    });
    if !reason.is_empty() {
        c["reason"] = json!(reason);
    }
    if !message.is_empty() {
        c["message"] = json!(message);
    }
    c
}

/// A step's object as the plan writes it, but for owner references (which need the CSV's uid,
/// read on the cluster): labelled `olm.managed: "true"`; a namespaced one placed in the plan's
/// `namespace`; a cluster-scoped one other than a CRD labelled with the owner labels of the CSV
/// it is `resolving`; a Subscription annotated with the `plan` that made it (upstream's
/// `ExecutePlan`).
pub fn shape(
    object: &mut Value,
    kind: &str,
    namespaced: bool,
    namespace: &str,
    resolving: &str,
    plan: &str,
) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if !metadata.get("labels").is_some_and(Value::is_object) {
        metadata.insert("labels".to_owned(), json!({}));
    }
    metadata["labels"]["olm.managed"] = json!("true");
    if namespaced {
        metadata.insert("namespace".to_owned(), json!(namespace));
    } else if kind != "CustomResourceDefinition" {
        for (k, v) in crate::olm_operator::strategy::csv_owner_labels(namespace, resolving) {
            metadata["labels"][k] = json!(v);
        }
    }
    if kind == "Subscription" {
        if !metadata.get("annotations").is_some_and(Value::is_object) {
            metadata.insert("annotations".to_owned(), json!({}));
        }
        metadata["annotations"][crate::catalog_operator::subscription::GENERATED_BY_ANNOTATION] =
            json!(plan);
    }
}

/// A Service step's object brought over an existing Service: when the plan's object names no
/// cluster IP, the ones the API server gave the existing Service are kept, since they cannot be
/// changed and a replace without them is refused (upstream updates with the Service it read
/// back, which carries them). One the plan names (`None` for a headless Service) is left for the
/// API server to judge.
pub fn keep_cluster_ips(new: &mut Value, current: &Value) {
    if new
        .pointer("/spec/clusterIP")
        .is_some_and(|ip| !ip.is_null())
    {
        return;
    }
    let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for field in ["clusterIP", "clusterIPs"] {
        if let Some(given) = current.pointer(&format!("/spec/{field}")) {
            spec.insert(field.to_owned(), given.clone());
        }
    }
}

#[cfg(test)]
mod tests;
