//! `olm migrate catalogs` and `olm migrate check` on a cluster where both OLMs run (`olm dev
//! up`, fake node): an operator installed through a Subscription from an image CatalogSource,
//! beside a ConfigMap CatalogSource that cannot move. The check first fails on the catalog
//! (no ClusterCatalog holds the package), `catalogs` makes one (a dry run first, then for
//! real, then again, adopting what it made), and the check then passes; the refusals and
//! their words are upstream's.
//!
//! Needs kubectl and the control plane binaries (`tools/controlplane/build.sh`), and an address
//! of this machine besides loopback (the aggregator may not use a loopback endpoint).

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod dev_common;

mod run_common;

use std::path::Path;
use std::time::Duration;

use dev_common::{Down, ok, olm};
use run_common::wait_for;

fn kubectl_ok(kubeconfig: &str, args: &[&str], stdin: Option<&str>) -> String {
    let out = dev_common::kubectl_output(Path::new(kubeconfig), args, stdin);
    assert!(out.status.success(), "kubectl {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn catalogs_move_and_checks_say_what_blocks_an_operator() {
    let state = tempfile::tempdir().expect("temp dir");
    let _down = Down(state.path());
    ok(state.path(), &["dev", "up", "--node", "fake"]);
    let kc = ok(state.path(), &["dev", "kubeconfig"]).trim().to_owned();
    let kc = kc.as_str();
    let registry = dev_common::registry(state.path());
    let image = run_common::push_example_catalog(&state.path().join("examples"), &registry);
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(&["--kubeconfig", kc]);
        let (succeeded, out, err) = olm(state.path(), &all);
        (i32::from(!succeeded), out, err)
    };

    kubectl_ok(kc, &["create", "namespace", "team-m"], None);
    kubectl_ok(
        kc,
        &["apply", "-f", "-"],
        Some(
            &serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
                {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
                    "metadata": {"name": "examples", "namespace": "team-m",
                        "annotations": {"olm.operatorframework.io/serve-in-process": "true"}},
                    "spec": {"sourceType": "grpc", "image": image, "displayName": "Examples",
                        "priority": 5,
                        "updateStrategy": {"registryPoll": {"interval": "30m"}}}},
                {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "legacy", "namespace": "team-m"},
                    "data": {"packages": "[]", "customResourceDefinitions": "[]",
                        "clusterServiceVersions": "[]"}},
                {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
                    "metadata": {"name": "legacy", "namespace": "team-m"},
                    "spec": {"sourceType": "configmap", "configMap": "legacy"}}]})
            .to_string(),
        ),
    );
    wait_for(
        "the example package offered to team-m",
        Duration::from_secs(90),
        || {
            run(&["v0", "search", "-n", "team-m"])
                .1
                .contains("example-operator")
        },
    );
    let (code, out, err) = run(&[
        "v0",
        "install",
        "example-operator",
        "-n",
        "team-m",
        "--create-operator-group",
        "--timeout",
        "3m",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    wait_for(
        "the Subscription at the latest version",
        Duration::from_secs(60),
        || {
            kubectl_ok(
                kc,
                &[
                    "get",
                    "subscription",
                    "example-operator",
                    "-n",
                    "team-m",
                    "-o",
                    "jsonpath={.status.state}",
                ],
                None,
            ) == "AtLatestKnown"
        },
    );

    // Argument rules, in upstream's words.
    let (code, _, err) = run(&["migrate", "check"]);
    assert_eq!(code, 1);
    assert!(err.contains("specify an operator name or --all"), "{err}");
    let (code, _, err) = run(&["migrate", "check", "example-operator"]);
    assert_eq!(code, 1);
    assert!(err.contains("-n/--namespace is required"), "{err}");

    // No ClusterCatalog holds the package yet: every other check passes, the catalog one
    // fails, and the command exits 1 (upstream's exits 0).
    let (code, out, err) = run(&["migrate", "check", "example-operator", "-n", "team-m"]);
    assert_eq!(code, 1, "{out}{err}");
    for passed in [
        "✓ ClusterObjectSet API",
        "✓ Subscription state                  state is \"AtLatestKnown\"",
        "✓ Installed CSV                       example-operator.v0.2.0",
        "✓ AllNamespaces install mode supported",
        "✓ No OperatorCondition usage",
    ] {
        assert!(out.contains(passed), "{passed}\n{out}");
    }
    assert!(
        out.contains("✗ Catalog availability                No ClusterCatalog found for package \"example-operator\"; run olm migrate catalogs first: package \"example-operator\" at version \"0.2.0\" in channel \"stable\" not found in any serving ClusterCatalog"),
        "{out}"
    );
    assert!(
        out.contains(
            "✗ Ineligible: package \"example-operator\" not found in any serving ClusterCatalog"
        ),
        "{out}"
    );

    // A dry run says what would be made and makes nothing.
    let (code, out, err) = run(&["migrate", "catalogs", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains(
            "⚠ CatalogSource team-m/legacy: configmap-type CatalogSource has no OLMv1 equivalent"
        ),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "✓ CatalogSource team-m/examples: would create ClusterCatalog examples from image {image}"
        )),
        "{err}"
    );
    assert!(out.ends_with("\nDry run complete.\n"), "{out}");
    let listed = kubectl_ok(kc, &["get", "clustercatalogs", "-o", "name"], None);
    assert!(
        !listed.contains("clustercatalog.olm.operatorframework.io/examples"),
        "{listed}"
    );

    // For real: created, with the source's priority and poll interval, and serving.
    let (code, out, err) = run(&["migrate", "catalogs", "--timeout", "2m"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("Created (1):\n  ✓ team-m/examples → ClusterCatalog/examples\n"),
        "{out}"
    );
    assert!(out.contains("Done: 1 ClusterCatalog(s) ready"), "{out}");
    let made = kubectl_ok(
        kc,
        &["get", "clustercatalog", "examples", "-o", "json"],
        None,
    );
    let made: serde_json::Value = serde_json::from_str(&made).unwrap();
    assert_eq!(made["spec"]["priority"], 5);
    assert_eq!(made["spec"]["source"]["image"]["pollIntervalMinutes"], 30);
    assert_eq!(
        made["metadata"]["annotations"]["olm.operatorframework.io/migrated-from-catalogsource"],
        "team-m/examples"
    );

    // Again: the catalog made is adopted, nothing changes; JSON lines for scripts.
    let (code, out, err) = run(&["migrate", "catalogs", "-o", "json"]);
    assert_eq!(code, 0, "{out}{err}");
    let results: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let examples = results
        .iter()
        .find(|r| r["target"] == "team-m/examples")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(examples["type"], "result");
    assert_eq!(examples["data"]["outcome"], "adopted");
    assert_eq!(
        examples["data"]["reason"],
        "existing ClusterCatalog with matching image adopted"
    );

    // The operator can now move.
    let (code, out, err) = run(&["migrate", "check", "example-operator", "-n", "team-m"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(
            "✓ Catalog availability                package available in ClusterCatalog examples"
        ),
        "{out}"
    );
    assert!(
        out.contains("✓ passes all readiness, compatibility, and catalog-availability checks"),
        "{out}"
    );
    let (code, out, err) = run(&["migrate", "check", "--all", "-o", "json"]);
    assert_eq!(code, 0, "{out}{err}");
    let scan: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(scan["type"], "scan");
    let ours = scan["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["namespace"] == "team-m")
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(ours["status"], "Eligible");
    assert_eq!(ours["version"], "0.2.0");

    // The move itself: a dry run prints the ClusterExtension and changes nothing.
    let uid = |kind: &str, name: &str, ns: Option<&str>| {
        let mut a = vec!["get", kind, name, "-o", "jsonpath={.metadata.uid}"];
        if let Some(ns) = ns {
            a.extend_from_slice(&["-n", ns]);
        }
        kubectl_ok(kc, &a, None)
    };
    let deployment = uid("deployment", "example-operator-controller", Some("team-m"));
    let template = || {
        kubectl_ok(
            kc,
            &[
                "get",
                "deployment",
                "example-operator-controller",
                "-n",
                "team-m",
                "-o",
                "jsonpath={.spec.template}",
            ],
            None,
        )
    };
    let pods_before = template();
    let webhooks = || {
        kubectl_ok(
            kc,
            &["get", "validatingwebhookconfigurations", "-o", "name"],
            None,
        )
    };
    let webhooks_before = webhooks();
    let crd = uid("crd", "widgets.example.olm.operatorframework.io", None);
    assert!(!deployment.is_empty() && !crd.is_empty());
    let (code, out, err) = run(&["migrate", "example-operator", "-n", "team-m", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("kind: ClusterExtension"), "{out}");
    assert!(
        out.contains(
            "olm.operatorframework.io/migrated-from-subscription: team-m/example-operator"
        ),
        "{out}"
    );
    assert!(
        out.contains("olm.operatorframework.io/metadata.name: examples"),
        "{out}"
    );
    assert!(
        err.contains("No cluster resources were modified (dry run)."),
        "{err}"
    );
    let (code, out, err) = run(&["migrate", "--all", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("=== Eligible (1) ===\n  ✓ team-m/example-operator (example-operator)\n"),
        "{out}"
    );
    assert!(out.contains("kind: ClusterExtension"), "{out}");
    let (code, _, err) = run(&["migrate", "--all", "-n", "team-m"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("-n/--namespace cannot be combined with --all; --all scans every namespace"),
        "{err}"
    );
    let listed = kubectl_ok(kc, &["get", "clusterextensions", "-o", "name"], None);
    assert!(!listed.contains("example-operator"), "{listed}");

    // For real, interrupted: the command gives up before the extension is installed; OLM v0
    // stands aside meanwhile, and running the command again finishes the move.
    let (code, out, err) = run(&[
        "migrate",
        "example-operator",
        "-n",
        "team-m",
        "--timeout",
        "1ms",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("run this command again to finish the move"),
        "{err}"
    );
    let marked = kubectl_ok(
        kc,
        &[
            "get",
            "subscription",
            "example-operator",
            "-n",
            "team-m",
            "-o",
            "jsonpath={.metadata.annotations.olm\\.operatorframework\\.io/migrating-to}",
        ],
        None,
    );
    assert_eq!(marked, "example-operator");
    // The operator's Deployment and CRD are the same objects afterwards, now held by the
    // extension's revision; the Subscription and CSV are gone.
    let (code, out, err) = run(&[
        "migrate",
        "example-operator",
        "-n",
        "team-m",
        "--timeout",
        "3m",
    ]);
    assert!(
        err.contains(
            "Continuing the move of team-m/example-operator to ClusterExtension example-operator"
        ),
        "{err}"
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("operator team-m/example-operator moved to OLM v1: ClusterExtension example-operator installed example-operator.v0.2.0 (version 0.2.0)"),
        "{out}{err}"
    );
    assert_eq!(
        uid("deployment", "example-operator-controller", Some("team-m")),
        deployment
    );
    assert_eq!(
        uid("crd", "widgets.example.olm.operatorframework.io", None),
        crd
    );
    let held = kubectl_ok(
        kc,
        &[
            "get",
            "deployment",
            "example-operator-controller",
            "-n",
            "team-m",
            "-o",
            "jsonpath={.metadata.ownerReferences[?(@.controller==true)].kind}",
        ],
        None,
    );
    assert_eq!(held, "ClusterObjectSet");
    // The pod template is the one OLM v0 wrote: no pod is rolled.
    assert_eq!(template(), pods_before);
    // OLM v0's webhook configuration (its CA bundle in place) is the one that stays.
    assert_eq!(webhooks(), webhooks_before);
    v0_gone(kc);
    let ext = kubectl_ok(
        kc,
        &["get", "clusterextension", "example-operator", "-o", "json"],
        None,
    );
    let ext: serde_json::Value = serde_json::from_str(&ext).unwrap();
    assert_eq!(
        ext["spec"]["source"]["catalog"].get("version"),
        None,
        "unpinned: {ext}"
    );
    assert_eq!(
        ext["metadata"]["annotations"].get("olm.operatorframework.io/migration-takes-over"),
        None
    );
    // Checked again, it has moved.
    let (code, out, _) = run(&["migrate", "check", "--all"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("=== AlreadyMigrated (1) ===\n  ✓ ClusterExtension example-operator (migrated from team-m/example-operator) (already migrated)\n"),
        "{out}"
    );
    // A Subscription applied again beside the extension is a Conflict; cleanup removes the
    // OLM v0 side and the extension keeps the operator.
    kubectl_ok(
        kc,
        &["apply", "-f", "-"],
        Some(
            &serde_json::json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
                "metadata": {"name": "example-operator", "namespace": "team-m"},
                "spec": {"name": "example-operator", "source": "examples",
                    "sourceNamespace": "team-m", "channel": "stable"}})
            .to_string(),
        ),
    );
    let (code, out, _) = run(&["migrate", "check", "example-operator", "-n", "team-m"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("✗ Conflict: both Subscription and annotated ClusterExtension example-operator exist; resolve with cleanup or rollback"),
        "{out}"
    );
    let (code, out, err) = run(&["migrate", "cleanup", "example-operator"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("subscription team-m/example-operator deleted"),
        "{out}"
    );
    wait_for(
        "the Subscription gone again",
        Duration::from_secs(30),
        || {
            kubectl_ok(
                kc,
                &["get", "subscriptions", "-n", "team-m", "-o", "name"],
                None,
            )
            .trim()
            .is_empty()
        },
    );
    assert_eq!(
        uid("deployment", "example-operator-controller", Some("team-m")),
        deployment
    );

    // Rollback: refused while installed unless acknowledged; then OLM v1 lets go of the
    // objects (none deleted), the Subscription comes back from its backup, and OLM v0 installs
    // the operator over the same Deployment and CRD.
    let (code, _, err) = run(&["migrate", "rollback", "example-operator"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("ClusterExtension example-operator is Installed=True; pass --acknowledge-installed to confirm rollback"),
        "{err}"
    );
    let (code, out, err) = run(&[
        "migrate",
        "rollback",
        "example-operator",
        "--acknowledge-installed",
        "--timeout",
        "3m",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("operator team-m/example-operator handed back to OLM v0: ClusterServiceVersion example-operator.v0.2.0 Succeeded"),
        "{out}{err}"
    );
    assert_eq!(
        uid("deployment", "example-operator-controller", Some("team-m")),
        deployment
    );
    assert_eq!(
        uid("crd", "widgets.example.olm.operatorframework.io", None),
        crd
    );
    assert_eq!(template(), pods_before);
    let left = kubectl_ok(
        kc,
        &["get", "clusterextensions,clusterobjectsets", "-o", "name"],
        None,
    );
    assert!(!left.contains("example-operator"), "{left}");
    let (code, out, _) = run(&["migrate", "check", "example-operator", "-n", "team-m"]);
    assert_eq!(code, 0, "eligible again: {out}");

    // Killed at each step, then run again (or rolled back): nothing is lost, nothing is
    // recreated, and the move ends where an uninterrupted one would.
    let unchanged = || {
        assert_eq!(
            uid("deployment", "example-operator-controller", Some("team-m")),
            deployment
        );
        assert_eq!(
            uid("crd", "widgets.example.olm.operatorframework.io", None),
            crd
        );
        assert_eq!(template(), pods_before);
    };
    let back_to_v0 = || {
        let (code, out, err) = run(&[
            "migrate",
            "rollback",
            "example-operator",
            "--acknowledge-installed",
            "--timeout",
            "3m",
        ]);
        assert_eq!(code, 0, "{out}{err}");
        unchanged();
    };
    for (step, marker, then_rollback) in [
        ("marked", "✓ OLM v0 stands aside", false),
        (
            "created",
            "✓ ClusterExtension example-operator created",
            true,
        ),
        (
            "created",
            "✓ ClusterExtension example-operator created",
            false,
        ),
        (
            "installed",
            "✓ ClusterExtension example-operator installed",
            false,
        ),
        (
            "deleted",
            "✓ Subscription example-operator, ClusterServiceVersion",
            false,
        ),
    ] {
        killed_at(state.path(), kc, marker);
        if then_rollback {
            let (code, out, err) = run(&["migrate", "rollback", "example-operator"]);
            assert_eq!(code, 0, "rollback after a kill once {step}: {out}{err}");
            assert!(
                err.contains("handed back to OLM v0 (the move had not finished)"),
                "{err}"
            );
            unchanged();
            let (code, out, _) = run(&["migrate", "check", "example-operator", "-n", "team-m"]);
            assert_eq!(
                code,
                0,
                "eligible after rolling back a kill once {step}: {out}\n{}",
                kubectl_ok(
                    kc,
                    &[
                        "get",
                        "csv,clusterroles,clusterrolebindings,roles,rolebindings,sa",
                        "-n",
                        "team-m",
                        "-o",
                        "custom-columns=KIND:.kind,NAME:.metadata.name,LABELS:.metadata.labels,OWNERS:.metadata.ownerReferences[*].kind,MSG:.status.message"
                    ],
                    None
                )
            );
            continue;
        }
        let (code, out, err) = run(&[
            "migrate",
            "example-operator",
            "-n",
            "team-m",
            "--timeout",
            "3m",
        ]);
        assert_eq!(code, 0, "resumed after a kill once {step}: {out}{err}");
        // After the last progress line only the extension's own patch is left, which the
        // killed run may have made before the kill landed: then the move is done already.
        // (Progress lines, this one among them, go to stderr.)
        let finished_before_the_kill = step == "deleted"
            && err.contains("operator team-m/example-operator has moved to OLM v1 already");
        assert!(
            out.contains("operator team-m/example-operator moved to OLM v1")
                || finished_before_the_kill,
            "after a kill once {step}: {out}{err}"
        );
        let annotations = kubectl_ok(
            kc,
            &[
                "get",
                "clusterextension",
                "example-operator",
                "-o",
                "jsonpath={.metadata.annotations}",
            ],
            None,
        );
        assert!(
            !annotations.contains("takes-over"),
            "the move finished after a kill once {step}: {annotations}"
        );
        unchanged();
        v0_gone(kc);
        back_to_v0();
    }

    // --backup and --delete-operatorgroup: OLM v0's objects on disk first; the OperatorGroup
    // goes (no other Subscription needs it) but its aggregated ClusterRoles stay; rollback
    // brings it back.
    let group = kubectl_ok(
        kc,
        &[
            "get",
            "operatorgroups",
            "-n",
            "team-m",
            "-o",
            "jsonpath={.items[0].metadata.name}",
        ],
        None,
    );
    let roles = || {
        kubectl_ok(kc, &["get", "clusterroles", "-o", "name"], None)
            .lines()
            .filter(|r| {
                r.starts_with(&format!(
                    "clusterrole.rbac.authorization.k8s.io/olm.og.{group}."
                ))
            })
            .count()
    };
    let roles_before = roles();
    let backup = state.path().join("backup");
    let (code, out, err) = run(&[
        "migrate",
        "example-operator",
        "-n",
        "team-m",
        "--backup",
        backup.to_str().unwrap(),
        "--delete-operatorgroup",
        "--timeout",
        "3m",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("backed up to"), "{err}");
    for file in [
        "subscription.yaml",
        "operatorgroup.yaml",
        "clusterserviceversion.yaml",
    ] {
        let text =
            std::fs::read_to_string(backup.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(!text.contains("managedFields"), "{file}: {text}");
    }
    let plans: Vec<_> = std::fs::read_dir(backup.join("installplans"))
        .expect("installplans backed up")
        .collect();
    assert!(!plans.is_empty());
    wait_for("the OperatorGroup gone", Duration::from_secs(30), || {
        kubectl_ok(
            kc,
            &[
                "get",
                "operatorgroups,installplans",
                "-n",
                "team-m",
                "-o",
                "name",
            ],
            None,
        )
        .trim()
        .is_empty()
    });
    assert_eq!(roles(), roles_before, "the aggregated ClusterRoles stay");
    assert!(roles_before > 0);
    unchanged();
    back_to_v0();
    let groups = kubectl_ok(
        kc,
        &["get", "operatorgroups", "-n", "team-m", "-o", "name"],
        None,
    );
    assert_eq!(groups.lines().count(), 1, "{groups}");
}

/// Waits until team-m's Subscription and CSV are gone: the move deletes them in the
/// background, and the CSV goes once OLM v0's cleanup has run.
fn v0_gone(kubeconfig: &str) {
    wait_for(
        "the Subscription and CSV gone",
        Duration::from_secs(60),
        || {
            kubectl_ok(
                kubeconfig,
                &["get", "subscriptions,csv", "-n", "team-m", "-o", "name"],
                None,
            )
            .trim()
            .is_empty()
        },
    );
}

/// Runs `olm migrate example-operator -n team-m` and kills it (SIGKILL) as soon as it prints a
/// line containing `marker`: the move stops wherever it then is.
fn killed_at(state: &Path, kubeconfig: &str, marker: &str) {
    use std::io::BufRead as _;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_olm"))
        .args([
            "migrate",
            "example-operator",
            "-n",
            "team-m",
            "--kubeconfig",
            kubeconfig,
        ])
        .env("OLM_CACHE_DIR", state)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("olm runs");
    let stderr = child.stderr.take().expect("stderr");
    let mut seen = Vec::new();
    for line in std::io::BufReader::new(stderr).lines() {
        let line = line.expect("stderr line");
        let hit = line.contains(marker);
        seen.push(line);
        if hit {
            child.kill().expect("kill");
            break;
        }
    }
    let status = child.wait().expect("wait");
    assert!(
        !status.success(),
        "olm migrate finished before printing {marker:?}: {seen:?}"
    );
}
