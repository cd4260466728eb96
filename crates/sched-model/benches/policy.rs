//! One policy step (observe + assign) for 1024 managed threads on 8 big +
//! 8 small CPUs, for each policy. The budget is 1% of one CPU at the
//! default 200 ms period, i.e. 2 ms per step; the ratio to it is printed
//! (no wall-clock assertion).

use criterion::{criterion_group, criterion_main, Criterion};
use pinsight_sched_model::{Capacity, Observation, Policy, Scheduler, ThreadId};
use std::hint::black_box;
use std::time::Instant;

const THREADS: u64 = 1024;
const PERIOD_S: f64 = 0.2;

fn observations(round: u64) -> Vec<Observation> {
    (0..THREADS)
        .map(|i| {
            // Deterministic spread instead of a generator.
            let x = ((i * 7919 + round * 104_729) % 1000) as f64 / 1000.0;
            Observation {
                id: ThreadId(i),
                big_time: PERIOD_S * x * 0.1,
                small_time: PERIOD_S * (1.0 - x) * 0.1,
                sf: Some(1.3 + 1.3 * x),
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let cap = Capacity::uniform(8, 8);
    let rounds: Vec<Vec<Observation>> = (0..16).map(observations).collect();
    let budget_s = 0.01 * PERIOD_S;
    for policy in [
        Policy::Os,
        Policy::aarr(PERIOD_S),
        Policy::to(),
        Policy::acfs(PERIOD_S),
    ] {
        let mut s = Scheduler::new(policy);
        s.step(&rounds[0], &cap);
        let mut r = 0;
        c.bench_function(&format!("step_1024_threads_{}", policy.name()), |b| {
            b.iter(|| {
                r = (r + 1) % rounds.len();
                black_box(s.step(black_box(&rounds[r]), &cap))
            })
        });
        let n = 200;
        let t = Instant::now();
        for i in 0..n {
            black_box(s.step(&rounds[i % rounds.len()], &cap));
        }
        let per = t.elapsed().as_secs_f64() / n as f64;
        println!(
            "{}: {:.1} µs per step of 1024 threads; {:.3} of the budget (1% of a 200 ms period = 2 ms)",
            policy.name(),
            per * 1e6,
            per / budget_s
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
