//! `deploymentConfig` merge rules and certificate volumes on a rendered Deployment, following
//! operator-controller's generators (`applyCustomConfigToDeployment`,
//! `ensureCorrectDeploymentCertVolumes`).

use olm_bundle::config::apply_deployment_config;
use olm_bundle::{Bundle, BundleFile, CertProvider, render_bundle};
use serde_json::{Value, json};

fn deployment() -> Value {
    json!({"metadata": {"name": "d"}, "spec": {"template": {"metadata": {"annotations": {"keep": "mine"}}, "spec": {
        "containers": [
            {"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
             "volumeMounts": [{"name": "v", "mountPath": "/v"}]},
            {"name": "b"}
        ],
        "volumes": [{"name": "v", "emptyDir": {}}],
        "tolerations": [{"key": "t", "operator": "Exists"}],
        "nodeSelector": {"zone": "a"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Exists"}]}]}},
                     "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": {"topologyKey": "t"}}]}}
    }}}})
}

#[test]
fn env_volumes_and_mounts_replace_by_name_or_append() {
    let mut d = deployment();
    apply_deployment_config(
        &mut d,
        &json!({
            "env": [{"name": "Y", "value": "new"}, {"name": "Z", "value": "3"}],
            "volumes": [{"name": "v", "configMap": {"name": "cm"}}, {"name": "w", "emptyDir": {}}],
            "volumeMounts": [{"name": "w", "mountPath": "/w"}],
        }),
    );
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(
        pod["containers"][0]["env"],
        json!([{"name": "X", "value": "1"}, {"name": "Y", "value": "new"}, {"name": "Z", "value": "3"}])
    );
    assert_eq!(
        pod["containers"][1]["env"],
        json!([{"name": "Y", "value": "new"}, {"name": "Z", "value": "3"}])
    );
    assert_eq!(
        pod["volumes"],
        json!([{"name": "v", "configMap": {"name": "cm"}}, {"name": "w", "emptyDir": {}}])
    );
    assert_eq!(
        pod["containers"][0]["volumeMounts"],
        json!([{"name": "v", "mountPath": "/v"}, {"name": "w", "mountPath": "/w"}])
    );
}

#[test]
fn empty_lists_change_nothing_and_empty_node_selector_clears() {
    let mut d = deployment();
    let before = d.clone();
    apply_deployment_config(
        &mut d,
        &json!({"env": [], "envFrom": [], "volumes": [], "tolerations": []}),
    );
    assert_eq!(d, before);
    apply_deployment_config(&mut d, &json!({"nodeSelector": {}}));
    assert!(d["spec"]["template"]["spec"].get("nodeSelector").is_none());
}

#[test]
fn tolerations_and_env_from_append_unless_present() {
    let mut d = deployment();
    apply_deployment_config(
        &mut d,
        &json!({
            "tolerations": [{"key": "t", "operator": "Exists"}, {"key": "u", "operator": "Exists"}],
            "envFrom": [{"secretRef": {"name": "s"}}],
        }),
    );
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(
        pod["tolerations"],
        json!([{"key": "t", "operator": "Exists"}, {"key": "u", "operator": "Exists"}])
    );
    apply_deployment_config(&mut d, &json!({"envFrom": [{"secretRef": {"name": "s"}}]}));
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][1]["envFrom"],
        json!([{"secretRef": {"name": "s"}}])
    );
}

#[test]
fn affinity_rules() {
    // An empty sub-affinity clears just that part.
    let mut d = deployment();
    apply_deployment_config(&mut d, &json!({"affinity": {"nodeAffinity": {}}}));
    let aff = &d["spec"]["template"]["spec"]["affinity"];
    assert!(aff.get("nodeAffinity").is_none());
    assert!(aff.get("podAffinity").is_some());
    // A sub-affinity with no terms counts as empty too.
    apply_deployment_config(
        &mut d,
        &json!({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []}}}),
    );
    assert!(
        d["spec"]["template"]["spec"].get("affinity").is_none(),
        "nothing left: affinity removed"
    );
    // `affinity: {}` erases everything.
    let mut d = deployment();
    apply_deployment_config(&mut d, &json!({"affinity": {}}));
    assert!(d["spec"]["template"]["spec"].get("affinity").is_none());
    // A non-empty sub-affinity replaces.
    let mut d = deployment();
    let pa = json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": {"topologyKey": "x"}}]}});
    apply_deployment_config(&mut d, &json!({"affinity": pa}));
    assert_eq!(
        d["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"],
        pa["podAntiAffinity"]
    );
}

#[test]
fn annotations_do_not_override_and_resources_replace() {
    let mut d = deployment();
    apply_deployment_config(
        &mut d,
        &json!({"annotations": {"keep": "theirs", "new": "x"}, "resources": {"limits": {"cpu": "1"}}}),
    );
    assert_eq!(
        d["metadata"]["annotations"],
        json!({"keep": "theirs", "new": "x"})
    );
    assert_eq!(
        d["spec"]["template"]["metadata"]["annotations"],
        json!({"keep": "mine", "new": "x"})
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][1]["resources"],
        json!({"limits": {"cpu": "1"}})
    );
}

#[test]
fn webhook_deployments_get_both_certificate_volumes_in_upstream_order() {
    let csv = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": "w.v1.0.0"},
        "spec": {"installModes": [{"type": "AllNamespaces", "supported": true}],
                 "install": {"strategy": "deployment", "spec": {"deployments": [{"name": "w.manager", "spec": {
                     "selector": {"matchLabels": {"app": "w"}},
                     "template": {"metadata": {"labels": {"app": "w"}}, "spec": {
                         "containers": [{"name": "m", "image": "i", "volumeMounts": [{"name": "certs", "mountPath": "/tmp/k8s-webhook-server/serving-certs"}]}],
                         "volumes": [{"name": "certs", "secret": {"secretName": "old"}}, {"name": "keep", "emptyDir": {}}]}}}}]}},
                 "webhookdefinitions": [{"generateName": "vw.example.com", "type": "ValidatingAdmissionWebhook",
                     "deploymentName": "w.manager", "containerPort": 443, "targetPort": 9443, "sideEffects": "None",
                     "admissionReviewVersions": ["v1"], "webhookPath": "/validate"}]}});
    let files = vec![
        BundleFile {
            path: "metadata/annotations.yaml".into(),
            contents: b"annotations:\n  operators.operatorframework.io.bundle.package.v1: w\n"
                .to_vec(),
        },
        BundleFile {
            path: "manifests/csv.json".into(),
            contents: csv.to_string().into_bytes(),
        },
    ];
    let b = Bundle::from_files(files).unwrap();
    let objs = render_bundle(&b, "ns", None, Some(CertProvider::CertManager)).unwrap();
    let dep = objs.iter().find(|o| o["kind"] == "Deployment").unwrap();
    let pod = &dep["spec"]["template"]["spec"];
    let names: Vec<&str> = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["keep", "webhook-cert", "apiservice-cert"]);
    assert_eq!(
        pod["volumes"][1]["secret"]["secretName"],
        "w-manager-service-cert"
    );
    assert_eq!(
        pod["containers"][0]["volumeMounts"],
        json!([{"name": "webhook-cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs"},
               {"name": "apiservice-cert", "mountPath": "/apiserver.local.config/certificates"}])
    );
    let svc = objs.iter().find(|o| o["kind"] == "Service").unwrap();
    assert_eq!(svc["metadata"]["name"], "w-manager-service");
    assert_eq!(
        svc["spec"]["ports"],
        json!([{"name": "443", "port": 443, "targetPort": 9443}])
    );
    let vwc = objs
        .iter()
        .find(|o| o["kind"] == "ValidatingWebhookConfiguration")
        .unwrap();
    assert_eq!(
        vwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"],
        "ns/w-manager-service-cert"
    );
    let issuer = objs.iter().find(|o| o["kind"] == "Issuer").unwrap();
    assert_eq!(
        issuer["metadata"]["name"],
        "w-manager-service-cert-selfsigned-issuer"
    );
}

/// What Go's pod types drop on the way through upstream: nil pointers, empty lists, empty env
/// values; what they add: `resources: {}`, `containers: null` when absent.
#[test]
fn pod_template_is_written_as_the_go_types_write_it() {
    let csv = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": "p.v1.0.0"},
        "spec": {"installModes": [{"type": "AllNamespaces", "supported": true}],
                 "install": {"strategy": "deployment", "spec": {"deployments": [{"name": "p", "spec": {
                     "template": {"metadata": {"creationTimestamp": null}, "spec": {
                         "imagePullSecrets": null,
                         "containers": [{"name": "m", "image": "i", "env": [{"name": "E", "value": ""}], "volumeMounts": []}],
                         "volumes": [{"name": "s", "secret": null}]}}}}]}}}});
    let files = vec![
        BundleFile {
            path: "metadata/annotations.yaml".into(),
            contents: b"annotations:\n  operators.operatorframework.io.bundle.package.v1: p\n"
                .to_vec(),
        },
        BundleFile {
            path: "manifests/csv.json".into(),
            contents: csv.to_string().into_bytes(),
        },
    ];
    let b = Bundle::from_files(files).unwrap();
    let objs = render_bundle(&b, "ns", None, None).unwrap();
    let dep = objs.iter().find(|o| o["kind"] == "Deployment").unwrap();
    let pod = &dep["spec"]["template"]["spec"];
    assert_eq!(
        pod["containers"],
        json!([{"name": "m", "image": "i", "env": [{"name": "E"}], "resources": {}}])
    );
    assert_eq!(pod["volumes"], json!([{"name": "s"}]));
    assert!(pod.get("imagePullSecrets").is_none());
    assert!(
        dep["spec"]["template"]["metadata"]
            .get("creationTimestamp")
            .is_none()
    );
    assert_eq!(dep["spec"]["strategy"], json!({}));
    assert_eq!(dep["status"], json!({}));
}
