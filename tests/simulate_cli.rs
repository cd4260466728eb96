//! `pinsight simulate`: the multi-program experiment of Saez and
//! Prieto-Matias (APSys '22, §5) on a simulated machine, end
//! to end through the binary (help, human and JSON output, the machine
//! from --machine or a recorded topology, one-line usage errors, exit 2).

use crate::common_cli;

use crate::common_cmd::{
    assert_exit, assert_fits_80, assert_one_line, assert_usage_error, dir_with, help_says, words,
};
use common_cli::*;
use serde_json::Value;
use std::path::PathBuf;

fn mix() -> &'static str {
    static MIX: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MIX.get_or_init(|| {
        let p: PathBuf = repo().join("crates/sched-model/tests/data/mix16.csv");
        p.to_str().unwrap().to_string()
    })
}

fn s(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// `simulate`, the `machine` flags, `--programs` the acceptance mix, then
/// `rest`'s words.
fn simulate<'a>(machine: &[&'a str], rest: &'a str) -> Vec<&'a str> {
    let mut args = vec!["simulate"];
    args.extend(machine);
    args.extend(["--programs", mix()]);
    args.extend(words(rest));
    args
}

fn policy<'a>(j: &'a Value, name: &str) -> &'a Value {
    j["policies"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["policy"] == name)
        .unwrap_or_else(|| panic!("{name} in {j}"))
}

#[test]
fn help_defines_every_metric_with_its_formula() {
    help_says(
        "simulate",
        &[
            "slowdown           Tᵢ / Bᵢ",
            "unfairness         max slowdown / min slowdown",
            "STP                Σ Bᵢ / Tᵢ",
            "ANTT               mean of Tᵢ / Bᵢ",
            "aggregate speedup  Σ (Sᵢ / Tᵢ − 1)",
        ],
    );
}

#[test]
fn json_carries_the_metrics_and_reproduces_the_seed() {
    let args = simulate(&["--machine", "8P+8E"], "--seed 7 --json");
    let o = ok(&args);
    let j = o.json();
    assert_eq!(j["machine"]["big"], 8);
    assert_eq!(j["machine"]["small"], 8);
    assert_eq!(j["policies"].as_array().unwrap().len(), 4);
    for p in j["policies"].as_array().unwrap() {
        for k in ["aggregate_speedup", "stp", "antt", "unfairness"] {
            assert!(p[k].as_f64().is_some_and(f64::is_finite), "{k} in {p}");
        }
        let progs = p["programs"].as_array().unwrap();
        assert_eq!(progs.len(), 16);
        assert!(progs
            .iter()
            .all(|q| q["slowdown"].as_f64().unwrap() >= 1.0 - 1e-9));
    }
    let agg = |n: &str| policy(&j, n)["aggregate_speedup"].as_f64().unwrap();
    let unf = |n: &str| policy(&j, n)["unfairness"].as_f64().unwrap();
    assert!(agg("to") >= 1.1 * agg("aarr"), "{j}");
    assert!(unf("acfs") < unf("aarr"), "{j}");
    // Deterministic: the same seed gives the same document.
    assert_eq!(ok(&args).stdout, o.stdout);
}

#[test]
fn human_output_fits_80_columns_with_a_verdict() {
    let o = ok(&simulate(
        &["--machine", "8P+8E"],
        "--schedulers aarr,to --sf-estimate classes:1.67,1.97",
    ));
    assert_fits_80(&o.stdout);
    assert!(
        o.stdout.contains("Verdict: highest throughput:"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.lines().any(|l| l.starts_with("to ")));
    assert!(!o.stdout.lines().any(|l| l.starts_with("acfs")));
}

#[test]
fn machine_from_a_recorded_hybrid_counts_cores() {
    let h = hwloc_fixture("20em64t-hybrid-1p6c2t+2ca4co1t");
    let o = ok(&simulate(
        &["--fsroot", s(&h)],
        "--schedulers aarr --runs 1 --json",
    ));
    let j = o.json();
    // 6 P-cores with 2 threads each (CPUs 0-11), 8 E-cores (12-19).
    assert_eq!(j["machine"]["big"], 6, "{j}");
    assert_eq!(j["machine"]["small"], 8);
    assert_eq!(j["machine_source"], "topology");
    assert!(o.says("machine from the topology: P-core"), "{}", o.stderr);
}

#[test]
fn declared_kinds_make_a_machine() {
    let h = hwloc_fixture("16em64t-4s2c2t");
    let o = ok(&simulate(
        &["--fsroot", s(&h), "--kinds", "0-7:P,8-15:E"],
        "--schedulers to --runs 1 --json",
    ));
    let j = o.json();
    // The declaration splits SMT siblings (CPU n and n + 8 share a core):
    // each CPU counts as one, and the note says so.
    assert_eq!(j["machine"]["big"], 8, "{j}");
    assert_eq!(j["machine"]["small"], 8, "{j}");
    assert!(o.says("(0-7, 8 CPUs) big"), "{}", o.stderr);
}

#[test]
fn one_kind_is_refused_in_one_line() {
    let h = hwloc_fixture("16em64t-4s2c2t");
    let o = pinsight(&simulate(&["--fsroot", s(&h)], "")).run();
    let first = assert_usage_error(&o);
    assert!(
        first.starts_with("pinsight: error: simulate needs two core kinds or --machine"),
        "{}",
        o.stderr
    );
}

#[test]
fn bad_input_exits_2_naming_it() {
    let dir = dir_with(&[(
        "bad.csv",
        "# mix\nname,instructions,sf\na,1e9,2\nb,1e9,zero\n",
    )]);
    let bad = dir.path().join("bad.csv");
    let missing = dir.path().join("missing.csv");
    let both = ["--machine", "8P+8E"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            simulate(&["--machine", "8P"], ""),
            "--machine '8P': one kind only",
        ),
        (
            simulate(&both, "--sf-estimate td"),
            "--sf-estimate 'td': 'td' is not an SF estimate",
        ),
        (
            simulate(&both, "--schedulers os,cfs"),
            "--schedulers: 'cfs' is not a scheduler (allowed: os, aarr, to, acfs)",
        ),
        (
            vec!["simulate", "--machine", "8P+8E", "--programs", s(&missing)],
            "cannot read it",
        ),
        (
            vec!["simulate", "--machine", "8P+8E", "--programs", s(&bad)],
            "line 4, column sf: 'zero' is not a speedup factor",
        ),
        (
            simulate(&both, "--runs 0"),
            "invalid value '0' for '--runs <N>'",
        ),
    ];
    for (args, phrase) in cases {
        assert_one_line(&pinsight(&args).run(), 2, &[phrase]);
    }
}

/// The human report of the acceptance mix (golden): the tables and the
/// verdict, as users see them.
#[test]
fn human_report_golden() {
    let o = ok(&simulate(&["--machine", "8P+8E"], "--seed 1"));
    insta::with_settings!({ snapshot_path => "snapshots", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!("simulate_mix16_8p8e_exact", o.stdout);
    });
}

#[test]
fn endless_input_is_refused_not_simulated_forever() {
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("long.csv");
    std::fs::write(&long, "name,instructions,sf\na,1e15,100\nb,1e15,100\n").unwrap();
    let o = pinsight(&["simulate", "--machine", "1P+1E", "--programs", s(&long)]).run();
    assert_exit(&o, 2, &["long.csv: os (the run did not end within"]);
    assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
}
