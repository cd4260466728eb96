//! The linear part of the fit, solved exactly: for fixed sf and γ the
//! model's time is `A·serial + B·parallel + D·added` with `A = T1·(1 − f)`,
//! `B = T1·f`, `D = T1·c`, all ≥ 0 (see [`ModelKind::basis`]). Variable
//! projection (Golub & Pereyra, SIAM J. Numer. Anal. 10(2), 1973) solves
//! (A, B, D) for each (sf, γ) and leaves only sf and γ to search.
//!
//! The loss is least squares on log time. For fixed (sf, γ) it is minimised
//! over (A, B, D) ≥ 0 by Gauss–Newton on the log (each step a weighted
//! linear least-squares problem, linearising `ln T` at the current times:
//! `ln T ≈ ln T₀ + (T − T₀)/T₀`), with step halving so the loss never
//! rises. Each step's non-negative least squares is solved exactly by
//! trying every subset of the (at most three) columns: the optimum of a
//! convex NNLS problem is the unconstrained solution on its support
//! (Lawson & Hanson, "Solving Least Squares Problems", 1974, ch. 23), so
//! the best feasible subset solution is the optimum. The bounds
//! `0 ≤ f ≤ 1` and `c ≥ 0` are thereby exact, and a parameter at its bound
//! is exactly there (B = 0: f = 0; A = 0: f = 1; D = 0: c = 0).

use crate::model::ModelKind;
use crate::Config;

/// Configurations with their run counts and mean log times.
pub(crate) struct Data<'a> {
    pub configs: &'a [Config],
    /// Runs of each configuration.
    pub n: &'a [f64],
    /// Mean log time of each configuration.
    pub y: &'a [f64],
}

/// The linear coefficients solved for fixed (sf, γ), and the loss.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Linear {
    /// `T1·(1 − f)`.
    pub a: f64,
    /// `T1·f`.
    pub b: f64,
    /// `T1·c` (0 without the contention term).
    pub d: f64,
    /// Σ runs·(mean log time − log model): the loss less the within-
    /// configuration part.
    pub ss: f64,
}

fn rows(
    model: ModelKind,
    sf: f64,
    gamma: f64,
    contention: bool,
    configs: &[Config],
) -> Vec<[f64; 3]> {
    configs
        .iter()
        .map(|c| {
            let b = model.basis(sf, gamma, *c);
            [b.serial, b.parallel, if contention { b.added } else { 0.0 }]
        })
        .collect()
}

fn loss(x: &[[f64; 3]], beta: &[f64; 3], data: &Data) -> f64 {
    let mut s = 0.0;
    for ((row, n), y) in x.iter().zip(data.n).zip(data.y) {
        let t = row[0] * beta[0] + row[1] * beta[1] + row[2] * beta[2];
        if !(t.is_finite() && t > 0.0) {
            return f64::INFINITY;
        }
        let r = y - t.ln();
        s += n * r * r;
    }
    s
}

/// Solves `g·β = h` (k ≤ 3) by Gaussian elimination with partial
/// pivoting; `None` when singular. Indexed loops: elimination reads two
/// rows at once.
#[allow(clippy::needless_range_loop)]
fn solve_small(mut g: [[f64; 3]; 3], mut h: [f64; 3], k: usize) -> Option<[f64; 3]> {
    let scale = (0..k).map(|i| g[i][i].abs()).fold(0.0, f64::max);
    if scale <= 0.0 {
        return None;
    }
    for col in 0..k {
        let piv = (col..k).max_by(|&a, &b| g[a][col].abs().total_cmp(&g[b][col].abs()))?;
        if g[piv][col].abs() <= 1e-13 * scale {
            return None;
        }
        g.swap(col, piv);
        h.swap(col, piv);
        for r in col + 1..k {
            let m = g[r][col] / g[col][col];
            for c in col..k {
                g[r][c] -= m * g[col][c];
            }
            h[r] -= m * h[col];
        }
    }
    let mut x = [0.0; 3];
    for r in (0..k).rev() {
        let mut s = h[r];
        for c in r + 1..k {
            s -= g[r][c] * x[c];
        }
        x[r] = s / g[r][r];
    }
    Some(x)
}

/// min Σ wᵢ (zᵢ − xᵢ·β)² over β ≥ 0 (columns `cols` only), by subsets.
fn nnls(x: &[[f64; 3]], z: &[f64], w: &[f64], cols: usize) -> Option<[f64; 3]> {
    let mut best: Option<([f64; 3], f64)> = None;
    for mask in 1u32..(1 << cols) {
        let idx: Vec<usize> = (0..cols).filter(|j| mask & (1 << j) != 0).collect();
        let k = idx.len();
        let mut g = [[0.0; 3]; 3];
        let mut h = [0.0; 3];
        for ((row, zi), wi) in x.iter().zip(z).zip(w) {
            for (a, &ja) in idx.iter().enumerate() {
                h[a] += wi * row[ja] * zi;
                for (b, &jb) in idx.iter().enumerate() {
                    g[a][b] += wi * row[ja] * row[jb];
                }
            }
        }
        let Some(sol) = solve_small(g, h, k) else {
            continue;
        };
        if sol[..k].iter().any(|v| !v.is_finite() || *v < 0.0) {
            continue;
        }
        let mut beta = [0.0; 3];
        for (a, &j) in idx.iter().enumerate() {
            beta[j] = sol[a];
        }
        let ss: f64 = x
            .iter()
            .zip(z)
            .zip(w)
            .map(|((row, zi), wi)| {
                let r = zi - (row[0] * beta[0] + row[1] * beta[1] + row[2] * beta[2]);
                wi * r * r
            })
            .sum();
        if best.as_ref().is_none_or(|(_, b)| ss < *b) {
            best = Some((beta, ss));
        }
    }
    best.map(|(b, _)| b)
}

/// The exact linear part for fixed `sf` and `gamma` (see the module
/// documentation). `ss` is infinite when no positive solution exists.
pub(crate) fn solve(
    model: ModelKind,
    sf: f64,
    gamma: f64,
    contention: bool,
    data: &Data,
) -> Linear {
    let x = rows(model, sf, gamma, contention, data.configs);
    let cols = if contention { 3 } else { 2 };
    let none = Linear {
        a: 0.0,
        b: 0.0,
        d: 0.0,
        ss: f64::INFINITY,
    };
    // Start: linearise at the measured times (relative least squares).
    let mut t0: Vec<f64> = data.y.iter().map(|y| y.exp()).collect();
    let mut current: Option<([f64; 3], f64)> = None;
    for _ in 0..30 {
        let w: Vec<f64> = t0.iter().zip(data.n).map(|(t, n)| n / (t * t)).collect();
        let z: Vec<f64> = t0
            .iter()
            .zip(data.y)
            .map(|(t, y)| t * (y - t.ln() + 1.0))
            .collect();
        let Some(step) = nnls(&x, &z, &w, cols) else {
            break;
        };
        let mut accepted = None;
        let mut cand = step;
        for _ in 0..12 {
            let l = loss(&x, &cand, data);
            match &current {
                Some((_, old)) if l >= *old => {}
                _ if l.is_finite() => {
                    accepted = Some((cand, l));
                    break;
                }
                _ => {}
            }
            let Some((old, _)) = &current else { break };
            // Halve the step: a convex combination stays ≥ 0.
            for j in 0..3 {
                cand[j] = 0.5 * (old[j] + cand[j]);
            }
        }
        let Some((beta, l)) = accepted else { break };
        let gain = current.as_ref().map_or(f64::INFINITY, |(_, old)| old - l);
        current = Some((beta, l));
        t0 = x
            .iter()
            .map(|r| r[0] * beta[0] + r[1] * beta[1] + r[2] * beta[2])
            .collect();
        if gain <= 1e-14 * (1.0 + l) {
            break;
        }
    }
    match current {
        Some((beta, ss)) => Linear {
            a: beta[0],
            b: beta[1],
            d: beta[2],
            ss,
        },
        None => none,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Theta;

    /// [`solve`] for the dynamic model without SMT gain on one run of each
    /// of `configs`, whose log times are `y`.
    fn solve_once_each(configs: &[Config], y: &[f64], sf: f64, contention: bool) -> Linear {
        let n = vec![1.0; configs.len()];
        let d = Data { configs, n: &n, y };
        solve(ModelKind::Dynamic, sf, 0.0, contention, &d)
    }

    #[test]
    fn exact_data_give_the_exact_linear_part() {
        let th = Theta {
            contention: 0.01,
            ..Theta::amdahl(7.0, 0.9, 2.0)
        };
        let configs = [
            Config::new(1, 0, 0),
            Config::new(4, 0, 0),
            Config::new(0, 8, 0),
            Config::new(4, 8, 0),
        ];
        let y: Vec<f64> = configs
            .iter()
            .map(|c| ModelKind::Dynamic.time(&th, *c).ln())
            .collect();
        let l = solve_once_each(&configs, &y, 2.0, true);
        assert!(l.ss < 1e-20, "{l:?}");
        assert!((l.a - 0.7).abs() < 1e-9 && (l.b - 6.3).abs() < 1e-9);
        assert!((l.d - 0.07).abs() < 1e-9);
    }

    #[test]
    fn a_parallel_fraction_beyond_one_stops_at_the_bound() {
        // Times falling faster than 1/P: f would exceed 1; it stops at 1.
        let configs = [
            Config::new(1, 0, 0),
            Config::new(2, 0, 0),
            Config::new(4, 0, 0),
        ];
        let y: Vec<f64> = [1.0f64, 0.45, 0.2].iter().map(|t| t.ln()).collect();
        let l = solve_once_each(&configs, &y, 1.0, false);
        assert_eq!(l.a, 0.0, "{l:?}");
        assert!(l.b > 0.0 && l.ss.is_finite());
    }
}
