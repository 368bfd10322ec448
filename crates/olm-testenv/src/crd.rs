//! Installing CustomResourceDefinitions and waiting until the API server serves them.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::{Client, ResourceExt};
use olm_k8s::ConditionStatus;

use crate::Error;

/// Field manager of the CRDs [`install_crds`] applies.
pub const CRD_FIELD_MANAGER: &str = "olm-testenv";

/// How often an installing CRD is re-read: the API server usually establishes one within a few
/// hundred milliseconds, and every test pays the wait.
const POLL: Duration = Duration::from_millis(100);

/// Applies every CRD in `crds` and waits until each is `Established`, so the next request for one
/// of their kinds (a create, or a controller's first watch) finds it served.
///
/// 1. Each CRD is applied server-side with field manager [`CRD_FIELD_MANAGER`], forcing
///    ownership: a fresh cluster gets it created, a cluster that has it (an `olm dev` restart,
///    a newer binary) gets it updated.
/// 2. All CRDs are then re-read every 100 ms until each has condition `Established=True`.
///
/// Errors: [`Error::Crd`] naming the CRD when a request fails; [`Error::CrdNotEstablished`]
/// naming the first CRD still not established after `timeout`, with the conditions it had (a
/// `NamesAccepted=False` there says why).
pub async fn install_crds(
    client: &Client,
    crds: &[CustomResourceDefinition],
    timeout: Duration,
) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(CRD_FIELD_MANAGER).force();
    for crd in crds {
        let name = crd.name_any();
        api.patch(&name, &params, &Patch::Apply(crd))
            .await
            .map_err(|source| Error::Crd {
                verb: "applying",
                name: name.clone(),
                source,
            })?;
    }
    let deadline = tokio::time::Instant::now() + timeout;
    for crd in crds {
        let name = crd.name_any();
        loop {
            let current = api.get(&name).await.map_err(|source| Error::Crd {
                verb: "reading",
                name: name.clone(),
                source,
            })?;
            if is_established(&current) {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::CrdNotEstablished {
                    name,
                    timeout,
                    conditions: conditions_summary(&current),
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }
    Ok(())
}

/// Whether the API server reports the CRD `Established=True` (it then serves the kind).
fn is_established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status.parse() == Ok(ConditionStatus::True))
        })
}

/// `Type=Status (Reason: message)` for every condition, in the server's order; `none` when the
/// CRD has none yet.
fn conditions_summary(crd: &CustomResourceDefinition) -> String {
    let conditions = crd
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    if conditions.is_empty() {
        return "none".to_string();
    }
    conditions
        .iter()
        .map(|c| {
            let mut text = format!("{}={}", c.type_, c.status);
            match (c.reason.as_deref(), c.message.as_deref()) {
                (Some(r), Some(m)) if !m.is_empty() => text.push_str(&format!(" ({r}: {m})")),
                (Some(r), _) if !r.is_empty() => text.push_str(&format!(" ({r})")),
                _ => {}
            }
            text
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(conditions: serde_json::Value) -> CustomResourceDefinition {
        serde_json::from_value(json!({
            "metadata": {"name": "widgets.test.olm.dev"},
            "spec": {
                "group": "test.olm.dev",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [],
            },
            "status": {"conditions": conditions},
        }))
        .expect("a CRD")
    }

    #[test]
    fn only_established_true_counts() {
        let established = |c| is_established(&crd(c));
        assert!(established(json!([
            {"type": "NamesAccepted", "status": "True"},
            {"type": "Established", "status": "True"},
        ])));
        assert!(!established(
            json!([{"type": "Established", "status": "False"}])
        ));
        assert!(!established(
            json!([{"type": "Established", "status": "true"}])
        ));
        assert!(!established(
            json!([{"type": "NamesAccepted", "status": "True"}])
        ));
        assert!(!established(json!([])));
    }

    #[test]
    fn the_summary_says_why_a_crd_is_not_established() {
        assert_eq!(conditions_summary(&crd(json!([]))), "none");
        assert_eq!(
            conditions_summary(&crd(json!([
                {"type": "NamesAccepted", "status": "False", "reason": "KindConflict",
                 "message": "\"Widget\" is already in use"},
                {"type": "Established", "status": "False", "reason": "NotAccepted"},
            ]))),
            "NamesAccepted=False (KindConflict: \"Widget\" is already in use), \
             Established=False (NotAccepted)"
        );
    }
}
