//! `olm migrate rollback EXT`: hands a moved operator back to OLM v0, in place.
//!
//! Flow:
//! 1. The extension must carry `migrated-from-subscription` and a Subscription backup that
//!    names a package and a CatalogSource; one that is `Installed` needs
//!    `--acknowledge-installed` (upstream's rule: it is running under OLM v1).
//! 2. Once OLM v1 has stopped writing for them, every object the revisions hold is released
//!    from its owner references to them (the garbage collector could otherwise delete one its
//!    graph missed when orphaning), then the extension and its revisions are deleted with
//!    `propagationPolicy: Orphan`: the objects they held stay, without an owner, and the
//!    operator keeps running.
//! 3. The namespace's OperatorGroup is recreated from its backup when it is gone (upstream's
//!    rollback does not restore it), and the Subscription is recreated from its backup.
//!    A move that never finished (the Subscription still there, marked `migrating-to` this
//!    extension) is handed back instead by removing the mark from it and its CSV.
//! 4. OLM v0 resolves it again and its InstallPlan updates the objects that are there, as it
//!    updates any existing object nobody holds; the command follows the Subscription and its
//!    CSV, on watches, until the CSV succeeds.
//! 5. What only OLM v1 used goes (upstream's rollback leaves it): the RBAC the revisions laid
//!    out under OLM v1's names that nobody claimed meanwhile, and the revisions' storage
//!    Secrets. Left behind, owned by no one, they would stand in the way of the next move.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use olm_api::{ClusterExtension, ClusterObjectSet};
use olm_migrate::{handover, mapping};
use olm_v0_api::v1::OperatorGroup;
use olm_v0_api::v1alpha1::{ClusterServiceVersion, ClusterServiceVersionPhase, Subscription};
use serde_json::{Value, json};

use super::Conn;

/// `olm migrate rollback`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm migrate rollback etcd --acknowledge-installed
  olm migrate rollback --all --acknowledge-installed")]
pub struct Args {
    /// The ClusterExtension `olm migrate` made.
    extension: Option<String>,
    /// Every ClusterExtension `olm migrate` made, one after the other; each is tried even when
    /// one before failed, and the run fails when any did.
    #[arg(long, conflicts_with = "extension")]
    all: bool,
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
    let client = args.conn.client().await?;
    let Some(name) = args.extension.clone() else {
        if !args.all {
            bail!("specify a ClusterExtension or --all");
        }
        return all(&client, &args).await;
    };
    one(&client, &args, &name).await
}

/// `--all`: every extension carrying `migrated-from-subscription`, by name (upstream's
/// `RollbackAll`): each is tried, and the first error is the run's.
async fn all(client: &kube::Client, args: &Args) -> anyhow::Result<ExitCode> {
    let extensions: Api<ClusterExtension> = Api::all(client.clone());
    let mut names: Vec<String> = extensions
        .list_metadata(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|e| {
            e.annotations()
                .contains_key(olm_migrate::MIGRATED_FROM_SUBSCRIPTION)
        })
        .map(|e| e.name_any())
        .collect();
    names.sort();
    if names.is_empty() {
        println!("no ClusterExtension was made by olm migrate: nothing to roll back");
        return Ok(ExitCode::SUCCESS);
    }
    let mut first = None;
    for name in &names {
        eprintln!("  Rolling back ClusterExtension {name}...");
        if let Err(e) = one(client, args, name).await {
            eprintln!("  ✗ {name}: {e:#}");
            first.get_or_insert(e);
        }
    }
    match first {
        None => Ok(ExitCode::SUCCESS),
        Some(e) => Err(e.context(format!("rolling back {} extension(s)", names.len()))),
    }
}

/// Hands the extension `name` back to OLM v0 (the module's flow).
async fn one(client: &kube::Client, args: &Args, name: &str) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let client = client.clone();
    let extensions: Api<ClusterExtension> = Api::all(client.clone());
    let ext = extensions
        .get_opt(name)
        .await?
        .ok_or_else(|| anyhow!("ClusterExtension {name} not found"))?;
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
            name
        );
    }
    let ns = &backup.namespace;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    if namespaces.get_opt(ns).await?.is_none() {
        bail!("the Subscription's namespace {ns} does not exist");
    }
    let subs: Api<Subscription> = Api::namespaced(client.clone(), ns);
    let current = subs.get_opt(&backup.name).await?;
    let what =
        handover::rollback(name, ns, &backup.name, current.as_ref()).map_err(|e| anyhow!(e))?;

    // 2. OLM v1 stops writing, then lets go; what it held stays.
    let orphan = DeleteParams {
        propagation_policy: Some(kube::api::PropagationPolicy::Orphan),
        ..DeleteParams::default()
    };
    let revisions: Api<ClusterObjectSet> = Api::all(client.clone());
    let held = hold(&extensions, &revisions, name, args.timeout).await?;
    // What OLM v1 laid out that OLM v0 will not take back, gone once OLM v0 runs it again.
    let (with_objects, unread) =
        crate::client::extension::revisions_with_objects(&client, name).await?;
    let leftovers = handover::rbac_laid_out(&with_objects);
    let storage = crate::client::view::stored_secret_names(&with_objects);
    for why in &unread {
        eprintln!(
            "  ! {why}: the objects kept there are released by the garbage collector's orphaning alone"
        );
    }
    // What the revisions held names them no more before they go (see
    // `handover::released_owner_references`): nothing is left for the collector to delete.
    let owners: std::collections::BTreeSet<String> = ext
        .metadata
        .uid
        .iter()
        .chain(with_objects.iter().filter_map(|r| r.metadata.uid.as_ref()))
        .cloned()
        .collect();
    let released =
        super::handover::release(&client, &handover::laid_out(&with_objects), &owners, true)
            .await?;
    if released > 0 {
        eprintln!("  ✓ {released} object(s) no longer name OLM v1's revisions as their owner");
    }

    extensions
        .delete(name, &orphan)
        .await
        .context("deleting the ClusterExtension")?;
    for r in &held {
        match revisions.delete(r, &orphan).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(anyhow!(e).context(format!("deleting revision {r}"))),
        }
    }
    wait_gone(&extensions, name, args.timeout).await?;
    for r in &held {
        wait_gone(&revisions, r, args.timeout).await?;
    }
    eprintln!(
        "  ✓ ClusterExtension {} and its {} revision(s) deleted; the objects they held stay",
        name,
        held.len()
    );
    if let handover::Rollback::Unmark { csv } = what {
        // 3'. A move that did not finish: OLM v0 never let go of anything but its attention.
        let unmark = json!({"metadata": {"annotations": {olm_k8s::MIGRATING_TO_ANNOTATION: null}}});
        subs.patch(
            &backup.name,
            &PatchParams::default(),
            &Patch::Merge(&unmark),
        )
        .await
        .context("handing the Subscription back to OLM v0")?;
        let csvs: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), ns);
        match csvs
            .patch(&csv, &PatchParams::default(), &Patch::Merge(&unmark))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(anyhow!(e).context("handing the CSV back to OLM v0")),
        }
        eprintln!(
            "  ✓ Subscription {ns}/{} and ClusterServiceVersion {csv} handed back to OLM v0 (the move had not finished)",
            backup.name
        );
    } else {
        restore(&client, ns, &backup).await?;
    }

    // 4. Followed, on watches, until OLM v0 has it installed again.
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), ns);
    let stalled = || {
        anyhow!(
            "the Subscription is back, but OLM v0 has not installed the operator within {:?}; `olm v0 list -n {ns}` shows where it is",
            args.timeout
        )
    };
    let deadline = Instant::now() + args.timeout;
    let installed = |s: Option<&Subscription>| {
        s.and_then(|s| s.status.as_ref())
            .and_then(|st| st.installed_csv.clone())
            .filter(|c| !c.is_empty())
    };
    let sub = tokio::time::timeout(
        deadline.saturating_duration_since(Instant::now()),
        await_condition(subs.clone(), &backup.name, |s: Option<&Subscription>| {
            installed(s).is_some()
        }),
    )
    .await
    .map_err(|_| stalled())??;
    let csv = installed(sub.as_ref()).unwrap_or_default();
    tokio::time::timeout(
        deadline.saturating_duration_since(Instant::now()),
        await_condition(csvs, &csv, |c: Option<&ClusterServiceVersion>| {
            c.and_then(|c| c.status.as_ref())
                .and_then(|s| s.phase.as_ref())
                .is_some_and(|p| *p == ClusterServiceVersionPhase::Succeeded)
        }),
    )
    .await
    .map_err(|_| stalled())??;
    let removed = remove_leftovers(&client, &leftovers, &storage).await?;
    if removed > 0 {
        eprintln!(
            "  ✓ {removed} object(s) only OLM v1 used removed (its own RBAC, its revisions' storage Secrets)"
        );
    }
    println!(
        "operator {ns}/{} handed back to OLM v0: ClusterServiceVersion {csv} Succeeded; {:.1}s",
        backup.name,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// Step 3: the OperatorGroup (when gone) and the Subscription, recreated from their backups.
async fn restore(client: &kube::Client, ns: &str, backup: &Backup) -> anyhow::Result<()> {
    let subs: Api<Subscription> = Api::namespaced(client.clone(), ns);
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

    Ok(())
}

/// Holds the extension `name` and then each of its revisions
/// ([`olm_k8s::MIGRATION_ROLLBACK_ANNOTATION`]) and waits, on watches, until OLM v1 has
/// acknowledged every hold: from then on it writes nothing for them, so orphaning them cannot
/// race a write naming them as owner. The revisions are listed after the extension's hold is
/// acknowledged, so one it was creating meanwhile is among them. Their names.
async fn hold(
    extensions: &Api<ClusterExtension>,
    revisions: &Api<ClusterObjectSet>,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<Vec<String>> {
    let request = json!({"metadata": {"annotations": {
        olm_k8s::MIGRATION_ROLLBACK_ANNOTATION: olm_k8s::MIGRATION_ROLLBACK_REQUESTED}}});
    let acknowledged = |annotations: Option<&std::collections::BTreeMap<String, String>>| {
        olm_k8s::rollback_hold(annotations) == olm_k8s::RollbackHold::Idle
    };
    let deadline = Instant::now() + timeout;
    let silent = |what: &str| {
        anyhow!(
            "OLM v1 has not stopped working on {what} within {timeout:?}: is olm running? Nothing was deleted; run the rollback again"
        )
    };
    extensions
        .patch(name, &PatchParams::default(), &Patch::Merge(&request))
        .await
        .context("asking OLM v1 to stop working on the ClusterExtension")?;
    tokio::time::timeout(
        deadline.saturating_duration_since(Instant::now()),
        await_condition(extensions.clone(), name, |e: Option<&ClusterExtension>| {
            e.is_none_or(|e| acknowledged(e.metadata.annotations.as_ref()))
        }),
    )
    .await
    .map_err(|_| silent(&format!("ClusterExtension {name}")))??;
    let selector = format!("{}={name}", olm_k8s::OWNER_NAME_LABEL);
    let names: Vec<String> = revisions
        .list_metadata(&ListParams::default().labels(&selector))
        .await?
        .items
        .iter()
        .map(|r| r.name_any())
        .collect();
    for r in &names {
        revisions
            .patch(r, &PatchParams::default(), &Patch::Merge(&request))
            .await
            .with_context(|| format!("asking OLM v1 to stop working on revision {r}"))?;
    }
    for r in &names {
        tokio::time::timeout(
            deadline.saturating_duration_since(Instant::now()),
            await_condition(revisions.clone(), r, |c: Option<&ClusterObjectSet>| {
                c.is_none_or(|c| acknowledged(c.metadata.annotations.as_ref()))
            }),
        )
        .await
        .map_err(|_| silent(&format!("revision {r}")))??;
    }
    Ok(names)
}

/// Deletes each of `leftovers` nobody has claimed ([`handover::abandoned`]: read now, after
/// OLM v0 has laid out its own) and the revisions' storage Secrets `storage`; how many went.
async fn remove_leftovers(
    client: &kube::Client,
    leftovers: &[handover::LaidOut],
    storage: &[(String, String)],
) -> anyhow::Result<usize> {
    let mut removed = 0;
    for l in leftovers {
        let Some(api) = super::handover::dynamic_api(client, l).await? else {
            continue;
        };
        let Some(meta) = api.get_metadata_opt(&l.name).await? else {
            continue;
        };
        if !handover::abandoned(meta.labels(), meta.owner_references().len()) {
            continue;
        }
        match api.delete(&l.name, &DeleteParams::background()).await {
            Ok(_) => removed += 1,
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(anyhow!(e).context(format!("deleting {} {}", l.kind, l.name))),
        }
    }
    for (ns, name) in storage {
        let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), ns);
        match secrets.delete(name, &DeleteParams::background()).await {
            Ok(_) => removed += 1,
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(anyhow!(e).context(format!("deleting Secret {ns}/{name}"))),
        }
    }
    Ok(removed)
}

/// Waits, on a watch, until `name` is gone, at most `timeout`.
async fn wait_gone<K>(api: &Api<K>, name: &str, timeout: Duration) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    tokio::time::timeout(
        timeout,
        await_condition(api.clone(), name, |o: Option<&K>| o.is_none()),
    )
    .await
    .map_err(|_| anyhow!("{name} is still being deleted after {timeout:?}"))??;
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
