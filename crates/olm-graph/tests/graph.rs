//! Upgrade-graph pictures: Mermaid text as opm's render-graph writes it, and DOT/SVG drawn from
//! the same decisions. Every Mermaid expectation was made by opm v1.74.0 itself
//! (`golden/render-graph/`, remade by `tools/oracles/regen.sh`); the error and warning texts were
//! derived by hand from opm's sources and match what it prints.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use olm_catalog::load_bytes;
use olm_graph::{self as graph, Drawing, GraphError, GraphOptions};

/// The catalog every fixture test draws; opm drew it for the `golden/render-graph/fixture*.mmd`
/// expectations.
const CATALOG: &str = include_str!("golden/render-graph/fixture/catalog.yaml");

fn draw(opts: &GraphOptions) -> Result<Drawing, GraphError> {
    let catalog = load_bytes(CATALOG.as_bytes(), "catalog.yaml").unwrap();
    Drawing::new(&catalog, opts)
}

#[test]
fn mermaid_matches_opm_render_graph() {
    let text = graph::mermaid::write(&draw(&GraphOptions::default()).unwrap());
    assert_eq!(text, include_str!("golden/render-graph/fixture.mmd"));
}

#[test]
fn v0_semantics_mark_skipped_bundles_and_their_edges() {
    let opts = GraphOptions {
        v0_semantics: true,
        ..Default::default()
    };
    let text = graph::mermaid::write(&draw(&opts).unwrap());
    // foo.v0.2.0 is skipped by foo.v0.3.0 (edge 0), so its own replace edge (edge 4) is one OLM v0
    // never takes.
    assert_eq!(text, include_str!("golden/render-graph/fixture.v0.mmd"));
}

#[test]
fn minimum_edge_drops_older_edges() {
    let opts = GraphOptions {
        minimum_edge: Some("foo.v0.2.0".into()),
        ..Default::default()
    };
    let text = graph::mermaid::write(&draw(&opts).unwrap());
    assert_eq!(
        text,
        include_str!("golden/render-graph/fixture.minimum-edge.mmd")
    );
    // opm exits with this message (after log.Fatal's timestamp).
    let err = draw(&GraphOptions {
        minimum_edge: Some("nope".into()),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(err.to_string(), r#"unknown minimum edge name: "nope""#);
}

/// opm formats names with Go's `%q`, which writes DEL and other control characters as `\x7f`,
/// where Rust's `{:?}` would write `\u{7f}`.
#[test]
fn messages_quote_names_as_go_does() {
    let err = draw(&GraphOptions {
        minimum_edge: Some("foo.v\u{7f}\t".into()),
        ..Default::default()
    })
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"unknown minimum edge name: "foo.v\x7f\t""#
    );

    let bad = CATALOG.replace(
        "skipRange: \">=0.1.0 <0.3.0\"",
        "skipRange: \"not a range\"",
    );
    let bad = bad.replacen("name: foo.v0.3.0", "name: \"foo.v0.3.0\\x7f\"", 1);
    let catalog = load_bytes(bad.as_bytes(), "catalog.yaml").unwrap();
    let drawing = Drawing::new(&catalog, &GraphOptions::default()).unwrap();
    assert_eq!(drawing.warnings.len(), 1, "{:?}", drawing.warnings);
    assert!(
        drawing.warnings[0].starts_with(
            r#"warning: ignoring invalid SkipRange for package/edge "foo"/"foo.v0.3.0\x7f": "#
        ),
        "{}",
        drawing.warnings[0]
    );
}

#[test]
fn package_filter_keeps_only_that_package() {
    let opts = GraphOptions {
        package: Some("bar".into()),
        ..Default::default()
    };
    assert_eq!(
        graph::mermaid::write(&draw(&opts).unwrap()),
        include_str!("golden/render-graph/fixture.package-bar.mmd")
    );
}

#[test]
fn bundle_without_version_is_an_error() {
    let bad = CATALOG.replace(
        "value: {packageName: foo, version: 0.2.0}",
        "value: {packageName: foo, version: \"0.2\"}",
    );
    let catalog = load_bytes(bad.as_bytes(), "catalog.yaml").unwrap();
    let err = Drawing::new(&catalog, &GraphOptions::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"bundle "foo.v0.2.0" has invalid version "0.2": No Major.Minor.Patch elements found"#
    );
}

#[test]
fn dot_and_svg_draw_every_node_and_edge() {
    let drawing = draw(&GraphOptions::default()).unwrap();
    let dot = graph::dot::write(&drawing);
    assert!(dot.starts_with("digraph upgrades {"));
    assert_eq!(dot.matches(" -> ").count(), drawing.edges().count());
    assert!(
        dot.contains(r#""foo-stable-foo.v0.1.0" -> "foo-stable-foo.v0.2.0" [label="replace"];"#)
    );
    let svg = graph::svg::write(&drawing);
    assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_eq!(svg.matches("marker-end=").count(), drawing.edges().count());
    assert_eq!(
        svg.matches("<rect x=").count() - 1,
        4,
        "4 bundle nodes besides the legend's sample"
    );
    assert_eq!(
        svg.matches(r#"<rect class="band""#).count(),
        2,
        "2 channel bands"
    );
    assert_eq!(svg.matches(r#"<g class="node "#).count(), 4);
    assert!(
        svg.contains(r#"data-from="foo.v0.1.0" data-to="foo.v0.2.0""#),
        "{svg}"
    );
}

#[test]
fn real_catalog_draws_deterministically() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/catalogs/community-v4.21");
    let catalog = olm_catalog::load_path(&dir).unwrap();
    let a = graph::mermaid::write(&Drawing::new(&catalog, &GraphOptions::default()).unwrap());
    let b = graph::mermaid::write(&Drawing::new(&catalog, &GraphOptions::default()).unwrap());
    assert_eq!(a, b);
    assert!(a.lines().count() > 100);
}

/// The first line where `got` and `want` part, for a readable failure.
fn first_difference(got: &str, want: &str) -> String {
    let n = got
        .lines()
        .zip(want.lines())
        .position(|(a, b)| a != b)
        .unwrap_or(got.lines().count().min(want.lines().count()));
    format!(
        "line {}: olm {:?}, opm {:?}",
        n + 1,
        got.lines().nth(n),
        want.lines().nth(n)
    )
}

/// The whole data catalog, and each of its package folders alone with OLM v0 semantics, drawn
/// byte for byte as opm v1.74.0 drew them (`golden/render-graph/community-v4.21.mmd`, `golden/render-graph/v0/`).
#[test]
fn real_catalog_mermaid_matches_opm() {
    let here = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let data = here.join("../../../shared/data/catalogs/community-v4.21");
    let catalog = olm_catalog::load_path(&data).unwrap();
    let golden = here.join("tests/golden/render-graph");
    let mut failures = Vec::new();
    let whole = graph::mermaid::write(&Drawing::new(&catalog, &GraphOptions::default()).unwrap());
    let want = std::fs::read_to_string(golden.join("community-v4.21.mmd")).unwrap();
    if whole != want {
        failures.push(format!(
            "whole catalog: {}",
            first_difference(&whole, &want)
        ));
    }
    let mut files: Vec<_> = std::fs::read_dir(golden.join("v0"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 30, "only {} v0 drawings", files.len());
    for f in &files {
        // As opm drew it: the catalog folder of that package alone.
        let pkg = f.file_stem().unwrap().to_string_lossy().into_owned();
        let one = olm_catalog::load_path(&data.join(&pkg)).unwrap();
        let opts = GraphOptions {
            v0_semantics: true,
            ..Default::default()
        };
        let got = graph::mermaid::write(&Drawing::new(&one, &opts).unwrap());
        let want = std::fs::read_to_string(f).unwrap();
        if got != want {
            failures.push(format!("{pkg} (v0): {}", first_difference(&got, &want)));
        }
    }
    assert!(
        failures.is_empty(),
        "{} drawings differ from opm:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A budget of skipRange edges stops drawing (and evaluating) ranges once spent, and says how
/// many entries were left out; without one every edge is drawn.
#[test]
fn skip_range_edges_can_be_bounded() {
    let catalog = olm_synthetic::catalog(&olm_synthetic::Spec {
        packages: 1,
        bundles_per_package: 200,
        description_bytes: 10,
    });
    let ranges = |d: &Drawing| {
        d.edges()
            .filter(|e| matches!(e.kind, graph::EdgeKind::SkipRange(_)))
            .count()
    };
    let all = Drawing::new(&catalog, &GraphOptions::default()).unwrap();
    assert!(ranges(&all) > 1_000, "{}", ranges(&all));
    assert!(all.warnings.is_empty());
    let bounded = Drawing::new(
        &catalog,
        &GraphOptions {
            max_skip_range_edges: Some(100),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(ranges(&bounded), 100);
    assert_eq!(bounded.warnings.len(), 1);
    assert!(
        bounded.warnings[0].contains("are not drawn: more than 100 in all"),
        "{:?}",
        bounded.warnings
    );
    // Everything else is drawn as before.
    assert_eq!(
        bounded.edges().count() - ranges(&bounded),
        all.edges().count() - ranges(&all)
    );
}
