//! The machine report: everything pinsight knows about a machine, measured
//! within a time budget ([`session`], [`budget`]), and the few sentences a
//! user should act on ([`suggest`]).
//!
//! [`ReportData`] is what the report shows; pinsight-render draws it (the
//! HTML page, the picture of the machine, the terminal summary).

pub mod budget;
pub mod session;
pub mod suggest;

pub use suggest::{device_sentences, suggestions, suggestions_with};

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
