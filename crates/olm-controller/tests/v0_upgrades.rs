//! OLM v0 upgrades that must never dead-end, on a real control plane (etcd, kube-apiserver,
//! kube-controller-manager, kwok making Deployments available) with `olm run --olm v0` in this
//! process and catalogs served in-process by `olm catalog serve`'s registry: seed 001's
//! `UnsafeFailForward` recoveries (a failed CSV, a failed InstallPlan) and the default mode's
//! (deleting the failed plan), an upgrade in progress that is no resolution failure,
//! `disableCopiedCSVs` turned off deleting its events, a hand-made InstallPlan (seed 004), and
//! the Operator object of a Subscription's operator.
//!
//! Each scenario works in a namespace of its own (its name) and they run at once; the one that
//! turns copied CSVs off cluster-wide runs alone at the end. After each, what it touched must
//! see ten seconds without a write (the `settle` guard the other suites run).
//!
//! Runs on the shared runner (`tests/runner`, `harness = false`), as `v0_operators` does:
//! `cargo test -p olm-controller --test v0_upgrades [-- NAME_SUBSTRING… | --list | --exact]`;
//! `V0_SCENARIO=<part of a name>` selects too.
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod settle;
mod v0fixtures;

use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use base64::Engine as _;
use futures::{StreamExt as _, TryStreamExt as _};
use kube::Client;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, WatchEvent, WatchParams,
};
use serde_json::{Value, json};
use v0fixtures::harness::{self, Scenario, Served, serve_fbc, wait};
use v0fixtures::{csv, csv_resource, group, resource};

/// Fails the scenario (not the whole run) when the two differ.
macro_rules! check_eq {
    ($a:expr, $b:expr) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            bail!(
                "{} != {}: {:?} vs {:?}",
                stringify!($a),
                stringify!($b),
                a,
                b
            );
        }
    }};
}

const MANAGER: &str = "olm-v0-upgrades-test";

struct Env {
    client: Client,
}

impl Env {
    async fn apply(&self, object: Value) -> Result<DynamicObject> {
        harness::apply(&self.client, MANAGER, &object).await
    }

    fn v1alpha1(&self, ns: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
        v0fixtures::olm_api(&self.client, ns, "v1alpha1", kind, plural)
    }

    fn csvs(&self, ns: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), ns, &csv_resource())
    }

    fn plans(&self, ns: &str) -> Api<DynamicObject> {
        self.v1alpha1(ns, "InstallPlan", "installplans")
    }

    /// A namespace with one OperatorGroup `og` of `spec`.
    async fn namespace_with_group(&self, ns: &str, spec: Value) -> Result<()> {
        self.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .await?;
        self.apply(group(ns, "og", spec)).await?;
        Ok(())
    }

    /// The object `name` of `api` as JSON, `Null` when absent.
    async fn get(api: &Api<DynamicObject>, name: &str) -> Result<Value> {
        Ok(api
            .get_opt(name)
            .await?
            .map(|o| serde_json::to_value(o).unwrap_or(Value::Null))
            .unwrap_or(Value::Null))
    }

    async fn wait_csv(&self, ns: &str, name: &str, phase: &str, reason: &str) -> Result<Value> {
        let csvs = self.csvs(ns);
        wait(
            &format!("{ns}/{name} {phase}/{reason}"),
            || Env::get(&csvs, name),
            |o| o["status"]["phase"] == phase && o["status"]["reason"] == reason,
        )
        .await
    }

    async fn wait_gone(&self, ns: &str, name: &str) -> Result<()> {
        let csvs = self.csvs(ns);
        wait(
            &format!("{ns}/{name} deleted"),
            || Env::get(&csvs, name),
            Value::is_null,
        )
        .await?;
        Ok(())
    }

    async fn wait_subscription(
        &self,
        ns: &str,
        what: &str,
        ok: impl Fn(&Value) -> bool,
    ) -> Result<Value> {
        let subs = self.v1alpha1(ns, "Subscription", "subscriptions");
        wait(what, || Env::get(&subs, "foo"), ok).await
    }
}

/// The condition of `kind` in a Subscription's status, `Null` when absent.
fn condition(sub: &Value, kind: &str) -> Value {
    sub["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind).cloned())
        .unwrap_or(Value::Null)
}

/// The package `foo` as a catalog: `entries` of its `stable` channel, `bundles` its bundles.
/// Each catalog is served on its own address; the CatalogSource `local` is pointed at the newest
/// and the older registry stopped, so olm reads the new content.
struct Catalog {
    ns: String,
    served: Option<Served>,
}

impl Catalog {
    async fn serve(&mut self, env: &Env, entries: Value, bundles: Vec<Value>) -> Result<()> {
        let mut docs =
            vec![json!({"schema": "olm.package", "name": "foo", "defaultChannel": "stable"})];
        docs.extend(bundles);
        docs.push(json!({"schema": "olm.channel", "package": "foo", "name": "stable", "entries": entries}));
        let fbc: String = docs.iter().map(|d| format!("{d}\n")).collect();
        let served = serve_fbc(&fbc).await?;
        env.apply(
            json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "local", "namespace": self.ns},
            "spec": {"sourceType": "grpc", "address": served.address}}),
        )
        .await?;
        let address = served.address.clone();
        if let Some(old) = self.served.replace(served) {
            old.stop().await?;
        }
        // olm reads the content when the connection to the new address is READY: only then does
        // a resolution see it.
        let sources = env.v1alpha1(&self.ns, "CatalogSource", "catalogsources");
        wait(
            "the catalog READY at its new address",
            || Env::get(&sources, "local"),
            |c| {
                let state = &c["status"]["connectionState"];
                state["address"] == address.as_str() && state["lastObservedState"] == "READY"
            },
        )
        .await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
        Ok(())
    }

    async fn stop(mut self) -> Result<()> {
        if let Some(s) = self.served.take() {
            s.stop().await?;
        }
        Ok(())
    }
}

/// A bundle of `foo` at `version` served inline: a CSV (changed by `edit`) providing Gadgets
/// of `api_group`, the CRD, and `extra` objects.
fn bundle(version: &str, api_group: &str, edit: impl Fn(&mut Value), extra: &[Value]) -> Value {
    let name = format!("foo.v{version}");
    let mut object = csv(
        "",
        &name,
        &["OwnNamespace", "AllNamespaces"],
        Some(("gadgets", api_group, "Gadget")),
        json!({}),
    );
    if let Some(m) = object["metadata"].as_object_mut() {
        m.remove("namespace");
    }
    object["spec"]["version"] = json!(version);
    edit(&mut object);
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{api_group}")},
        "spec": {"group": api_group, "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]},
    });
    let mut properties = vec![
        json!({"type": "olm.package", "value": {"packageName": "foo", "version": version}}),
        json!({"type": "olm.gvk", "value": {"group": api_group, "version": "v1", "kind": "Gadget"}}),
    ];
    for o in [object, crd].iter().chain(extra) {
        let data = base64::engine::general_purpose::STANDARD.encode(o.to_string());
        properties.push(json!({"type": "olm.bundle.object", "value": {"data": data}}));
    }
    json!({"schema": "olm.bundle", "package": "foo", "name": name, "image": "", "properties": properties})
}

fn plain(version: &str, api_group: &str) -> Value {
    bundle(version, api_group, |_| {}, &[])
}

/// A bundle whose CSV fails once created: a webhook whose rules cover every API group.
fn failing_csv(version: &str, api_group: &str) -> Value {
    let webhook = json!({
        "generateName": "vgadgets.example.com",
        "type": "ValidatingAdmissionWebhook",
        "deploymentName": "foo",
        "containerPort": 9443,
        "targetPort": 9443,
        "webhookPath": "/validate",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Ignore",
        "rules": [{"apiGroups": ["*"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["gadgets"]}],
    });
    bundle(
        version,
        api_group,
        |c| c["spec"]["webhookdefinitions"] = json!([webhook]),
        &[],
    )
}

/// A bundle whose InstallPlan creates the CSV, then fails: a ConfigMap named against the rules.
/// The plan's later steps (the operator's ServiceAccount and its Role) are never made, so the
/// CSV waits `Pending` with `RequirementsNotMet`, as a real operator's would.
fn failing_plan(version: &str, api_group: &str) -> Value {
    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_A_Valid_Name"}, "data": {"a": "b"}});
    let account = |c: &mut Value| {
        c["spec"]["install"]["spec"]["permissions"] = json!([{"serviceAccountName": "foo-operator",
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}]);
        c["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["serviceAccountName"] =
            json!("foo-operator");
    };
    bundle(version, api_group, account, &[bad])
}

/// A namespace `ns` with an OperatorGroup (fail-forward when asked), a catalog with `foo.v1.0.0`
/// and a Subscription `foo` that installed it.
async fn installed_v1(env: &Env, ns: &str, fail_forward: bool) -> Result<Catalog> {
    let mut spec = json!({"targetNamespaces": [ns]});
    if fail_forward {
        spec["upgradeStrategy"] = json!("TechPreviewUnsafeFailForward");
    }
    env.namespace_with_group(ns, spec).await?;
    let api_group = format!("{ns}.example.com");
    let mut catalog = Catalog {
        ns: ns.to_owned(),
        served: None,
    };
    catalog
        .serve(
            env,
            json!([{"name": "foo.v1.0.0"}]),
            vec![plain("1.0.0", &api_group)],
        )
        .await?;
    env.apply(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "foo", "namespace": ns},
        "spec": {"name": "foo", "channel": "stable", "source": "local", "sourceNamespace": ns,
            "installPlanApproval": "Automatic"}}),
    )
    .await?;
    env.wait_csv(ns, "foo.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    Ok(catalog)
}

/// Seed 001, "When one or more CSVs have failed", with fail-forward upgrades: v2 fails, v3
/// (replacing v2) installs, and v1 and v2 both go — so a later v4 upgrades v3 as usual.
async fn failed_csv(env: &Env, ns: &str) -> Result<()> {
    let g = format!("{ns}.example.com");
    let mut catalog = installed_v1(env, ns, true).await?;
    let v2 = json!({"name": "foo.v2.0.0", "replaces": "foo.v1.0.0"});
    catalog
        .serve(
            env,
            json!([{"name": "foo.v1.0.0"}, v2]),
            vec![plain("1.0.0", &g), failing_csv("2.0.0", &g)],
        )
        .await?;
    env.wait_csv(ns, "foo.v2.0.0", "Failed", "InvalidWebhookDescription")
        .await?;
    env.wait_csv(ns, "foo.v1.0.0", "Replacing", "BeingReplaced")
        .await?;
    let v3 = json!({"name": "foo.v3.0.0", "replaces": "foo.v2.0.0"});
    catalog
        .serve(
            env,
            json!([{"name": "foo.v1.0.0"}, v2, v3]),
            vec![
                plain("1.0.0", &g),
                failing_csv("2.0.0", &g),
                plain("3.0.0", &g),
            ],
        )
        .await?;
    at_v3(env, ns).await?;
    let v4 = json!({"name": "foo.v4.0.0", "replaces": "foo.v3.0.0"});
    catalog
        .serve(
            env,
            json!([{"name": "foo.v1.0.0"}, v2, v3, v4]),
            vec![
                plain("1.0.0", &g),
                failing_csv("2.0.0", &g),
                plain("3.0.0", &g),
                plain("4.0.0", &g),
            ],
        )
        .await?;
    env.wait_csv(ns, "foo.v4.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.wait_gone(ns, "foo.v3.0.0").await?;
    catalog.stop().await
}

/// Waits for the plan installing `foo.v2.0.0` to fail after creating its CSV.
async fn v2_plan_fails(env: &Env, ns: &str, catalog: &mut Catalog) -> Result<()> {
    let g = format!("{ns}.example.com");
    catalog
        .serve(
            env,
            json!([{"name": "foo.v1.0.0"}, {"name": "foo.v2.0.0", "replaces": "foo.v1.0.0"}]),
            vec![plain("1.0.0", &g), failing_plan("2.0.0", &g)],
        )
        .await?;
    let plans = env.plans(ns);
    wait(
        "v2's plan Failed",
        || async { Ok(plans.list(&ListParams::default()).await?.items) },
        |items| {
            items.iter().any(|p| {
                p.data["status"]["phase"] == "Failed"
                    && p.data["spec"]["clusterServiceVersionNames"] == json!(["foo.v2.0.0"])
            })
        },
    )
    .await?;
    env.wait_csv(ns, "foo.v2.0.0", "Pending", "RequirementsNotMet")
        .await?;
    Ok(())
}

/// The catalog with v3 replacing v1 and skipping v2, the seed's fix for a failed v2.
async fn v3_skipping_v2(env: &Env, ns: &str, catalog: &mut Catalog) -> Result<()> {
    let g = format!("{ns}.example.com");
    catalog
        .serve(
            env,
            json!([{"name": "foo.v1.0.0"}, {"name": "foo.v2.0.0", "replaces": "foo.v1.0.0"},
                {"name": "foo.v3.0.0", "replaces": "foo.v1.0.0", "skips": ["foo.v2.0.0"]}]),
            vec![
                plain("1.0.0", &g),
                failing_plan("2.0.0", &g),
                plain("3.0.0", &g),
            ],
        )
        .await
}

/// v3 installed in place of v1 and the failed v2: both gone, the Subscription at v3.
async fn at_v3(env: &Env, ns: &str) -> Result<()> {
    env.wait_csv(ns, "foo.v3.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.wait_gone(ns, "foo.v2.0.0").await?;
    env.wait_gone(ns, "foo.v1.0.0").await?;
    let sub = env
        .wait_subscription(ns, "foo at v3", |s| {
            s["status"]["installedCSV"] == "foo.v3.0.0" && s["status"]["state"] == "AtLatestKnown"
        })
        .await?;
    check_eq!(condition(&sub, "ResolutionFailed"), Value::Null);
    check_eq!(condition(&sub, "InstallPlanMissing"), Value::Null);
    Ok(())
}

/// Seed 001, "When an InstallPlan failed", with fail-forward upgrades: v2's plan created its
/// CSV and failed; the Subscription is `UpgradeFailed` and still has v1 installed; a catalog
/// offering v3 (replacing v1, skipping v2) gets a new plan without anyone deleting anything.
async fn failed_plan_fail_forward(env: &Env, ns: &str) -> Result<()> {
    let mut catalog = installed_v1(env, ns, true).await?;
    v2_plan_fails(env, ns, &mut catalog).await?;
    env.wait_subscription(ns, "UpgradeFailed at v1", |s| {
        s["status"]["state"] == "UpgradeFailed"
            && s["status"]["installedCSV"] == "foo.v1.0.0"
            && s["status"]["currentCSV"] == "foo.v2.0.0"
    })
    .await?;
    v3_skipping_v2(env, ns, &mut catalog).await?;
    at_v3(env, ns).await?;
    catalog.stop().await
}

/// Seed 001, "When an InstallPlan failed", default upgrades: the Subscription waits
/// (`UpgradePending` with `InstallPlanFailed`, v1 still installed) until the user deletes the
/// failed plan; then v3 is planned and installed in place of v1 and the failed v2.
async fn failed_plan_deleted(env: &Env, ns: &str) -> Result<()> {
    let mut catalog = installed_v1(env, ns, false).await?;
    v2_plan_fails(env, ns, &mut catalog).await?;
    let sub = env
        .wait_subscription(ns, "UpgradePending with InstallPlanFailed", |s| {
            s["status"]["state"] == "UpgradePending"
                && condition(s, "InstallPlanFailed")["status"] == "True"
        })
        .await?;
    check_eq!(sub["status"]["installedCSV"], "foo.v1.0.0");
    v3_skipping_v2(env, ns, &mut catalog).await?;
    let failed = sub["status"]["installPlanRef"]["name"]
        .as_str()
        .context("installPlanRef")?
        .to_owned();
    env.plans(ns)
        .delete(&failed, &DeleteParams::default())
        .await?;
    at_v3(env, ns).await?;
    catalog.stop().await
}

/// An upgrade held by `Upgradeable=False` is no resolution failure: the Subscription names the
/// new CSV, the CSV says why it waits, and the upgrade finishes once released.
async fn held_upgrade(env: &Env, ns: &str) -> Result<()> {
    let g = format!("{ns}.example.com");
    let mut catalog = installed_v1(env, ns, false).await?;
    let conditions = v0fixtures::operator_conditions(&env.client, ns, "foo.v1.0.0").await?;
    let hold = json!({"spec": {"overrides": [{"type": "Upgradeable", "status": "False", "reason": "Hold", "message": "migrating data"}]}});
    conditions
        .patch("foo.v1.0.0", &PatchParams::default(), &Patch::Merge(&hold))
        .await?;
    catalog
        .serve(
            env,
            json!([{"name": "foo.v1.0.0"}, {"name": "foo.v2.0.0", "replaces": "foo.v1.0.0"}]),
            vec![plain("1.0.0", &g), plain("2.0.0", &g)],
        )
        .await?;
    env.wait_csv(
        ns,
        "foo.v2.0.0",
        "Pending",
        "OperatorConditionNotUpgradeable",
    )
    .await?;
    // Every pass over the namespace while the upgrade is held resolves it without a failure:
    // each version the Subscription goes through is read from a watch, none sampled.
    let subs = env.v1alpha1(ns, "Subscription", "subscriptions");
    let from = Env::get(&subs, "foo").await?["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut versions = subs
        .watch(&WatchParams::default().fields("metadata.name=foo"), &from)
        .await?
        .boxed();
    for i in 0..10 {
        let poke = json!({"metadata": {"annotations": {"test.olm/poke": i.to_string()}}});
        subs.patch("foo", &PatchParams::default(), &Patch::Merge(&poke))
            .await?;
        // Paced so that each poke gets a pass of its own.
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let mut seen = 0;
    while let Ok(Ok(Some(event))) =
        tokio::time::timeout(Duration::from_secs(1), versions.try_next()).await
    {
        if let WatchEvent::Added(sub) | WatchEvent::Modified(sub) = event {
            seen += 1;
            let sub = serde_json::to_value(&sub)?;
            check_eq!(condition(&sub, "ResolutionFailed"), Value::Null);
        }
    }
    if seen < 10 {
        bail!("the watch saw {seen} versions of the Subscription for 10 pokes");
    }
    let sub = Env::get(&subs, "foo").await?;
    check_eq!(sub["status"]["currentCSV"], "foo.v2.0.0");
    let release = json!({"spec": {"overrides": [{"type": "Upgradeable", "status": "True", "reason": "Done", "message": "go"}]}});
    conditions
        .patch(
            "foo.v1.0.0",
            &PatchParams::default(),
            &Patch::Merge(&release),
        )
        .await?;
    env.wait_csv(ns, "foo.v2.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.wait_gone(ns, "foo.v1.0.0").await?;
    let sub = Env::get(&subs, "foo").await?;
    check_eq!(condition(&sub, "ResolutionFailed"), Value::Null);
    catalog.stop().await
}

/// A Subscription's operator gets its Operator object `foo.<namespace>`: the Subscription, its
/// InstallPlan, its CSV and what the CSV owns carry `operators.coreos.com/foo.<namespace>`.
async fn operator_object(env: &Env, ns: &str) -> Result<()> {
    let catalog = installed_v1(env, ns, false).await?;
    let name = format!("foo.{ns}");
    let operators: Api<DynamicObject> = Api::all_with(
        env.client.clone(),
        &resource("operators.coreos.com", "v1", "Operator", "operators"),
    );
    let o = wait(
        "the Operator listing the Subscription's components",
        || async { Ok(operators.get_opt(&name).await?) },
        |o| {
            let refs = o
                .as_ref()
                .and_then(|o| o.data["status"]["components"]["refs"].as_array().cloned())
                .unwrap_or_default();
            [
                "Subscription",
                "InstallPlan",
                "ClusterServiceVersion",
                "Deployment",
            ]
            .iter()
            .all(|k| refs.iter().any(|r| r["kind"] == *k))
        },
    )
    .await?
    .context("no Operator")?;
    check_eq!(
        o.data["status"]["components"]["labelSelector"],
        json!({"matchExpressions": [{"key": format!("operators.coreos.com/{name}"), "operator": "Exists"}]})
    );
    catalog.stop().await
}

/// A hand-made InstallPlan (seed 004) moves through its phases as upstream's: `Planning`, then
/// `RequiresApproval` until approved, then `Complete` having run the (no) steps it holds.
async fn hand_made_plan(env: &Env, ns: &str) -> Result<()> {
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    env.apply(json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
        "metadata": {"name": "by-hand", "namespace": ns},
        "spec": {"clusterServiceVersionNames": ["foo.v1.0.0"], "approval": "Manual", "approved": false}}))
        .await?;
    let plans = env.plans(ns);
    wait(
        "the plan waiting for approval",
        || Env::get(&plans, "by-hand"),
        |p| p["status"]["phase"] == "RequiresApproval",
    )
    .await?;
    plans
        .patch(
            "by-hand",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"approved": true}})),
        )
        .await?;
    wait(
        "the plan complete",
        || Env::get(&plans, "by-hand"),
        |p| p["status"]["phase"] == "Complete",
    )
    .await?;
    Ok(())
}

/// `disableCopiedCSVs` on records a `DisabledCopiedCSVs` event on an AllNamespaces operator's
/// CSV; off again, the event is deleted (seed 001).
async fn copied_csv_events(env: &Env, ns: &str) -> Result<()> {
    env.namespace_with_group(ns, json!({})).await?;
    env.apply(csv(
        ns,
        "everywhere.v1.0.0",
        &["AllNamespaces", "OwnNamespace"],
        None,
        json!({}),
    ))
    .await?;
    env.wait_csv(ns, "everywhere.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let config = |disabled: bool| {
        json!({"apiVersion": "operators.coreos.com/v1", "kind": "OLMConfig", "metadata": {"name": "cluster"},
            "spec": {"features": {"disableCopiedCSVs": disabled}}})
    };
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(env.client.clone(), ns);
    let disabled_events = || async {
        Ok(events
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .filter(|e| e.reason.as_deref() == Some("DisabledCopiedCSVs"))
            .count())
    };
    env.apply(config(true)).await?;
    wait("the DisabledCopiedCSVs event", disabled_events, |n| *n > 0).await?;
    env.apply(config(false)).await?;
    wait("the DisabledCopiedCSVs event gone", disabled_events, |n| {
        *n == 0
    })
    .await?;
    Ok(())
}

/// The scenario's objects settle (`settle::assert_settles`): what OLM v0 and Kubernetes keep in
/// its namespace, Events included, and the Operator of its package — a hot loop fails it.
async fn settles(env: &Env, ns: &str) -> Result<()> {
    use settle::{cluster_named, namespaced, resource as r};
    let v0 =
        |version: &str, kind: &str, plural: &str| r("operators.coreos.com", version, kind, plural);
    // The same kinds as the other suites watch (Secrets, ConfigMaps, Services and RBAC
    // included: a hot loop there is one too).
    let kinds = settle::olm_v0_kinds()
        .into_iter()
        .chain(settle::workload_kinds());
    let owned = ns.to_owned();
    let mut watched: Vec<settle::Watched> = kinds
        .into_iter()
        .map(|k| {
            let owned = owned.clone();
            namespaced(k, move |n| n == owned)
        })
        .collect();
    let operator = format!("foo.{ns}");
    watched.push(cluster_named(v0("v1", "Operator", "operators"), move |n| {
        n == operator
    }));
    settle::assert_settles(&env.client, &watched)
        .await
        .with_context(|| format!("{ns}: hot loop"))?;
    Ok(())
}

fn main() {
    harness::main(
        vec![
            Scenario::new("failed-csv", |e, id| Box::pin(failed_csv(e, id))),
            Scenario::new("failed-plan-fail-forward", |e, id| {
                Box::pin(failed_plan_fail_forward(e, id))
            }),
            Scenario::new("failed-plan-deleted", |e, id| {
                Box::pin(failed_plan_deleted(e, id))
            }),
            Scenario::new("held-upgrade", |e, id| Box::pin(held_upgrade(e, id))),
            Scenario::new("operator-object", |e, id| Box::pin(operator_object(e, id))),
            Scenario::new("hand-made-plan", |e, id| Box::pin(hand_made_plan(e, id))),
            Scenario::exclusive("copied-csv-events", |e, id| {
                Box::pin(copied_csv_events(e, id))
            }),
        ],
        |olm| Env {
            client: olm.client.clone(),
        },
        |e, ns| Box::pin(settles(e, ns)),
    );
}
