//! Table tests for every resolution rule, on small catalogs written in the tests.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use olm_resolve::{
    Availability, CatalogInput, Content, ContentIndex, Installed, LabelSelector,
    METADATA_NAME_LABEL, Request, Skipped, UpgradeConstraintPolicy, VersionRange, resolve,
};

/// Builds a catalog of package `pkg`: `versions` are bundle versions (`1.0.0`, `1.0.0+2`), all in
/// channel `stable` as a replaces chain, plus `extra` YAML documents.
fn catalog(pkg: &str, versions: &[&str], extra: &str) -> ContentIndex {
    let mut y = format!("schema: olm.package\nname: {pkg}\ndefaultChannel: stable\n");
    y += &format!("---\nschema: olm.channel\npackage: {pkg}\nname: stable\nentries:\n");
    let mut prev: Option<String> = None;
    for v in versions {
        y += &format!("  - name: {pkg}.v{v}\n");
        if let Some(p) = &prev {
            y += &format!("    replaces: {p}\n");
        }
        prev = Some(format!("{pkg}.v{v}"));
    }
    for v in versions {
        y += &format!(
            "---\nschema: olm.bundle\npackage: {pkg}\nname: {pkg}.v{v}\nimage: example.com/{pkg}:v{v}\nproperties:\n  - type: olm.package\n    value: {{packageName: {pkg}, version: \"{v}\"}}\n"
        );
    }
    y += extra;
    let cat = olm_catalog::load_bytes(y.as_bytes(), "test.yaml").expect("test catalog loads");
    ContentIndex::new(&cat)
}

fn input<'a>(name: &str, priority: i32, content: &'a ContentIndex) -> CatalogInput<'a> {
    let mut labels = BTreeMap::new();
    labels.insert(METADATA_NAME_LABEL.to_owned(), name.to_owned());
    CatalogInput {
        name: name.into(),
        labels,
        priority,
        availability: Availability::Available,
        content: Content::Served(content),
    }
}

fn req(pkg: &str) -> Request {
    Request {
        package: pkg.into(),
        ..Default::default()
    }
}

fn range(text: &str) -> Option<VersionRange> {
    Some(VersionRange::parse(text).unwrap())
}

fn err(catalogs: &[CatalogInput<'_>], r: &Request) -> String {
    resolve(catalogs, r, None).unwrap_err().error.to_string()
}

fn pick(catalogs: &[CatalogInput<'_>], r: &Request) -> (String, String) {
    let res = resolve(catalogs, r, None).unwrap_or_else(|f| panic!("{}", f.error));
    (res.catalog, res.bundle.into_string())
}

#[test]
fn highest_version_of_the_only_catalog() {
    let a = catalog("foo", &["1.0.0", "1.1.0", "1.2.0"], "");
    assert_eq!(
        pick(&[input("a", 0, &a)], &req("foo")),
        ("a".into(), "foo.v1.2.0".into())
    );
}

#[test]
fn unavailable_catalogs_do_not_exist() {
    let a = catalog("foo", &["1.0.0"], "");
    let b = catalog("foo", &["2.0.0"], "");
    let mut unavailable = input("b", 0, &b);
    unavailable.availability = Availability::Unavailable;
    assert_eq!(
        pick(&[input("a", 0, &a), unavailable], &req("foo")).1,
        "foo.v1.0.0"
    );
}

#[test]
fn selector_by_name_and_no_match() {
    let a = catalog("foo", &["1.0.0"], "");
    let b = catalog("foo", &["2.0.0"], "");
    let cats = [input("a", 0, &a), input("b", 0, &b)];
    let mut r = req("foo");
    r.selector = LabelSelector::parse(&format!("{METADATA_NAME_LABEL}=b")).unwrap();
    assert_eq!(pick(&cats, &r).1, "foo.v2.0.0");
    r.selector = LabelSelector::parse("tier=gold").unwrap();
    assert_eq!(
        err(&cats, &r),
        "no available ClusterCatalog matches the catalog selector; cannot resolve package \"foo\""
    );
    assert_eq!(
        err(&[], &req("foo")),
        "no available ClusterCatalog exists; cannot resolve package \"foo\""
    );
}

#[test]
fn match_labels_and_expressions_must_both_hold() {
    let a = catalog("foo", &["1.0.0"], "");
    let mut cat = input("a", 0, &a);
    cat.labels.insert("tier".into(), "gold".into());
    let mut r = req("foo");
    r.selector = LabelSelector::parse("tier=gold,region in (eu)").unwrap();
    assert!(resolve(std::slice::from_ref(&cat), &r, None).is_err());
    cat.labels.insert("region".into(), "eu".into());
    assert!(resolve(&[cat], &r, None).is_ok());
}

#[test]
fn higher_priority_group_wins_and_lower_groups_are_skipped_when_empty() {
    let low = catalog("foo", &["9.0.0"], "");
    let high = catalog("foo", &["1.0.0"], "");
    let other = catalog("bar", &["5.0.0"], "");
    // The priority-10 group has no "foo": go down to priority 5.
    let cats = [
        input("other", 10, &other),
        input("high", 5, &high),
        input("low", 0, &low),
    ];
    assert_eq!(
        pick(&cats, &req("foo")),
        ("high".into(), "foo.v1.0.0".into())
    );
}

#[test]
fn no_fall_through_once_a_catalog_is_selected() {
    let high = catalog("foo", &["1.0.0"], "");
    let low = catalog("foo", &["2.0.0"], "");
    let cats = [input("high", 1, &high), input("low", 0, &low)];
    let mut r = req("foo");
    r.version = range(">=2.0.0");
    assert_eq!(
        err(&cats, &r),
        "no bundles found for package \"foo\" matching version \">=2.0.0\""
    );
}

#[test]
fn same_priority_is_ambiguous_even_if_one_has_no_match() {
    let a = catalog("foo", &["1.0.0"], "");
    let b = catalog("foo", &["2.0.0"], "");
    let cats = [input("b", 3, &b), input("a", 3, &a)];
    let mut r = req("foo");
    r.version = range("2.0.0");
    assert_eq!(
        err(&cats, &r),
        "found bundles for package \"foo\" matching version \"2.0.0\" in multiple catalogs with the same priority [a b]. They have priority 3: select one catalog with spec.source.catalog.selector, or give the catalogs different priorities"
    );
}

/// A catalog that serves nothing (still unpacking, or its unpack failed) under `name`.
fn unpacking<'a>(name: &str, priority: i32) -> CatalogInput<'a> {
    let mut labels = BTreeMap::new();
    labels.insert(METADATA_NAME_LABEL.to_owned(), name.to_owned());
    CatalogInput {
        name: name.into(),
        labels,
        priority,
        availability: Availability::Available,
        content: Content::NotServing("source catalog content: not found".into()),
    }
}

fn skipped(name: &str) -> Skipped {
    Skipped {
        catalog: name.into(),
        reason: "source catalog content: not found".into(),
    }
}

/// Which catalogs a resolution skips and what it says, for each placement of a catalog that
/// serves nothing. Upstream fails every resolution while any selected catalog is not served
/// (`error walking catalogs: … catalog "b" is not being served`); olm resolves from the
/// catalogs that serve and names the skipped ones that could have changed the answer.
#[test]
fn a_catalog_serving_nothing_is_skipped_and_named() {
    let a = catalog("foo", &["1.0.0"], "");
    let other = catalog("bar", &["9.0.0"], "");
    // (catalogs, request range) -> Ok((catalog, bundle, skipped)) or Err(message, skipped)
    type Want = Result<(&'static str, &'static str, Vec<Skipped>), (String, Vec<Skipped>)>;
    let cases: Vec<(&str, Vec<CatalogInput<'_>>, Option<&str>, Want)> = vec![
        (
            "same priority: resolved from the serving one, the other named",
            vec![input("a", 0, &a), unpacking("b", 0)],
            None,
            Ok(("a", "foo.v1.0.0", vec![skipped("b")])),
        ),
        (
            "higher priority skipped: it could have decided, so it is named",
            vec![input("a", 0, &a), unpacking("b", 5)],
            None,
            Ok(("a", "foo.v1.0.0", vec![skipped("b")])),
        ),
        (
            "lower priority skipped: it could not have changed the answer",
            vec![input("a", 0, &a), unpacking("b", -1)],
            None,
            Ok(("a", "foo.v1.0.0", vec![])),
        ),
        (
            "the only catalog serving nothing",
            vec![unpacking("b", 0)],
            None,
            Err((
                "package \"foo\" was not found in the serving catalogs; catalog \"b\" was skipped (not serving: source catalog content: not found)".into(),
                vec![skipped("b")],
            )),
        ),
        (
            "the package is in no serving catalog: every skipped one is named, whatever its priority",
            vec![input("o", 9, &other), unpacking("c", -3), unpacking("b", 0)],
            None,
            Err((
                "package \"foo\" was not found in the serving catalogs; catalog \"b\" was skipped (not serving: source catalog content: not found); catalog \"c\" was skipped (not serving: source catalog content: not found)".into(),
                vec![skipped("b"), skipped("c")],
            )),
        ),
        (
            "ambiguous among the serving ones: upstream's words, then the skipped catalog",
            vec![input("a", 0, &a), input("c", 0, &a), unpacking("b", 0), unpacking("d", -1)],
            None,
            Err((
                "found bundles for package \"foo\" in multiple catalogs with the same priority [a c]. They have priority 0: select one catalog with spec.source.catalog.selector, or give the catalogs different priorities; catalog \"b\" was skipped (not serving: source catalog content: not found)".into(),
                vec![skipped("b")],
            )),
        ),
        (
            "found but no bundle matches: upstream's words, then the skipped catalog",
            vec![input("a", 0, &a), unpacking("b", 0)],
            Some("2.0.0"),
            Err((
                "no bundles found for package \"foo\" matching version \"2.0.0\"; catalog \"b\" was skipped (not serving: source catalog content: not found)".into(),
                vec![skipped("b")],
            )),
        ),
    ];
    for (what, cats, version, want) in cases {
        let mut r = req("foo");
        r.version = version.map(|v| VersionRange::parse(v).unwrap());
        let got = match resolve(&cats, &r, None) {
            Ok(res) => Ok((res.catalog, res.bundle.into_string(), res.skipped)),
            Err(f) => Err((f.message(), f.skipped.into_vec())),
        };
        let want = want.map(|(c, b, k)| (c.to_owned(), b.to_owned(), k));
        assert_eq!(got, want, "{what}");
    }
}

/// Nothing serving and nothing selected are different answers: with every catalog unavailable
/// or unselected, upstream's "no available ClusterCatalog" stays.
#[test]
fn no_catalog_selected_is_not_a_skip() {
    let mut b = unpacking("b", 0);
    b.availability = Availability::Unavailable;
    assert_eq!(
        err(&[b], &req("foo")),
        "no available ClusterCatalog exists; cannot resolve package \"foo\""
    );
}

#[test]
fn channels_and_version_filter_with_upstream_wording() {
    let extra =
        "---\nschema: olm.channel\npackage: foo\nname: beta\nentries:\n  - name: foo.v1.0.0\n";
    let a = catalog("foo", &["1.0.0", "2.0.0"], extra);
    let cats = [input("a", 0, &a)];
    let mut r = req("foo");
    r.channels = vec!["beta".into()];
    assert_eq!(pick(&cats, &r).1, "foo.v1.0.0");
    r.version = range("3.0.0");
    assert_eq!(
        err(&cats, &r),
        "no bundles found for package \"foo\" matching version \"3.0.0\" in channels [beta]"
    );
    // A range is parsed where the request is built, with the message status reports.
    assert_eq!(
        VersionRange::parse("foobar").unwrap_err().to_string(),
        "desired version range \"foobar\" is invalid: improper constraint: \"foobar\""
    );
}

#[test]
fn pinned_version_and_ranges() {
    let a = catalog("foo", &["0.5.0", "0.6.0", "0.7.0", "1.0.0-rc.1"], "");
    let cats = [input("a", 0, &a)];
    let mut r = req("foo");
    r.version = range("0.6.0");
    assert_eq!(pick(&cats, &r).1, "foo.v0.6.0");
    r.version = range("^0");
    assert_eq!(
        pick(&cats, &r).1,
        "foo.v0.7.0",
        "prereleases only when the range names one"
    );
    r.version = range(">=0.5.0-0");
    assert_eq!(pick(&cats, &r).1, "foo.v1.0.0-rc.1");
}

#[test]
fn releases_order_and_deprecation_preference() {
    let dep = "---\nschema: olm.deprecations\npackage: foo\nentries:\n  - reference: {schema: olm.bundle, name: foo.v1.0.0+3}\n    message: broken\n";
    let a = catalog("foo", &["1.0.0", "1.0.0+2", "1.0.0+3"], dep);
    let res = resolve(&[input("a", 0, &a)], &req("foo"), None).unwrap();
    assert_eq!(
        res.bundle, "foo.v1.0.0+2",
        "deprecated +3 loses to non-deprecated +2"
    );
    assert_eq!(res.version.legacy_version_string(), "1.0.0+2");
    assert_eq!(
        res.deprecations
            .bundles
            .get("foo.v1.0.0+3")
            .map(String::as_str),
        Some("broken")
    );
}

#[test]
fn deprecation_elsewhere_does_not_affect_selection_and_facts_survive_failure() {
    let dep = "---\nschema: olm.deprecations\npackage: foo\nentries:\n  - reference: {schema: olm.package}\n    message: use bar\n";
    let a = catalog("foo", &["1.0.0"], dep);
    let mut r = req("foo");
    r.version = range("9.9.9");
    let failure = resolve(&[input("a", 0, &a)], &r, None).unwrap_err();
    assert_eq!(
        failure.deprecations.unwrap().package.as_deref(),
        Some("use bar")
    );
}

#[test]
fn upgrades_follow_edges_with_catalog_provided() {
    let extra = "---\nschema: olm.channel\npackage: foo\nname: fast\nentries:\n  - name: foo.v1.3.0\n    skipRange: '>=1.0.0 <1.3.0'\n";
    let a = catalog("foo", &["1.0.0", "1.1.0", "1.2.0", "1.3.0"], extra);
    let cats = [input("a", 0, &a)];
    let mut r = req("foo");
    r.installed = Some(Installed {
        name: "foo.v1.0.0".into(),
        version: "1.0.0".into(),
        release: None,
    });
    r.channels = vec!["stable".into()];
    assert_eq!(
        pick(&cats, &r).1,
        "foo.v1.1.0",
        "only the entry that replaces the installed one"
    );
    r.channels = vec![];
    assert_eq!(
        pick(&cats, &r).1,
        "foo.v1.3.0",
        "the skipRange in fast counts without channels"
    );
    r.version = range("1.2.0");
    assert_eq!(
        err(&cats, &r),
        "error upgrading from currently installed version \"1.0.0\": no bundles found for package \"foo\" matching version \"1.2.0\""
    );
    r.policy = UpgradeConstraintPolicy::SelfCertified;
    assert_eq!(pick(&cats, &r).1, "foo.v1.2.0");
}

#[test]
fn installed_version_is_always_a_candidate() {
    let a = catalog("foo", &["1.0.0", "2.0.0"], "");
    let mut r = req("foo");
    r.installed = Some(Installed {
        name: "foo.v2.0.0".into(),
        version: "2.0.0".into(),
        release: None,
    });
    assert_eq!(pick(&[input("a", 0, &a)], &r).1, "foo.v2.0.0");
}

#[test]
fn dependencies_are_refused() {
    let extra = "---\nschema: olm.bundle\npackage: foo\nname: foo.v9.0.0\nimage: x\nproperties:\n  - type: olm.package\n    value: {packageName: foo, version: 9.0.0}\n  - type: olm.package.required\n    value: {packageName: bar, versionRange: '>=1.0.0'}\n";
    let a = catalog("foo", &["1.0.0"], extra);
    assert_eq!(
        err(&[input("a", 0, &a)], &req("foo")),
        "validating bundle \"foo.v9.0.0\": bundle \"foo.v9.0.0\" has a dependency declared via property \"olm.package.required\" which is currently not supported"
    );
}

#[test]
fn unknown_package_uses_upstream_wording() {
    let a = catalog("foo", &["1.0.0"], "");
    assert_eq!(
        err(&[input("a", 0, &a)], &req("nope")),
        "no bundles found for package \"nope\""
    );
}

#[test]
fn explain_traces_each_decision() {
    let a = catalog("foo", &["1.0.0", "2.0.0"], "");
    let mut trace = Vec::new();
    let mut r = req("foo");
    r.version = range("<2");
    resolve(&[input("a", 0, &a)], &r, Some(&mut trace)).unwrap();
    assert_eq!(
        trace,
        [
            "priority 0: catalog \"a\" has package \"foo\"; selected",
            "bundle \"foo.v2.0.0\": version outside \"<2\"",
            "candidates in preference order: [foo.v1.0.0]",
            "selected bundle \"foo.v1.0.0\" (1.0.0) from catalog \"a\"",
        ]
    );
}
