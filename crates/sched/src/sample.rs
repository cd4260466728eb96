//! The sampler: what each managed thread ran since the last look, read
//! from `/proc` through [`FsRoot`].
//!
//! Per thread, one period costs two small reads:
//! `/proc/PID/task/TID/schedstat` (run time in ns, field 1) and
//! `/proc/PID/task/TID/stat` (state, the CPU it last ran on, and
//! `utime + stime` in clock ticks). The schedstat run time is preferred
//! (nanoseconds); without schedstats (kernels built without
//! `CONFIG_SCHEDSTATS`) the stat ticks are used, at the clock-tick
//! resolution (10 ms at 100 Hz), and [`Sampler::resolution`] says so.
//!
//! **Where the time was spent.** `/proc` gives a thread's total CPU time and
//! the *last* CPU it ran on, not a split by CPU. The manager therefore
//! attributes a period's CPU time to the kind it pinned the thread to for
//! that period (the thread cannot run elsewhere while pinned); a thread not
//! pinned by us that period (new, or under the `os` policy) is attributed
//! by the CPU `stat` reports at the sample, which is exact for a thread
//! that stayed on one kind and an approximation for one that moved.

use pinsight_sys::procfs;
use pinsight_sys::FsRoot;
use serde::Serialize;

/// One thread at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ThreadSample {
    /// Its process.
    pub pid: i32,
    /// The thread.
    pub tid: i32,
    /// Its name (`comm`).
    pub comm: String,
    /// State letter (R running, S sleeping, Z zombie, ...).
    pub state: char,
    /// CPU time so far, ns (schedstat, else stat ticks converted).
    pub runtime_ns: u64,
    /// The CPU it last ran on.
    pub last_cpu: Option<usize>,
}

impl ThreadSample {
    /// Whether the thread is gone for scheduling purposes (zombie or dead).
    pub fn exited(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Which clock the run times come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Resolution {
    /// `schedstat`: nanoseconds.
    Schedstat,
    /// `stat` utime + stime: clock ticks.
    ClockTicks,
}

/// Reads thread samples through an [`FsRoot`].
#[derive(Debug, Clone)]
pub struct Sampler {
    fs: FsRoot,
    ns_per_tick: u64,
    resolution: Option<Resolution>,
}

impl Sampler {
    /// A sampler over `fs` (the live machine, or a recorded one in tests).
    pub fn new(fs: FsRoot) -> Sampler {
        let ticks = procfs::clock_ticks().max(1);
        Sampler {
            fs,
            ns_per_tick: 1_000_000_000 / ticks,
            resolution: None,
        }
    }

    /// The clock the last samples came from (`None` before any).
    pub fn resolution(&self) -> Option<Resolution> {
        self.resolution
    }

    /// The file root it reads.
    pub fn fs(&self) -> &FsRoot {
        &self.fs
    }

    /// One thread now; `None` when it has exited (its files are gone) or
    /// its stat is unreadable.
    pub fn sample(&mut self, pid: i32, tid: i32) -> Option<ThreadSample> {
        let st = procfs::task_stat(&self.fs, pid, tid)?;
        let runtime_ns = match procfs::task_runtime_ns(&self.fs, pid, tid) {
            Some(ns) => {
                self.resolution = Some(Resolution::Schedstat);
                ns
            }
            None => {
                self.resolution = Some(Resolution::ClockTicks);
                st.cpu_ticks?.saturating_mul(self.ns_per_tick)
            }
        };
        Some(ThreadSample {
            pid,
            tid,
            comm: st.comm,
            state: st.state,
            runtime_ns,
            last_cpu: st.last_cpu,
        })
    }

    /// The threads of process `pid` now (ascending TIDs; empty if gone).
    pub fn tids(&self, pid: i32) -> Vec<i32> {
        procfs::tids(&self.fs, pid)
    }

    /// The processes the threads of `pid` started (its children), when
    /// the kernel lists them (`CONFIG_PROC_CHILDREN`); `None` otherwise.
    pub fn children(&self, pid: i32, tids: &[i32]) -> Option<Vec<i32>> {
        let mut out = Vec::new();
        let mut any = false;
        for &tid in tids {
            if let Some(c) = procfs::task_children(&self.fs, pid, tid) {
                any = true;
                out.extend(c);
            }
        }
        if !any && !tids.is_empty() {
            // Every thread may have exited since the listing: only a
            // process still there without the file means no support.
            if procfs::process_exists(&self.fs, pid)
                && !self
                    .fs
                    .exists(format!("/proc/{pid}/task/{}/children", tids[0]))
            {
                return None;
            }
        }
        out.sort_unstable();
        out.dedup();
        Some(out)
    }

    /// A process's name: the basename of its `argv[0]`, else its `comm`.
    pub fn program_name(&self, pid: i32) -> Option<String> {
        if let Some(a) = procfs::process_argv0(&self.fs, pid) {
            let base = a.rsplit('/').next().unwrap_or(&a);
            if !base.is_empty() {
                return Some(base.to_string());
            }
        }
        procfs::task_stat(&self.fs, pid, pid).map(|s| s.comm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_this_thread() {
        let mut s = Sampler::new(FsRoot::live());
        let pid = std::process::id() as i32;
        let tid = pinsight_sys::affinity::gettid();
        let a = s.sample(pid, tid).expect("own thread");
        // Burn some CPU: the run time must grow.
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(30) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let b = s.sample(pid, tid).unwrap();
        assert!(b.runtime_ns > a.runtime_ns, "{a:?} then {b:?}");
        assert_eq!(b.state, 'R');
        assert!(s.resolution().is_some());
        assert!(s.tids(pid).contains(&tid));
        assert!(s.sample(pid, i32::MAX).is_none());
        assert!(s.program_name(pid).is_some());
    }

    #[test]
    fn without_schedstat_the_stat_ticks_are_used() {
        // This thread's real stat and schedstat, copied into a recorded
        // /proc, then schedstat removed (kernels without CONFIG_SCHEDSTATS).
        let pid = std::process::id() as i32;
        let tid = pinsight_sys::affinity::gettid();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let task = dir.join(format!("proc/{pid}/task/{tid}"));
        std::fs::create_dir_all(&task).unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).unwrap();
        // utime 30 ticks, stime 12 ticks (fields 14 and 15).
        let close = stat.rfind(')').unwrap();
        let mut fields: Vec<String> = stat[close + 2..]
            .split_whitespace()
            .map(String::from)
            .collect();
        fields[14 - 3] = "30".into();
        fields[15 - 3] = "12".into();
        let altered = format!("{} {}\n", &stat[..=close], fields.join(" "));
        std::fs::write(task.join("stat"), altered).unwrap();
        let fs = FsRoot::at(dir).unwrap();
        let mut s = Sampler::new(fs);
        let got = s.sample(pid, tid).unwrap();
        let ticks = procfs::clock_ticks();
        assert_eq!(got.runtime_ns, 42 * (1_000_000_000 / ticks));
        assert_eq!(s.resolution(), Some(Resolution::ClockTicks));
        assert_eq!(s.tids(pid), vec![tid]);
        // The thread's files gone: it has exited.
        std::fs::remove_file(task.join("stat")).unwrap();
        assert!(s.sample(pid, tid).is_none());
    }
}
