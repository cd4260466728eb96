//! `pinsight sched` live, on two usable CPUs declared as a P-core and an
//! E-core (`--kinds A:P,B:E`, pinsight and the programs restricted to
//! those two CPUs): AARR shares the big CPU's time equally, TO keeps the
//! high-SF program on it, affinities come back after a stop, children of
//! CMD are managed, and the refusals. Where each program ran is checked
//! from /proc (schedstat run time attributed to the CPU `stat` reports,
//! sampled every 5 ms), never from pinsight's own report.

use crate::common_live::{
    assert_exit, entry, json, named, on_cpus, pinsight_p_e, sample_run_time, spawn_piped, spin,
    two_usable_cpus,
};
use pinsight_testkit::premise::Live;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_pinsight");
/// Bound for what should end promptly: catches hangs, measures nothing.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// Two usable CPUs [big, small], or `None` after a logged skip.
fn two_cpus() -> Option<[usize; 2]> {
    two_usable_cpus("live sched")
}

/// The common start: the live premise on every usable CPU, then two of
/// them, [big, small]; `None` after a counted skip.
fn begin() -> Option<(Live, [usize; 2])> {
    let live = pinsight_testkit::premise::live_on_usable()?;
    Some((live, two_cpus()?))
}

/// Online CPUs (every one needs a declared kind).
fn online() -> pinsight_cpuset::CpuSet {
    pinsight_testkit::online_cpus()
        .unwrap_or_else(|| pinsight_testkit::usable_cpus().into_iter().collect())
}

/// pinsight restricted to `cpus` = [big, small], with `big` declared a
/// P-core and every other online CPU an E-core (pinsight schedules within
/// its own affinity: here the two).
fn pinsight(cpus: &[usize], args: &[&str]) -> Command {
    let mut c = pinsight_p_e(cpus, online());
    c.args(args);
    c
}

/// `pinsight sched --schedulers SCHEDULER --json ARGS` on `cpus`, started
/// with its output piped.
fn sched(cpus: &[usize], scheduler: &str, args: &[&str]) -> Child {
    let head = ["sched", "--schedulers", scheduler, "--json"];
    spawn_piped(&mut pinsight(cpus, &[&head[..], args].concat()))
}

/// [`sched`] of `FLAGS -- sh -c SCRIPT`, to its end; `script` is given
/// the path of `a`, a link to pinsight (a program named `a`), in a
/// directory of its own.
fn sched_script(
    cpus: &[usize],
    scheduler: &str,
    flags: &[&str],
    script: impl FnOnce(&Path) -> String,
) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let script = script(&named(dir.path(), "a"));
    let cmd = ["--", "sh", "-c", &script];
    wait_with_guard(sched(cpus, scheduler, &[flags, &cmd[..]].concat()))
}

/// Two single-threaded CPU-bound programs named `a` and `b` on `cpus`
/// that run far longer than any test (killed by the test), and their
/// `--pids`.
fn spinners(dir: &Path, cpus: &[usize]) -> (Child, Child, String) {
    let spinner = |name: &str| spin(on_cpus(named(dir, name), cpus));
    let (a, b) = (spinner("a"), spinner("b"));
    let pids = format!("{},{}", a.id(), b.id());
    (a, b, pids)
}

fn wait_with_guard(child: Child) -> Output {
    crate::common_live::wait_with_guard(child, HANG_GUARD, "pinsight sched")
}

fn kill(mut c: Child) {
    let _ = c.kill();
    let _ = c.wait();
}

/// CPU seconds of process `pid` per CPU over `window`, from /proc: every
/// 5 ms each thread's schedstat run time since the last look is counted on
/// the CPU its stat reports now.
fn cpu_time_per_cpu(pids: &[u32], window: Duration) -> Vec<BTreeMap<usize, f64>> {
    let mut out = vec![BTreeMap::new(); pids.len()];
    sample_run_time(pids, window, |i, cpu, secs| {
        *out[i].entry(cpu).or_insert(0.0) += secs;
    });
    out
}

fn allowed(pid: u32) -> Vec<String> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let st = std::fs::read_to_string(e.path().join("status")).unwrap_or_default();
        if let Some(l) = st
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        {
            v.push(l.trim().to_string());
        }
    }
    v
}

#[test]
fn aarr_gives_two_programs_equal_time_on_the_big_cpu() {
    let Some([big, small]) = two_cpus() else {
        return;
    };
    // Other work on the big CPU takes its time from whichever program is
    // there: measured, and a counted skip beyond 5%.
    let Some(live) = pinsight_testkit::premise::live(&[big, small]) else {
        return;
    };
    let cpus = [big, small];
    let dir = tempfile::tempdir().unwrap();
    let (a, b, pids) = spinners(dir.path(), &cpus);
    let sched = sched(&cpus, "aarr", &["--interval", "100ms", "--pids", &pids]);
    let per_cpu = cpu_time_per_cpu(&[a.id(), b.id()], Duration::from_secs(10));
    kill(a);
    kill(b);
    let o = wait_with_guard(sched);
    assert_exit(&o, 0);
    let on_big: Vec<f64> = per_cpu
        .iter()
        .map(|m| m.get(&big).copied().unwrap_or(0.0))
        .collect();
    let total: Vec<f64> = per_cpu.iter().map(|m| m.values().sum()).collect();
    eprintln!(
        "CPU {big} (big): a {:.2} s, b {:.2} s; totals {total:?}",
        on_big[0], on_big[1]
    );
    pinsight_testkit::require_quiet!(live, pinsight_testkit::premise::QUIET);
    assert!(on_big[0] > 0.5 && on_big[1] > 0.5, "{per_cpu:?}");
    let (hi, lo) = (on_big[0].max(on_big[1]), on_big[0].min(on_big[1]));
    assert!(
        hi - lo <= 0.1 * hi,
        "big-CPU time not equal within 10%: a {:.2} s, b {:.2} s",
        on_big[0],
        on_big[1]
    );
    // The report names both programs and saw them swap.
    let r = json(&o);
    let progs = r["programs"].as_array().unwrap();
    let names: Vec<&str> = progs.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(
        progs.iter().all(|p| p["swaps"].as_u64().unwrap() >= 2),
        "{r}"
    );
}

#[test]
fn to_keeps_the_high_sf_program_on_the_big_cpu_and_restores_affinities() {
    let Some((_live, cpus)) = begin() else {
        return;
    };
    let [big, small] = cpus;
    let dir = tempfile::tempdir().unwrap();
    let (a, b, pids) = spinners(dir.path(), &cpus);
    let (pa, pb) = (a.id(), b.id());
    // Their worker threads started (each program: main + one worker).
    let t = Instant::now();
    while (allowed(pa).len() < 2 || allowed(pb).len() < 2) && t.elapsed() < HANG_GUARD {
        std::thread::sleep(Duration::from_millis(10));
    }
    let before = (allowed(pa), allowed(pb));
    let sched = sched(
        &cpus,
        "to",
        &["--sf", "a=2.5", "--sf", "b=1.2", "--pids", &pids],
    );
    // Let the first period place them, then measure.
    std::thread::sleep(Duration::from_millis(600));
    let during = (allowed(pa), allowed(pb));
    let per_cpu = cpu_time_per_cpu(&[pa, pb], Duration::from_secs(4));
    // Ctrl-C: pinsight stops managing, restores, reports, exits 130.
    nix_kill(sched.id(), libc::SIGINT);
    let o = wait_with_guard(sched);
    let after = (allowed(pa), allowed(pb));
    kill(a);
    kill(b);
    assert_exit(&o, 130);
    let share = |m: &BTreeMap<usize, f64>| {
        let t: f64 = m.values().sum();
        m.get(&big).copied().unwrap_or(0.0) / t.max(1e-9)
    };
    let (sa, sb) = (share(&per_cpu[0]), share(&per_cpu[1]));
    eprintln!("share of CPU time on CPU {big}: a (SF 2.5) {sa:.3}, b (SF 1.2) {sb:.3}");
    assert!(
        sa > 0.9,
        "a (SF 2.5) on the big CPU only {sa:.3} of its time"
    );
    assert!(sb < 0.1, "b (SF 1.2) on the big CPU {sb:.3} of its time");
    // Pinned while managed, their own affinity back after.
    let worker = |v: &Vec<String>| {
        v.iter()
            .any(|c| c == &big.to_string() || c == &small.to_string())
    };
    assert!(worker(&during.0) && worker(&during.1), "{during:?}");
    assert_eq!(
        after, before,
        "affinities not restored (during: {during:?})"
    );
    let r = json(&o);
    assert_eq!(r["stopped_by_signal"], 2);
    assert_eq!(r["programs"][0]["sf"], 2.5);
    assert!(r["restore"]["restored"].as_u64().unwrap() >= 2, "{r}");
}

fn nix_kill(pid: u32, sig: i32) {
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

#[test]
fn a_command_and_the_processes_it_starts_are_managed() {
    let Some((_live, cpus)) = begin() else {
        return;
    };
    let o = sched_script(&cpus, "acfs", &["--sf", "a=2"], |a| {
        format!(
            "{a} workload pi -t 1 -s 2e9 >/dev/null & {a} workload pi -t 1 -s 2e9 >/dev/null; wait; exit 3",
            a = a.display()
        )
    });
    assert_eq!(
        o.status.code(),
        Some(3),
        "CMD's status: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = json(&o);
    let progs = r["programs"].as_array().unwrap();
    let busy: Vec<&Value> = progs.iter().filter(|p| p["name"] == "a").collect();
    assert_eq!(busy.len(), 2, "{r}");
    for p in busy {
        assert_eq!(p["sf"], 2.0);
        let t = p["big_s"].as_f64().unwrap() + p["small_s"].as_f64().unwrap();
        assert!(t > 0.05, "{p}");
    }
    assert_eq!(r["exit_code"], 3);
}

#[test]
fn refusals() {
    let Some(_live) = pinsight_testkit::premise::live_on_usable() else {
        return;
    };
    let cpus = pinsight_testkit::usable_cpus();
    let one = [cpus[0]];
    let any = pinsight_testkit::fixtures::hwloc_all()
        .into_iter()
        .next()
        .expect("a recorded machine");
    // One kind: exit 2, naming --kinds. A recorded machine: exit 2.
    for (mut c, flag, value, needles) in [
        (
            on_cpus(BIN, &one),
            "--kinds",
            format!("{}:P", online()),
            &["needs two core kinds", "--kinds"][..],
        ),
        (
            Command::new(BIN),
            "--fsroot",
            any.to_str().unwrap().to_string(),
            &["--fsroot"][..],
        ),
    ] {
        let o = c
            .args([flag, &value, "sched", "--schedulers", "aarr", "--", "true"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag}: {err}");
        assert!(needles.iter().all(|n| err.contains(n)), "{flag}: {err}");
    }
    if cpus.len() < 2 {
        return pinsight_testkit::skip("the remaining refusals need two usable CPUs");
    }
    let two = [cpus[0], cpus[1]];
    for (args, code, needle) in [
        (
            vec!["sched", "--schedulers", "fast", "--", "true"],
            2,
            "allowed: os, aarr, to, acfs",
        ),
        (
            vec!["sched", "--schedulers", "to", "--sf", "a", "--", "true"],
            2,
            "--sf 'a'",
        ),
        (
            vec!["sched", "--schedulers", "to", "--sf", "a=0.5", "--", "true"],
            2,
            "between 1 and 100",
        ),
        (vec!["sched", "--schedulers", "aarr"], 2, "--pids"),
        (
            vec!["sched", "--schedulers", "aarr", "--pids", "x"],
            2,
            "'x' is not a process id",
        ),
        (
            vec![
                "sched",
                "--schedulers",
                "aarr",
                "--interval",
                "0.5ms",
                "--",
                "true",
            ],
            2,
            "an interval is between 1ms and 1h",
        ),
        (
            vec!["sched", "--schedulers", "aarr", "--", "/nonexistent/prog"],
            127,
            "command not found",
        ),
    ] {
        let o = pinsight(&two, &args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(
            err.lines().filter(|l| l.contains("error")).count(),
            1,
            "{err}"
        );
    }
}

#[test]
fn a_program_left_running_by_a_parent_that_exited_is_still_managed() {
    let Some((_live, cpus)) = begin() else {
        return;
    };
    // The shell starts `a` in the background and exits at once: `a` is
    // reparented to pinsight (a child subreaper) and managed to its end.
    let o = sched_script(&cpus, "aarr", &[], |a| {
        format!(
            "{} workload pi -t 1 -s 2e9 >/dev/null & exit 0",
            a.display()
        )
    });
    assert_exit(&o, 0);
    let r = json(&o);
    let a = entry(&r["programs"], "name", "a")
        .unwrap_or_else(|| panic!("the orphan was not managed: {r}"));
    let t = a["big_s"].as_f64().unwrap() + a["small_s"].as_f64().unwrap();
    assert!(t > 0.1, "{a}");
}
