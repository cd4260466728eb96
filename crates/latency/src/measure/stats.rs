//! When to stop sampling a pair: a distribution-free confidence interval
//! for the median.
//!
//! Latency samples on a shared machine are not normal: most are tight
//! around the true value and a few are hit by an interrupt or a preemption
//! and are many times larger. A mean ± t·σ interval is dragged around by
//! those; the median and its order-statistic interval are not. For `n`
//! samples the number below the true median is Binomial(n, ½), so the
//! sorted samples `x[k]` and `x[n-1-k]` (0-based) bracket the median with
//! probability `1 - 2·P(B ≤ k)`; we take the largest `k` whose coverage is
//! still at least the requested confidence — exactly, for every `n`, by
//! `pinsight_stats::median_ci_ranks`.

/// The confidence the stop rule asks of a pair's median interval.
pub const LEVEL: f64 = 0.95;

/// 0-based ranks `(lo, hi)` of the sorted samples bounding a 95%
/// confidence interval of the median of `n` samples; `None` when `n` is too
/// small for any interval to reach 95% (n < 6). The exact binomial ranks of
/// `pinsight_stats::median_ci_ranks` (one median interval in pinsight),
/// whose cost does not grow with `n`.
pub fn median_ci_ranks(n: usize) -> Option<(usize, usize)> {
    pinsight_stats::median_ci_ranks(n, LEVEL)
}

/// What the samples of one pair say.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub median: f64,
    pub mean: f64,
    /// The 95% interval of the median; equal to the median when there are
    /// too few samples for one (then `ci_reached` is false).
    pub ci_low: f64,
    pub ci_high: f64,
    pub samples: usize,
    /// Whether there were enough samples for a 95% interval (kept so that
    /// [`Summary::within`], checked after every sample, does not redo the
    /// rank search).
    pub ci_reached: bool,
}

impl Summary {
    /// Whether the interval lies within `±rel` of the median.
    pub fn within(&self, rel: f64) -> bool {
        self.ci_reached
            && self.ci_low >= self.median * (1.0 - rel)
            && self.ci_high <= self.median * (1.0 + rel)
    }
}

/// Samples kept sorted as they arrive, so the stopping rule can be checked
/// after every sample at O(n) cost (n is at most a few thousand).
#[derive(Clone, Debug, Default)]
pub struct SortedSamples {
    sorted: Vec<f64>,
    sum: f64,
}

impl SortedSamples {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, v: f64) {
        let at = self.sorted.partition_point(|&x| x < v);
        self.sorted.insert(at, v);
        self.sum += v;
    }

    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// Median, mean and interval; `None` without samples.
    pub fn summary(&self) -> Option<Summary> {
        let n = self.sorted.len();
        if n == 0 {
            return None;
        }
        let s = &self.sorted;
        let median = if n % 2 == 1 {
            s[n / 2]
        } else {
            (s[n / 2 - 1] + s[n / 2]) / 2.0
        };
        let ranks = median_ci_ranks(n);
        let (ci_low, ci_high) = match ranks {
            Some((lo, hi)) => (s[lo], s[hi]),
            None => (median, median),
        };
        Some(Summary {
            median,
            mean: self.sum / n as f64,
            ci_low,
            ci_high,
            samples: n,
            ci_reached: ranks.is_some(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_match_published_tables() {
        // Conover, Practical Nonparametric Statistics, table A3 / the
        // classic sign-test table: n -> 1-based lower rank of the 95% CI.
        for (n, lower_1based) in [
            (6, 1),
            (8, 1),
            (9, 2),
            (10, 2),
            (11, 2),
            (12, 3),
            (15, 4),
            (20, 6),
            (30, 10),
            (50, 18),
            (100, 40),
        ] {
            let (lo, hi) = median_ci_ranks(n).unwrap();
            assert_eq!(lo + 1, lower_1based, "n={n}");
            assert_eq!(hi, n - 1 - lo, "n={n}");
        }
        assert_eq!(median_ci_ranks(5), None);
    }

    #[test]
    fn ranks_are_the_exact_ones_of_pinsight_stats_for_large_n_too() {
        for n in [6, 100, 2000, 2001, 5000] {
            assert_eq!(
                median_ci_ranks(n),
                pinsight_stats::median_ci_ranks(n, 0.95),
                "n={n}"
            );
        }
        // Asked again: the same answer.
        assert_eq!(
            median_ci_ranks(5000),
            pinsight_stats::median_ci_ranks(5000, 0.95)
        );
        let (lo, hi) = median_ci_ranks(5000).unwrap();
        assert!(lo < 2500 && hi > 2500 && lo + hi == 4999);
    }

    #[test]
    #[ignore = "timing probe, run by hand"]
    fn cost_of_the_stop_rule_ranks() {
        let t0 = std::time::Instant::now();
        for n in 0..=2000 {
            let _ = pinsight_stats::median_ci_ranks(n, 0.95);
        }
        eprintln!("ranks for n = 0..=2000: {:?}", t0.elapsed());
        let t0 = std::time::Instant::now();
        let _ = pinsight_stats::median_ci_ranks(50_000, 0.95);
        eprintln!("ranks for n = 50000: {:?}", t0.elapsed());
    }

    #[test]
    fn summary_is_robust_to_outliers() {
        let mut s = SortedSamples::new();
        for i in 0..100 {
            s.push(if i % 25 == 0 {
                10_000.0
            } else {
                100.0 + (i % 3) as f64 * 0.1
            });
        }
        let sum = s.summary().unwrap();
        assert!((sum.median - 100.1).abs() < 0.11, "{sum:?}");
        assert!(sum.mean > 300.0);
        assert!(sum.within(0.01), "{sum:?}");
        assert_eq!(sum.samples, 100);
    }

    #[test]
    fn few_samples_never_reach_the_target() {
        let mut s = SortedSamples::new();
        for _ in 0..5 {
            s.push(50.0);
        }
        let sum = s.summary().unwrap();
        assert_eq!((sum.ci_low, sum.ci_high), (50.0, 50.0));
        assert!(!sum.within(0.01));
        s.push(50.0);
        assert!(s.summary().unwrap().within(0.01));
        assert!(SortedSamples::new().summary().is_none());
    }
}
