//! `olm catalog graph`: upgrade graphs as Mermaid (byte for byte as `opm alpha render-graph`),
//! Graphviz DOT, or an SVG picture.

use std::process::ExitCode;

use olm_catalog::model::{BundleName, Catalog, PackageName};
use olm_graph::{Drawing, GraphOptions, dot, mermaid, svg};

use crate::sources::{self, Registry};

#[derive(clap::Args)]
#[command(after_help = "Examples:
  olm catalog graph ./catalog -p etcd                          Mermaid, as opm alpha render-graph
  olm catalog graph ./catalog -p etcd --format svg > etcd.svg  a picture to open in a browser
  olm catalog graph ./catalog -p etcd --format dot | dot -Tpng > etcd.png
  olm catalog graph quay.io/operatorhubio/catalog:latest -p etcd --minimum-edge etcdoperator.v0.9.2 --draw-v0-semantics")]
pub struct Args {
    /// Catalog directories, files or images.
    #[arg(required = true)]
    refs: Vec<String>,
    /// Only this package.
    #[arg(short = 'p', long)]
    package: Option<PackageName>,
    /// Only edges at or above this bundle's version.
    #[arg(long)]
    minimum_edge: Option<BundleName>,
    /// Mark bundles OLM v0 would skip over and the edges it never takes.
    #[arg(long)]
    draw_v0_semantics: bool,
    /// mermaid, dot or svg.
    #[arg(long, value_enum, default_value = "mermaid")]
    format: GraphFormat,
    /// Speak plain HTTP to registries.
    #[arg(long)]
    plain_http: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum GraphFormat {
    Mermaid,
    Dot,
    Svg,
}

/// Writes a drawing in `format`.
pub fn draw(drawing: &Drawing, format: GraphFormat) -> String {
    match format {
        GraphFormat::Mermaid => mermaid::write(drawing),
        GraphFormat::Dot => dot::write(drawing),
        GraphFormat::Svg => svg::write(drawing),
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let registry = Registry {
        plain_http: args.plain_http,
    };
    let mut cat = Catalog::default();
    for r in &args.refs {
        cat.extend(sources::load_ref(
            r,
            registry,
            &olm_catalog::load::LoadOptions {
                keep_raw: false,
                validate_only: false,
            },
        )?);
    }
    let opts = GraphOptions {
        package: args.package,
        minimum_edge: args.minimum_edge,
        v0_semantics: args.draw_v0_semantics,
        // Every edge, as opm draws them.
        max_skip_range_edges: None,
    };
    let drawing = Drawing::new(&cat, &opts)?;
    for w in &drawing.warnings {
        eprintln!("{w}");
    }
    crate::output::stdout(draw(&drawing, args.format).as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
