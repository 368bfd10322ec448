//! `olm catalog serve-ui DIR|IMAGE…`: the catalog browser for catalogs on disk or in images,
//! without a cluster — the pages `olm catalogd` serves at `/browse/`, on a local port.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use olm_browser::{CatalogMeta, CatalogView};

/// `olm catalog serve-ui`'s arguments.
#[derive(clap::Args)]
pub struct Args {
    /// Catalogs: a directory, file or image each, optionally named `NAME=REF` (default: the
    /// directory's or repository's last path element).
    #[arg(value_name = "DIR|IMAGE", required = true)]
    pub refs: Vec<String>,
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
}

/// Loads and indexes every catalog, then serves the browser until SIGTERM or SIGINT.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut views: Vec<Arc<CatalogView>> = Vec::new();
    for r in &args.refs {
        let (name, reference) = match r.split_once('=') {
            Some((n, rest)) if !n.contains('/') && !n.is_empty() => (n.to_owned(), rest),
            _ => (default_name(r), r.as_str()),
        };
        let opts = olm_catalog::load::LoadOptions {
            keep_raw: false,
            validate_only: false,
        };
        let catalog =
            crate::sources::load_catalog(reference, crate::sources::Registry::default(), &opts)
                .with_context(|| format!("loading {reference}"))?;
        let meta = CatalogMeta {
            name,
            priority: None,
            image: reference.to_owned(),
            digest: String::new(),
            last_unpacked: String::new(),
            state: "Local".into(),
            ..CatalogMeta::default()
        };
        views.push(Arc::new(CatalogView::new(meta, catalog)));
    }
    views.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
    if let Some(w) = views.windows(2).find(|w| w[0].meta.name == w[1].meta.name) {
        anyhow::bail!(
            "two catalogs are named {}: name them with NAME=REF",
            olm_goenc::quote(&w[0].meta.name)
        );
    }
    let packages: usize = views.iter().map(|v| v.packages.len()).sum();
    let runtime = crate::runtime()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("listening on {}", args.listen))?;
        eprintln!(
            "olm catalog serve-ui: {packages} packages of {} catalog{} indexed in {} ms; browse http://{}/browse/",
            views.len(),
            if views.len() == 1 { "" } else { "s" },
            started.elapsed().as_millis(),
            listener.local_addr()?
        );
        let router = olm_catalogd::browser::router(Arc::new(olm_catalogd::browser::Fixed(views)))
            .fallback(|| async {
                (
                    axum::http::StatusCode::TEMPORARY_REDIRECT,
                    [(axum::http::header::LOCATION, "/browse/")],
                )
            });
        axum::serve(listener, router)
            .with_graceful_shutdown(crate::catalog_serve::shutdown())
            .await
            .context("serving the catalog browser")
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A catalog's name from its reference: the last path element, without a tag or digest.
fn default_name(reference: &str) -> String {
    let trimmed = reference.trim_end_matches('/');
    let last = trimmed.rsplit('/').next().unwrap_or(trimmed);
    let last = last.split('@').next().unwrap_or(last);
    let last = last.split(':').next().unwrap_or(last);
    if last.is_empty() {
        "catalog".to_owned()
    } else {
        last.to_owned()
    }
}
