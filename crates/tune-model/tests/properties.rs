//! Data generated from known (f, sf, γ, model) with noise (deterministic
//! seeds): parameters recovered within their bootstrap intervals, the
//! recommendation equals the true optimum when the true gap exceeds the
//! noise, and the model choice picks the generating model when the data
//! separate the models.

use crate::common::{machine, noisy, uniform};
use pinsight_tune_model::{
    design, fit, fit_model, recommend, Config, Fit, FitOptions, Goal, Machine, ModelKind,
    Observation, Theta,
};
use rand_core::SeedableRng;
use rand_xorshift::XorShiftRng;

const SIGMA: f64 = 0.02;
const CASES: usize = 50;

const MACHINE: Machine = machine(4, 8, 1);

fn truth(rng: &mut XorShiftRng) -> Theta {
    Theta {
        t1: 5.0 + 10.0 * uniform(rng),
        f: 0.85 + 0.14 * uniform(rng),
        sf: 1.5 + uniform(rng),
        smt_gain: 0.1 + 0.4 * uniform(rng),
        contention: 0.0,
    }
}

/// Three runs of each configuration of the design, noise [`SIGMA`].
fn runs(model: ModelKind, th: &Theta, rng: &mut XorShiftRng) -> Vec<Observation> {
    noisy(model, th, &design(&MACHINE), SIGMA, rng)
}

fn noiseless(model: ModelKind, th: &Theta) -> Vec<Observation> {
    design(&MACHINE)
        .into_iter()
        .map(|c| Observation {
            config: c,
            time_s: model.time(th, c),
            energy_j: None,
        })
        .collect()
}

fn inside(ci: [f64; 2], v: f64) -> bool {
    ci[0] <= v && v <= ci[1]
}

struct Tally {
    f: usize,
    sf: usize,
    smt: usize,
    separated: usize,
    chosen_right: usize,
    gap_cases: usize,
    optimum_right: usize,
}

fn run(model: ModelKind, seed: u64) -> Tally {
    let mut rng = XorShiftRng::seed_from_u64(seed);
    let mut t = Tally {
        f: 0,
        sf: 0,
        smt: 0,
        separated: 0,
        chosen_right: 0,
        gap_cases: 0,
        optimum_right: 0,
    };
    let other = match model {
        ModelKind::Dynamic => ModelKind::Static,
        ModelKind::Static => ModelKind::Dynamic,
    };
    for case in 0..CASES {
        let th = truth(&mut rng);
        let data = runs(model, &th, &mut rng);
        let opts = FitOptions {
            bootstrap: 200,
            seed: 1000 + case as u64,
        };
        let fit: Fit = fit(&data, opts).expect("fit");
        t.f += usize::from(inside(fit.params.f.ci, th.f));
        t.sf += usize::from(inside(fit.params.sf.ci, th.sf));
        t.smt += usize::from(inside(fit.params.smt_gain.ci, th.smt_gain));
        // Separated: the other model (with contention) misses the noiseless
        // data by more than 3 noise sigmas (rms of log time).
        let clean = noiseless(model, &th);
        let o = fit_model(
            &clean,
            other,
            true,
            FitOptions {
                bootstrap: 0,
                seed: 0,
            },
        )
        .expect("fit");
        let best_other = o.candidates[0].rss;
        if (best_other / clean.len() as f64).sqrt() > 3.0 * SIGMA {
            t.separated += 1;
            t.chosen_right += usize::from(fit.model == model);
        }
        // True optimum vs the recommendation.
        let mut times: Vec<(f64, Config)> = MACHINE
            .configs()
            .into_iter()
            .map(|c| (model.time(&th, c), c))
            .collect();
        times.sort_by(|a, b| a.0.total_cmp(&b.0));
        let gap = times[1].0 / times[0].0 - 1.0;
        if gap > SIGMA {
            t.gap_cases += 1;
            let rec = recommend(&fit, &MACHINE, Goal::Time).expect("configs");
            let ok = rec.best.config == times[0].1;
            if !ok {
                eprintln!(
                    "case {case}: true best {} (gap {:.1}%), recommended {}",
                    times[0].1,
                    100.0 * gap,
                    rec.best.config
                );
            }
            t.optimum_right += usize::from(ok);
        }
    }
    eprintln!(
        "{}: coverage f {}/{CASES}, sf {}/{CASES}, smt_gain {}/{CASES}; model chosen right \
         {}/{} separated cases; optimum recommended {}/{} cases with gap > noise",
        model.name(),
        t.f,
        t.sf,
        t.smt,
        t.chosen_right,
        t.separated,
        t.optimum_right,
        t.gap_cases
    );
    t
}

/// Every parameter inside its 95% interval in >= 90% of the cases. Measured
/// (these seeds, 200 draws): dynamic f 46/50, sf 48/50, γ 45/50; static
/// f 47/50, sf 49/50, γ 49/50. Plain percentile intervals gave γ 42/50 on
/// dynamic data; hence the expanded percentile interval in `fit`.
fn check(t: &Tally) {
    let need = CASES * 9 / 10;
    assert!(
        t.f >= need && t.sf >= need && t.smt >= need,
        "coverage below 90%"
    );
    assert_eq!(t.chosen_right, t.separated, "model choice");
    assert!(
        t.separated > 0,
        "no case separates the models: the test checks nothing"
    );
    assert_eq!(t.optimum_right, t.gap_cases, "recommendation");
    assert!(t.gap_cases > 0);
}

#[test]
fn dynamic_data_are_recovered() {
    check(&run(ModelKind::Dynamic, 1));
}

#[test]
fn static_data_are_recovered() {
    check(&run(ModelKind::Static, 2));
}
