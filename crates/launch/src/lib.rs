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
//! - [`run_request::RunRequest`] is `pinsight run`'s whole work once
//!   planned: the rank's report directory, the plan's variables, the
//!   launch and the rank's report.
//! - [`slicing::RankRequest`] finds this process's slice of its node's
//!   CPUs (`slice`, `run --slice`): its local rank, the CPUs it may use
//!   and their slicing.
//! - [`rank_report::RankReport`] is the file `run --slice --report-dir`
//!   writes per rank, and `gather` and `compare --launcher` read.
//!
//! Every OS file read goes through [`pinsight_sys::FsRoot`]; every OS call
//! (affinity, signals, waiting, memfds) is in `pinsight-sys`.

#![forbid(unsafe_code)]

pub mod launch;
pub mod pin;
pub mod rank_file;
pub mod rank_report;
pub mod rebalance;
pub mod run_request;
pub mod shim;
pub mod skip;
pub mod slicing;
pub mod threadlog;
pub mod view;
pub mod watch;

pub use launch::{
    create_shim, env_exports, kernel_policy, pins_per_thread, run, Application, LaunchError,
    Mechanism, PinMain, PinMainError, RunOptions, RunOutcome,
};
pub use pin::{pin_process, PinError, PinOptions, PinReport, ThreadOrder};
pub use run_request::{RunError, RunRequest};
pub use skip::{parse_skip, SkipError, SkipProblem};
pub use watch::{FollowStats, ThreadRecord};
