//! The confidence interval of a mean stays positive for positive samples
//! (issue 37: "rating_mips 95% CI -1057 … 6528 MIPS", "elapsed 95% CI
//! -0.31 s"), and keeps the Student t interval where values can be ≤ 0.

use pinsight_stats::*;
use proptest::prelude::*;

fn close(got: f64, want: f64, rel: f64) {
    assert!(
        (got - want).abs() <= rel * want.abs(),
        "got {got}, want {want}"
    );
}

#[test]
fn the_issues_data_gives_a_positive_interval() {
    // Three runs, one 12× slower than the others.
    let xs = [0.2, 0.25, 3.1];
    // The old interval (Student t of the mean) claims negative time:
    // stats.t.interval(0.95, 2, loc=np.mean(x), scale=stats.sem(x))
    let t = mean_interval(&xs, 0.95).unwrap();
    close(t.lo, -2.9405098526233937, 1e-9);
    close(t.hi, 5.307176519290061, 1e-9);
    // The interval every command now shows: log-t, around the geometric mean.
    // np.exp(stats.t.interval(0.95, 2, loc=np.log(x).mean(), scale=stats.sem(np.log(x))))
    let c = mean_ci(&xs, 0.95).unwrap();
    assert_eq!(c.method, CiMethod::LogT);
    close(c.interval.lo, 0.012245976424271065, 1e-9);
    close(c.interval.hi, 23.562844278663864, 1e-9);
    close(c.estimate, 0.5371685354944833, 1e-12); // stats.gmean
    let s = Summary::of(&xs).unwrap();
    assert_eq!(s.mean_ci, Some(c.interval));
    assert_eq!(s.mean_ci_method, Some(CiMethod::LogT));
    assert_eq!(s.geometric_mean, Some(c.estimate));
}

proptest! {
    #[test]
    fn positive_samples_give_a_positive_interval_around_the_estimate(
        xs in prop::collection::vec(1e-9f64..1e9, 2..40)
    ) {
        if let Ok(c) = mean_ci(&xs, 0.95) {
            prop_assert_eq!(c.method, CiMethod::LogT);
            prop_assert!(c.interval.lo > 0.0, "{:?}", c);
            prop_assert!(c.interval.lo <= c.interval.hi && c.interval.hi.is_finite());
            prop_assert!(c.interval.contains(c.estimate), "{:?}", c);
            // The geometric mean lies between the smallest and largest run.
            let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let max = xs.iter().copied().fold(0.0, f64::max);
            prop_assert!(min * (1.0 - 1e-12) <= c.estimate && c.estimate <= max * (1.0 + 1e-12));
        } else {
            // Only equal runs have no interval.
            prop_assert!(xs.iter().all(|&x| x == xs[0]));
        }
    }

    #[test]
    fn a_non_positive_sample_keeps_the_t_interval(
        xs in prop::collection::vec(-1e3f64..1e3, 2..40),
        zero in any::<prop::sample::Index>()
    ) {
        let mut xs = xs;
        let i = zero.index(xs.len());
        xs[i] = -xs[i].abs();
        if let Ok(c) = mean_ci(&xs, 0.95) {
            prop_assert_eq!(c.method, CiMethod::T);
            prop_assert_eq!(c.interval, mean_interval(&xs, 0.95).unwrap());
            prop_assert!(c.interval.contains(c.estimate));
        }
    }

    #[test]
    fn log_t_is_scale_equivariant(
        xs in prop::collection::vec(0.001f64..1000.0, 2..20),
        k in 0.001f64..1000.0
    ) {
        // Seconds or milliseconds: the same interval, in the other unit.
        if let (Ok(a), Ok(b)) = (
            log_t_interval(&xs, 0.95),
            log_t_interval(&xs.iter().map(|x| x * k).collect::<Vec<_>>(), 0.95),
        ) {
            prop_assert!((a.lo * k - b.lo).abs() <= 1e-9 * b.lo);
            prop_assert!((a.hi * k - b.hi).abs() <= 1e-9 * b.hi);
        }
    }
}
