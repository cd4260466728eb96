//! What `/proc` says about a process's threads, read through [`FsRoot`].
//!
//! The parsers are pure functions over the file text so they are tested on
//! fixed strings; the readers only fetch the text.

use crate::fsroot::FsRoot;
use pinsight_cpuset::CpuSet;

/// The fields of `/proc/PID/task/TID/stat` pinsight uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskStat {
    /// Thread name (`comm`, at most 15 bytes; may contain spaces and ')').
    pub comm: String,
    /// State letter: R, S, D, Z, ...
    pub state: char,
    /// Start time after boot, in clock ticks (field 22).
    pub start_ticks: u64,
    /// CPU the thread last ran on (field 39).
    pub last_cpu: Option<usize>,
    /// User plus system CPU time in clock ticks (fields 14 and 15;
    /// [`clock_ticks`] per second), when present.
    pub cpu_ticks: Option<u64>,
}

/// Parses a `stat` line. The name sits between the first '(' and the
/// *last* ')', since a name may itself contain ')'.
pub fn parse_stat(text: &str) -> Option<TaskStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close < open {
        return None;
    }
    let comm = text[open + 1..close].to_string();
    // Fields after the name start with field 3 (state).
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3).copied();
    let state = field(3)?.chars().next()?;
    let start_ticks = field(22)?.parse().ok()?;
    let last_cpu = field(39).and_then(|s| s.parse().ok());
    let ticks = |n: usize| field(n).and_then(|s| s.parse::<u64>().ok());
    let cpu_ticks = ticks(14).zip(ticks(15)).map(|(u, s)| u.saturating_add(s));
    Some(TaskStat {
        comm,
        state,
        start_ticks,
        last_cpu,
        cpu_ticks,
    })
}

/// `Cpus_allowed_list` from a `status` file.
pub fn parse_status_allowed(text: &str) -> Option<CpuSet> {
    let line = text.lines().find(|l| l.starts_with("Cpus_allowed_list:"))?;
    CpuSet::parse_list(line["Cpus_allowed_list:".len()..].trim()).ok()
}

/// `Uid:` (real uid) from a `status` file.
pub fn parse_status_uid(text: &str) -> Option<u32> {
    let line = text.lines().find(|l| l.starts_with("Uid:"))?;
    line[4..].split_whitespace().next()?.parse().ok()
}

/// The TIDs of process `pid`, ascending (numerically); empty if it is gone.
pub fn tids(fs: &FsRoot, pid: i32) -> Vec<i32> {
    let mut v: Vec<i32> = fs
        .list_dir(format!("/proc/{pid}/task"))
        .iter()
        .filter_map(|n| n.parse().ok())
        .collect();
    v.sort_unstable();
    v
}

/// Whether `/proc/PID` exists (a zombie still does).
pub fn process_exists(fs: &FsRoot, pid: i32) -> bool {
    fs.exists(format!("/proc/{pid}/stat"))
}

/// The stat fields of one thread, `None` if it has exited.
pub fn task_stat(fs: &FsRoot, pid: i32, tid: i32) -> Option<TaskStat> {
    parse_stat(&fs.read_opt(format!("/proc/{pid}/task/{tid}/stat"))?)
}

/// The affinity `/proc` reports for one thread (`Cpus_allowed_list`).
pub fn task_allowed(fs: &FsRoot, pid: i32, tid: i32) -> Option<CpuSet> {
    parse_status_allowed(&fs.read_opt(format!("/proc/{pid}/task/{tid}/status"))?)
}

/// CPU time (ns) the thread has run so far, from `schedstat` (field 1);
/// `None` when the kernel has no schedstats.
pub fn task_runtime_ns(fs: &FsRoot, pid: i32, tid: i32) -> Option<u64> {
    fs.read_opt(format!("/proc/{pid}/task/{tid}/schedstat"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A thread's run time so far, ns: `schedstat` field 1 (the scheduler's
/// exact `sum_exec_runtime`) where the kernel keeps schedstats, else the
/// `utime + stime` ticks of its `stat` (`stat` when the caller has read
/// it, else read here) at [`clock_ticks`] per second; `None` when the
/// thread is gone.
pub fn task_run_ns(fs: &FsRoot, pid: i32, tid: i32, stat: Option<&TaskStat>) -> Option<u64> {
    if let Some(ns) = task_runtime_ns(fs, pid, tid) {
        return Some(ns);
    }
    let ticks = match stat {
        Some(s) => s.cpu_ticks,
        None => task_stat(fs, pid, tid)?.cpu_ticks,
    }?;
    Some(ticks.saturating_mul(1_000_000_000 / clock_ticks().max(1)))
}

/// Per CPU, the run time so far (ns, [`task_run_ns`]) of every thread of
/// the processes in `procs`, each `(cpu, pid)` credited whole to `cpu`:
/// an emulation's stealers, each pinned to the CPU it slows, whose time
/// is the CPU's lower capacity rather than work on it. Also returns the
/// entries of `procs` none of whose threads could be listed (gone, or not
/// in a recording). The one reading of that time: `load`'s busy time and
/// every measurement's disturbance take it off the same way.
pub fn run_ns_by_cpu(
    fs: &FsRoot,
    procs: &[(usize, i32)],
) -> (std::collections::BTreeMap<usize, u64>, Vec<(usize, i32)>) {
    let mut out = std::collections::BTreeMap::new();
    let mut unread = Vec::new();
    for &(cpu, pid) in procs {
        let threads = tids(fs, pid);
        if threads.is_empty() {
            unread.push((cpu, pid));
        }
        for tid in threads {
            if let Some(ns) = task_run_ns(fs, pid, tid, None) {
                let total = out.entry(cpu).or_insert(0u64);
                *total = total.saturating_add(ns);
            }
        }
    }
    (out, unread)
}

/// The processes thread `tid` of `pid` started (`/proc/PID/task/TID/children`,
/// kernels with `CONFIG_PROC_CHILDREN`); `None` when the file is missing.
pub fn task_children(fs: &FsRoot, pid: i32, tid: i32) -> Option<Vec<i32>> {
    let text = fs.read_opt(format!("/proc/{pid}/task/{tid}/children"))?;
    Some(
        text.split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect(),
    )
}

/// The first word of a process's command line (`/proc/PID/cmdline` up to
/// the first NUL); `None` when gone or empty (kernel threads, zombies).
pub fn process_argv0(fs: &FsRoot, pid: i32) -> Option<String> {
    let text = fs.read_opt(format!("/proc/{pid}/cmdline"))?;
    let first = text.split('\0').next()?;
    (!first.is_empty()).then(|| first.to_string())
}

/// The real uid owning process `pid`.
pub fn process_uid(fs: &FsRoot, pid: i32) -> Option<u32> {
    parse_status_uid(&fs.read_opt(format!("/proc/{pid}/status"))?)
}

/// Clock ticks per second for `start_ticks`.
pub fn clock_ticks() -> u64 {
    crate::sched::clock_ticks()
}

/// Now, on the clock `start_ticks` counts from (boot, suspend included), in ns.
pub fn boottime_ns() -> u64 {
    crate::sched::boottime_ns()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str =
        "4242 (we(ird) name) S 1 4242 4242 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 3 0 987654 \
        10000000 500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0";

    #[test]
    fn stat_name_may_hold_parentheses_and_spaces() {
        let s = parse_stat(STAT).unwrap();
        assert_eq!(s.comm, "we(ird) name");
        assert_eq!(s.state, 'S');
        assert_eq!(s.start_ticks, 987654);
        assert_eq!(s.last_cpu, Some(1));
        assert_eq!(s.cpu_ticks, Some(4));
    }

    #[test]
    fn truncated_stat_is_none_or_partial() {
        assert!(parse_stat("12 (x").is_none());
        assert!(parse_stat("12 (x) S 1").is_none());
    }

    #[test]
    fn status_fields() {
        let st =
            "Name:\tx\nUid:\t1000\t1000\t1000\t1000\nCpus_allowed:\t3\nCpus_allowed_list:\t0-1\n";
        assert_eq!(parse_status_allowed(st).unwrap().to_list_string(), "0-1");
        assert_eq!(parse_status_uid(st), Some(1000));
        assert!(parse_status_allowed("Name: x\n").is_none());
    }

    #[test]
    fn reads_own_threads_live() {
        let fs = FsRoot::live();
        let pid = std::process::id() as i32;
        let tids = tids(&fs, pid);
        assert!(tids.contains(&pid));
        let st = task_stat(&fs, pid, pid).unwrap();
        assert!(st.last_cpu.is_some());
        assert!(task_allowed(&fs, pid, pid).is_some());
        assert!(st.cpu_ticks.is_some());
        let argv0 = process_argv0(&fs, pid).unwrap();
        assert!(!argv0.is_empty());
    }
}
