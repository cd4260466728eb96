//! Launch overhead: `launch::run` (and, when built, the `pinsight run`
//! binary) against `taskset -c 0 true`, N = 200 runs each, interleaved so
//! drifts hit every variant alike. Prints medians and ratios.
//!
//! Target: `pinsight run cpus:0 -- true` at most 2 ms slower than taskset.
//! Run: `cargo bench -p pinsight-launch --bench overhead` (build the
//! `pinsight` binary in the same profile first to include it).

use pinsight_cpuset::CpuSet;
use pinsight_launch::{run, RunOptions};
use pinsight_plan::Plan;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

const N: usize = 200;

fn plan(policy: &str, pinned: bool, places: &[usize]) -> Plan {
    let places: Vec<CpuSet> = places.iter().map(|&c| CpuSet::single(c)).collect();
    Plan {
        pinned,
        ..Plan::pinned_to(policy.into(), places, vec![])
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn time_ms(f: &mut dyn FnMut()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e3
}

/// The `pinsight` binary of the same profile, if built and able to `run`.
fn pinsight_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    let bin = profile_dir.join("pinsight");
    let ok = Command::new(&bin)
        .args(["-q", "run", "cpus:0", "--", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?
        .success();
    ok.then_some(bin)
}

fn main() {
    if Command::new("taskset")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_err()
    {
        println!("overhead: skipped: taskset (util-linux) is not installed");
        return;
    }
    // cpus:0 has one place: the launcher applies it as a process mask.
    let pinned = plan("cpus:0", true, &[0]);
    let set = plan("cpus-set:0", false, &[0]);
    // Two distinct places: the shim is written, preloaded and removed.
    let shim = plan("cpus:0,1", true, &[0, 1]);
    let opts = RunOptions::new("true", vec![]);
    let bin = pinsight_binary();

    let mut taskset = Vec::with_capacity(N);
    let mut lib_pinned = Vec::with_capacity(N);
    let mut lib_set = Vec::with_capacity(N);
    let mut lib_shim = Vec::with_capacity(N);
    let mut binary = Vec::with_capacity(N);
    for _ in 0..N {
        taskset.push(time_ms(&mut || {
            let s = Command::new("taskset")
                .args(["-c", "0", "true"])
                .status()
                .unwrap();
            assert!(s.success());
        }));
        lib_pinned.push(time_ms(&mut || {
            assert_eq!(run(&pinned, &opts).unwrap().exit_code, 0)
        }));
        lib_set.push(time_ms(&mut || {
            assert_eq!(run(&set, &opts).unwrap().exit_code, 0)
        }));
        lib_shim.push(time_ms(&mut || {
            assert_eq!(run(&shim, &opts).unwrap().exit_code, 0)
        }));
        if let Some(b) = &bin {
            binary.push(time_ms(&mut || {
                let s = Command::new(b)
                    .args(["-q", "run", "cpus:0", "--", "true"])
                    .status()
                    .unwrap();
                assert!(s.success());
            }));
        }
    }
    let t = median(taskset);
    println!("overhead: N = {N} runs each, medians");
    println!("  {:<37} {t:8.3} ms", "taskset -c 0 true");
    let line = |name: &str, v: Vec<f64>| {
        let m = median(v);
        println!(
            "  {name:<37} {m:8.3} ms  ratio {:5.2}  overhead {:+.3} ms",
            m / t,
            m - t
        );
    };
    line("launch::run(cpus:0, true)", lib_pinned);
    line("launch::run(cpus-set:0, true)", lib_set);
    line("launch::run(cpus:0,1, true) [shim]", lib_shim);
    if bin.is_some() {
        line("pinsight run cpus:0 -- true [binary]", binary);
    } else {
        println!("  pinsight run cpus:0 -- true [binary]  not measured: build the pinsight binary in this profile first");
    }
}
