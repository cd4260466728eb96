//! Calls `discover` in a loop on one recorded machine, for profiling
//! (`perf record -e cpu-clock -g`, `strace -c -f`):
//! `cargo run --release -p pinsight-topology --example discover_loop -- DIR [N] [cpus]`.
//! DIR `live` is this machine; `cpus` discovers only what `run`, `plan`
//! and `pin` read without `--near` or `--mem` (`Needs::CPUS`). Prints the
//! median time of one call.

use pinsight_sys::FsRoot;
use pinsight_topology::{discover_with, Needs};
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: discover_loop DIR [N]");
        std::process::exit(2);
    };
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(200);
    let needs = if args.next().as_deref() == Some("cpus") {
        Needs::CPUS
    } else {
        Needs::ALL
    };
    let fs = match if dir == "live" {
        Ok(FsRoot::live())
    } else {
        FsRoot::at(&dir)
    } {
        Ok(fs) => fs,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let mut times: Vec<f64> = (0..n.max(1))
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(discover_with(&fs, needs));
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "median {:.3} ms over {} runs",
        times[times.len() / 2],
        times.len()
    );
}
