//! Per-CPU load against capacity and interrupt placement: the library of
//! `pinsight load` and `pinsight irq`.
//!
//! - [`sample`]: one reading of `/proc/stat`, `/proc/interrupts`,
//!   `/proc/softirqs` and every thread's `stat`, through `FsRoot`;
//! - [`report`]: the load between two readings (pure arithmetic);
//! - [`interrupts`]: the parsers of `/proc/interrupts` and `/proc/softirqs`;
//! - [`irq`]: which IRQs land where, and moving them with a saved state.
//!
//! It measures and returns data; `pinsight-render` draws it.

pub mod interrupts;
pub mod irq;
pub mod report;
pub mod sample;

use pinsight_model::Topology;
use pinsight_sys::FsRoot;
pub use report::{analyse, LoadReport, Machine, Options};
pub use sample::{Excluded, Parts, Sample};
use std::collections::BTreeMap;

/// The machine as the load view needs it: every online CPU with its
/// kind, core and capacity relative to the most capable CPU. Capacities
/// are those `plan balance` weighs by (`pinsight_plan::balance::capacities`:
/// `cpu_capacity`, else each kind's maximum frequency, else kind rank),
/// so the normalised load and a rebalance agree.
pub fn machine(topo: &Topology) -> Machine {
    let online = topo.online();
    let (caps, source) =
        pinsight_plan::balance::capacities(topo, &online, None).unwrap_or_else(|_| {
            (
                online.iter().map(|c| (c, 1.0)).collect(),
                pinsight_plan::balance::CapacitySource::Uniform,
            )
        });
    let max = caps.iter().map(|c| c.1).fold(0.0f64, f64::max);
    let cpus = caps
        .iter()
        .map(|(cpu, cap)| {
            let c = topo.cpu(*cpu);
            let kind = c.and_then(|c| c.kind).and_then(|k| topo.kinds.get(k));
            report::CpuInfo {
                cpu: *cpu,
                kind: kind.map(|k| k.name.clone()),
                mark: kind.map(|k| k.mark.clone()),
                core: c.and_then(|c| c.core),
                capacity: if max > 0.0 { cap / max } else { 1.0 },
            }
        })
        .collect();
    Machine {
        cpus,
        capacity_source: source.describe().to_string(),
    }
}

/// Each online CPU's relative capacity (CPU → capacity), for [`irq::plan`].
pub fn capacities(m: &Machine) -> BTreeMap<usize, f64> {
    m.cpus.iter().map(|c| (c.cpu, c.capacity)).collect()
}

/// Fills in the affinity of the numbered IRQs a report names, read under
/// `fs` now.
pub fn fill_affinity(fs: &FsRoot, r: &mut LoadReport) {
    for h in &mut r.hot_cpus {
        for i in &mut h.irqs {
            if i.irq.parse::<u32>().is_err() {
                continue;
            }
            let read = |f: &str| {
                fs.read_opt(format!("/proc/irq/{}/{f}", i.irq))
                    .map(|s| s.trim().to_string())
            };
            i.affinity = read("smp_affinity_list");
            i.effective = read("effective_affinity_list");
        }
    }
}

/// One interval on `fs` between two readings already taken, with the
/// affinities of the hot IRQs filled in from `now` (the root of the later
/// reading).
pub fn load_between(
    m: &Machine,
    before: &Sample,
    after: &Sample,
    now: &FsRoot,
    opts: Options,
) -> LoadReport {
    let mut r = analyse(m, before, after, opts);
    fill_affinity(now, &mut r);
    r
}

/// What keeps a load view from being made.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// `/proc/stat` is missing or holds no `cpuN` line.
    #[error("{root}: no readable proc/stat with cpuN lines")]
    NoStat { root: String },
}

fn read_or_fail(fs: &FsRoot, parts: &Parts) -> Result<Sample, LoadError> {
    read_or_fail_with(fs, parts, &mut sample::ThreadReader::default())
}

fn read_or_fail_with(
    fs: &FsRoot,
    parts: &Parts,
    threads: &mut sample::ThreadReader,
) -> Result<Sample, LoadError> {
    sample::read_with(fs, parts, threads).ok_or_else(|| LoadError::NoStat {
        root: match fs.archive() {
            Some(a) => a.display().to_string(),
            None => fs.root().display().to_string(),
        },
    })
}

/// The load between two recorded readings: `before` and `after` are two
/// roots holding `proc/stat` (and, where recorded, `proc/interrupts`,
/// `proc/softirqs`, `proc/schedstat`, `proc/uptime`, `proc/irq/N/*` and
/// `proc/PID/task/TID/stat`) taken an interval apart. The interval is
/// read from `proc/uptime`, else from the CPUs' own tick counts.
pub fn recorded(
    m: &Machine,
    before: &FsRoot,
    after: &FsRoot,
    opts: Options,
    parts: &Parts,
) -> Result<LoadReport, LoadError> {
    let a = read_or_fail(before, parts)?;
    let b = read_or_fail(after, parts)?;
    Ok(load_between(m, &a, &b, after, opts))
}

/// The live view: each [`Watch::next`] waits an interval and returns the
/// load over it.
pub struct Watch {
    fs: FsRoot,
    machine: Machine,
    opts: Options,
    parts: Parts,
    before: Sample,
    threads: sample::ThreadReader,
}

impl Watch {
    /// Takes the first reading.
    pub fn start(
        fs: FsRoot,
        machine: Machine,
        opts: Options,
        parts: Parts,
    ) -> Result<Watch, LoadError> {
        let mut threads = sample::ThreadReader::default();
        let before = read_or_fail_with(&fs, &parts, &mut threads)?;
        Ok(Watch {
            fs,
            machine,
            opts,
            parts,
            before,
            threads,
        })
    }

    /// Waits `interval` (reporting progress in tenths), reads again and
    /// returns the load since the previous reading.
    pub fn next(
        &mut self,
        interval: std::time::Duration,
        progress: &mut dyn pinsight_sys::progress::Progress,
    ) -> Result<LoadReport, LoadError> {
        progress.begin("measuring load", 10, 0);
        for i in 1..=10u64 {
            std::thread::sleep(interval / 10);
            progress.step("", i);
        }
        progress.end();
        let after = read_or_fail_with(&self.fs, &self.parts, &mut self.threads)?;
        let r = load_between(&self.machine, &self.before, &after, &self.fs, self.opts);
        self.before = after;
        Ok(r)
    }
}
