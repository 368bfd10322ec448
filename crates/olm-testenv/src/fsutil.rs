//! Small file helpers that attach the path to every I/O error.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::Error;

/// Writes `bytes` to a new file readable only by the owner: the folder holds private keys and an
/// admin kubeconfig, which must not leak to other users of the machine.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|source| Error::io(format!("creating {}", path.display()), source))?;
    file.write_all(bytes)
        .map_err(|source| Error::io(format!("writing {}", path.display()), source))
}

pub(crate) fn create_dir(path: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(path)
        .map_err(|source| Error::io(format!("creating folder {}", path.display()), source))
}
