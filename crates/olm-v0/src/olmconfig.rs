//! `OLMConfig cluster` (OLM repo `pkg/controller/operators/olm/operator.go` `syncOLMConfig`,
//! `getCopiedCSVEvaluatorFunc`, `getCopiedCSVsCondition`): whether each AllNamespaces operator
//! has the copies it should, and the `DisabledCopiedCSVs` condition that reports it.

use std::collections::BTreeSet;

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
