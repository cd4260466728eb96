//! `pinsight load` and `pinsight irq` on a recorded machine with a hot
//! interrupt CPU (hwloc's 20-CPU hybrid laptop, 6 P-cores with SMT + 8
//! E-cores, with the two /proc readings of `tests/data/load/hot-irq`, made
//! by `make_hot_irq.py` there): golden outputs of `load` (human and JSON),
//! `irq` and `irq --off --dry-run`; the bad inputs (one line, exit 2 or 1,
//! nothing changed); and live runs of `load` and `irq --dry-run`.

use crate::common_cli;

use crate::common_cmd::{assert_exit, assert_fits_80, assert_one_line, usage_error, words};
use common_cli::*;
use std::path::{Path, PathBuf};

fn data() -> PathBuf {
    repo().join("tests/data/load/hot-irq")
}

/// The recorded machine (sys/ of the hybrid laptop, proc/ of the first
/// reading) in a temporary directory.
fn machine() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    pinsight_testkit::copy_tree(&hwloc_fixture("20em64t-hybrid-1p6c2t+2ca4co1t"), d.path());
    pinsight_testkit::copy_tree(&data().join("before"), d.path());
    d
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn recorded_load(json: bool) -> Out {
    let m = machine();
    let after = data().join("after");
    let mut a = vec!["--fsroot", s(m.path()), "load", "--after", s(&after)];
    if json {
        a.push("--json");
    }
    ok(&a)
}

#[test]
fn recorded_load_is_the_golden() {
    let o = recorded_load(false);
    pinsight_testkit::golden!("load_hot_irq", &o.stdout);
    assert_fits_80(&o.stdout);
    let flat = o.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("pinsight irq --off 3"), "{}", o.stdout);
    assert!(flat.contains("pinsight balance"), "{}", o.stdout);
    assert!(flat.contains("eth0-TxRx-0"), "{}", o.stdout);
}

#[test]
fn recorded_load_json_is_the_golden() {
    let o = recorded_load(true);
    pinsight_testkit::golden!("load_hot_irq_json", &o.stdout);
    let v = o.json();
    assert_eq!(v["interval_s"], 2.0);
    assert_eq!(v["cpus"].as_array().unwrap().len(), 20);
    let hot = &v["hot_cpus"][0];
    assert_eq!(hot["cpu"], 3);
    assert_eq!(hot["irqs"][0]["irq"], "36");
    assert_eq!(hot["irqs"][0]["queues"][0], "eth0-TxRx-0");
    assert_eq!(hot["irqs"][0]["affinity"], "3");
    assert_eq!(v["suggestions"][0]["kind"], "move-irqs");
    assert_eq!(v["suggestions"][1]["kind"], "rebalance");
    // E-cores busy 80% at the one capacity topo shows (CPPC highest_perf,
    // 39/67 of a P-core's) carry normalised 1.37.
    let e = &v["cpus"][12];
    let cap = e["capacity"].as_f64().unwrap();
    assert!((cap - 39.0 / 67.0).abs() < 1e-9, "{cap}");
    assert!((e["normalised"].as_f64().unwrap() - 0.8 / cap).abs() < 1e-9);
    let imb = v["imbalance"]["ratio"].as_f64().unwrap();
    assert!((imb - (0.8 / cap) / 0.6).abs() < 1e-9, "{imb}");
}

#[test]
fn irq_list_and_dry_run_on_the_recorded_machine() {
    let m = machine();
    let o = ok(&["--fsroot", s(m.path()), "irq"]);
    pinsight_testkit::golden!("irq_hot_irq", &o.stdout);
    let o = ok(&["--fsroot", s(m.path()), "irq", "--off", "3", "--dry-run"]);
    pinsight_testkit::golden!("irq_hot_irq_off_3_dry_run", &o.stdout);
    assert!(o.stdout.contains("CPU 3: ksoftirqd/3"), "{}", o.stdout);
    let o = ok(&[
        vec!["--fsroot", s(m.path())],
        words("--json irq --spread --dry-run"),
    ]
    .concat());
    let v = o.json();
    let moves = v["moves"].as_array().unwrap();
    assert!(!moves.is_empty());
    for mv in moves {
        assert!(!mv["after"].as_str().unwrap().contains([',', '-']), "{mv}");
    }
    // Nothing was written.
    assert_eq!(
        std::fs::read_to_string(m.path().join("proc/irq/36/smp_affinity_list")).unwrap(),
        "3\n"
    );
}

#[test]
fn bad_input_is_one_line_and_changes_nothing() {
    let m = machine();
    let root = s(m.path());
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &["irq", "--off", "3", "--irq", "9999", "--dry-run"],
            2,
            "no IRQ 9999",
        ),
        (&["irq", "--off", "x-y"], 2, "--off"),
        (&["irq", "--off", ""], 2, "--off '': an empty CPU list"),
        (
            &["irq", "--off", "", "--dry-run"],
            2,
            "--off '': an empty CPU list",
        ),
        (
            &["irq", "--off", "40", "--dry-run"],
            2,
            "CPU 40 is not online",
        ),
        (&["irq", "--off", "0-19", "--dry-run"], 2, "no CPU left"),
        (&["irq", "--off", "3"], 2, "describes another machine"),
        (
            &["irq", "--restore", "/nonexistent/state.json"],
            2,
            "describes another machine",
        ),
        (&["irq", "--irq", "36"], 2, "--irq chooses"),
        (&["load"], 2, "--after"),
    ];
    for (args, code, needle) in cases {
        let mut a = vec!["--fsroot", root];
        a.extend_from_slice(args);
        assert_one_line(&pinsight(&a).run(), *code, &[needle]);
    }
    assert_eq!(
        std::fs::read_to_string(m.path().join("proc/irq/36/smp_affinity_list")).unwrap(),
        "3\n"
    );
    // An IRQ without smp_affinity_list (a per-CPU interrupt): a runtime
    // refusal naming it, exit 1.
    std::fs::remove_file(m.path().join("proc/irq/41/smp_affinity_list")).unwrap();
    let irq_41 = [
        vec!["--fsroot", root],
        words("irq --off 3 --irq 36,41 --dry-run"),
    ]
    .concat();
    assert_one_line(&pinsight(&irq_41).run(), 1, &["IRQ 41 cannot be moved"]);
    // --after without --fsroot; --after naming no reading.
    usage_error(&["load", "--after", "/tmp"], &["--after needs --fsroot"]);
    let empty = tempfile::tempdir().unwrap();
    let no_reading = ["--fsroot", root, "load", "--after", s(empty.path())];
    usage_error(&no_reading, &["no readable proc/stat"]);
    // A state file that is not one: exit 2, naming it (checked live,
    // before anything is written).
    let bad = empty.path().join("state.json");
    std::fs::write(&bad, "{}").unwrap();
    let restore = ["irq", "--restore", s(&bad), "--dry-run"];
    usage_error(&restore, &["not a saved IRQ state"]);
    // An empty saved affinity is no move (it was never saved by one).
    std::fs::write(&bad, r#"{"format":"pinsight-irq-state","irqs":{"26":""}}"#).unwrap();
    usage_error(&restore, &["IRQ 26: an empty CPU list"]);
}

#[test]
fn live_load_once_and_json() {
    let o = ok(&["load", "--once", "--interval", "300ms"]);
    assert!(o.stdout.starts_with("pinsight load: "), "{}", o.stdout);
    assert_fits_80(&o.stdout);
    let o = ok(&["--json", "load", "--once", "--interval", "300ms"]);
    let v = o.json();
    let cpus = v["cpus"].as_array().unwrap();
    assert!(!cpus.is_empty());
    for c in cpus {
        let sum: f64 = ["user", "system", "irq", "softirq", "steal", "idle"]
            .iter()
            .map(|k| c[k].as_f64().unwrap())
            .sum();
        // Shares add up to the whole interval (iowait inside idle).
        assert!(sum == 0.0 || (sum - 1.0).abs() < 1e-6, "{c}");
    }
    // Without --once: one JSON line per interval.
    let o = ok(&["--json", "load", "--count", "2", "--interval", "200ms"]);
    assert_eq!(o.stdout.lines().count(), 2, "{}", o.stdout);
    for l in o.stdout.lines() {
        serde_json::from_str::<serde_json::Value>(l).unwrap();
    }
}

#[test]
fn live_irq_list_and_dry_run() {
    let o = pinsight(&["irq"]).run();
    if o.code != 0 && o.stderr.contains("/proc/interrupts") {
        pinsight_testkit::skip_test!("no readable /proc/interrupts here: {}", o.stderr);
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("IRQ"), "{}", o.stdout);
    let first = pinsight_testkit::usable_cpus()[0];
    let o = pinsight(&["--json", "irq", "--off", &first.to_string(), "--dry-run"]).run();
    if o.code == 2 && o.stderr.contains("no CPU left") {
        pinsight_testkit::skip_test!("one CPU only: no CPU to move IRQs to");
    }
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v = o.json();
    assert_eq!(v["dry_run"], true);
    assert!(v["state_file"].is_null());
    for mv in v["moves"].as_array().unwrap() {
        let after = pinsight_cpuset::CpuSet::parse_list(mv["after"].as_str().unwrap()).unwrap();
        assert!(!after.contains(first), "{mv}");
    }
}

#[test]
fn live_irq_move_and_restore_or_the_refusal() {
    let _guard = pinsight_testkit::serial();
    let o = pinsight(&["--json", "irq", "--all"]).run();
    if o.code != 0 {
        pinsight_testkit::skip_test!("irq list unavailable here: {}", o.stderr);
    }
    let v = o.json();
    let cpus = pinsight_testkit::usable_cpus();
    if cpus.len() < 2 {
        pinsight_testkit::skip_test!("one CPU only: no CPU to move an IRQ to");
    }
    let off = cpus[0];
    // The quietest IRQ whose affinity holds `off` (a serial port, an ACPI
    // event): moving it for a moment disturbs nothing.
    let Some(irq) = v["irqs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| {
            i["affinity"].as_str().is_some_and(|a| {
                let set = pinsight_cpuset::CpuSet::parse_list(a).unwrap();
                set.contains(off) && set.len() > 1
            })
        })
        .min_by_key(|i| i["total"].as_u64().unwrap_or(0))
        .cloned()
    else {
        pinsight_testkit::skip_test!("no IRQ whose affinity holds CPU {off} and another CPU");
    };
    let n = irq["irq"].as_u64().unwrap();
    let file = format!("/proc/irq/{n}/smp_affinity_list");
    let before = std::fs::read_to_string(&file).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    let o = pinsight(&[
        "irq",
        "--off",
        &off.to_string(),
        "--irq",
        &n.to_string(),
        "--force",
        "--state",
        s(&state),
    ])
    .run();
    if o.code != 0 {
        // Refused (not root, or the kernel manages this IRQ): one line,
        // exit 1, the reason named, nothing changed, no state left.
        assert_exit(&o, 1, &[&format!("IRQ {n} cannot be moved")]);
        assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
        assert!(
            o.stderr.contains("root") || o.stderr.contains("EIO") || o.stderr.contains("error"),
            "{}",
            o.stderr
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
        assert!(!state.exists());
        return;
    }
    let moved = std::fs::read_to_string(&file).unwrap();
    let set = pinsight_cpuset::CpuSet::parse_list(moved.trim()).unwrap();
    assert!(!set.contains(off), "{moved}");
    assert!(o.stdout.contains("--restore"), "{}", o.stdout);
    let o = ok(&["irq", "--restore", s(&state)]);
    assert!(o.stdout.contains("moved"), "{}", o.stdout);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before);
}

/// The emulated hybrid of `tests/data/load/emulated` (made by
/// `make_emulated.py` there): hwloc's 2-CPU ARM board with CPU 1 declared
/// E at half speed, a duty-cycle stealer (pid 4425) taking half of it, and
/// three tasks of 12% on each CPU; `/proc/schedstat` gives the run times.
fn emulated() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    pinsight_testkit::copy_tree(&hwloc_fixture("2arm-2c"), d.path());
    pinsight_testkit::copy_tree(&repo().join("tests/data/load/emulated/before"), d.path());
    d
}

/// The second reading of the emulated hybrid.
fn emulated_after() -> PathBuf {
    repo().join("tests/data/load/emulated/after")
}

/// `pinsight --fsroot M load --after AFTER EXTRA...`, CPU 1 declared E
/// at half speed.
fn emulated_call(m: &Path, after: &Path, extra: &[&str]) -> Call {
    let mut a = vec!["--fsroot", s(m), "load", "--after", s(after)];
    a.extend_from_slice(extra);
    pinsight(&a).env("PINSIGHT_KINDS", "0:P,1:E@0.5")
}

fn emulated_load(m: &Path, extra: &[&str]) -> Out {
    emulated_call(m, &emulated_after(), extra).run()
}

fn cpu(v: &serde_json::Value, n: u64) -> &serde_json::Value {
    v["cpus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cpu"] == n)
        .unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn recorded_emulated_load_counts_the_stealer_as_steal() {
    let m = emulated();
    let o = emulated_load(m.path(), &["--stealers", "1:4425"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    pinsight_testkit::golden!("load_emulated", &o.stdout);
    assert_fits_80(&o.stdout);
    let o = emulated_load(m.path(), &["--stealers", "1:4425", "--json"]);
    pinsight_testkit::golden!("load_emulated_json", &o.stdout);
    let v = o.json();
    assert_eq!(v["busy_source"], "schedstat");
    assert!(close(v["interval_s"].as_f64().unwrap(), 2.0));
    let (p, e) = (cpu(&v, 0), cpu(&v, 1));
    // schedstat: CPU 0 ran 0.76 s of 2, CPU 1 1.76 s, 1.0 s of it the
    // stealer's: 38% busy each, E normalised twice P's.
    assert!(close(p["busy"].as_f64().unwrap(), 0.38), "{p}");
    assert!(close(e["busy"].as_f64().unwrap(), 0.38), "{e}");
    assert!(close(e["emulated"].as_f64().unwrap(), 0.5), "{e}");
    assert!(close(e["steal"].as_f64().unwrap(), 0.5), "{e}");
    assert!(close(e["idle"].as_f64().unwrap(), 0.12), "{e}");
    assert!(close(v["imbalance"]["ratio"].as_f64().unwrap(), 2.0));
    // The run queue: wait time over the interval.
    assert!(close(p["run_queue"].as_f64().unwrap(), 0.015), "{p}");
    assert!(close(e["run_queue"].as_f64().unwrap(), 0.2), "{e}");
    // The variable `pinsight emulate` exports does the same as the flag.
    let o = emulated_call(m.path(), &emulated_after(), &["--json"])
        .env("PINSIGHT_EMULATION_STEALERS", "1:4425")
        .run();
    assert_eq!(o.json()["cpus"], v["cpus"]);
}

#[test]
fn recorded_emulated_load_without_stealers_or_schedstat() {
    let m = emulated();
    // Not told of the stealer: its time is busy, E reads 88%.
    let v = emulated_load(m.path(), &["--json"]).json();
    let e = cpu(&v, 1);
    assert!(close(e["busy"].as_f64().unwrap(), 0.88), "{e}");
    assert_eq!(e["emulated"], 0.0);
    // Without /proc/schedstat: the uptime interval less the idle time
    // (CPU 0 idle 1.24 s of 2, CPU 1 0.24 s), the same figures.
    std::fs::remove_file(m.path().join("proc/schedstat")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    pinsight_testkit::copy_tree(&emulated_after(), dir.path());
    std::fs::remove_file(dir.path().join("proc/schedstat")).unwrap();
    let v = emulated_call(m.path(), dir.path(), &["--json", "--stealers", "1:4425"])
        .run()
        .json();
    assert_eq!(v["busy_source"], "idle");
    assert!(close(cpu(&v, 0)["busy"].as_f64().unwrap(), 0.38));
    assert!(close(cpu(&v, 1)["busy"].as_f64().unwrap(), 0.38));
    assert!(cpu(&v, 1)["run_queue"].is_null());
    // Without /proc/uptime either: /proc/stat's tick samples, which alias
    // with the stealer's period (CPU 1: 192 busy ticks of 216).
    for root in [m.path(), dir.path()] {
        std::fs::remove_file(root.join("proc/uptime")).unwrap();
    }
    let v = emulated_call(m.path(), dir.path(), &["--json"])
        .run()
        .json();
    assert_eq!(v["busy_source"], "ticks");
    assert!(close(cpu(&v, 1)["busy"].as_f64().unwrap(), 192.0 / 216.0));
}

#[test]
fn bad_stealers_are_one_line_exit_2() {
    let m = emulated();
    for bad in ["1", "x:4425", "1:0", "1:-3", "1:4425,2"] {
        let o = emulated_load(m.path(), &["--stealers", bad]);
        assert_one_line(&o, 2, &["--stealers", "CPU:PID"]);
    }
}

#[test]
fn a_stealer_that_cannot_be_read_is_said_not_ignored() {
    let m = emulated();
    let v = emulated_load(m.path(), &["--stealers", "1:4999", "--json"]).json();
    let said = v["unavailable"].as_array().unwrap();
    assert!(
        said.iter().any(|u| u
            .as_str()
            .unwrap()
            .starts_with("stealer 1:4999: /proc/4999/task unreadable")),
        "{said:?}"
    );
    assert!(close(cpu(&v, 1)["busy"].as_f64().unwrap(), 0.88));
}

/// `--stealers` names a CPU of the machine and a process id Linux can
/// have (1 to 4194304, PID_MAX_LIMIT): anything else is refused with one
/// line naming the value and what is allowed, exit 2.
#[test]
fn stealers_off_the_machine_or_past_pid_max_are_refused() {
    let m = emulated();
    let o = emulated_load(m.path(), &["--stealers", "99:1"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    // One error line (after the note that PINSIGHT_KINDS declared kinds).
    let error = |o: &Out| {
        let e: Vec<&str> = o
            .stderr
            .lines()
            .filter(|l| l.starts_with("pinsight: error") || l.starts_with("error"))
            .collect();
        assert_eq!(e.len(), 1, "{}", o.stderr);
        e[0].to_string()
    };
    assert_eq!(
        error(&o),
        "pinsight: error: --stealers 99:1: CPU 99 is not on this machine (its CPUs: 0-1)"
    );
    let o = emulated_load(m.path(), &["--stealers", "0:999999999"]);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(error(&o).contains("--stealers"), "{}", o.stderr);
    assert!(o.stderr.contains("'0:999999999'"), "{}", o.stderr);
    assert!(o.stderr.contains("from 1 to 4194304"), "{}", o.stderr);
}

/// A CPU whose counters went backwards, are negative or overflow between
/// the two readings is shown as unavailable for the interval, with a
/// warning naming it and why: never dropped, never 100% busy.
#[test]
fn a_cpu_with_unusable_counters_is_unavailable_and_warned_of() {
    let m = emulated();
    let stat = std::fs::read_to_string(emulated_after().join("proc/stat")).unwrap();
    let line1 = stat.lines().find(|l| l.starts_with("cpu1 ")).unwrap();
    for (bad, why) in [
        // idle 70024 in the first reading, 6 in the second.
        (
            "cpu1 60190 10 8002 6 200 0 150 0 0 0",
            "idle went backwards",
        ),
        ("cpu1 60190 10 -8002 70024 200 0 150 0 0 0", "negative"),
        (
            "cpu1 60190 10 8002 700240000000000000000000 200 0 150 0 0 0",
            "past the largest counter",
        ),
    ] {
        let after = tempfile::tempdir().unwrap();
        pinsight_testkit::copy_tree(&emulated_after(), after.path());
        std::fs::write(after.path().join("proc/stat"), stat.replace(line1, bad)).unwrap();
        let o = emulated_call(m.path(), after.path(), &[]).run();
        assert_eq!(o.code, 0, "{bad}: {}", o.stderr);
        assert!(o.says("pinsight: warning: CPU 1: "), "{bad}: {}", o.stderr);
        assert!(o.says(why), "{bad}: {}", o.stderr);
        let row = o.stdout.lines().find(|l| l.starts_with("  1 ")).unwrap();
        assert!(row.contains("unavailable"), "{bad}: {}", o.stdout);
        assert!(!row.contains("100%"), "{bad}: {row}");
        let v = emulated_call(m.path(), after.path(), &["--json"])
            .run()
            .json();
        let cpus: Vec<u64> = v["cpus"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["cpu"].as_u64().unwrap())
            .collect();
        assert_eq!(cpus, [0], "{bad}");
        assert_eq!(v["unavailable_cpus"][0]["cpu"], 1, "{bad}: {v}");
        let reason = v["unavailable_cpus"][0]["reason"].as_str().unwrap();
        assert!(reason.contains(why), "{bad}: {reason}");
        // CPU 0 is measured as without the bad line (38% busy).
        assert!(close(cpu(&v, 0)["busy"].as_f64().unwrap(), 0.38));
    }
}

/// Checks `text` with prometheus_client's OpenMetrics parser (strict: it
/// refuses a missing `# EOF`, a bad label escape, a sample of another
/// family, a counter without `_total`); `Err` with its message.
fn strict_openmetrics(text: &str) -> Result<Vec<String>, String> {
    use std::io::Write;
    // Debian's python3 (where python3-prometheus-client installs), else
    // the one on PATH.
    let python = ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| {
            std::process::Command::new(p)
                .args(["-c", "import prometheus_client.openmetrics.parser"])
                .status()
                .is_ok_and(|s| s.success())
        })
        .expect("a python3 with prometheus_client (.ci/deps installs python3-prometheus-client)");
    let mut c = std::process::Command::new(python)
        .args([
            "-c",
            "import sys\n\
             from prometheus_client.openmetrics.parser import text_string_to_metric_families\n\
             for f in text_string_to_metric_families(sys.stdin.read()):\n\
             \x20   print(f.name, f.type, len(f.samples))\n",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs (.ci/deps installs it)");
    c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let o = c.wait_with_output().unwrap();
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(String::from)
            .collect())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

/// `load --format openmetrics` passes a strict exposition-format parser,
/// on the recorded emulated hybrid (every family there, the progress of
/// each kind among them) and live; `--json` with another `--format` is
/// one line, exit 2.
#[test]
fn openmetrics_output_passes_a_strict_parser() {
    let m = emulated();
    let o = emulated_load(
        m.path(),
        &["--stealers", "1:4425", "--format", "openmetrics"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.ends_with("# EOF\n"), "{}", o.stdout);
    let families = strict_openmetrics(&o.stdout).unwrap_or_else(|e| panic!("{e}\n{}", o.stdout));
    for f in [
        "pinsight_load_cpu_busy_ratio gauge 2",
        "pinsight_load_cpu_normalised_load gauge 2",
        "pinsight_load_cpu_demand_tasks gauge 2",
        "pinsight_load_imbalance_ratio gauge 1",
    ] {
        assert!(families.iter().any(|l| l == f), "{f} not in {families:?}");
    }
    assert!(
        o.stdout
            .contains("pinsight_load_cpu_busy_ratio{cpu=\"1\",kind=\"E-core\"} 0.38"),
        "{}",
        o.stdout
    );
    // Unmeasured figures are left out, not written as 0: no IRQ rates here.
    assert!(!o.stdout.contains("interrupts_per_second"), "{}", o.stdout);
    let live = ok(&["load", "--interval", "300ms", "--format", "openmetrics"]);
    strict_openmetrics(&live.stdout).unwrap_or_else(|e| panic!("{e}\n{}", live.stdout));
    assert_eq!(live.stdout.matches("# EOF").count(), 1, "one exposition");
    let o = pinsight(&words("--json load --once --format openmetrics")).run();
    assert_one_line(&o, 2, &["--format"]);
}
