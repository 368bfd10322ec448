//! `olm catalog serve-ui DIR|IMAGE…`: the catalog browser for catalogs on disk or in images,
//! without a cluster — the pages `olm catalogd` serves at `/browse/`, on a local port.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use olm_browser::{CatalogMeta, CatalogView};

/// `olm catalog serve-ui`'s arguments.
#[derive(clap::Args)]
#[command(after_help = "Examples:
  olm catalog serve-ui ./catalog                                       browse http://127.0.0.1:8080/browse/
  olm catalog serve-ui ./catalog quay.io/operatorhubio/catalog:latest  several, from disk or images
  olm catalog serve-ui prod=./prod,priority=10 test=./test,label=team=a --listen :9000")]
pub struct Args {
    /// Catalogs: a directory, file or image each, optionally named and placed as a
    /// ClusterCatalog would be: `[NAME=]REF[,priority=N][,label=K=V]…[,unavailable]` (the name
    /// defaults to the directory's or repository's last path element). Priority and labels
    /// count in "What would I get?" across catalogs.
    #[arg(value_name = "[NAME=]DIR|IMAGE", required = true)]
    pub refs: Vec<String>,
    /// The address to listen on: IP:PORT, HOST:PORT, :PORT (every interface) or PORT (loopback).
    #[arg(long, default_value = "127.0.0.1:8080", value_parser = parse_listen)]
    pub listen: SocketAddr,
}

/// How long requests in flight may finish after SIGTERM or Ctrl-C.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Loads and indexes every catalog, then serves the browser until SIGTERM or SIGINT.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut views: Vec<Arc<CatalogView>> = Vec::new();
    for r in &args.refs {
        let head = r.split(',').next().unwrap_or_default();
        let named = matches!(head.split_once('='), Some((n, _)) if !n.contains('/'));
        let spec = if named {
            crate::resolve::parse_spec(r, "catalog")?
        } else {
            crate::resolve::parse_spec(&format!("{}={r}", default_name(head)), "catalog")?
        };
        if !spec.served {
            anyhow::bail!(
                "catalog {}: unserved has no meaning here: leave the catalog out",
                olm_goenc::quote(r)
            );
        }
        let opts = olm_catalog::load::LoadOptions {
            keep_raw: false,
            validate_only: false,
        };
        let catalog = crate::sources::load_catalog(
            &spec.reference,
            crate::sources::Registry::default(),
            &opts,
        )
        .with_context(|| format!("loading {}", spec.reference))?;
        let meta = CatalogMeta {
            name: spec.name,
            priority: Some(spec.priority),
            image: spec.reference.clone(),
            digest: String::new(),
            last_unpacked: String::new(),
            state: match spec.availability {
                olm_resolve::Availability::Available => "Local".into(),
                olm_resolve::Availability::Unavailable => "Local (unavailable)".into(),
            },
            labels: spec.labels,
            availability: spec.availability,
        };
        let view = CatalogView::new(meta, catalog);
        if view.packages.is_empty() {
            eprintln!(
                "warning: catalog {} ({}) has no packages",
                olm_goenc::quote(&view.meta.name),
                spec.reference
            );
        }
        views.push(Arc::new(view));
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
            "olm catalog serve-ui: {packages} package{} of {} catalog{} indexed in {} ms; browse http://{}/browse/",
            if packages == 1 { "" } else { "s" },
            views.len(),
            if views.len() == 1 { "" } else { "s" },
            started.elapsed().as_millis(),
            listener.local_addr()?
        );
        let router = olm_catalogd::browser::router(Arc::new(olm_catalogd::browser::Fixed(views)))
            .fallback(olm_catalogd::browser::redirect)
            .layer(axum::middleware::map_response(olm_catalogd::browser::secure));
        // The catalog server's listener: bounded time to send a request, bounded connections.
        let (stop_tx, stop) = tokio::sync::watch::channel(false);
        let mut serving = tokio::spawn(olm_runtime::serve::serve(listener, router, None, stop));
        tokio::select! {
            done = &mut serving => return done.context("serving the catalog browser")?.context("serving the catalog browser"),
            () = crate::catalog_serve::shutdown() => {}
        }
        let _ = stop_tx.send(true);
        // Requests in flight get a moment; a client that never finishes its request does not
        // hold the command.
        match tokio::time::timeout(SHUTDOWN_GRACE, &mut serving).await {
            Ok(done) => done.context("serving the catalog browser")?.context("serving the catalog browser"),
            Err(_) => {
                serving.abort();
                Ok(())
            }
        }
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `--listen`: IP:PORT, HOST:PORT (its first address), :PORT (every interface, as Go reads it) or
/// PORT (loopback).
fn parse_listen(s: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = s.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    if let Some(port) = s.strip_prefix(':').and_then(|p| p.parse::<u16>().ok()) {
        return Ok(SocketAddr::from(([0, 0, 0, 0], port)));
    }
    use std::net::ToSocketAddrs as _;
    s.to_socket_addrs()
        .map_err(|e| format!("{e}: expected IP:PORT, HOST:PORT, :PORT or PORT"))?
        .next()
        .ok_or_else(|| format!("{s} has no address"))
}

/// A catalog's name from its reference: the last path element, without a tag or digest, made a
/// ClusterCatalog name (lower case; characters a name cannot hold become `-`).
fn default_name(reference: &str) -> String {
    let trimmed = reference.trim_end_matches('/');
    let last = trimmed.rsplit('/').next().unwrap_or(trimmed);
    let last = last.split('@').next().unwrap_or(last);
    let last = last.split(':').next().unwrap_or(last);
    let name: String = last
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let name = name.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if name.is_empty() {
        "catalog".to_owned()
    } else {
        name.chars().take(253).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::parse_listen;

    #[test]
    fn default_names_are_cluster_catalog_names() {
        use super::default_name;
        assert_eq!(
            default_name("../catalogs/community-v4.21/"),
            "community-v4.21"
        );
        assert_eq!(default_name("quay.io/org/My_Catalog:v4.21"), "my-catalog");
        assert_eq!(default_name("localhost:5000/cat@sha256:abc"), "cat");
        assert_eq!(default_name("/tmp/_x_/"), "x");
        assert_eq!(default_name("/"), "catalog");
    }

    #[test]
    fn listen_takes_the_forms_people_write() {
        let ok = |s: &str| parse_listen(s).map(|a| a.to_string());
        assert_eq!(ok("127.0.0.1:8080").as_deref(), Ok("127.0.0.1:8080"));
        assert_eq!(ok("[::1]:8080").as_deref(), Ok("[::1]:8080"));
        assert_eq!(ok("8080").as_deref(), Ok("127.0.0.1:8080"));
        assert_eq!(ok(":8080").as_deref(), Ok("0.0.0.0:8080"));
        assert!(parse_listen("localhost:8080").is_ok_and(|a| a.ip().is_loopback()));
        assert!(
            parse_listen("nope")
                .unwrap_err()
                .contains("expected IP:PORT, HOST:PORT, :PORT or PORT")
        );
    }
}
