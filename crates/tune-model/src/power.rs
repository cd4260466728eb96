//! Average power as a linear function of the cores used, for the energy
//! and EDP goals: `W = a + b_P·P + b_E·E + b_S·smt`, least squares with
//! non-negative coefficients, bootstrap intervals.
//!
//! Energy of a configuration is then `W × T` and its energy-delay product
//! `W × T²`, with `T` from the time model.

use crate::fit::quantile;
use crate::{Config, Observation};
use rand_core::{Rng, SeedableRng};
use rand_xorshift::XorShiftRng;
use serde::Serialize;

/// A value with its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// Point estimate.
    pub value: f64,
    /// 95% bootstrap interval `[lo, hi]` (`[value, value]` without draws).
    pub ci: [f64; 2],
}

/// The power model's coefficients (watts).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PowerParams {
    /// `a`: power with no core busy (package, uncore, idle cores).
    pub base_w: Estimate,
    /// `b_P`: watts per P-core used.
    pub per_p_w: Estimate,
    /// `b_E`: watts per E-core used.
    pub per_e_w: Estimate,
    /// `b_S`: watts per SMT sibling used.
    pub per_smt_w: Estimate,
}

/// A fitted power model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PowerFit {
    /// Coefficients with intervals.
    pub params: PowerParams,
    /// Runs that carried energy (and were fitted).
    pub runs: usize,
    /// R² of power; `None` when every run drew the same power.
    pub r2: Option<f64>,
    /// Point coefficients `[a, b_P, b_E, b_S]`.
    #[serde(skip)]
    pub coef: [f64; 4],
    /// Bootstrap draws of the coefficients (as many as the time fit's).
    #[serde(skip)]
    pub draws: Vec<[f64; 4]>,
}

impl PowerFit {
    /// Predicted average power (W) of `config` under coefficients `c`.
    pub fn watts_with(c: &[f64; 4], config: Config) -> f64 {
        c[0] + c[1] * f64::from(config.p)
            + c[2] * f64::from(config.e)
            + c[3] * f64::from(config.smt)
    }

    /// Predicted average power (W) of `config` under the point estimates.
    pub fn watts(&self, config: Config) -> f64 {
        Self::watts_with(&self.coef, config)
    }
}

fn row(c: Config) -> [f64; 4] {
    [1.0, f64::from(c.p), f64::from(c.e), f64::from(c.smt)]
}

/// Least squares restricted to the columns in `mask`; `None` when those
/// columns are linearly dependent on the data (e.g. no run used an E-core).
fn ols(rows: &[[f64; 4]], y: &[f64], mask: u8) -> Option<[f64; 4]> {
    let cols: Vec<usize> = (0..4).filter(|j| mask & (1 << j) != 0).collect();
    let k = cols.len();
    if k == 0 {
        return Some([0.0; 4]);
    }
    // Normal equations (k ≤ 4), Gaussian elimination with partial pivoting.
    let mut a = vec![vec![0.0; k + 1]; k];
    for (x, &yv) in rows.iter().zip(y) {
        for (i, &ci) in cols.iter().enumerate() {
            for (j, &cj) in cols.iter().enumerate() {
                a[i][j] += x[ci] * x[cj];
            }
            a[i][k] += x[ci] * yv;
        }
    }
    let scale = a
        .iter()
        .enumerate()
        .map(|(i, r)| r[i].abs())
        .fold(0.0, f64::max)
        .max(1e-300);
    for c in 0..k {
        let piv = (c..k).max_by(|&i, &j| a[i][c].abs().total_cmp(&a[j][c].abs()))?;
        if a[piv][c].abs() <= 1e-10 * scale {
            return None;
        }
        a.swap(c, piv);
        for r in 0..k {
            if r != c {
                let m = a[r][c] / a[c][c];
                let pivot_row = a[c].clone();
                for (v, p) in a[r].iter_mut().zip(&pivot_row) {
                    *v -= m * p;
                }
            }
        }
    }
    let mut out = [0.0; 4];
    for (i, &ci) in cols.iter().enumerate() {
        out[ci] = a[i][k] / a[i][i];
    }
    Some(out)
}

fn rss(rows: &[[f64; 4]], y: &[f64], c: &[f64; 4]) -> f64 {
    rows.iter()
        .zip(y)
        .map(|(x, yv)| {
            let d = yv - (0..4).map(|j| x[j] * c[j]).sum::<f64>();
            d * d
        })
        .sum()
}

/// Non-negative least squares with four coefficients, exactly: the NNLS
/// optimum is the unconstrained least squares on its own support, and every
/// feasible support's least squares is a feasible point, so the best
/// feasible one of the 16 supports is the optimum. Hand-written because 16
/// tiny solves are simpler and exact, where an iterative NNLS crate would
/// add a linear-algebra stack to this pure crate.
fn nnls(rows: &[[f64; 4]], y: &[f64]) -> [f64; 4] {
    let mut best: Option<([f64; 4], f64)> = None;
    for mask in 0u8..16 {
        let Some(c) = ols(rows, y, mask) else {
            continue;
        };
        if c.iter().any(|v| *v < -1e-12 || !v.is_finite()) {
            continue;
        }
        let c = c.map(|v| v.max(0.0));
        let r = rss(rows, y, &c);
        // Ties (columns the data cannot tell apart): fewer terms first.
        if best
            .as_ref()
            .is_none_or(|(_, b)| r < *b - 1e-12 * b.abs().max(1.0))
        {
            best = Some((c, r));
        }
    }
    best.map_or([0.0; 4], |(c, _)| c)
}

/// Fit the power model to the runs that carry `energy_j` (power = energy /
/// time). `None` when no run does. `draws` bootstrap draws (pooled
/// residuals, scaled as the time fit's) seeded from `seed`; intervals at
/// lower tail `tail`.
pub(crate) fn fit_power(
    runs: &[Observation],
    draws: usize,
    seed: u64,
    tail: f64,
) -> Option<PowerFit> {
    let (rows, y): (Vec<[f64; 4]>, Vec<f64>) = runs
        .iter()
        .filter_map(|o| {
            let j = o.energy_j?;
            (o.time_s > 0.0 && j.is_finite()).then(|| (row(o.config), j / o.time_s))
        })
        .unzip();
    if rows.is_empty() {
        return None;
    }
    let coef = nnls(&rows, &y);
    let n = rows.len();
    let fitted: Vec<f64> = rows
        .iter()
        .map(|x| (0..4).map(|j| x[j] * coef[j]).sum())
        .collect();
    let resid: Vec<f64> = y.iter().zip(&fitted).map(|(a, b)| a - b).collect();
    let k = coef.iter().filter(|c| **c > 0.0).count().max(1);
    let scale = if n > k {
        (n as f64 / (n - k) as f64).sqrt()
    } else {
        1.0
    };
    let centre = resid.iter().sum::<f64>() / n as f64;
    // A stream of its own, from the same seed: same seed, same intervals.
    let mut rng = XorShiftRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::with_capacity(draws);
    let mut yb = vec![0.0; n];
    for _ in 0..draws {
        for (slot, f) in yb.iter_mut().zip(&fitted) {
            let pick = (rng.next_u64() % n as u64) as usize;
            *slot = f + scale * (resid[pick] - centre);
        }
        out.push(nnls(&rows, &yb));
    }
    let est = |j: usize| {
        let value = coef[j];
        if out.is_empty() {
            return Estimate {
                value,
                ci: [value, value],
            };
        }
        let mut v: Vec<f64> = out.iter().map(|c| c[j]).collect();
        v.sort_by(f64::total_cmp);
        Estimate {
            value,
            ci: [quantile(&v, tail), quantile(&v, 1.0 - tail)],
        }
    };
    let mean = y.iter().sum::<f64>() / n as f64;
    let tss: f64 = y.iter().map(|v| (v - mean) * (v - mean)).sum();
    let r2 = (tss > 0.0).then(|| 1.0 - rss(&rows, &y, &coef) / tss);
    Some(PowerFit {
        params: PowerParams {
            base_w: est(0),
            per_p_w: est(1),
            per_e_w: est(2),
            per_smt_w: est(3),
        },
        runs: n,
        r2,
        coef,
        draws: out,
    })
}

/// An estimate from point value and unsorted draws at lower tail `tail`.
pub(crate) fn estimate(value: f64, mut draws: Vec<f64>, tail: f64) -> Estimate {
    draws.retain(|x| x.is_finite());
    if draws.is_empty() {
        return Estimate {
            value,
            ci: [value, value],
        };
    }
    draws.sort_by(f64::total_cmp);
    Estimate {
        value,
        ci: [quantile(&draws, tail), quantile(&draws, 1.0 - tail)],
    }
}
