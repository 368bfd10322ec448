//! Golden tests: the real catalog templates of `../shared/data/templates` render to the catalogs the
//! Red Hat community pipeline committed for them.
//!
//! For every package, `ci.yaml` (`fbc.catalog_mapping`) names the template that renders the committed
//! `catalog-v4.NN.yaml`. The committed rendering is also the image → bundle source
//! ([`CatalogBundleRenderer`]), as the pipeline's `opm render <image>` is not available offline. The
//! rendered and committed catalogs are compared as model values: packages (name, default channel,
//! description and, where we can derive it, icon), channels (package, entries in order with
//! `replaces`, `skips` in order, `skipRange`) and bundles (every blob equal). Blob order is ignored:
//! opm's writer regroups blobs by package and sorts channels and bundles by name, so the committed
//! file's order says nothing about the template's.
//!
//! The pipeline used several opm releases, so semver packages pin the edge algorithm that produced
//! their committed catalog (see `data/README.md` §2). Two semver templates are newer than every
//! committed catalog of their package (konflux lacks one bundle in v4.22, kubernaut-operator seven):
//! those are compared with the images absent from the rendering left out of the template, and the
//! number left out is asserted. konflux's full template is also compared with the complete
//! `catalogs/community-v4.21/konflux/catalog.yaml`, which the current algorithm rendered.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use olm_catalog::model::{Blob, Catalog, ChannelEntry};
use olm_template::{
    self as template, CatalogBundleRenderer, RenderOptions, SemverEdges, SemverOptions,
    TemplateKind,
};
use serde_json::Value;

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
}

/// The committed rendering of a package directory and the template `ci.yaml` maps to it.
struct Case {
    package: String,
    template: PathBuf,
    kind: TemplateKind,
    rendering: PathBuf,
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = fs::read_dir(data().join("templates"))
        .expect("templates dir")
        .map(|e| e.expect("dir entry").path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let package = dir.file_name().unwrap().to_string_lossy().into_owned();
        let rendering = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("catalog-v")
            })
            .unwrap_or_else(|| panic!("{package}: no committed rendering"));
        let version = rendering
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .trim_start_matches("catalog-")
            .to_owned();
        let ci: Value =
            olm_goenc::yamlread::from_str(&fs::read_to_string(dir.join("ci.yaml")).unwrap())
                .unwrap_or_else(|e| panic!("{package}/ci.yaml: {e}"));
        let mapping = ci["fbc"]["catalog_mapping"]
            .as_array()
            .unwrap_or_else(|| panic!("{package}: no catalog_mapping"))
            .iter()
            .find(|m| {
                m["catalog_names"]
                    .as_array()
                    .is_some_and(|n| n.iter().any(|n| n.as_str() == Some(&version)))
            })
            .unwrap_or_else(|| panic!("{package}: nothing maps to {version}"));
        let kind = match mapping["type"].as_str() {
            Some("olm.template.basic") => TemplateKind::Basic,
            Some("olm.semver") => TemplateKind::Semver,
            other => panic!("{package}: template type {other:?}"),
        };
        let template = dir.join(mapping["template_name"].as_str().unwrap());
        out.push(Case {
            package,
            template,
            kind,
            rendering,
        });
    }
    out
}

/// The opm behaviour each semver package's committed catalog was rendered with (data/README.md §2),
/// and how many template images are missing from that catalog.
fn semver_pin(package: &str) -> (SemverOptions, usize) {
    let current = SemverOptions::default();
    let old = |edges| SemverOptions {
        edges,
        package_metadata: false,
    };
    match package {
        "clusterpulse" | "openshift-integration-operator" => {
            (old(SemverEdges::ChannelScopedV1_37), 0)
        }
        "kubernaut-operator" => (old(SemverEdges::ChannelScopedV1_37), 7),
        "konflux" => (old(SemverEdges::ChannelScopedV1_57), 1),
        // Package description copied from the CSV: opm v1.65+. dotvirt's four bundles are one
        // Y-stream, so every edge algorithm agrees there; kairos needs the edge-scoped one.
        "dotvirt-operator" | "kairos-operator" => (current, 0),
        // One bundle (no edges), and no package description although its CSV has one: before v1.65.
        "kubevirt-wol" => (old(SemverEdges::EdgeScoped), 0),
        other => panic!("no semver pin for {other}"),
    }
}

/// The template with every image the renderer cannot resolve left out; returns the number left out.
fn without_missing_images(text: &str, renderer: &CatalogBundleRenderer) -> (String, usize) {
    let mut doc: Value = olm_goenc::yamlread::from_str(text).unwrap();
    let mut dropped = 0;
    for (_, v) in doc.as_object_mut().unwrap().iter_mut() {
        let Some(m) = v.as_object_mut() else { continue };
        for (_, list) in m.iter_mut() {
            if let Some(a) = list.as_array_mut() {
                let before = a.len();
                a.retain(|b| {
                    let img = b
                        .as_object()
                        .unwrap()
                        .values()
                        .next()
                        .unwrap()
                        .as_str()
                        .unwrap();
                    renderer.contains(img)
                });
                dropped += before - a.len();
            }
        }
    }
    (serde_json::to_string(&doc).unwrap(), dropped)
}

/// A catalog as comparable values, independent of blob order.
#[derive(Debug, PartialEq)]
struct Shape {
    /// name → (default channel, description)
    packages: BTreeMap<String, (String, String)>,
    /// name → (package, entries)
    channels: BTreeMap<String, (String, Vec<ChannelEntry>)>,
    /// name → bundle blob (as canonical JSON)
    bundles: BTreeMap<String, String>,
    others: usize,
}

fn shape(c: &Catalog) -> Shape {
    let mut s = Shape {
        packages: BTreeMap::new(),
        channels: BTreeMap::new(),
        bundles: BTreeMap::new(),
        others: 0,
    };
    for b in &c.blobs {
        match b {
            Blob::Package(p) => {
                let v = (p.default_channel.to_string(), p.description.clone());
                assert!(
                    s.packages.insert(p.name.to_string(), v).is_none(),
                    "dup package"
                );
            }
            Blob::Channel(ch) => {
                let v = (ch.package.to_string(), ch.entries().to_vec());
                assert!(
                    s.channels.insert(ch.name.to_string(), v).is_none(),
                    "dup channel"
                );
            }
            Blob::Bundle(x) => {
                let v = olm_catalog::write::canonical_blob(b);
                assert!(
                    s.bundles.insert(x.name.to_string(), v).is_none(),
                    "dup bundle"
                );
            }
            _ => s.others += 1,
        }
    }
    s
}

/// Renders `template` against `rendering` and compares; returns a description of the first
/// difference.
fn check(
    package: &str,
    kind: TemplateKind,
    template_text: &str,
    committed: &Catalog,
    options: &RenderOptions,
) -> Result<(), String> {
    let renderer = CatalogBundleRenderer::new(committed, format!("committed catalog of {package}"));
    let got = template::render(template_text.as_bytes(), Some(kind), &renderer, options)
        .map_err(|e| format!("render: {e}"))?;
    olm_catalog::validate(&got).map_err(|e| format!("rendered catalog is invalid: {e}"))?;
    let (g, w) = (shape(&got), shape(committed));
    if g.packages != w.packages {
        return Err(format!(
            "packages differ:\n got {:?}\nwant {:?}",
            g.packages, w.packages
        ));
    }
    for (name, want) in &w.channels {
        match g.channels.get(name) {
            None => return Err(format!("channel {name} missing")),
            Some(got) if got != want => {
                return Err(format!(
                    "channel {name} differs:\n got {got:?}\nwant {want:?}"
                ));
            }
            _ => {}
        }
    }
    if g.channels.len() != w.channels.len() {
        let extra: Vec<_> = g
            .channels
            .keys()
            .filter(|k| !w.channels.contains_key(*k))
            .collect();
        return Err(format!("extra channels {extra:?}"));
    }
    if g.bundles != w.bundles {
        let gk: Vec<_> = g.bundles.keys().collect();
        let wk: Vec<_> = w.bundles.keys().collect();
        return Err(format!("bundles differ: got {gk:?} want {wk:?}"));
    }
    if g.others != w.others {
        return Err(format!("other blobs: got {} want {}", g.others, w.others));
    }
    // Icons: compare wherever the template derived one (the csv.metadata form of the committed
    // bundles carries no icon, so none is derived for semver packages here).
    let icons = |c: &Catalog| c.packages().map(|p| p.icon.clone()).collect::<Vec<_>>();
    if got.packages().any(|p| p.icon.is_some()) && icons(&got) != icons(committed) {
        return Err("package icon differs".to_owned());
    }
    Ok(())
}

#[test]
fn every_mapped_template_renders_to_its_committed_catalog() {
    let cases = cases();
    assert_eq!(cases.len(), 19, "template packages in data/templates");
    let mut failures = Vec::new();
    let (mut basic, mut semver) = (0, 0);
    for case in &cases {
        let committed = olm_catalog::load_file(&case.rendering).unwrap();
        let text = fs::read_to_string(&case.template).unwrap();
        assert_eq!(
            template::detect_kind(text.as_bytes()),
            Ok(case.kind),
            "{}: ci.yaml type vs template schema",
            case.package
        );
        let mut options = RenderOptions::default();
        let mut text = text;
        if case.kind == TemplateKind::Semver {
            let (pin, missing) = semver_pin(&case.package);
            options.semver = pin;
            let renderer = CatalogBundleRenderer::new(&committed, "");
            let (filtered, dropped) = without_missing_images(&text, &renderer);
            assert_eq!(
                dropped, missing,
                "{}: images absent from the rendering",
                case.package
            );
            if dropped > 0 {
                text = filtered;
            }
            semver += 1;
        } else {
            basic += 1;
        }
        if let Err(e) = check(&case.package, case.kind, &text, &committed, &options) {
            failures.push(format!(
                "{} ({}): {e}",
                case.package,
                case.template.display()
            ));
        }
    }
    assert_eq!((basic, semver), (12, 7));
    assert!(
        failures.is_empty(),
        "{} of 19 differ:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn konflux_full_template_matches_the_v4_21_catalog_with_the_current_algorithm() {
    let dir = data();
    let committed =
        olm_catalog::load_file(&dir.join("catalogs/community-v4.21/konflux/catalog.yaml")).unwrap();
    let text = fs::read_to_string(dir.join("templates/konflux/semver.yaml")).unwrap();
    // Current opm: edge-scoped edges, description copied from the default channel's head.
    let options = RenderOptions::default();
    check("konflux", TemplateKind::Semver, &text, &committed, &options).unwrap();
    // Byte for byte too, once the icon (absent from csv.metadata bundles) is supplied.
    let renderer = CatalogBundleRenderer::new(&committed, "catalog");
    let mut got = template::render(text.as_bytes(), None, &renderer, &options).unwrap();
    for b in &mut got.blobs {
        if let Blob::Package(p) = b {
            p.icon = committed.packages().next().and_then(|p| p.icon.clone());
        }
    }
    let want =
        fs::read_to_string(dir.join("catalogs/community-v4.21/konflux/catalog.yaml")).unwrap();
    assert!(olm_catalog::write::to_string(&got, olm_catalog::write::Format::Yaml) == want);
    // The older algorithms do not give this catalog.
    for edges in [
        SemverEdges::ChannelScopedV1_37,
        SemverEdges::ChannelScopedV1_57,
    ] {
        let options = RenderOptions {
            semver: SemverOptions {
                edges,
                package_metadata: true,
            },
        };
        assert!(check("konflux", TemplateKind::Semver, &text, &committed, &options).is_err());
    }
}

#[test]
fn semver_pins_are_needed() {
    // clusterpulse's committed catalog is only reproduced by the v1.37–v1.56 algorithm.
    let dir = data().join("templates/clusterpulse");
    let committed = olm_catalog::load_file(&dir.join("catalog-v4.22.yaml")).unwrap();
    let text = fs::read_to_string(dir.join("semver.yaml")).unwrap();
    let results: Vec<bool> = [
        SemverEdges::EdgeScoped,
        SemverEdges::ChannelScopedV1_37,
        SemverEdges::ChannelScopedV1_57,
    ]
    .into_iter()
    .map(|edges| {
        let semver = SemverOptions {
            edges,
            package_metadata: false,
        };
        check(
            "clusterpulse",
            TemplateKind::Semver,
            &text,
            &committed,
            &RenderOptions { semver },
        )
        .is_ok()
    })
    .collect();
    assert_eq!(results, [false, true, false]);
}

#[test]
fn missing_image_names_the_source() {
    let dir = data().join("templates/kubernaut-operator");
    let committed = olm_catalog::load_file(&dir.join("catalog-v4.22.yaml")).unwrap();
    let renderer = CatalogBundleRenderer::new(&committed, "catalog \"catalog-v4.22.yaml\"");
    let text = fs::read_to_string(dir.join("semver.yaml")).unwrap();
    let e =
        template::render(text.as_bytes(), None, &renderer, &RenderOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "bundle image \"quay.io/community-operator-pipeline-prod/kubernaut-operator:1.5.1\" \
         not found in catalog \"catalog-v4.22.yaml\""
    );
}

#[test]
fn converted_committed_catalogs_render_back_to_themselves() {
    // convert-template basic (and substitutes with no substitutions) then render: the same catalog.
    let mut n = 0;
    for case in cases() {
        let committed = olm_catalog::load_file(&case.rendering).unwrap();
        let renderer = CatalogBundleRenderer::new(&committed, "committed catalog");
        for (kind, doc) in [
            (TemplateKind::Basic, template::convert_basic(&committed)),
            (
                TemplateKind::Substitutes,
                template::convert_substitutes(&committed),
            ),
        ] {
            let text = serde_json::to_vec(&doc).unwrap();
            assert_eq!(template::detect_kind(&text), Ok(kind));
            let got = template::render(&text, None, &renderer, &RenderOptions::default())
                .unwrap_or_else(|e| panic!("{} {kind}: {e}", case.package));
            assert_eq!(shape(&got), shape(&committed), "{} {kind}", case.package);
            n += 1;
        }
    }
    assert_eq!(n, 38);
}

/// Renders a case with its pins (and missing images left out), as the main golden test does.
fn render_case(case: &Case, committed: &Catalog) -> Catalog {
    let renderer = CatalogBundleRenderer::new(committed, "committed catalog");
    let mut text = fs::read_to_string(&case.template).unwrap();
    let mut options = RenderOptions::default();
    if case.kind == TemplateKind::Semver {
        options.semver = semver_pin(&case.package).0;
        let (filtered, dropped) = without_missing_images(&text, &renderer);
        if dropped > 0 {
            text = filtered;
        }
    }
    template::render(text.as_bytes(), Some(case.kind), &renderer, &options).unwrap()
}

/// The strongest check: written with opm's YAML writer, the rendered catalog is byte-for-byte the
/// committed file. The three semver packages whose committed package has an icon get that icon
/// copied in first: the icon comes from the bundle's CSV, and the committed bundles are in
/// `olm.csv.metadata` form, which has no icon.
#[test]
fn rendered_catalogs_written_as_yaml_are_the_committed_files() {
    let mut identical = 0;
    let mut failures = Vec::new();
    for case in cases() {
        let committed = olm_catalog::load_file(&case.rendering).unwrap();
        let mut got = render_case(&case, &committed);
        if [
            "dotvirt-operator",
            "kairos-operator",
            "openshift-integration-operator",
        ]
        .contains(&case.package.as_str())
        {
            let icon = committed.packages().next().and_then(|p| p.icon.clone());
            assert!(
                icon.is_some(),
                "{}: committed package has an icon",
                case.package
            );
            for b in &mut got.blobs {
                if let Blob::Package(p) = b {
                    assert_eq!(p.icon, None, "{}", case.package);
                    p.icon.clone_from(&icon);
                }
            }
        }
        let yaml = olm_catalog::write::to_string(&got, olm_catalog::write::Format::Yaml);
        if yaml == fs::read_to_string(&case.rendering).unwrap() {
            identical += 1;
        } else {
            failures.push(case.package.clone());
        }
    }
    assert_eq!(identical, 19, "not byte-identical: {failures:?}");
}
