//! π by the rectangle (midpoint) rule on ∫₀¹ 4/(1+x²) dx — the program the
//! work-stealing seed ran on an i5-1240P with OpenCilk (2·10⁹ steps there).
//!
//! Perfectly regular work, so any imbalance is the *machine's*: with the
//! static schedule a thread on an E-core finishes its equal share late and
//! the P-cores idle; `steal` and `dynamic` let fast cores do more.
//!
//! Determinism: the steps are cut into a fixed grid of chunks that depends
//! only on the step count; each chunk's partial sum lands in its own slot
//! and the slots are added in chunk order at the end. So the estimate is
//! bit-identical for every schedule, thread count and placement.

use crate::harness::run_team;
use crate::sched::{Dispenser, Schedule};
use crate::{Detail, Outcome, WorkloadInfo};
use pinsight_sys::progress::Progress;
use std::sync::atomic::{AtomicU64, Ordering};

pub(crate) const INFO: WorkloadInfo = WorkloadInfo {
    name: "pi",
    summary:
        "π by rectangle-rule integration of 4/(1+x²); shows static splits losing on hybrid CPUs",
    size_meaning: "integration steps",
    default_size: 1_000_000_000,
    max_size: 1 << 40,
    schedules: &Schedule::ALL,
    default_schedule: Some(Schedule::Steal),
};

/// Chunk length: ≈256 chunks per run, at most 2¹⁸ steps (≈0.2 ms of work),
/// so stealing has room to act and per-chunk overhead is negligible.
fn chunk_len(steps: u64) -> u64 {
    (steps / 256).clamp(1, 1 << 18)
}

pub(crate) fn run(
    threads: usize,
    steps: u64,
    schedule: Schedule,
    progress: &mut dyn Progress,
) -> Result<Outcome, crate::WorkloadError> {
    let chunk = chunk_len(steps);
    let chunks = steps.div_ceil(chunk) as usize;
    let h = 1.0 / steps as f64;
    let partial: Vec<AtomicU64> = (0..chunks).map(|_| AtomicU64::new(0)).collect();
    let dispenser = Dispenser::new(schedule, chunks, threads);
    let team = run_team(threads, steps, progress, &|w| {
        let mut it = dispenser.worker(w.index);
        for c in it.by_ref() {
            let lo = c as u64 * chunk;
            let hi = (lo + chunk).min(steps);
            partial[c].store(midpoint_sum(lo, hi, h).to_bits(), Ordering::Relaxed);
            w.work_units += hi - lo;
            w.report_progress(hi - lo);
            w.sample_cpu();
        }
        w.steals = it.steals;
    })?;
    let sum: f64 = partial
        .iter()
        .map(|p| f64::from_bits(p.load(Ordering::Relaxed)))
        .sum();
    let pi = sum * h;
    let secs = team.elapsed.as_secs_f64();
    Ok(Outcome {
        workload: INFO.name,
        threads,
        size: steps,
        schedule: Some(schedule),
        figure_of_merit: steps as f64 / secs / 1e6,
        unit: "Msteps/s",
        higher_is_better: true,
        checksum: pi,
        checksum_meaning: "estimate of π",
        elapsed: team.elapsed,
        work_unit: "steps",
        per_thread: team.stats,
        details: vec![
            Detail {
                name: "error vs π",
                value: (pi - std::f64::consts::PI).abs(),
                unit: "",
            },
            Detail {
                name: "chunks",
                value: chunks as f64,
                unit: "",
            },
        ],
    })
}

/// h·Σ 4/(1+x²) over midpoints i = lo..hi, with four independent
/// accumulators (so the divisions pipeline) combined in a fixed order.
fn midpoint_sum(lo: u64, hi: u64, h: f64) -> f64 {
    let mut acc = [0.0f64; 4];
    let mut i = lo;
    while i + 4 <= hi {
        for (k, a) in acc.iter_mut().enumerate() {
            let x = ((i + k as u64) as f64 + 0.5) * h;
            *a += 4.0 / (1.0 + x * x);
        }
        i += 4;
    }
    while i < hi {
        let x = (i as f64 + 0.5) * h;
        acc[0] += 4.0 / (1.0 + x * x);
        i += 1;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3])
}
