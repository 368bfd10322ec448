//! `olm migrate --all` at scale: fifty operators, each with a CRD, a Deployment and RBAC of its
//! own, installed through Subscriptions from one CatalogSource on the fake node, then moved to
//! OLM v1 in one command. Every one must move, and its Deployment and CRD must stay the same
//! objects. Prints the figures docs/migrate.md quotes.
//!
//! Ignored by default (it takes a few minutes on two cores); run it with
//! `cargo test -p olm --test migrate_many -- --ignored --nocapture`. `MIGRATE_MANY=N` changes
//! the number of operators.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod dev_common;

mod run_common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use dev_common::{Down, ok, olm};
use run_common::{kubectl, olm_ok, wait_for};

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
    let catalog = work.join("catalog");
    std::fs::create_dir_all(&catalog).unwrap();
    std::fs::write(catalog.join("catalog.yaml"), rendered).unwrap();
    let catalog_image = format!("{registry}/bench/catalog:latest");
    olm_ok(
        &[
            "image",
            "push-catalog",
            "--content-only",
            catalog.to_str().unwrap(),
            &catalog_image,
        ],
        None,
    );

    // Installed through OLM v0: one namespace, one global OperatorGroup, copied CSVs off (as
    // large clusters run), a Subscription each.
    let mut items = vec![
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}}),
        serde_json::json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": "bench", "namespace": "bench"}, "spec": {}}),
        serde_json::json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": "bench", "namespace": "bench",
                "annotations": {"olm.operatorframework.io/serve-in-process": "true"}},
            "spec": {"sourceType": "grpc", "image": catalog_image}}),
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
    let uids = |kind: &str, ns: Option<&str>| -> BTreeMap<String, String> {
        let mut args = vec![
            "get",
            kind,
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{\"\\n\"}{end}",
        ];
        if let Some(ns) = ns {
            args.extend_from_slice(&["-n", ns]);
        }
        kubectl(kcp, &args, None)
            .lines()
            .filter(|l| l.contains("bench"))
            .filter_map(|l| l.split_once('='))
            .map(|(n, u)| (n.to_owned(), u.to_owned()))
            .collect()
    };
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
    let left = kubectl(
        kcp,
        &["get", "subscriptions,csv", "-n", "bench", "-o", "name"],
        None,
    );
    assert!(left.trim().is_empty(), "{left}");
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
