//! The `at_bound` gate: a fitted parameter at a bound of its range that
//! the runs do not bracket makes the model untrusted, and the
//! recommendation the best measured configuration; one the runs bracket
//! (they reject values past the bound) does not.

use crate::common::{machine, simulate, theta};
use pinsight_tune_model::{
    analyse, parse_runs, Bound, Caveat, Config, FitOptions, Goal, ModelKind, ParamStatus,
    RecommendedBy, TuneReport, AT_BOUND_CHI2, SF_MAX,
};

const OPTS: FitOptions = FitOptions {
    bootstrap: 50,
    seed: 12,
};

fn at_bound(caveats: &[Caveat]) -> Vec<(&'static str, Bound, f64)> {
    caveats
        .iter()
        .filter_map(|c| match c {
            Caveat::AtBound {
                param,
                bound,
                change,
                ..
            } => Some((*param, *bound, *change)),
            _ => None,
        })
        .collect()
}

/// The issue-34 shape: P-cores alone scale, hybrids gain little, no
/// E-only run. sf runs to 16 where nothing pins it; the model picked
/// 8P+16E, measured 18% slower than the best measured 8P+8E, without a
/// caveat. Now: the at_bound caveat names sf at its upper bound, and the
/// recommendation is the best measured configuration.
#[test]
fn sf_at_its_upper_bound_unpinned_recommends_the_best_measured() {
    let runs = parse_runs(include_str!("data/e-cores-gain-nothing.csv")).unwrap();
    let r = analyse(&runs, &[], &machine(8, 16, 0), Goal::Time, OPTS).unwrap();
    assert_eq!(r.model, ModelKind::Dynamic);
    assert_eq!(r.params.sf.status, ParamStatus::Fitted);
    assert_eq!(r.params.sf.value, SF_MAX);
    assert_eq!(r.params.sf.bound, Some(Bound::Upper));
    // The model's own pick is still the hybrid it preferred: 8P+16E,
    // measured 6.5 s against the best measured 5.5 s (18.2% slower).
    let model_pick = r
        .predictions
        .iter()
        .filter(|c| !c.extrapolated)
        .min_by(|a, b| a.predicted_s.total_cmp(&b.predicted_s))
        .unwrap();
    assert_eq!(model_pick.config(), Config::new(8, 16, 0));
    let slower = model_pick.measured_s.unwrap() / 5.5 - 1.0;
    assert!((slower - 0.182).abs() < 0.001, "{slower}");
    // The gate: only at_bound (the other gates pass), so before it the
    // model's pick was recommended without a caveat.
    assert_eq!(r.caveats.len(), 1, "{:?}", r.caveats);
    let flagged = at_bound(&r.caveats);
    assert_eq!(flagged.len(), 1);
    assert_eq!((flagged[0].0, flagged[0].1), ("sf", Bound::Upper));
    match r.caveats[0] {
        Caveat::AtBound { limit, beyond, .. } => {
            assert_eq!(limit, SF_MAX);
            assert!(beyond > SF_MAX);
        }
        _ => unreachable!(),
    }
    assert_eq!(r.recommended_by, RecommendedBy::BestMeasured);
    assert_eq!(r.recommended.config(), Config::new(8, 8, 0));
    assert_eq!(r.recommended.measured_s, Some(5.5));
    // The evidence is priced by the measurements: dropping the E-cores
    // costs 6.4 / 5.5 - 1.
    let drop_e = r.evidence.other_kind.unwrap();
    assert!((drop_e.cost - (6.4 / 5.5 - 1.0)).abs() < 1e-9);
}

/// Runs of 1P, 1E, 4P, 8E and 4P+8E from the dynamic model (t1 20 s,
/// parallel fraction `f`, E-cores `sf` times slower, no SMT gain nor
/// contention), analysed for time on a 4P+8E machine.
fn analyse_two_kinds(f: f64, sf: f64) -> TuneReport {
    let th = theta(20.0, f, sf, 0.0, 0.0);
    let c = Config::new;
    let configs = [c(1, 0, 0), c(0, 1, 0), c(4, 0, 0), c(0, 8, 0), c(4, 8, 0)];
    let runs = simulate(ModelKind::Dynamic, &th, &configs);
    analyse(&runs, &[], &machine(4, 8, 0), Goal::Time, OPTS).unwrap()
}

/// E-cores exactly as fast as P-cores, measured alone and together: sf
/// sits on its lower bound 1, and the runs reject anything below (the
/// E-only runs would be faster than measured): bracketed, trusted.
#[test]
fn sf_on_its_lower_bound_pinned_by_e_only_runs_is_bracketed() {
    let r = analyse_two_kinds(0.95, 1.0);
    assert_eq!(r.params.sf.bound, Some(Bound::Lower), "{:?}", r.params.sf);
    assert!(at_bound(&r.caveats).is_empty(), "{:?}", r.caveats);
    assert_eq!(r.recommended_by, RecommendedBy::Model, "{:?}", r.caveats);
    assert_eq!(r.recommended.config(), Config::new(4, 8, 0));
}

/// SMT siblings that add nothing, measured with and without them: γ sits
/// on 0 and the runs reject a negative gain: bracketed, trusted.
#[test]
fn smt_gain_on_zero_measured_both_ways_is_bracketed() {
    let th = theta(20.0, 0.95, 2.0, 0.0, 0.0);
    let c = Config::new;
    let configs = [
        c(1, 0, 0),
        c(0, 1, 0),
        c(4, 0, 0),
        c(4, 0, 4),
        c(0, 8, 0),
        c(4, 8, 0),
        c(4, 8, 4),
    ];
    let runs = simulate(ModelKind::Dynamic, &th, &configs);
    let r = analyse(&runs, &[], &machine(4, 8, 1), Goal::Time, OPTS).unwrap();
    assert_eq!(r.params.smt_gain.status, ParamStatus::Fitted);
    assert!(r.params.smt_gain.value < 1e-6, "{:?}", r.params.smt_gain);
    assert!(at_bound(&r.caveats).is_empty(), "{:?}", r.caveats);
    assert_eq!(r.recommended_by, RecommendedBy::Model);
}

/// E-only runs 24 times slower than P-only ones: the runs want sf past
/// 16, the fit is cut short: at_bound with the objective falling past
/// the bound by more than the χ² margin.
#[test]
fn sf_pushed_past_its_bound_by_the_runs_is_flagged() {
    let r = analyse_two_kinds(0.9, 24.0);
    assert_eq!(r.params.sf.bound, Some(Bound::Upper));
    let flagged = at_bound(&r.caveats);
    assert_eq!(flagged.len(), 1, "{:?}", r.caveats);
    assert_eq!((flagged[0].0, flagged[0].1), ("sf", Bound::Upper));
    assert!(flagged[0].2 < -AT_BOUND_CHI2, "{:?}", flagged[0]);
    assert_eq!(r.recommended_by, RecommendedBy::BestMeasured);
}
