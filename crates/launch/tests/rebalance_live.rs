//! `rebalance` as a library on this machine: its progress is one
//! well-formed task, a dry run leaves every affinity alone, a real run
//! spreads the tasks and the saved state puts them back.

use pinsight_cpuset::CpuSet;
use pinsight_launch::rebalance::{self, select::Selector, Outcome, Request};
use pinsight_sys::FsRoot;
use pinsight_testkit::progress::Recorder;
use std::process::Command;
use std::time::Duration;

use pinsight_testkit::Children as Procs;

#[test]
fn progress_dry_run_apply_and_restore() {
    let usable = pinsight_testkit::usable_cpus();
    if usable.len() < 2 {
        pinsight_testkit::skip_test!("needs two usable CPUs");
    }
    let (a, b) = (usable[0], usable[1]);
    let procs = Procs(
        (0..2)
            .map(|_| {
                Command::new("taskset")
                    .args(["-c", &a.to_string(), "sleep", "60"])
                    .spawn()
                    .unwrap()
            })
            .collect(),
    );
    // taskset sets the mask, then execs sleep: let it.
    std::thread::sleep(Duration::from_millis(200));
    let pids: Vec<i32> = procs.pids().iter().map(|&p| p as i32).collect();
    let fs = FsRoot::live();
    let topo = pinsight_topology::discover::discover(&fs);
    let dir = tempfile::tempdir().unwrap();
    let mut req = Request {
        selector: Selector::Pids(pids.clone()),
        per_thread: false,
        cpus: Some([a, b].into_iter().collect::<CpuSet>()),
        weights: None,
        dry_run: true,
        interval: Some(Duration::from_millis(100)),
        state: Some(dir.path().join("s.json")),
        exclude: Vec::new(),
    };
    let mut seen = Recorder::default();
    let r = rebalance::rebalance(&fs, &topo, &req, &mut seen).unwrap();
    let tasks = seen.tasks();
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!((tasks[0].done, tasks[0].total), (3, 3), "{tasks:?}");
    assert!(r.state.is_none() && r.load_before.is_some() && r.load_after.is_none());
    assert_eq!(
        r.moves
            .iter()
            .filter(|m| m.outcome == Outcome::WouldMove)
            .count(),
        1
    );
    assert!(
        !dir.path().join("s.json").exists(),
        "a dry run wrote a state file"
    );
    let allowed = |p: i32| pinsight_testkit::allowed_list_of(p);
    assert!(pids.iter().all(|p| allowed(*p) == a.to_string()));

    req.dry_run = false;
    req.interval = None;
    let r = rebalance::rebalance(&fs, &topo, &req, &mut Recorder::default()).unwrap();
    assert_eq!(
        r.moves
            .iter()
            .filter(|m| m.outcome == Outcome::Moved)
            .count(),
        1
    );
    let mut now: Vec<String> = pids.iter().map(|p| allowed(*p)).collect();
    now.sort();
    assert_eq!(now, vec![a.to_string(), b.to_string()]);
    let back = rebalance::state::restore(&fs, r.state.as_ref().unwrap()).unwrap();
    assert_eq!(back.threads.len(), 2);
    assert!(pids.iter().all(|p| allowed(*p) == a.to_string()));
}
