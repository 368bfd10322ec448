//! The client for people against a real control plane, registry and `olm run`: `olm catalog
//! add`, `olm search`, `olm install --create-service-account` (a ServiceAccount with the RBAC the
//! bundle needs, not cluster-admin), `olm list` with the upgrade the catalog offers, `olm
//! describe`, `olm upgrade`, a failing install that says what to do, and `olm uninstall`; and
//! the session recorded in docs/client.md, replayed.
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`), Debian's `docker-registry`
//! and kubectl.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use olm_testenv::ControlPlane;
use olm_testenv::registry::Registry;

mod run_common;

use run_common::{OlmRun, kubectl, olm_ok};

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

/// A control plane, a registry and `olm run`, with the example catalog pushed and added as
/// ClusterCatalog `examples`.
struct Examples {
    plane: ControlPlane,
    registry: Registry,
    tmp: tempfile::TempDir,
    run: OlmRun,
    kc: String,
}

impl Examples {
    async fn start() -> Examples {
        let plane = ControlPlane::start()
            .await
            .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
        let registry = Registry::start().expect("docker-registry starts");
        let tmp = tempfile::tempdir().unwrap();
        let run = OlmRun::start(plane.kubeconfig_path(), tmp.path());
        let kc = plane.kubeconfig_path().to_str().unwrap().to_owned();
        let image = run_common::push_example_catalog(tmp.path(), &registry.addr().to_string());
        olm_ok(
            &["catalog", "add", "examples", &image, "--kubeconfig", &kc],
            None,
        );
        Examples {
            plane,
            registry,
            tmp,
            run,
            kc,
        }
    }
}

/// Runs olm, which must fail; checks that its stderr says each of `says`.
fn refused(args: &[&str], says: &[&str]) {
    let (code, out, err) = olm(args);
    assert_eq!(code, 1, "olm {args:?} should fail:\n{out}{err}");
    for s in says {
        assert!(err.contains(s), "olm {args:?}: {s:?} not in:\n{err}");
    }
}

/// The cells of the first table row whose first cell is `first`.
fn row(table: &str, first: &str) -> Vec<String> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect::<Vec<_>>())
        .find(|cells| cells.first().is_some_and(|c| c == first))
        .unwrap_or_else(|| panic!("no row {first:?} in:\n{table}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn search_install_list_describe_upgrade_uninstall() {
    let Examples {
        plane,
        registry,
        tmp: _tmp,
        run,
        kc,
    } = Examples::start().await;
    // Another user's catalog that never unpacks (its image is not in the registry). The client
    // skips it by the rule the controller applies, says so, and serves everyone else.
    let missing = format!("{}/catalogs/never-pushed:v1", registry.addr());
    kubectl(
        plane.kubeconfig_path(),
        &["apply", "-f", "-"],
        Some(&format!(
            "apiVersion: olm.operatorframework.io/v1\nkind: ClusterCatalog\nmetadata:\n  name: unpacking\nspec:\n  source:\n    type: Image\n    image:\n      ref: {missing}\n"
        )),
    );
    let skipped = "note: catalog \"unpacking\" was skipped (not serving: ";

    // Search: every package, then one package's channels and versions.
    let (code, all, err) = olm(&["search", "--kubeconfig", &kc]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(skipped), "{err}");
    assert_eq!(
        row(&all, "example-operator"),
        // Display name and provider come from the head bundle's CSV (the example catalog
        // carries it as an olm.bundle.object, with no olm.csv.metadata).
        [
            "example-operator",
            "examples",
            "Example",
            "Operator",
            "olm",
            "examples",
            "stable",
            "0.2.0"
        ],
        "{all}"
    );
    let versions = olm_ok(
        &[
            "search",
            "example-operator",
            "-o",
            "json",
            "--kubeconfig",
            &kc,
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&versions).unwrap();
    let listed: Vec<&str> = v[0]["channels"][0]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["0.2.0", "0.1.0"], "{versions}");
    let (code, _, err) = olm(&["search", "nope", "--kubeconfig", &kc]);
    assert_eq!(code, 1);
    assert!(
        err.contains("no package matches \"nope\" in any serving ClusterCatalog"),
        "{err}"
    );
    // A word that is not a package name searches: part of the name finds the package.
    let found = olm_ok(&["search", "example", "--kubeconfig", &kc], None);
    assert_eq!(
        row(&found, "example-operator")[0],
        "example-operator",
        "{found}"
    );

    // Install pinned to 0.1.0, with an installer account made for the bundle.
    let (code, out, err) = olm(&[
        "install",
        "example-operator",
        "--version",
        "0.1.0",
        "--namespace",
        "example-system",
        "--create-service-account",
        "--timeout",
        "120s",
        "--kubeconfig",
        &kc,
    ]);
    assert_eq!(code, 0, "{out}{err}\nolm run:\n{}", run.stderr());
    assert_eq!(
        out,
        "extension \"example-operator\" installed: bundle example-operator.v0.1.0 (version 0.1.0)\n"
    );
    // The catalog still unpacking is named by the client and by the extension's status alike.
    assert!(err.contains(skipped), "{err}");
    let condition = kubectl(
        plane.kubeconfig_path(),
        &[
            "get",
            "clusterextension",
            "example-operator",
            "-o",
            r#"jsonpath={.status.conditions[?(@.type=="CatalogsSkipped")].message}"#,
        ],
        None,
    );
    assert!(
        condition.starts_with("catalog \"unpacking\" was skipped (not serving: "),
        "{condition}"
    );
    assert!(
        err.contains("namespace \"example-system\" created"),
        "{err}"
    );
    let binding = kubectl(
        plane.kubeconfig_path(),
        &[
            "get",
            "clusterrolebinding",
            "example-operator-installer",
            "-o",
            "jsonpath={.roleRef.name}",
        ],
        None,
    );
    assert_eq!(binding, "example-operator-installer", "not cluster-admin");
    let rules = kubectl(
        plane.kubeconfig_path(),
        &[
            "get",
            "clusterrole",
            "example-operator-installer",
            "-o",
            "jsonpath={.rules[*].resources}",
        ],
        None,
    );
    assert!(rules.contains("customresourcedefinitions"), "{rules}");
    assert!(!rules.contains("\"*\""), "{rules}");

    // List shows the installed bundle and the upgrade beyond the pin.
    let list = olm_ok(&["list", "--kubeconfig", &kc], None);
    let cells = row(&list, "example-operator");
    assert_eq!(
        cells[..8],
        [
            "example-operator",
            "example-operator",
            "example-system",
            "example-operator.v0.1.0",
            "0.1.0",
            "True",
            "True",
            "0.2.0"
        ],
        "{list}"
    );
    let yaml = olm_ok(&["list", "-o", "yaml", "--kubeconfig", &kc], None);
    assert!(yaml.contains("kind: ClusterExtensionList"), "{yaml}");
    assert!(!yaml.contains("managedFields"), "{yaml}");

    let described = olm_ok(&["describe", "example-operator", "--kubeconfig", &kc], None);
    for want in [
        "Installed bundle: example-operator.v0.1.0 (version 0.1.0)",
        "Service account:  example-operator-installer",
        "example-operator-1 (revision 1, Active)",
        "Deployment example-system/example-operator-controller",
    ] {
        assert!(described.contains(want), "{want:?} in:\n{described}");
    }

    // Upgrade along the catalog's edge. 0.2.0 brings a webhook, which the installer account
    // made for 0.1.0 could not install: it is given what that needs first, keeping what it had.
    let (code, upgraded, err) = olm(&[
        "upgrade",
        "example-operator",
        "--version",
        "0.2.x",
        "--timeout",
        "120s",
        "--kubeconfig",
        &kc,
    ]);
    assert_eq!(code, 0, "{upgraded}{err}\nolm run:\n{}", run.stderr());
    assert_eq!(
        upgraded,
        "extension \"example-operator\" upgraded: bundle example-operator.v0.2.0 (version 0.2.0)\n"
    );
    assert!(
        err.contains("service account example-system/example-operator-installer given the "),
        "{err}"
    );
    let widened = kubectl(
        plane.kubeconfig_path(),
        &[
            "get",
            "clusterrole",
            "example-operator-installer",
            "-o",
            "jsonpath={.rules[*].resources}",
        ],
        None,
    );
    assert!(
        widened.contains("validatingwebhookconfigurations"),
        "{widened}"
    );
    assert!(widened.contains("customresourcedefinitions"), "{widened}");
    assert!(!widened.contains("\"*\""), "{widened}");
    let again = olm_ok(
        &[
            "upgrade",
            "example-operator",
            "--version",
            "0.2.x",
            "--kubeconfig",
            &kc,
        ],
        None,
    );
    assert_eq!(
        again,
        "no changes detected - extension already in desired state\n"
    );

    // A version the catalog does not have fails before anything is created, saying what to do.
    let (code, _, err) = olm(&[
        "install",
        "example-operator",
        "--name",
        "other",
        "--version",
        "9.x",
        "--kubeconfig",
        &kc,
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains("failed to install extension \"other\""),
        "{err}"
    );
    assert!(err.contains("olm search example-operator"), "{err}");
    let (_, exts, _) = olm(&["list", "--kubeconfig", &kc]);
    assert!(!exts.contains("other"), "{exts}");
    // A namespace that does not exist, or a named account that does not, fails before
    // anything is created instead of leaving the controller to retry.
    refused(
        &[
            "install",
            "example-operator",
            "--name",
            "other",
            "--namespace",
            "no-such-namespace",
            "--kubeconfig",
            &kc,
        ],
        &[
            "namespace \"no-such-namespace\" does not exist",
            "--create-namespace",
        ],
    );
    refused(
        &[
            "install",
            "example-operator",
            "--name",
            "other",
            "--namespace",
            "example-system",
            "--service-account",
            "nobody",
            "--kubeconfig",
            &kc,
        ],
        &["service account \"nobody\" not found in namespace \"example-system\""],
    );
    // An account that exists but may install nothing is refused as the controller's preflight
    // would refuse it, with what is missing, before anything is created.
    kubectl(
        plane.kubeconfig_path(),
        &["create", "serviceaccount", "bare", "-n", "example-system"],
        None,
    );
    refused(
        &[
            "install",
            "example-operator",
            "--name",
            "other",
            "--namespace",
            "example-system",
            "--service-account",
            "bare",
            "--kubeconfig",
            &kc,
        ],
        &[
            "service account \"bare\" may not install example-operator",
            "pre-authorization failed",
            "--create-service-account",
        ],
    );
    let (_, exts, _) = olm(&["list", "--kubeconfig", &kc]);
    assert!(!exts.contains("other"), "{exts}");
    // kubectl's habits: a $KUBECONFIG list with a file that does not exist is read as kubectl
    // reads it (the missing one passed over); --context picks a context, and one the
    // kubeconfig lacks is named.
    let listed = Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(["list"])
        .env("KUBECONFIG", format!("/nonexistent/kubeconfig:{kc}"))
        .output()
        .unwrap();
    assert!(
        listed.status.success()
            && String::from_utf8_lossy(&listed.stdout).contains("example-operator"),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let none = Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(["list"])
        .env("KUBECONFIG", "/nonexistent/a:/nonexistent/b")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(
        err.contains("none of the files $KUBECONFIG lists exists (/nonexistent/a, /nonexistent/b)"),
        "{err}"
    );
    let (code, _, err) = olm(&["list", "--context", "nosuch", "--kubeconfig", &kc]);
    assert_eq!(code, 1);
    assert!(err.contains("nosuch"), "{err}");
    // A dry run resolves and prints the extension it would create, with the catalog chosen.
    let printed = olm_ok(
        &[
            "install",
            "example-operator",
            "--name",
            "other",
            "--namespace",
            "example-system",
            "--catalog",
            "examples",
            "--dry-run",
            "--kubeconfig",
            &kc,
        ],
        None,
    );
    assert!(
        printed.contains("kind: ClusterExtension")
            && printed.contains("olm.operatorframework.io/metadata.name: examples"),
        "{printed}"
    );
    let (_, exts, _) = olm(&["list", "--kubeconfig", &kc]);
    assert!(!exts.contains("other"), "{exts}");
    // A range the API server would refuse fails at once with its words, pointing at the syntax.
    refused(
        &[
            "install",
            "example-operator",
            "--version",
            "0.1.0 - 0.1.9",
            "--kubeconfig",
            &kc,
        ],
        &[
            "--version \"0.1.0 - 0.1.9\": spec.source.catalog.version: Invalid value",
            "docs/versions.md",
        ],
    );
    // An upgrade to a channel the catalog does not have is resolved first: refused, and the
    // extension is left as it was.
    refused(
        &[
            "upgrade",
            "example-operator",
            "--channel",
            "nosuchchannel",
            "--kubeconfig",
            &kc,
        ],
        &[
            "failed to upgrade extension \"example-operator\"",
            "nosuchchannel",
        ],
    );
    let spec = olm_ok(&["list", "-o", "json", "--kubeconfig", &kc], None);
    assert!(!spec.contains("nosuchchannel"), "{spec}");

    // Uninstall removes the extension and the installer account.
    // The namespace `install --create-service-account` made goes too with --delete-namespace.
    let (code, removed, err) = olm(&[
        "uninstall",
        "example-operator",
        "--delete-namespace",
        "--timeout",
        "120s",
        "--kubeconfig",
        &kc,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(removed, "extension \"example-operator\" uninstalled\n");
    assert!(
        err.contains("deleted namespace \"example-system\" (olm install created it)"),
        "{err}"
    );
    let accounts = kubectl(
        plane.kubeconfig_path(),
        &[
            "get",
            "serviceaccounts",
            "-n",
            "example-system",
            "-o",
            "name",
        ],
        None,
    );
    assert!(
        !accounts.contains("example-operator-installer"),
        "{accounts}"
    );
    assert_eq!(
        olm_ok(&["list", "--kubeconfig", &kc], None),
        "No resources found\n"
    );
}

/// The first IPv4 address of this machine that is not loopback: the API server may proxy to it
/// (Endpoints may not name loopback addresses).
fn host_address() -> String {
    let out = Command::new("hostname").arg("-I").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find(|a| {
            a.parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| !ip.is_loopback())
        })
        .unwrap_or_else(|| panic!("no non-loopback IPv4 address on this machine"))
        .to_owned()
}

/// On a cluster the catalogs' base URL names the catalog Service, which only the cluster can
/// reach: `olm search` reads it through the API server's service proxy. Here the Service's
/// Endpoints point at `olm run` on this machine's address, and the Service's host name does not
/// resolve locally, so only the proxy can answer.
#[tokio::test(flavor = "multi_thread")]
async fn search_reads_catalogs_through_the_api_server() {
    let plane = ControlPlane::start()
        .await
        .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
    let registry = Registry::start().expect("docker-registry starts");
    let tmp = tempfile::tempdir().unwrap();
    let port = run_common::free_addr().port();
    let listen = format!("0.0.0.0:{port}");
    let run = OlmRun::start_with(
        plane.kubeconfig_path(),
        tmp.path(),
        &[
            "--catalogs-server-addr",
            &listen,
            "--external-address",
            "catalogd-service.olmv1-system.svc",
        ],
    );
    let kc = plane.kubeconfig_path().to_str().unwrap().to_owned();
    // The API server proxies only to endpoints that are pods with that IP: a pod no node runs
    // (so nothing rewrites its status), given this machine's address, stands in for olm's.
    let ip = host_address();
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"catalogd","namespace":"olmv1-system"},
 "spec":{"nodeName":"no-such-node","containers":[{"name":"olm","image":"olm"}]}}"#;
    kubectl(plane.kubeconfig_path(), &["apply", "-f", "-"], Some(pod));
    let status = format!(r#"{{"status":{{"podIP":"{ip}","podIPs":[{{"ip":"{ip}"}}]}}}}"#);
    kubectl(
        plane.kubeconfig_path(),
        &[
            "patch",
            "pod",
            "catalogd",
            "-n",
            "olmv1-system",
            "--subresource=status",
            "--type=merge",
            "-p",
            &status,
        ],
        None,
    );
    let service = format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[
{{"apiVersion":"v1","kind":"Service","metadata":{{"name":"catalogd-service","namespace":"olmv1-system"}},
 "spec":{{"ports":[{{"name":"http","port":80,"targetPort":{port}}}]}}}},
{{"apiVersion":"v1","kind":"Endpoints","metadata":{{"name":"catalogd-service","namespace":"olmv1-system"}},
 "subsets":[{{"addresses":[{{"ip":"{ip}","targetRef":{{"kind":"Pod","name":"catalogd","namespace":"olmv1-system"}}}}],
   "ports":[{{"name":"http","port":{port}}}]}}]}}]}}"#
    );
    kubectl(
        plane.kubeconfig_path(),
        &["apply", "-f", "-"],
        Some(&service),
    );
    let image = run_common::push_example_catalog(tmp.path(), &registry.addr().to_string());
    olm_ok(
        &["catalog", "add", "examples", &image, "--kubeconfig", &kc],
        None,
    );
    let base = kubectl(
        plane.kubeconfig_path(),
        &[
            "get",
            "clustercatalog",
            "examples",
            "-o",
            "jsonpath={.status.urls.base}",
        ],
        None,
    );
    assert_eq!(
        base,
        "http://catalogd-service.olmv1-system.svc/catalogs/examples"
    );
    let (code, out, err) = olm(&["search", "example-operator", "--kubeconfig", &kc]);
    assert_eq!(code, 0, "{out}{err}\nolm run:\n{}", run.stderr());
    assert_eq!(
        row(&out, "example-operator")[..4],
        ["example-operator", "examples", "stable", "(default)"],
        "{out}"
    );
}

/// The transcript of a new user's session in docs/client.md, replayed: each `$ olm …` line is
/// run against a fresh control plane with the example catalog added as `examples`, and its
/// stdout must be exactly the lines that follow it in the docs.
#[tokio::test(flavor = "multi_thread")]
async fn the_session_in_the_docs_replays() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/client.md"))
        .expect("docs/client.md");
    let start = doc
        .find("<!-- transcript: replayed by crates/olm/tests/client_cli.rs -->")
        .expect("the transcript's start marker");
    let end = doc[start..]
        .find("<!-- end of transcript -->")
        .expect("the transcript's end marker")
        + start;
    let block = &doc[start..end];
    let body = block
        .split_once("```console\n")
        .and_then(|(_, b)| b.rsplit_once("```"))
        .map(|(b, _)| b)
        .expect("a console block");
    let mut steps: Vec<(String, String)> = Vec::new();
    for line in body.lines() {
        if let Some(command) = line.strip_prefix("$ ") {
            steps.push((command.to_owned(), String::new()));
        } else if let Some((_, out)) = steps.last_mut() {
            out.push_str(line);
            out.push('\n');
        }
    }
    assert!(steps.len() >= 4, "the transcript has its steps: {steps:?}");

    // Bound by name: the control plane and registry live until the end of the test.
    let Examples {
        plane: _plane,
        registry: _registry,
        tmp: _tmp,
        run,
        kc,
    } = Examples::start().await;
    for (command, want) in &steps {
        let mut words = command.split_whitespace();
        assert_eq!(words.next(), Some("olm"), "{command}");
        let mut args: Vec<&str> = words.collect();
        args.extend(["--kubeconfig", &kc]);
        let (code, out, err) = olm(&args);
        assert_eq!(
            code,
            0,
            "$ {command}\n{out}{err}\nolm run:\n{}",
            run.stderr()
        );
        assert_eq!(&out, want, "$ {command} printed (stderr: {err})");
    }
}
