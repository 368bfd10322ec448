use super::*;

const NOW: &str = "2026-12-07T12:00:10Z";

fn now() -> Timestamp {
    NOW.parse().unwrap()
}

/// A plan in `ns` made at 12:00:00, by a Subscription when `by_subscription`, with `status`
/// (`Value::Null` for none) and `spec` over an Automatic, unapproved plan naming `a.v1`.
fn plan(by_subscription: bool, spec: Value, status: Value) -> InstallPlan {
    let mut p = json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "InstallPlan",
        "metadata": {"name": "install-1", "namespace": "ns",
                     "creationTimestamp": "2026-12-07T12:00:00Z"},
        "spec": {"clusterServiceVersionNames": ["a.v1"], "approval": "Automatic", "approved": false},
    });
    if by_subscription {
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "Subscription", "name": "a", "uid": "sub-uid"}]);
    }
    for (k, v) in spec.as_object().into_iter().flatten() {
        p["spec"][k] = v.clone();
    }
    if !status.is_null() {
        let mut s = json!({"catalogSources": []});
        for (k, v) in status.as_object().into_iter().flatten() {
            s[k] = v.clone();
        }
        p["status"] = s;
    }
    serde_json::from_value(p).unwrap()
}

/// A group managing `ns`, naming the ServiceAccount `sa` (found when `found`) when given.
fn group(name: &str, sa: Option<&str>, found: bool) -> OperatorGroup {
    let mut g = json!({
        "apiVersion": "operators.coreos.com/v1",
        "kind": "OperatorGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"targetNamespaces": ["ns"]},
        "status": {"namespaces": ["ns"], "lastUpdated": "2026-12-07T11:00:00Z"},
    });
    if let Some(sa) = sa {
        g["spec"]["serviceAccountName"] = json!(sa);
        if found {
            g["status"]["serviceAccountRef"] =
                json!({"kind": "ServiceAccount", "namespace": "ns", "name": sa});
        }
    }
    serde_json::from_value(g).unwrap()
}

fn decide_with(plan: &InstallPlan, groups: &[OperatorGroup], now: Timestamp) -> Next {
    let groups: Vec<&OperatorGroup> = groups.iter().collect();
    decide(&Observed {
        plan,
        groups: &groups,
        now,
    })
}

fn installed(status: &str, reason: &str, message: &str) -> Value {
    installed_condition(status, reason, message, NOW)
}

/// One row: what the plan and its groups are, what the pass does.
struct Case {
    name: &'static str,
    plan: InstallPlan,
    groups: Vec<OperatorGroup>,
    now: Timestamp,
    want: Next,
}

#[test]
fn decisions() {
    let no_group = "no operator group found that is managing this namespace";
    let cases = vec![
        Case {
            name: "made by hand a moment ago: its maker may still write its status",
            plan: plan(false, json!({}), Value::Null),
            groups: vec![],
            now: "2026-12-07T12:00:00.5Z".parse().unwrap(),
            want: Next::After(Duration::from_millis(1500)),
        },
        Case {
            name: "made by hand, no status yet: Planning, with the list the schema requires",
            plan: plan(false, json!({}), Value::Null),
            groups: vec![],
            now: now(),
            want: Next::Planned {
                phase: "Planning",
                status: json!({"phase": "Planning", "catalogSources": []}),
            },
        },
        Case {
            name: "made by hand, Manual and not approved: RequiresApproval",
            plan: plan(
                false,
                json!({"approval": "Manual"}),
                json!({"phase": "Planning"}),
            ),
            groups: vec![],
            now: now(),
            want: Next::Planned {
                phase: "RequiresApproval",
                status: json!({"phase": "RequiresApproval"}),
            },
        },
        Case {
            name: "a Subscription's plan without a phase waits for the Subscription controller",
            plan: plan(true, json!({}), Value::Null),
            groups: vec![],
            now: now(),
            want: Next::Nothing,
        },
        Case {
            name: "complete: nothing",
            plan: plan(true, json!({}), json!({"phase": "Complete"})),
            groups: vec![group("og", None, false)],
            now: now(),
            want: Next::Nothing,
        },
        Case {
            name: "no group manages the namespace: InstallCheckFailed and a retry",
            plan: plan(true, json!({}), json!({"phase": "Installing"})),
            groups: vec![],
            now: now(),
            want: Next::Unresolved {
                write: Some(json!({"conditions": [installed("False", INSTALL_CHECK_FAILED, no_group)]})),
                error: format!("attenuated service account query failed - {no_group}"),
            },
        },
        Case {
            name: "the same failure already said: only the retry",
            plan: plan(
                true,
                json!({}),
                json!({"phase": "Installing",
                       "conditions": [installed("False", INSTALL_CHECK_FAILED, no_group)]}),
            ),
            groups: vec![],
            now: now(),
            want: Next::Unresolved {
                write: None,
                error: format!("attenuated service account query failed - {no_group}"),
            },
        },
        Case {
            name: "two groups: upstream's count in the message",
            plan: plan(true, json!({}), json!({"phase": "RequiresApproval"})),
            groups: vec![group("a", None, false), group("b", None, false)],
            now: now(),
            want: Next::Unresolved {
                write: Some(json!({"conditions": [installed(
                    "False",
                    INSTALL_CHECK_FAILED,
                    "more than one operator group(s) are managing this namespace count=2",
                )]})),
                error: "attenuated service account query failed - more than one operator group(s) are managing this namespace count=2".into(),
            },
        },
        Case {
            name: "the account named but not found yet",
            plan: plan(true, json!({}), json!({"phase": "Installing"})),
            groups: vec![group("og", Some("installer"), false)],
            now: now(),
            want: Next::Unresolved {
                write: Some(json!({"conditions": [installed(
                    "False",
                    INSTALL_CHECK_FAILED,
                    "please make sure the service account exists. sa=installer operatorgroup=ns/og",
                )]})),
                error: "attenuated service account query failed - please make sure the service account exists. sa=installer operatorgroup=ns/og".into(),
            },
        },
        Case {
            name: "resolved after a failure: upstream's reset, nothing else",
            plan: plan(
                true,
                json!({}),
                json!({"phase": "Installing",
                       "conditions": [installed("False", INSTALL_CHECK_FAILED, no_group)]}),
            ),
            groups: vec![group("og", None, false)],
            now: now(),
            want: Next::Write(json!({"conditions": [installed("False", "Unknown", "")]})),
        },
        Case {
            name: "the account recorded before anything runs",
            plan: plan(true, json!({}), json!({"phase": "Installing"})),
            groups: vec![group("og", Some("installer"), true)],
            now: now(),
            want: Next::Write(json!({"attenuatedServiceAccountRef":
                {"kind": "ServiceAccount", "namespace": "ns", "name": "installer"}})),
        },
        Case {
            name: "the account already recorded: the steps run",
            plan: plan(
                true,
                json!({}),
                json!({"phase": "Installing", "attenuatedServiceAccountRef":
                    {"kind": "ServiceAccount", "namespace": "ns", "name": "installer"}}),
            ),
            groups: vec![group("og", Some("installer"), true)],
            now: now(),
            want: Next::Execute,
        },
        Case {
            name: "waiting for approval",
            plan: plan(true, json!({"approval": "Manual"}), json!({"phase": "RequiresApproval"})),
            groups: vec![group("og", None, false)],
            now: now(),
            want: Next::Nothing,
        },
        Case {
            name: "approved: Installing",
            plan: plan(
                true,
                json!({"approval": "Manual", "approved": true}),
                json!({"phase": "RequiresApproval"}),
            ),
            groups: vec![group("og", None, false)],
            now: now(),
            want: Next::Write(json!({"phase": "Installing"})),
        },
    ];
    for c in cases {
        assert_eq!(decide_with(&c.plan, &c.groups, c.now), c.want, "{}", c.name);
    }
}
