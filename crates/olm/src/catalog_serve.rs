//! `olm catalog serve DIR`: OLM v0's registry gRPC API over a file-based catalog, as `opm
//! serve` offers it to CatalogSources (see docs/registry.md).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use olm_catalog::model::Catalog;
use olm_registry::{Registry, cache};

/// `olm catalog serve`'s arguments (opm serve's flags).
#[derive(clap::Args)]
#[command(after_help = "Examples:
  olm catalog serve ./catalog                                      as opm serve, on port 50051
  olm catalog serve ./catalog --cache-dir /tmp/cache --cache-only  build the cache and exit
  olm catalog serve ./catalog --cache-dir /tmp/cache -p 50052      serve from the cache at once")]
pub struct Args {
    /// The file-based catalog: a directory or a file.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// The port to serve on (all interfaces).
    #[arg(short = 'p', long = "port", default_value_t = 50051)]
    pub port: u16,
    /// Where the built registry is cached; without it the catalog is built at every start.
    #[arg(long = "cache-dir")]
    pub cache_dir: Option<PathBuf>,
    /// Build the cache and exit, without serving.
    #[arg(long = "cache-only", requires = "cache_dir")]
    pub cache_only: bool,
    /// Refuse a cache built from another catalog instead of rebuilding it (default: on when
    /// --cache-dir is given and --cache-only is not).
    #[arg(long = "cache-enforce-integrity", num_args = 0..=1, default_missing_value = "true")]
    pub cache_enforce_integrity: Option<bool>,
    /// Where a fatal error is also written, for Kubernetes to show as the container's
    /// termination message.
    #[arg(
        short = 't',
        long = "termination-log",
        default_value = "/dev/termination-log"
    )]
    pub termination_log: PathBuf,
}

/// Builds or loads the registry, then serves it until SIGTERM or SIGINT.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match serve(&args) {
        Ok(code) => Ok(code),
        Err(e) => {
            // Best effort: outside a pod the termination log usually cannot be written.
            let _ = std::fs::write(&args.termination_log, format!("{e:#}"));
            Err(e)
        }
    }
}

fn serve(args: &Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let registry = obtain(args)?;
    eprintln!(
        "olm catalog serve: {} packages, {} bundles ready in {} ms",
        registry.packages.len(),
        registry.listing.len(),
        started.elapsed().as_millis()
    );
    if args.cache_only {
        return Ok(ExitCode::SUCCESS);
    }
    let runtime = tokio::runtime::Runtime::new().context("starting the runtime")?;
    runtime.block_on(listen(args.port, Arc::new(registry)))?;
    Ok(ExitCode::SUCCESS)
}

/// The registry from the cache when it was built from this catalog, else built (and cached).
fn obtain(args: &Args) -> anyhow::Result<Registry> {
    let digest = cache::digest(&args.dir)?;
    let enforce = args
        .cache_enforce_integrity
        .unwrap_or(args.cache_dir.is_some() && !args.cache_only);
    if let Some(dir) = &args.cache_dir
        && !args.cache_only
    {
        match cache::load(dir)? {
            Some(r) if r.digest == digest => return Ok(r),
            found if enforce => {
                return Err(cache::CacheError::Stale {
                    cached: found.map(|r| r.digest).unwrap_or_default(),
                    computed: digest,
                }
                .into());
            }
            _ => {}
        }
    }
    let registry = build(&args.dir, digest)?;
    if let Some(dir) = &args.cache_dir {
        cache::store(dir, &registry)?;
    }
    Ok(registry)
}

/// The registry cache file `olm catalog serve --cache-dir` would write for the catalog `dir`,
/// already loaded as `catalog` (with the server's options, the default
/// [`olm_catalog::load::LoadOptions`]): its name and bytes.
/// Building it fails where serving `dir` would.
pub fn cache_file(dir: &Path, catalog: &Catalog) -> anyhow::Result<(&'static str, Vec<u8>)> {
    let registry = registry_of(catalog, cache::digest(dir)?)?;
    Ok((cache::FILE, cache::bytes(&registry)))
}

fn build(dir: &Path, digest: String) -> anyhow::Result<Registry> {
    let catalog =
        olm_catalog::load::load_path(dir).with_context(|| format!("loading {}", dir.display()))?;
    registry_of(&catalog, digest)
}

fn registry_of(catalog: &Catalog, digest: String) -> anyhow::Result<Registry> {
    Registry::build(catalog, digest)
        .context("failed to load or rebuild cache: failed to rebuild cache: build package index")
}

async fn listen(port: u16, registry: Arc<Registry>) -> anyhow::Result<()> {
    // Signals are caught from before the port answers.
    let stop = shutdown();
    let addr = SocketAddr::from(([0, 0, 0, 0], port));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr}"))?;
    eprintln!(
        "olm catalog serve: serving registry on {}",
        listener.local_addr()?
    );
    olm_registry::server::serve(registry, listener, stop).await?;
    Ok(())
}

/// Resolves on SIGTERM or Ctrl-C. The SIGTERM handler is installed when this is called, not
/// when the future is first polled, so a signal that arrives as soon as the port answers (as
/// Kubernetes may send it) is not lost to the default action.
pub(crate) fn shutdown() -> impl std::future::Future<Output = ()> {
    let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate());
    async move {
        let Ok(mut term) = term else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
}
