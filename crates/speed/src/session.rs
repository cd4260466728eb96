//! One whole speed measurement, as `pinsight speed` and `pinsight report`
//! run it: plan the slots, measure every CPU, summarise per kind.
//!
//! Both commands measure through [`SpeedSession`] alone, and the session
//! decides the method from the machine, not from its caller: under
//! `pinsight emulate`'s duty-cycle stealers (see [`time_share_under`]) it
//! counts the descheduled time instead of dropping those chunks as
//! disturbed. So `report`'s speedup factor and `speed`'s are one
//! measurement that differs only in its budget.

use crate::error::{MemoryError, SpeedError};
use crate::run::{measure, schedule, Schedule, SpeedConfig};
use crate::select::{chase_footprint_bytes, memory_available_bytes};
use crate::summary::{speedups, SlotPlan, SpeedReport};
use crate::Kernel;
use pinsight_cpuset::CpuSet;
use pinsight_model::Topology;
use pinsight_sys::progress::Progress;
use pinsight_sys::FsRoot;
use std::ffi::OsStr;
use std::time::{Duration, Instant};

/// What a time-share measurement ([`SpeedSession::time_share`]) means,
/// said by `speed` on stderr and by `report` among its conditions.
pub const TIME_SHARE_NOTE: &str = "emulated machine (duty-cycle): throughput is counted \
     by wall time over 20 ms blocks, descheduled time included";

/// Whether a process whose `PINSIGHT_EMULATING` variable
/// ([`pinsight_emulate::EMULATING_ENV`]) is `emulating` runs on CPUs slowed
/// by time share: `pinsight emulate`'s duty-cycle stealers, whose run time
/// is the very slowness to measure (cpufreq caps slow the clock instead,
/// and a chunk descheduled there is other work, as on any machine). Pure.
pub fn time_share_under(emulating: Option<&OsStr>) -> bool {
    emulating.is_some_and(|m| m == pinsight_emulate::Mechanism::DutyCycle.name())
}

/// A planned speed measurement: what will run, before it runs, then
/// [`SpeedSession::run`].
#[derive(Clone, Debug)]
pub struct SpeedSession {
    cfg: SpeedConfig,
    sched: Schedule,
}

impl SpeedSession {
    /// Plans `kernels` on `cpus`, `budget_per_cpu` each, with a chase
    /// buffer of `mem_bytes`. On an emulated machine slowed by time share
    /// (this process's environment, [`time_share_under`]) the session
    /// counts descheduled time ([`SpeedSession::time_share`]); every caller
    /// gets the same method.
    pub fn new(
        cpus: CpuSet,
        kernels: Vec<Kernel>,
        budget_per_cpu: Duration,
        mem_bytes: usize,
    ) -> SpeedSession {
        let sched = schedule(budget_per_cpu, &kernels, mem_bytes);
        SpeedSession {
            cfg: SpeedConfig {
                cpus,
                kernels,
                budget_per_cpu,
                mem_bytes,
                time_share: time_share_under(
                    std::env::var_os(pinsight_emulate::EMULATING_ENV).as_deref(),
                ),
            },
            sched,
        }
    }

    /// True when the session counts the time other tasks take from the
    /// measured thread (an emulated machine slowed by time share; see
    /// `SpeedConfig::time_share`), false when it drops those chunks as
    /// disturbed.
    pub fn time_share(&self) -> bool {
        self.cfg.time_share
    }

    /// Interleaved passes over the CPUs.
    pub fn passes(&self) -> usize {
        self.sched.passes()
    }

    /// CPUs measured.
    pub fn cpus(&self) -> usize {
        self.cfg.cpus.len()
    }

    /// Slots in all: the `total` of the progress task.
    pub fn slots(&self) -> usize {
        self.cfg.cpus.len() * self.sched.slots_per_cpu()
    }

    /// Measures and summarises. `progress` sees one task, "measuring CPU
    /// speed (P passes over N CPUs)", stepped after each of
    /// [`SpeedSession::slots`].
    pub fn run(
        self,
        topo: &Topology,
        progress: &mut dyn Progress,
    ) -> Result<SpeedReport, SpeedError> {
        let kind_of = |c: usize| topo.cpu(c).and_then(|c| c.kind);
        let started = Instant::now();
        let fs = FsRoot::live();
        // Under a duty-cycle emulation its stealers are the machine
        // measured, not other work: the disturbance leaves their run time
        // out (pinsight_measure::disturbance), as `load` leaves it out of
        // the busy time.
        let watch = pinsight_measure::disturbance::Watch::start(&fs);
        let cpus = measure(&self.cfg, &kind_of, progress)?;
        let disturbance = watch.finish(
            Some(&self.cfg.cpus),
            pinsight_measure::disturbance::DEFAULT_THRESHOLD,
        );
        let SpeedConfig {
            kernels,
            budget_per_cpu,
            mem_bytes,
            time_share,
            ..
        } = self.cfg;
        let (kinds, pairs) = speedups(topo, &cpus, &kernels);
        // Five rounds of 2 x 20 ms: 0.2 s, after the per-CPU passes.
        let smt_yield = Some(crate::smt::measure_smt_yield(
            topo,
            &self.cfg.cpus,
            Duration::from_millis(20),
            5,
        ));
        Ok(SpeedReport {
            kernels,
            budget_per_cpu_s: budget_per_cpu.as_secs_f64(),
            passes: self.sched.passes(),
            slots: SlotPlan::from_schedule(&self.sched),
            elapsed_s: started.elapsed().as_secs_f64(),
            mem_bytes,
            time_share,
            cpus,
            kinds,
            speedups: pairs,
            disturbance,
            smt_yield,
        })
    }
}

/// A chase buffer of `mib` MiB in bytes, refused when it would not fit in
/// the memory available now (`MemAvailable` under `fs`): checked before
/// anything runs, not after minutes of measuring.
pub fn chase_buffer_bytes(mib: usize, fs: &FsRoot) -> Result<usize, MemoryError> {
    let available = memory_available_bytes(fs);
    let too_big = |available| MemoryError::TooBig { mib, available };
    let bytes = mib.checked_mul(1 << 20).ok_or_else(|| too_big(available))?;
    match available {
        Some(avail) if chase_footprint_bytes(bytes) > avail => Err(too_big(Some(avail))),
        _ => Ok(bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meminfo_root(text: &str) -> (tempfile::TempDir, FsRoot) {
        pinsight_testkit::fake_root(&[("proc/meminfo", text)])
    }

    #[test]
    fn chase_buffer_must_fit_in_available_memory() {
        // 1 GiB available.
        let (_d, fs) = meminfo_root("MemAvailable:   1048576 kB\n");
        assert_eq!(chase_buffer_bytes(8, &fs), Ok(8 << 20));
        assert_eq!(
            chase_buffer_bytes(4096, &fs),
            Err(MemoryError::TooBig {
                mib: 4096,
                available: Some(1 << 30)
            })
        );
        assert_eq!(
            chase_buffer_bytes(usize::MAX, &fs),
            Err(MemoryError::TooBig {
                mib: usize::MAX,
                available: Some(1 << 30)
            })
        );
        // Unknown availability: only the address space limits it.
        let (_d, fs) = meminfo_root("MemTotal: 1 kB\n");
        assert_eq!(chase_buffer_bytes(4096, &fs), Ok(4096 << 20));
        assert_eq!(
            chase_buffer_bytes(usize::MAX, &fs),
            Err(MemoryError::TooBig {
                mib: usize::MAX,
                available: None
            })
        );
    }

    #[test]
    fn only_a_duty_cycle_emulation_is_measured_by_time_share() {
        let under = |v: Option<&str>| time_share_under(v.map(OsStr::new));
        assert!(under(Some("duty-cycle")));
        // Caps slow the clock: descheduled chunks there are other work.
        assert!(!under(Some("cpufreq")));
        assert!(!under(Some("")));
        assert!(!under(None));
    }

    #[test]
    fn session_plans_slots_before_running() {
        let s = SpeedSession::new(
            CpuSet::parse_list("0-3").unwrap(),
            vec![Kernel::Int, Kernel::Fp],
            Duration::from_millis(200),
            8 << 20,
        );
        assert_eq!(s.cpus(), 4);
        assert!(s.passes() >= 1);
        assert_eq!(s.slots() % 4, 0);
        assert!(s.slots() >= 4 * 2, "{}", s.slots());
    }
}
