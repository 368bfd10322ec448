//! `olm.csv.metadata` has one converter (`olm_catalog::property::CsvMetadata`), reached two ways:
//! rendering a bundle directory in metadata form, and opm's `bundle-object-to-csv-metadata`
//! migration of the same bundle rendered with `olm.bundle.object`s. Both must give the same bytes
//! for every real bundle, or a catalog would change when it is migrated.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use olm_bundle::Bundle;
use olm_bundle::properties::{ObjectsMode, to_olm_bundle};
use olm_catalog::property::TYPE_CSV_METADATA;
use serde_json::Value;

fn bundle_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/bundles");
    let mut out = Vec::new();
    for pkg in std::fs::read_dir(root).unwrap() {
        for ver in std::fs::read_dir(pkg.unwrap().path()).unwrap() {
            let ver = ver.unwrap().path();
            if ver.join("manifests").is_dir() {
                out.push(ver);
            }
        }
    }
    out.sort();
    out
}

/// The `olm.csv.metadata` value of a rendered blob, written as the catalog writer writes it.
fn rendered_metadata(blob: &Value) -> Option<String> {
    let props = blob.get("properties")?.as_array()?;
    let p = props
        .iter()
        .find(|p| p.get("type").and_then(Value::as_str) == Some(TYPE_CSV_METADATA))?;
    let mut text = String::new();
    olm_goenc::json::write_value(&mut text, p.get("value")?);
    Some(text)
}

/// The `olm.csv.metadata` value after migrating the blob's `olm.bundle.object`s.
fn migrated_metadata(blob: &Value) -> Option<String> {
    let text = serde_json::to_string(blob).unwrap();
    let mut cat = olm_catalog::load::load_bytes(text.as_bytes(), "bundle.json").unwrap();
    olm_catalog::migrate::migrate(&mut cat, Some("bundle-object-to-csv-metadata")).unwrap();
    let bundle = cat.bundles().next()?;
    let p = bundle
        .properties
        .iter()
        .find(|p| p.type_ == TYPE_CSV_METADATA)?;
    Some(p.value.get().to_owned())
}

#[test]
fn rendering_and_migrating_give_the_same_csv_metadata() {
    let mut compared = 0;
    let mut failures = Vec::new();
    for dir in bundle_dirs() {
        let Ok(b) = Bundle::from_dir(&dir) else {
            continue;
        };
        let image = "quay.io/example/bundle:v1";
        let (Ok(direct), Ok(objects)) = (
            to_olm_bundle(&b, image, ObjectsMode::CsvMetadata),
            to_olm_bundle(&b, image, ObjectsMode::BundleObjects),
        ) else {
            continue;
        };
        let direct = rendered_metadata(&direct);
        let migrated = migrated_metadata(&objects);
        assert!(direct.is_some(), "{}: no csv.metadata", dir.display());
        compared += 1;
        if direct != migrated {
            failures.push(format!(
                "{}:\n  rendered {direct:?}\n  migrated {migrated:?}",
                dir.display()
            ));
        }
    }
    assert!(compared >= 40, "only {compared} bundles compared");
    assert!(
        failures.is_empty(),
        "{} of {compared} differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
