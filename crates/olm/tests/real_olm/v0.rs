//! OLM v0 on the real node, as its users drive it: a CatalogSource of an image that
//! `olm image push-catalog` built runs its registry Pod (the image serves the registry API by
//! itself, as opm-based catalog images do), a Subscription resolves through the Pod's Service
//! (the OLM pods dial it by its cluster DNS name), the CSV's Deployment runs the example
//! operator, which reconciles a Widget; a new catalog under the same tag makes `registryPoll`
//! start an update Pod and swap it in, and the Subscription upgrades from it to 0.3.0 (a
//! v0-only version of the example operator, `fixtures/v0-real`), whose pod serves both the
//! validating webhook and an aggregated API (an owned APIService) with the certificate OLM v0
//! issued, mounted and injected: a too-large Widget is refused and `kubectl get
//! widgetsummaries` is answered by the pod through the API server's aggregator. The
//! PackageManifest API (served by OLM's pods) shows the new head through `kubectl`.

use std::time::{Duration, Instant};

use std::path::PathBuf;

use crate::{Env, Scenario, examples, operator_binary, wait, widgets};

/// This module's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![(
        "v0-catalog-pod-to-running-operator",
        catalog_pod_to_running_operator,
    )]
}

const NS: &str = "v0-real";
const SOURCE: &str = "example-catalog";
/// The name the node pulls the catalog image by; the mirror sends it to the local registry's
/// `olm-examples/v0-catalog`.
const CATALOG_IMAGE: &str = "quay.io/olm-examples/v0-catalog:latest";
const TIMEOUT: Duration = Duration::from_secs(240);
/// The example operator's webhook refusal (its `webhook.rs`).
const TOO_LARGE: &str = "admission webhook \"vwidget.example.olm.operatorframework.io\" denied the request: spec.size 1000 is more than 100, the most a widget can have";

/// Renders a catalog of `versions` and pushes it as the image [`CATALOG_IMAGE`] names.
fn push_catalog(env: &Env, versions: &[&str]) {
    let dir = env
        .work_dir("v0")
        .join(format!("catalog-{}", versions.len()));
    std::fs::create_dir_all(&dir).unwrap();
    let template_path = dir.with_extension("template.yaml");
    std::fs::write(
        &template_path,
        crate::example_template(&env.registry, "v0-real", versions),
    )
    .unwrap();
    let rendered = env.olm(&[
        "catalog",
        "template",
        "basic",
        template_path.to_str().unwrap(),
        "-o",
        "yaml",
    ]);
    std::fs::write(dir.join("catalog.yaml"), rendered).unwrap();
    env.olm(&["catalog", "validate", dir.to_str().unwrap()]);
    env.olm(&[
        "image",
        "push-catalog",
        dir.to_str().unwrap(),
        &format!("{}/olm-examples/v0-catalog:latest", env.registry),
    ]);
}

/// The registry Pods of the CatalogSource, as `name phase ready` lines.
fn registry_pods(env: &Env) -> Vec<String> {
    let out = env.field(
        &[
            "get",
            "pods",
            "-n",
            NS,
            "-l",
            &format!("olm.catalogSource={SOURCE}"),
        ],
        "{range .items[*]}{.metadata.name} {.status.phase} {.status.containerStatuses[0].ready}{\"\\n\"}{end}",
    );
    out.lines().map(str::to_owned).collect()
}

/// What a failed wait prints: the objects this scenario drives.
fn state(env: &Env) -> String {
    let (_, out, err) = env.try_kubectl(
        &[
            "get",
            "catalogsources,subscriptions,installplans,csv,pods,services",
            "-n",
            NS,
            "-o",
            "wide",
        ],
        None,
    );
    let (_, sub, _) = env.try_kubectl(&["get", "subscriptions", "-n", NS, "-o", "yaml"], None);
    let (_, source, _) = env.try_kubectl(&["get", "catalogsources", "-n", NS, "-o", "yaml"], None);
    format!("{out}{err}\n{sub}\n{source}")
}

fn csv_phase(env: &Env, version: &str) -> String {
    env.field(
        &[
            "get",
            "csv",
            "-n",
            NS,
            &format!("example-operator.v{version}"),
        ],
        "{.status.phase}",
    )
}

/// The operator's pods (by their label) running `version`'s image and ready.
fn operator_ready(env: &Env, version: &str) -> bool {
    let out = env.field(
        &[
            "get",
            "pods",
            "-n",
            NS,
            "-l",
            "app.kubernetes.io/name=example-operator",
        ],
        "{range .items[*]}{.spec.containers[0].image} {.status.containerStatuses[0].ready}{\"\\n\"}{end}",
    );
    out.lines()
        .any(|l| l == format!("quay.io/olm-examples/example-operator:v{version} true"))
}

fn catalog_pod_to_running_operator(env: &Env) {
    // The Widget CRD is the example operator's, which only one OLM may hold at a time.
    let _widgets = widgets();
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v0-real");
    for (version, bundle) in [
        ("0.1.0", examples().join("bundles/example-operator.v0.1.0")),
        ("0.3.0", fixtures.join("example-operator.v0.3.0")),
    ] {
        env.olm(&[
            "image",
            "push-bundle",
            bundle.to_str().unwrap(),
            &format!(
                "{}/v0-real/example-operator-bundle:v{version}",
                env.registry
            ),
        ]);
    }
    env.olm(&[
        "image",
        "push-program",
        operator_binary().to_str().unwrap(),
        &format!("{}/olm-examples/example-operator:v0.3.0", env.registry),
    ]);
    push_catalog(env, &["0.1.0"]);
    env.kubectl(&["create", "namespace", NS], None);
    let created = Instant::now();
    env.apply(&format!(
        "apiVersion: operators.coreos.com/v1alpha1
kind: CatalogSource
metadata: {{name: {SOURCE}, namespace: {NS}}}
spec:
  sourceType: grpc
  image: {CATALOG_IMAGE}
  displayName: Example operators
  updateStrategy:
    registryPoll: {{interval: 20s}}
---
apiVersion: operators.coreos.com/v1
kind: OperatorGroup
metadata: {{name: all, namespace: {NS}}}
spec: {{}}
---
apiVersion: operators.coreos.com/v1alpha1
kind: Subscription
metadata: {{name: example-operator, namespace: {NS}}}
spec:
  name: example-operator
  channel: stable
  source: {SOURCE}
  sourceNamespace: {NS}
  installPlanApproval: Automatic
"
    ));

    // The registry Pod runs the catalog image's own server; the connection goes READY.
    let took = wait(
        "the registry Pod serving",
        TIMEOUT,
        || {
            env.field(
                &["get", "catalogsource", "-n", NS, SOURCE],
                "{.status.connectionState.lastObservedState}",
            ) == "READY"
        },
        || state(env),
    );
    eprintln!("FIGURE v0 CatalogSource create -> registry Pod READY: {took:.1?}");
    let pods = registry_pods(env);
    assert_eq!(pods.len(), 1, "{pods:?}");
    assert!(pods[0].ends_with(" Running true"), "{pods:?}");
    let first_pod = pods[0].split(' ').next().unwrap().to_owned();
    assert_eq!(
        env.field(
            &["get", "catalogsource", "-n", NS, SOURCE],
            "{.status.registryService.serviceName}"
        ),
        SOURCE
    );

    // The Subscription resolves through the Pod; the CSV's Deployment runs the operator.
    wait(
        "0.1.0's CSV Succeeded",
        TIMEOUT,
        || csv_phase(env, "0.1.0") == "Succeeded",
        || state(env),
    );
    wait(
        "0.1.0's pod ready",
        TIMEOUT,
        || operator_ready(env, "0.1.0"),
        || state(env),
    );
    eprintln!(
        "FIGURE v0 CatalogSource and Subscription create -> operator pod Ready: {:.1?}",
        created.elapsed()
    );
    env.apply(&format!(
        "apiVersion: example.olm.operatorframework.io/v1\nkind: Widget\nmetadata: {{name: v0-sample, namespace: {NS}}}\nspec: {{size: 2}}\n"
    ));
    wait(
        "the Widget reconciled by 0.1.0",
        TIMEOUT,
        || {
            env.field(
                // Qualified: other scenarios' CRDs also call their kind Widget.
                &[
                    "get",
                    "widgets.example.olm.operatorframework.io",
                    "-n",
                    NS,
                    "v0-sample",
                ],
                "{.status.ready}",
            ) == "true"
        },
        || state(env),
    );

    // The same tag, a new catalog: registryPoll swaps in a Pod of the new digest.
    push_catalog(env, &["0.1.0", "0.3.0"]);
    let pushed = Instant::now();
    let took = wait(
        "registryPoll to swap the registry Pod",
        TIMEOUT,
        || {
            let pods = registry_pods(env);
            pods.len() == 1
                && !pods[0].starts_with(&format!("{first_pod} "))
                && pods[0].ends_with(" Running true")
        },
        || format!("{:?}\n{}", registry_pods(env), state(env)),
    );
    eprintln!("FIGURE v0 catalog pushed -> registryPoll swapped the Pod: {took:.1?}");
    wait(
        "0.3.0's CSV Succeeded",
        TIMEOUT,
        || csv_phase(env, "0.3.0") == "Succeeded",
        || state(env),
    );
    wait(
        "0.3.0's pod ready",
        TIMEOUT,
        || operator_ready(env, "0.3.0"),
        || state(env),
    );
    eprintln!(
        "FIGURE v0 catalog pushed -> 0.3.0's pod Ready: {:.1?}",
        pushed.elapsed()
    );
    wait(
        "0.1.0's CSV replaced",
        TIMEOUT,
        || csv_phase(env, "0.1.0").is_empty(),
        || state(env),
    );

    // 0.3.0's webhook, served by its pod with the certificate OLM v0 made and injected.
    let (refused, _, err) = env.try_kubectl(
        &["apply", "-f", "-"],
        Some(&format!(
            "apiVersion: example.olm.operatorframework.io/v1\nkind: Widget\nmetadata: {{name: v0-huge, namespace: {NS}}}\nspec: {{size: 1000}}\n"
        )),
    );
    assert!(!refused, "a Widget of size 1000 was accepted");
    assert!(err.contains(TOO_LARGE), "{err}");

    // Its aggregated API, through the APIService OLM v0 made: the API server proxies to the
    // pod, which counts this namespace's one ready Widget of 2 parts.
    wait(
        "the APIService Available",
        TIMEOUT,
        || {
            env.field(
                &[
                    "get",
                    "apiservice",
                    "v1.stats.example.olm.operatorframework.io",
                ],
                "{.status.conditions[?(@.type==\"Available\")].status}",
            ) == "True"
        },
        || {
            let (_, out, err) = env.try_kubectl(
                &[
                    "get",
                    "apiservice",
                    "v1.stats.example.olm.operatorframework.io",
                    "-o",
                    "yaml",
                ],
                None,
            );
            format!("{out}{err}\n{}", state(env))
        },
    );
    // The API server's discovery takes the new group in a moment after the APIService turns
    // Available; until then kubectl knows no `widgetsummaries`.
    let summaries = || {
        let (_, out, err) = env.try_kubectl(&["get", "widgetsummaries", "-n", NS], None);
        (out, err)
    };
    wait(
        "kubectl get widgetsummaries answered by the pod",
        TIMEOUT,
        || {
            let (out, _) = summaries();
            let row: Vec<&str> = out
                .lines()
                .nth(1)
                .map(|l| l.split_whitespace().collect())
                .unwrap_or_default();
            row == ["widgets", "1", "1", "2"]
        },
        || {
            let (out, err) = summaries();
            format!("{out}{err}")
        },
    );
    let summary = env.field(
        &["get", "widgetsummary", "-n", NS, "widgets"],
        "{.widgets} {.ready} {.parts}",
    );
    assert_eq!(summary, "1 1 2");

    // The PackageManifest API, served by OLM's pods, shows the swapped catalog's head.
    wait(
        "the PackageManifest's head to be 0.3.0",
        TIMEOUT,
        || {
            env.field(
                &["get", "packagemanifest", "-n", NS, "example-operator"],
                "{.status.channels[0].currentCSV}",
            ) == "example-operator.v0.3.0"
        },
        || {
            let (_, out, err) =
                env.try_kubectl(&["get", "packagemanifests", "-n", NS, "-o", "yaml"], None);
            format!("{out}{err}")
        },
    );

    // Uninstalled as v0's users do it; the CRD, which v0 never deletes, by hand, so that the
    // next scenario that installs the example operator starts clean.
    env.kubectl(
        &[
            "delete",
            "subscription",
            "-n",
            NS,
            "example-operator",
            "--wait",
        ],
        None,
    );
    env.kubectl(
        &[
            "delete",
            "csv",
            "-n",
            NS,
            "example-operator.v0.3.0",
            "--wait",
        ],
        None,
    );
    env.kubectl(
        &["delete", "namespace", NS, "--wait", "--timeout=120s"],
        None,
    );
    env.kubectl(
        &[
            "delete",
            "crd",
            "widgets.example.olm.operatorframework.io",
            "--wait",
            "--timeout=60s",
        ],
        None,
    );
}
