//! What the loader refuses instead of reading without end: entries that are not regular files
//! (named pipes, sockets, devices, links to them). Every load here runs under a deadline, so a
//! regression fails the test instead of hanging the suite.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use olm_catalog::{Catalog, LoadError, load_file, load_path};

const PKG: &str = "---\nschema: olm.package\nname: foo\ndefaultChannel: stable\n";
const DEADLINE: Duration = Duration::from_secs(20);

/// Runs `f` on its own thread and fails the test if it has not returned by the deadline (a load
/// blocked on a pipe never would).
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(DEADLINE)
        .unwrap_or_else(|_| panic!("{what}: still running after {DEADLINE:?}"))
}

fn load_dir(d: &Path) -> Result<Catalog, LoadError> {
    let d = d.to_path_buf();
    within("loading a catalog directory", move || load_path(&d))
}

fn catalog_dir() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("catalog.yaml"), PKG).unwrap();
    d
}

fn mkfifo(p: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", p.display());
}

/// The path and message of an I/O error.
fn io_err(r: Result<Catalog, LoadError>) -> (String, String) {
    match r {
        Err(LoadError::Io { path, message }) => (path, message),
        other => panic!("expected an I/O error, got {other:?}"),
    }
}

// ---- entries that are not regular files -----------------------------------------------------------

#[cfg(unix)]
#[test]
fn a_link_to_dev_zero_is_refused_before_reading() {
    let d = catalog_dir();
    std::os::unix::fs::symlink("/dev/zero", d.path().join("zero")).unwrap();
    let (path, message) = io_err(load_dir(d.path()));
    assert_eq!(PathBuf::from(&path), d.path().join("zero"));
    assert_eq!(
        message,
        r#"links to "/dev/zero", a character device, not a regular file: list it in .indexignore to leave it out"#
    );
}

#[cfg(unix)]
#[test]
fn a_named_pipe_is_refused_not_waited_on() {
    let d = catalog_dir();
    fs::create_dir(d.path().join("sub")).unwrap();
    mkfifo(&d.path().join("sub/pipe.yaml"));
    let (path, message) = io_err(load_dir(d.path()));
    assert_eq!(PathBuf::from(&path), d.path().join("sub/pipe.yaml"));
    assert_eq!(
        message,
        "is a named pipe, not a regular file: list it in .indexignore to leave it out"
    );
}

#[cfg(unix)]
#[test]
fn a_link_to_a_named_pipe_is_refused() {
    let d = catalog_dir();
    mkfifo(&d.path().join("pipe"));
    fs::create_dir(d.path().join("z")).unwrap();
    std::os::unix::fs::symlink("../pipe", d.path().join("z/link")).unwrap();
    // The pipe itself comes first in walk order; ignore it to reach the link.
    fs::write(d.path().join(".indexignore"), "/pipe\n").unwrap();
    let (path, message) = io_err(load_dir(d.path()));
    assert!(path.ends_with("z/link"), "{path}");
    assert!(
        message.starts_with(r#"links to "../pipe", a named pipe, not a regular file"#),
        "{message}"
    );
}

#[cfg(unix)]
#[test]
fn a_socket_is_refused() {
    let d = catalog_dir();
    let _listener = std::os::unix::net::UnixListener::bind(d.path().join("sock")).unwrap();
    let (path, message) = io_err(load_dir(d.path()));
    assert!(path.ends_with("sock"), "{path}");
    assert!(
        message.starts_with("is a socket, not a regular file"),
        "{message}"
    );
}

/// The first entry in walk order that is not a regular file is the one reported, even when a
/// file before it would fail to parse: no file is read from a tree that holds one.
#[cfg(unix)]
#[test]
fn special_files_are_found_before_any_file_is_parsed() {
    let d = catalog_dir();
    fs::write(d.path().join("a-broken.yaml"), "schema: [\n").unwrap();
    mkfifo(&d.path().join("b-pipe"));
    let (path, _) = io_err(load_dir(d.path()));
    assert!(path.ends_with("b-pipe"), "{path}");
}

#[cfg(unix)]
#[test]
fn special_files_listed_in_indexignore_are_never_opened() {
    let d = catalog_dir();
    mkfifo(&d.path().join("pipe"));
    std::os::unix::fs::symlink("/dev/zero", d.path().join("zero")).unwrap();
    fs::write(d.path().join(".indexignore"), "pipe\nzero\n").unwrap();
    assert_eq!(load_dir(d.path()).unwrap().blobs.len(), 1);
}

#[cfg(unix)]
#[test]
fn a_link_to_a_regular_file_is_still_read() {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("real.yaml.txt"), PKG).unwrap();
    fs::write(d.path().join(".indexignore"), "*.txt\n").unwrap();
    std::os::unix::fs::symlink("real.yaml.txt", d.path().join("link.yaml")).unwrap();
    assert_eq!(load_dir(d.path()).unwrap().blobs.len(), 1);
}

/// `olm catalog validate /dev`: a tree of devices, pipes and links into /proc fails at once.
#[cfg(target_os = "linux")]
#[test]
fn dev_as_a_catalog_is_refused_at_once() {
    if !Path::new("/dev/null").exists() {
        return;
    }
    let (path, message) = io_err(load_dir(Path::new("/dev")));
    assert!(path.starts_with("/dev/"), "{path}");
    assert!(message.contains(", not a regular file"), "{message}");
}

#[cfg(unix)]
#[test]
fn a_named_pipe_given_as_the_catalog_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let pipe = d.path().join("pipe");
    mkfifo(&pipe);
    let p = pipe.clone();
    let (_, message) = io_err(within("load_path", move || load_path(&p)));
    assert_eq!(
        message,
        "is a named pipe, not a regular file or a directory"
    );
    let (path, message) = io_err(within("load_file", move || load_file(&pipe)));
    assert!(path.ends_with("pipe"), "{path}");
    assert!(
        message.starts_with("is a named pipe, not a regular file"),
        "{message}"
    );
}
