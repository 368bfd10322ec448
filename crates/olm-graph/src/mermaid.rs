//! Mermaid flowcharts, byte for byte as `opm alpha render-graph` writes them.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::{Drawing, EdgeKind};
use olm_goenc::quote;

/// Writes `drawing` as opm writes its Mermaid text.
pub fn write(drawing: &Drawing) -> String {
    let mut out = String::from(concat!(
        "graph LR\n",
        "  classDef deprecated fill:#E8960F\n",
        "  classDef skipped stroke:#FF0000,stroke-width:4px\n",
        "  classDef deprecatedskipped fill:#E8960F,stroke:#FF0000,stroke-width:4px\n",
    ));
    let mut classes: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut styled_channels = Vec::new();
    for p in &drawing.packages {
        let _ = writeln!(out, "  %% package {}", quote(&p.name));
        let _ = writeln!(out, "  subgraph {}", quote(&p.name));
        for c in &p.channels {
            let channel_id = format!("{}-{}", p.name, c.name);
            if c.deprecated {
                styled_channels.push((c.name.as_str(), p.name.as_str(), channel_id.clone()));
            }
            let _ = writeln!(out, "    %% channel {}", quote(&c.name));
            let _ = writeln!(out, "    subgraph {channel_id}[{}]", quote(&c.name));
            for n in &c.nodes {
                let node = format!("{channel_id}-{}[{}]", n.name, quote(&n.name));
                let _ = writeln!(out, "      {node}");
                if let Some(class) = n.class {
                    classes
                        .entry(class.as_str())
                        .or_default()
                        .push(format!("{channel_id}-{}", n.name));
                }
                for e in &n.edges {
                    let label = match &e.kind {
                        EdgeKind::Skip => "skip".to_owned(),
                        EdgeKind::Replace => "replace".to_owned(),
                        EdgeKind::SkipRange(r) => format!("\"skipRange({r})\""),
                    };
                    let _ = writeln!(
                        out,
                        "      {channel_id}-{}[{}]-- {label} --> {node}",
                        e.from,
                        quote(&e.from)
                    );
                }
            }
            out.push_str("    end\n");
        }
        out.push_str("  end\n");
    }
    for p in drawing.packages.iter().filter(|p| p.deprecated) {
        let _ = writeln!(out, "style {} fill:#989695", p.name);
    }
    // opm styles channels in the order it walks them: by channel name across all packages.
    styled_channels.sort();
    for (_, _, id) in styled_channels {
        let _ = writeln!(out, "style {id} fill:#DCD0FF");
    }
    for (class, mut ids) in classes {
        ids.sort();
        let _ = writeln!(out, "class {} {class}", ids.join(","));
    }
    let flagged: Vec<String> = drawing
        .edges()
        .filter(|e| e.flagged)
        .map(|e| e.id.to_string())
        .collect();
    if !flagged.is_empty() {
        let _ = writeln!(
            out,
            "linkStyle {} stroke:#FF0000,stroke-width:3px,stroke-dasharray:5;",
            flagged.join(",")
        );
    }
    out
}
