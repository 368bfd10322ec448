//! `olm catalog validate|render|list` through the binary: the catalog references they take.

// Tests fail loudly on purpose, helpers included.
#![allow(clippy::unwrap_used)]

mod common;

use common::olm;

const CATALOG: &str = r#"{"schema":"olm.package","name":"p","defaultChannel":"stable"}
{"schema":"olm.channel","package":"p","name":"stable","entries":[{"name":"p.v1.0.0"}]}
{"schema":"olm.bundle","package":"p","name":"p.v1.0.0","image":"example.com/p:v1","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}}]}
"#;

/// `validate` takes a single catalog file, as `render` and `list` do.
#[test]
fn validate_takes_a_catalog_file_as_render_and_list_do() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("catalog.json");
    std::fs::write(&file, CATALOG).unwrap();
    let file = file.to_str().unwrap();
    for args in [
        vec!["catalog", "validate", file],
        vec!["catalog", "render", file],
        vec!["catalog", "list", "packages", file],
    ] {
        let run = olm(&args);
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
    }
    // Invalid content in a file is reported as in a directory: opm's tree, naming the package.
    std::fs::write(
        dir.path().join("catalog.json"),
        &CATALOG[..CATALOG.find("\n").unwrap()],
    )
    .unwrap();
    let run = olm(&["catalog", "validate", file]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with("invalid index:\n└── invalid package \"p\":"),
        "{}",
        run.stderr
    );
    let run = olm(&["catalog", "validate", "no/such/catalog"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "\"no/such/catalog\": no such file or directory\n"
    );
}

/// A directory rendered a package at a time: output as a whole load gives it, and a broken file
/// read late fails the render with the file named, after the packages before it were written.
#[test]
fn render_of_a_directory_streams_by_package() {
    let dir = tempfile::tempdir().unwrap();
    let q = CATALOG
        .replace("\"p\"", "\"q\"")
        .replace("p.v1.0.0", "q.v1.0.0");
    // Files in an order unrelated to the packages' names.
    std::fs::write(dir.path().join("a.json"), &q).unwrap();
    std::fs::write(dir.path().join("b.json"), CATALOG).unwrap();
    let d = dir.path().to_str().unwrap();
    let streamed = olm(&["catalog", "render", d, "-o", "yaml"]);
    assert_eq!(streamed.code, 0, "{}", streamed.stderr);
    // Several references are loaded whole, then grouped the same way.
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let whole = olm(&["catalog", "render", a, b, "-o", "yaml"]);
    assert_eq!(streamed.stdout, whole.stdout);
    assert!(streamed.stdout.find("name: p\n") < streamed.stdout.find("name: q\n"));
    // A file of a later package that reads as plain YAML but does not decode: found when its
    // package comes up (here in the first batch: the files are small), never written.
    let c = dir.path().join("c.yaml");
    std::fs::write(&c, "schema: olm.channel\npackage: z\nentries: 5\n").unwrap();
    let broken = olm(&["catalog", "render", d]);
    assert_eq!(broken.code, 1);
    assert!(
        broken.stderr.contains(&format!("render reference {d:?}: "))
            && broken.stderr.contains("c.yaml:1: parse channel"),
        "{}",
        broken.stderr
    );
    assert!(!broken.stdout.contains("\"z\""), "{}", broken.stdout);
    // A file the quick look cannot read (flow YAML) is decoded first: nothing is written.
    std::fs::write(&c, "schema: olm.channel\npackage: z\nentries: [\n").unwrap();
    let broken = olm(&["catalog", "render", d]);
    assert_eq!(broken.code, 1);
    assert!(broken.stderr.contains("c.yaml:3: "), "{}", broken.stderr);
    assert_eq!(broken.stdout, "");
}
