//! A small Nelder–Mead minimiser.
//!
//! Hand-written on purpose: the problem has 2–5 unconstrained parameters and
//! is minimised hundreds of times per fit (bootstrap), so a 60-line simplex
//! on plain arrays is both faster and lighter than `argmin`, whose
//! `argmin-math` backends, executor, observers and checkpointing this crate
//! would not use (and which would add a dozen crates to the pure layer).

/// Minimise `f` from `x0` (initial step `step` along each axis). Returns the
/// best point and its value. Stops after `max_evals` evaluations or when the
/// simplex values agree within `tol`.
pub(crate) fn minimize(
    f: &mut dyn FnMut(&[f64]) -> f64,
    x0: &[f64],
    step: f64,
    tol: f64,
    max_evals: usize,
) -> (Vec<f64>, f64) {
    let n = x0.len();
    let mut pts: Vec<Vec<f64>> = Vec::with_capacity(n + 1);
    pts.push(x0.to_vec());
    for i in 0..n {
        let mut x = x0.to_vec();
        x[i] += step;
        pts.push(x);
    }
    let mut vals: Vec<f64> = pts.iter().map(|x| f(x)).collect();
    let mut evals = n + 1;
    let (alpha, gamma, rho, sigma) = (1.0, 2.0, 0.5, 0.5);
    while evals < max_evals {
        // Order: best first.
        let mut idx: Vec<usize> = (0..=n).collect();
        idx.sort_by(|&a, &b| vals[a].total_cmp(&vals[b]));
        pts = idx.iter().map(|&i| pts[i].clone()).collect();
        vals = idx.iter().map(|&i| vals[i]).collect();
        if (vals[n] - vals[0]).abs() <= tol * (1.0 + vals[0].abs()) {
            break;
        }
        let centroid: Vec<f64> = (0..n)
            .map(|j| pts[..n].iter().map(|p| p[j]).sum::<f64>() / n as f64)
            .collect();
        let along = |t: f64| -> Vec<f64> {
            (0..n)
                .map(|j| centroid[j] + t * (pts[n][j] - centroid[j]))
                .collect()
        };
        let xr = along(-alpha);
        let fr = f(&xr);
        evals += 1;
        if fr < vals[0] {
            let xe = along(-gamma);
            let fe = f(&xe);
            evals += 1;
            if fe < fr {
                pts[n] = xe;
                vals[n] = fe;
            } else {
                pts[n] = xr;
                vals[n] = fr;
            }
        } else if fr < vals[n - 1] {
            pts[n] = xr;
            vals[n] = fr;
        } else {
            let (xc, fc) = if fr < vals[n] {
                let xc = along(-rho);
                let fc = f(&xc);
                (xc, fc)
            } else {
                let xc = along(rho);
                let fc = f(&xc);
                (xc, fc)
            };
            evals += 1;
            if fc < vals[n].min(fr) {
                pts[n] = xc;
                vals[n] = fc;
            } else {
                let best = pts[0].clone();
                for (p, v) in pts.iter_mut().zip(vals.iter_mut()).skip(1) {
                    for (x, b) in p.iter_mut().zip(&best) {
                        *x = b + sigma * (*x - b);
                    }
                    *v = f(p);
                }
                evals += n;
            }
        }
    }
    let best = (0..=n)
        .min_by(|&a, &b| vals[a].total_cmp(&vals[b]))
        .unwrap_or(0);
    (pts[best].clone(), vals[best])
}

#[cfg(test)]
mod tests {
    #[test]
    fn finds_the_minimum_of_a_bowl() {
        let mut f = |x: &[f64]| (x[0] - 3.0).powi(2) + 10.0 * (x[1] + 1.0).powi(2);
        let (x, v) = super::minimize(&mut f, &[0.0, 0.0], 1.0, 1e-14, 10_000);
        assert!(
            (x[0] - 3.0).abs() < 1e-4 && (x[1] + 1.0).abs() < 1e-4,
            "{x:?}"
        );
        assert!(v < 1e-8);
    }
}
