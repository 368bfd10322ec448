//! The basic template (`olm.template.basic`): a list of FBC blobs in which every bundle is written as
//! just `{schema: olm.bundle, image: …}` and replaced by the bundle(s) rendered from that image.
//!
//! Packages, channels, deprecations and blobs of other schemas pass through unchanged and nothing is
//! validated (upstream pipes the result to `opm validate`). Bundles are replaced where they stand,
//! so the output keeps the template's blob order.

use olm_goenc::json::{Kind, UnmarshalTypeError};
use serde_json::Value;

use crate::{BundleRenderer, TemplateError, TemplateKind, first_document, load_entries};
use olm_catalog::model::{Blob, Catalog};
use olm_goenc::quote;

pub const SCHEMA: &str = "olm.template.basic";

fn err(message: impl Into<String>) -> TemplateError {
    TemplateError::render(TemplateKind::Basic, message)
}

/// The `entries` of a basic template after the schema check.
pub(crate) fn parse(input: &[u8], schema: &str) -> Result<Vec<Value>, String> {
    let doc = first_document(input).map_err(|e| format!("decoding template schema: {e}"))?;
    let Value::Object(m) = doc else {
        return Err(format!(
            "unmarshalling template: {}",
            UnmarshalTypeError::value(Kind::of(&doc), "basic.BasicTemplate")
        ));
    };
    let found = match olm_goenc::json::field(&m, "schema") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(other) => {
            return Err(format!(
                "unmarshalling template: {}",
                UnmarshalTypeError::field(Kind::of(other), "BasicTemplate", "schema", "string")
            ));
        }
    };
    let entries = match olm_goenc::json::field(&m, "entries") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(other) => {
            return Err(format!(
                "unmarshalling template: {}",
                UnmarshalTypeError::field(
                    Kind::of(other),
                    "BasicTemplate",
                    "entries",
                    "[]*declcfg.Meta"
                )
            ));
        }
    };
    if found != schema {
        return Err(format!(
            "template has unknown schema ({}), should be {}",
            quote(found),
            quote(schema)
        ));
    }
    Ok(entries)
}

/// Renders a basic template.
///
/// Errors (upstream texts): `decoding template schema: …`, `unmarshalling template: …`,
/// `template has unknown schema ("x"), should be "olm.template.basic"`, the loader's blob errors
/// (`parse bundle: …`, `object '…' is missing root schema field`, …),
/// `unexpected fields present in basic template bundle` for a bundle with a `package`,
/// `properties` or `relatedImages` (or without an `image`), and the renderer's own errors.
pub fn render(input: &[u8], renderer: &dyn BundleRenderer) -> Result<Catalog, TemplateError> {
    let entries = parse(input, SCHEMA).map_err(err)?;
    let cfg = load_entries(&entries).map_err(err)?;
    // Render the images of the template bundles up to the first malformed one (upstream stops
    // there), in parallel; then assemble in order so the first failure in template order wins.
    let images: Vec<&str> = cfg
        .bundles()
        .take_while(|b| is_bundle_template(b))
        .map(|b| b.image.as_str())
        .collect();
    let mut rendered = crate::renderer::render_all(renderer, &images).into_iter();
    let mut out = Catalog {
        blobs: Vec::with_capacity(cfg.blobs.len()),
    };
    for blob in cfg.blobs {
        match blob {
            Blob::Bundle(_) => match rendered.next() {
                Some(r) => out.blobs.extend(r?.into_iter().map(Blob::from)),
                None => return Err(err("unexpected fields present in basic template bundle")),
            },
            other => out.blobs.push(other),
        }
    }
    Ok(out)
}

/// A template bundle names an image and nothing else but (tolerated) a name.
fn is_bundle_template(b: &olm_catalog::model::Bundle) -> bool {
    !b.image.is_empty()
        && b.package.is_empty()
        && b.properties.is_empty()
        && b.related_images.is_empty()
}

/// The inverse of [`render`] (`opm alpha convert-template basic`): a basic template holding every blob
/// of `catalog` as it is, except bundles, which are reduced to `{schema: olm.bundle, image}`.
/// Blobs keep their canonical JSON (keys sorted), as upstream re-emits each loaded blob.
pub fn convert(catalog: &Catalog) -> Value {
    let entries = catalog
        .blobs
        .iter()
        .map(|b| match b {
            Blob::Bundle(x) => {
                serde_json::json!({"schema": olm_catalog::model::SCHEMA_BUNDLE, "image": x.image})
            }
            other => blob_value(other),
        })
        .collect();
    let mut m = serde_json::Map::new();
    m.insert("schema".to_owned(), Value::String(SCHEMA.to_owned()));
    m.insert("entries".to_owned(), Value::Array(entries));
    Value::Object(m)
}

/// A blob as a JSON value, from its canonical JSON.
pub(crate) fn blob_value(b: &Blob) -> Value {
    let text = olm_catalog::write::canonical_blob(b);
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BundleRenderError;
    use olm_catalog::model::Bundle;

    fn renderer(image: &str) -> Result<Vec<Bundle>, BundleRenderError> {
        match image {
            "img/a:1" => Ok(vec![Bundle {
                name: "a.v1.0.0".into(),
                package: "a".into(),
                image: image.into(),
                ..Default::default()
            }]),
            _ => Err(BundleRenderError::Failed(format!(
                "render reference {}: not found",
                quote(image)
            ))),
        }
    }

    fn render_str(s: &str) -> Result<Catalog, TemplateError> {
        render(s.as_bytes(), &renderer)
    }

    #[test]
    fn replaces_bundles_in_place() {
        let cat = render_str(
            "schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: a\n  defaultChannel: stable\n\
             - schema: olm.bundle\n  image: img/a:1\n\
             - schema: olm.channel\n  package: a\n  name: stable\n  entries:\n  - name: a.v1.0.0\n",
        )
        .unwrap();
        let schemas: Vec<&str> = cat.blobs.iter().map(|b| b.schema()).collect();
        assert_eq!(schemas, ["olm.package", "olm.bundle", "olm.channel"]);
        assert_eq!(cat.bundles().next().unwrap().name, "a.v1.0.0");
        assert_eq!(cat.packages().next().unwrap().default_channel, "stable");
    }

    #[test]
    fn a_bundle_name_is_tolerated() {
        let cat = render_str("schema: olm.template.basic\nentries:\n- schema: olm.bundle\n  name: whatever\n  image: img/a:1\n").unwrap();
        assert_eq!(cat.bundles().next().unwrap().name, "a.v1.0.0");
    }

    #[test]
    fn first_failure_in_template_order_wins() {
        // Images render in parallel; the reported error is still the first one a sequential walk
        // (upstream) meets.
        let mut t = String::from("schema: olm.template.basic\nentries:\n");
        for i in 0..50 {
            t.push_str(&format!("- schema: olm.bundle\n  image: img/x{i}:1\n"));
        }
        for _ in 0..20 {
            assert_eq!(
                render_str(&t).unwrap_err().to_string(),
                r#"render reference "img/x0:1": not found"#
            );
        }
        let bad = "- schema: olm.bundle\n  image: img/a:1\n  package: a\n";
        let fails = "- schema: olm.bundle\n  image: img/b:1\n";
        let head = "schema: olm.template.basic\nentries:\n";
        assert_eq!(
            render_str(&format!("{head}{fails}{bad}"))
                .unwrap_err()
                .to_string(),
            r#"render reference "img/b:1": not found"#
        );
        assert_eq!(
            render_str(&format!("{head}{bad}{fails}"))
                .unwrap_err()
                .to_string(),
            "unexpected fields present in basic template bundle"
        );
    }

    #[test]
    fn error_texts() {
        // alpha/template/basic/basic.go parseSpec.
        assert_eq!(
            render_str("schema: olm.semver\nentries: []\n")
                .unwrap_err()
                .to_string(),
            r#"template has unknown schema ("olm.semver"), should be "olm.template.basic""#
        );
        assert_eq!(
            render_str("entries: []\n").unwrap_err().to_string(),
            r#"template has unknown schema (""), should be "olm.template.basic""#
        );
        assert_eq!(
            render_str("").unwrap_err().to_string(),
            "decoding template schema: EOF"
        );
        assert_eq!(
            render_str("schema: olm.template.basic\nentries: 3\n")
                .unwrap_err()
                .to_string(),
            "unmarshalling template: json: cannot unmarshal number into Go struct field BasicTemplate.entries of type []*declcfg.Meta"
        );
        // isBundleTemplate: only schema and image (and a name) may be set.
        for extra in [
            "  package: a\n",
            "  properties:\n  - type: olm.label\n    value: {label: x}\n",
            "  relatedImages:\n  - image: x\n",
        ] {
            let t = format!(
                "schema: olm.template.basic\nentries:\n- schema: olm.bundle\n  image: img/a:1\n{extra}"
            );
            assert_eq!(
                render_str(&t).unwrap_err().to_string(),
                "unexpected fields present in basic template bundle",
                "{extra}"
            );
        }
        assert_eq!(
            render_str("schema: olm.template.basic\nentries:\n- schema: olm.bundle\n")
                .unwrap_err()
                .to_string(),
            "unexpected fields present in basic template bundle"
        );
        // The renderer's error is returned as is.
        assert_eq!(
            render_str(
                "schema: olm.template.basic\nentries:\n- schema: olm.bundle\n  image: img/b:1\n"
            )
            .unwrap_err()
            .to_string(),
            r#"render reference "img/b:1": not found"#
        );
        // Blob decoding errors come from the catalog loader (declcfg.LoadSlice).
        let e = render_str("schema: olm.template.basic\nentries:\n- name: x\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing root schema field"), "{e}");
    }
}
