//! Why a workload cannot run: bad parameters (usage errors, found by
//! [`check`](crate::check)) or a failure while running. Messages name the
//! parameter in workload terms; the CLI names its flags.

use crate::sched::Schedule;

/// Why a workload run was refused or failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    /// No workload of that name.
    #[error("unknown workload '{name}'; valid workloads: {}", crate::names())]
    Unknown { name: String },
    /// Zero threads asked for.
    #[error("the number of threads must be at least 1")]
    ZeroThreads,
    /// More threads than [`MAX_THREADS`](crate::MAX_THREADS).
    #[error("{threads} threads is too many (at most {max})")]
    TooManyThreads { threads: usize, max: usize },
    /// pingpong with a thread count other than 2.
    #[error("pingpong runs exactly 2 threads (the communicating pair), not {0}")]
    PingpongThreads(usize),
    /// A size outside `1..=max`.
    #[error("{workload}: size {size} is out of range: {meaning} must be 1..={max}")]
    SizeOutOfRange {
        workload: &'static str,
        size: u64,
        meaning: &'static str,
        max: u64,
    },
    /// A schedule given to a workload with a fixed split.
    #[error("workload '{workload}' does not take a schedule ({reason}); schedules apply to: {}", takers.join(", "))]
    NoSchedule {
        workload: &'static str,
        schedule: Schedule,
        /// Why its split is fixed.
        reason: &'static str,
        /// The workloads that take a schedule.
        takers: Vec<&'static str>,
    },
    /// A maximum iteration count for a workload other than mandelbrot.
    #[error("the maximum iteration count applies to mandelbrot only, not '{workload}'")]
    MaxIterNotApplicable { workload: &'static str },
    /// mandelbrot with a maximum of 0 iterations.
    #[error("mandelbrot: the maximum iteration count must be at least 1")]
    ZeroMaxIter,
    /// lu's generated matrix has a zero pivot.
    #[error("lu: the generated matrix is singular (a zero pivot); try another size")]
    Singular,
    /// A worker thread could not be created.
    #[error("cannot create worker thread {index} of {threads}: {reason}")]
    Spawn {
        index: usize,
        threads: usize,
        reason: String,
    },
    /// A worker thread panicked.
    #[error("worker thread {index} panicked")]
    Panicked { index: usize },
}

impl WorkloadError {
    /// Whether the error is the caller's input (usage) rather than a
    /// failure while running.
    pub fn is_usage(&self) -> bool {
        !matches!(
            self,
            WorkloadError::Singular | WorkloadError::Spawn { .. } | WorkloadError::Panicked { .. }
        )
    }
}

/// A size text that is not a positive count.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid size '{0}': expected a positive count such as 1000000, 1e6, 500k, 2M or 1G")]
pub struct SizeError(pub String);

/// A schedule name that is not one of `static`, `dynamic`, `steal`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown schedule '{0}'; valid schedules: static, dynamic, steal")]
pub struct ScheduleError(pub String);
