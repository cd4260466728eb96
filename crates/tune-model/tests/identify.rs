//! What the runs identify: a parameter the design cannot pin down is held
//! and said so, a parameter pushed to a bound is marked, and configurations
//! resting on a held parameter are extrapolated.

use crate::common::{machine, theta};
use pinsight_tune_model::{
    extrapolated, fit_model, predict, Bound, Config, FitOptions, ModelKind, Observation,
    ParamStatus,
};

const OPTS: FitOptions = FitOptions {
    bootstrap: 50,
    seed: 5,
};

use crate::common::simulate as runs;

/// A static split whose only SMT run also uses E-cores three times slower
/// than a P-core: the E-core threads pace the run whatever an SMT sibling
/// adds, so γ moves nothing and is held, and SMT configurations are
/// extrapolated.
#[test]
fn an_smt_gain_the_runs_cannot_see_is_held() {
    let th = theta(10.0, 0.95, 3.0, 0.3, 0.0);
    let c = Config::new;
    let configs = [
        c(1, 0, 0),
        c(0, 1, 0),
        c(2, 0, 0),
        c(0, 4, 0),
        c(2, 4, 0),
        c(2, 4, 2),
    ];
    let f = fit_model(
        &runs(ModelKind::Static, &th, &configs),
        ModelKind::Static,
        false,
        OPTS,
    )
    .expect("fit");
    assert_eq!(f.params.smt_gain.status, ParamStatus::NotIdentified);
    assert_eq!(f.params.sf.status, ParamStatus::Fitted);
    assert!((f.params.sf.value - 3.0).abs() < 0.1, "{:?}", f.params.sf);
    assert!(extrapolated(&f, c(2, 0, 2)));
    assert!(predict(&f, c(2, 0, 2)).extrapolated);
    assert!(!extrapolated(&f, c(2, 4, 0)));
}

/// Times falling faster than 1/cores would need f > 1: f stops at its
/// bound, marked so.
#[test]
fn a_parallel_fraction_pushed_past_one_is_at_its_bound() {
    let obs = |p: u32, t: f64| Observation {
        config: Config::new(p, 0, 0),
        time_s: t,
        energy_j: None,
    };
    let data = vec![
        obs(1, 8.0),
        obs(1, 8.1),
        obs(2, 3.9),
        obs(2, 3.95),
        obs(4, 1.9),
        obs(4, 1.92),
    ];
    let f = fit_model(&data, ModelKind::Dynamic, false, OPTS).expect("fit");
    assert_eq!(f.params.f.value, 1.0);
    assert_eq!(f.params.f.bound, Some(Bound::Upper));
    assert_eq!(f.params.t1.bound, None);
}

/// The design identifies every parameter of every candidate model: on
/// 6P+8E with SMT, both models with the contention term fit T1, f, sf, γ
/// and c, with a well-conditioned Jacobian.
#[test]
fn the_design_identifies_every_candidate() {
    let m = machine(6, 8, 1);
    let th = theta(10.0, 0.95, 2.0, 0.25, 0.003);
    for model in ModelKind::ALL {
        let data = runs(model, &th, &pinsight_tune_model::design(&m));
        let f = fit_model(&data, model, true, OPTS).expect("fit");
        assert!(
            f.contention,
            "{}: the contention term is kept",
            model.name()
        );
        for (name, q) in [
            ("f", &f.params.f),
            ("sf", &f.params.sf),
            ("smt_gain", &f.params.smt_gain),
            ("contention", &f.params.contention),
        ] {
            assert_eq!(q.status, ParamStatus::Fitted, "{} {name}", model.name());
        }
        let cond = f.candidates[0].condition;
        assert!(cond < 1e3, "{}: condition {cond}", model.name());
        eprintln!("{}: Jacobian condition {cond:.0}", model.name());
    }
}
