//! Template rendering: the largest real basic template (project-quay, 152 bundles, 12 channels), the
//! largest real semver template (konflux, 49 bundles, minor channels) and a synthetic semver template
//! of 2,000 bundles for each edge algorithm. Bundles come from an in-memory catalog, so this measures
//! the template work, not image pulls.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use divan::Bencher;
use olm_catalog::Bundle;
use olm_catalog::model::Catalog;
use olm_catalog::property::{PackageProperty, Property, TYPE_PACKAGE};
use olm_template::{
    self as template, BundleRenderError, CatalogBundleRenderer, RenderOptions, SemverEdges,
    SemverOptions,
};

fn main() {
    divan::main();
}

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

fn load(rel: &str) -> (Catalog, Vec<u8>) {
    let d = data();
    let (cat, tpl) = rel.split_once('|').expect("catalog|template");
    let cat = olm_catalog::load_file(&d.join(cat)).expect("catalog");
    let tpl = std::fs::read(d.join(tpl)).expect("template");
    (cat, tpl)
}

#[divan::bench(sample_count = 20)]
fn basic_project_quay(b: Bencher) {
    let (cat, tpl) =
        load("templates/project-quay/catalog-v4.22.yaml|templates/project-quay/basic.yaml");
    let r = CatalogBundleRenderer::new(&cat, "catalog");
    b.bench(|| template::render(&tpl, None, &r, &RenderOptions::default()).expect("render"));
}

#[divan::bench(sample_count = 20)]
fn semver_konflux(b: Bencher) {
    let (cat, tpl) =
        load("catalogs/community-v4.21/konflux/catalog.yaml|templates/konflux/semver.yaml");
    let r = CatalogBundleRenderer::new(&cat, "catalog");
    b.bench(|| template::render(&tpl, None, &r, &RenderOptions::default()).expect("render"));
}

fn synthetic_bundle(image: &str) -> Result<Vec<Bundle>, BundleRenderError> {
    let version = image.trim_start_matches("op:");
    let prop = PackageProperty {
        package_name: "op".into(),
        version: version.into(),
        release: String::new(),
    };
    Ok(vec![Bundle {
        name: format!("op.v{version}").into(),
        package: "op".into(),
        image: image.into(),
        properties: vec![Property::new(TYPE_PACKAGE, &prop)],
        ..Default::default()
    }])
}

/// 2,000 bundles: majors 0–3 × minors 0–24 × patches 0–19, all in `stable` and every fourth in
/// `candidate`, with both channel kinds.
fn synthetic_template() -> Vec<u8> {
    let mut stable = String::new();
    let mut candidate = String::new();
    let mut n = 0;
    for x in 0..4 {
        for y in 0..25 {
            for z in 0..20 {
                let line = format!("  - image: op:{x}.{y}.{z}\n");
                stable.push_str(&line);
                if n % 4 == 0 {
                    candidate.push_str(&line);
                }
                n += 1;
            }
        }
    }
    format!(
        "schema: olm.semver\ngenerateMajorChannels: true\ngenerateMinorChannels: true\n\
         stable:\n  bundles:\n{stable}candidate:\n  bundles:\n{candidate}"
    )
    .into_bytes()
}

#[divan::bench(args = [SemverEdges::EdgeScoped, SemverEdges::ChannelScopedV1_37], sample_count = 10)]
fn semver_synthetic_2000(b: Bencher, edges: SemverEdges) {
    let tpl = synthetic_template();
    let options = RenderOptions {
        semver: SemverOptions {
            edges,
            package_metadata: true,
        },
    };
    b.bench(|| template::render(&tpl, None, &synthetic_bundle, &options).expect("render"));
}
