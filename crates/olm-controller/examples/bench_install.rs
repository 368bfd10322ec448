//! Figures of OLM v1's install path on a fresh local control plane, registry and in-process
//! `olm` (the end-to-end harness of `tests/e2e/`):
//!
//! - time from ClusterExtension create to Installed=True, p50/p95 over 20 installs, for a
//!   one-CRD bundle and for a real bundle from `shared/data/bundles` (CRDs + one Deployment);
//! - 40 ClusterExtensions created at once → all Installed (wall time);
//! - API server requests per install (`apiserver_request_total` before/after, all clients:
//!   the control plane's own controllers answer the Deployment too), broken down by resource;
//! - writes while `olm` restarts and reconciles everything when nothing changed (target 0);
//! - process RSS idle and with 51 extensions installed.
//!
//! Run: `cargo run --release -p olm-controller --example bench_install` (`BENCH_INSTALLS`,
//! `BENCH_MANY` change the counts; `BENCH_THOUSAND=1000` adds that many one-ConfigMap
//! extensions and the memory they cost). With `OLM_E2E_BINARY=target/release/olm`, `olm run`
//! is a child process and the memory and CPU figures are its own.

// Benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../tests/e2e/mod.rs"]
mod e2e;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use e2e::{Contents, Ctx, Env, entry, package};
use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use kube::runtime::watcher;
use olm_api::ClusterExtension;
use serde_json::{Value, json};

/// The real bundle: 4 CRDs and one Deployment, AllNamespaces.
const REAL_BUNDLE: &str = "kairos-operator/2.2.0";

fn main() -> Result<()> {
    // RUST_LOG=olm_controller=debug shows what the controllers did, on stderr.
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(bench())
}

fn count(var: &str, default: usize) -> usize {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Row {
    what: String,
    value: String,
}

async fn bench() -> Result<()> {
    let installs = count("BENCH_INSTALLS", 20);
    let many = count("BENCH_MANY", 40);
    let started = Instant::now();
    let env = Env::start().await?;
    eprintln!("environment up in {:.1?}", started.elapsed());
    let ctx = Arc::new(Ctx::new(env.clone(), "bench"));
    let mut rows = Vec::new();
    let r = run(&ctx, installs, many, &mut rows).await;
    print_table(&rows);
    ctx.cleanup().await;
    drop(ctx);
    env.shutdown().await;
    r
}

async fn run(ctx: &Arc<Ctx>, installs: usize, many: usize, rows: &mut Vec<Row>) -> Result<()> {
    let client = ctx.client.clone();
    ctx.namespace().await?;
    // Catalog: the one-CRD package, the real bundle, and `many + 11` standard packages with
    // objects of their own so that they can all be installed side by side.
    let real_dir = data_dir().join("bundles").join(REAL_BUNDLE);
    let real_image = ctx
        .env
        .push_bundle(&real_dir, "bundles/real/kairos-operator:v2.2.0")
        .await?;
    let mut packages = vec![
        package("one")
            .bundle("1.0.0", Contents::crd_only())
            .channel("stable", vec![entry("1.0.0")]),
    ];
    let extra = many + 11;
    for i in 0..extra {
        packages.push(
            package(&format!("m{i}"))
                .bundle(
                    "1.0.0",
                    Contents {
                        name_id: Some(format!("bench-m{i}")),
                        ..Contents::standard()
                    },
                )
                .channel("stable", vec![entry("1.0.0")]),
        );
    }
    let cname = ctx.catalog("bench", &packages).await?;
    // The real bundle's package keeps its own name: a second catalog holds it.
    let real_catalog = real_fbc(ctx, &real_dir, &real_image)?;
    let real_ref = ctx
        .env
        .push(
            &olm_image::catalog_image(&real_catalog)?,
            "e2e/bench-real:v1",
        )
        .await?;
    let rname = ctx
        .apply_catalog("real", &real_ref, &Default::default())
        .await?;
    ctx.wait_serving(&rname).await?;
    eprintln!("catalogs {cname} and {rname} serving");
    tokio::time::sleep(Duration::from_secs(3)).await;
    rows.push(Row {
        what: format!(
            "RSS idle (catalogs served, nothing installed), {}",
            whose(ctx).await
        ),
        value: rss(ctx).await,
    });

    // Sequential installs: create, wait Installed, delete, wait gone.
    for (label, spec) in [
        ("one-CRD bundle", ctx.ext_spec("one")),
        (
            "kairos-operator 2.2.0 (4 CRDs, 1 Deployment)",
            real_spec(ctx),
        ),
    ] {
        let mut times = Vec::new();
        let mut requests = Vec::new();
        let mut breakdown = BTreeMap::<String, f64>::new();
        for i in 0..installs {
            let name = format!(
                "bench-{}-{i}",
                if label.starts_with("one") {
                    "one"
                } else {
                    "real"
                }
            );
            let before = request_counts(&client).await?;
            let t = Instant::now();
            create_ext(&client, &name, &spec).await?;
            wait_all_installed(
                &client,
                std::slice::from_ref(&name),
                Duration::from_secs(120),
            )
            .await?;
            times.push(t.elapsed());
            let after = request_counts(&client).await?;
            let diff = diff_counts(&before, &after);
            requests.push(diff.values().sum::<f64>());
            for (k, v) in diff {
                *breakdown.entry(k).or_default() += v;
            }
            delete_ext(&client, &name).await?;
        }
        times.sort();
        rows.push(Row {
            what: format!("install {label}: create → Installed p50 / p95 (n={installs})"),
            value: format!(
                "{:.0} ms / {:.0} ms",
                ms(percentile(&times, 50)),
                ms(percentile(&times, 95))
            ),
        });
        let n = requests.len().max(1) as f64;
        rows.push(Row {
            what: format!("install {label}: API requests per install (all clients)"),
            value: format!("{:.0}", requests.iter().sum::<f64>() / n),
        });
        let mut top: Vec<_> = breakdown.into_iter().collect();
        top.sort_by(|a, b| b.1.total_cmp(&a.1));
        let top: Vec<String> = top
            .iter()
            .take(8)
            .map(|(k, v)| format!("{k}={:.1}", v / n))
            .collect();
        rows.push(Row {
            what: format!("install {label}: per install by verb/resource (top 8)"),
            value: top.join(", "),
        });
    }

    rows.push(Row {
        what: format!("floor: one CRD created directly → Established p50 / p95 (n={installs})"),
        value: single_crd_floor(&client, installs).await?,
    });

    // Many at once.
    let names: Vec<String> = (0..many).map(|i| format!("bench-many-{i}")).collect();
    let t = Instant::now();
    let olm_pid = ctx.env.olm_pid().await;
    let cpu_before = cpu_seconds(olm_pid);
    let requests_before = request_counts(&client).await?;
    let stages = Timeline::start(&client, t);
    let creates = names.iter().enumerate().map(|(i, name)| {
        let client = client.clone();
        let spec = ctx.ext_spec(&format!("m{i}"));
        let name = name.clone();
        async move { create_ext(&client, &name, &spec).await }
    });
    for r in futures::future::join_all(creates).await {
        r?;
    }
    wait_all_installed(&client, &names, Duration::from_secs(600)).await?;
    rows.push(Row {
        what: format!("{many} ClusterExtensions created at once → all Installed"),
        value: format!("{:.1} s", t.elapsed().as_secs_f64()),
    });
    rows.push(Row {
        what: format!("{many} at once: when each stage was reached (p50 / last)"),
        value: stages.finish(),
    });
    let cpu_after = cpu_seconds(olm_pid);
    let burst = diff_counts(&requests_before, &request_counts(&client).await?);
    let mut top: Vec<_> = burst.iter().collect();
    top.sort_by(|a, b| b.1.total_cmp(a.1));
    rows.push(Row {
        what: format!(
            "{many} at once: API requests ({:.0} in all), top 16",
            burst.values().sum::<f64>()
        ),
        value: top
            .iter()
            .take(16)
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
    });
    rows.push(Row {
        what: format!("{many} at once: CPU seconds by process"),
        value: cpu_after
            .iter()
            .map(|(k, v)| format!("{k} {:.1}", v - cpu_before.get(k).copied().unwrap_or(0.0)))
            .collect::<Vec<_>>()
            .join(", "),
    });
    let floor = control_plane_floor(&client, &ctx.ns, many).await?;
    rows.push(Row {
        what: format!(
            "the control plane alone: {many} CRDs and {many} copies of their Deployments created at once → all Established / Available"
        ),
        value: floor,
    });
    // Up to 51 installed.
    let rest: Vec<String> = (many..extra).map(|i| format!("bench-many-{i}")).collect();
    for (j, name) in rest.iter().enumerate() {
        create_ext(&client, name, &ctx.ext_spec(&format!("m{}", many + j))).await?;
    }
    wait_all_installed(&client, &rest, Duration::from_secs(300)).await?;
    tokio::time::sleep(Duration::from_secs(10)).await;
    rows.push(Row {
        what: format!(
            "RSS with {extra} extensions installed, {}",
            whose(ctx).await
        ),
        value: rss(ctx).await,
    });
    eprintln!("{extra} extensions installed");

    // A thousand: one ConfigMap each (a thousand CRDs would measure the API server).
    let thousand = count("BENCH_THOUSAND", 0);
    if thousand > 0 {
        let packages: Vec<_> = (0..thousand)
            .map(|i| {
                package(&format!("k{i}"))
                    .bundle(
                        "1.0.0",
                        Contents {
                            configmap: true,
                            name_id: Some(format!("bench-k{i}")),
                            ..Contents::default()
                        },
                    )
                    .channel("stable", vec![entry("1.0.0")])
            })
            .collect();
        ctx.catalog("thousand", &packages).await?;
        let names: Vec<String> = (0..thousand).map(|i| format!("bench-k-{i}")).collect();
        let t = Instant::now();
        let creates = names.iter().enumerate().map(|(i, name)| {
            let client = client.clone();
            let spec = ctx.ext_spec(&format!("k{i}"));
            let name = name.clone();
            async move { create_ext(&client, &name, &spec).await }
        });
        for r in futures::future::join_all(creates).await {
            r?;
        }
        wait_all_installed(&client, &names, Duration::from_secs(1800)).await?;
        rows.push(Row {
            what: format!(
                "{thousand} one-ConfigMap ClusterExtensions created at once → all Installed"
            ),
            value: format!("{:.1} s", t.elapsed().as_secs_f64()),
        });
        tokio::time::sleep(Duration::from_secs(10)).await;
        rows.push(Row {
            what: format!(
                "RSS with {} extensions installed, {}",
                extra + thousand,
                whose(ctx).await
            ),
            value: rss(ctx).await,
        });
    }

    // Steady state: nothing changes; olm restarts and reconciles everything.
    let before = request_counts(&client).await?;
    let t = Instant::now();
    ctx.env.stop_olm().await?;
    ctx.env.start_olm().await?;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let after = request_counts(&client).await?;
    let writes: BTreeMap<String, f64> = diff_counts(&before, &after)
        .into_iter()
        .filter(|(k, _)| is_write(k) && !is_control_plane_noise(k))
        .collect();
    rows.push(Row {
        what: format!(
            "writes while olm restarts with {} installed and nothing changed ({:.0} s)",
            extra + thousand,
            t.elapsed().as_secs_f64()
        ),
        value: if writes.is_empty() {
            "0".into()
        } else {
            format!(
                "{:.0}: {}",
                writes.values().sum::<f64>(),
                writes
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
    });
    let before = request_counts(&client).await?;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let after = request_counts(&client).await?;
    let idle: f64 = diff_counts(&before, &after)
        .into_iter()
        .filter(|(k, _)| is_write(k) && !is_control_plane_noise(k))
        .map(|(_, v)| v)
        .sum::<f64>()
        // An empty float sum is -0.0.
        .abs();
    rows.push(Row {
        what: "writes in the next 30 s of steady state".into(),
        value: format!("{idle:.0}"),
    });
    Ok(())
}

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

/// An FBC holding only the real bundle, under its own package name.
fn real_fbc(ctx: &Ctx, dir: &Path, image: &str) -> Result<PathBuf> {
    let bundle = olm_bundle::Bundle::from_dir(dir)?;
    let pkg = bundle.package_name.clone();
    let csv_name = bundle.csv.name().to_string();
    let version = bundle.csv.raw["spec"]["version"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let lines = [
        json!({"schema": "olm.package", "name": pkg, "defaultChannel": "stable"}),
        json!({"schema": "olm.channel", "package": pkg, "name": "stable",
            "entries": [{"name": csv_name}]}),
        json!({"schema": "olm.bundle", "package": pkg, "name": csv_name, "image": image,
            "properties": [{"type": "olm.package",
                "value": {"packageName": pkg, "version": version}}]}),
    ];
    let out = ctx.env.fixture_dir("real-catalog-")?;
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(out.join("catalog.json"), text)?;
    Ok(out)
}

fn real_spec(ctx: &Ctx) -> Value {
    json!({
        "namespace": ctx.ns,
        "source": {"sourceType": "Catalog", "catalog": {
            "packageName": "kairos-operator",
            "selector": {"matchLabels": {e2e::SCENARIO_LABEL: ctx.id}},
        }},
    })
}

async fn create_ext(client: &Client, name: &str, spec: &Value) -> Result<()> {
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let obj = json!({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
        "metadata": {"name": name}, "spec": spec});
    api.patch(name, &PatchParams::apply(e2e::MANAGER), &Patch::Apply(&obj))
        .await
        .with_context(|| format!("creating {name}"))?;
    Ok(())
}

/// Deletes the extension and waits until it and the CRDs it installed are gone, so the next
/// install of the same package starts clean.
async fn delete_ext(client: &Client, name: &str) -> Result<()> {
    let api: Api<ClusterExtension> = Api::all(client.clone());
    api.delete(name, &DeleteParams::background()).await?;
    e2e::delete_and_wait(&api, name).await?;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let lp = ListParams::default().labels(&format!("{}={name}", olm_k8s::OWNER_NAME_LABEL));
    let since = Instant::now();
    let gone = e2e::eventually(Duration::from_secs(120), || async {
        let left = crds.list(&lp).await?.items;
        if left.is_empty() {
            return Ok(Some(()));
        }
        // The API server's CRD finalizer retries a failed instance cleanup ("storage is
        // (re)initializing", a CRD deleted moments after it was created) with a backoff that
        // reaches minutes; any update of the CRD queues it again at once.
        if since.elapsed() > Duration::from_secs(5) {
            for crd in &left {
                let name = crd.metadata.name.clone().unwrap_or_default();
                let touch = json!({"metadata": {"annotations": {"bench/nudged": format!("{:?}", since.elapsed())}}});
                let _ = crds
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&touch))
                    .await;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        Ok(None)
    })
    .await;
    if let Err(e) = gone {
        // Reported, not fatal: the next install of the package then meets the old CRDs.
        let left: Vec<String> = crds
            .list(&lp)
            .await?
            .items
            .iter()
            .map(|c| {
                let conditions: Vec<String> = c
                    .status
                    .iter()
                    .flat_map(|s| s.conditions.iter().flatten())
                    .map(|c| {
                        format!(
                            "{}={}/{}: {}",
                            c.type_,
                            c.status,
                            c.reason.clone().unwrap_or_default(),
                            c.message.clone().unwrap_or_default()
                        )
                    })
                    .collect();
                format!(
                    "{} (deleting: {}, finalizers {:?}, owners {:?}, conditions {conditions:?})",
                    c.metadata.name.clone().unwrap_or_default(),
                    c.metadata.deletion_timestamp.is_some(),
                    c.metadata.finalizers,
                    c.metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .map(|o| &o.name)
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        eprintln!("CRDs of {name} not removed after uninstall ({e:#}): {left:?}");
    }
    Ok(())
}

/// Waits, with one watch, until every named extension reports Installed=True.
async fn wait_all_installed(client: &Client, names: &[String], timeout: Duration) -> Result<()> {
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let mut pending: std::collections::BTreeSet<String> = names.iter().cloned().collect();
    let mut stream = watcher(api, watcher::Config::default()).boxed();
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = BTreeMap::<String, String>::new();
    while !pending.is_empty() {
        let ev = tokio::time::timeout_at(deadline, stream.next()).await;
        let ev = match ev {
            Ok(Some(ev)) => ev?,
            Ok(None) => bail!("watch ended"),
            Err(_) => bail!(
                "{} not Installed after {timeout:?}: {:?}",
                pending.len(),
                pending
                    .iter()
                    .take(3)
                    .map(|n| format!("{n}: {}", last.get(n).cloned().unwrap_or_default()))
                    .collect::<Vec<_>>()
            ),
        };
        let objs = match ev {
            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => vec![o],
            _ => vec![],
        };
        for ce in objs {
            let name = ce.metadata.name.clone().unwrap_or_default();
            if e2e::cond(&ce, "Installed").is_some_and(|c| c.status == "True") {
                pending.remove(&name);
            } else {
                last.insert(
                    name,
                    e2e::describe_conditions(e2e::ext_conditions(&ce), ce.metadata.generation),
                );
            }
        }
    }
    Ok(())
}

/// When each extension of a burst reached each stage of its install, from watches of the
/// objects involved (the installed objects carry the extension's name as a label).
struct Timeline {
    tasks: Vec<tokio::task::JoinHandle<()>>,
    seen: Arc<std::sync::Mutex<BTreeMap<(String, &'static str), Duration>>>,
}

impl Timeline {
    fn start(client: &Client, t0: Instant) -> Timeline {
        use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
        let seen = Arc::new(std::sync::Mutex::new(BTreeMap::new()));
        let kinds = [
            (
                "olm.operatorframework.io",
                "v1",
                "ClusterExtension",
                "clusterextensions",
            ),
            (
                "olm.operatorframework.io",
                "v1",
                "ClusterObjectSet",
                "clusterobjectsets",
            ),
            (
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
                "customresourcedefinitions",
            ),
            ("apps", "v1", "Deployment", "deployments"),
        ];
        let tasks = kinds
            .into_iter()
            .map(|(g, v, k, plural)| {
                let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(g, v, k), plural);
                let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut stream = watcher(api, watcher::Config::default()).boxed();
                    while let Some(ev) = stream.next().await {
                        let Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) = ev else {
                            continue;
                        };
                        let owner = if k == "ClusterExtension" {
                            o.metadata.name.clone()
                        } else {
                            o.metadata
                                .labels
                                .as_ref()
                                .and_then(|l| l.get(olm_k8s::OWNER_NAME_LABEL).cloned())
                        };
                        let Some(owner) = owner.filter(|o| o.starts_with("bench-many-")) else {
                            continue;
                        };
                        let is_true = |t: &str| condition_true(&o.data, t);
                        let mut reached = vec![];
                        match k {
                            "ClusterExtension" => {
                                if is_true("Installed") {
                                    reached.push("6 extension Installed");
                                }
                            }
                            "ClusterObjectSet" => {
                                reached.push("1 revision created");
                                if is_true("Available") {
                                    reached.push("5 revision Available");
                                }
                            }
                            "CustomResourceDefinition" => {
                                reached.push("2 CRD created");
                                if is_true("Established") {
                                    reached.push("3 CRD Established");
                                }
                            }
                            _ => {
                                reached.push("4a Deployment created");
                                if is_true("Available") {
                                    reached.push("4b Deployment Available");
                                }
                            }
                        }
                        let mut seen = seen.lock().unwrap();
                        for stage in reached {
                            seen.entry((owner.clone(), stage))
                                .or_insert_with(|| t0.elapsed());
                        }
                    }
                })
            })
            .collect();
        Timeline { tasks, seen }
    }

    fn finish(self) -> String {
        for t in &self.tasks {
            t.abort();
        }
        let mut by_stage = BTreeMap::<&str, Vec<Duration>>::new();
        for ((_, stage), at) in self.seen.lock().unwrap().iter() {
            by_stage.entry(stage).or_default().push(*at);
        }
        by_stage
            .into_iter()
            .map(|(stage, mut times)| {
                times.sort();
                format!(
                    "{stage} {:.2}/{:.2} s",
                    percentile(&times, 50).as_secs_f64(),
                    times.last().copied().unwrap_or_default().as_secs_f64()
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What the burst costs without OLM: the same number of CRDs and Deployments (copies of the
/// burst's own, renamed) created at once, timed until every CRD is Established and every
/// Deployment Available. OLM cannot install faster than this; it removes what it created.
/// A CRD of group `<id>.bench.test` labelled `bench=floor`, as small as the one-CRD bundle's.
fn floor_crd(id: &str) -> Result<CustomResourceDefinition> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("floors.{id}.bench.test"),
                     "labels": {"bench": "floor"}},
        "spec": {"group": format!("{id}.bench.test"), "scope": "Namespaced",
            "names": {"kind": "Floor", "listKind": "FloorList",
                      "plural": "floors", "singular": "floor"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "properties": {"spec": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}}}]},
    }))?)
}

/// The control plane's own time for what the one-CRD install waits for: one CRD created
/// directly, until it is Established; p50 / p95 over `n`, each deleted after.
async fn single_crd_floor(client: &Client, n: usize) -> Result<String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut times = Vec::new();
    for i in 0..n {
        let crd = floor_crd(&format!("single{i}"))?;
        let name = crd.metadata.name.clone().unwrap_or_default();
        let t = Instant::now();
        crds.create(&kube::api::PostParams::default(), &crd).await?;
        tokio::time::timeout(
            Duration::from_secs(60),
            kube::runtime::wait::await_condition(
                crds.clone(),
                &name,
                kube::runtime::conditions::is_crd_established(),
            ),
        )
        .await??;
        times.push(t.elapsed());
        crds.delete(&name, &DeleteParams::default()).await?;
    }
    times.sort();
    Ok(format!(
        "{:.0} ms / {:.0} ms",
        ms(percentile(&times, 50)),
        ms(percentile(&times, 95))
    ))
}

async fn control_plane_floor(client: &Client, ns: &str, many: usize) -> Result<String> {
    use k8s_openapi::api::apps::v1::Deployment;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let templates: Vec<Deployment> = deployments
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|d| {
            d.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(olm_k8s::OWNER_NAME_LABEL))
                .is_some_and(|o| o.starts_with("bench-many-"))
        })
        .take(many)
        .collect();
    let copies: Vec<Deployment> = templates
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let app = format!("floor-{i}");
            let mut spec = serde_json::to_value(&d.spec)?;
            spec["selector"]["matchLabels"] = json!({"app": app});
            spec["template"]["metadata"]["labels"] = json!({"app": app});
            Ok(serde_json::from_value(json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": app, "labels": {"bench": "floor"}},
                "spec": spec,
            }))?)
        })
        .collect::<Result<_>>()?;
    let t = Instant::now();
    let pp = kube::api::PostParams::default();
    let crd_creates = (0..many).map(|i| {
        let crds = crds.clone();
        let pp = pp.clone();
        async move {
            crds.create(&pp, &floor_crd(&format!("floor{i}"))?)
                .await
                .map(|_| ())
                .map_err(anyhow::Error::from)
        }
    });
    let dep_creates = copies.iter().map(|d| {
        let deployments = deployments.clone();
        let pp = pp.clone();
        async move {
            deployments
                .create(&pp, d)
                .await
                .map(|_| ())
                .map_err(anyhow::Error::from)
        }
    });
    let (a, b) = futures::future::join(
        futures::future::join_all(crd_creates),
        futures::future::join_all(dep_creates),
    )
    .await;
    a.into_iter().chain(b).collect::<Result<Vec<()>>>()?;
    let lp = ListParams::default().labels("bench=floor");
    let established = |c: &CustomResourceDefinition| {
        condition_true(&serde_json::to_value(c).unwrap(), "Established")
    };
    let available = |d: &Deployment| condition_true(&serde_json::to_value(d).unwrap(), "Available");
    let (mut crds_done, mut deps_done) = (None, None);
    let deadline = Instant::now() + Duration::from_secs(300);
    while (crds_done.is_none() || deps_done.is_none()) && Instant::now() < deadline {
        if crds_done.is_none()
            && crds
                .list(&lp)
                .await?
                .items
                .iter()
                .filter(|c| established(c))
                .count()
                == many
        {
            crds_done = Some(t.elapsed());
        }
        if deps_done.is_none()
            && deployments
                .list(&lp)
                .await?
                .items
                .iter()
                .filter(|d| available(d))
                .count()
                == copies.len()
        {
            deps_done = Some(t.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let dp = DeleteParams::background();
    crds.delete_collection(&dp, &lp).await?;
    deployments.delete_collection(&dp, &lp).await?;
    let secs = |d: Option<Duration>| {
        d.map_or("not reached".to_string(), |d| {
            format!("{:.1} s", d.as_secs_f64())
        })
    };
    Ok(format!(
        "{} / {} ({} Deployments)",
        secs(crds_done),
        secs(deps_done),
        copies.len()
    ))
}

/// Whether the object (as JSON) has a condition `type_` with status True.
fn condition_true(object: &Value, type_: &str) -> bool {
    object["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == type_ && c["status"] == "True")
    })
}

/// `apiserver_request_total` summed by `VERB resource[/subresource]`.
async fn request_counts(client: &Client) -> Result<BTreeMap<String, f64>> {
    let req = http::Request::get("/metrics").body(Vec::new())?;
    let text = client.request_text(req).await?;
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let label = |k: &str| {
            labels
                .split(',')
                .find_map(|kv| kv.strip_prefix(&format!("{k}=\"")))
                .map(|v| v.trim_end_matches('"').to_string())
                .unwrap_or_default()
        };
        let resource = label("resource");
        if resource.is_empty() {
            continue; // /metrics, /healthz, discovery
        }
        let sub = label("subresource");
        let key = if sub.is_empty() {
            format!("{} {resource}", label("verb"))
        } else {
            format!("{} {resource}/{sub}", label("verb"))
        };
        *out.entry(key).or_default() += value.trim().parse::<f64>().unwrap_or(0.0);
    }
    Ok(out)
}

fn diff_counts(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    after
        .iter()
        .filter_map(|(k, v)| {
            let d = v - before.get(k).copied().unwrap_or(0.0);
            (d > 0.0).then(|| (k.clone(), d))
        })
        .collect()
}

fn is_write(key: &str) -> bool {
    [
        "POST ",
        "PUT ",
        "PATCH ",
        "DELETE ",
        "APPLY ",
        "DELETECOLLECTION ",
    ]
    .iter()
    .any(|v| key.starts_with(v))
}

/// Writes the control plane makes on its own whatever OLM does: leader-election leases, node
/// heartbeats from kwok, events, token and access reviews.
fn is_control_plane_noise(key: &str) -> bool {
    [
        "leases",
        "events",
        "nodes",
        "tokenreviews",
        "subjectaccessreviews",
        "serviceaccounts/token",
    ]
    .iter()
    .any(|r| key.ends_with(&format!(" {r}")) || key.contains(&format!(" {r}/")))
}

/// CPU time (user + system) used so far by this process (the harness, and `olm` when it runs
/// in process), by `olm run` when it is the child `olm_pid`, and by each control-plane process,
/// by command name.
fn cpu_seconds(olm_pid: Option<u32>) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    let me = std::process::id().to_string();
    let olm = olm_pid.map(|p| p.to_string());
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let pid = entry.file_name().to_string_lossy().to_string();
        if !pid.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((head, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let comm = head.split_once(" (").map(|(_, c)| c).unwrap_or_default();
        let name = if olm.as_deref() == Some(pid.as_str()) {
            "olm run"
        } else if pid == me {
            if olm.is_some() { "bench" } else { "olm+bench" }
        } else if [
            "kube-apiserver",
            "etcd",
            "kube-controller",
            "kube-scheduler",
            "kwok",
            "docker-registry",
        ]
        .iter()
        .any(|n| comm.starts_with(n))
        {
            comm
        } else {
            continue;
        };
        // Fields after the command: state is field 3, utime 14 and stime 15.
        let fields: Vec<&str> = rest.split(' ').collect();
        let ticks: f64 =
            fields[11].parse::<f64>().unwrap_or(0.0) + fields[12].parse::<f64>().unwrap_or(0.0);
        *out.entry(name.to_string()).or_default() += ticks / 100.0;
    }
    out
}

/// What the RSS figures measure.
async fn whose(ctx: &Ctx) -> &'static str {
    match ctx.env.olm_pid().await {
        Some(_) => "olm run alone",
        None => "olm and the harness in one process",
    }
}

/// Resident memory of `olm run` when it runs as a child process, else of this process, split
/// into what it allocated (heap, stacks) and the pages of mapped files (the binary's code): only
/// the first grows with the cluster.
async fn rss(ctx: &Ctx) -> String {
    let status = match ctx.env.olm_pid().await {
        Some(pid) => format!("/proc/{pid}/status"),
        None => "/proc/self/status".to_string(),
    };
    let text = std::fs::read_to_string(status).unwrap_or_default();
    let kib = |key: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    format!(
        "{} MiB (anonymous {} MiB, files {} MiB)",
        kib("VmRSS:") / 1024,
        kib("RssAnon:") / 1024,
        kib("RssFile:") / 1024
    )
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() * p).div_ceil(100)).clamp(1, sorted.len()) - 1;
    sorted[idx]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn print_table(rows: &[Row]) {
    let w = rows.iter().map(|r| r.what.len()).max().unwrap_or(10);
    println!("\n| {:w$} | value |", "figure");
    println!("|{}|-------|", "-".repeat(w + 2));
    for r in rows {
        println!("| {:w$} | {} |", r.what, r.value);
    }
}
