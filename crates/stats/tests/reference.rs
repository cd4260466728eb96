//! Numbers checked against SciPy 1.17 / NumPy 2.4 (the Python that produced
//! each constant is quoted beside it), so `compare` agrees with the tools
//! users cross-check with.

use pinsight_stats::*;

const A: [f64; 10] = [
    1.183, 1.201, 1.176, 1.244, 1.190, 1.205, 1.187, 1.312, 1.198, 1.179,
];
const B: [f64; 12] = [
    1.102, 1.095, 1.120, 1.099, 1.131, 1.088, 1.104, 1.097, 1.110, 1.115, 1.093, 1.101,
];

fn close(got: f64, want: f64, rel: f64) {
    assert!(
        (got - want).abs() <= rel * want.abs().max(1e-300),
        "got {got}, want {want}"
    );
}

#[test]
fn summary_matches_numpy_and_scipy() {
    let s = Summary::of(&A).unwrap();
    assert_eq!(s.n, 10);
    close(s.mean, 1.2075, 1e-14); // np.mean
    close(s.stddev.unwrap(), 0.04152977512848129, 1e-12); // np.std(ddof=1)
    close(s.median, 1.194, 1e-14); // np.median
    close(s.q1, 1.1840000000000002, 1e-14); // np.percentile(a, 25)
    close(s.q3, 1.2040000000000002, 1e-14); // np.percentile(a, 75)
    let ci = mean_interval(&A, 0.95).unwrap(); // stats.t.interval(0.95, 9, loc=mean, scale=sem)
    close(ci.lo, 1.1777913885584321, 1e-9);
    close(ci.hi, 1.237208611441568, 1e-9);
    // Every run is positive, so the summary's interval is log-t:
    // l = np.log(a); np.exp(stats.t.interval(0.95, 9, loc=l.mean(), scale=stats.sem(l)))
    let ci = s.mean_ci.unwrap();
    assert_eq!(s.mean_ci_method, Some(CiMethod::LogT));
    close(ci.lo, 1.1783520898790667, 1e-9);
    close(ci.hi, 1.2361006975862183, 1e-9);
    close(s.geometric_mean.unwrap(), 1.206881038173064, 1e-13); // stats.gmean
    close(s.harmonic_mean.unwrap(), 1.2062850760326507, 1e-13); // stats.hmean
    let h = s.harmonic_mean_ci.unwrap();
    assert!(h.lo < s.harmonic_mean.unwrap() && s.harmonic_mean.unwrap() < h.hi);
    assert_eq!((s.min, s.max), (1.176, 1.312));
}

#[test]
fn welch_matches_scipy() {
    // stats.ttest_ind(A, B, equal_var=False)
    let w = welch(&A, &B).unwrap();
    close(w.t, 7.5620563016102915, 1e-10);
    close(w.df, 10.333562703785939, 1e-10);
    close(w.p, 1.5936955211821954e-05, 1e-6);
}

#[test]
fn mann_whitney_exact_matches_scipy() {
    // stats.mannwhitneyu(A, B, method='exact')
    let m = mann_whitney(&A, &B).unwrap();
    assert_eq!(m.method, MwMethod::Exact);
    assert_eq!(m.u, 120.0);
    close(m.p, 3.092882349848294e-06, 1e-9);
    // stats.mannwhitneyu([3.1,2.9,3.4,3.0,3.3], [3.2,3.6,3.5,3.8,3.7,3.9], method='exact')
    let m = mann_whitney(&[3.1, 2.9, 3.4, 3.0, 3.3], &[3.2, 3.6, 3.5, 3.8, 3.7, 3.9]).unwrap();
    assert_eq!(m.u, 2.0);
    close(m.p, 0.017316017316017316, 1e-12);
}

#[test]
fn mann_whitney_normal_approximation_matches_scipy() {
    // Ties: stats.mannwhitneyu(e, f, method='asymptotic', use_continuity=True)
    let e = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 5.0, 5.0, 6.0];
    let f = [3.0, 4.0, 4.0, 5.0, 5.0, 6.0, 6.0, 6.0, 7.0, 8.0, 8.0];
    let m = mann_whitney(&e, &f).unwrap();
    assert_eq!(m.method, MwMethod::NormalApprox);
    assert_eq!(m.u, 18.0);
    close(m.p, 0.009299807053179105, 1e-9);
    // Large samples without ties: 25 vs 25.
    let g: Vec<f64> = (1..=25).map(f64::from).collect();
    let h: Vec<f64> = g.iter().map(|x| x + 3.5).collect();
    let m = mann_whitney(&g, &h).unwrap();
    assert_eq!(m.method, MwMethod::NormalApprox);
    assert_eq!(m.u, 231.0);
    close(m.p, 0.11603618751300343, 1e-9);
}

#[test]
fn skewness_matches_scipy() {
    // stats.skew(A, bias=False)
    close(skewness(&A).unwrap(), 2.1437349189488977, 1e-12);
    assert!(is_skewed(&A));
    assert!(!is_skewed(&B));
}

#[test]
fn compare_picks_the_right_test() {
    // A has a slow outlier (1.312) and is skewed: Mann–Whitney is quoted.
    let c = compare(&A, &B).unwrap();
    assert_eq!(c.test, TestKind::MannWhitney);
    assert!(c.significant);
    assert_eq!(c.p, Some(c.mann_whitney.unwrap().p));
    let s = c.speedup.unwrap();
    assert!(
        s.ratio > 1.0 && s.ci.unwrap().lo > 1.0,
        "candidate B is faster: {s:?}"
    );
    // Symmetric, plentiful runs: Welch.
    let x: Vec<f64> = (0..12)
        .map(|i| 2.0 + 0.01 * ((i * 7) % 12) as f64)
        .collect();
    let y: Vec<f64> = x.iter().map(|v| v + 0.004).collect();
    let c = compare(&x, &y).unwrap();
    assert_eq!(c.test, TestKind::Welch);
    assert!(!c.significant);
    // Few runs: Mann–Whitney, and a note when something cannot be computed.
    let c = compare(&[1.0], &[2.0, 2.1]).unwrap();
    assert_eq!(c.test, TestKind::MannWhitney);
    assert!(c.welch.is_none() && c.speedup.is_none());
    assert!(c.notes.iter().any(|n| n.contains("not enough runs")));
    assert!(compare(&[], &[1.0]).is_err());
}

#[test]
fn seed_harmonic_mean_method() {
    // The ping-pong seed reports a harmonic-mean rate with a 95 % CI; our CI
    // is the inverted t interval of the mean of reciprocals (i.e. of times).
    let rates = [15.2e6, 15.9e6, 15.5e6, 15.7e6, 15.3e6, 15.6e6];
    let s = Summary::of(&rates).unwrap();
    let times: Vec<f64> = rates.iter().map(|r| 1.0 / r).collect();
    let t = mean_interval(&times, 0.95).unwrap();
    let h = s.harmonic_mean_ci.unwrap();
    close(h.lo, 1.0 / t.hi, 1e-12);
    close(h.hi, 1.0 / t.lo, 1e-12);
}
