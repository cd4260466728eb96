//! Numbers that always round-trip (issue 34): a figure a program prints
//! is finite or a failed measurement of that metric with the reason, a
//! journal line is read back before the run counts, and a journal with a
//! line that is no record still reports and resumes, naming the line.
//! Also: the runs' output directory is checked before a journal is made,
//! and a `--metric` JSON pointer escapes only `~0` and `~1`.

use crate::common_cmd::{assert_status, text, words};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn pinsight(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pinsight"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("PINSIGHT_FSROOT")
        .env_remove("PINSIGHT_KINDS")
        .env_remove("PINSIGHT_TEST_MEASURE_ROOT")
        .env_remove("PINSIGHT_TEST_TUNE_SIM")
        .env("COLUMNS", "80")
        .args(args)
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(!text(&o.stderr).contains("error"), "{}", text(&o.stderr));
}

/// Every line of a journal, as JSON: each reads, none holds a `null`
/// where a number was (a figure, a metric).
fn lines(path: &Path) -> Vec<Value> {
    let t = std::fs::read_to_string(path).unwrap();
    t.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .inspect(|v| {
            if v["type"] == "run" {
                for f in v["output"]["figures"].as_array().into_iter().flatten() {
                    assert!(f[1].is_number(), "{f} in {v}");
                }
            }
        })
        .collect()
}

const COMPARE: &[&str] = &[
    "compare",
    "-q",
    "--policies",
    "os,p-set",
    "--runs",
    "3",
    "--warmup",
    "0",
];

/// [`COMPARE`] in `dir`, then `rest`.
fn compare(dir: &Path, rest: &[&str]) -> Output {
    pinsight(dir, &[COMPARE, rest].concat())
}

/// The run lines of a journal ([`lines`]).
fn runs(path: &Path) -> Vec<Value> {
    lines(path)
        .into_iter()
        .filter(|v| v["type"] == "run")
        .collect()
}

#[test]
fn a_figure_of_1e999_is_no_number_and_the_experiment_reports_and_resumes() {
    let d = tempfile::tempdir().unwrap();
    let args = ["--journal", "k1.jsonl", "--", "echo", "took 1e999 s"];
    ok(&compare(d.path(), &args));
    assert_eq!(runs(&d.path().join("k1.jsonl")).len(), 6);
    let r = pinsight(d.path(), &["compare", "-q", "--resume", "k1.jsonl"]);
    ok(&r);
    assert!(
        text(&r.stdout).contains("complete: 6 runs"),
        "{}",
        text(&r.stdout)
    );
    // A program metric that reads 1e999 or -1e400: a failed measurement
    // of that metric, with the reason; the runs count.
    for (i, v) in ["v=1e999", "v=-1e400"].iter().enumerate() {
        let j = format!("m{i}.jsonl");
        let args = [
            "--journal",
            &j,
            "--metric",
            r"x=v=([-\d.e]+)",
            "--",
            "echo",
            v,
        ];
        ok(&compare(d.path(), &args));
        let runs = runs(&d.path().join(&j));
        assert_eq!(runs.len(), 6);
        let why = runs[0]["metrics"]["x"]["unavailable"].as_str().unwrap();
        assert!(why.ends_with(&format!("not finite: {}", &v[2..])), "{why}");
        ok(&pinsight(d.path(), &["compare", "-q", "--resume", &j]));
    }
}

#[test]
fn a_tune_of_a_program_printing_1e999_reports_and_resumes() {
    let d = tempfile::tempdir().unwrap();
    let mut args = words("tune -q --runs 2 --warmup 0 --journal t.jsonl -- echo");
    args.push("took 1e999 s");
    ok(&pinsight(d.path(), &args));
    let all = lines(&d.path().join("t.jsonl"));
    assert!(all.iter().any(|v| v["type"] == "run"), "no run journaled");
    ok(&pinsight(d.path(), &["tune", "-q", "--resume", "t.jsonl"]));
}

#[test]
fn a_journal_with_lines_that_do_not_read_still_reports_and_resumes() {
    let d = tempfile::tempdir().unwrap();
    let args = ["--journal", "old.jsonl", "--", "echo", "took 2.5 s"];
    ok(&compare(d.path(), &args));
    // What a pinsight that wrote 1e999 as a figure left: `null` where a
    // number goes, in runs 2 and 4 (lines 3 and 5).
    let p = d.path().join("old.jsonl");
    let text0 = std::fs::read_to_string(&p).unwrap();
    let bad: String = text0
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i == 2 || i == 4 {
                l.replace(",2.5]", ",null]")
            } else {
                l.to_string()
            }
        })
        .map(|l| l + "\n")
        .collect();
    assert_eq!(bad.matches(",null]").count(), 2, "{bad}");
    std::fs::write(&p, &bad).unwrap();
    let r = pinsight(d.path(), &["compare", "-q", "--resume", "old.jsonl"]);
    assert_eq!(r.status.code(), Some(0), "{}", text(&r.stderr));
    let err = text(&r.stderr);
    let warned: Vec<&str> = err.lines().filter(|l| l.contains("skipped")).collect();
    assert_eq!(warned.len(), 2, "{err}");
    for (w, n) in warned.iter().zip([3, 5]) {
        assert!(
            w.starts_with(&format!(
                "pinsight: warning: journal old.jsonl: line {n}: not a record: invalid type: null"
            )),
            "{err}"
        );
    }
    // The two skipped runs ran again: the experiment is complete.
    assert!(
        text(&r.stdout).contains("complete: 6 runs"),
        "{}",
        text(&r.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(&p).unwrap().lines().count(),
        1 + 6 + 2
    );
}

#[test]
fn a_link_or_a_file_at_journal_out_is_refused_before_the_journal_is_made() {
    let d = tempfile::tempdir().unwrap();
    let elsewhere = d.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, d.path().join("j.jsonl.out")).unwrap();
    std::fs::write(d.path().join("f.jsonl.out"), "").unwrap();
    for j in ["j.jsonl", "f.jsonl"] {
        let args = ["--journal", j, "--", "true"];
        let o = compare(d.path(), &args);
        let err = assert_status(&o, 1, &[&format!("{j}.out: it is not a directory")]);
        assert!(!d.path().join(j).exists(), "{j} was created: {err}");
    }
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    // Resumed: refused before the journal is opened for writing.
    let args = ["--journal", "r.jsonl", "--", "echo", "x"];
    ok(&compare(d.path(), &args));
    let out = d.path().join("r.jsonl.out");
    std::fs::remove_dir_all(&out).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &out).unwrap();
    let before = std::fs::read_to_string(d.path().join("r.jsonl")).unwrap();
    let o = pinsight(d.path(), &["compare", "-q", "--resume", "r.jsonl"]);
    assert_status(&o, 1, &["r.jsonl.out: it is not a directory"]);
    assert_eq!(
        std::fs::read_to_string(d.path().join("r.jsonl")).unwrap(),
        before
    );
}

#[test]
fn a_json_pointer_escape_other_than_tilde_0_and_1_is_refused() {
    let d = tempfile::tempdir().unwrap();
    for bad in ["x=json:/a/~2", "x=json:/a~"] {
        let args = ["--metric", bad, "--journal", "j.jsonl", "--", "true"];
        let o = compare(d.path(), &args);
        let err = assert_status(&o, 2, &["escapes only ~0 (for ~) and ~1 (for /)"]);
        assert_eq!(err.trim_end().lines().count(), 1, "{bad}: {err}");
        assert!(!d.path().join("j.jsonl").exists());
    }
}
