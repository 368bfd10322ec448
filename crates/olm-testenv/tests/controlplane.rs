//! The local control plane really behaves like Kubernetes: each test starts its own control plane
//! (so tests are independent and run in parallel on free ports) and checks one behaviour that the
//! project's controllers rely on.
//!
//! These tests need the binaries from `tools/controlplane/build.sh`; without them they fail with a
//! message naming that script rather than being skipped, so CI can never pass without running them.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, ResourceExt};
use olm_testenv::{ControlPlane, Error, NODE_NAME, install_crds};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(60);

async fn start() -> ControlPlane {
    match ControlPlane::start().await {
        Ok(plane) => {
            eprintln!(
                "control plane ready in {:.1} s at {}",
                plane.startup_time().as_secs_f64(),
                plane.server_url()
            );
            plane
        }
        Err(err) => panic!("starting the local control plane failed: {err}"),
    }
}

/// Declares a test that gets its own control plane and runs `$body` against it. A failing body
/// panics while the control plane is still alive, so its drop prints every component's log tail.
macro_rules! cluster_test {
    ($name:ident, $body:ident) => {
        #[tokio::test]
        async fn $name() {
            let plane = start().await;
            if let Err(err) = $body(&plane).await {
                panic!("{err:#}");
            }
        }
    };
}

/// Polls `check` until it yields `Some`, or fails after [`TIMEOUT`] naming `what`.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out after {TIMEOUT:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn create_namespace(client: &Client, name: &str) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    namespaces.create(&PostParams::default(), &ns).await?;
    Ok(())
}

fn widget_crd() -> anyhow::Result<CustomResourceDefinition> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.test.olm.dev"},
        "spec": {
            "group": "test.olm.dev",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {
                        "type": "object",
                        "required": ["size"],
                        "properties": {
                            "size": {"type": "integer", "minimum": 1, "maximum": 10},
                            "color": {"type": "string", "enum": ["red", "blue"]},
                        },
                    }},
                }},
            }],
        },
    }))?)
}

async fn establish_widget_crd(client: &Client) -> anyhow::Result<()> {
    Ok(install_crds(client, &[widget_crd()?], TIMEOUT).await?)
}

fn widgets(client: &Client, ns: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("test.olm.dev", "v1", "Widget"),
        "widgets",
    );
    Api::namespaced_with(client.clone(), ns, &resource)
}

fn widget(name: &str, spec: serde_json::Value) -> anyhow::Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "test.olm.dev/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }))?)
}

cluster_test!(
    crd_becomes_established_and_serves_custom_resources,
    crd_becomes_established_and_serves_custom_resources_body
);
async fn crd_becomes_established_and_serves_custom_resources_body(
    plane: &ControlPlane,
) -> anyhow::Result<()> {
    let client = plane.client();
    establish_widget_crd(&client).await?;
    let api = widgets(&client, "default");
    let created = api
        .create(
            &PostParams::default(),
            &widget("ok", json!({"size": 3, "color": "red"}))?,
        )
        .await
        .context("a valid Widget must be accepted once the CRD is Established")?;
    assert_eq!(created.data["spec"]["size"], json!(3));
    Ok(())
}

cluster_test!(
    crd_install_is_idempotent_and_names_a_crd_that_never_establishes,
    crd_install_is_idempotent_and_names_a_crd_that_never_establishes_body
);
async fn crd_install_is_idempotent_and_names_a_crd_that_never_establishes_body(
    plane: &ControlPlane,
) -> anyhow::Result<()> {
    let client = plane.client();
    establish_widget_crd(&client).await?;
    // A second install (as `olm dev` does on every start) updates in place.
    establish_widget_crd(&client).await?;

    // Same group and kind as the Widget CRD: the API server refuses the names, so it is never
    // Established, and the error must say which CRD and why.
    let mut conflicting = widget_crd()?;
    conflicting.metadata.name = Some("gadgets.test.olm.dev".into());
    conflicting.spec.names.plural = "gadgets".into();
    conflicting.spec.names.singular = Some("gadget".into());
    match install_crds(&client, &[conflicting], Duration::from_secs(3)).await {
        Err(err @ Error::CrdNotEstablished { .. }) => {
            let text = err.to_string();
            assert!(
                text.starts_with("the gadgets.test.olm.dev CRD was not Established after 3s"),
                "{text}"
            );
            assert!(text.contains("NamesAccepted=False"), "{text}");
        }
        other => bail!("expected the conflicting CRD to time out, got {other:?}"),
    }
    Ok(())
}

cluster_test!(
    custom_resource_with_invalid_field_is_rejected_by_the_server,
    custom_resource_with_invalid_field_is_rejected_by_the_server_body
);
async fn custom_resource_with_invalid_field_is_rejected_by_the_server_body(
    plane: &ControlPlane,
) -> anyhow::Result<()> {
    let client = plane.client();
    establish_widget_crd(&client).await?;
    let api = widgets(&client, "default");
    for (name, spec, field) in [
        ("wrong-type", json!({"size": "three"}), "spec.size"),
        ("too-big", json!({"size": 11}), "spec.size"),
        (
            "bad-enum",
            json!({"size": 1, "color": "green"}),
            "spec.color",
        ),
        ("missing", json!({"color": "red"}), "spec.size"),
    ] {
        match api
            .create(&PostParams::default(), &widget(name, spec)?)
            .await
        {
            Err(kube::Error::Api(status)) => {
                assert_eq!(status.code, 422, "{name}: {status:?}");
                assert_eq!(status.reason, "Invalid", "{name}: {status:?}");
                assert!(
                    status.message.contains(field),
                    "{name}: message should name {field}: {}",
                    status.message
                );
            }
            other => bail!("{name}: expected 422 Invalid, got {other:?}"),
        }
    }
    Ok(())
}

cluster_test!(
    deployment_becomes_available_through_kwok,
    deployment_becomes_available_through_kwok_body
);
async fn deployment_becomes_available_through_kwok_body(
    plane: &ControlPlane,
) -> anyhow::Result<()> {
    let client = plane.client();
    create_namespace(&client, "apps").await?;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "apps");
    let deployment: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "example.invalid/web:1"}]},
            },
        },
    }))?;
    deployments
        .create(&PostParams::default(), &deployment)
        .await?;
    eventually(
        "Deployment apps/web to be Available with 2 replicas",
        || {
            let deployments = deployments.clone();
            async move {
                let d = deployments.get("web").await?;
                let status = d.status.unwrap_or_default();
                let available = status.conditions.unwrap_or_default().iter().any(|c| {
                    c.type_.as_deref() == Some("Available") && c.status.as_deref() == Some("True")
                });
                Ok((available && status.available_replicas == Some(2)).then_some(()))
            }
        },
    )
    .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "apps");
    let list = pods.list(&ListParams::default().labels("app=web")).await?;
    assert_eq!(list.items.len(), 2);
    for pod in list.items {
        let spec = pod.spec.clone().unwrap_or_default();
        let status = pod.status.clone().unwrap_or_default();
        assert_eq!(
            spec.node_name.as_deref(),
            Some(NODE_NAME),
            "scheduled onto the fake node"
        );
        assert_eq!(status.phase.as_deref(), Some("Running"));
        let ip = status.pod_ip.unwrap_or_default();
        assert!(ip.starts_with("10.0.0."), "pod IP {ip} from kwok's CIDR");
    }
    Ok(())
}

cluster_test!(
    deleting_an_owner_garbage_collects_its_dependents,
    deleting_an_owner_garbage_collects_its_dependents_body
);
async fn deleting_an_owner_garbage_collects_its_dependents_body(
    plane: &ControlPlane,
) -> anyhow::Result<()> {
    let client = plane.client();
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let owner: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "owner"}}))?;
    let owner = maps.create(&PostParams::default(), &owner).await?;
    let uid = owner.uid().context("owner has a uid")?;
    let dependent: ConfigMap = serde_json::from_value(json!({
        "metadata": {
            "name": "dependent",
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}],
        },
        "data": {"k": "v"},
    }))?;
    maps.create(&PostParams::default(), &dependent).await?;
    let unrelated: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "unrelated"}}))?;
    maps.create(&PostParams::default(), &unrelated).await?;

    maps.delete("owner", &DeleteParams::background()).await?;
    eventually("the garbage collector to delete the dependent", || {
        let maps = maps.clone();
        async move { Ok(maps.get_opt("dependent").await?.is_none().then_some(())) }
    })
    .await?;
    assert!(
        maps.get_opt("unrelated").await?.is_some(),
        "objects without owner stay"
    );
    Ok(())
}

cluster_test!(
    namespace_deletion_completes,
    namespace_deletion_completes_body
);
async fn namespace_deletion_completes_body(plane: &ControlPlane) -> anyhow::Result<()> {
    let client = plane.client();
    create_namespace(&client, "doomed").await?;
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "content"}}))?;
    maps.create(&PostParams::default(), &cm).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete("doomed", &DeleteParams::default())
        .await?;
    eventually("namespace doomed to disappear", || {
        let namespaces = namespaces.clone();
        async move { Ok(namespaces.get_opt("doomed").await?.is_none().then_some(())) }
    })
    .await?;
    Ok(())
}

fn kubectl(plane: &ControlPlane, args: &[&str], stdin: Option<&str>) -> anyhow::Result<String> {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(plane.kubeconfig_path())
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running kubectl (is it installed?)")?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        bail!(
            "kubectl {args:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?)
}

cluster_test!(
    kubectl_get_and_apply_work_with_the_generated_kubeconfig,
    kubectl_get_and_apply_work_with_the_generated_kubeconfig_body
);
async fn kubectl_get_and_apply_work_with_the_generated_kubeconfig_body(
    plane: &ControlPlane,
) -> anyhow::Result<()> {
    let nodes = kubectl(plane, &["get", "nodes", "-o", "name"], None)?;
    assert_eq!(nodes.trim(), format!("node/{NODE_NAME}"));

    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: default\ndata:\n  greeting: hello\n";
    let out = kubectl(plane, &["apply", "-f", "-"], Some(manifest))?;
    assert!(out.contains("configmap/applied created"), "{out}");
    let out = kubectl(
        plane,
        &["apply", "-f", "-"],
        Some(&manifest.replace("hello", "bye")),
    )?;
    assert!(out.contains("configmap/applied configured"), "{out}");

    let maps: Api<ConfigMap> = Api::namespaced(plane.client(), "default");
    let applied = maps.get("applied").await?;
    assert_eq!(
        applied
            .data
            .unwrap_or_default()
            .get("greeting")
            .map(String::as_str),
        Some("bye")
    );
    let got = kubectl(
        plane,
        &[
            "get",
            "configmap",
            "applied",
            "-o",
            "jsonpath={.data.greeting}",
        ],
        None,
    )?;
    assert_eq!(got, "bye");
    // The fake node is visible through the client too.
    let node = Api::<Node>::all(plane.client()).get(NODE_NAME).await?;
    assert_eq!(node.name_any(), NODE_NAME);
    Ok(())
}

#[tokio::test]
async fn drop_stops_every_component_and_removes_the_work_folder() -> anyhow::Result<()> {
    let plane = start().await;
    let memory = plane.memory();
    let names: Vec<&str> = memory.iter().map(|m| m.name).collect();
    assert_eq!(
        names,
        [
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kwok"
        ]
    );
    assert!(
        memory
            .iter()
            .all(|m| m.rss_kib > 0 && m.peak_rss_kib >= m.rss_kib)
    );
    let total_peak_mib: u64 = memory.iter().map(|m| m.peak_rss_kib).sum::<u64>() / 1024;
    eprintln!("peak RSS of the control plane: {total_peak_mib} MiB ({memory:?})");
    let work = plane.work_dir().to_owned();
    let pids: Vec<u32> = memory.iter().map(|m| m.pid).collect();
    drop(plane);
    assert!(!work.exists(), "{} left behind", work.display());
    for pid in pids {
        // Gone, or at most a zombie waiting for init (our own children are reaped by stop()).
        let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            state.is_empty() || state.contains(") Z "),
            "process {pid} still running: {state}"
        );
    }
    Ok(())
}

#[tokio::test]
async fn a_component_that_exits_early_is_reported_with_its_log_tail() -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let real = olm_testenv::bin_dir()?;
    let fake = tempfile::tempdir()?;
    for name in [
        "etcd",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
        "kwok-stages.yaml",
    ] {
        std::os::unix::fs::symlink(real.join(name), fake.path().join(name))?;
    }
    let broken = fake.path().join("kube-apiserver");
    std::fs::write(
        &broken,
        "#!/bin/sh\necho 'E1130 invalid flag: --nope' >&2\nexit 3\n",
    )?;
    std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755))?;
    let options = olm_testenv::Options {
        bin_dir: Some(fake.path().to_owned()),
        ready_timeout: Duration::from_secs(30),
        ..olm_testenv::Options::default()
    };
    match ControlPlane::start_with(options).await {
        Err(err @ olm_testenv::Error::ExitedEarly { .. }) => {
            let msg = err.to_string();
            assert!(msg.starts_with("kube-apiserver exited early"), "{msg}");
            assert!(msg.contains("exit status: 3"), "{msg}");
            assert!(msg.contains("invalid flag: --nope"), "{msg}");
        }
        other => bail!("expected ExitedEarly, got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn a_port_taken_by_another_process_is_retried_then_reported() -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let real = olm_testenv::bin_dir()?;
    let fake = tempfile::tempdir()?;
    for name in [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
        "kwok-stages.yaml",
    ] {
        std::os::unix::fs::symlink(real.join(name), fake.path().join(name))?;
    }
    // An etcd that always loses the race for its port, counting how often it was started.
    let attempts = fake.path().join("attempts");
    let etcd = fake.path().join("etcd");
    std::fs::write(
        &etcd,
        format!(
            "#!/bin/sh\necho x >> '{}'\necho 'listen tcp 127.0.0.1:2379: bind: address already in use' >&2\nexit 1\n",
            attempts.display()
        ),
    )?;
    std::fs::set_permissions(&etcd, std::fs::Permissions::from_mode(0o755))?;
    let options = olm_testenv::Options {
        bin_dir: Some(fake.path().to_owned()),
        ready_timeout: Duration::from_secs(30),
        ..olm_testenv::Options::default()
    };
    match ControlPlane::start_with(options).await {
        Err(err @ olm_testenv::Error::PortInUse { .. }) => {
            let msg = err.to_string();
            assert!(msg.starts_with("etcd could not bind"), "{msg}");
            assert!(msg.contains("address already in use"), "{msg}");
        }
        other => bail!("expected PortInUse, got {other:?}"),
    }
    let started = std::fs::read_to_string(&attempts)?.lines().count();
    assert_eq!(started, 3, "a lost port race is retried on new ports");
    Ok(())
}
