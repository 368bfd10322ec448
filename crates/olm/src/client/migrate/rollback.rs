//! `olm migrate rollback EXT`: hands a moved operator back to OLM v0, in place.
//!
//! Flow:
//! 1. The extension must carry `migrated-from-subscription` and a Subscription backup that
//!    names a package and a CatalogSource; one that is `Installed` needs
//!    `--acknowledge-installed` (upstream's rule: it is running under OLM v1).
//! 2. The extension and its revisions are deleted with `propagationPolicy: Orphan`: the objects
//!    they held stay, without an owner, and the operator keeps running.
//! 3. The namespace's OperatorGroup is recreated from its backup when it is gone (upstream's
//!    rollback does not restore it), and the Subscription is recreated from its backup.
//! 4. OLM v0 resolves it again and its InstallPlan updates the objects that are there, as it
//!    updates any existing object nobody holds; the command follows the Subscription until its
//!    CSV succeeds.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use olm_api::{ClusterExtension, ClusterObjectSet};
use olm_migrate::mapping;
use olm_v0_api::v1::OperatorGroup;
use olm_v0_api::v1alpha1::{ClusterServiceVersion, Subscription};
use serde_json::{Value, json};

use super::Conn;

/// `olm migrate rollback`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm migrate rollback etcd --acknowledge-installed")]
pub struct Args {
    /// The ClusterExtension `olm migrate` made.
    extension: String,
    /// Confirm handing back an extension that is installed and running under OLM v1.
    #[arg(long)]
    acknowledge_installed: bool,
    /// How long to wait for OLM v0 to have the operator installed again (Go duration).
    #[arg(long, default_value = "5m", value_parser = crate::catalogd::parse_duration)]
    timeout: Duration,
    #[command(flatten)]
    conn: Conn,
}

/// What the extension's annotations say to restore.
struct Backup {
    namespace: String,
    name: String,
    subscription: Value,
    operator_group: Option<Value>,
}

/// Reads and checks the backups an extension carries; the errors say what is wrong with them.
fn backup(ext: &ClusterExtension) -> Result<Backup, String> {
    let name = ext.name_any();
    let annotations = ext.annotations();
    let from = annotations
        .get(olm_migrate::MIGRATED_FROM_SUBSCRIPTION)
        .ok_or_else(|| {
            format!(
                "ClusterExtension {name} has no {} annotation: it was not made by olm migrate",
                olm_migrate::MIGRATED_FROM_SUBSCRIPTION
            )
        })?;
    let (ns, sub) = from
        .split_once('/')
        .filter(|(n, s)| !n.is_empty() && !s.is_empty() && !s.contains('/'))
        .ok_or_else(|| {
            format!(
                "invalid {} value {from:?}: want namespace/name",
                olm_migrate::MIGRATED_FROM_SUBSCRIPTION
            )
        })?;
    let spec: Value = annotations
        .get(mapping::SUBSCRIPTION_BACKUP)
        .ok_or_else(|| {
            format!(
                "ClusterExtension {name} has no {} annotation",
                mapping::SUBSCRIPTION_BACKUP
            )
        })
        .and_then(|t| {
            serde_json::from_str(t).map_err(|e| format!("invalid Subscription backup: {e}"))
        })?;
    for key in ["name", "source", "sourceNamespace"] {
        if spec
            .get(key)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(format!(
                "invalid Subscription backup: spec.{key} is missing"
            ));
        }
    }
    let operator_group = annotations
        .get(mapping::OPERATOR_GROUP_BACKUP)
        .map(|t| serde_json::from_str(t).map_err(|e| format!("invalid OperatorGroup backup: {e}")))
        .transpose()?;
    Ok(Backup {
        namespace: ns.to_owned(),
        name: sub.to_owned(),
        subscription: spec,
        operator_group,
    })
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let client = args.conn.client().await?;
    let extensions: Api<ClusterExtension> = Api::all(client.clone());
    let ext = extensions
        .get_opt(&args.extension)
        .await?
        .ok_or_else(|| anyhow!("ClusterExtension {} not found", args.extension))?;
    let backup = backup(&ext).map_err(|e| anyhow!(e))?;
    let installed = ext
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "Installed" && c.status == "True");
    if installed && !args.acknowledge_installed {
        bail!(
            "ClusterExtension {} is Installed=True; pass --acknowledge-installed to confirm rollback",
            args.extension
        );
    }
    let ns = &backup.namespace;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    if namespaces.get_opt(ns).await?.is_none() {
        bail!("the Subscription's namespace {ns} does not exist");
    }
    let subs: Api<Subscription> = Api::namespaced(client.clone(), ns);
    if subs.get_opt(&backup.name).await?.is_some() {
        bail!(
            "Subscription {ns}/{} exists already; `olm migrate check {} -n {ns}` shows the conflict",
            backup.name,
            backup.name
        );
    }

    // 2. OLM v1 lets go; what it held stays.
    let orphan = DeleteParams {
        propagation_policy: Some(kube::api::PropagationPolicy::Orphan),
        ..DeleteParams::default()
    };
    let revisions: Api<ClusterObjectSet> = Api::all(client.clone());
    let selector = format!("{}={}", olm_k8s::OWNER_NAME_LABEL, args.extension);
    let held: Vec<String> = revisions
        .list_metadata(&ListParams::default().labels(&selector))
        .await?
        .items
        .iter()
        .map(|r| r.name_any())
        .collect();
    extensions
        .delete(&args.extension, &orphan)
        .await
        .context("deleting the ClusterExtension")?;
    for r in &held {
        match revisions.delete(r, &orphan).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(anyhow!(e).context(format!("deleting revision {r}"))),
        }
    }
    wait_gone(&extensions, &args.extension, args.timeout).await?;
    for r in &held {
        wait_gone(&revisions, r, args.timeout).await?;
    }
    eprintln!(
        "  ✓ ClusterExtension {} and its {} revision(s) deleted; the objects they held stay",
        args.extension,
        held.len()
    );

    // 3. OLM v0's objects again.
    let groups: Api<OperatorGroup> = Api::namespaced(client.clone(), ns);
    if groups
        .list_metadata(&ListParams::default())
        .await?
        .items
        .is_empty()
        && let Some(spec) = &backup.operator_group
    {
        let og: OperatorGroup = serde_json::from_value(json!({
            "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
            "metadata": {"name": ns, "namespace": ns}, "spec": spec}))
        .context("building the OperatorGroup from its backup")?;
        groups.create(&PostParams::default(), &og).await?;
        eprintln!("  ✓ OperatorGroup {ns}/{ns} recreated from its backup");
    }
    let sub: Subscription = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": backup.name, "namespace": ns}, "spec": backup.subscription}))
    .context("building the Subscription from its backup")?;
    subs.create(&PostParams::default(), &sub)
        .await
        .context("recreating the Subscription")?;
    eprintln!(
        "  ✓ Subscription {ns}/{} recreated from its backup",
        backup.name
    );

    // 4. Followed until OLM v0 has it installed again.
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), ns);
    let deadline = Instant::now() + args.timeout;
    let csv = loop {
        let installed = subs
            .get_opt(&backup.name)
            .await?
            .and_then(|s| s.status.and_then(|st| st.installed_csv))
            .filter(|c| !c.is_empty());
        if let Some(name) = installed
            && let Some(csv) = csvs.get_opt(&name).await?
            && csv
                .status
                .as_ref()
                .and_then(|s| s.phase.as_ref())
                .is_some_and(|p| p.as_str() == "Succeeded")
        {
            break name;
        }
        if Instant::now() >= deadline {
            bail!(
                "the Subscription was recreated, but OLM v0 has not installed the operator within {:?}; `olm v0 list -n {ns}` shows where it is",
                args.timeout
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    println!(
        "operator {ns}/{} handed back to OLM v0: ClusterServiceVersion {csv} Succeeded; {:.1}s",
        backup.name,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// Waits until `name` is gone, at most `timeout`.
async fn wait_gone<K>(api: &Api<K>, name: &str, timeout: Duration) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let deadline = Instant::now() + timeout;
    while api.get_metadata_opt(name).await?.is_some() {
        if Instant::now() >= deadline {
            bail!("{name} is still being deleted after {timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ext(annotations: Value) -> ClusterExtension {
        serde_json::from_value(json!({
            "apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtension",
            "metadata": {"name": "etcd", "annotations": annotations},
            "spec": {"namespace": "ops", "source": {"sourceType": "Catalog",
                "catalog": {"packageName": "etcd"}}},
        }))
        .expect("extension")
    }

    #[test]
    fn backups_are_checked_before_anything_is_touched() {
        let good = json!({
            "olm.operatorframework.io/migrated-from-subscription": "ops/etcd",
            "olm.operatorframework.io/migration-subscription-backup":
                r#"{"source":"community","sourceNamespace":"olm","name":"etcd","channel":"alpha"}"#,
            "olm.operatorframework.io/migration-operatorgroup-backup": "{}",
        });
        let b = backup(&ext(good.clone())).expect("valid");
        assert_eq!((b.namespace.as_str(), b.name.as_str()), ("ops", "etcd"));
        assert_eq!(b.subscription["channel"], "alpha");
        assert_eq!(b.operator_group, Some(json!({})));
        let mut missing = good.clone();
        missing["olm.operatorframework.io/migration-subscription-backup"] =
            json!(r#"{"name":"etcd"}"#);
        assert_eq!(
            backup(&ext(missing)).err().as_deref(),
            Some("invalid Subscription backup: spec.source is missing")
        );
        let mut bad_ref = good.clone();
        bad_ref["olm.operatorframework.io/migrated-from-subscription"] = json!("etcd");
        assert!(backup(&ext(bad_ref)).is_err());
        assert_eq!(
            backup(&ext(json!({}))).err().as_deref(),
            Some(
                "ClusterExtension etcd has no olm.operatorframework.io/migrated-from-subscription annotation: it was not made by olm migrate"
            )
        );
    }
}
