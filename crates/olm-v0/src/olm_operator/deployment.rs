//! Whether an install strategy's Deployment is done rolling out (OLM repo
//! `pkg/controller/install/status_viewer.go`): the message olm-operator puts into the CSV while
//! it waits (`installing: waiting for deployment … to become ready: <message>`), and the one
//! unrecoverable case, a Deployment past its progress deadline.

use olm_goenc::quote;

/// The Deployment `Progressing` reason that means it gave up.
pub const TIMED_OUT_REASON: &str = "ProgressDeadlineExceeded";

/// One `status.conditions` entry of a Deployment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeploymentCondition {
    /// `type`.
    pub type_: String,
    /// `status`.
    pub status: String,
    /// `reason`.
    pub reason: String,
    /// `message`.
    pub message: String,
}

/// What the readiness check reads of a Deployment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeploymentFacts {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.generation`.
    pub generation: i64,
    /// `status.observedGeneration`.
    pub observed_generation: i64,
    /// `status.replicas`.
    pub replicas: i32,
    /// `status.updatedReplicas`.
    pub updated_replicas: i32,
    /// `status.conditions`.
    pub conditions: Vec<DeploymentCondition>,
}

/// Where a Deployment's rollout stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rollout {
    /// Updated and available; the message says so.
    Done(String),
    /// Still going; what it waits for.
    Waiting(String),
    /// Past its progress deadline: the install cannot succeed (a `Timeout` strategy error).
    TimedOut(String),
}

/// The rollout state of `d`, in upstream's order and words: the spec change not yet observed;
/// past the deadline; outdated replicas left; not `Available`; else done.
pub fn rollout(d: &DeploymentFacts) -> Rollout {
    let name = quote(&d.name);
    if d.generation > d.observed_generation {
        return Rollout::Waiting(format!(
            "waiting for spec update of deployment {name} to be observed..."
        ));
    }
    let find = |t: &str| d.conditions.iter().find(|c| c.type_ == t);
    if find("Progressing").is_some_and(|c| c.reason == TIMED_OUT_REASON) {
        return Rollout::TimedOut(format!("deployment {name} exceeded its progress deadline"));
    }
    if d.replicas > d.updated_replicas {
        return Rollout::Waiting(format!(
            "deployment {name} waiting for {} outdated replica(s) to be terminated",
            d.replicas - d.updated_replicas
        ));
    }
    match find("Available") {
        Some(c) if c.status == "True" => {
            Rollout::Done(format!("deployment {name} is up-to-date and available"))
        }
        Some(c) => Rollout::Waiting(format!("deployment {name} not available: {}", c.message)),
        None => Rollout::Waiting(format!(
            "deployment {name} not available: missing condition \"Available\""
        )),
    }
}
