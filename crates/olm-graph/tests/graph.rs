//! Upgrade-graph pictures: Mermaid text as opm's render-graph writes it (expected texts derived by
//! hand from opm's writer rules: order, ids, edge labels, classes, link styles), and DOT/SVG
//! drawn from the same decisions.

use olm_catalog::load_bytes;
use olm_graph::{self as graph, Drawing, GraphError, GraphOptions};

const CATALOG: &str = r#"
schema: olm.package
name: foo
defaultChannel: stable
---
schema: olm.channel
package: foo
name: stable
entries:
  - name: foo.v0.1.0
  - name: foo.v0.2.0
    replaces: foo.v0.1.0
  - name: foo.v0.3.0
    replaces: foo.v0.2.0
    skips: [foo.v0.2.0]
    skipRange: ">=0.1.0 <0.3.0"
---
schema: olm.channel
package: foo
name: alpha
entries:
  - name: foo.v0.3.0
---
schema: olm.bundle
package: foo
name: foo.v0.1.0
image: example.com/foo:v0.1.0
properties:
  - type: olm.package
    value: {packageName: foo, version: 0.1.0}
---
schema: olm.bundle
package: foo
name: foo.v0.2.0
image: example.com/foo:v0.2.0
properties:
  - type: olm.package
    value: {packageName: foo, version: 0.2.0}
---
schema: olm.bundle
package: foo
name: foo.v0.3.0
image: example.com/foo:v0.3.0
properties:
  - type: olm.package
    value: {packageName: foo, version: 0.3.0}
---
schema: olm.deprecations
package: foo
entries:
  - reference: {schema: olm.bundle, name: foo.v0.1.0}
    message: old
  - reference: {schema: olm.channel, name: alpha}
    message: gone
"#;

const HEADER: &str = "graph LR
  classDef deprecated fill:#E8960F
  classDef skipped stroke:#FF0000,stroke-width:4px
  classDef deprecatedskipped fill:#E8960F,stroke:#FF0000,stroke-width:4px
";

fn draw(opts: &GraphOptions) -> Result<Drawing, GraphError> {
    let catalog = load_bytes(CATALOG.as_bytes(), "catalog.yaml").unwrap();
    Drawing::new(&catalog, opts)
}

#[test]
fn mermaid_matches_opm_render_graph() {
    let text = graph::mermaid::write(&draw(&GraphOptions::default()).unwrap());
    let want = HEADER.to_owned()
        + r#"  %% package "foo"
  subgraph "foo"
    %% channel "alpha"
    subgraph foo-alpha["alpha"]
      foo-alpha-foo.v0.3.0["foo.v0.3.0"]
    end
    %% channel "stable"
    subgraph foo-stable["stable"]
      foo-stable-foo.v0.3.0["foo.v0.3.0"]
      foo-stable-foo.v0.2.0["foo.v0.2.0"]-- skip --> foo-stable-foo.v0.3.0["foo.v0.3.0"]
      foo-stable-foo.v0.1.0["foo.v0.1.0"]-- "skipRange(>=0.1.0 <0.3.0)" --> foo-stable-foo.v0.3.0["foo.v0.3.0"]
      foo-stable-foo.v0.2.0["foo.v0.2.0"]-- "skipRange(>=0.1.0 <0.3.0)" --> foo-stable-foo.v0.3.0["foo.v0.3.0"]
      foo-stable-foo.v0.2.0["foo.v0.2.0"]-- replace --> foo-stable-foo.v0.3.0["foo.v0.3.0"]
      foo-stable-foo.v0.2.0["foo.v0.2.0"]
      foo-stable-foo.v0.1.0["foo.v0.1.0"]-- replace --> foo-stable-foo.v0.2.0["foo.v0.2.0"]
      foo-stable-foo.v0.1.0["foo.v0.1.0"]
    end
  end
style foo-alpha fill:#DCD0FF
class foo-stable-foo.v0.1.0 deprecated
"#;
    assert_eq!(text, want);
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
    assert!(text.ends_with(
        "style foo-alpha fill:#DCD0FF
class foo-stable-foo.v0.1.0 deprecated
class foo-stable-foo.v0.2.0 skipped
linkStyle 4 stroke:#FF0000,stroke-width:3px,stroke-dasharray:5;
"
    ));
}

#[test]
fn minimum_edge_drops_older_edges() {
    let opts = GraphOptions {
        minimum_edge: Some("foo.v0.2.0".into()),
        ..Default::default()
    };
    let text = graph::mermaid::write(&draw(&opts).unwrap());
    let want = HEADER.to_owned()
        + r#"  %% package "foo"
  subgraph "foo"
    %% channel "alpha"
    subgraph foo-alpha["alpha"]
      foo-alpha-foo.v0.3.0["foo.v0.3.0"]
    end
    %% channel "stable"
    subgraph foo-stable["stable"]
      foo-stable-foo.v0.3.0["foo.v0.3.0"]
      foo-stable-foo.v0.2.0["foo.v0.2.0"]-- skip --> foo-stable-foo.v0.3.0["foo.v0.3.0"]
      foo-stable-foo.v0.2.0["foo.v0.2.0"]-- "skipRange(>=0.1.0 <0.3.0)" --> foo-stable-foo.v0.3.0["foo.v0.3.0"]
      foo-stable-foo.v0.2.0["foo.v0.2.0"]-- replace --> foo-stable-foo.v0.3.0["foo.v0.3.0"]
      foo-stable-foo.v0.2.0["foo.v0.2.0"]
    end
  end
style foo-alpha fill:#DCD0FF
"#;
    assert_eq!(text, want);
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
    assert_eq!(graph::mermaid::write(&draw(&opts).unwrap()), HEADER);
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
        svg.matches("<rect x=").count() - 2,
        4,
        "4 bundle nodes besides the 2 channel bands"
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
