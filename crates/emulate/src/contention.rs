//! What else takes the CPUs an emulation is about to measure, before it
//! calibrates: other real-time tasks allowed there (another emulation's
//! stealer, an audio server gone busy) and hypervisor steal. The
//! calibration probes run `SCHED_FIFO` at priority 1: ordinary load does
//! not move them, but a real-time task of higher priority and steal do,
//! and the knob would be tuned to the machine as it is now (a second
//! emulation beside one taking 47% of CPU 1 tuned its own stealer to 3%,
//! and CPU 1 ran at 97% once the first one ended).
//!
//! Sampled over one window through [`FsRoot`]: `/proc/stat` per CPU
//! (busy and steal ticks), and every user-space thread's
//! `/proc/PID/task/TID/stat` (policy, field 41; CPU time, fields 14 and
//! 15; kernel threads, flag `PF_KTHREAD` in field 9, are the kernel's own
//! per-CPU work and left out) with its `Cpus_allowed_list`.

use pinsight_cpuset::CpuSet;
use pinsight_sys::FsRoot;
use pinsight_sys::{cpustat, procfs};
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Above this share of a target CPU, other real-time tasks or steal make
/// the calibration refuse (without `force`).
pub const THRESHOLD: f64 = 0.10;

/// How long the CPUs are watched before calibrating.
pub const WINDOW: Duration = Duration::from_millis(400);

/// `PF_KTHREAD` (include/linux/sched.h): a kernel thread.
const PF_KTHREAD: u64 = 0x0020_0000;

/// One target CPU over the window, as shares of its time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuLoad {
    pub cpu: usize,
    /// Time something ran there (ordinary load included; the probes run
    /// real-time and do not see it).
    pub busy: f64,
    /// Time the hypervisor gave to something else.
    pub steal: f64,
    /// Time the real-time tasks allowed only there took (those allowed on
    /// several CPUs are named but not charged to one).
    pub realtime: f64,
}

/// A user-space real-time thread allowed on a target CPU.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RealtimeTask {
    pub pid: i32,
    pub tid: i32,
    pub comm: String,
    /// `SCHED_FIFO` or `SCHED_RR`.
    pub policy: String,
    /// Its real-time priority (1-99).
    pub priority: u32,
    /// The CPUs it may run on.
    pub cpus: String,
    /// Its CPU time over the window, as a share of one CPU.
    pub share: f64,
}

/// What the CPUs were doing before the calibration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Contention {
    pub window_ms: u64,
    /// The refusal threshold, as a share of one CPU.
    pub threshold: f64,
    pub cpus: Vec<CpuLoad>,
    /// Real-time threads allowed on the target CPUs, busiest first.
    pub realtime_tasks: Vec<RealtimeTask>,
    /// Calibrated anyway over the threshold (`--force`).
    pub forced: bool,
}

impl Contention {
    /// One line per reason the calibration would measure other work, in
    /// words (empty: the CPUs are free).
    pub fn over_threshold(&self) -> Vec<String> {
        let mut out = Vec::new();
        for t in &self.realtime_tasks {
            if t.share > self.threshold {
                out.push(format!(
                    "PID {} ({}, {} priority {}, CPUs {}) took {:.0}% of a CPU",
                    t.pid,
                    t.comm,
                    t.policy,
                    t.priority,
                    t.cpus,
                    t.share * 100.0
                ));
            }
        }
        for c in &self.cpus {
            if c.steal > self.threshold {
                out.push(format!(
                    "the hypervisor stole {:.0}% of CPU {}",
                    c.steal * 100.0,
                    c.cpu
                ));
            }
        }
        out
    }
}

/// The fields of a task's `stat` this module reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RtStat {
    pub comm: String,
    /// Field 9.
    pub flags: u64,
    /// Fields 14 + 15, clock ticks.
    pub cpu_ticks: u64,
    /// Field 40.
    pub rt_priority: u32,
    /// Field 41 (1 FIFO, 2 RR).
    pub policy: u32,
}

/// Parses a `/proc/PID/task/TID/stat` line (the name sits between the
/// first '(' and the last ')').
pub fn parse_rt_stat(text: &str) -> Option<RtStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3).and_then(|s| s.parse::<u64>().ok());
    Some(RtStat {
        comm: text.get(open + 1..close)?.to_string(),
        flags: field(9)?,
        cpu_ticks: field(14)?.saturating_add(field(15)?),
        rt_priority: u32::try_from(field(40)?).ok()?,
        policy: u32::try_from(field(41)?).ok()?,
    })
}

fn policy_name(p: u32) -> Option<&'static str> {
    match p {
        1 => Some("SCHED_FIFO"),
        2 => Some("SCHED_RR"),
        _ => None,
    }
}

/// Every user-space real-time thread allowed on one of `cpus`, other than
/// this process's, with its CPU ticks now.
fn realtime_threads(fs: &FsRoot, cpus: &CpuSet) -> Vec<(RealtimeTask, u64)> {
    let me = std::process::id() as i32;
    let mut out = Vec::new();
    for name in fs.list_dir("/proc") {
        let Ok(pid) = name.parse::<i32>() else {
            continue;
        };
        if pid == me {
            continue;
        }
        for tid in procfs::tids(fs, pid) {
            let Some(st) = fs
                .read_opt(format!("/proc/{pid}/task/{tid}/stat"))
                .and_then(|t| parse_rt_stat(&t))
            else {
                continue;
            };
            let Some(policy) = policy_name(st.policy) else {
                continue;
            };
            if st.flags & PF_KTHREAD != 0 {
                continue;
            }
            let Some(allowed) = procfs::task_allowed(fs, pid, tid) else {
                continue;
            };
            if !allowed.iter().any(|c| cpus.contains(c)) {
                continue;
            }
            out.push((
                RealtimeTask {
                    pid,
                    tid,
                    comm: st.comm,
                    policy: policy.to_string(),
                    priority: st.rt_priority,
                    cpus: allowed.to_string(),
                    share: 0.0,
                },
                st.cpu_ticks,
            ));
        }
    }
    out
}

/// Watches `cpus` for `window` (see the module documentation).
pub fn measure(fs: &FsRoot, cpus: &CpuSet, window: Duration) -> Contention {
    let stat0 = cpustat::read_proc_stat(fs);
    let totals0 = cpu_totals(fs);
    let before = realtime_threads(fs, cpus);
    let t0 = Instant::now();
    std::thread::sleep(window);
    let stat1 = cpustat::read_proc_stat(fs);
    let totals1 = cpu_totals(fs);
    let after = realtime_threads(fs, cpus);
    let secs = t0.elapsed().as_secs_f64().max(1e-3);
    let hz = procfs::clock_ticks().max(1) as f64;
    let mut tasks: Vec<RealtimeTask> = after
        .into_iter()
        .map(|(mut t, ticks)| {
            let was = before
                .iter()
                .find(|(b, _)| b.pid == t.pid && b.tid == t.tid)
                .map_or(ticks, |(_, w)| *w);
            t.share = ticks.saturating_sub(was) as f64 / hz / secs;
            t
        })
        .collect();
    tasks.sort_by(|a, b| b.share.total_cmp(&a.share));
    let loads = cpus
        .iter()
        .map(|cpu| {
            let delta = |f: fn(&cpustat::CpuTicks) -> u64| -> f64 {
                let a = stat0.as_ref().and_then(|s| s.cpus.get(&cpu)).map(f);
                let b = stat1.as_ref().and_then(|s| s.cpus.get(&cpu)).map(f);
                let total = totals0
                    .get(&cpu)
                    .zip(totals1.get(&cpu))
                    .map_or(0, |(x, y)| y.saturating_sub(*x));
                match (a, b) {
                    (Some(a), Some(b)) if total > 0 => b.saturating_sub(a) as f64 / total as f64,
                    _ => 0.0,
                }
            };
            let single = CpuSet::single(cpu).to_string();
            CpuLoad {
                cpu,
                busy: delta(|t| t.busy),
                steal: delta(|t| t.steal),
                realtime: tasks
                    .iter()
                    .filter(|t| t.cpus == single)
                    .fold(0.0, |sum, t| sum + t.share),
            }
        })
        .collect();
    Contention {
        window_ms: window.as_millis() as u64,
        threshold: THRESHOLD,
        cpus: loads,
        realtime_tasks: tasks,
        forced: false,
    }
}

/// Each CPU's whole time in `/proc/stat` (every field), by CPU.
fn cpu_totals(fs: &FsRoot) -> BTreeMap<usize, u64> {
    fs.read_opt("/proc/stat")
        .map(|t| {
            cpustat::parse_cpu_fields(&t)
                .into_iter()
                .map(|(c, f)| (c, f.total()))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stealer's line: FIFO priority 2, 47 + 3 ticks, flags of a user
    /// task; a kernel thread's flags carry PF_KTHREAD.
    const STEALER: &str =
        "4425 (pin sight)) R 4424 4425 4424 0 -1 4194560 0 0 0 0 47 3 0 0 -3 0 1 0 \
        100 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 2 1 0 0 0";

    #[test]
    fn stat_fields_of_a_realtime_thread() {
        let s = parse_rt_stat(STEALER).unwrap();
        assert_eq!(s.comm, "pin sight)");
        assert_eq!((s.cpu_ticks, s.rt_priority, s.policy), (50, 2, 1));
        assert_eq!(s.flags & PF_KTHREAD, 0);
        assert_eq!(policy_name(1), Some("SCHED_FIFO"));
        assert_eq!(policy_name(0), None);
        assert!(parse_rt_stat("12 (x) S 1").is_none());
    }

    #[test]
    fn only_what_passes_the_threshold_is_a_reason() {
        let task = |share: f64| RealtimeTask {
            pid: 7,
            tid: 7,
            comm: "pinsight".into(),
            policy: "SCHED_FIFO".into(),
            priority: 2,
            cpus: "1".into(),
            share,
        };
        let mut c = Contention {
            window_ms: 400,
            threshold: THRESHOLD,
            cpus: vec![CpuLoad {
                cpu: 1,
                busy: 0.5,
                steal: 0.0,
                realtime: 0.47,
            }],
            realtime_tasks: vec![task(0.47), task(0.01)],
            forced: false,
        };
        let why = c.over_threshold();
        assert_eq!(why.len(), 1, "{why:?}");
        assert!(why[0].contains("PID 7 (pinsight, SCHED_FIFO priority 2, CPUs 1) took 47%"));
        c.realtime_tasks.clear();
        c.cpus[0].steal = 0.2;
        assert_eq!(
            c.over_threshold(),
            ["the hypervisor stole 20% of CPU 1".to_string()]
        );
        c.cpus[0].steal = 0.0;
        assert!(c.over_threshold().is_empty(), "busy alone is no reason");
    }
}
