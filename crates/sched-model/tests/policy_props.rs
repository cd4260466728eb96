//! The properties every policy must keep, over random
//! thread sets, capacities and SF changes.

use pinsight_sched_model::{
    decide, Capacity, Kind, Observation, Policy, Scheduler, ThreadId, ThreadState,
};
use proptest::prelude::*;

const PERIOD: f64 = 0.2;

fn state(i: usize, big: f64, progress: f64, sf: Option<f64>, on: u8) -> ThreadState {
    ThreadState {
        id: ThreadId(i as u64),
        big_time: big,
        cpu_time: big,
        progress,
        sf,
        on: match on {
            0 => None,
            1 => Some(Kind::Big),
            _ => Some(Kind::Small),
        },
        cpu: None,
    }
}

fn threads() -> impl Strategy<Value = Vec<ThreadState>> {
    prop::collection::vec(
        (
            0.0..50.0f64,
            0.0..50.0f64,
            prop::option::of(1.0..4.0f64),
            0u8..3,
        ),
        0..40,
    )
    .prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (b, p, sf, on))| state(i, b, p, sf, on))
            .collect()
    })
}

/// Runs `periods` periods where every thread runs the whole period on the
/// kind it was given; returns the states before each step.
fn run(
    policy: Policy,
    sfs: &[f64],
    big: usize,
    small: usize,
    periods: usize,
    mut check: impl FnMut(&[ThreadState]),
) {
    let cap = Capacity::uniform(big, small);
    let mut s = Scheduler::new(policy);
    let n = sfs.len();
    let mut a = s.step(
        &(0..n)
            .map(|i| Observation {
                id: ThreadId(i as u64),
                big_time: 0.0,
                small_time: 0.0,
                sf: Some(sfs[i]),
            })
            .collect::<Vec<_>>(),
        &cap,
    );
    for _ in 0..periods {
        let obs: Vec<Observation> = (0..n)
            .map(|i| {
                let id = ThreadId(i as u64);
                let on_big = a.on_big(id);
                Observation {
                    id,
                    big_time: if on_big { PERIOD } else { 0.0 },
                    small_time: if on_big { 0.0 } else { PERIOD },
                    sf: Some(sfs[i]),
                }
            })
            .collect();
        s.observe(&obs);
        let states: Vec<ThreadState> = s.threads().cloned().collect();
        check(&states);
        a = s.assign(&cap);
    }
}

proptest! {
    #[test]
    fn decide_keeps_the_invariant(ts in threads(), slots in 0usize..50, which in 0u8..3, thr in 0.0..3.0f64) {
        let policy = match which {
            0 => Policy::Aarr { threshold: thr },
            1 => Policy::To { margin: thr },
            _ => Policy::Acfs { threshold: thr },
        };
        let chosen = decide(&policy, &ts, slots).expect("managed policy");
        prop_assert_eq!(chosen.len(), slots.min(ts.len()));
        let fallback = pinsight_sched_model::policy::fallback_sf(&ts);
        let merit = |t: &ThreadState| match which {
            0 => -t.big_time,
            1 => t.sf.unwrap_or(fallback),
            _ => -t.progress,
        };
        for b in ts.iter().filter(|t| chosen.contains(&t.id)) {
            for s in ts.iter().filter(|t| !chosen.contains(&t.id)) {
                prop_assert!(merit(s) - merit(b) <= thr + 1e-9,
                    "small {:?} beats big {:?} by more than {}", s, b, thr);
            }
        }
    }

    /// AARR: no thread's big-core time lags the most-served thread's by
    /// more than the threshold plus one period.
    #[test]
    fn aarr_no_thread_starves(n in 1usize..24, big in 0usize..10, small in 1usize..10, k in 1.0..5.0f64) {
        let thr = k * PERIOD;
        let sfs = vec![2.0; n];
        run(Policy::Aarr { threshold: thr }, &sfs, big, small, 200, |ts| {
            let max = ts.iter().map(|t| t.big_time).fold(0.0, f64::max);
            for t in ts {
                assert!(max - t.big_time <= thr + PERIOD + 1e-9,
                    "thread {:?} lags {} > {}", t.id, max - t.big_time, thr + PERIOD);
            }
        });
    }

    /// TO: after every step no lower-SF thread holds a big core while a
    /// thread whose SF is higher by more than the margin waits, even as
    /// SFs change.
    #[test]
    fn to_never_keeps_a_lower_sf_thread(
        n in 1usize..24, big in 0usize..10, margin in 0.0..0.5f64,
        walk in prop::collection::vec(prop::collection::vec(-0.3..0.3f64, 24), 1..30),
    ) {
        let cap = Capacity::uniform(big, 4);
        let mut s = Scheduler::new(Policy::To { margin });
        let mut sfs: Vec<f64> = (0..n).map(|i| 1.3 + 1.3 * i as f64 / n as f64).collect();
        for step in &walk {
            for (sf, d) in sfs.iter_mut().zip(step) {
                *sf = (*sf + d).clamp(1.0, 4.0);
            }
            let obs: Vec<Observation> = (0..n).map(|i| Observation {
                id: ThreadId(i as u64), big_time: 0.1, small_time: 0.1, sf: Some(sfs[i]),
            }).collect();
            let a = s.step(&obs, &cap);
            prop_assert_eq!(a.big.len(), big.min(n));
            for (b, _) in &a.big {
                for w in &a.small {
                    prop_assert!(sfs[w.0 as usize] - sfs[b.0 as usize] <= margin + 1e-9);
                }
            }
        }
    }

    /// ACFS: before every step, no big-core thread is ahead of the
    /// least-advanced thread by more than the threshold plus one period.
    /// (The spread over *all* threads cannot be bounded in general: a
    /// thread with SF 1 gains as fast on a small core as on a big one, so
    /// with too few big cores it pulls ahead of high-SF threads.)
    #[test]
    fn acfs_big_core_threads_never_far_ahead(
        sfs in prop::collection::vec(1.0..3.0f64, 1..24), big in 1usize..10, small in 1usize..10,
        k in 1.0..5.0f64,
    ) {
        let thr = k * PERIOD;
        let big_ids = std::cell::RefCell::new(Vec::new());
        run(Policy::Acfs { threshold: thr }, &sfs, big, small, 200, |ts| {
            let min = ts.iter().map(|t| t.progress).fold(f64::MAX, f64::min);
            for t in ts.iter().filter(|t| t.on == Some(Kind::Big)) {
                assert!(t.progress - min <= thr + PERIOD + 1e-9,
                    "big-core {:?} ahead by {}", t.id, t.progress - min);
            }
            big_ids.borrow_mut().push(ts.iter().filter(|t| t.on == Some(Kind::Big)).count());
        });
        prop_assert!(big_ids.borrow().iter().all(|&b| b == big.min(sfs.len())));
    }

    /// ACFS with equal SFs: the progress spread over all threads stays
    /// within the threshold plus two periods.
    #[test]
    fn acfs_progress_spread_bounded(
        n in 1usize..24, sf in 1.0..3.0f64, big in 1usize..10, small in 1usize..10,
        k in 1.0..5.0f64,
    ) {
        let thr = k * PERIOD;
        run(Policy::Acfs { threshold: thr }, &vec![sf; n], big, small, 200, |ts| {
            let max = ts.iter().map(|t| t.progress).fold(f64::MIN, f64::max);
            let min = ts.iter().map(|t| t.progress).fold(f64::MAX, f64::min);
            assert!(max - min <= thr + 2.0 * PERIOD + 1e-9, "spread {} > {}", max - min, thr + 2.0 * PERIOD);
        });
    }
}
