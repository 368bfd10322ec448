//! Byte-exact writer outputs for a small catalog with every schema: opm's JSON (struct field order,
//! 4-space indent, no HTML escaping), opm's YAML (sorted keys, `---`), catalogd's JSONL (canonical).

use olm_catalog::load_bytes;
use olm_catalog::write::{Format, to_string};

const INPUT: &str = r#"---
schema: olm.deprecations
package: foo
entries:
- reference: {schema: olm.bundle, name: foo.v0.1.0}
  message: "use 0.2.0 <now>"
---
schema: olm.bundle
name: foo.v0.2.0
package: foo
image: quay.io/foo/bundle:v0.2.0
properties:
- type: olm.package
  value: {version: 0.2.0, packageName: foo}
relatedImages:
- name: ""
  image: quay.io/foo/op:v0.2.0
---
schema: olm.channel
package: foo
name: stable
entries:
- name: foo.v0.1.0
- name: foo.v0.2.0
  replaces: foo.v0.1.0
  skips: [foo.v0.1.1]
  skipRange: <0.2.0
---
schema: olm.bundle
name: foo.v0.1.0
package: foo
image: quay.io/foo/bundle:v0.1.0
properties:
- type: olm.package
  value: {packageName: foo, version: 0.1.0}
---
schema: custom.thing
package: foo
value: 1.50
---
defaultChannel: stable
name: foo
schema: olm.package
description: Foo & <bar>
---
schema: custom.global
name: g
"#;

#[test]
fn opm_json() {
    let cat = load_bytes(INPUT.as_bytes(), "in.yaml").unwrap();
    olm_catalog::validate(&cat).unwrap();
    let want = r#"{
    "schema": "olm.package",
    "name": "foo",
    "defaultChannel": "stable",
    "description": "Foo & <bar>"
}
{
    "schema": "olm.channel",
    "name": "stable",
    "package": "foo",
    "entries": [
        {
            "name": "foo.v0.1.0"
        },
        {
            "name": "foo.v0.2.0",
            "replaces": "foo.v0.1.0",
            "skips": [
                "foo.v0.1.1"
            ],
            "skipRange": "<0.2.0"
        }
    ]
}
{
    "schema": "olm.bundle",
    "name": "foo.v0.1.0",
    "package": "foo",
    "image": "quay.io/foo/bundle:v0.1.0",
    "properties": [
        {
            "type": "olm.package",
            "value": {
                "packageName": "foo",
                "version": "0.1.0"
            }
        }
    ]
}
{
    "schema": "olm.bundle",
    "name": "foo.v0.2.0",
    "package": "foo",
    "image": "quay.io/foo/bundle:v0.2.0",
    "properties": [
        {
            "type": "olm.package",
            "value": {
                "packageName": "foo",
                "version": "0.2.0"
            }
        }
    ],
    "relatedImages": [
        {
            "name": "",
            "image": "quay.io/foo/op:v0.2.0"
        }
    ]
}
{
    "package": "foo",
    "schema": "custom.thing",
    "value": 1.5
}
{
    "schema": "olm.deprecations",
    "package": "foo",
    "entries": [
        {
            "reference": {
                "schema": "olm.bundle",
                "name": "foo.v0.1.0"
            },
            "message": "use 0.2.0 <now>"
        }
    ]
}
{
    "name": "g",
    "schema": "custom.global"
}
"#;
    assert_eq!(to_string(&cat, Format::Json), want);
}

#[test]
fn opm_yaml() {
    let cat = load_bytes(INPUT.as_bytes(), "in.yaml").unwrap();
    let want = r#"---
defaultChannel: stable
description: Foo & <bar>
name: foo
schema: olm.package
---
entries:
- name: foo.v0.1.0
- name: foo.v0.2.0
  replaces: foo.v0.1.0
  skipRange: <0.2.0
  skips:
  - foo.v0.1.1
name: stable
package: foo
schema: olm.channel
---
image: quay.io/foo/bundle:v0.1.0
name: foo.v0.1.0
package: foo
properties:
- type: olm.package
  value:
    packageName: foo
    version: 0.1.0
schema: olm.bundle
---
image: quay.io/foo/bundle:v0.2.0
name: foo.v0.2.0
package: foo
properties:
- type: olm.package
  value:
    packageName: foo
    version: 0.2.0
relatedImages:
- image: quay.io/foo/op:v0.2.0
  name: ""
schema: olm.bundle
---
package: foo
schema: custom.thing
value: 1.5
---
entries:
- message: use 0.2.0 <now>
  reference:
    name: foo.v0.1.0
    schema: olm.bundle
package: foo
schema: olm.deprecations
---
name: g
schema: custom.global
"#;
    assert_eq!(to_string(&cat, Format::Yaml), want);
}

/// catalogd keeps walk order and writes each blob canonically: sorted keys, compact, no HTML escaping.
#[test]
fn catalogd_jsonl() {
    let cat = load_bytes(INPUT.as_bytes(), "in.yaml").unwrap();
    let want = concat!(
        r#"{"entries":[{"message":"use 0.2.0 <now>","reference":{"name":"foo.v0.1.0","schema":"olm.bundle"}}],"package":"foo","schema":"olm.deprecations"}"#,
        "\n",
        r#"{"image":"quay.io/foo/bundle:v0.2.0","name":"foo.v0.2.0","package":"foo","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"0.2.0"}}],"relatedImages":[{"image":"quay.io/foo/op:v0.2.0","name":""}],"schema":"olm.bundle"}"#,
        "\n",
        r#"{"entries":[{"name":"foo.v0.1.0"},{"name":"foo.v0.2.0","replaces":"foo.v0.1.0","skipRange":"<0.2.0","skips":["foo.v0.1.1"]}],"name":"stable","package":"foo","schema":"olm.channel"}"#,
        "\n",
        r#"{"image":"quay.io/foo/bundle:v0.1.0","name":"foo.v0.1.0","package":"foo","properties":[{"type":"olm.package","value":{"packageName":"foo","version":"0.1.0"}}],"schema":"olm.bundle"}"#,
        "\n",
        r#"{"package":"foo","schema":"custom.thing","value":1.5}"#,
        "\n",
        r#"{"defaultChannel":"stable","description":"Foo & <bar>","name":"foo","schema":"olm.package"}"#,
        "\n",
        r#"{"name":"g","schema":"custom.global"}"#,
        "\n",
    );
    assert_eq!(to_string(&cat, Format::Jsonl), want);
    // Typed blobs re-encoded from their fields give the same bytes.
    let mut typed = cat.clone();
    typed.forget_raw();
    assert_eq!(to_string(&typed, Format::Jsonl), want);
}

#[test]
fn indexignore_negation_and_directories() {
    let d = tempfile::tempdir().unwrap();
    let w = |p: &str, t: &str| {
        let p = d.path().join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, t).unwrap();
    };
    w(".indexignore", "# notes\n*.md\n!KEEP.md\ndrafts/\n");
    w("README.md", "not yaml: [");
    w("KEEP.md", "schema: custom\nname: kept\n");
    w("drafts/x.yaml", "broken: [");
    w("pkg/catalog.yaml", "schema: custom\nname: pkg\n");
    let names: Vec<String> = olm_catalog::load_path(d.path())
        .unwrap()
        .others()
        .map(|m| m.name.clone())
        .collect();
    assert_eq!(names, ["kept", "pkg"]);
}

/// Numbers in a JSON catalog are read to the `float64` nearest their text, as Go's
/// `strconv.ParseFloat` reads them, and written back the same in every format. Found by
/// fuzzing: serde_json's default float parser is off by one unit in the last place for some
/// inputs, so `-3e50` came back as `-3.0000000000000002e+50` from JSON while YAML kept it.
#[test]
fn json_numbers_are_read_exactly_as_go_reads_them() {
    for (text, go) in [
        ("-3e50", "-3e+50"),
        ("3e50", "3e+50"),
        ("1.7976931348623157e308", "1.7976931348623157e+308"),
        ("2.2250738585072014e-308", "2.2250738585072014e-308"),
        ("0.1", "0.1"),
        ("123456789012345678901234567890", "1.2345678901234568e+29"),
        ("9007199254740993.0", "9007199254740992"),
    ] {
        let json = format!(r#"{{"schema":"example.com/numbers","num":{text}}}"#);
        let yaml = format!("schema: example.com/numbers\nnum: {text}\n");
        for (input, format) in [(&json, "JSON"), (&yaml, "YAML")] {
            let cat = load_bytes(input.as_bytes(), "numbers").expect("loads");
            let jsonl = to_string(&cat, Format::Jsonl);
            assert_eq!(
                jsonl,
                format!("{{\"num\":{go},\"schema\":\"example.com/numbers\"}}\n"),
                "{text} read from {format}"
            );
        }
    }
}
