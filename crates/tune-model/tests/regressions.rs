//! The failure shapes `tune --from` showed on runs generated from known
//! models: a local minimum chosen over the generating model, a
//! recommendation resting on a dimension no run measured, and a confident
//! recommendation from a fit that explains nothing. Each data set is
//! generated here from a known model with seeded noise.

use crate::common::{gauss, machine, noisy, theta};
use pinsight_tune_model::{
    analyse, analyse_with, fit, objective, Caveat, Config, FitOptions, Goal, Machine, ModelKind,
    Observation, RecommendedBy, Theta,
};
use rand_core::SeedableRng;
use rand_xorshift::XorShiftRng;

/// The recorded i7-1370P as the model sees it: 6 P-cores with SMT, 8 E-cores.
const I7_1370P: Machine = machine(6, 8, 1);

/// [`noisy`] runs from a generator seeded with `seed`.
fn generate(
    model: ModelKind,
    th: &Theta,
    configs: &[Config],
    noise: f64,
    seed: u64,
) -> Vec<Observation> {
    noisy(
        model,
        th,
        configs,
        noise,
        &mut XorShiftRng::seed_from_u64(seed),
    )
}

const OPTS: FitOptions = FitOptions {
    bootstrap: 200,
    seed: 7,
};

/// Ten configurations of the design on the i7-1370P.
fn ten() -> Vec<Config> {
    let c = Config::new;
    vec![
        c(1, 0, 0),
        c(0, 1, 0),
        c(6, 0, 0),
        c(0, 8, 0),
        c(6, 8, 0),
        c(3, 0, 0),
        c(0, 4, 0),
        c(3, 4, 0),
        c(1, 0, 1),
        c(6, 0, 6),
    ]
}

/// Work-stealing, serial fraction 0.4 (f = 0.6), sf 2.5, no contention,
/// 1% noise, ten configurations: the fit must find the generating model
/// (an objective no worse than the generating parameters'), and must not
/// recommend 6 P-cores alone, which the runs show slower than 6P+8E.
#[test]
fn work_stealing_data_recover_the_generating_model() {
    let truth = theta(10.0, 0.6, 2.5, 0.25, 0.0);
    for seed in 1..=5 {
        let runs = generate(ModelKind::Dynamic, &truth, &ten(), 0.01, seed);
        let f = fit(&runs, OPTS).expect("fit");
        assert_eq!(f.model, ModelKind::Dynamic, "seed {seed}");
        assert!(!f.contention, "seed {seed}: no contention in the data");
        // The fit is the global optimum: no worse than the generating
        // parameters themselves.
        let at_truth = objective(&runs, ModelKind::Dynamic, &truth).expect("objective");
        assert!(
            f.objective <= at_truth + 1e-12,
            "seed {seed}: objective {} above the truth's {at_truth}",
            f.objective
        );
        assert!(
            f.rse.unwrap() < 0.02,
            "seed {seed}: residual {:?} with 1% noise",
            f.rse
        );
        let (fv, sfv) = (f.params.f.value, f.params.sf.value);
        assert!((fv - 0.6).abs() < 0.05, "seed {seed}: f {fv}");
        assert!((sfv / 2.5 - 1.0).abs() < 0.1, "seed {seed}: sf {sfv}");
        let r = analyse(&runs, &[], &I7_1370P, Goal::Time, OPTS).expect("analyse");
        assert!(
            r.recommended.e > 0,
            "seed {seed}: recommended {:?}",
            r.recommended.config()
        );
        assert_ne!(r.recommended.config(), Config::new(6, 0, 0));
    }
}

/// A static split whose E-cores slow it down (sf 3 > 1 + 6/8), no SMT run:
/// nothing measured says what SMT siblings do, so no configuration with
/// them is recommended or used as evidence, and every one is marked
/// extrapolated.
#[test]
fn no_smt_run_means_no_smt_recommendation() {
    let truth = theta(8.0, 0.95, 3.0, 0.3, 0.0);
    let configs: Vec<Config> = ten().into_iter().filter(|c| c.smt == 0).collect();
    for seed in 1..=3 {
        let runs = generate(ModelKind::Static, &truth, &configs, 0.01, seed);
        let r = analyse(&runs, &[], &I7_1370P, Goal::Time, OPTS).expect("analyse");
        assert_eq!(r.recommended.smt, 0, "seed {seed}: {:?}", r.recommended);
        assert_eq!(r.recommended.config(), Config::new(6, 0, 0), "seed {seed}");
        assert!(!r.recommended.extrapolated);
        assert!(r.evidence.smt.is_none(), "{:?}", r.evidence.smt);
        for p in &r.predictions {
            assert_eq!(p.extrapolated, p.smt > 0, "{p:?}");
        }
        let ok = r.evidence.other_kind.expect("adding E-cores priced");
        assert!(ok.cost > 0.0, "the E-cores cost: {ok:?}");
        // With --extrapolate the model may say more, marked as such.
        let x = analyse_with(&runs, &[], &I7_1370P, Goal::Time, OPTS, true).expect("analyse");
        assert!(x.extrapolate);
        assert!(x.recommended.smt == 0 || x.recommended.extrapolated);
    }
}

/// Times with no structure the models know (each configuration its own
/// random factor, as on a busy VM): the fit explains little, so tune says
/// so and recommends the best measured configuration.
#[test]
fn a_bad_fit_falls_back_to_the_best_measured() {
    let mut rng = XorShiftRng::seed_from_u64(11);
    let mut runs = Vec::new();
    for c in ten() {
        let level = 1.0 + 0.4 * gauss(&mut rng).abs();
        for _ in 0..3 {
            runs.push(Observation {
                config: c,
                time_s: level * (0.01 * gauss(&mut rng)).exp(),
                energy_j: None,
            });
        }
    }
    let r = analyse(&runs, &[], &I7_1370P, Goal::Time, OPTS).expect("analyse");
    assert_eq!(
        r.recommended_by,
        RecommendedBy::BestMeasured,
        "{:?}",
        r.caveats
    );
    assert!(!r.caveats.is_empty());
    assert!(
        r.caveats
            .iter()
            .any(|c| matches!(c, Caveat::LowR2 { .. } | Caveat::ResidualAboveSpread { .. })),
        "{:?}",
        r.caveats
    );
    let best = r
        .predictions
        .iter()
        .filter_map(|p| Some((p.measured_s?, p.config())))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .unwrap()
        .1;
    assert_eq!(r.recommended.config(), best);
    assert!(r.recommended.measured_s.is_some());
}
