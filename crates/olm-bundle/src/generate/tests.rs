//! Generation on hand-made manifests (each rule of operator-sdk's collector), and on every
//! published bundle of the data set taken apart into the manifests a project would hold: what
//! the CSV derives from them must come back equal.

use super::*;
use crate::bundle::Bundle;

fn opts() -> Options {
    Options {
        package: "demo".into(),
        version: Some("0.1.0".into()),
        channels: "alpha".into(),
        default_channel: None,
        extra_service_accounts: Vec::new(),
        builder: "olm".into(),
        created_at: "2026-01-01T00:00:00Z".into(),
    }
}

fn manifests() -> Vec<Value> {
    vec![
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "demo-controller", "namespace": "system", "labels": {"control-plane": "manager"}},
            "spec": {"selector": {"matchLabels": {"app": "demo"}}, "template": {"metadata": {"labels": {"app": "demo"}},
                "spec": {"serviceAccountName": "demo-sa", "containers": [{"name": "manager", "image": "example.com/demo:v0.1.0",
                    "env": [{"name": "WATCH_NAMESPACE", "value": ""}, {"name": "RELATED_IMAGE_AGENT_V2", "value": "example.com/agent:v2"}]}]}}}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "demo-sa", "namespace": "system"}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "other", "namespace": "system"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "leader", "namespace": "system"},
            "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "leader", "namespace": "system"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "leader"},
            "subjects": [{"kind": "ServiceAccount", "name": "demo-sa", "namespace": "system"}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "manager"},
            "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get", "list"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "manager"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "manager"},
            "subjects": [{"kind": "ServiceAccount", "name": "demo-sa", "namespace": "system"}, {"kind": "ServiceAccount", "name": "other", "namespace": "system"}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "viewer"},
            "rules": [{"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["get"]}]}),
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "names": {"kind": "Widget", "plural": "widgets"}, "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true}, {"name": "v1alpha1", "served": false, "storage": false}]}}),
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "sample"}, "spec": {"size": 1}}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "demo-webhook-service", "namespace": "system"},
            "spec": {"selector": {"app": "demo"}, "ports": [{"port": 443, "targetPort": 9443}]}}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "v"},
            "webhooks": [{"name": "vwidget.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                "clientConfig": {"service": {"name": "demo-webhook-service", "namespace": "system", "path": "/validate"}},
                "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["widgets"]}]}]}),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "system"}}),
    ]
}

#[test]
fn the_csv_is_derived_from_the_manifests() {
    let g = generate(&manifests(), None, &opts()).unwrap();
    let csv = &g.csv;
    assert_eq!(csv["metadata"]["name"], "demo.v0.1.0");
    assert_eq!(csv["spec"]["version"], "0.1.0");
    let deployment = &csv["spec"]["install"]["spec"]["deployments"][0];
    assert_eq!(deployment["name"], "demo-controller");
    assert_eq!(deployment["label"], json!({"control-plane": "manager"}));
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0]["env"][0],
        json!({"name": "WATCH_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['olm.targetNamespaces']"}}})
    );
    assert_eq!(
        csv["spec"]["install"]["spec"]["permissions"],
        json!([{"serviceAccountName": "demo-sa", "rules": [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["*"]}]}])
    );
    assert_eq!(
        csv["spec"]["install"]["spec"]["clusterPermissions"][0]["serviceAccountName"],
        "demo-sa"
    );
    assert_eq!(
        csv["spec"]["customresourcedefinitions"]["owned"],
        json!([{"name": "widgets.example.com", "version": "v1", "kind": "Widget"}])
    );
    assert_eq!(
        csv["spec"]["webhookdefinitions"],
        json!([{"type": "ValidatingAdmissionWebhook", "generateName": "vwidget.example.com",
            "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["widgets"]}],
            "admissionReviewVersions": ["v1"], "sideEffects": "None", "containerPort": 443, "targetPort": 9443,
            "webhookPath": "/validate", "deploymentName": "demo-controller"}])
    );
    assert_eq!(
        csv["spec"]["relatedImages"],
        json!([{"name": "agent-v2", "image": "example.com/agent:v2"}])
    );
    let examples: Value = serde_json::from_str(
        csv["metadata"]["annotations"]["alm-examples"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(examples[0]["kind"], "Widget");
    // Beside the CSV: the CRD, the Service, the unbound ClusterRole, the binding that also names
    // another account, and that account. Not the Deployment, the Namespace or the bound RBAC.
    let files: Vec<&str> = g.objects.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        files,
        [
            "example.com_widgets.yaml",
            "demo-webhook-service_v1_service.yaml",
            "viewer_rbac.authorization.k8s.io_v1_clusterrole.yaml",
            "manager_rbac.authorization.k8s.io_v1_clusterrolebinding.yaml",
            "other_v1_serviceaccount.yaml",
        ]
    );
    assert!(
        g.objects
            .iter()
            .all(|(_, o)| o["metadata"].get("namespace").is_none())
    );
}

#[test]
fn a_base_keeps_what_the_author_wrote_and_regeneration_is_stable() {
    let mut base = generate(&manifests(), None, &opts()).unwrap().csv;
    base["spec"]["description"] = json!("Hand-written.");
    base["spec"]["customresourcedefinitions"]["owned"][0]["displayName"] = json!("Widget");
    base["metadata"]["annotations"]["createdAt"] = json!("2025-05-05T00:00:00Z");
    let once = generate(&manifests(), Some(base.clone()), &opts()).unwrap();
    assert_eq!(once.csv["spec"]["description"], "Hand-written.");
    assert_eq!(
        once.csv["spec"]["customresourcedefinitions"]["owned"][0]["displayName"],
        "Widget"
    );
    assert_eq!(
        once.csv["metadata"]["annotations"]["createdAt"],
        "2025-05-05T00:00:00Z"
    );
    let twice = generate(&manifests(), Some(once.csv.clone()), &opts()).unwrap();
    assert_eq!(once, twice);
}

#[test]
fn conversion_webhooks_are_defined_per_service_port_and_path() {
    let mut input = manifests();
    for plural in ["widgets", "gadgets"] {
        input.push(json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("{plural}.example.com")},
            "spec": {"group": "example.com", "names": {"kind": plural, "plural": plural}, "scope": "Namespaced",
                "versions": [{"name": "v1", "served": true, "storage": true}],
                "conversion": {"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
                    "clientConfig": {"service": {"name": "demo-webhook-service", "namespace": "system", "path": "/convert"}}}}}}));
    }
    input.retain(|o| {
        !(o["kind"] == "CustomResourceDefinition" && o["spec"].get("conversion").is_none())
    });
    let g = generate(&input, None, &opts()).unwrap();
    let conversion: Vec<&Value> = g.csv["spec"]["webhookdefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["type"] == "ConversionWebhook")
        .collect();
    assert_eq!(
        conversion,
        [
            &json!({"type": "ConversionWebhook", "generateName": "cgadgetswidgets.kb.io",
            "conversionCRDs": ["gadgets.example.com", "widgets.example.com"], "admissionReviewVersions": ["v1"],
            "sideEffects": "None", "webhookPath": "/convert", "containerPort": 443, "targetPort": 9443,
            "deploymentName": "demo-controller"})
        ]
    );
}

#[test]
fn a_scorecard_configuration_goes_into_tests() {
    let mut input = manifests();
    let config = json!({"apiVersion": "scorecard.operatorframework.io/v1alpha3", "kind": "Configuration",
        "metadata": {"name": "config"}, "stages": [{"parallel": true, "tests": []}]});
    input.push(config.clone());
    let g = generate(&input, None, &opts()).unwrap();
    assert_eq!(g.scorecard, Some(config.clone()));
    let yaml = annotations_yaml(&g.annotations);
    assert!(yaml.ends_with(
        "\n  # Annotations for testing.\n  operators.operatorframework.io.test.mediatype.v1: scorecard+v1\n  operators.operatorframework.io.test.config.v1: tests/scorecard/\n"
    ));
    let d = dockerfile(&g.annotations, "bundle");
    assert!(d.contains("\n# Labels for testing.\nLABEL operators.operatorframework.io.test.mediatype.v1=scorecard+v1\n"));
    assert!(d.ends_with("COPY bundle/tests/scorecard /tests/scorecard/\n"));
    input.push(config);
    assert_eq!(
        generate(&input, None, &opts()).unwrap_err(),
        "duplicate scorecard configurations in collector input"
    );
}

#[test]
fn empty_hand_written_fields_are_named() {
    let g = generate(&manifests(), None, &opts()).unwrap();
    assert_eq!(
        missing_fields(&g.csv),
        [
            "spec.description",
            "spec.keywords",
            "spec.maintainers",
            "spec.provider",
            "spec.maturity",
            "spec.icon",
            "spec.minKubeVersion"
        ]
    );
}

#[test]
fn metadata_files_are_laid_out_as_operator_sdk_writes_them() {
    let mut o = opts();
    o.channels = "stable,fast".into();
    o.default_channel = Some("stable".into());
    let g = generate(&manifests(), None, &o).unwrap();
    assert_eq!(
        annotations_yaml(&g.annotations),
        "annotations:
  # Core bundle annotations.
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: demo
  operators.operatorframework.io.bundle.channels.v1: stable,fast
  operators.operatorframework.io.bundle.channel.default.v1: stable
  operators.operatorframework.io.metrics.builder: olm
  operators.operatorframework.io.metrics.mediatype.v1: metrics+v1
  operators.operatorframework.io.metrics.project_layout: unknown
"
    );
    let d = dockerfile(&g.annotations, "bundle");
    assert!(d.starts_with("FROM scratch\n\n# Core bundle labels.\nLABEL operators.operatorframework.io.bundle.mediatype.v1=registry+v1\n"));
    assert!(d.ends_with("COPY bundle/manifests /manifests/\nCOPY bundle/metadata /metadata/\n"));
}

/// A published bundle taken apart: its deployments as Deployments, its (cluster) permissions as
/// (Cluster)Roles bound to their accounts, its CRDs and other objects as shipped.
fn taken_apart(b: &Bundle) -> Vec<Value> {
    let spec = &b.csv.raw["spec"]["install"]["spec"];
    let mut out = Vec::new();
    for d in spec["deployments"].as_array().into_iter().flatten() {
        let mut metadata = json!({"name": d["name"]});
        if let Some(l) = d.get("label") {
            metadata["labels"] = l.clone();
        }
        out.push(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": d["spec"]}));
    }
    for (key, cluster) in [("permissions", false), ("clusterPermissions", true)] {
        for (i, p) in spec[key].as_array().into_iter().flatten().enumerate() {
            let role = format!("{key}-{i}");
            let (rk, bk) = if cluster {
                ("ClusterRole", "ClusterRoleBinding")
            } else {
                ("Role", "RoleBinding")
            };
            out.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": rk, "metadata": {"name": role}, "rules": p["rules"]}));
            out.push(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": bk, "metadata": {"name": role},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": rk, "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": p["serviceAccountName"], "namespace": "system"}]}));
        }
    }
    let defs = b.csv.raw["spec"]["webhookdefinitions"].as_array().cloned();
    let defs = defs.unwrap_or_default();
    let mut crds: Vec<Value> = b.crds.iter().map(|c| c.object.clone()).collect();
    // Each webhook goes through a Service named after its deployment, without a selector, so the
    // deployment comes back from the name; the Service has every port its webhooks use.
    let mut services: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for def in &defs {
        let service = format!(
            "{}-service",
            def["deploymentName"].as_str().unwrap_or_default()
        );
        let port = def["containerPort"].as_i64().unwrap_or(443);
        let mut service_port = json!({"port": port});
        if let Some(t) = def.get("targetPort") {
            service_port["targetPort"] = t.clone();
        }
        let ports = services.entry(service.clone()).or_default();
        if !ports.iter().any(|p| p["port"] == port) {
            ports.push(service_port);
        }
        let mut reference = json!({"name": service, "namespace": "system", "port": port});
        if let Some(path) = def.get("webhookPath") {
            reference["path"] = path.clone();
        }
        let kind_ = def["type"].as_str().unwrap_or_default();
        if kind_ == "ConversionWebhook" {
            for crd in crds.iter_mut().filter(|c| {
                def["conversionCRDs"]
                    .as_array()
                    .is_some_and(|names| names.iter().any(|n| *n == c["metadata"]["name"]))
            }) {
                crd["apiVersion"] = json!("apiextensions.k8s.io/v1");
                crd["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
                    "clientConfig": {"service": reference},
                    "conversionReviewVersions": def["admissionReviewVersions"]}});
            }
            continue;
        }
        let mut webhook =
            json!({"name": def["generateName"], "clientConfig": {"service": reference}});
        for k in [
            "rules",
            "failurePolicy",
            "matchPolicy",
            "objectSelector",
            "timeoutSeconds",
            "reinvocationPolicy",
            "admissionReviewVersions",
            "sideEffects",
        ] {
            if let Some(v) = def.get(k) {
                webhook[k] = v.clone();
            }
        }
        let config = kind_.replace("AdmissionWebhook", "WebhookConfiguration");
        out.push(
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": config,
            "metadata": {"name": def["generateName"]}, "webhooks": [webhook]}),
        );
    }
    for (name_, ports) in &services {
        out.push(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name_, "namespace": "system"},
            "spec": {"ports": ports}}));
    }
    out.extend(crds);
    // RBAC a bundle ships as files is left out: bound to a deployment's account it would be
    // folded into the CSV, which the published CSV did not do. So are shipped Services named
    // like the webhooks' ones.
    out.extend(
        b.others
            .iter()
            .filter(|c| !c.kind().ends_with("Role") && !c.kind().ends_with("RoleBinding"))
            .filter(|c| !(c.kind() == "Service" && services.contains_key(name(&c.object))))
            .map(|c| c.object.clone()),
    );
    out
}

/// A CSV's webhook definitions as what a cluster gets from them: admission webhooks by name
/// with their defaults applied, conversion webhooks per CRD (the generator names and groups
/// them its own way, which only a base can change).
fn webhooks_as_served(csv: &Value) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for def in csv["spec"]["webhookdefinitions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let mut d = def.clone();
        let obj = d.as_object_mut().unwrap();
        obj.entry("containerPort").or_insert(json!(443));
        obj.entry("sideEffects").or_insert(json!("None"));
        if obj
            .get("admissionReviewVersions")
            .is_none_or(|v| v.as_array().is_none_or(Vec::is_empty))
        {
            obj.insert("admissionReviewVersions".into(), json!(["v1beta1"]));
        }
        obj.retain(|_, v| !v.is_null());
        if def["type"] == "ConversionWebhook" {
            obj.remove("generateName");
            let crds = obj.remove("conversionCRDs").unwrap_or_default();
            for crd in crds.as_array().into_iter().flatten() {
                out.insert(
                    format!("conversion {}", crd.as_str().unwrap_or_default()),
                    d.clone(),
                );
            }
        } else {
            out.insert(
                def["generateName"].as_str().unwrap_or_default().to_owned(),
                d,
            );
        }
    }
    out
}

fn sorted_by_account(v: &Value) -> Vec<Value> {
    // Entries of one account are merged by generation; compare the rules each account ends with.
    let mut by: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for p in v.as_array().into_iter().flatten() {
        by.entry(
            p["serviceAccountName"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
        .or_default()
        .extend(p["rules"].as_array().into_iter().flatten().cloned());
    }
    by.into_iter()
        .filter(|(_, r)| !r.is_empty())
        .map(|(sa, r)| json!({"sa": sa, "rules": r}))
        .collect()
}

/// Every data bundle regenerated from its parts: deployments, permissions, owned CRDs and
/// webhook definitions equal the published CSV's (owned entries compared as the (name, version,
/// kind) the CRDs serve), and the related images it derives are published ones.
#[test]
fn published_bundles_come_back() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/bundles");
    let (mut compared, mut webhooks, mut related) = (0, 0, 0);
    for package in std::fs::read_dir(root).unwrap() {
        for version in std::fs::read_dir(package.unwrap().path()).unwrap() {
            let dir = version.unwrap().path();
            let Ok(b) = Bundle::from_dir(&dir) else {
                continue;
            };
            if b.csv.raw["spec"]["install"]["strategy"] != "deployment" {
                continue;
            }
            let mut o = opts();
            o.package = b.package_name.clone();
            o.version = None;
            // Accounts with permissions that no deployment runs as: the author names them.
            o.extra_service_accounts = ["permissions", "clusterPermissions"]
                .iter()
                .flat_map(|k| {
                    b.csv.raw["spec"]["install"]["spec"][*k]
                        .as_array()
                        .into_iter()
                        .flatten()
                })
                .filter_map(|p| p["serviceAccountName"].as_str().map(str::to_owned))
                .collect();
            let mut base = b.csv.raw.clone();
            base["spec"]["install"]["spec"] = json!({});
            let spec = base["spec"].as_object_mut().unwrap();
            spec.remove("webhookdefinitions");
            spec.remove("relatedImages");
            let g = generate(&taken_apart(&b), Some(base), &o)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            let (want, got) = (
                &b.csv.raw["spec"]["install"]["spec"],
                &g.csv["spec"]["install"]["spec"],
            );
            let names = |v: &Value| {
                v["deployments"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|d| d["name"].clone())
                    .collect::<Vec<_>>()
            };
            assert_eq!(names(got), names(want), "{}: deployments", dir.display());
            for key in ["permissions", "clusterPermissions"] {
                assert_eq!(
                    sorted_by_account(&got[key]),
                    sorted_by_account(&want[key]),
                    "{}: {key}",
                    dir.display()
                );
            }
            let served: BTreeSet<(String, String, String)> = b
                .crds
                .iter()
                .flat_map(|c| {
                    crd_versions(&c.object)
                        .into_iter()
                        .map(|(_, v, k)| (name(&c.object).to_owned(), v, k))
                })
                .collect();
            let owned: BTreeSet<(String, String, String)> =
                g.csv["spec"]["customresourcedefinitions"]["owned"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|o| {
                        (
                            o["name"].as_str().unwrap_or_default().to_owned(),
                            o["version"].as_str().unwrap_or_default().to_owned(),
                            o["kind"].as_str().unwrap_or_default().to_owned(),
                        )
                    })
                    .collect();
            assert_eq!(owned, served, "{}: owned CRDs", dir.display());
            assert_eq!(
                webhooks_as_served(&g.csv),
                webhooks_as_served(&b.csv.raw),
                "{}: webhookdefinitions",
                dir.display()
            );
            webhooks += b.csv.raw["spec"]["webhookdefinitions"]
                .as_array()
                .map_or(0, Vec::len);
            // relatedImages: what the RELATED_IMAGE_* variables give must be published; what
            // else the published list names can only come from a base.
            let images = |csv: &Value| -> BTreeSet<String> {
                csv["spec"]["relatedImages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["image"].as_str().map(str::to_owned))
                    .collect()
            };
            let (generated, published) = (images(&g.csv), images(&b.csv.raw));
            // (Some CSVs were not made by a generator and publish no relatedImages at all.)
            assert!(
                published.is_empty() || generated.is_subset(&published),
                "{}: relatedImages {:?} not published",
                dir.display(),
                generated.difference(&published).collect::<Vec<_>>()
            );
            related += if published.is_empty() {
                0
            } else {
                generated.len()
            };
            compared += 1;
        }
    }
    assert!(compared >= 40, "only {compared} bundles compared");
    assert!(
        webhooks >= 100,
        "only {webhooks} webhook definitions compared"
    );
    assert!(related >= 60, "only {related} related images compared");
}

/// Channels a catalog could not take are refused before anything is generated.
#[test]
fn channels_a_catalog_cannot_take_are_refused() {
    for channels in ["", "stable,,fast", "stable, "] {
        let o = Options {
            channels: channels.into(),
            ..opts()
        };
        let e = generate(&manifests(), None, &o).unwrap_err();
        assert!(e.contains("every channel needs a name"), "{channels}: {e}");
    }
    let o = Options {
        channels: "stable,fast".into(),
        default_channel: Some("beta".into()),
        ..opts()
    };
    assert_eq!(
        generate(&manifests(), None, &o).unwrap_err(),
        "the default channel \"beta\" is not one of the channels \"stable,fast\""
    );
    let o = Options {
        channels: "stable,fast".into(),
        default_channel: Some("fast".into()),
        ..opts()
    };
    assert!(generate(&manifests(), None, &o).is_ok());
}
