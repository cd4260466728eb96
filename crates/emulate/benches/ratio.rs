//! Requested vs achieved speed of an emulated kind, its spread over time,
//! and the stealers' own overhead: `cargo bench -p pinsight-emulate`
//! (root or CAP_SYS_NICE; two usable CPUs). Not a timed test: it prints
//! figures, with the targets beside them (median within 5% of the asked
//! speed). `EMULATE_BENCH_SECS` sets the hold time per speed (default 10).
//!
//! For each asked speed (0.25, 0.5, 0.75) on the second usable CPU:
//! calibrate a duty-cycle emulation, then measure the achieved speed in
//! 200 ms windows for the hold time, without touching the knob. Overhead:
//! the stealer's own CPU time against the share it is set to take, and the
//! reference CPU's probe rate with the stealer running against without.

use pinsight_emulate::{probe, Choice, Options, Spread, Targets};
use pinsight_model::declared::KindSpec;
use pinsight_sys::progress::Silent;
use pinsight_sys::FsRoot;
use std::time::{Duration, Instant};

const WINDOW: Duration = Duration::from_millis(200);

fn rate(cpu: usize) -> f64 {
    probe::rates(&[cpu], WINDOW)[0].unwrap_or(f64::NAN)
}

fn main() {
    let cpus = pinsight_testkit::usable_cpus();
    if cpus.len() < 2 {
        eprintln!("skipped: needs two usable CPUs");
        return;
    }
    let hold: u64 = std::env::var("EMULATE_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let (fast, slow) = (cpus[0], cpus[1]);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "emulate ratio bench: reference CPU {fast}, slowed CPU {slow}, {hold} s per speed, load {}",
        load.trim()
    );
    println!(
        "{:>6} {:>8} {:>8} {:>7} {:>7} {:>7} {:>6} {:>7} {:>7} {:>9} {:>8}",
        "asked",
        "calib",
        "median",
        "min",
        "max",
        "stdev",
        "err%",
        "period",
        "busy",
        "stealer",
        "ref rate"
    );
    for asked in [0.25, 0.5, 0.75] {
        let before: Vec<f64> = (0..3).map(|_| rate(fast)).collect();
        let spec = KindSpec::parse(&format!("{fast}:P,{slow}:E@{asked}")).unwrap();
        let targets = Targets::of(&spec).unwrap();
        let opts = Options {
            choice: Choice::DutyCycle,
            ..Options::default()
        };
        let em = match pinsight_emulate::start(&FsRoot::live(), &targets, &opts, &mut Silent) {
            Ok(em) => em,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        let r = em.report().clone();
        let k = &r.kinds[0];
        let pid = em.stealer_pids()[0].1;
        let fs = FsRoot::live();
        let t0 = pinsight_sys::procfs::task_runtime_ns(&fs, pid, pid);
        let start = Instant::now();
        let mut xs = Vec::new();
        let mut during = Vec::new();
        while start.elapsed() < Duration::from_secs(hold) {
            let rs = probe::rates(&[fast, slow], WINDOW);
            if let (Some(f), Some(s)) = (rs[0], rs[1]) {
                xs.push(s / f);
                during.push(f);
            }
        }
        let wall = start.elapsed();
        let t1 = pinsight_sys::procfs::task_runtime_ns(&fs, pid, pid);
        let stealer = match (t0, t1) {
            (Some(a), Some(b)) => (b - a) as f64 / wall.as_nanos() as f64,
            _ => f64::NAN,
        };
        drop(em);
        let s = Spread::of(&xs);
        let ref_change = Spread::of(&during).median / Spread::of(&before).median;
        println!(
            "{:>6.2} {:>8.3} {:>8.3} {:>7.3} {:>7.3} {:>7.3} {:>6.1} {:>5}us {:>7.3} {:>9.3} {:>8.3}",
            asked,
            k.achieved.median,
            s.median,
            s.min,
            s.max,
            s.stdev,
            (s.median / asked - 1.0) * 100.0,
            r.period_us.unwrap_or(0),
            1.0 - k.settings[0].knob,
            stealer,
            ref_change,
        );
    }
    println!(
        "calib: achieved at the end of calibration; median..stdev: 200 ms windows over the hold;"
    );
    println!("busy: share the stealer is set to take; stealer: its measured CPU share (overhead = stealer - busy);");
    println!("ref rate: reference CPU's probe rate during / before (1.0 = no overhead on unslowed CPUs).");
    println!("target: |err%| <= 5 with the machine otherwise idle.");
}
