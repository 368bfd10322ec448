//! `olm run --pprof-bind-address --client-ca` serves CPU and heap profiles, as OLM v0 does, only
//! to clients whose certificate the client CA signed: a client without a certificate, or with
//! one of another CA, fails the TLS handshake. What it serves, `go tool pprof` reads.
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`), curl and Go.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use olm_testenv::ControlPlane;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

mod run_common;

use run_common::{OlmRun, free_addr};

/// Writes `<name>-ca.pem` and a client certificate it signs, `<name>.crt` and `<name>.key`.
fn client_ca(dir: &Path, name: &str) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::default();
    ca.distinguished_name
        .push(DnType::CommonName, format!("{name} CA"));
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let mut client = CertificateParams::default();
    client.distinguished_name.push(DnType::CommonName, name);
    client.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let cert = client.signed_by(&key, &issuer).unwrap();
    std::fs::write(dir.join(format!("{name}-ca.pem")), ca_cert.pem()).unwrap();
    std::fs::write(dir.join(format!("{name}.crt")), cert.pem()).unwrap();
    std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
}

/// `curl` of `https://addr/path` (the server's certificate is self-signed: not checked) with the
/// client certificate `client` of `dir`, if any, the body written to `out`.
fn curl(addr: SocketAddr, path: &str, dir: &Path, client: Option<&str>, out: &Path) -> Command {
    let mut cmd = Command::new("curl");
    cmd.args(["--silent", "--show-error", "--insecure"])
        .args(["--write-out", "%{http_code}", "--output"])
        .arg(out);
    if let Some(name) = client {
        cmd.arg("--cert")
            .arg(dir.join(format!("{name}.crt")))
            .arg("--key")
            .arg(dir.join(format!("{name}.key")));
    }
    cmd.arg(format!("https://{addr}{path}"));
    cmd
}

fn status(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn go() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("go"))
        .find(|p| p.is_file());
    on_path.unwrap_or_else(|| PathBuf::from("/usr/local/go/bin/go"))
}

/// `go tool pprof -top FILE`: exits 0 and prints its table.
fn pprof_top(file: &Path) -> String {
    let out = Command::new(go())
        .args(["tool", "pprof", "-top"])
        .arg(file)
        .output()
        .expect("go runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "go tool pprof -top {}: {out:?}",
        file.display()
    );
    assert!(
        stdout.contains("      flat  flat%   sum%        cum   cum%"),
        "{stdout}"
    );
    eprintln!("go tool pprof -top {}:\n{stdout}", file.display());
    stdout
}

#[tokio::test]
async fn profiles_only_for_certificates_of_the_client_ca() {
    let plane = ControlPlane::start()
        .await
        .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    client_ca(dir, "alice");
    client_ca(dir, "mallory");
    let pprof = free_addr();
    let ca = dir.join("alice-ca.pem");
    let run = OlmRun::start_with(
        plane.kubeconfig_path(),
        dir,
        &[
            "--pprof-bind-address",
            &pprof.to_string(),
            "--client-ca",
            ca.to_str().unwrap(),
        ],
    );
    let (heap, cpu, body) = (dir.join("heap"), dir.join("cpu"), dir.join("body"));

    // No certificate, or one of another CA: the handshake fails, nothing is answered.
    for client in [None, Some("mallory")] {
        let out = curl(pprof, "/debug/pprof/heap", dir, client, &body)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{client:?}: {out:?}");
        assert_eq!(status(&out), "000", "{client:?}: {out:?}");
    }

    let get = |path: &str, out: &Path| {
        let got = curl(pprof, path, dir, Some("alice"), out).output().unwrap();
        assert!(got.status.success(), "{path}: {got:?}");
        status(&got)
    };
    assert_eq!(get("/debug/pprof/", &body), "200");
    assert!(
        std::fs::read_to_string(&body)
            .unwrap()
            .contains("/debug/pprof/heap")
    );
    assert_eq!(get("/debug/pprof/profile?seconds=0", &body), "400");
    assert_eq!(
        std::fs::read_to_string(&body).unwrap(),
        "seconds must be a whole number from 1 to 300, got \"0\"\n"
    );

    // One CPU profile at a time; meanwhile the heap profile is served, and its writing is
    // what the CPU profile sees: served many times over, so that the profile holds samples
    // however busy the machine (one heap profile is a few milliseconds of CPU, under one
    // sampling interval).
    let first = curl(
        pprof,
        "/debug/pprof/profile?seconds=3",
        dir,
        Some("alice"),
        &cpu,
    )
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert_eq!(get("/debug/pprof/profile?seconds=1", &body), "409");
    assert_eq!(
        std::fs::read_to_string(&body).unwrap(),
        "a CPU profile is already being taken; ask again once it is done\n"
    );
    for _ in 0..20 {
        assert_eq!(get("/debug/pprof/heap", &heap), "200");
    }
    let first = first.wait_with_output().unwrap();
    assert_eq!(
        status(&first),
        "200",
        "{first:?}: {}",
        String::from_utf8_lossy(&std::fs::read(&cpu).unwrap())
    );
    assert_eq!(get("/debug/pprof/profile?seconds=1", &body), "200");

    // gzip, as Go's profiles; go tool pprof reads both.
    for file in [&heap, &cpu] {
        let bytes = std::fs::read(file).unwrap();
        assert!(bytes.starts_with(&[0x1f, 0x8b]), "{}", file.display());
    }
    let top = pprof_top(&heap);
    assert!(top.contains("Type: inuse_space"), "{top}");
    // Stacks end where the program allocated, not in jemalloc.
    assert!(!top.contains("prof_backtrace"), "{top}");
    let top = pprof_top(&cpu);
    assert!(top.contains("Type: cpu"), "{top}");
    assert!(!top.contains(" of 0 total"), "no samples: {top}");
    drop(run);
}
