//! Dense LU decomposition with partial pivoting, right-looking and
//! unblocked, like OmpSCR's LU in the "to pin or not to pin" seed: each
//! column's rank-1 update streams the whole trailing matrix through the
//! caches, so with the matrix well beyond L2 the kernel is memory-bound —
//! the opposite end from `pi` and `mandelbrot`.
//!
//! Parallelism: for column k, the trailing rows k+1..n are split into equal
//! contiguous blocks, one per worker, and a barrier separates columns. That
//! barrier per column makes LU sensitive to the slowest core *and* to how
//! far apart the workers sit (the barrier's cache line travels).
//!
//! Pivoting without extra barriers: rows are never moved; a permutation
//! vector maps logical to physical rows. While updating its rows for column
//! k, each worker also finds its best pivot candidate for column k + 1; after
//! the barrier every worker reduces the same candidates to the same pivot
//! and applies the same swap to its own copy of the permutation. Candidates
//! are double-buffered by column parity, so a fast worker writing column
//! k + 2's candidate cannot clobber one a slow worker has yet to read.
//!
//! Each matrix element sees the same operations in the same order whatever
//! the partition, so the checksum (log |det A| = Σ log |uₖₖ|) is
//! bit-identical for every thread count and placement.

use crate::barrier::SpinBarrier;
use crate::harness::run_team;
use crate::sched::static_range;
use crate::{Detail, Outcome, WorkloadInfo};
use pinsight_sys::progress::Progress;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) const INFO: WorkloadInfo = WorkloadInfo {
    name: "lu",
    summary: "dense LU factorisation with partial pivoting of a size×size matrix; memory-bound, a barrier per column",
    size_meaning: "matrix order n (n×n doubles)",
    default_size: 1536,
    max_size: 16_384,
    schedules: &[],
    default_schedule: None,
};

pub(crate) fn run(
    threads: usize,
    n: u64,
    progress: &mut dyn Progress,
) -> Result<Outcome, crate::WorkloadError> {
    let n = n as usize;
    let matrix = random_matrix(n, 0x5eed_u64);
    let (factored, team) = factor(matrix, n, threads, progress)?;
    let lu = factored.into_inner();
    let perm = &team.results[0];
    let log_det: f64 = (0..n).map(|k| lu[perm[k] * n + k].abs().ln()).sum();
    if !log_det.is_finite() {
        return Err(crate::WorkloadError::Singular);
    }
    let secs = team.elapsed.as_secs_f64();
    let flops = flop_count(n);
    Ok(Outcome {
        workload: INFO.name,
        threads,
        size: n as u64,
        schedule: None,
        figure_of_merit: flops / secs / 1e9,
        unit: "GFLOP/s",
        higher_is_better: true,
        checksum: log_det,
        checksum_meaning: "log|det A| = Σ log|U_kk|",
        elapsed: team.elapsed,
        work_unit: "row updates",
        per_thread: team.stats,
        details: vec![
            Detail {
                name: "matrix size",
                value: (n * n * 8) as f64 / (1 << 20) as f64,
                unit: "MiB",
            },
            Detail {
                name: "flops",
                value: flops,
                unit: "",
            },
        ],
    })
}

/// Exact flop count of the unblocked factorisation: per column k, n−k−1
/// divisions and (n−k−1)² multiply-subtracts.
pub(crate) fn flop_count(n: usize) -> f64 {
    (0..n)
        .map(|k| (n - k - 1) as f64)
        .map(|m| m + 2.0 * m * m)
        .sum()
}

/// A reproducible matrix with entries uniform in [−1, 1) (splitmix64).
pub(crate) fn random_matrix(n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed;
    (0..n * n)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

/// The matrix shared by all workers. Row-major, n×n.
pub(crate) struct Shared {
    cells: UnsafeCell<Vec<f64>>,
    n: usize,
}

// SAFETY: workers write disjoint rows within a column step (a partition of
// the logical rows k+1..n through a permutation), only read the pivot row,
// which nobody writes during that step, and steps are separated by a
// barrier, which orders all writes of step k before all reads of step k+1.
unsafe impl Sync for Shared {}

impl Shared {
    pub(crate) fn into_inner(self) -> Vec<f64> {
        self.cells.into_inner()
    }

    fn ptr(&self) -> *mut f64 {
        // SAFETY: the Vec itself is never resized while shared.
        unsafe { (*self.cells.get()).as_mut_ptr() }
    }

    /// Row `r` for reading.
    ///
    /// # Safety
    /// No worker may write row `r` during the current step.
    unsafe fn row(&self, r: usize) -> &[f64] {
        std::slice::from_raw_parts(self.ptr().add(r * self.n), self.n)
    }

    /// Row `r` for writing.
    ///
    /// # Safety
    /// The caller is the only worker touching row `r` during the current step.
    #[allow(clippy::mut_from_ref)]
    unsafe fn row_mut(&self, r: usize) -> &mut [f64] {
        std::slice::from_raw_parts_mut(self.ptr().add(r * self.n), self.n)
    }
}

/// One worker's best pivot candidate for the next column, on its own cache line.
#[repr(align(128))]
struct Candidate {
    magnitude: AtomicU64,
    position: AtomicU64,
}

impl Candidate {
    fn new() -> Candidate {
        Candidate {
            magnitude: AtomicU64::new(0),
            position: AtomicU64::new(u64::MAX),
        }
    }
}

/// Factorises `matrix` in place (L below the diagonal with unit diagonal
/// implied, U on and above, rows in permuted order). Each worker's result is
/// its copy of the permutation: logical row k is physical row `perm[k]`.
pub(crate) fn factor(
    matrix: Vec<f64>,
    n: usize,
    threads: usize,
    progress: &mut dyn Progress,
) -> Result<(Shared, crate::harness::TeamRun<Vec<usize>>), crate::WorkloadError> {
    assert_eq!(matrix.len(), n * n);
    let a = Shared {
        cells: UnsafeCell::new(matrix),
        n,
    };
    let barrier = SpinBarrier::new(threads);
    let candidates: [Vec<Candidate>; 2] = [
        (0..threads).map(|_| Candidate::new()).collect(),
        (0..threads).map(|_| Candidate::new()).collect(),
    ];
    let team = run_team(threads, n as u64, progress, &|w| {
        let mut perm: Vec<usize> = (0..n).collect();
        // Column 0's pivot: every worker scans the (read-only) first column.
        // SAFETY (all row accesses below): see `impl Sync for Shared`.
        let mut pivot = (0..n)
            .map(|i| (unsafe { a.row(i) }[0].abs(), i))
            .fold((-1.0, usize::MAX), best_of);
        // Column 0 is overwritten with multipliers in step 0: nobody may
        // start writing it before everybody has finished scanning it.
        barrier.wait();
        for k in 0..n {
            if k > 0 {
                barrier.wait();
                pivot = candidates[k % 2]
                    .iter()
                    .map(|c| {
                        let m = f64::from_bits(c.magnitude.load(Ordering::Relaxed));
                        (m, c.position.load(Ordering::Relaxed) as usize)
                    })
                    .fold((-1.0, usize::MAX), best_of);
            }
            perm.swap(k, pivot.1);
            let pivot_row = unsafe { a.row(perm[k]) };
            let p = pivot_row[k];
            let (lo, hi) = static_range(n - k - 1, w.threads, w.index);
            let mut best = (-1.0, usize::MAX);
            for (i, &physical) in perm.iter().enumerate().take(k + 1 + hi).skip(k + 1 + lo) {
                let row = unsafe { a.row_mut(physical) };
                // p == 0 only for a singular matrix: the ∞/NaN it spreads makes
                // the checksum non-finite, which `run` reports.
                let l = row[k] / p;
                row[k] = l;
                for (x, &u) in row[k + 1..].iter_mut().zip(&pivot_row[k + 1..]) {
                    *x -= l * u;
                }
                if k + 1 < n {
                    best = best_of(best, (row[k + 1].abs(), i));
                }
            }
            w.work_units += (hi - lo) as u64;
            let slot = &candidates[(k + 1) % 2][w.index];
            slot.magnitude.store(best.0.to_bits(), Ordering::Relaxed);
            slot.position.store(best.1 as u64, Ordering::Relaxed);
            if w.index == 0 {
                w.report_progress(1);
            }
            if k % 64 == 0 {
                w.sample_cpu();
            }
        }
        perm
    })?;
    Ok((a, team))
}

/// The better pivot candidate: larger magnitude, then smaller logical
/// position (so every worker picks the same one). Empty candidates are (−1, MAX).
fn best_of(a: (f64, usize), b: (f64, usize)) -> (f64, usize) {
    if b.0 > a.0 || (b.0 == a.0 && b.1 < a.1) {
        b
    } else {
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// max |(PA − LU)ᵢⱼ| / max |Aᵢⱼ|.
    fn relative_residual(a: &[f64], lu: &[f64], perm: &[usize], n: usize) -> f64 {
        let mut worst: f64 = 0.0;
        for i in 0..n {
            for j in 0..n {
                let mut s = 0.0;
                for k in 0..=i.min(j) {
                    let l = if k == i { 1.0 } else { lu[perm[i] * n + k] };
                    s += l * lu[perm[k] * n + j];
                }
                worst = worst.max((a[perm[i] * n + j] - s).abs());
            }
        }
        worst / a.iter().fold(0.0f64, |m, x| m.max(x.abs()))
    }

    #[test]
    fn factors_reproduce_the_matrix() {
        let n = 96;
        let a = random_matrix(n, 7);
        for threads in [1, 2, 3, 5] {
            let (lu, team) =
                factor(a.clone(), n, threads, &mut pinsight_sys::progress::Silent).unwrap();
            let lu = lu.into_inner();
            assert!(
                team.results.iter().all(|p| p == &team.results[0]),
                "workers disagree on the pivots"
            );
            let r = relative_residual(&a, &lu, &team.results[0], n);
            assert!(r < 1e-12, "residual {r}");
        }
    }

    #[test]
    fn solves_a_known_system() {
        // A x = b with x = (1, 2, ..., n): forward and back substitution on the factors.
        let n = 64;
        let a = random_matrix(n, 11);
        let x: Vec<f64> = (1..=n).map(|v| v as f64).collect();
        let b: Vec<f64> = (0..n)
            .map(|i| (0..n).map(|j| a[i * n + j] * x[j]).sum())
            .collect();
        let (lu, team) = factor(a, n, 2, &mut pinsight_sys::progress::Silent).unwrap();
        let (lu, perm) = (lu.into_inner(), &team.results[0]);
        let mut y: Vec<f64> = perm.iter().map(|&p| b[p]).collect();
        for i in 0..n {
            for k in 0..i {
                y[i] -= lu[perm[i] * n + k] * y[k];
            }
        }
        for i in (0..n).rev() {
            for k in i + 1..n {
                y[i] -= lu[perm[i] * n + k] * y[k];
            }
            y[i] /= lu[perm[i] * n + i];
        }
        for (got, want) in y.iter().zip(&x) {
            assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
        }
    }

    #[test]
    fn log_det_of_a_known_matrix() {
        // A = L0·U0 with unit-lower L0 and diag(U0) = 1..n: |det A| = n!.
        let n = 12;
        let mut a = vec![0.0; n * n];
        for i in 0..n {
            for j in 0..n {
                for k in 0..=i.min(j) {
                    let l = if k == i {
                        1.0
                    } else {
                        0.25 * ((i + 2 * k) % 5) as f64 - 0.5
                    };
                    let u = if k == j {
                        (k + 1) as f64
                    } else {
                        0.1 * ((3 * k + j) % 7) as f64
                    };
                    a[i * n + j] += l * u;
                }
            }
        }
        let (lu, team) = factor(a, n, 2, &mut pinsight_sys::progress::Silent).unwrap();
        let (lu, perm) = (lu.into_inner(), &team.results[0]);
        let log_det: f64 = (0..n).map(|k| lu[perm[k] * n + k].abs().ln()).sum();
        let want: f64 = (1..=n).map(|v| (v as f64).ln()).sum();
        assert!((log_det - want).abs() < 1e-10, "{log_det} vs {want}");
    }

    #[test]
    fn flops() {
        assert_eq!(flop_count(1), 0.0);
        assert_eq!(flop_count(2), 3.0); // one division, one multiply-subtract
    }
}
