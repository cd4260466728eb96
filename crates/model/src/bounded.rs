//! Bounded numbers as users type them: every count a command takes
//! (threads, tasks, runs, ...) has a range, so a bad or huge value is a
//! one-line refusal before any work, never an allocation that aborts or an
//! overflow that panics. The bounds are what a run can use, far below what
//! would exhaust memory: a plan holds one entry per thread, a compare
//! journal one record per run.
//!
//! Messages quote the text as given; a caller printing them to a terminal
//! escapes control characters.

use pinsight_cpuset::CpuSet;
use thiserror::Error;

/// Most threads a plan, a compare arm or a workload may ask for: 16 times
/// the largest CPU count Linux supports (`CONFIG_NR_CPUS` ≤ 8192 on x86-64,
/// arch/x86/Kconfig), so oversubscription stays possible. CPU ids are
/// below it too.
pub const MAX_THREADS: usize = 131_072;
/// Most tasks work may be split into.
pub const MAX_TASKS: usize = 1_000_000;
/// Most measured runs per arm, and warm-up runs.
pub const MAX_RUNS: usize = 100_000;

/// A whole number in `lo..=hi`, and what it counts (for messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Count {
    /// Smallest value allowed.
    pub lo: usize,
    /// Largest value allowed.
    pub hi: usize,
    /// What is counted, plural (`threads`, `warm-up runs`).
    pub what: &'static str,
}

/// Threads: 1 to [`MAX_THREADS`].
pub const THREADS: Count = Count::new(1, MAX_THREADS, "threads");
/// Tasks: 1 to [`MAX_TASKS`].
pub const TASKS: Count = Count::new(1, MAX_TASKS, "tasks");
/// Measured runs: 1 to [`MAX_RUNS`].
pub const RUNS: Count = Count::new(1, MAX_RUNS, "runs");
/// Warm-up runs: 0 to [`MAX_RUNS`].
pub const WARMUP: Count = Count::new(0, MAX_RUNS, "warm-up runs");
/// Extra attempts of a disturbed run: 0 to 100.
pub const RERUNS: Count = Count::new(0, 100, "reruns");
/// Events or intervals before stopping: 1 to a billion.
pub const STOP_COUNT: Count = Count::new(1, 1_000_000_000, "a count");
/// Intervals in a row before a move: 1 to 1000.
pub const PATIENCE: Count = Count::new(1, 1000, "intervals");
/// Moves per interval: 1 to 100000.
pub const MOVES: Count = Count::new(1, 100_000, "moves");
/// A rank or rank count of one node: 0 to [`MAX_THREADS`].
pub const RANKS: Count = Count::new(0, MAX_THREADS, "ranks");
/// Configurations to validate: 0 to 1000.
pub const VALIDATE: Count = Count::new(0, 1000, "validation configurations");
/// CPUs per core kind: 1 to 8192.
pub const PER_KIND: Count = Count::new(1, 8192, "CPUs per kind");

/// A count refused: out of its range, or not a whole number.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CountError {
    /// Below the range.
    #[error("at least {} ({}: {} to {})", .0.lo, .0.what, .0.lo, .0.hi)]
    Low(Count),
    /// Above the range.
    #[error("at most {} ({}: {} to {})", .0.hi, .0.what, .0.lo, .0.hi)]
    High(Count),
    /// Not a whole number (the text as given).
    #[error("'{}' is not a whole number ({}: {} to {})", .1, .0.what, .0.lo, .0.hi)]
    NotANumber(Count, String),
}

impl Count {
    /// The count of `what` from `lo` to `hi`.
    pub const fn new(lo: usize, hi: usize, what: &'static str) -> Count {
        Count { lo, hi, what }
    }

    /// `text` (spaces around it allowed) as a count in range; a number of
    /// any size is compared, never wrapped.
    pub fn parse(&self, text: &str) -> Result<usize, CountError> {
        match text.trim().parse::<u128>() {
            Ok(n) if (self.lo as u128..=self.hi as u128).contains(&n) => Ok(n as usize),
            Ok(n) if n < self.lo as u128 => Err(CountError::Low(*self)),
            Ok(_) => Err(CountError::High(*self)),
            Err(_) => Err(CountError::NotANumber(*self, text.to_owned())),
        }
    }
}

/// A CPU list or process id refused (the text as given).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum IdError {
    /// Not a CPU list.
    #[error("'{0}': {1}")]
    CpuList(String, pinsight_cpuset::ParseError),
    /// A CPU id of [`MAX_THREADS`] or more.
    #[error("'{0}': CPU ids are below {MAX_THREADS}")]
    CpuTooLarge(String),
    /// Not a process id.
    #[error("'{0}' is not a process id (a whole number from 1)")]
    Pid(String),
}

/// A CPU list (`0-3,8`, strides `0-15:2`) of CPU ids below
/// [`MAX_THREADS`].
pub fn cpu_list(text: &str) -> Result<CpuSet, IdError> {
    let set = CpuSet::parse_list(text).map_err(|e| IdError::CpuList(text.to_owned(), e))?;
    if set.last().is_some_and(|c| c >= MAX_THREADS) {
        return Err(IdError::CpuTooLarge(text.to_owned()));
    }
    Ok(set)
}

/// A process id: a whole number from 1.
pub fn pid(text: &str) -> Result<i32, IdError> {
    match text.trim().parse::<i32>() {
        Ok(p) if p >= 1 => Ok(p),
        _ => Err(IdError::Pid(text.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_hold_their_range_at_any_size() {
        assert_eq!(THREADS.parse(" 8 "), Ok(8));
        assert_eq!(WARMUP.parse("0"), Ok(0));
        assert_eq!(
            THREADS.parse("0").unwrap_err().to_string(),
            "at least 1 (threads: 1 to 131072)"
        );
        assert_eq!(
            RUNS.parse("99999999999999999999999")
                .unwrap_err()
                .to_string(),
            "at most 100000 (runs: 1 to 100000)"
        );
        assert_eq!(
            RERUNS.parse("x").unwrap_err().to_string(),
            "'x' is not a whole number (reruns: 0 to 100)"
        );
        assert!(RUNS.parse("4294967295").is_err() && RERUNS.parse("101").is_err());
    }

    #[test]
    fn cpu_lists_and_pids() {
        assert_eq!(cpu_list("0-3").unwrap().len(), 4);
        assert!(cpu_list("0-x")
            .unwrap_err()
            .to_string()
            .starts_with("'0-x': "));
        assert_eq!(
            cpu_list("131072").unwrap_err().to_string(),
            "'131072': CPU ids are below 131072"
        );
        assert_eq!(pid("42"), Ok(42));
        assert_eq!(
            pid("0").unwrap_err().to_string(),
            "'0' is not a process id (a whole number from 1)"
        );
    }
}
