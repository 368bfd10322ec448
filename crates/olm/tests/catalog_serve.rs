//! `olm catalog serve` as a user runs it: a catalog that does not validate stops it with opm's
//! words (also in the termination log), a cache built from another catalog is refused when
//! integrity is enforced, and a cached catalog is served at once and stops on SIGTERM.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const GOOD: &str = r#"{"schema":"olm.package","name":"foo","defaultChannel":"stable"}
{"schema":"olm.channel","package":"foo","name":"stable","entries":[{"name":"foo.v1.0.0"}]}
{"schema":"olm.bundle","package":"foo","name":"foo.v1.0.0","image":"example.com/foo:v1","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}}]}
"#;

fn olm(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(args)
        .output()
        .unwrap()
}

fn catalog(dir: &Path, text: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("catalog.json"), text).unwrap();
    dir.display().to_string()
}

#[test]
fn invalid_catalog_stops_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    // The channel lists another bundle than the one there is.
    let dir = catalog(
        &tmp.path().join("bad"),
        &GOOD.replace("\"name\":\"foo.v1.0.0\"}]}", "\"name\":\"foo.v9\"}]}"),
    );
    let log = tmp.path().join("termination");
    let out = olm(&[
        "catalog",
        "serve",
        &dir,
        "-p",
        "0",
        "-t",
        log.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("failed to load or rebuild cache"),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"package "foo", bundle "foo.v1.0.0" not found in any channel entries"#),
        "{stderr}"
    );
    let written = std::fs::read_to_string(&log).unwrap();
    assert!(
        written.contains("not found in any channel entries"),
        "{written}"
    );
}

#[test]
fn stale_cache_is_refused_and_a_fresh_one_served() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = catalog(&tmp.path().join("cat"), GOOD);
    let cache = tmp.path().join("cache");
    let cache = cache.to_str().unwrap();
    let out = olm(&[
        "catalog",
        "serve",
        &dir,
        "--cache-dir",
        cache,
        "--cache-only",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(Path::new(cache).join("olm-registry.v1").is_file());

    // The catalog changes: the cache no longer fits, and integrity is enforced by default.
    catalog(&tmp.path().join("cat"), &GOOD.replace("stable", "fast"));
    let out = olm(&[
        "catalog",
        "serve",
        &dir,
        "--cache-dir",
        cache,
        "-t",
        "/dev/null",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("integrity check failed: cache requires rebuild: cache reports digest as"),
        "{stderr}"
    );

    // Rebuilt, then served from the cache until SIGTERM.
    let out = olm(&[
        "catalog",
        "serve",
        &dir,
        "--cache-dir",
        cache,
        "--cache-only",
    ]);
    assert!(out.status.success());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(["catalog", "serve", &dir, "--cache-dir", cache, "-p"])
        .arg(port.to_string())
        .args(["-t", "/dev/null"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(30), "not serving");
        std::thread::sleep(Duration::from_millis(20));
    }
    terminate(child.id());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
}

/// SIGTERM, as Kubernetes stops a pod.
fn terminate(pid: u32) {
    let ok = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}
