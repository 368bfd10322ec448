//! One cluster, both OLMs: `olm run --olm both` (the default) in this process on a real control
//! plane, with the same package offered to OLM v1 through a ClusterCatalog and to OLM v0
//! through a CatalogSource serving the same catalog image. Whichever OLM installs it first keeps
//! its objects untouched (same resourceVersion, same content), and the other refuses in its own
//! status, naming the holder and what to do.
//!
//! Run: `cargo test -p olm-controller --test shared_cluster [-- NAME_SUBSTRING…]`.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
mod e2e;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, ensure};
use e2e::{CatalogOpts, Contents, Ctx, Msg, WAIT, cond, entry, eventually, package};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

fn main() {
    e2e::main_with(
        vec![
            scenario!(olm_v0_leaves_an_extensions_objects_alone, "v1first"),
            scenario!(olm_v1_leaves_an_operators_objects_alone, "v0first"),
            scenario!(namespaces_come_and_go_while_both_run, "nschurn"),
            scenario!(a_csv_leaves_an_extensions_deployment_alone, "csvdep"),
        ],
        olm_controller::run::Which::Both,
    );
}

/// The package both OLMs are offered: CRD, Deployment and ConfigMap, installable in all
/// namespaces (OLM v0's global OperatorGroup).
fn shared_package() -> e2e::Package {
    package("shared")
        .bundle("1.0.0", Contents::standard().modes(&["AllNamespaces"]))
        .channel("stable", vec![entry("1.0.0")])
}

/// Builds the catalog image, serves it as a ClusterCatalog, and returns the image.
async fn catalog(ctx: &Ctx) -> Result<String> {
    let built = ctx
        .build_catalog("shared", "v1", &[shared_package()])
        .await?;
    let cname = ctx
        .apply_catalog("shared", &built.image, &CatalogOpts::default())
        .await?;
    ctx.wait_serving(&cname).await?;
    Ok(built.image)
}

/// Server-side applies an OLM v0 object.
async fn apply_v0(ctx: &Ctx, plural: &str, version: &str, object: Value) -> Result<()> {
    let ns = object["metadata"]["namespace"]
        .as_str()
        .context("namespace")?;
    let name = object["metadata"]["name"].as_str().context("name")?;
    let kind = object["kind"].as_str().context("kind")?;
    ctx.dynamic(
        &format!("operators.coreos.com/{version}"),
        kind,
        plural,
        Some(ns),
    )
    .patch(
        name,
        &PatchParams::apply(e2e::MANAGER).force(),
        &Patch::Apply(&object),
    )
    .await
    .with_context(|| format!("applying {kind} {ns}/{name}"))?;
    Ok(())
}

/// OLM v0 subscribes to the package in its own namespace: a global OperatorGroup, a
/// CatalogSource served by olm from `image`, and an automatic Subscription.
async fn subscribe_v0(ctx: &Ctx, image: &str) -> Result<String> {
    let ns = ctx.extra_namespace(&format!("e2e-{}-v0", ctx.id)).await?;
    apply_v0(
        ctx,
        "operatorgroups",
        "v1",
        json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "global", "namespace": ns}, "spec": {}}),
    )
    .await?;
    apply_v0(
        ctx,
        "catalogsources",
        "v1alpha1",
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "shared", "namespace": ns,
                "annotations": {"olm.operatorframework.io/serve-in-process": "true"}},
            "spec": {"sourceType": "grpc", "image": image}}),
    )
    .await?;
    apply_v0(
        ctx,
        "subscriptions",
        "v1alpha1",
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "shared", "namespace": ns},
            "spec": {"name": ctx.pkg("shared"), "channel": "stable", "source": "shared",
                "sourceNamespace": ns, "installPlanApproval": "Automatic"}}),
    )
    .await?;
    Ok(ns)
}

/// The OLM v0 objects of `kind` (`operators.coreos.com/v1alpha1`) in `ns`.
fn v0_api(ctx: &Ctx, kind: &str, plural: &str, ns: &str) -> Api<DynamicObject> {
    ctx.dynamic("operators.coreos.com/v1alpha1", kind, plural, Some(ns))
}

/// The CRDs.
fn crds(ctx: &Ctx) -> Api<DynamicObject> {
    ctx.dynamic(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        None,
    )
}

/// Waits until OLM v0 installed the package's CSV in `ns`; on a timeout, notes what the
/// Subscription, plans, CSVs and CatalogSource said. Returns the CSV's name.
async fn wait_csv_succeeded(ctx: &Ctx, ns: &str) -> Result<String> {
    let csv = format!("{}.v1.0.0", ctx.pkg("shared"));
    let csvs = v0_api(ctx, "ClusterServiceVersion", "clusterserviceversions", ns);
    let waited = wait_for(&csvs, "the CSV Succeeded", |c| {
        c["metadata"]["name"] == csv.as_str() && c["status"]["phase"] == "Succeeded"
    })
    .await;
    if let Err(e) = waited {
        for (kind, plural) in [
            ("Subscription", "subscriptions"),
            ("InstallPlan", "installplans"),
            ("ClusterServiceVersion", "clusterserviceversions"),
            ("CatalogSource", "catalogsources"),
        ] {
            for o in v0_api(ctx, kind, plural, ns)
                .list(&Default::default())
                .await?
                .items
            {
                ctx.note(format!(
                    "{kind} {:?}: {}",
                    o.metadata.name, o.data["status"]
                ));
            }
        }
        return Err(e);
    }
    Ok(csv)
}

/// The object's resourceVersion and its content without status (which the API server keeps
/// current on its own, e.g. a CRD's accepted names).
async fn snapshot(api: &Api<DynamicObject>, name: &str) -> Result<(String, Value)> {
    let o = api.get(name).await?;
    let mut v = serde_json::to_value(&o)?;
    let rv = v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if let Some(m) = v.as_object_mut() {
        m.remove("status");
    }
    Ok((rv, v))
}

/// The first object of `api` that `pick` accepts, once there is one.
async fn wait_for(
    api: &Api<DynamicObject>,
    what: &str,
    pick: impl Fn(&Value) -> bool,
) -> Result<Value> {
    eventually(WAIT, || async {
        let list = api.list(&Default::default()).await?;
        Ok(list
            .items
            .iter()
            .map(serde_json::to_value)
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .find(|v| pick(v)))
    })
    .await
    .with_context(|| format!("waiting for {what}"))
}

/// OLM v1 installs first; then OLM v0 subscribes to the same package. The plan fails before it
/// creates anything, naming the extension; the extension's CRD is untouched and it stays
/// installed.
async fn olm_v0_leaves_an_extensions_objects_alone(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let image = catalog(&ctx).await?;
    let name = format!("ext-{}", ctx.id);
    ctx.apply_ext(&name, &ctx.ext_spec("shared")).await?;
    ctx.wait_installed(&name, "shared", "1.0.0").await?;
    let crds = crds(&ctx);
    let crd = ctx.names().crd_name();
    let before = snapshot(&crds, &crd).await?;

    let ns = subscribe_v0(&ctx, &image).await?;
    let plans = v0_api(&ctx, "InstallPlan", "installplans", &ns);
    let plan = wait_for(&plans, "a Failed InstallPlan", |p| {
        p["status"]["phase"] == "Failed"
    })
    .await?;
    let message = plan["status"]["conditions"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    ctx.note(format!("InstallPlan: {message}"));
    let expected = format!(
        "CustomResourceDefinition \"{crd}\" belongs to ClusterExtension \"{name}\" (OLM v1, revision \"{name}-1\"); OLM v0 does not take over objects OLM v1 manages: uninstall the ClusterExtension \"{name}\" first"
    );
    ensure!(
        message == expected,
        "plan message {message:?}, wanted {expected:?}"
    );
    let subs = v0_api(&ctx, "Subscription", "subscriptions", &ns);
    wait_for(&subs, "the Subscription saying why", |s| {
        s["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter().any(|c| {
                c["type"] == "InstallPlanFailed"
                    && c["status"] == "True"
                    && c["message"] == expected
            })
        })
    })
    .await?;
    // Nothing was created: no CSV in the OLM v0 namespace, the CRD as it was.
    let csvs = v0_api(&ctx, "ClusterServiceVersion", "clusterserviceversions", &ns);
    let made: Vec<String> = csvs
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    ensure!(made.is_empty(), "OLM v0 created CSVs {made:?}");
    let after = snapshot(&crds, &crd).await?;
    ensure!(
        before == after,
        "the extension's CRD was written: {:?} → {:?}",
        before.0,
        after.0
    );
    let ce = ctx.get_ext(&name).await?;
    ensure!(
        cond(&ce, "Installed").is_some_and(|c| c.status == "True"),
        "the extension is no longer installed"
    );
    Ok(())
}

/// OLM v0 installs first; then a ClusterExtension asks for the same package. The revision
/// collides on the CRD, names the ClusterServiceVersion that owns it and what to do, and
/// writes nothing; the CSV stays Succeeded.
async fn olm_v1_leaves_an_operators_objects_alone(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let image = catalog(&ctx).await?;
    let ns = subscribe_v0(&ctx, &image).await?;
    let csv = wait_csv_succeeded(&ctx, &ns).await?;
    let csvs = v0_api(&ctx, "ClusterServiceVersion", "clusterserviceversions", &ns);
    let crds = crds(&ctx);
    let crd = ctx.names().crd_name();
    let before = snapshot(&crds, &crd).await?;

    let name = format!("ext-{}", ctx.id);
    ctx.apply_ext(&name, &ctx.ext_spec("shared")).await?;
    let expected = format!(
        "Object CustomResourceDefinition.apiextensions.k8s.io/v1 {crd} already exists and belongs to ClusterServiceVersion \"{csv}\" in namespace \"{ns}\" (OLM v0): uninstall the operator from OLM v0 first (delete its Subscription and ClusterServiceVersion)."
    );
    let ce = ctx
        .wait_cond(
            &name,
            "Progressing",
            "True",
            "Retrying",
            Msg::Contains(&expected),
        )
        .await?;
    ctx.note(format!(
        "ClusterExtension: {:?}",
        cond(&ce, "Progressing").map(|c| &c.message)
    ));
    ensure!(
        cond(&ce, "Installed").is_none_or(|c| c.status != "True"),
        "Installed while colliding"
    );
    let after = snapshot(&crds, &crd).await?;
    ensure!(
        before == after,
        "the operator's CRD was written: {:?} → {:?}",
        before.0,
        after.0
    );
    let phase = csvs.get(&csv).await?.data["status"]["phase"].clone();
    ensure!(phase == "Succeeded", "the CSV went {phase}");
    Ok(())
}

/// Many users' namespaces come and go while both OLMs run and an OLM v0 operator watches all
/// namespaces (so each new namespace gets a copy of its CSV): every namespace is gone within
/// 30 s of its deletion, none stuck on discovery or on an OLM finalizer.
async fn namespaces_come_and_go_while_both_run(ctx: Arc<Ctx>) -> Result<()> {
    const COUNT: usize = 12;
    const LIMIT: Duration = Duration::from_secs(30);
    ctx.namespace().await?;
    let image = catalog(&ctx).await?;
    let ns = subscribe_v0(&ctx, &image).await?;
    let csv = wait_csv_succeeded(&ctx, &ns).await?;
    let csvs = |ns: &str| v0_api(&ctx, "ClusterServiceVersion", "clusterserviceversions", ns);
    let names: Vec<String> = (0..COUNT).map(|i| format!("e2e-{}-{i}", ctx.id)).collect();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(ctx.client.clone());
    for name in &names {
        e2e::ensure_namespace(&ctx.client, name).await?;
    }
    // Each namespace has the operator's copy before it goes: deleting it then exercises
    // everything OLM put there.
    for name in &names {
        wait_for(&csvs(name), &format!("the copied CSV in {name}"), |c| {
            c["metadata"]["name"] == csv.as_str()
        })
        .await?;
    }
    let started = Instant::now();
    for name in &names {
        namespaces.delete(name, &Default::default()).await?;
    }
    let mut slowest = Duration::ZERO;
    for name in &names {
        eventually(LIMIT, || async {
            Ok(namespaces.get_opt(name).await?.is_none().then_some(()))
        })
        .await
        .with_context(|| format!("namespace {name} still there {LIMIT:?} after its deletion"))?;
        slowest = slowest.max(started.elapsed());
    }
    ctx.note(format!(
        "{COUNT} namespaces with copied CSVs deleted; the last was gone {slowest:.1?} after the deletions began"
    ));
    ensure!(slowest <= LIMIT, "namespaces took {slowest:?} to go");
    Ok(())
}

/// A CSV applied by hand in an extension's namespace names the extension's Deployment: OLM v0
/// does not apply over it. The CSV is Failed saying whose it is and what to do, and the
/// Deployment keeps its resourceVersion.
async fn a_csv_leaves_an_extensions_deployment_alone(ctx: Arc<Ctx>) -> Result<()> {
    let ns = ctx.namespace().await?;
    catalog(&ctx).await?;
    let name = format!("ext-{}", ctx.id);
    ctx.apply_ext(&name, &ctx.ext_spec("shared")).await?;
    ctx.wait_installed(&name, "shared", "1.0.0").await?;
    let deployments = ctx.dynamic("apps/v1", "Deployment", "deployments", Some(&ns));
    let deployment = ctx.names().deployment();
    let before = snapshot(&deployments, &deployment).await?;

    // OwnNamespace, so that no copy of the CSV lands in other scenarios' namespaces.
    apply_v0(
        &ctx,
        "operatorgroups",
        "v1",
        json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "own", "namespace": ns}, "spec": {"targetNamespaces": [ns]}}),
    )
    .await?;
    let modes: Vec<Value> = [
        "OwnNamespace",
        "SingleNamespace",
        "MultiNamespace",
        "AllNamespaces",
    ]
    .iter()
    .map(|m| json!({"type": m, "supported": true}))
    .collect();
    apply_v0(
        &ctx,
        "clusterserviceversions",
        "v1alpha1",
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "grab.v1.0.0", "namespace": ns},
            "spec": {"displayName": "grab", "version": "1.0.0", "installModes": modes,
                "install": {"strategy": "deployment", "spec": {"deployments": [{
                    "name": deployment,
                    "spec": {"selector": {"matchLabels": {"app": "grab"}},
                        "template": {"metadata": {"labels": {"app": "grab"}},
                            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}}]}}}}),
    )
    .await?;
    let expected = format!(
        "install strategy failed: Deployment \"{deployment}\" belongs to ClusterExtension \"{name}\" (OLM v1, revision \"{name}-1\"); OLM v0 does not take over objects OLM v1 manages: uninstall the ClusterExtension \"{name}\" first"
    );
    let csvs = v0_api(&ctx, "ClusterServiceVersion", "clusterserviceversions", &ns);
    let csv = wait_for(&csvs, "the CSV Failed naming the extension", |c| {
        c["metadata"]["name"] == "grab.v1.0.0" && c["status"]["phase"] == "Failed"
    })
    .await?;
    let message = csv["status"]["message"].as_str().unwrap_or_default();
    ctx.note(format!("CSV: {message}"));
    ensure!(
        message == expected,
        "CSV message {message:?}, wanted {expected:?}"
    );
    let after = snapshot(&deployments, &deployment).await?;
    ensure!(
        before == after,
        "the extension's Deployment was written: {:?} → {:?}",
        before.0,
        after.0
    );
    Ok(())
}
