//! `pinsight compare --launcher LINE --slice POLICY`: each arm a slicing
//! rule, each run started under a REAL launcher (Open MPI's `mpirun`, and
//! `srun` of a one-node Slurm these tests start), timed as the slowest
//! rank's wall time read from the ranks' `--report-dir` files.
//!
//! Every test runs 2 arms (equal-count, equal-capacity) × 2 runs of a
//! short program over two CPUs with declared kinds (the first P, the rest
//! E): the journal's run times must equal the slowest rank of each run
//! (checked against the report files on disk), the header must name the
//! launcher, an interrupted experiment must `--resume` to completion, and
//! the flag combinations that make no sense are refused in one line.
//!
//! The launchers are test prerequisites (`.ci/deps`: `openmpi-bin`,
//! `slurm-wlm`, `munge`): one that cannot start FAILS with the reason. The
//! launcher line itself ends in `taskset -c A,B`, so every rank sees the
//! same two CPUs on any machine (A, B: the first two this test may use).

use crate::common_launch;

use crate::common_cmd::{assert_fits_80, pinsight_in, strs};
use common_launch::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn pinsight() -> &'static str {
    env!("CARGO_BIN_EXE_pinsight")
}

/// `pinsight -q --kinds KINDS compare ARGS`, in `dir`, bounded by timeout(1).
fn compare(dir: &Path, kinds: &str, args: &[&str], envs: &[(&str, &str)]) -> Command {
    let mut c = Command::new("timeout");
    c.arg("60")
        .arg(pinsight())
        .args(["-q", "--kinds", kinds, "compare"])
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("PINSIGHT_FSROOT")
        .envs(envs.iter().copied());
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Journal lines as JSON.
fn journal(p: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every run of the journal: two ranks with report files, and the run's
/// time is the slowest of the ranks' wall times as their files say.
fn check_journal(path: &Path, launcher_word: &str, runs: usize) {
    let lines = journal(path);
    let h = &lines[0];
    assert_eq!(h["kind"], "compare-ranks", "{h}");
    assert_eq!(h["extension"]["launcher"][0], launcher_word, "{h}");
    assert_eq!(h["extension"]["slice"], "p-pinned");
    let arms: Vec<&str> = strs(&h["arms"], "id");
    assert_eq!(arms, ["equal-count", "equal-capacity"]);
    let mut slots: Vec<u64> = Vec::new();
    for l in &lines[1..] {
        let k = &l["ranks"];
        let dir = PathBuf::from(k["report_dir"].as_str().expect("report_dir"));
        let mut walls: Vec<f64> = Vec::new();
        for host in std::fs::read_dir(&dir).unwrap() {
            for f in std::fs::read_dir(host.unwrap().path()).unwrap() {
                let v: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(f.unwrap().path()).unwrap())
                        .unwrap();
                assert_eq!(v["run"]["exit_code"], 0, "{v}");
                assert_eq!(v["slice"]["size"], 2, "{v}");
                walls.push(v["run"]["wall_ms"].as_f64().unwrap() / 1e3);
            }
        }
        assert_eq!(walls.len(), 2, "two rank reports in {}", dir.display());
        let slowest = walls.iter().copied().fold(f64::MIN, f64::max);
        let fastest = walls.iter().copied().fold(f64::MAX, f64::min);
        let wall = l["wall_s"].as_f64().unwrap();
        assert!(
            (wall - slowest).abs() < 1e-9,
            "run time {wall} is not the slowest rank's {slowest}: {l}"
        );
        assert_eq!(k["ranks"].as_array().unwrap().len(), 2, "{l}");
        assert!(k["launcher_wall_s"].as_f64().unwrap() > 0.0, "{l}");
        let spread = k["spread"].as_f64().unwrap();
        assert!((spread - slowest / fastest).abs() < 1e-9, "{l}");
        assert!(k["failure"].is_null(), "{l}");
        slots.push(l["slot"].as_u64().unwrap());
    }
    slots.sort();
    slots.dedup();
    assert_eq!(slots.len(), runs, "every slot journaled once: {slots:?}");
}

/// The `--json` report: both arms, each with 2 measured runs and rank
/// figures.
fn check_report(out: &Output) {
    assert!(
        out.status.success(),
        "compare failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let arms = v["arms"].as_array().unwrap();
    assert_eq!(arms.len(), 2, "{v}");
    for a in arms {
        assert_eq!(a["measured"], 2, "{a}");
        assert_eq!(a["ranks"]["ranks"], 2, "{a}");
        assert!(a["ranks"]["spread_median"].as_f64().unwrap() >= 1.0, "{a}");
    }
    assert_eq!(v["baseline"], "equal-count");
}

fn mpirun_line(a: usize, b: usize) -> String {
    format!("mpirun --oversubscribe --bind-to none -np 2 taskset -c {a},{b}")
}

const RANK_ARGS: [&str; 8] = [
    "--slice",
    "p-pinned",
    "--slice-rules",
    "equal-count,equal-capacity",
    "--runs",
    "2",
    "--warmup",
    "0",
];

/// What every ranks experiment starts from: two usable CPUs `a` and `b`,
/// the kinds that declare them, a fresh directory `d` and the journal path
/// `j` in it.
struct Setup {
    a: usize,
    b: usize,
    kinds: String,
    d: tempfile::TempDir,
    j: PathBuf,
}

/// The [`Setup`]; `None` after a logged skip with fewer than two usable
/// CPUs.
fn setup() -> Option<Setup> {
    let Some((a, b, kinds)) = two_cpus() else {
        pinsight_testkit::skip("fewer than two usable CPUs: two slices cannot exist");
        return None;
    };
    let d = tempfile::tempdir().unwrap();
    let j = d.path().join("j.jsonl");
    Some(Setup { a, b, kinds, d, j })
}

/// A ranks experiment's arguments: launcher `line`, the slicing rules
/// and runs of RANK_ARGS, `extra` flags, the journal, then `sh -c script`.
fn rank_args<'a>(
    line: &'a str,
    extra: &[&'a str],
    journal: &'a Path,
    script: &'a str,
) -> Vec<&'a str> {
    let mut args: Vec<&str> = vec!["--launcher", line];
    args.extend(RANK_ARGS);
    args.extend(extra);
    args.extend(["--journal", journal.to_str().unwrap()]);
    args.extend(["--", "sh", "-c", script]);
    args
}

#[test]
fn mpirun_arms_are_slicing_rules_timed_by_the_slowest_rank() {
    let Some(Setup { a, b, kinds, d, j }) = setup() else {
        return;
    };
    let line = mpirun_line(a, b);
    let args = rank_args(&line, &["--json"], &j, "echo rank-out; sleep 0.1");
    let out = compare(d.path(), &kinds, &args, &MPI_ENV).output().unwrap();
    check_report(&out);
    check_journal(&j, "mpirun", 4);
    // Each run's launcher output (both ranks') is kept, named by arm and run.
    for l in &journal(&j)[1..] {
        let rel = l["output"]["path"]
            .as_str()
            .expect("the run's output is kept");
        let name = format!("arm-{}-run-{}", l["arm"].as_str().unwrap(), l["slot"]);
        assert!(rel.contains(&name), "{rel} is not {name}");
        let kept = std::fs::read_to_string(d.path().join(rel)).unwrap();
        assert_eq!(kept.matches("rank-out").count(), 2, "{rel}: {kept}");
    }
    // The human report names the launcher and words the time.
    let out = compare(
        d.path(),
        &kinds,
        &["--resume", j.to_str().unwrap()],
        &MPI_ENV,
    )
    .output()
    .unwrap();
    let human = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(human.contains("Launcher: mpirun"), "{human}");
    assert!(human.contains("Slowest rank (mean ± σ)"), "{human}");
    assert_fits_80(&human);
}

#[test]
fn mpirun_interrupted_then_resumed_completes() {
    let Some(Setup { a, b, kinds, d, j }) = setup() else {
        return;
    };
    let line = mpirun_line(a, b);
    let args = rank_args(&line, &[], &j, "sleep 0.4");
    // Not under timeout(1): the signal goes to compare itself. Ctrl-C as a
    // terminal delivers it: SIGINT at its default in the child even when
    // the suite runs under nohup (compare keeps an inherited SIG_IGN, as
    // shells do).
    let mut child = pinsight_in(d.path())
        .args(["-q", "--kinds", &kinds, "compare"])
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .envs(MPI_ENV)
        .spawn()
        .unwrap();
    let t = Instant::now();
    while std::fs::read_to_string(&j).map_or(0, |s| s.lines().count()) < 2 {
        assert!(t.elapsed() < Duration::from_secs(30), "no run journaled");
        if let Some(st) = child.try_wait().unwrap() {
            panic!("compare ended before the signal: {st}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The second run is in flight (each takes 0.4 s and more).
    std::thread::sleep(Duration::from_millis(100));
    let ok = Command::new("kill")
        .arg("-INT")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(ok.success());
    let t = Instant::now();
    let out = loop {
        if child.try_wait().unwrap().is_some() {
            break child.wait_with_output().unwrap();
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no stop after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("--resume"), "{err}");
    let done = journal(&j).len() - 1;
    assert!((1..4).contains(&done), "{done} runs before the signal");
    let out = compare(
        d.path(),
        &kinds,
        &["--resume", j.to_str().unwrap(), "--json"],
        &MPI_ENV,
    )
    .output()
    .unwrap();
    check_report(&out);
    check_journal(&j, "mpirun", 4);
    // Another experiment's flags are refused on resume.
    let out = compare(
        d.path(),
        &kinds,
        &[
            "--resume",
            j.to_str().unwrap(),
            "--launcher",
            "mpirun -np 3",
            "--slice",
            "p-pinned",
        ],
        &MPI_ENV,
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("different experiment"));
}

#[test]
fn mpirun_a_failing_rank_fails_the_run_naming_it() {
    let Some(Setup { a, b, kinds, d, j }) = setup() else {
        return;
    };
    let line = mpirun_line(a, b);
    // Local rank 1 exits 3, rank 0 succeeds.
    let args = rank_args(
        &line,
        &[],
        &j,
        "[ \"${OMPI_COMM_WORLD_LOCAL_RANK}\" = 1 ] && exit 3; exit 0",
    );
    let out = compare(d.path(), &kinds, &args, &MPI_ENV).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("exited with code 3"), "{err}");
    let lines = journal(&j);
    assert_eq!(lines.len(), 2, "the first run stops the experiment");
    let f = lines[1]["ranks"]["failure"].as_str().unwrap();
    assert!(
        f.starts_with("rank 1 on ") && f.ends_with("exited with code 3"),
        "{f}"
    );
}

#[test]
fn refusals_are_one_line() {
    let d = tempfile::tempdir().unwrap();
    let kinds = two_cpus().map_or("0:P".to_string(), |t| t.2);
    let cases: [(&[&str], i32, &str); 7] = [
        (&["--launcher", "mpirun -np 2", "--", "true"], 2, "--slice"),
        (
            &["--slice-rules", "equal-count", "--", "true"],
            2,
            "--launcher",
        ),
        (&["--slice", "p-pinned", "--", "true"], 2, "--launcher"),
        (
            &[
                "--launcher",
                "mpirun -np 2",
                "--slice",
                "p-pinned",
                "--slice-rules",
                "equal-speed",
                "--",
                "true",
            ],
            2,
            "equal-speed",
        ),
        (
            &[
                "--launcher",
                "no-such-launcher-xyz -n 2",
                "--slice",
                "p-pinned",
                "--",
                "true",
            ],
            127,
            "no-such-launcher-xyz",
        ),
        (
            &[
                "--launcher",
                "mpirun -np 2",
                "--slice",
                "p-pinned",
                "--policies",
                "os",
                "--",
                "true",
            ],
            2,
            "--policies",
        ),
        (
            &[
                "--launcher",
                "mpirun 'np",
                "--slice",
                "p-pinned",
                "--",
                "true",
            ],
            2,
            "quotes",
        ),
    ];
    for (args, code, word) in cases {
        let out = compare(d.path(), &kinds, args, &[]).output().unwrap();
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(word), "{args:?}: {err}");
    }
    // Nothing was journaled.
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
}

/// Daemons started by the test, stopped (SIGTERM, then SIGKILL) on every path.
#[test]
fn srun_arms_are_slicing_rules_timed_by_the_slowest_rank() {
    let Some(Setup { a, b, kinds, d, j }) = setup() else {
        return;
    };
    let slurm = d.path().join("slurm");
    std::fs::create_dir_all(&slurm).unwrap();
    let (daemons, conf) = start_slurm(&slurm);
    let line = format!("srun -n 2 -N 1 taskset -c {a},{b}");
    let args = rank_args(&line, &["--json"], &j, "sleep 0.1");
    let out = compare(d.path(), &kinds, &args, &[("SLURM_CONF", &conf)])
        .output()
        .unwrap();
    check_report(&out);
    check_journal(&j, "srun", 4);
    drop(daemons);
}
