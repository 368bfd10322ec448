//! A real node (containerd, kubelet, kube-proxy; real containers) beside the local control
//! plane: pods run and are reached through Services, and the machine is as it was afterwards —
//! after a clean stop and after the process that started the node was killed.
//!
//! Needs root and the node's parts (`scripts/setup.sh`); one real node runs per machine, so
//! the scenarios here take turns.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;
use olm_testenv::node::host::Footprint;
use olm_testenv::{ControlPlane, NodeKind, Options, REAL_NODE_NAME};
use tokio::sync::Mutex;

/// One real node per machine: the scenarios of this binary take turns.
static MACHINE: Mutex<()> = Mutex::const_new(());

/// Set in the child process of the crash scenario.
const CHILD: &str = "OLM_TESTENV_REAL_NODE_CHILD";

fn machine() -> Footprint {
    Footprint::now()
}

async fn start() -> ControlPlane {
    ControlPlane::start_with(Options {
        node: NodeKind::Real,
        ..Options::default()
    })
    .await
    .unwrap_or_else(|e| panic!("starting a control plane with a real node failed: {e}"))
}

fn pause_pod(name: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "containers": [{
                "name": "main",
                "image": olm_testenv::node::PAUSE_IMAGE,
                "imagePullPolicy": "IfNotPresent",
            }],
            "terminationGracePeriodSeconds": 1,
        },
    }))
    .unwrap()
}

async fn wait_running(pods: &Api<Pod>, name: &str) -> Pod {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pod = pods.get(name).await.unwrap();
        let status = pod.status.clone().unwrap_or_default();
        let ready = status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if ready {
            return pod;
        }
        assert!(
            Instant::now() < deadline,
            "pod {name} not Ready after 60 s: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn containers_run_and_the_machine_is_as_it_was_after() {
    if std::env::var_os(CHILD).is_some() {
        return;
    }
    let _turn = MACHINE.lock().await;
    let before = machine();
    let plane = start().await;
    assert_eq!(plane.node_name(), REAL_NODE_NAME);
    let pods: Api<Pod> = Api::namespaced(plane.client(), "default");
    let started = Instant::now();
    pods.create(&PostParams::default(), &pause_pod("sleeper"))
        .await
        .unwrap();
    let pod = wait_running(&pods, "sleeper").await;
    eprintln!("pod Ready {:?} after create", started.elapsed());
    let ip = pod.status.and_then(|s| s.pod_ip).unwrap_or_default();
    assert!(ip.starts_with("10.244.0."), "pod IP {ip}");
    let during = machine();
    assert!(during.record, "the machine is recorded while the node runs");
    assert!(during.cgroup);
    assert!(
        during
            .chains
            .iter()
            .any(|c| c.ends_with(" nat KUBE-SERVICES")),
        "kube-proxy's chains: {:?}",
        during.chains
    );
    assert!(
        during
            .processes
            .iter()
            .any(|p| p.contains("containerd-shim")),
        "{:?}",
        during.processes
    );
    plane.stop();
    assert_eq!(machine(), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_whose_starter_was_killed_is_cleaned_up_by_the_next() {
    if std::env::var_os(CHILD).is_some() {
        // The child: start a node with a running pod, say so, and wait to be killed.
        let plane = start().await;
        let pods: Api<Pod> = Api::namespaced(plane.client(), "default");
        pods.create(&PostParams::default(), &pause_pod("orphan"))
            .await
            .unwrap();
        wait_running(&pods, "orphan").await;
        println!("NODE-READY {}", plane.work_dir().display());
        tokio::time::sleep(Duration::from_secs(600)).await;
        return;
    }
    let _turn = MACHINE.lock().await;
    let before = machine();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_node_whose_starter_was_killed_is_cleaned_up_by_the_next",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let work_dir = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("NODE-READY ").map(str::to_owned))
        .expect("the child never had its node running");
    child.kill().unwrap();
    child.wait().unwrap();
    let left = machine();
    assert!(left.record, "a killed node leaves its record");
    assert!(left.cgroup, "and its containers: {left:?}");

    // The next start puts the machine back first, and is torn down cleanly itself.
    let plane = start().await;
    assert!(
        !Path::new(&work_dir).join("node").exists(),
        "the killed node's folder is removed"
    );
    plane.stop();
    assert_eq!(machine(), before);
    // The rest of the killed control plane's folder (etcd's data) is this test's to remove.
    std::fs::remove_dir_all(&work_dir).unwrap();
}
