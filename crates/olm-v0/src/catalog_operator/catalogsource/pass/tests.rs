//! Upstream's vectors from the OLM repo's `pkg/controller/operators/catalog/operator_test.go`
//! (`TestSyncCatalogSources` v0.46.0: `CatalogSourceWithInvalidSourceType`,
//! `CatalogSourceWithGrpcImage`, `CatalogSourceWithGrpcType/EnsuresImageOrAddressIsSet`,
//! `CatalogSourceWithInternalType/EnsuresConfigMapIsSet`,
//! `GRPCConnectionStateAddressIsUpdated`), then olm's own cases: in-process serving, address
//! sources, registry failures and the reasons a later pass clears.

use serde_json::{Value, json};

use super::*;
use crate::catalog_operator::catalogsource::parse;

const NOW: &str = "2018-01-26T20:40:00Z";

/// A time as the API writes it.
fn time(text: &str) -> Time {
    Time(
        text.parse()
            .unwrap_or_else(|e| panic!("a test time {text}: {e}")),
    )
}
const EARLIER: &str = "2018-01-26T20:39:00Z";

fn source(spec: Value, status: Value) -> Value {
    json!({"metadata": {"name": "cool-catalog", "namespace": "cool-namespace"},
        "spec": spec, "status": status})
}

fn grpc_image() -> Value {
    json!({"sourceType": "grpc", "image": "catalog-image"})
}

fn service(created: &str) -> Value {
    json!({"protocol": "grpc", "serviceName": "cool-catalog", "serviceNamespace": "cool-namespace",
        "port": "50051", "createdAt": created})
}

fn ready(address: &str) -> Connection {
    Connection {
        address: address.into(),
        observed: "READY".into(),
        since: time(NOW),
    }
}

fn state(address: &str) -> Value {
    json!({"address": address, "lastObservedState": "READY", "lastConnect": NOW})
}

fn found<'a>(registry: Result<(), &'a str>, connection: Option<&'a Connection>) -> Found<'a> {
    Found {
        registry,
        connection,
        poll_due: false,
        now: now(),
    }
}

/// [`NOW`], for as long as a test runs.
fn now() -> &'static Time {
    static NOW_TIME: std::sync::OnceLock<Time> = std::sync::OnceLock::new();
    NOW_TIME.get_or_init(|| time(NOW))
}

/// One pass: the route and the status it concludes.
fn pass(source: &Value, found: &Found<'_>) -> (Route, Value) {
    let source = parse(source.clone());
    let started = start(&source);
    let status = conclude(&source, &started, found);
    let status = serde_json::to_value(status).unwrap_or_else(|e| panic!("a status: {e}"));
    (started.route, status)
}

#[test]
fn invalid_specs_say_why_in_upstreams_words() {
    let table = [
        (
            "CatalogSourceWithInvalidSourceType",
            json!({"sourceType": "nope"}),
            "unknown sourcetype: nope",
        ),
        (
            "CatalogSourceWithGrpcType/EnsuresImageOrAddressIsSet",
            json!({"sourceType": "grpc"}),
            "image and address unset: at least one must be set for sourcetype: grpc",
        ),
        (
            "CatalogSourceWithInternalType/EnsuresConfigMapIsSet",
            json!({"sourceType": "internal"}),
            "configmap name unset: must be set for sourcetype: internal",
        ),
    ];
    for (name, spec, message) in table {
        // Whatever was connected before is no longer shown.
        let s = source(spec, json!({"connectionState": state("gone:50051")}));
        let (route, status) = pass(&s, &found(Ok(()), None));
        assert_eq!(route, Route::Invalid, "{name}");
        assert_eq!(
            status,
            json!({"reason": "SpecInvalidError", "message": message}),
            "{name}"
        );
    }
}

#[test]
fn grpc_sources_are_served_and_reported_as_upstream_reports_them() {
    let service_address = "cool-catalog.cool-namespace.svc:50051";
    let connected = ready(service_address);
    let stale = ready("..svc:");
    let table: Vec<(&str, Value, Found, Route, Value)> = vec![
        (
            "CatalogSourceWithGrpcImage",
            source(grpc_image(), json!({})),
            found(Ok(()), None),
            Route::Pod {
                address: service_address.into(),
            },
            json!({"registryService": service(NOW)}),
        ),
        (
            "GRPCConnectionStateAddressIsUpdated",
            source(
                grpc_image(),
                json!({"registryService": service(EARLIER), "connectionState": {"address": "..svc:", "lastObservedState": "CONNECTING"}}),
            ),
            found(Ok(()), Some(&connected)),
            Route::Pod {
                address: service_address.into(),
            },
            json!({"registryService": service(EARLIER), "connectionState": state(service_address)}),
        ),
        (
            "the registry could not be made: why, with the connection as reported",
            source(grpc_image(), json!({})),
            found(Err("pods \"x\" is forbidden"), Some(&stale)),
            Route::Pod {
                address: service_address.into(),
            },
            json!({"reason": "RegistryServerError", "message": "pods \"x\" is forbidden",
                "connectionState": state("..svc:")}),
        ),
        (
            "made again: the earlier failure cleared",
            source(
                grpc_image(),
                json!({"reason": "RegistryServerError", "message": "m", "registryService": service(EARLIER)}),
            ),
            found(Ok(()), None),
            Route::Pod {
                address: service_address.into(),
            },
            json!({"registryService": service(EARLIER)}),
        ),
        (
            "a failed poll stays reported until a poll settles",
            source(
                grpc_image(),
                json!({"reason": "RegistryServerError",
                    "message": "couldn't ensure registry server - error ensuring update pod for catalog source cool-catalog: update pod x in a Failed state: deleted update pod",
                    "registryService": service(EARLIER)}),
            ),
            found(Ok(()), None),
            Route::Pod {
                address: service_address.into(),
            },
            json!({"reason": "RegistryServerError",
                "message": "couldn't ensure registry server - error ensuring update pod for catalog source cool-catalog: update pod x in a Failed state: deleted update pod",
                "registryService": service(EARLIER)}),
        ),
        (
            "an address: the protocol and when it was first looked at",
            source(
                json!({"sourceType": "grpc", "address": "1.2.3.4:50051"}),
                json!({}),
            ),
            found(Ok(()), Some(&stale)),
            Route::Address {
                address: "1.2.3.4:50051".into(),
            },
            json!({"registryService": {"protocol": "grpc", "createdAt": NOW},
                "connectionState": state("..svc:")}),
        ),
        (
            "an address already recorded: kept",
            source(
                json!({"sourceType": "grpc", "address": "1.2.3.4:50051"}),
                json!({"registryService": {"protocol": "grpc", "createdAt": EARLIER}}),
            ),
            found(Ok(()), None),
            Route::Address {
                address: "1.2.3.4:50051".into(),
            },
            json!({"registryService": {"protocol": "grpc", "createdAt": EARLIER}}),
        ),
    ];
    for (name, s, found, want_route, want) in table {
        let (route, status) = pass(&s, &found);
        assert_eq!(route, want_route, "{name}");
        assert_eq!(status, want, "{name}");
    }
    assert_eq!(
        pass(
            &source(grpc_image(), json!({"registryService": service(EARLIER)})),
            &found(Ok(()), None)
        )
        .1,
        json!({"registryService": service(EARLIER)}),
        "an unchanged source concludes the status it started from"
    );
}

#[test]
fn in_process_catalogs_are_served_by_olm() {
    let annotated = |status: Value, poll: bool| {
        let mut spec = grpc_image();
        if poll {
            spec["updateStrategy"] = json!({"registryPoll": {"interval": "10m"}});
        }
        let mut s = source(spec, status);
        s["metadata"]["annotations"] = json!({SERVE_IN_PROCESS_ANNOTATION: "true"});
        s
    };
    let route = Route::InProcess {
        image: "catalog-image".into(),
    };
    let local = ready("127.0.0.1:4000");
    let s = annotated(json!({}), false);
    assert_eq!(
        pass(&s, &found(Ok(()), Some(&local))),
        (
            route.clone(),
            json!({"registryService": service(NOW), "connectionState": state("127.0.0.1:4000")})
        )
    );
    let s = annotated(json!({"connectionState": state("127.0.0.1:1")}), false);
    assert_eq!(
        pass(
            &s,
            &found(Err("pulling catalog-image: manifest unknown"), None)
        ),
        (
            route.clone(),
            json!({"reason": "RegistryServerError", "message": "pulling catalog-image: manifest unknown",
                "connectionState": state("127.0.0.1:1")})
        ),
        "not served: why, the old connection state kept"
    );
    let polled = annotated(json!({"latestImageRegistryPoll": EARLIER}), true);
    let due = Found {
        poll_due: true,
        ..found(Ok(()), None)
    };
    assert_eq!(
        pass(&polled, &due).1,
        json!({"latestImageRegistryPoll": NOW, "registryService": service(NOW)}),
        "a due poll is stamped"
    );
    assert_eq!(
        pass(&polled, &found(Ok(()), None)).1,
        json!({"latestImageRegistryPoll": EARLIER, "registryService": service(NOW)}),
        "one not due is not"
    );
    let mut not_asked = annotated(json!({}), false);
    not_asked["metadata"]["annotations"][SERVE_IN_PROCESS_ANNOTATION] = json!("false");
    assert!(matches!(start(&parse(not_asked)).route, Route::Pod { .. }));
}

#[test]
fn reasons_of_the_spec_come_and_go_with_it() {
    let bad_interval = json!({"sourceType": "grpc", "image": "i",
        "updateStrategy": {"registryPoll": {"interval": "soon"}}});
    let started = start(&parse(source(bad_interval, json!({}))));
    assert_eq!(
        started.status.reason.as_deref(),
        Some("InvalidIntervalError")
    );
    assert!(started.poll.is_some());
    for reason in ["SpecInvalidError", "InvalidIntervalError"] {
        let fixed = start(&parse(source(
            grpc_image(),
            json!({"reason": reason, "message": "m"}),
        )));
        assert_eq!(
            fixed.status,
            CatalogSourceStatus::default(),
            "{reason} cleared"
        );
    }
    let other = start(&parse(source(
        grpc_image(),
        json!({"reason": "RegistryServerError", "message": "m"}),
    )));
    assert_eq!(
        other.status.reason.as_deref(),
        Some("RegistryServerError"),
        "another reason is the registry's to clear"
    );
    let config_map = start(&parse(source(
        json!({"sourceType": "configmap", "configMap": "cm"}),
        json!({}),
    )));
    assert_eq!(config_map.route, Route::ConfigMap);
}

/// A poll of a Pod-served source: an update Pod started is stamped, one that failed says why,
/// and a poll that settles clears the failure it had reported.
#[test]
fn poll_steps_mark_the_status() {
    let mut status = CatalogSourceStatus::default();
    polled(&mut status, &UpdateStep::Create, now());
    assert_eq!(status.latest_image_registry_poll.as_ref(), Some(now()));
    let failed = UpdateStep::Failed {
        pod: "update-1".to_owned(),
        message: "update pod update-1 is crash looping".to_owned(),
    };
    polled(&mut status, &failed, now());
    assert_eq!(status.reason.as_deref(), Some("RegistryServerError"));
    assert_eq!(
        status.message.as_deref(),
        Some("update pod update-1 is crash looping")
    );
    polled(&mut status, &UpdateStep::Idle, now());
    assert_eq!(status.reason.as_deref(), Some("RegistryServerError"));
    polled(
        &mut status,
        &UpdateStep::Discard {
            pods: vec!["update-1".to_owned()],
        },
        now(),
    );
    assert_eq!((status.reason, status.message), (None, None));
}
