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
