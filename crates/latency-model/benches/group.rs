//! Planning speed for the largest recorded machine (192-CPU EPYC 7R13):
//! a `latency-group` plan must take under 50 ms. Prints the ratio of each
//! measured time to that target (below 1.0 = within target).

use std::time::{Duration, Instant};

use criterion::{criterion_group, BenchmarkId, Criterion};
use pinsight_latency_model::{best_group, best_pipeline, domains, LatencyMatrix};

const TARGET: Duration = Duration::from_millis(50);

fn epyc() -> LatencyMatrix {
    let text = include_str!("../../latency/tests/fixtures/AMD_EPYC_7R13_48-Core_Processor.csv");
    LatencyMatrix::parse_csv(text, "AMD_EPYC_7R13_48-Core_Processor.csv").unwrap()
}

fn bench(c: &mut Criterion) {
    let m = epyc();
    let all = m.cpus.clone();
    let mut g = c.benchmark_group("epyc-7r13-192");
    g.sample_size(10);
    for k in [2usize, 4, 8, 16] {
        g.bench_with_input(BenchmarkId::new("best_group", k), &k, |b, &k| {
            b.iter(|| best_group(&m, &all, k))
        });
        g.bench_with_input(BenchmarkId::new("best_pipeline", k), &k, |b, &k| {
            b.iter(|| best_pipeline(&m, &all, k))
        });
    }
    g.bench_function("domains", |b| b.iter(|| domains(&m)));
    g.finish();
}

/// Median wall time of `f` over a few runs.
fn median_time(mut f: impl FnMut()) -> Duration {
    let mut t: Vec<Duration> = (0..7)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed()
        })
        .collect();
    t.sort();
    t[t.len() / 2]
}

fn print_ratios() {
    let m = epyc();
    let all = m.cpus.clone();
    println!(
        "\nlatency-group planning on 192 CPUs, target {TARGET:?} (ratio < 1 is within target):"
    );
    for k in [2usize, 4, 8, 16] {
        for (name, t) in [
            ("best_group", median_time(|| drop(best_group(&m, &all, k)))),
            (
                "best_pipeline",
                median_time(|| drop(best_pipeline(&m, &all, k))),
            ),
        ] {
            println!(
                "  {name:<14} k={k:<2} {:>10.3} ms  ratio {:.3}",
                t.as_secs_f64() * 1e3,
                t.as_secs_f64() / TARGET.as_secs_f64()
            );
        }
    }
    let t = median_time(|| drop(domains(&m)));
    println!(
        "  {:<14}      {:>10.3} ms  ratio {:.3}",
        "domains",
        t.as_secs_f64() * 1e3,
        t.as_secs_f64() / TARGET.as_secs_f64()
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_ratios();
}
