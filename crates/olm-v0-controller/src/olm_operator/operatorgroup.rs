//! The OperatorGroup controller (OLM's `syncOperatorGroups` and `syncNamespace`).
//!
//! The flow of one reconcile:
//!
//! 1. The `MultipleOperatorGroup` condition: set on every group of a namespace holding several,
//!    removed when the group is alone again.
//! 2. `spec.serviceAccountName`: the `OperatorGroupServiceAccount` condition while the account
//!    is missing, `status.serviceAccountRef` once it exists.
//! 3. The target namespaces (`olm_v0::olm_operator::membership::target_namespaces`): when they
//!    differ from `status.namespaces`, the status is written with `lastUpdated` and the reconcile
//!    ends (the write wakes the group's CSVs, which take the new `olm.targetNamespaces`).
//! 4. The `olm.operatorgroup.uid/<uid>` label on every namespace an explicit-target group
//!    targets, and off every other.
//! 5. The three aggregating ClusterRoles for the APIs of its member CSVs and its
//!    `olm.providedAPIs`; and `olm.providedAPIs` pruned to what member CSVs still provide
//!    (kept when `staticProvidedAPIs`, or while a providing CSV is still being checked).
//!
//! Guarantees: every write is a change; ClusterRoles are applied once per process per set of
//! APIs. A deleted group's ClusterRoles and namespace labels are removed by [`forget`].

use olm_runtime::harness::{Harness, key_of};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::channel::mpsc;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use olm_v0::olm_operator::apis::ApiSet;
use olm_v0::olm_operator::membership::{PROVIDED_APIS_ANNOTATION, target_namespaces};
use olm_v0::olm_operator::operatorgroup::{
    GroupTargets, MemberApis, OWNER_KIND_LABEL, OWNER_LABEL, OWNER_NAMESPACE_LABEL,
    group_cluster_roles, namespace_labels, provided_apis, status,
};
use olm_v0_api::v1::OperatorGroup;
use serde_json::{Value, json};
use tracing::{Instrument, info, info_span, warn};

use crate::error::Error;
use crate::{FIELD_MANAGER, GROUP_CONTROLLER, Index, lock, nothing, now};
use olm_cluster::context::Shared;
use olm_runtime::metrics::Outcome;

struct Ctx {
    shared: Arc<Shared>,
    index: Index,
    harness: Harness,
    /// The APIs whose ClusterRoles were applied, by group uid.
    roles: Mutex<HashMap<String, ApiSet>>,
}

/// Runs the controller on the groups `wake` names until `stop` resolves.
pub async fn run(
    shared: Arc<Shared>,
    index: Index,
    wake: mpsc::Receiver<ObjectRef<OperatorGroup>>,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let harness = shared.harness(GROUP_CONTROLLER);
    let ctx = Arc::new(Ctx {
        shared,
        index: index.clone(),
        harness,
        roles: Mutex::default(),
    });
    let controller = Controller::for_stream(nothing(), index.groups.clone()).reconcile_on(wake);
    olm_runtime::report::run(
        GROUP_CONTROLLER,
        controller,
        reconcile,
        error_policy,
        ctx,
        stop,
    )
    .await;
}

fn key(g: &OperatorGroup) -> String {
    key_of(g)
}

fn error_policy(g: Arc<OperatorGroup>, err: &Error, ctx: Arc<Ctx>) -> Action {
    ctx.harness
        .retry_object("reconciling the OperatorGroup", &*g, err)
}

async fn reconcile(g: Arc<OperatorGroup>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let work = reconcile_one(&g, &ctx).instrument(
        info_span!("reconcile", operatorgroup = %g.name_any(), namespace = ?g.namespace()),
    );
    ctx.harness
        .reconcile(&key(&g), work, |()| Outcome::Success)
        .await
        .map(|()| Action::await_change())
}

async fn reconcile_one(g: &OperatorGroup, ctx: &Ctx) -> Result<(), Error> {
    if g.meta().deletion_timestamp.is_some() {
        return Ok(());
    }
    let client = &ctx.shared.client;
    let index = &ctx.index;
    let name = g.name_any();
    let namespace = g.namespace().unwrap_or_default();
    let api: Api<OperatorGroup> = Api::namespaced(client.clone(), &namespace);

    // 1–3. Conditions, the ServiceAccount and the target namespaces.
    let account = match g
        .spec
        .service_account_name
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        None => status::Account::NotAsked,
        Some(sa) => {
            let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &namespace);
            match accounts.get_opt(sa).await? {
                None => status::Account::Missing(sa.to_owned()),
                Some(found) => status::Account::Found(found.object_ref(&())),
            }
        }
    };
    let selector = g
        .spec
        .selector
        .as_ref()
        .map(olm_api::selector::from_api)
        .transpose()
        .map_err(|e| Error::Retry(e.to_string()))?;
    let namespaces = index.namespaces();
    let targets = target_namespaces(
        &g.spec.target_namespaces,
        selector.as_ref(),
        namespaces.iter().map(|(n, l)| (n.as_str(), l)),
    )
    .map_err(Error::Retry)?;
    let decided = status::decide(
        &status::Found {
            status: g.status.as_ref(),
            several: index.groups_in(&namespace).len() > 1,
            account: &account,
            targets: &targets,
        },
        &now(),
    );
    if let Some(write) = &decided.write {
        // Fields the status no longer has are removed (Go writes an empty list as `null` too).
        let metadata = json!({"resourceVersion": g.resource_version()});
        match olm_runtime::status::patch_change(
            &api,
            &name,
            Some(&metadata),
            g.status.as_ref(),
            write,
        )
        .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        if decided.targets_changed {
            info!(operatorgroup = %name, namespace = %namespace, targets = ?targets, "target namespaces changed");
            return Ok(());
        }
    }
    if let Some(missing) = decided.missing_account {
        return Err(Error::Retry(missing));
    }
    let status_namespaces = g
        .status
        .as_ref()
        .map(|s| s.namespaces.clone())
        .unwrap_or_default();

    // 4. Namespace labels.
    label_namespaces(client, index, &status_namespaces).await?;

    // 5. ClusterRoles for the provided APIs, and pruning `olm.providedAPIs`.
    provided_api_roles(ctx, g, &api).await
}

/// Step 5: the ClusterRoles of the APIs the group's member CSVs provide, and `olm.providedAPIs`
/// pruned of what no member provides any more.
async fn provided_api_roles(
    ctx: &Ctx,
    g: &OperatorGroup,
    api: &Api<OperatorGroup>,
) -> Result<(), Error> {
    let name = g.name_any();
    let namespace = g.namespace().unwrap_or_default();
    let index = &ctx.index;
    let members: Vec<_> = index
        .csvs_in(&namespace)
        .into_iter()
        .filter(|c| {
            c.annotations()
                .get(olm_v0::olm_operator::membership::OPERATOR_GROUP_ANNOTATION)
                == Some(&name)
        })
        .collect();
    let annotated = ApiSet::parse_annotation(
        g.annotations()
            .get(PROVIDED_APIS_ANNOTATION)
            .map_or("", String::as_str),
    );
    let member_apis: Vec<MemberApis> = members
        .iter()
        .filter_map(|c| {
            let surface = super::csv::surface_of(c).ok()?;
            Some(MemberApis {
                phase: crate::phase_and_reason(c).0.cloned(),
                deleting: c.meta().deletion_timestamp.is_some(),
                apis: surface.provided.strip_plural(),
            })
        })
        .collect();
    let (roles, prune) = provided_apis(&member_apis, &annotated, g.spec.static_provided_apis);
    ensure_roles(ctx, g, &roles).await?;
    if let Some(value) = prune {
        let patch = json!({"metadata": {
            "resourceVersion": g.resource_version(),
            "annotations": {PROVIDED_APIS_ANNOTATION: value},
        }});
        match api
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Puts every group's `olm.operatorgroup.uid/<uid>` label where it belongs, on the namespaces
/// `extra` names and every namespace carrying such a label or targeted by a group.
async fn label_namespaces(
    client: &kube::Client,
    index: &Index,
    extra: &[String],
) -> Result<(), Error> {
    let groups = index.groups.state();
    let uids: Vec<(String, Vec<String>)> = groups
        .iter()
        .map(|g| {
            (
                g.uid().unwrap_or_default(),
                g.status
                    .as_ref()
                    .map(|s| s.namespaces.clone())
                    .unwrap_or_default(),
            )
        })
        .collect();
    let targets: Vec<GroupTargets<'_>> = uids
        .iter()
        .map(|(uid, namespaces)| GroupTargets { uid, namespaces })
        .collect();
    let api: Api<Namespace> = Api::all(client.clone());
    let namespaces = index.namespaces();
    let concerned = namespaces.iter().filter(|(n, labels)| {
        extra.contains(n)
            || labels
                .keys()
                .any(|k| k.starts_with(olm_v0::olm_operator::operatorgroup::GROUP_LABEL_PREFIX))
            || uids.iter().any(|(_, t)| t.contains(n))
    });
    for (ns, labels) in concerned {
        let Some(wanted) = namespace_labels(ns, labels, &targets) else {
            continue;
        };
        let mut patch = serde_json::Map::new();
        for k in labels.keys() {
            if !wanted.contains_key(k) {
                patch.insert(k.clone(), Value::Null);
            }
        }
        for (k, v) in &wanted {
            if labels.get(k) != Some(v) {
                patch.insert(k.clone(), Value::String(v.clone()));
            }
        }
        match api
            .patch(
                ns,
                &PatchParams::default(),
                &Patch::Merge(&json!({"metadata": {"labels": patch}})),
            )
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Applies the group's three aggregating ClusterRoles for `apis`, unless this process already
/// applied them for the same APIs.
async fn ensure_roles(ctx: &Ctx, g: &OperatorGroup, apis: &ApiSet) -> Result<(), Error> {
    let uid = g.uid().unwrap_or_default();
    if lock(&ctx.roles).get(&uid) == Some(apis) {
        return Ok(());
    }
    let api: Api<ClusterRole> = Api::all(ctx.shared.client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for role in group_cluster_roles(&g.namespace().unwrap_or_default(), &g.name_any(), apis) {
        let aggregation = role.aggregation_labels.as_ref().map(|labels| {
            json!({
                "clusterRoleSelectors": labels
                    .iter()
                    .map(|l| json!({"matchLabels": {l.clone(): "true"}}))
                    .collect::<Vec<_>>()
            })
        });
        let object = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role.name, "labels": role.labels},
            "aggregationRule": aggregation,
        });
        api.patch(&role.name, &params, &Patch::Apply(&object))
            .await?;
    }
    lock(&ctx.roles).insert(uid, apis.clone());
    Ok(())
}

/// After a group is deleted: its ClusterRoles (found by its owner labels) and its namespace
/// labels go.
pub async fn forget(shared: &Shared, index: &Index, namespace: &str, name: &str) {
    let api: Api<ClusterRole> = Api::all(shared.client.clone());
    let selector = format!(
        "{OWNER_LABEL}={name},{OWNER_NAMESPACE_LABEL}={namespace},{OWNER_KIND_LABEL}=OperatorGroup"
    );
    if let Err(e) = api
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels(&selector),
        )
        .await
    {
        warn!(operatorgroup = %name, namespace = %namespace, error = %e, "deleting the group's ClusterRoles failed");
    }
    if let Err(e) = label_namespaces(&shared.client, index, &[]).await {
        warn!(operatorgroup = %name, namespace = %namespace, error = %e, "removing the group's namespace labels failed");
    }
}
