//! Subscriptions: resolution, upgrades, Manual approval, scoped installs, bundle images,
//! fail-forward, deprecations and CRD upgrade validation.

use super::*;

pub(crate) fn subscription(
    ns: &str,
    name: &str,
    package: &str,
    source: &str,
    approval: &str,
) -> Value {
    json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"name": package, "channel": "stable", "source": source, "sourceNamespace": ns,
            "installPlanApproval": approval}})
}

/// A bundle served inline (`olm.bundle.object`): a CSV providing `provides` (plural, kind) of
/// `api_group` and requiring `requires`, with the provided CRD.
pub(crate) fn inline_bundle(
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
pub(crate) fn inline_bundle_with(
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
pub(crate) fn foo_bar_catalog(api_group: &str, upgraded: bool) -> String {
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
pub(crate) fn v1alpha1_api(env: &Env, ns: &str, kind: &str, plural: &str) -> Api<DynamicObject> {
    v0fixtures::olm_api(&env.client, ns, "v1alpha1", kind, plural)
}

pub(crate) fn subscriptions_api(env: &Env, ns: &str) -> Api<DynamicObject> {
    v1alpha1_api(env, ns, "Subscription", "subscriptions")
}

/// Waits until the Subscription `ns/name` satisfies `ok`.
pub(crate) async fn wait_subscription(
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
pub(crate) async fn subscribe_and_upgrade(env: &Env, id: &str) -> Result<()> {
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
pub(crate) async fn subscribe_scoped(env: &Env, id: &str) -> Result<()> {
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
pub(crate) async fn crd_upgrade_validation(env: &Env, id: &str) -> Result<()> {
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
pub(crate) async fn crd_upgrade(env: &Env, ns: &str, webhook: bool) -> Result<Value> {
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
pub(crate) async fn subscribe_manual(env: &Env, id: &str) -> Result<()> {
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
pub(crate) async fn subscribe_unsatisfiable(env: &Env, id: &str) -> Result<()> {
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
pub(crate) async fn subscribe_images(env: &Env, id: &str) -> Result<()> {
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
pub(crate) async fn subscribe_fail_forward(env: &Env, id: &str) -> Result<()> {
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

/// A Subscription says what its catalog deprecates of what it installed (upstream's
/// `PackageDeprecated`, `ChannelDeprecated`, `BundleDeprecated` and the roll-up `Deprecated`,
/// in its words), from the catalog's `olm.deprecations`.
pub(crate) async fn subscribe_deprecated(env: &Env, id: &str) -> Result<()> {
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
