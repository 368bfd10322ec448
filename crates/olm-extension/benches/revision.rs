//! Building and packing a revision from a real bundle's rendered objects: argocd-operator
//! 0.18.0, the largest bundle in the shared data, whose revision is well over etcd's 1.5 MiB
//! inline and is packed, and cat-facts-operator 1.1.2, a small one that stays inline.
//!
//! Run: `cargo bench -p olm-extension --bench revision`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::LazyLock;

use divan::Bencher;
use olm_api::{BundleMetadata, ClusterObjectSet};
use olm_extension::{pack, phase, revision};
use serde_json::Value;

fn main() {
    divan::main();
}

struct Fixture {
    bundle: BundleMetadata,
    objects: Vec<Value>,
}

fn load(dir: &str, namespace: &str, config: Option<&str>) -> Fixture {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/bundles")
        .join(dir);
    let b = olm_bundle::Bundle::from_dir(&path).unwrap();
    let objects = olm_bundle::render_bundle(
        &b,
        namespace,
        config,
        Some(olm_bundle::CertProvider::CertManager),
    )
    .unwrap();
    Fixture {
        bundle: BundleMetadata {
            name: b.csv.name().to_owned(),
            version: b.csv.version(),
            release: None,
        },
        objects,
    }
}

static LARGE: LazyLock<Fixture> = LazyLock::new(|| load("argocd-operator/0.18.0", "argocd", None));
static SMALL: LazyLock<Fixture> = LazyLock::new(|| {
    load(
        "cat-facts-operator/1.1.2",
        "cats",
        Some(r#"{"watchNamespace": "cats"}"#),
    )
});

fn fixture(name: &str) -> &'static Fixture {
    match name {
        "argocd" => &LARGE,
        _ => &SMALL,
    }
}

fn build(f: &Fixture) -> ClusterObjectSet {
    revision::build(&revision::RevisionRequest {
        extension_name: "bench",
        extension_uid: "00000000-0000-4000-8000-000000000000",
        revision: 3,
        package_name: "bench-package",
        bundle: &f.bundle,
        bundle_image: "quay.io/example/bench-bundle:v1",
        properties: None,
        objects: &f.objects,
        progress_deadline_minutes: 0,
        service_account: None,
    })
    .unwrap()
}

/// Sanitising, phase sorting and the content digest.
#[divan::bench(args = ["argocd", "cat-facts"])]
fn build_revision(bencher: Bencher, name: &str) {
    let f = fixture(name);
    bencher.bench(|| build(divan::black_box(f)));
}

/// Measuring the revision and, for the large one, packing it into Secrets.
#[divan::bench(args = ["argocd", "cat-facts"])]
fn externalize(bencher: Bencher, name: &str) {
    let rev = build(fixture(name));
    bencher
        .with_inputs(|| rev.clone())
        .bench_values(|r| pack::externalize(r, "olmv1-system").unwrap());
}

/// What the extension controller does per new revision: build, then pack.
#[divan::bench(args = ["argocd", "cat-facts"])]
fn build_and_externalize(bencher: Bencher, name: &str) {
    let f = fixture(name);
    bencher.bench(|| pack::externalize(build(divan::black_box(f)), "olmv1-system").unwrap());
}

/// What the ClusterObjectSet controller does per reconcile: the digest of every phase.
#[divan::bench(args = ["argocd", "cat-facts"])]
fn phase_digests(bencher: Bencher, name: &str) {
    let rev = build(fixture(name));
    bencher.bench(|| {
        rev.spec
            .phases
            .iter()
            .map(phase::digest)
            .collect::<Vec<_>>()
    });
}

/// What the extension controller does per reconcile to compare with the newest revision.
#[divan::bench(args = ["argocd", "cat-facts"])]
fn change(bencher: Bencher, name: &str) {
    let f = fixture(name);
    let latest = build(f);
    let desired = build(f);
    bencher.bench(|| revision::change(&desired, Some(&latest)));
}
