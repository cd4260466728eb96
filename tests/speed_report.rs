//! `pinsight speed` and `pinsight report` end to end: the weights round trip
//! into `plan balance`, JSON outputs, the time budget and what is said when
//! it is too small, recorded machines (`--fsroot`, `--latency`), and
//! the exit codes of bad input. Live measurements use tiny budgets.

use crate::common_cmd::{assert_has, assert_status, text, words};
use pinsight_latency::LoadMatrix;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn pinsight(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pinsight"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("PINSIGHT_FSROOT")
        .env("COLUMNS", "100")
        .args(args)
        .output()
        .unwrap()
}

/// Longest a live `pinsight speed`/`report` may take before it counts as
/// hung. Never a performance assertion: runners are shared and loaded.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// The speed report's own accounting: every CPU's slots (passes x slot
/// length, over the kernels) fit the per-CPU budget, and the measurement
/// finished (well within the hang guard).
fn assert_speed_accounting(speed: &Value, per_cpu_budget_s: f64) {
    let planned: f64 = speed["slots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["passes"].as_f64().unwrap() * s["slot_s"].as_f64().unwrap())
        .sum();
    assert!(
        planned > 0.0 && planned <= per_cpu_budget_s * (1.0 + 1e-9),
        "slots plan {planned} s per CPU, budget {per_cpu_budget_s} s: {}",
        speed["slots"]
    );
    let elapsed = speed["elapsed_s"].as_f64().unwrap();
    assert!(
        elapsed > 0.0 && elapsed < HANG_GUARD.as_secs_f64(),
        "{elapsed}"
    );
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

fn fixture(name: &str) -> String {
    pinsight_testkit::fixtures::hwloc(name)
        .display()
        .to_string()
}

const HYBRID: &str = "20em64t-hybrid-1p6c2t+2ca4co1t";

/// `pinsight --fsroot HYBRID report ARGS...` in `dir`: the recorded
/// i7-1370P laptop.
fn laptop_report(dir: &Path, args: &[&str]) -> Output {
    let root = fixture(HYBRID);
    let mut all = vec!["--fsroot", &root, "report"];
    all.extend_from_slice(args);
    pinsight(dir, &all)
}

/// CPUs this test process may use (what `speed` measures by default).
fn usable() -> Vec<usize> {
    let topo = pinsight_topology::discover(&pinsight_sys::FsRoot::live());
    topo.usable().iter().collect()
}

/// The HTML page loads nothing from elsewhere and runs no script.
fn assert_self_contained(page: &str) {
    for bad in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "<script",
        "<link",
        "@import",
        "url(http",
    ] {
        assert!(!page.contains(bad), "page references the outside: {bad}");
    }
    assert!(page.starts_with("<!DOCTYPE html>") && page.trim_end().ends_with("</html>"));
}

#[test]
fn speed_weights_feed_plan_balance() {
    let dir = tempfile::tempdir().unwrap();
    // 60 ms on each CPU (the budget is the total).
    let budget = format!("{}ms", 60 * pinsight_testkit::allowed_cpus().len());
    let out = ok(&pinsight(
        dir.path(),
        &words(&format!(
            "speed -q --budget {budget} --export-weights w.json"
        )),
    ));
    assert!(out.contains("Weights written to w.json"), "{out}");
    let w: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("w.json")).unwrap()).unwrap();
    assert_eq!(w["source"], "pinsight speed");
    let weights = w["weights"].as_object().unwrap();
    let mut cpus: Vec<usize> = weights.keys().map(|k| k.parse().unwrap()).collect();
    cpus.sort();
    assert_eq!(cpus, usable());
    let best = weights
        .values()
        .map(|v| v.as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!((best - 1.0).abs() < 1e-9, "the fastest CPU weighs 1: {w}");
    assert!(weights.values().all(|v| v.as_f64().unwrap() > 0.0));

    let balance = "plan balance --tasks 200 --weights w.json";
    let plan = ok(&pinsight(dir.path(), &words(balance)));
    assert!(plan.contains("capacity: from the weights file"), "{plan}");
    let json = ok(&pinsight(dir.path(), &words(&format!("{balance} --json"))));
    let v: Value = serde_json::from_str(&json).unwrap();
    assert!(v.is_object(), "plan --json is an object: {json}");
}

#[test]
fn speed_json_carries_the_method_and_every_chunk_count() {
    let dir = tempfile::tempdir().unwrap();
    let cpu = usable()[0].to_string();
    let out = ok(&pinsight(
        dir.path(),
        &words(&format!("speed --json -q --cpus {cpu} --budget 90ms")),
    ));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["kernels"], serde_json::json!(["int", "fp", "mem"]));
    // 90 ms over 3 kernels: int and fp 2 passes of 15 ms, mem one of 30 ms.
    assert_eq!(v["passes"], 2);
    let slots: Vec<(String, u64, f64)> = v["slots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["kernel"].as_str().unwrap().to_string(),
                s["passes"].as_u64().unwrap(),
                s["slot_s"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(slots.len(), 3);
    assert_eq!((slots[0].1, slots[1].1, slots[2].1), (2, 2, 1), "{slots:?}");
    assert!(
        (slots[0].2 - 0.015).abs() < 1e-9 && (slots[2].2 - 0.030).abs() < 1e-9,
        "{slots:?}"
    );
    assert_speed_accounting(&v, 0.090);
    let c = &v["cpus"][0];
    assert_eq!(c["cpu"].as_u64().unwrap().to_string(), cpu);
    for r in c["results"].as_array().unwrap() {
        let (med, lo, hi) = (
            r["median"].as_f64().unwrap(),
            r["ci_low"].as_f64().unwrap(),
            r["ci_high"].as_f64().unwrap(),
        );
        assert!(lo <= med && med <= hi && med > 0.0, "{r}");
        let (samples, chunks, disturbed) = (
            r["samples"].as_u64().unwrap(),
            r["chunks"].as_u64().unwrap(),
            r["disturbed"].as_u64().unwrap(),
        );
        assert!(
            samples >= 1 && samples <= chunks && disturbed <= chunks,
            "{r}"
        );
    }
    assert_eq!(c["misplaced_chunks"], 0);
    // One CPU measured: no sibling pair, so no SMT yield, and why.
    assert!(v["smt_yield"]["value"].is_null(), "{}", v["smt_yield"]);
    assert_eq!(
        v["smt_yield"]["unavailable"],
        "no SMT siblings among the measured CPUs"
    );
    // Handed to balance, that file is refused with speed's reason.
    let file = dir.path().join("speed.json");
    std::fs::write(&file, &out).unwrap();
    let o = pinsight(
        dir.path(),
        &["plan", "balance", "--smt-yield", file.to_str().unwrap()],
    );
    assert_status(&o, 2, &["speed: unavailable: no SMT siblings"]);
}

#[test]
fn speed_refuses_recorded_machines_and_bad_flags() {
    let dir = tempfile::tempdir().unwrap();
    let o = pinsight(dir.path(), &["speed", "--fsroot", &fixture(HYBRID)]);
    assert_status(&o, 2, &["speed measures on this machine only"]);
    for (args, needle) in [
        (
            &["speed", "--per-kind", "0"][..],
            "'0' for '--per-kind [<N>]'",
        ),
        (&["speed", "--cpus", "4000"][..], "offline or not allowed"),
        (&["speed", "--kernels", "gpu"][..], "int, fp or mem"),
        (&["speed", "--budget", "0s"][..], "'0s' for '--budget"),
    ] {
        let o = pinsight(dir.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(needle),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
}

#[test]
fn report_finishes_within_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let out = ok(&pinsight(
        dir.path(),
        &words("report -q --budget 1s --export-html box.html --export-json box.json --export-latency box.latency.json"),
    ));
    // A hang guard only: a loaded runner stretches wall-clock time; what
    // the report promises is checked on its own accounting below.
    let wall = t.elapsed();
    assert!(wall < HANG_GUARD, "report --budget 1s took {wall:?}");
    assert!(
        out.contains("\nReport: box.html (open it in a browser), box.json"),
        "{out}"
    );
    let page = std::fs::read_to_string(dir.path().join("box.html")).unwrap();
    assert_self_contained(&page);
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("box.json")).unwrap())
            .unwrap();
    assert_eq!(v["budget_s"], 1.0);
    let elapsed = v["elapsed_s"].as_f64().unwrap();
    assert!(
        elapsed > 0.0 && elapsed < HANG_GUARD.as_secs_f64(),
        "{elapsed}"
    );
    let cpus = usable();
    if cpus.len() >= 2 {
        // 1 s on a small machine: the plan fits both (latency 200 ms, speed
        // 60+ ms per CPU), and the speed plan stays within the budget.
        let speed = &v["speed"];
        assert!(speed.is_object(), "{}", v["skipped"]);
        let per_cpu = speed["budget_per_cpu_s"].as_f64().unwrap();
        assert!(
            per_cpu * cpus.len() as f64 <= 1.0,
            "speed planned {per_cpu} s x {} CPUs",
            cpus.len()
        );
        assert_speed_accounting(speed, per_cpu);
        if v["latency"].is_null() {
            // Speed overran on a loaded runner and left latency no time:
            // the report must say so rather than stay silent.
            let skipped = v["skipped"].as_array().unwrap();
            assert!(!skipped.is_empty(), "latency missing without a reason");
            assert!(!dir.path().join("box.latency.json").exists());
            assert!(!v["suggestions"].as_array().unwrap().is_empty());
            pinsight_testkit::skip(format!(
                "report_finishes_within_its_budget: latency not measured under load, its checks not made: {skipped:?}"
            ));
            return;
        }
        assert!(page.matches("<svg").count() >= 2, "topology and heatmap");
        assert!(dir.path().join("box.latency.json").exists());
        assert!(out.contains("latency matrix box.latency.json"), "{out}");
        let m = pinsight_latency_model::LatencyMatrix::load(&dir.path().join("box.latency.json"))
            .unwrap();
        assert_eq!(m.cpus, cpus);
    }
    assert!(!v["suggestions"].as_array().unwrap().is_empty());
}

#[test]
fn too_small_a_budget_says_what_was_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    let out = ok(&pinsight(
        dir.path(),
        &words("report --budget 0.1s --export-html tiny.html --export-json tiny.json --export-latency tiny.latency.json"),
    ));
    // Hang guard only; that nothing was measured is checked below.
    assert!(t.elapsed() < HANG_GUARD);
    assert!(out.contains("Not measured:"), "{out}");
    assert!(out.contains("speed: skipped — the 100 ms budget"), "{out}");
    if usable().len() >= 2 {
        assert!(
            out.contains("latency: skipped — the 100 ms budget"),
            "{out}"
        );
        assert!(out.contains("to measure both"), "{out}");
    }
    let v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("tiny.json")).unwrap())
            .unwrap();
    assert!(v["speed"].is_null() && v["latency"].is_null());
    assert!(v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s.as_str().unwrap().contains("--budget")));
    let page = std::fs::read_to_string(dir.path().join("tiny.html")).unwrap();
    assert!(page.contains("speed: skipped"));
    // With --json, stdout is the JSON alone and the warning goes to stderr.
    let o = pinsight(
        dir.path(),
        &words("report --json --budget 0.1s --export-html tiny2.html --export-json tiny2.json --export-latency tiny2.latency.json"),
    );
    let v: Value = serde_json::from_str(&ok(&o)).unwrap();
    assert!(v["speed"].is_null());
    assert!(
        text(&o.stderr).contains("warning: speed: skipped"),
        "{}",
        text(&o.stderr)
    );
    // Zero is a usage error.
    assert_eq!(
        pinsight(dir.path(), &["report", "--budget", "0s"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn recorded_hybrid_laptop_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = ok(&laptop_report(
        dir.path(),
        &words("--export-html laptop.html --export-json laptop.json"),
    ));
    assert!(
        out.starts_with("13th Gen Intel(R) Core(TM) i7-1370P\n"),
        "{out}"
    );
    assert_has(
        &out,
        &[
            "speed: not measured (the machine is recorded; pass --speed FILE)",
            "latency: not measured (the machine is recorded; pass --latency FILE)",
            "P-core is ranked fastest (CPUs 0-11)",
        ],
    );
    let page = std::fs::read_to_string(dir.path().join("laptop.html")).unwrap();
    assert_self_contained(&page);
    assert!(page.contains("recorded machine ("));
    assert!(page.contains("L2 2 MiB · CPUs 12-15"));
    // --json on stdout equals the file, and is valid.
    let o = laptop_report(
        dir.path(),
        &words("--json --export-html laptop2.html --export-json laptop2.json --export-latency laptop2.latency.json"),
    );
    let stdout: Value = serde_json::from_str(&ok(&o)).unwrap();
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("laptop2.json")).unwrap())
            .unwrap();
    assert_eq!(stdout, file);
    assert_eq!(stdout["topology"]["kinds"].as_array().unwrap().len(), 2);
}

#[test]
fn latency_from_a_file_on_a_recorded_machine() {
    let dir = tempfile::tempdir().unwrap();
    // The i9-12900K matrix has 24 CPUs: not the 20-CPU laptop's.
    let csv = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("crates/latency/tests/fixtures/Intel_Core_i9-12900K.csv");
    let o = laptop_report(dir.path(), &["--latency", csv.to_str().unwrap()]);
    assert_status(
        &o,
        2,
        &["CPU(s) 20-23 that this machine (online 0-19) lacks"],
    );
    // Its first 20 CPUs stand in for a matrix measured on the laptop.
    let m = pinsight_latency_model::LatencyMatrix::load(&csv).unwrap();
    let sub = m.submatrix(&(0..20).collect::<Vec<_>>()).unwrap();
    std::fs::write(dir.path().join("m.csv"), sub.to_csv()).unwrap();
    let out = ok(&laptop_report(
        dir.path(),
        &words("--latency m.csv --export-html lap.html --export-json lap.json --export-latency lap.latency.json"),
    ));
    assert!(
        !out.contains("latency: "),
        "a given matrix is not 'not measured': {out}"
    );
    assert_has(
        &out,
        &[
            "speed: not measured",
            "For 2 chatty threads",
            // The latency-best 4 are E-cores on this matrix: said so, with
            // the file to use.
            "For 4 communicating threads use E-core CPUs 12,13,14,15",
            "--latency m.csv -- CMD",
        ],
    );
    assert!(
        !dir.path().join("lap.latency.json").exists(),
        "the given file is named, not copied"
    );
    let page = std::fs::read_to_string(dir.path().join("lap.html")).unwrap();
    assert_self_contained(&page);
    assert!(page.contains("loaded from m.csv"));
    assert_eq!(page.matches("<svg").count(), 2);
}

/// `report --speed FILE`: the speed measured elsewhere (here a made-up
/// but consistent measurement of the recorded i7-1370P, the browser
/// test's) is shown instead of "not measured", from `speed --json`'s
/// document and from a report's own; a file of another machine, or one
/// that is no speed measurement, is refused naming --speed (exit 2).
#[test]
fn a_recorded_machine_reports_the_speed_measured_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let speed =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/report/i7-1370P.speed.json");
    let speed = speed.to_str().unwrap();
    let report =
        |extra: &[&str]| laptop_report(dir.path(), &[&["--export-html", "r.html"], extra].concat());
    let out = ok(&report(&["--speed", speed, "--export-json", "r.json"]));
    assert!(!out.contains("speed: not measured"), "{out}");
    assert!(out.contains("P-core/E-core speedup factor ≈ 1.54"), "{out}");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(json["speed"]["cpus"].as_array().map(Vec::len), Some(20));
    // A report's own document gives the same speed.
    let again = ok(&report(&["--speed", "r.json", "--export-json", "r2.json"]));
    assert!(
        again.contains("P-core/E-core speedup factor ≈ 1.54"),
        "{again}"
    );
    // Another machine's measurement (a CPU 99), or no measurement at all.
    let mut foreign: Value =
        serde_json::from_str(&std::fs::read_to_string(speed).unwrap()).unwrap();
    foreign["cpus"][0]["cpu"] = 99.into();
    std::fs::write(dir.path().join("foreign.json"), foreign.to_string()).unwrap();
    std::fs::write(dir.path().join("other.json"), r#"{"hello": 1}"#).unwrap();
    for (file, says) in [
        (
            "foreign.json",
            "--speed foreign.json: it measured CPU(s) 99 that this machine (online 0-19) lacks",
        ),
        ("other.json", "--speed other.json: not a speed measurement"),
        ("missing.json", "--speed missing.json: "),
    ] {
        let o = report(&["--speed", file]);
        assert_eq!(o.status.code(), Some(2), "{file}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains(says),
            "{file}: {}",
            text(&o.stderr)
        );
        assert_eq!(text(&o.stderr).lines().count(), 1, "{}", text(&o.stderr));
    }
    let o = report(&["--speed", speed, "--no-speed"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
}
