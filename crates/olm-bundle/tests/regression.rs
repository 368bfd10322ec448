//! Golden tests against operator-controller's regression outputs
//! (`test/regression/convert/testdata`, copied to `shared/data/upstream-regression`): the same
//! bundles rendered with the same options must give the same files, byte for byte, with the
//! same `NN_<kind>_<name>.yaml` names (which pins the hash-derived RBAC names).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use olm_bundle::render::{RenderOptions, manifest_file_name, render, sort_manifests};
use olm_bundle::{Bundle, goyaml};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/upstream-regression")
}

struct Case {
    bundle: &'static str,
    case: &'static str,
    install_ns: &'static str,
    watch: Option<&'static str>,
    config: Option<&'static str>,
}

const CASES: &[Case] = &[
    Case {
        bundle: "argocd-operator.v0.6.0",
        case: "all-namespaces",
        install_ns: "argocd-system",
        watch: None,
        config: None,
    },
    Case {
        bundle: "argocd-operator.v0.6.0",
        case: "single-namespace",
        install_ns: "argocd-system",
        watch: Some("argocd-watch"),
        config: None,
    },
    Case {
        bundle: "argocd-operator.v0.6.0",
        case: "own-namespace",
        install_ns: "argocd-system",
        watch: Some("argocd-system"),
        config: None,
    },
    Case {
        bundle: "argocd-operator.v0.6.0",
        case: "with-deploymentconfig-options",
        install_ns: "argocd-system",
        watch: None,
        config: Some("with-deploymentconfig-options.json"),
    },
    Case {
        bundle: "argocd-operator.v0.6.0",
        case: "with-empty-affinity",
        install_ns: "argocd-system",
        watch: None,
        config: Some("with-empty-affinity.json"),
    },
    Case {
        bundle: "argocd-operator.v0.6.0",
        case: "with-empty-affinity-subtype",
        install_ns: "argocd-system",
        watch: None,
        config: Some("with-empty-affinity-subtype.json"),
    },
    Case {
        bundle: "webhook-operator.v0.0.5",
        case: "all-webhook-types",
        install_ns: "webhook-system",
        watch: None,
        config: None,
    },
];

fn expected_files(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// The YAML writer alone: every upstream golden file, read and written back, is unchanged.
#[test]
fn yaml_writer_reproduces_every_golden_file() {
    let mut total = 0;
    let mut failures = Vec::new();
    for c in CASES {
        for (name, text) in expected_files(
            &data()
                .join("expected-manifests")
                .join(c.bundle)
                .join(c.case),
        ) {
            total += 1;
            let docs = goyaml::parse_documents(&text).unwrap();
            assert_eq!(docs.len(), 1, "{name}");
            let out = goyaml::to_yaml(&docs[0]);
            if out != text {
                let line = out
                    .lines()
                    .zip(text.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                failures.push(format!(
                    "{}/{name} line {}: got {:?} want {:?}",
                    c.case,
                    line + 1,
                    out.lines().nth(line),
                    text.lines().nth(line)
                ));
            }
        }
    }
    eprintln!("{} of {total} files identical", total - failures.len());
    assert!(total > 90);
    assert!(
        failures.is_empty(),
        "{} of {total} files differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Renders each upstream case and compares file names and bytes.
#[test]
fn render_matches_upstream_regression_files() {
    let mut total = 0;
    let mut failures = Vec::new();
    for c in CASES {
        let b = Bundle::from_dir(data().join("bundles").join(c.bundle)).unwrap();
        let deployment_config = c.config.map(|f| {
            let text = std::fs::read_to_string(data().join("configs").join(f)).unwrap();
            let cfg = olm_bundle::validate_config(&b.csv, Some(&text), c.install_ns).unwrap();
            cfg.deployment_config.unwrap()
        });
        let opts = RenderOptions {
            install_namespace: c.install_ns.into(),
            target_namespaces: c.watch.map(|w| vec![w.to_string()]),
            cert_provider: None,
            deployment_config,
        };
        let mut objs = render(&b, &opts).unwrap();
        sort_manifests(&mut objs);
        let got: Vec<(String, String)> = objs
            .iter()
            .enumerate()
            .map(|(i, o)| (manifest_file_name(i, o), goyaml::to_yaml(o)))
            .collect();
        let want = expected_files(
            &data()
                .join("expected-manifests")
                .join(c.bundle)
                .join(c.case),
        );
        total += want.len();
        let got_names: Vec<&String> = got.iter().map(|g| &g.0).collect();
        let want_names: Vec<&String> = want.iter().map(|g| &g.0).collect();
        if got_names != want_names {
            failures.push(format!(
                "{}: files differ\n got  {got_names:?}\n want {want_names:?}",
                c.case
            ));
            continue;
        }
        for ((name, g), (_, w)) in got.iter().zip(&want) {
            if g != w {
                let line = g
                    .lines()
                    .zip(w.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or(g.lines().count().min(w.lines().count()));
                failures.push(format!(
                    "{}/{name} line {}: got {:?} want {:?}",
                    c.case,
                    line + 1,
                    g.lines().nth(line),
                    w.lines().nth(line)
                ));
            }
        }
    }
    eprintln!("{} of {total} files identical", total - failures.len());
    assert!(total > 90);
    assert!(
        failures.is_empty(),
        "{} of {total} files differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
