//! `pinsight compare` beside a busy loop the test starts, pinned to one of
//! the plan's CPUs for the first part of the runs: the runs inside that
//! window are flagged disturbed on that CPU with a plausible share; runs
//! outside it are not (checked when nothing else loads that CPU).

use crate::common_live::{entry, start_on};
use pinsight_testkit::Children;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const BIN: &str = env!("CARGO_BIN_EXE_pinsight");

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Busy share of `cpu` over `d`, from /proc/stat (ticks of user..softirq).
fn background(cpu: usize, d: Duration) -> f64 {
    let busy = || {
        let s = pinsight_sys::cpustat::read_proc_stat(&pinsight_sys::FsRoot::live()).unwrap();
        s.cpus[&cpu].busy
    };
    let (b, t) = (busy(), Instant::now());
    std::thread::sleep(d);
    let ticks = busy() - b;
    ticks as f64 / pinsight_sys::procfs::clock_ticks() as f64 / t.elapsed().as_secs_f64()
}

fn cpu_share(run: &Value, cpu: usize) -> f64 {
    entry(&run["disturbance"]["cpus"], "cpu", cpu).map_or(0.0, |c| c["share"].as_f64().unwrap())
}

#[test]
fn compare_flags_the_runs_a_busy_loop_disturbed() {
    let usable: Vec<usize> = pinsight_testkit::usable_cpus();
    if usable.len() < 2 {
        pinsight_testkit::skip_test!("needs two usable CPUs (have {})", usable.len());
    }
    // Refused beside another real-time task (an emulation's stealer).
    let Some(_live) = pinsight_testkit::premise::live(&usable[..2]) else {
        return;
    };
    let busy_cpu = usable[1];
    let quiet = background(busy_cpu, Duration::from_millis(500)) < 0.05;
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("j.jsonl");

    let mut loop_cmd = Command::new("sh");
    loop_cmd
        .args(["-c", "while :; do :; done"])
        .stdin(Stdio::null());
    start_on(&mut loop_cmd, &[busy_cpu]);
    let window_start = unix_now();
    // Killed on every exit path.
    let mut busy = Some(Children(vec![loop_cmd.spawn().unwrap()]));

    // 12 runs of 0.25 s; the loop stops after about 1.5 s of them.
    let compare = Command::new(BIN)
        .current_dir(dir.path())
        .env_remove("PINSIGHT_FSROOT")
        .env_remove("PINSIGHT_KINDS")
        .args(["--json", "compare", "--policies", "os", "--runs", "12"])
        .args(["--warmup", "0", "--journal"])
        .arg(&journal)
        .args(["--", "sleep", "0.25"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stop the loop once a few runs are journaled (or after 20 s).
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(20) {
        let lines = std::fs::read_to_string(&journal).map_or(0, |s| s.lines().count());
        if lines > 4 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(busy.take());
    let window_end = unix_now();
    let out = compare.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 12);

    let (mut inside, mut outside) = (Vec::new(), Vec::new());
    for r in runs {
        let start = r["started_unix"].as_f64().unwrap();
        let end = start + r["wall_s"].as_f64().unwrap();
        // 50 ms of margin around the window: the loop's start and stop.
        if start > window_start + 0.05 && end < window_end - 0.05 {
            inside.push(r);
        } else if start > window_end + 0.05 {
            outside.push(r);
        }
    }
    assert!(!inside.is_empty(), "no run inside the busy window");
    for r in &inside {
        let d = &r["disturbance"];
        assert_eq!(d["disturbed"], true, "{d}");
        // The loop had the CPU alone or shared it with other work: either
        // way other work held it for most of the run.
        let share = cpu_share(r, busy_cpu);
        assert!(share > 0.5, "CPU {busy_cpu} share {share}: {d}");
    }
    let summary = &report["disturbance"];
    assert!(
        summary["disturbed"].as_u64().unwrap() >= inside.len() as u64,
        "{summary}"
    );
    let caveats = report["verdict"]["caveats"].to_string();
    assert!(caveats.contains("runs disturbed"), "{caveats}");

    if outside.is_empty() {
        pinsight_testkit::skip_test!(
            "no run after the busy window: the undisturbed side is not checked"
        );
    }
    let outside_share: Vec<f64> = outside.iter().map(|r| cpu_share(r, busy_cpu)).collect();
    if !quiet || background(busy_cpu, Duration::from_millis(300)) >= 0.05 {
        pinsight_testkit::skip_test!(
            "other work loads CPU {busy_cpu} (shares after the loop: {outside_share:?}): \
             undisturbed runs cannot be told apart"
        );
    }
    // Quiet before and after: most runs after the loop show no disturbance
    // on its CPU (a stray tick may hit one).
    let clean = outside_share.iter().filter(|s| **s < 0.1).count();
    assert!(
        clean * 2 >= outside.len(),
        "CPU {busy_cpu} shares after the loop: {outside_share:?}"
    );
}
