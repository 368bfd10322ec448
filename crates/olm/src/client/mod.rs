//! The client for people (after operator-framework's kubectl-operator): `olm search`,
//! `olm install`, `olm upgrade`, `olm uninstall`, `olm list` and `olm describe`, against any
//! cluster the kubeconfig reaches. Also a kubectl plugin: `kubectl olm …`.
//!
//! What is shown is decided in [`view`] from objects and catalog content; this module gathers
//! them (catalog content through [`content`]), writes what the command asks for, and follows
//! an install on a watch.

mod content;
mod extension;
pub mod migrate;
mod rbac;
pub mod v0;
pub mod view;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use kube::ResourceExt;
use kube::api::{Api, ListParams};
use olm_api::ClusterCatalog;
use olm_extension::request::{NotServing, served};
use olm_goenc::quote;
use olm_resolve::Skipped;
use serde::Serialize;

use crate::output::JsonOrYaml;

pub use extension::{
    DescribeArgs, InstallArgs, ListArgs, UninstallArgs, UpgradeArgs, describe, install, list,
    uninstall, upgrade,
};

/// How to reach the cluster, as kubectl is told.
#[derive(clap::Args, Debug, Clone)]
pub struct Conn {
    /// Kubeconfig to use instead of $KUBECONFIG or ~/.kube/config.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use instead of its current one.
    #[arg(long)]
    context: Option<String>,
}

impl Conn {
    pub(crate) async fn client(&self) -> anyhow::Result<kube::Client> {
        connect_to(self.kubeconfig.as_ref(), self.context.as_deref()).await
    }
}

/// A client for a command a person runs: requests the API server answers with 429, 503 or 504
/// fail at once with the server's message instead of being retried with a backoff that can
/// grow to minutes (the client library's default) — the person decides whether to run it again.
pub(crate) async fn connect(kubeconfig: Option<&PathBuf>) -> anyhow::Result<kube::Client> {
    connect_to(kubeconfig, None).await
}

/// [`connect`] with a kubeconfig context other than the current one.
async fn connect_to(
    kubeconfig: Option<&PathBuf>,
    context: Option<&str>,
) -> anyhow::Result<kube::Client> {
    let mut config = crate::catalogd::kube_config_in(kubeconfig, context).await?;
    config.default_retry = false;
    Ok(kube::Client::try_from(config)?)
}

/// Search the packages the cluster's catalogs serve.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm search                        every package, one line each
  olm search postgres               packages matching a word, best match first
  olm search crunchy postgres       packages matching every word
  olm search cert-manager           one package: its channels and versions
  olm search -o yaml cert-manager   the same, as YAML")]
pub struct SearchArgs {
    /// Words to look for in package names, display names, keywords, providers, categories and
    /// descriptions; one word naming a package exactly shows that package's channels and
    /// versions (default: every package, one line each).
    words: Vec<String>,
    /// Only this ClusterCatalog.
    #[arg(long)]
    catalog: Option<String>,
    /// Output format (default: a table).
    #[arg(short, long, value_enum)]
    output: Option<JsonOrYaml>,
    #[command(flatten)]
    conn: Conn,
}

/// The API of objects of `api_version` `kind`, in `namespace` when given, with the plural and
/// scope the API server's discovery gives (a kind's plural cannot be guessed from its name);
/// `None` when the API server serves no such kind.
pub(crate) async fn dynamic_api(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    namespace: Option<&str>,
) -> Result<Option<Api<kube::api::DynamicObject>>, kube::Error> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = kube::core::GroupVersionKind::gvk(group, version, kind);
    let resource = match kube::discovery::pinned_kind(client, &gvk).await {
        Ok((resource, _)) => resource,
        Err(kube::Error::Discovery(_)) => return Ok(None),
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(Some(match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }))
}

/// Prints `value` as JSON or YAML.
pub(crate) fn print_as<T: Serialize>(value: &T, format: JsonOrYaml) -> anyhow::Result<()> {
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

/// Every ClusterCatalog, by name; only `only` when given.
async fn list_catalogs(
    client: &kube::Client,
    only: Option<&str>,
) -> anyhow::Result<Vec<ClusterCatalog>> {
    let api: Api<ClusterCatalog> = Api::all(client.clone());
    let mut all = api
        .list(&ListParams::default())
        .await
        .context("listing ClusterCatalogs")?
        .items;
    if let Some(name) = only {
        all.retain(|c| c.name_any() == name);
        if all.is_empty() {
            bail!("ClusterCatalog {} not found", quote(name));
        }
    }
    all.sort_by_key(|c| c.name_any());
    Ok(all)
}

/// The catalogs that serve content, and each other available one with why it serves nothing,
/// by the rule the extension controller uses too ([`served`]), so that the client reads and
/// skips the catalogs the controller reads and skips. Unavailable catalogs are in neither:
/// they are off on purpose.
fn split_serving(all: Vec<ClusterCatalog>) -> (Vec<ClusterCatalog>, Vec<Skipped>) {
    let mut skipped = Vec::new();
    let serving = all
        .into_iter()
        .filter(|c| match served(c) {
            Ok(_) => true,
            Err(NotServing::Unavailable) => false,
            Err(why) => {
                skipped.push(Skipped {
                    catalog: c.name_any(),
                    reason: why.to_string(),
                });
                false
            }
        })
        .collect();
    (serving, skipped)
}

/// The error of a search that found no catalog serving.
fn none_serving(only: Option<&str>, skipped: &[Skipped]) -> String {
    match (only, skipped) {
        (Some(name), [why]) => format!("catalog {} is not serving: {}", quote(name), why.reason),
        (Some(name), _) => format!("catalog {} is not serving", quote(name)),
        (None, []) => {
            "no serving catalogs found (add one with `olm catalog add NAME IMAGE`)".into()
        }
        (None, skipped) => format!(
            "no serving catalogs found; {}",
            skipped
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        ),
    }
}

/// The error as a person reads it: each context, then the cause. A failed Kubernetes request
/// ends the chain with the API server's message ([`olm_runtime::api_error::message`]), never
/// kube-rs's `ApiError: … (Status { … })`.
pub(crate) fn readable(e: anyhow::Error) -> anyhow::Error {
    if !e.chain().any(|c| c.downcast_ref::<kube::Error>().is_some()) {
        return e;
    }
    let mut parts = Vec::new();
    for cause in e.chain() {
        if let Some(k) = cause.downcast_ref::<kube::Error>() {
            parts.push(olm_runtime::api_error::message(k));
            break;
        }
        parts.push(cause.to_string());
    }
    anyhow!(parts.join(": "))
}

pub fn search(args: SearchArgs) -> anyhow::Result<ExitCode> {
    crate::runtime()?
        .block_on(search_on(args))
        .map_err(readable)
}

async fn search_on(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let all = list_catalogs(&client, args.catalog.as_deref()).await?;
    let (catalogs, skipped) = split_serving(all);
    if catalogs.is_empty() {
        bail!(none_serving(args.catalog.as_deref(), &skipped));
    }
    for s in &skipped {
        eprintln!("note: {s}");
    }
    // One word naming a package: that package's versions (only its blobs are fetched).
    if let [package] = args.words.as_slice() {
        let found = gather(&client, &catalogs, Some(package)).await?;
        if !found.is_empty() {
            return show(&found, args.output, true);
        }
    }
    let found = view::ranked(gather(&client, &catalogs, None).await?, &args.words);
    if found.is_empty() && !args.words.is_empty() {
        bail!(
            "no package matches {} in {} (words are looked for in package names, display names, keywords, providers, categories and descriptions)",
            quote(&args.words.join(" ")),
            match &args.catalog {
                Some(c) => format!("ClusterCatalog {}", quote(c)),
                None => "any serving ClusterCatalog".into(),
            }
        );
    }
    show(&found, args.output, false)
}

/// Every package (only `package`, when given) of `catalogs`, by name and catalog.
async fn gather(
    client: &kube::Client,
    catalogs: &[ClusterCatalog],
    package: Option<&str>,
) -> anyhow::Result<Vec<view::PackageSummary>> {
    let mut found = Vec::new();
    for cat in catalogs {
        let name = cat.name_any();
        let content = content::content(client, cat, package).await?;
        found.extend(
            view::summarize(&name, &content, package)
                .map_err(|e| anyhow!("catalog {}: {e}", quote(&name)))?,
        );
    }
    found.sort_by(|a, b| (&a.name, &a.catalog).cmp(&(&b.name, &b.catalog)));
    Ok(found)
}

/// Prints packages as asked: structured, one row per version (`versions`), or one per package.
fn show(
    found: &[view::PackageSummary],
    output: Option<JsonOrYaml>,
    versions: bool,
) -> anyhow::Result<ExitCode> {
    if let Some(format) = output {
        print_as(&found, format)?;
    } else if found.is_empty() {
        println!("No resources found");
    } else if versions {
        crate::output::print_table(&view::version_rows(found))?;
    } else {
        crate::output::print_table(&view::package_rows(found))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A failed request reads as Go's client prints it: context, then the API server's message,
    /// not kube-rs's `ApiError: …: Forbidden (Status { status: Some(Failure), code: 403, … })`.
    #[test]
    fn api_errors_read_as_the_server_wrote_them() {
        let text = "clusterextensions.olm.operatorframework.io is forbidden: User \"dev\" cannot create resource \"clusterextensions\"";
        let mut status = kube::core::Status::failure(text, "Forbidden");
        status.code = 403;
        let e = anyhow::Error::from(kube::Error::Api(status.boxed()))
            .context("creating ClusterExtension \"argocd\"");
        assert!(
            format!("{e:#}").contains("Status {"),
            "kube-rs's form: {e:#}"
        );
        let e = readable(e);
        assert_eq!(
            format!("{e:#}"),
            format!("creating ClusterExtension \"argocd\": {text}")
        );
        // Other errors are left as they are.
        let e = readable(anyhow!("no serving catalogs found"));
        assert_eq!(format!("{e:#}"), "no serving catalogs found");
    }

    fn catalog(name: &str, mode: &str, status: serde_json::Value) -> ClusterCatalog {
        serde_json::from_value(json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
            "metadata": {"name": name},
            "spec": {"source": {"type": "Image", "image": {"ref": "r.example/c:v1"}},
                     "availabilityMode": mode},
            "status": status}))
        .unwrap()
    }

    /// The client reads the catalogs the controller reads and names the others with the words
    /// of the controller's `CatalogsSkipped`; a catalog switched off is neither.
    #[test]
    fn search_skips_what_serves_nothing_and_says_why() {
        let serving = json!({"conditions": [{"type": "Serving", "status": "True",
                "reason": "Available", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "resolvedSource": {"type": "Image", "image": {"ref": "r.example/c@sha256:0123456789abcdef0123456789abcdef"}},
            "urls": {"base": "https://catalogd.olmv1-system.svc/catalogs/a"}});
        let failing = json!({"conditions": [{"type": "Progressing", "status": "True",
            "reason": "Retrying", "message": "source catalog content: manifest unknown",
            "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
        let (read, skipped) = split_serving(vec![
            catalog("a", "Available", serving.clone()),
            catalog("b", "Available", failing),
            catalog("off", "Unavailable", serving),
        ]);
        assert_eq!(read.iter().map(|c| c.name_any()).collect::<Vec<_>>(), ["a"]);
        assert_eq!(
            skipped.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["catalog \"b\" was skipped (not serving: source catalog content: manifest unknown)"]
        );
        assert_eq!(
            none_serving(None, &skipped),
            "no serving catalogs found; catalog \"b\" was skipped (not serving: source catalog content: manifest unknown)"
        );
        assert_eq!(
            none_serving(Some("b"), &skipped),
            "catalog \"b\" is not serving: source catalog content: manifest unknown"
        );
        assert_eq!(
            none_serving(None, &[]),
            "no serving catalogs found (add one with `olm catalog add NAME IMAGE`)"
        );
    }
}
