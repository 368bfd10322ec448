//! `olm bundle …` and `olm crd diff`: check registry+v1 bundles, render them to the manifests OLM v1
//! applies, and decide whether a CRD upgrade is safe.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow};
use olm_bundle::apivalidate::{self, Level};
use olm_bundle::{Bundle, CertProvider, RenderRequest, crddiff};

use crate::output::JsonOrYaml;

#[derive(clap::Subcommand)]
pub enum Command {
    /// Check a bundle: what would stop OLM v1 from installing it, and operator-framework's
    /// authoring checks. Exit code 1 when there is an error.
    ///
    /// `--select-optional` adds operator-framework's optional validators, chosen by label as
    /// `operator-sdk bundle validate` does (`suite=operatorframework`, `name=good-practices`, …;
    /// `--list-optional` lists them). `name=multiarch` reads the platforms of every image the
    /// CSV names from their registries (credentials as for `olm image`); no other validator
    /// goes to the network.
    #[command(after_help = "Examples:
  olm bundle validate ./bundle
  olm bundle validate ./bundle --select-optional name=good-practices  an optional check, as operator-sdk bundle validate
  olm bundle validate ./bundle --select-optional suite=operatorframework --optional-values k8s-version=1.25
  olm bundle validate --list-optional")]
    Validate {
        /// The bundle directory (manifests/ and metadata/).
        #[arg(required_unless_present = "list_optional")]
        dir: Option<PathBuf>,
        /// A label selector over the optional validators.
        #[arg(long)]
        select_optional: Option<String>,
        /// List the optional validators and exit.
        #[arg(long)]
        list_optional: bool,
        /// Values for the optional validators, `k=v,…`: `k8s-version=1.25`,
        /// `index-path=bundle.Dockerfile` (community), `container-tools=docker` (multiarch:
        /// checked, but images are read from their registries whatever the tool).
        #[arg(long, default_value = "")]
        optional_values: String,
        #[command(flatten)]
        registry: crate::image::RegistryArgs,
    },
    /// Generate a bundle (CSV, other manifests, metadata, bundle.Dockerfile) from an
    /// operator's manifests, as `operator-sdk generate bundle` does.
    Generate(crate::bundle_generate::Args),
    /// Render a bundle to the plain manifests OLM v1 applies, one document per object, in a
    /// stable order.
    #[command(after_help = "Examples:
  olm bundle render ./bundle --install-namespace operators
  olm bundle render ./bundle --install-namespace operators --watch-namespace team-a      watching one namespace
  olm bundle render ./bundle --install-namespace operators --config @config.yaml -o json
  olm bundle render ./bundle --install-namespace operators --cert-provider cert-manager  a bundle with webhooks")]
    Render {
        /// The bundle directory.
        dir: PathBuf,
        /// The namespace the operator is installed into.
        #[arg(long)]
        install_namespace: String,
        /// The namespace the operator watches (install mode permitting).
        #[arg(long)]
        watch_namespace: Option<String>,
        /// Inline configuration as a ClusterExtension carries it: JSON or YAML, or @FILE.
        #[arg(long)]
        config: Option<String>,
        /// cert-manager, openshift-service-ca or none (bundles with webhooks need a provider).
        #[arg(long, value_enum, default_value = "none", hide_possible_values = true)]
        cert_provider: CertProviderArg,
        /// yaml or json.
        #[arg(
            short,
            long,
            value_enum,
            default_value = "yaml",
            hide_possible_values = true
        )]
        output: JsonOrYaml,
    },
}

/// `--cert-provider`, spelled as upstream's flag values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CertProviderArg {
    /// cert-manager's `Certificate` and `Issuer`.
    CertManager,
    /// OpenShift's service CA annotations.
    OpenshiftServiceCa,
    /// No certificates.
    None,
}

impl From<CertProviderArg> for Option<CertProvider> {
    fn from(arg: CertProviderArg) -> Option<CertProvider> {
        match arg {
            CertProviderArg::CertManager => Some(CertProvider::CertManager),
            CertProviderArg::OpenshiftServiceCa => Some(CertProvider::OpenshiftServiceCa),
            CertProviderArg::None => None,
        }
    }
}

#[derive(clap::Subcommand)]
pub enum CrdCommand {
    /// Whether replacing the OLD CRD by the NEW one keeps stored data safe. Exit code 1 and the
    /// report when it does not.
    #[command(after_help = "Examples:
  kubectl get crd etcdclusters.etcd.database.coreos.com -o yaml > installed.yaml
  olm crd diff installed.yaml bundle/manifests/etcdclusters.etcd.database.coreos.com.crd.yaml
  olm crd diff old-crds.yaml new-crds.yaml  exit code 1 and the report when unsafe")]
    Diff {
        /// The installed CRDs: a YAML or JSON file of one or more CustomResourceDefinitions.
        old: PathBuf,
        /// The CRDs that would replace them, compared with OLD by name.
        new: PathBuf,
    },
}

fn load(dir: &Path) -> anyhow::Result<Bundle> {
    if !dir.is_dir() {
        return Err(anyhow!(
            "bundle directory {}: no such directory",
            dir.display()
        ));
    }
    Bundle::from_dir(dir).map_err(|e| anyhow!("bundle directory {}: {e}", dir.display()))
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Validate {
            dir,
            select_optional,
            list_optional,
            optional_values,
            registry,
        } => {
            if list_optional {
                print!("{}", olm_bundle::optional::list());
                return Ok(ExitCode::SUCCESS);
            }
            let selected = match select_optional.as_deref() {
                None => Vec::new(),
                Some(s) => olm_bundle::optional::select(s)?,
            };
            if select_optional.as_deref() == Some("name=community") {
                eprintln!("warning: {}", olm_bundle::optional::COMMUNITY_DEPRECATED);
            }
            let mut values = std::collections::BTreeMap::new();
            for pair in optional_values.split(',').filter(|p| !p.is_empty()) {
                let Some((k, v)) = pair.split_once('=') else {
                    return Err(anyhow!("--optional-values: {pair:?} is not key=value"));
                };
                values.insert(k.trim().to_owned(), v.trim().to_owned());
            }
            let Some(dir) = dir else {
                return Err(anyhow!("a bundle directory is required"));
            };
            let b = load(&dir)?;
            let mut failed = false;
            // operator-sdk checks the bundle's format first.
            if let Some(finding) = apivalidate::validate_format(&b, &dir.display().to_string()) {
                eprintln!("{finding}");
                failed = true;
            }
            for msg in olm_bundle::validate_for_render(&b) {
                eprintln!("Error: {msg}");
                failed = true;
            }
            let gathered = gather(&b, &selected, &values, &registry)?;
            let optional = olm_bundle::optional::run_gathered(&b, &selected, &values, &gathered);
            for finding in apivalidate::validate_bundle(&b).into_iter().chain(optional) {
                failed |= finding.level == Level::Error;
                eprintln!("{finding}");
            }
            Ok(if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Generate(args) => crate::bundle_generate::run(args),
        Command::Render {
            dir,
            install_namespace,
            watch_namespace,
            config,
            cert_provider,
            output,
        } => {
            // A namespace name, as the API server checks `spec.namespace` (the watch namespace
            // is the configuration's, checked with its own words when rendering).
            if let Some(e) = olm_k8s::dns1123_label_errors(&install_namespace).first() {
                return Err(anyhow!(
                    "--install-namespace {}: {e}",
                    olm_goenc::quote(&install_namespace)
                ));
            }
            let b = load(&dir)?;
            let config = config
                .map(|c| crate::sources::inline_or_file(&c).map(|(text, _)| text))
                .transpose()?;
            let cert_provider = Option::<CertProvider>::from(cert_provider);
            let req = RenderRequest {
                install_namespace,
                watch_namespace,
                config,
                cert_provider,
            };
            let mut manifests = olm_bundle::render_request(&b, &req).map_err(|e| {
                let message = e.to_string();
                match render_hint(&message, &req) {
                    Some(hint) => anyhow!("{message}\n{hint}"),
                    None => anyhow!("{message}"),
                }
            })?;
            olm_bundle::sort_manifests(&mut manifests);
            let text = match output {
                JsonOrYaml::Yaml => olm_bundle::manifests_to_yaml(&manifests),
                JsonOrYaml::Json => olm_bundle::manifests_to_json(&manifests) + "\n",
            };
            crate::output::stdout(text.as_bytes())?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// What the selected optional validators need from outside the bundle: the Dockerfile
/// `index-path` names (community) and the platforms of the CSV's images (multiarch, only when
/// selected and its `container-tools` value is one upstream accepts).
fn gather(
    b: &Bundle,
    selected: &[olm_bundle::optional::Validator],
    values: &std::collections::BTreeMap<String, String>,
    registry: &crate::image::RegistryArgs,
) -> anyhow::Result<olm_bundle::optional::Gathered> {
    use olm_bundle::optional::{Gathered, community, multiarch};
    let picked = |name: &str| selected.iter().any(|v| v.name == name);
    let mut gathered = Gathered::default();
    if picked("community") {
        gathered.index_file = values
            .get(community::INDEX_PATH_KEY)
            .filter(|p| !p.is_empty())
            .map(|p| community::IndexFile::read(p));
    }
    if picked("multiarch") && multiarch::container_tool_error(values).is_none() {
        let client = crate::image::client(registry)?;
        let images = multiarch::images(b);
        gathered.platforms = crate::runtime()?.block_on(inspect_images(&client, images));
    }
    Ok(gathered)
}

/// Each image's platforms, a few registries at a time. A failed inspection is tried once more,
/// as upstream does; each attempt is bounded by the client's silence limit.
async fn inspect_images(
    client: &olm_image::Client,
    images: Vec<String>,
) -> std::collections::BTreeMap<String, olm_bundle::optional::multiarch::Inspection> {
    use futures::StreamExt as _;
    use olm_bundle::optional::multiarch::{Inspection, Platform};
    let inspect = |image: String| async move {
        let once = || async {
            let reference = image
                .parse::<olm_image::ImageRef>()
                .map_err(|e| e.to_string())?;
            client
                .platforms(&reference)
                .await
                .map(|found| {
                    found
                        .into_iter()
                        .map(|(os, arch)| Platform::new(os, arch))
                        .collect()
                })
                .map_err(|e| e.to_string())
        };
        let mut got: Inspection = once().await;
        if got.is_err() {
            got = once().await;
        }
        (image, got)
    };
    futures::stream::iter(images)
        .map(inspect)
        .buffered(4)
        .collect()
        .await
}

/// What to pass to get past a render refusal; printed after upstream's message, unchanged.
fn render_hint(message: &str, req: &RenderRequest) -> Option<&'static str> {
    if message.contains("webhookDefinitions are not supported") && req.cert_provider.is_none() {
        Some(
            "hint: the bundle has webhooks, which need certificates: pass --cert-provider cert-manager or --cert-provider openshift-service-ca",
        )
    } else if message.contains("required field \"watchNamespace\" is missing")
        && req.watch_namespace.is_none()
    {
        Some(
            "hint: the bundle does not support AllNamespaces: pass --watch-namespace NAMESPACE (the install namespace itself for OwnNamespace)",
        )
    } else {
        None
    }
}

pub fn run_crd(cmd: CrdCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        CrdCommand::Diff { old, new } => {
            let read = |p: &Path| {
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
            };
            let files =
                crddiff::check_upgrade_texts(&read(&old)?, &read(&new)?).map_err(|e| anyhow!(e))?;
            for name in &files.missing {
                eprintln!(
                    "note: CRD {name:?} is only in {}: replacing the file does not remove it",
                    old.display()
                );
            }
            for name in &files.added {
                eprintln!(
                    "note: CRD {name:?} is new in {}: nothing installed to break",
                    new.display()
                );
            }
            if files.is_safe() {
                return Ok(ExitCode::SUCCESS);
            }
            for report in files.reports.iter().filter(|r| !r.is_safe()) {
                println!("{report}");
            }
            Ok(ExitCode::FAILURE)
        }
    }
}
