//! A Subscription's status, decided from what exists and from how the namespace's pass ends.
//!
//! Upstream spreads this over the status reconcilers of `pkg/controller/operators/catalog/
//! subscription/` (catalog health, InstallPlan conditions) and the steps of
//! `syncResolvingNamespace` that set `state`, `currentCSV`, `installedCSV` and the plan
//! reference. Here one pass makes one [`observe`] per Subscription and, when it resolves, ends
//! with exactly one of [`settled`], [`resolution_failed`], [`unpack_failed`] or [`planned`]; the
//! shell writes a status only where it differs from what it read.
//!
//! No decision reads the clock: `now` is handed in and stamps what changes (condition
//! transitions, catalog health, a status that did not exist).

use std::collections::HashMap;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use olm_v0_api::v1alpha1::{
    InstallPlan, InstallPlanReference, Subscription, SubscriptionCatalogHealth, SubscriptionState,
    SubscriptionStatus,
};

use super::{
    Condition, GENERATED_BY_ANNOTATION, PlanGone, PlanProgress, PlanView, catalog_health_condition,
    condition, install_plan_conditions, observed_state, plan_gone, reason, remove_condition,
    set_condition, state,
};

const API_VERSION: &str = "operators.coreos.com/v1alpha1";

/// A catalog a Subscription's namespace may use, as health reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogView {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Whether its registry connection is `READY`.
    pub healthy: bool,
}

/// What a pass knows of the Subscription's namespace.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// Each CSV's phase (`""` before it has one), by name.
    pub csv_phases: &'a HashMap<String, String>,
    /// The namespace's InstallPlans.
    pub plans: &'a [PlanView],
    /// The catalogs the namespace may use, in the order `catalogHealth` lists them.
    pub catalogs: &'a [CatalogView],
    /// Whether the namespace's OperatorGroup opts into unsafe fail-forward upgrades.
    pub fail_forward: bool,
}

/// A Subscription's status as [`observe`] decides it.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The status it should have.
    pub status: SubscriptionStatus,
    /// A CSV to delete: one a failed plan created, once that plan is deleted to retry (see
    /// [`PlanGone::Retry`]).
    pub leftover: Option<String>,
}

/// A status with nothing in it yet, first written `now`.
fn empty(now: &Time) -> SubscriptionStatus {
    SubscriptionStatus {
        current_csv: None,
        installed_csv: None,
        install: None,
        state: None,
        reason: None,
        install_plan_generation: None,
        install_plan_ref: None,
        catalog_health: Vec::new(),
        conditions: Vec::new(),
        last_updated: now.clone(),
    }
}

fn text(value: Option<&String>) -> &str {
    value.map(String::as_str).unwrap_or_default()
}

fn state_text(status: &SubscriptionStatus) -> &str {
    status
        .state
        .as_ref()
        .map(SubscriptionState::as_str)
        .unwrap_or_default()
}

/// The name of the InstallPlan `status` refers to (`""` when none).
fn plan_name(status: &SubscriptionStatus) -> &str {
    status
        .install_plan_ref
        .as_ref()
        .and_then(|r| r.name.as_deref())
        .unwrap_or_default()
}

/// Whether the Subscription's plan failed: it says so, or it is gone and the Subscription still
/// carries its `InstallPlanFailed` (the user deleted the failed plan to retry).
pub fn plan_failed(status: &SubscriptionStatus, plans: &[PlanView]) -> bool {
    let name = plan_name(status);
    if name.is_empty() {
        return false;
    }
    match plans.iter().find(|p| p.name == name) {
        Some(p) => p.phase == "Failed",
        None => status
            .conditions
            .iter()
            .any(|c| c.type_.as_str() == condition::INSTALL_PLAN_FAILED && c.status == "True"),
    }
}

/// Whether the Subscription waits on an InstallPlan under way: it refers to one and is
/// `UpgradePending`. A namespace whose Subscriptions all wait is not resolved again.
pub fn waiting_on_plan(status: &SubscriptionStatus) -> bool {
    status.install_plan_ref.is_some() && state_text(status) == state::UPGRADE_PENDING
}

/// A Subscription's status from what exists: adoption of the plan that created it (a
/// dependency's Subscription), state and installed CSV, a plan that went away, its plan's
/// conditions, and its catalogs' health. `status` is the newest known (`None` before its first
/// write).
pub fn observe(
    sub: &Subscription,
    status: Option<&SubscriptionStatus>,
    facts: &Facts<'_>,
    now: &Time,
) -> Observed {
    let mut status = status.cloned().unwrap_or_else(|| empty(now));
    let namespace = sub.metadata.namespace.clone().unwrap_or_default();
    adopt(sub, &mut status, facts, &namespace);

    let plan_name = plan_name(&status).to_owned();
    let plan = facts.plans.iter().find(|p| p.name == plan_name);
    let current = text(status.current_csv.as_ref()).to_owned();
    let current_phase = facts.csv_phases.get(&current).map(String::as_str);
    let progress = if plan_failed(&status, facts.plans) {
        PlanProgress::Failed
    } else if plan.is_some_and(|p| p.phase != "Complete") {
        PlanProgress::Running
    } else {
        PlanProgress::Done
    };
    if let Some((new_state, installed)) = observed_state(
        &current,
        current_phase,
        progress,
        facts.fail_forward,
        text(status.installed_csv.as_ref()),
    ) {
        if state_text(&status) != new_state {
            status.state = Some(SubscriptionState::from(new_state));
        }
        if installed && text(status.installed_csv.as_ref()) != current {
            status.installed_csv = Some(current.clone());
        }
    }

    let mut leftover = None;
    if !plan_name.is_empty() && plan.is_none() {
        let installed = text(status.installed_csv.as_ref()).to_owned();
        match plan_gone(state_text(&status), &current, current_phase, &installed) {
            PlanGone::Retry { leftover: csv } => {
                leftover = csv;
                status.install_plan_ref = None;
                status.install = None;
                status.current_csv = None;
                status.state = None;
                // The Subscription is back where it was before the plan: its installed CSV.
                if !installed.is_empty() && facts.csv_phases.contains_key(&installed) {
                    status.current_csv = Some(installed);
                    status.state = Some(SubscriptionState::AtLatestKnown);
                }
            }
            PlanGone::Missing => {
                let missing = Condition::holds(
                    condition::INSTALL_PLAN_MISSING,
                    reason::REFERENCED_INSTALL_PLAN_NOT_FOUND,
                    "",
                );
                set_condition(&mut status.conditions, &missing, now);
            }
        }
    } else {
        remove_condition(&mut status.conditions, condition::INSTALL_PLAN_MISSING);
    }

    let (pending, failed) = install_plan_conditions(plan);
    for (kind, c) in [
        (condition::INSTALL_PLAN_PENDING, pending),
        (condition::INSTALL_PLAN_FAILED, failed),
    ] {
        match c {
            Some(c) => {
                set_condition(&mut status.conditions, &c, now);
            }
            None => {
                remove_condition(&mut status.conditions, kind);
            }
        }
    }
    catalog_health(sub, &mut status, facts.catalogs, now);
    Observed { status, leftover }
}

/// A Subscription an InstallPlan created for a dependency (`olm.generated-by`) and that refers
/// to no plan yet takes that plan as its own: `UpgradePending` (`UpgradeFailed` when the plan
/// failed under fail-forward), moving to its `startingCSV`.
fn adopt(sub: &Subscription, status: &mut SubscriptionStatus, facts: &Facts<'_>, namespace: &str) {
    let generated_by = sub
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(GENERATED_BY_ANNOTATION))
        .map(String::as_str)
        .unwrap_or_default();
    if status.install_plan_ref.is_some() || generated_by.is_empty() {
        return;
    }
    let Some(plan) = facts.plans.iter().find(|p| p.name == generated_by) else {
        return;
    };
    status.install_plan_ref = Some(ObjectReference {
        api_version: Some(API_VERSION.to_owned()),
        kind: Some("InstallPlan".to_owned()),
        name: Some(plan.name.clone()),
        namespace: Some(namespace.to_owned()),
        ..ObjectReference::default()
    });
    status.state = Some(if facts.fail_forward && plan.phase == "Failed" {
        SubscriptionState::UpgradeFailed
    } else {
        SubscriptionState::UpgradePending
    });
    if let Some(starting) = sub.spec.starting_csv.as_ref().filter(|s| !s.is_empty()) {
        status.current_csv = Some(starting.clone());
    }
}

/// `CatalogSourcesUnhealthy` and `catalogHealth`: the list is stamped `now` only when some
/// catalog's health changed, so an unchanged namespace writes nothing.
fn catalog_health(
    sub: &Subscription,
    status: &mut SubscriptionStatus,
    catalogs: &[CatalogView],
    now: &Time,
) {
    let own = (
        sub.spec.catalog_source_namespace.as_str(),
        sub.spec.catalog_source.as_str(),
    );
    let health: Vec<(String, String, bool)> = catalogs
        .iter()
        .map(|c| (c.namespace.clone(), c.name.clone(), c.healthy))
        .collect();
    let own_exists = catalogs
        .iter()
        .any(|c| c.namespace == own.0 && c.name == own.1);
    let c = catalog_health_condition(&health, own, own_exists);
    set_condition(&mut status.conditions, &c, now);
    let fresh: Vec<SubscriptionCatalogHealth> = catalogs
        .iter()
        .map(|c| SubscriptionCatalogHealth {
            catalog_source_ref: ObjectReference {
                api_version: Some(API_VERSION.to_owned()),
                kind: Some("CatalogSource".to_owned()),
                name: Some(c.name.clone()),
                namespace: Some(c.namespace.clone()),
                ..ObjectReference::default()
            },
            last_updated: now.clone(),
            healthy: c.healthy,
        })
        .collect();
    let same =
        status.catalog_health.len() == fresh.len()
            && status.catalog_health.iter().zip(&fresh).all(|(a, b)| {
                a.catalog_source_ref == b.catalog_source_ref && a.healthy == b.healthy
            });
    if !same {
        status.catalog_health = fresh;
    }
}

/// Removes the conditions a resolution and an unpack leave behind.
fn clear_resolution(status: &mut SubscriptionStatus) {
    for kind in [
        condition::RESOLUTION_FAILED,
        condition::BUNDLE_UNPACKING,
        condition::BUNDLE_UNPACK_FAILED,
    ] {
        remove_condition(&mut status.conditions, kind);
    }
}

/// The pass resolved and has nothing to install: no resolution or unpack condition remains.
pub fn settled(status: &mut SubscriptionStatus) {
    clear_resolution(status);
}

/// The namespace could not be resolved: `ResolutionFailed` with the resolver's `reason`
/// (`ConstraintsNotSatisfiable` or `ErrorPreventedResolution`) and message. Returns whether the
/// status changed (the namespace's Warning event is recorded only then).
pub fn resolution_failed(
    status: &mut SubscriptionStatus,
    reason: &str,
    message: &str,
    now: &Time,
) -> bool {
    let c = Condition::holds(condition::RESOLUTION_FAILED, reason, message);
    set_condition(&mut status.conditions, &c, now)
}

/// A new bundle's manifests could not be had: resolution succeeded, unpacking failed.
pub fn unpack_failed(status: &mut SubscriptionStatus, message: &str, now: &Time) {
    remove_condition(&mut status.conditions, condition::RESOLUTION_FAILED);
    let c = Condition::holds(
        condition::BUNDLE_UNPACK_FAILED,
        reason::BUNDLE_UNPACK_FAILED,
        message,
    );
    set_condition(&mut status.conditions, &c, now);
}

/// The Subscription now waits on `plan` (of `generation`), moving to `csv` when the plan
/// installs a bundle it serves: `installPlanRef` and the older `installplan`, the generation,
/// `UpgradePending`, and no resolution or unpack condition.
pub fn planned(
    status: &mut SubscriptionStatus,
    plan: &InstallPlan,
    csv: Option<&str>,
    generation: i64,
) {
    clear_resolution(status);
    if let Some(csv) = csv {
        status.current_csv = Some(csv.to_owned());
    }
    let name = plan.metadata.name.clone().unwrap_or_default();
    let uid = plan.metadata.uid.clone().unwrap_or_default();
    status.install_plan_ref = Some(ObjectReference {
        api_version: Some(API_VERSION.to_owned()),
        kind: Some("InstallPlan".to_owned()),
        name: Some(name.clone()),
        namespace: plan.metadata.namespace.clone(),
        resource_version: plan.metadata.resource_version.clone(),
        uid: Some(uid.clone()),
        ..ObjectReference::default()
    });
    status.install = Some(InstallPlanReference {
        api_version: API_VERSION.to_owned(),
        kind: "InstallPlan".to_owned(),
        name,
        uid,
    });
    status.install_plan_generation = Some(generation);
    status.state = Some(SubscriptionState::UpgradePending);
}

#[cfg(test)]
mod tests;
