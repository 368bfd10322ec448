//! `olm catalog graph`, `olm catalog template` and rendering of bundle directories and images,
//! end to end through the binary.

use std::process::Command;

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/data");

fn olm(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_olm"))
        .args(args)
        .output()
        .expect("olm runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn graph_formats() {
    let catalog = format!("{DATA}/catalogs/community-v4.21");
    let (ok, out, err) = olm(&["catalog", "graph", &catalog, "-p", "cat-facts-operator"]);
    assert!(ok, "{err}");
    assert!(out.starts_with("graph LR\n  classDef deprecated fill:#E8960F\n"));
    assert!(out.contains(
        "      cat-facts-operator-stable-cat-facts-operator.v1.1.1[\"cat-facts-operator.v1.1.1\"]-- replace --> cat-facts-operator-stable-cat-facts-operator.v1.1.2[\"cat-facts-operator.v1.1.2\"]\n"
    ));
    assert!(
        !out.contains("%% package \"infinispan\""),
        "-p keeps one package"
    );
    let (ok, svg, _) = olm(&[
        "catalog",
        "graph",
        &catalog,
        "-p",
        "cat-facts-operator",
        "--format",
        "svg",
    ]);
    assert!(ok && svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    let (ok, dot, _) = olm(&[
        "catalog",
        "graph",
        &catalog,
        "-p",
        "cat-facts-operator",
        "--format",
        "dot",
    ]);
    assert!(ok && dot.starts_with("digraph upgrades {"));
    let (ok, _, err) = olm(&["catalog", "graph", &catalog, "--minimum-edge", "nope"]);
    assert!(!ok);
    assert!(err.contains("unknown minimum edge name: \"nope\""), "{err}");
}

/// Basic templates render, with bundles taken from the committed catalog, to that catalog byte for byte.
#[test]
fn templates_render_to_their_committed_catalogs() {
    for (pkg, template) in [
        ("kepler-operator", "basic-template.yaml"),
        ("cat-facts-operator", "basic.yaml"),
        ("infinispan", "basic.yaml"),
    ] {
        let dir = format!("{DATA}/templates/{pkg}");
        let committed = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("catalog-")
            })
            .unwrap();
        let committed_str = committed.to_str().unwrap();
        let (ok, out, err) = olm(&[
            "catalog",
            "template",
            &format!("{dir}/{template}"),
            "--catalog",
            committed_str,
            "-o",
            "yaml",
        ]);
        assert!(ok, "{pkg}: {err}");
        assert_eq!(out, std::fs::read_to_string(&committed).unwrap(), "{pkg}");
    }
}

#[test]
fn template_errors_use_opm_wording() {
    let (ok, _, err) = olm(&["catalog", "template", "nope", "/does/not/exist"]);
    assert!(!ok);
    assert!(
        err.contains("invalid template type \"nope\", must be one of: [basic semver substitutes]"),
        "{err}"
    );
    let (ok, _, err) = olm(&["catalog", "template", "/does/not/exist.yaml"]);
    assert!(!ok);
    assert!(
        err.contains("unable to open \"/does/not/exist.yaml\""),
        "{err}"
    );
}

/// A bundle pushed to a real registry is pulled and rendered when a template names its image.
#[test]
fn template_bundles_come_from_a_registry() {
    let registry = olm_testenv::registry::Registry::start()
        .expect("docker-registry starts (scripts/setup.sh installs it)");
    let bundle = format!("{DATA}/bundles/etcd/0.9.4");
    let image = format!("{}/bundles/etcd:0.9.4", registry.addr());
    let (ok, _, err) = olm(&["image", "push-bundle", &bundle, &image]);
    assert!(ok, "{err}");
    let template = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        template.path(),
        format!(
            "schema: olm.template.basic\nentries:\n  - schema: olm.bundle\n    image: {image}\n"
        ),
    )
    .unwrap();
    let (ok, out, err) = olm(&[
        "catalog",
        "template",
        "basic",
        template.path().to_str().unwrap(),
        "-o",
        "yaml",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains(&format!("image: {image}\n")));
    assert!(out.contains("name: etcdoperator.v0.9.4\n"));
    // The same bundle rendered from its directory carries the same properties; the image adds
    // itself to relatedImages, as opm does.
    let (ok, from_dir, err) = olm(&["catalog", "render", &bundle, "-o", "yaml"]);
    assert!(ok, "{err}");
    let properties =
        |s: &str| s[s.find("properties:").unwrap()..s.find("relatedImages:").unwrap()].to_owned();
    assert!(
        properties(&out) == properties(&from_dir),
        "properties differ between image and directory"
    );
    assert!(out.contains(&format!("relatedImages:\n- image: {image}\n  name: \"\"\n")));
}
