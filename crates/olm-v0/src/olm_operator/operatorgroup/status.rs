//! An OperatorGroup's status, decided from what the controller found (upstream's
//! `syncOperatorGroups`, steps 1–3 in `pkg/controller/operators/olm/operatorgroup.go`):
//! `MultipleOperatorGroup` while another group shares the namespace,
//! `OperatorGroupServiceAccount` while `spec.serviceAccountName` names an account that does not
//! exist, `serviceAccountRef` once it does, and `namespaces` as the targets resolved now.
//!
//! No decision reads the clock: `now` stamps a condition that changes and `lastUpdated` when
//! the targets change (or the status is first written); an unchanged group decides the status
//! it has, so nothing is rewritten.

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use olm_v0_api::v1::OperatorGroupStatus;

use super::{
    MULTIPLE_GROUPS_CONDITION, MULTIPLE_GROUPS_MESSAGE, MULTIPLE_GROUPS_REASON,
    SERVICE_ACCOUNT_CONDITION, SERVICE_ACCOUNT_REASON, namespaces_changed, service_account_message,
};

/// The group's ServiceAccount as the controller found it.
#[derive(Debug, Clone, PartialEq)]
pub enum Account {
    /// `spec.serviceAccountName` names none.
    NotAsked,
    /// The named account does not exist.
    Missing(String),
    /// The named account, found.
    Found(ObjectReference),
}

/// What the controller found of one group.
#[derive(Debug, Clone, Copy)]
pub struct Found<'a> {
    /// Its status as stored (`None` before the first write).
    pub status: Option<&'a OperatorGroupStatus>,
    /// Whether another OperatorGroup shares its namespace.
    pub several: bool,
    /// Its ServiceAccount.
    pub account: &'a Account,
    /// The namespaces it targets now (`[""]` for every namespace).
    pub targets: &'a [String],
}

/// What [`decide`] says of the status.
#[derive(Debug, Clone, PartialEq)]
pub struct Decided {
    /// The status to write, when it differs from the stored one.
    pub write: Option<OperatorGroupStatus>,
    /// Whether the targets changed: the write is all this pass does (it wakes the next).
    pub targets_changed: bool,
    /// The missing account's condition message: the pass looks for it again after a backoff,
    /// as upstream's sync error does (ServiceAccounts are not watched).
    pub missing_account: Option<String>,
}

/// Steps 1–3 of the group's sync: its conditions, account reference and targets.
pub fn decide(found: &Found<'_>, now: &Time) -> Decided {
    let stored = found.status;
    let current: &[Condition] = stored.map_or(&[], |s| s.conditions.as_slice());
    let mut conditions = with_condition(
        current,
        MULTIPLE_GROUPS_CONDITION,
        found
            .several
            .then_some((MULTIPLE_GROUPS_REASON, MULTIPLE_GROUPS_MESSAGE)),
        now,
    );
    let (account_ref, missing_account) = match found.account {
        Account::NotAsked => (None, None),
        Account::Found(reference) => (Some(reference.clone()), None),
        Account::Missing(name) => (None, Some(service_account_message(name))),
    };
    conditions = with_condition(
        &conditions,
        SERVICE_ACCOUNT_CONDITION,
        missing_account
            .as_deref()
            .map(|message| (SERVICE_ACCOUNT_REASON, message)),
        now,
    );
    let stored_namespaces: &[String] = stored.map_or(&[], |s| s.namespaces.as_slice());
    let targets_changed = stored.is_none() || namespaces_changed(stored_namespaces, found.targets);
    let account_changed =
        stored.and_then(|s| s.service_account_ref.as_ref()) != account_ref.as_ref();
    let write = (targets_changed || conditions != current || account_changed).then(|| {
        OperatorGroupStatus {
            namespaces: if targets_changed {
                found.targets.to_vec()
            } else {
                stored_namespaces.to_vec()
            },
            service_account_ref: account_ref,
            last_updated: match stored {
                Some(s) if !targets_changed => s.last_updated.clone(),
                _ => now.clone(),
            },
            conditions,
        }
    });
    Decided {
        write,
        targets_changed,
        missing_account,
    }
}

/// `conditions` with `wanted` set (its transition time kept when the status is unchanged) or,
/// when `None`, the type `type_` removed.
fn with_condition(
    conditions: &[Condition],
    type_: &str,
    wanted: Option<(&str, &str)>,
    now: &Time,
) -> Vec<Condition> {
    let mut out: Vec<Condition> = conditions
        .iter()
        .filter(|c| c.type_ != type_)
        .cloned()
        .collect();
    if let Some((reason, message)) = wanted {
        let message = &*olm_k8s::bounded_message(message);
        let existing = conditions.iter().find(|c| c.type_ == type_);
        let kept =
            existing.filter(|c| c.status == "True" && c.reason == reason && c.message == message);
        out.push(kept.cloned().unwrap_or_else(|| Condition {
            type_: type_.to_owned(),
            status: "True".to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            last_transition_time: now.clone(),
            observed_generation: None,
        }));
    }
    out
}

#[cfg(test)]
mod tests;
