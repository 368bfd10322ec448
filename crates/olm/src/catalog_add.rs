//! `olm catalog add NAME IMAGE`: a ClusterCatalog on the cluster of the kubeconfig, waited for
//! until it serves, modelled on kubectl-operator's `olmv1 create catalog` (its object, output
//! and clean-up on failure), except that it fails with the catalog's own reason instead of a
//! bare timeout, and that a catalog it could not make serve is deleted only when it created it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::wait::await_condition;
use olm_api::ClusterCatalog;
use olm_goenc::quote;
use serde_json::{Value, json};

/// Add a ClusterCatalog and wait until it serves.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm catalog add operatorhubio quay.io/operatorhubio/catalog:latest  kubectl operator olmv1 create catalog
  olm catalog add operatorhubio quay.io/operatorhubio/catalog:latest --poll 10m --priority 10
  olm catalog add mine 127.0.0.1:5000/catalogs/mine:v1 --timeout 2m")]
pub struct Args {
    /// The ClusterCatalog's name.
    name: String,
    /// The catalog image, e.g. quay.io/operatorhubio/catalog:latest.
    image: String,
    /// Priority among catalogs when several offer the same package (higher wins).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    priority: i32,
    /// Poll the image for a new digest this often (whole minutes, e.g. 10m); not for an image
    /// pinned by digest.
    #[arg(long, value_parser = crate::catalogd::parse_duration)]
    poll: Option<Duration>,
    /// How long to wait for the catalog to serve.
    #[arg(long, default_value = "5m", value_parser = crate::catalogd::parse_duration)]
    timeout: Duration,
    /// How long deleting a catalog that did not come to serve may take.
    #[arg(long, default_value = "1m", value_parser = crate::catalogd::parse_duration)]
    cleanup_timeout: Duration,
    /// Kubeconfig to use instead of the default.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
}

/// The ClusterCatalog for `args`, or why there is none.
fn object(name: &str, image: &str, priority: i32, poll: Option<Duration>) -> Result<Value, String> {
    let mut source = json!({"ref": image});
    if let Some(poll) = poll {
        let secs = poll.as_secs();
        if secs == 0 || secs % 60 != 0 || poll.subsec_nanos() != 0 {
            return Err(format!(
                "--poll must be a positive number of whole minutes, got {poll:?}"
            ));
        }
        if image.contains('@') {
            return Err(format!(
                "cannot specify a non-zero --poll for a digest based catalog image {}",
                quote(image)
            ));
        }
        source["pollIntervalMinutes"] = json!(secs / 60);
    }
    Ok(json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterCatalog",
        "metadata": {"name": name},
        "spec": {
            "source": {"type": "Image", "image": source},
            "priority": priority,
            "availabilityMode": "Available",
        },
    }))
}

/// Whether a catalog serves, and else what its Progressing condition says.
fn serving(cat: &ClusterCatalog) -> Result<(), String> {
    let conditions = cat
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let find = |t: &str| conditions.iter().find(|c| c.type_ == t);
    if find("Serving").is_some_and(|c| c.status == "True") {
        return Ok(());
    }
    Err(match find("Progressing") {
        Some(c) => format!("{}: {}", c.reason, c.message),
        None => "no status yet (is OLM running on the cluster?)".to_owned(),
    })
}

/// Waits on a watch until ClusterCatalog `name` serves, at most `timeout`; else why not (its
/// Progressing condition, or that it has no status or was deleted).
pub(crate) async fn wait_serving(
    api: &Api<ClusterCatalog>,
    name: &str,
    timeout: std::time::Duration,
) -> Result<(), String> {
    let is_serving = |c: Option<&ClusterCatalog>| c.is_some_and(|c| serving(c).is_ok());
    match tokio::time::timeout(timeout, await_condition(api.clone(), name, is_serving)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => {
            let last = api.get_opt(name).await.ok().flatten();
            let state = match last.as_ref().map(serving) {
                Some(Err(why)) => why,
                Some(Ok(())) => return Ok(()),
                None => "deleted meanwhile".to_owned(),
            };
            Err(format!("not serving after {timeout:?}: {state}"))
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let runtime = crate::runtime()?;
    runtime.block_on(add(args)).map_err(crate::client::readable)
}

async fn add(args: Args) -> anyhow::Result<ExitCode> {
    let failed = |e: String| anyhow!("failed to create catalog {}: {e}", quote(&args.name));
    let value = object(&args.name, &args.image, args.priority, args.poll).map_err(failed)?;
    let cat: ClusterCatalog =
        serde_json::from_value(value).context("building the ClusterCatalog")?;
    let client = crate::client::connect(args.kubeconfig.as_ref()).await?;
    let api: Api<ClusterCatalog> = Api::all(client);
    api.create(&PostParams::default(), &cat)
        .await
        .map_err(|e| failed(olm_runtime::api_error::message(&e)))?;
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        eprintln!(
            "waiting for ClusterCatalog {} to become healthy...",
            quote(&args.name)
        );
    }
    let why = match wait_serving(&api, &args.name, args.timeout).await {
        Ok(()) => {
            println!("catalog {} created", quote(&args.name));
            return Ok(ExitCode::SUCCESS);
        }
        Err(why) => why,
    };
    // Clean up what this command created, as kubectl-operator does; no wait for it to go.
    let deleted = tokio::time::timeout(
        args.cleanup_timeout,
        api.delete(&args.name, &DeleteParams::default()),
    )
    .await;
    match deleted {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => eprintln!(
            "cleaning up failed catalog: {}",
            olm_runtime::api_error::message(&e)
        ),
        Err(_) => eprintln!(
            "cleaning up failed catalog: timed out after {:?}",
            args.cleanup_timeout
        ),
    }
    Err(failed(why))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_object_as_kubectl_operator_builds_it() {
        let v = object("c", "r.io/cat:v1", 5, Some(Duration::from_secs(600))).unwrap();
        assert_eq!(v["spec"]["source"]["image"]["pollIntervalMinutes"], 10);
        assert_eq!(v["spec"]["priority"], 5);
        assert_eq!(v["spec"]["availabilityMode"], "Available");
        let v = object("c", "r.io/cat:v1", 0, None).unwrap();
        assert!(
            v["spec"]["source"]["image"]
                .get("pollIntervalMinutes")
                .is_none()
        );
    }

    #[test]
    fn poll_is_checked() {
        assert_eq!(
            object("c", "r.io/cat@sha256:ab", 0, Some(Duration::from_secs(60))).unwrap_err(),
            "cannot specify a non-zero --poll for a digest based catalog image \"r.io/cat@sha256:ab\""
        );
        assert!(object("c", "r.io/cat:v1", 0, Some(Duration::from_secs(90))).is_err());
    }
}
