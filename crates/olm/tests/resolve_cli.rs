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
            "found package \"infinispan\" in multiple catalogs with the same priority 0 [a b]"
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
    assert!(
        err.contains(
            "desired version range \"1.2.3.4\" is invalid: improper constraint: \"1.2.3.4\""
        ),
        "{err}"
    );
}
