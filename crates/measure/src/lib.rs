//! `pinsight-measure`: measure one run of a program the way `perf stat`
//! and `hyperfine` do, cheaply enough to run thousands of times.
//!
//! - [`Measurer::run`] spawns a caller-built
//!   [`pinsight_sys::spawn::Spawn`] in its own process group and records wall time, rusage (user, sys, max RSS,
//!   context switches, page faults), exit status, perf counters on the
//!   whole process tree (task-clock and CPU migrations always;
//!   cycles/instructions/cache events per core PMU when the machine has
//!   them) and RAPL energy; it enforces a timeout by killing the group.
//!   It also records the run's [`Disturbance`]: other work on the plan's
//!   CPUs and hypervisor steal, from `/proc/stat` before and after.
//! - [`GovernorGuard`] sets a cpufreq governor and restores it on drop,
//!   panic, or SIGINT/SIGTERM/SIGHUP ([`install_signal_cleanup`]).
//!
//! Every number that cannot be measured is a [`Metric::Unavailable`] with
//! the reason, never 0. Every OS file is read through
//! [`pinsight_sys::FsRoot`], so PMU discovery, RAPL and cpufreq are
//! tested on fake trees.
//!
//! ```no_run
//! use pinsight_measure::{Measurer, Options};
//! use pinsight_sys::spawn::Spawn;
//! use pinsight_sys::FsRoot;
//!
//! pinsight_measure::install_signal_cleanup().unwrap();
//! let (m, notes) = Measurer::new(&FsRoot::live(), Options::default());
//! for n in notes { eprintln!("{n}"); }
//! let mut cmd = Spawn::new("sleep");
//! cmd.arg("0.1");
//! let rec = m.run(cmd).unwrap(); // by value: a Spawn is built per run
//! println!("{}", serde_json::to_string(&rec).unwrap()); // journal line
//! println!("{} s, task-clock {} ms", rec.wall_s, rec.counters.task_clock_ms);
//! ```

#![forbid(unsafe_code)]

pub mod cleanup;
pub mod counters;
pub mod disturbance;
pub mod energy;
mod error;
pub mod governor;
pub mod metric;
pub mod record;
pub mod root;
mod run;
pub mod sf;
mod sys;

pub use cleanup::{
    cleanup_now, install_signal_cleanup, is_shutting_down, set_signal_hook, SignalCleanupError,
};
pub use counters::{CounterError, CounterMetrics, CountersError, Multiplexed, PmuCounts};
pub use disturbance::Disturbance;
pub use energy::EnergyMetrics;
pub use error::IoError;
pub use governor::{
    read_governors, restore_all, CpuGovernor, GovernorError, GovernorGuard, GovernorReadError,
    GovernorUnavailable, RestoreError, RestoreFailure,
};
pub use metric::Metric;
pub use record::{ExitStatusRecord, RunRecord, COUNTER_METRICS, ENERGY_METRICS, PMU_METRICS};
pub use root::{measurement_root, MeasureRootError, TEST_MEASURE_ROOT};
pub use run::{Measurer, Options, RunError};
