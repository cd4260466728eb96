//! Time of a full fit (both models, with and without contention) plus a
//! 200-draw bootstrap on 12 configurations × 3 runs. Target: under 1 s; the
//! ratio to it is printed (no wall-clock assertion).

use criterion::{criterion_group, criterion_main, Criterion};
use pinsight_tune_model::{fit, Config, FitOptions, ModelKind, Observation, Theta};
use std::time::Instant;

fn data() -> Vec<Observation> {
    let truth = Theta {
        t1: 10.0,
        f: 0.95,
        sf: 2.0,
        smt_gain: 0.25,
        contention: 0.0,
    };
    let configs = [
        (1, 0, 0),
        (0, 1, 0),
        (2, 0, 0),
        (4, 0, 0),
        (0, 4, 0),
        (0, 8, 0),
        (4, 8, 0),
        (2, 4, 0),
        (1, 0, 1),
        (4, 0, 4),
        (4, 8, 4),
        (2, 2, 2),
    ];
    let mut out = Vec::new();
    for (i, &(p, e, smt)) in configs.iter().enumerate() {
        let c = Config::new(p, e, smt);
        for r in 0..3 {
            // Deterministic ±2% pattern instead of a generator.
            let noise = 1.0 + 0.02 * (((i * 3 + r) % 5) as f64 - 2.0) / 2.0;
            out.push(Observation {
                config: c,
                time_s: ModelKind::Dynamic.time(&truth, c) * noise,
                energy_j: None,
            });
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let runs = data();
    let opts = FitOptions {
        bootstrap: 200,
        seed: 7,
    };
    let start = Instant::now();
    let f = fit(&runs, opts).expect("fit");
    let secs = start.elapsed().as_secs_f64();
    println!(
        "tune fit + 200-draw bootstrap, 12 configs x 3 runs: {secs:.3} s \
         ({:.2}x the 1 s target); model {}",
        secs / 1.0,
        f.model.name()
    );
    c.bench_function("fit_12x3_bootstrap200", |b| {
        b.iter(|| fit(std::hint::black_box(&runs), opts).expect("fit"))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
