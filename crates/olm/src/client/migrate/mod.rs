//! `olm migrate …`: moving operators from OLM v0 to OLM v1. The decisions are
//! [`olm_migrate`]'s; these commands read the objects they need, print what was decided and
//! perform it.

mod catalogs;
mod check;
mod cleanup;
mod handover;
mod rollback;

use std::process::ExitCode;

use super::Conn;

/// `olm migrate`: one operator moved (`olm migrate SUB -n NS`), or a subcommand.
#[derive(clap::Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:
  olm migrate catalogs                       ClusterCatalogs for the CatalogSources
  olm migrate check --all                    which operators can move, and what blocks the others
  olm migrate etcd -n operators --dry-run    the ClusterExtension it would become
  olm migrate etcd -n operators              move it, in place"
)]
pub struct MigrateArgs {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    handover: handover::MoveArgs,
}

/// Move operators from OLM v0 (Subscriptions, CatalogSources) to OLM v1 (ClusterExtensions,
/// ClusterCatalogs).
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Make a ClusterCatalog of each image-backed CatalogSource (or adopt one serving the same
    /// image); list those that cannot move and why.
    Catalogs(catalogs::Args),
    /// Whether Subscriptions can move to OLM v1: every check, its result, and the state
    /// (Eligible, Ineligible, AlreadyMigrated, Conflict). Exits 1 unless every one can.
    Check(check::Args),
    /// Hand a moved operator back to OLM v0, in place: the extension and its revisions let go
    /// of its objects, and its Subscription (and OperatorGroup, if gone) come back from their
    /// backups.
    Rollback(rollback::Args),
    /// Resolve a Conflict: delete the Subscription (and its CSVs) that exist beside the
    /// ClusterExtension migrated from it; the extension keeps the operator.
    Cleanup(cleanup::Args),
}

/// Output for scripts: one JSON object per line.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// Text for people.
    Text,
    /// JSON lines.
    Json,
}

pub fn run(args: MigrateArgs) -> anyhow::Result<ExitCode> {
    let rt = crate::runtime()?;
    match args.command {
        Some(Command::Catalogs(a)) => rt.block_on(catalogs::run(a)),
        Some(Command::Check(a)) => rt.block_on(check::run(a)),
        Some(Command::Rollback(a)) => rt.block_on(rollback::run(a)),
        Some(Command::Cleanup(a)) => rt.block_on(cleanup::run(a)),
        None => rt.block_on(handover::run(args.handover)),
    }
    .map_err(super::readable)
}

/// One JSON line: `{"type": …, "command": …, "target"?: …, "data"?: …}`, the records
/// upstream's migration tools write with `--output jsonl`.
fn record(kind: &str, command: &str, target: Option<&str>, data: serde_json::Value) -> String {
    let mut r = serde_json::json!({"type": kind, "command": command});
    if let Some(t) = target {
        r["target"] = serde_json::json!(t);
    }
    if !data.is_null() {
        r["data"] = data;
    }
    r.to_string()
}
