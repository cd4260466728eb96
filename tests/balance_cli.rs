//! `pinsight balance` end to end on this machine: bad input is one line
//! and exit 2 with nothing changed; a dry run changes nothing and writes
//! no state; a real run saves the previous affinities (the path printed)
//! and `--restore` puts them back; `--threads` moves threads one by one;
//! a refused change puts back what was changed (exit 1).

use crate::common_cli;

use crate::common_cmd::{assert_exit, assert_fits_80, assert_one_line, on_fsroot, words};
use common_cli::*;
use std::process::{Command, Stdio};

/// The tests here that move threads (or restore them) take this first:
/// a balance that moves holds the machine-wide lock, and a second one at
/// the same moment is refused (exit 1) by design.
fn moving() -> std::sync::MutexGuard<'static, ()> {
    static MOVING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    MOVING.lock().unwrap_or_else(|e| e.into_inner())
}

use pinsight_testkit::Children as Procs;

/// The PIDs of `procs` as `--pids` and `/proc` take them.
fn pid_texts(procs: &Procs) -> Vec<String> {
    procs.pids().iter().map(u32::to_string).collect()
}

/// `n` sleeping processes on `cpus` (a taskset list), their mask set.
fn sleepers(n: usize, cpus: &str) -> Procs {
    let p = Procs(
        (0..n)
            .map(|_| {
                Command::new("taskset")
                    .args(["-c", cpus, "sleep", "60"])
                    .spawn()
                    .expect("taskset starts")
            })
            .collect(),
    );
    // taskset sets the mask, then execs sleep: let it.
    std::thread::sleep(std::time::Duration::from_millis(200));
    p
}

fn affinity(pid: &str) -> String {
    pinsight_testkit::allowed_list_of(pid)
}

fn two_cpus() -> Option<(usize, usize)> {
    let u = pinsight_testkit::usable_cpus();
    (u.len() >= 2).then(|| (u[0], u[1]))
}

/// `line`'s words, then `--state PATH` (a path kept whole).
fn with_state<'a>(line: &'a str, state: &'a std::path::Path) -> Vec<&'a str> {
    let mut args = words(line);
    args.extend(["--state", state.to_str().unwrap()]);
    args
}

fn refused(args: &[&str], code: i32, needle: &str) {
    let mut argv = vec!["balance"];
    argv.extend_from_slice(args);
    assert_one_line(&pinsight(&argv).run(), code, &[needle]);
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    refused(
        &["--pids", "999999999"],
        2,
        "--pids: no process with PID 999999999",
    );
    refused(
        &["--match", "^no-such-name-pinsight-xyz$"],
        2,
        "--match: no process or thread matches",
    );
    refused(
        &["--match", "("],
        2,
        "--match: '(' is not a regular expression",
    );
    refused(
        &["--cgroup", "no/such/cgroup-xyz"],
        2,
        "--cgroup: no cgroup /sys/fs/cgroup/no/such/cgroup-xyz",
    );
    // A process of the test's own (PID 1 is every process's ancestor,
    // which --pids refuses first).
    let sleeper = Procs(vec![Command::new("sleep").arg("60").spawn().unwrap()]);
    refused(
        &["--pids", &pid_texts(&sleeper)[0], "--cpus", "100000"],
        2,
        "--cpus: CPUs 100000 are not usable",
    );
    refused(&["--pids", "1", "--dry-run"], 2, "--pids: PID 1 (");
    refused(
        &["--restore", "/nonexistent/state.json"],
        2,
        "--restore: cannot read state file",
    );
    refused(
        &["--pids", "1", "--dry-run", "--stealers", "1:x"],
        2,
        "'1:x' is not CPU:PID",
    );
    let both = words("balance --pids 1 --dry-run --restore x");
    assert_exit(&pinsight(&both).run(), 2, &[]);
    let hybrid = hwloc_fixture("20em64t-hybrid-1p6c2t+2ca4co1t");
    let on_hybrid = on_fsroot(hybrid.to_str().unwrap(), "balance --pids 1");
    assert_exit(&pinsight(&on_hybrid).run(), 2, &["plan balance --tasks"]);
}

#[test]
fn a_dry_run_changes_nothing_and_writes_no_state() {
    let Some((a, b)) = two_cpus() else {
        pinsight_testkit::skip_test!("needs two usable CPUs");
    };
    let procs = sleepers(3, &a.to_string());
    let pids = pid_texts(&procs).join(",");
    let line = format!("balance --pids {pids} --cpus {a},{b} --interval 0 --dry-run");
    let o = pinsight(&words(&line))
        .env("XDG_STATE_HOME", "/nonexistent-pinsight-state")
        .ok();
    assert!(
        o.stdout.contains("dry run: nothing changed"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("would move"), "{}", o.stdout);
    assert!(!o.stdout.contains("saved"), "{}", o.stdout);
    for p in pid_texts(&procs) {
        assert_eq!(affinity(&p), a.to_string());
    }
    assert_fits_80(&o.stdout);
}

#[test]
fn pids_are_spread_saved_and_restored() {
    let _moving = moving();
    let Some((a, b)) = two_cpus() else {
        pinsight_testkit::skip_test!("needs two usable CPUs");
    };
    let procs = sleepers(4, &a.to_string());
    let pids = pid_texts(&procs).join(",");
    let state_home = tempfile::tempdir().unwrap();
    let line = format!("--json balance --pids {pids} --cpus {a},{b} --interval 200ms");
    let o = pinsight(&words(&line))
        .env("XDG_STATE_HOME", state_home.path())
        .ok();
    let doc = o.json();
    let state = doc["state"].as_str().expect("a state path").to_string();
    assert!(
        state.starts_with(state_home.path().join("pinsight").to_str().unwrap()),
        "{state}"
    );
    assert!(doc["load_before"]["cpus"].is_array() && doc["load_after"]["cpus"].is_array());
    let after: Vec<String> = pid_texts(&procs).iter().map(|p| affinity(p)).collect();
    assert_eq!(
        after.iter().filter(|s| **s == a.to_string()).count(),
        2,
        "{after:?}"
    );
    assert_eq!(
        after.iter().filter(|s| **s == b.to_string()).count(),
        2,
        "{after:?}"
    );
    let o = ok(&["balance", "--restore", &state]);
    assert!(o.stdout.contains("restored 2 thread(s)"), "{}", o.stdout);
    for p in pid_texts(&procs) {
        assert_eq!(affinity(&p), a.to_string());
    }
}

#[test]
fn match_with_threads_moves_each_thread() {
    let _moving = moving();
    let Some((a, b)) = two_cpus() else {
        pinsight_testkit::skip_test!("needs two usable CPUs");
    };
    let marker = format!("pinsight-balance-threads-{}", std::process::id());
    let script = "import threading, time\n\
        for _ in range(3): threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n\
        time.sleep(60)\n";
    let Ok(child) = Command::new("python3")
        .args(["-c", script, &marker])
        .stdout(Stdio::null())
        .spawn()
    else {
        pinsight_testkit::skip_test!("python3 is not installed");
    };
    let procs = Procs(vec![child]);
    let pid = pid_texts(&procs)[0].clone();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("s.json");
    let line = format!(
        "--json balance --match {marker} --match-full --per-thread --cpus {a},{b} --interval 0"
    );
    let o = ok(&with_state(&line, &state));
    let doc = o.json();
    assert_eq!(doc["moves"].as_array().unwrap().len(), 4, "{doc:#}");
    let tids: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let on = |c: usize| {
        tids.iter()
            .filter(|t| affinity(&format!("{pid}/task/{t}")) == c.to_string())
            .count()
    };
    assert_eq!((on(a), on(b)), (2, 2));
    ok(&["balance", "--restore", state.to_str().unwrap()]);
    let all = pinsight_testkit::allowed_list_of("self");
    for t in &tids {
        assert_eq!(
            affinity(&format!("{pid}/task/{t}")),
            all,
            "thread {t} not restored"
        );
    }
}

#[test]
fn a_refused_move_puts_back_what_was_moved() {
    let _moving = moving();
    let Some((a, b)) = two_cpus() else {
        pinsight_testkit::skip_test!("needs two usable CPUs");
    };
    if pinsight_sys::process::geteuid() != 0 || !on_path("setpriv") {
        pinsight_testkit::skip_test!("needs root and setpriv (a process of another user)");
    }
    let both = format!("{a},{b}");
    let nobody = [
        "setpriv",
        "--reuid",
        "65534",
        "--regid",
        "65534",
        "--clear-groups",
    ];
    // The first task (lower PID) is nobody's and moves; the second is
    // root's, which nobody may not move.
    let mine = Command::new("taskset")
        .args(["-c", &both])
        .args(nobody)
        .args(["sleep", "60"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let roots = Command::new("taskset")
        .args(["-c", &both, "sleep", "60"])
        .spawn()
        .unwrap();
    let procs = Procs(vec![mine, roots]);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let pids = pid_texts(&procs);
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let state = dir.path().join("s.json");
    let mut argv: Vec<String> = nobody.iter().map(|s| s.to_string()).collect();
    argv.push(env!("CARGO_BIN_EXE_pinsight").into());
    let line = format!(
        "balance --pids {} --cpus {both} --interval 0",
        pids.join(",")
    );
    argv.extend(with_state(&line, &state).iter().map(|s| s.to_string()));
    let out = Command::new(&argv[0]).args(&argv[1..]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("permission denied") && stderr.contains("put back"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    let want = pinsight_cpuset::CpuSet::parse_list(&both)
        .unwrap()
        .to_string();
    for p in &pids {
        assert_eq!(affinity(p), want, "PID {p} was left moved");
    }
}

/// A cgroup v2 directory made for the test, removed on every exit path
/// (its processes are killed first: a cgroup with members cannot go).
struct TestCgroup {
    dir: std::path::PathBuf,
    procs: Procs,
}
impl Drop for TestCgroup {
    fn drop(&mut self) {
        for c in &mut self.procs.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Where cgroup v2 is mounted: `/sys/fs/cgroup` (unified) or
/// `/sys/fs/cgroup/unified` (hybrid).
fn cgroup2_root() -> Option<std::path::PathBuf> {
    ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|d| d.join("cgroup.controllers").exists())
}

#[test]
fn a_cgroups_processes_are_spread() {
    let _moving = moving();
    let Some((a, b)) = two_cpus() else {
        pinsight_testkit::skip_test!("needs two usable CPUs");
    };
    let Some(root) = cgroup2_root() else {
        pinsight_testkit::skip_test!("no cgroup v2 mount");
    };
    let dir = root.join(format!("pinsight-balance-test-{}", std::process::id()));
    if std::fs::create_dir(&dir).is_err() {
        pinsight_testkit::skip_test!(
            "cannot create a cgroup under {} (not root?)",
            root.display()
        );
    }
    let cg = TestCgroup {
        dir: dir.clone(),
        procs: sleepers(2, &a.to_string()),
    };
    for p in pid_texts(&cg.procs) {
        std::fs::write(dir.join("cgroup.procs"), &p).expect("move into the test cgroup");
    }
    let state = tempfile::tempdir().unwrap();
    let state = state.path().join("s.json");
    let mut argv = vec!["balance", "--cgroup", dir.to_str().unwrap()];
    let line = format!("--cpus {a},{b} --interval 0");
    argv.extend(with_state(&line, &state));
    let o = ok(&argv);
    let mut got: Vec<String> = pid_texts(&cg.procs).iter().map(|p| affinity(p)).collect();
    got.sort();
    assert_eq!(got, vec![a.to_string(), b.to_string()], "{}", o.stdout);
    ok(&["balance", "--restore", state.to_str().unwrap()]);
    for p in pid_texts(&cg.procs) {
        assert_eq!(affinity(&p), a.to_string());
    }
}

/// Selection as pgrep does it, run as operators run it (under `timeout`
/// and `sh -c`, whose command lines hold the pattern too): `--match`
/// selects by process name and `--match-full` by command line, and
/// neither ever selects pinsight's ancestors; the selection is printed
/// before anything moves. `--pids` naming an ancestor or a kernel thread
/// is refused. (Before, `--match` on whole command lines re-pinned the
/// `timeout` and `sh` processes.)
#[test]
fn match_selects_like_pgrep_and_never_pinsights_ancestors() {
    let dir = tempfile::tempdir().unwrap();
    // A sleeper whose name (comm) is unique: sleep under another name.
    let name = format!("pzsel{}", std::process::id() % 100_000);
    let exe = dir.path().join(&name);
    std::os::unix::fs::symlink(which("sleep"), &exe).unwrap();
    let sleeper = Procs(vec![Command::new(&exe).arg("60").spawn().unwrap()]);
    let want = pid_texts(&sleeper);
    std::thread::sleep(std::time::Duration::from_millis(100));
    let bin = env!("CARGO_BIN_EXE_pinsight");
    let under_sh = |extra: &str, json: bool| {
        let json = if json { "--json " } else { "" };
        let script = format!(
            "exec timeout 60 sh -c '{bin} {json}balance --match {name} {extra} \
             --dry-run --interval 0; echo sh-still-here'"
        );
        Command::new("sh").args(["-c", &script]).output().unwrap()
    };
    for extra in ["", "--match-full"] {
        let o = under_sh(extra, true);
        let text = String::from_utf8_lossy(&o.stdout);
        let json = text.trim_end().trim_end_matches("sh-still-here");
        let doc: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| {
            panic!(
                "{extra}: {e}: {text} {}",
                String::from_utf8_lossy(&o.stderr)
            )
        });
        let got: Vec<String> = doc["moves"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["pid"].to_string())
            .collect();
        assert_eq!(got, want, "{extra}: {doc:#}");
    }
    // The human view names the selection first, before the report.
    let o = under_sh("", false);
    let text = String::from_utf8_lossy(&o.stdout);
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("selected 1 process, to spread over CPUs ")
            && first.ends_with(&format!(": {} {name}", want[0])),
        "{text}"
    );
    // --pids: an ancestor (the shell it runs under) and a kernel thread.
    let script = format!("{bin} balance --pids $$ --dry-run --interval 0");
    let o = Command::new("sh").args(["-c", &script]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("is an ancestor of this pinsight process"),
        "{err}"
    );
    // kthreadd, PID 2, where this PID namespace shows kernel threads.
    let kthreadd = std::fs::read_to_string("/proc/2/comm").is_ok_and(|c| c.trim() == "kthreadd");
    if kthreadd {
        refused(&["--pids", "2", "--dry-run"], 2, "is a kernel thread");
    } else {
        pinsight_testkit::skip("no kernel thread visible here: --pids 2 not checked");
    }
}

/// `name`'s path on PATH.
fn which(name: &str) -> std::path::PathBuf {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|c| c.is_file())
        })
        .unwrap_or_else(|| panic!("{name} is not on PATH"))
}

/// One balance that moves at a time: with the machine-wide lock held (as
/// a running balance holds it), a second balance is refused at once,
/// naming the holder, and moves nothing; a dry run still works.
#[test]
fn a_second_balance_is_refused_naming_the_first() {
    let Some((a, b)) = two_cpus() else {
        pinsight_testkit::skip_test!("needs two usable CPUs");
    };
    let _moving = moving();
    let procs = sleepers(1, &format!("{a},{b}"));
    let pid = pid_texts(&procs)[0].clone();
    let held = pinsight_sys::machine_lock::MachineLock::acquire("pinsight-balance.lock").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("s.json");
    let cpus = format!("{a},{b}");
    let args = format!("--pids {pid} --cpus {cpus} --interval 0");
    let line = format!("balance {args}");
    let argv = with_state(&line, &state);
    let t = std::time::Instant::now();
    let o = pinsight(&argv).run();
    let holder = format!("another pinsight balance runs (PID {})", std::process::id());
    assert_exit(&o, 1, &[&holder]);
    assert!(t.elapsed() < std::time::Duration::from_secs(2));
    assert!(same(&affinity(&pid), &cpus), "{}", affinity(&pid));
    assert!(!state.exists(), "a refused balance wrote its state");
    let dry = format!("balance --dry-run {args}");
    assert_eq!(pinsight(&words(&dry)).run().code, 0);
    drop(held);
    let o = pinsight(&argv).run();
    assert_eq!(o.code, 0, "{}", o.stderr);
}

/// `--restore` moves threads, so it trusts only a file nobody else could
/// have written, and never moves a kernel thread even when the file
/// names one (balance never saves one).
#[test]
fn restore_refuses_files_others_could_write_and_kernel_threads() {
    if pinsight_sys::process::geteuid() != 0 {
        pinsight_testkit::skip_test!("needs root (a file owned by another user)");
    }
    let _moving = moving();
    let dir = tempfile::tempdir().unwrap();
    let empty = r#"{"format": "pinsight-balance-state", "version": 1, "threads": []}"#;
    let write = |name: &str, text: &str, mode: u32| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(mode)).unwrap();
        p
    };
    let open = write("open.json", empty, 0o666);
    refused(
        &["--restore", open.to_str().unwrap()],
        2,
        "others may write it (mode 0666)",
    );
    let theirs = write("theirs.json", empty, 0o600);
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    refused(
        &["--restore", theirs.to_str().unwrap()],
        2,
        "owned by uid 65534, not by you (uid 0) or root",
    );
    // kthreadd, as a state file could name it (start time and all).
    let Ok(stat) = std::fs::read_to_string("/proc/2/stat") else {
        pinsight_testkit::skip_test!("no kernel thread visible here");
    };
    if !stat.contains("(kthreadd)") {
        pinsight_testkit::skip_test!("PID 2 is not kthreadd here");
    }
    let start: u64 = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let before = affinity("2");
    let text = format!(
        r#"{{"format": "pinsight-balance-state", "version": 1, "threads": [
            {{"pid": 2, "tid": 2, "start_ticks": {start}, "name": "kthreadd", "affinity": "0"}}]}}"#
    );
    let kernel = write("kernel.json", &text, 0o600);
    let o = pinsight(&["--json", "balance", "--restore", kernel.to_str().unwrap()]).run();
    let doc = o.json();
    assert_eq!(doc["threads"][0]["outcome"], "refused", "{doc:#}");
    assert_eq!(affinity("2"), before);
}

/// SIGINT, SIGTERM and SIGHUP end a balance with 130, 143, 129 in every
/// phase: during the measurement before, nothing moved and no state is
/// left; during the measurement after, the moves stay and the message
/// names the state file that puts them back (which it does).
#[test]
fn a_signal_in_any_phase_exits_128_plus_n_and_names_the_undo() {
    let Some((a, b)) = two_cpus() else {
        pinsight_testkit::skip_test!("needs two usable CPUs");
    };
    let _moving = moving();
    let cpus = format!("{a},{b}");
    // Each phase is waited for, not timed: the signal goes once the
    // handlers are in place (measuring: nothing moved yet), or once the
    // thread has moved. A busy host slows the start by seconds; a signal
    // before the handlers would kill balance as the default action does.
    for (sig, code, moved) in [
        (libc::SIGINT, 130, false),
        (libc::SIGHUP, 129, false),
        (libc::SIGTERM, 143, true),
    ] {
        let procs = sleepers(1, &cpus);
        let pid = pid_texts(&procs)[0].clone();
        let home = tempfile::tempdir().unwrap();
        let child = crate::common_cmd::pinsight_in(home.path())
            .args(words(&format!(
                "balance --pids {pid} --cpus {cpus} --interval 2s"
            )))
            .env("XDG_STATE_HOME", home.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let id = child.id();
        let phase = || {
            if moved {
                !same(&affinity(&pid), &cpus)
            } else {
                catches(id, sig)
            }
        };
        let mut child = child;
        while !phase() && std::time::Instant::now() < deadline {
            if child.try_wait().unwrap().is_some() {
                let o = child.wait_with_output().unwrap();
                panic!(
                    "signal {sig}: balance ended before the phase to signal in ({:?}): {}",
                    o.status,
                    String::from_utf8_lossy(&o.stderr)
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(phase(), "signal {sig}: the phase to signal in never came");
        pinsight_sys::process::kill(child.id() as i32, sig).unwrap();
        let o = child.wait_with_output().unwrap();
        // As words: the message may wrap at 80 columns.
        let err = String::from_utf8_lossy(&o.stderr)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(o.status.code(), Some(code), "signal {sig}: {err}");
        let states: Vec<_> = std::fs::read_dir(home.path().join("pinsight"))
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        if moved {
            assert_eq!(states.len(), 1, "{states:?}");
            let state = states[0].to_str().unwrap();
            assert!(
                err.contains("which stay moved") && err.contains(state),
                "{err}"
            );
            assert!(!same(&affinity(&pid), &cpus), "the move was undone: {err}");
            let o = ok(&["balance", "--restore", state]);
            assert!(o.stdout.contains("restored 1 thread(s)"), "{}", o.stdout);
            assert!(same(&affinity(&pid), &cpus));
        } else {
            assert!(err.contains("before anything moved"), "{err}");
            assert!(states.is_empty(), "{states:?}");
            assert!(same(&affinity(&pid), &cpus));
        }
    }
}

/// Whether process `pid` has a handler for `sig` (`SigCgt` of
/// /proc/PID/status, proc(5)).
fn catches(pid: u32, sig: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            let hex = s
                .lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))?
                .trim()
                .to_owned();
            u64::from_str_radix(&hex, 16).ok()
        })
        .is_some_and(|mask| mask & (1 << (sig - 1)) != 0)
}

/// Whether two CPU lists name the same CPUs (`0,1` and `0-1`).
fn same(x: &str, y: &str) -> bool {
    let set = |l: &str| pinsight_cpuset::CpuSet::parse_list(l.trim()).unwrap();
    set(x) == set(y)
}

/// `balance --watch`'s flags: the daemon's knobs only with --watch, a
/// threshold above 1, no --dry-run, a measuring interval: one line,
/// exit 2.
#[test]
fn watch_flags_are_checked_one_line_exit_2() {
    let me = std::process::id().to_string();
    for (args, needle) in [
        (vec!["--pids", &me, "--threshold", "1.5"], "--watch"),
        (
            vec!["--pids", &me, "--watch", "--threshold", "1"],
            "above 1",
        ),
        (vec!["--pids", &me, "--watch", "--dry-run"], "--dry-run"),
        (
            vec!["--pids", &me, "--watch", "--patience", "0"],
            "--patience",
        ),
        (
            vec!["--pids", &me, "--watch", "--max-moves", "0"],
            "--max-moves",
        ),
    ] {
        refused(&args, 2, needle);
    }
    let o = pinsight(&words(
        "balance --match ^no-such-name$ --watch --interval 0",
    ))
    .run();
    assert_exit(&o, 2, &["--interval 0"]);
}

/// The daemon end to end, briefly: two sleepers on one CPU are new at the
/// first interval and placed one per CPU (a plain machine: equal
/// capacities); a third started meanwhile, free on both CPUs, is picked
/// up and given one; with --count the
/// daemon ends by itself, puts every thread back and removes its state
/// file. One JSON line per decision, then the end.
#[test]
fn watch_places_new_tasks_and_puts_everything_back_at_the_end() {
    let _moving = moving();
    let Some((a, b)) = two_cpus() else {
        pinsight_testkit::skip_test!("needs two usable CPUs");
    };
    let marker = format!("pinsight-watch-cli-{}", std::process::id());
    let start_on = |cpus: &str| {
        Command::new("taskset")
            .args(["-c", cpus, "bash", "-c"])
            .arg(format!("exec -a {marker} sleep 60"))
            .spawn()
            .expect("taskset starts")
    };
    let start = |cpu: usize| start_on(&cpu.to_string());
    let mut procs = Procs(vec![start(a), start(a)]);
    std::thread::sleep(std::time::Duration::from_millis(200));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("w.json");
    let cpus = format!("{a},{b}");
    let line = format!(
        "--json balance --watch --match {marker} --match-full --cpus {cpus} --interval 300ms --count 5"
    );
    let argv = with_state(&line, &state);
    let o = std::thread::scope(|s| {
        let watch = s.spawn(|| pinsight(&argv).run());
        std::thread::sleep(std::time::Duration::from_millis(500));
        // Free to run on both CPUs: it must be given one.
        procs.0.push(start_on(&cpus));
        watch.join().unwrap()
    });
    assert_eq!(o.code, 0, "{}", o.stderr);
    let lines: Vec<serde_json::Value> = o
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let placed: Vec<&serde_json::Value> =
        lines.iter().filter(|v| v["action"] == "placed").collect();
    assert!(placed.len() >= 2, "{}", o.stdout);
    assert_eq!(placed[0]["moved"], 1, "{}", o.stdout);
    assert_eq!(placed[0]["per_cpu"][a.to_string()], 1, "{}", o.stdout);
    assert_eq!(placed[0]["per_cpu"][b.to_string()], 1, "{}", o.stdout);
    assert_eq!(placed[1]["new"], 1, "{}", o.stdout);
    let end = lines.last().unwrap();
    assert_eq!(end["intervals"], 5, "{}", o.stdout);
    assert_eq!(end["state_removed"], true, "{}", o.stdout);
    assert!(!state.exists());
    let pids = pid_texts(&procs);
    for p in &pids[..2] {
        assert_eq!(affinity(p), a.to_string(), "PID {p} not put back");
    }
    assert_eq!(
        affinity(&pids[2]),
        cpus_list(a, b),
        "the third not put back"
    );
}

/// `a,b` as /proc's Cpus_allowed_list writes it.
fn cpus_list(a: usize, b: usize) -> String {
    if b == a + 1 {
        format!("{a}-{b}")
    } else {
        format!("{a},{b}")
    }
}
