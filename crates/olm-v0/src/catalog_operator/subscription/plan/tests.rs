//! When a resolved namespace gets a new InstallPlan, and what the plan holds.

use serde_json::json;

use super::*;

fn sub(name: &str, package: &str, channel: &str, manual: bool) -> Subscription {
    let mut spec = json!({"name": package, "source": "ops", "sourceNamespace": "olm"});
    if !channel.is_empty() {
        spec["channel"] = json!(channel);
    }
    if manual {
        spec["installPlanApproval"] = json!("Manual");
    }
    serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": spec,
    }))
    .unwrap_or_else(|e| panic!("a test Subscription: {e}"))
}

fn status(current: &str, generation: Option<i64>) -> SubscriptionStatus {
    let mut value = json!({"lastUpdated": "2026-01-01T00:00:00Z"});
    if !current.is_empty() {
        value["currentCSV"] = json!(current);
    }
    if let Some(g) = generation {
        value["installPlanGeneration"] = json!(g);
    }
    serde_json::from_value(value).unwrap_or_else(|e| panic!("a test status: {e}"))
}

fn bundle<'a>(name: &'a str, package: &'a str) -> NewBundle<'a> {
    NewBundle {
        name,
        package,
        channel: "alpha",
        catalog: "ops",
        catalog_namespace: "olm",
    }
}

fn plan(name: &str, generation: i64, phase: &str, created: &str, csvs: &[&str]) -> PlanView {
    PlanView {
        name: name.to_owned(),
        generation,
        phase: phase.to_owned(),
        installed: None,
        created: created.to_owned(),
        csvs: csvs.iter().map(|c| (*c).to_owned()).collect(),
    }
}

fn now() -> jiff::Timestamp {
    "2026-01-01T00:01:00Z"
        .parse()
        .unwrap_or_else(|e| panic!("a test time: {e}"))
}

#[test]
fn channels_and_catalogs_decide_which_subscription_a_bundle_serves() {
    let b = bundle("etcd.v2", "etcd");
    assert!(serves(&sub("s", "etcd", "alpha", false), &b));
    assert!(serves(&sub("s", "etcd", "", false), &b));
    assert!(!serves(&sub("s", "etcd", "beta", false), &b));
    assert!(!serves(&sub("s", "other", "alpha", false), &b));
    let elsewhere = NewBundle {
        catalog_namespace: "ns",
        ..b
    };
    assert!(!serves(&sub("s", "etcd", "alpha", false), &elsewhere));
}

#[test]
fn nothing_new_settles() {
    let s = sub("etcd", "etcd", "alpha", false);
    let st = status("etcd.v1", Some(1));
    let subs = [(&s, &st)];
    assert_eq!(
        next(&subs, &[], &[], &BTreeMap::new(), now()),
        Next::Settled(None)
    );
    // Already the current CSV (a failed plan waiting for a fix), and a dependency whose
    // Subscription exists: another plan would fail the same way.
    let dep = sub("dep-alpha-ops-olm", "dep", "alpha", false);
    let st_now = status("etcd.v2", Some(2));
    let dep_st = status("", None);
    let subs = [(&s, &st_now), (&dep, &dep_st)];
    let new = [bundle("etcd.v2", "etcd"), bundle("dep.v1", "dep")];
    // `dep` serves dep.v1 itself here (same package and catalog), so its current CSV decides.
    assert!(matches!(
        next(&subs, &new, &[], &BTreeMap::new(), now()),
        Next::Plan(_)
    ));
    let other = sub("dep-alpha-ops-olm", "unrelated", "alpha", false);
    let subs = [(&s, &st_now), (&other, &dep_st)];
    assert_eq!(
        next(&subs, &new, &[], &BTreeMap::new(), now()),
        Next::Settled(None)
    );
}

#[test]
fn a_plan_under_way_or_just_completed_is_not_made_again() {
    let s = sub("etcd", "etcd", "alpha", false);
    let st = status("etcd.v1", Some(1));
    let subs = [(&s, &st)];
    let new = [bundle("etcd.v2", "etcd")];
    let cases = [
        (
            plan(
                "install-2",
                2,
                "Installing",
                "2026-01-01T00:00:50Z",
                &["etcd.v2"],
            ),
            Next::Settled(None),
        ),
        (
            plan(
                "install-2",
                2,
                "Complete",
                "2026-01-01T00:00:50Z",
                &["etcd.v2"],
            ),
            Next::Settled(Some(Duration::from_secs(20))),
        ),
    ];
    for (p, want) in cases {
        assert_eq!(
            next(
                &subs,
                &new,
                std::slice::from_ref(&p),
                &BTreeMap::new(),
                now()
            ),
            want,
            "{}",
            p.phase
        );
    }
    // Long completed, failed, or for other CSVs: a new plan.
    for p in [
        plan(
            "install-2",
            2,
            "Complete",
            "2026-01-01T00:00:00Z",
            &["etcd.v2"],
        ),
        plan(
            "install-2",
            2,
            "Failed",
            "2026-01-01T00:00:50Z",
            &["etcd.v2"],
        ),
        plan(
            "install-2",
            2,
            "Installing",
            "2026-01-01T00:00:50Z",
            &["etcd.v3"],
        ),
    ] {
        assert!(
            matches!(
                next(
                    &subs,
                    &new,
                    std::slice::from_ref(&p),
                    &BTreeMap::new(),
                    now()
                ),
                Next::Plan(PlanOrder { generation: 3, .. })
            ),
            "{} {:?}",
            p.phase,
            p.csvs
        );
    }
}

#[test]
fn a_new_plan_names_what_each_bundle_serves() {
    let etcd = sub("etcd", "etcd", "alpha", false);
    let manual = sub("prom", "prom", "", true);
    let etcd_st = status("etcd.v1", Some(4));
    let prom_st = status("prom.v1", None);
    let subs = [(&etcd, &etcd_st), (&manual, &prom_st)];
    let new = [
        bundle("etcd.v2", "etcd"),
        bundle("dep.v1", "dep"),
        bundle("prom.v2", "prom"),
    ];
    let aside = BTreeMap::from([
        ("etcd.v1".to_owned(), SetAside::FailedPlan),
        ("prom.v1".to_owned(), SetAside::Upgraded),
    ]);
    let plans = [plan("install-1", 2, "Failed", "", &["etcd.v1"])];
    let Next::Plan(order) = next(&subs, &new, &plans, &aside, now()) else {
        panic!("a plan was expected");
    };
    assert_eq!(
        order,
        PlanOrder {
            serving: vec![Some(0), None, Some(1)],
            current: BTreeMap::from([(0, "etcd.v2".to_owned()), (1, "prom.v2".to_owned())]),
            leftovers: vec!["etcd.v1".to_owned()],
            generation: 5,
            manual: true,
        }
    );
}

fn from<'a>(b: NewBundle<'a>, catalog: &'a str) -> NewBundle<'a> {
    NewBundle { catalog, ..b }
}

/// An order for bundles `serving` those Subscriptions, moving none and deleting nothing first.
fn order(serving: Vec<Option<usize>>, generation: i64, manual: bool) -> PlanOrder {
    PlanOrder {
        serving,
        current: BTreeMap::new(),
        leftovers: vec![],
        generation,
        manual,
    }
}

/// The plan as written: owned but not controlled by every Subscription of the namespace,
/// labelled for each package's Operator, waiting for approval when the order says so.
#[test]
fn install_plan_as_created() {
    let mut a = sub("a", "pkg-a", "stable", true);
    a.metadata.uid = Some("uid-a".into());
    let mut b = sub("b", "pkg-b", "", false);
    b.metadata.uid = Some("uid-b".into());
    let order = order(vec![Some(0), None], 3, true);
    let bundles = [
        from(bundle("a.v2", "pkg-a"), "ops"),
        from(bundle("dep.v1", "dep"), "other"),
    ];
    let plan = order.install_plan("ns", &[&a, &b], &bundles);
    let owner = |name: &str, uid: &str| {
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
               "name": name, "uid": uid, "blockOwnerDeletion": false, "controller": false})
    };
    assert_eq!(
        serde_json::to_value(&plan).unwrap(),
        json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "InstallPlan",
            "metadata": {
                "generateName": "install-",
                "namespace": "ns",
                "ownerReferences": [owner("a", "uid-a"), owner("b", "uid-b")],
                "labels": {"operators.coreos.com/pkg-a.ns": "", "operators.coreos.com/pkg-b.ns": ""},
            },
            "spec": {
                "clusterServiceVersionNames": ["a.v2", "dep.v1"],
                "approval": "Manual",
                "approved": false,
                "generation": 3,
            },
        })
    );
    assert_eq!(order.first_phase(), "RequiresApproval");
    let automatic = PlanOrder {
        manual: false,
        ..order
    };
    assert_eq!(automatic.first_phase(), "Installing");
    let plan = automatic.install_plan("ns", &[&b], &bundles[..1]);
    assert_eq!(plan.spec.approval, Approval::Automatic);
    assert!(plan.spec.approved);
}

/// The status a new plan is given: its first phase, each catalog once, sorted, and its steps.
#[test]
fn install_plan_status() {
    let order = order(vec![Some(0), Some(0), None], 1, false);
    let bundles = [
        from(bundle("a.v2", "pkg-a"), "ops"),
        from(bundle("c.v1", "pkg-c"), "beta"),
        from(bundle("dep.v1", "dep"), "ops"),
    ];
    assert_eq!(
        order.status(&bundles, &[]),
        json!({"phase": "Installing", "catalogSources": ["beta", "ops"], "plan": []})
    );
}
