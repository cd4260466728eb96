//! Dynamic capacity (HFI) reaches the live scheduler: a big CPU whose
//! performance drops to 0 gets no thread from the next period on, and gets
//! its thread back when the performance returns. Driven through the
//! manager's capacity channel (HFI itself needs an Intel hybrid CPU).

use pinsight_sched::{Config, Manager, NoSf};
use pinsight_sched_model::{Capacity, Cpu, Policy};
use pinsight_sys::fsroot::FsRoot;
use std::process::{Command, Stdio};
use std::time::Duration;

fn allowed_of(pid: u32) -> String {
    pinsight_testkit::allowed_list_of(pid)
}

fn periods(m: &mut Manager, n: usize) {
    for _ in 0..n {
        std::thread::sleep(Duration::from_millis(60));
        m.step();
    }
}

#[test]
fn a_vacated_big_cpu_gets_no_thread_until_it_comes_back() {
    let Some((big, small)) = crate::two_usable_cpus("capacity changes need two usable CPUs") else {
        return;
    };
    let (big, small) = (big as u32, small as u32);
    let mut child = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let cfg = Config {
        policy: Policy::aarr(0.05),
        period: Duration::from_millis(50),
        capacity: Capacity {
            big: vec![Cpu::new(big)],
            small: vec![Cpu::new(small)],
        },
        follow_children: false,
        group_children: false,
        orphans_of: None,
    };
    let mut m = Manager::new(FsRoot::live(), cfg, &[pid as i32], Box::new(NoSf)).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    m.capacity_updates(rx, "test feed");
    periods(&mut m, 3);
    // One busy thread, one big CPU: AARR gives it the big CPU.
    assert_eq!(allowed_of(pid), big.to_string());
    // The big CPU's capacity drops to 0, then comes back.
    for (capacity, want, why) in [
        (0, small, "vacated big CPU kept its thread"),
        (180, big, "the thread did not come back"),
    ] {
        tx.send((big, capacity)).unwrap();
        periods(&mut m, 2);
        assert_eq!(allowed_of(pid), want.to_string(), "{why}");
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let r = m.finish(Duration::from_secs(1));
    assert_eq!(r.capacity.changes, 2, "{:?}", r.capacity);
    assert_eq!(r.capacity.source.as_deref(), Some("test feed"));
    assert!(r.capacity.vacated.is_empty(), "{:?}", r.capacity);
}
