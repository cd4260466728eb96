//! One reading of the machine's counters at a point in time: `/proc/stat`
//! per CPU, `/proc/schedstat` (each CPU's run and wait time in ns, where
//! the kernel keeps scheduler statistics), `/proc/uptime`,
//! `/proc/interrupts`, `/proc/softirqs`, every thread's
//! `/proc/PID/task/TID/stat` (its last CPU and its CPU ticks) and the run
//! time of the threads to leave out (an emulation's stealers), all read
//! through [`FsRoot`] so a recorded tree reads as the live one.

use crate::interrupts::{parse_interrupts, parse_softirqs, Interrupts, Softirqs};
use pinsight_sys::cpustat::{parse_cpu_fields, CpuFields};
use pinsight_sys::procfs::parse_stat;
use pinsight_sys::FsRoot;
use std::collections::BTreeMap;

/// `PF_KTHREAD` (include/linux/sched.h): the task is a kernel thread.
pub const PF_KTHREAD: u64 = 0x0020_0000;
/// `PF_NO_SETAFFINITY` (include/linux/sched.h): userland may not change
/// the task's affinity (per-CPU kernel threads: `ksoftirqd/N`, `kworker/N`).
pub const PF_NO_SETAFFINITY: u64 = 0x0400_0000;

/// One thread as its `stat` file shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadTick {
    pub pid: i32,
    pub tid: i32,
    /// `comm` (at most 15 bytes).
    pub comm: String,
    /// The CPU it last ran on (field 39).
    pub last_cpu: Option<usize>,
    /// utime + stime (fields 14, 15) in clock ticks.
    pub ticks: u64,
    /// The task's `flags` (field 9).
    pub flags: u64,
    /// Its state letter (field 3): `R` running or waiting to run, `S`,
    /// `D`, ...
    pub state: char,
    /// The scheduler's run time so far, ns (`schedstat` field 1), where
    /// the kernel keeps it (`CONFIG_SCHED_INFO`, a file that is not
    /// `0 0 0`); read only where the caller asked for it.
    pub run_ns: Option<u64>,
    /// Its time so far spent waiting on a run queue, ns (`schedstat`
    /// field 2, `run_delay`), where [`ThreadTick::run_ns`] is.
    pub wait_ns: Option<u64>,
}

impl ThreadTick {
    /// A kernel thread (`PF_KTHREAD`).
    pub fn is_kernel(&self) -> bool {
        self.flags & PF_KTHREAD != 0
    }

    /// A kernel thread bound to its CPU (`PF_KTHREAD` and
    /// `PF_NO_SETAFFINITY`): it stays where it is.
    pub fn is_percpu_kernel(&self) -> bool {
        self.is_kernel() && self.flags & PF_NO_SETAFFINITY != 0
    }
}

/// Field 9 (`flags`) of a `stat` line: the third word after the name's
/// closing parenthesis.
pub fn stat_flags(text: &str) -> Option<u64> {
    let close = text.rfind(')')?;
    text[close + 1..]
        .split_ascii_whitespace()
        .nth(6)?
        .parse()
        .ok()
}

/// One CPU's line of `/proc/schedstat` (Documentation/scheduler/
/// sched-stats.rst, version 15 and later): its fields 7 to 9.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuSched {
    /// Time spent running by tasks on this processor, ns (`rq_cpu_time`;
    /// the idle task excluded). The kernel adds a task's time when it
    /// leaves the CPU (`sched_info_depart`, kernel/sched/stats.h).
    pub running_ns: u64,
    /// Time spent waiting to run by tasks on this processor, ns
    /// (`run_delay`).
    pub waiting_ns: u64,
    /// Timeslices run on this processor (`pcount`).
    pub timeslices: u64,
}

/// The `cpuN` lines of `/proc/schedstat`; `None` without a `version`
/// line of 15 or later (older formats put other counters in those
/// places) or without any `cpuN` line of nine numbers.
pub fn parse_schedstat(text: &str) -> Option<BTreeMap<usize, CpuSched>> {
    let mut lines = text.lines();
    let version: u32 = lines
        .next()?
        .strip_prefix("version ")?
        .trim()
        .parse()
        .ok()?;
    if version < 15 {
        return None;
    }
    let mut out = BTreeMap::new();
    for line in lines {
        let mut w = line.split_ascii_whitespace();
        let Some(cpu) = w
            .next()
            .and_then(|n| n.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let f: Vec<u64> = w.take(9).map_while(|x| x.parse().ok()).collect();
        if f.len() == 9 {
            out.insert(
                cpu,
                CpuSched {
                    running_ns: f[6],
                    waiting_ns: f[7],
                    timeslices: f[8],
                },
            );
        }
    }
    (!out.is_empty()).then_some(out)
}

/// `/proc/stat`'s counters of a `cpuN` line, in order (proc(5)).
const STAT_FIELDS: [&str; 8] = [
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
];

/// The `cpuN` lines of a `/proc/stat` text whose counters cannot be read,
/// each with the reason: fewer than the four counters every kernel has,
/// or a counter that is negative, past the largest one (2^64 - 1) or not
/// a number. Such a CPU's load over the interval is unknown; the
/// lenient [`parse_cpu_fields`] would drop the line or read the rest of
/// it as 0.
pub fn bad_stat_lines(text: &str) -> BTreeMap<usize, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split_ascii_whitespace();
        let Some(cpu) = words
            .next()
            .and_then(|w| w.strip_prefix("cpu"))
            .filter(|n| !n.is_empty())
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let fields: Vec<&str> = words.take(STAT_FIELDS.len()).collect();
        let bad = STAT_FIELDS.iter().zip(&fields).find_map(|(name, w)| {
            if w.parse::<u64>().is_ok() {
                return None;
            }
            let why = if w.starts_with('-') {
                "negative"
            } else if w.bytes().all(|b| b.is_ascii_digit()) {
                "past the largest counter, 2^64 - 1"
            } else {
                "not a number"
            };
            let shown: String = w.chars().take(24).collect();
            Some(format!("/proc/stat's {name} reads '{shown}' ({why})"))
        });
        if let Some(why) = bad {
            out.insert(cpu, why);
        } else if fields.len() < 4 {
            out.insert(
                cpu,
                format!(
                    "/proc/stat has {} of its counters (user, nice, system and idle at least)",
                    fields.len()
                ),
            );
        }
    }
    out
}

/// The first field of `/proc/uptime`: seconds since boot, to 1/100 s
/// (proc(5)).
pub fn parse_uptime(text: &str) -> Option<f64> {
    text.split_ascii_whitespace()
        .next()?
        .parse()
        .ok()
        .filter(|s: &f64| s.is_finite() && *s >= 0.0)
}

/// A process whose threads' run time is not the machine's load: an
/// emulation's stealer, pinned to `cpu` (`pinsight emulate`'s
/// duty-cycle mechanism takes a share of that CPU's time to slow it; that
/// time is the CPU's lower capacity, not work on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Excluded {
    pub cpu: usize,
    pub pid: i32,
}

/// What was read at one moment.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// Every `cpuN` line of `/proc/stat`.
    pub stat: BTreeMap<usize, CpuFields>,
    /// The `cpuN` lines of `/proc/stat` whose counters cannot be read,
    /// each with the reason ([`bad_stat_lines`]).
    pub stat_bad: BTreeMap<usize, String>,
    /// Every `cpuN` line of `/proc/schedstat`, where the kernel has it
    /// (`CONFIG_SCHEDSTATS`) in a known format.
    pub sched: Option<BTreeMap<usize, CpuSched>>,
    /// `/proc/uptime`'s seconds since boot, when readable.
    pub uptime_s: Option<f64>,
    /// Per CPU, the run time so far (ns) of the [`Excluded`] processes on
    /// it (every thread's `/proc/PID/task/TID/schedstat` field 1, else
    /// its `stat` ticks); a process that cannot be read is missing.
    pub excluded_ns: BTreeMap<usize, u64>,
    /// The excluded processes none of whose threads could be read.
    pub excluded_unread: Vec<Excluded>,
    /// The PIDs of the excluded processes asked for: their threads are
    /// not tasks of the machine's work.
    pub excluded_pids: Vec<i32>,
    /// `/proc/interrupts`, when readable.
    pub interrupts: Option<Interrupts>,
    /// `/proc/softirqs`, when readable.
    pub softirqs: Option<Softirqs>,
    /// Every thread that could be read (threads that exit meanwhile are
    /// skipped).
    pub threads: Vec<ThreadTick>,
}

/// What can be read of what; each part may be left out (cheaper rounds).
#[derive(Clone, Debug)]
pub struct Parts {
    pub threads: bool,
    /// Processes whose run time is left out of their CPU's busy time.
    pub exclude: Vec<Excluded>,
}

impl Default for Parts {
    fn default() -> Self {
        Parts {
            threads: true,
            exclude: Vec::new(),
        }
    }
}

/// Reads a [`Sample`] under `fs`. `/proc/stat` is required: `None` when
/// it is missing or holds no `cpuN` line.
pub fn read(fs: &FsRoot, parts: &Parts) -> Option<Sample> {
    read_with(fs, parts, &mut ThreadReader::default())
}

/// [`read`], the threads read through `threads` (which skips the threads
/// of processes that did not run since its last reading).
pub fn read_with(fs: &FsRoot, parts: &Parts, threads: &mut ThreadReader) -> Option<Sample> {
    let text = fs.read_opt("/proc/stat")?;
    let stat = parse_cpu_fields(&text);
    let stat_bad = bad_stat_lines(&text);
    if stat.is_empty() && stat_bad.is_empty() {
        return None;
    }
    let sched = fs
        .read_opt("/proc/schedstat")
        .and_then(|t| parse_schedstat(&t));
    let uptime_s = fs.read_opt("/proc/uptime").and_then(|t| parse_uptime(&t));
    let (excluded_ns, excluded_unread) = excluded_ns(fs, &parts.exclude);
    let interrupts = fs
        .read_opt("/proc/interrupts")
        .and_then(|t| parse_interrupts(&t));
    let softirqs = fs
        .read_opt("/proc/softirqs")
        .and_then(|t| parse_softirqs(&t));
    let threads = if parts.threads {
        threads.read(fs)
    } else {
        Vec::new()
    };
    Some(Sample {
        stat,
        stat_bad,
        sched,
        uptime_s,
        excluded_ns,
        excluded_unread,
        excluded_pids: parts.exclude.iter().map(|e| e.pid).collect(),
        interrupts,
        softirqs,
        threads,
    })
}

/// Per CPU, the run time so far (ns) of every thread of the `exclude`
/// processes pinned to it, and the processes none of whose threads could
/// be listed: [`pinsight_sys::procfs::run_ns_by_cpu`].
pub fn excluded_ns(fs: &FsRoot, exclude: &[Excluded]) -> (BTreeMap<usize, u64>, Vec<Excluded>) {
    let procs: Vec<(usize, i32)> = exclude.iter().map(|e| (e.cpu, e.pid)).collect();
    let (ns, unread) = pinsight_sys::procfs::run_ns_by_cpu(fs, &procs);
    let unread = unread
        .into_iter()
        .map(|(cpu, pid)| Excluded { cpu, pid })
        .collect();
    (ns, unread)
}

/// Every thread of every process under `/proc`.
pub fn read_threads(fs: &FsRoot) -> Vec<ThreadTick> {
    fs.list_dir("/proc")
        .iter()
        .filter_map(|p| p.parse::<i32>().ok())
        .flat_map(|pid| process_threads(fs, pid, true))
        .collect()
}

/// Utime + stime (fields 14 and 15) of a `stat` line: for
/// `/proc/PID/stat`, the whole process's (every thread, the exited ones
/// included: kernel `fs/proc/array.c`, `do_task_stat` with `whole`).
pub fn stat_ticks(text: &str) -> Option<u64> {
    let close = text.rfind(')')?;
    let mut w = text[close + 1..].split_ascii_whitespace().skip(11);
    let u: u64 = w.next()?.parse().ok()?;
    let s: u64 = w.next()?.parse().ok()?;
    Some(u.saturating_add(s))
}

/// Reads every thread, again and again, cheaply: a process whose CPU
/// time (`/proc/PID/stat`, one read) has not moved since the previous
/// reading, and none of whose threads was runnable then or is now (its
/// main thread's state), had no thread run long enough to count a tick
/// nor wait to run, so its threads are taken from that reading instead
/// of read one by one. On a machine of a thousand mostly sleeping
/// threads this turns a thousand reads per interval into one per
/// process.
#[derive(Debug, Default)]
pub struct ThreadReader {
    /// PID → (its CPU ticks, its threads, whether it was active: read
    /// again at that reading) at the previous reading.
    prev: std::collections::HashMap<i32, (u64, Vec<ThreadTick>, bool)>,
}

impl ThreadReader {
    /// Every thread of every process under `/proc` now.
    pub fn read(&mut self, fs: &FsRoot) -> Vec<ThreadTick> {
        let pids: Vec<i32> = fs
            .list_dir("/proc")
            .iter()
            .filter_map(|p| p.parse::<i32>().ok())
            .collect();
        let mut next = std::collections::HashMap::new();
        let mut out = Vec::new();
        for pid in pids {
            let prev = self.prev.remove(&pid);
            if let Some((ticks, threads, active)) = self.one(fs, pid, prev, &mut out, true) {
                next.insert(pid, (ticks, threads, active));
            }
        }
        self.prev = next;
        out
    }

    /// The threads of the processes that were active at the previous
    /// reading, read again now where they still are (their process ran,
    /// or one of their threads is or was runnable): the looks within an
    /// interval. Only those: a process of 10,000 threads costs the kernel
    /// 10,000 threads' sums to read its `/proc/PID/stat`, so the quiet
    /// ones wait for the next [`ThreadReader::read`] (which finds the
    /// ones that woke meanwhile, their time from the previous reading).
    pub fn read_fresh(&mut self, fs: &FsRoot) -> Vec<ThreadTick> {
        let active: Vec<i32> = self
            .prev
            .iter()
            .filter(|(_, e)| e.2)
            .map(|(p, _)| *p)
            .collect();
        let mut out = Vec::new();
        for pid in active {
            let prev = self.prev.remove(&pid);
            if let Some(entry) = self.one(fs, pid, prev, &mut out, false) {
                self.prev.insert(pid, entry);
            }
        }
        out
    }

    /// Process `pid` now: its threads read again when it is new, ran, or
    /// is or was runnable (pushed to `out`), else taken from `prev`
    /// (pushed to `out` only when `all`). A process seen for the first
    /// time has its threads' `schedstat` read only for the runnable ones
    /// (the others count by ticks until they run:
    /// [`crate::progress::Trace`]); one read again because it ran has
    /// them all. `None` when it has no readable process line (a recorded
    /// tree that kept only the threads: read one by one each time).
    fn one(
        &self,
        fs: &FsRoot,
        pid: i32,
        prev: Option<(u64, Vec<ThreadTick>, bool)>,
        out: &mut Vec<ThreadTick>,
        all: bool,
    ) -> Option<(u64, Vec<ThreadTick>, bool)> {
        let line = fs.read_opt(format!("/proc/{pid}/stat"));
        let ticks = line.as_deref().and_then(stat_ticks);
        // A process whose main thread is runnable, or one of whose
        // threads was, is read again even without a tick: a thread
        // waiting to run gains no CPU time, and its wait is what the
        // reading is for.
        let runnable = line.as_deref().and_then(parse_stat).map(|s| s.state) == Some('R');
        let seen = prev.is_some();
        match (ticks, prev) {
            (Some(now), Some((was, threads, _)))
                if was == now && !runnable && threads.iter().all(|t| t.state != 'R') =>
            {
                if all {
                    out.extend(threads.iter().cloned());
                }
                Some((now, threads, false))
            }
            _ => {
                let threads = process_threads(fs, pid, seen || ticks.is_none());
                out.extend(threads.iter().cloned());
                ticks.map(|now| (now, threads, true))
            }
        }
    }
}

/// The threads of process `pid` ([`read_thread_with`]).
fn process_threads(fs: &FsRoot, pid: i32, sched: bool) -> Vec<ThreadTick> {
    fs.list_dir(format!("/proc/{pid}/task"))
        .iter()
        .filter_map(|t| t.parse::<i32>().ok())
        .filter_map(|tid| read_thread_with(fs, pid, tid, sched))
        .collect()
}

/// One thread from its `stat` text (without its `schedstat`).
pub fn thread(pid: i32, tid: i32, text: &str) -> Option<ThreadTick> {
    let s = parse_stat(text)?;
    Some(ThreadTick {
        pid,
        tid,
        comm: s.comm,
        last_cpu: s.last_cpu,
        ticks: s.cpu_ticks.unwrap_or(0),
        flags: stat_flags(text).unwrap_or(0),
        state: s.state,
        run_ns: None,
        wait_ns: None,
    })
}

/// A thread's `schedstat` (`run ns`, `wait ns`, `timeslices`;
/// Documentation/scheduler/sched-stats.rst): its run and wait times, or
/// `None` when unreadable or `0 0 0` (the kernel writes that when it
/// keeps no scheduler information, `sched_info_on()` false).
pub fn parse_task_schedstat(text: &str) -> Option<(u64, u64)> {
    let f: Vec<u64> = text
        .split_ascii_whitespace()
        .take(3)
        .map(|w| w.parse().ok())
        .collect::<Option<_>>()?;
    match f[..] {
        [0, 0, 0] => None,
        [run, wait, _] => Some((run, wait)),
        _ => None,
    }
}

/// One thread of `pid`, its `stat` and `schedstat` read under `fs`;
/// `None` when it is gone.
pub fn read_thread(fs: &FsRoot, pid: i32, tid: i32) -> Option<ThreadTick> {
    read_thread_with(fs, pid, tid, true)
}

/// [`read_thread`]; its `schedstat` only when `sched` or when the
/// thread is runnable (a second read per thread: the first reading of a
/// machine of many sleeping threads leaves it out for those).
fn read_thread_with(fs: &FsRoot, pid: i32, tid: i32, sched: bool) -> Option<ThreadTick> {
    let text = fs.read_opt(format!("/proc/{pid}/task/{tid}/stat"))?;
    let mut t = thread(pid, tid, &text)?;
    if !sched && t.state != 'R' {
        return Some(t);
    }
    if let Some((run, wait)) = fs
        .read_opt(format!("/proc/{pid}/task/{tid}/schedstat"))
        .and_then(|s| parse_task_schedstat(&s))
    {
        t.run_ns = Some(run);
        t.wait_ns = Some(wait);
    }
    Some(t)
}

/// The threads named, as `(pid, tid)`, read now ([`read_thread`]); the
/// ones gone are left out.
pub fn read_threads_of(fs: &FsRoot, tids: &[(i32, i32)]) -> Vec<ThreadTick> {
    tids.iter()
        .filter_map(|&(pid, tid)| read_thread(fs, pid, tid))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_kernel_threads() {
        // ksoftirqd/3: PF_KTHREAD | PF_NO_SETAFFINITY | others.
        let text = "30 (ksoftirqd/3) S 2 0 0 0 -1 69238848 0 0 0 0 0 1234 0 0 20 0 1 0 \
                    12 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 3 0 0 0 0 0";
        let t = thread(30, 30, text).unwrap();
        assert_eq!(t.flags, 69238848);
        assert!(t.is_kernel() && t.is_percpu_kernel());
        assert_eq!(t.last_cpu, Some(3));
        assert_eq!(t.ticks, 1234);
        assert_eq!(stat_ticks(text), Some(1234));
        let user = "7 (a b) c) R 1 7 7 0 -1 4194560 0 0 0 0 50 25 0 0 20 0 1 0 \
                    99 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
        let t = thread(7, 7, user).unwrap();
        assert_eq!(t.comm, "a b) c");
        assert!(!t.is_kernel());
        assert_eq!(t.ticks, 75);
    }
}
