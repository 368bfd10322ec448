//! operator-framework's `kubectl operator` plugin (v0.6.0, built from its Go module by
//! `tools/oracles/build.sh`) as a judge of OLM v0: every one of its OLM v0 commands, run as its
//! users run them, must do against olm what it does against upstream's OLM — `catalog add`,
//! `catalog list`, `list-available`, `describe`, `install` (making the OperatorGroup), `list`,
//! `list-operands`, `upgrade` (approving the pending InstallPlan), `uninstall` (refused while an
//! operand exists, then with everything it can delete) and `catalog remove`. Each command's exit
//! status, its output and what it left on the cluster are checked.
//!
//! The plugin reads a catalog image's labels by pulling it itself, and only over HTTPS; the dev
//! registry speaks plain HTTP. A TLS pull-through cache of the dev registry on `localhost`, with
//! a certificate the plugin is told to trust, serves it the image; the node pulls the same name
//! through its mirror of every registry, from the dev registry itself.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use olm_testenv::registry::{Registry, RegistryOptions, RegistryTls};

use crate::{Env, Scenario, wait, widgets};

/// This module's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![("kubectl-operator-v0-commands", every_v0_command)]
}

const NS: &str = "kubectl-operator";
const CATALOG: &str = "kubectl-operator-catalog";
const PACKAGE: &str = "example-operator";
/// The catalog image's repository and tag, in the dev registry.
const CATALOG_REPO: &str = "olm-examples/kubectl-operator-catalog:latest";
const CRD: &str = "widgets.example.olm.operatorframework.io";
const TIMEOUT: Duration = Duration::from_secs(240);
/// Given to the commands that wait: the plugin's own default (1m) is tight for an install on a
/// busy two-core machine.
const PLUGIN_TIMEOUT: &str = "4m";

/// The plugin, built (or found built) by `tools/oracles/build.sh` — only it, not every oracle.
fn plugin_binary() -> PathBuf {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tools/oracles/build.sh");
    let out = Command::new(&script)
        .arg("kubectl-operator")
        .output()
        .expect("tools/oracles/build.sh runs");
    assert!(
        out.status.success(),
        "tools/oracles/build.sh: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("kubectl-operator");
    assert!(bin.is_file(), "{} is missing", bin.display());
    bin
}

/// How the scenario runs the plugin.
struct Plugin {
    binary: PathBuf,
    kubeconfig: PathBuf,
    /// The CA of the pull-through cache's certificate (Go's `SSL_CERT_FILE`).
    ca: PathBuf,
    /// The working folder: `catalog add` keeps its image store in `./cache` while it runs.
    dir: PathBuf,
}

impl Plugin {
    /// `kubectl-operator ARGS`: whether it succeeded and its output. The plugin prints
    /// everything, errors included, on stdout; cobra's usage errors go to stderr.
    fn run(&self, args: &[&str]) -> (bool, String) {
        let out = Command::new(&self.binary)
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("SSL_CERT_FILE", &self.ca)
            .current_dir(&self.dir)
            .output()
            .expect("kubectl-operator runs");
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    }

    /// [`Plugin::run`] that must succeed; its output.
    fn ok(&self, args: &[&str]) -> String {
        let started = Instant::now();
        let (ok, out) = self.run(args);
        assert!(ok, "kubectl operator {args:?} failed:\n{out}");
        // The command's words: `catalog` has subcommands.
        let words = if args.first() == Some(&"catalog") {
            2
        } else {
            1
        };
        let command: Vec<&str> = args.iter().take(words).copied().collect();
        eprintln!(
            "FIGURE kubectl operator {}: {:.1?}",
            command.join(" "),
            started.elapsed()
        );
        out
    }
}

/// A CA and a certificate for `localhost` signed by it, written to `dir`: the CA's path, and
/// the certificate and key for the registry.
fn localhost_certificate(dir: &Path) -> (PathBuf, RegistryTls) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "kubectl-operator scenario CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let leaf_params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    let leaf_key = rcgen::KeyPair::generate().unwrap();
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
    let ca = dir.join("ca.crt");
    let tls = RegistryTls {
        certificate: dir.join("tls.crt"),
        key: dir.join("tls.key"),
    };
    std::fs::write(&ca, ca_cert.pem()).unwrap();
    std::fs::write(&tls.certificate, leaf.pem()).unwrap();
    std::fs::write(&tls.key, leaf_key.serialize_pem()).unwrap();
    (ca, tls)
}

/// Whether `kubectl get ARGS` finds nothing.
fn gone(env: &Env, args: &[&str]) -> bool {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.push("--ignore-not-found");
    all.push("-o=name");
    let (ok, out, _) = env.try_kubectl(&all, None);
    ok && out.trim().is_empty()
}

/// What a failed step prints: the objects this scenario drives.
fn state(env: &Env) -> String {
    let (_, out, err) = env.try_kubectl(
        &[
            "get",
            "catalogsources,subscriptions,installplans,csv,operatorgroups,pods",
            "-n",
            NS,
            "-o",
            "wide",
        ],
        None,
    );
    let (_, subs, _) = env.try_kubectl(&["get", "subscriptions", "-n", NS, "-o", "yaml"], None);
    let (_, operator, _) = env.try_kubectl(
        &["get", "operators", &format!("{PACKAGE}.{NS}"), "-o", "yaml"],
        None,
    );
    format!("{out}{err}\n{subs}\n{operator}")
}

/// Whether an AGE cell is of an object made within this run: `45s`, `3m12s`, `12m` (a missing
/// or broken creation time reads `<invalid>` or decades).
fn young(age: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match age.strip_suffix('s') {
        Some(rest) => match rest.split_once('m') {
            Some((m, s)) => digits(m) && digits(s),
            None => digits(rest),
        },
        None => age.strip_suffix('m').is_some_and(digits),
    }
}

/// A table's rows (after the header) split on runs of spaces, the AGE column, checked to be
/// [`young`], left off.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip(1)
        .map(|l| {
            let mut cells: Vec<String> = l
                .split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect();
            let age = cells.pop().unwrap_or_default();
            assert!(young(&age), "AGE {age:?} in {l:?}");
            cells
        })
        .collect()
}

/// The header of a table, its columns split on runs of spaces.
fn header(table: &str) -> Vec<&str> {
    table
        .lines()
        .next()
        .unwrap_or_default()
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect()
}

fn every_v0_command(env: &Env) {
    let started = Instant::now();
    let dir = env.work_dir("kubectl-operator");
    let binary = plugin_binary();
    eprintln!(
        "FIGURE kubectl-operator plugin found or built: {:.1?}",
        started.elapsed()
    );
    crate::push_example_catalog(env, &dir, NS, CATALOG_REPO);
    let (ca, tls) = localhost_certificate(&dir);
    let front = Registry::start_with(&RegistryOptions {
        tls: Some(tls),
        proxy: Some(format!("http://{}", env.registry)),
        ..RegistryOptions::default()
    })
    .unwrap_or_else(|e| panic!("the TLS pull-through cache: {e}"));
    // The plugin pulls this over HTTPS from the cache; the node pulls the same name through its
    // mirror of every registry, from the dev registry.
    let image = format!("localhost:{}/{CATALOG_REPO}", front.addr().port());
    let plugin = Plugin {
        binary,
        kubeconfig: env.kubeconfig.clone(),
        ca,
        dir: dir.clone(),
    };
    env.kubectl(&["create", "namespace", NS], None);
    let commands = Instant::now();

    // catalog add: the CatalogSource as the plugin writes it, READY before it returns.
    let out = plugin.ok(&[
        "catalog",
        "add",
        CATALOG,
        &image,
        "-n",
        NS,
        "--display-name",
        "Example operators",
        "--publisher",
        "olm examples",
        "--timeout",
        PLUGIN_TIMEOUT,
    ]);
    assert_eq!(out, format!("created catalogsource \"{CATALOG}\"\n"));
    assert_eq!(
        env.field(
            &["get", "catalogsource", "-n", NS, CATALOG],
            "{.spec.sourceType} {.spec.image} {.spec.displayName}/{.spec.publisher} {.status.connectionState.lastObservedState}"
        ),
        format!("grpc {image} Example operators/olm examples READY")
    );

    // catalog list, in the namespace and in all of them.
    let out = plugin.ok(&["catalog", "list", "-n", NS]);
    assert_eq!(
        header(&out),
        ["NAME", "DISPLAY", "TYPE", "PUBLISHER", "AGE"],
        "{out}"
    );
    assert_eq!(
        rows(&out),
        [[CATALOG, "Example operators", "grpc", "olm examples"]],
        "{out}"
    );
    let out = plugin.ok(&["catalog", "list", "-A"]);
    assert_eq!(
        header(&out),
        ["NAME", "NAMESPACE", "DISPLAY", "TYPE", "PUBLISHER", "AGE"],
        "{out}"
    );
    assert!(
        rows(&out).contains(&vec![
            CATALOG.to_owned(),
            NS.to_owned(),
            "Example operators".to_owned(),
            "grpc".to_owned(),
            "olm examples".to_owned()
        ]),
        "{out}"
    );

    // list-available: the PackageManifest API, listed by catalog label and got by name.
    let available = vec![vec![
        PACKAGE.to_owned(),
        "Example operators".to_owned(),
        "stable".to_owned(),
        format!("{PACKAGE}.v0.2.0"),
    ]];
    let out = plugin.ok(&["list-available", "-n", NS, "--catalog", CATALOG]);
    assert_eq!(
        header(&out),
        ["NAME", "CATALOG", "CHANNEL", "LATEST CSV", "AGE"],
        "{out}"
    );
    assert_eq!(rows(&out), available, "{out}");
    let out = plugin.ok(&["list-available", PACKAGE, "-n", NS]);
    assert_eq!(rows(&out), available, "{out}");
    let out = plugin.ok(&[
        "list-available",
        "-n",
        NS,
        "--catalog",
        &format!("{NS}/{CATALOG}"),
    ]);
    assert_eq!(rows(&out), available, "{out}");
    // Unfiltered: this namespace's packages and the global catalogs' ones.
    let out = plugin.ok(&["list-available", "-n", NS]);
    assert!(rows(&out).contains(&available[0]), "{out}");
    // A package no catalog has: the PackageManifest API's NotFound, printed as it comes.
    let (ok, out) = plugin.run(&["describe", "no-such-operator", "-n", NS]);
    assert!(!ok, "{out}");
    assert_eq!(
        out,
        "packagemanifests.packages.operators.coreos.com \"no-such-operator\" not found\n"
    );
    let (ok, out) = plugin.run(&["install", "no-such-operator", "-n", NS]);
    assert!(!ok, "{out}");
    assert_eq!(
        out,
        "failed to install operator: get package manifest: packagemanifests.packages.operators.coreos.com \"no-such-operator\" not found\n"
    );

    // describe: the channel head's CSV description as the PackageManifest carries it.
    let out = plugin.ok(&["describe", PACKAGE, "-n", NS, "--with-long-description"]);
    assert_eq!(
        out,
        "== Package ==\nExample Operator 0.2.0 (by olm examples)\n\n\
         == Repository ==\n\n\n\
         == Catalog ==\nExample operators\n\n\
         == Channels ==\nstable (default) (shown)\n\n\
         == Install Modes ==\nAllNamespaces\n\n\
         == Description ==\nA tiny operator that shows OLM v1 installing and upgrading an extension.\n\
         \n== Long Description ==\nThe example operator of the olm repository (examples/operator): one API (Widget) and one\n\
         Deployment. It reconciles every widget, writing status.ready (whether the widget has at most\n\
         100 parts), status.observedGeneration and status.message, and refuses a widget with more\n\
         than 100 parts with a validating admission webhook.\n"
    );
    // `olm v0 describe` prints what the plugin prints.
    let kc = env.kubeconfig.to_str().expect("utf-8 path");
    let ours = env.olm(&[
        "v0",
        "describe",
        PACKAGE,
        "-n",
        NS,
        "--with-long-description",
        "--kubeconfig",
        kc,
    ]);
    assert_eq!(ours, out);

    // From install to uninstall the scenario holds the Widget CRD, which uninstall deletes.
    let _widgets = widgets();

    // Without an OperatorGroup, and without asking for one, nothing is made.
    let (ok, out) = plugin.run(&["install", PACKAGE, "-n", NS]);
    assert!(!ok, "{out}");
    assert_eq!(
        out,
        format!(
            "failed to install operator: namespace \"{NS}\" has no existing operator group; use --create-operator-group to create one automatically\n"
        )
    );
    assert!(gone(env, &["subscriptions,operatorgroups", "-n", NS]));

    // install 0.1.0 by hand approval: the plugin makes an AllNamespaces OperatorGroup named
    // after the namespace, subscribes, approves the first InstallPlan and waits for it.
    let out = plugin.ok(&[
        "install",
        PACKAGE,
        "-n",
        NS,
        "--channel",
        "stable",
        "--approval",
        "Manual",
        "--version",
        "0.1.0",
        "--create-operator-group",
        "--timeout",
        PLUGIN_TIMEOUT,
    ]);
    assert_eq!(
        out,
        format!(
            "operatorgroup \"{NS}\" created\nsubscription \"{PACKAGE}\" created\n\
             operator \"{PACKAGE}\" installed; installed csv is \"{PACKAGE}.v0.1.0\"\n"
        )
    );
    assert_eq!(
        env.field(
            &["get", "operatorgroup", "-n", NS, NS],
            "{.spec.targetNamespaces}|{.status.namespaces}"
        ),
        "|[\"\"]"
    );
    assert_eq!(
        env.field(
            &["get", "subscription", "-n", NS, PACKAGE],
            "{.spec.name} {.spec.channel} {.spec.source}/{.spec.sourceNamespace} {.spec.installPlanApproval} {.spec.startingCSV}"
        ),
        format!("{PACKAGE} stable {CATALOG}/{NS} Manual {PACKAGE}.v0.1.0")
    );

    // A version the channel's entries do not list.
    let (ok, out) = plugin.run(&["install", PACKAGE, "-n", NS, "--version", "9.9.9"]);
    assert!(!ok, "{out}");
    assert_eq!(
        out,
        "failed to install operator: get starting CSV: version \"9.9.9\" not found in channel \"stable\"\n"
    );

    // OLM resolves the upgrade to 0.2.0 and waits for its approval.
    wait(
        "the upgrade to 0.2.0 pending approval",
        TIMEOUT,
        || {
            env.field(
                &["get", "subscription", "-n", NS, PACKAGE],
                "{.status.installedCSV} {.status.currentCSV} {.status.state}",
            ) == format!("{PACKAGE}.v0.1.0 {PACKAGE}.v0.2.0 UpgradePending")
        },
        || state(env),
    );
    let out = plugin.ok(&["list", "-A"]);
    assert_eq!(
        header(&out),
        [
            "PACKAGE",
            "NAMESPACE",
            "SUBSCRIPTION",
            "INSTALLED CSV",
            "CURRENT CSV",
            "STATUS",
            "AGE"
        ],
        "{out}"
    );
    assert!(
        rows(&out).contains(&vec![
            PACKAGE.to_owned(),
            NS.to_owned(),
            PACKAGE.to_owned(),
            format!("{PACKAGE}.v0.1.0"),
            format!("{PACKAGE}.v0.2.0"),
            "UpgradePending".to_owned()
        ]),
        "{out}"
    );

    // list-operands: the Operator object names the CSV, whose owned CRD gives the Widgets.
    wait(
        "0.1.0's CSV Succeeded",
        TIMEOUT,
        || {
            env.field(
                &["get", "csv", "-n", NS, &format!("{PACKAGE}.v0.1.0")],
                "{.status.phase}",
            ) == "Succeeded"
        },
        || state(env),
    );
    let out = plugin.ok(&["list-operands", PACKAGE, "-n", NS]);
    assert_eq!(out, "No resources found\n");
    // The operator's webhook must be serving before a Widget can be made.
    wait(
        "a Widget accepted",
        TIMEOUT,
        || {
            env.try_kubectl(
                &["apply", "-f", "-"],
                Some(&format!(
                    "apiVersion: example.olm.operatorframework.io/v1\nkind: Widget\nmetadata: {{name: sample, namespace: {NS}}}\nspec: {{size: 2}}\n"
                )),
            )
            .0
        },
        || state(env),
    );
    let out = plugin.ok(&["list-operands", PACKAGE, "-n", NS]);
    assert_eq!(
        header(&out),
        ["APIVERSION", "KIND", "NAMESPACE", "NAME", "AGE"],
        "{out}"
    );
    assert_eq!(
        rows(&out),
        [[
            "example.olm.operatorframework.io/v1",
            "Widget",
            NS,
            "sample"
        ]],
        "{out}"
    );
    let out = plugin.ok(&["list-operands", PACKAGE, "-n", NS, "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(list["kind"], "List", "{out}");
    assert_eq!(list["items"][0]["metadata"]["name"], "sample", "{out}");
    assert_eq!(list["items"][0]["spec"]["size"], 2, "{out}");
    // `olm v0 list-operands` lists what the plugin lists, in the same columns.
    let ours = env.olm(&["v0", "list-operands", PACKAGE, "-n", NS, "--kubeconfig", kc]);
    let theirs = plugin.ok(&["list-operands", PACKAGE, "-n", NS]);
    assert_eq!(header(&ours), header(&theirs), "{ours}");
    assert_eq!(rows(&ours), rows(&theirs), "{ours}");

    // upgrade: approves the pending InstallPlan and waits for it.
    let out = plugin.ok(&["upgrade", PACKAGE, "-n", NS, "--timeout", PLUGIN_TIMEOUT]);
    assert_eq!(
        out,
        format!("operator \"{PACKAGE}\" upgraded; installed csv is \"{PACKAGE}.v0.2.0\"\n")
    );
    wait(
        "0.2.0 installed and the Subscription at the latest",
        TIMEOUT,
        || {
            env.field(
                &["get", "subscription", "-n", NS, PACKAGE],
                "{.status.installedCSV} {.status.state}",
            ) == format!("{PACKAGE}.v0.2.0 AtLatestKnown")
                && env.field(
                    &["get", "csv", "-n", NS, &format!("{PACKAGE}.v0.2.0")],
                    "{.status.phase}",
                ) == "Succeeded"
        },
        || state(env),
    );
    // Until the replaced CSV is gone, and while olm's Operator controller gathers changes
    // (300 ms) after that, the Operator lists it too, first; the plugin takes the first CSV the
    // Operator lists for the operator's.
    let csv_gone = wait(
        "0.1.0's CSV gone",
        TIMEOUT,
        || gone(env, &["csv", "-n", NS, &format!("{PACKAGE}.v0.1.0")]),
        || state(env),
    );
    let refs_gone = wait(
        "0.1.0's CSV gone from the Operator's components",
        TIMEOUT,
        || {
            env.field(
                &["get", "operator", &format!("{PACKAGE}.{NS}")],
                "{.status.components.refs[?(@.kind==\"ClusterServiceVersion\")].name}",
            ) == format!("{PACKAGE}.v0.2.0")
        },
        || state(env),
    );
    eprintln!(
        "FIGURE kubectl-operator upgrade done -> 0.1.0's CSV gone: {csv_gone:.1?}, then from the Operator: {refs_gone:.1?}"
    );
    let out = plugin.ok(&["list", "-A"]);
    assert!(
        rows(&out).contains(&vec![
            PACKAGE.to_owned(),
            NS.to_owned(),
            PACKAGE.to_owned(),
            format!("{PACKAGE}.v0.2.0"),
            format!("{PACKAGE}.v0.2.0"),
            "AtLatestKnown".to_owned()
        ]),
        "{out}"
    );
    let (ok, out) = plugin.run(&["upgrade", PACKAGE, "-n", NS]);
    assert!(!ok, "{out}");
    assert_eq!(
        out,
        "failed to upgrade operator: operator is already at latest version\n"
    );

    // uninstall with the default strategy refuses while a Widget exists, deleting nothing.
    let (ok, out) = plugin.run(&["uninstall", PACKAGE, "-n", NS]);
    assert!(!ok, "{out}");
    assert_eq!(
        out,
        format!(
            "uninstall operator: could not proceed with deletion of \"{PACKAGE}\": operand deletion aborted: one or more operands exist and operand strategy is \"abort\"\n\n\
             See kubectl operator uninstall --help for more information on operand deletion strategies.\n"
        )
    );
    assert!(!gone(env, &["subscription", "-n", NS, PACKAGE]));

    // uninstall deleting everything it can (what --delete-all stands for): the Subscription,
    // the Widget, the CSV, every object the Operator lists (the CRD among them), the Operator
    // and the OperatorGroup.
    let out = plugin.ok(&[
        "uninstall",
        PACKAGE,
        "-n",
        NS,
        "--operand-strategy",
        "delete",
        "--delete-operator",
        "--delete-operator-groups",
        "--timeout",
        PLUGIN_TIMEOUT,
    ]);
    eprintln!("kubectl operator uninstall said:\n{out}");
    let lines: Vec<&str> = out.lines().collect();
    for line in [
        format!("subscription \"{PACKAGE}\" deleted"),
        "widget \"sample\" deleted".to_owned(),
        format!("clusterserviceversion \"{PACKAGE}.v0.2.0\" deleted"),
        format!("customresourcedefinition \"{CRD}\" deleted"),
        format!("operator \"{PACKAGE}.{NS}\" deleted"),
        format!("operatorgroup \"{NS}\" deleted"),
    ] {
        assert!(lines.contains(&line.as_str()), "no {line:?} in\n{out}");
    }
    assert_eq!(
        lines.first(),
        Some(&format!("subscription \"{PACKAGE}\" deleted").as_str()),
        "{out}"
    );
    assert_eq!(
        lines.last(),
        Some(&format!("operatorgroup \"{NS}\" deleted").as_str()),
        "{out}"
    );
    for what in [
        &["subscriptions,csv,operatorgroups", "-n", NS][..],
        &["crd", CRD][..],
        &["operators", &format!("{PACKAGE}.{NS}")][..],
        &["deployments", "-n", NS, "example-operator-controller"][..],
    ] {
        assert!(
            gone(env, what),
            "{what:?} left after uninstall\n{}",
            state(env)
        );
    }
    let out = plugin.ok(&["list", "-A"]);
    assert!(
        rows(&out)
            .iter()
            .all(|row| row.get(1) != Some(&NS.to_owned())),
        "{out}"
    );

    // The common way: the default channel (an empty `spec.channel`), automatic approval, the
    // channel head; then `-X` with no operand left to guard.
    let out = plugin.ok(&[
        "install",
        PACKAGE,
        "-n",
        NS,
        "--approval",
        "Automatic",
        "-C",
        "--timeout",
        PLUGIN_TIMEOUT,
    ]);
    assert_eq!(
        out,
        format!(
            "operatorgroup \"{NS}\" created\nsubscription \"{PACKAGE}\" created\n\
             operator \"{PACKAGE}\" installed; installed csv is \"{PACKAGE}.v0.2.0\"\n"
        )
    );
    assert_eq!(
        env.field(
            &["get", "subscription", "-n", NS, PACKAGE],
            "{.spec.channel}|{.spec.installPlanApproval}|{.spec.startingCSV}"
        ),
        "|Automatic|"
    );
    wait(
        "0.2.0's CSV Succeeded and listed by the Operator",
        TIMEOUT,
        || {
            env.field(
                &["get", "csv", "-n", NS, &format!("{PACKAGE}.v0.2.0")],
                "{.status.phase}",
            ) == "Succeeded"
                && env.field(
                    &["get", "operator", &format!("{PACKAGE}.{NS}")],
                    "{.status.components.refs[?(@.kind==\"ClusterServiceVersion\")].name}",
                ) == format!("{PACKAGE}.v0.2.0")
        },
        || state(env),
    );
    let out = plugin.ok(&["list-operands", PACKAGE, "-n", NS]);
    assert_eq!(out, "No resources found\n");
    let out = plugin.ok(&[
        "uninstall",
        PACKAGE,
        "-n",
        NS,
        "-X",
        "--timeout",
        PLUGIN_TIMEOUT,
    ]);
    let lines: Vec<&str> = out.lines().collect();
    for line in [
        format!("subscription \"{PACKAGE}\" deleted"),
        format!("clusterserviceversion \"{PACKAGE}.v0.2.0\" deleted"),
        format!("customresourcedefinition \"{CRD}\" deleted"),
        format!("operator \"{PACKAGE}.{NS}\" deleted"),
        format!("operatorgroup \"{NS}\" deleted"),
    ] {
        assert!(lines.contains(&line.as_str()), "no {line:?} in\n{out}");
    }
    for what in [
        &["subscriptions,csv,operatorgroups", "-n", NS][..],
        &["crd", CRD][..],
        &["operators", &format!("{PACKAGE}.{NS}")][..],
    ] {
        assert!(
            gone(env, what),
            "{what:?} left after uninstall -X\n{}",
            state(env)
        );
    }

    // catalog remove: deleted and gone before it returns.
    let out = plugin.ok(&[
        "catalog",
        "remove",
        CATALOG,
        "-n",
        NS,
        "--timeout",
        PLUGIN_TIMEOUT,
    ]);
    assert_eq!(out, format!("catalogsource \"{CATALOG}\" removed\n"));
    assert!(gone(env, &["catalogsource", "-n", NS, CATALOG]));
    let out = plugin.ok(&["catalog", "list", "-n", NS]);
    assert_eq!(out, format!("No resources found in {NS} namespace.\n"));
    eprintln!(
        "FIGURE kubectl operator: every v0 command, catalog add to catalog remove: {:.1?}",
        commands.elapsed()
    );

    env.kubectl(
        &["delete", "namespace", NS, "--wait", "--timeout=120s"],
        None,
    );
    drop(front);
}
