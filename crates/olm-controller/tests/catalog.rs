//! The catalog client against a real catalog server (`olm_catalogd`'s router and storage, on a
//! loopback port) serving the community catalog of `shared/data` and small catalogs written
//! here: one package per fetch, caching by resolved reference, single-flight, which failures are
//! cached, size limits, and upstream's messages.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use olm_api::{
    CatalogSource, CatalogUrls, ClusterCatalog, ClusterCatalogSpec, ClusterCatalogStatus,
    ImageSource, ResolvedCatalogSource, ResolvedImageSource, SourceType,
};
use olm_catalog::PackageName;
use olm_catalogd::metrics::Metrics;
use olm_catalogd::server::{AppState, router};
use olm_catalogd::storage::Storage;
use olm_controller::catalog::{CatalogError, CatalogOptions, Catalogs, ProxyEnv};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

fn community() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/catalogs/community-v4.21")
}

/// A catalog server on its own thread and runtime, shared by every test of this binary.
struct Server {
    addr: SocketAddr,
    storage: Arc<Storage>,
    _dir: tempfile::TempDir,
}

fn serve_on_thread(app: axum::Router) -> SocketAddr {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            tx.send(listener.local_addr().expect("addr")).expect("send");
            axum::serve(listener, app).await.expect("serve");
        });
    });
    rx.recv().expect("address")
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tmp");
        let storage = Arc::new(Storage::open(dir.path().join("store")).expect("open"));
        storage
            .store(
                "community",
                "registry.example/community@sha256:c0",
                "sha256:c0",
                jiff::Timestamp::now(),
                &community(),
            )
            .expect("store community");
        let addr = serve_on_thread(router(AppState {
            storage: storage.clone(),
            metrics: Arc::new(Metrics::default()),
            metas: true,
        }));
        Server {
            addr,
            storage,
            _dir: dir,
        }
    })
}

fn base(addr: SocketAddr, name: &str) -> String {
    format!("http://{addr}/catalogs/{name}")
}

fn serving(status: &str) -> Condition {
    Condition {
        type_: "Serving".into(),
        status: status.into(),
        reason: "Available".into(),
        message: String::new(),
        last_transition_time: Time(jiff::Timestamp::UNIX_EPOCH),
        observed_generation: None,
    }
}

/// A ClusterCatalog as the catalog controller leaves it once the content is served.
fn catalog(name: &str, reference: &str, base: &str) -> ClusterCatalog {
    let mut c = ClusterCatalog::new(
        name,
        ClusterCatalogSpec {
            source: CatalogSource {
                type_: SourceType::Image,
                image: Some(ImageSource {
                    ref_: "registry.example/x:latest".into(),
                    poll_interval_minutes: None,
                }),
            },
            priority: 0,
            availability_mode: Default::default(),
        },
    );
    c.metadata = ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    };
    c.status = Some(ClusterCatalogStatus {
        conditions: vec![serving("True")],
        resolved_source: Some(ResolvedCatalogSource {
            type_: SourceType::Image,
            image: ResolvedImageSource {
                ref_: reference.into(),
            },
        }),
        urls: Some(CatalogUrls { base: base.into() }),
        last_unpacked: None,
    });
    c
}

/// The community catalog as served by the shared server.
fn community_catalog(s: &Server) -> ClusterCatalog {
    catalog(
        "community",
        "registry.example/community@sha256:c0",
        &base(s.addr, "community"),
    )
}

fn client() -> Catalogs {
    Catalogs::new(CatalogOptions::default()).expect("client")
}

/// Writes a small FBC with one package per `(name, version)`, each with one channel and bundle.
fn small_fbc(dir: &Path, packages: &[(&str, &str)]) {
    std::fs::create_dir_all(dir).expect("mkdir");
    let mut text = String::new();
    for (p, v) in packages {
        text.push_str(&format!(
            "{{\"schema\":\"olm.package\",\"name\":\"{p}\",\"defaultChannel\":\"stable\"}}\n\
             {{\"schema\":\"olm.channel\",\"package\":\"{p}\",\"name\":\"stable\",\"entries\":[{{\"name\":\"{p}.v{v}\"}}]}}\n\
             {{\"schema\":\"olm.bundle\",\"package\":\"{p}\",\"name\":\"{p}.v{v}\",\"image\":\"example.com/{p}:v{v}\",\"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"{p}\",\"version\":\"{v}\"}}}}]}}\n"
        ));
    }
    std::fs::write(dir.join("catalog.json"), text).expect("write");
}

/// Stores `packages` as the content of catalog `name` at digest `sha256:<hex>`.
fn store_small(name: &str, hex: &str, packages: &[(&str, &str)]) -> String {
    let s = server();
    let src = tempfile::tempdir().expect("tmp");
    small_fbc(src.path(), packages);
    let reference = format!("registry.example/{name}@sha256:{hex}");
    s.storage
        .store(
            name,
            &reference,
            &format!("sha256:{hex}"),
            jiff::Timestamp::now(),
            src.path(),
        )
        .expect("store");
    reference
}

fn pkg(name: &str) -> PackageName {
    PackageName::new(name)
}

/// The package's content as fetched equals the package cut out of the whole catalog, and a
/// second request is served from the cache without touching the server.
#[tokio::test]
async fn a_package_is_fetched_once_and_matches_the_whole_catalog() {
    let s = server();
    let c = client();
    let cat = community_catalog(s);
    let index = c
        .package(&cat, &pkg("hive-operator"))
        .await
        .expect("package");
    assert_eq!(c.stats().requests, 2, "the package blob and the rest");
    assert_eq!(index.packages.len(), 1);

    let whole = olm_catalog::load_path(&community().join("hive-operator")).expect("load");
    let want = olm_resolve::ContentIndex::new(&whole);
    let (got, want) = (
        &index.packages[&pkg("hive-operator")],
        &want.packages[&pkg("hive-operator")],
    );
    let names = |p: &olm_resolve::PackageIndex| {
        let mut b: Vec<String> = p.bundles.iter().map(|b| b.name.to_string()).collect();
        b.sort();
        b
    };
    assert_eq!(names(got), names(want));
    assert!(!got.bundles.is_empty());
    assert_eq!(got.channels.len(), want.channels.len());
    assert_eq!(got.deprecations, want.deprecations);

    let before = c.stats();
    let again = c
        .package(&cat, &pkg("hive-operator"))
        .await
        .expect("cached");
    assert!(Arc::ptr_eq(&index, &again));
    assert_eq!(c.stats(), before, "a cache hit makes no request");
}

/// A package the catalog does not have is an empty index (resolution then looks elsewhere),
/// and is cached like any other.
#[tokio::test]
async fn a_missing_package_is_empty() {
    let s = server();
    let c = client();
    let cat = community_catalog(s);
    let index = c.package(&cat, &pkg("no-such-operator")).await.expect("ok");
    assert!(index.packages.is_empty());
    assert_eq!(c.stats().bytes, 0);
    c.package(&cat, &pkg("no-such-operator")).await.expect("ok");
    assert_eq!(c.stats().requests, 2);
}

#[tokio::test]
async fn concurrent_requests_share_one_fetch() {
    let s = server();
    let c = client();
    let cat = community_catalog(s);
    let p = pkg("stackgres-community");
    let all = futures::future::join_all((0..16).map(|_| c.package(&cat, &p))).await;
    let first = all[0].as_ref().expect("ok").clone();
    for r in &all {
        assert!(Arc::ptr_eq(r.as_ref().expect("ok"), &first));
    }
    assert_eq!(c.stats().requests, 2, "16 callers, one fetch");
}

/// A fetch whose every caller gave up (a cancelled reconcile) still finishes and is cached.
#[tokio::test]
async fn abandoned_fetches_complete() {
    let s = server();
    let c = client();
    let cat = community_catalog(s);
    let p = pkg("stackgres-community");
    let _ = tokio::time::timeout(Duration::from_micros(1), c.package(&cat, &p)).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    // A cached package is answered on the first poll; an in-flight one is not.
    while tokio::time::timeout(Duration::from_millis(1), c.package(&cat, &p))
        .await
        .is_err()
    {
        assert!(Instant::now() < deadline, "the fetch never completed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        c.stats().requests,
        2,
        "one fetch, finished without its caller"
    );
}

/// Upstream `catalogmetadata/client/client_test.go`: `catalog "catalog-1" is not being served`,
/// and the nil-field messages of `validateCatalog`/`doRequest`.
#[tokio::test]
async fn catalogs_that_cannot_be_read_say_why_like_upstream() {
    let c = client();
    let mut cat = catalog(
        "catalog-1",
        "r@sha256:00",
        "http://127.0.0.1:9/catalogs/catalog-1",
    );
    cat.status.as_mut().unwrap().conditions = vec![serving("False")];
    let e = c.package(&cat, &pkg("p")).await.expect_err("not served");
    assert_eq!(e.to_string(), r#"catalog "catalog-1" is not being served"#);
    cat.status.as_mut().unwrap().conditions.clear();
    let e = c.package(&cat, &pkg("p")).await.expect_err("not served");
    assert_eq!(
        e,
        CatalogError::NotServing {
            catalog: "catalog-1".into()
        }
    );

    cat.status.as_mut().unwrap().conditions = vec![serving("True")];
    cat.status.as_mut().unwrap().resolved_source = None;
    let e = c.package(&cat, &pkg("p")).await.expect_err("no source");
    assert_eq!(
        e.to_string(),
        r#"error: catalog "catalog-1" has a nil status.resolvedSource value"#
    );
    let mut cat = catalog("catalog-1", "r@sha256:00", "x");
    cat.status.as_mut().unwrap().urls = None;
    let e = c.package(&cat, &pkg("p")).await.expect_err("no urls");
    assert_eq!(
        e.to_string(),
        r#"error: catalog "catalog-1" has a nil status.urls value"#
    );
    assert_eq!(c.stats().requests, 0);
}

/// A 404 (a catalog server replica that is not the leader yet) is not cached: the next request
/// asks again, and succeeds once the content is there.
#[tokio::test]
async fn status_codes_are_not_cached() {
    let s = server();
    let c = client();
    let cat = catalog(
        "late",
        "registry.example/late@sha256:1a",
        &base(s.addr, "late"),
    );
    let e = c.package(&cat, &pkg("foo")).await.expect_err("404");
    assert_eq!(
        e.to_string(),
        "error: received unexpected response status code 404"
    );
    let e = c.package(&cat, &pkg("foo")).await.expect_err("404 again");
    assert_eq!(e, CatalogError::UnexpectedStatus { code: 404 });
    assert_eq!(c.stats().requests, 4, "asked twice");
    store_small("late", "1a", &[("foo", "1.0.0")]);
    let index = c.package(&cat, &pkg("foo")).await.expect("now served");
    assert_eq!(index.packages[&pkg("foo")].bundles.len(), 1);
}

/// A replica still serving the content of the digest before (it polls the tag on its own) is
/// not believed for the digest the status names: nothing is cached, and once the replica serves
/// the new content it is read.
#[tokio::test]
async fn content_of_another_digest_is_not_cached_as_the_new_one() {
    let s = server();
    let c = client();
    store_small("moving", "1b", &[("foo", "1.0.0")]);
    let next = "registry.example/moving@sha256:2b";
    let cat = catalog("moving", next, &base(s.addr, "moving"));
    let e = c
        .package(&cat, &pkg("foo"))
        .await
        .expect_err("older content");
    assert_eq!(
        e.to_string(),
        "catalog \"moving\" is served from \"registry.example/moving@sha256:1b\" by the catalog server replica that answered, not yet from \"registry.example/moving@sha256:2b\""
    );
    assert!(!e.is_cached(), "{e}");
    store_small("moving", "2b", &[("foo", "2.0.0")]);
    let index = c.package(&cat, &pkg("foo")).await.expect("now served");
    let bundles = &index.packages[&pkg("foo")].bundles;
    assert_eq!(bundles.len(), 1);
    assert_eq!(bundles[0].name.as_str(), "foo.v2.0.0");
}

/// A server that answers 500 to everything.
#[tokio::test]
async fn server_errors_are_not_cached() {
    let hits = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = hits.clone();
    let app = axum::Router::new().fallback(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "boom") }
    });
    let addr = serve_on_thread(app);
    let c = client();
    let cat = catalog("broken", "r@sha256:00", &base(addr, "broken"));
    let mut seen = 0;
    for _ in 0..2 {
        let e = c.package(&cat, &pkg("foo")).await.expect_err("500");
        assert_eq!(
            e.to_string(),
            "error: received unexpected response status code 500"
        );
        // The first failure of the pair cancels the other request, which may or may not have
        // reached the server by then; at least one did.
        let now = hits.load(std::sync::atomic::Ordering::SeqCst);
        assert!(now > seen, "each call asks the server again");
        seen = now;
    }
}

/// A connection failure is cached against (catalog, reference): every package of that catalog
/// gets it without a request until the retry time; then the client tries again.
#[tokio::test]
async fn transport_errors_are_cached_until_the_retry() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    let c = Catalogs::new(CatalogOptions {
        retry_initial: Duration::from_millis(300),
        ..CatalogOptions::default()
    })
    .expect("client");
    let cat = catalog("down", "r@sha256:00", &base(closed, "down"));
    let e = c.package(&cat, &pkg("foo")).await.expect_err("refused");
    let text = e.to_string();
    assert!(
        text.starts_with(
            r#"error retrieving cache for catalog "down": error performing request: "#
        ),
        "{text}"
    );
    assert!(e.is_cached());
    let made = c.stats().requests;
    let again = c.package(&cat, &pkg("bar")).await.expect_err("cached");
    assert_eq!(again, e);
    assert_eq!(c.stats().requests, made, "the cached error made no request");

    tokio::time::sleep(Duration::from_millis(350)).await;
    let _ = c.package(&cat, &pkg("foo")).await.expect_err("still down");
    assert!(c.stats().requests > made, "retried after the back-off");

    // A new reference is new content: the old failure does not apply to it.
    let moved = catalog("down", "r@sha256:01", &base(closed, "down"));
    let before = c.stats().requests;
    let _ = c.package(&moved, &pkg("foo")).await.expect_err("down");
    assert!(c.stats().requests > before);
}

#[tokio::test]
async fn oversized_responses_are_refused() {
    let s = server();
    let c = Catalogs::new(CatalogOptions {
        max_response_bytes: 64 << 10,
        ..CatalogOptions::default()
    })
    .expect("client");
    let cat = community_catalog(s);
    let e = c
        .package(&cat, &pkg("stackgres-community"))
        .await
        .expect_err("too large");
    let text = e.to_string();
    assert!(
        text.contains("exceeds the limit of 65536 bytes")
            && text.contains("package=stackgres-community"),
        "{text}"
    );
    assert!(
        c.stats().wire_bytes <= 2 * (64 << 10) + (1 << 20),
        "reading stopped near the limit, got {}",
        c.stats().wire_bytes
    );
    // Small packages of the same catalog are fine with the same limit on a fresh client.
    let c = Catalogs::new(CatalogOptions {
        max_response_bytes: 64 << 10,
        ..CatalogOptions::default()
    })
    .expect("client");
    c.package(&cat, &pkg("cat-facts-operator"))
        .await
        .expect("small package");
}

/// A small gzip body that expands past the limit is refused while it is decompressed.
#[tokio::test]
async fn compressed_responses_are_limited_by_their_content() {
    use std::io::Write as _;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(&vec![b' '; 8 << 20]).expect("compress");
    let bomb = encoder.finish().expect("compress");
    assert!(bomb.len() < 64 << 10);
    let app = axum::Router::new().fallback(move || {
        let bomb = bomb.clone();
        async move {
            (
                [
                    (axum::http::header::CONTENT_ENCODING, "gzip"),
                    (axum::http::header::CONTENT_TYPE, "application/jsonl"),
                ],
                bomb,
            )
        }
    });
    let addr = serve_on_thread(app);
    let c = Catalogs::new(CatalogOptions {
        max_response_bytes: 1 << 20,
        ..CatalogOptions::default()
    })
    .expect("client");
    let cat = catalog("bomb", "r@sha256:00", &base(addr, "bomb"));
    let e = c.package(&cat, &pkg("foo")).await.expect_err("too large");
    assert!(
        matches!(e, CatalogError::TooLarge { limit, .. } if limit == 1 << 20),
        "{e}"
    );
}

/// When the catalog's digest moves, only packages whose content changed are reported; the
/// unchanged ones are then served from the cache under the new reference.
#[tokio::test]
async fn a_new_digest_reports_only_changed_packages() {
    let s = server();
    let r1 = store_small(
        "moving",
        "a1",
        &[("foo", "1.0.0"), ("bar", "1.0.0"), ("baz", "1.0.0")],
    );
    let c = client();
    let cat = catalog("moving", &r1, &base(s.addr, "moving"));
    for p in ["foo", "bar"] {
        c.package(&cat, &pkg(p)).await.expect("fetch");
    }
    assert!(c.changed_packages(&cat).await.is_empty(), "same reference");

    let r2 = store_small(
        "moving",
        "a2",
        &[("foo", "2.0.0"), ("bar", "1.0.0"), ("baz", "2.0.0")],
    );
    let cat2 = catalog("moving", &r2, &base(s.addr, "moving"));
    let before = c.stats().requests;
    assert_eq!(c.changed_packages(&cat2).await, vec![pkg("foo")]);
    assert_eq!(
        c.stats().requests - before,
        4,
        "foo and bar fetched again, baz never"
    );

    let before = c.stats();
    let foo = c.package(&cat2, &pkg("foo")).await.expect("foo");
    c.package(&cat2, &pkg("bar")).await.expect("bar");
    assert_eq!(c.stats(), before, "both cached under the new reference");
    assert_eq!(
        foo.packages[&pkg("foo")].bundles[0].name.as_str(),
        "foo.v2.0.0"
    );
    assert!(
        c.changed_packages(&cat2).await.is_empty(),
        "already compared"
    );

    // Extensions resolved before the watch event arrives: the comparison still holds.
    let r3 = store_small("moving", "a3", &[("foo", "2.0.0"), ("bar", "3.0.0")]);
    let cat3 = catalog("moving", &r3, &base(s.addr, "moving"));
    c.package(&cat3, &pkg("bar")).await.expect("bar");
    assert_eq!(c.changed_packages(&cat3).await, vec![pkg("bar")]);

    // A catalog that stops being served takes every package with it.
    let mut gone = cat3.clone();
    gone.status.as_mut().unwrap().resolved_source = None;
    assert_eq!(
        c.changed_packages(&gone).await,
        vec![pkg("bar"), pkg("foo")]
    );

    c.forget("moving");
    assert!(c.changed_packages(&cat3).await.is_empty(), "nothing known");
}

/// Upstream `resolve/catalog_test.go`: a catalog whose content cannot be read fails the walk,
/// wrapped as `error walking catalogs: error getting package %q from catalog %q: …`.
/// Unselected and unavailable catalogs are not read, and neither is one that serves nothing:
/// upstream fails the walk with `catalog "walk-b" is not being served`, olm leaves it out so
/// that resolution skips it and names it (as the client does).
#[tokio::test]
async fn walking_catalogs_skips_what_serves_nothing_and_wraps_a_read_failure() {
    let s = server();
    let r = store_small("walk-a", "b1", &[("foo", "1.0.0")]);
    let c = client();
    let a = catalog("walk-a", &r, &base(s.addr, "walk-a"));
    let mut b = catalog("walk-b", "r@sha256:00", &base(s.addr, "walk-b"));
    b.status.as_mut().unwrap().conditions = vec![serving("False")];
    let mut off = catalog(
        "walk-c",
        "r@sha256:00",
        "http://127.0.0.1:9/catalogs/walk-c",
    );
    off.spec.availability_mode = olm_api::AvailabilityMode::Unavailable;
    // Serving, by its status, from an address where nothing listens.
    let broken = catalog(
        "walk-d",
        "r@sha256:00",
        "http://127.0.0.1:9/catalogs/walk-d",
    );

    let selector = olm_resolve::LabelSelector::default();
    let got = c
        .walk(&[b.clone(), a.clone(), off.clone()], &selector, &pkg("foo"))
        .await
        .expect("walk");
    assert_eq!(got.keys().collect::<Vec<_>>(), vec!["walk-a"]);

    let e = c
        .walk(&[b, a, off, broken], &selector, &pkg("foo"))
        .await
        .expect_err("walk-d cannot be read");
    assert!(
        e.to_string().starts_with(
            r#"error walking catalogs: error getting package "foo" from catalog "walk-d": error retrieving cache for catalog "walk-d": error performing request: "#
        ),
        "{e}"
    );
}

/// Catalog servers with a certificate from a private CA are reached with that CA configured,
/// and refused without it.
#[tokio::test]
async fn https_with_an_extra_ca() {
    olm_image::install_crypto_provider();
    let dir = tempfile::tempdir().expect("tmp");
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
    let (cert_path, key_path) = (dir.path().join("tls.crt"), dir.path().join("tls.key"));
    std::fs::write(&cert_path, cert.cert.pem()).expect("write cert");
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).expect("write key");
    let tls = olm_catalogd::run::tls_config(
        &olm_catalogd::Tls {
            cert: cert_path,
            key: key_path,
        },
        &olm_tls::TlsProfile::default(),
    )
    .expect("tls");
    let s = server();
    store_small("secure", "c1", &[("foo", "1.0.0")]);
    let app = router(AppState {
        storage: s.storage.clone(),
        metrics: Arc::new(Metrics::default()),
        metas: true,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (_stop, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(olm_runtime::serve::serve(listener, app, Some(tls), stop_rx));
    let cat = catalog(
        "secure",
        "registry.example/secure@sha256:c1",
        &format!("https://localhost:{port}/catalogs/secure"),
    );

    let untrusting = client();
    let e = untrusting
        .package(&cat, &pkg("foo"))
        .await
        .expect_err("unknown CA");
    assert!(matches!(e, CatalogError::Request { .. }), "{e}");

    let trusting = Catalogs::new(CatalogOptions {
        ca_certificates: vec![cert.cert.pem().into_bytes()],
        ..CatalogOptions::default()
    })
    .expect("client");
    let index = trusting.package(&cat, &pkg("foo")).await.expect("trusted");
    assert_eq!(index.packages.len(), 1);
}

/// What a resolution costs over the wire: one package through `metas` against the whole
/// catalog through `/all`, with and without gzip, and the time to fetch and index a package.
/// Printed for the record (`--nocapture`); the assertions keep the point of the design true.
#[tokio::test]
async fn metas_fetch_a_fraction_of_the_catalog() {
    let s = server();
    let cat = community_catalog(s);
    let all = s.storage.get("community").expect("stored").size;
    let mut packages: Vec<String> = olm_catalog::load_path(&community())
        .expect("load")
        .packages()
        .map(|p| p.name.to_string())
        .collect();
    packages.sort();
    for gzip in [false, true] {
        let (mut total, mut wire) = (0u64, 0u64);
        let mut largest = (0u64, String::new());
        let mut slowest = Duration::ZERO;
        for p in &packages {
            let c = Catalogs::new(CatalogOptions {
                gzip,
                ..CatalogOptions::default()
            })
            .expect("client");
            let start = Instant::now();
            let index = c.package(&cat, &pkg(p)).await.expect("package");
            slowest = slowest.max(start.elapsed());
            assert_eq!(index.packages.len(), 1, "{p}");
            let bytes = c.stats().bytes;
            total += bytes;
            wire += c.stats().wire_bytes;
            if bytes > largest.0 {
                largest = (bytes, p.clone());
            }
        }
        let n = packages.len() as u64;
        eprintln!(
            "gzip {gzip}: /all {all} bytes; metas per package: mean {} bytes ({} on the wire), largest {} bytes ({}); slowest fetch+index {slowest:?}",
            total / n,
            wire / n,
            largest.0,
            largest.1
        );
        assert!(largest.0 < all / 4, "{} of {all}", largest.0);
        assert!(total / n < all / 20);
        if gzip {
            assert!(wire < total / 4, "responses come gzip-compressed");
        } else {
            assert_eq!(wire, total);
        }
    }
}

/// The client is shared by controller tasks, and its futures run on a multi-threaded runtime.
#[test]
fn the_client_and_its_futures_are_send() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: &T) {}
    let c = client();
    send_sync(&c);
    let cat = catalog("x", "r@sha256:00", "http://127.0.0.1:9/catalogs/x");
    let p = pkg("p");
    send(&c.package(&cat, &p));
    send(&c.changed_packages(&cat));
    send(&c.walk(&[], &olm_resolve::LabelSelector::default(), &p));
}

// The catalog client and the proxy environment, as upstream's Go client reads it.

/// The catalog server as upstream's e2e suite reaches it: a Service name, which only a
/// proxy (or the cluster's DNS) resolves.
const CATALOGD: &str = "https://catalogd-service.olmv1-system.svc/catalogs/test";

/// A client made as production makes it, with these proxy variables instead of the
/// process's.
fn client_with(env: ProxyEnv) -> Catalogs {
    Catalogs::new(CatalogOptions {
        proxy: Some(env),
        connect_timeout: Duration::from_secs(5),
        timeout: Duration::from_secs(10),
        ..CatalogOptions::default()
    })
    .expect("client")
}

fn https_proxy(proxy: &str) -> ProxyEnv {
    ProxyEnv {
        https_proxy: proxy.into(),
        ..ProxyEnv::default()
    }
}

/// A loopback address where nothing listens.
fn nothing_listens() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
}

/// A proxy that records the request line of every connection and answers
/// `502 Bad Gateway`, as upstream's e2e recording proxy does when it cannot reach the
/// cluster's Service.
async fn recording_proxy() -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let head = String::from_utf8_lossy(&head);
            // A connection the client dropped before asking records nothing.
            if let Some(line) = head.lines().next().filter(|l| !l.is_empty()) {
                record.lock().expect("lock").push(line.to_owned());
            }
            let _ = conn
                .write_all(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                .await;
        }
    });
    (addr, seen)
}

/// Package `test` of the catalog served at `base`, read through `c`.
async fn package_at(
    c: &Catalogs,
    base: &str,
) -> Result<Arc<olm_resolve::ContentIndex>, CatalogError> {
    c.package(
        &catalog("test", "registry.example/test@sha256:00", base),
        &package(),
    )
    .await
}

fn package() -> PackageName {
    PackageName::from("test")
}

/// Upstream e2e `proxy.feature`, "operator-controller respects HTTPS_PROXY when fetching
/// catalog data": with HTTPS_PROXY where nothing listens, the failure says `proxyconnect`,
/// in Go's words (`proxyconnect tcp: dial tcp 127.0.0.1:39999: connect: connection
/// refused`), and is cached as any transport failure.
#[tokio::test]
async fn a_proxy_where_nothing_listens_fails_with_proxyconnect() {
    let proxy = nothing_listens();
    let c = client_with(https_proxy(&format!("http://{proxy}")));
    let e = package_at(&c, CATALOGD).await.expect_err("no proxy there");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            r#"error retrieving cache for catalog "test": error performing request: error sending request for url ({CATALOGD}/api/v1/metas?"#
        )),
        "{text}"
    );
    assert!(
        text.ends_with(&format!(
            "): proxyconnect tcp: dial tcp {proxy}: connect: connection refused"
        )),
        "{text}"
    );
    assert!(e.is_cached());
}

/// Upstream e2e `proxy.feature`, "operator-controller sends catalog requests through a
/// configured HTTPS proxy": the proxy receives `CONNECT <catalog host>:443`. Its 502 is a
/// `proxyconnect` failure naming the proxy and the target.
#[tokio::test]
async fn catalog_requests_reach_the_https_proxy_as_connect() {
    let (proxy, seen) = recording_proxy().await;
    let c = client_with(https_proxy(&format!("http://{proxy}")));
    let e = package_at(&c, CATALOGD)
        .await
        .expect_err("the proxy answers 502");
    let seen = seen.lock().expect("lock").clone();
    assert!(!seen.is_empty(), "the proxy was asked");
    for line in &seen {
        assert_eq!(
            line, "CONNECT catalogd-service.olmv1-system.svc:443 HTTP/1.1",
            "{seen:?}"
        );
    }
    let text = e.to_string();
    assert!(
        text.ends_with(&format!(
            "): proxyconnect tcp: {proxy} refused CONNECT catalogd-service.olmv1-system.svc:443"
        )),
        "{text}"
    );
}

/// Go never proxies loopback hosts, nor hosts NO_PROXY lists (here by CIDR): those requests
/// go direct, and their failures say nothing of a proxy.
#[tokio::test]
async fn loopback_and_no_proxy_hosts_go_direct() {
    let (proxy, seen) = recording_proxy().await;
    let to = format!("http://{proxy}");
    let env = ProxyEnv {
        http_proxy: to.clone(),
        https_proxy: to,
        no_proxy: "192.0.2.0/24".into(),
    };
    let loopback = format!("http://{}/catalogs/test", nothing_listens());
    let listed = "https://192.0.2.1:1/catalogs/test";
    for base in [loopback.as_str(), listed] {
        // A client each: the first failure would be cached for the catalog.
        let e = client_with(env.clone())
            .package(
                &catalog("test", "registry.example/test@sha256:00", base),
                &package(),
            )
            .await
            .expect_err("nothing there");
        assert!(!e.to_string().contains("proxyconnect"), "{e}");
    }
    assert_eq!(*seen.lock().expect("lock"), Vec::<String>::new());
}

/// Plain-HTTP catalog servers go through HTTP_PROXY, which gets the whole URL (no
/// CONNECT); the proxy's own answer is the response, as in Go: a 502 is a status error,
/// not cached, not a `proxyconnect` failure.
#[tokio::test]
async fn http_catalog_servers_go_through_http_proxy() {
    let (proxy, seen) = recording_proxy().await;
    let c = client_with(ProxyEnv {
        http_proxy: format!("http://{proxy}"),
        ..ProxyEnv::default()
    });
    let base = "http://catalogd-service.olmv1-system.svc/catalogs/test";
    let e = package_at(&c, base)
        .await
        .expect_err("the proxy answers 502");
    assert_eq!(e, CatalogError::UnexpectedStatus { code: 502 });
    let seen = seen.lock().expect("lock").clone();
    // The second request may be dropped once the first has failed.
    let asked = [
        format!("GET {base}/api/v1/metas?schema=olm.package&name=test HTTP/1.1"),
        format!("GET {base}/api/v1/metas?package=test HTTP/1.1"),
    ];
    assert!(!seen.is_empty(), "the proxy was asked");
    assert!(seen.iter().all(|line| asked.contains(line)), "{seen:?}");
}

/// A proxy that accepts the connection and never answers CONNECT: the connect timeout
/// ends the request, and the failure names the proxy.
#[tokio::test]
async fn a_proxy_that_never_answers_times_out_with_proxyconnect() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let proxy = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((conn, _)) = listener.accept().await {
            held.push(conn);
        }
    });
    let c = Catalogs::new(CatalogOptions {
        proxy: Some(https_proxy(&format!("http://{proxy}"))),
        connect_timeout: Duration::from_millis(300),
        ..CatalogOptions::default()
    })
    .expect("client");
    let e = package_at(&c, CATALOGD).await.expect_err("no answer");
    let text = e.to_string();
    assert!(
        text.ends_with(&format!("): proxyconnect tcp: {proxy}: i/o timeout")),
        "{text}"
    );
}

/// A proxy the client cannot speak (SOCKS) fails the request instead of being bypassed.
#[tokio::test]
async fn a_proxy_the_client_cannot_speak_is_not_bypassed() {
    let c = client_with(https_proxy("socks5://127.0.0.1:1080"));
    let e = package_at(&c, CATALOGD).await.expect_err("no SOCKS");
    let text = e.to_string();
    assert!(
        text.ends_with(
            r#"): proxyconnect tcp: 127.0.0.1:1080: proxy scheme "socks5" is not supported"#
        ),
        "{text}"
    );
}
