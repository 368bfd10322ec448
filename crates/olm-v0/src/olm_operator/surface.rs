//! The APIs a CSV provides and requires (OLM repo `pkg/controller/operators/olm/labeler.go`,
//! `apiSurfaceOfCSV`), and the `olm.api.<hash>` labels olm-operator puts on the CSV so that a
//! CRD event finds the CSVs that provide or require it.

use std::collections::BTreeMap;

use crate::olm_operator::apis::{ApiKey, ApiSet};

/// Prefix of the CSV's API labels.
pub const API_LABEL_PREFIX: &str = "olm.api.";

/// An owned or required CRD of a CSV (`spec.customresourcedefinitions.owned|required[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrdRef<'a> {
    /// `name`: `<plural>.<group>`.
    pub name: &'a str,
    /// `version`.
    pub version: &'a str,
    /// `kind`.
    pub kind: &'a str,
}

/// An owned or required APIService of a CSV (`spec.apiservicedefinitions.owned|required[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiServiceRef<'a> {
    /// `name`: the plural.
    pub name: &'a str,
    /// `group`.
    pub group: &'a str,
    /// `version`.
    pub version: &'a str,
    /// `kind`.
    pub kind: &'a str,
}

/// A CSV's provided and required APIs, with plurals.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Surface {
    /// Owned CRDs and APIServices.
    pub provided: ApiSet,
    /// Required CRDs and APIServices.
    pub required: ApiSet,
}

fn crd_key(c: &CrdRef<'_>) -> Result<ApiKey, String> {
    match c.name.split_once('.') {
        Some((plural, group)) => Ok(ApiKey {
            group: group.to_owned(),
            version: c.version.to_owned(),
            kind: c.kind.to_owned(),
            plural: plural.to_owned(),
        }),
        None => Err(format!("error parsing crd name: {}", c.name)),
    }
}

fn apiservice_key(a: &ApiServiceRef<'_>) -> ApiKey {
    ApiKey {
        group: a.group.to_owned(),
        version: a.version.to_owned(),
        kind: a.kind.to_owned(),
        plural: a.name.to_owned(),
    }
}

/// The surface of a CSV; a CRD name without a dot is upstream's `error parsing crd name: <name>`
/// (the CSV is then left as it is until it is fixed).
pub fn surface(
    owned_crds: &[CrdRef<'_>],
    owned_apiservices: &[ApiServiceRef<'_>],
    required_crds: &[CrdRef<'_>],
    required_apiservices: &[ApiServiceRef<'_>],
) -> Result<Surface, String> {
    let provided = owned_crds
        .iter()
        .map(crd_key)
        .chain(owned_apiservices.iter().map(|a| Ok(apiservice_key(a))))
        .collect::<Result<ApiSet, String>>()?;
    let required = required_crds
        .iter()
        .map(crd_key)
        .chain(required_apiservices.iter().map(|a| Ok(apiservice_key(a))))
        .collect::<Result<ApiSet, String>>()?;
    Ok(Surface { provided, required })
}

/// FNV-1a (64-bit) of `<Kind>.<version>.<group>` in lowercase hex (upstream's
/// `APIKeyToGVKHash`), the hash in API labels and aggregation labels.
pub fn gvk_hash(key: &ApiKey) -> String {
    crate::hash::fnv1a_64_hex(key.gvk_string().as_bytes())
}

/// The CSV's API labels: `olm.api.<hash>: provided` for each provided API.
///
/// Upstream computes the required APIs but never keeps them in the surface it labels from, so
/// CSVs carry no `required` labels; this does the same, since the labels are visible and tools
/// select on them.
pub fn api_labels(surface: &Surface) -> BTreeMap<String, String> {
    surface
        .provided
        .strip_plural()
        .0
        .iter()
        .map(|k| {
            (
                format!("{API_LABEL_PREFIX}{}", gvk_hash(k)),
                "provided".to_owned(),
            )
        })
        .collect()
}

/// The merge patch that makes a CSV's `olm.api.*` labels `wanted` (what [`api_labels`] says):
/// each wanted label set, each other `olm.api.*` label removed, nothing else touched; `None`
/// when `current` has them right already, so an unchanged CSV is never written.
pub fn api_label_patch(
    current: &BTreeMap<String, String>,
    wanted: &BTreeMap<String, String>,
) -> Option<serde_json::Value> {
    let stale = current
        .keys()
        .filter(|k| k.starts_with(API_LABEL_PREFIX) && !wanted.contains_key(*k));
    let missing = wanted.iter().any(|(k, v)| current.get(k) != Some(v));
    let mut labels = serde_json::Map::new();
    for k in stale {
        labels.insert(k.clone(), serde_json::Value::Null);
    }
    if !missing && labels.is_empty() {
        return None;
    }
    for (k, v) in wanted {
        labels.insert(k.clone(), serde_json::Value::String(v.clone()));
    }
    Some(serde_json::json!({"metadata": {"labels": labels}}))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Upstream's labeler (`labeler.go`) adds the labels of what the CSV provides and drops
    /// `olm.api.*` labels of what it no longer does; other labels are the CSV author's.
    #[test]
    fn api_labels_are_set_and_stale_ones_dropped() {
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let wanted = labels(&[("olm.api.a", "provided")]);
        let table = [
            (
                "right already",
                labels(&[("olm.api.a", "provided"), ("app", "x")]),
                None,
            ),
            (
                "missing",
                labels(&[("app", "x")]),
                Some(json!({"metadata": {"labels": {"olm.api.a": "provided"}}})),
            ),
            (
                "stale",
                labels(&[("olm.api.a", "provided"), ("olm.api.b", "provided")]),
                Some(json!({"metadata": {"labels": {"olm.api.a": "provided", "olm.api.b": null}}})),
            ),
            (
                "wrong value",
                labels(&[("olm.api.a", "required")]),
                Some(json!({"metadata": {"labels": {"olm.api.a": "provided"}}})),
            ),
        ];
        for (name, current, want) in table {
            assert_eq!(api_label_patch(&current, &wanted), want, "{name}");
        }
        assert_eq!(api_label_patch(&labels(&[]), &labels(&[])), None);
    }
}
