//! `pinsight emulate` on this machine: a program runs on the emulated
//! machine with the declaration exported and its own exit status, and a
//! `kill -9` of pinsight mid-emulation leaves no stealer behind. (The
//! frequency-cap half of that guarantee is tested on fake sysfs trees in
//! pinsight-emulate's suite: this machine may have no cpufreq.)

use crate::common_emulation::{read_report, stealer_of};
use crate::common_live::{assert_exit, entry, BIN};
use pinsight_testkit::premise::Live;
use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// pinsight, and what it runs, at nice -20 in an autogroup of its own
/// (see [`super::emulate_dynamic_live::at_high_priority`]): at nice 0 other
/// load on a busy machine hides the slowed CPU (speed saw E/P 1.06 for 0.5
/// at a load average of 8).
fn pinsight() -> Command {
    let mut c = Command::new(BIN);
    crate::common_signals::at_default(&mut c);
    super::emulate_dynamic_live::at_high_priority(&mut c);
    c
}

/// The second usable CPU as `E@SPEED`, every other usable CPU as `P` (on
/// this 2-CPU VM `0:P,1:E@SPEED`); `None` (a counted skip) with fewer than
/// two, or without the right to run real-time stealers.
fn kinds(speed: &str) -> Option<String> {
    let cpus = pinsight_testkit::usable_cpus();
    if cpus.len() < 2 {
        pinsight_testkit::skip("emulation needs two usable CPUs");
        return None;
    }
    if pinsight_sys::process::geteuid() != 0 {
        pinsight_testkit::skip("duty-cycle stealers need root (SCHED_FIFO)");
        return None;
    }
    let p: pinsight_cpuset::CpuSet = cpus.iter().copied().filter(|&c| c != cpus[1]).collect();
    Some(format!("{p}:P,{}:E@{speed}", cpus[1]))
}

/// The common start: the live premise on every usable CPU, then the
/// kinds with the second usable CPU at 0.5 ([`kinds`]); `None` after a
/// counted skip.
fn begin() -> Option<(Live, String)> {
    let live = pinsight_testkit::premise::live_on_usable()?;
    Some((live, kinds("0.5")?))
}

/// `pinsight emulate --kinds KINDS -- true`, to its end.
fn emulate_true(kinds: &str) -> Output {
    pinsight()
        .args(["emulate", "--kinds", kinds, "--", "true"])
        .output()
        .unwrap()
}

/// `pinsight emulate --quiet --kinds KINDS --mechanism duty-cycle`
/// holding (no CMD), started.
fn emulation(kinds: &str) -> std::process::Child {
    pinsight()
        .args(["emulate", "--quiet", "--kinds", kinds])
        .args(["--mechanism", "duty-cycle"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The first line of `child`'s stdout: the report, printed once
/// calibration is done and the stealers run.
fn first_line(child: &mut std::process::Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    line
}

/// Every process whose parent is `pid` (from /proc/*/stat).
fn children(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let ppid = stat[close + 2..].split_whitespace().nth(1);
        if ppid == Some(pid.to_string().as_str()) {
            out.push(p);
        }
    }
    out
}

/// Gone, or a zombie (dead, its exit not yet collected by its new parent).
fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(s) => s
            .rfind(')')
            .is_some_and(|c| s[c + 2..].starts_with(['Z', 'X'])),
    }
}

/// Every JSON document in `text` from its first '{' on (emulate's report,
/// then with a program its `end_check`).
fn json_docs(text: &str) -> Vec<serde_json::Value> {
    let from = text.find('{').expect("a JSON report");
    serde_json::Deserializer::from_str(&text[from..])
        .into_iter::<serde_json::Value>()
        .map(|d| d.unwrap_or_else(|e| panic!("{e}: {text}")))
        .collect()
}

/// The real-time (FIFO or RR) threads of `pids`, dead ones left out.
fn realtime_threads(pids: &[i32]) -> Vec<i32> {
    let mut out = Vec::new();
    for &pid in pids {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
                continue;
            };
            let Some(close) = stat.rfind(')') else {
                continue;
            };
            let rest: Vec<&str> = stat[close + 2..].split_whitespace().collect();
            let policy = rest.get(41 - 3).copied();
            if !rest[0].starts_with(['Z', 'X']) && matches!(policy, Some("1" | "2")) {
                out.push(t.file_name().to_string_lossy().parse().unwrap_or(0));
            }
        }
    }
    out
}

/// pinsight and its children.
fn family(pid: u32) -> Vec<i32> {
    let mut v = vec![pid as i32];
    v.extend(children(pid));
    v
}

/// `kill -9` of `emulate`, mid-calibration or while it holds: no
/// SCHED_FIFO task of pinsight's (its probes, its stealers) 0.2 s later
/// (the stealers die with it: PR_SET_PDEATHSIG, and their period check).
#[test]
fn sigkill_leaves_no_realtime_task_of_pinsight_after_200_ms() {
    let Some((_live, kinds)) = begin() else {
        return;
    };
    let mut worst = Duration::ZERO;
    for (i, delay) in [300u64, 900, 1700, 0].into_iter().enumerate() {
        let mut child = emulation(&kinds);
        if delay == 0 {
            // Holding: the report is out, the stealers run.
            first_line(&mut child);
        } else {
            std::thread::sleep(Duration::from_millis(delay));
        }
        let watched = family(child.id());
        let before = realtime_threads(&watched);
        child.kill().unwrap();
        let killed = Instant::now();
        child.wait().unwrap();
        while !realtime_threads(&watched).is_empty() && killed.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let took = killed.elapsed();
        worst = worst.max(took);
        let left = realtime_threads(&watched);
        assert!(
            left.is_empty() && took < Duration::from_millis(200),
            "kill -9 #{i} ({delay} ms in; real-time before {before:?}): {left:?} left after {took:?}"
        );
        if delay == 0 {
            assert!(!before.is_empty(), "no stealer seen while holding");
        }
    }
    eprintln!("kill -9: real-time tasks gone within {worst:?}");
}

/// SIGINT, SIGTERM and SIGHUP during calibration end pinsight with 130,
/// 143 and 129 (it died of the signal), one line, and no stealer left.
/// The signal goes once a real-time task of the emulation runs (its
/// probes or stealers: calibration is under way), plus a delay; a fixed
/// delay from the start once came after a calibration that took under
/// 1.2 s, and `true` had already exited 0. The program is `sleep 30`, so
/// a signal that still comes too late finds calibration done (its
/// report on stderr): a counted skip, not a pass.
#[test]
fn a_signal_during_calibration_exits_128_plus_n_leaving_nothing() {
    let Some((_live, kinds)) = begin() else {
        return;
    };
    for (sig, code, delay) in [
        (libc::SIGINT, 130, 100u64),
        (libc::SIGTERM, 143, 0),
        (libc::SIGHUP, 129, 200),
    ] {
        let child = pinsight()
            .args(["emulate", "--kinds", &kinds])
            .args(["--mechanism", "duty-cycle", "--", "sleep", "30"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while realtime_threads(&family(child.id())).is_empty()
            && started.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        let first_rt =
            (!realtime_threads(&family(child.id())).is_empty()).then(|| started.elapsed());
        std::thread::sleep(Duration::from_millis(delay));
        let watched = family(child.id());
        let signalled = started.elapsed();
        pinsight_sys::process::kill(child.id() as i32, sig).unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !stderr.contains("stopped during calibration") && stderr.contains("Emulated core kinds")
        {
            let first = first_rt.map_or("no real-time task seen in 10 s".to_string(), |t| {
                format!("the first real-time task seen at {t:?}")
            });
            pinsight_testkit::skip(format!(
                "signal {sig}: premise failed: calibration ended before the signal, sent \
                 {signalled:?} after the start ({first})"
            ));
            // The emulation held: let it end before the next round.
            continue;
        }
        assert_eq!(out.status.code(), Some(code), "signal {sig}: {stderr}");
        assert!(
            stderr.contains("stopped during calibration; nothing is left slowed"),
            "{stderr}"
        );
        let left: Vec<i32> = watched[1..].iter().copied().filter(|&p| !dead(p)).collect();
        assert!(left.is_empty(), "signal {sig}: left {left:?}");
    }
}

/// A missing program is found before seconds of calibration (5.7 s were
/// spent before exit 127).
#[test]
fn a_missing_program_exits_127_before_calibrating() {
    let Some((_live, kinds)) = begin() else {
        return;
    };
    let t = Instant::now();
    let out = pinsight()
        .args(["emulate", "--kinds", &kinds, "--", "/nonexistent/prog"])
        .output()
        .unwrap();
    let took = t.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(127), "{stderr}");
    assert!(stderr.contains("/nonexistent/prog"), "{stderr}");
    assert!(took < Duration::from_millis(500), "took {took:?}");
}

/// One emulation owns the machine: a second one is refused naming the
/// first's PID; and before calibrating, another real-time task taking
/// half of the slowed CPU is named and refused, `--force` goes on, and
/// once that task is gone the end check reports the drift (the knob was
/// tuned beside it).
#[test]
fn a_second_emulation_and_a_busy_realtime_task_are_refused() {
    let Some((_live, kinds)) = begin() else {
        return;
    };
    let e = pinsight_testkit::usable_cpus()[1];
    let mut first = emulation(&kinds);
    first_line(&mut first);
    let t = Instant::now();
    let second = emulate_true(&kinds);
    let took = t.elapsed();
    pinsight_sys::process::kill(first.id() as i32, libc::SIGTERM).unwrap();
    first.wait().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("another emulation runs (PID {}", first.id())),
        "{stderr}"
    );
    assert!(took < Duration::from_millis(500), "refused after {took:?}");

    // A real-time task (FIFO priority 3, above the stealers) taking half
    // of CPU e, as another emulation's stealer would. Its period, 7 ms,
    // is not a multiple of the stealers' (2 or 5 ms), so their busy
    // windows drift past each other rather than lock in one phase: with
    // the same 2 ms period, a stealer whose window fell inside this
    // task's took nothing more during calibration and all of its share
    // afterwards, and the emulation rightly ended at the speed asked.
    let other = pinsight_sys::stealer::Stealer::spawn(
        e,
        3,
        Duration::from_millis(7),
        Duration::from_micros(3500),
    )
    .unwrap();
    let refused = emulate_true(&kinds);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("PID {} (", other.pid())) && stderr.contains("--force"),
        "{stderr}"
    );
    // --force: calibrated beside it; the task ends while CMD runs.
    let mut forced = pinsight()
        .args(["emulate", "--json", "--force", "--kinds", &kinds])
        .args(["--mechanism", "duty-cycle", "--", "sh", "-c"])
        .arg("echo \"$PINSIGHT_EMULATION_STEALERS\"; exec sleep 2")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(forced.stderr.take().unwrap());
    // Everything up to the end of the report: the note, then the report.
    let (said, report) = read_report(&mut err);
    let mut text = said + &report;
    let stealer = stealer_of(&first_line(&mut forced), e);
    drop(other);
    // The speed CPU e has now, measured outside pinsight: 1 less the
    // share its stealer takes (its own CPU time over a second).
    std::thread::sleep(Duration::from_millis(200));
    let cpu_s = || pinsight_testkit::premise::cpu_seconds(stealer).unwrap();
    let (t0, c0) = (Instant::now(), cpu_s());
    std::thread::sleep(Duration::from_millis(1200));
    let seen = 1.0 - (cpu_s() - c0) / t0.elapsed().as_secs_f64();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert_eq!(forced.wait().unwrap().code(), Some(0), "{text}{rest}");
    text.push_str(&rest);
    let docs = json_docs(&text);
    assert_eq!(docs[0]["contention"]["forced"], true, "{text}");
    // The end check measures what CPU e really runs at, and calls it a
    // drift exactly when that is beyond the tolerance of the speed asked.
    let end = &docs[1]["end_check"];
    let kind = &end["kinds"][0];
    let achieved = kind["achieved"]["median"].as_f64().unwrap();
    let tolerance = end["tolerance"].as_f64().unwrap();
    eprintln!(
        "CPU {e} after the task ended: {seen:.3} (its stealer's share); end check {achieved:.3}"
    );
    assert!(
        (achieved - seen).abs() <= 0.1,
        "end check {achieved:.3}, the stealer leaves {seen:.3}: {text}"
    );
    let drift_seen = (seen / 0.5 - 1.0).abs();
    if (drift_seen - tolerance).abs() > 0.05 {
        assert_eq!(
            kind["within_tolerance"],
            drift_seen <= tolerance,
            "speed {seen:.3} for 0.5 asked: {text}"
        );
    }
}

#[test]
fn sigkill_mid_emulation_leaves_no_stealer_within_a_second() {
    let Some((_live, kinds)) = begin() else {
        return;
    };
    let mut child = emulation(&kinds);
    let first = first_line(&mut child);
    assert!(first.contains("duty-cycle"), "{first}");
    let stealers = children(child.id());
    assert!(!stealers.is_empty(), "no stealer process under pinsight");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let killed = Instant::now();
    while !stealers.iter().all(|&p| dead(p)) && killed.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let left: Vec<i32> = stealers.into_iter().filter(|&p| !dead(p)).collect();
    assert!(left.is_empty(), "stealers left 1 s after kill -9: {left:?}");
}

#[test]
fn a_program_runs_emulated_with_the_kinds_exported_and_its_status_kept() {
    let Some((_live, kinds)) = begin() else {
        return;
    };
    let out = pinsight()
        .args(["emulate", "--json", "--kinds", &kinds, "--"])
        .args([
            "sh",
            "-c",
            "echo \"$PINSIGHT_KINDS $PINSIGHT_EMULATING\"; exit 7",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 7);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.trim(), format!("{kinds} duty-cycle"));
    // The report (JSON on stderr with a program), after the kinds note,
    // then the end check.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let docs = json_docs(&stderr);
    assert_eq!(docs.len(), 2, "{stderr}");
    let v = &docs[0];
    let end = &docs[1]["end_check"];
    assert_eq!(end["kinds"][0]["asked"], 0.5);
    assert!(end["kinds"][0]["achieved"]["median"].as_f64().is_some());
    assert!(end["kinds"][0]["drift"].as_f64().is_some());
    assert!(end["kinds"][0]["within_tolerance"].is_boolean());
    // Nothing else ran real-time there before calibrating.
    let c = &v["contention"];
    assert_eq!(c["forced"], false, "{c}");
    assert!(c["cpus"].as_array().is_some_and(|a| a.len() >= 2), "{c}");
    assert_eq!(v["mechanism"], "duty-cycle");
    let achieved = v["kinds"][0]["achieved"]["median"].as_f64().unwrap();
    // Wide margins: the machine may be busy (the benchmark holds the 5% target).
    assert!(
        (0.35..0.65).contains(&achieved),
        "achieved {achieved} for 0.5"
    );
    assert!(v["limits"][0].as_str().unwrap().contains("time share"));
    // A nested emulation is refused.
    let nested = pinsight()
        .args(["emulate", "--kinds", &kinds, "--", BIN])
        .args(["emulate", "--kinds", &kinds])
        .output()
        .unwrap();
    assert_eq!(nested.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&nested.stderr).contains("already inside"));
}

/// `compare --policies p-pinned,e-pinned -t 1` on the emulated machine
/// (CPU 1 at 0.5) finds e-pinned slower, significantly: the arm's speed
/// against p-pinned near the achieved 0.5 (wide margins: ordinary load on
/// a busy machine moves off the slowed CPU onto the fast one, which
/// narrows the gap a nice-0 program sees; on an idle machine it is 0.5).
#[test]
fn compare_finds_the_emulated_p_e_difference_significant() {
    let Some((_live, kinds)) = begin() else {
        return;
    };
    // compare writes its journal in the working directory.
    let d = tempfile::tempdir().unwrap();
    let out = pinsight()
        .current_dir(d.path())
        .args(["emulate", "--quiet", "--kinds", &kinds, "--", BIN])
        .args([
            "compare",
            "--quiet",
            "--json",
            "--policies",
            "p-pinned,e-pinned",
        ])
        .args([
            "-t", "1", "--runs", "8", "--", BIN, "workload", "pi", "--size", "1e8",
        ])
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let e = entry(&v["arms"], "id", "e-pinned").expect("an e-pinned arm");
    let t = &e["time_vs_baseline"];
    let ratio = t["ratio"].as_f64().unwrap();
    let p = t["p"].as_f64().unwrap();
    assert!(
        (0.3..0.8).contains(&ratio),
        "e-pinned speed vs p-pinned {ratio}: {t}"
    );
    assert!(p < 0.05, "not significant: p = {p}: {t}");
}

/// `speed` on the emulated machine (CPU 1 at 0.5) measures the E/P ratio
/// near the achieved one: under a duty-cycle emulation it counts the
/// descheduled time (over 20 ms blocks) instead of dropping those chunks.
/// On an idle machine the two agree within 10%; here the check is only
/// that speed sees the CPU clearly slowed (ratio under 0.8 where 1.0 is
/// the old blind answer) and not much more than asked: speed's kernels run
/// at nice 0 and count descheduled time on both CPUs, so ordinary load on
/// a busy machine, moving off the slowed CPU onto the fast one, narrows
/// the gap they see (0.68 for 0.5 with six compilers on two CPUs).
#[test]
fn speed_measures_the_emulated_ratio() {
    let Some((_live, kinds)) = begin() else {
        return;
    };
    let out = pinsight()
        .args([
            "emulate",
            "--json",
            "--kinds",
            &kinds,
            "--mechanism",
            "duty-cycle",
            "--",
            BIN,
        ])
        .args([
            "speed",
            "--quiet",
            "--json",
            "--kernels",
            "int,fp",
            "--budget",
            &format!("{}s", pinsight_testkit::allowed_cpus().len()),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let emulated = json_docs(&stderr).swap_remove(0);
    let achieved = emulated["kinds"][0]["achieved"]["median"].as_f64().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let usable = pinsight_testkit::usable_cpus();
    let cpu = |id: usize| {
        entry(&v["cpus"], "cpu", id)
            .cloned()
            .expect("every usable CPU measured")
    };
    let (p, e) = (cpu(usable[0]), cpu(usable[1]));
    for (i, kernel) in ["int", "fp"].iter().enumerate() {
        let median = |c: &serde_json::Value| c["results"][i]["median"].as_f64().unwrap();
        assert_eq!(p["results"][i]["kernel"], *kernel);
        let ratio = median(&e) / median(&p);
        assert!(
            ratio < 0.8 && ratio > achieved * 0.7,
            "{kernel}: speed says E/P {ratio:.3}, the emulation achieved {achieved:.3}"
        );
    }
}

/// `speed --export-weights` on the emulated machine gives `plan balance`
/// weights that put fewer tasks on the slowed CPU, about in the speed
/// ratio (an equal split without them on this uniform machine; declared
/// kinds alone would already tilt it). The plan applied to busy tasks, with
/// each CPU's busy time, is tested in `emulate_dynamic_live.rs`.
#[test]
fn balance_with_speed_weights_loads_the_slowed_cpu_less() {
    let Some((_live, kinds)) = begin() else {
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let weights = d.path().join("w.json");
    let out = pinsight()
        .args([
            "emulate", "--quiet", "--kinds", &kinds, "--", BIN, "speed", "--quiet",
        ])
        .args([
            "--kernels",
            "int",
            "--budget",
            &format!("{}ms", 500 * pinsight_testkit::allowed_cpus().len()),
            "--export-weights",
        ])
        .arg(&weights)
        .output()
        .unwrap();
    assert_exit(&out, 0);
    let usable = pinsight_testkit::usable_cpus();
    let (p, e) = (usable[0], usable[1]);
    // Tasks on the fast CPU p and on the slowed CPU e.
    let per_cpu = |extra: &[&str]| -> [u64; 2] {
        let out = pinsight()
            .args(["plan", "balance", "--tasks", "60", "--json"])
            .args(extra)
            .output()
            .unwrap();
        assert_exit(&out, 0);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let on = |cpu: usize| {
            entry(&v["tasks_per_cpu"], "cpu", cpu)
                .and_then(|c| c["tasks"].as_u64())
                .unwrap_or(0)
        };
        [on(p), on(e)]
    };
    let even = per_cpu(&[]);
    assert!(even[0].abs_diff(even[1]) <= 1, "equal split {even:?}");
    let weighted = per_cpu(&["--weights", weights.to_str().unwrap()]);
    let share = weighted[1] as f64 / weighted[0] as f64;
    // 0.5 on an idle machine; a busy one narrows the gap speed sees.
    assert!(
        (0.3..0.85).contains(&share),
        "slowed/fast tasks {weighted:?}"
    );
}
