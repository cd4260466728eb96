//! Where should each thread run? A pure planner.
//!
//! [`plan()`] turns a [`Policy`] (`p-pinned`, `e-first`, `scatter`,
//! `balance`, ...) and a [`Topology`](pinsight_model::Topology) into a
//! [`Plan`]: one CPU set ("place") per thread or task plus the mask for the
//! whole process. It never touches the OS, so every policy is tested on
//! recorded machines; the launcher (`pinsight run`/`pin`) applies plans and
//! [`format`](mod@format) renders them for the tools users already have (taskset,
//! numactl, OpenMP runtimes, libvirt, Slurm).
//!
//! Entry points: parse a [`Policy`] (`"p-first+smt-physical-first".parse()`),
//! build a [`Request`] (`Request { threads: Some(8), ..Request::new(policy) }`),
//! call [`plan()`], then apply [`Plan::process_mask`] / [`Plan::places`]
//! (launcher) or [`render`] it (`pinsight plan --format ...`); [`omp_env`]
//! gives the environment a launcher should export.
//!
//! Only usable CPUs (online and allowed by the cgroup,
//! [`Topology::usable`](pinsight_model::Topology::usable)) are ever
//! placed on.
#![forbid(unsafe_code)]

pub mod balance;
pub mod format;
pub mod input;
pub mod launcher;
pub mod mem;
mod order;
pub mod plan;
pub mod policy;
pub mod slice;
pub mod tune;
pub mod tune_dialect;
pub mod weights;

pub use format::{launch_env, omp_env, render, Caveat, Format, FormatError, Rendered};
pub use input::{Input, Names};
pub use launcher::{Launcher, LauncherError, LocalRank};
pub use mem::{MemError, MemMode, MemParseError, MemPlan, MemPolicy, NodeSpec};
pub use plan::{plan, LatencyProblem, NearPlan, Plan, PlanError, Request};
pub use policy::{BasePolicy, CpuListError, KindSel, Policy, PolicyOption, PolicyParseError};
pub use slice::{Slice, SliceError, SliceRequest, SliceRule, Slicing};
pub use weights::{Weights, WeightsError};
