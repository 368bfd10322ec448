//! Comparing olm with a table an upstream tool made (`tools/oracles/`), allowing for the
//! differences we know of and have not fixed yet.
//!
//! Known differences live next to the table, in `<table>.known.txt`, one `<case>: <reason>` per
//! line, so that remaking the table with the oracle never loses them. A listed case must still
//! differ (a fixed one has to leave the list) and must still be in the table.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;

/// `<case>: <reason>` lines of the known-differences file beside `table` (none if absent).
fn known(table: &Path) -> BTreeMap<String, String> {
    let file = table.with_extension("known.txt");
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (case, reason) = l
                .split_once(": ")
                .unwrap_or_else(|| panic!("{}: no reason in {l:?}", file.display()));
            (case.to_string(), reason.to_string())
        })
        .collect()
}

/// Checks `(case, olm's outcome, the oracle's outcome)` triples against `table`'s known
/// differences and panics with every unexpected difference, fixed known difference and stale
/// entry; prints how many cases agree.
pub fn assert_matches(table: &Path, what: &str, results: &[(String, String, String)]) {
    let mut known = known(table);
    let mut failures = Vec::new();
    let mut accepted = 0;
    for (case, got, want) in results {
        let reason = known.remove(case);
        match (got == want, reason) {
            (true, None) => {}
            (true, Some(_)) => failures.push(format!(
                "{case}: now identical to the oracle: remove it from the known differences"
            )),
            (false, Some(_)) => accepted += 1,
            (false, None) => failures.push(format!(
                "{case}:\n  olm:\n    {}\n  oracle:\n    {}",
                got.trim_end().replace('\n', "\n    "),
                want.trim_end().replace('\n', "\n    ")
            )),
        }
    }
    for case in known.keys() {
        failures.push(format!(
            "{case}: listed as a known difference but not in the table"
        ));
    }
    eprintln!(
        "{what}: {} of {} cases identical to the oracle, {accepted} known differences",
        results.len() - accepted - failures.len(),
        results.len()
    );
    assert!(
        failures.is_empty(),
        "{what}: {} unexpected results:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
