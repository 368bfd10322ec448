//! The aggregated API the operator serves under OLM v0 (`--api`, which the OLM v0 example
//! bundle's CSV passes with an owned APIService): `WidgetSummary`
//! (`stats.example.olm.operatorframework.io/v1`, namespaced, read only), one per namespace
//! holding widgets, named `widgets`, counting its widgets, how many are ready and their parts.
//! The API server proxies `kubectl get widgetsummaries` here through the APIService OLM v0
//! creates, with the certificate OLM v0 mounts at `/apiserver.local.config/certificates`.
//!
//! Who may call: the API server's aggregator presents its front-proxy client certificate,
//! signed by the CA that `kube-system/extension-apiserver-authentication` publishes as
//! `requestheader-client-ca-file` (OLM grants the operator's ServiceAccount the role to read
//! it); a request on a connection without a certificate from that CA is refused with 401. The
//! API server has authorised the user before it proxies, by RBAC on `widgetsummaries`.
//!
//! Answers are computed from the operator's own cache of the cluster's widgets, the store its
//! reconciler's watch fills ([`summaries`], pure): nothing is asked of the API server per
//! request, and the pod is Ready (so the Service sends it requests) only once the watch's first
//! list is in. Discovery is legacy (`/apis`, `/apis/GROUP`, `/apis/GROUP/VERSION`), which the
//! aggregator falls back to. With `Accept: …;as=Table` lists come as a Table whose columns
//! are what `kubectl get` shows.

use std::collections::BTreeMap;

use axum::Router;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use kube::runtime::reflector::Store;
use serde_json::{Value, json};

use crate::widget::Widget;

/// The API group served.
pub const GROUP: &str = "stats.example.olm.operatorframework.io";
/// Its only version.
pub const VERSION: &str = "v1";
/// The resource's plural name.
pub const PLURAL: &str = "widgetsummaries";
/// The kind.
pub const KIND: &str = "WidgetSummary";
/// The name of each namespace's summary.
pub const NAME: &str = "widgets";

/// Whether the connection a request came on presented a client certificate that the
/// front-proxy CA signed (set per connection by [`crate::tls::serve`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrontProxy(pub bool);

/// One namespace's widgets, counted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// The namespace.
    pub namespace: String,
    /// How many widgets it holds.
    pub widgets: i64,
    /// How many of them the operator found ready.
    pub ready: i64,
    /// Their parts, summed.
    pub parts: i64,
}

/// The summaries of `widgets`, one per namespace holding any, by namespace name; only
/// `namespace`'s when given.
pub fn summaries<'a>(
    widgets: impl IntoIterator<Item = &'a Widget>,
    namespace: Option<&str>,
) -> Vec<Summary> {
    let mut by_namespace: BTreeMap<&str, Summary> = BTreeMap::new();
    for w in widgets {
        let ns = w.metadata.namespace.as_deref().unwrap_or_default();
        if namespace.is_some_and(|want| want != ns) {
            continue;
        }
        let s = by_namespace.entry(ns).or_insert_with(|| Summary {
            namespace: ns.to_owned(),
            widgets: 0,
            ready: 0,
            parts: 0,
        });
        s.widgets += 1;
        s.ready += i64::from(w.status.as_ref().is_some_and(|st| st.ready));
        s.parts = s.parts.saturating_add(w.spec.size.unwrap_or(0));
    }
    by_namespace.into_values().collect()
}

/// A summary as the API serves it.
fn object(s: &Summary) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": KIND,
        "metadata": {"name": NAME, "namespace": s.namespace},
        "widgets": s.widgets,
        "ready": s.ready,
        "parts": s.parts,
    })
}

/// A list of `items`, plain or as the Table `kubectl get` asks for.
fn list(items: &[Summary], table: bool) -> Value {
    if !table {
        return json!({
            "apiVersion": format!("{GROUP}/{VERSION}"),
            "kind": format!("{KIND}List"),
            "metadata": {},
            "items": items.iter().map(object).collect::<Vec<_>>(),
        });
    }
    let column = |name: &str, kind: &str, description: &str| json!({"name": name, "type": kind, "format": if name == "Name" {"name"} else {""}, "description": description, "priority": 0});
    json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "Table",
        "metadata": {},
        "columnDefinitions": [
            column("Name", "string", "The summary's name"),
            column("Widgets", "integer", "How many widgets the namespace holds"),
            column("Ready", "integer", "How many of them are ready"),
            column("Parts", "integer", "Their parts, summed"),
        ],
        "rows": items.iter().map(|s| json!({
            "cells": [NAME, s.widgets, s.ready, s.parts],
            "object": {
                "apiVersion": "meta.k8s.io/v1",
                "kind": "PartialObjectMetadata",
                "metadata": {"name": NAME, "namespace": s.namespace},
            },
        })).collect::<Vec<_>>(),
    })
}

/// The APIResourceList of `/apis/GROUP/VERSION`.
pub fn resource_list() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "APIResourceList",
        "groupVersion": format!("{GROUP}/{VERSION}"),
        "resources": [{
            "name": PLURAL,
            "singularName": "widgetsummary",
            "namespaced": true,
            "kind": KIND,
            "verbs": ["get", "list"],
        }],
    })
}

/// The APIGroup of `/apis/GROUP`, and the only entry of `/apis`.
fn api_group() -> Value {
    let version = json!({"groupVersion": format!("{GROUP}/{VERSION}"), "version": VERSION});
    json!({
        "apiVersion": "v1",
        "kind": "APIGroup",
        "name": GROUP,
        "versions": [version],
        "preferredVersion": version,
    })
}

/// A Kubernetes Status error.
fn status(code: StatusCode, reason: &str, message: &str) -> Response {
    let body = json!({
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code.as_u16(),
    });
    json(code, &body)
}

/// The routes of the API over the reconciler's store of widgets, for a server whose
/// connections carry [`FrontProxy`].
pub fn router(widgets: Store<Widget>) -> Router {
    let base = format!("/apis/{GROUP}/{VERSION}");
    Router::new()
        .route(
            "/apis",
            get(|| async {
                let mut group = api_group();
                if let Some(g) = group.as_object_mut() {
                    g.remove("apiVersion");
                    g.remove("kind");
                }
                ok_json(&json!({"apiVersion": "v1", "kind": "APIGroupList", "groups": [group]}))
            }),
        )
        .route(
            &format!("/apis/{GROUP}"),
            get(|| async { ok_json(&api_group()) }),
        )
        .route(&base, get(|| async { ok_json(&resource_list()) }))
        .route(&format!("{base}/{PLURAL}"), get(list_all))
        .route(
            &format!("{base}/namespaces/{{namespace}}/{PLURAL}"),
            get(list_namespace),
        )
        .route(
            &format!("{base}/namespaces/{{namespace}}/{PLURAL}/{{name}}"),
            get(get_one),
        )
        .layer(axum::middleware::from_fn(front_proxy_only))
        .with_state(widgets)
}

/// Refuses a request whose connection did not present the front-proxy certificate.
async fn front_proxy_only(
    Extension(FrontProxy(verified)): Extension<FrontProxy>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    match verified {
        true => next.run(request).await,
        false => status(
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "a client certificate from the API server's front-proxy CA is required",
        ),
    }
}

/// Whether the client asked for a Table (`kubectl get` does).
fn wants_table(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("as=Table"))
}

/// The summaries of the widgets in `store`, of `namespace` only when given.
fn summaries_of(store: &Store<Widget>, namespace: Option<&str>) -> Vec<Summary> {
    summaries(store.state().iter().map(|w| &**w), namespace)
}

async fn list_all(State(widgets): State<Store<Widget>>, headers: HeaderMap) -> Response {
    ok_json(&list(&summaries_of(&widgets, None), wants_table(&headers)))
}

async fn list_namespace(
    State(widgets): State<Store<Widget>>,
    Path(namespace): Path<String>,
    headers: HeaderMap,
) -> Response {
    let found = summaries_of(&widgets, Some(&namespace));
    ok_json(&list(&found, wants_table(&headers)))
}

async fn get_one(
    State(widgets): State<Store<Widget>>,
    Path((namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let found = summaries_of(&widgets, Some(&namespace));
    match found.first().filter(|_| name == NAME) {
        Some(s) if wants_table(&headers) => ok_json(&list(std::slice::from_ref(s), true)),
        Some(s) => ok_json(&object(s)),
        None => status(
            StatusCode::NOT_FOUND,
            "NotFound",
            &format!("{PLURAL}.{GROUP} \"{name}\" not found"),
        ),
    }
}

/// `value` as the JSON body of a `code` response.
fn json(code: StatusCode, value: &Value) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// `value` as a 200 JSON response.
fn ok_json(value: &Value) -> Response {
    json(StatusCode::OK, value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::widget::{WidgetSpec, WidgetStatus};

    fn widget(ns: &str, name: &str, size: Option<i64>, ready: Option<bool>) -> Widget {
        let mut w = Widget {
            spec: WidgetSpec { size, color: None },
            status: ready.map(|ready| WidgetStatus {
                ready,
                ..WidgetStatus::default()
            }),
            ..Widget::default()
        };
        w.metadata.namespace = Some(ns.to_owned());
        w.metadata.name = Some(name.to_owned());
        w
    }

    #[test]
    fn one_summary_per_namespace_in_name_order() {
        let all = [
            widget("b", "x", Some(3), Some(true)),
            widget("a", "y", None, None),
            widget("b", "z", Some(200), Some(false)),
            widget("a", "w", Some(i64::MAX), Some(true)),
            widget("a", "v", Some(5), Some(true)),
        ];
        let s = |namespace: &str, widgets, ready, parts| Summary {
            namespace: namespace.to_owned(),
            widgets,
            ready,
            parts,
        };
        assert_eq!(
            summaries(&all, None),
            [s("a", 3, 2, i64::MAX), s("b", 2, 1, 203)]
        );
        assert_eq!(summaries(&all, Some("b")), [s("b", 2, 1, 203)]);
        assert!(summaries(&all, Some("c")).is_empty());
        assert!(summaries(&[], None).is_empty());
    }

    /// A request on a connection without the front-proxy certificate is refused before any
    /// route runs; with it, discovery answers.
    #[tokio::test]
    async fn only_the_front_proxy_is_answered() {
        use tower::ServiceExt as _;
        let (widgets, _writer) = kube::runtime::reflector::store::<Widget>();
        let discovery = format!("/apis/{GROUP}/{VERSION}");
        for (verified, want) in [(false, StatusCode::UNAUTHORIZED), (true, StatusCode::OK)] {
            let request = axum::http::Request::get(&discovery)
                .body(axum::body::Body::empty())
                .unwrap();
            let response = router(widgets.clone())
                .layer(Extension(FrontProxy(verified)))
                .oneshot(request)
                .await
                .unwrap();
            assert_eq!(response.status(), want, "verified: {verified}");
            let body = axum::body::to_bytes(response.into_body(), 1 << 20)
                .await
                .unwrap();
            let body: Value = serde_json::from_slice(&body).unwrap();
            match verified {
                false => assert_eq!(
                    (body["kind"].as_str(), body["reason"].as_str()),
                    (Some("Status"), Some("Unauthorized"))
                ),
                true => assert_eq!(body, resource_list()),
            }
        }
    }

    #[test]
    fn tables_carry_the_columns_and_each_row_its_namespace() {
        let s = Summary {
            namespace: "a".to_owned(),
            widgets: 2,
            ready: 1,
            parts: 7,
        };
        let table = list(std::slice::from_ref(&s), true);
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["rows"][0]["cells"], json!(["widgets", 2, 1, 7]));
        assert_eq!(table["rows"][0]["object"]["metadata"]["namespace"], "a");
        let plain = list(&[s], false);
        assert_eq!(plain["kind"], "WidgetSummaryList");
        assert_eq!(plain["items"][0]["parts"], 7);
        assert_eq!(resource_list()["resources"][0]["name"], PLURAL);
    }
}
