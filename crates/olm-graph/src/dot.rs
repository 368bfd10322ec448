//! Graphviz DOT, for `dot -Tsvg` and the many tools that read it: one cluster per package and
//! channel, the same nodes, edges and decorations as the Mermaid picture.

use std::fmt::Write;

use crate::{Drawing, EdgeKind, NodeClass};

/// Writes `drawing` as a DOT digraph.
pub fn write(drawing: &Drawing) -> String {
    let mut out =
        String::from("digraph upgrades {\n  rankdir=LR;\n  node [shape=box, style=rounded];\n");
    for p in &drawing.packages {
        let _ = writeln!(
            out,
            "  subgraph {} {{",
            quote(&format!("cluster_{}", p.name))
        );
        let _ = writeln!(out, "    label={};", quote(&p.name));
        if p.deprecated {
            out.push_str("    style=filled; fillcolor=\"#989695\";\n");
        }
        for c in &p.channels {
            let channel_id = format!("{}-{}", p.name, c.name);
            let _ = writeln!(
                out,
                "    subgraph {} {{",
                quote(&format!("cluster_{channel_id}"))
            );
            let _ = writeln!(out, "      label={};", quote(&c.name));
            if c.deprecated {
                out.push_str("      style=filled; fillcolor=\"#DCD0FF\";\n");
            }
            for n in &c.nodes {
                let attrs = match n.class {
                    Some(NodeClass::Deprecated) => {
                        ", style=\"rounded,filled\", fillcolor=\"#E8960F\""
                    }
                    Some(NodeClass::Skipped) => ", color=\"#FF0000\", penwidth=4",
                    Some(NodeClass::DeprecatedSkipped) => {
                        ", style=\"rounded,filled\", fillcolor=\"#E8960F\", color=\"#FF0000\", penwidth=4"
                    }
                    None => "",
                };
                let _ = writeln!(
                    out,
                    "      {} [label={}{attrs}];",
                    quote(&format!("{channel_id}-{}", n.name)),
                    quote(&n.name)
                );
            }
            for n in &c.nodes {
                for e in &n.edges {
                    let label = match &e.kind {
                        EdgeKind::Skip => "skip".to_owned(),
                        EdgeKind::Replace => "replace".to_owned(),
                        EdgeKind::SkipRange(r) => format!("skipRange({r})"),
                    };
                    let style = match (&e.kind, e.flagged) {
                        (_, true) => ", color=\"#FF0000\", style=dashed",
                        (EdgeKind::Skip, false) => ", style=dashed",
                        (EdgeKind::SkipRange(_), false) => ", style=dotted",
                        (EdgeKind::Replace, false) => "",
                    };
                    let _ = writeln!(
                        out,
                        "      {} -> {} [label={}{style}];",
                        quote(&format!("{channel_id}-{}", e.from)),
                        quote(&format!("{channel_id}-{}", e.to)),
                        quote(&label)
                    );
                }
            }
            out.push_str("    }\n");
        }
        out.push_str("  }\n");
    }
    out.push_str("}\n");
    out
}

/// A DOT double-quoted string.
fn quote(s: &str) -> String {
    format!(
        "\"{}\"",
        s.replace('\\', "\\\\")
            .replace('"', "\\\"")
            .replace('\n', "\\n")
    )
}
