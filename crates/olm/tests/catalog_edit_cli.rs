//! `olm catalog edit` end to end through the binary, on a copy of a real catalog: an edit that
//! breaks the graph is refused with opm's words and writes nothing, `--dry-run` prints the
//! diff, `--force` writes, and a template edit keeps the template's form.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{DATA, olm};

fn copy_of_cat_facts() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tmp");
    let from = format!("{DATA}/catalogs/community-v4.21/cat-facts-operator/catalog.yaml");
    let to = dir.path().join("catalog.yaml");
    std::fs::copy(from, &to).expect("copy");
    let path = to.display().to_string();
    (dir, path)
}

#[test]
fn a_breaking_edit_is_refused_and_nothing_written() {
    let (_dir, path) = copy_of_cat_facts();
    let before = std::fs::read_to_string(&path).expect("read");
    let args = [
        "catalog",
        "edit",
        "replace-edge",
        &path,
        "--channel",
        "stable",
        "--name",
        "cat-facts-operator.v1.1.2",
        "--replaces",
        "cat-facts-operator.v1.1.0",
    ];
    let run = olm(&args);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "└── invalid channel \"stable\":\n        └── multiple channel heads found in graph: cat-facts-operator.v1.1.1, cat-facts-operator.v1.1.2"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("not written"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&path).expect("read"), before);

    let mut dry = args.to_vec();
    dry.push("--dry-run");
    let run = olm(&dry);
    assert!(
        run.stdout.contains(
            "-  replaces: cat-facts-operator.v1.1.1\n+  replaces: cat-facts-operator.v1.1.0\n"
        ),
        "{}",
        run.stdout
    );
    assert_eq!(std::fs::read_to_string(&path).expect("read"), before);

    let mut forced = args.to_vec();
    forced.push("--force");
    assert_eq!(olm(&forced).code, 0);
    let after = std::fs::read_to_string(&path).expect("read");
    assert_eq!(
        after,
        before.replace(
            "- name: cat-facts-operator.v1.1.2\n  replaces: cat-facts-operator.v1.1.1\n",
            "- name: cat-facts-operator.v1.1.2\n  replaces: cat-facts-operator.v1.1.0\n"
        ),
        "only the edge changes; the rest is written back byte for byte"
    );
    let validate = olm(&["catalog", "validate", &path]);
    assert_eq!(validate.code, 1);
}

#[test]
fn an_entry_without_its_bundle_is_refused_in_a_full_catalog() {
    let (_dir, path) = copy_of_cat_facts();
    let run = olm(&[
        "catalog",
        "edit",
        "add-bundle",
        &path,
        "--channel",
        "stable",
        "--name",
        "cat-facts-operator.v1.2.0",
        "--replaces",
        "cat-facts-operator.v1.1.2",
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("no olm.bundle blobs found in package \"cat-facts-operator\""),
        "{}",
        run.stderr
    );
}

#[test]
fn templates_keep_their_form_and_semver_refuses_graph_edits() {
    let dir = tempfile::tempdir().expect("tmp");
    let semver = dir.path().join("semver.yaml");
    std::fs::write(
        &semver,
        "schema: olm.semver\ngenerateMinorChannels: true\nstable:\n  bundles:\n  - image: quay.io/org/op:v1.0.1\n",
    )
    .expect("write");
    let path = semver.display().to_string();
    let run = olm(&[
        "catalog",
        "edit",
        "add-bundle",
        &path,
        "--channel",
        "Stable",
        "--image",
        "quay.io/org/op:v1.0.2",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(&semver).expect("read"),
        "schema: olm.semver\ngenerateMinorChannels: true\nstable:\n  bundles:\n  - image: quay.io/org/op:v1.0.1\n  - image: quay.io/org/op:v1.0.2\n"
    );
    let run = olm(&[
        "catalog",
        "edit",
        "remove-bundle",
        &path,
        "--channel",
        "stable",
        "--name",
        "x",
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains(
            "not possible for the semver template, which exclusively leverages semver ordering"
        ),
        "{}",
        run.stderr
    );
}

/// A catalog directory of many packages: `--package` picks the channel among the packages'
/// channels of the same name.
#[test]
fn a_package_picks_the_file_in_a_catalog_directory() {
    let dir = format!("{DATA}/catalogs/community-v4.21");
    let args = [
        "catalog",
        "edit",
        "add-bundle",
        &dir,
        "--channel",
        "stable",
        "--name",
        "cat-facts-operator.v1.2.0",
        "--replaces",
        "cat-facts-operator.v1.1.2",
        "--dry-run",
    ];
    let run = olm(&args);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("name the package with --package, or edit one of the files"),
        "{}",
        run.stderr
    );
    let mut picked = args.to_vec();
    picked.extend(["--package", "cat-facts-operator"]);
    let run = olm(&picked);
    assert!(
        run.stdout
            .starts_with(&format!("--- {dir}/cat-facts-operator/catalog.yaml\n")),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "+- name: cat-facts-operator.v1.2.0\n+  replaces: cat-facts-operator.v1.1.2\n"
        ),
        "{}",
        run.stdout
    );
    // A full catalog needs the entry's bundle: opm's words, and (dry run) nothing written.
    assert_eq!(run.code, 1, "{}", run.stderr);
}

/// A real semver template written with capitalised keys, as Go reads it; the file keeps its
/// mode.
#[test]
fn a_capitalised_semver_template_is_edited_in_its_own_spelling() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("semver.yaml");
    std::fs::copy(
        format!("{DATA}/templates/dotvirt-operator/semver.yaml"),
        &path,
    )
    .expect("copy");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let image = "quay.io/community-operator-pipeline-prod/dotvirt-operator:0.0.33";
    let file = path.display().to_string();
    let run = olm(&[
        "catalog",
        "edit",
        "add-bundle",
        &file,
        "--channel",
        "Stable",
        "--image",
        image,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.ends_with(&format!("  - Image: {image}\n")), "{text}");
    assert!(text.starts_with("---\nSchema: olm.semver\n"), "{text}");
    let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
    assert_eq!(mode & 0o777, 0o644);
    let run = olm(&[
        "catalog",
        "edit",
        "remove-bundle",
        &file,
        "--channel",
        "Stable",
        "--name",
        "x",
    ]);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("not possible for the semver template"),
        "{}",
        run.stderr
    );
}
