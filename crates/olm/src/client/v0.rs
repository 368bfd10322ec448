//! `olm v0 …`: OLM v0 from the client, as kubectl-operator's v0 commands drive it — packages
//! read from the PackageManifest API, installs as an OperatorGroup and a Subscription (a Manual
//! plan approved for the version asked for), upgrades by approving the next plan, removal of the
//! Subscription and its CSV. What is shown and created is decided by the pure functions here
//! from the objects; the commands fetch, write and follow on watches.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use futures::StreamExt;
use kube::ResourceExt;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use olm_goenc::quote;
use serde_json::{Value, json};

use super::{Conn, print_as, readable};
use crate::output::JsonOrYaml;

/// The PackageManifest API (`packages.operators.coreos.com/v1`).
fn packagemanifests() -> ApiResource {
    ApiResource {
        group: "packages.operators.coreos.com".into(),
        version: "v1".into(),
        api_version: olm_v0::packageserver::packagemanifest::API_VERSION.into(),
        kind: "PackageManifest".into(),
        plural: "packagemanifests".into(),
    }
}

/// An OLM v0 kind of `operators.coreos.com`.
fn operators(version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "operators.coreos.com".into(),
        version: version.into(),
        api_version: format!("operators.coreos.com/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn subscriptions() -> ApiResource {
    operators("v1alpha1", "Subscription", "subscriptions")
}

fn csvs() -> ApiResource {
    operators(
        "v1alpha1",
        "ClusterServiceVersion",
        "clusterserviceversions",
    )
}

fn installplans() -> ApiResource {
    operators("v1alpha1", "InstallPlan", "installplans")
}

fn operatorgroups() -> ApiResource {
    operators("v1", "OperatorGroup", "operatorgroups")
}

/// OLM v0: packages, Subscriptions and their CSVs.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Packages the namespace's CatalogSources offer (PackageManifests), or one package's
    /// channels and versions.
    Search(SearchArgs),
    /// Subscribe a namespace to a package and follow the install to its CSV.
    Install(InstallArgs),
    /// Move a subscription to another channel, or approve its pending upgrade.
    Upgrade(UpgradeArgs),
    /// Subscriptions, their installed CSVs and phases.
    List(ListArgs),
    /// Remove a package: its Subscription and CSV.
    Uninstall(UninstallArgs),
    /// The custom resources of the CRDs an installed operator owns, in the namespaces its
    /// OperatorGroup targets.
    ListOperands(ListOperandsArgs),
    /// A package as a catalog offers it: display name, version and provider, repository,
    /// catalog, channels, install modes and description.
    Describe(DescribeArgs),
}

/// `olm v0 describe`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm v0 describe etcd -n operators
  olm v0 describe etcd -n operators -C alpha -L")]
pub struct DescribeArgs {
    /// The package.
    package: String,
    #[arg(short, long, default_value = "default")]
    namespace: String,
    /// The channel to show (default: the package's default channel).
    #[arg(short = 'C', long)]
    channel: Option<String>,
    /// Also print the long description.
    #[arg(short = 'L', long)]
    with_long_description: bool,
    #[command(flatten)]
    conn: Conn,
}

/// `olm v0 list-operands`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm v0 list-operands etcd -n operators
  olm v0 list-operands etcd -n operators -o yaml")]
pub struct ListOperandsArgs {
    /// The operator (its package name).
    package: String,
    #[arg(short, long, default_value = "default")]
    namespace: String,
    /// Output format (default: a table).
    #[arg(short, long, value_enum)]
    output: Option<JsonOrYaml>,
    #[command(flatten)]
    conn: Conn,
}

/// `olm v0 search`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm v0 search -n operators
  olm v0 search etcd -n operators     one package's channels and versions")]
pub struct SearchArgs {
    /// One package: its channels and versions (default: every package, one line each).
    package: Option<String>,
    /// The namespace whose CatalogSources (and the global ones) are read.
    #[arg(short, long, default_value = "default")]
    namespace: String,
    /// Output format (default: a table).
    #[arg(short, long, value_enum)]
    output: Option<JsonOrYaml>,
    #[command(flatten)]
    conn: Conn,
}

/// `olm v0 install`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm v0 install etcd -n operators --create-operator-group
  olm v0 install etcd -n operators -c stable --version 0.9.2 --approval Manual")]
pub struct InstallArgs {
    /// The package.
    package: String,
    /// The namespace to install into.
    #[arg(short, long, default_value = "default")]
    namespace: String,
    /// The channel (default: the package's default channel).
    #[arg(short, long)]
    channel: Option<String>,
    /// The version to start from (its CSV becomes the Subscription's startingCSV; default: the
    /// channel's head).
    #[arg(short, long)]
    version: Option<String>,
    /// Automatic installs upgrades as they come; Manual waits for approval (`olm v0 upgrade`).
    #[arg(long, value_enum, default_value = "Automatic")]
    approval: Approval,
    /// Create an OperatorGroup when the namespace has none (targeting all namespaces when the
    /// operator supports it, else the namespace).
    #[arg(long)]
    create_operator_group: bool,
    /// How long to wait for the CSV to succeed (Go duration).
    #[arg(long, default_value = "5m", value_parser = crate::catalogd::parse_duration)]
    timeout: Duration,
    #[command(flatten)]
    conn: Conn,
}

/// `installPlanApproval`, as spelled in the API.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
#[value(rename_all = "verbatim")]
enum Approval {
    Automatic,
    Manual,
}

/// `olm v0 upgrade`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm v0 upgrade etcd -n operators              approve the pending upgrade
  olm v0 upgrade etcd -n operators -c alpha     move to another channel")]
pub struct UpgradeArgs {
    /// The Subscription (by package name).
    package: String,
    #[arg(short, long, default_value = "default")]
    namespace: String,
    /// A new channel.
    #[arg(short, long)]
    channel: Option<String>,
    /// How long to wait for the new CSV to succeed (Go duration).
    #[arg(long, default_value = "5m", value_parser = crate::catalogd::parse_duration)]
    timeout: Duration,
    #[command(flatten)]
    conn: Conn,
}

/// `olm v0 list`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm v0 list -n operators  as kubectl operator list
  olm v0 list -A            every namespace")]
pub struct ListArgs {
    #[arg(short, long, default_value = "default")]
    namespace: String,
    /// Every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    #[command(flatten)]
    conn: Conn,
}

/// `olm v0 uninstall`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm v0 uninstall etcd -n operators                           as kubectl operator uninstall
  olm v0 uninstall etcd -n operators --delete-operator-groups  the OperatorGroup too, once no Subscription is left")]
pub struct UninstallArgs {
    /// The Subscription (by package name).
    package: String,
    #[arg(short, long, default_value = "default")]
    namespace: String,
    /// Also delete the namespace's OperatorGroups when no other Subscription is left there.
    #[arg(long)]
    delete_operator_groups: bool,
    #[command(flatten)]
    conn: Conn,
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    let rt = crate::runtime()?;
    // kubectl-operator's prefixes for the commands that change something.
    match cmd {
        Command::Search(a) => rt.block_on(search(a)),
        Command::Install(a) => rt
            .block_on(install(a))
            .context("failed to install operator"),
        Command::Upgrade(a) => rt
            .block_on(upgrade(a))
            .context("failed to upgrade operator"),
        Command::List(a) => rt.block_on(list(a)),
        Command::Describe(a) => rt.block_on(describe(a)),
        Command::Uninstall(a) => rt.block_on(uninstall(a)).context("uninstall operator"),
        Command::ListOperands(a) => rt.block_on(list_operands(a)).context("list operands"),
    }
    .map_err(readable)
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// `olm v0 search`: one row per package.
fn package_rows(manifests: &[Value]) -> Vec<Vec<String>> {
    let mut rows = vec![
        [
            "PACKAGE",
            "CATALOG",
            "DISPLAY NAME",
            "PROVIDER",
            "DEFAULT CHANNEL",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    let mut sorted: Vec<&Value> = manifests.iter().collect();
    sorted.sort_by_key(|m| (text(m, "/metadata/name"), text(m, "/status/catalogSource")));
    for m in sorted {
        let default = text(m, "/status/defaultChannel");
        let display = channel(m, default)
            .map(|c| text(c, "/currentCSVDesc/displayName"))
            .unwrap_or("");
        rows.push(vec![
            text(m, "/metadata/name").to_owned(),
            text(m, "/status/catalogSource").to_owned(),
            display.to_owned(),
            text(m, "/status/provider/name").to_owned(),
            default.to_owned(),
        ]);
    }
    rows
}

/// `olm v0 search PKG`: one row per version of each channel, the default channel first.
fn version_rows(m: &Value) -> Vec<Vec<String>> {
    let mut rows = vec![
        ["PACKAGE", "CHANNEL", "VERSION", "CSV", "HEAD"]
            .map(str::to_owned)
            .to_vec(),
    ];
    let default = text(m, "/status/defaultChannel");
    let mut channels: Vec<&Value> = m
        .pointer("/status/channels")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    channels.sort_by(|a, b| {
        (text(a, "/name") != default)
            .cmp(&(text(b, "/name") != default))
            .then_with(|| olm_catalog::order::natural(text(a, "/name"), text(b, "/name")))
    });
    for c in channels {
        let head = text(c, "/currentCSV");
        let entries: Vec<(&str, &str)> = match c.get("entries").and_then(Value::as_array) {
            Some(e) if !e.is_empty() => e
                .iter()
                .map(|e| (text(e, "/name"), text(e, "/version")))
                .collect(),
            _ => vec![(head, text(c, "/currentCSVDesc/version"))],
        };
        for (csv, version) in entries {
            rows.push(vec![
                text(m, "/metadata/name").to_owned(),
                text(c, "/name").to_owned(),
                version.to_owned(),
                csv.to_owned(),
                if csv == head { "*" } else { "" }.to_owned(),
            ]);
        }
    }
    rows
}

/// A channel of a PackageManifest.
fn channel<'a>(m: &'a Value, name: &str) -> Option<&'a Value> {
    m.pointer("/status/channels")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| text(c, "/name") == name)
}

/// kubectl-operator's `describe` of a PackageManifest: `== Title ==` sections separated by a
/// blank line, for `channel` (the default one when `None`); with `long`, the first channel's
/// long description at the end, as the plugin prints it whatever the channel.
fn describe_text(m: &Value, channel_arg: Option<&str>, long: bool) -> Result<String, String> {
    let package = text(m, "/metadata/name");
    let default = text(m, "/status/defaultChannel");
    let shown = channel_arg.unwrap_or(default);
    let ch = channel(m, shown).ok_or_else(|| {
        format!(
            "channel {} does not exist for package {}",
            quote(shown),
            quote(package)
        )
    })?;
    let desc = &ch["currentCSVDesc"];
    let mut modes: Vec<&str> = desc["installModes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["supported"] == true)
        .map(|m| text(m, "/type"))
        .collect();
    modes.sort_unstable();
    let channels: Vec<String> = m
        .pointer("/status/channels")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let name = text(c, "/name");
            let mut line = name.to_owned();
            if name == default {
                line.push_str(" (default)");
            }
            if name == shown {
                line.push_str(" (shown)");
            }
            line
        })
        .collect();
    let mut sections = vec![
        (
            "Package",
            format!(
                "{} {} (by {})",
                text(desc, "/displayName"),
                text(desc, "/version"),
                text(desc, "/provider/name")
            ),
        ),
        (
            "Repository",
            text(desc, "/annotations/repository").to_owned(),
        ),
        (
            "Catalog",
            text(m, "/status/catalogSourceDisplayName").to_owned(),
        ),
        ("Channels", channels.join("\n")),
        ("Install Modes", modes.join("\n")),
        (
            "Description",
            text(desc, "/annotations/description").to_owned(),
        ),
    ];
    if long {
        let first = m
            .pointer("/status/channels/0/currentCSVDesc/description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        sections.push(("Long Description", first.to_owned()));
    }
    // A body ends its section with one line end (a long description usually has its own).
    Ok(sections
        .iter()
        .map(|(title, body)| {
            let end = if body.ends_with('\n') { "" } else { "\n" };
            format!("== {title} ==\n{body}{end}")
        })
        .collect::<Vec<_>>()
        .join("\n"))
}

async fn describe(args: DescribeArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let api: Api<DynamicObject> =
        Api::namespaced_with(client, &args.namespace, &packagemanifests());
    let manifest = api.get_opt(&args.package).await?.ok_or_else(|| {
        anyhow!(
            "package {} is not offered to namespace {} (`olm v0 search -n {}` lists what is)",
            quote(&args.package),
            quote(&args.namespace),
            args.namespace
        )
    })?;
    let text = describe_text(
        &serde_json::to_value(manifest)?,
        args.channel.as_deref(),
        args.with_long_description,
    )
    .map_err(|e| anyhow!(e))?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// What `olm v0 install` subscribes to: channel, the CSV to start from (when a version is
/// asked for) and the head's install modes; or why the package cannot give it.
#[derive(Debug, PartialEq)]
struct Choice {
    channel: String,
    starting_csv: Option<String>,
    own_namespace: bool,
}

fn choose(m: &Value, channel_arg: Option<&str>, version: Option<&str>) -> Result<Choice, String> {
    let package = text(m, "/metadata/name");
    let name = channel_arg.unwrap_or(text(m, "/status/defaultChannel"));
    let Some(c) = channel(m, name) else {
        let all: Vec<&str> = m
            .pointer("/status/channels")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| text(c, "/name"))
            .collect();
        return Err(format!(
            "channel {} does not exist for package {} (its channels: {})",
            quote(name),
            quote(package),
            all.join(", ")
        ));
    };
    let starting_csv = match version {
        None => None,
        Some(v) => {
            let found = c
                .get("entries")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|e| text(e, "/version") == v)
                .map(|e| text(e, "/name").to_owned())
                .or_else(|| {
                    (text(c, "/currentCSVDesc/version") == v)
                        .then(|| text(c, "/currentCSV").to_owned())
                });
            Some(found.ok_or_else(|| {
                format!(
                    "version {} not found in channel {} (`olm v0 search {package}` lists them)",
                    quote(v),
                    quote(name)
                )
            })?)
        }
    };
    let supports = |mode: &str| {
        c.pointer("/currentCSVDesc/installModes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|m| text(m, "/type") == mode && m["supported"] == true)
    };
    // kubectl-operator's choice: every namespace when the operator supports it, else its own.
    let own_namespace = !supports("AllNamespaces") && supports("OwnNamespace");
    Ok(Choice {
        channel: name.to_owned(),
        starting_csv,
        own_namespace,
    })
}

/// The Subscription `olm v0 install` creates (named after the package, as kubectl-operator
/// names it).
fn subscription(m: &Value, namespace: &str, choice: &Choice, approval: Approval) -> Value {
    let package = text(m, "/metadata/name");
    let mut spec = json!({
        "name": package,
        "channel": choice.channel,
        "source": text(m, "/status/catalogSource"),
        "sourceNamespace": text(m, "/status/catalogSourceNamespace"),
        "installPlanApproval": match approval { Approval::Automatic => "Automatic", Approval::Manual => "Manual" },
    });
    if let Some(csv) = &choice.starting_csv {
        spec["startingCSV"] = json!(csv);
    }
    json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": package, "namespace": namespace}, "spec": spec})
}

/// The OperatorGroup `--create-operator-group` makes: every namespace when the operator supports
/// AllNamespaces, else the namespace alone (kubectl-operator's rule).
fn operator_group(namespace: &str, own_namespace: bool) -> Value {
    let mut spec = json!({});
    if own_namespace {
        spec["targetNamespaces"] = json!([namespace]);
    }
    json!({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": namespace, "namespace": namespace}, "spec": spec})
}

async fn search(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let api: Api<DynamicObject> =
        Api::namespaced_with(client, &args.namespace, &packagemanifests());
    let manifests: Vec<Value> = match &args.package {
        Some(p) => vec![serde_json::to_value(api.get_opt(p).await?.ok_or_else(|| {
            anyhow!(
                "package {} is not offered to namespace {} (`olm v0 search -n {}` lists what is)",
                quote(p),
                quote(&args.namespace),
                args.namespace
            )
        })?)?],
        None => api
            .list(&ListParams::default())
            .await
            .context("listing PackageManifests (does OLM v0 run? `olm run` serves them)")?
            .items
            .into_iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()?,
    };
    if let Some(format) = args.output {
        print_as(&manifests, format)?;
    } else if manifests.is_empty() {
        println!("No resources found");
    } else if args.package.is_some() {
        crate::output::print_table(&version_rows(&manifests[0]))?;
    } else {
        crate::output::print_table(&package_rows(&manifests))?;
    }
    Ok(ExitCode::SUCCESS)
}

async fn install(args: InstallArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let ns = &args.namespace;
    let manifests: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), ns, &packagemanifests());
    let m = serde_json::to_value(manifests.get_opt(&args.package).await?.ok_or_else(|| {
        anyhow!(
            "package {} is not offered to namespace {} (`olm v0 search -n {ns}` lists what is)",
            quote(&args.package),
            quote(ns)
        )
    })?)?;
    let choice =
        choose(&m, args.channel.as_deref(), args.version.as_deref()).map_err(|e| anyhow!(e))?;
    let groups: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &operatorgroups());
    if groups.list(&ListParams::default()).await?.items.is_empty() {
        if !args.create_operator_group {
            bail!(
                "namespace {} has no existing operator group; use --create-operator-group to create one automatically",
                quote(ns)
            );
        }
        let og: DynamicObject = serde_json::from_value(operator_group(ns, choice.own_namespace))?;
        groups
            .create(&PostParams::default(), &og)
            .await
            .context("creating the OperatorGroup")?;
        eprintln!("operatorgroup {} created", quote(ns));
        eprintln!(
            "  {}",
            if choice.own_namespace {
                "targeting its own namespace"
            } else {
                "targeting all namespaces"
            }
        );
    }
    let subs: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &subscriptions());
    let sub: DynamicObject = serde_json::from_value(subscription(&m, ns, &choice, args.approval))?;
    match subs.create(&PostParams::default(), &sub).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => bail!(
            "subscription {} already exists in namespace {} (`olm v0 upgrade {}` changes it)",
            quote(&args.package),
            quote(ns),
            args.package
        ),
        Err(e) => return Err(anyhow!(e).context("creating the Subscription")),
    }
    eprintln!("subscription {} created", quote(&args.package));
    eprintln!(
        "  channel {}, from catalog {}",
        quote(&choice.channel),
        quote(text(&m, "/status/catalogSource"))
    );
    let want = choice.starting_csv.clone();
    let csv = tokio::time::timeout(
        args.timeout,
        follow(&client, ns, &args.package, want.as_deref()),
    )
    .await
    .map_err(|_| {
        anyhow!(
            "not installed after {:?} (`kubectl -n {ns} describe subscription {}` shows why)",
            args.timeout,
            args.package
        )
    })??;
    println!(
        "operator {} installed; installed csv is {}",
        quote(&args.package),
        quote(&csv)
    );
    Ok(ExitCode::SUCCESS)
}

/// Follows a Subscription to a succeeded CSV: approves the pending plan when it installs `want`
/// (a Manual install of the version asked for) or, with `want` unset, whatever plan is
/// pending; returns the CSV's name, or the reason it failed.
async fn follow(
    client: &kube::Client,
    ns: &str,
    name: &str,
    want: Option<&str>,
) -> anyhow::Result<String> {
    let subs: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &subscriptions());
    let plans: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &installplans());
    let csvs: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &csvs());
    // Woken by the Subscription's changes and by the namespace's CSVs' (a CSV succeeds after
    // the Subscription's last change); the Subscription is read again at each.
    let sub_events = kube::runtime::watcher::watch_object(subs.clone(), name).map(|_| ());
    let csv_events =
        kube::runtime::watcher::watcher(csvs.clone(), kube::runtime::watcher::Config::default())
            .map(|_| ());
    let events = futures::stream::select(sub_events, csv_events);
    futures::pin_mut!(events);
    while events.next().await.is_some() {
        let Some(sub) = subs
            .get_opt(name)
            .await
            .context("reading the Subscription")?
        else {
            bail!("subscription {} was deleted", quote(name));
        };
        let sub = serde_json::to_value(sub)?;
        let state = text(&sub, "/status/state");
        if state == "UpgradePending"
            && let Some(plan) = sub
                .pointer("/status/installPlanRef/name")
                .and_then(Value::as_str)
            && let Some(p) = plans.get_opt(plan).await?
        {
            let p = serde_json::to_value(p)?;
            let names: Vec<&str> = p
                .pointer("/spec/clusterServiceVersionNames")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if p["spec"]["approved"] != true && want.is_none_or(|w| names.contains(&w)) {
                plans
                    .patch(
                        plan,
                        &PatchParams::default(),
                        &Patch::Merge(&json!({"spec": {"approved": true}})),
                    )
                    .await
                    .context("approving the InstallPlan")?;
                eprintln!(
                    "installplan {} approved ({})",
                    quote(plan),
                    names.join(", ")
                );
            }
        }
        let installed = text(&sub, "/status/installedCSV");
        if !installed.is_empty()
            && want.is_none_or(|w| w == installed)
            && let Some(csv) = csvs.get_opt(installed).await?
        {
            let csv = serde_json::to_value(csv)?;
            match text(&csv, "/status/phase") {
                "Succeeded" => return Ok(installed.to_owned()),
                "Failed" => bail!(
                    "csv {installed} failed: {}: {}",
                    text(&csv, "/status/reason"),
                    text(&csv, "/status/message")
                ),
                _ => {}
            }
        }
    }
    bail!("the watch of subscription {} ended", quote(name))
}

async fn upgrade(args: UpgradeArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let ns = &args.namespace;
    let subs: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &subscriptions());
    let before = subs.get_opt(&args.package).await?.ok_or_else(|| {
        anyhow!(
            "subscription {} not found in namespace {}",
            quote(&args.package),
            quote(ns)
        )
    })?;
    let before = serde_json::to_value(before)?;
    if let Some(c) = &args.channel {
        subs.patch(
            &args.package,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"channel": c}})),
        )
        .await
        .context("changing the channel")?;
        eprintln!(
            "subscription {} moved to channel {}",
            quote(&args.package),
            quote(c)
        );
    } else if text(&before, "/status/state") != "UpgradePending" {
        // kubectl-operator's words; olm asks the Subscription's state rather than comparing
        // installedCSV with currentCSV, which says the same once OLM v0 has caught up.
        bail!("operator is already at latest version");
    }
    let from = text(&before, "/status/installedCSV").to_owned();
    let follow_new = async {
        loop {
            let csv = follow(&client, ns, &args.package, None).await?;
            if csv != from || args.channel.is_some() {
                return anyhow::Ok(csv);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let csv = tokio::time::timeout(args.timeout, follow_new)
        .await
        .map_err(|_| {
            anyhow!(
                "not upgraded after {:?} (`kubectl -n {ns} describe subscription {}` shows why)",
                args.timeout,
                args.package
            )
        })??;
    println!(
        "operator {} upgraded; installed csv is {}",
        quote(&args.package),
        quote(&csv)
    );
    Ok(ExitCode::SUCCESS)
}

/// `olm v0 list`: one row per Subscription, with its CSV's phase.
fn list_rows(
    subs: &[Value],
    phases: &std::collections::BTreeMap<(String, String), String>,
    now: jiff::Timestamp,
) -> Vec<Vec<String>> {
    let mut rows = vec![
        [
            "PACKAGE",
            "NAMESPACE",
            "CHANNEL",
            "INSTALLED CSV",
            "PHASE",
            "STATE",
            "AGE",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for s in subs {
        let ns = text(s, "/metadata/namespace").to_owned();
        let csv = text(s, "/status/installedCSV").to_owned();
        let age = text(s, "/metadata/creationTimestamp")
            .parse::<jiff::Timestamp>()
            .map(|t| super::view::human_age(now, t))
            .unwrap_or_default();
        rows.push(vec![
            text(s, "/spec/name").to_owned(),
            ns.clone(),
            text(s, "/spec/channel").to_owned(),
            csv.clone(),
            phases.get(&(ns, csv)).cloned().unwrap_or_default(),
            text(s, "/status/state").to_owned(),
            age,
        ]);
    }
    rows
}

async fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let (subs_api, csvs_api): (Api<DynamicObject>, Api<DynamicObject>) = if args.all_namespaces {
        (
            Api::all_with(client.clone(), &subscriptions()),
            Api::all_with(client.clone(), &csvs()),
        )
    } else {
        (
            Api::namespaced_with(client.clone(), &args.namespace, &subscriptions()),
            Api::namespaced_with(client.clone(), &args.namespace, &csvs()),
        )
    };
    let mut subs: Vec<Value> = subs_api
        .list(&ListParams::default())
        .await
        .context("listing Subscriptions")?
        .items
        .into_iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    if subs.is_empty() {
        println!("No resources found");
        return Ok(ExitCode::SUCCESS);
    }
    subs.sort_by(|a, b| {
        (text(a, "/metadata/namespace"), text(a, "/metadata/name"))
            .cmp(&(text(b, "/metadata/namespace"), text(b, "/metadata/name")))
    });
    let phases = csvs_api
        .list(&ListParams::default())
        .await
        .context("listing ClusterServiceVersions")?
        .items
        .into_iter()
        .map(|c| {
            let v = serde_json::to_value(&c).unwrap_or_default();
            (
                (c.namespace().unwrap_or_default(), c.name_any()),
                text(&v, "/status/phase").to_owned(),
            )
        })
        .collect();
    crate::output::print_table(&list_rows(&subs, &phases, jiff::Timestamp::now()))?;
    Ok(ExitCode::SUCCESS)
}

/// What `list-operands` lists: each owned CRD (`name`, described `version`) and the
/// OperatorGroup's target namespaces (empty or `[""]`: all).
#[derive(Debug, PartialEq)]
struct OperandQuery {
    crds: Vec<(String, String)>,
    targets: Vec<String>,
}

/// The Operator `<package>.<namespace>`'s CSV reference, as kubectl-operator finds it: the first
/// component ref of kind ClusterServiceVersion, as `(namespace, name)`.
fn operator_csv(operator: &Value) -> Result<(String, String), String> {
    let name = text(operator, "/metadata/name");
    let Some(refs) = operator.pointer("/status/components") else {
        return Err(format!(
            "could not find underlying components for operator {name}"
        ));
    };
    refs.pointer("/refs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|r| text(r, "/kind") == "ClusterServiceVersion")
        .map(|r| {
            (
                text(r, "/namespace").to_owned(),
                text(r, "/name").to_owned(),
            )
        })
        .ok_or_else(|| format!("could not find underlying CSV for operator {name}"))
}

/// kubectl-operator's checks of the CSV and the namespace's OperatorGroups, in its order and
/// words, and what to list when they pass.
fn operand_query(csv: &Value, groups: &[Value]) -> Result<OperandQuery, String> {
    let at = format!(
        "{}/{}",
        text(csv, "/metadata/namespace"),
        text(csv, "/metadata/name")
    );
    let owned = csv
        .pointer("/spec/customresourcedefinitions/owned")
        .and_then(Value::as_array)
        .filter(|o| !o.is_empty())
        .ok_or_else(|| {
            format!(
                "no owned CustomResourceDefinitions specified on CSV {at}, no custom resources to display"
            )
        })?;
    if text(csv, "/status/phase") != "Succeeded" {
        return Err(
            "CSV underlying operator is not in a succeeded state: custom resource list may not be accurate"
                .to_owned(),
        );
    }
    let [group] = groups else {
        return Err(format!(
            "unexpected number ({}) of operator groups found in namespace {}",
            groups.len(),
            text(csv, "/metadata/namespace")
        ));
    };
    let targets = group
        .pointer("/status/namespaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    Ok(OperandQuery {
        crds: owned
            .iter()
            .map(|d| (text(d, "/name").to_owned(), text(d, "/version").to_owned()))
            .collect(),
        targets,
    })
}

/// Whether an operand in `namespace` (empty: cluster-scoped) is one the operator watches.
fn watched(namespace: &str, targets: &[String]) -> bool {
    targets.is_empty()
        || namespace.is_empty()
        || targets.iter().any(|t| t.is_empty() || t == namespace)
}

/// Operands sorted as kubectl-operator sorts them: apiVersion, kind, namespace, name.
fn sort_operands(items: &mut [Value]) {
    let key = |v: &Value| {
        [
            "/apiVersion",
            "/kind",
            "/metadata/namespace",
            "/metadata/name",
        ]
        .map(|p| text(v, p).to_owned())
    };
    items.sort_by_key(key);
}

fn operand_rows(items: &[Value], now: jiff::Timestamp) -> Vec<Vec<String>> {
    let mut rows = vec![
        ["APIVERSION", "KIND", "NAMESPACE", "NAME", "AGE"]
            .map(str::to_owned)
            .to_vec(),
    ];
    for i in items {
        let age = text(i, "/metadata/creationTimestamp")
            .parse::<jiff::Timestamp>()
            .map(|t| super::view::human_age(now, t))
            .unwrap_or_default();
        rows.push(vec![
            text(i, "/apiVersion").to_owned(),
            text(i, "/kind").to_owned(),
            text(i, "/metadata/namespace").to_owned(),
            text(i, "/metadata/name").to_owned(),
            age,
        ]);
    }
    rows
}

async fn list_operands(args: ListOperandsArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let ns = &args.namespace;
    let operators_api: Api<DynamicObject> =
        Api::all_with(client.clone(), &operators("v1", "Operator", "operators"));
    let operator = operators_api
        .get_opt(&format!("{}.{ns}", args.package))
        .await?
        .ok_or_else(|| {
            anyhow!(
                "package {} not found in namespace {}",
                quote(&args.package),
                quote(ns)
            )
        })?;
    let (csv_ns, csv_name) =
        operator_csv(&serde_json::to_value(operator)?).map_err(|e| anyhow!(e))?;
    let csv = Api::<DynamicObject>::namespaced_with(client.clone(), &csv_ns, &csvs())
        .get(&csv_name)
        .await
        .with_context(|| format!("could not get {csv_ns}/{csv_name} CSV on cluster"))?;
    let groups: Vec<Value> =
        Api::<DynamicObject>::namespaced_with(client.clone(), ns, &operatorgroups())
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .map(serde_json::to_value)
            .collect::<Result<_, _>>()?;
    let query = operand_query(&serde_json::to_value(csv)?, &groups).map_err(|e| anyhow!(e))?;
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    let mut items = Vec::new();
    for (name, version) in &query.crds {
        let crd = crds
            .get(name)
            .await
            .with_context(|| format!("get crd {}", quote(name)))?;
        let resource = ApiResource {
            group: crd.spec.group.clone(),
            version: version.clone(),
            api_version: if crd.spec.group.is_empty() {
                version.clone()
            } else {
                format!("{}/{version}", crd.spec.group)
            },
            kind: crd.spec.names.kind.clone(),
            plural: crd.spec.names.plural.clone(),
        };
        for item in Api::<DynamicObject>::all_with(client.clone(), &resource)
            .list(&ListParams::default())
            .await?
            .items
        {
            if watched(&item.namespace().unwrap_or_default(), &query.targets) {
                let mut v = serde_json::to_value(item)?;
                v["apiVersion"] = json!(resource.api_version);
                v["kind"] = json!(resource.kind);
                items.push(v);
            }
        }
    }
    sort_operands(&mut items);
    match args.output {
        Some(format) => print_as(
            &json!({"apiVersion": "v1", "kind": "List", "items": items}),
            format,
        )?,
        None if items.is_empty() => println!("No resources found"),
        None => crate::output::print_table(&operand_rows(&items, jiff::Timestamp::now()))?,
    }
    Ok(ExitCode::SUCCESS)
}

async fn uninstall(args: UninstallArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let ns = &args.namespace;
    let subs: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &subscriptions());
    let sub = subs.get_opt(&args.package).await?.ok_or_else(|| {
        anyhow!(
            "subscription {} not found in namespace {}",
            quote(&args.package),
            quote(ns)
        )
    })?;
    let sub = serde_json::to_value(sub)?;
    subs.delete(&args.package, &DeleteParams::default())
        .await
        .context("deleting the Subscription")?;
    let csv = text(&sub, "/status/installedCSV");
    if !csv.is_empty() {
        let csvs: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &csvs());
        match csvs.delete(csv, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(anyhow!(e).context(format!("deleting csv {csv}"))),
        }
    }
    println!("subscription {} deleted", quote(&args.package));
    if csv.is_empty() {
        println!("csv for package {} not found", quote(&args.package));
    } else {
        println!("clusterserviceversion {} deleted", quote(csv));
        eprintln!("its CRDs and their objects stay (OLM v0 never deletes CRDs)");
    }
    let others = subs.list(&ListParams::default()).await?.items.len();
    let groups: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &operatorgroups());
    let names: Vec<String> = groups
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .map(|g| g.name_any())
        .collect();
    match (args.delete_operator_groups, others) {
        (true, 0) => {
            for g in &names {
                groups
                    .delete(g, &DeleteParams::default())
                    .await
                    .context("deleting the OperatorGroup")?;
                println!("operatorgroup {} deleted", quote(g));
            }
        }
        (true, n) => eprintln!(
            "left the OperatorGroups in place: {n} other subscription(s) use the namespace"
        ),
        (false, _) if !names.is_empty() => eprintln!(
            "left operatorgroup(s) {} in place (--delete-operator-groups removes them)",
            names.join(", ")
        ),
        _ => {}
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Value {
        json!({"metadata": {"name": "etcd", "namespace": "ops"},
            "status": {"catalogSource": "community", "catalogSourceNamespace": "olm",
                "provider": {"name": "CoreOS"}, "defaultChannel": "stable",
                "channels": [
                    {"name": "alpha", "currentCSV": "etcd.v0.10.0",
                     "currentCSVDesc": {"displayName": "etcd", "version": "0.10.0", "installModes": []},
                     "entries": [{"name": "etcd.v0.10.0", "version": "0.10.0"}]},
                    {"name": "stable", "currentCSV": "etcd.v0.9.4",
                     "currentCSVDesc": {"displayName": "etcd", "version": "0.9.4",
                        "installModes": [{"type": "OwnNamespace", "supported": true}]},
                     "entries": [{"name": "etcd.v0.9.4", "version": "0.9.4"}, {"name": "etcd.v0.9.2", "version": "0.9.2"}]}]}})
    }

    /// kubectl-operator v0.6.0 `pkg/action/operator_list_operands.go`: its checks, in order,
    /// with its words, and its namespace filter.
    #[test]
    fn list_operands_checks_as_kubectl_operator_does() {
        let op = |status: Value| json!({"metadata": {"name": "etcd.ops"}, "status": status});
        assert_eq!(
            operator_csv(&op(json!({}))),
            Err("could not find underlying components for operator etcd.ops".to_owned())
        );
        assert_eq!(
            operator_csv(&op(json!({"components": {"refs": [
                {"kind": "Deployment", "name": "etcd", "namespace": "ops"}]}}))),
            Err("could not find underlying CSV for operator etcd.ops".to_owned())
        );
        assert_eq!(
            operator_csv(&op(json!({"components": {"refs": [
                {"kind": "CustomResourceDefinition", "name": "etcdclusters.etcd.database.coreos.com"},
                {"kind": "ClusterServiceVersion", "name": "etcd.v0.9.4", "namespace": "ops"}]}}))),
            Ok(("ops".to_owned(), "etcd.v0.9.4".to_owned()))
        );

        let csv = |owned: Value, phase: &str| {
            json!({"metadata": {"name": "etcd.v0.9.4", "namespace": "ops"},
                "spec": {"customresourcedefinitions": {"owned": owned}},
                "status": {"phase": phase}})
        };
        let owned = json!([{"name": "etcdclusters.etcd.database.coreos.com", "version": "v1beta2",
            "kind": "EtcdCluster"}]);
        let group = |namespaces: Value| json!({"status": {"namespaces": namespaces}});
        assert_eq!(
            operand_query(&csv(json!([]), "Succeeded"), &[group(json!([""]))]),
            Err("no owned CustomResourceDefinitions specified on CSV ops/etcd.v0.9.4, no custom resources to display".to_owned())
        );
        assert_eq!(
            operand_query(&csv(owned.clone(), "Installing"), &[group(json!([""]))]),
            Err("CSV underlying operator is not in a succeeded state: custom resource list may not be accurate".to_owned())
        );
        assert_eq!(
            operand_query(&csv(owned.clone(), "Succeeded"), &[]),
            Err("unexpected number (0) of operator groups found in namespace ops".to_owned())
        );
        assert_eq!(
            operand_query(&csv(owned, "Succeeded"), &[group(json!(["ops", "apps"]))]),
            Ok(OperandQuery {
                crds: vec![(
                    "etcdclusters.etcd.database.coreos.com".to_owned(),
                    "v1beta2".to_owned()
                )],
                targets: vec!["ops".to_owned(), "apps".to_owned()],
            })
        );

        let targets = ["ops".to_owned(), "apps".to_owned()];
        assert!(watched("apps", &targets));
        assert!(watched("", &targets), "cluster-scoped operands are listed");
        assert!(!watched("other", &targets));
        assert!(watched("other", &[]));
        assert!(watched("other", &[String::new()]));

        let mut items = vec![
            json!({"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdCluster",
                "metadata": {"name": "b", "namespace": "ops"}}),
            json!({"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdBackup",
                "metadata": {"name": "z", "namespace": "ops"}}),
            json!({"apiVersion": "etcd.database.coreos.com/v1beta2", "kind": "EtcdCluster",
                "metadata": {"name": "a", "namespace": "apps"}}),
        ];
        sort_operands(&mut items);
        let rows = operand_rows(&items, jiff::Timestamp::UNIX_EPOCH);
        let names: Vec<(&str, &str)> = rows[1..]
            .iter()
            .map(|r| (r[1].as_str(), r[3].as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("EtcdBackup", "z"),
                ("EtcdCluster", "a"),
                ("EtcdCluster", "b")
            ]
        );
        assert_eq!(rows[0], ["APIVERSION", "KIND", "NAMESPACE", "NAME", "AGE"]);
    }

    /// kubectl-operator v0.6.0 `internal/cmd/operator_describe.go`: the sections, their order
    /// and layout, the channel markers, sorted install modes, and `-L` printing the first
    /// channel's long description.
    #[test]
    fn describe_prints_the_plugins_sections() {
        let m = json!({"metadata": {"name": "etcd"}, "status": {
            "catalogSourceDisplayName": "Community", "defaultChannel": "stable",
            "channels": [
                {"name": "alpha", "currentCSVDesc": {"displayName": "etcd", "version": "0.9.4",
                    "description": "alpha long\n", "provider": {"name": "CoreOS"},
                    "annotations": {"repository": "https://example.com/etcd", "description": "short"},
                    "installModes": [{"type": "OwnNamespace", "supported": true},
                        {"type": "AllNamespaces", "supported": true},
                        {"type": "MultiNamespace", "supported": false}]}},
                {"name": "stable", "currentCSVDesc": {"displayName": "etcd", "version": "0.9.2",
                    "description": "stable long", "provider": {"name": "CoreOS"},
                    "annotations": {"description": "short stable"},
                    "installModes": [{"type": "AllNamespaces", "supported": true}]}}]}});
        assert_eq!(
            describe_text(&m, None, false).unwrap(),
            "== Package ==\netcd 0.9.2 (by CoreOS)\n\n== Repository ==\n\n\n== Catalog ==\nCommunity\n\n== Channels ==\nalpha\nstable (default) (shown)\n\n== Install Modes ==\nAllNamespaces\n\n== Description ==\nshort stable\n"
        );
        let alpha = describe_text(&m, Some("alpha"), true).unwrap();
        assert!(
            alpha.starts_with("== Package ==\netcd 0.9.4 (by CoreOS)\n\n== Repository ==\nhttps://example.com/etcd\n"),
            "{alpha}"
        );
        assert!(
            alpha.contains("== Channels ==\nalpha (shown)\nstable (default)\n"),
            "{alpha}"
        );
        assert!(
            alpha.contains("== Install Modes ==\nAllNamespaces\nOwnNamespace\n"),
            "{alpha}"
        );
        assert!(
            alpha.ends_with("== Long Description ==\nalpha long\n"),
            "{alpha}"
        );
        assert_eq!(
            describe_text(&m, Some("beta"), false),
            Err("channel \"beta\" does not exist for package \"etcd\"".to_owned())
        );
    }

    #[test]
    fn rows_as_a_user_reads_them() {
        let m = manifest();
        assert_eq!(
            package_rows(std::slice::from_ref(&m))[1],
            ["etcd", "community", "etcd", "CoreOS", "stable"]
        );
        let v = version_rows(&m);
        assert_eq!(v[1], ["etcd", "stable", "0.9.4", "etcd.v0.9.4", "*"]);
        assert_eq!(v[2], ["etcd", "stable", "0.9.2", "etcd.v0.9.2", ""]);
        assert_eq!(v[3], ["etcd", "alpha", "0.10.0", "etcd.v0.10.0", "*"]);
    }

    /// kubectl-operator's `install`: default channel, a version becomes startingCSV, the
    /// OperatorGroup targets the namespace when OwnNamespace is supported.
    #[test]
    fn install_subscribes_as_kubectl_operator_does() {
        let m = manifest();
        let c = choose(&m, None, Some("0.9.2")).expect("a choice");
        assert_eq!(
            c,
            Choice {
                channel: "stable".into(),
                starting_csv: Some("etcd.v0.9.2".into()),
                own_namespace: true
            }
        );
        assert_eq!(
            subscription(&m, "ops", &c, Approval::Manual)["spec"],
            json!({"name": "etcd", "channel": "stable", "source": "community", "sourceNamespace": "olm",
                "installPlanApproval": "Manual", "startingCSV": "etcd.v0.9.2"})
        );
        assert_eq!(
            operator_group("ops", true)["spec"],
            json!({"targetNamespaces": ["ops"]})
        );
        assert_eq!(operator_group("ops", false)["spec"], json!({}));
        let alpha = choose(&m, Some("alpha"), None).expect("alpha");
        assert!(!alpha.own_namespace && alpha.starting_csv.is_none());
        assert!(
            choose(&m, Some("beta"), None)
                .expect_err("no beta")
                .starts_with("channel \"beta\" does not exist for package \"etcd\"")
        );
        assert!(
            choose(&m, None, Some("9.9.9"))
                .expect_err("no such version")
                .starts_with("version \"9.9.9\" not found in channel \"stable\"")
        );
    }

    #[test]
    fn list_rows_join_subscriptions_with_their_csvs() {
        let subs = vec![json!({"metadata": {"name": "etcd", "namespace": "ops"},
            "spec": {"name": "etcd", "channel": "stable"},
            "status": {"installedCSV": "etcd.v0.9.4", "state": "AtLatestKnown"}})];
        let phases = [(
            ("ops".to_owned(), "etcd.v0.9.4".to_owned()),
            "Succeeded".to_owned(),
        )]
        .into();
        let rows = list_rows(&subs, &phases, jiff::Timestamp::now());
        assert_eq!(
            rows[1][..6],
            [
                "etcd",
                "ops",
                "stable",
                "etcd.v0.9.4",
                "Succeeded",
                "AtLatestKnown"
            ]
        );
    }
}
