//! Least-squares fit on log time, global and deterministic: the linear
//! part exactly (variable projection, see `projection`), sf and γ by a grid
//! over their whole admissible range refined by Nelder–Mead; which
//! parameters the runs identify from the Jacobian at the optimum; model
//! choice by AICc; bootstrap intervals.

use crate::model::{ModelKind, Theta};
use crate::nelder_mead::minimize;
use crate::power::{fit_power, PowerFit};
use crate::projection::{solve, Data};
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

impl FitOptions {
    /// The default options, with `seed` when one is given.
    pub fn seeded(seed: Option<u64>) -> FitOptions {
        let default = FitOptions::default();
        FitOptions {
            seed: seed.unwrap_or(default.seed),
            ..default
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
    /// The runs do not identify it (the fit's Jacobian at the optimum is
    /// singular or ill-conditioned along it): held at its neutral value
    /// (sf 1, γ 0).
    NotIdentified,
}

/// Which bound of its admissible range a parameter sits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The lower bound (f 0, sf 1, γ 0, contention 0).
    Lower,
    /// The upper bound (f 1, sf [`SF_MAX`], γ 1).
    Upper,
}

/// The largest sf the fit considers (a P-core 16 times an E-core).
pub const SF_MAX: f64 = 16.0;

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
    /// A fitted parameter at a bound of its admissible range (the runs
    /// push it there: e.g. f = 1 for times falling faster than 1/P).
    pub bound: Option<Bound>,
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
    /// Condition number of the fit's Jacobian at the optimum (columns
    /// scaled to unit length; parameters at a bound left out); large means
    /// the runs barely tell some parameters apart.
    pub condition: f64,
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
    /// The minimised objective: residual sum of squares of log time.
    pub objective: f64,
    /// Run-to-run spread: pooled standard deviation of log time within
    /// configurations (≈ relative); `None` without repeated runs.
    pub spread: Option<f64>,
    /// Runs fitted.
    pub runs: usize,
    /// Distinct configurations fitted.
    pub configs: usize,
    /// The largest P, E and SMT counts any run used: a configuration beyond
    /// them in some dimension is predicted by extrapolation.
    pub span: Config,
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

/// Which parameters are free. T1 and f always are (through the linear
/// part); sf and γ are searched; contention is linear.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    sf: bool,
    smt: bool,
    contention: bool,
}

impl Layout {
    fn k(&self) -> usize {
        2 + usize::from(self.sf) + usize::from(self.smt) + usize::from(self.contention)
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

/// The nonlinear coordinates searched, scaled to [0, 1]: ln sf / ln
/// [`SF_MAX`] and γ.
fn to_theta_nl(layout: Layout, u: &[f64]) -> (f64, f64) {
    let mut it = u.iter().map(|x| x.clamp(0.0, 1.0));
    let sf = if layout.sf {
        SF_MAX.powf(it.next().unwrap_or(0.0))
    } else {
        1.0
    };
    let gamma = if layout.smt {
        it.next().unwrap_or(0.0)
    } else {
        0.0
    };
    (sf, gamma)
}

fn to_coords(layout: Layout, th: &Theta) -> Vec<f64> {
    let mut u = Vec::new();
    if layout.sf {
        u.push((th.sf.max(1.0).ln() / SF_MAX.ln()).clamp(0.0, 1.0));
    }
    if layout.smt {
        u.push(th.smt_gain.clamp(0.0, 1.0));
    }
    u
}

/// The fit at fixed (sf, γ): the exact linear part, as parameters, and
/// the between-configuration loss.
fn at(model: ModelKind, layout: Layout, sf: f64, gamma: f64, data: &Data) -> (Theta, f64) {
    let l = solve(model, sf, gamma, layout.contention, data);
    let t1 = l.a + l.b;
    if !(t1 > 0.0 && l.ss.is_finite()) {
        let th = Theta {
            t1: 1.0,
            f: 0.0,
            sf,
            smt_gain: gamma,
            contention: 0.0,
        };
        return (th, f64::INFINITY);
    }
    let th = Theta {
        t1,
        f: l.b / t1,
        sf,
        smt_gain: gamma,
        contention: l.d / t1,
    };
    (th, l.ss)
}

/// Refines from `u0` by Nelder–Mead in the scaled box (a point outside is
/// evaluated at its projection, plus the squared distance, so the simplex
/// comes back).
fn refine(
    model: ModelKind,
    layout: Layout,
    data: &Data,
    u0: &[f64],
    max_evals: usize,
) -> (Theta, f64) {
    if u0.is_empty() {
        return at(model, layout, 1.0, 0.0, data);
    }
    let mut objective = |u: &[f64]| {
        let (sf, gamma) = to_theta_nl(layout, u);
        let out: f64 = u.iter().map(|x| (x - x.clamp(0.0, 1.0)).powi(2)).sum();
        at(model, layout, sf, gamma, data).1 + out
    };
    let (u, _) = minimize(&mut objective, u0, 0.02, 1e-14, max_evals);
    let (sf, gamma) = to_theta_nl(layout, &u);
    let refined = at(model, layout, sf, gamma, data);
    let (sf0, g0) = to_theta_nl(layout, u0);
    let start = at(model, layout, sf0, g0, data);
    if start.1 < refined.1 {
        start
    } else {
        refined
    }
}

/// Grid points of a scaled coordinate: 0 to 1 in `steps` steps.
fn grid(free: bool, steps: usize) -> Vec<f64> {
    if free {
        (0..=steps).map(|i| i as f64 / steps as f64).collect()
    } else {
        vec![]
    }
}

/// The global minimum over sf in [1, SF_MAX] and γ in [0, 1]: every point
/// of a grid over the whole box (sf geometric, 48 steps, ≈6% apart; γ
/// 0.05 apart), the best four refined; deterministic.
fn global(model: ModelKind, layout: Layout, data: &Data) -> (Theta, f64) {
    let sfs = grid(layout.sf, 48);
    let gammas = grid(layout.smt, 20);
    let mut points: Vec<Vec<f64>> = Vec::new();
    match (sfs.is_empty(), gammas.is_empty()) {
        (true, true) => points.push(vec![]),
        (false, true) => points.extend(sfs.iter().map(|s| vec![*s])),
        (true, false) => points.extend(gammas.iter().map(|g| vec![*g])),
        (false, false) => {
            for s in &sfs {
                for g in &gammas {
                    points.push(vec![*s, *g]);
                }
            }
        }
    }
    let mut scored: Vec<(f64, Vec<f64>)> = points
        .into_iter()
        .map(|u| {
            let (sf, gamma) = to_theta_nl(layout, &u);
            (at(model, layout, sf, gamma, data).1, u)
        })
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut best: Option<(Theta, f64)> = None;
    for (_, u) in scored.iter().take(4) {
        let r = refine(model, layout, data, u, 600);
        if best.as_ref().is_none_or(|b| r.1 < b.1) {
            best = Some(r);
        }
    }
    best.unwrap_or_else(|| at(model, layout, 1.0, 0.0, data))
}

fn means(logs: &[Vec<f64>]) -> (Vec<f64>, Vec<f64>) {
    logs.iter()
        .map(|v| (v.len() as f64, v.iter().sum::<f64>() / v.len() as f64))
        .unzip()
}

fn within_ss(logs: &[Vec<f64>]) -> f64 {
    logs.iter()
        .map(|v| {
            let m = v.iter().sum::<f64>() / v.len() as f64;
            v.iter().map(|x| (x - m) * (x - m)).sum::<f64>()
        })
        .sum()
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

/// Which parameter a [`Jacobian`] column is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    T1,
    F,
    Sf,
    Smt,
    Contention,
}

/// Largest condition number of the scaled Jacobian at which every
/// parameter counts as identified: beyond it a direction of the
/// parameters moves the fitted times 10⁴ times less than the best-
/// determined one, i.e. the runs leave it to the noise.
const COND_MAX: f64 = 1e4;

/// The Jacobian of the fitted log times (rows weighted by √runs) in the
/// free parameters not at a bound, by central differences; its condition
/// number and the parameter most aligned with its weakest direction.
fn jacobian(model: ModelKind, layout: Layout, th: &Theta, data: &Data) -> (f64, Option<Which>) {
    let mut cols: Vec<Which> = vec![Which::T1];
    if th.f > 1e-9 && th.f < 1.0 - 1e-9 {
        cols.push(Which::F);
    }
    if layout.sf && th.sf > 1.0 + 1e-9 && th.sf < SF_MAX * (1.0 - 1e-9) {
        cols.push(Which::Sf);
    }
    if layout.smt && th.smt_gain > 1e-9 && th.smt_gain < 1.0 - 1e-9 {
        cols.push(Which::Smt);
    }
    if layout.contention && th.contention > 1e-12 {
        cols.push(Which::Contention);
    }
    let shift = |w: Which, h: f64| {
        let mut t = *th;
        match w {
            Which::T1 => t.t1 *= h.exp(),
            Which::F => t.f += h,
            Which::Sf => t.sf *= h.exp(),
            Which::Smt => t.smt_gain += h,
            Which::Contention => t.contention += h,
        }
        t
    };
    let k = cols.len();
    let mut j: Vec<Vec<f64>> = vec![Vec::with_capacity(data.configs.len()); k];
    for (col, &w) in cols.iter().enumerate() {
        let h = match w {
            Which::Contention => 1e-6 * th.contention.max(1e-6),
            _ => 1e-6,
        };
        for (c, n) in data.configs.iter().zip(data.n) {
            let up = model.time(&shift(w, h), *c).ln();
            let down = model.time(&shift(w, -h), *c).ln();
            j[col].push(n.sqrt() * (up - down) / (2.0 * h));
        }
    }
    // A column that moves nothing: that parameter is not identified.
    for (col, &w) in cols.iter().enumerate() {
        let norm = j[col].iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm.is_nan() || norm <= 1e-10 {
            return (f64::INFINITY, Some(w));
        }
        for x in &mut j[col] {
            *x /= norm;
        }
    }
    let mut g = vec![vec![0.0; k]; k];
    for a in 0..k {
        for b in 0..k {
            g[a][b] = j[a].iter().zip(&j[b]).map(|(x, y)| x * y).sum();
        }
    }
    let (vals, vecs) = jacobi_eigen(g);
    let (imin, lmin) = vals
        .iter()
        .copied()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((0, 0.0));
    let lmax = vals.iter().copied().fold(0.0, f64::max);
    let cond = if lmin > 0.0 {
        (lmax / lmin).sqrt()
    } else {
        f64::INFINITY
    };
    // The weakest direction's largest component among the parameters that
    // can be held (sf, γ, contention).
    let culprit = cols
        .iter()
        .enumerate()
        .filter(|(_, w)| matches!(w, Which::Sf | Which::Smt | Which::Contention))
        .max_by(|a, b| vecs[a.0][imin].abs().total_cmp(&vecs[b.0][imin].abs()))
        .map(|(_, w)| *w);
    (cond, culprit)
}

/// Eigenvalues and eigenvectors (columns) of a small symmetric matrix by
/// cyclic Jacobi rotations (Golub & Van Loan, "Matrix Computations", 4th
/// ed., §8.5). Indexed loops: the rotations read two rows or two columns
/// at once, as the book writes them.
#[allow(clippy::needless_range_loop)]
fn jacobi_eigen(mut a: Vec<Vec<f64>>) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = a.len();
    let mut v = vec![vec![0.0; n]; n];
    for (i, row) in v.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for _sweep in 0..60 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        if off < 1e-30 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                if a[p][q].abs() < 1e-300 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let t = if theta == 0.0 { 1.0 } else { t };
                let c = 1.0 / (t * t + 1.0).sqrt();
                let s = t * c;
                for k in 0..n {
                    let (akp, akq) = (a[k][p], a[k][q]);
                    a[k][p] = c * akp - s * akq;
                    a[k][q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p][k], a[q][k]);
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for row in v.iter_mut() {
                    let (vkp, vkq) = (row[p], row[q]);
                    row[p] = c * vkp - s * vkq;
                    row[q] = s * vkp + c * vkq;
                }
            }
        }
    }
    ((0..n).map(|i| a[i][i]).collect(), v)
}

/// One candidate fitted: the global optimum of `model` with the free
/// parameters of `layout`, less any the runs do not identify (held and
/// refitted, at most twice). `None` when the contention term itself is
/// not identified (the candidate is then the one without it).
fn candidate(
    model: ModelKind,
    mut layout: Layout,
    data: &Data,
    within: f64,
    n: usize,
) -> Option<(Candidate, Layout)> {
    for _ in 0..3 {
        let (theta, between) = global(model, layout, data);
        let (cond, culprit) = jacobian(model, layout, &theta, data);
        if cond > COND_MAX {
            match culprit {
                Some(Which::Contention) => return None,
                Some(Which::Sf) => {
                    layout.sf = false;
                    continue;
                }
                Some(Which::Smt) => {
                    layout.smt = false;
                    continue;
                }
                _ => {}
            }
        }
        let rss = between + within;
        return Some((
            Candidate {
                model,
                contention: layout.contention,
                k: layout.k(),
                rss,
                aicc: score(rss, n, layout.k()),
                theta,
                condition: cond,
            },
            layout,
        ));
    }
    None
}

/// Fit both models (dynamic and static split), each without and — when the
/// runs have more configurations than the base parameters — with the
/// contention term, by least squares on log time, each to its global
/// optimum; choose the lowest AICc (ties: dynamic, then without
/// contention); bootstrap the chosen one.
///
/// sf is fitted only when the runs use both kinds (else
/// [`ParamStatus::OneKind`], held at 1), γ only when some run uses SMT
/// siblings ([`ParamStatus::NoSmtRuns`], held at 0); either is held
/// ([`ParamStatus::NotIdentified`]) when the Jacobian at the optimum says
/// the runs do not identify it.
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

/// The objective [`fit`] minimises — the residual sum of squares of log
/// time — at given parameters: to compare a fit with the parameters that
/// generated the runs.
pub fn objective(runs: &[Observation], model: ModelKind, theta: &Theta) -> Result<f64, FitError> {
    let groups = group(runs)?;
    let mut s = 0.0;
    for (c, logs) in groups.configs.iter().zip(&groups.logs) {
        let t = model.time(theta, *c).ln();
        s += logs.iter().map(|y| (y - t) * (y - t)).sum::<f64>();
    }
    Ok(s)
}

/// [`fit`], or [`fit_model`] when `forced` names the model and whether it
/// has the contention term.
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
    let (counts, ys) = means(&groups.logs);
    let data = Data {
        configs: &groups.configs,
        n: &counts,
        y: &ys,
    };
    let within = within_ss(&groups.logs);
    let tries = match forced {
        Some(t) => vec![t],
        None => tries(&groups, base, n),
    };
    let fitted = candidates(&tries, base, &data, within, n, forced.is_some());
    let (chosen, layout) = fitted
        .iter()
        .copied()
        .reduce(|a, b| if b.0.aicc < a.0.aicc - 1e-9 { b } else { a })
        .ok_or(FitError::NoRuns { needed: base.k() })?;
    let candidates: Vec<Candidate> = fitted.iter().map(|c| c.0).collect();
    let draws = bootstrap(chosen.model, layout, &groups, &chosen.theta, n, opts);
    let tail = expanded_tail(n, layout.k());
    let estimates = Estimates {
        theta: chosen.theta,
        draws: &draws,
        tail,
    };
    let params = estimates.params(layout, base);
    let goodness = Goodness::of(&groups, chosen.rss, within, layout.k());
    Ok(Fit {
        model: chosen.model,
        contention: chosen.contention,
        params,
        theta: chosen.theta,
        rse: goodness.rse,
        r2: goodness.r2,
        objective: chosen.rss,
        spread: goodness.spread,
        runs: n,
        configs: groups.configs.len(),
        span: Config::new(
            groups.configs.iter().map(|c| c.p).max().unwrap_or(0),
            groups.configs.iter().map(|c| c.e).max().unwrap_or(0),
            groups.configs.iter().map(|c| c.smt).max().unwrap_or(0),
        ),
        candidates,
        draws,
        ci_tail: tail,
        power: fit_power(runs, opts.bootstrap, opts.seed, tail),
    })
}

/// The (model, contention term) pairs [`fit`] tries: both models without
/// the contention term, and with it when the runs have more
/// configurations than the base parameters.
fn tries(groups: &Groups, base: Layout, n: usize) -> Vec<(ModelKind, bool)> {
    let mut tries: Vec<(ModelKind, bool)> = Vec::new();
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
    tries
}

/// Each of `tries` fitted ([`candidate`]) from the `base` layout; when
/// `forced`, a contention term the runs do not identify is fitted without.
fn candidates(
    tries: &[(ModelKind, bool)],
    base: Layout,
    data: &Data,
    within: f64,
    n: usize,
    forced: bool,
) -> Vec<(Candidate, Layout)> {
    let mut fitted: Vec<(Candidate, Layout)> = Vec::new();
    for &(model, contention) in tries {
        let layout = Layout { contention, ..base };
        match candidate(model, layout, data, within, n) {
            Some(c) => fitted.push(c),
            None if forced => {
                // The forced contention term is not identified: fit without.
                let layout = Layout {
                    contention: false,
                    ..base
                };
                if let Some(c) = candidate(model, layout, data, within, n) {
                    fitted.push(c);
                }
            }
            None => {}
        }
    }
    fitted
}

/// The chosen fit's parameters with their bootstrap draws.
struct Estimates<'a> {
    theta: Theta,
    draws: &'a [Theta],
    /// Each tail's probability of the intervals.
    tail: f64,
}

impl Estimates<'_> {
    /// Each parameter with its interval, status and bound, `layout`
    /// saying which were fitted and `base` which could have been.
    fn params(&self, layout: Layout, base: Layout) -> Params {
        Params {
            t1: self.param(|t| t.t1, ParamStatus::Fitted, (0.0, f64::INFINITY)),
            f: self.param(|t| t.f, ParamStatus::Fitted, (0.0, 1.0)),
            sf: self.param(
                |t| t.sf,
                status(layout.sf, base.sf, ParamStatus::OneKind),
                (1.0, SF_MAX),
            ),
            smt_gain: self.param(
                |t| t.smt_gain,
                status(layout.smt, base.smt, ParamStatus::NoSmtRuns),
                (0.0, 1.0),
            ),
            contention: self.param(
                |t| t.contention,
                status(layout.contention, false, ParamStatus::NotNeeded),
                (0.0, f64::INFINITY),
            ),
        }
    }

    /// The parameter `get` reads, allowed in `range`: a fitted one gets its
    /// interval and notes a bound it sits at.
    fn param(&self, get: fn(&Theta) -> f64, status: ParamStatus, range: (f64, f64)) -> Param {
        let value = get(&self.theta);
        let fitted = status == ParamStatus::Fitted;
        let bound = if !fitted {
            None
        } else if value <= range.0 + 1e-9 * range.0.abs().max(1.0) {
            Some(Bound::Lower)
        } else if value >= range.1 - 1e-9 * range.1.abs().max(1.0) {
            Some(Bound::Upper)
        } else {
            None
        };
        Param {
            value,
            ci: if fitted {
                self.ci(get, value)
            } else {
                [value, value]
            },
            status,
            bound,
        }
    }

    /// The percentile interval of the parameter `get` reads (no draws:
    /// the value itself).
    fn ci(&self, get: fn(&Theta) -> f64, value: f64) -> [f64; 2] {
        if self.draws.is_empty() {
            return [value, value];
        }
        let mut v: Vec<f64> = self.draws.iter().map(get).collect();
        v.sort_by(f64::total_cmp);
        [quantile(&v, self.tail), quantile(&v, 1.0 - self.tail)]
    }
}

/// A parameter's status: fitted when free, else not identified when the
/// runs could have fitted it (`structural`), else `why`.
fn status(free: bool, structural: bool, why: ParamStatus) -> ParamStatus {
    if free {
        ParamStatus::Fitted
    } else if structural {
        ParamStatus::NotIdentified
    } else {
        why
    }
}

/// How well a fit with residual sum of squares `rss` and `k` parameters
/// explains the runs.
struct Goodness {
    r2: Option<f64>,
    /// Residual standard error.
    rse: Option<f64>,
    /// The spread of repeated runs of a configuration.
    spread: Option<f64>,
}

impl Goodness {
    /// The goodness of a fit to `groups` (`within`: the sum of squares
    /// within configurations).
    fn of(groups: &Groups, rss: f64, within: f64, k: usize) -> Goodness {
        let n = groups.n();
        let all: Vec<f64> = groups.logs.iter().flatten().copied().collect();
        let mean = all.iter().sum::<f64>() / n as f64;
        let tss: f64 = all.iter().map(|x| (x - mean) * (x - mean)).sum();
        let repeats = n - groups.configs.len();
        Goodness {
            r2: (tss > 0.0).then(|| 1.0 - rss / tss),
            rse: (n > k).then(|| (rss / (n - k) as f64).sqrt()),
            spread: (repeats > 0).then(|| (within / repeats as f64).sqrt()),
        }
    }
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
/// residuals shrunk by the fit); then refit (the linear part exactly, sf and
/// γ refined from the point estimate).
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
    let u0 = to_coords(layout, theta);
    for _ in 0..opts.bootstrap {
        for (g, runs) in logs.iter_mut().enumerate() {
            for slot in runs.iter_mut() {
                let pick = (rng.next_u64() % residuals.len() as u64) as usize;
                *slot = fitted[g] + scale * (residuals[pick] - centre);
            }
        }
        let (counts, ys) = means(&logs);
        let data = Data {
            configs: &groups.configs,
            n: &counts,
            y: &ys,
        };
        let (th, _) = refine(model, layout, &data, &u0, 200);
        draws.push(th);
    }
    draws
}
