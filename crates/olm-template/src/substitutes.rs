//! The substitutes template (`olm.template.substitutes`, opm v1.62+): a valid catalog plus a list of
//! substitutions `{name: <bundle image>, base: <existing bundle name>}`. Each rendered image takes the
//! base bundle's place in every upgrade graph — the file-based successor of the CSV annotation
//! `olm.substitutesFor`.
//!
//! # Flow
//! 1. The entries must already form a valid catalog (the full validation of [`olm_catalog::validate()`]).
//! 2. No base may be substituted twice, and one image may not substitute two different bases.
//! 3. For each substitution in order: the image is rendered (the first bundle is used), the base must
//!    exist and its version-release must be lower than the substitute's. Then, in every channel that
//!    holds the base:
//!    * a new entry for the substitute is appended, carrying the base's `replaces`, `skips` and
//!      `skipRange`, plus the base in `skips`; the base entry loses its edges;
//!    * an entry that replaced the base now replaces the substitute and also skips the base;
//!    * otherwise an entry that skipped the base now skips the substitute instead.
//!
//!    The substitute bundle is appended to the catalog once, and the result must again be valid.

use std::collections::{HashMap, HashSet};

use olm_goenc::json::{Kind, UnmarshalTypeError};
use olm_version::blang::Version;
use olm_version::{Release, VersionRelease};
use serde_json::Value;

use crate::{BundleRenderer, TemplateError, TemplateKind, first_document, load_entries};
use olm_catalog::model::{Blob, Bundle, Catalog};
use olm_catalog::property::{
    BundleObject, PackageProperty, TYPE_BUNDLE_OBJECT, TYPE_CSV_METADATA, TYPE_PACKAGE,
};
use olm_goenc::quote;

pub const SCHEMA: &str = "olm.template.substitutes";

/// One substitution: the bundle rendered from image `name` substitutes for the bundle named `base`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Substitution {
    pub name: String,
    pub base: String,
}

fn err(message: impl Into<String>) -> TemplateError {
    TemplateError::render(TemplateKind::Substitutes, message)
}

fn parse(input: &[u8]) -> Result<(Vec<Value>, Vec<Substitution>), String> {
    let doc = first_document(input).map_err(|e| format!("decoding template schema: {e}"))?;
    let Value::Object(m) = doc else {
        return Err(format!(
            "unmarshalling template: {}",
            UnmarshalTypeError::value(Kind::of(&doc), "substitutes.SubstitutesTemplateData")
        ));
    };
    let field_err = |v: &Value, field: &str, ty: &str| {
        format!(
            "unmarshalling template: {}",
            UnmarshalTypeError::field(Kind::of(v), "SubstitutesTemplateData", field, ty)
        )
    };
    let schema = match olm_goenc::json::field(&m, "schema") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(other) => return Err(field_err(other, "schema", "string")),
    };
    let entries = match olm_goenc::json::field(&m, "entries") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(other) => return Err(field_err(other, "entries", "[]*declcfg.Meta")),
    };
    let mut subs = Vec::new();
    match olm_goenc::json::field(&m, "substitutions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) => {
            for item in a {
                let mut s = Substitution::default();
                match item {
                    Value::Null => {}
                    Value::Object(o) => {
                        for (field, out) in [("name", &mut s.name), ("base", &mut s.base)] {
                            match olm_goenc::json::field(o, field) {
                                None | Some(Value::Null) => {}
                                Some(Value::String(v)) => *out = v.clone(),
                                Some(other) => {
                                    return Err(format!(
                                        "unmarshalling template: {}",
                                        UnmarshalTypeError::field(
                                            Kind::of(other),
                                            "Substitute",
                                            format!("substitutions.{field}"),
                                            "string"
                                        )
                                    ));
                                }
                            }
                        }
                    }
                    other => {
                        return Err(field_err(other, "substitutions", "substitutes.Substitute"));
                    }
                }
                subs.push(s);
            }
        }
        Some(other) => {
            return Err(field_err(
                other,
                "substitutions",
                "[]substitutes.Substitute",
            ));
        }
    }
    if schema != SCHEMA {
        return Err(format!(
            "template has unknown schema ({}), should be {}",
            quote(schema),
            quote(SCHEMA)
        ));
    }
    Ok((entries, subs))
}

/// Renders a substitutes template.
///
/// Errors (upstream texts): `render: unable to parse template: …`,
/// `render: unable to create declarative config from entries: …`, `render: entries are not valid FBC: …`,
/// `render: cannot reuse the same substitution base %q`,
/// `render: cannot reuse the same substitution %q for different bases (%q and %q)`, and
/// `render: error processing substitution %q -> %q: …` (base, then image) wrapping
/// `substitution name cannot be empty`, `substitution base cannot be empty`,
/// `substitution name and base cannot be the same`, `failed to render bundle image reference %q: …`,
/// `rendered bundle image reference %q contains no bundles`,
/// `failed to get composite version for substitute bundle %q: …` (and `… base bundle …`),
/// `base bundle %q does not exist in catalog`, `base bundle %q is not less than substitute bundle %q`,
/// `resulting config is not valid FBC: …`.
pub fn render(input: &[u8], renderer: &dyn BundleRenderer) -> Result<Catalog, TemplateError> {
    let (entries, subs) =
        parse(input).map_err(|e| err(format!("render: unable to parse template: {e}")))?;
    let mut cfg = load_entries(&entries).map_err(|e| {
        err(format!(
            "render: unable to create declarative config from entries: {e}"
        ))
    })?;
    olm_catalog::validate::validate(&cfg)
        .map_err(|e| err(format!("render: entries are not valid FBC: {e}")))?;

    let mut bases: HashSet<&str> = HashSet::new();
    let mut base_of: HashMap<&str, &str> = HashMap::new();
    for s in subs
        .iter()
        .filter(|s| !s.name.is_empty() && !s.base.is_empty())
    {
        if !bases.insert(&s.base) {
            return Err(err(format!(
                "render: cannot reuse the same substitution base {}",
                quote(&s.base)
            )));
        }
        if let Some(prev) = base_of.insert(&s.name, &s.base)
            && prev != s.base
        {
            return Err(err(format!(
                "render: cannot reuse the same substitution {} for different bases ({} and {})",
                quote(&s.name),
                quote(prev),
                quote(&s.base)
            )));
        }
    }

    for s in &subs {
        substitute(&mut cfg, s, renderer).map_err(|e| {
            err(format!(
                "render: error processing substitution {} -> {}: {e}",
                quote(&s.base),
                quote(&s.name)
            ))
        })?;
    }
    Ok(cfg)
}

/// `opm alpha convert-template substitutes`: wraps a catalog into a substitutes template with no
/// substitutions.
pub fn convert(catalog: &Catalog) -> Value {
    let entries = catalog.blobs.iter().map(crate::basic::blob_value).collect();
    let mut m = serde_json::Map::new();
    m.insert("schema".to_owned(), Value::String(SCHEMA.to_owned()));
    m.insert("entries".to_owned(), Value::Array(entries));
    m.insert("substitutions".to_owned(), Value::Array(Vec::new()));
    Value::Object(m)
}

fn substitute(
    cfg: &mut Catalog,
    s: &Substitution,
    renderer: &dyn BundleRenderer,
) -> Result<(), String> {
    if s.name.is_empty() {
        return Err("substitution name cannot be empty".to_owned());
    }
    if s.base.is_empty() {
        return Err("substitution base cannot be empty".to_owned());
    }
    if s.name == s.base {
        return Err("substitution name and base cannot be the same".to_owned());
    }
    let rendered = renderer.render_bundle(&s.name).map_err(|e| {
        format!(
            "failed to render bundle image reference {}: {e}",
            quote(&s.name)
        )
    })?;
    let Some(sub) = rendered.into_iter().next() else {
        return Err(format!(
            "rendered bundle image reference {} contains no bundles",
            quote(&s.name)
        ));
    };
    let sub_vr = version_release(&sub).map_err(|e| {
        format!(
            "failed to get composite version for substitute bundle {}: {e}",
            quote(&s.name)
        )
    })?;
    let Some(base) = cfg.bundles().find(|b| b.name == s.base.as_str()) else {
        return Err(format!(
            "base bundle {} does not exist in catalog",
            quote(&s.base)
        ));
    };
    let base_vr = version_release(base).map_err(|e| {
        format!(
            "failed to get composite version for base bundle {}: {e}",
            quote(&s.base)
        )
    })?;
    if base_vr >= sub_vr {
        return Err(format!(
            "base bundle {} is not less than substitute bundle {}",
            quote(&s.base),
            quote(&s.name)
        ));
    }

    let sub_name = sub.name.to_string();
    for blob in &mut cfg.blobs {
        let Blob::Channel(ch) = blob else { continue };
        // Only channels that name the base are edited, so the others keep their loaded JSON.
        let names_base = ch.entries().iter().any(|e| {
            e.name == s.base.as_str() || e.replaces == s.base || e.skips.contains(&s.base)
        });
        if !names_base {
            continue;
        }
        let Some(entries) = ch.entries.as_mut() else {
            continue;
        };
        let targets: Vec<usize> = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.name == s.base.as_str())
            .map(|(i, _)| i)
            .collect();
        let original = entries.len();
        for &i in targets.iter().rev() {
            let base_entry = &mut entries[i];
            let mut skips = std::mem::take(&mut base_entry.skips);
            skips.push(s.base.clone());
            let new = olm_catalog::model::ChannelEntry {
                name: sub_name.as_str().into(),
                replaces: std::mem::take(&mut base_entry.replaces),
                skips,
                skip_range: std::mem::take(&mut base_entry.skip_range),
            };
            entries.push(new);
        }
        for e in &mut entries[..original] {
            if e.replaces == s.base {
                e.replaces.clone_from(&sub_name);
                e.skips.push(s.base.clone());
            } else if e.skips.contains(&s.base) {
                e.skips.push(sub_name.clone());
                e.skips.retain(|k| *k != s.base);
            }
        }
    }
    cfg.blobs.push(Blob::from(sub));

    olm_catalog::validate::validate(cfg)
        .map_err(|e| format!("resulting config is not valid FBC: {e}"))?;
    Ok(())
}

/// A bundle's version and release from its `olm.package` property; for bundles that carry the legacy
/// `olm.substitutesFor` annotation and no release, build metadata is read as the release.
fn version_release(b: &Bundle) -> Result<VersionRelease, String> {
    let mut found: Option<VersionRelease> = None;
    for p in b.properties.iter().filter(|p| p.type_ == TYPE_PACKAGE) {
        if found.is_some() {
            return Err(format!(
                "must be exactly one property of type {}",
                quote(TYPE_PACKAGE)
            ));
        }
        let pp: PackageProperty = serde_json::from_str(p.value.get()).map_err(|e| {
            format!(
                "unable to unmarshal \"olm.package\" property for bundle {}: {e}",
                quote(&b.name)
            )
        })?;
        let version = Version::parse(&pp.version).map_err(|e| {
            format!(
                "invalid semver version {} in \"olm.package\" property for bundle {}: {e}",
                quote(&pp.version),
                quote(&b.name)
            )
        })?;
        let release = Release::parse(&pp.release).map_err(|e| {
            format!(
                "invalid release {} in \"olm.package\" property for bundle {}: {e}",
                quote(&pp.release),
                quote(&b.name)
            )
        })?;
        found = Some(VersionRelease { version, release });
    }
    let Some(mut vr) = found else {
        return Err(format!(
            "no \"olm.package\" property found for bundle {}",
            quote(&b.name)
        ));
    };
    if vr.release.is_empty() && !vr.version.build.is_empty() && uses_legacy_release(b) {
        vr.release = Release::parse(&vr.version.build.join(".")).map_err(|e| {
            format!(
                "unable to convert build metadata to release for bundle {}: {e}",
                quote(&b.name)
            )
        })?;
        vr.version.build.clear();
    }
    Ok(vr)
}

/// Whether the bundle's CSV carries a non-empty `olm.substitutesFor` annotation (in `olm.csv.metadata`
/// or in a ClusterServiceVersion `olm.bundle.object`).
fn uses_legacy_release(b: &Bundle) -> bool {
    const KEY: &str = "olm.substitutesFor";
    let annotation = |v: &Value| {
        v.get(KEY)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    for p in &b.properties {
        if p.type_ == TYPE_CSV_METADATA {
            if let Ok(v) = serde_json::from_str::<Value>(p.value.get())
                && v.get("annotations").is_some_and(annotation)
            {
                return true;
            }
        } else if p.type_ == TYPE_BUNDLE_OBJECT
            && let Ok(obj) = serde_json::from_str::<BundleObject>(p.value.get())
            && let Ok(bytes) = obj.decode()
            && let Ok(csv) = serde_json::from_slice::<Value>(&bytes)
            && csv.get("kind").and_then(Value::as_str) == Some("ClusterServiceVersion")
        {
            return csv
                .get("metadata")
                .and_then(|m| m.get("annotations"))
                .is_some_and(annotation);
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BundleRenderError;
    use olm_catalog::property::Property;

    fn bundle(name: &str, version: &str) -> Bundle {
        let prop = PackageProperty {
            package_name: "foo".into(),
            version: version.into(),
            release: String::new(),
        };
        Bundle {
            name: name.into(),
            package: "foo".into(),
            image: format!("img/{name}"),
            properties: vec![Property::new(TYPE_PACKAGE, &prop)],
            ..Default::default()
        }
    }

    fn renderer(image: &str) -> Result<Vec<Bundle>, BundleRenderError> {
        match image {
            "img/foo.v0.2.1" => Ok(vec![bundle("foo.v0.2.1", "0.2.1")]),
            "img/foo.v0.3.0" => Ok(vec![bundle("foo.v0.3.0", "0.3.0")]),
            "img/foo.v0.1.0-old" => Ok(vec![bundle("foo.v0.1.0-old", "0.0.9")]),
            "img/empty" => Ok(vec![]),
            "img/bad-version" => Ok(vec![bundle("foo.bad", "x")]),
            "img/bar.v1.0.0" => {
                let mut b = bundle("bar.v1.0.0", "1.0.0");
                b.package = "bar".into();
                Ok(vec![b])
            }
            _ => Err(BundleRenderError::Failed("no such image".into())),
        }
    }

    const ENTRIES: &str = "schema: olm.template.substitutes
entries:
- schema: olm.package
  name: foo
  defaultChannel: stable
- schema: olm.channel
  package: foo
  name: stable
  entries:
  - name: foo.v0.1.0
  - name: foo.v0.2.0
    replaces: foo.v0.1.0
    skipRange: '<0.2.0'
  - name: foo.v0.3.0-pre
    skips: [foo.v0.2.0]
    replaces: foo.v0.1.0
- schema: olm.bundle
  name: foo.v0.1.0
  package: foo
  image: img/foo.v0.1.0
  properties: [{type: olm.package, value: {packageName: foo, version: 0.1.0}}]
- schema: olm.bundle
  name: foo.v0.2.0
  package: foo
  image: img/foo.v0.2.0
  properties: [{type: olm.package, value: {packageName: foo, version: 0.2.0}}]
- schema: olm.bundle
  name: foo.v0.3.0-pre
  package: foo
  image: img/foo.v0.3.0-pre
  properties: [{type: olm.package, value: {packageName: foo, version: 0.3.0-pre}}]
";

    fn with(subs: &str) -> Result<Catalog, TemplateError> {
        render(
            format!("{ENTRIES}substitutions:\n{subs}").as_bytes(),
            &renderer,
        )
    }

    #[test]
    fn graph_surgery() {
        let c = with("- name: img/foo.v0.2.1\n  base: foo.v0.2.0\n").unwrap();
        let ch = c.channels().next().unwrap();
        let got: Vec<(String, String, Vec<String>, String)> = ch
            .entries()
            .iter()
            .map(|e| {
                (
                    e.name.to_string(),
                    e.replaces.clone(),
                    e.skips.clone(),
                    e.skip_range.clone(),
                )
            })
            .collect();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            got,
            [
                ("foo.v0.1.0".into(), "".into(), vec![], "".into()),
                // The base loses its edges ...
                ("foo.v0.2.0".into(), "".into(), vec![], "".into()),
                // ... an entry that skipped the base skips the substitute instead ...
                (
                    "foo.v0.3.0-pre".into(),
                    "foo.v0.1.0".into(),
                    s(&["foo.v0.2.1"]),
                    "".into()
                ),
                // ... and the substitute takes over the base's edges and skips the base.
                (
                    "foo.v0.2.1".into(),
                    "foo.v0.1.0".into(),
                    s(&["foo.v0.2.0"]),
                    "<0.2.0".into()
                ),
            ]
        );
        assert_eq!(c.bundles().last().unwrap().name, "foo.v0.2.1");
    }

    #[test]
    fn replacing_entries_follow_the_substitute() {
        let c = with("- name: img/foo.v0.2.1\n  base: foo.v0.1.0\n").unwrap();
        let got: Vec<String> = c
            .channels()
            .next()
            .unwrap()
            .entries()
            .iter()
            .map(|e| format!("{} > {} / {}", e.name, e.replaces, e.skips.join(",")))
            .collect();
        assert_eq!(
            got,
            [
                "foo.v0.1.0 >  / ",
                "foo.v0.2.0 > foo.v0.2.1 / foo.v0.1.0",
                "foo.v0.3.0-pre > foo.v0.2.1 / foo.v0.2.0,foo.v0.1.0",
                "foo.v0.2.1 >  / foo.v0.1.0",
            ]
        );
    }

    #[test]
    fn error_texts() {
        let cases = [
            (
                "- name: ''\n  base: foo.v0.2.0\n",
                r#"render: error processing substitution "foo.v0.2.0" -> "": substitution name cannot be empty"#,
            ),
            (
                "- name: img/foo.v0.3.0\n",
                r#"render: error processing substitution "" -> "img/foo.v0.3.0": substitution base cannot be empty"#,
            ),
            (
                "- name: foo.v0.2.0\n  base: foo.v0.2.0\n",
                r#"render: error processing substitution "foo.v0.2.0" -> "foo.v0.2.0": substitution name and base cannot be the same"#,
            ),
            (
                "- name: img/nope\n  base: foo.v0.2.0\n",
                r#"render: error processing substitution "foo.v0.2.0" -> "img/nope": failed to render bundle image reference "img/nope": no such image"#,
            ),
            (
                "- name: img/empty\n  base: foo.v0.2.0\n",
                r#"render: error processing substitution "foo.v0.2.0" -> "img/empty": rendered bundle image reference "img/empty" contains no bundles"#,
            ),
            (
                "- name: img/foo.v0.3.0\n  base: foo.v9\n",
                r#"render: error processing substitution "foo.v9" -> "img/foo.v0.3.0": base bundle "foo.v9" does not exist in catalog"#,
            ),
            (
                "- name: img/foo.v0.1.0-old\n  base: foo.v0.2.0\n",
                r#"render: error processing substitution "foo.v0.2.0" -> "img/foo.v0.1.0-old": base bundle "foo.v0.2.0" is not less than substitute bundle "img/foo.v0.1.0-old""#,
            ),
            (
                "- name: img/foo.v0.3.0\n  base: foo.v0.2.0\n- name: img/foo.v0.2.1\n  base: foo.v0.2.0\n",
                r#"render: cannot reuse the same substitution base "foo.v0.2.0""#,
            ),
            (
                "- name: img/foo.v0.3.0\n  base: foo.v0.2.0\n- name: img/foo.v0.3.0\n  base: foo.v0.1.0\n",
                r#"render: cannot reuse the same substitution "img/foo.v0.3.0" for different bases ("foo.v0.2.0" and "foo.v0.1.0")"#,
            ),
        ];
        let more = [
            (
                "- name: img/bad-version\n  base: foo.v0.2.0\n",
                r#"render: error processing substitution "foo.v0.2.0" -> "img/bad-version": failed to get composite version for substitute bundle "img/bad-version": invalid semver version "x" in "olm.package" property for bundle "foo.bad": No Major.Minor.Patch elements found"#,
            ),
            (
                "- name: img/bar.v1.0.0\n  base: foo.v0.1.0\n",
                r#"render: error processing substitution "foo.v0.1.0" -> "img/bar.v1.0.0": resulting config is not valid FBC: unknown package "bar" for bundle "bar.v1.0.0""#,
            ),
        ];
        let cases: Vec<(&str, &str)> = cases.into_iter().chain(more).collect();
        for (subs, want) in cases {
            assert_eq!(with(subs).unwrap_err().to_string(), want, "{subs}");
        }
        assert_eq!(
            render(b"schema: olm.template.basic\n", &renderer)
                .unwrap_err()
                .to_string(),
            r#"render: unable to parse template: template has unknown schema ("olm.template.basic"), should be "olm.template.substitutes""#
        );
        let e = render(b"schema: olm.template.substitutes\nentries:\n- schema: olm.channel\n  package: foo\n  name: x\n", &renderer).unwrap_err().to_string();
        assert!(e.starts_with("render: entries are not valid FBC: "), "{e}");
        let e = render(
            b"schema: olm.template.substitutes\nentries:\n- name: x\n",
            &renderer,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("render: unable to create declarative config from entries: "),
            "{e}"
        );
    }

    /// The image-to-bundle mock of operator-registry's substitutes tests: `…:v1.2.0-alpha` is
    /// version 1.2.0 with release `alpha`, named `testoperator-v1.2.0-alpha`.
    fn upstream_mock(image: &str) -> Result<Vec<Bundle>, BundleRenderError> {
        let tag = image.split_once(":v").map_or("1.0.0", |(_, t)| t);
        let (version, release) = tag.split_once('-').unwrap_or((tag, ""));
        let name = if release.is_empty() {
            format!("testoperator.v{version}")
        } else {
            format!("testoperator-v{version}-{release}")
        };
        let prop = PackageProperty {
            package_name: "testoperator".into(),
            version: version.into(),
            release: release.into(),
        };
        Ok(vec![Bundle {
            name: name.into(),
            package: "testoperator".into(),
            image: image.into(),
            properties: vec![Property::new(TYPE_PACKAGE, &prop)],
            ..Default::default()
        }])
    }

    fn upstream_entries(channel_entries: &str, bundles: &[(&str, &str, &str)]) -> String {
        let mut s = "schema: olm.template.substitutes\nentries:\n- schema: olm.package\n  \
                     name: testoperator\n  defaultChannel: stable\n- schema: olm.channel\n  \
                     package: testoperator\n  name: stable\n  entries:\n"
            .to_owned();
        s.push_str(channel_entries);
        for (name, version, release) in bundles {
            s.push_str(&format!(
                "- schema: olm.bundle\n  name: {name}\n  package: testoperator\n  \
                 image: quay.io/test/testoperator-bundle:v{version}\n  properties:\n  \
                 - type: olm.package\n    value: {{packageName: testoperator, version: {version}, \
                 release: '{release}'}}\n"
            ));
        }
        s
    }

    fn entry_lines(c: &Catalog) -> Vec<String> {
        c.channels()
            .flat_map(|ch| ch.entries().iter())
            .map(|e| {
                format!(
                    "{} > {} / {} / {}",
                    e.name,
                    e.replaces,
                    e.skips.join(","),
                    e.skip_range
                )
            })
            .collect()
    }

    /// operator-registry `TestRender` and `TestProcessSubstitution` success cases.
    #[test]
    fn upstream_render_vectors() {
        let two = "  - name: testoperator.v1.0.0\n  - name: testoperator.v1.1.0\n    \
                   replaces: testoperator.v1.0.0\n";
        let plain = [
            ("testoperator.v1.0.0", "1.0.0", ""),
            ("testoperator.v1.1.0", "1.1.0", ""),
        ];
        // Single substitution.
        let t = format!(
            "{}substitutions:\n- name: quay.io/test/testoperator-bundle:v1.1.0-alpha\n  \
             base: testoperator.v1.1.0\n",
            upstream_entries(two, &plain)
        );
        let c = render(t.as_bytes(), &upstream_mock).unwrap();
        assert_eq!(
            entry_lines(&c),
            [
                "testoperator.v1.0.0 >  /  / ",
                "testoperator.v1.1.0 >  /  / ",
                "testoperator-v1.1.0-alpha > testoperator.v1.0.0 / testoperator.v1.1.0 / ",
            ]
        );
        // Chained: the second substitution's base is the first substitute, whose entry is cleared.
        let t = format!(
            "{}substitutions:\n- name: quay.io/test/testoperator-bundle:v1.2.0-alpha\n  \
             base: testoperator.v1.1.0\n- name: quay.io/test/testoperator-bundle:v1.3.0-alpha\n  \
             base: testoperator-v1.2.0-alpha\n",
            upstream_entries(two, &plain)
        );
        let c = render(t.as_bytes(), &upstream_mock).unwrap();
        assert_eq!(
            entry_lines(&c),
            [
                "testoperator.v1.0.0 >  /  / ",
                "testoperator.v1.1.0 >  /  / ",
                "testoperator-v1.2.0-alpha >  /  / ",
                "testoperator-v1.3.0-alpha > testoperator.v1.0.0 / \
                 testoperator.v1.1.0,testoperator-v1.2.0-alpha / ",
            ]
        );
        assert_eq!(c.bundles().count(), 4);
        // Skips and skipRange move to the substitute, which also skips the base.
        let with_range = "  - name: testoperator-v1.0.0-alpha\n  - name: testoperator-v1.1.0-alpha\n    \
                          replaces: testoperator-v1.0.0-alpha\n    skips: [testoperator-v0.9.0-alpha]\n    \
                          skipRange: '>=0.9.0 <1.1.0'\n";
        let t = format!(
            "{}substitutions:\n- name: quay.io/test/testoperator-bundle:v1.2.0-alpha\n  \
             base: testoperator-v1.1.0-alpha\n",
            upstream_entries(
                with_range,
                &[
                    ("testoperator-v1.0.0-alpha", "1.0.0", "alpha"),
                    ("testoperator-v1.1.0-alpha", "1.1.0", "alpha")
                ]
            )
        );
        let c = render(t.as_bytes(), &upstream_mock).unwrap();
        assert_eq!(
            entry_lines(&c),
            [
                "testoperator-v1.0.0-alpha >  /  / ",
                "testoperator-v1.1.0-alpha >  /  / ",
                "testoperator-v1.2.0-alpha > testoperator-v1.0.0-alpha / \
                 testoperator-v0.9.0-alpha,testoperator-v1.1.0-alpha / >=0.9.0 <1.1.0",
            ]
        );
        // No substitutions: the entries come back unchanged.
        let t = upstream_entries(
            "  - name: testoperator.v1.0.0\n",
            &[("testoperator.v1.0.0", "1.0.0", "")],
        );
        let c = render(t.as_bytes(), &upstream_mock).unwrap();
        assert_eq!(entry_lines(&c), ["testoperator.v1.0.0 >  /  / "]);
    }

    #[test]
    fn legacy_release_from_build_metadata() {
        let mut b = bundle("foo.v1.0.0-2", "1.0.0+2");
        assert_eq!(version_release(&b).unwrap().to_string(), "1.0.0+2");
        b.properties.push(Property::new(
            TYPE_CSV_METADATA,
            &serde_json::json!({"annotations": {"olm.substitutesFor": "foo.v1.0.0"}}),
        ));
        let vr = version_release(&b).unwrap();
        assert_eq!(vr.to_string(), "1.0.0-2");
        assert!(vr > version_release(&bundle("foo.v1.0.0", "1.0.0")).unwrap());
        let none = Bundle {
            name: "x".into(),
            ..Default::default()
        };
        assert_eq!(
            version_release(&none).unwrap_err(),
            r#"no "olm.package" property found for bundle "x""#
        );
    }
}
