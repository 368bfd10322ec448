//! `olm migrate check`: whether Subscriptions can move to OLM v1. Reads what the checks of
//! [`olm_migrate::checks`] look at — the Subscription, its CSV, the namespace's
//! OperatorGroups, the OperatorCondition, the CatalogSource, the ClusterObjectSet CRD and
//! what the serving ClusterCatalogs hold of the package — and prints each result and the
//! state [`olm_migrate::scan::decide`] gives.
//!
//! Unlike upstream's `check`, which exits 0 whatever it finds, this one exits 1 when any
//! Subscription is Ineligible or in Conflict, so scripts can stop on it.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt as _;
use kube::api::{Api, ListParams};
use olm_api::{ClusterCatalog, ClusterExtension};
use olm_migrate::checks::{self, Acks, CatalogOffer, ObjectSetApi};
use olm_migrate::scan::{self, Observed, ScanResult, Scope, State};
use olm_v0_api::v1::OperatorGroup;
use olm_v0_api::v1alpha1::{CatalogSource, ClusterServiceVersion, InstallPlan, Subscription};
use olm_v0_api::v2::OperatorCondition;

use super::{Conn, Output, record};

/// `olm migrate check`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  olm migrate check etcd -n operators
  olm migrate check --all
  olm migrate check etcd -n operators --acknowledge-watch-scope-change
  olm migrate check --all -o json               one JSON line for scripts")]
pub struct Args {
    /// The Subscription.
    subscription: Option<String>,
    /// The Subscription's namespace.
    #[arg(short, long)]
    namespace: Option<String>,
    /// Every Subscription of the cluster.
    #[arg(long)]
    all: bool,
    #[command(flatten)]
    acks: AckArgs,
    /// Output format.
    #[arg(short, long, value_enum, default_value = "text")]
    output: Output,
    #[command(flatten)]
    conn: Conn,
}

/// The soft checks a user accepts failing (each is recorded on the ClusterExtension a
/// migration makes).
#[derive(clap::Args, Debug, Clone, Copy)]
pub(super) struct AckArgs {
    /// Accept that the operator will watch all namespaces (OLM v1 installs it so).
    #[arg(long)]
    acknowledge_watch_scope_change: bool,
    /// Accept that the operator's OperatorCondition use is dropped.
    #[arg(long)]
    acknowledge_operator_condition: bool,
    /// Accept that the operator's access to OLM v0's API has no OLM v1 equivalent.
    #[arg(long)]
    acknowledge_olmv0_api_access: bool,
    /// Accept that the OperatorGroup's scoped ServiceAccount is dropped.
    #[arg(long)]
    acknowledge_scoped_serviceaccount: bool,
    /// Accept a Subscription or CSV that has not settled.
    #[arg(long)]
    acknowledge_not_steady_state: bool,
}

impl AckArgs {
    pub(super) fn acks(self) -> Acks {
        Acks {
            watch_scope_change: self.acknowledge_watch_scope_change,
            operator_condition: self.acknowledge_operator_condition,
            olmv0_api_access: self.acknowledge_olmv0_api_access,
            scoped_serviceaccount: self.acknowledge_scoped_serviceaccount,
            not_steady_state: self.acknowledge_not_steady_state,
        }
    }
}

/// Upstream's argument rules, in its order and words.
fn validate(args: &Args) -> anyhow::Result<()> {
    match (&args.subscription, args.all) {
        (Some(_), true) => bail!("cannot specify both an operator name and --all"),
        (None, false) => bail!("specify an operator name or --all"),
        (Some(_), false) if args.namespace.as_deref().unwrap_or_default().is_empty() => {
            bail!("-n/--namespace is required")
        }
        (None, true) if args.namespace.is_some() => {
            bail!("-n/--namespace cannot be combined with --all; --all scans every namespace")
        }
        _ => Ok(()),
    }
}

pub async fn run(args: Args) -> anyhow::Result<ExitCode> {
    validate(&args)?;
    let client = args.conn.client().await?;
    let mut world = World::read(&client).await?;
    let acks = args.acks.acks();
    let results = match &args.subscription {
        Some(name) => {
            let ns = args.namespace.clone().unwrap_or_default();
            vec![world.one(&ns, name, &acks).await?]
        }
        None => world.all(&acks).await?,
    };
    match (args.output, args.all) {
        (Output::Text, false) => print!("{}", scan::report(&results[0])),
        (Output::Text, true) => print!("{}", scan::summary(&results)),
        (Output::Json, false) => {
            let r = &results[0];
            let target = format!("{}/{}", r.namespace, r.name);
            println!(
                "{}",
                record("check", "check", Some(&target), serde_json::to_value(r)?)
            );
        }
        (Output::Json, true) => println!(
            "{}",
            record("scan", "check", None, serde_json::to_value(&results)?)
        ),
    }
    let blocked = results
        .iter()
        .any(|r| matches!(r.status, State::Ineligible | State::Conflict));
    Ok(if blocked {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// What every check of a run shares, read once: the Subscriptions, the migrated
/// ClusterExtensions, the ClusterObjectSet API, the serving catalogs and, as asked for, their
/// content of a package.
pub(super) struct World {
    client: kube::Client,
    /// `namespace/name` of each eligible Subscription → the ClusterCatalog it resolves from.
    pub(super) resolved: BTreeMap<String, String>,
    subscriptions: Vec<Subscription>,
    /// `namespace/name` of a Subscription → (ClusterExtension, its package).
    migrated: BTreeMap<String, (String, String)>,
    object_set_api: ObjectSetApi,
    serving: Vec<ClusterCatalog>,
    /// (catalog, package) → what it offers, or `None` when it could not be read.
    content: BTreeMap<(String, String), Option<olm_catalog::Catalog>>,
}

impl World {
    pub(super) async fn read(client: &kube::Client) -> anyhow::Result<World> {
        let mut subscriptions = Api::<Subscription>::all(client.clone())
            .list(&ListParams::default())
            .await
            .context("failed to list Subscriptions")?
            .items;
        subscriptions.sort_by_key(|s| (s.namespace().unwrap_or_default(), s.name_any()));
        let migrated = Api::<ClusterExtension>::all(client.clone())
            .list(&ListParams::default())
            .await
            .context("listing ClusterExtensions")?
            .items
            .into_iter()
            .filter_map(|ce| {
                let from = ce
                    .annotations()
                    .get(olm_migrate::MIGRATED_FROM_SUBSCRIPTION)?
                    .clone();
                let package = ce.spec.package_name().to_owned();
                Some((from, (ce.name_any(), package)))
            })
            .collect();
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let object_set_api = match crds.get(checks::CLUSTER_OBJECT_SET_CRD).await {
            Ok(crd) => {
                let established = crd
                    .status
                    .and_then(|s| s.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True");
                if established {
                    ObjectSetApi::Established
                } else {
                    ObjectSetApi::NotEstablished
                }
            }
            Err(e) => ObjectSetApi::Unreadable(olm_runtime::api_error::message(&e)),
        };
        let (serving, _) =
            super::super::split_serving(super::super::list_catalogs(client, None).await?);
        Ok(World {
            client: client.clone(),
            resolved: BTreeMap::new(),
            subscriptions,
            migrated,
            object_set_api,
            serving,
            content: BTreeMap::new(),
        })
    }

    /// One Subscription by name; a Subscription that is gone but was migrated is
    /// AlreadyMigrated (upstream reports a Conflict there without looking for it).
    pub(super) async fn one(
        &mut self,
        ns: &str,
        name: &str,
        acks: &Acks,
    ) -> anyhow::Result<ScanResult> {
        let key = format!("{ns}/{name}");
        let found = self
            .subscriptions
            .iter()
            .find(|s| s.namespace().as_deref() == Some(ns) && s.name_any() == name)
            .cloned();
        match found {
            Some(sub) => Ok(self.check(&sub, acks, Scope::One).await),
            None => match self.migrated.get(&key) {
                Some((ce, package)) => Ok(scan::already_migrated(ce, package, &key)),
                None => Err(anyhow!(
                    "failed to get Subscription {ns}/{name}: subscriptions.operators.coreos.com {} not found",
                    olm_goenc::quote(name)
                )),
            },
        }
    }

    /// Every Subscription, then every migrated extension whose Subscription is gone.
    pub(super) async fn all(&mut self, acks: &Acks) -> anyhow::Result<Vec<ScanResult>> {
        let mut out = Vec::new();
        for sub in self.subscriptions.clone() {
            out.push(self.check(&sub, acks, Scope::All).await);
        }
        let present: Vec<String> = self
            .subscriptions
            .iter()
            .map(|s| format!("{}/{}", s.namespace().unwrap_or_default(), s.name_any()))
            .collect();
        for (from, (ce, package)) in &self.migrated {
            if !present.contains(from) {
                out.push(scan::already_migrated(ce, package, from));
            }
        }
        Ok(out)
    }

    /// Gathers what the checks of `sub` need and decides its state.
    async fn check(&mut self, sub: &Subscription, acks: &Acks, scope: Scope) -> ScanResult {
        let ns = sub.namespace().unwrap_or_default();
        let name = sub.name_any();
        let mut observed = Observed {
            namespace: ns.clone(),
            name: name.clone(),
            package: sub.spec.package.clone(),
            migrated_to: self
                .migrated
                .get(&format!("{ns}/{name}"))
                .map(|(ce, _)| ce.clone()),
            ..Observed::default()
        };
        if observed.migrated_to.is_some() {
            return scan::decide(observed, scope);
        }
        let installed = checks::installed_csv(sub).to_owned();
        let csv: Result<Option<ClusterServiceVersion>, String> = if installed.is_empty() {
            Ok(None)
        } else {
            Api::<ClusterServiceVersion>::namespaced(self.client.clone(), &ns)
                .get(&installed)
                .await
                .map(Some)
                .map_err(|e| olm_runtime::api_error::message(&e))
        };
        observed.checks = checks::readiness(
            &checks::Readiness {
                subscription: sub,
                all_subscriptions: &self.subscriptions,
                csv: csv.as_ref().map(Option::as_ref).map_err(String::as_str),
                object_set_api: &self.object_set_api,
            },
            acks,
        );
        let csv = match csv {
            Ok(Some(csv)) => csv,
            Ok(None) => {
                observed.error = Some("failed to get CSV: subscription has no installedCSV".into());
                return scan::decide(observed, scope);
            }
            Err(e) => {
                observed.error = Some(format!("failed to get CSV: {e}"));
                return scan::decide(observed, scope);
            }
        };
        observed.version = checks::installed_version(&csv);
        match self.compatibility(sub, &csv, acks).await {
            Ok(results) => observed.checks.extend(results),
            Err(e) => {
                observed.error = Some(format!("compatibility check error: {e}"));
                return scan::decide(observed, scope);
            }
        }
        if let Some(failed) = self.catalog_source(sub, &csv).await {
            observed.checks.push(failed);
        }
        if observed.checks.iter().all(|c| c.passed) {
            let resolved = self.resolve(sub, &observed.version).await;
            observed.catalog_missing = resolved.is_err();
            if let Ok(catalog) = &resolved {
                self.resolved
                    .insert(format!("{ns}/{name}"), catalog.clone());
            }
            observed
                .checks
                .push(checks::catalog_availability(&sub.spec.package, &resolved));
            if resolved.is_ok()
                && let Some(w) =
                    scan::dependents_warning(&sub.spec.package, &self.dependents(sub).await)
            {
                observed.warnings.push(w);
            }
        }
        scan::decide(observed, scope)
    }

    async fn compatibility(
        &self,
        sub: &Subscription,
        csv: &ClusterServiceVersion,
        acks: &Acks,
    ) -> Result<Vec<checks::CheckResult>, String> {
        let ns = sub.namespace().unwrap_or_default();
        let message = |e: kube::Error| olm_runtime::api_error::message(&e);
        let groups = Api::<OperatorGroup>::namespaced(self.client.clone(), &ns)
            .list(&ListParams::default())
            .await
            .map_err(|e| format!("failed to list OperatorGroups in {ns}: {}", message(e)))?
            .items;
        let condition = Api::<OperatorCondition>::namespaced(self.client.clone(), &ns)
            .get_opt(&csv.name_any())
            .await
            .map_err(|e| format!("failed to get OperatorCondition: {}", message(e)))?;
        Ok(checks::compatibility(
            &checks::Compatibility {
                csv,
                operator_groups: &groups,
                operator_condition: condition.as_ref(),
            },
            acks,
        ))
    }

    /// The `CatalogSource type` failure, if any: the CatalogSource the InstallPlan looked the
    /// installed bundle up in, else the Subscription's.
    async fn catalog_source(
        &self,
        sub: &Subscription,
        csv: &ClusterServiceVersion,
    ) -> Option<checks::CheckResult> {
        let ns = sub.namespace().unwrap_or_default();
        let plan_name = sub.status.as_ref().and_then(|s| {
            s.install_plan_ref
                .as_ref()
                .and_then(|r| r.name.clone())
                .or_else(|| s.install.as_ref().map(|i| i.name.clone()))
        });
        let mut source = (
            sub.spec.catalog_source_namespace.clone(),
            sub.spec.catalog_source.clone(),
        );
        if let Some(plan) = plan_name
            && let Ok(Some(plan)) = Api::<InstallPlan>::namespaced(self.client.clone(), &ns)
                .get_opt(&plan)
                .await
            && let Some(lookup) = plan.status.as_ref().and_then(|s| {
                s.bundle_lookups
                    .iter()
                    .find(|l| l.identifier == csv.name_any())
            })
            && let Some(name) = lookup.catalog_source_ref.name.clone()
        {
            source = (
                lookup
                    .catalog_source_ref
                    .namespace
                    .clone()
                    .unwrap_or_else(|| source.0.clone()),
                name,
            );
        }
        let read = Api::<CatalogSource>::namespaced(self.client.clone(), &source.0)
            .get(&source.1)
            .await
            .map_err(|e| olm_runtime::api_error::message(&e));
        checks::catalog_source(
            sub,
            (&source.0, &source.1),
            read.as_ref().map_err(String::as_str),
        )
    }

    /// The ClusterCatalog the operator will resolve from.
    async fn resolve(&mut self, sub: &Subscription, version: &str) -> Result<String, String> {
        let package = sub.spec.package.clone();
        let channel = sub.spec.channel.clone().unwrap_or_default();
        let mut offers = Vec::new();
        for cat in self.serving.clone() {
            let key = (cat.name_any(), package.clone());
            if !self.content.contains_key(&key) {
                let read = super::super::content::content(&self.client, &cat, Some(&package))
                    .await
                    .ok();
                self.content.insert(key.clone(), read);
            }
            let Some(Some(content)) = self.content.get(&key) else {
                continue; // An unreadable catalog is passed over, as upstream does.
            };
            offers.push(offer(&cat, content, &package, version, &channel));
        }
        checks::resolve_catalog(&offers, &package, version, &channel)
    }

    /// `namespace/name` of the other Subscriptions whose installed CSV requires `sub`'s
    /// package.
    async fn dependents(&self, sub: &Subscription) -> Vec<String> {
        let mut out = Vec::new();
        for other in &self.subscriptions {
            let installed = checks::installed_csv(other);
            if other.spec.package == sub.spec.package || installed.is_empty() {
                continue;
            }
            let ns = other.namespace().unwrap_or_default();
            let Ok(Some(csv)) = Api::<ClusterServiceVersion>::namespaced(self.client.clone(), &ns)
                .get_opt(installed)
                .await
            else {
                continue;
            };
            if checks::requires_package(&csv, &sub.spec.package) {
                out.push(format!("{ns}/{}", other.name_any()));
            }
        }
        out
    }
}

impl World {
    /// The package's default channel in `catalog`, as read for the checks.
    pub(super) fn default_channel(&self, catalog: &str, package: &str) -> Option<String> {
        let content = self
            .content
            .get(&(catalog.to_owned(), package.to_owned()))?
            .as_ref()?;
        content
            .packages()
            .find(|p| p.name.as_str() == package)
            .map(|p| p.default_channel.as_str().to_owned())
            .filter(|c| !c.is_empty())
    }
}

/// What `content` (one catalog's blobs of the package) offers.
fn offer(
    cat: &ClusterCatalog,
    content: &olm_catalog::Catalog,
    package: &str,
    version: &str,
    channel: &str,
) -> CatalogOffer {
    let has_version = content.bundles().any(|b| {
        b.package.as_str() == package
            && b.properties.iter().any(|p| {
                p.type_ == "olm.package"
                    && matches!(p.parse(), Ok(olm_catalog::TypedProperty::Package(pp)) if pp.version == version)
            })
    });
    CatalogOffer {
        catalog: cat.name_any(),
        priority: cat.spec.priority,
        package: content.packages().any(|p| p.name.as_str() == package),
        version: has_version,
        channel: channel.is_empty()
            || content
                .channels()
                .any(|c| c.package.as_str() == package && c.name.as_str() == channel),
    }
}
