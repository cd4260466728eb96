//! Capacity changes and thread churn: whatever the sequence of periods,
//! every observed thread is placed exactly once, no CPU of performance 0
//! gets a thread, big CPUs are not shared, every usable big CPU is used
//! while threads wait, and the SF estimator stays within its clamp.

use pinsight_sched_model::{
    Capacity, Cpu, Kind, Observation, Policy, Scheduler, SfEstimator, SfParams, SfSample, ThreadId,
};
use proptest::prelude::*;
use std::collections::BTreeSet;

#[derive(Debug, Clone)]
struct Period {
    threads: BTreeSet<u64>,
    big_perf: Vec<u8>,
    small_perf: Vec<u8>,
}

fn period() -> impl Strategy<Value = Period> {
    (
        prop::collection::btree_set(0u64..30, 0..20),
        prop::collection::vec(prop::sample::select(vec![0u8, 0, 100, 255]), 0..6),
        prop::collection::vec(prop::sample::select(vec![0u8, 100, 255]), 0..6),
    )
        .prop_map(|(threads, big_perf, small_perf)| Period {
            threads,
            big_perf,
            small_perf,
        })
}

proptest! {
    #[test]
    fn placements_follow_capacity_and_churn(
        which in 0u8..4, periods in prop::collection::vec(period(), 1..25), sf in 1.0..3.0f64,
    ) {
        let policy = match which {
            0 => Policy::Os,
            1 => Policy::aarr(0.2),
            2 => Policy::to(),
            _ => Policy::acfs(0.2),
        };
        let mut s = Scheduler::new(policy);
        for p in &periods {
            let cap = Capacity {
                big: p.big_perf.iter().enumerate()
                    .map(|(i, &x)| Cpu { id: i as u32, performance: Some(x.into()) }).collect(),
                small: p.small_perf.iter().enumerate()
                    .map(|(i, &x)| Cpu { id: 100 + i as u32, performance: Some(x.into()) }).collect(),
            };
            let obs: Vec<Observation> = p.threads.iter().map(|&t| Observation {
                id: ThreadId(t), big_time: 0.1, small_time: 0.1,
                sf: Some(sf + t as f64 / 100.0),
            }).collect();
            let a = s.step(&obs, &cap);
            let placed: Vec<ThreadId> = a.big.iter().map(|b| b.0).chain(a.small.iter().copied()).collect();
            let unique: BTreeSet<ThreadId> = placed.iter().copied().collect();
            prop_assert_eq!(placed.len(), unique.len(), "a thread placed twice");
            let want: BTreeSet<ThreadId> = p.threads.iter().map(|&t| ThreadId(t)).collect();
            prop_assert_eq!(&unique, &want);
            let usable_big: BTreeSet<u32> = cap.big.iter().filter(|c| c.usable()).map(|c| c.id).collect();
            let usable_small: BTreeSet<u32> = cap.small.iter().filter(|c| c.usable()).map(|c| c.id).collect();
            if !a.managed {
                prop_assert!(a.big.is_empty());
                prop_assert!(policy == Policy::Os || (usable_big.is_empty() && usable_small.is_empty()));
                continue;
            }
            let cpus: BTreeSet<u32> = a.big.iter().map(|b| b.1).collect();
            prop_assert_eq!(cpus.len(), a.big.len(), "a big CPU shared");
            prop_assert!(cpus.is_subset(&usable_big), "a thread on a CPU of performance 0");
            prop_assert_eq!(a.big.len(), usable_big.len().min(want.len()));
            for c in &a.small_cpus {
                prop_assert!(usable_small.contains(c) || (usable_small.is_empty() && usable_big.contains(c)));
            }
            for t in s.threads() {
                prop_assert_eq!(t.on == Some(Kind::Big), a.on_big(t.id));
            }
        }
    }

    #[test]
    fn sf_estimates_stay_in_the_clamp(
        samples in prop::collection::vec((any::<bool>(), 0.0..1e10f64, 0.0..2.0f64,
            prop::option::of((0.0..1000.0f64, 0.0..1.0f64))), 0..60),
        max in 1.0..8.0f64,
    ) {
        let params = SfParams { max, ..SfParams::default() };
        let mut e = SfEstimator::new(params);
        let (mut big, mut small) = (0, 0);
        for (on_big, instr, secs, control) in samples {
            let kind = if on_big { Kind::Big } else { Kind::Small };
            if instr > 0.0 && secs > 0.0 {
                if on_big { big += 1 } else { small += 1 }
            }
            e.add(SfSample {
                kind, instructions: instr, seconds: secs,
                control: control.map(|(l1, br)| pinsight_sched_model::ControlMetrics {
                    l1_per_kilo_instr: l1, branch_fraction: br,
                }),
            });
            match e.estimate() {
                Some(sf) => {
                    prop_assert!((1.0..=max).contains(&sf));
                    prop_assert!(big >= 5 && small >= 5);
                }
                None => prop_assert!(big < 5 || small < 5),
            }
            if let Some(sf) = e.predict() {
                prop_assert!((1.0..=max).contains(&sf));
            }
        }
    }
}
