//! `pinsight compare`: to pin or not to pin, answered with evidence for the
//! user's own program.
//!
//! The experiment runs a command under several placement policies (and,
//! where cpufreq is writable, several governors) in a randomised,
//! interleaved order, measures every run with `pinsight-measure`, and
//! answers with statistics from `pinsight-stats` and a plain-words verdict.
//!
//! - [`setup`](fn@setup): request → [`Header`] (arms with their plans; arms this
//!   machine cannot run are kept as [`NotApplicable`] with the reason).
//! - [`design::schedule`]: the seeded randomised-block run order.
//! - [`journal`]: JSON-lines journal, one fsync'd line per run; `--resume`.
//! - [`experiment::execute`]: the loop (live or fake [`experiment::Executor`]).
//! - [`session::Session`]: one experiment end to end (setup, journal, live
//!   runs, restore, report): the command line's one entry point.
//! - [`analysis::analyse`]: journal → [`Report`] (summaries, comparisons
//!   with the baseline, [`verdict::Verdict`]). Pure.
//!
//! - [`view`]: the renderers (terminal table, CSV, Markdown, HTML with
//!   inline SVG) and the lines around the runs ([`view::run`]).
//!
//! The JSON formats (journal and report) are documented in
//! `docs/src/schemas/compare.md`.
#![forbid(unsafe_code)]

pub mod analysis;
pub mod command;
pub mod design;
pub mod experiment;
pub mod fixed;
pub mod interrupt;
pub mod journal;
pub mod metrics;
pub mod output;
pub mod program_metric;
pub mod ranks;
pub mod ranks_run;
pub mod request;
mod rng;
pub mod session;
pub mod setup;
pub mod sf;
pub mod start;
pub mod verdict;
pub mod view;

pub use analysis::{
    analyse, ArmReport, DisturbanceReport, MetricStats, RankSummary, Report, Status, Versus,
};
pub use design::{schedule, Phase, Slot};
pub use experiment::{
    execute, Always, Executor, ExperimentError, Gate, LiveExecutor, Outcome, SwitchError,
};
pub use journal::{
    ArmHeader, ArmPlan, Difference, Field, Header, Journal, JournalWriter, Machine, MachineKind,
    NotApplicable, RankTime, RankTimes, RunLine, RunOutputRef,
};
pub use setup::{setup, Extension, GovernorProbe, Request, Setup, SetupError};
pub use verdict::{Advice, Caveat, Decision, Verdict};
