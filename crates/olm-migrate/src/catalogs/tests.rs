//! The plan against library-olm's `catalogmigration.go`: skip reasons, naming, adoption,
//! priority and poll-interval rules, and the closing report.

use serde_json::json;

use super::*;

fn source(ns: &str, name: &str, spec: serde_json::Value) -> CatalogSource {
    serde_json::from_value(json!({"apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource", "metadata": {"name": name, "namespace": ns}, "spec": spec}))
    .expect("source")
}

fn image(ns: &str, name: &str, image: &str) -> CatalogSource {
    source(ns, name, json!({"sourceType": "grpc", "image": image}))
}

fn catalog(name: &str, image: &str, annotated: bool) -> ClusterCatalog {
    let mut c: ClusterCatalog = serde_json::from_value(json!({
        "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
        "metadata": {"name": name},
        "spec": {"source": {"type": "Image", "image": {"ref": image}}},
    }))
    .expect("catalog");
    if annotated {
        c.metadata.annotations = Some(BTreeMap::from([(
            crate::MIGRATED_FROM_CATALOG_SOURCE.to_owned(),
            "olm/x".to_owned(),
        )]));
    }
    c
}

fn actions(planned: &[Planned]) -> Vec<(String, Action)> {
    planned
        .iter()
        .map(|p| (p.source(), p.action.clone()))
        .collect()
}

#[test]
fn sources_that_are_not_images_are_skipped_first_with_upstreams_reasons() {
    let sources = [
        image("a", "img", "quay.io/c:1"),
        source(
            "b",
            "cm",
            json!({"sourceType": "configmap", "configMap": "x"}),
        ),
        source(
            "b",
            "internal",
            json!({"sourceType": "internal", "configMap": "x"}),
        ),
        source(
            "c",
            "address",
            json!({"sourceType": "grpc", "address": "10.0.0.1:50051"}),
        ),
        source("c", "odd", json!({"sourceType": "sqlite"})),
    ];
    let planned = plan(&sources, &[], false);
    let skips: Vec<(String, Action)> = actions(&planned).into_iter().take(4).collect();
    assert_eq!(
        skips,
        [
            (
                "b/cm".to_owned(),
                Action::Skip("configmap-type CatalogSource has no OLMv1 equivalent".into())
            ),
            (
                "b/internal".to_owned(),
                Action::Skip("internal-type CatalogSource has no OLMv1 equivalent".into())
            ),
            (
                "c/address".to_owned(),
                Action::Skip(
                    "grpc address-only CatalogSource (no spec.image) has no OLMv1 equivalent"
                        .into()
                )
            ),
            (
                "c/odd".to_owned(),
                Action::Skip("unsupported sourceType \"sqlite\"".into())
            ),
        ]
    );
    assert_eq!(planned[4].source(), "a/img");
    assert!(matches!(planned[4].action, Action::Create(_)));
}

#[test]
fn sources_of_one_name_share_a_catalog_only_when_they_share_the_image() {
    let sources = [
        image("a", "community", "quay.io/community:v1"),
        image("b", "community", "quay.io/community:v1"),
        image("a", "certified", "quay.io/certified:v1"),
        image("b", "certified", "quay.io/certified:v2"),
    ];
    let planned = plan(&sources, &[], false);
    let chosen: Vec<(String, Option<&str>)> =
        planned.iter().map(|p| (p.source(), p.catalog())).collect();
    assert_eq!(
        chosen,
        [
            ("a/certified".to_owned(), Some("certified-a")),
            ("a/community".to_owned(), Some("community")),
            ("b/certified".to_owned(), Some("certified-b")),
            ("b/community".to_owned(), Some("community")),
        ]
    );
    assert!(matches!(planned[1].action, Action::Create(_)));
    assert_eq!(planned[3].action, Action::Shared("community".into()));
}

#[test]
fn existing_catalogs_of_the_image_are_adopted_and_others_names_are_refused() {
    let sources = [
        image("olm", "community", "quay.io/community:v1"),
        image("olm", "certified", "quay.io/certified:v1"),
        image("olm", "redhat", "quay.io/redhat:v1"),
    ];
    let catalogs = [
        catalog("zz-community", "quay.io/community:v1", false),
        catalog("aa-community", "quay.io/community:v1", true),
        catalog("certified", "quay.io/other:v9", false),
        catalog("redhat", "quay.io/redhat:v1", true),
    ];
    assert_eq!(
        actions(&plan(&sources, &catalogs, false)),
        [
            ("olm/certified".to_owned(), Action::Error("ClusterCatalog certified already exists with image \"quay.io/other:v9\", which does not match CatalogSource image \"quay.io/certified:v1\"".into())),
            // Not named like the source: the first by name; already annotated, left so.
            ("olm/community".to_owned(), Action::Adopt { catalog: "aa-community".into(), annotate: false }),
            ("olm/redhat".to_owned(), Action::Adopt { catalog: "redhat".into(), annotate: false }),
        ]
    );
    let unannotated = [catalog("community", "quay.io/community:v1", false)];
    assert_eq!(
        plan(&sources[..1], &unannotated, false)[0].action,
        Action::Adopt {
            catalog: "community".into(),
            annotate: true
        }
    );
}

#[test]
fn the_created_catalog_carries_image_priority_poll_and_origin() {
    let polled = source(
        "olm",
        "community",
        json!({"sourceType": "grpc", "image": "quay.io/community:v1", "priority": -100,
            "updateStrategy": {"registryPoll": {"interval": "1h30m"}},
            "secrets": ["pull-a", "pull-b"], "grpcPodConfig": {"nodeSelector": {"a": "b"}}}),
    );
    let planned = plan(std::slice::from_ref(&polled), &[], false);
    let Action::Create(created) = &planned[0].action else {
        panic!("{planned:?}")
    };
    assert_eq!(
        serde_json::to_value(created.as_ref()).expect("json"),
        json!({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
            "metadata": {"name": "community", "annotations": {
                "olm.operatorframework.io/migrated-from-catalogsource": "olm/community"}},
            "spec": {"source": {"type": "Image", "image": {"ref": "quay.io/community:v1",
                "pollIntervalMinutes": 90}}, "priority": -100, "availabilityMode": "Available"}})
    );
    assert_eq!(
        planned[0].notes,
        [
            "spec.secrets (2 secret(s)) has no OLMv1 equivalent; OLMv1 uses the cluster global pull secret",
            "spec.grpcPodConfig has no OLMv1 equivalent; catalogd manages the serving pod configuration",
        ]
    );
    let poll = |spec: serde_json::Value| poll_minutes(&source("o", "n", spec));
    assert_eq!(
        poll(json!({"sourceType": "grpc", "image": "q/c:1",
            "updateStrategy": {"registryPoll": {"interval": "45s"}}})),
        Some(1)
    );
    assert_eq!(
        poll(
            json!({"sourceType": "grpc", "image": "q/c@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "updateStrategy": {"registryPoll": {"interval": "10m"}}})
        ),
        None
    );
    assert_eq!(poll(json!({"sourceType": "grpc", "image": "q/c:1"})), None);
    assert_eq!(
        poll(json!({"sourceType": "grpc", "image": "q/c:1",
            "updateStrategy": {"registryPoll": {"interval": "0s"}}})),
        None
    );
}

#[test]
fn priorities_outside_int32_are_skipped_unless_acknowledged() {
    let big = source(
        "olm",
        "big",
        json!({"sourceType": "grpc", "image": "q/big:1", "priority": 3_000_000_000_i64}),
    );
    assert_eq!(
        plan(std::slice::from_ref(&big), &[], false)[0].action,
        Action::Skip("spec.priority 3000000000 is out of int32 range; pass --acknowledge-priority-overflow to cap and proceed".into())
    );
    let Action::Create(capped) = &plan(std::slice::from_ref(&big), &[], true)[0].action else {
        panic!("not created")
    };
    assert_eq!(capped.spec.priority, i32::MAX);
}

#[test]
fn referenced_sources_stay() {
    let subs = [("olm".to_owned(), "community".to_owned())];
    assert!(referenced("olm", "community", &subs));
    assert!(!referenced("ops", "community", &subs));
}

#[test]
fn the_report_groups_outcomes_as_upstream_prints_them() {
    let done = |name: &str, catalog: &str, outcome: Outcome, reason: &str| Done {
        catalog_source_namespace: "olm".into(),
        catalog_source_name: name.into(),
        cluster_catalog_name: catalog.into(),
        outcome,
        reason: reason.into(),
        notes: Vec::new(),
    };
    let ran = [
        done(
            "community",
            "community",
            Outcome::Created,
            "created from image q/c:1",
        ),
        done(
            "redhat",
            "redhat",
            Outcome::Adopted,
            "existing ClusterCatalog with matching image adopted",
        ),
        done(
            "cm",
            "",
            Outcome::Skipped,
            "configmap-type CatalogSource has no OLMv1 equivalent",
        ),
    ];
    assert_eq!(
        report(&ran, false),
        "\nCreated (1):\n  ✓ olm/community → ClusterCatalog/community\n\nAdopted existing (1):\n  ✓ olm/redhat → ClusterCatalog/redhat\n\nSkipped (1):\n  - olm/cm: configmap-type CatalogSource has no OLMv1 equivalent\n\nDone: 2 ClusterCatalog(s) ready\n"
    );
    let planned = [done(
        "community",
        "community",
        Outcome::DryRun,
        "would create ClusterCatalog community from image q/c:1",
    )];
    assert_eq!(
        report(&planned, true),
        format!(
            "Would migrate:\n  {:<40} → community\n    would create ClusterCatalog community from image q/c:1\n\nDry run complete.\n",
            "olm/community"
        )
    );
    let failed = [done(
        "certified",
        "",
        Outcome::Error,
        "failed to create ClusterCatalog: forbidden",
    )];
    assert_eq!(
        report(&failed, false),
        "\nErrors (1):\n  ✗ olm/certified: failed to create ClusterCatalog: forbidden\n"
    );
    assert_eq!(
        report(&[], false),
        "\nNo migratable CatalogSources found.\n"
    );
}
