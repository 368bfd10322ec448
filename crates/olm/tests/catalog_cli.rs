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
