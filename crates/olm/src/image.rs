//! `olm image …` subcommands: build and push catalog, bundle and program images (olm's own and
//! any other program's), pull and unpack images.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context as _;
use olm_image::{AuthConfig, Client, ClientOptions, Expect, Filter, ImageRef, Protocol};

/// Registry flags shared by every subcommand.
#[derive(clap::Args, Debug)]
pub struct RegistryArgs {
    /// Speak plain HTTP (no TLS) to the registry. Registries on localhost and 127.0.0.0/8
    /// always get plain HTTP.
    #[arg(long)]
    plain_http: bool,
}

#[derive(clap::Subcommand)]
pub enum Command {
    /// Build a catalog image from a file-based catalog directory and push it.
    ///
    /// The directory's files end up under /configs/ in a layer of their own, and the image
    /// config carries the label operators.operatorframework.io.index.configs.v1=/configs, which
    /// is all OLM v1 reads. Like opm-based catalog images, the image also serves OLM v0's
    /// registry API when run (a CatalogSource's registry Pod): a first layer holds this olm
    /// binary as push-olm's image does, a last one the registry cache built from the catalog
    /// (so a catalog the server could not serve is refused), and `olm catalog serve /configs
    /// --cache-dir=/tmp/cache` is its command. --content-only leaves the server out. The same
    /// directory (and the same olm) always gives the same digest. A directory the catalog server could not load
    /// (symlink loops, links to directories, pipes, documents that do not parse) is refused.
    /// Prints the pushed digest.
    #[command(after_help = "Examples:
  olm image push-catalog ./catalog 127.0.0.1:5000/catalogs/mine:v1                 also serves OLM v0's registry API
  olm image push-catalog ./catalog 127.0.0.1:5000/catalogs/mine:v1 --content-only  only what OLM v1 reads
  olm image push-catalog ./catalog quay.io/example/catalog:v1")]
    PushCatalog {
        /// The FBC directory.
        dir: PathBuf,
        /// Where to push, e.g. 127.0.0.1:5000/catalogs/mine:v1.
        reference: String,
        /// Only the catalog: an image OLM v1 reads but that cannot run as a v0 registry.
        #[arg(long)]
        content_only: bool,
        /// The PEM CA bundle to put at /etc/ssl/certs/ca-certificates.crt of a serving image.
        #[arg(long, default_value = olm_image::runtime::CA_BUNDLE_PATH)]
        ca_bundle: PathBuf,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Build a registry+v1 bundle image from a bundle directory and push it.
    ///
    /// manifests/ and metadata/ (and tests/ when present) go to the image root; the labels are
    /// the annotations in metadata/annotations.yaml. A bundle OLM could not install (no CSV, two
    /// CSVs, a manifest that does not parse) is refused. Prints the pushed digest.
    #[command(after_help = "Examples:
  olm image push-bundle ./bundle 127.0.0.1:5000/bundles/etcd:v0.9.4
  olm image push-bundle ./bundle registry.example.com:5000/etcd-bundle:v0.9.4 --plain-http")]
    PushBundle {
        /// The bundle directory (holding manifests/ and metadata/).
        dir: PathBuf,
        /// Where to push.
        reference: String,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Build the image olm runs from in a cluster, from this very binary, and push it.
    ///
    /// One layer: the binary at /usr/local/bin/olm, the shared libraries it is linked against
    /// (as ldd finds them), the CA bundle, /etc/passwd and /etc/group naming the non-root user
    /// 65532 it runs as, /tmp and /var/cache/olm; no shell. `olm run` is the default command.
    /// The same binary always gives the same digest. Prints REFERENCE@DIGEST.
    #[command(after_help = "Examples:
  olm image push-olm registry.example.com/olm/olm:v0.1.0  prints REF@DIGEST, for olm install-olm --image
  olm image push-olm 127.0.0.1:5000/olm/olm:dev")]
    PushOlm {
        /// Where to push, e.g. 127.0.0.1:5000/olm:v0.1.0.
        reference: String,
        /// The PEM CA bundle to put at /etc/ssl/certs/ca-certificates.crt.
        #[arg(long, default_value = olm_image::runtime::CA_BUNDLE_PATH)]
        ca_bundle: PathBuf,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Build the image a program runs from, from its binary, and push it.
    ///
    /// The same file system as push-olm's, for any program: one layer with the binary (at
    /// /usr/local/bin/NAME unless --path says otherwise), the shared libraries it is linked
    /// against (as ldd finds them), the CA bundle, /etc/passwd and /etc/group naming the
    /// non-root user 65532 (called NAME) it runs as, and /tmp; no shell. The binary is the
    /// entrypoint, the --arg values its default arguments. The same inputs always give the same
    /// digest. Prints REFERENCE@DIGEST.
    #[command(after_help = "Examples:
  olm image push-program target/release/my-operator registry.example.com/team/my-operator:v1
  olm image push-program target/release/my-operator registry.example.com/team/my-operator:v1 --arg --leader-elect --label org.opencontainers.image.version=1.0.0")]
    PushProgram {
        /// The program's binary, e.g. target/release/example-operator.
        binary: PathBuf,
        /// Where to push, e.g. 127.0.0.1:5000/olm-examples/example-operator:v0.2.0.
        reference: String,
        /// The program's name: the user it runs as and the image's title label (default: the
        /// binary's file name).
        #[arg(long)]
        name: Option<String>,
        /// Where the binary goes in the image (default: /usr/local/bin/NAME).
        #[arg(long)]
        path: Option<String>,
        /// A default argument, after the entrypoint (repeat for several; a pod's args replace
        /// them all).
        #[arg(long = "arg", value_name = "ARG", allow_hyphen_values = true)]
        args: Vec<String>,
        /// A label of the image, KEY=VALUE (repeat for several; the title label defaults to
        /// NAME).
        #[arg(long = "label", value_name = "KEY=VALUE", value_parser = parse_label)]
        labels: Vec<(String, String)>,
        /// The PEM CA bundle to put at /etc/ssl/certs/ca-certificates.crt.
        #[arg(long, default_value = olm_image::runtime::CA_BUNDLE_PATH)]
        ca_bundle: PathBuf,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Pull an image by tag or digest and unpack its file system into a new directory.
    ///
    /// DIR must not exist or be empty. Layers are unpacked safely (no paths outside DIR, no
    /// device files, whiteouts applied). Prints the resolved digest.
    #[command(after_help = "Examples:
  olm image pull quay.io/operatorhubio/catalog:latest ./catalog-image  prints the digest
  olm image pull 127.0.0.1:5000/bundles/etcd:v0.9.4 ./etcd-bundle")]
    Pull {
        /// The image, e.g. quay.io/org/catalog:latest or …@sha256:….
        reference: String,
        /// The directory to create.
        dir: PathBuf,
        #[command(flatten)]
        registry: RegistryArgs,
    },
    /// Print the digest a tag points to.
    #[command(after_help = "Examples:
  olm image resolve quay.io/operatorhubio/catalog:latest
  olm image resolve registry.example.com:5000/catalogs/mine:v1 --plain-http")]
    Resolve {
        /// The image reference.
        reference: String,
        #[command(flatten)]
        registry: RegistryArgs,
    },
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    let runtime = crate::runtime()?;
    runtime.block_on(run_async(cmd))
}

pub(crate) fn client(args: &RegistryArgs) -> anyhow::Result<Client> {
    let auth = AuthConfig::load_default()?;
    let protocol = if args.plain_http {
        Protocol::PlainHttp
    } else {
        Protocol::Auto
    };
    Ok(Client::new(ClientOptions {
        protocol,
        auth,
        limits: crate::limits::from_env()?,
        ..ClientOptions::default()
    }))
}

fn parse_ref(reference: &str) -> anyhow::Result<ImageRef> {
    Ok(reference.parse::<ImageRef>()?)
}

/// Loads the catalog as the catalog server loads a pulled one (the same loader, the same
/// refusals: symlink loops, links to directories, pipes, sockets and devices, documents that do
/// not parse), so that nothing is pushed that no ClusterCatalog could serve; returns it, loaded
/// with `opts`. The model checks of `olm catalog validate` are not run: the server does not run
/// them either.
fn refuse_what_the_server_refuses(
    dir: &std::path::Path,
    opts: &olm_catalog::load::LoadOptions,
) -> anyhow::Result<olm_catalog::model::Catalog> {
    crate::progress::spin(&format!("loading {}", dir.display()), || {
        olm_catalog::load::load_path_with(dir, opts)
    })
    .with_context(|| {
        format!(
            "not pushing {}: the catalog server would refuse to load it",
            olm_goenc::quote(&dir.display().to_string())
        )
    })
}

/// Reads the bundle as the installer reads a pulled bundle image (the same reader), so that a
/// bundle OLM could never install — no CSV, two CSVs, a manifest that does not parse or has no
/// kind, a subdirectory under manifests/ — is refused before it is pushed. opm and operator-sdk
/// hold such a bundle invalid too (`no csv in bundle`, `no ClusterServiceVersion in bundle`).
fn refuse_what_the_installer_refuses(dir: &std::path::Path) -> anyhow::Result<()> {
    if !dir.join("manifests").is_dir() {
        // bundle_image names what is missing.
        return Ok(());
    }
    olm_bundle::Bundle::from_dir(dir)
        .map(drop)
        .with_context(|| {
            format!(
                "not pushing {}: it is no registry+v1 bundle OLM can install",
                olm_goenc::quote(&dir.display().to_string())
            )
        })
}

/// `KEY=VALUE`, with a key that is not empty.
fn parse_label(label: &str) -> Result<(String, String), String> {
    match label.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("{label:?} is not KEY=VALUE")),
    }
}

/// What a program's image holds, read from this machine: the binary, the libraries `ldd` says
/// it loads, and the CA bundle.
fn program_files(
    binary: &Path,
    ca_bundle: &Path,
) -> anyhow::Result<olm_image::runtime::RuntimeFiles> {
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    let ldd = std::process::Command::new("ldd")
        .arg(binary)
        .output()
        .context("running ldd to list the binary's shared libraries")?;
    // ldd exits 1 for a static binary, saying so on stdout or stderr.
    let listed = format!(
        "{}{}",
        String::from_utf8_lossy(&ldd.stdout),
        String::from_utf8_lossy(&ldd.stderr)
    );
    let libraries = olm_image::runtime::parse_ldd(&listed)
        .map_err(|e| anyhow::anyhow!("{}: {e}", binary.display()))?
        .into_iter()
        .map(|p| Ok((p.clone(), read(&p)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(olm_image::runtime::RuntimeFiles {
        binary: read(binary)?,
        libraries,
        ca_bundle: read(ca_bundle)?,
    })
}

/// [`program_files`] of this very `olm`.
fn olm_files(ca_bundle: &Path) -> anyhow::Result<olm_image::runtime::RuntimeFiles> {
    let exe = std::env::current_exe().context("finding the olm binary")?;
    program_files(&exe, ca_bundle)
}

/// The program [`Command::PushProgram`] asks for: named after the binary unless named, at
/// `/usr/local/bin/NAME` unless placed, titled by its name unless labelled otherwise.
fn program(
    binary: &Path,
    name: Option<String>,
    path: Option<String>,
    args: Vec<String>,
    labels: Vec<(String, String)>,
) -> anyhow::Result<olm_image::runtime::Program> {
    let name = match name {
        Some(name) => name,
        None => binary
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_owned)
            .with_context(|| {
                format!("{}: no file name to name the program by", binary.display())
            })?,
    };
    let mut program = olm_image::runtime::Program::named(&name);
    if let Some(path) = path {
        program.path = path;
    }
    program.args = args;
    program.labels.extend(labels);
    Ok(program)
}

async fn run_async(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::PushCatalog {
            dir,
            reference,
            content_only,
            ca_bundle,
            registry,
        } => {
            let reference = parse_ref(&reference)?;
            let image = match content_only {
                true => {
                    // Only loaded to be refused: nothing of the content needs keeping.
                    let lean = olm_catalog::load::LoadOptions {
                        keep_raw: false,
                        validate_only: false,
                    };
                    refuse_what_the_server_refuses(&dir, &lean)?;
                    olm_image::catalog_image(&dir)?
                }
                false => {
                    // Loaded as `olm catalog serve` loads it, to build the same cache.
                    let catalog = refuse_what_the_server_refuses(
                        &dir,
                        &olm_catalog::load::LoadOptions::default(),
                    )?;
                    let cache =
                        crate::catalog_serve::cache_file(&dir, &catalog).with_context(|| {
                            format!(
                                "not pushing {}: the catalog server could not serve it",
                                olm_goenc::quote(&dir.display().to_string())
                            )
                        })?;
                    // Freed before the binary is read and packed.
                    drop(catalog);
                    let files = olm_files(&ca_bundle)?;
                    crate::progress::spin("assembling the catalog image", || {
                        olm_image::runtime::serving_catalog_image(
                            &dir,
                            files,
                            env!("CARGO_PKG_VERSION"),
                            cache,
                        )
                    })?
                }
            };
            let digest = client(&registry)?.push(&image, &reference).await?;
            println!("{digest}");
        }
        Command::PushBundle {
            dir,
            reference,
            registry,
        } => {
            let reference = parse_ref(&reference)?;
            refuse_what_the_installer_refuses(&dir)?;
            let image = olm_image::bundle_image(&dir)?;
            let digest = client(&registry)?.push(&image, &reference).await?;
            println!("{digest}");
        }
        Command::PushOlm {
            reference,
            ca_bundle,
            registry,
        } => {
            let parsed = parse_ref(&reference)?;
            let files = olm_files(&ca_bundle)?;
            let image = crate::progress::spin("assembling the olm image", || {
                olm_image::runtime::olm_image(files, env!("CARGO_PKG_VERSION"))
            })?;
            let digest = client(&registry)?.push(&image, &parsed).await?;
            // The name as given, tag included, pinned by the digest: what a Deployment uses.
            println!("{reference}@{digest}");
        }
        Command::PushProgram {
            binary,
            reference,
            name,
            path,
            args,
            labels,
            ca_bundle,
            registry,
        } => {
            let parsed = parse_ref(&reference)?;
            let program = program(&binary, name, path, args, labels)?;
            let files = program_files(&binary, &ca_bundle)?;
            let image =
                crate::progress::spin(&format!("assembling the {} image", program.name), || {
                    olm_image::runtime::program_image(&program, files)
                })?;
            let digest = client(&registry)?.push(&image, &parsed).await?;
            println!("{reference}@{digest}");
        }
        Command::Pull {
            reference,
            dir,
            registry,
        } => {
            let reference = parse_ref(&reference)?;
            let start = Instant::now();
            let pulled = client(&registry)?
                .pull_to_dir(&reference, &dir, &Filter::All, Expect::Any)
                .await?;
            eprintln!(
                "unpacked {} files ({} bytes) into {} in {:.2?}",
                pulled.stats.files,
                pulled.stats.bytes,
                pulled.path.display(),
                start.elapsed()
            );
            println!("{}", pulled.digest);
        }
        Command::Resolve {
            reference,
            registry,
        } => {
            let reference = parse_ref(&reference)?;
            let digest = client(&registry)?.resolve(&reference).await?;
            println!("{digest}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
