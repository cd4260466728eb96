//! The whole analysis of `pinsight tune` as one serialisable report: fit,
//! predictions, validation, recommendation and its evidence.

use crate::design::{predict, ranked, Goal, Prediction};
use crate::fit::{fit, Candidate, Fit, FitError, FitOptions, Params};
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
    }
}

fn alternative(
    fit: &Fit,
    machine: &Machine,
    goal: Goal,
    best: &Choice,
    change: Change,
    alt: Config,
    seen: &BTreeMap<Config, (f64, usize)>,
) -> Option<Alternative> {
    if alt == best.config() || !machine.allows(alt) {
        return None;
    }
    let c = choice(&predict(fit, alt), seen);
    let (a, b) = (c.score(goal)?, best.score(goal)?);
    Some(Alternative {
        change,
        config: c,
        cost: a / b - 1.0,
    })
}

fn evidence(
    fit: &Fit,
    machine: &Machine,
    goal: Goal,
    best: &Choice,
    seen: &BTreeMap<Config, (f64, usize)>,
) -> Evidence {
    let b = best.config();
    let other_kind = if machine.one_kind() {
        None
    } else if b.e == 0 {
        alternative(
            fit,
            machine,
            goal,
            best,
            Change::AddE,
            Config::new(b.p, machine.e_cores, b.smt),
            seen,
        )
    } else if b.p == 0 {
        alternative(
            fit,
            machine,
            goal,
            best,
            Change::AddP,
            Config::new(machine.p_cores, b.e, b.smt),
            seen,
        )
    } else {
        let smt = b.smt.min(b.p * machine.smt_per_p_core);
        alternative(
            fit,
            machine,
            goal,
            best,
            Change::DropE,
            Config::new(b.p, 0, smt),
            seen,
        )
    };
    let all_smt = b.p * machine.smt_per_p_core + b.e * machine.smt_per_e_core;
    let smt = if b.smt == 0 {
        alternative(
            fit,
            machine,
            goal,
            best,
            Change::AddSmt,
            Config::new(b.p, b.e, all_smt),
            seen,
        )
    } else {
        alternative(
            fit,
            machine,
            goal,
            best,
            Change::DropSmt,
            Config::new(b.p, b.e, 0),
            seen,
        )
    };
    Evidence { other_kind, smt }
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
///
/// Errors: [`FitError::NoEnergy`] when `goal` needs energy and no run
/// carries `energy_j` (checked before fitting), the fit's errors, and
/// [`FitError::NoConfiguration`] when the machine allows no configuration.
pub fn analyse(
    design: &[Observation],
    validation: &[Observation],
    machine: &Machine,
    goal: Goal,
    opts: FitOptions,
) -> Result<TuneReport, FitError> {
    let all: Vec<Observation> = design.iter().chain(validation).copied().collect();
    if goal.needs_energy() && !all.iter().any(|o| o.energy_j.is_some()) {
        return Err(FitError::NoEnergy { goal: goal.name() });
    }
    let design_fit = fit(design, opts)?;
    let validation_rows: Vec<ValidationRow> = measured(validation)
        .into_iter()
        .map(|(c, (m, n))| {
            let p = predict(&design_fit, c);
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
        .collect();
    let final_fit = if validation.is_empty() {
        design_fit
    } else {
        fit(&all, opts)?
    };
    let seen = measured(&all);
    let ranking = ranked(&final_fit, machine, goal)?;
    let best = choice(ranking.first().ok_or(FitError::NoConfiguration)?, &seen);
    let runner_up = ranking.get(1).map(|p| choice(p, &seen));
    let gap = match (runner_up.and_then(|r| r.score(goal)), best.score(goal)) {
        (Some(r), Some(b)) if b > 0.0 => r / b - 1.0,
        _ => 0.0,
    };
    let mut predictions: Vec<Choice> = ranking.iter().map(|p| choice(p, &seen)).collect();
    predictions.sort_by_key(Choice::config);
    let evidence = evidence(&final_fit, machine, goal, &best, &seen);
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
        params: final_fit.params,
        power: final_fit.power.as_ref().map(|p| PowerReport {
            params: p.params,
            runs: p.runs,
            r2: p.r2,
        }),
        fit: FitQuality {
            rse: final_fit.rse,
            r2: final_fit.r2,
            runs: final_fit.runs,
            configs: final_fit.configs,
            candidates: final_fit.candidates.clone(),
        },
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
