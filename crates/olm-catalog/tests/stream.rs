//! A catalog read a package at a time writes exactly what the whole catalog writes, whatever its
//! layout: one file per package, one file for all, files holding several packages, files the
//! quick look gives up on, and broken files.

// Tests fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use olm_catalog::write::{Format, to_string};
use olm_catalog::{Catalog, LoadError, LoadOptions, load_path, stream};

fn community() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/catalogs/community-v4.21")
}

/// Every call's catalog, and the catalog written as json and yaml both whole and a package at a
/// time.
fn streamed(path: &Path) -> Result<(Vec<Catalog>, String, String), LoadError> {
    let opts = LoadOptions {
        keep_raw: false,
        validate_only: false,
    };
    let mut parts = Vec::new();
    let (mut json, mut yaml) = (String::new(), String::new());
    stream::for_each_package(path, &opts, |c: Catalog| -> Result<(), LoadError> {
        json.push_str(&to_string(&c, Format::Json));
        yaml.push_str(&to_string(&c, Format::Yaml));
        parts.push(c);
        Ok(())
    })?;
    Ok((parts, json, yaml))
}

/// Equal texts, or a failure showing where they part (whole catalogs are too long to print).
fn same_text(got: &str, want: &str, path: &Path) {
    if got != want {
        let at = got
            .bytes()
            .zip(want.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        let from = at.saturating_sub(200);
        panic!(
            "{}: streamed output differs at byte {at}:\n{}\n---- whole:\n{}",
            path.display(),
            &got[from..(at + 200).min(got.len())],
            &want[from..(at + 200).min(want.len())]
        );
    }
}

fn assert_same(path: &Path) {
    let whole = load_path(path);
    let streamed = streamed(path);
    match (whole, streamed) {
        (Ok(whole), Ok((parts, json, yaml))) => {
            same_text(&json, &to_string(&whole, Format::Json), path);
            same_text(&yaml, &to_string(&whole, Format::Yaml), path);
            // One call per package, in name order: an olm.package without a name first, blobs
            // without a package last.
            let names: Vec<&str> = parts.iter().map(|c| c.blobs[0].package()).collect();
            let inner = names.strip_prefix(&[""]).unwrap_or(&names);
            let inner = inner.strip_suffix(&[""]).unwrap_or(inner);
            assert!(
                inner.windows(2).all(|w| w[0] < w[1]),
                "{}: {names:?}",
                path.display()
            );
        }
        (Err(a), Err(b)) => {
            // Files are decoded in another order, so with several broken files another may be
            // named first; with one, the error is the same.
            assert_eq!(a.to_string(), b.to_string(), "{}", path.display())
        }
        (a, b) => panic!(
            "{}: whole {:?}, streamed {:?}",
            path.display(),
            a.map(|_| ()),
            b.map(|_| ())
        ),
    }
}

#[test]
fn community_catalog_streams_identically() {
    assert_same(&community());
    let (parts, _, _) = streamed(&community()).unwrap();
    assert!(parts.len() > 30);
}

#[test]
fn every_load_error_file_fails_the_same_way() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/load-errors");
    let mut n = 0;
    for f in std::fs::read_dir(dir).unwrap() {
        assert_same(&f.unwrap().path());
        n += 1;
    }
    assert!(n > 50);
}

/// The community catalog laid out in other ways: one JSON file for everything, packages spread
/// over files in an order unrelated to their names, files of several packages, files in
/// formats the quick look does not read, and blobs without a package.
#[test]
fn other_layouts_stream_identically() {
    let whole = load_path(&community()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let p = tmp.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    // One JSON stream.
    write("one/catalog.json", &to_string(&whole, Format::Json));
    assert_same(&tmp.path().join("one"));
    // Blobs dealt round-robin into 7 files, alternately JSON and YAML, names in reverse.
    let mut files = vec![Catalog::default(); 7];
    for (i, b) in whole.blobs.iter().enumerate() {
        files[i % 7].blobs.push(b.clone());
    }
    for (i, c) in files.iter().enumerate() {
        let (ext, format) = if i % 2 == 0 {
            ("json", Format::Json)
        } else {
            ("yaml", Format::Yaml)
        };
        write(&format!("dealt/{}.{ext}", 9 - i), &to_string(c, format));
    }
    assert_same(&tmp.path().join("dealt"));
    // Per package, plus a file of flow YAML (decoded in the first pass), a custom blob without a
    // package, an olm.package without a name and a custom blob of one package.
    let mut per: std::collections::BTreeMap<&str, Catalog> = Default::default();
    for b in &whole.blobs {
        per.entry(b.package()).or_default().blobs.push(b.clone());
    }
    for (i, (pkg, c)) in per.iter().enumerate() {
        write(
            &format!("per/{i:03}/{pkg}.yaml"),
            &to_string(c, Format::Yaml),
        );
    }
    write(
        "per/zz-flow.yaml",
        "{schema: custom.thing, package: apicurio-registry-3, name: x}\n---\n{schema: custom.loose, value: 1}\n",
    );
    write(
        "per/aa.yaml",
        "schema: custom.loose\nvalue: 2\n---\nschema: olm.package\n",
    );
    write(
        "per/ab.json",
        r#"{"schema":"custom.thing","package":"zzz-last"}"#,
    );
    assert_same(&tmp.path().join("per"));
    // The same with a broken file at the end of the walk.
    write(
        "per/zzz.yaml",
        "schema: olm.channel\npackage: p\nentries: [\n",
    );
    assert_same(&tmp.path().join("per"));
}
