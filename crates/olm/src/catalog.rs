//! `olm catalog …` subcommands: validate, render, list and init file-based catalogs.
//!
//! Exit codes follow `opm`: 0 on success, 1 on any error, with the error on stderr.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, anyhow, bail};
use olm_catalog::load;
use olm_catalog::model::{Blob, Catalog, ChannelName, Icon, Package, PackageName};
use olm_catalog::validate::ValidationError;
use olm_catalog::write::{self, Format};
use olm_goenc::quote;

use crate::output::{CatalogFormat, JsonOrYaml};

#[derive(clap::Subcommand)]
pub enum Command {
    /// Validate a file-based catalog, printing opm's messages.
    ///
    /// Silent with exit code 0 when valid; otherwise the first structural error or the
    /// `invalid index:` tree goes to stderr (or into the JSON/YAML report) and the exit code is 1.
    #[command(after_help = "Examples:
  olm catalog validate ./catalog          silent, exit code 0 when valid (opm validate)
  olm catalog validate ./catalog -o json  a report: passed, or the error
  olm catalog validate quay.io/operatorhubio/catalog:latest")]
    Validate {
        /// The catalog: a directory or file, `-` for stdin, or a catalog image (as `render`
        /// takes it).
        #[arg(value_name = "REF")]
        reference: String,
        /// Print a report instead of an error: json or yaml.
        #[arg(short = 'o', long = "output", value_enum, hide_possible_values = true)]
        output: Option<JsonOrYaml>,
    },
    /// Render catalogs (directories, files, or `-` for stdin) as one stream.
    #[command(after_help = "Examples:
  olm catalog render ./catalog                                      JSON, as opm render
  olm catalog render ./catalog -o yaml > catalog.yaml
  olm catalog render quay.io/operatorhubio/catalog:latest -o jsonl  catalogd's catalog.jsonl
  olm catalog render ./bundle                                       a bundle directory as an olm.bundle blob")]
    Render {
        /// Catalogs: directories or files, `-` for stdin, bundle directories, or catalog or
        /// bundle images.
        #[arg(required = true, value_name = "REF")]
        refs: Vec<String>,
        /// Output format: json (opm's default), yaml, or jsonl (catalogd's canonical catalog.jsonl).
        #[arg(
            short = 'o',
            long = "output",
            value_enum,
            default_value = "json",
            hide_possible_values = true
        )]
        output: CatalogFormat,
        /// Run migrations up to this level (none, bundle-object-to-csv-metadata).
        #[arg(long = "migrate-level", conflicts_with = "migrate")]
        migrate_level: Option<String>,
        /// Run all migrations.
        #[arg(long)]
        migrate: bool,
    },
    /// List packages, channels or bundles of a catalog.
    #[command(subcommand)]
    List(ListCommand),
    /// Draw upgrade graphs: Mermaid (as opm alpha render-graph), DOT or SVG.
    Graph(crate::catalog_graph::Args),
    /// Render a catalog template (basic, semver, substitutes) into a catalog.
    Template(crate::catalog_template::Args),
    /// Add a ClusterCatalog to the cluster of the kubeconfig and wait until it serves.
    ///
    /// Prints `catalog "NAME" created`. A catalog that does not come to serve within
    /// --timeout is deleted again and the command fails with its Progressing reason and
    /// message (an image that cannot be pulled, a catalog that does not load).
    Add(crate::catalog_add::Args),
    /// Show the cluster's ClusterCatalogs: priority, availability, polling, serving, image.
    Get(crate::catalog_cluster::GetArgs),
    /// Change a ClusterCatalog's priority, polling, availability or image.
    Update(crate::catalog_cluster::UpdateArgs),
    /// Delete a ClusterCatalog and wait until it is gone.
    Delete(crate::catalog_cluster::DeleteArgs),
    /// Edit a catalog or template as the Catalog Update Formulary's yq recipes do: add a
    /// bundle to a channel, add or change a `replaces` edge, remove a bundle, substitute one.
    ///
    /// The result is checked with opm's rules first; problems the edit introduces are printed
    /// and refuse the write unless --force. --dry-run prints a diff instead.
    #[command(subcommand)]
    Edit(crate::catalog_edit::Command),
    /// Serve a file-based catalog over OLM v0's registry gRPC API, as `opm serve` does for
    /// CatalogSources: api.Registry, grpc.health.v1 and server reflection.
    Serve(crate::catalog_serve::Args),
    /// Browse catalogs on disk or in images in a web browser: packages, channels, upgrade
    /// graphs, bundles and what a ClusterExtension would get (the pages catalogd serves at
    /// /browse/).
    ServeUi(crate::catalog_serve_ui::Args),
    /// Print a new olm.package blob.
    #[command(after_help = "Examples:
  olm catalog init etcd  as opm init
  olm catalog init etcd -c stable -d README.md -i icon.png -o yaml > catalog/etcd/package.yaml")]
    Init {
        /// The package name.
        package: String,
        /// The default channel.
        #[arg(short = 'c', long = "default-channel", default_value = "")]
        default_channel: String,
        /// Path to the package icon.
        #[arg(short = 'i', long = "icon")]
        icon: Option<PathBuf>,
        /// Path to the package description (markdown).
        #[arg(short = 'd', long = "description")]
        description: Option<PathBuf>,
        /// Output format: json or yaml.
        #[arg(
            short = 'o',
            long = "output",
            value_enum,
            default_value = "json",
            hide_possible_values = true
        )]
        output: JsonOrYaml,
    },
}

#[derive(clap::Subcommand)]
pub enum ListCommand {
    /// NAME, DISPLAY NAME and DEFAULT CHANNEL of every package.
    #[command(after_help = "Examples:
  olm catalog list packages ./catalog
  olm catalog list packages quay.io/operatorhubio/catalog:latest")]
    Packages {
        /// The catalog: a directory or file, `-` for stdin, or a catalog image.
        #[arg(value_name = "REF")]
        reference: String,
    },
    /// PACKAGE, CHANNEL and HEAD of every channel (optionally of one package).
    #[command(after_help = "Examples:
  olm catalog list channels ./catalog
  olm catalog list channels ./catalog etcd  only the etcd package's channels")]
    Channels {
        /// The catalog: a directory or file, `-` for stdin, or a catalog image.
        #[arg(value_name = "REF")]
        reference: String,
        /// Only the channels of this package.
        package: Option<String>,
    },
    /// Every bundle with its channel and upgrade edges (optionally of one package).
    #[command(after_help = "Examples:
  olm catalog list bundles ./catalog
  olm catalog list bundles quay.io/operatorhubio/catalog:latest etcd  only the etcd package's bundles")]
    Bundles {
        /// The catalog: a directory or file, `-` for stdin, or a catalog image.
        #[arg(value_name = "REF")]
        reference: String,
        /// Only the bundles of this package.
        package: Option<String>,
    },
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    match cmd {
        Command::Validate { reference, output } => validate(&reference, output),
        Command::Render {
            refs,
            output,
            migrate_level,
            migrate,
        } => render(&refs, output, migrate_level.as_deref(), migrate),
        Command::List(l) => list(l),
        Command::Graph(args) => crate::catalog_graph::run(args),
        Command::Template(args) => crate::catalog_template::run(args),
        Command::Add(args) => crate::catalog_add::run(args),
        Command::Get(args) => crate::catalog_cluster::get(args),
        Command::Update(args) => crate::catalog_cluster::update(args),
        Command::Delete(args) => crate::catalog_cluster::delete(args),
        Command::Edit(cmd) => crate::catalog_edit::run(cmd),
        Command::Serve(args) => crate::catalog_serve::run(args),
        Command::ServeUi(args) => crate::catalog_serve_ui::run(args),
        Command::Init {
            package,
            default_channel,
            icon,
            description,
            output,
        } => init(
            &package,
            &default_channel,
            icon.as_deref(),
            description.as_deref(),
            output,
        ),
    }
}

fn validate(reference: &str, output: Option<JsonOrYaml>) -> anyhow::Result<ExitCode> {
    let opts = load::LoadOptions {
        keep_raw: false,
        validate_only: true,
    };
    let loaded =
        crate::sources::load_catalog(reference, crate::sources::Registry::default(), &opts);
    let result: Result<(), String> = match loaded {
        // A load error names the file (and line) itself; anything else is named by the reference.
        Err(e) => Err(match e.downcast_ref::<load::LoadError>() {
            Some(load_error) => load_error.to_string(),
            None => format!("{}: {e:#}", quote(reference)),
        }),
        Ok(cat) => olm_catalog::validate(&cat).map_err(|e: ValidationError| e.to_string()),
    };
    match output {
        None => match result {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(msg) => {
                eprintln!("{msg}");
                Ok(ExitCode::FAILURE)
            }
        },
        Some(fmt) => {
            let report = match &result {
                Ok(()) => serde_json::json!({"passed": true}),
                Err(msg) => serde_json::json!({"passed": false, "error": {"message": msg}}),
            };
            crate::output::print_value(&report, fmt)?;
            Ok(if result.is_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
    }
}

/// A catalog directory or file, `-`, a bundle directory, or a catalog or bundle image.
/// A catalog reference loaded for output written from the model (`json`, `yaml`, listings):
/// the blobs' own text is not kept.
fn load_ref(r: &str, keep_raw: bool) -> anyhow::Result<Catalog> {
    crate::sources::load_ref(
        r,
        crate::sources::Registry::default(),
        &load::LoadOptions {
            keep_raw,
            validate_only: false,
        },
    )
}

fn render(
    refs: &[String],
    output: CatalogFormat,
    level: Option<&str>,
    all: bool,
) -> anyhow::Result<ExitCode> {
    let format = Format::from(output);
    let prepare = |c: &mut Catalog, r: &str| -> anyhow::Result<()> {
        write::render_postprocess(c);
        if level.is_some() || all {
            olm_catalog::migrate::migrate(c, level)
                .map_err(|e| anyhow!("render reference {}: {e}", quote(r)))?;
        }
        Ok(())
    };
    // One catalog on disk, written grouped by package: read and written a package at a time, so
    // memory follows the largest package rather than the catalog. (JSONL keeps the files' order.)
    if let [r] = refs
        && format != Format::Jsonl
        && let Some(path) = crate::sources::local_catalog(r)
    {
        let stdout = io::stdout();
        let mut w = io::BufWriter::new(stdout.lock());
        let opts = load::LoadOptions {
            keep_raw: false,
            validate_only: false,
        };
        let written = olm_catalog::stream::for_each_package(path, &opts, |mut c| {
            prepare(&mut c, r)?;
            write::write(&c, format, &mut w).map_err(anyhow::Error::from)
        })
        .and_then(|()| w.flush().map_err(anyhow::Error::from));
        return match written {
            Ok(()) => Ok(ExitCode::SUCCESS),
            Err(e) if e.is::<olm_catalog::LoadError>() => {
                Err(anyhow!("render reference {}: {e:#}", quote(r)))
            }
            Err(e) => match e.downcast::<io::Error>() {
                Ok(io) => crate::output::ignore_broken_pipe(Err(io))
                    .map(|()| ExitCode::SUCCESS)
                    .map_err(anyhow::Error::from),
                Err(e) => Err(e),
            },
        };
    }
    let mut cat = Catalog::default();
    for r in refs {
        // opm's json and yaml are written from the model; only jsonl is the blobs' own text.
        let mut c = load_ref(r, format == Format::Jsonl)?;
        prepare(&mut c, r)?;
        cat.extend(c);
    }
    let stdout = io::stdout();
    let mut w = io::BufWriter::new(stdout.lock());
    crate::output::ignore_broken_pipe(write::write(&cat, format, &mut w).and_then(|_| w.flush()))?;
    Ok(ExitCode::SUCCESS)
}

fn list(cmd: ListCommand) -> anyhow::Result<ExitCode> {
    let (reference, package) = match &cmd {
        ListCommand::Packages { reference } => (reference, None),
        ListCommand::Channels { reference, package }
        | ListCommand::Bundles { reference, package } => (reference, package.as_deref()),
    };
    let cat = load_ref(reference, false)?;
    let idx = olm_catalog::build_index(&cat).map_err(|e| anyhow!("{e}"))?;
    if let Some(p) = package
        && !idx.packages.contains_key(p)
    {
        bail!("package {} not found", quote(p));
    }
    let pkgs = idx
        .packages
        .values()
        .filter(|p| package.is_none_or(|want| p.name == want));
    let mut rows = Vec::new();
    match cmd {
        ListCommand::Packages { .. } => {
            rows.push(vec![
                "NAME".into(),
                "DISPLAY NAME".into(),
                "DEFAULT CHANNEL".into(),
            ]);
            for p in pkgs {
                let display = p
                    .default_channel
                    .and_then(|dc| p.channels.get(dc))
                    .and_then(|ch| ch.head().ok())
                    .and_then(|h| p.bundles.get(h.name.as_str()))
                    .and_then(|b| b.bundle.csv_display_name())
                    .unwrap_or_default();
                rows.push(vec![
                    p.name.to_owned(),
                    display,
                    p.default_channel.unwrap_or_default().to_owned(),
                ]);
            }
        }
        ListCommand::Channels { .. } => {
            rows.push(vec!["PACKAGE".into(), "CHANNEL".into(), "HEAD".into()]);
            for p in pkgs {
                for ch in in_natural_order(p) {
                    let head = match ch.head() {
                        Ok(h) => h.name.to_string(),
                        Err(e) => format!("ERROR: {e}"),
                    };
                    rows.push(vec![p.name.to_owned(), ch.name.to_owned(), head]);
                }
            }
        }
        ListCommand::Bundles { .. } => {
            rows.push(
                [
                    "PACKAGE",
                    "CHANNEL",
                    "BUNDLE",
                    "REPLACES",
                    "SKIPS",
                    "SKIP RANGE",
                    "IMAGE",
                ]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            );
            for p in pkgs {
                for ch in in_natural_order(p) {
                    for (name, e) in &ch.entries {
                        let image = p
                            .bundles
                            .get(name)
                            .map(|b| b.bundle.image.clone())
                            .unwrap_or_default();
                        rows.push(vec![
                            p.name.to_owned(),
                            ch.name.to_owned(),
                            name.to_string(),
                            e.replaces.clone(),
                            skips_cell(&e.skips),
                            e.skip_range.clone(),
                            image,
                        ]);
                    }
                }
            }
        }
    }
    crate::output::print_table(&rows)?;
    Ok(ExitCode::SUCCESS)
}

/// A package's channels as people count them (`v25.3` before `v25.10`).
fn in_natural_order<'a>(
    p: &'a olm_catalog::index::PackageNode<'a>,
) -> Vec<&'a olm_catalog::index::ChannelNode<'a>> {
    let mut channels: Vec<_> = p.channels.values().collect();
    channels.sort_by(|a, b| olm_catalog::order::natural(a.name, b.name));
    channels
}

/// How many skipped bundles a table cell names before it counts the rest.
const SKIPS_SHOWN: usize = 3;

/// The SKIPS cell: up to [`SKIPS_SHOWN`] names, then how many more, so that one bundle
/// skipping hundreds (the certified catalog has them) does not pad every row of the table.
fn skips_cell(skips: &[String]) -> String {
    if skips.len() <= SKIPS_SHOWN {
        return skips.join(",");
    }
    format!(
        "{},… (+{} more)",
        skips[..SKIPS_SHOWN].join(","),
        skips.len() - SKIPS_SHOWN
    )
}

fn init(
    pkg: &str,
    default_channel: &str,
    icon: Option<&Path>,
    description: Option<&Path>,
    output: JsonOrYaml,
) -> anyhow::Result<ExitCode> {
    let format = Format::from(output);
    let icon = match icon {
        None => None,
        Some(p) => {
            let data = std::fs::read(p)
                .with_context(|| format!("read icon {}", quote(&p.display().to_string())))?;
            Some(Icon::from_image(&data)?)
        }
    };
    let description = match description {
        None => String::new(),
        Some(p) => std::fs::read_to_string(p)
            .with_context(|| format!("read description {}", quote(&p.display().to_string())))?,
    };
    let cat = Catalog {
        blobs: vec![Blob::from(Package {
            name: PackageName::new(pkg),
            default_channel: ChannelName::new(default_channel),
            icon,
            description,
            ..Default::default()
        })],
    };
    let mut out = Vec::new();
    write::write(&cat, format, &mut out)?;
    crate::output::ignore_broken_pipe(io::stdout().write_all(&out))?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_are_named_up_to_three_then_counted() {
        let names = |n: usize| -> Vec<String> { (1..=n).map(|i| format!("p.v{i}")).collect() };
        assert_eq!(skips_cell(&[]), "");
        assert_eq!(skips_cell(&names(3)), "p.v1,p.v2,p.v3");
        assert_eq!(skips_cell(&names(15)), "p.v1,p.v2,p.v3,… (+12 more)");
    }

    #[test]
    fn channels_are_listed_as_people_count() {
        let text = r#"{"schema":"olm.package","name":"p","defaultChannel":"v25.3"}
{"schema":"olm.channel","package":"p","name":"v25.10","entries":[{"name":"p.v2"}]}
{"schema":"olm.channel","package":"p","name":"v25.3","entries":[{"name":"p.v1"}]}
{"schema":"olm.bundle","package":"p","name":"p.v1","image":"i1","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}
{"schema":"olm.bundle","package":"p","name":"p.v2","image":"i2","properties":[{"type":"olm.package","value":{"packageName":"p","version":"2.0.0"}}]}
"#;
        let cat = olm_catalog::load::load_bytes(text.as_bytes(), "t").expect("catalog");
        let idx = olm_catalog::build_index(&cat).expect("index");
        let names: Vec<&str> = in_natural_order(&idx.packages["p"])
            .iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["v25.3", "v25.10"]);
    }
}
