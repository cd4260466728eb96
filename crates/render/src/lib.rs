//! Empty (issue 36, item 1): every feature's views live in its own crate
//! (a `view` module: `pinsight_topology::view`, `pinsight_report::view`,
//! …), the terminal mechanics in `pinsight-term`.

#![forbid(unsafe_code)]
