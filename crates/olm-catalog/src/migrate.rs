//! `opm render --migrate-level`: ordered catalog migrations.
//!
//! Levels, in order: `none` (do nothing) and `bundle-object-to-csv-metadata` (for every bundle with an
//! image and a ClusterServiceVersion among its `olm.bundle.object`s: drop all object properties and
//! append one `olm.csv.metadata` built from the CSV; bundles that already have csv metadata are left
//! alone). Asking for a level runs every migration up to and including it.

use olm_goenc::quote;

use crate::model::Catalog;
use crate::property::{CsvMetadata, TYPE_BUNDLE_OBJECT, TYPE_CSV_METADATA};

/// The known migration levels in order.
pub const LEVELS: &[(&str, &str)] = &[
    ("none", "do nothing"),
    (
        "bundle-object-to-csv-metadata",
        "migrates bundles' `olm.bundle.object` to `olm.csv.metadata`",
    ),
];

/// Why a migration could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MigrateError {
    /// The requested level is not one of the known migration names.
    #[error("unknown migration level {}", quote(.0))]
    UnknownLevel(String),
    /// One bundle could not be migrated (its `olm.bundle.object` CSV does not decode or parse).
    #[error("package {}, bundle {}: {message}", quote(package), quote(bundle))]
    Bundle {
        /// The bundle's package.
        package: String,
        /// The bundle.
        bundle: String,
        /// What went wrong.
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
        let csv = b.csv_object().map_err(|message| MigrateError::Bundle {
            package: b.package.to_string(),
            bundle: b.name.to_string(),
            message,
        })?;
        let Some(csv) = csv else { continue };
        b.properties.retain(|p| p.type_ != TYPE_BUNDLE_OBJECT);
        b.properties.push(CsvMetadata::property(&csv));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Blob, Bundle};
    use crate::property::Property;
    use base64::Engine;

    /// A level named with a control character is quoted as Go's `%q` quotes it.
    #[test]
    fn unknown_level_is_quoted_like_go() {
        let mut cat = Catalog::default();
        assert_eq!(
            migrate(&mut cat, Some("x\u{7}\u{85}"))
                .unwrap_err()
                .to_string(),
            r#"unknown migration level "x\a\u0085""#
        );
    }

    fn object(yaml: &str) -> Property {
        let data = base64::engine::general_purpose::STANDARD.encode(yaml);
        Property::new(TYPE_BUNDLE_OBJECT, &serde_json::json!({ "data": data }))
    }

    fn bundle_with_objects() -> Catalog {
        let csv = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: foo.v1.0.0\n  annotations:\n    capabilities: Basic Install\nspec:\n  displayName: Foo\n  description: The foo operator.\n  version: 1.0.0\n  installModes:\n  - type: AllNamespaces\n    supported: true\n  keywords: []\n";
        let crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: foos.example.com\n";
        Catalog {
            blobs: vec![Blob::from(Bundle {
                name: "foo.v1.0.0".into(),
                package: "foo".into(),
                image: "quay.io/foo/bundle:v1.0.0".into(),
                properties: vec![
                    Property::new(
                        "olm.package",
                        &serde_json::json!({"packageName": "foo", "version": "1.0.0"}),
                    ),
                    object(crd),
                    object(csv),
                ],
                ..Default::default()
            })],
        }
    }

    #[test]
    fn bundle_objects_become_csv_metadata() {
        let mut cat = bundle_with_objects();
        migrate(&mut cat, Some("bundle-object-to-csv-metadata")).unwrap();
        let b = cat.bundles().next().unwrap();
        let types: Vec<&str> = b.properties.iter().map(|p| p.type_.as_str()).collect();
        assert_eq!(types, ["olm.package", "olm.csv.metadata"]);
        assert_eq!(
            b.properties[1].value.get(),
            r#"{"annotations":{"capabilities":"Basic Install"},"apiServiceDefinitions":{},"crdDescriptions":{},"description":"The foo operator.","displayName":"Foo","installModes":[{"type":"AllNamespaces","supported":true}],"provider":{}}"#
        );
    }

    #[test]
    fn none_and_unknown_levels() {
        let mut cat = bundle_with_objects();
        migrate(&mut cat, Some("none")).unwrap();
        assert_eq!(cat, bundle_with_objects());
        assert_eq!(
            migrate(&mut cat, Some("bogus")).unwrap_err().to_string(),
            r#"unknown migration level "bogus""#
        );
    }

    #[test]
    fn bundles_without_image_are_left_alone() {
        let mut cat = bundle_with_objects();
        cat.bundles_mut().next().unwrap().image.clear();
        migrate(&mut cat, None).unwrap();
        assert_eq!(cat, {
            let mut c = bundle_with_objects();
            c.bundles_mut().next().unwrap().image.clear();
            c
        });
    }
}
