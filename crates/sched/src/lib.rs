//! The live asymmetry-aware scheduler: `pinsight sched` and
//! `pinsight mix` stand on it.
//!
//! * [`sample`]: per managed thread, its CPU time and last CPU from
//!   `/proc` (schedstat, stat) through `FsRoot`;
//! * [`apply`]: affinity per TID through pinsight-sys, with the originals
//!   saved and restored;
//! * [`manager`]: the loop — every period, sample → the pure
//!   `pinsight_sched_model::Scheduler::step` → apply — with thread churn,
//!   idle threads and restore on every exit path;
//! * [`mix`]: the multi-program experiment of `pinsight mix` (reference
//!   runs, one mix per scheduler, journal and resume, the metrics of Saez
//!   and Prieto-Matias, APSys '22, §5);
//! * [`run`]: one `pinsight sched` experiment start to end (start or
//!   take the processes, manage, stop on their end or a signal, restore);
//! * [`simulate`]: `pinsight simulate`'s run of every policy in turn on
//!   the pure simulator, with progress;
//! * [`sf`]: the [`sf::SfSource`] seam (SFs given per program, or measured
//!   per thread from per-kind counters).

#![forbid(unsafe_code)]

pub mod apply;
pub mod manager;
pub mod mix;
pub mod run;
pub mod sample;
pub mod sf;
pub mod simulate;
pub mod view;

pub use apply::{Applier, ApplyError, RestoreReport};
pub use manager::{
    capacity, capacity_within, own_capacity, CapacityFeed, Config, ManageError, Manager,
    OwnCapacityError, ProgramReport, Report, ThreadReport,
};
pub use sample::{Resolution, Sampler, ThreadSample};
pub use sf::{CounterSf, GivenSf, NoSf, ProgramRef, SfSource, SfSpecError, SfTarget, ThreadPeriod};
