//! Honest statistics for benchmark runs, in the spirit of hyperfine.
//!
//! Placement experiments produce a handful of noisy timings per configuration.
//! This crate turns them into numbers a user can trust:
//!
//! - [`Summary::of`]: mean, sample standard deviation, median, quartiles, a
//!   confidence interval of the mean ([`mean_ci`]: log-t for positive
//!   samples, so it never goes below zero; Student t otherwise) and, for
//!   rates, the harmonic mean with its interval (the statistic the
//!   ping-pong seed reports).
//! - [`median`], [`median_ci`] and its ranks-only form [`median_ci_ranks`]:
//!   the one median and the one distribution-free interval for it (exact
//!   binomial order statistics at every n; benchmark timings are rarely
//!   normal). Every crate of pinsight takes its medians from here.
//! - [`speedup`]: ratio of mean times with a Fieller confidence interval.
//! - [`welch`] and [`mann_whitney`]: the two tests; [`compare`] runs both and
//!   says which one to believe ([`recommend_test`], [`is_skewed`]).
//! - [`Outliers::detect`]: modified Z-scores as hyperfine computes them, Tukey
//!   fences, and the "first run was slow: caches were cold" hint.
//! - [`energy_delay_product`]: EDP / ED²P for energy-aware comparisons.
//!
//! Every function refuses input it cannot answer for (no runs, one run, zero
//! variance, NaN) with a [`StatsError`] instead of returning NaN.
#![forbid(unsafe_code)]

mod compare;
mod energy;
mod error;
mod mann_whitney;
mod mean_ci;
mod median_ci;
mod outliers;
mod quantile;
mod shape;
mod speedup;
mod summary;
mod welch;

pub use compare::{compare, recommend_test, Comparison, TestKind, ALPHA, FEW_RUNS};
pub use energy::{energy_delay_product, energy_delay_squared_product};
pub use error::StatsError;
pub use mann_whitney::{mann_whitney, MannWhitney, MwMethod, EXACT_MAX_N};
pub use mean_ci::{log_t_interval, mean_ci, mean_interval, CiMethod, MeanCi};
pub use median_ci::{median, median_ci, median_ci_coverage, median_ci_ranks};
pub use outliers::{Outliers, HYPERFINE_OUTLIER_THRESHOLD};
pub use quantile::quantile_sorted;
pub use shape::{is_skewed, skewness, SKEW_THRESHOLD};
pub use speedup::{speedup, speedup_at, Speedup};
pub use summary::Summary;
pub use welch::{welch, Welch};

use serde::Serialize;

/// A two-sided confidence interval `[lo, hi]` at confidence `level` (0.95 = 95 %).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
    /// The confidence the interval was built for. For order-statistic
    /// intervals this is the *achieved* coverage, which is at least the level
    /// asked for (binomial coverage moves in discrete steps).
    pub level: f64,
}

impl Interval {
    /// True when `x` lies inside the interval (bounds included).
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }

    /// Half the width: the "±" a human reads.
    pub fn half_width(&self) -> f64 {
        (self.hi - self.lo) / 2.0
    }
}

/// Checks that every sample is a finite number; the index of the first bad one otherwise.
pub(crate) fn check_finite(xs: &[f64]) -> Result<(), StatsError> {
    match xs.iter().position(|x| !x.is_finite()) {
        Some(index) => Err(StatsError::NonFinite {
            index,
            value: xs[index],
        }),
        None => Ok(()),
    }
}

/// Checks two samples (of a two-sample test): each finite ([`check_finite`],
/// `a` first), and at least `need` runs on each side.
pub(crate) fn check_two_samples(a: &[f64], b: &[f64], need: usize) -> Result<(), StatsError> {
    check_finite(a)?;
    check_finite(b)?;
    let got = a.len().min(b.len());
    if got < need {
        return Err(StatsError::NotEnoughRuns { need, got });
    }
    Ok(())
}

/// Checks a confidence level is a probability strictly between 0 and 1.
pub(crate) fn check_level(level: f64) -> Result<(), StatsError> {
    if level > 0.0 && level < 1.0 {
        Ok(())
    } else {
        Err(StatsError::BadLevel(level))
    }
}

/// Arithmetic mean (caller guarantees a non-empty, finite slice).
pub(crate) fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sample variance with Bessel's correction (caller guarantees n ≥ 2).
pub(crate) fn sample_variance(xs: &[f64], mean: f64) -> f64 {
    xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (xs.len() - 1) as f64
}

/// The two-sided Student-t critical value t(1 - (1-level)/2, df).
pub(crate) fn t_critical(level: f64, df: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    // df > 0 and finite is guaranteed by every caller (n ≥ 2 or Welch df ≥ 1).
    let t = StudentsT::new(0.0, 1.0, df).expect("degrees of freedom must be positive");
    t.inverse_cdf(1.0 - (1.0 - level) / 2.0)
}

/// A sorted copy (caller guarantees finite values, so the order is total).
pub(crate) fn sorted(xs: &[f64]) -> Vec<f64> {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v
}
