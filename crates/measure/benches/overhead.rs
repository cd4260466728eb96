//! Harness overhead, printed as ratios:
//!
//! 1. per-run cost of `Measurer::run` against a plain `Command::status()`
//!    on `true` (target: ≤ 2 ms added, median);
//! 2. cost of the counters on a ~1 s workload: the same fixed amount of
//!    work measured with and without counters (target: ≤ 1 %).
//!
//! The workload is this bench binary itself (`PINSIGHT_BENCH_WORK=N`): N
//! rounds of arithmetic with a fresh 256 KiB allocation each (page faults),
//! calibrated to ~1 s. Pairs run back to back in alternating order; the
//! report gives wall and user+sys ratios (wall is at the mercy of other
//! load on the machine; user+sys is what the counters can add).

use criterion::{Criterion, SamplingMode};
use pinsight_measure::{Measurer, Options};
use pinsight_sys::spawn::{self, Spawn};
use pinsight_sys::FsRoot;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

// Named timings and their minimum and median, shared with compare's bench.
#[path = "support/samples.rs"]
mod samples;
use samples::{median, minimum, record};

const WORK: &str = "PINSIGHT_BENCH_WORK";

fn work(rounds: u64) -> u64 {
    let mut x = 0u64;
    for r in 0..rounds {
        for i in 0..20_000u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        // 256 KiB: above malloc's mmap threshold, so every round maps and
        // faults in fresh pages (page-fault hooks fire).
        let v = vec![r as u8; 256 * 1024];
        x = x.wrapping_add(std::hint::black_box(v)[1000] as u64);
    }
    x
}

/// Rounds of `work` that take about one second here.
fn rounds_for_one_second() -> u64 {
    let t = Instant::now();
    let mut n = 0;
    while t.elapsed() < Duration::from_millis(300) {
        work(10);
        n += 10;
    }
    (n as f64 / t.elapsed().as_secs_f64()) as u64
}

/// `program` with stdin and stdout on /dev/null, for the plain baseline.
fn quiet(program: &str) -> Command {
    let mut c = Command::new(program);
    c.stdin(Stdio::null()).stdout(Stdio::null());
    c
}

/// [`quiet`] as the measurer takes it.
fn quiet_spawn(program: impl AsRef<std::ffi::OsStr>) -> Spawn {
    let mut s = Spawn::new(program);
    s.stdin(spawn::Stdio::Null).stdout(spawn::Stdio::Null);
    s
}

/// A measurer of wall time and rusage only (no counters, no energy).
fn without_counters(live: &FsRoot) -> Measurer {
    Measurer::new(
        live,
        Options {
            counters: false,
            energy: false,
            ..Options::default()
        },
    )
    .0
}

fn bench_spawn(c: &mut Criterion) {
    let live = FsRoot::live();
    let (with_counters, _) = Measurer::new(&live, Options::default());
    let no_counters = without_counters(&live);
    let mut g = c.benchmark_group("run_true");
    g.sample_size(200);
    g.bench_function("plain_status", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                quiet("true").status().unwrap();
                let d = t.elapsed();
                record("plain", d);
                total += d;
            }
            total
        })
    });
    for (name, m) in [
        ("measured_no_counters", &no_counters),
        ("measured_counters", &with_counters),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let t = Instant::now();
                    m.run(quiet_spawn("true")).unwrap();
                    let d = t.elapsed();
                    record(name, d);
                    total += d;
                }
                total
            })
        });
    }
    g.finish();
}

fn bench_workload(c: &mut Criterion) {
    let rounds = rounds_for_one_second();
    let live = FsRoot::live();
    let (with_counters, _) = Measurer::new(
        &live,
        Options {
            energy: false,
            ..Options::default()
        },
    );
    let no_counters = without_counters(&live);
    let exe = std::env::current_exe().unwrap();
    let run = |m: &Measurer| {
        let mut cmd = quiet_spawn(&exe);
        cmd.env(WORK, rounds.to_string());
        let r = m.run(cmd).unwrap();
        assert_eq!(r.exit.code, Some(0));
        r
    };
    let mut g = c.benchmark_group("workload_1s");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(25));
    // Each iteration runs the pair back to back (order alternating), so
    // drift in machine load hits both sides alike; the reported time is
    // the counted side's.
    let mut flip = false;
    g.bench_function("pair_counters_vs_none", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                flip = !flip;
                let (a, b) = if flip {
                    let a = run(&no_counters);
                    (a, run(&with_counters))
                } else {
                    let b = run(&with_counters);
                    (run(&no_counters), b)
                };
                record("wl_none_wall", Duration::from_secs_f64(a.wall_s));
                record("wl_counters_wall", Duration::from_secs_f64(b.wall_s));
                record("wl_none_cpu", Duration::from_secs_f64(a.user_s + a.sys_s));
                record(
                    "wl_counters_cpu",
                    Duration::from_secs_f64(b.user_s + b.sys_s),
                );
                total += Duration::from_secs_f64(b.wall_s);
            }
            total
        })
    });
    g.finish();
}

fn main() {
    if let Ok(n) = std::env::var(WORK) {
        std::hint::black_box(work(n.parse().unwrap()));
        return;
    }
    let mut c = Criterion::default().configure_from_args();
    bench_spawn(&mut c);
    bench_workload(&mut c);
    c.final_summary();

    let (plain, nc, wc) = (
        median("plain"),
        median("measured_no_counters"),
        median("measured_counters"),
    );
    println!("\n== pinsight-measure overhead (medians) ==");
    println!("true, plain Command::status():   {:8.3} ms", plain * 1e3);
    println!(
        "true, Measurer (no counters):     {:8.3} ms  (+{:.3} ms, ratio {:.2})",
        nc * 1e3,
        (nc - plain) * 1e3,
        nc / plain
    );
    println!(
        "true, Measurer (counters):        {:8.3} ms  (+{:.3} ms, ratio {:.2})  target: +<= 2 ms",
        wc * 1e3,
        (wc - plain) * 1e3,
        wc / plain
    );
    for (what, a, b) in [
        (
            "wall median    ",
            median("wl_none_wall"),
            median("wl_counters_wall"),
        ),
        (
            "wall min       ",
            minimum("wl_none_wall"),
            minimum("wl_counters_wall"),
        ),
        (
            "user+sys median",
            median("wl_none_cpu"),
            median("wl_counters_cpu"),
        ),
    ] {
        println!(
            "~1 s workload {what}: no counters {:.4} s, counters {:.4} s: ratio {:.4} ({:+.2} %)  target: <= 1 %",
            a,
            b,
            b / a,
            (b / a - 1.0) * 100.0
        );
    }
}
