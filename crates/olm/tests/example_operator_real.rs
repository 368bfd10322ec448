//! The example operator of `examples/` installed by `olm run` on a real node, where its
//! container really runs: its image pushed with `olm image push-program` under the path the
//! node's containerd pulls `quay.io/olm-examples/example-operator` from, 0.1.0 installed and
//! then upgraded to 0.2.0 (whose pod takes over), a Widget reconciled, and an invalid Widget
//! refused by the webhook — which proves the API server called the pod through the Service and
//! the certificate OLM issued, mounted and injected — and finally uninstalled, taking the pods,
//! the Deployment and the webhook with it.
//!
//! Needs root and the node's parts (`scripts/setup.sh`), the control plane binaries
//! (`tools/controlplane/build.sh`), Debian's `docker-registry`, kubectl, and the example operator
//! built beside `olm` (`cargo test --workspace` builds it; alone,
//! `cargo build -p example-operator` first). One real node runs per machine, so the scenarios
//! here take turns.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use olm_testenv::registry::Registry;
use olm_testenv::{ControlPlane, NodeKind, Options};
use tokio::sync::Mutex;

mod dev_common;
mod run_common;

use dev_common::operator_binary;
use run_common::{OlmRun, kubectl, olm_ok};

/// One real node per machine: the scenarios of this binary take turns.
static MACHINE: Mutex<()> = Mutex::const_new(());

const TIMEOUT: Duration = Duration::from_secs(180);
const SELECTOR: &str = "app.kubernetes.io/name=example-operator";
const TOO_LARGE: &str = "spec.size 1000 is more than 100, the most a widget can have";

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// Polls `what` until `ok` holds, failing with `explain` after [`TIMEOUT`]. How long it took.
fn wait(what: &str, ok: impl FnMut() -> bool, explain: impl Fn() -> String) -> Duration {
    dev_common::wait_explained(what, TIMEOUT, ok, explain)
}

/// The operator's pods: name, image, Ready status and whether it is being deleted, one line
/// each.
fn pods(kubeconfig: &Path) -> Vec<String> {
    kubectl(
        kubeconfig,
        &[
            "get",
            "pods",
            "-n",
            "example-system",
            "-l",
            SELECTOR,
            "-o",
            r#"jsonpath={range .items[*]}{.metadata.name} {.spec.containers[0].image} {.status.conditions[?(@.type=="Ready")].status} {.metadata.deletionTimestamp}{"\n"}{end}"#,
        ],
        None,
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

/// Whether the only pod of the operator runs `image` and is Ready.
fn only_pod_ready(kubeconfig: &Path, image: &str) -> bool {
    match pods(kubeconfig).as_slice() {
        [pod] => {
            let fields: Vec<&str> = pod.split_whitespace().collect();
            fields.get(1) == Some(&image) && fields.get(2) == Some(&"True") && fields.len() == 3
        }
        _ => false,
    }
}

/// What the cluster and `olm run` say, for a failure.
fn state(kubeconfig: &Path, run: &OlmRun) -> String {
    let get = |args: &[&str]| {
        Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(args)
            .output()
            .map(|o| {
                format!(
                    "{}{}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                )
            })
            .unwrap_or_default()
    };
    format!(
        "{}\n{}\n{}\n--- operator log:\n{}\n--- olm run:\n{}",
        get(&["get", "clusterextension", "example-operator", "-o", "yaml"]),
        get(&["get", "pods", "-n", "example-system", "-o", "wide"]),
        get(&["get", "events", "-n", "example-system"]),
        get(&["logs", "-n", "example-system", "-l", SELECTOR, "--tail=30"]),
        run.stderr()
    )
}

fn installed(kubeconfig: &Path, want: &str) -> bool {
    kubectl(
        kubeconfig,
        &[
            "get",
            "clusterextension",
            "example-operator",
            "-o",
            r#"jsonpath={.status.conditions[?(@.type=="Installed")].status} {.status.install.bundle.name} {.status.install.bundle.version}"#,
        ],
        None,
    ) == format!("True {want}")
}

fn widget_status(kubeconfig: &Path, name: &str) -> String {
    kubectl(
        kubeconfig,
        &[
            "get",
            "widget",
            name,
            "-n",
            "default",
            "-o",
            "jsonpath={.status}",
        ],
        None,
    )
}

fn widget(name: &str, size: u32) -> String {
    format!(
        r#"{{"apiVersion": "example.olm.operatorframework.io/v1", "kind": "Widget", "metadata": {{"name": "{name}", "namespace": "default"}}, "spec": {{"size": {size}}}}}"#
    )
}

/// `kubectl create -f -` of `object`: its exit status and what it printed on stderr.
fn create(kubeconfig: &Path, object: &str, extra: &[&str]) -> (bool, String) {
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["create", "-f", "-"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(object.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_example_operator_runs_upgrades_reconciles_and_validates_on_a_real_node() {
    let _turn = MACHINE.lock().await;
    let binary = operator_binary();
    let registry = Registry::start().unwrap_or_else(|e| panic!("a local registry: {e}"));
    let registry_addr = registry.addr().to_string();
    let plane = ControlPlane::start_with(Options {
        node: NodeKind::Real,
        mirror: Some(registry_addr.clone()),
        ..Options::default()
    })
    .await
    .unwrap_or_else(|e| panic!("starting a control plane with a real node failed: {e}"));
    let kc = plane.kubeconfig_path().to_owned();
    let tmp = tempfile::tempdir().unwrap();
    let run = OlmRun::start(&kc, tmp.path());

    // The image under the path the node pulls quay.io/olm-examples/example-operator from.
    let mut pushed = Vec::new();
    for version in ["0.1.0", "0.2.0"] {
        let reference = format!("{registry_addr}/olm-examples/example-operator:v{version}");
        let out = olm_ok(
            &[
                "image",
                "push-program",
                binary.to_str().unwrap(),
                &reference,
            ],
            None,
        );
        assert!(out.starts_with(&format!("{reference}@sha256:")), "{out}");
        pushed.push(out.trim().rsplit_once('@').unwrap().1.to_owned());
    }
    assert_eq!(pushed[0], pushed[1], "one build, one image, two tags");
    run_common::push_example_catalog(tmp.path(), &registry_addr);
    let catalog = std::fs::read_to_string(examples().join("clustercatalog.yaml"))
        .unwrap()
        .replace("${REGISTRY}", &registry_addr);
    kubectl(&kc, &["apply", "-f", "-"], Some(&catalog));
    kubectl(
        &kc,
        &[
            "wait",
            "--for=condition=Serving",
            "clustercatalog/examples",
            "--timeout=120s",
        ],
        None,
    );

    // 0.1.0: the controller alone, no webhook.
    let extension = std::fs::read_to_string(examples().join("clusterextension.yaml")).unwrap();
    let pinned = extension.replace(
        "      packageName: example-operator\n",
        "      packageName: example-operator\n      version: 0.1.0\n",
    );
    assert_ne!(pinned, extension);
    let created = Instant::now();
    kubectl(&kc, &["apply", "-f", "-"], Some(&pinned));
    wait(
        "0.1.0's pod Ready",
        || only_pod_ready(&kc, "quay.io/olm-examples/example-operator:v0.1.0"),
        || state(&kc, &run),
    );
    let to_ready = created.elapsed();
    wait(
        "0.1.0 Installed",
        || installed(&kc, "example-operator.v0.1.0 0.1.0"),
        || state(&kc, &run),
    );
    let to_installed = created.elapsed();
    eprintln!(
        "FIGURE ClusterExtension create -> operator pod Ready: {to_ready:.1?} (Installed after {to_installed:.1?})"
    );

    // Reconciled by 0.1.0, whose CRD has only status.ready; nothing refuses a widget over the
    // limit yet.
    let (ok, err) = create(&kc, &widget("early", 3), &[]);
    assert!(ok, "{err}");
    let (ok, err) = create(&kc, &widget("stored-too-large", 1000), &[]);
    assert!(ok, "without a webhook it is stored: {err}");
    wait(
        "widgets reconciled by 0.1.0",
        || {
            widget_status(&kc, "early") == r#"{"ready":true}"#
                && widget_status(&kc, "stored-too-large") == r#"{"ready":false}"#
        },
        || state(&kc, &run),
    );

    // 0.2.0: the webhook, a readiness probe, a CRD with more status; its pod takes over.
    let upgraded = Instant::now();
    kubectl(
        &kc,
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
    wait(
        "0.2.0's pod the only one, Ready",
        || only_pod_ready(&kc, "quay.io/olm-examples/example-operator:v0.2.0"),
        || state(&kc, &run),
    );
    let upgrade_to_ready = upgraded.elapsed();
    wait(
        "0.2.0 Installed",
        || installed(&kc, "example-operator.v0.2.0 0.2.0"),
        || state(&kc, &run),
    );
    eprintln!("FIGURE upgrade to 0.2.0 -> its pod the only one, Ready: {upgrade_to_ready:.1?}");
    let args = kubectl(
        &kc,
        &[
            "get",
            "deployment",
            "example-operator-controller",
            "-n",
            "example-system",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].args}",
        ],
        None,
    );
    assert_eq!(
        args,
        r#"["--webhook-cert-dir=/tmp/k8s-webhook-server/serving-certs"]"#
    );

    // The widgets of before, reconciled again by the new pod under the new CRD.
    wait(
        "widgets reconciled by 0.2.0",
        || {
            widget_status(&kc, "early") == r#"{"observedGeneration":1,"ready":true}"#
                && widget_status(&kc, "stored-too-large")
                    == format!(
                        r#"{{"message":"{TOO_LARGE}","observedGeneration":1,"ready":false}}"#
                    )
        },
        || state(&kc, &run),
    );

    // The webhook answers once OLM's certificate provider has put the CA into its configuration.
    let webhook_took = wait(
        "the webhook callable",
        || create(&kc, &widget("probe", 3), &["--dry-run=server"]).0,
        || state(&kc, &run),
    );
    eprintln!("(the webhook answered {webhook_took:.1?} after the pod was the only one Ready)");
    let sample = std::fs::read_to_string(examples().join("widget.yaml")).unwrap();
    kubectl(&kc, &["apply", "-f", "-"], Some(&sample));
    wait(
        "examples/widget.yaml reconciled",
        || widget_status(&kc, "sample") == r#"{"observedGeneration":1,"ready":true}"#,
        || state(&kc, &run),
    );
    let too_large = std::fs::read_to_string(examples().join("widget-too-large.yaml")).unwrap();
    let (ok, err) = create(&kc, &too_large, &[]);
    assert!(!ok, "stored");
    assert!(
        err.contains(&format!(
            "admission webhook \"vwidget.example.olm.operatorframework.io\" denied the request: {TOO_LARGE}"
        )),
        "{err}"
    );
    // The old widget over the limit may still change, as long as its size stays.
    kubectl(
        &kc,
        &[
            "patch",
            "widget",
            "stored-too-large",
            "-n",
            "default",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"color":"red"}}"#,
        ],
        None,
    );

    // Uninstalled: the operator's pods, its Deployment and its webhook go with the extension.
    let removed = Instant::now();
    kubectl(
        &kc,
        &[
            "delete",
            "clusterextension",
            "example-operator",
            "--wait",
            "--timeout=120s",
        ],
        None,
    );
    wait(
        "the operator's pods, Deployment and webhook gone",
        || {
            let webhooks = kubectl(
                &kc,
                &[
                    "get",
                    "validatingwebhookconfigurations",
                    "-o",
                    "jsonpath={.items[*].webhooks[*].name}",
                ],
                None,
            );
            pods(&kc).is_empty()
                && !run_common::exists(
                    &kc,
                    &[
                        "deployment",
                        "-n",
                        "example-system",
                        "example-operator-controller",
                    ],
                )
                && !webhooks.contains("vwidget.example.olm.operatorframework.io")
        },
        || state(&kc, &run),
    );
    eprintln!(
        "FIGURE ClusterExtension deleted -> operator pods, Deployment and webhook gone: {:.1?}",
        removed.elapsed()
    );

    let (code, stderr, _) = run.stop(rustix::process::Signal::TERM);
    assert_eq!(code, Some(0), "{stderr}");
    plane.stop();
}
