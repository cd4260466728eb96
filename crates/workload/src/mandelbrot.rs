//! The Mandelbrot set on a square grid over [−2, 0.5] × [−1.25, 1.25]: the
//! CPU-bound, almost linearly scalable kernel of the "to pin or not to pin"
//! seed (OmpSCR's Mandelbrot area).
//!
//! Rows are the unit of scheduling. Their cost varies a lot (rows through
//! the set's body iterate to the cap), so even on a symmetric machine the
//! static schedule is imbalanced; rows are handed out dynamically by default.
//! The checksum is the total iteration count: an integer, identical for
//! every schedule and thread count.

use crate::harness::run_team;
use crate::sched::{Dispenser, Schedule};
use crate::{Detail, Outcome, WorkloadInfo};
use pinsight_sys::progress::Progress;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) const INFO: WorkloadInfo = WorkloadInfo {
    name: "mandelbrot",
    summary:
        "Mandelbrot set, size×size pixels, rows scheduled dynamically; CPU-bound, irregular rows",
    size_meaning: "image width = height in pixels",
    default_size: 1000,
    max_size: 1 << 16,
    schedules: &Schedule::ALL,
    default_schedule: Some(Schedule::Dynamic),
};

/// Iteration cap per pixel unless `--max-iter` says otherwise.
pub(crate) const DEFAULT_MAX_ITER: u32 = 1000;

const RE_MIN: f64 = -2.0;
const IM_MIN: f64 = -1.25;
const SPAN: f64 = 2.5;

pub(crate) fn run(
    threads: usize,
    size: u64,
    max_iter: Option<u32>,
    schedule: Schedule,
    progress: &mut dyn Progress,
) -> Result<Outcome, crate::WorkloadError> {
    let max_iter = max_iter.unwrap_or(DEFAULT_MAX_ITER);
    let n = size as usize;
    let inside = AtomicU64::new(0);
    let iterations = AtomicU64::new(0);
    let dispenser = Dispenser::new(schedule, n, threads);
    let team = run_team(threads, size, progress, &|w| {
        let mut it = dispenser.worker(w.index);
        let (mut my_iter, mut my_inside) = (0u64, 0u64);
        for row in it.by_ref() {
            let (iters, ins) = row_iterations(row, n, max_iter);
            my_iter += iters;
            my_inside += ins;
            w.work_units += iters;
            w.report_progress(1);
            w.sample_cpu();
        }
        w.steals = it.steals;
        iterations.fetch_add(my_iter, Ordering::Relaxed);
        inside.fetch_add(my_inside, Ordering::Relaxed);
    })?;
    let total = iterations.load(Ordering::Relaxed);
    let inside = inside.load(Ordering::Relaxed);
    let secs = team.elapsed.as_secs_f64();
    Ok(Outcome {
        workload: INFO.name,
        threads,
        size,
        schedule: Some(schedule),
        figure_of_merit: total as f64 / secs / 1e6,
        unit: "Miter/s",
        higher_is_better: true,
        checksum: total as f64,
        checksum_meaning: "total iterations",
        elapsed: team.elapsed,
        work_unit: "iterations",
        per_thread: team.stats,
        details: vec![
            Detail {
                name: "set area estimate",
                value: inside as f64 / (n * n) as f64 * SPAN * SPAN,
                unit: "",
            },
            Detail {
                name: "max iterations",
                value: max_iter as f64,
                unit: "",
            },
        ],
    })
}

/// Iterations spent on row `row`, and how many of its pixels never escaped.
fn row_iterations(row: usize, n: usize, max_iter: u32) -> (u64, u64) {
    let step = SPAN / n as f64;
    let ci = IM_MIN + (row as f64 + 0.5) * step;
    let (mut total, mut inside) = (0u64, 0u64);
    for col in 0..n {
        let cr = RE_MIN + (col as f64 + 0.5) * step;
        let (mut zr, mut zi) = (0.0f64, 0.0f64);
        let mut k = 0;
        while k < max_iter {
            let (zr2, zi2) = (zr * zr, zi * zi);
            if zr2 + zi2 > 4.0 {
                break;
            }
            zi = 2.0 * zr * zi + ci;
            zr = zr2 - zi2 + cr;
            k += 1;
        }
        total += k as u64;
        inside += (k == max_iter) as u64;
    }
    (total, inside)
}
