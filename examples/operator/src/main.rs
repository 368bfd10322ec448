//! The example operator of `examples/`: what OLM installs from the example bundles, a small but
//! real operator.
//!
//! * It reconciles every `Widget` (`example.olm.operatorframework.io/v1`) of the cluster:
//!   `status.ready` says whether the widget keeps the rule (at most 100 parts), and under
//!   0.2.0's CRD `status.observedGeneration` and `status.message` say which generation was
//!   looked at and why it is not ready ([`reconcile`]).
//! * With `--webhook-cert-dir` (0.2.0's CSV passes OLM's mount), it serves a validating
//!   admission webhook over HTTPS on port 9443 at `/validate-widget`, which refuses a widget
//!   over the limit with the rule's message ([`webhook`]).
//! * With `--api` (the OLM v0 example bundle's CSV, which owns an APIService), the same HTTPS
//!   server also serves an aggregated API, `WidgetSummary`, to the API server's aggregator
//!   ([`api`]).
//! * `/readyz` on plain HTTP port 8081 answers 200 once the widget watch has its first list
//!   and the webhook server listens ([`probes`]).
//!
//! Decisions are pure functions with table tests (`reconcile::decide`, `webhook::verdict`); the
//! rest only reads and writes. It stops on SIGTERM.

mod api;
mod probes;
mod reconcile;
mod tls;
mod webhook;
mod widget;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Parser;
use tokio::net::TcpListener;
use tracing::{error, info};

/// Reconciles Widgets and validates them with an admission webhook.
#[derive(Parser, Debug)]
#[command(name = "example-operator", version)]
struct Args {
    /// Where the probes listen (plain HTTP): /healthz and /readyz.
    #[arg(long, default_value = "0.0.0.0:8081")]
    health_probe_bind_address: SocketAddr,
    /// Serve the validating webhook, with tls.crt and tls.key from this directory (OLM mounts
    /// them at /tmp/k8s-webhook-server/serving-certs). Without it, no webhook is served.
    #[arg(long)]
    webhook_cert_dir: Option<PathBuf>,
    /// Also serve the aggregated API `WidgetSummary` (stats.example.olm.operatorframework.io/v1)
    /// on the webhook's server; needs --webhook-cert-dir. Callers must present the API
    /// server's front-proxy client certificate, whose CA is read at start from
    /// kube-system/extension-apiserver-authentication.
    #[arg(long, requires = "webhook_cert_dir")]
    api: bool,
    /// Where the webhook listens (HTTPS).
    #[arg(long, default_value = "0.0.0.0:9443")]
    webhook_bind_address: SocketAddr,
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("{e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let client = kube::Client::try_default()
        .await
        .context("connecting to the API server")?;
    let ready = Arc::new(probes::Readiness::new(args.webhook_cert_dir.is_some()));

    let probes = TcpListener::bind(args.health_probe_bind_address)
        .await
        .with_context(|| format!("listening on {}", args.health_probe_bind_address))?;
    info!(address = %args.health_probe_bind_address, "probes listen (/healthz, /readyz)");
    let router = probes::router(ready.clone());
    tokio::spawn(async move {
        if let Err(e) = axum::serve(probes, router).await {
            error!(error = %e, "the probe server stopped");
        }
    });

    // The widgets the reconciler watches, which the aggregated API also answers from.
    let (store, writer) = kube::runtime::reflector::store();
    if let Some(dir) = &args.webhook_cert_dir {
        let client_ca = match args.api {
            true => Some(front_proxy_ca(&client).await?),
            false => None,
        };
        let config = tls::server_config(dir, client_ca.as_deref())
            .context("loading the webhook's serving certificate")?;
        let router = match args.api {
            true => webhook::router().merge(api::router(store.clone())),
            false => webhook::router(),
        };
        let listener = TcpListener::bind(args.webhook_bind_address)
            .await
            .with_context(|| format!("listening on {}", args.webhook_bind_address))?;
        info!(
            address = %args.webhook_bind_address,
            path = webhook::PATH,
            certificates = %dir.display(),
            "webhook listens (HTTPS)"
        );
        ready.listening();
        tokio::spawn(tls::serve(listener, config, router));
    } else {
        info!("no --webhook-cert-dir: no webhook is served");
    }

    reconcile::run(client, ready, store, writer).await;
    Ok(())
}

/// The CA of the API server's front-proxy client certificate, as the cluster publishes it for
/// aggregated API servers.
async fn front_proxy_ca(client: &kube::Client) -> anyhow::Result<Vec<u8>> {
    let (namespace, name, key) = (
        "kube-system",
        "extension-apiserver-authentication",
        "requestheader-client-ca-file",
    );
    let map =
        kube::Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(client.clone(), namespace)
            .get(name)
            .await
            .with_context(|| format!("reading ConfigMap {namespace}/{name}"))?;
    map.data
        .and_then(|mut d| d.remove(key))
        .map(String::into_bytes)
        .with_context(|| format!("ConfigMap {namespace}/{name} has no {key}"))
}
