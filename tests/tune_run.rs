//! `pinsight tune -- CMD` end to end: the live runner (crate
//! `pinsight-tune`) behind the command line.
//!
//! - Simulated (test-only `PINSIGHT_TEST_TUNE_SIM`: times from a known
//!   model, nothing runs): the whole design and validation on the recorded
//!   i7-1370P, the JSON contract, a budget cut resumed to the same answer
//!   as an uninterrupted tune.
//! - Live on this machine's CPUs: `pinsight workload pi` tuned and resumed to the same answer, with declared kinds
//!   over two usable CPUs, Ctrl-C then `--resume`, and the refusals.

use crate::common_cli;

use crate::common_cmd::{on_fsroot, text, with_sh, words};
use common_cli::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Generous bound for what should take a moment: catches hangs, never
/// measures speed.
const HANG_GUARD: Duration = Duration::from_secs(60);
const SIM: &str = "PINSIGHT_TEST_TUNE_SIM";
const STATIC: &str = "model=static,t1=10,f=0.95,sf=2,smt_gain=0.3,noise=0.02,seed=1";
const HYBRID: &str = "20em64t-hybrid-1p6c2t+2ca4co1t";

/// pinsight in `dir` (`crate::common_cmd::pinsight_in`), 80 columns wide.
fn pinsight_in(dir: &Path) -> Command {
    let mut c = crate::common_cmd::pinsight_in(dir);
    c.env("COLUMNS", "80");
    c
}

fn run(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = pinsight_in(dir);
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(args).output().unwrap()
}

fn json_of(o: &Output) -> Value {
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&o.stdout), text(&o.stderr)))
}

/// The CPUs this test may use (affinity ∩ online), in order.
fn usable_cpus() -> Vec<usize> {
    pinsight_testkit::usable_cpus()
}

fn journal_runs(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count().saturating_sub(1))
        .unwrap_or(0)
}

/// A simulated static program (sf 2, γ 0.3, f 0.95) on the recorded
/// 6P+8E laptop: 11 design configurations, two validation runs journaled
/// apart, the model and its parameters recovered, the JSON contract.
#[test]
fn simulated_tune_of_a_recorded_hybrid_runs_the_design_and_checks_it() {
    let d = tempfile::tempdir().unwrap();
    let root = hwloc_fixture(HYBRID);
    let o = run(
        d.path(),
        &[(SIM, STATIC)],
        &on_fsroot(
            root.to_str().unwrap(),
            "tune --journal t.jsonl --json -- true",
        ),
    );
    let j = json_of(&o);
    assert_eq!(j["model"], "static", "{j}");
    for p in ["f", "sf", "smt_gain"] {
        let v = j["params"][p]["value"].as_f64().unwrap();
        let ci = &j["params"][p]["ci"];
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        assert!(lo <= v && v <= hi, "{p}: {v} outside [{lo}, {hi}]");
    }
    let sf = j["params"]["sf"]["value"].as_f64().unwrap();
    assert!((sf - 2.0).abs() < 0.1, "sf {sf}");
    let r = &j["recommended"];
    assert!(r["predicted_s"].as_f64().unwrap() > 0.0, "{r}");
    assert_eq!(
        j["predictions"].as_array().unwrap().len(),
        // p 0..=6 × e 0..=8 × smt 0..=p, less the configuration of no core.
        9 * (1..=7).sum::<usize>() - 1,
        "one prediction per configuration the machine allows"
    );
    let v = j["validation"].as_array().unwrap();
    assert_eq!(v.len(), 2, "{j}");
    for row in v {
        let e = row["error"].as_f64().unwrap();
        assert!(e.abs() < 0.05, "validation error {e}: {row}");
    }
    assert_eq!(j["design_runs"], 11 * 3, "{j}");
    assert_eq!(j["validation_runs"], 2 * 3, "{j}");
    // The validation configurations were not in the design (listed on
    // stderr before the runs).
    let err = text(&o.stderr)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for row in v {
        let c = format!("{}P+{}E+{}smt", row["p"], row["e"], row["smt"]);
        assert!(!err.contains(&c), "{c} was in the design: {err}");
    }
    assert_eq!(journal_runs(&d.path().join("t.jsonl")), 11 * 4);
    assert_eq!(journal_runs(&d.path().join("t.validate.jsonl")), 2 * 4);
    let err = text(&o.stderr);
    assert!(err.contains("11 configurations"), "{err}");
    assert!(
        !err.contains("--resume"),
        "a complete tune needs no resume: {err}"
    );
}

/// A budget stops the tune part way (the runs not started are listed);
/// `--resume` finishes it, and the answer equals an uninterrupted tune's.
#[test]
fn a_budget_cut_resumed_gives_the_uninterrupted_answer() {
    let d = tempfile::tempdir().unwrap();
    let root = hwloc_fixture(HYBRID);
    let root = root.to_str().unwrap();
    let whole = json_of(&run(
        d.path(),
        &[(SIM, STATIC)],
        &on_fsroot(root, "tune --journal a.jsonl --json -- true"),
    ));
    let cut = run(
        d.path(),
        &[(SIM, STATIC)],
        &on_fsroot(root, "tune --journal b.jsonl --budget 90s --json -- true"),
    );
    let err = text(&cut.stderr);
    assert!(
        err.contains("pinsight tune --resume b.jsonl"),
        "a cut tune says how to continue: {err}"
    );
    assert!(
        journal_runs(&d.path().join("b.jsonl")) < 11 * 4,
        "the budget cut runs"
    );
    let resumed = json_of(&run(
        d.path(),
        &[(SIM, STATIC)],
        &["--fsroot", root, "tune", "--resume", "b.jsonl", "--json"],
    ));
    for k in [
        "model",
        "params",
        "recommended",
        "validation",
        "predictions",
    ] {
        assert_eq!(resumed[k], whole[k], "{k} differs after resume");
    }
}

/// The acceptance run, live: `pinsight tune -- pinsight workload pi`
/// on this machine's CPUs recommends a configuration, and resuming the
/// finished journal gives the same answer.
#[test]
fn live_tune_of_workload_pi_and_its_resume_agree() {
    let d = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_pinsight");
    let first = json_of(&run(
        d.path(),
        &[],
        &[
            words("tune --runs 2 --warmup 0 --journal pi.jsonl --json --"),
            vec![exe],
            words("workload pi --size 2e7"),
        ]
        .concat(),
    ));
    let r = &first["recommended"];
    let threads = r["threads"].as_u64().unwrap();
    assert!((1..=usable_cpus().len() as u64).contains(&threads), "{r}");
    assert!(first["design_runs"].as_u64().unwrap() >= 4, "{first}");
    let again = json_of(&run(
        d.path(),
        &[],
        &["tune", "--resume", "pi.jsonl", "--json"],
    ));
    // The placement lines name the journal's command, not a placeholder.
    for k in ["model", "params", "recommended", "predictions", "dialects"] {
        assert_eq!(again[k], first[k], "{k} differs on resume");
    }
    assert!(
        again["dialects"].to_string().contains("workload pi"),
        "{again}"
    );
}

/// With kinds declared over two usable CPUs the design has one P-core,
/// one E-core and both; each run's program saw its configuration's CPUs.
#[test]
fn live_tune_with_declared_kinds_runs_p_e_and_both() {
    let cpus = usable_cpus();
    if cpus.len() < 2 {
        pinsight_testkit::skip("tune with declared kinds needs two usable CPUs");
        return;
    }
    let kinds = format!("{}:P,{}:E", cpus[0], cpus[1]);
    let d = tempfile::tempdir().unwrap();
    // The probe appends the CPUs it may run on and its thread count.
    let probe = "grep Cpus_allowed_list /proc/self/status | tr -d '\\t' >> seen; \
                 echo \"threads=$OMP_NUM_THREADS\" >> seen";
    let o = run(
        d.path(),
        &[],
        &with_sh(
            &format!("--kinds {kinds} tune --runs 1 --warmup 0 --journal k.jsonl --json --"),
            probe,
        ),
    );
    let j = json_of(&o);
    assert_eq!(j["one_kind"], false, "{j}");
    assert_eq!(j["machine"]["p_cores"], 1);
    assert_eq!(j["machine"]["e_cores"], 1);
    let seen = std::fs::read_to_string(d.path().join("seen")).unwrap();
    let (a, b) = (cpus[0].to_string(), cpus[1].to_string());
    let both = format!("{}-{}", cpus[0], cpus[1]);
    let both_list = format!("{},{}", cpus[0], cpus[1]);
    let mut lists: Vec<String> = Vec::new();
    let lines: Vec<&str> = seen.lines().collect();
    for pair in lines.chunks(2) {
        let list = pair[0].trim_start_matches("Cpus_allowed_list:").trim();
        let threads: usize = pair[1].trim_start_matches("threads=").parse().unwrap();
        let n = if list == both || list == both_list {
            2
        } else {
            1
        };
        assert_eq!(threads, n, "{list}: OMP_NUM_THREADS {threads}");
        lists.push(list.to_string());
    }
    lists.sort();
    lists.dedup();
    let mut want = vec![
        a,
        b,
        if cpus[1] == cpus[0] + 1 {
            both
        } else {
            both_list
        },
    ];
    want.sort();
    assert_eq!(lists, want, "{seen}");
}

/// Ctrl-C mid-design: runs stop, the journal keeps what was measured,
/// the message names `--resume`; resuming finishes with a recommendation.
#[test]
fn ctrl_c_then_resume_finishes_the_tune() {
    let d = tempfile::tempdir().unwrap();
    let journal = d.path().join("c.jsonl");
    let mut child = pinsight_in(d.path())
        .args(words(
            "tune --runs 3 --warmup 0 --journal c.jsonl -- sleep 0.3",
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while journal_runs(&journal) < 2 {
        assert!(t.elapsed() < HANG_GUARD, "no run journaled");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let t = Instant::now();
    let out = loop {
        if child.try_wait().unwrap().is_some() {
            break child.wait_with_output().unwrap();
        }
        assert!(t.elapsed() < HANG_GUARD, "tune did not stop after SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    use std::os::unix::process::ExitStatusExt;
    assert!(
        out.status.code() == Some(130) || out.status.signal() == Some(2),
        "{:?} {}",
        out.status,
        text(&out.stderr)
    );
    let err = text(&out.stderr);
    if out.status.code() == Some(130) {
        assert!(err.contains("pinsight tune --resume c.jsonl"), "{err}");
    }
    let done = journal_runs(&journal);
    assert!(done >= 2, "{done}");
    let o = run(d.path(), &[], &["tune", "--resume", "c.jsonl"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("Recommendation:"),
        "{}",
        text(&o.stdout)
    );
    assert!(journal_runs(&journal) > done);
}

/// (environment, arguments, exit code, what stderr says)
type Case<'a> = (&'a [(&'a str, &'a str)], &'a [&'a str], i32, &'a str);

/// Refusals, each one line before anything runs.
#[test]
fn bad_requests_are_refused_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    let cases: &[Case] = &[
        (
            &[],
            &["tune", "--runs", "0", "--", "true"],
            2,
            "'0' for '--runs <N>'",
        ),
        (
            &[(SIM, "model=static,f=2")],
            &["tune", "--", "true"],
            2,
            "PINSIGHT_TEST_TUNE_SIM",
        ),
        (
            &[],
            &["tune", "--", "pinsight-no-such-program"],
            127,
            "command not found",
        ),
        (
            &[],
            &["tune", "--resume", "missing.jsonl"],
            2,
            "missing.jsonl",
        ),
    ];
    for (env, args, code, says) in cases {
        let o = run(d.path(), env, args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(*code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
    std::fs::write(d.path().join("exists.jsonl"), "x").unwrap();
    let o = run(
        d.path(),
        &[],
        &["tune", "--journal", "exists.jsonl", "--", "true"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    // No RAPL here (or none readable): the energy goal is refused before
    // any run; with RAPL it would run, so only check the no-RAPL case.
    let rapl = Path::new("/sys/class/powercap/intel-rapl:0/energy_uj");
    if std::fs::read_to_string(rapl).is_err() {
        let o = run(d.path(), &[], &["tune", "--goal", "energy", "--", "true"]);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
        assert!(text(&o.stderr).contains("RAPL"), "{}", text(&o.stderr));
    } else {
        pinsight_testkit::skip("RAPL is readable here: the no-RAPL refusal is not reachable");
    }
    let left: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "only the test's own file is left: {left:?}");
}

/// tune's own `--disturbance-threshold` and `--rerun-disturbed` reach its
/// runs: a program that leaves a busy loop it does not wait for (other
/// work on its CPUs for most of the run) is flagged at the default 5%,
/// rerun when asked and named in the notes; never at 100%.
#[test]
fn tune_flags_and_reruns_disturbed_runs_with_its_own_threshold() {
    let _serial = pinsight_testkit::serial();
    let d = tempfile::tempdir().unwrap();
    // Other work on the plan's CPUs: a busy loop the test starts itself,
    // pinned to CPU 0 (in every configuration's CPUs), outside the program
    // (a loop the program starts and waits for is the program's own time).
    let program = "sleep 0.3";
    let tune = |journal: &str, extra: &[&str]| {
        let mut args = vec!["tune", "--runs", "1", "--warmup", "0", "--validate", "0"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--journal", journal, "--json", "--", "sh", "-c", program]);
        let out = json_of(&run(d.path(), &[], &args));
        let lines: Vec<Value> = std::fs::read_to_string(d.path().join(journal))
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (out, lines)
    };
    let disturbed = |l: &Value| l["disturbance"]["disturbed"] == true;
    let mut busy = std::process::Command::new("taskset")
        .args(["-c", "0", "sh", "-c", "while :; do :; done"])
        .spawn()
        .expect("taskset runs a busy loop");
    let (out, lines) = tune("rerun.jsonl", &["--rerun-disturbed", "1"]);
    let _ = busy.kill();
    let _ = busy.wait();
    let notes = out["notes"].to_string();
    let slots: std::collections::BTreeSet<u64> =
        lines.iter().map(|l| l["slot"].as_u64().unwrap()).collect();
    if lines.iter().all(disturbed) {
        // Every attempt disturbed: one rerun of each slot, said so.
        assert_eq!(lines.len(), 2 * slots.len(), "{lines:?}");
        assert!(notes.contains("runs disturbed"), "{notes}");
        assert!(notes.contains("rerun"), "{notes}");
    } else if !lines.iter().any(disturbed) {
        // The loop got no CPU time inside the runs (the scheduler kept it
        // off CPU 0 while the program slept): nothing to check the rerun
        // on; a counted skip.
        pinsight_testkit::skip("tune rerun: the busy loop was not scheduled inside any run");
    }
    let (out, lines) = tune("never.jsonl", &["--disturbance-threshold", "100%"]);
    assert!(lines.iter().all(|l| !disturbed(l)), "{lines:?}");
    assert_eq!(lines.len(), slots.len());
    assert!(!out["notes"].to_string().contains("disturb"), "{out}");
    // Bad values are usage errors naming the flag.
    let o = run(
        d.path(),
        &[],
        &["tune", "--rerun-disturbed", "x", "--", "true"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--rerun-disturbed"));
}
