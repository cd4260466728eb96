//! "How much faster is the candidate placement?" as a ratio of mean times
//! with an honest confidence interval.
//!
//! We use **Fieller's theorem** rather than the delta method: the delta
//! method assumes the ratio is roughly normal, which fails exactly when it
//! matters (few, noisy runs), and it always returns a finite interval even
//! when the denominator is statistically indistinguishable from zero.
//! Fieller's interval is the set of ratios ρ for which
//! mean(base) − ρ·mean(cand) is not significantly different from zero:
//!
//! (a − ρb)² ≤ t² (va + ρ² vb),  with a, b the means and va, vb their squared
//! standard errors (the samples are independent, so the covariance is 0).
//!
//! When b² ≤ t²·vb the set is unbounded and we report no interval. When
//! a² < t²·va (the baseline's mean is itself not significantly above zero:
//! few runs, a wide spread) the set's lower end is negative; the ratio of
//! two positive means is positive, so the interval is cut at 0: a
//! confidence set intersected with the parameter space (0, ∞) still holds
//! the true ratio whenever the set did, so its coverage is unchanged
//! (Mandelkern, "Setting confidence intervals for bounded parameters",
//! Statistical Science 17(2), 2002), and a positive quantity never gets a
//! negative bound. A lower end of 0 reads "no lower bound above zero". The
//! t quantile uses Welch–Satterthwaite degrees of freedom of the combination
//! a − R·b evaluated at the point estimate R (the usual approximation for
//! unequal variances).

use crate::{check_two_samples, mean, sample_variance, t_critical, Interval, StatsError};
use serde::Serialize;

/// Speedup of a candidate over a baseline, both given as run *times*
/// (smaller is better).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Speedup {
    /// mean(baseline) / mean(candidate): 1.25 means the candidate is
    /// "1.25 times faster" (hyperfine's wording).
    pub ratio: f64,
    /// 95 % Fieller interval of `ratio`; `None` when it is unbounded or the
    /// runs have no spread at all.
    pub ci: Option<Interval>,
    /// (ratio − 1)·100: "+25 % faster" means 25 % more work per unit time.
    /// Negative values mean the candidate is slower.
    pub percent_faster: f64,
    /// (mean(candidate)/mean(baseline) − 1)·100: the change in run time
    /// ("−20 % time"). Both views are given because "x % faster" is ambiguous.
    pub percent_time_change: f64,
}

impl Speedup {
    /// "1.25× faster (95 % CI 1.20–1.31)" / "0.80× (1.25× slower ...)".
    pub fn describe(&self) -> String {
        let ci = match self.ci {
            Some(ci) => format!(" (95% CI {:.3}–{:.3})", ci.lo, ci.hi),
            None => " (95% CI unbounded: too few or too noisy runs)".to_string(),
        };
        if self.ratio >= 1.0 {
            format!(
                "{:.3}× faster, {:+.1}% throughput{ci}",
                self.ratio, self.percent_faster
            )
        } else {
            format!(
                "{:.3}× slower, {:+.1}% time{ci}",
                1.0 / self.ratio,
                self.percent_time_change
            )
        }
    }
}

/// Speedup of `candidate` over `baseline` (times, seconds or any unit).
///
/// Errors: fewer than 2 runs on either side, non-finite or non-positive
/// times (a ratio of times needs positive times).
pub fn speedup(baseline: &[f64], candidate: &[f64]) -> Result<Speedup, StatsError> {
    speedup_at(baseline, candidate, 0.95)
}

/// [`speedup`] at another confidence level.
pub fn speedup_at(baseline: &[f64], candidate: &[f64], level: f64) -> Result<Speedup, StatsError> {
    crate::check_level(level)?;
    check_two_samples(baseline, candidate, 2)?;
    for xs in [baseline, candidate] {
        if let Some(index) = xs.iter().position(|&x| x <= 0.0) {
            return Err(StatsError::NonPositive {
                index,
                value: xs[index],
            });
        }
    }
    let (na, nb) = (baseline.len() as f64, candidate.len() as f64);
    let (a, b) = (mean(baseline), mean(candidate));
    let va = sample_variance(baseline, a) / na;
    let vb = sample_variance(candidate, b) / nb;
    let ratio = a / b;
    let ci = fieller(a, b, va, vb, na, nb, level);
    Ok(Speedup {
        ratio,
        ci,
        percent_faster: (ratio - 1.0) * 100.0,
        percent_time_change: (b / a - 1.0) * 100.0,
    })
}

/// Fieller interval for a/b; see the module documentation.
fn fieller(a: f64, b: f64, va: f64, vb: f64, na: f64, nb: f64, level: f64) -> Option<Interval> {
    if va == 0.0 && vb == 0.0 {
        return None;
    }
    let r = a / b;
    let wa = va;
    let wb = r * r * vb;
    let df = (wa + wb).powi(2) / (wa * wa / (na - 1.0) + wb * wb / (nb - 1.0));
    let t = t_critical(level, df);
    let t2 = t * t;
    let denom = b * b - t2 * vb;
    if denom <= 0.0 {
        return None;
    }
    let disc = t2 * (a * a * vb + b * b * va - t2 * va * vb);
    if disc < 0.0 {
        return None;
    }
    let root = disc.sqrt();
    Some(Interval {
        // Cut at 0: see the module documentation.
        lo: ((a * b - root) / denom).max(0.0),
        hi: (a * b + root) / denom,
        level,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_satisfy_the_fieller_equation() {
        let base = [10.2, 10.5, 9.9, 10.1, 10.4, 10.3];
        let cand = [8.1, 8.4, 7.9, 8.0, 8.6, 8.2, 8.3];
        let s = speedup(&base, &cand).unwrap();
        let ci = s.ci.unwrap();
        assert!(ci.lo < s.ratio && s.ratio < ci.hi);
        let (a, b) = (mean(&base), mean(&cand));
        let va = sample_variance(&base, a) / 6.0;
        let vb = sample_variance(&cand, b) / 7.0;
        let wb = s.ratio * s.ratio * vb;
        let df = (va + wb).powi(2) / (va * va / 5.0 + wb * wb / 6.0);
        let t = t_critical(0.95, df);
        for rho in [ci.lo, ci.hi] {
            let lhs = (a - rho * b).powi(2);
            let rhs = t * t * (va + rho * rho * vb);
            assert!((lhs - rhs).abs() < 1e-9 * rhs, "{lhs} vs {rhs}");
        }
    }

    #[test]
    fn unbounded_when_denominator_is_noise() {
        // Candidate mean is within its own noise of zero.
        let s = speedup(&[1.0, 1.1, 0.9], &[0.01, 2.0, 0.02]).unwrap();
        assert_eq!(s.ci, None);
        assert!(s.describe().contains("unbounded"));
    }

    #[test]
    fn a_noisy_baseline_cuts_the_interval_at_zero() {
        // The kind of runs as the baseline: its mean (1.18 s) is
        // within its own noise of zero, so Fieller's set reaches below 0.
        let (base, cand) = ([0.2, 0.25, 3.1], [1.0, 1.1, 0.9]);
        let (a, b) = (mean(&base), mean(&cand));
        let va = sample_variance(&base, a) / 3.0;
        let vb = sample_variance(&cand, b) / 3.0;
        let r = a / b;
        let wb = r * r * vb;
        let df = (va + wb).powi(2) / (va * va / 2.0 + wb * wb / 2.0);
        let t2 = t_critical(0.95, df).powi(2);
        let uncut =
            (a * b - (t2 * (a * a * vb + b * b * va - t2 * va * vb)).sqrt()) / (b * b - t2 * vb);
        assert!(uncut < 0.0, "the old lower bound was negative: {uncut}");
        let s = speedup(&base, &cand).unwrap();
        let ci = s.ci.unwrap();
        assert_eq!(ci.lo, 0.0);
        assert!(ci.contains(s.ratio) && ci.hi > 1.0, "{ci:?}");
    }

    #[test]
    fn wording() {
        let s = speedup(&[2.0, 2.1, 1.9], &[1.0, 1.05, 0.95]).unwrap();
        assert!((s.ratio - 2.0).abs() < 1e-12);
        assert!((s.percent_faster - 100.0).abs() < 1e-9);
        assert!((s.percent_time_change + 50.0).abs() < 1e-9);
        assert!(s.describe().starts_with("2.000× faster"));
        let s = speedup(&[1.0, 1.05, 0.95], &[2.0, 2.1, 1.9]).unwrap();
        assert!(s.describe().starts_with("2.000× slower"));
    }

    #[test]
    fn refuses_bad_input() {
        assert_eq!(
            speedup(&[1.0], &[1.0, 2.0]),
            Err(StatsError::NotEnoughRuns { need: 2, got: 1 })
        );
        assert!(matches!(
            speedup(&[1.0, 0.0], &[1.0, 2.0]),
            Err(StatsError::NonPositive { index: 1, .. })
        ));
        let s = speedup(&[1.0, 1.0], &[2.0, 2.0]).unwrap();
        assert_eq!((s.ratio, s.ci), (0.5, None));
    }
}
