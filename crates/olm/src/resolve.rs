//! `olm resolve`: which bundle a ClusterExtension would get from a set of catalogs, offline, with
//! an optional explanation of every decision.

use std::collections::BTreeMap;
use std::process::ExitCode;

use anyhow::{Context, bail};
use olm_catalog::{ChannelName, PackageName};
use olm_goenc::quote;
use olm_resolve::{
    Availability, CatalogInput, Content, ContentIndex, Installed, LabelSelector,
    METADATA_NAME_LABEL, Request, Resolution, UpgradeConstraintPolicy, VersionRange,
};

#[derive(clap::Args)]
#[command(after_help = "Examples:
  olm resolve --catalog operatorhubio=./catalog --package etcd
  olm resolve --catalog operatorhubio=quay.io/operatorhubio/catalog:latest --package etcd --channel clusterwide-alpha --explain
  olm resolve --catalog community=./catalog,priority=10 --catalog backup=./other-catalog --package infinispan --version '>=2.3.0, <2.4.0' --installed infinispan-operator.v2.3.0@2.3.0 -o json")]
pub struct Args {
    /// A catalog: NAME=REF[,priority=N][,label=K=V]…[,unavailable][,unserved]; REF is a catalog
    /// directory or file, or a catalog image, as `olm catalog render` takes it. Repeat for
    /// several catalogs.
    #[arg(long = "catalog", value_name = "SPEC", required = true)]
    catalogs: Vec<String>,
    /// The package to install (`spec.source.catalog.packageName`).
    #[arg(long)]
    package: PackageName,
    /// A version range (Masterminds syntax, `spec.source.catalog.version`).
    #[arg(long, default_value = "")]
    version: String,
    /// A channel to restrict to; repeat for several.
    #[arg(long = "channel")]
    channels: Vec<ChannelName>,
    /// A label selector over catalogs (kubectl syntax).
    #[arg(long, default_value = "")]
    selector: String,
    /// The installed bundle as NAME@VERSION.
    #[arg(long)]
    installed: Option<String>,
    /// The installed bundle's explicit release.
    #[arg(long, requires = "installed")]
    installed_release: Option<String>,
    /// `spec.source.catalog.upgradeConstraintPolicy`: CatalogProvided follows the catalog's
    /// upgrade edges from the installed bundle, SelfCertified allows any version.
    #[arg(long, value_enum, default_value = "CatalogProvided")]
    upgrade_constraint_policy: Policy,
    /// Print every decision on stderr.
    #[arg(long)]
    explain: bool,
    /// Output format: text, json or yaml.
    #[arg(short, long, value_enum, default_value = "text")]
    output: Output,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Policy {
    #[value(name = "CatalogProvided")]
    CatalogProvided,
    #[value(name = "SelfCertified")]
    SelfCertified,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Output {
    Text,
    Json,
    Yaml,
}

/// A catalog as a ClusterCatalog would offer it, from `NAME=REF[,priority=N][,label=K=V]…
/// [,unavailable][,unserved]` (shared by `olm resolve --catalog` and `olm catalog serve-ui`).
pub(crate) struct CatalogSpec {
    pub(crate) name: String,
    pub(crate) reference: String,
    pub(crate) priority: i32,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) availability: Availability,
    pub(crate) served: bool,
}

/// Reads a [`CatalogSpec`]; `what` names the argument in messages (`--catalog`).
pub(crate) fn parse_spec(s: &str, what: &str) -> anyhow::Result<CatalogSpec> {
    let mut parts = s.split(',');
    let head = parts.next().unwrap_or_default();
    let Some((name, reference)) = head.split_once('=') else {
        bail!("{what} {}: expected NAME=REF", quote(s));
    };
    // A ClusterCatalog's name, as the API server checks it.
    if let Some(e) = olm_k8s::dns1123_subdomain_errors(name).first() {
        bail!(
            "{what} {}: metadata.name: Invalid value: {}: {e}",
            quote(s),
            quote(name)
        );
    }
    if reference.is_empty() {
        bail!("{what} {}: no catalog after NAME=", quote(s));
    }
    let mut spec = CatalogSpec {
        name: name.to_owned(),
        reference: reference.to_owned(),
        priority: 0,
        labels: BTreeMap::from([(METADATA_NAME_LABEL.to_owned(), name.to_owned())]),
        availability: Availability::Available,
        served: true,
    };
    for opt in parts {
        match opt.split_once('=') {
            Some(("priority", n)) => {
                spec.priority = n.parse().with_context(|| {
                    format!(
                        "{what} {}: priority {} is not a 32-bit integer",
                        quote(s),
                        quote(n)
                    )
                })?;
            }
            Some(("label", kv)) => {
                let Some((k, v)) = kv.split_once('=') else {
                    bail!("{what} {}: expected label=KEY=VALUE", quote(s))
                };
                spec.labels.insert(k.to_owned(), v.to_owned());
            }
            None if opt == "unavailable" => spec.availability = Availability::Unavailable,
            None if opt == "unserved" => spec.served = false,
            _ => bail!("{what} {}: unknown option {}", quote(s), quote(opt)),
        }
    }
    Ok(spec)
}

/// The API server's admission of `spec.source.catalog.version`, with its words.
fn check_version(version: &str) -> anyhow::Result<()> {
    olm_version::crd::check_version_range(version).map_err(|e| anyhow::anyhow!("--version: {e}"))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let specs = args
        .catalogs
        .iter()
        .map(|s| parse_spec(s, "--catalog"))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let indexes = specs
        .iter()
        .map(|s| {
            let opts = olm_catalog::load::LoadOptions {
                keep_raw: false,
                validate_only: false,
            };
            let cat = crate::sources::load_catalog(
                &s.reference,
                crate::sources::Registry::default(),
                &opts,
            )
            .with_context(|| {
                format!(
                    "loading catalog {} from {}",
                    quote(&s.name),
                    quote(&s.reference)
                )
            })?;
            Ok(ContentIndex::new(&cat))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let inputs: Vec<CatalogInput<'_>> = specs
        .iter()
        .zip(&indexes)
        .map(|(s, idx)| CatalogInput {
            name: s.name.clone(),
            labels: s.labels.clone(),
            priority: s.priority,
            availability: s.availability,
            content: if s.served {
                Content::Served(idx)
            } else {
                Content::NotServing("marked unserved".to_owned())
            },
        })
        .collect();
    let installed = match &args.installed {
        Some(i) => {
            let Some((name, version)) = i.rsplit_once('@') else {
                bail!("--installed {}: expected NAME@VERSION", quote(i))
            };
            Some(Installed {
                name: name.into(),
                version: version.into(),
                release: args.installed_release.clone(),
            })
        }
        None => None,
    };
    let selector = LabelSelector::parse(&args.selector).context("--selector")?;
    check_version(&args.version)?;
    let version = (!args.version.is_empty())
        .then(|| VersionRange::parse(&args.version))
        .transpose()?;
    let request = Request {
        package: args.package,
        channels: args.channels,
        version,
        selector,
        policy: match args.upgrade_constraint_policy {
            Policy::CatalogProvided => UpgradeConstraintPolicy::CatalogProvided,
            Policy::SelfCertified => UpgradeConstraintPolicy::SelfCertified,
        },
        installed,
    };
    let mut trace = Vec::new();
    let outcome = olm_resolve::resolve(&inputs, &request, args.explain.then_some(&mut trace));
    for line in &trace {
        eprintln!("explain: {line}");
    }
    match outcome {
        Ok(res) => {
            for skipped in &res.skipped {
                eprintln!("note: {skipped}");
            }
            crate::output::stdout(render(&res, args.output).as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
        Err(failure) => {
            eprintln!("Error: {}", failure.message());
            Ok(ExitCode::FAILURE)
        }
    }
}

fn render(res: &Resolution, output: Output) -> String {
    let release = (!res.version.release.is_empty()).then(|| res.version.release.to_string());
    let mut fields: Vec<(&str, serde_json::Value)> = vec![
        ("catalog", res.catalog.clone().into()),
        ("bundle", res.bundle.as_str().into()),
        // As ClusterExtension status reports it: a release is re-encoded as build metadata.
        ("version", res.version.legacy_version_string().into()),
        ("image", res.image.clone().into()),
    ];
    if let Some(r) = release {
        fields.push(("release", r.into()));
    }
    let d = &res.deprecations;
    if let Some(m) = &d.package {
        fields.push(("packageDeprecated", m.clone().into()));
    }
    if let Some(m) = d.bundles.get(&res.bundle) {
        fields.push(("bundleDeprecated", m.clone().into()));
    }
    if !d.channels.is_empty() {
        fields.push((
            "deprecatedChannels",
            serde_json::to_value(&d.channels).unwrap_or_default(),
        ));
    }
    match output {
        Output::Json => {
            let map: serde_json::Map<String, serde_json::Value> =
                fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
            format!(
                "{}\n",
                serde_json::to_string_pretty(&map).unwrap_or_default()
            )
        }
        // JSON scalars and flow mappings are valid YAML, which keeps every string safely quoted.
        Output::Yaml => fields.iter().map(|(k, v)| format!("{k}: {v}\n")).collect(),
        Output::Text => fields
            .iter()
            .map(|(k, v)| {
                format!(
                    "{k}: {}\n",
                    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
                )
            })
            .collect(),
    }
}
