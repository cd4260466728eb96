//! Cost of per-thread SF sampling, printed per thread per period and as a
//! share of one CPU at the default 200 ms period.
//!
//! 64 threads of this process (parked), each with one counter group per
//! kind PMU (two, as an x86 hybrid machine: four counters each); one
//! iteration is `SfSampler::sample_all` (two group reads per thread, the
//! windows, the estimator). The groups are the sampler's software stand-in
//! so this runs on machines without a PMU: the `read(2)` of a software
//! group costs about what a hardware one does (both read the
//! perf_event's saved counts; hardware adds one PMU register read per
//! counter of a thread running on another CPU, via an IPI).

use criterion::Criterion;
use pinsight_measure::{sf::SfOptions, sf::SfPmus, sf::SfSampler};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const THREADS: usize = 64;
const PERIOD: Duration = Duration::from_millis(200);

// The tests' two kind PMUs, shared with the bench.
#[path = "../tests/common.rs"]
mod common;

/// Two kind PMUs as an x86 hybrid machine: CPU 0 big, CPU 1 small.
fn pmus() -> SfPmus {
    common::two_kind_pmus(0, 1)
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let (tid_tx, tid_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let stop_rx = std::sync::Arc::new(std::sync::Mutex::new(stop_rx));
    let workers: Vec<_> = (0..THREADS)
        .map(|_| {
            let (tx, rx) = (tid_tx.clone(), stop_rx.clone());
            std::thread::spawn(move || {
                tx.send(pinsight_sys::affinity::gettid()).unwrap();
                let _ = rx.lock().unwrap().recv();
            })
        })
        .collect();
    let mut s = SfSampler::software_stand_in(pmus(), SfOptions::default());
    for _ in 0..THREADS {
        let tid = tid_rx.recv().unwrap();
        if let Err(e) = s.attach(tid) {
            eprintln!("sf benchmark skipped: perf_event_open: {e}");
            return;
        }
    }
    c.bench_function("sf_sample_all_64_threads", |b| {
        b.iter(|| std::hint::black_box(s.sample_all()))
    });
    c.final_summary();
    // Criterion keeps its estimate to itself: time a plain loop too.
    let n = 2000;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(s.sample_all());
    }
    let per_call = t.elapsed().as_secs_f64() / n as f64;
    let per_thread = per_call / THREADS as f64;
    println!("\n== pinsight sf: sampling cost ==");
    println!(
        "per thread per period: {:.2} µs ({} groups of 4 counters)",
        per_thread * 1e6,
        s.pmus().pmus.len()
    );
    println!(
        "{THREADS} threads at {} ms: {:.3} ms per period = {:.3} % of one CPU",
        PERIOD.as_millis(),
        per_call * 1e3,
        100.0 * per_call / PERIOD.as_secs_f64()
    );
    for _ in 0..THREADS {
        let _ = stop_tx.send(());
    }
    for w in workers {
        let _ = w.join();
    }
}
