//! The live scheduler's own cost: the sampler per managed thread, and one
//! whole period (discover + sample + AARR step + apply) of a manager of 64
//! threads, printed as a fraction of one CPU at the default 200 ms period
//! (target < 1%). No wall-clock assertion.
//!
//! The 64 threads are this bench's own, parked (waking every 50 ms, so each
//! has run in every period, as busy threads): sampling reads the same two
//! /proc files whether a thread runs or sleeps, and parked threads keep the
//! bench from competing with itself for the CPUs it measures on.

use criterion::{criterion_group, criterion_main, Criterion};
use pinsight_sched::{Config, Manager, NoSf, Sampler};
use pinsight_sched_model::{Capacity, Cpu, Policy};
use pinsight_sys::FsRoot;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const THREADS: usize = 64;
const PERIOD: Duration = Duration::from_millis(200);

fn bench(c: &mut Criterion) {
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..THREADS)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::park_timeout(Duration::from_millis(50));
                }
            })
        })
        .collect();
    let pid = std::process::id() as i32;
    let mut sampler = Sampler::new(FsRoot::live());
    let tids = sampler.tids(pid);
    c.bench_function("sample_one_thread", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % tids.len();
            black_box(sampler.sample(pid, tids[i]))
        })
    });
    let n = 2000;
    let t = Instant::now();
    for i in 0..n {
        black_box(sampler.sample(pid, tids[i % tids.len()]));
    }
    let per_thread = t.elapsed().as_secs_f64() / n as f64;
    println!(
        "sampler: {:.1} µs per managed thread per period; {:.5} of one CPU per thread at 200 ms",
        per_thread * 1e6,
        per_thread / PERIOD.as_secs_f64()
    );

    // A whole period over this process (64 parked threads + the bench's).
    let own = pinsight_sys::affinity::get_affinity(0).expect("own affinity");
    let (first, last) = (own.first().unwrap_or(0), own.last().unwrap_or(0));
    let capacity = Capacity {
        big: vec![Cpu::new(first as u32)],
        small: vec![Cpu::new(last as u32)],
    };
    let cfg = Config {
        policy: Policy::aarr(PERIOD.as_secs_f64()),
        period: PERIOD,
        capacity,
        follow_children: false,
        group_children: false,
        orphans_of: None,
    };
    let mut m = Manager::new(FsRoot::live(), cfg, &[pid], Box::new(NoSf)).expect("own process");
    c.bench_function("period_64_threads_aarr", |b| b.iter(|| black_box(m.step())));
    let n = 100;
    let t = Instant::now();
    for _ in 0..n {
        black_box(m.step());
    }
    let per_period = t.elapsed().as_secs_f64() / n as f64;
    m.restore();
    println!(
        "manager: {:.1} µs per period of {} threads; {:.4} of one CPU at 200 ms (target < 0.01)",
        per_period * 1e6,
        tids.len(),
        per_period / PERIOD.as_secs_f64()
    );
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        h.thread().unpark();
        let _ = h.join();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
