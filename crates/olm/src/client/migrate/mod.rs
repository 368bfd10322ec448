//! `olm migrate …`: moving operators from OLM v0 to OLM v1. The decisions are
//! [`olm_migrate`]'s; these commands read the objects they need, print what was decided and
//! perform it.

mod catalogs;
mod check;

use std::process::ExitCode;

use super::Conn;

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
}

/// Output for scripts: one JSON object per line.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// Text for people.
    Text,
    /// JSON lines.
    Json,
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    let rt = crate::runtime()?;
    match cmd {
        Command::Catalogs(a) => rt.block_on(catalogs::run(a)),
        Command::Check(a) => rt.block_on(check::run(a)),
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
