//! `launch::run` on the live machine: the child's own view of its threads
//! must match the plan.

use crate::common;
use common::*;
use pinsight_launch::{run, LaunchError, Mechanism, RunOptions};
use std::ffi::OsString;
use std::time::Duration;

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

fn run_probe(
    plan: &pinsight_plan::Plan,
    args: &[&str],
    tweak: impl FnOnce(&mut RunOptions),
) -> (String, pinsight_launch::RunOutcome) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("probe.out");
    let mut a = os(args);
    a.push("-o".into());
    a.push(out.clone().into());
    let mut opts = RunOptions::new(PROBE, a);
    tweak(&mut opts);
    let outcome = run(plan, &opts).unwrap();
    assert_eq!(outcome.exit_code, 0, "{outcome:?}");
    (std::fs::read_to_string(&out).unwrap(), outcome)
}

type Lines = std::collections::BTreeMap<(String, usize), ProbeLine>;

/// On a machine with two usable CPUs, [`run_probe`] of a plan pinned to
/// `places`: the probe's output, the outcome and the output's lines; none
/// (a skip counted) on one without.
fn probe_pinned(
    places: &[&str],
    args: &[&str],
    tweak: impl FnOnce(&mut RunOptions),
) -> Option<(String, pinsight_launch::RunOutcome, Lines)> {
    if !need_two_cpus() {
        return None;
    }
    let (text, outcome) = run_probe(&pinned_plan(places), args, tweak);
    let lines = parse_probe(&text);
    Some((text, outcome, lines))
}

#[test]
fn test_plans_map_onto_any_two_usable_cpus() {
    // A runner whose usable CPUs are, say, 3 and 7 runs the same plans.
    assert_eq!(on_pair("0-1", (3, 7)).to_list_string(), "3,7");
    assert_eq!(on_pair("1", (3, 7)).to_list_string(), "7");
    assert_eq!(on_pair("4096", (3, 7)).to_list_string(), "4096");
    let back: Vec<usize> = [3, 7, 0, 1]
        .iter()
        .map(|&c| logical_cpu_of(c, (3, 7)))
        .collect();
    assert_eq!(back, vec![0, 1, 10_000, 10_001]);
    // This runner's own pair is usable, whatever its ids.
    if need_two_cpus() {
        assert!(cpus("0-1").is_subset(&usable()) && cpus("0-1").len() == 2);
    }
}

#[test]
fn shim_pins_each_thread_in_creation_order() {
    // 3 places for main + 4 threads: thread 3 wraps to place 0.
    let Some((text, outcome, lines)) = probe_pinned(&["1", "0", "1"], &["-t", "4"], |_| {}) else {
        return;
    };
    // The program starts on the whole plan; its main thread moves to place
    // 0 when it creates its first thread.
    assert_affinities(&lines, &text, &[("start", 0, "0-1"), ("created", 0, "1")]);
    let expect = ["1", "0", "1", "1", "0"];
    for (i, want) in expect.iter().enumerate().skip(1) {
        let l = &lines[&("start".to_string(), i)];
        assert_eq!(&l.affinity, want, "thread {i}: {text}");
        assert_eq!(l.cpu.to_string(), *want, "thread {i} ran elsewhere: {text}");
    }
    assert_eq!(outcome.mechanism, Some(Mechanism::Shim));
    assert_eq!(outcome.fallback, None);
}

#[test]
fn skip_leaves_helper_threads_on_the_process_mask() {
    // Created thread 0 is skipped: it gets the process mask (0-1) and uses no place.
    let Some((text, _, lines)) = probe_pinned(&["1", "0"], &["-t", "2"], |o| o.skip = vec![0])
    else {
        return;
    };
    let aff: Vec<&str> = (1..3)
        .map(|i| lines[&("start".to_string(), i)].affinity.as_str())
        .collect();
    assert_eq!(aff, vec!["0-1", "0"], "{text}");
    assert_eq!(lines[&("created".to_string(), 0)].affinity, "1", "{text}");
}

#[test]
fn set_policy_sets_the_process_mask_only() {
    if !need_two_cpus() {
        return;
    }
    let (text, outcome) = run_probe(&set_plan("1", 3), &["-t", "3"], |_| {});
    let lines = parse_probe(&text);
    assert!(lines.values().all(|l| l.affinity == "1"), "{text}");
    assert_eq!(outcome.mechanism, None);
}

#[test]
fn os_policy_changes_nothing() {
    if !need_two_cpus() {
        return;
    }
    // The child inherits the spawning thread's mask: narrow ours, and `os` must keep it.
    let before = usable();
    let (plan, narrow) = (os_plan(), cpus("1"));
    pinsight_sys::affinity::set_affinity(0, &narrow).unwrap();
    let (text, _) = run_probe(&plan, &["-t", "1"], |_| {});
    pinsight_sys::affinity::set_affinity(0, &before).unwrap();
    let lines = parse_probe(&text);
    assert!(lines.values().all(|l| l.affinity == "1"), "{text}");
}

#[test]
fn shim_follows_exec_but_not_forked_children() {
    if !need_two_cpus() {
        return;
    }
    // sh (the launched program) forks probe #1 — a grandchild, not pinned
    // thread by thread: it runs on the plan's whole mask — then execs probe
    // #2 in place, which is pinned like the program itself.
    let dir = tempfile::tempdir().unwrap();
    let (f1, f2) = (dir.path().join("1"), dir.path().join("2"));
    let script = format!(
        "{PROBE} -t 1 -o {}; exec {PROBE} -t 1 -o {}",
        f1.display(),
        f2.display()
    );
    let plan = pinned_plan(&["1", "0"]);
    let outcome = run(&plan, &RunOptions::new("sh", os(&["-c", &script]))).unwrap();
    assert_eq!(outcome.exit_code, 0);
    let grandchild = parse_probe(&std::fs::read_to_string(&f1).unwrap());
    let exec_d = parse_probe(&std::fs::read_to_string(&f2).unwrap());
    let aff = |m: &std::collections::BTreeMap<(String, usize), ProbeLine>, i: usize| {
        m[&("start".to_string(), i)].affinity.clone()
    };
    assert_eq!(
        (aff(&grandchild, 0), aff(&grandchild, 1)),
        ("0-1".into(), "0-1".into())
    );
    assert_eq!(
        (aff(&exec_d, 0), aff(&exec_d, 1)),
        ("0-1".into(), "0".into())
    );
    assert_eq!(exec_d[&("created".to_string(), 0)].affinity, "1");
}

#[test]
fn openmp_threads_are_pinned_through_the_shim() {
    if !need_two_cpus() {
        return;
    }
    if OMP_PROBE.is_empty() {
        pinsight_testkit::skip_test!(
            "the C compiler has no OpenMP (gcc -fopenmp failed at build time)"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("omp.out");
    let plan = pinned_plan(&["1", "0", "0", "1"]);
    let mut opts = RunOptions::new(
        "sh",
        os(&["-c", &format!("exec {OMP_PROBE} > {}", out.display())]),
    );
    // What omp_env would give: the binding variables must be dropped.
    opts.env = vec![
        ("OMP_NUM_THREADS".into(), "4".into()),
        ("OMP_PLACES".into(), "{0},{1},{1},{0}".into()),
        ("OMP_PROC_BIND".into(), "close".into()),
    ];
    let outcome = run(&plan, &opts).unwrap();
    assert_eq!(outcome.exit_code, 0);
    if std::env::var_os("OMP_NUM_THREADS").is_none() {
        assert_eq!(
            outcome.exported,
            vec![("OMP_NUM_THREADS".to_string(), "4".to_string())]
        );
    }
    let text = std::fs::read_to_string(&out).unwrap();
    let lines = parse_probe(&text);
    let aff: Vec<&str> = (0..4)
        .map(|i| lines[&("omp".to_string(), i)].affinity.as_str())
        .collect();
    assert_eq!(aff, vec!["1", "0", "0", "1"], "{text}");
}

#[test]
fn follow_pins_threads_created_later_and_measures_delay() {
    if !need_two_cpus() {
        return;
    }
    // Main starts on the whole plan; threads appear after 50 ms and must
    // be moved to CPU 0 by the watcher (and main to place 0, CPU 1); each
    // measures how long that took.
    let plan = pinned_plan(&["1", "0", "0"]);
    let (text, outcome) = run_probe(&plan, &["-t", "2", "-d", "50", "-p"], |o| {
        o.mechanism = Mechanism::Follow;
        o.follow_interval = Duration::from_millis(1);
    });
    let lines = parse_probe(&text);
    assert_eq!(lines[&("start".to_string(), 0)].affinity, "0-1", "{text}");
    assert_eq!(
        outcome.threads[0].affinity.as_ref().map(logical),
        Some("1".to_string()),
        "{outcome:?}"
    );
    let mut delays = vec![];
    for i in 1..=2 {
        let l = &lines[&("start".to_string(), i)];
        assert_eq!(l.affinity, "0", "thread {i}: {text}");
        // No figure: the watcher was faster than the thread's first look.
        delays.push(l.pinned_after_us.unwrap_or(0));
    }
    let stats = outcome.follow.unwrap();
    assert_eq!(stats.pinned, 3, "main and two threads: {stats:?}");
    println!("follow delay seen by the threads: {delays:?} us; watcher stats: {stats:?}");
    assert!(delays.iter().all(|&d| d < 500_000), "{delays:?}");
}

#[test]
fn report_samples_where_threads_ran() {
    if !need_two_cpus() {
        return;
    }
    let plan = pinned_plan(&["1", "0", "1"]);
    let (_, outcome) = run_probe(&plan, &["-t", "2", "-l", "60"], |o| {
        o.report = true;
        o.sample_interval = Duration::from_millis(5);
    });
    let t = &outcome.threads;
    assert_eq!(t.len(), 3, "{t:?}");
    for r in t {
        assert!(r.samples > 0, "{r:?}");
        assert_eq!(r.affinity.as_ref(), r.planned.as_ref(), "{r:?}");
        // A sample may catch a new thread in libc's start-up, before the
        // trampoline pinned it: it then still has its creator's place (0).
        // The main thread ran on the whole plan until its first thread.
        let allowed = if r.index == 0 {
            plan.process_mask.clone()
        } else {
            r.planned.as_ref().unwrap().union(&plan.places[0])
        };
        assert!(r.cpus_seen.is_subset(&allowed), "{r:?}");
    }
}

#[test]
fn exit_status_is_handed_on() {
    let plan = os_plan();
    let o = run(&plan, &RunOptions::new("sh", os(&["-c", "exit 7"]))).unwrap();
    assert_eq!((o.exit_code, o.signal), (7, None));
    let o = run(&plan, &RunOptions::new("sh", os(&["-c", "kill -KILL $$"]))).unwrap();
    assert_eq!((o.exit_code, o.signal), (128 + 9, Some(9)));
}

#[test]
fn missing_or_unexecutable_commands_exit_like_a_shell() {
    let plan = pinned_plan(&["0"]);
    let e = run(
        &plan,
        &RunOptions::new("definitely-not-a-command-xyz", vec![]),
    )
    .unwrap_err();
    assert!(
        matches!(&e, LaunchError::Program(p) if p.exit_code() == 127),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "definitely-not-a-command-xyz: command not found"
    );
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("data.txt");
    std::fs::write(&f, "not a program").unwrap();
    let e = run(&plan, &RunOptions::new(&f, vec![])).unwrap_err();
    assert!(
        matches!(&e, LaunchError::Program(p) if p.exit_code() == 126),
        "{e:?}"
    );
}

#[test]
fn mask_outside_the_cgroup_is_refused() {
    let bad = pinned_plan(&["4096"]);
    let e = run(&bad, &RunOptions::new("true", vec![])).unwrap_err();
    assert!(matches!(e, LaunchError::Affinity { .. }), "{e:?}");
    assert!(e.to_string().contains("4096"), "{e}");
}

#[test]
fn pin_main_early_starts_the_program_on_place_0() {
    if !need_two_cpus() {
        return;
    }
    let plan = pinned_plan(&["1", "0"]);
    let (text, outcome) = run_probe(&plan, &["-t", "1", "-e"], |o| {
        o.pin_main = pinsight_launch::PinMain::Early
    });
    let lines = parse_probe(&text);
    assert_eq!(lines[&("start".to_string(), 0)].affinity, "1", "{text}");
    assert!(text.contains("ncpus 1\n"), "{text}");
    assert_eq!(lines[&("start".to_string(), 1)].affinity, "0", "{text}");
    assert_eq!(outcome.pin_main, Some(pinsight_launch::PinMain::Early));
}

#[test]
fn lazy_main_sees_the_whole_plan_until_its_first_thread() {
    if !need_two_cpus() {
        return;
    }
    let plan = pinned_plan(&["1", "0"]);
    let (text, outcome) = run_probe(&plan, &["-t", "1", "-e"], |_| {});
    assert!(text.contains("ncpus 2\n"), "{text}");
    // The shim is preloaded from a memfd the program inherited.
    let preload = text
        .lines()
        .find_map(|l| l.strip_prefix("env LD_PRELOAD="))
        .unwrap_or_else(|| panic!("no LD_PRELOAD: {text}"));
    assert!(preload.starts_with("/proc/self/fd/"), "{preload}");
    assert_eq!(outcome.pin_main, Some(pinsight_launch::PinMain::Lazy));
}

#[test]
fn a_failed_pthread_create_takes_no_place() {
    // Places: main 1, then 0, then 1. The failed create must not use "0".
    let Some((text, _, lines)) = probe_pinned(&["1", "0", "1"], &["-t", "2", "-F"], |_| {}) else {
        return;
    };
    assert!(text.contains("failed_create "), "{text}");
    // Nor does it move the main thread (created 0): no thread was created yet.
    let want = [("start", 1, "0"), ("start", 2, "1"), ("created", 0, "1")];
    assert_affinities(&lines, &text, &want);
}

#[test]
fn a_failed_pthread_create_does_not_shift_skip_indices() {
    // Skip created thread 0 (the first *successful* create).
    let Some((text, _, lines)) =
        probe_pinned(&["1", "0"], &["-t", "2", "-F"], |o| o.skip = vec![0])
    else {
        return;
    };
    assert_affinities(&lines, &text, &[("start", 1, "0-1"), ("start", 2, "0")]);
}

#[test]
fn a_forked_child_does_not_continue_the_numbering() {
    // Parent: main 1, thread 0. A fork-without-exec child and its thread
    // get the whole plan, not the next places (1, 0).
    let Some((text, _, lines)) = probe_pinned(&["1", "0"], &["-t", "1", "-f"], |_| {}) else {
        return;
    };
    // The parent's own numbering (start 1) is untouched by the child.
    let want = [("fork", 0, "0-1"), ("fork", 1, "0-1"), ("start", 1, "0")];
    assert_affinities(&lines, &text, &want);
}

#[test]
fn static_programs_fall_back_to_the_watcher_and_say_so() {
    if !need_two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("probe.out");
    let plan = pinned_plan(&["1", "0"]);
    let args = os(&["-t", "1", "-d", "30", "-p", "-o", out.to_str().unwrap()]);
    let outcome = run(&plan, &RunOptions::new(static_probe(), args)).unwrap();
    assert_eq!(outcome.exit_code, 0);
    assert_eq!(outcome.mechanism, Some(Mechanism::Follow));
    let why = outcome.fallback.as_deref().unwrap_or("");
    assert!(why.contains("statically linked"), "{outcome:?}");
    assert!(
        outcome.notes.iter().any(|n| n.contains("/proc watcher")),
        "{:?}",
        outcome.notes
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let lines = parse_probe(&text);
    assert_affinities(&lines, &text, &[("start", 0, "0-1"), ("start", 1, "0")]);
}

#[test]
fn descendants_that_outlive_the_launch_do_not_name_a_deleted_shim() {
    if !need_two_cpus() {
        return;
    }
    // The program starts a background process that outlives pinsight's
    // run, then that process runs a dynamic program: it must start cleanly
    // (no "cannot be preloaded" from the loader) and carry no shim.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("late.out");
    let err = dir.path().join("late.err");
    let script = format!(
        "(sleep 0.3; env > {o} 2> {e}) & exit 0",
        o = out.display(),
        e = err.display()
    );
    let plan = pinned_plan(&["1", "0"]);
    let outcome = run(&plan, &RunOptions::new("sh", os(&["-c", &script]))).unwrap();
    assert_eq!(outcome.exit_code, 0);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !out.exists() || std::fs::read_to_string(&out).unwrap().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the late process never ran"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(50));
    let env = std::fs::read_to_string(&out).unwrap();
    let errs = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(errs.is_empty(), "loader complained: {errs}");
    for var in ["LD_PRELOAD=", "PINSIGHT_PLACES=", "PINSIGHT_LAUNCHER_PID="] {
        assert!(
            !env.lines().any(|l| l.starts_with(var)),
            "{var} reached a process the shim does not pin: {env}"
        );
    }
}

#[test]
fn a_missing_interpreter_is_refused_before_the_run() {
    // execve(2) fails with ENOENT when the interpreter is missing; a shell
    // would then call the program itself missing. The check says which.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script");
    std::fs::write(&script, "#!/nonexistent/pinsight-sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let before = usable();
    let e = run(&pinned_plan(&["0"]), &RunOptions::new(&script, vec![])).unwrap_err();
    assert!(
        matches!(&e, LaunchError::Program(p) if p.exit_code() == 127),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .ends_with("its interpreter /nonexistent/pinsight-sh does not exist"),
        "{e}"
    );
    assert_eq!(usable(), before, "the launcher's own mask is untouched");
}

#[cfg(target_arch = "x86_64")]
#[test]
fn a_32_bit_program_is_pinned_by_the_watcher_and_says_why() {
    if !need_two_cpus() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let prog = pinsight_testkit::elf::write_i386_exit7(dir.path(), "i386-exit7");
    let plan = pinned_plan(&["1", "0"]);
    let outcome = match run(&plan, &RunOptions::new(&prog, vec![])) {
        Ok(o) => o,
        Err(LaunchError::Program(p)) if p.exit_code() == 126 => {
            // A kernel without IA-32 emulation (CONFIG_IA32_EMULATION off,
            // or ia32_emulation=0) cannot execute it at all.
            pinsight_testkit::skip(format!("this kernel cannot run 32-bit programs: {p}"));
            return;
        }
        Err(e) => panic!("{e:?}"),
    };
    assert_eq!(outcome.exit_code, 7, "{outcome:?}");
    assert_eq!(outcome.mechanism, Some(Mechanism::Follow), "{outcome:?}");
    let why = outcome.fallback.as_deref().unwrap_or("");
    assert!(why.contains("32-bit i386 program"), "{outcome:?}");
    assert!(
        outcome.notes.iter().any(|n| n.contains("/proc watcher")),
        "{:?}",
        outcome.notes
    );
}
