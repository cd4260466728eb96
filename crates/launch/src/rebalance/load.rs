//! The per-CPU load before and after a rebalance, normalised by capacity.
//!
//! One function, [`measure`], reads the counters twice, `interval` apart:
//! - each CPU's busy share from `/proc/stat` (user + nice + system + irq +
//!   softirq ticks over the elapsed ticks; proc(5), through
//!   [`pinsight_sys::cpustat`]): everything that ran there;
//! - the selected tasks' own share on each CPU: their run time
//!   (`/proc/PID/task/TID/schedstat` field 1, ns; else `utime + stime`
//!   ticks of `stat`), credited to the CPU the task is pinned to (else the
//!   CPU it last ran on).
//!
//! Normalised load is share ÷ relative capacity (the fastest CPU = 1.0):
//! a CPU of capacity 0.5 that is 40% busy carries 0.8. The imbalance is
//! the largest normalised load over the smallest, among CPUs that carry
//! any (1.0 = even). On a machine whose CPUs are the same silicon and
//! whose kinds are declared, busy time is work done, so this is the load
//! each CPU carries against its declared capacity.

use super::select::Task;
use crate::procfs;
use pinsight_cpuset::CpuSet;
use pinsight_topology::FsRoot;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Below this normalised load a CPU counts as idle for the imbalance.
pub const IDLE_BELOW: f64 = 0.02;

/// One CPU's load over the interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuLoad {
    pub cpu: usize,
    /// Relative capacity (the fastest CPU considered = 1.0).
    pub capacity: f64,
    /// Share of the interval the CPU was busy (0..1), anything running.
    pub busy: f64,
    /// `busy` ÷ `capacity`.
    pub normalised: f64,
    /// Share of the interval the selected tasks ran there.
    pub tasks_busy: f64,
    /// `tasks_busy` ÷ `capacity`.
    pub tasks_normalised: f64,
}

/// The load of the CPUs over one interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoadView {
    pub interval_s: f64,
    pub cpus: Vec<CpuLoad>,
    /// Max ÷ min of `normalised` over CPUs above [`IDLE_BELOW`]; `None`
    /// when fewer than two CPUs carry load.
    pub imbalance: Option<f64>,
    /// The same over `tasks_normalised`: the selected work alone.
    pub tasks_imbalance: Option<f64>,
}

/// Why the load could not be measured.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("/proc/stat cannot be read or has no per-CPU lines")]
    NoProcStat,
}

/// The per-CPU load over `interval` of the CPUs in `caps` (`(cpu,
/// relative capacity)`), and the share `tasks` took on each.
pub fn measure(
    fs: &FsRoot,
    caps: &[(usize, f64)],
    tasks: &[Task],
    interval: Duration,
) -> Result<LoadView, LoadError> {
    let hz = procfs::clock_ticks().max(1) as f64;
    let a = pinsight_sys::cpustat::read_proc_stat(fs).ok_or(LoadError::NoProcStat)?;
    let ta = task_times(fs, tasks);
    let t0 = Instant::now();
    std::thread::sleep(interval);
    let b = pinsight_sys::cpustat::read_proc_stat(fs).ok_or(LoadError::NoProcStat)?;
    let tb = task_times(fs, tasks);
    let secs = t0.elapsed().as_secs_f64().max(1e-3);
    let mut on_cpu: BTreeMap<usize, f64> = BTreeMap::new();
    for (key, (cpu, ns_b)) in &tb {
        if let Some((_, ns_a)) = ta.get(key) {
            *on_cpu.entry(*cpu).or_default() += ns_b.saturating_sub(*ns_a) as f64 / 1e9;
        }
    }
    let cpus: Vec<CpuLoad> = caps
        .iter()
        .map(|&(cpu, capacity)| {
            let ticks = match (a.cpus.get(&cpu), b.cpus.get(&cpu)) {
                (Some(x), Some(y)) => y.busy.saturating_sub(x.busy) as f64,
                _ => 0.0,
            };
            let busy = (ticks / hz / secs).min(1.0);
            let tasks_busy = (on_cpu.get(&cpu).copied().unwrap_or(0.0) / secs).min(1.0);
            let cap = capacity.max(1e-9);
            CpuLoad {
                cpu,
                capacity,
                busy,
                normalised: busy / cap,
                tasks_busy,
                tasks_normalised: tasks_busy / cap,
            }
        })
        .collect();
    Ok(LoadView {
        interval_s: secs,
        imbalance: imbalance(cpus.iter().map(|c| c.normalised)),
        tasks_imbalance: imbalance(cpus.iter().map(|c| c.tasks_normalised)),
        cpus,
    })
}

/// Max ÷ min over the values above [`IDLE_BELOW`] (at least two).
pub fn imbalance(values: impl Iterator<Item = f64>) -> Option<f64> {
    let busy: Vec<f64> = values.filter(|v| *v > IDLE_BELOW).collect();
    if busy.len() < 2 {
        return None;
    }
    let max = busy.iter().copied().fold(f64::MIN, f64::max);
    let min = busy.iter().copied().fold(f64::MAX, f64::min);
    Some(max / min)
}

/// Each thread's run time so far (ns) and the CPU it is credited to.
fn task_times(fs: &FsRoot, tasks: &[Task]) -> BTreeMap<(i32, i32), (usize, u64)> {
    let ns_per_tick = 1e9 / procfs::clock_ticks().max(1) as f64;
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
            let ns = procfs::task_runtime_ns(fs, t.pid, tid)
                .or_else(|| st.cpu_ticks.map(|k| (k as f64 * ns_per_tick) as u64));
            if let Some(ns) = ns {
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
    fn imbalance_is_max_over_min_of_loaded_cpus() {
        assert_eq!(imbalance([0.5, 1.0, 0.0].into_iter()), Some(2.0));
        assert_eq!(imbalance([0.5, 0.001].into_iter()), None);
        assert_eq!(imbalance(std::iter::empty()), None);
    }

    #[test]
    fn a_short_live_measure_covers_every_cpu_asked() {
        let fs = FsRoot::live();
        let v = measure(&fs, &[(0, 1.0)], &[], Duration::from_millis(50)).unwrap();
        assert_eq!(v.cpus.len(), 1);
        assert!((0.0..=1.0).contains(&v.cpus[0].busy));
        assert_eq!(v.cpus[0].tasks_busy, 0.0);
    }
}
