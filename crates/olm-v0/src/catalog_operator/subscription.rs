//! Subscription and InstallPlan decisions of catalog-operator's namespace resolution
//! (`syncResolvingNamespace` in the OLM repo's `pkg/controller/operators/catalog/operator.go`,
//! and the status reconcilers of `pkg/controller/operators/catalog/subscription/`): what a
//! Subscription's status says given what exists, which Subscriptions a resolved bundle
//! satisfies, the approval and generation of a new InstallPlan, and the conditions, in
//! upstream's words.

mod deprecation;
mod plan;
mod status;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use olm_v0_api::v1alpha1::{SubscriptionCondition, SubscriptionConditionType};

pub use deprecation::{Deprecations, deprecated};
pub use plan::{NewBundle, Next, PlanOrder, next, serves};
pub use status::{
    CatalogView, Facts, Observed, observe, plan_failed, planned, resolution_failed, settled,
    unpack_failed, waiting_on_plan,
};

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
    /// The installed bundle's package is deprecated.
    pub const PACKAGE_DEPRECATED: &str = "PackageDeprecated";
    /// The Subscription's channel is deprecated.
    pub const CHANNEL_DEPRECATED: &str = "ChannelDeprecated";
    /// The installed bundle is deprecated.
    pub const BUNDLE_DEPRECATED: &str = "BundleDeprecated";
    /// Any of the three: their notices together.
    pub const DEPRECATED: &str = "Deprecated";
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
/// otherwise it is replaced, stamped `now`. Returns whether anything changed. The message is
/// stored (and compared) bounded, as [`olm_k8s::bounded_message`] bounds every status message.
pub fn set_condition(
    conditions: &mut Vec<SubscriptionCondition>,
    c: &Condition,
    now: &Time,
) -> bool {
    let kind = SubscriptionConditionType::from(c.kind);
    let message = olm_k8s::bounded_message(&c.message);
    let position = conditions.iter().position(|old| old.type_ == kind);
    if let Some(i) = position {
        let old = &conditions[i];
        if old.status == c.status
            && old.reason.as_deref().unwrap_or_default() == c.reason
            && old.message.as_deref().unwrap_or_default() == message
        {
            return false;
        }
    }
    let fresh = SubscriptionCondition {
        type_: kind,
        status: c.status.to_owned(),
        reason: (!c.reason.is_empty()).then(|| c.reason.clone()),
        message: (!message.is_empty()).then(|| message.into_owned()),
        last_heartbeat_time: None,
        last_transition_time: Some(now.clone()),
    };
    match position {
        Some(i) => conditions[i] = fresh,
        None => conditions.push(fresh),
    }
    true
}

/// Removes the condition of type `kind`; returns whether it was there.
pub fn remove_condition(conditions: &mut Vec<SubscriptionCondition>, kind: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_.as_str() != kind);
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

impl PlanView {
    /// What is read of `plan`.
    pub fn of(plan: &olm_v0_api::v1alpha1::InstallPlan) -> PlanView {
        let status = plan.status.as_ref();
        let installed = status
            .and_then(|s| {
                s.conditions.iter().find(|c| {
                    c.type_ == Some(olm_v0_api::v1alpha1::InstallPlanConditionType::Installed)
                })
            })
            .map(|c| {
                (
                    c.reason.clone().unwrap_or_default(),
                    c.message.clone().unwrap_or_default(),
                )
            });
        PlanView {
            name: plan.metadata.name.clone().unwrap_or_default(),
            generation: plan.spec.generation.unwrap_or(0),
            phase: status
                .map(|s| s.phase.as_str().to_owned())
                .unwrap_or_default(),
            installed,
            csvs: plan.spec.cluster_service_version_names.clone(),
            created: plan
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0.to_string())
                .unwrap_or_default(),
        }
    }
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

/// How long a plan made by hand keeps no phase, so that its maker's own status write — tools
/// (and upstream's e2e suite) create a plan and write its phase and steps a moment later —
/// meets no write of OLM's and does not conflict.
pub const HAND_MADE_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// What becomes of an InstallPlan no Subscription made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandMade {
    /// Its phase becomes this.
    Phase(&'static str),
    /// Look again after this long (its maker may still write its status).
    After(std::time::Duration),
}

/// The next phase of an InstallPlan no Subscription made — one a user created (seed 004) — as
/// upstream's `transitionInstallPlanState` moves it: none → `Planning` → `RequiresApproval`
/// (`Manual` and not yet approved) or `Installing`; then it runs the steps in its status, if
/// any, like any plan. `None` for the phases past planning. Upstream no longer plans the CSVs
/// such a plan names, and neither does olm: without steps it completes having installed
/// nothing.
///
/// A plan that names no CSV is left alone until its maker writes a phase, as upstream leaves
/// every plan without one: tools (and upstream's own e2e suite) create a plan and then write
/// its status — phase and steps — themselves, and a phase written in between would make that
/// write conflict. One that names CSVs is left alone for [`HAND_MADE_GRACE`] after it was made
/// (`age`), for the same reason: upstream's slower queue usually lets the maker's write land
/// first, and olm, which answers within milliseconds, would otherwise win the race.
pub fn hand_made_plan_phase(
    phase: &str,
    names_csvs: bool,
    manual: bool,
    approved: bool,
    age: std::time::Duration,
) -> Option<HandMade> {
    match phase {
        "" if !names_csvs => None,
        "" if age < HAND_MADE_GRACE => Some(HandMade::After(HAND_MADE_GRACE - age)),
        "" => Some(HandMade::Phase("Planning")),
        "Planning" if manual && !approved => Some(HandMade::Phase("RequiresApproval")),
        "Planning" => Some(HandMade::Phase("Installing")),
        _ => None,
    }
}

/// Where a Subscription's InstallPlan is, as [`observed_state`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanProgress {
    /// No plan is referenced, or it completed, or it is gone without having failed.
    Done,
    /// The plan waits for approval or is installing.
    Running,
    /// The plan failed (or a failed plan was deleted).
    Failed,
}

/// What a Subscription's state becomes given what exists (upstream's step 3): with a current CSV
/// that exists, `AtLatestKnown` and installed; missing, `UpgradePending` (or `UpgradeFailed`
/// when fail-forward upgrades are on and its plan failed). `current_phase` is the current CSV's
/// phase, `None` when it does not exist. Returns `(state, installedCSV)`; `None` when the
/// Subscription has no current CSV.
///
/// A plan creates its CSV first and can fail on a later step. Upstream calls the CSV installed
/// as soon as it exists, and when the plan then fails the next resolution finds the CSV it was
/// to replace unclaimed and the upgrade stuck; here the CSV counts as installed once its plan
/// is done, or once the CSV has `Succeeded`, so the Subscription keeps the CSV it had and a
/// failed upgrade can be retried or replaced. A CSV the Subscription already recorded as
/// installed (`installed_csv`) stays installed while it exists, as upstream's does, whatever
/// its plan says later.
pub fn observed_state(
    current_csv: &str,
    current_phase: Option<&str>,
    plan: PlanProgress,
    fail_forward: bool,
    installed_csv: &str,
) -> Option<(&'static str, bool)> {
    if current_csv.is_empty() {
        return None;
    }
    let recorded = installed_csv == current_csv;
    Some(match (current_phase, plan) {
        (Some(_), _) if recorded => (state::AT_LATEST_KNOWN, true),
        (Some(_), PlanProgress::Done) | (Some("Succeeded"), _) => (state::AT_LATEST_KNOWN, true),
        (_, PlanProgress::Failed) if fail_forward => (state::UPGRADE_FAILED, false),
        _ => (state::UPGRADE_PENDING, false),
    })
}

/// What becomes of a Subscription whose `installPlanRef` names a plan that is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanGone {
    /// The plan had installed the current CSV (say the five-plan rule collected it):
    /// `InstallPlanMissing`, nothing else changes.
    Missing,
    /// The plan went before it installed the current CSV — still installing, or failed and
    /// deleted by the user to retry (seed 001): the reference and state go, the current CSV
    /// falls back to the installed one, and the namespace is resolved again. `leftover` is a
    /// CSV the plan created that never succeeded: it is deleted, or the new resolution would
    /// find it unclaimed and the CSV it was to replace stuck `Replacing`.
    Retry {
        /// The plan's CSV to delete.
        leftover: Option<String>,
    },
}

/// [`PlanGone`] for a Subscription in `state` (after [`observed_state`]) whose plan is gone;
/// `current_phase` is the current CSV's phase, `None` when it does not exist.
pub fn plan_gone(
    state: &str,
    current_csv: &str,
    current_phase: Option<&str>,
    installed_csv: &str,
) -> PlanGone {
    if state != state::UPGRADE_PENDING && state != state::UPGRADE_FAILED {
        return PlanGone::Missing;
    }
    let leftover = (current_csv != installed_csv
        && current_phase.is_some_and(|p| p != "Succeeded"))
    .then(|| current_csv.to_owned());
    PlanGone::Retry { leftover }
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

/// A CSV as the resolution's set-aside rules read it: name, `spec.replaces`, `status.phase`.
#[derive(Debug, Clone, Default)]
pub struct ChainLink {
    /// Its name.
    pub name: String,
    /// The CSV it replaces.
    pub replaces: String,
    /// Its phase.
    pub phase: String,
}

/// A Subscription as the set-aside rules read it.
#[derive(Debug, Clone, Default)]
pub struct Claim {
    /// `status.installedCSV`.
    pub installed_csv: String,
    /// `status.currentCSV`.
    pub current_csv: String,
    /// Its InstallPlan failed (or a failed plan was deleted).
    pub plan_failed: bool,
}

/// Why an existing CSV is not handed to the resolver. Upstream hands every CSV no Subscription
/// has installed to the resolver as one that must stay ("clusterserviceversion X exists and is
/// not referenced by a subscription"), which conflicts with the upgrade under way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetAside {
    /// A Subscription's installed CSV replaces it, directly or along a chain: it is on its way
    /// out as the upgrade goes on, whether the new CSV is installing or held by
    /// `Upgradeable=False`.
    Upgraded,
    /// Fail-forward upgrades: it is `Replacing` along a chain ending in a `Failed` CSV (seed 001,
    /// upstream's `isReplacementChainThatEndsInFailure`).
    FailForward,
    /// A Subscription's current CSV, created by its plan before the plan failed, that never
    /// succeeded: the upgrade to retry or to replace. Deleted when that happens.
    FailedPlan,
}

/// The existing CSVs the resolver does not see, each with why: see [`SetAside`].
pub fn set_aside(
    csvs: &[ChainLink],
    subs: &[Claim],
    fail_forward: bool,
) -> std::collections::BTreeMap<String, SetAside> {
    let by_name = |n: &str| csvs.iter().find(|c| c.name == n && !n.is_empty());
    let mut out = std::collections::BTreeMap::new();
    for sub in subs {
        if sub.plan_failed
            && sub.current_csv != sub.installed_csv
            && by_name(&sub.current_csv).is_some_and(|c| c.phase != "Succeeded")
        {
            out.insert(sub.current_csv.clone(), SetAside::FailedPlan);
        }
        let Some(installed) = by_name(&sub.installed_csv) else {
            continue;
        };
        let mut seen = std::collections::HashSet::from([installed.name.as_str()]);
        let mut older = by_name(&installed.replaces);
        while let Some(c) = older {
            if !seen.insert(c.name.as_str()) {
                break;
            }
            out.entry(c.name.clone()).or_insert(SetAside::Upgraded);
            older = by_name(&c.replaces);
        }
    }
    if fail_forward {
        for c in csvs {
            if !out.contains_key(&c.name) && left_out_by_fail_forward(&c.name, csvs) {
                out.insert(c.name.clone(), SetAside::FailForward);
            }
        }
    }
    out
}

/// Whether the resolver leaves out the CSV `name` under fail-forward upgrades (seed 001,
/// upstream's `isReplacementChainThatEndsInFailure`): it is `Replacing`, and following the CSVs
/// that replace it, each `Replacing` and none seen twice, ends at one that `Failed`.
fn left_out_by_fail_forward(name: &str, csvs: &[ChainLink]) -> bool {
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

    /// A time `secs` seconds after the epoch.
    pub(super) fn at(secs: i64) -> Time {
        Time(jiff::Timestamp::from_second(secs).unwrap_or_default())
    }

    #[test]
    fn conditions_keep_their_time_when_unchanged() {
        let mut list = Vec::new();
        let c = Condition::holds(
            condition::RESOLUTION_FAILED,
            reason::CONSTRAINTS_NOT_SATISFIABLE,
            "x",
        );
        assert!(set_condition(&mut list, &c, &at(1)));
        assert!(!set_condition(&mut list, &c, &at(2)));
        assert_eq!(list[0].last_transition_time, Some(at(1)));
        let d = Condition::holds(
            condition::RESOLUTION_FAILED,
            reason::CONSTRAINTS_NOT_SATISFIABLE,
            "y",
        );
        assert!(set_condition(&mut list, &d, &at(3)));
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].message.as_deref(), Some("y"));
        assert!(remove_condition(&mut list, condition::RESOLUTION_FAILED));
        assert!(list.is_empty());
    }

    /// A resolver's explanation can run to megabytes: it is stored as every status message is
    /// (upstream's 32768 bytes and suffix), and deciding it again changes nothing.
    #[test]
    fn long_messages_are_bounded_and_stable() {
        let long = "constraints not satisfiable: ".repeat(5000);
        let c = Condition::holds(
            condition::RESOLUTION_FAILED,
            reason::CONSTRAINTS_NOT_SATISFIABLE,
            long.clone(),
        );
        let mut list = Vec::new();
        assert!(set_condition(&mut list, &c, &at(1)));
        let stored = list[0].message.as_deref().unwrap_or_default();
        assert_eq!(stored, olm_k8s::bounded_message(&long));
        assert!(stored.ends_with(olm_k8s::TRUNCATION_SUFFIX));
        assert!(!set_condition(&mut list, &c, &at(2)));
        assert_eq!(list[0].last_transition_time, Some(at(1)));
    }

    #[test]
    fn states_follow_what_exists() {
        use PlanProgress::{Done, Failed, Running};
        assert_eq!(observed_state("", None, Done, false, ""), None);
        assert_eq!(
            observed_state("a.v1", Some("Pending"), Done, false, ""),
            Some((state::AT_LATEST_KNOWN, true))
        );
        assert_eq!(
            observed_state("a.v1", None, Running, false, ""),
            Some((state::UPGRADE_PENDING, false))
        );
        assert_eq!(
            observed_state("a.v1", None, Failed, false, ""),
            Some((state::UPGRADE_PENDING, false))
        );
        assert_eq!(
            observed_state("a.v1", None, Failed, true, ""),
            Some((state::UPGRADE_FAILED, false))
        );
        assert_eq!(
            observed_state("a.v1", None, Done, true, ""),
            Some((state::UPGRADE_PENDING, false))
        );
    }

    /// Upstream's e2e "can reconcile InstallPlan status" (`subscription_e2e_test.go`): the
    /// installed CSV's plan is marked failed, then deleted, and the Subscription must report
    /// `InstallPlanMissing` — so its state stays `AtLatestKnown` whatever the CSV's phase.
    #[test]
    fn a_recorded_install_stays_installed() {
        use PlanProgress::Failed;
        assert_eq!(
            observed_state("a.v1", Some("Installing"), Failed, false, "a.v1"),
            Some((state::AT_LATEST_KNOWN, true))
        );
        assert_eq!(
            observed_state("a.v2", Some("Installing"), Failed, false, "a.v1"),
            Some((state::UPGRADE_PENDING, false)),
            "an upgrade's CSV is not recorded yet"
        );
        assert_eq!(
            observed_state("a.v1", None, Failed, false, "a.v1"),
            Some((state::UPGRADE_PENDING, false)),
            "gone"
        );
    }

    /// A plan that created its CSV and then failed on a later step (seed 001, "When an
    /// InstallPlan failed"): the CSV is not installed while the plan runs, nor after it failed,
    /// unless it succeeded.
    #[test]
    fn a_failed_plan_installs_nothing_that_did_not_succeed() {
        use PlanProgress::{Failed, Running};
        assert_eq!(
            observed_state("a.v2", Some("Pending"), Running, false, ""),
            Some((state::UPGRADE_PENDING, false))
        );
        assert_eq!(
            observed_state("a.v2", Some("Pending"), Failed, false, ""),
            Some((state::UPGRADE_PENDING, false))
        );
        assert_eq!(
            observed_state("a.v2", Some("Pending"), Failed, true, ""),
            Some((state::UPGRADE_FAILED, false))
        );
        assert_eq!(
            observed_state("a.v2", Some("Succeeded"), Failed, true, ""),
            Some((state::AT_LATEST_KNOWN, true))
        );
    }

    /// Upstream's `transitionInstallPlanState` (`pkg/controller/operators/catalog/operator.go`)
    /// for a plan created by hand, once its maker has had [`HAND_MADE_GRACE`] to write its
    /// status.
    #[test]
    fn hand_made_plans_move_through_planning() {
        use std::time::Duration;
        let old = HAND_MADE_GRACE;
        let phase = |p| Some(HandMade::Phase(p));
        assert_eq!(
            hand_made_plan_phase("", true, false, false, old),
            phase("Planning")
        );
        assert_eq!(
            hand_made_plan_phase("", true, false, false, Duration::from_millis(500)),
            Some(HandMade::After(Duration::from_millis(1500))),
            "just made: its maker may still write its status"
        );
        let table = [
            ("Planning", true, false, phase("RequiresApproval")),
            ("Planning", true, true, phase("Installing")),
            ("Planning", false, false, phase("Installing")),
            ("Installing", false, true, None),
            ("RequiresApproval", true, false, None),
        ];
        for (from, manual, approved, want) in table {
            assert_eq!(
                hand_made_plan_phase(from, true, manual, approved, old),
                want,
                "{from}"
            );
        }
    }

    /// Upstream's `transitionInstallPlanState` has no case for a plan without a phase; its e2e
    /// suite (`installplan_e2e_test.go`, "it can be updated by an InstallPlan step") creates
    /// such a plan naming no CSV and then writes its status.
    #[test]
    fn a_plan_naming_no_csv_waits_for_its_maker_to_write_a_phase() {
        let old = HAND_MADE_GRACE * 10;
        assert_eq!(hand_made_plan_phase("", false, false, true, old), None);
        assert_eq!(hand_made_plan_phase("", false, true, false, old), None);
        assert_eq!(
            hand_made_plan_phase("Installing", false, false, true, old),
            None
        );
    }

    #[test]
    fn a_gone_plan() {
        assert_eq!(
            plan_gone(state::AT_LATEST_KNOWN, "a.v2", Some("Succeeded"), "a.v2"),
            PlanGone::Missing,
            "collected after it installed its CSV"
        );
        assert_eq!(
            plan_gone(state::UPGRADE_PENDING, "a.v2", Some("Pending"), "a.v1"),
            PlanGone::Retry {
                leftover: Some("a.v2".into())
            },
            "the failed plan deleted to retry: its CSV goes"
        );
        assert_eq!(
            plan_gone(state::UPGRADE_FAILED, "a.v2", None, "a.v1"),
            PlanGone::Retry { leftover: None }
        );
        assert_eq!(
            plan_gone(state::UPGRADE_PENDING, "a.v1", Some("Pending"), ""),
            PlanGone::Retry {
                leftover: Some("a.v1".into())
            },
            "a first install's plan"
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

    /// After upstream's `fail_forward_test.go` (`TestIsReplacementChainThatEndsInFailure`).
    #[test]
    fn fail_forward_chains() {
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

    fn link(name: &str, replaces: &str, phase: &str) -> ChainLink {
        ChainLink {
            name: name.into(),
            replaces: replaces.into(),
            phase: phase.into(),
        }
    }

    fn claim(installed: &str, current: &str, plan_failed: bool) -> Claim {
        Claim {
            installed_csv: installed.into(),
            current_csv: current.into(),
            plan_failed,
        }
    }

    /// An upgrade under way (or held by `Upgradeable=False`) is not a resolution conflict: the
    /// CSVs the installed one replaces are set aside, in either upgrade strategy.
    #[test]
    fn upgrades_under_way_are_set_aside() {
        let csvs = [
            link("a.v1", "", "Replacing"),
            link("a.v2", "a.v1", "Pending"),
            link("b.v1", "", "Succeeded"),
        ];
        let subs = [claim("a.v2", "a.v2", false), claim("", "", false)];
        for ff in [false, true] {
            let aside = set_aside(&csvs, &subs, ff);
            assert_eq!(
                aside.into_iter().collect::<Vec<_>>(),
                vec![("a.v1".to_owned(), SetAside::Upgraded)],
                "b.v1 is installed by hand and stays"
            );
        }
        // A chain: v1 and v2 both make way for v3.
        let chain = [
            link("a.v1", "", "Replacing"),
            link("a.v2", "a.v1", "Replacing"),
            link("a.v3", "a.v2", "Succeeded"),
        ];
        let aside = set_aside(&chain, &[claim("a.v3", "a.v3", false)], true);
        assert_eq!(aside.len(), 2);
        let cycle = [link("a", "b", "Replacing"), link("b", "a", "Replacing")];
        assert_eq!(
            set_aside(&cycle, &[claim("a", "a", false)], false).len(),
            1,
            "a cycle ends"
        );
    }

    /// Seed 001, "When one or more CSVs have failed": v1 Replacing, v2 Failed and installed.
    #[test]
    fn failed_csvs_fail_forward() {
        let csvs = [
            link("a.v1", "", "Replacing"),
            link("a.v2", "a.v1", "Failed"),
        ];
        let aside = set_aside(&csvs, &[], true);
        assert_eq!(aside.get("a.v1"), Some(&SetAside::FailForward));
        assert!(set_aside(&csvs, &[], false).is_empty());
    }

    /// Seed 001, "When an InstallPlan failed": the plan created v2 and failed; v1 stays the
    /// installed CSV, v2 is set aside so a v3 replacing v1 can be planned.
    #[test]
    fn failed_plans_set_their_csv_aside() {
        let csvs = [
            link("a.v1", "", "Replacing"),
            link("a.v2", "a.v1", "Pending"),
        ];
        let aside = set_aside(&csvs, &[claim("a.v1", "a.v2", true)], false);
        assert_eq!(
            aside.into_iter().collect::<Vec<_>>(),
            vec![("a.v2".to_owned(), SetAside::FailedPlan)]
        );
        let succeeded = [
            link("a.v1", "", "Replacing"),
            link("a.v2", "a.v1", "Succeeded"),
        ];
        assert!(
            !set_aside(&succeeded, &[claim("a.v1", "a.v2", true)], false).contains_key("a.v2"),
            "a CSV that succeeded despite its plan is kept"
        );
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
