//! The machine report: everything pinsight knows about a machine, measured
//! within a time budget ([`session`], [`budget`]), and the few sentences a
//! user should act on ([`suggest`]).
//!
//! [`ReportData`] is what the report shows; [`view`] draws it (the HTML
//! page, the picture of the machine, the terminal summary), words the
//! skips and writes the files.
#![forbid(unsafe_code)]

pub mod budget;
pub mod run;
pub mod session;
pub mod suggest;
pub mod view;

pub use suggest::{device_sentences, suggestions, suggestions_with};

use pinsight_latency_model::{DomainTree, LatencyMatrix};
use pinsight_model::Topology;
use pinsight_speed::SpeedReport;
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
    /// What shows this machine is virtual and what that means for latency
    /// and speed; only when something was measured here on a VM.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub virtual_machine: Option<String>,
    /// Each latency matrix run's disturbance on the measured CPUs (other
    /// work, hypervisor steal; `/proc/stat`), in run order: `null` where it
    /// could not be read; empty when latency was not measured here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub latency_disturbance: Vec<Option<pinsight_measure::Disturbance>>,
    /// The sentences on how trustworthy the measurements are: the virtual
    /// machine, speed's method on an emulated machine slowed by time share,
    /// speed's and latency's disturbance ([`ReportData::with_conditions`]).
    pub conditions: Vec<String>,
}

impl ReportData {
    /// Adds what the measurements were taken under: the virtual machine
    /// (`vm`, its note) and each latency matrix run's disturbance; words
    /// them, with speed's own disturbance, in [`ReportData::conditions`].
    pub fn with_conditions(
        mut self,
        vm: Option<String>,
        latency_disturbance: Vec<Option<pinsight_measure::Disturbance>>,
    ) -> ReportData {
        self.virtual_machine = vm;
        self.latency_disturbance = latency_disturbance;
        let mut c: Vec<String> = self.virtual_machine.iter().cloned().collect();
        if self.speed.as_ref().is_some_and(|s| s.time_share) {
            c.push(format!("speed: {}", pinsight_speed::TIME_SHARE_NOTE));
        }
        if let Some(d) = self.speed.as_ref().and_then(|s| s.disturbance.as_ref()) {
            c.push(match d.note() {
                Some(n) => format!("speed: {n}: its figures may be low"),
                None => format!(
                    "speed: no other work over {:.0}% of a measured CPU",
                    d.threshold * 100.0
                ),
            });
        }
        let runs: Vec<&pinsight_measure::Disturbance> =
            self.latency_disturbance.iter().flatten().collect();
        if !runs.is_empty() {
            let summary = pinsight_measure::disturbance::Summary::of(runs.iter().copied());
            c.push(match summary.note() {
                Some(n) => format!("latency matrices: {}", n.replace(" runs ", " matrices ")),
                None => format!(
                    "latency: no matrix disturbed by other work (of {})",
                    summary.measured
                ),
            });
        }
        self.conditions = c;
        self
    }
}
