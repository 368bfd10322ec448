//! Writing results to stdout. A reader that stops early (`olm … | head`) closes the pipe; that is
//! the reader's choice, not an error, so it ends the command quietly like other Unix tools.

use std::io::{self, Write};

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

/// `-o json|yaml`: reports and single documents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum JsonOrYaml {
    /// JSON.
    Json,
    /// YAML.
    Yaml,
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
