//! Signals sent to the launcher reach the child; the shim is removed on
//! that path too. Its own test binary: it signals its own process.

mod common;
use common::*;
use pinsight_launch::{run, RunOptions};
use std::time::Duration;

#[test]
fn sigterm_is_forwarded_and_nothing_is_left_behind() {
    let tmp = tempfile::tempdir().unwrap();
    std::env::set_var("TMPDIR", tmp.path());
    // Two distinct places, so the shim is written (one place is a plain mask).
    let plan = pinned_plan(&["0", "0-1"]);
    let runner = std::thread::spawn(move || {
        run(&plan, &RunOptions::new("sleep", vec!["10".into()])).unwrap()
    });
    // Wait until the child runs with the shim written.
    let mut shim_seen = false;
    for _ in 0..400 {
        if std::fs::read_dir(tmp.path()).unwrap().next().is_some() {
            shim_seen = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(shim_seen, "the shim was never written under TMPDIR");
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
