//! CatalogSources: image, address, in-process and ConfigMap catalogs, their polling and status.

use super::*;

/// A grpc CatalogSource with an image (seed 001): the registry Pod as upstream makes it — the
/// namespace's restricted default, grpcPodConfig's node selector, tolerations and memory target,
/// the priority-class annotation — its Service, ServiceAccount and NetworkPolicy, and
/// `status.registryService`; a changed spec replaces the Pod; a spec naming no source fails with
/// upstream's reason and message.
pub(crate) async fn catalog_source(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace(
        ns,
        json!({"pod-security.kubernetes.io/enforce": "restricted"}),
    )
    .await?;
    env.apply(
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": format!("{id}-prio")}, "value": 1000}),
    )
    .await?;
    let sources = catalogsources_api(env, ns);
    let source = |memory: &str| {
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "community.catalog", "namespace": ns,
                "annotations": {"operatorframework.io/priorityclass": format!("{id}-prio")}},
            "spec": {"sourceType": "grpc", "image": "quay.io/example/catalog:v1", "secrets": ["pull"],
                "grpcPodConfig": {"nodeSelector": {"disk": "ssd"}, "memoryTarget": memory,
                    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]}}})
    };
    env.apply(source("30Mi")).await?;
    let pods = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(env.client.clone(), ns);
    let selector = "olm.catalogSource=community.catalog";
    let registry = |limit: &'static str| {
        let pods = pods.clone();
        async move {
            let list = pods.list(&ListParams::default().labels(selector)).await?;
            Ok(list
                .items
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .find(|p| {
                    p.spec.as_ref().is_some_and(|s| {
                        s.containers[0]
                            .env
                            .as_ref()
                            .is_some_and(|e| e.iter().any(|v| v.value.as_deref() == Some(limit)))
                    })
                }))
        }
    };
    let pod = wait("the registry pod", || registry("30MiB"), |p| p.is_some())
        .await?
        .context("no pod")?;
    let spec = serde_json::to_value(pod.spec.as_ref().context("no spec")?)?;
    let c = &spec["containers"][0];
    check_eq!(c["name"], "registry-server");
    check_eq!(c["image"], "quay.io/example/catalog:v1");
    check_eq!(c["imagePullPolicy"], "Always");
    check_eq!(c["ports"][0]["containerPort"], 50051);
    check_eq!(c["readinessProbe"]["grpc"]["port"], 50051);
    check_eq!(c["resources"]["requests"]["memory"], "30Mi");
    check_eq!(c["securityContext"]["capabilities"]["drop"], json!(["ALL"]));
    check_eq!(spec["nodeSelector"], json!({"disk": "ssd"}));
    check_eq!(spec["tolerations"][0]["key"], "dedicated");
    check_eq!(spec["priorityClassName"], format!("{id}-prio"));
    check_eq!(
        spec["securityContext"]["seccompProfile"]["type"],
        "RuntimeDefault"
    );
    check_eq!(spec["securityContext"]["runAsUser"], 1001);
    check_eq!(spec["serviceAccountName"], "community.catalog");
    check_eq!(spec["imagePullSecrets"], json!([{"name": "pull"}]));
    check_eq!(
        pod.annotations()
            .get("cluster-autoscaler.kubernetes.io/safe-to-evict")
            .map(String::as_str),
        Some("true")
    );
    let service = Api::<k8s_openapi::api::core::v1::Service>::namespaced(env.client.clone(), ns)
        .get("community-catalog")
        .await?;
    check_eq!(
        service.spec.and_then(|s| s.selector),
        Some(std::collections::BTreeMap::from([
            (
                "olm.catalogSource".to_owned(),
                "community.catalog".to_owned()
            ),
            ("olm.managed".to_owned(), "true".to_owned()),
        ]))
    );
    Api::<k8s_openapi::api::networking::v1::NetworkPolicy>::namespaced(env.client.clone(), ns)
        .get("community.catalog-grpc-server")
        .await?;
    let status = wait(
        "status.registryService",
        || source_named(&sources, "community.catalog"),
        |s| s.data["status"]["registryService"].is_object(),
    )
    .await?;
    check_eq!(
        status.data["status"]["registryService"]["serviceName"],
        "community-catalog"
    );
    check_eq!(status.data["status"]["registryService"]["port"], "50051");
    let dialled = wait(
        "status.connectionState",
        || source_named(&sources, "community.catalog"),
        |s| s.data["status"]["connectionState"]["address"].is_string(),
    )
    .await?;
    check_eq!(
        dialled.data["status"]["connectionState"]["address"],
        format!("community-catalog.{ns}.svc:50051")
    );
    // A new memory target: a new Pod replaces the old one.
    env.apply(source("40Mi")).await?;
    wait(
        "the replaced registry pod",
        || registry("40MiB"),
        |p| p.is_some(),
    )
    .await?;
    wait(
        "the old registry pod gone",
        || registry("30MiB"),
        |p| p.is_none(),
    )
    .await?;
    env.apply(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "nothing", "namespace": ns}, "spec": {"sourceType": "grpc"}}),
    )
    .await?;
    source_reports(
        &sources,
        "nothing",
        "SpecInvalidError",
        "image and address unset: at least one must be set for sourcetype: grpc",
    )
    .await?;
    Ok(())
}

/// `registryPoll` on a registry Pod: every interval an update pod starts; the same digest
/// discards it, a new digest promotes it and retires the serving Pod, a failed one is deleted
/// and reported; an interval that does not parse gets upstream's message. No kubelet runs the
/// Pods (their node selector matches no node): the test writes their status as one would.
pub(crate) async fn catalog_poll(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace(ns, json!({})).await?;
    let sources = catalogsources_api(env, ns);
    let source = |name: &str, interval: &str| {
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"sourceType": "grpc", "image": "quay.io/example/catalog:latest",
                "grpcPodConfig": {"nodeSelector": {"olm-test": "no-such-node"}},
                "updateStrategy": {"registryPoll": {"interval": interval}}}})
    };
    env.apply(source("polled", "3s")).await?;
    let pods = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(env.client.clone(), ns);
    let list = |selector: &'static str| {
        let pods = pods.clone();
        async move {
            Ok(pods
                .list(&ListParams::default().labels(selector))
                .await?
                .items
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .map(|p| p.name_any())
                .collect::<Vec<_>>())
        }
    };
    // What a kubelet reports for a running registry that pulled `digest`.
    let run = |name: String, digest: &'static str, phase: &'static str| {
        let pods = pods.clone();
        async move {
            let status = json!({"status": {"phase": phase,
                "conditions": [{"type": "Ready", "status": if phase == "Running" { "True" } else { "False" }}],
                "containerStatuses": [{"name": "registry-server", "image": "quay.io/example/catalog:latest",
                    "imageID": format!("quay.io/example/catalog@sha256:{digest}"), "ready": phase == "Running",
                    "restartCount": 0, "state": {"running": {}}}]}});
            pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(status))
                .await?;
            anyhow::Ok(())
        }
    };
    let serving = "olm.catalogSource=polled";
    let updating = "catalogsource.operators.coreos.com/update=polled";
    // The next update pod: one, none of `before`.
    let next_update = |before: Vec<String>| {
        let list = &list;
        async move {
            wait(
                "the next update pod",
                || list(updating),
                |p| p.len() == 1 && !p.iter().any(|n| before.contains(n)),
            )
            .await
        }
    };
    // Waits until `pod` is no update pod any more.
    let settled = |pod: String| {
        let list = &list;
        async move {
            wait(
                "the update pod settled",
                || list(updating),
                |p| !p.contains(&pod),
            )
            .await
        }
    };
    let first = wait("the registry pod", || list(serving), |p| p.len() == 1).await?;
    run(first[0].clone(), "aaaa", "Running").await?;
    // The same digest: the update pod goes, the serving Pod stays.
    let update = next_update(Vec::new()).await?;
    let polled = sources.get("polled").await?;
    check_eq!(
        polled.data["status"]["latestImageRegistryPoll"].is_string(),
        true
    );
    let labels = pods.get(&update[0]).await?.labels().clone();
    check_eq!(
        labels.get("olm.catalogSource").map(String::as_str),
        Some(""),
        "the Service must not route to an update pod"
    );
    run(update[0].clone(), "aaaa", "Running").await?;
    settled(update[0].clone()).await?;
    check_eq!(list(serving).await?, first);
    // A new digest: the next update pod is promoted and the old Pod retired.
    let update = next_update(update).await?;
    run(update[0].clone(), "bbbb", "Running").await?;
    wait(
        "the promoted pod serving",
        || list(serving),
        |p| *p == update,
    )
    .await?;
    // A failed update pod is deleted and reported.
    let failing = next_update(update.clone()).await?;
    run(failing[0].clone(), "cccc", "Failed").await?;
    let message = format!(
        "couldn't ensure registry server - error ensuring update pod for catalog source polled: update pod {} in a Failed state: deleted update pod",
        failing[0]
    );
    source_reports(&sources, "polled", "RegistryServerError", &message).await?;
    settled(failing[0].clone()).await?;
    check_eq!(list(serving).await?, update);
    sources.delete("polled", &DeleteParams::default()).await?;
    // An interval Go cannot parse: the default, and upstream's message.
    env.apply(source("unparsable", "ten minutes")).await?;
    source_reports(&sources, "unparsable", "InvalidIntervalError", "error parsing spec.updateStrategy.registryPoll.interval. Using the default value of 15m0s instead. Error: time: invalid duration \"ten minutes\"").await?;
    Ok(())
}

pub(crate) fn catalogsources_api(env: &Env, ns: &str) -> Api<DynamicObject> {
    v1alpha1_api(env, ns, "CatalogSource", "catalogsources")
}

/// Waits for the CatalogSource `name` to report `reason` and checks its message.
pub(crate) async fn source_reports(
    sources: &Api<DynamicObject>,
    name: &str,
    reason: &str,
    message: &str,
) -> Result<()> {
    let reported = wait(
        reason,
        || source_named(sources, name),
        |s| s.data["status"]["reason"] == reason,
    )
    .await?;
    check_eq!(reported.data["status"]["message"], message);
    Ok(())
}

/// The CatalogSource `name`, for [`wait`].
pub(crate) async fn source_named(
    sources: &Api<DynamicObject>,
    name: &str,
) -> Result<DynamicObject> {
    Ok(sources.get(name).await?)
}

/// A grpc CatalogSource with `spec.address`: olm dials it and `status.connectionState` follows
/// the registry — `READY` while an `olm catalog serve` registry (run here in-process) answers,
/// `TRANSIENT_FAILURE` once it stops.
pub(crate) async fn catalog_source_address(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    env.namespace(ns, json!({})).await?;
    let served = serve_fbc(
        r#"{"schema":"olm.package","name":"foo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v1.0.0"}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v1.0.0","image":"example.com/foo:v1","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}}]}
"#,
    )
    .await?;
    let address = served.address.clone();
    env.apply(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "local", "namespace": ns},
        "spec": {"sourceType": "grpc", "address": address}}),
    )
    .await?;
    let sources = catalogsources_api(env, ns);
    let state = |want: &'static str| {
        move |s: &DynamicObject| s.data["status"]["connectionState"]["lastObservedState"] == want
    };
    let ready = wait("READY", || source_named(&sources, "local"), state("READY")).await?;
    check_eq!(ready.data["status"]["connectionState"]["address"], address);
    check_eq!(
        ready.data["status"]["connectionState"]["lastConnect"].is_string(),
        true
    );
    served.stop().await?;
    wait(
        "TRANSIENT_FAILURE",
        || source_named(&sources, "local"),
        state("TRANSIENT_FAILURE"),
    )
    .await?;
    Ok(())
}

pub(crate) fn address_source(ns: &str, name: &str, address: &str) -> Value {
    json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"sourceType": "grpc", "address": address}})
}

/// A CatalogSource whose image olm serves itself (no registry Pod: the test control plane has
/// no kubelet): the catalog image is pulled from a real registry, served in process, and polled
/// (`registryPoll`); pushing a new catalog to the same tag upgrades the Subscription.
pub(crate) async fn catalog_in_process(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let api_group = format!("{id}.example.com");
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let registry =
        olm_testenv::registry::Registry::start().map_err(|e| anyhow!("a local registry: {e}"))?;
    let pusher = olm_image::Client::new(olm_image::ClientOptions::default());
    let push = |fbc: String| {
        let pusher = pusher.clone();
        let reference = format!("{}/catalog:latest", registry.addr());
        async move {
            let dir = tempfile::tempdir()?;
            std::fs::create_dir_all(dir.path().join("configs"))?;
            std::fs::write(dir.path().join("configs/catalog.json"), fbc)?;
            let image = olm_image::catalog_image(&dir.path().join("configs"))?;
            let reference: olm_image::ImageRef = reference.parse()?;
            pusher.push(&image, &reference).await?;
            anyhow::Ok(())
        }
    };
    push(foo_bar_catalog(&api_group, false)).await?;
    env.apply(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "served", "namespace": ns,
            "annotations": {"olm.operatorframework.io/serve-in-process": "true"}},
        "spec": {"sourceType": "grpc", "image": format!("{}/catalog:latest", registry.addr()),
            "updateStrategy": {"registryPoll": {"interval": "2s"}}}}),
    )
    .await?;
    env.apply(subscription(ns, "foo", "foo", "served", "Automatic"))
        .await?;
    env.wait_phase(ns, "foo.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(env.client.clone(), ns);
    // No registry Pod.
    let registry_pods = ListParams::default().labels("olm.catalogSource=served");
    check_eq!(pods.list(&registry_pods).await?.items.len(), 0);
    push(foo_bar_catalog(&api_group, true)).await?;
    env.wait_phase(ns, "foo.v2.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    wait_subscription(env, ns, "foo", "foo upgraded", |s| {
        s["status"]["installedCSV"] == "foo.v2.0.0"
    })
    .await?;
    Ok(())
}

/// The data of a ConfigMap catalog: package `foo` in channel `stable`, heading at `head`, each
/// CSV owning Widgets of `api_group` (a version listed replacing the one before it).
pub(crate) fn config_map_catalog(api_group: &str, versions: &[&str]) -> Value {
    let mut csvs = Vec::new();
    let mut previous: Option<String> = None;
    for v in versions {
        let name = format!("foo.v{v}");
        let mut c = csv(
            "",
            &name,
            &["OwnNamespace", "AllNamespaces"],
            Some(("widgets", api_group, "Widget")),
            previous
                .as_ref()
                .map_or(json!({}), |p| json!({"replaces": p})),
        );
        c["spec"]["version"] = json!(v);
        if let Some(m) = c["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        csvs.push(c);
        previous = Some(name);
    }
    let head = previous.unwrap_or_default();
    let yaml = |v: Value| olm_goenc::yaml::to_yaml(&v);
    json!({
        "customResourceDefinitions": yaml(json!([crd("widgets", api_group, "Widget")])),
        "clusterServiceVersions": yaml(Value::Array(csvs)),
        "packages": yaml(json!([{"packageName": "foo", "defaultChannel": "stable",
            "channels": [{"name": "stable", "currentCSV": head}]}])),
    })
}

/// A ConfigMap CatalogSource, served by olm itself: it adopts the ConfigMap (owner reference,
/// `olm.managed: "false"`), records `status.configMapReference` and `status.registryService`,
/// goes READY, and a Subscription installs from it; a new ConfigMap version upgrades the
/// operator. A ConfigMap that does not load, an `internal` source naming a missing one, and an
/// address source's `registryService` are reported as upstream reports them.
pub(crate) async fn catalog_config_map(env: &Env, id: &str) -> Result<()> {
    let ns = id;
    let api_group = format!("{id}.example.com");
    env.namespace_with_group(ns, json!({"targetNamespaces": [ns]}))
        .await?;
    let config_map = |name: &str, data: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns}, "data": data})
    };
    env.apply(config_map(
        "catalog",
        config_map_catalog(&api_group, &["1.0.0"]),
    ))
    .await?;
    env.apply(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "cm", "namespace": ns},
        "spec": {"sourceType": "configmap", "configMap": "catalog", "displayName": "From a ConfigMap"}}),
    )
    .await?;
    let sources = catalogsources_api(env, ns);
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(env.client.clone(), ns);
    let ready = wait(
        "a READY configmap source",
        || source_named(&sources, "cm"),
        |s| s.data["status"]["connectionState"]["lastObservedState"] == "READY",
    )
    .await?;
    let status = &ready.data["status"];
    check_eq!(status["registryService"]["serviceName"], "cm");
    check_eq!(status["registryService"]["serviceNamespace"], ns);
    check_eq!(status["registryService"]["port"], "50051");
    check_eq!(status["registryService"]["protocol"], "grpc");
    check_eq!(status["reason"], Value::Null);
    let cm = config_maps.get("catalog").await?;
    check_eq!(
        status["configMapReference"]["resourceVersion"].as_str(),
        cm.metadata.resource_version.as_deref()
    );
    check_eq!(status["configMapReference"]["name"], "catalog");
    let managed = cm
        .metadata
        .labels
        .clone()
        .unwrap_or_default()
        .get("olm.managed")
        .cloned();
    check_eq!(managed.as_deref(), Some("false"));
    let owners = cm.metadata.owner_references.unwrap_or_default();
    check_eq!(
        owners
            .iter()
            .any(|o| o.kind == "CatalogSource" && o.name == "cm"),
        true
    );
    env.apply(subscription(ns, "foo", "foo", "cm", "Automatic"))
        .await?;
    env.wait_phase(ns, "foo.v1.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    // A new version of the ConfigMap is served in place of the old.
    env.apply(config_map(
        "catalog",
        config_map_catalog(&api_group, &["1.0.0", "2.0.0"]),
    ))
    .await?;
    env.wait_phase(ns, "foo.v2.0.0", "Succeeded", "InstallSucceeded")
        .await?;
    // Upstream's e2e (`updateInternalCatalog` in test/e2e/subscription_e2e_test.go) waits, after
    // editing the ConfigMap, for the new resourceVersion recorded and a READY connection whose
    // lastConnect is strictly after configMapReference.lastUpdateTime (whole seconds).
    let changed = config_maps
        .get("catalog")
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    let time = |v: &Value| v.as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let reconnected = wait(
        "lastConnect after the change's lastUpdateTime",
        || source_named(&sources, "cm"),
        |s| {
            let status = &s.data["status"];
            let reference = &status["configMapReference"];
            let connection = &status["connectionState"];
            reference["resourceVersion"] == changed.as_str()
                && connection["lastObservedState"] == "READY"
                && connection["address"] != ready.data["status"]["connectionState"]["address"]
        },
    )
    .await?;
    let status = &reconnected.data["status"];
    let updated = time(&status["configMapReference"]["lastUpdateTime"]);
    let connected = time(&status["connectionState"]["lastConnect"]);
    check_eq!(updated.is_some() && connected > updated, true);

    // A ConfigMap that does not load, under the deprecated `internal` name.
    env.apply(config_map(
        "broken",
        json!({"customResourceDefinitions": "[]", "clusterServiceVersions": "- a: [b", "packages": "[]"}),
    ))
    .await?;
    env.apply(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "broken", "namespace": ns},
        "spec": {"sourceType": "internal", "configMap": "broken"}}),
    )
    .await?;
    let broken = wait(
        "RegistryServerError",
        || source_named(&sources, "broken"),
        |s| s.data["status"]["reason"] == "RegistryServerError",
    )
    .await?;
    let message = broken.data["status"]["message"]
        .as_str()
        .unwrap_or_default();
    check_eq!(
        message.starts_with(
            "error loading manifests from configmap: error loading CSV list: error converting YAML to JSON: yaml: line "
        ),
        true
    );
    check_eq!(broken.data["status"]["connectionState"], Value::Null);
    env.apply(
        json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": "missing", "namespace": ns},
        "spec": {"sourceType": "configmap", "configMap": "nope"}}),
    )
    .await?;
    source_reports(
        &sources,
        "missing",
        "ConfigMapError",
        "failed to get catalog config map nope: configmaps \"nope\" not found",
    )
    .await?;
    // Upstream's address reconciler: protocol and creation time only.
    env.apply(address_source(ns, "remote", "127.0.0.1:1"))
        .await?;
    let remote = wait(
        "an address source's registryService",
        || source_named(&sources, "remote"),
        |s| s.data["status"]["registryService"].is_object(),
    )
    .await?;
    check_eq!(remote.data["status"]["registryService"]["protocol"], "grpc");
    check_eq!(
        remote.data["status"]["registryService"]["createdAt"].is_string(),
        true
    );
    check_eq!(
        remote.data["status"]["registryService"]["serviceName"],
        Value::Null
    );
    Ok(())
}
