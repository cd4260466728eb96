//! `pinsight sf`'s reading of per-kind counter groups: arbitrary kernel
//! readings (the bytes as little-endian u64 words: time_running, then four
//! values, per reading, alternating between a big and a small group) go
//! through `pinsight_measure::sf::window` into the estimator. Checks: a
//! window has finite positive instructions and seconds and a branch
//! fraction in [0, 1]; an SF, once produced, lies in [1, 4].
#![no_main]

use libfuzzer_sys::fuzz_target;
use pinsight_measure::sf::window;
use pinsight_sched_model::Kind as SfKind;
use pinsight_sched_model::{SfEstimator, SfParams};
use pinsight_sys::perf::GroupReading;
use std::time::Duration;

fuzz_target!(|data: &[u8]| {
    let words: Vec<u64> = data
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let mut e = SfEstimator::new(SfParams::default());
    let mut prev: [Option<GroupReading>; 2] = [None, None];
    for (i, r) in words.chunks_exact(5).enumerate() {
        let now = GroupReading {
            time_enabled_ns: r[0],
            time_running_ns: r[0],
            values: r[1..].to_vec(),
        };
        let k = i % 2;
        let kind = if k == 0 { SfKind::Big } else { SfKind::Small };
        if let Some(s) = window(kind, prev[k].as_ref(), &now, Duration::from_micros(1)) {
            assert!(s.instructions >= 1.0 && s.instructions.is_finite());
            assert!(s.seconds > 0.0 && s.seconds.is_finite());
            if let Some(c) = s.control {
                assert!(c.l1_per_kilo_instr.is_finite() && c.l1_per_kilo_instr >= 0.0);
                assert!((0.0..=1.0).contains(&c.branch_fraction));
            }
            e.add(s);
            prev[k] = Some(now);
        }
        for sf in [e.estimate(), e.predict()].into_iter().flatten() {
            assert!((1.0..=4.0).contains(&sf), "SF {sf}");
        }
    }
});
