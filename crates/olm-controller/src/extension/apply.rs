//! The apply step: render the bundle, build the desired revision, and — only when it differs
//! from the newest one — run the preflights and create it.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use kube::runtime::reflector::ObjectRef;
use olm_api::{ClusterExtension, ClusterObjectSet, CrdUpgradeSafetyEnforcement};
use olm_bundle::{Bundle, RenderError};
use olm_extension::revision::{self, Change, RevisionRequest, ServiceAccountRef};
use olm_extension::status::{RevisionState, Step, Stop, StopKind};
use serde_json::{Value, json};
use tracing::{debug, info};

use super::Ctx;
use super::gather::Target;
use olm_runtime::api_error::message;

fn retrying(message: impl Into<String>) -> Stop {
    Stop {
        step: Step::Apply,
        message: message.into(),
        kind: StopKind::Retrying,
    }
}

/// Applies `target`. `content` is None when the bundle could not be pulled but is the one
/// installed: then the installed revision stays as it is. Returns the state of a revision it
/// created, for the status of this same reconcile.
pub async fn apply(
    ext: &ClusterExtension,
    ctx: &Ctx,
    target: &Target,
    content: Option<&Bundle>,
    revisions: &[Arc<ClusterObjectSet>],
) -> Result<Option<RevisionState>, Stop> {
    let Some(bundle) = content else {
        if revisions.is_empty() {
            return Err(retrying(
                "catalog content unavailable and no revision installed",
            ));
        }
        return Ok(None);
    };
    let objects = render(ext, ctx, bundle)?;
    let existing: Vec<ClusterObjectSet> = revisions.iter().map(|r| (**r).clone()).collect();
    let latest = existing.last();
    let extension_name = ext.name_any();
    let extension_uid = ext.uid().unwrap_or_default();
    let annotations = bundle.render_annotations();
    let request = RevisionRequest {
        extension_name: &extension_name,
        extension_uid: &extension_uid,
        revision: revision::next_revision(&existing),
        package_name: &target.package,
        bundle: &target.bundle,
        bundle_image: &target.image,
        properties: annotations
            .get(olm_bundle::bundle::PROPERTIES_ANNOTATION)
            .map(String::as_str),
        objects: &objects,
        progress_deadline_minutes: ext.spec.progress_deadline_minutes.unwrap_or(0),
        service_account: ext
            .spec
            .service_account
            .as_ref()
            .map(|sa| ServiceAccountRef {
                namespace: &ext.spec.namespace,
                name: &sa.name,
            }),
    };
    let mut desired = revision::build(&request).map_err(|e| retrying(e.to_string()))?;
    // An operator taken over from OLM v0 keeps its revision (and its pods) until the bundle or
    // the configuration renders differently.
    let rendered = desired
        .annotations()
        .get(olm_k8s::REVISION_DIGEST_ANNOTATION)
        .cloned()
        .unwrap_or_default();
    if latest.is_some_and(|l| {
        l.annotations()
            .get(olm_k8s::MIGRATION_RENDERED_DIGEST_ANNOTATION)
            == Some(&rendered)
    }) {
        return Ok(None);
    }
    let taken;
    if let Some(csv) = takes_over(ext, ctx).await? {
        taken = with_running_templates(ctx, &objects, &csv).await?;
        let request = RevisionRequest {
            objects: &taken,
            ..request
        };
        desired = revision::build(&request).map_err(|e| retrying(e.to_string()))?;
        let annotations = desired.metadata.annotations.get_or_insert_default();
        annotations.insert(olm_k8s::MIGRATION_TAKES_OVER_ANNOTATION.to_owned(), csv);
        annotations.insert(
            olm_k8s::MIGRATION_RENDERED_DIGEST_ANNOTATION.to_owned(),
            rendered,
        );
    }
    match (revision::change(&desired, latest), latest) {
        (Change::Unchanged, _) => return Ok(None),
        (Change::Patch, Some(latest)) => {
            // The cache holds revisions without their phases; the patch carries them unchanged.
            let api: Api<ClusterObjectSet> = Api::all(ctx.shared.client.clone());
            let name = latest.name_any();
            let full = api
                .get(&name)
                .await
                .map_err(|e| retrying(format!("reading revision {name}: {}", message(&e))))?;
            patch_in_place(ctx, &revision::in_place(&desired, &full)).await?;
            return Ok(None);
        }
        _ => {}
    }

    // Something changes: check before writing anything.
    namespace_exists(ctx, &ext.spec.namespace).await?;
    if ext.spec.crd_upgrade_safety() != CrdUpgradeSafetyEnforcement::None {
        crd_upgrade_safety(ctx, &objects).await?;
    }
    if let Some(sa) = &ext.spec.service_account {
        olm_cluster::permissions::preflight(&ctx.shared, &ext.spec.namespace, &sa.name, &objects)
            .await
            .map_err(|e| retrying(e.to_string()))?;
    }
    write_revision(ctx, desired, &existing).await.map(Some)
}

/// The OLM v0 CSV (`namespace/name`) whose objects this extension's revision takes over, when
/// the extension names one ([`olm_k8s::MIGRATION_TAKES_OVER_ANNOTATION`], set by `olm
/// migrate`) and that CSV agrees: it names this extension in
/// [`olm_k8s::MIGRATING_TO_ANNOTATION`]. A CSV that does not agree (or is gone, the move being
/// over) gives none, so the revision adopts nothing of OLM v0's.
async fn takes_over(ext: &ClusterExtension, ctx: &Ctx) -> Result<Option<String>, Stop> {
    let Some(named) = ext
        .annotations()
        .get(olm_k8s::MIGRATION_TAKES_OVER_ANNOTATION)
    else {
        return Ok(None);
    };
    let Some((namespace, name)) = named.split_once('/') else {
        return Ok(None);
    };
    let csvs: Api<olm_v0_api::v1alpha1::ClusterServiceVersion> =
        Api::namespaced(ctx.shared.client.clone(), namespace);
    let csv = match csvs.get_metadata_opt(name).await {
        Ok(csv) => csv,
        // OLM v0's API is not served: there is nothing to take over.
        Err(kube::Error::Api(s)) if s.code == 404 => None,
        Err(e) => {
            return Err(retrying(format!(
                "reading ClusterServiceVersion {named}: {}",
                message(&e)
            )));
        }
    };
    let agrees = csv.is_some_and(|c| {
        c.annotations().get(olm_k8s::MIGRATING_TO_ANNOTATION) == Some(&ext.name_any())
    });
    Ok(agrees.then(|| named.clone()))
}

/// `objects` with each Deployment that the CSV being taken over runs given its running pod
/// template: the revision then changes no pod, where the two OLMs' renderings differ in detail
/// (the order of certificate volumes, a CA hash annotation) and would roll every one.
async fn with_running_templates(
    ctx: &Ctx,
    objects: &[Value],
    csv: &str,
) -> Result<Vec<Value>, Stop> {
    let (csv_ns, csv_name) = csv.split_once('/').unwrap_or_default();
    let mut out = objects.to_vec();
    let owned_by_csv = ListParams::default().labels(&format!(
        "{}={csv_name},{}={csv_ns}",
        olm_k8s::V0_OWNER_LABEL,
        olm_k8s::V0_OWNER_NAMESPACE_LABEL
    ));
    for o in &mut out {
        let kind = o.get("kind").and_then(Value::as_str).unwrap_or_default();
        if matches!(
            kind,
            "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration"
        ) {
            let resource = ApiResource {
                group: "admissionregistration.k8s.io".into(),
                version: "v1".into(),
                api_version: "admissionregistration.k8s.io/v1".into(),
                kind: kind.into(),
                plural: format!("{}s", kind.to_lowercase()),
            };
            let live = Api::<DynamicObject>::all_with(ctx.shared.client.clone(), &resource)
                .list(&owned_by_csv)
                .await
                .map_err(|e| retrying(format!("listing {kind}s: {}", message(&e))))?;
            if let Some(name) = same_webhooks(o, &live.items) {
                o["metadata"]["name"] = json!(name);
            }
            continue;
        }
        if kind != "Deployment" {
            continue;
        }
        let name = o
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let namespace = o
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or(csv_ns)
            .to_owned();
        let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
            Api::namespaced(ctx.shared.client.clone(), &namespace);
        let Some(live) = deployments.get_opt(&name).await.map_err(|e| {
            retrying(format!(
                "reading Deployment {namespace}/{name}: {}",
                message(&e)
            ))
        })?
        else {
            continue;
        };
        let live = serde_json::to_value(&live).map_err(|e| retrying(e.to_string()))?;
        let held = live.as_object().map(olm_k8s::holder);
        let by_csv = matches!(&held, Some(olm_k8s::Holder::V0Owner { kind, namespace, name })
            if kind == "ClusterServiceVersion" && namespace == csv_ns && name == csv_name);
        if by_csv && let Some(template) = live.pointer("/spec/template") {
            o["spec"]["template"] = template.clone();
        }
    }
    Ok(out)
}

/// The name of the live webhook configuration (OLM v0's, named with a random suffix) holding
/// exactly the webhooks of the rendered one: taken over under that name, the configuration
/// keeps its CA bundle, where a new one would refuse every call until its CA is injected.
fn same_webhooks(rendered: &Value, live: &[DynamicObject]) -> Option<String> {
    let names = |hooks: Option<&Value>| {
        let mut n: Vec<String> = hooks
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|h| h.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect();
        n.sort();
        n
    };
    let wanted = names(rendered.get("webhooks"));
    live.iter()
        .find(|l| !wanted.is_empty() && names(l.data.get("webhooks")) == wanted)
        .map(ResourceExt::name_any)
}

/// Updates the newest revision's metadata and mutable fields (same objects).
async fn patch_in_place(ctx: &Ctx, revision: &ClusterObjectSet) -> Result<(), Stop> {
    let api: Api<ClusterObjectSet> = Api::all(ctx.shared.client.clone());
    let name = revision.name_any();
    let params = PatchParams::apply(ctx.shared.field_manager).force();
    api.patch(&name, &params, &Patch::Apply(revision))
        .await
        .map_err(|e| retrying(format!("patching revision {name}: {}", message(&e))))?;
    Ok(())
}

/// Renders the bundle for this extension; a configuration that does not match the bundle's
/// schema is terminal (`InvalidConfiguration`), every other refusal is retried.
fn render(ext: &ClusterExtension, ctx: &Ctx, bundle: &Bundle) -> Result<Vec<Value>, Stop> {
    let config = ext
        .spec
        .config
        .as_ref()
        .and_then(|c| c.inline.as_ref())
        .map(|m| Value::Object(m.clone()).to_string());
    olm_bundle::render_bundle(
        bundle,
        &ext.spec.namespace,
        config.as_deref(),
        ctx.shared.cert_provider,
    )
    .map_err(|e| match e {
        RenderError::InvalidConfig(_) => Stop {
            step: Step::Apply,
            message: e.to_string(),
            kind: StopKind::InvalidConfiguration,
        },
        other => retrying(other.to_string()),
    })
}

async fn namespace_exists(ctx: &Ctx, namespace: &str) -> Result<(), Stop> {
    if ctx.namespaces.get(&ObjectRef::new(namespace)).is_some() {
        return Ok(());
    }
    // Not in the cache: perhaps created a moment ago.
    let api: Api<Namespace> = Api::all(ctx.shared.client.clone());
    match api.get_metadata_opt(namespace).await {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(retrying(format!(
            "namespaces {} not found",
            olm_goenc::quote(namespace)
        ))),
        Err(e) => Err(retrying(format!(
            "checking namespace {namespace}: {}",
            message(&e)
        ))),
    }
}

/// Upstream's CRD upgrade-safety preflight: every CRD of the bundle that exists on the cluster
/// is compared with its replacement; all reports are joined.
async fn crd_upgrade_safety(ctx: &Ctx, objects: &[Value]) -> Result<(), Stop> {
    let resource = ApiResource::erase::<CustomResourceDefinition>(&());
    let api: Api<DynamicObject> = Api::all_with(ctx.shared.client.clone(), &resource);
    let mut reports = Vec::new();
    for crd in objects
        .iter()
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
    {
        let Some(name) = crd.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        // A CRD the cache does not know has nothing to be compared with. (One created by
        // someone else a moment ago is not ours: collision protection refuses it.)
        if ctx.crds.get(&ObjectRef::new(name)).is_none() {
            continue;
        }
        let existing = api
            .get_opt(name)
            .await
            .map_err(|e| retrying(format!("getting CRD {name}: {}", message(&e))))?;
        let Some(existing) = existing else { continue };
        let old = serde_json::to_value(&existing)
            .map_err(|e| retrying(format!("reading CRD {name}: {e}")))?;
        let report = olm_bundle::crddiff::check_upgrade(&old, crd);
        if !report.is_safe() {
            reports.push(report.to_string());
        }
    }
    if reports.is_empty() {
        Ok(())
    } else {
        Err(retrying(reports.join("\n")))
    }
}

/// Creates the revision: old archived revisions beyond the retention limit go first, then the
/// object Secrets (when the revision is large), the ClusterObjectSet, and the Secrets'
/// ownership. Waits (briefly, without requests) until the watch cache has the new revision so
/// that the next reconcile sees it.
async fn write_revision(
    ctx: &Ctx,
    desired: ClusterObjectSet,
    existing: &[ClusterObjectSet],
) -> Result<RevisionState, Stop> {
    let client = ctx.shared.client.clone();
    let cos_api: Api<ClusterObjectSet> = Api::all(client.clone());
    for name in revision::to_prune(existing) {
        match cos_api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(e) if api_code(&e) == Some(404) => {}
            Err(e) => {
                return Err(retrying(format!(
                    "deleting archived revision {name}: {}",
                    message(&e)
                )));
            }
        }
    }
    let packed = olm_extension::pack::externalize(desired, &ctx.shared.system_namespace)
        .map_err(|e| retrying(e.to_string()))?;
    let secrets_api: Api<Secret> = Api::namespaced(client, &ctx.shared.system_namespace);
    let post = PostParams {
        field_manager: Some(ctx.shared.field_manager.to_string()),
        ..PostParams::default()
    };
    for secret in &packed.secrets {
        match secrets_api.create(&post, secret).await {
            Ok(_) => {}
            Err(e) if api_code(&e) == Some(409) => {}
            Err(e) => {
                return Err(retrying(format!(
                    "creating Secret {}: {}",
                    secret.name_any(),
                    message(&e)
                )));
            }
        }
    }
    let name = packed.revision.name_any();
    let created = match cos_api.create(&post, &packed.revision).await {
        Ok(c) => c,
        Err(e) if api_code(&e) == Some(409) => {
            debug!(revision = %name, "revision exists already");
            cos_api
                .get(&name)
                .await
                .map_err(|e| retrying(format!("reading revision {name}: {}", message(&e))))?
        }
        Err(e) => {
            return Err(retrying(format!(
                "creating revision {name}: {}",
                message(&e)
            )));
        }
    };
    info!(revision = %name, "created revision");
    if !packed.secrets.is_empty() {
        let owner = olm_extension::pack::secret_owner_reference(
            &name,
            created.uid().as_deref().unwrap_or_default(),
        );
        for secret in &packed.secrets {
            let patch = json!({"metadata": {"ownerReferences": [owner]}});
            secrets_api
                .patch(
                    &secret.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .map_err(|e| {
                    retrying(format!(
                        "owning Secret {}: {}",
                        secret.name_any(),
                        message(&e)
                    ))
                })?;
        }
    }
    let reference = kube::runtime::reflector::ObjectRef::from_obj(&created);
    for _ in 0..40 {
        if ctx.revisions.get(&reference).is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    Ok(super::gather::state_of(&created))
}

/// The HTTP status of an API server refusal.
fn api_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}
