//! The views not yet in their feature's crate (issue 36, item 1): the
//! machine report's page, picture, summary and files ([`report`]). Every
//! other feature's views live in its own crate (a `view` module:
//! `pinsight_topology::view`, `pinsight_latency::view`, …), the terminal
//! mechanics in `pinsight-term`.

#![forbid(unsafe_code)]

pub mod report;

// The terminal mechanics and the other features' views moved out; these
// private imports keep the crate's own paths (`crate::term::wrap`,
// `crate::escape`, `crate::tree`, …) for the views still here.
use pinsight_latency::view as latency;
use pinsight_speed::view as speed;
use pinsight_term as term;
use pinsight_term::size::format_size;
use pinsight_term::{escape, terminal_width};
#[cfg(test)]
use pinsight_term::DEFAULT_WIDTH;
use pinsight_topology::view::tree;
