//! The cluster's ClusterCatalogs from the command line, beside `olm catalog add`: `olm catalog
//! get [NAME]`, `olm catalog update NAME …` and `olm catalog delete NAME` — what
//! kubectl-operator's `olmv1 get|update|delete catalog` give its users, with kubectl's output
//! habits. Rows are decided in [`rows`] from the objects alone; the commands only fetch, patch
//! and delete.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use olm_api::ClusterCatalog;
use olm_goenc::quote;
use serde_json::{Value, json};

use crate::client::Conn;
use crate::output::JsonOrYaml;

/// Show ClusterCatalogs: their priority, availability, polling, whether they serve, and the
/// image they serve.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm catalog get
  olm catalog get operatorhubio -o yaml
  olm catalog get -o name")]
pub struct GetArgs {
    /// One ClusterCatalog (default: all).
    name: Option<String>,
    /// Output format: a table (default), wide (with the resolved image), name, json or yaml.
    #[arg(short, long, value_enum)]
    output: Option<Format>,
    #[command(flatten)]
    conn: Conn,
}

/// Change a ClusterCatalog's priority, polling, availability or image.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm catalog update certified --priority 10      prefer it when packages are served twice
  olm catalog update operatorhubio --poll 30m
  olm catalog update operatorhubio --poll 0       stop polling
  olm catalog update old --unavailable            keep it, but resolve from it no more")]
pub struct UpdateArgs {
    /// The ClusterCatalog.
    name: String,
    /// Priority among catalogs serving the same package (higher wins).
    #[arg(long, allow_negative_numbers = true)]
    priority: Option<i32>,
    /// Poll the image for a new digest this often (whole minutes); 0 stops polling.
    #[arg(long, value_parser = crate::catalogd::parse_duration)]
    poll: Option<Duration>,
    /// A new catalog image.
    #[arg(long)]
    image: Option<String>,
    /// Serve the catalog again (availabilityMode Available).
    #[arg(long, conflicts_with = "unavailable")]
    available: bool,
    /// Stop serving the catalog (availabilityMode Unavailable): extensions no longer resolve
    /// from it.
    #[arg(long)]
    unavailable: bool,
    #[command(flatten)]
    conn: Conn,
}

/// Delete a ClusterCatalog and wait until it is gone.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm catalog delete operatorhubio")]
pub struct DeleteArgs {
    /// The ClusterCatalog.
    name: String,
    /// How long to wait for it to be gone.
    #[arg(long, default_value = "1m", value_parser = crate::catalogd::parse_duration)]
    timeout: Duration,
    #[command(flatten)]
    conn: Conn,
}

/// `-o`, as kubectl spells its formats.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Wide,
    Name,
    Json,
    Yaml,
}

/// A condition's status, with its reason when the status is not `True`.
fn condition_cell(cat: &ClusterCatalog, type_: &str) -> String {
    let found = cat
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == type_));
    match found {
        Some(c) if c.status == "True" || c.reason.is_empty() => c.status.clone(),
        Some(c) => format!("{}: {}", c.status, c.reason),
        None => "Unknown".to_owned(),
    }
}

/// The table of `olm catalog get`, sorted by name; `wide` adds the image it serves (by digest).
fn rows(catalogs: &[ClusterCatalog], now: jiff::Timestamp, wide: bool) -> Vec<Vec<String>> {
    let mut header = vec![
        "NAME",
        "PRIORITY",
        "AVAILABILITY",
        "POLL",
        "SERVING",
        "LAST UNPACKED",
        "IMAGE",
        "AGE",
    ];
    if wide {
        header.push("RESOLVED");
    }
    let mut out = vec![header.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>()];
    let mut sorted: Vec<&ClusterCatalog> = catalogs.iter().collect();
    sorted.sort_by_key(|c| c.name_any());
    let age = |t: Option<&jiff::Timestamp>| {
        t.map(|t| crate::client::view::human_age(now, *t))
            .unwrap_or_default()
    };
    for c in sorted {
        let image = c.spec.source.image.as_ref();
        let mut row = vec![
            c.name_any(),
            c.spec.priority.to_string(),
            format!("{:?}", c.spec.availability_mode),
            image
                .and_then(|i| i.poll_interval_minutes)
                .map(|m| format!("{m}m"))
                .unwrap_or_default(),
            condition_cell(c, "Serving"),
            age(c
                .status
                .as_ref()
                .and_then(|s| s.last_unpacked.as_ref())
                .map(|t| &t.0)),
            c.spec.image_ref().to_owned(),
            age(c.metadata.creation_timestamp.as_ref().map(|t| &t.0)),
        ];
        if wide {
            row.push(
                c.status
                    .as_ref()
                    .and_then(|s| s.resolved_source.as_ref())
                    .map(|r| r.image.ref_.clone())
                    .unwrap_or_default(),
            );
        }
        out.push(row);
    }
    out
}

/// The merge patch of `olm catalog update`, or why it cannot be made.
fn update_patch(args: &UpdateArgs, current_image: &str) -> Result<Value, String> {
    let mut spec = serde_json::Map::new();
    if let Some(p) = args.priority {
        spec.insert("priority".into(), json!(p));
    }
    if args.available || args.unavailable {
        spec.insert(
            "availabilityMode".into(),
            json!(if args.unavailable {
                "Unavailable"
            } else {
                "Available"
            }),
        );
    }
    let mut image = serde_json::Map::new();
    if let Some(r) = &args.image {
        image.insert("ref".into(), json!(r));
    }
    if let Some(poll) = args.poll {
        let secs = poll.as_secs();
        if secs % 60 != 0 || poll.subsec_nanos() != 0 {
            return Err(format!(
                "--poll must be a whole number of minutes (0 stops polling), got {poll:?}"
            ));
        }
        let image_ref = args.image.as_deref().unwrap_or(current_image);
        if secs > 0 && image_ref.contains('@') {
            return Err(format!(
                "cannot specify a non-zero --poll for a digest based catalog image {}",
                quote(image_ref)
            ));
        }
        image.insert(
            "pollIntervalMinutes".into(),
            if secs == 0 {
                Value::Null
            } else {
                json!(secs / 60)
            },
        );
    }
    if !image.is_empty() {
        spec.insert("source".into(), json!({"type": "Image", "image": image}));
    }
    if spec.is_empty() {
        return Err(
            "nothing to change: give --priority, --poll, --image, --available or --unavailable"
                .into(),
        );
    }
    Ok(json!({"spec": spec}))
}

pub fn get(args: GetArgs) -> anyhow::Result<ExitCode> {
    crate::runtime()?
        .block_on(get_on(args))
        .map_err(crate::client::readable)
}

async fn get_on(args: GetArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let api: Api<ClusterCatalog> = Api::all(client);
    let catalogs = match &args.name {
        Some(name) => vec![
            api.get_opt(name)
                .await
                .context("getting the ClusterCatalog")?
                .ok_or_else(|| anyhow!("ClusterCatalog {} not found", quote(name)))?,
        ],
        None => {
            api.list(&ListParams::default())
                .await
                .context("listing ClusterCatalogs")?
                .items
        }
    };
    match args.output {
        Some(Format::Json | Format::Yaml) => {
            let format = if args.output == Some(Format::Json) {
                JsonOrYaml::Json
            } else {
                JsonOrYaml::Yaml
            };
            let value = match (&args.name, catalogs.as_slice()) {
                (Some(_), [one]) => serde_json::to_value(one)?,
                _ => {
                    json!({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalogList",
                    "items": catalogs})
                }
            };
            crate::client::print_as(&value, format)?;
        }
        Some(Format::Name) => {
            let mut names: Vec<String> = catalogs.iter().map(|c| c.name_any()).collect();
            names.sort();
            for n in names {
                println!("clustercatalog.olm.operatorframework.io/{n}");
            }
        }
        _ if catalogs.is_empty() => println!("No resources found"),
        other => crate::output::print_table(&rows(
            &catalogs,
            jiff::Timestamp::now(),
            other == Some(Format::Wide),
        ))?,
    }
    Ok(ExitCode::SUCCESS)
}

pub fn update(args: UpdateArgs) -> anyhow::Result<ExitCode> {
    crate::runtime()?
        .block_on(update_on(args))
        .map_err(crate::client::readable)
}

async fn update_on(args: UpdateArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let api: Api<ClusterCatalog> = Api::all(client);
    let current = api
        .get_opt(&args.name)
        .await
        .context("getting the ClusterCatalog")?
        .ok_or_else(|| anyhow!("ClusterCatalog {} not found", quote(&args.name)))?;
    let image = current.spec.image_ref().to_owned();
    let patch = update_patch(&args, &image).map_err(|e| anyhow!(e))?;
    let after = api
        .patch(&args.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("failed to update ClusterCatalog {}", quote(&args.name)))?;
    if after.metadata.generation == current.metadata.generation {
        println!("no changes detected - catalog already in desired state");
    } else {
        println!("ClusterCatalog {} updated", quote(&args.name));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn delete(args: DeleteArgs) -> anyhow::Result<ExitCode> {
    crate::runtime()?
        .block_on(delete_on(args))
        .map_err(crate::client::readable)
}

async fn delete_on(args: DeleteArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let api: Api<ClusterCatalog> = Api::all(client);
    // Waited for by uid: a catalog of the same name made again meanwhile is another one.
    let uid = api
        .get_opt(&args.name)
        .await
        .context("getting the ClusterCatalog")?
        .and_then(|c| c.uid())
        .ok_or_else(|| anyhow!("ClusterCatalog {} not found", quote(&args.name)))?;
    match api.delete(&args.name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 => {
            bail!("ClusterCatalog {} not found", quote(&args.name))
        }
        Err(e) => {
            return Err(anyhow!(e).context(format!(
                "failed to delete ClusterCatalog {}",
                quote(&args.name)
            )));
        }
    }
    let gone = kube::runtime::wait::await_condition(
        api.clone(),
        &args.name,
        kube::runtime::wait::conditions::is_deleted(&uid),
    );
    match tokio::time::timeout(args.timeout, gone).await {
        Ok(Ok(_)) => {
            println!("ClusterCatalog {} deleted", quote(&args.name));
            Ok(ExitCode::SUCCESS)
        }
        Ok(Err(e)) => Err(anyhow!(e).context("waiting for the ClusterCatalog to be gone")),
        Err(_) => bail!(
            "ClusterCatalog {} is still there after {:?} (its finalizers say what holds it: `kubectl get clustercatalog {} -o yaml`)",
            quote(&args.name),
            args.timeout,
            args.name
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        args: UpdateArgs,
    }

    fn update(argv: &[&str]) -> UpdateArgs {
        let mut all = vec!["olm", "c"];
        all.extend_from_slice(argv);
        Cli::try_parse_from(all).expect("parse").args
    }

    #[test]
    fn update_changes_only_what_is_asked() {
        assert_eq!(
            update_patch(&update(&["--priority", "-5"]), "r/c:1"),
            Ok(json!({"spec": {"priority": -5}}))
        );
        assert_eq!(
            update_patch(&update(&["--poll", "30m", "--unavailable"]), "r/c:1"),
            Ok(
                json!({"spec": {"availabilityMode": "Unavailable", "source": {"type": "Image", "image": {"pollIntervalMinutes": 30}}}})
            )
        );
        assert_eq!(
            update_patch(&update(&["--poll", "0"]), "r/c@sha256:ab"),
            Ok(
                json!({"spec": {"source": {"type": "Image", "image": {"pollIntervalMinutes": null}}}})
            )
        );
        assert!(
            update_patch(&update(&["--poll", "10m"]), "r/c@sha256:ab")
                .expect_err("digest")
                .contains("digest based")
        );
        assert!(
            update_patch(&update(&["--poll", "90s"]), "r/c:1")
                .expect_err("minutes")
                .contains("whole number of minutes")
        );
        assert!(
            update_patch(&update(&[]), "r/c:1")
                .expect_err("nothing")
                .starts_with("nothing to change")
        );
        assert!(Cli::try_parse_from(["olm", "c", "--available", "--unavailable"]).is_err());
    }

    #[test]
    fn rows_show_priority_availability_polling_and_serving() {
        let cat: ClusterCatalog = serde_json::from_value(json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterCatalog",
            "metadata": {"name": "certified"},
            "spec": {"priority": 10, "availabilityMode": "Available",
                "source": {"type": "Image", "image": {"ref": "r/c:v4", "pollIntervalMinutes": 30}}},
            "status": {"conditions": [{"type": "Serving", "status": "False", "reason": "Unavailable",
                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "resolvedSource": {"type": "Image", "image": {"ref": "r/c@sha256:ab"}}}
        }))
        .expect("a ClusterCatalog");
        let now = jiff::Timestamp::now();
        let table = rows(std::slice::from_ref(&cat), now, true);
        assert_eq!(
            table[1],
            [
                "certified",
                "10",
                "Available",
                "30m",
                "False: Unavailable",
                "",
                "r/c:v4",
                "",
                "r/c@sha256:ab"
            ]
        );
    }
}
