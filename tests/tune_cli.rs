//! `pinsight tune --from FILE` end to end: the runs of Adnan, Array 19
//! (2023), Tables 4–5, generated
//! static and dynamic programs on the recorded i7-1370P (6P+8E, SMT on the
//! P-cores), a one-kind recorded machine, the JSON contract, and every bad
//! input as a one-line usage error (exit 2).

use crate::common_cli;

use crate::common_cmd::{assert_fits_80, assert_has, help_says, strs, usage_error};
use common_cli::*;
use std::path::PathBuf;

fn fixture(name: &str) -> String {
    hwloc_fixture(name).to_str().unwrap().to_owned()
}

const HYBRID: &str = "20em64t-hybrid-1p6c2t+2ca4co1t";
/// Four sockets of two cores with two threads each: one kind of core.
const ONE_KIND: &str = "16em64t-4s2c2t";

fn tune(args: &[&str]) -> Out {
    let mut argv = vec!["tune"];
    argv.extend_from_slice(args);
    let o = pinsight(&argv).env("COLUMNS", "80").run();
    assert_eq!(o.code, 0, "{}: exit {}\n{}", o.argv, o.code, o.stderr);
    o
}

fn on(machine: &str, args: &[&str]) -> Out {
    let root = fixture(machine);
    let mut argv = vec!["--fsroot", root.as_str(), "tune"];
    argv.extend_from_slice(args);
    let o = pinsight(&argv).env("COLUMNS", "80").run();
    assert_eq!(o.code, 0, "{}: exit {}\n{}", o.argv, o.code, o.stderr);
    o
}

/// [`on`] with `--from` the table `file` of tests/data/tune, then `extra`.
fn on_runs(machine: &str, file: &str, extra: &[&str]) -> Out {
    let runs = tune_data(file);
    on(machine, &[&["--from", runs.as_str()], extra].concat())
}

fn flat(s: &str) -> String {
    s.lines().map(str::trim).collect::<Vec<_>>().join(" ")
}

fn fits_80(o: &Out) {
    for l in o.stdout.lines() {
        assert!(l.chars().count() <= 80, "{}: wider than 80: {l}", o.argv);
    }
}

/// Through the CLI: the runs of Adnan, Array 19 (2023), Tables 4–5 (4P+8E, i5-1240P)
/// fit sf ≈ 2 and the hybrid row, measured 0.323 s, is predicted within 5%.
#[test]
fn seed_table_through_from_on_a_declared_machine() {
    let o = tune(&[
        "--from",
        &tune_data("seed-runs.csv"),
        "--machine",
        "4P+8E",
        "--json",
    ]);
    let j = o.json();
    let sf = j["params"]["sf"]["value"].as_f64().unwrap();
    assert!((1.9..2.3).contains(&sf), "sf {sf}");
    assert_eq!(j["model"], "dynamic");
    let hybrid = j["predictions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["p"] == 4 && p["e"] == 8 && p["smt"] == 0)
        .expect("4P+8E predicted");
    let pred = hybrid["predicted_s"].as_f64().unwrap();
    assert!((pred / 0.323 - 1.0).abs() < 0.05, "predicted {pred}");
    assert_eq!(hybrid["measured_s"], 0.323);
    assert_eq!(j["recommended"]["p"], 4);
    assert_eq!(j["recommended"]["e"], 8);
}

#[test]
fn json_contract_fields_are_present_and_typed() {
    let o = on_runs(HYBRID, "static-6p8e.csv", &["--json"]);
    let j = o.json();
    assert!(j["model"] == "static" || j["model"] == "dynamic");
    for p in ["f", "sf", "smt_gain", "t1", "contention"] {
        assert!(j["params"][p]["value"].is_f64(), "{p}");
        let ci = j["params"][p]["ci"].as_array().unwrap();
        assert!(ci.len() == 2 && ci[0].is_f64() && ci[1].is_f64(), "{p}");
        assert!(j["params"][p]["status"].is_string(), "{p}");
    }
    for k in ["p", "e", "smt", "threads"] {
        assert!(j["recommended"][k].is_u64(), "{k}");
    }
    assert!(j["recommended"]["predicted_s"].is_f64());
    assert!(j["recommended"]["ci"].is_array());
    assert!(j["runner_up"]["p"].is_u64());
    assert!(j["gap"].is_f64());
    let preds = j["predictions"].as_array().unwrap();
    // 6P+8E with one sibling per P-core: (p, e, smt ≤ p) for p 0..6, e 0..8, minus 0P+0E.
    let want: usize = (0..=6u64).map(|p| 9 * (p as usize + 1)).sum::<usize>() - 1;
    assert_eq!(preds.len(), want);
    for p in preds {
        assert!(p["predicted_s"].is_f64() && p["ci"].is_array() && p["runs"].is_u64());
    }
    assert!(j["fit"]["r2"].is_f64());
    assert!(j["fit"]["candidates"].as_array().unwrap().len() >= 2);
    assert_eq!(j["goal"], "time");
    assert_eq!(j["one_kind"], false);
    assert_eq!(j["machine"]["p_cores"], 6);
    assert_eq!(j["machine"]["e_cores"], 8);
    assert!(j["validation"].is_array());
    assert!(j["evidence"]["other_kind"]["cost"].is_f64());
    let dialects = j["dialects"].as_array().unwrap();
    let names: Vec<&str> = dialects
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["omp-places", "kmp-hw-subset", "taskset", "pinsight"]
    );
    for d in dialects {
        assert!(d["text"].is_string() || d["error"].is_string(), "{d}");
    }
}

/// A static split: the words say the E-cores cost; a dynamic one: they help.
#[test]
fn static_and_dynamic_programs_get_different_words() {
    let s = on_runs(HYBRID, "static-6p8e.csv", &[]);
    let d = on_runs(HYBRID, "dynamic-6p8e.csv", &[]);
    fits_80(&s);
    fits_80(&d);
    let (sf, df) = (flat(&s.stdout), flat(&d.stdout));
    assert_has(
        &sf,
        &[
            "no E-cores",
            "adding the 8 E-cores costs",
            "splits work statically (static model fits",
        ],
    );
    assert_has(
        &df,
        &[
            "8 E-cores:",
            "leaving out the E-cores costs",
            "shares work dynamically",
        ],
    );
    insta::assert_snapshot!("tune_static_6p8e", s.stdout);
    insta::assert_snapshot!("tune_dynamic_6p8e", d.stdout);
}

#[test]
fn recommendation_in_every_dialect_or_the_planners_reason() {
    let o = on_runs(HYBRID, "static-6p8e.csv", &[]);
    let f = flat(&o.stdout);
    // 6 P-cores with their siblings: CPUs 0-11 of the i7-1370P.
    assert_has(
        &f,
        &[
            "export OMP_NUM_THREADS='12'",
            "OMP_PLACES=",
            "taskset -c 0-11 CMD",
            "pinsight run cpus-set:0-11 --threads 12 -- CMD",
            "kmp-hw-subset:",
            // 6 P-cores, both threads each: libomp's efficiency 1 (no
            // CPUID core types in the recorded sysfs).
            "export KMP_HW_SUBSET='6c:eff1,2t'",
        ],
    );
    let pinned = on_runs(HYBRID, "static-6p8e.csv", &["--pinned"]);
    assert!(
        flat(&pinned.stdout).contains("pinsight run cpus:"),
        "{}",
        pinned.stdout
    );
}

#[test]
fn all_lists_every_configuration() {
    let short = on_runs(HYBRID, "dynamic-6p8e.csv", &[]);
    let all = on_runs(HYBRID, "dynamic-6p8e.csv", &["--all"]);
    assert!(all.stdout.lines().count() > short.stdout.lines().count() + 200);
    fits_80(&all);
}

#[test]
fn one_kind_machine_says_so_and_chooses_threads_and_smt() {
    let o = on_runs(ONE_KIND, "one-kind-8c.csv", &[]);
    fits_80(&o);
    let f = flat(&o.stdout);
    assert_has(
        &f,
        &[
            "This machine has one kind of core, so tune chose the thread count and SMT only",
            "use 8 cores, 8 SMT siblings",
        ],
    );
    let j = on_runs(ONE_KIND, "one-kind-8c.csv", &["--json"]).json();
    assert_eq!(j["one_kind"], true);
    assert_eq!(j["params"]["sf"]["status"], "one_kind");
    assert!(j["evidence"]["other_kind"].is_null());
    insta::assert_snapshot!("tune_one_kind_8c", o.stdout);
}

#[test]
fn runs_the_machine_does_not_allow_are_a_warning() {
    // The 6P+8E runs on a declared 4P+8E: 6P configurations do not fit.
    let runs = tune_data("dynamic-6p8e.csv");
    let on_4p8e = ["--from", runs.as_str(), "--machine", "4P+8E+smt"];
    let j = tune(&[&on_4p8e[..], &["--json"]].concat()).json();
    let outside = j["outside_machine"].as_array().unwrap();
    assert!(outside.iter().any(|c| c["p"] == 6), "{outside:?}");
    assert!(j["recommended"]["p"].as_u64().unwrap() <= 4);
    let t = tune(&on_4p8e);
    assert_has(&flat(&t.stdout), &["do not fit this machine"]);
}

#[test]
fn bad_input_exits_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| -> String {
        let p: PathBuf = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let missing = write("missing.csv", "p,e,time_s\n1,0,2.0\n");
    let negative = write("negative.csv", "p,e,smt,time_s\n1,0,0,2.0\n2,0,0,-1\n");
    let single = write("single.csv", "p,e,smt,time_s\n4,0,0,1.0\n4,0,0,1.1\n");
    let bad_line = write("bad.csv", "p,e,smt,time_s\n1,0,0,2.0\n1,0\n");
    let seed = tune_data("seed-runs.csv");
    let m = ["--machine", "4P+8E"];
    let t = |extra: &[&str]| {
        let mut v = vec!["tune"];
        v.extend_from_slice(extra);
        v.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let refuse = |argv: Vec<String>, needles: &[&str]| {
        usage_error(&argv, needles);
    };
    refuse(
        t(&["--from", &missing, m[0], m[1]]),
        &["missing.csv", "lacks column 'smt'"],
    );
    refuse(
        t(&["--from", &negative, m[0], m[1]]),
        &["line 3", "time_s", "positive"],
    );
    refuse(
        t(&["--from", &single, m[0], m[1]]),
        &[
            "single.csv",
            "1 configuration",
            "need at least 2",
            "the design for this machine runs 1P+0E+0smt",
        ],
    );
    refuse(
        t(&["--from", &bad_line, m[0], m[1]]),
        &["line 3", "2 fields"],
    );
    refuse(
        t(&["--from", &seed, "--goal", "fast", m[0], m[1]]),
        &["unknown goal 'fast'", "time, energy, edp"],
    );
    refuse(
        t(&["--from", &seed, "--goal", "energy", m[0], m[1]]),
        &["goal energy needs the energy_j column"],
    );
    refuse(
        t(&["--from", &seed, m[0], m[1], "--", "ls"]),
        &["'--from <FILE>' cannot be used with '[COMMAND]...'"],
    );
    refuse(
        t(&["--from", &seed, "--machine", "P4"]),
        &["'P4'", "--machine", "allowed"],
    );
    refuse(
        t(&["--from", "/nonexistent/runs.csv", m[0], m[1]]),
        &["/nonexistent/runs.csv", "cannot read"],
    );
    refuse(
        t(&["--from", &seed, "--runs", "5", m[0], m[1]]),
        &["--runs"],
    );
    refuse(t(&["--machine", "4P+8E"]), &["required arguments"]);
    refuse(
        t(&[]),
        &["required arguments were not provided: <--from <FILE>|--resume <JOURNAL>|COMMAND>"],
    );
    let root = fixture(HYBRID);
    refuse(
        vec![
            "--fsroot".into(),
            root,
            "tune".into(),
            "--".into(),
            "ls".into(),
        ],
        &["use --from"],
    );
}

#[test]
fn help_says_what_tune_does_and_fits_80_columns() {
    let help = help_says(
        "tune",
        &[
            "dynamic",
            "static",
            "--from",
            "energy_j",
            "JSON",
            "Examples:",
            "outside_machine",
        ],
    );
    assert_fits_80(&help);
}

/// Runs with energy_j: the energy and EDP goals recommend other
/// configurations than time does (generated power 12 W + 9 W/P-core +
/// 2 W/E-core + 1.5 W/sibling: fewer P-cores save energy).
#[test]
fn energy_and_edp_goals_use_the_energy_column() {
    let file = tune_data("energy-6p8e.csv");
    let get = |goal: &str| on(HYBRID, &["--from", &file, "--goal", goal, "--json"]).json();
    let (t, e, d) = (get("time"), get("energy"), get("edp"));
    let pick = |j: &serde_json::Value| {
        let r = &j["recommended"];
        (r["p"].as_u64(), r["e"].as_u64(), r["smt"].as_u64())
    };
    assert_eq!(pick(&t), (Some(6), Some(8), Some(6)));
    assert_eq!(pick(&e), (Some(1), Some(8), Some(0)));
    assert_ne!(pick(&d), pick(&t));
    assert_eq!(e["goal"], "energy");
    assert!(e["recommended"]["energy_j"]["value"].is_f64());
    assert!(d["recommended"]["edp"]["value"].is_f64());
    let per_p = e["power"]["params"]["per_p_w"]["value"].as_f64().unwrap();
    assert!((per_p - 9.0).abs() < 0.3, "{per_p}");
    let text = on(HYBRID, &["--from", &file, "--goal", "energy"]);
    fits_80(&text);
    assert!(
        flat(&text.stdout).contains("more energy"),
        "{}",
        text.stdout
    );
}

/// `--from` without `--machine`: the machine the runs imply (the largest P,
/// E and SMT counts), named on the Machine line, in a note and in JSON.
#[test]
fn from_without_machine_names_the_machine_it_inferred() {
    let o = tune(&["--from", &tune_data("static-6p8e.csv")]);
    fits_80(&o);
    let first = o.stdout.lines().next().unwrap_or_default();
    assert!(
        first.contains("inferred from the runs: 6P+8E+smt"),
        "{}",
        o.stdout
    );
    let j = tune(&["--from", &tune_data("static-6p8e.csv"), "--json"]).json();
    assert_eq!(j["machine"]["p_cores"], 6);
    assert_eq!(j["machine"]["e_cores"], 8);
    assert_eq!(j["machine"]["smt_per_p_core"], 1);
    assert!(j["notes"][0]
        .as_str()
        .unwrap()
        .contains("inferred from the runs"));
    assert_eq!(j["recommended_by"], "model");
    assert!(j["caveats"].as_array().unwrap().is_empty());
    assert_eq!(j["recommended"]["extrapolated"], false);
}

/// sf fitted at its bound 16 with nothing measured to pin it (hybrid
/// runs gain little from their E-cores, no E-only run): the model's pick
/// (8P+16E, measured 18% slower than the best) is not recommended; the
/// best measured is, with the `at_bound` caveat in JSON and in words.
#[test]
fn sf_at_its_bound_unbracketed_gets_the_best_measured() {
    let csv = tune_data("e-cores-gain-nothing.csv");
    let o = tune(&["--from", &csv, "--machine", "8P+16E"]);
    fits_80(&o);
    let text = flat(&o.stdout);
    assert!(
        text.contains("use 8 P-cores, no SMT, 8 E-cores, the best measured"),
        "{}",
        o.stdout
    );
    assert!(text.contains("sits at its upper bound 16"), "{}", o.stdout);
    let j = tune(&["--from", &csv, "--machine", "8P+16E", "--json"]).json();
    assert_eq!(j["recommended_by"], "best_measured");
    assert_eq!(j["params"]["sf"]["bound"], "upper");
    let c = &j["caveats"][0];
    assert_eq!(c["kind"], "at_bound", "{c}");
    assert_eq!(c["param"], "sf");
    assert_eq!(c["bound"], "upper");
    assert_eq!(c["limit"], 16.0);
    assert_eq!(j["recommended"]["p"], 8);
    assert_eq!(j["recommended"]["e"], 8);
    assert_eq!(j["recommended"]["measured_s"], 5.5);
}

/// Runs the models cannot explain: tune says why it does not trust the
/// fit and recommends the best measured configuration, in 80 columns.
#[test]
fn an_unexplained_program_gets_the_best_measured_and_the_reasons() {
    let csv = tune_data("unexplained-6p8e.csv");
    let o = tune(&["--from", &csv, "--machine", "6P+8E+smt"]);
    fits_80(&o);
    let text = flat(&o.stdout);
    assert!(text.contains("the best measured"), "{}", o.stdout);
    assert!(text.contains("the model is not trusted"), "{}", o.stdout);
    assert!(text.contains("not well enough to trust"), "{}", o.stdout);
    let j = tune(&["--from", &csv, "--machine", "6P+8E+smt", "--json"]).json();
    assert_eq!(j["recommended_by"], "best_measured");
    let kinds: Vec<&str> = strs(&j["caveats"], "kind");
    assert!(kinds.contains(&"low_r2"), "{kinds:?}");
    assert!(j["recommended"]["measured_s"].is_f64());
}
