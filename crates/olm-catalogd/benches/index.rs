//! The metas index alone: building it while rendering a 50,000-bundle catalog, and answering the
//! queries clients send (one package; one bundle by schema, package and name).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use olm_catalogd::index::Index;

fn main() {
    divan::main();
}

fn catalog() -> olm_catalog::Catalog {
    olm_synthetic::catalog(&olm_synthetic::Spec {
        packages: 1000,
        bundles_per_package: 50,
        description_bytes: 200,
    })
}

fn index() -> Index {
    olm_catalogd::storage::render(&catalog(), &mut std::io::sink()).expect("render")
}

#[divan::bench(sample_count = 10)]
fn render_and_index(bencher: divan::Bencher) {
    let cat = catalog();
    bencher.bench(|| olm_catalogd::storage::render(&cat, &mut std::io::sink()).expect("render"));
}

#[divan::bench]
fn query_one_package(bencher: divan::Bencher) {
    let idx = index();
    // The first schema-less query builds the shared list once; measure the steady state.
    idx.query("", "synthetic-operator-0500", "");
    bencher.bench(|| idx.query("", divan::black_box("synthetic-operator-0500"), ""));
}

#[divan::bench]
fn query_one_bundle(bencher: divan::Bencher) {
    let idx = index();
    bencher.bench(|| {
        idx.query(
            "olm.bundle",
            divan::black_box("synthetic-operator-0500"),
            divan::black_box("synthetic-operator-0500.v0.2.5"),
        )
    });
}
