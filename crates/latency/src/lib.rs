//! Core-to-core latency: the matrix and its file formats ([`matrix`]),
//! measuring it on this machine ([`measure`]), showing it ([`render`]),
//! latency domains derived from it ([`cluster`]) and latency-aware choice of
//! CPU groups ([`group`]).
//!
//! Everything here except measuring is pure: it takes a [`LatencyMatrix`]
//! and returns values, so it is tested on recorded matrices of real machines.

pub mod cluster;
pub mod group;
pub mod matrix;
pub mod measure;
pub mod render;

pub use cluster::{domains, Basis, Domain, DomainTree, Level};
pub use group::{
    autopilot, best_group, best_pipeline, exhaustive_group, exhaustive_pipeline, Exact, Group,
    SearchLimits,
};
pub use matrix::{CsvMatrix, IntervalKind, LatencyMatrix, PairStat, RunToRun};
