//! Core-to-core latency: the matrix and its file formats ([`matrix`]),
//! latency domains derived from it ([`cluster`]) and latency-aware choice of
//! CPU groups ([`group`]).
//!
//! Everything here except measuring is pure: it takes a [`LatencyMatrix`]
//! and returns values, so it is tested on recorded matrices of real machines.

pub mod cluster;
pub mod matrix;

pub use cluster::{domains, Domain, DomainTree, Level};
pub use matrix::{LatencyMatrix, PairStat};
