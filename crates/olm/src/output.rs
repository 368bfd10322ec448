//! Writing results to stdout and to files. A reader that stops early (`olm … | head`) closes the
//! pipe; that is the reader's choice, not an error, so it ends the command quietly like other
//! Unix tools. Files are replaced whole, never left half-written.

use std::io::{self, Write};
use std::path::Path;

use anyhow::Context as _;

/// Writes `text` to `path` through a temporary file beside it, renamed into place, so a failure
/// leaves the old file whole.
pub fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let mut tmp = tempfile::NamedTempFile::new_in(dir.unwrap_or(Path::new(".")))
        .with_context(|| format!("writing next to {}", path.display()))?;
    tmp.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("replacing {}", path.display()))?;
    Ok(())
}

/// Treats a broken pipe as success.
pub fn ignore_broken_pipe(r: io::Result<()>) -> io::Result<()> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}

/// Writes `bytes` to stdout, ignoring a closed pipe.
pub fn stdout(bytes: &[u8]) -> io::Result<()> {
    ignore_broken_pipe(io::stdout().lock().write_all(bytes))
}

/// Rows aligned like Go's `tabwriter` with two spaces of padding (kubectl's tables).
pub fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![0usize; cols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, c) in r.iter().enumerate() {
            line.push_str(c);
            if i + 1 < r.len() {
                line.extend(std::iter::repeat_n(' ', widths[i] - c.chars().count() + 2));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Prints [`table`] to stdout.
pub fn print_table(rows: &[Vec<String>]) -> io::Result<()> {
    stdout(table(rows).as_bytes())
}

/// `-o json|yaml`: reports and single documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum JsonOrYaml {
    /// JSON.
    Json,
    /// YAML.
    Yaml,
}

/// Prints `value` as indented JSON or as YAML.
pub fn print_value(value: &serde_json::Value, format: JsonOrYaml) -> io::Result<()> {
    let text = match format {
        JsonOrYaml::Json => {
            let mut s = serde_json::to_string_pretty(value).map_err(io::Error::other)?;
            s.push('\n');
            s
        }
        JsonOrYaml::Yaml => olm_goenc::yaml::to_yaml(value),
    };
    stdout(text.as_bytes())
}

impl From<JsonOrYaml> for olm_catalog::write::Format {
    fn from(f: JsonOrYaml) -> olm_catalog::write::Format {
        match f {
            JsonOrYaml::Json => olm_catalog::write::Format::Json,
            JsonOrYaml::Yaml => olm_catalog::write::Format::Yaml,
        }
    }
}

/// `-o json|yaml|jsonl`: a rendered catalog.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CatalogFormat {
    /// opm's JSON stream.
    Json,
    /// opm's YAML stream.
    Yaml,
    /// catalogd's canonical `catalog.jsonl`.
    Jsonl,
}

impl From<CatalogFormat> for olm_catalog::write::Format {
    fn from(f: CatalogFormat) -> olm_catalog::write::Format {
        match f {
            CatalogFormat::Json => olm_catalog::write::Format::Json,
            CatalogFormat::Yaml => olm_catalog::write::Format::Yaml,
            CatalogFormat::Jsonl => olm_catalog::write::Format::Jsonl,
        }
    }
}
