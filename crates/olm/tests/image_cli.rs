//! `olm image push-catalog` and `push-bundle` through the binary: what they refuse before
//! anything reaches a registry, and what they push.

// Tests fail loudly on purpose, helpers included.
#![allow(clippy::unwrap_used)]

mod common;

use std::os::unix::fs::symlink;
use std::path::Path;

use common::olm;

/// Nothing listens here: a refusal must come before any connection.
const NOWHERE: &str = "127.0.0.1:9/catalogs/refused:v1";

const PACKAGE: &str = r#"{"schema":"olm.package","name":"p","defaultChannel":"stable"}"#;

fn catalog_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("p")).unwrap();
    std::fs::write(dir.path().join("p/catalog.json"), PACKAGE).unwrap();
    dir
}

fn push_catalog(dir: &Path, reference: &str) -> common::Run {
    olm(&["image", "push-catalog", dir.to_str().unwrap(), reference])
}

/// What the catalog server's loader refuses in a pulled catalog (a symlink loop, a link to a
/// directory, a named pipe) is refused before the push, naming the entry.
#[test]
fn push_catalog_refuses_what_the_catalog_server_cannot_load() {
    let loop_dir = catalog_dir();
    symlink("b", loop_dir.path().join("p/a")).unwrap();
    symlink("a", loop_dir.path().join("p/b")).unwrap();
    let dir_link = catalog_dir();
    symlink("../p", dir_link.path().join("p/up")).unwrap();
    let fifo = catalog_dir();
    let status = std::process::Command::new("mkfifo")
        .arg(fifo.path().join("p/pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let broken = catalog_dir();
    std::fs::write(broken.path().join("p/broken.yaml"), "schema: [\n").unwrap();
    for (dir, entry, why) in [
        (&loop_dir, "p/a", "too many levels of symbolic links"),
        (
            &dir_link,
            "p/up",
            "links to \"../p\", a directory, not a regular file",
        ),
        (&fifo, "p/pipe", "is a named pipe, not a regular file"),
        (&broken, "p/broken.yaml", ""),
    ] {
        let run = push_catalog(dir.path(), NOWHERE);
        assert_eq!(run.code, 1, "{entry}: {}", run.stderr);
        let root = dir.path().display().to_string();
        let want = format!(
            "Error: not pushing \"{root}\": the catalog server would refuse to load it: {root}/{entry}"
        );
        assert!(run.stderr.starts_with(&want), "{entry}: {}", run.stderr);
        assert!(run.stderr.contains(why), "{entry}: {}", run.stderr);
        assert!(!run.stderr.contains("9/catalogs"), "{}", run.stderr);
    }
}

/// A link to a regular file inside the directory is what the server loads; it is pushed.
#[test]
fn push_catalog_pushes_a_catalog_with_a_link_to_a_file() {
    let registry = olm_testenv::registry::Registry::start()
        .expect("docker-registry starts (scripts/setup.sh installs it)");
    let dir = catalog_dir();
    std::fs::write(
        dir.path().join("p/channel.json"),
        r#"{"schema":"olm.channel","package":"p","name":"stable","entries":[]}"#,
    )
    .unwrap();
    symlink("channel.json", dir.path().join("p/also.json")).unwrap();
    let image = format!("{}/catalogs/linked:v1", registry.addr());
    let run = push_catalog(dir.path(), &image);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("sha256:"), "{}", run.stdout);
}

/// A bundle without a CSV is one OLM cannot install (operator-controller: `no ClusterServiceVersion
/// found in "manifests"`; opm and operator-sdk hold it invalid too): refused before the push.
#[test]
fn push_bundle_refuses_a_bundle_without_a_csv() {
    let src = Path::new(common::DATA).join("bundles/etcd/0.9.4");
    let dir = tempfile::tempdir().unwrap();
    for sub in ["manifests", "metadata"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        for e in std::fs::read_dir(src.join(sub)).unwrap() {
            let e = e.unwrap();
            let name = e.file_name();
            if !name.to_string_lossy().contains("clusterserviceversion") {
                std::fs::copy(e.path(), dir.path().join(sub).join(&name)).unwrap();
            }
        }
    }
    let root = dir.path().display().to_string();
    let run = olm(&[
        "image",
        "push-bundle",
        &root,
        "127.0.0.1:9/bundles/nocsv:v1",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "Error: not pushing \"{root}\": it is no registry+v1 bundle OLM can install: no ClusterServiceVersion found in \"manifests\"\n"
        )
    );
}

/// `push-olm` pushes an image that runs: pulled back, its file system holds this binary, the
/// non-root user and every library the binary loads, so the binary starts inside it with
/// nothing from the host (chroot, when the tests run as root; otherwise through the image's
/// own loader and libraries).
#[test]
fn push_olm_pushes_an_image_the_binary_runs_in() {
    let registry = olm_testenv::registry::Registry::start()
        .expect("docker-registry starts (scripts/setup.sh installs it)");
    let reference = format!("{}/olm:test", registry.addr());
    let run = olm(&["image", "push-olm", &reference]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let pinned = run.stdout.trim().to_owned();
    let digest = pinned
        .strip_prefix(&format!("{reference}@"))
        .unwrap_or_else(|| panic!("REFERENCE@DIGEST, got {pinned}"));
    assert!(digest.starts_with("sha256:"), "{pinned}");
    let again = olm(&[
        "image",
        "push-olm",
        &format!("{}/olm:again", registry.addr()),
    ]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.trim().ends_with(digest), "{}", again.stdout);

    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("rootfs");
    let pull = olm(&["image", "pull", &pinned, dir.to_str().unwrap()]);
    assert_eq!(pull.code, 0, "{}", pull.stderr);
    let binary = std::fs::read(dir.join("usr/local/bin/olm")).unwrap();
    assert!(binary == std::fs::read(env!("CARGO_BIN_EXE_olm")).unwrap());
    let passwd = std::fs::read_to_string(dir.join("etc/passwd")).unwrap();
    assert!(passwd.contains("olm:x:65532:65532:"), "{passwd}");
    assert!(dir.join("etc/ssl/certs/ca-certificates.crt").is_file());
    assert!(!dir.join("bin/sh").exists());

    let uid = std::process::Command::new("id").arg("-u").output().unwrap();
    let out = if String::from_utf8_lossy(&uid.stdout).trim() == "0" {
        std::process::Command::new("chroot")
            .arg(&dir)
            .args(["/usr/local/bin/olm", "--version"])
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .output()
            .unwrap()
    } else {
        let loader = std::fs::read_dir(dir.join("lib64"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains("ld-linux"))
            .unwrap();
        std::process::Command::new(loader)
            .arg("--library-path")
            .arg(dir.join("lib/x86_64-linux-gnu"))
            .arg(dir.join("usr/local/bin/olm"))
            .arg("--version")
            .env_clear()
            .output()
            .unwrap()
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        format!("olm {}", env!("CARGO_PKG_VERSION"))
    );
}
