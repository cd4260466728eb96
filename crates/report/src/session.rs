//! One `pinsight report` session: within the budget split of
//! [`crate::budget::split`], measure speed and latency on this machine,
//! then assemble the report's data (domains, suggestions).
//!
//! Nothing here prints, draws a progress bar or names a command-line
//! flag: progress goes to a [`Progress`] (the command line draws bars),
//! and what could not be measured comes back typed ([`Missing`]) for the
//! command line to word.

use crate::budget::{latency_rounds, BudgetPlan, Skip};
use crate::{suggestions_with, ReportData};
use pinsight_latency::measure::{measure_with_progress, MeasureConfig, MeasureError};
use pinsight_latency_model::{domains, LatencyMatrix};
use pinsight_model::Topology;
use pinsight_speed::{Kernel, SpeedError, SpeedReport, SpeedSession};
use pinsight_sys::progress::Progress;
use std::time::{Duration, Instant};

/// Below this much time left, latency is not measured at all (a zero time
/// per pair would measure nothing and say so badly).
pub const MIN_LATENCY_TIME: Duration = Duration::from_millis(10);

/// What is missing from the report beside the plan's skips, and why.
#[derive(Debug)]
pub enum Missing {
    /// A budget reason decided while measuring (speed overran, or latency
    /// stopped before every pair was measured).
    Skip(Skip),
    /// The latency measurement failed.
    LatencyFailed(MeasureError),
}

/// What one session measured.
#[derive(Debug, Default)]
pub struct Measured {
    pub speed: Option<SpeedReport>,
    pub latency: Option<LatencyMatrix>,
    /// Each latency matrix run's disturbance, in run order.
    pub latency_disturbance: Vec<Option<pinsight_measure::Disturbance>>,
    /// This machine is virtual (its note), when anything was measured.
    pub virtual_machine: Option<String>,
    /// In the order they happened.
    pub missing: Vec<Missing>,
}

/// Measures what `plan` allots, speed first, never past `budget` counted
/// from `started`. `mem_bytes` is speed's pointer-chase buffer.
pub fn measure(
    topo: &Topology,
    plan: &BudgetPlan,
    budget: Duration,
    started: Instant,
    mem_bytes: usize,
    progress: &mut dyn Progress,
) -> Result<Measured, SpeedError> {
    let mut out = Measured::default();
    // Read once: said in the report and used by the latency measurement.
    let vm = (plan.speed_per_cpu.is_some() || plan.latency.is_some())
        .then(|| pinsight_topology::vm::detect(&pinsight_sys::FsRoot::live()))
        .flatten();
    out.virtual_machine = vm.as_ref().map(|vm| vm.note());
    if let Some(per_cpu) = plan.speed_per_cpu {
        out.speed = Some(speed_session(topo, per_cpu, mem_bytes).run(topo, progress)?);
    }
    if let Some(planned) = plan.latency {
        // Speed may have overrun a little: never past the budget's end.
        let left = budget
            .saturating_sub(started.elapsed())
            .saturating_sub(plan.reserve)
            .min(planned);
        if left < MIN_LATENCY_TIME {
            out.missing.push(Missing::Skip(Skip::LatencyNoTimeLeft {
                spent: started.elapsed(),
                budget,
                left,
            }));
        } else {
            match measure_latency(topo, left, vm.is_some(), progress) {
                Ok((m, disturbance, note)) => {
                    out.latency = m;
                    out.latency_disturbance = disturbance;
                    out.missing.extend(note.map(Missing::Skip));
                }
                Err(e) => out.missing.push(Missing::LatencyFailed(e)),
            }
        }
    }
    Ok(out)
}

/// The report's speed measurement: `pinsight speed` with its defaults
/// (every usable CPU, every kernel) at `per_cpu` a CPU, through the one
/// [`SpeedSession`]: the method (on an emulated machine slowed by time
/// share, descheduled time counted, not dropped as disturbed) is the
/// session's, so `report`'s speedup factor is `speed`'s.
pub fn speed_session(topo: &Topology, per_cpu: Duration, mem_bytes: usize) -> SpeedSession {
    SpeedSession::new(topo.usable(), Kernel::ALL.to_vec(), per_cpu, mem_bytes)
}

/// Matrices measured within the latency budget, spaced over it.
const LATENCY_RUNS: usize = 3;

/// Measures latency within `budget`. A partial matrix (the budget ran out
/// mid-way) is kept, with a skip saying how much is missing; a matrix with
/// no round measured is no matrix. With it, each matrix run's disturbance.
#[allow(clippy::type_complexity)] // the three parts, named in the doc
fn measure_latency(
    topo: &Topology,
    budget: Duration,
    virtual_machine: bool,
    progress: &mut dyn Progress,
) -> Result<
    (
        Option<LatencyMatrix>,
        Vec<Option<pinsight_measure::Disturbance>>,
        Option<Skip>,
    ),
    MeasureError,
> {
    let cpus: Vec<usize> = topo.usable().iter().collect();
    let n = cpus.len();
    let rounds = latency_rounds(n);
    // At least three matrices, started a third of the budget apart: one
    // matrix sees one moment, and on a shared or virtual machine latency
    // drifts between moments (the run-to-run spread is then shown and the
    // pair flagged noisy). Each round measures its pairs side by side: a
    // round may take a third of budget/rounds.
    let per_pair = (budget / (LATENCY_RUNS * rounds.max(1)) as u32).min(Duration::from_millis(200));
    let cfg = MeasureConfig {
        cpus,
        max_time_per_pair: per_pair,
        budget: Some(budget),
        repeats: LATENCY_RUNS,
        spacing: Some(budget / LATENCY_RUNS as u32),
        virtual_machine,
        ..MeasureConfig::default()
    };
    let m = measure_with_progress(&cfg, progress)?;
    if m.skipped.is_empty() {
        return Ok((Some(m.matrix), m.disturbance, None));
    }
    let note = Skip::LatencyPartial {
        rounds_run: m.rounds_run,
        rounds_planned: m.rounds_planned,
        unmeasured: m.skipped.len(),
    };
    if m.rounds_run == 0 {
        return Ok((None, m.disturbance, Some(note)));
    }
    Ok((Some(m.matrix), m.disturbance, Some(note)))
}

/// The report's data from what was measured (or given): latency domains
/// and suggestions are derived here. `skipped` is already worded by the
/// caller; `latency_file` is the matrix file suggestions point to.
#[allow(clippy::too_many_arguments)]
pub fn assemble(
    topology: Topology,
    speed: Option<SpeedReport>,
    latency: Option<LatencyMatrix>,
    skipped: Vec<String>,
    latency_file: &str,
    hostname: Option<String>,
    budget: Duration,
    started: Instant,
) -> ReportData {
    let tree = latency.as_ref().map(domains);
    let suggestions = suggestions_with(
        &topology,
        latency.as_ref(),
        tree.as_ref(),
        speed.as_ref(),
        latency_file,
    );
    ReportData {
        pinsight_version: env!("CARGO_PKG_VERSION").to_string(),
        generated_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0),
        hostname,
        budget_s: budget.as_secs_f64(),
        elapsed_s: started.elapsed().as_secs_f64(),
        topology,
        latency,
        domains: tree,
        speed,
        skipped,
        suggestions,
        virtual_machine: None,
        latency_disturbance: Vec::new(),
        conditions: Vec::new(),
    }
}
