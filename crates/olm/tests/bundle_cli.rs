//! `olm bundle render|validate` and `olm crd diff` through the binary, against upstream's
//! regression outputs.

mod common;

use common::olm;

const REG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/upstream-regression"
);
const BUNDLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data/bundles");

/// The YAML stream `olm bundle render` prints is upstream's objects, one document each, in its
/// file order.
#[test]
fn render_matches_upstream_regression_outputs() {
    let bundle = format!("{REG}/bundles/argocd-operator.v0.6.0");
    for (case, watch, config) in [
        ("all-namespaces", None, None),
        ("own-namespace", Some("argocd-system"), None),
        ("single-namespace", Some("argocd-watch"), None),
        (
            "with-deploymentconfig-options",
            None,
            Some("with-deploymentconfig-options.json"),
        ),
    ] {
        let mut args = vec![
            "bundle",
            "render",
            &bundle,
            "--install-namespace",
            "argocd-system",
        ];
        if let Some(w) = watch {
            args.extend(["--watch-namespace", w]);
        }
        let config_arg = config.map(|c| format!("@{REG}/configs/{c}"));
        if let Some(c) = &config_arg {
            args.extend(["--config", c]);
        }
        let common::Run {
            code,
            stdout: out,
            stderr: err,
        } = olm(&args);
        assert_eq!(code, 0, "{case}: {err}");
        let dir = format!("{REG}/expected-manifests/argocd-operator.v0.6.0/{case}");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        let want: Vec<String> = files
            .iter()
            .map(|f| std::fs::read_to_string(f).unwrap())
            .collect();
        let mut got: Vec<&str> = out.split("---\n").collect();
        got.sort_unstable();
        let mut want_sorted: Vec<&str> = want.iter().map(String::as_str).collect();
        want_sorted.sort_unstable();
        assert!(
            got == want_sorted,
            "{case}: rendered objects differ from upstream's"
        );
    }
}

#[test]
fn render_reports_configuration_errors() {
    let bundle = format!("{REG}/bundles/argocd-operator.v0.6.0");
    let common::Run {
        code,
        stdout: _,
        stderr: err,
    } = olm(&[
        "bundle",
        "render",
        &bundle,
        "--install-namespace",
        "a",
        "--config",
        "{\"nope\": 1}",
    ]);
    assert_eq!(code, 1);
    assert!(err.starts_with("Error: "), "{err}");
    let common::Run {
        code,
        stdout: _,
        stderr: err,
    } = olm(&[
        "bundle",
        "render",
        "/does/not/exist",
        "--install-namespace",
        "a",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("/does/not/exist"), "{err}");
}

#[test]
fn validate_and_crd_diff_exit_codes() {
    let common::Run {
        code,
        stdout: _,
        stderr: err,
    } = olm(&[
        "bundle",
        "validate",
        &format!("{REG}/bundles/argocd-operator.v0.6.0"),
    ]);
    assert_eq!(code, 0, "{err}");
    let crd = |pkg: &str, v: &str, name: &str| {
        let dir = format!("{BUNDLES}/{pkg}/{v}/manifests");
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                let text = std::fs::read_to_string(p).unwrap();
                text.contains("kind: CustomResourceDefinition") && text.contains(name)
            })
            .unwrap()
    };
    // Pairs whose verdicts the bundle crate pins (tests/golden/crd-upgrade-pairs.txt).
    let kind = "kokumetricsconfigs.koku-metrics-cfg.openshift.io";
    let (old, new) = (
        crd("koku-metrics-operator", "0.9.4", kind),
        crd("koku-metrics-operator", "0.9.5", kind),
    );
    let common::Run {
        code,
        stdout: out,
        stderr: err,
    } = olm(&["crd", "diff", old.to_str().unwrap(), new.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    let kind = "servicedomaininfras.mercury.redhat.io";
    let (old, new) = (
        crd("mercury-operator", "1.0.1", kind),
        crd("mercury-operator", "1.0.2", kind),
    );
    let common::Run {
        code,
        stdout: out,
        stderr: _,
    } = olm(&["crd", "diff", old.to_str().unwrap(), new.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("existingFieldRemoval: removed field"), "{out}");

    // Files of several CRDs are compared CRD by CRD, by name: an unsafe change in the second
    // CRD of the files fails the diff and names that CRD, though the first is safe.
    let dir = tempfile::tempdir().unwrap();
    let join = |name: &str, parts: [&std::path::Path; 2]| {
        let text = parts
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect::<Vec<_>>()
            .join("\n---\n");
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let koku = "kokumetricsconfigs.koku-metrics-cfg.openshift.io";
    let old = join(
        "old.yaml",
        [
            &crd("koku-metrics-operator", "0.9.4", koku),
            &crd("mercury-operator", "1.0.1", kind),
        ],
    );
    let new = join(
        "new.yaml",
        [
            &crd("koku-metrics-operator", "0.9.5", koku),
            &crd("mercury-operator", "1.0.2", kind),
        ],
    );
    let common::Run {
        code,
        stdout: out,
        stderr: err,
    } = olm(&["crd", "diff", old.to_str().unwrap(), new.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.starts_with(&format!(
            "validating upgrade for CRD \"{kind}\": existingFieldRemoval: removed field"
        )),
        "{out}"
    );
    assert!(!out.contains(koku), "{out}");
}

/// A render refused for want of a flag says which flag, after upstream's message.
#[test]
fn render_refusals_name_the_flag_that_helps() {
    for (bundle, upstream, flag) in [
        (
            "argocd-operator/0.18.0",
            "webhookDefinitions are not supported",
            "--cert-provider",
        ),
        (
            "awss3-operator-registry/1.0.1",
            "required field \"watchNamespace\" is missing",
            "--watch-namespace",
        ),
    ] {
        let dir = format!("{BUNDLES}/{bundle}");
        let run = olm(&["bundle", "render", &dir, "--install-namespace", "ops"]);
        assert_ne!(run.code, 0, "{bundle}");
        let first = run.stderr.lines().next().unwrap_or_default().to_string();
        assert!(first.contains(upstream), "{bundle}: {}", run.stderr);
        let hint = run
            .stderr
            .lines()
            .find(|l| l.starts_with("hint: "))
            .unwrap_or_default();
        assert!(hint.contains(flag), "{bundle}: {}", run.stderr);
    }
}

/// Names the API server would refuse are refused before anything is rendered.
#[test]
fn render_refuses_an_invalid_install_namespace() {
    let dir = format!("{BUNDLES}/cat-facts-operator/1.0.0");
    let run = olm(&["bundle", "render", &dir, "--install-namespace", "Bad_NS"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr
            .contains("--install-namespace \"Bad_NS\": a lowercase RFC 1123 label must consist of"),
        "{}",
        run.stderr
    );
}

/// The optional suites on a real bundle: selected by label, listed, refused when nothing matches.
#[test]
fn optional_validators() {
    let dir = format!("{}/bundles/argocd-operator/0.18.0", common::DATA);
    let run = common::olm(&[
        "bundle",
        "validate",
        &dir,
        "--select-optional",
        "name=good-practices",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains(
        "Warning: Value argocd-operator.v0.18.0: owned CRD \"imageupdaters.argocd-image-updater.argoproj.io\" has an empty description"
    ), "{}", run.stderr);
    let run = common::olm(&["bundle", "validate", "--list-optional"]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("alpha-deprecated-apis"));
    let run = common::olm(&["bundle", "validate", &dir, "--select-optional", "name=none"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr
            .contains("selector \"name=none\" does not match any validator labels"),
        "{}",
        run.stderr
    );
}

/// `olm bundle generate` from a project's manifests: a bundle `olm bundle validate` accepts, and
/// a second run that writes the same bytes.
#[test]
fn generate_is_valid_and_stable() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("config");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(
        input.join("manager.yaml"),
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: demo-controller-manager
  namespace: demo-system
spec:
  selector:
    matchLabels: {control-plane: controller-manager}
  template:
    metadata:
      labels: {control-plane: controller-manager}
    spec:
      serviceAccountName: demo-controller-manager
      containers:
      - name: manager
        image: example.com/demo:v0.1.0
        resources:
          requests: {cpu: 10m, memory: 64Mi}
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: demo-controller-manager
  namespace: demo-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: demo-manager-role
rules:
- apiGroups: [example.com]
  resources: [widgets]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: demo-manager-rolebinding
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: demo-manager-role
subjects:
- kind: ServiceAccount
  name: demo-controller-manager
  namespace: demo-system
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object}
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: widget-sample
spec: {}
",
    )
    .unwrap();
    let out = dir.path().join("bundle");
    let dockerfile = dir.path().join("bundle.Dockerfile");
    let args = [
        "bundle",
        "generate",
        "--input-dir",
        input.to_str().unwrap(),
        "--package",
        "demo",
        "--version",
        "0.1.0",
        "--channels",
        "stable",
        "--output-dir",
        out.to_str().unwrap(),
        "--dockerfile",
        dockerfile.to_str().unwrap(),
    ];
    let run = olm(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let csv_path = out.join("manifests/demo.clusterserviceversion.yaml");
    let first = std::fs::read_to_string(&csv_path).unwrap();
    assert!(first.contains("name: demo.v0.1.0"));
    assert!(first.contains("serviceAccountName: demo-controller-manager"));
    assert!(out.join("manifests/example.com_widgets.yaml").is_file());
    assert!(
        std::fs::read_to_string(out.join("metadata/annotations.yaml"))
            .unwrap()
            .contains("operators.operatorframework.io.bundle.channels.v1: stable")
    );
    // A hand edit in the generated CSV survives regeneration; nothing else changes.
    std::fs::write(
        &csv_path,
        first.replace("description: \"\"", "description: Demo operator."),
    )
    .unwrap();
    let edited = std::fs::read_to_string(&csv_path).unwrap();
    assert_eq!(olm(&args).code, 0);
    assert_eq!(std::fs::read_to_string(&csv_path).unwrap(), edited);
    let validate = olm(&["bundle", "validate", out.to_str().unwrap()]);
    assert_eq!(validate.code, 0, "{}", validate.stderr);
}

/// What a catalog could not take is refused before anything is written: a default channel
/// outside the channels, an empty channel name, a package name the CSV cannot carry.
#[test]
fn generate_refuses_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("config");
    std::fs::create_dir_all(&input).unwrap();
    std::fs::write(
        input.join("manager.yaml"),
        "apiVersion: apps/v1
kind: Deployment
metadata: {name: demo-controller-manager, namespace: demo-system}
spec:
  selector: {matchLabels: {app: demo}}
  template:
    metadata: {labels: {app: demo}}
    spec:
      containers:
      - {name: manager, image: example.com/demo:v0.1.0}
",
    )
    .unwrap();
    let out = dir.path().join("bundle");
    let dockerfile = dir.path().join("bundle.Dockerfile");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "bundle",
            "generate",
            "--input-dir",
            input.to_str().unwrap(),
            "--version",
            "0.1.0",
            "--output-dir",
            out.to_str().unwrap(),
            "--dockerfile",
            dockerfile.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        olm(&args)
    };
    let cases: [(&[&str], &str); 3] = [
        (
            &[
                "--package",
                "demo",
                "--channels",
                "stable,fast",
                "--default-channel",
                "beta",
            ],
            "the default channel \"beta\" is not one of the channels \"stable,fast\"",
        ),
        (
            &["--package", "demo", "--channels", ""],
            "every channel needs a name",
        ),
        (
            &["--package", "Bad_Pkg!"],
            "invalid generated ClusterServiceVersion",
        ),
    ];
    for (args, message) in cases {
        let r = run(args);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(message), "{args:?}: {}", r.stderr);
        assert!(!out.exists() && !dockerfile.exists(), "{args:?}: written");
    }
    let r = run(&[
        "--package",
        "demo",
        "--channels",
        "stable,fast",
        "--default-channel",
        "fast",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        out.join("manifests/demo.clusterserviceversion.yaml")
            .is_file()
    );
}

/// `olm bundle generate --use-image-digests` against a real registry: every tag in the CSV
/// becomes the digest the registry gives, the operator image joins `relatedImages`, and an image
/// the registry does not have fails the run before anything is written.
#[test]
fn generate_pins_images_to_digests() {
    let registry = olm_testenv::registry::Registry::start()
        .expect("docker-registry starts (scripts/setup.sh installs it)");
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog");
    std::fs::create_dir_all(&catalog).unwrap();
    std::fs::write(
        catalog.join("c.json"),
        r#"{"schema":"olm.package","name":"p"}"#,
    )
    .unwrap();
    let addr = registry.addr();
    let mut digests = Vec::new();
    for image in ["demo:v0.1.0", "proxy:v2"] {
        let reference = format!("{addr}/{image}");
        let pushed = olm(&[
            "image",
            "push-catalog",
            "--content-only",
            catalog.to_str().unwrap(),
            &reference,
        ]);
        assert_eq!(pushed.code, 0, "{}", pushed.stderr);
        let resolved = olm(&["image", "resolve", &reference]);
        assert_eq!(resolved.code, 0, "{}", resolved.stderr);
        digests.push(resolved.stdout.trim().to_owned());
    }
    let manifests = |proxy: &str| {
        format!(
            "apiVersion: apps/v1
kind: Deployment
metadata: {{name: demo-controller-manager, namespace: demo-system}}
spec:
  selector: {{matchLabels: {{app: demo}}}}
  template:
    metadata: {{labels: {{app: demo}}}}
    spec:
      containers:
      - name: manager
        image: {addr}/demo:v0.1.0
        env:
        - name: RELATED_IMAGE_PROXY
          value: {addr}/{proxy}
"
        )
    };
    let input = dir.path().join("config");
    std::fs::create_dir_all(&input).unwrap();
    let out = dir.path().join("bundle");
    let generate = || {
        olm(&[
            "bundle",
            "generate",
            "--input-dir",
            input.to_str().unwrap(),
            "--package",
            "demo",
            "--version",
            "0.1.0",
            "--output-dir",
            out.to_str().unwrap(),
            "--dockerfile",
            dir.path().join("bundle.Dockerfile").to_str().unwrap(),
            "--use-image-digests",
        ])
    };
    std::fs::write(input.join("manager.yaml"), manifests("missing:v1")).unwrap();
    let failed = generate();
    assert_ne!(failed.code, 0);
    assert!(
        failed
            .stderr
            .contains(&format!("pinning {addr}/missing:v1")),
        "{}",
        failed.stderr
    );
    assert!(!out.exists(), "nothing is written when pinning fails");

    std::fs::write(input.join("manager.yaml"), manifests("proxy:v2")).unwrap();
    let run = generate();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("pinning image versions to digests instead of tags"),
        "{}",
        run.stderr
    );
    let csv =
        std::fs::read_to_string(out.join("manifests/demo.clusterserviceversion.yaml")).unwrap();
    let demo = format!("{addr}/demo@{}", digests[0]);
    let proxy = format!("{addr}/proxy@{}", digests[1]);
    assert!(csv.contains(&format!("image: {demo}")), "{csv}");
    assert!(csv.contains(&format!("value: {proxy}")), "{csv}");
    assert!(
        !csv.contains(":v0.1.0\n") && !csv.contains("proxy:v2"),
        "{csv}"
    );
    assert!(
        csv.contains(&format!("  - image: {proxy}\n    name: proxy")),
        "{csv}"
    );
    assert!(
        csv.contains(&format!("  - image: {demo}\n    name: manager")),
        "{csv}"
    );
}

/// `--select-optional name=multiarch` reads the platforms of the CSV's images from a real
/// registry: an image built for this machine's platform only misses the architecture the CSV
/// labels promise (upstream's error), and an image the registry does not have is reported with
/// upstream's warning instead of stopping the run.
#[test]
fn multiarch_reads_image_platforms_from_the_registry() {
    let registry = olm_testenv::registry::Registry::start()
        .expect("docker-registry starts (scripts/setup.sh installs it)");
    let addr = registry.addr();
    let catalog = tempfile::tempdir().unwrap();
    std::fs::write(
        catalog.path().join("catalog.json"),
        r#"{"schema":"olm.package","name":"demo"}"#,
    )
    .unwrap();
    let image = format!("{addr}/demo/operator:v1");
    let pushed = olm(&[
        "image",
        "push-catalog",
        "--content-only",
        catalog.path().to_str().unwrap(),
        &image,
    ]);
    assert_eq!(pushed.code, 0, "{}", pushed.stderr);
    let absent = format!("{addr}/demo/absent:v1");
    // An architecture the pushed image (built for this machine) does not have.
    let arch = if cfg!(target_arch = "s390x") {
        "ppc64le"
    } else {
        "s390x"
    };
    let bundle = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(bundle.path().join("manifests")).unwrap();
    std::fs::create_dir_all(bundle.path().join("metadata")).unwrap();
    std::fs::write(
        bundle.path().join("metadata/annotations.yaml"),
        "annotations:
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: demo
  operators.operatorframework.io.bundle.channels.v1: stable
",
    )
    .unwrap();
    std::fs::write(
        bundle
            .path()
            .join("manifests/demo.clusterserviceversion.yaml"),
        format!(
            "apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: demo.v0.0.1
  labels:
    operatorframework.io/arch.{arch}: supported
spec:
  displayName: Demo
  version: 0.0.1
  installModes:
  - type: AllNamespaces
    supported: true
  install:
    strategy: deployment
    spec:
      deployments:
      - name: demo
        spec:
          selector: {{matchLabels: {{app: demo}}}}
          template:
            metadata: {{labels: {{app: demo}}}}
            spec:
              containers:
              - name: manager
                image: {image}
  relatedImages:
  - name: absent
    image: {absent}
"
        ),
    )
    .unwrap();
    let dir = bundle.path().to_str().unwrap();
    let run = olm(&[
        "bundle",
        "validate",
        dir,
        "--select-optional",
        "name=multiarch",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let want = format!(
        "Error: Value demo.v0.0.1: not all images specified are providing the support described via the CSV labels. Note that (OS.architecture): (linux.{arch}) was not found for the image(s) [{image}]\n"
    );
    assert!(run.stderr.contains(&want), "{}", run.stderr);
    let warning = format!("Warning: Value demo.v0.0.1: unable to inspect the image ({absent}) : ");
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with(&warning))
        .unwrap_or_else(|| panic!("{}", run.stderr));
    assert!(line.contains("demo/absent"), "{line}");

    // An unknown container tool is refused as upstream refuses it, and nothing is inspected.
    let run = olm(&[
        "bundle",
        "validate",
        dir,
        "--select-optional",
        "name=multiarch",
        "--optional-values",
        "container-tools=buildah",
    ]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("Error: Value demo.v0.0.1: invalid value (container-tools) for (buildah). One of: [docker, podman, none] (If not set, the default value is docker)"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("unable to inspect"), "{}", run.stderr);
}

/// The bundle's format is checked first, as operator-sdk does: an empty channels annotation is
/// operator-registry's error.
#[test]
fn validate_checks_the_annotations_format() {
    let dir = tempfile::tempdir().unwrap();
    let src = std::path::Path::new(common::DATA).join("bundles/gitlab-operator-kubernetes/3.3.0");
    for sub in ["manifests", "metadata"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        for entry in std::fs::read_dir(src.join(sub)).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.path().join(sub).join(entry.file_name())).unwrap();
        }
    }
    let annotations = dir.path().join("metadata/annotations.yaml");
    let text = std::fs::read_to_string(&annotations).unwrap();
    std::fs::write(
        &annotations,
        text.replace(
            "bundle.channels.v1: stable,unstable",
            "bundle.channels.v1: \"\"",
        ),
    )
    .unwrap();
    let path = dir.path().display().to_string();
    let run = olm(&["bundle", "validate", &path]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "Error: error validating format in {path}: Bundle validation errors: Expecting annotation \"operators.operatorframework.io.bundle.channels.v1\" to have non-empty value"
        )),
        "{}",
        run.stderr
    );
}
