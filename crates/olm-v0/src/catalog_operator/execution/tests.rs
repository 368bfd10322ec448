//! The outcomes of catalog-operator's `ExecutePlan` as its e2e suite and unit tests see them
//! (`installplan_e2e_test.go`: "the InstallPlan contains invalid data", "retrying execution due
//! to error", `Installed=False/InstallComponentFailed` after the retry timeout), plus olm's
//! refusal of objects OLM v1 holds.

use super::*;

const NOW: &str = "2026-12-07T07:00:00Z";

fn step(status: StepStatus) -> Step {
    Step {
        status,
        ..Step::default()
    }
}

fn pass<'a>(steps: &'a [Step], started: &'a str) -> Pass<'a> {
    Pass {
        steps,
        started,
        now: NOW.parse().unwrap(),
        unsupported: false,
        held: None,
        failure: None,
    }
}

fn failure(message: &str, forbidden: bool, refused: bool) -> Option<StepFailure> {
    Some(StepFailure {
        message: message.into(),
        forbidden,
        refused,
    })
}

fn failed_condition(message: &str) -> Value {
    json!([{"type": "Installed", "status": "False", "reason": "InstallComponentFailed",
        "message": message, "lastUpdateTime": NOW, "lastTransitionTime": NOW}])
}

#[test]
fn a_pass_ends_as_upstreams_execute_plan_does() {
    let created = [step(StepStatus::Created)];
    let waiting = [step(StepStatus::Created), step(StepStatus::WaitingForApi)];
    let just = "2026-12-07T06:59:30Z";
    let long_ago = "2026-12-07T06:58:00Z";
    let plan = |steps: &[Step]| steps.iter().map(Step::to_json).collect::<Vec<_>>();

    let first = conclude(&pass(&created, ""));
    assert_eq!(first.ended, Ended::Complete);
    assert_eq!(first.status["startTime"], NOW);
    assert_eq!(first.status["phase"], "Complete");
    assert_eq!(first.status["message"], Value::Null);
    assert_eq!(
        first.status["conditions"],
        json!([{"type": "Installed", "status": "True", "lastUpdateTime": NOW, "lastTransitionTime": NOW}])
    );
    assert_eq!(first.status["plan"], json!(plan(&created)));

    let c = conclude(&pass(&waiting, just));
    assert_eq!(c.ended, Ended::Again, "a CRD not yet established");
    assert_eq!(
        c.status,
        json!({"plan": plan(&waiting)}),
        "no startTime once written"
    );

    let c = conclude(&Pass {
        unsupported: true,
        ..pass(&created, just)
    });
    assert_eq!(c.ended, Ended::Failed);
    assert_eq!(c.status["message"], INVALID_DATA);
    assert_eq!(c.status["conditions"], failed_condition(INVALID_DATA));

    let c = conclude(&Pass {
        failure: failure("error creating ConfigMap x: boom", false, false),
        ..pass(&created, just)
    });
    assert_eq!(c.ended, Ended::Again, "retried within the timeout");
    assert_eq!(
        c.status["message"],
        "retrying execution due to error: error creating ConfigMap x: boom"
    );
    assert_eq!(c.status.get("phase"), None);

    let c = conclude(&Pass {
        failure: failure("error creating ConfigMap x: boom", false, false),
        ..pass(&created, long_ago)
    });
    assert_eq!(c.ended, Ended::Failed, "past the timeout");
    assert_eq!(c.status["phase"], "Failed");
    assert_eq!(c.status.get("message"), None);
    assert_eq!(
        c.status["conditions"],
        failed_condition("error creating ConfigMap x: boom")
    );

    let c = conclude(&Pass {
        failure: failure("forbidden", true, false),
        ..pass(&created, long_ago)
    });
    assert_eq!(
        c.ended,
        Ended::Again,
        "Forbidden is retried past the timeout"
    );

    for (held, failure) in [
        (Some("CRD x belongs to ClusterExtension y".to_owned()), None),
        (
            None,
            failure("CRD x belongs to ClusterExtension y", false, true),
        ),
    ] {
        let c = conclude(&Pass {
            held,
            failure,
            ..pass(&created, just)
        });
        assert_eq!(c.ended, Ended::Refused, "OLM v1's objects: failed at once");
        assert_eq!(c.status["message"], "CRD x belongs to ClusterExtension y");
        assert_eq!(
            c.status["conditions"],
            failed_condition("CRD x belongs to ClusterExtension y")
        );
    }
}

#[test]
fn a_service_keeps_the_cluster_ips_it_was_given() {
    let current = json!({"spec": {"clusterIP": "10.96.0.7", "clusterIPs": ["10.96.0.7"], "ports": [{"port": 80}]}});
    // (the plan's object, what is written)
    let cases = [
        (
            json!({"spec": {"ports": [{"port": 8080}]}}),
            json!({"spec": {"ports": [{"port": 8080}], "clusterIP": "10.96.0.7", "clusterIPs": ["10.96.0.7"]}}),
        ),
        (
            json!({"spec": {"clusterIP": "None", "ports": []}}),
            json!({"spec": {"clusterIP": "None", "ports": []}}),
        ),
        (
            json!({"spec": {"clusterIP": null}}),
            json!({"spec": {"clusterIP": "10.96.0.7", "clusterIPs": ["10.96.0.7"]}}),
        ),
        (json!({}), json!({})),
    ];
    for (mut new, want) in cases {
        keep_cluster_ips(&mut new, &current);
        assert_eq!(new, want);
    }
}

#[test]
fn a_step_object_is_shaped_as_upstream_writes_it() {
    // (kind, namespaced, object, what is written)
    let cases = [
        (
            "ConfigMap",
            true,
            json!({"metadata": {"name": "c"}}),
            json!({"metadata": {"name": "c", "namespace": "ops", "labels": {"olm.managed": "true"}}}),
        ),
        (
            "ClusterRole",
            false,
            json!({"metadata": {"name": "r", "labels": {"app": "x"}}}),
            json!({"metadata": {"name": "r", "labels": {"app": "x", "olm.managed": "true",
                "olm.owner": "op.v1", "olm.owner.kind": "ClusterServiceVersion", "olm.owner.namespace": "ops"}}}),
        ),
        (
            "CustomResourceDefinition",
            false,
            json!({"metadata": {"name": "a.b", "labels": null}}),
            json!({"metadata": {"name": "a.b", "labels": {"olm.managed": "true"}}}),
        ),
        (
            "Subscription",
            true,
            json!({"metadata": {"name": "dep"}}),
            json!({"metadata": {"name": "dep", "namespace": "ops", "labels": {"olm.managed": "true"},
                "annotations": {"olm.generated-by": "install-abc"}}}),
        ),
        ("ConfigMap", true, json!({}), json!({})),
    ];
    for (kind, namespaced, mut object, want) in cases {
        shape(&mut object, kind, namespaced, "ops", "op.v1", "install-abc");
        assert_eq!(object, want, "{kind}");
    }
}
