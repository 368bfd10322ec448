//! A CSV's install strategy on the cluster: applying its Deployments and checking them
//! (OLM's `pkg/controller/install/deployment.go`: `Install` and `CheckInstalled`).
//!
//! The Deployments are built by [`olm_v0::olm_operator::strategy::deployment_for_spec`] and applied
//! server-side with OLM's field manager, forced: the CSV's spec is what they must say. A
//! Deployment of the CSV no entry names any more is deleted after the install.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use olm_v0::olm_operator::deployment::{DeploymentCondition, DeploymentFacts, Rollout, rollout};
use olm_v0::olm_operator::inject::{Overrides, SubscriptionConfig, owner_subscription};
use olm_v0::olm_operator::strategy::{
    CsvOwner, SPEC_HASH_LABEL, StrategyDeployment, deployment_for_spec, orphaned_deployments,
    strategy_deployments,
};
use olm_v0::olm_operator::transition::StrategyProblem;
use olm_v0_api::v1::OperatorGroup;
use olm_v0_api::v1alpha1::ClusterServiceVersion;
use serde_json::Value;

use super::serving;
use crate::{FIELD_MANAGER, Index};

/// The `spec.config` of the Subscription that installed `csv` (upstream's `findOwner`: the
/// first of its namespace's, by name, whose `status.installedCSV` names it).
pub fn subscription_config(
    index: &Index,
    csv: &ClusterServiceVersion,
) -> Result<Option<SubscriptionConfig>, String> {
    let namespace = csv.namespace().unwrap_or_default();
    let subs = index.subscriptions_in(&namespace);
    let Some(owner) = owner_subscription(subs.iter().map(|s| &**s), &csv.name_any()) else {
        return Ok(None);
    };
    // The config is read as JSON, so that a malformed field is named by its path.
    let owner = serde_json::to_value(owner).map_err(|e| e.to_string())?;
    SubscriptionConfig::from_subscription(&owner)
        .map(Some)
        .map_err(|e| format!("the Subscription's {e}"))
}

/// The CSV's owner facts and its strategy entries; the error is what the CSV reports.
pub fn strategy(
    csv: &ClusterServiceVersion,
) -> Result<(CsvOwner, Vec<StrategyDeployment>), String> {
    let owner = CsvOwner::from_csv(csv).map_err(|e| e.to_string())?;
    let entries = strategy_deployments(&csv.spec.install).map_err(|e| e.to_string())?;
    Ok((owner, entries))
}

/// Applies every Deployment of the strategy and deletes the CSV's Deployments no entry names.
/// `Err((message, unrecoverable))`: a strategy that cannot be built is unrecoverable.
pub async fn install(
    client: &kube::Client,
    index: &Index,
    csv: &ClusterServiceVersion,
    group: &OperatorGroup,
    now: jiff::Timestamp,
) -> Result<(), (String, bool)> {
    let (owner, mut entries) = strategy(csv).map_err(|e| (e, true))?;
    let certs = if serving::needed(csv) {
        serving::ensure(client, csv, &owner, &entries, now)
            .await
            .map_err(|e| (e, false))?
    } else {
        BTreeMap::new()
    };
    serving::mount(&mut entries, &certs);
    let config = subscription_config(index, csv).map_err(|e| (e, true))?;
    let overrides = Overrides {
        config: config.as_ref(),
        proxy: None,
    };
    let api: Api<Deployment> = Api::namespaced(client.clone(), &owner.namespace);
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for entry in &entries {
        let built =
            deployment_for_spec(&owner, entry, overrides).map_err(|e| (e.to_string(), true))?;
        refuse_if_v1_holds(&api, &entry.name).await?;
        match api
            .patch(&entry.name, &params, &Patch::Apply(&built.deployment))
            .await
        {
            Ok(_) => {}
            // The group's ServiceAccount may not: nothing changes that without a change of
            // RBAC (upstream's InsufficentPermissions, unrecoverable).
            Err(kube::Error::Api(s)) if s.code == 403 => {
                return Err((format!("install strategy failed: {}", s.message), true));
            }
            Err(e) => {
                return Err((
                    format!(
                        "error creating deployment {}: {}",
                        entry.name,
                        olm_runtime::api_error::message(&e)
                    ),
                    false,
                ));
            }
        }
    }
    let existing = deployments_of(index, &owner.namespace).map_err(|e| (e.to_string(), false))?;
    let orphans =
        orphaned_deployments(&owner, &entries, &existing).map_err(|e| (e.to_string(), false))?;
    for name in orphans {
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                return Err((
                    format!(
                        "error deleting deployment {name}: {}",
                        olm_runtime::api_error::message(&e)
                    ),
                    false,
                ));
            }
        }
    }
    if serving::needed(csv) {
        serving::install(client, csv, &owner, group, &certs)
            .await
            .map_err(|e| (e, false))?;
    }
    Ok(())
}

/// A Deployment a ClusterExtension's revision controls is never applied over: the forced apply
/// would take its fields from OLM v1, and the two would fight over it. Retried with the failed
/// install's backoff (no write while it fails the same way), so the CSV installs soon after the
/// extension is uninstalled. A read that fails (the group's ServiceAccount
/// may not read Deployments) leaves the apply to say what is wrong.
async fn refuse_if_v1_holds(api: &Api<Deployment>, name: &str) -> Result<(), (String, bool)> {
    let Ok(Some(current)) = api.get_opt(name).await else {
        return Ok(());
    };
    let current = serde_json::to_value(&current).map_err(|e| (e.to_string(), false))?;
    match current
        .as_object()
        .and_then(|o| olm_k8s::v0_refusal("Deployment", name, o))
    {
        Some(message) => Err((message, false)),
        None => Ok(()),
    }
}

/// The cached Deployments of `namespace` OLM made for CSVs, as JSON.
fn deployments_of(index: &Index, namespace: &str) -> Result<Vec<Value>, serde_json::Error> {
    index
        .deployments
        .state()
        .iter()
        .filter(|d| d.namespace().as_deref() == Some(namespace))
        .map(|d| serde_json::to_value(&**d))
        .collect()
}

/// Deletes the CSV's Deployments (a CSV failing with a conflict of provided APIs).
pub async fn delete_deployments(
    client: &kube::Client,
    index: &Index,
    csv: &ClusterServiceVersion,
) -> Result<(), kube::Error> {
    let namespace = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let api: Api<Deployment> = Api::namespaced(client.clone(), &namespace);
    for d in index.deployments.state() {
        let ours = d.namespace().as_deref() == Some(namespace.as_str())
            && crate::owned_by_csv(d.labels(), &namespace, &name);
        if ours {
            match api.delete(&d.name_any(), &DeleteParams::background()).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Whether the strategy is installed and healthy (`None`), else why not, from the cached
/// Deployments, in upstream's order and words: each must exist (`ComponentMissing`), be rolled
/// out (`Waiting`; past its deadline `Timeout`), carry every CSV annotation on its pod template
/// (`AnnotationsMissing`; checked in key order, where upstream's order is a map's) and the spec
/// hash of what would be applied now (`DeploymentUpdated`). `Err(())` when the Deployments
/// cannot be built (the CSV goes back to Pending).
pub fn check(
    index: &Index,
    csv: &ClusterServiceVersion,
    certs: &BTreeMap<String, serving::Cert>,
) -> Result<Option<StrategyProblem>, ()> {
    let Ok((owner, mut entries)) = strategy(csv) else {
        return Err(());
    };
    serving::mount(&mut entries, certs);
    let config = subscription_config(index, csv).map_err(|_| ())?;
    let overrides = Overrides {
        config: config.as_ref(),
        proxy: None,
    };
    for entry in &entries {
        let built = deployment_for_spec(&owner, entry, overrides).map_err(|_| ())?;
        let key = kube::runtime::reflector::ObjectRef::<Deployment>::new(&entry.name)
            .within(&owner.namespace);
        let d = index.deployments.get(&key).filter(|d| {
            d.labels()
                .get(olm_v0::olm_operator::operatorgroup::OWNER_LABEL)
                == Some(&owner.name)
        });
        let Some(d) = d else {
            return Ok(Some(StrategyProblem::Waiting(format!(
                "missing deployment with name={}",
                entry.name
            ))));
        };
        match rollout(&facts(&d)) {
            Rollout::Done(_) => {}
            Rollout::Waiting(m) => {
                return Ok(Some(StrategyProblem::Waiting(format!(
                    "waiting for deployment {} to become ready: {m}",
                    entry.name
                ))));
            }
            Rollout::TimedOut(m) => {
                return Ok(Some(StrategyProblem::Unrecoverable(format!(
                    "deployment {} not ready before timeout: {m}",
                    entry.name
                ))));
            }
        }
        let template = d
            .spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.as_ref());
        if !owner.annotations.is_empty() && template.is_none() {
            return Ok(Some(StrategyProblem::Reinstall(
                "no annotations found on deployment".into(),
            )));
        }
        for (key, value) in &owner.annotations {
            match template.and_then(|t| t.get(key)) {
                None => {
                    return Ok(Some(StrategyProblem::Reinstall(format!(
                        "annotations on deployment does not contain expected key: {key}"
                    ))));
                }
                Some(actual) if actual != value => {
                    return Ok(Some(StrategyProblem::Reinstall(format!(
                        "unexpected annotation on deployment. Expected {key}:{value}, found {key}:{actual}"
                    ))));
                }
                Some(_) => {}
            }
        }
        match d.labels().get(SPEC_HASH_LABEL) {
            None => {
                return Ok(Some(StrategyProblem::Reinstall(format!(
                    "deployment {} doesn't have a spec hash, update it",
                    entry.name
                ))));
            }
            Some(hash) if *hash != built.spec_hash => {
                return Ok(Some(StrategyProblem::Reinstall(format!(
                    "deployment changed old hash={hash}, new hash={}",
                    built.spec_hash
                ))));
            }
            Some(_) => {}
        }
    }
    Ok(None)
}

fn facts(d: &Deployment) -> DeploymentFacts {
    let status = d.status.clone().unwrap_or_default();
    DeploymentFacts {
        name: d.name_any(),
        generation: d.meta().generation.unwrap_or_default(),
        observed_generation: status.observed_generation.unwrap_or_default(),
        replicas: status.replicas.unwrap_or_default(),
        updated_replicas: status.updated_replicas.unwrap_or_default(),
        conditions: status
            .conditions
            .unwrap_or_default()
            .into_iter()
            .map(|c| DeploymentCondition {
                type_: c.type_.unwrap_or_default(),
                status: c.status.unwrap_or_default(),
                reason: c.reason.unwrap_or_default(),
                message: c.message.unwrap_or_default(),
            })
            .collect(),
    }
}
