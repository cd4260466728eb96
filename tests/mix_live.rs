//! `pinsight mix` live on two usable CPUs declared P and E (pinsight
//! restricted to them): three short built-in workloads complete under
//! every scheduler with every metric reported; Ctrl-C keeps the journal
//! and `--resume` completes; the refusals.

use crate::common_live::{assert_exit, pinsight_p_e, spawn_piped, two_usable_cpus, BIN};
use pinsight_testkit::premise::Live;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// Bound for what should end promptly: catches hangs, measures nothing.
const HANG_GUARD: Duration = Duration::from_secs(300);

fn online() -> pinsight_cpuset::CpuSet {
    pinsight_testkit::online_cpus().expect("/sys/devices/system/cpu/online")
}

/// The common start: the live premise on every usable CPU and a
/// directory for the journal; `None` after a counted skip.
fn begin() -> Option<(Live, TempDir)> {
    let live = pinsight_testkit::premise::live_on_usable()?;
    Some((live, tempfile::tempdir().unwrap()))
}

/// pinsight on two usable CPUs, the first declared P, every other E;
/// `None` after a logged skip with fewer than two.
fn pinsight(dir: &Path, args: &[&str]) -> Option<Command> {
    let cpus = two_usable_cpus("live mix")?;
    let mut c = pinsight_p_e(&cpus, online());
    c.current_dir(dir).args(args);
    Some(c)
}

/// [`pinsight`] run to its end, its output piped; `None` after a logged
/// skip.
fn run(dir: &Path, args: &[&str]) -> Option<Output> {
    let mut c = pinsight(dir, args)?;
    Some(wait_with_guard(spawn_piped(&mut c)))
}

/// `mix FLAGS -- PROGRAMS`.
fn mix<'a>(flags: &[&'a str], programs: &'a [String]) -> Vec<&'a str> {
    let mut args = vec!["mix"];
    args.extend(flags);
    args.push("--");
    args.extend(programs.iter().map(String::as_str));
    args
}

fn programs(scale: u32) -> Vec<String> {
    vec![
        format!("{BIN} workload pi -t 1 -s {}e7", 2 * scale),
        format!("{BIN} workload mandelbrot -t 1 -s {}", 150 * scale),
        format!("{BIN} workload pi -t 1 -s {}e7", 4 * scale),
    ]
}

fn wait_with_guard(child: std::process::Child) -> Output {
    crate::common_live::wait_with_guard(child, HANG_GUARD, "pinsight mix")
}

fn check_complete(o: &Output, schedulers: &[&str]) -> Value {
    assert_exit(o, 0);
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = r["schedulers"].as_array().unwrap();
    let names: Vec<&str> = s.iter().map(|x| x["policy"].as_str().unwrap()).collect();
    assert_eq!(names, schedulers);
    for x in s {
        for m in ["aggregate_speedup", "stp", "antt", "unfairness"] {
            assert!(x[m].as_f64().unwrap().is_finite(), "{m}: {x}");
        }
        let progs = x["programs"].as_array().unwrap();
        assert_eq!(progs.len(), 3);
        for p in progs {
            let sd = p["slowdown"].as_f64().unwrap();
            assert!(sd.is_finite() && sd > 0.0, "{p}");
            assert!(p["runs"].as_u64().unwrap() >= 2, "{p}");
        }
        // STP and ANTT from the same slowdowns: STP = Σ 1/slowdown.
        let stp: f64 = progs
            .iter()
            .map(|p| 1.0 / p["slowdown"].as_f64().unwrap())
            .sum();
        assert!((stp - x["stp"].as_f64().unwrap()).abs() < 1e-9);
    }
    assert_eq!(r["references"].as_array().unwrap().len(), 3);
    assert!(r["verdict"].as_str().unwrap().starts_with("Verdict:"));
    r
}

#[test]
fn three_programs_under_every_scheduler() {
    let Some((_live, dir)) = begin() else {
        return;
    };
    let progs = programs(1);
    let args = mix(&["--runs", "2", "--sf", "#3=2", "--json"], &progs);
    let Some(o) = run(dir.path(), &args) else {
        return;
    };
    check_complete(&o, &["os", "aarr", "to", "acfs"]);
    // The human report fits 80 columns and defines nothing twice.
    let j = dir.path().join("pinsight-mix.jsonl");
    let lines = std::fs::read_to_string(&j).unwrap();
    assert!(lines.lines().count() >= 1 + 6 + 4 * (2 + 6), "{lines}");
}

#[test]
fn ctrl_c_keeps_the_journal_and_resume_completes() {
    let Some((_live, dir)) = begin() else {
        return;
    };
    let progs = programs(3);
    let args = mix(&["--schedulers", "os,aarr", "--runs", "2"], &progs);
    let Some(mut c) = pinsight(dir.path(), &args) else {
        return;
    };
    let child = spawn_piped(&mut c);
    let journal = dir.path().join("pinsight-mix.jsonl");
    // Stop it inside the first mix (after the reference runs).
    let t = Instant::now();
    loop {
        let text = std::fs::read_to_string(&journal).unwrap_or_default();
        if text.contains("\"record\":\"run\"") {
            break;
        }
        assert!(t.elapsed() < HANG_GUARD, "no mix run journaled: {text}");
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: kill(2) on our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = wait_with_guard(child);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("--resume"), "{err}");
    let kept = std::fs::read_to_string(&journal).unwrap();
    assert!(
        !kept.contains("\"record\":\"done\""),
        "stopped before any mix ended"
    );
    // No program of the experiment is left running.
    let leftover = Command::new("pgrep")
        .args(["-f", &progs[2]])
        .output()
        .unwrap();
    assert!(
        leftover.stdout.is_empty(),
        "left running: {}",
        String::from_utf8_lossy(&leftover.stdout)
    );
    let Some(mut c) = pinsight(
        dir.path(),
        &["mix", "--resume", "pinsight-mix.jsonl", "--json"],
    ) else {
        return;
    };
    let o = c.output().unwrap();
    check_complete(&o, &["os", "aarr"]);
    let after = std::fs::read_to_string(&journal).unwrap();
    assert!(after.starts_with(&kept), "the journal was appended to");
    let refs_before = kept.matches("\"record\":\"reference\"").count();
    assert_eq!(
        after.matches("\"record\":\"reference\"").count(),
        refs_before.max(6),
        "reference runs already journaled are not run again"
    );
}

/// On `--resume`, a flag given is compared with the journal even when it
/// equals its default (clap's value source, not the value, says it was
/// given); a flag not given takes the journal's value.
#[test]
fn resume_compares_given_flags_even_at_their_defaults() {
    let Some((_live, dir)) = begin() else {
        return;
    };
    // The journal: 2 runs, a 100 ms period (neither the default).
    let Some(o) = run(
        dir.path(),
        &[
            "mix",
            "--schedulers",
            "os",
            "--runs",
            "2",
            "--interval",
            "100ms",
            "--",
            "true",
        ],
    ) else {
        return;
    };
    assert_exit(&o, 0);
    let resume = ["mix", "--resume", "pinsight-mix.jsonl"];
    for (given, field) in [
        (["--runs", "3"], "runs differs (journal 2, now 3)"),
        (
            ["--interval", "200ms"],
            "interval differs (journal 0.1s, now 0.2s)",
        ),
        (["--schedulers", "os,aarr,to,acfs"], "schedulers differs"),
        // An old spelling (a hidden alias) is the same flag.
        (["--repeat", "3"], "runs differs (journal 2, now 3)"),
    ] {
        let args: Vec<&str> = resume.iter().chain(given.iter()).copied().collect();
        let o = run(dir.path(), &args).unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--resume") && err.contains(field),
            "{args:?}: {err}"
        );
    }
    // Given equal to the journal's, or not given: the journal's experiment.
    for extra in [&["--runs", "2", "--interval", "100ms"][..], &[]] {
        let args: Vec<&str> = resume.iter().chain(extra.iter()).copied().collect();
        let o = run(dir.path(), &[&args[..], &["--json"]].concat()).unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {err}");
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["repeat"], 2, "{args:?}");
        assert_eq!(r["period_s"], 0.1, "{args:?}");
    }
}

#[test]
fn refusals() {
    let Some((_live, dir)) = begin() else {
        return;
    };
    for (args, needle) in [
        (
            vec!["mix", "--schedulers", "os,fast", "--", "true"],
            "--schedulers: 'fast' is not a scheduler (allowed: os, aarr, to, acfs)",
        ),
        (vec!["mix"], "mix needs programs"),
        (
            vec!["mix", "--sf", "x=2", "--", "true"],
            "--sf x=…: no such program",
        ),
        (
            vec!["mix", "--runs", "0", "--", "true"],
            "'0' for '--runs <N>'",
        ),
        (vec!["mix", "--resume", "missing.jsonl"], "--resume"),
    ] {
        let Some(mut c) = pinsight(dir.path(), &args) else {
            return;
        };
        let o = c.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // An existing journal is not overwritten.
    std::fs::write(dir.path().join("pinsight-mix.jsonl"), "x").unwrap();
    let mut c = pinsight(dir.path(), &["mix", "--", "true"]).unwrap();
    let o = c.output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("exists"));
    // A recorded machine: exit 2.
    let o = Command::new(BIN)
        .args([
            "--fsroot",
            pinsight_testkit::fixtures::hwloc("16amd64-4n4c-cgroup-distance-merge")
                .to_str()
                .unwrap(),
            "mix",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_exit(&o, 2);
}

/// The same exports as compare: JSON, CSV, Markdown and HTML files with
/// every scheduler's metrics and intervals and each program's slowdown;
/// an export that cannot be written is refused before anything runs.
#[test]
fn exports_json_csv_markdown_and_html() {
    let Some((_live, dir)) = begin() else {
        return;
    };
    let progs = programs(1);
    let flags = [
        "--schedulers",
        "aarr,to",
        "--runs",
        "1",
        "--sf",
        "#2=2",
        "--export-json",
        "m.json",
        "--export-csv",
        "m.csv",
        "--export-markdown",
        "m.md",
        "--export-html",
        "m.html",
    ];
    let args = mix(&flags, &progs[..2]);
    let Some(o) = run(dir.path(), &args) else {
        return;
    };
    assert_exit(&o, 0);
    let read = |n: &str| std::fs::read_to_string(dir.path().join(n)).unwrap();
    let j: Value = serde_json::from_str(&read("m.json")).unwrap();
    assert_eq!(j["schedulers"].as_array().unwrap().len(), 2, "{j}");
    let stp = j["schedulers"][0]["stp"].as_f64().unwrap();
    let csv = read("m.csv");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("scheduler,what,name,value,ci_lo,ci_hi,ci_method")
    );
    let row = csv
        .lines()
        .find(|l| l.starts_with("aarr,metric,stp,"))
        .unwrap_or_else(|| panic!("{csv}"));
    let v: f64 = row.split(',').nth(3).unwrap().parse().unwrap();
    assert!((v - stp).abs() < 1e-9, "{row} vs {stp}");
    assert_eq!(csv.lines().filter(|l| l.contains(",slowdown,")).count(), 4);
    let md = read("m.md");
    assert!(md.contains("| aarr |") && md.contains("| to |"), "{md}");
    assert!(md.contains("Verdict:"), "{md}");
    let html = read("m.html");
    assert!(
        html.starts_with("<!DOCTYPE html>") && html.contains("<td>aarr</td>"),
        "{html}"
    );
    assert!(!html.contains("<script"), "self-contained, no script");

    // Refused before any run: nothing journaled.
    let d2 = tempfile::tempdir().unwrap();
    let mut c = pinsight(
        d2.path(),
        &[
            "mix",
            "--export-csv",
            "/nonexistent-dir/x.csv",
            "--",
            "true",
        ],
    )
    .unwrap();
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--export-csv /nonexistent-dir/x.csv: cannot write it"),
        "{err}"
    );
    assert!(!d2.path().join("pinsight-mix.jsonl").exists());
}
