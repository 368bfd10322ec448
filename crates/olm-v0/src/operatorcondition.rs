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

/// `Ok` when the replaced CSV may be replaced; else upstream's message, which the new CSV
/// shows as `operator is not upgradeable: <message>`:
/// no OperatorCondition → yes; an `Upgradeable` override → its status decides
/// (`the operator is not upgradeable: <message>`); an `Upgradeable` status condition of an
/// older generation → no (`the operatorcondition status "Upgradeable"="<status>" is outdated`);
/// `False` → no; else yes.
pub fn upgradeable(condition: Option<&OperatorCondition>) -> Result<(), String> {
    let Some(c) = condition else {
        return Ok(());
    };
    if let Some(o) = c.overrides.iter().find(|o| o.type_ == UPGRADEABLE) {
        return if o.status == "True" {
            Ok(())
        } else {
            Err(format!("the operator is not upgradeable: {}", o.message))
        };
    }
    if let Some(s) = c.conditions.iter().find(|s| s.type_ == UPGRADEABLE) {
        if s.observed_generation != c.generation {
            return Err(format!(
                "the operatorcondition status {}={} is outdated",
                olm_goenc::quote(&s.type_),
                olm_goenc::quote(&s.status)
            ));
        }
        if s.status == "False" {
            return Err(format!("the operator is not upgradeable: {}", s.message));
        }
    }
    Ok(())
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

    /// The cases of olmv0.md §2.13 (upstream `isOperatorUpgradeable`).
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
            Err("the operator is not upgradeable: migrating data".into())
        );
        c.conditions = vec![cond("True", "", 1)];
        assert_eq!(
            upgradeable(Some(&c)),
            Err("the operatorcondition status \"Upgradeable\"=\"True\" is outdated".into())
        );
        c.overrides = vec![cond("True", "approved by admin", 0)];
        assert_eq!(upgradeable(Some(&c)), Ok(()));
        c.overrides = vec![cond("False", "frozen", 0)];
        assert_eq!(
            upgradeable(Some(&c)),
            Err("the operator is not upgradeable: frozen".into())
        );
    }
}
