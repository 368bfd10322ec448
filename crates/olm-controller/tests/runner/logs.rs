//! What the in-process `olm` logged, kept so that a failed scenario can show the lines about
//! its own objects: a failure on a machine where nobody set `RUST_LOG` still says what the
//! controllers did. The buffer is bounded (the newest lines win), so a long run cannot grow it.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// Lines kept at most.
const KEPT: usize = 50_000;
/// Lines a failed scenario prints at most (its last ones).
const SHOWN: usize = 80;

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<VecDeque<String>>>);

/// One event's bytes; they become a line when the writer is dropped.
struct Line {
    buffer: Buffer,
    bytes: Vec<u8>,
}

impl Write for Line {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.bytes.extend_from_slice(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.bytes).trim_end().to_owned();
        if text.is_empty() {
            return;
        }
        let mut lines = self.buffer.0.lock().unwrap_or_else(|e| e.into_inner());
        if lines.len() == KEPT {
            lines.pop_front();
        }
        lines.push_back(text);
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Buffer {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line {
            buffer: self.clone(),
            bytes: Vec::new(),
        }
    }
}

static CAPTURED: OnceLock<Buffer> = OnceLock::new();

/// Keeps olm's INFO and WARN lines (everything `RUST_LOG` asks for goes to stderr instead).
pub fn capture() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
        return;
    }
    let buffer = CAPTURED.get_or_init(Buffer::default).clone();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(
            "olm_controller=info,olm_catalogd=info,olm_extension=info",
        ))
        .with_ansi(false)
        .with_writer(buffer)
        .try_init();
}

/// The last captured lines that mention `needle` (a scenario's id, part of every name it
/// makes).
pub fn mentioning(needle: &str) -> Vec<String> {
    let Some(buffer) = CAPTURED.get() else {
        return Vec::new();
    };
    let lines = buffer.0.lock().unwrap_or_else(|e| e.into_inner());
    let mut found: Vec<String> = lines
        .iter()
        .rev()
        .filter(|l| l.contains(needle))
        .take(SHOWN)
        .cloned()
        .collect();
    found.reverse();
    found
}
