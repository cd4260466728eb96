//! `compare` on real programs that report their own result: sysbench's
//! events per second read with `--metric sysbench` (per-arm intervals, a
//! verdict on it), the fixed-duration note without `--metric`, each run's
//! output kept and labelled, and `--export-json` against hyperfine's own
//! export. A missing tool is a counted skip (pinsight_testkit::skip).

use crate::common_live::{assert_exit, entry};
use pinsight_testkit::premise::Live;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use tempfile::TempDir;

fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn pinsight(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pinsight"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("PINSIGHT_FSROOT")
        .output()
        .expect("pinsight starts")
}

fn json_of(o: &Output) -> Value {
    assert_exit(o, 0);
    serde_json::from_slice(&o.stdout).expect("--json prints JSON")
}

/// `compare --runs RUNS --warmup WARMUP --policies POLICIES --journal
/// JOURNAL` (what every test here gives), then `rest`.
fn compare<'a>(
    runs: &'a str,
    warmup: &'a str,
    policies: &'a str,
    journal: &'a str,
    rest: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "compare",
        "--runs",
        runs,
        "--warmup",
        warmup,
        "--policies",
        policies,
        "--journal",
        journal,
    ];
    args.extend(rest);
    args
}

/// `compare --runs 2 --warmup WARMUP --policies os --journal j.jsonl
/// --show-output REST` in `d`, which must succeed: what it printed on
/// stderr (the runs' output, labelled).
fn show_output(d: &Path, warmup: &str, rest: &[&str]) -> String {
    let rest = [&["--show-output"], rest].concat();
    let o = pinsight(d, &compare("2", warmup, "os", "j.jsonl", &rest));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{err}");
    err
}

const SYSBENCH: &[&str] = &["sysbench", "cpu", "--threads=2", "--time=1", "run"];

/// `pinsight --json compare --runs RUNS --warmup 0 --policies
/// os,cpus-set:0 --journal j.jsonl --seed SEED FLAGS -- sysbench cpu …` in
/// a new directory, which must succeed: the live premise held through
/// the test, the directory and the report; `None` after a counted skip.
fn sysbench_compare(runs: &str, seed: &str, flags: &[&str]) -> Option<(Live, TempDir, Value)> {
    let live = pinsight_testkit::premise::live_on_usable()?;
    if !on_path("sysbench") {
        pinsight_testkit::skip("sysbench is not installed (apt-get install sysbench)");
        return None;
    }
    let d = tempfile::tempdir().unwrap();
    let mut args = vec!["--json"];
    args.extend(compare(
        runs,
        "0",
        "os,cpus-set:0",
        "j.jsonl",
        &["--seed", seed],
    ));
    args.extend(flags);
    args.push("--");
    args.extend(SYSBENCH);
    let r = json_of(&pinsight(d.path(), &args));
    Some((live, d, r))
}

#[test]
fn sysbench_events_per_second_decide_the_verdict() {
    let Some((_live, d, r)) = sysbench_compare("3", "3", &["--metric", "sysbench"]) else {
        return;
    };
    assert_eq!(r["verdict"]["objective"], "events_per_s");
    for arm in r["arms"].as_array().unwrap() {
        let m = entry(&arm["metrics"], "key", "events_per_s").expect("events_per_s per arm");
        assert!(m["summary"]["mean"].as_f64().unwrap() > 0.0, "{m}");
        assert!(m["summary"]["mean_ci"]["lo"].is_number(), "interval: {m}");
        assert_eq!(m["program"]["better"], "higher");
    }
    assert!(
        r["arms"][1]["metrics_vs_baseline"][0]["versus"]["ratio"].is_number(),
        "{}",
        r["arms"][1]
    );
    // Every run's output is kept and named in its journal line.
    let line = &r["runs"][0];
    let file = d.path().join(line["output"]["path"].as_str().unwrap());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("events per second:"), "{text}");
    assert!(file.starts_with(d.path().join("j.jsonl.out")));
}

#[test]
fn fixed_duration_is_noticed_without_a_metric() {
    let Some((_live, _d, r)) = sysbench_compare("4", "4", &[]) else {
        return;
    };
    let means: Vec<f64> = r["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["metrics"][0]["summary"]["mean"].as_f64().unwrap())
        .collect();
    let (lo, hi) = (means[0].min(means[1]), means[0].max(means[1]));
    if hi / lo - 1.0 > 0.01 {
        // The rule needs wall times within 1%: a loaded machine may
        // stretch sysbench's start-up beyond that.
        pinsight_testkit::skip_test!(
            "sysbench's wall times differ by {:.1}% here (the machine is busy)",
            (hi / lo - 1.0) * 100.0
        );
    }
    let f = &r["verdict"]["fixed_duration"];
    assert_eq!(f["preset"], "sysbench", "{}", r["verdict"]);
    assert!(r["verdict"]["headline"]
        .as_str()
        .unwrap()
        .starts_with("Wall time cannot decide"));
    let caveats = r["verdict"]["caveats"].to_string();
    assert!(
        caveats.contains("program metric preset sysbench"),
        "{caveats}"
    );
}

#[test]
fn show_output_labels_every_run() {
    let d = tempfile::tempdir().unwrap();
    let err = show_output(d.path(), "1", &["--", "sh", "-c", "echo out; echo err >&2"]);
    for label in [
        "── pinsight: output of os, warm-up run 1 (slot 0) ──\nout\nerr\n",
        "── pinsight: output of os, measured run 1 (slot 1) ──\nout\nerr\n",
        "── pinsight: output of os, measured run 2 (slot 2) ──\nout\nerr\n",
    ] {
        assert!(err.contains(label), "{label} in:\n{err}");
    }
    assert_eq!(
        std::fs::read_to_string(d.path().join("j.jsonl.out/arm-os-run-2.txt")).unwrap(),
        "out\nerr\n"
    );
    // Runs print nothing on the terminal without --show-output.
    let o = pinsight(
        d.path(),
        &compare(
            "1",
            "0",
            "os",
            "k.jsonl",
            &["--", "sh", "-c", "echo secret-$((1+1))"],
        ),
    );
    // (The report shows the command, `secret-$((1+1))`, never its output.)
    assert!(!String::from_utf8_lossy(&o.stdout).contains("secret-2"));
    assert!(!String::from_utf8_lossy(&o.stderr).contains("secret-2"));
}

/// JSON type of a value, arrays by their first element.
fn kind(v: &Value) -> String {
    match v {
        Value::Array(a) => format!("array of {}", a.first().map_or("anything".into(), kind)),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Bool(_) => "bool".into(),
        Value::Null => "null".into(),
        Value::Object(_) => "object".into(),
    }
}

#[test]
fn export_json_has_every_field_of_hyperfines() {
    let Some(_live) = pinsight_testkit::premise::live_on_usable() else {
        return;
    };
    if !on_path("hyperfine") {
        pinsight_testkit::skip_test!("hyperfine is not installed (apt-get install hyperfine)");
    }
    let d = tempfile::tempdir().unwrap();
    let h = Command::new("hyperfine")
        .args([
            "-N",
            "--runs",
            "3",
            "--style",
            "none",
            "--export-json",
            "h.json",
            "true",
        ])
        .current_dir(d.path())
        .output()
        .unwrap();
    assert!(h.status.success(), "{}", String::from_utf8_lossy(&h.stderr));
    let o = pinsight(
        d.path(),
        &compare(
            "3",
            "0",
            "os",
            "j.jsonl",
            &["--export-json", "p.json", "--", "true"],
        ),
    );
    assert_exit(&o, 0);
    let read = |n: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(d.path().join(n)).unwrap()).unwrap()
    };
    let (theirs, ours) = (read("h.json"), read("p.json"));
    let t = theirs["results"][0].as_object().unwrap();
    for (k, v) in t {
        assert_eq!(
            kind(&ours["results"][0][k]),
            kind(v),
            "{k}: hyperfine {v}, pinsight {}",
            ours["results"][0][k]
        );
    }
    assert_eq!(ours["results"][0]["command"], "os: true");
    // pinsight's own export is all there beside it.
    assert!(ours["verdict"].is_object() && ours["arms"].is_array());
}

/// `--prepare`'s output is kept beside the runs' (`prepare-before-run-SLOT`)
/// and `--show-output` prints it labelled by the run it comes before.
#[test]
fn prepare_output_is_kept_and_labelled() {
    let d = tempfile::tempdir().unwrap();
    let err = show_output(
        d.path(),
        "0",
        &[
            "--prepare",
            "echo prepared; echo to-stderr >&2",
            "--",
            "echo",
            "measured",
        ],
    );
    for slot in 0..2 {
        let kept = std::fs::read_to_string(
            d.path()
                .join(format!("j.jsonl.out/prepare-before-run-{slot}.txt")),
        )
        .unwrap();
        assert_eq!(kept, "prepared\nto-stderr\n");
    }
    assert!(
        err.contains("output of prepare before os, measured run 1 (slot 0)"),
        "{err}"
    );
    assert!(
        err.contains("output of os, measured run 2 (slot 1)"),
        "{err}"
    );
}
