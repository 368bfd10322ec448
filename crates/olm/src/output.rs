//! Writing results to stdout and to files. A reader that stops early (`olm … | head`) closes the
//! pipe; that is the reader's choice, not an error, so it ends the command quietly like other
//! Unix tools. Files are replaced whole, never left half-written.

use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use anyhow::Context as _;

/// Writes `text` to `path` through a temporary file beside it, renamed into place, so a failure
/// leaves the old file whole. A file replaced keeps its permissions, and a symbolic link is
/// followed (the file it names is replaced, the link stays); a new file gets the permissions the
/// umask allows, as `>` would give it.
pub fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let (target, old) = match std::fs::canonicalize(path) {
        Ok(target) => {
            let old = std::fs::metadata(&target)
                .with_context(|| format!("reading {}", path.display()))?;
            (target, Some(old.permissions()))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => (path.to_path_buf(), None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let dir = target.parent().filter(|d| !d.as_os_str().is_empty());
    let mut tmp = tempfile::Builder::new()
        // Masked by the umask at creation, as any new file is.
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir.unwrap_or(Path::new(".")))
        .with_context(|| format!("writing next to {}", target.display()))?;
    if let Some(mode) = old {
        tmp.as_file()
            .set_permissions(mode)
            .with_context(|| format!("keeping the permissions of {}", target.display()))?;
    }
    tmp.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", target.display()))?;
    tmp.persist(&target)
        .with_context(|| format!("replacing {}", target.display()))?;
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::os::unix::fs::PermissionsExt as _;

    use super::write_atomically;

    fn mode(path: &std::path::Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_replaced_file_keeps_its_mode_and_a_new_one_follows_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old.yaml");
        std::fs::write(&old, "a\n").unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&old, "b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&old).unwrap(), "b\n");
        assert_eq!(mode(&old), 0o640);

        // `File::create` asks for 0666 and gets what the umask leaves, as a shell's `>` does.
        let plain = dir.path().join("plain");
        std::fs::File::create(&plain).unwrap();
        let new = dir.path().join("new.yaml");
        write_atomically(&new, "c\n").unwrap();
        assert_eq!(mode(&new), mode(&plain));
    }

    #[test]
    fn a_symbolic_link_is_followed_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.yaml");
        std::fs::write(&target, "a\n").unwrap();
        let link = dir.path().join("link.yaml");
        std::os::unix::fs::symlink("target.yaml", &link).unwrap();
        write_atomically(&link, "b\n").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "b\n");
    }
}
