//! The CSV owner references an InstallPlan step's namespaced object gets (upstream's
//! `ExecutePlan`: `ownerutil.AddNonBlockingOwner` for the CSV the step resolves, then
//! `getUpdatedOwnerReferences`). A bundle's manifests, and plans tools write by hand, name
//! their CSV owners without a uid, since it does not exist when the plan is made; the uid is
//! filled in from the cluster when the step runs, and a step naming a CSV that does not exist
//! fails (and is retried) until it does.

use serde_json::{Value, json};

const CSV_KIND: &str = "ClusterServiceVersion";

fn is_csv(reference: &Value) -> bool {
    reference.get("kind").and_then(Value::as_str) == Some(CSV_KIND)
}

fn name(reference: &Value) -> &str {
    reference.get("name").and_then(Value::as_str).unwrap_or("")
}

/// Adds a non-blocking, non-controller owner reference to the CSV `resolving` (when not
/// empty) unless one to it without a uid is already there, as upstream's `AddNonBlockingOwner`
/// does for an owner it has not looked up; returns the names of every CSV the object's owner
/// references now name, each once, in order, for the caller to look up.
pub fn add_resolving_owner(object: &mut Value, resolving: &str) -> Vec<String> {
    if !object["metadata"]["ownerReferences"].is_array() {
        object["metadata"]["ownerReferences"] = json!([]);
    }
    let Some(refs) = object["metadata"]["ownerReferences"].as_array_mut() else {
        return Vec::new();
    };
    if !resolving.is_empty()
        && !refs.iter().any(|r| {
            is_csv(r)
                && name(r) == resolving
                && r.get("uid")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
        })
    {
        refs.push(json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": CSV_KIND,
            "name": resolving,
            "uid": "",
            "blockOwnerDeletion": false,
            "controller": false,
        }));
    }
    let mut names: Vec<String> = Vec::new();
    for r in refs.iter().filter(|r| is_csv(r)) {
        if !names.iter().any(|n| n == name(r)) {
            names.push(name(r).to_owned());
        }
    }
    if refs.is_empty()
        && let Some(metadata) = object["metadata"].as_object_mut()
    {
        metadata.remove("ownerReferences");
    }
    names
}

/// Sets every CSV owner reference's uid to the uid `uid_of` gives for its name (upstream
/// replaces the uid even when one was given), then drops references made identical by that.
pub fn set_csv_uids(object: &mut Value, uid_of: impl Fn(&str) -> String) {
    let Some(refs) = object["metadata"]["ownerReferences"].as_array_mut() else {
        return;
    };
    for r in refs.iter_mut().filter(|r| is_csv(r)) {
        let uid = uid_of(name(r));
        r["uid"] = json!(uid);
    }
    let mut seen: Vec<Value> = Vec::new();
    refs.retain(|r| {
        if seen.contains(r) {
            false
        } else {
            seen.push(r.clone());
            true
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `installplan_e2e_test.go`: a ConfigMap step naming a CSV owner without a uid, and a
    /// ServiceAccount step moving to a new CSV; upstream's `AddNonBlockingOwner` semantics.
    #[test]
    fn owners_named_by_the_manifest_and_the_step_are_looked_up() {
        let mut object = json!({"metadata": {"name": "test-owned", "ownerReferences": [
            {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", "name": "test-owner", "uid": ""},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "u-cm"},
        ]}});
        assert_eq!(add_resolving_owner(&mut object, ""), vec!["test-owner"]);
        assert_eq!(
            add_resolving_owner(&mut object, "a.v1"),
            vec!["test-owner", "a.v1"]
        );
        // Asked again (a retried step): nothing added twice.
        assert_eq!(
            add_resolving_owner(&mut object, "a.v1"),
            vec!["test-owner", "a.v1"]
        );
        set_csv_uids(&mut object, |n| format!("uid-{n}"));
        assert_eq!(
            object["metadata"]["ownerReferences"],
            json!([
                {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", "name": "test-owner", "uid": "uid-test-owner"},
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "other", "uid": "u-cm"},
                {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", "name": "a.v1", "uid": "uid-a.v1",
                 "blockOwnerDeletion": false, "controller": false},
            ])
        );
    }

    #[test]
    fn an_object_without_owners_and_no_resolving_csv_stays_without() {
        let mut object = json!({"metadata": {"name": "x"}});
        assert!(add_resolving_owner(&mut object, "").is_empty());
        assert_eq!(object, json!({"metadata": {"name": "x"}}));
    }
}
