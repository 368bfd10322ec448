//! Whether an InstallPlan may replace a CRD that exists (OLM repo
//! `pkg/controller/operators/catalog/step.go` and `operator.go` `validateV1CRDCompatibility`,
//! `validateExistingCRs`): every custom resource stored under a version that both CRDs serve
//! must still validate against the new CRD's schema for that version — otherwise the upgrade
//! would leave objects the API server no longer accepts on update.
//!
//! The shell lists the custom resources (paged) and hands them here; the checks and the texts
//! are upstream's. A new CRD with a `Webhook` conversion strategy only warns (its webhook may
//! convert the objects once the operator runs).

use serde_json::Value;

/// A version whose existing objects must validate, with the new CRD's schema for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Validation {
    /// The version name (`v1alpha1`).
    pub version: String,
    /// The new CRD's `schema.openAPIV3Schema` for it (`null` when it has none).
    pub schema: Value,
}

/// The versions served by both `old` and `new` (CRDs as JSON), with `new`'s schemas, in `new`'s
/// order (upstream iterates a Go map; the order only decides which failure is reported first).
pub fn validations(old: &Value, new: &Value) -> Vec<Validation> {
    let served = |crd: &Value| -> Vec<(String, Value)> {
        crd.pointer("/spec/versions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|v| v["served"] == true)
            .filter_map(|v| {
                let name = v["name"].as_str()?;
                let schema = v
                    .pointer("/schema/openAPIV3Schema")
                    .cloned()
                    .unwrap_or(Value::Null);
                Some((name.to_owned(), schema))
            })
            .collect()
    };
    let before: Vec<String> = served(old).into_iter().map(|(n, _)| n).collect();
    let mut out: Vec<Validation> = Vec::new();
    for (version, schema) in served(new) {
        if before.contains(&version) && !out.iter().any(|v| v.version == version) {
            out.push(Validation { version, schema });
        }
    }
    out
}

/// A custom resource the new schema no longer accepts, shown in upstream's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("error validating {gvk} {}: updated validation is too restrictive: {errors}", olm_goenc::quote(.object))]
pub struct TooRestrictive {
    /// apimachinery's `GroupVersionKind.String()` of the object: `group/version, Kind=kind`.
    pub gvk: String,
    /// `namespace/name`, or `name` for a cluster-scoped object.
    pub object: String,
    /// The schema's errors, aggregated as apimachinery aggregates them.
    pub errors: String,
}

/// Existing custom resources stop an update of their CRD, in upstream's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("error validating existing CRs against new CRD's schema for {}: {failure}", olm_goenc::quote(.crd))]
pub struct ExistingObjectsInvalid {
    /// The CRD's name.
    pub crd: String,
    /// The first object that fails.
    pub failure: TooRestrictive,
}

/// Checks `objects` (custom resources as JSON) against `schema`.
///
/// # Errors
///
/// The first that fails.
pub fn check_existing(schema: &Value, objects: &[Value]) -> Result<(), TooRestrictive> {
    if schema.is_null() {
        return Ok(());
    }
    let mut validator = olm_k8s::schema::SchemaValidator::new(schema);
    for object in objects {
        let errors = validator.validate(object);
        let Some(text) = olm_k8s::schema::aggregate(&errors) else {
            continue;
        };
        let meta = &object["metadata"];
        let name = meta["name"].as_str().unwrap_or_default();
        let namespaced = match meta["namespace"].as_str().filter(|n| !n.is_empty()) {
            Some(ns) => format!("{ns}/{name}"),
            None => name.to_owned(),
        };
        return Err(TooRestrictive {
            gvk: gvk_text(object),
            object: namespaced,
            errors: text,
        });
    }
    Ok(())
}

/// apimachinery's `GroupVersionKind.String()` of an object: `group/version, Kind=kind`.
fn gvk_text(object: &Value) -> String {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = object["kind"].as_str().unwrap_or_default();
    format!("{group}/{version}, Kind={kind}")
}

/// What becomes of a failed check of the CRD `name` (`new` as JSON): an error that stops the
/// step (`Err`), or — when `new` converts with a webhook — the Warning event's text (`Ok`),
/// after which the update goes on.
///
/// # Errors
///
/// The update is refused: the CRD does not convert with a webhook.
pub fn on_failure(
    name: &str,
    new: &Value,
    failure: TooRestrictive,
) -> Result<String, ExistingObjectsInvalid> {
    if new.pointer("/spec/conversion/strategy") != Some(&Value::from("Webhook")) {
        return Err(ExistingObjectsInvalid {
            crd: name.to_owned(),
            failure,
        });
    }
    Ok(format!(
        "Validation of existing CRs against the new CRD's schema failed, but a webhook conversion strategy was specified in the new CRD.\nThe new webhook will only start after the bundle is upgraded, so we must assume that it will successfully convert existing CRs to a format that would have passed validation.\n\nCRD: {}\nValidation Error: {failure}\n",
        olm_goenc::quote(name)
    ))
}

/// The reason of the Warning event [`on_failure`]'s text goes in.
pub const CRD_VALIDATION_EVENT_REASON: &str = "CRDValidation";

/// Why a step may not replace `current`, the CRD named `name` on the cluster, with `new` now,
/// before any object is checked:
///
/// - `current` is being deleted: replacing it would report the step done while the API server
///   goes on to delete the CRD and every object of it. The step waits for it to go, then
///   creates it (upstream updates it and the plan completes on a CRD about to vanish; that is
///   how an operator installed right after its CRD was deleted loses its API);
/// - `new` no longer serves a version `current` lists in `status.storedVersions` (upstream's
///   `risk of data loss` refusal, same words).
pub fn update_refusal(name: &str, current: &Value, new: &Value) -> Option<String> {
    if current
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return Some(format!(
            "CustomResourceDefinition {} is being deleted; waiting for it to go before installing it again",
            olm_goenc::quote(name)
        ));
    }
    let served: Vec<&str> = new
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .collect();
    current
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find(|v| !served.contains(v))
        .map(|lost| {
            format!(
                "risk of data loss updating \"{name}\": new CRD removes version {lost} that is listed as a stored version on the existing CRD"
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn update_refusals() {
        let new = json!({"spec": {"versions": [{"name": "v1"}, {"name": "v2"}]}});
        let stored = |versions: Value| json!({"status": {"storedVersions": versions}});
        let deleting = json!({"metadata": {"deletionTimestamp": "2026-12-07T10:00:00Z"}, "status": {"storedVersions": ["v1"]}});
        // (current, refusal): upstream's data-loss check (step.go), and a CRD being deleted.
        let cases = [
            (stored(json!(["v1"])), None),
            (stored(json!(["v1", "v2"])), None),
            (json!({}), None),
            (
                stored(json!(["v1", "v1beta1"])),
                Some(
                    "risk of data loss updating \"a.b.c\": new CRD removes version v1beta1 that is listed as a stored version on the existing CRD",
                ),
            ),
            (
                deleting,
                Some(
                    "CustomResourceDefinition \"a.b.c\" is being deleted; waiting for it to go before installing it again",
                ),
            ),
        ];
        for (current, want) in cases {
            assert_eq!(
                update_refusal("a.b.c", &current, &new).as_deref(),
                want,
                "{current}"
            );
        }
    }

    fn crd(versions: Value, conversion: Option<&str>) -> Value {
        let mut c =
            json!({"metadata": {"name": "testcrds.cluster.com"}, "spec": {"versions": versions}});
        if let Some(s) = conversion {
            c["spec"]["conversion"] = json!({"strategy": s});
        }
        c
    }

    fn scalar_schema(min: i64) -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"scalar": {"type": "number", "minimum": min}}}}})
    }

    #[test]
    fn only_versions_served_by_both_are_checked() {
        let old = crd(
            json!([{"name": "v1alpha1", "served": true}, {"name": "v1alpha2", "served": false},
                   {"name": "v1", "served": true}]),
            None,
        );
        let new = crd(
            json!([{"name": "v1alpha1", "served": true, "schema": {"openAPIV3Schema": scalar_schema(3)}},
                   {"name": "v1alpha2", "served": true}, {"name": "v1", "served": false},
                   {"name": "v2", "served": true}]),
            None,
        );
        let v = validations(&old, &new);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].version, "v1alpha1");
        assert_eq!(v[0].schema, scalar_schema(3));
    }

    /// Upstream's `TestValidateV1CRDCompatibility` (`operator_test.go`): a CR with
    /// `spec.scalar: 2` against a new minimum of 3.
    #[test]
    fn a_cr_the_new_schema_refuses_is_named_with_the_reason() {
        let cr = json!({"apiVersion": "cluster.com/v1alpha1", "kind": "testcrd",
            "metadata": {"name": "my-cr-1", "namespace": ""}, "spec": {"scalar": 2}});
        assert_eq!(
            check_existing(&scalar_schema(3), std::slice::from_ref(&cr)).map_err(|e| e.to_string()),
            Err("error validating cluster.com/v1alpha1, Kind=testcrd \"my-cr-1\": updated validation is too restrictive: [].spec.scalar: Invalid value: 2: spec.scalar in body should be greater than or equal to 3".to_owned())
        );
        assert_eq!(
            check_existing(&scalar_schema(2), std::slice::from_ref(&cr)),
            Ok(())
        );
        let mut namespaced = cr;
        namespaced["metadata"]["namespace"] = json!("ns");
        assert!(
            check_existing(&scalar_schema(3), &[namespaced])
                .unwrap_err()
                .to_string()
                .contains("Kind=testcrd \"ns/my-cr-1\"")
        );
        assert_eq!(check_existing(&Value::Null, &[json!({"spec": {}})]), Ok(()));
    }

    #[test]
    fn a_webhook_conversion_turns_the_failure_into_a_warning() {
        let failure = TooRestrictive {
            gvk: "cluster.com/v1alpha1, Kind=testcrd".into(),
            object: "x".into(),
            errors: "bad".into(),
        };
        let said = "error validating cluster.com/v1alpha1, Kind=testcrd \"x\": updated validation is too restrictive: bad";
        assert_eq!(
            on_failure(
                "testcrds.cluster.com",
                &crd(json!([]), None),
                failure.clone()
            )
            .map_err(|e| e.to_string()),
            Err(format!(
                "error validating existing CRs against new CRD's schema for \"testcrds.cluster.com\": {said}"
            ))
        );
        let warning = on_failure(
            "testcrds.cluster.com",
            &crd(json!([]), Some("Webhook")),
            failure,
        )
        .unwrap();
        assert!(warning.starts_with("Validation of existing CRs against the new CRD's schema failed, but a webhook conversion strategy was specified in the new CRD.\n"));
        assert!(warning.ends_with(&format!(
            "CRD: \"testcrds.cluster.com\"\nValidation Error: {said}\n"
        )));
    }
}
