//! Copied CSVs at scale: what `olm run --olm v0`, run from a release binary as a child process,
//! costs in time and memory to copy five AllNamespaces operators into N namespaces, whether it
//! writes anything once settled, and how long `disableCopiedCSVs` takes to remove the copies.
//!
//! Off unless `OLM_V0_SCALE=1` (it takes minutes and needs a release binary):
//!
//! - `OLM_E2E_BINARY`: the `olm` binary to run (required);
//! - `OLM_V0_SCALE_NAMESPACES`: the sizes N, comma separated (default `100,1000,10000`);
//! - `OLM_V0_SCALE_TIMEOUT`: seconds one wait (settling, removing copies) may last (default 900).
//!
//! For each N, on a fresh control plane: N namespaces are created (32 requests in flight), then
//! five operators, each in a namespace of its own with an OperatorGroup of all namespaces and a
//! CSV with one Deployment; then `olm run --olm v0` starts. Settled means every CSV Succeeded
//! and every other namespace holds a copy of each with reason `Copied`. Steady state compares
//! the resourceVersions of all CSVs, OperatorGroups and Deployments 30 s apart. One line per N
//! is printed and every figure goes to `target/v0-scale.json` (entries of other sizes kept);
//! `olm`'s log to `target/v0-scale-N.olm.log`.
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod v0fixtures;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{
    Api, ApiResource, DynamicObject, ListParams, ObjectMeta, Patch, PatchParams, PostParams,
};
use olm_testenv::ControlPlane;
use serde_json::{Value, json};
use v0fixtures::{csv, csv_resource, group, group_resource, resource};

/// AllNamespaces operators installed per size.
const OPERATORS: usize = 5;
/// Namespace creations in flight.
const CREATING: usize = 32;
/// Time between two looks at the cluster.
const POLL: Duration = Duration::from_millis(500);
/// How long the settled cluster is watched for writes.
const STEADY: Duration = Duration::from_secs(30);
/// Items per page of a LIST.
const PAGE: u32 = 500;
/// The label a copy carries: its parent's namespace.
const COPIED_FROM: &str = "olm.copiedFrom";
const MANAGER: &str = "olm-v0-scale";
const MIB: f64 = 1024.0;

fn olm_config_resource() -> ApiResource {
    resource("operators.coreos.com", "v1", "OLMConfig", "olmconfigs")
}

/// Server-side applies `object` of the resource `ar` as the benchmark's field manager.
async fn apply(client: &Client, ar: &ApiResource, object: &Value) -> Result<()> {
    let name = object["metadata"]["name"].as_str().context("name")?;
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    api.patch(
        name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .with_context(|| format!("applying {} {name}", ar.kind))?;
    Ok(())
}

/// Every item of a paged LIST of `api`, one page at a time, handed to `each`.
async fn list_all<K>(api: &Api<K>, lp: &ListParams, mut each: impl FnMut(K)) -> Result<()>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut lp = lp.clone().limit(PAGE);
    loop {
        let page = api.list(&lp).await?;
        page.items.into_iter().for_each(&mut each);
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => lp = lp.continue_token(&token),
            _ => return Ok(()),
        }
    }
}

/// The metadata of every item of `api`, by a paged metadata-only LIST.
async fn list_meta<K>(api: &Api<K>, lp: &ListParams, mut each: impl FnMut(ObjectMeta)) -> Result<()>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut lp = lp.clone().limit(PAGE);
    loop {
        let page = api.list_metadata(&lp).await?;
        for item in page.items {
            each(item.metadata);
        }
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => lp = lp.continue_token(&token),
            _ => return Ok(()),
        }
    }
}

/// `VmRSS` and `VmHWM` of process `pid` in KiB.
fn memory_kib(pid: u32) -> Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .with_context(|| format!("no {key} in /proc/{pid}/status"))
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// CPU seconds (user + system) process `pid` used so far; `/proc` counts in USER_HZ, 100 on
/// Linux.
fn cpu_seconds(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name may hold spaces; the fields after it are plain.
    let rest = stat.rsplit_once(')').context("/proc/pid/stat")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of stat(5); `rest` starts at field 3.
    let ticks: u64 = fields[11].parse::<u64>()? + fields[12].parse::<u64>()?;
    Ok(ticks as f64 / 100.0)
}

/// Whether `GET /readyz` at `addr` answers 200.
async fn ready(addr: std::net::SocketAddr) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ask = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream
            .write_all(b"GET /readyz HTTP/1.1\r\nHost: olm\r\nConnection: close\r\n\r\n")
            .await?;
        let mut head = [0u8; 12];
        stream.read_exact(&mut head).await?;
        std::io::Result::Ok(head.ends_with(b" 200"))
    };
    matches!(
        tokio::time::timeout(Duration::from_secs(2), ask).await,
        Ok(Ok(true))
    )
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// `olm run --olm v0` from the release binary, logging to a file.
struct Olm {
    child: tokio::process::Child,
    pid: u32,
    log: PathBuf,
    probes: std::net::SocketAddr,
}

impl Olm {
    fn spawn(binary: &Path, kubeconfig: &Path, work: &Path, log: PathBuf) -> Result<Olm> {
        let probes = std::net::SocketAddr::from(([127, 0, 0, 1], free_port()?));
        let catalogs = format!("127.0.0.1:{}", free_port()?);
        let file = std::fs::File::create(&log)?;
        let cache = work.join("cache");
        std::fs::create_dir_all(&cache)?;
        let child = tokio::process::Command::new(binary)
            .arg("run")
            .args(["--olm", "v0"])
            .env("KUBECONFIG", kubeconfig)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--cache-path")
            .arg(&cache)
            .args(["--health-probe-bind-address", &probes.to_string()])
            .args(["--metrics-bind-address", "0"])
            .args(["--catalogs-server-addr", &catalogs])
            .args(["--external-address", &catalogs])
            .args(["--webhook-server-port", "0"])
            .args(["--cert-provider", "builtin"])
            .stdout(file.try_clone()?)
            .stderr(file)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {} run", binary.display()))?;
        let pid = child.id().context("olm run has no pid")?;
        Ok(Olm {
            child,
            pid,
            log,
            probes,
        })
    }

    /// Fails with the log's tail when the process is gone.
    fn alive(&mut self) -> Result<()> {
        if let Some(status) = self.child.try_wait()? {
            bail!(
                "olm run exited with {status}; log tail:\n{}",
                olm_testenv::LogTail::read(&self.log, 40).text()
            );
        }
        Ok(())
    }

    /// SIGTERM, then SIGKILL after 30 s.
    async fn stop(mut self) -> Result<()> {
        std::process::Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .status()?;
        match tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await {
            Ok(status) => {
                let status = status?;
                if !status.success() {
                    bail!("olm run exited with {status}");
                }
                Ok(())
            }
            Err(_) => {
                let _ = self.child.kill().await;
                bail!("olm run did not stop within 30s of SIGTERM")
            }
        }
    }
}

/// What one look at the cluster found while waiting for the copies.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    succeeded: usize,
    /// Copies there should be: for each operator, every namespace but its own.
    expected: usize,
    /// Copies of the operators' CSVs, whatever their status.
    copies: usize,
    /// Those of them whose status says Copied in phase Succeeded, their parent's (only counted
    /// once `copies` is complete).
    copied: Option<usize>,
}

impl Seen {
    fn settled(&self) -> bool {
        self.succeeded == OPERATORS && self.copied == Some(self.expected)
    }
}

/// The operators: (namespace, CSV name).
fn operators() -> Vec<(String, String)> {
    (0..OPERATORS)
        .map(|i| (format!("operator-{i}"), format!("tiny-{i}.v1.0.0")))
        .collect()
}

/// Copies of the operators' CSVs counted by a metadata-only LIST, and, once all are there, by
/// a full LIST of those whose status says Copied and Succeeded: the status is written after the
/// object, and a copy's phase follows its parent's.
async fn look(client: &Client, ops: &[(String, String)]) -> Result<Seen> {
    let csvs: Api<DynamicObject> = Api::all_with(client.clone(), &csv_resource());
    let mut seen = Seen::default();
    for (ns, name) in ops {
        let o = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &csv_resource())
            .get_opt(name)
            .await?;
        if o.is_some_and(|o| o.data["status"]["phase"] == "Succeeded") {
            seen.succeeded += 1;
        }
    }
    let mut namespaces = 0usize;
    list_meta(
        &Api::<Namespace>::all(client.clone()),
        &ListParams::default(),
        |_| namespaces += 1,
    )
    .await?;
    seen.expected = ops.len() * namespaces.saturating_sub(1);
    let parents: BTreeSet<(&str, &str)> = ops
        .iter()
        .map(|(ns, name)| (ns.as_str(), name.as_str()))
        .collect();
    let is_copy = |m: &ObjectMeta| {
        let from = m.labels.as_ref().and_then(|l| l.get(COPIED_FROM));
        match (from, &m.name, &m.namespace) {
            (Some(from), Some(name), Some(ns)) => {
                ns != from && parents.contains(&(from.as_str(), name.as_str()))
            }
            _ => false,
        }
    };
    let lp = ListParams::default().labels(COPIED_FROM);
    list_meta(&csvs, &lp, |m| {
        if is_copy(&m) {
            seen.copies += 1;
        }
    })
    .await?;
    if seen.succeeded == OPERATORS && seen.copies >= seen.expected {
        let mut copied = 0usize;
        list_all(&csvs, &lp, |o| {
            let status = &o.data["status"];
            if is_copy(&o.metadata)
                && status["reason"] == "Copied"
                && status["phase"] == "Succeeded"
            {
                copied += 1;
            }
        })
        .await?;
        seen.copied = Some(copied);
    }
    Ok(seen)
}

/// How many copies (any CSV labelled `olm.copiedFrom`) exist.
async fn count_copies(client: &Client) -> Result<usize> {
    let mut n = 0usize;
    list_meta(
        &Api::<DynamicObject>::all_with(client.clone(), &csv_resource()),
        &ListParams::default().labels(COPIED_FROM),
        |_| n += 1,
    )
    .await?;
    Ok(n)
}

/// resourceVersion of every CSV, OperatorGroup and Deployment, by `Kind ns/name`, with who
/// wrote it when (managedFields) to tell writers apart.
async fn versions(client: &Client) -> Result<BTreeMap<String, (String, String)>> {
    let mut all = BTreeMap::new();
    let mut put = |kind: &str, m: ObjectMeta| {
        let writers: Vec<String> = m
            .managed_fields
            .unwrap_or_default()
            .into_iter()
            .map(|f| {
                format!(
                    "{}/{}{} at {}",
                    f.manager.unwrap_or_default(),
                    f.operation.unwrap_or_default(),
                    f.subresource.map(|s| format!("/{s}")).unwrap_or_default(),
                    f.time.map(|t| t.0.to_string()).unwrap_or_default()
                )
            })
            .collect();
        all.insert(
            format!(
                "{kind} {}/{}",
                m.namespace.unwrap_or_default(),
                m.name.unwrap_or_default()
            ),
            (m.resource_version.unwrap_or_default(), writers.join(", ")),
        );
    };
    let lp = ListParams::default();
    list_meta(
        &Api::<DynamicObject>::all_with(client.clone(), &csv_resource()),
        &lp,
        |m| put("ClusterServiceVersion", m),
    )
    .await?;
    list_meta(
        &Api::<DynamicObject>::all_with(client.clone(), &group_resource()),
        &lp,
        |m| put("OperatorGroup", m),
    )
    .await?;
    list_meta(&Api::<Deployment>::all(client.clone()), &lp, |m| {
        put("Deployment", m)
    })
    .await?;
    Ok(all)
}

/// What a wait ended with.
struct Waited<T> {
    /// Time since the wait's origin.
    took: Duration,
    /// The last look.
    last: T,
    /// Whether `done` held (else the time ran out).
    done: bool,
    /// Every look that differed from the one before, as `[seconds since origin, look]`.
    trace: Vec<Value>,
}

/// Polls `done` every [`POLL`] until it holds or `timeout` passes, reporting progress every
/// 10 s.
async fn wait_until<T: std::fmt::Debug + PartialEq>(
    olm: &mut Olm,
    what: &str,
    origin: Instant,
    timeout: Duration,
    mut look: impl AsyncFnMut() -> Result<T>,
    done: impl Fn(&T) -> bool,
) -> Result<Waited<T>> {
    let start = Instant::now();
    let mut reported = Instant::now();
    let mut trace = Vec::new();
    let mut last: Option<T> = None;
    loop {
        olm.alive()?;
        let seen = look().await?;
        if last.as_ref() != Some(&seen) {
            trace.push(json!([
                round(origin.elapsed().as_secs_f64()),
                format!("{seen:?}")
            ]));
        }
        let finished = done(&seen);
        if finished || start.elapsed() > timeout {
            return Ok(Waited {
                took: origin.elapsed(),
                last: seen,
                done: finished,
                trace,
            });
        }
        if reported.elapsed() > Duration::from_secs(10) {
            eprintln!(
                "  {what}: {:>5.0}s {seen:?}",
                origin.elapsed().as_secs_f64()
            );
            reported = Instant::now();
        }
        last = Some(seen);
        tokio::time::sleep(POLL).await;
    }
}

/// One size: a fresh control plane with `n` namespaces and five operators; `olm run` from
/// `binary`. Returns the figures as JSON.
async fn measure(n: usize, binary: &Path, timeout: Duration) -> Result<Value> {
    let plane = ControlPlane::start()
        .await
        .map_err(|e| anyhow!("starting the control plane: {e}"))?;
    let client = plane.client();
    let work = tempfile::tempdir()?;

    let started = Instant::now();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    futures::stream::iter(0..n)
        .map(|i| {
            let namespaces = namespaces.clone();
            async move {
                let ns: Namespace =
                    serde_json::from_value(json!({"metadata": {"name": format!("scale-{i:05}")}}))?;
                namespaces.create(&PostParams::default(), &ns).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(CREATING)
        .try_collect::<()>()
        .await?;
    let namespaces_secs = started.elapsed().as_secs_f64();
    eprintln!("  {n} namespaces created in {namespaces_secs:.1}s");

    // The CRDs `olm run` would apply at start, so the operators can be there before it.
    let crds = olm_v0_api::manifests().map_err(|e| anyhow!("the v0 CRDs: {e}"))?;
    olm_testenv::install_crds(&client, &crds, Duration::from_secs(60)).await?;
    let ops = operators();
    for (ns, name) in &ops {
        let ns_object: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))?;
        namespaces
            .create(&PostParams::default(), &ns_object)
            .await?;
        apply(&client, &group_resource(), &group(ns, "global", json!({}))).await?;
        // A tiny AllNamespaces (and OwnNamespace) CSV: one Deployment, no owned CRDs.
        let tiny = csv(
            ns,
            name,
            &["OwnNamespace", "AllNamespaces"],
            None,
            json!({}),
        );
        apply(&client, &csv_resource(), &tiny).await?;
    }

    let start = Instant::now();
    // Kept beside the figures, for a look afterwards.
    let log = output_path().with_file_name(format!("v0-scale-{n}.olm.log"));
    let mut olm = Olm::spawn(binary, plane.kubeconfig_path(), work.path(), log)?;
    let probes = olm.probes;
    while !ready(probes).await {
        olm.alive()?;
        if start.elapsed() > timeout {
            bail!(
                "olm run not ready after {timeout:?}: {}",
                olm_testenv::LogTail::read(&olm.log, 40).text()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let ready_secs = start.elapsed().as_secs_f64();

    let settle = wait_until(
        &mut olm,
        "copies",
        start,
        timeout,
        async || look(&client, &ops).await,
        Seen::settled,
    )
    .await?;
    let seen = settle.last;
    let settle_secs = settle.took.as_secs_f64();
    let (rss, hwm) = memory_kib(olm.pid)?;
    let settle_cpu = cpu_seconds(olm.pid)?;
    let plane_memory: serde_json::Map<String, Value> = plane
        .memory()
        .into_iter()
        .map(|m| (m.name.to_owned(), json!(round(m.rss_kib as f64 / MIB))))
        .collect();
    if !settle.done {
        let error = format!(
            "not settled after {timeout:?}: last seen {seen:?}; olm log tail:\n{}",
            olm_testenv::LogTail::read(&olm.log, 20).text()
        );
        let mut parents = Vec::new();
        for (ns, name) in &ops {
            let o = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &csv_resource())
                .get_opt(name)
                .await?;
            let status = o.map(|o| o.data["status"].clone()).unwrap_or(Value::Null);
            parents.push(json!({
                "csv": format!("{ns}/{name}"),
                "phase": status["phase"],
                "reason": status["reason"],
                "message": status["message"],
                "lastUpdateTime": status["lastUpdateTime"],
                "conditions": status["conditions"].as_array().map(|c| c.len()),
            }));
        }
        eprintln!("  the operators' CSVs: {parents:#?}");
        olm.stop().await?;
        plane.stop();
        return Ok(json!({
            "operators": parents,
            "namespaces": n,
            "error": error,
            "namespaces_create_secs": round(namespaces_secs),
            "ready_secs": round(ready_secs),
            "waited_secs": round(settle_secs),
            "last_seen": format!("{seen:?}"),
            "rss_mib": round(rss as f64 / MIB),
            "rss_peak_mib": round(hwm as f64 / MIB),
            "cpu_secs": round(settle_cpu),
            "control_plane_rss_mib": plane_memory,
            "settle_trace": settle.trace,
        }));
    }
    eprintln!(
        "  ready after {ready_secs:.1}s, settled in {settle_secs:.1}s: {} copies, olm RSS {:.0} MiB (peak {:.0}), {settle_cpu:.1} CPU s",
        seen.expected,
        rss as f64 / MIB,
        hwm as f64 / MIB
    );

    let before = versions(&client).await?;
    let window_start = jiff::Timestamp::now();
    tokio::time::sleep(STEADY).await;
    olm.alive()?;
    let after = versions(&client).await?;
    let mut changed = Vec::new();
    for (key, (rv, writers)) in &after {
        match before.get(key) {
            Some((old, _)) if old == rv => {}
            Some(_) => changed.push(format!("changed {key}: {writers}")),
            None => changed.push(format!("created {key}: {writers}")),
        }
    }
    for key in before.keys().filter(|k| !after.contains_key(*k)) {
        changed.push(format!("deleted {key}"));
    }
    let steady_cpu = cpu_seconds(olm.pid)? - settle_cpu;
    eprintln!(
        "  steady state ({}s from {window_start}): {} objects written, {steady_cpu:.2} CPU s",
        STEADY.as_secs(),
        changed.len()
    );
    for c in changed.iter().take(20) {
        eprintln!("    {c}");
    }
    let (rss_steady, _) = memory_kib(olm.pid)?;

    apply(
        &client,
        &olm_config_resource(),
        &json!({"apiVersion": "operators.coreos.com/v1", "kind": "OLMConfig",
            "metadata": {"name": "cluster"},
            "spec": {"features": {"disableCopiedCSVs": true}}}),
    )
    .await?;
    let disable = wait_until(
        &mut olm,
        "copies removed",
        Instant::now(),
        timeout,
        async || count_copies(&client).await,
        |n| *n == 0,
    )
    .await?;
    if !disable.done {
        bail!(
            "{} copies left {timeout:?} after disableCopiedCSVs; olm log tail:\n{}",
            disable.last,
            olm_testenv::LogTail::read(&olm.log, 20).text()
        );
    }
    let disable_secs = disable.took.as_secs_f64();
    let (rss_disabled, hwm_disabled) = memory_kib(olm.pid)?;
    let total_cpu = cpu_seconds(olm.pid)?;

    let log_lines = std::fs::read_to_string(&olm.log)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    let warnings: Vec<String> = std::fs::read_to_string(&olm.log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .take(10)
        .map(str::to_owned)
        .collect();
    olm.stop().await?;
    plane.stop();

    Ok(json!({
        "namespaces": n,
        "namespaces_total": seen.expected / OPERATORS + 1,
        "namespaces_create_secs": round(namespaces_secs),
        "copies": seen.expected,
        "ready_secs": round(ready_secs),
        "settle_secs": round(settle_secs),
        "settle_cpu_secs": round(settle_cpu),
        "rss_settled_mib": round(rss as f64 / MIB),
        "rss_peak_mib": round(hwm as f64 / MIB),
        "rss_steady_mib": round(rss_steady as f64 / MIB),
        "steady_writes": changed.len(),
        "steady_written": changed.iter().take(50).collect::<Vec<_>>(),
        "steady_cpu_secs": round(steady_cpu),
        "disable_secs": round(disable_secs),
        "rss_disabled_mib": round(rss_disabled as f64 / MIB),
        "rss_peak_after_disable_mib": round(hwm_disabled as f64 / MIB),
        "total_cpu_secs": round(total_cpu),
        "control_plane_rss_mib_settled": plane_memory,
        "olm_log_lines": log_lines,
        "olm_log_warnings": warnings,
        "settle_trace": settle.trace,
        "disable_trace": disable.trace,
    }))
}

fn round(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// Where the figures go: `target/v0-scale.json` of the workspace.
fn output_path() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target
        .canonicalize()
        .unwrap_or(target)
        .join("v0-scale.json")
}

/// Writes `results` into the file, keeping the entries of sizes not measured this time.
fn save(results: &[Value]) -> Result<PathBuf> {
    let path = output_path();
    let mut by_size: BTreeMap<u64, Value> = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| serde_json::from_str::<Vec<Value>>(&t).ok())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|v| Some((v["namespaces"].as_u64()?, v)))
        .collect();
    for r in results {
        if let Some(n) = r["namespaces"].as_u64() {
            by_size.insert(n, r.clone());
        }
    }
    let all: Vec<&Value> = by_size.values().collect();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, serde_json::to_string_pretty(&all)? + "\n")?;
    Ok(path)
}

fn summary(r: &Value) -> String {
    if let Some(e) = r["error"].as_str() {
        let rss = match r["rss_mib"].as_f64() {
            Some(rss) => format!(
                "  (olm rss {rss:.1} MiB, peak {:.1})",
                r["rss_peak_mib"].as_f64().unwrap_or(f64::NAN)
            ),
            None => String::new(),
        };
        return format!(
            "namespaces {:>6}  FAILED: {}{rss}",
            r["namespaces"],
            e.lines().next().unwrap_or("")
        );
    }
    format!(
        "namespaces {:>6}  copies {:>6}  settle {:>7.1}s  rss {:>6.1} MiB (peak {:>6.1})  steady writes {:>3}  disable {:>6.1}s  rss after disable {:>6.1} MiB",
        r["namespaces"],
        r["copies"],
        r["settle_secs"].as_f64().unwrap_or(f64::NAN),
        r["rss_settled_mib"].as_f64().unwrap_or(f64::NAN),
        r["rss_peak_mib"].as_f64().unwrap_or(f64::NAN),
        r["steady_writes"],
        r["disable_secs"].as_f64().unwrap_or(f64::NAN),
        r["rss_disabled_mib"].as_f64().unwrap_or(f64::NAN),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn copied_csvs_at_scale() -> Result<()> {
    if std::env::var("OLM_V0_SCALE").as_deref() != Ok("1") {
        eprintln!(
            "skipped: set OLM_V0_SCALE=1 (and OLM_E2E_BINARY) to run the copied CSV scale benchmark"
        );
        return Ok(());
    }
    let binary = std::env::var_os("OLM_E2E_BINARY")
        .map(PathBuf::from)
        .context("OLM_V0_SCALE=1 needs OLM_E2E_BINARY, the path of a release `olm` binary")?;
    let sizes: Vec<usize> = std::env::var("OLM_V0_SCALE_NAMESPACES")
        .unwrap_or_else(|_| "100,1000,10000".to_owned())
        .split(',')
        .map(|s| s.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .context("OLM_V0_SCALE_NAMESPACES: a comma-separated list of numbers")?;
    let timeout = Duration::from_secs(
        std::env::var("OLM_V0_SCALE_TIMEOUT")
            .ok()
            .map(|s| s.parse::<u64>())
            .transpose()
            .context("OLM_V0_SCALE_TIMEOUT: seconds")?
            .unwrap_or(900),
    );
    let mut results = Vec::new();
    for n in sizes {
        eprintln!("{n} namespaces:");
        let r = match measure(n, &binary, timeout).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("  FAILED: {e:#}");
                json!({"namespaces": n, "error": format!("{e:#}")})
            }
        };
        eprintln!("{}", summary(&r));
        results.push(r);
        save(&results)?;
    }
    eprintln!("\nsummary ({}):", output_path().display());
    for r in &results {
        eprintln!("{}", summary(r));
    }
    let failed: Vec<&Value> = results
        .iter()
        .filter(|r| r.get("error").is_some())
        .collect();
    if !failed.is_empty() {
        bail!("{} size(s) failed", failed.len());
    }
    Ok(())
}
