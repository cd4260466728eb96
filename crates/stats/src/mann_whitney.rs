//! The Mann–Whitney U test (Wilcoxon rank-sum): "does one placement tend to
//! give larger values than the other?" without assuming normal timings.
//!
//! p-values: exact (enumerating the null distribution of U) when both
//! samples have at most [`EXACT_MAX_N`] runs and there are no ties; otherwise
//! the normal approximation with tie correction of the variance and a
//! continuity correction of ½ — the same choices as R's `wilcox.test` and
//! `scipy.stats.mannwhitneyu(method="asymptotic", use_continuity=True)`.

use crate::{check_two_samples, StatsError};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};

/// Largest sample size (per side) for which the exact distribution is used.
/// C(40, 20) ≈ 1.4·10¹¹ arrangements still count exactly in an f64.
pub const EXACT_MAX_N: usize = 20;

/// How the p-value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MwMethod {
    Exact,
    NormalApprox,
}

/// Result of the two-sided Mann–Whitney test of `a` against `b`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MannWhitney {
    /// U of the first sample: the number of pairs (aᵢ, bⱼ) with aᵢ > bⱼ,
    /// ties counting ½ (scipy's `statistic`).
    pub u: f64,
    /// Two-sided p-value.
    pub p: f64,
    pub method: MwMethod,
    /// Probability of superiority U/(na·nb): P(a > b) + ½P(a = b). 0.5 = no effect.
    pub effect: f64,
}

/// Two-sided Mann–Whitney U test.
///
/// Errors: an empty side, non-finite samples, or every value tied (the
/// rank variance is zero: there is no ordering to test).
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Result<MannWhitney, StatsError> {
    check_two_samples(a, b, 1)?;
    let (na, nb) = (a.len(), b.len());
    let ranked = ranks(a, b);
    let rank_sum_a: f64 = ranked.ranks[..na].iter().sum();
    let u = rank_sum_a - (na * (na + 1)) as f64 / 2.0;
    let effect = u / (na * nb) as f64;
    let exact = na <= EXACT_MAX_N && nb <= EXACT_MAX_N && ranked.tie_term == 0.0;
    let (p, method) = if exact {
        (exact_p(u, na, nb), MwMethod::Exact)
    } else {
        (
            normal_p(u, na, nb, ranked.tie_term)?,
            MwMethod::NormalApprox,
        )
    };
    Ok(MannWhitney {
        u,
        p: p.clamp(0.0, 1.0),
        method,
        effect,
    })
}

struct Ranked {
    /// Mid-ranks (1-based) of a's values followed by b's.
    ranks: Vec<f64>,
    /// Σ(t³ − t) over groups of t tied values.
    tie_term: f64,
}

fn ranks(a: &[f64], b: &[f64]) -> Ranked {
    let all: Vec<f64> = a.iter().chain(b).copied().collect();
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by(|&i, &j| all[i].total_cmp(&all[j]));
    let mut ranks = vec![0.0; all.len()];
    let mut tie_term = 0.0;
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && all[order[end]] == all[order[start]] {
            end += 1;
        }
        // Positions start..end (0-based) share the mid-rank.
        let mid = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = mid;
        }
        let t = (end - start) as f64;
        tie_term += t * t * t - t;
        start = end;
    }
    Ranked { ranks, tie_term }
}

/// Two-sided exact p: 2·min(P(U ≤ u), P(U ≥ u)), capped at 1.
fn exact_p(u: f64, na: usize, nb: usize) -> f64 {
    let counts = u_distribution(na, nb);
    let total: f64 = counts.iter().sum();
    let u = u.round() as usize; // no ties → U is an integer
    let lower: f64 = counts[..=u].iter().sum();
    let upper: f64 = counts[u..].iter().sum();
    (2.0 * lower.min(upper) / total).min(1.0)
}

/// Number of arrangements giving each U = 0..=na·nb under the null, by the
/// recurrence f(m, n, u) = f(m−1, n, u−n) + f(m, n−1, u) (Mann & Whitney 1947).
fn u_distribution(na: usize, nb: usize) -> Vec<f64> {
    let max_u = na * nb;
    // f[n][u] for the current m; start with m = 0: only U = 0, one way.
    let mut prev: Vec<Vec<f64>> = (0..=nb)
        .map(|_| {
            let mut v = vec![0.0; max_u + 1];
            v[0] = 1.0;
            v
        })
        .collect();
    for _m in 1..=na {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; max_u + 1]; nb + 1];
        cur[0][0] = 1.0; // n = 0: U is always 0
        for n in 1..=nb {
            for u in 0..=max_u {
                let from_m = if u >= n { prev[n][u - n] } else { 0.0 };
                cur[n][u] = from_m + cur[n - 1][u];
            }
        }
        prev = cur;
    }
    prev.swap_remove(nb)
}

fn normal_p(u: f64, na: usize, nb: usize, tie_term: f64) -> Result<f64, StatsError> {
    let (na, nb) = (na as f64, nb as f64);
    let n = na + nb;
    let mu = na * nb / 2.0;
    let var = na * nb / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if var <= 0.0 || !var.is_finite() {
        return Err(StatsError::AllTied);
    }
    let z = ((u - mu).abs() - 0.5).max(0.0) / var.sqrt();
    let normal = Normal::new(0.0, 1.0).expect("standard normal");
    Ok(2.0 * normal.sf(z))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_sums_to_binomial() {
        // Σ counts = C(na+nb, na).
        let c = u_distribution(3, 4);
        assert_eq!(c.iter().sum::<f64>(), 35.0);
        assert_eq!(
            c,
            vec![1.0, 1.0, 2.0, 3.0, 4.0, 4.0, 5.0, 4.0, 4.0, 3.0, 2.0, 1.0, 1.0]
        );
        let c = u_distribution(20, 20);
        assert_eq!(c.iter().sum::<f64>(), 137_846_528_820.0);
    }

    #[test]
    fn all_tied_is_an_error() {
        assert_eq!(
            mann_whitney(&[1.0; 25], &[1.0; 25]),
            Err(StatsError::AllTied)
        );
    }
}
