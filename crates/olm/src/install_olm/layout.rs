//! How `olm run` is laid out in Deployments: olm's one Deployment, or upstream's two.
//!
//! The manifests describe one Deployment, `olm-controller-manager`, running the whole of OLM v1
//! in one process. `--layout upstream` splits it into upstream's `catalogd-controller-manager`
//! (`olm run --component=catalogd`) and `operator-controller-controller-manager` (`olm run
//! --component=operator-controller`), with upstream's names, labels and Leases, so that what is
//! written for upstream's layout — its docs, scripts, e2e suite, dashboards — finds it. Both
//! run the same image as the same ServiceAccount; the Services, PodDisruptionBudgets and the
//! network policy follow the pods.

use anyhow::{anyhow, bail};
use serde_json::Value;

/// olm's Deployment, the one the manifests hold.
const SINGLE: &str = "olm-controller-manager";

/// The label that ties Services, PodDisruptionBudgets and the network policy to the pods.
const PODS_LABEL: &str = "control-plane";

/// The Deployments the manifests describe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Layout {
    /// One Deployment, olm-controller-manager, running all of OLM v1 (and OLM v0 with --olm
    /// both).
    #[default]
    Single,
    /// Upstream's two: catalogd-controller-manager (the catalog server) and
    /// operator-controller-controller-manager (the installer, and OLM v0 with --olm both).
    Upstream,
}

/// One of upstream's Deployments.
struct Part {
    /// The Deployment's (and PodDisruptionBudget's) name, and its pods' `control-plane` label.
    deployment: &'static str,
    /// `app.kubernetes.io/name`, by which upstream's tooling finds a component's Deployment.
    app: &'static str,
    /// `olm run --component`.
    component: &'static str,
    /// The container ports it serves, by name.
    ports: &'static [&'static str],
    /// Arguments that mean nothing to this component, by prefix.
    drop_args: &'static [&'static str],
    /// Arguments added: what it does, in upstream's words (the feature gates of upstream's
    /// experimental profile, which olm always has on; `olm run` refuses them off).
    add_args: &'static [&'static str],
    /// The Services selecting its pods.
    services: &'static [&'static str],
}

const CATALOGD: Part = Part {
    deployment: "catalogd-controller-manager",
    app: "catalogd",
    component: "catalogd",
    ports: &["https", "webhook", "metrics", "probes"],
    drop_args: &[],
    add_args: &[],
    services: &["catalogd-service"],
};

const OPERATOR_CONTROLLER: Part = Part {
    deployment: "operator-controller-controller-manager",
    app: "operator-controller",
    component: "operator-controller",
    ports: &["metrics", "probes"],
    drop_args: &["--catalogs-server-addr=", "--webhook-server-port="],
    add_args: &[
        "--feature-gates=BoxcutterRuntime=true",
        "--feature-gates=DeploymentConfig=true",
        "--feature-gates=SingleOwnNamespaceInstallSupport=true",
    ],
    services: &["operator-controller-service"],
};

/// Lays `docs` (the manifests as read) out as `layout` says.
pub fn apply(docs: &mut Vec<Value>, layout: Layout) -> anyhow::Result<()> {
    match layout {
        Layout::Single => Ok(()),
        Layout::Upstream => upstream(docs),
    }
}

fn upstream(docs: &mut Vec<Value>) -> anyhow::Result<()> {
    for kind in ["Deployment", "PodDisruptionBudget"] {
        let at = docs
            .iter()
            .position(|d| d["kind"] == kind && d["metadata"]["name"] == SINGLE)
            .ok_or_else(|| anyhow!("the built-in install.yaml has no {kind} {SINGLE}"))?;
        let single = docs.remove(at);
        for (i, part) in [CATALOGD, OPERATOR_CONTROLLER].iter().enumerate() {
            let mut doc = single.clone();
            doc["metadata"]["name"] = Value::from(part.deployment);
            relabel(&mut doc, part.deployment);
            if kind == "Deployment" {
                component_deployment(&mut doc, part)?;
            }
            docs.insert(at + i, doc);
        }
    }
    for doc in docs.iter_mut() {
        let name = doc["metadata"]["name"].as_str().unwrap_or_default();
        match doc["kind"].as_str() {
            Some("Service") => {
                let Some(part) = [CATALOGD, OPERATOR_CONTROLLER]
                    .into_iter()
                    .find(|p| p.services.contains(&name))
                else {
                    continue;
                };
                relabel(doc, part.deployment);
            }
            Some("NetworkPolicy") if name == SINGLE => {
                // One policy for both: the same ports are reached on either, and each serves
                // only its own.
                doc["spec"]["podSelector"] = serde_json::json!({
                    "matchExpressions": [{
                        "key": PODS_LABEL,
                        "operator": "In",
                        "values": [CATALOGD.deployment, OPERATOR_CONTROLLER.deployment],
                    }],
                });
            }
            _ => {}
        }
    }
    Ok(())
}

/// Every `control-plane: olm-controller-manager` in `doc` (selectors, pod labels, the
/// anti-affinity term) becomes `control-plane: to`.
fn relabel(doc: &mut Value, to: &str) {
    match doc {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if key == PODS_LABEL && value == SINGLE {
                    *value = Value::from(to);
                } else {
                    relabel(value, to);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| relabel(v, to)),
        _ => {}
    }
}

/// The Deployment of `part`: its `app.kubernetes.io/name`, its container's arguments and ports.
fn component_deployment(doc: &mut Value, part: &Part) -> anyhow::Result<()> {
    for labels in ["/metadata/labels", "/spec/template/metadata/labels"] {
        if let Some(Value::Object(labels)) = doc.pointer_mut(labels) {
            labels.insert("app.kubernetes.io/name".into(), Value::from(part.app));
        }
    }
    let containers = doc
        .pointer_mut("/spec/template/spec/containers")
        .and_then(Value::as_array_mut)
        .ok_or_else(|| anyhow!("the built-in Deployment {SINGLE} has no containers"))?;
    let Some(manager) = containers
        .iter_mut()
        .find(|c| c["name"] == super::CONTAINER)
    else {
        bail!(
            "the built-in Deployment {SINGLE} has no container {:?}",
            super::CONTAINER
        );
    };
    let Some(Value::Array(args)) = manager.get_mut("args") else {
        bail!("the built-in Deployment {SINGLE} runs no arguments");
    };
    args.retain(|a| {
        let a = a.as_str().unwrap_or_default();
        !part.drop_args.iter().any(|p| a.starts_with(p))
    });
    let at = args
        .iter()
        .position(|a| a.as_str().is_some_and(|a| a.starts_with("--olm=")))
        .map_or(args.len(), |i| i + 1);
    args.insert(at, Value::from(format!("--component={}", part.component)));
    args.extend(part.add_args.iter().map(|a| Value::from(*a)));
    if let Some(Value::Array(ports)) = manager.get_mut("ports") {
        ports.retain(|p| {
            p["name"]
                .as_str()
                .is_some_and(|name| part.ports.contains(&name))
        });
    }
    Ok(())
}

/// Whether `doc` is a Deployment running the catalog server only (OLM v0 never goes there).
pub fn is_catalogd(doc: &Value) -> bool {
    doc["kind"] == "Deployment"
        && doc
            .pointer("/spec/template/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c["args"].as_array())
            .flatten()
            .any(|a| a == "--component=catalogd")
}
