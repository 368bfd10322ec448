//! Where a move from a Subscription to a ClusterExtension stands, and what is left of OLM v0
//! once it has.
//!
//! `olm migrate SUB -n NS` may stop at any point — the command killed, the machine lost, a
//! timeout — and is run again. What it does next is read off the cluster, never remembered:
//! the Subscription (present or not, marked `migrating-to` or not) and the ClusterExtension
//! (present or not, still holding its `migration-takes-over` note or not) say which of its
//! steps are done ([`stage`]). Every step after the first is idempotent, so the one that was
//! interrupted is simply done again.
//!
//! What the move removes of OLM v0 ([`plans_of`], [`operator_group_removable`]) and what a
//! `--backup DIR` holds ([`backup_files`]) are decided here too: upstream's rules (the
//! InstallPlans naming the CSV; an OperatorGroup only when asked and no Subscription is left in
//! its namespace; `subscription.yaml`, `operatorgroup.yaml`, `clusterserviceversion.yaml`,
//! `installplans/<name>.yaml`).

use olm_api::ClusterExtension;
use olm_v0_api::v1::OperatorGroup;
use olm_v0_api::v1alpha1::{ClusterServiceVersion, InstallPlan, Subscription, SubscriptionSpec};

use crate::mapping::SUBSCRIPTION_BACKUP;

/// The step a move goes on from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Nothing done yet: check, map, mark, create.
    Start,
    /// Marked, but the extension was never created (or was deleted): map again and create.
    Create,
    /// The extension exists and the Subscription is still there: wait until it is installed,
    /// then remove OLM v0's objects and finish.
    Follow,
    /// The Subscription is gone and the extension still carries its takeover note: remove what
    /// is left of OLM v0 (the CSV `csv`, its InstallPlans) and finish. `manual`: the
    /// Subscription approved upgrades by hand, so the version stays pinned.
    Finish {
        /// The CSV the extension took over (in the Subscription's namespace).
        csv: String,
        /// Upgrades were approved by hand: the version stays pinned.
        manual: bool,
    },
    /// Moved already: nothing to do.
    Done,
}

/// Where the move of the Subscription `ns/name` to the ClusterExtension `ce_name` stands, from
/// the Subscription and the extension as read (`None`: not found).
///
/// # Errors
///
/// Upstream's not-found text when neither exists, and a refusal naming the extension when the
/// Subscription is being moved to another one (the move must be finished under that name).
pub fn stage(
    ns: &str,
    name: &str,
    ce_name: &str,
    sub: Option<&Subscription>,
    ce: Option<&ClusterExtension>,
) -> Result<Stage, String> {
    let from_this = ce.is_some_and(|ce| {
        ce.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(crate::MIGRATED_FROM_SUBSCRIPTION))
            .is_some_and(|from| *from == format!("{ns}/{name}"))
    });
    match sub {
        Some(sub) => {
            let marked = sub
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(olm_k8s::MIGRATING_TO_ANNOTATION));
            match marked {
                None => Ok(Stage::Start),
                Some(to) if to != ce_name => Err(format!(
                    "Subscription {ns}/{name} is being moved to ClusterExtension {to}: run `olm migrate {name} -n {ns} --ce-name {to}` to finish that move, or `olm migrate rollback {to}`"
                )),
                Some(_) if ce.is_none() => Ok(Stage::Create),
                Some(_) if !from_this => Err(format!(
                    "ClusterExtension {ce_name} exists but was not migrated from Subscription {ns}/{name}; choose another name with --ce-name"
                )),
                Some(_) => Ok(Stage::Follow),
            }
        }
        None => {
            let Some(ce) = ce.filter(|_| from_this) else {
                return Err(format!("failed to get Subscription {ns}/{name}: not found"));
            };
            let annotations = ce.metadata.annotations.clone().unwrap_or_default();
            let Some(takes_over) = annotations.get(olm_k8s::MIGRATION_TAKES_OVER_ANNOTATION) else {
                return Ok(Stage::Done);
            };
            let csv = takes_over
                .split_once('/')
                .map_or(takes_over.as_str(), |(_, csv)| csv)
                .to_owned();
            let manual = annotations
                .get(SUBSCRIPTION_BACKUP)
                .and_then(|spec| serde_json::from_str::<SubscriptionSpec>(spec).ok())
                .is_some_and(|spec| {
                    spec.install_plan_approval == Some(olm_v0_api::v1alpha1::Approval::Manual)
                });
            Ok(Stage::Finish { csv, manual })
        }
    }
}

/// What `olm migrate rollback` does about the Subscription the extension came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rollback {
    /// It is gone (the move finished): recreate it, and the OperatorGroup, from the backups.
    Recreate,
    /// It is still there, handed to this extension by a move that did not finish: OLM v1 lets
    /// go and the Subscription and its CSV `csv` are handed back by removing the mark; nothing
    /// is recreated.
    Unmark {
        /// The Subscription's installed CSV.
        csv: String,
    },
}

/// Whether rolling the extension `ext` back recreates its Subscription `ns/name` or unmarks it
/// (`sub`: the Subscription as read).
///
/// # Errors
///
/// A Subscription that exists and is not being moved to `ext`: there is nothing to roll back
/// to, and `olm migrate check` shows the conflict.
pub fn rollback(
    ext: &str,
    ns: &str,
    name: &str,
    sub: Option<&Subscription>,
) -> Result<Rollback, String> {
    let Some(sub) = sub else {
        return Ok(Rollback::Recreate);
    };
    let marked = sub
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(olm_k8s::MIGRATING_TO_ANNOTATION));
    if marked.is_some_and(|to| to == ext) {
        return Ok(Rollback::Unmark {
            csv: crate::checks::installed_csv(sub).to_owned(),
        });
    }
    Err(format!(
        "Subscription {ns}/{name} exists already; `olm migrate check {name} -n {ns}` shows the conflict"
    ))
}

/// An object an extension's revision laid out, by identity.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LaidOut {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// Its namespace (`None`: cluster-scoped).
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
}

/// Every object the revisions hold, sorted and once each: on a rollback each is released from
/// its owner references to the revisions ([`released_owner_references`]) before they are
/// deleted.
pub fn laid_out(revisions: &[olm_api::ClusterObjectSet]) -> Vec<LaidOut> {
    let mut out: Vec<LaidOut> = revisions
        .iter()
        .flat_map(|r| &r.spec.phases)
        .flat_map(|p| &p.objects)
        .filter_map(|o| o.object.as_ref())
        .filter_map(|o| {
            let text = |k: &str| o.get(k).and_then(serde_json::Value::as_str);
            let meta = o.get("metadata")?;
            Some(LaidOut {
                api_version: text("apiVersion")?.to_owned(),
                kind: text("kind")?.to_owned(),
                namespace: meta
                    .get("namespace")
                    .and_then(serde_json::Value::as_str)
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned),
                name: meta.get("name")?.as_str()?.to_owned(),
            })
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The RBAC objects (Roles, ClusterRoles and their bindings) the revisions hold, sorted: after
/// a rollback, each that nobody has claimed ([`abandoned`]) is deleted — the operator runs
/// with the RBAC OLM v0 lays out again, and a later move would find OLM v1's old roles in its
/// way, owned by no one. Nothing else is ever a leftover: CRDs, workloads, Services and the
/// ServiceAccount are the operator's, and stay.
pub fn rbac_laid_out(revisions: &[olm_api::ClusterObjectSet]) -> Vec<LaidOut> {
    laid_out(revisions)
        .into_iter()
        .filter(|o| {
            o.api_version.starts_with("rbac.authorization.k8s.io/")
                && matches!(
                    o.kind.as_str(),
                    "Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding"
                )
        })
        .collect()
}

/// The owner references an object keeps once released from `owners` (uids of the extension
/// and its revisions), or `None` when it names none of them.
///
/// Why the rollback strips them itself rather than leaving it to the garbage collector's
/// orphaning: the collector orphans the dependents its graph knows of, and while it rebuilds
/// that graph (after new CRDs appear, say) it can miss one; once the revision is gone, that
/// object's only owner is absent and the collector deletes it — the operator's Deployment,
/// recreated by OLM v0 a moment later with a new pod. An object that names no owner is never
/// collected.
pub fn released_owner_references(
    references: &[serde_json::Value],
    owners: &std::collections::BTreeSet<String>,
) -> Option<Vec<serde_json::Value>> {
    let named = |r: &serde_json::Value| {
        r.get("uid")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|uid| owners.contains(uid))
    };
    if !references.iter().any(named) {
        return None;
    }
    Some(references.iter().filter(|r| !named(r)).cloned().collect())
}

/// Whether an object, read once OLM v0 has the operator installed again, is claimed by nobody:
/// no owner reference and none of OLM v0's owner labels. An object OLM v0 took back, or that
/// anyone else owns, is never deleted.
pub fn abandoned(
    labels: &std::collections::BTreeMap<String, String>,
    owner_references: usize,
) -> bool {
    owner_references == 0
        && !labels.contains_key("olm.owner")
        && !labels.contains_key(olm_k8s::V0_MANAGED_LABEL)
}

/// The InstallPlans of `plans` that installed the CSV `csv`: those naming it in
/// `spec.clusterServiceVersionNames` or resolving a step for it (upstream's collection), by name,
/// sorted.
pub fn plans_of(csv: &str, plans: &[InstallPlan]) -> Vec<String> {
    let mut names: Vec<String> = plans
        .iter()
        .filter(|p| {
            p.spec
                .cluster_service_version_names
                .iter()
                .any(|n| n == csv)
                || p.status
                    .as_ref()
                    .is_some_and(|s| s.plan.iter().any(|step| step.resolving == csv))
        })
        .filter_map(|p| p.metadata.name.clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Whether `--delete-operatorgroup` may delete the namespace's OperatorGroup: only when no
/// Subscription is left in the namespace but the ones being moved now (`moving`), as upstream
/// decides — another operator there still needs it.
pub fn operator_group_removable(subscriptions: &[Subscription], moving: &[&str]) -> bool {
    subscriptions.iter().all(|s| {
        s.metadata
            .name
            .as_deref()
            .is_some_and(|n| moving.contains(&n))
    })
}

/// Labels upstream strips from the OperatorGroup's aggregated ClusterRoles
/// (`olm.og.<group>.<admin|edit|view>-…`) before deleting it: OLM v0 would otherwise remove
/// them with the group, and users' bindings to them would stop granting anything.
pub const OPERATOR_GROUP_ROLE_LABELS: [&str; 4] = [
    "olm.owner",
    "olm.owner.namespace",
    "olm.owner.kind",
    olm_k8s::V0_MANAGED_LABEL,
];

/// Whether the ClusterRole `role` is one of the OperatorGroup `group`'s aggregated roles.
pub fn operator_group_role(group: &str, role: &str) -> bool {
    role.starts_with(&format!("olm.og.{group}."))
}

/// The files of a `--backup DIR`, relative to it, with their YAML: `subscription.yaml`,
/// `operatorgroup.yaml` (when there is one), `clusterserviceversion.yaml` (when it was read)
/// and `installplans/<name>.yaml` for each plan of [`plans_of`]. Status is kept: it is what
/// the objects said when they were taken away.
///
/// # Errors
///
/// An object that does not serialise (not expected).
pub fn backup_files(
    sub: &Subscription,
    group: Option<&OperatorGroup>,
    csv: Option<&ClusterServiceVersion>,
    plans: &[&InstallPlan],
) -> Result<Vec<(String, String)>, String> {
    let yaml = |v: Result<serde_json::Value, serde_json::Error>| {
        v.map(|v| olm_goenc::yaml::to_yaml(&without_managed_fields(v)))
            .map_err(|e| e.to_string())
    };
    let mut files = vec![(
        "subscription.yaml".to_owned(),
        yaml(serde_json::to_value(sub))?,
    )];
    if let Some(og) = group {
        files.push((
            "operatorgroup.yaml".to_owned(),
            yaml(serde_json::to_value(og))?,
        ));
    }
    if let Some(csv) = csv {
        files.push((
            "clusterserviceversion.yaml".to_owned(),
            yaml(serde_json::to_value(csv))?,
        ));
    }
    for plan in plans {
        let name = plan.metadata.name.as_deref().unwrap_or_default();
        files.push((
            format!("installplans/{name}.yaml"),
            yaml(serde_json::to_value(plan))?,
        ));
    }
    Ok(files)
}

/// `metadata.managedFields` is bookkeeping of the API server, not part of what is backed up.
fn without_managed_fields(mut v: serde_json::Value) -> serde_json::Value {
    if let Some(meta) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.remove("managedFields");
    }
    v
}

#[cfg(test)]
mod tests;
