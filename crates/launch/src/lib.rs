//! Applying a pinsight plan: `pinsight run` and `pinsight pin`.
//!
//! A [`pinsight_plan::Plan`] is pure data (a process mask and one place per
//! thread). This crate is the edge that makes the OS obey it:
//!
//! - [`launch::run`] starts a program: set policies become its process
//!   mask; pinned policies pin each thread as it is created, through an
//!   LD_PRELOAD shim wrapping `pthread_create` ([`shim`], like likwid-pin)
//!   or a `/proc` watcher for programs the shim cannot reach ([`watch`]);
//!   it forwards signals, returns the child's status and, on request,
//!   reports where every thread actually ran.
//! - [`pin::pin_process`] re-pins a running process thread by thread,
//!   QEMU vCPU threads by vCPU number.
//! - [`rebalance::rebalance`] spreads running processes or threads over
//!   CPUs by capacity (the planner's `balance`), saving the previous
//!   affinities for [`rebalance::state::restore`].
//!
//! Every OS file read goes through [`pinsight_topology::FsRoot`]; affinity
//! every OS call (affinity, signals, waiting, memfds) is in `pinsight-sys`,
//! re-exported here as [`affinity`] and [`signals`] for existing callers.

#![forbid(unsafe_code)]

pub use pinsight_sys::affinity;
pub mod launch;
pub mod pin;
pub mod procfs;
pub mod rebalance;
/// Resolving and checking programs lives in pinsight-lifecycle (one copy).
pub use pinsight_lifecycle::program;
pub mod shim;
pub use pinsight_sys::signals;
pub mod skip;
pub mod threadlog;
pub mod watch;

pub use launch::{
    create_shim, env_exports, kernel_policy, pins_per_thread, run, Application, LaunchError,
    Mechanism, PinMain, RunOptions, RunOutcome,
};
pub use pin::{pin_process, PinError, PinOptions, PinReport, ThreadOrder};
pub use skip::{parse_skip, SkipError, SkipProblem};
pub use watch::{FollowStats, ThreadRecord};
