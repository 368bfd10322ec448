//! A standalone SVG picture a person can open in any browser, drawn without external tools, that
//! stays readable for packages of hundreds of bundles.
//!
//! Layout, per channel: bundles are layered by version — one column per `major.minor` stream,
//! streams left to right in increasing version, patch releases stacked top to bottom — and the
//! columns wrap into bands of at most [`COLUMNS_PER_BAND`], so a long history grows downwards as
//! a grid rather than into one endless strip. Bundles an edge names that are not in the catalog
//! stand in a first column of their own, with a dashed border. Edges are curves from the older
//! bundle to the one that upgrades it: `replace` solid blue, `skip` dashed amber, `skipRange`
//! dotted green, and red when OLM v0 would already have skipped their source; a legend says so.
//! Every colour is a presentation attribute, so the file needs no style sheet; nodes and edges
//! carry classes and `data-` attributes (bundle names) that an embedding page can use to
//! highlight a bundle's upgrade paths. Hovering a node or an edge shows its full text.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use crate::{ChannelDrawing, Drawing, EdgeKind, NodeClass};

const FONT: f64 = 12.0;
const CHAR_W: f64 = 7.0;
const NODE_H: f64 = 24.0;
const NODE_GAP: f64 = 10.0;
const COL_GAP: f64 = 56.0;
const LEFT: f64 = 20.0;
const HEADER: f64 = 22.0;
/// Longest label drawn in full; longer names are shortened with `…` (the title has them whole).
const MAX_LABEL: usize = 30;
/// Columns per band before the layout wraps.
pub const COLUMNS_PER_BAND: usize = 8;

struct Placed {
    x: f64,
    y: f64,
    w: f64,
    column: usize,
}

/// A node to place: name, decoration, and whether it is only named by an edge.
type Slot = (String, Option<NodeClass>, bool);

/// One column: its heading and node names, top to bottom.
struct Column {
    heading: String,
    names: Vec<Slot>,
}

/// The channel's nodes grouped into stream columns (ghosts first).
fn columns(c: &ChannelDrawing) -> Vec<Column> {
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
    let mut out = Vec::new();
    if !ghosts.is_empty() {
        out.push(Column {
            heading: "not in catalog".to_owned(),
            names: ghosts.into_iter().map(|g| (g, None, true)).collect(),
        });
    }
    let mut streams: BTreeMap<Option<(u64, u64)>, Vec<Slot>> = BTreeMap::new();
    // Nodes come in decreasing version: reversed, each column reads oldest to newest.
    for n in c.nodes.iter().rev() {
        streams
            .entry(n.stream)
            .or_default()
            .push((n.name.clone(), n.class, false));
    }
    out.extend(streams.into_iter().map(|(stream, names)| Column {
        heading: stream.map_or_else(|| "?".to_owned(), |(a, b)| format!("{a}.{b}")),
        names,
    }));
    out
}

fn label(name: &str) -> String {
    if name.chars().count() <= MAX_LABEL {
        name.to_owned()
    } else {
        let mut s: String = name.chars().take(MAX_LABEL - 1).collect();
        s.push('…');
        s
    }
}

fn node_width(name: &str) -> f64 {
    label(name).chars().count() as f64 * CHAR_W + 16.0
}

/// Writes `drawing` as an SVG document.
pub fn write(drawing: &Drawing) -> String {
    let mut body = String::new();
    let mut y = 20.0;
    let mut width: f64 = 560.0;
    legend(&mut body, y);
    y += 34.0;
    for p in &drawing.packages {
        let fill = if p.deprecated { "#989695" } else { "#333" };
        let _ = writeln!(
            body,
            r#"<text x="{LEFT}" y="{:.1}" font-size="16" font-weight="bold" fill="{fill}">{}{}</text>"#,
            y + 14.0,
            esc(&p.name),
            if p.deprecated { " (deprecated)" } else { "" }
        );
        y += 26.0;
        for c in &p.channels {
            let (h, w) = channel(&mut body, c, y);
            width = width.max(w);
            y += h + 16.0;
        }
        y += 8.0;
    }
    let mut out = String::with_capacity(body.len() + 512);
    let _ = writeln!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="upgrade-graph" width="{width:.0}" height="{h:.0}" viewBox="0 0 {width:.0} {h:.0}" font-family="sans-serif">"##,
        h = y + 10.0,
    );
    out.push_str(
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#444\"/></marker></defs>\n",
    );
    out.push_str(&body);
    out.push_str("</svg>\n");
    out
}

/// The three edge kinds and the node decorations, explained.
fn legend(body: &mut String, y: f64) {
    let items = [
        ("#2b6cb0", "", "replaces"),
        ("#b7791f", r#" stroke-dasharray="6 4""#, "skips"),
        ("#38a169", r#" stroke-dasharray="2 3""#, "skipRange"),
        ("#FF0000", "", "from a bundle OLM v0 skips"),
    ];
    let _ = write!(body, r#"<g class="legend">"#);
    let mut x = LEFT;
    for (color, dash, text) in items {
        let _ = write!(
            body,
            r##"<path d="M{x:.1},{y:.1} H{:.1}" stroke="{color}" stroke-width="2"{dash}/><text x="{:.1}" y="{:.1}" font-size="{FONT}" fill="#555">{text}</text>"##,
            x + 28.0,
            x + 34.0,
            y + 4.0
        );
        x += 34.0 + text.len() as f64 * CHAR_W + 18.0;
    }
    let _ = writeln!(
        body,
        r##"<rect x="{x:.1}" y="{:.1}" width="14" height="12" rx="3" fill="#E8960F" stroke="#555"/><text x="{:.1}" y="{:.1}" font-size="{FONT}" fill="#555">deprecated</text></g>"##,
        y - 6.0,
        x + 20.0,
        y + 4.0
    );
}

/// Draws one channel at `top`; returns its height and right edge.
fn channel(body: &mut String, c: &ChannelDrawing, top: f64) -> (f64, f64) {
    let cols = columns(c);
    // Column widths, and per band the tallest column.
    let col_w: Vec<f64> = cols
        .iter()
        .map(|col| {
            col.names
                .iter()
                .map(|(n, _, _)| node_width(n))
                .fold(40.0, f64::max)
        })
        .collect();
    let band_of = |i: usize| i / COLUMNS_PER_BAND;
    let bands = cols.len().div_ceil(COLUMNS_PER_BAND).max(1);
    let mut band_h = vec![0.0f64; bands];
    for (i, col) in cols.iter().enumerate() {
        let h = col.names.len() as f64 * (NODE_H + NODE_GAP);
        band_h[band_of(i)] = band_h[band_of(i)].max(h);
    }
    let title_h = 22.0;
    let mut band_top = Vec::with_capacity(bands);
    let mut yy = top + title_h;
    for h in &band_h {
        band_top.push(yy);
        yy += HEADER + h + 18.0;
    }
    let height = yy - top;
    let mut placed: HashMap<&str, Placed> = HashMap::new();
    let mut headings = String::new();
    let mut right: f64 = 0.0;
    let mut x = LEFT + 10.0;
    for (i, col) in cols.iter().enumerate() {
        if i % COLUMNS_PER_BAND == 0 {
            x = LEFT + 10.0;
        }
        let y0 = band_top[band_of(i)];
        let _ = write!(
            headings,
            r##"<text x="{:.1}" y="{:.1}" font-size="11" fill="#666" text-anchor="middle">{}</text>"##,
            x + col_w[i] / 2.0,
            y0 + 12.0,
            esc(&col.heading)
        );
        for (row, (name, _, _)) in col.names.iter().enumerate() {
            placed.insert(
                name.as_str(),
                Placed {
                    x,
                    y: y0 + HEADER + row as f64 * (NODE_H + NODE_GAP),
                    w: col_w[i],
                    column: i,
                },
            );
        }
        x += col_w[i] + COL_GAP;
        right = right.max(x);
    }
    let band_fill = if c.deprecated { "#DCD0FF" } else { "#f4f4f4" };
    let _ = writeln!(
        body,
        r##"<g class="channel" data-channel="{name}"><rect class="band" x="{LEFT}" y="{top:.1}" width="{:.1}" height="{height:.1}" fill="{band_fill}" rx="6"/><text x="{:.1}" y="{:.1}" font-size="13" font-weight="bold" fill="#444">{name}{}</text>"##,
        (right - LEFT).max(300.0),
        LEFT + 8.0,
        top + 16.0,
        if c.deprecated { " (deprecated)" } else { "" },
        name = esc(&c.name)
    );
    body.push_str(&headings);
    for n in &c.nodes {
        for e in &n.edges {
            let (Some(a), Some(b)) = (placed.get(e.from.as_str()), placed.get(e.to.as_str()))
            else {
                continue;
            };
            let (path, kind, label_) = edge_path(a, b, &e.kind);
            let (color, dash) = match &e.kind {
                EdgeKind::Replace => ("#2b6cb0", ""),
                EdgeKind::Skip => ("#b7791f", r#" stroke-dasharray="6 4""#),
                EdgeKind::SkipRange(_) => ("#38a169", r#" stroke-dasharray="2 3""#),
            };
            let color = if e.flagged { "#FF0000" } else { color };
            let _ = writeln!(
                body,
                r#"<path class="edge {kind}" data-from="{from}" data-to="{to}" d="{path}" fill="none" stroke="{color}" stroke-width="1.5"{dash} marker-end="url(#arrow)"><title>{from} → {to}: {}</title></path>"#,
                esc(&label_),
                from = esc(&e.from),
                to = esc(&e.to),
            );
        }
    }
    for col in &cols {
        for (name, class, ghost) in &col.names {
            let Some(p) = placed.get(name.as_str()) else {
                continue;
            };
            let (fill, stroke, sw) = match class {
                Some(NodeClass::Deprecated) => ("#E8960F", "#555", 1.0),
                Some(NodeClass::Skipped) => ("#fff", "#FF0000", 3.0),
                Some(NodeClass::DeprecatedSkipped) => ("#E8960F", "#FF0000", 3.0),
                None => ("#fff", "#555", 1.0),
            };
            let dash = if *ghost {
                r#" stroke-dasharray="4 3""#
            } else {
                ""
            };
            let class_name = class.map_or("", NodeClass::as_str);
            let _ = writeln!(
                body,
                r##"<g class="node {class_name}" data-name="{name}" tabindex="0"><title>{name}</title><rect x="{:.1}" y="{:.1}" width="{:.1}" height="{NODE_H}" rx="5" fill="{fill}" stroke="{stroke}" stroke-width="{sw}"{dash}/><text x="{:.1}" y="{:.1}" font-size="{FONT}" text-anchor="middle" fill="#222">{}</text></g>"##,
                p.x,
                p.y,
                p.w,
                p.x + p.w / 2.0,
                p.y + NODE_H / 2.0 + 4.0,
                esc(&label(name)),
                name = esc(name)
            );
        }
    }
    body.push_str("</g>\n");
    (height, right)
}

/// The curve of an edge from `a` (older) to `b`, its class and its hover text.
fn edge_path(a: &Placed, b: &Placed, kind: &EdgeKind) -> (String, &'static str, String) {
    let (kind_class, text) = match kind {
        EdgeKind::Replace => ("replace", "replace".to_owned()),
        EdgeKind::Skip => ("skip", "skip".to_owned()),
        EdgeKind::SkipRange(r) => ("skiprange", format!("skipRange({r})")),
    };
    let (ay, by) = (a.y + NODE_H / 2.0, b.y + NODE_H / 2.0);
    let path = if a.column == b.column {
        // Within a stream: an arc on the right side, wider for longer jumps.
        let x = a.x + a.w;
        let bulge = 14.0 + ((by - ay).abs() / (NODE_H + NODE_GAP)) * 6.0;
        let bulge = match kind {
            EdgeKind::Replace => bulge,
            _ => bulge + 8.0,
        };
        format!(
            "M{x:.1},{ay:.1} C{:.1},{ay:.1} {:.1},{by:.1} {x:.1},{by:.1}",
            x + bulge,
            x + bulge
        )
    } else if b.x > a.x {
        let (x1, x2) = (a.x + a.w, b.x);
        let mid = (x2 - x1) / 2.0;
        format!(
            "M{x1:.1},{ay:.1} C{:.1},{ay:.1} {:.1},{by:.1} {x2:.1},{by:.1}",
            x1 + mid,
            x2 - mid
        )
    } else {
        // Into an earlier column (a wrapped band, or versions out of order): leave and enter
        // from below.
        let (x1, x2) = (a.x + a.w / 2.0, b.x + b.w / 2.0);
        let (y1, y2) = (a.y + NODE_H, b.y + NODE_H);
        format!(
            "M{x1:.1},{y1:.1} C{x1:.1},{:.1} {x2:.1},{:.1} {x2:.1},{y2:.1}",
            y1 + 30.0,
            y2 + 30.0
        )
    };
    (path, kind_class, text)
}

/// Escapes text for XML content and attributes.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}
