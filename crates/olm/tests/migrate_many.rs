//! `olm migrate --all` on many operators at once, on the fake node, both OLMs in one `olm dev`:
//!
//! - real community operators (`shared/data/bundles`): RabbitMQ's cluster operator (a CRD, a
//!   Deployment and two webhooks) and k8gb (two CRDs, two Deployments, a CSV whose apiVersion
//!   lacks its group, so OLM v0's owner references do too) move in place — same Deployments,
//!   CRDs and webhook configurations — while cat-facts-operator, an OwnNamespace-only
//!   operator, is refused with upstream's words and left as it is;
//! - fifty generated operators, each with a CRD, a Deployment and RBAC of its own, move in one
//!   command, and the figures docs/migrate.md quotes are printed. That one is ignored by default
//!   (it takes minutes on two cores): `cargo test -p olm --test migrate_many -- --ignored
//!   --nocapture`; `MIGRATE_MANY=N` changes the number of operators.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod dev_common;

mod run_common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use dev_common::{Down, ok, olm};
use run_common::{kubectl, olm_ok, wait_for};
use std::path::PathBuf;

/// One operator's bundle: package `name`, version 1.0.0, a CRD of its own group and a
/// Deployment.
fn write_bundle(dir: &Path, name: &str) {
    let group = format!("{name}.bench.olm.invalid");
    std::fs::create_dir_all(dir.join("manifests")).unwrap();
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    std::fs::write(
        dir.join("metadata/annotations.yaml"),
        format!(
            "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: {name}\n  operators.operatorframework.io.bundle.channels.v1: stable\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n"
        ),
    )
    .unwrap();
    let crd = serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("things.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "things", "singular": "thing", "kind": "Thing", "listKind": "ThingList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}});
    std::fs::write(dir.join("manifests/crd.yaml"), crd.to_string()).unwrap();
    let labels = serde_json::json!({"app.kubernetes.io/name": name});
    let csv = serde_json::json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": format!("{name}.v1.0.0")},
        "spec": {
            "displayName": name, "version": "1.0.0",
            "installModes": [
                {"type": "OwnNamespace", "supported": false},
                {"type": "SingleNamespace", "supported": false},
                {"type": "MultiNamespace", "supported": false},
                {"type": "AllNamespaces", "supported": true}],
            "customresourcedefinitions": {"owned": [
                {"name": format!("things.{group}"), "version": "v1", "kind": "Thing"}]},
            "install": {"strategy": "deployment", "spec": {
                "clusterPermissions": [{"serviceAccountName": name, "rules": [
                    {"apiGroups": [group], "resources": ["things"], "verbs": ["get", "list", "watch"]}]}],
                "deployments": [{"name": name, "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": {
                        "serviceAccountName": name,
                        "containers": [{"name": "manager",
                            "image": "quay.io/olm-bench/operator:v1"}]}}}}]}}}});
    std::fs::write(
        dir.join(format!("manifests/{name}.clusterserviceversion.yaml")),
        csv.to_string(),
    )
    .unwrap();
}

/// Writes `content` as `dir/file`, the whole file-based catalog, and pushes it as the
/// catalog-only image `image`; returns `image`.
fn push_catalog(dir: &Path, file: &str, content: &str, image: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(file), content).unwrap();
    olm_ok(
        &[
            "image",
            "push-catalog",
            "--content-only",
            dir.to_str().unwrap(),
            image,
        ],
        None,
    );
    image.to_owned()
}

/// An image CatalogSource `ns/name` that olm serves in its own process (no registry Pod runs
/// on the fake node).
fn catalog_source(ns: &str, name: &str, image: &str) -> serde_json::Value {
    serde_json::json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
        "metadata": {"name": name, "namespace": ns,
            "annotations": {"olm.operatorframework.io/serve-in-process": "true"}},
        "spec": {"sourceType": "grpc", "image": image}})
}

#[test]
#[ignore = "takes minutes: run with --ignored to measure migrating many operators"]
fn fifty_operators_move_in_one_command() {
    let count: usize = std::env::var("MIGRATE_MANY")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(50);
    let state = tempfile::tempdir().expect("temp dir");
    let _down = Down(state.path());
    ok(state.path(), &["dev", "up", "--node", "fake"]);
    let kc = ok(state.path(), &["dev", "kubeconfig"]).trim().to_owned();
    let kcp = Path::new(&kc);
    let registry = dev_common::registry(state.path());
    let names: Vec<String> = (0..count).map(|i| format!("bench-op-{i:02}")).collect();

    // The bundles and one catalog serving them all.
    let work = state.path().join("bench");
    let mut template = String::from("schema: olm.template.basic\nentries:\n");
    for name in &names {
        let dir = work.join(name);
        write_bundle(&dir, name);
        let image = format!("{registry}/bench/{name}-bundle:v1.0.0");
        olm_ok(
            &["image", "push-bundle", dir.to_str().unwrap(), &image],
            None,
        );
        template.push_str(&format!(
            "- schema: olm.package\n  name: {name}\n  defaultChannel: stable\n- schema: olm.channel\n  package: {name}\n  name: stable\n  entries:\n  - name: {name}.v1.0.0\n- schema: olm.bundle\n  image: {image}\n"
        ));
    }
    let rendered = olm_ok(
        &["catalog", "template", "basic", "-", "-o", "yaml"],
        Some(&template),
    );
    let catalog_image = push_catalog(
        &work.join("catalog"),
        "catalog.yaml",
        &rendered,
        &format!("{registry}/bench/catalog:latest"),
    );

    // Installed through OLM v0: one namespace, one global OperatorGroup, copied CSVs off (as
    // large clusters run), a Subscription each.
    let mut items = vec![
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}),
        serde_json::json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "bench", "namespace": "bench"}, "spec": {}}),
        catalog_source("bench", "bench", &catalog_image),
    ];
    for name in &names {
        items.push(
            serde_json::json!({"apiVersion": "operators.coreos.com/v1alpha1",
            "kind": "Subscription", "metadata": {"name": name, "namespace": "bench"},
            "spec": {"name": name, "source": "bench", "sourceNamespace": "bench",
                "channel": "stable"}}),
        );
    }
    kubectl(
        kcp,
        &[
            "patch",
            "olmconfig",
            "cluster",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"features":{"disableCopiedCSVs":true}}}"#,
        ],
        None,
    );
    kubectl(
        kcp,
        &["apply", "-f", "-"],
        Some(&serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()),
    );
    let installed = wait_for(
        "every operator installed by OLM v0",
        Duration::from_secs(600),
        || {
            kubectl(
                kcp,
                &[
                    "get",
                    "csv",
                    "-n",
                    "bench",
                    "-o",
                    "jsonpath={.items[*].status.phase}",
                ],
                None,
            )
            .split_whitespace()
            .filter(|p| *p == "Succeeded")
            .count()
                == count
        },
    );
    let uids = |kind: &str, ns: Option<&str>| uids_of(kcp, kind, ns, "bench");
    let deployments = uids("deployments", Some("bench"));
    let crds = uids("crds", None);
    assert_eq!((deployments.len(), crds.len()), (count, count));

    // The move.
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(&["--kubeconfig", &kc]);
        olm(state.path(), &all)
    };
    let (ok_catalogs, out, err) = run(&["migrate", "catalogs", "-n", "bench"]);
    assert!(ok_catalogs, "{out}{err}");
    let started = Instant::now();
    let (moved, out, err) = run(&["migrate", "--all", "--timeout", "5m"]);
    let took = started.elapsed();
    assert!(moved, "{out}{err}");
    assert!(
        err.contains(&format!("{count} of {count} eligible operator(s) moved")),
        "{err}"
    );
    assert_eq!(uids("deployments", Some("bench")), deployments);
    assert_eq!(uids("crds", None), crds);
    wait_for("OLM v0's objects gone", Duration::from_secs(120), || {
        kubectl(
            kcp,
            &["get", "subscriptions,csv", "-n", "bench", "-o", "name"],
            None,
        )
        .trim()
        .is_empty()
    });
    let installed_v1 = kubectl(
        kcp,
        &[
            "get",
            "clusterextensions",
            "-o",
            "jsonpath={.items[*].status.conditions[?(@.type==\"Installed\")].status}",
        ],
        None,
    );
    assert_eq!(
        installed_v1
            .split_whitespace()
            .filter(|s| *s == "True")
            .count(),
        count
    );
    println!(
        "figures: {count} operators installed by OLM v0 in {:.1}s; moved to OLM v1 by one `olm migrate --all` in {:.1}s ({:.2}s each); Deployments and CRDs kept their UIDs",
        installed.as_secs_f64(),
        took.as_secs_f64(),
        took.as_secs_f64() / count as f64
    );
}

/// `shared/data/bundles/PKG/VERSION`, the real community bundles the repository tests with.
fn community_bundle(package: &str, version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/bundles")
        .join(package)
        .join(version)
}

/// The `name=uid` of every object of `kind` (in `ns`) whose name contains `part`.
fn uids_of(kc: &Path, kind: &str, ns: Option<&str>, part: &str) -> BTreeMap<String, String> {
    let mut args = vec![
        "get",
        kind,
        "-o",
        "jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{\"\\n\"}{end}",
    ];
    if let Some(ns) = ns {
        args.extend_from_slice(&["-n", ns]);
    }
    kubectl(kc, &args, None)
        .lines()
        .filter(|l| l.contains(part))
        .filter_map(|l| l.split_once('='))
        .map(|(n, u)| (n.to_owned(), u.to_owned()))
        .collect()
}

#[test]
fn community_operators_move_and_an_own_namespace_one_is_refused() {
    let state = tempfile::tempdir().expect("temp dir");
    let _down = Down(state.path());
    ok(state.path(), &["dev", "up", "--node", "fake"]);
    let kc = ok(state.path(), &["dev", "kubeconfig"]).trim().to_owned();
    let kcp = Path::new(&kc);
    let registry = dev_common::registry(state.path());
    let bundles = [
        ("rabbitmq-cluster-operator", "2.22.3"),
        ("k8gb", "0.11.4"),
        ("cat-facts-operator", "1.1.2"),
    ];
    let mut template = String::from("schema: olm.template.basic\nentries:\n");
    for (package, version) in bundles {
        let image = format!("{registry}/community/{package}-bundle:v{version}");
        olm_ok(
            &[
                "image",
                "push-bundle",
                community_bundle(package, version).to_str().unwrap(),
                &image,
            ],
            None,
        );
        template.push_str(&format!("- schema: olm.bundle\n  image: {image}\n"));
    }
    // Each package's channel and default channel, as its bundle's annotations name them.
    let rendered = olm_ok(
        &["catalog", "template", "basic", "-", "-o", "json"],
        Some(&template),
    );
    let mut fbc = String::new();
    for line in serde_json::Deserializer::from_str(&rendered).into_iter::<serde_json::Value>() {
        let b = line.unwrap();
        fbc.push_str(&b.to_string());
        fbc.push('\n');
        let package = b["package"].as_str().unwrap().to_owned();
        let name = b["name"].as_str().unwrap().to_owned();
        fbc.push_str(
            &serde_json::json!({"schema": "olm.package", "name": package,
            "defaultChannel": "stable"})
            .to_string(),
        );
        fbc.push('\n');
        fbc.push_str(
            &serde_json::json!({"schema": "olm.channel", "package": package,
            "name": "stable", "entries": [{"name": name}]})
            .to_string(),
        );
        fbc.push('\n');
    }
    let catalog_image = push_catalog(
        &state.path().join("community-catalog"),
        "catalog.json",
        &fbc,
        &format!("{registry}/community/catalog:latest"),
    );
    let sub = |ns: &str, name: &str| {
        serde_json::json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"name": name, "source": "community", "sourceNamespace": "shared",
                "channel": "stable"}})
    };
    let items = vec![
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shared"}}),
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-cats"}}),
        serde_json::json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "shared", "namespace": "shared"}, "spec": {}}),
        serde_json::json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "team-cats", "namespace": "team-cats"},
            "spec": {"targetNamespaces": ["team-cats"]}}),
        catalog_source("shared", "community", &catalog_image),
        sub("shared", "rabbitmq-cluster-operator"),
        sub("shared", "k8gb"),
        // A Subscription resolves from its own namespace's catalogs (and the global ones).
        catalog_source("team-cats", "community", &catalog_image),
        serde_json::json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
            "metadata": {"name": "cat-facts-operator", "namespace": "team-cats"},
            "spec": {"name": "cat-facts-operator", "source": "community", "sourceNamespace": "team-cats",
                "channel": "stable"}}),
    ];
    kubectl(
        kcp,
        &["apply", "-f", "-"],
        Some(&serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string()),
    );
    let installed_by_v0 = |ns: &str, sub: &str| {
        let csv = kubectl(
            kcp,
            &[
                "get",
                "subscription",
                sub,
                "-n",
                ns,
                "-o",
                "jsonpath={.status.installedCSV}",
            ],
            None,
        );
        !csv.is_empty()
            && kubectl(
                kcp,
                &[
                    "get",
                    "csv",
                    &csv,
                    "-n",
                    ns,
                    "-o",
                    "jsonpath={.status.phase}",
                ],
                None,
            ) == "Succeeded"
    };
    dev_common::wait_explained(
        "the three operators installed by OLM v0",
        Duration::from_secs(180),
        || {
            installed_by_v0("shared", "rabbitmq-cluster-operator")
                && installed_by_v0("shared", "k8gb")
                && installed_by_v0("team-cats", "cat-facts-operator")
        },
        || {
            kubectl(
                kcp,
                &[
                    "get",
                    "subscriptions,installplans,csv",
                    "-n",
                    "shared",
                    "-o",
                    "custom-columns=KIND:.kind,NAME:.metadata.name,STATE:.status.state,PHASE:.status.phase,MSG:.status.message,CONDS:.status.conditions[*].message",
                ],
                None,
            ) + &kubectl(
                kcp,
                &[
                    "get",
                    "subscriptions,installplans,csv",
                    "-n",
                    "team-cats",
                    "-o",
                    "custom-columns=KIND:.kind,NAME:.metadata.name,STATE:.status.state,PHASE:.status.phase,MSG:.status.message,CONDS:.status.conditions[*].message",
                ],
                None,
            )
        },
    );
    let deployments = uids_of(kcp, "deployments", Some("shared"), "");
    let crds = uids_of(kcp, "crds", None, "");
    let webhooks = kubectl(
        kcp,
        &[
            "get",
            "validatingwebhookconfigurations,mutatingwebhookconfigurations",
            "-o",
            "name",
        ],
        None,
    );
    assert!(webhooks.contains("rabbitmq"), "{webhooks}");

    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend_from_slice(&["--kubeconfig", &kc]);
        olm(state.path(), &all)
    };
    let (moved, out, err) = run(&["migrate", "catalogs", "-n", "shared"]);
    assert!(moved, "{out}{err}");
    // cat-facts-operator supports OwnNamespace only: refused, and no acknowledgement can
    // change that.
    let (eligible, out, _) = run(&[
        "migrate",
        "check",
        "cat-facts-operator",
        "-n",
        "team-cats",
        "--acknowledge-watch-scope-change",
    ]);
    assert!(!eligible, "{out}");
    assert!(
        out.contains("✗ AllNamespaces install mode supported CSV does not declare AllNamespaces install mode as supported; --acknowledge-watch-scope-change cannot override bundle capabilities"),
        "{out}"
    );
    let (moved, out, err) = run(&["migrate", "--all", "--timeout", "5m"]);
    assert!(
        moved,
        "{out}{err}{}",
        kubectl(
            kcp,
            &[
                "get",
                "clusterobjectsets",
                "-o",
                "jsonpath={.items[*].status.conditions}"
            ],
            None
        )
    );
    assert!(
        err.contains("2 of 2 eligible operator(s) moved"),
        "{out}{err}"
    );
    assert!(
        out.contains("=== Ineligible (1) ===\n  ✗ team-cats/cat-facts-operator"),
        "{out}"
    );
    assert_eq!(uids_of(kcp, "deployments", Some("shared"), ""), deployments);
    assert_eq!(uids_of(kcp, "crds", None, ""), crds);
    assert_eq!(
        kubectl(
            kcp,
            &[
                "get",
                "validatingwebhookconfigurations,mutatingwebhookconfigurations",
                "-o",
                "name"
            ],
            None
        ),
        webhooks,
        "the webhook configurations are the same ones"
    );
    // Deleted in the background: the CSV goes once OLM v0's cleanup has run.
    wait_for("OLM v0's objects gone", Duration::from_secs(60), || {
        kubectl(
            kcp,
            &["get", "subscriptions,csv", "-n", "shared", "-o", "name"],
            None,
        )
        .trim()
        .is_empty()
    });
    assert!(
        installed_by_v0("team-cats", "cat-facts-operator"),
        "the refused operator is left with OLM v0"
    );
    let installed = kubectl(
        kcp,
        &[
            "get",
            "clusterextensions",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type==\"Installed\")].status}{\"\\n\"}{end}",
        ],
        None,
    );
    assert_eq!(installed, "k8gb=True\nrabbitmq-cluster-operator=True\n");

    // And back: `rollback --all` hands both to OLM v0.
    let (back, out, err) = run(&[
        "migrate",
        "rollback",
        "--all",
        "--acknowledge-installed",
        "--timeout",
        "3m",
    ]);
    assert!(back, "{out}{err}");
    assert!(
        installed_by_v0("shared", "rabbitmq-cluster-operator") && installed_by_v0("shared", "k8gb"),
        "{out}{err}"
    );
    // The CRDs (and so every custom resource) and the Deployments are the same objects: the
    // move released them from the CSVs it deleted, and the rollback from the revisions, so the
    // garbage collector never finds them without a live owner.
    assert_eq!(uids_of(kcp, "crds", None, ""), crds);
    assert_eq!(
        uids_of(kcp, "deployments", Some("shared"), ""),
        deployments,
        "the operators' Deployments are the same objects after the rollback"
    );
    let left = kubectl(kcp, &["get", "clusterextensions", "-o", "name"], None);
    assert!(left.trim().is_empty(), "{left}");
}
