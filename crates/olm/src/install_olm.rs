//! `olm install-olm` and `olm uninstall-olm`: OLM v1 itself on a cluster, from the manifests
//! built into the binary (`install.yaml`, rendered from `config/` with kustomize; a test keeps
//! the two in step).
//!
//! Install: every object is applied server-side (so a second run, or a newer binary, updates
//! what the first wrote and nothing else), the Namespace and CRDs first; then the command waits,
//! on watches, until the CRDs are served, the Deployment is available and the webhook
//! configuration holds the CA of the certificate `olm run` issued itself. On timeout it says
//! which of these is still missing.
//!
//! The manifests install OLM v1 only: the Deployment runs `olm run --olm=v1`, so no
//! PackageManifest APIService is registered (one that nothing serves would stop every
//! namespace deletion in the cluster), and one an earlier `olm run` left is removed at start.
//!
//! Uninstall: deletes the PackageManifest APIService if it names OLM's namespace (left by an
//! `olm run` with OLM v0), the webhook configuration, the cluster-wide RBAC and the namespace
//! (which takes the Deployment, its Secrets and Lease with it). CRDs — and with them every
//! ClusterCatalog and ClusterExtension — stay unless `--delete-crds`; what an extension
//! installed stays either way, and the command says so.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::ApiResource;
use kube::runtime::wait::await_condition;
use serde_json::Value;

use crate::catalogd::parse_duration;

mod layout;
mod why;

pub use layout::Layout;

/// The manifests, as `kubectl kustomize config` renders them.
pub const INSTALL_YAML: &str = include_str!("../../../install.yaml");

/// Field owner of everything `install-olm` applies.
pub const FIELD_MANAGER: &str = "olm-install";

/// The name of the container running `olm run` in the Deployment.
const CONTAINER: &str = "manager";

/// Install OLM v1 on a cluster and wait until it is ready.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm install-olm --image registry.example.com/olm/olm:v0.1.0@sha256:…              what olm image push-olm printed
  olm install-olm --image registry.example.com/olm/olm:v0.1.0 --olm both            OLM v0 too
  olm install-olm --image registry.example.com/olm/olm:v0.1.0 --layout upstream     as upstream's catalogd and operator-controller Deployments
  olm install-olm --image registry.example.com/olm/olm:v0.1.0 --dry-run > olm.yaml  the manifests, applied nowhere
  olm install-olm --image registry.example.com/olm/olm:v0.1.0 --registries-conf registries.conf")]
pub struct InstallArgs {
    /// The olm image to run (what `olm image push-olm` prints, pinned by digest).
    #[arg(long)]
    image: String,
    /// Kubeconfig to use instead of the default configuration.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// How long to wait for everything to be ready (Go duration).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    timeout: Duration,
    /// Print the manifests that would be applied, and apply nothing.
    #[arg(long)]
    dry_run: bool,
    /// Leave out the admission policy that lets a ClusterExtension be created or changed only by
    /// someone who may impersonate the ServiceAccount it is installed as (olm's own when it names
    /// none).
    #[arg(long)]
    no_admission_policies: bool,
    /// Which OLMs the pods run: `v1`, or `both` (OLM v1 and OLM v0: also the OLM v0 CRDs, and
    /// the PackageManifest API served by the leading replica through Service
    /// packageserver-service).
    #[arg(long, value_enum, default_value_t = Olms::V1)]
    olm: Olms,
    /// The Deployments: single (olm-controller-manager, all of OLM in one process) or upstream
    /// (catalogd-controller-manager and operator-controller-controller-manager, with upstream's
    /// names, labels and Leases, for what is written for upstream's layout).
    #[arg(long, value_enum, default_value_t = Layout::Single)]
    layout: Layout,
    /// A containers-registries.conf(5) file for OLM's own pulls of catalogs and bundles
    /// (registry rewrites, mirrors, plain-HTTP registries): put into ConfigMap
    /// olm-registries-conf and mounted at /etc/containers/registries.conf, where `olm run`
    /// reads it.
    #[arg(long)]
    registries_conf: Option<PathBuf>,
}

/// `install-olm --olm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Olms {
    /// OLM v1 only.
    V1,
    /// OLM v1 and OLM v0.
    Both,
}

/// Remove OLM v1 from a cluster.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm uninstall-olm
  olm uninstall-olm --delete-crds  the CRDs too, with every ClusterCatalog and ClusterExtension")]
pub struct UninstallArgs {
    /// Kubeconfig to use instead of the default configuration.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Also delete the OLM v1 CRDs, and with them every ClusterCatalog, ClusterExtension and
    /// ClusterObjectSet (what the extensions installed stays).
    #[arg(long)]
    delete_crds: bool,
}

/// The objects to apply, with the Deployment running `image` and the OLMs `olms` says: the
/// Namespace and CRDs first (everything else needs them), then the rest in the manifests' order.
pub fn manifests(image: &str, olms: Olms, layout: Layout) -> anyhow::Result<Vec<Value>> {
    let mut docs = olm_goenc::yamlread::parse_documents(INSTALL_YAML)
        .map_err(|e| anyhow!("the built-in install.yaml: {e}"))?;
    docs.retain(|d| !d.is_null());
    let mut set = false;
    for doc in &mut docs {
        if kind(doc) != "Deployment" {
            continue;
        }
        let containers = doc
            .pointer_mut("/spec/template/spec/containers")
            .and_then(Value::as_array_mut);
        for c in containers.into_iter().flatten() {
            if c.get("name").and_then(Value::as_str) == Some(CONTAINER) {
                c["image"] = Value::String(image.to_owned());
                set = true;
            }
        }
    }
    if !set {
        bail!("the built-in install.yaml has no Deployment container {CONTAINER:?}");
    }
    layout::apply(&mut docs, layout)?;
    if olms == Olms::Both {
        add_olm_v0(&mut docs)?;
    }
    docs.sort_by_key(|d| match kind(d) {
        "Namespace" => 0,
        "CustomResourceDefinition" => 1,
        _ => 2,
    });
    Ok(docs)
}

/// Turns the OLM v1 manifests into ones for both OLMs: the container runs `--olm=both` and
/// labels its own Pod (found by its host name) while it serves PackageManifests, the network
/// policy lets the API server reach that port, the Service packageserver-service selects the
/// labelled Pod, and the OLM v0 CRDs are installed with the rest.
fn add_olm_v0(docs: &mut Vec<Value>) -> anyhow::Result<()> {
    let port = olm_v0::packageserver::registration::DEFAULT_PORT;
    let mut service = None;
    for doc in docs.iter_mut() {
        match kind(doc) {
            "Deployment" if !layout::is_catalogd(doc) => {
                let ns = namespace(doc).unwrap_or_default().to_owned();
                let labels = doc
                    .pointer("/spec/selector/matchLabels")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                service = Some(olm_v0::packageserver::registration::selected_service(
                    &ns, &labels,
                ));
                let containers = doc
                    .pointer_mut("/spec/template/spec/containers")
                    .and_then(Value::as_array_mut);
                for c in containers.into_iter().flatten() {
                    if c.get("name").and_then(Value::as_str) != Some(CONTAINER) {
                        continue;
                    }
                    if let Some(args) = c.get_mut("args").and_then(Value::as_array_mut) {
                        for a in args.iter_mut() {
                            if a == "--olm=v1" {
                                *a = Value::from("--olm=both");
                            }
                        }
                        args.push(Value::from(format!("--packageserver-bind-address=:{port}")));
                        // The Pod by its host name and token's namespace, not by downward-API
                        // variables: tools that rewrite a container's env as NAME=VALUE pairs
                        // (upstream's e2e suite does) would empty them.
                        args.push(Value::from("--packageserver-pod=self"));
                    }
                    if let Some(Value::Array(ports)) = c.get_mut("ports") {
                        ports.push(
                            serde_json::json!({"name": "packageserver", "containerPort": port}),
                        );
                    }
                }
            }
            "NetworkPolicy" => {
                if let Some(Value::Array(rules)) = doc.pointer_mut("/spec/ingress")
                    && let Some(Value::Array(ports)) =
                        rules.first_mut().and_then(|r| r.get_mut("ports"))
                {
                    ports.push(serde_json::json!({"port": port, "protocol": "TCP"}));
                }
            }
            _ => {}
        }
    }
    docs.push(service.ok_or_else(|| anyhow!("the built-in install.yaml has no Deployment"))?);
    for crd in olm_v0_api::manifests()? {
        docs.push(serde_json::to_value(crd)?);
    }
    Ok(())
}

/// Puts `registries_conf` (the text of a registries.conf) into ConfigMap olm-registries-conf of
/// OLM's namespace and mounts it at [`olm_image::mirrors::DEFAULT_PATH`] in the container.
pub fn add_registries_conf(docs: &mut Vec<Value>, registries_conf: &str) -> anyhow::Result<()> {
    const NAME: &str = "olm-registries-conf";
    let mut ns = None;
    for deployment in docs.iter_mut().filter(|d| kind(d) == "Deployment") {
        ns = namespace(deployment).map(str::to_owned);
        mount_registries_conf(deployment, NAME)?;
    }
    let ns = ns.ok_or_else(|| anyhow!("the built-in install.yaml has no Deployment"))?;
    // Before the Deployments, so their pods find it at once.
    let at = docs
        .iter()
        .position(|d| kind(d) == "Deployment")
        .unwrap_or(docs.len());
    docs.insert(at, serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": NAME, "namespace": ns, "labels": {"app.kubernetes.io/name": "olm"}},
        "data": {"registries.conf": registries_conf},
    }));
    Ok(())
}

/// Mounts ConfigMap `name` at [`olm_image::mirrors::DEFAULT_PATH`] in `deployment`'s container.
fn mount_registries_conf(deployment: &mut Value, name: &str) -> anyhow::Result<()> {
    let spec = deployment
        .pointer_mut("/spec/template/spec")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| anyhow!("the built-in Deployment has no pod spec"))?;
    if let Value::Array(volumes) = spec
        .entry("volumes")
        .or_insert_with(|| Value::Array(Vec::new()))
    {
        volumes.push(serde_json::json!({"name": name, "configMap": {"name": name}}));
    }
    let containers = spec.get_mut("containers").and_then(Value::as_array_mut);
    for c in containers.into_iter().flatten() {
        if c.get("name").and_then(Value::as_str) != Some(CONTAINER) {
            continue;
        }
        if let Some(Value::Array(mounts)) = c.as_object_mut().map(|c| {
            c.entry("volumeMounts")
                .or_insert_with(|| Value::Array(Vec::new()))
        }) {
            mounts.push(serde_json::json!({
                "name": name,
                "mountPath": olm_image::mirrors::DEFAULT_PATH,
                "subPath": "registries.conf",
                "readOnly": true,
            }));
        }
    }
    Ok(())
}

/// A ValidatingAdmissionPolicy or its binding.
fn is_admission_policy(doc: &Value) -> bool {
    matches!(
        kind(doc),
        "ValidatingAdmissionPolicy" | "ValidatingAdmissionPolicyBinding"
    )
}

fn kind(doc: &Value) -> &str {
    doc.get("kind").and_then(Value::as_str).unwrap_or_default()
}

fn name(doc: &Value) -> &str {
    doc.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn namespace(doc: &Value) -> Option<&str> {
    doc.pointer("/metadata/namespace").and_then(Value::as_str)
}

/// The API resource of `doc`'s kind, as discovery reports it.
async fn resource(client: &kube::Client, doc: &Value) -> anyhow::Result<ApiResource> {
    let api_version = doc
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind(doc));
    let (ar, _) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .with_context(|| format!("the API server does not serve {api_version} {}", kind(doc)))?;
    Ok(ar)
}

fn dynamic_api(client: &kube::Client, ar: &ApiResource, ns: Option<&str>) -> Api<DynamicObject> {
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    }
}

/// Whether a Deployment has all its replicas updated and available.
pub fn deployment_ready(d: &Deployment) -> bool {
    let want = d.spec.replicas.unwrap_or(1);
    let Some(status) = &d.status else {
        return false;
    };
    let observed = status.observed_generation >= d.metadata.generation;
    let available =
        status.conditions.iter().flatten().any(|c| {
            c.type_.as_deref() == Some("Available") && c.status.as_deref() == Some("True")
        });
    observed
        && available
        && status.updated_replicas.unwrap_or(0) >= want
        && status.available_replicas.unwrap_or(0) >= want
}

/// Whether every webhook of the configuration carries a CA bundle.
pub fn webhook_ready(w: &MutatingWebhookConfiguration) -> bool {
    let hooks = w.webhooks.as_deref().unwrap_or_default();
    !hooks.is_empty()
        && hooks.iter().all(|h| {
            h.client_config
                .ca_bundle
                .as_ref()
                .is_some_and(|b| !b.0.is_empty())
        })
}

fn crd_established(c: &CustomResourceDefinition) -> bool {
    c.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
}

pub fn install(args: InstallArgs) -> anyhow::Result<ExitCode> {
    let mut docs = manifests(&args.image, args.olm, args.layout)?;
    if args.no_admission_policies {
        docs.retain(|d| !is_admission_policy(d));
    }
    if let Some(path) = &args.registries_conf {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading --registries-conf {}", path.display()))?;
        // Refused here rather than by every pod at start.
        olm_image::Registries::parse(&text, path)?;
        add_registries_conf(&mut docs, &text)?;
    }
    if args.dry_run {
        for doc in &docs {
            print!("---\n{}", olm_goenc::yaml::to_yaml(doc));
        }
        return Ok(ExitCode::SUCCESS);
    }
    crate::runtime()?.block_on(install_on(args, docs))
}

async fn install_on(args: InstallArgs, docs: Vec<Value>) -> anyhow::Result<ExitCode> {
    let client = crate::client::connect(args.kubeconfig.as_ref()).await?;
    let took = apply_and_wait(&client, &docs, args.olm, args.timeout).await?;
    println!(
        "OLM installed: {} objects applied, ready in {:.1} s (image {})",
        docs.len(),
        took.as_secs_f64(),
        args.image
    );
    Ok(ExitCode::SUCCESS)
}

/// Applies `docs` (from [`manifests`]) and waits until the CRDs are served, the Deployment is
/// available, the webhook configuration has its CA and, with OLM v0, the PackageManifest API is
/// available; returns how long that took.
pub async fn apply_and_wait(
    client: &kube::Client,
    docs: &[Value],
    olms: Olms,
    timeout: Duration,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let client = client.clone();
    let apply = PatchParams::apply(FIELD_MANAGER).force();
    let deadline = started + timeout;
    let mut crds = Vec::new();
    for doc in docs {
        // The CRDs must be served before the objects after them can be discovered.
        if kind(doc) != "CustomResourceDefinition" && !crds.is_empty() {
            wait_crds(&client, &std::mem::take(&mut crds), deadline).await?;
        }
        let ar = resource(&client, doc).await?;
        let api = dynamic_api(&client, &ar, namespace(doc));
        let obj: DynamicObject = serde_json::from_value(doc.clone())?;
        api.patch(name(doc), &apply, &Patch::Apply(&obj))
            .await
            .with_context(|| format!("applying {} {}", kind(doc), name(doc)))?;
        eprintln!("{}/{} applied", ar.plural, name(doc));
        if kind(doc) == "CustomResourceDefinition" {
            crds.push(name(doc).to_owned());
        }
    }
    let webhook = docs
        .iter()
        .find(|d| kind(d) == "MutatingWebhookConfiguration");
    let mut waited_for = 0;
    for deployment in docs.iter().filter(|d| kind(d) == "Deployment") {
        wait_deployment(&client, deployment, deadline, timeout).await?;
        waited_for += 1;
    }
    if waited_for == 0 {
        bail!("the built-in install.yaml has no Deployment");
    }
    if let Some(webhook) = webhook {
        let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
        let left = deadline.saturating_duration_since(Instant::now());
        let waited = tokio::time::timeout(
            left,
            await_condition(
                api,
                name(webhook),
                |w: Option<&MutatingWebhookConfiguration>| w.is_some_and(webhook_ready),
            ),
        )
        .await;
        if waited.is_err() {
            bail!(
                "OLM is not ready after {:?}: the webhook configuration {} has no CA bundle yet (olm run puts it there once it has issued its certificate; its logs say why not)",
                timeout,
                name(webhook)
            );
        }
        eprintln!("webhook configuration {} has its CA", name(webhook));
    }
    if olms == Olms::Both {
        let left = deadline.saturating_duration_since(Instant::now());
        packages_available(&client, left).await?;
        eprintln!(
            "apiservice {} available",
            olm_v0::packageserver::registration::APISERVICE
        );
    }
    Ok(started.elapsed())
}

/// Waits until `deployment` (a manifest) has all its replicas updated and available; on
/// timeout, says why its pods are not.
async fn wait_deployment(
    client: &kube::Client,
    deployment: &Value,
    deadline: Instant,
    timeout: Duration,
) -> anyhow::Result<()> {
    let ns = namespace(deployment).unwrap_or_default();
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let left = deadline.saturating_duration_since(Instant::now());
    let waited = tokio::time::timeout(
        left,
        await_condition(
            deployments.clone(),
            name(deployment),
            |d: Option<&Deployment>| d.is_some_and(deployment_ready),
        ),
    )
    .await;
    if waited.is_err() {
        let d = deployments.get_opt(name(deployment)).await?;
        let status = d.as_ref().and_then(|d| d.status.as_ref());
        let why = match &d {
            Some(d) => pods_explained(client, ns, d).await,
            None => "  the Deployment is gone".to_owned(),
        };
        bail!(
            "OLM is not ready after {:?}: deployment {}/{} has {} of {} replicas available:\n{why}",
            timeout,
            ns,
            name(deployment),
            status.and_then(|s| s.available_replicas).unwrap_or(0),
            d.as_ref().and_then(|d| d.spec.replicas).unwrap_or(1),
        );
    }
    eprintln!("deployment {} available", name(deployment));
    Ok(())
}

/// What `kubectl describe` and `kubectl logs --previous` would say of the Deployment's pods that
/// are not ready ([`why::explain`]); what cannot be read is said instead, so the error that
/// carries it is never lost to a second one.
async fn pods_explained(client: &kube::Client, namespace: &str, d: &Deployment) -> String {
    use k8s_openapi::api::core::v1::{Event, Pod};
    use kube::api::{ListParams, LogParams};
    let selector = d
        .spec
        .selector
        .match_labels
        .as_ref()
        .map(|labels| {
            labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let pods = match pods.list(&ListParams::default().labels(&selector)).await {
        Ok(list) => list.items,
        Err(e) => return format!("  its pods could not be listed: {e}"),
    };
    if pods.is_empty() {
        return format!("  it has no pods (kubectl -n {namespace} describe replicaset says why)");
    }
    let events: Api<Event> = Api::namespaced(client.clone(), namespace);
    let (events, unread) = match events.list(&ListParams::default()).await {
        Ok(list) => (list.items, None),
        Err(e) => (
            Vec::new(),
            Some(format!("  (its events could not be listed: {e})")),
        ),
    };
    let mut logs = Vec::new();
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    for pod in pods.iter().filter(|p| why::crashed(p)) {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let params = LogParams {
            previous: true,
            tail_lines: Some(LOG_LINES),
            ..LogParams::default()
        };
        let log = api
            .logs(&name, &params)
            .await
            .unwrap_or_else(|e| format!("(its log could not be read: {e})"));
        logs.push((name, log));
    }
    let mut lines = why::explain(&pods, &events, &logs);
    lines.extend(unread);
    lines.join("\n")
}

/// Log lines of a crashed OLM container quoted in an install's error: enough for the error
/// that stopped it, which is what the process prints last.
const LOG_LINES: i64 = 15;

/// Waits until the APIService of PackageManifests says `Available=True`: `kubectl get
/// packagemanifests` then works, and namespace deletions do not wait on it.
pub async fn packages_available(client: &kube::Client, timeout: Duration) -> anyhow::Result<()> {
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
    let name = olm_v0_controller::packageserver::APISERVICE;
    let api: kube::Api<APIService> = kube::Api::all(client.clone());
    let available = |a: Option<&APIService>| {
        a.and_then(|a| a.status.as_ref())
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "Available" && c.status == "True")
            })
    };
    let waited = tokio::time::timeout(
        timeout,
        kube::runtime::wait::await_condition(api.clone(), name, available),
    )
    .await;
    match waited {
        Ok(done) => done
            .map(|_| ())
            .context("watching the PackageManifest APIService"),
        Err(_) => {
            let status = api
                .get_opt(name)
                .await
                .ok()
                .flatten()
                .and_then(|a| a.status)
                .and_then(|s| s.conditions)
                .and_then(|cs| cs.into_iter().find(|c| c.type_ == "Available"))
                .map_or_else(
                    || "not registered".to_owned(),
                    |c| {
                        format!(
                            "Available={} {}: {}",
                            c.status,
                            c.reason.unwrap_or_default(),
                            c.message.unwrap_or_default()
                        )
                    },
                );
            bail!("the PackageManifest API ({name}) is not available after {timeout:?}: {status}")
        }
    }
}

async fn wait_crds(
    client: &kube::Client,
    names: &[String],
    deadline: Instant,
) -> anyhow::Result<()> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for name in names {
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::time::timeout(
            left,
            await_condition(api.clone(), name, |c: Option<&CustomResourceDefinition>| {
                c.is_some_and(crd_established)
            }),
        )
        .await
        .map_err(|_| anyhow!("the CRD {name} is not established"))??;
    }
    Ok(())
}

pub fn uninstall(args: UninstallArgs) -> anyhow::Result<ExitCode> {
    crate::runtime()?.block_on(uninstall_on(args))
}

async fn uninstall_on(args: UninstallArgs) -> anyhow::Result<ExitCode> {
    let client = crate::client::connect(args.kubeconfig.as_ref()).await?;
    let docs = manifests("olm", Olms::V1, Layout::Single)?;
    // First: while it names a Service of the namespace about to go, the namespace could not be
    // deleted (nor could any other).
    if let Some(ns) = docs
        .iter()
        .find(|d| kind(d) == "Namespace")
        .map(|d| name(d).to_owned())
        && olm_v0_controller::packageserver::withdraw(&client, &ns).await
    {
        eprintln!(
            "apiservices/{} deleted",
            olm_v0_controller::packageserver::APISERVICE
        );
    }
    let mut kept = Vec::new();
    // Reverse order: the Namespace and the CRDs last. Namespaced objects go with the namespace.
    for doc in docs.iter().rev() {
        let is_crd = kind(doc) == "CustomResourceDefinition";
        if namespace(doc).is_some() {
            continue;
        }
        if is_crd && !args.delete_crds {
            kept.push(format!("CRD {}", name(doc)));
            continue;
        }
        let ar = match resource(&client, doc).await {
            Ok(ar) => ar,
            // Not served (e.g. the CRD is already gone): nothing of it to delete.
            Err(_) => continue,
        };
        let api = dynamic_api(&client, &ar, None);
        match api.delete(name(doc), &DeleteParams::background()).await {
            Ok(_) => eprintln!("{}/{} deleted", ar.plural, name(doc)),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => {
                return Err(anyhow!(e).context(format!("deleting {} {}", kind(doc), name(doc))));
            }
        }
    }
    if kept.is_empty() {
        println!("OLM uninstalled; what extensions installed is left in place");
    } else {
        println!(
            "OLM uninstalled; left in place: {} (with every ClusterCatalog and ClusterExtension; --delete-crds removes them) and what extensions installed",
            kept.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_image_is_set_and_the_namespace_and_crds_come_first() {
        let docs =
            manifests("r.example/olm@sha256:ab", Olms::V1, Layout::Single).expect("manifests");
        assert_eq!(kind(&docs[0]), "Namespace");
        assert_eq!(name(&docs[0]), "olmv1-system");
        assert!(
            docs[1..4]
                .iter()
                .all(|d| kind(d) == "CustomResourceDefinition")
        );
        let d = docs
            .iter()
            .find(|d| kind(d) == "Deployment")
            .expect("deployment");
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["image"],
            "r.example/olm@sha256:ab"
        );
        // Everything namespaced is in OLM's namespace.
        for doc in &docs {
            if let Some(ns) = namespace(doc) {
                assert_eq!(ns, "olmv1-system", "{} {}", kind(doc), name(doc));
            }
        }
    }

    /// The choice the manifests make: OLM v1 only, said in the Deployment's arguments, and
    /// nothing of OLM v0 that would need OLM v0 running (an APIService, its CRDs or kinds).
    #[test]
    fn the_manifests_run_olm_v1_only() {
        let docs = manifests("olm", Olms::V1, Layout::Single).expect("manifests");
        let d = docs
            .iter()
            .find(|d| kind(d) == "Deployment")
            .expect("deployment");
        let args = &d["spec"]["template"]["spec"]["containers"][0]["args"];
        assert_eq!(args[0], "run");
        assert!(
            args.as_array()
                .expect("args")
                .iter()
                .any(|a| a == "--olm=v1"),
            "{args}"
        );
        for doc in &docs {
            assert_ne!(kind(doc), "APIService", "{}", name(doc));
            let api_version = doc["apiVersion"].as_str().unwrap_or_default();
            assert!(
                !api_version.starts_with("operators.coreos.com/")
                    && !name(doc).ends_with(".operators.coreos.com"),
                "{} {}",
                kind(doc),
                name(doc)
            );
        }
    }

    /// `--olm both`: the pods run both OLMs, and the PackageManifest API is routed to the one
    /// A container's arguments.
    fn args_of(c: &Value) -> Vec<&str> {
        c["args"]
            .as_array()
            .expect("args")
            .iter()
            .filter_map(Value::as_str)
            .collect()
    }

    /// `--layout upstream`: upstream's two Deployments, names and labels (operator-controller
    /// v1.11.0's e2e suite finds them by these: `test/e2e/steps/hooks.go`
    /// `detectOLMDeployments`, `upgrade_steps.go` `app.kubernetes.io/name=<component>`), each
    /// running one component with arguments `olm run` takes, the Services and budgets following
    /// their pods, and OLM v0 only beside the installer.
    #[test]
    fn the_upstream_layout_is_upstreams_two_deployments() {
        use clap::Parser;
        let docs = manifests("olm", Olms::Both, Layout::Upstream).expect("manifests");
        let deployments: Vec<&Value> = docs.iter().filter(|d| kind(d) == "Deployment").collect();
        let names: Vec<&str> = deployments.iter().map(|d| name(d)).collect();
        assert_eq!(
            names,
            [
                "catalogd-controller-manager",
                "operator-controller-controller-manager"
            ]
        );
        for (d, app, component, olm) in [
            (deployments[0], "catalogd", "catalogd", "--olm=v1"),
            (
                deployments[1],
                "operator-controller",
                "operator-controller",
                "--olm=both",
            ),
        ] {
            assert_eq!(d["metadata"]["labels"]["app.kubernetes.io/name"], app);
            assert_eq!(d["metadata"]["labels"]["app.kubernetes.io/part-of"], "olm");
            let pods = &d["spec"]["selector"]["matchLabels"]["control-plane"];
            assert_eq!(pods, name(d));
            assert_eq!(
                d["spec"]["template"]["metadata"]["labels"]["control-plane"],
                *pods
            );
            let c = &d["spec"]["template"]["spec"]["containers"][0];
            assert_eq!(c["name"], CONTAINER);
            let args = args_of(c);
            assert!(
                args.contains(&format!("--component={component}").as_str()),
                "{args:?}"
            );
            assert!(args.contains(&olm), "{args:?}");
            let parsed = crate::Cli::try_parse_from(std::iter::once("olm").chain(args.clone()));
            assert!(parsed.is_ok(), "{args:?}: {:?}", parsed.err());
            let terms = &d["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"];
            assert!(terms.to_string().contains(name(d)), "{terms}");
        }
        let service = |n: &str| {
            docs.iter()
                .find(|d| kind(d) == "Service" && name(d) == n)
                .unwrap_or_else(|| panic!("service {n}"))["spec"]["selector"]["control-plane"]
                .clone()
        };
        assert_eq!(service("catalogd-service"), "catalogd-controller-manager");
        assert_eq!(
            service("operator-controller-service"),
            "operator-controller-controller-manager"
        );
        assert_eq!(
            service("packageserver-service"),
            "operator-controller-controller-manager"
        );
        let budgets: Vec<&str> = docs
            .iter()
            .filter(|d| kind(d) == "PodDisruptionBudget")
            .map(name)
            .collect();
        assert_eq!(
            budgets,
            [
                "catalogd-controller-manager",
                "operator-controller-controller-manager"
            ]
        );
        for d in &docs {
            let text = d.to_string();
            assert!(
                !text.contains(r#""control-plane":"olm-controller-manager""#),
                "{} {} still selects olm's single Deployment",
                kind(d),
                name(d)
            );
        }
    }

    /// replica that serves it (the leader labels its own Pod, found by its host name).
    #[test]
    fn both_olms_route_the_packagemanifest_api_to_the_labelled_pod() {
        let docs = manifests("olm", Olms::Both, Layout::Single).expect("manifests");
        let d = docs
            .iter()
            .find(|d| kind(d) == "Deployment")
            .expect("deployment");
        let c = &d["spec"]["template"]["spec"]["containers"][0];
        let args = args_of(c);
        assert!(args.contains(&"--olm=both"), "{args:?}");
        assert!(!args.contains(&"--olm=v1"), "{args:?}");
        assert!(args.contains(&"--packageserver-pod=self"), "{args:?}");
        assert!(c.get("env").is_none(), "{c}");
        let service = docs
            .iter()
            .find(|d| kind(d) == "Service" && name(d) == "packageserver-service")
            .expect("service");
        assert_eq!(
            service["spec"]["selector"]["control-plane"],
            "olm-controller-manager"
        );
        assert_eq!(
            service["spec"]["selector"]["olm.operatorframework.io/packageserver"],
            "serving"
        );
        assert_eq!(service["spec"]["ports"][0]["targetPort"], 5443);
        let policy = docs
            .iter()
            .find(|d| kind(d) == "NetworkPolicy" && name(d) == "olm-controller-manager")
            .expect("policy");
        assert!(
            policy["spec"]["ingress"][0]["ports"]
                .as_array()
                .expect("ports")
                .iter()
                .any(|p| p["port"] == 5443),
            "{policy}"
        );
        assert!(
            docs.iter()
                .any(|d| name(d) == "clusterserviceversions.operators.coreos.com"),
            "the OLM v0 CRDs come too"
        );
        // CRDs still come before what needs them.
        let first_other = docs
            .iter()
            .position(|d| !matches!(kind(d), "Namespace" | "CustomResourceDefinition"))
            .expect("others");
        assert!(
            docs[first_other..]
                .iter()
                .all(|d| kind(d) != "CustomResourceDefinition")
        );
    }

    #[test]
    fn a_registries_conf_is_mounted_where_olm_run_reads_it() {
        let mut docs = manifests("olm", Olms::V1, Layout::Single).expect("manifests");
        add_registries_conf(&mut docs, "[[registry]]\nprefix = \"a:1\"\n").expect("added");
        let map = docs
            .iter()
            .position(|d| kind(d) == "ConfigMap")
            .expect("configmap");
        let deployment = docs
            .iter()
            .position(|d| kind(d) == "Deployment")
            .expect("deployment");
        assert!(map < deployment, "the ConfigMap is applied first");
        assert_eq!(
            docs[map]["data"]["registries.conf"],
            "[[registry]]\nprefix = \"a:1\"\n"
        );
        let mounts = &docs[deployment]["spec"]["template"]["spec"]["containers"][0]["volumeMounts"];
        assert!(
            mounts
                .as_array()
                .expect("mounts")
                .iter()
                .any(|m| m["mountPath"] == "/etc/containers/registries.conf"
                    && m["subPath"] == "registries.conf"),
            "{mounts}"
        );
    }

    #[test]
    fn readiness() {
        let d: Deployment = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "d", "generation": 2},
            "spec": {"replicas": 2, "selector": {}, "template": {}},
            "status": {"observedGeneration": 2, "updatedReplicas": 2, "availableReplicas": 2,
                "conditions": [{"type": "Available", "status": "True"}]},
        }))
        .expect("deployment");
        assert!(deployment_ready(&d));
        let mut old = d.clone();
        old.status.as_mut().expect("status").observed_generation = Some(1);
        assert!(!deployment_ready(&old));
        let mut short = d;
        short.status.as_mut().expect("status").available_replicas = Some(1);
        assert!(!deployment_ready(&short));

        let w = |bundle: Option<&str>| -> MutatingWebhookConfiguration {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "w"},
                "webhooks": [{"name": "a.b", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                    "clientConfig": {"caBundle": bundle}}],
            }))
            .expect("webhook")
        };
        assert!(!webhook_ready(&w(None)));
        assert!(webhook_ready(&w(Some("Y2E="))));
    }
}
