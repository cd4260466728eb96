//! One rendering home for pinsight: the HTML/XML escaper ([`escape`]), the
//! binary size units ([`size`]), the terminal width ([`terminal_width`]) and
//! the topology tree ([`tree`]) that `pinsight topo` prints as text
//! ([`topo_text`]) and `pinsight report` draws as SVG, and the latency
//! heatmaps ([`latency`]: terminal table, SVG/PNG charts), and the lines
//! of `topo --watch` ([`hfi`]), and the progress bar every measuring
//! command shows ([`progress`]).
//!
//! Pure except for [`terminal_columns`], which asks the terminal on
//! standard output for its size (through the `terminal_size` crate), the
//! chart writers of [`latency::chart`], which write files, and the
//! progress bar, which draws on standard error.

#![forbid(unsafe_code)]

pub mod mix;
pub mod report;
pub mod tune;
pub mod tune_output;

// The terminal mechanics moved to pinsight-term; these private imports keep
// the crate's own paths (`crate::term::wrap`, `crate::escape`, …) for the
// views still here.
use pinsight_compare::view as compare;
use pinsight_latency::view as latency;
use pinsight_lifecycle::export;
use pinsight_sched::view::simulate as sched;
use pinsight_speed::view as speed;
use pinsight_term as term;
use pinsight_term::size::format_size;
use pinsight_term::{escape, terminal_width, DEFAULT_WIDTH};
use pinsight_topology::view::tree;
