//! Which configurations to run, and what a fit says about all of them.

use crate::fit::{quantile, Fit, FitError, ParamStatus};
use crate::power::{estimate, Estimate, PowerFit};
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
    /// Least energy (joules): predicted power × time; needs `energy_j`.
    Energy,
    /// Least energy-delay product (J·s): energy × time; needs `energy_j`.
    Edp,
}

impl Goal {
    /// Every goal, in help order.
    pub const ALL: [Goal; 3] = [Goal::Time, Goal::Energy, Goal::Edp];

    /// Name as on the command line and in JSON: time, energy, edp.
    pub const fn name(self) -> &'static str {
        match self {
            Goal::Time => "time",
            Goal::Energy => "energy",
            Goal::Edp => "edp",
        }
    }

    /// Whether the goal needs the runs' energy.
    pub const fn needs_energy(self) -> bool {
        !matches!(self, Goal::Time)
    }
}

/// A goal name that is not time, energy or edp.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown goal '{0}'; valid goals: time, energy, edp")]
pub struct GoalParseError(pub String);

impl std::str::FromStr for Goal {
    type Err = GoalParseError;
    fn from_str(s: &str) -> Result<Goal, GoalParseError> {
        Goal::ALL
            .into_iter()
            .find(|g| g.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| GoalParseError(s.chars().take(40).collect()))
    }
}

impl std::fmt::Display for Goal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Predicted time (and energy, EDP) of one configuration.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Prediction {
    /// The configuration.
    pub config: Config,
    /// Predicted time (s) under the point estimates.
    pub predicted_s: f64,
    /// 95% interval from the bootstrap draws (`[t, t]` without draws).
    pub ci: [f64; 2],
    /// Predicted energy (J), when the fit has a power model.
    pub energy_j: Option<Estimate>,
    /// Predicted energy-delay product (J·s), when the fit has a power model.
    pub edp: Option<Estimate>,
    /// Predicted beyond what the runs measured (see [`extrapolated`]).
    pub extrapolated: bool,
}

/// Whether predicting `config` needs a dimension the fitted runs did not
/// measure: more P-cores, E-cores or SMT siblings than any run used (a kind
/// never used is a count above 0), or SMT siblings while the SMT gain was
/// not fitted. Such a prediction rests on the model's form alone.
pub fn extrapolated(fit: &Fit, config: Config) -> bool {
    let s = fit.span;
    config.p > s.p
        || config.e > s.e
        || config.smt > s.smt
        || (config.smt > 0 && fit.params.smt_gain.status != ParamStatus::Fitted)
}

impl Prediction {
    /// The value `goal` minimises; `None` when the goal needs energy and
    /// the prediction has none.
    pub fn score(&self, goal: Goal) -> Option<f64> {
        match goal {
            Goal::Time => Some(self.predicted_s),
            Goal::Energy => self.energy_j.map(|e| e.value),
            Goal::Edp => self.edp.map(|e| e.value),
        }
    }
}

/// Predict `config` under `fit`, with an interval from its bootstrap draws;
/// energy and EDP too when the fit has a power model (time draw i paired
/// with power draw i).
pub fn predict(fit: &Fit, config: Config) -> Prediction {
    let t = fit.model.time(&fit.theta, config);
    let times: Vec<f64> = fit
        .draws
        .iter()
        .map(|th| fit.model.time(th, config))
        .collect();
    let mut v: Vec<f64> = times.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let ci = if v.is_empty() {
        [t, t]
    } else {
        [quantile(&v, fit.ci_tail), quantile(&v, 1.0 - fit.ci_tail)]
    };
    let (energy_j, edp) = match &fit.power {
        None => (None, None),
        Some(pw) => {
            let w = pw.watts(config);
            let pairs: Vec<(f64, f64)> = times
                .iter()
                .zip(&pw.draws)
                .map(|(t, c)| (*t, PowerFit::watts_with(c, config)))
                .collect();
            let e = estimate(
                w * t,
                pairs.iter().map(|(t, w)| w * t).collect(),
                fit.ci_tail,
            );
            let d = estimate(
                w * t * t,
                pairs.iter().map(|(t, w)| w * t * t).collect(),
                fit.ci_tail,
            );
            (Some(e), Some(d))
        }
    };
    Prediction {
        config,
        predicted_s: t,
        ci,
        energy_j,
        edp,
        extrapolated: extrapolated(fit, config),
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
    /// How much worse the runner-up is predicted to be on the goal, as a
    /// fraction of the best (0.09 = 9%); 0 without a runner-up.
    pub gap: f64,
}

/// Every configuration `machine` allows, predicted, best first for `goal`.
/// Ties: fewer threads first (cheaper), then the order of `configs()`.
/// Scores equal to 9 significant digits (`TIE_DIGITS`) tie: the models can
/// predict two configurations the same time by different arithmetic (f = 0
/// makes 1P and 1P+1E equal), which differ in the last bits.
pub fn ranked(fit: &Fit, machine: &Machine, goal: Goal) -> Result<Vec<Prediction>, FitError> {
    if goal.needs_energy() && fit.power.is_none() {
        return Err(FitError::NoEnergy { goal: goal.name() });
    }
    let mut all: Vec<(f64, Prediction)> = machine
        .configs()
        .into_iter()
        .map(|c| predict(fit, c))
        .filter_map(|p| Some((p.score(goal)?, p)))
        .filter(|(s, _)| s.is_finite())
        .map(|(s, p)| (to_tie_digits(s), p))
        .collect();
    all.sort_by(|(a, pa), (b, pb)| {
        a.total_cmp(b)
            .then(pa.config.threads().cmp(&pb.config.threads()))
    });
    Ok(all.into_iter().map(|(_, p)| p).collect())
}

/// Significant digits to which two scores are compared in [`ranked`].
const TIE_DIGITS: i32 = 9;

/// `s` rounded to [`TIE_DIGITS`] significant digits (a function of `s`
/// alone, so the sort's order stays total).
fn to_tie_digits(s: f64) -> f64 {
    if s == 0.0 {
        return 0.0;
    }
    let scale = 10f64.powi(TIE_DIGITS - 1 - s.abs().log10().floor() as i32);
    (s * scale).round() / scale
}

/// Predict every configuration `machine` allows and recommend the best for
/// `goal` among those predicted from measured dimensions (not
/// [`extrapolated`]; all of them when every one is). Errors: [`FitError::NoEnergy`] for an energy or EDP goal when
/// the runs carried no energy, [`FitError::NoConfiguration`] when the
/// machine allows none.
pub fn recommend(fit: &Fit, machine: &Machine, goal: Goal) -> Result<Recommendation, FitError> {
    let mut all = ranked(fit, machine, goal)?;
    if all.iter().any(|p| !p.extrapolated) {
        all.retain(|p| !p.extrapolated);
    }
    let best = *all.first().ok_or(FitError::NoConfiguration)?;
    let runner_up = all.get(1).copied();
    let gap = match (runner_up.and_then(|r| r.score(goal)), best.score(goal)) {
        (Some(r), Some(b)) if b > 0.0 => r / b - 1.0,
        _ => 0.0,
    };
    Ok(Recommendation {
        goal,
        best,
        runner_up,
        gap,
    })
}

/// The best two predicted configurations (for the shortest time) that were
/// not measured: run them to check the prediction.
pub fn validation(fit: &Fit, machine: &Machine, measured: &[Observation]) -> Vec<Config> {
    validation_for(fit, machine, measured, Goal::Time).unwrap_or_default()
}

/// Like [`validation`], best for `goal`.
pub fn validation_for(
    fit: &Fit,
    machine: &Machine,
    measured: &[Observation],
    goal: Goal,
) -> Result<Vec<Config>, FitError> {
    Ok(ranked(fit, machine, goal)?
        .into_iter()
        .map(|p| p.config)
        .filter(|c| !measured.iter().any(|o| o.config == *c))
        .take(2)
        .collect())
}
