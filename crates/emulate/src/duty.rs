//! The duty-cycle stealer: one real-time process per slowed CPU
//! ([`pinsight_sys::stealer::Stealer`]) that takes the complementary
//! share of every short period, within the kernel's real-time throttling
//! budget (`/proc/sys/kernel/sched_rt_runtime_us` of every
//! `sched_rt_period_us`; Documentation/scheduler/sched-rt-group.rst).
//!
//! `SCHED_DEADLINE` would let the kernel keep the budget itself, but it
//! refuses a deadline task whose affinity does not span its whole root
//! domain (Documentation/scheduler/sched-deadline.rst, 5.1): a stealer
//! pinned to one CPU is not admitted outside an exclusive cpuset, so
//! `SCHED_FIFO` at priority 2 is used.

use pinsight_sys::stealer::Stealer;
use pinsight_sys::FsRoot;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// The real-time priority of a stealer: one above the lowest (the
/// calibration probe's, [`crate::probe::PROBE_PRIORITY`]), above every
/// normal task and below almost every real-time one.
pub const PRIORITY: i32 = 2;

/// Never steal more than this share, even without throttling: the CPU
/// must still run the kernel's own work and the emulated program.
pub const MAX_SHARE: f64 = 0.95;

/// Why stealers cannot run here.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum DutyError {
    /// The share needed is over the real-time budget.
    #[error("speed {speed} needs {:.0}% of CPU {cpu} but real-time tasks may take at most {:.0}% (sched_rt_runtime_us / sched_rt_period_us)", (1.0 - speed) * 100.0, budget * 100.0)]
    OverBudget { cpu: usize, speed: f64, budget: f64 },
    /// The stealer could not start.
    #[error("cannot start a real-time stealer on CPU {cpu}: {reason}")]
    Spawn { cpu: usize, reason: String },
}

/// The share of each period real-time tasks may take: the throttling
/// budget, [`MAX_SHARE`] at most (and when throttling is off, -1).
pub fn rt_budget(fs: &FsRoot) -> f64 {
    let runtime = fs
        .read_opt("/proc/sys/kernel/sched_rt_runtime_us")
        .and_then(|s| s.trim().parse::<i64>().ok());
    let period = fs.read_u64("/proc/sys/kernel/sched_rt_period_us");
    match (runtime, period) {
        (Some(r), Some(p)) if r >= 0 && p > 0 => (r as f64 / p as f64).min(MAX_SHARE),
        _ => MAX_SHARE,
    }
}

static STEALERS: Mutex<Vec<Stealer>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Stops and reaps every stealer (idempotent): the signal lifecycle's
/// restorer.
pub fn stop_all() -> Vec<String> {
    let all = std::mem::take(&mut *lock(&STEALERS));
    drop(all);
    Vec::new()
}

/// The stealers of one emulation; stopped when dropped.
#[derive(Debug)]
pub struct Stealers {
    period: Duration,
}

impl Stealers {
    /// Starts one stealer per CPU of `cpus` (`(cpu, busy share)`), all
    /// or none. Call from the thread that lives as long as the emulation.
    pub fn start(cpus: &[(usize, f64)], period: Duration) -> Result<Stealers, DutyError> {
        pinsight_lifecycle::interrupt::add_restorer(stop_all);
        let me = Stealers { period };
        for &(cpu, share) in cpus {
            let busy = period.mul_f64(share.clamp(0.0, MAX_SHARE));
            match Stealer::spawn(cpu, PRIORITY, period, busy) {
                Ok(s) => lock(&STEALERS).push(s),
                Err(e) => {
                    let reason = if e.kind() == std::io::ErrorKind::PermissionDenied {
                        if pinsight_sys::process::geteuid() == 0 {
                            format!(
                                "{e} (as root: real-time group scheduling gives this cgroup no \
                                 real-time budget (cpu.rt_runtime_us), and the stealer could not \
                                 join the root cgroup (/sys/fs/cgroup/cgroup.procs))"
                            )
                        } else {
                            format!("{e} (needs root or CAP_SYS_NICE for SCHED_FIFO)")
                        }
                    } else {
                        e.to_string()
                    };
                    return Err(DutyError::Spawn { cpu, reason });
                }
            }
        }
        Ok(me)
    }

    /// Sets the busy share of `cpu`'s stealer.
    pub fn set(&self, cpu: usize, share: f64) {
        let busy = self.period.mul_f64(share.clamp(0.0, MAX_SHARE));
        for s in lock(&STEALERS).iter().filter(|s| s.cpu() == cpu) {
            s.set(self.period, busy);
        }
    }

    /// The period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Changes the period of every stealer, keeping each one's share.
    pub fn set_period(&mut self, period: Duration, shares: &[(usize, f64)]) {
        self.period = period;
        for &(cpu, share) in shares {
            self.set(cpu, share);
        }
    }

    /// Whether any stealer had to move to the root cgroup (see
    /// [`Stealer::in_root_cgroup`]).
    pub fn in_root_cgroup(&self) -> bool {
        lock(&STEALERS).iter().any(Stealer::in_root_cgroup)
    }

    /// (cpu, pid) of every stealer.
    pub fn pids(&self) -> Vec<(usize, i32)> {
        lock(&STEALERS).iter().map(|s| (s.cpu(), s.pid())).collect()
    }
}

impl Drop for Stealers {
    fn drop(&mut self) {
        stop_all();
    }
}
