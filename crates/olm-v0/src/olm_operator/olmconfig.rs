//! `OLMConfig cluster` (OLM repo `pkg/controller/operators/olm/operator.go` `syncOLMConfig`,
//! `getCopiedCSVEvaluatorFunc`, `getCopiedCSVsCondition`): whether each AllNamespaces operator
//! has the copies it should, and the `DisabledCopiedCSVs` condition that reports it.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use olm_v0_api::v1alpha1::ClusterServiceVersionPhase as Phase;

/// The condition type.
pub const DISABLED_COPIED_CSVS: &str = "DisabledCopiedCSVs";

/// Whether an AllNamespaces CSV's copies (the namespaces holding one) are as they should be:
/// with copies enabled, one in every active namespace but the operator's own; disabled, exactly
/// one in each protected namespace (`--protectedCopiedCSVNamespaces`) and nowhere else.
pub fn copies_as_expected(
    enabled: bool,
    active_namespaces: usize,
    protected: &BTreeSet<String>,
    copies: &BTreeSet<String>,
) -> bool {
    if enabled {
        copies.len() + 1 == active_namespaces
    } else {
        copies == protected
    }
}

/// `(status, reason, message)` of the `DisabledCopiedCSVs` condition, given whether copies are
/// enabled and whether some CSV's copies were not as expected.
pub fn condition(enabled: bool, some_mismatch: bool) -> (&'static str, &'static str, &'static str) {
    match (enabled, some_mismatch) {
        (true, false) => (
            "False",
            "CopiedCSVsEnabled",
            "Copied CSVs are enabled and present across the cluster",
        ),
        (true, true) => (
            "False",
            "CopiedCSVsEnabled",
            "Copied CSVs are enabled and at least one copied CSVs is missing",
        ),
        (false, true) => (
            "False",
            "CopiedCSVsDisabled",
            "Copied CSVs are disabled and at least one unexpected copied CSV was found for an operator installed in AllNamespace mode",
        ),
        (false, false) => (
            "True",
            "CopiedCSVsDisabled",
            "Copied CSVs are disabled and no unexpected copied CSVs were found for operators installed in AllNamespace mode",
        ),
    }
}

/// One CSV as the report reads it.
#[derive(Debug, Clone)]
pub struct Operator<'a> {
    /// Its namespace.
    pub namespace: &'a str,
    /// Its name.
    pub name: &'a str,
    /// Whether it is installed in AllNamespaces mode (its `olm.targetNamespaces` is empty).
    pub all_namespaces: bool,
    /// Its phase.
    pub phase: Option<&'a Phase>,
}

/// The `DisabledCopiedCSVs` condition to write on `OLMConfig cluster`, or none when `current`
/// says the same (upstream's `syncOLMConfig`): whether every settled (`Succeeded` or `Failed`)
/// AllNamespaces operator has a copy in each of the other `active_namespaces` (copies
/// `enabled`) or none, its copies' namespaces read with `copies_of(namespace, name)` (only
/// for those operators: at 10,000 namespaces a copy set is large); the transition time kept
/// while the status stays, `now` otherwise.
pub fn conclude(
    enabled: bool,
    active_namespaces: usize,
    operators: &[Operator<'_>],
    copies_of: impl Fn(&str, &str) -> BTreeSet<String>,
    current: Option<&Condition>,
    generation: Option<i64>,
    now: &Time,
) -> Option<Condition> {
    let mismatch = operators
        .iter()
        .filter(|o| o.all_namespaces && matches!(o.phase, Some(Phase::Succeeded | Phase::Failed)))
        .any(|o| {
            let copies = copies_of(o.namespace, o.name);
            !copies_as_expected(enabled, active_namespaces, &BTreeSet::new(), &copies)
        });
    let (status, reason, message) = condition(enabled, mismatch);
    if current.is_some_and(|c| c.status == status && c.reason == reason && c.message == message) {
        return None;
    }
    let since = match current {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => now.clone(),
    };
    Some(Condition {
        type_: DISABLED_COPIED_CSVS.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: message.to_owned(),
        last_transition_time: since,
        observed_generation: generation,
    })
}

/// `spec.features.packageServerSyncInterval`: the CRD's pattern `^([0-9]+(\.[0-9]+)?(s|m|h))+$`
/// (a Go duration of hours, minutes and seconds); `None` when it does not match. Default 12h.
pub fn package_server_sync_interval(text: Option<&str>) -> Option<std::time::Duration> {
    let Some(text) = text else {
        return Some(std::time::Duration::from_secs(12 * 3600));
    };
    let mut total = 0f64;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, tail) = rest.split_at(digits);
        let valid = !number.is_empty()
            && !number.starts_with('.')
            && !number.ends_with('.')
            && number.matches('.').count() <= 1;
        let unit = match tail.chars().next() {
            Some('s') => 1.0,
            Some('m') => 60.0,
            Some('h') => 3600.0,
            _ => return None,
        };
        if !valid {
            return None;
        }
        total += number.parse::<f64>().ok()? * unit;
        rest = &tail[1..];
    }
    Some(std::time::Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(s: &str) -> Time {
        Time(s.parse().unwrap())
    }

    /// Upstream's syncOLMConfig cases: (copies enabled, operators as (all namespaces, phase,
    /// copies), the current condition's status, what is written as (status, reason, since)).
    #[test]
    fn the_report_is_written_when_it_changes() {
        let ns = |v: &[&str]| -> BTreeSet<String> { v.iter().map(|s| (*s).to_owned()).collect() };
        let current = |status: &str, reason: &str, message: &str| Condition {
            type_: DISABLED_COPIED_CSVS.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            last_transition_time: time("2026-01-01T00:00:00Z"),
            observed_generation: Some(1),
        };
        let now = time("2026-12-07T10:00:00Z");
        let (ok, missing) = (
            "Copied CSVs are enabled and present across the cluster",
            "Copied CSVs are enabled and at least one copied CSVs is missing",
        );
        type Case<'a> = (
            bool,
            Vec<(bool, Phase, BTreeSet<String>)>,
            Option<Condition>,
            Option<(&'a str, &'a str, &'a str)>,
        );
        let cases: Vec<Case<'_>> = vec![
            // Every copy there (3 namespaces: the operator's and two others): enabled, no mismatch.
            (
                true,
                vec![(true, Phase::Succeeded, ns(&["a", "b"]))],
                None,
                Some(("False", "CopiedCSVsEnabled", "2026-12-07T10:00:00Z")),
            ),
            // Already said: nothing written.
            (
                true,
                vec![(true, Phase::Succeeded, ns(&["a", "b"]))],
                Some(current("False", "CopiedCSVsEnabled", ok)),
                None,
            ),
            // One missing: the message changes, the status (False) and its time stay.
            (
                true,
                vec![(true, Phase::Succeeded, ns(&["a"]))],
                Some(current("False", "CopiedCSVsEnabled", ok)),
                Some(("False", "CopiedCSVsEnabled", "2026-01-01T00:00:00Z")),
            ),
            // Not settled, or not AllNamespaces: not counted.
            (
                true,
                vec![
                    (true, Phase::Installing, ns(&[])),
                    (false, Phase::Succeeded, ns(&[])),
                ],
                Some(current("False", "CopiedCSVsEnabled", missing)),
                Some(("False", "CopiedCSVsEnabled", "2026-01-01T00:00:00Z")),
            ),
            // Disabled and none left: True, a new transition time.
            (
                false,
                vec![(true, Phase::Failed, ns(&[]))],
                Some(current("False", "CopiedCSVsEnabled", ok)),
                Some(("True", "CopiedCSVsDisabled", "2026-12-07T10:00:00Z")),
            ),
            // Disabled with a copy left: False.
            (
                false,
                vec![(true, Phase::Succeeded, ns(&["a"]))],
                None,
                Some(("False", "CopiedCSVsDisabled", "2026-12-07T10:00:00Z")),
            ),
        ];
        for (enabled, operators, current, want) in cases {
            let names: Vec<String> = (0..operators.len()).map(|i| format!("op{i}")).collect();
            let views: Vec<Operator<'_>> = operators
                .iter()
                .zip(&names)
                .map(|((all, phase, _), name)| Operator {
                    namespace: "ops",
                    name,
                    all_namespaces: *all,
                    phase: Some(phase),
                })
                .collect();
            let copies_of = |_: &str, name: &str| {
                let i = names.iter().position(|n| n == name).unwrap();
                operators[i].2.clone()
            };
            let got = conclude(
                enabled,
                3,
                &views,
                copies_of,
                current.as_ref(),
                Some(2),
                &now,
            );
            let got = got.as_ref().map(|c| {
                assert_eq!(c.observed_generation, Some(2));
                (
                    c.status.as_str(),
                    c.reason.as_str(),
                    c.last_transition_time.0.to_string(),
                )
            });
            let want = want.map(|(s, r, t)| (s, r, t.to_owned()));
            assert_eq!(
                got.as_ref().map(|(s, r, t)| (*s, *r, t.as_str())),
                want.as_ref().map(|(s, r, t)| (*s, *r, t.as_str()))
            );
        }
    }

    fn set(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn copies_and_the_condition() {
        assert!(copies_as_expected(true, 3, &set(&[]), &set(&["a", "b"])));
        assert!(!copies_as_expected(true, 4, &set(&[]), &set(&["a", "b"])));
        assert!(copies_as_expected(false, 4, &set(&["p"]), &set(&["p"])));
        assert!(!copies_as_expected(
            false,
            4,
            &set(&["p"]),
            &set(&["p", "a"])
        ));
        assert_eq!(condition(false, false).0, "True");
        assert_eq!(
            condition(true, true).2,
            "Copied CSVs are enabled and at least one copied CSVs is missing"
        );
    }

    #[test]
    fn sync_interval_as_the_crd_pattern_allows() {
        use std::time::Duration;
        assert_eq!(
            package_server_sync_interval(None),
            Some(Duration::from_secs(43200))
        );
        assert_eq!(
            package_server_sync_interval(Some("1h30m")),
            Some(Duration::from_secs(5400))
        );
        assert_eq!(
            package_server_sync_interval(Some("1.5h")),
            Some(Duration::from_secs(5400))
        );
        assert_eq!(
            package_server_sync_interval(Some("90s")),
            Some(Duration::from_secs(90))
        );
        for bad in ["", "10", "1d", "h", "1.h", ".5h", "1ms", "-1h"] {
            assert_eq!(package_server_sync_interval(Some(bad)), None, "{bad}");
        }
    }
}
