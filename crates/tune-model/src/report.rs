//! The whole analysis of `pinsight tune` as one serialisable report: fit,
//! predictions, validation, recommendation and its evidence.

use crate::design::{predict, ranked, Goal, Prediction};
use crate::fit::{fit, Bound, Candidate, Fit, FitError, FitOptions, Params, SF_MAX};
use crate::power::PowerFit;
use crate::power::{Estimate, PowerParams};
use crate::{Config, Machine, ModelKind, Observation};
use serde::Serialize;
use std::collections::BTreeMap;

/// How well the chosen model fits, and what else was tried.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FitQuality {
    /// Residual standard error of log time (≈ relative error of a run).
    pub rse: Option<f64>,
    /// R² of log time.
    pub r2: Option<f64>,
    /// Runs fitted.
    pub runs: usize,
    /// Distinct configurations fitted.
    pub configs: usize,
    /// The minimised objective: residual sum of squares of log time.
    pub objective: f64,
    /// Run-to-run spread: pooled standard deviation of log time within
    /// configurations (≈ relative); `None` without repeated runs.
    pub spread: Option<f64>,
    /// Every model tried with its AICc (lowest chosen).
    pub candidates: Vec<Candidate>,
}

/// The power model in the report.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PowerReport {
    /// Coefficients (W) with intervals.
    pub params: PowerParams,
    /// Runs with energy.
    pub runs: usize,
    /// R² of power.
    pub r2: Option<f64>,
}

/// One configuration with its prediction and what was measured.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Choice {
    /// P-cores used.
    pub p: u32,
    /// E-cores used.
    pub e: u32,
    /// SMT siblings used.
    pub smt: u32,
    /// Threads (p + e + smt).
    pub threads: u32,
    /// Predicted time (s).
    pub predicted_s: f64,
    /// 95% interval of the predicted time.
    pub ci: [f64; 2],
    /// Median measured time (s), if any run used this configuration.
    pub measured_s: Option<f64>,
    /// Runs of this configuration.
    pub runs: usize,
    /// Predicted energy (J), when the runs carried energy.
    pub energy_j: Option<Estimate>,
    /// Predicted energy-delay product (J·s), when the runs carried energy.
    pub edp: Option<Estimate>,
    /// Predicted beyond the dimensions the runs measured (more P-cores,
    /// E-cores or SMT siblings than any run used, or SMT without a fitted
    /// SMT gain): the model's form alone says it.
    pub extrapolated: bool,
}

impl Choice {
    /// The configuration.
    pub const fn config(&self) -> Config {
        Config::new(self.p, self.e, self.smt)
    }

    /// The value `goal` minimises.
    pub fn score(&self, goal: Goal) -> Option<f64> {
        match goal {
            Goal::Time => Some(self.predicted_s),
            Goal::Energy => self.energy_j.map(|e| e.value),
            Goal::Edp => self.edp.map(|e| e.value),
        }
    }
}

/// What an alternative to the recommendation changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// Adding all the E-cores.
    AddE,
    /// Adding all the P-cores.
    AddP,
    /// Dropping the E-cores.
    DropE,
    /// Using every SMT sibling of the cores used.
    AddSmt,
    /// Dropping the SMT siblings.
    DropSmt,
}

/// The recommendation changed in one way, and what that costs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Alternative {
    /// What changes.
    pub change: Change,
    /// The alternative configuration, predicted.
    pub config: Choice,
    /// How much worse it is on the goal, as a fraction (0.09: costs 9%;
    /// negative would mean better, which the ranking excludes).
    pub cost: f64,
}

/// The evidence behind the recommendation's words.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Evidence {
    /// The other kind: adding the E-cores (or P-cores) the recommendation
    /// leaves out, or dropping the E-cores it uses. `None` on one kind.
    pub other_kind: Option<Alternative>,
    /// SMT: adding the siblings of the cores used, or dropping them.
    /// `None` when the machine has no SMT.
    pub smt: Option<Alternative>,
}

/// A validation run: predicted by the fit on the design runs only.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ValidationRow {
    /// P-cores.
    pub p: u32,
    /// E-cores.
    pub e: u32,
    /// SMT siblings.
    pub smt: u32,
    /// Predicted time (s) from the design runs.
    pub predicted_s: f64,
    /// Its 95% interval.
    pub ci: [f64; 2],
    /// Median measured time (s).
    pub measured_s: f64,
    /// Runs of it.
    pub runs: usize,
    /// Prediction error: predicted / measured − 1 (0.05 = predicted 5% slow).
    pub error: f64,
}

/// Where the recommendation comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RecommendedBy {
    /// The fitted model's best prediction.
    Model,
    /// The best measured configuration: the model is not trusted (see
    /// [`TuneReport::caveats`]).
    BestMeasured,
}

/// Why the model's recommendation is not trusted.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Caveat {
    /// The model explains too little of the variation between runs.
    LowR2 {
        /// R² of log time.
        r2: f64,
        /// The least R² trusted ([`R2_MIN`]).
        min: f64,
    },
    /// The model misses the runs by far more than they vary among
    /// themselves: its form does not fit this program.
    ResidualAboveSpread {
        /// Residual error of the fit (≈ relative).
        rse: f64,
        /// Run-to-run spread (≈ relative).
        spread: f64,
    },
    /// Another model fits as well (AICc within 2) and recommends a
    /// configuration that differs by more than the noise.
    ModelsDisagree {
        /// The other model.
        model: ModelKind,
        /// Whether it has the contention term.
        contention: bool,
        /// What it recommends.
        picks: Config,
        /// How much worse one model finds the other's pick (0.09: 9%).
        cost: f64,
    },
    /// A measured configuration beats the model's recommendation by more
    /// than the noise: fit and measurements disagree.
    MeasuredBeatsModel {
        /// The measured configuration.
        config: Config,
        /// Its median measured value on the goal.
        measured: f64,
        /// The model's recommendation.
        model_pick: Config,
        /// Its value on the goal (measured when it was, else predicted).
        model_value: f64,
    },
    /// A fitted parameter sits at a bound of its range that the runs do
    /// not bracket: moved past it (others held, T1 re-fitted), the
    /// residual sum of squares of log time falls by more than
    /// [`AT_BOUND_CHI2`] noise variances, or never rises by more than
    /// that. The fit is cut short there and its predictions are not
    /// trusted.
    AtBound {
        /// The parameter: "sf", "smt_gain", "f" or "contention".
        param: &'static str,
        /// Which bound.
        bound: Bound,
        /// The bound's value (sf 1 or [`SF_MAX`], γ 0 or 1, f 0 or 1,
        /// contention 0).
        limit: f64,
        /// The value past the bound that fits best among those tried.
        beyond: f64,
        /// How the residual sum of squares of log time changes there, in
        /// noise variances (the run-to-run spread squared when runs
        /// repeat, else the fit's residual variance): below
        /// −[`AT_BOUND_CHI2`], the runs fit better past the bound; else
        /// no value past it raises the objective by more than
        /// [`AT_BOUND_CHI2`], and the runs leave that side open.
        change: f64,
    },
}

/// How much the residual sum of squares of log time must change past a
/// bound, in noise variances, to count (the 95% point of χ² with one
/// degree of freedom): a fall beyond it means the runs want the
/// parameter past the bound; a rise beyond it, that they reject values
/// there. A parameter whose true value sits on its bound is thus not
/// flagged for the noise alone.
pub const AT_BOUND_CHI2: f64 = 3.84;

/// The least R² of log time at which the model is trusted.
pub const R2_MIN: f64 = 0.8;

/// The residual error may reach this many times the run-to-run spread.
pub const RESIDUAL_MAX_RATIO: f64 = 3.0;

/// A residual error (≈ relative) below this is always accepted: a model
/// within 2% of every run is good enough to rank configurations.
const RESIDUAL_FLOOR: f64 = 0.02;

/// Two models within this AICc fit equally well (Burnham & Anderson,
/// "Model Selection and Multimodel Inference", 2nd ed. 2002, §2.6: Δ ≤ 2,
/// substantial support for both).
const AICC_TIE: f64 = 2.0;

/// Everything `pinsight tune` found (the `--json` contract).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TuneReport {
    /// The goal optimised.
    pub goal: Goal,
    /// The machine predicted for.
    pub machine: Machine,
    /// True when the machine has one kind of core: tune chose thread count
    /// and SMT only.
    pub one_kind: bool,
    /// The model chosen: "dynamic" or "static".
    pub model: ModelKind,
    /// Whether it has the contention term.
    pub contention_term: bool,
    /// Parameters (t1, f, sf, smt_gain, contention) with intervals.
    pub params: Params,
    /// The power model, when the runs carried energy.
    pub power: Option<PowerReport>,
    /// Fit quality and the candidates tried.
    pub fit: FitQuality,
    /// Where the recommendation comes from: the model, or the best
    /// measured configuration when the model is not trusted.
    pub recommended_by: RecommendedBy,
    /// Why the model is not trusted (empty: it is).
    pub caveats: Vec<Caveat>,
    /// Whether configurations predicted by extrapolation could be
    /// recommended (`--extrapolate`).
    pub extrapolate: bool,
    /// The largest P, E and SMT counts any run used.
    pub span: Config,
    /// The recommended configuration.
    pub recommended: Choice,
    /// The next best, when there is one.
    pub runner_up: Option<Choice>,
    /// How much worse the runner-up is on the goal (0.09 = 9%).
    pub gap: f64,
    /// Costs of the other kind and of SMT.
    pub evidence: Evidence,
    /// One entry per configuration the machine allows, in (p, e, smt) order.
    pub predictions: Vec<Choice>,
    /// Validation runs against the design-only fit.
    pub validation: Vec<ValidationRow>,
    /// Configurations in the runs that the machine does not allow (fitted,
    /// not predicted nor recommended).
    pub outside_machine: Vec<Config>,
    /// Design runs given.
    pub design_runs: usize,
    /// Validation runs given.
    pub validation_runs: usize,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn measured(runs: &[Observation]) -> BTreeMap<Config, (f64, usize)> {
    let mut by: BTreeMap<Config, Vec<f64>> = BTreeMap::new();
    for o in runs {
        by.entry(o.config).or_default().push(o.time_s);
    }
    by.into_iter()
        .map(|(c, mut v)| (c, (median(&mut v), v.len())))
        .collect()
}

fn choice(p: &Prediction, seen: &BTreeMap<Config, (f64, usize)>) -> Choice {
    let m = seen.get(&p.config);
    Choice {
        p: p.config.p,
        e: p.config.e,
        smt: p.config.smt,
        threads: p.config.threads(),
        predicted_s: p.predicted_s,
        ci: p.ci,
        measured_s: m.map(|x| x.0),
        runs: m.map_or(0, |x| x.1),
        energy_j: p.energy_j,
        edp: p.edp,
        extrapolated: p.extrapolated,
    }
}

/// Median measured value on `goal` of every configuration run (energy and
/// EDP from the runs that carry energy).
fn measured_scores(runs: &[Observation], goal: Goal) -> BTreeMap<Config, f64> {
    let mut by: BTreeMap<Config, Vec<f64>> = BTreeMap::new();
    for o in runs {
        let v = match goal {
            Goal::Time => Some(o.time_s),
            Goal::Energy => o.energy_j,
            Goal::Edp => o.energy_j.map(|e| e * o.time_s),
        };
        if let Some(v) = v.filter(|v| v.is_finite()) {
            by.entry(o.config).or_default().push(v);
        }
    }
    by.into_iter()
        .map(|(c, mut v)| (c, median(&mut v)))
        .collect()
}

/// How the evidence prices an alternative: by the model, or (when the
/// model is not trusted) by the measurements only.
enum Pricing<'a> {
    Model { extrapolate: bool },
    Measured(&'a BTreeMap<Config, f64>),
}

#[allow(clippy::too_many_arguments)]
fn alternative(
    fit: &Fit,
    machine: &Machine,
    goal: Goal,
    best: &Choice,
    change: Change,
    alt: Config,
    seen: &BTreeMap<Config, (f64, usize)>,
    pricing: &Pricing,
) -> Option<Alternative> {
    if alt == best.config() || !machine.allows(alt) {
        return None;
    }
    let c = choice(&predict(fit, alt), seen);
    let cost = match pricing {
        Pricing::Model { extrapolate } => {
            if c.extrapolated && !extrapolate {
                return None;
            }
            c.score(goal)? / best.score(goal)? - 1.0
        }
        Pricing::Measured(m) => m.get(&alt)? / m.get(&best.config())? - 1.0,
    };
    Some(Alternative {
        change,
        config: c,
        cost,
    })
}

fn evidence(
    fit: &Fit,
    machine: &Machine,
    goal: Goal,
    best: &Choice,
    seen: &BTreeMap<Config, (f64, usize)>,
    pricing: &Pricing,
) -> Evidence {
    let b = best.config();
    let alt = |change, c| alternative(fit, machine, goal, best, change, c, seen, pricing);
    let other_kind = if machine.one_kind() {
        None
    } else if b.e == 0 {
        alt(Change::AddE, Config::new(b.p, machine.e_cores, b.smt))
    } else if b.p == 0 {
        alt(Change::AddP, Config::new(machine.p_cores, b.e, b.smt))
    } else {
        let smt = b.smt.min(b.p * machine.smt_per_p_core);
        alt(Change::DropE, Config::new(b.p, 0, smt))
    };
    let all_smt = b.p * machine.smt_per_p_core + b.e * machine.smt_per_e_core;
    let smt = if b.smt == 0 {
        alt(Change::AddSmt, Config::new(b.p, b.e, all_smt))
    } else {
        alt(Change::DropSmt, Config::new(b.p, b.e, 0))
    };
    Evidence { other_kind, smt }
}

/// A point prediction of `config` on `goal` under `model` and `theta`
/// (energy from the fit's power model).
fn point(
    model: ModelKind,
    theta: &crate::Theta,
    power: Option<&PowerFit>,
    config: Config,
    goal: Goal,
) -> Option<f64> {
    let t = model.time(theta, config);
    let v = match goal {
        Goal::Time => t,
        Goal::Energy => power?.watts(config) * t,
        Goal::Edp => power?.watts(config) * t * t,
    };
    v.is_finite().then_some(v)
}

/// The least run-to-run noise (≈ relative) the gates assume.
const NOISE_FLOOR: f64 = 0.002;

/// The run-to-run noise (≈ relative) the gates compare against: the
/// spread of repeated runs, else the residual error, else 5%.
fn noise(fit: &Fit) -> f64 {
    fit.spread.or(fit.rse).unwrap_or(0.05).max(NOISE_FLOOR)
}

/// The quality gates: why the model's pick `pick` (among `eligible`) is not
/// to be trusted, if it is not.
fn caveats(
    fit: &Fit,
    goal: Goal,
    pick: &Prediction,
    eligible: &[Prediction],
    scores: &BTreeMap<Config, f64>,
    machine: &Machine,
) -> Vec<Caveat> {
    let mut out = Vec::new();
    let sigma = noise(fit);
    if let Some(r2) = fit.r2.filter(|r| *r < R2_MIN) {
        out.push(Caveat::LowR2 { r2, min: R2_MIN });
    }
    if let (Some(rse), Some(spread)) = (fit.rse, fit.spread) {
        if rse > RESIDUAL_FLOOR && rse > RESIDUAL_MAX_RATIO * spread {
            out.push(Caveat::ResidualAboveSpread { rse, spread });
        }
    }
    let chosen_aicc = fit
        .candidates
        .iter()
        .find(|c| c.model == fit.model && c.contention == fit.contention)
        .map_or(f64::INFINITY, |c| c.aicc);
    let power = fit.power.as_ref();
    let mine = |c: Config| point(fit.model, &fit.theta, power, c, goal);
    for other in &fit.candidates {
        if (other.model, other.contention) == (fit.model, fit.contention)
            || other.aicc - chosen_aicc >= AICC_TIE
        {
            continue;
        }
        let theirs = |c: Config| point(other.model, &other.theta, power, c, goal);
        let Some(their_pick) = eligible
            .iter()
            .filter_map(|p| Some((theirs(p.config)?, p.config)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|x| x.1)
        else {
            continue;
        };
        if their_pick == pick.config {
            continue;
        }
        let cost_mine = mine(their_pick)
            .zip(mine(pick.config))
            .map(|(a, b)| a / b - 1.0);
        let cost_theirs = theirs(pick.config)
            .zip(theirs(their_pick))
            .map(|(a, b)| a / b - 1.0);
        let cost = cost_mine.unwrap_or(0.0).max(cost_theirs.unwrap_or(0.0));
        if cost > 2.0 * sigma {
            out.push(Caveat::ModelsDisagree {
                model: other.model,
                contention: other.contention,
                picks: their_pick,
                cost,
            });
            break;
        }
    }
    let best_measured = scores
        .iter()
        .filter(|(c, _)| machine.allows(**c))
        .min_by(|a, b| a.1.total_cmp(b.1));
    // Measured against measured: the run-to-run noise; against a
    // prediction: that, or the model's own error when larger.
    let (model_value, sigma) = match scores.get(&pick.config) {
        Some(v) => (Some(*v), sigma),
        None => (pick.score(goal), sigma.max(fit.rse.unwrap_or(0.0))),
    };
    if let (Some((&config, &measured)), Some(model_value)) = (best_measured, model_value) {
        if config != pick.config && measured < model_value * (-2.0 * sigma).exp() {
            out.push(Caveat::MeasuredBeatsModel {
                config,
                measured,
                model_pick: pick.config,
                model_value,
            });
        }
    }
    out
}

/// Residual sum of squares of log time of `runs` under `theta` with T1
/// re-fitted (in closed form: on log time it is an offset); `None` when a
/// run's predicted time is not positive.
fn rss_refit_t1(model: ModelKind, theta: &crate::Theta, runs: &[Observation]) -> Option<f64> {
    let unit = crate::Theta { t1: 1.0, ..*theta };
    let mut r = Vec::with_capacity(runs.len());
    for o in runs {
        let t = model.time(&unit, o.config);
        if !(t.is_finite() && t > 0.0) {
            return None;
        }
        r.push(o.time_s.ln() - t.ln());
    }
    let mean = r.iter().sum::<f64>() / r.len().max(1) as f64;
    Some(r.iter().map(|x| (x - mean) * (x - mean)).sum())
}

/// The `at_bound` gate: every fitted parameter at a bound of its range
/// that the runs do not bracket.
///
/// *Bracketed* — the precise meaning of "the design brackets it" — is the
/// sense in which a minimum is bracketed (Press et al., *Numerical
/// Recipes*, §10.1: a < b < c with the objective at b below both): the
/// runs constrain the parameter from both sides. From inside the range
/// they do by construction (the fit is the optimum there); from outside
/// when the objective rises past the bound. Each parameter is moved past
/// its bound in steps (sf: ×1.06, the fit's sf grid step, up to ×8 above
/// 16 and ÷2 below 1; γ and f: 0.01 to 0.5 past 0 or 1; contention:
/// 10⁻⁴ to 10⁻¹ below 0), the other parameters held and T1 re-fitted, and
/// the residual sum of squares of log time compared with the fit's under
/// the same re-fit, in noise variances (the run-to-run spread squared
/// when runs repeat, else the fit's residual variance; at least 0.2%
/// squared). The bound is bracketed when no step lowers it by more than
/// [`AT_BOUND_CHI2`] (the runs do not want the parameter past the bound)
/// and some step raises it by more than that (they reject values past
/// it; a step predicting a non-positive time counts as rejected). A
/// parameter the runs put on its bound (γ 0 for a program SMT does not
/// help, measured with and without SMT; f 1 for a program that scales
/// perfectly) is bracketed. Otherwise the bound binds (the runs fit
/// better past it: sf pushed to 16 by E-only runs more than 16 times
/// slower) or the runs leave that side open (sf pushed to 16 because
/// hybrid runs gain nothing from their E-cores and no E-only run pins the
/// ratio: any larger sf fits as well), and every prediction is made by a
/// model cut short at the bound: [`Caveat::AtBound`].
fn at_bound(fit: &Fit, runs: &[Observation]) -> Vec<Caveat> {
    let mut out = Vec::new();
    let Some(base) = rss_refit_t1(fit.model, &fit.theta, runs) else {
        return out;
    };
    // Parameters fitted (T1 and f always): the residual degrees of freedom.
    let k = [
        &fit.params.t1,
        &fit.params.f,
        &fit.params.sf,
        &fit.params.smt_gain,
        &fit.params.contention,
    ]
    .iter()
    .filter(|p| p.status == crate::fit::ParamStatus::Fitted)
    .count();
    let dof = runs.len().saturating_sub(k);
    let variance = match fit.spread {
        Some(s) => s * s,
        None if dof > 0 => base / dof as f64,
        None => 0.0,
    }
    .max(NOISE_FLOOR * NOISE_FLOOR);
    let margin = AT_BOUND_CHI2 * variance;
    type Set = fn(&mut crate::Theta, f64);
    let params: [(&'static str, &crate::fit::Param, Set, f64, f64); 4] = [
        ("sf", &fit.params.sf, |t, v| t.sf = v, 1.0, SF_MAX),
        (
            "smt_gain",
            &fit.params.smt_gain,
            |t, v| t.smt_gain = v,
            0.0,
            1.0,
        ),
        ("f", &fit.params.f, |t, v| t.f = v, 0.0, 1.0),
        (
            "contention",
            &fit.params.contention,
            |t, v| t.contention = v,
            0.0,
            f64::INFINITY,
        ),
    ];
    for (name, param, set, lo, hi) in params {
        let Some(bound) = param.bound else { continue };
        let limit = match bound {
            Bound::Lower => lo,
            Bound::Upper => hi,
        };
        if !limit.is_finite() {
            continue;
        }
        const STEPS: [f64; 6] = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5];
        let beyond: Vec<f64> = match (name, bound) {
            ("sf", Bound::Upper) => [1.06, 1.12, 1.25, 1.5, 2.0, 4.0, 8.0]
                .iter()
                .map(|k| limit * k)
                .collect(),
            ("sf", Bound::Lower) => [1.06, 1.12, 1.25, 1.5, 2.0]
                .iter()
                .map(|k| limit / k)
                .collect(),
            ("contention", _) => [1e-4, 1e-3, 1e-2, 1e-1].iter().map(|d| -d).collect(),
            (_, Bound::Upper) => STEPS.iter().map(|d| limit + d).collect(),
            (_, Bound::Lower) => STEPS.iter().map(|d| limit - d).collect(),
        };
        // (change of the objective past the bound, value), a prediction
        // that is not a positive time counting as an infinite rise.
        let moved: Vec<(f64, f64)> = beyond
            .into_iter()
            .map(|v| {
                let mut th = fit.theta;
                set(&mut th, v);
                let rss = rss_refit_t1(fit.model, &th, runs).unwrap_or(f64::INFINITY);
                (rss - base, v)
            })
            .collect();
        let Some(&(best, best_at)) = moved.iter().min_by(|a, b| a.0.total_cmp(&b.0)) else {
            continue;
        };
        let rise = moved.iter().map(|m| m.0).fold(f64::NEG_INFINITY, f64::max);
        let bracketed = best >= -margin && rise > margin;
        if !bracketed {
            out.push(Caveat::AtBound {
                param: name,
                bound,
                limit,
                beyond: best_at,
                change: best / variance,
            });
        }
    }
    out
}

/// Fit, check and recommend; configurations predicted by extrapolation are
/// never recommended (see [`analyse_with`]).
pub fn analyse(
    design: &[Observation],
    validation: &[Observation],
    machine: &Machine,
    goal: Goal,
    opts: FitOptions,
) -> Result<TuneReport, FitError> {
    analyse_with(design, validation, machine, goal, opts, false)
}

/// Fit, check and recommend.
///
/// * The `design` runs are fitted alone; each `validation` configuration is
///   predicted by that fit and compared with its median measured time, so
///   the validation error is out of sample.
/// * The recommendation, the predictions and the parameters then come from
///   a fit on all runs (design and validation): the validation runs sit
///   where the optimum is predicted to be, so they sharpen the answer
///   exactly where it matters. With no validation runs both fits are one.
/// * The model recommends among the configurations it predicts from
///   measured dimensions (every configuration with `extrapolate`).
/// * Quality gates ([`Caveat`]): a low R², a residual error far above the
///   run-to-run spread, an equally good model recommending differently, or
///   a measured configuration beating the model's pick beyond the noise,
///   or a fitted parameter at a bound that the runs do not bracket (they
///   fit as well or better past it, [`Caveat::AtBound`]) make the
///   recommendation the
///   best measured configuration instead
///   ([`RecommendedBy::BestMeasured`]), its evidence priced by the
///   measurements alone.
///
/// Errors: [`FitError::NoEnergy`] when `goal` needs energy and no run
/// carries `energy_j` (checked before fitting), the fit's errors, and
/// [`FitError::NoConfiguration`] when the machine allows no configuration.
pub fn analyse_with(
    design: &[Observation],
    validation: &[Observation],
    machine: &Machine,
    goal: Goal,
    opts: FitOptions,
    extrapolate: bool,
) -> Result<TuneReport, FitError> {
    let all: Vec<Observation> = design.iter().chain(validation).copied().collect();
    if goal.needs_energy() && !all.iter().any(|o| o.energy_j.is_some()) {
        return Err(FitError::NoEnergy { goal: goal.name() });
    }
    let design_fit = fit(design, opts)?;
    let validation_rows = validation_rows(&design_fit, validation);
    let final_fit = if validation.is_empty() {
        design_fit
    } else {
        fit(&all, opts)?
    };
    let seen = measured(&all);
    let scores = measured_scores(&all, goal);
    let ranking = ranked(&final_fit, machine, goal)?;
    let eligible = eligible(&ranking, extrapolate);
    let pick = *eligible.first().ok_or(FitError::NoConfiguration)?;
    let mut caveats = caveats(&final_fit, goal, &pick, &eligible, &scores, machine);
    caveats.extend(at_bound(&final_fit, &all));
    let by_measure = best_measured(&scores, machine);
    let fallback = !caveats.is_empty() && !by_measure.is_empty();
    let Recommendation {
        best,
        runner_up,
        gap,
        pricing,
    } = if fallback {
        Recommendation::measured(&final_fit, &by_measure, &seen, &scores)?
    } else {
        Recommendation::model(&pick, eligible.get(1), &seen, goal, extrapolate)
    };
    let mut predictions: Vec<Choice> = ranking.iter().map(|p| choice(p, &seen)).collect();
    predictions.sort_by_key(Choice::config);
    let evidence = evidence(&final_fit, machine, goal, &best, &seen, &pricing);
    let outside_machine = seen
        .keys()
        .copied()
        .filter(|c| !machine.allows(*c))
        .collect();
    Ok(TuneReport {
        goal,
        machine: *machine,
        one_kind: machine.one_kind(),
        model: final_fit.model,
        contention_term: final_fit.contention,
        power: final_fit.power.as_ref().map(|p| PowerReport {
            params: p.params,
            runs: p.runs,
            r2: p.r2,
        }),
        fit: fit_quality(&final_fit),
        params: final_fit.params,
        recommended_by: if fallback {
            RecommendedBy::BestMeasured
        } else {
            RecommendedBy::Model
        },
        caveats,
        extrapolate,
        span: final_fit.span,
        recommended: best,
        runner_up,
        gap,
        evidence,
        predictions,
        validation: validation_rows,
        outside_machine,
        design_runs: design.len(),
        validation_runs: validation.len(),
    })
}

/// Each validation configuration's median measured time against what
/// the fit of the design alone predicts (out of sample).
fn validation_rows(design_fit: &Fit, validation: &[Observation]) -> Vec<ValidationRow> {
    measured(validation)
        .into_iter()
        .map(|(c, (m, n))| {
            let p = predict(design_fit, c);
            ValidationRow {
                p: c.p,
                e: c.e,
                smt: c.smt,
                predicted_s: p.predicted_s,
                ci: p.ci,
                measured_s: m,
                runs: n,
                error: p.predicted_s / m - 1.0,
            }
        })
        .collect()
}

/// The measured configurations the machine allows with their scores,
/// best first.
fn best_measured(scores: &BTreeMap<Config, f64>, machine: &Machine) -> Vec<(Config, f64)> {
    let mut by_measure: Vec<(Config, f64)> = scores
        .iter()
        .filter(|(c, _)| machine.allows(**c))
        .map(|(c, v)| (*c, *v))
        .collect();
    by_measure.sort_by(|a, b| a.1.total_cmp(&b.1));
    by_measure
}

/// The ranked configurations the model may recommend: those it predicts
/// from measured dimensions (every one with `extrapolate`, or when none is).
fn eligible(ranking: &[Prediction], extrapolate: bool) -> Vec<Prediction> {
    let eligible: Vec<Prediction> = ranking
        .iter()
        .filter(|p| extrapolate || !p.extrapolated)
        .copied()
        .collect();
    if eligible.is_empty() {
        return ranking.to_vec();
    }
    eligible
}

/// The recommended configuration, the runner-up, how much worse the
/// runner-up is, and how the evidence is priced.
struct Recommendation<'a> {
    best: Choice,
    runner_up: Option<Choice>,
    gap: f64,
    pricing: Pricing<'a>,
}

impl<'a> Recommendation<'a> {
    /// The best measured configurations (`by_measure`, best first), priced
    /// by their measured `scores`.
    fn measured(
        fit: &Fit,
        by_measure: &[(Config, f64)],
        seen: &BTreeMap<Config, (f64, usize)>,
        scores: &'a BTreeMap<Config, f64>,
    ) -> Result<Recommendation<'a>, FitError> {
        let gap = match (by_measure.first(), by_measure.get(1)) {
            (Some(a), Some(b)) if a.1 > 0.0 => b.1 / a.1 - 1.0,
            _ => 0.0,
        };
        Ok(Recommendation {
            best: choice_at(fit, by_measure, 0, seen).ok_or(FitError::NoConfiguration)?,
            runner_up: choice_at(fit, by_measure, 1, seen),
            gap,
            pricing: Pricing::Measured(scores),
        })
    }

    /// The model's pick and its runner-up, priced by the model.
    fn model(
        pick: &Prediction,
        runner_up: Option<&Prediction>,
        seen: &BTreeMap<Config, (f64, usize)>,
        goal: Goal,
        extrapolate: bool,
    ) -> Recommendation<'a> {
        let best = choice(pick, seen);
        let runner_up = runner_up.map(|p| choice(p, seen));
        let gap = match (runner_up.and_then(|r| r.score(goal)), best.score(goal)) {
            (Some(r), Some(b)) if b > 0.0 => r / b - 1.0,
            _ => 0.0,
        };
        Recommendation {
            best,
            runner_up,
            gap,
            pricing: Pricing::Model { extrapolate },
        }
    }
}

/// The `i`th best measured configuration as a choice, with the fit's
/// prediction.
fn choice_at(
    fit: &Fit,
    by_measure: &[(Config, f64)],
    i: usize,
    seen: &BTreeMap<Config, (f64, usize)>,
) -> Option<Choice> {
    by_measure
        .get(i)
        .map(|(c, _)| choice(&predict(fit, *c), seen))
}

/// How well the fit explains the runs, for the report.
fn fit_quality(fit: &Fit) -> FitQuality {
    FitQuality {
        rse: fit.rse,
        r2: fit.r2,
        runs: fit.runs,
        configs: fit.configs,
        objective: fit.objective,
        spread: fit.spread,
        candidates: fit.candidates.clone(),
    }
}
