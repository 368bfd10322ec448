//! The admission policies olm ships, on the real local control plane (kube-apiserver evaluates
//! them; nothing of olm runs): `config/admission` (installed by `olm install-olm`) lets a
//! request create or change a ClusterExtension only when the requester may impersonate the
//! ServiceAccount it is installed as — the one it names, or olm's own when it names none;
//! `config/admission-v0` lets an OperatorGroup target only namespaces where the requester may
//! create RoleBindings, and target every namespace only when they may create
//! ClusterRoleBindings. Users are played with `kubectl --as`.
//!
//! Needs kubectl and the control plane binaries (`tools/controlplane/build.sh`).

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use olm_testenv::ControlPlane;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `kubectl` as the admin, or as `user` when given, with `stdin` fed in.
fn kubectl(admin: &Path, user: Option<&str>, args: &[&str], stdin: &str) -> Output {
    let mut cmd = Command::new("kubectl");
    cmd.arg("--kubeconfig").arg(admin);
    if let Some(user) = user {
        cmd.arg(format!("--as={user}"));
    }
    let mut child = cmd
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn admin_ok(admin: &Path, args: &[&str], stdin: &str) {
    let out = kubectl(admin, None, args, stdin);
    assert!(out.status.success(), "kubectl {args:?}: {out:?}");
}

/// `kubectl VERB -f -` with `yaml`, as `user`; the error text when refused.
fn as_user(admin: &Path, user: &str, verb: &[&str], yaml: &str) -> Result<(), String> {
    let args: Vec<&str> = verb.iter().copied().chain(["-f", "-"]).collect();
    let out = kubectl(admin, Some(user), &args, yaml);
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Creates (server-side applies) `yaml` as `user`; the error text when refused.
fn apply_as(admin: &Path, user: &str, yaml: &str) -> Result<(), String> {
    as_user(admin, user, &["apply", "--server-side"], yaml)
}

fn extension(name: &str, account: Option<&str>) -> String {
    let account = account
        .map(|a| format!("  serviceAccount:\n    name: {a}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: olm.operatorframework.io/v1\nkind: ClusterExtension\nmetadata:\n  name: {name}\nspec:\n  namespace: team\n{account}  source:\n    sourceType: Catalog\n    catalog:\n      packageName: example\n"
    )
}

fn operator_group(name: &str, targets: &[&str]) -> String {
    let targets = if targets.is_empty() {
        "spec: {}\n".to_owned()
    } else {
        format!("spec:\n  targetNamespaces: [{}]\n", targets.join(", "))
    };
    format!(
        "apiVersion: operators.coreos.com/v1\nkind: OperatorGroup\nmetadata:\n  name: {name}\n  namespace: a\n{targets}"
    )
}

/// Asks the API server to create `yaml` as `user` without storing it (`--dry-run=server`:
/// admission runs, nothing is kept). Waiting for a policy to take effect goes through this, so
/// an early request that slipped in before the policy cannot leave an object behind whose later
/// unchanged applies the policy, rightly, lets through.
fn create_dry_run_as(admin: &Path, user: &str, yaml: &str) -> Result<(), String> {
    as_user(admin, user, &["create", "--dry-run=server"], yaml)
}

/// Retries `attempt` until it returns `Some` (a policy takes a moment to reach admission).
fn eventually<T>(what: &str, mut attempt: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = attempt() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

const RBAC: &str = r#"
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: Namespace
metadata: {name: a}
---
apiVersion: v1
kind: Namespace
metadata: {name: b}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: installer, namespace: team}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: extension-creator}
rules:
  - apiGroups: [olm.operatorframework.io]
    resources: [clusterextensions]
    verbs: [get, list, create, update, patch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-creates-extensions}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: extension-creator}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: group-admin, namespace: a}
rules:
  - apiGroups: [operators.coreos.com]
    resources: [operatorgroups]
    verbs: [get, list, create, update, patch]
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [rolebindings]
    verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-admin, namespace: a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: group-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
"#;

const ALICE_IMPERSONATES_INSTALLER: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: act-as-installer, namespace: team}
rules:
  - apiGroups: [""]
    resources: [serviceaccounts]
    resourceNames: [installer]
    verbs: [impersonate]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-acts-as-installer, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: act-as-installer}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}]
"#;

const BOB_BINDS_IN_B: &str = r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: binder, namespace: b}
rules:
  - apiGroups: [rbac.authorization.k8s.io]
    resources: [rolebindings]
    verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-binds, namespace: b}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: binder}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
"#;

#[tokio::test(flavor = "multi_thread")]
async fn requests_act_only_as_accounts_and_in_namespaces_the_requester_controls() {
    let plane = ControlPlane::start()
        .await
        .unwrap_or_else(|e| panic!("starting the local control plane failed: {e}"));
    let admin = plane.kubeconfig_path().to_owned();
    let root = root();
    let crds = [
        root.join("config/crd/olm.operatorframework.io_clusterextensions.yaml"),
        root.join("config/crd/v0/operators.coreos.com_operatorgroups.yaml"),
    ];
    for crd in &crds {
        admin_ok(
            &admin,
            &["apply", "--server-side", "-f", crd.to_str().unwrap()],
            "",
        );
    }
    admin_ok(
        &admin,
        &[
            "wait",
            "--for=condition=Established",
            "--timeout=60s",
            "crd/clusterextensions.olm.operatorframework.io",
            "crd/operatorgroups.operators.coreos.com",
        ],
        "",
    );
    for dir in ["config/admission", "config/admission-v0"] {
        admin_ok(
            &admin,
            &[
                "apply",
                "--server-side",
                "-k",
                root.join(dir).to_str().unwrap(),
            ],
            "",
        );
    }
    admin_ok(&admin, &["apply", "--server-side", "-f", "-"], RBAC);

    // OLM v1: alice may create ClusterExtensions, but not act as the account one names …
    eventually("the ClusterExtension policy to refuse", || {
        create_dry_run_as(&admin, "alice", &extension("named", Some("installer")))
            .err()
            .filter(|e| e.contains("may not impersonate"))
    });
    let refused = apply_as(&admin, "alice", &extension("named", Some("installer"))).unwrap_err();
    assert!(
        refused.contains(
            "a ClusterExtension is installed as the ServiceAccount its spec.serviceAccount names, team/installer, and alice may not impersonate it"
        ),
        "{refused}"
    );
    // … nor as olm itself, which installs an extension that names no account.
    let refused = apply_as(&admin, "alice", &extension("unnamed", None)).unwrap_err();
    assert!(
        refused.contains(
            "a ClusterExtension is installed as olm itself when spec.serviceAccount is not set, olmv1-system/olm-controller-manager, and alice may not impersonate it"
        ),
        "{refused}"
    );
    // Allowed to impersonate the account, she may name it.
    admin_ok(
        &admin,
        &["apply", "--server-side", "-f", "-"],
        ALICE_IMPERSONATES_INSTALLER,
    );
    eventually("alice to be allowed to name installer", || {
        apply_as(&admin, "alice", &extension("named", Some("installer"))).ok()
    });
    // A cluster admin may impersonate anyone: nothing changes for them.
    admin_ok(
        &admin,
        &["apply", "--server-side", "-f", "-"],
        &extension("by-admin", None),
    );

    // OLM v0: bob administers namespace a; his OperatorGroup may target a …
    eventually("the OperatorGroup policy to refuse", || {
        create_dry_run_as(
            &admin,
            "bob",
            &operator_group("probe", &["a", "kube-system"]),
        )
        .err()
        .filter(|e| e.contains("may not create RoleBindings"))
    });
    apply_as(&admin, "bob", &operator_group("own", &["a"])).unwrap();
    // … but not kube-system, where he may not bind roles …
    let refused = apply_as(
        &admin,
        "bob",
        &operator_group("reach", &["a", "kube-system"]),
    )
    .unwrap_err();
    assert!(
        refused.contains("bob may not create RoleBindings in all of them: kube-system"),
        "{refused}"
    );
    // … nor every namespace.
    let refused = apply_as(&admin, "bob", &operator_group("global", &[])).unwrap_err();
    assert!(
        refused.contains("bob may not create ClusterRoleBindings"),
        "{refused}"
    );
    // Allowed to bind roles in b, he may target it too.
    admin_ok(
        &admin,
        &["apply", "--server-side", "-f", "-"],
        BOB_BINDS_IN_B,
    );
    eventually("bob to be allowed to target b", || {
        apply_as(&admin, "bob", &operator_group("two", &["a", "b"])).ok()
    });
    // Changing what is not spec (a label, as olm's own writes do) is not checked.
    let relabel = kubectl(
        &admin,
        Some("alice"),
        &["label", "clusterextension", "by-admin", "team=payments"],
        "",
    );
    assert!(
        relabel.status.success(),
        "a label change was checked: {relabel:?}"
    );
}
