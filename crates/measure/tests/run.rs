//! Live runs: timing, counters vs rusage, exit statuses, timeouts, fake
//! PMU-less and powercap trees. The test binary doubles as the workload
//! (`PINSIGHT_MEASURE_CHILD=spin:MS` runs `child_entry` only).

use pinsight_measure::{
    Measurer, Metric, Options, RunError, RunRecord, COUNTER_METRICS, ENERGY_METRICS,
};
use pinsight_sys::sched::process_cpu_time_ns;
use pinsight_sys::spawn::{self, Spawn};
use pinsight_sys::FsRoot;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Only a hang fails on time: a busy CI machine may be slow, never wrong.
const HANG_GUARD: Duration = Duration::from_secs(30);

const CHILD: &str = "PINSIGHT_MEASURE_CHILD";

/// Entry point when this binary is spawned as a workload: ignored in a
/// normal run (it is not a test), run with `--ignored` by [`spin`].
#[test]
#[ignore = "the spawned workload's entry point, not a test"]
fn child_entry() {
    let Ok(mode) = std::env::var(CHILD) else {
        return;
    };
    if let Some(ms) = mode.strip_prefix("spin:") {
        let target = ms.parse::<u64>().unwrap() * 1_000_000;
        let start = process_cpu_time_ns();
        let mut x = 0u64;
        while process_cpu_time_ns() - start < target {
            for i in 0..1000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
            }
        }
    }
}

/// This binary, spinning for `ms` of CPU time.
fn spin(ms: u64) -> Spawn {
    let mut c = Spawn::new(std::env::current_exe().unwrap());
    c.args([
        pinsight_testkit::test_path(module_path!(), "child_entry").as_str(),
        "--exact",
        "--ignored",
        "--test-threads=1",
        "-q",
    ])
    .env(CHILD, format!("spin:{ms}"))
    .stdout(spawn::Stdio::Null)
    .stdin(spawn::Stdio::Null);
    c
}

fn sh(script: &str) -> Spawn {
    let mut c = Spawn::new("sh");
    c.arg("-c").arg(script).stdin(spawn::Stdio::Null);
    c
}

fn measurer(opts: Options) -> Measurer {
    Measurer::new(&FsRoot::live(), opts).0
}

fn value(m: &Metric) -> f64 {
    m.get()
        .unwrap_or_else(|| panic!("expected a value, got {m}"))
}

#[test]
fn task_clock_agrees_with_user_plus_sys_on_a_cpu_bound_child() {
    let m = measurer(Options::default());
    let s0 = pinsight_testkit::steal_ms();
    let r = m.run(spin(300)).unwrap();
    let stolen = pinsight_testkit::steal_ms() - s0;
    assert_eq!(r.exit.code, Some(0), "{r:?}");
    let cpu_ms = (r.user_s + r.sys_s) * 1000.0;
    let task_ms = value(&r.counters.task_clock_ms);
    assert!(cpu_ms >= 290.0, "{cpu_ms}");
    // Within 5%, plus what the hypervisor stole meanwhile (task-clock
    // counts it, rusage does not).
    assert!(
        task_ms >= cpu_ms * 0.95 && task_ms <= cpu_ms * 1.05 + stolen,
        "task-clock {task_ms:.1} ms vs user+sys {cpu_ms:.1} ms (steal {stolen:.0} ms)"
    );
    assert!(
        r.wall_s * 1000.0 >= task_ms * 0.95,
        "wall {} s < task-clock {task_ms} ms",
        r.wall_s
    );
    assert!(value(&r.counters.page_faults) > 10.0);
    // Counts: whole, finite, non-negative numbers (zero is a fair count).
    for count in [&r.counters.context_switches, &r.counters.cpu_migrations] {
        let v = value(count);
        assert!(v.is_finite() && v >= 0.0 && v.fract() == 0.0, "{count}");
    }
    assert!(r.max_rss_kib > 0);
    assert!(r.max_rss_floor_kib > 0);
    // Hardware counters: a value on machines with a PMU, an honest reason
    // otherwise — never a fake 0.
    match &r.counters.cycles {
        Metric::Value(c) => {
            assert!(*c > 1e8);
            assert!(value(&r.counters.avg_ghz) > 0.1);
        }
        Metric::Unavailable { reason } => {
            assert!(!reason.is_empty());
            assert_eq!(r.counters.ipc.reason().map(|s| !s.is_empty()), Some(true));
        }
    }
}

#[test]
fn counters_follow_the_whole_process_tree() {
    let m = measurer(Options::default());
    let exe = std::env::current_exe().unwrap();
    let script = format!(
        "{0} {1} --exact --ignored --test-threads=1 -q >/dev/null & {0} {1} --exact --ignored --test-threads=1 -q >/dev/null; wait",
        exe.display(),
        pinsight_testkit::test_path(module_path!(), "child_entry")
    );
    let mut c = sh(&script);
    c.env(CHILD, "spin:150");
    let s0 = pinsight_testkit::steal_ms();
    let r = m.run(c).unwrap();
    let stolen = pinsight_testkit::steal_ms() - s0;
    let task_ms = value(&r.counters.task_clock_ms);
    assert!(
        task_ms >= 290.0,
        "two 150 ms grandchildren, task-clock {task_ms} ms"
    );
    let cpu_ms = (r.user_s + r.sys_s) * 1000.0;
    // Two accountings of the same CPU time (perf's task-clock, the
    // kernel's rusage): within 12%, plus what the hypervisor stole
    // meanwhile (task-clock counts it, rusage does not).
    assert!(
        task_ms >= cpu_ms * 0.88 && task_ms <= cpu_ms * 1.12 + stolen,
        "task-clock {task_ms} vs user+sys {cpu_ms} (steal {stolen:.0} ms)"
    );
}

/// Counters live on the measurer's spawner thread and every run is
/// counted as the difference of two readings: each of many short runs in a
/// row (the kernel's context swap between a parent and a child that
/// inherited all its events, if not prevented, leaves every run after the
/// first at 0) counts its own work, none of the previous runs', and a
/// wall time that starts at the exec, not at the fork.
#[test]
fn every_run_of_a_series_is_counted_and_timed_on_its_own() {
    let m = measurer(Options::default());
    for i in 0..25 {
        let r = m.run(sh("true; true")).unwrap();
        let pf = value(&r.counters.page_faults);
        let task_ms = value(&r.counters.task_clock_ms);
        // sh plus two builtins: dozens of page faults, well under 50 ms.
        assert!(
            (10.0..5000.0).contains(&pf) && task_ms > 0.0 && task_ms < 50.0 + r.wall_s * 1e3,
            "run {i}: page faults {pf}, task-clock {task_ms} ms: {r:?}"
        );
        assert!(
            r.wall_s > 0.0 && r.wall_s < HANG_GUARD.as_secs_f64(),
            "{r:?}"
        );
    }
}

#[test]
fn exit_codes_and_signals_are_recorded() {
    let m = measurer(Options::default());
    let r = m.run(sh("exit 3")).unwrap();
    assert_eq!(
        (r.exit.code, r.exit.signal, r.timed_out),
        (Some(3), None, false)
    );
    let r = m.run(sh("kill -SEGV $$")).unwrap();
    assert_eq!((r.exit.code, r.exit.signal), (None, Some(libc::SIGSEGV)));
    assert_eq!(r.exit.shell_code(), 128 + libc::SIGSEGV);
}

#[test]
fn missing_and_unexecutable_commands_are_distinct_errors() {
    for opts in [
        Options::default(),
        Options {
            counters: false,
            ..Options::default()
        },
    ] {
        let m = measurer(opts);
        let e = m
            .run(Spawn::new("pinsight-no-such-command-xyz"))
            .unwrap_err();
        assert!(
            matches!(&e, RunError::Program(p) if p.program() == "pinsight-no-such-command-xyz"),
            "{e:?}"
        );
        assert_eq!(e.exit_code(), 127);
        assert_eq!(
            e.to_string(),
            "pinsight-no-such-command-xyz: command not found"
        );
        let e = m.run(Spawn::new("/nonexistent/dir/prog")).unwrap_err();
        assert_eq!(e.exit_code(), 127, "{e:?}");
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("not-executable");
        std::fs::write(&f, "data").unwrap();
        let e = m.run(Spawn::new(&f)).unwrap_err();
        assert_eq!(e.exit_code(), 126, "{e:?}");
    }
}

#[test]
fn failed_placement_steps_surface_as_spawn_errors() {
    let m = measurer(Options::default());
    let mut c = Spawn::new("true");
    // An empty CPU mask: the child's sched_setaffinity fails (EINVAL).
    c.affinity_words(vec![0]);
    let e = m.run(c).unwrap_err();
    assert!(
        matches!(&e, RunError::Program(p) if p.exit_code() == 1),
        "{e:?}"
    );
}

/// Whether `pid` is gone (or a zombie awaiting its new parent).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rsplit(')')
            .next()
            .map(|t| t.trim_start().starts_with('Z'))
            .unwrap_or(false),
    }
}

fn wait_gone(pids: &[i32]) {
    let t = Instant::now();
    while !pids.iter().all(|&p| gone(p)) {
        assert!(t.elapsed() < HANG_GUARD, "leftover processes: {pids:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn pids_in(file: &Path) -> Vec<i32> {
    std::fs::read_to_string(file)
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

/// Runs `prefix` then a shell sleeping 30 s beside a child doing the same
/// (their pids written to `pids`) under `m`, which must time it out.
fn timed_out(m: &Measurer, prefix: &str, pids: &Path) -> RunRecord {
    let r = m
        .run(sh(&format!(
            "{prefix}sleep 30 & echo $$ $! > {}; sleep 30",
            pids.display()
        )))
        .unwrap();
    assert!(r.timed_out, "{r:?}");
    r
}

#[test]
fn timeout_terms_then_kills_the_whole_group() {
    let d = tempfile::tempdir().unwrap();
    let pids = d.path().join("pids");
    let m = measurer(Options {
        timeout: Some(Duration::from_millis(300)),
        kill_grace: Duration::from_millis(100),
        ..Options::default()
    });
    // Ignores SIGTERM (inherited by its children): needs the SIGKILL.
    let r = timed_out(&m, "trap '' TERM; ", &pids);
    assert_eq!(r.exit.signal, Some(libc::SIGKILL), "{r:?}");
    assert!(r.wall_s >= 0.39 && r.wall_s < 2.0, "{}", r.wall_s);
    wait_gone(&pids_in(&pids));

    // A polite process ends on SIGTERM.
    let r = timed_out(&m, "", &pids);
    assert_eq!(r.exit.signal, Some(libc::SIGTERM), "{r:?}");
    assert!(r.wall_s >= 0.29 && r.wall_s < 0.39 + 1.0, "{}", r.wall_s);
    wait_gone(&pids_in(&pids));
}

#[test]
fn leftovers_are_killed_unless_asked_not_to() {
    let d = tempfile::tempdir().unwrap();
    let pids = d.path().join("pids");
    let script = format!("sleep 30 & echo $! > {}", pids.display());
    let r = measurer(Options::default()).run(sh(&script)).unwrap();
    assert_eq!(r.exit.code, Some(0));
    wait_gone(&pids_in(&pids));

    let r = measurer(Options {
        kill_leftovers: false,
        ..Options::default()
    })
    .run(sh(&script))
    .unwrap();
    assert_eq!(r.exit.code, Some(0));
    let left = pids_in(&pids)[0];
    assert!(
        !gone(left),
        "kill_leftovers=false must leave the daemon alone"
    );
    // SAFETY: plain kill of the process this test started.
    unsafe { libc::kill(left, libc::SIGKILL) };
}

#[test]
fn counters_off_still_measures_times() {
    let (m, notes) = Measurer::new(
        &FsRoot::live(),
        Options {
            counters: false,
            energy: false,
            ..Options::default()
        },
    );
    assert_eq!(notes, vec!["counters: off", "energy: off"]);
    let r = m.run(spin(50)).unwrap();
    assert!(r.user_s + r.sys_s >= 0.045, "{r:?}");
    assert_eq!(r.counters.task_clock_ms.reason(), Some("counters off"));
    assert_eq!(
        r.energy.energy_pkg_j.reason(),
        Some("energy measurement off")
    );
    // Context switches and page faults are the run's rusage: counted
    // with the counters off too.
    assert!(r.counters.page_faults.get().unwrap() > 10.0, "{r:?}");
    assert!(r.counters.context_switches.get().is_some(), "{r:?}");
    // Every other metric is unavailable in every run, for the run's reason.
    let table = m.unavailable_in_every_run();
    assert_eq!(table.len(), 12, "{table:?}");
    assert!(!table.contains_key("page_faults") && !table.contains_key("context_switches"));
    assert_same_reasons(&table, r);
}

/// Each metric `table` names is unavailable in `r` for that reason (what a
/// journal leaves out of `r`'s line and gives back when reading it).
fn assert_same_reasons(table: &std::collections::BTreeMap<String, String>, mut r: RunRecord) {
    let mut named = 0;
    for (name, m) in r.metrics_mut() {
        if let Some(reason) = table.get(name) {
            assert_eq!(m.reason(), Some(reason.as_str()), "{name}");
            named += 1;
        }
    }
    assert_eq!(named, table.len(), "{table:?}");
}

#[test]
fn pmu_less_fake_machine_measures_software_events_and_says_why_not_hardware() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("sys/bus/event_source/devices/software")).unwrap();
    std::fs::write(
        d.path().join("sys/bus/event_source/devices/software/type"),
        "1",
    )
    .unwrap();
    let (m, notes) = Measurer::new(&FsRoot::at(d.path()).unwrap(), Options::default());
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("counters: hardware unavailable: no hardware PMU")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.starts_with("energy: no RAPL")),
        "{notes:?}"
    );
    let r = m.run(Spawn::new("true")).unwrap();
    assert!(value(&r.counters.task_clock_ms) > 0.0);
    for hw in [
        &r.counters.cycles,
        &r.counters.instructions,
        &r.counters.ipc,
        &r.counters.cache_misses,
        &r.counters.avg_ghz,
    ] {
        assert!(hw.reason().unwrap().starts_with("no hardware PMU"), "{hw}");
    }
    assert!(r.counters.per_pmu.is_empty());
    assert!(r
        .energy
        .energy_pkg_j
        .reason()
        .unwrap()
        .starts_with("no RAPL"));
    // The hardware counters, IPC and GHz and every energy domain: never
    // the software counters, which count.
    let table = m.unavailable_in_every_run();
    assert!(table.contains_key("cycles") && table.contains_key("energy_psys_j"));
    assert!(!table.contains_key("task_clock_ms") && !table.contains_key("page_faults"));
    assert_same_reasons(&table, r);
}

#[test]
fn energy_is_sampled_around_the_run_on_a_fake_powercap_tree() {
    let d = tempfile::tempdir().unwrap();
    let z = d.path().join("sys/class/powercap/intel-rapl:0");
    std::fs::create_dir_all(&z).unwrap();
    std::fs::write(z.join("name"), "package-0\n").unwrap();
    std::fs::write(z.join("max_energy_range_uj"), "10000000\n").unwrap();
    std::fs::write(z.join("energy_uj"), "9000000\n").unwrap();
    let (m, _) = Measurer::new(&FsRoot::at(d.path()).unwrap(), Options::default());
    // The "package" consumes 1.5 J during the run, wrapping at 10 J.
    let r = m
        .run(sh(&format!(
            "echo 500000 > {}",
            z.join("energy_uj").display()
        )))
        .unwrap();
    assert_eq!(r.energy.energy_pkg_j, Metric::Value(1.5));
    assert!(r
        .energy
        .energy_core_j
        .reason()
        .unwrap()
        .starts_with("no core RAPL zone"));
}

#[test]
fn records_round_trip_through_json_with_stable_names() {
    let r = measurer(Options::default())
        .run(Spawn::new("true"))
        .unwrap();
    let j = serde_json::to_value(&r).unwrap();
    let own = [
        "wall_s",
        "user_s",
        "sys_s",
        "max_rss_kib",
        "max_rss_floor_kib",
        "exit",
        "timed_out",
        "per_pmu",
        "multiplexed",
    ];
    for k in own.into_iter().chain(COUNTER_METRICS).chain(ENERGY_METRICS) {
        assert!(j.get(k).is_some(), "missing {k} in {j}");
    }
    assert_eq!(j["exit"], serde_json::json!({"code": 0, "signal": null}));
    let back: RunRecord = serde_json::from_value(j).unwrap();
    assert_eq!(back, r);
}

/// What each part of the measuring adds to a run of `true`: the median,
/// over rounds, of each way's wall time a run (a round runs every way
/// `n` times, in a rotating order), from a bare start up to everything a
/// measured run does (`cargo test --release -p pinsight-measure --test
/// integration -- --ignored cost_of_a_run_by_part --nocapture`). The two
/// bare ways are the floor: `std::process::Command` (glibc's
/// `posix_spawn`, hyperfine's way) and pinsight's own spawn reaped with
/// `wait4`.
#[test]
#[ignore = "timing probe, run by hand"]
fn cost_of_a_run_by_part() {
    fn cpu_s() -> f64 {
        let t = |who| {
            // SAFETY: getrusage fills the struct.
            let mut r: libc::rusage = unsafe { std::mem::zeroed() };
            unsafe { libc::getrusage(who, &mut r) };
            r.ru_utime.tv_sec as f64
                + r.ru_utime.tv_usec as f64 * 1e-6
                + r.ru_stime.tv_sec as f64
                + r.ru_stime.tv_usec as f64 * 1e-6
        };
        t(libc::RUSAGE_SELF) + t(libc::RUSAGE_CHILDREN)
    }
    let (n, rounds) = (200, 7);
    // (counters, disturbance threshold) of a measurer; `None`: bare.
    type Way = Option<(bool, Option<f64>)>;
    let variants: [(&str, Way); 6] = [
        ("std Command", None),
        ("bare spawn", None),
        ("neither", Some((false, None))),
        ("no counters", Some((false, Some(0.05)))),
        ("no disturbance", Some((true, None))),
        ("everything", Some((true, Some(0.05)))),
    ];
    let measurers: Vec<Option<Measurer>> = variants
        .iter()
        .map(|(_, v)| {
            v.map(|(counters, disturbance)| {
                measurer(Options {
                    counters,
                    disturbance,
                    energy: false,
                    ..Options::default()
                })
            })
        })
        .collect();
    let mut prebuild = Spawn::new("true");
    prebuild.stdin(spawn::Stdio::Null);
    let prebuilt = prebuild.prebuild().unwrap();
    let command = || {
        let mut s = Spawn::new("true");
        s.stdin(spawn::Stdio::Null);
        s.reuse(&prebuilt);
        s
    };
    let mut wall = vec![Vec::new(); variants.len()];
    let mut cpu = vec![Vec::new(); variants.len()];
    for round in 0..rounds {
        for k in 0..variants.len() {
            let i = (k + round) % variants.len();
            let (t, c0) = (Instant::now(), cpu_s());
            for _ in 0..n {
                match (i, &measurers[i]) {
                    (0, _) => {
                        let st = Command::new("true").stdin(Stdio::null()).status().unwrap();
                        assert!(st.success());
                    }
                    (_, None) => {
                        let child = command().spawn().unwrap();
                        let (mut status, mut ru) = (0, unsafe { std::mem::zeroed() });
                        // SAFETY: our child; status and rusage are filled in.
                        unsafe { libc::wait4(child.pid, &mut status, 0, &mut ru) };
                    }
                    (_, Some(m)) => {
                        m.run(command()).unwrap();
                    }
                }
            }
            wall[i].push(t.elapsed().as_secs_f64() / n as f64);
            cpu[i].push((cpu_s() - c0) / n as f64);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let floor = median(&mut wall[1].clone());
    for (i, (name, _)) in variants.iter().enumerate() {
        let w = median(&mut wall[i]);
        eprintln!(
            "{name:>15}: {:7.1} µs a run ({:+6.1} µs beside the bare spawn), {:7.1} µs CPU a run",
            w * 1e6,
            (w - floor) * 1e6,
            median(&mut cpu[i]) * 1e6
        );
    }
}

/// Back-to-back runs share a `/proc/stat` read, but never across another
/// program: CPU time a command run in between takes (a `--prepare`) is
/// not the next run's disturbance. On a fake `/proc/stat` the programs
/// themselves move the counters.
#[test]
fn a_program_run_between_two_runs_is_not_their_disturbance() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("proc")).unwrap();
    let stat = d.path().join("proc/stat");
    let text = |cpu1_busy: u64| {
        format!("cpu  0 0 0 0\ncpu0 100 0 100 5000 0 0 0 0\ncpu1 {cpu1_busy} 0 100 5000 0 0 0 0\nprocs_running 1\n")
    };
    std::fs::write(&stat, text(100)).unwrap();
    let fs = FsRoot::at(d.path()).unwrap();
    let opts = Options {
        counters: false,
        energy: false,
        ..Options::default()
    };
    let writes = |busy: u64| {
        sh(&format!(
            "printf '{}' > {}",
            text(busy).replace('\n', "\\n"),
            stat.display()
        ))
    };
    let (m, _) = Measurer::new(&fs, opts.clone());
    let (prepare, _) = Measurer::new(&fs, opts);
    // 5 s of other work on CPU 1 during the first run.
    let r1 = m.run(writes(600)).unwrap();
    let d1 = r1.disturbance.expect("fake /proc/stat read");
    assert!((d1.other_s - 5.0).abs() < 0.1, "{d1:?}");
    assert!(d1.disturbed && d1.worst().unwrap().0 == 1, "{d1:?}");
    // 3 s more while another program ran between the runs.
    prepare.run(writes(900)).unwrap();
    let r2 = m.run(Spawn::new("true")).unwrap();
    let d2 = r2.disturbance.expect("fake /proc/stat read");
    assert!(d2.other_s < 0.1 && !d2.disturbed, "{d2:?}");
}
