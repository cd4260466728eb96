//! The drawings of `pinsight report`: the self-contained HTML page
//! ([`html()`]), the lstopo-like picture of the machine ([`topology_svg`])
//! and the few lines printed on the terminal ([`terminal_summary`]), all
//! from the report's data ([`crate::ReportData`]).

pub mod html;
pub mod outcome;
pub mod skip;
pub mod terminal;
pub mod topo_svg;

pub use html::html;
pub use terminal::terminal_summary;
pub use topo_svg::topology_svg;

/// Escapes text for HTML and SVG (the one escaper, `pinsight-term`'s).
use pinsight_term::escape as esc;

/// A colour per kind rank, slowest first: cool to warm.
pub fn kind_colour(rank: usize, kinds: usize) -> &'static str {
    const PALETTE: [&str; 5] = ["#4e9ac7", "#59b37a", "#e3a73b", "#e0663a", "#b8478f"];
    if kinds <= 1 {
        return "#7f8c9a";
    }
    let idx = if kinds >= PALETTE.len() {
        rank.min(PALETTE.len() - 1)
    } else {
        rank * (PALETTE.len() - 1) / (kinds - 1)
    };
    PALETTE[idx]
}
