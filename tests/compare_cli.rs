//! `pinsight compare` end to end: outputs, exports, the journal, exit
//! codes, faults (Ctrl-C, crashes, timeouts, missing programs), resume,
//! and the PMU/RAPL/cpufreq paths on fake measurement trees (the test-only
//! `PINSIGHT_TEST_MEASURE_ROOT`: topology and plans stay this machine's).
//! Runs only `true`, `false`, `sh` and `sleep`: fast, no extra packages.

use crate::common_cmd::{assert_status, pinsight_in, strs, text, with_sh, words};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Generous bound for what should take a moment (a killed run, a
/// journal line, a stop after SIGINT): catches hangs, never measures speed.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// The CPUs this test process may use (affinity mask ∩ online), in order:
/// live tests pin to these, never to hard-coded ids.
fn usable_cpus() -> Vec<usize> {
    pinsight_testkit::usable_cpus()
}

/// Redirects compare's measurement reads (cpufreq, PMUs, RAPL) to a fake
/// tree; test-only, not in `--help`.
const MEASURE_ROOT: &str = "PINSIGHT_TEST_MEASURE_ROOT";

/// pinsight in `dir`, as the tests of every command that runs programs
/// start it (`crate::common_cmd::pinsight_in`).
fn pinsight(dir: &Path) -> Command {
    pinsight_in(dir)
}

/// `args` with the measurement files read under `root`.
fn run_measured_in(dir: &Path, root: &Path, args: &[&str]) -> Output {
    pinsight(dir)
        .env(MEASURE_ROOT, root)
        .args(args)
        .output()
        .unwrap()
}

/// Whitespace (line breaks of wrapped text) collapsed to single spaces.
fn flat(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn run(dir: &Path, args: &[&str]) -> Output {
    pinsight(dir).args(args).output().unwrap()
}

/// A fresh directory, the file `ran` in it, and a script that creates it:
/// a program that leaves a mark when it runs.
fn marking() -> (tempfile::TempDir, PathBuf, String) {
    let d = tempfile::tempdir().unwrap();
    let marker = d.path().join("ran");
    let script = format!("touch {}", marker.display());
    (d, marker, script)
}

/// `args` run in a fresh directory, kept for the files the run wrote.
fn run_fresh(args: &[&str]) -> (tempfile::TempDir, Output) {
    let d = tempfile::tempdir().unwrap();
    let o = run(d.path(), args);
    (d, o)
}

/// The JSON document on stdout of a run that must have succeeded.
fn report(o: &Output) -> Value {
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The ids of a report's arms, in order.
fn arm_ids(r: &Value) -> Vec<&str> {
    strs(&r["arms"], "id")
}

fn journal_lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Fake measurement files for CPUs 0-63 (enough for the CPUs of any test
/// machine): optional cpufreq (every CPU on `governor`) and an optional
/// RAPL package zone; no PMU.
fn fake_tree(dir: &Path, governor: Option<&str>, rapl: bool) -> PathBuf {
    let root = dir.join("fake");
    let cpu = root.join("sys/devices/system/cpu");
    std::fs::create_dir_all(&cpu).unwrap();
    for c in 0..64 {
        std::fs::create_dir_all(cpu.join(format!("cpu{c}"))).unwrap();
        if let Some(g) = governor {
            let f = cpu.join(format!("cpu{c}/cpufreq"));
            std::fs::create_dir_all(&f).unwrap();
            std::fs::write(f.join("scaling_governor"), format!("{g}\n")).unwrap();
            std::fs::write(
                f.join("scaling_available_governors"),
                "performance powersave schedutil\n",
            )
            .unwrap();
        }
    }
    if rapl {
        let z = root.join("sys/class/powercap/intel-rapl:0");
        std::fs::create_dir_all(&z).unwrap();
        std::fs::write(z.join("name"), "package-0\n").unwrap();
        std::fs::write(z.join("energy_uj"), "1000000\n").unwrap();
        std::fs::write(z.join("max_energy_range_uj"), "262143328850\n").unwrap();
    }
    root
}

fn governor_of(root: &Path, cpu: usize) -> String {
    std::fs::read_to_string(root.join(format!(
        "sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor"
    )))
    .unwrap()
    .trim()
    .to_string()
}

#[test]
fn true_under_three_policies_gives_table_json_and_every_export() {
    let d = tempfile::tempdir().unwrap();
    let cpu = usable_cpus()[0];
    let pinned = format!("cpus:{cpu}");
    let policies = format!("os,{pinned},e-set");
    let o = run(
        d.path(),
        &words(&format!("compare --runs 3 --warmup 1 --seed 3 --threads 1 --policies {policies} --journal j.jsonl --json --export-json r.json --export-csv r.csv --export-markdown r.md --export-html r.html -q -- true")),
    );
    let r = report(&o);
    assert_eq!(r["schema"], "pinsight-compare-report/1");
    assert_eq!(r["status"]["state"], "complete");
    assert_eq!(r["baseline"], "os");
    assert_eq!(arm_ids(&r), ["os", pinned.as_str()]);
    assert_eq!(r["arms"][1]["plan"]["places"][0], cpu.to_string());
    assert_eq!(r["arms"][0]["measured"], 3);
    assert!(
        r["arms"][0]["metrics"][0]["summary"]["mean"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    // Fieller speedup and the chosen test are there for the non-baseline arm.
    assert!(r["arms"][1]["time_vs_baseline"]["ratio"].as_f64().is_some());
    assert_eq!(r["arms"][1]["time_vs_baseline"]["test"], "mann_whitney");
    assert_eq!(r["not_applicable"][0]["what"], "e-set");
    assert!(r["verdict"]["headline"].as_str().unwrap().len() > 10);
    assert_eq!(
        r["runs"].as_array().unwrap().len(),
        8,
        "raw runs incl. warm-ups"
    );
    assert_eq!(
        serde_json::from_str::<Value>(&std::fs::read_to_string(d.path().join("r.json")).unwrap())
            .unwrap()["arms"],
        r["arms"]
    );

    let j = journal_lines(&d.path().join("j.jsonl"));
    assert_eq!(j.len(), 1 + 2 * (3 + 1));
    assert_eq!(j[0]["type"], "header");
    assert_eq!(j[0]["seed"], 3);
    assert_eq!(j[0]["arms"][1]["plan"]["pinned"], true);
    assert_eq!(j.iter().filter(|l| l["phase"] == "warmup").count(), 2);

    let csv = std::fs::read_to_string(d.path().join("r.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(rows[0].starts_with("arm,policy,governor,applicable,reason,"));
    assert_eq!(rows.len(), 4);
    let md = std::fs::read_to_string(d.path().join("r.md")).unwrap();
    assert!(md.contains("**Verdict: ") && md.contains(&format!("| `{pinned}` |")));
    let html = std::fs::read_to_string(d.path().join("r.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg"));
    // Self-contained: no scripts, nothing loaded (the only URL is the SVG namespace).
    assert!(!html.contains("<script") && !html.contains("src=") && !html.contains("href="));
    assert!(html.contains("not applicable here"));
}

#[test]
fn human_output_is_a_table_with_a_verdict() {
    let (d, o) = run_fresh(&words(
        "compare --runs 2 --warmup 0 --policies os,cpus-set:0 -- true",
    ));
    assert_status(&o, 0, &[]);
    let out = text(&o.stdout);
    assert!(
        out.contains("Time (mean ± σ)") && out.contains("Range (min … max)"),
        "{out}"
    );
    assert!(out.contains("Threads") && out.contains("Exports"), "{out}");
    assert!(out.contains("Verdict: "), "{out}");
    let err = text(&o.stderr);
    assert!(
        err.contains("pinsight: journal: pinsight-compare-"),
        "{err}"
    );
    let journals: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".jsonl"))
        .collect();
    assert_eq!(
        journals.len(),
        1,
        "default journal in the current directory"
    );
}

#[test]
fn missing_program_is_one_line_and_exit_127_before_anything_runs() {
    let (d, o) = run_fresh(&words(
        "compare --journal j.jsonl -- pinsight-no-such-program-x",
    ));
    let err = assert_status(&o, 127, &["pinsight-no-such-program-x: command not found"]);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!d.path().join("j.jsonl").exists());
}

#[test]
fn usage_errors_exit_2() {
    let d = tempfile::tempdir().unwrap();
    for args in [
        vec!["compare"],
        vec!["compare", "--policies", "os,nonsense", "--", "true"],
        vec!["compare", "--governors", "turbo", "--", "true"],
        vec!["compare", "--runs", "0", "--", "true"],
        vec!["compare", "--threads", "0", "--", "true"],
        vec!["compare", "--resume", "no-such-journal.jsonl"],
    ] {
        let o = run(d.path(), &args);
        let err = assert_status(&o, 2, &[]);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn a_run_killed_by_a_signal_is_recorded_and_stops_the_experiment() {
    let (d, o) = run_fresh(&with_sh(
        "compare --runs 3 --policies os --journal j.jsonl --",
        "kill -9 $$",
    ));
    assert_status(
        &o,
        1,
        &[
            "killed by signal 9 (SIGKILL)",
            "pinsight compare --resume j.jsonl",
        ],
    );
    let j = journal_lines(&d.path().join("j.jsonl"));
    assert_eq!(j.len(), 2, "header + the failed warm-up");
    assert_eq!(j[1]["exit"]["signal"], 9);
    assert!(
        text(&o.stdout).contains("STOPPED after 1 of 4 runs"),
        "{}",
        text(&o.stdout)
    );
}

#[test]
fn a_timeout_kills_the_run_and_is_recorded() {
    let t = Instant::now();
    let (d, o) = run_fresh(&words(
        "compare --runs 2 --policies os --timeout 200ms --journal j.jsonl -- sleep 100",
    ));
    // Unkilled, the runs would take 300 s.
    assert!(t.elapsed() < HANG_GUARD, "{:?}", t.elapsed());
    assert_status(&o, 1, &["timed out"]);
    let j = journal_lines(&d.path().join("j.jsonl"));
    assert_eq!(j[1]["timed_out"], true);
}

#[test]
fn ignore_failure_goes_on_and_shows_the_failures() {
    let policies = format!("os,cpus:{}", usable_cpus()[0]);
    let (d, o) = run_fresh(&words(&format!("compare -i --runs 2 --warmup 0 --oversubscribe --policies {policies} --journal j.jsonl -- false")));
    assert_status(&o, 0, &[]);
    assert_eq!(journal_lines(&d.path().join("j.jsonl")).len(), 5);
    let out = flat(&text(&o.stdout));
    assert!(out.contains("0 (2 failed)"), "{out}");
    assert!(
        out.contains("2 failed runs (exited with code 1, ...)"),
        "{out}"
    );
}

#[test]
fn resume_refuses_a_different_experiment() {
    let (d, o) = run_fresh(&words(
        "compare --runs 2 --policies os --journal j.jsonl -- true",
    ));
    assert_status(&o, 0, &[]);
    let o = run(d.path(), &words("compare --resume j.jsonl -- false"));
    assert_status(&o, 2, &["cannot resume j.jsonl: it is a different experiment (command: journal has `true`, now `false`)"]);
    let o = run(d.path(), &words("compare --resume j.jsonl --runs 5"));
    assert_status(&o, 2, &["--runs: journal has 2, now 5"]);
    // A finished journal resumes to the same summary, running nothing.
    let o = run(
        d.path(),
        &["compare", "--resume", "j.jsonl", "--json", "-q"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(journal_lines(&d.path().join("j.jsonl")).len(), 1 + 3);
}

/// Sends SIGname to pid with kill(1) (the root package has no libc).
fn signal(pid: u32, name: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(ok.success());
}

fn leftover(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains(marker) {
                found.push(c);
            }
        }
    }
    found
}

fn wait_for_lines(p: &Path, n: usize, limit: Duration) {
    let t = Instant::now();
    while t.elapsed() < limit {
        if std::fs::read_to_string(p).is_ok_and(|s| s.lines().count() >= n) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("journal {} never reached {n} lines", p.display());
}

#[test]
fn ctrl_c_restores_governors_kills_the_run_keeps_the_journal_and_resumes() {
    let d = tempfile::tempdir().unwrap();
    let root = fake_tree(d.path(), Some("schedutil"), false);
    let marker = "0.3517";
    let mut child = pinsight(d.path())
        .env(MEASURE_ROOT, &root)
        .args(words(&format!(
            "compare --governors performance,powersave --policies os --runs 8 --warmup 0 --seed 11 --journal j.jsonl -- sleep {marker}"
        )))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let journal = d.path().join("j.jsonl");
    wait_for_lines(&journal, 3, HANG_GUARD);
    // A run is in flight now (each takes 0.35 s; 16 slots, so a loaded
    // machine that delays this thread still signals mid-experiment): the
    // governor is set.
    std::thread::sleep(Duration::from_millis(100));
    let during = governor_of(&root, 0);
    assert!(during == "performance" || during == "powersave", "{during}");
    signal(child.id(), "INT");
    let t = Instant::now();
    let out = loop {
        if child.try_wait().unwrap().is_some() {
            break child.wait_with_output().unwrap();
        }
        assert!(
            t.elapsed() < HANG_GUARD,
            "compare did not stop after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    use std::os::unix::process::ExitStatusExt;
    assert!(
        out.status.code() == Some(130) || out.status.signal() == Some(2),
        "{:?}",
        out.status
    );
    let err = text(&out.stderr);
    assert!(err.contains("pinsight compare --resume j.jsonl"), "{err}");
    assert!(
        text(&out.stdout).contains("INTERRUPTED by signal 2"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(governor_of(&root, 0), "schedutil");
    assert_eq!(governor_of(&root, 1), "schedutil");
    assert!(leftover(marker).is_empty(), "{:?}", leftover(marker));
    let lines = journal_lines(&journal);
    let done = lines.len() - 1;
    assert!((2..16).contains(&done), "{done} runs journaled");
    assert!(
        lines[1..].iter().all(|l| l["exit"]["code"] == 0),
        "the interrupted run is not journaled as a failure"
    );

    let o = run_measured_in(
        d.path(),
        &root,
        &["compare", "--resume", "j.jsonl", "--json", "-q"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let lines = journal_lines(&journal);
    let mut slots: Vec<u64> = lines[1..]
        .iter()
        .map(|l| l["slot"].as_u64().unwrap())
        .collect();
    slots.sort();
    assert_eq!(
        slots,
        (0..16).collect::<Vec<_>>(),
        "every slot exactly once"
    );
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids = arm_ids(&r);
    assert_eq!(ids, ["os@performance", "os@powersave"]);
    assert!(r["arms"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["measured"] == 8));
    assert_eq!(governor_of(&root, 0), "schedutil");
}

#[test]
fn sigterm_also_cleans_up_and_exits_143() {
    let d = tempfile::tempdir().unwrap();
    let marker = "0.4621";
    let mut child = pinsight(d.path())
        .args(words(&format!(
            "compare --policies os --runs 5 --journal j.jsonl -q -- sleep {marker}"
        )))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_lines(&d.path().join("j.jsonl"), 2, HANG_GUARD);
    signal(child.id(), "TERM");
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert!(
        status.code() == Some(143) || status.signal() == Some(15),
        "{status:?}"
    );
    assert!(leftover(marker).is_empty());
    assert!(journal_lines(&d.path().join("j.jsonl")).len() >= 2);
}

#[test]
fn governors_are_a_second_dimension_and_restored_after_a_normal_end() {
    let d = tempfile::tempdir().unwrap();
    let root = fake_tree(d.path(), Some("schedutil"), false);
    let log = d.path().join("seen");
    let script = format!(
        "echo $(cat {}) >> {}",
        root.join("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
            .display(),
        log.display()
    );
    let o = run_measured_in(
        d.path(),
        &root,
        &with_sh("compare --governors performance,powersave --policies os,cpus-set:0 --runs 2 --warmup 0 --json -q --", &script),
    );
    let r = report(&o);
    let ids = arm_ids(&r);
    assert_eq!(
        ids,
        [
            "os@performance",
            "os@powersave",
            "cpus-set:0@performance",
            "cpus-set:0@powersave"
        ]
    );
    let seen = std::fs::read_to_string(&log).unwrap();
    assert_eq!(seen.lines().filter(|l| *l == "performance").count(), 4);
    assert_eq!(seen.lines().filter(|l| *l == "powersave").count(), 4);
    assert_eq!(governor_of(&root, 0), "schedutil");
    assert_eq!(governor_of(&root, 1), "schedutil");
}

#[test]
fn without_cpufreq_governors_are_not_applicable_not_an_error() {
    let d = tempfile::tempdir().unwrap();
    let root = fake_tree(d.path(), None, false);
    let o = run_measured_in(
        d.path(),
        &root,
        &words("compare --governors performance --runs 2 --warmup 0 --json -- true"),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("governors: unavailable (no cpufreq:"), "{err}");
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    let gov_na = r["not_applicable"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["what"] == "governor performance");
    assert!(gov_na, "{}", r["not_applicable"]);
    if r["header"]["machine"]["kinds"].as_array().unwrap().len() > 1 {
        pinsight_testkit::skip_test!("the kind assertions below are for one-kind machines");
    }
    let na: Vec<&str> = strs(&r["not_applicable"], "what");
    // One kind: p-* use it (it is the fastest kind), e-* have no kind to use.
    assert_eq!(na, ["e-set", "e-pinned", "governor performance"]);
    assert!(r["not_applicable"][0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("needs at least two core kinds; this machine has one kind"));
    let ids = arm_ids(&r);
    assert_eq!(ids, ["os", "p-set", "p-pinned"]);
    assert!(r["verdict"]["caveats"].as_array().unwrap().iter().any(|c| c
        .as_str()
        .unwrap()
        .starts_with("e-set, e-pinned: not applicable here: needs at least two core kinds")));
}

#[test]
fn pmu_less_machine_with_rapl_shows_reasons_energy_and_edp() {
    let d = tempfile::tempdir().unwrap();
    let root = fake_tree(d.path(), None, true);
    // Each run "consumes" one joule per CPU it may use (+ a little pid
    // noise): os has 2 CPUs, cpus-set:0 one (both run 2 threads; nproc
    // would report OMP_NUM_THREADS, so it is unset for it).
    let f = root.join("sys/class/powercap/intel-rapl:0/energy_uj");
    let script = format!(
        "f={}; echo $(( $(cat $f) + $(env -u OMP_NUM_THREADS nproc) * 1000000 + $$ % 97 * 1000 )) > $f",
        f.display()
    );
    let o = run_measured_in(
        d.path(),
        &root,
        &with_sh("compare --threads 2 --policies os,cpus-set:0 --runs 6 --warmup 0 --seed 1 --export-json r.json --", &script),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = flat(&text(&o.stdout));
    assert!(
        out.contains("energy (package)") && out.contains("energy-delay product"),
        "{out}"
    );
    assert!(out.contains("cycles, instructions, IPC, cache references, cache misses, average frequency: unavailable (no hardware PMU"), "{out}");
    assert!(
        out.contains("energy (cores): unavailable (no core RAPL zone (found: package-0))"),
        "{out}"
    );
    assert!(out.contains("less energy"), "{out}");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("r.json")).unwrap()).unwrap();
    let metric = |arm: usize, key: &str| -> Value {
        r["arms"][arm]["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["key"] == key)
            .unwrap()
            .clone()
    };
    let e_os = metric(0, "energy_pkg_j")["summary"]["mean"]
        .as_f64()
        .unwrap();
    let e_pin = metric(1, "energy_pkg_j")["summary"]["mean"]
        .as_f64()
        .unwrap();
    assert!(
        (e_os - 2.05).abs() < 0.1 && (e_pin - 1.05).abs() < 0.1,
        "{e_os} {e_pin}"
    );
    assert!(metric(0, "edp_js")["summary"]["mean"].as_f64().unwrap() > 0.0);
    assert!(metric(0, "cycles")["unavailable"]
        .as_str()
        .unwrap()
        .starts_with("no hardware PMU"));
    assert!(metric(0, "cycles").get("summary").is_none());
    assert!(
        r["arms"][1]["energy_vs_baseline"]["ratio"]
            .as_f64()
            .unwrap()
            > 1.5
    );
    assert!(r["arms"][1]["edp_change_percent"].as_f64().is_some());
}

// ---- every arm runs the same experiment ----

#[test]
fn every_arm_runs_the_same_thread_count_and_exports() {
    let d = tempfile::tempdir().unwrap();
    let log = d.path().join("seen");
    let script = format!(
        "echo \"$OMP_NUM_THREADS $RAYON_NUM_THREADS $CILK_NWORKERS\" >> {}",
        log.display()
    );
    // No --threads: every arm gets the usable CPUs, including the set
    // policy with one CPU (it planned 1 thread against 2 for os before).
    let o = run(
        d.path(),
        &with_sh(
            "compare --policies os,cpus-set:0 --runs 2 --warmup 0 --journal j.jsonl --json -q --",
            &script,
        ),
    );
    let r = report(&o);
    let n = r["header"]["threads"].as_u64().unwrap();
    let usable = r["header"]["machine"]["usable_cpus"].as_str().unwrap();
    let cpus = pinsight_cpuset::CpuSet::parse_list(usable).unwrap().len() as u64;
    assert_eq!(n, cpus, "default: the usable CPUs");
    for a in r["arms"].as_array().unwrap() {
        assert_eq!(a["threads"], n, "{a}");
        let env: Vec<(String, String)> = serde_json::from_value(a["env"].clone()).unwrap();
        for k in ["OMP_NUM_THREADS", "RAYON_NUM_THREADS", "CILK_NWORKERS"] {
            assert!(
                env.contains(&(k.to_string(), n.to_string())),
                "{k}: {env:?}"
            );
        }
    }
    let seen = std::fs::read_to_string(&log).unwrap();
    assert_eq!(seen.lines().count(), 4);
    assert!(
        seen.lines().all(|l| l == format!("{n} {n} {n}")),
        "every run saw the same variables:\n{seen}"
    );
}

#[test]
fn a_pinned_policy_with_too_few_cpus_is_refused_before_any_run() {
    let (d, marker, script) = marking();
    let cpu = usable_cpus()[0];
    let policies = format!("os,cpus:{cpu}");
    let args = format!(
        "compare --threads 2 --policies {policies} --runs 1 --warmup 0 --journal j.jsonl --json -q"
    );
    let o = run(d.path(), &with_sh(&format!("{args} --"), &script));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("cpus:{cpu}: 2 threads")) && err.contains("--oversubscribe"),
        "{err}"
    );
    assert!(!marker.exists() && !d.path().join("j.jsonl").exists());

    // compare accepts --oversubscribe itself (it used to run it as the program).
    let o = run(
        d.path(),
        &with_sh(&format!("{args} --oversubscribe --"), &script),
    );
    let r = report(&o);
    assert_eq!(
        r["arms"][1]["plan"]["places"],
        serde_json::json!([cpu.to_string(), cpu.to_string()])
    );
    assert_eq!(r["header"]["oversubscribe"], true);
    assert!(marker.exists());
}

#[test]
fn latency_and_weights_files_reach_the_policies_that_need_them() {
    let d = tempfile::tempdir().unwrap();
    // A matrix of THIS machine's CPUs (another machine's is refused): the
    // lower-triangular CSV `pinsight latency` and core-to-core-latency
    // write, 20 ns between every two CPUs.
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let n: usize = online
        .trim()
        .rsplit([',', '-'])
        .next()
        .unwrap()
        .parse::<usize>()
        .unwrap()
        + 1;
    let csv: String = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| {
                    if j < i {
                        "20".to_string()
                    } else {
                        String::new()
                    }
                })
                .collect::<Vec<_>>()
                .join(",")
                + "\n"
        })
        .collect();
    let lat = d.path().join("lat.csv");
    std::fs::write(&lat, csv).unwrap();
    let base = "compare --threads 2 --runs 1 --warmup 0 --json -q";
    let o = run(
        d.path(),
        &words(&format!(
            "{base} --policies os,latency-group --latency {} --journal l.jsonl -- true",
            lat.to_str().unwrap()
        )),
    );
    let r = report(&o);
    assert_eq!(r["arms"][1]["id"], "latency-group");
    assert_eq!(r["arms"][1]["threads"], 2);

    std::fs::write(d.path().join("w.json"), r#"{"0": 1.0, "1": 2.0}"#).unwrap();
    let o = run(
        d.path(),
        &words(&format!(
            "{base} --policies os,balance --weights w.json --journal w.jsonl -- true"
        )),
    );
    let r = report(&o);
    assert_eq!(r["arms"][1]["id"], "balance");

    // A file no requested policy uses is a usage error naming it.
    let o = run(
        d.path(),
        &words("compare --weights w.json --policies os -- true"),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--weights w.json: applies to the balance policy only"));

    // A latency file that cannot be read is a usage error naming it, and
    // so is one that is not a matrix (compare reads it, the model parses).
    std::fs::write(d.path().join("bad.csv"), "1,x\n2,0\n").unwrap();
    for (file, says) in [
        ("missing.csv", "missing.csv: cannot read"),
        ("bad.csv", "bad.csv:1:2: 'x' is not a number of nanoseconds"),
    ] {
        let o = run(
            d.path(),
            &words(&format!(
                "compare --policies os,latency-group --latency {file} -- true"
            )),
        );
        assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
        assert!(text(&o.stderr).contains(says), "{}", text(&o.stderr));
    }
}

// ---- no experiment on the wrong machine ----

#[test]
fn recorded_machines_are_refused() {
    let (d, marker, script) = marking();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("crates/topology/tests/fixtures");
    let fixture = pinsight_testkit::fixtures::hwloc_all()
        .into_iter()
        .next()
        .expect("a recorded machine");
    let xml = std::fs::read_dir(root.join("xml"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "xml"))
        .unwrap();
    let cases: Vec<(Vec<&str>, Option<&Path>, &str)> = vec![
        (
            vec!["--fsroot", fixture.to_str().unwrap()],
            None,
            "--fsroot",
        ),
        (
            vec!["--hwloc-xml", xml.to_str().unwrap()],
            None,
            "--hwloc-xml",
        ),
        (vec![], Some(fixture.as_path()), "PINSIGHT_FSROOT"),
    ];
    for (flags, env, name) in cases {
        let mut c = pinsight(d.path());
        if let Some(e) = env {
            c.env("PINSIGHT_FSROOT", e);
        }
        let o = c
            .arg("compare")
            .args(&flags)
            .args(with_sh("--runs 1 --journal j.jsonl --", &script))
            .output()
            .unwrap();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains(name) && err.contains("on this machine"),
            "{name}: {err}"
        );
        assert!(!marker.exists() && !d.path().join("j.jsonl").exists());
    }
}

// ---- a typo is an error, not a command ----

#[test]
fn a_mistyped_option_is_an_error_not_the_program() {
    let d = tempfile::tempdir().unwrap();
    let marker = d.path().join("ran");
    let m = marker.to_str().unwrap();
    for args in [
        vec!["compare", "--runz", "3", "--", "touch", m],
        vec!["compare", "--runz", "3", "touch", m],
    ] {
        let o = run(d.path(), &args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("'--runz'"), "{err}");
        assert!(err.contains("a similar argument exists: '--runs'"), "{err}");
        assert!(!marker.exists(), "{args:?} ran the program");
    }
    // The program's own options still reach it, with or without `--`.
    for dashdash in [true, false] {
        let out = d.path().join(format!("args-{dashdash}"));
        let script = format!("echo \"$@\" > {}", out.display());
        let mut args = words("compare --policies os --runs 1 --warmup 0 -q --json --journal");
        let journal = format!("j-{dashdash}.jsonl");
        args.push(&journal);
        if dashdash {
            args.push("--");
        }
        args.extend(["sh", "-c", &script, "sh", "--its-own-flag", "-x"]);
        let o = run(d.path(), &args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
        assert_eq!(
            std::fs::read_to_string(&out).unwrap().trim(),
            "--its-own-flag -x"
        );
    }
}

// ---- no lost work ----

#[test]
fn output_paths_are_checked_before_anything_runs() {
    let (d, marker, script) = marking();
    for (flag, path) in [
        ("--export-json", "no/such/dir/r.json"),
        ("--export-csv", "no/such/dir/r.csv"),
        ("--export-markdown", "no/such/dir/r.md"),
        ("--export-html", "no/such/dir/r.html"),
        ("--journal", "no/such/dir/j.jsonl"),
        ("--export-csv", "."),
    ] {
        let o = run(
            d.path(),
            &with_sh(
                &format!("compare --policies os --runs 1 {flag} {path} --"),
                &script,
            ),
        );
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {path}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(&format!("{flag} {path}")), "{err}");
        assert!(!marker.exists(), "{flag} {path}: the program ran");
    }
    let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
    assert!(left.is_empty(), "nothing written: {left:?}");
    // An existing --journal is refused up front too (exit 2).
    std::fs::write(d.path().join("j.jsonl"), "").unwrap();
    let o = run(
        d.path(),
        &["compare", "--journal", "j.jsonl", "--", "sh", "-c", &script],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--resume j.jsonl"));
    assert!(!marker.exists());
}

#[test]
fn default_journal_names_never_collide() {
    let d = tempfile::tempdir().unwrap();
    // Take the default names of the next seconds, as another compare
    // started in the same second would.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for s in now..now + 30 {
        let (_, stamp) = pinsight_compare::setup::utc(s);
        std::fs::write(d.path().join(format!("pinsight-compare-{stamp}.jsonl")), "").unwrap();
    }
    let spawn = || {
        pinsight(d.path())
            .args(words(
                "compare --policies os --runs 1 --warmup 0 -q -- true",
            ))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    for c in [a, b] {
        let o = c.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    }
    let journals: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with("-2.jsonl") || n.ends_with("-3.jsonl"))
        .collect();
    assert_eq!(journals.len(), 2, "{journals:?}");
}

// ---- readable where users are ----

#[test]
fn tables_fit_80_columns_also_when_the_terminal_reports_0() {
    let d = tempfile::tempdir().unwrap();
    let cpus = usable_cpus();
    if cpus.len() < 2 {
        pinsight_testkit::skip_test!("needs two usable CPUs (have {})", cpus.len());
    }
    let (set, pair) = (
        format!("cpus-set:{}", cpus[0]),
        format!("cpus:{},{}", cpus[0], cpus[1]),
    );
    let policies = format!("os,{set},{pair},compact,scatter,kind-set:fastest,p-set");
    for columns in [None, Some("0")] {
        let mut c = pinsight(d.path());
        if let Some(v) = columns {
            c.env("COLUMNS", v);
        }
        let o = c
            .args(words(&format!(
                "compare --threads 2 --policies {policies} --runs 2 --warmup 0 --journal j-{columns:?}.jsonl -- true"
            )))
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let out = text(&o.stdout);
        for line in out.lines() {
            let w = pinsight_compare::view::layout::width(line);
            assert!(w <= 80, "COLUMNS={columns:?}: {w} columns:\n{line}\n{out}");
        }
        for arm in [
            "os",
            set.as_str(),
            pair.as_str(),
            "compact",
            "scatter",
            "p-set",
        ] {
            assert!(out.contains(arm), "{arm} missing:\n{out}");
        }
    }
}
