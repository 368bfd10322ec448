//! The Deployments a CSV's install strategy asks for (OLM repo
//! `pkg/controller/install/deployment.go` `deploymentForSpec` and `cleanupOrphanedDeployments`,
//! `resolver.go` `UnmarshalStrategy`; owner references and labels from `pkg/lib/ownerutil`).
//!
//! Each `spec.install.spec.deployments[]` entry becomes one Deployment, built in upstream's
//! order ([`deployment_for_spec`]):
//!
//! 1. the entry's name, in the CSV's namespace, its `spec` as written;
//! 2. pod-template annotations: the template's own, overlaid with every CSV annotation (so
//!    `olm.targetNamespaces`, `olm.operatorGroup`, `alm-examples`… reach the pods, and a change
//!    to any CSV annotation rolls the pods);
//! 3. labels: the entry's `label` map, `olm.managed: "true"`, and the owner labels `olm.owner`,
//!    `olm.owner.namespace`, `olm.owner.kind: ClusterServiceVersion` (how olm-operator lists a
//!    CSV's Deployments);
//! 4. a non-blocking, non-controller owner reference to the CSV (deleting the CSV collects its
//!    Deployments; nothing waits on them);
//! 5. the Subscription's config and the cluster proxy ([`Overrides`]);
//! 6. `OPERATOR_CONDITION_NAME=<CSV name>` merged into every container (the operator finds its
//!    OperatorCondition by it);
//! 7. `spec.revisionHistoryLimit: 1` (OLM never rolls back, and each kept ReplicaSet costs
//!    memory);
//! 8. the label `olm.deployment-spec-hash`, a digest of the finished `spec` ([`spec_hash`]):
//!    a Deployment whose label differs from a fresh build has drifted and is written again.
//!
//! Difference from upstream, deliberate: upstream digests Go's `encoding/json` of its typed
//! `DeploymentSpec` (struct field order, `omitempty`, `null` for some unset fields). The Go
//! struct layout of every nested Kubernetes type is not reproduced here; [`spec_hash`] digests
//! the spec's JSON with object keys sorted instead. Both are stable for a given spec, but they
//! differ, so a Deployment written by upstream's olm-operator carries a label this code does not
//! compute, and is written once more after moving to this implementation (a rollout of the
//! operator's pods, with an unchanged pod template).
//!
//! Not here: the certificate volumes and `olmcahash` annotation that APIService and webhook
//! serving certificates add to a Deployment before it is built (the caller passes the strategy
//! entries after that step), creating and updating the objects, and the readiness check
//! ([`crate::olm_operator::deployment`]).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use olm_goenc::json::{write_number, write_str_html};
use serde_json::{Map, Value};

use crate::hash::base62_sha224;
use olm_v0_api::v1alpha1::{ClusterServiceVersion, NamedInstallStrategy};

use crate::olm_operator::inject::{
    Overrides, ShapeError, array, as_object, child_mut, env_var, inject_env, object, required_text,
    string, string_map, to_object, with_pod_spec,
};
use crate::olm_operator::operatorgroup::{
    MANAGED_LABEL, OWNER_KIND_LABEL, OWNER_LABEL, OWNER_NAMESPACE_LABEL,
};

/// The only install strategy there is: `spec.install.strategy: deployment`.
pub const STRATEGY_NAME: &str = "deployment";
/// Label holding [`spec_hash`] of the Deployment's spec.
pub const SPEC_HASH_LABEL: &str = "olm.deployment-spec-hash";
/// Variable naming the CSV (and so its OperatorCondition) in every container.
pub const OPERATOR_CONDITION_ENV: &str = "OPERATOR_CONDITION_NAME";
/// The CSV's `apiVersion`, as owner references name it.
pub const CSV_API_VERSION: &str = "operators.coreos.com/v1alpha1";
/// The CSV's kind, in owner references and the `olm.owner.kind` label.
pub const CSV_KIND: &str = "ClusterServiceVersion";
/// `spec.revisionHistoryLimit` of every Deployment: OLM never rolls back.
pub const REVISION_HISTORY_LIMIT: i64 = 1;

/// Why a CSV's deployments cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StrategyError {
    /// `spec.install.strategy` is not [`STRATEGY_NAME`]; the message is upstream's.
    #[error("unrecognized install strategy")]
    Unrecognized {
        /// The strategy named (empty when unset).
        name: String,
    },
    /// A part of the CSV or of a Deployment spec has the wrong JSON type.
    #[error(transparent)]
    Shape(#[from] ShapeError),
}

/// The CSV as the owner of its Deployments.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CsvOwner {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.uid` (empty before the API server assigns one).
    pub uid: String,
    /// `metadata.annotations`, copied onto every pod template.
    pub annotations: BTreeMap<String, String>,
}

impl CsvOwner {
    /// Reads the owner from a CSV.
    ///
    /// # Errors
    ///
    /// A name or namespace missing or empty.
    pub fn from_csv(csv: &ClusterServiceVersion) -> Result<Self, ShapeError> {
        let meta = &csv.metadata;
        Ok(Self {
            name: required_text(meta.name.as_deref(), "metadata.name")?,
            namespace: required_text(meta.namespace.as_deref(), "metadata.namespace")?,
            uid: meta.uid.clone().unwrap_or_default(),
            annotations: meta.annotations.clone().unwrap_or_default(),
        })
    }
}

/// One `spec.install.spec.deployments[]` entry.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StrategyDeployment {
    /// `name`: the Deployment's name.
    pub name: String,
    /// `spec`: the Deployment's spec as the bundle wrote it.
    pub spec: Map<String, Value>,
    /// `label`: extra labels for the Deployment.
    pub label: BTreeMap<String, String>,
}

/// The deployment entries of a CSV's install strategy (`spec.install`), in order.
///
/// # Errors
///
/// [`StrategyError::Unrecognized`] when `spec.install.strategy` is not `deployment`;
/// [`StrategyError::Shape`] when an entry's name is empty (the path within the CSV).
pub fn strategy_deployments(
    install: &NamedInstallStrategy,
) -> Result<Vec<StrategyDeployment>, StrategyError> {
    if install.strategy_name != STRATEGY_NAME {
        return Err(StrategyError::Unrecognized {
            name: install.strategy_name.clone(),
        });
    }
    let Some(details) = &install.strategy_spec else {
        return Ok(Vec::new());
    };
    details
        .deployment_specs
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let path = format!("spec.install.spec.deployments[{i}]");
            let name = required_text(Some(&entry.name), &format!("{path}.name"))?;
            // The builders edit the spec as JSON (its pod template, containers, env).
            let spec = match serde_json::to_value(&entry.spec) {
                Ok(Value::Object(spec)) => spec,
                other => {
                    return Err(ShapeError::new(
                        format!("{path}.spec"),
                        "an object",
                        other.ok().as_ref(),
                    )
                    .into());
                }
            };
            Ok(StrategyDeployment {
                name,
                spec,
                label: entry.label.clone(),
            })
        })
        .collect()
}

/// A Deployment built from a strategy entry.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltDeployment {
    /// The whole object, ready to create or update.
    pub deployment: Value,
    /// [`spec_hash`] of its spec, also its [`SPEC_HASH_LABEL`] label.
    pub spec_hash: String,
}

/// The Deployment for `entry` of `owner`'s strategy, built in the order the module
/// documentation lists, with `overrides` (the Subscription config and cluster proxy) applied.
///
/// # Errors
///
/// A part of the entry's spec of the wrong JSON type (a pod template, pod spec, container or
/// `env` that is not an object or array, an annotation that is not a string), with its path in
/// the built Deployment — the same path as under the entry, whose `spec` it is.
pub fn deployment_for_spec(
    owner: &CsvOwner,
    entry: &StrategyDeployment,
    overrides: Overrides<'_>,
) -> Result<BuiltDeployment, ShapeError> {
    let mut spec = entry.spec.clone();
    overlay_template_annotations(&mut spec, &owner.annotations)?;

    let mut labels = entry.label.clone();
    labels.insert(MANAGED_LABEL.to_owned(), "true".to_owned());
    labels.extend(owner_labels(owner));

    let mut metadata = Map::new();
    metadata.insert("name".to_owned(), Value::String(entry.name.clone()));
    metadata.insert(
        "namespace".to_owned(),
        Value::String(owner.namespace.clone()),
    );
    metadata.insert("labels".to_owned(), to_object(&labels));
    metadata.insert(
        "ownerReferences".to_owned(),
        Value::Array(vec![owner_reference(owner)]),
    );
    let mut deployment = Map::new();
    deployment.insert("apiVersion".to_owned(), Value::String("apps/v1".to_owned()));
    deployment.insert("kind".to_owned(), Value::String("Deployment".to_owned()));
    deployment.insert("metadata".to_owned(), Value::Object(metadata));
    deployment.insert("spec".to_owned(), Value::Object(spec));

    overrides.apply_to(&mut deployment)?;
    let condition = env_var(OPERATOR_CONDITION_ENV, &owner.name);
    with_pod_spec(&mut deployment, |pod| inject_env(pod, &[condition]))?;

    let spec = child_mut(&mut deployment, "spec", "")?;
    spec.insert(
        "revisionHistoryLimit".to_owned(),
        Value::from(REVISION_HISTORY_LIMIT),
    );
    let hash = object_hash(spec);
    let metadata = child_mut(&mut deployment, "metadata", "")?;
    child_mut(metadata, "labels", "metadata")?
        .insert(SPEC_HASH_LABEL.to_owned(), Value::String(hash.clone()));
    Ok(BuiltDeployment {
        deployment: Value::Object(deployment),
        spec_hash: hash,
    })
}

/// Sets `spec.template.metadata.annotations` to the template's own overlaid with `csv`'s; left
/// out when both are empty, as Go writes an empty map.
fn overlay_template_annotations(
    spec: &mut Map<String, Value>,
    csv: &BTreeMap<String, String>,
) -> Result<(), ShapeError> {
    let own = match object(spec, "template", "spec")? {
        Some(template) => match object(template, "metadata", "spec.template")? {
            Some(meta) => string_map(meta, "annotations", "spec.template.metadata")?,
            None => None,
        },
        None => None,
    };
    let mut merged = own.unwrap_or_default();
    merged.extend(csv.iter().map(|(k, v)| (k.clone(), v.clone())));
    if merged.is_empty() {
        if let Some(Value::Object(template)) = spec.get_mut("template")
            && let Some(Value::Object(meta)) = template.get_mut("metadata")
        {
            meta.shift_remove("annotations");
        }
        return Ok(());
    }
    let template = child_mut(spec, "template", "spec")?;
    child_mut(template, "metadata", "spec.template")?
        .insert("annotations".to_owned(), to_object(&merged));
    Ok(())
}

/// The labels marking an object as `owner`'s (upstream's `OwnerLabel` for a CSV): what
/// olm-operator lists a CSV's Deployments by.
pub fn owner_labels(owner: &CsvOwner) -> BTreeMap<String, String> {
    BTreeMap::from([
        (OWNER_LABEL.to_owned(), owner.name.clone()),
        (OWNER_NAMESPACE_LABEL.to_owned(), owner.namespace.clone()),
        (OWNER_KIND_LABEL.to_owned(), CSV_KIND.to_owned()),
    ])
}

/// [`owner_labels`] of the CSV `namespace/name`: what marks everything olm-operator makes for
/// it, and the cluster-scoped objects an InstallPlan creates for it.
pub fn csv_owner_labels(namespace: &str, name: &str) -> BTreeMap<String, String> {
    owner_labels(&CsvOwner {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        ..CsvOwner::default()
    })
}

/// The owner reference to `owner` on each of its Deployments (upstream's `NonBlockingOwner`):
/// not a controller, not blocking the CSV's deletion.
pub fn owner_reference(owner: &CsvOwner) -> Value {
    serde_json::json!(non_blocking_owner(owner))
}

/// [`owner_reference`], typed.
pub fn non_blocking_owner(owner: &CsvOwner) -> OwnerReference {
    OwnerReference {
        api_version: CSV_API_VERSION.to_owned(),
        kind: CSV_KIND.to_owned(),
        name: owner.name.clone(),
        uid: owner.uid.clone(),
        controller: Some(false),
        block_owner_deletion: Some(false),
    }
}

/// The `olm.deployment-spec-hash` of `spec`: base-62 SHA-224 of its compact JSON with every
/// object's keys sorted and Go's default string escaping (`<`, `>`, `&` as `\u003c`…), followed
/// by a newline as Go's `json.Encoder` ends a value. Not upstream's value; see the module
/// documentation.
pub fn spec_hash(spec: &Value) -> String {
    let mut text = String::new();
    write_sorted(&mut text, spec);
    text.push('\n');
    base62_sha224(text.as_bytes())
}

/// [`spec_hash`] of an object given by its fields.
fn object_hash(spec: &Map<String, Value>) -> String {
    let mut text = String::new();
    write_sorted_object(&mut text, spec);
    text.push('\n');
    base62_sha224(text.as_bytes())
}

/// `v` as compact JSON, object keys in byte order at every level.
fn write_sorted(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str_html(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_sorted(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => write_sorted_object(out, m),
    }
}

fn write_sorted_object(out: &mut String, m: &Map<String, Value>) {
    let mut entries: Vec<(&String, &Value)> = m.iter().collect();
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push('{');
    for (i, (k, item)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str_html(out, k);
        out.push(':');
        write_sorted(out, item);
    }
    out.push('}');
}

/// The Deployments to delete after an install: those of `existing` (the Deployments of the
/// CSV's namespace) that carry `owner`'s [`owner_labels`] and an owner reference with its uid,
/// whose name no entry of `strategy` has any more. Names sorted.
///
/// Upstream lists by the owner labels through the API and then checks the uid; both checks
/// are made here, so `existing` may be any list of the namespace's Deployments. A Deployment of
/// another namespace (when `metadata.namespace` says so) is never the CSV's.
///
/// # Errors
///
/// A Deployment, its metadata, labels or owner references of the wrong JSON type, the path
/// starting at its index in `existing`.
pub fn orphaned_deployments(
    owner: &CsvOwner,
    strategy: &[StrategyDeployment],
    existing: &[Value],
) -> Result<Vec<String>, ShapeError> {
    let wanted: BTreeSet<&str> = strategy.iter().map(|e| e.name.as_str()).collect();
    let selector = owner_labels(owner);
    let mut orphans = BTreeSet::new();
    for (i, deployment) in existing.iter().enumerate() {
        let path = format!("[{i}]");
        let Some(meta) = object(as_object(deployment, &path)?, "metadata", &path)? else {
            continue;
        };
        let path = format!("[{i}].metadata");
        let labels = string_map(meta, "labels", &path)?.unwrap_or_default();
        if !selector.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            continue;
        }
        let namespace = string(meta, "namespace", &path)?;
        let name = string(meta, "name", &path)?;
        if (!namespace.is_empty() && namespace != owner.namespace) || wanted.contains(name) {
            continue;
        }
        let references = array(meta, "ownerReferences", &path)?.map_or(&[][..], Vec::as_slice);
        let mut owned = false;
        for (j, reference) in references.iter().enumerate() {
            let at = format!("{path}.ownerReferences[{j}]");
            owned |= string(as_object(reference, &at)?, "uid", &at)? == owner.uid;
        }
        if owned {
            orphans.insert(name.to_owned());
        }
    }
    Ok(orphans.into_iter().collect())
}
