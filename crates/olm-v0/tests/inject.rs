//! Subscription config injection against the OLM repo's vectors
//! (`pkg/controller/operators/olm/overrides/inject/inject_test.go`): one test per upstream test
//! function, each upstream case kept under its name (upstream repeats three names; so do the
//! tables). Upstream's typed Go structs are written here as the JSON Go would encode them.
//!
//! After the ported tables come the cases of the OLM documentation ("Overriding Operator Pod
//! Affinity Configuration"), where it decides against upstream's code, and the cases of
//! [`Overrides::apply`], which upstream tests only through its e2e suite.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use olm_v0::olm_operator::inject::{
    AFFINITY_PARTS, ClusterProxy, Overrides, ShapeError, SubscriptionConfig, inject_annotations,
    inject_env, inject_env_from, inject_node_selector, inject_resources, inject_tolerations,
    inject_volume_mounts, inject_volumes, override_affinity, owner_subscription,
};
use olm_v0_api::v1alpha1::Subscription;
use serde_json::{Map, Value, json};

fn obj(v: &mut Value) -> &mut Map<String, Value> {
    v.as_object_mut().expect("an object")
}

fn list(v: Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items,
        other => panic!("not an array: {other}"),
    }
}

fn strings(v: Value) -> BTreeMap<String, String> {
    serde_json::from_value(v).expect("a string map")
}

/// One case: a name, the pod spec (or Deployment) before, what is injected, and after.
struct Case<A> {
    name: &'static str,
    before: Value,
    arg: A,
    after: Value,
}

fn case<A>(name: &'static str, before: Value, arg: A, after: Value) -> Case<A> {
    Case {
        name,
        before,
        arg,
        after,
    }
}

/// Runs every case through `f` on the case's object and compares with the expected object.
fn run<A>(
    cases: Vec<Case<A>>,
    f: impl Fn(&mut Map<String, Value>, &A) -> Result<(), ShapeError>,
) -> usize {
    let n = cases.len();
    for c in cases {
        let mut got = c.before;
        f(obj(&mut got), &c.arg).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        assert_eq!(got, c.after, "{}", c.name);
    }
    n
}

fn default_env_vars() -> Value {
    json!([
        {"name": "HTTP_PROXY", "value": "http://foo.com:8080"},
        {"name": "HTTPS_PROXY", "value": "https://foo.com:443"},
        {"name": "NO_PROXY", "value": "a.com,b.com"},
    ])
}

fn default_env_from_vars() -> Value {
    json!([
        {"prefix": "test"},
        {"configMapRef": {"name": "configmapForTest"}},
        {"secretRef": {"name": "secretForTest"}},
    ])
}

fn default_volume_mounts() -> Value {
    json!([{"name": "foo", "mountPath": "/bar"}])
}

fn default_volumes() -> Value {
    json!([{"name": "foo"}])
}

fn default_tolerations() -> Value {
    json!([{
        "key": "my-toleration-key",
        "effect": "NoSchedule",
        "value": "my-toleration-value",
        "operator": "Equal",
    }])
}

fn default_resources() -> Value {
    json!({
        "limits": {"cpu": "100m"},
        "requests": {"cpu": "100m", "memory": "128Mi"},
    })
}

fn default_node_selector() -> Value {
    json!({"all": "your", "base": "are", "belong": "to", "us": ""})
}

/// `a ++ b`, both arrays.
fn concat(a: Value, b: Value) -> Value {
    let mut items = list(a);
    items.extend(list(b));
    Value::Array(items)
}

/// Upstream `TestInjectVolumeMountIntoDeployment`.
#[test]
fn inject_volume_mount_into_deployment() {
    let cases = vec![
        case(
            "EmptyVolumeMounts",
            json!({"containers": []}),
            json!([]),
            json!({"containers": []}),
        ),
        case(
            "WithContainerHasNoVolumeMounts",
            json!({"containers": [{}]}),
            default_volume_mounts(),
            json!({"containers": [{"volumeMounts": default_volume_mounts()}]}),
        ),
        case(
            "WithContainerHasVolumeMountsEmptyDefaults",
            json!({"containers": [{"volumeMounts": default_volume_mounts()}]}),
            json!([]),
            json!({"containers": [{"volumeMounts": default_volume_mounts()}]}),
        ),
        case(
            "WithContainerHasNonOverlappingEnvVar",
            json!({"containers": [{"volumeMounts": [{"name": "bar", "mountPath": "/foo"}]}]}),
            default_volume_mounts(),
            json!({"containers": [{"volumeMounts": [
                {"name": "bar", "mountPath": "/foo"},
                {"name": "foo", "mountPath": "/bar"},
            ]}]}),
        ),
        case(
            "WithContainerHasOverlappingVolumeMounts",
            json!({"containers": [{"volumeMounts": [{"name": "foo", "mountPath": "/barbar"}]}]}),
            default_volume_mounts(),
            json!({"containers": [{"volumeMounts": [{"name": "foo", "mountPath": "/bar"}]}]}),
        ),
    ];
    let n = run(cases, |pod, mounts: &Value| {
        inject_volume_mounts(pod, &list(mounts.clone()))
    });
    assert_eq!(n, 5);
}

/// Upstream `TestInjectVolumeIntoDeployment`.
#[test]
fn inject_volume_into_deployment() {
    let cases = vec![
        case(
            "EmptyVolumeMounts",
            json!({"containers": []}),
            json!([]),
            json!({"containers": []}),
        ),
        case(
            "WithContainerHasNoVolumeMounts",
            json!({}),
            default_volumes(),
            json!({"volumes": default_volumes()}),
        ),
        case(
            "WithContainerHasVolumeMountsEmptyDefaults",
            json!({"volumes": default_volumes()}),
            json!([]),
            json!({"volumes": default_volumes()}),
        ),
        case(
            "WithContainerHasNonOverlappingEnvVar",
            json!({"volumes": [{"name": "bar"}]}),
            default_volumes(),
            json!({"volumes": [{"name": "bar"}, {"name": "foo"}]}),
        ),
        case(
            "WithContainerHasOverlappingVolumeMounts",
            json!({"volumes": [{"name": "foo"}]}),
            default_volumes(),
            json!({"volumes": [{"name": "foo"}]}),
        ),
    ];
    let n = run(cases, |pod, volumes: &Value| {
        inject_volumes(pod, &list(volumes.clone()))
    });
    assert_eq!(n, 5);
}

/// Upstream `TestInjectEnvIntoDeployment`.
#[test]
fn inject_env_into_deployment() {
    let foo = || json!([{"name": "foo", "value": "foo_value"}]);
    let bar = || json!([{"name": "bar", "value": "bar_value"}]);
    let cases = vec![
        case(
            "WithContainerHasNoEnvVar",
            json!({"containers": [{}]}),
            default_env_vars(),
            json!({"containers": [{"env": default_env_vars()}]}),
        ),
        case(
            "WithContainerHasNonOverlappingEnvVar",
            json!({"containers": [{"env": foo()}]}),
            default_env_vars(),
            json!({"containers": [{"env": concat(foo(), default_env_vars())}]}),
        ),
        case(
            "WithContainerHasOverlappingEnvVar",
            json!({"containers": [{"env": concat(foo(), bar())}]}),
            json!([
                {"name": "extra", "value": "extra_value"},
                {"name": "foo", "value": "new_foo_value"},
                {"name": "bar", "value": "new_bar_value"},
            ]),
            json!({"containers": [{"env": [
                {"name": "foo", "value": "new_foo_value"},
                {"name": "bar", "value": "new_bar_value"},
                {"name": "extra", "value": "extra_value"},
            ]}]}),
        ),
        case(
            "WithContainerEnvVarBeingUnset",
            json!({"containers": [{"env": concat(foo(), bar())}]}),
            json!([{"name": "bar", "value": ""}]),
            json!({"containers": [{"env": [
                {"name": "foo", "value": "foo_value"},
                {"name": "bar", "value": ""},
            ]}]}),
        ),
        case(
            "WithMultipleContainers",
            json!({"containers": [{}, {"env": foo()}, {"env": bar()}]}),
            default_env_vars(),
            json!({"containers": [
                {"env": default_env_vars()},
                {"env": concat(foo(), default_env_vars())},
                {"env": concat(bar(), default_env_vars())},
            ]}),
        ),
    ];
    let n = run(cases, |pod, env: &Value| {
        inject_env(pod, &list(env.clone()))
    });
    assert_eq!(n, 5);
}

/// Upstream `TestInjectEnvFromIntoDeployment`.
#[test]
fn inject_env_from_into_deployment() {
    let cases = vec![
        case(
            "WithContainerHasNoEnvFromVar",
            json!({"containers": [{}]}),
            default_env_from_vars(),
            json!({"containers": [{"envFrom": default_env_from_vars()}]}),
        ),
        case(
            "WithContainerHasOverlappingEnvFromVar",
            json!({"containers": [{"envFrom": default_env_from_vars()}]}),
            default_env_from_vars(),
            json!({"containers": [{"envFrom": default_env_from_vars()}]}),
        ),
        case(
            "WithContainerHasNonOverlappingEnvFromVar",
            json!({"containers": [{"envFrom": [{"prefix": "foo"}]}]}),
            default_env_from_vars(),
            json!({"containers": [{"envFrom": concat(json!([{"prefix": "foo"}]), default_env_from_vars())}]}),
        ),
        case(
            "WithMultipleContainers",
            json!({"containers": [
                {},
                {"envFrom": [{"prefix": "foo"}]},
                {"envFrom": [{"prefix": "bar"}]},
            ]}),
            default_env_from_vars(),
            json!({"containers": [
                {"envFrom": default_env_from_vars()},
                {"envFrom": concat(json!([{"prefix": "foo"}]), default_env_from_vars())},
                {"envFrom": concat(json!([{"prefix": "bar"}]), default_env_from_vars())},
            ]}),
        ),
    ];
    let n = run(cases, |pod, env_from: &Value| {
        inject_env_from(pod, &list(env_from.clone()))
    });
    assert_eq!(n, 4);
}

/// Upstream `TestInjectTolerationsIntoDeployment`.
#[test]
fn inject_tolerations_into_deployment() {
    let different = || json!([{"key": "my-different-toleration-key", "operator": "Exists"}]);
    let cases = vec![
        case(
            "WithEmptyTolerations",
            json!({"tolerations": []}),
            json!([]),
            json!({"tolerations": []}),
        ),
        case(
            "WithDeploymentHasNoTolerations",
            json!({"tolerations": []}),
            default_tolerations(),
            json!({"tolerations": default_tolerations()}),
        ),
        case(
            "WithDeploymentHasOneNonOverlappingToleration",
            json!({"tolerations": different()}),
            default_tolerations(),
            json!({"tolerations": concat(different(), default_tolerations())}),
        ),
        case(
            "WithDeploymentHasOneOverlappingToleration",
            json!({"tolerations": default_tolerations()}),
            default_tolerations(),
            json!({"tolerations": default_tolerations()}),
        ),
        case(
            "WithDeploymentHasOverlappingAndNonOverlappingTolerations",
            json!({"tolerations": different()}),
            concat(different(), default_tolerations()),
            json!({"tolerations": concat(different(), default_tolerations())}),
        ),
    ];
    let n = run(cases, |pod, tolerations: &Value| {
        inject_tolerations(pod, &list(tolerations.clone()))
    });
    assert_eq!(n, 5);
}

/// Upstream `TestInjectResourcesIntoDeployment`.
#[test]
fn inject_resources_into_deployment() {
    let cases = vec![
        case(
            "WithNilResources",
            json!({"containers": [{"resources": default_resources()}]}),
            None,
            json!({"containers": [{"resources": default_resources()}]}),
        ),
        case(
            "WithDeploymentHasNoResources",
            json!({"containers": [{"resources": {}}]}),
            Some(default_resources()),
            json!({"containers": [{"resources": default_resources()}]}),
        ),
        case(
            "WithDeploymentHasResources",
            json!({"containers": [{"resources": default_resources()}]}),
            Some(json!({})),
            json!({"containers": [{"resources": {}}]}),
        ),
    ];
    let n = run(cases, |pod, resources: &Option<Value>| {
        inject_resources(pod, resources.as_ref())
    });
    assert_eq!(n, 3);
}

/// Upstream `TestInjectNodeSelectorIntoDeployment`. Its first case, a nil pod spec, has no
/// JSON counterpart; the nearest, a pod spec that is not an object, is an error that leaves the
/// Deployment as it was.
#[test]
fn inject_node_selector_into_deployment() {
    let foo_bar = || json!({"foo": "bar"});

    // "WithNilPodSpec"
    let config = SubscriptionConfig::from_config(&json!({"nodeSelector": foo_bar()})).unwrap();
    let before = json!({"spec": {"template": {"spec": "not a pod spec"}}});
    let mut got = before.clone();
    let err = Overrides {
        config: Some(&config),
        proxy: None,
    }
    .apply(&mut got)
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "spec.template.spec: expected an object, found a string",
        "WithNilPodSpec"
    );
    assert_eq!(got, before, "WithNilPodSpec");

    let cases = vec![
        case(
            "WithEmptyNodeSelector",
            json!({}),
            Some(foo_bar()),
            json!({"nodeSelector": foo_bar()}),
        ),
        case(
            "WithExistingNodeSelector",
            json!({"nodeSelector": default_node_selector()}),
            Some(foo_bar()),
            json!({"nodeSelector": foo_bar()}),
        ),
        case(
            "WithNilNodeSelector",
            json!({"nodeSelector": default_node_selector()}),
            None,
            json!({"nodeSelector": default_node_selector()}),
        ),
        case(
            "WithEmptyNodeSelector",
            json!({"nodeSelector": default_node_selector()}),
            Some(json!({})),
            json!({"nodeSelector": {}}),
        ),
    ];
    let n = run(cases, |pod, selector: &Option<Value>| {
        inject_node_selector(pod, selector.clone().map(strings).as_ref());
        Ok(())
    });
    assert_eq!(n + 1, 5);
}

/// A node affinity requiring field `key` to be one of `values` (`operator`).
fn node_affinity(key: &str, operator: &str, values: &[&str]) -> Value {
    json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": key, "operator": operator, "values": values}]},
    ]}})
}

/// A pod (anti-)affinity requiring `topology_key` over `namespaces`.
fn pod_affinity(topology_key: &str, namespaces: &[&str]) -> Value {
    json!({"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": topology_key, "namespaces": namespaces},
    ]})
}

/// The affinity most upstream cases start from.
fn full_affinity() -> Value {
    json!({
        "nodeAffinity": node_affinity("key", "In", &["val1", "val2"]),
        "podAffinity": pod_affinity("topKey", &["ns1", "ns2"]),
        "podAntiAffinity": pod_affinity("topKey2", &["n3", "ns4"]),
    })
}

fn another_node_affinity() -> Value {
    node_affinity("anotherKey", "Exists", &["val3"])
}

/// Upstream `TestOverrideDeploymentAffinity`. Its first case, a nil pod spec, has no JSON
/// counterpart; the nearest, a pod spec that is not an object, is an error.
#[test]
fn override_deployment_affinity() {
    // "WithNilPodSpec"
    let config = SubscriptionConfig::from_config(&json!({"affinity": {}})).unwrap();
    let before = json!({"spec": {"template": {"spec": 7}}});
    let mut got = before.clone();
    let err = Overrides {
        config: Some(&config),
        proxy: None,
    }
    .apply(&mut got)
    .unwrap_err();
    assert_eq!(
        err,
        ShapeError {
            path: "spec.template.spec".into(),
            expected: "an object",
            found: "a number",
        },
        "WithNilPodSpec"
    );
    assert_eq!(got, before, "WithNilPodSpec");

    let cases = vec![
        case(
            "WithPodSpecWithNoAffinity",
            json!({}),
            Some(json!({"nodeAffinity": node_affinity("key", "In", &["val1", "val2"])})),
            json!({"affinity": {"nodeAffinity": node_affinity("key", "In", &["val1", "val2"])}}),
        ),
        case(
            "OnlyOverrideNodeAffinity",
            json!({"affinity": full_affinity()}),
            Some(json!({"nodeAffinity": another_node_affinity()})),
            json!({"affinity": {
                "nodeAffinity": another_node_affinity(),
                "podAffinity": pod_affinity("topKey", &["ns1", "ns2"]),
                "podAntiAffinity": pod_affinity("topKey2", &["n3", "ns4"]),
            }}),
        ),
        case(
            "OverrideNodeAffinityEmptyPodAffinity",
            json!({"affinity": full_affinity()}),
            Some(json!({"nodeAffinity": another_node_affinity(), "podAffinity": {}})),
            json!({"affinity": {
                "nodeAffinity": another_node_affinity(),
                "podAntiAffinity": pod_affinity("topKey2", &["n3", "ns4"]),
            }}),
        ),
        case(
            "OverridesNilPodSpecAttributes",
            json!({"affinity": {"podAntiAffinity": pod_affinity("topKey2", &["n3", "ns4"])}}),
            Some(json!({
                "nodeAffinity": another_node_affinity(),
                "podAffinity": pod_affinity("topKey", &["ns1", "ns2"]),
            })),
            json!({"affinity": {
                "nodeAffinity": another_node_affinity(),
                "podAffinity": pod_affinity("topKey", &["ns1", "ns2"]),
                "podAntiAffinity": pod_affinity("topKey2", &["n3", "ns4"]),
            }}),
        ),
        case(
            "EmptyAffinity",
            json!({"affinity": full_affinity()}),
            Some(json!({})),
            json!({}),
        ),
        case(
            "Nil/EmptyAffinityAreEquivalent",
            json!({"affinity": {
                "nodeAffinity": node_affinity("key", "In", &["val1", "val2"]),
                "podAffinity": pod_affinity("topKey", &["ns1", "ns2"]),
            }}),
            Some(json!({"nodeAffinity": {}, "podAffinity": {}})),
            json!({}),
        ),
        case(
            "EmptyAffinity",
            json!({"affinity": full_affinity()}),
            None,
            json!({"affinity": full_affinity()}),
        ),
    ];
    let n = run(cases, |pod, affinity: &Option<Value>| {
        override_affinity(pod, affinity.as_ref())
    });
    assert_eq!(n + 1, 8);
}

/// Upstream `TestAffinityAPIChanges` guards the three parts of `corev1.Affinity` that the
/// override knows. Here: the parts are those three, and anything else in an override is
/// ignored as Go's typed decoding drops it — an override holding only an unknown field is
/// empty, and removes the pod's affinity.
#[test]
fn affinity_api_changes() {
    assert_eq!(
        AFFINITY_PARTS,
        ["nodeAffinity", "podAffinity", "podAntiAffinity"]
    );
    let mut pod = json!({"affinity": full_affinity()});
    override_affinity(obj(&mut pod), Some(&json!({"futureAffinity": {"x": 1}}))).unwrap();
    assert_eq!(pod, json!({}));
}

/// Upstream `TestInjectAnnotationsIntoDeployment`. Its first case, a nil Deployment, has no
/// JSON counterpart; the nearest, a Deployment that is not an object, is an error.
#[test]
fn inject_annotations_into_deployment() {
    // "WithNilDeployment"
    let config = SubscriptionConfig::from_config(&json!({"annotations": {"foo": "bar"}})).unwrap();
    let mut got = Value::Null;
    let err = Overrides {
        config: Some(&config),
        proxy: None,
    }
    .apply(&mut got)
    .unwrap_err();
    assert_eq!(err.to_string(), "expected an object, found null");
    assert_eq!(got, Value::Null, "WithNilDeployment");

    let deployment = |deploy: Value, pod: Value| {
        json!({
            "metadata": {"annotations": deploy},
            "spec": {"template": {"metadata": {"annotations": pod}}},
        })
    };
    let cases = vec![
        case(
            "WithEmptyAnnotations",
            json!({}),
            Some(json!({"foo": "bar"})),
            deployment(json!({"foo": "bar"}), json!({"foo": "bar"})),
        ),
        case(
            "WithExistingAnnotations",
            deployment(
                json!({"common": "default-deploy-annotation", "deploy": "default-deploy-annotation"}),
                json!({"common": "default-pod-annotation", "pod": "default-pod-annotation"}),
            ),
            Some(json!({
                "common": "override-annotation",
                "deploy": "override-annotation",
                "pod": "override-annotation",
                "foo": "bar",
            })),
            deployment(
                json!({
                    "common": "default-deploy-annotation",
                    "deploy": "default-deploy-annotation",
                    "pod": "override-annotation",
                    "foo": "bar",
                }),
                json!({
                    "common": "default-pod-annotation",
                    "pod": "default-pod-annotation",
                    "deploy": "override-annotation",
                    "foo": "bar",
                }),
            ),
        ),
        case(
            "WithNilAnnotations",
            deployment(
                json!({"deploy": "default-annotation"}),
                json!({"pod": "default-annotation"}),
            ),
            None,
            deployment(
                json!({"deploy": "default-annotation"}),
                json!({"pod": "default-annotation"}),
            ),
        ),
        case(
            "WithEmptyAnnotations",
            deployment(
                json!({"deploy": "default-annotation"}),
                json!({"pod": "default-annotation"}),
            ),
            Some(json!({})),
            deployment(
                json!({"deploy": "default-annotation"}),
                json!({"pod": "default-annotation"}),
            ),
        ),
    ];
    let n = run(cases, |deployment, annotations: &Option<Value>| {
        inject_annotations(deployment, annotations.clone().map(strings).as_ref())
    });
    assert_eq!(n + 1, 5);
}

// --- "Identical" as Go's typed decoding sees it ------------------------------------------------

/// A toleration differing from the pod's only in fields Go decodes to the same struct (an
/// empty string, a null pointer, an unknown field) is identical and not appended; one differing
/// in a set field (`operator` left to its default) is appended.
#[test]
fn identical_means_equal_after_typed_decoding() {
    let mut pod = json!({"tolerations": [{
        "key": "k", "operator": "Exists", "value": "", "tolerationSeconds": null, "note": "x",
    }]});
    let before = pod.clone();
    inject_tolerations(obj(&mut pod), &[json!({"key": "k", "operator": "Exists"})]).unwrap();
    assert_eq!(pod, before);

    inject_tolerations(obj(&mut pod), &[json!({"key": "k"})]).unwrap();
    assert_eq!(pod["tolerations"].as_array().unwrap().len(), 2);

    // A pointer to an empty struct is not a nil one.
    let mut pod = json!({"containers": [{"envFrom": [{"prefix": "p"}]}]});
    inject_env_from(obj(&mut pod), &[json!({"prefix": "p", "configMapRef": {}})]).unwrap();
    assert_eq!(
        pod["containers"][0]["envFrom"],
        json!([{"prefix": "p"}, {"prefix": "p", "configMapRef": {}}])
    );
}

/// A volume of the same name is replaced by the injected one, whatever its source.
#[test]
fn volumes_replace_by_name_keeping_their_place() {
    let mut pod = json!({"volumes": [
        {"name": "a", "emptyDir": {}},
        {"name": "b", "secret": {"secretName": "s"}},
    ]});
    inject_volumes(
        obj(&mut pod),
        &[
            json!({"name": "c", "emptyDir": {}}),
            json!({"name": "a", "configMap": {"name": "cm"}}),
        ],
    )
    .unwrap();
    assert_eq!(
        pod["volumes"],
        json!([
            {"name": "a", "configMap": {"name": "cm"}},
            {"name": "b", "secret": {"secretName": "s"}},
            {"name": "c", "emptyDir": {}},
        ])
    );
}

/// A container naming a variable twice keeps it once, at its first place, with its last value
/// (upstream writes a nameless variable for the repeat, which the API server rejects).
#[test]
fn repeated_container_variable_is_kept_once() {
    let mut pod = json!({"containers": [{"env": [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
        {"name": "A", "value": "3"},
    ]}]});
    inject_env(obj(&mut pod), &[json!({"name": "C", "value": "4"})]).unwrap();
    assert_eq!(
        pod["containers"][0]["env"],
        json!([
            {"name": "A", "value": "3"},
            {"name": "B", "value": "2"},
            {"name": "C", "value": "4"},
        ])
    );
}

// --- The OLM documentation's affinity examples ------------------------------------------------

/// "Overriding/Defining Node Affinity": the override's `nodeAffinity` replaces the author's
/// completely; the other parts stay.
#[test]
fn documented_node_affinity_override_replaces_it_completely() {
    let amd64 = json!({"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]},
    ]}});
    let mut pod = json!({"affinity": full_affinity()});
    override_affinity(obj(&mut pod), Some(&json!({"nodeAffinity": amd64}))).unwrap();
    assert_eq!(pod["affinity"]["nodeAffinity"], amd64);
    assert_eq!(
        pod["affinity"]["podAffinity"],
        full_affinity()["podAffinity"]
    );
}

/// "Removing Operator Author defined Affinity": `affinity: {}` removes all of it.
#[test]
fn documented_empty_affinity_removes_it() {
    let mut pod = json!({"affinity": full_affinity()});
    override_affinity(obj(&mut pod), Some(&json!({}))).unwrap();
    assert_eq!(pod, json!({}));
}

/// "… `podAffinity: {}` and `podAntiAffinity: {}` is equivalent to keeping the original
/// nodeAffinity, while removing the original podAffinity and podAntiAffinity." Upstream's code
/// removes the whole affinity at `podAntiAffinity: {}`; the documentation decides.
#[test]
fn documented_empty_pod_parts_keep_node_affinity() {
    let mut pod = json!({"affinity": full_affinity()});
    override_affinity(
        obj(&mut pod),
        Some(&json!({"podAffinity": {}, "podAntiAffinity": {}})),
    )
    .unwrap();
    assert_eq!(
        pod,
        json!({"affinity": {"nodeAffinity": full_affinity()["nodeAffinity"]}})
    );

    let mut pod = json!({"affinity": full_affinity()});
    override_affinity(obj(&mut pod), Some(&json!({"podAntiAffinity": {}}))).unwrap();
    let mut want = full_affinity();
    want.as_object_mut().unwrap().remove("podAntiAffinity");
    assert_eq!(pod, json!({"affinity": want}));
}

/// An empty part is one whose fields are all unset: `[]` is set (Go decodes it to a non-nil
/// slice), so `podAffinity` with an empty list replaces rather than removes.
#[test]
fn a_part_with_an_empty_list_is_not_empty() {
    let mut pod = json!({"affinity": full_affinity()});
    let over = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}});
    override_affinity(obj(&mut pod), Some(&over)).unwrap();
    assert_eq!(pod["affinity"]["podAffinity"], over["podAffinity"]);
}

// --- The whole initializer --------------------------------------------------------------------

fn deployment() -> Value {
    json!({
        "metadata": {"name": "op"},
        "spec": {"template": {
            "metadata": {"annotations": {"kept": "author"}},
            "spec": {
                "containers": [
                    {"name": "a", "env": [{"name": "LOG", "value": "info"}]},
                    {"name": "b"},
                ],
                "volumes": [{"name": "tmp", "emptyDir": {}}],
            },
        }},
    })
}

fn proxy() -> ClusterProxy {
    ClusterProxy {
        http_proxy: "http://proxy:3128".into(),
        https_proxy: String::new(),
        no_proxy: ".cluster.local".into(),
    }
}

/// Every field of a config, applied in upstream's order, with the cluster proxy's non-empty
/// variables after the config's.
#[test]
fn apply_applies_every_field() {
    let sub = json!({
        "metadata": {"name": "op", "namespace": "ns"},
        "spec": {"config": {
            "selector": {"matchLabels": {"ignored": "yes"}},
            "env": [{"name": "LOG", "value": "debug"}, {"name": "EXTRA", "value": "1"}],
            "envFrom": [{"configMapRef": {"name": "cm"}}],
            "volumes": [{"name": "certs", "secret": {"secretName": "certs"}}],
            "volumeMounts": [{"name": "certs", "mountPath": "/certs"}],
            "tolerations": [{"operator": "Exists"}],
            "resources": {"requests": {"cpu": "10m"}},
            "nodeSelector": {"disk": "ssd"},
            "affinity": {"nodeAffinity": another_node_affinity()},
            "annotations": {"kept": "admin", "added": "admin"},
        }},
    });
    let config = SubscriptionConfig::from_subscription(&sub).unwrap();
    let proxy = proxy();
    let mut got = deployment();
    Overrides {
        config: Some(&config),
        proxy: Some(&proxy),
    }
    .apply(&mut got)
    .unwrap();
    // Container a's LOG keeps its place with the config's value; b had no variables.
    let env = json!([
        {"name": "LOG", "value": "debug"},
        {"name": "EXTRA", "value": "1"},
        {"name": "HTTP_PROXY", "value": "http://proxy:3128"},
        {"name": "NO_PROXY", "value": ".cluster.local"},
    ]);
    let container = |name: &str| {
        json!({
            "name": name,
            "env": env,
            "envFrom": [{"configMapRef": {"name": "cm"}}],
            "volumeMounts": [{"name": "certs", "mountPath": "/certs"}],
            "resources": {"requests": {"cpu": "10m"}},
        })
    };
    let want = json!({
        "metadata": {"name": "op", "annotations": {"kept": "admin", "added": "admin"}},
        "spec": {"template": {
            "metadata": {"annotations": {"kept": "author", "added": "admin"}},
            "spec": {
                "containers": [container("a"), container("b")],
                "volumes": [
                    {"name": "tmp", "emptyDir": {}},
                    {"name": "certs", "secret": {"secretName": "certs"}},
                ],
                "tolerations": [{"operator": "Exists"}],
                "nodeSelector": {"disk": "ssd"},
                "affinity": {"nodeAffinity": another_node_affinity()},
            },
        }},
    });
    assert_eq!(got, want);
}

/// Setting any proxy variable in the config keeps the cluster's proxy out entirely; without a
/// Subscription the cluster proxy still applies.
#[test]
fn proxy_is_overridden_by_any_proxy_variable() {
    let proxy = proxy();
    let config = SubscriptionConfig::from_config(&json!({"env": [{"name": "NO_PROXY"}]})).unwrap();
    let mut got = deployment();
    Overrides {
        config: Some(&config),
        proxy: Some(&proxy),
    }
    .apply(&mut got)
    .unwrap();
    assert_eq!(
        got["spec"]["template"]["spec"]["containers"][1]["env"],
        json!([{"name": "NO_PROXY"}])
    );

    let mut got = deployment();
    Overrides {
        config: None,
        proxy: Some(&proxy),
    }
    .apply(&mut got)
    .unwrap();
    assert_eq!(
        got["spec"]["template"]["spec"]["containers"][1]["env"],
        json!([
            {"name": "HTTP_PROXY", "value": "http://proxy:3128"},
            {"name": "NO_PROXY", "value": ".cluster.local"},
        ])
    );

    let mut got = deployment();
    Overrides::default().apply(&mut got).unwrap();
    assert_eq!(got, deployment());
}

/// A malformed config or pod spec is an error naming the place, not a panic.
#[test]
fn malformed_input_names_the_place() {
    let err = |config: Value| {
        SubscriptionConfig::from_subscription(&json!({"spec": {"config": config}}))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(json!({"env": {"name": "A"}})),
        "spec.config.env: expected an array, found an object"
    );
    assert_eq!(
        err(json!({"env": [{"name": 1}]})),
        "spec.config.env[0].name: expected a string, found a number"
    );
    assert_eq!(
        err(json!({"tolerations": [{"tolerationSeconds": "5"}]})),
        "spec.config.tolerations[0].tolerationSeconds: expected an integer, found a string"
    );
    assert_eq!(
        err(json!({"affinity": {"podAffinity": "x"}})),
        "spec.config.affinity.podAffinity: expected an object, found a string"
    );
    assert_eq!(
        err(json!({"nodeSelector": {"a": true}})),
        "spec.config.nodeSelector.a: expected a string, found a boolean"
    );
    assert_eq!(
        err(json!("x")),
        "spec.config: expected an object, found a string"
    );

    let config =
        SubscriptionConfig::from_config(&json!({"volumeMounts": [{"name": "v"}]})).unwrap();
    let mut got =
        json!({"spec": {"template": {"spec": {"containers": [{}, {"volumeMounts": {}}]}}}});
    let e = Overrides {
        config: Some(&config),
        proxy: None,
    }
    .apply(&mut got)
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "spec.template.spec.containers[1].volumeMounts: expected an array, found an object"
    );
}

/// The config that applies is the one of the Subscription that installed the CSV.
#[test]
fn owner_subscription_is_the_one_that_installed_the_csv() {
    let sub = |name: &str, installed: Option<&str>| -> Subscription {
        let mut s = json!({"metadata": {"name": name},
            "spec": {"name": "op", "source": "ops", "sourceNamespace": "olm"}});
        if let Some(csv) = installed {
            s["status"] = json!({"installedCSV": csv, "lastUpdated": "2026-01-01T00:00:00Z"});
        }
        serde_json::from_value(s).unwrap()
    };
    let subs = [
        sub("a", Some("other.v1")),
        sub("b", None),
        sub("c", Some("op.v1")),
        sub("d", Some("op.v1")),
    ];
    assert_eq!(
        owner_subscription(&subs, "op.v1").and_then(|s| s.metadata.name.as_deref()),
        Some("c")
    );
    assert!(owner_subscription(&subs, "op.v2").is_none());
    assert_eq!(
        SubscriptionConfig::from_subscription(&serde_json::to_value(&subs[1]).unwrap()).unwrap(),
        SubscriptionConfig::default()
    );
}
