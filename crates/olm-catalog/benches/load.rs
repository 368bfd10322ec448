//! Load + validate throughput: the real community-v4.21 catalog as YAML (one file per package), as
//! one opm JSON stream and as catalogd JSONL, and a synthetic 50,000-bundle catalog as JSONL and
//! YAML; lean validation and rendering a package at a time, as the CLI does them; the writers.
//!
//! Run with `cargo bench -p olm-catalog --bench load`. Peak memory is measured separately with the
//! `load_validate` example under `/usr/bin/time -v` (see docs/catalogs.md).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use divan::counter::BytesCount;
use olm_catalog::load::{LoadOptions, load_jsonl_with, load_path_with};
use olm_catalog::write::{Format, to_string};
use olm_synthetic::{Spec, catalog};

fn main() {
    divan::main();
}

fn community() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/catalogs/community-v4.21")
}

fn dir_bytes(p: &Path) -> usize {
    olm_catalog::load::walk(p)
        .unwrap()
        .iter()
        .map(|f| f.metadata().unwrap().len() as usize)
        .sum()
}

const OPTS: LoadOptions = LoadOptions {
    keep_raw: false,
    validate_only: false,
};

static COMMUNITY_JSONL: LazyLock<String> =
    LazyLock::new(|| to_string(&load_path_with(&community(), &OPTS).unwrap(), Format::Jsonl));

/// 500 packages × 100 bundles with ~2 KiB of description each.
static SYNTHETIC: LazyLock<olm_catalog::Catalog> = LazyLock::new(|| {
    catalog(&Spec {
        packages: 500,
        bundles_per_package: 100,
        description_bytes: 2048,
    })
});
static SYNTHETIC_JSONL: LazyLock<String> = LazyLock::new(|| to_string(&SYNTHETIC, Format::Jsonl));
static SYNTHETIC_YAML_DIR: LazyLock<tempfile::TempDir> = LazyLock::new(|| {
    let d = tempfile::tempdir().unwrap();
    for pkg in SYNTHETIC.packages() {
        let sub = olm_catalog::Catalog {
            blobs: SYNTHETIC
                .blobs
                .iter()
                .filter(|b| b.package() == pkg.name.as_str())
                .cloned()
                .collect(),
        };
        std::fs::create_dir_all(d.path().join(pkg.name.as_str())).unwrap();
        std::fs::write(
            d.path().join(pkg.name.as_str()).join("catalog.yaml"),
            to_string(&sub, Format::Yaml),
        )
        .unwrap();
    }
    d
});

#[divan::bench(sample_count = 10)]
fn community_v421_yaml(b: divan::Bencher) {
    let dir = community();
    b.counter(BytesCount::new(dir_bytes(&dir))).bench(|| {
        let cat = load_path_with(&dir, &OPTS).unwrap();
        olm_catalog::validate(&cat).unwrap();
        cat
    });
}

/// The same catalog as one opm JSON stream (`opm render` output), read by the JSON stream reader.
static COMMUNITY_JSON_DIR: LazyLock<tempfile::TempDir> = LazyLock::new(|| {
    let d = tempfile::tempdir().unwrap();
    let cat = load_path_with(&community(), &OPTS).unwrap();
    std::fs::write(d.path().join("catalog.json"), to_string(&cat, Format::Json)).unwrap();
    d
});

#[divan::bench(sample_count = 10)]
fn community_v421_json(b: divan::Bencher) {
    let dir = COMMUNITY_JSON_DIR.path();
    b.counter(BytesCount::new(dir_bytes(dir))).bench(|| {
        let cat = load_path_with(dir, &OPTS).unwrap();
        olm_catalog::validate(&cat).unwrap();
        cat
    });
}

#[divan::bench(sample_count = 10)]
fn community_v421_jsonl(b: divan::Bencher) {
    let text = COMMUNITY_JSONL.as_bytes();
    b.counter(BytesCount::new(text.len())).bench(|| {
        let cat = load_jsonl_with(text, "catalog.jsonl", &OPTS).unwrap();
        olm_catalog::validate(&cat).unwrap();
        cat
    });
}

#[divan::bench(sample_count = 3)]
fn synthetic_50k_bundles_jsonl(b: divan::Bencher) {
    let text = SYNTHETIC_JSONL.as_bytes();
    b.counter(BytesCount::new(text.len())).bench(|| {
        let cat = load_jsonl_with(text, "catalog.jsonl", &OPTS).unwrap();
        olm_catalog::validate(&cat).unwrap();
        cat
    });
}

#[divan::bench(sample_count = 3)]
fn synthetic_50k_bundles_yaml(b: divan::Bencher) {
    let dir = SYNTHETIC_YAML_DIR.path();
    b.counter(BytesCount::new(dir_bytes(dir))).bench(|| {
        let cat = load_path_with(dir, &OPTS).unwrap();
        olm_catalog::validate(&cat).unwrap();
        cat
    });
}

#[divan::bench(sample_count = 10)]
fn write_community_jsonl(b: divan::Bencher) {
    let cat = load_jsonl_with(
        COMMUNITY_JSONL.as_bytes(),
        "catalog.jsonl",
        &LoadOptions::default(),
    )
    .unwrap();
    b.counter(BytesCount::new(COMMUNITY_JSONL.len()))
        .bench(|| to_string(&cat, Format::Jsonl));
}

#[divan::bench(sample_count = 10)]
fn write_community_yaml(b: divan::Bencher) {
    let cat = load_path_with(&community(), &OPTS).unwrap();
    b.counter(BytesCount::new(dir_bytes(&community())))
        .bench(|| to_string(&cat, Format::Yaml));
}

/// `olm catalog render -o yaml` of the community catalog: read and written a package at a time.
#[divan::bench(sample_count = 10)]
fn render_community_yaml_by_package(b: divan::Bencher) {
    let dir = community();
    b.counter(BytesCount::new(dir_bytes(&dir))).bench(|| {
        let mut out = Vec::new();
        olm_catalog::stream::for_each_package(
            &dir,
            &OPTS,
            |c| -> Result<(), olm_catalog::LoadError> {
                olm_catalog::write::write(&c, Format::Yaml, &mut out).unwrap();
                Ok(())
            },
        )
        .unwrap();
        out
    });
}

/// `olm catalog validate` of the community catalog, keeping only what validation reads.
#[divan::bench(sample_count = 10)]
fn validate_community_lean(b: divan::Bencher) {
    let dir = community();
    let opts = LoadOptions {
        keep_raw: false,
        validate_only: true,
    };
    b.counter(BytesCount::new(dir_bytes(&dir))).bench(|| {
        let cat = load_path_with(&dir, &opts).unwrap();
        olm_catalog::validate(&cat).unwrap();
        cat
    });
}
