//! Why a statistic could not be computed. Callers print these as-is
//! ("not enough runs: need at least 2, got 1"), so they read as sentences.

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    /// Fewer samples than the statistic needs.
    #[error("not enough runs: need at least {need}, got {got}")]
    NotEnoughRuns { need: usize, got: usize },
    /// A sample is NaN or infinite (a failed measurement slipped through).
    #[error("sample #{} is {value}, not a finite number", index + 1)]
    NonFinite { index: usize, value: f64 },
    /// All samples are equal, so a spread-based statistic is undefined.
    #[error("all runs gave the same value: the spread is zero")]
    ZeroVariance,
    /// A rate statistic (harmonic mean, ratio) met a zero or negative value.
    #[error("sample #{} is {value}: rates and times must be positive", index + 1)]
    NonPositive { index: usize, value: f64 },
    /// The confidence level is not strictly between 0 and 1.
    #[error("confidence level {0} is not between 0 and 1")]
    BadLevel(f64),
    /// Every value in both samples is tied: a rank test has nothing to rank.
    #[error("every run in both samples has the same value: nothing to rank")]
    AllTied,
}
