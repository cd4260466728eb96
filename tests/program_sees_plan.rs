//! "The program sees the plan": for every policy, `pinsight run` launches a
//! probe (crates/launch/testprogs/probe.c, compiled here with the system C
//! compiler, dynamically and statically) that reports, from the inside,
//! its affinity at start, the main thread's after it created threads, each
//! thread's affinity and CPU, and its environment. Each report is checked
//! against `pinsight plan POLICY --json` for the same machine and thread
//! count — the plan the user was shown is the plan the program got.
//!
//! Also: a static binary (the shim cannot reach it: the watcher pins and
//! `--report` says so), fork without exec, a failed `pthread_create`,
//! `--pin-main early`, and options misspelt before the program.

use crate::common_cli;

use crate::common_cmd::{assert_exit, assert_has, assert_says, words};
use common_cli::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The probe, built once per test binary: (dynamic, static).
fn probes() -> &'static (PathBuf, PathBuf) {
    static P: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    P.get_or_init(|| {
        // Cargo's scratch space for integration tests (under target/), so
        // nothing is left behind in the system's temporary directory.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("program-sees-plan-probe");
        std::fs::create_dir_all(&dir).unwrap();
        let src = repo().join("crates/launch/testprogs/probe.c");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let build = |out: &Path, extra: &[&str]| {
            let o = Command::new(&cc)
                .args(extra)
                .args(["-O1", "-pthread", "-o"])
                .arg(out)
                .arg(&src)
                .output()
                .unwrap_or_else(|e| panic!("cannot run the C compiler '{cc}': {e}"));
            assert!(
                o.status.success(),
                "{cc} {extra:?} probe.c failed (a C compiler and the static C library, Debian libc6-dev, are test prerequisites):\n{}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        let dynamic = dir.join("probe");
        let stat = dir.join("probe-static");
        build(&dynamic, &[]);
        build(&stat, &["-static"]);
        (dynamic, stat)
    })
}

/// What the probe said.
#[derive(Debug, Default)]
struct Seen {
    /// (phase, index) -> affinity
    aff: BTreeMap<(String, usize), String>,
    /// (phase, index) -> CPU it ran on
    cpu: BTreeMap<(String, usize), usize>,
    env: BTreeMap<String, Option<String>>,
    ncpus: Option<usize>,
    failed_create: bool,
}

impl Seen {
    /// Asserts each (phase, index)'s affinity, as a CPU list.
    fn assert_at(&self, want: &[(&str, usize, &str)]) {
        for (phase, i, list) in want {
            let got = &self.aff[&(phase.to_string(), *i)];
            assert_eq!(got, list, "{phase} {i}: {self:?}");
        }
    }
}

fn parse(text: &str) -> Seen {
    let mut s = Seen::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            ["ncpus", n] => s.ncpus = n.parse().ok(),
            ["env", kv] => {
                let (k, v) = kv.split_once('=').unwrap();
                s.env.insert(k.into(), Some(v.into()));
            }
            ["env", k, "unset"] => {
                s.env.insert((*k).into(), None);
            }
            ["failed_create", _] => s.failed_create = true,
            [phase, i, "tid", _, "cpu", cpu, "affinity", aff, ..] => {
                let key = (phase.to_string(), i.parse().unwrap());
                s.aff.insert(key.clone(), aff.to_string());
                s.cpu.insert(key, cpu.parse().unwrap());
            }
            _ => {}
        }
    }
    s
}

/// Runs the probe under `policy` with `extra` run options; returns what it
/// saw and the run's stderr.
fn probe_run(policy: &str, extra: &[&str], probe: &Path, probe_args: &[&str]) -> (Seen, Out) {
    let out = tempfile::NamedTempFile::new().unwrap();
    let mut args: Vec<String> = vec!["run".into(), policy.into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push("--".into());
    args.push(probe.display().to_string());
    args.extend(probe_args.iter().map(|s| s.to_string()));
    args.push("-o".into());
    args.push(out.path().display().to_string());
    let o = pinsight(&args).run();
    assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
    let text = std::fs::read_to_string(out.path()).unwrap();
    (parse(&text), o)
}

/// The dynamic probe run with `probe_args` under `cpus:A,B` and `extra`
/// run options, A and B the first two usable CPUs ([`two_cpus`]); `None`
/// where only one is usable.
fn on_two_cpus(extra: &[&str], probe_args: &[&str]) -> Option<((usize, usize, String), Seen, Out)> {
    let (a, b, both) = two_cpus()?;
    let (seen, o) = probe_run(&format!("cpus:{a},{b}"), extra, &probes().0, probe_args);
    Some(((a, b, both), seen, o))
}

/// The plan `pinsight plan` shows for `policy` on this machine.
fn plan_of(policy: &str, threads: Option<usize>) -> Value {
    let mut args = vec!["plan".to_string(), policy.into(), "--json".into()];
    if let Some(t) = threads {
        args.push("--threads".into());
        args.push(t.to_string());
    }
    ok(&args).json()
}

fn list(v: &Value) -> String {
    v.as_str().unwrap().to_string()
}

fn cpu_count(list: &str) -> usize {
    pinsight_cpuset::CpuSet::parse_list(list).unwrap().len()
}

/// The CPUs this test may use, as ids.
fn usable_ids() -> Vec<usize> {
    pinsight_cpuset::CpuSet::parse_list(&usable())
        .unwrap()
        .iter()
        .collect()
}

/// Two CPUs this test may use (the first two: any two do, CI machines
/// differ) and the pair as the kernel lists it ("3-4" or "0,2").
fn two_cpus() -> Option<(usize, usize, String)> {
    let ids = usable_ids();
    let (a, b) = (*ids.first()?, *ids.get(1)?);
    let pair = if b == a + 1 {
        format!("{a}-{b}")
    } else {
        format!("{a},{b}")
    };
    Some((a, b, pair))
}

fn usable() -> String {
    pinsight_testkit::allowed_list_of("self")
}

/// The contract for one policy, with the plan's default thread count.
fn check_policy(policy: &str) {
    let planned = pinsight(&["plan", policy, "--json"]).run();
    if planned.code != 0 {
        // Not plannable here (e.g. e-set on a one-kind machine): `run`
        // refuses the same way, before starting anything.
        assert_eq!(planned.code, 2, "{}", planned.stderr);
        let ran = pinsight(&["run", policy, "--", "true"]).run();
        assert_eq!(ran.code, 2, "{policy}: {}", ran.stderr);
        assert_eq!(ran.first_err_line(), planned.first_err_line(), "{policy}");
        println!("{policy}: not plannable on this machine, refused alike by plan and run");
        return;
    }
    let plan = planned.json();
    let threads = plan["threads"].as_u64().unwrap() as usize;
    let places: Vec<String> = plan["places"]
        .as_array()
        .unwrap()
        .iter()
        .map(list)
        .collect();
    let mask = list(&plan["process_mask"]);
    let pinned = plan["pinned"].as_bool().unwrap();
    let created = threads.saturating_sub(1).max(1);
    let (seen, _) = probe_run(
        policy,
        &[],
        &probes().0,
        &["-e", "-t", &created.to_string()],
    );
    let ctx = format!("{policy}: plan {plan}, probe saw {seen:?}");
    let start = |i: usize| seen.aff[&("start".to_string(), i)].clone();

    // Every policy: the planned thread count is what runtimes are told;
    // a balance plan's tasks are usually a launcher's processes, each of
    // which would inherit one count for all of them: none is exported.
    let count = threads.to_string();
    let told = if plan["tasks_per_cpu"].is_array() {
        None
    } else {
        Some(count.as_str())
    };
    assert_eq!(seen.env["OMP_NUM_THREADS"].as_deref(), told, "{ctx}");
    assert_eq!(seen.env["RAYON_NUM_THREADS"].as_deref(), told, "{ctx}");
    if places.is_empty() {
        // os: nothing changed.
        assert_eq!(start(0), usable(), "{ctx}");
        assert_eq!(seen.env["LD_PRELOAD"], None, "{ctx}");
        return;
    }
    // At start the program sees the plan's whole mask (nproc, sched_getaffinity).
    assert_eq!(start(0), mask, "{ctx}");
    assert_eq!(seen.ncpus, Some(cpu_count(&mask)), "{ctx}");
    let distinct: std::collections::BTreeSet<&String> = places.iter().collect();
    if !pinned || (distinct.len() == 1 && places[0] == mask) {
        // Threads float inside the set (or the only place is the mask).
        for i in 1..=created {
            assert_eq!(start(i), mask, "thread {i}: {ctx}");
        }
        assert_eq!(seen.env["LD_PRELOAD"], None, "{ctx}");
        return;
    }
    // Pinned: the main thread moved to place 0 at its first thread; thread
    // i starts on place i (wrapping), and runs there.
    assert_eq!(seen.aff[&("created".to_string(), 0)], places[0], "{ctx}");
    for i in 1..=created {
        let want = &places[i % places.len()];
        assert_eq!(&start(i), want, "thread {i}: {ctx}");
        let cpu = seen.cpu[&("start".to_string(), i)];
        assert!(
            pinsight_cpuset::CpuSet::parse_list(want)
                .unwrap()
                .contains(cpu),
            "thread {i} ran on {cpu}: {ctx}"
        );
    }
    // Binding variables are left out: pinsight binds the threads itself.
    assert_eq!(seen.env["OMP_PLACES"], None, "{ctx}");
    assert_eq!(seen.env["OMP_PROC_BIND"], None, "{ctx}");
}

#[test]
fn every_policy_gives_the_program_the_plan() {
    // Every base policy, its placeholder filled in (kind 0, the first
    // usable CPU), but the latency ones: they plan from a measured matrix
    // (--latency FILE) that this test has none of.
    let a = usable_ids()[0];
    for name in pinsight_plan::policy::POLICY_NAMES {
        if name.starts_with("latency-") {
            continue;
        }
        let policy = name
            .replace("RANK|NAME", "0")
            .replace("LIST", &a.to_string());
        check_policy(&policy);
    }
    if let Some((a, b, _)) = two_cpus() {
        let mut policies = vec![
            format!("cpus:{a},{b}"),
            format!("cpus:{b},{a}"),
            "cpus:all".to_string(),
            format!("cpus-set:{a},{b}"),
            "p-pinned+smt-physical-first".to_string(),
        ];
        if b < 64 {
            policies.push(format!("cpus:{:#x}", (1u64 << a) | (1u64 << b)));
        }
        for policy in &policies {
            check_policy(policy);
        }
        // Lists keep their order: thread 0 (the main thread) on the second.
        let (seen, _) = probe_run(&format!("cpus:{b},{a}"), &[], &probes().0, &["-t", "1"]);
        seen.assert_at(&[("created", 0, &b.to_string()), ("start", 1, &a.to_string())]);
    }
}

#[test]
fn a_pinned_policy_reports_as_many_cpus_as_taskset() {
    // The bug this suite exists for: a program that sizes itself from its
    // mask (nproc, 7-Zip, OpenMP, Go, Rust) must see every planned CPU.
    let plan = plan_of("p-pinned", None);
    let mask = list(&plan["process_mask"]);
    let nproc = |argv: &[&str]| {
        let o = Command::new(argv[0]).args(&argv[1..]).output().unwrap();
        assert!(o.status.success(), "{argv:?}");
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let bin = env!("CARGO_BIN_EXE_pinsight");
    // --no-env: GNU nproc would report OMP_NUM_THREADS otherwise.
    assert_eq!(
        nproc(&[bin, "run", "p-pinned", "--no-env", "--", "nproc"]),
        nproc(&["taskset", "-c", &mask, "nproc"]),
    );
    assert_eq!(
        nproc(&["taskset", "-c", &mask, "nproc"]),
        cpu_count(&mask).to_string()
    );
    // --pin-main early is the old rule: the program sees place 0 only.
    let place0 = list(&plan["places"][0]);
    assert_eq!(
        nproc(&[
            bin,
            "run",
            "p-pinned",
            "--no-env",
            "--pin-main",
            "early",
            "--",
            "nproc"
        ]),
        cpu_count(&place0).to_string()
    );
}

#[test]
fn pin_main_early_puts_the_main_thread_on_place_0_before_it_starts() {
    let Some(((a, _, _), seen, _)) = on_two_cpus(&["--pin-main", "early"], &["-e", "-t", "1"])
    else {
        pinsight_testkit::skip_test!("one usable CPU: early and lazy coincide");
    };
    seen.assert_at(&[("start", 0, &a.to_string())]);
    assert_eq!(seen.ncpus, Some(1), "{seen:?}");
}

#[test]
fn a_static_binary_is_pinned_by_the_watcher_and_the_report_says_so() {
    let pair = two_cpus();
    let two = pair.is_some();
    let policy = match &pair {
        Some((a, b, _)) => format!("cpus:{a},{b}"),
        None => format!("cpus:{}", usable_ids()[0]),
    };
    let policy = policy.as_str();
    // -d: create threads after 30 ms, so the watcher's first look is in;
    // -p: each thread waits until it has been moved.
    let (seen, o) = probe_run(
        policy,
        &["--report"],
        &probes().1,
        &["-e", "-t", "1", "-d", "30", "-p"],
    );
    // Notes are wrapped at 80 columns (where depends on the probe's path).
    let flat = o.stderr.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_has(&flat, &["statically linked", "/proc watcher"]);
    if two {
        assert!(
            o.stderr
                .contains("placed by: the /proc watcher: the shim cannot reach this program"),
            "{}",
            o.stderr
        );
        let (_, b, both) = pair.as_ref().unwrap();
        seen.assert_at(&[("start", 0, both), ("start", 1, &b.to_string())]);
    }
    // A word is never broken: a line may pass 80 columns only when it is
    // one word, such as a probe path in a deep checkout.
    for line in o.stderr.lines() {
        assert!(
            line.chars().count() <= 80 || line.split_whitespace().count() == 1,
            "wider than 80 columns: {line}"
        );
    }
    // The same in JSON: the mechanism that actually placed the threads.
    let out = tempfile::NamedTempFile::new().unwrap();
    let p = probes().1.display().to_string();
    let o = pinsight(&[
        "--json",
        "run",
        policy,
        "--",
        &p,
        "-t",
        "1",
        "-o",
        out.path().to_str().unwrap(),
    ])
    .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    if two {
        let doc: Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(doc["run"]["mechanism"], "follow", "{doc}");
        assert!(
            doc["run"]["fallback"]
                .as_str()
                .unwrap()
                .contains("statically linked"),
            "{doc}"
        );
    }
}

/// The probe built 32-bit (`cc -m32`: Debian's gcc-multilib, a test
/// prerequisite), for a program the 64-bit shim cannot reach.
fn probe32() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("program-sees-plan-probe");
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("probe32");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let o = Command::new(&cc)
            .args(["-m32", "-O1", "-pthread", "-o"])
            .arg(&out)
            .arg(repo().join("crates/launch/testprogs/probe.c"))
            .output()
            .unwrap_or_else(|e| panic!("cannot run the C compiler '{cc}': {e}"));
        assert!(
            o.status.success(),
            "{cc} -m32 probe.c failed (32-bit C libraries, Debian gcc-multilib, are a test prerequisite):\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        out
    })
}

/// Issue 34: a 64-bit wrapper that executes a 32-bit program in place
/// (`sh -c 'exec ./prog32'`, `os.execv`) hands it an LD_PRELOAD its loader
/// ignores. The program still gets the plan (the watcher takes over from
/// the exec) and `--report` names the watcher, never the shim.
#[test]
fn a_32_bit_program_executed_in_place_by_a_wrapper_gets_the_plan_from_the_watcher() {
    if !cfg!(target_arch = "x86_64") {
        pinsight_testkit::skip_test!(
            "the 32-bit probe is built with cc -m32, an x86-64 compiler's option"
        );
    }
    let Some((a, b, both)) = two_cpus() else {
        pinsight_testkit::skip_test!("needs two CPUs to tell places apart; one usable here");
    };
    let policy = format!("cpus:{a},{b}");
    let out = tempfile::NamedTempFile::new().unwrap();
    let script = format!(
        "exec {} -t 1 -p -l 30 -o {}",
        probe32().display(),
        out.path().display()
    );
    // bash runs the last command of -c in place by itself, as Python's
    // os.execv does on request.
    let probe_args = format!(
        "'-t', '1', '-p', '-l', '30', '-o', '{}'",
        out.path().display()
    );
    let bash = script.trim_start_matches("exec ").to_string();
    let python = format!(
        "import os; os.execv('{p}', ['{p}', {probe_args}])",
        p = probe32().display()
    );
    let wrappers: [(bool, [&str; 3]); 4] = [
        (true, ["sh", "-c", &script]),
        (false, ["sh", "-c", &script]),
        (true, ["bash", "-c", &bash]),
        (true, ["python3", "-c", &python]),
    ];
    for (report, wrapper) in wrappers {
        let mut args = vec!["run", policy.as_str()];
        if report {
            args.push("--report");
        }
        args.push("--");
        args.extend(wrapper);
        let o = pinsight(&args).run();
        assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
        let seen = parse(&std::fs::read_to_string(out.path()).unwrap());
        // The program, from the inside: the whole plan at start, then its
        // created thread on place 1 (the wrapper created none).
        seen.assert_at(&[("start", 0, &both), ("start", 1, &b.to_string())]);
        assert_says(
            &o,
            0,
            &["is a 32-bit", "the /proc watcher pinned its threads"],
        );
        if report {
            assert!(
                o.stderr
                    .contains("placed by: the /proc watcher: the shim cannot reach this program"),
                "{}",
                o.stderr
            );
            assert!(
                !o.stderr.contains("placed by: the LD_PRELOAD shim"),
                "{}",
                o.stderr
            );
            // Every thread the report shows is where it was planned.
            let rows: Vec<&str> = o
                .stderr
                .lines()
                .filter(|l| l.contains(" probe32 "))
                .collect();
            assert_eq!(rows.len(), 2, "{}", o.stderr);
            for row in rows {
                assert!(row.trim_end().ends_with(" ok"), "{row}\n{}", o.stderr);
            }
        }
    }
    // The same in JSON: the mechanism that actually placed the threads.
    let o = pinsight(&["--json", "run", &policy, "--", "sh", "-c", &script]).run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    let doc: Value =
        serde_json::from_str(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", o.stdout));
    assert_eq!(doc["run"]["mechanism"], "follow", "{doc}");
    assert!(
        doc["run"]["fallback"].as_str().unwrap().contains("32-bit"),
        "{doc}"
    );
}

/// Issue 34: a plan too large for one environment variable (70000
/// places: more than the kernel's 131072 bytes a string) is never handed
/// to the program's exec, where it failed as the program's "Argument list
/// too long". The watcher applies it instead, the program gets every
/// place, and a note names the plan's size as the reason.
#[test]
fn a_plan_too_large_for_the_environment_still_reaches_the_program() {
    let extra = ["-t", "70000", "--oversubscribe", "--report"];
    let Some(((a, b, both), seen, o)) = on_two_cpus(&extra, &["-t", "2", "-p"]) else {
        pinsight_testkit::skip_test!("needs two CPUs to tell places apart; one usable here");
    };
    assert!(!o.stderr.contains("Argument list too long"), "{}", o.stderr);
    assert_says(&o, 0, &["the plan's 70000 places take", "MAX_ARG_STRLEN"]);
    assert!(
        o.stderr.contains("placed by: the /proc watcher"),
        "{}",
        o.stderr
    );
    // Round robin over the two CPUs: the main thread on the first, its
    // created threads on the second, then the first again.
    seen.assert_at(&[
        ("start", 0, &both),
        ("start", 1, &b.to_string()),
        ("start", 2, &a.to_string()),
    ]);
}

#[test]
fn a_forked_child_gets_the_whole_plan_not_the_next_places() {
    let Some(((_, b, both), seen, _)) = on_two_cpus(&[], &["-t", "1", "-f"]) else {
        pinsight_testkit::skip_test!("needs two CPUs to tell places apart; one usable here");
    };
    seen.assert_at(&[
        ("fork", 0, &both),
        ("fork", 1, &both),
        ("start", 1, &b.to_string()),
    ]);
}

#[test]
fn a_failed_pthread_create_takes_no_place() {
    let Some(((a, b, _), seen, _)) = on_two_cpus(&[], &["-t", "1", "-F"]) else {
        pinsight_testkit::skip_test!("needs two CPUs to tell places apart; one usable here");
    };
    assert!(seen.failed_create, "{seen:?}");
    seen.assert_at(&[("start", 1, &b.to_string()), ("created", 0, &a.to_string())]);
}

#[test]
fn a_misspelt_option_before_the_program_is_an_error_not_the_program() {
    let o = pinsight(&words("run p-pinned --reprot -- true")).run();
    assert_exit(&o, 2, &["'--reprot'", "'--report'"]);
    // After `--` or from the program's name on, words are the program's.
    let o = pinsight(&["run", "os", "--", "sh", "-c", "exit 3"]).run();
    assert_eq!(o.code, 3, "{}", o.stderr);
    let o = pinsight(&["run", "os", "sh", "-c", "exit 4"]).run();
    assert_eq!(o.code, 4, "{}", o.stderr);
}

#[test]
fn seven_zip_runs_as_many_threads_as_under_taskset() {
    // A real program that sizes itself from its affinity mask (Debian's
    // 7zip, installed by .ci/deps). Its benchmark header says how many
    // hardware threads it found and how many it runs.
    assert!(
        on_path("7zz"),
        "7zz is not installed: run .ci/deps (Debian package 7zip) before the tests"
    );
    let plan = plan_of("p-pinned", None);
    let mask = list(&plan["process_mask"]);
    // The first header line ("... Threads:N ...") is the thread count
    // 7-Zip derived from its mask; the benchmark itself is not needed: stop
    // there (stdbuf: 7-Zip block-buffers a pipe) and end the run with
    // SIGTERM, which pinsight forwards to 7-Zip.
    let threads_line = |argv: &[&str]| -> String {
        use std::io::BufRead;
        let mut child = Command::new(argv[0])
            .args(&argv[1..])
            .args(["stdbuf", "-oL", "7zz", "b", "-md18"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut text = String::new();
        let mut found = None;
        for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            text.push_str(&line);
            text.push('\n');
            if let Some(w) = line.split_whitespace().find(|w| w.starts_with("Threads:")) {
                found = Some(w.to_string());
                break;
            }
        }
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let _ = child.wait();
        found.unwrap_or_else(|| panic!("{argv:?}: no 'Threads:' in 7-Zip's header:\n{text}"))
    };
    let bin = env!("CARGO_BIN_EXE_pinsight");
    assert_eq!(
        threads_line(&[bin, "run", "p-pinned", "--"]),
        threads_line(&["taskset", "-c", &mask]),
    );
}

#[test]
fn compare_pins_a_static_binary_through_the_watcher_and_says_so() {
    let pair = two_cpus();
    let policy = match &pair {
        Some((a, b, _)) => format!("cpus:{b},{a}"),
        None => format!("cpus:{}", usable_ids()[0]),
    };
    let policy = policy.as_str();
    let p = probes().1.display().to_string();
    let line = format!("compare --runs 2 --warmup 0 --policies os,{policy} --journal j.jsonl --");
    let mut args = words(&line);
    args.push(&p);
    args.extend(words("-t 1 -o /dev/null"));
    let o = pinsight(&args).writes("j.jsonl").writes("j.jsonl.out").ok();
    if pair.is_some() {
        assert_says(&o, 0, &["statically linked", "/proc watcher"]);
        let journal = std::fs::read_to_string(o.path("j.jsonl")).unwrap();
        let header: Value = serde_json::from_str(journal.lines().next().unwrap()).unwrap();
        let arm = header["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["policy"] == policy)
            .unwrap();
        assert!(
            arm["notes"].to_string().contains("statically linked"),
            "{arm}"
        );
    }
}
