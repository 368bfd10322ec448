//! Upstream's own test vectors for the CRD upgrade-safety preflight, run through
//! [`check_upgrade`]: operator-controller v1.11.0's `crdupgradesafety_test.go` (with its
//! `testdata/manifests`) and crdify's validation tests at the version operator-controller pins
//! (`pkg/validations/**/*_test.go`, `pkg/validators/version/served/served_test.go`).
//!
//! The vectors are data, `tests/data/crdupgradesafety/cases.json` (its README says which upstream
//! test each group comes from and how a vector was carried over), read by this test and by the
//! oracle (`tools/oracles/operator-controller/crdupgrade -cases`), so both sides check the same
//! CRDs. Each case is held to two things:
//!
//! - what upstream's test expects of it (`safe`, `check` + `flagged`, `contains`, `absent`,
//!   `removed` in the case), checked on olm's report and, as a check on the carrying over, on the
//!   oracle's;
//! - the exact outcome operator-controller's preflight gives for it
//!   (`tests/golden/crd-upgrade-upstream.txt`, made by `tools/oracles/regen.sh`), problems sorted
//!   as upstream's order is random.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use olm_bundle::crddiff::{UpgradeReport, check_upgrade};
use serde_json::{Value, json};

mod oracle;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/crdupgradesafety")
}

/// The CRD a property vector is checked in, as the oracle builds it: one served, stored version
/// `v1` whose root object has the property as `field` (path `^.field`), `v1` recorded as stored.
fn property_crd(prop: &Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": true, "storage": true,
                                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {"field": prop}}}}]},
           "status": {"storedVersions": ["v1"]}})
}

fn side(v: &Value) -> Value {
    if let Some(f) = v.get("file").and_then(Value::as_str) {
        let text = std::fs::read_to_string(data_dir().join(f)).unwrap();
        serde_json::from_str(&text).unwrap()
    } else if let Some(c) = v.get("crd") {
        c.clone()
    } else if let Some(p) = v.get("property") {
        property_crd(p)
    } else {
        panic!("case side with neither file, crd nor property: {v}")
    }
}

struct Case {
    /// `<source>/<name>`, as the golden table names it.
    id: String,
    source: String,
    old: Value,
    new: Value,
    spec: Value,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(data_dir().join("cases.json")).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let source = c["source"].as_str().unwrap().to_string();
            let name = c["name"].as_str().unwrap();
            // The golden table separates a case from its outcome by the first ": ".
            assert!(
                !format!("{source}/{name}").contains(": "),
                "{source}/{name}"
            );
            Case {
                id: format!("{source}/{name}"),
                source,
                old: side(&c["old"]),
                new: side(&c["new"]),
                spec: c.clone(),
            }
        })
        .collect()
}

/// An outcome as upstream's error shows it: whether there is an error at all, the
/// `validating upgrade for CRD "<name>":` head and the problems.
struct Outcome {
    safe: bool,
    head: String,
    problems: Vec<String>,
}

impl Outcome {
    fn of(r: &UpgradeReport) -> Outcome {
        Outcome {
            safe: r.is_safe(),
            head: format!("validating upgrade for CRD \"{}\":", r.crd_name),
            problems: r.errors.clone(),
        }
    }

    /// The oracle's outcome (`safe`, or `unsafe: <head>` and one problem a line); `None` when
    /// the preflight crashed or failed otherwise.
    fn parse(text: &str) -> Option<Outcome> {
        let mut lines = text.lines();
        let first = lines.next()?;
        if first == "safe" {
            return Some(Outcome {
                safe: true,
                head: String::new(),
                problems: Vec::new(),
            });
        }
        let head = first.strip_prefix("unsafe: ")?.to_string();
        Some(Outcome {
            safe: false,
            head,
            problems: lines.map(str::to_string).collect(),
        })
    }

    /// Whether `s` is in the error text: within one problem, or the head and a problem after it
    /// (as upstream's error joins them).
    fn contains(&self, s: &str) -> bool {
        self.head.contains(s)
            || self
                .problems
                .iter()
                .any(|p| format!("{} {p}", self.head).contains(s))
    }

    /// Whether check `name` reported anything: `<check>: …` (CRD-wide) or `…: <check>: …`.
    fn flags(&self, name: &str) -> bool {
        let (start, inner) = (format!("{name}: "), format!(": {name}: "));
        self.problems
            .iter()
            .any(|p| p.starts_with(&start) || p.contains(&inner))
    }
}

/// Where `outcome` breaks what upstream's test expects of case `spec`, one line per broken
/// expectation.
fn unmet(spec: &Value, outcome: &Outcome) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(safe) = spec.get("safe").and_then(Value::as_bool)
        && safe != outcome.safe
    {
        out.push(format!("expected safe = {safe}"));
    }
    if let Some(check) = spec.get("check").and_then(Value::as_str) {
        let flagged = spec["flagged"].as_bool().unwrap();
        if outcome.flags(check) != flagged {
            out.push(format!("expected {check} flagged = {flagged}"));
        }
    }
    for s in spec
        .get("contains")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let s = s.as_str().unwrap();
        if !outcome.contains(s) {
            out.push(format!("expected the error to contain {s:?}"));
        }
    }
    for s in spec
        .get("absent")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let s = s.as_str().unwrap();
        if outcome.contains(s) {
            out.push(format!("expected the error not to contain {s:?}"));
        }
    }
    if let Some(removed) = spec.get("removed").and_then(Value::as_array) {
        let want: BTreeSet<&str> = removed.iter().map(|s| s.as_str().unwrap()).collect();
        let got: BTreeSet<&str> = outcome
            .problems
            .iter()
            .filter_map(|p| p.strip_prefix("existingFieldRemoval: removed field : "))
            .collect();
        if want != got {
            out.push(format!("expected removed fields {want:?}, got {got:?}"));
        }
    }
    out
}

/// The oracle table: `<case id>: <outcome>` and the outcome's further lines indented.
fn golden() -> (PathBuf, BTreeMap<String, String>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/crd-upgrade-upstream.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(more) = line.strip_prefix("  ") {
            let last = out.last_mut().expect("detail line before any case");
            last.1.push_str(more);
            last.1.push('\n');
        } else {
            let (id, outcome) = line.split_once(": ").expect("case line without outcome");
            out.push((id.to_string(), format!("{outcome}\n")));
        }
    }
    (path, out.into_iter().collect())
}

/// A report in the oracle table's form: `safe`, or the head and the problems sorted, one a
/// line, with the names in `new required fields: [..]` sorted (both random upstream).
fn table_form(r: &UpgradeReport) -> String {
    if r.is_safe() {
        return "safe\n".to_string();
    }
    let mut lines: Vec<String> = r.errors.iter().map(|e| sort_required_lists(e)).collect();
    lines.sort_unstable();
    format!(
        "unsafe: validating upgrade for CRD \"{}\":\n{}\n",
        r.crd_name,
        lines.join("\n")
    )
}

fn sort_required_lists(s: &str) -> String {
    const KEY: &str = "new required fields: [";
    let Some(i) = s.find(KEY) else {
        return s.to_string();
    };
    let (head, tail) = s.split_at(i + KEY.len());
    let end = tail.find(']').unwrap_or(tail.len());
    let mut names: Vec<&str> = tail[..end].split_whitespace().collect();
    names.sort_unstable();
    format!("{head}{}{}", names.join(" "), &tail[end..])
}

/// Every vector, olm's verdict and words against what operator-controller's preflight said.
#[test]
fn upstream_vectors_match_operator_controller() {
    let (path, want) = golden();
    let cases = cases();
    assert_eq!(
        cases.len(),
        want.len(),
        "cases.json and the golden table list different cases: remake the table"
    );
    let results: Vec<(String, String, String)> = cases
        .iter()
        .map(|c| {
            let w = want
                .get(&c.id)
                .unwrap_or_else(|| panic!("{}: not in the golden table", c.id));
            (
                c.id.clone(),
                table_form(&check_upgrade(&c.old, &c.new)),
                w.clone(),
            )
        })
        .collect();
    oracle::assert_matches(&path, "upstream CRD upgrade vectors", &results);
}

/// Every vector against what upstream's own test expects of it, on olm's report.
#[test]
fn olm_meets_upstream_test_expectations() {
    let mut failures = Vec::new();
    let mut per_source: BTreeMap<&str, usize> = BTreeMap::new();
    let cases = cases();
    for c in &cases {
        *per_source.entry(&c.source).or_default() += 1;
        for u in unmet(&c.spec, &Outcome::of(&check_upgrade(&c.old, &c.new))) {
            failures.push(format!("{}: {u}", c.id));
        }
    }
    for (source, n) in &per_source {
        eprintln!("{n:3} vectors from {source}");
    }
    assert!(cases.len() >= 100, "only {} vectors", cases.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The same expectations on the oracle's outcomes: a vector carried over wrongly (a CRD that
/// does not say what upstream's Go value said) shows up here. A crash is not an outcome
/// upstream's test could expect, and is left to the known differences.
#[test]
fn the_oracle_meets_upstream_test_expectations() {
    let (_, want) = golden();
    let mut failures = Vec::new();
    for c in cases() {
        let Some(outcome) = Outcome::parse(&want[&c.id]) else {
            continue;
        };
        for u in unmet(&c.spec, &outcome) {
            failures.push(format!("{}: {u}", c.id));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
