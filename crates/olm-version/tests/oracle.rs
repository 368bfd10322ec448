//! Checks olm-version against the table `tools/oracle` wrote by running the real Go libraries
//! (Masterminds/semver v3.5.0 and blang/semver v4.0.0) over the same inputs.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use olm_version::{blang, is_valid_version_range, masterminds};
use serde::Deserialize;

#[derive(Deserialize)]
struct Table {
    masterminds_versions: Vec<MmVersion>,
    masterminds_compare: Vec<Compare>,
    masterminds_constraints: Vec<MmConstraint>,
    blang_versions: Vec<BlangVersion>,
    blang_compare: Vec<Compare>,
    blang_ranges: Vec<BlangRange>,
}

#[derive(Deserialize)]
struct MmVersion {
    input: String,
    parsed: Option<String>,
    error: Option<String>,
    strict_ok: bool,
    strict_error: Option<String>,
}

#[derive(Deserialize)]
struct Compare {
    a: String,
    b: String,
    cmp: i32,
}

#[derive(Deserialize)]
struct MmCheck {
    version: String,
    check: bool,
    validate_errors: Vec<String>,
}

#[derive(Deserialize)]
struct MmConstraint {
    constraint: String,
    error: Option<String>,
    string: Option<String>,
    crd_valid: bool,
    checks: Option<Vec<MmCheck>>,
}

#[derive(Deserialize)]
struct BlangVersion {
    input: String,
    parsed: Option<String>,
    error: Option<String>,
    tolerant: Option<String>,
    tolerant_error: Option<String>,
}

#[derive(Deserialize)]
struct BlangCheck {
    version: String,
    matches: bool,
}

#[derive(Deserialize)]
struct BlangRange {
    range: String,
    error: Option<String>,
    checks: Option<Vec<BlangCheck>>,
}

fn table() -> Table {
    let raw = include_str!("data/oracle.json");
    serde_json::from_str(raw).expect("oracle table parses")
}

fn ord(c: i32) -> std::cmp::Ordering {
    c.cmp(&0)
}

/// Collects every mismatch so one run shows them all.
#[derive(Default)]
struct Failures(Vec<String>);

impl Failures {
    fn check<T: PartialEq + std::fmt::Debug>(&mut self, what: &str, got: T, want: T) {
        if got != want {
            self.0.push(format!("{what}: got {got:?}, want {want:?}"));
        }
    }

    /// Checks a parse outcome against the table: what it prints when it parsed (`want_ok`), the
    /// error text when it did not (`want_err`).
    fn outcome<T: ToString, E: ToString>(
        &mut self,
        what: &str,
        got: &Result<T, E>,
        want_ok: &Option<String>,
        want_err: &Option<String>,
    ) {
        self.check(
            what,
            got.as_ref().ok().map(ToString::to_string),
            want_ok.clone(),
        );
        self.check(
            &format!("{what} error"),
            got.as_ref().err().map(ToString::to_string),
            want_err.clone(),
        );
    }

    fn assert_none(self, total: usize) {
        assert!(
            self.0.is_empty(),
            "{} of {total} cases differ:\n{}",
            self.0.len(),
            self.0.join("\n")
        );
    }
}

#[test]
fn masterminds_versions() {
    let t = table();
    let mut f = Failures::default();
    for c in &t.masterminds_versions {
        let got = masterminds::Version::parse(&c.input);
        f.outcome(&format!("parse {:?}", c.input), &got, &c.parsed, &c.error);
        let strict = masterminds::Version::parse_strict(&c.input);
        f.check(
            &format!("strict {:?}", c.input),
            strict.is_ok(),
            c.strict_ok,
        );
        f.check(
            &format!("strict error {:?}", c.input),
            strict.err().map(|e| e.to_string()),
            c.strict_error.clone(),
        );
    }
    f.assert_none(t.masterminds_versions.len());
}

/// Checks every ordered pair of a comparison table with `parse`.
fn compare_all<V: Ord, E: std::fmt::Debug>(cases: &[Compare], parse: fn(&str) -> Result<V, E>) {
    let mut f = Failures::default();
    for c in cases {
        let (a, b) = (parse(&c.a).unwrap(), parse(&c.b).unwrap());
        f.check(&format!("{} <=> {}", c.a, c.b), a.cmp(&b), ord(c.cmp));
    }
    f.assert_none(cases.len());
}

#[test]
fn masterminds_compare() {
    compare_all(&table().masterminds_compare, masterminds::Version::parse);
}

#[test]
fn masterminds_constraints() {
    let t = table();
    let mut f = Failures::default();
    let mut total = 0;
    for c in &t.masterminds_constraints {
        total += 1;
        let parsed = masterminds::Constraints::parse(&c.constraint);
        let name = format!("{:?}", c.constraint);
        f.outcome(&name, &parsed, &c.string, &c.error);
        let Ok(cs) = parsed else { continue };
        for check in c.checks.iter().flatten() {
            total += 1;
            let v = masterminds::Version::parse(&check.version).unwrap();
            f.check(
                &format!("{name} matches {}", check.version),
                cs.matches(&v),
                check.check,
            );
            let reasons = cs.validate(&v).err().unwrap_or_default();
            f.check(
                &format!("{name} validate {}", check.version),
                reasons,
                check.validate_errors.clone(),
            );
        }
    }
    f.assert_none(total);
}

/// Our admission pattern is upstream's with its typos fixed; these are all the table's strings on
/// which the two disagree, each because of a typo.
const CRD_DEVIATIONS: &[&str] = &["1.*]", "^1 || *]", "1.2.3 || *", "1.2.* || 2.3.*"];

#[test]
fn crd_admission() {
    let t = table();
    let mut f = Failures::default();
    for c in &t.masterminds_constraints {
        let want = c.crd_valid != CRD_DEVIATIONS.contains(&c.constraint.as_str());
        f.check(
            &format!("admit {:?}", c.constraint),
            is_valid_version_range(&c.constraint),
            want,
        );
    }
    f.assert_none(t.masterminds_constraints.len());
}

#[test]
fn blang_versions() {
    let t = table();
    let mut f = Failures::default();
    for c in &t.blang_versions {
        let got = blang::Version::parse(&c.input);
        f.outcome(&format!("parse {:?}", c.input), &got, &c.parsed, &c.error);
        let tol = blang::Version::parse_tolerant(&c.input);
        f.outcome(
            &format!("tolerant {:?}", c.input),
            &tol,
            &c.tolerant,
            &c.tolerant_error,
        );
    }
    f.assert_none(t.blang_versions.len());
}

#[test]
fn blang_compare() {
    compare_all(&table().blang_compare, blang::Version::parse);
}

#[test]
fn blang_ranges() {
    let t = table();
    let mut f = Failures::default();
    let mut total = 0;
    for c in &t.blang_ranges {
        total += 1;
        let parsed = blang::Range::parse(&c.range);
        let name = format!("{:?}", c.range);
        f.check(
            &format!("error {name}"),
            parsed.as_ref().err().map(ToString::to_string),
            c.error.clone(),
        );
        let Ok(r) = parsed else { continue };
        for check in c.checks.iter().flatten() {
            total += 1;
            let v = blang::Version::parse(&check.version).unwrap();
            f.check(
                &format!("{name} matches {}", check.version),
                r.matches(&v),
                check.matches,
            );
        }
    }
    f.assert_none(total);
}
