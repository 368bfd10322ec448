//! Render validators, target-namespace rules and configuration messages, each pinned to
//! operator-controller's wording (`render/registryv1/validators`, `render/render.go`,
//! `config/config.go`).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use olm_bundle::render::{RenderOptions, render};
use olm_bundle::{Bundle, BundleFile, config, render_bundle, validate};
use serde_json::{Value, json};

fn bundle_with(csv_spec: Value, crds: Vec<Value>, others: Vec<Value>, package: &str) -> Bundle {
    let csv = json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": "test.v1.0.0"}, "spec": csv_spec});
    let mut files = vec![
        BundleFile {
            path: "metadata/annotations.yaml".into(),
            contents: format!(
                "annotations:\n  operators.operatorframework.io.bundle.package.v1: \"{package}\"\n"
            )
            .into_bytes(),
        },
        BundleFile {
            path: "manifests/csv.json".into(),
            contents: csv.to_string().into_bytes(),
        },
    ];
    for (i, o) in crds.iter().chain(&others).enumerate() {
        files.push(BundleFile {
            path: format!("manifests/o{i:02}.json"),
            contents: o.to_string().into_bytes(),
        });
    }
    Bundle::from_files(files).unwrap()
}

fn modes(supported: &[&str]) -> Value {
    let all = [
        "OwnNamespace",
        "SingleNamespace",
        "MultiNamespace",
        "AllNamespaces",
    ];
    Value::Array(
        all.iter()
            .map(|m| json!({"type": m, "supported": supported.contains(m)}))
            .collect(),
    )
}

fn crd(name: &str) -> Value {
    let (plural, group) = name.split_once('.').unwrap();
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": name},
        "spec": {"group": group, "names": {"plural": plural, "kind": "K"}, "scope": "Namespaced",
                 "versions": [{"name": "v1", "served": true, "storage": true}]}})
}

fn deployments(names: &[&str]) -> Value {
    json!({"strategy": "deployment", "spec": {"deployments": names.iter().map(|n| json!({"name": n, "spec": {}})).collect::<Vec<_>>()}})
}

#[test]
fn deployment_spec_uniqueness_and_names() {
    let b = bundle_with(
        json!({"install": deployments(&["b", "a", "b", "a", "-bad-"]), "installModes": modes(&["AllNamespaces"])}),
        vec![],
        vec![],
        "p",
    );
    assert_eq!(
        validate::check_deployment_spec_uniqueness(&b),
        [
            "cluster service version contains duplicate strategy deployment spec 'a'",
            "cluster service version contains duplicate strategy deployment spec 'b'"
        ]
    );
    assert_eq!(
        validate::check_deployment_name_is_dns1123_subdomain(&b),
        [
            "invalid cluster service version strategy deployment name '-bad-': a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ]
    );
}

#[test]
fn crd_uniqueness_and_owned_existence() {
    let b = bundle_with(
        json!({"installModes": modes(&["AllNamespaces"]),
               "customresourcedefinitions": {"owned": [{"name": "as.x.io", "version": "v1", "kind": "A"}, {"name": "bs.x.io", "version": "v1", "kind": "B"}]}}),
        vec![crd("as.x.io"), crd("as.x.io")],
        vec![],
        "p",
    );
    assert_eq!(
        validate::check_crd_resource_uniqueness(&b),
        ["bundle contains duplicate custom resource definition 'as.x.io'"]
    );
    assert_eq!(
        validate::check_owned_crd_existence(&b),
        [
            "cluster service definition references owned custom resource definition 'bs.x.io' not found in bundle"
        ]
    );
}

#[test]
fn package_name_not_empty() {
    let b = bundle_with(
        json!({"installModes": modes(&["AllNamespaces"])}),
        vec![],
        vec![],
        "",
    );
    assert_eq!(
        validate::check_package_name_not_empty(&b),
        ["package name is empty"]
    );
}

#[test]
fn conversion_webhooks_need_all_namespaces_only() {
    let b = bundle_with(
        json!({"installModes": modes(&["SingleNamespace", "AllNamespaces"]),
               "webhookdefinitions": [{"generateName": "webhook-b", "type": "ConversionWebhook"}, {"generateName": "webhook-a", "type": "ConversionWebhook"}]}),
        vec![],
        vec![],
        "p",
    );
    assert_eq!(
        validate::check_conversion_webhook_support(&b),
        [
            "bundle contains conversion webhook \"webhook-b\" and supports install modes [AllNamespaces SingleNamespace] - conversion webhooks are only supported for bundles that only support AllNamespaces install mode",
            "bundle contains conversion webhook \"webhook-a\" and supports install modes [AllNamespaces SingleNamespace] - conversion webhooks are only supported for bundles that only support AllNamespaces install mode",
        ]
    );
}

#[test]
fn webhook_references_names_and_crds() {
    let b = bundle_with(
        json!({"installModes": modes(&["AllNamespaces"]), "install": deployments(&["dep"]),
               "customresourcedefinitions": {"owned": [{"name": "as.x.io", "version": "v1", "kind": "A"}]},
               "webhookdefinitions": [
                 {"generateName": "w1", "type": "ValidatingAdmissionWebhook", "deploymentName": "missing"},
                 {"generateName": "w1", "type": "ValidatingAdmissionWebhook", "deploymentName": "dep"},
                 {"generateName": "Bad_Name", "type": "MutatingAdmissionWebhook", "deploymentName": "dep"},
                 {"generateName": "conv-b", "type": "ConversionWebhook", "deploymentName": "dep", "conversionCRDs": ["as.x.io", "zs.x.io"]},
                 {"generateName": "conv-a", "type": "ConversionWebhook", "deploymentName": "dep", "conversionCRDs": ["as.x.io"]}]}),
        vec![crd("as.x.io")],
        vec![],
        "p",
    );
    assert_eq!(
        validate::check_webhook_deployment_referential_integrity(&b),
        [
            "webhook of type 'ValidatingAdmissionWebhook' with name 'w1' references non-existent deployment 'missing'"
        ]
    );
    assert_eq!(
        validate::check_webhook_name_uniqueness(&b),
        ["duplicate webhook 'w1' of type 'ValidatingAdmissionWebhook'"]
    );
    assert_eq!(
        validate::check_webhook_name_is_dns1123_subdomain(&b).len(),
        1
    );
    assert!(validate::check_webhook_name_is_dns1123_subdomain(&b)[0]
        .starts_with("webhook of type 'MutatingAdmissionWebhook' has invalid name 'Bad_Name': a lowercase RFC 1123 subdomain"));
    assert_eq!(
        validate::check_conversion_webhook_crd_reference_uniqueness(&b),
        ["conversion webhooks [conv-a,conv-b] reference same custom resource definition 'as.x.io'"]
    );
    assert_eq!(
        validate::check_conversion_webhooks_reference_owned_crds(&b),
        [
            "conversion webhook 'conv-b' references custom resource definition 'zs.x.io' not owned bundle"
        ]
    );
}

#[test]
fn webhook_rules_forbidden_targets() {
    let b = bundle_with(
        json!({"installModes": modes(&["AllNamespaces"]), "install": deployments(&["dep"]),
               "webhookdefinitions": [
                 {"generateName": "w", "type": "ValidatingAdmissionWebhook", "deploymentName": "dep",
                  "rules": [{"apiGroups": ["*", "olm.operatorframework.io", "admissionregistration.k8s.io"],
                             "resources": ["MutatingWebhookConfigurations", "pods"]}]},
                 {"generateName": "c", "type": "ConversionWebhook", "deploymentName": "dep",
                  "rules": [{"apiGroups": ["*"]}]}]}),
        vec![],
        vec![],
        "p",
    );
    assert_eq!(
        validate::check_webhook_rules(&b),
        [
            "webhook \"w\" contains forbidden rule: admission webhook rules cannot reference API group \"*\"",
            "webhook \"w\" contains forbidden rule: admission webhook rules cannot reference API group \"olm.operatorframework.io\"",
            "webhook \"w\" contains forbidden rule: admission webhook rules cannot reference resource \"MutatingWebhookConfigurations\" for API group \"admissionregistration.k8s.io\"",
        ]
    );
}

#[test]
fn object_support() {
    let b = bundle_with(
        json!({"installModes": modes(&["AllNamespaces"])}),
        vec![],
        vec![
            json!({"kind": "Deployment", "metadata": {"name": "d"}}),
            json!({"kind": "ConfigMap", "metadata": {"name": "c"}}),
        ],
        "p",
    );
    assert_eq!(
        validate::check_object_support(&b),
        ["unsupported resource \"d\" with kind \"Deployment\""]
    );
}

/// Names the API server would refuse are refused at validation in kube-apiserver's words
/// (`NewInvalid`, `field.Invalid`, apimachinery's name checks): a CRD whose name is too long or
/// not `<plural>.<group>`, a Service name that is no DNS-1035 label, an RBAC name with a slash,
/// a ServiceAccount the CSV's permissions name; names the API server takes pass.
#[test]
fn object_names_the_api_server_would_refuse() {
    let long_plural = "a".repeat(10_000);
    let mut long_crd = crd(&format!("{long_plural}.example.com"));
    long_crd["spec"]["names"]["plural"] = json!(long_plural);
    let long_name = format!("{long_plural}.example.com");
    let mut misnamed = crd("widgets.example.com");
    misnamed["metadata"]["name"] = json!("gadgets.example.com");
    let b = bundle_with(
        json!({"installModes": modes(&["AllNamespaces"]), "install": {"strategy": "deployment", "spec": {
            "deployments": [{"name": "dep", "spec": {}}],
            "permissions": [{"serviceAccountName": "Bad_SA", "rules": []}],
            "clusterPermissions": [{"serviceAccountName": "good-sa", "rules": []}, {"serviceAccountName": "", "rules": []}]}}}),
        vec![long_crd, misnamed, crd("fine.example.com")],
        vec![
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "9lives"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "fine.config-map"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "a/b"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "Upper:Case"}}),
            json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "UPPER"}}),
        ],
        "p",
    );
    const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    assert_eq!(
        validate::check_object_names(&b),
        [
            format!("ServiceAccount \"Bad_SA\" is invalid: metadata.name: Invalid value: \"Bad_SA\": {SUBDOMAIN}"),
            format!("CustomResourceDefinition.apiextensions.k8s.io \"{long_name}\" is invalid: metadata.name: Invalid value: \"{long_name}\": must be no more than 253 characters"),
            "CustomResourceDefinition.apiextensions.k8s.io \"gadgets.example.com\" is invalid: metadata.name: Invalid value: \"gadgets.example.com\": must be spec.names.plural+\".\"+spec.group".to_string(),
            "Service \"9lives\" is invalid: metadata.name: Invalid value: \"9lives\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string(),
            "ClusterRole.rbac.authorization.k8s.io \"a/b\" is invalid: metadata.name: Invalid value: \"a/b\": may not contain '/'".to_string(),
            format!("ServiceMonitor.monitoring.coreos.com \"UPPER\" is invalid: metadata.name: Invalid value: \"UPPER\": {SUBDOMAIN}"),
        ]
    );
    assert!(
        validate::render_validators(&b)
            .iter()
            .any(|m| m.starts_with("CustomResourceDefinition.apiextensions.k8s.io")),
        "a render validator"
    );
}

fn render_err(supported: &[&str], targets: Option<Vec<&str>>) -> String {
    let b = bundle_with(
        json!({"installModes": modes(supported), "install": deployments(&["dep"])}),
        vec![],
        vec![],
        "p",
    );
    let opts = RenderOptions {
        install_namespace: "install-ns".into(),
        target_namespaces: targets.map(|t| t.into_iter().map(String::from).collect()),
        ..Default::default()
    };
    render(&b, &opts)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

#[test]
fn target_namespace_messages() {
    assert_eq!(
        render_err(&["OwnNamespace"], None),
        "invalid option(s): invalid target namespaces []: exactly one target namespace must be specified"
    );
    assert_eq!(
        render_err(&["MultiNamespace"], None),
        "invalid option(s): invalid target namespaces []: at least one target namespace must be specified"
    );
    assert_eq!(
        render_err(&["OwnNamespace", "SingleNamespace"], Some(vec![""])),
        "invalid option(s): invalid target namespaces []: supported install modes [OwnNamespace SingleNamespace] do not support targeting all namespaces"
    );
    assert_eq!(
        render_err(&["SingleNamespace"], Some(vec!["install-ns"])),
        "invalid option(s): invalid target namespaces [install-ns]: supported install modes [SingleNamespace] do not support targeting own namespace"
    );
    assert_eq!(
        render_err(&["AllNamespaces"], Some(vec!["a", "b"])),
        "invalid option(s): invalid target namespaces [a b]: supported install modes [AllNamespaces] do not support target namespaces [a b]"
    );
    assert_eq!(
        render_err(&["MultiNamespace"], Some(vec!["a", "install-ns"])),
        "invalid option(s): invalid target namespaces [a install-ns]: supported install modes [MultiNamespace] do not support targeting own namespace"
    );
    assert_eq!(render_err(&["MultiNamespace"], Some(vec!["a", "b"])), "");
    assert_eq!(render_err(&["OwnNamespace"], Some(vec!["install-ns"])), "");
    assert_eq!(render_err(&["SingleNamespace"], Some(vec!["other"])), "");
}

fn cfg_err(
    supported: &[&str],
    raw: Option<&str>,
    install_ns: &str,
) -> Result<Option<String>, String> {
    let b = bundle_with(
        json!({"installModes": modes(supported)}),
        vec![],
        vec![],
        "p",
    );
    config::validate_config(&b.csv, raw, install_ns).map(|c| c.watch_namespace)
}

#[test]
fn config_messages_follow_upstream() {
    let own = &["OwnNamespace"][..];
    let single = &["SingleNamespace"][..];
    let all = &["AllNamespaces"][..];
    assert_eq!(cfg_err(all, None, "ns"), Ok(None));
    assert_eq!(
        cfg_err(own, None, "ns"),
        Err("required field \"watchNamespace\" is missing".into())
    );
    assert_eq!(
        cfg_err(single, Some("{\"watchNamespace\": null}"), "ns"),
        Err("required field \"watchNamespace\" is missing".into())
    );
    assert_eq!(
        cfg_err(single, Some("watchNamespace: some-namespace"), "install-ns"),
        Ok(Some("some-namespace".into()))
    );
    assert_eq!(
        cfg_err(single, Some("true"), "ns"),
        Err("invalid type: got boolean, want object".into())
    );
    assert_eq!(
        cfg_err(all, Some("somekey: somevalue"), "ns"),
        Err("unknown field \"somekey\"".into())
    );
    assert_eq!(
        cfg_err(all, Some("{\"watchNamespace\": \"x\"}"), "ns"),
        Err("unknown field \"watchNamespace\"".into())
    );
    assert_eq!(
        cfg_err(
            all,
            Some("{\"deploymentConfig\": {\"selector\": {\"matchLabels\": {\"app\": \"test\"}}}}"),
            "ns"
        ),
        Err("unknown field \"selector\"".into())
    );
    assert_eq!(
        cfg_err(
            single,
            Some("{\"watchNamespace\": {\"hello\": \"there\"}}"),
            "ns"
        ),
        Err("invalid type for field \"watchNamespace\": got object, want string".into())
    );
    assert_eq!(
        cfg_err(own, Some("{\"watchNamespace\": \"some-ns\"}"), "install-ns"),
        Err("invalid format for field \"watchNamespace\": 'some-ns' is not valid ownNamespaceInstallMode: invalid value \"some-ns\": must be \"install-ns\" (the namespace where the operator is installed) because this operator only supports OwnNamespace install mode".into())
    );
    assert_eq!(
        cfg_err(single, Some("{\"watchNamespace\": \"install-ns\"}"), "install-ns"),
        Err("invalid format for field \"watchNamespace\": 'install-ns' is not valid singleNamespaceInstallMode: invalid value \"install-ns\": must be different from \"install-ns\" (the install namespace) because this operator uses SingleNamespace install mode to watch a different namespace".into())
    );
    // Both Own and Single: no format, any valid name.
    assert_eq!(
        cfg_err(
            &["OwnNamespace", "SingleNamespace"],
            Some("{\"watchNamespace\": \"install-ns\"}"),
            "install-ns"
        ),
        Ok(Some("install-ns".into()))
    );
    // AllNamespaces also supported: optional, null accepted.
    assert_eq!(
        cfg_err(
            &["AllNamespaces", "OwnNamespace"],
            Some("{\"watchNamespace\": null}"),
            "ns"
        ),
        Ok(None)
    );
    // Empty install namespace skips the format check.
    assert_eq!(
        cfg_err(own, Some("{\"watchNamespace\": \"valid-ns\"}"), ""),
        Ok(Some("valid-ns".into()))
    );
    assert_eq!(
        cfg_err(single, Some("{\"watchNamespace\": \"Bad_NS\", \"x\": 1}"), "ns"),
        Err("multiple errors found:\n  - unknown field \"x\"\n  - field \"watchNamespace\" must match pattern \"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$\"".into())
    );
}

#[test]
fn invalid_config_is_wrapped_like_the_cluster_extension_condition() {
    let b = bundle_with(
        json!({"installModes": modes(&["OwnNamespace"]), "install": deployments(&["dep"])}),
        vec![],
        vec![],
        "p",
    );
    let err = render_bundle(&b, "ns", Some("{}"), None).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid ClusterExtension configuration: invalid configuration: required field \"watchNamespace\" is missing"
    );
}

#[test]
fn provider_checks() {
    let b = bundle_with(
        json!({"installModes": modes(&["MultiNamespace"])}),
        vec![],
        vec![],
        "p",
    );
    assert_eq!(
        render_bundle(&b, "ns", None, None).unwrap_err().to_string(),
        "unsupported bundle: bundle must support at least one of [AllNamespaces SingleNamespace OwnNamespace] install modes"
    );
    let b = bundle_with(
        json!({"installModes": modes(&["AllNamespaces"]),
        "apiservicedefinitions": {"owned": [{"name": "x", "group": "g", "version": "v1", "kind": "K"}]}}),
        vec![],
        vec![],
        "p",
    );
    assert_eq!(
        render_bundle(&b, "ns", None, None).unwrap_err().to_string(),
        "unsupported bundle: apiServiceDefintions are not supported"
    );
    let b = bundle_with(
        json!({"installModes": modes(&["AllNamespaces"]), "install": deployments(&["dep"]),
        "webhookdefinitions": [{"generateName": "w", "type": "ValidatingAdmissionWebhook", "deploymentName": "dep"}]}),
        vec![],
        vec![],
        "p",
    );
    assert_eq!(
        render_bundle(&b, "ns", None, None).unwrap_err().to_string(),
        "unsupported bundle: webhookDefinitions are not supported"
    );
}

#[test]
fn config_schema_follows_install_modes() {
    let b = bundle_with(
        json!({"installModes": modes(&["OwnNamespace"])}),
        vec![],
        vec![],
        "p",
    );
    let s = config::config_schema(&b.csv);
    assert_eq!(s["required"], json!(["watchNamespace"]));
    assert_eq!(
        s["properties"]["watchNamespace"]["format"],
        "ownNamespaceInstallMode"
    );
    let b = bundle_with(
        json!({"installModes": modes(&["AllNamespaces", "SingleNamespace"])}),
        vec![],
        vec![],
        "p",
    );
    let s = config::config_schema(&b.csv);
    assert!(s.get("required").is_none());
    assert_eq!(
        s["properties"]["watchNamespace"]["anyOf"][0],
        json!({"type": "null"})
    );
    let b = bundle_with(
        json!({"installModes": modes(&["AllNamespaces"])}),
        vec![],
        vec![],
        "p",
    );
    assert!(
        config::config_schema(&b.csv)["properties"]
            .get("watchNamespace")
            .is_none()
    );
}

#[test]
fn watch_namespace_flag_merges_into_config() {
    let b = bundle_with(
        json!({"installModes": modes(&["SingleNamespace"]), "install": deployments(&["dep"])}),
        vec![],
        vec![],
        "p",
    );
    let req = olm_bundle::RenderRequest {
        install_namespace: "ns".into(),
        watch_namespace: Some("watched".into()),
        config: Some("{\"deploymentConfig\": {\"nodeSelector\": {\"a\": \"b\"}}}".into()),
        cert_provider: None,
    };
    let objs = olm_bundle::render_request(&b, &req).unwrap();
    let dep = objs.iter().find(|o| o["kind"] == "Deployment").unwrap();
    assert_eq!(
        dep["spec"]["template"]["metadata"]["annotations"]["olm.targetNamespaces"],
        "watched"
    );
    assert_eq!(dep["spec"]["template"]["spec"]["nodeSelector"]["a"], "b");
}

#[test]
fn api_validators_report_like_operator_framework_api() {
    use olm_bundle::apivalidate::{Level, has_errors, validate_bundle};
    let mut b = bundle_with(
        json!({"installModes": [], "minKubeVersion": "1.x", "displayName": "Demo",
               "customresourcedefinitions": {"owned": [{"name": "as.x.io", "version": "v1", "kind": "K"}]}}),
        vec![crd("as.x.io"), crd("bs.y.io")],
        vec![],
        "p",
    );
    b.csv.metadata.annotations = Some(
        [
            ("olm.TargetNamespaces".to_string(), "x".to_string()),
            (
                "alm-examples".to_string(),
                "[{\"apiVersion\": \"x.io/v2\", \"kind\": \"K\"}]".to_string(),
            ),
        ]
        .into_iter()
        .collect(),
    );
    let f = validate_bundle(&b);
    let text: Vec<String> = f.iter().map(ToString::to_string).collect();
    for want in [
        "Error: Field Spec.InstallStrategy.StrategySpec.DeploymentSpecs: required field missing",
        "Error: Value x.io/v2, Kind=K: example must have a provided API",
        "Warning: Value x.io/v1, Kind=K: provided API should have an example annotation",
        "Error: install modes not found",
        "Error: csv.Spec.MinKubeVersion has an invalid value: 1.x",
        "Error: provided annotation olm.TargetNamespaces uses wrong case and should be olm.targetNamespaces instead",
        "Error: CRD \"y.io/v1, Kind=K\" is present in bundle \"test.v1.0.0\" but not defined in CSV",
    ] {
        assert!(
            text.iter().any(|t| t == want),
            "missing {want:?} in {text:#?}"
        );
    }
    assert!(has_errors(&f));
    assert!(f.iter().any(|x| x.level == Level::Warning));
}

#[test]
fn deployment_config_nested_types_are_checked() {
    let all = &["AllNamespaces"][..];
    assert_eq!(
        cfg_err(all, Some("{\"deploymentConfig\": {\"env\": [{\"value\": 3}]}}"), "ns"),
        Err("multiple errors found:\n  - required field \"name\" is missing\n  - invalid type for field \"deploymentConfig.env.0.value\": got integer, want string".into())
    );
    assert_eq!(
        cfg_err(all, Some("{\"deploymentConfig\": {\"tolerations\": [{\"key\": \"k\", \"tolerationSeconds\": \"60\"}]}}"), "ns"),
        Err("invalid type for field \"deploymentConfig.tolerations.0.tolerationSeconds\": got string, want integer".into())
    );
    assert_eq!(
        cfg_err(
            all,
            Some(
                "{\"deploymentConfig\": {\"volumeMounts\": [{\"name\": \"v\", \"mountPath\": null}]}}"
            ),
            "ns"
        ),
        Err("required field \"deploymentConfig.volumeMounts.0.mountPath\" is missing".into())
    );
    assert_eq!(
        cfg_err(
            all,
            Some(
                "{\"deploymentConfig\": {\"resources\": {\"limits\": {\"cpu\": 1, \"memory\": \"1Gi\"}}}}"
            ),
            "ns"
        ),
        Ok(None)
    );
}

/// operator-registry's format check of the annotations (`validateAnnotations` in
/// pkg/lib/bundle/validate.go, v1.74.0), with its messages, as one error.
#[test]
fn annotation_format_follows_operator_registry() {
    let bundle = |annotations: &str| {
        Bundle::from_files(vec![
            BundleFile {
                path: "metadata/annotations.yaml".into(),
                contents: format!("annotations:\n{annotations}").into_bytes(),
            },
            BundleFile {
                path: "manifests/csv.json".into(),
                contents: json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
                    "metadata": {"name": "test.v1.0.0"}, "spec": {}})
                .to_string()
                .into_bytes(),
            },
        ])
        .unwrap()
    };
    let good = "  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: test
  operators.operatorframework.io.bundle.channels.v1: stable
";
    assert_eq!(
        olm_bundle::apivalidate::validate_format(&bundle(good), "b"),
        None
    );
    let with_default =
        format!("{good}  operators.operatorframework.io.bundle.channel.default.v1: stable\n");
    assert_eq!(
        olm_bundle::apivalidate::validate_format(&bundle(&with_default), "b"),
        None
    );

    let broken = "  operators.operatorframework.io.bundle.mediatype.v1: plain
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: test
  operators.operatorframework.io.bundle.channels.v1: \"\"
  operators.operatorframework.io.bundle.channel.default.v1: \"\"
";
    let finding = olm_bundle::apivalidate::validate_format(&bundle(broken), "./bundle").unwrap();
    assert_eq!(
        finding.to_string(),
        "Error: error validating format in ./bundle: Bundle validation errors: \
         Expecting annotation \"operators.operatorframework.io.bundle.mediatype.v1\" to have value \"registry+v1\" instead of \"plain\",\
         Missing annotation \"operators.operatorframework.io.bundle.manifests.v1\",\
         Expecting annotation \"operators.operatorframework.io.bundle.channels.v1\" to have non-empty value,\
         Expecting annotation \"operators.operatorframework.io.bundle.channel.default.v1\" to have non-empty value"
    );
    let missing = olm_bundle::apivalidate::validate_format(&bundle("  x: y\n"), "b").unwrap();
    assert!(
        missing.detail.contains(
            "Missing annotation \"operators.operatorframework.io.bundle.channels.v1\",Expecting annotation \"operators.operatorframework.io.bundle.channels.v1\" to have non-empty value"
        ),
        "{missing}"
    );
    assert!(!missing.detail.contains(
        "Missing annotation \"operators.operatorframework.io.bundle.channel.default.v1\""
    ));
}

/// operator-registry's dependency checks (`validateDependencies` and the types' `Validate` in
/// pkg/registry/types.go, v1.74.0), entry by entry.
#[test]
fn dependencies_follow_operator_registry() {
    use olm_bundle::apivalidate::dependency_problems;
    let cases = [
        (
            json!({"type": "olm.gvk", "value": {"group": "g", "version": "v1", "kind": "K"}}),
            vec![],
        ),
        (
            json!({"type": "olm.gvk", "value": {"group": "g"}}),
            vec!["API Version is empty", "API Kind is empty"],
        ),
        (
            json!({"type": "olm.gvk", "value": null}),
            vec![
                "API Group is empty",
                "API Version is empty",
                "API Kind is empty",
            ],
        ),
        (
            json!({"type": "olm.gvk", "value": {"group": 5}}),
            vec!["couldn't parse dependency of type olm.gvk"],
        ),
        (
            json!({"type": "olm.package", "value": {"packageName": "etcd", "version": ">=0.9.0 <1.0.0"}}),
            vec![],
        ),
        (
            json!({"type": "olm.package", "value": {"PackageName": "etcd", "version": "1.x.y"}}),
            vec!["Invalid semver format version"],
        ),
        (
            json!({"type": "olm.package", "value": {}}),
            vec!["Package name is empty", "Package version is empty"],
        ),
        (
            json!({"type": "olm.label", "value": {"label": ""}}),
            vec!["Label information is missing"],
        ),
        (
            json!({"type": "olm.label", "value": {"label": "x"}}),
            vec![],
        ),
        (
            json!({"type": "olm.constraint", "value": {"failureMessage": "m"}}),
            vec!["The CEL field is missing"],
        ),
        (
            json!({"type": "olm.constraint", "value": {"cel": {"rule": ""}}}),
            vec!["The CEL expression is missing"],
        ),
        (
            json!({"type": "olm.constraint", "value": {"cel": {"rule": "true"}}}),
            vec![],
        ),
        (
            json!({"type": "olm.other", "value": {}}),
            vec!["couldn't parse dependency of type olm.other"],
        ),
        (
            json!({"type": "olm.gvk"}),
            vec!["couldn't parse dependency of type olm.gvk"],
        ),
    ];
    for (entry, expected) in cases {
        assert_eq!(dependency_problems(&entry), expected, "{entry}");
    }
}
