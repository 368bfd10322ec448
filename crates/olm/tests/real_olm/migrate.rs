//! `olm migrate` on the real node: the example operator installed through OLM v0 (a
//! Subscription from an image CatalogSource), running with its validating webhook, a Widget of
//! its own, then moved to OLM v1 — `olm migrate catalogs`, then `olm migrate` — while a client
//! calls through the webhook throughout. Measured and checked: the operator's pods keep their
//! UIDs (no restart), the CRD and the Widget are the same objects, the webhook answers every
//! call, the ClusterExtension is installed and the Subscription and CSV are gone; then
//! `olm migrate rollback` hands it back to OLM v0 with the same pods. Moved once more, it is
//! upgraded by OLM v1: the catalog gains 0.2.0, which the migrated ClusterCatalog (polling as
//! the CatalogSource did) serves and the extension, unpinned, follows.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::{Env, Scenario, wait, widgets};

/// This module's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![("migrate-v0-operator-to-v1-in-place", in_place)]
}

const NS: &str = "migrate-real";
const CATALOG_REPO: &str = "olm-examples/migrate-catalog:latest";
const TIMEOUT: Duration = Duration::from_secs(240);
const CRD: &str = "widgets.example.olm.operatorframework.io";

fn state(env: &Env) -> String {
    let (_, out, err) = env.try_kubectl(
        &[
            "get",
            "catalogsources,subscriptions,installplans,csv,pods,deployments",
            "-n",
            NS,
            "-o",
            "wide",
        ],
        None,
    );
    let (_, ext, _) = env.try_kubectl(&["get", "clusterextensions", "-o", "yaml"], None);
    format!("{out}{err}\n{ext}")
}

/// `name=uid` of the operator's pods, sorted.
fn pods(env: &Env) -> Vec<String> {
    let out = env.field(
        &[
            "get",
            "pods",
            "-n",
            NS,
            "-l",
            "app.kubernetes.io/name=example-operator",
        ],
        "{range .items[*]}{.metadata.name}={.metadata.uid} {.status.containerStatuses[0].ready}{\"\\n\"}{end}",
    );
    let mut v: Vec<String> = out.lines().map(str::to_owned).collect();
    v.sort();
    v
}

fn widget(size: u32) -> String {
    format!(
        "apiVersion: example.olm.operatorframework.io/v1\nkind: Widget\nmetadata: {{name: probe, namespace: {NS}}}\nspec: {{size: {size}}}\n"
    )
}

fn in_place(env: &Env) {
    let _widgets = widgets();
    let kc = env.kubeconfig.to_str().unwrap().to_owned();
    let dir = env.work_dir("migrate");
    crate::push_example_versions(env, &dir, NS, CATALOG_REPO, &["0.1.0"]);
    let image = format!("{}/{CATALOG_REPO}", env.registry);
    env.kubectl(&["create", "namespace", NS], None);
    env.apply(&format!(
        "apiVersion: operators.coreos.com/v1alpha1\nkind: CatalogSource\nmetadata:\n  name: examples\n  namespace: {NS}\n  annotations: {{olm.operatorframework.io/serve-in-process: \"true\"}}\nspec: {{sourceType: grpc, image: \"{image}\", displayName: Examples, updateStrategy: {{registryPoll: {{interval: 1m}}}}}}\n"
    ));
    wait(
        "the example package offered",
        TIMEOUT,
        || {
            env.try_kubectl(
                &["get", "packagemanifest", "example-operator", "-n", NS],
                None,
            )
            .0
        },
        || state(env),
    );
    env.olm(&[
        "v0",
        "install",
        "example-operator",
        "-n",
        NS,
        "--create-operator-group",
        "--timeout",
        "4m",
        "--kubeconfig",
        &kc,
    ]);
    wait(
        "the operator's webhook serving",
        TIMEOUT,
        || {
            env.try_kubectl(&["apply", "-f", "-"], Some(&format!(
                "apiVersion: example.olm.operatorframework.io/v1\nkind: Widget\nmetadata: {{name: sample, namespace: {NS}}}\nspec: {{size: 2}}\n"
            )))
            .0
        },
        || state(env),
    );
    wait(
        "the Subscription settled",
        TIMEOUT,
        || {
            env.field(
                &["get", "subscription", "example-operator", "-n", NS],
                "{.status.state}",
            ) == "AtLatestKnown"
        },
        || state(env),
    );
    let before_pods = pods(env);
    assert!(!before_pods.is_empty(), "{}", state(env));
    let crd_uid = env.field(&["get", "crd", CRD], "{.metadata.uid}");
    let sample = env.field(
        &["get", "widget", "sample", "-n", NS],
        "{.metadata.uid} {.spec.size}",
    );

    // A client calls through the webhook throughout the move (server-side dry runs: the
    // API server calls the webhook and stores nothing).
    let stop = AtomicBool::new(false);
    let calls = AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let took = std::thread::scope(|s| {
        s.spawn(|| {
            let mut size = 1;
            while !stop.load(Ordering::Relaxed) {
                let (ok, _, err) = env.try_kubectl(
                    &["create", "--dry-run=server", "-f", "-"],
                    Some(&widget(size)),
                );
                calls.fetch_add(1, Ordering::Relaxed);
                if !ok {
                    failures.lock().unwrap().push(err);
                }
                size = size % 50 + 1;
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        // Whatever happens below — a failed step panics — the client stops, or the scope
        // would wait for it forever.
        let _stop = StopOnDrop(&stop);
        let started = Instant::now();
        // Only this scenario's namespace: the others' CatalogSources are theirs.
        let out = env.olm(&["migrate", "catalogs", "-n", NS, "--kubeconfig", &kc]);
        assert!(out.contains("ClusterCatalog"), "{out}");
        let out = env.olm(&[
            "migrate",
            "example-operator",
            "-n",
            NS,
            "--timeout",
            "4m",
            "--kubeconfig",
            &kc,
        ]);
        assert!(
            out.starts_with("operator migrate-real/example-operator moved to OLM v1"),
            "{out}"
        );
        eprintln!("FIGURE migrate: {}", out.trim());
        let took = started.elapsed();
        // Calls go on a little after the move: the old objects' deletion must not break them.
        std::thread::sleep(Duration::from_secs(3));
        stop.store(true, Ordering::Relaxed);
        took
    });
    let failures = failures.into_inner().unwrap();
    eprintln!(
        "FIGURE migrate: catalogs and operator moved in {took:.1?}; {} webhook calls during the move, {} failed",
        calls.load(Ordering::Relaxed),
        failures.len()
    );
    assert!(failures.is_empty(), "webhook calls failed: {failures:?}");
    assert_eq!(pods(env), before_pods, "the operator's pods restarted");
    // The CRD and the Widget are the same objects, unchanged.
    let same_objects = || {
        assert_eq!(env.field(&["get", "crd", CRD], "{.metadata.uid}"), crd_uid);
        assert_eq!(
            env.field(
                &["get", "widget", "sample", "-n", NS],
                "{.metadata.uid} {.spec.size}"
            ),
            sample
        );
    };
    same_objects();
    assert_eq!(
        env.field(
            &["get", "clusterextension", "example-operator"],
            "{.status.conditions[?(@.type==\"Installed\")].status}"
        ),
        "True"
    );
    wait(
        "the Subscription and CSV gone",
        TIMEOUT,
        || {
            env.field(
                &["get", "subscriptions,csv", "-n", NS],
                "{.items[*].metadata.name}",
            )
            .is_empty()
        },
        || state(env),
    );

    // And back to OLM v0, in place as well: the same pods.
    let out = env.olm(&[
        "migrate",
        "rollback",
        "example-operator",
        "--acknowledge-installed",
        "--timeout",
        "4m",
        "--kubeconfig",
        &kc,
    ]);
    eprintln!("FIGURE migrate rollback: {}", out.trim());
    assert_eq!(
        pods(env),
        before_pods,
        "the operator's pods restarted on rollback"
    );
    same_objects();

    // Moved again, then upgraded by OLM v1 alone.
    let out = env.olm(&[
        "migrate",
        "example-operator",
        "-n",
        NS,
        "--timeout",
        "4m",
        "--kubeconfig",
        &kc,
    ]);
    assert!(
        out.starts_with("operator migrate-real/example-operator moved to OLM v1"),
        "{out}"
    );
    assert_eq!(
        pods(env),
        before_pods,
        "the operator's pods restarted on the second move"
    );
    crate::push_example_versions(env, &dir, NS, CATALOG_REPO, &["0.1.0", "0.2.0"]);
    let pushed = Instant::now();
    let upgraded = || {
        env.field(
            &["get", "clusterextension", "example-operator"],
            "{.status.install.bundle.version} {.status.conditions[?(@.type==\"Installed\")].status}",
        ) == "0.2.0 True"
    };
    wait(
        "the extension upgraded to 0.2.0 by OLM v1",
        TIMEOUT,
        upgraded,
        || state(env),
    );
    eprintln!(
        "FIGURE migrate: upgraded by OLM v1 {:.1?} after the catalog gained 0.2.0",
        pushed.elapsed()
    );
    same_objects();
    assert!(
        env.field(
            &["get", "subscriptions,csv", "-n", NS],
            "{.items[*].metadata.name}",
        )
        .is_empty(),
        "OLM v0 came back: {}",
        state(env)
    );

    // Leave no CRD behind for the scenarios that follow.
    env.kubectl(
        &[
            "delete",
            "clusterextension",
            "example-operator",
            "--wait=true",
        ],
        None,
    );
    env.kubectl(
        &[
            "delete",
            "operatorgroups",
            "--all",
            "-n",
            NS,
            "--ignore-not-found",
        ],
        None,
    );
    env.kubectl(&["delete", "crd", CRD, "--ignore-not-found"], None);
    env.kubectl(
        &["delete", "clustercatalog", "examples", "--ignore-not-found"],
        None,
    );
    env.kubectl(&["delete", "namespace", NS, "--wait=false"], None);
    wait(
        "the Widget CRD removed",
        TIMEOUT,
        || !env.try_kubectl(&["get", "crd", CRD], None).0,
        || state(env),
    );
}

/// Sets the flag when dropped: on the way out of a scope, panicking or not.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
