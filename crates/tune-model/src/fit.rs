//! Least-squares fit on log time, model choice by AICc, bootstrap intervals.

use crate::model::{ModelKind, Theta};
use crate::nelder_mead::minimize;
use crate::power::{fit_power, PowerFit};
use crate::{Config, Observation};
use rand_core::{Rng, SeedableRng};
use rand_xorshift::XorShiftRng;
use serde::Serialize;
use std::collections::BTreeMap;

/// Why runs cannot be fitted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FitError {
    /// No runs at all.
    #[error("no runs to fit: need runs at {needed} or more configurations")]
    NoRuns {
        /// Distinct configurations needed.
        needed: usize,
    },
    /// A run with a time that is not a positive finite number.
    #[error("run {index} ({config}): time {time_s} s is not a positive number of seconds")]
    NonPositiveTime {
        /// Index of the run in the input (0-based).
        index: usize,
        /// Its configuration.
        config: Config,
        /// The time given.
        time_s: f64,
    },
    /// A run on no core.
    #[error("run {index}: configuration {config} uses no core (p + e must be at least 1)")]
    NoCore {
        /// Index of the run in the input (0-based).
        index: usize,
        /// Its configuration.
        config: Config,
    },
    /// An energy or EDP goal, but no run carries energy.
    #[error("goal {goal} needs energy, but no run carries energy_j (add an energy_j column in joules, or use goal time)")]
    NoEnergy {
        /// The goal asked for ("energy" or "edp").
        goal: &'static str,
    },
    /// The machine allows no configuration to recommend.
    #[error("the machine allows no configuration (it has no usable core)")]
    NoConfiguration,
    /// Too few distinct configurations for the parameters to fit.
    #[error("not identifiable: runs at {configs} configuration(s), need at least {needed} to fit {params}")]
    NotIdentifiable {
        /// Distinct configurations in the runs.
        configs: usize,
        /// Distinct configurations needed.
        needed: usize,
        /// The parameters to fit, named.
        params: String,
    },
}

/// Options of [`fit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FitOptions {
    /// Bootstrap draws (0: no intervals, `ci` = `[value, value]`).
    pub bootstrap: usize,
    /// Seed of the bootstrap resampling (same seed, same intervals).
    pub seed: u64,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            bootstrap: 200,
            seed: 12,
        }
    }
}

/// Whether a parameter was fitted, and if not why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamStatus {
    /// Fitted from the runs.
    Fitted,
    /// sf: the runs (or the machine) have one kind of core; sf is not
    /// identifiable and is held at 1.
    OneKind,
    /// γ: no run used SMT siblings; held at 0.
    NoSmtRuns,
    /// Contention: the chosen model does without it; held at 0.
    NotNeeded,
}

/// One parameter: value, 95% bootstrap interval, status.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Param {
    /// Point estimate (or the held value when not fitted).
    pub value: f64,
    /// 95% bootstrap interval `[lo, hi]` (expanded percentile: percentiles
    /// widened for the residual degrees of freedom, see [`Fit::ci_tail`]).
    pub ci: [f64; 2],
    /// Fitted or why not.
    pub status: ParamStatus,
}

/// All parameters of a fit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Params {
    /// Serial time on one P-core (s).
    pub t1: Param,
    /// Parallel fraction.
    pub f: Param,
    /// P-core speed relative to an E-core.
    pub sf: Param,
    /// SMT gain γ.
    pub smt_gain: Param,
    /// Per-active-core contention c.
    pub contention: Param,
}

/// One model tried, with its score.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Candidate {
    /// The model.
    pub model: ModelKind,
    /// With the contention term.
    pub contention: bool,
    /// Parameters fitted (k).
    pub k: usize,
    /// Residual sum of squares of log time.
    pub rss: f64,
    /// Small-sample AIC (plain AIC when runs ≤ k + 1).
    pub aicc: f64,
    /// The fitted values.
    pub theta: Theta,
}

/// A fitted model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fit {
    /// The chosen model.
    pub model: ModelKind,
    /// Whether the chosen model has the contention term.
    pub contention: bool,
    /// Point estimates with intervals.
    pub params: Params,
    /// Point estimates as model input.
    pub theta: Theta,
    /// Residual standard error of log time (≈ relative error); `None` when
    /// runs ≤ parameters.
    pub rse: Option<f64>,
    /// R² of log time; `None` when all runs took the same time.
    pub r2: Option<f64>,
    /// Runs fitted.
    pub runs: usize,
    /// Distinct configurations fitted.
    pub configs: usize,
    /// Every model tried (the chosen one has the lowest `aicc`).
    pub candidates: Vec<Candidate>,
    /// Bootstrap draws of the parameters (for prediction intervals).
    #[serde(skip)]
    pub draws: Vec<Theta>,
    /// Lower tail probability at which the intervals take their percentiles
    /// (≤ 0.025: the expanded percentile interval, see `ci`).
    #[serde(skip)]
    pub ci_tail: f64,
    /// The power model, when runs carry `energy_j` (energy and EDP goals).
    pub power: Option<PowerFit>,
}

impl Fit {
    /// True when sf could not be fitted because the runs have one kind.
    pub fn one_kind(&self) -> bool {
        self.params.sf.status == ParamStatus::OneKind
    }
}

/// Runs grouped by configuration, log times.
struct Groups {
    configs: Vec<Config>,
    logs: Vec<Vec<f64>>,
}

impl Groups {
    fn n(&self) -> usize {
        self.logs.iter().map(Vec::len).sum()
    }
}

/// Which parameters are free, and how a vector maps to [`Theta`]:
/// t1 = exp(x), f = logistic(x), sf = exp(x), γ = logistic(x), c = x.
#[derive(Clone, Copy)]
struct Layout {
    sf: bool,
    smt: bool,
    contention: bool,
}

fn logistic(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn logit(p: f64) -> f64 {
    let p = p.clamp(1e-9, 1.0 - 1e-9);
    (p / (1.0 - p)).ln()
}

impl Layout {
    fn k(&self) -> usize {
        2 + usize::from(self.sf) + usize::from(self.smt) + usize::from(self.contention)
    }

    fn theta(&self, x: &[f64]) -> Theta {
        let mut it = x.iter().copied();
        let mut next = || it.next().unwrap_or(0.0);
        let t1 = next().exp();
        let f = logistic(next());
        let sf = if self.sf { next().exp() } else { 1.0 };
        let smt_gain = if self.smt { logistic(next()) } else { 0.0 };
        let contention = if self.contention { next() } else { 0.0 };
        Theta {
            t1,
            f,
            sf,
            smt_gain,
            contention,
        }
    }

    fn vector(&self, th: &Theta) -> Vec<f64> {
        let mut x = vec![th.t1.ln(), logit(th.f)];
        if self.sf {
            x.push(th.sf.ln());
        }
        if self.smt {
            x.push(logit(th.smt_gain));
        }
        if self.contention {
            x.push(th.contention);
        }
        x
    }

    fn names(&self) -> String {
        let mut v = vec!["T1", "f"];
        if self.sf {
            v.push("sf");
        }
        if self.smt {
            v.push("smt_gain");
        }
        if self.contention {
            v.push("contention");
        }
        v.join(", ")
    }
}

/// Sum over configurations of runs·(mean log time − log model)², i.e. the
/// RSS less the within-configuration part (which no model changes).
fn between_ss(model: ModelKind, th: &Theta, configs: &[Config], means: &[(f64, f64)]) -> f64 {
    let mut s = 0.0;
    for (c, &(n, mean)) in configs.iter().zip(means) {
        let t = model.time(th, *c);
        if !(t.is_finite() && t > 0.0) {
            return f64::INFINITY;
        }
        let d = mean - t.ln();
        s += n * d * d;
    }
    s
}

fn means(logs: &[Vec<f64>]) -> Vec<(f64, f64)> {
    logs.iter()
        .map(|v| (v.len() as f64, v.iter().sum::<f64>() / v.len() as f64))
        .collect()
}

fn within_ss(logs: &[Vec<f64>]) -> f64 {
    logs.iter()
        .map(|v| {
            let m = v.iter().sum::<f64>() / v.len() as f64;
            v.iter().map(|x| (x - m) * (x - m)).sum::<f64>()
        })
        .sum()
}

/// Minimise from each start; best result.
fn optimise(
    model: ModelKind,
    layout: Layout,
    configs: &[Config],
    means: &[(f64, f64)],
    starts: &[Theta],
) -> (Theta, f64) {
    let mut best: Option<(Vec<f64>, f64)> = None;
    let mut objective = |x: &[f64]| between_ss(model, &layout.theta(x), configs, means);
    for s in starts {
        let x0 = layout.vector(s);
        let (x, v) = minimize(&mut objective, &x0, 0.5, 1e-13, 3000);
        // Restart once from the result: Nelder–Mead can stall on a ridge.
        let (x, v2) = minimize(&mut objective, &x, 0.1, 1e-15, 2000);
        let v = v.min(v2);
        if best.as_ref().is_none_or(|(_, b)| v < *b) {
            best = Some((x, v));
        }
    }
    let (x, v) = best.unwrap_or_else(|| (layout.vector(&starts[0]), f64::INFINITY));
    (layout.theta(&x), v)
}

fn starts(layout: Layout, groups: &Groups) -> Vec<Theta> {
    // T1 from the configuration with fewest cores (P-cores preferred).
    let (i, _) = groups
        .configs
        .iter()
        .enumerate()
        .min_by_key(|(_, c)| (c.cores(), c.p == 0, c.smt))
        .unwrap_or((0, &Config::new(1, 0, 0)));
    let m = groups.logs[i].iter().sum::<f64>() / groups.logs[i].len() as f64;
    let c = groups.configs[i];
    let mut out = Vec::new();
    for &f in &[0.5, 0.9, 0.99] {
        for &sf in if layout.sf {
            &[1.5, 3.0][..]
        } else {
            &[1.0][..]
        } {
            let serial = if c.p > 0 { 1.0 } else { sf };
            let share = (1.0 - f) * serial + f * serial / f64::from(c.cores().max(1));
            out.push(Theta {
                t1: m.exp() / share,
                f,
                sf,
                smt_gain: 0.3,
                contention: 0.0,
            });
        }
    }
    out
}

fn group(runs: &[Observation]) -> Result<Groups, FitError> {
    let mut map: BTreeMap<Config, Vec<f64>> = BTreeMap::new();
    for (index, o) in runs.iter().enumerate() {
        if o.config.cores() == 0 {
            return Err(FitError::NoCore {
                index,
                config: o.config,
            });
        }
        if !(o.time_s.is_finite() && o.time_s > 0.0) {
            return Err(FitError::NonPositiveTime {
                index,
                config: o.config,
                time_s: o.time_s,
            });
        }
        map.entry(o.config).or_default().push(o.time_s.ln());
    }
    let (configs, logs) = map.into_iter().unzip();
    Ok(Groups { configs, logs })
}

fn base_layout(groups: &Groups) -> Layout {
    let any_p = groups.configs.iter().any(|c| c.p > 0);
    let any_e = groups.configs.iter().any(|c| c.e > 0);
    Layout {
        sf: any_p && any_e,
        smt: groups.configs.iter().any(|c| c.smt > 0),
        contention: false,
    }
}

fn check_identifiable(groups: &Groups, layout: Layout) -> Result<(), FitError> {
    let needed = layout.k();
    if groups.configs.is_empty() {
        return Err(FitError::NoRuns { needed });
    }
    if groups.configs.len() < needed {
        return Err(FitError::NotIdentifiable {
            configs: groups.configs.len(),
            needed,
            params: layout.names(),
        });
    }
    Ok(())
}

fn score(rss: f64, n: usize, k: usize) -> f64 {
    let n_f = n as f64;
    // Floor: a perfect fit would give ln 0.
    let rss = rss.max(1e-12 * n_f);
    let aic = n_f * (rss / n_f).ln() + 2.0 * k as f64;
    if n > k + 1 {
        aic + 2.0 * (k * (k + 1)) as f64 / (n - k - 1) as f64
    } else {
        aic
    }
}

/// Fit both models (dynamic and static split), each without and — when the
/// runs have more configurations than the base parameters — with the
/// contention term, by least squares on log time; choose the lowest AICc
/// (ties: dynamic, then without contention); bootstrap the chosen one.
///
/// sf is fitted only when the runs use both kinds (else
/// [`ParamStatus::OneKind`], held at 1), γ only when some run uses SMT
/// siblings ([`ParamStatus::NoSmtRuns`], held at 0).
pub fn fit(runs: &[Observation], opts: FitOptions) -> Result<Fit, FitError> {
    fit_inner(runs, opts, None)
}

/// Like [`fit`] with the model (and whether it has the contention term)
/// given instead of chosen.
pub fn fit_model(
    runs: &[Observation],
    model: ModelKind,
    contention: bool,
    opts: FitOptions,
) -> Result<Fit, FitError> {
    fit_inner(runs, opts, Some((model, contention)))
}

fn fit_inner(
    runs: &[Observation],
    opts: FitOptions,
    forced: Option<(ModelKind, bool)>,
) -> Result<Fit, FitError> {
    let groups = group(runs)?;
    let base = base_layout(&groups);
    let mut needed_layout = base;
    if let Some((_, true)) = forced {
        needed_layout.contention = true;
    }
    check_identifiable(&groups, needed_layout)?;
    let n = groups.n();
    let m = means(&groups.logs);
    let within = within_ss(&groups.logs);
    let mut tries: Vec<(ModelKind, bool)> = Vec::new();
    match forced {
        Some(t) => tries.push(t),
        None => {
            for model in ModelKind::ALL {
                tries.push((model, false));
            }
            let with_c = Layout {
                contention: true,
                ..base
            };
            if groups.configs.len() > base.k() && n > with_c.k() + 1 {
                for model in ModelKind::ALL {
                    tries.push((model, true));
                }
            }
        }
    }
    let mut candidates = Vec::new();
    for (model, contention) in tries {
        let layout = Layout { contention, ..base };
        let (theta, between) =
            optimise(model, layout, &groups.configs, &m, &starts(layout, &groups));
        let rss = between + within;
        candidates.push(Candidate {
            model,
            contention,
            k: layout.k(),
            rss,
            aicc: score(rss, n, layout.k()),
            theta,
        });
    }
    let chosen = candidates
        .iter()
        .copied()
        .reduce(|a, b| if b.aicc < a.aicc - 1e-9 { b } else { a })
        .ok_or(FitError::NoRuns { needed: base.k() })?;
    let layout = Layout {
        contention: chosen.contention,
        ..base
    };
    let draws = bootstrap(chosen.model, layout, &groups, &chosen.theta, n, opts);
    let tail = expanded_tail(n, layout.k());
    let ci = |get: fn(&Theta) -> f64, value: f64| -> [f64; 2] {
        if draws.is_empty() {
            return [value, value];
        }
        let mut v: Vec<f64> = draws.iter().map(get).collect();
        v.sort_by(f64::total_cmp);
        [quantile(&v, tail), quantile(&v, 1.0 - tail)]
    };
    let th = chosen.theta;
    let param = |get: fn(&Theta) -> f64, status: ParamStatus| Param {
        value: get(&th),
        ci: if status == ParamStatus::Fitted {
            ci(get, get(&th))
        } else {
            [get(&th), get(&th)]
        },
        status,
    };
    let fitted_or = |free: bool, why: ParamStatus| {
        if free {
            ParamStatus::Fitted
        } else {
            why
        }
    };
    let params = Params {
        t1: param(|t| t.t1, ParamStatus::Fitted),
        f: param(|t| t.f, ParamStatus::Fitted),
        sf: param(|t| t.sf, fitted_or(layout.sf, ParamStatus::OneKind)),
        smt_gain: param(
            |t| t.smt_gain,
            fitted_or(layout.smt, ParamStatus::NoSmtRuns),
        ),
        contention: param(
            |t| t.contention,
            fitted_or(layout.contention, ParamStatus::NotNeeded),
        ),
    };
    let all: Vec<f64> = groups.logs.iter().flatten().copied().collect();
    let mean = all.iter().sum::<f64>() / n as f64;
    let tss: f64 = all.iter().map(|x| (x - mean) * (x - mean)).sum();
    let r2 = (tss > 0.0).then(|| 1.0 - chosen.rss / tss);
    let rse = (n > layout.k()).then(|| (chosen.rss / (n - layout.k()) as f64).sqrt());
    Ok(Fit {
        model: chosen.model,
        contention: chosen.contention,
        params,
        theta: th,
        rse,
        r2,
        runs: n,
        configs: groups.configs.len(),
        candidates,
        draws,
        ci_tail: tail,
        power: fit_power(runs, opts.bootstrap, opts.seed, tail),
    })
}

/// Tail probability of the "expanded percentile" interval (Hesterberg,
/// "What teachers should know about the bootstrap", 2015): a plain 95%
/// percentile interval is too narrow with few runs because it ignores the
/// residual degrees of freedom; taking the percentiles at
/// Φ(−√(n/(n−1))·t₀.₉₇₅,ₙ₋ₖ) instead of 2.5% widens it as a t interval
/// would. Plain 2.5% when n ≤ k + 1.
fn expanded_tail(n: usize, k: usize) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
    if n <= k + 1 {
        return 0.025;
    }
    let (Ok(t), Ok(z)) = (
        StudentsT::new(0.0, 1.0, (n - k) as f64),
        Normal::new(0.0, 1.0),
    ) else {
        return 0.025;
    };
    let nf = n as f64;
    let tail = z.cdf(-(nf / (nf - 1.0)).sqrt() * t.inverse_cdf(0.975));
    if tail.is_finite() {
        tail.clamp(0.0005, 0.025)
    } else {
        0.025
    }
}

/// Linear-interpolated quantile of sorted values.
pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (pos - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Bootstrap: each configuration keeps its runs count; each run is its
/// fitted log time plus a residual drawn (with replacement) from the
/// residuals of all runs, scaled by √(n/(n − k)) (the usual correction for
/// residuals shrunk by the fit); then refit from the point estimate.
///
/// Residuals are pooled across configurations rather than resampled within
/// each one: with the usual 3 runs per configuration, within-configuration
/// resampling sees only 3 values and shrinks the spread by (n−1)/n, and the
/// generated-data tests (tests/properties.rs) measured ~80% coverage of the
/// 95% intervals that way against ≥ 90% pooled. Log time makes the noise
/// roughly equal across configurations, which pooling assumes.
fn bootstrap(
    model: ModelKind,
    layout: Layout,
    groups: &Groups,
    theta: &Theta,
    n: usize,
    opts: FitOptions,
) -> Vec<Theta> {
    let k = layout.k();
    let scale = if n > k {
        (n as f64 / (n - k) as f64).sqrt()
    } else {
        1.0
    };
    let fitted: Vec<f64> = groups
        .configs
        .iter()
        .map(|c| model.time(theta, *c).ln())
        .collect();
    let mut rng = XorShiftRng::seed_from_u64(opts.seed);
    let mut draws = Vec::with_capacity(opts.bootstrap);
    let residuals: Vec<f64> = groups
        .logs
        .iter()
        .zip(&fitted)
        .flat_map(|(runs, fit)| runs.iter().map(move |y| y - fit))
        .collect();
    let centre = residuals.iter().sum::<f64>() / residuals.len().max(1) as f64;
    let mut logs: Vec<Vec<f64>> = groups.logs.clone();
    for _ in 0..opts.bootstrap {
        for (g, runs) in logs.iter_mut().enumerate() {
            for slot in runs.iter_mut() {
                let pick = (rng.next_u64() % residuals.len() as u64) as usize;
                *slot = fitted[g] + scale * (residuals[pick] - centre);
            }
        }
        let m = means(&logs);
        let (th, _) = optimise(model, layout, &groups.configs, &m, &[*theta]);
        draws.push(th);
    }
    draws
}
