//! `olm migrate catalogs`: each image-backed CatalogSource becomes a ClusterCatalog
//! ([`olm_migrate::catalogs::plan`]), created and followed until it serves, or an existing one
//! of the same image adopted.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, bail};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use olm_api::ClusterCatalog;
use olm_migrate::catalogs::{self, Action, Done, Outcome, Planned};
use olm_v0_api::v1alpha1::{CatalogSource, Subscription};
use serde_json::json;

use super::{Conn, Output, record};

/// `olm migrate catalogs`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm migrate catalogs --dry-run                what would be created or adopted
  olm migrate catalogs -n team-a                only one namespace's CatalogSources
  olm migrate catalogs
  olm migrate catalogs --delete-catalogsource   remove the sources no Subscription uses")]
pub struct Args {
    /// Only the CatalogSources of this namespace (default: every namespace's, as upstream
    /// migrates them): on a shared cluster, a team moves its own catalogs.
    #[arg(short, long)]
    namespace: Option<String>,
    /// Print what would be done; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Delete each migrated CatalogSource that no Subscription uses any more.
    #[arg(long)]
    delete_catalogsource: bool,
    /// Cap a spec.priority outside the 32-bit range ClusterCatalogs take instead of skipping
    /// the source.
    #[arg(long)]
    acknowledge_priority_overflow: bool,
    /// How long to wait for each new ClusterCatalog to serve (Go duration).
    #[arg(long, default_value = "10m", value_parser = crate::catalogd::parse_duration)]
    timeout: Duration,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    output: Output,
    #[command(flatten)]
    conn: Conn,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let sources: Api<CatalogSource> = Api::all(client.clone());
    let catalogs: Api<ClusterCatalog> = Api::all(client.clone());
    let mut listed_sources = sources
        .list(&ListParams::default())
        .await
        .context("catalog migration failed: failed to list CatalogSources")?
        .items;
    if let Some(ns) = &args.namespace {
        listed_sources.retain(|s| s.metadata.namespace.as_deref() == Some(ns.as_str()));
    }
    let listed_catalogs = catalogs
        .list(&ListParams::default())
        .await
        .context("catalog migration failed: failed to list ClusterCatalogs")?
        .items;
    let text = args.output == Output::Text;
    if text {
        eprintln!(
            "{} {} CatalogSource(s)",
            if args.dry_run {
                "Dry run — no cluster changes will be made; found"
            } else {
                "Migrating CatalogSources to ClusterCatalogs; found"
            },
            listed_sources.len()
        );
    }
    let plan = catalogs::plan(
        &listed_sources,
        &listed_catalogs,
        args.acknowledge_priority_overflow,
    );
    // Subscriptions are read once, and only when deletion was asked for.
    let mut subscriptions: Option<Result<Vec<(String, String)>, String>> = None;
    let mut done = Vec::with_capacity(plan.len());
    for planned in plan {
        let mut result = carry_out(&catalogs, &planned, &args).await;
        let movable = matches!(
            result.outcome,
            Outcome::Created | Outcome::Adopted | Outcome::DryRun
        );
        if args.delete_catalogsource && movable {
            if subscriptions.is_none() {
                subscriptions = Some(referrers(&client).await);
            }
            if let Some(subs) = &subscriptions {
                delete_source(&client, &planned, subs, args.dry_run, &mut result).await;
            }
        }
        if text {
            let mark = match result.outcome {
                Outcome::Created | Outcome::Adopted | Outcome::DryRun => "✓",
                Outcome::Skipped => "⚠",
                Outcome::Error => "✗",
            };
            eprintln!(
                "  {mark} CatalogSource {}: {}",
                planned.source(),
                result.reason
            );
            for n in &result.notes {
                eprintln!("    {n}");
            }
        } else {
            println!(
                "{}",
                record(
                    "result",
                    "migrate-catalogs",
                    Some(&planned.source()),
                    serde_json::to_value(&result)?
                )
            );
        }
        done.push(result);
    }
    if text {
        print!("{}", catalogs::report(&done, args.dry_run));
    }
    let errors = done.iter().filter(|d| d.outcome == Outcome::Error).count();
    if errors > 0 {
        bail!("{errors} catalog source(s) failed to migrate");
    }
    Ok(ExitCode::SUCCESS)
}

/// Performs one source's part of the plan (or says what it would be).
async fn carry_out(api: &Api<ClusterCatalog>, planned: &Planned, args: &Args) -> Done {
    let catalog = planned.catalog().unwrap_or_default().to_owned();
    let (outcome, reason) = match &planned.action {
        Action::Skip(why) => (Outcome::Skipped, why.clone()),
        Action::Error(why) => (Outcome::Error, why.clone()),
        Action::Shared(c) => (
            Outcome::Adopted,
            format!("consolidated into shared ClusterCatalog {c}"),
        ),
        Action::Adopt { catalog: c, .. } if args.dry_run => (
            Outcome::DryRun,
            format!("would adopt existing ClusterCatalog {c}"),
        ),
        Action::Adopt {
            catalog: c,
            annotate,
        } => match annotate_adopted(api, c, &planned.source(), *annotate).await {
            Ok(()) => (
                Outcome::Adopted,
                "existing ClusterCatalog with matching image adopted".to_owned(),
            ),
            Err(e) => (
                Outcome::Error,
                format!("failed to annotate existing ClusterCatalog: {e}"),
            ),
        },
        Action::Create(new) => {
            let image = new.spec.image_ref().to_owned();
            if args.dry_run {
                (
                    Outcome::DryRun,
                    format!("would create ClusterCatalog {catalog} from image {image}"),
                )
            } else {
                create(api, new, &catalog, &image, args).await
            }
        }
    };
    Done {
        catalog_source_namespace: planned.namespace.clone(),
        catalog_source_name: planned.name.clone(),
        cluster_catalog_name: catalog,
        outcome,
        reason,
        notes: planned.notes.clone(),
    }
}

/// Adds the `migrated-from-catalogsource` annotation to an adopted catalog that lacks it.
async fn annotate_adopted(
    api: &Api<ClusterCatalog>,
    catalog: &str,
    source: &str,
    annotate: bool,
) -> Result<(), String> {
    if !annotate {
        return Ok(());
    }
    let patch = json!({"metadata": {"annotations": {
        olm_migrate::MIGRATED_FROM_CATALOG_SOURCE: source}}});
    api.patch(catalog, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(drop)
        .map_err(|e| olm_runtime::api_error::message(&e))
}

/// Creates the ClusterCatalog and follows it until it serves.
async fn create(
    api: &Api<ClusterCatalog>,
    new: &ClusterCatalog,
    name: &str,
    image: &str,
    args: &Args,
) -> (Outcome, String) {
    if args.output == Output::Text {
        eprintln!("    waiting for ClusterCatalog {name} to become Serving=True");
    }
    if let Err(e) = api.create(&PostParams::default(), new).await {
        return (
            Outcome::Error,
            format!(
                "failed to create ClusterCatalog: {}",
                olm_runtime::api_error::message(&e)
            ),
        );
    }
    match crate::catalog_add::wait_serving(api, name, args.timeout).await {
        Ok(()) => (Outcome::Created, format!("created from image {image}")),
        Err(why) => (Outcome::Error, format!("ClusterCatalog not serving: {why}")),
    }
}

/// `(sourceNamespace, source)` of every Subscription.
async fn referrers(client: &kube::Client) -> Result<Vec<(String, String)>, String> {
    let subs: Api<Subscription> = Api::all(client.clone());
    subs.list(&ListParams::default())
        .await
        .map(|l| {
            l.items
                .into_iter()
                .map(|s| (s.spec.catalog_source_namespace, s.spec.catalog_source))
                .collect()
        })
        .map_err(|e| olm_runtime::api_error::message(&e))
}

/// `--delete-catalogsource`: deletes a migrated source no Subscription uses, noting what was
/// done; a failure turns the result into an error.
async fn delete_source(
    client: &kube::Client,
    planned: &Planned,
    subscriptions: &Result<Vec<(String, String)>, String>,
    dry_run: bool,
    result: &mut Done,
) {
    let subs = match subscriptions {
        Ok(s) => s,
        Err(e) => {
            result.outcome = Outcome::Error;
            result.reason = format!(
                "{}; failed to list Subscriptions before CatalogSource deletion: {e}",
                result.reason
            );
            return;
        }
    };
    if catalogs::referenced(&planned.namespace, &planned.name, subs) {
        result.notes.push(
            "CatalogSource retained because one or more Subscriptions still reference it".into(),
        );
        return;
    }
    if dry_run {
        result
            .notes
            .push("would delete unreferenced CatalogSource".into());
        return;
    }
    let namespaced: Api<CatalogSource> = Api::namespaced(client.clone(), &planned.namespace);
    match namespaced
        .delete(&planned.name, &DeleteParams::default())
        .await
    {
        Ok(_) => result
            .notes
            .push("deleted unreferenced CatalogSource".into()),
        Err(kube::Error::Api(s)) if s.code == 404 => {
            result
                .notes
                .push("deleted unreferenced CatalogSource".into());
        }
        Err(e) => {
            result.outcome = Outcome::Error;
            result.reason = format!(
                "{}; failed to delete unreferenced CatalogSource: {}",
                result.reason,
                olm_runtime::api_error::message(&e)
            );
        }
    }
}
