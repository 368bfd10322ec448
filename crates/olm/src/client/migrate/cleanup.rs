//! `olm migrate cleanup EXT`: resolves a Conflict — a Subscription that came back (or was never
//! deleted) beside the ClusterExtension migrated from it — by removing the OLM v0 side, as
//! upstream's `cleanup` does: the Subscription and its CSVs go, the extension and what its
//! revision holds stay. OLM v0 is told to stand aside first (`migrating-to`), so it neither
//! installs nor repairs anything while they go.

use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};
use kube::ResourceExt as _;
use kube::api::{Api, ListParams, Patch, PatchParams};
use olm_api::ClusterExtension;
use olm_v0_api::v1alpha1::{ClusterServiceVersion, Subscription};
use serde_json::json;

use super::Conn;

/// `olm migrate cleanup`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm migrate cleanup etcd     the Subscription beside ClusterExtension etcd goes")]
pub struct Args {
    /// The ClusterExtension `olm migrate` made.
    extension: String,
    #[command(flatten)]
    conn: Conn,
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let ext = Api::<ClusterExtension>::all(client.clone())
        .get_opt(&args.extension)
        .await?
        .ok_or_else(|| anyhow!("ClusterExtension {} not found", args.extension))?;
    let from = ext
        .annotations()
        .get(olm_migrate::MIGRATED_FROM_SUBSCRIPTION)
        .cloned()
        .ok_or_else(|| {
            anyhow!(
                "ClusterExtension {} was not made by olm migrate",
                args.extension
            )
        })?;
    let Some((ns, name)) = from.split_once('/') else {
        bail!(
            "invalid {} value {from:?}",
            olm_migrate::MIGRATED_FROM_SUBSCRIPTION
        );
    };
    let subs: Api<Subscription> = Api::namespaced(client.clone(), ns);
    let Some(sub) = subs.get_opt(name).await? else {
        println!("nothing to clean up: Subscription {ns}/{name} does not exist");
        return Ok(ExitCode::SUCCESS);
    };
    let package = ext.spec.package_name();
    if sub.spec.package != package {
        bail!(
            "Subscription {ns}/{name} is for package {}, not {package}; refusing to delete it",
            sub.spec.package
        );
    }
    let others: Vec<String> = subs
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|s| s.name_any() != name && s.spec.package == package)
        .map(|s| s.name_any())
        .collect();
    if !others.is_empty() {
        bail!(
            "Subscription(s) {} in namespace {ns} also use package {package}; refusing to delete its CSVs",
            others.join(", ")
        );
    }
    let status = sub.status.as_ref();
    let mut csvs: Vec<String> = [
        status.and_then(|s| s.installed_csv.clone()),
        status.and_then(|s| s.current_csv.clone()),
    ]
    .into_iter()
    .flatten()
    .filter(|c| !c.is_empty())
    .collect();
    csvs.dedup();
    let hand =
        json!({"metadata": {"annotations": {olm_k8s::MIGRATING_TO_ANNOTATION: args.extension}}});
    subs.patch(name, &PatchParams::default(), &Patch::Merge(&hand))
        .await
        .context("marking the Subscription")?;
    let csv_api: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), ns);
    for csv in &csvs {
        match csv_api
            .patch(csv, &PatchParams::default(), &Patch::Merge(&hand))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                return Err(anyhow!(e).context(format!("marking ClusterServiceVersion {csv}")));
            }
        }
    }
    super::handover::delete_v0(&client, ns, name, &csvs, &args.extension).await?;
    println!(
        "subscription {ns}/{name} deleted{}; ClusterExtension {} keeps the operator",
        if csvs.is_empty() {
            String::new()
        } else {
            format!(" with ClusterServiceVersion(s) {}", csvs.join(", "))
        },
        args.extension
    );
    Ok(ExitCode::SUCCESS)
}
