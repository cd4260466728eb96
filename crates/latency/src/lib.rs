//! Core-to-core latency: measuring the matrix on this machine
//! ([`measure`]) and loading matrix files ([`LoadMatrix`]); showing them
//! (terminal heatmap, SVG/PNG charts, the command's text) is [`view`].
//!
//! The pure model — the matrix and its file formats, latency domains
//! derived from it and latency-aware choice of CPU groups — lives in
//! `pinsight-latency-model`; import its types from there (this crate
//! re-exports nothing of another crate's).
#![forbid(unsafe_code)]

mod file;
pub mod measure;
pub mod report;
pub mod request;
pub mod view;

pub use file::{LoadError, LoadMatrix, MAX_MATRIX_BYTES};
