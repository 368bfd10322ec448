//! `olm catalog add` against a real control plane, registry and `olm run`: a catalog that
//! serves is reported created, a second one of the same name refused with the API server's
//! words; one whose image cannot be pulled fails with its reason and is
//! deleted again; a poll interval on a digest-pinned image is refused before anything is sent.
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`) and Debian's
//! `docker-registry`.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use kube::api::Api;
use olm_testenv::ControlPlane;
use olm_testenv::registry::Registry;

mod run_common;

use run_common::OlmRun;

fn olm(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn catalog_add_waits_until_serving_and_cleans_up_failures() {
    let plane = ControlPlane::start()
        .await
        .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
    let registry = Registry::start().expect("docker-registry starts");
    let tmp = tempfile::tempdir().unwrap();
    let _run = OlmRun::start(plane.kubeconfig_path(), tmp.path());
    let kubeconfig = plane.kubeconfig_path().to_str().unwrap().to_owned();

    let image = format!("{}/catalogs/good:v1", registry.addr());
    run_common::push_small_catalog(tmp.path(), &image);

    let (code, out, err) = olm(&[
        "catalog",
        "add",
        "good",
        &image,
        "--priority",
        "5",
        "--poll",
        "10m",
        "--kubeconfig",
        &kubeconfig,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "catalog \"good\" created\n");

    // A refusal reads as the API server wrote it, as Go's client prints it.
    let (code, _, err) = olm(&[
        "catalog",
        "add",
        "good",
        &image,
        "--kubeconfig",
        &kubeconfig,
    ]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "Error: failed to create catalog \"good\": clustercatalogs.olm.operatorframework.io \"good\" already exists\n"
    );
    let catalogs: Api<olm_api::ClusterCatalog> = Api::all(plane.client());
    let good = catalogs.get("good").await.unwrap();
    assert_eq!(good.spec.priority, 5);

    let missing = format!("{}/catalogs/missing:v1", registry.addr());
    let (code, out, err) = olm(&[
        "catalog",
        "add",
        "bad",
        &missing,
        "--timeout",
        "5s",
        "--kubeconfig",
        &kubeconfig,
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.starts_with(
            "Error: failed to create catalog \"bad\": not serving after 5s: Retrying: "
        ),
        "{err}"
    );
    assert!(err.contains("catalogs/missing"), "{err}");
    let start = std::time::Instant::now();
    while catalogs.get_opt("bad").await.unwrap().is_some() {
        assert!(
            start.elapsed().as_secs() < 20,
            "the failed catalog is not deleted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    let (code, _, err) = olm(&[
        "catalog",
        "add",
        "pinned",
        &format!(
            "{}/catalogs/good@sha256:{}",
            registry.addr(),
            "0".repeat(64)
        ),
        "--poll",
        "1m",
        "--kubeconfig",
        &kubeconfig,
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("cannot specify a non-zero --poll for a digest based catalog image"),
        "{err}"
    );
    assert!(catalogs.get_opt("pinned").await.unwrap().is_none());

    // get, update and delete the catalog added above.
    let (code, out, err) = olm(&["catalog", "get", "--kubeconfig", &kubeconfig]);
    assert_eq!(code, 0, "{err}");
    let row: Vec<&str> = out
        .lines()
        .find(|l| l.starts_with("good "))
        .unwrap_or_else(|| panic!("no row for good in:\n{out}"))
        .split_whitespace()
        .collect();
    assert_eq!(row[..5], ["good", "5", "Available", "10m", "True"], "{out}");
    let (code, out, err) = olm(&[
        "catalog",
        "update",
        "good",
        "--priority",
        "-3",
        "--poll",
        "0",
        "--kubeconfig",
        &kubeconfig,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "ClusterCatalog \"good\" updated\n");
    let good = catalogs.get("good").await.unwrap();
    assert_eq!(good.spec.priority, -3);
    assert_eq!(
        good.spec
            .source
            .image
            .as_ref()
            .unwrap()
            .poll_interval_minutes,
        None
    );
    let (code, out, _) = olm(&["catalog", "get", "-o", "name", "--kubeconfig", &kubeconfig]);
    assert_eq!(code, 0);
    assert!(
        out.contains("clustercatalog.olm.operatorframework.io/good\n"),
        "{out}"
    );
    let (code, out, err) = olm(&["catalog", "delete", "good", "--kubeconfig", &kubeconfig]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "ClusterCatalog \"good\" deleted\n");
    assert!(catalogs.get_opt("good").await.unwrap().is_none());
    let (code, _, err) = olm(&["catalog", "delete", "good", "--kubeconfig", &kubeconfig]);
    assert_eq!(code, 1);
    assert!(err.contains("ClusterCatalog \"good\" not found"), "{err}");
}
