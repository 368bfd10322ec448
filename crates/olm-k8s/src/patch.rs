//! JSON merge patches (RFC 7386) computed from what was read and what is wanted, so a
//! controller can write only the fields it changed without the read's `resourceVersion`: a
//! stale cache then costs no conflict, and fields written by others in the meantime survive.

use serde_json::{Map, Value};

/// The merge patch that turns `from` into `to`: changed members with their new values (objects
/// compared member by member), removed members as `null`. `None` when nothing differs.
///
/// A `null` inside `to` cannot be expressed (a merge patch reads it as "remove"); Kubernetes
/// objects drop such members anyway.
pub fn merge_patch(from: &Value, to: &Value) -> Option<Value> {
    if from == to {
        return None;
    }
    let (Value::Object(from), Value::Object(to)) = (from, to) else {
        return Some(to.clone());
    };
    let mut patch = Map::new();
    for (k, v) in to {
        match from.get(k) {
            Some(old) if old == v => {}
            Some(old) => {
                if let Some(p) = merge_patch(old, v) {
                    patch.insert(k.clone(), p);
                }
            }
            None => {
                patch.insert(k.clone(), v.clone());
            }
        }
    }
    for k in from.keys().filter(|k| !to.contains_key(*k)) {
        patch.insert(k.clone(), Value::Null);
    }
    Some(Value::Object(patch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_differences_are_patched() {
        assert_eq!(merge_patch(&json!({"a": 1}), &json!({"a": 1})), None);
        assert_eq!(
            merge_patch(
                &json!({"a": 1, "b": {"c": 1, "d": 2}, "gone": "x", "list": [1]}),
                &json!({"a": 1, "b": {"c": 1, "d": 3}, "new": true, "list": [1, 2]})
            ),
            Some(json!({"b": {"d": 3}, "gone": null, "new": true, "list": [1, 2]}))
        );
        assert_eq!(merge_patch(&json!({"a": 1}), &json!("s")), Some(json!("s")));
    }

    /// Applying the patch to `from` (RFC 7386's algorithm) gives `to`.
    #[test]
    fn the_patch_round_trips() {
        fn apply(target: &mut Value, patch: &Value) {
            let Value::Object(p) = patch else {
                *target = patch.clone();
                return;
            };
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let Value::Object(t) = target else { return };
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    apply(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        let from = json!({"x": {"y": {"z": 1, "w": 2}}, "r": "reason", "m": "message"});
        let to = json!({"x": {"y": {"z": 5}}, "c": {"address": "a:1"}});
        let mut applied = from.clone();
        apply(&mut applied, &merge_patch(&from, &to).unwrap());
        assert_eq!(applied, to);
    }
}
