//! pinsight as a library: re-exports the crates the command-line tool is built from.
pub use pinsight_cpuset as cpuset;
pub use pinsight_topology as topology;
