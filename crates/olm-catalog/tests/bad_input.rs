//! Bad input never panics: every error names the file (and line where there is one).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::Path;

use olm_catalog::{LoadError, load_path};

const PKG: &str = "---\nschema: olm.package\nname: foo\ndefaultChannel: stable\n";

fn dir_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let p = d.path().join(name);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }
    d
}

fn load_err(d: &Path) -> LoadError {
    load_path(d).expect_err("load must fail")
}

fn parse_err(d: &Path) -> (String, usize, String) {
    match load_err(d) {
        LoadError::Parse {
            path,
            line,
            message,
        } => (path, line, message),
        other => panic!("expected a parse error, got {other:?}"),
    }
}

#[test]
fn malformed_yaml_names_file_and_line() {
    let d = dir_with(&[(
        "a/catalog.yaml",
        &format!("{PKG}---\nschema: olm.channel\nname: stable\n  package: foo\n"),
    )]);
    let (path, line, msg) = parse_err(d.path());
    assert!(path.ends_with("a/catalog.yaml"), "{path}");
    assert_eq!(line, 8);
    // One location: the file and line of the error; the message carries no second one.
    assert_eq!(msg, "mapping values are not allowed in this context");
}

/// Every load error gives one location, the `FILE:LINE:` in front, counted in the file; the
/// parser's own position (within a document, or `line … column …` of a YAML or JSON library)
/// is never appended to the message.
#[test]
fn load_errors_carry_one_location() {
    for (name, text, line, want) in [
        (
            "catalog.yaml",
            format!("{PKG}---\nschema: olm.channel\nname: [stable\n"),
            7,
            "did not find expected ',' or ']'",
        ),
        (
            "catalog.yaml",
            format!("{PKG}---\nschema: olm.bundle\nname: b\nproperties: 5\n"),
            6,
            "parse bundle: json: cannot unmarshal number into Go struct field Bundle.properties of type []property.Property",
        ),
        (
            "catalog.json",
            "{\"schema\": \"olm.package\",\n \"name\": \"foo\"}\n{\"schema\": \"olm.channel\",\n \"name\": 3}\n"
                .to_owned(),
            3,
            "expected value for key \"name\" to be a string, got 3",
        ),
        (
            "catalog.json",
            "{\"schema\": \"olm.package\",\n \"name\": \"foo\" \"x\": 1}\n".to_owned(),
            2,
            "invalid character '\"' after object key:value pair",
        ),
    ] {
        let d = dir_with(&[(name, &text)]);
        let err = load_err(d.path());
        let root = d.path().display();
        assert_eq!(err.to_string(), format!("{root}/{name}:{line}: {want}"), "{text}");
    }
}

#[test]
fn malformed_json_names_file_and_line() {
    let d = dir_with(&[(
        "c.json",
        "{\"schema\": \"olm.package\",\n \"name\": \"foo\"}\n{\"schema\": \"olm.package\", \"name\": \"bar\"}\n{\"schema\": \"olm.channel\",\n \"name\": }\n",
    )]);
    let (path, line, msg) = parse_err(d.path());
    assert!(path.ends_with("c.json"));
    assert_eq!(line, 5);
    assert_eq!(msg, "invalid character '}' looking for beginning of value");
    // In the first two documents opm's decoder falls back to YAML, where `"name": }` is null.
    let d = dir_with(&[(
        "c.json",
        "{\"schema\": \"olm.package\",\n \"name\": \"foo\"}\n{\"schema\": \"olm.channel\",\n \"name\": }\n",
    )]);
    assert_eq!(load_path(d.path()).unwrap().blobs.len(), 2);
}

/// A document's line in a JSON stream is counted across every document before it.
#[test]
fn json_stream_errors_name_the_line_of_a_late_document() {
    let mut text = String::new();
    for i in 0..50 {
        text.push_str(&format!(
            "{{\"schema\": \"olm.package\",\n \"name\": \"p{i}\"}}\n\n"
        ));
    }
    text.push_str("  [1, 2]\n");
    let d = dir_with(&[("big.json", &text)]);
    let (_, line, msg) = parse_err(d.path());
    assert_eq!(line, 151);
    assert!(msg.contains("cannot unmarshal array"), "{msg}");
}

#[test]
fn duplicate_keys_are_errors() {
    // The message names the key, the repeat's line (as the location) and the first one's.
    let d = dir_with(&[("c.yaml", "schema: olm.package\nname: foo\nname: bar\n")]);
    let (path, line, msg) = parse_err(d.path());
    assert!(path.ends_with("c.yaml"), "{path}");
    assert_eq!(
        (line, msg.as_str()),
        (3, r#"duplicate mapping key "name" (first at line 2)"#)
    );
    let json = "{\"schema\": \"olm.package\", \"name\": \"x\"}\n{\"schema\": \"olm.bundle\",\n \"v\": {\"a\": {\"b\": 1, \"b\": 2}},\n \"name\": \"a\",\n \"name\": \"b\"}\n";
    let d = dir_with(&[("c.json", json)]);
    let (path, line, msg) = parse_err(d.path());
    assert!(path.ends_with("c.json"), "{path}");
    assert_eq!((line, msg.as_str()), (3, r#"duplicate key "b""#));
    let json =
        "{\"schema\": \"olm.bundle\",\n \"name\": \"a\",\n \"v\": {\"b\": 1},\n \"name\": \"b\"}\n";
    let d = dir_with(&[("c.json", json)]);
    let (_, line, msg) = parse_err(d.path());
    assert_eq!(
        (line, msg.as_str()),
        (4, r#"duplicate key "name" (first at line 2)"#)
    );
    let d = dir_with(&[("c.yaml", "schema: olm.package\nName: foo\nname: bar\n")]);
    let (_, line, msg) = parse_err(d.path());
    assert_eq!(
        (line, msg.as_str()),
        (1, r#"duplicate keys for key "name": [Name name]"#)
    );
}

#[test]
fn wrong_types_are_errors() {
    let d = dir_with(&[(
        "c.yaml",
        "schema: olm.channel\nname: a\npackage: foo\nentries: {name: x}\n",
    )]);
    let (_, line, msg) = parse_err(d.path());
    assert_eq!(line, 1);
    assert_eq!(
        msg,
        "parse channel: json: cannot unmarshal object into Go struct field Channel.entries of type []declcfg.ChannelEntry"
    );
    let d = dir_with(&[("c.yaml", "- schema: olm.package\n")]);
    let (_, _, msg) = parse_err(d.path());
    assert_eq!(
        msg,
        "json: cannot unmarshal array into Go value of type map[string]interface {}"
    );
}

#[test]
fn empty_files_are_fine_and_blank_ones_are_not() {
    let d = dir_with(&[("empty.yaml", ""), ("c.yaml", PKG)]);
    assert_eq!(load_path(d.path()).unwrap().blobs.len(), 1);
    // opm reads a file of blank lines as one empty document, an object without a schema.
    let d = dir_with(&[("blank.json", "\n\n"), ("c.yaml", PKG)]);
    let (path, line, msg) = parse_err(d.path());
    assert!(path.ends_with("blank.json"), "{path}");
    assert_eq!(line, 1);
    assert_eq!(msg, "object '' is missing root schema field");
}

#[test]
fn every_file_is_parsed_unless_ignored() {
    let d = dir_with(&[("README.md", "# Catalog\n\nSome words.\n"), ("c.yaml", PKG)]);
    let (path, _, msg) = parse_err(d.path());
    assert!(path.ends_with("README.md"));
    assert_eq!(
        msg,
        "json: cannot unmarshal string into Go value of type map[string]interface {}"
    );
    let d = dir_with(&[
        ("README.md", "# Catalog\n"),
        ("sub/notes.txt", "x: [\n"),
        ("c.yaml", PKG),
        (".indexignore", "*.md\nsub/\n"),
    ]);
    assert_eq!(load_path(d.path()).unwrap().blobs.len(), 1);
}

#[test]
fn nested_indexignore_is_scoped_to_its_directory() {
    let d = dir_with(&[
        ("a/skip.yaml", "x: [\n"),
        ("a/.indexignore", "skip.yaml\n"),
        ("skip.yaml", PKG),
    ]);
    assert_eq!(load_path(d.path()).unwrap().blobs.len(), 1);
}

#[test]
fn load_order_is_lexical_walk_order() {
    let d = dir_with(&[
        ("b/catalog.yaml", "schema: custom\nname: b\n"),
        ("a/z.yaml", "schema: custom\nname: az\n"),
        (
            "a/b/c.yaml",
            "schema: custom\nname: abc\n---\nschema: custom\nname: abc2\n",
        ),
        ("0.json", "{\"schema\":\"custom\",\"name\":\"zero\"}"),
    ]);
    let names: Vec<String> = load_path(d.path())
        .unwrap()
        .others()
        .map(|m| m.name.clone())
        .collect();
    assert_eq!(names, ["zero", "abc", "abc2", "az", "b"]);
}

#[cfg(unix)]
#[test]
fn symlink_loop_is_an_error_naming_the_file() {
    let d = dir_with(&[("c.yaml", PKG)]);
    std::os::unix::fs::symlink("loop", d.path().join("loop")).unwrap();
    match load_err(d.path()) {
        LoadError::Io { path, message } => {
            assert!(path.ends_with("loop"), "{path}");
            assert_eq!(message, "too many levels of symbolic links");
        }
        other => panic!("{other:?}"),
    }
}

#[cfg(unix)]
#[test]
fn symlink_to_a_directory_is_read_as_a_file() {
    let d = dir_with(&[("real/c.yaml", PKG)]);
    std::os::unix::fs::symlink("real", d.path().join("link")).unwrap();
    let e = load_err(d.path());
    assert!(e.path().ends_with("link"), "{e}");
    assert!(e.to_string().contains("directory"), "{e}");
}

#[cfg(unix)]
#[test]
fn unreadable_file_is_an_error_naming_the_file() {
    use std::os::unix::fs::PermissionsExt;
    let d = dir_with(&[("c.yaml", PKG), ("secret.yaml", PKG)]);
    let p = d.path().join("secret.yaml");
    fs::set_permissions(&p, fs::Permissions::from_mode(0o000)).unwrap();
    if fs::read(&p).is_ok() {
        // Running as root: permissions do not apply, nothing to check.
        return;
    }
    let e = load_err(d.path());
    assert!(e.path().ends_with("secret.yaml"));
    assert!(e.to_string().contains("permission denied"), "{e}");
}

#[test]
fn invalid_utf8_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    fs::write(
        d.path().join("c.yaml"),
        b"schema: olm.package\nname: \xff\xfe\n",
    )
    .unwrap();
    let (_, line, msg) = parse_err(d.path());
    assert_eq!((line, msg.as_str()), (2, "invalid UTF-8"));
}

#[test]
fn missing_path_is_an_error() {
    let e = load_path(Path::new("/nonexistent/catalog")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "/nonexistent/catalog: no such file or directory"
    );
}

#[test]
fn deeply_nested_input_does_not_overflow() {
    let deep = format!(
        "schema: custom\nv: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let d = dir_with(&[("c.yaml", &deep)]);
    let _ = load_path(d.path());
    let deep = format!(
        "{{\"schema\":\"custom\",\"v\":{}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let d = dir_with(&[("c.json", &deep)]);
    assert!(load_path(d.path()).is_err());
}

/// A JSONL line that repeats a key in a nested object is refused as the same document in a JSON
/// file is. Found by fuzzing: such a line was kept verbatim, so `render x.jsonl -o json` wrote a
/// catalog that no longer loaded (`duplicate key`).
#[test]
fn jsonl_refuses_repeated_keys_as_json_does() {
    let line =
        r#"{"name":"a","properties":[{"type":"t","value":{"k":1,"k":2}}],"schema":"olm.bundle"}"#;
    let jsonl = format!("{{\"name\":\"p\",\"schema\":\"olm.package\"}}\n{line}\n");
    let from_jsonl = olm_catalog::load_jsonl(jsonl.as_bytes(), "catalog.jsonl").unwrap_err();
    let from_json = olm_catalog::load_bytes(jsonl.as_bytes(), "catalog.jsonl").unwrap_err();
    assert_eq!(from_jsonl, from_json);
    assert_eq!(
        from_jsonl.to_string(),
        "catalog.jsonl:2: duplicate key \"k\""
    );
    // Canonical lines are still kept as written.
    let ok = "{\"name\":\"p\",\"schema\":\"olm.package\",\"v\":{\"k\":{\"k\":1}}}\n";
    let cat = olm_catalog::load_jsonl(ok.as_bytes(), "catalog.jsonl").unwrap();
    assert_eq!(
        olm_catalog::write::to_string(&cat, olm_catalog::write::Format::Jsonl),
        ok
    );
}
