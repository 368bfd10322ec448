//! Subscription and InstallPlan decisions of catalog-operator's namespace resolution
//! (`syncResolvingNamespace` in the OLM repo's `pkg/controller/operators/catalog/operator.go`,
//! and the status reconcilers of `pkg/controller/operators/catalog/subscription/`): what a
//! Subscription's status says given what exists, which Subscriptions a resolved bundle
//! satisfies, the approval and generation of a new InstallPlan, and the conditions, in
//! upstream's words.

use serde_json::{Value, json};

/// `status.state` values.
pub mod state {
    /// An InstallPlan is installing the current CSV.
    pub const UPGRADE_PENDING: &str = "UpgradePending";
    /// The current CSV is installed and nothing newer is known.
    pub const AT_LATEST_KNOWN: &str = "AtLatestKnown";
    /// The InstallPlan failed (with fail-forward upgrades).
    pub const UPGRADE_FAILED: &str = "UpgradeFailed";
}

/// Condition types of a Subscription.
pub mod condition {
    /// Catalogs the Subscription may use are unhealthy.
    pub const CATALOG_SOURCES_UNHEALTHY: &str = "CatalogSourcesUnhealthy";
    /// The referenced InstallPlan is gone.
    pub const INSTALL_PLAN_MISSING: &str = "InstallPlanMissing";
    /// The referenced InstallPlan is not done.
    pub const INSTALL_PLAN_PENDING: &str = "InstallPlanPending";
    /// The referenced InstallPlan failed.
    pub const INSTALL_PLAN_FAILED: &str = "InstallPlanFailed";
    /// Dependency resolution failed.
    pub const RESOLUTION_FAILED: &str = "ResolutionFailed";
    /// Bundles are being unpacked.
    pub const BUNDLE_UNPACKING: &str = "BundleUnpacking";
    /// A bundle could not be unpacked.
    pub const BUNDLE_UNPACK_FAILED: &str = "BundleUnpackFailed";
}

/// Condition reasons of a Subscription.
pub mod reason {
    /// Every catalog is healthy.
    pub const ALL_CATALOG_SOURCES_HEALTHY: &str = "AllCatalogSourcesHealthy";
    /// A catalog is unhealthy or missing.
    pub const UNHEALTHY_CATALOG_SOURCE_FOUND: &str = "UnhealthyCatalogSourceFound";
    /// No catalog exists to resolve from.
    pub const NO_CATALOG_SOURCES_FOUND: &str = "NoCatalogSourcesFound";
    /// The solver found no solution.
    pub const CONSTRAINTS_NOT_SATISFIABLE: &str = "ConstraintsNotSatisfiable";
    /// An error kept resolution from running.
    pub const ERROR_PREVENTED_RESOLUTION: &str = "ErrorPreventedResolution";
    /// The referenced InstallPlan is gone.
    pub const REFERENCED_INSTALL_PLAN_NOT_FOUND: &str = "ReferencedInstallPlanNotFound";
    /// The InstallPlan failed without a reason of its own.
    pub const INSTALL_PLAN_FAILED: &str = "InstallPlanFailed";
    /// Bundles are being unpacked.
    pub const UNPACKING_IN_PROGRESS: &str = "UnpackingInProgress";
    /// A bundle could not be unpacked.
    pub const BUNDLE_UNPACK_FAILED: &str = "BundleUnpackFailed";
}

/// The message of `CatalogSourcesUnhealthy=False`.
pub const ALL_HEALTHY_MESSAGE: &str = "all available catalogsources are healthy";
/// The message of `NoCatalogSourcesFound`.
pub const NO_CATALOG_SOURCES_MESSAGE: &str =
    "dependency resolution requires at least one catalogsource";
/// The annotation a Subscription created by an InstallPlan carries: the plan's name.
pub const GENERATED_BY_ANNOTATION: &str = "olm.generated-by";
/// How many InstallPlans a namespace keeps (upstream's `maxInstallPlanCount`).
pub const MAX_INSTALL_PLANS: usize = 5;

/// A condition to set: type, status, reason, message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// Its type.
    pub kind: &'static str,
    /// `"True"` or `"False"`.
    pub status: &'static str,
    /// Its reason.
    pub reason: String,
    /// Its message.
    pub message: String,
}

impl Condition {
    /// A condition that is true.
    pub fn holds(kind: &'static str, reason: &str, message: impl Into<String>) -> Condition {
        Condition {
            kind,
            status: "True",
            reason: reason.to_owned(),
            message: message.into(),
        }
    }
}

/// Sets `c` in a Subscription's `status.conditions` as upstream's `SetCondition` does: a
/// condition equal in type, status, reason and message is kept as it is (its times too);
/// otherwise it is replaced, stamped `now`. Returns whether anything changed.
pub fn set_condition(conditions: &mut Vec<Value>, c: &Condition, now: &str) -> bool {
    let text = |v: &Value, k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let position = conditions.iter().position(|v| text(v, "type") == c.kind);
    if let Some(i) = position {
        let old = &conditions[i];
        if text(old, "status") == c.status
            && text(old, "reason") == c.reason
            && text(old, "message") == c.message
        {
            return false;
        }
    }
    let mut value = json!({"type": c.kind, "status": c.status, "lastTransitionTime": now});
    if !c.reason.is_empty() {
        value["reason"] = json!(c.reason);
    }
    if !c.message.is_empty() {
        value["message"] = json!(c.message);
    }
    match position {
        Some(i) => conditions[i] = value,
        None => conditions.push(value),
    }
    true
}

/// Removes the condition of type `kind`; returns whether it was there.
pub fn remove_condition(conditions: &mut Vec<Value>, kind: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|v| v.get("type").and_then(Value::as_str) != Some(kind));
    before != conditions.len()
}

/// An InstallPlan as the Subscription decisions see it.
#[derive(Debug, Clone, Default)]
pub struct PlanView {
    /// Its name.
    pub name: String,
    /// `spec.generation`.
    pub generation: i64,
    /// `status.phase`.
    pub phase: String,
    /// The reason and message of its `Installed` condition, if any.
    pub installed: Option<(String, String)>,
    /// Its `creationTimestamp`, for ordering.
    pub created: String,
    /// `spec.clusterServiceVersionNames`.
    pub csvs: Vec<String>,
}

/// The plan already installing `names` (every one of them), if any that has not failed: a new
/// plan for the same CSVs would only repeat it. Watch caches can show a plan before the CSVs
/// it created, so a completed plan counts too; the caller decides how long to trust it.
pub fn plan_covering<'a>(plans: &'a [PlanView], names: &[&str]) -> Option<&'a PlanView> {
    plans
        .iter()
        .filter(|p| p.phase != "Failed")
        .filter(|p| names.iter().all(|n| p.csvs.iter().any(|c| c == n)))
        .max_by_key(|p| p.generation)
}

/// What a Subscription's state becomes given what exists (upstream's step 3): with a current CSV
/// that exists, `AtLatestKnown` and installed; missing, `UpgradePending` (or `UpgradeFailed`
/// when fail-forward upgrades are on and its plan failed). Returns `(state, installedCSV)`;
/// `None` when the Subscription has no current CSV.
pub fn observed_state(
    current_csv: &str,
    csv_exists: bool,
    plan_failed: bool,
    fail_forward: bool,
) -> Option<(&'static str, bool)> {
    if current_csv.is_empty() {
        return None;
    }
    Some(if csv_exists {
        (state::AT_LATEST_KNOWN, true)
    } else if fail_forward && plan_failed {
        (state::UPGRADE_FAILED, false)
    } else {
        (state::UPGRADE_PENDING, false)
    })
}

/// The generation of the next InstallPlan: one past the highest of the existing plans' and the
/// Subscriptions' `installPlanGeneration`.
pub fn next_generation(plans: &[PlanView], subscription_generations: &[i64]) -> i64 {
    let highest = plans
        .iter()
        .map(|p| p.generation)
        .chain(subscription_generations.iter().copied())
        .max()
        .unwrap_or(0);
    highest.max(0) + 1
}

/// InstallPlans to delete so that at most [`MAX_INSTALL_PLANS`] remain: the lowest generations
/// first (then oldest, then by name), looking at no more than ten in one sweep, as upstream's
/// `gcInstallPlans`.
pub fn install_plans_to_collect(plans: &[PlanView]) -> Vec<String> {
    if plans.len() <= MAX_INSTALL_PLANS {
        return Vec::new();
    }
    let mut sorted: Vec<&PlanView> = plans.iter().collect();
    sorted.sort_by(|a, b| {
        a.generation
            .cmp(&b.generation)
            .then_with(|| a.created.cmp(&b.created))
            .then_with(|| a.name.cmp(&b.name))
    });
    let excess = (plans.len() - MAX_INSTALL_PLANS).min(10);
    sorted
        .into_iter()
        .take(excess)
        .map(|p| p.name.clone())
        .collect()
}

/// The conditions a Subscription gets from its InstallPlan (upstream's
/// `InstallPlanStatusReconciler`): pending while it installs or waits for approval, failed when
/// it failed, neither once complete.
pub fn install_plan_conditions(plan: Option<&PlanView>) -> (Option<Condition>, Option<Condition>) {
    let Some(plan) = plan else {
        return (None, None);
    };
    let message = plan
        .installed
        .as_ref()
        .map(|(_, m)| m.clone())
        .unwrap_or_default();
    match plan.phase.as_str() {
        "Complete" => (None, None),
        "Failed" => {
            let reason = plan
                .installed
                .as_ref()
                .map(|(r, _)| r.clone())
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| reason::INSTALL_PLAN_FAILED.to_owned());
            (
                None,
                Some(Condition::holds(
                    condition::INSTALL_PLAN_FAILED,
                    &reason,
                    message,
                )),
            )
        }
        "" => (
            Some(Condition::holds(
                condition::INSTALL_PLAN_PENDING,
                "InstallPlanNotYetReconciled",
                message,
            )),
            None,
        ),
        phase => (
            Some(Condition::holds(
                condition::INSTALL_PLAN_PENDING,
                phase,
                message,
            )),
            None,
        ),
    }
}

/// `CatalogSourcesUnhealthy` from the health of the catalogs a Subscription may use: each
/// `(namespace, name, healthy)`; `missing` when its own catalog does not exist.
pub fn catalog_health_condition(
    catalogs: &[(String, String, bool)],
    own: (&str, &str),
    own_exists: bool,
) -> Condition {
    if catalogs.is_empty() {
        return Condition::holds(
            condition::CATALOG_SOURCES_UNHEALTHY,
            reason::NO_CATALOG_SOURCES_FOUND,
            NO_CATALOG_SOURCES_MESSAGE,
        );
    }
    if !own_exists {
        return Condition::holds(
            condition::CATALOG_SOURCES_UNHEALTHY,
            reason::UNHEALTHY_CATALOG_SOURCE_FOUND,
            format!("targeted catalogsource {}/{} missing", own.0, own.1),
        );
    }
    if let Some((ns, name, _)) = catalogs
        .iter()
        .find(|(ns, name, healthy)| !healthy && ns == own.0 && name == own.1)
    {
        return Condition::holds(
            condition::CATALOG_SOURCES_UNHEALTHY,
            reason::UNHEALTHY_CATALOG_SOURCE_FOUND,
            format!("targeted catalogsource {ns}/{name} unhealthy"),
        );
    }
    Condition {
        kind: condition::CATALOG_SOURCES_UNHEALTHY,
        status: "False",
        reason: reason::ALL_CATALOG_SOURCES_HEALTHY.to_owned(),
        message: ALL_HEALTHY_MESSAGE.to_owned(),
    }
}

/// The name of the Subscription an InstallPlan creates for a dependency no Subscription
/// covers: `<package>-<channel>-<catalog>-<catalog namespace>`.
pub fn dependency_subscription_name(
    package: &str,
    channel: &str,
    catalog: &str,
    catalog_namespace: &str,
) -> String {
    format!("{package}-{channel}-{catalog}-{catalog_namespace}")
}

/// A CSV as the fail-forward rule reads it: name, `spec.replaces`, `status.phase`.
#[derive(Debug, Clone, Default)]
pub struct ChainLink {
    /// Its name.
    pub name: String,
    /// The CSV it replaces.
    pub replaces: String,
    /// Its phase.
    pub phase: String,
}

/// Whether the resolver leaves out the CSV `name` under fail-forward upgrades (seed 001,
/// upstream's `isReplacementChainThatEndsInFailure`): it is `Replacing`, and following the CSVs
/// that replace it, each `Replacing` and none seen twice, ends at one that `Failed`.
pub fn left_out_by_fail_forward(name: &str, csvs: &[ChainLink]) -> bool {
    let by_name = |n: &str| csvs.iter().find(|c| c.name == n);
    let replacement = |n: &str| {
        csvs.iter()
            .find(|c| c.replaces == n && !c.replaces.is_empty())
    };
    let Some(mut current) = by_name(name) else {
        return false;
    };
    let mut seen = std::collections::HashSet::new();
    while let Some(next) = replacement(&current.name) {
        if current.phase != "Replacing" || !seen.insert(current.name.as_str()) {
            return false;
        }
        current = next;
    }
    current.name != name && current.phase == "Failed"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_keep_their_time_when_unchanged() {
        let mut list = Vec::new();
        let c = Condition::holds(
            condition::RESOLUTION_FAILED,
            reason::CONSTRAINTS_NOT_SATISFIABLE,
            "x",
        );
        assert!(set_condition(&mut list, &c, "t1"));
        assert!(!set_condition(&mut list, &c, "t2"));
        assert_eq!(list[0]["lastTransitionTime"], "t1");
        let d = Condition::holds(
            condition::RESOLUTION_FAILED,
            reason::CONSTRAINTS_NOT_SATISFIABLE,
            "y",
        );
        assert!(set_condition(&mut list, &d, "t3"));
        assert_eq!(list.len(), 1);
        assert_eq!(list[0]["message"], "y");
        assert!(remove_condition(&mut list, condition::RESOLUTION_FAILED));
        assert!(list.is_empty());
    }

    #[test]
    fn states_follow_what_exists() {
        assert_eq!(observed_state("", false, false, false), None);
        assert_eq!(
            observed_state("a.v1", true, false, false),
            Some((state::AT_LATEST_KNOWN, true))
        );
        assert_eq!(
            observed_state("a.v1", false, true, false),
            Some((state::UPGRADE_PENDING, false))
        );
        assert_eq!(
            observed_state("a.v1", false, true, true),
            Some((state::UPGRADE_FAILED, false))
        );
    }

    #[test]
    fn generations_and_collection() {
        let plans: Vec<PlanView> = (1..=7)
            .map(|g| PlanView {
                name: format!("install-{g}"),
                generation: g,
                ..PlanView::default()
            })
            .collect();
        assert_eq!(next_generation(&plans, &[3, 9]), 10);
        assert_eq!(next_generation(&[], &[]), 1);
        assert_eq!(
            install_plans_to_collect(&plans),
            vec!["install-1", "install-2"]
        );
        assert!(install_plans_to_collect(&plans[..5]).is_empty());
    }

    #[test]
    fn plan_conditions_as_upstream() {
        let mut plan = PlanView {
            name: "p".into(),
            phase: "RequiresApproval".into(),
            ..PlanView::default()
        };
        assert_eq!(
            install_plan_conditions(Some(&plan)).0.unwrap().reason,
            "RequiresApproval"
        );
        plan.phase = "Failed".into();
        plan.installed = Some(("InstallComponentFailed".into(), "boom".into()));
        let failed = install_plan_conditions(Some(&plan)).1.unwrap();
        assert_eq!(
            (failed.reason.as_str(), failed.message.as_str()),
            ("InstallComponentFailed", "boom")
        );
        plan.phase = "Complete".into();
        assert_eq!(install_plan_conditions(Some(&plan)), (None, None));
    }

    /// After upstream's `fail_forward_test.go` (`TestIsReplacementChainThatEndsInFailure`).
    #[test]
    fn covering_plans() {
        let plan = |name: &str, generation: i64, phase: &str, csvs: &[&str]| PlanView {
            name: name.into(),
            generation,
            phase: phase.into(),
            csvs: csvs.iter().map(|c| (*c).to_owned()).collect(),
            ..PlanView::default()
        };
        let plans = [
            plan("a", 1, "Complete", &["x.v1", "y.v1"]),
            plan("b", 2, "Failed", &["x.v2"]),
            plan("c", 3, "Installing", &["x.v2", "y.v1"]),
        ];
        assert_eq!(
            plan_covering(&plans, &["x.v1"]).map(|p| p.name.as_str()),
            Some("a")
        );
        assert_eq!(
            plan_covering(&plans, &["x.v2"]).map(|p| p.name.as_str()),
            Some("c")
        );
        assert!(plan_covering(&plans, &["x.v1", "z.v1"]).is_none());
        assert!(
            plan_covering(&plans[..2], &["x.v2"]).is_none(),
            "a failed plan covers nothing"
        );
    }

    #[test]
    fn fail_forward_chains() {
        let link = |name: &str, replaces: &str, phase: &str| ChainLink {
            name: name.into(),
            replaces: replaces.into(),
            phase: phase.into(),
        };
        let failed = [
            link("v1", "", "Replacing"),
            link("v2", "v1", "Replacing"),
            link("v3", "v2", "Failed"),
        ];
        assert!(left_out_by_fail_forward("v1", &failed));
        assert!(left_out_by_fail_forward("v2", &failed));
        assert!(
            !left_out_by_fail_forward("v3", &failed),
            "the failed CSV itself stays"
        );
        let succeeded = [link("v1", "", "Replacing"), link("v2", "v1", "Succeeded")];
        assert!(!left_out_by_fail_forward("v1", &succeeded));
        let broken = [link("v1", "", "Succeeded"), link("v2", "v1", "Failed")];
        assert!(
            !left_out_by_fail_forward("v1", &broken),
            "v1 is not Replacing"
        );
        let cycle = [link("a", "b", "Replacing"), link("b", "a", "Replacing")];
        assert!(!left_out_by_fail_forward("a", &cycle));
        assert!(!left_out_by_fail_forward("missing", &failed));
    }

    #[test]
    fn catalog_health_words() {
        let own = ("olm", "community");
        assert_eq!(
            catalog_health_condition(&[], own, false).reason,
            "NoCatalogSourcesFound"
        );
        let list = vec![("olm".to_owned(), "community".to_owned(), false)];
        assert_eq!(
            catalog_health_condition(&list, own, true).message,
            "targeted catalogsource olm/community unhealthy"
        );
        assert_eq!(
            catalog_health_condition(&list, own, false).message,
            "targeted catalogsource olm/community missing"
        );
        let list = vec![("olm".to_owned(), "community".to_owned(), true)];
        let ok = catalog_health_condition(&list, own, true);
        assert_eq!(
            (ok.status, ok.message.as_str()),
            ("False", "all available catalogsources are healthy")
        );
    }
}
