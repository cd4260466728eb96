//! What one measured run produced: the record that goes into JSON journals.
//! Field names are part of the journal format: rename nothing.

use crate::counters::CounterMetrics;
use crate::disturbance::Disturbance;
use crate::energy::EnergyMetrics;
use serde::{Deserialize, Serialize};

/// The JSON names of a run's counter metrics ([`CounterMetrics`],
/// flattened into [`RunRecord`]), in record order: the four that need no
/// PMU, then [`PMU_METRICS`]. Part of the journal format.
pub const COUNTER_METRICS: [&str; 10] = [
    "task_clock_ms",
    "context_switches",
    "cpu_migrations",
    "page_faults",
    "cycles",
    "instructions",
    "ipc",
    "cache_references",
    "cache_misses",
    "avg_ghz",
];

/// The counter metrics counted by hardware (PMU) events or derived from
/// them: the tail of [`COUNTER_METRICS`].
pub const PMU_METRICS: &[&str] = COUNTER_METRICS.split_at(4).1;

/// The JSON names of a run's energy metrics ([`EnergyMetrics`], flattened
/// into [`RunRecord`]), in record order. Part of the journal format.
pub const ENERGY_METRICS: [&str; 4] = [
    "energy_pkg_j",
    "energy_core_j",
    "energy_dram_j",
    "energy_psys_j",
];

/// How the measured process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitStatusRecord {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal number, when a signal killed it.
    pub signal: Option<i32>,
}

impl ExitStatusRecord {
    /// The status a shell would report ([`pinsight_lifecycle::exit`]).
    pub fn shell_code(&self) -> i32 {
        pinsight_lifecycle::exit::code_of(self.code, self.signal)
    }

    /// Exited with code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }
}

/// One run of a program.
///
/// Times and rusage are always measured. Counters and energy are
/// [`crate::Metric`]s: a number, or the reason there is none. The counters
/// and energy fields are flattened into this object in JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Monotonic time (`CLOCK_MONOTONIC`) from the child's `execve` (the
    /// child reads the clock as its last step before it) to the moment the
    /// harness saw the process exit: the fork and the harness's pre-exec
    /// work (affinity, counters) are not in it; the `execve` and the
    /// dynamic loader are, as in hyperfine's figure.
    pub wall_s: f64,
    /// User CPU time (`wait4` rusage). Includes the descendants the process
    /// itself waited for; not those it left running or orphaned.
    pub user_s: f64,
    /// System CPU time, same scope as `user_s`.
    pub sys_s: f64,
    /// Peak resident set size, KiB (`ru_maxrss`): the maximum over the
    /// process and its waited-for descendants (not their sum).
    ///
    /// Caveat (Linux): at `execve` the kernel folds the RSS of the
    /// pre-exec image — a copy of the forking parent — into this peak, so
    /// a value at or below [`RunRecord::max_rss_floor_kib`] may be the
    /// harness's size, not the program's.
    pub max_rss_kib: u64,
    /// The harness's own peak RSS when it spawned the run: the most the
    /// pre-exec image can have contributed to `max_rss_kib`.
    pub max_rss_floor_kib: u64,
    pub exit: ExitStatusRecord,
    /// Killed because it exceeded the timeout (then `exit.signal` tells
    /// which of SIGTERM/SIGKILL ended it).
    pub timed_out: bool,
    #[serde(flatten)]
    pub counters: CounterMetrics,
    #[serde(flatten)]
    pub energy: EnergyMetrics,
    /// Other work on the plan's CPUs and hypervisor steal during the run
    /// ([`crate::disturbance`]); absent when `/proc/stat` could not be read,
    /// when disturbance was not measured, and in journals written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbance: Option<Disturbance>,
}

impl RunRecord {
    /// A run of `wall_s` seconds that exited with status 0 and of which
    /// nothing else was measured: no CPU time or RSS (0), no timeout,
    /// counters and energy unavailable for `why`, disturbance not
    /// measured. What a simulated run starts from.
    pub fn exited_ok(wall_s: f64, why: &str) -> RunRecord {
        RunRecord {
            wall_s,
            user_s: 0.0,
            sys_s: 0.0,
            max_rss_kib: 0,
            max_rss_floor_kib: 0,
            exit: ExitStatusRecord {
                code: Some(0),
                signal: None,
            },
            timed_out: false,
            counters: CounterMetrics::unavailable(why),
            energy: EnergyMetrics::unavailable(why),
            disturbance: None,
        }
    }

    /// Every counter and energy metric with its JSON name, for a journal
    /// that writes some of them once in its header (see
    /// [`crate::Metric::omitted`]).
    pub fn metrics_mut(&mut self) -> [(&'static str, &mut crate::Metric); 14] {
        RunRecord::metrics_of(&mut self.counters, &mut self.energy)
    }

    /// [`RunRecord::metrics_mut`] of a run's counters and energy alone
    /// (what a measurer can tell before any run), named as
    /// [`COUNTER_METRICS`] then [`ENERGY_METRICS`].
    pub fn metrics_of<'a>(
        c: &'a mut CounterMetrics,
        e: &'a mut EnergyMetrics,
    ) -> [(&'static str, &'a mut crate::Metric); 14] {
        let mut names = COUNTER_METRICS.iter().chain(&ENERGY_METRICS);
        [
            &mut c.task_clock_ms,
            &mut c.context_switches,
            &mut c.cpu_migrations,
            &mut c.page_faults,
            &mut c.cycles,
            &mut c.instructions,
            &mut c.ipc,
            &mut c.cache_references,
            &mut c.cache_misses,
            &mut c.avg_ghz,
            &mut e.energy_pkg_j,
            &mut e.energy_core_j,
            &mut e.energy_dram_j,
            &mut e.energy_psys_j,
        ]
        .map(|m| (*names.next().expect("a name per metric"), m))
    }

    /// Whether other work or the hypervisor took more than the threshold of
    /// one of the run's CPUs (false when the disturbance was not measured).
    pub fn disturbed(&self) -> bool {
        self.disturbance.as_ref().is_some_and(|d| d.disturbed)
    }
}
