//! `pinsight balance` end to end on this machine: bad input is one line
//! and exit 2 with nothing changed; a dry run changes nothing and writes
//! no state; a real run saves the previous affinities (the path printed)
//! and `--restore` puts them back; `--threads` moves threads one by one;
//! a refused change puts back what was changed (exit 1).

use crate::common_cli;

use common_cli::*;
use std::process::{Child, Command, Stdio};

/// Processes the test started, killed on every exit path.
struct Procs(Vec<Child>);
impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Procs {
    fn pids(&self) -> Vec<String> {
        self.0.iter().map(|c| c.id().to_string()).collect()
    }
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

fn refused(args: &[&str], code: i32, needle: &str) {
    let mut argv = vec!["balance"];
    argv.extend_from_slice(args);
    let o = pinsight(&argv).run();
    assert_eq!(o.code, code, "{}: {}", o.argv, o.stderr);
    assert!(o.stdout.is_empty(), "{}: {}", o.argv, o.stdout);
    assert_eq!(o.stderr.lines().count(), 1, "{}: {}", o.argv, o.stderr);
    assert!(
        o.stderr.contains(needle),
        "{}: {} lacks {needle}",
        o.argv,
        o.stderr
    );
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
    refused(
        &["--pids", "1", "--cpus", "100000"],
        2,
        "--cpus: CPUs 100000 are not usable",
    );
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
    let o = pinsight(&["balance", "--pids", "1", "--dry-run", "--restore", "x"]).run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    let hybrid = hwloc_fixture("20em64t-hybrid-1p6c2t+2ca4co1t");
    let o = pinsight(&[
        "--fsroot",
        hybrid.to_str().unwrap(),
        "balance",
        "--pids",
        "1",
    ])
    .run();
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("plan balance --tasks"), "{}", o.stderr);
}

#[test]
fn a_dry_run_changes_nothing_and_writes_no_state() {
    let Some((a, b)) = two_cpus() else {
        pinsight_testkit::skip_test!("needs two usable CPUs");
    };
    let procs = sleepers(3, &a.to_string());
    let pids = procs.pids().join(",");
    let cpus = format!("{a},{b}");
    let o = pinsight(&[
        "balance",
        "--pids",
        &pids,
        "--cpus",
        &cpus,
        "--interval",
        "0",
        "--dry-run",
    ])
    .env("XDG_STATE_HOME", "/nonexistent-pinsight-state")
    .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stdout.contains("dry run: nothing changed"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("would move"), "{}", o.stdout);
    assert!(!o.stdout.contains("saved"), "{}", o.stdout);
    for p in procs.pids() {
        assert_eq!(affinity(&p), a.to_string());
    }
    assert!(
        o.stdout.lines().all(|l| l.chars().count() <= 80),
        "{}",
        o.stdout
    );
}

#[test]
fn pids_are_spread_saved_and_restored() {
    let Some((a, b)) = two_cpus() else {
        pinsight_testkit::skip_test!("needs two usable CPUs");
    };
    let procs = sleepers(4, &a.to_string());
    let pids = procs.pids().join(",");
    let state_home = tempfile::tempdir().unwrap();
    let cpus = format!("{a},{b}");
    let o = pinsight(&[
        "--json",
        "balance",
        "--pids",
        &pids,
        "--cpus",
        &cpus,
        "--interval",
        "200ms",
    ])
    .env("XDG_STATE_HOME", state_home.path())
    .run();
    assert_eq!(o.code, 0, "{}", o.stderr);
    let doc = o.json();
    let state = doc["state"].as_str().expect("a state path").to_string();
    assert!(
        state.starts_with(state_home.path().join("pinsight").to_str().unwrap()),
        "{state}"
    );
    assert!(doc["load_before"]["cpus"].is_array() && doc["load_after"]["cpus"].is_array());
    let after: Vec<String> = procs.pids().iter().map(|p| affinity(p)).collect();
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
    for p in procs.pids() {
        assert_eq!(affinity(&p), a.to_string());
    }
}

#[test]
fn match_with_threads_moves_each_thread() {
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
    let pid = procs.pids()[0].clone();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("s.json");
    let cpus = format!("{a},{b}");
    let o = ok(&[
        "--json",
        "balance",
        "--match",
        &marker,
        "--threads",
        "--cpus",
        &cpus,
        "--interval",
        "0",
        "--state",
        state.to_str().unwrap(),
    ]);
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
    let pids = procs.pids();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let state = dir.path().join("s.json");
    let mut argv: Vec<String> = nobody.iter().map(|s| s.to_string()).collect();
    argv.push(env!("CARGO_BIN_EXE_pinsight").into());
    argv.extend(
        [
            "balance",
            "--pids",
            &pids.join(","),
            "--cpus",
            &both,
            "--interval",
            "0",
            "--state",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    argv.push(state.to_str().unwrap().into());
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
    for p in cg.procs.pids() {
        std::fs::write(dir.join("cgroup.procs"), &p).expect("move into the test cgroup");
    }
    let state = tempfile::tempdir().unwrap();
    let state = state.path().join("s.json");
    let cpus = format!("{a},{b}");
    let o = ok(&[
        "balance",
        "--cgroup",
        dir.to_str().unwrap(),
        "--cpus",
        &cpus,
        "--interval",
        "0",
        "--state",
        state.to_str().unwrap(),
    ]);
    let mut got: Vec<String> = cg.procs.pids().iter().map(|p| affinity(p)).collect();
    got.sort();
    assert_eq!(got, vec![a.to_string(), b.to_string()], "{}", o.stdout);
    ok(&["balance", "--restore", state.to_str().unwrap()]);
    for p in cg.procs.pids() {
        assert_eq!(affinity(&p), a.to_string());
    }
}
