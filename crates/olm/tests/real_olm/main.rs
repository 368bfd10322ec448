//! Both OLMs on one real node, used at once as a shared cluster is: `olm dev up --node real`
//! (OLM itself as pods), then every scenario of [`v0`], [`v1`] and [`kubectl_operator`] in its
//! own thread, each in its own namespaces and with its own names, against the same node,
//! registry and OLM pods.
//! The scenarios run side by side on purpose: they are the several users of one cluster, and
//! waiting out one scenario's deadline costs the others nothing.
//!
//! `REAL_OLM_SCENARIO=part` runs only the scenarios whose names contain `part`.
//!
//! Needs root and the node's parts (`scripts/setup.sh`), the control plane binaries
//! (`tools/controlplane/build.sh`), Debian's `docker-registry`, kubectl, and the example operator
//! built beside `olm` (`cargo test --workspace` builds it; alone, `cargo build -p
//! example-operator` first); the `kubectl operator` scenario builds the plugin with
//! `tools/oracles/build.sh` (Go) when it is not built. Only one real node runs per machine.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

#[path = "../dev_common/mod.rs"]
mod dev_common;

mod kubectl_operator;
mod migrate;
mod v0;
mod v1;

pub use dev_common::operator_binary;
/// Waits for a condition, explaining a timeout (every scenario's way of waiting).
pub use dev_common::wait_explained as wait;
use dev_common::{Down, RealEnv, ok, up_real};

/// The environment every scenario shares.
pub struct Env {
    /// `olm dev`'s state folder (`OLM_CACHE_DIR`).
    pub state: PathBuf,
    /// The cluster's kubeconfig.
    pub kubeconfig: PathBuf,
    /// The local registry's address (`host:port`), which the node's containerd also pulls
    /// `quay.io/…`, `docker.io/…`, `registry.k8s.io/…` and the rest from.
    pub registry: String,
    /// A scratch folder shared by the scenarios: each writes under a folder of its own name.
    pub work: PathBuf,
}

impl Env {
    /// `olm ARGS` in this environment, which must succeed; its stdout.
    pub fn olm(&self, args: &[&str]) -> String {
        ok(&self.state, args)
    }

    /// kubectl that may fail: whether it succeeded, its stdout, and its stderr.
    pub fn try_kubectl(&self, args: &[&str], stdin: Option<&str>) -> (bool, String, String) {
        let out = dev_common::kubectl_output(&self.kubeconfig, args, stdin);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// kubectl that must succeed; its stdout.
    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> String {
        let (ok, out, err) = self.try_kubectl(args, stdin);
        assert!(ok, "kubectl {args:?}: {out}{err}");
        out
    }

    /// `kubectl get` of one jsonpath, empty when the object is missing.
    pub fn field(&self, args: &[&str], path: &str) -> String {
        let jsonpath = format!("-o=jsonpath={path}");
        let mut all = args.to_vec();
        all.push(&jsonpath);
        let (_, out, _) = self.try_kubectl(&all, None);
        out.trim().to_owned()
    }

    /// `kubectl apply -f -` of `yaml`.
    pub fn apply(&self, yaml: &str) {
        self.kubectl(&["apply", "-f", "-"], Some(yaml));
    }

    /// A scenario's own scratch folder.
    pub fn work_dir(&self, scenario: &str) -> PathBuf {
        let dir = self.work.join(scenario);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}

/// The repository's `examples/` folder.
pub fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// A basic template of the example package holding `versions` in channel `stable`, each
/// replacing the one before, their bundles at `<registry>/<ns>/example-operator-bundle:v<version>`.
pub fn example_template(registry: &str, ns: &str, versions: &[&str]) -> String {
    const PACKAGE: &str = "example-operator";
    let mut t = format!(
        "schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: {PACKAGE}\n  defaultChannel: stable\n- schema: olm.channel\n  package: {PACKAGE}\n  name: stable\n  entries:\n"
    );
    let mut previous: Option<&str> = None;
    for v in versions {
        t.push_str(&format!("  - name: {PACKAGE}.v{v}\n"));
        if let Some(p) = previous {
            t.push_str(&format!("    replaces: {PACKAGE}.v{p}\n"));
        }
        previous = Some(v);
    }
    for v in versions {
        t.push_str(&format!(
            "- schema: olm.bundle\n  image: {registry}/{ns}/{PACKAGE}-bundle:v{v}\n"
        ));
    }
    t
}

/// Pushes the example operator's bundles 0.1.0 and 0.2.0 (under `<registry>/<ns>/…`) and a
/// catalog of them (one `stable` channel, 0.2.0 replacing 0.1.0) as `repo` in the dev
/// registry; `dir` holds the template and the rendered catalog.
pub fn push_example_catalog(env: &Env, dir: &std::path::Path, ns: &str, repo: &str) {
    push_example_versions(env, dir, ns, repo, &["0.1.0", "0.2.0"]);
}

/// [`push_example_catalog`] with only `versions` of the example operator in channel `stable`,
/// each replacing the one before: a catalog to which a later push adds an upgrade.
pub fn push_example_versions(
    env: &Env,
    dir: &std::path::Path,
    ns: &str,
    repo: &str,
    versions: &[&str],
) {
    const PACKAGE: &str = "example-operator";
    for version in versions {
        let image = format!("{}/{ns}/{PACKAGE}-bundle:v{version}", env.registry);
        let bundle = examples().join(format!("bundles/{PACKAGE}.v{version}"));
        env.olm(&["image", "push-bundle", bundle.to_str().unwrap(), &image]);
    }
    let template = example_template(&env.registry, ns, versions);
    let template_path = dir.join("template.yaml");
    std::fs::write(&template_path, template).unwrap();
    let rendered = env.olm(&[
        "catalog",
        "template",
        "basic",
        template_path.to_str().unwrap(),
        "-o",
        "yaml",
    ]);
    let catalog = dir.join("catalog");
    std::fs::create_dir_all(&catalog).unwrap();
    std::fs::write(catalog.join("catalog.yaml"), rendered).unwrap();
    env.olm(&[
        "image",
        "push-catalog",
        catalog.to_str().unwrap(),
        &format!("{}/{repo}", env.registry),
    ]);
}

/// The example operator's Widget CRD (`widgets.example.olm.operatorframework.io`): one OLM at a
/// time may hold it (neither takes the other's objects), so scenarios that install the example
/// operator hold this while they do, and leave the cluster without the CRD when they let go.
static WIDGETS: Mutex<()> = Mutex::new(());

/// Holds [`WIDGETS`]; a scenario that failed while holding it does not stop the others.
pub fn widgets() -> MutexGuard<'static, ()> {
    WIDGETS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A scenario: its name and what it runs.
pub type Scenario = (&'static str, fn(&Env));

#[test]
fn both_olms_and_their_operators_on_one_real_node() {
    let state = tempfile::tempdir().unwrap();
    let _down = Down(state.path());
    let RealEnv {
        registry,
        kubeconfig,
        up_took,
    } = up_real(state.path());
    eprintln!("olm dev up to OLM ready as pods: {up_took:.1?}");
    let work = state.path().join("scenarios");
    let env = Env {
        state: state.path().to_owned(),
        kubeconfig,
        registry,
        work,
    };
    // The example operator's image under every tag its bundles name, pulled by the node from
    // quay.io/olm-examples/example-operator through the mirror.
    let binary = operator_binary();
    for version in ["0.1.0", "0.2.0"] {
        env.olm(&[
            "image",
            "push-program",
            binary.to_str().unwrap(),
            &format!("{}/olm-examples/example-operator:v{version}", env.registry),
        ]);
    }

    // REAL_OLM_SCENARIO=part runs only the scenarios whose names contain it.
    let only = std::env::var("REAL_OLM_SCENARIO").unwrap_or_default();
    let scenarios: Vec<Scenario> = v0::scenarios()
        .into_iter()
        .chain(v1::scenarios())
        .chain(kubectl_operator::scenarios())
        .chain(migrate::scenarios())
        .filter(|(name, _)| name.contains(only.as_str()))
        .collect();
    assert!(
        !scenarios.is_empty(),
        "no scenario's name contains {only:?}"
    );
    let failed: Vec<&str> = std::thread::scope(|s| {
        let running: Vec<_> = scenarios
            .iter()
            .map(|(name, run)| {
                let env = &env;
                let handle = std::thread::Builder::new()
                    .name((*name).to_owned())
                    .spawn_scoped(s, move || {
                        let started = Instant::now();
                        run(env);
                        eprintln!("scenario {name}: passed in {:.1?}", started.elapsed());
                    })
                    .unwrap();
                (*name, handle)
            })
            .collect();
        running
            .into_iter()
            .filter_map(|(name, handle)| handle.join().is_err().then_some(name))
            .collect()
    });
    assert!(failed.is_empty(), "scenarios failed: {failed:?}");
}
