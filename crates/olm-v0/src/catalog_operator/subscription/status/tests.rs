//! The status a Subscription gets, case by case. The catalog-health words and the plan
//! conditions are upstream's (`pkg/controller/operators/catalog/subscription/reconciler_test.go`
//! and `subscription_test.go` in the OLM repo); the state rules are olm's (see
//! [`super::super::observed_state`]).

use std::collections::HashMap;

use olm_v0_api::v1alpha1::SubscriptionConditionType as Type;
use serde_json::json;

use super::*;
use crate::catalog_operator::subscription::tests::at;

fn sub(extra: serde_json::Value) -> Subscription {
    let mut value = json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": "etcd", "namespace": "ns", "uid": "u1"},
        "spec": {"name": "etcd", "channel": "alpha", "source": "ops", "sourceNamespace": "olm"},
    });
    if let (Some(map), Some(extra)) = (value.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            if let (Some(serde_json::Value::Object(old)), serde_json::Value::Object(new)) =
                (map.get_mut(k), v)
            {
                old.extend(new.clone());
            } else {
                map.insert(k.clone(), v.clone());
            }
        }
    }
    serde_json::from_value(value).unwrap_or_else(|e| panic!("a test Subscription: {e}"))
}

fn status(value: serde_json::Value) -> SubscriptionStatus {
    let mut value = value;
    value["lastUpdated"] = json!("2026-01-01T00:00:00Z");
    serde_json::from_value(value).unwrap_or_else(|e| panic!("a test status: {e}"))
}

fn healthy() -> Vec<CatalogView> {
    vec![CatalogView {
        namespace: "olm".to_owned(),
        name: "ops".to_owned(),
        healthy: true,
    }]
}

fn plan(name: &str, phase: &str) -> PlanView {
    PlanView {
        name: name.to_owned(),
        generation: 1,
        phase: phase.to_owned(),
        installed: None,
        created: String::new(),
        csvs: vec!["etcd.v2".to_owned()],
    }
}

fn phases(list: &[(&str, &str)]) -> HashMap<String, String> {
    list.iter()
        .map(|(n, p)| ((*n).to_owned(), (*p).to_owned()))
        .collect()
}

fn condition_of(status: &SubscriptionStatus, kind: &str) -> Option<(String, String, String)> {
    status
        .conditions
        .iter()
        .find(|c| c.type_.as_str() == kind)
        .map(|c| {
            (
                c.status.clone(),
                c.reason.clone().unwrap_or_default(),
                c.message.clone().unwrap_or_default(),
            )
        })
}

fn observe_with(
    s: &Subscription,
    old: Option<&SubscriptionStatus>,
    csvs: &HashMap<String, String>,
    plans: &[PlanView],
    catalogs: &[CatalogView],
) -> Observed {
    let facts = Facts {
        csv_phases: csvs,
        plans,
        catalogs,
        fail_forward: false,
    };
    observe(s, old, &facts, &at(100))
}

#[test]
fn a_new_subscription_gets_its_catalogs_health() {
    let got = observe_with(&sub(json!({})), None, &HashMap::new(), &[], &healthy());
    assert_eq!(got.leftover, None);
    assert_eq!(got.status.state, None);
    assert_eq!(got.status.last_updated, at(100));
    assert_eq!(
        condition_of(&got.status, condition::CATALOG_SOURCES_UNHEALTHY),
        Some((
            "False".to_owned(),
            "AllCatalogSourcesHealthy".to_owned(),
            "all available catalogsources are healthy".to_owned()
        ))
    );
    assert_eq!(got.status.catalog_health.len(), 1);
    let health = &got.status.catalog_health[0];
    assert!(health.healthy);
    assert_eq!(health.last_updated, at(100));
    assert_eq!(
        health.catalog_source_ref.kind.as_deref(),
        Some("CatalogSource")
    );
    assert_eq!(health.catalog_source_ref.name.as_deref(), Some("ops"));
}

/// Upstream's three catalog-health messages: none at all, its own missing, its own unhealthy.
#[test]
fn catalog_health_words() {
    let other = vec![CatalogView {
        namespace: "ns".to_owned(),
        name: "mine".to_owned(),
        healthy: true,
    }];
    let unhealthy = vec![CatalogView {
        healthy: false,
        ..healthy()[0].clone()
    }];
    let cases: [(&[CatalogView], &str, &str); 3] = [
        (
            &[],
            "NoCatalogSourcesFound",
            "dependency resolution requires at least one catalogsource",
        ),
        (
            &other,
            "UnhealthyCatalogSourceFound",
            "targeted catalogsource olm/ops missing",
        ),
        (
            &unhealthy,
            "UnhealthyCatalogSourceFound",
            "targeted catalogsource olm/ops unhealthy",
        ),
    ];
    for (catalogs, reason, message) in cases {
        let got = observe_with(&sub(json!({})), None, &HashMap::new(), &[], catalogs);
        assert_eq!(
            condition_of(&got.status, condition::CATALOG_SOURCES_UNHEALTHY),
            Some(("True".to_owned(), reason.to_owned(), message.to_owned())),
            "{reason}: {message}"
        );
    }
}

/// Once a namespace settles, observing it again changes nothing: no time is stamped again, so
/// nothing is written.
#[test]
fn observing_a_settled_subscription_changes_nothing() {
    let s = sub(json!({}));
    let csvs = phases(&[("etcd.v2", "Succeeded")]);
    let plans = [plan("install-1", "Complete")];
    let old = status(json!({
        "currentCSV": "etcd.v2",
        "state": "UpgradePending",
        "installPlanRef": {"name": "install-1", "namespace": "ns"},
    }));
    let first = observe_with(&s, Some(&old), &csvs, &plans, &healthy());
    let later = Facts {
        csv_phases: &csvs,
        plans: &plans,
        catalogs: &healthy(),
        fail_forward: false,
    };
    let second = observe(&s, Some(&first.status), &later, &at(500));
    assert_eq!(second.status, first.status);
}

#[test]
fn states_follow_the_current_csv_and_its_plan() {
    let cases = [
        // (current CSV's phase, plan phase, state, installedCSV)
        (
            Some("Succeeded"),
            "Complete",
            "AtLatestKnown",
            Some("etcd.v2"),
        ),
        (
            Some("Pending"),
            "Complete",
            "AtLatestKnown",
            Some("etcd.v2"),
        ),
        (Some("Pending"), "Installing", "UpgradePending", None),
        (None, "Installing", "UpgradePending", None),
        (
            Some("Succeeded"),
            "Installing",
            "AtLatestKnown",
            Some("etcd.v2"),
        ),
        (Some("Pending"), "Failed", "UpgradePending", None),
    ];
    for (csv_phase, plan_phase, want_state, want_installed) in cases {
        let csvs = match csv_phase {
            Some(p) => phases(&[("etcd.v2", p)]),
            None => HashMap::new(),
        };
        let old = status(json!({
            "currentCSV": "etcd.v2",
            "state": "UpgradePending",
            "installPlanRef": {"name": "install-1", "namespace": "ns"},
        }));
        let got = observe_with(
            &sub(json!({})),
            Some(&old),
            &csvs,
            &[plan("install-1", plan_phase)],
            &healthy(),
        );
        let case = format!("{csv_phase:?} / {plan_phase}");
        assert_eq!(
            got.status.state.as_ref().map(SubscriptionState::as_str),
            Some(want_state),
            "{case}"
        );
        assert_eq!(
            got.status.installed_csv.as_deref(),
            want_installed,
            "{case}"
        );
    }
}

/// The plan conditions, as upstream's `InstallPlanStatusReconciler` sets them.
#[test]
fn a_plan_under_way_or_failed_shows_on_the_subscription() {
    let old = status(json!({
        "currentCSV": "etcd.v2",
        "state": "UpgradePending",
        "installPlanRef": {"name": "install-1", "namespace": "ns"},
    }));
    let cases = [
        (
            "RequiresApproval",
            condition::INSTALL_PLAN_PENDING,
            "RequiresApproval",
        ),
        ("Installing", condition::INSTALL_PLAN_PENDING, "Installing"),
        (
            "",
            condition::INSTALL_PLAN_PENDING,
            "InstallPlanNotYetReconciled",
        ),
        (
            "Failed",
            condition::INSTALL_PLAN_FAILED,
            "InstallPlanFailed",
        ),
    ];
    for (phase, kind, reason) in cases {
        let got = observe_with(
            &sub(json!({})),
            Some(&old),
            &HashMap::new(),
            &[plan("install-1", phase)],
            &healthy(),
        );
        assert_eq!(
            condition_of(&got.status, kind).map(|c| (c.0, c.1)),
            Some(("True".to_owned(), reason.to_owned())),
            "{phase}"
        );
    }
    let done = observe_with(
        &sub(json!({})),
        Some(&old),
        &phases(&[("etcd.v2", "Succeeded")]),
        &[plan("install-1", "Complete")],
        &healthy(),
    );
    assert!(
        done.status
            .conditions
            .iter()
            .all(|c| c.type_ == Type::CatalogSourcesUnhealthy)
    );
}

/// Seed 001: a failed plan deleted by the user to retry. The CSV it created that never
/// succeeded is deleted, and the Subscription falls back to the CSV it had installed.
#[test]
fn a_failed_plan_deleted_to_retry_falls_back_to_the_installed_csv() {
    let old = status(json!({
        "currentCSV": "etcd.v2",
        "installedCSV": "etcd.v1",
        "state": "UpgradePending",
        "installPlanRef": {"name": "install-2", "namespace": "ns"},
        "installplan": {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan", "name": "install-2", "uuid": "p2"},
        "conditions": [{"type": "InstallPlanFailed", "status": "True", "reason": "InstallPlanFailed"}],
    }));
    let csvs = phases(&[("etcd.v1", "Replacing"), ("etcd.v2", "Failed")]);
    let got = observe_with(&sub(json!({})), Some(&old), &csvs, &[], &healthy());
    assert_eq!(got.leftover.as_deref(), Some("etcd.v2"));
    assert_eq!(got.status.current_csv.as_deref(), Some("etcd.v1"));
    assert_eq!(got.status.state, Some(SubscriptionState::AtLatestKnown));
    assert_eq!(got.status.install_plan_ref, None);
    assert_eq!(got.status.install, None);
    assert_eq!(
        condition_of(&got.status, condition::INSTALL_PLAN_FAILED),
        None
    );
}

/// A plan collected after it installed the current CSV: `InstallPlanMissing`, nothing else.
#[test]
fn a_collected_plan_is_missing() {
    let old = status(json!({
        "currentCSV": "etcd.v2",
        "installedCSV": "etcd.v2",
        "state": "AtLatestKnown",
        "installPlanRef": {"name": "install-1", "namespace": "ns"},
    }));
    let csvs = phases(&[("etcd.v2", "Succeeded")]);
    let got = observe_with(&sub(json!({})), Some(&old), &csvs, &[], &healthy());
    assert_eq!(got.leftover, None);
    assert_eq!(
        condition_of(&got.status, condition::INSTALL_PLAN_MISSING),
        Some((
            "True".to_owned(),
            "ReferencedInstallPlanNotFound".to_owned(),
            String::new()
        ))
    );
    assert_eq!(got.status.current_csv.as_deref(), Some("etcd.v2"));
    // The plan is back (a cache that lagged): the condition goes.
    let back = observe_with(
        &sub(json!({})),
        Some(&got.status),
        &csvs,
        &[plan("install-1", "Complete")],
        &healthy(),
    );
    assert_eq!(
        condition_of(&back.status, condition::INSTALL_PLAN_MISSING),
        None
    );
}

/// A dependency's Subscription, created by a plan, takes that plan as its own.
#[test]
fn a_subscription_a_plan_created_adopts_it() {
    let s = sub(json!({
        "metadata": {"annotations": {"olm.generated-by": "install-3"}},
        "spec": {"startingCSV": "etcd.v2"},
    }));
    for (fail_forward, phase, want) in [
        (false, "Installing", SubscriptionState::UpgradePending),
        (false, "Failed", SubscriptionState::UpgradePending),
        (true, "Failed", SubscriptionState::UpgradeFailed),
    ] {
        let plans = [plan("install-3", phase)];
        let csvs = HashMap::new();
        let catalogs = healthy();
        let facts = Facts {
            csv_phases: &csvs,
            plans: &plans,
            catalogs: &catalogs,
            fail_forward,
        };
        let got = observe(&s, None, &facts, &at(100));
        let reference = got.status.install_plan_ref.clone().unwrap_or_default();
        assert_eq!(reference.name.as_deref(), Some("install-3"));
        assert_eq!(reference.namespace.as_deref(), Some("ns"));
        assert_eq!(got.status.current_csv.as_deref(), Some("etcd.v2"));
        assert_eq!(got.status.state, Some(want), "{fail_forward} {phase}");
    }
}

#[test]
fn catalog_health_is_stamped_only_when_it_changes() {
    let s = sub(json!({}));
    let first = observe_with(&s, None, &HashMap::new(), &[], &healthy());
    let facts_at = |catalogs: &[CatalogView], now: i64| {
        let csvs = HashMap::new();
        let facts = Facts {
            csv_phases: &csvs,
            plans: &[],
            catalogs,
            fail_forward: false,
        };
        observe(&s, Some(&first.status), &facts, &at(now))
    };
    let same = facts_at(&healthy(), 200);
    assert_eq!(same.status.catalog_health[0].last_updated, at(100));
    let unhealthy = vec![CatalogView {
        healthy: false,
        ..healthy()[0].clone()
    }];
    let changed = facts_at(&unhealthy, 300);
    assert_eq!(changed.status.catalog_health[0].last_updated, at(300));
    assert!(!changed.status.catalog_health[0].healthy);
}

#[test]
fn waiting_and_failed_plans() {
    let waiting = status(json!({
        "state": "UpgradePending",
        "installPlanRef": {"name": "install-1"},
    }));
    assert!(waiting_on_plan(&waiting));
    assert!(!waiting_on_plan(&status(
        json!({"state": "UpgradePending"})
    )));
    assert!(!waiting_on_plan(&status(json!({
        "state": "AtLatestKnown",
        "installPlanRef": {"name": "install-1"},
    }))));
    assert!(plan_failed(&waiting, &[plan("install-1", "Failed")]));
    assert!(!plan_failed(&waiting, &[plan("install-1", "Installing")]));
    // Deleted after failing: the condition remembers.
    assert!(!plan_failed(&waiting, &[]));
    let remembered = status(json!({
        "installPlanRef": {"name": "install-1"},
        "conditions": [{"type": "InstallPlanFailed", "status": "True"}],
    }));
    assert!(plan_failed(&remembered, &[]));
}

/// How a pass ends: each ending leaves exactly its conditions.
#[test]
fn endings() {
    let base = || {
        status(json!({
            "conditions": [
                {"type": "ResolutionFailed", "status": "True", "reason": "ConstraintsNotSatisfiable", "message": "no"},
                {"type": "BundleUnpackFailed", "status": "True", "reason": "BundleUnpackFailed", "message": "x"},
                {"type": "CatalogSourcesUnhealthy", "status": "False"},
            ],
        }))
    };
    let kinds = |s: &SubscriptionStatus| -> Vec<String> {
        s.conditions.iter().map(|c| c.type_.to_string()).collect()
    };

    let mut s = base();
    settled(&mut s);
    assert_eq!(kinds(&s), ["CatalogSourcesUnhealthy"]);

    let mut s = base();
    assert!(!resolution_failed(
        &mut s,
        "ConstraintsNotSatisfiable",
        "no",
        &at(5)
    ));
    assert!(resolution_failed(
        &mut s,
        "ErrorPreventedResolution",
        "boom",
        &at(5)
    ));
    assert_eq!(
        condition_of(&s, condition::RESOLUTION_FAILED),
        Some((
            "True".to_owned(),
            "ErrorPreventedResolution".to_owned(),
            "boom".to_owned()
        ))
    );

    let mut s = base();
    unpack_failed(&mut s, "unpacking quay.io/x: refused", &at(5));
    assert_eq!(kinds(&s), ["BundleUnpackFailed", "CatalogSourcesUnhealthy"]);
    assert_eq!(
        condition_of(&s, condition::BUNDLE_UNPACK_FAILED).map(|c| c.2),
        Some("unpacking quay.io/x: refused".to_owned())
    );

    let mut s = base();
    let install: InstallPlan = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "InstallPlan",
        "metadata": {"name": "install-abc", "namespace": "ns", "uid": "p1", "resourceVersion": "7"},
        "spec": {"clusterServiceVersionNames": ["etcd.v2"], "approval": "Automatic", "approved": true},
    }))
    .unwrap_or_else(|e| panic!("a test plan: {e}"));
    planned(&mut s, &install, Some("etcd.v2"), 4);
    assert_eq!(kinds(&s), ["CatalogSourcesUnhealthy"]);
    assert_eq!(s.current_csv.as_deref(), Some("etcd.v2"));
    assert_eq!(s.state, Some(SubscriptionState::UpgradePending));
    assert_eq!(s.install_plan_generation, Some(4));
    let reference = s.install_plan_ref.clone().unwrap_or_default();
    assert_eq!(
        (
            reference.name.as_deref(),
            reference.namespace.as_deref(),
            reference.uid.as_deref(),
            reference.resource_version.as_deref()
        ),
        (Some("install-abc"), Some("ns"), Some("p1"), Some("7"))
    );
    assert_eq!(
        s.install
            .as_ref()
            .map(|i| (i.name.as_str(), i.uid.as_str())),
        Some(("install-abc", "p1"))
    );
    // A Subscription the plan serves no bundle of keeps its current CSV.
    let mut other = status(json!({"currentCSV": "dep.v1"}));
    planned(&mut other, &install, None, 4);
    assert_eq!(other.current_csv.as_deref(), Some("dep.v1"));
}
