//! A thread whose `/proc` files cannot be read for a moment is not gone
//! while its process still lists it: the next period samples it again
//! (a thread marked gone is never sampled again, and its time would be
//! lost for the rest of the run).

use pinsight_sched::{Manager, NoSf};
use pinsight_sys::fsroot::FsRoot;
use pinsight_testkit::Children;
use std::time::Duration;

#[test]
fn a_thread_unreadable_for_a_period_is_sampled_again() {
    // A real process for the placements (killed on every exit path), its
    // /proc recorded by hand.
    let sleeper = Children(vec![crate::sleep("30")]);
    let pid = sleeper.pids()[0] as i32;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sys/devices/system/cpu")).unwrap();
    let task = dir.path().join(format!("proc/{pid}/task/{pid}"));
    std::fs::create_dir_all(&task).unwrap();
    let fs = FsRoot::at(dir.path()).unwrap();
    let mut m =
        Manager::new_spawned(fs, crate::aarr_on_cpus_0_and_1(), &[pid], Box::new(NoSf)).unwrap();
    // Listed, but its stat unreadable: still alive, not sampled.
    assert!(m.step());
    // Readable from the next period on: utime 5 and stime 3 ticks, last
    // on CPU 1 (fields 14, 15 and 39 of proc(5)'s stat).
    let mut fields = vec!["0"; 50];
    fields[0] = "R";
    fields[11] = "5";
    fields[12] = "3";
    fields[36] = "1";
    std::fs::write(
        task.join("stat"),
        format!("{pid} (sleeper) {}\n", fields.join(" ")),
    )
    .unwrap();
    assert!(m.step());
    let report = m.finish(Duration::from_millis(100));
    drop(sleeper);
    let threads: Vec<_> = report.programs.iter().flat_map(|p| &p.threads).collect();
    assert_eq!(threads.len(), 1, "{report:?}");
    assert_eq!(
        threads[0].comm, "sleeper",
        "sampled once readable: {report:?}"
    );
}
