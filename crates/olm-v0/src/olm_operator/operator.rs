//! `Operator` objects (operators.coreos.com/v1): an installed operator's components, found by
//! the `operators.coreos.com/<name>` label (OLM repo `pkg/controller/operators/decorators`,
//! `operator_controller.go` and `adoption_controller.go`).
//!
//! A component is any object of [`COMPONENT_KINDS`] carrying the operator's label key (the
//! value is empty). A CSV labelled as an operator's hands that label on to what belongs to it:
//! the objects it owns (by owner reference or owner labels) and the CRDs it owns by name.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::olm_operator::strategy::CSV_KIND;

/// The prefix of every component label key.
pub const COMPONENT_LABEL_PREFIX: &str = "operators.coreos.com/";

/// The longest label name (the part after the prefix).
const LABEL_NAME_LIMIT: usize = 63;

/// A kind whose objects can be components.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ComponentKind {
    /// `apiVersion`.
    pub api_version: &'static str,
    /// `kind`.
    pub kind: &'static str,
    /// The resource's plural name.
    pub plural: &'static str,
    /// Not namespaced.
    pub cluster_scoped: bool,
    /// Read as metadata only (upstream's `PartialObjectMetadataList`): no conditions.
    pub metadata_only: bool,
}

const fn kind(
    api_version: &'static str,
    kind: &'static str,
    plural: &'static str,
    cluster_scoped: bool,
    metadata_only: bool,
) -> ComponentKind {
    ComponentKind {
        api_version,
        kind,
        plural,
        cluster_scoped,
        metadata_only,
    }
}

/// Every component kind, in upstream's `componentLists` order.
pub const COMPONENT_KINDS: [ComponentKind; 16] = [
    kind("apps/v1", "Deployment", "deployments", false, false),
    kind("v1", "Service", "services", false, false),
    kind("v1", "Namespace", "namespaces", true, false),
    kind(
        "apiregistration.k8s.io/v1",
        "APIService",
        "apiservices",
        true,
        false,
    ),
    kind(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        true,
        false,
    ),
    kind(
        "operators.coreos.com/v1alpha1",
        "Subscription",
        "subscriptions",
        false,
        false,
    ),
    kind(
        "operators.coreos.com/v1alpha1",
        "InstallPlan",
        "installplans",
        false,
        false,
    ),
    kind(
        "operators.coreos.com/v1alpha1",
        CSV_KIND,
        "clusterserviceversions",
        false,
        false,
    ),
    kind(
        "operators.coreos.com/v2",
        "OperatorCondition",
        "operatorconditions",
        false,
        false,
    ),
    kind("v1", "Secret", "secrets", false, true),
    kind("v1", "ConfigMap", "configmaps", false, true),
    kind("v1", "ServiceAccount", "serviceaccounts", false, true),
    kind("rbac.authorization.k8s.io/v1", "Role", "roles", false, true),
    kind(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "rolebindings",
        false,
        true,
    ),
    kind(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "clusterroles",
        true,
        true,
    ),
    kind(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        true,
        true,
    ),
];

/// Why an operator's name gives no label key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelKeyError {
    /// The name is empty.
    #[error("cannot generate component label key: empty name field")]
    Empty,
    /// Cut to 63 characters, nothing but `.`, `_` and `-` is left.
    #[error("cannot generate component label key: unsupported name field")]
    Unsupported,
}

/// `operators.coreos.com/<name>`, the name cut to 63 characters and then stripped of trailing
/// `.`, `_` and `-` (upstream's `ComponentLabelKey`).
///
/// # Errors
///
/// An empty name, or a long one with nothing left after stripping.
pub fn component_label_key(name: &str) -> Result<String, LabelKeyError> {
    if name.is_empty() {
        return Err(LabelKeyError::Empty);
    }
    if name.len() <= LABEL_NAME_LIMIT {
        return Ok(format!("{COMPONENT_LABEL_PREFIX}{name}"));
    }
    // Byte-wise as upstream; a cut inside a character cannot give a valid label anyway.
    let cut = &name.as_bytes()[..LABEL_NAME_LIMIT];
    let kept = cut
        .iter()
        .rposition(|b| !matches!(b, b'.' | b'_' | b'-'))
        .ok_or(LabelKeyError::Unsupported)?;
    Ok(format!(
        "{COMPONENT_LABEL_PREFIX}{}",
        String::from_utf8_lossy(&cut[..=kept])
    ))
}

/// The operators an object's labels name (upstream's `OperatorNames`), sorted.
pub fn operator_names(labels: &BTreeMap<String, String>) -> Vec<String> {
    labels
        .keys()
        .filter_map(|k| k.strip_prefix(COMPONENT_LABEL_PREFIX))
        .map(str::to_owned)
        .collect()
}

/// The Operator of a package subscribed in `namespace`: `<package>.<namespace>` (upstream's
/// `NewPackageOperator`; the package alone for all namespaces).
pub fn package_operator_name(package: &str, namespace: &str) -> String {
    if namespace.is_empty() {
        package.to_owned()
    } else {
        format!("{package}.{namespace}")
    }
}

/// What a Subscription hands its Operator's label to (upstream's adoption controller,
/// `ReconcileSubscription`): itself, its installed CSV and its InstallPlan, each only when it
/// lacks the label. The CSV hands it on to what it owns in turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionAdoption {
    /// `operators.coreos.com/<package>.<namespace>`.
    pub label_key: String,
    /// The Subscription lacks the label.
    pub subscription: bool,
    /// The installed CSV to label, when it exists and lacks it.
    pub csv: Option<String>,
    /// The InstallPlan to label, when it exists and lacks it.
    pub install_plan: Option<String>,
}

/// [`SubscriptionAdoption`] for a Subscription to `package` in `namespace` with `labels`; its
/// installed CSV and InstallPlan each as `(name, labels)` when they exist.
///
/// # Errors
///
/// A package name that gives no label key (see [`component_label_key`]).
pub fn subscription_adoption(
    package: &str,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    csv: Option<(&str, &BTreeMap<String, String>)>,
    install_plan: Option<(&str, &BTreeMap<String, String>)>,
) -> Result<SubscriptionAdoption, LabelKeyError> {
    let label_key = component_label_key(&package_operator_name(package, namespace))?;
    let lacking = |o: Option<(&str, &BTreeMap<String, String>)>| {
        o.filter(|(_, l)| !l.contains_key(&label_key))
            .map(|(n, _)| n.to_owned())
    };
    Ok(SubscriptionAdoption {
        subscription: !labels.contains_key(&label_key),
        csv: lacking(csv),
        install_plan: lacking(install_plan),
        label_key,
    })
}

/// The labels a new InstallPlan for Subscriptions of `packages` in `namespace` is created with:
/// the component label of each package's Operator, which upstream's adoption controller adds
/// just after creation. Made with them, the plan needs no write once it is complete (upstream's
/// e2e suite checks that a complete plan changes no more). A package giving no label key gets
/// none, as adoption gives it none.
pub fn new_plan_labels<'a>(
    packages: impl IntoIterator<Item = &'a str>,
    namespace: &str,
) -> BTreeMap<String, String> {
    packages
        .into_iter()
        .filter_map(|p| component_label_key(&package_operator_name(p, namespace)).ok())
        .map(|k| (k, String::new()))
        .collect()
}

/// One component as the status lists it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ComponentRef {
    /// `kind`, the first sort key.
    pub kind: String,
    /// `apiVersion`.
    pub api_version: String,
    /// `namespace` (empty for cluster-scoped objects).
    pub namespace: String,
    /// `name`.
    pub name: String,
}

/// A component's conditions: for a CSV one made of its phase (`type`), `True`, its reason,
/// message and times; for other kinds its `status.conditions` in the common shape (type,
/// status, reason, message, lastUpdateTime, lastTransitionTime; other fields dropped).
pub fn component_conditions(kind: &str, object: &Value) -> Vec<Value> {
    let status = &object["status"];
    let pick = |c: &Value, keys: &[&str]| {
        let mut m = Map::new();
        for k in keys {
            if let Some(v) = c.get(*k).filter(|v| !v.is_null()) {
                m.insert((*k).to_owned(), v.clone());
            }
        }
        Value::Object(m)
    };
    if kind == CSV_KIND {
        let mut c = pick(
            status,
            &["reason", "message", "lastUpdateTime", "lastTransitionTime"],
        );
        c["type"] = status.get("phase").cloned().unwrap_or(json!(""));
        c["status"] = json!("True");
        return vec![c];
    }
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            pick(
                c,
                &[
                    "type",
                    "status",
                    "reason",
                    "message",
                    "lastUpdateTime",
                    "lastTransitionTime",
                ],
            )
        })
        .collect()
}

/// An Operator's `status`: the label selector of its components and a reference to each,
/// sorted by kind, apiVersion, namespace and name, with its conditions.
pub fn status(label_key: &str, components: &[(ComponentRef, Vec<Value>)]) -> Value {
    let mut sorted: Vec<&(ComponentRef, Vec<Value>)> = components.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let refs: Vec<Value> = sorted
        .into_iter()
        .map(|(r, conditions)| {
            let mut m = Map::new();
            m.insert("kind".into(), json!(r.kind));
            if !r.namespace.is_empty() {
                m.insert("namespace".into(), json!(r.namespace));
            }
            m.insert("name".into(), json!(r.name));
            m.insert("apiVersion".into(), json!(r.api_version));
            if !conditions.is_empty() {
                m.insert("conditions".into(), Value::Array(conditions.clone()));
            }
            Value::Object(m)
        })
        .collect();
    let mut c = Map::new();
    c.insert(
        "labelSelector".into(),
        json!({"matchExpressions": [{"key": label_key, "operator": "Exists"}]}),
    );
    if !refs.is_empty() {
        c.insert("refs".into(), Value::Array(refs));
    }
    json!({"components": c})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upstream's `TestComponentLabelKey` (decorators/operator_test.go).
    #[test]
    fn label_keys() {
        assert_eq!(
            component_label_key("my-operator").unwrap(),
            "operators.coreos.com/my-operator"
        );
        assert_eq!(
            component_label_key(
                "this-is-my-operator-its-the-coolest-you-got-a-problem-with-that-come-at-me-bro"
            )
            .unwrap(),
            "operators.coreos.com/this-is-my-operator-its-the-coolest-you-got-a-problem-with-that"
        );
        assert_eq!(
            component_label_key(
                "this-is-my-operator-its-the-coolest-you-got-a-problem-with----...---___...---"
            )
            .unwrap(),
            "operators.coreos.com/this-is-my-operator-its-the-coolest-you-got-a-problem-with"
        );
        assert_eq!(
            component_label_key(
                "----...---___...-------...---___...-------...---___...-------...---___...---"
            ),
            Err(LabelKeyError::Unsupported)
        );
        assert_eq!(component_label_key(""), Err(LabelKeyError::Empty));
    }

    /// Upstream's `TestOperatorNames`: every prefixed key, nothing else.
    #[test]
    fn names_from_labels() {
        let labels = BTreeMap::from([
            ("operators.coreos.com/lobster".to_owned(), String::new()),
            ("operators.coreos.com/cod".to_owned(), String::new()),
            ("app".to_owned(), "x".to_owned()),
        ]);
        assert_eq!(operator_names(&labels), ["cod", "lobster"]);
        assert_eq!(package_operator_name("etcd", "ops"), "etcd.ops");
        assert_eq!(package_operator_name("etcd", ""), "etcd");
    }

    /// Upstream's `adoption_controller.go`: a Subscription labels itself, its installed CSV and
    /// its InstallPlan `operators.coreos.com/<package>.<namespace>`.
    #[test]
    fn subscriptions_adopt_what_they_installed() {
        let none = BTreeMap::new();
        let held = BTreeMap::from([("operators.coreos.com/etcd.ops".to_owned(), String::new())]);
        let a = subscription_adoption(
            "etcd",
            "ops",
            &none,
            Some(("etcd.v1", &none)),
            Some(("install-abc", &held)),
        )
        .unwrap();
        assert_eq!(
            a,
            SubscriptionAdoption {
                label_key: "operators.coreos.com/etcd.ops".into(),
                subscription: true,
                csv: Some("etcd.v1".into()),
                install_plan: None,
            }
        );
        let done =
            subscription_adoption("etcd", "ops", &held, Some(("etcd.v1", &held)), None).unwrap();
        assert!(!done.subscription && done.csv.is_none() && done.install_plan.is_none());
        assert_eq!(
            subscription_adoption("", "", &none, None, None),
            Err(LabelKeyError::Empty)
        );
        // A plan made with its Subscriptions' labels leaves adoption nothing to write.
        let made = new_plan_labels(["etcd", "prometheus"], "ops");
        assert_eq!(
            made.keys().collect::<Vec<_>>(),
            [
                "operators.coreos.com/etcd.ops",
                "operators.coreos.com/prometheus.ops"
            ]
        );
        let adopted =
            subscription_adoption("etcd", "ops", &held, None, Some(("install-abc", &made)))
                .unwrap();
        assert_eq!(adopted.install_plan, None);
    }

    /// Upstream's `TestAddComponents` "Empty/ComponentsAdded": a Namespace, a Pod and a CSV
    /// named `puffin`, sorted by kind, the CSV's phase as its condition.
    #[test]
    fn puffin_status() {
        let r = |kind: &str, api: &str, ns: &str| ComponentRef {
            kind: kind.into(),
            api_version: api.into(),
            namespace: ns.into(),
            name: if kind == "Namespace" {
                "atlantic".into()
            } else {
                "puffin".into()
            },
        };
        let pod = json!({"status": {"conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null}]}});
        let csv = json!({"status": {"phase": "Succeeded", "reason": "InstallSucceeded", "message": "this puffin is happy"}});
        let components = vec![
            (
                r("Namespace", "v1", ""),
                component_conditions("Namespace", &json!({})),
            ),
            (
                r("Pod", "v1", "atlantic"),
                component_conditions("Pod", &pod),
            ),
            (
                r(CSV_KIND, "operators.coreos.com/v1alpha1", "atlantic"),
                component_conditions(CSV_KIND, &csv),
            ),
        ];
        let key = component_label_key("puffin").unwrap();
        assert_eq!(
            status(&key, &components),
            json!({"components": {
                "labelSelector": {"matchExpressions": [{"key": "operators.coreos.com/puffin", "operator": "Exists"}]},
                "refs": [
                    {"kind": "ClusterServiceVersion", "namespace": "atlantic", "name": "puffin",
                     "apiVersion": "operators.coreos.com/v1alpha1",
                     "conditions": [{"type": "Succeeded", "status": "True", "reason": "InstallSucceeded", "message": "this puffin is happy"}]},
                    {"kind": "Namespace", "name": "atlantic", "apiVersion": "v1"},
                    {"kind": "Pod", "namespace": "atlantic", "name": "puffin", "apiVersion": "v1",
                     "conditions": [{"type": "Ready", "status": "True"}]},
                ],
            }})
        );
    }

    /// A CSV without a status still gets its one condition, with an empty type (upstream's jq
    /// query makes it from nulls).
    #[test]
    fn csv_without_status() {
        assert_eq!(
            component_conditions(CSV_KIND, &json!({})),
            vec![json!({"type": "", "status": "True"})]
        );
    }
}
