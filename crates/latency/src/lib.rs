//! Core-to-core latency: measuring the matrix on this machine
//! ([`measure`]) and loading matrix files ([`LoadMatrix`]). Showing them
//! (terminal heatmap, SVG/PNG charts) is `pinsight_render::latency`'s job.
//!
//! The pure model — the matrix and its file formats ([`matrix`]), latency
//! domains derived from it ([`cluster`]) and latency-aware choice of CPU
//! groups ([`group`]) — lives in `pinsight-latency-model` and is
//! re-exported here at the same paths, so `pinsight_latency::LatencyMatrix`
//! and `pinsight_latency::matrix::...` keep working.

mod file;
pub mod measure;

pub use file::{LoadError, LoadMatrix, MAX_MATRIX_BYTES};
pub use pinsight_latency_model::{cluster, group, matrix};

pub use cluster::{domains, Basis, Domain, DomainTree, Level};
pub use group::{
    autopilot, best_group, best_pipeline, exhaustive_group, exhaustive_pipeline, Exact, Group,
    SearchLimits,
};
pub use matrix::{
    CpuListError, CsvMatrix, IntervalKind, InvalidMatrix, LatencyMatrix, MatrixError, PairStat,
    RunToRun,
};
