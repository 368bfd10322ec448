//! The ClusterServiceVersion controller (OLM's `syncClusterServiceVersion`).
//!
//! The flow of one reconcile:
//!
//! 0. A CSV being deleted has what it leaves cluster-wide removed ([`super::cleanup`]), then its
//!    finalizer; any other gets the finalizer first.
//! 1. Work out the APIs the CSV provides (`olm_v0::olm_operator::surface`); a CRD name that does
//!    not parse leaves the CSV as it is, logged, as upstream does. Put the `olm.api.<hash>` labels
//!    on the CSV when they differ, and stop: the write wakes it again.
//! 2. The membership checks (`olm_v0::olm_operator::membership::check`) against the groups of its
//!    namespace and every other group: failing them sets the CSV `Failed` with upstream's reason;
//!    the group's annotations are written onto the CSV, or the group's `olm.providedAPIs` extended,
//!    and the reconcile ends there.
//! 3. The phase machine (`olm_v0::olm_operator::transition::next`) on the facts its phase reads:
//!    requirements and permissions, the CSV it replaces and the one replacing it, the Deployments.
//!    For `InstallReady` the Deployments are applied and the machine asked again with the outcome.
//!    The step's status is written only when phase, reason, message or requirement statuses differ
//!    (with the resourceVersion read, so a reconcile on a stale copy writes nothing), with one
//!    Event per change. The machine decides the failed install's backoff too, from the failures
//!    this process counted and the time since the last, which the shell reads.
//! 4. Its OperatorCondition with the Role that lets its ServiceAccounts update it. Its copies
//!    are kept by their own controller ([`super::copies`]), so that hundreds of copy writes
//!    never hold up a CSV's own progress.
//!
//! Guarantees: a status is only written, and an Event recorded, when phase, reason, message or
//! requirement statuses change; nothing is written at steady state — a CSV failed on what no
//! repair fixes (refused webhook rules, an unreadable install strategy) included. Errors: API
//! failures and the decisions' retries come back with a per-CSV exponential backoff; each is
//! logged with the CSV's name.

use olm_runtime::harness::{Harness, key_of};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::channel::mpsc;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use olm_v0::olm_operator::groups::OperatorGroupView;
use olm_v0::olm_operator::membership::{self, Verdict};
use olm_v0::olm_operator::status::CsvStatus;
use olm_v0::olm_operator::surface::{ApiServiceRef, CrdRef, api_labels, surface};
use olm_v0::olm_operator::transition::{self, Facts, InstallStatus, Replaced, Step};
use olm_v0_api::v1::{OperatorGroup, UpgradeStrategy};
use olm_v0_api::v1alpha1::{
    ClusterServiceVersion, ClusterServiceVersionPhase as Phase, ConditionReason as Reason,
    RequirementStatus,
};
use serde_json::{Value, json};
use tracing::{Instrument, debug, info, info_span, warn};

use super::{cleanup, install, requirements, serving};
use crate::error::Error;
use crate::{CSV_CONTROLLER, Index, lock, nothing};
use olm_cluster::context::Shared;
use olm_runtime::metrics::Outcome;

/// A reconcile taking longer than this is logged: the API server is overloaded or slow.
const SLOW: Duration = Duration::from_secs(5);

/// How many CSVs are reconciled at once.
const CONCURRENCY: u16 = 8;

struct Ctx {
    shared: Arc<Shared>,
    index: Index,
    harness: Harness,
    recorder: Recorder,
    server_version: Option<String>,
    /// OperatorConditions (by uid) whose Role and RoleBinding this process applied.
    condition_rbac: Mutex<HashSet<String>>,
    /// Per-API ClusterRoles applied by this process (`<csv uid>/<owner uid>/<version>`).
    api_roles: Mutex<HashSet<String>>,
    /// Failed installs per CSV: how many in a row, and when the last one was.
    install_failures: Mutex<HashMap<String, (u32, jiff::Timestamp)>>,
}

/// Runs the controller on the CSVs `wake` names until `stop` resolves.
pub async fn run(
    shared: Arc<Shared>,
    index: Index,
    wake: mpsc::Receiver<ObjectRef<ClusterServiceVersion>>,
    stop: impl std::future::Future<Output = ()> + Send + Sync + 'static,
) {
    let server_version = match shared.client.apiserver_version().await {
        Ok(v) => Some(v.git_version),
        Err(e) => {
            warn!(error = %e, "reading the API server's version failed; minKubeVersion cannot be checked");
            None
        }
    };
    let recorder = crate::recorder(&shared.client);
    let harness = shared.harness(CSV_CONTROLLER);
    let ctx = Arc::new(Ctx {
        shared,
        index: index.clone(),
        harness,
        recorder,
        server_version,
        condition_rbac: Mutex::default(),
        install_failures: Mutex::default(),
        api_roles: Mutex::default(),
    });
    let controller = Controller::for_stream(nothing(), index.csvs.clone())
        .reconcile_on(wake)
        .with_config(controller::Config::default().concurrency(CONCURRENCY));
    olm_runtime::report::run(
        CSV_CONTROLLER,
        controller,
        reconcile,
        error_policy,
        ctx,
        stop,
    )
    .await;
}

fn error_policy(csv: Arc<ClusterServiceVersion>, err: &Error, ctx: Arc<Ctx>) -> Action {
    ctx.harness.retry_object("reconciling the CSV", &*csv, err)
}

fn key(csv: &ClusterServiceVersion) -> String {
    key_of(csv)
}

async fn reconcile(csv: Arc<ClusterServiceVersion>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let started = Instant::now();
    let work = reconcile_one(&csv, &ctx)
        .instrument(info_span!("reconcile", csv = %csv.name_any(), namespace = ?csv.namespace()));
    let result = ctx
        .harness
        .reconcile(&key(&csv), work, |requeue| Outcome::of_requeue(*requeue))
        .await;
    if started.elapsed() > SLOW {
        warn!(csv = %csv.name_any(), namespace = ?csv.namespace(), took = ?started.elapsed(), "slow reconcile");
    }
    result.map(|requeue| match requeue {
        Some(d) => Action::requeue(d),
        None => Action::await_change(),
    })
}

/// The time as the API server writes it (seconds).
fn now_text() -> (jiff::Timestamp, String) {
    let now = jiff::Timestamp::now();
    let text = olm_v0::olm_operator::status::time_text(crate::now().0).unwrap_or_default();
    (now, text)
}

/// The CSV's provided and required APIs (`olm_v0::olm_operator::surface`).
pub fn surface_of(
    csv: &ClusterServiceVersion,
) -> Result<olm_v0::olm_operator::surface::Surface, String> {
    let crds = csv
        .spec
        .custom_resource_definitions
        .clone()
        .unwrap_or_default();
    let apis = csv.spec.api_service_definitions.clone().unwrap_or_default();
    surface(
        &crd_refs(&crds.owned),
        &api_refs(&apis.owned),
        &crd_refs(&crds.required),
        &api_refs(&apis.required),
    )
}

fn crd_refs(v: &[olm_v0_api::v1alpha1::CrdDescription]) -> Vec<CrdRef<'_>> {
    v.iter()
        .map(|c| CrdRef {
            name: &c.name,
            version: &c.version,
            kind: &c.kind,
        })
        .collect()
}

fn api_refs(v: &[olm_v0_api::v1alpha1::ApiServiceDescription]) -> Vec<ApiServiceRef<'_>> {
    v.iter()
        .map(|a| ApiServiceRef {
            name: &a.name,
            group: &a.group,
            version: &a.version,
            kind: &a.kind,
        })
        .collect()
}

fn group_view(g: &OperatorGroup) -> OperatorGroupView {
    OperatorGroupView::new(
        &g.name_any(),
        &g.namespace().unwrap_or_default(),
        g.status
            .as_ref()
            .map_or(&[][..], |s| s.namespaces.as_slice()),
        g.annotations()
            .get(membership::PROVIDED_APIS_ANNOTATION)
            .map(String::as_str),
    )
}

/// Whether the group's spec selects no namespace now.
fn selects_nothing(index: &Index, g: &OperatorGroup) -> bool {
    let Ok(selector) = g
        .spec
        .selector
        .as_ref()
        .map(olm_api::selector::from_api)
        .transpose()
    else {
        return false;
    };
    let namespaces = index.namespaces();
    membership::target_namespaces(
        &g.spec.target_namespaces,
        selector.as_ref(),
        namespaces.iter().map(|(n, l)| (n.as_str(), l)),
    )
    .is_ok_and(|t| t.is_empty())
}

/// One reconcile, step by step as the module's flow says; the delay before the CSV is looked
/// at again, when it asks for one.
async fn reconcile_one(csv: &ClusterServiceVersion, ctx: &Ctx) -> Result<Option<Duration>, Error> {
    let api: Api<ClusterServiceVersion> = Api::namespaced(
        ctx.shared.client.clone(),
        &csv.namespace().unwrap_or_default(),
    );
    // 0–1.
    let surface = match admit(ctx, csv, &api).await? {
        Admitted::Stop(requeue) => return Ok(requeue),
        Admitted::Go(surface) => surface,
    };
    // 2.
    let (now, now_text) = now_text();
    let status = CsvStatus::read(csv.status.as_ref());
    let Some(group) = settle_membership(ctx, csv, &api, &surface, &status, &now_text).await? else {
        return Ok(None);
    };
    if retry_after_rbac_change(ctx, csv, &api, &status, &now_text).await? {
        return Ok(None);
    }
    // 3.
    let Some((status, requeue)) = phase(ctx, csv, &api, &group, status, now, &now_text).await?
    else {
        return Ok(None);
    };
    // 4.
    keep_alongside(ctx, csv, &group, &status, &surface).await?;
    Ok(requeue)
}

/// Whether a pass goes on past its first steps.
enum Admitted {
    /// It ends here, to be looked at again after the delay when there is one.
    Stop(Option<Duration>),
    /// It goes on, with the APIs the CSV provides.
    Go(olm_v0::olm_operator::surface::Surface),
}

/// Steps 0 and 1: deletion and the finalizer, a CSV being moved to OLM v1, and the API labels.
async fn admit(
    ctx: &Ctx,
    csv: &ClusterServiceVersion,
    api: &Api<ClusterServiceVersion>,
) -> Result<Admitted, Error> {
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    if csv.meta().deletion_timestamp.is_some() {
        let done = cleanup::finalize(&ctx.shared.client, &ctx.index, api, csv).await?;
        return Ok(Admitted::Stop((!done).then_some(Duration::from_secs(1))));
    }
    if cleanup::ensure_finalizer(api, csv).await? {
        return Ok(Admitted::Stop(None));
    }
    // Being moved to OLM v1 (`olm migrate`): its objects are the extension's to take over, so
    // nothing of it is written or repaired until the move deletes it.
    if let Some(to) = csv.annotations().get(olm_k8s::MIGRATING_TO_ANNOTATION) {
        debug!(csv = %name, namespace = %namespace, extension = %to, "moving to OLM v1; left alone");
        return Ok(Admitted::Stop(None));
    }
    let surface = match surface_of(csv) {
        Ok(s) => s,
        Err(e) => {
            warn!(csv = %name, namespace = %namespace, error = %e, "the CSV's API surface cannot be worked out; leaving it as it is");
            return Ok(Admitted::Stop(None));
        }
    };
    if let Some(patch) =
        olm_v0::olm_operator::surface::api_label_patch(csv.labels(), &api_labels(&surface))
    {
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        return Ok(Admitted::Stop(None));
    }
    Ok(Admitted::Go(surface))
}

/// A CSV its group's account could not install is looked at again once RBAC changed: set
/// back to `Pending` (`DetectedClusterChange`). Whether it was, which ends the pass.
async fn retry_after_rbac_change(
    ctx: &Ctx,
    csv: &ClusterServiceVersion,
    api: &Api<ClusterServiceVersion>,
    status: &CsvStatus,
    now_text: &str,
) -> Result<bool, Error> {
    if status.reason != Some(Reason::InstallComponentFailedNoRetry)
        || !ctx.index.take_rbac_change(&key(csv))
    {
        return Ok(false);
    }
    let mut status = status.clone();
    status.set_phase(
        Phase::Pending,
        Reason::DetectedClusterChange,
        "Cluster resources changed state",
        now_text,
    );
    write_status(api, csv, &status, None).await?;
    Ok(true)
}

/// Step 3, the phase machine: gathers its facts, asks it for the step (and again with the
/// install's outcome when the step is to install), and carries out how the pass ends. The
/// status now held and the delay the machine asks for; none when the pass stops here.
async fn phase(
    ctx: &Ctx,
    csv: &ClusterServiceVersion,
    api: &Api<ClusterServiceVersion>,
    group: &OperatorGroup,
    status: CsvStatus,
    now: jiff::Timestamp,
    now_text: &str,
) -> Result<Option<(CsvStatus, Option<Duration>)>, Error> {
    let Gathered {
        mut facts,
        requirement_statuses,
        renewal,
    } = gather(ctx, csv, group, &status, now).await?;
    let mut step = transition::next(&facts);
    if step == Step::Install {
        facts.install_outcome = Some(install_strategy(ctx, csv, group, now).await?);
        step = transition::next(&facts);
    }
    let stored = csv
        .status
        .as_ref()
        .map_or(&[][..], |s| s.requirement_status.as_slice());
    let requirements_changed = requirement_statuses
        .as_ref()
        .is_some_and(|r| r.as_slice() != stored);
    let end = transition::conclude(
        step,
        status,
        facts.since_transition,
        requirements_changed,
        renewal,
        now_text,
    );
    let requeue = end.requeue;
    Ok(perform(ctx, csv, api, end, requirement_statuses.as_deref())
        .await?
        .map(|status| (status, requeue)))
}

/// Step 4: the OperatorCondition, the roles of the APIs a Succeeded CSV provides, and an
/// AllNamespaces operator's RBAC lifted to the cluster.
async fn keep_alongside(
    ctx: &Ctx,
    csv: &ClusterServiceVersion,
    group: &OperatorGroup,
    status: &CsvStatus,
    surface: &olm_v0::olm_operator::surface::Surface,
) -> Result<(), Error> {
    ensure_condition(ctx, csv).await?;
    if status.phase == Some(Phase::Succeeded) {
        ensure_api_roles(ctx, csv, surface).await?;
    }
    let all_namespaces = group
        .status
        .as_ref()
        .is_some_and(|s| s.namespaces.len() == 1 && s.namespaces[0].is_empty());
    if all_namespaces && !status.is_uncopiable() {
        lift_rbac(ctx, csv).await?;
    }
    Ok(())
}

/// Carries out how the pass ends: deletes a replaced CSV, or writes the status and records its
/// Event; the status now held, or none when the pass stops here (deleted, or written from a
/// stale copy, whose newer one wakes the CSV again).
async fn perform(
    ctx: &Ctx,
    csv: &ClusterServiceVersion,
    api: &Api<ClusterServiceVersion>,
    end: transition::Concluded,
    requirement_statuses: Option<&[RequirementStatus]>,
) -> Result<Option<CsvStatus>, Error> {
    let name = csv.name_any();
    if end.delete {
        info!(csv = %name, namespace = %csv.namespace().unwrap_or_default(), "deleting the replaced CSV");
        match api.delete(&name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
        return Ok(None);
    }
    if end.write {
        match write_status(api, csv, &end.status, requirement_statuses).await {
            Ok(_) => {}
            Err(Error::Kube(kube::Error::Api(s))) if s.code == 409 => return Ok(None),
            Err(e) => return Err(e),
        }
        if let Some(e) = end.event {
            record(ctx, csv, e).await;
        }
    }
    if let Some(m) = end.retry {
        return Err(Error::Retry(m));
    }
    Ok(Some(end.status))
}

/// Installs the CSV's strategy as its group's ServiceAccount (everything is installed as that
/// account when the group names one: it may create no more than it is allowed), counting
/// failures for the install backoff; the outcome, for the phase machine.
async fn install_strategy(
    ctx: &Ctx,
    csv: &ClusterServiceVersion,
    group: &OperatorGroup,
    now: jiff::Timestamp,
) -> Result<Result<(), (String, bool)>, Error> {
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    let key = key(csv);
    let last = lock(&ctx.install_failures).get(&key).copied();
    let scoped = match group
        .spec
        .service_account_name
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        Some(sa) => olm_cluster::permissions::impersonating_client(&ctx.shared, &namespace, sa)?,
        None => ctx.shared.client.clone(),
    };
    let outcome = install::install(&scoped, &ctx.index, csv, group, now).await;
    match &outcome {
        Err((e, _)) => {
            warn!(csv = %name, namespace = %namespace, error = %e, "installing the strategy failed");
            let attempts = last.map_or(1, |(n, _)| n + 1);
            lock(&ctx.install_failures).insert(key, (attempts, now));
        }
        Ok(()) => {
            lock(&ctx.install_failures).remove(&key);
        }
    }
    Ok(outcome)
}

/// What step 3 of a pass reads: the phase machine's facts, the requirement statuses to write
/// (when they were checked) and when the first serving certificate is due for renewal.
struct Gathered {
    facts: Facts,
    requirement_statuses: Option<Vec<RequirementStatus>>,
    renewal: Option<Duration>,
}

/// Gathers the facts [`transition::next`] decides from, reading only what the CSV's phase
/// needs: requirements while it is Pending, Succeeded or Failed; webhooks and owner conflicts
/// while Pending or Failed; certificates, webhooks, APIServices and Deployments once installed.
async fn gather(
    ctx: &Ctx,
    csv: &ClusterServiceVersion,
    group: &OperatorGroup,
    status: &CsvStatus,
    now: jiff::Timestamp,
) -> Result<Gathered, Error> {
    let client = &ctx.shared.client;
    let index = &ctx.index;
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    let fail_forward =
        group.spec.upgrade_strategy == Some(UpgradeStrategy::TechPreviewUnsafeFailForward);
    let phase = status.phase.as_ref();
    let mut facts = Facts {
        phase: status.phase.clone(),
        reason: status.reason.clone(),
        fail_forward,
        never_installed: !status.installed_once(),
        install_failures: lock(&ctx.install_failures)
            .get(&key(csv))
            .map(|(attempts, at)| (*attempts, elapsed(now, *at))),
        ..Facts::default()
    };
    facts.since_transition = status
        .last_transition_time
        .as_deref()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(|since| elapsed(now, since));
    let replaced = csv
        .spec
        .replaces
        .as_deref()
        .filter(|r| *r != name)
        .and_then(|r| index.csv(&namespace, r));
    if let Some(old) = &replaced {
        facts.replaced = Some(Replaced {
            phase: crate::phase_and_reason(old).0.cloned(),
            upgradeable: olm_v0::olm_operator::operatorcondition::upgradeable(
                condition_of(index, &namespace, &old.name_any()).as_deref(),
            ),
        });
        facts.replaces_existing = true;
    }
    facts.replacement = replacement(index, csv, phase == Some(&Phase::Replacing) && fail_forward);

    let mut requirement_statuses = None;
    let mut renewal = None;
    if matches!(
        phase,
        Some(Phase::Pending | Phase::Succeeded | Phase::Failed)
    ) {
        facts.requirements = Some(match install::strategy(csv) {
            Err(e) => Err(e),
            Ok(_) => {
                let checked =
                    requirements::check(client, index, csv, ctx.server_version.as_deref()).await?;
                requirement_statuses = Some(
                    checked
                        .statuses
                        .iter()
                        .map(olm_v0::olm_operator::requirements::RequirementStatus::to_api)
                        .collect(),
                );
                Ok(checked.met)
            }
        });
    }
    if matches!(phase, Some(Phase::Pending | Phase::Failed)) {
        facts.webhook_problem =
            olm_v0::olm_operator::webhook::webhook_problem(&csv.spec.webhook_definitions);
        facts.owner_conflict = owner_conflict(index, csv);
    }
    // A Failed CSV that never installed has nothing to re-certify or repair: the machine does
    // not read these facts for it.
    let installed_phase = match phase {
        Some(Phase::Installing | Phase::Succeeded) => true,
        Some(Phase::Failed) => !facts.never_installed,
        _ => false,
    };
    if installed_phase {
        let installed = installed(ctx, csv, now).await?;
        facts.cert_rotation_due = installed.rotation_due;
        renewal = installed.renewal;
        match installed.status {
            None => facts.deployment_unbuildable = true,
            Some(s) => facts.install_status = Some(s),
        }
    }
    Ok(Gathered {
        facts,
        requirement_statuses,
        renewal,
    })
}

/// What an installed CSV's pass reads of what it installed.
struct Installed {
    /// A serving certificate is due for rotation.
    rotation_due: bool,
    /// When the first certificate is to be renewed, from now.
    renewal: Option<Duration>,
    /// The strategy's, APIServices' and webhooks' state; none when the Deployments cannot even
    /// be built from the CSV.
    status: Option<InstallStatus>,
}

/// Reads the serving certificates, webhooks and APIServices of an installed CSV and checks its
/// Deployments against them.
async fn installed(
    ctx: &Ctx,
    csv: &ClusterServiceVersion,
    now: jiff::Timestamp,
) -> Result<Installed, Error> {
    let client = &ctx.shared.client;
    let (certs, rotation_due, (webhooks, apiservices)) = if serving::needed(csv) {
        let (certs, due) = serving::read(client, csv, now).await?;
        let owner = olm_v0::olm_operator::strategy::CsvOwner::from_csv(csv)
            .map_err(|e| Error::Retry(e.to_string()))?;
        (
            certs,
            due,
            serving::installed(client, &ctx.index, csv, &owner).await?,
        )
    } else {
        (BTreeMap::new(), false, (true, true))
    };
    // Renewal needs no event: the CSV is looked at again when its first certificate is due.
    let renewal = certs
        .values()
        .map(|c| c.renew_at)
        .min()
        .map(|at| Duration::from_secs(at.duration_since(now).as_secs().max(1).unsigned_abs()));
    let status = install::check(&ctx.index, csv, &certs)
        .ok()
        .map(|strategy| InstallStatus {
            strategy,
            apiservices: Ok(apiservices),
            webhooks: Ok(webhooks),
        });
    Ok(Installed {
        rotation_due,
        renewal,
        status,
    })
}

/// Step 2 of a pass: whether the CSV (its `status` as [`CsvStatus::read`] reads it) may be
/// installed by the only OperatorGroup of its namespace ([`membership::check`]), and what is done
/// when it may not — the CSV failed (its Deployments deleted when the verdict says so), annotated
/// with its group, or the group's provided APIs updated. The group when the CSV is its member; none
/// when this pass ends here.
async fn settle_membership(
    ctx: &Ctx,
    csv: &ClusterServiceVersion,
    api: &Api<ClusterServiceVersion>,
    surface: &olm_v0::olm_operator::surface::Surface,
    status: &CsvStatus,
    now_text: &str,
) -> Result<Option<Arc<OperatorGroup>>, Error> {
    let client = &ctx.shared.client;
    let index = &ctx.index;
    let name = csv.name_any();
    let namespace = csv.namespace().unwrap_or_default();
    let groups = index.groups_in(&namespace);
    let verdict = membership_verdict(index, csv, &groups, surface, status);
    match verdict {
        Verdict::Member => {}
        Verdict::Unchanged => return Ok(None),
        Verdict::Error(m) => return Err(Error::Retry(m)),
        Verdict::Fail {
            reason,
            message,
            delete_deployments,
            retry,
        } => {
            if delete_deployments {
                install::delete_deployments(client, index, csv).await?;
            }
            let mut status = status.clone();
            if let Some(event) =
                status.set_phase_if_changed(Phase::Failed, reason, &message, now_text)
            {
                write_status(api, csv, &status, None).await?;
                record(ctx, csv, event).await;
            }
            return if retry {
                Err(Error::Retry(message))
            } else {
                Ok(None)
            };
        }
        Verdict::Annotate {
            annotations,
            then_fail,
        } => {
            let patch = json!({"metadata": {"annotations": annotations}});
            let patched = api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            if then_fail {
                let mut status = status.clone();
                if let Some(event) = status.set_phase_if_changed(
                    Phase::Failed,
                    Reason::NoTargetNamespaces,
                    membership::NO_TARGET_NAMESPACES_MESSAGE,
                    now_text,
                ) {
                    write_status(api, &patched, &status, None).await?;
                    record(ctx, csv, event).await;
                }
            }
            return Ok(None);
        }
        Verdict::SetGroupApis(apis) => {
            if let Some(g) = groups.first() {
                let groups_api: Api<OperatorGroup> = Api::namespaced(client.clone(), &namespace);
                let patch = json!({
                    "metadata": {
                        "resourceVersion": g.resource_version(),
                        "annotations": {membership::PROVIDED_APIS_ANNOTATION: apis},
                    }
                });
                groups_api
                    .patch(
                        &g.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await?;
            }
            return Ok(None);
        }
    }
    Ok(groups.first().cloned())
}

/// What the CSV's membership in its namespace's `groups` comes to (`membership::check`, over
/// views of the groups and of every group of the cluster).
fn membership_verdict(
    index: &Index,
    csv: &ClusterServiceVersion,
    groups: &[Arc<OperatorGroup>],
    surface: &olm_v0::olm_operator::surface::Surface,
    status: &CsvStatus,
) -> Verdict {
    let namespace = csv.namespace().unwrap_or_default();
    let nothing_selected: Vec<bool> = groups.iter().map(|g| selects_nothing(index, g)).collect();
    let group_names: Vec<(String, String)> = groups
        .iter()
        .map(|g| (g.name_any(), g.namespace().unwrap_or_default()))
        .collect();
    let member_groups: Vec<membership::Group<'_>> = groups
        .iter()
        .zip(&group_names)
        .zip(&nothing_selected)
        .map(|((g, (n, ns)), nothing)| membership::Group {
            name: n,
            namespace: ns,
            status_namespaces: g.status.as_ref().map(|s| s.namespaces.as_slice()),
            provided_apis: g
                .annotations()
                .get(membership::PROVIDED_APIS_ANNOTATION)
                .map(String::as_str),
            static_provided_apis: g.spec.static_provided_apis,
            selects_nothing: *nothing,
        })
        .collect();
    let others: Vec<OperatorGroupView> =
        index.groups.state().iter().map(|g| group_view(g)).collect();
    membership::check(
        &membership::Csv {
            namespace: &namespace,
            annotations: csv.annotations(),
            install_modes: &csv.spec.install_modes,
            provided_apis: &surface.provided,
            reason: status.reason.as_ref(),
        },
        &member_groups,
        &others,
    )
}

/// The time from `since` to `now`; none when `since` is later.
fn elapsed(now: jiff::Timestamp, since: jiff::Timestamp) -> Duration {
    Duration::try_from(now.duration_since(since)).unwrap_or(Duration::ZERO)
}

/// The OperatorCondition named `name` in `namespace`, which the upgrade gate reads.
fn condition_of(
    index: &Index,
    namespace: &str,
    name: &str,
) -> Option<Arc<olm_v0_api::v2::OperatorCondition>> {
    index
        .conditions
        .get(&ObjectRef::new(name).within(namespace))
}

/// The CSV that replaces `csv` (by name, first), with its phase; with `newest`, the newest of
/// the chain of replacements (fail-forward), never looping.
fn replacement(
    index: &Index,
    csv: &ClusterServiceVersion,
    newest: bool,
) -> Option<(String, Option<Phase>)> {
    let namespace = csv.namespace().unwrap_or_default();
    let all = index.csvs_in(&namespace);
    let next = |of: &str| {
        all.iter()
            .find(|c| c.spec.replaces.as_deref() == Some(of) && c.name_any() != of)
            .cloned()
    };
    let mut current = next(&csv.name_any())?;
    if newest {
        let mut seen = HashSet::from([csv.name_any(), current.name_any()]);
        while let Some(n) = next(&current.name_any()) {
            if !seen.insert(n.name_any()) {
                break;
            }
            current = n;
        }
    }
    let phase = crate::phase_and_reason(&current).0.cloned();
    Some((current.name_any(), phase))
}

/// `OwnerConflict`'s message when a CSV of the namespace outside this one's replacement chain
/// owns one of its CRDs, or an APIService it owns exists and may not be adopted
/// ([`olm_v0::olm_operator::adoption`]).
fn owner_conflict(index: &Index, csv: &ClusterServiceVersion) -> Option<String> {
    let namespace = csv.namespace().unwrap_or_default();
    let all = index.csvs_in(&namespace);
    let by_name: BTreeMap<String, &Arc<ClusterServiceVersion>> =
        all.iter().map(|c| (c.name_any(), c)).collect();
    // The chain: backwards through `replaces`, forwards through replacers.
    let mut chain: HashSet<String> = HashSet::from([csv.name_any()]);
    let mut back = csv.spec.replaces.clone();
    while let Some(r) = back {
        if !chain.insert(r.clone()) {
            break;
        }
        back = by_name.get(&r).and_then(|c| c.spec.replaces.clone());
    }
    loop {
        let before = chain.len();
        for c in &all {
            if c.spec.replaces.as_ref().is_some_and(|r| chain.contains(r)) {
                chain.insert(c.name_any());
            }
        }
        if chain.len() == before {
            break;
        }
    }
    let owned = |c: &ClusterServiceVersion| -> Vec<String> {
        c.spec
            .custom_resource_definitions
            .as_ref()
            .map(|d| d.owned.iter().map(|o| o.name.clone()).collect())
            .unwrap_or_default()
    };
    let mine = owned(csv);
    if all
        .iter()
        .filter(|c| !chain.contains(&c.name_any()))
        .any(|c| owned(c).iter().any(|n| mine.contains(n)))
    {
        return Some("conflicting CRD owner in namespace".to_owned());
    }
    // Each owned APIService that exists must be adoptable (upstream's
    // `apiServiceOwnerConflicts`).
    let replacing = csv
        .spec
        .replaces
        .as_deref()
        .filter(|r| by_name.contains_key(*r));
    let descriptions = csv
        .spec
        .api_service_definitions
        .iter()
        .flat_map(|d| &d.owned);
    for d in descriptions {
        let Some(service) = index
            .apiservices
            .get(&ObjectRef::new(&format!("{}.{}", d.version, d.group)))
        else {
            continue;
        };
        let owner_making_way = olm_v0::olm_operator::adoption::owner_csv(service.labels())
            .is_some_and(|(namespace, name)| {
                index.csv(namespace, name).is_some_and(|c| {
                    matches!(
                        crate::phase_and_reason(&c).0,
                        Some(Phase::Replacing | Phase::Deleting)
                    )
                })
            });
        let claim = olm_v0::olm_operator::adoption::Claim {
            namespace: &namespace,
            name: &csv.name_any(),
            replacing,
            owner_making_way,
        };
        if !olm_v0::olm_operator::adoption::apiservice_adoptable(service.labels(), &claim) {
            return Some(olm_v0::olm_operator::adoption::APISERVICE_OWNER_CONFLICT.to_owned());
        }
    }
    None
}

/// Writes phase, reason, message, times and history (and the requirement statuses when
/// given), conditional on the resourceVersion the decision read; every message bounded, and a
/// status the API server refuses written with its long messages shortened
/// ([`olm_runtime::status`]).
async fn write_status(
    api: &Api<ClusterServiceVersion>,
    csv: &ClusterServiceVersion,
    status: &CsvStatus,
    requirements: Option<&[RequirementStatus]>,
) -> Result<ClusterServiceVersion, Error> {
    // The empty phase and reason are written as `""`, as they were read.
    let phase = |p: &Option<Phase>| p.as_ref().map_or("", Phase::as_str).to_owned();
    let reason = |r: &Option<Reason>| r.as_ref().map_or("", Reason::as_str).to_owned();
    let conditions: Vec<Value> = status
        .conditions
        .iter()
        .map(|c| {
            json!({
                "phase": phase(&c.phase),
                "reason": reason(&c.reason),
                "message": c.message,
                "lastUpdateTime": c.last_update_time,
                "lastTransitionTime": c.last_transition_time,
            })
        })
        .collect();
    let mut s = json!({
        "phase": phase(&status.phase),
        "reason": reason(&status.reason),
        "message": status.message,
        "lastUpdateTime": status.last_update_time,
        "lastTransitionTime": status.last_transition_time,
        "conditions": conditions,
    });
    if let Some(r) = requirements {
        s["requirementStatus"] = json!(r);
    }
    let metadata = json!({"resourceVersion": csv.resource_version()});
    Ok(olm_runtime::status::patch(api, &csv.name_any(), Some(&metadata), s).await?)
}

async fn record(
    ctx: &Ctx,
    csv: &ClusterServiceVersion,
    e: olm_v0::olm_operator::status::PhaseEvent,
) {
    let event = Event {
        type_: if e.type_ == "Warning" {
            EventType::Warning
        } else {
            EventType::Normal
        },
        reason: e.reason,
        note: Some(e.message),
        action: "Reconcile".into(),
        secondary: None,
    };
    if let Err(err) = ctx.recorder.publish(&event, &csv.object_ref(&())).await {
        warn!(csv = %csv.name_any(), namespace = ?csv.namespace(), error = %err, "recording an event failed");
    }
}

/// The ClusterRoles that let Kubernetes' admin, edit and view roles (and the group's) use the
/// APIs a succeeded CSV provides; applied once per process per CSV and CRD or APIService.
async fn ensure_api_roles(
    ctx: &Ctx,
    csv: &ClusterServiceVersion,
    surface: &olm_v0::olm_operator::surface::Surface,
) -> Result<(), Error> {
    let client = &ctx.shared.client;
    let params = PatchParams::apply(crate::FIELD_MANAGER).force();
    let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(client.clone());
    let crds = csv
        .spec
        .custom_resource_definitions
        .clone()
        .unwrap_or_default();
    let apis = csv.spec.api_service_definitions.clone().unwrap_or_default();
    let mut wanted = Vec::new();
    for owned in &crds.owned {
        let Some(crd) = ctx.index.crds.get(&ObjectRef::new(&owned.name)) else {
            continue;
        };
        let Some(key) = surface.provided.0.iter().find(|k| {
            format!("{}.{}", k.plural, k.group) == owned.name && k.version == owned.version
        }) else {
            continue;
        };
        wanted.push((
            owned.name.clone(),
            key.clone(),
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            crd.name_any(),
            crd.uid().unwrap_or_default(),
            true,
        ));
    }
    let services: Api<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService> =
        Api::all(client.clone());
    for owned in &apis.owned {
        let service_name = format!("{}.{}", owned.version, owned.group);
        let Some(service) = services.get_opt(&service_name).await? else {
            continue;
        };
        let key = olm_v0::ApiKey {
            group: owned.group.clone(),
            version: owned.version.clone(),
            kind: owned.kind.clone(),
            plural: owned.name.clone(),
        };
        wanted.push((
            owned.name.clone(),
            key,
            "apiregistration.k8s.io/v1",
            "APIService",
            service_name,
            service.uid().unwrap_or_default(),
            false,
        ));
    }
    for (name, key, api_version, kind, owner_name, uid, crd) in wanted {
        // One APIService serves each of its group version's resources: the resource is part of
        // what was applied, not just the owner.
        let memo = format!(
            "{}/{uid}/{}/{name}",
            csv.uid().unwrap_or_default(),
            key.version
        );
        if lock(&ctx.api_roles).contains(&memo) {
            continue;
        }
        let owner = olm_v0::olm_operator::rbac::ApiOwner {
            api_version,
            kind,
            name: &owner_name,
            uid: &uid,
        };
        for role in olm_v0::olm_operator::rbac::provided_api_cluster_roles(&name, &key, &owner, crd)
        {
            let role_name = role["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            roles
                .patch(&role_name, &params, &Patch::Apply(&role))
                .await?;
        }
        lock(&ctx.api_roles).insert(memo);
    }
    Ok(())
}

/// An AllNamespaces operator whose namespaced permissions are not granted cluster-wide gets
/// each Role and RoleBinding OLM made for it in its namespace (found by its owner labels) as a
/// ClusterRole and ClusterRoleBinding of the same name (upstream's `ensureSingletonRBAC`),
/// created once, never updated.
async fn lift_rbac(ctx: &Ctx, csv: &ClusterServiceVersion) -> Result<(), Error> {
    if requirements::granted_cluster_wide(&ctx.index, csv) {
        return Ok(());
    }
    let namespace = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let owned = |labels: &BTreeMap<String, String>| crate::owned_by_csv(labels, &namespace, &name);
    let client = &ctx.shared.client;
    let namespace = namespace.as_str();
    lift(
        client,
        &ctx.index.roles,
        &ctx.index.cluster_roles,
        |o| o.namespace().as_deref() == Some(namespace) && owned(o.labels()),
        olm_v0::olm_operator::rbac::lifted_cluster_role,
    )
    .await?;
    lift(
        client,
        &ctx.index.role_bindings,
        &ctx.index.cluster_role_bindings,
        |o| o.namespace().as_deref() == Some(namespace) && owned(o.labels()),
        olm_v0::olm_operator::rbac::lifted_cluster_role_binding,
    )
    .await?;
    Ok(())
}

/// Creates the cluster-scoped counterpart (built by `build`, named as the original) of every
/// object of `from` that `pick` selects, unless `to` already holds one of that name.
async fn lift<F, T>(
    client: &kube::Client,
    from: &kube::runtime::reflector::Store<F>,
    to: &kube::runtime::reflector::Store<T>,
    pick: impl Fn(&F) -> bool,
    build: fn(&F) -> T,
) -> Result<(), Error>
where
    F: kube::Resource<DynamicType = ()> + Clone + 'static,
    T: kube::Resource<DynamicType = (), Scope = kube::core::ClusterResourceScope>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned
        + 'static,
{
    let api: Api<T> = Api::all(client.clone());
    for o in from.state() {
        if !pick(&o) || to.get(&ObjectRef::new(&o.name_any())).is_some() {
            continue;
        }
        match api.create(&PostParams::default(), &build(&o)).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Creates the CSV's OperatorCondition when it has none, and the Role and RoleBinding that let
/// the CSV's ServiceAccounts read and update it, once per process.
async fn ensure_condition(ctx: &Ctx, csv: &ClusterServiceVersion) -> Result<(), Error> {
    let namespace = csv.namespace().unwrap_or_default();
    let name = csv.name_any();
    let Ok(owner) = olm_v0::olm_operator::strategy::CsvOwner::from_csv(csv) else {
        return Ok(());
    };
    let conditions: Api<olm_v0_api::v2::OperatorCondition> =
        Api::namespaced(ctx.shared.client.clone(), &namespace);
    let existing = ctx
        .index
        .conditions
        .get(&ObjectRef::new(&name).within(&namespace));
    let Some(existing) = existing else {
        let wanted =
            olm_v0::olm_operator::conditiongen::operator_condition(&owner, &csv.spec.install);
        let typed: olm_v0_api::v2::OperatorCondition =
            serde_json::from_value(wanted).map_err(|e| Error::Retry(e.to_string()))?;
        match conditions.create(&PostParams::default(), &typed).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
        return Ok(());
    };
    // What the operator reports in spec.conditions is mirrored into status with the generation
    // (the upgrade gate reads status).
    let reported = existing
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    if let Some(next) = olm_v0::olm_operator::operatorcondition::mirrored_status(
        &existing.spec.conditions,
        reported,
        existing.meta().generation.unwrap_or_default(),
    ) {
        let patch = json!({
            "metadata": {"resourceVersion": existing.resource_version()},
            "status": {"conditions": next},
        });
        match conditions
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    let uid = existing.uid().unwrap_or_default();
    if lock(&ctx.condition_rbac).contains(&uid) {
        return Ok(());
    }
    let (role, binding) = olm_v0::olm_operator::conditiongen::condition_rbac(&existing);
    let params = PatchParams::apply(crate::FIELD_MANAGER).force();
    let roles: Api<k8s_openapi::api::rbac::v1::Role> =
        Api::namespaced(ctx.shared.client.clone(), &namespace);
    roles.patch(&name, &params, &Patch::Apply(&role)).await?;
    let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> =
        Api::namespaced(ctx.shared.client.clone(), &namespace);
    bindings
        .patch(&name, &params, &Patch::Apply(&binding))
        .await?;
    lock(&ctx.condition_rbac).insert(uid);
    Ok(())
}
