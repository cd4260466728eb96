//! `pinsight latency` end to end: honest precision (`--runs`, what the ±
//! covers), the CSV it writes and the CSV files it reads (several matrices
//! from `core-to-core-latency -b 1,2 --csv`), and output paths checked
//! before anything is measured. Measurements get tiny caps.

use crate::common_cli;

use crate::common_cmd::{assert_exit, assert_fits_80, usage_error, words};
use common_cli::*;
use pinsight_latency::measure::{choose_cpus, usable_cpus};
use pinsight_sys::FsRoot;
use std::path::Path;
use std::time::{Duration, Instant};

/// A command that would measure stops long before this; only a hang (or a
/// measurement that should not have started) reaches it.
const HANG_GUARD: Duration = Duration::from_secs(30);

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `core-to-core-latency -b 1,2 --csv` on 3 CPUs: the CAS matrix, then the
/// single-writer single-reader one, straight after each other on stdout.
const TWO_BENCHMARKS: &str = ",,\n50.5,,\n60,70,\n,,\n80,,\n90,100,\n";

/// Any two CPUs this test process may run on (the `pinsight` it starts
/// inherits its affinity), as `(a, b)` with `a < b`; `None`, after a
/// logged skip, when there are fewer than two.
fn two_cpus() -> Option<(usize, usize)> {
    let (online, allowed) = usable_cpus(&FsRoot::live()).expect("read this process's CPUs");
    match choose_cpus(None, &online, &allowed) {
        Ok(cpus) => Some((cpus[0], cpus[1])),
        Err(e) => {
            pinsight_testkit::skip(format!("live latency: {e}"));
            None
        }
    }
}

/// `latency` measuring the pair `cpus` (`runs` times where given) with a
/// cap of 20 ms a pair, then `rest`'s words.
fn measure(cpus: &str, runs: Option<u32>, rest: &str) -> Call {
    let runs = runs.map(|n| format!("--runs {n}")).unwrap_or_default();
    pinsight(&words(&format!(
        "latency --cpus {cpus} {runs} --max-time-per-pair 20ms {rest}"
    )))
}

#[test]
fn help_says_what_the_interval_covers_and_what_the_csv_holds() {
    let o = ok(&["latency", "--help"]);
    // Clap wraps to the terminal: compare with whitespace collapsed.
    let help = o.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    for needle in [
        "--runs <N>",
        "within-run",
        "does not cover the variation between runs",
        "run-to-run",
        "--benchmark <N>",
        "-b 1,2 --csv",
        "per-pair medians",
        "core-to-core-latency writes means",
        "before anything is measured",
    ] {
        assert!(
            help.contains(needle),
            "--help lacks {needle:?}:\n{}",
            o.stdout
        );
    }
}

#[test]
fn repeat_zero_and_repeat_with_a_file_are_usage_errors() {
    let o = pinsight(&["latency", "--runs", "0"]).run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr.contains("--runs") && o.says("at least 1 (runs: 1 to 100000)"),
        "{}",
        o.stderr
    );
    let csv = latency_fixture("Apple_M1_Pro.csv");
    let o = pinsight(&["latency", "--latency", s(&csv), "--runs", "2"]).run();
    assert_eq!(o.code, 2, "{}", o.stderr);
}

/// Issue 34: a zero duration caps nothing; it is a usage error naming
/// the flag (exit 2, one line), never a failed measurement (exit 1).
#[test]
fn zero_durations_are_usage_errors() {
    for flag in ["--max-time-per-pair", "--budget"] {
        for value in ["0s", "0", "0ms", "-1s"] {
            let o = pinsight(&["latency", &format!("{flag}={value}")]).run();
            assert_eq!(o.code, 2, "{flag} {value}: {}", o.stderr);
            assert!(o.stderr.contains(flag), "{flag} {value}: {}", o.stderr);
            assert_eq!(o.stderr.trim().lines().count(), 1, "{}", o.stderr);
            assert!(o.stdout.is_empty(), "{}", o.stdout);
        }
    }
}

#[test]
fn live_measurement_still_refuses_a_recorded_machine_with_repeat() {
    let xml = repo().join("crates/topology/tests/fixtures/xml/hybrid-i7-1370p-like.v3.xml");
    let o = pinsight(&["--hwloc-xml", s(&xml), "latency", "--runs", "3"]).run();
    assert_exit(&o, 2, &["--hwloc-xml"]);
    let f = hwloc_fixture("20em64t-hybrid-1p6c2t+2ca4co1t");
    let o = pinsight(&["latency", "--runs", "3"])
        .env("PINSIGHT_FSROOT", f.as_os_str())
        .run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stdout.is_empty());
}

/// Item 7: a path that cannot be written fails at once (exit 2, naming
/// the path), not after a measurement that here would take many seconds.
#[test]
fn unwritable_output_paths_fail_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir").join("x.csv");
    for flag in ["--export-csv", "--export-svg", "--export-png"] {
        let t0 = Instant::now();
        let o = pinsight(&[
            "latency",
            flag,
            s(&missing),
            "--target-ci",
            "0.001%",
            "--max-time-per-pair",
            "5s",
            "--runs",
            "3",
        ])
        .run();
        let took = t0.elapsed();
        assert!(took < HANG_GUARD, "{flag}: took {took:?}");
        assert_eq!(o.code, 2, "{flag}: {}", o.stderr);
        assert!(
            o.first_err_line()
                .contains(&format!("{flag} {}", missing.display()))
                && o.first_err_line().contains("does not exist"),
            "{}",
            o.stderr
        );
        assert!(o.stdout.is_empty(), "{}", o.stdout);
        // Checked before the measurement is even set up: a recorded machine
        // (which measuring refuses) gets the path error, not that refusal.
        let xml = repo().join("crates/topology/tests/fixtures/xml/hybrid-i7-1370p-like.v3.xml");
        let o = pinsight(&["--hwloc-xml", s(&xml), "latency", flag, s(&missing)]).run();
        assert_eq!(o.code, 2, "{flag}: {}", o.stderr);
        assert!(
            o.first_err_line()
                .contains(&format!("{flag} {}", missing.display()))
                && !o.says("measured on this machine"),
            "{}",
            o.stderr
        );
    }
    // The bare path of the brief: a directory that does not exist at all.
    let o = pinsight(&["latency", "--export-csv", "/nonexistent/x.csv"]).run();
    assert_exit(&o, 2, &["/nonexistent/x.csv"]);
    // A directory given as the file.
    let o = pinsight(&["latency", "--export-png", s(dir.path())]).run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.says("is a directory"), "{}", o.stderr);
}

#[test]
fn repeat_reports_run_to_run_spread_in_text_and_json() {
    let Some((a, b)) = two_cpus() else { return };
    let cpus = format!("{a},{b}");
    let o = measure(&cpus, Some(3), "--json").ok();
    let doc = o.json();
    let m = &doc["measured"];
    assert_eq!(m["repeats"], 3);
    assert_eq!(m["runs_completed"], 3);
    assert!(
        m["ci_covers"]
            .as_str()
            .unwrap()
            .contains("within one run only"),
        "{m}"
    );
    // One pair: its run-to-run spread is both the median and the maximum.
    let rr = &m["run_to_run"];
    let (max, median) = (
        rr["max_rel"].as_f64().unwrap(),
        rr["median_rel"].as_f64().unwrap(),
    );
    assert_eq!(rr["pairs"], 1, "{m}");
    assert!(max.is_finite() && median >= 0.0 && max == median, "{m}");
    let pair = &doc["stats"][1][0];
    let runs = pair["run_medians_ns"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "{pair}");
    let mut v: Vec<f64> = runs.iter().map(|x| x.as_f64().unwrap()).collect();
    v.sort_by(f64::total_cmp);
    assert_eq!(pair["median_ns"].as_f64().unwrap(), v[1]);

    let o = measure(&cpus, Some(2), "").ok();
    assert!(
        o.stdout.contains("in 2 runs of the matrix")
            && o.stdout
                .contains("± is the larger of the within-run 95% CI and the run-to-run")
            && o.stdout.contains("Run-to-run spread over 1 pair: median ±"),
        "{}",
        o.stdout
    );
    assert_fits_80(&o.stdout);
}

#[test]
fn one_run_says_its_interval_is_within_run_only() {
    let Some((a, b)) = two_cpus() else { return };
    let cpus = format!("{a},{b}");
    // --runs 1 given: one run even on a virtual machine.
    let o = measure(&cpus, Some(1), "").ok();
    assert!(!o.stderr.contains("to show the drift"), "{}", o.stderr);
    assert!(
        o.stdout.contains(&format!("within-run  CPUs ({b},{a})"))
            && o.stdout.contains("does not")
            && o.stdout.contains("see --runs N"),
        "{}",
        o.stdout
    );
}

#[test]
fn measured_csv_says_medians_and_reads_back() {
    let Some((a, b)) = two_cpus() else { return };
    let cpus = format!("{a},{b}");
    let o = measure(&cpus, Some(1), "--export-csv m.csv")
        .writes("m.csv")
        .ok();
    let text = std::fs::read_to_string(o.path("m.csv")).unwrap();
    assert!(
        text.starts_with(
            "# pinsight latency (cas): one-way ns, per-pair medians (core-to-core-latency --csv writes means)\n"
        ),
        "{text}"
    );
    let back = ok(&["latency", "--latency", s(&o.path("m.csv")), "--json"]).json();
    assert_eq!(back["cpus"], serde_json::json!([a, b]));
}

#[test]
fn multi_benchmark_csv_shows_the_first_matrix_or_the_one_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("b12.csv");
    std::fs::write(&path, TWO_BENCHMARKS).unwrap();

    let o = ok(&["latency", "--latency", s(&path)]);
    assert!(
        o.stdout
            .contains("Showing matrix 1 of 2 in the file (--benchmark N picks another)")
            && o.stdout.contains("Min  latency: 50.5 ns"),
        "{}",
        o.stdout
    );
    let second = ["latency", "--latency", s(&path), "--benchmark", "2"];
    let doc = ok(&[&second[..], &["--json"]].concat()).json();
    assert_eq!(doc["ns"][2][1], 100.0);
    assert_eq!(doc["file"]["benchmark"], 2);
    assert_eq!(doc["file"]["benchmarks"].as_array().unwrap().len(), 2);

    usage_error(
        &["latency", "--latency", s(&path), "--benchmark", "3"],
        &["holds 2 matrices: 1 (lines 1-3, 3 CPUs); 2 (lines 4-6, 3 CPUs)"],
    );
    // --benchmark only means something for a file.
    let o = pinsight(&["latency", "--benchmark", "2"]).run();
    assert_eq!(o.code, 2, "{}", o.stderr);

    // Re-exported: one matrix, with the comment line, which reads back.
    let o = pinsight(&[&second[..], &["--export-csv", "second.csv"]].concat())
        .writes("second.csv")
        .ok();
    let text = std::fs::read_to_string(o.path("second.csv")).unwrap();
    assert!(
        text.starts_with("# pinsight latency: one-way ns as read from b12.csv"),
        "{text}"
    );
    let again = ok(&["latency", "--latency", s(&o.path("second.csv")), "--json"]).json();
    assert_eq!(again["ns"][2][1], 100.0);
}

/// On a virtual machine, without --runs, the matrix is measured three times
/// spaced apart and a line says so; on bare metal once, silently.
#[test]
fn a_virtual_machine_measures_three_spaced_matrices_unless_runs_is_given() {
    let Some((a, b)) = two_cpus() else { return };
    let cpus = format!("{a},{b}");
    let vm = pinsight_topology::vm::detect(&FsRoot::live()).is_some();
    let started = Instant::now();
    let o = measure(&cpus, None, "--json").ok();
    let m = &o.json()["measured"];
    if vm {
        assert_eq!(m["repeats"], 3, "{m}");
        assert!(
            o.stderr
                .contains("pinsight: virtual machine: 3 runs, 1.0 s apart, to show the drift"),
            "{}",
            o.stderr
        );
        // Three runs started a second apart: at least two seconds.
        assert!(started.elapsed() >= Duration::from_secs(2));
    } else {
        assert_eq!(m["repeats"], 1, "{m}");
        assert!(!o.stderr.contains("to show the drift"), "{}", o.stderr);
    }
}
