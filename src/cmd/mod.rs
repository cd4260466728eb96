//! One module per command; each exposes `Args` (clap) and `run`.
pub mod compare;
pub mod latency;
pub mod pin;
pub mod plan;
pub mod plan_args;
pub mod report;
pub mod run;
pub mod sf;
pub mod simulate;
pub mod snapshot;
pub mod speed;
pub mod topo;
pub mod topo_watch;
pub mod workload;
