//! What a resolution pays to read its package from a catalog server on loopback, serving the
//! community catalog of `shared/data`: a cold fetch and index of one package through `metas`
//! (small and the largest package), the whole catalog through `/all` for comparison (what
//! upstream downloads), and a cache hit. Bytes per fetch are printed once at start.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use olm_api::{
    CatalogSource, CatalogUrls, ClusterCatalog, ClusterCatalogSpec, ClusterCatalogStatus,
    ResolvedCatalogSource, ResolvedImageSource, SourceType,
};
use olm_catalog::PackageName;
use olm_catalogd::metrics::Metrics;
use olm_catalogd::server::{AppState, router};
use olm_catalogd::storage::Storage;
use olm_controller::catalog::{CatalogOptions, Catalogs};

const REFERENCE: &str = "registry.example/community@sha256:c0";

struct Fixture {
    addr: SocketAddr,
    runtime: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let community = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/catalogs/community-v4.21");
        let dir = tempfile::tempdir().expect("tmp");
        let storage = Storage::open(dir.path().join("store")).expect("open");
        storage
            .store(
                "community",
                REFERENCE,
                "sha256:c0",
                jiff::Timestamp::now(),
                &community,
            )
            .expect("store");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let app = router(AppState {
            storage: Arc::new(storage),
            metrics: Arc::new(Metrics::default()),
            metas: true,
        });
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        runtime.spawn(async move { axum::serve(listener, app).await });
        Fixture {
            addr,
            runtime,
            _dir: dir,
        }
    })
}

fn catalog(addr: SocketAddr) -> ClusterCatalog {
    let mut c = ClusterCatalog::new(
        "community",
        ClusterCatalogSpec {
            source: CatalogSource {
                type_: SourceType::Image,
                image: None,
            },
            priority: 0,
            availability_mode: Default::default(),
        },
    );
    c.metadata = ObjectMeta {
        name: Some("community".into()),
        ..ObjectMeta::default()
    };
    c.status = Some(ClusterCatalogStatus {
        conditions: vec![Condition {
            type_: "Serving".into(),
            status: "True".into(),
            reason: "Available".into(),
            message: String::new(),
            last_transition_time: Time(jiff::Timestamp::UNIX_EPOCH),
            observed_generation: None,
        }],
        resolved_source: Some(ResolvedCatalogSource {
            type_: SourceType::Image,
            image: ResolvedImageSource {
                ref_: REFERENCE.into(),
            },
        }),
        urls: Some(CatalogUrls {
            base: format!("http://{addr}/catalogs/community"),
        }),
        last_unpacked: None,
    });
    c
}

fn main() {
    let f = fixture();
    let cat = catalog(f.addr);
    for p in ["cat-facts-operator", "stackgres-community"] {
        let c = Catalogs::new(CatalogOptions::default()).expect("client");
        f.runtime
            .block_on(c.package(&cat, &PackageName::new(p)))
            .expect("package");
        println!(
            "metas {p}: {} bytes in {} requests",
            c.stats().bytes,
            c.stats().requests
        );
    }
    println!("/all: {} bytes", f.runtime.block_on(all_bytes(f.addr)));
    divan::main();
}

async fn all_bytes(addr: SocketAddr) -> usize {
    let body = reqwest::get(format!("http://{addr}/catalogs/community/api/v1/all"))
        .await
        .expect("get")
        .bytes()
        .await
        .expect("body");
    body.len()
}

#[divan::bench(args = ["cat-facts-operator", "stackgres-community"], sample_count = 20)]
fn cold_package(bencher: divan::Bencher, package: &str) {
    let f = fixture();
    let cat = catalog(f.addr);
    let package = PackageName::new(package);
    bencher.bench(|| {
        let c = Catalogs::new(CatalogOptions::default()).expect("client");
        f.runtime
            .block_on(c.package(&cat, &package))
            .expect("package")
    });
}

/// Upstream's fetch: the whole stream, parsed and indexed (every package).
#[divan::bench(sample_count = 10)]
fn cold_whole_catalog(bencher: divan::Bencher) {
    let f = fixture();
    bencher.bench(|| {
        let bytes = f.runtime.block_on(async {
            reqwest::get(format!("http://{}/catalogs/community/api/v1/all", f.addr))
                .await
                .expect("get")
                .bytes()
                .await
                .expect("body")
        });
        let opts = olm_catalog::LoadOptions {
            keep_raw: false,
            validate_only: false,
        };
        let cat = olm_catalog::load::load_jsonl_with(&bytes[..], "all", &opts).expect("load");
        olm_resolve::ContentIndex::new(&cat)
    });
}

#[divan::bench]
fn cached_package(bencher: divan::Bencher) {
    let f = fixture();
    let cat = catalog(f.addr);
    let package = PackageName::new("stackgres-community");
    let c = Catalogs::new(CatalogOptions::default()).expect("client");
    f.runtime
        .block_on(c.package(&cat, &package))
        .expect("package");
    bencher.bench(|| {
        f.runtime
            .block_on(c.package(&cat, &package))
            .expect("package")
    });
}
