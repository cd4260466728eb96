//! Per-task progress by capacity: how fast each thread advanced over an
//! interval, in "fastest-CPU seconds per second", whether it waited to
//! run, and the imbalance between the threads that want a whole CPU.
//! Pure arithmetic over readings taken by [`crate::sample`]; `load` and
//! `balance` both use it (one definition).
//!
//! Why: when every CPU is saturated, busy time is 100% everywhere
//! whatever the placement, and cannot show that three always-busy tasks
//! sharing a CPU of half speed each advance at a sixth of the rate of a
//! task alone on a fast one. Progress can.
//!
//! - A thread's **run time** over the interval is the scheduler's
//!   (`/proc/PID/task/TID/schedstat` field 1, ns) where the kernel keeps
//!   it, else its `stat` ticks. Readings taken within the interval (a
//!   [`Trace`]'s looks) credit each stretch of run time to the CPU the
//!   thread was on at the end of it (exact for a pinned thread).
//! - Its **progress** is the sum over CPUs of its run time there times
//!   that CPU's speed while it ran ([`Speeds`]: its capacity relative to
//!   the most capable CPU on a real hybrid, under frequency caps lowered
//!   by the cap). Under a duty-cycle emulation the slowed CPU runs at full
//!   speed while the thread runs (the stealer takes time, not speed), so
//!   there the run time already carries the slowdown and the speed is
//!   the reference CPU's, 1.0.
//! - Its **wait** is `schedstat` field 2 (`run_delay`, ns waiting on a
//!   run queue) where present; else sampled: the share of the looks that
//!   found it runnable (`R` in `stat`, field 3) less the share of the
//!   interval it ran (a running thread is `R` too).
//! - Its **demand** is run + wait: 1.0 means it wanted a whole CPU all
//!   the interval. Threads of demand [`WHOLE_CPU`] or more "want a whole
//!   CPU"; the **progress imbalance** is the largest progress over the
//!   smallest among them (1.0 = each advances alike).

#![forbid(unsafe_code)]

use crate::sample::ThreadTick;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// Demand (run + wait, share of the interval) from which a thread wants
/// a whole CPU. Below 1.0 by the resolution of a sampled wait (one look
/// in ten) and the time the readings themselves take.
pub const WHOLE_CPU: f64 = 0.9;

/// Each CPU's speed while a thread runs on it, relative to the most
/// capable CPU (1.0).
pub type Speeds = BTreeMap<usize, f64>;

/// How a thread's wait was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WaitSource {
    /// `schedstat`'s `run_delay`: exact.
    Schedstat,
    /// The runnable state seen at each look: a sample.
    Sampled,
}

/// One thread followed over an interval. Its run time is counted in
/// ticks until a look has its `schedstat` (a first reading leaves that
/// out for threads that are not runnable), in ns from then on.
#[derive(Clone, Debug)]
struct Track {
    comm: String,
    kernel: bool,
    /// Ticks at the first look (0 for a thread born meanwhile).
    first_ticks: u64,
    /// Ticks and run ns at the first look that had its `schedstat`.
    ns_from: Option<(u64, u64)>,
    /// Ticks and run ns (when read) at the latest look.
    last_ticks: u64,
    last_ns: Option<u64>,
    /// Run time credited per CPU (ns).
    on_cpu: BTreeMap<usize, u64>,
    /// `run_delay` at the first and latest look, while every look had it.
    wait: Option<(u64, u64)>,
    /// Looks that saw it, and those that found it runnable.
    looks: u32,
    runnable: u32,
    last_cpu: Option<usize>,
}

/// Readings of threads within one interval, each a "look"
/// ([`Trace::look`]): the first at the interval's start, the last at its
/// end. Looks need not list every thread each time: a thread missing
/// from a look gains nothing there.
#[derive(Clone, Debug)]
pub struct Trace {
    /// Clock ticks per second (`USER_HZ`), for threads without
    /// `schedstat`.
    hz: f64,
    looks: u32,
    threads: HashMap<(i32, i32), Track>,
}

impl Trace {
    /// An empty trace; `hz` is `USER_HZ`.
    pub fn new(hz: u64) -> Trace {
        Trace {
            hz: hz.max(1) as f64,
            looks: 0,
            threads: HashMap::new(),
        }
    }

    /// A trace of two readings: the start and the end of the interval.
    pub fn of_two(hz: u64, before: &[ThreadTick], after: &[ThreadTick]) -> Trace {
        let mut t = Trace::new(hz);
        t.look(before);
        t.look(after);
        t
    }

    /// How many looks were taken.
    pub fn looks(&self) -> u32 {
        self.looks
    }

    /// Whether any thread was seen.
    pub fn is_empty(&self) -> bool {
        self.threads.is_empty()
    }

    fn ticks_ns(&self, ticks: u64) -> u64 {
        (ticks as f64 * 1e9 / self.hz).round() as u64
    }

    /// One more reading of the threads.
    pub fn look(&mut self, threads: &[ThreadTick]) {
        let first = self.looks == 0;
        let hz = self.hz;
        let ns = |ticks: u64| (ticks as f64 * 1e9 / hz).round() as u64;
        for t in threads {
            let runnable = u32::from(t.state == 'R');
            match self.threads.get_mut(&(t.pid, t.tid)) {
                Some(k) => {
                    // This stretch: in ns when both ends have them.
                    let d = match (k.last_ns, t.run_ns) {
                        (Some(a), Some(b)) => b.saturating_sub(a),
                        _ => ns(t.ticks.saturating_sub(k.last_ticks)),
                    };
                    if d > 0 {
                        if let Some(c) = t.last_cpu.or(k.last_cpu) {
                            *k.on_cpu.entry(c).or_default() += d;
                        }
                    }
                    if k.ns_from.is_none() {
                        k.ns_from = t.run_ns.map(|n| (t.ticks, n));
                    }
                    k.last_ticks = k.last_ticks.max(t.ticks);
                    if t.run_ns.is_some() {
                        k.last_ns = t.run_ns;
                    }
                    k.wait = match (k.wait, t.wait_ns) {
                        (Some((a, _)), Some(w)) => Some((a, w)),
                        _ => None,
                    };
                    k.looks += 1;
                    k.runnable += runnable;
                    k.last_cpu = t.last_cpu.or(k.last_cpu);
                    k.comm.clone_from(&t.comm);
                }
                None => {
                    // Born within the interval: all its time is new.
                    let base_ticks = if first { t.ticks } else { 0 };
                    let ns_from = t.run_ns.map(|n| if first { (t.ticks, n) } else { (0, 0) });
                    let grown = match t.run_ns {
                        Some(n) if !first => n,
                        _ => ns(t.ticks - base_ticks),
                    };
                    let mut on_cpu = BTreeMap::new();
                    if grown > 0 {
                        if let Some(c) = t.last_cpu {
                            on_cpu.insert(c, grown);
                        }
                    }
                    // The exact wait only when the first look had it.
                    let wait = t.wait_ns.filter(|_| first).map(|w| (w, w));
                    let wait = wait.or(t.wait_ns.filter(|_| !first).map(|w| (0, w)));
                    self.threads.insert(
                        (t.pid, t.tid),
                        Track {
                            comm: t.comm.clone(),
                            kernel: t.is_kernel(),
                            first_ticks: base_ticks,
                            ns_from,
                            last_ticks: t.ticks,
                            last_ns: t.run_ns,
                            on_cpu,
                            wait,
                            looks: 1,
                            runnable,
                            last_cpu: t.last_cpu,
                        },
                    );
                }
            }
        }
        self.looks += 1;
    }

    /// A thread's run time over the interval, ns: ticks until its first
    /// `schedstat`, ns after.
    fn run_of(&self, k: &Track) -> u64 {
        match (k.ns_from, k.last_ns) {
            (Some((ticks_at, from)), Some(last)) => {
                self.ticks_ns(ticks_at.saturating_sub(k.first_ticks)) + last.saturating_sub(from)
            }
            _ => self.ticks_ns(k.last_ticks.saturating_sub(k.first_ticks)),
        }
    }
}

/// One thread's progress over the interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskProgress {
    pub pid: i32,
    pub tid: i32,
    pub comm: String,
    /// A kernel thread.
    pub kernel: bool,
    /// Share of the interval it ran (CPU seconds per second).
    pub run: f64,
    /// Share of the interval it waited to run.
    pub wait: f64,
    pub wait_source: WaitSource,
    /// run + wait: 1.0 wanted one whole CPU all the interval.
    pub demand: f64,
    /// Fastest-CPU seconds per second: run time times the speed of the
    /// CPUs it ran on.
    pub progress: f64,
    /// The CPU it ran on most (else the one it last ran on).
    pub cpu: Option<usize>,
    /// Each CPU it ran on, with its share of the thread's run time.
    pub cpus: BTreeMap<usize, f64>,
}

impl TaskProgress {
    /// Whether it wanted a whole CPU ([`WHOLE_CPU`]).
    pub fn wants_cpu(&self) -> bool {
        self.demand >= WHOLE_CPU
    }
}

/// Every thread of `trace` that ran or was seen runnable over an
/// interval of `interval_s`, its CPUs' speeds from `speeds` (a CPU
/// missing there runs at 1.0), in the order of (PID, TID).
pub fn tasks(trace: &Trace, interval_s: f64, speeds: &Speeds) -> Vec<TaskProgress> {
    let secs = interval_s.max(1e-9);
    let mut out: Vec<TaskProgress> = trace
        .threads
        .iter()
        // A thread that neither ran nor was ever runnable has nothing to
        // report (on a machine of 10,000 parked threads, nearly all).
        .filter(|(_, k)| k.runnable > 0 || trace.run_of(k) > 0)
        .map(|(&(pid, tid), k)| {
            let run_ns = trace.run_of(k);
            let run = (run_ns as f64 / 1e9 / secs).min(1.0);
            let credited: u64 = k.on_cpu.values().sum();
            let cpus: BTreeMap<usize, f64> = k
                .on_cpu
                .iter()
                .filter(|(_, ns)| **ns > 0)
                .map(|(c, ns)| (*c, *ns as f64 / credited.max(1) as f64))
                .collect();
            // Run time no look could place (no CPU known) runs at the
            // speed of the CPU it was last seen on, else 1.0.
            let speed_of = |c: usize| speeds.get(&c).copied().unwrap_or(1.0);
            let mean_speed = if cpus.is_empty() {
                k.last_cpu.map_or(1.0, speed_of)
            } else {
                cpus.iter().map(|(c, s)| s * speed_of(*c)).sum()
            };
            let (wait, wait_source) = match k.wait {
                Some((a, b)) => (
                    (b.saturating_sub(a) as f64 / 1e9 / secs).min(1.0),
                    WaitSource::Schedstat,
                ),
                None => {
                    let seen = f64::from(k.runnable) / f64::from(k.looks.max(1));
                    ((seen - run).max(0.0), WaitSource::Sampled)
                }
            };
            let cpu = k
                .on_cpu
                .iter()
                .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                .map(|(c, _)| *c)
                .or(k.last_cpu);
            TaskProgress {
                pid,
                tid,
                comm: k.comm.clone(),
                kernel: k.kernel,
                run,
                wait,
                wait_source,
                demand: (run + wait).min(1.0),
                progress: run * mean_speed,
                cpu,
                cpus,
            }
        })
        .collect();
    out.sort_by_key(|t| (t.pid, t.tid));
    out
}

/// One side of a [`ProgressImbalance`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskRef {
    pub pid: i32,
    pub tid: i32,
    pub comm: String,
    pub progress: f64,
    pub cpu: Option<usize>,
}

impl TaskRef {
    fn of(t: &TaskProgress) -> TaskRef {
        TaskRef {
            pid: t.pid,
            tid: t.tid,
            comm: t.comm.clone(),
            progress: t.progress,
            cpu: t.cpu,
        }
    }
}

/// The smallest progress a ratio divides by (fastest-CPU seconds per
/// second): a thread that wanted a CPU and barely ran keeps the ratio
/// finite, and two that both starved read as even.
const FLOOR: f64 = 1e-3;

/// The largest progress over the smallest among the threads that want a
/// whole CPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProgressImbalance {
    pub ratio: f64,
    pub max: TaskRef,
    pub min: TaskRef,
    /// Threads that wanted a whole CPU.
    pub tasks: usize,
}

/// The progress imbalance of `tasks`: over the user threads that want a
/// whole CPU ([`TaskProgress::wants_cpu`]); `None` with fewer than two.
/// A thread that wanted a CPU and made no progress at all counts with
/// the smallest measurable rate, so the ratio stays finite.
pub fn imbalance<'a>(
    tasks: impl IntoIterator<Item = &'a TaskProgress>,
) -> Option<ProgressImbalance> {
    let wanting: Vec<&TaskProgress> = tasks
        .into_iter()
        .filter(|t| t.wants_cpu() && !t.kernel)
        .collect();
    if wanting.len() < 2 {
        return None;
    }
    let order = |a: &&&TaskProgress, b: &&&TaskProgress| {
        a.progress
            .total_cmp(&b.progress)
            .then((b.pid, b.tid).cmp(&(a.pid, a.tid)))
    };
    let max = wanting.iter().max_by(order)?;
    let min = wanting.iter().min_by(order)?;
    Some(ProgressImbalance {
        ratio: max.progress.max(FLOOR) / min.progress.max(FLOOR),
        max: TaskRef::of(max),
        min: TaskRef::of(min),
        tasks: wanting.len(),
    })
}

/// Per CPU, the demand the threads put on it: each thread's run share
/// there plus its wait, credited to the CPU it ran on most. The mean
/// number of threads that wanted the CPU (1.0 = one always there).
pub fn demand_by_cpu<'a>(
    tasks: impl IntoIterator<Item = &'a TaskProgress>,
) -> BTreeMap<usize, f64> {
    let mut out: BTreeMap<usize, f64> = BTreeMap::new();
    for t in tasks {
        for (c, s) in &t.cpus {
            *out.entry(*c).or_default() += t.run * s;
        }
        if let Some(c) = t.cpu {
            *out.entry(c).or_default() += t.wait;
        }
    }
    out
}

/// The expected progress of threads that each want a whole CPU, placed
/// as `targets` says (each thread's allowed CPUs), on CPUs of effective
/// capacity `capacity` (relative to the most capable, 1.0; an emulated
/// CPU's lower share included): each CPU's capacity shared equally among
/// the threads that may run there, a thread's rate the sum of its shares
/// but at most the largest capacity among its CPUs (one thread runs on
/// one CPU at a time). Pure; work outside `targets` is not counted.
pub fn expected(targets: &[Vec<usize>], capacity: &BTreeMap<usize, f64>) -> Vec<f64> {
    let mut sharing: BTreeMap<usize, usize> = BTreeMap::new();
    for t in targets {
        for c in t {
            *sharing.entry(*c).or_default() += 1;
        }
    }
    let cap = |c: &usize| capacity.get(c).copied().unwrap_or(1.0);
    targets
        .iter()
        .map(|t| {
            let share: f64 = t.iter().map(|c| cap(c) / sharing[c] as f64).sum();
            let top = t.iter().map(cap).fold(0.0, f64::max);
            share.min(top)
        })
        .collect()
}

/// The share of the capacity they could use that the user threads
/// wanting a whole CPU got: the sum of their progress over the capacity
/// of the `n` most capable CPUs (`n` of them; each runs on one CPU at a
/// time). `capacity` is each CPU's effective capacity relative to the
/// most capable (an emulated CPU's lower share included). 1.0: the
/// machine gave them all it has; 0.33: tasks waited while capacity sat
/// idle (all on one slow CPU, say). `None` without such threads.
pub fn capacity_used<'a>(
    tasks: impl IntoIterator<Item = &'a TaskProgress>,
    capacity: &[f64],
) -> Option<f64> {
    let wanting: Vec<&TaskProgress> = tasks
        .into_iter()
        .filter(|t| t.wants_cpu() && !t.kernel)
        .collect();
    if wanting.is_empty() {
        return None;
    }
    let mut caps = capacity.to_vec();
    caps.sort_by(|a, b| b.total_cmp(a));
    let most: f64 = caps.iter().take(wanting.len()).sum();
    (most > 0.0).then(|| wanting.iter().map(|t| t.progress).sum::<f64>() / most)
}

/// max/min of `rates` (at least two), as [`imbalance`] computes it.
pub fn ratio_of(rates: &[f64]) -> Option<f64> {
    if rates.len() < 2 {
        return None;
    }
    let max = rates.iter().copied().fold(f64::MIN, f64::max);
    let min = rates.iter().copied().fold(f64::MAX, f64::min);
    Some(max.max(FLOOR) / min.max(FLOOR))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(pid: i32, cpu: usize, ns: u64, state: char, wait: Option<u64>) -> ThreadTick {
        ThreadTick {
            pid,
            tid: pid,
            comm: format!("w{pid}"),
            last_cpu: Some(cpu),
            ticks: 0,
            flags: 0,
            state,
            run_ns: Some(ns),
            wait_ns: wait,
        }
    }

    /// Six always-busy threads, three on CPU 0 (speed 1.0) and three on
    /// CPU 1 slowed to half by a stealer taking half its time: each of
    /// CPU 0's runs a third of the time, each of CPU 1's a sixth, at full
    /// speed while it runs. Progress 1/3 against 1/6: imbalance 2.0.
    #[test]
    fn the_three_and_three_case_reads_two() {
        let mut tr = Trace::new(100);
        let s = 1_000_000_000u64;
        let at = |k: u64| -> Vec<ThreadTick> {
            (1..=6)
                .map(|p| {
                    let on0 = p <= 3;
                    let run = if on0 { k * s / 3 / 10 } else { k * s / 6 / 10 };
                    tick(p, usize::from(!on0), run, 'R', None)
                })
                .collect()
        };
        for k in 0..=10 {
            tr.look(&at(k));
        }
        let speeds: Speeds = [(0, 1.0), (1, 1.0)].into_iter().collect();
        let t = tasks(&tr, 1.0, &speeds);
        assert!(t.iter().all(|t| t.wants_cpu()), "{t:?}");
        let i = imbalance(&t).unwrap();
        assert!((i.ratio - 2.0).abs() < 1e-6, "{i:?}");
        assert_eq!(i.min.cpu, Some(1));
        let d = demand_by_cpu(&t);
        assert!(
            (d[&0] - 3.0).abs() < 0.2 && (d[&1] - 3.0).abs() < 0.2,
            "{d:?}"
        );
    }

    #[test]
    fn a_slow_kind_scales_run_time_and_schedstat_wait_is_exact() {
        // One thread alone on an E-core of capacity 0.5: it runs all the
        // time and advances at half the rate of the P-core.
        let s = 1_000_000_000u64;
        let tr = Trace::of_two(
            100,
            &[tick(1, 1, 0, 'R', Some(0)), tick(2, 0, 0, 'R', Some(0))],
            &[tick(1, 1, 2 * s, 'R', Some(0)), tick(2, 0, s, 'R', Some(s))],
        );
        let speeds: Speeds = [(0, 1.0), (1, 0.5)].into_iter().collect();
        let t = tasks(&tr, 2.0, &speeds);
        assert!((t[0].progress - 0.5).abs() < 1e-9);
        assert_eq!(t[1].wait_source, WaitSource::Schedstat);
        assert!((t[1].wait - 0.5).abs() < 1e-9 && (t[1].progress - 0.5).abs() < 1e-9);
        assert!((imbalance(&t).unwrap().ratio - 1.0).abs() < 1e-9);
    }

    #[test]
    fn sleepers_do_not_want_a_cpu_and_the_born_count_from_zero() {
        let s = 1_000_000_000u64;
        let mut tr = Trace::new(100);
        tr.look(&[tick(1, 0, 5 * s, 'S', None)]);
        tr.look(&[
            tick(1, 0, 5 * s + s / 10, 'S', None),
            tick(2, 0, s / 2, 'R', None),
        ]);
        let t = tasks(&tr, 1.0, &Speeds::new());
        assert!(!t[0].wants_cpu());
        assert!((t[0].run - 0.1).abs() < 1e-9);
        assert!((t[1].run - 0.5).abs() < 1e-9);
        assert!(imbalance(&t).is_none());
    }

    #[test]
    fn tasks_crowded_on_a_slow_cpu_use_a_third_of_the_capacity() {
        // 24 threads on an E-core of capacity 0.5 beside an idle P-core:
        // 0.5 of the 1.5 the machine has.
        let mut tr = Trace::new(100);
        let s = 1_000_000_000u64;
        for k in 0..=10u64 {
            let at: Vec<ThreadTick> = (1..=24)
                .map(|p| tick(p, 1, k * s / 48 / 10, 'R', None))
                .collect();
            tr.look(&at);
        }
        let speeds: Speeds = [(0, 1.0), (1, 1.0)].into_iter().collect();
        let t = tasks(&tr, 1.0, &speeds);
        let used = capacity_used(&t, &[1.0, 0.5]).unwrap();
        assert!((used - 1.0 / 3.0).abs() < 1e-6, "{used}");
        assert!((imbalance(&t).unwrap().ratio - 1.0).abs() < 1e-9);
    }

    #[test]
    fn expected_shares_each_cpu_among_its_threads() {
        let caps: BTreeMap<usize, f64> = [(0, 1.0), (1, 0.5)].into_iter().collect();
        let e = expected(
            &[vec![0], vec![0], vec![0], vec![0], vec![1], vec![1]],
            &caps,
        );
        assert_eq!(e, vec![0.25; 6]);
        assert!((ratio_of(&e).unwrap() - 1.0).abs() < 1e-12);
        let e = expected(
            &[vec![0], vec![0], vec![0], vec![1], vec![1], vec![1]],
            &caps,
        );
        assert!((ratio_of(&e).unwrap() - 2.0).abs() < 1e-12);
        // One thread free on both CPUs alone: one CPU's worth at most.
        assert_eq!(expected(&[vec![0, 1]], &caps), vec![1.0]);
    }
}
