//! `olm catalog graph`, `olm catalog template` and rendering of bundle directories and images,
//! end to end through the binary.

mod common;

use common::{DATA, olm};

#[test]
fn graph_formats() {
    let catalog = format!("{DATA}/catalogs/community-v4.21");
    let common::Run {
        code: ok_code,
        stdout: out,
        stderr: err,
    } = olm(&["catalog", "graph", &catalog, "-p", "cat-facts-operator"]);
    let ok = ok_code == 0;
    assert!(ok, "{err}");
    assert!(out.starts_with("graph LR\n  classDef deprecated fill:#E8960F\n"));
    assert!(out.contains(
        "      cat-facts-operator-stable-cat-facts-operator.v1.1.1[\"cat-facts-operator.v1.1.1\"]-- replace --> cat-facts-operator-stable-cat-facts-operator.v1.1.2[\"cat-facts-operator.v1.1.2\"]\n"
    ));
    assert!(
        !out.contains("%% package \"infinispan\""),
        "-p keeps one package"
    );
    let common::Run {
        code: ok_code,
        stdout: svg,
        stderr: _,
    } = olm(&[
        "catalog",
        "graph",
        &catalog,
        "-p",
        "cat-facts-operator",
        "--format",
        "svg",
    ]);
    let ok = ok_code == 0;
    assert!(ok && svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    let common::Run {
        code: ok_code,
        stdout: dot,
        stderr: _,
    } = olm(&[
        "catalog",
        "graph",
        &catalog,
        "-p",
        "cat-facts-operator",
        "--format",
        "dot",
    ]);
    let ok = ok_code == 0;
    assert!(ok && dot.starts_with("digraph upgrades {"));
    let common::Run {
        code: ok_code,
        stdout: _,
        stderr: err,
    } = olm(&["catalog", "graph", &catalog, "--minimum-edge", "nope"]);
    let ok = ok_code == 0;
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
        let common::Run {
            code: ok_code,
            stdout: out,
            stderr: err,
        } = olm(&[
            "catalog",
            "template",
            &format!("{dir}/{template}"),
            "--catalog",
            committed_str,
            "-o",
            "yaml",
        ]);
        let ok = ok_code == 0;
        assert!(ok, "{pkg}: {err}");
        assert_eq!(out, std::fs::read_to_string(&committed).unwrap(), "{pkg}");
    }
}

#[test]
fn template_errors_use_opm_wording() {
    let common::Run {
        code: ok_code,
        stdout: _,
        stderr: err,
    } = olm(&["catalog", "template", "nope", "/does/not/exist"]);
    let ok = ok_code == 0;
    assert!(!ok);
    assert!(
        err.contains("invalid template type \"nope\", must be one of: [basic semver substitutes]"),
        "{err}"
    );
    let common::Run {
        code: ok_code,
        stdout: _,
        stderr: err,
    } = olm(&["catalog", "template", "/does/not/exist.yaml"]);
    let ok = ok_code == 0;
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
    let common::Run {
        code: ok_code,
        stdout: _,
        stderr: err,
    } = olm(&["image", "push-bundle", &bundle, &image]);
    let ok = ok_code == 0;
    assert!(ok, "{err}");
    let template = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        template.path(),
        format!(
            "schema: olm.template.basic\nentries:\n  - schema: olm.bundle\n    image: {image}\n"
        ),
    )
    .unwrap();
    let common::Run {
        code: ok_code,
        stdout: out,
        stderr: err,
    } = olm(&[
        "catalog",
        "template",
        "basic",
        template.path().to_str().unwrap(),
        "-o",
        "yaml",
    ]);
    let ok = ok_code == 0;
    assert!(ok, "{err}");
    assert!(out.contains(&format!("image: {image}\n")));
    assert!(out.contains("name: etcdoperator.v0.9.4\n"));
    // The same bundle rendered from its directory carries the same properties; the image adds
    // itself to relatedImages, as opm does.
    let common::Run {
        code: ok_code,
        stdout: from_dir,
        stderr: err,
    } = olm(&["catalog", "render", &bundle, "-o", "yaml"]);
    let ok = ok_code == 0;
    assert!(ok, "{err}");
    let properties =
        |s: &str| s[s.find("properties:").unwrap()..s.find("relatedImages:").unwrap()].to_owned();
    assert!(
        properties(&out) == properties(&from_dir),
        "properties differ between image and directory"
    );
    assert!(out.contains(&format!("relatedImages:\n- image: {image}\n  name: \"\"\n")));
}
