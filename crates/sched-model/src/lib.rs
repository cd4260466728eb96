//! The pure half of asymmetry-aware scheduling (after Saez and
//! Prieto-Matias, "Evaluation of the Intel Thread Director technology on an
//! Alder Lake processor", APSys '22).
//!
//! * [`policy`]: per-thread state + observations per period → an
//!   [`Assignment`] (which threads get the big cores; the rest share the
//!   small kind), under [`Policy::Os`], [`Policy::Aarr`], [`Policy::To`] and
//!   [`Policy::Acfs`]. The live `pinsight sched` and `mix` sample threads and
//!   apply affinities around [`Scheduler::step`]; this crate does neither.
//! * [`sf`]: the IPS-based speedup-factor estimator (running average,
//!   minimum samples per kind, clamp) with a phase cache keyed on cheap
//!   control metrics, for `pinsight sf` and the scheduler.
//! * [`spec`]: the machine spec (`8P+8E`), the SF-estimate spec
//!   (`exact`, `classes:1.67,1.97`, `mae:0.38`) and the programs CSV.
//! * [`host`]: the simulated machine taken from a real topology (the
//!   fastest kind big, the others small).
//! * [`sim`]: a seeded, deterministic discrete-time simulator running the
//!   same [`Scheduler`] and reporting that paper's metrics (§5).
//!
//! No I/O, no clock, no OS: everything here is a function of its inputs.

#![forbid(unsafe_code)]

pub mod host;
pub mod policy;
pub mod sf;
pub mod sim;
pub mod spec;

pub use host::{HostMachine, HostMachineError};
pub use policy::{
    decide, Assignment, Capacity, Cpu, Kind, Observation, Policy, Scheduler, ThreadId, ThreadState,
    UnknownScheduler,
};
pub use sf::{ControlMetrics, SfEstimator, SfParams, SfSample};
pub use sim::{simulate, Metrics, PolicyResult, ProgramResult, SimConfig, SimError};
pub use spec::{
    parse_programs, Machine, MachineError, Phase, Program, ProgramsError, SfQuality, SfQualityError,
};
