//! Signals sent to the launcher reach the child; nothing is left under
//! TMPDIR on that path (the shim lives in a memfd). Its own test binary: it signals its own process.

mod common;
use common::*;
use pinsight_launch::{run, RunOptions};
use std::time::Duration;

#[test]
fn sigterm_is_forwarded_and_nothing_is_left_behind() {
    let tmp = tempfile::tempdir().unwrap();
    std::env::set_var("TMPDIR", tmp.path());
    // Two distinct places, so the shim is used (one place is a plain mask).
    let plan = pinned_plan(&["0", "0-1"]);
    let runner = std::thread::spawn(move || {
        run(&plan, &RunOptions::new("sleep", vec!["10".into()])).unwrap()
    });
    // Wait until the child runs, with the shim preloaded from a memfd (not a
    // file under TMPDIR).
    let me = std::process::id().to_string();
    let mut child_seen = None;
    for _ in 0..400 {
        child_seen = std::fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let after = stat.rsplit_once(") ")?.1;
            let ppid = after.split_whitespace().nth(1)?;
            (ppid == me && stat.contains("(sleep)")).then(|| e.path())
        });
        if child_seen.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let child = child_seen.expect("the child never started");
    std::thread::sleep(Duration::from_millis(50));
    let environ = std::fs::read(child.join("environ")).unwrap();
    let fd = String::from_utf8_lossy(&environ)
        .split('\0')
        .find_map(|v| v.strip_prefix("PINSIGHT_SHIM_FD=").map(str::to_string))
        .expect("no PINSIGHT_SHIM_FD in the child");
    let target = std::fs::read_link(child.join("fd").join(&fd)).unwrap();
    assert!(
        target.to_string_lossy().contains("memfd:pinsight-shim"),
        "{target:?}"
    );
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: signals our own process; the launcher's handler forwards it.
    unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
    let outcome = runner.join().unwrap();
    assert_eq!(
        (outcome.exit_code, outcome.signal),
        (128 + libc::SIGTERM, Some(libc::SIGTERM))
    );
    assert!(outcome.wall_ms < 5000.0, "{outcome:?}");
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "shim left behind"
    );
}
