//! The example of `examples/` installed by `olm run`, the way `scripts/run.sh` does it and then
//! one step further: bundles and catalog pushed with `olm image`, the catalog rendered from the
//! bundle images with `olm catalog template basic`, and a ClusterExtension pinned to 0.1.0 that is
//! then let go to 0.2.x — the upgrade follows the catalog's `replaces` edge and leaves the first
//! revision archived. Against a real control plane and registry.
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`), Debian's `docker-registry`
//! and kubectl.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use olm_testenv::ControlPlane;
use olm_testenv::registry::Registry;

mod run_common;

use run_common::{OlmRun, kubectl};

const INSTALL_TIMEOUT: Duration = Duration::from_secs(120);

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// `.status.install.bundle` as `name version`, once `Installed` is True.
fn wait_installed(kubeconfig: &Path, run: &mut OlmRun, want: &str) {
    let started = Instant::now();
    loop {
        let got = kubectl(
            kubeconfig,
            &[
                "get",
                "clusterextension",
                "example-operator",
                "-o",
                r#"jsonpath={.status.conditions[?(@.type=="Installed")].status} {.status.install.bundle.name} {.status.install.bundle.version}"#,
            ],
            None,
        );
        if got == format!("True {want}") {
            return;
        }
        if started.elapsed() > INSTALL_TIMEOUT {
            let yaml = kubectl(
                kubeconfig,
                &["get", "clusterextension", "example-operator", "-o", "yaml"],
                None,
            );
            panic!(
                "not installed as {want:?} after {INSTALL_TIMEOUT:?} (last: {got:?}):\n{yaml}\nolm run's log:\n{}",
                run.stderr()
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[tokio::test]
async fn the_example_operator_installs_and_upgrades_along_its_edge() {
    let plane = match ControlPlane::start().await {
        Ok(p) => p,
        Err(e) => panic!("starting the local control plane failed: {e}"),
    };
    let registry = match Registry::start() {
        Ok(r) => r,
        Err(e) => panic!("this test needs a local registry: {e}"),
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let kubeconfig = plane.kubeconfig_path().to_owned();
    let mut run = OlmRun::start(&kubeconfig, tmp.path());
    let registry = registry.addr().to_string();
    let examples = examples();

    run_common::push_example_catalog(tmp.path(), &registry);

    let cluster_catalog = std::fs::read_to_string(examples.join("clustercatalog.yaml"))
        .expect("clustercatalog.yaml")
        .replace("${REGISTRY}", &registry);
    kubectl(&kubeconfig, &["apply", "-f", "-"], Some(&cluster_catalog));
    kubectl(
        &kubeconfig,
        &[
            "wait",
            "--for=condition=Serving",
            "clustercatalog/examples",
            "--timeout=120s",
        ],
        None,
    );

    // Pinned to the first version, then let go: the upgrade takes the catalog's edge.
    let extension = std::fs::read_to_string(examples.join("clusterextension.yaml"))
        .expect("clusterextension.yaml");
    let pinned = extension.replace(
        "      packageName: example-operator\n",
        "      packageName: example-operator\n      version: 0.1.0\n",
    );
    assert_ne!(
        pinned, extension,
        "the example names its package as expected"
    );
    kubectl(&kubeconfig, &["apply", "-f", "-"], Some(&pinned));
    wait_installed(&kubeconfig, &mut run, "example-operator.v0.1.0 0.1.0");
    let deployments = kubectl(
        &kubeconfig,
        &["get", "deployments", "-n", "example-system", "-o", "name"],
        None,
    );
    assert_eq!(
        deployments.trim(),
        "deployment.apps/example-operator-controller"
    );

    kubectl(
        &kubeconfig,
        &[
            "patch",
            "clusterextension",
            "example-operator",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"source":{"catalog":{"version":"0.2.x"}}}}"#,
        ],
        None,
    );
    wait_installed(&kubeconfig, &mut run, "example-operator.v0.2.0 0.2.0");

    // The new CRD field of 0.2.0 is served, and the first revision was archived.
    let crd = kubectl(
        &kubeconfig,
        &[
            "get",
            "crd",
            "widgets.example.olm.operatorframework.io",
            "-o",
            "jsonpath={.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.color.type}",
        ],
        None,
    );
    assert_eq!(crd, "string");
    let revisions = kubectl(
        &kubeconfig,
        &[
            "get",
            "clusterobjectsets",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.spec.lifecycleState} {end}",
        ],
        None,
    );
    assert_eq!(
        revisions.trim(),
        "example-operator-1=Archived example-operator-2=Active",
        "{revisions}"
    );

    // The reconciles are counted.
    let (_, metrics) = run_common::get(run.metrics, "/metrics").expect("metrics");
    let successes = metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix(
                "controller_runtime_reconcile_total{controller=\"clusterextension\",result=\"success\"} ",
            )
        })
        .and_then(|n| n.parse::<u64>().ok())
        .expect("the clusterextension success counter");
    assert!(successes > 0, "{metrics}");

    let (code, stderr, _) = run.stop(rustix::process::Signal::TERM);
    assert_eq!(code, Some(0), "{stderr}");
}
