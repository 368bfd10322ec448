//! `olm run` serves `/metrics` as controller-runtime's secure metrics server does: over HTTPS,
//! to a bearer token the API server authenticates (TokenReview) whose user may `get` the
//! `/metrics` non-resource URL (SubjectAccessReview). Tokens come from real ServiceAccounts
//! (`kubectl create token`) on the local control plane, bound or not to a ClusterRole that
//! grants it.
//!
//! Needs the control plane binaries (`tools/controlplane/build.sh`), kubectl and curl.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::process::Command;

use olm_testenv::ControlPlane;

mod run_common;

use run_common::{OlmRun, kubectl};

/// Status code and body of `GET https://addr/metrics` (certificate not checked: it is
/// self-signed), with the token if given.
fn scrape(addr: SocketAddr, token: Option<&str>) -> (String, String) {
    let mut cmd = Command::new("curl");
    cmd.args(["--silent", "--insecure", "--write-out", "\n%{http_code}"]);
    if let Some(t) = token {
        cmd.args(["--header", &format!("Authorization: Bearer {t}")]);
    }
    let out = cmd.arg(format!("https://{addr}/metrics")).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (code.to_owned(), body.to_owned())
}

#[tokio::test]
async fn secure_metrics_need_a_token_allowed_to_read_them() {
    let plane = ControlPlane::start()
        .await
        .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
    let tmp = tempfile::tempdir().unwrap();
    let kubeconfig = plane.kubeconfig_path();
    let run = OlmRun::start_with(kubeconfig, tmp.path(), &["--metrics-secure=true"]);

    kubectl(
        kubeconfig,
        &["apply", "-f", "-"],
        Some(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: scraper, namespace: default}\n---\n\
             apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: nobody, namespace: default}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: metrics-reader}\n\
             rules: [{nonResourceURLs: [/metrics], verbs: [get]}]\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: scraper-metrics}\n\
             roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: metrics-reader}\n\
             subjects: [{kind: ServiceAccount, name: scraper, namespace: default}]\n",
        ),
    );
    let token = |sa: &str| kubectl(kubeconfig, &["create", "token", sa, "-n", "default"], None);
    let (scraper, nobody) = (token("scraper"), token("nobody"));

    let (code, body) = scrape(run.metrics, None);
    assert_eq!((code.as_str(), body.as_str()), ("401", "Unauthorized\n"));
    let (code, body) = scrape(run.metrics, Some("not-a-token"));
    assert_eq!((code.as_str(), body.as_str()), ("401", "Unauthorized\n"));
    let (code, body) = scrape(run.metrics, Some(nobody.trim()));
    assert_eq!(code, "403", "{body}");
    assert_eq!(
        body,
        "Authorization denied for user system:serviceaccount:default:nobody\n"
    );
    let (code, body) = scrape(run.metrics, Some(scraper.trim()));
    assert_eq!(code, "200", "{body}");
    assert!(
        body.contains("# TYPE controller_runtime_reconcile_total "),
        "{body}"
    );
    // Plain HTTP is not served on the secure port.
    assert!(run_common::get(run.metrics, "/metrics").is_none_or(|(s, _)| !s.contains(" 200 ")));
}

/// The HTTP status of `GET https://addr/metrics` by a curl restricted with `tls` (OpenSSL's
/// names), or `000` when the handshake fails.
fn handshake(addr: SocketAddr, tls: &[&str]) -> String {
    let out = Command::new("curl")
        .args(["--silent", "--insecure", "--output", "/dev/null"])
        .args(["--write-out", "%{http_code}"])
        .args(tls)
        .arg(format!("https://{addr}/metrics"))
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// Upstream's e2e `tls.feature`, played against `olm run`'s secure metrics port (the
/// self-issued certificate is ECDSA P-256, as the e2e suite's): the TLS profile flags set what
/// the port accepts. A 401 is a handshake that succeeded.
#[tokio::test]
async fn tls_profile_flags_hold_on_the_metrics_port() {
    let plane = ControlPlane::start()
        .await
        .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
    let tmp = tempfile::tempdir().unwrap();
    let kubeconfig = plane.kubeconfig_path();

    let tls13 = OlmRun::start_with(
        kubeconfig,
        tmp.path(),
        &[
            "--metrics-secure=true",
            "--tls-profile=custom",
            "--tls-custom-version=TLSv1.3",
        ],
    );
    assert_eq!(handshake(tls13.metrics, &["--tlsv1.3"]), "401");
    assert_eq!(
        handshake(tls13.metrics, &["--tlsv1.2", "--tls-max", "1.2"]),
        "000"
    );
    drop(tls13);

    let tls12 = [
        "--metrics-secure=true",
        "--tls-profile=custom",
        "--tls-custom-version=TLSv1.2",
        "--tls-custom-ciphers=TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    ];
    for curve in ["prime256v1", "secp256r1"] {
        let curves = format!("--tls-custom-curves={curve}");
        let run = OlmRun::start_with(kubeconfig, tmp.path(), &[&tls12[..], &[&curves]].concat());
        let tls12_with = |cipher, curve| {
            handshake(
                run.metrics,
                &[
                    "--tlsv1.2",
                    "--tls-max",
                    "1.2",
                    "--ciphers",
                    cipher,
                    "--curves",
                    curve,
                ],
            )
        };
        assert_eq!(tls12_with("ECDHE-ECDSA-AES128-GCM-SHA256", "P-256"), "401");
        assert_eq!(tls12_with("ECDHE-ECDSA-AES256-GCM-SHA384", "P-256"), "000");
        assert_eq!(tls12_with("ECDHE-ECDSA-AES128-GCM-SHA256", "P-521"), "000");
    }
}

/// A value upstream accepts but olm cannot serve stops `olm run` before it reaches the cluster,
/// naming the flag and the value.
#[test]
fn unservable_tls_values_stop_olm_run_at_start() {
    for (flags, message) in [
        (
            &["--tls-profile=old"][..],
            "--tls-profile=old: olm cannot serve this profile",
        ),
        (
            &["--tls-profile=custom", "--tls-custom-version=TLSv1.1"],
            "--tls-custom-version=TLSv1.1: olm cannot serve it",
        ),
        (
            &[
                "--tls-profile=custom",
                "--tls-custom-ciphers=TLS_RSA_WITH_AES_128_CBC_SHA",
            ],
            "--tls-custom-ciphers: olm cannot serve TLS_RSA_WITH_AES_128_CBC_SHA",
        ),
        (
            &["--tls-profile=custom", "--tls-custom-curves=secp521r1"],
            "--tls-custom-curves: olm cannot serve secp521r1",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_olm"))
            .args(["run", "--kubeconfig", "/nonexistent"])
            .args(flags)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?}");
        assert!(stderr.contains(message), "{flags:?}: {stderr}");
    }
}
