//! `olm install`, `olm upgrade`, `olm uninstall`, `olm list` and `olm describe`: ClusterExtensions
//! for people.

use std::collections::BTreeMap;
use std::io::IsTerminal as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use futures::StreamExt as _;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use olm_api::{ClusterCatalog, ClusterExtension, ClusterObjectSet};
use olm_goenc::quote;
use olm_resolve::{ContentIndex, Installed, Skipped};
use serde_json::{Value, json};

use super::view::{self, Progress};
use super::{Conn, content, list_catalogs, print_as, rbac, readable};
use crate::catalogd::parse_duration;
use crate::output::JsonOrYaml;

/// Field owner of what the client writes.
const FIELD_MANAGER: &str = "olm";

/// The CSV annotation naming the namespace an operator wants to be installed into.
const SUGGESTED_NAMESPACE: &str = "operatorframework.io/suggested-namespace";

/// Install a package from the cluster's catalogs and follow it until it is installed.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm install cert-manager --create-service-account
  olm install argocd-operator -c alpha -v 0.6.x -n argocd --create-namespace
  olm install etcd --catalog operatorhubio --config 'watchNamespace: apps'
  olm install etcd --dry-run -o yaml     print the ClusterExtension, create nothing")]
pub struct InstallArgs {
    /// The package to install.
    package: String,
    /// Name of the ClusterExtension (default: the package name).
    #[arg(long)]
    name: Option<String>,
    /// Version range to install from (e.g. "1.2.x", ">=1.0.0 <2.0.0").
    #[arg(short, long)]
    version: Option<String>,
    /// Channel to install from; repeat for several (default: the package's default channel).
    #[arg(short, long = "channel")]
    channels: Vec<String>,
    /// Namespace to install into (default: the bundle's suggested namespace, else the package
    /// name).
    #[arg(short, long)]
    namespace: Option<String>,
    /// ServiceAccount OLM installs as (its RBAC bounds what the bundle may create); default:
    /// `<name>-installer` with --create-service-account, else OLM's own identity.
    #[arg(short = 's', long)]
    service_account: Option<String>,
    /// Create the namespace when it is missing.
    #[arg(long)]
    create_namespace: bool,
    /// Create the namespace, the ServiceAccount and exactly the RBAC installing the resolved
    /// bundle needs (pulls and renders the bundle here first).
    #[arg(long)]
    create_service_account: bool,
    /// The extension's configuration: a YAML or JSON object inline (`--config 'watchNamespace:
    /// ops'`) or from a file (`--config @FILE`).
    #[arg(long)]
    config: Option<String>,
    /// Only this ClusterCatalog (settles a package served by several catalogs at one priority).
    #[arg(long, conflicts_with = "catalog_selector")]
    catalog: Option<String>,
    /// Only the ClusterCatalogs whose labels match (kubectl's selector syntax: `k=v`, `k in (a,b)`,
    /// `!k`, …).
    #[arg(long)]
    catalog_selector: Option<String>,
    /// Whether the catalog's upgrade edges are enforced (CatalogProvided) or any newer version
    /// may follow (SelfCertified).
    #[arg(long, value_enum)]
    upgrade_constraint_policy: Option<ConstraintPolicy>,
    /// Whether CRD upgrades are checked for safety before they are applied.
    #[arg(long, value_enum)]
    crd_upgrade_safety_enforcement: Option<SafetyEnforcement>,
    /// Resolve and print the ClusterExtension that would be created (-o yaml|json), creating
    /// nothing.
    #[arg(long)]
    dry_run: bool,
    /// With --dry-run: the output format (default: yaml).
    #[arg(short, long, value_enum, requires = "dry_run")]
    output: Option<JsonOrYaml>,
    #[command(flatten)]
    follow: Follow,
    #[command(flatten)]
    conn: Conn,
}

/// `spec.source.catalog.upgradeConstraintPolicy`, as spelled in the API.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
#[value(rename_all = "verbatim")]
enum ConstraintPolicy {
    CatalogProvided,
    SelfCertified,
}

/// `spec.install.preflight.crdUpgradeSafety.enforcement`, as spelled in the API.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
#[value(rename_all = "verbatim")]
enum SafetyEnforcement {
    Strict,
    None,
}

/// The label every ClusterCatalog carries with its own name (set by OLM's admission webhook).
const CATALOG_NAME_LABEL: &str = "olm.operatorframework.io/metadata.name";

/// `spec.source.catalog.selector` from `--catalog` or `--catalog-selector`.
fn catalog_selector(args: &InstallArgs) -> anyhow::Result<Option<Value>> {
    if let Some(name) = &args.catalog {
        return Ok(Some(json!({"matchLabels": {CATALOG_NAME_LABEL: name}})));
    }
    let Some(text) = &args.catalog_selector else {
        return Ok(None);
    };
    let sel = olm_k8s::LabelSelector::parse(text)
        .and_then(|s| s.validate().map(|()| s))
        .map_err(|e| anyhow!("--catalog-selector {}: {e}", quote(text)))?;
    let mut out = serde_json::Map::new();
    if !sel.match_labels.is_empty() {
        out.insert("matchLabels".into(), json!(sel.match_labels));
    }
    if !sel.match_expressions.is_empty() {
        let exprs: Vec<Value> = sel
            .match_expressions
            .iter()
            .map(|r| {
                let mut e = json!({"key": r.key, "operator": r.operator.to_string()});
                if !r.values.is_empty() {
                    e["values"] = json!(r.values);
                }
                e
            })
            .collect();
        out.insert("matchExpressions".into(), json!(exprs));
    }
    Ok(Some(Value::Object(out)))
}

/// Whether and how long a change is followed.
#[derive(clap::Args, Debug)]
struct Follow {
    /// How long to wait until the extension is installed (Go duration).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    timeout: Duration,
    /// Make the change and return without waiting.
    #[arg(long)]
    no_wait: bool,
}

/// Change an installed extension's version range, channels or configuration, and follow it.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm upgrade cert-manager -v 1.15.x
  olm upgrade argocd -c alpha -c beta
  olm upgrade argocd -v \"\"            remove the version range
  olm upgrade etcd --merge-config 'watchNamespace: ops'")]
pub struct UpgradeArgs {
    /// The ClusterExtension.
    name: String,
    /// New version range ("" removes the range: any version of the channels).
    #[arg(short, long)]
    version: Option<String>,
    /// New channels (repeat; replaces the current ones; `-c ""` removes them: every channel).
    #[arg(short, long = "channel")]
    channels: Vec<String>,
    /// New configuration, replacing the current one: a YAML or JSON object inline or @FILE.
    #[arg(long, conflicts_with = "merge_config")]
    config: Option<String>,
    /// Configuration merged into the current one (keys given replace theirs, `key: null`
    /// removes one): a YAML or JSON object inline or @FILE.
    #[arg(long)]
    merge_config: Option<String>,
    #[command(flatten)]
    follow: Follow,
    #[command(flatten)]
    conn: Conn,
}

/// Remove an extension: what it installed goes with it, its CRDs and their objects included.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm uninstall cert-manager
  olm uninstall cert-manager --delete-namespace   also the namespace install created
  olm uninstall --all")]
pub struct UninstallArgs {
    /// The ClusterExtension.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    name: Option<String>,
    /// Every ClusterExtension on the cluster, one after another.
    #[arg(long)]
    all: bool,
    /// Also delete the namespace, when `olm install` created it for this extension and no
    /// other extension installs into it.
    #[arg(long)]
    delete_namespace: bool,
    /// How long to wait for each to be gone (Go duration).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    timeout: Duration,
    #[command(flatten)]
    conn: Conn,
}

/// The label on a namespace `olm install` created, naming the extension it was created for.
const NAMESPACE_FOR_LABEL: &str = "olm.operatorframework.io/namespace-for";

/// List installed extensions with their bundle, conditions and the upgrade the catalogs offer.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm list
  olm list -o wide      with each extension's latest progress message
  olm list -o name
  olm list -o yaml")]
pub struct ListArgs {
    /// Output format: a table (default), wide (the table with each extension's latest
    /// progress message), name, json or yaml.
    #[arg(short, long, value_enum)]
    output: Option<ListFormat>,
    #[command(flatten)]
    conn: Conn,
}

/// `olm list -o`, as kubectl spells its formats.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum ListFormat {
    Wide,
    Name,
    Json,
    Yaml,
}

/// Show one extension: spec, conditions, revisions and their objects, and why it is not
/// progressing.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm describe cert-manager")]
pub struct DescribeArgs {
    /// The ClusterExtension.
    name: String,
    /// Print the object instead (JSON or YAML).
    #[arg(short, long, value_enum)]
    output: Option<JsonOrYaml>,
    #[command(flatten)]
    conn: Conn,
}

/// Reads `--config` (inline or `@FILE`, [`crate::sources::inline_or_file`]): a YAML or JSON
/// object.
fn read_config(value: &str) -> anyhow::Result<serde_json::Map<String, Value>> {
    let (text, origin) = crate::sources::inline_or_file(value)?;
    match olm_goenc::yamlread::parse_document_with(&text, &Default::default())
        .map_err(|e| anyhow!("--config ({origin}): {e}"))?
    {
        Value::Object(m) => Ok(m),
        Value::String(s) if !value.starts_with('@') && Path::new(&s).is_file() => bail!(
            "--config {}: the configuration must be an object; to read the file {s}, write --config @{s}",
            quote(value)
        ),
        other => bail!(
            "--config ({origin}): the configuration must be an object, not {}",
            match other {
                Value::Null => "empty",
                Value::Array(_) => "a list",
                _ => "a scalar",
            }
        ),
    }
}

/// The ClusterExtension `olm install` creates.
fn extension_object(
    name: &str,
    args: &InstallArgs,
    namespace: &str,
    service_account: Option<&str>,
    config: Option<serde_json::Map<String, Value>>,
    selector: Option<&Value>,
) -> Value {
    let mut catalog = json!({"packageName": args.package});
    if let Some(v) = args.version.as_deref().filter(|v| !v.is_empty()) {
        catalog["version"] = json!(v);
    }
    if !args.channels.is_empty() {
        catalog["channels"] = json!(args.channels);
    }
    if let Some(selector) = selector {
        catalog["selector"] = selector.clone();
    }
    if let Some(policy) = args.upgrade_constraint_policy {
        catalog["upgradeConstraintPolicy"] = json!(match policy {
            ConstraintPolicy::CatalogProvided => "CatalogProvided",
            ConstraintPolicy::SelfCertified => "SelfCertified",
        });
    }
    let mut spec = json!({
        "namespace": namespace,
        "source": {"sourceType": "Catalog", "catalog": catalog},
    });
    if let Some(enforcement) = args.crd_upgrade_safety_enforcement {
        spec["install"] = json!({"preflight": {"crdUpgradeSafety": {"enforcement": match enforcement {
            SafetyEnforcement::Strict => "Strict",
            SafetyEnforcement::None => "None",
        }}}});
    }
    if let Some(sa) = service_account {
        spec["serviceAccount"] = json!({"name": sa});
    }
    if let Some(config) = config {
        spec["config"] = json!({"configType": "Inline", "inline": config});
    }
    json!({
        "apiVersion": "olm.operatorframework.io/v1",
        "kind": "ClusterExtension",
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// What the catalogs would give an extension now.
struct Preview {
    bundle: String,
    version: String,
    image: String,
    catalog: String,
    suggested_namespace: Option<String>,
    /// Selected catalogs resolution went on without because they serve nothing.
    skipped: Vec<Skipped>,
}

/// Resolves `ext` against the catalogs' content of its package, as the controller will: the
/// content of each selected catalog that serves is read, the others are skipped by the same
/// rule ([`olm_extension::request::served`]) and named as the controller's status names them.
async fn preview(
    client: &kube::Client,
    catalogs: &[ClusterCatalog],
    ext: &ClusterExtension,
    installed: Option<Installed>,
    loaded: &mut BTreeMap<(String, String), (olm_catalog::Catalog, ContentIndex)>,
) -> anyhow::Result<Preview> {
    let request = olm_extension::request::request_of(ext, installed).map_err(|e| anyhow!(e))?;
    let package = request.package.as_str().to_owned();
    for cat in catalogs {
        let read = olm_extension::request::served(cat).is_ok()
            && request
                .selector
                .matches(&olm_extension::request::labels_of(cat));
        let key = (cat.name_any(), package.clone());
        if read && let std::collections::btree_map::Entry::Vacant(slot) = loaded.entry(key) {
            let content = content::content(client, cat, Some(&package)).await?;
            let index = ContentIndex::new(&content);
            slot.insert((content, index));
        }
    }
    let inputs: Vec<_> = catalogs
        .iter()
        .map(|c| {
            let index = loaded.get(&(c.name_any(), package.clone())).map(|(_, i)| i);
            olm_extension::request::catalog_input(c, index)
        })
        .collect();
    let r = olm_resolve::resolve(&inputs, &request, None).map_err(|f| anyhow!(f.message()))?;
    let suggested_namespace = loaded
        .get(&(r.catalog.clone(), package))
        .and_then(|(cat, _)| cat.bundles().find(|b| b.name == r.bundle))
        .and_then(olm_catalog::Bundle::csv_metadata_or_object)
        .and_then(|m| {
            m.pointer(&format!(
                "/annotations/{}",
                SUGGESTED_NAMESPACE.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
        });
    Ok(Preview {
        bundle: r.bundle.to_string(),
        version: r.version.legacy_version_string(),
        image: r.image,
        catalog: r.catalog,
        suggested_namespace,
        skipped: r.skipped,
    })
}

/// Server-side applies `obj` (any kind the API server serves).
async fn apply(client: &kube::Client, obj: &Value) -> anyhow::Result<()> {
    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
    let kind = obj["kind"].as_str().unwrap_or_default();
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let api = super::dynamic_api(
        client,
        api_version,
        kind,
        obj["metadata"]["namespace"].as_str(),
    )
    .await?
    .ok_or_else(|| anyhow!("the API server does not serve {api_version} {kind}"))?;
    let dynamic: DynamicObject = serde_json::from_value(obj.clone())?;
    api.patch(
        name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&dynamic),
    )
    .await
    .with_context(|| format!("creating {kind} {}", quote(name)))?;
    Ok(())
}

/// Pulls and renders the bundle `image` for `namespace`, and creates the ServiceAccount `sa`
/// with the RBAC installing it needs.
async fn create_service_account(
    client: &kube::Client,
    ext: &str,
    namespace: &str,
    sa: &str,
    image: &str,
    config: Option<&serde_json::Map<String, Value>>,
) -> anyhow::Result<usize> {
    let rules = installer_rules(client, ext, namespace, sa, image, config).await?;
    for obj in &rbac::objects(ext, namespace, sa, &rules) {
        apply(client, obj).await?;
    }
    Ok(rules.iter().map(|s| s.missing_rules.len()).sum())
}

/// Pulls and renders the bundle `image` for `namespace`, and works out every rule the
/// ServiceAccount `sa` needs to install it as extension `ext`.
async fn installer_rules(
    client: &kube::Client,
    ext: &str,
    namespace: &str,
    sa: &str,
    image: &str,
    config: Option<&serde_json::Map<String, Value>>,
) -> anyhow::Result<Vec<olm_security::permissions::ScopedPolicyRules>> {
    let objects = rendered_bundle(namespace, image, config).await?;
    olm_cluster::permissions::required_rules(client, namespace, sa, &objects, &installer_extra(ext))
        .await
        .map_err(|e| anyhow!("working out the permissions bundle {image} needs: {e}"))
}

/// What the installer account needs besides the bundle's objects: setting the finalizers of
/// the extension that owns them.
fn installer_extra(ext: &str) -> [olm_security::permissions::Request; 1] {
    [olm_security::permissions::owner_finalizers(
        "clusterextensions",
        ext,
    )]
}

/// Whether the user's ServiceAccount `sa` may install bundle `image` as extension `ext`,
/// checked as the controller's preflight will check it. `Ok(Err(why))` when it may not;
/// `Err` when it could not be checked from here (the bundle unreachable from this machine,
/// RBAC the user may not list): the controller still checks, and following reports it.
async fn account_may_install(
    client: &kube::Client,
    ext: &str,
    namespace: &str,
    sa: &str,
    image: &str,
    config: Option<&serde_json::Map<String, Value>>,
) -> anyhow::Result<Result<(), String>> {
    use olm_cluster::permissions::{PreflightError, check_account};
    let objects = rendered_bundle(namespace, image, config).await?;
    match check_account(client, namespace, sa, &objects, &installer_extra(ext)).await {
        Ok(()) => Ok(Ok(())),
        Err(e @ (PreflightError::Denied(_) | PreflightError::ServiceAccountNotFound { .. })) => {
            Ok(Err(e.to_string()))
        }
        Err(e) => Err(anyhow!(e)),
    }
}

/// Pulls bundle `image` and renders it for `namespace` with `config`, as the controller will.
async fn rendered_bundle(
    namespace: &str,
    image: &str,
    config: Option<&serde_json::Map<String, Value>>,
) -> anyhow::Result<Vec<Value>> {
    let reference: olm_image::ImageRef = image.parse()?;
    let tmp = tempfile::tempdir().context("creating a temporary directory")?;
    let dest = tmp.path().join("bundle");
    let images = olm_image::Client::new(olm_image::ClientOptions {
        auth: olm_image::AuthConfig::load_default()?,
        limits: crate::limits::from_env()?,
        ..olm_image::ClientOptions::default()
    });
    images
        .pull_to_dir(
            &reference,
            &dest,
            &olm_image::Filter::All,
            olm_image::Expect::Bundle,
        )
        .await
        .with_context(|| format!("pulling bundle {image}"))?;
    let bundle = olm_bundle::Bundle::from_dir(&dest).map_err(|e| anyhow!("bundle {image}: {e}"))?;
    let config = config.map(|c| Value::Object(c.clone()).to_string());
    let objects = olm_bundle::render_bundle(
        &bundle,
        namespace,
        config.as_deref(),
        Some(olm_bundle::CertProvider::Builtin),
    )
    .map_err(|e| anyhow!("rendering bundle {image}: {e}"))?;
    Ok(objects)
}

/// The installer ServiceAccount of `ext` when `olm install --create-service-account` made it:
/// the extension installs as `<name>-installer`, and that account carries the installer label
/// naming the extension. An account someone else made is theirs to grant.
async fn own_installer(
    client: &kube::Client,
    ext: &ClusterExtension,
) -> anyhow::Result<Option<String>> {
    let name = ext.name_any();
    let sa = rbac::installer_name(&name);
    if ext.spec.service_account.as_ref().map(|s| s.name.as_str()) != Some(sa.as_str()) {
        return Ok(None);
    }
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &ext.spec.namespace);
    let ours = accounts
        .get_metadata_opt(&sa)
        .await?
        .is_some_and(|a| a.labels().get(rbac::INSTALLER_FOR_LABEL) == Some(&name));
    Ok(ours.then_some(sa))
}

/// RFC 7386: `patch` merged into `target` (`null` removes a member).
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(members) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    if let Value::Object(t) = target {
        for (key, value) in members {
            if value.is_null() {
                t.remove(key);
            } else {
                merge_patch(t.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

/// Widens the installer account `sa` that `olm install --create-service-account` made for `ext`
/// to what the bundle `patch` makes it resolve to needs (with the configuration it will have),
/// keeping what it held: it was given exactly what the installed bundle needed, and OLM refuses
/// a bundle its account cannot install (`pre-authorization failed`) — a new version that brings
/// a webhook needs Services and webhook configurations, for one. Returns how many rules were
/// added.
///
/// Errors: the change resolves to no bundle (what the controller would say too), the bundle
/// cannot be pulled or rendered, the roles cannot be read or written.
async fn widen_installer(
    client: &kube::Client,
    ext: &ClusterExtension,
    draft: &Value,
    found: &Preview,
    sa: &str,
) -> anyhow::Result<usize> {
    let name = ext.name_any();
    let config = draft
        .pointer("/spec/config/inline")
        .and_then(Value::as_object)
        .cloned();
    let namespace = &ext.spec.namespace;
    let needed =
        installer_rules(client, &name, namespace, sa, &found.image, config.as_ref()).await?;
    let held = held_rules(client, &name).await?;
    let (widened, added) = rbac::widen(&held, &needed);
    if added > 0 {
        for obj in &rbac::objects(&name, namespace, sa, &widened) {
            apply(client, obj).await?;
        }
    }
    Ok(added)
}

/// The bundle `ext` has installed, as the resolver takes it (upgrade edges start there).
fn installed_of(ext: &ClusterExtension) -> Option<Installed> {
    ext.status
        .as_ref()
        .and_then(|s| s.install.as_ref())
        .map(|i| Installed {
            name: olm_catalog::BundleName::new(i.bundle.name.clone()),
            version: i.bundle.version.clone(),
            release: i.bundle.release.clone(),
        })
}

/// `--version` as the API server would admit it (the CRD's own check, with its words), so a
/// range it would refuse fails before anything is resolved or written.
fn check_version_flag(version: Option<&str>) -> anyhow::Result<()> {
    match version.filter(|v| !v.is_empty()) {
        Some(v) => olm_version::crd::check_version_range(v).map_err(|e| {
            anyhow!(
                "--version {}: {e} (the range syntax: docs/versions.md)",
                quote(v)
            )
        }),
        None => Ok(()),
    }
}

/// The rules the installer roles of `ext` hold now, by scope.
async fn held_rules(
    client: &kube::Client,
    ext: &str,
) -> anyhow::Result<Vec<olm_security::permissions::ScopedPolicyRules>> {
    let role_name = rbac::installer_name(ext);
    let mut held = Vec::new();
    let cluster_roles: Api<ClusterRole> = Api::all(client.clone());
    if let Some(role) = cluster_roles.get_opt(&role_name).await? {
        held.push(olm_security::permissions::ScopedPolicyRules {
            namespace: String::new(),
            missing_rules: role.rules.unwrap_or_default(),
        });
    }
    let roles: Api<Role> = Api::all(client.clone());
    for role in roles.list(&installer_selector(ext)).await?.items {
        if role.name_any() == role_name {
            held.push(olm_security::permissions::ScopedPolicyRules {
                namespace: role.namespace().unwrap_or_default(),
                missing_rules: role.rules.unwrap_or_default(),
            });
        }
    }
    Ok(held)
}

/// Shows where `ext` stands while following it: a spinner on a terminal, else one line per
/// change on stderr.
struct Display {
    bar: Option<indicatif::ProgressBar>,
    last: String,
}

impl Display {
    fn new(name: &str) -> Display {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new_spinner();
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{spinner} {prefix}: {msg} ({elapsed})")
            {
                bar.set_style(style);
            }
            bar.set_prefix(format!("extension {}", quote(name)));
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        Display {
            bar,
            last: String::new(),
        }
    }

    fn show(&mut self, what: &str) {
        if what == self.last {
            return;
        }
        what.clone_into(&mut self.last);
        match &self.bar {
            Some(bar) => bar.set_message(what.lines().next().unwrap_or_default().to_owned()),
            None => eprintln!("{what}"),
        }
    }

    fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Follows `name` on a watch until it is installed, stuck, deleted, or `timeout` passes.
pub(crate) async fn follow(
    api: &Api<ClusterExtension>,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<Progress> {
    let mut display = Display::new(name);
    let mut last = Progress::Working(String::new());
    let watched = async {
        let stream = kube::runtime::watcher::watch_object(api.clone(), name);
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(Some(ext)) => {
                    last = view::progress(&ext);
                    match &last {
                        Progress::Working(what) => display.show(what),
                        Progress::Done { .. } | Progress::Stuck { .. } => return Ok(()),
                    }
                }
                Ok(None) => bail!("extension {} was deleted", quote(name)),
                Err(e) => tracing::warn!(extension = %name, error = %e, "watching the extension"),
            }
        }
        Ok(())
    };
    let outcome = tokio::time::timeout(timeout, watched).await;
    display.finish();
    match outcome {
        Ok(Ok(())) => Ok(last),
        Ok(Err(e)) => Err(e),
        Err(_) => Ok(match last {
            Progress::Working(what) if what == view::WAITING_FOR_OLM => Progress::Stuck {
                reason: format!("no status after {timeout:?}"),
                message: "OLM has not looked at the extension".into(),
                advice: "is OLM running on the cluster? `kubectl -n olmv1-system get deployments,pods` shows it; `olm install-olm` installs it".into(),
            },
            Progress::Working(what) => Progress::Stuck {
                reason: format!("not done after {timeout:?}"),
                advice: match what.split_once(": ") {
                    Some((reason, message)) => view::advice(reason, message, name, ""),
                    None => format!("`olm describe {name}` shows the conditions and revisions"),
                },
                message: what,
            },
            done => done,
        }),
    }
}

/// Reports how following ended.
fn report(name: &str, verb: &str, progress: Progress) -> anyhow::Result<ExitCode> {
    match progress {
        Progress::Done { bundle, version } => {
            println!(
                "extension {} {verb}: bundle {bundle} (version {version})",
                quote(name)
            );
            Ok(ExitCode::SUCCESS)
        }
        Progress::Stuck {
            reason,
            message,
            advice,
        } => Err(anyhow!(
            "extension {} was not {verb}: {reason}: {message}\nWhat to do: {advice}",
            quote(name)
        )),
        Progress::Working(what) => Err(anyhow!("extension {}: {what}", quote(name))),
    }
}

pub fn install(args: InstallArgs) -> anyhow::Result<ExitCode> {
    crate::runtime()?
        .block_on(install_on(args))
        .map_err(readable)
}

async fn install_on(args: InstallArgs) -> anyhow::Result<ExitCode> {
    check_version_flag(args.version.as_deref())?;
    let client = args.conn.client().await?;
    let name = args.name.clone().unwrap_or_else(|| args.package.clone());
    if let Some(e) = olm_k8s::dns1123_subdomain_errors(&name).first() {
        bail!("invalid extension name {}: {e}", quote(&name));
    }
    let config = args.config.as_deref().map(read_config).transpose()?;
    let selector = catalog_selector(&args)?;
    let catalogs = list_catalogs(&client, None).await?;
    // What the catalogs offer now: the namespace default and the RBAC come from that bundle.
    let draft: ClusterExtension = serde_json::from_value(extension_object(
        &name,
        &args,
        "default",
        None,
        config.clone(),
        selector.as_ref(),
    ))?;
    let mut loaded = BTreeMap::new();
    let found = preview(&client, &catalogs, &draft, None, &mut loaded)
        .await
        .map_err(|e| {
            let what_to_do = if e
                .to_string()
                .contains("in multiple catalogs with the same priority")
            {
                "choose one catalog with --catalog NAME (or several with --catalog-selector)"
                    .to_owned()
            } else {
                format!(
                    "see which channels and versions the catalogs offer with `olm search {}`",
                    args.package
                )
            };
            anyhow!(
                "failed to install extension {}: {e}\nWhat to do: {what_to_do}",
                quote(&name)
            )
        })?;
    let namespace = args
        .namespace
        .clone()
        .or(found.suggested_namespace.clone())
        .unwrap_or_else(|| args.package.clone());
    eprintln!(
        "resolved {} (version {}) from catalog {}; installing into namespace {}",
        found.bundle,
        found.version,
        quote(&found.catalog),
        quote(&namespace)
    );
    for s in &found.skipped {
        eprintln!("note: {s}");
    }
    let service_account = match (&args.service_account, args.create_service_account) {
        (Some(sa), _) => Some(sa.clone()),
        (None, true) => Some(rbac::installer_name(&name)),
        (None, false) => None,
    };
    let object = extension_object(
        &name,
        &args,
        &namespace,
        service_account.as_deref(),
        config.clone(),
        selector.as_ref(),
    );
    if args.dry_run {
        print_as(&object, args.output.unwrap_or(JsonOrYaml::Yaml))?;
        eprintln!("dry run: nothing was created");
        return Ok(ExitCode::SUCCESS);
    }
    // What will not fix itself is checked before anything is created: a missing namespace or
    // ServiceAccount would only have the controller retry until the user acts.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace_exists = namespaces.get_metadata_opt(&namespace).await?.is_some();
    if !namespace_exists && !args.create_namespace && !args.create_service_account {
        bail!(
            "failed to install extension {}: namespace {} does not exist\nWhat to do: create it (`kubectl create namespace {namespace}`), add --create-namespace, or choose another with --namespace",
            quote(&name),
            quote(&namespace)
        );
    }
    if let Some(sa) = args
        .service_account
        .as_deref()
        .filter(|_| !args.create_service_account)
        && namespace_exists
    {
        let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
            Api::namespaced(client.clone(), &namespace);
        if accounts.get_metadata_opt(sa).await?.is_none() {
            bail!(
                "failed to install extension {}: service account {} not found in namespace {}\nWhat to do: create it with the permissions the bundle needs, or use --create-service-account to have olm make one with exactly those",
                quote(&name),
                quote(sa),
                quote(&namespace)
            );
        }
        match account_may_install(
            &client,
            &name,
            &namespace,
            sa,
            &found.image,
            config.as_ref(),
        )
        .await
        {
            Ok(Ok(())) => {}
            Ok(Err(why)) => bail!(
                "failed to install extension {}: service account {} may not install {}: {why}\nWhat to do: grant it what is missing, or use --create-service-account to have olm make an account with exactly what {} needs",
                quote(&name),
                quote(sa),
                found.bundle,
                found.bundle
            ),
            Err(e) => eprintln!(
                "note: the permissions of service account {} were not checked before install ({}); OLM checks them and `olm describe {name}` shows what it finds",
                quote(sa),
                readable(e)
            ),
        }
    }
    if (args.create_namespace || args.create_service_account) && !namespace_exists {
        apply(
            &client,
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace,
                "labels": {NAMESPACE_FOR_LABEL: name}}}),
        )
        .await?;
        eprintln!("namespace {} created", quote(&namespace));
    }
    if args.create_service_account
        && let Some(sa) = &service_account
    {
        let rules = create_service_account(
            &client,
            &name,
            &namespace,
            sa,
            &found.image,
            config.as_ref(),
        )
        .await?;
        eprintln!(
            "service account {}/{} created with the {rules} rules installing {} needs",
            namespace, sa, found.bundle
        );
    }
    let obj: ClusterExtension = serde_json::from_value(object)?;
    let api: Api<ClusterExtension> = Api::all(client.clone());
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => bail!(
            "failed to install extension {}: it already exists (`olm upgrade {name}` changes it, `olm uninstall {name}` removes it)",
            quote(&name)
        ),
        Err(e) => {
            return Err(anyhow!(e).context(format!("failed to install extension {}", quote(&name))));
        }
    }
    if args.follow.no_wait {
        println!("extension {} created", quote(&name));
        return Ok(ExitCode::SUCCESS);
    }
    let progress = follow(&api, &name, args.follow.timeout).await?;
    report(&name, "installed", progress)
}

pub fn upgrade(args: UpgradeArgs) -> anyhow::Result<ExitCode> {
    crate::runtime()?
        .block_on(upgrade_on(args))
        .map_err(readable)
}

/// How `olm upgrade` changes the configuration.
#[derive(Debug, Clone, PartialEq)]
enum ConfigChange {
    /// `--config`: the new configuration, whole.
    Replace(serde_json::Map<String, Value>),
    /// `--merge-config`: keys merged into the current configuration.
    Merge(serde_json::Map<String, Value>),
}

/// The merge patch of `olm upgrade`, or `None` when no flag asks for a change. `current` is the
/// extension's inline configuration now: a replacement sets every key it no longer has to null,
/// since a merge patch would otherwise keep them. Channels `[""]` remove the channels.
fn upgrade_patch(
    version: Option<&str>,
    channels: &[String],
    config: Option<ConfigChange>,
    current: Option<&serde_json::Map<String, Value>>,
) -> Option<Value> {
    let mut catalog = serde_json::Map::new();
    if let Some(v) = version {
        catalog.insert(
            "version".into(),
            if v.is_empty() { Value::Null } else { json!(v) },
        );
    }
    if !channels.is_empty() {
        let named: Vec<&String> = channels.iter().filter(|c| !c.is_empty()).collect();
        catalog.insert(
            "channels".into(),
            if named.is_empty() {
                Value::Null
            } else {
                json!(named)
            },
        );
    }
    let mut spec = serde_json::Map::new();
    if !catalog.is_empty() {
        spec.insert("source".into(), json!({"catalog": catalog}));
    }
    let inline = match config {
        Some(ConfigChange::Merge(map)) => Some(map),
        Some(ConfigChange::Replace(mut map)) => {
            for key in current.into_iter().flat_map(|c| c.keys()) {
                map.entry(key.clone()).or_insert(Value::Null);
            }
            Some(map)
        }
        None => None,
    };
    if let Some(inline) = inline {
        spec.insert(
            "config".into(),
            json!({"configType": "Inline", "inline": inline}),
        );
    }
    (!spec.is_empty()).then(|| json!({"spec": spec}))
}

async fn upgrade_on(args: UpgradeArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let api: Api<ClusterExtension> = Api::all(client.clone());
    check_version_flag(args.version.as_deref())?;
    let config = match (&args.config, &args.merge_config) {
        (Some(c), _) => Some(ConfigChange::Replace(read_config(c)?)),
        (None, Some(c)) => Some(ConfigChange::Merge(read_config(c)?)),
        (None, None) => None,
    };
    let before = api
        .get_opt(&args.name)
        .await?
        .ok_or_else(|| anyhow!("extension {} not found", quote(&args.name)))?;
    let current = serde_json::to_value(&before.spec)?
        .pointer("/config/inline")
        .and_then(Value::as_object)
        .cloned();
    let Some(patch) = upgrade_patch(
        args.version.as_deref(),
        &args.channels,
        config,
        current.as_ref(),
    ) else {
        bail!("nothing to change: give --version, --channel, --config or --merge-config");
    };
    // Resolved as the controller will resolve it, before anything is written: a channel or
    // range the catalogs cannot satisfy fails here with the resolver's words.
    let mut draft = serde_json::to_value(&before)?;
    merge_patch(&mut draft, &patch);
    let proposed: ClusterExtension = serde_json::from_value(draft.clone())?;
    let catalogs = list_catalogs(&client, None).await?;
    let found = preview(
        &client,
        &catalogs,
        &proposed,
        installed_of(&before),
        &mut BTreeMap::new(),
    )
    .await
    .map_err(|e| {
        anyhow!(
            "failed to upgrade extension {}: {e}\nWhat to do: see which channels and versions the catalogs offer with `olm search {}`",
            quote(&args.name),
            before.spec.source.catalog.as_ref().map(|c| c.package_name.as_str()).unwrap_or_default()
        )
    })?;
    if let Some(sa) = own_installer(&client, &before).await? {
        let added = widen_installer(&client, &before, &draft, &found, &sa)
            .await
            .map_err(|e| anyhow!("failed to upgrade extension {}: {e:#}", quote(&args.name)))?;
        if added > 0 {
            eprintln!(
                "service account {}/{sa} given the {added} more rules the upgrade needs",
                before.spec.namespace
            );
        }
    }
    let after = api
        .patch(&args.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("failed to update extension {}", quote(&args.name)))?;
    if after.metadata.generation == before.metadata.generation {
        println!("no changes detected - extension already in desired state");
        return Ok(ExitCode::SUCCESS);
    }
    if args.follow.no_wait {
        println!("extension {} updated", quote(&args.name));
        return Ok(ExitCode::SUCCESS);
    }
    let progress = follow(&api, &args.name, args.follow.timeout).await?;
    report(&args.name, "upgraded", progress)
}

pub fn uninstall(args: UninstallArgs) -> anyhow::Result<ExitCode> {
    crate::runtime()?
        .block_on(uninstall_on(args))
        .map_err(readable)
}

fn installer_selector(ext: &str) -> ListParams {
    ListParams::default().labels(&format!("{}={ext}", rbac::INSTALLER_FOR_LABEL))
}

fn gone_is_fine(r: Result<(), kube::Error>) -> anyhow::Result<()> {
    match r {
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        other => Ok(other?),
    }
}

/// Deletes every cluster-scoped `K` labelled as `ext`'s installer; returns how many.
async fn delete_cluster_labelled<K>(client: &kube::Client, ext: &str) -> anyhow::Result<usize>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    let found = api.list(&installer_selector(ext)).await?.items;
    for obj in &found {
        gone_is_fine(
            api.delete(&obj.name_any(), &DeleteParams::default())
                .await
                .map(|_| ()),
        )?;
    }
    Ok(found.len())
}

/// Deletes every namespaced `K`, in any namespace, labelled as `ext`'s installer.
async fn delete_namespaced_labelled<K>(client: &kube::Client, ext: &str) -> anyhow::Result<usize>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let found = Api::<K>::all(client.clone())
        .list(&installer_selector(ext))
        .await?
        .items;
    for obj in &found {
        let api: Api<K> = Api::namespaced(client.clone(), &obj.namespace().unwrap_or_default());
        gone_is_fine(
            api.delete(&obj.name_any(), &DeleteParams::default())
                .await
                .map(|_| ()),
        )?;
    }
    Ok(found.len())
}

async fn uninstall_on(args: UninstallArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let names: Vec<String> = match &args.name {
        Some(name) => vec![name.clone()],
        None => {
            let mut all: Vec<String> = api
                .list(&ListParams::default())
                .await
                .context("listing extensions")?
                .items
                .iter()
                .map(|e| e.name_any())
                .collect();
            all.sort();
            if all.is_empty() {
                println!("No resources found");
            }
            all
        }
    };
    for name in &names {
        uninstall_one(&client, &api, name, &args).await?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Uninstalls one extension: deleted and waited for, then the installer account `olm install`
/// made; says what is left (the namespace, an account someone else made) or, with
/// --delete-namespace, deletes the namespace install created for it.
async fn uninstall_one(
    client: &kube::Client,
    api: &Api<ClusterExtension>,
    name: &str,
    args: &UninstallArgs,
) -> anyhow::Result<()> {
    let Some(ext) = api.get_opt(name).await? else {
        bail!("extension {} not found", quote(name));
    };
    api.delete(name, &DeleteParams::default())
        .await
        .with_context(|| format!("failed to delete extension {}", quote(name)))?;
    let uid = ext.uid().unwrap_or_default();
    let gone = kube::runtime::wait::await_condition(
        api.clone(),
        name,
        kube::runtime::wait::conditions::is_deleted(&uid),
    );
    if tokio::time::timeout(args.timeout, gone).await.is_err() {
        bail!(
            "extension {} is still being removed after {:?} (`olm describe {}` shows why)",
            quote(name),
            args.timeout,
            name
        );
    }
    // The installer account goes last: OLM removed the extension's objects as it.
    let mut removed = 0;
    removed += delete_cluster_labelled::<ClusterRoleBinding>(client, name).await?;
    removed += delete_cluster_labelled::<ClusterRole>(client, name).await?;
    removed += delete_namespaced_labelled::<RoleBinding>(client, name).await?;
    removed += delete_namespaced_labelled::<Role>(client, name).await?;
    removed += delete_namespaced_labelled::<ServiceAccount>(client, name).await?;
    println!("extension {} uninstalled", quote(name));
    if removed > 0 {
        eprintln!(
            "removed the installer ServiceAccount and its {} RBAC objects",
            removed - 1
        );
    } else if let Some(sa) = &ext.spec.service_account {
        eprintln!(
            "left service account {}/{} and its RBAC in place (not made by olm install)",
            ext.spec.namespace, sa.name
        );
    }
    let namespace = &ext.spec.namespace;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let created_for_it = namespaces
        .get_metadata_opt(namespace)
        .await?
        .is_some_and(|n| n.labels().get(NAMESPACE_FOR_LABEL).map(String::as_str) == Some(name));
    let others = api
        .list(&ListParams::default())
        .await?
        .items
        .iter()
        .filter(|e| e.spec.namespace == *namespace && e.name_any() != name)
        .map(|e| e.name_any())
        .collect::<Vec<_>>();
    match (args.delete_namespace, created_for_it, others.is_empty()) {
        (true, true, true) => {
            namespaces
                .delete(namespace, &DeleteParams::default())
                .await
                .with_context(|| format!("deleting namespace {}", quote(namespace)))?;
            eprintln!(
                "deleted namespace {} (olm install created it)",
                quote(namespace)
            );
        }
        (true, true, false) => eprintln!(
            "left namespace {} in place: extension(s) {} install into it too",
            quote(namespace),
            others.join(", ")
        ),
        (true, false, _) => eprintln!(
            "left namespace {} in place: olm install did not create it",
            quote(namespace)
        ),
        (false, _, _) => eprintln!(
            "left namespace {} in place{}",
            quote(namespace),
            if created_for_it && others.is_empty() {
                " (olm install created it; --delete-namespace removes it)"
            } else {
                ""
            }
        ),
    }
    Ok(())
}

pub fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    crate::runtime()?.block_on(list_on(args)).map_err(readable)
}

async fn list_on(args: ListArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let exts = api
        .list(&ListParams::default())
        .await
        .context("failed getting installed extension(s)")?
        .items;
    let structured = match args.output {
        Some(ListFormat::Json) => Some(JsonOrYaml::Json),
        Some(ListFormat::Yaml) => Some(JsonOrYaml::Yaml),
        _ => None,
    };
    if let Some(format) = structured {
        print_as(
            &json!({"apiVersion": "olm.operatorframework.io/v1", "kind": "ClusterExtensionList",
                "items": exts}),
            format,
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.output == Some(ListFormat::Name) {
        let mut names: Vec<String> = exts.iter().map(|e| e.name_any()).collect();
        names.sort();
        for n in names {
            println!("clusterextension.olm.operatorframework.io/{n}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if exts.is_empty() {
        println!("No resources found");
        return Ok(ExitCode::SUCCESS);
    }
    let upgrades = upgrades(&client, &exts).await;
    let wide = args.output == Some(ListFormat::Wide);
    crate::output::print_table(&view::extension_rows(
        &exts,
        &upgrades,
        Timestamp::now(),
        wide,
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// The version each installed extension could move to, by name: the newest bundle on its
/// upgrade path (its channels and upgrade policy, not its version range) beyond the installed
/// one. Catalogs that cannot be read are reported once and skipped.
async fn upgrades(client: &kube::Client, exts: &[ClusterExtension]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let catalogs = match list_catalogs(client, None).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("upgrades unknown: {:#}", readable(e));
            return out;
        }
    };
    let mut loaded = BTreeMap::new();
    for ext in exts {
        let Some(bundle) = ext
            .status
            .as_ref()
            .and_then(|s| s.install.as_ref())
            .map(|i| &i.bundle)
        else {
            continue;
        };
        let installed = Installed {
            name: olm_catalog::BundleName::new(bundle.name.clone()),
            version: bundle.version.clone(),
            release: bundle.release.clone(),
        };
        // What the upgrade path offers beyond a pinned version range.
        let mut unpinned = ext.clone();
        if let Some(c) = unpinned.spec.source.catalog.as_mut() {
            c.version = None;
        }
        match preview(client, &catalogs, &unpinned, Some(installed), &mut loaded).await {
            Ok(p) if p.bundle != bundle.name => {
                out.insert(ext.name_any(), p.version);
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(extension = %ext.name_any(), error = %e, "no upgrade"),
        }
    }
    out
}

pub fn describe(args: DescribeArgs) -> anyhow::Result<ExitCode> {
    crate::runtime()?
        .block_on(describe_on(args))
        .map_err(readable)
}

async fn describe_on(args: DescribeArgs) -> anyhow::Result<ExitCode> {
    let client = args.conn.client().await?;
    let api: Api<ClusterExtension> = Api::all(client.clone());
    let ext = api
        .get_opt(&args.name)
        .await?
        .ok_or_else(|| anyhow!("extension {} not found", quote(&args.name)))?;
    if let Some(format) = args.output {
        print_as(&ext, format)?;
        return Ok(ExitCode::SUCCESS);
    }
    let (revisions, unread) = revisions_with_objects(&client, &args.name).await?;
    crate::output::stdout(view::describe(&ext, &revisions, &unread, Timestamp::now()).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// The extension `name`'s revisions with every object inline, those kept in Secrets read back
/// ([`view::inline_stored`]), and why any could not be (one line per cause).
pub(crate) async fn revisions_with_objects(
    client: &kube::Client,
    name: &str,
) -> anyhow::Result<(Vec<ClusterObjectSet>, Vec<String>)> {
    let revisions: Api<ClusterObjectSet> = Api::all(client.clone());
    let selector = format!("{}={name}", olm_k8s::OWNER_NAME_LABEL);
    let mut revisions = revisions
        .list(&ListParams::default().labels(&selector))
        .await
        .context("listing the extension's revisions")?
        .items;
    let mut stored = view::StoredSecrets::new();
    for (ns, name) in view::stored_secret_names(&revisions) {
        let read = Api::<Secret>::namespaced(client.clone(), &ns)
            .get(&name)
            .await
            .map(|s| s.data.unwrap_or_default())
            .map_err(|e| {
                format!(
                    "reading Secret {ns}/{name}: {}",
                    olm_runtime::api_error::message(&e)
                )
            });
        stored.insert((ns, name), read);
    }
    let unread = view::inline_stored(&mut revisions, &stored);
    Ok((revisions, unread))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upgrade_changes_only_what_is_asked() {
        assert_eq!(upgrade_patch(None, &[], None, None), None);
        assert_eq!(
            upgrade_patch(Some("1.2.x"), &[], None, None),
            Some(json!({"spec": {"source": {"catalog": {"version": "1.2.x"}}}}))
        );
        assert_eq!(
            upgrade_patch(Some(""), &["fast".into()], None, None),
            Some(json!({"spec": {"source": {"catalog": {"version": null, "channels": ["fast"]}}}}))
        );
        // `-c ""` removes the channels.
        assert_eq!(
            upgrade_patch(None, &[String::new()], None, None),
            Some(json!({"spec": {"source": {"catalog": {"channels": null}}}}))
        );
        let map = |v: Value| v.as_object().cloned().expect("object");
        let current = map(json!({"watchNamespace": "old", "logLevel": "debug"}));
        // --config replaces: keys it does not name are removed.
        assert_eq!(
            upgrade_patch(
                None,
                &[],
                Some(ConfigChange::Replace(map(json!({"watchNamespace": "ops"})))),
                Some(&current)
            ),
            Some(
                json!({"spec": {"config": {"configType": "Inline", "inline": {"watchNamespace": "ops", "logLevel": null}}}})
            )
        );
        // --merge-config merges: only the keys given change.
        assert_eq!(
            upgrade_patch(
                None,
                &[],
                Some(ConfigChange::Merge(map(json!({"watchNamespace": "ops"})))),
                Some(&current)
            ),
            Some(
                json!({"spec": {"config": {"configType": "Inline", "inline": {"watchNamespace": "ops"}}}})
            )
        );
    }

    /// `--config` takes an object inline or `@FILE`, the rule `olm bundle render --config`
    /// follows too; a bare file name is told how to read the file.
    #[test]
    fn config_is_inline_or_a_file() {
        assert_eq!(
            read_config("watchNamespace: ops").expect("inline YAML"),
            json!({"watchNamespace": "ops"})
                .as_object()
                .cloned()
                .expect("object")
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("config.yaml");
        std::fs::write(&file, "{\"watchNamespace\": \"ops\"}").expect("written");
        let path = file.display().to_string();
        assert_eq!(
            read_config(&format!("@{path}")).expect("from the file")["watchNamespace"],
            "ops"
        );
        let err = read_config(&path)
            .expect_err("a bare path is a scalar")
            .to_string();
        assert!(err.contains(&format!("write --config @{path}")), "{err}");
        let err = read_config("[1]").expect_err("a list").to_string();
        assert!(err.contains("must be an object, not a list"), "{err}");
    }

    #[test]
    fn the_extension_as_install_builds_it() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: InstallArgs,
        }
        let cli = Cli::try_parse_from([
            "olm",
            "argocd-operator",
            "--channel",
            "alpha",
            "-v",
            "0.6.x",
        ])
        .expect("parse");
        let v = extension_object(
            "argocd",
            &cli.args,
            "argocd",
            Some("argocd-installer"),
            None,
            None,
        );
        assert_eq!(
            v["spec"],
            json!({"namespace": "argocd", "serviceAccount": {"name": "argocd-installer"},
                "source": {"sourceType": "Catalog", "catalog": {"packageName": "argocd-operator",
                    "version": "0.6.x", "channels": ["alpha"]}}})
        );
        let ext: ClusterExtension = serde_json::from_value(v).expect("a valid ClusterExtension");
        assert_eq!(ext.name_any(), "argocd");
    }

    /// The flags kubectl-operator users have: one catalog or a selector, the upgrade
    /// constraint policy and the CRD upgrade safety enforcement, in the API's spelling.
    #[test]
    fn catalog_choice_and_policies_go_into_the_spec() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: InstallArgs,
        }
        let parse = |extra: &[&str]| {
            let mut argv = vec!["olm", "p"];
            argv.extend_from_slice(extra);
            Cli::try_parse_from(argv).expect("parse").args
        };
        let args = parse(&[
            "--catalog",
            "certified",
            "--upgrade-constraint-policy",
            "SelfCertified",
            "--crd-upgrade-safety-enforcement",
            "None",
        ]);
        let selector = catalog_selector(&args).expect("selector");
        let v = extension_object("p", &args, "ns", None, None, selector.as_ref());
        assert_eq!(
            v["spec"]["source"]["catalog"],
            json!({"packageName": "p", "upgradeConstraintPolicy": "SelfCertified",
                "selector": {"matchLabels": {"olm.operatorframework.io/metadata.name": "certified"}}})
        );
        assert_eq!(
            v["spec"]["install"],
            json!({"preflight": {"crdUpgradeSafety": {"enforcement": "None"}}})
        );
        let args = parse(&["--catalog-selector", "tier=gold,source in (a,b),!beta"]);
        assert_eq!(
            catalog_selector(&args).expect("selector"),
            Some(
                json!({"matchLabels": {"tier": "gold"}, "matchExpressions": [
                {"key": "source", "operator": "In", "values": ["a", "b"]},
                {"key": "beta", "operator": "DoesNotExist"}]})
            )
        );
        let args = parse(&["--catalog-selector", "a in (b"]);
        let err = catalog_selector(&args).expect_err("unbalanced").to_string();
        assert!(err.starts_with("--catalog-selector \"a in (b\": "), "{err}");
        // --output only with --dry-run; --catalog and --catalog-selector exclude each other.
        assert!(Cli::try_parse_from(["olm", "p", "-o", "yaml"]).is_err());
        assert!(
            Cli::try_parse_from(["olm", "p", "--catalog", "a", "--catalog-selector", "b=c"])
                .is_err()
        );
    }
}
