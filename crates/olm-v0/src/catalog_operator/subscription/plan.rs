//! What a namespace's pass does once resolution has succeeded (the end of upstream's
//! `syncResolvingNamespace`): nothing, because the namespace already holds what resolution
//! chose or a plan for it is under way, or a new InstallPlan — which Subscription each new
//! bundle serves, which bundles come in through a Subscription the plan creates, the failed
//! plans' CSVs to delete first, the plan's generation and whether it waits for approval.
//!
//! No decision reads the clock: `now` is handed in and only dates a completed plan.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use olm_v0_api::v1alpha1::{
    Approval, InstallPlan, InstallPlanSpec, Subscription, SubscriptionStatus,
};
use serde_json::{Value, json};

use crate::catalog_operator::steps::Step;

use super::{PlanView, SetAside, dependency_subscription_name, next_generation, plan_covering};

/// How long a completed plan's CSVs are trusted to be on their way into the cache: a plan that
/// completed this recently is not made again for the CSVs it names.
pub const RECENT_PLAN: Duration = Duration::from_secs(30);

/// A bundle resolution chose that the namespace does not hold yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewBundle<'a> {
    /// Its CSV's name.
    pub name: &'a str,
    /// Its package.
    pub package: &'a str,
    /// The channel it was chosen from.
    pub channel: &'a str,
    /// Its CatalogSource's name.
    pub catalog: &'a str,
    /// Its CatalogSource's namespace.
    pub catalog_namespace: &'a str,
}

/// What the pass does after a successful resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Nothing to install; look again after this long, if at all.
    Settled(Option<Duration>),
    /// Write an InstallPlan for every new bundle.
    Plan(PlanOrder),
}

/// A new InstallPlan, as [`next`] orders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanOrder {
    /// For each new bundle, in order, the index of the Subscription it serves; `None` when no
    /// Subscription does (a dependency): the plan creates one for it.
    pub serving: Vec<Option<usize>>,
    /// The CSV each served Subscription (by index) moves to.
    pub current: BTreeMap<usize, String>,
    /// CSVs that failed plans created and that the new bundles take the place of, deleted
    /// before the plan is written: the CSV they replace could not make way otherwise.
    pub leftovers: Vec<String>,
    /// The plan's `spec.generation`.
    pub generation: i64,
    /// Whether it waits for approval: some Subscription of the namespace is `Manual`.
    pub manual: bool,
}

impl PlanOrder {
    /// The phase the plan starts in: `RequiresApproval` when it waits for approval, else
    /// `Installing`.
    pub fn first_phase(&self) -> &'static str {
        if self.manual {
            "RequiresApproval"
        } else {
            "Installing"
        }
    }

    /// The InstallPlan to create in `namespace` (named by the API server from `install-`) for
    /// `bundles`: owned, not controlled, by each of `subs` — every Subscription of the namespace,
    /// as upstream owns it — so that it goes with the last of them, and labelled as
    /// [`crate::olm_operator::operator::new_plan_labels`] says.
    pub fn install_plan(
        &self,
        namespace: &str,
        subs: &[&Subscription],
        bundles: &[NewBundle<'_>],
    ) -> InstallPlan {
        let owners = subs
            .iter()
            .map(|s| OwnerReference {
                api_version: "operators.coreos.com/v1alpha1".into(),
                kind: "Subscription".into(),
                name: s.metadata.name.clone().unwrap_or_default(),
                uid: s.metadata.uid.clone().unwrap_or_default(),
                block_owner_deletion: Some(false),
                controller: Some(false),
            })
            .collect();
        let labels = crate::olm_operator::operator::new_plan_labels(
            subs.iter().map(|s| s.spec.package.as_str()),
            namespace,
        );
        InstallPlan {
            metadata: ObjectMeta {
                generate_name: Some("install-".into()),
                namespace: Some(namespace.into()),
                owner_references: Some(owners),
                labels: Some(labels),
                ..ObjectMeta::default()
            },
            spec: InstallPlanSpec {
                catalog_source: None,
                catalog_source_namespace: None,
                cluster_service_version_names: bundles.iter().map(|b| b.name.to_owned()).collect(),
                approval: if self.manual {
                    Approval::Manual
                } else {
                    Approval::Automatic
                },
                approved: !self.manual,
                generation: Some(self.generation),
            },
            status: None,
        }
    }

    /// The status the created plan is given, unless it already lists steps: its first phase,
    /// the catalogs its bundles come from (sorted, each once) and its steps.
    pub fn status(&self, bundles: &[NewBundle<'_>], steps: &[Step]) -> Value {
        let catalogs: BTreeSet<&str> = bundles.iter().map(|b| b.catalog).collect();
        json!({
            "phase": self.first_phase(),
            "catalogSources": catalogs,
            "plan": steps.iter().map(Step::to_json).collect::<Vec<_>>(),
        })
    }
}

/// Whether the Subscription `sub` is the one `bundle` serves: same package and catalog, and
/// its channel when it names one.
pub fn serves(sub: &Subscription, bundle: &NewBundle<'_>) -> bool {
    let spec = &sub.spec;
    let channel = spec.channel.as_deref().unwrap_or_default();
    spec.package == bundle.package
        && spec.catalog_source == bundle.catalog
        && spec.catalog_source_namespace == bundle.catalog_namespace
        && (channel.is_empty() || channel == bundle.channel)
}

/// What the pass does given the namespace's Subscriptions (with their newest status), the
/// bundles resolution chose that are new to it, its InstallPlans, the CSVs resolution set
/// aside, and the time.
///
/// - Nothing is new: settled.
/// - Nothing new since the last plan — every new bundle is already its Subscription's current
///   CSV (say a failed plan under fail-forward, waiting for the catalog to offer a fix) and
///   every dependency's Subscription exists: another plan would only fail the same way.
/// - A plan for exactly these CSVs is under way (its progress wakes the next pass), or
///   completed less than [`RECENT_PLAN`] ago and the CSV cache has not caught up: no second
///   plan; in the second case, look again when that time is up.
/// - Otherwise a new plan.
pub fn next(
    subs: &[(&Subscription, &SubscriptionStatus)],
    new: &[NewBundle<'_>],
    plans: &[PlanView],
    aside: &BTreeMap<String, SetAside>,
    now: jiff::Timestamp,
) -> Next {
    if new.is_empty() {
        return Next::Settled(None);
    }
    let serving: Vec<Option<usize>> = new
        .iter()
        .map(|b| subs.iter().position(|(s, _)| serves(s, b)))
        .collect();
    let names: HashSet<&str> = subs
        .iter()
        .filter_map(|(s, _)| s.metadata.name.as_deref())
        .collect();
    let unchanged = new.iter().zip(&serving).all(|(b, serving)| match serving {
        Some(i) => subs[*i].1.current_csv.as_deref() == Some(b.name),
        None => names.contains(
            dependency_subscription_name(b.package, b.channel, b.catalog, b.catalog_namespace)
                .as_str(),
        ),
    });
    if unchanged {
        return Next::Settled(None);
    }
    let csvs: Vec<&str> = new.iter().map(|b| b.name).collect();
    if let Some(plan) = plan_covering(plans, &csvs) {
        if plan.phase != "Complete" {
            return Next::Settled(None);
        }
        let age = plan
            .created
            .parse::<jiff::Timestamp>()
            .map(|t| now.duration_since(t).unsigned_abs())
            .unwrap_or_default();
        if age < RECENT_PLAN {
            return Next::Settled(Some(RECENT_PLAN - age));
        }
    }
    let mut current = BTreeMap::new();
    for (b, serving) in new.iter().zip(&serving) {
        if let Some(i) = serving {
            current.insert(*i, b.name.to_owned());
        }
    }
    let leftovers = current
        .keys()
        .filter_map(|i| subs[*i].1.current_csv.as_deref())
        .filter(|csv| aside.get(*csv) == Some(&SetAside::FailedPlan))
        .map(str::to_owned)
        .collect();
    let generations: Vec<i64> = subs
        .iter()
        .filter_map(|(_, s)| s.install_plan_generation)
        .collect();
    Next::Plan(PlanOrder {
        serving,
        current,
        leftovers,
        generation: next_generation(plans, &generations),
        manual: subs
            .iter()
            .any(|(s, _)| s.spec.install_plan_approval == Some(Approval::Manual)),
    })
}

#[cfg(test)]
mod tests;
