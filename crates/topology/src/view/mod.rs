//! The machine's views: the topology tree ([`tree`]) that `pinsight topo`
//! prints as text ([`topo_text`]) and `pinsight report` draws as SVG, the
//! capacity provenance of `topo --explain` ([`explain`]), and the lines and
//! JSON Lines of `topo --watch` ([`hfi`]).

pub mod explain;
pub mod hfi;
pub mod topo_text;
pub mod tree;
