//! How fast is each CPU, really? Per-CPU single-thread throughput on three
//! small kernels, and the **speedup factor** between core kinds.
//!
//! Why measure: Adnan (Array 19, 2023, Table 4, Fig. 1) and Saez and
//! Prieto-Matias (APSys '22, §3) show the P/E speedup factor ranges from
//! 1.3 to 2.6 depending on the code, and that frequency ratios alone misjudge
//! it. So we run three kernels with different bottlenecks — integer/branchy,
//! floating point, memory-bound pointer chasing — pinned to each CPU, and
//! report each beside the ratio that max frequency and `cpu_capacity` would
//! predict.

#![forbid(unsafe_code)]

pub mod error;
pub mod file;
pub mod kernels;
pub mod pin;
pub mod request;
pub mod run;
pub mod select;
pub mod session;
pub mod smt;
pub mod summary;
pub mod view;

pub use error::{Choice, MemoryError, SelectError, SpeedError, UnknownKernel};
pub use file::{load_report, SpeedFileError};
pub use kernels::Kernel;
pub use run::{measure, schedule, CpuSpeed, KernelResult, KernelSlots, Schedule, SpeedConfig};
pub use select::{chase_footprint_bytes, default_mem_bytes, memory_available_bytes, select_cpus};
pub use session::{chase_buffer_bytes, time_share_under, SpeedSession, TIME_SHARE_NOTE};
pub use smt::{measure_smt_yield, SmtYield};
pub use summary::{speedups, unweighted, weights_file, KindPair, KindSpeed, SlotPlan, SpeedReport};
