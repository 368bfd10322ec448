//! Parse and render real bundles (files already in memory, so disk speed is not measured).
//!
//! `cargo bench -p olm-bundle --bench render`

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use olm_bundle::{
    Bundle, BundleFile, CertProvider, csv::InstallModeType, manifests_to_yaml, render_bundle,
};

fn main() {
    divan::main();
}

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

fn load(dir: &Path) -> Vec<BundleFile> {
    let mut files = Vec::new();
    for sub in ["manifests", "metadata"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub)) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_file() {
                let name = p
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                files.push(BundleFile {
                    path: format!("{sub}/{name}"),
                    contents: std::fs::read(&p).unwrap_or_default(),
                });
            }
        }
    }
    files
}

fn argocd() -> Vec<BundleFile> {
    load(&data().join("upstream-regression/bundles/argocd-operator.v0.6.0"))
}

/// Every bundle directory of the data set, loaded.
fn all_bundles() -> Vec<Vec<BundleFile>> {
    let mut out = Vec::new();
    let mut pkgs: Vec<PathBuf> = std::fs::read_dir(data().join("bundles"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    pkgs.sort();
    for pkg in pkgs {
        let mut vers: Vec<PathBuf> = std::fs::read_dir(pkg)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        vers.sort();
        for v in vers {
            out.push(load(&v));
        }
    }
    out
}

fn config_for(b: &Bundle) -> Option<&'static str> {
    if b.csv.supports(&InstallModeType::AllNamespaces) {
        None
    } else if b.csv.supports(&InstallModeType::OwnNamespace) {
        Some("{\"watchNamespace\": \"operators\"}")
    } else {
        Some("{\"watchNamespace\": \"watched\"}")
    }
}

#[divan::bench]
fn parse_argocd(bencher: divan::Bencher) {
    let files = argocd();
    bencher.bench(|| Bundle::from_files(divan::black_box(files.clone())).unwrap());
}

#[divan::bench]
fn render_argocd(bencher: divan::Bencher) {
    let b = Bundle::from_files(argocd()).unwrap();
    bencher.bench(|| render_bundle(divan::black_box(&b), "argocd-system", None, None).unwrap());
}

#[divan::bench]
fn parse_render_yaml_argocd(bencher: divan::Bencher) {
    let files = argocd();
    bencher.bench(|| {
        let b = Bundle::from_files(divan::black_box(files.clone())).unwrap();
        let objs = render_bundle(&b, "argocd-system", None, None).unwrap();
        manifests_to_yaml(&objs)
    });
}

/// Parse and render all 71 data bundles (one iteration = the whole set), single-threaded.
#[divan::bench(sample_count = 10)]
fn parse_render_all_data_bundles(bencher: divan::Bencher) {
    let all = all_bundles();
    bencher.bench(|| {
        let mut n = 0;
        for files in &all {
            if let Ok(b) = Bundle::from_files(files.clone())
                && let Ok(objs) = render_bundle(
                    &b,
                    "operators",
                    config_for(&b),
                    Some(CertProvider::CertManager),
                )
            {
                n += objs.len();
            }
        }
        n
    });
}

/// YAML decoding alone, for comparison with `parse_argocd`.
#[divan::bench]
fn decode_yaml_argocd(bencher: divan::Bencher) {
    let texts: Vec<String> = argocd()
        .into_iter()
        .map(|f| String::from_utf8(f.contents).unwrap_or_default())
        .collect();
    bencher.bench(|| {
        texts
            .iter()
            .map(|t| {
                olm_bundle::goyaml::parse_documents(divan::black_box(t))
                    .map(|d| d.len())
                    .unwrap_or(0)
            })
            .sum::<usize>()
    });
}

/// Render alone for all data bundles (parsed beforehand).
#[divan::bench(sample_count = 10)]
fn render_all_data_bundles(bencher: divan::Bencher) {
    let parsed: Vec<Bundle> = all_bundles()
        .into_iter()
        .filter_map(|f| Bundle::from_files(f).ok())
        .collect();
    bencher.bench(|| {
        parsed
            .iter()
            .filter_map(|b| {
                render_bundle(
                    b,
                    "operators",
                    config_for(b),
                    Some(CertProvider::CertManager),
                )
                .ok()
            })
            .map(|o| o.len())
            .sum::<usize>()
    });
}
