//! Reconcile metrics in controller-runtime's names, so dashboards and alerts written for
//! upstream's controllers work unchanged against `olm run`'s `/metrics`.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `controller_runtime_reconcile_total` | counter | `controller`, `result` (`success`, `error`, `requeue`, `requeue_after`) |
//! | `controller_runtime_reconcile_errors_total` | counter | `controller` |
//! | `controller_runtime_reconcile_time_seconds` | histogram (controller-runtime's buckets) | `controller` |
//! | `controller_runtime_max_concurrent_reconciles` | gauge | `controller` |
//! | `controller_runtime_active_workers` | gauge | `controller` |
//! | `workqueue_depth` | gauge | `controller`, `name`, `priority` (always empty) |
//! | `installplan_warnings_total` | counter | none (upstream catalog-operator's: InstallPlan steps whose writes drew API warnings) |
//!
//! `workqueue_depth` is an approximation, and says so in its help text: kube-runtime's
//! controller keeps its queue to itself, so the gauge counts what the process can see — objects
//! being reconciled plus objects whose last reconcile asked to come back (an error, a requeue)
//! and that have not been reconciled since. controller-runtime's gauge counts only objects that
//! are due and waiting for a worker, so ours reads higher while a retry waits for its delay and
//! while a reconcile runs; both read 0 on an idle, healthy controller.
//!
//! Counters for a controller appear at 0 once it is [`Metrics::register`]ed (as
//! controller-runtime initialises them when a controller starts), so a rate query has a series
//! to work on before the first error. Output is sorted by controller name, so two scrapes of an
//! unchanged process are byte-identical.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// controller-runtime's `reconcile_time_seconds` buckets (`pkg/internal/controller/metrics`).
pub const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// How a reconcile ended, controller-runtime's `result` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Done, nothing scheduled.
    Success,
    /// Failed.
    Error,
    /// Asked to come back at once.
    Requeue,
    /// Asked to come back after a while.
    RequeueAfter,
}

impl Outcome {
    /// Every outcome, in controller-runtime's order of initialisation.
    pub const ALL: [Outcome; 4] = [
        Outcome::Error,
        Outcome::RequeueAfter,
        Outcome::Requeue,
        Outcome::Success,
    ];

    /// The `result` label value.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Error => "error",
            Outcome::Requeue => "requeue",
            Outcome::RequeueAfter => "requeue_after",
        }
    }

    /// The outcome of a reconcile that succeeded and asked to come back after `requeue_after`
    /// (`None`: not at all; zero: at once), as controller-runtime classifies a `Result`.
    pub fn of_requeue(requeue_after: Option<Duration>) -> Outcome {
        match requeue_after {
            None => Outcome::Success,
            Some(d) if d.is_zero() => Outcome::Requeue,
            Some(_) => Outcome::RequeueAfter,
        }
    }

    fn index(self) -> usize {
        match self {
            Outcome::Success => 0,
            Outcome::Error => 1,
            Outcome::Requeue => 2,
            Outcome::RequeueAfter => 3,
        }
    }

    /// Whether the object comes back to the queue after this outcome.
    fn schedules(self) -> bool {
        !matches!(self, Outcome::Success)
    }
}

#[derive(Debug, Clone)]
struct Controller {
    results: [u64; 4],
    errors: u64,
    buckets: [u64; RECONCILE_TIME_BUCKETS.len()],
    count: u64,
    sum: f64,
    workers: Option<u32>,
    /// Set by [`Metrics::set_queue_depth`] or recomputed by the tracker.
    depth: i64,
    in_flight: BTreeMap<String, usize>,
    scheduled: BTreeSet<String>,
}

impl Default for Controller {
    fn default() -> Controller {
        Controller {
            results: [0; 4],
            errors: 0,
            buckets: [0; RECONCILE_TIME_BUCKETS.len()],
            count: 0,
            sum: 0.0,
            workers: None,
            depth: 0,
            in_flight: BTreeMap::new(),
            scheduled: BTreeSet::new(),
        }
    }
}

impl Controller {
    fn active(&self) -> usize {
        self.in_flight.values().sum()
    }

    /// Objects being reconciled or due to come back, each counted once.
    fn tracked_depth(&self) -> i64 {
        let waiting = self
            .scheduled
            .iter()
            .filter(|k| !self.in_flight.contains_key(*k))
            .count();
        i64::try_from(self.in_flight.len() + waiting).unwrap_or(i64::MAX)
    }
}

/// Counters and timings of every controller of the process.
#[derive(Debug, Default)]
pub struct Metrics {
    controllers: Mutex<BTreeMap<&'static str, Controller>>,
    /// `installplan_warnings_total`: InstallPlan steps whose writes drew API warnings.
    install_plan_warnings: AtomicU64,
    /// Whether this process executes InstallPlans (OLM v0 runs): only then is
    /// `installplan_warnings_total` exposed, as only upstream's catalog-operator exposes it.
    executes_install_plans: AtomicBool,
}

impl Metrics {
    fn with<R>(&self, controller: &'static str, f: impl FnOnce(&mut Controller) -> R) -> R {
        // A panic elsewhere while holding the lock leaves plain counters behind: still usable.
        let mut map = self.controllers.lock().unwrap_or_else(|e| e.into_inner());
        f(map.entry(controller).or_default())
    }

    /// Makes `controller`'s series appear (at 0) before its first reconcile, with `workers`
    /// reconciles allowed at once (`controller_runtime_max_concurrent_reconciles`).
    pub fn register(&self, controller: &'static str, workers: u32) {
        self.with(controller, |c| c.workers = Some(workers));
    }

    /// Records one reconcile of `controller`.
    pub fn observe(&self, controller: &'static str, outcome: Outcome, elapsed: Duration) {
        self.with(controller, |c| record(c, outcome, elapsed));
    }

    /// Records how many objects wait to be reconciled by `controller`. The next
    /// [`Metrics::begin`] or [`Reconcile::finish`] of that controller recomputes it.
    pub fn set_queue_depth(&self, controller: &'static str, depth: i64) {
        self.with(controller, |c| c.depth = depth);
    }

    /// Starts timing one reconcile of the object `key` (e.g. its name): it counts as an active
    /// worker and in `workqueue_depth` until [`Reconcile::finish`] records how it ended. A
    /// reconcile dropped unfinished (its future cancelled at shutdown) records nothing.
    pub fn begin(&self, controller: &'static str, key: impl Into<String>) -> Reconcile<'_> {
        let key = key.into();
        self.with(controller, |c| {
            *c.in_flight.entry(key.clone()).or_default() += 1;
            c.scheduled.remove(&key);
            c.depth = c.tracked_depth();
        });
        Reconcile {
            metrics: self,
            controller,
            key,
            started: Instant::now(),
            finished: false,
        }
    }

    /// Makes `installplan_warnings_total` appear (at 0): this process executes InstallPlans.
    pub fn register_install_plan_warnings(&self) {
        self.executes_install_plans.store(true, Ordering::Relaxed);
    }

    /// Counts one InstallPlan step whose writes drew warnings from the API server (upstream
    /// catalog-operator's `installplan_warnings_total`).
    pub fn count_install_plan_warning(&self) {
        self.install_plan_warnings.fetch_add(1, Ordering::Relaxed);
    }

    /// Forgets `key` of `controller` (the object is gone), so a retry that will never come does
    /// not stay counted in `workqueue_depth`.
    pub fn forget(&self, controller: &'static str, key: &str) {
        self.with(controller, |c| {
            c.scheduled.remove(key);
            c.depth = c.tracked_depth();
        });
    }

    /// Prometheus text exposition (format 0.0.4), with controller-runtime's names and help texts.
    pub fn render(&self) -> String {
        let map = self
            .controllers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut out = String::new();
        family(
            &mut out,
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            "gauge",
        );
        for (name, c) in &map {
            let _ = writeln!(
                out,
                "controller_runtime_active_workers{{controller=\"{name}\"}} {}",
                c.active()
            );
        }
        family(
            &mut out,
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            "gauge",
        );
        for (name, c) in &map {
            let _ = writeln!(
                out,
                "controller_runtime_max_concurrent_reconciles{{controller=\"{name}\"}} {}",
                c.workers.unwrap_or(1)
            );
        }
        family(
            &mut out,
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            "counter",
        );
        for (name, c) in &map {
            let _ = writeln!(
                out,
                "controller_runtime_reconcile_errors_total{{controller=\"{name}\"}} {}",
                c.errors
            );
        }
        family(
            &mut out,
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            "histogram",
        );
        for (name, c) in &map {
            for (le, n) in RECONCILE_TIME_BUCKETS.iter().zip(c.buckets) {
                let _ = writeln!(
                    out,
                    "controller_runtime_reconcile_time_seconds_bucket{{controller=\"{name}\",le=\"{le}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "controller_runtime_reconcile_time_seconds_bucket{{controller=\"{name}\",le=\"+Inf\"}} {}",
                c.count
            );
            let _ = writeln!(
                out,
                "controller_runtime_reconcile_time_seconds_sum{{controller=\"{name}\"}} {}",
                c.sum
            );
            let _ = writeln!(
                out,
                "controller_runtime_reconcile_time_seconds_count{{controller=\"{name}\"}} {}",
                c.count
            );
        }
        family(
            &mut out,
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            "counter",
        );
        for (name, c) in &map {
            // Sorted by label value, as client_golang writes them.
            let mut results: Vec<(&str, u64)> = Outcome::ALL
                .iter()
                .map(|o| (o.label(), c.results[o.index()]))
                .collect();
            results.sort_unstable();
            for (result, n) in results {
                let _ = writeln!(
                    out,
                    "controller_runtime_reconcile_total{{controller=\"{name}\",result=\"{result}\"}} {n}"
                );
            }
        }
        if self.executes_install_plans.load(Ordering::Relaxed) {
            family(
                &mut out,
                "installplan_warnings_total",
                "monotonic count of resources that generated warnings when applied as part of an \
                 InstallPlan (for example, due to deprecation)",
                "counter",
            );
            let _ = writeln!(
                out,
                "installplan_warnings_total {}",
                self.install_plan_warnings.load(Ordering::Relaxed)
            );
        }
        family(
            &mut out,
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority (approximated: objects being \
             reconciled or due to be retried)",
            "gauge",
        );
        for (name, c) in &map {
            let _ = writeln!(
                out,
                "workqueue_depth{{controller=\"{name}\",name=\"{name}\",priority=\"\"}} {}",
                c.depth
            );
        }
        out
    }
}

/// Adds one reconcile's outcome and time to `c`.
fn record(c: &mut Controller, outcome: Outcome, elapsed: Duration) {
    c.results[outcome.index()] += 1;
    if outcome == Outcome::Error {
        c.errors += 1;
    }
    let secs = elapsed.as_secs_f64();
    for (i, le) in RECONCILE_TIME_BUCKETS.iter().enumerate() {
        if secs <= *le {
            c.buckets[i] += 1;
        }
    }
    c.count += 1;
    c.sum += secs;
}

fn family(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// One reconcile being timed; see [`Metrics::begin`].
#[derive(Debug)]
#[must_use = "a reconcile records its outcome with `finish`"]
pub struct Reconcile<'a> {
    metrics: &'a Metrics,
    controller: &'static str,
    key: String,
    started: Instant,
    finished: bool,
}

impl Reconcile<'_> {
    /// Records how the reconcile ended and how long it took; an outcome other than
    /// [`Outcome::Success`] keeps the object counted in `workqueue_depth` until it is reconciled
    /// again (or [`Metrics::forget`]).
    pub fn finish(mut self, outcome: Outcome) {
        self.finished = true;
        let elapsed = self.started.elapsed();
        let key = std::mem::take(&mut self.key);
        self.metrics.with(self.controller, |c| {
            record(c, outcome, elapsed);
            leave(c, &key);
            if outcome.schedules() {
                c.scheduled.insert(key);
            }
            c.depth = c.tracked_depth();
        });
    }
}

impl Drop for Reconcile<'_> {
    fn drop(&mut self) {
        if !self.finished {
            let key = std::mem::take(&mut self.key);
            self.metrics.with(self.controller, |c| {
                leave(c, &key);
                c.depth = c.tracked_depth();
            });
        }
    }
}

fn leave(c: &mut Controller, key: &str) {
    if let Some(n) = c.in_flight.get_mut(key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            c.in_flight.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line starting {prefix:?} in\n{text}"))
    }

    /// A registered controller shows every series at zero, as controller-runtime's
    /// `initMetrics` (pkg/internal/controller/controller.go) makes them.
    #[test]
    fn registered_controllers_start_at_zero() {
        let m = Metrics::default();
        m.register("clusterextension", 1);
        let text = m.render();
        for result in ["error", "requeue", "requeue_after", "success"] {
            assert!(
                text.contains(&format!(
                    "controller_runtime_reconcile_total{{controller=\"clusterextension\",result=\"{result}\"}} 0\n"
                )),
                "{text}"
            );
        }
        assert!(text.contains(
            "controller_runtime_reconcile_errors_total{controller=\"clusterextension\"} 0\n"
        ));
        assert!(text.contains(
            "controller_runtime_max_concurrent_reconciles{controller=\"clusterextension\"} 1\n"
        ));
        assert!(text.contains(
            "workqueue_depth{controller=\"clusterextension\",name=\"clusterextension\",priority=\"\"} 0\n"
        ));
    }

    /// `installplan_warnings_total` is upstream catalog-operator's: exposed (from 0) only by a
    /// process that executes InstallPlans.
    #[test]
    fn install_plan_warnings_only_where_plans_run() {
        let m = Metrics::default();
        assert!(!m.render().contains("installplan_warnings_total"));
        m.register_install_plan_warnings();
        assert!(m.render().contains("\ninstallplan_warnings_total 0\n"));
        m.count_install_plan_warning();
        assert!(m.render().contains("\ninstallplan_warnings_total 1\n"));
    }

    /// The exposition is well-formed: every sample belongs to a family announced by `# TYPE`
    /// before it, every family has `# HELP`, and values parse as numbers.
    #[test]
    fn text_format_is_well_formed() {
        let m = Metrics::default();
        m.register("clusterobjectset", 1);
        m.observe(
            "clusterextension",
            Outcome::Success,
            Duration::from_millis(3),
        );
        let text = m.render();
        let mut families: Vec<&str> = Vec::new();
        let mut helped: Vec<&str> = Vec::new();
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("# HELP ") {
                helped.push(rest.split(' ').next().unwrap_or_default());
            } else if let Some(rest) = l.strip_prefix("# TYPE ") {
                let mut parts = rest.split(' ');
                let name = parts.next().unwrap_or_default();
                assert!(helped.contains(&name), "{name} has no HELP");
                let kind = parts.next().unwrap_or_default();
                assert!(["counter", "gauge", "histogram"].contains(&kind), "{l}");
                families.push(name);
            } else {
                let (series, value) = l.rsplit_once(' ').expect("name and value");
                value.parse::<f64>().expect("numeric value");
                let name = series.split('{').next().unwrap_or_default();
                let family = families.last().expect("a family before samples");
                assert!(
                    name == *family
                        || [
                            format!("{family}_bucket"),
                            format!("{family}_sum"),
                            format!("{family}_count")
                        ]
                        .iter()
                        .any(|n| n == name),
                    "{name} outside its family {family}"
                );
            }
        }
        for want in [
            "controller_runtime_reconcile_total",
            "controller_runtime_reconcile_errors_total",
            "controller_runtime_reconcile_time_seconds",
            "workqueue_depth",
        ] {
            assert!(families.contains(&want), "{want} missing");
        }
        let mut sorted = families.clone();
        sorted.sort_unstable();
        assert_eq!(families, sorted, "families in name order");
        assert_eq!(text, m.render(), "two renders of the same state agree");
    }

    /// Buckets are cumulative with controller-runtime's bounds; errors count in both the error
    /// result and the errors counter, as controller-runtime's `reconcileHandler` does.
    #[test]
    fn outcomes_and_times() {
        let m = Metrics::default();
        m.observe("c", Outcome::Success, Duration::from_millis(7));
        m.observe("c", Outcome::Error, Duration::from_secs(2));
        m.observe("c", Outcome::RequeueAfter, Duration::from_secs(100));
        m.observe("c", Outcome::Requeue, Duration::ZERO);
        let text = m.render();
        let bucket = |le: &str| {
            line(
                &text,
                &format!("controller_runtime_reconcile_time_seconds_bucket{{controller=\"c\",le=\"{le}\"}}"),
            )
            .rsplit(' ')
            .next()
            .unwrap_or_default()
            .to_owned()
        };
        assert_eq!(bucket("0.005"), "1");
        assert_eq!(bucket("0.01"), "2");
        assert_eq!(bucket("2"), "3");
        assert_eq!(bucket("60"), "3");
        assert_eq!(bucket("+Inf"), "4");
        assert!(
            text.contains("controller_runtime_reconcile_time_seconds_count{controller=\"c\"} 4\n")
        );
        assert!(
            text.contains(
                "controller_runtime_reconcile_time_seconds_sum{controller=\"c\"} 102.007\n"
            )
        );
        assert!(text.contains("controller_runtime_reconcile_errors_total{controller=\"c\"} 1\n"));
        for result in ["error", "requeue", "requeue_after", "success"] {
            assert!(
                text.contains(&format!(
                    "controller_runtime_reconcile_total{{controller=\"c\",result=\"{result}\"}} 1\n"
                )),
                "{result}: {text}"
            );
        }
    }

    #[test]
    fn requeue_results_classify_as_controller_runtime_does() {
        assert_eq!(Outcome::of_requeue(None), Outcome::Success);
        assert_eq!(Outcome::of_requeue(Some(Duration::ZERO)), Outcome::Requeue);
        assert_eq!(
            Outcome::of_requeue(Some(Duration::from_secs(10))),
            Outcome::RequeueAfter
        );
    }

    fn depth(m: &Metrics) -> String {
        line(&m.render(), "workqueue_depth{controller=\"c\"")
            .rsplit(' ')
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    fn active(m: &Metrics) -> String {
        line(
            &m.render(),
            "controller_runtime_active_workers{controller=\"c\"}",
        )
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .to_owned()
    }

    /// The depth approximation: in flight plus waiting to be retried, each object once.
    #[test]
    fn depth_counts_objects_in_flight_and_scheduled() {
        let m = Metrics::default();
        let a = m.begin("c", "a");
        let b = m.begin("c", "b");
        assert_eq!(depth(&m), "2");
        assert_eq!(active(&m), "2");
        a.finish(Outcome::Success);
        assert_eq!(depth(&m), "1");
        b.finish(Outcome::Error);
        assert_eq!(depth(&m), "1", "b waits for its retry");
        assert_eq!(active(&m), "0");
        let b = m.begin("c", "b");
        assert_eq!(depth(&m), "1", "the retry is the same object, counted once");
        b.finish(Outcome::Success);
        assert_eq!(depth(&m), "0");
        m.begin("c", "x").finish(Outcome::RequeueAfter);
        assert_eq!(depth(&m), "1");
        m.forget("c", "x");
        assert_eq!(depth(&m), "0");
    }

    #[test]
    fn a_cancelled_reconcile_records_nothing() {
        let m = Metrics::default();
        drop(m.begin("c", "a"));
        assert_eq!(depth(&m), "0");
        assert_eq!(active(&m), "0");
        assert!(
            m.render()
                .contains("controller_runtime_reconcile_time_seconds_count{controller=\"c\"} 0\n")
        );
    }

    #[test]
    fn explicit_depth_is_shown() {
        let m = Metrics::default();
        m.set_queue_depth("c", 5);
        assert_eq!(depth(&m), "5");
    }
}
