//! Where an InstallPlan goes before its steps run (catalog-operator's `syncInstallPlans` and
//! `transitionInstallPlanState` up to `ExecutePlan`): one decision per pass over the plan as
//! the cache holds it, its namespace's OperatorGroups and the time.
//!
//! Flow, in this order:
//!
//! 1. A plan no Subscription made (a user's, seed 004) is planned as upstream plans one
//!    ([`crate::catalog_operator::subscription::hand_made_plan_phase`]): its phase written, or
//!    looked at again once its maker's own status write has had its chance.
//! 2. Only `RequiresApproval` and `Installing` go further.
//! 3. The ServiceAccount the steps are created as comes from the one OperatorGroup managing the
//!    namespace ([`crate::olm_operator::operatorgroup::attenuated_service_account`]). When it
//!    cannot be told, `Installed=False/InstallCheckFailed` with upstream's message is written (once
//!    per message) and the pass fails, to be retried with backoff.
//! 4. Once it can be told again after such a failure, the condition is reset to upstream's
//!    `False/Unknown` and nothing else happens in that pass.
//! 5. The account, when one is named, is recorded in `status.attenuatedServiceAccountRef`.
//! 6. `RequiresApproval` and approved: `Installing`. `Installing`: the steps run
//!    ([`crate::catalog_operator::execution::conclude`] judges the pass).
//!
//! Every write ends the pass: the write wakes the next one, which sees it.
//!
//! Guarantees: a function of its arguments; the time is the shell's one reading.

use std::time::Duration;

use jiff::Timestamp;
use olm_v0_api::v1::OperatorGroup;
use olm_v0_api::v1alpha1::{
    Approval, InstallPlan, InstallPlanCondition, InstallPlanConditionType, InstallPlanPhase,
};
use serde_json::{Value, json};

use crate::catalog_operator::execution::installed_condition;
use crate::catalog_operator::subscription::{HandMade, hand_made_plan_phase};
use crate::olm_operator::operatorgroup::attenuated_service_account;

/// The `Installed` condition's reason while the plan's ServiceAccount cannot be determined
/// (upstream's `InstallPlanReasonInstallCheckFailed`).
pub const INSTALL_CHECK_FAILED: &str = "InstallCheckFailed";

/// What a pass reads.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// The plan.
    pub plan: &'a InstallPlan,
    /// The OperatorGroups of its namespace.
    pub groups: &'a [&'a OperatorGroup],
    /// The time of the pass.
    pub now: Timestamp,
}

/// What the pass does.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Nothing until the plan or its groups change.
    Nothing,
    /// Look again after this long.
    After(Duration),
    /// A plan no Subscription made moves to `phase`: merge `status` into its status.
    Planned {
        /// The new phase.
        phase: &'static str,
        /// What to merge into `status`.
        status: Value,
    },
    /// Merge this into the plan's status.
    Write(Value),
    /// The plan's ServiceAccount cannot be determined: merge `write` into the status when there
    /// is one, then fail the pass with `error` (retried with backoff).
    Unresolved {
        /// The condition to write, `None` when the plan already says so.
        write: Option<Value>,
        /// The pass's error, in upstream's words.
        error: String,
    },
    /// Run the steps.
    Execute,
}

/// The decision of one pass.
pub fn decide(o: &Observed<'_>) -> Next {
    let plan = o.plan;
    let status = plan.status.as_ref();
    let phase = status.map_or("", |s| s.phase.as_str());
    let by_subscription = plan
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.kind == "Subscription");
    if !by_subscription {
        let made = plan.metadata.creation_timestamp.as_ref().map(|t| t.0);
        let age = made
            .and_then(|t| Duration::try_from(o.now.duration_since(t)).ok())
            .unwrap_or_default();
        match hand_made_plan_phase(
            phase,
            !plan.spec.cluster_service_version_names.is_empty(),
            plan.spec.approval == Approval::Manual,
            plan.spec.approved,
            age,
        ) {
            Some(HandMade::After(wait)) => return Next::After(wait),
            Some(HandMade::Phase(next)) => {
                let mut status = json!({"phase": next});
                // The status schema requires the list, which a plan made by hand lacks.
                if plan.status.is_none() {
                    status["catalogSources"] = json!([]);
                }
                return Next::Planned {
                    phase: next,
                    status,
                };
            }
            None => {}
        }
    }
    let phase = status.map(|s| &s.phase);
    let installing = phase == Some(&InstallPlanPhase::Installing);
    if !installing && phase != Some(&InstallPlanPhase::RequiresApproval) {
        return Next::Nothing;
    }
    let installed: Option<&InstallPlanCondition> = status.and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_ == Some(InstallPlanConditionType::Installed))
    });
    let now = o.now.to_string();
    let account = match attenuated_service_account(o.groups) {
        Ok(account) => account,
        Err(message) => {
            let said = installed.and_then(|c| c.message.as_deref()) == Some(message.as_str());
            return Next::Unresolved {
                write: (!said).then(|| {
                    let condition =
                        installed_condition("False", INSTALL_CHECK_FAILED, &message, &now);
                    json!({"conditions": [condition]})
                }),
                error: format!("attenuated service account query failed - {message}"),
            };
        }
    };
    if installed.and_then(|c| c.reason.as_deref()) == Some(INSTALL_CHECK_FAILED) {
        // Resolved: upstream's reset of the condition (status False, reason "Unknown").
        let condition = installed_condition("False", "Unknown", "", &now);
        return Next::Write(json!({"conditions": [condition]}));
    }
    if let Some(account) = account
        && status.and_then(|s| s.attenuated_service_account_ref.as_ref()) != Some(&account)
    {
        return Next::Write(json!({"attenuatedServiceAccountRef": account}));
    }
    if installing {
        Next::Execute
    } else if plan.spec.approved {
        Next::Write(json!({"phase": "Installing"}))
    } else {
        Next::Nothing
    }
}

#[cfg(test)]
mod tests;
