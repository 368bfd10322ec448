//! Turning a bundle image reference named in a template into `olm.bundle` blobs.
//!
//! Upstream renders every image with `opm render <image>` (pull, unpack, convert the registry+v1
//! bundle). Templates only need the result, so the source is a trait: [`CatalogBundleRenderer`]
//! answers from an existing catalog that already holds the image (offline, and the way golden tests
//! reproduce committed renderings); bundle directories and registries plug in later.

use std::collections::HashMap;

use rayon::prelude::*;

use olm_catalog::model::{Bundle, Catalog};
use olm_goenc::quote;

/// Renders one bundle image reference into the `olm.bundle` blob(s) it contains.
///
/// Templates render their images in parallel (they are independent; pulling them is the slow part
/// of rendering), hence `Sync`. Errors are still reported for the first failing image in template
/// order, so results do not depend on scheduling.
pub trait BundleRenderer: Sync {
    /// The `olm.bundle` blobs rendered from `image` (one for a bundle image; catalogs may hold more).
    fn render_bundle(&self, image: &str) -> Result<Vec<Bundle>, BundleRenderError>;
}

/// Any `Fn(&str) -> Result<Vec<Bundle>, BundleRenderError>` is a renderer (handy in tests and for
/// callers that wrap another source).
impl<F> BundleRenderer for F
where
    F: Fn(&str) -> Result<Vec<Bundle>, BundleRenderError> + Sync,
{
    fn render_bundle(&self, image: &str) -> Result<Vec<Bundle>, BundleRenderError> {
        self(image)
    }
}

/// Renders every distinct image of `images` once, in parallel; returns one result per entry of
/// `images`, in order (repeated images share a clone of the first result).
pub(crate) fn render_all(
    renderer: &dyn BundleRenderer,
    images: &[&str],
) -> Vec<Result<Vec<Bundle>, BundleRenderError>> {
    let mut distinct: Vec<&str> = Vec::new();
    let mut slot: HashMap<&str, usize> = HashMap::new();
    let index: Vec<usize> = images
        .iter()
        .map(|i| {
            *slot.entry(i).or_insert_with(|| {
                distinct.push(i);
                distinct.len() - 1
            })
        })
        .collect();
    let rendered: Vec<Result<Vec<Bundle>, BundleRenderError>> = distinct
        .par_iter()
        .map(|i| renderer.render_bundle(i))
        .collect();
    index.into_iter().map(|i| rendered[i].clone()).collect()
}

/// Why an image could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BundleRenderError {
    /// The image is not in the catalog the renderer answers from.
    #[error("bundle image {} not found in {source_name}", quote(.image))]
    NotFound {
        /// The image the template names.
        image: String,
        /// What the renderer answers from, as messages name it.
        source_name: String,
    },
    /// Any other failure, with its message.
    #[error("{0}")]
    Failed(String),
}

/// Renders images from the `olm.bundle` blobs of an existing catalog, matched by their `image`
/// field exactly. Every blob with that image is returned, in catalog order.
pub struct CatalogBundleRenderer<'a> {
    by_image: HashMap<&'a str, Vec<&'a Bundle>>,
    source_name: String,
}

impl<'a> CatalogBundleRenderer<'a> {
    /// `source_name` names the catalog in the not-found error (e.g. `catalog "path/to/dir"`).
    pub fn new(catalog: &'a Catalog, source_name: impl Into<String>) -> Self {
        let mut by_image: HashMap<&'a str, Vec<&'a Bundle>> = HashMap::new();
        for b in catalog.bundles() {
            if !b.image.is_empty() {
                by_image.entry(b.image.as_str()).or_default().push(b);
            }
        }
        CatalogBundleRenderer {
            by_image,
            source_name: source_name.into(),
        }
    }

    /// Number of distinct images the renderer knows.
    pub fn len(&self) -> usize {
        self.by_image.len()
    }

    /// Whether the renderer knows no image.
    pub fn is_empty(&self) -> bool {
        self.by_image.is_empty()
    }

    /// Whether the renderer can answer for `image`.
    pub fn contains(&self, image: &str) -> bool {
        self.by_image.contains_key(image)
    }
}

impl BundleRenderer for CatalogBundleRenderer<'_> {
    fn render_bundle(&self, image: &str) -> Result<Vec<Bundle>, BundleRenderError> {
        match self.by_image.get(image) {
            Some(bundles) => Ok(bundles.iter().map(|b| (*b).clone()).collect()),
            None => Err(BundleRenderError::NotFound {
                image: image.to_owned(),
                source_name: self.source_name.clone(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use olm_catalog::model::Blob;

    fn bundle(name: &str, image: &str) -> Bundle {
        Bundle {
            name: name.into(),
            package: "p".into(),
            image: image.into(),
            ..Default::default()
        }
    }

    #[test]
    fn looks_up_by_image() {
        let cat = Catalog {
            blobs: vec![
                Blob::from(bundle("a", "quay.io/p:1")),
                Blob::from(bundle("b", "quay.io/p:2")),
                Blob::from(bundle("c", "quay.io/p:2")),
            ],
        };
        let r = CatalogBundleRenderer::new(&cat, "catalog \"x\"");
        assert_eq!(r.len(), 2);
        let got: Vec<String> = r
            .render_bundle("quay.io/p:2")
            .unwrap()
            .into_iter()
            .map(|b| b.name.into_string())
            .collect();
        assert_eq!(got, ["b", "c"]);
        assert_eq!(
            r.render_bundle("quay.io/p:3").unwrap_err().to_string(),
            r#"bundle image "quay.io/p:3" not found in catalog "x""#
        );
    }
}
