//! Per-CPU load against capacity and interrupt placement: the library of
//! `pinsight load` and `pinsight irq`.
//!
//! - [`sample`]: one reading of `/proc/stat`, `/proc/interrupts`,
//!   `/proc/softirqs` and every thread's `stat`, through `FsRoot`;
//! - [`report`]: the load between two readings (pure arithmetic);
//! - [`progress`]: each task's progress by capacity and the imbalance
//!   between the tasks that want a whole CPU (pure);
//! - [`interrupts`]: the parsers of `/proc/interrupts` and `/proc/softirqs`;
//! - [`irq`]: which IRQs land where, and moving them with a saved state;
//! - [`journal`]: what a daemon (`irq --watch`, `balance --watch`) prints.
//!
//! It measures and returns data; [`view`] lays it out for the terminal
//! (and OpenMetrics), [`shown`] prints `load`'s readings.
#![forbid(unsafe_code)]

pub mod interrupts;
pub mod irq;
pub mod irq_watch;
pub mod journal;
pub mod progress;
pub mod report;
pub mod sample;
pub mod shown;
pub mod view;

use pinsight_model::Topology;
use pinsight_sys::FsRoot;
pub use report::{analyse, LoadReport, Machine, Options};
pub use sample::{Excluded, Parts, Sample};
use std::collections::BTreeMap;

/// The machine as the load view needs it: every online CPU with its
/// kind, core, capacity relative to the most capable CPU, and its speed
/// while a task runs there. Capacities are those `plan balance` weighs by
/// (`pinsight_plan::balance::capacities`: `cpu_capacity`, else each
/// kind's maximum frequency, else kind rank), so the normalised load and
/// a rebalance agree. The speed is the capacity lowered by a frequency
/// cap ([`freq_cap`], read under `fs`) where the capacity is the
/// hardware's at full clock; declared speeds (an emulation's, which
/// already are the capped speed) and measured weights are taken as they
/// are.
pub fn machine(fs: &FsRoot, topo: &Topology) -> Machine {
    use pinsight_plan::balance::CapacitySource;
    let online = topo.online();
    let (caps, source) =
        pinsight_plan::balance::capacities(topo, &online, None).unwrap_or_else(|_| {
            (
                online.iter().map(|c| (c, 1.0)).collect(),
                CapacitySource::Uniform,
            )
        });
    let capped = !matches!(
        source,
        CapacitySource::DeclaredSpeed | CapacitySource::Weights
    );
    let max = caps.iter().map(|c| c.1).fold(0.0f64, f64::max);
    let cpus = caps
        .iter()
        .map(|(cpu, cap)| {
            let c = topo.cpu(*cpu);
            let kind = c.and_then(|c| c.kind).and_then(|k| topo.kinds.get(k));
            let capacity = if max > 0.0 { cap / max } else { 1.0 };
            let cap_factor = if capped {
                freq_cap(fs, *cpu).unwrap_or(1.0)
            } else {
                1.0
            };
            report::CpuInfo {
                cpu: *cpu,
                kind: kind.map(|k| k.name.clone()),
                mark: kind.map(|k| k.mark.clone()),
                core: c.and_then(|c| c.core),
                capacity,
                speed: capacity * cap_factor,
            }
        })
        .collect();
    Machine {
        cpus,
        capacity_source: source.describe().to_string(),
    }
}

/// CPU `cpu`'s frequency cap: `scaling_max_freq` over `cpuinfo_max_freq`
/// (cpufreq, read under `fs`) when both are readable and the cap is
/// below the maximum; `None` otherwise (no cpufreq, or no cap).
pub fn freq_cap(fs: &FsRoot, cpu: usize) -> Option<f64> {
    let read = |f: &str| -> Option<f64> {
        fs.read_opt(format!("/sys/devices/system/cpu/cpu{cpu}/cpufreq/{f}"))?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| *v > 0.0 && v.is_finite())
    };
    let ratio = read("scaling_max_freq")? / read("cpuinfo_max_freq")?;
    (ratio < 1.0).then_some(ratio)
}

/// Each CPU's speed while a task runs there, for [`progress::tasks`]:
/// the machine's ([`report::CpuInfo::speed`]), except on a CPU an
/// emulation's stealer slows by taking time (`stealer_cpus`): that CPU
/// runs at the reference CPU's full speed while the task runs, its
/// slowdown already in the task's smaller run time, so 1.0.
pub fn speeds(m: &Machine, stealer_cpus: impl IntoIterator<Item = usize>) -> progress::Speeds {
    let mut s: progress::Speeds = m.cpus.iter().map(|c| (c.cpu, c.speed)).collect();
    for c in stealer_cpus {
        s.insert(c, 1.0);
    }
    s
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
    let trace = progress::Trace::of_two(opts.hz, &before.threads, &after.threads);
    load_traced(m, before, after, &trace, now, opts)
}

/// [`load_between`], the tasks' progress from `trace` (looks within the
/// interval).
pub fn load_traced(
    m: &Machine,
    before: &Sample,
    after: &Sample,
    trace: &progress::Trace,
    now: &FsRoot,
    opts: Options,
) -> LoadReport {
    let mut r = report::analyse_traced(m, before, after, trace, opts);
    fill_affinity(now, &mut r);
    r
}

/// What keeps a load view from being made.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// `/proc/stat` is missing or holds no `cpuN` line.
    #[error("{root}: no readable proc/stat with cpuN lines")]
    NoStat { root: String },
    /// SIGINT, SIGTERM or SIGHUP came while measuring (the signal).
    #[error("stopped by signal {0} while measuring the load")]
    Interrupted(i32),
    /// A process to exclude ([`Parts::exclude`]) on a CPU the machine
    /// does not have: its run time could not count against any CPU's
    /// capacity.
    #[error("{cpu}:{pid}: CPU {cpu} is not on this machine (its CPUs: {cpus})")]
    ExcludedCpu { cpu: usize, pid: i32, cpus: String },
}

/// Refuses an excluded process on a CPU that `m` does not have
/// ([`LoadError::ExcludedCpu`]).
fn check_excluded(m: &Machine, parts: &Parts) -> Result<(), LoadError> {
    let cpus: pinsight_cpuset::CpuSet = m.cpus.iter().map(|c| c.cpu).collect();
    match parts.exclude.iter().find(|e| !cpus.contains(e.cpu)) {
        Some(e) => Err(LoadError::ExcludedCpu {
            cpu: e.cpu,
            pid: e.pid,
            cpus: cpus.to_list_string(),
        }),
        None => Ok(()),
    }
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
/// read from `proc/uptime`, else from the CPUs' own tick counts. Every
/// excluded process must be on a CPU of `m` ([`LoadError::ExcludedCpu`]).
pub fn recorded(
    m: &Machine,
    before: &FsRoot,
    after: &FsRoot,
    opts: Options,
    parts: &Parts,
) -> Result<LoadReport, LoadError> {
    check_excluded(m, parts)?;
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
    /// Takes the first reading (every excluded process on a CPU of
    /// `machine`: [`LoadError::ExcludedCpu`]).
    pub fn start(
        fs: FsRoot,
        machine: Machine,
        opts: Options,
        parts: Parts,
    ) -> Result<Watch, LoadError> {
        check_excluded(&machine, &parts)?;
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

    /// Waits `interval` (reporting progress in tenths), looking at the
    /// threads at each tenth (their progress and runnable state), reads
    /// again and returns the load since the previous reading. SIGINT,
    /// SIGTERM or SIGHUP (the signal lifecycle the command installed) end
    /// the wait: [`LoadError::Interrupted`].
    pub fn next(
        &mut self,
        interval: std::time::Duration,
        progress: &mut dyn pinsight_sys::progress::Progress,
    ) -> Result<LoadReport, LoadError> {
        let mut trace = progress::Trace::new(self.opts.hz);
        trace.look(&self.before.threads);
        progress.begin("measuring load", 10, 0);
        for i in 1..=10u64 {
            if let Some(sig) = pinsight_lifecycle::interrupt::wait(interval / 10) {
                progress.end();
                return Err(LoadError::Interrupted(sig));
            }
            progress.step("", i);
            if i < 10 && self.parts.threads {
                trace.look(&self.threads.read_fresh(&self.fs));
            }
        }
        progress.end();
        let after = read_or_fail_with(&self.fs, &self.parts, &mut self.threads)?;
        trace.look(&after.threads);
        let r = load_traced(
            &self.machine,
            &self.before,
            &after,
            &trace,
            &self.fs,
            self.opts,
        );
        self.before = after;
        Ok(r)
    }
}
