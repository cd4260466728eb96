//! A confidence interval for the median that assumes nothing about the
//! distribution of the runs.
//!
//! The number of runs below the true median is Binomial(n, ½), so the
//! interval between order statistics x₍ⱼ₎ and x₍ₙ₋ⱼ₊₁₎ covers the median with
//! probability 1 − 2·P(B ≤ j − 1). We pick the narrowest such interval whose
//! coverage is at least `level` (Conover, *Practical Nonparametric
//! Statistics*, §3.2). Timings are skewed (a run is never faster than the
//! hardware allows, but can be arbitrarily slow), which is why this exists
//! beside the t interval of the mean.

use crate::{check_finite, check_level, sorted, Interval, StatsError};

/// Distribution-free interval of the median at (at least) `level`.
///
/// The returned `level` is the exact coverage achieved. Errors when there are
/// too few runs for any order-statistic interval to reach `level` (for 95 %
/// that is n < 6: even [min, max] covers only 1 − 2/2ⁿ).
pub fn median_ci(xs: &[f64], level: f64) -> Result<Interval, StatsError> {
    check_level(level)?;
    check_finite(xs)?;
    let n = xs.len();
    let Some((lo, hi)) = median_ci_ranks(n, level) else {
        return Err(StatsError::NotEnoughRuns {
            need: min_runs(1.0 - level),
            got: n,
        });
    };
    let s = sorted(xs);
    Ok(Interval {
        lo: s[lo],
        hi: s[hi],
        level: median_ci_coverage(n, lo),
    })
}

/// The ranks-only form of [`median_ci`], for callers that keep their own
/// sorted samples (the latency stop rule, per-CPU speed samples): 0-based
/// ranks `(lo, hi)` of the sorted samples bounding the distribution-free
/// interval of the median at (at least) `level`, or `None` when `n` is too
/// small for any interval to reach it (n < 6 at 95 %) or `level` is not in
/// (0, 1). The same exact binomial rule as [`median_ci`] for every `n`:
/// there is one median interval in pinsight.
pub fn median_ci_ranks(n: usize, level: f64) -> Option<(usize, usize)> {
    if !(level > 0.0 && level < 1.0) {
        return None;
    }
    let j = lower_rank(n, 1.0 - level)?;
    Some((j - 1, n - j))
}

/// The exact coverage of the interval between 0-based ranks `lo` and
/// `n - 1 - lo` of `n` sorted samples: 1 − 2·P(B ≤ lo), B ~ Binomial(n, ½).
pub fn median_ci_coverage(n: usize, lo: usize) -> f64 {
    1.0 - 2.0 * binomial_half_cdf(n, lo)
}

/// The median of unsorted finite values (type 7: the mean of the two
/// middle values when n is even), `None` for no values or a non-finite one.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || check_finite(xs).is_err() {
        return None;
    }
    Some(crate::quantile_sorted(&sorted(xs), 0.5))
}

/// Largest 1-based rank j ≤ n/2 with 2·P(B ≤ j−1) ≤ alpha, if any.
///
/// The cumulative probability is monotone in the rank, so the search starts
/// at the normal approximation's rank and steps to the exact one: a few
/// evaluations of [`binomial_half_cdf`] for any n, where summing the pmf
/// from 0 costs O(n) per call (the latency stop rule asks after every
/// sample).
fn lower_rank(n: usize, alpha: f64) -> Option<usize> {
    use statrs::distribution::{ContinuousCDF, Normal};
    if n == 0 {
        return None;
    }
    let ok = |k: usize| 2.0 * binomial_half_cdf(n, k) <= alpha * (1.0 + 1e-12);
    // 0-based ranks below the middle: k < ceil(n/2).
    let top = n.div_ceil(2) - 1;
    let z = Normal::new(0.0, 1.0)
        .expect("the standard normal exists")
        .inverse_cdf(1.0 - alpha / 2.0);
    let nf = n as f64;
    let mut k = ((nf - z * nf.sqrt()) / 2.0).floor().clamp(0.0, top as f64) as usize;
    while !ok(k) {
        k = k.checked_sub(1)?;
    }
    while k < top && ok(k + 1) {
        k += 1;
    }
    Some(k + 1)
}

/// Fewest runs for which an interval at 1 − alpha exists: 2/2ⁿ ≤ alpha.
fn min_runs(alpha: f64) -> usize {
    (1..=64)
        .find(|&n| 2.0 / 2f64.powi(n as i32) <= alpha)
        .unwrap_or(64)
}

/// P(B ≤ k) for B ~ Binomial(n, ½), exactly: the regularised incomplete
/// beta function I_½(n − k, k + 1), a continued fraction whose cost does not
/// grow with n.
fn binomial_half_cdf(n: usize, k: usize) -> f64 {
    if k >= n {
        return 1.0;
    }
    statrs::function::beta::beta_reg((n - k) as f64, (k + 1) as f64, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn textbook_ranks() {
        // n = 10 at 95 %: [x(2), x(9)], coverage 1 − 2·11/1024 = 0.978515625.
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        let ci = median_ci(&xs, 0.95).unwrap();
        assert_eq!((ci.lo, ci.hi), (2.0, 9.0));
        assert!((ci.level - 0.978515625).abs() < 1e-12);
        // n = 6: only [min, max] works, coverage 1 − 2/64 = 0.96875.
        let ci = median_ci(&[6.0, 1.0, 5.0, 2.0, 4.0, 3.0], 0.95).unwrap();
        assert_eq!((ci.lo, ci.hi), (1.0, 6.0));
        assert!((ci.level - 0.96875).abs() < 1e-12);
        // n = 30 (R: qbinom(0.025, 30, 0.5) = 10 → ranks 10 and 21).
        let xs: Vec<f64> = (1..=30).map(f64::from).collect();
        let ci = median_ci(&xs, 0.95).unwrap();
        assert_eq!((ci.lo, ci.hi), (10.0, 21.0));
        assert!((ci.level - 0.957226054742932).abs() < 1e-9);
    }

    #[test]
    fn ranks_match_the_interval_and_stay_exact_for_large_n() {
        assert_eq!(median_ci_ranks(10, 0.95), Some((1, 8)));
        assert_eq!(median_ci_ranks(30, 0.95), Some((9, 20)));
        assert_eq!(median_ci_ranks(5, 0.95), None);
        assert_eq!(median_ci_ranks(10, 1.0), None);
        // Past the point where 2^-n underflows: still a valid, symmetric
        // interval with coverage at least the level, and the next rank in
        // would fall short of it.
        for n in [1100, 5000, 100_000] {
            let (lo, hi) = median_ci_ranks(n, 0.95).unwrap();
            assert_eq!(lo + hi, n - 1);
            assert!(median_ci_coverage(n, lo) >= 0.95, "n={n}");
            assert!(median_ci_coverage(n, lo + 1) < 0.95, "n={n}");
        }
    }

    /// The rank by summing the binomial pmf from 0 (log-space recurrence):
    /// slow, obviously right.
    fn summed_lower_rank(n: usize, alpha: f64) -> Option<usize> {
        let mut log_pmf = -(n as f64) * std::f64::consts::LN_2;
        let (mut cdf, mut best) = (0.0, None);
        for k in 0..n.div_ceil(2) {
            cdf += log_pmf.exp();
            if 2.0 * cdf > alpha * (1.0 + 1e-12) {
                break;
            }
            best = Some(k + 1);
            log_pmf += ((n - k) as f64).ln() - ((k + 1) as f64).ln();
        }
        best
    }

    #[test]
    fn searched_ranks_equal_summed_ranks() {
        for alpha in [0.05, 0.01, 0.1] {
            for n in 0..3000 {
                assert_eq!(
                    lower_rank(n, alpha),
                    summed_lower_rank(n, alpha),
                    "n={n} alpha={alpha}"
                );
            }
        }
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn too_few_runs() {
        assert_eq!(
            median_ci(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.95),
            Err(StatsError::NotEnoughRuns { need: 6, got: 5 })
        );
        assert_eq!(
            median_ci(&[], 0.95),
            Err(StatsError::NotEnoughRuns { need: 6, got: 0 })
        );
        assert_eq!(median_ci(&[1.0; 10], 1.0), Err(StatsError::BadLevel(1.0)));
    }
}
