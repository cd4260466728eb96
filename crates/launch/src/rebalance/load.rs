//! The per-CPU load before and after a rebalance, normalised by capacity,
//! as `pinsight load` measures it: one reading of the counters before and
//! one after, through [`pinsight_load::sample`], and the load between
//! them from [`pinsight_load::analyse`] (each CPU's busy time from
//! `/proc/schedstat`, else the `/proc/uptime` interval less `/proc/stat`'s
//! idle time, else its tick samples; an emulation's stealers counted as
//! steal). Beside it, the selected tasks' own share on each CPU: their run
//! time (`/proc/PID/task/TID/schedstat` field 1, ns; else `utime + stime`
//! ticks of `stat`), credited to the CPU the task is pinned to (else the
//! CPU it last ran on).
//!
//! Normalised load is share ÷ relative capacity (the fastest CPU = 1.0):
//! a CPU of capacity 0.5 that is 40% busy carries 0.8. The imbalance is
//! `load`'s ([`pinsight_load::report::imbalance_of`]): the largest
//! normalised load over the smallest among the CPUs busy at least 5% of
//! the interval (1.0 = even).

use super::select::Task;
use crate::procfs;
use pinsight_cpuset::CpuSet;
use pinsight_load::report::{imbalance_of, BusySource, CpuInfo, Machine};
use pinsight_load::{Excluded, Parts};
use pinsight_topology::FsRoot;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// One CPU's load over the interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuLoad {
    pub cpu: usize,
    /// Relative capacity (the fastest CPU considered = 1.0).
    pub capacity: f64,
    /// Share of the interval the CPU was busy (0..1), anything running
    /// but an emulation's stealers.
    pub busy: f64,
    /// `busy` ÷ `capacity`.
    pub normalised: f64,
    /// Share of the interval an emulation's stealers took (0 without).
    pub emulated: f64,
    /// Share of the interval the selected tasks ran there.
    pub tasks_busy: f64,
    /// `tasks_busy` ÷ `capacity`.
    pub tasks_normalised: f64,
}

/// The load of the CPUs over one interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadView {
    pub interval_s: f64,
    /// Where the busy times came from (as in `pinsight load`).
    pub busy_source: BusySource,
    pub cpus: Vec<CpuLoad>,
    /// Max ÷ min of `normalised` over the CPUs busy at least 5% of the
    /// interval; `None` when fewer than two are.
    pub imbalance: Option<f64>,
    /// The same over `tasks_normalised`: the selected work alone.
    pub tasks_imbalance: Option<f64>,
}

/// Why the load could not be measured.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("/proc/stat cannot be read or has no per-CPU lines")]
    NoProcStat,
    /// SIGINT, SIGTERM or SIGHUP came while measuring (the signal).
    #[error("stopped by signal {0} while measuring the load")]
    Interrupted(i32),
}

/// The per-CPU load over `interval` of the CPUs in `caps` (`(cpu,
/// relative capacity)`), and the share `tasks` took on each; the run time
/// of the `exclude` processes (an emulation's stealers) is not busy.
pub fn measure(
    fs: &FsRoot,
    caps: &[(usize, f64)],
    tasks: &[Task],
    exclude: &[Excluded],
    interval: Duration,
) -> Result<LoadView, LoadError> {
    let parts = Parts {
        threads: false,
        exclude: exclude.to_vec(),
    };
    let machine = Machine {
        cpus: caps
            .iter()
            .map(|&(cpu, capacity)| CpuInfo {
                cpu,
                kind: None,
                mark: None,
                core: None,
                capacity,
            })
            .collect(),
        capacity_source: String::new(),
    };
    let a = pinsight_load::sample::read(fs, &parts).ok_or(LoadError::NoProcStat)?;
    let ta = task_times(fs, tasks);
    // Ends early when SIGINT, SIGTERM or SIGHUP comes (the signal
    // lifecycle the command installed; a plain sleep without it).
    if let Some(sig) = pinsight_lifecycle::interrupt::wait(interval) {
        return Err(LoadError::Interrupted(sig));
    }
    let b = pinsight_load::sample::read(fs, &parts).ok_or(LoadError::NoProcStat)?;
    let tb = task_times(fs, tasks);
    let opts = pinsight_load::Options {
        top: 0,
        hz: procfs::clock_ticks(),
    };
    let r = pinsight_load::analyse(&machine, &a, &b, opts);
    let secs = r.interval_s.max(1e-3);
    let mut on_cpu: BTreeMap<usize, f64> = BTreeMap::new();
    for (key, (cpu, ns_b)) in &tb {
        if let Some((_, ns_a)) = ta.get(key) {
            *on_cpu.entry(*cpu).or_default() += ns_b.saturating_sub(*ns_a) as f64 / 1e9;
        }
    }
    let cpus: Vec<CpuLoad> = caps
        .iter()
        .map(|&(cpu, capacity)| {
            let c = r.cpus.iter().find(|c| c.cpu == cpu);
            let busy = c.map_or(0.0, |c| c.busy);
            let tasks_busy = (on_cpu.get(&cpu).copied().unwrap_or(0.0) / secs).min(1.0);
            let cap = capacity.max(1e-9);
            CpuLoad {
                cpu,
                capacity,
                busy,
                normalised: busy / cap,
                emulated: c.map_or(0.0, |c| c.emulated),
                tasks_busy,
                tasks_normalised: tasks_busy / cap,
            }
        })
        .collect();
    Ok(LoadView {
        interval_s: secs,
        busy_source: r.busy_source,
        imbalance: imbalance_of(cpus.iter().map(|c| (c.cpu, c.busy, c.normalised)))
            .map(|i| i.ratio),
        tasks_imbalance: imbalance_of(
            cpus.iter()
                .map(|c| (c.cpu, c.tasks_busy, c.tasks_normalised)),
        )
        .map(|i| i.ratio),
        cpus,
    })
}

/// Each thread's run time so far (ns) and the CPU it is credited to.
fn task_times(fs: &FsRoot, tasks: &[Task]) -> BTreeMap<(i32, i32), (usize, u64)> {
    let mut out = BTreeMap::new();
    for t in tasks {
        for &tid in &t.threads {
            let Some(st) = procfs::task_stat(fs, t.pid, tid) else {
                continue;
            };
            let pinned = procfs::task_allowed(fs, t.pid, tid)
                .filter(|s| s.len() == 1)
                .and_then(|s: CpuSet| s.first());
            let Some(cpu) = pinned.or(st.last_cpu) else {
                continue;
            };
            if let Some(ns) = procfs::task_run_ns(fs, t.pid, tid, Some(&st)) {
                out.insert((t.pid, tid), (cpu, ns));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_live_measure_covers_every_cpu_asked() {
        let fs = FsRoot::live();
        let v = measure(&fs, &[(0, 1.0)], &[], &[], Duration::from_millis(50)).unwrap();
        assert_eq!(v.cpus.len(), 1);
        assert!((0.0..=1.0).contains(&v.cpus[0].busy));
        assert_eq!(v.cpus[0].tasks_busy, 0.0);
    }
}
