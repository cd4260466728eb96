//! No lost work, no panic: a closed stdout pipe ends nothing
//! badly, output files are checked before anything is measured, an
//! impossible `speed --mem-mib` is refused, and `pin` on a per-CPU kernel
//! thread says what EINVAL means (a dry run says the same).

use crate::common_cmd::{text, words};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_pinsight");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> String {
    pinsight_testkit::fixtures::hwloc(name)
        .display()
        .to_string()
}

fn cmd(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .env_remove("PINSIGHT_FSROOT")
        .env("NO_COLOR", "1");
    c
}

fn run(dir: &Path, args: &[&str]) -> Output {
    cmd(dir, args).output().unwrap()
}

/// Commands with output, none of which measures anything (fast).
fn printing_commands() -> Vec<Vec<String>> {
    let big = fixture("256ppc-8n8s4t");
    let hybrid = fixture("20em64t-hybrid-1p6c2t+2ca4co1t");
    let lat = repo()
        .join("crates/latency/tests/fixtures")
        .read_dir()
        .ok()
        .and_then(|mut d| {
            d.find_map(|e| {
                let p = e.ok()?.path();
                (p.extension()? == "csv").then_some(p)
            })
        });
    let mut v: Vec<Vec<&str>> = vec![
        vec!["topo"],
        vec!["topo", "--json"],
        vec!["--fsroot", &big, "topo"],
        vec!["--fsroot", &big, "topo", "--json"],
        vec!["--fsroot", &hybrid, "plan", "p-first", "--threads", "8"],
        vec!["--fsroot", &hybrid, "plan", "p-first", "--json"],
        vec!["workload", "--list"],
        vec!["--help"],
        vec!["topo", "--help"],
    ];
    let lat_arg;
    if let Some(p) = &lat {
        lat_arg = p.display().to_string();
        v.push(vec!["latency", "--latency", &lat_arg]);
    }
    v.into_iter()
        .map(|a| a.into_iter().map(String::from).collect())
        .collect()
}

fn assert_quiet_exit(args: &[String], out: &Output) {
    let err = text(&out.stderr);
    assert!(
        !err.contains("panicked")
            && !err.contains("Broken pipe")
            && !err.contains("failed printing"),
        "pinsight {args:?}: stderr after a closed pipe:\n{err}"
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "pinsight {args:?}: exit {:?} after a closed pipe; stderr:\n{err}",
        out.status
    );
}

/// Stdout is a pipe whose reader is gone before pinsight writes a byte:
/// every write fails with EPIPE, deterministically.
#[test]
fn closed_pipe_before_any_output_is_a_quiet_exit() {
    let dir = tempfile::tempdir().unwrap();
    for args in printing_commands() {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = cmd(dir.path(), &a)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert_quiet_exit(&args, &out);
    }
}

/// pinsight `args` in `dir`, its stdout read to the first line and closed,
/// as `| head -1` does: that line, and how pinsight ended.
fn first_line_then_close(dir: &Path, args: &[&str]) -> (String, Output) {
    let mut child = cmd(dir, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    (first, child.wait_with_output().unwrap())
}

/// As `pinsight topo --json | head -1`: read one line, close the pipe.
/// The 256-CPU machine's JSON is far larger than a pipe's buffer.
#[test]
fn head_one_line_then_close() {
    let dir = tempfile::tempdir().unwrap();
    let big = fixture("256ppc-8n8s4t");
    for args in [
        vec!["--fsroot", big.as_str(), "topo", "--json"],
        vec!["--fsroot", big.as_str(), "topo"],
    ] {
        let (first, out) = first_line_then_close(dir.path(), &args);
        assert!(!first.is_empty());
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        assert_quiet_exit(&args, &out);
    }
}

/// A failure that is not a closed pipe (a full disk) is said, once, with
/// exit 1, not a panic.
#[test]
fn full_disk_is_an_error_not_a_panic() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        pinsight_testkit::skip_test!("no /dev/full here");
    };
    let dir = tempfile::tempdir().unwrap();
    let out = cmd(dir.path(), &["topo", "--json"])
        .stdout(full)
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("writing standard output"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// `--quiet` and `--json` keep their outputs whole when stdout is read to
/// the end.
#[test]
fn json_and_quiet_output_stay_whole() {
    let dir = tempfile::tempdir().unwrap();
    let big = fixture("256ppc-8n8s4t");
    let out = run(dir.path(), &["--fsroot", &big, "-q", "topo", "--json"]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["pus"].as_array().is_some_and(|a| a.len() == 256) || v.is_object());
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

/// Children of `run` get SIGPIPE's default action back: `yes` ends by the
/// signal when its reader goes, instead of complaining about EPIPE.
#[test]
fn launched_programs_keep_default_sigpipe() {
    if !Path::new("/usr/bin/yes").exists() && !Path::new("/bin/yes").exists() {
        pinsight_testkit::skip_test!("no yes(1) here");
    }
    let dir = tempfile::tempdir().unwrap();
    let (first, out) = first_line_then_close(dir.path(), &["run", "os", "--", "yes"]);
    assert_eq!(first, "y\n");
    let err = text(&out.stderr);
    assert!(
        !err.contains("Broken pipe") && !err.contains("panicked"),
        "{err}"
    );
    // 128 + SIGPIPE (13), as a shell reports a program killed by it.
    assert_eq!(out.status.code(), Some(141), "{err}");
}

// ---- report --out checked before measuring

/// Generous bound for a command that should finish at once. The commands
/// below are given a measuring budget well beyond it, so a refusal that
/// came only after measuring fails here instead of passing late.
const HANG_GUARD: Duration = Duration::from_secs(30);

fn assert_refused_early(out: &Output, started: Instant, path: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(path), "the message names {path}: {err}");
    assert!(
        started.elapsed() < HANG_GUARD,
        "refused only after {:?}: something was measured first",
        started.elapsed()
    );
}

/// `report --budget 120s` with `flags`'s words, in `dir`: refused before
/// measuring (a 120 s budget would be spent measuring before a late
/// failure), naming `path`.
fn report_refused_early(dir: &Path, flags: &str, path: &str) {
    let started = Instant::now();
    let out = run(dir, &words(&format!("report --budget 120s {flags}")));
    assert_refused_early(&out, started, path);
}

#[test]
fn report_out_in_a_missing_directory_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    report_refused_early(
        dir.path(),
        "--export-html no/such/dir/box.html",
        "no/such/dir/box.html",
    );
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn report_out_blocked_by_a_directory_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("box.json")).unwrap();
    report_refused_early(
        dir.path(),
        "--export-html box.html --export-json box.json",
        "box.json",
    );
    // The probe left nothing behind: no box.html either.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("box.json")]);
}

#[test]
fn report_out_checks_the_latency_file_when_latency_is_measured() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("box.latency.json")).unwrap();
    report_refused_early(
        dir.path(),
        "--no-speed --export-latency box.latency.json",
        "box.latency.json",
    );
}

#[test]
fn report_out_writable_keeps_existing_files_until_written() {
    // Recorded machine: nothing is measured, the files are written at once.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("box.html"), "old").unwrap();
    let hybrid = fixture("20em64t-hybrid-1p6c2t+2ca4co1t");
    let mut args = vec!["--fsroot", &hybrid];
    args.extend(words(
        "report --export-html box.html --export-json box.json --export-latency box.latency.json -q",
    ));
    let out = run(dir.path(), &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(dir.path().join("box.html")).unwrap();
    assert!(html.contains("<html") || html.len() > 100);
    assert!(dir.path().join("box.json").is_file());
}

#[test]
fn speed_weights_unwritable_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    // A budget of 40 s per usable CPU would be spent before a late failure.
    let forty_per_cpu = format!("{}s", 40 * pinsight_testkit::allowed_cpus().len());
    let line = format!("speed --budget {forty_per_cpu} --export-weights no/dir/w.json");
    let out = run(dir.path(), &words(&line));
    assert_refused_early(&out, started, "no/dir/w.json");
    assert!(text(&out.stderr).contains("--export-weights"));
}

// ---- speed --mem-mib

#[test]
fn speed_mem_mib_beyond_available_memory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for mib in ["100000000", "18446744073709551615"] {
        let started = Instant::now();
        let out = run(
            dir.path(),
            &[
                "speed",
                "--mem-mib",
                mib,
                "--kernels",
                "mem",
                "--budget",
                "50ms",
            ],
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "--mem-mib {mib}: {err}");
        assert!(err.contains(&format!("--mem-mib {mib}")), "{err}");
        assert!(err.contains("MiB are available"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(started.elapsed() < HANG_GUARD, "{:?}", started.elapsed());
    }
}

// ---- pin on per-CPU kernel threads

/// The PID of a live per-CPU kernel thread (`ksoftirqd/0`, else
/// `migration/0`, `cpuhp/0`) and its `stat`; `None` where /proc shows no
/// kernel threads (a PID namespace).
fn kernel_thread() -> Option<(i32, String)> {
    for want in ["ksoftirqd/0", "migration/0", "cpuhp/0"] {
        for e in std::fs::read_dir("/proc").ok()?.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if stat.contains(&format!("({want})")) {
                return Some((pid, want.to_string()));
            }
        }
    }
    None
}

#[test]
fn pin_on_a_kernel_thread_says_what_einval_means() {
    let Some((pid, name)) = kernel_thread() else {
        pinsight_testkit::skip_test!("no per-CPU kernel thread visible in /proc");
    };
    let dir = tempfile::tempdir().unwrap();
    let pid_s = pid.to_string();
    // Its own CPU: even if the kernel allowed it, nothing would move.
    for dry in [false, true] {
        let mut args = vec!["pin", pid_s.as_str(), "cpus:0"];
        if dry {
            args.push("--dry-run");
        }
        let out = run(dir.path(), &args);
        let (so, se) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{args:?}\n{so}\n{se}");
        assert!(
            so.contains(&format!(
                "'{name}' is a per-CPU kernel thread (PF_NO_SETAFFINITY)"
            )),
            "{args:?}\n{so}"
        );
        assert!(so.contains("EINVAL"), "{so}");
        assert!(!so.contains("not online"), "{so}");
        assert!(se.contains("PF_NO_SETAFFINITY"), "{se}");
        assert!(
            so.lines()
                .chain(se.lines().skip(1))
                .all(|l| l.chars().count() <= 80),
            "{so}"
        );
        if dry {
            assert!(so.contains("would fail: EINVAL\n"), "{so}");
            assert!(se.contains("would refuse"), "{se}");
        } else {
            assert!(so.contains("FAILED: EINVAL\n"), "{so}");
        }
        // JSON says the same, per thread.
        let mut json = args.clone();
        json.push("--json");
        let out = run(dir.path(), &json);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let t = &v["threads"][0];
        assert_eq!(t["outcome"], if dry { "would-fail" } else { "failed" });
        assert!(t["error"].as_str().unwrap().contains("PF_NO_SETAFFINITY"));
    }
}

/// A fake /proc tree naming two real threads of this test process, one
/// flagged PF_NO_SETAFFINITY: the dry run reports each thread on its own.
#[test]
fn dry_run_reports_unmovable_threads_one_by_one() {
    use pinsight_launch::{pin::pin_process, pin::Outcome, pin::PinOptions};
    use pinsight_sys::FsRoot;

    fn tid() -> i32 {
        let link = std::fs::read_link("/proc/thread-self").unwrap();
        link.file_name().unwrap().to_string_lossy().parse().unwrap()
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let helper = std::thread::spawn(move || {
        tx.send(tid()).unwrap();
        let _ = done_rx.recv();
    });
    let other = rx.recv().unwrap();
    let me = tid();
    let pid = std::process::id() as i32;

    let root = tempfile::tempdir().unwrap();
    let stat = |tid: i32, name: &str, flags: u64| {
        let mut f: Vec<String> = vec![tid.to_string(), format!("({name})"), "S".into(), "1".into()];
        f.extend((5..=52).map(|i| match i {
            9 => flags.to_string(),
            _ => "0".into(),
        }));
        f.join(" ") + "\n"
    };
    let task = root.path().join(format!("proc/{pid}/task"));
    for (t, name, flags) in [(me, "worker", 0x40_0040u64), (other, "pcpu/1", 0x0420_8040)] {
        std::fs::create_dir_all(task.join(t.to_string())).unwrap();
        std::fs::write(task.join(format!("{t}/stat")), stat(t, name, flags)).unwrap();
    }
    std::fs::write(
        root.path().join(format!("proc/{pid}/stat")),
        stat(pid, "worker", 0),
    )
    .unwrap();
    let fs = FsRoot::at(root.path()).unwrap();

    let topo = pinsight_topology::discover(&FsRoot::live());
    let cpu = topo.usable().iter().next().unwrap();
    let req = pinsight_plan::Request {
        threads: Some(1),
        ..pinsight_plan::Request::new(format!("cpus:{cpu}").parse().unwrap())
    };
    let plan = pinsight_plan::plan(&topo, &req).unwrap();
    let opts = PinOptions {
        dry_run: true,
        ..Default::default()
    };
    let report = pin_process(&fs, pid, &plan, &opts).unwrap();
    done_tx.send(()).unwrap();
    helper.join().unwrap();

    let by_tid = |t: i32| report.threads.iter().find(|p| p.tid == t).unwrap();
    let flagged = by_tid(other);
    assert_eq!(flagged.outcome, Outcome::WouldFail, "{report:?}");
    assert!(flagged
        .error
        .as_deref()
        .unwrap()
        .contains("'pcpu/1' is a per-CPU kernel thread"));
    assert_eq!(flagged.after, flagged.before, "nothing would move");
    let fine = by_tid(me);
    assert!(
        matches!(fine.outcome, Outcome::WouldChange | Outcome::Unchanged),
        "{report:?}"
    );
    assert!(fine.error.is_none());
}
