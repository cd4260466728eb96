//! Planning must be instant next to launching a program: the target is
//! under 1 ms for every policy on a 256-CPU machine, `balance` with 10 000
//! tasks included (each place is an allocated CpuSet, so that case is the
//! slowest). Prints each case's time as a ratio to the 1 ms budget.

#[path = "../tests/common/mod.rs"]
mod common;

use criterion::{criterion_group, criterion_main, Criterion};
use pinsight_plan::{plan, Request};
use pinsight_testkit::topology::{build, one_kind, Pu};
use std::time::{Duration, Instant};

/// 4 packages x 2 NUMA nodes x 16 cores x 2 threads, an L3 per node,
/// an L2 per core, CPUs numbered thread-major like most x86 firmware.
fn big_machine() -> pinsight_model::Topology {
    let mut pus = Vec::new();
    for p in 0..4 {
        for n in 0..2 {
            for c in 0..16 {
                let core = (p * 2 + n) * 16 + c;
                for t in 0..2 {
                    let node = p * 2 + n;
                    pus.push(Pu::new(core + 128 * t, p, node as u32, node, core, core, 0));
                }
            }
        }
    }
    build("4s2n16c2t", pus, one_kind())
}

const BUDGET: Duration = Duration::from_millis(1);

fn bench(c: &mut Criterion) {
    let big = big_machine();
    let hybrid = pinsight_testkit::topology::i7_1370p();
    let cases: Vec<(&str, &pinsight_model::Topology, Request)> = vec![
        (
            "compact/256",
            &big,
            Request::new("compact".parse().unwrap()),
        ),
        (
            "scatter/256",
            &big,
            Request::new("scatter".parse().unwrap()),
        ),
        (
            "smt-physical-first/256",
            &big,
            Request::new("smt-physical-first".parse().unwrap()),
        ),
        (
            "balance-10000/256",
            &big,
            Request {
                tasks: Some(10_000),
                ..Request::new("balance".parse().unwrap())
            },
        ),
        (
            "p-first/i7",
            &hybrid,
            Request::new("p-first".parse().unwrap()),
        ),
        (
            "latency-group-8/i7",
            &hybrid,
            Request {
                threads: Some(8),
                latency: Some(common::i7_latency()),
                ..Request::new("latency-group".parse().unwrap())
            },
        ),
    ];
    for (name, topo, req) in &cases {
        c.bench_function(name, |b| b.iter(|| plan(topo, req).unwrap()));
        // The ratio to the budget, measured directly so it prints even with --quick.
        let runs = 50u32;
        let start = Instant::now();
        for _ in 0..runs {
            std::hint::black_box(plan(topo, req).unwrap());
        }
        let each = start.elapsed() / runs;
        println!(
            "{name}: {:.3} ms per plan = {:.2}x the 1 ms budget",
            each.as_secs_f64() * 1e3,
            each.as_secs_f64() / BUDGET.as_secs_f64()
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
