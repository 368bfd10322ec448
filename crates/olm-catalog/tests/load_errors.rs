//! Load errors held to opm's: every file of `tests/data/load-errors` is loaded by olm and
//! compared with what opm v1.74.0 said of it (`tests/golden/load-errors.txt`, made by
//! `tools/oracles/regen.sh`). Where opm loads a file, olm must too; where opm refuses it, olm's
//! message after its `FILE:LINE: ` location must be opm's once opm's own wrapping is taken off
//! (`error converting YAML to JSON: `, go-yaml's `yaml: line N: `, the decoder's
//! `json: offset N: `, and the ` at offset N (indicated by <==)` excerpt opm appends).
//! Deliberate differences are listed, with their reason, in `load-errors.known.txt`; a listed
//! file must still differ.

use std::collections::BTreeMap;
use std::path::Path;

use olm_catalog::load::{LoadError, load_path};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");

/// Go's `%q` text back to the string (only the escapes logrus produces for these messages).
fn unquote(q: &str) -> String {
    let inner = q
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .unwrap_or(q);
    let mut out = String::new();
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

/// opm's message without the wrapping that olm replaces by its location.
fn opm_problem(message: &str) -> String {
    let mut m = message;
    for prefix in [
        "error converting YAML to JSON: ",
        "error unmarshaling JSON: while decoding JSON: ",
    ] {
        m = m.strip_prefix(prefix).unwrap_or(m);
    }
    let m = match m.strip_prefix("yaml: ") {
        Some(rest) => match rest.strip_prefix("line ").and_then(|r| r.split_once(": ")) {
            Some((n, rest)) if n.bytes().all(|b| b.is_ascii_digit()) => rest,
            _ => rest,
        },
        None => m,
    };
    let m = match m
        .strip_prefix("json: offset ")
        .and_then(|r| r.split_once(": "))
    {
        Some((_, rest)) => rest,
        None => m,
    };
    match m.split_once(" at offset ") {
        Some((head, tail)) if tail.contains("(indicated by <==)") => head.to_owned(),
        _ => m.to_owned(),
    }
}

fn table(name: &str) -> BTreeMap<String, String> {
    let text =
        std::fs::read_to_string(Path::new(DIR).join("golden").join(name)).unwrap_or_default();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split_once(['\t', ':']))
        .map(|(k, v)| (k.to_owned(), v.trim().to_owned()))
        .collect()
}

#[test]
fn load_errors_are_opms() {
    let expected = table("load-errors.txt");
    let known = table("load-errors.known.txt");
    let corpus = Path::new(DIR).join("data").join("load-errors");
    let files = std::fs::read_dir(&corpus).unwrap().count();
    assert!(files >= 40, "only {files} files in {}", corpus.display());
    assert_eq!(
        expected.len(),
        files,
        "the table does not list every file: run tools/oracles/regen.sh"
    );
    let mut differ = Vec::new();
    let mut still_listed = Vec::new();
    for (file, opm) in &expected {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(corpus.join(file), dir.path().join(file)).unwrap();
        let got = match load_path(dir.path()) {
            Ok(_) => "ok".to_owned(),
            Err(LoadError::Parse { message, .. }) => message,
            Err(e) => e.to_string(),
        };
        let want = if opm == "ok" {
            "ok".to_owned()
        } else {
            opm_problem(&unquote(opm))
        };
        match (got == want, known.contains_key(file)) {
            (true, true) => still_listed.push(file.clone()),
            (false, false) => differ.push(format!("{file}:\n  opm: {want}\n  olm: {got}")),
            _ => {}
        }
    }
    assert!(
        differ.is_empty(),
        "{} differ from opm:\n{}",
        differ.len(),
        differ.join("\n")
    );
    assert!(
        still_listed.is_empty(),
        "listed as known differences but now equal to opm: {still_listed:?}"
    );
}

#[test]
fn opm_wrapping_is_taken_off() {
    assert_eq!(
        opm_problem("error converting YAML to JSON: yaml: line 2: did not find expected key"),
        "did not find expected key"
    );
    assert_eq!(
        opm_problem("error converting YAML to JSON: yaml: unknown anchor 'x' referenced"),
        "unknown anchor 'x' referenced"
    );
    assert_eq!(
        opm_problem("json: offset 37: invalid character 'x' in string escape code"),
        "invalid character 'x' in string escape code"
    );
    assert_eq!(
        opm_problem(&unquote(
            r#""json: cannot unmarshal array into Go value of type map[string]interface {} at offset 1 (indicated by <==)\n[ <== \n    1\n]""#
        )),
        "json: cannot unmarshal array into Go value of type map[string]interface {}"
    );
}
