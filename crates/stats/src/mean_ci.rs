//! The one confidence interval of a mean that every command shows.
//!
//! Benchmark figures are mostly positive quantities (times, rates, counts),
//! and a handful of runs with a wide spread gives the textbook Student-t
//! interval, mean ± t·s/√n, a lower bound below zero: "elapsed 95% CI
//! −0.31 s … 2.6 s" claims the program may have taken negative time. For a
//! sample whose every value is positive, [`mean_ci`] therefore takes the
//! t interval of the logarithms and back-transforms it ("log-t"):
//!
//! ```text
//! exp( mean(ln x) ± t(1 − α/2, n − 1) · sd(ln x) / √n )
//! ```
//!
//! Why this method and not a bootstrap:
//!
//! - It cannot leave (0, ∞): exp of any finite number is positive.
//! - Times and rates are right-skewed and close to log-normal (a run is
//!   slowed by a multiplicative factor: frequency, cache misses,
//!   interference), which is what the log scale assumes; for the
//!   low-spread samples most benchmarks give, the result is all but the
//!   ordinary t interval.
//! - It keeps the t quantile's honesty at few runs. A percentile or BCa
//!   bootstrap of 2–5 runs can never reach beyond the sample's range (with
//!   two runs it is [min, max], about 50 % coverage); the t quantile of
//!   2 degrees of freedom (4.30) widens the interval as it must.
//! - It is deterministic and closed-form: no seed, no resampling cost.
//!
//! What the back-transformed interval estimates is the *geometric* mean
//! exp(E[ln X]) (the median of a log-normal), not the arithmetic mean:
//! Bland & Altman, "Transformations, means, and confidence intervals",
//! BMJ 312:1079 (1996). So [`MeanCi::estimate`] is the sample's geometric
//! mean, which the interval always contains, and every output that shows a
//! log-t interval says so ("log-t", around the geometric mean).
//!
//! A sample with a zero or negative value (a difference, a metric that can
//! be zero) keeps the ordinary t interval of the arithmetic mean, [`CiMethod::T`].

use crate::{check_finite, mean, sample_variance, t_critical, Interval, StatsError};
use serde::Serialize;

/// How a confidence interval of a mean was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum CiMethod {
    /// Student t on the values: mean ± t·s/√n, an interval of the
    /// arithmetic mean. Used when some value is zero or negative.
    #[serde(rename = "t")]
    T,
    /// Student t on the logarithms, back-transformed with exp: an interval
    /// of the geometric mean that stays positive. Used when every value is
    /// positive.
    #[serde(rename = "log-t")]
    LogT,
}

impl CiMethod {
    /// The method's short name, as outputs and the JSON spell it: `t`, `log-t`.
    pub fn label(self) -> &'static str {
        match self {
            CiMethod::T => "t",
            CiMethod::LogT => "log-t",
        }
    }

    /// What the interval is an interval of: `mean`, `geometric mean`.
    pub fn of_what(self) -> &'static str {
        match self {
            CiMethod::T => "mean",
            CiMethod::LogT => "geometric mean",
        }
    }
}

/// A confidence interval of a mean, with the method that made it and the
/// estimate it is built around.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MeanCi {
    pub interval: Interval,
    pub method: CiMethod,
    /// The point estimate the interval surrounds: the arithmetic mean for
    /// [`CiMethod::T`], the geometric mean for [`CiMethod::LogT`].
    pub estimate: f64,
}

/// The confidence interval of the mean of `xs` at `level`: [`CiMethod::LogT`]
/// when every value is positive (the interval then stays positive),
/// [`CiMethod::T`] otherwise. See the module documentation for why.
///
/// Errors: a bad level, a non-finite value, fewer than 2 values, or zero
/// spread (on the scale the method works on).
pub fn mean_ci(xs: &[f64], level: f64) -> Result<MeanCi, StatsError> {
    crate::check_level(level)?;
    check_finite(xs)?;
    if xs.iter().all(|&x| x > 0.0) {
        let interval = log_t_interval(xs, level)?;
        Ok(MeanCi {
            interval,
            method: CiMethod::LogT,
            estimate: geometric_mean(xs),
        })
    } else {
        Ok(MeanCi {
            interval: mean_interval(xs, level)?,
            method: CiMethod::T,
            estimate: mean(xs),
        })
    }
}

/// Student-t confidence interval of the arithmetic mean at `level`, for
/// quantities that may be zero or negative (differences). Positive
/// quantities go through [`mean_ci`].
///
/// Errors: fewer than 2 runs, or zero variance.
pub fn mean_interval(xs: &[f64], level: f64) -> Result<Interval, StatsError> {
    crate::check_level(level)?;
    check_finite(xs)?;
    let (m, half) = t_half_width(xs, level)?;
    Ok(Interval {
        lo: m - half,
        hi: m + half,
        level,
    })
}

/// The log-t interval (see the module documentation): an interval of the
/// geometric mean of positive `xs`.
///
/// Errors: a value ≤ 0 ([`StatsError::NonPositive`]), a bad level, a
/// non-finite value, fewer than 2 values, or all values equal.
pub fn log_t_interval(xs: &[f64], level: f64) -> Result<Interval, StatsError> {
    crate::check_level(level)?;
    check_finite(xs)?;
    if let Some(index) = xs.iter().position(|&x| x <= 0.0) {
        return Err(StatsError::NonPositive {
            index,
            value: xs[index],
        });
    }
    let logs: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    let (m, half) = t_half_width(&logs, level)?;
    // A spread of hundreds of orders of magnitude would over- or underflow
    // exp: clamp so the interval stays finite and strictly positive.
    let lo = (m - half).exp().max(f64::MIN_POSITIVE);
    let hi = (m + half).exp().min(f64::MAX);
    Ok(Interval { lo, hi, level })
}

/// exp(mean(ln x)) of positive `xs` (caller guarantees non-empty, positive).
pub(crate) fn geometric_mean(xs: &[f64]) -> f64 {
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp()
}

/// The mean of `xs` and the half width t·s/√n of its t interval.
fn t_half_width(xs: &[f64], level: f64) -> Result<(f64, f64), StatsError> {
    if xs.len() < 2 {
        return Err(StatsError::NotEnoughRuns {
            need: 2,
            got: xs.len(),
        });
    }
    let m = mean(xs);
    let sd = sample_variance(xs, m).sqrt();
    if sd == 0.0 {
        return Err(StatsError::ZeroVariance);
    }
    let half = t_critical(level, (xs.len() - 1) as f64) * sd / (xs.len() as f64).sqrt();
    Ok((m, half))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_wide_runs_stay_positive() {
        // The issue's kind of data: three runs, one of them 12× slower.
        let xs = [0.2, 0.25, 3.1];
        let t = mean_interval(&xs, 0.95).unwrap();
        assert!(t.lo < 0.0, "the plain t interval goes below zero: {t:?}");
        let c = mean_ci(&xs, 0.95).unwrap();
        assert_eq!(c.method, CiMethod::LogT);
        assert!(c.interval.lo > 0.0 && c.interval.contains(c.estimate));
    }

    #[test]
    fn a_non_positive_value_keeps_the_t_interval() {
        let xs = [-1.0, 0.5, 2.0];
        let c = mean_ci(&xs, 0.95).unwrap();
        assert_eq!(c.method, CiMethod::T);
        assert_eq!(c.interval, mean_interval(&xs, 0.95).unwrap());
        assert!((c.estimate - 0.5).abs() < 1e-15);
        let z = mean_ci(&[0.0, 1.0, 2.0], 0.95).unwrap();
        assert_eq!(z.method, CiMethod::T);
    }

    #[test]
    fn refusals() {
        assert_eq!(
            mean_ci(&[1.0], 0.95),
            Err(StatsError::NotEnoughRuns { need: 2, got: 1 })
        );
        assert_eq!(mean_ci(&[2.0; 5], 0.95), Err(StatsError::ZeroVariance));
        assert_eq!(mean_ci(&[1.0, 2.0], 1.5), Err(StatsError::BadLevel(1.5)));
        assert_eq!(
            log_t_interval(&[1.0, 0.0], 0.95),
            Err(StatsError::NonPositive {
                index: 1,
                value: 0.0
            })
        );
    }

    #[test]
    fn method_names() {
        assert_eq!(CiMethod::LogT.label(), "log-t");
        assert_eq!(CiMethod::T.of_what(), "mean");
    }
}
