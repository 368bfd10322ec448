//! OLM as pods on a real node (`olm dev up`, which installs this binary's image with the
//! manifests users apply): two replicas, one leading. Killing the leader in the middle of an
//! upgrade hands the work to the other, which finishes it without doing anything twice; a
//! rollout of OLM itself while an extension installs never leaves the catalog Service without
//! an answer; `olm uninstall-olm` takes OLM away and leaves what it says it leaves.
//!
//! Needs root and the node's parts (`scripts/setup.sh`); only one real node runs per machine.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

mod dev_common;
mod run_common;

use dev_common::{Down, RealEnv, ok, up_real};
use run_common::{exists, kubectl, wait_for};

const NS: &str = "olmv1-system";
const LEASE: &str = "9c4404e7.operatorframework.io";

/// kubectl that may fail: whether it succeeded, and its stdout and stderr together.
fn try_kubectl(kubeconfig: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/pause-operator")
}

/// Pushes the two pause-operator bundles and a catalog of them; returns the catalog image.
fn push_catalog(state: &Path, registry: &str, work: &Path) -> String {
    for version in ["0.1.0", "0.2.0"] {
        let bundle = fixtures().join(format!("pause-operator.v{version}"));
        ok(
            state,
            &[
                "image",
                "push-bundle",
                bundle.to_str().unwrap(),
                &format!("{registry}/pods/pause-operator-bundle:v{version}"),
            ],
        );
    }
    let template = format!(
        "schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: pause-operator\n  defaultChannel: stable\n- schema: olm.channel\n  package: pause-operator\n  name: stable\n  entries:\n  - name: pause-operator.v0.1.0\n  - name: pause-operator.v0.2.0\n    replaces: pause-operator.v0.1.0\n- schema: olm.bundle\n  image: {registry}/pods/pause-operator-bundle:v0.1.0\n- schema: olm.bundle\n  image: {registry}/pods/pause-operator-bundle:v0.2.0\n"
    );
    std::fs::write(work.join("template.yaml"), template).unwrap();
    let rendered = ok(
        state,
        &[
            "catalog",
            "template",
            "basic",
            work.join("template.yaml").to_str().unwrap(),
            "-o",
            "yaml",
        ],
    );
    let dir = work.join("catalog");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("catalog.yaml"), rendered).unwrap();
    let image = format!("{registry}/pods/catalog:latest");
    ok(
        state,
        &[
            "image",
            "push-catalog",
            "--content-only",
            dir.to_str().unwrap(),
            &image,
        ],
    );
    image
}

fn extension(version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: pause-system}}\n---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: installer, namespace: pause-system}}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {{name: pause-installer}}\nroleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}\nsubjects: [{{kind: ServiceAccount, name: installer, namespace: pause-system}}]\n---\napiVersion: olm.operatorframework.io/v1\nkind: ClusterExtension\nmetadata: {{name: pause-operator}}\nspec:\n  namespace: pause-system\n  serviceAccount: {{name: installer}}\n  source:\n    sourceType: Catalog\n    catalog:\n      packageName: pause-operator\n      version: \"{version}\"\n"
    )
}

fn installed(kubeconfig: &Path) -> String {
    kubectl(
        kubeconfig,
        &[
            "get",
            "clusterextension",
            "pause-operator",
            "-o",
            r#"jsonpath={.status.conditions[?(@.type=="Installed")].status} {.status.install.bundle.version}"#,
        ],
        None,
    )
}

/// The pod holding the controllers' Lease.
fn leader(kubeconfig: &Path) -> String {
    let holder = kubectl(
        kubeconfig,
        &[
            "get",
            "lease",
            "-n",
            NS,
            LEASE,
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ],
        None,
    );
    holder
        .rsplit_once('_')
        .map(|(pod, _)| pod.to_owned())
        .unwrap_or_default()
}

fn olm_pods(kubeconfig: &Path) -> Vec<String> {
    let out = kubectl(
        kubeconfig,
        &[
            "get",
            "pods",
            "-n",
            NS,
            "-l",
            "control-plane=olm-controller-manager",
            "--field-selector=status.phase=Running",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}{\"\\n\"}{end}",
        ],
        None,
    );
    out.lines().map(str::to_owned).collect()
}

/// The catalog's content through the API server's service proxy, as olm's client reads it:
/// `ok`, or the first line of what went wrong.
fn catalog_answer(kubeconfig: &Path) -> String {
    let (served, out) = try_kubectl(
        kubeconfig,
        &[
            "get",
            "--raw",
            &format!(
                "/api/v1/namespaces/{NS}/services/https:catalogd-service:443/proxy/catalogs/pods/api/v1/metas?schema=olm.package"
            ),
        ],
    );
    if served && out.contains("pause-operator") {
        "ok".to_owned()
    } else {
        out.lines().next().unwrap_or_default().to_owned()
    }
}

#[test]
fn olm_as_pods_survives_its_leader_and_its_own_rollout_and_uninstalls() {
    let state = tempfile::tempdir().unwrap();
    let _down = Down(state.path());
    let RealEnv {
        registry,
        kubeconfig,
        up_took,
    } = up_real(state.path());
    eprintln!("olm dev up to OLM ready as pods: {up_took:.1?}");
    assert_eq!(olm_pods(&kubeconfig).len(), 2, "two replicas");
    // The PackageManifest API is served by a pod.
    kubectl(&kubeconfig, &["get", "packagemanifests", "-A"], None);

    let image = push_catalog(state.path(), &registry, state.path());
    let catalog = format!(
        "apiVersion: olm.operatorframework.io/v1\nkind: ClusterCatalog\nmetadata: {{name: pods}}\nspec:\n  source:\n    type: Image\n    image: {{ref: \"{image}\", pollIntervalMinutes: 1}}\n"
    );
    kubectl(&kubeconfig, &["apply", "-f", "-"], Some(&catalog));
    wait_for("the catalog to serve", Duration::from_secs(120), || {
        catalog_answer(&kubeconfig) == "ok"
    });
    kubectl(
        &kubeconfig,
        &["apply", "-f", "-"],
        Some(&extension("0.1.0")),
    );
    let took = wait_for("0.1.0 installed", Duration::from_secs(180), || {
        installed(&kubeconfig) == "True 0.1.0"
    });
    eprintln!("ClusterExtension create to Installed (pod Ready) on the real node: {took:.1?}");

    // Kill the leader as the upgrade to 0.2.0 starts: the other replica takes the lease (its
    // renewal deadline is the Lease's duration) and finishes the upgrade.
    let first = leader(&kubeconfig);
    assert!(!first.is_empty(), "a leader");
    kubectl(
        &kubeconfig,
        &["apply", "-f", "-"],
        Some(&extension("0.2.0")),
    );
    kubectl(
        &kubeconfig,
        &[
            "delete",
            "pod",
            "-n",
            NS,
            &first,
            "--grace-period=0",
            "--force",
        ],
        None,
    );
    let took = wait_for(
        "0.2.0 installed by the new leader",
        Duration::from_secs(300),
        || installed(&kubeconfig) == "True 0.2.0",
    );
    let second = leader(&kubeconfig);
    assert_ne!(second, first, "another pod leads");
    eprintln!("leader killed mid-upgrade: installed {took:.1?} later");
    // Nothing twice: one revision per version.
    let revisions = kubectl(
        &kubeconfig,
        &[
            "get",
            "clusterobjectsets",
            "-o",
            "jsonpath={range .items[*]}{.spec.revision}{\"\\n\"}{end}",
        ],
        None,
    );
    let mut numbers: Vec<&str> = revisions.lines().collect();
    numbers.sort_unstable();
    assert_eq!(numbers, ["1", "2"], "{revisions}");

    // Roll OLM itself while the extension is reinstalled from the catalog: the catalog keeps
    // answering through the whole rollout.
    kubectl(
        &kubeconfig,
        &[
            "rollout",
            "restart",
            "deployment",
            "-n",
            NS,
            "olm-controller-manager",
        ],
        None,
    );
    let mut answers = std::collections::BTreeMap::<String, u32>::new();
    let rolled = Instant::now();
    loop {
        *answers.entry(catalog_answer(&kubeconfig)).or_default() += 1;
        let (_, out) = try_kubectl(
            &kubeconfig,
            &[
                "rollout",
                "status",
                "deployment",
                "-n",
                NS,
                "olm-controller-manager",
                "--timeout=1s",
            ],
        );
        if out.contains("successfully rolled out") {
            break;
        }
        assert!(
            rolled.elapsed() < Duration::from_secs(240),
            "rollout: {out}"
        );
    }
    assert_eq!(
        answers.keys().collect::<Vec<_>>(),
        ["ok"],
        "answers during the rollout: {answers:?}"
    );
    assert_eq!(installed(&kubeconfig), "True 0.2.0");

    // Uninstall: OLM's namespace goes, its CRDs and what the extension installed stay.
    let out = ok(
        state.path(),
        &[
            "uninstall-olm",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
        ],
    );
    assert!(out.contains("left in place"), "{out}");
    wait_for("olmv1-system to go", Duration::from_secs(120), || {
        !exists(&kubeconfig, &["namespace", NS])
    });
    assert!(exists(
        &kubeconfig,
        &["crd", "clusterextensions.olm.operatorframework.io"]
    ));
    assert!(exists(
        &kubeconfig,
        &[
            "deployment",
            "-n",
            "pause-system",
            "pause-operator-controller"
        ]
    ));
    assert!(
        !exists(
            &kubeconfig,
            &["apiservice", "v1.packages.operators.coreos.com"]
        ),
        "no APIService left that nothing serves"
    );
}
