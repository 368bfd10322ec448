//! The state of each Subscription on the way to OLM v1 (library-olm `scan.go`
//! `ScanSubscription`, `ScanAllSubscriptionsWithOptions`, `PrintScanSummary`): `Conflict` when
//! both it and a ClusterExtension migrated from it exist, `AlreadyMigrated` when only the
//! ClusterExtension does, `Ineligible` when a check failed, `Eligible` otherwise.

use serde::Serialize;

use crate::checks::CheckResult;

/// Where a Subscription stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum State {
    /// The Subscription and a ClusterExtension migrated from it both exist.
    Conflict,
    /// A check failed, or checking failed.
    Ineligible,
    /// Its ClusterExtension exists and the Subscription is gone.
    AlreadyMigrated,
    /// Every check passed.
    Eligible,
}

impl State {
    /// The name as upstream prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Conflict => "Conflict",
            State::Ineligible => "Ineligible",
            State::AlreadyMigrated => "AlreadyMigrated",
            State::Eligible => "Eligible",
        }
    }
}

/// One Subscription's (or orphaned ClusterExtension's) result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScanResult {
    /// The Subscription's namespace (empty for an [`State::AlreadyMigrated`] extension).
    pub namespace: String,
    /// The Subscription's name, or the extension's for [`State::AlreadyMigrated`].
    pub name: String,
    /// The package.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub package: String,
    /// The installed version, when known.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// The state.
    pub status: State,
    /// Why, in upstream's words.
    pub reason: String,
    /// Every check run, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckResult>,
    /// What a user should know though nothing failed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// For [`State::AlreadyMigrated`]: the Subscription (`namespace/name`) it came from.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub migrated_from: String,
}

impl ScanResult {
    /// The checks that failed, in order.
    pub fn failed(&self) -> impl Iterator<Item = &CheckResult> {
        self.checks.iter().filter(|c| !c.passed)
    }
}

/// What is known of one Subscription when its state is decided.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its package.
    pub package: String,
    /// The installed version, when the CSV was read.
    pub version: String,
    /// The ClusterExtension annotated as migrated from it, if any.
    pub migrated_to: Option<String>,
    /// The checks, in order: readiness, compatibility, then the catalog ones.
    pub checks: Vec<CheckResult>,
    /// An error that stopped checking (reading the CSV, say), in the scan's words.
    pub error: Option<String>,
    /// Whether [`crate::checks::catalog_availability`] failed (a failed check among `checks`).
    pub catalog_missing: bool,
    /// Warnings for an eligible operator (others may depend on it).
    pub warnings: Vec<String>,
}

/// How the Subscription was named: one by name, or all of them (`--all`); upstream's reasons
/// differ between the two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `check SUB -n NS`.
    One,
    /// `check --all`.
    All,
}

/// The state of a Subscription that exists.
pub fn decide(observed: Observed, scope: Scope) -> ScanResult {
    let (status, reason) = if let Some(ce) = &observed.migrated_to {
        (
            State::Conflict,
            match scope {
                Scope::One => format!(
                    "both Subscription and annotated ClusterExtension {ce} exist; resolve with cleanup or rollback"
                ),
                Scope::All => "both Subscription and annotated ClusterExtension exist; resolve with cleanup or rollback".to_owned(),
            },
        )
    } else if let Some(e) = &observed.error {
        (State::Ineligible, e.clone())
    } else if observed.catalog_missing {
        (
            State::Ineligible,
            format!(
                "package {} not found in any serving ClusterCatalog",
                olm_goenc::quote(&observed.package)
            ),
        )
    } else {
        let failed = observed.checks.iter().filter(|c| !c.passed).count();
        if failed > 0 {
            (State::Ineligible, format!("{failed} check(s) failed"))
        } else {
            (
                State::Eligible,
                "passes all readiness, compatibility, and catalog-availability checks".to_owned(),
            )
        }
    };
    // A conflict's checks were not run (upstream reports none).
    let checks = if status == State::Conflict {
        Vec::new()
    } else {
        observed.checks
    };
    let warnings = if status == State::Eligible {
        observed.warnings
    } else {
        Vec::new()
    };
    ScanResult {
        namespace: observed.namespace,
        name: observed.name,
        package: observed.package,
        version: observed.version,
        status,
        reason,
        checks,
        warnings,
        migrated_from: String::new(),
    }
}

/// A ClusterExtension migrated from a Subscription (`from`, `namespace/name`) that no longer
/// exists.
pub fn already_migrated(extension: &str, package: &str, from: &str) -> ScanResult {
    ScanResult {
        migrated_from: from.to_owned(),
        namespace: String::new(),
        name: extension.to_owned(),
        package: package.to_owned(),
        version: String::new(),
        status: State::AlreadyMigrated,
        reason: format!(
            "ClusterExtension {extension} exists with migrated-from-subscription annotation; Subscription is gone"
        ),
        checks: Vec::new(),
        warnings: Vec::new(),
    }
}

/// The warning for an operator other installed operators depend on (upstream's
/// `findDependents`), or `None` when none does. `dependents` are `namespace/name` of the
/// Subscriptions whose installed CSV requires `package`.
pub fn dependents_warning(package: &str, dependents: &[String]) -> Option<String> {
    (!dependents.is_empty()).then(|| {
        format!(
            "other operator(s) may depend on package {}: [{}] — verify they remain functional after migration",
            olm_goenc::quote(package),
            dependents.join(" ")
        )
    })
}

/// One Subscription's checks as `olm migrate check SUB` prints them (upstream's
/// `checkStart`/`checkResult`, without colours): every check with `✓` or `✗`, its name padded
/// to 35 columns and its message, then the verdict and each warning.
pub fn report(result: &ScanResult) -> String {
    use std::fmt::Write as _;
    let mut out = format!(
        "Pre-migration checks for {}/{}
",
        result.namespace, result.name
    );
    for c in &result.checks {
        let mark = if c.passed { '✓' } else { '✗' };
        let _ = writeln!(out, "  {mark} {:<35} {}", c.name, c.message);
    }
    if result.status == State::Eligible {
        let _ = writeln!(out, "  ✓ {}", result.reason);
    } else {
        let _ = writeln!(out, "  ✗ {}: {}", result.status.as_str(), result.reason);
    }
    for w in &result.warnings {
        let _ = writeln!(out, "  ⚠  {w}");
    }
    out
}

/// `--all`'s summary (upstream's `PrintScanSummary`): the results grouped Conflict,
/// Ineligible, AlreadyMigrated, Eligible (empty groups left out), each under
/// `=== State (n) ===`. Within a group the results keep their order (the caller sorts them;
/// upstream's AlreadyMigrated order is Go map order, this one is by name).
pub fn summary(results: &[ScanResult]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for state in [
        State::Conflict,
        State::Ineligible,
        State::AlreadyMigrated,
        State::Eligible,
    ] {
        let group: Vec<&ScanResult> = results.iter().filter(|r| r.status == state).collect();
        if group.is_empty() {
            continue;
        }
        let _ = write!(out, "\n=== {} ({}) ===\n", state.as_str(), group.len());
        for r in group {
            match state {
                State::Conflict => {
                    let _ = writeln!(
                        out,
                        "  ⚠️  {}/{} — CONFLICT: {}",
                        r.namespace, r.name, r.reason
                    );
                }
                State::Ineligible => {
                    let _ = write!(out, "  ✗ {}/{}", r.namespace, r.name);
                    let failed: Vec<&CheckResult> = r.failed().collect();
                    for c in &failed {
                        let _ = write!(out, "\n      [{}] {}", c.name, c.message);
                    }
                    if failed.is_empty() {
                        // Checking itself failed.
                        let _ = write!(out, "\n      error: {}", r.reason);
                    }
                    out.push('\n');
                }
                State::AlreadyMigrated => {
                    let _ = writeln!(
                        out,
                        "  ✓ ClusterExtension {} (migrated from {}) (already migrated)",
                        r.name, r.migrated_from
                    );
                }
                State::Eligible => {
                    let _ = writeln!(out, "  ✓ {}/{} ({})", r.namespace, r.name, r.package);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(checks: Vec<CheckResult>) -> Observed {
        Observed {
            namespace: "ops".into(),
            name: "etcd".into(),
            package: "etcd".into(),
            version: "0.9.4".into(),
            checks,
            ..Observed::default()
        }
    }

    fn check(name: &str, passed: bool, message: &str) -> CheckResult {
        CheckResult {
            name: name.into(),
            passed,
            message: message.into(),
        }
    }

    /// library-olm `scan.go`: the states' reasons, single and `--all`, and `PrintScanSummary`.
    #[test]
    fn states_and_the_summary_read_as_upstreams() {
        let eligible = decide(
            Observed {
                warnings: vec![
                    dependents_warning("etcd", &["apps/backup".into()]).expect("warning"),
                ],
                ..observed(vec![check("Installed CSV", true, "etcd.v0.9.4")])
            },
            Scope::All,
        );
        assert_eq!(eligible.status, State::Eligible);
        assert_eq!(
            eligible.reason,
            "passes all readiness, compatibility, and catalog-availability checks"
        );
        assert_eq!(
            eligible.warnings,
            [
                "other operator(s) may depend on package \"etcd\": [apps/backup] — verify they remain functional after migration"
            ]
        );
        assert_eq!(dependents_warning("etcd", &[]), None);

        let conflict = |scope| {
            decide(
                Observed {
                    migrated_to: Some("etcd-ce".into()),
                    ..observed(vec![check("Installed CSV", false, "no installedCSV set")])
                },
                scope,
            )
        };
        assert_eq!(
            conflict(Scope::One).reason,
            "both Subscription and annotated ClusterExtension etcd-ce exist; resolve with cleanup or rollback"
        );
        let all = conflict(Scope::All);
        assert_eq!(
            all.reason,
            "both Subscription and annotated ClusterExtension exist; resolve with cleanup or rollback"
        );
        assert!(all.checks.is_empty());

        let two_failed = decide(
            observed(vec![
                check("Subscription state", false, "must be …"),
                check("Installed CSV", true, "etcd.v0.9.4"),
                check("No APIService definitions", false, "CSV has …"),
            ]),
            Scope::All,
        );
        assert_eq!(
            (two_failed.status, two_failed.reason.as_str()),
            (State::Ineligible, "2 check(s) failed")
        );
        let missing = decide(
            Observed {
                catalog_missing: true,
                ..observed(vec![check(
                    "Catalog availability",
                    false,
                    "No ClusterCatalog …",
                )])
            },
            Scope::One,
        );
        assert_eq!(
            missing.reason,
            "package \"etcd\" not found in any serving ClusterCatalog"
        );
        let broken = decide(
            Observed {
                error: Some("failed to get CSV: forbidden".into()),
                ..observed(Vec::new())
            },
            Scope::All,
        );
        let gone = already_migrated("cert-manager", "cert-manager", "ops/cert-manager");
        assert_eq!(
            gone.reason,
            "ClusterExtension cert-manager exists with migrated-from-subscription annotation; Subscription is gone"
        );
        let mut eligible_b = eligible.clone();
        eligible_b.name = "argocd".into();
        eligible_b.package = "argocd-operator".into();
        assert_eq!(
            summary(&[eligible, two_failed, all, gone, broken, eligible_b]),
            "\n=== Conflict (1) ===\n  ⚠️  ops/etcd — CONFLICT: both Subscription and annotated ClusterExtension exist; resolve with cleanup or rollback\n\
             \n=== Ineligible (2) ===\n  ✗ ops/etcd\n      [Subscription state] must be …\n      [No APIService definitions] CSV has …\n  ✗ ops/etcd\n      error: failed to get CSV: forbidden\n\
             \n=== AlreadyMigrated (1) ===\n  ✓ ClusterExtension cert-manager (migrated from ops/cert-manager) (already migrated)\n\
             \n=== Eligible (2) ===\n  ✓ ops/etcd (etcd)\n  ✓ ops/argocd (argocd-operator)\n"
        );
        assert_eq!(
            report(&missing),
            format!(
                "Pre-migration checks for ops/etcd\n  ✗ {:<35} No ClusterCatalog …\n  ✗ Ineligible: package \"etcd\" not found in any serving ClusterCatalog\n",
                "Catalog availability"
            )
        );
    }
}
