//! upstream's `TestUpdateDeprecatedStatus` shapes and the e2e suite's messages
//! (`subscription_e2e_test.go`, "should report deprecation conditions…").

use super::*;

fn time(s: &str) -> Time {
    Time(s.parse().unwrap())
}

fn kinds(s: &SubscriptionStatus) -> Vec<(String, Option<String>)> {
    s.conditions
        .iter()
        .map(|c| (c.type_.as_str().to_owned(), c.message.clone()))
        .collect()
}

#[test]
fn notices_are_in_upstreams_words() {
    let d = Deprecations::of(
        (
            "test-package",
            Some("test-package has been deprecated. Please switch to another-package."),
        ),
        (
            "stable",
            Some("channel \"stable\" has been deprecated. Please switch to a different one."),
        ),
        (
            "example-operator.v0.2.0",
            Some(
                "bundle \"example-operator.v0.2.0\" has been deprecated. Please switch to a different one.",
            ),
        ),
    );
    assert_eq!(
        d.bundle.as_deref(),
        Some(
            "olm.bundle/example-operator.v0.2.0: bundle \"example-operator.v0.2.0\" has been deprecated. Please switch to a different one."
        )
    );
    assert_eq!(
        d.package.as_deref(),
        Some(
            "olm.package/test-package: test-package has been deprecated. Please switch to another-package."
        )
    );
    assert_eq!(
        Deprecations::of(("p", None), ("c", None), ("b", None)),
        Deprecations::default()
    );
}

#[test]
fn conditions_follow_the_catalog() {
    let t1 = time("2026-12-07T10:00:00Z");
    let t2 = time("2026-12-07T11:00:00Z");
    let all = Deprecations {
        package: Some("olm.package/p: gone".into()),
        channel: Some("olm.channel/stable: gone".into()),
        bundle: Some("olm.bundle/p.v1: gone".into()),
    };
    let mut s: SubscriptionStatus =
        serde_json::from_value(serde_json::json!({"lastUpdated": "2026-12-07T09:00:00Z"})).unwrap();
    // Not listed by its catalog: nothing changes.
    assert!(!deprecated(&mut s, "stable", None, &t1));
    // All three, and the roll-up.
    assert!(deprecated(&mut s, "stable", Some(&all), &t1));
    assert_eq!(
        kinds(&s),
        [
            (
                "PackageDeprecated".into(),
                Some("olm.package/p: gone".into())
            ),
            (
                "ChannelDeprecated".into(),
                Some("olm.channel/stable: gone".into())
            ),
            (
                "BundleDeprecated".into(),
                Some("olm.bundle/p.v1: gone".into())
            ),
            (
                "Deprecated".into(),
                Some("olm.package/p: gone; olm.channel/stable: gone; olm.bundle/p.v1: gone".into())
            ),
        ]
    );
    assert!(
        s.conditions
            .iter()
            .all(|c| c.status == "True" && c.reason.is_none())
    );
    // The same again: no change, times kept.
    assert!(!deprecated(&mut s, "stable", Some(&all), &t2));
    assert!(
        s.conditions
            .iter()
            .all(|c| c.last_transition_time.as_ref() == Some(&t1))
    );
    // The bundle no longer deprecated: its condition goes, the roll-up follows.
    let no_bundle = Deprecations {
        bundle: None,
        ..all.clone()
    };
    assert!(deprecated(&mut s, "stable", Some(&no_bundle), &t2));
    assert_eq!(
        kinds(&s).last().cloned(),
        Some((
            "Deprecated".into(),
            Some("olm.package/p: gone; olm.channel/stable: gone".into())
        ))
    );
    assert!(!kinds(&s).iter().any(|(k, _)| k == "BundleDeprecated"));
    // Nothing deprecated: every condition goes, the roll-up too.
    assert!(deprecated(
        &mut s,
        "stable",
        Some(&Deprecations::default()),
        &t2
    ));
    assert!(s.conditions.is_empty());
    // No channel named: no channel notice.
    assert!(deprecated(&mut s, "", Some(&all), &t2));
    assert!(!kinds(&s).iter().any(|(k, _)| k == "ChannelDeprecated"));
}
