//! Why a workload cannot run: bad parameters (usage errors, found by
//! [`check`](crate::check)) or a failure while running. Messages name each
//! parameter as the caller calls it ([`WorkloadError::words`]): in
//! workload terms by default, a command line by its flags.

use crate::sched::Schedule;

/// Why a workload run was refused or failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WorkloadError {
    /// No workload of that name.
    Unknown { name: String },
    /// Zero threads asked for.
    ZeroThreads,
    /// More threads than [`MAX_THREADS`](crate::MAX_THREADS).
    TooManyThreads { threads: usize, max: usize },
    /// pingpong with a thread count other than 2.
    PingpongThreads(usize),
    /// A size outside `1..=max`.
    SizeOutOfRange {
        workload: &'static str,
        size: u64,
        meaning: &'static str,
        max: u64,
    },
    /// A schedule given to a workload with a fixed split.
    NoSchedule {
        workload: &'static str,
        schedule: Schedule,
        /// Why its split is fixed.
        reason: &'static str,
        /// The workloads that take a schedule.
        takers: Vec<&'static str>,
    },
    /// A maximum iteration count for a workload other than mandelbrot.
    MaxIterNotApplicable { workload: &'static str },
    /// mandelbrot with a maximum of 0 iterations.
    ZeroMaxIter,
    /// lu's generated matrix has a zero pivot.
    Singular,
    /// A worker thread could not be created.
    Spawn {
        index: usize,
        threads: usize,
        reason: String,
    },
    /// A worker thread panicked.
    Panicked { index: usize },
}

/// A parameter of a run, as [`WorkloadError::words`] names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// [`Params::threads`](crate::Params::threads).
    Threads,
    /// [`Params::size`](crate::Params::size).
    Size,
    /// [`Params::schedule`](crate::Params::schedule).
    Schedule,
    /// [`Params::max_iter`](crate::Params::max_iter).
    MaxIter,
}

impl Param {
    /// Its name in workload terms (what the [`Display`](std::fmt::Display)
    /// of an error calls it).
    pub fn name(self) -> &'static str {
        match self {
            Param::Threads => "threads",
            Param::Size => "size",
            Param::Schedule => "schedule",
            Param::MaxIter => "max-iter",
        }
    }
}

impl WorkloadError {
    /// The message, naming each parameter as `name` calls it (a command
    /// line names its flags); the [`Display`](std::fmt::Display) is this
    /// with [`Param::name`].
    pub fn words(&self, name: impl Fn(Param) -> &'static str) -> String {
        let (threads, size) = (name(Param::Threads), name(Param::Size));
        let (schedule, max_iter) = (name(Param::Schedule), name(Param::MaxIter));
        match self {
            WorkloadError::Unknown { name } => {
                format!("unknown workload '{name}'; valid workloads: {}", crate::names())
            }
            WorkloadError::ZeroThreads => format!("{threads} must be at least 1"),
            WorkloadError::TooManyThreads { threads: n, max } => {
                format!("{threads} {n} is too many (at most {max})")
            }
            WorkloadError::PingpongThreads(n) => {
                format!("pingpong runs exactly 2 threads (the communicating pair), not {n}")
            }
            WorkloadError::SizeOutOfRange {
                workload,
                size: n,
                meaning,
                max,
            } => format!("{workload}: {size} {n} is out of range: {meaning} must be 1..={max}"),
            WorkloadError::NoSchedule {
                workload,
                reason,
                takers,
                ..
            } => format!(
                "workload '{workload}' does not take {schedule} ({reason}); {schedule} applies to: {}",
                takers.join(", ")
            ),
            WorkloadError::MaxIterNotApplicable { workload } => {
                format!("{max_iter} applies to mandelbrot only, not '{workload}'")
            }
            WorkloadError::ZeroMaxIter => format!("mandelbrot: {max_iter} must be at least 1"),
            WorkloadError::Singular => {
                format!("lu: the generated matrix is singular (a zero pivot); try another {size}")
            }
            WorkloadError::Spawn {
                index,
                threads: n,
                reason,
            } => format!("cannot create worker thread {index} of {n}: {reason}"),
            WorkloadError::Panicked { index } => format!("worker thread {index} panicked"),
        }
    }
}

impl std::fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.words(Param::name))
    }
}

impl std::error::Error for WorkloadError {}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_parameters_as_the_caller_calls_them() {
        let flag = |p: Param| match p {
            Param::Threads => "--threads",
            Param::Size => "--size",
            Param::Schedule => "--schedule",
            Param::MaxIter => "--max-iter",
        };
        let e = WorkloadError::TooManyThreads { threads: 9, max: 8 };
        assert_eq!(e.words(flag), "--threads 9 is too many (at most 8)");
        assert_eq!(e.to_string(), "threads 9 is too many (at most 8)");
        assert_eq!(
            WorkloadError::Singular.words(flag),
            "lu: the generated matrix is singular (a zero pivot); try another --size"
        );
        let e = WorkloadError::NoSchedule {
            workload: "lu",
            schedule: Schedule::Static,
            reason: "fixed",
            takers: vec!["pi", "mandelbrot"],
        };
        assert_eq!(
            e.words(flag),
            "workload 'lu' does not take --schedule (fixed); --schedule applies to: pi, mandelbrot"
        );
    }
}
