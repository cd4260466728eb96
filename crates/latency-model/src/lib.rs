//! The pure core-to-core latency model: the matrix and its file formats
//! ([`matrix`]), latency domains derived from it ([`cluster`]) and
//! latency-aware choice of CPU groups ([`group`]).
//!
//! Nothing here measures, draws or touches the file system: every
//! function takes a [`LatencyMatrix`] (or the text of a matrix file) and
//! returns values, so the planner can depend on it without pulling in
//! measuring threads or chart libraries, and everything is tested on
//! recorded matrices of real machines. Measuring, loading files and
//! the views (terminal heatmap, SVG/PNG charts) live in `pinsight-latency`,
//! which imports this crate's types from here (their one path).
#![forbid(unsafe_code)]

pub mod cluster;
mod error;
pub mod group;
pub mod matrix;

pub use cluster::{domains, Basis, Domain, DomainTree, Level};
pub use error::{CpuListError, InvalidMatrix, MatrixError};
pub use group::{
    autopilot, best_group, best_pipeline, exhaustive_group, exhaustive_pipeline, Exact, Group,
    SearchLimits,
};
pub use matrix::{CsvMatrix, IntervalKind, LatencyMatrix, PairStat, RunToRun};
