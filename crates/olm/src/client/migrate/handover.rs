//! `olm migrate SUBSCRIPTION -n NS`: moves one operator from OLM v0 to OLM v1 in place.
//!
//! Flow:
//! 1. The checks ([`super::check`]) must find the Subscription Eligible; the ClusterExtension
//!    it maps to ([`olm_migrate::mapping::extension`]) is printed by `--dry-run` and nothing
//!    more is done.
//! 2. The Subscription and its CSV are annotated `migrating-to: <extension>`: OLM v0 stops
//!    resolving, installing and repairing them (the operator keeps running untouched).
//! 3. The ClusterExtension is created, pinned to the installed version and naming the CSV it
//!    takes over; its first revision adopts that CSV's objects in place (the CSV agreeing, by
//!    its annotation) and creates only what OLM v1 lays out differently.
//! 4. Once the extension is `Installed`, OLM v0's objects are written under `--backup DIR`
//!    (when asked), then the Subscription, the CSV and the InstallPlans that installed it are
//!    deleted: what the revision took over is the revision's (the garbage collector drops the
//!    CSV's references), what it did not (OLM v0's own RBAC, say) goes with the CSV. With
//!    `--delete-operatorgroup`, the OperatorGroup goes too when no other Subscription is left
//!    in its namespace (its aggregated ClusterRoles stay, stripped of OLM v0's owner labels).
//! 5. The takeover note comes off the extension (its revision keeps it: it stays the
//!    extension's revision, pods untouched, until the bundle or configuration changes), and an
//!    operator upgraded automatically under OLM v0 is unpinned, to follow its channel.
//!
//! Guarantees: no object the revision takes over is deleted or recreated, and none is without
//! an owner at any moment (the CSV's reference stays until the revision's controller reference
//! is there). A move interrupted anywhere is continued by running the command again: where it
//! stands is read off the cluster ([`olm_migrate::handover::stage`]) and every step is
//! idempotent; `olm migrate rollback` undoes one that did not finish.

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::ResourceExt as _;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use olm_api::{ClusterExtension, ClusterObjectSet};
use olm_migrate::handover::{self, Stage};
use olm_migrate::mapping;
use olm_migrate::scan::State;
use olm_v0_api::v1::OperatorGroup;
use olm_v0_api::v1alpha1::{ClusterServiceVersion, InstallPlan, Subscription};
use serde_json::json;

use super::check::{AckArgs, World};
use super::{Conn, Output, record};
use crate::client::view::Progress;

/// `olm migrate SUBSCRIPTION -n NAMESPACE`.
#[derive(clap::Args, Debug)]
pub struct MoveArgs {
    /// The Subscription to move.
    subscription: Option<String>,
    /// Every Eligible Subscription of the cluster, one after the other.
    #[arg(long)]
    all: bool,
    /// With --all: go on after a move fails.
    #[arg(long)]
    continue_on_error: bool,
    /// Its namespace.
    #[arg(short, long)]
    namespace: Option<String>,
    /// The ClusterExtension's name (default: the Subscription's).
    #[arg(long)]
    ce_name: Option<String>,
    /// Print the ClusterExtension and what would happen; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Before deleting anything of OLM v0, write the Subscription, OperatorGroup, CSV and
    /// InstallPlans as YAML under DIR (DIR/<namespace>/<subscription>/ with --all). The
    /// ClusterExtension's annotations remain the backup `rollback` reads.
    #[arg(long, value_name = "DIR")]
    backup: Option<std::path::PathBuf>,
    /// Delete the namespace's OperatorGroup too, once no Subscription is left there (its
    /// aggregated ClusterRoles stay).
    #[arg(long)]
    delete_operatorgroup: bool,
    #[command(flatten)]
    acks: AckArgs,
    /// How long to wait for the ClusterExtension to be installed (Go duration).
    #[arg(long, default_value = "5m", value_parser = crate::catalogd::parse_duration)]
    timeout: Duration,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    output: Output,
    #[command(flatten)]
    conn: Conn,
}

pub async fn run(args: MoveArgs) -> anyhow::Result<ExitCode> {
    match (&args.subscription, args.all) {
        (Some(_), true) => bail!("cannot specify both an operator name and --all"),
        (None, false) => bail!("specify an operator name or --all"),
        (None, true) if args.namespace.is_some() => {
            bail!("-n/--namespace cannot be combined with --all; --all scans every namespace")
        }
        (None, true) if args.ce_name.is_some() => {
            bail!(
                "--ce-name cannot be combined with --all; each operator uses its Subscription name"
            )
        }
        _ => {}
    }
    let client = args.conn.client().await?;
    let Some(name) = args.subscription.clone() else {
        return all(&client, &args).await;
    };
    let ns = args
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| anyhow!("-n/--namespace is required"))?;
    let ce_name = args.ce_name.clone().unwrap_or_else(|| name.clone());
    one(&client, &args, &ns, &name, &ce_name).await
}

/// `--all`: every Eligible Subscription, one after the other (upstream's `convertBatch`): the
/// scan's summary first, then each move; the first failure stops the run unless
/// `--continue-on-error`, and the run fails when any move did.
async fn all(client: &kube::Client, args: &MoveArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut world = World::read(client).await?;
    let results = world.all(&args.acks.acks()).await?;
    if args.output == Output::Text {
        print!("{}", olm_migrate::scan::summary(&results));
    }
    let eligible: Vec<(String, String)> = results
        .iter()
        .filter(|r| r.status == State::Eligible)
        .map(|r| (r.namespace.clone(), r.name.clone()))
        .collect();
    if eligible.is_empty() {
        if args.output == Output::Text {
            println!("  No eligible operators to migrate.");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut failed = Vec::new();
    for (ns, name) in &eligible {
        if args.output == Output::Text {
            eprintln!("  Processing {ns}/{name}...");
        }
        if let Err(e) = one(client, args, ns, name, name).await {
            eprintln!("  ✗ {ns}/{name}: {}", super::super::readable(e));
            failed.push(format!("{ns}/{name}"));
            if !args.continue_on_error {
                break;
            }
        }
    }
    if args.output == Output::Text {
        eprintln!(
            "{} of {} eligible operator(s) moved in {:.1}s",
            eligible.len() - failed.len().min(eligible.len()),
            eligible.len(),
            started.elapsed().as_secs_f64()
        );
    }
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        bail!("migration failed for {}", failed.join(", "))
    }
}

/// Moves the Subscription `ns/name` to the ClusterExtension `ce_name` (the module's flow).
async fn one(
    client: &kube::Client,
    args: &MoveArgs,
    ns: &str,
    name: &str,
    ce_name: &str,
) -> anyhow::Result<ExitCode> {
    let (ns, name, ce_name) = (ns.to_owned(), name.to_owned(), ce_name.to_owned());
    let started = Instant::now();
    let client = client.clone();
    let extensions: Api<ClusterExtension> = Api::all(client.clone());
    let subs: Api<Subscription> = Api::namespaced(client.clone(), &ns);
    let text = args.output == Output::Text;
    let say = |line: &str| {
        if text {
            eprintln!("{line}");
        }
    };

    // Where a move stands is read off the cluster: one interrupted anywhere goes on from there.
    let sub = subs.get_opt(&name).await?;
    let existing = extensions.get_opt(&ce_name).await?;
    let stage = handover::stage(&ns, &name, &ce_name, sub.as_ref(), existing.as_ref())
        .map_err(|e| anyhow!(e))?;
    let (sub, csv_name, manual) = match stage {
        Stage::Done => {
            say(&format!(
                "operator {ns}/{name} has moved to OLM v1 already: ClusterExtension {ce_name}"
            ));
            return Ok(ExitCode::SUCCESS);
        }
        Stage::Finish { csv, manual } => {
            say(&format!(
                "Finishing the move of {ns}/{name} to ClusterExtension {ce_name} (its Subscription is gone already)"
            ));
            (None, csv, manual)
        }
        Stage::Follow => {
            say(&format!(
                "Continuing the move of {ns}/{name} to ClusterExtension {ce_name}"
            ));
            let sub = sub.ok_or_else(|| anyhow!("Subscription {ns}/{name} vanished"))?;
            let csv = olm_migrate::checks::installed_csv(&sub).to_owned();
            let manual = mapping::manual(&sub);
            (Some(sub), csv, manual)
        }
        Stage::Start | Stage::Create => {
            let sub = sub.ok_or_else(|| anyhow!("Subscription {ns}/{name} vanished"))?;
            if stage == Stage::Create {
                say(&format!(
                    "Continuing the move of {ns}/{name}: creating ClusterExtension {ce_name}, which an interrupted run did not"
                ));
            }
            match create(&client, args, &sub, &ce_name).await? {
                Some(code) => return Ok(code),
                None => {
                    let csv = olm_migrate::checks::installed_csv(&sub).to_owned();
                    let manual = mapping::manual(&sub);
                    (Some(sub), csv, manual)
                }
            }
        }
    };

    // 4. Installed, then OLM v0's objects go.
    let progress = crate::client::extension::follow(&extensions, &ce_name, args.timeout).await?;
    let (bundle, version) = match progress {
        Progress::Done { bundle, version } => (bundle, version),
        Progress::Working(what) => bail!("migration failed: ClusterExtension {ce_name}: {what}"),
        Progress::Stuck {
            reason,
            message,
            advice,
        } => bail!(
            "migration failed: ClusterExtension {ce_name} is not installed ({reason}): {message}\nWhat to do: {advice}; then run this command again to finish the move (OLM v0 stays aside until then)"
        ),
    };
    say(&format!(
        "  ✓ ClusterExtension {ce_name} installed {bundle} (version {version})"
    ));
    let held = revision_objects(&client, &ce_name)
        .await
        .unwrap_or_default();
    let plans = Api::<InstallPlan>::namespaced(client.clone(), &ns)
        .list(&ListParams::default())
        .await
        .context("listing the namespace's InstallPlans")?
        .items;
    let plan_names = handover::plans_of(&csv_name, &plans);
    if let (Some(dir), Some(sub)) = (&args.backup, &sub) {
        let dir = if args.all {
            dir.join(&ns).join(&name)
        } else {
            dir.clone()
        };
        match backup(&client, &dir, sub, &csv_name, &plans, &plan_names).await {
            Ok(n) => say(&format!("  ✓ {n} object(s) backed up to {}", dir.display())),
            Err(e) => say(&format!(
                "  ⚠  Backup to disk failed (CE annotation backup is authoritative): {e:#}"
            )),
        }
    }
    delete_v0(
        &client,
        &ns,
        &name,
        std::slice::from_ref(&csv_name),
        &ce_name,
    )
    .await?;
    delete_plans(&client, &ns, &plan_names).await?;
    say(&format!(
        "  ✓ Subscription {name}, ClusterServiceVersion {csv_name} and {} InstallPlan(s) deleted (what OLM v1 took over stays)",
        plan_names.len()
    ));
    if args.delete_operatorgroup {
        match delete_operator_groups(&client, &ns, &name).await? {
            Some(groups) => say(&format!(
                "  ✓ OperatorGroup(s) {} deleted (their aggregated ClusterRoles stay)",
                groups.join(", ")
            )),
            None => say(&format!(
                "  ⚠  OperatorGroup in {ns} kept: other Subscriptions there still need it"
            )),
        }
    }

    // 5. The extension's own from now on.
    let mut patch =
        json!({"metadata": {"annotations": {olm_k8s::MIGRATION_TAKES_OVER_ANNOTATION: null}}});
    if !manual {
        patch["spec"] = json!({"source": {"catalog": {"version": null}}});
    }
    extensions
        .patch(&ce_name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .context("finishing the ClusterExtension")?;
    let elapsed = started.elapsed();
    if text {
        println!(
            "operator {ns}/{name} moved to OLM v1: ClusterExtension {ce_name} installed {bundle} (version {version}); its revision holds {held} object(s); {:.1}s",
            elapsed.as_secs_f64()
        );
    } else {
        println!(
            "{}",
            record(
                "result",
                "convert",
                Some(&format!("{ns}/{name}")),
                json!({"status": "completed", "cluster_extension": ce_name, "bundle": bundle,
                    "version": version, "revision_objects": held, "seconds": elapsed.as_secs_f64()})
            )
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Steps 1–3 for `sub`: the checks must find it Eligible, then the mapped ClusterExtension
/// `ce_name` is printed (`--dry-run`: `Some`, nothing more) or OLM v0 is told to stand aside and
/// the extension is created (`None`: go on). Marking again a Subscription an interrupted run
/// marked already changes nothing.
async fn create(
    client: &kube::Client,
    args: &MoveArgs,
    sub: &Subscription,
    ce_name: &str,
) -> anyhow::Result<Option<ExitCode>> {
    let ns = sub.namespace().unwrap_or_default();
    let name = sub.name_any();
    let text = args.output == Output::Text;
    let say = |line: &str| {
        if text {
            eprintln!("{line}");
        }
    };
    let extensions: Api<ClusterExtension> = Api::all(client.clone());
    let subs: Api<Subscription> = Api::namespaced(client.clone(), &ns);
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), &ns);
    let csv_name = olm_migrate::checks::installed_csv(sub).to_owned();
    let mut world = World::read(client).await?;
    let acks = args.acks.acks();
    let result = world.one(&ns, &name, &acks).await?;
    if result.status != State::Eligible {
        if text {
            print!("{}", olm_migrate::scan::report(&result));
        }
        bail!(
            "operator {ns}/{name} is not eligible for migration ({}): {}",
            result.status.as_str(),
            result.reason
        );
    }
    let catalog = world
        .resolved
        .get(&format!("{ns}/{name}"))
        .cloned()
        .unwrap_or_default();
    let csv = csvs
        .get(&csv_name)
        .await
        .context("reading the installed CSV")?;
    let groups = Api::<OperatorGroup>::namespaced(client.clone(), &ns)
        .list(&ListParams::default())
        .await?
        .items;
    let version = olm_migrate::checks::installed_version(&csv);
    let default_channel = world.default_channel(&catalog, &sub.spec.package);
    let mapped = mapping::extension(&mapping::Source {
        subscription: sub,
        csv: &csv,
        operator_group: groups.first(),
        name: ce_name,
        catalog: &catalog,
        default_channel: default_channel.as_deref(),
        version: &version,
        acks: &acks,
    })
    .map_err(|e| anyhow!("building the ClusterExtension: {e}"))?;
    for w in &mapped.warnings {
        say(&format!("  ⚠  {w}"));
    }
    if args.dry_run {
        return dry_run(args, &ns, &name, &csv_name, &mapped, sub).map(Some);
    }
    if extensions.get_opt(ce_name).await?.is_some() {
        bail!("migration failed: ClusterExtension {ce_name} already exists");
    }
    say(&format!(
        "Moving {ns}/{name} to OLM v1 as ClusterExtension {ce_name} (package {}, version {version}, catalog {catalog})",
        sub.spec.package
    ));
    // 2. OLM v0 stands aside for this operator.
    let hand = json!({"metadata": {"annotations": {olm_k8s::MIGRATING_TO_ANNOTATION: ce_name}}});
    subs.patch(&name, &PatchParams::default(), &Patch::Merge(&hand))
        .await
        .context("marking the Subscription as moving")?;
    csvs.patch(&csv_name, &PatchParams::default(), &Patch::Merge(&hand))
        .await
        .context("marking the CSV as moving")?;
    say("  ✓ OLM v0 stands aside for the operator (Subscription and CSV marked)");
    // 3. The extension.
    extensions
        .create(&PostParams::default(), &mapped.extension)
        .await
        .context("migration failed: failed to create ClusterExtension")?;
    say(&format!("  ✓ ClusterExtension {ce_name} created"));
    Ok(None)
}

/// `--backup DIR`: the objects OLM v0 is about to lose, as YAML files
/// ([`handover::backup_files`]); how many were written.
async fn backup(
    client: &kube::Client,
    dir: &std::path::Path,
    sub: &Subscription,
    csv_name: &str,
    plans: &[InstallPlan],
    plan_names: &[String],
) -> anyhow::Result<usize> {
    let ns = sub.namespace().unwrap_or_default();
    let group = Api::<OperatorGroup>::namespaced(client.clone(), &ns)
        .list(&ListParams::default())
        .await
        .context("reading the OperatorGroup")?
        .items
        .into_iter()
        .next();
    let csv = Api::<ClusterServiceVersion>::namespaced(client.clone(), &ns)
        .get_opt(csv_name)
        .await
        .context("reading the CSV")?;
    let chosen: Vec<&InstallPlan> = plans
        .iter()
        .filter(|p| plan_names.contains(&p.name_any()))
        .collect();
    let files = handover::backup_files(sub, group.as_ref(), csv.as_ref(), &chosen)
        .map_err(|e| anyhow!(e))?;
    for (path, yaml) in &files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, yaml).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(files.len())
}

/// Deletes the InstallPlans `names` of `ns` (a missing one is fine).
async fn delete_plans(client: &kube::Client, ns: &str, names: &[String]) -> anyhow::Result<()> {
    let api: Api<InstallPlan> = Api::namespaced(client.clone(), ns);
    for name in names {
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(anyhow!(e).context(format!("deleting InstallPlan {ns}/{name}"))),
        }
    }
    Ok(())
}

/// `--delete-operatorgroup`: the namespace's OperatorGroups, once no Subscription but `moved`
/// is left there ([`handover::operator_group_removable`]); their aggregated ClusterRoles first
/// lose the owner labels by which OLM v0 would remove them. The groups deleted, or `None` when
/// they stay.
async fn delete_operator_groups(
    client: &kube::Client,
    ns: &str,
    moved: &str,
) -> anyhow::Result<Option<Vec<String>>> {
    let subs = Api::<Subscription>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .context("listing the namespace's Subscriptions")?
        .items;
    if !handover::operator_group_removable(&subs, &[moved]) {
        return Ok(None);
    }
    let groups: Api<OperatorGroup> = Api::namespaced(client.clone(), ns);
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let all_roles = roles.list_metadata(&ListParams::default()).await?.items;
    let strip: serde_json::Map<String, serde_json::Value> = handover::OPERATOR_GROUP_ROLE_LABELS
        .iter()
        .map(|l| ((*l).to_owned(), serde_json::Value::Null))
        .collect();
    let mut deleted = Vec::new();
    for group in groups.list(&ListParams::default()).await?.items {
        let group_name = group.name_any();
        for role in all_roles
            .iter()
            .filter(|r| handover::operator_group_role(&group_name, &r.name_any()))
        {
            roles
                .patch(
                    &role.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(&json!({"metadata": {"labels": strip}})),
                )
                .await
                .with_context(|| format!("keeping ClusterRole {}", role.name_any()))?;
        }
        match groups
            .delete(&group_name, &DeleteParams::background())
            .await
        {
            Ok(_) => deleted.push(group_name),
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                return Err(anyhow!(e).context(format!("deleting OperatorGroup {ns}/{group_name}")));
            }
        }
    }
    Ok(Some(deleted))
}

/// Deletes the Subscription `ns/name` and the CSVs `csvs` (a missing one is fine). What an OLM
/// v1 revision controls stays (the garbage collector only drops the CSV's reference); the rest
/// of theirs goes with them.
pub(super) async fn delete_v0(
    client: &kube::Client,
    ns: &str,
    name: &str,
    csvs: &[String],
    ce: &str,
) -> anyhow::Result<()> {
    let gone = |r: Result<(), kube::Error>, what: String| match r {
        Ok(()) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(anyhow!(e).context(what)),
    };
    let subs: Api<Subscription> = Api::namespaced(client.clone(), ns);
    gone(
        subs.delete(name, &DeleteParams::background())
            .await
            .map(drop),
        format!("deleting Subscription {ns}/{name}"),
    )?;
    let api: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), ns);
    // The objects the revision took over no longer name the CSVs about to go: left to the
    // garbage collector, a reference it failed to drop would make the object collectable the
    // moment the revision lets go of it (a rollback).
    let mut uids = BTreeSet::new();
    for csv in csvs.iter().filter(|c| !c.is_empty()) {
        if let Some(uid) = api.get_opt(csv).await?.and_then(|c| c.metadata.uid) {
            uids.insert(uid);
        }
    }
    if !uids.is_empty() {
        let (revisions, _) = crate::client::extension::revisions_with_objects(client, ce).await?;
        release(client, &handover::laid_out(&revisions), &uids, false).await?;
    }
    for csv in csvs.iter().filter(|c| !c.is_empty()) {
        gone(
            api.delete(csv, &DeleteParams::background()).await.map(drop),
            format!("deleting ClusterServiceVersion {ns}/{csv}"),
        )?;
    }
    Ok(())
}

/// Removes from each of `objects` its owner references to `owners` and, with `dangling_csvs`,
/// to OLM v0 ClusterServiceVersions that no longer exist (a move deleted them); each patch is
/// conditioned on the resourceVersion read, and a conflict reads again. Returns how many
/// objects changed; one that is gone needs nothing.
///
/// Why olm does this rather than the garbage collector: see
/// `olm_migrate::handover::released_owner_references`.
pub(super) async fn release(
    client: &kube::Client,
    objects: &[handover::LaidOut],
    owners: &BTreeSet<String>,
    dangling_csvs: bool,
) -> anyhow::Result<usize> {
    let mut live_csvs: BTreeMap<(String, String), Option<String>> = BTreeMap::new();
    // One discovery per kind and namespace, not per object.
    let mut apis: BTreeMap<KindIn<'_>, Option<Api<kube::api::DynamicObject>>> = BTreeMap::new();
    let mut changed = 0;
    for o in objects {
        let key = (
            o.api_version.as_str(),
            o.kind.as_str(),
            o.namespace.as_deref(),
        );
        let api = match apis.get(&key) {
            Some(api) => api.clone(),
            None => {
                let api = dynamic_api(client, o).await?;
                apis.insert(key, api.clone());
                api
            }
        };
        let Some(api) = api else {
            continue;
        };
        let mut attempts = 0;
        loop {
            let Some(meta) = api.get_metadata_opt(&o.name).await? else {
                break;
            };
            let mut drop = owners.clone();
            if dangling_csvs && let Some(ns) = &o.namespace {
                for r in meta.owner_references() {
                    if r.kind != "ClusterServiceVersion" {
                        continue;
                    }
                    let key = (ns.clone(), r.name.clone());
                    if !live_csvs.contains_key(&key) {
                        let csvs: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), ns);
                        let uid = csvs.get_opt(&r.name).await?.and_then(|c| c.metadata.uid);
                        live_csvs.insert(key.clone(), uid);
                    }
                    if live_csvs[&key].as_deref() != Some(r.uid.as_str()) {
                        drop.insert(r.uid.clone());
                    }
                }
            }
            let references: Vec<serde_json::Value> = meta
                .owner_references()
                .iter()
                .map(serde_json::to_value)
                .collect::<Result<_, _>>()?;
            let Some(kept) = handover::released_owner_references(&references, &drop) else {
                break;
            };
            let patch = json!({"metadata": {
                "ownerReferences": kept,
                "resourceVersion": meta.metadata.resource_version,
            }});
            match api
                .patch(&o.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => {
                    changed += 1;
                    break;
                }
                Err(kube::Error::Api(s)) if s.code == 404 => break,
                Err(kube::Error::Api(s)) if s.code == 409 && attempts < 5 => attempts += 1,
                Err(e) => {
                    return Err(anyhow!(e).context(format!(
                        "releasing {} {} from its former owners",
                        o.kind, o.name
                    )));
                }
            }
        }
    }
    Ok(changed)
}

/// An object kind (`apiVersion`, `kind`) in a namespace (`None`: cluster-scoped).
type KindIn<'a> = (&'a str, &'a str, Option<&'a str>);

/// The API of the object `o` names; `None` when its kind is not served (so it cannot exist).
pub(super) async fn dynamic_api(
    client: &kube::Client,
    o: &handover::LaidOut,
) -> anyhow::Result<Option<Api<kube::api::DynamicObject>>> {
    crate::client::dynamic_api(client, &o.api_version, &o.kind, o.namespace.as_deref())
        .await
        .with_context(|| format!("discovering {} {}", o.api_version, o.kind))
}

/// How many objects the extension's revisions hold (their phases' objects), as a figure for
/// the user: the ones taken over in place and those OLM v1 lays out anew.
async fn revision_objects(client: &kube::Client, ce: &str) -> anyhow::Result<usize> {
    let revisions: Api<ClusterObjectSet> = Api::all(client.clone());
    let selector = format!("{}={ce}", olm_k8s::OWNER_NAME_LABEL);
    let listed = revisions
        .list(&ListParams::default().labels(&selector))
        .await?;
    Ok(listed
        .items
        .iter()
        .flat_map(|r| &r.spec.phases)
        .map(|p| p.objects.len())
        .sum())
}

/// `--dry-run`: the extension and what would happen.
fn dry_run(
    args: &MoveArgs,
    ns: &str,
    name: &str,
    csv: &str,
    mapped: &mapping::Mapped,
    sub: &Subscription,
) -> anyhow::Result<ExitCode> {
    let automatic = !mapping::manual(sub);
    let steps = vec![
        format!(
            "mark Subscription {ns}/{name} and ClusterServiceVersion {ns}/{csv} as moving (OLM v0 stands aside)"
        ),
        format!(
            "create ClusterExtension {} taking over the CSV's objects in place",
            mapped.extension.name_any()
        ),
        format!(
            "delete Subscription {ns}/{name}, ClusterServiceVersion {ns}/{csv} (with its copies and OLM v0's own RBAC) and the InstallPlans that installed it, once it is installed{}",
            match (&args.backup, args.delete_operatorgroup) {
                (Some(dir), true) => format!(
                    " and no other Subscription needs it, the OperatorGroup too; first back them up under {}",
                    dir.display()
                ),
                (Some(dir), false) => format!("; first back them up under {}", dir.display()),
                (None, true) =>
                    ", and the OperatorGroup when no other Subscription needs it".to_owned(),
                (None, false) => String::new(),
            }
        ),
        if automatic {
            "unpin the version so that the extension follows its channel".to_owned()
        } else {
            "keep the version pinned (the Subscription approved upgrades by hand)".to_owned()
        },
    ];
    if args.output == Output::Json {
        println!(
            "{}",
            record(
                "dry-run",
                "convert",
                Some(&format!("{ns}/{name}")),
                json!({"cluster_extension": mapped.extension, "steps": steps,
                    "warnings": mapped.warnings})
            )
        );
    } else {
        println!("# ClusterExtension that would be created:");
        crate::client::print_as(&mapped.extension, crate::output::JsonOrYaml::Yaml)?;
        eprintln!("What would happen:");
        for s in &steps {
            eprintln!("  - {s}");
        }
        eprintln!("No cluster resources were modified (dry run).");
    }
    Ok(ExitCode::SUCCESS)
}
