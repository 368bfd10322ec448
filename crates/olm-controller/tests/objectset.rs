//! The ClusterObjectSet controller on a real control plane (`olm-testenv`: kube-apiserver, etcd,
//! kube-controller-manager and kwok, which makes Deployments available): ClusterObjectSets are
//! created directly, as upstream's `test/e2e/features/revision.feature` does, and the objects
//! they manage are read back through the API server.
//!
//! One control plane and one controller serve every scenario; scenarios run concurrently, each
//! in its own namespace with its own object names.
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`).

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use olm_api::ClusterObjectSet;
use olm_cluster::context::{FIELD_MANAGER, Shared};
use olm_controller::metrics::Metrics;
use olm_testenv::ControlPlane;
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(120);
const SYSTEM_NAMESPACE: &str = "olmv1-system";

async fn eventually<T, F, Fut>(what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(v) = check().await? {
            return Ok(v);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out after {TIMEOUT:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn namespace(client: &Client, name: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    match api.create(&PostParams::default(), &ns).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

async fn create_cos(client: &Client, cos: Value) -> Result<()> {
    let api: Api<ClusterObjectSet> = Api::all(client.clone());
    let cos: ClusterObjectSet = serde_json::from_value(cos)?;
    api.create(&PostParams::default(), &cos)
        .await
        .context("creating ClusterObjectSet")?;
    Ok(())
}

/// Waits until the revision's condition `type_` has `status` and `reason`; returns its message.
async fn wait_condition(
    client: &Client,
    name: &str,
    type_: &str,
    status: &str,
    reason: &str,
) -> Result<String> {
    let api: Api<ClusterObjectSet> = Api::all(client.clone());
    let last = Arc::new(std::sync::Mutex::new(String::new()));
    let r = eventually(&format!("{name} {type_}={status}/{reason}"), || {
        let api = api.clone();
        let last = last.clone();
        async move {
            let cos = api.get(name).await?;
            let conds = cos.status.map(|s| s.conditions).unwrap_or_default();
            *last.lock().unwrap() = format!("{conds:?}");
            Ok(conds
                .into_iter()
                .find(|c| c.type_ == type_ && c.status == status && c.reason == reason)
                .map(|c| c.message))
        }
    })
    .await;
    r.with_context(|| format!("last conditions: {}", last.lock().unwrap()))
}

fn cm(ns: &str, name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data})
}

async fn get_cm(client: &Client, ns: &str, name: &str) -> Result<Option<ConfigMap>> {
    Ok(Api::<ConfigMap>::namespaced(client.clone(), ns)
        .get_opt(name)
        .await?)
}

fn controller_of(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<String> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .map(|r| r.name.clone())
}

/// Two phases — a ConfigMap, then a Deployment probed for `Available` — roll out; edits and
/// deletions of a managed object are put back by the watch, without a periodic resync.
async fn rollout_and_drift(client: Client) -> Result<()> {
    let ns = "cos-rollout";
    namespace(&client, ns).await?;
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "example.invalid/web:1"}]}}}
    });
    create_cos(
        &client,
        json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
            "metadata": {"name": "rollout-1",
                "labels": {"olm.operatorframework.io/owner-name": "rollout"},
                "annotations": {"olm.operatorframework.io/bundle-version": "1.2.3"}},
            "spec": {"lifecycleState": "Active", "revision": 1, "collisionProtection": "Prevent",
                "progressionProbes": [{
                    "selector": {"type": "GroupKind", "groupKind": {"group": "apps", "kind": "Deployment"}},
                    "assertions": [
                        {"type": "ConditionEqual", "conditionEqual": {"type": "Available", "status": "True"}},
                        {"type": "FieldsEqual", "fieldsEqual": {"fieldA": "status.updatedReplicas", "fieldB": "status.replicas"}}]}],
                "phases": [
                    {"name": "configuration", "objects": [{"object": cm(ns, "settings", json!({"k": "v"}))}]},
                    {"name": "deploy", "objects": [{"object": deployment}]}]}
        }),
    )
    .await?;
    let message = wait_condition(&client, "rollout-1", "Progressing", "True", "Succeeded").await?;
    assert_eq!(message, "Revision 1.2.3 has rolled out.");
    wait_condition(&client, "rollout-1", "Available", "True", "ProbesSucceeded").await?;
    wait_condition(&client, "rollout-1", "Succeeded", "True", "Succeeded").await?;

    let cos = Api::<ClusterObjectSet>::all(client.clone())
        .get("rollout-1")
        .await?;
    assert!(
        cos.finalizers()
            .iter()
            .any(|f| f == "olm.operatorframework.io/teardown")
    );
    assert_eq!(
        cos.status.as_ref().map(|s| s.observed_phases.len()),
        Some(2)
    );
    let settings = get_cm(&client, ns, "settings")
        .await?
        .context("ConfigMap applied")?;
    assert_eq!(
        controller_of(&settings.metadata).as_deref(),
        Some("rollout-1")
    );
    assert_eq!(
        settings
            .labels()
            .get("olm.operatorframework.io/owner-name")
            .map(String::as_str),
        Some("rollout")
    );
    assert_eq!(
        settings
            .annotations()
            .get("olm.operatorframework.io/revision")
            .map(String::as_str),
        Some("1")
    );

    // An edit of a field the revision sets is reverted.
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    cms.patch(
        "settings",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "edited"}})),
    )
    .await?;
    eventually("the edit to be put back", || {
        let client = client.clone();
        async move {
            let c = get_cm(&client, ns, "settings").await?;
            Ok(c.and_then(|c| c.data)
                .filter(|d| d.get("k").map(String::as_str) == Some("v"))
                .map(|_| ()))
        }
    })
    .await?;
    // A deleted object is created again.
    let before = get_cm(&client, ns, "settings")
        .await?
        .and_then(|c| c.metadata.uid);
    cms.delete("settings", &DeleteParams::default()).await?;
    eventually("the deleted ConfigMap to come back", || {
        let client = client.clone();
        let before = before.clone();
        async move {
            let c = get_cm(&client, ns, "settings").await?;
            Ok(c.filter(|c| c.metadata.uid != before).map(|_| ()))
        }
    })
    .await?;
    Ok(())
}

/// A pre-existing object without our owner: refused with `Prevent` (upstream's collision
/// report), adopted with `None`.
async fn collisions(client: Client) -> Result<()> {
    let ns = "cos-collide";
    namespace(&client, ns).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(cm(ns, "pre", json!({"k": "theirs"})))?,
    )
    .await?;
    let cos = |name: &str, protection: &str| {
        json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
            "metadata": {"name": name, "annotations": {"olm.operatorframework.io/bundle-version": "0.1.0"}},
            "spec": {"lifecycleState": "Active", "revision": 1, "collisionProtection": protection,
                "phases": [{"name": "configuration", "objects": [{"object": cm(ns, "pre", json!({"k": "ours"}))}]}]}
        })
    };
    create_cos(&client, cos("collide-prevent", "Prevent")).await?;
    let message = wait_condition(
        &client,
        "collide-prevent",
        "Progressing",
        "True",
        "Retrying",
    )
    .await?;
    assert_eq!(
        message,
        format!(
            "revision object collisions in phase 0\nObject ConfigMap.v1 {ns}/pre already exists and belongs to no owner (made outside OLM): delete it, or install somewhere else."
        )
    );
    let untouched = get_cm(&client, ns, "pre").await?.context("still there")?;
    assert_eq!(untouched.data.unwrap_or_default()["k"], "theirs");

    create_cos(&client, cos("collide-none", "None")).await?;
    wait_condition(&client, "collide-none", "Progressing", "True", "Succeeded").await?;
    let adopted = get_cm(&client, ns, "pre").await?.context("still there")?;
    assert_eq!(
        controller_of(&adopted.metadata).as_deref(),
        Some("collide-none")
    );
    assert_eq!(adopted.data.unwrap_or_default()["k"], "ours");
    Ok(())
}

/// A second revision takes over: the first is archived, its teardown deletes what only it had
/// and leaves what the second one now controls; it then drops its finalizer.
async fn revisions(client: Client) -> Result<()> {
    let ns = "cos-revisions";
    namespace(&client, ns).await?;
    let cos = |revision: i64, objects: Vec<Value>| {
        json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
            "metadata": {"name": format!("upgrade-{revision}"),
                "labels": {"olm.operatorframework.io/owner-name": "upgrade", "olm.operatorframework.io/owner-kind": "ClusterExtension"},
                "annotations": {"olm.operatorframework.io/bundle-version": format!("{revision}.0.0")}},
            "spec": {"lifecycleState": "Active", "revision": revision, "collisionProtection": "Prevent",
                "phases": [{"name": "configuration", "objects": objects.into_iter().map(|o| json!({"object": o})).collect::<Vec<_>>()}]}
        })
    };
    create_cos(
        &client,
        cos(
            1,
            vec![
                cm(ns, "shared", json!({"v": "1"})),
                cm(ns, "old-only", json!({})),
            ],
        ),
    )
    .await?;
    wait_condition(&client, "upgrade-1", "Succeeded", "True", "Succeeded").await?;
    create_cos(
        &client,
        cos(
            2,
            vec![
                cm(ns, "shared", json!({"v": "2"})),
                cm(ns, "new-only", json!({})),
            ],
        ),
    )
    .await?;
    wait_condition(&client, "upgrade-2", "Progressing", "True", "Succeeded").await?;
    let message = wait_condition(&client, "upgrade-1", "Progressing", "False", "Archived").await?;
    assert_eq!(message, "revision is archived");
    wait_condition(&client, "upgrade-1", "Available", "Unknown", "Archived").await?;

    eventually("the old revision's own object to be deleted", || {
        let client = client.clone();
        async move {
            Ok(get_cm(&client, ns, "old-only")
                .await?
                .is_none()
                .then_some(()))
        }
    })
    .await?;
    let shared = get_cm(&client, ns, "shared")
        .await?
        .context("shared stays")?;
    assert_eq!(
        controller_of(&shared.metadata).as_deref(),
        Some("upgrade-2")
    );
    assert_eq!(shared.data.unwrap_or_default()["v"], "2");
    assert!(get_cm(&client, ns, "new-only").await?.is_some());
    eventually(
        "the archived revision to drop its finalizer and owner reference",
        || {
            let client = client.clone();
            async move {
                let old = Api::<ClusterObjectSet>::all(client.clone())
                    .get("upgrade-1")
                    .await?;
                let shared = get_cm(&client, ns, "shared")
                    .await?
                    .context("shared stays")?;
                let released = shared
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .all(|r| r.name != "upgrade-1");
                Ok((old.finalizers().is_empty() && released).then_some(()))
            }
        },
    )
    .await?;
    let old = Api::<ClusterObjectSet>::all(client.clone())
        .get("upgrade-1")
        .await?;
    assert_eq!(old.spec.lifecycle_state, olm_api::LifecycleState::Archived);
    Ok(())
}

/// Phases referencing Secrets (one gzip'd), as revision.feature "User can install a
/// ClusterObjectSet with objects stored in Secrets"; a mutable Secret blocks.
async fn secrets(client: Client) -> Result<()> {
    use std::io::Write as _;
    let ns = "cos-secrets";
    namespace(&client, ns).await?;
    let plain = serde_json::to_vec(&cm(ns, "from-secret", json!({"k": "plain"})))?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&serde_json::to_vec(&cm(
        ns,
        "from-gzip",
        json!({"k": "gzip"}),
    ))?)?;
    let gzipped = gz.finish()?;
    let b64 = |b: &[u8]| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(b)
    };
    let secrets: Api<Secret> = Api::namespaced(client.clone(), SYSTEM_NAMESPACE);
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "objects"}, "type": "olm.operatorframework.io/object-data",
                "immutable": true, "data": {"plain": b64(&plain), "gzip": b64(&gzipped)}
            }))?,
        )
        .await?;
    let mutable: Api<Secret> = Api::namespaced(client.clone(), ns);
    mutable
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "mutable"}, "type": "olm.operatorframework.io/object-data",
                "data": {"plain": b64(&plain)}
            }))?,
        )
        .await?;
    create_cos(
        &client,
        json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
            "metadata": {"name": "from-secrets"},
            "spec": {"lifecycleState": "Active", "revision": 1, "collisionProtection": "Prevent",
                "phases": [{"name": "resources", "objects": [
                    {"ref": {"name": "objects", "key": "plain"}},
                    {"ref": {"name": "objects", "namespace": SYSTEM_NAMESPACE, "key": "gzip"}}]}]}
        }),
    )
    .await?;
    wait_condition(
        &client,
        "from-secrets",
        "Available",
        "True",
        "ProbesSucceeded",
    )
    .await?;
    assert!(get_cm(&client, ns, "from-secret").await?.is_some());
    let gz = get_cm(&client, ns, "from-gzip")
        .await?
        .context("gzip'd object applied")?;
    assert_eq!(gz.data.unwrap_or_default()["k"], "gzip");

    create_cos(
        &client,
        json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
            "metadata": {"name": "from-mutable"},
            "spec": {"lifecycleState": "Active", "revision": 1, "collisionProtection": "Prevent",
                "phases": [{"name": "resources", "objects": [{"ref": {"name": "mutable", "namespace": ns, "key": "plain"}}]}]}
        }),
    )
    .await?;
    let message =
        wait_condition(&client, "from-mutable", "Progressing", "False", "Blocked").await?;
    assert_eq!(
        message,
        format!(
            "the following secrets are not immutable (referenced secrets must have immutable set to true): {ns}/mutable"
        )
    );
    Ok(())
}

/// With the service-account annotation objects are written as that ServiceAccount: what its
/// RBAC allows is applied, what it does not is refused in the revision's status.
async fn service_account(client: Client) -> Result<()> {
    use k8s_openapi::api::core::v1::ServiceAccount;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    let ns = "cos-sa";
    let other = "cos-sa-other";
    namespace(&client, ns).await?;
    namespace(&client, other).await?;
    Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "installer"}}))?,
        )
        .await?;
    Api::<Role>::namespaced(client.clone(), ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "installer"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]}))?,
        )
        .await?;
    Api::<RoleBinding>::namespaced(client.clone(), ns)
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "installer"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "installer"},
                "subjects": [{"kind": "ServiceAccount", "name": "installer", "namespace": ns}]}))?,
        )
        .await?;
    // Owner references that block deletion need the right to set the owner's finalizers.
    Api::<ClusterRole>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "cos-sa-installer"},
                "rules": [{"apiGroups": ["olm.operatorframework.io"], "resources": ["clusterobjectsets/finalizers"], "verbs": ["update"]}]}))?,
        )
        .await?;
    Api::<ClusterRoleBinding>::all(client.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "cos-sa-installer"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cos-sa-installer"},
                "subjects": [{"kind": "ServiceAccount", "name": "installer", "namespace": ns}]}))?,
        )
        .await?;
    let cos = |name: &str, target: &str| {
        json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterObjectSet",
            "metadata": {"name": name, "annotations": {"olm.operatorframework.io/service-account": format!("{ns}/installer")}},
            "spec": {"lifecycleState": "Active", "revision": 1, "collisionProtection": "Prevent",
                "phases": [{"name": "configuration", "objects": [{"object": cm(target, "by-sa", json!({}))}]}]}
        })
    };
    create_cos(&client, cos("sa-allowed", ns)).await?;
    wait_condition(&client, "sa-allowed", "Progressing", "True", "Succeeded").await?;
    assert!(get_cm(&client, ns, "by-sa").await?.is_some());

    create_cos(&client, cos("sa-forbidden", other)).await?;
    let message =
        wait_condition(&client, "sa-forbidden", "Progressing", "True", "Retrying").await?;
    assert!(
        message.contains("forbidden") && message.contains("system:serviceaccount:cos-sa:installer"),
        "refused as the ServiceAccount: {message}"
    );
    assert!(get_cm(&client, other, "by-sa").await?.is_none());
    Ok(())
}

/// Runs a scenario and prints how long it took (`--nocapture` shows it).
async fn timed(name: &str, f: impl std::future::Future<Output = Result<()>>) -> Result<()> {
    let started = std::time::Instant::now();
    let r = f.await;
    eprintln!("scenario {name}: {:?}", started.elapsed());
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_object_sets_on_a_real_control_plane() {
    let plane = match ControlPlane::start().await {
        Ok(p) => p,
        Err(e) => panic!("starting the local control plane failed: {e}"),
    };
    let client = plane.client();
    let crd: CustomResourceDefinition =
        serde_json::from_value(olm_api::cluster_object_set_crd().value).expect("CRD");
    olm_testenv::install_crds(&client, &[crd], TIMEOUT)
        .await
        .expect("install CRDs");
    namespace(&client, SYSTEM_NAMESPACE)
        .await
        .expect("system namespace");

    let kubeconfig =
        kube::config::Kubeconfig::read_from(plane.kubeconfig_path()).expect("kubeconfig");
    let kube_config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("kube config");
    let cache = tempfile::tempdir().expect("tempdir");
    let shared = Arc::new(Shared {
        client: client.clone(),
        kube_config,
        system_namespace: SYSTEM_NAMESPACE.to_string(),
        cache_dir: cache.path().to_path_buf(),
        metrics: Arc::new(Metrics::default()),
        images: olm_image::Client::new(olm_image::ClientOptions::default()),
        cert_provider: None,
        field_manager: FIELD_MANAGER,
        global_pull_secret: None,
    });
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controller = tokio::spawn(olm_controller::objectset::run(shared.clone(), async move {
        let _ = stopped.await;
    }));

    let (a, b, c, d, e) = tokio::join!(
        timed("rollout and drift", rollout_and_drift(client.clone())),
        timed("collisions", collisions(client.clone())),
        timed("revisions", revisions(client.clone())),
        timed("secrets", secrets(client.clone())),
        timed("service account", service_account(client.clone())),
    );
    let mut failures = Vec::new();
    for (name, r) in [
        ("rollout and drift", a),
        ("collisions", b),
        ("revisions", c),
        ("secrets", d),
        ("service account", e),
    ] {
        if let Err(e) = r {
            failures.push(format!("{name}: {e:#}"));
        }
    }
    let metrics = shared.metrics.render();
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(10), controller).await;
    if !failures.is_empty() {
        panic!(
            "{}\n\ncontrol plane logs:\n{}",
            failures.join("\n\n"),
            plane.log_tails(20)
        );
    }
    assert!(
        metrics.contains("clusterobjectset"),
        "reconciles are reported under the controller's name:\n{metrics}"
    );
}
