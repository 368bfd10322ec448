//! `olm`: the Operator Lifecycle Manager command line. The binary only wires: every decision lives in
//! the library crates, each subcommand module turns arguments into library calls and results into output.

mod bundle;
mod bundle_generate;
mod catalog;
mod catalog_add;
mod catalog_cluster;
mod catalog_edit;
mod catalog_graph;
mod catalog_serve;
mod catalog_serve_ui;
mod catalog_template;
mod catalogd;
mod client;
mod dev;
mod image;
mod install_olm;
mod limits;
mod output;
mod progress;
mod resolve;
mod run;
mod sources;

use std::process::ExitCode;

use clap::Parser;

/// jemalloc, configured in `.cargo/config.toml` to give freed memory back: `olm run`'s caches
/// rise and fall with the cluster, and glibc's allocator kept what they once held.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The Operator Lifecycle Manager.
#[derive(Parser)]
#[command(name = "olm", version, about)]
enum Cli {
    /// File-based catalogs: validate, render, templates, graphs, listings.
    #[command(subcommand)]
    Catalog(catalog::Command),
    /// A local control plane and registry for development.
    #[command(subcommand)]
    Dev(dev::Command),
    /// Build, push and pull catalog and bundle images.
    #[command(subcommand)]
    Image(image::Command),
    /// Run OLM on a cluster: v1 and v0 in one process (--olm picks one)
    ///
    /// OLM v1: the catalog server and the ClusterCatalog, ClusterExtension and
    /// ClusterObjectSet controllers; OLM v0: the CatalogSource, Subscription, InstallPlan, CSV
    /// and OperatorGroup controllers and the PackageManifest API.
    Run(run::Args),
    /// Serve ClusterCatalogs: pull catalog images and serve their content over HTTP.
    Catalogd(catalogd::Args),
    /// Check and render registry+v1 bundles.
    #[command(subcommand)]
    Bundle(bundle::Command),
    /// CustomResourceDefinition upgrade safety.
    #[command(subcommand)]
    Crd(bundle::CrdCommand),
    /// Which bundle a ClusterExtension would get from a set of catalogs, and why.
    Resolve(resolve::Args),
    /// Search the packages the cluster's catalogs serve, or show one package's versions
    Search(client::SearchArgs),
    /// Install a package from the cluster's catalogs as a ClusterExtension and follow it.
    Install(client::InstallArgs),
    /// Change an extension's version range, channels or configuration, and follow it.
    Upgrade(client::UpgradeArgs),
    /// Remove an extension and what it installed.
    Uninstall(client::UninstallArgs),
    /// List installed extensions, their bundles, conditions and available upgrades.
    List(client::ListArgs),
    /// Show one extension: conditions, revisions, objects, and why it is not progressing.
    Describe(client::DescribeArgs),
    /// OLM v0 from the client: packages, Subscriptions and their CSVs.
    #[command(subcommand)]
    V0(client::v0::Command),
    /// Move operators from OLM v0 to OLM v1: catalogs, checks, then each operator in place.
    Migrate(client::migrate::MigrateArgs),
    /// Install OLM on a cluster and wait until it is ready
    ///
    /// The manifests of install.yaml, applied server-side: OLM v1, or both OLMs with --olm both.
    InstallOlm(install_olm::InstallArgs),
    /// Remove OLM from a cluster; its CRDs and their objects stay unless asked.
    UninstallOlm(install_olm::UninstallArgs),
}

/// A single-threaded async runtime for commands that talk to a cluster or a registry.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    use anyhow::Context as _;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Log filter when `RUST_LOG` is unset: what the long-running commands (`olm run`,
/// `olm catalogd`, the `olm dev` supervisor) report, and only warnings from the libraries
/// beneath them.
const DEFAULT_LOG_FILTER: &str =
    "warn,olm=info,olm_controller=info,olm_catalogd=info,olm_testenv=info";

/// Logs go to stderr, filtered by `RUST_LOG` (`tracing-subscriber`'s env-filter syntax, e.g.
/// `RUST_LOG=olm_catalogd=debug`); stdout stays for command output.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG_FILTER));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

/// The name usage lines give the program: `kubectl olm` when run as the kubectl plugin
/// (installed, or linked, as `kubectl-olm` on the PATH, which `kubectl olm …` runs), else `olm`.
fn bin_name(argv0: Option<&std::ffi::OsStr>) -> &'static str {
    let file = argv0.and_then(|a| std::path::Path::new(a).file_name());
    match file.and_then(|f| f.to_str()) {
        Some("kubectl-olm") => "kubectl olm",
        _ => "olm",
    }
}

fn main() -> ExitCode {
    use clap::{CommandFactory, FromArgMatches};
    init_logging();
    let argv0 = std::env::args_os().next();
    let name = bin_name(argv0.as_deref());
    let matches = Cli::command().bin_name(name).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match cli {
        Cli::Catalog(cmd) => catalog::run(cmd),
        Cli::Dev(cmd) => dev::run(cmd),
        Cli::Image(cmd) => image::run(cmd),
        Cli::Resolve(args) => resolve::run(args),
        Cli::Run(args) => run::run(args),
        Cli::Catalogd(args) => catalogd::run(args),
        Cli::Bundle(cmd) => bundle::run(cmd),
        Cli::Crd(cmd) => bundle::run_crd(cmd),
        Cli::Search(args) => client::search(args),
        Cli::Install(args) => client::install(args),
        Cli::Upgrade(args) => client::upgrade(args),
        Cli::Uninstall(args) => client::uninstall(args),
        Cli::List(args) => client::list(args),
        Cli::Describe(args) => client::describe(args),
        Cli::V0(cmd) => client::v0::run(cmd),
        Cli::Migrate(cmd) => client::migrate::run(cmd),
        Cli::InstallOlm(args) => install_olm::install(args),
        Cli::UninstallOlm(args) => install_olm::uninstall(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("Error: {}", as_run_by(&format!("{err:#}"), name));
            ExitCode::FAILURE
        }
    }
}

/// A message's command hints (`` `olm search p` ``) as the user runs the program: `` `kubectl
/// olm search p` `` when it runs as the kubectl plugin.
fn as_run_by(message: &str, name: &str) -> String {
    if name == "olm" {
        return message.to_owned();
    }
    message.replace("`olm ", &format!("`{name} "))
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn hints_name_the_program_as_it_was_run() {
        let m = "no bundles\nWhat to do: see `olm search p`, then `olm upgrade x`";
        assert_eq!(super::as_run_by(m, "olm"), m);
        assert_eq!(
            super::as_run_by(m, "kubectl olm"),
            "no bundles\nWhat to do: see `kubectl olm search p`, then `kubectl olm upgrade x`"
        );
    }

    #[test]
    fn named_as_a_kubectl_plugin() {
        use std::ffi::OsStr;
        assert_eq!(
            super::bin_name(Some(OsStr::new("/usr/local/bin/kubectl-olm"))),
            "kubectl olm"
        );
        assert_eq!(
            super::bin_name(Some(OsStr::new("kubectl-olm"))),
            "kubectl olm"
        );
        assert_eq!(
            super::bin_name(Some(OsStr::new("target/release/olm"))),
            "olm"
        );
        assert_eq!(super::bin_name(None), "olm");
    }

    /// Every positional argument of every subcommand says in `--help` what it is: clap shows a
    /// positional without a doc comment as a bare `<NAME>`.
    #[test]
    fn every_positional_argument_is_described_in_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            let path = format!("{path} {}", cmd.get_name());
            for arg in cmd.get_positionals() {
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} <{}>", arg.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &path, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::Cli::command(), "", &mut missing);
        assert!(
            missing.is_empty(),
            "positional arguments without help:\n{}",
            missing.join("\n")
        );
    }

    /// The words of an example line as a shell would pass them to `olm`: the trailing comment
    /// (after two or more spaces) and whatever follows a pipe or a redirection left out, simple
    /// single quotes ('>=1.2.0, <2') removed. `None` for a line with an unclosed quote.
    fn example_words(line: &str) -> Option<Vec<String>> {
        let mut words = Vec::new();
        let mut word: Option<String> = None;
        let mut quoted = false;
        let mut spaces = 0;
        for c in line.trim_start().chars() {
            if quoted {
                if c == '\'' {
                    quoted = false;
                } else {
                    word.get_or_insert_with(String::new).push(c);
                }
                continue;
            }
            if c == ' ' {
                spaces += 1;
                if spaces == 2 {
                    break;
                }
                words.extend(word.take());
                continue;
            }
            spaces = 0;
            if c == '\'' {
                quoted = true;
                word.get_or_insert_with(String::new);
            } else {
                word.get_or_insert_with(String::new).push(c);
            }
        }
        if quoted {
            return None;
        }
        words.extend(word);
        let shell = ["|", "||", "&&", ";", ">", ">>", "<", "2>"];
        if let Some(end) = words.iter().position(|w| shell.contains(&w.as_str())) {
            words.truncate(end);
        }
        Some(words)
    }

    /// Every command users run (every leaf but clap's `help` and hidden ones) shows examples in
    /// `--help`, as kubectl's commands do, and every example — wherever it is shown — parses
    /// with today's flags and runs the command it is listed under: a renamed flag or a
    /// changed argument breaks this test rather than the example.
    #[test]
    fn every_command_has_examples_and_they_parse() {
        fn walk(cmd: &clap::Command, path: &[String], root: &clap::Command, bad: &mut Vec<String>) {
            let mut path = path.to_vec();
            path.push(cmd.get_name().to_owned());
            let name = path.join(" ");
            let help = cmd.get_after_help().map(ToString::to_string);
            let leaf = cmd.get_subcommands().all(|s| s.get_name() == "help");
            if leaf
                && !cmd.is_hide_set()
                && !help.as_deref().is_some_and(|h| h.contains("Examples:"))
            {
                bad.push(format!("`{name}`: no Examples: in --help"));
            }
            for line in help.iter().flat_map(|h| h.lines()) {
                if !line.starts_with("  olm ") {
                    continue;
                }
                let Some(words) = example_words(line) else {
                    bad.push(format!("`{name}`: example {line:?}: unclosed quote"));
                    continue;
                };
                let asks_help = words.iter().any(|w| w == "--help" || w == "-h");
                match root.clone().try_get_matches_from(&words) {
                    Ok(mut m) => {
                        let mut ran = vec!["olm".to_owned()];
                        while let Some((sub, sm)) = m.remove_subcommand() {
                            ran.push(sub);
                            m = sm;
                        }
                        if !ran.starts_with(&path) {
                            bad.push(format!(
                                "`{name}`: example {line:?} runs `{}`",
                                ran.join(" ")
                            ));
                        }
                    }
                    Err(e)
                        if asks_help
                            && matches!(
                                e.kind(),
                                clap::error::ErrorKind::DisplayHelp
                                    | clap::error::ErrorKind::DisplayVersion
                            ) => {}
                    Err(e) => bad.push(format!(
                        "`{name}`: example {line:?} does not parse: {}",
                        e.render()
                    )),
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &path, root, bad);
            }
        }
        let root = super::Cli::command();
        let mut bad = Vec::new();
        walk(&root, &[], &root, &mut bad);
        assert!(bad.is_empty(), "{}", bad.join("\n"));
    }

    #[test]
    fn example_words_are_split_as_a_shell_splits_them() {
        assert_eq!(
            example_words("  olm resolve --version '>=1.2.0, <2' --explain    why").as_deref(),
            Some(
                &["olm", "resolve", "--version", ">=1.2.0, <2", "--explain"].map(String::from)[..]
            )
        );
        assert_eq!(
            example_words("  olm catalog render ./catalog -o yaml > out.yaml").as_deref(),
            Some(&["olm", "catalog", "render", "./catalog", "-o", "yaml"].map(String::from)[..])
        );
        assert_eq!(example_words("  olm x 'open"), None);
    }
}
