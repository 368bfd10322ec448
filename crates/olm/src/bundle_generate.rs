//! `olm bundle generate`: a registry+v1 bundle from an operator's manifests (see
//! `olm_bundle::generate`), written as `operator-sdk generate bundle` writes it —
//! `<out>/manifests/`, `<out>/metadata/annotations.yaml` and `bundle.Dockerfile` — and checked
//! with the CSV validator afterwards.
//!
//! The base CSV is, in order: `--base`, `config/manifests/bases/<package>.clusterserviceversion.yaml`,
//! the CSV a previous run wrote to `<out>/manifests/` (so hand edits there survive), a CSV among
//! the manifests. Regenerating from the same manifests gives the same bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};
use olm_bundle::apivalidate::{self, Level};
use olm_bundle::generate::{Options, annotations_yaml, dockerfile, generate};
use serde_json::Value;

use crate::output::write_atomically;

/// Generate a bundle from manifests.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm bundle generate --from-kustomize config/manifests --package demo --version 0.1.0        as operator-sdk generate bundle
  olm bundle generate --input-dir deploy/ --package demo --channels stable,fast --default-channel stable
  olm bundle generate --input-dir deploy/ --package demo --version 0.1.0 --use-image-digests  images pinned by digest
  kubectl kustomize config/manifests | olm bundle generate --package demo --version 0.1.0")]
pub struct Args {
    /// A directory of cluster-ready manifests (read recursively).
    #[arg(long, conflicts_with = "from_kustomize")]
    input_dir: Option<PathBuf>,
    /// A kustomize directory (`config/manifests`), built with `kubectl kustomize`.
    #[arg(long)]
    from_kustomize: Option<PathBuf>,
    /// The package name.
    #[arg(long)]
    package: String,
    /// The bundle version (names the CSV `<package>.v<version>`).
    #[arg(short = 'v', long)]
    version: Option<String>,
    /// Channels, comma-separated.
    #[arg(long, default_value = "alpha")]
    channels: String,
    /// The default channel.
    #[arg(long)]
    default_channel: Option<String>,
    /// The base CSV.
    #[arg(long)]
    base: Option<PathBuf>,
    /// Service accounts, besides the deployments', whose RBAC goes into the CSV.
    #[arg(long, value_delimiter = ',')]
    extra_service_accounts: Vec<String>,
    /// Where the bundle goes.
    #[arg(long, default_value = "bundle")]
    output_dir: PathBuf,
    /// Where `bundle.Dockerfile` goes.
    #[arg(long, default_value = "bundle.Dockerfile")]
    dockerfile: PathBuf,
    /// Pin the CSV's images (containers, `RELATED_IMAGE_*` variables, `relatedImages`, the
    /// `containerImage` annotation) to the digests their registries give for their tags, and
    /// list every container image in `relatedImages`, as a disconnected cluster needs.
    #[arg(long)]
    use_image_digests: bool,
    #[command(flatten)]
    registry: crate::image::RegistryArgs,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(v) = &args.version
        && olm_version::blang::Version::parse(v)
            .map(|p| p.to_string())
            .as_deref()
            != Ok(v.as_str())
    {
        bail!("{v} is not a valid semantic version");
    }
    let text = match (&args.input_dir, &args.from_kustomize) {
        (Some(dir), _) => read_dir(dir)?,
        (None, Some(dir)) => kustomize(dir)?,
        (None, None) => {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                .context("reading stdin")?;
            s
        }
    };
    let input = olm_goenc::yamlread::parse_documents(&text)
        .map_err(|e| anyhow!("reading the manifests: {e}"))?;
    let csv_file = args.output_dir.join("manifests").join(format!(
        "{}.clusterserviceversion.yaml",
        args.package.to_lowercase()
    ));
    let kustomize_base = PathBuf::from(format!(
        "config/manifests/bases/{}.clusterserviceversion.yaml",
        args.package
    ));
    let base_path = args
        .base
        .clone()
        .or_else(|| kustomize_base.is_file().then_some(kustomize_base))
        .or_else(|| csv_file.is_file().then(|| csv_file.clone()));
    let base = match &base_path {
        Some(p) => Some(read_csv(p)?),
        None => None,
    };
    let options = Options {
        package: args.package.clone(),
        version: args.version.clone(),
        channels: args.channels.clone(),
        default_channel: args.default_channel.clone(),
        extra_service_accounts: args.extra_service_accounts.clone(),
        builder: format!("olm-v{}", env!("CARGO_PKG_VERSION")),
        created_at: jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string(),
    };
    let mut generated = generate(&input, base, &options).map_err(|e| anyhow!(e))?;
    if args.use_image_digests {
        eprintln!("pinning image versions to digests instead of tags");
        let client = crate::image::client(&args.registry)?;
        let pinned = crate::runtime()?.block_on(digests(
            &client,
            olm_bundle::generate::unpinned_images(&generated.csv),
        ))?;
        olm_bundle::generate::pin_images(&mut generated.csv, &pinned);
    }
    let csv_name = format!("{}.clusterserviceversion.yaml", args.package.to_lowercase());
    // Every file, relative to the output directory, made before anything is written.
    let mut files: Vec<(String, String)> = vec![(
        format!("manifests/{csv_name}"),
        olm_goenc::yaml::to_yaml(&generated.csv),
    )];
    for (name, object) in &generated.objects {
        files.push((
            format!("manifests/{name}"),
            olm_goenc::yaml::to_yaml(object),
        ));
    }
    files.push((
        "metadata/annotations.yaml".to_owned(),
        annotations_yaml(&generated.annotations),
    ));
    if let Some(config) = &generated.scorecard {
        files.push((
            format!("{}/config.yaml", olm_bundle::generate::SCORECARD_DIR),
            olm_goenc::yaml::to_yaml(config),
        ));
    }
    for field in olm_bundle::generate::missing_fields(&generated.csv) {
        eprintln!("warning: {field} is empty: set it in the base CSV");
    }
    // The author's view of what is missing, as operator-sdk reports it; an invalid CSV is not
    // written.
    let bundle = olm_bundle::Bundle::from_files(
        files
            .iter()
            .map(|(path, text)| olm_bundle::BundleFile {
                path: path.clone(),
                contents: text.as_bytes().to_vec(),
            })
            .collect(),
    )
    .map_err(|e| anyhow!("reading the generated bundle: {e}"))?;
    let mut failed = false;
    for f in apivalidate::validate_csv(&bundle) {
        failed |= f.level == Level::Error;
        let field = if f.field.is_empty() {
            String::new()
        } else {
            format!("Field {}: ", f.field)
        };
        eprintln!(
            "ClusterServiceVersion validation: [{}] {field}{}",
            f.kind, f.detail
        );
    }
    if failed {
        eprintln!(
            "invalid generated ClusterServiceVersion: {} not written",
            args.output_dir.display()
        );
        return Ok(ExitCode::FAILURE);
    }
    for (path, text) in &files {
        let path = args.output_dir.join(path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        write_atomically(&path, text)?;
    }
    let dir = args.output_dir.display().to_string();
    write_atomically(
        &args.dockerfile,
        &dockerfile(&generated.annotations, dir.trim_end_matches('/')),
    )?;
    eprintln!("Bundle generated in {}", args.output_dir.display());
    Ok(ExitCode::SUCCESS)
}

/// The digest reference of each image, looked up four at a time; the first image that cannot be
/// resolved fails the run before anything is written.
async fn digests(
    client: &olm_image::Client,
    images: BTreeSet<String>,
) -> anyhow::Result<BTreeMap<String, String>> {
    use futures::StreamExt as _;
    let lookups = images.into_iter().map(|image| async move {
        let reference: olm_image::ImageRef = image
            .parse()
            .with_context(|| format!("pinning {image}: not an image reference"))?;
        let digest = client
            .resolve(&reference)
            .await
            .with_context(|| format!("pinning {image}"))?;
        anyhow::Ok((image, reference.with_digest(&digest).to_string()))
    });
    futures::stream::iter(lookups)
        .buffered(4)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect()
}

fn read_csv(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let docs = olm_goenc::yamlread::parse_documents(&text)
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    docs.into_iter()
        .find(|d| d["kind"] == "ClusterServiceVersion")
        .ok_or_else(|| anyhow!("{}: no ClusterServiceVersion", path.display()))
}

/// Every file under `dir`, in path order, as one YAML stream.
fn read_dir(dir: &Path) -> anyhow::Result<String> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| format!("reading {}", d.display()))? {
            let p = e?.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut out = String::new();
    for f in files {
        out.push_str("---\n");
        out.push_str(
            &std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?,
        );
        out.push('\n');
    }
    Ok(out)
}

/// `kubectl kustomize DIR`.
fn kustomize(dir: &Path) -> anyhow::Result<String> {
    let out = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .context("running kubectl kustomize (is kubectl installed?)")?;
    if !out.status.success() {
        bail!(
            "kubectl kustomize {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout).context("kubectl kustomize printed something that is not UTF-8")
}
