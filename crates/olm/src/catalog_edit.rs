//! `olm catalog edit`: the Catalog Update Formulary as commands on a file-based catalog
//! (a file or a directory of them), a basic template or a semver template. Each edit is checked
//! before anything is written (see `olm_template::edit`): problems it introduces refuse the write
//! unless `--force`; `--dry-run` prints the change as a unified diff instead of writing it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use olm_template::edit::{self, Document, Edit, Kind};

/// Edit a catalog or template: add, relink, remove or substitute bundles.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Add a bundle to a channel (a catalog or basic template entry; a semver template's
    /// archetype gets the bundle image).
    #[command(after_help = "Examples:
  olm catalog edit add-bundle catalog.yaml --channel candidate-v1.1 --name testoperator.v1.1.1 --replaces testoperator.v1.1.0
  olm catalog edit add-bundle basic.yaml --channel stable --name testoperator.v1.2.0 --replaces testoperator.v1.1.2 --skip-range '>=1.1.0 <1.2.0' --image quay.io/example/testoperator-bundle:v1.2.0
  olm catalog edit add-bundle semver.yaml --channel Stable --image quay.io/example/testoperator-bundle:v1.2.0  a semver template")]
    AddBundle {
        #[command(flatten)]
        common: Common,
        /// The channel (semver template: Candidate, Fast or Stable).
        #[arg(long)]
        channel: String,
        /// The bundle's name (not for a semver template).
        #[arg(long, default_value = "", hide_default_value = true)]
        name: String,
        /// The bundle image (semver template: required; basic template: also adds its
        /// `olm.bundle` entry).
        #[arg(long)]
        image: Option<String>,
        /// The bundle it replaces.
        #[arg(long)]
        replaces: Option<String>,
        /// Bundles it skips (repeatable).
        #[arg(long)]
        skips: Vec<String>,
        /// The versions it skips, e.g. '>=1.0.0 <1.1.0'.
        #[arg(long)]
        skip_range: Option<String>,
    },
    /// Add a `replaces` edge between two bundles of a channel (the first replaces nothing yet).
    #[command(after_help = "Examples:
  olm catalog edit add-replaces catalog.yaml --channel candidate-v1.1 --name testoperator.v1.1.1 --replaces testoperator.v1.1.0
  olm catalog edit add-replaces ./catalog --package testoperator --channel stable --name testoperator.v1.1.1 --replaces testoperator.v1.1.0 --dry-run")]
    AddReplaces {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        edge: EdgeArgs,
    },
    /// Point a bundle's `replaces` edge at another bundle.
    #[command(after_help = "Examples:
  olm catalog edit replace-edge catalog.yaml --channel stable --name testoperator.v1.1.2 --replaces testoperator.v1.1.1
  olm catalog edit replace-edge catalog.yaml --channel stable --name testoperator.v1.1.2 --replaces testoperator.v1.1.1 --dry-run  the diff; write nothing")]
    ReplaceEdge {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        edge: EdgeArgs,
    },
    /// Remove a bundle from a channel.
    #[command(after_help = "Examples:
  olm catalog edit remove-bundle catalog.yaml --channel stable --name testoperator.v1.1.2  withdraw the channel head
  olm catalog edit remove-bundle basic.yaml --channel stable --name testoperator.v1.1.2 --image quay.io/example/testoperator-bundle:v1.1.2  and its olm.bundle entry")]
    RemoveBundle {
        #[command(flatten)]
        common: Common,
        /// The channel.
        #[arg(long)]
        channel: String,
        /// The bundle.
        #[arg(long)]
        name: String,
        /// Basic template: also remove the `olm.bundle` entry of this image (a bundle no
        /// channel lists must not be rendered).
        #[arg(long)]
        image: Option<String>,
    },
    /// Substitute a bundle everywhere in the graph (semver template: a bundle image).
    #[command(after_help = "Examples:
  olm catalog edit substitute catalog.yaml --from testoperator.v1.1.0 --to testoperator.v1.1.0-cve --dry-run
  olm catalog edit substitute semver.yaml --from quay.io/example/testoperator-bundle:v1.1.0 --to quay.io/example/testoperator-bundle:v1.1.0-cve")]
    Substitute {
        #[command(flatten)]
        common: Common,
        /// The bundle name (or image) to replace.
        #[arg(long)]
        from: String,
        /// What replaces it.
        #[arg(long)]
        to: String,
    },
}

/// An edge of a channel: `name` replaces `replaces`.
#[derive(clap::Args, Debug)]
pub struct EdgeArgs {
    /// The channel.
    #[arg(long)]
    channel: String,
    /// The bundle whose edge it is.
    #[arg(long)]
    name: String,
    /// The bundle it replaces.
    #[arg(long)]
    replaces: String,
}

/// What every edit takes.
#[derive(clap::Args, Debug)]
pub struct Common {
    /// The catalog file or directory, or the template file.
    path: PathBuf,
    /// Edit only this package's channels (for catalogs of several packages).
    #[arg(long)]
    package: Option<String>,
    /// Print the change as a diff; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Write even when the result does not validate.
    #[arg(long)]
    force: bool,
}

/// One file of the input.
struct File {
    path: PathBuf,
    text: String,
    doc: Document,
}

pub fn run(cmd: Command) -> anyhow::Result<ExitCode> {
    let (common, edit) = match cmd {
        Command::AddBundle {
            common,
            channel,
            name,
            image,
            replaces,
            skips,
            skip_range,
        } => (
            common,
            Edit::AddBundle {
                channel,
                name,
                image,
                replaces,
                skips,
                skip_range,
            },
        ),
        Command::AddReplaces { common, edge } => (
            common,
            Edit::AddReplaces {
                channel: edge.channel,
                name: edge.name,
                replaces: edge.replaces,
            },
        ),
        Command::ReplaceEdge { common, edge } => (
            common,
            Edit::ReplaceEdge {
                channel: edge.channel,
                name: edge.name,
                replaces: edge.replaces,
            },
        ),
        Command::RemoveBundle {
            common,
            channel,
            name,
            image,
        } => (
            common,
            Edit::RemoveBundle {
                channel,
                name,
                image,
            },
        ),
        Command::Substitute { common, from, to } => (common, Edit::Substitute { from, to }),
    };
    if let Edit::AddBundle { name, image, .. } = &edit
        && name.is_empty()
        && image.is_none()
    {
        bail!("add-bundle needs the bundle's --name (or, for a semver template, its --image)");
    }
    let files = read(&common.path)?;
    let before = combined(&files);
    let mut edited: Vec<(usize, Document)> = Vec::new();
    let mut reasons = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let mut doc = f.doc.clone();
        match edit::apply(&mut doc, &edit, common.package.as_deref()) {
            Ok(()) => edited.push((i, doc)),
            Err(e) => reasons.push(e),
        }
    }
    let substitute = matches!(edit, Edit::Substitute { .. });
    if edited.is_empty() {
        let reason = reasons.first().cloned().unwrap_or_default();
        bail!("{}: {reason}", common.path.display());
    }
    if edited.len() > 1 && !substitute {
        let paths: Vec<String> = edited
            .iter()
            .map(|(i, _)| files[*i].path.display().to_string())
            .collect();
        bail!(
            "the edit applies to several files ({}): name the package with --package, or edit one of the files",
            paths.join(", ")
        );
    }
    let mut after_files: Vec<Document> = files.iter().map(|f| f.doc.clone()).collect();
    for (i, doc) in &edited {
        after_files[*i] = doc.clone();
    }
    let after = combined_docs(&after_files, before.kind);
    let findings = edit::check(&before, &after);
    for w in &findings.warnings {
        eprintln!("warning: {w}");
    }
    if let Some(report) = findings.error_report() {
        eprintln!("{report}");
    }
    if common.dry_run {
        for (i, doc) in &edited {
            let f = &files[*i];
            let new = edit::render(doc);
            let name = f.path.display().to_string();
            print!(
                "{}",
                similar::TextDiff::from_lines(&f.text, &new)
                    .unified_diff()
                    .header(&name, &name)
            );
        }
        return Ok(exit(&findings));
    }
    if !findings.errors.is_empty() && !common.force {
        eprintln!(
            "{}: not written: the result does not validate (--force writes it anyway)",
            common.path.display()
        );
        return Ok(ExitCode::FAILURE);
    }
    for (i, doc) in &edited {
        let path = &files[*i].path;
        crate::output::write_atomically(path, &edit::render(doc))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn exit(findings: &edit::Findings) -> ExitCode {
    if findings.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The file, or every catalog file under the directory.
fn read(path: &Path) -> anyhow::Result<Vec<File>> {
    let paths = if path.is_dir() {
        olm_catalog::load::walk(path).with_context(|| format!("reading {}", path.display()))?
    } else {
        vec![path.to_path_buf()]
    };
    let mut files = Vec::new();
    for p in paths {
        let text =
            std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
        let doc = edit::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", p.display()))?;
        if path.is_dir() && doc.kind != Kind::Fbc {
            bail!(
                "{}: a {} in a catalog directory; edit the template file itself",
                p.display(),
                doc.kind.describe()
            );
        }
        files.push(File { path: p, text, doc });
    }
    if files.is_empty() {
        bail!("{}: no catalog files", path.display());
    }
    Ok(files)
}

/// All files' documents as one (a directory is one catalog).
fn combined(files: &[File]) -> Document {
    let docs: Vec<Document> = files.iter().map(|f| f.doc.clone()).collect();
    let kind = files.first().map_or(Kind::Fbc, |f| f.doc.kind);
    combined_docs(&docs, kind)
}

fn combined_docs(docs: &[Document], kind: Kind) -> Document {
    Document {
        kind,
        json: false,
        docs: docs.iter().flat_map(|d| d.docs.iter().cloned()).collect(),
        source: String::new(),
    }
}
