//! catalog-operator's namespace resolution on a cluster (upstream's `syncResolvingNamespace`):
//! for a namespace with Subscriptions, bring their status in line with what exists, resolve them
//! against the catalogs, and write an InstallPlan for what is new.
//!
//! One pass, decided by `olm_v0::subscription` and `olm_v0_resolver`:
//! 1. InstallPlans beyond the newest five are deleted.
//! 2. Each Subscription's state follows its current CSV (installed or pending) and its
//!    InstallPlan's phase (the `InstallPlanPending`/`InstallPlanFailed` conditions), and
//!    `CatalogSourcesUnhealthy` follows its catalogs; a changed status is written and the pass
//!    ends there (the write wakes the next one).
//! 3. When some Subscription is not waiting on a plan, the namespace is resolved from its
//!    catalogs' content (held in memory, see [`super::catalogs`]) and its installed CSVs. An
//!    unsatisfiable namespace gets `ResolutionFailed` on every Subscription and a Warning event;
//!    an error is retried with backoff.
//! 4. New bundles' manifests come inline from the registry or from the bundle image, which
//!    `olm` pulls itself (upstream runs an unpack Job per bundle); the steps and the plan are
//!    written, and the Subscriptions point at it.
//!
//! Passes are woken by Subscription, InstallPlan, CSV and OperatorGroup changes in the
//! namespace, and by any catalog's content changing; there is no periodic resync.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::channel::mpsc;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType};
use olm_v0::steps::{Step, bundle_steps, order_steps, subscription_step};
use olm_v0::subscription::{self as decide, Condition, PlanView, condition, reason, state};
use olm_v0_api::v1alpha1::{InstallPlan, Subscription};
use olm_v0_resolver::{self as resolver, Catalog, Entry, ResolveError, Resolved, SourceKey};
use serde_json::{Value, json};
use tracing::{info, warn};

use super::Index;
use super::catalogs::Fetched;
use super::connection::Connections;
use super::error::Error;
use super::queue;
use crate::bundles::{BundleOptions, Bundles};
use crate::context::Shared;
use crate::written::Written;

/// The name the Subscription controller's metrics and logs go by.
pub const SUBSCRIPTION_CONTROLLER: &str = "subscription";
/// How long a completed plan's CSVs are trusted to be on their way into the cache.
const RECENT_PLAN: Duration = Duration::from_secs(30);
/// The OperatorGroup annotation that keeps the global catalog namespace out of resolution.
const EXCLUDE_GLOBAL_CATALOGS: &str =
    "olm.operatorframework.io/exclude-global-namespace-resolution";

struct Ctx {
    shared: Arc<Shared>,
    index: Index,
    connections: Connections,
    bundles: Bundles,
    /// Subscription statuses as last written (`namespace/name`): the cache may not have them
    /// yet when the next pass runs, and a pass on a stale status would resolve twice.
    statuses: Written<Value>,
    /// InstallPlans created whose watch event may not have arrived, by namespace.
    created: std::sync::Mutex<HashMap<String, Vec<PlanView>>>,
    /// CSVs of failed plans deleted (`namespace/name`) whose deletion the cache may not show yet.
    deleted: std::sync::Mutex<HashSet<String>>,
}

/// Namespaces resolved at once: one namespace waiting on a slow registry for a bundle leaves
/// the others to proceed.
const WORKERS: usize = 4;

/// Runs the controller until `stop` resolves: `woken` names namespaces to look at, `changed`
/// names CatalogSources (`namespace/name`) whose content changed.
pub async fn run(
    shared: Arc<Shared>,
    index: Index,
    connections: Connections,
    woken: mpsc::Receiver<String>,
    changed: mpsc::Receiver<String>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let bundles = Bundles::new(
        shared.images.clone(),
        BundleOptions::new(shared.cache_dir.join("v0-bundles")),
    );
    let ctx = Arc::new(Ctx {
        shared: shared.clone(),
        index,
        connections,
        bundles,
        statuses: Written::default(),
        created: std::sync::Mutex::default(),
        deleted: std::sync::Mutex::default(),
    });
    // v0 bundle pulls use the global pull secret as v1's do.
    let pull_secret = shared.global_pull_secret.clone().map(|(namespace, name)| {
        let ctx = ctx.clone();
        tokio::spawn(async move {
            let client = ctx.shared.client.clone();
            ctx.bundles
                .watch_pull_secret(client, &namespace, &name, std::future::pending::<()>())
                .await;
        })
    });
    let catalog_namespaces = {
        let ctx = ctx.clone();
        changed.map(move |key: String| {
            let namespace = key
                .split_once('/')
                .map(|(ns, _)| ns.to_owned())
                .unwrap_or_default();
            namespaces_using(&ctx, &namespace)
        })
    };
    let inputs = futures::stream::select(woken.map(|ns| vec![ns]), catalog_namespaces);
    queue::run(
        SUBSCRIPTION_CONTROLLER,
        shared,
        inputs,
        stop,
        WORKERS,
        |namespace| {
            let ctx = ctx.clone();
            async move { sync(&ctx, &namespace).await }
        },
    )
    .await;
    if let Some(task) = pull_secret {
        task.abort();
    }
}

/// The namespaces whose Subscriptions may use catalogs of `catalog_namespace`: that namespace,
/// or every namespace with Subscriptions when it is the global one.
fn namespaces_using(ctx: &Ctx, catalog_namespace: &str) -> Vec<String> {
    let all: BTreeSet<String> = ctx
        .index
        .subscriptions
        .state()
        .iter()
        .filter_map(|s| s.namespace())
        .collect();
    if catalog_namespace == ctx.shared.system_namespace {
        all.into_iter().collect()
    } else {
        all.into_iter()
            .filter(|ns| ns == catalog_namespace)
            .collect()
    }
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn now() -> String {
    super::now().0.to_string()
}

/// A Subscription as JSON, with its status (an object) apart.
struct Sub {
    value: Value,
    status: Value,
}

impl Sub {
    fn name(&self) -> &str {
        text(&self.value, "/metadata/name")
    }
    fn spec(&self, key: &str) -> &str {
        self.value
            .pointer(&format!("/spec/{key}"))
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
    fn status_text(&self, key: &str) -> &str {
        self.status
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
    fn conditions(&mut self) -> &mut Vec<Value> {
        if !self.status.get("conditions").is_some_and(Value::is_array) {
            self.status["conditions"] = json!([]);
        }
        match self.status.get_mut("conditions") {
            Some(Value::Array(list)) => list,
            _ => unreachable!("conditions was just made a list"),
        }
    }
    fn catalog(&self) -> SourceKey {
        SourceKey::new(self.spec("source"), self.spec("sourceNamespace"))
    }
    fn view(&self) -> resolver::Subscription {
        resolver::Subscription {
            name: self.name().to_owned(),
            namespace: text(&self.value, "/metadata/namespace").to_owned(),
            package: self.spec("name").to_owned(),
            channel: self.spec("channel").to_owned(),
            catalog: self.catalog(),
            starting_csv: self.spec("startingCSV").to_owned(),
            installed_csv: self.status_text("installedCSV").to_owned(),
        }
    }
    fn manual(&self) -> bool {
        self.spec("installPlanApproval") == "Manual"
    }
}

fn plan_view(plan: &InstallPlan) -> PlanView {
    let value = serde_json::to_value(plan).unwrap_or_default();
    let installed = value
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| text(c, "/type") == "Installed")
        .map(|c| {
            (
                text(c, "/reason").to_owned(),
                text(c, "/message").to_owned(),
            )
        });
    PlanView {
        name: plan.name_any(),
        generation: plan.spec.generation.unwrap_or(0),
        phase: text(&value, "/status/phase").to_owned(),
        installed,
        csvs: plan.spec.cluster_service_version_names.clone(),
        created: plan
            .creation_timestamp()
            .map(|t| t.0.to_string())
            .unwrap_or_default(),
    }
}

/// One pass over `namespace`; `Some(delay)` asks for another pass after it.
async fn sync(ctx: &Ctx, namespace: &str) -> Result<Option<Duration>, Error> {
    let (plans, views) = plans_of(ctx, namespace).await?;
    let mut subs = subscriptions_of(ctx, namespace);
    if subs.is_empty() {
        return Ok(None);
    }
    let csvs = ctx.index.csvs_in(namespace);
    // Each CSV's phase ("" before it has one), by name.
    let csv_phases: HashMap<String, String> = csvs
        .iter()
        .map(|c| {
            let phase = serde_json::to_value(c.status.as_ref().map(|s| &s.phase))
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            (c.name_any(), phase)
        })
        .collect();
    let clock = super::now().0;
    let stamp = clock.to_string();
    let catalogs = visible_catalogs(ctx, namespace);
    // UnsafeFailForward upgrades: the namespace's one OperatorGroup opts in (upstream requires
    // exactly one group; with none or several the default strategy holds here).
    let groups = ctx.index.groups_in(namespace);
    let fail_forward = matches!(groups.as_slice(), [g] if g.spec.upgrade_strategy
        == Some(olm_v0_api::v1::UpgradeStrategy::TechPreviewUnsafeFailForward));

    // Status from what exists.
    let mut wrote = false;
    for sub in &mut subs {
        let old = sub.status.clone();
        let leftover = observe(sub, &csv_phases, &views, &catalogs, fail_forward, &stamp);
        if let Some(csv) = leftover {
            delete_leftover(ctx, namespace, &csv).await?;
        }
        if sub.status != old {
            write_status(ctx, namespace, sub, &old).await?;
            wrote = true;
        }
    }
    if wrote {
        return Ok(None);
    }
    let waiting = |s: &Sub| {
        s.status.get("installPlanRef").is_some() && s.status_text("state") == state::UPGRADE_PENDING
    };
    if subs.iter().all(waiting) {
        return Ok(None);
    }

    // Resolution.
    let contents: Vec<(SourceKey, i64, Option<Fetched>)> = catalogs
        .iter()
        .map(|(key, priority, _)| {
            (
                key.clone(),
                *priority,
                ctx.connections
                    .contents
                    .get(&format!("{}/{}", key.namespace, key.name)),
            )
        })
        .collect();
    let resolver_catalogs: Vec<Catalog<'_>> = contents
        .iter()
        .map(|(key, priority, content)| Catalog {
            key: key.clone(),
            priority: *priority,
            entries: match content.as_deref() {
                Some(Ok(c)) => Ok(c.entries.as_slice()),
                Some(Err(e)) => Err(e.clone()),
                None => Err("the catalog's registry is not ready yet".to_owned()),
            },
        })
        .collect();
    let views_by_sub: Vec<resolver::Subscription> = subs.iter().map(Sub::view).collect();
    let claims: Vec<decide::Claim> = subs
        .iter()
        .map(|s| decide::Claim {
            installed_csv: s.status_text("installedCSV").to_owned(),
            current_csv: s.status_text("currentCSV").to_owned(),
            plan_failed: plan_failed(s, &views),
        })
        .collect();
    let (existing, aside) = existing_entries(
        ctx,
        namespace,
        &csvs,
        &views_by_sub,
        &subs,
        &claims,
        fail_forward,
    )?;
    let resolved = match resolver::resolve(namespace, &views_by_sub, &existing, &resolver_catalogs)
    {
        Ok(r) => r,
        Err(e) => return resolution_failed(ctx, namespace, &mut subs, &e, &stamp).await,
    };

    // What is new, and which Subscription each new bundle serves.
    let new: Vec<&Resolved> = resolved
        .iter()
        .filter(|r| !csv_phases.contains_key(&r.entry.name))
        .collect();
    // Unpack conditions stay until this pass knows whether unpacking works: clearing them
    // first and setting them again would make two writes, each waking the next pass.
    for sub in &mut subs {
        let old = sub.status.clone();
        decide::remove_condition(sub.conditions(), condition::RESOLUTION_FAILED);
        drop_empty_conditions(&mut sub.status);
        write_status(ctx, namespace, sub, &old).await?;
    }
    if new.is_empty() {
        return unpacked(ctx, namespace, &mut subs, None).await;
    }
    // Nothing new since the last plan: every new bundle is already its Subscription's current
    // CSV (say a failed plan under fail-forward, waiting for the catalog to offer a fix) and
    // every dependency's Subscription exists. Another plan would only fail the same way.
    let existing_subs: HashSet<&str> = subs.iter().map(Sub::name).collect();
    let unchanged = new.iter().all(|r| {
        let entry = &r.entry;
        match subs.iter().find(|s| serves(s, entry)) {
            Some(s) => s.status_text("currentCSV") == entry.name,
            None => existing_subs.contains(
                decide::dependency_subscription_name(
                    &entry.package,
                    &entry.channel,
                    &entry.catalog.name,
                    &entry.catalog.namespace,
                )
                .as_str(),
            ),
        }
    });
    if unchanged {
        return unpacked(ctx, namespace, &mut subs, None).await;
    }
    // A plan for exactly these CSVs is under way (its progress wakes the next pass), or finished
    // a moment ago and the CSV cache has not caught up: no second plan.
    let names: Vec<&str> = new.iter().map(|r| r.entry.name.as_str()).collect();
    if let Some(plan) = decide::plan_covering(&views, &names) {
        if plan.phase != "Complete" {
            return unpacked(ctx, namespace, &mut subs, None).await;
        }
        let age = plan
            .created
            .parse::<jiff::Timestamp>()
            .map(|t| clock.duration_since(t).unsigned_abs())
            .unwrap_or_default();
        if age < RECENT_PLAN {
            return unpacked(ctx, namespace, &mut subs, Some(RECENT_PLAN - age)).await;
        }
    }
    let mut steps: Vec<Step> = Vec::new();
    let mut served: HashMap<usize, String> = HashMap::new();
    for r in &new {
        let entry = &r.entry;
        match subs.iter().position(|s| serves(s, entry)) {
            Some(i) => {
                served.insert(i, entry.name.clone());
            }
            None => steps.push(subscription_step(
                namespace,
                &entry.name,
                &entry.package,
                &entry.channel,
                &entry.catalog.name,
                &entry.catalog.namespace,
            )),
        }
        let objects = match manifests(ctx, entry, &contents).await {
            Ok(o) => o,
            Err(message) => {
                return unpack_failed(ctx, namespace, &mut subs, &message, &stamp).await;
            }
        };
        let properties = resolver::entry::properties_annotation(&entry.properties);
        let bundle = bundle_steps(
            &objects,
            namespace,
            &entry.replaces,
            &properties,
            &entry.catalog.name,
            &entry.catalog.namespace,
        )
        .map_err(|e| Error::Retry(format!("failed to turn bundle into steps: {e}")))?;
        steps.extend(bundle);
    }
    let steps = order_steps(steps);
    // The CSVs that failed plans created and that these bundles now take the place of: the CSV
    // they replace could not make way for them otherwise.
    for i in served.keys() {
        let current = subs[*i].status_text("currentCSV");
        if aside.get(current) == Some(&decide::SetAside::FailedPlan) {
            delete_leftover(ctx, namespace, current).await?;
        }
    }
    let generations: Vec<i64> = subs
        .iter()
        .filter_map(|s| {
            s.status
                .get("installPlanGeneration")
                .and_then(Value::as_i64)
        })
        .collect();
    let generation = decide::next_generation(&views, &generations);
    let manual = subs.iter().any(Sub::manual);
    let csv_names: Vec<String> = new.iter().map(|r| r.entry.name.clone()).collect();
    let catalog_names: BTreeSet<String> =
        new.iter().map(|r| r.entry.catalog.name.clone()).collect();
    let plan = ensure_plan(
        ctx,
        namespace,
        &subs,
        generation,
        manual,
        &csv_names,
        &steps,
        &catalog_names,
        &plans,
    )
    .await?;
    point_at_plan(ctx, namespace, &mut subs, &plan, &served, generation).await?;
    Ok(None)
}

/// The catalogs `namespace` may use: its own and the global namespace's (unless its
/// OperatorGroup excludes them), with their priority and health.
fn visible_catalogs(ctx: &Ctx, namespace: &str) -> Vec<(SourceKey, i64, bool)> {
    let global = &ctx.shared.system_namespace;
    let exclude_global = ctx.index.groups_in(namespace).iter().any(|g| {
        g.annotations()
            .get(EXCLUDE_GLOBAL_CATALOGS)
            .is_some_and(|v| v == "true")
    });
    let mut out: Vec<(SourceKey, i64, bool)> = ctx
        .index
        .catalogsources
        .state()
        .iter()
        .filter(|c| {
            let ns = c.namespace().unwrap_or_default();
            ns == namespace || (!exclude_global && ns == *global)
        })
        .map(|c| {
            let key = SourceKey::new(&c.name_any(), &c.namespace().unwrap_or_default());
            let healthy = ctx
                .connections
                .state(&format!("{}/{}", key.namespace, key.name))
                .is_some_and(|s| s.observed == "READY");
            (key, c.spec.priority.unwrap_or(0), healthy)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Whether the Subscription's plan failed: it says so, or it is gone and the Subscription still
/// carries its `InstallPlanFailed` (the user deleted the failed plan to retry).
fn plan_failed(sub: &Sub, plans: &[PlanView]) -> bool {
    let name = text(&sub.status, "/installPlanRef/name");
    if name.is_empty() {
        return false;
    }
    match plans.iter().find(|p| p.name == name) {
        Some(p) => p.phase == "Failed",
        None => sub
            .status
            .get("conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| {
                text(c, "/type") == condition::INSTALL_PLAN_FAILED && text(c, "/status") == "True"
            }),
    }
}

/// A Subscription's status from what exists: state and installed CSV, adoption of the plan that
/// created it, its plan's conditions, and its catalogs' health. Returns a CSV to delete: one a
/// failed plan created, once that plan is deleted to retry (see [`decide::PlanGone`]).
fn observe(
    sub: &mut Sub,
    csvs: &HashMap<String, String>,
    plans: &[PlanView],
    catalogs: &[(SourceKey, i64, bool)],
    fail_forward: bool,
    stamp: &str,
) -> Option<String> {
    let mut leftover = None;
    let generated_by = text(&sub.value, "/metadata/annotations/olm.generated-by").to_owned();
    if sub.status.get("installPlanRef").is_none()
        && !generated_by.is_empty()
        && let Some(plan) = plans.iter().find(|p| p.name == generated_by)
    {
        sub.status["installPlanRef"] = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan", "name": plan.name, "namespace": text(&sub.value, "/metadata/namespace")});
        let failed = fail_forward && plan.phase == "Failed";
        sub.status["state"] = json!(if failed {
            state::UPGRADE_FAILED
        } else {
            state::UPGRADE_PENDING
        });
        let starting = sub.spec("startingCSV").to_owned();
        if !starting.is_empty() {
            sub.status["currentCSV"] = json!(starting);
        }
    }

    let plan_name = text(&sub.status, "/installPlanRef/name").to_owned();
    let plan = plans.iter().find(|p| p.name == plan_name);
    let current = sub.status_text("currentCSV").to_owned();
    let current_phase = csvs.get(&current).map(String::as_str);
    let progress = if plan_failed(sub, plans) {
        decide::PlanProgress::Failed
    } else if plan.is_some_and(|p| p.phase != "Complete") {
        decide::PlanProgress::Running
    } else {
        decide::PlanProgress::Done
    };
    if let Some((new_state, installed)) = decide::observed_state(
        &current,
        current_phase,
        progress,
        fail_forward,
        sub.status_text("installedCSV"),
    ) {
        if sub.status_text("state") != new_state {
            sub.status["state"] = json!(new_state);
        }
        if installed && sub.status_text("installedCSV") != current {
            sub.status["installedCSV"] = json!(current);
        }
    }
    if !plan_name.is_empty() && plan.is_none() {
        let installed = sub.status_text("installedCSV").to_owned();
        match decide::plan_gone(
            sub.status_text("state"),
            &current,
            current_phase,
            &installed,
        ) {
            decide::PlanGone::Retry { leftover: csv } => {
                leftover = csv;
                for key in ["installPlanRef", "installplan", "currentCSV", "state"] {
                    if let Some(map) = sub.status.as_object_mut() {
                        map.remove(key);
                    }
                }
                // The Subscription is back where it was before the plan: its installed CSV.
                if !installed.is_empty() && csvs.contains_key(&installed) {
                    sub.status["currentCSV"] = json!(installed);
                    sub.status["state"] = json!(state::AT_LATEST_KNOWN);
                }
            }
            decide::PlanGone::Missing => {
                let missing = Condition::holds(
                    condition::INSTALL_PLAN_MISSING,
                    reason::REFERENCED_INSTALL_PLAN_NOT_FOUND,
                    "",
                );
                decide::set_condition(sub.conditions(), &missing, stamp);
            }
        }
    } else {
        decide::remove_condition(sub.conditions(), condition::INSTALL_PLAN_MISSING);
    }
    let (pending, failed) = decide::install_plan_conditions(plan);
    for (kind, c) in [
        (condition::INSTALL_PLAN_PENDING, pending),
        (condition::INSTALL_PLAN_FAILED, failed),
    ] {
        match c {
            Some(c) => {
                decide::set_condition(sub.conditions(), &c, stamp);
            }
            None => {
                decide::remove_condition(sub.conditions(), kind);
            }
        }
    }
    let own = sub.catalog();
    let health: Vec<(String, String, bool)> = catalogs
        .iter()
        .map(|(k, _, healthy)| (k.namespace.clone(), k.name.clone(), *healthy))
        .collect();
    let own_exists = catalogs.iter().any(|(k, _, _)| *k == own);
    let c = decide::catalog_health_condition(&health, (&own.namespace, &own.name), own_exists);
    decide::set_condition(sub.conditions(), &c, stamp);
    let catalog_health: Vec<Value> = catalogs
        .iter()
        .map(|(k, _, healthy)| {
            json!({
                "catalogSourceRef": {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource", "name": k.name, "namespace": k.namespace},
                "healthy": healthy,
            })
        })
        .collect();
    let same_health = sub
        .status
        .get("catalogHealth")
        .and_then(Value::as_array)
        .is_some_and(|old| {
            old.len() == catalog_health.len()
                && old.iter().zip(&catalog_health).all(|(a, b)| {
                    a.get("catalogSourceRef") == b.get("catalogSourceRef")
                        && a.get("healthy") == b.get("healthy")
                })
        });
    if !same_health {
        let stamped: Vec<Value> = catalog_health
            .into_iter()
            .map(|mut h| {
                h["lastUpdated"] = json!(stamp);
                h
            })
            .collect();
        sub.status["catalogHealth"] = Value::Array(stamped);
    }
    drop_empty_conditions(&mut sub.status);
    leftover
}

/// Deletes a CSV a failed plan created (see [`decide::SetAside::FailedPlan`]) and remembers it,
/// so that resolution leaves it out until the cache has seen it go.
async fn delete_leftover(ctx: &Ctx, namespace: &str, name: &str) -> Result<(), Error> {
    let api = Api::<olm_v0_api::v1alpha1::ClusterServiceVersion>::namespaced(
        ctx.shared.client.clone(),
        namespace,
    );
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => {
            info!(namespace = %namespace, csv = %name, "deleted the CSV of a failed InstallPlan");
        }
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => return Err(e.into()),
    }
    super::lock(&ctx.deleted).insert(format!("{namespace}/{name}"));
    Ok(())
}

/// An empty condition list is left out, as upstream's `omitempty` does.
fn drop_empty_conditions(status: &mut Value) {
    if status
        .get("conditions")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
        && let Some(map) = status.as_object_mut()
    {
        map.remove("conditions");
    }
}

/// Whether the Subscription `sub` is the one a resolved bundle serves: same package and catalog,
/// and its channel when it names one.
fn serves(sub: &Sub, entry: &Entry) -> bool {
    sub.spec("name") == entry.package
        && sub.catalog() == entry.catalog
        && (sub.spec("channel").is_empty() || sub.spec("channel") == entry.channel)
}

/// The namespace's CSVs as resolver entries (copies left out), and those set aside (see
/// [`decide::set_aside`]); CSVs being deleted are left out too.
#[allow(clippy::too_many_arguments)]
fn existing_entries(
    ctx: &Ctx,
    namespace: &str,
    csvs: &[Arc<olm_v0_api::v1alpha1::ClusterServiceVersion>],
    views: &[resolver::Subscription],
    subs: &[Sub],
    claims: &[decide::Claim],
    fail_forward: bool,
) -> Result<(Vec<Entry>, BTreeMap<String, decide::SetAside>), Error> {
    let values: Vec<Value> = csvs
        .iter()
        .map(|c| serde_json::to_value(&**c))
        .collect::<Result<_, _>>()?;
    let chain: Vec<decide::ChainLink> = values
        .iter()
        .map(|v| decide::ChainLink {
            name: text(v, "/metadata/name").to_owned(),
            replaces: text(v, "/spec/replaces").to_owned(),
            phase: text(v, "/status/phase").to_owned(),
        })
        .collect();
    let aside = decide::set_aside(&chain, claims, fail_forward);
    let deleted = {
        let mut deleted = super::lock(&ctx.deleted);
        // Forgotten once the cache has seen them go.
        deleted.retain(|key| {
            key.strip_prefix(namespace)
                .and_then(|k| k.strip_prefix('/'))
                .is_none_or(|name| csvs.iter().any(|c| c.name_any() == name))
        });
        deleted.clone()
    };
    let mut out = Vec::with_capacity(csvs.len());
    for (csv, value) in csvs.iter().zip(values) {
        let name = csv.name_any();
        if aside.contains_key(&name)
            || csv.metadata.deletion_timestamp.is_some()
            || deleted.contains(&format!("{namespace}/{name}"))
        {
            continue;
        }
        let installed_by: Vec<(String, String)> = views
            .iter()
            .zip(subs)
            .filter(|(v, _)| v.installed_csv == name)
            .map(|(v, s)| (v.name.clone(), s.spec("name").to_owned()))
            .collect();
        out.push(
            resolver::entry::from_csv(&value, namespace, &installed_by).map_err(Error::Retry)?,
        );
    }
    Ok((out, aside))
}

/// A bundle's manifests: inline from its registry, or from its image.
async fn manifests(
    ctx: &Ctx,
    entry: &Entry,
    contents: &[(SourceKey, i64, Option<Fetched>)],
) -> Result<Vec<Value>, String> {
    if entry.bundle_path.is_empty() {
        let content = contents
            .iter()
            .find(|(k, _, _)| *k == entry.catalog)
            .and_then(|(_, _, c)| c.clone());
        let objects = match content.as_deref() {
            Some(Ok(c)) => c.inline.get(&entry.name).cloned(),
            _ => None,
        };
        let Some(objects) = objects else {
            return Err(format!(
                "bundle {} has neither a bundle image nor inline content",
                entry.name
            ));
        };
        return objects
            .iter()
            .map(|o| {
                serde_json::from_str(o)
                    .map_err(|e| format!("bundle {}: an object is not JSON: {e}", entry.name))
            })
            .collect();
    }
    let owner = format!("v0-{}", entry.package);
    // The catalog's `spec.secrets` are pull secrets for its bundles, as upstream gives them to
    // its unpack Pods.
    let secrets: Vec<String> = ctx
        .index
        .catalogsources
        .get(
            &kube::runtime::reflector::ObjectRef::new(&entry.catalog.name)
                .within(&entry.catalog.namespace),
        )
        .map(|s| s.spec.secrets.clone())
        .unwrap_or_default();
    let extra = if secrets.is_empty() {
        None
    } else {
        Some(
            crate::bundles::pull_secrets_auth(
                &ctx.shared.client,
                &entry.catalog.namespace,
                &secrets,
            )
            .await
            .map_err(|e| {
                format!(
                    "reading the pull secrets of CatalogSource {}/{}: {}",
                    entry.catalog.namespace,
                    entry.catalog.name,
                    crate::api_error::message(&e)
                )
            })?,
        )
    };
    let bundle = ctx
        .bundles
        .fetch_with(&entry.bundle_path, &owner, extra.as_ref())
        .await
        .map_err(|e| format!("unpacking {}: {e}", entry.bundle_path))?;
    let mut objects = vec![bundle.csv.raw.clone()];
    objects.extend(bundle.crds.iter().map(|o| o.object.clone()));
    objects.extend(bundle.others.iter().map(|o| o.object.clone()));
    Ok(objects)
}

/// The plan of this generation: the one already made (a pass that stopped half way), else a
/// new one, with its steps in `status`.
#[allow(clippy::too_many_arguments)]
async fn ensure_plan(
    ctx: &Ctx,
    namespace: &str,
    subs: &[Sub],
    generation: i64,
    manual: bool,
    csv_names: &[String],
    steps: &[Step],
    catalogs: &BTreeSet<String>,
    plans: &[Arc<InstallPlan>],
) -> Result<InstallPlan, Error> {
    let api = Api::<InstallPlan>::namespaced(ctx.shared.client.clone(), namespace);
    let existing = plans
        .iter()
        .find(|p| p.spec.generation == Some(generation))
        .map(|p| (**p).clone());
    let plan = match existing {
        Some(p) => p,
        None => {
            let owners: Vec<Value> = subs
                .iter()
                .map(|s| {
                    json!({
                        "apiVersion": "operators.coreos.com/v1alpha1",
                        "kind": "Subscription",
                        "name": s.name(),
                        "uid": text(&s.value, "/metadata/uid"),
                        "blockOwnerDeletion": false,
                        "controller": false,
                    })
                })
                .collect();
            let approval = if manual { "Manual" } else { "Automatic" };
            let labels =
                olm_v0::operator::new_plan_labels(subs.iter().map(|s| s.spec("name")), namespace);
            let object = json!({
                "apiVersion": "operators.coreos.com/v1alpha1",
                "kind": "InstallPlan",
                "metadata": {"generateName": "install-", "namespace": namespace,
                    "ownerReferences": owners, "labels": labels},
                "spec": {
                    "clusterServiceVersionNames": csv_names,
                    "approval": approval,
                    "approved": !manual,
                    "generation": generation,
                },
            });
            let plan: InstallPlan = serde_json::from_value(object)?;
            let created = api.create(&PostParams::default(), &plan).await?;
            info!(namespace = %namespace, installplan = %created.name_any(), csvs = ?csv_names, "created an InstallPlan");
            let view = PlanView {
                name: created.name_any(),
                generation,
                phase: if manual {
                    "RequiresApproval"
                } else {
                    "Installing"
                }
                .to_owned(),
                installed: None,
                csvs: csv_names.to_vec(),
                created: created
                    .creation_timestamp()
                    .map(|t| t.0.to_string())
                    .unwrap_or_default(),
            };
            super::lock(&ctx.created)
                .entry(namespace.to_owned())
                .or_default()
                .push(view);
            created
        }
    };
    let has_status = serde_json::to_value(&plan)
        .ok()
        .and_then(|v| v.pointer("/status/plan").cloned())
        .is_some_and(|p| p.as_array().is_some_and(|a| !a.is_empty()));
    if !has_status {
        let phase = if manual {
            "RequiresApproval"
        } else {
            "Installing"
        };
        let status = json!({"status": {
            "phase": phase,
            "catalogSources": catalogs,
            "plan": steps.iter().map(Step::to_json).collect::<Vec<_>>(),
        }});
        api.patch_status(
            &plan.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&status),
        )
        .await?;
    }
    Ok(plan)
}

/// The namespace's InstallPlans as the decisions read them — those made by an earlier pass
/// counted before their watch event arrives — after the old ones upstream collects are deleted.
async fn plans_of(
    ctx: &Ctx,
    namespace: &str,
) -> Result<(Vec<Arc<InstallPlan>>, Vec<PlanView>), Error> {
    let plans: Vec<Arc<InstallPlan>> = ctx.index.installplans_in(namespace);
    let mut views: Vec<PlanView> = plans.iter().map(|p| plan_view(p)).collect();
    {
        // Plans made by an earlier pass count before their watch event arrives.
        let mut created = super::lock(&ctx.created);
        if let Some(list) = created.get_mut(namespace) {
            list.retain(|c| !views.iter().any(|v| v.name == c.name));
            views.extend(list.iter().cloned());
        }
    }
    let plan_api = Api::<InstallPlan>::namespaced(ctx.shared.client.clone(), namespace);
    for name in decide::install_plans_to_collect(&views) {
        match plan_api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {
                info!(namespace = %namespace, installplan = %name, "deleted an old InstallPlan")
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok((plans, views))
}

/// The namespace's Subscriptions, each with the newest status this process knows of (its own
/// last write, when the cache has not caught up); one being moved to OLM v1 (`olm migrate`) is
/// left out: it is not resolved again until the move deletes it.
fn subscriptions_of(ctx: &Ctx, namespace: &str) -> Vec<Sub> {
    ctx.index
        .subscriptions_in(namespace)
        .iter()
        .filter(|s| {
            !s.annotations()
                .contains_key(olm_k8s::MIGRATING_TO_ANNOTATION)
        })
        .map(|s| {
            let value = serde_json::to_value(&**s).unwrap_or_default();
            let key = format!("{namespace}/{}", s.name_any());
            let status = ctx
                .statuses
                .newer_than(&key, s.uid().as_deref(), s.resource_version().as_deref())
                .or_else(|| value.get("status").cloned().filter(Value::is_object))
                .unwrap_or_else(|| json!({}));
            Sub { value, status }
        })
        .collect()
}

/// Points each Subscription at `plan`: its `currentCSV` the bundle it serves (`served`, by
/// index), `installPlanRef`, `installplan`, `installPlanGeneration` and `UpgradePending`.
async fn point_at_plan(
    ctx: &Ctx,
    namespace: &str,
    subs: &mut [Sub],
    plan: &InstallPlan,
    served: &HashMap<usize, String>,
    generation: i64,
) -> Result<(), Error> {
    for (i, sub) in subs.iter_mut().enumerate() {
        let old = sub.status.clone();
        if let Some(csv) = served.get(&i) {
            sub.status["currentCSV"] = json!(csv);
        }
        let reference = json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "InstallPlan",
            "name": plan.name_any(),
            "namespace": namespace,
            "resourceVersion": plan.resource_version(),
            "uid": plan.uid(),
        });
        sub.status["installPlanRef"] = reference;
        sub.status["installplan"] = json!({
            "apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "InstallPlan",
            "name": plan.name_any(),
            "uuid": plan.uid(),
        });
        sub.status["installPlanGeneration"] = json!(generation);
        sub.status["state"] = json!(state::UPGRADE_PENDING);
        clear_unpack_conditions(sub);
        write_status(ctx, namespace, sub, &old).await?;
    }
    Ok(())
}

/// Writes a Subscription's status where it differs from `old` (removed fields set to null).
async fn write_status(ctx: &Ctx, namespace: &str, sub: &Sub, old: &Value) -> Result<(), Error> {
    if sub.status == *old {
        return Ok(());
    }
    let mut status = sub.status.clone();
    // Every change is stamped (the field is required).
    status["lastUpdated"] = json!(now());
    if let (Some(map), Some(old)) = (status.as_object_mut(), old.as_object()) {
        for key in old.keys() {
            if !map.contains_key(key) {
                map.insert(key.clone(), Value::Null);
            }
        }
    }
    let api = Api::<Subscription>::namespaced(ctx.shared.client.clone(), namespace);
    let written = olm_runtime::status::patch(&api, sub.name(), None, status).await?;
    let stored = serde_json::to_value(&written)
        .ok()
        .and_then(|v| v.get("status").cloned())
        .unwrap_or_default();
    ctx.statuses.record(
        format!("{namespace}/{}", sub.name()),
        written.uid().as_deref(),
        written.resource_version().as_deref(),
        stored,
    );
    Ok(())
}

/// Every Subscription gets `ResolutionFailed`; the namespace a Warning event. Unsatisfiable
/// namespaces wait for a change; errors are retried.
async fn resolution_failed(
    ctx: &Ctx,
    namespace: &str,
    subs: &mut [Sub],
    error: &ResolveError,
    stamp: &str,
) -> Result<Option<Duration>, Error> {
    let reason = match error {
        ResolveError::NotSatisfiable(_) => reason::CONSTRAINTS_NOT_SATISFIABLE,
        ResolveError::Prevented(_) => reason::ERROR_PREVENTED_RESOLUTION,
    };
    let message = error.to_string();
    let c = Condition::holds(condition::RESOLUTION_FAILED, reason, message.clone());
    let mut changed = false;
    for sub in subs.iter_mut() {
        let old = sub.status.clone();
        if decide::set_condition(sub.conditions(), &c, stamp) {
            write_status(ctx, namespace, sub, &old).await?;
            changed = true;
        }
    }
    if changed {
        warn!(namespace = %namespace, reason, message = %message, "resolution failed");
        record(ctx, namespace, "ResolutionFailed", &message).await;
    }
    match error {
        ResolveError::NotSatisfiable(_) => Ok(None),
        ResolveError::Prevented(e) => Err(Error::Retry(e.clone())),
    }
}

/// Every Subscription gets `BundleUnpackFailed`; retried with backoff.
/// Removes the bundle unpack conditions: nothing is (or fails) unpacking.
fn clear_unpack_conditions(sub: &mut Sub) {
    for kind in [condition::BUNDLE_UNPACKING, condition::BUNDLE_UNPACK_FAILED] {
        decide::remove_condition(sub.conditions(), kind);
    }
    drop_empty_conditions(&mut sub.status);
}

/// Ends a pass that needs no unpacking: earlier unpack conditions go; `next` is when to look
/// again.
async fn unpacked(
    ctx: &Ctx,
    namespace: &str,
    subs: &mut [Sub],
    next: Option<Duration>,
) -> Result<Option<Duration>, Error> {
    for sub in subs.iter_mut() {
        let old = sub.status.clone();
        clear_unpack_conditions(sub);
        write_status(ctx, namespace, sub, &old).await?;
    }
    Ok(next)
}

async fn unpack_failed(
    ctx: &Ctx,
    namespace: &str,
    subs: &mut [Sub],
    message: &str,
    stamp: &str,
) -> Result<Option<Duration>, Error> {
    let c = Condition::holds(
        condition::BUNDLE_UNPACK_FAILED,
        reason::BUNDLE_UNPACK_FAILED,
        message,
    );
    for sub in subs.iter_mut() {
        let old = sub.status.clone();
        if decide::set_condition(sub.conditions(), &c, stamp) {
            write_status(ctx, namespace, sub, &old).await?;
        }
    }
    Err(Error::Retry(message.to_owned()))
}

/// A Warning event on the namespace, as upstream records resolution failures.
async fn record(ctx: &Ctx, namespace: &str, reason: &str, note: &str) {
    let recorder = super::recorder(&ctx.shared.client);
    let reference = k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("v1".to_owned()),
        kind: Some("Namespace".to_owned()),
        name: Some(namespace.to_owned()),
        ..Default::default()
    };
    let event = Event {
        type_: EventType::Warning,
        reason: reason.to_owned(),
        note: Some(olm_k8s::truncate_note(note)),
        action: "Resolve".to_owned(),
        secondary: None,
    };
    if let Err(e) = recorder.publish(&event, &reference).await {
        warn!(namespace = %namespace, error = %e, "recording an event failed");
    }
}
