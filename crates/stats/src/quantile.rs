//! Sample quantiles.
//!
//! We use Hyndman & Fan type 7 (linear interpolation between order
//! statistics), the default of R's `quantile`, NumPy's `percentile` and
//! hyperfine's exported quartiles, so numbers match what users get elsewhere.

/// The `p`-quantile (0 ≤ p ≤ 1) of an ascending, non-empty, finite slice.
///
/// Panics on an empty slice: callers check n first (a programming error, not input).
pub fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    assert!(!sorted.is_empty(), "quantile of an empty sample");
    let p = p.clamp(0.0, 1.0);
    let h = (sorted.len() - 1) as f64 * p;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    let frac = h - lo as f64;
    if lo == hi {
        sorted[lo]
    } else {
        // a + frac*(b-a) is exact at frac=0 and keeps a ≤ result ≤ b.
        let a = sorted[lo];
        let b = sorted[hi];
        (a + frac * (b - a)).clamp(a, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_r_type7() {
        // R: quantile(c(1,2,3,4,5,6,7,8,9,10), c(.25,.5,.75)) -> 3.25 5.50 7.75
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(quantile_sorted(&xs, 0.25), 3.25);
        assert_eq!(quantile_sorted(&xs, 0.5), 5.5);
        assert_eq!(quantile_sorted(&xs, 0.75), 7.75);
        assert_eq!(quantile_sorted(&xs, 0.0), 1.0);
        assert_eq!(quantile_sorted(&xs, 1.0), 10.0);
        assert_eq!(quantile_sorted(&[4.0], 0.3), 4.0);
    }
}
