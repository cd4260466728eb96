//! Disturbance: how much of the plan's CPUs something other than the
//! measured program took during a run, and how much the hypervisor stole.
//!
//! Source: `/proc/stat` read once just before the spawn and once just
//! after the exit ([`pinsight_sys::cpustat`]). Back-to-back runs of one
//! measurer share a read: the read after a run is the next run's "before"
//! when that run starts within [`SHARED_SAMPLE_MAX_AGE`] and
//! no other program was started in between, so the next run's interval
//! also covers that gap (what pinsight did in it is its own time,
//! subtracted below). For the plan's CPUs `C`:
//!
//! ```text
//! other(C) = Σ_c∈C busy_c − (program user+sys from wait4) − (pinsight's own CPU time)
//! ```
//!
//! **The total is exact** to one `USER_HZ` tick per CPU (10 ms at the usual
//! 100 Hz; proc(5)) when the program ran only on `C`: a pinned arm's
//! threads are confined there, and under the OS arm `C` is every CPU.
//! pinsight's own time (the waiting thread, the watcher) is subtracted as
//! if it ran on `C` too; where it did not, `other` is low by at most that
//! much (microseconds for a run without the watcher). Processes the
//! program left behind and never waited for are not in its rusage
//! (getrusage(2), `RUSAGE_CHILDREN`) and count as other work.
//!
//! **The split per CPU is an estimate**: the kernel does not say on which
//! CPU the program's time was spent, so it is shared out in proportion to
//! each CPU's busy time. A CPU's estimate can be off by up to the share of
//! the program's time given to it; for a program that barely uses the CPU
//! (a sleeping or I/O-bound one) it is exact, and for a CPU-bound program
//! on `C` with another job beside it the disturbance is spread over `C`.
//! [`CpuDisturbance::share_min`] is the share that is certain whatever the
//! split. A run is flagged when some CPU's estimate, less one tick, is
//! over the threshold: runs shorter than a few ticks are never flagged
//! (their disturbance cannot be told from the tick resolution).
//!
//! Steal (`/proc/stat` column 8) is time a virtual CPU was ready to run but
//! the hypervisor ran something else (kernel `Documentation/admin-guide/
//! cpu-load.rst` and `kernel/sched/cputime.c`); it is reported apart.
//!
//! **Inside `pinsight emulate`** (duty-cycle), the stealers' run time on
//! their CPUs ([`pinsight_emulate::stealers_from_env`], read with
//! [`pinsight_sys::procfs::run_ns_by_cpu`] at each sample, as `load` reads
//! it) is taken off each CPU's busy time before the estimate: a stealer
//! is the emulated machine's lower capacity, not other work, so compare,
//! tune, mix, latency and speed runs on the emulated E CPU are not all
//! flagged as disturbed by half (and not rerun under
//! `--rerun-disturbed`). What was taken off is `emulation_s`.

use pinsight_cpuset::CpuSet;
use pinsight_sys::cpustat::{self, ProcStat};
use pinsight_sys::FsRoot;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Instant;

/// Share of a CPU's time (0.05 = 5%) over which a run is disturbed,
/// unless the command line says otherwise.
pub const DEFAULT_THRESHOLD: f64 = 0.05;

/// How old the read of `/proc/stat` after a run may be to serve as the
/// next run's "before" read (see the module's doc): the most a run's
/// interval can grow by, so the most a share can be diluted by is this
/// over the run's length (3% for a 30 ms run, the shortest a 100 Hz tick
/// can flag).
pub const SHARED_SAMPLE_MAX_AGE: std::time::Duration = std::time::Duration::from_millis(1);

/// Per-CPU entries below this share (1%) are left out of the record.
const KEEP_SHARE: f64 = 0.01;

/// One read of `/proc/stat`, of pinsight's own CPU time and of the
/// emulation's stealers' run time.
#[derive(Clone, Debug)]
pub struct Sample {
    stat: ProcStat,
    at: Instant,
    harness_s: f64,
    /// Per CPU, the run time so far (ns) of the emulation's stealers on it.
    emulation_ns: BTreeMap<usize, u64>,
}

/// The stealers of the emulation this process runs in, read once.
fn stealers() -> &'static [(usize, i32)] {
    static STEALERS: std::sync::OnceLock<Vec<(usize, i32)>> = std::sync::OnceLock::new();
    STEALERS.get_or_init(pinsight_emulate::stealers_from_env)
}

impl Sample {
    /// Reads `/proc/stat` under `fs` (`None` if it cannot be read: the
    /// record then has no disturbance, never a fake zero).
    pub fn take(fs: &FsRoot) -> Option<Sample> {
        Sample::take_from(fs, &mut cpustat::StatFile::open(fs))
    }

    /// [`Sample::take`] through a `/proc/stat` kept open (`stat`, opened
    /// on `fs`): what the measurer does before and after each run.
    pub fn take_from(fs: &FsRoot, stat: &mut cpustat::StatFile) -> Option<Sample> {
        let harness_s = pinsight_sys::process::self_cpu_s();
        let emulation_ns = pinsight_sys::procfs::run_ns_by_cpu(fs, stealers()).0;
        let stat = stat.read(fs)?;
        Some(Sample {
            stat,
            at: Instant::now(),
            harness_s,
            emulation_ns,
        })
    }

    /// Time since this sample was taken.
    pub fn age(&self) -> std::time::Duration {
        self.at.elapsed()
    }

    /// A sample from parts (tests, recorded machines).
    pub fn from_parts(stat: ProcStat, at: Instant, harness_s: f64) -> Sample {
        Sample {
            stat,
            at,
            harness_s,
            emulation_ns: BTreeMap::new(),
        }
    }

    /// This sample with the emulation's stealers' run time so far (ns)
    /// per CPU (tests, recorded machines).
    pub fn with_emulation_ns(mut self, emulation_ns: BTreeMap<usize, u64>) -> Sample {
        self.emulation_ns = emulation_ns;
        self
    }
}

/// One CPU of the plan that other work (or the hypervisor) took a share of.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CpuDisturbance {
    pub cpu: usize,
    /// Estimated share (0–1) of the run's time this CPU spent on other work.
    pub share: f64,
    /// The share that is certain whatever the program's own split: this
    /// CPU's busy time beyond all the program's time, less one tick.
    pub share_min: f64,
    /// Share of the run's time stolen by the hypervisor from this CPU.
    pub steal_share: f64,
}

/// The disturbance of one run (JSON: the `disturbance` object of a run).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Disturbance {
    /// The threshold the run was judged with.
    pub threshold: f64,
    /// Some CPU of the plan was disturbed over the threshold.
    pub disturbed: bool,
    /// The plan's CPUs.
    pub plan_cpus: String,
    /// Time between the two reads, s (the denominator of every share).
    pub interval_s: f64,
    /// CPU time on the plan's CPUs not spent by the program or pinsight, s.
    pub other_s: f64,
    /// Time stolen by the hypervisor from the plan's CPUs, summed, s.
    pub steal_s: f64,
    /// Run time of the emulation's stealers on the plan's CPUs, s: the
    /// emulated machine's lower capacity, taken off the busy time before
    /// the estimate (0 outside `pinsight emulate`).
    #[serde(default)]
    pub emulation_s: f64,
    /// One `USER_HZ` tick, s: the resolution of every per-CPU figure.
    pub resolution_s: f64,
    /// `procs_running` before and after the run (pinsight's reading thread
    /// included): runnable tasks system-wide.
    pub runnable_before: Option<u64>,
    pub runnable_after: Option<u64>,
    /// The plan's CPUs with a share of 1% or more, most disturbed first.
    pub cpus: Vec<CpuDisturbance>,
}

impl Disturbance {
    /// Whether other work took `cpu` over the threshold in this run.
    pub fn disturbed_cpu(&self, cpu: usize) -> bool {
        self.disturbed
            && self
                .cpus
                .iter()
                .any(|c| c.cpu == cpu && c.share >= self.threshold)
    }

    /// The most disturbed CPU and its estimated share.
    pub fn worst(&self) -> Option<(usize, f64)> {
        self.cpus
            .iter()
            .max_by(|a, b| a.share.total_cmp(&b.share))
            .map(|c| (c.cpu, c.share))
    }

    /// One human sentence when this measurement was disturbed or the
    /// hypervisor stole over the threshold; `None` otherwise.
    pub fn note(&self) -> Option<String> {
        let mut parts = Vec::new();
        if let (true, Some((cpu, share))) = (self.disturbed, self.worst()) {
            parts.push(format!(
                "other work took {:.0}% of CPU {cpu} (over {:.0}%)",
                share * 100.0,
                self.threshold * 100.0
            ));
        }
        if let Some((cpu, st)) = self.worst_steal().filter(|s| s.1 > self.threshold) {
            parts.push(format!(
                "the hypervisor stole {:.0}% of CPU {cpu}",
                st * 100.0
            ));
        }
        (!parts.is_empty()).then(|| format!("disturbance: {}", parts.join("; ")))
    }

    /// The CPU the hypervisor stole most from, and that share.
    pub fn worst_steal(&self) -> Option<(usize, f64)> {
        self.cpus
            .iter()
            .filter(|c| c.steal_share > 0.0)
            .max_by(|a, b| a.steal_share.total_cmp(&b.steal_share))
            .map(|c| (c.cpu, c.steal_share))
    }
}

/// Computes the disturbance between `before` and `after` on `plan` (every
/// CPU in `/proc/stat` when `None`), given the program's own CPU time
/// (`program_s`, user + sys) and `hz` ticks per second. Pure.
pub fn estimate(
    before: &Sample,
    after: &Sample,
    plan: Option<&CpuSet>,
    program_s: f64,
    hz: u64,
    threshold: f64,
) -> Disturbance {
    let tick = 1.0 / hz.max(1) as f64;
    let interval = after.at.saturating_duration_since(before.at).as_secs_f64();
    let harness = (after.harness_s - before.harness_s).max(0.0);
    let own = (program_s.max(0.0) + harness).max(0.0);
    // (cpu, busy s, steal s) over the plan's CPUs seen in both reads.
    let deltas: Vec<(usize, f64, f64)> = after
        .stat
        .cpus
        .iter()
        .filter(|(c, _)| plan.is_none_or(|p| p.contains(**c)))
        .filter_map(|(c, a)| {
            let b = before.stat.cpus.get(c)?;
            let busy = a.busy.saturating_sub(b.busy) as f64 * tick;
            let steal = a.steal.saturating_sub(b.steal) as f64 * tick;
            Some((*c, busy, steal))
        })
        .collect();
    // The stealers' time, off each CPU's busy time (never below zero).
    let mut emulation_s = 0.0;
    let deltas: Vec<(usize, f64, f64)> = deltas
        .into_iter()
        .map(|(c, busy, steal)| {
            let ran = match (before.emulation_ns.get(&c), after.emulation_ns.get(&c)) {
                (Some(&b), Some(&a)) => a.saturating_sub(b) as f64 / 1e9,
                _ => 0.0,
            };
            let taken = ran.min(busy);
            emulation_s += taken;
            (c, busy - taken, steal)
        })
        .collect();
    let total_busy: f64 = deltas.iter().map(|d| d.1).sum();
    let steal_s: f64 = deltas.iter().map(|d| d.2).sum();
    let other_s = (total_busy - own).max(0.0);
    let share = |s: f64| {
        if interval > 0.0 {
            (s / interval).clamp(0.0, 1.0)
        } else {
            0.0
        }
    };
    let mut disturbed = false;
    let mut cpus: Vec<CpuDisturbance> = deltas
        .iter()
        .map(|&(cpu, busy, steal)| {
            let other = if total_busy > 0.0 {
                busy * other_s / total_busy
            } else {
                0.0
            };
            disturbed |= share(other - tick) > threshold;
            CpuDisturbance {
                cpu,
                share: share(other),
                share_min: share(busy - own - tick),
                steal_share: share(steal),
            }
        })
        .filter(|c| c.share >= KEEP_SHARE || c.steal_share >= KEEP_SHARE)
        .collect();
    cpus.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.cpu.cmp(&b.cpu)));
    let plan_cpus = match plan {
        Some(p) => p.to_string(),
        None => deltas.iter().map(|d| d.0).collect::<CpuSet>().to_string(),
    };
    Disturbance {
        threshold,
        disturbed,
        plan_cpus,
        interval_s: interval,
        other_s,
        steal_s,
        emulation_s,
        resolution_s: tick,
        runnable_before: before.stat.procs_running,
        runnable_after: after.stat.procs_running,
        cpus,
    }
}

/// Disturbance over many runs, for a verdict or a report line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Runs with a disturbance measurement.
    pub measured: usize,
    /// Of those, runs over the threshold.
    pub disturbed: usize,
    /// The most disturbed CPU over every disturbed run, and its share.
    pub worst_cpu: Option<usize>,
    pub worst_share: Option<f64>,
    /// The largest share the hypervisor stole from one CPU in one run.
    pub max_steal_share: Option<f64>,
    /// The threshold (the largest seen, when runs differ).
    pub threshold: Option<f64>,
}

impl Summary {
    /// Summarises the runs' disturbances.
    pub fn of<'a>(runs: impl IntoIterator<Item = &'a Disturbance>) -> Summary {
        let mut s = Summary::default();
        for d in runs {
            s.measured += 1;
            s.threshold = Some(s.threshold.map_or(d.threshold, |t: f64| t.max(d.threshold)));
            if let Some((_, st)) = d.worst_steal() {
                s.max_steal_share = Some(s.max_steal_share.map_or(st, |m: f64| m.max(st)));
            }
            if !d.disturbed {
                continue;
            }
            s.disturbed += 1;
            if let Some((cpu, share)) = d.worst() {
                if s.worst_share.is_none_or(|w| share > w) {
                    s.worst_cpu = Some(cpu);
                    s.worst_share = Some(share);
                }
            }
        }
        s
    }

    /// One human sentence, when some run was disturbed or the hypervisor
    /// stole over the threshold; `None` when nothing is worth saying.
    pub fn note(&self) -> Option<String> {
        let t = self.threshold.unwrap_or(DEFAULT_THRESHOLD);
        let mut parts = Vec::new();
        if self.disturbed > 0 {
            let worst = match (self.worst_cpu, self.worst_share) {
                (Some(c), Some(s)) => format!("; worst: CPU {c}, {:.0}% of the run", s * 100.0),
                _ => String::new(),
            };
            parts.push(format!(
                "{} of {} runs disturbed by other work on their CPUs (over {:.0}%{worst})",
                self.disturbed,
                self.measured,
                t * 100.0
            ));
        }
        if let Some(st) = self.max_steal_share.filter(|s| *s > t) {
            parts.push(format!(
                "the hypervisor stole up to {:.0}% of a CPU",
                st * 100.0
            ));
        }
        if parts.is_empty() {
            None
        } else {
            Some(format!("disturbance: {}", parts.join("; ")))
        }
    }
}

/// Measures the disturbance of a stretch of work done by this process and
/// the children it waits for meanwhile (speed and latency measurements,
/// mix's programs): `start` before, `finish` after. Children still running
/// at `finish`, or reaped by someone else, count as other work.
#[derive(Debug)]
pub struct Watch {
    fs: FsRoot,
    before: Option<Sample>,
    self_before: f64,
}

impl Watch {
    /// Reads `/proc/stat` now.
    pub fn start(fs: &FsRoot) -> Watch {
        Watch {
            fs: fs.clone(),
            before: Sample::take(fs),
            self_before: own_cpu_s(),
        }
    }

    /// The disturbance since [`Watch::start`] on `plan`: this process's own
    /// CPU time and its waited-for children's are the "program". `None` if
    /// `/proc/stat` cannot be read.
    pub fn finish(self, plan: Option<&CpuSet>, threshold: f64) -> Option<Disturbance> {
        let own = own_cpu_s() - self.self_before;
        let mut after = Sample::take(&self.fs)?;
        let before = self.before?;
        // The process is the program here: do not count it twice.
        after.harness_s = before.harness_s;
        Some(estimate(
            &before,
            &after,
            plan,
            own,
            pinsight_sys::procfs::clock_ticks(),
            threshold,
        ))
    }
}

/// This process's CPU time and its waited-for children's, s.
fn own_cpu_s() -> f64 {
    pinsight_sys::process::self_cpu_s() + pinsight_sys::process::children_cpu_s()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pinsight_sys::cpustat::CpuTicks;
    use std::time::Duration;

    fn stat(cpus: &[(usize, u64, u64)], running: u64) -> ProcStat {
        ProcStat {
            cpus: cpus
                .iter()
                .map(|&(c, busy, steal)| (c, CpuTicks { busy, steal }))
                .collect(),
            procs_running: Some(running),
        }
    }

    fn pair(b: ProcStat, a: ProcStat, secs: f64) -> (Sample, Sample) {
        let t0 = Instant::now();
        (
            Sample::from_parts(b, t0, 1.0),
            Sample::from_parts(a, t0 + Duration::from_secs_f64(secs), 1.0),
        )
    }

    #[test]
    fn an_emulations_stealers_are_not_other_work() {
        // 1 s; CPU 1 busy all along, half of it an emulation's stealer.
        let (b, a) = pair(
            stat(&[(0, 1000, 0), (1, 1000, 0)], 1),
            stat(&[(0, 1000, 0), (1, 1100, 0)], 2),
            1.0,
        );
        let ns = |v: &[(usize, u64)]| v.iter().copied().collect::<BTreeMap<usize, u64>>();
        let b = b.with_emulation_ns(ns(&[(1, 7_000_000_000), (7, 1)]));
        let half = a
            .clone()
            .with_emulation_ns(ns(&[(1, 7_500_000_000), (7, 1_000_000_001)]));
        let d = estimate(&b, &half, None, 0.0, 100, 0.05);
        assert_eq!(d.worst(), Some((1, 0.5)));
        assert!((d.other_s - 0.5).abs() < 1e-9);
        assert!((d.emulation_s - 0.5).abs() < 1e-9, "{d:?}");
        // All of it the stealer's: nothing else ran.
        let all = a.clone().with_emulation_ns(ns(&[(1, 8_000_000_000)]));
        let d = estimate(&b, &all, None, 0.0, 100, 0.05);
        assert!(!d.disturbed && d.other_s == 0.0, "{d:?}");
        // Never below zero: more stealer time than busy time leaves none.
        let more = a.clone().with_emulation_ns(ns(&[(1, 99_000_000_000)]));
        let d = estimate(&b, &more, None, 0.0, 100, 0.05);
        assert_eq!(d.other_s, 0.0);
        assert!((d.emulation_s - 1.0).abs() < 1e-9, "{d:?}");
        // A stealer read in one sample only (started or gone between) is
        // not taken off: no fake figure.
        let d = estimate(
            &b,
            &a.with_emulation_ns(ns(&[(0, 5)])),
            None,
            0.0,
            100,
            0.05,
        );
        assert_eq!(d.emulation_s, 0.0);
        assert!(d.disturbed);
    }

    #[test]
    fn a_sleeping_program_beside_a_busy_loop_names_the_busy_cpu() {
        // 1 s; CPU 1 fully busy with something else, CPU 0 idle.
        let (b, a) = pair(
            stat(&[(0, 1000, 0), (1, 1000, 0)], 1),
            stat(&[(0, 1000, 0), (1, 1100, 0)], 2),
            1.0,
        );
        let d = estimate(&b, &a, None, 0.0, 100, 0.05);
        assert!(d.disturbed);
        assert_eq!(d.worst(), Some((1, 1.0)));
        assert_eq!(d.cpus.len(), 1);
        assert!((d.cpus[0].share_min - 0.99).abs() < 1e-9);
        assert!((d.other_s - 1.0).abs() < 1e-9);
        assert_eq!(d.plan_cpus, "0-1");
        assert_eq!((d.runnable_before, d.runnable_after), (Some(1), Some(2)));
        assert_eq!(
            d.note().as_deref(),
            Some("disturbance: other work took 100% of CPU 1 (over 5%)")
        );
    }

    #[test]
    fn the_programs_own_time_is_not_disturbance() {
        // The program used 1.9 s of two CPUs in 1 s: 0.1 s of other work.
        let (b, a) = pair(
            stat(&[(0, 0, 0), (1, 0, 0)], 1),
            stat(&[(0, 100, 0), (1, 100, 0)], 1),
            1.0,
        );
        let d = estimate(&b, &a, None, 1.9, 100, 0.05);
        assert!((d.other_s - 0.1).abs() < 1e-9);
        assert!(!d.disturbed, "0.05 per CPU less a tick is not over 5%");
        assert!(d.cpus.iter().all(|c| c.share_min == 0.0));
        // The whole program's time: nothing else.
        let d = estimate(&b, &a, None, 2.0, 100, 0.05);
        assert_eq!(d.other_s, 0.0);
        assert!(d.cpus.is_empty());
    }

    #[test]
    fn only_the_plans_cpus_count_and_steal_is_apart() {
        let (b, a) = pair(
            stat(&[(0, 0, 0), (1, 0, 0), (2, 0, 0)], 1),
            stat(&[(0, 100, 0), (1, 0, 30), (2, 50, 0)], 1),
            1.0,
        );
        let plan: CpuSet = [1usize, 2].into_iter().collect();
        let d = estimate(&b, &a, Some(&plan), 0.0, 100, 0.05);
        assert_eq!(d.plan_cpus, "1-2");
        assert_eq!(d.worst(), Some((2, 0.5)));
        assert_eq!(d.worst_steal(), Some((1, 0.3)));
        assert!((d.steal_s - 0.3).abs() < 1e-9);
        assert!(!d.cpus.iter().any(|c| c.cpu == 0));
    }

    #[test]
    fn short_runs_are_never_flagged_on_one_tick() {
        let (b, a) = pair(stat(&[(0, 0, 0)], 1), stat(&[(0, 1, 0)], 1), 0.005);
        let d = estimate(&b, &a, None, 0.0, 100, 0.05);
        assert!(!d.disturbed);
        assert_eq!(d.worst(), Some((0, 1.0)), "the estimate is clamped to 100%");
    }

    /// What the two reads add to every run (`cargo test --release -p
    /// pinsight-measure -- --ignored cost_of_the_reads --nocapture`).
    #[test]
    #[ignore = "timing probe, run by hand"]
    fn cost_of_the_reads() {
        let fs = FsRoot::live();
        let n = 2000;
        let t = Instant::now();
        for _ in 0..n {
            let b = Sample::take(&fs).unwrap();
            let a = Sample::take(&fs).unwrap();
            std::hint::black_box(estimate(&b, &a, None, 0.0, 100, 0.05));
        }
        eprintln!(
            "two /proc/stat reads + estimate: {:.1} µs per run",
            t.elapsed().as_secs_f64() / n as f64 * 1e6
        );
    }

    #[test]
    fn summary_counts_and_names_the_worst() {
        let mk = |disturbed, cpu, share, steal| Disturbance {
            threshold: 0.05,
            disturbed,
            plan_cpus: "0-1".into(),
            interval_s: 1.0,
            other_s: share,
            steal_s: steal,
            emulation_s: 0.0,
            resolution_s: 0.01,
            runnable_before: None,
            runnable_after: None,
            cpus: vec![CpuDisturbance {
                cpu,
                share,
                share_min: 0.0,
                steal_share: steal,
            }],
        };
        let runs = [
            mk(true, 1, 0.4, 0.0),
            mk(false, 0, 0.02, 0.0),
            mk(true, 0, 0.9, 0.1),
        ];
        let s = Summary::of(&runs);
        assert_eq!((s.measured, s.disturbed), (3, 2));
        assert_eq!((s.worst_cpu, s.worst_share), (Some(0), Some(0.9)));
        let n = s.note().unwrap();
        assert!(n.contains("2 of 3 runs disturbed"), "{n}");
        assert!(n.contains("CPU 0, 90%"), "{n}");
        assert!(n.contains("stole up to 10%"), "{n}");
        assert_eq!(Summary::of(&runs[1..2]).note(), None);
    }
}
