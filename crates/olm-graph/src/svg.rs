//! A standalone SVG picture a person can open in any browser, drawn without external tools.
//!
//! Layout: one row per channel, grouped under its package; bundles left to right in increasing
//! version; `replace` edges arc above the row, `skip` edges (dashed) and `skipRange` edges
//! (dotted) below it, so the three kinds never hide each other. Bundles an edge names that are
//! not in the channel are drawn at the left with a dashed border. Hovering a node or an edge shows
//! its full text.

use std::collections::HashMap;
use std::fmt::Write;

use crate::{ChannelDrawing, Drawing, EdgeKind, NodeClass};

const FONT: f64 = 12.0;
const CHAR_W: f64 = 7.0;
const NODE_H: f64 = 26.0;
const GAP_X: f64 = 36.0;
const ROW_PAD: f64 = 70.0;
const LEFT: f64 = 20.0;
const LABEL_W: f64 = 160.0;

struct Placed {
    x: f64,
    w: f64,
    name: String,
    class: Option<NodeClass>,
    ghost: bool,
}

/// Nodes of one channel in increasing version, with ghosts for names only edges mention.
fn place(c: &ChannelDrawing) -> Vec<Placed> {
    let mut names: Vec<(String, Option<NodeClass>, bool)> = Vec::new();
    let known: std::collections::HashSet<&str> = c.nodes.iter().map(|n| n.name.as_str()).collect();
    let mut ghosts: Vec<String> = Vec::new();
    for n in &c.nodes {
        for e in &n.edges {
            if !known.contains(e.from.as_str()) && !ghosts.contains(&e.from) {
                ghosts.push(e.from.clone());
            }
        }
    }
    ghosts.sort();
    names.extend(ghosts.into_iter().map(|g| (g, None, true)));
    names.extend(
        c.nodes
            .iter()
            .rev()
            .map(|n| (n.name.clone(), n.class, false)),
    );
    let mut x = LEFT + LABEL_W;
    names
        .into_iter()
        .map(|(name, class, ghost)| {
            let w = name.chars().count() as f64 * CHAR_W + 16.0;
            let p = Placed {
                x,
                w,
                name,
                class,
                ghost,
            };
            x += w + GAP_X;
            p
        })
        .collect()
}

/// Writes `drawing` as an SVG document.
pub fn write(drawing: &Drawing) -> String {
    let mut body = String::new();
    let mut y = 30.0;
    let mut width: f64 = 400.0;
    for p in &drawing.packages {
        let fill = if p.deprecated { "#989695" } else { "#333" };
        let _ = writeln!(
            body,
            r#"<text x="{LEFT}" y="{y}" font-size="16" font-weight="bold" fill="{fill}">{}</text>"#,
            esc(&p.name)
        );
        y += 20.0;
        for c in &p.channels {
            let nodes = place(c);
            // Room for arcs above and below the row only when the channel has edges.
            let arcs = if c.nodes.iter().any(|n| !n.edges.is_empty()) {
                2.0 * ROW_PAD
            } else {
                0.0
            };
            let row_h = NODE_H + arcs + 20.0;
            let cy = y + row_h / 2.0;
            let index: HashMap<&str, &Placed> =
                nodes.iter().map(|n| (n.name.as_str(), n)).collect();
            let label_fill = if c.deprecated { "#DCD0FF" } else { "#f4f4f4" };
            let _ = writeln!(
                body,
                r##"<rect x="{LEFT}" y="{y}" width="{}" height="{row_h}" fill="{label_fill}" rx="6"/><text x="{}" y="{}" font-size="{FONT}" fill="#555">{}</text>"##,
                nodes.last().map_or(LEFT + LABEL_W, |n| n.x + n.w) + 10.0 - LEFT,
                LEFT + 8.0,
                cy + 4.0,
                esc(&c.name)
            );
            for n in &c.nodes {
                for e in &n.edges {
                    let (Some(a), Some(b)) = (index.get(e.from.as_str()), index.get(e.to.as_str()))
                    else {
                        continue;
                    };
                    let (x1, x2) = (a.x + a.w / 2.0, b.x + b.w / 2.0);
                    let span = ((x2 - x1).abs() / 6.0).clamp(18.0, ROW_PAD);
                    let (dir, y0, color, dash, label) = match &e.kind {
                        EdgeKind::Replace => {
                            (-1.0, cy - NODE_H / 2.0, "#2b6cb0", "", "replace".to_owned())
                        }
                        EdgeKind::Skip => (
                            1.0,
                            cy + NODE_H / 2.0,
                            "#718096",
                            r#" stroke-dasharray="6 4""#,
                            "skip".to_owned(),
                        ),
                        EdgeKind::SkipRange(r) => (
                            1.0,
                            cy + NODE_H / 2.0,
                            "#38a169",
                            r#" stroke-dasharray="2 3""#,
                            format!("skipRange({r})"),
                        ),
                    };
                    let color = if e.flagged { "#FF0000" } else { color };
                    let ctrl = y0 + dir * span;
                    let _ = writeln!(
                        body,
                        r#"<path d="M{x1:.1},{y0:.1} C{x1:.1},{ctrl:.1} {x2:.1},{ctrl:.1} {x2:.1},{y0:.1}" fill="none" stroke="{color}" stroke-width="1.5"{dash} marker-end="url(#arrow)"><title>{} → {}: {}</title></path>"#,
                        esc(&e.from),
                        esc(&e.to),
                        esc(&label)
                    );
                }
            }
            for n in &nodes {
                let (fill, stroke, sw) = match n.class {
                    Some(NodeClass::Deprecated) => ("#E8960F", "#555", 1.0),
                    Some(NodeClass::Skipped) => ("#fff", "#FF0000", 3.0),
                    Some(NodeClass::DeprecatedSkipped) => ("#E8960F", "#FF0000", 3.0),
                    None => ("#fff", "#555", 1.0),
                };
                let dash = if n.ghost {
                    r#" stroke-dasharray="4 3""#
                } else {
                    ""
                };
                let _ = writeln!(
                    body,
                    r#"<g><title>{name}</title><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{NODE_H}" rx="5" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"{dash}/><text x="{:.1}" y="{:.1}" font-size="{FONT}" text-anchor="middle">{name}</text></g>"#,
                    n.x,
                    cy - NODE_H / 2.0,
                    n.w,
                    n.x + n.w / 2.0,
                    cy + 4.0,
                    name = esc(&n.name)
                );
                width = width.max(n.x + n.w + 30.0);
            }
            y += row_h + 12.0;
        }
        y += 10.0;
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{:.0}" viewBox="0 0 {width:.0} {:.0}" font-family="sans-serif">"##,
        y + 10.0,
        y + 10.0
    );
    out.push_str(
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#444\"/></marker></defs>\n",
    );
    out.push_str(&body);
    out.push_str("</svg>\n");
    out
}

/// Escapes text for XML content and attributes.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
