//! `olm resolve` end to end on the real community catalog.

mod common;

use common::olm;

const CATALOG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/catalogs/community-v4.21"
);

#[test]
fn resolves_and_explains() {
    let spec = format!("community={CATALOG}");
    let common::Run {
        code,
        stdout: out,
        stderr: err,
    } = olm(&[
        "resolve",
        "--catalog",
        &spec,
        "--package",
        "infinispan",
        "--version",
        ">=2.3.0, <2.4.0",
        "--explain",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("bundle: infinispan-operator.v2.3.8\n"),
        "{out}"
    );
    assert!(out.contains("version: 2.3.8\n"));
    assert!(
        err.contains("explain: selected bundle \"infinispan-operator.v2.3.8\""),
        "{err}"
    );
}

#[test]
fn ambiguity_fails_with_exit_code_1() {
    let (a, b) = (format!("a={CATALOG}"), format!("b={CATALOG},priority=0"));
    let common::Run {
        code,
        stdout: _,
        stderr: err,
    } = olm(&[
        "resolve",
        "--catalog",
        &a,
        "--catalog",
        &b,
        "--package",
        "infinispan",
    ]);
    assert_eq!(code, 1);
    assert!(
        err.contains(
            "found bundles for package \"infinispan\" in multiple catalogs with the same priority [a b]. They have priority 0"
        ),
        "{err}"
    );
    let b = format!("b={CATALOG},priority=1");
    let common::Run {
        code,
        stdout: out,
        stderr: _,
    } = olm(&[
        "resolve",
        "--catalog",
        &a,
        "--catalog",
        &b,
        "--package",
        "infinispan",
        "-o",
        "json",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("\"catalog\": \"b\""), "{out}");
}

#[test]
fn bad_arguments_are_reported() {
    let common::Run {
        code,
        stdout: _,
        stderr: err,
    } = olm(&["resolve", "--catalog", "nopath", "--package", "x"]);
    assert_eq!(code, 1);
    assert!(err.contains("expected NAME=REF"), "{err}");
    let spec = format!("community={CATALOG}");
    let common::Run {
        code,
        stdout: _,
        stderr: err,
    } = olm(&[
        "resolve",
        "--catalog",
        &spec,
        "--package",
        "x",
        "--version",
        "1.2.3.4",
    ]);
    assert_eq!(code, 1);
    // Refused as the API server refuses it, before the resolver would.
    assert!(
        err.contains(
            "--version: spec.source.catalog.version: Invalid value: \"1.2.3.4\": invalid version expression"
        ),
        "{err}"
    );
    for (version, want) in [
        ("1.2.3 - 2.3.4", "invalid version expression"),
        ("01.2.3", "invalid version expression"),
    ] {
        let run = olm(&[
            "resolve",
            "--catalog",
            &spec,
            "--package",
            "x",
            "--version",
            version,
        ]);
        assert_eq!(run.code, 1, "{version}");
        assert!(run.stderr.contains(want), "{version}: {}", run.stderr);
    }
    let long = ">=1.0.0".repeat(46);
    let run = olm(&[
        "resolve",
        "--catalog",
        &spec,
        "--package",
        "x",
        "--version",
        &long,
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("spec.source.catalog.version: Too long: may not be more than 64 bytes"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains(&long),
        "the over-long range is echoed back"
    );
    for bad in [format!("={CATALOG}"), format!("Bad_Name={CATALOG}")] {
        let run = olm(&["resolve", "--catalog", &bad, "--package", "x"]);
        assert_eq!(run.code, 1, "{bad}");
        assert!(
            run.stderr.contains("metadata.name: Invalid value: "),
            "{bad}: {}",
            run.stderr
        );
    }
    let run = olm(&[
        "resolve",
        "--catalog",
        &spec,
        "--package",
        "x",
        "--selector",
        "!!",
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("key: Invalid value: \"!\""),
        "{}",
        run.stderr
    );
}

/// `--catalog NAME=REF` takes the references `olm catalog render`, `list` and `graph` take: a
/// catalog image too, and a single file.
#[test]
fn catalogs_are_read_from_images_as_render_reads_them() {
    let registry = olm_testenv::registry::Registry::start()
        .expect("docker-registry starts (scripts/setup.sh installs it)");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("catalog.json");
    std::fs::write(
        &file,
        concat!(
            r#"{"schema":"olm.package","name":"p","defaultChannel":"stable"}"#,
            "\n",
            r#"{"schema":"olm.channel","package":"p","name":"stable","entries":[{"name":"p.v1.0.0"}]}"#,
            "\n",
            r#"{"schema":"olm.bundle","package":"p","name":"p.v1.0.0","image":"example.com/p:v1","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}"#,
            "\n",
        ),
    )
    .expect("write catalog");
    let image = format!("{}/catalogs/p:v1", registry.addr());
    let pushed = olm(&[
        "image",
        "push-catalog",
        "--content-only",
        dir.path().to_str().expect("utf-8 path"),
        &image,
    ]);
    assert_eq!(pushed.code, 0, "{}", pushed.stderr);
    let file = file.to_str().expect("utf-8 path");
    for reference in [image.as_str(), file] {
        let render = olm(&["catalog", "list", "bundles", reference]);
        assert_eq!(render.code, 0, "{reference}: {}", render.stderr);
        let spec = format!("c={reference}");
        let run = olm(&["resolve", "--catalog", &spec, "--package", "p"]);
        assert_eq!(run.code, 0, "{reference}: {}", run.stderr);
        assert!(run.stdout.contains("bundle: p.v1.0.0\n"), "{}", run.stdout);
    }
    let run = olm(&["resolve", "--catalog", "c=no/such/dir", "--package", "p"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "Error: loading catalog \"c\" from \"no/such/dir\": no such file or directory\n"
    );
}

/// A catalog marked `unserved` stands for one still unpacking: resolution goes on without it
/// and names it, as the controller's `CatalogsSkipped` and `olm install` do; when the package is
/// in no catalog that serves, the failure says so and names it.
#[test]
fn an_unserved_catalog_is_skipped_and_named() {
    let (a, b) = (format!("a={CATALOG}"), format!("b={CATALOG},unserved"));
    let run = olm(&[
        "resolve",
        "--catalog",
        &a,
        "--catalog",
        &b,
        "--package",
        "infinispan",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("catalog: a\n"), "{}", run.stdout);
    assert_eq!(
        run.stderr,
        "note: catalog \"b\" was skipped (not serving: marked unserved)\n"
    );

    let run = olm(&["resolve", "--catalog", &b, "--package", "infinispan"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "Error: package \"infinispan\" was not found in the serving catalogs; catalog \"b\" was skipped (not serving: marked unserved)\n"
    );
}
