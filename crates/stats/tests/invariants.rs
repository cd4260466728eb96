//! Properties every answer must have, whatever the runs.

use pinsight_stats::*;
use proptest::prelude::*;

fn runs(max: usize) -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(0.001f64..1000.0, 1..max)
}

proptest! {
    #[test]
    fn summary_is_ordered(xs in runs(60)) {
        let s = Summary::of(&xs).unwrap();
        prop_assert!(s.min <= s.q1 && s.q1 <= s.median && s.median <= s.q3 && s.q3 <= s.max);
        prop_assert!(s.min <= s.mean * (1.0 + 1e-12) && s.mean <= s.max * (1.0 + 1e-12));
        // Every run is positive: the interval is log-t, around the geometric mean.
        prop_assert_eq!(s.mean_ci_method.is_some(), s.mean_ci.is_some());
        if let Some(ci) = s.mean_ci {
            prop_assert_eq!(s.mean_ci_method, Some(CiMethod::LogT));
            let g = s.geometric_mean.unwrap();
            prop_assert!(ci.lo > 0.0 && ci.contains(g), "{:?} around {}", ci, g);
            prop_assert!(g <= s.mean * (1.0 + 1e-12));
        }
        if let Some(ci) = s.median_ci {
            prop_assert!(ci.contains(s.median));
            prop_assert!(ci.level >= 0.95);
        }
        if let (Some(h), Some(ci)) = (s.harmonic_mean, s.harmonic_mean_ci) {
            prop_assert!(ci.contains(h));
            prop_assert!(h <= s.mean * (1.0 + 1e-12));
        }
        if let Some(sd) = s.stddev { prop_assert!(sd >= 0.0 && sd.is_finite()); }
    }

    #[test]
    fn tests_give_probabilities_and_are_symmetric(a in runs(30), b in runs(30)) {
        if let Ok(w) = welch(&a, &b) {
            prop_assert!((0.0..=1.0).contains(&w.p));
            let r = welch(&b, &a).unwrap();
            prop_assert!((w.p - r.p).abs() < 1e-9 && (w.t + r.t).abs() < 1e-9 * w.t.abs().max(1.0));
        }
        if let Ok(m) = mann_whitney(&a, &b) {
            prop_assert!((0.0..=1.0).contains(&m.p));
            let r = mann_whitney(&b, &a).unwrap();
            prop_assert!((m.p - r.p).abs() < 1e-9);
            prop_assert!((m.u + r.u - (a.len() * b.len()) as f64).abs() < 1e-9);
        }
    }

    #[test]
    fn speedup_interval_contains_ratio(a in runs(30), b in runs(30)) {
        if let Ok(s) = speedup(&a, &b) {
            prop_assert!(s.ratio > 0.0 && s.ratio.is_finite());
            if let Some(ci) = s.ci {
                prop_assert!(ci.lo <= s.ratio && s.ratio <= ci.hi, "{:?}", s);
                // A ratio of positive times never gets a negative bound.
                prop_assert!(ci.lo >= 0.0, "{:?}", s);
            }
            let r = speedup(&b, &a).unwrap();
            prop_assert!((s.ratio * r.ratio - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn outlier_scores_are_finite(xs in prop::collection::vec(0.0f64..10.0, 3..40)) {
        let o = Outliers::detect(&xs).unwrap();
        prop_assert!(o.modified_z.iter().all(|z| z.is_finite()));
        prop_assert!(o.iqr_severe.iter().all(|i| o.iqr_mild.contains(i)));
    }

    #[test]
    fn no_nan_ever(xs in prop::collection::vec(prop_oneof![Just(1.0f64), 0.5f64..2.0], 0..12),
                   ys in prop::collection::vec(prop_oneof![Just(1.0f64), 0.5f64..2.0], 0..12)) {
        if let Ok(c) = compare(&xs, &ys) {
            if let Some(p) = c.p { prop_assert!(p.is_finite()); }
            for s in [&c.baseline, &c.candidate] {
                prop_assert!(s.mean.is_finite() && s.median.is_finite());
                prop_assert!(s.stddev.is_none_or(f64::is_finite));
            }
            if let Some(s) = c.speedup { prop_assert!(s.ratio.is_finite()); }
            if let Some(w) = c.welch { prop_assert!(w.t.is_finite() && w.df.is_finite()); }
        }
    }
}
