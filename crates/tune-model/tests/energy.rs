//! Energy and EDP goals: a power model fitted to generated runs with known
//! coefficients, recommendations by goal, and the typed error without energy.

use crate::common::{machine, theta};
use pinsight_tune_model::{
    design, fit, recommend, Config, FitError, FitOptions, Goal, Machine, ModelKind, Observation,
    PowerFit, Theta,
};

const MACHINE: Machine = machine(4, 8, 1);

const THETA: Theta = theta(10.0, 0.9, 2.0, 0.2, 0.0);

/// True power: 12 W base, 9 W per P-core, 2 W per E-core, 1.5 W per sibling.
const POWER: [f64; 4] = [12.0, 9.0, 2.0, 1.5];

/// Deterministic noise in [-1, 1] (a small LCG; the test must not depend on
/// a generator's version).
fn noise(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ((*state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

fn runs(with_energy: bool, rel_noise: f64) -> Vec<Observation> {
    let mut s = 7u64;
    let mut out = Vec::new();
    for c in design(&MACHINE) {
        for _ in 0..3 {
            let t = ModelKind::Dynamic.time(&THETA, c) * (1.0 + rel_noise * noise(&mut s));
            let w = PowerFit::watts_with(&POWER, c) * (1.0 + rel_noise * noise(&mut s));
            out.push(Observation {
                config: c,
                time_s: t,
                energy_j: with_energy.then_some(w * t),
            });
        }
    }
    out
}

fn true_best(goal: Goal) -> Config {
    MACHINE
        .configs()
        .into_iter()
        .min_by(|a, b| {
            let score = |c: Config| {
                let t = ModelKind::Dynamic.time(&THETA, c);
                let w = PowerFit::watts_with(&POWER, c);
                match goal {
                    Goal::Time => t,
                    Goal::Energy => w * t,
                    _ => w * t * t,
                }
            };
            score(*a).total_cmp(&score(*b))
        })
        .unwrap()
}

#[test]
fn power_coefficients_are_recovered_within_their_intervals() {
    let f = fit(&runs(true, 0.01), FitOptions::default()).expect("fit");
    let pw = f.power.as_ref().expect("power model");
    let got = [
        pw.params.base_w,
        pw.params.per_p_w,
        pw.params.per_e_w,
        pw.params.per_smt_w,
    ];
    for (est, truth) in got.iter().zip(POWER) {
        assert!(
            est.ci[0] <= truth && truth <= est.ci[1],
            "true {truth} outside {:?} (estimate {})",
            est.ci,
            est.value
        );
        assert!(
            (est.value - truth).abs() < 0.15 * truth + 0.5,
            "{est:?} vs {truth}"
        );
        assert!(est.value >= 0.0);
    }
    assert!(pw.r2.unwrap() > 0.95);
}

#[test]
fn energy_goal_recommends_the_true_energy_optimum_which_differs_from_time() {
    let f = fit(&runs(true, 0.005), FitOptions::default()).expect("fit");
    let time = recommend(&f, &MACHINE, Goal::Time).unwrap();
    let energy = recommend(&f, &MACHINE, Goal::Energy).unwrap();
    let edp = recommend(&f, &MACHINE, Goal::Edp).unwrap();
    // The generated truth makes them differ: check the premise first.
    assert_ne!(true_best(Goal::Time), true_best(Goal::Energy));
    assert_eq!(time.best.config, true_best(Goal::Time));
    assert_eq!(energy.best.config, true_best(Goal::Energy));
    assert_eq!(edp.best.config, true_best(Goal::Edp));
    assert_ne!(time.best.config, energy.best.config);
    let e = energy.best.energy_j.expect("energy predicted");
    assert!(e.ci[0] <= e.value && e.value <= e.ci[1]);
    let d = energy.best.edp.expect("edp predicted");
    assert!((d.value - e.value * energy.best.predicted_s).abs() < 1e-9 * d.value);
    assert!(energy.gap >= 0.0);
}

#[test]
fn energy_goal_without_energy_names_what_is_missing() {
    let f = fit(&runs(false, 0.01), FitOptions::default()).expect("fit");
    assert!(f.power.is_none());
    for goal in [Goal::Energy, Goal::Edp] {
        let err = recommend(&f, &MACHINE, goal).unwrap_err();
        assert_eq!(err, FitError::NoEnergy { goal: goal.name() });
        let msg = err.to_string();
        assert!(
            msg.contains("energy_j") && msg.contains(goal.name()),
            "{msg}"
        );
    }
    assert!(recommend(&f, &MACHINE, Goal::Time).is_ok());
}

#[test]
fn goal_names_parse_and_refuse() {
    for g in Goal::ALL {
        assert_eq!(g.name().parse::<Goal>().unwrap(), g);
    }
    let e = "speed".parse::<Goal>().unwrap_err().to_string();
    assert!(e.contains("time, energy, edp"), "{e}");
}
