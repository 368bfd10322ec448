//! catalog-operator's InstallPlan execution on a cluster (upstream's `syncInstallPlans`,
//! `transitionInstallPlanState` and `ExecutePlan`): an approved plan's steps are created in
//! order — CSVs, then CRDs, then the rest — each step's status recorded, and the plan marked
//! `Complete` once every step is created or present and every new CRD is established.
//!
//! Rules, as upstream's:
//! * `RequiresApproval` waits for `spec.approved`; then `Installing`.
//! * An object that exists is `Present`, brought to the plan's version (a CSV or Subscription is
//!   left as it is); a CRD is updated only when it is not being deleted, its existing custom
//!   resources validate against the new schema (`olm_v0::catalog_operator::crdupgrade`; a
//!   webhook-converting CRD only warns) and no version stored on the cluster would disappear
//!   (upstream's `SafeStorageVersionUpgrade`, in its words).
//! * Steps are created as the OperatorGroup's ServiceAccount when it names one; CRDs as OLM
//!   itself.
//! * A CRD carries an `operatorframework.io/installed-alongside-<hash>: ns/csv` annotation per
//!   CSV it was installed with (`olm_v0::catalog_operator::alongside`).
//! * Objects owned by the CSV get an owner reference with the CSV's uid, looked up once the CSV
//!   exists; cluster-scoped ones carry the CSV owner labels instead; everything gets
//!   `olm.managed=true`.
//! * A failing step is retried for a minute from the plan's `startTime` (the message says
//!   "retrying execution due to error: …"), then the plan is `Failed` with
//!   `Installed=False/InstallComponentFailed`.
//! * Kinds outside upstream's supported list fail the plan (`UnsupportedResource`).
//! * An object OLM v1 holds (a ClusterExtension's revision controls it) is never created over,
//!   updated or merged into: before the first step is created, every pending step's object is
//!   looked up, and if any belongs to a ClusterExtension the plan fails at once, having created
//!   nothing, with a message naming each object, its extension and what to do (an addition of
//!   this implementation: upstream OLM v0 knows nothing of OLM v1 and overwrote such CRDs).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::discovery::{ApiCapabilities, ApiResource, Scope};
use kube::runtime::reflector::ObjectRef;
use kube::{Client, ResourceExt};
use olm_v0::catalog_operator::execution;
use olm_v0::catalog_operator::execution::phase::{self, Next};
use olm_v0::catalog_operator::steps::{Step, StepStatus};
use olm_v0_api::v1::OperatorGroup;
use olm_v0_api::v1alpha1::InstallPlan;
use serde_json::{Value, json};
use tracing::info;

use crate::error::Error;
use crate::{Index, lock, queue};
use olm_cluster::context::Shared;

/// The name the InstallPlan controller's metrics and logs go by.
pub const INSTALL_PLAN_CONTROLLER: &str = "installplan";
/// Kinds an InstallPlan may create besides CSVs, CRDs, RBAC, ServiceAccounts, Secrets,
/// Services, ConfigMaps and Subscriptions (upstream's `supportedresources.go`).
const SUPPORTED_KINDS: &[&str] = &[
    "PrometheusRule",
    "ServiceMonitor",
    "PodDisruptionBudget",
    "PriorityClass",
    "VerticalPodAutoscaler",
    "ConsoleYAMLSample",
    "ConsoleQuickStart",
    "ConsoleCLIDownload",
    "ConsoleLink",
    "ConsolePlugin",
    "NetworkPolicy",
];
/// Kinds every plan may create.
const CORE_KINDS: &[&str] = &[
    "ClusterServiceVersion",
    "CustomResourceDefinition",
    "Subscription",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "Secret",
    "Service",
    "ConfigMap",
];

struct Ctx {
    shared: Arc<Shared>,
    index: Index,
    /// Discovery answers, by (apiVersion, kind).
    resources: Mutex<HashMap<(String, String), (ApiResource, ApiCapabilities)>>,
}

/// Runs the controller until `stop` resolves; `woken` names plans (`namespace/name`).
pub async fn run(
    shared: Arc<Shared>,
    index: Index,
    woken: mpsc::Receiver<String>,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) {
    shared.metrics.register_install_plan_warnings();
    let ctx = Arc::new(Ctx {
        shared: shared.clone(),
        index,
        resources: Mutex::default(),
    });
    queue::run(
        INSTALL_PLAN_CONTROLLER,
        shared,
        woken.map(|k| vec![k]),
        stop,
        // One plan at a time: plans of one namespace may create the same objects.
        1,
        |key| {
            let ctx = ctx.clone();
            async move { sync(&ctx, &key).await }
        },
    )
    .await;
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

async fn sync(ctx: &Ctx, key: &str) -> Result<queue::Next, Error> {
    let Some((namespace, name)) = key.split_once('/') else {
        return Ok(None);
    };
    let Some(plan) = ctx
        .index
        .installplans
        .get(&ObjectRef::new(name).within(namespace))
    else {
        return Ok(None);
    };
    let groups = ctx.index.groups_in(namespace);
    let groups: Vec<&OperatorGroup> = groups.iter().map(|g| &**g).collect();
    let next = phase::decide(&phase::Observed {
        plan: &plan,
        groups: &groups,
        now: crate::now().0,
    });
    match next {
        Next::Nothing => Ok(None),
        Next::After(wait) => Ok(Some(wait)),
        Next::Planned { phase, status } => {
            info!(namespace = %namespace, installplan = %name, phase, "InstallPlan made by hand");
            write(ctx, namespace, name, status).await?;
            Ok(None)
        }
        Next::Write(status) => {
            write(ctx, namespace, name, status).await?;
            Ok(None)
        }
        Next::Unresolved { write: said, error } => {
            if let Some(status) = said {
                write(ctx, namespace, name, status).await?;
            }
            Err(Error::Retry(error))
        }
        Next::Execute => execute(ctx, namespace, name, &serde_json::to_value(&*plan)?).await,
    }
}

/// The client a plan's steps are created with: as the ServiceAccount in
/// `status.attenuatedServiceAccountRef` when there is one, so it creates no more than that
/// account may.
fn plan_client(ctx: &Ctx, plan: &Value) -> Result<Client, Error> {
    let account = plan.pointer("/status/attenuatedServiceAccountRef");
    match account.map(|a| (text(a, "/namespace"), text(a, "/name"))) {
        Some((namespace, name)) if !name.is_empty() => Ok(
            olm_cluster::permissions::impersonating_client(&ctx.shared, namespace, name)?,
        ),
        _ => Ok(ctx.shared.client.clone()),
    }
}

/// Merges `status` into the plan's status, its messages bounded (a step's error can quote a
/// whole manifest) and, if the API server refuses it, shortened ([`olm_runtime::status`]).
async fn write(ctx: &Ctx, namespace: &str, name: &str, status: Value) -> Result<(), Error> {
    let api = Api::<InstallPlan>::namespaced(ctx.shared.client.clone(), namespace);
    olm_runtime::status::patch(&api, name, None, status).await?;
    Ok(())
}

/// One execution pass over an `Installing` plan.
async fn execute(
    ctx: &Ctx,
    namespace: &str,
    name: &str,
    plan: &Value,
) -> Result<queue::Next, Error> {
    let now = crate::now().0;
    let started = text(plan, "/status/startTime").to_owned();
    let mut steps: Vec<Step> = plan
        .pointer("/status/plan")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(Step::from_json)
        .collect::<Result<_, _>>()
        .map_err(|e| Error::Retry(format!("InstallPlan {namespace}/{name}: {e}")))?;
    // Every write of the plan records the API server's warnings, as upstream's clients for
    // plan execution do, so each step that drew any is reported on the plan.
    let warnings = olm_runtime::warnings::Warnings::default();
    let clients = Clients {
        plan: warnings.wrap(&plan_client(ctx, plan)?),
        olm: warnings.wrap(&ctx.shared.client),
    };
    let mut error: Option<StepError> = None;
    // A kind outside the supported list fails the plan before anything is created, so nothing
    // is half installed.
    let mut unsupported = false;
    for step in &mut steps {
        if matches!(step.status, StepStatus::Unknown | StepStatus::NotPresent)
            && !supported(&step.resource.kind)
        {
            step.status = StepStatus::UnsupportedResource;
            unsupported = true;
        }
    }
    let refused = if unsupported {
        None
    } else {
        // A failed read is retried like a failed step.
        held_by_olm_v1(ctx, namespace, &steps).await?
    };
    if refused.is_none() && !unsupported {
        for (i, step) in steps.iter_mut().enumerate() {
            let result = match step.status {
                StepStatus::Unknown | StepStatus::NotPresent => {
                    warnings.take();
                    let result = apply(ctx, &clients, namespace, name, step).await;
                    report_warnings(ctx, namespace, name, i, step, &warnings).await;
                    result
                }
                StepStatus::WaitingForApi => Ok(established(ctx, step)),
                _ => continue,
            };
            match result {
                Ok(s) => step.status = s,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
    }
    let conclusion = execution::conclude(&execution::Pass {
        steps: &steps,
        started: &started,
        now,
        unsupported,
        held: refused,
        failure: error.map(|e| execution::StepFailure {
            message: e.message,
            forbidden: e.forbidden,
            refused: e.refused,
        }),
    });
    let message = conclusion.status["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    write(ctx, namespace, name, conclusion.status).await?;
    match conclusion.ended {
        execution::Ended::Again => Ok(Some(execution::REQUEUE)),
        execution::Ended::Refused => {
            info!(namespace = %namespace, installplan = %name, error = %message, "InstallPlan refused: OLM v1 holds its objects");
            Ok(None)
        }
        execution::Ended::Failed => {
            info!(namespace = %namespace, installplan = %name, "InstallPlan failed");
            Ok(None)
        }
        execution::Ended::Complete => {
            info!(namespace = %namespace, installplan = %name, "InstallPlan complete");
            Ok(None)
        }
    }
}

/// Why a step failed. A Forbidden answer is retried past the retry timeout, as upstream does:
/// the plan's ServiceAccount may be granted what it lacks. An object OLM v1 holds fails the
/// plan at once (`refused`): retrying would not change whose it is.
struct StepError {
    message: String,
    forbidden: bool,
    refused: bool,
}

impl From<String> for StepError {
    fn from(message: String) -> Self {
        StepError {
            message,
            forbidden: false,
            refused: false,
        }
    }
}

/// `context: error`, remembering whether the API server said Forbidden.
fn api_error(context: String, e: &kube::Error) -> StepError {
    StepError {
        message: format!("{context}: {}", olm_runtime::api_error::message(e)),
        forbidden: matches!(e, kube::Error::Api(s) if s.code == 403),
        refused: false,
    }
}

/// Every pending step's object that exists and that OLM v1 holds, as one message (`None`
/// when there is none). CRDs come from the cache; other objects are read once each, as the
/// controller (the plan's ServiceAccount may not be allowed to read).
async fn held_by_olm_v1(
    ctx: &Ctx,
    namespace: &str,
    steps: &[Step],
) -> Result<Option<String>, Error> {
    let mut held = Vec::new();
    for step in steps
        .iter()
        .filter(|s| matches!(s.status, StepStatus::Unknown | StepStatus::NotPresent))
    {
        let kind = plain(&step.resource.kind);
        let name = &step.resource.name;
        let current = if kind == "CustomResourceDefinition" {
            ctx.index
                .crds
                .get(&ObjectRef::new(name))
                .map(|crd| serde_json::to_value(&*crd))
                .transpose()?
        } else {
            let object = step
                .resource
                .object()
                .map_err(|e| Error::Retry(e.to_string()))?;
            let (resource, caps) = discover(ctx, text(&object, "/apiVersion"), kind)
                .await
                .map_err(Error::Retry)?;
            let api: Api<DynamicObject> = if caps.scope == Scope::Namespaced {
                Api::namespaced_with(ctx.shared.client.clone(), namespace, &resource)
            } else {
                Api::all_with(ctx.shared.client.clone(), &resource)
            };
            api.get_opt(name)
                .await?
                .map(|o| serde_json::to_value(&o))
                .transpose()?
        };
        if let Some(why) = current.and_then(|c| {
            c.as_object()
                .and_then(|c| olm_k8s::v0_refusal(kind, name, c))
        }) {
            held.push(why);
        }
    }
    Ok((!held.is_empty()).then(|| held.join("; ")))
}

/// The kind to create for a step's kind (a bundle's Secrets are steps of kind `BundleSecret`).
fn plain(kind: &str) -> &str {
    if kind == olm_v0::catalog_operator::steps::BUNDLE_SECRET_KIND {
        "Secret"
    } else {
        kind
    }
}

/// Whether a plan may create objects of a step's kind.
fn supported(kind: &str) -> bool {
    let kind = plain(kind);
    CORE_KINDS.contains(&kind) || SUPPORTED_KINDS.contains(&kind)
}

/// Whether a created CRD is established and its names accepted.
fn established(ctx: &Ctx, step: &Step) -> StepStatus {
    let Some(crd) = ctx.index.crds.get(&ObjectRef::new(&step.resource.name)) else {
        return StepStatus::WaitingForApi;
    };
    let holds = |kind: &str| {
        crd.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == kind && c.status == "True"))
    };
    if holds("Established") && holds("NamesAccepted") {
        StepStatus::Created
    } else {
        StepStatus::WaitingForApi
    }
}

/// The clients a plan's steps are written with, both recording the API server's warnings.
struct Clients {
    /// As the plan's ServiceAccount, when it has one ([`plan_client`]).
    plan: Client,
    /// As OLM itself, for CRDs.
    olm: Client,
}

/// A Warning event `AppliedWithWarnings` on the plan, naming step `index`, for the warnings
/// creating that step's object drew, and the count `installplan_warnings_total` one up (as
/// upstream's `ExecutePlan`). Failing to record the event is only logged.
async fn report_warnings(
    ctx: &Ctx,
    namespace: &str,
    plan: &str,
    index: usize,
    step: &Step,
    warnings: &olm_runtime::warnings::Warnings,
) {
    let (texts, dropped) = warnings.take();
    if texts.is_empty() {
        return;
    }
    if dropped > 0 {
        tracing::warn!(namespace = %namespace, installplan = %plan, dropped, "more API warnings than are kept; the rest are not reported");
    }
    let note = olm_v0::catalog_operator::steps::warnings_note(
        &step.resolving,
        &step.resource.kind,
        &step.resource.name,
        &texts,
    );
    ctx.shared.metrics.count_install_plan_warning();
    let reference = k8s_openapi::api::core::v1::ObjectReference {
        field_path: Some(format!("status.plan[{index}]")),
        ..plan_reference(namespace, plan)
    };
    let event = kube::runtime::events::Event {
        type_: kube::runtime::events::EventType::Warning,
        reason: olm_v0::catalog_operator::steps::APPLIED_WITH_WARNINGS_REASON.to_owned(),
        note: Some(olm_k8s::truncate_note(&note)),
        action: "Install".to_owned(),
        secondary: None,
    };
    if let Err(e) = crate::recorder(&ctx.shared.client)
        .publish(&event, &reference)
        .await
    {
        tracing::warn!(namespace = %namespace, installplan = %plan, error = %e, "recording an event failed");
    }
}

/// A reference to the InstallPlan `namespace/name`, for its events.
fn plan_reference(namespace: &str, plan: &str) -> k8s_openapi::api::core::v1::ObjectReference {
    k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("operators.coreos.com/v1alpha1".to_owned()),
        kind: Some("InstallPlan".to_owned()),
        name: Some(plan.to_owned()),
        namespace: Some(namespace.to_owned()),
        ..Default::default()
    }
}

/// Creates (or, for RBAC and CRDs, updates) a step's object; its new status.
async fn apply(
    ctx: &Ctx,
    clients: &Clients,
    namespace: &str,
    plan: &str,
    step: &Step,
) -> Result<StepStatus, StepError> {
    let kind = step.resource.kind.as_str();
    let plain_kind = plain(kind);
    if !supported(kind) {
        return Err(
            format!("the InstallPlan contains invalid data: kind {kind} is not supported").into(),
        );
    }
    let mut object = step.resource.object().map_err(|e| e.to_string())?;
    let api_version = text(&object, "/apiVersion").to_owned();
    let (resource, caps) = discover(ctx, &api_version, plain_kind).await?;
    let namespaced = caps.scope == Scope::Namespaced;
    execution::shape(
        &mut object,
        plain_kind,
        namespaced,
        namespace,
        &step.resolving,
        plan,
    );
    if namespaced && plain_kind != "ClusterServiceVersion" && plain_kind != "Subscription" {
        own_by_csvs(
            &ctx.shared.client,
            namespace,
            &step.resolving,
            plain_kind,
            &mut object,
        )
        .await?;
    }
    // A CRD records the CSVs it was installed alongside (the one this step resolves, and on
    // update those the cluster's copy names that still exist).
    let csv_exists = |ns: &str, name: &str| {
        ctx.index
            .csvs
            .get(&ObjectRef::new(name).within(ns))
            .is_some()
    };
    let alongside = |object: &mut Value, current: Option<&Value>| {
        let own = object.clone();
        let annotations = |v: &Value| {
            v.pointer("/metadata/annotations")
                .and_then(Value::as_object)
                .cloned()
        };
        let (own, current) = (annotations(&own), current.and_then(annotations));
        olm_v0::catalog_operator::alongside::annotate(
            object,
            &[own.as_ref(), current.as_ref()],
            namespace,
            &step.resolving,
            csv_exists,
        );
    };
    if plain_kind == "CustomResourceDefinition" {
        alongside(&mut object, None);
    }
    // CRDs are created and updated with OLM's own client, not the plan's ServiceAccount
    // (upstream's step builder): a scoped operator's account is not expected to hold
    // cluster-wide CRD rights.
    let client = if plain_kind == "CustomResourceDefinition" {
        &clients.olm
    } else {
        &clients.plan
    };
    let api: Api<DynamicObject> = if namespaced {
        Api::namespaced_with(client.clone(), namespace, &resource)
    } else {
        Api::all_with(client.clone(), &resource)
    };
    let dynamic: DynamicObject =
        serde_json::from_value(object.clone()).map_err(|e| e.to_string())?;
    match api.create(&PostParams::default(), &dynamic).await {
        Ok(_) if plain_kind == "CustomResourceDefinition" => Ok(StepStatus::WaitingForApi),
        Ok(_) => Ok(StepStatus::Created),
        Err(kube::Error::Api(e)) if e.code == 409 => {
            if let Some(warning) =
                update_existing(client, &api, kind, &step.resource.name, object, &alongside).await?
            {
                warn_on_plan(client, namespace, plan, &warning).await;
            }
            Ok(StepStatus::Present)
        }
        Err(e) => Err(api_error(
            format!("error creating {plain_kind} {}", step.resource.name),
            &e,
        )),
    }
}

/// A Warning event on the plan (a CRD whose existing objects fail its new schema but which
/// converts with a webhook); failing to record it is only logged.
async fn warn_on_plan(client: &Client, namespace: &str, plan: &str, note: &str) {
    use kube::runtime::events::{Event, EventType};
    let reference = plan_reference(namespace, plan);
    let event = Event {
        type_: EventType::Warning,
        reason: olm_v0::catalog_operator::crdupgrade::CRD_VALIDATION_EVENT_REASON.to_owned(),
        note: Some(olm_k8s::truncate_note(note)),
        action: "Install".to_owned(),
        secondary: None,
    };
    if let Err(e) = crate::recorder(client).publish(&event, &reference).await {
        tracing::warn!(namespace = %namespace, installplan = %plan, error = %e, "recording an event failed");
    }
}

/// An object found existing while a step creates it (after the plan's check: OLM v1 took it
/// meanwhile) is left alone as well.
fn refuse_if_v1_holds(kind: &str, name: &str, current: &DynamicObject) -> Result<(), StepError> {
    let value = serde_json::to_value(current).map_err(|e| e.to_string())?;
    match value
        .as_object()
        .and_then(|v| olm_k8s::v0_refusal(kind, name, v))
    {
        Some(message) => Err(StepError {
            message,
            forbidden: false,
            refused: true,
        }),
        None => Ok(()),
    }
}

/// Checks every existing object of `old`'s served versions against `new`'s schemas, a page
/// of 500 at a time (upstream lists with a pager too): the first failure, if any.
async fn existing_objects_failure(
    client: &Client,
    old: &Value,
    new: &Value,
) -> Result<Option<olm_v0::catalog_operator::crdupgrade::TooRestrictive>, StepError> {
    let group = text(new, "/spec/group");
    let plural = text(new, "/spec/names/plural");
    let kind = text(new, "/spec/names/kind");
    for check in olm_v0::catalog_operator::crdupgrade::validations(old, new) {
        let resource = ApiResource {
            group: group.to_owned(),
            version: check.version.clone(),
            api_version: format!("{group}/{}", check.version),
            kind: kind.to_owned(),
            plural: plural.to_owned(),
        };
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let mut params = ListParams::default().limit(500);
        loop {
            let page = api.list(&params).await.map_err(|e| {
                api_error(
                    format!("error listing {plural}.{group}/{}", check.version),
                    &e,
                )
            })?;
            let objects: Vec<Value> = page
                .items
                .iter()
                .map(serde_json::to_value)
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?;
            if let Err(failure) =
                olm_v0::catalog_operator::crdupgrade::check_existing(&check.schema, &objects)
            {
                return Ok(Some(failure));
            }
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => break,
            }
        }
    }
    Ok(None)
}

/// An existing object is brought to the plan's version (upstream's step ensurers): a CRD only
/// when it is not being deleted, its existing objects still validate (or it converts with a
/// webhook: then the Warning to record is returned) and no stored version would be lost; a
/// ServiceAccount merged; a Service keeping the cluster IPs it was given. A CSV, a Subscription
/// or a pull Secret (a step of kind `Secret`; a bundle's are `BundleSecret`) is left as it is.
async fn update_existing(
    client: &Client,
    api: &Api<DynamicObject>,
    kind: &str,
    name: &str,
    mut object: Value,
    alongside: &(dyn Fn(&mut Value, Option<&Value>) + Sync),
) -> Result<Option<String>, StepError> {
    if kind == "ServiceAccount" {
        return merge_service_account(api, name, object)
            .await
            .map(|()| None);
    }
    if matches!(kind, "ClusterServiceVersion" | "Subscription" | "Secret") {
        return Ok(None);
    }
    let kind = plain(kind);
    let mut warning = None;
    let current = api
        .get(name)
        .await
        .map_err(|e| api_error(format!("error getting {kind} {name}"), &e))?;
    refuse_if_v1_holds(kind, name, &current)?;
    if kind == "CustomResourceDefinition" {
        let current_value = serde_json::to_value(&current).map_err(|e| e.to_string())?;
        if let Some(failure) = existing_objects_failure(client, &current_value, &object).await? {
            warning = Some(
                olm_v0::catalog_operator::crdupgrade::on_failure(name, &object, failure)
                    .map_err(|e| e.to_string())?,
            );
        }
        if let Some(refusal) =
            olm_v0::catalog_operator::crdupgrade::update_refusal(name, &current_value, &object)
        {
            return Err(refusal.into());
        }
        alongside(&mut object, Some(&current_value));
    }
    if kind == "Service" {
        olm_v0::catalog_operator::execution::keep_cluster_ips(&mut object, &current.data);
    }
    object["metadata"]["resourceVersion"] = json!(current.resource_version());
    let dynamic: DynamicObject = serde_json::from_value(object).map_err(|e| e.to_string())?;
    api.replace(name, &PostParams::default(), &dynamic)
        .await
        .map_err(|e| api_error(format!("error updating {kind} {name}"), &e))?;
    Ok(warning)
}

/// An existing ServiceAccount as upstream merges it: its secrets kept, owner references
/// joined (so the new CSV owns it too — an upgrade's requirement check needs that), the plan's
/// annotations and labels over its own; written only when that changes it.
async fn merge_service_account(
    api: &Api<DynamicObject>,
    name: &str,
    object: Value,
) -> Result<(), StepError> {
    let current = api
        .get(name)
        .await
        .map_err(|e| api_error(format!("error getting ServiceAccount {name}"), &e))?;
    refuse_if_v1_holds("ServiceAccount", name, &current)?;
    let mut merged = serde_json::to_value(&current).map_err(|e| e.to_string())?;
    let before = merged.clone();
    for reference in object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !merged["metadata"]["ownerReferences"].is_array() {
            merged["metadata"]["ownerReferences"] = json!([]);
        }
        if let Some(refs) = merged["metadata"]["ownerReferences"].as_array_mut()
            && !refs.iter().any(|r| r.get("uid") == reference.get("uid"))
        {
            refs.push(reference.clone());
        }
    }
    for field in ["annotations", "labels"] {
        if let Some(map) = object
            .pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_object)
        {
            if !merged["metadata"][field].is_object() {
                merged["metadata"][field] = json!({});
            }
            for (k, v) in map {
                merged["metadata"][field][k] = v.clone();
            }
        }
    }
    if merged == before {
        return Ok(());
    }
    let dynamic: DynamicObject = serde_json::from_value(merged).map_err(|e| e.to_string())?;
    api.replace(name, &PostParams::default(), &dynamic)
        .await
        .map_err(|e| api_error(format!("error updating ServiceAccount {name}"), &e))?;
    Ok(())
}

/// Gives a namespaced object its CSV owner references with their uids
/// ([`olm_v0::catalog_operator::ownerrefs`]): one to the CSV the step resolves, and every CSV its
/// manifest names, each looked up on the cluster (the plan's manifests name them before they
/// exist).
async fn own_by_csvs(
    client: &Client,
    namespace: &str,
    resolving: &str,
    kind: &str,
    object: &mut Value,
) -> Result<(), String> {
    let api =
        Api::<olm_v0_api::v1alpha1::ClusterServiceVersion>::namespaced(client.clone(), namespace);
    let mut uids = HashMap::new();
    for csv in olm_v0::catalog_operator::ownerrefs::add_resolving_owner(object, resolving) {
        let owner = api.get(&csv).await.map_err(|e| {
            format!(
                "error generating ownerrefs for {kind} {}: {}",
                text(object, "/metadata/name"),
                olm_runtime::api_error::message(&e)
            )
        })?;
        uids.insert(csv, owner.uid().unwrap_or_default());
    }
    olm_v0::catalog_operator::ownerrefs::set_csv_uids(object, |csv| {
        uids.get(csv).cloned().unwrap_or_default()
    });
    Ok(())
}

/// The resource of `apiVersion`/`kind`, from discovery, remembered.
async fn discover(
    ctx: &Ctx,
    api_version: &str,
    kind: &str,
) -> Result<(ApiResource, ApiCapabilities), String> {
    let key = (api_version.to_owned(), kind.to_owned());
    if let Some(found) = lock(&ctx.resources).get(&key) {
        return Ok(found.clone());
    }
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
    let found = kube::discovery::pinned_kind(&ctx.shared.client, &gvk)
        .await
        .map_err(|e| {
            format!(
                "the API server does not serve {kind} in {api_version}: {}",
                olm_runtime::api_error::message(&e)
            )
        })?;
    lock(&ctx.resources).insert(key, found.clone());
    Ok(found)
}
