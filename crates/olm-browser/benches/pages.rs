//! Page times on a synthetic 50,000-bundle catalog (500 packages × 100 bundles) and on the
//! largest package of the data catalogs: every page must stay under 50 ms of server time, graph
//! pages under 200 ms.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;

use olm_browser::{CatalogMeta, CatalogView, html, respond};

fn synthetic() -> Vec<Arc<CatalogView>> {
    let catalog = olm_synthetic::catalog(&olm_synthetic::Spec {
        packages: 500,
        bundles_per_package: 100,
        description_bytes: 1000,
    });
    let meta = CatalogMeta {
        name: "synthetic".into(),
        ..CatalogMeta::default()
    };
    vec![Arc::new(CatalogView::new(meta, catalog))]
}

fn community() -> Vec<Arc<CatalogView>> {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/catalogs/community-v4.21"
    );
    let catalog = olm_catalog::load_path(std::path::Path::new(dir)).expect("data catalog");
    let meta = CatalogMeta {
        name: "community".into(),
        ..CatalogMeta::default()
    };
    vec![Arc::new(CatalogView::new(meta, catalog))]
}

fn main() {
    divan::main();
}

#[divan::bench(sample_count = 3)]
fn index_synthetic_50k(bencher: divan::Bencher) {
    bencher
        .with_inputs(|| {
            olm_synthetic::catalog(&olm_synthetic::Spec {
                packages: 500,
                bundles_per_package: 100,
                description_bytes: 1000,
            })
        })
        .bench_values(|c| CatalogView::new(CatalogMeta::default(), c));
}

#[divan::bench]
fn search_synthetic_50k(bencher: divan::Bencher) {
    let cats = synthetic();
    bencher.bench(|| respond(&cats, None, "/browse/search", "q=operator+0042"));
}

#[divan::bench]
fn catalogs_synthetic_50k(bencher: divan::Bencher) {
    let cats = synthetic();
    bencher.bench(|| respond(&cats, None, "/browse/", ""));
}

#[divan::bench]
fn package_synthetic_50k(bencher: divan::Bencher) {
    let cats = synthetic();
    let url = html::package_url("synthetic", "synthetic-operator-0250");
    bencher.bench(|| respond(&cats, None, &url, "resolve=1"));
}

#[divan::bench]
fn bundle_synthetic_50k(bencher: divan::Bencher) {
    let cats = synthetic();
    let p = cats[0].package("synthetic-operator-0250").expect("package");
    let url = html::bundle_url("synthetic", &p.name, &p.bundles[0].name);
    bencher.bench(|| respond(&cats, None, &url, ""));
}

/// The package of the data catalogs with the most bundles, graph included.
#[divan::bench]
fn largest_data_package(bencher: divan::Bencher) {
    let cats = community();
    let p = cats[0]
        .packages
        .iter()
        .max_by_key(|p| p.bundles.len())
        .expect("packages");
    let url = html::package_url("community", &p.name);
    bencher.bench(|| respond(&cats, None, &url, ""));
}

/// One channel of 10,000 bundles: the package page with its whole graph.
#[divan::bench(sample_count = 10)]
fn package_10k_channel(bencher: divan::Bencher) {
    let catalog = olm_synthetic::catalog(&olm_synthetic::Spec {
        packages: 1,
        bundles_per_package: 10_000,
        description_bytes: 100,
    });
    let meta = CatalogMeta {
        name: "long".into(),
        ..CatalogMeta::default()
    };
    let cats = vec![Arc::new(CatalogView::new(meta, catalog))];
    let url = html::package_url("long", "synthetic-operator-0000");
    bencher.bench(|| respond(&cats, None, &url, ""));
}
