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
    // The link makes a second stable channel: a catalog that loads, but that the server could
    // not serve, so only its content is pushed.
    let image = format!("{}/catalogs/linked:v1", registry.addr());
    let run = olm(&[
        "image",
        "push-catalog",
        "--content-only",
        dir.path().to_str().unwrap(),
        &image,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("sha256:"), "{}", run.stdout);

    // By default the image serves, as opm-based ones do: olm is in it, and its command builds
    // the registry from /configs (here only the cache, as root in a chroot can).
    let servable = catalog_dir();
    std::fs::write(
        servable.path().join("p/channel.json"),
        r#"{"schema":"olm.channel","package":"p","name":"stable","entries":[{"name":"p.v1.0.0"}]}"#,
    )
    .unwrap();
    std::fs::write(
        servable.path().join("p/bundle.json"),
        r#"{"schema":"olm.bundle","package":"p","name":"p.v1.0.0","image":"quay.io/p/bundle:v1.0.0","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}"#,
    )
    .unwrap();
    let image = format!("{}/catalogs/servable:v1", registry.addr());
    let run = push_catalog(servable.path(), &image);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let root = tempfile::tempdir().unwrap();
    let pulled = root.path().join("serving");
    let pull = olm(&["image", "pull", &image, pulled.to_str().unwrap()]);
    assert_eq!(pull.code, 0, "{}", pull.stderr);
    assert!(pulled.join("configs/p/channel.json").is_file());
    assert!(pulled.join("usr/local/bin/olm").is_file());
    assert!(pulled.join("tmp/cache/olm-registry.v1").is_file());
    // The image's own command, as root in a chroot can run it: the cache built at push time
    // passes the server's integrity check, and it serves (on any port here).
    let uid = std::process::Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&uid.stdout).trim() == "0" {
        let mut server = std::process::Command::new("chroot")
            .arg(&pulled)
            .args([
                "/usr/local/bin/olm",
                "catalog",
                "serve",
                "/configs",
                "--cache-dir=/tmp/cache",
                "--port=0",
            ])
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut said = String::new();
        let mut lines =
            std::io::BufRead::lines(std::io::BufReader::new(server.stderr.take().unwrap()));
        while !said.contains("serving registry on") {
            match lines.next() {
                Some(Ok(line)) => said.push_str(&format!("{line}\n")),
                _ => break,
            }
        }
        server.kill().unwrap();
        server.wait().unwrap();
        assert!(said.contains("serving registry on"), "{said}");
    }

    // A catalog the server could not serve makes no serving image.
    let refused = push_catalog(
        dir.path(),
        &format!("{}/catalogs/linked:v2", registry.addr()),
    );
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("the catalog server could not serve it")
            && refused.stderr.contains("duplicate channel"),
        "{}",
        refused.stderr
    );

    // --content-only: the catalog alone.
    let lean = format!("{}/catalogs/linked:lean", registry.addr());
    let run = olm(&[
        "image",
        "push-catalog",
        "--content-only",
        servable.path().to_str().unwrap(),
        &lean,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let pulled = root.path().join("lean");
    let pull = olm(&["image", "pull", &lean, pulled.to_str().unwrap()]);
    assert_eq!(pull.code, 0, "{}", pull.stderr);
    assert!(pulled.join("configs/p/bundle.json").is_file());
    assert!(!pulled.join("usr").exists());
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

/// `push-program` builds the same kind of image for any program: pulled back, the binary is
/// where asked with every library it loads, the user is named after it, the arguments and
/// labels are the config's, and the program runs inside with nothing from the host. Bad
/// requests are refused before anything reaches a registry.
#[test]
fn push_program_pushes_an_image_any_program_runs_in() {
    let unlabelled = olm(&[
        "image",
        "push-program",
        "/usr/bin/env",
        NOWHERE,
        "--label",
        "no-equals-sign",
    ]);
    assert_eq!(unlabelled.code, 2, "{}", unlabelled.stderr);
    assert!(
        unlabelled
            .stderr
            .contains("\"no-equals-sign\" is not KEY=VALUE"),
        "{}",
        unlabelled.stderr
    );
    let refused = olm(&[
        "image",
        "push-program",
        "/usr/bin/env",
        NOWHERE,
        "--name",
        "Env",
    ]);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("Env: not a user name"),
        "{}",
        refused.stderr
    );

    let registry = olm_testenv::registry::Registry::start()
        .expect("docker-registry starts (scripts/setup.sh installs it)");
    let reference = format!("{}/tools/env:v1", registry.addr());
    let run = olm(&[
        "image",
        "push-program",
        "/usr/bin/env",
        &reference,
        "--path",
        "/bin/env",
        "--arg",
        "-i",
        "--arg",
        "GREETING=hello",
        "--arg",
        "/bin/env",
        "--label",
        "org.opencontainers.image.version=9.9",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let pinned = run.stdout.trim().to_owned();
    assert!(
        pinned.starts_with(&format!("{reference}@sha256:")),
        "{pinned}"
    );

    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("rootfs");
    let pull = olm(&["image", "pull", &pinned, dir.to_str().unwrap()]);
    assert_eq!(pull.code, 0, "{}", pull.stderr);
    assert!(std::fs::read(dir.join("bin/env")).unwrap() == std::fs::read("/usr/bin/env").unwrap());
    let passwd = std::fs::read_to_string(dir.join("etc/passwd")).unwrap();
    assert!(passwd.contains("\nenv:x:65532:65532:env:/:"), "{passwd}");
    assert!(!dir.join("usr/local/bin/olm").exists());
    assert!(!dir.join("var/cache/olm").exists());

    // The config as the registry serves it.
    let registry_addr = registry.addr().to_string();
    let digest = pinned.rsplit_once('@').unwrap().1;
    let manifest: serde_json::Value = serde_json::from_str(&registry_get(
        &registry_addr,
        &format!("/v2/tools/env/manifests/{digest}"),
    ))
    .unwrap();
    let config_digest = manifest["config"]["digest"].as_str().unwrap();
    let config: serde_json::Value = serde_json::from_str(&registry_get(
        &registry_addr,
        &format!("/v2/tools/env/blobs/{config_digest}"),
    ))
    .unwrap();
    let c = &config["config"];
    assert_eq!(c["Entrypoint"], serde_json::json!(["/bin/env"]));
    assert_eq!(
        c["Cmd"],
        serde_json::json!(["-i", "GREETING=hello", "/bin/env"])
    );
    assert_eq!(c["User"], "65532:65532");
    assert_eq!(
        c["Labels"],
        serde_json::json!({"org.opencontainers.image.title": "env", "org.opencontainers.image.version": "9.9"})
    );

    // The entrypoint and its default arguments, as a container runs them, work in the image
    // alone: env runs env again, which prints the one variable it was given.
    let uid = std::process::Command::new("id").arg("-u").output().unwrap();
    if String::from_utf8_lossy(&uid.stdout).trim() == "0" {
        let command: Vec<&str> = [&c["Entrypoint"], &c["Cmd"]]
            .into_iter()
            .flat_map(|v| v.as_array().unwrap())
            .map(|v| v.as_str().unwrap())
            .collect();
        let out = std::process::Command::new("chroot")
            .arg(&dir)
            .args(&command)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout), "GREETING=hello\n");
    }
}

/// `GET path` on the plain-HTTP registry at `addr`, accepting OCI manifests: the body of its
/// 200 answer.
fn registry_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/vnd.oci.image.manifest.v1+json\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
    assert!(
        !head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "{head}"
    );
    body.to_owned()
}
