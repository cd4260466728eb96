//! Discovery speed on every recorded machine and the committed synthetic
//! ones; target: the 256-CPU POWER7 (`256ppc-8n8s4t`) in 5 ms
//! or less, and in 0.35 of lstopo's median or better, on the same machine
//! in the same run. Also printed: discovery of the CPUs only
//! (`discover_with(Needs::CPUS)`: no devices, no memory details), what
//! `run`, `plan` and `pin` read without `--near` or `--mem`.
//!
//! After the criterion runs (`cargo bench -p pinsight-topology`), prints
//! pinsight's and lstopo's medians and their ratio per recorded machine,
//! when `lstopo-no-graphics` runs (else "lstopo unavailable" and why):
//! `HWLOC_FSROOT=DIR HWLOC_COMPONENTS=linux,stop lstopo-no-graphics --of
//! xml -`, timed over N runs each. lstopo's figure includes its process
//! start-up and XML output (that is what a user waits for); pinsight's is
//! the in-process `discover()` call.

use criterion::Criterion;
use pinsight_sys::FsRoot;
use pinsight_topology::{discover, discover_with, Needs};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// (name, directory) of every fixture machine, hwloc ones first (the
/// recorded tarballs unpacked and the synthetic trees written once per
/// build directory by `pinsight_testkit::fixtures`).
fn machines() -> Vec<(String, PathBuf)> {
    use pinsight_testkit::fixtures;
    let mut out: Vec<(String, PathBuf)> = fixtures::hwloc_names()
        .into_iter()
        .map(|n| (format!("hwloc/{n}"), fixtures::hwloc(&n)))
        .collect();
    out.extend(
        fixtures::synthetic_names()
            .into_iter()
            .map(|n| (format!("synthetic/{n}"), fixtures::synthetic(&n))),
    );
    out
}

fn bench_discovery(c: &mut Criterion) {
    let mut g = c.benchmark_group("discover");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for (name, dir) in machines() {
        let fs = FsRoot::at(&dir).expect("fixture");
        g.bench_function(name.as_str(), |b| {
            b.iter(|| black_box(discover(black_box(&fs))))
        });
    }
    g.finish();
}

/// Median wall time of `runs` calls of `f` (after one warm-up call), in
/// milliseconds: a median, because other processes share this machine.
fn median_ms(runs: u32, mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    t.sort_by(f64::total_cmp);
    let n = t.len();
    if n % 2 == 1 {
        t[n / 2]
    } else {
        (t[n / 2 - 1] + t[n / 2]) / 2.0
    }
}

/// Runs lstopo on the recorded tree `dir`; `Err` says why it cannot.
fn lstopo(dir: &Path) -> Result<(), String> {
    let out = Command::new("lstopo-no-graphics")
        .args(["--of", "xml", "-"])
        .env("HWLOC_FSROOT", dir)
        .env("HWLOC_COMPONENTS", "linux,stop")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run lstopo-no-graphics: {e} (apt-get install hwloc)"))?;
    if out.status.success() {
        Ok(())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(format!(
            "lstopo-no-graphics failed ({}): {}",
            out.status,
            err.lines().next().unwrap_or("no message")
        ))
    }
}

fn print_ratios() {
    const RUNS: u32 = 21;
    const TARGET_MS: f64 = 5.0;
    const TARGET_RATIO: f64 = 0.35;
    println!("\nDiscovery time, median of {RUNS} runs:");
    for (name, dir) in machines()
        .into_iter()
        .filter(|(n, _)| n.starts_with("hwloc/"))
    {
        let fs = FsRoot::at(&dir).expect("fixture");
        let ours = median_ms(RUNS, || {
            black_box(discover(&fs));
        });
        let lean = median_ms(RUNS, || {
            black_box(discover_with(&fs, Needs::CPUS));
        });
        let big = name.ends_with("256ppc-8n8s4t");
        match lstopo(&dir) {
            Ok(()) => {
                let theirs = median_ms(RUNS, || {
                    let _ = lstopo(&dir);
                });
                let ratio = ours / theirs;
                let target = if big {
                    let met = ours <= TARGET_MS && ratio <= TARGET_RATIO;
                    format!(
                        " (target <= {TARGET_MS} ms and ratio <= {TARGET_RATIO}: {})",
                        if met { "met" } else { "MISSED" }
                    )
                } else {
                    String::new()
                };
                println!(
                    "{name}: pinsight {ours:.2} ms (CPUs only {lean:.2}), lstopo {theirs:.2} ms, \
                     ratio {ratio:.2}{target}"
                );
            }
            Err(why) => {
                let target = if big {
                    format!(
                        " (target <= {TARGET_MS} ms: {})",
                        if ours <= TARGET_MS { "met" } else { "MISSED" }
                    )
                } else {
                    String::new()
                };
                println!(
                    "{name}: pinsight {ours:.2} ms (CPUs only {lean:.2}){target}; lstopo unavailable: {why}"
                );
            }
        }
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_discovery(&mut c);
    c.final_summary();
    // `cargo bench` passes --bench; `cargo test --benches` does not: keep
    // test runs quick.
    if std::env::args().any(|a| a == "--bench") {
        print_ratios();
    }
}
