//! Whether an operator lets OLM replace it (OLM repo
//! `pkg/controller/operators/olm/operatorconditions.go` `isOperatorUpgradeable`): the
//! `Upgradeable` condition of the OperatorCondition named after the CSV being replaced, where an
//! administrator's `spec.overrides` entry wins over what the operator reports in status.

/// The `Upgradeable` condition type.
pub const UPGRADEABLE: &str = "Upgradeable";

/// One condition (`metav1.Condition`), as the gate reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Condition {
    /// `type`.
    pub type_: String,
    /// `status`.
    pub status: String,
    /// `message`.
    pub message: String,
    /// `observedGeneration`.
    pub observed_generation: i64,
}

/// The OperatorCondition of the CSV being replaced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OperatorCondition {
    /// `metadata.generation`.
    pub generation: i64,
    /// `spec.overrides`.
    pub overrides: Vec<Condition>,
    /// `status.conditions`.
    pub conditions: Vec<Condition>,
}

/// `Ok` when the replaced CSV may be replaced; else upstream's message, capitalised as
/// upstream writes it, which the new CSV shows after upstream's own
/// `operator is not upgradeable: `:
/// no OperatorCondition → yes; an `Upgradeable` override → its status decides
/// (`The operator is not upgradeable: <message>`); an `Upgradeable` status condition of an
/// older generation → no (`The operatorcondition status "Upgradeable"="<status>" is outdated`);
/// `False` → no; else yes.
pub fn upgradeable(condition: Option<&OperatorCondition>) -> Result<(), String> {
    let Some(c) = condition else {
        return Ok(());
    };
    if let Some(o) = c.overrides.iter().find(|o| o.type_ == UPGRADEABLE) {
        return if o.status == "True" {
            Ok(())
        } else {
            Err(format!("The operator is not upgradeable: {}", o.message))
        };
    }
    if let Some(s) = c.conditions.iter().find(|s| s.type_ == UPGRADEABLE) {
        if s.observed_generation != c.generation {
            return Err(format!(
                "The operatorcondition status {}={} is outdated",
                olm_goenc::quote(&s.type_),
                olm_goenc::quote(&s.status)
            ));
        }
        if s.status == "False" {
            return Err(format!("The operator is not upgradeable: {}", s.message));
        }
    }
    Ok(())
}

/// `status.conditions` mirroring `spec.conditions` (upstream's `syncOperatorConditionStatus`):
/// each spec condition whose type is missing from status, or whose status or observed
/// generation differs, is set there with `observedGeneration: generation` (its transition time
/// kept when the status is unchanged, else the spec's, else `now`); conditions only in status
/// stay. `None` when nothing changes. Conditions are JSON objects as the API carries them.
pub fn mirrored_status(
    spec: &[serde_json::Value],
    status: &[serde_json::Value],
    generation: i64,
    now: &str,
) -> Option<Vec<serde_json::Value>> {
    let mut out = status.to_vec();
    let mut changed = false;
    for cond in spec {
        let type_ = cond.get("type");
        let existing = out.iter().position(|c| c.get("type") == type_);
        if let Some(i) = existing {
            let c = &out[i];
            if c.get("status") == cond.get("status")
                && c.get("observedGeneration")
                    .and_then(serde_json::Value::as_i64)
                    == Some(generation)
            {
                continue;
            }
        }
        let mut next = cond.clone();
        next["observedGeneration"] = serde_json::json!(generation);
        let kept_time = existing
            .filter(|i| out[*i].get("status") == cond.get("status"))
            .and_then(|i| out[i].get("lastTransitionTime").cloned());
        let time = kept_time
            .or_else(|| {
                cond.get("lastTransitionTime")
                    .filter(|t| !t.is_null())
                    .cloned()
            })
            .unwrap_or_else(|| serde_json::json!(now));
        next["lastTransitionTime"] = time;
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

    fn cond(status: &str, message: &str, generation: i64) -> Condition {
        Condition {
            type_: UPGRADEABLE.into(),
            status: status.into(),
            message: message.into(),
            observed_generation: generation,
        }
    }

    /// Upstream's cases, in its words byte for byte (OLM repo
    /// `pkg/controller/operators/olm/operatorconditions.go` `isOperatorUpgradeable`:
    /// `fmt.Errorf("The operatorcondition status %q=%q is outdated", …)`, `fmt.Errorf("The
    /// operator is not upgradeable: %s", …)`).
    #[test]
    fn the_gate() {
        assert_eq!(upgradeable(None), Ok(()));
        let mut c = OperatorCondition {
            generation: 2,
            ..OperatorCondition::default()
        };
        assert_eq!(upgradeable(Some(&c)), Ok(()));
        c.conditions = vec![cond("False", "migrating data", 2)];
        assert_eq!(
            upgradeable(Some(&c)),
            Err("The operator is not upgradeable: migrating data".into())
        );
        c.conditions = vec![cond("True", "", 1)];
        assert_eq!(
            upgradeable(Some(&c)),
            Err("The operatorcondition status \"Upgradeable\"=\"True\" is outdated".into())
        );
        c.overrides = vec![cond("True", "approved by admin", 0)];
        assert_eq!(upgradeable(Some(&c)), Ok(()));
        c.overrides = vec![cond("False", "frozen", 0)];
        assert_eq!(
            upgradeable(Some(&c)),
            Err("The operator is not upgradeable: frozen".into())
        );
    }

    /// Spec conditions reach status with the generation; an unchanged one is left alone
    /// (upstream's `syncOperatorConditionStatus`).
    #[test]
    fn status_mirrors_spec() {
        use serde_json::json;
        let spec = [
            json!({"type": "Upgradeable", "status": "False", "reason": "Migrating", "message": "wait", "lastTransitionTime": "2026-01-01T00:00:00Z"}),
        ];
        let out = mirrored_status(&spec, &[], 2, "2026-02-02T00:00:00Z").unwrap_or_default();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0]["observedGeneration"], 2);
        assert_eq!(out[0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
        assert_eq!(
            mirrored_status(&spec, &out, 2, "2026-02-02T00:00:00Z"),
            None
        );
        // A new generation with the same status: written again, the transition time kept.
        let again = mirrored_status(&spec, &out, 3, "2026-02-02T00:00:00Z").unwrap_or_default();
        assert_eq!(again[0]["observedGeneration"], 3);
        assert_eq!(again[0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
        // Conditions only in status stay.
        let other = [json!({"type": "Other", "status": "True"})];
        let out = mirrored_status(&spec, &other, 1, "t").unwrap_or_default();
        assert_eq!(out.len(), 2);
    }
}
