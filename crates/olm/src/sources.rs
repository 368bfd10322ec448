//! Where catalog content comes from on the command line, as `opm render` accepts it: a catalog
//! directory or file, `-` for stdin, a registry+v1 bundle directory, or an image (catalog or
//! bundle) in a registry.

use std::io::{self, Read};
use std::path::Path;

use anyhow::{Context, anyhow};
use olm_bundle::properties::{ObjectsMode, to_olm_bundle};
use olm_catalog::load;
use olm_catalog::model::Catalog;
use olm_goenc::quote;
use olm_image::{
    AuthConfig, CATALOG_CONFIGS_LABEL, Client, ClientOptions, Expect, Filter, ImageRef, Protocol,
};
use olm_template::{BundleRenderError, BundleRenderer};

/// How to reach registries.
#[derive(Clone, Copy, Default)]
pub struct Registry {
    pub plain_http: bool,
}

impl Registry {
    fn client(self) -> anyhow::Result<Client> {
        let protocol = if self.plain_http {
            Protocol::PlainHttp
        } else {
            Protocol::Auto
        };
        Ok(Client::new(ClientOptions {
            protocol,
            auth: AuthConfig::load_default()?,
            limits: crate::limits::from_env()?,
            ..ClientOptions::default()
        }))
    }
}

/// Loads one reference into a catalog, as `opm render` does, its errors worded as opm's
/// (`render reference "REF": …`). `opts` says whether each blob's text is kept beside its model:
/// only output that is the blobs' own text (JSONL, templates) needs it.
pub fn load_ref(r: &str, registry: Registry, opts: &load::LoadOptions) -> anyhow::Result<Catalog> {
    load_catalog(r, registry, opts).map_err(|e| anyhow!("render reference {}: {e:#}", quote(r)))
}

/// The one reading of a catalog reference for every command that takes one (`catalog render`,
/// `list`, `graph`, `validate`, `template`, `resolve --catalog`): a catalog directory or file,
/// `-` for stdin, a bundle directory, or a catalog or bundle image. Errors do not name `r`; the
/// caller words that.
pub fn load_catalog(
    r: &str,
    registry: Registry,
    opts: &load::LoadOptions,
) -> anyhow::Result<Catalog> {
    crate::progress::spin(&format!("loading {r}"), || {
        load_catalog_quietly(r, registry, opts)
    })
}

fn load_catalog_quietly(
    r: &str,
    registry: Registry,
    opts: &load::LoadOptions,
) -> anyhow::Result<Catalog> {
    if r == "-" {
        let mut buf = Vec::new();
        io::stdin().read_to_end(&mut buf).context("read stdin")?;
        load::load_bytes(&buf, "<stdin>").map_err(anyhow::Error::from)
    } else if Path::new(r).exists() {
        load_path(Path::new(r), "", opts)
    } else if ImageRef::looks_like_registry_reference(r) {
        load_image(r, registry, opts)
    } else {
        Err(anyhow!("no such file or directory"))
    }
}

/// The catalog directory or file that reference `r` names on this machine, when it is one that
/// can be read a package at a time ([`olm_catalog::stream`]): not stdin, an image, a bundle
/// directory or a catalogd JSONL file.
pub fn local_catalog(r: &str) -> Option<&Path> {
    let p = Path::new(r);
    (r != "-" && p.exists() && matches!(on_disk(p), OnDisk::Catalog)).then_some(p)
}

/// What a path on disk holds, as references read it.
enum OnDisk {
    /// A directory holding `manifests/` and `metadata/`.
    Bundle,
    /// A `.jsonl` file: catalogd's canonical catalog.
    Jsonl,
    /// Catalog content: a directory or a JSON or YAML file.
    Catalog,
}

fn on_disk(p: &Path) -> OnDisk {
    if olm_bundle::Bundle::is_bundle_dir(p) {
        OnDisk::Bundle
    } else if p.is_file() && p.extension().is_some_and(|e| e == "jsonl") {
        OnDisk::Jsonl
    } else {
        OnDisk::Catalog
    }
}

/// Reads a path as what it holds ([`on_disk`]).
fn load_path(p: &Path, image: &str, opts: &load::LoadOptions) -> anyhow::Result<Catalog> {
    match on_disk(p) {
        OnDisk::Bundle => bundle_catalog(p, image),
        OnDisk::Jsonl => {
            let f = std::fs::File::open(p)?;
            Ok(load::load_jsonl_with(
                io::BufReader::new(f),
                &p.display().to_string(),
                opts,
            )?)
        }
        OnDisk::Catalog => Ok(load::load_path_with(p, opts)?),
    }
}

/// The `olm.bundle` blob of a bundle directory, as `opm render` writes it (one
/// `olm.bundle.object` property per manifest).
fn bundle_catalog(dir: &Path, image: &str) -> anyhow::Result<Catalog> {
    let bundle = olm_bundle::Bundle::from_dir(dir)?;
    let blob = to_olm_bundle(&bundle, image, ObjectsMode::BundleObjects)?;
    let text = serde_json::to_vec(&blob)?;
    Ok(load::load_bytes(&text, &dir.display().to_string())?)
}

/// Pulls an image and reads it as a catalog (by its configs label) or as a bundle.
fn load_image(r: &str, registry: Registry, opts: &load::LoadOptions) -> anyhow::Result<Catalog> {
    let reference: ImageRef = r.parse()?;
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let dest = tmp.path().join("image");
    let runtime = crate::runtime()?;
    // A catalog or a bundle, by the image's configs label; each held to its own limits.
    let pulled = runtime.block_on(registry.client()?.pull_to_dir(
        &reference,
        &dest,
        &Filter::All,
        Expect::Either,
    ))?;
    match catalog_dir(&pulled)? {
        Some(dir) => Ok(load::load_path_with(&dir, opts)?),
        None => load_path(&dest, r, opts),
    }
}

/// The directory of a pulled catalog image's FBC, or `None` for an image without the configs
/// label (a bundle). The label comes from whoever built the image: a value that leaves the
/// unpacked tree (`../../x`) is refused, never joined.
fn catalog_dir(pulled: &olm_image::Pulled) -> anyhow::Result<Option<std::path::PathBuf>> {
    let Some(label) = pulled.labels.get(CATALOG_CONFIGS_LABEL) else {
        return Ok(None);
    };
    match pulled.catalog_dir() {
        Some(dir) => Ok(Some(dir)),
        None => Err(anyhow!(
            "catalog image label {CATALOG_CONFIGS_LABEL}={} is not a directory inside the image",
            quote(label)
        )),
    }
}

/// Renders template bundle images: first from the given catalogs (offline), else by pulling the
/// image from its registry.
pub struct TemplateBundles {
    pub catalogs: Vec<Catalog>,
    pub registry: Registry,
}

impl BundleRenderer for TemplateBundles {
    fn render_bundle(&self, image: &str) -> Result<Vec<olm_catalog::Bundle>, BundleRenderError> {
        for c in &self.catalogs {
            let found: Vec<_> = c.bundles().filter(|b| b.image == image).cloned().collect();
            if !found.is_empty() {
                return Ok(found);
            }
        }
        let cat = load_image(image, self.registry, &load::LoadOptions::default())
            .map_err(|e| BundleRenderError::Failed(format!("{e:#}")))?;
        Ok(cat.bundles().cloned().collect())
    }
}

/// A flag's value as text: `@PATH` is the file's content (`@-` is stdin), anything else the
/// value itself — the one rule of every flag that takes a document inline or from a file
/// (`--config` of `olm install`, `olm upgrade` and `olm bundle render`). Returns the text and
/// where it came from, for messages.
pub(crate) fn inline_or_file(value: &str) -> anyhow::Result<(String, String)> {
    match value.strip_prefix('@') {
        Some("-") => {
            let mut text = String::new();
            io::stdin()
                .read_to_string(&mut text)
                .context("reading stdin")?;
            Ok((text, "stdin".into()))
        }
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
            Ok((text, path.to_owned()))
        }
        None => Ok((value.to_owned(), "the inline value".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pulled(label: Option<&str>) -> olm_image::Pulled {
        let digest: olm_image::Digest = format!("sha256:{}", "a".repeat(64))
            .parse()
            .expect("digest");
        olm_image::Pulled {
            digest: digest.clone(),
            manifest_digest: digest,
            labels: label
                .map(|l| (CATALOG_CONFIGS_LABEL.to_string(), l.to_string()))
                .into_iter()
                .collect(),
            path: "/tmp/unpacked/image".into(),
            stats: Default::default(),
            cached: false,
        }
    }

    #[test]
    fn a_catalog_image_is_read_under_its_configs_label() {
        assert_eq!(
            catalog_dir(&pulled(Some("/configs"))).expect("clean"),
            Some("/tmp/unpacked/image/configs".into())
        );
        assert_eq!(catalog_dir(&pulled(None)).expect("bundle"), None);
    }

    #[test]
    fn a_configs_label_leaving_the_image_is_refused() {
        for hostile in ["../../x", "/configs/../../etc"] {
            let err = catalog_dir(&pulled(Some(hostile))).expect_err(hostile);
            assert_eq!(
                err.to_string(),
                format!(
                    "catalog image label operators.operatorframework.io.index.configs.v1={} is not a directory inside the image",
                    quote(hostile)
                )
            );
        }
    }
}
