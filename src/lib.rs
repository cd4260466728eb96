//! pinsight as a library: the crates the command-line tool is built from.
//!
//! - [`cpuset`]: CPU bitmaps and their text formats.
//! - [`topology`]: the machine model, discovery through one OS window, hwloc XML.
//! - [`plan`]: the pure placement planner.
//! - [`launch`]: applying plans to new and running processes.
//! - [`latency`], [`speed`]: measuring what the OS does not tell.
//! - [`measure`], [`stats`], [`workload`]: measured runs, honest statistics, built-in workloads.
//! - [`report`]: the one-page machine report.
pub use pinsight_cpuset as cpuset;
pub use pinsight_latency as latency;
pub use pinsight_launch as launch;
pub use pinsight_measure as measure;
pub use pinsight_plan as plan;
pub use pinsight_report as report;
pub use pinsight_speed as speed;
pub use pinsight_stats as stats;
pub use pinsight_topology as topology;
pub use pinsight_workload as workload;
