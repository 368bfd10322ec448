//! Where an interrupted move goes on from, and what it removes and backs up (library-olm
//! `migration.go` for the InstallPlans and OperatorGroup rules, `types.go` for the backup
//! files).

use serde_json::json;

use super::*;

fn sub(marked: Option<&str>, approval: &str) -> Subscription {
    let mut s: Subscription = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "etcd", "namespace": "ops"},
        "spec": {"name": "etcd", "source": "c", "sourceNamespace": "olm",
            "installPlanApproval": approval},
        "status": {"installedCSV": "etcd.v1", "lastUpdated": "2026-01-01T00:00:00Z"},
    }))
    .expect("sub");
    if let Some(to) = marked {
        s.metadata.annotations =
            Some([(olm_k8s::MIGRATING_TO_ANNOTATION.to_owned(), to.to_owned())].into());
    }
    s
}

fn ce(name: &str, from: &str, takes_over: bool, approval: &str) -> ClusterExtension {
    let mut annotations = json!({
        crate::MIGRATED_FROM_SUBSCRIPTION: from,
        SUBSCRIPTION_BACKUP: json!({"name": "etcd", "source": "c", "sourceNamespace": "olm",
            "installPlanApproval": approval}).to_string(),
    });
    if takes_over {
        annotations[olm_k8s::MIGRATION_TAKES_OVER_ANNOTATION] = json!("ops/etcd.v1");
    }
    serde_json::from_value(json!({
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"namespace": "ops", "source": {"sourceType": "Catalog",
            "catalog": {"packageName": "etcd"}}},
    }))
    .expect("ce")
}

#[test]
fn each_interruption_point_goes_on_from_the_step_it_stopped_in() {
    let auto = "Automatic";
    type Case = (
        &'static str,
        Option<Subscription>,
        Option<ClusterExtension>,
        Result<Stage, String>,
    );
    let cases: Vec<Case> = vec![
        ("nothing done", Some(sub(None, auto)), None, Ok(Stage::Start)),
        (
            "killed after marking, before creating",
            Some(sub(Some("etcd"), auto)),
            None,
            Ok(Stage::Create),
        ),
        (
            "killed while following",
            Some(sub(Some("etcd"), auto)),
            Some(ce("etcd", "ops/etcd", true, auto)),
            Ok(Stage::Follow),
        ),
        (
            "killed after deleting the Subscription",
            None,
            Some(ce("etcd", "ops/etcd", true, auto)),
            Ok(Stage::Finish { csv: "etcd.v1".to_owned(), manual: false }),
        ),
        (
            "a manual Subscription stays pinned when finished",
            None,
            Some(ce("etcd", "ops/etcd", true, "Manual")),
            Ok(Stage::Finish { csv: "etcd.v1".to_owned(), manual: true }),
        ),
        ("finished", None, Some(ce("etcd", "ops/etcd", false, auto)), Ok(Stage::Done)),
        (
            "nothing at all",
            None,
            None,
            Err("failed to get Subscription ops/etcd: not found".to_owned()),
        ),
        (
            "an extension of that name from elsewhere",
            None,
            Some(ce("etcd", "other/etcd", true, auto)),
            Err("failed to get Subscription ops/etcd: not found".to_owned()),
        ),
        (
            "marked for another extension",
            Some(sub(Some("etcd-v1"), auto)),
            None,
            Err("Subscription ops/etcd is being moved to ClusterExtension etcd-v1: run `olm migrate etcd -n ops --ce-name etcd-v1` to finish that move, or `olm migrate rollback etcd-v1`".to_owned()),
        ),
        (
            "marked, and an unrelated extension took the name",
            Some(sub(Some("etcd"), auto)),
            Some(ce("etcd", "other/etcd", true, auto)),
            Err("ClusterExtension etcd exists but was not migrated from Subscription ops/etcd; choose another name with --ce-name".to_owned()),
        ),
    ];
    for (what, sub, ce, want) in cases {
        assert_eq!(
            stage("ops", "etcd", "etcd", sub.as_ref(), ce.as_ref()),
            want,
            "{what}"
        );
    }
}

fn plan(name: &str, csvs: &[&str], resolving: &[&str]) -> InstallPlan {
    let steps: Vec<_> = resolving
        .iter()
        .map(|r| {
            json!({"resolving": r, "status": "Present",
            "resource": {"name": "x", "kind": "ConfigMap", "group": "", "version": "v1",
                "sourceName": "c", "sourceNamespace": "olm"}})
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
        "metadata": {"name": name, "namespace": "ops",
            "managedFields": [{"manager": "olm"}]},
        "spec": {"clusterServiceVersionNames": csvs, "approval": "Automatic", "approved": true},
        "status": {"phase": "Complete", "catalogSources": [], "plan": steps},
    }))
    .expect("plan")
}

#[test]
fn the_plans_removed_are_those_naming_or_resolving_the_csv() {
    let plans = [
        plan("install-b", &["etcd.v1"], &[]),
        plan("install-a", &["other.v1"], &["etcd.v1"]),
        plan("install-c", &["other.v1"], &["other.v1"]),
    ];
    assert_eq!(plans_of("etcd.v1", &plans), ["install-a", "install-b"]);
    assert!(plans_of("nope", &plans).is_empty());
}

#[test]
fn the_operator_group_goes_only_when_no_other_subscription_needs_it() {
    let mut other = sub(None, "Automatic");
    other.metadata.name = Some("redis".to_owned());
    let etcd = sub(None, "Automatic");
    assert!(operator_group_removable(
        std::slice::from_ref(&etcd),
        &["etcd"]
    ));
    assert!(operator_group_removable(&[], &["etcd"]));
    assert!(!operator_group_removable(&[etcd, other], &["etcd"]));
    assert!(operator_group_role(
        "og",
        "olm.og.og.admin-8rdAjL0E35JMMAkOqYmoorzjpIIihfnj3DcgDU"
    ));
    assert!(!operator_group_role("og", "olm.og.og2.admin-x"));
}

#[test]
fn a_backup_holds_upstreams_files_without_the_servers_bookkeeping() {
    let s = sub(None, "Automatic");
    let p = plan("install-a", &["etcd.v1"], &[]);
    let files = backup_files(&s, None, None, &[&p]).expect("files");
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["subscription.yaml", "installplans/install-a.yaml"]);
    assert!(
        files[0].1.contains("kind: Subscription\n"),
        "{}",
        files[0].1
    );
    assert!(
        files[0].1.contains("installedCSV: etcd.v1"),
        "{}",
        files[0].1
    );
    assert!(!files[1].1.contains("managedFields"), "{}", files[1].1);
}

#[test]
fn a_rollback_unmarks_an_unfinished_move_and_recreates_a_finished_one() {
    assert_eq!(
        rollback("etcd", "ops", "etcd", None),
        Ok(Rollback::Recreate)
    );
    assert_eq!(
        rollback("etcd", "ops", "etcd", Some(&sub(Some("etcd"), "Automatic"))),
        Ok(Rollback::Unmark {
            csv: "etcd.v1".to_owned()
        })
    );
    for other in [None, Some("etcd-v1")] {
        assert_eq!(
            rollback("etcd", "ops", "etcd", Some(&sub(other, "Automatic"))),
            Err("Subscription ops/etcd exists already; `olm migrate check etcd -n ops` shows the conflict".to_owned())
        );
    }
}

#[test]
fn only_unclaimed_rbac_of_the_revisions_is_left_over() {
    let revision: olm_api::ClusterObjectSet = serde_json::from_value(json!({
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
        "metadata": {"name": "etcd-1"},
        "spec": {"lifecycleState": "Active", "revision": 1, "collisionProtection": "Prevent", "phases": [
            {"name": "rbac", "objects": [
                {"object": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": "etcd.v-abc"}}},
                {"object": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "etcd.v-abc", "namespace": "ops"}}},
                {"object": {"apiVersion": "v1", "kind": "ServiceAccount",
                    "metadata": {"name": "etcd", "namespace": "ops"}}}]},
            {"name": "crds", "objects": [
                {"object": {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": "etcds.example.com"}}}]}]},
    }))
    .expect("revision");
    let names: Vec<(String, Option<String>)> = rbac_laid_out(std::slice::from_ref(&revision))
        .into_iter()
        .map(|l| (l.kind, l.namespace))
        .collect();
    assert_eq!(
        names,
        [
            ("ClusterRole".to_owned(), None),
            ("RoleBinding".to_owned(), Some("ops".to_owned())),
        ]
    );
    let all: Vec<String> = laid_out(std::slice::from_ref(&revision))
        .into_iter()
        .map(|l| l.kind)
        .collect();
    assert_eq!(
        all,
        [
            "CustomResourceDefinition",
            "ClusterRole",
            "RoleBinding",
            "ServiceAccount"
        ]
    );
    let none = std::collections::BTreeMap::new();
    assert!(abandoned(&none, 0));
    assert!(!abandoned(&none, 1));
    let v0: std::collections::BTreeMap<String, String> =
        [("olm.owner".to_owned(), "etcd.v1".to_owned())].into();
    assert!(!abandoned(&v0, 0));
}

/// A rollback releases what the revisions held from them, and only from them: another owner's
/// reference (an OLM v0 CSV's, a user's) stays, and an object naming none of them is left as it
/// is (no write).
#[test]
fn released_owner_references_drop_only_the_revisions() {
    let owners: std::collections::BTreeSet<String> =
        ["cos-uid".to_owned(), "ce-uid".to_owned()].into();
    let cos = serde_json::json!({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
        "name": "etcd-1", "uid": "cos-uid", "controller": true, "blockOwnerDeletion": true});
    let other = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "name": "keep", "uid": "other"});
    let table: [(Vec<serde_json::Value>, Option<Vec<serde_json::Value>>); 4] = [
        (vec![], None),
        (vec![other.clone()], None),
        (vec![cos.clone()], Some(vec![])),
        (vec![cos, other.clone()], Some(vec![other])),
    ];
    for (refs, want) in table {
        assert_eq!(released_owner_references(&refs, &owners), want, "{refs:?}");
    }
}
