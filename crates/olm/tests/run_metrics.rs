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
