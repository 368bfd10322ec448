//! The end of a log file, shown under an error so its cause is visible without hunting for the
//! file (which may be in a temp folder that is about to be deleted).

use std::fmt;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// How much of a log file's end is read: enough for a few dozen long klog lines, without reading
/// an apiserver log of many megabytes.
const TAIL_BYTES: u64 = 64 * 1024;

/// The last lines of a log file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogTail {
    path: PathBuf,
    lines: Vec<String>,
}

impl LogTail {
    /// The last `max_lines` lines of `path`; none when it does not exist yet (a process that
    /// has not started writing), one line saying why when it cannot be read.
    pub fn read(path: &Path, max_lines: usize) -> LogTail {
        let lines = match read_end(path) {
            Ok(text) => {
                let all: Vec<&str> = text.lines().collect();
                let from = all.len().saturating_sub(max_lines);
                all[from..].iter().map(|l| l.to_string()).collect()
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(err) => vec![format!("(cannot read {}: {err})", path.display())],
        };
        LogTail {
            path: path.to_path_buf(),
            lines,
        }
    }

    /// Whether any of the lines contains `needle`, e.g. "address already in use".
    pub fn mentions(&self, needle: &str) -> bool {
        self.lines.iter().any(|l| l.contains(needle))
    }

    /// The lines alone, joined by newlines.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }
}

/// The lines under a header naming the file.
impl fmt::Display for LogTail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "--- last lines of {} ---", self.path.display())?;
        if self.lines.is_empty() {
            write!(f, "\n(empty)")?;
        }
        for line in &self.lines {
            write!(f, "\n{line}")?;
        }
        Ok(())
    }
}

fn read_end(path: &Path) -> std::io::Result<String> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))?;
    let mut buf = Vec::new();
    file.read_to_end(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_lines() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log");
        std::fs::write(&path, "a\nb\nc\nd\n").expect("write");
        assert_eq!(LogTail::read(&path, 2).text(), "c\nd");
        assert_eq!(LogTail::read(&path, 10).text(), "a\nb\nc\nd");
        assert!(LogTail::read(&path, 2).mentions("d"));
        assert!(!LogTail::read(&path, 2).mentions("a"));
        assert_eq!(
            LogTail::read(&path, 1).to_string(),
            format!("--- last lines of {} ---\nd", path.display())
        );
    }

    #[test]
    fn reads_only_the_end_of_a_large_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("log");
        let mut text = "x".repeat(2 * TAIL_BYTES as usize);
        text.push_str("\nlast\n");
        std::fs::write(&path, text).expect("write");
        let tail = LogTail::read(&path, 1);
        assert_eq!(tail.text(), "last");
    }

    #[test]
    fn an_unreadable_missing_or_empty_file_says_so() {
        let dir = tempfile::tempdir().expect("temp dir");
        // A directory cannot be read as a file.
        assert!(
            LogTail::read(dir.path(), 5)
                .text()
                .starts_with("(cannot read ")
        );
        let missing = dir.path().join("missing");
        assert!(
            LogTail::read(&missing, 5)
                .to_string()
                .ends_with("---\n(empty)")
        );
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "").expect("write");
        assert!(
            LogTail::read(&empty, 5)
                .to_string()
                .ends_with("---\n(empty)")
        );
    }
}
