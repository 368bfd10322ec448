//! The client for people (after operator-framework's kubectl-operator): `olm search`,
//! `olm install`, `olm upgrade`, `olm uninstall`, `olm list` and `olm describe`, against any
//! cluster the kubeconfig reaches. Also a kubectl plugin: `kubectl olm …`.
//!
//! What is shown is decided in [`view`] from objects and catalog content; this module gathers
//! them (catalog content through [`content`]), writes what the command asks for, and follows
//! an install on a watch.

mod content;
mod extension;
mod rbac;
pub mod view;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use olm_api::ClusterCatalog;
use olm_goenc::quote;
use serde::Serialize;

use crate::output::JsonOrYaml;

pub use extension::{
    DescribeArgs, InstallArgs, ListArgs, UninstallArgs, UpgradeArgs, describe, install, list,
    uninstall, upgrade,
};

/// How to reach the cluster.
#[derive(clap::Args, Debug, Clone)]
pub struct Conn {
    /// Kubeconfig to use instead of $KUBECONFIG or ~/.kube/config.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
}

impl Conn {
    async fn client(&self) -> anyhow::Result<kube::Client> {
        connect(self.kubeconfig.as_ref()).await
    }
}

/// A client for a command a person runs: requests the API server answers with 429, 503 or 504
/// fail at once with the server's message instead of being retried with a backoff that can
/// grow to minutes (the client library's default) — the person decides whether to run it again.
pub(crate) async fn connect(kubeconfig: Option<&PathBuf>) -> anyhow::Result<kube::Client> {
    let mut config = crate::catalogd::kube_config(kubeconfig).await?;
    config.default_retry = false;
    Ok(kube::Client::try_from(config)?)
}

/// Search the packages the cluster's catalogs serve.
#[derive(clap::Args, Debug)]
pub struct SearchArgs {
    /// A package: show its channels and versions (default: every package, one line each).
    package: Option<String>,
    /// Only this ClusterCatalog.
    #[arg(long)]
    catalog: Option<String>,
    /// Output format (default: a table).
    #[arg(short, long, value_enum)]
    output: Option<JsonOrYaml>,
    #[command(flatten)]
    conn: Conn,
}

/// Prints `value` as JSON or YAML.
fn print_as<T: Serialize>(value: &T, format: JsonOrYaml) -> anyhow::Result<()> {
    let mut v = serde_json::to_value(value)?;
    strip_managed_fields(&mut v);
    crate::output::print_value(&v, format)?;
    Ok(())
}

/// Drops `metadata.managedFields` of an object or of a list's items: noise for a person.
fn strip_managed_fields(v: &mut serde_json::Value) {
    if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        m.remove("managedFields");
    }
    if let Some(items) = v.get_mut("items").and_then(|i| i.as_array_mut()) {
        items.iter_mut().for_each(strip_managed_fields);
    }
}

/// The ClusterCatalogs that serve content, only `only` when given.
async fn serving_catalogs(
    client: &kube::Client,
    only: Option<&str>,
) -> anyhow::Result<Vec<ClusterCatalog>> {
    let api: Api<ClusterCatalog> = Api::all(client.clone());
    let all = api
        .list(&ListParams::default())
        .await
        .context("listing ClusterCatalogs")?
        .items;
    let all = match only {
        Some(name) => {
            let one: Vec<_> = all.into_iter().filter(|c| c.name_any() == name).collect();
            if one.is_empty() {
                bail!("ClusterCatalog {} not found", quote(name));
            }
            one
        }
        None => all,
    };
    let serving = content::serving(all);
    if serving.is_empty() {
        bail!(match only {
            Some(name) => format!("catalog {} is not serving", quote(name)),
            None => "no serving catalogs found (add one with `olm catalog add NAME IMAGE`)".into(),
        });
    }
    Ok(serving)
}

pub fn search(args: SearchArgs) -> anyhow::Result<ExitCode> {
    crate::runtime()?.block_on(search_on(args))
}

async fn search_on(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let catalogs = serving_catalogs(&client, args.catalog.as_deref()).await?;
    let mut found = Vec::new();
    for cat in &catalogs {
        let name = cat.name_any();
        let content = content::content(&client, cat, args.package.as_deref()).await?;
        found.extend(
            view::summarize(&name, &content, args.package.as_deref())
                .map_err(|e| anyhow!("catalog {}: {e}", quote(&name)))?,
        );
    }
    found.sort_by(|a, b| (&a.name, &a.catalog).cmp(&(&b.name, &b.catalog)));
    if let Some(p) = &args.package
        && found.is_empty()
    {
        bail!(
            "package {} was not found in {}",
            quote(p),
            match &args.catalog {
                Some(c) => format!("ClusterCatalog {}", quote(c)),
                None => "any serving ClusterCatalog".into(),
            }
        );
    }
    if let Some(format) = args.output {
        print_as(&found, format)?;
    } else if found.is_empty() {
        println!("No resources found");
    } else if args.package.is_some() {
        crate::output::print_table(&view::version_rows(&found))?;
    } else {
        crate::output::print_table(&view::package_rows(&found))?;
    }
    Ok(ExitCode::SUCCESS)
}
