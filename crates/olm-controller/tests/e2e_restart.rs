//! `olm` stopping and starting under the install path. Each scenario restarts the in-process
//! `olm`, so they run one at a time.
//!
//! Run: `cargo test -p olm-controller --test e2e_restart [-- NAME_SUBSTRING…]`.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
mod e2e;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, ensure};
use e2e::{Contents, Ctx, Msg, cond, entry, package, wait_exists};
use kube::ResourceExt;
use kube::api::ListParams;

fn main() {
    e2e::main(vec![
        scenario!(
            killed_mid_rollout_and_restarted_finishes_once,
            "kill",
            exclusive
        ),
        scenario!(
            restart_when_nothing_changed_writes_nothing,
            "idle",
            exclusive
        ),
        scenario!(
            an_upgrade_finishes_soon_after_the_api_server_returns,
            "apisrv",
            exclusive
        ),
    ]);
}

/// A bundle that takes a while to roll out: CRDs large enough to go to Secrets, a Deployment
/// that has to become available, ConfigMaps.
fn slow_contents(id: String) -> Contents {
    Contents {
        filler_crds: vec![400, 400],
        name_id: Some(id),
        ..Contents::standard()
    }
}

/// `olm` is killed (its task dropped mid-flight) at three points of a rollout and started again;
/// each time the rollout finishes with one revision, every externalised Secret referenced and
/// none left over, and every object present once with one controller.
async fn killed_mid_rollout_and_restarted_finishes_once(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    let delays = [300u64, 1000, 2500];
    // One package per kill point, so the three rollouts do not share objects.
    let pkgs: Vec<_> = (0..delays.len())
        .map(|i| {
            package(&format!("p{i}"))
                .bundle("1.0.0", slow_contents(format!("{}{i}", ctx.id)))
                .channel("beta", vec![entry("1.0.0")])
        })
        .collect();
    ctx.catalog("test", &pkgs).await?;
    for (i, delay) in delays.iter().enumerate() {
        let name = format!("ext-{}-{i}", ctx.id);
        ctx.apply_ext(&name, &ctx.ext_spec(&format!("p{i}")))
            .await?;
        tokio::time::sleep(Duration::from_millis(*delay)).await;
        let before = ctx.get_ext(&name).await?;
        let sets = ctx.object_sets(&name).await?;
        ctx.env.kill_olm().await;
        ctx.note(format!(
            "killed {delay} ms after create: {} ClusterObjectSet(s); {}",
            sets.len(),
            e2e::describe_conditions(e2e::ext_conditions(&before), before.metadata.generation)
        ));
        tokio::time::sleep(Duration::from_millis(500)).await;
        ctx.env.start_olm().await?;
        ctx.wait_installed(&name, &format!("p{i}"), "1.0.0").await?;
        ctx.wait_cond(&name, "Progressing", "True", "Succeeded", Msg::Any)
            .await?;
        check_single_revision(&ctx, &name, &format!("{}{i}", ctx.id)).await?;
    }
    Ok(())
}

/// How long the API server stays down, and how soon after its return the upgrade must be done.
const API_SERVER_DOWN: Duration = Duration::from_secs(15);
const RECOVERED_WITHIN: Duration = Duration::from_secs(10);

/// kube-apiserver is killed 0.4 s into an upgrade and started again 15 s later. Every watch
/// resumes at a resource version the new server's watch cache no longer has (`410 Gone`); the
/// upgrade still finishes, once, within 10 s of the server's return.
async fn an_upgrade_finishes_soon_after_the_api_server_returns(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    // No Deployment: whether one is available is kube-controller-manager's to say, and it
    // recovers from the restart on its own schedule (client-go's backoff, up to 30 s).
    let contents = || Contents {
        deployment: false,
        ..slow_contents(format!("{}a", ctx.id))
    };
    let pkg = package("up")
        .bundle("1.0.0", contents())
        .bundle("1.0.1", contents())
        .channel(
            "beta",
            vec![entry("1.0.0"), entry("1.0.1").replaces("1.0.0")],
        );
    ctx.catalog("test", &[pkg]).await?;
    let name = format!("ext-{}", ctx.id);
    let at = |version: &str| {
        let mut spec = ctx.ext_spec("up");
        spec["source"]["catalog"]["version"] = serde_json::json!(version);
        spec
    };
    ctx.apply_ext(&name, &at("1.0.0")).await?;
    ctx.wait_installed(&name, "up", "1.0.0").await?;
    ctx.wait_cond(&name, "Progressing", "True", "Succeeded", Msg::Any)
        .await?;

    ctx.apply_ext(&name, &at("1.0.1")).await?;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let back = ctx
        .env
        .plane
        .restart_apiserver(API_SERVER_DOWN)
        .await
        .context("restarting kube-apiserver")?;
    ctx.wait_installed(&name, "up", "1.0.1").await?;
    ctx.wait_cond(&name, "Progressing", "True", "Succeeded", Msg::Any)
        .await?;
    let took = back.elapsed();
    ctx.note(format!(
        "upgrade finished {took:.1?} after kube-apiserver was back ({API_SERVER_DOWN:?} down)"
    ));
    ensure!(
        took <= RECOVERED_WITHIN,
        "the upgrade finished {took:.1?} after the API server returned; expected within {RECOVERED_WITHIN:?}"
    );
    let sets = ctx.object_sets(&name).await?;
    ensure!(
        sets.len() == 2,
        "expected the two revisions of one upgrade, found {}",
        sets.len()
    );
    Ok(())
}

async fn check_single_revision(ctx: &Ctx, name: &str, id: &str) -> Result<()> {
    let sets = ctx.object_sets(name).await?;
    let names: Vec<String> = sets.iter().map(|s| s.name_any()).collect();
    ensure!(
        names == vec![format!("{name}-1")],
        "ClusterObjectSets: {names:?}"
    );
    let value = serde_json::to_value(&sets[0])?;
    let mut referenced = BTreeSet::new();
    for phase in value["spec"]["phases"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        for o in phase["objects"].as_array().cloned().unwrap_or_default() {
            if let Some(n) = o["ref"]["name"].as_str() {
                referenced.insert(n.to_string());
            }
        }
    }
    let secrets = ctx.dynamic("v1", "Secret", "secrets", Some(e2e::SYSTEM_NAMESPACE));
    let lp = ListParams::default().labels(&format!("{}={name}", olm_k8s::OWNER_NAME_LABEL));
    let existing: BTreeSet<String> = secrets
        .list(&lp)
        .await?
        .items
        .iter()
        .map(|s| s.name_any())
        .collect();
    ensure!(
        referenced.is_subset(&existing),
        "referenced Secrets missing: {:?}",
        referenced.difference(&existing).collect::<Vec<_>>()
    );
    ensure!(
        existing.is_subset(&referenced),
        "Secrets left over (not referenced by the revision): {:?}",
        existing.difference(&referenced).collect::<Vec<_>>()
    );
    let names = e2e::Names { id: id.to_string() };
    for (api, obj) in [
        (
            ctx.dynamic("apps/v1", "Deployment", "deployments", Some(&ctx.ns)),
            names.deployment(),
        ),
        (
            ctx.dynamic("v1", "ConfigMap", "configmaps", Some(&ctx.ns)),
            names.configmap(),
        ),
        (
            ctx.dynamic(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "customresourcedefinitions",
                None,
            ),
            names.crd_name(),
        ),
    ] {
        let o = wait_exists(&api, &obj).await?;
        let controllers = o
            .owner_references()
            .iter()
            .filter(|r| r.controller == Some(true))
            .count();
        ensure!(
            controllers == 1,
            "{obj} has {controllers} controllers: {:?}",
            o.owner_references()
        );
    }
    let deployments = ctx.dynamic("apps/v1", "Deployment", "deployments", Some(&ctx.ns));
    let d = deployments.get(&names.deployment()).await?;
    let rs = ctx.dynamic("apps/v1", "ReplicaSet", "replicasets", Some(&ctx.ns));
    let sets: Vec<_> = rs
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|r| {
            r.owner_references()
                .iter()
                .any(|o| o.uid == d.uid().unwrap_or_default())
        })
        .collect();
    ensure!(
        sets.len() == 1,
        "the Deployment rolled {} ReplicaSets (template changed?)",
        sets.len()
    );
    Ok(())
}

/// Stopping and starting `olm` when nothing changed writes nothing: the extension, its
/// revision, its Secrets and the objects keep their resourceVersions.
async fn restart_when_nothing_changed_writes_nothing(ctx: Arc<Ctx>) -> Result<()> {
    ctx.namespace().await?;
    ctx.catalog(
        "test",
        &[package("test")
            .bundle("1.2.0", slow_contents(ctx.id.clone()))
            .channel("beta", vec![entry("1.2.0")])],
    )
    .await?;
    let name = format!("ext-{}", ctx.id);
    ctx.apply_ext(&name, &ctx.ext_spec("test")).await?;
    ctx.wait_installed(&name, "test", "1.2.0").await?;
    let ce = ctx
        .wait_cond(&name, "Progressing", "True", "Succeeded", Msg::Any)
        .await?;
    ensure!(cond(&ce, "Installed").is_some());
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = versions(&ctx, &name).await?;
    let ce_before = serde_json::to_value(ctx.get_ext(&name).await?)?;
    let cms = ctx.dynamic("v1", "ConfigMap", "configmaps", Some(&ctx.ns));
    let cm_before = cms.get(&ctx.names().configmap()).await?;
    let stopped = std::time::Instant::now();
    ctx.env.stop_olm().await.context("graceful stop")?;
    ctx.note(format!("graceful stop took {:.1?}", stopped.elapsed()));
    ctx.env.start_olm().await?;
    tokio::time::sleep(Duration::from_secs(15)).await;
    let after = versions(&ctx, &name).await?;
    let changed: Vec<String> = before
        .iter()
        .filter(|(k, v)| after.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: {v} -> {:?}", after.get(k)))
        .collect();
    if !changed.is_empty() {
        let ce_after = serde_json::to_value(ctx.get_ext(&name).await?)?;
        let cm_after = cms.get(&ctx.names().configmap()).await?;
        let mut diffs = Vec::new();
        json_diff("ClusterExtension", &ce_before, &ce_after, &mut diffs);
        json_diff(
            "ConfigMap",
            &serde_json::to_value(&cm_before)?,
            &serde_json::to_value(&cm_after)?,
            &mut diffs,
        );
        let show = |o: &kube::api::DynamicObject| -> Vec<String> {
            o.managed_fields()
                .iter()
                .map(|m| {
                    format!(
                        "{} {} {:?} {}",
                        m.manager.clone().unwrap_or_default(),
                        m.operation.clone().unwrap_or_default(),
                        m.time.as_ref().map(|t| t.0.to_string()),
                        m.fields_v1
                            .as_ref()
                            .map(|f| f.0.to_string())
                            .unwrap_or_default()
                    )
                })
                .collect()
        };
        let managers = format!("before {:?}; after {:?}", show(&cm_before), show(&cm_after));
        anyhow::bail!(
            "written although nothing changed: {changed:?}; differences: {diffs:?}; ConfigMap managedFields {managers}"
        );
    }
    Ok(())
}

/// resourceVersion of everything the extension owns, by kind/name.
async fn versions(ctx: &Ctx, name: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let ce = ctx.get_ext(name).await?;
    out.insert(
        format!("ClusterExtension/{name}"),
        ce.resource_version().unwrap_or_default(),
    );
    for s in ctx.object_sets(name).await? {
        out.insert(
            format!("ClusterObjectSet/{}", s.name_any()),
            s.resource_version().unwrap_or_default(),
        );
    }
    let sel = format!("{}={name}", olm_k8s::OWNER_NAME_LABEL);
    for (api, kind) in [
        (
            ctx.dynamic("v1", "Secret", "secrets", Some(e2e::SYSTEM_NAMESPACE)),
            "Secret",
        ),
        (
            ctx.dynamic("v1", "ConfigMap", "configmaps", Some(&ctx.ns)),
            "ConfigMap",
        ),
        (
            ctx.dynamic("apps/v1", "Deployment", "deployments", Some(&ctx.ns)),
            "Deployment",
        ),
        (
            ctx.dynamic(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "customresourcedefinitions",
                None,
            ),
            "CustomResourceDefinition",
        ),
    ] {
        for o in api.list(&ListParams::default().labels(&sel)).await?.items {
            out.insert(
                format!("{kind}/{}", o.name_any()),
                o.resource_version().unwrap_or_default(),
            );
        }
    }
    ensure!(out.len() > 4, "too little found to compare: {out:?}");
    Ok(out)
}

/// Paths whose values differ, with both values (managedFields and resourceVersion left out).
fn json_diff(path: &str, a: &serde_json::Value, b: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    if path.ends_with("managedFields") || path.ends_with("resourceVersion") {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let null = Value::Null;
                json_diff(
                    &format!("{path}.{k}"),
                    x.get(k).unwrap_or(&null),
                    y.get(k).unwrap_or(&null),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                json_diff(&format!("{path}[{i}]"), p, q, out);
            }
        }
        _ if a != b => out.push(format!("{path}: {a} -> {b}")),
        _ => {}
    }
}
