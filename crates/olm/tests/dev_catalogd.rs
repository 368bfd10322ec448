//! `olm dev up` gives a working catalog service: push a catalog image to the dev registry, apply a
//! ClusterCatalog with kubectl, and read its content from the host at `status.urls.base`,
//! byte-identical to `olm catalog render -o jsonl`. The catalog server is part of `olm run`,
//! whose one `/metrics` also carries the controllers' series. Uses its own state folder so it never touches
//! a developer's running environment.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod dev_common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const SERVING_TIMEOUT: Duration = Duration::from_secs(90);

fn community() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/catalogs/community-v4.21")
}

fn olm(state: &Path, args: &[&str]) -> Output {
    let bin = olm_testenv::bin_dir().expect("control plane bin folder");
    Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(args)
        .env("OLM_CACHE_DIR", state)
        .env("OLM_CONTROLPLANE_BIN", bin)
        .output()
        .expect("olm runs")
}

fn olm_ok(state: &Path, args: &[&str]) -> String {
    let out = olm(state, args);
    assert!(
        out.status.success(),
        "olm {}: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn kubectl(kubeconfig: &str, args: &[&str], stdin: Option<&str>) -> Output {
    dev_common::kubectl_output(Path::new(kubeconfig), args, stdin)
}

/// The value of `name: value` in `olm dev status`.
fn status_line<'a>(status: &'a str, name: &str) -> &'a str {
    let prefix = format!("{name}: ");
    status
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {name:?} line in:\n{status}"))
}

/// Stops the environment even when an assertion fails half-way.
struct Down<'a>(&'a Path);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        let _ = olm(self.0, &["dev", "down"]);
    }
}

#[test]
fn cluster_catalog_is_served_to_the_host() {
    let state = tempfile::tempdir().expect("temp dir");
    let up = olm(state.path(), &["dev", "up", "--node", "fake"]);
    let _down = Down(state.path());
    assert!(
        up.status.success(),
        "olm dev up failed: {}{}",
        String::from_utf8_lossy(&up.stdout),
        String::from_utf8_lossy(&up.stderr)
    );

    let status = olm_ok(state.path(), &["dev", "status"]);
    let kubeconfig = status_line(&status, "kubeconfig").to_owned();
    let registry = status_line(&status, "registry").to_owned();
    let catalogd = status_line(&status, "catalogd");
    assert!(catalogd.starts_with("http://127.0.0.1:"), "{status}");
    // The lines keep their order (the node after the API server, how OLM runs before the
    // catalog server), with olm run's metrics last.
    let names: Vec<&str> = status
        .lines()
        .filter_map(|l| l.split_once(": ").map(|(n, _)| n))
        .collect();
    assert_eq!(
        names,
        [
            "api server",
            "node",
            "kubeconfig",
            "registry",
            "olm",
            "catalogd",
            "metrics"
        ],
        "{status}"
    );
    // One /metrics for olm run: the catalog server's histogram and the controllers' series.
    let metrics = status_line(&status, "metrics");
    let scraped = Command::new("curl")
        .args(["--silent", "--show-error", "--fail", metrics])
        .output()
        .expect("curl runs");
    let scraped = String::from_utf8_lossy(&scraped.stdout);
    for series in [
        "# TYPE catalogd_http_request_duration_seconds histogram",
        "controller_runtime_reconcile_total{controller=\"clusterextension\",result=\"success\"}",
        "workqueue_depth{controller=\"clusterobjectset\"",
    ] {
        assert!(scraped.contains(series), "{series} missing:\n{scraped}");
    }

    // The CRDs were applied by `olm dev up`.
    let crds = kubectl(&kubeconfig, &["get", "crd", "-o", "name"], None);
    let crds = String::from_utf8_lossy(&crds.stdout);
    for kind in ["clustercatalogs", "clusterextensions", "clusterobjectsets"] {
        assert!(
            crds.contains(&format!("{kind}.olm.operatorframework.io")),
            "{crds}"
        );
    }

    let dir = community();
    let dir = dir.to_str().expect("utf-8 path");
    let image = format!("{registry}/catalogs/community:v1");
    olm_ok(
        state.path(),
        &["image", "push-catalog", "--content-only", dir, &image],
    );

    let catalog = format!(
        "apiVersion: olm.operatorframework.io/v1\n\
         kind: ClusterCatalog\n\
         metadata:\n  name: community\n\
         spec:\n  source:\n    type: Image\n    image:\n      ref: {image}\n"
    );
    let applied = kubectl(&kubeconfig, &["apply", "-f", "-"], Some(&catalog));
    assert!(
        applied.status.success(),
        "{}",
        String::from_utf8_lossy(&applied.stderr)
    );

    let started = Instant::now();
    loop {
        let serving = kubectl(
            &kubeconfig,
            &[
                "get",
                "clustercatalog",
                "community",
                "-o",
                r#"jsonpath={.status.conditions[?(@.type=="Serving")].status}"#,
            ],
            None,
        );
        if String::from_utf8_lossy(&serving.stdout).trim() == "True" {
            break;
        }
        if started.elapsed() > SERVING_TIMEOUT {
            let yaml = kubectl(
                &kubeconfig,
                &["get", "clustercatalog", "community", "-o", "yaml"],
                None,
            );
            panic!(
                "the catalog was not Serving after {SERVING_TIMEOUT:?}:\n{}",
                String::from_utf8_lossy(&yaml.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }

    let base = kubectl(
        &kubeconfig,
        &[
            "get",
            "clustercatalog",
            "community",
            "-o",
            "jsonpath={.status.urls.base}",
        ],
        None,
    );
    let base = String::from_utf8(base.stdout).expect("utf-8 base URL");
    assert_eq!(base, format!("{catalogd}/catalogs/community"));
    // The ClusterCatalog controller's reconciles are counted as controller-runtime counts them.
    let scraped = Command::new("curl")
        .args(["--silent", "--show-error", "--fail", metrics])
        .output()
        .expect("curl runs");
    let scraped = String::from_utf8_lossy(&scraped.stdout);
    let counted = scraped
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "controller_runtime_reconcile_total{controller=\"clustercatalog\",result=\"success\"} ",
            )
        })
        .and_then(|n| n.parse::<u64>().ok());
    assert!(
        counted.is_some_and(|n| n >= 1),
        "a served catalog was reconciled at least once:\n{scraped}"
    );
    let labels = kubectl(
        &kubeconfig,
        &[
            "get",
            "clustercatalog",
            "community",
            "-o",
            "jsonpath={.metadata.labels}",
        ],
        None,
    );
    assert!(
        String::from_utf8_lossy(&labels.stdout)
            .contains(r#""olm.operatorframework.io/metadata.name":"community""#),
        "the controller labels catalogs when no webhook does: {}",
        String::from_utf8_lossy(&labels.stdout)
    );

    let served = Command::new("curl")
        .args(["--silent", "--show-error", "--fail"])
        .arg(format!("{base}/api/v1/all"))
        .output()
        .expect("curl runs");
    assert!(
        served.status.success(),
        "{}",
        String::from_utf8_lossy(&served.stderr)
    );
    let rendered = Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(["catalog", "render", dir, "-o", "jsonl"])
        .output()
        .expect("olm catalog render runs");
    assert!(rendered.status.success());
    assert!(!rendered.stdout.is_empty());
    assert!(
        served.stdout == rendered.stdout,
        "served {} bytes, rendered {} bytes",
        served.stdout.len(),
        rendered.stdout.len()
    );

    olm_ok(state.path(), &["dev", "down"]);
    let status = olm(state.path(), &["dev", "status"]);
    assert!(!status.status.success());
    let gone = Command::new("curl")
        .args(["--silent", "--max-time", "5"])
        .arg(format!("{base}/api/v1/all"))
        .output()
        .expect("curl runs");
    assert!(
        !gone.status.success(),
        "the catalog server stopped with the rest"
    );
}
