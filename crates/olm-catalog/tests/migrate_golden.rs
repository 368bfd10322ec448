//! The bundle-object-to-csv-metadata migration reproduces the `olm.csv.metadata` the publishing
//! pipeline (opm) wrote for the same bundles: CSVs from shared/data/bundles wrapped as
//! `olm.bundle.object`, migrated, and compared with community-v4.21.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use base64::Engine;
use olm_catalog::model::{Blob, Bundle, Catalog};
use olm_catalog::property::{Property, TYPE_BUNDLE_OBJECT, TYPE_CSV_METADATA};
use olm_catalog::{load_file, migrate::migrate};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

fn check(pkg: &str, bundle_dir: &str, csv_file: &str, bundle_name: &str) {
    let csv = std::fs::read(
        data()
            .join("bundles")
            .join(pkg)
            .join(bundle_dir)
            .join("manifests")
            .join(csv_file),
    )
    .unwrap();
    let object = Property::new(
        TYPE_BUNDLE_OBJECT,
        &serde_json::json!({ "data": base64::engine::general_purpose::STANDARD.encode(&csv) }),
    );
    let mut cat = Catalog {
        blobs: vec![Blob::from(Bundle {
            name: bundle_name.into(),
            package: pkg.into(),
            image: "quay.io/example/bundle:v1".into(),
            properties: vec![object],
            ..Default::default()
        })],
    };
    migrate(&mut cat, Some("bundle-object-to-csv-metadata")).unwrap();
    let ours = cat
        .bundles()
        .next()
        .unwrap()
        .properties
        .iter()
        .find(|p| p.type_ == TYPE_CSV_METADATA)
        .unwrap()
        .value
        .get()
        .to_owned();

    let real = load_file(
        &data()
            .join("catalogs/community-v4.21")
            .join(pkg)
            .join("catalog.yaml"),
    )
    .unwrap();
    let theirs = real
        .bundles()
        .find(|b| b.name == bundle_name)
        .unwrap()
        .properties
        .iter()
        .find(|p| p.type_ == TYPE_CSV_METADATA)
        .unwrap()
        .value
        .get()
        .to_owned();
    let a: serde_json::Value = serde_json::from_str(&ours).unwrap();
    let b: serde_json::Value = serde_json::from_str(&theirs).unwrap();
    if a != b {
        for (k, v) in b.as_object().unwrap() {
            assert_eq!(a.get(k), Some(v), "{pkg}: field {k}");
        }
        for k in a.as_object().unwrap().keys() {
            assert!(b.get(k).is_some(), "{pkg}: extra field {k}");
        }
    }
    // opm keeps struct field order in the property; catalogs written as YAML (and catalogd) sort keys.
    assert_eq!(
        olm_catalog::canonical::canonicalize_json(&ours).unwrap(),
        theirs,
        "{pkg}: canonical bytes"
    );
}

#[test]
fn kepler() {
    check(
        "kepler-operator",
        "0.24.0",
        "kepler-operator.clusterserviceversion.yaml",
        "kepler-operator.v0.24.0",
    );
}

#[test]
fn cat_facts() {
    check(
        "cat-facts-operator",
        "1.1.2",
        "cat-facts-operator.clusterserviceversion.yaml",
        "cat-facts-operator.v1.1.2",
    );
}

#[test]
fn rabbitmq_cluster() {
    check(
        "rabbitmq-cluster-operator",
        "2.22.3",
        "rabbitmq-cluster-operator.clusterserviceversion.yaml",
        "rabbitmq-cluster-operator.v2.22.3",
    );
}

/// Every bundle directory in the shared data whose CSV is also in community-v4.21.
#[test]
fn every_shared_bundle_found_in_the_catalog() {
    let catalog = olm_catalog::load_path(&data().join("catalogs/community-v4.21")).unwrap();
    let mut checked = 0;
    let mut pkgs: Vec<PathBuf> = std::fs::read_dir(data().join("bundles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    pkgs.sort();
    for pkg in pkgs {
        let mut versions: Vec<PathBuf> = std::fs::read_dir(&pkg)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        versions.sort();
        for ver in versions {
            let Ok(files) = std::fs::read_dir(ver.join("manifests")) else {
                continue;
            };
            for f in files {
                let f = f.unwrap().path();
                let text = std::fs::read_to_string(&f).unwrap();
                let Ok(v) = olm_goenc::yamlread::from_str::<serde_json::Value>(&text) else {
                    continue;
                };
                if v.get("kind").and_then(|k| k.as_str()) != Some("ClusterServiceVersion") {
                    continue;
                }
                let name = v["metadata"]["name"].as_str().unwrap().to_owned();
                let Some(b) = catalog.bundles().find(|b| b.name == name.as_str()) else {
                    continue;
                };
                let pkg_name = b.package.to_string();
                let dir = ver.file_name().unwrap().to_str().unwrap().to_owned();
                let file = f.file_name().unwrap().to_str().unwrap().to_owned();
                let pkg_dir = pkg.file_name().unwrap().to_str().unwrap().to_owned();
                assert_eq!(pkg_dir, pkg_name, "bundle dir package");
                check(&pkg_name, &dir, &file, &name);
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} bundles compared");
}
