//! The machine report: everything pinsight knows about a machine on one
//! self-contained HTML page, and the few sentences a user should act on.
//!
//! Pure: [`ReportData`] in, strings out. Measuring happens in the command.

pub mod budget;
pub mod html;
pub mod session;
pub mod suggest;
pub mod terminal;
pub mod topo_svg;

pub use html::html;
pub use suggest::{device_sentences, suggestions, suggestions_with};
pub use terminal::terminal_summary;
pub use topo_svg::topology_svg;

use pinsight_latency::{DomainTree, LatencyMatrix};
use pinsight_speed::SpeedReport;
use pinsight_topology::Topology;
use serde::Serialize;

/// Everything the report shows (also its JSON form).
#[derive(Clone, Debug, Serialize)]
pub struct ReportData {
    pub pinsight_version: String,
    /// Seconds since the Unix epoch when the report was made.
    pub generated_unix: u64,
    pub hostname: Option<String>,
    /// The time budget asked for, and what was used.
    pub budget_s: f64,
    pub elapsed_s: f64,
    pub topology: Topology,
    pub latency: Option<LatencyMatrix>,
    pub domains: Option<DomainTree>,
    pub speed: Option<SpeedReport>,
    /// What was not measured and why (budget, too few CPUs, ...).
    pub skipped: Vec<String>,
    pub suggestions: Vec<String>,
}

/// Escapes text for HTML and SVG (the one escaper of `pinsight-render`).
pub use pinsight_render::escape as esc;

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
