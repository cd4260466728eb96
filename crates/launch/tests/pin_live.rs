//! `pin::pin_process` on live processes.

use crate::common;
use common::*;
use pinsight_launch::pin::{pin_process, threads_of, Outcome, PinError, PinOptions};
use pinsight_sys::procfs;
use pinsight_sys::FsRoot;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

/// [`waiting_probe_with`] and its pid, on a machine with two usable CPUs;
/// none (a skip counted) on one without.
fn probe_to_pin(n: usize, extra: &[&str]) -> Option<(Child, ProbeOut, String, i32)> {
    if !need_two_cpus() {
        return None;
    }
    let (child, out, start) = waiting_probe_with(n, extra);
    let pid = child.id() as i32;
    Some((child, out, start, pid))
}

type ProbeOut = BufReader<std::process::ChildStdout>;

/// Starts the probe with `n` threads and the `extra` arguments, waiting on
/// stdin; returns it once all threads exist, with its "start" lines.
fn waiting_probe_with(
    n: usize,
    extra: &[&str],
) -> (Child, BufReader<std::process::ChildStdout>, String) {
    let mut child = Command::new(PROBE)
        .args(["-t", &n.to_string(), "-w"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut text = String::new();
    loop {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "probe ended early: {text}"
        );
        if line.trim() == "ready" {
            break;
        }
        text.push_str(&line);
    }
    (child, out, text)
}

fn release(mut child: Child, mut out: BufReader<std::process::ChildStdout>) -> String {
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    rest
}

#[test]
fn repins_every_thread_of_a_running_process() {
    let Some((child, out, start, pid)) = probe_to_pin(3, &[]) else {
        return;
    };
    let fs = FsRoot::live();
    let plan = pinned_plan(&["1", "0", "1", "0"]);
    let report = pin_process(&fs, pid, &plan, &PinOptions::default()).unwrap();
    assert_eq!(report.threads.len(), 4, "{report:?}");
    assert!(!report.process_exited);
    // TID order = creation order here: the probe's own numbering.
    let start = parse_probe(&start);
    for (i, t) in report.threads.iter().enumerate() {
        assert_eq!(t.tid, start[&("start".to_string(), i)].tid);
        let want = plan.places[i].clone();
        assert_eq!(t.after.as_ref(), Some(&want), "{t:?}");
        assert_eq!(
            procfs::task_allowed(&fs, pid, t.tid).as_ref(),
            Some(&want),
            "/proc disagrees for {t:?}"
        );
        assert!(matches!(t.outcome, Outcome::Changed | Outcome::Unchanged));
    }
    // And the threads see it themselves.
    let after = parse_probe(&release(child, out));
    let aff: Vec<&str> = (0..4)
        .map(|i| after[&("after".to_string(), i)].affinity.as_str())
        .collect();
    assert_eq!(aff, vec!["1", "0", "1", "0"]);
}

#[test]
fn qemu_vcpu_threads_get_their_places() {
    // The probe names its threads like QEMU: "CPU 0/KVM", "CPU 1/KVM".
    let Some((child, out, _, pid)) = probe_to_pin(2, &["-q"]) else {
        return;
    };
    let fs = FsRoot::live();
    let plan = pinned_plan(&["1", "0"]);
    let opts = PinOptions {
        qemu: true,
        ..Default::default()
    };
    let report = pin_process(&fs, pid, &plan, &opts).unwrap();
    let by_name: std::collections::BTreeMap<String, String> = report
        .threads
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                logical(&procfs::task_allowed(&fs, pid, t.tid).unwrap()),
            )
        })
        .collect();
    assert_eq!(by_name["CPU 0/KVM"], "1", "{report:?}");
    assert_eq!(by_name["CPU 1/KVM"], "0", "{report:?}");
    // The main (emulator) thread: nothing left over, so the whole mask.
    assert_eq!(by_name["pinsight-probe"], "0-1", "{report:?}");
    release(child, out);
}

#[test]
fn dry_run_changes_nothing() {
    let Some((child, out, _, pid)) = probe_to_pin(1, &[]) else {
        return;
    };
    let fs = FsRoot::live();
    let before: Vec<_> = procfs::tids(&fs, pid)
        .iter()
        .map(|&t| procfs::task_allowed(&fs, pid, t))
        .collect();
    let opts = PinOptions {
        dry_run: true,
        ..Default::default()
    };
    let report = pin_process(&fs, pid, &pinned_plan(&["1", "0"]), &opts).unwrap();
    assert!(report
        .threads
        .iter()
        .all(|t| matches!(t.outcome, Outcome::WouldChange | Outcome::Unchanged)));
    let after: Vec<_> = procfs::tids(&fs, pid)
        .iter()
        .map(|&t| procfs::task_allowed(&fs, pid, t))
        .collect();
    assert_eq!(before, after);
    release(child, out);
}

#[test]
fn missing_pid_is_named() {
    let fs = FsRoot::live();
    let e = pin_process(
        &fs,
        999_999_999,
        &pinned_plan(&["0"]),
        &PinOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e, PinError::NoSuchProcess(999_999_999));
    assert_eq!(e.to_string(), "no process with PID 999999999");
    assert!(threads_of(&fs, -5).is_err());
}

#[test]
fn process_that_has_exited_gives_a_partial_report() {
    // An exited, not yet reaped child: /proc still lists it, but its
    // threads are gone — as if it exited between listing and pinning.
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id() as i32;
    let fs = FsRoot::live();
    for _ in 0..200 {
        if procfs::task_stat(&fs, pid, pid).is_some_and(|s| s.state == 'Z') {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let r = pin_process(&fs, pid, &pinned_plan(&["0"]), &PinOptions::default());
    child.wait().unwrap();
    match r {
        Ok(report) => {
            assert!(report.process_exited, "{report:?}");
            assert!(
                report.notes.iter().any(|n| n.contains("partial")),
                "{report:?}"
            );
        }
        Err(e) => assert_eq!(e, PinError::NoSuchProcess(pid)),
    }
}

/// Runs in a child test process as uid 65534 when PINSIGHT_TEST_EPERM_PID is set.
#[test]
fn eperm_on_another_users_process() {
    if let Ok(pid) = std::env::var("PINSIGHT_TEST_EPERM_PID") {
        let pid: i32 = pid.parse().unwrap();
        let r = pin_process(
            &FsRoot::live(),
            pid,
            &pinned_plan(&["0"]),
            &PinOptions::default(),
        );
        match r {
            Err(e @ PinError::PermissionDenied { .. }) => println!("RESULT-EPERM: {e}"),
            other => println!("RESULT-OTHER: {other:?}"),
        }
        return;
    }
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        pinsight_testkit::skip_test!("needs root to drop privileges to nobody");
    }
    let mut target = Command::new("sleep").arg("10").spawn().unwrap();
    let me = std::env::current_exe().unwrap();
    let mut cmd = Command::new(me);
    let name = pinsight_testkit::test_path(module_path!(), "eperm_on_another_users_process");
    cmd.args(["--exact", name.as_str(), "--nocapture", "--test-threads=1"])
        .env("PINSIGHT_TEST_EPERM_PID", target.id().to_string());
    // SAFETY: only async-signal-safe syscalls between fork and exec.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(65534) != 0
                || libc::setuid(65534) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    target.kill().unwrap();
    target.wait().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.find("RESULT-").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("no result: {text}"));
    assert!(line.starts_with("RESULT-EPERM:"), "{line}");
    assert!(
        line.contains(&format!("PID {}", target.id()))
            && line.contains("uid 0")
            && line.contains("CAP_SYS_NICE"),
        "{line}"
    );
}
