//! `pinsight sf`: per-thread speedup factors through the binary: help,
//! refusals (exit 2, one line), the honest "unavailable" without per-kind
//! PMUs (nothing started), the report and --json shape on a recorded
//! machine with per-kind PMUs added (PINSIGHT_TEST_MEASURE_ROOT), and
//! Ctrl-C (what was measured is printed, exit 130, the program stopped).

use crate::common_cli;

use crate::common_cmd::{assert_exit, assert_fits_80, assert_says, help_says, pinsight_in, words};
use common_cli::*;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MEASURE_ROOT: &str = "PINSIGHT_TEST_MEASURE_ROOT";
const I7: &str = "20em64t-hybrid-1p6c2t+2ca4co1t";

/// The recorded i7-1370P (no event_source directory recorded: no PMU).
fn recorded_root() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    pinsight_testkit::copy_tree(&hwloc_fixture(I7), d.path());
    d
}

fn add_pmu(root: &Path, name: &str, ty: u32, cpus: &str) {
    let dev = root.join("sys/devices").join(name);
    std::fs::create_dir_all(&dev).unwrap();
    std::fs::write(dev.join("type"), format!("{ty}\n")).unwrap();
    std::fs::write(dev.join("cpus"), format!("{cpus}\n")).unwrap();
    let bus = root.join("sys/bus/event_source/devices");
    std::fs::create_dir_all(&bus).unwrap();
    std::os::unix::fs::symlink(format!("../../../devices/{name}"), bus.join(name)).unwrap();
}

/// This machine's allowed CPUs split as two declared kinds (first CPU P,
/// the rest E) and a measurement root whose cpu_core/cpu_atom PMUs count
/// on them; `None` (skipped) with fewer than two CPUs.
fn two_kinds() -> Option<(String, tempfile::TempDir)> {
    let cpus = pinsight_testkit::allowed_cpus();
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let online = pinsight_cpuset::CpuSet::parse_list(online.trim()).unwrap();
    if cpus.len() < 2 || cpus != online {
        pinsight_testkit::skip("sf's declared-kinds tests need two or more CPUs, all allowed");
        return None;
    }
    let first = cpus.first().unwrap();
    let rest = cpus.difference(&pinsight_cpuset::CpuSet::single(first));
    let root = recorded_root();
    add_pmu(root.path(), "cpu_core", 4, &first.to_string());
    add_pmu(root.path(), "cpu_atom", 10, &rest.to_list_string());
    Some((format!("{first}:P,{}:E", rest.to_list_string()), root))
}

/// `pinsight` with `line`'s words measuring on the fake PMUs at `root`,
/// started as a terminal would (`crate::common_cmd::pinsight_in`: SIGINT at
/// its default, even when the suite runs under nohup), its output piped.
fn sf_child(line: &str, root: &Path) -> Command {
    let mut c = pinsight_in(Path::new("."));
    c.args(words(line))
        .env(MEASURE_ROOT, root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

#[test]
fn help_explains_the_estimator_the_probe_and_the_fallbacks() {
    let help = help_says(
        "sf",
        &[
            "SF = IPS on big / IPS on small",
            "0.35",
            "5 samples",
            "clamped to [1, 4]",
            "--probe",
            "--sf NAME=X",
            "--pids <LIST>",
            "--duration <DURATION>",
        ],
    );
    assert_fits_80(&help);
}

#[test]
fn bad_input_and_recorded_machines_are_refused_in_one_line() {
    let fixture = hwloc_fixture(I7);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["sf"],
            "required arguments were not provided: <--pids <LIST>|CMD|",
        ),
        (
            vec!["sf", "--pids", "1", "--", "true"],
            "'--pids <LIST>' cannot be used with '[CMD]...'",
        ),
        (
            vec!["sf", "--pids", "999999999"],
            "--pids 999999999: no such process",
        ),
        (
            vec!["sf", "--pids", "1", "--interval", "0.5ms"],
            "an interval is between 1ms and 1h",
        ),
        (
            vec!["sf", "--pids", "1", "--interval", "soon"],
            "--interval",
        ),
        (vec!["sf", "--pids", "1", "--duration", "x"], "--duration"),
        (
            vec!["sf", "--fsroot", fixture.to_str().unwrap(), "--pids", "1"],
            "sf measures threads on this machine",
        ),
        (
            vec!["sf", "--hwloc-xml", "/nonexistent.xml", "--", "true"],
            "--hwloc-xml describes another machine",
        ),
    ];
    for (args, phrase) in cases {
        let o = pinsight(&args).run();
        assert_eq!(o.code, 2, "{}: {}", o.argv, o.stderr);
        assert_eq!(o.stderr.lines().count(), 1, "{}: {}", o.argv, o.stderr);
        assert!(
            o.first_err_line().contains(phrase),
            "{}: {}",
            o.argv,
            o.stderr
        );
    }
}

#[test]
fn without_per_kind_pmus_it_says_why_and_starts_nothing() {
    let root = recorded_root();
    // `touch` would leave a file in the checked working directory.
    let o = pinsight(&["sf", "--", "touch", "started"])
        .env(MEASURE_ROOT, root.path())
        .run();
    assert_says(
        &o,
        1,
        &[
            "speedup factors unavailable: no hardware PMU",
            "(the program was not started)",
            "--sf NAME=X",
        ],
    );
    assert_fits_80(&o.stderr);

    // One core PMU (x86 without hybrid PMUs): counters cannot tell kinds apart.
    add_pmu(root.path(), "cpu", 4, "0-19");
    let o = pinsight(&["sf", "--pids", "1", "--json"])
        .env(MEASURE_ROOT, root.path())
        .run();
    assert_eq!(o.code, 1);
    let j = o.json();
    assert_eq!(j["available"], false);
    assert!(
        j["reason"]
            .as_str()
            .unwrap()
            .starts_with("one core PMU (cpu)"),
        "{j}"
    );
    assert_eq!(j["threads"].as_array().unwrap().len(), 0);
}

#[test]
fn this_machine_says_why_counters_are_unavailable() {
    let o = pinsight(&["sf", "--pids", "1", "--duration", "50ms", "--json"]).run();
    let j = o.json();
    if j["available"] == true {
        return pinsight_testkit::skip("this machine has per-kind PMUs");
    }
    assert_eq!(o.code, 1);
    let reason = j["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("no hardware PMU")
            || reason.starts_with("one core PMU")
            || reason.starts_with("one core kind"),
        "{reason}"
    );
    assert!(o.says(reason), "{}", o.stderr);
}

#[test]
fn report_and_json_carry_every_thread_on_fake_per_kind_pmus() {
    let Some((kinds, root)) = two_kinds() else {
        return;
    };
    let args = [
        "sf",
        "--kinds",
        &kinds,
        "--interval",
        "20ms",
        "--",
        "sh",
        "-c",
        "sleep 0.3",
    ];
    let o = pinsight(&args).env(MEASURE_ROOT, root.path()).run();
    assert!(
        o.stdout.contains("big: P-core (PMU cpu_core"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("small: E-core (PMU cpu_atom"),
        "{}",
        o.stdout
    );
    assert_fits_80(&o.stdout);
    let mut json_args = args.to_vec();
    json_args.insert(1, "--json");
    let o = pinsight(&json_args).env(MEASURE_ROOT, root.path()).run();
    let j = o.json();
    assert_eq!(j["available"], true);
    assert_eq!(j["min_samples"], 5);
    assert_eq!(j["pmus"]["pmus"][0]["pmu"], "cpu_core");
    assert_eq!(j["pmus"]["pmus"][0]["kind"], "Big");
    assert_eq!(j["pmus"]["pmus"][1]["kind"], "Small");
    assert!(j["periods"].as_u64().unwrap() >= 1);
    let threads = j["threads"].as_array().unwrap();
    // The started program is the one process measured, and its main
    // thread is one of its threads.
    assert_eq!(j["pids"].as_array().map(Vec::len), Some(1), "{j}");
    assert!(threads.iter().any(|t| t["tid"] == j["pids"][0]), "{j}");
    assert!(threads.iter().all(|t| t["pid"] == j["pids"][0]), "{j}");
    let measured = threads.iter().filter(|t| t["error"].is_null()).count();
    for t in threads {
        if t["error"].is_null() {
            // A machine whose PMU types happen to be 4 and 10 (Intel hybrid).
            assert!(t["sf"].is_object() || t["sf"].is_number(), "{t}");
            assert!(t["big"]["samples"].is_u64(), "{t}");
        } else {
            assert!(
                t["error"]
                    .as_str()
                    .unwrap()
                    .contains("perf_event_open(cpu_core/"),
                "{t}"
            );
        }
    }
    assert_eq!(o.code, if measured == 0 { 1 } else { 0 }, "{}", o.stderr);
}

#[test]
fn ctrl_c_prints_what_was_measured_and_stops_the_program() {
    let Some((kinds, root)) = two_kinds() else {
        return;
    };
    let mut child = sf_child(
        &format!("sf --json --kinds {kinds} --interval 20ms -- sleep 30"),
        root.path(),
    )
    .spawn()
    .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "sf did not stop on SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["interrupted"], true);
    assert!(j["periods"].as_u64().unwrap() >= 1);
    let pid = j["pids"][0].as_i64().unwrap();
    assert!(!j["threads"].as_array().unwrap().is_empty());
    // The program was stopped too (reaped by sf: no /proc entry left).
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
}

#[test]
fn after_duration_the_program_is_waited_for_and_its_status_is_ours() {
    let Some((kinds, root)) = two_kinds() else {
        return;
    };
    let o = pinsight(&[
        "sf",
        "--kinds",
        &kinds,
        "--interval",
        "20ms",
        "--duration",
        "60ms",
        "--",
        "sh",
        "-c",
        "sleep 0.4; exit 3",
    ])
    .env(MEASURE_ROOT, root.path())
    .run();
    assert_says(&o, 3, &["waiting for the program to end"]);
    assert!(o
        .stdout
        .starts_with("Speedup factors of sh -c sleep 0.4; exit 3 (PID "));
}

fn allowed_of(pid: u32) -> String {
    pinsight_testkit::allowed_list_of(pid)
}

const STAND_IN: &str = "PINSIGHT_TEST_SF_STAND_IN";

#[test]
fn probe_windows_pin_the_threads_and_restore_them_at_the_end_and_on_ctrl_c() {
    let Some((kinds, root)) = two_kinds() else {
        return;
    };
    let big = kinds.split(':').next().unwrap().to_string();
    let all = allowed_of(std::process::id());
    for interrupt in [false, true] {
        let mut target = Command::new("sleep").arg("30").spawn().unwrap();
        let pid = target.id().to_string();
        let mut sf = sf_child(
            &format!(
                "sf --json --probe --kinds {kinds} --interval 150ms --pids {pid} --duration 1500ms"
            ),
            root.path(),
        )
        .env(STAND_IN, "1")
        .spawn()
        .unwrap();
        // During the first window the target is on the big CPU.
        let t0 = Instant::now();
        let mut seen_big = false;
        while t0.elapsed() < Duration::from_millis(1000) && !seen_big {
            seen_big = allowed_of(target.id()) == big;
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(seen_big, "never pinned to {big}");
        if interrupt {
            // SAFETY: kill(2) on our own child.
            unsafe { libc::kill(sf.id() as i32, libc::SIGINT) };
        }
        let t0 = Instant::now();
        while sf.try_wait().unwrap().is_none() {
            assert!(t0.elapsed() < Duration::from_secs(20), "sf did not end");
            std::thread::sleep(Duration::from_millis(20));
        }
        let out = sf.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(if interrupt { 130 } else { 0 }),
            "{stderr}"
        );
        assert_eq!(allowed_of(target.id()), all, "affinity not restored");
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["interrupted"], interrupt);
        let t = &j["threads"][0];
        assert_eq!(t["tid"].to_string(), pid);
        assert!(t["error"].is_null(), "{t}");
        // A sleeping thread runs on neither kind: no samples, no SF.
        assert!(t["sf"]["unavailable"].is_string(), "{t}");
        // The --pid target is not ours to stop: it still runs.
        assert!(target.try_wait().unwrap().is_none());
        target.kill().unwrap();
        target.wait().unwrap();
    }
}

/// `--pids LIST`: every listed process's threads are measured, each
/// named with its process, and the measurement ends when the last one
/// has ended (or at --duration); the processes are not stopped.
#[test]
fn several_pids_are_measured_together_and_each_thread_names_its_process() {
    let Some((kinds, root)) = two_kinds() else {
        return;
    };
    let mut a = Command::new("sleep").arg("30").spawn().unwrap();
    // b is reaped as it ends, as a parent does (a zombie's thread stays
    // listed in /proc).
    let b = Command::new("sleep").arg("0.4").spawn().unwrap();
    let b_id = b.id();
    let reaper = reap(b);
    // a named twice is measured once.
    let list = format!("{},{b_id},{}", a.id(), a.id());
    let o = pinsight(&words(&format!(
        "sf --json --kinds {kinds} --interval 50ms --pids {list} --duration 800ms"
    )))
    .env(MEASURE_ROOT, root.path())
    .env(STAND_IN, "1")
    .run();
    let j = o.json();
    let ids = [i64::from(a.id()), i64::from(b_id)];
    let pids: Vec<i64> = j["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_i64().unwrap())
        .collect();
    assert_eq!(pids, ids, "{j}");
    let threads = j["threads"].as_array().unwrap();
    for id in ids {
        let t = threads
            .iter()
            .find(|t| t["tid"] == id)
            .unwrap_or_else(|| panic!("no thread {id}: {j}"));
        assert_eq!(t["pid"], id, "{t}");
    }
    // b ended during the measurement and is marked so; a still runs.
    let tb = threads.iter().find(|t| t["tid"] == ids[1]).unwrap();
    assert_eq!(tb["exited"], true, "{tb}");
    assert!(a.try_wait().unwrap().is_none());
    a.kill().unwrap();
    a.wait().unwrap();
    reaper.join().unwrap();
    // Every process gone ends the measurement before --duration.
    let c = Command::new("sleep").arg("0.2").spawn().unwrap();
    let c_id = c.id();
    let reaper = reap(c);
    let t0 = Instant::now();
    let list = format!("{c_id}");
    let o = pinsight(&words(&format!(
        "sf --json --kinds {kinds} --interval 20ms --pids {list} --duration 20s"
    )))
    .env(MEASURE_ROOT, root.path())
    .env(STAND_IN, "1")
    .run();
    assert_eq!(o.json()["pids"][0], i64::from(c_id));
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "sf outlived its process"
    );
    reaper.join().unwrap();
}

/// Waits for `child` on a thread of its own.
fn reap(mut child: std::process::Child) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        child.wait().unwrap();
    })
}

#[test]
fn from_compare_reads_the_sf_of_a_journal_with_big_and_small_arms() {
    let Some((kinds, _root)) = two_kinds() else {
        return;
    };
    let o = pinsight(&words(&format!("compare -q --kinds {kinds} --policies p-set,e-set -t 1 -r 2 -w 0 --seed 1 --journal j.jsonl -- true")))
    .writes("j.jsonl")
    .writes("j.jsonl.out")
    .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    let journal = o.path("j.jsonl");
    let j = pinsight(&["sf", "--json", "--from-compare", journal.to_str().unwrap()])
        .run()
        .json();
    assert_eq!(j["source"], "compare");
    assert_eq!(j["command"][0], "true");
    assert_eq!(j["big"]["arm"], "p-set");
    assert_eq!(j["small"]["arm"], "e-set");
    assert_eq!(j["big"]["runs"], 2);
    let (b, s) = (
        j["big"]["mean_wall_s"].as_f64().unwrap(),
        j["small"]["mean_wall_s"].as_f64().unwrap(),
    );
    assert!((j["sf"].as_f64().unwrap() - s / b).abs() < 1e-9, "{j}");

    // A journal without arms confined to each kind: no SF, exit 1.
    let o = pinsight(&words(&format!(
        "compare -q --kinds {kinds} --policies os -t 1 -r 2 -w 0 --journal os.jsonl -- true"
    )))
    .writes("os.jsonl")
    .writes("os.jsonl.out")
    .run();
    let os = o.path("os.jsonl");
    let o = pinsight(&["sf", "--from-compare", os.to_str().unwrap()]).run();
    assert_says(&o, 1, &["no pair of arms"]);

    // Not a journal, and not with --pid: usage errors.
    let o = pinsight(&["sf", "--from-compare", "/nonexistent.jsonl"]).run();
    assert_eq!(o.code, 2);
    assert!(
        o.first_err_line().contains("--from-compare"),
        "{}",
        o.stderr
    );
    let o = pinsight(&["sf", "--from-compare", "x.jsonl", "--pids", "1"]).run();
    assert_eq!(o.code, 2);
}

/// Issue 34: an SF for a program position no program can have is refused
/// before anything runs (exit 2, one line naming the value and the range),
/// by `sched` (whose positions count the programs it comes to manage) and
/// by `mix` (whose programs are the ones given).
#[test]
fn sf_positions_out_of_range_are_refused_in_one_line() {
    // Command lines (their words) and what the refusal says.
    let mut cases = vec![
        (
            "sched --policies to --sf #999999999999=2 -- true".to_string(),
            "'#999999999999' is not a position: #N with N from 1 to 4194304",
        ),
        (
            "sched --policies to --sf #99999999999999999999999=2 --pids 1".to_string(),
            "with N from 1 to 4194304",
        ),
        (
            "sched --policies acfs --sf #0=2 -- true".to_string(),
            "'#0' is not a position",
        ),
    ];
    // mix needs two core kinds before it reads its programs: declared here.
    let cpus = pinsight_testkit::allowed_cpus();
    let kinds = match (cpus.first(), cpus.len() >= 2) {
        (Some(first), true) => {
            let rest = cpus.difference(&pinsight_cpuset::CpuSet::single(first));
            Some(format!("{first}:P,{}:E", rest.to_list_string()))
        }
        _ => {
            pinsight_testkit::skip("mix's --sf refusals need two usable CPUs to declare two kinds");
            None
        }
    };
    if let Some(k) = &kinds {
        cases.push((
            format!("--quiet --kinds {k} mix --policies to --sf #999999999999=2 -- true true"),
            "'#999999999999' is not a position: #N with N from 1 to 4194304",
        ));
        cases.push((
            format!("--quiet --kinds {k} mix --policies to --sf #3=2 -- true true"),
            "positions #1-#2",
        ));
    }
    for (line, phrase) in cases {
        let o = pinsight(&words(&line)).run();
        assert_exit(&o, 2, &["--sf"]);
        assert_says(&o, 2, &[phrase]);
        assert_eq!(o.stderr.lines().count(), 1, "{}: {}", o.argv, o.stderr);
    }
}
