//! The registry API over a small catalog: every query's answer and error text
//! (operator-registry's `pkg/cache` and `pkg/server` semantics), and the same answers over gRPC
//! from a served instance, with health and reflection.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use olm_registry::Registry;
use olm_registry::api;
use olm_registry::api::registry_client::RegistryClient;

const CATALOG: &str = r#"---
schema: olm.package
name: etcd
defaultChannel: stable
description: etcd operator
---
schema: olm.channel
package: etcd
name: stable
entries:
  - name: etcd.v0.9.0
  - name: etcd.v0.9.2
    replaces: etcd.v0.9.0
    skips: [etcd.v0.9.1]
    skipRange: "<0.9.2"
---
schema: olm.channel
package: etcd
name: alpha
entries:
  - name: etcd.v0.9.2
---
schema: olm.bundle
package: etcd
name: etcd.v0.9.0
image: quay.io/etcd/bundle:v0.9.0
properties:
  - type: olm.package
    value: {packageName: etcd, version: 0.9.0}
  - type: olm.gvk
    value: {group: etcd.database.coreos.com, kind: EtcdCluster, version: v1beta2}
---
schema: olm.bundle
package: etcd
name: etcd.v0.9.2
image: quay.io/etcd/bundle:v0.9.2
properties:
  - type: olm.package
    value: {packageName: etcd, version: 0.9.2}
  - type: olm.gvk
    value: {group: etcd.database.coreos.com, kind: EtcdCluster, version: v1beta2}
  - type: olm.package.required
    value: {packageName: prometheus, versionRange: ">=0.14.0"}
  - type: olm.gvk.required
    value: {group: monitoring.coreos.com, kind: Prometheus, version: v1}
  - type: olm.csv.metadata
    value:
      displayName: etcd
      installModes: [{supported: true, type: OwnNamespace}]
      provider: {name: CoreOS}
---
schema: olm.package
name: prometheus
defaultChannel: beta
---
schema: olm.channel
package: prometheus
name: beta
entries:
  - name: prometheus.v0.14.0
---
schema: olm.bundle
package: prometheus
name: prometheus.v0.14.0
image: ""
properties:
  - type: olm.package
    value: {packageName: prometheus, version: 0.14.0}
  - type: olm.gvk
    value: {group: monitoring.coreos.com, kind: Prometheus, version: v1}
  - type: olm.bundle.object
    value: {data: eyJhcGlWZXJzaW9uIjoib3BlcmF0b3JzLmNvcmVvcy5jb20vdjFhbHBoYTEiLCJraW5kIjoiQ2x1c3RlclNlcnZpY2VWZXJzaW9uIiwibWV0YWRhdGEiOnsibmFtZSI6InByb21ldGhldXMudjAuMTQuMCJ9fQ==}
---
schema: olm.deprecations
package: etcd
entries:
  - reference: {schema: olm.channel, name: alpha}
    message: alpha is gone
"#;

fn registry() -> Registry {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("catalog.yaml"), CATALOG).unwrap();
    let catalog = olm_catalog::load::load_path(dir.path()).unwrap();
    Registry::build(&catalog, olm_registry::cache::digest(dir.path()).unwrap()).unwrap()
}

#[test]
fn packages_and_bundles() {
    let r = registry();
    let names: Vec<String> = r.list_packages().into_iter().map(|p| p.name).collect();
    assert_eq!(names, ["etcd", "prometheus"]);
    let etcd = r.get_package("etcd").unwrap();
    assert_eq!(etcd.default_channel_name, "stable");
    let channels: Vec<(&str, &str)> = etcd
        .channels
        .iter()
        .map(|c| (c.name.as_str(), c.csv_name.as_str()))
        .collect();
    assert_eq!(
        channels,
        [("alpha", "etcd.v0.9.2"), ("stable", "etcd.v0.9.2")]
    );
    assert_eq!(
        etcd.channels[0].deprecation.as_ref().unwrap().message,
        "alpha is gone"
    );
    assert_eq!(
        r.get_package("nope").unwrap_err().to_string(),
        r#"package "nope" not found"#
    );

    let b = r.get_bundle("etcd", "stable", "etcd.v0.9.2").unwrap();
    assert_eq!((b.replaces.as_str(), b.skips.len()), ("", 0), "trimmed");
    assert_eq!(b.version, "0.9.2");
    assert_eq!(b.skip_range, "<0.9.2");
    assert_eq!(b.bundle_path, "quay.io/etcd/bundle:v0.9.2");
    let deps: Vec<(&str, &str)> = b
        .dependencies
        .iter()
        .map(|d| (d.r#type.as_str(), d.value.as_str()))
        .collect();
    assert_eq!(
        deps,
        [
            (
                "olm.package",
                r#"{"packageName":"prometheus","version":">=0.14.0"}"#
            ),
            (
                "olm.gvk",
                r#"{"group":"monitoring.coreos.com","kind":"Prometheus","version":"v1"}"#
            ),
        ]
    );
    assert!(b.properties.iter().all(|p| p.r#type != "olm.csv.metadata"));
    // The stub CSV made from olm.csv.metadata, as Go writes a ClusterServiceVersion.
    assert_eq!(
        b.csv_json,
        r#"{"kind":"ClusterServiceVersion","apiVersion":"operators.coreos.com/v1alpha1","metadata":{"name":"etcd.v0.9.2"},"spec":{"install":{"strategy":"deployment","spec":{"deployments":null}},"version":"0.9.2","customresourcedefinitions":{},"apiservicedefinitions":{},"displayName":"etcd","description":"etcd operator","provider":{"name":"CoreOS"},"installModes":[{"type":"OwnNamespace","supported":true}],"cleanup":{"enabled":false}},"status":{"cleanup":{}}}"#
    );
    assert_eq!(b.object, std::slice::from_ref(&b.csv_json));
    let p = r
        .get_bundle("prometheus", "beta", "prometheus.v0.14.0")
        .unwrap();
    assert_eq!(
        p.csv_json,
        r#"{"apiVersion":"operators.coreos.com/v1alpha1","kind":"ClusterServiceVersion","metadata":{"name":"prometheus.v0.14.0"}}"#
    );

    for (args, err) in [
        (("x", "stable", "a"), r#"package "x" not found"#),
        (
            ("etcd", "beta", "a"),
            r#"package "etcd", channel "beta" not found"#,
        ),
        (
            ("etcd", "stable", "a"),
            r#"package "etcd", channel "stable", bundle "a" not found"#,
        ),
    ] {
        assert_eq!(
            r.get_bundle(args.0, args.1, args.2)
                .unwrap_err()
                .to_string(),
            err
        );
    }
    assert_eq!(
        r.get_bundle_for_channel("etcd", "stable").unwrap().csv_name,
        "etcd.v0.9.2"
    );

    // ListBundles: channel, package, bundle order; CSV and manifests dropped with an image.
    let listed: Vec<(String, String, String, bool)> = (0..r.listing.len())
        .filter_map(|i| r.listed(i))
        .map(|b| {
            (
                b.channel_name,
                b.package_name,
                b.csv_name,
                b.csv_json.is_empty(),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("alpha".into(), "etcd".into(), "etcd.v0.9.2".into(), true),
            (
                "beta".into(),
                "prometheus".into(),
                "prometheus.v0.14.0".into(),
                false
            ),
            ("stable".into(), "etcd".into(), "etcd.v0.9.0".into(), true),
            ("stable".into(), "etcd".into(), "etcd.v0.9.2".into(), true),
        ]
    );
    assert_eq!(r.listed(3).unwrap().replaces, "etcd.v0.9.0");
}

#[test]
fn edges_and_providers() {
    let r = registry();
    let e = r.channel_entries_that_replace("etcd.v0.9.1").unwrap();
    assert_eq!(e.len(), 1);
    assert_eq!(
        (e[0].bundle_name.as_str(), e[0].replaces.as_str()),
        ("etcd.v0.9.2", "etcd.v0.9.0"),
        "a skip's entry carries the bundle's own replaces"
    );
    assert_eq!(
        r.channel_entries_that_replace("nope")
            .unwrap_err()
            .to_string(),
        "no channel entries found that replace nope"
    );
    assert_eq!(
        r.bundle_that_replaces("etcd.v0.9.0", "etcd", "stable")
            .unwrap()
            .csv_name,
        "etcd.v0.9.2"
    );
    assert_eq!(
        r.bundle_that_replaces("etcd.v0.9.0", "x", "stable")
            .unwrap_err()
            .to_string(),
        "package x not found"
    );
    assert_eq!(
        r.bundle_that_replaces("zzz", "etcd", "stable")
            .unwrap_err()
            .to_string(),
        r#"no entry found for package "etcd", channel "stable""#
    );

    let g = ("etcd.database.coreos.com", "v1beta2", "EtcdCluster");
    let all = r.channel_entries_that_provide(g.0, g.1, g.2).unwrap();
    let all: Vec<(&str, &str, &str)> = all
        .iter()
        .map(|e| {
            (
                e.channel_name.as_str(),
                e.bundle_name.as_str(),
                e.replaces.as_str(),
            )
        })
        .collect();
    // Every bundle, plus one entry per skip even when not in the channel.
    assert_eq!(
        all,
        [
            ("alpha", "etcd.v0.9.2", ""),
            ("stable", "etcd.v0.9.0", ""),
            ("stable", "etcd.v0.9.2", "etcd.v0.9.0"),
            ("stable", "etcd.v0.9.2", "etcd.v0.9.1"),
        ]
    );
    // Heads only, and skips only when in the channel.
    let latest = r
        .latest_channel_entries_that_provide(g.0, g.1, g.2)
        .unwrap();
    assert_eq!(latest.len(), 2);
    let default = r.default_bundle_that_provides(g.0, g.1, g.2).unwrap();
    assert_eq!(
        (default.channel_name.as_str(), default.csv_name.as_str()),
        ("stable", "etcd.v0.9.2")
    );
    assert_eq!(
        r.channel_entries_that_provide("a", "b", "C")
            .unwrap_err()
            .to_string(),
        r#"no channel entries found that provide group:"a" version:"b" kind:"C""#
    );
}

#[test]
fn cache_round_trip_and_integrity() {
    let dir = tempfile::tempdir().unwrap();
    let r = registry();
    olm_registry::cache::store(dir.path(), &r).unwrap();
    assert_eq!(olm_registry::cache::load(dir.path()).unwrap(), Some(r));
    let empty = tempfile::tempdir().unwrap();
    assert_eq!(olm_registry::cache::load(empty.path()).unwrap(), None);
}

#[tokio::test]
async fn served_over_grpc() {
    let r = Arc::new(registry());
    let metas = Arc::new(olm_registry::metas::Metas::new(&r.metas));
    let routes = olm_registry::server::routes(
        olm_registry::server::Service::new(r, metas),
        tokio::sync::watch::channel(false).1,
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_routes(routes)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    let mut client = RegistryClient::connect(format!("http://{addr}"))
        .await
        .unwrap();
    let mut bundles = client
        .list_bundles(api::ListBundlesRequest {})
        .await
        .unwrap()
        .into_inner();
    let mut n = 0;
    while let Some(b) = bundles.message().await.unwrap() {
        assert!(!b.csv_name.is_empty());
        n += 1;
    }
    assert_eq!(n, 4);
    let err = client
        .get_package(api::GetPackageRequest {
            name: "nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::Unknown);
    assert_eq!(err.message(), r#"package "nope" not found"#);
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel);
    let status = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "anything".into(),
        })
        .await
        .unwrap()
        .into_inner()
        .status;
    assert_eq!(
        status,
        i32::from(tonic_health::pb::health_check_response::ServingStatus::Serving)
    );
}
