//! A program the caller started may be gone before the manager is made
//! (`mix -- 'echo a' 'echo b'`: `echo` lives for a millisecond and its
//! waiter reaps it at once). For the caller's own children that is the
//! program's end, not a missing process: `Manager::new_spawned` manages
//! it as ended, where `Manager::new` (pids the user named) refuses it.

use pinsight_sched::{ManageError, Manager, NoSf};
use pinsight_sys::fsroot::FsRoot;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn a_child_that_has_ended_already_is_managed_as_ended() {
    let mut fast = Command::new("true").stdin(Stdio::null()).spawn().unwrap();
    let gone = fast.id() as i32;
    fast.wait().unwrap();
    let mut slow = crate::sleep("0.3");
    let live = slow.id() as i32;
    // A pid the user named must exist.
    assert_eq!(
        Manager::new(
            FsRoot::live(),
            crate::aarr_on_cpus_0_and_1(),
            &[gone, live],
            Box::new(NoSf)
        )
        .err(),
        Some(ManageError::NoProcess { pid: gone })
    );
    // The caller's own children, one already reaped: managed, positions
    // in order, the ended one never alive.
    let mut m = Manager::new_spawned(
        FsRoot::live(),
        crate::aarr_on_cpus_0_and_1(),
        &[gone, live],
        Box::new(NoSf),
    )
    .expect("a child that has ended is no error");
    assert!(m.step(), "the sleeping child is alive");
    slow.wait().unwrap();
    let mut alive = true;
    for _ in 0..20 {
        alive = m.step();
        if !alive {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive, "both children have ended");
    // Only the ended ones: still a manager, nothing alive.
    let mut m = Manager::new_spawned(
        FsRoot::live(),
        crate::aarr_on_cpus_0_and_1(),
        &[gone],
        Box::new(NoSf),
    )
    .unwrap();
    assert!(!m.step());
    assert!(matches!(
        Manager::new_spawned(
            FsRoot::live(),
            crate::aarr_on_cpus_0_and_1(),
            &[],
            Box::new(NoSf)
        ),
        Err(ManageError::Empty)
    ));
}
