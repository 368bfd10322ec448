//! Upstream's own tables for API sets and the `olm.providedAPIs` annotation, run through
//! [`ApiSet`] and [`ApiKey`]: every case of the OLM repo's
//! `pkg/controller/registry/resolver/cache/operators_test.go` that reads or writes the
//! annotation (`TestGVKStringToProvidedAPISet`, `TestAPIKeyToGVKString`, `TestAPISetString`)
//! and of the set operations provided-API reconciliation is built on (`TestAPISetUnion`,
//! `TestAPISetIntersection`, `TestAPISetDifference`, `TestAPISetIsSubset`, `TestStripPlural`),
//! with upstream's case names.
//!
//! Upstream's sets are Go maps; ours are ordered, so sets compare as sets. The set-operation
//! tables swap group and kind (group `Goose`, kind `birds.com`); that is their data, kept as is.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use olm_v0::{ApiKey, ApiSet};

/// One API as upstream's tables spell it: (group, version, kind).
type Gvk = (&'static str, &'static str, &'static str);

fn key((group, version, kind): Gvk) -> ApiKey {
    ApiKey::gvk(group, version, kind)
}

fn apis(keys: &[Gvk]) -> ApiSet {
    keys.iter().copied().map(key).collect()
}

fn assert_no_failures(test: &str, failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{test}: {} case(s) differ from upstream:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

const GOOSE: Gvk = ("birds.com", "v1alpha1", "Goose");
const EGRET: Gvk = ("birds.com", "v1alpha1", "Egret");

/// `TestGVKStringToProvidedAPISet`: spaces removed, entries split at commas, an entry kept only
/// when it has at least two dots.
#[test]
fn gvk_string_to_provided_api_set() {
    const CASES: &[(&str, &str, &[Gvk])] = &[
        ("EmptyString/EmptySet", "", &[]),
        ("Garbage/EmptySet", ",,,,,alkjahsdfjlh!@#$%", &[]),
        ("SingleBadGVK/EmptySet", "this-is.not-good", &[]),
        (
            "MultipleBadGVK/EmptySet",
            "this-is.not-good,thisisnoteither",
            &[],
        ),
        (
            "SingleGoodGVK/SingleAPI",
            "Goose.v1alpha1.birds.com",
            &[GOOSE],
        ),
        (
            "MutlipleGoodGVK/MultipleAPIs",
            "Goose.v1alpha1.birds.com,Moose.v1alpha1.mammals.com",
            &[GOOSE, ("mammals.com", "v1alpha1", "Moose")],
        ),
        (
            "SingleGoodGVK/SingleBadGVK/SingleAPI",
            "Goose.v1alpha1.birds.com,Moose.v1alpha1",
            &[GOOSE],
        ),
        (
            "MultipleGoodGVK/MultipleBadGVK/MultipleAPIs",
            "Goose.v1alpha1.birds.com,Moose.v1alpha1,Goat,Egret.v1beta1.birds.com",
            &[GOOSE, ("birds.com", "v1beta1", "Egret")],
        ),
    ];
    let mut failures = Vec::new();
    for (name, text, want) in CASES {
        let got = ApiSet::parse_annotation(text);
        if got != apis(want) {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
    }
    assert_no_failures("TestGVKStringToProvidedAPISet", &failures);
}

/// `TestAPIKeyToGVKString`: the three parts joined with dots, whatever they hold.
#[test]
fn api_key_to_gvk_string() {
    const CASES: &[(&str, Gvk, &str)] = &[
        ("EmptyAPIKey", ("", "", ""), ".."),
        ("BadAPIKey", ("birds. ", "-", ""), ".-.birds. "),
        ("GoodAPIKey", GOOSE, "Goose.v1alpha1.birds.com"),
    ];
    let mut failures = Vec::new();
    for (name, k, want) in CASES {
        let got = key(*k).gvk_string();
        if got != *want {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
    }
    assert_no_failures("TestAPIKeyToGVKString", &failures);
}

/// `TestAPISetString`: the annotation's value, entries sorted as strings.
#[test]
fn api_set_string() {
    const CASES: &[(&str, &[Gvk], &str)] = &[
        ("EmptySet", &[], ""),
        ("OneAPI", &[GOOSE], "Goose.v1alpha1.birds.com"),
        (
            "MutipleAPIs",
            &[GOOSE, EGRET],
            "Egret.v1alpha1.birds.com,Goose.v1alpha1.birds.com",
        ),
        (
            "MutipleAPIs/OneBad",
            &[("birds.com", "v1alpha1", ""), GOOSE, EGRET],
            ".v1alpha1.birds.com,Egret.v1alpha1.birds.com,Goose.v1alpha1.birds.com",
        ),
    ];
    let mut failures = Vec::new();
    for (name, set, want) in CASES {
        let got = apis(set).to_string();
        if got != *want {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
    }
    assert_no_failures("TestAPISetString", &failures);
}

// The set-operation tables, group and kind swapped as upstream writes them.
const S_GOOSE: Gvk = ("Goose", "v1alpha1", "birds.com");
const S_EGRET_B1: Gvk = ("Egret", "v1beta1", "birds.com");
const S_EGRET_A1: Gvk = ("Egret", "v1alpha1", "birds.com");
const S_CROW: Gvk = ("Crow", "v1beta1", "birds.com");
const S_MOOSE: Gvk = ("Moose", "v1alpha1", "mammals.com");
const S_COW: Gvk = ("Cow", "v1alpha1", "mammals.com");
const S_GOAT_B1: Gvk = ("Goat", "v1beta1", "mammals.com");
const S_GOAT_A1: Gvk = ("Goat", "v1alpha1", "mammals.com");
const S_HIPPO: Gvk = ("Hippo", "v1alpha1", "mammals.com");
const S_GOPHER: Gvk = ("Gopher", "v1alpha2", "mammals.com");
const S_GIRAFFE: Gvk = ("Giraffe", "v1alpha1", "mammals.com");
const S_BISON: Gvk = ("Bison", "v1beta1", "mammals.com");

/// A table of a set against a list of sets: (case name, left, rights, want).
type VariadicTable = [(
    &'static str,
    &'static [Gvk],
    &'static [&'static [Gvk]],
    &'static [Gvk],
)];

/// `TestAPISetUnion`: upstream's union takes any number of sets; it is the union of them all.
#[test]
fn api_set_union() {
    const CASES: &VariadicTable = &[
        ("EmptyLeft/NilRight/EmptySet", &[], &[], &[]),
        ("EmptyLeft/OneEmptyRight/EmptySet", &[], &[&[]], &[]),
        (
            "EmptyLeft/OneRight/OneFromRight",
            &[],
            &[&[S_GOOSE]],
            &[S_GOOSE],
        ),
        (
            "OneLeft/EmptyRight/OneFromLeft",
            &[S_GOOSE],
            &[&[]],
            &[S_GOOSE],
        ),
        (
            "MultipleLeft/MultipleRight/AllFromLeftAndRight",
            &[S_GOOSE, S_EGRET_B1],
            &[
                &[S_GOOSE, S_EGRET_B1, S_CROW],
                &[],
                &[S_MOOSE, S_COW, S_EGRET_B1, S_CROW],
                &[S_MOOSE, S_COW, S_GOAT_B1],
            ],
            &[S_GOOSE, S_EGRET_B1, S_CROW, S_MOOSE, S_COW, S_GOAT_B1],
        ),
    ];
    let mut failures = Vec::new();
    for (name, left, rights, want) in CASES {
        let got = rights
            .iter()
            .fold(apis(left), |acc, right| acc.union(&apis(right)));
        if got != apis(want) {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
    }
    assert_no_failures("TestAPISetUnion", &failures);
}

/// `TestAPISetIntersection`: upstream's intersection takes any number of sets and keeps the APIs
/// of the left set found in any of them, which is the left set intersected with their union
/// (empty when there are none).
#[test]
fn api_set_intersection() {
    const CASES: &VariadicTable = &[
        ("EmptyLeft/NilRight/EmptySet", &[], &[], &[]),
        ("EmptyLeft/OneEmptyRight/EmptySet", &[], &[&[]], &[]),
        ("EmptyLeft/OneRight/EmptySet", &[], &[&[S_GOOSE]], &[]),
        ("OneLeft/EmptyRight/NoIntersection", &[S_GOOSE], &[&[]], &[]),
        (
            "OneLeft/TwoRight/OneIntersection",
            &[S_GOOSE],
            &[&[S_GOOSE, S_MOOSE]],
            &[S_GOOSE],
        ),
        (
            "OneLeft/TwoRight/SingleSet/OneIntersection",
            &[S_GOOSE],
            &[&[S_GOOSE, S_MOOSE]],
            &[S_GOOSE],
        ),
        (
            "TwoLeft/OneRight/SingleSet/OneIntersection",
            &[S_GOOSE, S_MOOSE],
            &[&[S_GOOSE]],
            &[S_GOOSE],
        ),
        (
            "OneLeft/TwoRight/SeparateSets/OneIntersection",
            &[S_GOOSE],
            &[&[S_MOOSE], &[S_GOOSE]],
            &[S_GOOSE],
        ),
        (
            "OneLeft/TwoRight/SeparateSets/NoIntersection",
            &[S_EGRET_A1],
            &[&[S_MOOSE], &[S_GOOSE]],
            &[],
        ),
        (
            "MultipleLeft/MultipleRight/SeparateSets/SomeIntersection",
            &[S_EGRET_A1, S_HIPPO, S_MOOSE],
            &[&[S_HIPPO], &[S_GOOSE], &[S_GOAT_A1], &[S_MOOSE]],
            &[S_HIPPO, S_MOOSE],
        ),
    ];
    let mut failures = Vec::new();
    for (name, left, rights, want) in CASES {
        let any_right = rights
            .iter()
            .fold(ApiSet::default(), |acc, right| acc.union(&apis(right)));
        let got = apis(left).intersection(&any_right);
        if got != apis(want) {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
    }
    assert_no_failures("TestAPISetIntersection", &failures);
}

/// A table of one set against another: (case name, left, right, want).
type BinaryTable = [(&'static str, &'static [Gvk], &'static [Gvk], &'static [Gvk])];

/// `TestAPISetDifference`.
#[test]
fn api_set_difference() {
    const CASES: &BinaryTable = &[
        ("EmptySet", &[], &[], &[]),
        (
            "OneLeft/EmptyRight/LeftIsDifference",
            &[S_GOOSE],
            &[],
            &[S_GOOSE],
        ),
        ("EmptyLeft/OneRight/NoDifference", &[], &[S_GOOSE], &[]),
        ("OneLeft/OneRight/NoDifference", &[S_GOOSE], &[S_GOOSE], &[]),
        (
            "MultipleLeft/MultipleRight/NoDifference",
            &[S_GOOSE, S_MOOSE],
            &[S_GOOSE, S_MOOSE],
            &[],
        ),
        (
            "MultipleLeft/MultipleRight/SingleDifference",
            &[S_GOOSE, S_MOOSE, S_GOAT_A1],
            &[S_GOOSE, S_MOOSE],
            &[S_GOAT_A1],
        ),
        (
            "MultipleLeft/MultipleRight/SomeDifference",
            &[S_GOOSE, S_MOOSE, S_GOAT_A1],
            &[S_MOOSE, S_GOPHER],
            &[S_GOOSE, S_GOAT_A1],
        ),
        (
            "MultipleLeft/MultipleRight/AllLeftDifference",
            &[S_GOOSE, S_MOOSE, S_GOAT_A1],
            &[S_GIRAFFE, S_GOPHER, S_BISON],
            &[S_GOOSE, S_MOOSE, S_GOAT_A1],
        ),
    ];
    let mut failures = Vec::new();
    for (name, left, right, want) in CASES {
        let got = apis(left).difference(&apis(right));
        if got != apis(want) {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
    }
    assert_no_failures("TestAPISetDifference", &failures);
}

/// `TestAPISetIsSubset`.
#[test]
fn api_set_is_subset() {
    const CASES: &[(&str, &[Gvk], &[Gvk], bool)] = &[
        ("EmptySet", &[], &[], true),
        ("Same", &[S_GOOSE], &[S_GOOSE], true),
        ("IsSubset", &[S_GOOSE], &[S_GOOSE, S_MOOSE], true),
        ("NotSubset", &[S_GOOSE, S_MOOSE], &[S_GOOSE], false),
        ("NotSubset/EmptyRight", &[S_GOOSE, S_MOOSE], &[], false),
    ];
    let mut failures = Vec::new();
    for (name, left, right, want) in CASES {
        let got = apis(left).is_subset(&apis(right));
        if got != *want {
            failures.push(format!("{name}: got {got}, want {want}"));
        }
    }
    assert_no_failures("TestAPISetIsSubset", &failures);
}

/// `TestStripPlural`. Upstream's `NilSet` case (a nil map) has no Rust counterpart beyond the
/// empty set, which is what it reads as.
#[test]
fn strip_plural() {
    fn plural(k: Gvk, plural: &str) -> ApiKey {
        ApiKey {
            plural: plural.to_owned(),
            ..key(k)
        }
    }
    let cases: [(&str, ApiSet, &[Gvk]); 5] = [
        ("EmptySet", ApiSet::default(), &[]),
        ("NilSet", ApiSet::default(), &[]),
        (
            "OnePluralToRemove",
            [plural(S_GOOSE, "Geese")].into_iter().collect(),
            &[S_GOOSE],
        ),
        (
            "MultiplePluralsToRemove",
            [plural(S_GOOSE, "Geese"), plural(S_MOOSE, "Moose")]
                .into_iter()
                .collect(),
            &[S_GOOSE, S_MOOSE],
        ),
        (
            "NoPluralsToRemove",
            apis(&[S_GOOSE, S_MOOSE]),
            &[S_GOOSE, S_MOOSE],
        ),
    ];
    let mut failures = Vec::new();
    for (name, set, want) in &cases {
        let got = set.strip_plural();
        if got != apis(want) {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
    }
    assert_no_failures("TestStripPlural", &failures);
}
