//! The per-CPU load and the selected tasks' progress before and after a
//! rebalance, as `pinsight load` measures them: one reading of the
//! counters before and one after, through [`pinsight_load::sample`], and
//! the load between them from [`pinsight_load::analyse`] (each CPU's busy
//! time from `/proc/schedstat`, else the `/proc/uptime` interval less
//! `/proc/stat`'s idle time, else its tick samples; an emulation's
//! stealers counted as steal). The selected tasks' threads are read ten
//! more times within the interval and their progress by capacity comes
//! from [`pinsight_load::progress`], the code `load` uses: run time
//! times the speed of the CPUs it ran on, whether they waited to run, and
//! the progress imbalance over the threads that want a whole CPU.
//!
//! Normalised load is share ÷ relative capacity (the fastest CPU = 1.0):
//! a CPU of capacity 0.5 that is 40% busy carries 0.8. The CPU imbalance
//! is `load`'s ([`pinsight_load::report::imbalance_of`]): the largest
//! normalised load over the smallest among the CPUs busy at least 5% of
//! the interval (1.0 = even). When every CPU is saturated it reads 1.0
//! whatever the placement; the progress imbalance does not.

use super::select::Task;
use pinsight_cpuset::CpuSet;
use pinsight_load::progress::{ProgressImbalance, TaskProgress, Trace};
use pinsight_load::report::{imbalance_of, BusySource, CpuInfo, Machine};
use pinsight_load::{Excluded, Parts};
use pinsight_sys::procfs;
use pinsight_sys::FsRoot;
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
    /// Each selected task's progress over the interval, in the order of
    /// the selection.
    pub tasks: Vec<TaskLine>,
    /// Max/min progress over the selected threads that want a whole CPU
    /// (`load`'s definition, [`pinsight_load::progress::imbalance`]).
    pub progress_imbalance: Option<ProgressImbalance>,
    /// The share of the capacity of these CPUs they could use that the
    /// selected threads wanting a whole CPU got
    /// ([`pinsight_load::progress::capacity_used`]).
    pub capacity_used: Option<f64>,
    /// How the waits were measured (`schedstat`'s `run_delay`, or the
    /// runnable state sampled at each look).
    pub wait_source: Option<String>,
}

/// One selected task (a process, or a thread with `--per-thread`) over
/// the interval: its threads' figures added up.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskLine {
    pub pid: i32,
    pub tid: Option<i32>,
    pub name: String,
    /// Share of the interval its threads ran (CPU seconds per second).
    pub run: f64,
    /// Share of the interval its threads waited to run.
    pub wait: f64,
    /// Fastest-CPU seconds per second ([`TaskProgress::progress`]).
    pub progress: f64,
    /// Its threads that wanted a whole CPU.
    pub wanting: usize,
    /// The CPU its threads ran on most.
    pub cpu: Option<usize>,
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

/// Looks at the selected threads within one interval, besides its ends.
pub const LOOKS: u32 = 10;

/// The per-CPU load over `interval` of the CPUs in `caps` (`(cpu,
/// relative capacity, speed while a task runs there)`), the share `tasks`
/// took on each and their progress; the run time of the `exclude`
/// processes (an emulation's stealers) is not busy, and their CPUs run at
/// full speed while a task runs ([`pinsight_load::speeds`]).
pub fn measure(
    fs: &FsRoot,
    caps: &[(usize, f64, f64)],
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
            .map(|&(cpu, capacity, speed)| CpuInfo::unkinded(cpu, None, capacity, speed))
            .collect(),
        capacity_source: String::new(),
    };
    let tids: Vec<(i32, i32)> = tasks
        .iter()
        .flat_map(|t| t.threads.iter().map(move |tid| (t.pid, *tid)))
        .collect();
    let hz = procfs::clock_ticks();
    let mut trace = Trace::new(hz);
    let a = pinsight_load::sample::read(fs, &parts).ok_or(LoadError::NoProcStat)?;
    let ta = task_times(fs, tasks);
    trace.look(&pinsight_load::sample::read_threads_of(fs, &tids));
    // Ends early when SIGINT, SIGTERM or SIGHUP comes (the signal
    // lifecycle the command installed; a plain sleep without it).
    for _ in 0..LOOKS {
        if let Some(sig) = pinsight_lifecycle::interrupt::wait(interval / LOOKS) {
            return Err(LoadError::Interrupted(sig));
        }
        trace.look(&pinsight_load::sample::read_threads_of(fs, &tids));
    }
    let b = pinsight_load::sample::read(fs, &parts).ok_or(LoadError::NoProcStat)?;
    let tb = task_times(fs, tasks);
    let opts = pinsight_load::Options { top: 0, hz };
    let r = pinsight_load::analyse(&machine, &a, &b, opts);
    let secs = r.interval_s.max(1e-3);
    let mut on_cpu: BTreeMap<usize, f64> = BTreeMap::new();
    for (key, (cpu, ns_b)) in &tb {
        if let Some((_, ns_a)) = ta.get(key) {
            *on_cpu.entry(*cpu).or_default() += ns_b.saturating_sub(*ns_a) as f64 / 1e9;
        }
    }
    let speeds = pinsight_load::speeds(&machine, exclude.iter().map(|e| e.cpu));
    let threads = pinsight_load::progress::tasks(&trace, secs, &speeds);
    let cpus: Vec<CpuLoad> = caps
        .iter()
        .map(|&(cpu, capacity, _)| {
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
        progress_imbalance: pinsight_load::progress::imbalance(threads.iter()),
        capacity_used: pinsight_load::progress::capacity_used(
            threads.iter(),
            &caps.iter().map(|c| c.2).collect::<Vec<_>>(),
        ),
        wait_source: wait_source(&threads, trace.looks()),
        tasks: lines(tasks, &threads),
    })
}

/// How the waits of `threads` were measured, in words.
fn wait_source(threads: &[TaskProgress], looks: u32) -> Option<String> {
    use pinsight_load::progress::WaitSource;
    if threads.is_empty() {
        return None;
    }
    Some(
        if threads
            .iter()
            .all(|t| t.wait_source == WaitSource::Schedstat)
        {
            "run_delay of each thread's schedstat".into()
        } else {
            format!("the runnable state of each thread's stat, sampled at {looks} looks")
        },
    )
}

/// Each task's threads added up.
fn lines(tasks: &[Task], threads: &[TaskProgress]) -> Vec<TaskLine> {
    let by: BTreeMap<(i32, i32), &TaskProgress> =
        threads.iter().map(|t| ((t.pid, t.tid), t)).collect();
    tasks
        .iter()
        .map(|t| {
            let mine: Vec<&TaskProgress> = t
                .threads
                .iter()
                .filter_map(|tid| by.get(&(t.pid, *tid)).copied())
                .collect();
            let mut on: BTreeMap<usize, f64> = BTreeMap::new();
            for th in &mine {
                for (c, s) in &th.cpus {
                    *on.entry(*c).or_default() += th.run * s;
                }
            }
            TaskLine {
                pid: t.pid,
                tid: t.tid,
                name: t.name.clone(),
                run: mine.iter().map(|x| x.run).sum(),
                wait: mine.iter().map(|x| x.wait).sum(),
                progress: mine.iter().map(|x| x.progress).sum(),
                wanting: mine.iter().filter(|x| x.wants_cpu()).count(),
                cpu: on
                    .iter()
                    .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(a.0)))
                    .map(|(c, _)| *c)
                    .or_else(|| mine.iter().find_map(|x| x.cpu)),
            }
        })
        .collect()
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
        let v = measure(&fs, &[(0, 1.0, 1.0)], &[], &[], Duration::from_millis(50)).unwrap();
        assert_eq!(v.cpus.len(), 1);
        assert!((0.0..=1.0).contains(&v.cpus[0].busy));
        assert_eq!(v.cpus[0].tasks_busy, 0.0);
    }
}
