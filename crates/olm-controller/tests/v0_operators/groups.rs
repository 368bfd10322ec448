//! OperatorGroups: install modes and target namespaces, membership, provided APIs, the RBAC
//! they and their CSVs get, copied CSVs and replacement chains.

use super::*;

/// OwnNamespace operator in a group targeting its own namespace: installed, annotated, its
/// Deployment carrying the group's annotations, an OperatorCondition, the group's status and
/// provided APIs.
pub(crate) async fn own_namespace(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace(ns, json!({})).await?;
    env.apply(crd("gadgets", &format!("{id}.example.com"), "Gadget"))
        .await?;
    env.apply(group(ns, "og", json!({"targetNamespaces": [ns]})))
        .await?;
    env.apply(csv(
        ns,
        "gadget-operator.v1.0.0",
        &["OwnNamespace"],
        Some(("gadgets", &format!("{id}.example.com"), "Gadget")),
        json!({}),
    ))
    .await?;
    let o = env
        .wait_phase(
            ns,
            "gadget-operator.v1.0.0",
            "Succeeded",
            "InstallSucceeded",
        )
        .await?;
    let annotations = &o["metadata"]["annotations"];
    check_eq!(annotations["olm.targetNamespaces"], ns);
    check_eq!(annotations["olm.operatorNamespace"], ns);
    check_eq!(annotations["olm.operatorGroup"], "og");
    let history: Vec<&str> = o["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["phase"].as_str().unwrap())
        .collect();
    // Installing appears twice when the Deployment is not available at once: InstallSucceeded
    // ("waiting for install components…"), then InstallWaiting, as upstream records it.
    check_eq!(history.first(), Some(&"Pending"));
    check_eq!(history.last(), Some(&"Succeeded"));
    if !history
        .windows(2)
        .any(|w| w == ["InstallReady", "Installing"])
    {
        bail!("no InstallReady → Installing in {history:?}");
    }
    let d = Api::<Deployment>::namespaced(env.client.clone(), ns)
        .get("gadget-operator")
        .await?;
    let template = d
        .spec
        .template
        .metadata
        .clone()
        .unwrap()
        .annotations
        .unwrap();
    check_eq!(template["olm.targetNamespaces"], ns);
    check_eq!(d.labels()["olm.owner"], "gadget-operator.v1.0.0");
    assert!(d.labels().contains_key("olm.deployment-spec-hash"));
    let og: DynamicObject = Api::namespaced_with(env.client.clone(), ns, &group_resource())
        .get("og")
        .await?;
    let og = serde_json::to_value(og)?;
    check_eq!(og["status"]["namespaces"], json!([ns]));
    check_eq!(
        og["metadata"]["annotations"]["olm.providedAPIs"],
        format!("Gadget.v1.{id}.example.com")
    );
    // The roles that open the CSV's API to Kubernetes' admin, edit and view roles.
    let roles = Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(env.client.clone());
    let admin_name = format!("gadgets.{id}.example.com-v1-admin");
    let admin = wait(
        "the per-API ClusterRoles",
        || async { Ok(roles.get_opt(&admin_name).await?) },
        |r| r.is_some(),
    )
    .await?
    .context("no admin role")?;
    check_eq!(
        admin
            .labels()
            .get("rbac.authorization.k8s.io/aggregate-to-admin")
            .map(String::as_str),
        Some("true")
    );
    let crdview = format!("gadgets.{id}.example.com-v1-crdview");
    wait(
        "the crdview ClusterRole",
        || async { Ok(roles.get_opt(&crdview).await?) },
        |r| r.is_some(),
    )
    .await?;
    let conditions: Api<DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        ns,
        &resource(
            "operators.coreos.com",
            "v2",
            "OperatorCondition",
            "operatorconditions",
        ),
    );
    wait(
        "the OperatorCondition",
        || async {
            Ok(conditions
                .get_opt("gadget-operator.v1.0.0")
                .await?
                .is_some())
        },
        |b| *b,
    )
    .await?;
    Ok(())
}

/// An OwnNamespace-only operator in a group of all namespaces fails with upstream's reason and
/// message, and recovers when the group is fixed.
pub(crate) async fn unsupported_group(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({})).await?;
    env.apply(csv(ns, "own.v1.0.0", &["OwnNamespace"], None, json!({})))
        .await?;
    let o = env
        .wait_phase(ns, "own.v1.0.0", "Failed", "UnsupportedOperatorGroup")
        .await?;
    check_eq!(
        o["status"]["message"],
        "AllNamespaces InstallModeType not supported, cannot configure to watch all namespaces"
    );
    env.apply(group(ns, "og", json!({"targetNamespaces": [ns]})))
        .await?;
    env.wait_phase(ns, "own.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    Ok(())
}

/// No group, then two groups, then one.
pub(crate) async fn group_count(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace(ns, json!({})).await?;
    env.apply(csv(
        ns,
        "lonely.v1.0.0",
        &["AllNamespaces", "OwnNamespace"],
        None,
        json!({}),
    ))
    .await?;
    let o = env
        .wait_phase(ns, "lonely.v1.0.0", "Failed", "NoOperatorGroup")
        .await?;
    check_eq!(
        o["status"]["message"],
        "csv in namespace with no operatorgroups"
    );
    env.apply(group(ns, "one", json!({"targetNamespaces": [ns]})))
        .await?;
    env.apply(group(ns, "two", json!({"targetNamespaces": [ns]})))
        .await?;
    let o = env
        .wait_phase(ns, "lonely.v1.0.0", "Failed", "TooManyOperatorGroups")
        .await?;
    check_eq!(
        o["status"]["message"],
        "csv created in namespace with multiple operatorgroups, can't pick one automatically"
    );
    let groups: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), ns, &group_resource());
    let og = wait(
        "MultipleOperatorGroup on the groups",
        || async { Ok(serde_json::to_value(groups.get("one").await?)?) },
        |g| {
            g["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter().any(|c| {
                    c["type"] == "MultipleOperatorGroup"
                        && c["reason"] == "MultipleOperatorGroupsFound"
                })
            })
        },
    )
    .await?;
    drop(og);
    groups.delete("two", &DeleteParams::default()).await?;
    env.wait_phase(ns, "lonely.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    Ok(())
}

/// A group selecting namespaces by label: none at first (`NoTargetNamespaces`), then one.
pub(crate) async fn selector_group(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"selector": {"matchLabels": {"team": id}}}))
        .await?;
    env.apply(csv(
        ns,
        "multi.v1.0.0",
        &["MultiNamespace", "SingleNamespace", "OwnNamespace"],
        None,
        json!({}),
    ))
    .await?;
    env.wait_phase(ns, "multi.v1.0.0", "Failed", "NoTargetNamespaces")
        .await?;
    let target = format!("{id}-target");
    env.namespace(&target, json!({"team": id})).await?;
    let o = env
        .wait_phase(ns, "multi.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    check_eq!(o["metadata"]["annotations"]["olm.targetNamespaces"], target);
    // Its copy in the target namespace.
    let copy = env
        .wait_csv(&target, "multi.v1.0.0", "the copy", |c| {
            c["status"]["reason"] == "Copied"
        })
        .await?;
    check_eq!(copy["metadata"]["labels"]["olm.copiedFrom"], ns);
    check_eq!(
        copy["status"]["message"],
        format!("The operator is running in {ns} but is managing this namespace")
    );
    check_eq!(
        copy["metadata"]["annotations"].get("olm.targetNamespaces"),
        None
    );
    // The explicit target carries the group's label.
    let n = Api::<Namespace>::all(env.client.clone())
        .get(&target)
        .await?;
    if !n
        .labels()
        .keys()
        .any(|k| k.starts_with("olm.operatorgroup.uid/"))
    {
        bail!("no group label on {target}: {:?}", n.labels());
    }
    // Unlabel: the copy goes.
    env.namespace(&target, json!({"team": "other"})).await?;
    env.wait_gone(&target, "multi.v1.0.0").await?;
    Ok(())
}

/// A ServiceAccount-bound operator: requirements not met until the account and its Role exist.
pub(crate) async fn permissions(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let extra = json!({"install": {"permissions": [{
        "serviceAccountName": "runner",
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
    }]}});
    env.apply(csv(ns, "needy.v1.0.0", &["OwnNamespace"], None, extra))
        .await?;
    let o = env
        .wait_phase(ns, "needy.v1.0.0", "Pending", "RequirementsNotMet")
        .await?;
    let sa = o["status"]["requirementStatus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "ServiceAccount")
        .cloned()
        .unwrap();
    check_eq!(sa["status"], "NotPresent");
    check_eq!(sa["message"], "Service account does not exist");
    env.apply(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "runner", "namespace": ns}})).await?;
    let o = env
        .wait_csv(ns, "needy.v1.0.0", "the rule not satisfied", |o| {
            o["status"]["requirementStatus"]
                .as_array()
                .is_some_and(|rs| {
                    rs.iter().any(|r| {
                        r["kind"] == "ServiceAccount" && r["status"] == "PresentNotSatisfied"
                    })
                })
        })
        .await?;
    let sa = o["status"]["requirementStatus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "ServiceAccount")
        .cloned()
        .unwrap();
    check_eq!(
        sa["dependents"][0]["message"],
        r#"namespaced rule:{"verbs":["get","list"],"apiGroups":[""],"resources":["configmaps"]}"#
    );
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "runner", "namespace": ns},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]})).await?;
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "runner", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "runner"},
        "subjects": [{"kind": "ServiceAccount", "name": "runner", "namespace": ns}]})).await?;
    env.wait_phase(ns, "needy.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    Ok(())
}

/// A group with `serviceAccountName`: the condition while the account is missing, then the
/// CSV installed as that account — failing without retries while it may not create Deployments,
/// and installed once RBAC lets it.
pub(crate) async fn scoped_group(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(
        ns,
        json!({"targetNamespaces": [ns], "serviceAccountName": "installer"}),
    )
    .await?;
    let groups: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), ns, &group_resource());
    wait(
        "OperatorGroupServiceAccount",
        || async { Ok(serde_json::to_value(groups.get("og").await?)?) },
        |g| {
            g["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter().any(|c| {
                    c["type"] == "OperatorGroupServiceAccount"
                        && c["reason"] == "ServiceAccountNotFound"
                        && c["message"] == "ServiceAccount installer not found"
                })
            })
        },
    )
    .await?;
    env.apply(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "installer", "namespace": ns}})).await?;
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "installer", "namespace": ns},
        "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch"]}]})).await?;
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "installer", "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "installer"},
        "subjects": [{"kind": "ServiceAccount", "name": "installer", "namespace": ns}]})).await?;
    let og = wait(
        "serviceAccountRef",
        || async { Ok(serde_json::to_value(groups.get("og").await?)?) },
        |g| g["status"]["serviceAccountRef"]["name"] == "installer",
    )
    .await?;
    check_eq!(
        og["status"]["conditions"].as_array().map_or(0, |c| c
            .iter()
            .filter(|c| c["type"] == "OperatorGroupServiceAccount")
            .count()),
        0
    );
    env.apply(csv(ns, "scoped.v1.0.0", &["OwnNamespace"], None, json!({})))
        .await?;
    let o = env
        .wait_phase(
            ns,
            "scoped.v1.0.0",
            "Failed",
            "InstallComponentFailedNoRetry",
        )
        .await?;
    let message = o["status"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let want = format!(
        "install strategy failed: install strategy failed: deployments.apps \"scoped\" is forbidden: User \"system:serviceaccount:{ns}:installer\" cannot patch resource \"deployments\""
    );
    if !message.starts_with(&want) {
        bail!("message {message:?} does not start with {want:?}");
    }
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "installer", "namespace": ns},
        "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["*"]}]})).await?;
    let o = env
        .wait_phase(ns, "scoped.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let reasons: Vec<&str> = o["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["reason"].as_str().unwrap_or_default())
        .collect();
    if !reasons.contains(&"DetectedClusterChange") {
        bail!("no DetectedClusterChange in {reasons:?}");
    }
    Ok(())
}

/// Two groups whose target namespaces meet: the second CSV providing the same API fails with
/// `InterOperatorGroupOwnerConflict`; a static group refuses APIs it does not list.
pub(crate) async fn intersecting_groups(env: &Env, id: &str) -> Result<()> {
    let (a, b, shared) = (format!("{id}-a"), format!("{id}-b"), format!("{id}-shared"));
    for ns in [&a, &b, &shared] {
        env.namespace(ns, json!({})).await?;
    }
    let api_group = format!("{id}.example.com");
    env.apply(crd("sprockets", &api_group, "Sprocket")).await?;
    env.apply(group(&a, "og", json!({"targetNamespaces": [a, shared]})))
        .await?;
    env.apply(group(&b, "og", json!({"targetNamespaces": [b, shared]})))
        .await?;
    let owned = Some(("sprockets", api_group.as_str(), "Sprocket"));
    env.apply(csv(
        &a,
        "first.v1.0.0",
        &["MultiNamespace", "OwnNamespace"],
        owned,
        json!({}),
    ))
    .await?;
    env.wait_phase(&a, "first.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let groups: Api<DynamicObject> =
        Api::namespaced_with(env.client.clone(), &a, &group_resource());
    let og = serde_json::to_value(groups.get("og").await?)?;
    check_eq!(
        og["metadata"]["annotations"]["olm.providedAPIs"],
        format!("Sprocket.v1.{api_group}")
    );
    env.apply(csv(
        &b,
        "second.v1.0.0",
        &["MultiNamespace", "OwnNamespace"],
        owned,
        json!({}),
    ))
    .await?;
    let o = env
        .wait_phase(
            &b,
            "second.v1.0.0",
            "Failed",
            "InterOperatorGroupOwnerConflict",
        )
        .await?;
    check_eq!(
        o["status"]["message"],
        "intersecting operatorgroups provide the same apis"
    );

    let fixed = format!("{id}-static");
    env.namespace(&fixed, json!({})).await?;
    let mut static_group = group(
        &fixed,
        "og",
        json!({"targetNamespaces": [fixed], "staticProvidedAPIs": true}),
    );
    static_group["metadata"]["annotations"] = json!({"olm.providedAPIs": ""});
    env.apply(static_group).await?;
    env.apply(crd("cogs", &api_group, "Cog")).await?;
    env.apply(csv(
        &fixed,
        "static.v1.0.0",
        &["OwnNamespace"],
        Some(("cogs", api_group.as_str(), "Cog")),
        json!({}),
    ))
    .await?;
    let o = env
        .wait_phase(
            &fixed,
            "static.v1.0.0",
            "Failed",
            "CannotModifyStaticOperatorGroupProvidedAPIs",
        )
        .await?;
    check_eq!(
        o["status"]["message"],
        "static provided api operatorgroup cannot be modified by these apis"
    );
    Ok(())
}

/// `upgradeStrategy: TechPreviewUnsafeFailForward`: a failed v1 is replaced by v2 (v1 goes
/// Replacing with upstream's message, then away).
pub(crate) async fn fail_forward(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(
        ns,
        json!({"targetNamespaces": [ns], "upgradeStrategy": "TechPreviewUnsafeFailForward"}),
    )
    .await?;
    let mut broken = csv(ns, "ff.v1.0.0", &["OwnNamespace"], None, json!({}));
    broken["spec"]["install"]["strategy"] = json!("helm");
    env.apply(broken).await?;
    env.wait_phase(ns, "ff.v1.0.0", "Failed", "InvalidInstallStrategy")
        .await?;
    env.apply(csv(
        ns,
        "ff.v2.0.0",
        &["OwnNamespace"],
        None,
        json!({"replaces": "ff.v1.0.0"}),
    ))
    .await?;
    env.wait_phase(ns, "ff.v2.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.wait_gone(ns, "ff.v1.0.0").await?;
    Ok(())
}

/// An AllNamespaces operator's Role and RoleBinding (made for it, with its owner labels) are
/// lifted to a ClusterRole and ClusterRoleBinding, which go when the CSV is deleted.
pub(crate) async fn lifted_rbac(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace(ns, json!({})).await?;
    env.apply(group(ns, "global", json!({}))).await?;
    let owner = json!({"olm.owner": "lift.v1.0.0", "olm.owner.namespace": ns, "olm.owner.kind": "ClusterServiceVersion"});
    env.apply(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "lifter", "namespace": ns}})).await?;
    let role = format!("{id}-role");
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": role, "namespace": ns, "labels": owner},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]})).await?;
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": role, "namespace": ns, "labels": owner},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "lifter", "namespace": ns}]})).await?;
    let extra = json!({"install": {"permissions": [{
        "serviceAccountName": "lifter",
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
    }]}});
    env.apply(csv(ns, "lift.v1.0.0", &["AllNamespaces"], None, extra))
        .await?;
    env.wait_phase(ns, "lift.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let roles = Api::<k8s_openapi::api::rbac::v1::ClusterRole>::all(env.client.clone());
    let lifted = wait(
        "the lifted ClusterRole",
        || async { Ok(roles.get_opt(&role).await?) },
        |r| r.is_some(),
    )
    .await?
    .context("no ClusterRole")?;
    let rules = serde_json::to_value(&lifted.rules)?;
    check_eq!(
        rules[1],
        json!({"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["namespaces"]})
    );
    let bindings = Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(env.client.clone());
    let binding = wait(
        "the lifted ClusterRoleBinding",
        || async { Ok(bindings.get_opt(&role).await?) },
        |r| r.is_some(),
    )
    .await?
    .context("no ClusterRoleBinding")?;
    check_eq!(binding.role_ref.kind, "ClusterRole");
    env.csvs(ns)
        .delete("lift.v1.0.0", &DeleteParams::default())
        .await?;
    env.wait_gone(ns, "lift.v1.0.0").await?;
    check_eq!(roles.get_opt(&role).await?.is_none(), true);
    check_eq!(bindings.get_opt(&role).await?.is_none(), true);
    Ok(())
}

/// A MultiNamespace operator's Role and RoleBinding (made by its InstallPlan, owned by the CSV)
/// are copied into each target namespace, owned by the CSV's copy there (upstream's
/// `ensureTenantRBAC`); a tenant RoleBinding deleted by hand comes back.
pub(crate) async fn tenant_rbac(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let targets = [format!("{id}-a"), format!("{id}-b")];
    env.namespace(ns, json!({})).await?;
    for t in &targets {
        env.namespace(t, json!({})).await?;
    }
    env.apply(group(
        ns,
        "og",
        json!({"targetNamespaces": [&targets[0], &targets[1]]}),
    ))
    .await?;
    env.apply(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "tenant", "namespace": ns}})).await?;
    let rules = json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]);
    let extra =
        json!({"install": {"permissions": [{"serviceAccountName": "tenant", "rules": rules}]}});
    let name = "tenant.v1.0.0";
    let created = env
        .apply(csv(ns, name, &["MultiNamespace"], None, extra))
        .await?;
    let owner = json!({"olm.owner": name, "olm.owner.namespace": ns, "olm.owner.kind": "ClusterServiceVersion"});
    let refs = json!([{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "name": name, "uid": created.uid(), "blockOwnerDeletion": false, "controller": false}]);
    let role = format!("{id}-role");
    env.apply(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": role, "namespace": ns, "labels": owner, "ownerReferences": refs}, "rules": rules})).await?;
    env.apply(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": role, "namespace": ns, "labels": owner, "ownerReferences": refs},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": ns}]}),
    )
    .await?;
    env.wait_phase(ns, name, "Succeeded", "InstallSucceeded")
        .await?;
    for t in &targets {
        let copy = env
            .wait_csv(t, name, "the copy", |c| c["status"]["reason"] == "Copied")
            .await?;
        let roles = Api::<k8s_openapi::api::rbac::v1::Role>::namespaced(env.client.clone(), t);
        let tenant = wait(
            "the tenant Role",
            || async { Ok(roles.get_opt(&role).await?) },
            |r| r.is_some(),
        )
        .await?
        .context("no Role")?;
        check_eq!(serde_json::to_value(&tenant.rules)?, rules);
        let labels = tenant.labels();
        check_eq!(labels.get("olm.copiedFrom").map(String::as_str), Some(ns));
        check_eq!(labels.get("olm.owner.namespace"), Some(t));
        check_eq!(labels.get("olm.managed").map(String::as_str), Some("true"));
        check_eq!(
            tenant.owner_references()[0].uid,
            copy["metadata"]["uid"].as_str().unwrap_or_default()
        );
        let bindings =
            Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(env.client.clone(), t);
        let binding = wait(
            "the tenant RoleBinding",
            || async { Ok(bindings.get_opt(&role).await?) },
            |r| r.is_some(),
        )
        .await?
        .context("no RoleBinding")?;
        check_eq!(
            binding.subjects.as_ref().map(|s| s[0].namespace.clone()),
            Some(Some(ns.to_owned()))
        );
    }
    let bindings =
        Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(env.client.clone(), &targets[0]);
    bindings.delete(&role, &DeleteParams::default()).await?;
    wait(
        "the tenant RoleBinding back",
        || async { Ok(bindings.get_opt(&role).await?) },
        |r| {
            r.as_ref()
                .is_some_and(|b| b.metadata.deletion_timestamp.is_none())
        },
    )
    .await?;
    Ok(())
}

/// v1 → v2 → v3 by `spec.replaces`: each older CSV is Replacing, then deleted once the newer
/// one succeeded; Upgradeable=False in an override holds v3 in Pending until it is lifted.
pub(crate) async fn replaces_chain(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    env.apply(csv(ns, "chain.v1.0.0", &["OwnNamespace"], None, json!({})))
        .await?;
    env.wait_phase(ns, "chain.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.apply(csv(
        ns,
        "chain.v2.0.0",
        &["OwnNamespace"],
        None,
        json!({"replaces": "chain.v1.0.0"}),
    ))
    .await?;
    env.wait_phase(ns, "chain.v2.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.wait_gone(ns, "chain.v1.0.0").await?;

    // The operator says it may not be upgraded: an administrator's override.
    let conditions = v0fixtures::operator_conditions(&env.client, ns, "chain.v2.0.0").await?;
    // What the operator reports in spec.conditions is mirrored into status with the generation.
    let report = json!({"spec": {"conditions": [{"type": "Upgradeable", "status": "True", "reason": "Ready", "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    conditions
        .patch(
            "chain.v2.0.0",
            &PatchParams::default(),
            &Patch::Merge(&report),
        )
        .await?;
    wait(
        "the condition mirrored into status",
        || async { Ok(serde_json::to_value(conditions.get("chain.v2.0.0").await?)?) },
        |c| {
            c["status"]["conditions"][0]["type"] == "Upgradeable"
                && c["status"]["conditions"][0]["observedGeneration"] == c["metadata"]["generation"]
        },
    )
    .await?;
    let hold = json!({"spec": {"overrides": [{"type": "Upgradeable", "status": "False", "reason": "Hold", "message": "migrating data"}]}});
    conditions
        .patch(
            "chain.v2.0.0",
            &PatchParams::default(),
            &Patch::Merge(&hold),
        )
        .await?;
    env.apply(csv(
        ns,
        "chain.v3.0.0",
        &["OwnNamespace"],
        None,
        json!({"replaces": "chain.v2.0.0"}),
    ))
    .await?;
    let o = env
        .wait_phase(
            ns,
            "chain.v3.0.0",
            "Pending",
            "OperatorConditionNotUpgradeable",
        )
        .await?;
    check_eq!(
        o["status"]["message"],
        "operator is not upgradeable: The operator is not upgradeable: migrating data"
    );
    let release = json!({"spec": {"overrides": [{"type": "Upgradeable", "status": "True", "reason": "Done", "message": "go"}]}});
    conditions
        .patch(
            "chain.v2.0.0",
            &PatchParams::default(),
            &Patch::Merge(&release),
        )
        .await?;
    env.wait_phase(ns, "chain.v3.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.wait_gone(ns, "chain.v2.0.0").await?;
    Ok(())
}

/// An AllNamespaces operator is copied into every other namespace, a new namespace included,
/// but never over a CSV of the same name that someone installed in one of them;
/// `disableCopiedCSVs` removes the copies with a Warning event, turning it off restores them.
pub(crate) async fn copies(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    // Another team's operator of the same name, installed in its own namespace first.
    let mine = format!("{id}-mine");
    env.namespace(&mine, json!({})).await?;
    env.apply(group(&mine, "own", json!({"targetNamespaces": [mine]})))
        .await?;
    env.apply(csv(
        &mine,
        "everywhere.v1.0.0",
        &["OwnNamespace"],
        None,
        json!({}),
    ))
    .await?;
    env.wait_phase(&mine, "everywhere.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    env.namespace(ns, json!({})).await?;
    env.apply(group(ns, "global", json!({}))).await?;
    env.apply(csv(
        ns,
        "everywhere.v1.0.0",
        &["AllNamespaces", "OwnNamespace"],
        None,
        json!({}),
    ))
    .await?;
    env.wait_phase(ns, "everywhere.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let later = format!("{id}-later");
    env.namespace(&later, json!({})).await?;
    env.wait_csv(
        &later,
        "everywhere.v1.0.0",
        "a copy in a new namespace",
        |c| c["status"]["reason"] == "Copied",
    )
    .await?;
    env.wait_csv("default", "everywhere.v1.0.0", "a copy in default", |c| {
        c["status"]["reason"] == "Copied"
    })
    .await?;
    let theirs = Api::<DynamicObject>::namespaced_with(
        env.client.clone(),
        &mine,
        &resource(
            "operators.coreos.com",
            "v1alpha1",
            "ClusterServiceVersion",
            "clusterserviceversions",
        ),
    )
    .get("everywhere.v1.0.0")
    .await?;
    let theirs = serde_json::to_value(theirs)?;
    assert!(
        theirs["metadata"]["labels"]["olm.copiedFrom"].is_null()
            && theirs["status"]["phase"] == "Succeeded"
            && theirs["status"]["reason"] == "InstallSucceeded",
        "the CSV installed in {mine} was overwritten by a copy: {theirs}"
    );

    let configs: Api<DynamicObject> = Api::all_with(
        env.client.clone(),
        &resource("operators.coreos.com", "v1", "OLMConfig", "olmconfigs"),
    );
    // olm run made OLMConfig cluster at start with an empty spec, as upstream's manifests ship
    // it (OLM repo deploy/chart/templates/0000_50_olm_03-olmconfig.yaml).
    let made = serde_json::to_value(configs.get("cluster").await?)?;
    assert_eq!(made["spec"], json!({}), "{made}");

    env.apply(json!({"apiVersion": "operators.coreos.com/v1", "kind": "OLMConfig", "metadata": {"name": "cluster"},
        "spec": {"features": {"disableCopiedCSVs": true}}})).await?;
    env.wait_gone(&later, "everywhere.v1.0.0").await?;
    env.wait_gone("default", "everywhere.v1.0.0").await?;
    let condition = |status: &'static str, reason: &'static str| {
        let configs = configs.clone();
        async move {
            wait(
                &format!("OLMConfig DisabledCopiedCSVs {status}/{reason}"),
                || async { Ok(serde_json::to_value(configs.get("cluster").await?)?) },
                |c| {
                    c["status"]["conditions"].as_array().is_some_and(|cs| {
                        cs.iter().any(|x| {
                            x["type"] == "DisabledCopiedCSVs"
                                && x["status"] == status
                                && x["reason"] == reason
                        })
                    })
                },
            )
            .await
        }
    };
    condition("True", "CopiedCSVsDisabled").await?;
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(env.client.clone(), ns);
    wait(
        "the DisabledCopiedCSVs event",
        || async { Ok(events.list(&ListParams::default()).await?.items) },
        |items| {
            items.iter().any(|e| {
                e.reason.as_deref() == Some("DisabledCopiedCSVs")
                    && e.note.as_deref()
                        == Some(&*format!("CSV copying disabled for {ns}/everywhere.v1.0.0"))
            })
        },
    )
    .await?;
    env.apply(json!({"apiVersion": "operators.coreos.com/v1", "kind": "OLMConfig", "metadata": {"name": "cluster"},
        "spec": {"features": {"disableCopiedCSVs": false}}})).await?;
    env.wait_csv(&later, "everywhere.v1.0.0", "the copy restored", |c| {
        c["status"]["reason"] == "Copied"
    })
    .await?;
    condition("False", "CopiedCSVsEnabled").await?;
    // Deleting the operator deletes its copies.
    env.csvs(ns)
        .delete("everywhere.v1.0.0", &DeleteParams::default())
        .await?;
    env.wait_gone(&later, "everywhere.v1.0.0").await?;
    Ok(())
}
