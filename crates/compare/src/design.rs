//! The experiment design: which arm runs when.
//!
//! A *randomised complete block* design, as in careful benchmarking
//! practice: every block holds each arm exactly once, in a fresh random
//! order. Slow drift (thermal state, turbo budget, a background job, the
//! page cache) then hits every arm alike instead of whichever arm happened
//! to run last, and a systematic "A always right after B" effect cannot
//! build up. Warm-up blocks come first; they are journaled but never enter
//! the statistics.
//!
//! The order is a pure function of (arms, runs, warmup, seed), so
//! `--resume` regenerates it and skips the slots already in the journal.

use crate::rng::SplitMix64;
use serde::{Deserialize, Serialize};

/// Whether a run counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Warms caches, page cache and frequency; journaled, not analysed.
    Warmup,
    /// Enters the statistics.
    Measured,
}

/// One planned run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// Position in the run order (0-based); the journal's key.
    pub index: usize,
    /// Index into the experiment's applicable arms.
    pub arm: usize,
    pub phase: Phase,
    /// Repetition number within the phase (0-based): block number.
    pub rep: usize,
}

/// The run order: `warmup` blocks then `runs` blocks, each a seeded random
/// permutation of `0..arms`.
pub fn schedule(arms: usize, runs: usize, warmup: usize, seed: u64) -> Vec<Slot> {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(arms * (runs + warmup));
    let blocks = (0..warmup)
        .map(|r| (Phase::Warmup, r))
        .chain((0..runs).map(|r| (Phase::Measured, r)));
    for (phase, rep) in blocks {
        let mut order: Vec<usize> = (0..arms).collect();
        rng.shuffle(&mut order);
        for arm in order {
            out.push(Slot {
                index: out.len(),
                arm,
                phase,
                rep,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_order_for_seed_42() {
        // Frozen: a journal written today must resume identically tomorrow.
        let s = schedule(3, 2, 1, 42);
        let arms: Vec<usize> = s.iter().map(|s| s.arm).collect();
        let phases: Vec<Phase> = s.iter().map(|s| s.phase).collect();
        assert_eq!(phases[..3], [Phase::Warmup; 3]);
        assert_eq!(phases[3..], [Phase::Measured; 6]);
        assert_eq!(arms, GOLDEN_42.to_vec());
    }

    const GOLDEN_42: [usize; 9] = [0, 2, 1, 1, 2, 0, 2, 0, 1];

    proptest! {
        #[test]
        fn every_block_holds_every_arm_once(arms in 1usize..8, runs in 0usize..6, warmup in 0usize..3, seed: u64) {
            let s = schedule(arms, runs, warmup, seed);
            prop_assert_eq!(s.len(), arms * (runs + warmup));
            for (i, block) in s.chunks(arms).enumerate() {
                let mut a: Vec<usize> = block.iter().map(|s| s.arm).collect();
                a.sort();
                prop_assert_eq!(a, (0..arms).collect::<Vec<_>>());
                let phase = if i < warmup { Phase::Warmup } else { Phase::Measured };
                prop_assert!(block.iter().all(|s| s.phase == phase));
            }
            prop_assert!(s.iter().enumerate().all(|(i, sl)| sl.index == i));
            prop_assert_eq!(schedule(arms, runs, warmup, seed), s);
        }
    }
}
