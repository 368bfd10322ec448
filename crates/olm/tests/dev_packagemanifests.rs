//! `olm dev up` leaves a healthy cluster: the PackageManifest API it registers is served
//! (and `olm v0` drives OLM v0 through it: search, install, list, upgrade, uninstall)
//! (`kubectl get packagemanifests -A` lists the packages of every CatalogSource, through the real
//! API server and the aggregator), and namespaces are deleted — an APIService nobody serves
//! would keep every one of them `Terminating` (`NamespaceDeletionDiscoveryFailure`). Uses its
//! own state folder so it never touches a developer's running environment.
//!
//! Needs kubectl and the control plane binaries (`tools/controlplane/build.sh`), and an address
//! of this machine besides loopback (the aggregator may not use a loopback endpoint).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod dev_common;

mod run_common;

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use run_common::wait_for;

fn olm(state: &Path, args: &[&str]) -> Output {
    let bin = olm_testenv::bin_dir().expect("control plane bin folder");
    Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(args)
        .env("OLM_CACHE_DIR", state)
        .env("OLM_CONTROLPLANE_BIN", bin)
        .output()
        .expect("olm runs")
}

fn kubectl(kubeconfig: &str, args: &[&str], stdin: Option<&str>) -> Output {
    dev_common::kubectl_output(Path::new(kubeconfig), args, stdin)
}

fn kubectl_ok(kubeconfig: &str, args: &[&str], stdin: Option<&str>) -> String {
    let out = kubectl(kubeconfig, args, stdin);
    assert!(out.status.success(), "kubectl {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Stops the environment and the registry server even when an assertion fails half-way.
struct Cleanup<'a> {
    state: &'a Path,
    serve: Option<Child>,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        if let Some(mut serve) = self.serve.take() {
            let _ = serve.kill();
            let _ = serve.wait();
        }
        let _ = olm(self.state, &["dev", "down"]);
    }
}

/// A file-based catalog of one package, `plain`, with one bundle.
const CATALOG: &str = r#"{"schema": "olm.package", "name": "plain", "defaultChannel": "stable"}
{"schema": "olm.channel", "package": "plain", "name": "stable", "entries": [{"name": "plain.v0.1.0"}]}
{"schema": "olm.bundle", "name": "plain.v0.1.0", "package": "plain", "image": "example.com/plain-bundle:v0.1.0", "properties": [{"type": "olm.package", "value": {"packageName": "plain", "version": "0.1.0"}}, {"type": "olm.csv.metadata", "value": {"displayName": "Plain", "provider": {"name": "Example Inc"}}}]}
"#;

fn catalog_source(namespace: &str, name: &str, address: &str) -> String {
    serde_json::json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"sourceType": "grpc", "address": address, "displayName": name}})
    .to_string()
}

#[test]
fn packagemanifests_are_served_and_namespaces_are_deleted() {
    let state = tempfile::tempdir().expect("temp dir");
    let up = olm(state.path(), &["dev", "up", "--node", "fake"]);
    let mut cleanup = Cleanup {
        state: state.path(),
        serve: None,
    };
    assert!(up.status.success(), "olm dev up failed: {up:?}");
    let kubeconfig = String::from_utf8_lossy(&olm(state.path(), &["dev", "kubeconfig"]).stdout)
        .trim()
        .to_owned();
    let kc = kubeconfig.as_str();

    // `up` returns once the API is available.
    let available = kubectl_ok(
        kc,
        &[
            "get",
            "apiservice",
            "v1.packages.operators.coreos.com",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Available\")].status}",
        ],
        None,
    );
    assert_eq!(available, "True");

    // A registry serving the catalog, as a CatalogSource's address (olm run dials it from this
    // machine).
    let dir = state.path().join("catalog");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("catalog.json"), CATALOG).expect("write catalog");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let serve = Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(["catalog", "serve"])
        .arg(&dir)
        .args(["-p", &port.to_string()])
        .args(["--termination-log", "/dev/null"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("olm catalog serve starts");
    cleanup.serve = Some(serve);
    let address = format!("127.0.0.1:{port}");

    // One catalog in OLM's namespace (global: seen from every namespace), one in a team's.
    kubectl_ok(kc, &["create", "namespace", "team-a"], None);
    kubectl_ok(
        kc,
        &["apply", "-f", "-"],
        Some(&catalog_source("olmv1-system", "global-catalog", &address)),
    );
    kubectl_ok(
        kc,
        &["apply", "-f", "-"],
        Some(&catalog_source("team-a", "team-catalog", &address)),
    );
    let rows = "jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}/{.status.catalogSource}{\"\\n\"}{end}";
    let mut listed = String::new();
    let took = wait_for(
        "both catalogs' packages through the API server",
        Duration::from_secs(90),
        || {
            let out = kubectl(kc, &["get", "packagemanifests", "-A", "-o", rows], None);
            listed = String::from_utf8_lossy(&out.stdout).into_owned();
            listed.contains("olmv1-system/plain/global-catalog")
                && listed.contains("team-a/plain/team-catalog")
        },
    );
    eprintln!("PackageManifests listed after {took:?}:\n{listed}");
    // The table kubectl prints by default, as users see it.
    let table = kubectl_ok(kc, &["get", "packagemanifests", "-n", "team-a"], None);
    assert!(table.starts_with("NAME"), "{table}");
    assert!(table.contains("plain"), "{table}");

    // OLM v0 from the client: the example operator found, installed at 0.1.0 with Manual
    // approval (an AllNamespaces operator: the OperatorGroup made targets every namespace),
    // listed, upgraded by approving the next plan, uninstalled.
    let registry = dev_common::registry(state.path());
    let image = run_common::push_example_catalog(&state.path().join("examples"), &registry);
    kubectl_ok(kc, &["create", "namespace", "team-b"], None);
    kubectl_ok(
        kc,
        &["apply", "-f", "-"],
        Some(
            &serde_json::json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
                "metadata": {"name": "examples", "namespace": "team-b",
                    "annotations": {"olm.operatorframework.io/serve-in-process": "true"}},
                "spec": {"sourceType": "grpc", "image": image, "displayName": "Examples"}})
            .to_string(),
        ),
    );
    let v0 = |args: &[&str]| {
        let mut all = vec!["v0"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--kubeconfig", kc]);
        let out = olm(state.path(), &all);
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let mut found = String::new();
    wait_for(
        "the example package offered to team-b",
        Duration::from_secs(90),
        || {
            found = v0(&["search", "-n", "team-b"]).1;
            found.contains("example-operator")
        },
    );
    let (code, versions, err) = v0(&["search", "example-operator", "-n", "team-b"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        versions.contains("0.1.0") && versions.contains("0.2.0"),
        "{versions}"
    );
    let (code, described, err) = v0(&["describe", "example-operator", "-n", "team-b"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        described.contains("== Channels ==\nstable (default) (shown)\n"),
        "{described}"
    );
    let (code, _, err) = v0(&["install", "example-operator", "-n", "team-b"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("failed to install operator: namespace \"team-b\" has no existing operator group; use --create-operator-group to create one automatically"),
        "{err}"
    );
    let (code, out, err) = v0(&[
        "install",
        "example-operator",
        "-n",
        "team-b",
        "--version",
        "0.1.0",
        "--approval",
        "Manual",
        "--create-operator-group",
        "--timeout",
        "3m",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out,
        "operator \"example-operator\" installed; installed csv is \"example-operator.v0.1.0\"\n",
        "{err}"
    );
    assert!(err.contains("targeting all namespaces"), "{err}");
    let (code, listed, err) = v0(&["list", "-n", "team-b"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        listed.contains("example-operator.v0.1.0") && listed.contains("Succeeded"),
        "{listed}"
    );
    // The next version waits for approval; `list` shows it pending, `upgrade` approves it.
    wait_for(
        "the upgrade to 0.2.0 pending approval",
        Duration::from_secs(60),
        || v0(&["list", "-n", "team-b"]).1.contains("UpgradePending"),
    );
    let (code, out, err) = v0(&[
        "upgrade",
        "example-operator",
        "-n",
        "team-b",
        "--timeout",
        "3m",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out,
        "operator \"example-operator\" upgraded; installed csv is \"example-operator.v0.2.0\"\n",
        "{err}"
    );
    // list-operands: the operator owns Widgets and none exist yet (its validating webhook,
    // with no real pod behind it on this node, refuses new ones; real_olm lists real ones).
    let mut operands = String::new();
    wait_for(
        "the operator's Operator object to name its CSV",
        Duration::from_secs(30),
        || {
            let (code, out, err) = v0(&["list-operands", "example-operator", "-n", "team-b"]);
            operands = format!("{out}{err}");
            code == 0
        },
    );
    assert_eq!(operands, "No resources found\n");
    let (code, out, err) = v0(&[
        "list-operands",
        "example-operator",
        "-n",
        "team-b",
        "-o",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let list: serde_json::Value = serde_json::from_str(&out).expect("a JSON List");
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"], serde_json::json!([]));
    let (code, _, err) = v0(&["list-operands", "nothing-here", "-n", "team-b"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("list operands: package \"nothing-here\" not found in namespace \"team-b\""),
        "{err}"
    );
    let (code, out, err) = v0(&[
        "uninstall",
        "example-operator",
        "-n",
        "team-b",
        "--delete-operator-groups",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "subscription \"example-operator\" deleted\nclusterserviceversion \"example-operator.v0.2.0\" deleted\noperatorgroup \"team-b\" deleted\n"
    );
    assert!(err.contains("OLM v0 never deletes CRDs"), "{err}");
    assert!(
        !kubectl(
            kc,
            &["get", "subscription", "example-operator", "-n", "team-b"],
            None
        )
        .status
        .success()
    );

    // Namespace deletion completes: discovery of every group, packages included, works.
    kubectl_ok(kc, &["create", "namespace", "short-lived"], None);
    kubectl_ok(
        kc,
        &["delete", "namespace", "short-lived", "--wait=false"],
        None,
    );
    let took = wait_for(
        "namespace short-lived to be deleted",
        Duration::from_secs(30),
        || {
            !kubectl(kc, &["get", "namespace", "short-lived"], None)
                .status
                .success()
        },
    );
    eprintln!("a namespace was deleted in {took:?}");
    kubectl_ok(kc, &["delete", "namespace", "team-a", "--wait=false"], None);
    let took = wait_for(
        "namespace team-a (with its CatalogSource) to be deleted",
        Duration::from_secs(30),
        || {
            !kubectl(kc, &["get", "namespace", "team-a"], None)
                .status
                .success()
        },
    );
    eprintln!("a namespace with a CatalogSource was deleted in {took:?}");
}
