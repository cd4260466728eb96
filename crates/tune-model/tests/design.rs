//! The design, predictions over the machine, validation picks, one kind.

use crate::common::{machine, simulate, theta};
use pinsight_tune_model::{
    design, fit, predict, recommend, validation, Config, FitOptions, Goal, Machine, ModelKind,
    Observation, ParamStatus,
};

const HYBRID: Machine = machine(4, 8, 1);

const ONE_KIND: Machine = machine(8, 0, 1);

#[test]
fn hybrid_design_is_small_allowed_and_deduplicated() {
    let d = design(&HYBRID);
    let c = Config::new;
    assert_eq!(
        d,
        vec![
            c(1, 0, 0),
            c(0, 1, 0),
            c(4, 0, 0),
            c(0, 8, 0),
            c(4, 8, 0),
            c(2, 0, 0),
            c(0, 4, 0),
            c(2, 4, 0),
            c(1, 0, 1),
            c(4, 0, 4),
            c(4, 8, 4),
        ]
    );
    assert!(d.iter().all(|&x| HYBRID.allows(x)));
}

#[test]
fn one_kind_design_and_tiny_machines() {
    let c = Config::new;
    assert_eq!(
        design(&ONE_KIND),
        vec![c(1, 0, 0), c(4, 0, 0), c(8, 0, 0), c(8, 0, 8)]
    );
    // This build VM: 2 cores without SMT -> 1 and 2 (half = 1 deduplicated).
    let vm = machine(2, 0, 0);
    assert_eq!(design(&vm), vec![c(1, 0, 0), c(2, 0, 0)]);
    let none = Machine { p_cores: 0, ..vm };
    assert!(design(&none).is_empty());
    assert!(none.configs().is_empty());
}

#[test]
fn machine_configs_count_and_bounds() {
    // p in 0..=4 with 0..=p siblings, e in 0..=8, minus the empty config.
    let n: u32 = (0..=4u32).map(|p| (p + 1) * 9).sum::<u32>() - 1;
    assert_eq!(HYBRID.configs().len(), n as usize);
    assert!(!HYBRID.allows(Config::new(1, 0, 2)));
    assert!(!HYBRID.allows(Config::new(0, 0, 0)));
}

#[test]
fn one_kind_fit_says_sf_is_not_identifiable() {
    let th = theta(8.0, 0.9, 1.0, 0.2, 0.0);
    let runs = simulate(ModelKind::Dynamic, &th, &design(&ONE_KIND));
    let f = fit(&runs, FitOptions::default()).expect("fit");
    assert!(f.one_kind());
    assert_eq!(f.params.sf.status, ParamStatus::OneKind);
    assert_eq!(f.params.sf.value, 1.0);
    assert!((f.params.f.value - 0.9).abs() < 0.02, "{:?}", f.params.f);
    let rec = recommend(&f, &ONE_KIND, Goal::Time).expect("configs");
    assert_eq!(rec.best.config, Config::new(8, 0, 8));
}

#[test]
fn static_program_avoids_e_cores_and_validation_skips_measured() {
    // Static split: E-cores help only when E > P·(sf − 1); here
    // 8 < 4·(3.5 − 1) = 10, so adding them hurts.
    let th = theta(10.0, 0.98, 3.5, 0.2, 0.0);
    let measured = simulate(ModelKind::Static, &th, &design(&HYBRID));
    let f = fit(&measured, FitOptions::default()).expect("fit");
    assert_eq!(f.model, ModelKind::Static);
    let rec = recommend(&f, &HYBRID, Goal::Time).expect("configs");
    assert_eq!(rec.best.config.e, 0, "{:?}", rec.best);
    assert!(rec.gap >= 0.0);
    let p = predict(&f, rec.best.config);
    assert!(p.ci[0] <= p.predicted_s && p.predicted_s <= p.ci[1]);
    let v = validation(&f, &HYBRID, &measured);
    assert_eq!(v.len(), 2);
    assert!(v.iter().all(|c| !measured.iter().any(|o| o.config == *c)));
}

/// Two configurations predicted equal up to floating-point rounding are a
/// tie, and a tie goes to fewer threads. Runs measured by `tune` on an
/// emulated 1P+1E machine (CPU 1 at half speed, static pi): two threads
/// were slower than one, the best fit has f = 0, so 1P and 1P+1E are
/// predicted the same time (1e-15 apart) and 1P must be recommended.
#[test]
fn a_rounding_tie_goes_to_fewer_threads() {
    const TWO: Machine = machine(1, 1, 0);
    let runs: Vec<Observation> = [
        (1, 0, 0.290),
        (1, 0, 0.294),
        (0, 1, 0.530),
        (0, 1, 0.534),
        (1, 1, 0.400),
        (1, 1, 0.406),
    ]
    .into_iter()
    .map(|(p, e, t)| Observation {
        config: Config::new(p, e, 0),
        time_s: t,
        energy_j: None,
    })
    .collect();
    let f = fit(&runs, FitOptions::default()).expect("fit");
    let rec = recommend(&f, &TWO, Goal::Time).expect("configs");
    assert!(rec.gap.abs() < 1e-9, "not a tie: {rec:?}");
    assert_eq!(rec.best.config, Config::new(1, 0, 0), "{rec:?}");
}
