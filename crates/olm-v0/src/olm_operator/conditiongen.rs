//! The OperatorCondition olm-operator keeps for every CSV, and what comes with it (OLM repo
//! `pkg/controller/operators/operatorconditiongenerator_controller.go`,
//! `operatorcondition_controller.go`), plus the name of the Operator aggregate a CSV's objects
//! are labelled with (`pkg/controller/operators/decorators/operator.go`).
//!
//! The flow, one step per function:
//!
//! 1. For each CSV that is not a copy (copies carry
//!    [`crate::olm_operator::status::COPIED_FROM_LABEL`] and are never looked at),
//!    [`operator_condition`] is the OperatorCondition named after it: the operator finds it through
//!    `OPERATOR_CONDITION_NAME`, so one CSV has exactly one.
//! 2. For each OperatorCondition, [`condition_rbac`] is the Role and RoleBinding that let the
//!    operator's ServiceAccounts write to that one object and no other.
//! 3. For each Deployment the OperatorCondition names, [`ensure_condition_env`] puts
//!    `OPERATOR_CONDITION_NAME` back into its containers: the Deployment is built with it
//!    ([`crate::olm_operator::strategy::deployment_for_spec`]), but anyone may edit it out
//!    afterwards.
//! 4. [`operator_name`] and [`component_label_key`] name the Operator a Subscription's objects
//!    are gathered under.
//!
//! Caveats, for the caller that writes these objects: upstream writes an existing
//! OperatorCondition only when its owner references, `spec.deployments` or
//! `spec.serviceAccounts` differ, and then overwrites just those three (an administrator's
//! `spec.overrides` and the operator's `spec.conditions` survive); an existing Role only when no
//! owner reference carries the OperatorCondition's uid or its rules differ (owner references
//! and rules overwritten); an existing RoleBinding likewise for owner, `roleRef` and
//! `subjects`. Labels of existing objects are left as found.
//!
//! Not here: mirroring `spec.conditions` into `status` and the upgrade gate
//! ([`crate::olm_operator::operatorcondition`]).

use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use olm_v0_api::v1alpha1::{
    NamedInstallStrategy, StrategyDeploymentPermissions, StrategyDetailsDeployment,
};
use olm_v0_api::v2::OperatorCondition;
use serde_json::{Map, Value, json};

use crate::olm_operator::copied::COMPONENT_LABEL_PREFIX;
use crate::olm_operator::inject::{ShapeError, array, as_object, env_var, object, string};
use crate::olm_operator::operatorgroup::MANAGED_LABEL;
use crate::olm_operator::strategy::{CSV_KIND, CsvOwner, OPERATOR_CONDITION_ENV, owner_reference};

/// The OperatorCondition version olm-operator writes.
pub const CONDITION_API_VERSION: &str = "operators.coreos.com/v2";
/// The OperatorCondition kind, in its owner references.
pub const CONDITION_KIND: &str = "OperatorCondition";
/// The ServiceAccount pods run as when a CSV names none, and so the one its OperatorCondition
/// lists then.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
/// The longest name part of a label key Kubernetes accepts.
const LABEL_NAME_MAX: usize = 63;

/// Why an Operator has no component label key; the messages are upstream's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ComponentLabelKeyError {
    /// The Operator's name is empty.
    #[error("cannot generate component label key: empty name field")]
    EmptyName,
    /// Nothing is left of the name once cut to 63 characters and stripped of trailing `.`,
    /// `-` and `_`.
    #[error("cannot generate component label key: unsupported name field")]
    UnsupportedName,
}

/// The OperatorCondition of the CSV `owner`, whose install strategy is `install`: named after
/// the CSV in its namespace, controlled by it (so deleting the CSV collects it, and a change to
/// it wakes the CSV's reconciler), with no labels (the Operator aggregate adds its own later).
///
/// `spec.serviceAccounts` are the `serviceAccountName`s of `clusterPermissions` then of
/// `permissions`, in order, empty names skipped and repeats kept (as upstream: a name in both
/// lists appears twice); `["default"]` when there are none, since the pods then run as
/// `default`. `spec.deployments` are the strategy's deployment names, empty ones skipped, left
/// out when there are none (Go's `omitempty`). The strategy's name is not checked: upstream
/// reads the lists whatever it says.
pub fn operator_condition(owner: &CsvOwner, install: &NamedInstallStrategy) -> Value {
    let details = install.strategy_spec.as_ref();
    let accounts = |list: fn(&StrategyDetailsDeployment) -> &[StrategyDeploymentPermissions]| {
        details
            .map(list)
            .unwrap_or_default()
            .iter()
            .map(|p| p.service_account_name.as_str())
            .filter(|name| !name.is_empty())
    };
    let mut accounts: Vec<&str> = accounts(|d| &d.cluster_permissions)
        .chain(accounts(|d| &d.permissions))
        .collect();
    if accounts.is_empty() {
        accounts.push(DEFAULT_SERVICE_ACCOUNT);
    }
    let deployments: Vec<&str> = details
        .map(|d| d.deployment_specs.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|d| d.name.as_str())
        .filter(|name| !name.is_empty())
        .collect();

    let mut reference = owner_reference(owner);
    if let Value::Object(r) = &mut reference {
        r.insert("controller".to_owned(), Value::Bool(true));
    }
    let mut spec = Map::new();
    spec.insert("serviceAccounts".to_owned(), json!(accounts));
    if !deployments.is_empty() {
        spec.insert("deployments".to_owned(), json!(deployments));
    }
    json!({
        "apiVersion": CONDITION_API_VERSION,
        "kind": CONDITION_KIND,
        "metadata": {
            "name": owner.name,
            "namespace": owner.namespace,
            "ownerReferences": [reference],
        },
        "spec": spec,
    })
}

/// The Role and RoleBinding, both named after `condition` in its namespace: the Role grants
/// `get`, `update` and `patch` on that one OperatorCondition, the binding gives it to each of
/// `spec.serviceAccounts` (in the binding's namespace, which is why the subjects name none).
/// Both are labelled `olm.managed: "true"`, without which olm-operator's cache does not see
/// them, and controlled by the OperatorCondition (by its uid), so they go with it and a
/// deleted one is recreated.
pub fn condition_rbac(condition: &OperatorCondition) -> (Role, RoleBinding) {
    let name = condition.metadata.name.clone().unwrap_or_default();
    let metadata = ObjectMeta {
        name: Some(name.clone()),
        namespace: condition.metadata.namespace.clone(),
        labels: Some([(MANAGED_LABEL.to_owned(), "true".to_owned())].into()),
        owner_references: Some(vec![OwnerReference {
            api_version: CONDITION_API_VERSION.to_owned(),
            kind: CONDITION_KIND.to_owned(),
            name: name.clone(),
            uid: condition.metadata.uid.clone().unwrap_or_default(),
            controller: Some(true),
            block_owner_deletion: Some(false),
        }]),
        ..ObjectMeta::default()
    };
    let role = Role {
        metadata: metadata.clone(),
        rules: Some(vec![PolicyRule {
            verbs: ["get", "update", "patch"].map(str::to_owned).to_vec(),
            api_groups: Some(vec!["operators.coreos.com".to_owned()]),
            resources: Some(vec!["operatorconditions".to_owned()]),
            resource_names: Some(vec![name.clone()]),
            ..PolicyRule::default()
        }]),
    };
    let subjects = condition
        .spec
        .service_accounts
        .iter()
        .map(|sa| Subject {
            kind: "ServiceAccount".to_owned(),
            name: sa.clone(),
            ..Subject::default()
        })
        .collect();
    let binding = RoleBinding {
        metadata,
        subjects: Some(subjects),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".to_owned()),
            kind: "Role".to_owned(),
            name,
        },
    };
    (role, binding)
}

/// Puts `OPERATOR_CONDITION_NAME=<condition>` into every container (init containers are left
/// alone, as upstream leaves them) of `deployment`, one of those its OperatorCondition lists;
/// `true` when the Deployment changed and must be written.
///
/// Only a Deployment whose first `ClusterServiceVersion` owner reference names `condition` is
/// touched: an OperatorCondition may list any Deployment, and must not point another CSV's
/// operator at itself. In each container the first variable of that name gets the value (its
/// other fields, a `valueFrom` too, are kept as upstream keeps them); a container without one
/// gets it appended.
///
/// # Errors
///
/// A part of the Deployment on the way (owner references, pod spec, containers, `env`, an entry's
/// `name` or `value`) that has the wrong JSON type, with its path; nothing is changed then.
pub fn ensure_condition_env(deployment: &mut Value, condition: &str) -> Result<bool, ShapeError> {
    if csv_owner(deployment)? != Some(condition) {
        return Ok(false);
    }
    let plan = env_plan(deployment, condition)?;
    if plan.iter().all(|step| matches!(step, EnvStep::Keep)) {
        return Ok(false);
    }
    let Some(containers) = containers_mut(deployment) else {
        return Ok(false);
    };
    for (container, step) in containers.iter_mut().zip(plan) {
        let Value::Object(container) = container else {
            continue;
        };
        match step {
            EnvStep::Keep => {}
            EnvStep::Set(j) => {
                if let Some(Value::Array(env)) = container.get_mut("env")
                    && let Some(Value::Object(var)) = env.get_mut(j)
                {
                    var.insert("value".to_owned(), Value::String(condition.to_owned()));
                }
            }
            EnvStep::Append => match container.get_mut("env") {
                Some(Value::Array(env)) => env.push(env_var(OPERATOR_CONDITION_ENV, condition)),
                _ => {
                    container.insert(
                        "env".to_owned(),
                        Value::Array(vec![env_var(OPERATOR_CONDITION_ENV, condition)]),
                    );
                }
            },
        }
    }
    Ok(true)
}

/// What one container needs.
enum EnvStep {
    /// It has the variable with the value.
    Keep,
    /// Its `env[j]` has the name and another value.
    Set(usize),
    /// It lacks the variable.
    Append,
}

/// The name in the first `ClusterServiceVersion` owner reference of `deployment`.
fn csv_owner(deployment: &Value) -> Result<Option<&str>, ShapeError> {
    let Some(meta) = object(as_object(deployment, "")?, "metadata", "")? else {
        return Ok(None);
    };
    for (i, reference) in array(meta, "ownerReferences", "metadata")?
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("metadata.ownerReferences[{i}]");
        let reference = as_object(reference, &at)?;
        if string(reference, "kind", &at)? == CSV_KIND {
            return string(reference, "name", &at).map(Some);
        }
    }
    Ok(None)
}

/// Each container's [`EnvStep`], read before anything is changed so that a bad shape leaves
/// the Deployment as it was.
fn env_plan(deployment: &Value, condition: &str) -> Result<Vec<EnvStep>, ShapeError> {
    let mut at = Some(as_object(deployment, "")?);
    for (key, path) in [
        ("spec", ""),
        ("template", "spec"),
        ("spec", "spec.template"),
    ] {
        at = match at {
            Some(m) => object(m, key, path)?,
            None => None,
        };
    }
    let Some(pod) = at else {
        return Ok(Vec::new());
    };
    let containers = array(pod, "containers", "spec.template.spec")?;
    let mut plan = Vec::new();
    for (i, container) in containers.into_iter().flatten().enumerate() {
        let path = format!("spec.template.spec.containers[{i}]");
        let container = as_object(container, &path)?;
        let mut step = EnvStep::Append;
        for (j, var) in array(container, "env", &path)?
            .into_iter()
            .flatten()
            .enumerate()
        {
            let at = format!("{path}.env[{j}]");
            let var = as_object(var, &at)?;
            let name = string(var, "name", &at)?;
            let value = string(var, "value", &at)?;
            if matches!(step, EnvStep::Append) && name == OPERATOR_CONDITION_ENV {
                step = if value == condition {
                    EnvStep::Keep
                } else {
                    EnvStep::Set(j)
                };
            }
        }
        plan.push(step);
    }
    Ok(plan)
}

/// `spec.template.spec.containers` of `deployment`, when every level is there.
fn containers_mut(deployment: &mut Value) -> Option<&mut Vec<Value>> {
    match deployment
        .get_mut("spec")?
        .get_mut("template")?
        .get_mut("spec")?
        .get_mut("containers")?
    {
        Value::Array(items) => Some(items),
        _ => None,
    }
}

/// The Operator a Subscription for `package` in `namespace` belongs to: `<package>.<namespace>`,
/// or `<package>` alone when the namespace is empty (all namespaces). Not truncated: only the
/// label key is.
pub fn operator_name(package: &str, namespace: &str) -> String {
    if namespace.is_empty() {
        package.to_owned()
    } else {
        format!("{package}.{namespace}")
    }
}

/// The label (`operators.coreos.com/<name>`, value `""`) marking the objects of the Operator
/// `name`. A label key's name part may be at most 63 characters and must end in an
/// alphanumeric, so a longer name is cut to 63 and then stripped of trailing `.`, `-` and `_`;
/// a name of 63 or fewer is used as it is, whatever it ends in (as upstream).
///
/// Upstream cuts at byte 63; a name with a multi-byte character across that byte (never a valid
/// Kubernetes name) is cut before the character here instead.
///
/// # Errors
///
/// [`ComponentLabelKeyError::EmptyName`] for an empty name,
/// [`ComponentLabelKeyError::UnsupportedName`] when cutting and stripping leave nothing.
pub fn component_label_key(name: &str) -> Result<String, ComponentLabelKeyError> {
    if name.is_empty() {
        return Err(ComponentLabelKeyError::EmptyName);
    }
    let mut key = name;
    if key.len() > LABEL_NAME_MAX {
        let mut end = LABEL_NAME_MAX;
        while !key.is_char_boundary(end) {
            end -= 1;
        }
        key = key[..end].trim_end_matches(['.', '-', '_']);
        if key.is_empty() {
            return Err(ComponentLabelKeyError::UnsupportedName);
        }
    }
    Ok(format!("{COMPONENT_LABEL_PREFIX}{key}"))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use olm_v0_api::v1alpha1::StrategyDeploymentSpec;

    use super::*;

    fn owner() -> CsvOwner {
        CsvOwner {
            name: "csv-a".into(),
            namespace: "ns-a".into(),
            uid: "csv-uid".into(),
            annotations: BTreeMap::new(),
        }
    }

    fn install(
        cluster: &[&str],
        namespaced: &[&str],
        deployments: &[&str],
    ) -> NamedInstallStrategy {
        let perms = |names: &[&str]| -> Vec<StrategyDeploymentPermissions> {
            names
                .iter()
                .map(|n| StrategyDeploymentPermissions {
                    service_account_name: (*n).to_owned(),
                    rules: Vec::new(),
                })
                .collect()
        };
        NamedInstallStrategy {
            strategy_name: "deployment".into(),
            strategy_spec: Some(StrategyDetailsDeployment {
                cluster_permissions: perms(cluster),
                permissions: perms(namespaced),
                deployment_specs: deployments
                    .iter()
                    .map(|n| StrategyDeploymentSpec {
                        name: (*n).to_owned(),
                        ..StrategyDeploymentSpec::default()
                    })
                    .collect(),
            }),
        }
    }

    /// Vectors of upstream's `operatorconditiongenerator_controller_test.go`: no ServiceAccount
    /// → `default`; cluster permissions' accounts before namespaced ones; every deployment.
    #[test]
    fn generated_condition() {
        /// Cluster accounts, namespaced accounts, deployments.
        type Strategy = [&'static [&'static str]; 3];
        let cases: &[(Strategy, Value, Value)] = &[
            ([&[], &[], &["dep"]], json!(["default"]), json!(["dep"])),
            (
                [&["sa-1", "sa-2"], &["sa-3", "sa-4"], &["dep", "dep2"]],
                json!(["sa-1", "sa-2", "sa-3", "sa-4"]),
                json!(["dep", "dep2"]),
            ),
            (
                [&["sa", ""], &["sa"], &[""]],
                json!(["sa", "sa"]),
                Value::Null,
            ),
        ];
        for ([cluster, namespaced, deps], accounts, deployments) in cases {
            let got = operator_condition(&owner(), &install(cluster, namespaced, deps));
            assert_eq!(got["spec"]["serviceAccounts"], *accounts);
            assert_eq!(got["spec"]["deployments"], *deployments);
        }
        let got = operator_condition(&owner(), &install(&[], &[], &["dep"]));
        assert_eq!(
            got,
            json!({
                "apiVersion": "operators.coreos.com/v2",
                "kind": "OperatorCondition",
                "metadata": {
                    "name": "csv-a",
                    "namespace": "ns-a",
                    "ownerReferences": [{
                        "apiVersion": "operators.coreos.com/v1alpha1",
                        "kind": "ClusterServiceVersion",
                        "name": "csv-a",
                        "uid": "csv-uid",
                        "controller": true,
                        "blockOwnerDeletion": false,
                    }],
                },
                "spec": {"serviceAccounts": ["default"], "deployments": ["dep"]},
            })
        );
        // No strategy spec: the pods run as `default`, and there is no Deployment to list.
        let bare = NamedInstallStrategy {
            strategy_name: "deployment".into(),
            strategy_spec: None,
        };
        assert_eq!(
            operator_condition(&owner(), &bare)["spec"],
            json!({"serviceAccounts": ["default"]})
        );
    }

    /// Vectors of upstream's `operatorcondition_controller_test.go` ("creates and recreates the
    /// expected Role/RoleBinding").
    #[test]
    fn role_and_binding() {
        let condition: OperatorCondition = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v2",
            "kind": "OperatorCondition",
            "metadata": {"name": "test", "namespace": "ns", "uid": "oc-uid"},
            "spec": {"serviceAccounts": ["serviceaccount"], "deployments": []},
        }))
        .unwrap();
        let (role, binding) = condition_rbac(&condition);
        let (role, binding) = (
            serde_json::to_value(role).unwrap(),
            serde_json::to_value(binding).unwrap(),
        );
        let meta = json!({
            "name": "test",
            "namespace": "ns",
            "labels": {"olm.managed": "true"},
            "ownerReferences": [{
                "apiVersion": "operators.coreos.com/v2",
                "kind": "OperatorCondition",
                "name": "test",
                "uid": "oc-uid",
                "controller": true,
                "blockOwnerDeletion": false,
            }],
        });
        assert_eq!(
            role,
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": meta,
                "rules": [{
                    "verbs": ["get", "update", "patch"],
                    "apiGroups": ["operators.coreos.com"],
                    "resources": ["operatorconditions"],
                    "resourceNames": ["test"],
                }],
            })
        );
        assert_eq!(
            binding,
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": meta,
                "subjects": [{"kind": "ServiceAccount", "name": "serviceaccount"}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "test"},
            })
        );
    }

    fn deployment(owner: &str, env: Option<Value>) -> Value {
        let mut container = json!({"name": "web", "image": "nginx"});
        if let (Some(env), Value::Object(c)) = (env, &mut container) {
            c.insert("env".into(), env);
        }
        json!({
            "metadata": {"name": "deployment", "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "test"},
                {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion", "name": owner},
            ]},
            "spec": {"template": {"spec": {"containers": [container], "initContainers": [{"name": "init"}]}}},
        })
    }

    /// Vectors of upstream's `operatorcondition_controller_test.go` (`ensureEnvVarIsPresent`,
    /// and "does not inject"/"should always inject" for a Deployment of a CSV of another or the
    /// same name), with the variable upstream injects.
    #[test]
    fn condition_env() {
        let var = |v: &str| json!({"name": "OPERATOR_CONDITION_NAME", "value": v});
        let other = json!({"name": "foo2", "value": "bar2"});
        let cases: Vec<(&str, Option<Value>, bool, Value)> = vec![
            // already present: unchanged
            (
                "test",
                Some(json!([var("test"), other])),
                false,
                json!([var("test"), other]),
            ),
            // none yet: added
            ("test", None, true, json!([var("test")])),
            ("test", Some(json!([])), true, json!([var("test")])),
            // others only: appended after them
            (
                "test",
                Some(json!([{"name": "notFoo", "value": "bar"}])),
                true,
                json!([{"name": "notFoo", "value": "bar"}, var("test")]),
            ),
            // another value: replaced in place, the first of the name only
            (
                "test",
                Some(json!([other, var("old"), var("older")])),
                true,
                json!([other, var("test"), var("older")]),
            ),
            // the Deployment of a CSV named otherwise: left alone
            ("testdifferent", None, false, Value::Null),
        ];
        for (condition, env, changed, want) in cases {
            let mut d = deployment("test", env);
            assert_eq!(ensure_condition_env(&mut d, condition), Ok(changed));
            let c = &d["spec"]["template"]["spec"];
            assert_eq!(c["containers"][0]["env"], want, "{condition}");
            assert_eq!(c["initContainers"][0], json!({"name": "init"}));
        }
        let mut bare = json!({"metadata": {"name": "d"}});
        assert_eq!(ensure_condition_env(&mut bare, "test"), Ok(false));
        let mut bad = deployment("test", Some(json!([{"name": 1}])));
        let before = bad.clone();
        let Err(e) = ensure_condition_env(&mut bad, "test") else {
            panic!("a number is no name");
        };
        assert_eq!(e.path, "spec.template.spec.containers[0].env[0].name");
        assert_eq!(bad, before);
    }

    /// Vectors of upstream's `pkg/controller/operators/decorators/operator_test.go`
    /// (`TestComponentLabelKey`), and `NewPackageOperator`'s naming.
    #[test]
    fn operator_names() {
        assert_eq!(operator_name("etcd", "operators"), "etcd.operators");
        assert_eq!(operator_name("etcd", ""), "etcd");
        let cases: &[(&str, Result<&str, ComponentLabelKeyError>)] = &[
            ("my-operator", Ok("operators.coreos.com/my-operator")),
            (
                "this-is-my-operator-its-the-coolest-you-got-a-problem-with-that-come-at-me-bro",
                Ok(
                    "operators.coreos.com/this-is-my-operator-its-the-coolest-you-got-a-problem-with-that",
                ),
            ),
            (
                "this-is-my-operator-its-the-coolest-you-got-a-problem-with----...---___...---",
                Ok(
                    "operators.coreos.com/this-is-my-operator-its-the-coolest-you-got-a-problem-with",
                ),
            ),
            (
                "----...---___...-------...---___...-------...---___...-------...---___...---",
                Err(ComponentLabelKeyError::UnsupportedName),
            ),
            ("", Err(ComponentLabelKeyError::EmptyName)),
            // 63 or fewer: kept whole, a trailing dash too
            ("short-", Ok("operators.coreos.com/short-")),
        ];
        for (name, want) in cases {
            assert_eq!(
                component_label_key(name),
                want.clone().map(str::to_owned),
                "{name}"
            );
        }
        let wide = format!("{}é-tail-that-goes-on", "a".repeat(62));
        assert_eq!(
            component_label_key(&wide),
            Ok(format!("operators.coreos.com/{}", "a".repeat(62)))
        );
        assert_eq!(
            ComponentLabelKeyError::EmptyName.to_string(),
            "cannot generate component label key: empty name field"
        );
    }
}
