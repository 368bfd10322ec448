//! Cases after upstream's `pkg/controller/registry/resolver/cache/predicates_test.go` and the
//! dependency-property cases of `resolver_test.go` (`TestSolveOperators_WithGenericConstraint`,
//! `TestSolveOperators_WithNestedGenericConstraints`, `TestSolveOperators_WithPackageRequired`).

use olm_version::blang::Version;

use super::*;
use crate::entry::Property;

fn entry(properties: &[(&str, &str)]) -> Entry {
    Entry {
        name: "a.v1.0.0".into(),
        replaces: "a.v0.9.0".into(),
        skips: vec!["a.v0.8.0".into()],
        skip_range: olm_version::blang::Range::parse("<1.0.0").ok(),
        version: Version::parse("1.0.0").ok(),
        provided_apis: vec![],
        required_apis: vec![],
        properties: properties
            .iter()
            .map(|(k, v)| Property::new(k, *v))
            .collect(),
        bundle_path: String::new(),
        package: "catalog-pkg".into(),
        channel: "stable".into(),
        default_channel: true,
        catalog: SourceKey::new("cat", "ns"),
        subscription: None,
        parsed: Default::default(),
    }
}

fn dep(kind: &str, value: &str) -> Predicate {
    dependency(kind, value).unwrap().unwrap()
}

#[test]
fn dependency_properties_match_as_upstream() {
    let e = entry(&[
        ("olm.package", r#"{"packageName":"a","version":"1.0.0"}"#),
        ("olm.gvk", r#"{"group":"g.io","kind":"K","version":"v1"}"#),
        ("olm.label", r#"{"label":"certified"}"#),
    ]);
    let cases = [
        (
            "olm.gvk.required",
            r#"{"group":"g.io","version":"v1","kind":"K"}"#,
            true,
        ),
        (
            "olm.gvk.required",
            r#"{"group":"g.io","version":"v2","kind":"K"}"#,
            false,
        ),
        (
            "olm.package.required",
            r#"{"packageName":"a","versionRange":">=1.0.0"}"#,
            true,
        ),
        (
            "olm.package.required",
            r#"{"packageName":"a","versionRange":">1.0.0"}"#,
            false,
        ),
        (
            "olm.package.required",
            r#"{"packageName":"catalog-pkg","versionRange":"1.0.0"}"#,
            true,
        ),
        ("olm.label.required", r#"{"label":"certified"}"#, true),
        ("olm.label.required", r#"{"label":"other"}"#, false),
        (
            "olm.constraint",
            r#"{"failureMessage":"f","gvk":{"group":"g.io","version":"v1","kind":"K"}}"#,
            true,
        ),
        (
            "olm.constraint",
            r#"{"package":{"packageName":"a","versionRange":"<1.0.0"}}"#,
            false,
        ),
        (
            "olm.constraint",
            r#"{"all":{"constraints":[{"gvk":{"group":"g.io","version":"v1","kind":"K"}},{"package":{"packageName":"a","versionRange":"1.x"}}]}}"#,
            true,
        ),
        (
            "olm.constraint",
            r#"{"any":{"constraints":[{"gvk":{"group":"x","version":"v1","kind":"K"}},{"package":{"packageName":"a","versionRange":">0.1.0"}}]}}"#,
            true,
        ),
        (
            "olm.constraint",
            r#"{"not":{"constraints":[{"gvk":{"group":"g.io","version":"v1","kind":"K"}}]}}"#,
            false,
        ),
        (
            "olm.constraint",
            r#"{"cel":{"rule":"properties.exists(p, p.type == 'olm.label' && p.value.label == 'certified')"}}"#,
            true,
        ),
        (
            "olm.constraint",
            r#"{"cel":{"rule":"properties.exists(p, p.type == 'olm.package' && semver_compare(p.value.version, '1.0.0') > 0)"}}"#,
            false,
        ),
    ];
    for (kind, value, want) in cases {
        assert_eq!(dep(kind, value).test(&e), want, "{kind} {value}");
    }
    assert!(
        dependency("olm.gvk", "{}").unwrap().is_none(),
        "provided APIs are not dependencies"
    );
    assert!(dependency("olm.unknown", "{}").unwrap().is_none());
}

#[test]
fn descriptions_are_upstream_words() {
    let cases = [
        (
            "olm.gvk.required",
            r#"{"group":"g","version":"v1","kind":"K"}"#,
            "providing an API with group: g, version: v1, kind: K",
        ),
        (
            "olm.package.required",
            r#"{"packageName":"a","versionRange":">=1.0.0"}"#,
            "with package: a and with version in range: >=1.0.0",
        ),
        ("olm.label.required", r#"{"label":"x"}"#, "with label: x"),
        (
            "olm.constraint",
            r#"{"failureMessage":"needs x","cel":{"rule":"true"}}"#,
            r#"with constraint: "true" and message: "needs x""#,
        ),
        (
            "olm.constraint",
            r#"{"any":{"constraints":[{"gvk":{"group":"g","version":"v1","kind":"K"}},{"package":{"packageName":"a","versionRange":">=1.0.0"}}]}}"#,
            "providing an API with group: g, version: v1, kind: K or with package: a and with version in range: >=1.0.0",
        ),
        (
            "olm.constraint",
            r#"{"not":{"constraints":[{"gvk":{"group":"g","version":"v1","kind":"K"}}]}}"#,
            "not providing an API with group: g, version: v1, kind: K",
        ),
    ];
    for (kind, value, want) in cases {
        assert_eq!(dep(kind, value).describe(), want);
    }
}

#[test]
fn upgrade_predicates() {
    let e = entry(&[]);
    assert!(Predicate::Replaces("a.v0.9.0".into()).test(&e));
    assert!(Predicate::Replaces("a.v0.8.0".into()).test(&e));
    assert!(!Predicate::Replaces("a.v0.7.0".into()).test(&e));
    assert!(Predicate::SkipRangeIncludes(Version::parse("0.5.0").unwrap()).test(&e));
    assert!(!Predicate::SkipRangeIncludes(Version::parse("1.5.0").unwrap()).test(&e));
    assert!(Predicate::Channel(String::new()).test(&e));
    assert!(Predicate::Package("catalog-pkg".into()).test(&e));
}

#[test]
fn unreadable_dependencies_say_why() {
    assert!(
        dependency("olm.gvk.required", "[")
            .unwrap_err()
            .to_string()
            .starts_with("olm.gvk.required: ")
    );
    assert!(
        dependency(
            "olm.package.required",
            r#"{"packageName":"a","versionRange":"nope"}"#
        )
        .is_err()
    );
    let err = dependency("olm.constraint", r#"{"cel":{"rule":"properties.exists("}}"#)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("parse olm.constraint: "), "{err}");
    let err = dependency(
        "olm.constraint",
        r#"{"package":{"packageName":"a","versionRange":"nope"}}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("convert olm.constraint to resolver predicate: ")
            || err.starts_with("parse olm.constraint: "),
        "{err}"
    );
}
