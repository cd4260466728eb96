//! Why a statistic could not be computed. Callers print these as-is
//! ("not enough runs: need at least 2, got 1"), so they read as sentences.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum StatsError {
    /// Fewer samples than the statistic needs.
    NotEnoughRuns { need: usize, got: usize },
    /// A sample is NaN or infinite (a failed measurement slipped through).
    NonFinite { index: usize, value: f64 },
    /// All samples are equal, so a spread-based statistic is undefined.
    ZeroVariance,
    /// A rate statistic (harmonic mean, ratio) met a zero or negative value.
    NonPositive { index: usize, value: f64 },
    /// The confidence level is not strictly between 0 and 1.
    BadLevel(f64),
    /// Every value in both samples is tied: a rank test has nothing to rank.
    AllTied,
}

impl fmt::Display for StatsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatsError::NotEnoughRuns { need, got } => {
                write!(f, "not enough runs: need at least {need}, got {got}")
            }
            StatsError::NonFinite { index, value } => {
                write!(f, "sample #{} is {value}, not a finite number", index + 1)
            }
            StatsError::ZeroVariance => {
                f.write_str("all runs gave the same value: the spread is zero")
            }
            StatsError::NonPositive { index, value } => {
                write!(
                    f,
                    "sample #{} is {value}: rates and times must be positive",
                    index + 1
                )
            }
            StatsError::BadLevel(l) => write!(f, "confidence level {l} is not between 0 and 1"),
            StatsError::AllTied => {
                f.write_str("every run in both samples has the same value: nothing to rank")
            }
        }
    }
}

impl std::error::Error for StatsError {}
