//! One module per command; each exposes `Args` (clap) and `run`.
pub mod compare;
pub mod gather;
pub mod latency;
pub mod model;
pub mod pin;
pub mod plan;
pub mod plan_args;
pub mod report;
pub mod run;
pub mod simulate;
pub mod slice;
pub mod snapshot;
pub mod speed;
pub mod topo;
pub mod topo_watch;
pub mod tune;
pub mod workload;
