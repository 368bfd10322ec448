//! The catalog HTTP API answers like catalogd: status codes, bodies, headers, conditional and
//! range requests, metas queries in file order, gzip, and the request-duration metric. These
//! tests drive the router directly (no cluster needed); `tests/cluster.rs` goes through a real
//! control plane and registry.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use olm_catalogd::metrics::Metrics;
use olm_catalogd::server::{AppState, router};
use olm_catalogd::storage::Storage;
use tower::ServiceExt;

const FBC: &str = r#"{"schema":"olm.package","name":"foo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v0.1.0"},{"name":"foo.v0.2.0","replaces":"foo.v0.1.0"}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v0.1.0","image":"example.com/foo:v0.1.0","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"0.1.0"}}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v0.2.0","image":"example.com/foo:v0.2.0","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"0.2.0"}}]}
{"schema":"olm.package","name":"bar","defaultChannel":"alpha"}
{"schema":"olm.channel","package":"bar","name":"alpha","entries":[{"name":"bar.v1.0.0"}]}
{"schema":"olm.bundle","package":"bar","name":"bar.v1.0.0","image":"example.com/bar:v1.0.0","properties":[{"type":"olm.package","value":{"packageName":"bar","version":"1.0.0"}}]}
{"schema":"olm.deprecations","package":"foo","entries":[{"reference":{"schema":"olm.bundle","name":"foo.v0.1.0"},"message":"use 0.2.0"}]}
"#;

struct Fixture {
    _dir: tempfile::TempDir,
    state: AppState,
    jsonl: String,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tmp");
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).expect("mkdir");
    // A long blob of a custom schema pushes the file over the gzip threshold.
    let big = format!(
        "{{\"schema\":\"example.notes\",\"package\":\"bar\",\"name\":\"notes\",\"text\":\"{}\"}}\n",
        "lorem ipsum ".repeat(200)
    );
    std::fs::write(src.join("catalog.json"), format!("{FBC}{big}")).expect("write");
    let storage = Storage::open(dir.path().join("store")).expect("open");
    storage
        .store(
            "test-catalog",
            "registry.example/cat@sha256:00",
            "sha256:00",
            jiff::Timestamp::now(),
            &src,
        )
        .expect("store");
    let mut jsonl = Vec::new();
    olm_catalog::write::write_jsonl(&olm_catalog::load_path(&src).expect("load"), &mut jsonl)
        .expect("jsonl");
    Fixture {
        _dir: dir,
        state: AppState {
            storage: Arc::new(storage),
            metrics: Arc::new(Metrics::default()),
            metas: true,
        },
        jsonl: String::from_utf8(jsonl).expect("utf8"),
    }
}

struct Reply {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

async fn send(
    f: &Fixture,
    method: Method,
    uri: &str,
    headers: &[(header::HeaderName, &str)],
) -> Reply {
    let mut req = Request::builder().method(method).uri(uri);
    for (k, v) in headers {
        req = req.header(k, *v);
    }
    let response = router(f.state.clone())
        .oneshot(req.body(Body::empty()).expect("request"))
        .await
        .expect("infallible");
    let status = response.status();
    let headers = response.headers().clone();
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body")
        .to_vec();
    Reply {
        status,
        headers,
        body,
    }
}

async fn get(f: &Fixture, uri: &str) -> Reply {
    send(f, Method::GET, uri, &[]).await
}

/// The lines of the canonical file whose JSON matches `pred`, in file order.
fn lines(f: &Fixture, pred: impl Fn(&serde_json::Value) -> bool) -> String {
    f.jsonl
        .split_inclusive('\n')
        .filter(|l| pred(&serde_json::from_str(l).expect("json")))
        .collect()
}

#[tokio::test]
async fn all_serves_the_canonical_file() {
    let f = fixture();
    let r = get(&f, "/catalogs/test-catalog/api/v1/all").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.text(), f.jsonl);
    assert_eq!(r.header(header::CONTENT_TYPE), Some("application/jsonl"));
    assert_eq!(r.header(header::ACCEPT_RANGES), Some("bytes"));
    assert_eq!(
        r.header(header::CONTENT_LENGTH),
        Some(f.jsonl.len().to_string().as_str())
    );
    let last_modified = r
        .header(header::LAST_MODIFIED)
        .expect("Last-Modified")
        .to_string();

    let head = send(&f, Method::HEAD, "/catalogs/test-catalog/api/v1/all", &[]).await;
    assert_eq!(head.status, StatusCode::OK);
    assert!(head.body.is_empty());
    assert_eq!(
        head.header(header::CONTENT_LENGTH),
        Some(f.jsonl.len().to_string().as_str())
    );

    let cached = send(
        &f,
        Method::GET,
        "/catalogs/test-catalog/api/v1/all",
        &[(header::IF_MODIFIED_SINCE, &last_modified)],
    )
    .await;
    assert_eq!(cached.status, StatusCode::NOT_MODIFIED);
    assert!(cached.body.is_empty());

    let stale = send(
        &f,
        Method::GET,
        "/catalogs/test-catalog/api/v1/all",
        &[(header::IF_UNMODIFIED_SINCE, "Mon, 01 Jan 2001 00:00:00 GMT")],
    )
    .await;
    assert_eq!(stale.status, StatusCode::PRECONDITION_FAILED);
}

#[tokio::test]
async fn all_honours_ranges() {
    let f = fixture();
    let r = send(
        &f,
        Method::GET,
        "/catalogs/test-catalog/api/v1/all",
        &[(header::RANGE, "bytes=10-19")],
    )
    .await;
    assert_eq!(r.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(r.body, f.jsonl.as_bytes()[10..20]);
    assert_eq!(
        r.header(header::CONTENT_RANGE),
        Some(format!("bytes 10-19/{}", f.jsonl.len()).as_str())
    );
    let tail = send(
        &f,
        Method::GET,
        "/catalogs/test-catalog/api/v1/all",
        &[(header::RANGE, "bytes=-5")],
    )
    .await;
    assert_eq!(tail.body, f.jsonl.as_bytes()[f.jsonl.len() - 5..]);
    let beyond = send(
        &f,
        Method::GET,
        "/catalogs/test-catalog/api/v1/all",
        &[(header::RANGE, "bytes=999999-")],
    )
    .await;
    assert_eq!(beyond.status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(beyond.text(), "invalid range: failed to overlap\n");
    assert_eq!(
        beyond.header(header::CONTENT_RANGE),
        Some(format!("bytes */{}", f.jsonl.len()).as_str())
    );
}

#[tokio::test]
async fn errors_have_catalogds_codes_and_bodies() {
    let f = fixture();
    let cases: Vec<(Method, &str, StatusCode, String)> = vec![
        (Method::GET, "/catalogs/missing/api/v1/all", StatusCode::NOT_FOUND, "404 Not Found\n".into()),
        (Method::GET, "/catalogs/missing/api/v1/metas?schema=olm.bundle", StatusCode::NOT_FOUND, "404 Not Found\n".into()),
        (Method::POST, "/catalogs/test-catalog/api/v1/all", StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n".into()),
        (Method::DELETE, "/catalogs/test-catalog/api/v1/metas", StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n".into()),
        (Method::GET, "/catalogs/test-catalog/api/v1/metas?bogus=1", StatusCode::BAD_REQUEST, "400 Bad Request\n".into()),
        (Method::GET, "/catalogs/test-catalog/api/v1/metas?schema=olm.bundle&Package=foo", StatusCode::BAD_REQUEST, "400 Bad Request\n".into()),
        (
            Method::GET,
            "/catalogs/Bad_Name/api/v1/all",
            StatusCode::BAD_REQUEST,
            "invalid catalog name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')\n".into(),
        ),
        (Method::GET, "/catalogs/test-catalog/api/v1/graphql", StatusCode::NOT_FOUND, "404 page not found\n".into()),
        (Method::GET, "/catalogs/test-catalog/api/v2/all", StatusCode::NOT_FOUND, "404 page not found\n".into()),
        (Method::GET, "/", StatusCode::NOT_FOUND, "404 page not found\n".into()),
    ];
    for (method, uri, status, body) in cases {
        let r = send(&f, method.clone(), uri, &[]).await;
        assert_eq!(r.status, status, "{method} {uri}");
        assert_eq!(r.text(), body, "{method} {uri}");
        assert_eq!(
            r.header(header::CONTENT_TYPE),
            Some("text/plain; charset=utf-8"),
            "{method} {uri}"
        );
        assert_eq!(r.header(header::X_CONTENT_TYPE_OPTIONS), Some("nosniff"));
    }
}

#[tokio::test]
async fn metas_intersect_in_file_order() {
    let f = fixture();
    let field = |v: &serde_json::Value, k: &str| {
        v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string()
    };
    type Pred = Box<dyn Fn(&serde_json::Value) -> bool>;
    let cases: Vec<(&str, Pred)> = vec![
        (
            "schema=olm.bundle",
            Box::new(move |v| field(v, "schema") == "olm.bundle"),
        ),
        (
            "package=foo",
            Box::new(move |v| field(v, "package") == "foo"),
        ),
        ("name=foo", Box::new(move |v| field(v, "name") == "foo")),
        (
            "schema=olm.bundle&package=foo",
            Box::new(move |v| field(v, "schema") == "olm.bundle" && field(v, "package") == "foo"),
        ),
        (
            "schema=olm.bundle&package=foo&name=foo.v0.2.0",
            Box::new(move |v| field(v, "name") == "foo.v0.2.0"),
        ),
        (
            "schema=olm.deprecations",
            Box::new(move |v| field(v, "schema") == "olm.deprecations"),
        ),
        (
            "schema=olm.bundle&schema=olm.package",
            Box::new(move |v| field(v, "schema") == "olm.bundle"),
        ),
        (
            "schema=&package=bar",
            Box::new(move |v| field(v, "package") == "bar"),
        ),
        ("package=nope", Box::new(|_| false)),
        ("", Box::new(|_| true)),
        ("schema=&package=&name=", Box::new(|_| true)),
    ];
    for (query, pred) in cases {
        let r = get(&f, &format!("/catalogs/test-catalog/api/v1/metas?{query}")).await;
        assert_eq!(r.status, StatusCode::OK, "{query}");
        assert_eq!(r.text(), lines(&f, pred), "{query}");
        assert_eq!(
            r.header(header::CONTENT_TYPE),
            Some("application/jsonl"),
            "{query}"
        );
        assert!(r.header(header::LAST_MODIFIED).is_some());
    }
    let head = send(
        &f,
        Method::HEAD,
        "/catalogs/test-catalog/api/v1/metas?package=foo",
        &[],
    )
    .await;
    assert_eq!(head.status, StatusCode::OK);
    assert!(head.body.is_empty());
    // HEAD announces what GET sends.
    let body = get(&f, "/catalogs/test-catalog/api/v1/metas?package=foo").await;
    assert!(!body.body.is_empty());
    assert_eq!(
        head.header(header::CONTENT_LENGTH),
        Some(body.body.len().to_string().as_str())
    );
    assert_eq!(
        body.header(header::CONTENT_LENGTH),
        Some(body.body.len().to_string().as_str())
    );
    let last_modified = head.header(header::LAST_MODIFIED).expect("lm").to_string();
    let cached = send(
        &f,
        Method::GET,
        "/catalogs/test-catalog/api/v1/metas?package=foo",
        &[(header::IF_MODIFIED_SINCE, &last_modified)],
    )
    .await;
    assert_eq!(cached.status, StatusCode::NOT_MODIFIED);
    assert!(cached.body.is_empty());
    assert!(cached.header(header::CONTENT_TYPE).is_none());
}

#[tokio::test]
async fn metas_can_be_turned_off() {
    let mut f = fixture();
    f.state.metas = false;
    let r = get(&f, "/catalogs/test-catalog/api/v1/metas?schema=olm.bundle").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.text(), "404 page not found\n");
}

#[tokio::test]
async fn large_bodies_are_gzipped_on_request() {
    let f = fixture();
    assert!(
        f.jsonl.len() > 1400,
        "fixture must exceed the gzip threshold"
    );
    let r = send(
        &f,
        Method::GET,
        "/catalogs/test-catalog/api/v1/all",
        &[(header::ACCEPT_ENCODING, "gzip")],
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.header(header::CONTENT_ENCODING), Some("gzip"));
    let mut plain = String::new();
    flate2::read::GzDecoder::new(r.body.as_slice())
        .read_to_string(&mut plain)
        .expect("gunzip");
    assert_eq!(plain, f.jsonl);

    let small = send(
        &f,
        Method::GET,
        "/catalogs/test-catalog/api/v1/metas?name=bar",
        &[(header::ACCEPT_ENCODING, "gzip")],
    )
    .await;
    assert_eq!(small.status, StatusCode::OK);
    let partial = send(
        &f,
        Method::GET,
        "/catalogs/test-catalog/api/v1/all",
        &[
            (header::ACCEPT_ENCODING, "gzip"),
            (header::RANGE, "bytes=0-2000"),
        ],
    )
    .await;
    assert_eq!(partial.status, StatusCode::PARTIAL_CONTENT);
    assert!(partial.header(header::CONTENT_ENCODING).is_none());
}

#[tokio::test]
async fn requests_are_timed_by_status_code() {
    let f = fixture();
    get(&f, "/catalogs/test-catalog/api/v1/all").await;
    get(&f, "/catalogs/missing/api/v1/all").await;
    let text = f.state.metrics.render();
    assert!(
        text.contains("catalogd_http_request_duration_seconds_bucket{code=\"200\",le=\"0.1\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("catalogd_http_request_duration_seconds_count{code=\"404\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn a_slow_download_is_timed_to_its_last_byte() {
    let f = fixture();
    let response = router(f.state.clone())
        .oneshot(
            Request::builder()
                .uri("/catalogs/test-catalog/api/v1/all")
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .expect("infallible");
    assert_eq!(response.status(), StatusCode::OK);
    // Headers are out; the body is read only after a while, as a slow client would.
    assert!(
        !f.state.metrics.render().contains("code=\"200\""),
        "observed before the body was sent"
    );
    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    let text = f.state.metrics.render();
    assert!(
        text.contains("catalogd_http_request_duration_seconds_bucket{code=\"200\",le=\"0.2\"} 0"),
        "{text}"
    );
    assert!(
        text.contains("catalogd_http_request_duration_seconds_count{code=\"200\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn probes_and_metrics_are_served() {
    let f = fixture();
    get(&f, "/catalogs/test-catalog/api/v1/all").await;
    let probes = olm_catalogd::server::probes_router(f.state.metrics.clone());
    for (path, want) in [
        ("/healthz", "ok"),
        ("/readyz", "ok"),
        (
            "/metrics",
            "catalogd_http_request_duration_seconds_count{code=\"200\"} 1",
        ),
    ] {
        let response = probes
            .clone()
            .oneshot(Request::get(path).body(Body::empty()).expect("request"))
            .await
            .expect("infallible");
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains(want), "{path}: {text}");
    }
}
