//! The one-line summary of a set of runs (hyperfine's "Time (mean ± σ)" and
//! "Range (min … max)"), plus the intervals a comparison needs.

use crate::mean_ci::{geometric_mean, mean_ci, mean_interval, CiMethod};
use crate::quantile::quantile_sorted;
use crate::{check_finite, mean, median_ci, sample_variance, sorted, Interval, StatsError};
use serde::Serialize;

/// Descriptive statistics of one sample.
///
/// Fields that need more than one run (`stddev`, `mean_ci`, ...) are `None`
/// when n = 1, never NaN. `harmonic_mean` is `None` unless every sample is
/// positive (it is meant for rates such as ops/s, where the arithmetic mean
/// over-weights fast runs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator).
    pub stddev: Option<f64>,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// First and third quartiles (type 7, as R and NumPy).
    pub q1: f64,
    pub q3: f64,
    /// 95 % interval of the mean from [`crate::mean_ci`]: log-t (an interval
    /// of the geometric mean, always positive) when every sample is
    /// positive, Student t of the arithmetic mean otherwise;
    /// `mean_ci_method` says which. `None` for n < 2 or zero spread (a
    /// zero-width interval would claim certainty the runs do not give).
    pub mean_ci: Option<Interval>,
    /// How `mean_ci` was computed; `None` when there is no interval.
    pub mean_ci_method: Option<CiMethod>,
    /// exp(mean(ln xᵢ)) when every sample is positive: the estimate a
    /// log-t `mean_ci` surrounds.
    pub geometric_mean: Option<f64>,
    /// 95 % distribution-free interval of the median; `None` for n < 6.
    pub median_ci: Option<Interval>,
    /// n / Σ(1/xᵢ): the right mean for rates.
    pub harmonic_mean: Option<f64>,
    /// 95 % interval of the harmonic mean, from the t interval of the mean of
    /// reciprocals, inverted (how the post "CPU Affinity: Because Even A Single
    /// Chip Is Nonuniform" summarises its ping-pong op/sec: a harmonic mean).
    pub harmonic_mean_ci: Option<Interval>,
}

impl Summary {
    /// Summarises `xs`. Errors on an empty sample or a non-finite value.
    pub fn of(xs: &[f64]) -> Result<Summary, StatsError> {
        if xs.is_empty() {
            return Err(StatsError::NotEnoughRuns { need: 1, got: 0 });
        }
        check_finite(xs)?;
        let s = sorted(xs);
        let n = xs.len();
        let m = mean(xs);
        let stddev = (n >= 2).then(|| sample_variance(xs, m).sqrt());
        let ci = mean_ci(xs, 0.95).ok();
        let positive = xs.iter().all(|&x| x > 0.0);
        let harmonic_mean = positive.then(|| n as f64 / xs.iter().map(|x| 1.0 / x).sum::<f64>());
        let harmonic_mean_ci = if positive {
            harmonic_interval(xs, 0.95)
        } else {
            None
        };
        Ok(Summary {
            n,
            mean: m,
            stddev,
            median: quantile_sorted(&s, 0.5),
            min: s[0],
            max: s[n - 1],
            q1: quantile_sorted(&s, 0.25),
            q3: quantile_sorted(&s, 0.75),
            mean_ci: ci.map(|c| c.interval),
            mean_ci_method: ci.map(|c| c.method),
            geometric_mean: positive.then(|| geometric_mean(xs)),
            median_ci: median_ci(xs, 0.95).ok(),
            harmonic_mean,
            harmonic_mean_ci,
        })
    }

    /// Interquartile range q3 − q1.
    pub fn iqr(&self) -> f64 {
        self.q3 - self.q1
    }

    /// Coefficient of variation σ/mean (relative noise), when defined.
    pub fn cv(&self) -> Option<f64> {
        match self.stddev {
            Some(sd) if self.mean != 0.0 => Some(sd / self.mean.abs()),
            _ => None,
        }
    }
}

/// Harmonic-mean interval: invert the t interval of the reciprocals' mean.
/// `None` when the reciprocal interval reaches zero (the harmonic mean is then
/// unbounded above) or is undefined.
fn harmonic_interval(xs: &[f64], level: f64) -> Option<Interval> {
    let recip: Vec<f64> = xs.iter().map(|x| 1.0 / x).collect();
    let ci = mean_interval(&recip, level).ok()?;
    (ci.lo > 0.0).then(|| Interval {
        lo: 1.0 / ci.hi,
        hi: 1.0 / ci.lo,
        level,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_nan_are_errors() {
        assert_eq!(
            Summary::of(&[]),
            Err(StatsError::NotEnoughRuns { need: 1, got: 0 })
        );
        assert!(matches!(
            Summary::of(&[1.0, f64::NAN]),
            Err(StatsError::NonFinite { index: 1, .. })
        ));
    }

    #[test]
    fn single_run_has_no_spread() {
        let s = Summary::of(&[2.5]).unwrap();
        assert_eq!(
            (s.n, s.mean, s.median, s.min, s.max),
            (1, 2.5, 2.5, 2.5, 2.5)
        );
        assert_eq!(s.stddev, None);
        assert_eq!(s.mean_ci, None);
        assert_eq!(s.mean_ci_method, None);
        assert_eq!(s.geometric_mean, Some(2.5));
        assert_eq!(s.median_ci, None);
        assert_eq!(s.harmonic_mean, Some(2.5));
        assert_eq!(s.harmonic_mean_ci, None);
    }

    #[test]
    fn zero_variance_has_no_interval() {
        let s = Summary::of(&[3.0; 8]).unwrap();
        assert_eq!(s.stddev, Some(0.0));
        assert_eq!(s.mean_ci, None);
        assert_eq!(
            mean_interval(&[3.0; 8], 0.95),
            Err(StatsError::ZeroVariance)
        );
    }

    #[test]
    fn harmonic_mean_needs_positive_values() {
        let s = Summary::of(&[1.0, -1.0, 2.0]).unwrap();
        assert_eq!(s.harmonic_mean, None);
        assert_eq!(s.geometric_mean, None);
        assert_eq!(s.mean_ci_method, Some(CiMethod::T));
        assert_eq!(s.harmonic_mean_ci, None);
    }
}
