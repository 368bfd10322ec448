//! `olm catalog template [TYPE] [FILE]`: render a catalog template (basic, semver, substitutes),
//! with opm's argument rules and messages.

use std::io::{self, Read};
use std::process::ExitCode;

use anyhow::{anyhow, bail};
use olm_catalog::write::{self, Format};
use olm_goenc::quote;
use olm_graph::{Drawing, GraphOptions};
use olm_template::{self as template, RenderOptions, SemverEdges, TemplateKind};

use crate::catalog_graph::{self, GraphFormat};
use crate::sources::{self, Registry, TemplateBundles};

#[derive(clap::Args)]
#[command(after_help = "Examples:
  olm catalog template semver.yaml -o yaml > catalog.yaml        type detected from the schema (opm alpha render-template)
  olm catalog template basic basic.yaml --catalog ./old-catalog  bundles from a catalog, offline
  olm catalog template semver semver.yaml -o mermaid             the channel graph
  olm catalog template substitutes substitutes.yaml --catalog quay.io/operatorhubio/catalog:latest")]
pub struct Args {
    /// [TYPE] [FILE]: the template type (basic, semver, substitutes) and file; without a type it
    /// is detected from the schema, without a file (or with -) the template is read from stdin.
    #[arg(num_args = 0..=2)]
    args: Vec<String>,
    /// Catalogs to take template bundle images from before pulling them from their registry.
    #[arg(long = "catalog")]
    catalogs: Vec<String>,
    /// json, yaml or mermaid.
    #[arg(
        short,
        long,
        value_enum,
        default_value = "json",
        hide_possible_values = true
    )]
    output: TemplateOutput,
    /// Run migrations up to this level on the rendered catalog.
    #[arg(long)]
    migrate_level: Option<String>,
    /// The semver template's edge algorithm: current, v1.57 (v1.57–v1.60) or v1.37 (v1.37–v1.56).
    #[arg(long, default_value = "current")]
    semver_edges: String,
    /// Speak plain HTTP to registries.
    #[arg(long)]
    plain_http: bool,
}

/// `-o json|yaml|mermaid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum TemplateOutput {
    Json,
    Yaml,
    Mermaid,
}

fn read_input(path: Option<&str>) -> anyhow::Result<Vec<u8>> {
    let mut buf = Vec::new();
    match path {
        None | Some("-") => {
            io::stdin().read_to_end(&mut buf)?;
        }
        Some(p) => {
            buf = std::fs::read(p).map_err(|e| anyhow!("unable to open {}: {e}", quote(p)))?
        }
    }
    Ok(buf)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (kind, file) = match args.args.as_slice() {
        [] => (None, None),
        [one] => match TemplateKind::from_type(one) {
            Ok(k) => (Some(k), None),
            Err(_) => (None, Some(one.as_str())),
        },
        [t, f] => (Some(TemplateKind::from_type(t)?), Some(f.as_str())),
        _ => bail!("too many arguments"),
    };
    let input = read_input(file)?;
    let kind = match kind {
        Some(k) => k,
        None => template::detect_kind(&input)
            .map_err(|e| anyhow!("auto-detecting template type: {e}"))?,
    };
    let edges = match args.semver_edges.as_str() {
        "current" => SemverEdges::EdgeScoped,
        "v1.57" => SemverEdges::ChannelScopedV1_57,
        "v1.37" => SemverEdges::ChannelScopedV1_37,
        other => bail!(
            "invalid --semver-edges {}, must be one of: [current v1.57 v1.37]",
            quote(other)
        ),
    };
    let registry = Registry {
        plain_http: args.plain_http,
    };
    let catalogs = args
        .catalogs
        .iter()
        .map(|r| sources::load_ref(r, registry, &olm_catalog::load::LoadOptions::default()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let renderer = TemplateBundles { catalogs, registry };
    let mut options = RenderOptions::default();
    options.semver.edges = edges;
    let mut cat = template::render(&input, Some(kind), &renderer, &options)
        .map_err(|e| anyhow!("rendering template: {e}"))?;
    if args.migrate_level.is_some() {
        olm_catalog::migrate::migrate(&mut cat, args.migrate_level.as_deref())?;
    }
    let text = match args.output {
        TemplateOutput::Json => write::to_string(&cat, Format::Json),
        TemplateOutput::Yaml => write::to_string(&cat, Format::Yaml),
        // Like opm, the template's graph is drawn with OLM v0's decorations.
        TemplateOutput::Mermaid => {
            let opts = GraphOptions {
                v0_semantics: true,
                ..GraphOptions::default()
            };
            catalog_graph::draw(&Drawing::new(&cat, &opts)?, GraphFormat::Mermaid)
        }
    };
    crate::output::stdout(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
