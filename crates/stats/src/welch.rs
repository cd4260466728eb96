//! Welch's unequal-variances t-test.
//!
//! Two placements rarely have the same run-to-run noise (a thread pinned to
//! an E-core is slower *and* noisier), so the pooled-variance Student test
//! would be wrong; Welch's test with Welch–Satterthwaite degrees of freedom
//! is the standard answer (it is also what `scipy.stats.ttest_ind(...,
//! equal_var=False)` and R's default `t.test` compute).

use crate::{check_two_samples, mean, sample_variance, StatsError};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Result of Welch's test of "mean(a) = mean(b)".
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Welch {
    /// (mean(a) − mean(b)) / √(s²a/na + s²b/nb).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// Welch's t-test of `a` against `b`.
///
/// Errors: fewer than 2 runs on either side, non-finite samples, or both
/// samples without any spread (t would be ±∞ or 0/0).
pub fn welch(a: &[f64], b: &[f64]) -> Result<Welch, StatsError> {
    check_two_samples(a, b, 2)?;
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (ma, mb) = (mean(a), mean(b));
    let (va, vb) = (sample_variance(a, ma) / na, sample_variance(b, mb) / nb);
    let se2 = va + vb;
    if se2 == 0.0 {
        return Err(StatsError::ZeroVariance);
    }
    let t = (ma - mb) / se2.sqrt();
    let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
    let dist = StudentsT::new(0.0, 1.0, df).expect("Welch df is positive");
    let p = (2.0 * dist.sf(t.abs())).clamp(0.0, 1.0);
    Ok(Welch { t, df, p })
}
