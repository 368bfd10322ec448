//! InstallPlans: plans made by hand, the objects a plan writes, warnings, updates of existing
//! objects, CRDs being deleted, and twelve real bundles installed through plans.

use super::*;

/// One step of a hand-made plan: `manifest` as the object of `kind` named `name` (of `group` and
/// `version`), for the CSV `resolving`.
pub(crate) fn plan_step(
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
pub(crate) async fn hand_made_plan(
    env: &Env,
    ns: &str,
    name: &str,
    steps: Vec<Value>,
) -> Result<()> {
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
pub(crate) async fn wait_plan_complete(env: &Env, ns: &str, name: &str) -> Result<()> {
    let plans = installplans_api(env, ns);
    wait(
        "the plan Complete",
        || async { Ok(plans.get(name).await?.data["status"]["phase"].clone()) },
        |phase| phase == "Complete",
    )
    .await?;
    Ok(())
}

pub(crate) fn installplans_api(env: &Env, ns: &str) -> Api<DynamicObject> {
    v1alpha1_api(env, ns, "InstallPlan", "installplans")
}

/// What an InstallPlan would create for a bundle before its CSV: its CRDs, its ServiceAccounts
/// with Roles and ClusterRoles holding exactly the CSV's permissions, and its plain objects.
pub(crate) async fn install_plan_objects(
    env: &Env,
    ns: &str,
    bundle: &olm_bundle::Bundle,
) -> Result<()> {
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
pub(crate) const REAL_BUNDLES: [(&str, Option<&str>); 12] = [
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
pub(crate) async fn real_bundle(env: &Env, package: &str, missing: Option<&str>) -> Result<()> {
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
pub(crate) async fn real_bundles(env: &Env, _: &str) -> Result<()> {
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

/// A plan step whose object is of a deprecated version draws the API server's warning, which
/// is reported as upstream's catalog-operator reports it (`installplan_e2e_test.go`, "creates
/// an Event surfacing the deprecation warning"): a Warning event `AppliedWithWarnings` on the
/// plan's step, in upstream's words. The kind is one a plan may create (PrometheusRule, in a
/// group of this scenario's own), at a version its CRD marks deprecated.
pub(crate) async fn plan_warnings(env: &Env, id: &str) -> Result<()> {
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

/// A plan's steps bring objects that exist to the plan's version, as upstream's step ensurers
/// do (an upgrade whose bundle changed a ConfigMap changes it): the ConfigMap's data is
/// replaced, and the Service gets its new port and keeps the cluster IP it was given.
pub(crate) async fn plan_updates_existing(env: &Env, id: &str) -> Result<()> {
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
pub(crate) async fn crd_terminating(env: &Env, id: &str) -> Result<()> {
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
