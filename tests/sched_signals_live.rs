//! `pinsight sched -- sh -c 'a & a &'` stopped by SIGTERM, SIGINT and
//! SIGHUP once the shell has exited and its two background programs run on
//! (reparented to pinsight, a child subreaper): pinsight exits promptly with
//! 128 + N, every remaining thread has its affinity from before back, and
//! the programs got the signal (SIGTERM and SIGHUP end them; a
//! non-interactive shell's background jobs ignore SIGINT, POSIX XCU 2.11,
//! so they run on, unpinned). Two usable CPUs are declared a P-core and an
//! E-core (`--kinds`), as in tests/sched_live.rs.

use crate::common_live::{named, pinsight_p_e, two_usable_cpus};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Bound for what should end promptly after the signal.
const PROMPT: Duration = Duration::from_secs(5);
/// Bound for setting the experiment up: catches hangs, measures nothing.
const HANG_GUARD: Duration = Duration::from_secs(30);

fn cpulist(path: &str) -> Option<pinsight_cpuset::CpuSet> {
    let text = std::fs::read_to_string(path).ok()?;
    let l = text
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .unwrap_or(text.trim());
    pinsight_cpuset::CpuSet::parse_list(l.trim()).ok()
}

/// Two usable CPUs (affinity ∩ online), or `None` after a logged skip.
fn two_cpus() -> Option<[usize; 2]> {
    two_usable_cpus("sched")
}

/// `pinsight sched` on `cpus` (the first declared a P-core, every other
/// online CPU an E-core) running `sh -c 'a & a &'`, `a` a busy program.
fn sched(cpus: [usize; 2], dir: &std::path::Path) -> Child {
    let a = named(dir, "a");
    // The programs hold none of pinsight's pipes (they may outlive it).
    let busy = format!("{} workload pi -t 1 -s 1e12 >/dev/null 2>&1", a.display());
    let script = format!("{busy} & {busy} &");
    let online = pinsight_testkit::online_cpus().unwrap_or_else(|| cpus.iter().copied().collect());
    let mut c = pinsight_p_e(&cpus, online);
    c.args(["sched", "--policy", "aarr", "--json", "--", "sh", "-c"])
        .arg(script)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // The signals at their default whatever the harness inherited:
    // pinsight_p_e starts it through on_cpus.
    c.spawn().unwrap()
}

/// The children of `pid` (all its threads').
fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let text = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
        out.extend(
            text.split_whitespace()
                .filter_map(|w| w.parse::<u32>().ok()),
        );
    }
    out
}

/// Each live thread of `pid` with its affinity (empty once it is gone or
/// a zombie).
fn threads(pid: u32) -> Vec<(u32, pinsight_cpuset::CpuSet)> {
    let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let zombie = state
        .rsplit_once(')')
        .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
    if zombie {
        return Vec::new();
    }
    let mut out = Vec::new();
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let tid = t.file_name().to_string_lossy().parse::<u32>().unwrap_or(0);
        if let Some(set) = cpulist(&t.path().join("status").to_string_lossy()) {
            out.push((tid, set));
        }
    }
    out
}

fn stopped_by(sig: libc::c_int) {
    let Some(cpus) = two_cpus() else {
        return;
    };
    let before: pinsight_cpuset::CpuSet = cpus.iter().copied().collect();
    let dir = tempfile::tempdir().unwrap();
    let mut p = sched(cpus, dir.path());
    // Wait until the shell has exited and both programs run under
    // pinsight, at least one of them pinned to one CPU (the experiment is
    // in effect).
    let t0 = Instant::now();
    let programs = loop {
        let kids: Vec<u32> = children(p.id())
            .into_iter()
            .filter(|&c| {
                std::fs::read_to_string(format!("/proc/{c}/comm")).is_ok_and(|n| n.trim() == "a")
            })
            .collect();
        let pinned = kids
            .iter()
            .flat_map(|&k| threads(k))
            .any(|(_, set)| set.len() == 1);
        if kids.len() == 2 && pinned {
            break kids;
        }
        if let Some(s) = p.try_wait().unwrap() {
            panic!("pinsight sched ended early: {s}");
        }
        assert!(t0.elapsed() < HANG_GUARD, "the programs never ran pinned");
        std::thread::sleep(Duration::from_millis(20));
    };
    // A few periods (200 ms each) of scheduling.
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(p.id() as i32, sig) };
    let t = Instant::now();
    let status = loop {
        if let Some(s) = p.try_wait().unwrap() {
            break s;
        }
        if t.elapsed() > PROMPT {
            let _ = p.kill();
            for &k in &programs {
                unsafe { libc::kill(k as i32, libc::SIGKILL) };
            }
            panic!("pinsight sched did not stop within {PROMPT:?} of signal {sig}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let o = p.wait_with_output().unwrap();
    // The programs got the signal: SIGTERM and SIGHUP end them.
    let t = Instant::now();
    while sig != libc::SIGINT
        && programs.iter().any(|&k| !threads(k).is_empty())
        && t.elapsed() < PROMPT
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let left: Vec<(u32, Vec<(u32, pinsight_cpuset::CpuSet)>)> =
        programs.iter().map(|&k| (k, threads(k))).collect();
    for &k in &programs {
        // SAFETY: kill(2) on the programs this test started.
        unsafe { libc::kill(k as i32, libc::SIGKILL) };
    }
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(status.code(), Some(128 + sig), "signal {sig}: {stderr}");
    for (k, ts) in &left {
        if sig == libc::SIGINT {
            assert!(!ts.is_empty(), "program {k} ignores SIGINT, yet it ended");
        } else {
            assert!(ts.is_empty(), "program {k} outlived signal {sig}: {ts:?}");
        }
        for (tid, set) in ts {
            assert_eq!(
                set, &before,
                "program {k} thread {tid}: affinity not restored after signal {sig}"
            );
        }
    }
    let r: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    assert_eq!(r["stopped_by_signal"], sig, "{r}");
    assert_eq!(r["exit_code"], 128 + sig, "{r}");
}

#[test]
fn sigterm_stops_the_experiment_and_restores_every_affinity() {
    let Some(_live) = pinsight_testkit::premise::live_on_usable() else {
        return;
    };
    stopped_by(libc::SIGTERM);
}

#[test]
fn sigint_stops_the_experiment_and_restores_every_affinity() {
    let Some(_live) = pinsight_testkit::premise::live_on_usable() else {
        return;
    };
    stopped_by(libc::SIGINT);
}

#[test]
fn sighup_stops_the_experiment_and_restores_every_affinity() {
    let Some(_live) = pinsight_testkit::premise::live_on_usable() else {
        return;
    };
    stopped_by(libc::SIGHUP);
}
