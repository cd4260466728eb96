//! Two threads bouncing a message, after Martin Thompson's InterThreadLatency
//! as adapted in the "CPU affinity on a single chip is non-uniform" seed.
//!
//! Worker 0 ("ping") writes round number r to its line, worker 1 ("pong")
//! waits to see it and writes r back to its own line, and ping waits for
//! that. Each line is written by one thread only, so every round trip is two
//! cache-line transfers between the two cores: the time measures how far
//! apart the pair sits (same core complex, other CCX, other socket), which
//! is exactly what placing the "communicating pair" decides.
//!
//! Waiting spins, then yields after a while: if both threads are forced onto
//! one CPU (a bad placement), the run still ends, just slowly, instead of
//! burning whole scheduler slices.

use crate::harness::run_team;
use crate::{Detail, Outcome, WorkloadInfo};
use pinsight_sys::progress::Progress;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub(crate) const INFO: WorkloadInfo = WorkloadInfo {
    name: "pingpong",
    summary: "two threads exchanging a cache line (the communicating pair); ns per round trip",
    size_meaning: "round trips",
    default_size: 2_000_000,
    max_size: 1 << 40,
    schedules: &[],
    default_schedule: None,
};

/// A message slot on its own cache line pair (adjacent-line prefetch on
/// Intel pulls lines in 128-byte pairs, so 64-byte padding is not enough).
#[repr(align(128))]
struct Line(AtomicU64);

/// How long to spin before yielding the CPU while waiting for the partner:
/// dozens of round trips on any real machine, but short enough that two
/// workers forced onto one CPU hand it over quickly.
const SPIN_FOR: Duration = Duration::from_micros(5);

/// Round trips between progress/CPU samples.
const SAMPLE_EVERY: u64 = 1 << 16;

pub(crate) fn run(
    threads: usize,
    round_trips: u64,
    progress: &mut dyn Progress,
) -> Result<Outcome, crate::WorkloadError> {
    debug_assert_eq!(threads, 2);
    let ping = Line(AtomicU64::new(0));
    let pong = Line(AtomicU64::new(0));
    let team = run_team(2, round_trips, progress, &|w| {
        let (mine, theirs) = if w.index == 0 {
            (&ping.0, &pong.0)
        } else {
            (&pong.0, &ping.0)
        };
        for r in 1..=round_trips {
            if w.index == 0 {
                mine.store(r, Ordering::Release);
                wait_for(theirs, r);
            } else {
                wait_for(theirs, r);
                mine.store(r, Ordering::Release);
            }
            if r % SAMPLE_EVERY == 0 {
                w.sample_cpu();
                if w.index == 0 {
                    w.report_progress(SAMPLE_EVERY);
                }
            }
        }
        w.work_units = round_trips;
    })?;
    let secs = team.elapsed.as_secs_f64();
    let ns_per_round_trip = secs * 1e9 / round_trips as f64;
    Ok(Outcome {
        workload: INFO.name,
        threads: 2,
        size: round_trips,
        schedule: None,
        figure_of_merit: ns_per_round_trip,
        unit: "ns/round-trip",
        higher_is_better: false,
        checksum: (ping.0.load(Ordering::Relaxed) + pong.0.load(Ordering::Relaxed)) as f64,
        checksum_meaning: "messages delivered, 2 per round trip",
        elapsed: team.elapsed,
        work_unit: "round trips",
        per_thread: team.stats,
        details: vec![
            Detail {
                name: "one-way latency",
                value: ns_per_round_trip / 2.0,
                unit: "ns",
            },
            // "op/sec" as in the post "CPU Affinity: Because Even A Single Chip
            // Is Nonuniform": one op per message, two messages per round trip.
            Detail {
                name: "transfer rate",
                value: 2.0 * round_trips as f64 / secs,
                unit: "op/s",
            },
        ],
    })
}

/// Waits until `line` holds `value`.
fn wait_for(line: &AtomicU64, value: u64) {
    // The fast path: the partner answers within a few hundred nanoseconds.
    for _ in 0..64 {
        if line.load(Ordering::Acquire) == value {
            return;
        }
        std::hint::spin_loop();
    }
    let start = Instant::now();
    let mut spins = 0u32;
    while line.load(Ordering::Acquire) != value {
        spins = spins.wrapping_add(1);
        if spins & 63 != 0 || start.elapsed() < SPIN_FOR {
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}
