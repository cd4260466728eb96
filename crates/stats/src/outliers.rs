//! Outlier detection, with the warnings hyperfine users know.
//!
//! Two views of the same question:
//! - modified Z-scores (Iglewicz & Hoaglin 1993): (x − median) / MAD, the
//!   robust analogue of a Z-score. hyperfine warns when any score exceeds
//!   1.4826·10 (ten robust standard deviations), and says "the first run was
//!   slow" when that run is the outlier — the classic cold-cache symptom.
//! - Tukey fences on the interquartile range (1.5·IQR mild, 3·IQR severe),
//!   which criterion reports; they are kinder to small samples.
//!
//! When more than half the runs are identical the MAD is 0 and every other
//! value would have an infinite score; we then fall back to the mean absolute
//! deviation scaled to the same units (×1.2533/1.4826, as SPSS does) and, if
//! that is zero too, nothing is an outlier.

use crate::quantile::quantile_sorted;
use crate::{check_finite, sorted, StatsError};
use serde::Serialize;

/// hyperfine's threshold on |(x − median)/MAD|: ten robust σ.
pub const HYPERFINE_OUTLIER_THRESHOLD: f64 = 1.4826 * 10.0;

/// Which runs look like outliers, and what to tell the user.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outliers {
    /// (x − median)/MAD for each run, in input order.
    pub modified_z: Vec<f64>,
    /// Indices whose |modified Z| exceeds [`HYPERFINE_OUTLIER_THRESHOLD`].
    pub severe_z: Vec<usize>,
    /// Indices outside the 1.5·IQR Tukey fences (includes `iqr_severe`).
    pub iqr_mild: Vec<usize>,
    /// Indices outside the 3·IQR Tukey fences.
    pub iqr_severe: Vec<usize>,
    /// The first run is the slowest outlier: caches (page cache, branch
    /// predictors, CPU frequency) were cold. Assumes larger = slower (times).
    pub slow_first_run: bool,
}

impl Outliers {
    /// Scores `xs` (in run order). Errors on fewer than 3 runs (no run can
    /// stand out of two) or non-finite values.
    pub fn detect(xs: &[f64]) -> Result<Outliers, StatsError> {
        check_finite(xs)?;
        if xs.len() < 3 {
            return Err(StatsError::NotEnoughRuns {
                need: 3,
                got: xs.len(),
            });
        }
        let s = sorted(xs);
        let median = quantile_sorted(&s, 0.5);
        let scale = robust_scale(xs, median);
        let modified_z: Vec<f64> = xs
            .iter()
            .map(|x| {
                if scale > 0.0 {
                    (x - median) / scale
                } else {
                    0.0
                }
            })
            .collect();
        let severe_z: Vec<usize> = (0..xs.len())
            .filter(|&i| modified_z[i].abs() > HYPERFINE_OUTLIER_THRESHOLD)
            .collect();
        let (q1, q3) = (quantile_sorted(&s, 0.25), quantile_sorted(&s, 0.75));
        let iqr = q3 - q1;
        let outside = |k: f64| -> Vec<usize> {
            (0..xs.len())
                .filter(|&i| xs[i] < q1 - k * iqr || xs[i] > q3 + k * iqr)
                .collect()
        };
        let slow_first_run = modified_z[0] > HYPERFINE_OUTLIER_THRESHOLD;
        Ok(Outliers {
            iqr_mild: outside(1.5),
            iqr_severe: outside(3.0),
            modified_z,
            severe_z,
            slow_first_run,
        })
    }

    /// The hyperfine-style warning for these runs, if any. It names no
    /// command-line option: tools that have a warm-up flag add it.
    pub fn warning(&self) -> Option<String> {
        if self.slow_first_run {
            Some(
                "the first run was significantly slower than the rest: caches were probably cold; \
                 consider warm-up runs"
                    .to_string(),
            )
        } else if !self.severe_z.is_empty() {
            Some(format!(
                "statistical outliers were detected ({} of {} runs); consider re-running on a quiet \
                 system without interference from other programs",
                self.severe_z.len(),
                self.modified_z.len()
            ))
        } else {
            None
        }
    }

    /// True when any run is an outlier by either rule.
    pub fn any(&self) -> bool {
        !self.severe_z.is_empty() || !self.iqr_mild.is_empty()
    }
}

/// MAD (raw, as hyperfine), or the scaled mean absolute deviation when the MAD is 0.
fn robust_scale(xs: &[f64], median: f64) -> f64 {
    let deviations = sorted(&xs.iter().map(|x| (x - median).abs()).collect::<Vec<_>>());
    let mad = quantile_sorted(&deviations, 0.5);
    if mad > 0.0 {
        return mad;
    }
    let mean_ad = deviations.iter().sum::<f64>() / deviations.len() as f64;
    mean_ad * 1.253314 / 1.4826
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_first_run_is_reported() {
        let xs = [2.0, 1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01];
        let o = Outliers::detect(&xs).unwrap();
        assert!(o.slow_first_run);
        assert_eq!(o.severe_z, vec![0]);
        assert!(o.warning().unwrap().contains("first run"));
        assert_eq!(o.iqr_severe, vec![0]);
    }

    #[test]
    fn later_outlier_is_a_general_warning() {
        let xs = [1.00, 1.01, 0.99, 5.0, 1.02, 0.98, 1.00, 1.01];
        let o = Outliers::detect(&xs).unwrap();
        assert!(!o.slow_first_run);
        assert_eq!(o.severe_z, vec![3]);
        assert!(o
            .warning()
            .unwrap()
            .contains("outliers were detected (1 of 8 runs)"));
    }

    #[test]
    fn quiet_runs_have_no_warning() {
        let o = Outliers::detect(&[1.0, 1.01, 0.99, 1.02, 0.98]).unwrap();
        assert_eq!(o.warning(), None);
        assert!(!o.any());
    }

    #[test]
    fn zero_mad_does_not_explode() {
        // Most runs identical (quantised timer): MAD = 0, scores stay finite.
        let o = Outliers::detect(&[1.0, 1.0, 1.0, 1.0, 1.0, 1.001]).unwrap();
        assert!(o.modified_z.iter().all(|z| z.is_finite()));
        let o = Outliers::detect(&[3.0; 5]).unwrap();
        assert!(o.modified_z.iter().all(|&z| z == 0.0));
        assert_eq!(o.warning(), None);
        assert_eq!(
            Outliers::detect(&[1.0, 2.0]),
            Err(StatsError::NotEnoughRuns { need: 3, got: 2 })
        );
    }
}
