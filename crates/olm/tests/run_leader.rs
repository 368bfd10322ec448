//! Two `olm run --leader-elect` replicas against one control plane: one leads (holds the Lease
//! and writes ClusterCatalog status), both serve the catalog. Killed, the leader is replaced
//! within the lease duration; stopped with SIGTERM, it releases the lease and is replaced at the
//! next try. No catalog request gets anything but 200 meanwhile.
//!
//! Prints the failover times; see them with
//! `cargo test -p olm --test run_leader -- --nocapture`.
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`) and Debian's
//! `docker-registry`.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, PostParams};
use olm_testenv::ControlPlane;
use olm_testenv::registry::Registry;

mod run_common;

use run_common::{OlmRun, get};

/// Short timings, so that the test takes seconds: a killed leader is replaced after 6 s.
const LEASE: Duration = Duration::from_secs(6);
const FLAGS: &[&str] = &[
    "--leader-elect",
    "--leader-election-lease-duration",
    "6s",
    "--leader-election-renew-deadline",
    "4s",
    "--leader-election-retry-period",
    "1s",
];
const ALL: &str = "/catalogs/test/api/v1/all";

fn serves(run: &OlmRun) -> bool {
    get(run.catalogs, ALL).is_some_and(|(status, _)| status.contains(" 200 "))
}

fn leads(run: &OlmRun) -> bool {
    run.stderr().contains("started leading")
}

/// Waits until `done`, calling `meanwhile` at every look; panics after `limit`.
fn wait(limit: Duration, what: &str, mut done: impl FnMut() -> bool, mut meanwhile: impl FnMut()) {
    let start = Instant::now();
    while !done() {
        meanwhile();
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

async fn lease_holder(client: &kube::Client) -> String {
    let leases: Api<Lease> = Api::namespaced(client.clone(), "olmv1-system");
    leases
        .get("9c4404e7.operatorframework.io")
        .await
        .expect("the lease exists")
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default()
}

async fn catalog_base(client: &kube::Client) -> String {
    let catalogs: Api<olm_api::ClusterCatalog> = Api::all(client.clone());
    catalogs
        .get("test")
        .await
        .expect("get")
        .status
        .and_then(|s| s.urls)
        .map(|u| u.base)
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn replicas_elect_one_leader_and_all_serve_catalogs() {
    let plane = ControlPlane::start()
        .await
        .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
    let registry = Registry::start().expect("docker-registry starts");
    let tmp = tempfile::tempdir().expect("tmp");
    let image = format!("{}/catalogs/test:v1", registry.addr());
    run_common::push_small_catalog(tmp.path(), &image);

    let kubeconfig = plane.kubeconfig_path();
    let dir = |n: &str| {
        let d = tmp.path().join(n);
        std::fs::create_dir_all(&d).unwrap();
        d
    };
    let a = OlmRun::start_with(kubeconfig, &dir("a"), FLAGS);
    let b = OlmRun::start_with(kubeconfig, &dir("b"), FLAGS);
    let client = plane.client();
    let catalogs: Api<olm_api::ClusterCatalog> = Api::all(client.clone());
    let cat: olm_api::ClusterCatalog = serde_json::from_value(serde_json::json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterCatalog",
        "metadata": {"name": "test"},
        "spec": {"source": {"type": "Image", "image": {"ref": image}}},
    }))
    .unwrap();
    catalogs.create(&PostParams::default(), &cat).await.unwrap();

    // Both serve the content; exactly one leads, and its address is in the status.
    wait(
        Duration::from_secs(60),
        "both replicas serve the catalog",
        || serves(&a) && serves(&b),
        || {},
    );
    wait(
        Duration::from_secs(20),
        "one replica leads",
        || leads(&a) || leads(&b),
        || {},
    );
    let (mut leader, follower) = if leads(&a) { (a, b) } else { (b, a) };
    assert!(!leads(&follower), "two leaders");
    let holder = lease_holder(&client).await;
    assert!(holder.contains('_'), "{holder}");
    let base = catalog_base(&client).await;
    assert!(base.contains(&leader.catalogs.to_string()), "{base}");

    // The leader dies: the follower keeps serving and takes over within the lease duration.
    leader.child.kill().unwrap();
    let killed = Instant::now();
    let mut refused = 0;
    wait(
        LEASE + Duration::from_secs(5),
        "the follower takes over a killed leader",
        || leads(&follower),
        || {
            if !serves(&follower) {
                refused += 1;
            }
        },
    );
    let failover = killed.elapsed();
    assert_eq!(
        refused, 0,
        "the follower failed catalog requests while taking over"
    );
    assert!(
        failover >= LEASE - Duration::from_secs(2),
        "took over a live lease: {failover:?}"
    );
    assert_ne!(lease_holder(&client).await, holder);
    // The new leader writes status at once: its own address.
    let new_base = follower.catalogs.to_string();
    let start = Instant::now();
    while !catalog_base(&client).await.contains(&new_base) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "status not rewritten by the new leader"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!("failover after the leader was killed: {failover:.2?} (lease {LEASE:?})");

    // A graceful stop releases the lease: a new replica leads at its next try, long before the
    // lease would have expired.
    let c = OlmRun::start_with(kubeconfig, &dir("c"), FLAGS);
    wait(
        Duration::from_secs(60),
        "the new replica serves the catalog",
        || serves(&c),
        || {},
    );
    assert!(!leads(&c));
    let (code, log, _) = follower.stop(rustix::process::Signal::TERM);
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("released the leader lease"), "{log}");
    let stopped = Instant::now();
    wait(
        LEASE - Duration::from_secs(2),
        "the new replica takes over a released lease",
        || leads(&c),
        || {
            assert!(serves(&c));
        },
    );
    println!(
        "failover after the leader stopped: {:.2?}",
        stopped.elapsed()
    );
    leader.child.wait().unwrap();
}
