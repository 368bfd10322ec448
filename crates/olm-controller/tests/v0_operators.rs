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

mod settle;
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

/// OwnNamespace operator in a group targeting its own namespace: installed, annotated, its
/// Deployment carrying the group's annotations, an OperatorCondition, the group's status and
/// provided APIs.
async fn own_namespace(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace(ns, json!({})).await?;
    env.apply(crd("gadgets", &format!("{id}.example.com"), "Gadget"))
        .await?;
    env.apply(group(ns, "og", json!({"targetNamespaces": [ns]})))
        .await?;
    env.apply(csv(
        ns,
        "gadget-operator.v1.0.0",
        &["OwnNamespace"],
        Some(("gadgets", &format!("{id}.example.com"), "Gadget")),
        json!({}),
    ))
    .await?;
    let o = env
        .wait_phase(
            ns,
            "gadget-operator.v1.0.0",
            "Succeeded",
            "InstallSucceeded",
        )
        .await?;
    let annotations = &o["metadata"]["annotations"];
    check_eq!(annotations["olm.targetNamespaces"], ns);
    check_eq!(annotations["olm.operatorNamespace"], ns);
    check_eq!(annotations["olm.operatorGroup"], "og");
    let history: Vec<&str> = o["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["phase"].as_str().unwrap())
        .collect();
    // Installing appears twice when the Deployment is not available at once: InstallSucceeded
    // ("waiting for install components…"), then InstallWaiting, as upstream records it.
    check_eq!(history.first(), Some(&"Pending"));
    check_eq!(history.last(), Some(&"Succeeded"));
    if !history
        .windows(2)
        .any(|w| w == ["InstallReady", "Installing"])
    {
        bail!("no InstallReady → Installing in {history:?}");
    }
    let d = Api::<Deployment>::namespaced(env.client.clone(), ns)
        .get("gadget-operator")
        .await?;
    let template = d
        .spec
        .template
        .metadata
        .clone()
        .unwrap()
        .annotations
        .unwrap();
    check_eq!(template["olm.targetNamespaces"], ns);
    check_eq!(d.labels()["olm.owner"], "gadget-operator.v1.0.0");
    assert!(d.labels().contains_key("olm.deployment-spec-hash"));
    let og: DynamicObject = Api::namespaced_with(env.client.clone(), ns, &group_resource())
        .get("og")
        .await?;
    let og = serde_json::to_value(og)?;
    check_eq!(og["status"]["namespaces"], json!([ns]));
    check_eq!(
        og["metadata"]["annotations"]["olm.providedAPIs"],
        format!("Gadget.v1.{id}.example.com")
    );
    // The roles that open the CSV's API to Kubernetes' admin, edit and view roles.
    let roles = Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(env.client.clone());
    let admin_name = format!("gadgets.{id}.example.com-v1-admin");
    let admin = wait(
        "the per-API ClusterRoles",
        || async { Ok(roles.get_opt(&admin_name).await?) },
        |r| r.is_some(),
    )
    .await?
    .context("no admin role")?;
    check_eq!(
        admin
            .labels()
            .get("rbac.authorization.k8s.io/aggregate-to-admin")
            .map(String::as_str),
        Some("true")
    );
    let crdview = format!("gadgets.{id}.example.com-v1-crdview");
    wait(
        "the crdview ClusterRole",
        || async { Ok(roles.get_opt(&crdview).await?) },
        |r| r.is_some(),
    )
    .await?;
    let conditions: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        ns,
        &resource(
            "operators.coreos.com",
            "v2",
            "OperatorCondition",
            "operatorconditions",
        ),
    );
    wait(
        "the OperatorCondition",
        || async {
            Ok(conditions
                .get_opt("gadget-operator.v1.0.0")
                .await?
                .is_some())
        },
        |b| *b,
    )
    .await?;
    Ok(())
}

/// An OwnNamespace-only operator in a group of all namespaces fails with upstream's reason and
/// message, and recovers when the group is fixed.
async fn unsupported_group(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({})).await?;
    env.apply(csv(ns, "own.v1.0.0", &["OwnNamespace"], None, json!({})))
        .await?;
    let o = env
        .wait_phase(ns, "own.v1.0.0", "Failed", "UnsupportedOperatorGroup")
        .await?;
    check_eq!(
        o["status"]["message"],
        "AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces"
    );
    env.apply(group(ns, "og", json!({"targetNamespaces": [ns]})))
        .await?;
    env.wait_phase(ns, "own.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    Ok(())
}

/// No group, then two groups, then one.
async fn group_count(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace(ns, json!({})).await?;
    env.apply(csv(
        ns,
        "lonely.v1.0.0",
        &["AllNamespaces", "OwnNamespace"],
        None,
        json!({}),
    ))
    .await?;
    let o = env
        .wait_phase(ns, "lonely.v1.0.0", "Failed", "NoOperatorGroup")
        .await?;
    check_eq!(
        o["status"]["message"],
        "csv in namespace with no operatorgroups"
    );
    env.apply(group(ns, "one", json!({"targetNamespaces": [ns]})))
        .await?;
    env.apply(group(ns, "two", json!({"targetNamespaces": [ns]})))
        .await?;
    let o = env
        .wait_phase(ns, "lonely.v1.0.0", "Failed", "TooManyOperatorGroups")
        .await?;
    check_eq!(
        o["status"]["message"],
        "csv created in namespace with multiple operatorgroups, can't pick one automatically"
    );
    let groups: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), ns, &group_resource());
    let og = wait(
        "MultipleOperatorGroup on the groups",
        || async { Ok(serde_json::to_value(groups.get("one").await?)?) },
        |g| {
            g["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter().any(|c| {
                    c["type"] == "MultipleOperatorGroup"
                        && c["reason"] == "MultipleOperatorGroupsFound"
                })
            })
        },
    )
    .await?;
    drop(og);
    groups.delete("two", &DeleteParams::default()).await?;
    env.wait_phase(ns, "lonely.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    Ok(())
}

/// A group selecting namespaces by label: none at first (`NoTargetNamespaces`), then one.
async fn selector_group(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"selector": {"matchLabels": {"team": id}}}))
        .await?;
    env.apply(csv(
        ns,
        "multi.v1.0.0",
        &["MultiNamespace", "SingleNamespace", "OwnNamespace"],
        None,
        json!({}),
    ))
    .await?;
    env.wait_phase(ns, "multi.v1.0.0", "Failed", "NoTargetNamespaces")
        .await?;
    let target = format!("{id}-target");
    env.namespace(&target, json!({"team": id})).await?;
    let o = env
        .wait_phase(ns, "multi.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    check_eq!(o["metadata"]["annotations"]["olm.targetNamespaces"], target);
    // Its copy in the target namespace.
    let copy = env
        .wait_csv(&target, "multi.v1.0.0", "the copy", |c| {
            c["status"]["reason"] == "Copied"
        })
        .await?;
    check_eq!(copy["metadata"]["labels"]["olm.copiedFrom"], ns);
    check_eq!(
        copy["status"]["message"],
        format!("The operator is running in {ns} but is managing this namespace")
    );
    check_eq!(
        copy["metadata"]["annotations"].get("olm.targetNamespaces"),
        None
    );
    // The explicit target carries the group's label.
    let n = Api::<Namespace>::all(env.client.clone())
        .get(&target)
        .await?;
    if !n
        .labels()
        .keys()
        .any(|k| k.starts_with("olm.operatorgroup.uid/"))
    {
        bail!("no group label on {target}: {:?}", n.labels());
    }
    // Unlabel: the copy goes.
    env.namespace(&target, json!({"team": "other"})).await?;
    env.wait_gone(&target, "multi.v1.0.0").await?;
    Ok(())
}

/// A ServiceAccount-bound operator: requirements not met until the account and its Role exist.
async fn permissions(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let extra = json!({"install": {"permissions": [{
        "serviceAccountName": "runner",
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
    }]}});
    env.apply(csv(ns, "needy.v1.0.0", &["OwnNamespace"], None, extra))
        .await?;
    let o = env
        .wait_phase(ns, "needy.v1.0.0", "Pending", "RequirementsNotMet")
        .await?;
    let sa = o["status"]["requirementStatus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "ServiceAccount")
        .cloned()
        .unwrap();
    check_eq!(sa["status"], "NotPresent");
    check_eq!(sa["message"], "Service account does not exist");
    env.apply(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "runner", "namespace": ns}})).await?;
    let o = env
        .wait_csv(ns, "needy.v1.0.0", "the rule not satisfied", |o| {
            o["status"]["requirementStatus"]
                .as_array()
                .is_some_and(|rs| {
                    rs.iter().any(|r| {
                        r["kind"] == "ServiceAccount" && r["status"] == "PresentNotSatisfied"
                    })
                })
        })
        .await?;
    let sa = o["status"]["requirementStatus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "ServiceAccount")
        .cloned()
        .unwrap();
    check_eq!(
        sa["dependents"][0]["message"],
        r#"namespaced rule:{"verbs":["get","list"],"apiGroups":[""],"resources":["configmaps"]}"#
    );
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "runner", "namespace": ns},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]})).await?;
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "runner", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "runner"},
        "subjects": [{"kind": "ServiceAccount", "name": "runner", "namespace": ns}]})).await?;
    env.wait_phase(ns, "needy.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    Ok(())
}

/// A group with `serviceAccountName`: the condition while the account is missing, then the
/// CSV installed as that account — failing without retries while it may not create Deployments,
/// and installed once RBAC lets it.
async fn scoped_group(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(
        ns,
        json!({"targetNamespaces": [ns], "serviceAccountName": "installer"}),
    )
    .await?;
    let groups: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), ns, &group_resource());
    wait(
        "OperatorGroupServiceAccount",
        || async { Ok(serde_json::to_value(groups.get("og").await?)?) },
        |g| {
            g["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter().any(|c| {
                    c["type"] == "OperatorGroupServiceAccount"
                        && c["reason"] == "ServiceAccountNotFound"
                        && c["message"] == "ServiceAccount installer not found"
                })
            })
        },
    )
    .await?;
    env.apply(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "installer", "namespace": ns}})).await?;
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "installer", "namespace": ns},
        "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch"]}]})).await?;
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "installer", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "installer"},
        "subjects": [{"kind": "ServiceAccount", "name": "installer", "namespace": ns}]})).await?;
    let og = wait(
        "serviceAccountRef",
        || async { Ok(serde_json::to_value(groups.get("og").await?)?) },
        |g| g["status"]["serviceAccountRef"]["name"] == "installer",
    )
    .await?;
    check_eq!(
        og["status"]["conditions"].as_array().map_or(0, |c| c
            .iter()
            .filter(|c| c["type"] == "OperatorGroupServiceAccount")
            .count()),
        0
    );
    env.apply(csv(ns, "scoped.v1.0.0", &["OwnNamespace"], None, json!({})))
        .await?;
    let o = env
        .wait_phase(
            ns,
            "scoped.v1.0.0",
            "Failed",
            "InstallComponentFailedNoRetry",
        )
        .await?;
    let message = o["status"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let want = format!(
        "install strategy failed: install strategy failed: deployments.apps \"scoped\" is forbidden: User \"system:serviceaccount:{ns}:installer\" cannot patch resource \"deployments\""
    );
    if !message.starts_with(&want) {
        bail!("message {message:?} does not start with {want:?}");
    }
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "installer", "namespace": ns},
        "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]}]})).await?;
    let o = env
        .wait_phase(ns, "scoped.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let reasons: Vec<&str> = o["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["reason"].as_str().unwrap_or_default())
        .collect();
    if !reasons.contains(&"DetectedClusterChange") {
        bail!("no DetectedClusterChange in {reasons:?}");
    }
    Ok(())
}

/// Two groups whose target namespaces meet: the second CSV providing the same API fails with
/// `InterOperatorGroupOwnerConflict`; a static group refuses APIs it does not list.
async fn intersecting_groups(env: &Env, id: &str) -> Result<()> {
    let (a, b, shared) = (format!("{id}-a"), format!("{id}-b"), format!("{id}-shared"));
    for ns in [&a, &b, &shared] {
        env.namespace(ns, json!({})).await?;
    }
    let api_group = format!("{id}.example.com");
    env.apply(crd("sprockets", &api_group, "Sprocket")).await?;
    env.apply(group(&a, "og", json!({"targetNamespaces": [a, shared]})))
        .await?;
    env.apply(group(&b, "og", json!({"targetNamespaces": [b, shared]})))
        .await?;
    let owned = Some(("sprockets", api_group.as_str(), "Sprocket"));
    env.apply(csv(
        &a,
        "first.v1.0.0",
        &["MultiNamespace", "OwnNamespace"],
        owned,
        json!({}),
    ))
    .await?;
    env.wait_phase(&a, "first.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let groups: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), &a, &group_resource());
    let og = serde_json::to_value(groups.get("og").await?)?;
    check_eq!(
        og["metadata"]["annotations"]["olm.providedAPIs"],
        format!("Sprocket.v1.{api_group}")
    );
    env.apply(csv(
        &b,
        "second.v1.0.0",
        &["MultiNamespace", "OwnNamespace"],
        owned,
        json!({}),
    ))
    .await?;
    let o = env
        .wait_phase(
            &b,
            "second.v1.0.0",
            "Failed",
            "InterOperatorGroupOwnerConflict",
        )
        .await?;
    check_eq!(
        o["status"]["message"],
        "intersecting operatorgroups provide the same apis"
    );

    let fixed = format!("{id}-static");
    env.namespace(&fixed, json!({})).await?;
    let mut static_group = group(
        &fixed,
        "og",
        json!({"targetNamespaces": [fixed], "staticProvidedAPIs": true}),
    );
    static_group["metadata"]["annotations"] = json!({"olm.providedAPIs": ""});
    env.apply(static_group).await?;
    env.apply(crd("cogs", &api_group, "Cog")).await?;
    env.apply(csv(
        &fixed,
        "static.v1.0.0",
        &["OwnNamespace"],
        Some(("cogs", api_group.as_str(), "Cog")),
        json!({}),
    ))
    .await?;
    let o = env
        .wait_phase(
            &fixed,
            "static.v1.0.0",
            "Failed",
            "CannotModifyStaticOperatorGroupProvidedAPIs",
        )
        .await?;
    check_eq!(
        o["status"]["message"],
        "static provided api operatorgroup cannot be modified by these apis"
    );
    Ok(())
}

/// `upgradeStrategy: TechPreviewUnsafeFailForward`: a failed v1 is replaced by v2 (v1 goes
/// Replacing with upstream's message, then away).
async fn fail_forward(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(
        ns,
        json!({"targetNamespaces": [ns], "upgradeStrategy": "TechPreviewUnsafeFailForward"}),
    )
    .await?;
    let mut broken = csv(ns, "ff.v1.0.0", &["OwnNamespace"], None, json!({}));
    broken["spec"]["install"]["strategy"] = json!("helm");
    env.apply(broken).await?;
    env.wait_phase(ns, "ff.v1.0.0", "Failed", "InvalidInstallStrategy")
        .await?;
    env.apply(csv(
        ns,
        "ff.v2.0.0",
        &["OwnNamespace"],
        None,
        json!({"replaces": "ff.v1.0.0"}),
    ))
    .await?;
    env.wait_phase(ns, "ff.v2.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.wait_gone(ns, "ff.v1.0.0").await?;
    Ok(())
}

/// An AllNamespaces operator's Role and RoleBinding (made for it, with its owner labels) are
/// lifted to a ClusterRole and ClusterRoleBinding, which go when the CSV is deleted.
async fn lifted_rbac(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace(ns, json!({})).await?;
    env.apply(group(ns, "global", json!({}))).await?;
    let owner = json!({"olm.owner": "lift.v1.0.0", "olm.owner.namespace": ns, "olm.owner.kind": "ClusterServiceVersion"});
    env.apply(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "lifter", "namespace": ns}})).await?;
    let role = format!("{id}-role");
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": role, "namespace": ns, "labels": owner},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]})).await?;
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": role, "namespace": ns, "labels": owner},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "lifter", "namespace": ns}]})).await?;
    let extra = json!({"install": {"permissions": [{
        "serviceAccountName": "lifter",
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
    }]}});
    env.apply(csv(ns, "lift.v1.0.0", &["AllNamespaces"], None, extra))
        .await?;
    env.wait_phase(ns, "lift.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let roles = Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(env.client.clone());
    let lifted = wait(
        "the lifted ClusterRole",
        || async { Ok(roles.get_opt(&role).await?) },
        |r| r.is_some(),
    )
    .await?
    .context("no ClusterRole")?;
    let rules = serde_json::to_value(&lifted.rules)?;
    check_eq!(
        rules[1],
        json!({"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["namespaces"]})
    );
    let bindings = Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(env.client.clone());
    let binding = wait(
        "the lifted ClusterRoleBinding",
        || async { Ok(bindings.get_opt(&role).await?) },
        |r| r.is_some(),
    )
    .await?
    .context("no ClusterRoleBinding")?;
    check_eq!(binding.role_ref.kind, "ClusterRole");
    env.csvs(ns)
        .delete("lift.v1.0.0", &DeleteParams::default())
        .await?;
    env.wait_gone(ns, "lift.v1.0.0").await?;
    check_eq!(roles.get_opt(&role).await?.is_none(), true);
    check_eq!(bindings.get_opt(&role).await?.is_none(), true);
    Ok(())
}

/// A MultiNamespace operator's Role and RoleBinding (made by its InstallPlan, owned by the CSV)
/// are copied into each target namespace, owned by the CSV's copy there (upstream's
/// `ensureTenantRBAC`); a tenant RoleBinding deleted by hand comes back.
async fn tenant_rbac(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let targets = [format!("{id}-a"), format!("{id}-b")];
    env.namespace(ns, json!({})).await?;
    for t in &targets {
        env.namespace(t, json!({})).await?;
    }
    env.apply(group(
        ns,
        "og",
        json!({"targetNamespaces": [&targets[0], &targets[1]]}),
    ))
    .await?;
    env.apply(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "tenant", "namespace": ns}})).await?;
    let rules = json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]);
    let extra =
        json!({"install": {"permissions": [{"serviceAccountName": "tenant", "rules": rules}]}});
    let name = "tenant.v1.0.0";
    let created = env
        .apply(csv(ns, name, &["MultiNamespace"], None, extra))
        .await?;
    let owner = json!({"olm.owner": name, "olm.owner.namespace": ns, "olm.owner.kind": "ClusterServiceVersion"});
    let refs = json!([{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "name": name, "uid": created.uid(), "blockOwnerDeletion": false, "controller": false}]);
    let role = format!("{id}-role");
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": role, "namespace": ns, "labels": owner, "ownerReferences": refs}, "rules": rules})).await?;
    env.apply(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": role, "namespace": ns, "labels": owner, "ownerReferences": refs},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": ns}]}),
    )
    .await?;
    env.wait_phase(ns, name, "Succeeded", "InstallSucceeded")
        .await?;
    for t in &targets {
        let copy = env
            .wait_csv(t, name, "the copy", |c| c["status"]["reason"] == "Copied")
            .await?;
        let roles = Api::<k8s_openapi::api::rbac::v1::Role>::namespaced(env.client.clone(), t);
        let tenant = wait(
            "the tenant Role",
            || async { Ok(roles.get_opt(&role).await?) },
            |r| r.is_some(),
        )
        .await?
        .context("no Role")?;
        check_eq!(serde_json::to_value(&tenant.rules)?, rules);
        let labels = tenant.labels();
        check_eq!(labels.get("olm.copiedFrom").map(String::as_str), Some(ns));
        check_eq!(labels.get("olm.owner.namespace"), Some(t));
        check_eq!(labels.get("olm.managed").map(String::as_str), Some("true"));
        check_eq!(
            tenant.owner_references()[0].uid,
            copy["metadata"]["uid"].as_str().unwrap_or_default()
        );
        let bindings =
            Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(env.client.clone(), t);
        let binding = wait(
            "the tenant RoleBinding",
            || async { Ok(bindings.get_opt(&role).await?) },
            |r| r.is_some(),
        )
        .await?
        .context("no RoleBinding")?;
        check_eq!(
            binding.subjects.as_ref().map(|s| s[0].namespace.clone()),
            Some(Some(ns.to_owned()))
        );
    }
    let bindings =
        Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(env.client.clone(), &targets[0]);
    bindings.delete(&role, &DeleteParams::default()).await?;
    wait(
        "the tenant RoleBinding back",
        || async { Ok(bindings.get_opt(&role).await?) },
        |r| {
            r.as_ref()
                .is_some_and(|b| b.metadata.deletion_timestamp.is_none())
        },
    )
    .await?;
    Ok(())
}

/// An Operator object for a CSV labelled `operators.coreos.com/<package>.<namespace>` (as a
/// Subscription's adoption labels it): the CSV's Deployment, OperatorCondition and owned CRD
/// take the label, the Operator is created listing them with their conditions, and comes back
/// when deleted while components remain.
async fn operator_objects(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let group_name = format!("{id}.example.com");
    env.namespace(ns, json!({})).await?;
    env.apply(crd("widgets", &group_name, "Widget")).await?;
    env.apply(group(ns, "og", json!({"targetNamespaces": [ns]})))
        .await?;
    let operator = format!("widget.{ns}");
    let label = format!("operators.coreos.com/{operator}");
    let mut object = csv(
        ns,
        "widget.v1.0.0",
        &["OwnNamespace"],
        Some(("widgets", &group_name, "Widget")),
        json!({}),
    );
    object["metadata"]["labels"] = json!({ label.clone(): "" });
    env.apply(object).await?;
    env.wait_phase(ns, "widget.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let operators: Api<DynamicObject> = Api::all_with(
        env.client.clone(),
        &resource("operators.coreos.com", "v1", "Operator", "operators"),
    );
    let wanted = |o: &Option<DynamicObject>| {
        let refs = o
            .as_ref()
            .and_then(|o| o.data["status"]["components"]["refs"].as_array().cloned())
            .unwrap_or_default();
        let has = |kind: &str| refs.iter().any(|r| r["kind"] == kind);
        has("ClusterServiceVersion")
            && has("Deployment")
            && has("CustomResourceDefinition")
            && has("OperatorCondition")
            && refs.iter().any(|r| {
                r["kind"] == "ClusterServiceVersion" && r["conditions"][0]["type"] == "Succeeded"
            })
    };
    let o = wait(
        "the Operator listing its components",
        || async { Ok(operators.get_opt(&operator).await?) },
        wanted,
    )
    .await?
    .context("no Operator")?;
    let components = &o.data["status"]["components"];
    check_eq!(
        components["labelSelector"],
        json!({"matchExpressions": [{"key": label, "operator": "Exists"}]})
    );
    let refs = components["refs"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<&str> = refs.iter().filter_map(|r| r["kind"].as_str()).collect();
    let mut sorted = kinds.clone();
    sorted.sort_unstable();
    check_eq!(kinds, sorted, "refs are sorted by kind");
    let csv_ref = refs
        .iter()
        .find(|r| r["kind"] == "ClusterServiceVersion")
        .context("no CSV ref")?;
    check_eq!(csv_ref["namespace"], ns);
    check_eq!(csv_ref["apiVersion"], "operators.coreos.com/v1alpha1");
    check_eq!(csv_ref["conditions"][0]["status"], "True");
    check_eq!(csv_ref["conditions"][0]["reason"], "InstallSucceeded");
    let deployment = Api::<Deployment>::namespaced(env.client.clone(), ns)
        .get("widget")
        .await?;
    check_eq!(
        deployment.labels().get(&label).map(String::as_str),
        Some("")
    );
    // Deleted while its components remain: made again.
    operators
        .delete(&operator, &DeleteParams::default())
        .await?;
    wait(
        "the Operator made again",
        || async { Ok(operators.get_opt(&operator).await?) },
        |o| {
            o.as_ref()
                .is_some_and(|o| o.metadata.deletion_timestamp.is_none())
                && wanted(o)
        },
    )
    .await?;
    Ok(())
}

/// Serves an aggregated API's discovery document over TLS with `cert`/`key` to every request on
/// `listener` until the process ends: enough for kube-apiserver's availability check, which
/// fetches `/apis/<group>/<version>` and wants a 200.
fn serve_discovery(
    listener: std::net::TcpListener,
    cert: &[u8],
    key: &[u8],
    body: String,
) -> Result<()> {
    use rustls::pki_types::pem::PemObject;
    use std::io::{Read, Write};
    let chain =
        rustls::pki_types::CertificateDer::pem_slice_iter(cert).collect::<Result<Vec<_>, _>>()?;
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key)?;
    let config = std::sync::Arc::new(
        rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?,
    );
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let config = config.clone();
            let body = body.clone();
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut tls = rustls::StreamOwned::new(conn, stream);
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = write!(
                    tls,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.flush();
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    Ok(())
}

/// An operator serving an aggregated API (seed 002): olm makes the Service with the
/// Deployment's selector, the serving certificate Secret, the APIService with the CA bundle, and
/// the CSV succeeds once kube-apiserver finds the API available — served here by the test
/// itself behind the operator's host-network pod (its endpoint is this machine's address).
async fn apiservice(env: &Env, id: &str) -> Result<()> {
    if env.node_address.is_none() {
        bail!("this machine has no address but loopback: an aggregated API cannot be reached");
    }
    let ns = id;
    let group_name = format!("{id}.example.com");
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::UNSPECIFIED, 0))?;
    let port = listener.local_addr()?.port();
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    // Two resources of one APIService, as an extension API server serves a group version.
    let extra = json!({"apiservicedefinitions": {"owned": [{
        "group": group_name, "version": "v1alpha1", "kind": "Gizmo", "name": "gizmos",
        "displayName": "Gizmo", "deploymentName": "gizmo", "containerPort": port,
    }, {
        "group": group_name, "version": "v1alpha1", "kind": "Doohickey", "name": "doohickeys",
        "displayName": "Doohickey", "deploymentName": "gizmo", "containerPort": port,
    }]}});
    // What an older OLM made for this APIService under its legacy names: the Service labelled
    // as this CSV's goes on install, the Secret labelled as another CSV's stays (upstream's
    // deleteLegacyAPIServiceResources).
    let legacy_service = format!("v1alpha1-{}", group_name.replace('.', "-"));
    let legacy_secret = format!("v1alpha1.{group_name}-cert");
    let owned_by = |csv: &str| json!({"olm.owner": csv, "olm.owner.namespace": ns, "olm.owner.kind": "ClusterServiceVersion"});
    env.apply(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": legacy_service, "namespace": ns, "labels": owned_by("gizmo.v1.0.0")},
        "spec": {"ports": [{"port": 443}]}}))
        .await?;
    env.apply(json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": legacy_secret, "namespace": ns, "labels": owned_by("someone-else")}}))
        .await?;
    let mut object = csv(ns, "gizmo.v1.0.0", &["OwnNamespace"], None, extra.clone());
    object["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["hostNetwork"] =
        json!(true);
    env.apply(object).await?;
    let secrets = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(env.client.clone(), ns);
    let secret = wait(
        "the serving certificate Secret",
        || async { Ok(secrets.get_opt("gizmo-service-cert").await?) },
        |s| s.is_some(),
    )
    .await?
    .context("no Secret")?;
    check_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let data = secret.data.clone().unwrap_or_default();
    let cert = data.get("tls.crt").context("no tls.crt")?.0.clone();
    let key = data.get("tls.key").context("no tls.key")?.0.clone();
    let body = json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{group_name}/v1alpha1"),
        "resources": [{"name": "gizmos", "singularName": "gizmo", "namespaced": true, "kind": "Gizmo", "verbs": ["get", "list"]},
            {"name": "doohickeys", "singularName": "doohickey", "namespaced": true, "kind": "Doohickey", "verbs": ["get", "list"]}]});
    serve_discovery(listener, &cert, &key, body.to_string())?;
    let o = env
        .wait_phase(ns, "gizmo.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let owned = o["status"]["requirementStatus"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if !owned
        .iter()
        .any(|r| r["kind"] == "APIService" && r["status"] == "DeploymentFound")
    {
        bail!("no DeploymentFound APIService requirement: {owned:?}");
    }
    let legacy_services =
        Api::<k8s_openapi::api::core::v1::Service>::namespaced(env.client.clone(), ns);
    check_eq!(
        legacy_services.get_opt(&legacy_service).await?.is_none(),
        true
    );
    check_eq!(secrets.get_opt(&legacy_secret).await?.is_some(), true);
    // Each resource gets the ClusterRoles that aggregate into admin, edit and view (upstream's
    // ensureClusterRolesForCSV), the second of the APIService's too.
    let roles = Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(env.client.clone());
    for resource in ["gizmos", "doohickeys"] {
        for suffix in ["admin", "edit", "view"] {
            let name = format!("{resource}-v1alpha1-{suffix}");
            let role = wait(
                &format!("ClusterRole {name}"),
                || async { Ok(roles.get_opt(&name).await?) },
                |r| r.is_some(),
            )
            .await?
            .context("no ClusterRole")?;
            let rule = role.rules.unwrap_or_default().into_iter().next();
            check_eq!(
                rule.and_then(|r| r.resources),
                Some(vec![resource.to_owned()])
            );
        }
    }
    let apiservice =
        Api::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>::all(
            env.client.clone(),
        )
        .get(&format!("v1alpha1.{group_name}"))
        .await?;
    let spec = apiservice.spec.clone().unwrap_or_default();
    check_eq!(
        spec.service.as_ref().and_then(|s| s.name.clone()),
        Some("gizmo-service".to_owned())
    );
    check_eq!(spec.ca_bundle.is_some(), true);
    let available = apiservice
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default();
    check_eq!(
        available
            .iter()
            .any(|c| c.type_ == "Available" && c.status == "True"),
        true
    );
    let service = Api::<k8s_openapi::api::core::v1::Service>::namespaced(env.client.clone(), ns)
        .get("gizmo-service")
        .await?;
    check_eq!(
        service.spec.and_then(|s| s.selector),
        Some(std::collections::BTreeMap::from([(
            "app".to_owned(),
            "gizmo".to_owned()
        )]))
    );

    // Another CSV owning the same APIService, replacing nothing, may not adopt it (upstream's
    // apiServiceOwnerConflicts), and leaves it pointing at the first one's Service.
    let mut rival = csv(ns, "rival.v1.0.0", &["OwnNamespace"], None, extra.clone());
    rival["spec"]["install"]["spec"]["deployments"][0]["name"] = json!("gizmo");
    env.apply(rival).await?;
    let failed = env
        .wait_phase(ns, "rival.v1.0.0", "Failed", "OwnerConflict")
        .await?;
    check_eq!(failed["status"]["message"], "unable to adopt APIService");
    let services =
        Api::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>::all(
            env.client.clone(),
        );
    let kept = services.get(&format!("v1alpha1.{group_name}")).await?;
    check_eq!(
        kept.labels().get("olm.owner").map(String::as_str),
        Some("gizmo.v1.0.0")
    );

    // An APIService whose owner labels name a CSV that does not exist is deleted (upstream's
    // syncAPIService), as one a deleted CSV's namespace left.
    let orphan_group = format!("orphan.{id}.example.com");
    let orphan = format!("v1alpha1.{orphan_group}");
    services
        .create(
            &kube::api::PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": orphan, "labels": {
                    "olm.owner": "gone.v1.0.0", "olm.owner.namespace": ns,
                    "olm.owner.kind": "ClusterServiceVersion"}},
                "spec": {"group": orphan_group, "version": "v1alpha1",
                    "groupPriorityMinimum": 100, "versionPriority": 100},
            }))?,
        )
        .await?;
    wait(
        &format!("APIService {orphan} deleted"),
        || async { Ok(services.get_opt(&orphan).await?) },
        |a| a.is_none(),
    )
    .await?;
    Ok(())
}

/// A CA and a serving certificate for `hosts`, valid until the next midnight (UTC): less than
/// the day before expiry at which olm renews.
fn expiring_certificate(hosts: &[String]) -> Result<(String, String, String)> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let tomorrow = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .tomorrow()?;
    let until = rcgen::date_time_ymd(
        i32::from(tomorrow.year()),
        u8::try_from(tomorrow.month())?,
        u8::try_from(tomorrow.day())?,
    );
    let since = rcgen::date_time_ymd(2020, 1, 1);
    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::new(Vec::<String>::new())?;
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.not_before = since;
    ca.not_after = until;
    let ca_cert = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, &ca_key);
    let key = KeyPair::generate()?;
    let mut leaf = CertificateParams::new(hosts.to_vec())?;
    leaf.not_before = since;
    leaf.not_after = until;
    let cert = leaf.signed_by(&key, &issuer)?;
    Ok((ca_cert.pem(), cert.pem(), key.serialize_pem()))
}

/// Certificate rotation (seed 002): a webhook operator's serving certificate about to expire
/// (here replaced by one expiring by midnight) is reissued by olm — a new CA, two years — and the
/// Deployment is rolled to it (its pod template's `olmcahash`), the webhook's `caBundle` with it.
async fn cert_rotation(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let hook = webhook(
        &format!("vrotor.{id}.example.com"),
        "ValidatingAdmissionWebhook",
        "rotor",
        &[&format!("{id}.example.com")],
        &["rotors"],
    );
    env.apply(csv(
        ns,
        "rotor.v1.0.0",
        &["OwnNamespace"],
        None,
        json!({"webhookdefinitions": [hook]}),
    ))
    .await?;
    env.wait_phase(ns, "rotor.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let deployments = Api::<Deployment>::namespaced(env.client.clone(), ns);
    let ca_hash = |d: &Deployment| {
        d.spec
            .template
            .metadata
            .as_ref()
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get("olmcahash").cloned())
    };
    let before = ca_hash(&deployments.get("rotor").await?).context("no olmcahash")?;
    let service = "rotor-service";
    let hosts: Vec<String> = ["", ".svc", ".svc.cluster.local"]
        .iter()
        .map(|suffix| format!("{service}.{ns}{suffix}"))
        .collect();
    let (ca, cert, key) = expiring_certificate(&hosts)?;
    let b64 = |s: &str| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, s);
    let secrets = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(env.client.clone(), ns);
    secrets
        .patch(
            "rotor-service-cert",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"tls.crt": b64(&cert), "tls.key": b64(&key), "olmCAKey": b64(&ca)}})),
        )
        .await?;
    // Reissued: neither the CA written above nor the first one.
    let reissued = wait(
        "a new certificate",
        || async { Ok(secrets.get("rotor-service-cert").await?) },
        |s| {
            s.data
                .as_ref()
                .and_then(|d| d.get("olmCAKey"))
                .is_some_and(|c| c.0 != ca.as_bytes())
        },
    )
    .await?;
    let crt = reissued
        .data
        .as_ref()
        .and_then(|d| d.get("tls.crt"))
        .context("no tls.crt")?
        .0
        .clone();
    let (_, pem) = x509_parser::pem::parse_x509_pem(&crt)?;
    let parsed = pem.parse_x509()?;
    let days =
        (parsed.validity().not_after.timestamp() - jiff::Timestamp::now().as_second()) / 86_400;
    check_eq!((728..=730).contains(&days), true, "{days} days left");
    let rolled = wait(
        "the Deployment rolled to the new CA",
        || async { Ok(deployments.get("rotor").await?) },
        |d| ca_hash(d).is_some_and(|h| h != before),
    )
    .await?;
    let after = ca_hash(&rolled).context("no olmcahash")?;
    check_eq!(
        reissued.annotations().get("olmcahash").cloned(),
        Some(after),
        "the Deployment carries the Secret's CA hash"
    );
    env.wait_phase(ns, "rotor.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    Ok(())
}

/// A grpc CatalogSource with an image (seed 001): the registry Pod as upstream makes it — the
/// namespace's restricted default, grpcPodConfig's node selector, tolerations and memory target,
/// the priority-class annotation — its Service, ServiceAccount and NetworkPolicy, and
/// `status.registryService`; a changed spec replaces the Pod; a spec naming no source fails with
/// upstream's reason and message.
async fn catalog_source(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace(
        ns,
        json!({"pod-security.kubernetes.io/enforce": "restricted"}),
    )
    .await?;
    env.apply(
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": format!("{id}-prio")}, "value": 1000}),
    )
    .await?;
    let sources = catalogsources_api(env, ns);
    let source = |memory: &str| {
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "community.catalog", "namespace": ns,
                "annotations": {"operatorframework.io/priorityclass": format!("{id}-prio")}},
            "spec": {"sourceType": "grpc", "image": "quay.io/example/catalog:v1", "secrets": ["pull"],
                "grpcPodConfig": {"nodeSelector": {"disk": "ssd"}, "memoryTarget": memory,
                    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]}}})
    };
    env.apply(source("30Mi")).await?;
    let pods = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(env.client.clone(), ns);
    let selector = "olm.catalogSource=community.catalog";
    let registry = |limit: &'static str| {
        let pods = pods.clone();
        async move {
            let list = pods.list(&ListParams::default().labels(selector)).await?;
            Ok(list
                .items
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .find(|p| {
                    p.spec.as_ref().is_some_and(|s| {
                        s.containers[0]
                            .env
                            .as_ref()
                            .is_some_and(|e| e.iter().any(|v| v.value.as_deref() == Some(limit)))
                    })
                }))
        }
    };
    let pod = wait("the registry pod", || registry("30MiB"), |p| p.is_some())
        .await?
        .context("no pod")?;
    let spec = serde_json::to_value(pod.spec.as_ref().context("no spec")?)?;
    let c = &spec["containers"][0];
    check_eq!(c["name"], "registry-server");
    check_eq!(c["image"], "quay.io/example/catalog:v1");
    check_eq!(c["imagePullPolicy"], "Always");
    check_eq!(c["ports"][0]["containerPort"], 50051);
    check_eq!(c["readinessProbe"]["grpc"]["port"], 50051);
    check_eq!(c["resources"]["requests"]["memory"], "30Mi");
    check_eq!(c["securityContext"]["capabilities"]["drop"], json!(["ALL"]));
    check_eq!(spec["nodeSelector"], json!({"disk": "ssd"}));
    check_eq!(spec["tolerations"][0]["key"], "dedicated");
    check_eq!(spec["priorityClassName"], format!("{id}-prio"));
    check_eq!(
        spec["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    check_eq!(spec["securityContext"]["runAsUser"], 1001);
    check_eq!(spec["serviceAccountName"], "community.catalog");
    check_eq!(spec["imagePullSecrets"], json!([{"name": "pull"}]));
    check_eq!(
        pod.annotations()
            .get("cluster-autoscaler.kubernetes.io/safe-to-evict")
            .map(String::as_str),
        Some("true")
    );
    let service = Api::<k8s_openapi::api::core::v1::Service>::namespaced(env.client.clone(), ns)
        .get("community-catalog")
        .await?;
    check_eq!(
        service.spec.and_then(|s| s.selector),
        Some(std::collections::BTreeMap::from([
            (
                "olm.catalogSource".to_owned(),
                "community.catalog".to_owned()
            ),
            ("olm.managed".to_owned(), "true".to_owned()),
        ]))
    );
    Api::<k8s_openapi::api::networking::v1::NetworkPolicy>::namespaced(env.client.clone(), ns)
        .get("community.catalog-grpc-server")
        .await?;
    let status = wait(
        "status.registryService",
        || source_named(&sources, "community.catalog"),
        |s| s.data["status"]["registryService"].is_object(),
    )
    .await?;
    check_eq!(
        status.data["status"]["registryService"]["serviceName"],
        "community-catalog"
    );
    check_eq!(status.data["status"]["registryService"]["port"], "50051");
    let dialled = wait(
        "status.connectionState",
        || source_named(&sources, "community.catalog"),
        |s| s.data["status"]["connectionState"]["address"].is_string(),
    )
    .await?;
    check_eq!(
        dialled.data["status"]["connectionState"]["address"],
        format!("community-catalog.{ns}.svc:50051")
    );
    // A new memory target: a new Pod replaces the old one.
    env.apply(source("40Mi")).await?;
    wait(
        "the replaced registry pod",
        || registry("40MiB"),
        |p| p.is_some(),
    )
    .await?;
    wait(
        "the old registry pod gone",
        || registry("30MiB"),
        |p| p.is_none(),
    )
    .await?;
    env.apply(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "nothing", "namespace": ns}, "spec": {"sourceType": "grpc"}}),
    )
    .await?;
    source_reports(
        &sources,
        "nothing",
        "SpecInvalidError",
        "image and address unset: at least one must be set for sourcetype: grpc",
    )
    .await?;
    Ok(())
}

/// `registryPoll` on a registry Pod: every interval an update pod starts; the same digest
/// discards it, a new digest promotes it and retires the serving Pod, a failed one is deleted
/// and reported; an interval that does not parse gets upstream's message. No kubelet runs the
/// Pods (their node selector matches no node): the test writes their status as one would.
async fn catalog_poll(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace(ns, json!({})).await?;
    let sources = catalogsources_api(env, ns);
    let source = |name: &str, interval: &str| {
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"sourceType": "grpc", "image": "quay.io/example/catalog:latest",
                "grpcPodConfig": {"nodeSelector": {"olm-test": "no-such-node"}},
                "updateStrategy": {"registryPoll": {"interval": interval}}}})
    };
    env.apply(source("polled", "3s")).await?;
    let pods = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(env.client.clone(), ns);
    let list = |selector: &'static str| {
        let pods = pods.clone();
        async move {
            Ok(pods
                .list(&ListParams::default().labels(selector))
                .await?
                .items
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .map(|p| p.name_any())
                .collect::<Vec<_>>())
        }
    };
    // What a kubelet reports for a running registry that pulled `digest`.
    let run = |name: String, digest: &'static str, phase: &'static str| {
        let pods = pods.clone();
        async move {
            let status = json!({"status": {"phase": phase,
                "conditions": [{"type": "Ready", "status": if phase == "Running" { "True" } else { "False" }}],
                "containerStatuses": [{"name": "registry-server", "image": "quay.io/example/catalog:latest",
                    "imageID": format!("quay.io/example/catalog@sha256:{digest}"), "ready": phase == "Running",
                    "restartCount": 0, "state": {"running": {}}}]}});
            pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
                .await?;
            anyhow::Ok(())
        }
    };
    let serving = "olm.catalogSource=polled";
    let updating = "catalogsource.operators.coreos.com/update=polled";
    // The next update pod: one, none of `before`.
    let next_update = |before: Vec<String>| {
        let list = &list;
        async move {
            wait(
                "the next update pod",
                || list(updating),
                |p| p.len() == 1 && !p.iter().any(|n| before.contains(n)),
            )
            .await
        }
    };
    // Waits until `pod` is no update pod any more.
    let settled = |pod: String| {
        let list = &list;
        async move {
            wait(
                "the update pod settled",
                || list(updating),
                |p| !p.contains(&pod),
            )
            .await
        }
    };
    let first = wait("the registry pod", || list(serving), |p| p.len() == 1).await?;
    run(first[0].clone(), "aaaa", "Running").await?;
    // The same digest: the update pod goes, the serving Pod stays.
    let update = next_update(Vec::new()).await?;
    let polled = sources.get("polled").await?;
    check_eq!(
        polled.data["status"]["latestImageRegistryPoll"].is_string(),
        true
    );
    let labels = pods.get(&update[0]).await?.labels().clone();
    check_eq!(
        labels.get("olm.catalogSource").map(String::as_str),
        Some(""),
        "the Service must not route to an update pod"
    );
    run(update[0].clone(), "aaaa", "Running").await?;
    settled(update[0].clone()).await?;
    check_eq!(list(serving).await?, first);
    // A new digest: the next update pod is promoted and the old Pod retired.
    let update = next_update(update).await?;
    run(update[0].clone(), "bbbb", "Running").await?;
    wait(
        "the promoted pod serving",
        || list(serving),
        |p| *p == update,
    )
    .await?;
    // A failed update pod is deleted and reported.
    let failing = next_update(update.clone()).await?;
    run(failing[0].clone(), "cccc", "Failed").await?;
    let message = format!(
        "couldn't ensure registry server - error ensuring update pod for catalog source polled: update pod {} in a Failed state: deleted update pod",
        failing[0]
    );
    source_reports(&sources, "polled", "RegistryServerError", &message).await?;
    settled(failing[0].clone()).await?;
    check_eq!(list(serving).await?, update);
    sources.delete("polled", &DeleteParams::default()).await?;
    // An interval Go cannot parse: the default, and upstream's message.
    env.apply(source("unparsable", "ten minutes")).await?;
    source_reports(&sources, "unparsable", "InvalidIntervalError", "error parsing spec.updateStrategy.registryPoll.interval. Using the default value of 15m0s instead. Error: time: invalid duration \"ten minutes\"").await?;
    Ok(())
}

fn catalogsources_api(env: &Env, ns: &str) -> Api<DynamicObject> {
    v1alpha1_api(env, ns, "CatalogSource", "catalogsources")
}

/// Waits for the CatalogSource `name` to report `reason` and checks its message.
async fn source_reports(
    sources: &Api<DynamicObject>,
    name: &str,
    reason: &str,
    message: &str,
) -> Result<()> {
    let reported = wait(
        reason,
        || source_named(sources, name),
        |s| s.data["status"]["reason"] == reason,
    )
    .await?;
    check_eq!(reported.data["status"]["message"], message);
    Ok(())
}

/// The CatalogSource `name`, for [`wait`].
async fn source_named(sources: &Api<DynamicObject>, name: &str) -> Result<DynamicObject> {
    Ok(sources.get(name).await?)
}

/// A grpc CatalogSource with `spec.address`: olm dials it and `status.connectionState` follows
/// the registry — `READY` while an `olm catalog serve` registry (run here in-process) answers,
/// `TRANSIENT_FAILURE` once it stops.
async fn catalog_source_address(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace(ns, json!({})).await?;
    let served = serve_fbc(
        r#"{"schema":"olm.package","name":"foo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v1.0.0"}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v1.0.0","image":"example.com/foo:v1","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}}]}
"#,
    )
    .await?;
    let address = served.address.clone();
    env.apply(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "local", "namespace": ns},
        "spec": {"sourceType": "grpc", "address": address}}),
    )
    .await?;
    let sources = catalogsources_api(env, ns);
    let state = |want: &'static str| {
        move |s: &DynamicObject| s.data["status"]["connectionState"]["lastObservedState"] == want
    };
    let ready = wait("READY", || source_named(&sources, "local"), state("READY")).await?;
    check_eq!(ready.data["status"]["connectionState"]["address"], address);
    check_eq!(
        ready.data["status"]["connectionState"]["lastConnect"].is_string(),
        true
    );
    served.stop().await?;
    wait(
        "TRANSIENT_FAILURE",
        || source_named(&sources, "local"),
        state("TRANSIENT_FAILURE"),
    )
    .await?;
    Ok(())
}

fn address_source(ns: &str, name: &str, address: &str) -> Value {
    json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"sourceType": "grpc", "address": address}})
}

fn subscription(ns: &str, name: &str, package: &str, source: &str, approval: &str) -> Value {
    json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"name": package, "channel": "stable", "source": source, "sourceNamespace": ns,
            "installPlanApproval": approval}})
}

/// A bundle served inline (`olm.bundle.object`): a CSV providing `provides` (plural, kind) of
/// `api_group` and requiring `requires`, with the provided CRD.
fn inline_bundle(
    package: &str,
    version: &str,
    api_group: &str,
    provides: (&str, &str),
    requires: Option<(&str, &str)>,
) -> Value {
    let owned = crd(provides.0, api_group, provides.1);
    inline_bundle_with(package, version, api_group, provides, requires, owned)
}

/// [`inline_bundle`] with `owned` as the CRD it ships.
fn inline_bundle_with(
    package: &str,
    version: &str,
    api_group: &str,
    provides: (&str, &str),
    requires: Option<(&str, &str)>,
    owned: Value,
) -> Value {
    use base64::Engine as _;
    let name = format!("{package}.v{version}");
    let mut object = csv(
        "",
        &name,
        &["OwnNamespace", "AllNamespaces"],
        Some((provides.0, api_group, provides.1)),
        json!({}),
    );
    object["metadata"]
        .as_object_mut()
        .context("metadata")
        .ok()
        .map(|m| m.remove("namespace"));
    object["spec"]["version"] = json!(version);
    let mut properties = vec![
        json!({"type": "olm.package", "value": {"packageName": package, "version": version}}),
        json!({"type": "olm.gvk", "value": {"group": api_group, "version": "v1", "kind": provides.1}}),
    ];
    if let Some((plural, kind)) = requires {
        object["spec"]["customresourcedefinitions"]["required"] = json!([{
            "name": format!("{plural}.{api_group}"), "version": "v1", "kind": kind}]);
        properties.push(json!({"type": "olm.gvk.required", "value": {"group": api_group, "version": "v1", "kind": kind}}));
    }
    for o in [object, owned] {
        let data = base64::engine::general_purpose::STANDARD.encode(o.to_string());
        properties.push(json!({"type": "olm.bundle.object", "value": {"data": data}}));
    }
    json!({"schema": "olm.bundle", "package": package, "name": name, "image": "", "properties": properties})
}

/// The test catalog: `foo` (requiring Widgets) and `bar` (providing them), both in `stable`;
/// with `upgraded`, also `foo.v2.0.0` replacing `foo.v1.0.0`.
fn foo_bar_catalog(api_group: &str, upgraded: bool) -> String {
    let mut foo_entries = vec![json!({"name": "foo.v1.0.0"})];
    let mut docs = vec![
        json!({"schema": "olm.package", "name": "foo", "defaultChannel": "stable"}),
        json!({"schema": "olm.package", "name": "bar", "defaultChannel": "stable"}),
        json!({"schema": "olm.channel", "package": "bar", "name": "stable", "entries": [{"name": "bar.v1.0.0"}]}),
        inline_bundle("bar", "1.0.0", api_group, ("widgets", "Widget"), None),
        inline_bundle(
            "foo",
            "1.0.0",
            api_group,
            ("gadgets", "Gadget"),
            Some(("widgets", "Widget")),
        ),
    ];
    if upgraded {
        foo_entries.push(json!({"name": "foo.v2.0.0", "replaces": "foo.v1.0.0"}));
        docs.push(inline_bundle(
            "foo",
            "2.0.0",
            api_group,
            ("gadgets", "Gadget"),
            Some(("widgets", "Widget")),
        ));
    }
    docs.push(json!({"schema": "olm.channel", "package": "foo", "name": "stable", "entries": foo_entries}));
    docs.iter().map(|d| format!("{d}\n")).collect()
}

/// The `operators.coreos.com/v1alpha1` resource `plural` in `ns`.
fn v1alpha1_api(env: &Env, ns: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        env.client.clone(),
        ns,
        &resource("operators.coreos.com", "v1alpha1", kind, plural),
    )
}

fn subscriptions_api(env: &Env, ns: &str) -> Api<DynamicObject> {
    v1alpha1_api(env, ns, "Subscription", "subscriptions")
}

/// One step of a hand-made plan: `manifest` as the object of `kind` named `name` (of `group` and
/// `version`), for the CSV `resolving`.
fn plan_step(
    resolving: &str,
    name: &str,
    group: &str,
    version: &str,
    kind: &str,
    manifest: &Value,
) -> Value {
    json!({"resolving": resolving, "status": "Unknown",
        "resource": {"name": name, "group": group, "version": version, "kind": kind,
            "sourceName": "", "sourceNamespace": "", "manifest": manifest.to_string()}})
}

/// A hand-made InstallPlan `ns/name`, approved, whose status (written as its maker writes it)
/// holds `steps` to install.
async fn hand_made_plan(env: &Env, ns: &str, name: &str, steps: Vec<Value>) -> Result<()> {
    env.apply(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"approval": "Automatic", "approved": true, "clusterServiceVersionNames": []}}),
    )
    .await?;
    let status = json!({"status": {"phase": "Installing", "catalogSources": [], "plan": steps}});
    installplans_api(env, ns)
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

/// Waits until the InstallPlan `ns/name` is `Complete`.
async fn wait_plan_complete(env: &Env, ns: &str, name: &str) -> Result<()> {
    let plans = installplans_api(env, ns);
    wait(
        "the plan Complete",
        || async { Ok(plans.get(name).await?.data["status"]["phase"].clone()) },
        |phase| phase == "Complete",
    )
    .await?;
    Ok(())
}

fn installplans_api(env: &Env, ns: &str) -> Api<DynamicObject> {
    v1alpha1_api(env, ns, "InstallPlan", "installplans")
}

/// Waits until the Subscription `ns/name` satisfies `ok`.
async fn wait_subscription(
    env: &Env,
    ns: &str,
    name: &str,
    what: &str,
    ok: impl Fn(&Value) -> bool,
) -> Result<Value> {
    let api = subscriptions_api(env, ns);
    wait(
        what,
        || async {
            Ok(api
                .get_opt(name)
                .await?
                .map(|o| serde_json::to_value(o).unwrap_or(Value::Null))
                .unwrap_or(Value::Null))
        },
        |v| ok(v),
    )
    .await
}

/// Subscribing to `foo` from a CatalogSource served by `olm catalog serve` installs `foo` and
/// its dependency `bar` (found by the API it requires) through one InstallPlan; when the catalog
/// gains `foo.v2.0.0`, the Subscription upgrades along `replaces`.
async fn subscribe_and_upgrade(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let api_group = format!("{id}.example.com");
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let served = serve_fbc(&foo_bar_catalog(&api_group, false)).await?;
    env.apply(address_source(ns, "local", &served.address))
        .await?;
    env.apply(subscription(ns, "foo", "foo", "local", "Automatic"))
        .await?;
    env.wait_phase(ns, "foo.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.wait_phase(ns, "bar.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let sub = wait_subscription(env, ns, "foo", "foo AtLatestKnown", |s| {
        s["status"]["state"] == "AtLatestKnown" && s["status"]["installedCSV"] == "foo.v1.0.0"
    })
    .await?;
    check_eq!(sub["status"]["currentCSV"], "foo.v1.0.0");
    check_eq!(sub["status"]["catalogHealth"][0]["healthy"], true);
    let plans = installplans_api(env, ns)
        .list(&ListParams::default())
        .await?
        .items;
    check_eq!(plans.len(), 1);
    let plan = serde_json::to_value(&plans[0])?;
    check_eq!(plan["status"]["phase"], "Complete");
    check_eq!(plan["spec"]["approval"], "Automatic");
    let mut names: Vec<&str> = plan["spec"]["clusterServiceVersionNames"]
        .as_array()
        .context("csv names")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    names.sort_unstable();
    check_eq!(names, vec!["bar.v1.0.0", "foo.v1.0.0"]);
    let kinds: Vec<&str> = plan["status"]["plan"]
        .as_array()
        .context("steps")?
        .iter()
        .filter_map(|s| s["resource"]["kind"].as_str())
        .collect();
    check_eq!(kinds.first().copied(), Some("ClusterServiceVersion"));
    check_eq!(kinds.contains(&"CustomResourceDefinition"), true);
    check_eq!(kinds.contains(&"Subscription"), true);
    let dependency = format!("bar-stable-local-{ns}");
    let plan_name = plans[0].name_any();
    let generated = subscriptions_api(env, ns).get(&dependency).await?;
    check_eq!(
        generated
            .annotations()
            .get("olm.generated-by")
            .map(String::as_str),
        Some(plan_name.as_str())
    );
    wait_subscription(env, ns, &dependency, "bar AtLatestKnown", |s| {
        s["status"]["installedCSV"] == "bar.v1.0.0"
    })
    .await?;

    // The catalog gains foo.v2.0.0 (a new registry, as a new catalog image would be).
    let upgraded = serve_fbc(&foo_bar_catalog(&api_group, true)).await?;
    env.apply(address_source(ns, "local", &upgraded.address))
        .await?;
    served.stop().await?;
    env.wait_phase(ns, "foo.v2.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.wait_gone(ns, "foo.v1.0.0").await?;
    wait_subscription(env, ns, "foo", "foo upgraded", |s| {
        s["status"]["state"] == "AtLatestKnown" && s["status"]["installedCSV"] == "foo.v2.0.0"
    })
    .await?;
    upgraded.stop().await?;
    Ok(())
}

/// An OperatorGroup with `serviceAccountName`: its plans wait (InstallCheckFailed) until the
/// account exists, then run as it — a step it may not do is retried with the API server's
/// Forbidden, and completes once the account is granted it; CRDs are created as OLM.
async fn subscribe_scoped(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let api_group = format!("{id}.example.com");
    env.namespace_with_group(
        ns,
        json!({"targetNamespaces": [ns], "serviceAccountName": "installer"}),
    )
    .await?;
    let served = serve_fbc(&foo_bar_catalog(&api_group, false)).await?;
    env.apply(address_source(ns, "local", &served.address))
        .await?;
    env.apply(subscription(ns, "bar", "bar", "local", "Automatic"))
        .await?;
    let plans = installplans_api(env, ns);
    let installed = |p: &Value| -> Value {
        p["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Installed"))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let first = || async {
        let list = plans.list(&ListParams::default()).await?.items;
        Ok(list
            .first()
            .map(serde_json::to_value)
            .transpose()?
            .unwrap_or(Value::Null))
    };
    let waiting = wait("InstallCheckFailed", first, |p| {
        installed(p)["reason"] == "InstallCheckFailed"
    })
    .await?;
    check_eq!(
        installed(&waiting)["message"],
        format!("please make sure the service account exists. sa=installer operatorgroup={ns}/og")
    );
    check_eq!(installed(&waiting)["status"], "False");
    // The account exists but may do nothing yet: the plan's first step, the CSV, is refused.
    env.apply(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "installer", "namespace": ns}})).await?;
    let refused = wait("a Forbidden CSV step", first, |p| {
        p["status"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("forbidden"))
    })
    .await?;
    check_eq!(
        refused["status"]["attenuatedServiceAccountRef"]["name"],
        "installer"
    );
    check_eq!(refused["status"]["phase"], "Installing");
    let message = refused["status"]["message"].as_str().unwrap_or_default();
    let want = "retrying execution due to error: error creating ClusterServiceVersion bar.v1.0.0";
    if !message.starts_with(want)
        || !message.contains(&format!("system:serviceaccount:{ns}:installer"))
    {
        bail!("message {message:?} does not start with {want:?} naming the account");
    }
    // Granted its namespace, the account installs the operator; the CRD is created with OLM's
    // own credentials although the account holds no CRD rights (upstream's catalog-operator
    // does the same: `installplan_e2e_test.go`, "limits installed resources if the scoped
    // serviceaccount has no permissions").
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "installer", "namespace": ns},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]})).await?;
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "installer", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "installer"},
        "subjects": [{"kind": "ServiceAccount", "name": "installer", "namespace": ns}]})).await?;
    let done = wait("the plan Complete", first, |p| {
        p["status"]["phase"] == "Complete"
    })
    .await?;
    check_eq!(installed(&done)["status"], "True");
    env.wait_phase(ns, "bar.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    // The CRD records the CSV it was installed alongside, under upstream's key (FNV-1a of
    // `namespace/name`, as `internal/alongside` spells it).
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let crd = crds.get(&format!("widgets.{api_group}")).await?;
    check_eq!(
        crd.metadata
            .annotations
            .unwrap_or_default()
            .get(&olm_v0::catalog_operator::alongside::key(ns, "bar.v1.0.0"))
            .cloned(),
        Some(format!("{ns}/bar.v1.0.0"))
    );
    served.stop().await?;
    Ok(())
}

/// A CRD upgrade whose schema the existing custom resources no longer satisfy is refused with
/// upstream's message (the CRD is left as it was); when the new CRD converts with a webhook the
/// upgrade goes on and a `CRDValidation` Warning is recorded on the plan. One namespace and API
/// group each.
async fn crd_upgrade_validation(env: &Env, id: &str) -> Result<()> {
    let refused = crd_upgrade(env, id, false).await?;
    let message = refused["status"]["message"].as_str().unwrap_or_default();
    check_eq!(
        message,
        format!(
            "retrying execution due to error: error validating existing CRs against new CRD's schema for \"gauges.{id}.example.com\": error validating {id}.example.com/v1, Kind=Gauge \"{id}/low\": updated validation is too restrictive: [].spec.level: Invalid value: 2: spec.level in body should be greater than or equal to 3"
        )
    );
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let kept = serde_json::to_value(crds.get(&format!("gauges.{id}.example.com")).await?)?;
    check_eq!(
        kept["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["level"]["minimum"]
            .as_f64(),
        Some(0.0)
    );
    let webhook = format!("{id}-webhook");
    crd_upgrade(env, &webhook, true).await?;
    let warned = env.wait_event(&webhook, "CRDValidation").await?;
    let note = warned.note.unwrap_or_default();
    if !note.starts_with("Validation of existing CRs against the new CRD's schema failed, but a webhook conversion strategy was specified in the new CRD.") {
        bail!("event note {note:?}");
    }
    let regarding = warned.regarding.and_then(|r| r.kind);
    check_eq!(regarding.as_deref(), Some("InstallPlan"));
    let updated = serde_json::to_value(crds.get(&format!("gauges.{webhook}.example.com")).await?)?;
    check_eq!(updated["spec"]["conversion"]["strategy"], "Webhook");
    // The refused plan stops retrying a minute after it started: Failed, as upstream's. Waited
    // for here, so that last write is part of the scenario rather than of its settling.
    let plans = installplans_api(env, id);
    let failed = wait(
        "the refused InstallPlan to fail",
        || async {
            let list = plans.list(&ListParams::default()).await?.items;
            Ok(list
                .into_iter()
                .find(|p| p.data["spec"]["clusterServiceVersionNames"] == json!(["gauge.v2.0.0"]))
                .map_or(Value::Null, |p| p.data))
        },
        |p| p["status"]["phase"] == "Failed",
    )
    .await?;
    check_eq!(
        failed["status"]["conditions"][0]["reason"],
        "InstallComponentFailed"
    );
    Ok(())
}

/// In namespace `ns`: package `gauge` v1 (Gauges with any `spec.level`) installed and a Gauge
/// of level 2 made; then the catalog offers v2, whose CRD wants levels of at least 3 (and
/// converts with a webhook when `webhook`). Returns v2's plan once it retries because of that
/// Gauge, or (with `webhook`) once it is Complete.
async fn crd_upgrade(env: &Env, ns: &str, webhook: bool) -> Result<Value> {
    let api_group = format!("{ns}.example.com");
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let gauge_crd = |min: i64, webhook: bool| {
        let mut c = crd("gauges", &api_group, "Gauge");
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = json!({"type": "object",
            "properties": {"spec": {"type": "object", "properties": {"level": {"type": "integer", "minimum": min}}}}});
        if webhook {
            c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
                "conversionReviewVersions": ["v1"],
                "clientConfig": {"service": {"name": "gauge-webhook", "namespace": ns, "path": "/convert"}}}});
        }
        c
    };
    let bundle = |version: &str, min: i64, webhook: bool| {
        inline_bundle_with(
            "gauge",
            version,
            &api_group,
            ("gauges", "Gauge"),
            None,
            gauge_crd(min, webhook),
        )
    };
    let catalog = |upgraded: bool| -> String {
        let mut docs = vec![
            json!({"schema": "olm.package", "name": "gauge", "defaultChannel": "stable"}),
            bundle("1.0.0", 0, false),
        ];
        let mut entries = vec![json!({"name": "gauge.v1.0.0"})];
        if upgraded {
            docs.push(bundle("2.0.0", 3, webhook));
            entries.push(json!({"name": "gauge.v2.0.0", "replaces": "gauge.v1.0.0"}));
        }
        docs.push(json!({"schema": "olm.channel", "package": "gauge", "name": "stable", "entries": entries}));
        docs.iter().map(|d| format!("{d}\n")).collect()
    };
    let served = serve_fbc(&catalog(false)).await?;
    env.apply(address_source(ns, "local", &served.address))
        .await?;
    env.apply(subscription(ns, "gauge", "gauge", "local", "Automatic"))
        .await?;
    env.wait_phase(ns, "gauge.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.apply(
        json!({"apiVersion": format!("{api_group}/v1"), "kind": "Gauge",
        "metadata": {"name": "low", "namespace": ns}, "spec": {"level": 2}}),
    )
    .await?;
    let upgraded = serve_fbc(&catalog(true)).await?;
    env.apply(address_source(ns, "local", &upgraded.address))
        .await?;
    served.stop().await?;
    let plans = installplans_api(env, ns);
    let upgrade = || async {
        let list = plans.list(&ListParams::default()).await?.items;
        Ok(list
            .into_iter()
            .find(|p| p.data["spec"]["clusterServiceVersionNames"] == json!(["gauge.v2.0.0"]))
            .map_or(Value::Null, |p| p.data))
    };
    let plan = wait("gauge v2's plan", upgrade, |p| {
        if webhook {
            p["status"]["phase"] == "Complete"
        } else {
            p["status"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("too restrictive"))
        }
    })
    .await?;
    upgraded.stop().await?;
    Ok(plan)
}

/// A Manual Subscription's plan waits for approval, installs nothing until approved, then
/// installs.
async fn subscribe_manual(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let api_group = format!("{id}.example.com");
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let served = serve_fbc(&foo_bar_catalog(&api_group, false)).await?;
    env.apply(address_source(ns, "local", &served.address))
        .await?;
    env.apply(subscription(ns, "foo", "foo", "local", "Manual"))
        .await?;
    let sub = wait_subscription(env, ns, "foo", "foo UpgradePending", |s| {
        s["status"]["state"] == "UpgradePending"
            && s["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "InstallPlanPending" && c["reason"] == "RequiresApproval")
            })
    })
    .await?;
    let plan_name = sub["status"]["installPlanRef"]["name"]
        .as_str()
        .context("plan ref")?
        .to_owned();
    let plans = installplans_api(env, ns);
    let plan = plans.get(&plan_name).await?;
    check_eq!(plan.data["spec"]["approved"], false);
    check_eq!(plan.data["status"]["phase"], "RequiresApproval");
    check_eq!(env.csvs(ns).get_opt("foo.v1.0.0").await?.is_none(), true);
    plans
        .patch(
            &plan_name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"approved": true}})),
        )
        .await?;
    env.wait_phase(ns, "foo.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    wait_subscription(env, ns, "foo", "foo installed", |s| {
        s["status"]["installedCSV"] == "foo.v1.0.0"
    })
    .await?;

    // spec.config reaches the operator's Deployment (seed 001's overrides).
    let subs = subscriptions_api(env, ns);
    // Nothing here keeps the pod from being scheduled, so the rollout goes on.
    let node_affinity = json!({"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1,
        "preference": {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]}}]});
    let config = json!({"spec": {"config": {
        "env": [{"name": "HTTP_PROXY", "value": "http://proxy:3128"}],
        "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
        "resources": {"limits": {"memory": "256Mi"}},
        "annotations": {"example.com/team": "a"},
        "affinity": {"nodeAffinity": node_affinity},
    }}});
    subs.patch("foo", &PatchParams::default(), &Patch::Merge(&config))
        .await?;
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), ns);
    let pod =
        |d: &Deployment| serde_json::to_value(d).unwrap_or_default()["spec"]["template"].clone();
    let d = wait(
        "the Deployment carries the config",
        || async { Ok(deployments.get("foo").await?) },
        |d| pod(d)["metadata"]["annotations"]["example.com/team"] == "a",
    )
    .await?;
    let t = pod(&d);
    check_eq!(
        t["spec"]["containers"][0]["env"][0],
        json!({"name": "HTTP_PROXY", "value": "http://proxy:3128"})
    );
    check_eq!(t["spec"]["tolerations"][0]["key"], "dedicated");
    check_eq!(
        t["spec"]["containers"][0]["resources"]["limits"]["memory"],
        "256Mi"
    );
    check_eq!(t["metadata"]["annotations"]["example.com/team"], "a");
    check_eq!(t["spec"]["affinity"]["nodeAffinity"], node_affinity);
    // `affinity: {}` removes every affinity (seed 001).
    subs.patch(
        "foo",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"config": {"affinity": {"nodeAffinity": null}}}})),
    )
    .await?;
    wait(
        "the Deployment's affinity removed",
        || async { Ok(deployments.get("foo").await?) },
        |d| pod(d)["spec"]["affinity"].is_null(),
    )
    .await?;
    subs.patch(
        "foo",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"config": {"nodeSelector": {"disk": "ssd"}}}})),
    )
    .await?;
    wait(
        "the Deployment's node selector",
        || async { Ok(deployments.get("foo").await?) },
        |d| pod(d)["spec"]["nodeSelector"]["disk"] == "ssd",
    )
    .await?;
    served.stop().await?;
    Ok(())
}

/// A Subscription whose bundle requires an API nobody provides gets `ResolutionFailed` with
/// the constraints that conflict; one naming an unreachable catalog gets
/// `CatalogSourcesUnhealthy`; neither installs anything.
async fn subscribe_unsatisfiable(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let api_group = format!("{id}.example.com");
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let fbc = [
        json!({"schema": "olm.package", "name": "foo", "defaultChannel": "stable"}),
        json!({"schema": "olm.channel", "package": "foo", "name": "stable", "entries": [{"name": "foo.v1.0.0"}]}),
        inline_bundle("foo", "1.0.0", &api_group, ("gadgets", "Gadget"), Some(("widgets", "Widget"))),
    ]
    .iter()
    .map(|d| format!("{d}\n"))
    .collect::<String>();
    let served = serve_fbc(&fbc).await?;
    env.apply(address_source(ns, "local", &served.address))
        .await?;
    env.apply(subscription(ns, "foo", "foo", "local", "Automatic"))
        .await?;
    // Until the registry is read the condition says ErrorPreventedResolution; then the solver's
    // answer.
    let sub = wait_subscription(env, ns, "foo", "ResolutionFailed", |s| {
        s["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter().any(|c| {
                c["type"] == "ResolutionFailed" && c["reason"] == "ConstraintsNotSatisfiable"
            })
        })
    })
    .await?;
    let failed = sub["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "ResolutionFailed"))
        .cloned()
        .unwrap_or_default();
    check_eq!(failed["reason"], "ConstraintsNotSatisfiable");
    check_eq!(
        failed["message"],
        format!(
            "constraints not satisfiable: bundle foo.v1.0.0 requires an operator providing an API with group: {api_group}, version: v1, kind: Widget, subscription foo exists, subscription foo requires local/{ns}/stable/foo.v1.0.0"
        )
    );
    check_eq!(
        installplans_api(env, ns)
            .list(&ListParams::default())
            .await?
            .items
            .len(),
        0
    );

    let other = format!("{id}-b");
    env.namespace(&other, json!({})).await?;
    env.apply(group(&other, "og", json!({"targetNamespaces": [&other]})))
        .await?;
    env.apply(address_source(&other, "gone", "127.0.0.1:1"))
        .await?;
    env.apply(subscription(&other, "foo", "foo", "gone", "Automatic"))
        .await?;
    wait_subscription(env, &other, "foo", "CatalogSourcesUnhealthy", |s| {
        s["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter().any(|c| {
                c["type"] == "CatalogSourcesUnhealthy"
                    && c["status"] == "True"
                    && c["reason"] == "UnhealthyCatalogSourceFound"
                    && c["message"] == format!("targeted catalogsource {other}/gone unhealthy")
            })
        })
    })
    .await?;

    // A "registry" that answers every connection with garbage: unhealthy, nothing installed,
    // and olm keeps going.
    let garbage = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let garbage_address = garbage.local_addr()?.to_string();
    let garbage_task = tokio::spawn(async move {
        use tokio::io::AsyncWriteExt as _;
        while let Ok((mut socket, _)) = garbage.accept().await {
            let _ = socket
                .write_all(b"HTTP/1.1 418 I'm a teapot\r\n\r\n\x00\xff garbage")
                .await;
        }
    });
    let third = format!("{id}-c");
    env.namespace(&third, json!({})).await?;
    env.apply(group(&third, "og", json!({"targetNamespaces": [&third]})))
        .await?;
    env.apply(address_source(&third, "junk", &garbage_address))
        .await?;
    env.apply(subscription(&third, "foo", "foo", "junk", "Automatic"))
        .await?;
    wait_subscription(
        env,
        &third,
        "foo",
        "CatalogSourcesUnhealthy for garbage",
        |s| {
            s["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter().any(|c| {
                    c["type"] == "CatalogSourcesUnhealthy"
                        && c["message"] == format!("targeted catalogsource {third}/junk unhealthy")
                })
            })
        },
    )
    .await?;
    check_eq!(
        installplans_api(env, &third)
            .list(&ListParams::default())
            .await?
            .items
            .len(),
        0
    );
    garbage_task.abort();
    served.stop().await?;
    Ok(())
}

/// A catalog of bundle images (as real catalogs are): `olm` pulls each bundle from a real OCI
/// registry itself (upstream runs an unpack Job), with the credentials of the CatalogSource's
/// `spec.secrets`, installs the Subscription's `startingCSV`, then upgrades along `replaces` to
/// the channel head on its own.
async fn subscribe_images(env: &Env, id: &str) -> Result<()> {
    use olm_bundle::properties::{ObjectsMode, to_olm_bundle};
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    // The registry wants a password, which only the CatalogSource's `spec.secrets` give.
    let dir = tempfile::tempdir()?;
    let htpasswd = dir.path().join("htpasswd");
    std::fs::write(&htpasswd, format!("olm:{}\n", bcrypt::hash("s3cret", 4)?))?;
    let registry =
        olm_testenv::registry::Registry::start_with(&olm_testenv::registry::RegistryOptions {
            htpasswd: Some(htpasswd),
            ..olm_testenv::registry::RegistryOptions::default()
        })
        .map_err(|e| anyhow!("a local registry: {e}"))?;
    let config = {
        use base64::Engine as _;
        format!(
            r#"{{"auths":{{"{}":{{"auth":"{}"}}}}}}"#,
            registry.addr(),
            base64::engine::general_purpose::STANDARD.encode("olm:s3cret")
        )
    };
    let pusher = olm_image::Client::new(olm_image::ClientOptions {
        auth: olm_image::AuthConfig::from_dockerconfigjson(config.as_bytes(), "test")?,
        ..olm_image::ClientOptions::default()
    });
    env.apply(
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pull", "namespace": ns},
        "type": "kubernetes.io/dockerconfigjson", "stringData": {".dockerconfigjson": config}}),
    )
    .await?;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/bundles/cat-facts-operator");
    let mut docs = vec![
        json!({"schema": "olm.package", "name": "cat-facts-operator", "defaultChannel": "stable"}),
    ];
    let mut entries = Vec::new();
    let mut previous: Option<String> = None;
    for version in ["1.0.0", "1.1.0"] {
        let dir = root.join(version);
        let image = olm_image::bundle_image(&dir)?;
        let reference: olm_image::ImageRef =
            format!("{}/cat-facts:v{version}", registry.addr()).parse()?;
        let digest = pusher.push(&image, &reference).await?;
        let pinned = format!("{}/cat-facts@{digest}", registry.addr());
        let bundle = olm_bundle::Bundle::from_dir(&dir)?;
        docs.push(to_olm_bundle(&bundle, &pinned, ObjectsMode::CsvMetadata)?);
        let name = format!("cat-facts-operator.v{version}");
        let mut entry = json!({"name": name});
        if let Some(p) = &previous {
            entry["replaces"] = json!(p);
        }
        entries.push(entry);
        previous = Some(name);
    }
    docs.push(json!({"schema": "olm.channel", "package": "cat-facts-operator", "name": "stable", "entries": entries}));
    let fbc: String = docs.iter().map(|d| format!("{d}\n")).collect();
    let served = serve_fbc(&fbc).await?;
    let mut source = address_source(ns, "images", &served.address);
    env.apply(source.clone()).await?;
    let mut sub = subscription(ns, "cats", "cat-facts-operator", "images", "Automatic");
    sub["spec"]["startingCSV"] = json!("cat-facts-operator.v1.0.0");
    env.apply(sub).await?;
    // Without the secret the pull is refused: the Subscription says so, once — a failure that
    // persists must not rewrite the status (each write would wake another pass). Its one other
    // write is its Operator's label (adoption), looked for here too.
    let operator_label = format!("operators.coreos.com/cat-facts-operator.{ns}");
    let refused = wait_subscription(env, ns, "cats", "BundleUnpackFailed", |s| {
        s["metadata"]["labels"][&operator_label] == ""
            && s["status"]["conditions"].as_array().is_some_and(|c| {
                c.iter().any(|c| {
                    c["type"] == "BundleUnpackFailed"
                        && c["message"]
                            .as_str()
                            .is_some_and(|m| m.contains("Not authorized"))
                })
            })
    })
    .await?;
    // Watched for three seconds: every write to the Subscription in that time is named.
    let subscription = settle::namespaced(
        settle::resource(
            "operators.coreos.com",
            "v1alpha1",
            "Subscription",
            "subscriptions",
        ),
        {
            let ns = ns.to_owned();
            move |n| n == ns
        },
    );
    let writes =
        settle::writes_during(&env.client, &[subscription], Duration::from_secs(3)).await?;
    check_eq!(
        writes,
        settle::Writes::new(),
        "a persistent unpack failure keeps rewriting the Subscription"
    );
    // And none between the refusal and the watch.
    let later = subscriptions_api(env, ns).get("cats").await?;
    check_eq!(
        later.resource_version(),
        refused["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_owned),
        "a persistent unpack failure keeps rewriting the Subscription"
    );
    source["spec"]["secrets"] = json!(["pull"]);
    env.apply(source).await?;
    env.wait_phase(
        ns,
        "cat-facts-operator.v1.1.0",
        "Succeeded",
        "InstallSucceeded",
    )
    .await?;
    // Two plans: the starting CSV's, then the upgrade's.
    let plans = installplans_api(env, ns)
        .list(&ListParams::default())
        .await?
        .items;
    let names: Vec<Value> = plans
        .iter()
        .map(|p| p.data["spec"]["clusterServiceVersionNames"].clone())
        .collect();
    check_eq!(names.contains(&json!(["cat-facts-operator.v1.1.0"])), true);
    let first = plans
        .iter()
        .find(|p| {
            p.data["spec"]["clusterServiceVersionNames"] == json!(["cat-facts-operator.v1.0.0"])
        })
        .context("the starting CSV's plan")?;
    let kinds: Vec<&str> = first.data["status"]["plan"]
        .as_array()
        .context("steps")?
        .iter()
        .filter_map(|s| s["resource"]["kind"].as_str())
        .collect();
    check_eq!(kinds.contains(&"CustomResourceDefinition"), true);
    check_eq!(kinds.contains(&"ServiceAccount"), true);
    env.wait_gone(ns, "cat-facts-operator.v1.0.0").await?;
    wait_subscription(env, ns, "cats", "cats at the head", |s| {
        s["status"]["installedCSV"] == "cat-facts-operator.v1.1.0"
            && s["status"]["state"] == "AtLatestKnown"
    })
    .await?;
    served.stop().await?;
    Ok(())
}

/// UnsafeFailForward (seed 001): foo v1 is installed; the catalog offers v2, whose InstallPlan
/// fails (its bundle holds a Pod, a kind plans may not create, so nothing of v2 is created);
/// the Subscription is `UpgradeFailed`, not stuck; when the catalog gains v3 (replacing v1,
/// skipping v2), a new plan installs it.
async fn subscribe_fail_forward(env: &Env, id: &str) -> Result<()> {
    use base64::Engine as _;
    let ns = id;
    let api_group = format!("{id}.example.com");
    env.namespace(ns, json!({})).await?;
    let mut og = group(ns, "og", json!({"targetNamespaces": [ns]}));
    og["spec"]["upgradeStrategy"] = json!("TechPreviewUnsafeFailForward");
    env.apply(og).await?;
    let bundle =
        |version: &str| inline_bundle("foo", version, &api_group, ("gadgets", "Gadget"), None);
    let catalog = |entries: Value, bundles: Vec<Value>| {
        let mut docs =
            vec![json!({"schema": "olm.package", "name": "foo", "defaultChannel": "stable"})];
        docs.extend(bundles);
        docs.push(json!({"schema": "olm.channel", "package": "foo", "name": "stable", "entries": entries}));
        docs.iter().map(|d| format!("{d}\n")).collect::<String>()
    };
    let served = serve_fbc(&catalog(
        json!([{"name": "foo.v1.0.0"}]),
        vec![bundle("1.0.0")],
    ))
    .await?;
    env.apply(address_source(ns, "local", &served.address))
        .await?;
    env.apply(subscription(ns, "foo", "foo", "local", "Automatic"))
        .await?;
    env.wait_phase(ns, "foo.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;

    let mut broken = bundle("2.0.0");
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray"},
        "spec": {"containers": [{"name": "c", "image": "example.com/c:v1"}]}});
    let data = base64::engine::general_purpose::STANDARD.encode(pod.to_string());
    broken["properties"]
        .as_array_mut()
        .context("properties")?
        .push(json!({"type": "olm.bundle.object", "value": {"data": data}}));
    let second = serve_fbc(&catalog(
        json!([{"name": "foo.v1.0.0"}, {"name": "foo.v2.0.0", "replaces": "foo.v1.0.0"}]),
        vec![bundle("1.0.0"), broken.clone()],
    ))
    .await?;
    env.apply(address_source(ns, "local", &second.address))
        .await?;
    served.stop().await?;
    wait_subscription(env, ns, "foo", "UpgradeFailed", |s| {
        s["status"]["state"] == "UpgradeFailed" && s["status"]["currentCSV"] == "foo.v2.0.0"
    })
    .await?;
    check_eq!(env.csvs(ns).get_opt("foo.v2.0.0").await?.is_none(), true);
    let failed = installplans_api(env, ns)
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .find(|p| p.data["status"]["phase"] == "Failed")
        .context("the failed plan")?;
    check_eq!(
        failed.data["status"]["message"],
        "the InstallPlan contains invalid data"
    );

    let third = serve_fbc(&catalog(
        json!([{"name": "foo.v1.0.0"}, {"name": "foo.v2.0.0", "replaces": "foo.v1.0.0"},
            {"name": "foo.v3.0.0", "replaces": "foo.v1.0.0", "skips": ["foo.v2.0.0"]}]),
        vec![bundle("1.0.0"), broken, bundle("3.0.0")],
    ))
    .await?;
    env.apply(address_source(ns, "local", &third.address))
        .await?;
    second.stop().await?;
    env.wait_phase(ns, "foo.v3.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    wait_subscription(env, ns, "foo", "foo at v3", |s| {
        s["status"]["installedCSV"] == "foo.v3.0.0" && s["status"]["state"] == "AtLatestKnown"
    })
    .await?;
    third.stop().await?;
    Ok(())
}

/// A CatalogSource whose image olm serves itself (no registry Pod: the test control plane has
/// no kubelet): the catalog image is pulled from a real registry, served in process, and polled
/// (`registryPoll`); pushing a new catalog to the same tag upgrades the Subscription.
async fn catalog_in_process(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let api_group = format!("{id}.example.com");
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let registry =
        olm_testenv::registry::Registry::start().map_err(|e| anyhow!("a local registry: {e}"))?;
    let pusher = olm_image::Client::new(olm_image::ClientOptions::default());
    let push = |fbc: String| {
        let pusher = pusher.clone();
        let reference = format!("{}/catalog:latest", registry.addr());
        async move {
            let dir = tempfile::tempdir()?;
            std::fs::create_dir_all(dir.path().join("configs"))?;
            std::fs::write(dir.path().join("configs/catalog.json"), fbc)?;
            let image = olm_image::catalog_image(&dir.path().join("configs"))?;
            let reference: olm_image::ImageRef = reference.parse()?;
            pusher.push(&image, &reference).await?;
            anyhow::Ok(())
        }
    };
    push(foo_bar_catalog(&api_group, false)).await?;
    env.apply(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "served", "namespace": ns,
            "annotations": {"olm.operatorframework.io/serve-in-process": "true"}},
        "spec": {"sourceType": "grpc", "image": format!("{}/catalog:latest", registry.addr()),
            "updateStrategy": {"registryPoll": {"interval": "2s"}}}}),
    )
    .await?;
    env.apply(subscription(ns, "foo", "foo", "served", "Automatic"))
        .await?;
    env.wait_phase(ns, "foo.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(env.client.clone(), ns);
    // No registry Pod.
    let registry_pods = ListParams::default().labels("olm.catalogSource=served");
    check_eq!(pods.list(&registry_pods).await?.items.len(), 0);
    push(foo_bar_catalog(&api_group, true)).await?;
    env.wait_phase(ns, "foo.v2.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    wait_subscription(env, ns, "foo", "foo upgraded", |s| {
        s["status"]["installedCSV"] == "foo.v2.0.0"
    })
    .await?;
    Ok(())
}

/// The data of a ConfigMap catalog: package `foo` in channel `stable`, heading at `head`, each
/// CSV owning Widgets of `api_group` (a version listed replacing the one before it).
fn config_map_catalog(api_group: &str, versions: &[&str]) -> Value {
    let mut csvs = Vec::new();
    let mut previous: Option<String> = None;
    for v in versions {
        let name = format!("foo.v{v}");
        let mut c = csv(
            "",
            &name,
            &["OwnNamespace", "AllNamespaces"],
            Some(("widgets", api_group, "Widget")),
            previous
                .as_ref()
                .map_or(json!({}), |p| json!({"replaces": p})),
        );
        c["spec"]["version"] = json!(v);
        if let Some(m) = c["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        csvs.push(c);
        previous = Some(name);
    }
    let head = previous.unwrap_or_default();
    let yaml = |v: Value| olm_goenc::yaml::to_yaml(&v);
    json!({
        "customResourceDefinitions": yaml(json!([crd("widgets", api_group, "Widget")])),
        "clusterServiceVersions": yaml(Value::Array(csvs)),
        "packages": yaml(json!([{"packageName": "foo", "defaultChannel": "stable",
            "channels": [{"name": "stable", "currentCSV": head}]}])),
    })
}

/// A ConfigMap CatalogSource, served by olm itself: it adopts the ConfigMap (owner reference,
/// `olm.managed: "false"`), records `status.configMapReference` and `status.registryService`,
/// goes READY, and a Subscription installs from it; a new ConfigMap version upgrades the
/// operator. A ConfigMap that does not load, an `internal` source naming a missing one, and an
/// address source's `registryService` are reported as upstream reports them.
async fn catalog_config_map(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let api_group = format!("{id}.example.com");
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let config_map = |name: &str, data: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns}, "data": data})
    };
    env.apply(config_map(
        "catalog",
        config_map_catalog(&api_group, &["1.0.0"]),
    ))
    .await?;
    env.apply(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "cm", "namespace": ns},
        "spec": {"sourceType": "configmap", "configMap": "catalog", "displayName": "From a ConfigMap"}}),
    )
    .await?;
    let sources = catalogsources_api(env, ns);
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(env.client.clone(), ns);
    let ready = wait(
        "a READY configmap source",
        || source_named(&sources, "cm"),
        |s| s.data["status"]["connectionState"]["lastObservedState"] == "READY",
    )
    .await?;
    let status = &ready.data["status"];
    check_eq!(status["registryService"]["serviceName"], "cm");
    check_eq!(status["registryService"]["serviceNamespace"], ns);
    check_eq!(status["registryService"]["port"], "50051");
    check_eq!(status["registryService"]["protocol"], "grpc");
    check_eq!(status["reason"], Value::Null);
    let cm = config_maps.get("catalog").await?;
    check_eq!(
        status["configMapReference"]["resourceVersion"].as_str(),
        cm.metadata.resource_version.as_deref()
    );
    check_eq!(status["configMapReference"]["name"], "catalog");
    let managed = cm
        .metadata
        .labels
        .clone()
        .unwrap_or_default()
        .get("olm.managed")
        .cloned();
    check_eq!(managed.as_deref(), Some("false"));
    let owners = cm.metadata.owner_references.unwrap_or_default();
    check_eq!(
        owners
            .iter()
            .any(|o| o.kind == "CatalogSource" && o.name == "cm"),
        true
    );
    env.apply(subscription(ns, "foo", "foo", "cm", "Automatic"))
        .await?;
    env.wait_phase(ns, "foo.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    // A new version of the ConfigMap is served in place of the old.
    env.apply(config_map(
        "catalog",
        config_map_catalog(&api_group, &["1.0.0", "2.0.0"]),
    ))
    .await?;
    env.wait_phase(ns, "foo.v2.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    // Upstream's e2e (`updateInternalCatalog` in test/e2e/subscription_e2e_test.go) waits, after
    // editing the ConfigMap, for the new resourceVersion recorded and a READY connection whose
    // lastConnect is strictly after configMapReference.lastUpdateTime (whole seconds).
    let changed = config_maps
        .get("catalog")
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    let time = |v: &Value| v.as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let reconnected = wait(
        "lastConnect after the change's lastUpdateTime",
        || source_named(&sources, "cm"),
        |s| {
            let status = &s.data["status"];
            let reference = &status["configMapReference"];
            let connection = &status["connectionState"];
            reference["resourceVersion"] == changed.as_str()
                && connection["lastObservedState"] == "READY"
                && connection["address"] != ready.data["status"]["connectionState"]["address"]
        },
    )
    .await?;
    let status = &reconnected.data["status"];
    let updated = time(&status["configMapReference"]["lastUpdateTime"]);
    let connected = time(&status["connectionState"]["lastConnect"]);
    check_eq!(updated.is_some() && connected > updated, true);

    // A ConfigMap that does not load, under the deprecated `internal` name.
    env.apply(config_map(
        "broken",
        json!({"customResourceDefinitions": "[]", "clusterServiceVersions": "- a: [b", "packages": "[]"}),
    ))
    .await?;
    env.apply(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "broken", "namespace": ns},
        "spec": {"sourceType": "internal", "configMap": "broken"}}),
    )
    .await?;
    let broken = wait(
        "RegistryServerError",
        || source_named(&sources, "broken"),
        |s| s.data["status"]["reason"] == "RegistryServerError",
    )
    .await?;
    let message = broken.data["status"]["message"]
        .as_str()
        .unwrap_or_default();
    check_eq!(
        message.starts_with(
            "error loading manifests from configmap: error loading CSV list: error converting YAML to JSON: yaml: line "
        ),
        true
    );
    check_eq!(broken.data["status"]["connectionState"], Value::Null);
    env.apply(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "missing", "namespace": ns},
        "spec": {"sourceType": "configmap", "configMap": "nope"}}),
    )
    .await?;
    source_reports(
        &sources,
        "missing",
        "ConfigMapError",
        "failed to get catalog config map nope: configmaps \"nope\" not found",
    )
    .await?;
    // Upstream's address reconciler: protocol and creation time only.
    env.apply(address_source(ns, "remote", "127.0.0.1:1"))
        .await?;
    let remote = wait(
        "an address source's registryService",
        || source_named(&sources, "remote"),
        |s| s.data["status"]["registryService"].is_object(),
    )
    .await?;
    check_eq!(remote.data["status"]["registryService"]["protocol"], "grpc");
    check_eq!(
        remote.data["status"]["registryService"]["createdAt"].is_string(),
        true
    );
    check_eq!(
        remote.data["status"]["registryService"]["serviceName"],
        Value::Null
    );
    Ok(())
}

/// v1 → v2 → v3 by `spec.replaces`: each older CSV is Replacing, then deleted once the newer
/// one succeeded; Upgradeable=False in an override holds v3 in Pending until it is lifted.
async fn replaces_chain(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    env.apply(csv(ns, "chain.v1.0.0", &["OwnNamespace"], None, json!({})))
        .await?;
    env.wait_phase(ns, "chain.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.apply(csv(
        ns,
        "chain.v2.0.0",
        &["OwnNamespace"],
        None,
        json!({"replaces": "chain.v1.0.0"}),
    ))
    .await?;
    env.wait_phase(ns, "chain.v2.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.wait_gone(ns, "chain.v1.0.0").await?;

    // The operator says it may not be upgraded: an administrator's override.
    let conditions: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        ns,
        &resource(
            "operators.coreos.com",
            "v2",
            "OperatorCondition",
            "operatorconditions",
        ),
    );
    wait(
        "v2's OperatorCondition",
        || async { Ok(conditions.get_opt("chain.v2.0.0").await?.is_some()) },
        |b| *b,
    )
    .await?;
    // What the operator reports in spec.conditions is mirrored into status with the generation.
    let report = json!({"spec": {"conditions": [{"type": "Upgradeable", "status": "True", "reason": "Ready", "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    conditions
        .patch(
            "chain.v2.0.0",
            &PatchParams::default(),
            &Patch::Merge(&report),
        )
        .await?;
    wait(
        "the condition mirrored into status",
        || async { Ok(serde_json::to_value(conditions.get("chain.v2.0.0").await?)?) },
        |c| {
            c["status"]["conditions"][0]["type"] == "Upgradeable"
                && c["status"]["conditions"][0]["observedGeneration"] == c["metadata"]["generation"]
        },
    )
    .await?;
    let hold = json!({"spec": {"overrides": [{"type": "Upgradeable", "status": "False", "reason": "Hold", "message": "migrating data"}]}});
    conditions
        .patch(
            "chain.v2.0.0",
            &PatchParams::default(),
            &Patch::Merge(&hold),
        )
        .await?;
    env.apply(csv(
        ns,
        "chain.v3.0.0",
        &["OwnNamespace"],
        None,
        json!({"replaces": "chain.v2.0.0"}),
    ))
    .await?;
    let o = env
        .wait_phase(
            ns,
            "chain.v3.0.0",
            "Pending",
            "OperatorConditionNotUpgradeable",
        )
        .await?;
    check_eq!(
        o["status"]["message"],
        "operator is not upgradeable: The operator is not upgradeable: migrating data"
    );
    let release = json!({"spec": {"overrides": [{"type": "Upgradeable", "status": "True", "reason": "Done", "message": "go"}]}});
    conditions
        .patch(
            "chain.v2.0.0",
            &PatchParams::default(),
            &Patch::Merge(&release),
        )
        .await?;
    env.wait_phase(ns, "chain.v3.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.wait_gone(ns, "chain.v2.0.0").await?;
    Ok(())
}

/// An AllNamespaces operator is copied into every other namespace, a new namespace included,
/// but never over a CSV of the same name that someone installed in one of them;
/// `disableCopiedCSVs` removes the copies with a Warning event, turning it off restores them.
async fn copies(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    // Another team's operator of the same name, installed in its own namespace first.
    let mine = format!("{id}-mine");
    env.namespace(&mine, json!({})).await?;
    env.apply(group(&mine, "own", json!({"targetNamespaces": [mine]})))
        .await?;
    env.apply(csv(
        &mine,
        "everywhere.v1.0.0",
        &["OwnNamespace"],
        None,
        json!({}),
    ))
    .await?;
    env.wait_phase(&mine, "everywhere.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.namespace(ns, json!({})).await?;
    env.apply(group(ns, "global", json!({}))).await?;
    env.apply(csv(
        ns,
        "everywhere.v1.0.0",
        &["AllNamespaces", "OwnNamespace"],
        None,
        json!({}),
    ))
    .await?;
    env.wait_phase(ns, "everywhere.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let later = format!("{id}-later");
    env.namespace(&later, json!({})).await?;
    env.wait_csv(
        &later,
        "everywhere.v1.0.0",
        "a copy in a new namespace",
        |c| c["status"]["reason"] == "Copied",
    )
    .await?;
    env.wait_csv("default", "everywhere.v1.0.0", "a copy in default", |c| {
        c["status"]["reason"] == "Copied"
    })
    .await?;
    let theirs = Api::<DynamicObject>::namespaced_with(
        env.client.clone(),
        &mine,
        &resource(
            "operators.coreos.com",
            "v1alpha1",
            "ClusterServiceVersion",
            "clusterserviceversions",
        ),
    )
    .get("everywhere.v1.0.0")
    .await?;
    let theirs = serde_json::to_value(theirs)?;
    assert!(
        theirs["metadata"]["labels"]["olm.copiedFrom"].is_null()
            && theirs["status"]["phase"] == "Succeeded"
            && theirs["status"]["reason"] == "InstallSucceeded",
        "the CSV installed in {mine} was overwritten by a copy: {theirs}"
    );

    let configs: Api<DynamicObject> = Api::all_with(
        env.client.clone(),
        &resource("operators.coreos.com", "v1", "OLMConfig", "olmconfigs"),
    );
    // olm run made OLMConfig cluster at start with an empty spec, as upstream's manifests ship
    // it (OLM repo deploy/chart/templates/0000_50_olm_03-olmconfig.yaml).
    let made = serde_json::to_value(configs.get("cluster").await?)?;
    assert_eq!(made["spec"], json!({}), "{made}");

    env.apply(json!({"apiVersion": "operators.coreos.com/v1", "kind": "OLMConfig", "metadata": {"name": "cluster"},
        "spec": {"features": {"disableCopiedCSVs": true}}})).await?;
    env.wait_gone(&later, "everywhere.v1.0.0").await?;
    env.wait_gone("default", "everywhere.v1.0.0").await?;
    let condition = |status: &'static str, reason: &'static str| {
        let configs = configs.clone();
        async move {
            wait(
                &format!("OLMConfig DisabledCopiedCSVs {status}/{reason}"),
                || async { Ok(serde_json::to_value(configs.get("cluster").await?)?) },
                |c| {
                    c["status"]["conditions"].as_array().is_some_and(|cs| {
                        cs.iter().any(|x| {
                            x["type"] == "DisabledCopiedCSVs"
                                && x["status"] == status
                                && x["reason"] == reason
                        })
                    })
                },
            )
            .await
        }
    };
    condition("True", "CopiedCSVsDisabled").await?;
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(env.client.clone(), ns);
    wait(
        "the DisabledCopiedCSVs event",
        || async { Ok(events.list(&ListParams::default()).await?.items) },
        |items| {
            items.iter().any(|e| {
                e.reason.as_deref() == Some("DisabledCopiedCSVs")
                    && e.note.as_deref()
                        == Some(&*format!("CSV copying disabled for {ns}/everywhere.v1.0.0"))
            })
        },
    )
    .await?;
    env.apply(json!({"apiVersion": "operators.coreos.com/v1", "kind": "OLMConfig", "metadata": {"name": "cluster"},
        "spec": {"features": {"disableCopiedCSVs": false}}})).await?;
    env.wait_csv(&later, "everywhere.v1.0.0", "the copy restored", |c| {
        c["status"]["reason"] == "Copied"
    })
    .await?;
    condition("False", "CopiedCSVsEnabled").await?;
    // Deleting the operator deletes its copies.
    env.csvs(ns)
        .delete("everywhere.v1.0.0", &DeleteParams::default())
        .await?;
    env.wait_gone(&later, "everywhere.v1.0.0").await?;
    Ok(())
}

fn webhook(name: &str, kind: &str, deployment: &str, groups: &[&str], resources: &[&str]) -> Value {
    json!({
        "generateName": name,
        "type": kind,
        "deploymentName": deployment,
        "containerPort": 9443,
        "targetPort": 9443,
        "webhookPath": "/validate",
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Ignore",
        "rules": [{"apiGroups": groups, "apiVersions": ["v1"], "operations": ["CREATE"], "resources": resources}],
    })
}

/// Webhooks: an accepted CSV gets its Service, certificate Secret, mounts and a
/// ValidatingWebhookConfiguration scoped to its group's namespaces with the CA; each rule guard
/// fails a CSV with upstream's words; a conversion webhook of an operator that is not
/// AllNamespaces-only fails its install.
async fn webhooks(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let hook = webhook(
        &format!("vwidget.{id}.example.com"),
        "ValidatingAdmissionWebhook",
        "hooks",
        &[&format!("{id}.example.com")],
        &["widgets"],
    );
    env.apply(csv(
        ns,
        "hooks.v1.0.0",
        &["OwnNamespace"],
        None,
        json!({"webhookdefinitions": [hook]}),
    ))
    .await?;
    env.wait_phase(ns, "hooks.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let configs: Api<DynamicObject> = Api::all_with(
        env.client.clone(),
        &resource(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
        ),
    );
    let list = configs
        .list(
            &ListParams::default()
                .labels(&format!("olm.owner=hooks.v1.0.0,olm.owner.namespace={ns}")),
        )
        .await?;
    check_eq!(list.items.len(), 1);
    let config = serde_json::to_value(&list.items[0])?;
    let w = &config["webhooks"][0];
    check_eq!(w["clientConfig"]["service"]["name"], "hooks-service");
    check_eq!(w["clientConfig"]["service"]["port"], 9443);
    if w["clientConfig"]["caBundle"]
        .as_str()
        .is_none_or(str::is_empty)
    {
        bail!("no caBundle: {w}");
    }
    let selector = w["namespaceSelector"]["matchLabels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    if !selector
        .keys()
        .any(|k| k.starts_with("olm.operatorgroup.uid/"))
    {
        bail!("not scoped to the group: {w}");
    }
    let d = Api::<Deployment>::namespaced(env.client.clone(), ns)
        .get("hooks")
        .await?;
    let volumes: Vec<String> = d
        .spec
        .template
        .spec
        .as_ref()
        .and_then(|p| p.volumes.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|v| v.name)
        .collect();
    check_eq!(volumes, ["apiservice-cert", "webhook-cert"]);
    let secret = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(env.client.clone(), ns)
        .get("hooks-service-cert")
        .await?;
    check_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    env.wait_csv(ns, "hooks.v1.0.0", "the finalizer", |o| {
        o["metadata"]["finalizers"] == json!(["operators.coreos.com/csv-cleanup"])
    })
    .await?;
    // Deleted: its cluster-scoped leftovers go with it, then the CSV.
    env.csvs(ns)
        .delete("hooks.v1.0.0", &DeleteParams::default())
        .await?;
    env.wait_gone(ns, "hooks.v1.0.0").await?;
    let selector = format!("olm.owner=hooks.v1.0.0,olm.owner.namespace={ns}");
    check_eq!(
        configs
            .list(&ListParams::default().labels(&selector))
            .await?
            .items
            .len(),
        0
    );
    let bindings = Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(env.client.clone());
    check_eq!(
        bindings
            .list(&ListParams::default().labels(&selector))
            .await?
            .items
            .len(),
        0
    );

    for (name, groups, resources, message) in [
        (
            "all",
            vec!["*"],
            vec!["pods"],
            "Webhook rules cannot include all groups",
        ),
        (
            "olm",
            vec!["operators.coreos.com"],
            vec!["subscriptions"],
            "Webhook rules cannot include the OLM group",
        ),
        (
            "hooks",
            vec!["admissionregistration.k8s.io"],
            vec!["validatingwebhookconfigurations"],
            "Webhook rules cannot include MutatingWebhookConfiguration or ValidatingWebhookConfiguration resources",
        ),
    ] {
        let bad = webhook(
            &format!("{name}.{id}.example.com"),
            "MutatingAdmissionWebhook",
            &format!("guard-{name}"),
            &groups,
            &resources,
        );
        let csv_name = format!("guard-{name}.v1.0.0");
        env.apply(csv(
            ns,
            &csv_name,
            &["OwnNamespace"],
            None,
            json!({"webhookdefinitions": [bad]}),
        ))
        .await?;
        let o = env
            .wait_phase(ns, &csv_name, "Failed", "InvalidWebhookDescription")
            .await?;
        check_eq!(o["status"]["message"], message);
    }

    let mut convert = webhook(
        &format!("cwidget.{id}.example.com"),
        "ConversionWebhook",
        "convert",
        &[],
        &[],
    );
    convert["conversionCRDs"] = json!([format!("things.{id}.example.com")]);
    env.apply(crd("things", &format!("{id}.example.com"), "Thing"))
        .await?;
    env.apply(csv(
        ns,
        "convert.v1.0.0",
        &["OwnNamespace", "AllNamespaces"],
        Some(("things", &format!("{id}.example.com"), "Thing")),
        json!({"webhookdefinitions": [convert]}),
    ))
    .await?;
    let o = env
        .wait_phase(ns, "convert.v1.0.0", "Failed", "InstallComponentFailed")
        .await?;
    check_eq!(
        o["status"]["message"],
        "install strategy failed: unable to manage conversion webhook: CSVs with conversion webhooks must support only AllNamespaces"
    );
    Ok(())
}

/// What an InstallPlan would create for a bundle before its CSV: its CRDs, its ServiceAccounts
/// with Roles and ClusterRoles holding exactly the CSV's permissions, and its plain objects.
async fn install_plan_objects(env: &Env, ns: &str, bundle: &olm_bundle::Bundle) -> Result<()> {
    for crd in &bundle.crds {
        env.apply(crd.object.clone())
            .await
            .with_context(|| format!("CRD {}", crd.name()))?;
    }
    let strategy = &bundle.csv.raw["spec"]["install"]["spec"];
    let csv_name = bundle.csv.raw["metadata"]["name"]
        .as_str()
        .unwrap_or_default();
    for (key, cluster) in [("permissions", false), ("clusterPermissions", true)] {
        for (i, p) in strategy[key]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let sa = p["serviceAccountName"].as_str().unwrap_or("default");
            env.apply(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": ns}})).await?;
            let name = format!("{csv_name}-{i}-{}", if cluster { "cluster" } else { "ns" });
            let (role_kind, binding_kind) = if cluster {
                ("ClusterRole", "ClusterRoleBinding")
            } else {
                ("Role", "RoleBinding")
            };
            let name = if cluster {
                format!("{ns}-{name}")
            } else {
                name
            };
            let mut meta = json!({"name": name});
            if !cluster {
                meta["namespace"] = json!(ns);
            }
            env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": role_kind, "metadata": meta, "rules": p["rules"]})).await?;
            env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": binding_kind, "metadata": meta,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
                "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": ns}]})).await?;
        }
    }
    for o in &bundle.others {
        if matches!(
            o.kind(),
            "ConfigMap" | "Secret" | "Service" | "ServiceAccount"
        ) {
            let mut object = o.object.clone();
            object["metadata"]["namespace"] = json!(ns);
            env.apply(object)
                .await
                .with_context(|| format!("{} {}", o.kind(), o.name()))?;
        }
    }
    Ok(())
}

/// Bundles of the data set, installed as an InstallPlan would: webhooks (one to nine per CSV),
/// several Deployments, every install mode, and two that require CRDs of other operators.
/// `None`: the CSV must succeed; `Some(crd)`: it must wait in Pending for that CRD.
const REAL_BUNDLES: [(&str, Option<&str>); 12] = [
    ("argocd-operator", None),
    ("azure-service-operator", None),
    ("flux", None),
    ("gitlab-operator-kubernetes", None),
    ("hawtio-operator", None),
    ("infinispan", None),
    ("kepler-operator", None),
    ("konveyor-operator", None),
    ("node-maintenance-operator", None),
    ("cat-facts-operator", None),
    (
        "awss3-operator-registry",
        Some("objectbucketclaims.objectbucket.io"),
    ),
    ("mercury-operator", Some("integrations.camel.apache.org")),
];

/// One package at its newest bundle: the group shaped for the first install mode it supports
/// (OwnNamespace, AllNamespaces, SingleNamespace, MultiNamespace), the InstallPlan's objects,
/// then the CSV, which must reach what `missing` says.
async fn real_bundle(env: &Env, package: &str, missing: Option<&str>) -> Result<()> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/bundles")
        .join(package);
    let mut versions: Vec<_> = std::fs::read_dir(&dir)?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    versions.sort();
    let dir = versions.last().context("no bundle")?;
    let bundle =
        olm_bundle::Bundle::from_dir(dir).map_err(|e| anyhow!("{}: {e}", dir.display()))?;
    let ns: String = format!("rb-{package}")
        .chars()
        .take(50)
        .collect::<String>()
        .trim_end_matches('-')
        .to_owned();
    env.namespace(&ns, json!({})).await?;
    let modes: Vec<String> = bundle.csv.raw["spec"]["installModes"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|m| m["supported"] == true)
        .filter_map(|m| m["type"].as_str().map(str::to_owned))
        .collect();
    let spec = if modes.iter().any(|m| m == "OwnNamespace") {
        json!({"targetNamespaces": [ns]})
    } else if modes.iter().any(|m| m == "AllNamespaces") {
        json!({})
    } else {
        let target = format!("{ns}-t");
        env.namespace(&target, json!({})).await?;
        json!({"targetNamespaces": [target]})
    };
    env.apply(group(&ns, "og", spec)).await?;
    install_plan_objects(env, &ns, &bundle).await?;
    let mut csv = bundle.csv.raw.clone();
    csv["metadata"]["namespace"] = json!(ns);
    if let Some(m) = csv.as_object_mut() {
        m.remove("status");
    }
    // Created as an InstallPlan creates it: fields the schema does not know are dropped.
    let object: DynamicObject = serde_json::from_value(csv)?;
    env.csvs(&ns)
        .create(&kube::api::PostParams::default(), &object)
        .await
        .context("the CSV")?;
    let csv_name = bundle.csv.raw["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    match missing {
        None => {
            env.wait_phase(&ns, &csv_name, "Succeeded", "InstallSucceeded")
                .await?;
        }
        Some(crd) => {
            env.wait_csv(&ns, &csv_name, &format!("{crd} missing"), |o| {
                o["status"]["reason"] == "RequirementsNotMet"
                    && o["status"]["requirementStatus"]
                        .as_array()
                        .is_some_and(|rs| {
                            rs.iter().any(|r| {
                                r["name"] == crd
                                    && r["status"] == "NotPresent"
                                    && r["message"] == "CRD is not present"
                            })
                        })
            })
            .await?;
        }
    }
    Ok(())
}

/// [`REAL_BUNDLES`], four at a time (CRDs by the hundred keep an API server busy).
async fn real_bundles(env: &Env, _: &str) -> Result<()> {
    // The installs are made before they are streamed: a stream mapping through a closure is not
    // Send for every lifetime, and the runner spawns the scenario.
    let installs = REAL_BUNDLES.map(|(package, missing)| async move {
        (package, real_bundle(env, package, missing).await)
    });
    let results: Vec<(&str, Result<()>)> = futures::stream::iter(installs)
        .buffer_unordered(4)
        .collect()
        .await;
    let failures: Vec<String> = results
        .into_iter()
        .filter_map(|(p, r)| r.err().map(|e| format!("{p}: {e:#}")))
        .collect();
    if !failures.is_empty() {
        bail!(
            "{} of {} bundles did not install as expected:\n{}",
            failures.len(),
            REAL_BUNDLES.len(),
            failures.join("\n")
        );
    }
    Ok(())
}

/// Bad input: an unknown install strategy fails the CSV with upstream's reason; a CRD name
/// without a dot leaves it untouched; the controller goes on with the others.
async fn bad_input(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let mut broken = csv(ns, "broken.v1.0.0", &["OwnNamespace"], None, json!({}));
    broken["spec"]["install"]["strategy"] = json!("helm");
    env.apply(broken).await?;
    let o = env
        .wait_phase(ns, "broken.v1.0.0", "Failed", "InvalidInstallStrategy")
        .await?;
    check_eq!(
        o["status"]["message"],
        "install strategy invalid: unrecognized install strategy"
    );
    let mut dupes = csv(ns, "dupes.v1.0.0", &["OwnNamespace"], None, json!({}));
    dupes["spec"]["installModes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "OwnNamespace", "supported": false}));
    env.apply(dupes).await?;
    env.wait_phase(ns, "dupes.v1.0.0", "Failed", "InvalidInstallModes")
        .await?;
    // A webhook naming a Deployment the strategy does not have: refused, naming it (upstream
    // would register the webhook without a CA, breaking every request it intercepts).
    let ghost = json!({"webhookdefinitions": [webhook(
        "vghost.example.com", "ValidatingAdmissionWebhook", "ghost", &["example.com"], &["things"],
    )]});
    env.apply(csv(ns, "phantom.v1.0.0", &["OwnNamespace"], None, ghost))
        .await?;
    let o = env
        .wait_csv(ns, "phantom.v1.0.0", "Failed naming the Deployment", |c| {
            c["status"]["phase"] == "Failed"
                && c["status"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("ghost"))
        })
        .await?;
    check_eq!(o["status"]["reason"], "InstallComponentFailed");
    check_eq!(
        o["status"]["message"],
        "install strategy failed: no deployment named ghost in the install strategy"
    );
    Ok(())
}

/// A plan step whose object is of a deprecated version draws the API server's warning, which
/// is reported as upstream's catalog-operator reports it (`installplan_e2e_test.go`, "creates
/// an Event surfacing the deprecation warning"): a Warning event `AppliedWithWarnings` on the
/// plan's step, in upstream's words. The kind is one a plan may create (PrometheusRule, in a
/// group of this scenario's own), at a version its CRD marks deprecated.
async fn plan_warnings(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let group = format!("{id}.example.com");
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let mut rules = crd("prometheusrules", &group, "PrometheusRule");
    rules["spec"]["versions"][0]["deprecated"] = json!(true);
    env.apply(rules).await?;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    wait(
        "the deprecated CRD established",
        || async {
            let crd = serde_json::to_value(crds.get(&format!("prometheusrules.{group}")).await?)?;
            Ok(crd["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Established" && c["status"] == "True"))
        },
        |established| *established,
    )
    .await?;
    env.apply(csv(ns, "warned.v1.0.0", &["OwnNamespace"], None, json!({})))
        .await?;
    let manifest = json!({"apiVersion": format!("{group}/v1"), "kind": "PrometheusRule",
        "metadata": {"name": "rule"}, "spec": {"groups": []}});
    let step = plan_step(
        "warned.v1.0.0",
        "rule",
        &group,
        "v1",
        "PrometheusRule",
        &manifest,
    );
    hand_made_plan(env, ns, "warned", vec![step]).await?;
    wait_plan_complete(env, ns, "warned").await?;
    let warned = env.wait_event(ns, "AppliedWithWarnings").await?;
    check_eq!(warned.type_.as_deref(), Some("Warning"));
    let want = format!(
        "1 warning(s) generated during installation of operator \"warned.v1.0.0\" (PrometheusRule \"rule\"): {group}/v1 PrometheusRule is deprecated"
    );
    check_eq!(warned.note.as_deref(), Some(want.as_str()));
    let regarding = warned.regarding.unwrap_or_default();
    check_eq!(
        (
            regarding.kind.as_deref(),
            regarding.name.as_deref(),
            regarding.field_path.as_deref()
        ),
        (Some("InstallPlan"), Some("warned"), Some("status.plan[0]"))
    );
    Ok(())
}

/// A Subscription says what its catalog deprecates of what it installed (upstream's
/// `PackageDeprecated`, `ChannelDeprecated`, `BundleDeprecated` and the roll-up `Deprecated`,
/// in its words), from the catalog's `olm.deprecations`.
async fn subscribe_deprecated(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let api_group = format!("{id}.example.com");
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let docs = [
        json!({"schema": "olm.package", "name": "bar", "defaultChannel": "stable"}),
        json!({"schema": "olm.channel", "package": "bar", "name": "stable", "entries": [{"name": "bar.v1.0.0"}]}),
        inline_bundle("bar", "1.0.0", &api_group, ("widgets", "Widget"), None),
        json!({"schema": "olm.deprecations", "package": "bar", "entries": [
            {"reference": {"schema": "olm.package"}, "message": "bar is gone; use baz."},
            {"reference": {"schema": "olm.channel", "name": "stable"}, "message": "stable is frozen."},
            {"reference": {"schema": "olm.bundle", "name": "bar.v1.0.0"}, "message": "1.0.0 has a flaw."},
        ]}),
    ];
    let fbc: String = docs.iter().map(|d| format!("{d}\n")).collect();
    let served = serve_fbc(&fbc).await?;
    env.apply(address_source(ns, "local", &served.address))
        .await?;
    env.apply(subscription(ns, "bar", "bar", "local", "Automatic"))
        .await?;
    let sub = wait_subscription(env, ns, "bar", "bar installed and deprecated", |s| {
        s["status"]["installedCSV"] == "bar.v1.0.0"
            && s["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Deprecated"))
    })
    .await?;
    let message = |kind: &str| {
        sub["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["type"] == kind)
            .map(|c| (c["status"].clone(), c["message"].clone()))
    };
    check_eq!(
        message("PackageDeprecated"),
        Some((
            json!("True"),
            json!("olm.package/bar: bar is gone; use baz.")
        ))
    );
    check_eq!(
        message("ChannelDeprecated"),
        Some((
            json!("True"),
            json!("olm.channel/stable: stable is frozen.")
        ))
    );
    check_eq!(
        message("BundleDeprecated"),
        Some((
            json!("True"),
            json!("olm.bundle/bar.v1.0.0: 1.0.0 has a flaw.")
        ))
    );
    check_eq!(
        message("Deprecated"),
        Some((
            json!("True"),
            json!(
                "olm.package/bar: bar is gone; use baz.; olm.channel/stable: stable is frozen.; olm.bundle/bar.v1.0.0: 1.0.0 has a flaw."
            )
        ))
    );
    Ok(())
}

/// A plan's steps bring objects that exist to the plan's version, as upstream's step ensurers
/// do (an upgrade whose bundle changed a ConfigMap changes it): the ConfigMap's data is
/// replaced, and the Service gets its new port and keeps the cluster IP it was given.
async fn plan_updates_existing(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    env.apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "special-config", "namespace": ns}, "data": {"special.how": "very"}}))
        .await?;
    env.apply(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "metrics", "namespace": ns},
        "spec": {"ports": [{"name": "http", "port": 80}]}}))
        .await?;
    let services = Api::<k8s_openapi::api::core::v1::Service>::namespaced(env.client.clone(), ns);
    let ip = services
        .get("metrics")
        .await?
        .spec
        .and_then(|s| s.cluster_ip);
    let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "special-config"}, "data": {"special.how": "updated-very-much"}});
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "metrics"},
        "spec": {"ports": [{"name": "http", "port": 8080}]}});
    let steps = vec![
        plan_step("", "special-config", "", "v1", "ConfigMap", &config),
        plan_step("", "metrics", "", "v1", "Service", &service),
    ];
    hand_made_plan(env, ns, "upgrade", steps).await?;
    wait_plan_complete(env, ns, "upgrade").await?;
    let plans = installplans_api(env, ns);
    let statuses: Vec<Value> = plans.get("upgrade").await?.data["status"]["plan"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["status"].clone())
        .collect();
    check_eq!(statuses, vec![json!("Present"), json!("Present")]);
    let maps = Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(env.client.clone(), ns);
    let data = maps.get("special-config").await?.data.unwrap_or_default();
    check_eq!(
        data.get("special.how").map(String::as_str),
        Some("updated-very-much")
    );
    let spec = services.get("metrics").await?.spec.unwrap_or_default();
    check_eq!(spec.cluster_ip, ip);
    let ports: Vec<i32> = spec.ports.iter().flatten().map(|p| p.port).collect();
    check_eq!(ports, vec![8080]);
    Ok(())
}

/// A plan's CRD step meeting its CRD while it is being deleted (held here by a finalizer) waits
/// for it to go and then creates it, instead of updating it and completing on a CRD about to
/// vanish with every object of it.
async fn crd_terminating(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let group = format!("{id}.example.com");
    let name = format!("holds.{group}");
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let mut held = crd("holds", &group, "Hold");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    env.apply(held).await?;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client.clone());
    let old = crds.get(&name).await?.metadata.uid;
    crds.delete(&name, &DeleteParams::default()).await?;
    let manifest = crd("holds", &group, "Hold");
    let step = plan_step(
        "held.v1.0.0",
        &name,
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        &manifest,
    );
    hand_made_plan(env, ns, "held", vec![step]).await?;
    let plans = installplans_api(env, ns);
    let plan = settle::namespaced(
        settle::resource(
            "operators.coreos.com",
            "v1alpha1",
            "InstallPlan",
            "installplans",
        ),
        {
            let ns = ns.to_owned();
            move |n| n == ns
        },
    );
    settle::writes_during(&env.client, &[plan], Duration::from_secs(3)).await?;
    let phase = plans.get("held").await?.data["status"]["phase"].clone();
    check_eq!(
        phase,
        json!("Installing"),
        "the plan completed on a CRD being deleted"
    );
    let current = crds.get(&name).await?;
    check_eq!(current.metadata.deletion_timestamp.is_some(), true);
    check_eq!(current.metadata.uid, old);
    crds.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await?;
    wait_plan_complete(env, ns, "held").await?;
    let created = crds.get(&name).await?;
    check_eq!(created.metadata.deletion_timestamp, None);
    if created.metadata.uid == old {
        bail!("the plan's CRD is the one that was being deleted");
    }
    let alongside: Vec<&String> = created
        .metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| k.starts_with(olm_v0::catalog_operator::alongside::ANNOTATION_PREFIX))
        .map(|(_, v)| v)
        .collect();
    let want = format!("{ns}/held.v1.0.0");
    check_eq!(alongside, vec![&want]);
    Ok(())
}

/// PackageManifests (seed 001, "multi-arch" labels): a catalog whose default channel's head
/// carries `operatorframework.io/arch.arm64` and `operatorframework.io/os.windows` is listed
/// through the real API server (the aggregated `packages.operators.coreos.com/v1` that `olm run`
/// serves, reached through a Service whose Endpoints are this machine), filtered by those labels,
/// read by name, and shown as the Table kubectl asks for.
async fn packagemanifests(env: &Env, id: &str) -> Result<()> {
    let Some(node) = env.node_address else {
        bail!("this machine has no address but loopback: an aggregated API cannot be reached");
    };
    let ns = id;
    let system = olm_controller::run::DEFAULT_SYSTEM_NAMESPACE;
    env.namespace(ns, json!({})).await?;
    env.namespace(system, json!({})).await?;
    env.apply(json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "packageserver-service", "namespace": system},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": env.packageserver_port}]}}))
        .await?;
    let endpoints =
        Api::<k8s_openapi::api::core::v1::Endpoints>::namespaced(env.client.clone(), system);
    endpoints
        .patch(
            "packageserver-service",
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Endpoints",
                "metadata": {"name": "packageserver-service", "namespace": system},
                "subsets": [{"addresses": [{"ip": node.to_string()}],
                    "ports": [{"name": "https", "port": env.packageserver_port}]}]})),
        )
        .await?;
    let bundle = |package: &str, version: &str, labels: Value| {
        json!({"schema": "olm.bundle", "name": format!("{package}.v{version}"), "package": package,
        "image": format!("example.com/{package}-bundle:v{version}"),
        "properties": [
            {"type": "olm.package", "value": {"packageName": package, "version": version}},
            {"type": "olm.csv.metadata", "value": {"displayName": package,
                "provider": {"name": "Example Inc", "url": "https://example.com"},
                "labels": labels, "keywords": ["multi"]}},
        ]})
    };
    let arch = json!({"operatorframework.io/arch.arm64": "supported",
        "operatorframework.io/os.windows": "supported"});
    let docs = [
        json!({"schema": "olm.package", "name": "multiarch", "defaultChannel": "stable",
            "icon": {"base64data": "PHN2Zy8+", "mediatype": "image/svg+xml"}}),
        json!({"schema": "olm.channel", "package": "multiarch", "name": "stable", "entries": [
            {"name": "multiarch.v1.0.0"},
            {"name": "multiarch.v1.1.0", "replaces": "multiarch.v1.0.0"}]}),
        json!({"schema": "olm.channel", "package": "multiarch", "name": "alpha", "entries": [
            {"name": "multiarch.v1.0.0"}]}),
        bundle("multiarch", "1.0.0", json!({})),
        bundle("multiarch", "1.1.0", arch),
        json!({"schema": "olm.package", "name": "plain", "defaultChannel": "stable"}),
        json!({"schema": "olm.channel", "package": "plain", "name": "stable", "entries": [
            {"name": "plain.v0.1.0"}]}),
        bundle("plain", "0.1.0", json!({})),
    ];
    let fbc = docs
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    let served = serve_fbc(&fbc).await?;
    let mut source = address_source(ns, "arch-catalog", &served.address);
    source["spec"]["displayName"] = json!("Arch Operators");
    source["spec"]["publisher"] = json!("Example");
    env.apply(source).await?;
    let ar = resource(
        "packages.operators.coreos.com",
        "v1",
        "PackageManifest",
        "packagemanifests",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), ns, &ar);
    let names = |list: &[DynamicObject]| -> Vec<String> {
        let mut n: Vec<String> = list
            .iter()
            .filter(|o| o.labels().get("catalog").map(String::as_str) == Some("arch-catalog"))
            .map(ResourceExt::name_any)
            .collect();
        n.sort();
        n
    };
    let listed = wait(
        "the catalog's PackageManifests through the API server",
        || async { Ok(api.list(&ListParams::default()).await.ok().map(|l| l.items)) },
        |l| l.as_deref().is_some_and(|l| names(l).len() == 2),
    )
    .await?
    .unwrap_or_default();
    check_eq!(names(&listed), ["multiarch", "plain"]);
    let multi = listed
        .iter()
        .find(|o| o.name_any() == "multiarch")
        .context("no multiarch")?;
    let labels = multi.labels();
    check_eq!(
        labels
            .get("operatorframework.io/arch.arm64")
            .map(String::as_str),
        Some("supported")
    );
    check_eq!(
        labels
            .get("operatorframework.io/os.windows")
            .map(String::as_str),
        Some("supported")
    );
    check_eq!(
        labels.get("operatorframework.io/os.linux"),
        None,
        "no default os label"
    );
    check_eq!(
        labels.get("catalog-namespace").map(String::as_str),
        Some(ns)
    );
    check_eq!(
        labels.get("provider").map(String::as_str),
        Some("Example Inc")
    );
    let windows = api
        .list(&ListParams::default().labels("operatorframework.io/os.windows=supported"))
        .await?;
    check_eq!(names(&windows.items), ["multiarch"]);
    let linux = api
        .list(&ListParams::default().labels("operatorframework.io/os.linux=supported"))
        .await?;
    check_eq!(names(&linux.items), ["plain"]);
    let by_field = api
        .list(&ListParams::default().fields("metadata.name=plain"))
        .await?;
    check_eq!(names(&by_field.items), ["plain"]);
    let got = serde_json::to_value(api.get("multiarch").await?)?;
    let status = &got["status"];
    check_eq!(status["catalogSource"], json!("arch-catalog"));
    check_eq!(status["catalogSourceDisplayName"], json!("Arch Operators"));
    check_eq!(status["catalogSourcePublisher"], json!("Example"));
    check_eq!(status["defaultChannel"], json!("stable"));
    check_eq!(
        status["provider"],
        json!({"name": "Example Inc", "url": "https://example.com"})
    );
    let channels: Vec<&str> = status["channels"]
        .as_array()
        .context("channels")?
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    check_eq!(channels, ["alpha", "stable"]);
    let stable = &status["channels"][1];
    check_eq!(stable["currentCSV"], json!("multiarch.v1.1.0"));
    check_eq!(stable["currentCSVDesc"]["version"], json!("1.1.0"));
    check_eq!(stable["currentCSVDesc"]["keywords"], json!(["multi"]));
    check_eq!(
        stable["entries"],
        json!([{"name": "multiarch.v1.1.0", "version": "1.1.0"},
            {"name": "multiarch.v1.0.0", "version": "1.0.0"}])
    );
    // What `kubectl get packagemanifests` asks for.
    let request = http::Request::get(format!(
        "/apis/packages.operators.coreos.com/v1/namespaces/{ns}/packagemanifests?labelSelector=catalog%3Darch-catalog"
    ))
    .header(
        http::header::ACCEPT,
        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
    )
    .body(Vec::new())?;
    let table: Value = env.client.request(request).await?;
    check_eq!(table["kind"], json!("Table"));
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .context("columns")?
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    check_eq!(columns, ["Name", "Catalog", "Age"]);
    check_eq!(table["rows"][0]["cells"][0], json!("multiarch"));
    check_eq!(table["rows"][0]["cells"][1], json!("Arch Operators"));
    check_eq!(table["rows"].as_array().map(Vec::len), Some(2));
    check_eq!(
        stable["currentCSVDesc"].get("icon"),
        None,
        "icons are only served by the icon subresource"
    );
    // The icon subresource: the default channel head's icon, as an image.
    let icon = env
        .client
        .request_text(
            http::Request::get(format!(
                "/apis/packages.operators.coreos.com/v1/namespaces/{ns}/packagemanifests/multiarch/icon"
            ))
            .body(Vec::new())?,
        )
        .await?;
    check_eq!(icon, "<svg/>");
    served.stop().await?;
    Ok(())
}

/// A namespace deleted under a running operator: its CSV's finalizer is released and the
/// namespace goes, with nothing left retrying.
async fn namespace_deleted(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    env.apply(csv(ns, "doomed.v1.0.0", &["OwnNamespace"], None, json!({})))
        .await?;
    env.wait_phase(ns, "doomed.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let namespaces = Api::<Namespace>::all(env.client.clone());
    namespaces.delete(ns, &DeleteParams::default()).await?;
    wait(
        "the namespace gone",
        || async { Ok(namespaces.get_opt(ns).await?) },
        |n| n.is_none(),
    )
    .await?;
    Ok(())
}

/// CSVs failed on what no repair fixes — webhook rules OLM refuses, an install strategy it does
/// not know — stay `Failed` with that reason, the history showing one failure and no trip
/// through `Pending` (`NeedsCertRotation` "owned APIServices need cert refresh", `NeedsReinstall`
/// "calculated deployment install is bad"), one `Warning` Event each, and no write after.
async fn terminal_failures(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let refused = webhook(
        &format!("all.{id}.example.com"),
        "ValidatingAdmissionWebhook",
        "refused",
        &["*"],
        &["pods"],
    );
    env.apply(csv(
        ns,
        "refused.v1.0.0",
        &["OwnNamespace"],
        None,
        json!({"webhookdefinitions": [refused]}),
    ))
    .await?;
    let mut helm = csv(ns, "helm.v1.0.0", &["OwnNamespace"], None, json!({}));
    helm["spec"]["install"]["strategy"] = json!("helm");
    env.apply(helm).await?;
    let cases = [
        (
            "refused.v1.0.0",
            "InvalidWebhookDescription",
            "Webhook rules cannot include all groups",
        ),
        (
            "helm.v1.0.0",
            "InvalidInstallStrategy",
            "install strategy invalid: unrecognized install strategy",
        ),
    ];
    for (name, reason, message) in cases {
        let o = env.wait_phase(ns, name, "Failed", reason).await?;
        check_eq!(o["status"]["message"], message, "{name}");
    }
    scenario_settles(env, id).await?;
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(env.client.clone(), ns);
    for (name, reason, message) in cases {
        let o = serde_json::to_value(env.csvs(ns).get(name).await?)?;
        check_eq!(o["status"]["phase"], "Failed", "{name} settled elsewhere");
        check_eq!(o["status"]["message"], message, "{name}");
        let history: Vec<(String, String)> = o["status"]["conditions"]
            .as_array()
            .unwrap_or(&Vec::new())
            .iter()
            .map(|c| {
                (
                    c["phase"].as_str().unwrap_or_default().to_owned(),
                    c["reason"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        let failures = history.iter().filter(|(p, _)| p == "Failed").count();
        check_eq!(failures, 1, "{name}: history {history:?}");
        check_eq!(
            history.last().map(|(_, r)| r.as_str()),
            Some(reason),
            "{name}: history {history:?}"
        );
        let list = events
            .list(&ListParams::default().fields(&format!("involvedObject.name={name}")))
            .await?;
        let recorded: i32 = list
            .items
            .iter()
            .filter(|e| e.reason.as_deref() == Some(reason))
            .map(|e| e.count.unwrap_or(1).max(1))
            .sum();
        check_eq!(recorded, 1, "{name}: {reason} Events");
    }
    Ok(())
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
