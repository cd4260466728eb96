//! Which configurations to run, and what a fit says about all of them.

use crate::fit::{quantile, Fit};
use crate::{Config, Machine, Observation};
use serde::Serialize;

/// A small set of configurations that identifies the model on `machine`.
///
/// Two kinds: 1P, 1E, all P, all E, all P + all E, half P, half E,
/// half P + half E, then with SMT (1P + its siblings, all P with SMT, all
/// cores with SMT). One kind (`e_cores == 0`): 1 core, half, all, all with
/// SMT. Only configurations the machine allows; duplicates dropped (first
/// kept); empty on a machine of no core.
pub fn design(machine: &Machine) -> Vec<Config> {
    let (p, e) = (machine.p_cores, machine.e_cores);
    let half = |n: u32| n.div_ceil(2);
    let all_smt = p * machine.smt_per_p_core + e * machine.smt_per_e_core;
    let mut want = Vec::new();
    if machine.one_kind() {
        want.push(Config::new(1, 0, 0));
        want.push(Config::new(half(p), 0, 0));
        want.push(Config::new(p, 0, 0));
        want.push(Config::new(p, 0, p * machine.smt_per_p_core));
    } else {
        want.extend([
            Config::new(1, 0, 0),
            Config::new(0, 1, 0),
            Config::new(p, 0, 0),
            Config::new(0, e, 0),
            Config::new(p, e, 0),
            Config::new(half(p), 0, 0),
            Config::new(0, half(e), 0),
            Config::new(half(p), half(e), 0),
            Config::new(1, 0, machine.smt_per_p_core),
            Config::new(p, 0, p * machine.smt_per_p_core),
            Config::new(p, e, all_smt),
        ]);
    }
    let mut out: Vec<Config> = Vec::new();
    for c in want {
        if machine.allows(c) && !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// What to optimise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Goal {
    /// Shortest wall time.
    Time,
}

/// Predicted time of one configuration.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// The configuration.
    pub config: Config,
    /// Predicted time (s) under the point estimates.
    pub predicted_s: f64,
    /// 95% interval from the bootstrap draws (`[t, t]` without draws).
    pub ci: [f64; 2],
}

/// Predict `config` under `fit`, with an interval from its bootstrap draws.
pub fn predict(fit: &Fit, config: Config) -> Prediction {
    let t = fit.model.time(&fit.theta, config);
    let mut v: Vec<f64> = fit
        .draws
        .iter()
        .map(|th| fit.model.time(th, config))
        .filter(|x| x.is_finite())
        .collect();
    v.sort_by(f64::total_cmp);
    let ci = if v.is_empty() {
        [t, t]
    } else {
        [quantile(&v, fit.ci_tail), quantile(&v, 1.0 - fit.ci_tail)]
    };
    Prediction {
        config,
        predicted_s: t,
        ci,
    }
}

/// The best configuration and the evidence against the next best.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Recommendation {
    /// The goal optimised.
    pub goal: Goal,
    /// Best predicted configuration.
    pub best: Prediction,
    /// Next best, if the machine allows more than one configuration.
    pub runner_up: Option<Prediction>,
    /// How much slower the runner-up is predicted to be, as a fraction of
    /// the best (0.09 = 9%); 0 without a runner-up.
    pub gap: f64,
}

fn ranked(fit: &Fit, machine: &Machine) -> Vec<Prediction> {
    let mut all: Vec<Prediction> = machine
        .configs()
        .into_iter()
        .map(|c| predict(fit, c))
        .filter(|p| p.predicted_s.is_finite())
        .collect();
    // Ties: fewer threads first (cheaper), then the order of `configs()`.
    all.sort_by(|a, b| {
        a.predicted_s
            .total_cmp(&b.predicted_s)
            .then(a.config.threads().cmp(&b.config.threads()))
    });
    all
}

/// Predict every configuration `machine` allows and recommend the best for
/// `goal`. `None` when the machine allows no configuration.
pub fn recommend(fit: &Fit, machine: &Machine, goal: Goal) -> Option<Recommendation> {
    let all = ranked(fit, machine);
    let best = *all.first()?;
    let runner_up = all.get(1).copied();
    let gap = runner_up.map_or(0.0, |r| r.predicted_s / best.predicted_s - 1.0);
    Some(Recommendation {
        goal,
        best,
        runner_up,
        gap,
    })
}

/// The best two predicted configurations that were not measured: run them
/// to check the prediction.
pub fn validation(fit: &Fit, machine: &Machine, measured: &[Observation]) -> Vec<Config> {
    ranked(fit, machine)
        .into_iter()
        .map(|p| p.config)
        .filter(|c| !measured.iter().any(|o| o.config == *c))
        .take(2)
        .collect()
}
