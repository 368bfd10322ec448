//! The examples of seed 001's "Catalog Update Formulary": its `fbc.yaml`, `basic.yaml` and
//! `semver.yaml`, each formula applied, and the result compared with the seed's output (where the
//! seed's `yq` recipe has a side effect the formula does not describe, the difference is named).

use super::*;

const FBC: &str = "---
defaultChannel: stable-v1.0
name: testoperator
schema: olm.package
---
entries:
- name: testoperator.v1.0.0
- name: testoperator.v1.0.1
  skips:
  - testoperator.v1.0.0
name: candidate-v1.0
package: testoperator
schema: olm.channel
---
entries:
- name: testoperator.v1.1.0
  replaces: testoperator.v1.0.1
  skips:
  - testoperator.v1.0.0
name: candidate-v1.1
package: testoperator
schema: olm.channel
---
entries:
- name: testoperator.v1.0.1
name: fast-v1.0
package: testoperator
schema: olm.channel
---
entries:
- name: testoperator.v1.1.0
  replaces: testoperator.v1.0.1
name: fast-v1.1
package: testoperator
schema: olm.channel
---
entries:
- name: testoperator.v1.0.1
name: stable-v1.0
package: testoperator
schema: olm.channel
";

const BASIC: &str = "schema: olm.template.basic
entries:
- schema: olm.package
  name: testoperator
  defaultChannel: stable
- schema: olm.channel
  package: testoperator
  name: stable
  entries:
  - name: testoperator.v0.1.0
  - name: testoperator.v0.2.0
    replaces: testoperator.v0.1.0
- schema: olm.bundle
  image: quay.io/organization/testoperator:v0.1.0
- schema: olm.bundle
  image: quay.io/organization/testoperator:v0.2.0
";

const SEMVER: &str = "schema: olm.semver
generateMajorChannels: false
generateMinorChannels: true
candidate:
  bundles:
  - image: quay.io/organization/testoperator:v1.0.0
  - image: quay.io/organization/testoperator:v1.0.1
  - image: quay.io/organization/testoperator:v1.1.0
fast:
  bundles:
  - image: quay.io/organization/testoperator:v1.0.1
  - image: quay.io/organization/testoperator:v1.1.0
stable:
  bundles:
  - image: quay.io/organization/testoperator:v1.0.1
";

fn edited(input: &str, edit: &Edit) -> (String, Findings) {
    let before = parse(input).unwrap();
    let mut after = before.clone();
    apply(&mut after, edit, None).unwrap();
    let findings = check(&before, &after);
    (render(&after), findings)
}

fn add(channel: &str, name: &str, replaces: Option<&str>) -> Edit {
    Edit::AddBundle {
        channel: channel.into(),
        name: name.into(),
        image: None,
        replaces: replaces.map(Into::into),
        skips: Vec::new(),
        skip_range: None,
    }
}

#[test]
fn files_are_written_back_as_they_were_read() {
    assert_eq!(render(&parse(FBC).unwrap()), FBC);
    assert_eq!(render(&parse(BASIC).unwrap()), BASIC);
    assert_eq!(render(&parse(SEMVER).unwrap()), SEMVER);
    assert_eq!(parse(BASIC).unwrap().kind, Kind::Basic);
    assert_eq!(parse(SEMVER).unwrap().kind, Kind::Semver);
    let json = "{\n    \"schema\": \"olm.package\",\n    \"name\": \"p\",\n    \"defaultChannel\": \"s\"\n}\n";
    let doc = parse(json).unwrap();
    assert!(doc.json);
    assert_eq!(render(&doc), json);
}

/// "Adding a new bundle to an existing channel", FBC: the seed's output, and opm's error for the
/// second channel head it warns about.
#[test]
fn adding_a_bundle_to_a_catalog_channel() {
    let (out, findings) = edited(FBC, &add("candidate-v1.1", "testoperator.v1.1.1", None));
    assert!(out.contains(
        "entries:
- name: testoperator.v1.1.0
  replaces: testoperator.v1.0.1
  skips:
  - testoperator.v1.0.0
- name: testoperator.v1.1.1
name: candidate-v1.1
"
    ));
    assert_eq!(findings.errors.len(), 1, "{findings:?}");
    assert!(findings.errors[0].ends_with(
        "invalid channel \"candidate-v1.1\" > multiple channel heads found in graph: testoperator.v1.1.0, testoperator.v1.1.1"
    ), "{findings:?}");
}

#[test]
fn adding_a_bundle_to_a_basic_template_channel() {
    let (out, findings) = edited(
        BASIC,
        &add("stable", "testoperator.v0.2.1", Some("testoperator.v0.2.0")),
    );
    assert!(out.contains(
        "  entries:
  - name: testoperator.v0.1.0
  - name: testoperator.v0.2.0
    replaces: testoperator.v0.1.0
  - name: testoperator.v0.2.1
    replaces: testoperator.v0.2.0
"
    ));
    assert_eq!(findings, Findings::default());
}

#[test]
fn adding_a_bundle_image_to_a_semver_archetype() {
    let edit = Edit::AddBundle {
        channel: "Candidate".into(),
        name: String::new(),
        image: Some("quay.io/organization/testoperator:v1.1.1".into()),
        replaces: None,
        skips: Vec::new(),
        skip_range: None,
    };
    let (out, _) = edited(SEMVER, &edit);
    assert!(out.contains(
        "candidate:
  bundles:
  - image: quay.io/organization/testoperator:v1.0.0
  - image: quay.io/organization/testoperator:v1.0.1
  - image: quay.io/organization/testoperator:v1.1.0
  - image: quay.io/organization/testoperator:v1.1.1
fast:"
    ));
}

/// "Adding a new 'replaces' link between two existing bundles": the seed adds v1.1.1 replacing
/// v1.1.0 (an entry with its edge); an edge between two entries already there is `AddReplaces`.
#[test]
fn adding_a_replaces_link() {
    let (out, findings) = edited(
        FBC,
        &add(
            "candidate-v1.1",
            "testoperator.v1.1.1",
            Some("testoperator.v1.1.0"),
        ),
    );
    assert!(out.contains(
        "- name: testoperator.v1.1.1
  replaces: testoperator.v1.1.0
name: candidate-v1.1"
    ));
    assert_eq!(findings, Findings::default(), "one head: v1.1.1");
    let (out, findings) = edited(
        BASIC,
        &add("stable", "testoperator.v0.1.1", Some("testoperator.v0.1.0")),
    );
    assert!(out.contains(
        "  - name: testoperator.v0.1.1
    replaces: testoperator.v0.1.0
"
    ));
    assert!(
        findings.errors[0].ends_with(
            "multiple channel heads found in graph: testoperator.v0.1.1, testoperator.v0.2.0"
        ),
        "{findings:?}"
    );
    // Between two entries that exist: v1.0.1 gains `replaces: v1.0.0` in candidate-v1.0.
    let edit = Edit::AddReplaces {
        channel: "candidate-v1.0".into(),
        name: "testoperator.v1.0.1".into(),
        replaces: "testoperator.v1.0.0".into(),
    };
    let (out, _) = edited(FBC, &edit);
    assert!(out.contains(
        "- name: testoperator.v1.0.1
  replaces: testoperator.v1.0.0
  skips:"
    ));
    let mut doc = parse(FBC).unwrap();
    let again = Edit::AddReplaces {
        channel: "candidate-v1.1".into(),
        name: "testoperator.v1.1.0".into(),
        replaces: "testoperator.v1.0.0".into(),
    };
    assert!(apply(&mut doc, &again, None).is_err(), "not in the channel");
    let neither = Edit::AddReplaces {
        channel: "candidate-v1.1".into(),
        name: "x".into(),
        replaces: "y".into(),
    };
    assert_eq!(
        apply(&mut doc, &neither, None),
        Err("bundles \"x\" and \"y\" are not in channel \"candidate-v1.1\"".to_owned())
    );
}

/// "Removing a specific bundle version": the channel's only entry goes, leaving the explicitly
/// empty list the seed warns about.
#[test]
fn removing_a_bundle() {
    let edit = Edit::RemoveBundle {
        channel: "candidate-v1.1".into(),
        name: "testoperator.v1.1.0".into(),
        image: None,
    };
    let (out, findings) = edited(FBC, &edit);
    assert!(out.contains("---\nentries: []\nname: candidate-v1.1\n"));
    assert_eq!(
        findings.warnings,
        [
            "channel \"candidate-v1.1\" has no entries left: an explicitly empty array will produce an error in opm validate"
        ]
    );
    let edit = Edit::RemoveBundle {
        channel: "stable".into(),
        name: "testoperator.v0.2.0".into(),
        image: None,
    };
    let (out, _) = edited(BASIC, &edit);
    assert!(out.contains(
        "  name: stable
  entries:
  - name: testoperator.v0.1.0
- schema: olm.bundle"
    ));
}

/// A basic template bundle no channel lists any more is named, since its `olm.bundle` entry
/// still renders it; `--image` takes the entry away as well.
#[test]
fn removing_a_basic_bundle_names_its_leftover_entry() {
    let edit = Edit::RemoveBundle {
        channel: "stable".into(),
        name: "testoperator.v0.2.0".into(),
        image: None,
    };
    let (_, findings) = edited(BASIC, &edit);
    assert_eq!(
        findings.warnings,
        [
            "bundle \"testoperator.v0.2.0\" is in no channel now, but its olm.bundle entry still renders it: opm validate fails with `bundle \"testoperator.v0.2.0\" not found in any channel entries` unless that entry goes too (remove-bundle --image IMAGE)"
        ]
    );
    let edit = Edit::RemoveBundle {
        channel: "stable".into(),
        name: "testoperator.v0.2.0".into(),
        image: Some("quay.io/organization/testoperator:v0.2.0".into()),
    };
    let (out, findings) = edited(BASIC, &edit);
    assert!(findings.warnings.is_empty(), "{findings:?}");
    assert!(!out.contains("testoperator:v0.2.0"), "{out}");
    assert!(
        out.contains("image: quay.io/organization/testoperator:v0.1.0"),
        "{out}"
    );
    let mut doc = parse(BASIC).unwrap();
    let wrong = Edit::RemoveBundle {
        channel: "stable".into(),
        name: "testoperator.v0.2.0".into(),
        image: Some("quay.io/organization/testoperator:v9".into()),
    };
    assert_eq!(
        apply(&mut doc, &wrong, None),
        Err("no olm.bundle entry with image \"quay.io/organization/testoperator:v9\"".to_owned())
    );
    let mut fbc = parse(FBC).unwrap();
    let edit = Edit::RemoveBundle {
        channel: "candidate-v1.1".into(),
        name: "testoperator.v1.1.0".into(),
        image: Some("x".into()),
    };
    assert!(
        apply(&mut fbc, &edit, None)
            .unwrap_err()
            .contains("basic template")
    );
}

/// Templates are read as Go reads them, keys matched without regard to case: a semver
/// template written `Schema:`, `Stable:`, `Bundles:`, `Image:` is one.
#[test]
fn capitalised_template_keys_are_read_as_go_reads_them() {
    let text = "Schema: olm.semver\nStable:\n  Bundles:\n  - Image: example.com/op:v1.0.0\n";
    let (out, _) = edited(
        text,
        &Edit::AddBundle {
            channel: "stable".into(),
            name: String::new(),
            image: Some("example.com/op:v1.1.0".into()),
            replaces: None,
            skips: Vec::new(),
            skip_range: None,
        },
    );
    assert_eq!(
        out,
        "Schema: olm.semver\nStable:\n  Bundles:\n  - Image: example.com/op:v1.0.0\n  - Image: example.com/op:v1.1.0\n"
    );
    let (out, _) = edited(
        text,
        &Edit::Substitute {
            from: "example.com/op:v1.0.0".into(),
            to: "example.com/op:v1.0.0-1".into(),
        },
    );
    assert!(
        out.contains("  - Image: example.com/op:v1.0.0-1\n"),
        "{out}"
    );
    // A new archetype in a capitalised template is capitalised too.
    let (out, _) = edited(
        text,
        &Edit::AddBundle {
            channel: "candidate".into(),
            name: String::new(),
            image: Some("example.com/op:v2.0.0".into()),
            replaces: None,
            skips: Vec::new(),
            skip_range: None,
        },
    );
    assert!(
        out.ends_with("Candidate:\n  Bundles:\n  - Image: example.com/op:v2.0.0\n"),
        "{out}"
    );
    let mut doc = parse(text).unwrap();
    let remove = Edit::RemoveBundle {
        channel: "stable".into(),
        name: "x".into(),
        image: None,
    };
    assert_eq!(
        apply(&mut doc, &remove, None),
        Err(SEMVER_IMPOSSIBLE.to_owned())
    );
}

/// The semver template's graph comes from versions: edges are refused, and a substitute that
/// would list an image twice in an archetype is refused as adding it twice is.
#[test]
fn the_semver_template_takes_images_only_and_once() {
    let mut doc = parse(SEMVER).unwrap();
    let with_edge = Edit::AddBundle {
        channel: "candidate".into(),
        name: String::new(),
        image: Some("quay.io/organization/testoperator:v1.2.0".into()),
        replaces: Some("testoperator.v1.1.0".into()),
        skips: Vec::new(),
        skip_range: None,
    };
    assert!(
        apply(&mut doc, &with_edge, None)
            .unwrap_err()
            .contains("--name, --replaces, --skips and --skip-range are not for it")
    );
    let twice = Edit::Substitute {
        from: "quay.io/organization/testoperator:v1.0.0".into(),
        to: "quay.io/organization/testoperator:v1.0.1".into(),
    };
    assert_eq!(
        apply(&mut doc, &twice, None),
        Err("image \"quay.io/organization/testoperator:v1.0.1\" is already in the candidate archetype".to_owned())
    );
    let mut malformed = parse("schema: olm.semver\ncandidate: 5\n").unwrap();
    let add = Edit::AddBundle {
        channel: "candidate".into(),
        name: String::new(),
        image: Some("example.com/op:v1".into()),
        replaces: None,
        skips: Vec::new(),
        skip_range: None,
    };
    assert_eq!(
        apply(&mut malformed, &add, None),
        Err("the candidate archetype is not a mapping".to_owned())
    );
}

/// In a catalog of several packages, `--package` picks the channel.
#[test]
fn a_package_picks_among_channels_of_the_same_name() {
    let two = format!(
        "{FBC}---\nschema: olm.package\nname: other\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: other\nname: stable-v1.0\nentries:\n- name: other.v1.0.0\n"
    );
    let mut doc = parse(&two).unwrap();
    let edit = add("stable-v1.0", "x.v9.0.0", None);
    assert_eq!(
        apply(&mut doc.clone(), &edit, None),
        Err(
            "2 packages have a channel \"stable-v1.0\": name the package with --package".to_owned()
        )
    );
    apply(&mut doc, &edit, Some("other")).unwrap();
    let text = render(&doc);
    assert!(
        text.contains(
            "entries:\n- name: other.v1.0.0\n- name: x.v9.0.0\nname: stable-v1.0\npackage: other\n"
        ),
        "{text}"
    );
    assert_eq!(
        apply(&mut doc, &edit, Some("nope")),
        Err("no channel \"stable-v1.0\" in package \"nope\"".to_owned())
    );
}

/// "Substituting a bundle version in the upgrade graph": the seed's complete FBC output, and
/// the basic template's edges following the new name.
#[test]
fn substituting_a_bundle() {
    let edit = Edit::Substitute {
        from: "testoperator.v1.1.0".into(),
        to: "testoperator.v1.1.0-cve".into(),
    };
    let (out, findings) = edited(FBC, &edit);
    assert_eq!(
        out,
        FBC.replace("testoperator.v1.1.0\n", "testoperator.v1.1.0-cve\n")
    );
    assert_eq!(findings, Findings::default());
    let edit = Edit::Substitute {
        from: "testoperator.v0.1.0".into(),
        to: "testoperator.v0.1.0-CVE".into(),
    };
    let (out, _) = edited(BASIC, &edit);
    assert!(out.contains(
        "  - name: testoperator.v0.1.0-CVE
  - name: testoperator.v0.2.0
    replaces: testoperator.v0.1.0-CVE
"
    ));
    let edit = Edit::Substitute {
        from: "quay.io/organization/testoperator:v1.1.0".into(),
        to: "quay.io/organization/testoperator:v1.1.0-cve".into(),
    };
    let (out, _) = edited(SEMVER, &edit);
    assert_eq!(
        out,
        SEMVER.replace("testoperator:v1.1.0\n", "testoperator:v1.1.0-cve\n")
    );
}

/// "Introducing a new replacement relationship": the edge of v1.1.0 (FBC) and v0.2.0 (basic)
/// points elsewhere. The seed's `yq` also drops the channel's other entries and the `skips`
/// (it assigns a new one-entry list); the formula only changes the edge.
#[test]
fn changing_a_replaces_target() {
    let edit = Edit::ReplaceEdge {
        channel: "candidate-v1.1".into(),
        name: "testoperator.v1.1.0".into(),
        replaces: "testoperator.v1.0.0".into(),
    };
    let (out, _) = edited(FBC, &edit);
    assert!(out.contains(
        "- name: testoperator.v1.1.0
  replaces: testoperator.v1.0.0
  skips:
  - testoperator.v1.0.0
name: candidate-v1.1"
    ));
    let edit = Edit::ReplaceEdge {
        channel: "stable".into(),
        name: "testoperator.v0.2.0".into(),
        replaces: "testoperator.v0.1.5".into(),
    };
    let (out, findings) = edited(BASIC, &edit);
    assert!(out.contains(
        "  - name: testoperator.v0.2.0
    replaces: testoperator.v0.1.5
"
    ));
    assert!(
        !findings.errors.is_empty(),
        "v0.1.0 is left a second head: {findings:?}"
    );
    let mut doc = parse(FBC).unwrap();
    let none = Edit::ReplaceEdge {
        channel: "fast-v1.0".into(),
        name: "testoperator.v1.0.1".into(),
        replaces: "testoperator.v1.0.0".into(),
    };
    assert!(
        apply(&mut doc, &none, None)
            .unwrap_err()
            .contains("add-replaces")
    );
}

/// The semver template has no edges to edit (seed 001's note on three formulae).
#[test]
fn the_semver_template_refuses_graph_edits() {
    let mut doc = parse(SEMVER).unwrap();
    for edit in [
        Edit::RemoveBundle {
            channel: "candidate".into(),
            name: "x".into(),
            image: None,
        },
        Edit::ReplaceEdge {
            channel: "candidate".into(),
            name: "x".into(),
            replaces: "y".into(),
        },
        Edit::AddReplaces {
            channel: "candidate".into(),
            name: "x".into(),
            replaces: "y".into(),
        },
    ] {
        assert_eq!(
            apply(&mut doc, &edit, None),
            Err(SEMVER_IMPOSSIBLE.to_owned())
        );
    }
}

#[test]
fn bad_input_is_named() {
    assert!(parse("a: [").is_err());
    let mut doc = parse(FBC).unwrap();
    assert_eq!(
        apply(&mut doc, &add("nope", "x", None), None),
        Err("no channel \"nope\"".to_owned())
    );
    assert_eq!(
        apply(
            &mut doc,
            &add("fast-v1.0", "testoperator.v1.0.1", None),
            None
        ),
        Err("bundle \"testoperator.v1.0.1\" is already in channel \"fast-v1.0\"".to_owned())
    );
}

/// A channel that already had several heads: an edit that leaves fewer, or as many under
/// other names, is not refused for them; one that adds a head is.
#[test]
fn an_already_broken_channel_may_be_mended_in_steps() {
    let three = "---
schema: olm.package
name: op
defaultChannel: stable
---
schema: olm.channel
package: op
name: stable
entries:
- name: op.v0.9.0
- name: op.v1.1.0
- name: op.v1.2.0
";
    let (_, fewer) = edited(
        three,
        &Edit::AddReplaces {
            channel: "stable".into(),
            name: "op.v1.2.0".into(),
            replaces: "op.v1.1.0".into(),
        },
    );
    assert!(fewer.errors.is_empty(), "{fewer:?}");
    let (_, renamed) = edited(
        three,
        &Edit::Substitute {
            from: "op.v1.2.0".into(),
            to: "op.v1.2.1".into(),
        },
    );
    assert!(renamed.errors.is_empty(), "{renamed:?}");
    let (_, more) = edited(three, &add("stable", "op.v2.0.0", None));
    assert_eq!(
        more.errors,
        [
            "invalid index > invalid package \"op\" > invalid channel \"stable\" > multiple channel heads found in graph: op.v0.9.0, op.v1.1.0, op.v1.2.0, op.v2.0.0"
        ]
    );
}

/// Problems print as opm prints its validation tree.
#[test]
fn errors_print_as_opm_tree() {
    let (_, findings) = edited(FBC, &add("candidate-v1.1", "testoperator.v1.1.1", None));
    assert_eq!(
        findings.error_report().unwrap(),
        "invalid index:
└── invalid package \"testoperator\":
    └── invalid channel \"candidate-v1.1\":
        └── multiple channel heads found in graph: testoperator.v1.1.0, testoperator.v1.1.1"
    );
}

#[test]
fn template_comments_survive_an_edit() {
    let basic = "# Maintained by the release team.\n\
                 schema: olm.template.basic\n\
                 entries:\n\
                 - schema: olm.package\n\
                 \x20 name: testoperator\n\
                 \x20 defaultChannel: stable # what users get\n\
                 \n\
                 # Channels\n\
                 - schema: olm.channel\n\
                 \x20 package: testoperator\n\
                 \x20 name: stable\n\
                 \x20 entries:\n\
                 \x20 - name: testoperator.v0.1.0\n\
                 \x20 # 0.2.0 fixes the upgrade from 0.1.0\n\
                 \x20 - name: testoperator.v0.2.0\n\
                 \x20   replaces: testoperator.v0.1.0\n";
    let (out, _) = edited(
        basic,
        &add("stable", "testoperator.v0.3.0", Some("testoperator.v0.2.0")),
    );
    let expected =
        format!("{basic}\x20 - name: testoperator.v0.3.0\n\x20   replaces: testoperator.v0.2.0\n");
    assert_eq!(out, expected);

    let semver = "schema: olm.semver\n\
                  generateMajorChannels: false\n\
                  generateMinorChannels: true\n\
                  candidate:\n\
                  \x20 bundles:\n\
                  \x20 # the CVE release\n\
                  \x20 - image: quay.io/organization/testoperator:v1.0.1  # bad\n\
                  stable:\n\
                  \x20 bundles:\n\
                  \x20 - image: quay.io/organization/testoperator:v1.0.0\n";
    let (out, _) = edited(
        semver,
        &Edit::Substitute {
            from: "quay.io/organization/testoperator:v1.0.1".into(),
            to: "quay.io/organization/testoperator:v1.0.1-CVE".into(),
        },
    );
    assert_eq!(out, semver.replace(":v1.0.1 ", ":v1.0.1-CVE "), "{out}");
}
