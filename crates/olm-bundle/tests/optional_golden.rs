//! The optional validators (`olm bundle validate --select-optional`) on every real bundle in
//! `shared/data/bundles` and on the hand-made bundles in `tests/data/optional/bundles`, against
//! the findings operator-framework/api's own validators give for them. The expectations,
//! `tests/data/optional/{data,edge}-bundles.txt`, are made by those validators (api v0.45.0,
//! `tools/oracles/operator-controller/optional`), not by this crate: see their header lines. Remake
//! them with `tools/oracles/regen.sh`; this test needs no Go.
//!
//! A case where olm knowingly differs is listed in `tests/data/optional/known.txt` with its
//! reason; the test accepts it only while it still differs.
//!
//! `multiarch` is not here: upstream inspects images with docker or podman. Its cases are
//! upstream's own test vectors, in `src/optional/tests.rs`.

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use olm_bundle::Bundle;
use olm_bundle::optional::community::{IndexFile, IndexFileError};
use olm_bundle::optional::{Gathered, run_gathered, select};

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/optional")
}

/// One case of a table: `<package>/<version> <validator> [k=v,…]` and the expected lines.
struct Case {
    header: String,
    id: String,
    validator: String,
    values: BTreeMap<String, String>,
    want: Vec<String>,
}

fn cases(table: &str) -> Vec<Case> {
    let text = std::fs::read_to_string(here().join(table)).unwrap();
    let mut out: Vec<Case> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        if let Some(header) = line.strip_prefix("== ") {
            let mut words = header.split(' ');
            let id = words.next().unwrap().to_owned();
            let validator = words
                .next()
                .unwrap_or_else(|| panic!("{table}: {line}"))
                .to_owned();
            let values = words
                .flat_map(|w| w.split(','))
                .map(|kv| {
                    let (k, v) = kv.split_once('=').unwrap();
                    (k.to_owned(), v.to_owned())
                })
                .collect();
            out.push(Case {
                header: header.to_owned(),
                id,
                validator,
                values,
                want: Vec::new(),
            });
        } else {
            out.last_mut()
                .unwrap_or_else(|| panic!("{table}: a finding before any case: {line}"))
                .want
                .push(line.to_owned());
        }
    }
    out
}

/// `tests/data/optional/known.txt`: `<case header> — <reason>` per line.
fn known() -> BTreeMap<String, String> {
    std::fs::read_to_string(here().join("known.txt"))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (case, why) = l.split_once(" — ").unwrap_or((l, ""));
            (case.to_owned(), why.to_owned())
        })
        .collect()
}

/// The file an `index-path` names, read from the bundle directory as the oracle reads it (from
/// there as its working directory), its path and errors spelled as given.
fn index_file(bundle: &Path, path: &str) -> IndexFile {
    let full = bundle.join(path).display().to_string();
    let mut file = IndexFile::read(&full);
    file.path = path.to_owned();
    file.contents = file.contents.map_err(|e| match e {
        IndexFileError::Stat(t) => IndexFileError::Stat(t.replace(&full, path)),
        IndexFileError::Read(t) => IndexFileError::Read(t.replace(&full, path)),
        IndexFileError::Directory => IndexFileError::Directory,
    });
    file
}

fn check(table: &str, bundles: &Path) -> usize {
    let known = known();
    let mut loaded: BTreeMap<String, Bundle> = BTreeMap::new();
    let mut failures = Vec::new();
    let all = cases(table);
    assert!(!all.is_empty(), "{table} has no cases");
    for case in &all {
        let b = loaded
            .entry(case.id.clone())
            .or_insert_with(|| Bundle::from_dir(bundles.join(&case.id)).unwrap());
        let selected = select(&format!("name={}", case.validator)).unwrap();
        let gathered = Gathered {
            index_file: case
                .values
                .get("index-path")
                .map(|p| index_file(&bundles.join(&case.id), p)),
            ..Gathered::default()
        };
        let got: Vec<String> = run_gathered(b, &selected, &case.values, &gathered)
            .iter()
            .map(|f| f.to_string().replace('\n', "\\n"))
            .collect();
        match known.get(&case.header) {
            Some(why) if got == case.want => failures.push(format!(
                "{}: listed in known.txt ({why}) but now matches upstream: remove it",
                case.header
            )),
            Some(_) => {}
            None if got != case.want => failures.push(format!(
                "{}:\n  upstream:\n    {}\n  olm:\n    {}",
                case.header,
                case.want.join("\n    "),
                got.join("\n    ")
            )),
            None => {}
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases of {table} differ:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
    all.len()
}

#[test]
fn data_bundles_match_upstream() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/bundles");
    let n = check("data-bundles.txt", &data);
    assert!(n >= 7 * 71, "only {n} cases");
}

#[test]
fn edge_bundles_match_upstream() {
    check("edge-bundles.txt", &here().join("bundles"));
}
