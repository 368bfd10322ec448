//! Scenarios after upstream's `pkg/controller/registry/resolver/resolver_test.go`
//! (`TestSolveOperators`, `TestSolveOperators_WithDependencies`, `TestSolveOperators_FindLatestVersion`,
//! `TestSolveOperators_WithoutDeprecated`, `TestSolveOperators_TransferApiOwnership`,
//! `TestNewOperatorFromCSV`-style existing entries), written as data.

use olm_version::blang::{Range, Version};

use super::*;
use crate::entry::Property;
use olm_v0::ApiKey;

fn bundle(name: &str, package: &str, channel: &str, replaces: &str) -> Entry {
    let version = name.rsplit_once(".v").map(|(_, v)| v).unwrap_or("0.0.0");
    Entry {
        name: name.into(),
        replaces: replaces.into(),
        skips: vec![],
        skip_range: None,
        version: Version::parse(version).ok(),
        provided_apis: vec![],
        required_apis: vec![],
        properties: vec![Property::new(
            "olm.package",
            format!(r#"{{"packageName":"{package}","version":"{version}"}}"#),
        )],
        bundle_path: format!("quay.io/test/{name}"),
        package: package.into(),
        channel: channel.into(),
        default_channel: channel == "stable",
        catalog: SourceKey::new("community", "olm"),
        subscription: None,
        parsed: Default::default(),
    }
}

fn provides(mut e: Entry, group: &str, version: &str, kind: &str) -> Entry {
    e.properties.push(Property::new(
        "olm.gvk",
        format!(r#"{{"group":"{group}","kind":"{kind}","version":"{version}"}}"#),
    ));
    e.provided_apis.push(ApiKey::gvk(group, version, kind));
    e
}

fn with(mut e: Entry, kind: &str, value: &str) -> Entry {
    e.properties.push(Property::new(kind, value));
    e
}

fn sub(name: &str, package: &str, channel: &str) -> Subscription {
    Subscription {
        name: name.into(),
        namespace: "ns".into(),
        package: package.into(),
        channel: channel.into(),
        catalog: SourceKey::new("community", "olm"),
        ..Subscription::default()
    }
}

fn catalog(entries: Vec<Entry>) -> Catalog<'static> {
    Catalog {
        key: SourceKey::new("community", "olm"),
        priority: 0,
        entries: Ok(entries.leak()),
    }
}

fn installed(name: &str, package: &str, by: Option<&str>) -> Entry {
    let mut e = bundle(name, package, "", "");
    e.catalog = SourceKey::existing("ns");
    e.bundle_path.clear();
    e.subscription = by.map(str::to_owned);
    e
}

fn names(r: &[Resolved]) -> Vec<String> {
    let mut n: Vec<String> = r
        .iter()
        .map(|r| format!("{} replaces={}", r.entry.name, r.entry.replaces))
        .collect();
    n.sort();
    n
}

#[test]
fn installs_the_channel_head() {
    let cat = catalog(vec![
        bundle("a.v1.0.0", "a", "stable", ""),
        bundle("a.v2.0.0", "a", "stable", "a.v1.0.0"),
    ]);
    let got = resolve("ns", &[sub("s", "a", "stable")], &[], &[cat]).unwrap();
    assert_eq!(names(&got), vec!["a.v2.0.0 replaces=a.v1.0.0"]);
}

#[test]
fn default_channel_is_preferred_when_unset() {
    let cat = catalog(vec![
        bundle("a.v3.0.0", "a", "alpha", ""),
        bundle("a.v1.0.0", "a", "stable", ""),
    ]);
    let got = resolve("ns", &[sub("s", "a", "")], &[], &[cat]).unwrap();
    assert_eq!(names(&got), vec!["a.v1.0.0 replaces="]);
}

#[test]
fn starting_csv_is_installed_and_marked() {
    let cat = catalog(vec![
        bundle("a.v1.0.0", "a", "stable", ""),
        bundle("a.v2.0.0", "a", "stable", "a.v1.0.0"),
    ]);
    let mut s = sub("s", "a", "stable");
    s.starting_csv = "a.v1.0.0".into();
    let got = resolve("ns", &[s], &[], &[cat]).unwrap();
    assert_eq!(names(&got), vec!["a.v1.0.0 replaces="]);
    assert!(got[0].starting_csv);
}

#[test]
fn upgrades_along_replaces_and_skip_range() {
    let mut v3 = bundle("a.v3.0.0", "a", "stable", "a.v2.0.0");
    v3.skip_range = Range::parse(">=1.0.0 <3.0.0").ok();
    let cat = catalog(vec![
        bundle("a.v1.0.0", "a", "stable", ""),
        bundle("a.v2.0.0", "a", "stable", "a.v1.0.0"),
        v3,
    ]);
    let mut s = sub("s", "a", "stable");
    s.installed_csv = "a.v1.0.0".into();
    let existing = [installed("a.v1.0.0", "a", Some("s"))];
    let got = resolve(
        "ns",
        std::slice::from_ref(&s),
        &existing,
        std::slice::from_ref(&cat),
    )
    .unwrap();
    // The head skips straight over v2 thanks to its skipRange.
    assert_eq!(names(&got), vec!["a.v3.0.0 replaces=a.v1.0.0"]);
    // Already at the head: nothing to do.
    s.installed_csv = "a.v3.0.0".into();
    let existing = [installed("a.v3.0.0", "a", Some("s"))];
    assert!(resolve("ns", &[s], &existing, &[cat]).unwrap().is_empty());
}

#[test]
fn dependencies_by_api_and_package_come_in_one_resolution() {
    let a = with(
        with(
            bundle("a.v1.0.0", "a", "stable", ""),
            "olm.gvk.required",
            r#"{"group":"b.io","version":"v1","kind":"B"}"#,
        ),
        "olm.package.required",
        r#"{"packageName":"c","versionRange":">=1.0.0 <2.0.0"}"#,
    );
    let cat = catalog(vec![
        a,
        provides(bundle("b.v1.0.0", "b", "stable", ""), "b.io", "v1", "B"),
        bundle("c.v1.5.0", "c", "stable", ""),
        bundle("c.v2.0.0", "c", "stable", "c.v1.5.0"),
    ]);
    let got = resolve("ns", &[sub("s", "a", "stable")], &[], &[cat]).unwrap();
    assert_eq!(
        names(&got),
        vec![
            "a.v1.0.0 replaces=",
            "b.v1.0.0 replaces=",
            "c.v1.5.0 replaces="
        ]
    );
}

#[test]
fn deprecated_bundles_are_skipped() {
    let cat = catalog(vec![
        bundle("a.v1.0.0", "a", "stable", ""),
        with(
            bundle("a.v2.0.0", "a", "stable", "a.v1.0.0"),
            "olm.deprecated",
            "{}",
        ),
    ]);
    let got = resolve("ns", &[sub("s", "a", "stable")], &[], &[cat]).unwrap();
    assert_eq!(names(&got), vec!["a.v1.0.0 replaces="]);
}

#[test]
fn missing_dependency_is_explained() {
    let cat = catalog(vec![with(
        bundle("a.v1.0.0", "a", "stable", ""),
        "olm.gvk.required",
        r#"{"group":"b.io","version":"v1","kind":"B"}"#,
    )]);
    let err = resolve("ns", &[sub("s", "a", "stable")], &[], &[cat]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "constraints not satisfiable: bundle a.v1.0.0 requires an operator providing an API with group: b.io, version: v1, kind: B, subscription s exists, subscription s requires community/olm/stable/a.v1.0.0"
    );
}

#[test]
fn subscription_criteria_failures_use_upstream_words() {
    let cat = catalog(vec![bundle("a.v1.0.0", "a", "stable", "")]);
    let cases = [
        (
            sub("s", "nope", ""),
            "no operators found in package nope in the catalog referenced by subscription s",
        ),
        (
            sub("s", "a", "fast"),
            "no operators found in channel fast of package a in the catalog referenced by subscription s",
        ),
        (
            Subscription {
                starting_csv: "a.v9".into(),
                ..sub("s", "a", "stable")
            },
            "no operators found with name a.v9 in channel stable of package a in the catalog referenced by subscription s",
        ),
        (
            Subscription {
                catalog: SourceKey::new("gone", "olm"),
                ..sub("s", "a", "")
            },
            "no operators found from catalog gone in namespace olm referenced by subscription s",
        ),
    ];
    for (s, reason) in cases {
        let err = resolve("ns", &[s], &[], std::slice::from_ref(&cat)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("constraints not satisfiable: {reason}, subscription s exists")
        );
    }
}

#[test]
fn an_unreadable_catalog_prevents_only_its_subscriptions() {
    let broken = Catalog {
        key: SourceKey::new("broken", "olm"),
        priority: 0,
        entries: Err("rpc error: code = Unavailable".into()),
    };
    let good = catalog(vec![bundle("a.v1.0.0", "a", "stable", "")]);
    let got = resolve(
        "ns",
        &[sub("s", "a", "stable")],
        &[],
        &[broken.clone(), good.clone()],
    )
    .unwrap();
    assert_eq!(names(&got), vec!["a.v1.0.0 replaces="]);
    let s = Subscription {
        catalog: SourceKey::new("broken", "olm"),
        ..sub("s", "a", "")
    };
    let err = resolve("ns", &[s], &[], &[broken, good]).unwrap_err();
    assert_eq!(
        err,
        ResolveError::Prevented(Prevented::Catalog {
            namespace: "olm".into(),
            name: "broken".into(),
            error: "rpc error: code = Unavailable".into(),
        })
    );
    assert_eq!(
        err.to_string(),
        "error using catalogsource olm/broken: rpc error: code = Unavailable"
    );
}

#[test]
fn one_provider_per_api() {
    // Two subscriptions whose heads both provide the same API: only one can be installed.
    let cat = catalog(vec![
        provides(bundle("a.v1.0.0", "a", "stable", ""), "x.io", "v1", "X"),
        provides(bundle("b.v1.0.0", "b", "stable", ""), "x.io", "v1", "X"),
    ]);
    let err = resolve(
        "ns",
        &[sub("sa", "a", "stable"), sub("sb", "b", "stable")],
        &[],
        &[cat],
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(
            "community/olm/stable/a.v1.0.0 and community/olm/stable/b.v1.0.0 provide X (x.io/v1)"
        ),
        "{text}"
    );
}

#[test]
fn freestanding_csvs_are_kept() {
    // An installed CSV no Subscription claims is mandatory, so a subscription to a package
    // whose bundle provides the same API conflicts with it.
    let csv = provides(installed("x.v1.0.0", "x", None), "x.io", "v1", "X");
    let cat = catalog(vec![provides(
        bundle("a.v1.0.0", "a", "stable", ""),
        "x.io",
        "v1",
        "X",
    )]);
    let err = resolve("ns", &[sub("s", "a", "stable")], &[csv], &[cat]).unwrap_err();
    assert!(
        err.to_string().contains(
            "clusterserviceversion x.v1.0.0 exists and is not referenced by a subscription"
        ),
        "{err}"
    );
}

#[test]
fn unreadable_dependency_prohibits_only_that_bundle() {
    let cat = catalog(vec![
        bundle("a.v1.0.0", "a", "stable", ""),
        with(
            bundle("a.v2.0.0", "a", "stable", "a.v1.0.0"),
            "olm.package.required",
            r#"{"packageName":"b","versionRange":"not a range"}"#,
        ),
    ]);
    let got = resolve("ns", &[sub("s", "a", "stable")], &[], &[cat]).unwrap();
    assert_eq!(names(&got), vec!["a.v1.0.0 replaces="]);
}

#[test]
fn dependency_prefers_higher_priority_catalogs() {
    let low = catalog(vec![with(
        bundle("a.v1.0.0", "a", "stable", ""),
        "olm.gvk.required",
        r#"{"group":"b.io","version":"v1","kind":"B"}"#,
    )]);
    let mut b_low = provides(bundle("b.v1.0.0", "b", "stable", ""), "b.io", "v1", "B");
    b_low.catalog = SourceKey::new("other", "olm");
    let mut b_high = provides(bundle("b.v1.0.0", "b", "stable", ""), "b.io", "v1", "B");
    b_high.catalog = SourceKey::new("premium", "olm");
    let other = Catalog {
        key: SourceKey::new("other", "olm"),
        priority: 0,
        entries: Ok(vec![b_low].leak()),
    };
    let premium = Catalog {
        key: SourceKey::new("premium", "olm"),
        priority: 10,
        entries: Ok(vec![b_high].leak()),
    };
    let got = resolve(
        "ns",
        &[sub("s", "a", "stable")],
        &[],
        &[low, other, premium],
    )
    .unwrap();
    let from: Vec<String> = got
        .iter()
        .map(|r| format!("{} from {}", r.entry.name, r.entry.catalog.name))
        .collect();
    assert!(
        from.contains(&"b.v1.0.0 from premium".to_owned()),
        "{from:?}"
    );
}

#[test]
fn dependency_cycles_resolve_together() {
    // a needs b's API and b needs a's: both come in one resolution, each once.
    let a = with(
        provides(bundle("a.v1.0.0", "a", "stable", ""), "a.io", "v1", "A"),
        "olm.gvk.required",
        r#"{"group":"b.io","version":"v1","kind":"B"}"#,
    );
    let b = with(
        provides(bundle("b.v1.0.0", "b", "stable", ""), "b.io", "v1", "B"),
        "olm.gvk.required",
        r#"{"group":"a.io","version":"v1","kind":"A"}"#,
    );
    let got = resolve(
        "ns",
        &[sub("s", "a", "stable")],
        &[],
        &[catalog(vec![a, b])],
    )
    .unwrap();
    assert_eq!(
        names(&got),
        vec!["a.v1.0.0 replaces=", "b.v1.0.0 replaces="]
    );
}
