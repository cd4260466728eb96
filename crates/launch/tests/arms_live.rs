//! Arms that are what they say: a pinned launch never leaves a descendant
//! naming a shim it cannot load, and the program itself stays pinned.

use crate::common::*;
use pinsight_launch::{run, Mechanism, RunOptions, RunOutcome};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

fn os(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

/// An installed program by name (`/usr/bin` first, so a version manager's
/// wrapper script is not what runs), or a counted skip.
fn installed(name: &str) -> Option<PathBuf> {
    let found = ["/usr/bin", "/bin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        pinsight_testkit::skip(format!("{name} is not installed"));
    }
    found
}

/// The installed program `name` on a machine with two CPUs to pin on;
/// `None` (a counted skip) without either.
fn two_cpus_and(name: &str) -> Option<PathBuf> {
    if !need_two_cpus() {
        return None;
    }
    installed(name)
}

/// The loader's complaint about a preload it cannot open or read
/// (`ERROR: ld.so: object '…' from LD_PRELOAD cannot be preloaded`).
fn assert_no_loader_error(stderr: &str) {
    assert!(
        !stderr.contains("cannot be preloaded"),
        "a descendant named a shim it could not load:\n{stderr}"
    );
}

/// Runs `program ARGS` (a shell script whose stderr goes to `err`) under
/// places 1, 0; asserts it exited 0 and no descendant named a shim it
/// could not load. Returns that stderr.
fn run_script(program: impl Into<OsString>, args: &[&str], err: &Path) -> String {
    let plan = pinned_plan(&["1", "0"]);
    let outcome = run(&plan, &RunOptions::new(program, os(args))).unwrap();
    let stderr = std::fs::read_to_string(err).unwrap_or_default();
    assert_eq!(outcome.exit_code, 0, "{outcome:?}\n{stderr}");
    assert_no_loader_error(&stderr);
    stderr
}

/// Runs a `bash` script that sends its stderr to a file and opens a lock
/// file on the shim's descriptor (flock(1)'s idiom, descriptor 200), then
/// runs `then(out)`; checked as [`run_script`]. Returns the stderr and
/// what the script wrote to `out`.
fn run_with_shim_fd_taken(bash: &Path, then: impl FnOnce(&Path) -> String) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (err, lock, out) = (
        dir.path().join("err"),
        dir.path().join("lock"),
        dir.path().join("out"),
    );
    let script = format!(
        "exec 2>{err}; eval \"exec $PINSIGHT_SHIM_FD>{lock}\"; {}",
        then(&out),
        err = err.display(),
        lock = lock.display(),
    );
    let stderr = run_script(bash, &["-c", &script], &err);
    (stderr, std::fs::read_to_string(&out).unwrap())
}

#[test]
fn python_subprocess_children_do_not_name_the_shim() {
    let Some(python) = two_cpus_and("python3") else {
        return;
    };
    // subprocess closes every descriptor but 0-2 in the child (close_fds),
    // so /proc/self/fd/N names nothing there. The program's own created
    // thread must still be on place 1.
    let dir = tempfile::tempdir().unwrap();
    let (err, out) = (dir.path().join("err"), dir.path().join("out"));
    let code = format!(
        "import os, subprocess, threading\n\
         for _ in range(3): subprocess.run(['true'], check=True)\n\
         subprocess.run(['sh', '-c', 'true'], check=True)\n\
         res = []\n\
         t = threading.Thread(target=lambda: res.append(sorted(os.sched_getaffinity(0))))\n\
         t.start(); t.join()\n\
         open({out:?}, 'w').write(','.join(map(str, res[0])))\n",
        out = out.display().to_string()
    );
    let script = format!(
        "exec 2>{err}; exec {py} -c \"$0\"",
        err = err.display(),
        py = python.display()
    );
    run_script("sh", &["-c", &script, &code], &err);
    let thread = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        thread,
        cpus("0").to_list_string(),
        "the created thread's CPUs"
    );
}

#[test]
fn a_script_that_reuses_descriptor_200_does_not_break_its_commands() {
    let Some(bash) = two_cpus_and("bash") else {
        return;
    };
    // The flock(1) idiom takes descriptor 200, where the shim's memfd is
    // (or the next free number, when tests run side by side: the script
    // takes the one the launch used): every command the script runs would
    // find a lock file at /proc/self/fd/200 instead of the shim.
    let (_, out) = run_with_shim_fd_taken(&bash, |out| {
        format!(
            "flock $PINSIGHT_SHIM_FD; /bin/true; env true; sh -c 'true'; {PROBE} -t 1 -o {}",
            out.display()
        )
    });
    // A process the script forks gets the plan's whole mask (not pinned
    // thread by thread), as before.
    let probe = parse_probe(&out);
    assert_eq!(probe[&("start".to_string(), 1)].affinity, "0-1");
}

#[test]
fn an_exec_in_place_after_descriptor_200_was_reused_does_not_break() {
    let Some(bash) = two_cpus_and("bash") else {
        return;
    };
    let (stderr, _) = run_with_shim_fd_taken(&bash, |out| {
        format!("exec {PROBE} -t 1 -o {}", out.display())
    });
    assert!(
        stderr.contains("no longer holds the shim"),
        "the shim says why the exec'd program is not pinned: {stderr}"
    );
}

#[test]
fn an_intact_shim_still_follows_an_exec_in_place_from_bash() {
    let Some(bash) = two_cpus_and("bash") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let script = format!("/bin/true; exec {PROBE} -t 1 -o {}", out.display());
    let plan = pinned_plan(&["1", "0"]);
    let outcome = run(&plan, &RunOptions::new(&bash, os(&["-c", &script]))).unwrap();
    assert_eq!(outcome.exit_code, 0, "{outcome:?}");
    let probe = parse_probe(&std::fs::read_to_string(&out).unwrap());
    assert_eq!(probe[&("start".to_string(), 1)].affinity, "0");
    assert_eq!(probe[&("created".to_string(), 0)].affinity, "1");
}

#[test]
fn report_matches_threads_by_tid_when_an_earlier_thread_was_never_sampled() {
    let Some(python) = two_cpus_and("python3") else {
        return;
    };
    // Created thread 0 ends at once, long before the first sample; created
    // thread 1 lives through many. By order of first sight the second
    // would be planned on created thread 0's place.
    let code = "import threading, time\n\
                t = threading.Thread(target=lambda: None); t.start(); t.join()\n\
                time.sleep(0.1)\n\
                t = threading.Thread(target=time.sleep, args=(0.3,)); t.start(); t.join()\n";
    let plan = pinned_plan(&["1", "0"]);
    let mut opts = RunOptions::new(&python, os(&["-c", code]));
    opts.report = true;
    opts.sample_interval = std::time::Duration::from_millis(20);
    let outcome = run(&plan, &opts).unwrap();
    assert_eq!(outcome.exit_code, 0, "{outcome:?}");
    let main = outcome
        .threads
        .iter()
        .find(|t| t.tid == outcome.pid)
        .expect("the main thread was sampled");
    assert_eq!(main.planned, Some(cpus("1")), "{outcome:?}");
    let second: Vec<_> = outcome
        .threads
        .iter()
        .filter(|t| t.tid != outcome.pid && t.samples > 2)
        .collect();
    assert_eq!(second.len(), 1, "{outcome:?}");
    // Created thread 1: place (1 + 1) % 2 = 0, CPU 1.
    assert_eq!(second[0].affinity, Some(cpus("1")), "{outcome:?}");
    assert_eq!(second[0].planned, second[0].affinity, "{outcome:?}");
}

/// A pinned plan whose second place is a CPU no process here may use:
/// the start mask (the union) is accepted, the pin to that place is not
/// (`EINVAL`, sched_setaffinity(2): "the affinity bit mask contains no
/// processors that are currently physically on the system and permitted
/// to the thread").
fn plan_with_a_forbidden_place() -> pinsight_plan::Plan {
    let mut plan = pinned_plan(&["0", "0"]);
    plan.places[1] = pinsight_cpuset::CpuSet::single(4000);
    plan.process_mask.insert(4000);
    plan
}

/// Runs the probe with `args` (its output to a scratch file) under `plan`,
/// threads pinned by `mechanism`.
fn run_probe(plan: &pinsight_plan::Plan, mechanism: Mechanism, args: &[&str]) -> RunOutcome {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out").display().to_string();
    let mut args = args.to_vec();
    args.extend(["-o", &out]);
    let mut opts = RunOptions::new(PROBE, os(&args));
    opts.mechanism = mechanism;
    run(plan, &opts).unwrap()
}

#[test]
fn a_pin_the_kernel_refuses_fails_the_run_with_the_reason() {
    if !need_two_cpus() {
        return;
    }
    for mechanism in [Mechanism::Follow, Mechanism::Shim] {
        let plan = plan_with_a_forbidden_place();
        let outcome = run_probe(&plan, mechanism, &["-t", "1", "-l", "200"]);
        let why = outcome.refused.as_deref().unwrap_or_default();
        assert!(
            why.starts_with("the kernel refused to pin created thread #0")
                && why.contains("to CPUs 4000: Invalid argument"),
            "{mechanism:?}: {outcome:?}"
        );
    }
}

#[test]
fn pins_that_were_made_are_no_refusal() {
    if !need_two_cpus() {
        return;
    }
    for mechanism in [Mechanism::Follow, Mechanism::Shim] {
        let outcome = run_probe(&pinned_plan(&["1", "0"]), mechanism, &["-t", "2"]);
        assert_eq!(outcome.refused, None, "{mechanism:?}: {outcome:?}");
    }
}
