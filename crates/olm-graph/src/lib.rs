//! Pictures of FBC upgrade graphs. [`Drawing::new`] decides what is drawn — which channels and
//! entries survive the filters, in which order, which edges exist and how each node and edge is
//! decorated — exactly as `opm alpha render-graph` decides it; [`mermaid`], [`dot`] and [`svg`]
//! only write that decision in their format.
//!
//! What is drawn: one group per package (sorted by name), one per channel (sorted by name),
//! entries in decreasing version; per entry its `skip` edges, its `skipRange` edges (one from
//! every entry of the channel whose version is in the range) and its `replace` edge. Deprecated
//! bundles, channels and packages are marked. With [`GraphOptions::v0_semantics`], bundles an
//! older OLM would skip over are marked and the edges leading out of them flagged.
//!
//! Where opm is not deterministic we are: entries of equal version keep their channel order
//! (opm's sort is unstable), and every deprecated package is marked (opm marks only the last one
//! it meets).
//!
//! Not for: loading or validating catalogs (`olm-catalog` does, and hands over a
//! [`Catalog`](olm_catalog::Catalog)), resolving which bundle a cluster gets (`olm-resolve`), or
//! running Graphviz: the SVG is laid out here, without external tools.

pub mod dot;
mod drawing;
pub mod mermaid;
pub mod svg;

pub use drawing::{
    ChannelDrawing, Drawing, Edge, EdgeKind, GraphError, GraphOptions, Node, NodeClass,
    PackageDrawing,
};
