//! The runner of the integration binaries whose scenarios share one environment: OLM v1's
//! `e2e_*` and `shared_cluster` (environment in `tests/e2e`), OLM v0's `v0_operators` and
//! `v0_upgrades` (environment in `tests/v0fixtures`).
//!
//! Starting a control plane (with a registry and `olm`) takes from seconds to tens of seconds,
//! so a binary starts its environment once, runs every selected scenario on it and stops it at
//! the end. libtest gives each test a runtime of its own and has no place to start or stop
//! anything shared, so these binaries are `harness = false` and run here instead, with
//! libtest's command line and output:
//!
//! - arguments: substrings selecting scenarios by name (a scenario runs when any matches; none
//!   given runs all), `--exact` for whole names, `--list` to list them;
//! - scenarios run a few at a time: `E2E_JOBS`, or the environment's [`Environment::JOBS`];
//!   those marked exclusive (they restart `olm` or change something cluster-wide) run alone,
//!   one after another, after the others;
//! - a scenario's body runs as a task of its own for at most [`TIMEOUT`] ([`guarded`]), so a
//!   panic or a hang fails that scenario alone; failures are collected and reported at the end,
//!   with the notes a scenario made and `olm`'s log lines about it ([`logs`]), and the exit
//!   status is libtest's (101 when one failed);
//! - `E2E_KEEP` leaves the environment running at the end (and each binary's cleanup off), for a
//!   look at what the scenarios left.
//!
//! What a scenario is, what checks follow its body (the `settle` guard) and what cleans up after
//! it is each environment's: [`Scenario::run`].

// A runner that cannot start fails loudly; not every binary uses every item.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

pub mod logs;

use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a scenario's body may run before it fails.
pub const TIMEOUT: Duration = Duration::from_secs(600);

/// What a binary's scenarios share: started once before them, shut down after them.
pub trait Environment: Send + Sync + 'static {
    /// How many scenarios run at once unless `E2E_JOBS` says otherwise.
    const JOBS: usize;

    /// Where it keeps its files: printed when `E2E_KEEP` leaves it running.
    fn work_dir(&self) -> &Path;

    /// Stops it.
    fn shutdown(self: Arc<Self>) -> impl Future<Output = ()> + Send;
}

/// One scenario of a binary.
pub trait Scenario: Send + Sync + 'static {
    /// The environment it runs in.
    type Env: Environment;

    /// Its name: what a selecting argument matches.
    fn name(&self) -> &str;

    /// Whether it runs alone.
    fn exclusive(&self) -> bool;

    /// Runs it: its body (through [`guarded`]), then what every scenario of the binary gets.
    fn run(&self, env: Arc<Self::Env>) -> impl Future<Output = Outcome> + Send;
}

/// How a scenario ended.
pub struct Outcome {
    /// Passed, or why not.
    pub result: Result<(), String>,
    /// Lines printed under its result (and with its failure).
    pub notes: Vec<String>,
}

/// Runs `body` as a task of its own for at most [`TIMEOUT`]: its error, a panic or the timeout
/// becomes the scenario's failure instead of the binary's.
pub async fn guarded(
    body: impl Future<Output = anyhow::Result<()>> + Send + 'static,
) -> Result<(), String> {
    match tokio::time::timeout(TIMEOUT, tokio::spawn(body)).await {
        Ok(Ok(Ok(()))) => Ok(()),
        Ok(Ok(Err(e))) => Err(format!("{e:#}")),
        Ok(Err(join)) => Err(format!("panicked: {join}")),
        Err(_) => Err(format!("scenario timed out after {}s", TIMEOUT.as_secs())),
    }
}

/// Whether `E2E_KEEP` asks to keep what the scenarios made.
pub fn keep() -> bool {
    std::env::var_os("E2E_KEEP").is_some()
}

/// The binary's arguments.
pub fn args() -> Vec<String> {
    std::env::args().skip(1).collect()
}

/// Runs the scenarios `args` select on the environment `start` starts, and exits with libtest's
/// convention (101 on failure).
pub fn main<S: Scenario>(
    args: Vec<String>,
    scenarios: Vec<S>,
    start: impl Future<Output = anyhow::Result<Arc<S::Env>>>,
) {
    // RUST_LOG=olm_controller=debug shows what the controllers did, on stderr; without it a
    // failed scenario shows what they logged about its objects.
    logs::capture();
    let exact = args.iter().any(|a| a == "--exact");
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let selected: Vec<S> = scenarios
        .into_iter()
        .filter(|s| {
            filters.is_empty()
                || filters.iter().any(|f| {
                    if exact {
                        s.name() == f.as_str()
                    } else {
                        s.name().contains(f.as_str())
                    }
                })
        })
        .collect();
    if args.iter().any(|a| a == "--list") {
        for s in &selected {
            println!("{}: test", s.name());
        }
        return;
    }
    if selected.is_empty() {
        println!("running 0 tests\n\ntest result: ok. 0 passed; 0 failed");
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .expect("runtime");
    let failed = runtime.block_on(run_all(selected, start));
    runtime.shutdown_timeout(Duration::from_secs(5));
    if failed > 0 {
        std::process::exit(101);
    }
}

/// Name, time taken, outcome, notes.
type ScenarioResult = (String, Duration, Result<(), String>, Vec<String>);

async fn run_all<S: Scenario>(
    selected: Vec<S>,
    start: impl Future<Output = anyhow::Result<Arc<S::Env>>>,
) -> usize {
    let started = Instant::now();
    println!("running {} scenarios", selected.len());
    let env = match start.await {
        Ok(e) => e,
        Err(e) => {
            println!("environment failed to start: {e:#}");
            return selected.len();
        }
    };
    println!("environment up in {:.1?}", started.elapsed());
    let jobs: usize = std::env::var("E2E_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(S::Env::JOBS);
    let (exclusive, shared): (Vec<_>, Vec<_>) = selected.into_iter().partition(|s| s.exclusive());
    let results: Arc<Mutex<Vec<ScenarioResult>>> = Arc::default();
    let sem = Arc::new(tokio::sync::Semaphore::new(
        jobs.clamp(1, tokio::sync::Semaphore::MAX_PERMITS),
    ));
    let mut handles = Vec::new();
    for s in shared {
        let env = env.clone();
        let sem = sem.clone();
        let results = results.clone();
        handles.push(tokio::spawn(async move {
            let _permit = sem.acquire_owned().await;
            let r = run_one(&env, &s).await;
            print_result(&r);
            results.lock().unwrap().push(r);
        }));
    }
    for h in handles {
        let _ = h.await;
    }
    for s in exclusive {
        let r = run_one(&env, &s).await;
        print_result(&r);
        results.lock().unwrap().push(r);
    }
    let results = results.lock().unwrap().clone();
    let failed: Vec<_> = results.iter().filter(|r| r.2.is_err()).collect();
    if !failed.is_empty() {
        println!("\nfailures:");
        for (name, _, r, notes) in &failed {
            println!("\n---- {name} ----");
            for n in notes {
                println!("  note: {n}");
            }
            if let Err(e) = r {
                println!("{e}");
            }
        }
        println!("\nfailures:");
        for (name, ..) in &failed {
            println!("    {name}");
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed; finished in {:.1?}",
        if failed.is_empty() { "ok" } else { "FAILED" },
        results.len() - failed.len(),
        failed.len(),
        started.elapsed()
    );
    if keep() {
        println!(
            "E2E_KEEP set: control plane kept at {}",
            env.work_dir().display()
        );
        std::mem::forget(env);
    } else {
        env.shutdown().await;
    }
    failed.len()
}

fn print_result(r: &ScenarioResult) {
    let (name, took, res, notes) = r;
    match res {
        Ok(()) => {
            println!("test {name} ... ok ({took:.1?})");
            for n in notes {
                println!("    note: {n}");
            }
        }
        Err(_) => println!("test {name} ... FAILED ({took:.1?})"),
    }
}

async fn run_one<S: Scenario>(env: &Arc<S::Env>, s: &S) -> ScenarioResult {
    let started = Instant::now();
    let Outcome { result, notes } = s.run(env.clone()).await;
    (s.name().to_string(), started.elapsed(), result, notes)
}
