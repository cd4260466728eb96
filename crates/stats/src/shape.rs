//! The shape of a sample: is the mean a fair summary, and is a t-test fair?
//!
//! Timings are bounded below by the hardware and unbounded above (a
//! preemption, a migration to an E-core), so they are often right-skewed.
//! Welch's test assumes roughly normal means; with few or skewed runs the
//! rank-based Mann–Whitney test is the safer choice.

use crate::{check_finite, mean};

/// |skewness| above this counts as "highly skewed" (Bulmer, *Principles of
/// Statistics*, 1979: beyond ±1 a distribution is highly skewed).
pub const SKEW_THRESHOLD: f64 = 1.0;

/// Adjusted Fisher–Pearson sample skewness G1 (what Excel's SKEW, SAS and
/// `scipy.stats.skew(bias=False)` report). `None` for n < 3, zero variance
/// or non-finite samples.
pub fn skewness(xs: &[f64]) -> Option<f64> {
    check_finite(xs).ok()?;
    let n = xs.len();
    if n < 3 {
        return None;
    }
    let m = mean(xs);
    let nf = n as f64;
    let m2 = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / nf;
    let m3 = xs.iter().map(|x| (x - m).powi(3)).sum::<f64>() / nf;
    if m2 == 0.0 {
        return None;
    }
    let g1 = m3 / m2.powf(1.5);
    Some(g1 * (nf * (nf - 1.0)).sqrt() / (nf - 2.0))
}

/// True when |G1| > [`SKEW_THRESHOLD`]. Samples whose skewness is undefined
/// (n < 3, no spread) are not called skewed.
pub fn is_skewed(xs: &[f64]) -> bool {
    skewness(xs).is_some_and(|g| g.abs() > SKEW_THRESHOLD)
}
