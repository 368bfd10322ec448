//! Properties the two dialects must keep on any input: the documented expansions of `~`, `^`,
//! wildcards and hyphen ranges hold for every version, parsing never panics, printing and parsing
//! round-trip, and ordering is a total order.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use olm_version::{blang, is_valid_version_range, masterminds};
use proptest::prelude::*;

fn mm(c: &str) -> masterminds::Constraints {
    masterminds::Constraints::parse(c).unwrap_or_else(|e| panic!("{c}: {e}"))
}

fn mv(s: &str) -> masterminds::Version {
    masterminds::Version::parse(s).unwrap()
}

/// Every example of the ClusterExtension API documentation, with the range it is documented to
/// equal; both sides must agree on every version of a dense grid (prereleases included).
const DOCUMENTED: &[(&str, &str)] = &[
    ("1.2.x", ">=1.2.0, <1.3.0"),
    ("1.2.X", ">=1.2.0, <1.3.0"),
    ("1.2.*", ">=1.2.0, <1.3.0"),
    (">= 1.2.x", ">= 1.2.0"),
    (">= 1.2.X", ">= 1.2.0"),
    (">= 1.2.*", ">= 1.2.0"),
    ("<= 2.x", "< 3"),
    ("<= 2.X", "< 3"),
    ("<= 2.*", "< 3"),
    ("x", ">= 0.0.0"),
    ("X", ">= 0.0.0"),
    ("*", ">= 0.0.0"),
    ("~1.2.3", ">=1.2.3, <1.3.0"),
    ("~1", ">=1, <2"),
    ("~1.x", ">=1, <2"),
    ("~2.3", ">=2.3, <2.4"),
    ("~1.2.x", ">=1.2.0, <1.3.0"),
    ("^1.2.3", ">=1.2.3, <2.0.0"),
    ("^1.2.x", ">=1.2.0, <2.0.0"),
    ("^2.3", ">=2.3, <3"),
    ("^2.x", ">=2.0.0, <3"),
    ("^0.2.3", ">=0.2.3, <0.3.0"),
    ("^0.2", ">=0.2.0, <0.3.0"),
    ("^0.0.3", ">=0.0.3, <0.0.4"),
    ("^0.0", ">=0.0.0, <0.1.0"),
    ("^0", ">=0.0.0, <1.0.0"),
    ("0.6.0", "=0.6.0"),
    ("1.2 - 1.4.5", ">=1.2, <=1.4.5"),
    (">=1.2.3, <2.0.0 || >3.0.0", ">=1.2.3 <2.0.0 || >3.0.0"),
    (
        "^0 || ^3 || ^5",
        ">=0.0.0 <1.0.0 || >=3.0.0 <4.0.0 || >=5.0.0 <6.0.0",
    ),
];

fn grid() -> Vec<masterminds::Version> {
    let mut out = Vec::new();
    for major in 0..7 {
        for minor in 0..7 {
            for patch in 0..6 {
                out.push(mv(&format!("{major}.{minor}.{patch}")));
                out.push(mv(&format!("{major}.{minor}.{patch}-alpha.1")));
            }
        }
    }
    out
}

#[test]
fn documented_examples_equal_their_expansion() {
    let versions = grid();
    for (short, long) in DOCUMENTED {
        let (a, b) = (mm(short), mm(long));
        for v in &versions {
            assert_eq!(a.matches(v), b.matches(v), "{short:?} vs {long:?} on {v}");
        }
        assert!(
            is_valid_version_range(short) || short.contains(" - "),
            "{short:?} should be admitted"
        );
    }
    // Pinned versions match only themselves.
    let pinned = mm("0.6.0");
    assert_eq!(versions.iter().filter(|v| pinned.matches(v)).count(), 1);
}

#[test]
fn prerelease_rule_is_per_and_group() {
    let v = mv("1.5.0-alpha");
    assert!(!mm(">=1.2.3").matches(&v));
    assert!(mm(">=1.2.3-0").matches(&v));
    // The prerelease in the second group does not open the first group to prereleases.
    assert!(!mm(">=1.2.3 || =2.0.0-rc.1").matches(&v));
    assert!(mm(">=1.0.0-0, <2.0.0").matches(&v));
    assert_eq!(
        mm(">=1.2.3").validate(&v).unwrap_err(),
        vec![
            r#""1.5.0-alpha" is a prerelease version and the constraint is only looking for release versions"#
        ]
    );
}

#[test]
fn blang_does_not_filter_prereleases() {
    let r = blang::Range::parse(">=1.0.0 <2.0.0").unwrap();
    assert!(r.matches(&blang::Version::parse("1.5.0-alpha").unwrap()));
}

fn small() -> impl Strategy<Value = u64> {
    0u64..6
}

fn triple() -> impl Strategy<Value = (u64, u64, u64)> {
    (small(), small(), small())
}

fn version() -> impl Strategy<Value = String> {
    (
        triple(),
        prop::option::of(prop::sample::select(vec![
            "0", "alpha", "alpha.1", "rc.2", "beta",
        ])),
    )
        .prop_map(|((a, b, c), pre)| match pre {
            Some(p) => format!("{a}.{b}.{c}-{p}"),
            None => format!("{a}.{b}.{c}"),
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn caret_is_its_expansion((x, y, z) in triple(), v in version()) {
        let upper = if x > 0 { format!("{}.0.0", x + 1) } else if y > 0 { format!("0.{}.0", y + 1) } else { format!("0.0.{}", z + 1) };
        let v = mv(&v);
        prop_assert_eq!(mm(&format!("^{x}.{y}.{z}")).matches(&v), mm(&format!(">={x}.{y}.{z}, <{upper}")).matches(&v));
    }

    #[test]
    fn tilde_is_its_expansion((x, y, z) in triple(), v in version()) {
        let v = mv(&v);
        if (x, y, z) == (0, 0, 0) {
            // Masterminds' special case: `~0.0.0` accepts every release.
            prop_assert_eq!(mm("~0.0.0").matches(&v), v.prerelease().is_empty());
        } else {
            prop_assert_eq!(mm(&format!("~{x}.{y}.{z}")).matches(&v), mm(&format!(">={x}.{y}.{z}, <{x}.{}.0", y + 1)).matches(&v));
        }
        prop_assert_eq!(mm(&format!("~{x}")).matches(&v), mm(&format!(">={x}.0.0, <{}.0.0", x + 1)).matches(&v));
    }

    #[test]
    fn wildcards_are_their_expansion((x, y, _z) in triple(), v in version(), w in prop::sample::select(vec!["x", "X", "*"])) {
        let v = mv(&v);
        prop_assert_eq!(mm(&format!("{x}.{y}.{w}")).matches(&v), mm(&format!(">={x}.{y}.0, <{x}.{}.0", y + 1)).matches(&v));
        prop_assert_eq!(mm(&format!("<={x}.{w}")).matches(&v), mm(&format!("<{}.0.0", x + 1)).matches(&v));
        prop_assert_eq!(mm(&format!(">={x}.{y}.{w}")).matches(&v), mm(&format!(">={x}.{y}.0")).matches(&v));
    }

    #[test]
    fn hyphen_and_or_compose(a in version(), b in version(), v in version()) {
        let v = mv(&v);
        prop_assert_eq!(mm(&format!("{a} - {b}")).matches(&v), mm(&format!(">={a}, <={b}")).matches(&v));
        prop_assert_eq!(mm(&format!("{a} || {b}")).matches(&v), mm(&a).matches(&v) || mm(&b).matches(&v));
    }

    #[test]
    fn blang_wildcards_and_and((x, y, _z) in triple(), v in version(), a in version(), b in version()) {
        let v = blang::Version::parse(&v).unwrap();
        let r = |s: &str| blang::Range::parse(s).unwrap();
        prop_assert_eq!(r(&format!("{x}.{y}.x")).matches(&v), r(&format!(">={x}.{y}.0 <{x}.{}.0", y + 1)).matches(&v));
        prop_assert_eq!(r(&format!(">{x}.{y}.x")).matches(&v), r(&format!(">={x}.{}.0", y + 1)).matches(&v));
        prop_assert_eq!(r(&format!("<={x}.{y}.x")).matches(&v), r(&format!("<{x}.{}.0", y + 1)).matches(&v));
        prop_assert_eq!(r(&format!(">={a} <={b}")).matches(&v), r(&format!(">={a}")).matches(&v) && r(&format!("<={b}")).matches(&v));
    }

    #[test]
    fn versions_round_trip(v in version(), build in prop::option::of("[a-z0-9]{1,4}(\\.[a-z0-9]{1,4}){0,2}")) {
        let s = match build { Some(b) => format!("{v}+{b}"), None => v };
        prop_assert_eq!(masterminds::Version::parse(&s).unwrap().to_string(), s.clone());
        prop_assert_eq!(blang::Version::parse(&s).unwrap().to_string(), s);
    }

    #[test]
    fn ordering_is_total(a in version(), b in version(), c in version()) {
        let (a, b, c) = (mv(&a), mv(&b), mv(&c));
        prop_assert_eq!(a.cmp(&b), b.cmp(&a).reverse());
        if a <= b && b <= c { prop_assert!(a <= c); }
    }

    #[test]
    fn parsers_never_panic(s in "[ v0-9xX*.,|<>=!~^+\\-a-z\t]{0,40}") {
        let _ = masterminds::Constraints::parse(&s).map(|c| c.matches(&mv("1.2.3")));
        let _ = masterminds::Version::parse(&s);
        let _ = masterminds::Version::parse_strict(&s);
        let _ = blang::Range::parse(&s).map(|r| r.matches(&blang::Version::parse("1.2.3").unwrap()));
        let _ = blang::Version::parse_tolerant(&s);
        let _ = olm_version::VersionRelease::parse_legacy(&s);
        let _ = is_valid_version_range(&s);
    }

    #[test]
    fn parsers_never_panic_on_any_unicode(s in "\\PC{0,30}") {
        let _ = masterminds::Constraints::parse(&s);
        let _ = blang::Range::parse(&s);
        let _ = blang::Version::parse_tolerant(&s);
    }

    #[test]
    fn admitted_ranges_parse(s in "(>=|<|~|\\^|)[1-9]\\.[0-9x](\\.[0-9x])?(, <[1-9]| \\|\\| [1-9]\\.x)?") {
        // Everything the API server admits must be a constraint the controller can parse.
        prop_assume!(is_valid_version_range(&s));
        prop_assert!(masterminds::Constraints::parse(&s).is_ok(), "{}", s);
    }
}
