//! catalog-operator's namespace resolution on a cluster (upstream's `syncResolvingNamespace`):
//! for a namespace with Subscriptions, bring their status in line with what exists, resolve them
//! against the catalogs, and write an InstallPlan for what is new.
//!
//! One pass, decided by `olm_v0::catalog_operator::subscription` and `olm_v0_resolver`:
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
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType};
use olm_v0::catalog_operator::steps::{Step, bundle_steps, order_steps, subscription_step};
use olm_v0::catalog_operator::subscription::{self as decide, PlanView, reason};
use olm_v0_api::v1alpha1::{ClusterServiceVersion, InstallPlan, Subscription, SubscriptionStatus};
use olm_v0_resolver::{self as resolver, Catalog, Entry, ResolveError, SourceKey};
use serde_json::{Value, json};
use tracing::{info, warn};

use super::catalogs::Fetched;
use super::connection::Connections;
use crate::Index;
use crate::error::Error;
use crate::queue;
use olm_cluster::bundles::{BundleOptions, Bundles};
use olm_cluster::context::Shared;
use olm_runtime::written::Written;

/// The name the Subscription controller's metrics and logs go by.
pub const SUBSCRIPTION_CONTROLLER: &str = "subscription";
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
    statuses: Written<SubscriptionStatus>,
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

/// A Subscription with the newest status this process knows of (`None` before its first).
type Sub = (Arc<Subscription>, Option<SubscriptionStatus>);

/// The Subscription as the resolver reads it.
fn resolver_view(sub: &Subscription, status: &SubscriptionStatus) -> resolver::Subscription {
    let spec = &sub.spec;
    resolver::Subscription {
        name: sub.name_any(),
        namespace: sub.namespace().unwrap_or_default(),
        package: spec.package.clone(),
        channel: spec.channel.clone().unwrap_or_default(),
        catalog: SourceKey::new(&spec.catalog_source, &spec.catalog_source_namespace),
        starting_csv: spec.starting_csv.clone().unwrap_or_default(),
        installed_csv: status.installed_csv.clone().unwrap_or_default(),
    }
}

/// One pass over `namespace`; `Some(delay)` asks for another pass after it. It gathers, asks
/// `olm_v0::catalog_operator::subscription` twice — each Subscription's status from what exists,
/// then what a successful resolution leads to — and performs: the CSV deletions, the plan, the
/// statuses.
async fn sync(ctx: &Ctx, namespace: &str) -> Result<Option<Duration>, Error> {
    let (plans, views) = plans_of(ctx, namespace).await?;
    let subs = subscriptions_of(ctx, namespace);
    if subs.is_empty() {
        return Ok(None);
    }
    let csvs = ctx.index.csvs_in(namespace);
    let csv_phases = csv_phases(&csvs);
    let clock = crate::now();
    let catalogs = visible_catalogs(ctx, namespace);
    let fail_forward = fail_forward(ctx, namespace);
    let health = catalog_health(&catalogs);
    let facts = decide::Facts {
        csv_phases: &csv_phases,
        plans: &views,
        catalogs: &health,
        fail_forward,
    };
    let contents = contents_of(ctx, &catalogs);
    let Some(statuses) = observe(ctx, namespace, &subs, &facts, &contents, &clock).await? else {
        return Ok(None);
    };

    // Resolution.
    let wanted: Vec<resolver::Subscription> = subs
        .iter()
        .zip(&statuses)
        .map(|((sub, _), status)| resolver_view(sub, status))
        .collect();
    let claims: Vec<decide::Claim> = statuses
        .iter()
        .map(|s| decide::Claim {
            installed_csv: s.installed_csv.clone().unwrap_or_default(),
            current_csv: s.current_csv.clone().unwrap_or_default(),
            plan_failed: decide::plan_failed(s, &views),
        })
        .collect();
    let (existing, aside) =
        existing_entries(ctx, namespace, &csvs, &wanted, &claims, fail_forward)?;
    let resolved = match resolver::resolve(namespace, &wanted, &existing, &catalogs_of(&contents)) {
        Ok(r) => r,
        Err(e) => return resolution_failed(ctx, namespace, &subs, &statuses, &e, &clock).await,
    };

    // What is new, and what becomes of it.
    let new: Vec<&Entry> = resolved
        .iter()
        .map(|r| &r.entry)
        .filter(|e| !csv_phases.contains_key(&e.name))
        .collect();
    let bundles: Vec<decide::NewBundle<'_>> = new
        .iter()
        .map(|e| decide::NewBundle {
            name: &e.name,
            package: &e.package,
            channel: &e.channel,
            catalog: &e.catalog.name,
            catalog_namespace: &e.catalog.namespace,
        })
        .collect();
    let pairs: Vec<(&Subscription, &SubscriptionStatus)> =
        subs.iter().map(|(s, _)| &**s).zip(&statuses).collect();
    let order = match decide::next(&pairs, &bundles, &views, &aside, clock.0) {
        decide::Next::Settled(again) => {
            end(ctx, &subs, &statuses, &clock, |_, s| decide::settled(s)).await?;
            return Ok(again);
        }
        decide::Next::Plan(order) => order,
    };
    let steps = match steps_of(ctx, namespace, &new, &order, &contents).await? {
        Ok(steps) => steps,
        Err(message) => {
            end(ctx, &subs, &statuses, &clock, |_, s| {
                decide::unpack_failed(s, &message, &clock);
            })
            .await?;
            return Err(Error::Retry(message));
        }
    };
    for csv in &order.leftovers {
        delete_leftover(ctx, namespace, csv).await?;
    }
    let plan = ensure_plan(ctx, namespace, &subs, &order, &bundles, &steps, &plans).await?;
    end(ctx, &subs, &statuses, &clock, |i, s| {
        decide::planned(
            s,
            &plan,
            order.current.get(&i).map(String::as_str),
            order.generation,
        );
    })
    .await?;
    Ok(None)
}

/// Each Subscription's status from what exists ([`decide::observe`]) and what its catalog says
/// of the installed bundle ([`decide::deprecated`]), written where it changed, with the CSVs of
/// failed plans deleted. `None` when the pass ends here: a status was written (the write wakes
/// the next pass) or every Subscription waits on its plan; else the statuses as stored, for
/// resolution.
async fn observe(
    ctx: &Ctx,
    namespace: &str,
    subs: &[Sub],
    facts: &decide::Facts<'_>,
    contents: &[(SourceKey, i64, Option<Fetched>)],
    clock: &Time,
) -> Result<Option<Vec<SubscriptionStatus>>, Error> {
    let mut wrote = false;
    let mut statuses = Vec::with_capacity(subs.len());
    for (sub, old) in subs {
        let mut observed = decide::observe(sub, old.as_ref(), facts, clock);
        if let Some(csv) = &observed.leftover {
            delete_leftover(ctx, namespace, csv).await?;
        }
        let channel = sub.spec.channel.as_deref().unwrap_or_default();
        let found = observed
            .status
            .installed_csv
            .as_deref()
            .and_then(|csv| deprecations(contents, sub, csv));
        decide::deprecated(&mut observed.status, channel, found.as_ref(), clock);
        wrote |= write_status(ctx, sub, old.as_ref(), &observed.status, clock).await?;
        statuses.push(observed.status);
    }
    Ok((!wrote && !statuses.iter().all(decide::waiting_on_plan)).then_some(statuses))
}

/// The deprecation notices of `csv` as the Subscription's own catalog lists it in the
/// Subscription's package and channel (any channel when it names none), or none when the
/// catalog is not read or does not list it.
fn deprecations(
    contents: &[(SourceKey, i64, Option<Fetched>)],
    sub: &Subscription,
    csv: &str,
) -> Option<decide::Deprecations> {
    let (_, _, fetched) = contents.iter().find(|(key, _, _)| {
        key.name == sub.spec.catalog_source && key.namespace == sub.spec.catalog_source_namespace
    })?;
    let Ok(content) = fetched.as_deref()? else {
        return None;
    };
    let package = content
        .packages
        .iter()
        .find(|p| p.name == sub.spec.package)?;
    let wanted = sub.spec.channel.as_deref().unwrap_or_default();
    let (channel, entry) = package
        .channels
        .iter()
        .filter(|c| wanted.is_empty() || c.name == wanted)
        .find_map(|c| c.entries.iter().find(|e| e.name == csv).map(|e| (c, e)))?;
    Some(decide::Deprecations::of(
        (&package.name, package.deprecation.as_deref()),
        (&channel.name, channel.deprecation.as_deref()),
        (&entry.name, entry.deprecation.as_deref()),
    ))
}

/// Each CSV's phase (`""` before it has one), by name.
fn csv_phases(csvs: &[Arc<ClusterServiceVersion>]) -> HashMap<String, String> {
    csvs.iter()
        .map(|c| {
            let phase = c
                .status
                .as_ref()
                .and_then(|s| s.phase.as_ref())
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default();
            (c.name_any(), phase)
        })
        .collect()
}

/// Whether UnsafeFailForward upgrades are on: the namespace's one OperatorGroup opts in
/// (upstream requires exactly one group; with none or several the default strategy holds).
fn fail_forward(ctx: &Ctx, namespace: &str) -> bool {
    let groups = ctx.index.groups_in(namespace);
    matches!(groups.as_slice(), [g] if g.spec.upgrade_strategy
        == Some(olm_v0_api::v1::UpgradeStrategy::TechPreviewUnsafeFailForward))
}

/// The catalogs' health as the status decisions read it.
fn catalog_health(catalogs: &[(SourceKey, i64, bool)]) -> Vec<decide::CatalogView> {
    catalogs
        .iter()
        .map(|(key, _, healthy)| decide::CatalogView {
            namespace: key.namespace.clone(),
            name: key.name.clone(),
            healthy: *healthy,
        })
        .collect()
}

/// Each catalog with its priority and the content held for it, if any.
fn contents_of(
    ctx: &Ctx,
    catalogs: &[(SourceKey, i64, bool)],
) -> Vec<(SourceKey, i64, Option<Fetched>)> {
    catalogs
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
        .collect()
}

/// The catalogs as the resolver reads them: entries, or why there are none.
fn catalogs_of(contents: &[(SourceKey, i64, Option<Fetched>)]) -> Vec<Catalog<'_>> {
    contents
        .iter()
        .map(|(key, priority, content)| Catalog {
            key: key.clone(),
            priority: *priority,
            entries: match content.as_deref() {
                Some(Ok(c)) => Ok(c.entries.as_slice()),
                Some(Err(e)) => Err(e.to_string()),
                None => Err("the catalog's registry is not ready yet".to_owned()),
            },
        })
        .collect()
}

/// The steps of the plan `order` asks for: a Subscription for each new bundle no Subscription
/// serves, then each bundle's objects, ordered. `Ok(Err(message))` when a bundle's manifests
/// could not be had (the Subscriptions say so).
async fn steps_of(
    ctx: &Ctx,
    namespace: &str,
    new: &[&Entry],
    order: &decide::PlanOrder,
    contents: &[(SourceKey, i64, Option<Fetched>)],
) -> Result<Result<Vec<Step>, String>, Error> {
    let mut steps: Vec<Step> = Vec::new();
    for (entry, serving) in new.iter().zip(&order.serving) {
        if serving.is_none() {
            steps.push(subscription_step(
                namespace,
                &entry.name,
                &entry.package,
                &entry.channel,
                &entry.catalog.name,
                &entry.catalog.namespace,
            ));
        }
        let objects = match manifests(ctx, entry, contents).await {
            Ok(o) => o,
            Err(message) => return Ok(Err(message)),
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
    Ok(Ok(order_steps(steps)))
}

/// Ends a pass: each Subscription's status (`statuses`, as stored) changed by `change` (given
/// its index) and written where it differs.
async fn end(
    ctx: &Ctx,
    subs: &[Sub],
    statuses: &[SubscriptionStatus],
    clock: &Time,
    mut change: impl FnMut(usize, &mut SubscriptionStatus),
) -> Result<(), Error> {
    for (i, ((sub, _), stored)) in subs.iter().zip(statuses).enumerate() {
        let mut status = stored.clone();
        change(i, &mut status);
        write_status(ctx, sub, Some(stored), &status, clock).await?;
    }
    Ok(())
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
    crate::lock(&ctx.deleted).insert(format!("{namespace}/{name}"));
    Ok(())
}

/// The namespace's CSVs as resolver entries (copies left out), and those set aside (see
/// [`decide::set_aside`]); CSVs being deleted are left out too.
fn existing_entries(
    ctx: &Ctx,
    namespace: &str,
    csvs: &[Arc<olm_v0_api::v1alpha1::ClusterServiceVersion>],
    views: &[resolver::Subscription],
    claims: &[decide::Claim],
    fail_forward: bool,
) -> Result<(Vec<Entry>, BTreeMap<String, decide::SetAside>), Error> {
    let chain: Vec<decide::ChainLink> = csvs
        .iter()
        .map(|c| decide::ChainLink {
            name: c.name_any(),
            replaces: c.spec.replaces.clone().unwrap_or_default(),
            phase: c
                .status
                .as_ref()
                .and_then(|s| s.phase.as_ref())
                .map(|p| p.as_str().to_owned())
                .unwrap_or_default(),
        })
        .collect();
    let aside = decide::set_aside(&chain, claims, fail_forward);
    let deleted = {
        let mut deleted = crate::lock(&ctx.deleted);
        // Forgotten once the cache has seen them go.
        deleted.retain(|key| {
            key.strip_prefix(namespace)
                .and_then(|k| k.strip_prefix('/'))
                .is_none_or(|name| csvs.iter().any(|c| c.name_any() == name))
        });
        deleted.clone()
    };
    let mut out = Vec::with_capacity(csvs.len());
    for csv in csvs {
        let name = csv.name_any();
        if aside.contains_key(&name)
            || csv.metadata.deletion_timestamp.is_some()
            || deleted.contains(&format!("{namespace}/{name}"))
        {
            continue;
        }
        let installed_by: Vec<(String, String)> = views
            .iter()
            .filter(|v| v.installed_csv == name)
            .map(|v| (v.name.clone(), v.package.clone()))
            .collect();
        out.push(
            resolver::entry::from_csv(csv, namespace, &installed_by)
                .map_err(|e| Error::Retry(e.to_string()))?,
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
            olm_cluster::bundles::pull_secrets_auth(
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
                    olm_runtime::api_error::message(&e)
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
    order: &decide::PlanOrder,
    bundles: &[decide::NewBundle<'_>],
    steps: &[Step],
    plans: &[Arc<InstallPlan>],
) -> Result<InstallPlan, Error> {
    let api = Api::<InstallPlan>::namespaced(ctx.shared.client.clone(), namespace);
    let existing = plans
        .iter()
        .find(|p| p.spec.generation == Some(order.generation))
        .map(|p| (**p).clone());
    let plan = match existing {
        Some(p) => p,
        None => {
            let subs: Vec<&Subscription> = subs.iter().map(|(s, _)| &**s).collect();
            let plan = order.install_plan(namespace, &subs, bundles);
            let created = api.create(&PostParams::default(), &plan).await?;
            let csvs = &plan.spec.cluster_service_version_names;
            info!(namespace = %namespace, installplan = %created.name_any(), ?csvs, "created an InstallPlan");
            let view = PlanView {
                phase: order.first_phase().to_owned(),
                ..PlanView::of(&created)
            };
            crate::lock(&ctx.created)
                .entry(namespace.to_owned())
                .or_default()
                .push(view);
            created
        }
    };
    if plan.status.as_ref().is_none_or(|s| s.plan.is_empty()) {
        let status = json!({"status": order.status(bundles, steps)});
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
    let mut views: Vec<PlanView> = plans.iter().map(|p| PlanView::of(p)).collect();
    {
        // Plans made by an earlier pass count before their watch event arrives.
        let mut created = crate::lock(&ctx.created);
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
        .into_iter()
        .filter(|s| {
            !s.annotations()
                .contains_key(olm_k8s::MIGRATING_TO_ANNOTATION)
        })
        .map(|s| {
            let key = format!("{namespace}/{}", s.name_any());
            let status = ctx
                .statuses
                .newer_than(&key, s.uid().as_deref(), s.resource_version().as_deref())
                .or_else(|| s.status.clone());
            (s, status)
        })
        .collect()
}

/// Writes a Subscription's status where it differs from `old` (fields it no longer has set to
/// null), stamped `clock`, and remembers what was written.
async fn write_status(
    ctx: &Ctx,
    sub: &Subscription,
    old: Option<&SubscriptionStatus>,
    new: &SubscriptionStatus,
    clock: &Time,
) -> Result<bool, Error> {
    if old == Some(new) {
        return Ok(false);
    }
    let namespace = sub.namespace().unwrap_or_default();
    let name = sub.name_any();
    // Every change is stamped (the field is required).
    let stamped = SubscriptionStatus {
        last_updated: clock.clone(),
        ..new.clone()
    };
    let api = Api::<Subscription>::namespaced(ctx.shared.client.clone(), &namespace);
    let Some(written) = olm_runtime::status::patch_change(&api, &name, None, old, &stamped).await?
    else {
        return Ok(false);
    };
    if let Some(stored) = written.status.clone() {
        ctx.statuses.record(
            format!("{namespace}/{name}"),
            written.uid().as_deref(),
            written.resource_version().as_deref(),
            stored,
        );
    }
    Ok(true)
}

/// Every Subscription gets `ResolutionFailed`; the namespace a Warning event. Unsatisfiable
/// namespaces wait for a change; errors are retried.
async fn resolution_failed(
    ctx: &Ctx,
    namespace: &str,
    subs: &[Sub],
    statuses: &[SubscriptionStatus],
    error: &ResolveError,
    clock: &Time,
) -> Result<Option<Duration>, Error> {
    let reason = match error {
        ResolveError::NotSatisfiable(_) => reason::CONSTRAINTS_NOT_SATISFIABLE,
        ResolveError::Prevented(_) => reason::ERROR_PREVENTED_RESOLUTION,
    };
    let message = error.to_string();
    let mut changed = false;
    end(ctx, subs, statuses, clock, |_, s| {
        changed |= decide::resolution_failed(s, reason, &message, clock);
    })
    .await?;
    if changed {
        warn!(namespace = %namespace, reason, message = %message, "resolution failed");
        record(ctx, namespace, "ResolutionFailed", &message).await;
    }
    match error {
        ResolveError::NotSatisfiable(_) => Ok(None),
        ResolveError::Prevented(e) => Err(Error::Retry(e.to_string())),
    }
}

/// A Warning event on the namespace, as upstream records resolution failures.
async fn record(ctx: &Ctx, namespace: &str, reason: &str, note: &str) {
    let recorder = crate::recorder(&ctx.shared.client);
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
