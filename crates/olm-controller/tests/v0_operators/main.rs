//! OLM v0's olm-operator on a real control plane (etcd, kube-apiserver, kube-controller-manager,
//! kwok making Deployments available): OperatorGroups and ClusterServiceVersions applied by
//! hand, as an InstallPlan would, and `olm run --olm v0` in this process doing the rest.
//!
//! Each scenario works in namespaces of its own (its name is their prefix) and they run at
//! once; the twelve real bundles, and the scenario that turns copied CSVs off cluster-wide,
//! run alone at the end. After each one passes, its objects must settle: ten seconds without a
//! write (`settle`), or it fails.
//!
//! The scenarios share one control plane and `olm`, so the binary runs on the shared runner
//! (`tests/runner`, `harness = false`) rather than libtest:
//! `cargo test -p olm-controller --test v0_operators [-- NAME_SUBSTRING… | --list | --exact]`;
//! `V0_SCENARIO=<part of a name>` selects as an argument does, `E2E_JOBS` bounds how many run
//! at once.
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../settle/mod.rs"]
mod settle;
#[path = "../v0fixtures/mod.rs"]
mod v0fixtures;

use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use v0fixtures::harness::{self, Scenario, serve_fbc, wait};
use v0fixtures::{csv, csv_resource, group, group_resource, resource};

/// Fails the scenario (not the whole run) when the two differ.
macro_rules! check_eq {
    ($a:expr, $b:expr) => {
        check_eq!($a, $b, "")
    };
    ($a:expr, $b:expr, $($why:tt)+) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            bail!("{} != {}: {:?} vs {:?} {}", stringify!($a), stringify!($b), a, b, format!($($why)+));
        }
    }};
}

// The scenarios, by what they exercise (after `check_eq!`, which they use).
mod catalogs;
mod csvs;
mod groups;
mod packagemanifests;
mod plans;
mod subscriptions;

use catalogs::*;
use csvs::*;
use groups::*;
use packagemanifests::*;
use plans::*;
use subscriptions::*;

const MANAGER: &str = "olm-v0-test";

/// What the scenarios share.
struct Env {
    client: Client,
    /// The control plane's node address, when it is this machine's.
    node_address: Option<std::net::Ipv4Addr>,
    /// Where olm's packageserver listens: a port free at start rather than upstream's 5443,
    /// which another run on the same machine may hold.
    packageserver_port: u16,
}

impl Env {
    async fn apply(&self, object: Value) -> Result<DynamicObject> {
        harness::apply(&self.client, MANAGER, &object).await
    }

    async fn namespace(&self, name: &str, labels: Value) -> Result<()> {
        self.apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}))
            .await?;
        Ok(())
    }

    /// A namespace with one OperatorGroup `og` of `spec`.
    async fn namespace_with_group(&self, name: &str, spec: Value) -> Result<()> {
        self.namespace(name, json!({})).await?;
        self.apply(group(name, "og", spec)).await?;
        Ok(())
    }

    fn csvs(&self, namespace: &str) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), namespace, &csv_resource())
    }

    /// Waits until the CSV `namespace/name` satisfies `ok`; the last copy seen on failure.
    async fn wait_csv(
        &self,
        namespace: &str,
        name: &str,
        what: &str,
        ok: impl Fn(&Value) -> bool,
    ) -> Result<Value> {
        let found = wait(
            what,
            || async {
                let o = self.csvs(namespace).get_opt(name).await?;
                Ok(Shown(
                    o.map(|o| serde_json::to_value(o).unwrap_or(Value::Null)),
                ))
            },
            |o| o.0.as_ref().is_some_and(&ok),
        )
        .await?;
        Ok(found.0.unwrap_or(Value::Null))
    }

    async fn wait_phase(
        &self,
        namespace: &str,
        name: &str,
        phase: &str,
        reason: &str,
    ) -> Result<Value> {
        self.wait_csv(
            namespace,
            name,
            &format!("{namespace}/{name} {phase}/{reason}"),
            |o| o["status"]["phase"] == phase && o["status"]["reason"] == reason,
        )
        .await
    }

    /// Waits for an event of `reason` in `namespace`; the first one found.
    async fn wait_event(
        &self,
        namespace: &str,
        reason: &str,
    ) -> Result<k8s_openapi::api::events::v1::Event> {
        let events =
            Api::<k8s_openapi::api::events::v1::Event>::namespaced(self.client.clone(), namespace);
        wait(
            &format!("a {reason} event in {namespace}"),
            || async {
                Ok(events
                    .list(&ListParams::default())
                    .await?
                    .items
                    .into_iter()
                    .find(|e| e.reason.as_deref() == Some(reason)))
            },
            Option::is_some,
        )
        .await?
        .context("no event")
    }

    async fn wait_gone(&self, namespace: &str, name: &str) -> Result<()> {
        wait(
            &format!("{namespace}/{name} deleted"),
            || async { Ok(self.csvs(namespace).get_opt(name).await?.is_none()) },
            |gone| *gone,
        )
        .await?;
        Ok(())
    }
}

/// A CSV as a failed wait shows it: annotations, labels and status.
struct Shown(Option<Value>);

impl std::fmt::Debug for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            None => f.write_str("(absent)"),
            Some(o) => {
                let olm: serde_json::Map<String, Value> = o["metadata"]["annotations"]
                    .as_object()
                    .map(|m| {
                        m.iter()
                            .filter(|(k, _)| k.starts_with("olm."))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                let unmet: Vec<&Value> = o["status"]["requirementStatus"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter(|r| {
                                r["status"] != "Present" && r["status"] != "DeploymentFound"
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                write!(
                    f,
                    "annotations {} phase {} reason {} message {} unmet requirements {:?}",
                    Value::Object(olm),
                    o["status"]["phase"],
                    o["status"]["reason"],
                    o["status"]["message"],
                    unmet
                )
            }
        }
    }
}

fn crd(plural: &str, group: &str, kind: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    })
}

/// The namespaces a scenario works in: its id, or its id and a suffix (the real bundles' are
/// `rb-<package>`).
fn scenario_namespace(id: &str, ns: &str) -> bool {
    let prefix = if id == "real-bundles" { "rb" } else { id };
    ns == prefix
        || ns
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('-'))
}

/// The scenario's objects settle (`settle::assert_settles`): its namespaces, what OLM v0 and
/// Kubernetes keep in them (Events included: one per transition, none per pass), and the CRDs
/// and ClusterRoles named after it.
async fn scenario_settles(env: &Env, id: &str) -> Result<()> {
    use settle::{cluster_named, namespaced, resource as r};
    let owned = id.to_owned();
    let mine = move |ns: &str| scenario_namespace(&owned, ns);
    let kinds = settle::olm_v0_kinds()
        .into_iter()
        .chain(settle::workload_kinds());
    let mut watched: Vec<settle::Watched> = kinds
        .into_iter()
        .map(|k| namespaced(k, mine.clone()))
        .collect();
    let mine_too = mine.clone();
    watched.push(cluster_named(
        r("", "v1", "Namespace", "namespaces"),
        move |n| mine_too(n),
    ));
    let named = format!(".{id}.example.com");
    for k in [
        r(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
        ),
        r(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
        ),
    ] {
        let named = named.clone();
        watched.push(cluster_named(k, move |n| n.contains(&named)));
    }
    let before = settle::assert_settles(&env.client, &watched)
        .await
        .with_context(|| format!("{id}: hot loop"))?;
    let writes: usize = before.values().map(Vec::len).sum();
    eprintln!(
        "settled: {id} ({writes} writes to {} objects before 10 s without one)",
        before.len()
    );
    Ok(())
}

fn main() {
    harness::main(
        vec![
            Scenario::new("plan-warnings", |e, id| Box::pin(plan_warnings(e, id))),
            Scenario::new("crd-terminating", |e, id| Box::pin(crd_terminating(e, id))),
            Scenario::new("subscribe-deprecated", |e, id| {
                Box::pin(subscribe_deprecated(e, id))
            }),
            Scenario::new("plan-updates-existing", |e, id| {
                Box::pin(plan_updates_existing(e, id))
            }),
            Scenario::new("terminal-failures", |e, id| {
                Box::pin(terminal_failures(e, id))
            }),
            Scenario::new("crd-upgrade-validation", |e, id| {
                Box::pin(crd_upgrade_validation(e, id))
            }),
            Scenario::new("subscribe-scoped", |e, id| {
                Box::pin(subscribe_scoped(e, id))
            }),
            Scenario::new("catalog-poll", |e, id| Box::pin(catalog_poll(e, id))),
            Scenario::new("subscribe-and-upgrade", |e, id| {
                Box::pin(subscribe_and_upgrade(e, id))
            }),
            Scenario::new("subscribe-manual", |e, id| {
                Box::pin(subscribe_manual(e, id))
            }),
            Scenario::new("subscribe-unsatisfiable", |e, id| {
                Box::pin(subscribe_unsatisfiable(e, id))
            }),
            Scenario::new("subscribe-images", |e, id| {
                Box::pin(subscribe_images(e, id))
            }),
            Scenario::new("catalog-in-process", |e, id| {
                Box::pin(catalog_in_process(e, id))
            }),
            Scenario::new("catalog-configmap", |e, id| {
                Box::pin(catalog_config_map(e, id))
            }),
            Scenario::new("subscribe-fail-forward", |e, id| {
                Box::pin(subscribe_fail_forward(e, id))
            }),
            Scenario::new("catalog-source-address", |e, id| {
                Box::pin(catalog_source_address(e, id))
            }),
            Scenario::new("catalog-source", |e, id| Box::pin(catalog_source(e, id))),
            Scenario::new("cert-rotation", |e, id| Box::pin(cert_rotation(e, id))),
            Scenario::new("apiservice", |e, id| Box::pin(apiservice(e, id))),
            Scenario::new("namespace-deleted", |e, id| {
                Box::pin(namespace_deleted(e, id))
            }),
            Scenario::new("lifted-rbac", |e, id| Box::pin(lifted_rbac(e, id))),
            Scenario::new("operator-objects", |e, id| {
                Box::pin(operator_objects(e, id))
            }),
            Scenario::new("tenant-rbac", |e, id| Box::pin(tenant_rbac(e, id))),
            Scenario::new("intersecting-groups", |e, id| {
                Box::pin(intersecting_groups(e, id))
            }),
            Scenario::new("fail-forward", |e, id| Box::pin(fail_forward(e, id))),
            Scenario::new("scoped-group", |e, id| Box::pin(scoped_group(e, id))),
            Scenario::new("webhooks", |e, id| Box::pin(webhooks(e, id))),
            Scenario::new("own-namespace", |e, id| Box::pin(own_namespace(e, id))),
            Scenario::new("unsupported-group", |e, id| {
                Box::pin(unsupported_group(e, id))
            }),
            Scenario::new("group-count", |e, id| Box::pin(group_count(e, id))),
            Scenario::new("selector-group", |e, id| Box::pin(selector_group(e, id))),
            Scenario::new("permissions", |e, id| Box::pin(permissions(e, id))),
            Scenario::new("replaces-chain", |e, id| Box::pin(replaces_chain(e, id))),
            Scenario::new("bad-input", |e, id| Box::pin(bad_input(e, id))),
            Scenario::new("packagemanifests", |e, id| {
                Box::pin(packagemanifests(e, id))
            }),
            Scenario::exclusive("real-bundles", |e, id| Box::pin(real_bundles(e, id))),
            Scenario::exclusive("copies", |e, id| Box::pin(copies(e, id))),
        ],
        |olm| Env {
            client: olm.client.clone(),
            node_address: olm.plane.node_address(),
            packageserver_port: olm.packageserver_port,
        },
        |e, id| Box::pin(scenario_settles(e, id)),
    );
}
