//! Negative validation cases made by mutating real catalogs; each asserts upstream's exact message
//! (operator-registry `alpha/declcfg/declcfg_to_model.go` fail-fast texts and the `alpha/model`
//! `invalid index:` tree).

// Tests and benchmarks fail loudly on purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use olm_catalog::model::*;
use olm_catalog::property::Property;
use olm_catalog::{load_file, validate};
use serde_json::value::RawValue;

fn real(pkg: &str) -> Catalog {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!(
        "../../../shared/data/catalogs/community-v4.21/{pkg}/catalog.yaml"
    ));
    load_file(&p).unwrap()
}

fn kube_green() -> Catalog {
    real("kube-green")
}

/// The validation error, which a catalog loaded only to be validated (from the same catalog
/// written out) must give too.
fn err(cat: &Catalog) -> String {
    let e = validate(cat)
        .expect_err("catalog must be invalid")
        .to_string();
    let text = olm_catalog::write::to_string(cat, olm_catalog::write::Format::Jsonl);
    let opts = olm_catalog::LoadOptions {
        keep_raw: false,
        validate_only: true,
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("catalog.json");
    std::fs::write(&file, text).unwrap();
    let slim = olm_catalog::load::load_file_with(&file, &opts).unwrap();
    assert_eq!(validate(&slim).map_err(|e| e.to_string()), Err(e.clone()));
    e
}

fn channel<'a>(cat: &'a mut Catalog, name: &str) -> &'a mut Channel {
    cat.blobs
        .iter_mut()
        .find_map(|b| match b {
            Blob::Channel(c) if c.name == name => Some(&mut **c),
            _ => None,
        })
        .unwrap()
}

fn entry<'a>(cat: &'a mut Catalog, ch: &str, name: &str) -> &'a mut ChannelEntry {
    channel(cat, ch)
        .entries
        .as_mut()
        .unwrap()
        .iter_mut()
        .find(|e| e.name == name)
        .unwrap()
}

fn bundle<'a>(cat: &'a mut Catalog, name: &str) -> &'a mut Bundle {
    cat.bundles_mut().find(|b| b.name == name).unwrap()
}

fn package(cat: &mut Catalog) -> &mut Package {
    cat.blobs
        .iter_mut()
        .find_map(|b| match b {
            Blob::Package(p) => Some(&mut **p),
            _ => None,
        })
        .unwrap()
}

fn set_prop(b: &mut Bundle, ty: &str, value: &str) {
    let v = RawValue::from_string(value.to_owned()).unwrap();
    match b.properties.iter_mut().find(|p| p.type_ == ty) {
        Some(p) => p.value = v,
        None => b.properties.push(Property {
            type_: ty.to_owned(),
            value: v,
        }),
    }
}

const B0: &str = "kube-green.v0.3.0";

fn tree(lines: &[&str]) -> String {
    lines.join("\n")
}

fn channel_err(ch: &str, leaf: &str) -> String {
    tree(&[
        "invalid index:",
        "└── invalid package \"kube-green\":",
        &format!("    └── invalid channel \"{ch}\":"),
        &format!("        └── {leaf}"),
    ])
}

fn bundle_err(bundle: &str, leaves: &[&str]) -> String {
    let mut l = vec![
        "invalid index:".to_owned(),
        "└── invalid package \"kube-green\":".to_owned(),
        "    └── invalid channel \"alpha\":".to_owned(),
        format!("        └── invalid bundle \"{bundle}\":"),
    ];
    for (i, leaf) in leaves.iter().enumerate() {
        let c = if i + 1 == leaves.len() {
            "└──"
        } else {
            "├──"
        };
        l.push(format!("            {c} {leaf}"));
    }
    l.join("\n")
}

// ---- the model tree ------------------------------------------------------------------------------------

#[test]
fn two_heads() {
    let mut c = kube_green();
    entry(&mut c, "alpha", "kube-green.v0.5.0").replaces.clear();
    assert_eq!(
        err(&c),
        channel_err(
            "alpha",
            "multiple channel heads found in graph: kube-green.v0.4.1, kube-green.v0.7.1"
        )
    );
}

#[test]
fn no_head_when_the_chain_is_a_ring() {
    let mut c = kube_green();
    entry(&mut c, "alpha", B0).replaces = "kube-green.v0.7.1".into();
    assert_eq!(
        err(&c),
        channel_err("alpha", "no channel head found in graph")
    );
}

#[test]
fn cycle_below_the_head() {
    let mut c = kube_green();
    entry(&mut c, "alpha", B0).replaces = "kube-green.v0.4.0".into();
    assert_eq!(
        err(&c),
        channel_err(
            "alpha",
            "detected cycle in replaces chain of upgrade graph: kube-green.v0.4.0 -> kube-green.v0.3.1 -> kube-green.v0.3.0 -> kube-green.v0.4.0"
        )
    );
}

#[test]
fn stranded_bundle() {
    let mut c = kube_green();
    let e = entry(&mut c, "alpha", "kube-green.v0.4.0");
    e.replaces = "kube-green.v0.0.1".into();
    e.skips = vec!["kube-green.v0.3.1".into()];
    assert_eq!(
        err(&c),
        channel_err(
            "alpha",
            "channel contains one or more stranded bundles: kube-green.v0.3.0"
        )
    );
}

#[test]
fn skipped_but_unreachable_is_allowed() {
    let mut c = kube_green();
    let e = entry(&mut c, "alpha", "kube-green.v0.4.0");
    e.replaces = "kube-green.v0.0.1".into();
    e.skips = vec!["kube-green.v0.3.1".into(), B0.into()];
    validate(&c).unwrap();
}

#[test]
fn missing_default_channel() {
    let mut c = kube_green();
    package(&mut c).default_channel = "beta".into();
    assert_eq!(
        err(&c),
        channel_err("beta", "channel must contain at least one bundle")
    );
}

#[test]
fn default_channel_not_set() {
    let mut c = kube_green();
    package(&mut c).default_channel = "".into();
    assert_eq!(
        err(&c),
        "invalid index:\n└── invalid package \"kube-green\":\n    └── default channel must be set"
    );
}

#[test]
fn package_without_channels() {
    let mut c = kube_green();
    c.blobs.retain(|b| matches!(b, Blob::Package(_)));
    package(&mut c).default_channel = "".into();
    assert_eq!(
        err(&c),
        "invalid index:\n└── invalid package \"kube-green\":\n    ├── default channel must be set\n    └── package must contain at least one channel"
    );
}

#[test]
fn bad_skip_range() {
    let mut c = kube_green();
    entry(&mut c, "alpha", B0).skip_range = ">v0.1.0".into();
    assert_eq!(
        err(&c),
        bundle_err(
            B0,
            &[
                r#"invalid skipRange ">v0.1.0": Could not parse Range ">v0.1.0": Could not parse comparator ">v" in ">v0.1.0""#
            ]
        )
    );
}

#[test]
fn bad_skip_range_version() {
    let mut c = kube_green();
    entry(&mut c, "alpha", B0).skip_range = "<0.3".into();
    assert_eq!(
        err(&c),
        bundle_err(
            B0,
            &[
                r#"invalid skipRange "<0.3": Could not parse Range "<0.3": Could not parse version "0.3" in "<0.3": No Major.Minor.Patch elements found"#
            ]
        )
    );
}

#[test]
fn empty_skip() {
    let mut c = kube_green();
    entry(&mut c, "alpha", "kube-green.v0.7.1").skips = vec!["".into()];
    assert_eq!(
        err(&c),
        bundle_err("kube-green.v0.7.1", &["skip[0] is empty"])
    );
}

#[test]
fn duplicate_versions() {
    let mut c = kube_green();
    set_prop(
        bundle(&mut c, "kube-green.v0.3.1"),
        "olm.package",
        r#"{"packageName":"kube-green","version":"0.3.0"}"#,
    );
    set_prop(
        bundle(&mut c, "kube-green.v0.5.1"),
        "olm.package",
        r#"{"packageName":"kube-green","version":"0.5.0"}"#,
    );
    assert_eq!(
        err(&c),
        "invalid index:\n└── invalid package \"kube-green\":\n    └── duplicate versions found in bundles: [{0.3.0: [kube-green.v0.3.0, kube-green.v0.3.1]} {0.5.0: [kube-green.v0.5.0, kube-green.v0.5.1]}]"
    );
    // A ConfigMap CatalogSource's catalog is held to upstream's SQLite loader, which has no
    // such rule; every other rule still applies.
    assert!(olm_catalog::validate::build_index_for_config_map(&c).is_ok());
    entry(&mut c, "alpha", "kube-green.v0.7.1").skips = vec!["".into()];
    assert!(olm_catalog::validate::build_index_for_config_map(&c).is_err());
}

#[test]
fn image_must_be_set() {
    let mut c = kube_green();
    bundle(&mut c, B0).image.clear();
    assert_eq!(err(&c), bundle_err(B0, &["bundle image must be set"]));
}

#[test]
fn bundle_objects_stand_in_for_an_image() {
    let mut c = kube_green();
    let b = bundle(&mut c, B0);
    b.image.clear();
    set_prop(b, "olm.bundle.object", r#"{"data":"e30="}"#);
    validate(&c).unwrap();
}

#[test]
fn release_name_must_be_normalized() {
    let mut c = kube_green();
    set_prop(
        bundle(&mut c, B0),
        "olm.package",
        r#"{"packageName":"kube-green","version":"0.3.0","release":"1"}"#,
    );
    assert_eq!(
        err(&c),
        bundle_err(
            B0,
            &[r#"name "kube-green.v0.3.0" does not match normalized name "kube-green-v0.3.0-1""#]
        )
    );
}

#[test]
fn build_metadata_with_release() {
    let mut c = kube_green();
    set_prop(
        bundle(&mut c, B0),
        "olm.package",
        r#"{"packageName":"kube-green","version":"0.3.0+b1","release":"1"}"#,
    );
    assert_eq!(
        err(&c),
        bundle_err(
            B0,
            &[
                r#"name "kube-green.v0.3.0" does not match normalized name "kube-green-v0.3.0+b1-1""#,
                "cannot use build metadata in version with a release version",
            ]
        )
    );
}

#[test]
fn empty_deprecation_messages_in_the_tree() {
    let mut c = kube_green();
    c.blobs.push(Blob::from(Deprecation {
        package: "kube-green".into(),
        entries: vec![
            DeprecationEntry {
                reference: PackageScopedReference {
                    schema: "olm.package".into(),
                    name: "".into(),
                },
                message: "".into(),
            },
            DeprecationEntry {
                reference: PackageScopedReference {
                    schema: "olm.channel".into(),
                    name: "alpha".into(),
                },
                message: "".into(),
            },
            DeprecationEntry {
                reference: PackageScopedReference {
                    schema: "olm.bundle".into(),
                    name: B0.into(),
                },
                message: "".into(),
            },
        ],
    }));
    assert_eq!(
        err(&c),
        tree(&[
            "invalid index:",
            "└── invalid package \"kube-green\":",
            "    ├── invalid channel \"alpha\":",
            "    │   ├── invalid bundle \"kube-green.v0.3.0\":",
            "    │   │   └── invalid deprecation: message must be set",
            "    │   └── invalid deprecation: message must be set",
            "    └── invalid deprecation: message must be set",
        ])
    );
}

#[test]
fn sibling_order_is_by_name_across_packages_and_channels() {
    let mut c = real("project-quay");
    c.extend(kube_green());
    entry(&mut c, "stable-3.9", "quay-operator.v3.9.0").skip_range = "bad".into();
    entry(&mut c, "stable-3.10", "quay-operator.v3.10.0").skip_range = "bad".into();
    entry(&mut c, "alpha", B0).skips = vec!["".into()];
    let want = tree(&[
        "invalid index:",
        "├── invalid package \"kube-green\":",
        "│   └── invalid channel \"alpha\":",
        "│       └── invalid bundle \"kube-green.v0.3.0\":",
        "│           └── skip[0] is empty",
        "└── invalid package \"project-quay\":",
        "    ├── invalid channel \"stable-3.10\":",
        "    │   └── invalid bundle \"quay-operator.v3.10.0\":",
        "    │       └── invalid skipRange \"bad\": Could not get version from string: \"bad\"",
        "    └── invalid channel \"stable-3.9\":",
        "        └── invalid bundle \"quay-operator.v3.9.0\":",
        "            └── invalid skipRange \"bad\": Could not get version from string: \"bad\"",
    ]);
    assert_eq!(err(&c), want);
    // Stable across runs.
    for _ in 0..5 {
        assert_eq!(err(&c), want);
    }
}

// ---- fail-fast structural checks -------------------------------------------------------------------------

#[test]
fn dangling_entry() {
    let mut c = kube_green();
    channel(&mut c, "alpha")
        .entries
        .as_mut()
        .unwrap()
        .push(ChannelEntry {
            name: "kube-green.v9.9.9".into(),
            replaces: "kube-green.v0.7.1".into(),
            ..Default::default()
        });
    assert_eq!(
        err(&c),
        r#"no olm.bundle blobs found in package "kube-green" for olm.channel entries [kube-green.v9.9.9]"#
    );
}

/// Upstream only checks the last channel processed per package; we check every channel.
#[test]
fn dangling_entry_in_an_earlier_channel() {
    let mut c = real("project-quay");
    channel(&mut c, "stable-3.10")
        .entries
        .as_mut()
        .unwrap()
        .push(ChannelEntry {
            name: "quay-operator.v3.10.99".into(),
            replaces: "quay-operator.v3.10.0".into(),
            ..Default::default()
        });
    assert_eq!(
        err(&c),
        r#"no olm.bundle blobs found in package "project-quay" for olm.channel entries [quay-operator.v3.10.99]"#
    );
}

#[test]
fn duplicate_bundle() {
    let mut c = kube_green();
    let b = bundle(&mut c, B0).clone();
    c.blobs.push(Blob::from(b));
    assert_eq!(
        err(&c),
        r#"package "kube-green" has duplicate bundle "kube-green.v0.3.0""#
    );
}

#[test]
fn duplicate_package() {
    let mut c = kube_green();
    let p = package(&mut c).clone();
    c.blobs.push(Blob::from(p));
    assert_eq!(err(&c), r#"duplicate package "kube-green""#);
}

#[test]
fn package_without_name() {
    let mut c = kube_green();
    package(&mut c).name = "".into();
    assert_eq!(err(&c), "config contains package with no name");
}

#[test]
fn package_name_with_dots() {
    let mut c = kube_green();
    package(&mut c).name = "kube.green".into();
    assert_eq!(
        err(&c),
        r#"invalid package name "kube.green": [must not contain dots]"#
    );
}

#[test]
fn package_name_not_a_label() {
    let mut c = kube_green();
    package(&mut c).name = "Kube-Green".into();
    assert_eq!(
        err(&c),
        r#"invalid package name "Kube-Green": [a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')]"#
    );
}

#[test]
fn package_name_too_long() {
    let mut c = kube_green();
    package(&mut c).name = "a".repeat(64).into();
    assert_eq!(
        err(&c),
        format!(
            r#"invalid package name "{}": [must be no more than 63 characters]"#,
            "a".repeat(64)
        )
    );
}

#[test]
fn channel_of_unknown_package() {
    let mut c = kube_green();
    channel(&mut c, "alpha").package = "nope".into();
    assert_eq!(err(&c), r#"unknown package "nope" for channel "alpha""#);
}

#[test]
fn channel_with_empty_package() {
    let mut c = kube_green();
    channel(&mut c, "alpha").package = "".into();
    assert_eq!(err(&c), r#"unknown package "" for channel "alpha""#);
}

#[test]
fn channel_without_name() {
    let mut c = kube_green();
    channel(&mut c, "alpha").name = "".into();
    assert_eq!(
        err(&c),
        r#"package "kube-green" contains channel with no name"#
    );
}

#[test]
fn duplicate_channel() {
    let mut c = kube_green();
    let ch = channel(&mut c, "alpha").clone();
    c.blobs.push(Blob::from(ch));
    assert_eq!(
        err(&c),
        r#"package "kube-green" has duplicate channel "alpha""#
    );
}

#[test]
fn duplicate_entry() {
    let mut c = kube_green();
    let es = channel(&mut c, "alpha").entries.as_mut().unwrap();
    let first = es[0].clone();
    es.push(first);
    assert_eq!(
        err(&c),
        r#"invalid package "kube-green", channel "alpha": duplicate entry "kube-green.v0.3.0""#
    );
}

#[test]
fn bundle_without_package() {
    let mut c = kube_green();
    bundle(&mut c, B0).package = "".into();
    assert_eq!(
        err(&c),
        r#"package name must be set for bundle "kube-green.v0.3.0""#
    );
}

#[test]
fn bundle_of_unknown_package() {
    let mut c = kube_green();
    bundle(&mut c, B0).package = "nope".into();
    assert_eq!(
        err(&c),
        r#"unknown package "nope" for bundle "kube-green.v0.3.0""#
    );
}

#[test]
fn bundle_not_in_any_channel() {
    let mut c = kube_green();
    let mut b = bundle(&mut c, B0).clone();
    b.name = "kube-green.v0.0.1".into();
    set_prop(
        &mut b,
        "olm.package",
        r#"{"packageName":"kube-green","version":"0.0.1"}"#,
    );
    c.blobs.push(Blob::from(b));
    assert_eq!(
        err(&c),
        r#"package "kube-green", bundle "kube-green.v0.0.1" not found in any channel entries"#
    );
}

#[test]
fn olm_package_property_not_an_object() {
    let mut c = kube_green();
    set_prop(bundle(&mut c, B0), "olm.package", r#""kube-green""#);
    assert_eq!(
        err(&c),
        r#"parse properties for bundle "kube-green.v0.3.0": parse property[1] of type "olm.package": json: cannot unmarshal string into Go value of type property.Package"#
    );
}

#[test]
fn olm_package_property_field_of_wrong_type() {
    let mut c = kube_green();
    set_prop(
        bundle(&mut c, B0),
        "olm.package",
        r#"{"packageName":"kube-green","version":3}"#,
    );
    assert_eq!(
        err(&c),
        r#"parse properties for bundle "kube-green.v0.3.0": parse property[1] of type "olm.package": json: cannot unmarshal number into Go struct field Package.version of type string"#
    );
}

#[test]
fn gvk_property_of_wrong_type() {
    let mut c = kube_green();
    set_prop(bundle(&mut c, B0), "olm.gvk", r#"[]"#);
    assert_eq!(
        err(&c),
        r#"parse properties for bundle "kube-green.v0.3.0": parse property[0] of type "olm.gvk": json: cannot unmarshal array into Go value of type property.GVK"#
    );
}

#[test]
fn csv_metadata_of_wrong_shape() {
    let mut c = kube_green();
    set_prop(
        bundle(&mut c, B0),
        "olm.csv.metadata",
        r#"{"keywords":"a,b"}"#,
    );
    assert_eq!(
        err(&c),
        r#"parse properties for bundle "kube-green.v0.3.0": parse property[2] of type "olm.csv.metadata": json: cannot unmarshal string into Go struct field CSVMetadata.keywords of type []string"#
    );
}

#[test]
fn missing_olm_package_property() {
    let mut c = kube_green();
    bundle(&mut c, B0)
        .properties
        .retain(|p| p.type_ != "olm.package");
    assert_eq!(
        err(&c),
        r#"package "kube-green" bundle "kube-green.v0.3.0" must have exactly 1 "olm.package" property, found 0"#
    );
}

#[test]
fn two_olm_package_properties() {
    let mut c = kube_green();
    let b = bundle(&mut c, B0);
    let p = b
        .properties
        .iter()
        .find(|p| p.type_ == "olm.package")
        .unwrap()
        .clone();
    b.properties.push(p);
    assert_eq!(
        err(&c),
        r#"package "kube-green" bundle "kube-green.v0.3.0" must have exactly 1 "olm.package" property, found 2"#
    );
}

#[test]
fn olm_package_property_names_another_package() {
    let mut c = kube_green();
    set_prop(
        bundle(&mut c, B0),
        "olm.package",
        r#"{"packageName":"other","version":"0.3.0"}"#,
    );
    assert_eq!(
        err(&c),
        r#"package "kube-green" does not match "olm.package" property "other""#
    );
}

#[test]
fn version_with_v_prefix() {
    let mut c = kube_green();
    set_prop(
        bundle(&mut c, B0),
        "olm.package",
        r#"{"packageName":"kube-green","version":"v0.3.0"}"#,
    );
    assert_eq!(
        err(&c),
        r#"error parsing bundle "kube-green.v0.3.0" version "v0.3.0": Invalid character(s) found in major number "v0""#
    );
}

#[test]
fn version_empty() {
    let mut c = kube_green();
    set_prop(
        bundle(&mut c, B0),
        "olm.package",
        r#"{"packageName":"kube-green"}"#,
    );
    assert_eq!(
        err(&c),
        r#"error parsing bundle "kube-green.v0.3.0" version "": Version string empty"#
    );
}

#[test]
fn version_with_four_parts() {
    let mut c = kube_green();
    set_prop(
        bundle(&mut c, B0),
        "olm.package",
        r#"{"packageName":"kube-green","version":"1.0.0.1"}"#,
    );
    assert_eq!(
        err(&c),
        r#"error parsing bundle "kube-green.v0.3.0" version "1.0.0.1": Invalid character(s) found in patch number "0.1""#
    );
}

#[test]
fn bad_release() {
    let mut c = kube_green();
    set_prop(
        bundle(&mut c, B0),
        "olm.package",
        r#"{"packageName":"kube-green","version":"0.3.0","release":"!!!"}"#,
    );
    assert_eq!(
        err(&c),
        r#"error parsing bundle "kube-green.v0.3.0" release version "!!!": invalid release "!!!": segment 0: Invalid character(s) found in prerelease "!!!""#
    );
}

#[test]
fn uppercase_image() {
    let mut c = kube_green();
    bundle(&mut c, B0).image = "quay.io/Kube/green:1".into();
    assert_eq!(
        err(&c),
        r#"package "kube-green" bundle "kube-green.v0.3.0" image: invalid image pull spec "quay.io/Kube/green:1": repository name must be lowercase"#
    );
}

#[test]
fn unsupported_digest_algorithm() {
    let mut c = kube_green();
    bundle(&mut c, B0).image = "quay.io/kube/green@md5:0123456789abcdef0123456789abcdef".into();
    assert_eq!(
        err(&c),
        r#"package "kube-green" bundle "kube-green.v0.3.0" image: invalid image pull spec "quay.io/kube/green@md5:0123456789abcdef0123456789abcdef": unsupported digest algorithm"#
    );
}

#[test]
fn bad_related_image() {
    let mut c = kube_green();
    bundle(&mut c, B0).related_images = vec![RelatedImage {
        name: "op".into(),
        image: "quay.io/kube/green:bad tag".into(),
    }];
    assert_eq!(
        err(&c),
        r#"package "kube-green" bundle "kube-green.v0.3.0" relatedImages[0].image: invalid image pull spec "quay.io/kube/green:bad tag": invalid reference format"#
    );
}

fn deprecation(entries: Vec<(&str, &str, &str)>) -> Blob {
    Blob::from(Deprecation {
        package: "kube-green".into(),
        entries: entries
            .into_iter()
            .map(|(s, n, m)| DeprecationEntry {
                reference: PackageScopedReference {
                    schema: s.into(),
                    name: n.into(),
                },
                message: m.into(),
            })
            .collect(),
    })
}

#[test]
fn valid_deprecations() {
    let mut c = kube_green();
    c.blobs.push(deprecation(vec![
        ("olm.package", "", "gone"),
        ("olm.channel", "alpha", "old"),
        ("olm.bundle", B0, "bad"),
    ]));
    validate(&c).unwrap();
}

#[test]
fn deprecation_without_package() {
    let mut c = kube_green();
    c.blobs.push(Blob::from(Deprecation::default()));
    assert_eq!(
        err(&c),
        "package name must be set for deprecation item {olm.deprecations  []}"
    );
}

#[test]
fn deprecation_of_unknown_package() {
    let mut c = kube_green();
    let mut d = deprecation(vec![]);
    if let Blob::Deprecations(d) = &mut d {
        d.package = "nope".into();
    }
    c.blobs.push(d);
    assert_eq!(
        err(&c),
        r#"cannot apply deprecations to an unknown package "nope""#
    );
}

#[test]
fn two_deprecations_for_one_package() {
    let mut c = kube_green();
    c.blobs.push(deprecation(vec![]));
    c.blobs.push(deprecation(vec![]));
    assert_eq!(
        err(&c),
        r#"expected a maximum of one deprecation per package: "kube-green""#
    );
}

#[test]
fn deprecation_entry_without_schema() {
    let mut c = kube_green();
    c.blobs
        .push(deprecation(vec![("olm.package", "", "x"), ("", "x", "y")]));
    assert_eq!(
        err(&c),
        r#"schema must be set for deprecation entry [1] for package "kube-green""#
    );
}

#[test]
fn duplicate_deprecation_entry() {
    let mut c = kube_green();
    c.blobs.push(deprecation(vec![
        ("olm.bundle", B0, "x"),
        ("olm.bundle", B0, "y"),
    ]));
    assert_eq!(
        err(&c),
        r#"duplicate deprecation entry declcfg.PackageScopedReference{Schema:"olm.bundle", Name:"kube-green.v0.3.0"} for package "kube-green""#
    );
}

#[test]
fn deprecated_bundle_not_found() {
    let mut c = kube_green();
    c.blobs.push(deprecation(vec![("olm.bundle", "nope", "x")]));
    assert_eq!(
        err(&c),
        r#"cannot deprecate bundle "nope" for package "kube-green": bundle not found"#
    );
}

#[test]
fn deprecated_channel_not_found() {
    let mut c = kube_green();
    c.blobs
        .push(deprecation(vec![("olm.channel", "beta", "x")]));
    assert_eq!(
        err(&c),
        r#"cannot deprecate channel "beta" for package "kube-green": channel not found"#
    );
}

#[test]
fn deprecated_package_with_a_name() {
    let mut c = kube_green();
    c.blobs.push(deprecation(vec![("olm.package", "x", "m")]));
    assert_eq!(
        err(&c),
        r#"package name must be empty for deprecated package "kube-green" (specified "x")"#
    );
}

#[test]
fn deprecation_of_unknown_schema() {
    let mut c = kube_green();
    // opm names the entry by its index (checked against opm v1.74.0).
    c.blobs.push(deprecation(vec![
        ("olm.package", "", "m"),
        ("olm.foo", "x", "msg"),
    ]));
    assert_eq!(
        err(&c),
        r#"cannot deprecate object declcfg.PackageScopedReference{Schema:"olm.foo", Name:"x"} referenced by entry 1 for package "kube-green": object schema unknown"#
    );
}

/// A package name that is no DNS-1123 label fails upstream's `declcfg.ConvertToModel` (file-based
/// catalogs), but a ConfigMap CatalogSource's catalog is held to upstream's SQLite loader, which
/// takes it: OLM v0's e2e suite serves `PackageDependent` from ConfigMaps.
#[test]
fn package_name_not_a_dns_label() {
    let text = r#"{"schema":"olm.package","name":"PackageDependent","defaultChannel":"alpha"}
{"schema":"olm.channel","package":"PackageDependent","name":"alpha","entries":[{"name":"dep.v0.1.0"}]}
{"schema":"olm.bundle","package":"PackageDependent","name":"dep.v0.1.0","image":"example.com/dep:0.1.0","properties":[{"type":"olm.package","value":{"packageName":"PackageDependent","version":"0.1.0"}}]}
"#;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("catalog.json");
    std::fs::write(&file, text).unwrap();
    let c = load_file(&file).unwrap();
    let e = validate(&c).expect_err("not a DNS label").to_string();
    assert!(
        e.starts_with("invalid package name \"PackageDependent\": [a lowercase RFC 1123 label"),
        "{e}"
    );
    let for_config_map = olm_catalog::validate::build_index_for_config_map(&c).map(|_| ());
    assert_eq!(for_config_map.map_err(|e| e.to_string()), Ok(()));
}
