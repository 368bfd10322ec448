//! `opm render --migrate-level`: ordered catalog migrations.
//!
//! Levels, in order: `none` (do nothing) and `bundle-object-to-csv-metadata` (for every bundle with an
//! image and a ClusterServiceVersion among its `olm.bundle.object`s: drop all object properties and
//! append one `olm.csv.metadata` built from the CSV; bundles that already have csv metadata are left
//! alone). Asking for a level runs every migration up to and including it.

use serde_json::Value;

use crate::model::Catalog;
use crate::property::{
    BundleObject, CsvMetadata, Property, TYPE_BUNDLE_OBJECT, TYPE_CSV_METADATA, TypedProperty,
};

/// The known migration levels in order.
pub const LEVELS: &[(&str, &str)] = &[
    ("none", "do nothing"),
    (
        "bundle-object-to-csv-metadata",
        "migrates bundles' `olm.bundle.object` to `olm.csv.metadata`",
    ),
];

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MigrateError {
    #[error("unknown migration level {0:?}")]
    UnknownLevel(String),
    #[error("package {package:?}, bundle {bundle:?}: {message}")]
    Bundle {
        package: String,
        bundle: String,
        message: String,
    },
}

/// Runs every migration up to `level` (the last level when `None`: `--migrate`).
pub fn migrate(cat: &mut Catalog, level: Option<&str>) -> Result<(), MigrateError> {
    let upto = match level {
        None => LEVELS.len() - 1,
        Some(l) => LEVELS
            .iter()
            .position(|(n, _)| *n == l)
            .ok_or_else(|| MigrateError::UnknownLevel(l.to_owned()))?,
    };
    if upto >= 1 {
        bundle_object_to_csv_metadata(cat)?;
    }
    Ok(())
}

fn bundle_object_to_csv_metadata(cat: &mut Catalog) -> Result<(), MigrateError> {
    for b in cat.bundles_mut() {
        if b.image.is_empty() || b.properties.iter().any(|p| p.type_ == TYPE_CSV_METADATA) {
            continue;
        }
        let mut csv = None;
        for p in &b.properties {
            if p.type_ != TYPE_BUNDLE_OBJECT {
                continue;
            }
            let err = |message: String| MigrateError::Bundle {
                package: b.package.0.clone(),
                bundle: b.name.0.clone(),
                message,
            };
            let obj: BundleObject = match p.parse() {
                Ok(TypedProperty::BundleObject(o)) => o,
                Ok(_) => continue,
                Err(e) => return Err(err(e)),
            };
            let data = obj.decode().map_err(&err)?;
            let text = String::from_utf8(data).map_err(|e| err(e.to_string()))?;
            let v: Value = serde_saphyr::from_str(&text).map_err(|e| err(e.to_string()))?;
            if v.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion") {
                csv = Some(v);
                break;
            }
        }
        let Some(csv) = csv else { continue };
        b.properties.retain(|p| p.type_ != TYPE_BUNDLE_OBJECT);
        b.properties.push(Property::new(
            TYPE_CSV_METADATA,
            &CsvMetadata::from_csv(&csv),
        ));
        b.raw = None;
    }
    Ok(())
}
