//! Whether an operator lets OLM replace it (OLM repo
//! `pkg/controller/operators/olm/operatorconditions.go` `isOperatorUpgradeable`): the
//! `Upgradeable` condition of the OperatorCondition named after the CSV being replaced, where an
//! administrator's `spec.overrides` entry wins over what the operator reports in status.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use olm_v0_api::v2::OperatorCondition;

/// The `Upgradeable` condition type.
pub const UPGRADEABLE: &str = "Upgradeable";

/// Why an operator may not be replaced now. Each shows as upstream's message, capitalised as
/// upstream writes it, which the new CSV shows after upstream's own `operator is not
/// upgradeable: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotUpgradeable {
    /// An administrator's `Upgradeable` override, or the operator's own condition, is not
    /// `True`; the message is theirs.
    #[error("The operator is not upgradeable: {0}")]
    Said(String),
    /// The operator's `Upgradeable` condition was written for an older generation.
    #[error("The operatorcondition status {}={} is outdated", olm_goenc::quote(.type_), olm_goenc::quote(.status))]
    Outdated {
        /// The condition's type.
        type_: String,
        /// Its status.
        status: String,
    },
}

/// `Ok` when the replaced CSV may be replaced, else why not:
/// no OperatorCondition → yes; an `Upgradeable` override → its status decides
/// (`The operator is not upgradeable: <message>`); an `Upgradeable` status condition of an
/// older generation → no (`The operatorcondition status "Upgradeable"="<status>" is outdated`);
/// `False` → no; else yes.
pub fn upgradeable(condition: Option<&OperatorCondition>) -> Result<(), NotUpgradeable> {
    let Some(c) = condition else {
        return Ok(());
    };
    if let Some(o) = c.spec.overrides.iter().find(|o| o.type_ == UPGRADEABLE) {
        return if o.status == "True" {
            Ok(())
        } else {
            Err(NotUpgradeable::Said(o.message.clone()))
        };
    }
    let generation = c.metadata.generation.unwrap_or_default();
    let reported = c
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    if let Some(s) = reported.iter().find(|s| s.type_ == UPGRADEABLE) {
        if s.observed_generation.unwrap_or_default() != generation {
            return Err(NotUpgradeable::Outdated {
                type_: s.type_.clone(),
                status: s.status.clone(),
            });
        }
        if s.status == "False" {
            return Err(NotUpgradeable::Said(s.message.clone()));
        }
    }
    Ok(())
}

/// `status.conditions` mirroring `spec.conditions` (upstream's `syncOperatorConditionStatus`):
/// each spec condition whose type is missing from status, or whose status or observed
/// generation differs, is set there with `observedGeneration: generation` (its transition time
/// kept when the status is unchanged, else the spec's); conditions only in status stay. `None`
/// when nothing changes.
pub fn mirrored_status(
    spec: &[Condition],
    status: &[Condition],
    generation: i64,
) -> Option<Vec<Condition>> {
    let mut out = status.to_vec();
    let mut changed = false;
    for cond in spec {
        let existing = out.iter().position(|c| c.type_ == cond.type_);
        if let Some(i) = existing
            && out[i].status == cond.status
            && out[i].observed_generation == Some(generation)
        {
            continue;
        }
        let time: Time = existing
            .filter(|i| out[*i].status == cond.status)
            .map_or_else(
                || cond.last_transition_time.clone(),
                |i| out[i].last_transition_time.clone(),
            );
        let next = Condition {
            observed_generation: Some(generation),
            last_transition_time: time,
            ..cond.clone()
        };
        match existing {
            Some(i) => out[i] = next,
            None => out.push(next),
        }
        changed = true;
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with(overrides: serde_json::Value, conditions: serde_json::Value) -> OperatorCondition {
        serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v2",
            "kind": "OperatorCondition",
            "metadata": {"name": "etcd.v1", "namespace": "ns", "generation": 2},
            "spec": {"overrides": overrides},
            "status": {"conditions": conditions},
        }))
        .unwrap_or_else(|e| panic!("a test OperatorCondition: {e}"))
    }

    fn cond(status: &str, message: &str, generation: i64) -> serde_json::Value {
        json!({"type": UPGRADEABLE, "status": status, "reason": "R", "message": message,
            "observedGeneration": generation, "lastTransitionTime": "2026-01-01T00:00:00Z"})
    }

    /// Upstream's cases, in its words byte for byte (OLM repo
    /// `pkg/controller/operators/olm/operatorconditions.go` `isOperatorUpgradeable`:
    /// `fmt.Errorf("The operatorcondition status %q=%q is outdated", …)`, `fmt.Errorf("The
    /// operator is not upgradeable: %s", …)`).
    #[test]
    fn the_gate() {
        assert_eq!(upgradeable(None), Ok(()));
        assert_eq!(upgradeable(Some(&with(json!([]), json!([])))), Ok(()));
        let cases = [
            (
                json!([]),
                json!([cond("False", "migrating data", 2)]),
                Err("The operator is not upgradeable: migrating data"),
            ),
            (
                json!([]),
                json!([cond("True", "", 1)]),
                Err("The operatorcondition status \"Upgradeable\"=\"True\" is outdated"),
            ),
            (
                json!([cond("True", "approved by admin", 0)]),
                json!([cond("True", "", 1)]),
                Ok(()),
            ),
            (
                json!([cond("False", "frozen", 0)]),
                json!([]),
                Err("The operator is not upgradeable: frozen"),
            ),
        ];
        for (overrides, conditions, want) in cases {
            let c = with(overrides, conditions);
            assert_eq!(
                upgradeable(Some(&c)).map_err(|e| e.to_string()),
                want.map_err(str::to_owned)
            );
        }
    }

    /// Spec conditions reach status with the generation; an unchanged one is left alone
    /// (upstream's `syncOperatorConditionStatus`).
    #[test]
    fn status_mirrors_spec() {
        let parse = |v: serde_json::Value| -> Vec<Condition> {
            serde_json::from_value(v).unwrap_or_else(|e| panic!("test conditions: {e}"))
        };
        let spec = parse(
            json!([{"type": "Upgradeable", "status": "False", "reason": "Migrating", "message": "wait", "lastTransitionTime": "2026-01-01T00:00:00Z"}]),
        );
        let out = mirrored_status(&spec, &[], 2).unwrap_or_default();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].observed_generation, Some(2));
        assert_eq!(out[0].last_transition_time, spec[0].last_transition_time);
        assert_eq!(mirrored_status(&spec, &out, 2), None);
        // A new generation with the same status: written again, the transition time kept.
        let mut earlier = out.clone();
        earlier[0].last_transition_time = parse(json!([{"type": "x", "status": "x", "reason": "x", "message": "", "lastTransitionTime": "2025-06-01T00:00:00Z"}]))[0].last_transition_time.clone();
        let again = mirrored_status(&spec, &earlier, 3).unwrap_or_default();
        assert_eq!(again[0].observed_generation, Some(3));
        assert_eq!(
            again[0].last_transition_time,
            earlier[0].last_transition_time
        );
        // Conditions only in status stay.
        let other = parse(
            json!([{"type": "Other", "status": "True", "reason": "R", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]),
        );
        let out = mirrored_status(&spec, &other, 1).unwrap_or_default();
        assert_eq!(out.len(), 2);
    }
}
