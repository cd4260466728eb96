//! TO fed by counters: `CounterSf` attaches `pinsight sf`'s sampler to each
//! managed thread the first time the manager asks, samples it every period
//! and hands the manager the estimator's SF once both kinds have enough
//! samples. Run with the sampler's software stand-in (this machine may have
//! no PMU): the SF means nothing, the path from counters to the scheduler
//! is what is checked.

use pinsight_measure::sf::{SfOptions, SfSampler};
use pinsight_sched::{Config, CounterSf, Manager};
use pinsight_sched_model::{Capacity, Cpu, Policy};
use pinsight_sys::fsroot::FsRoot;
use std::process::{Command, Stdio};
use std::time::Duration;

// The kind PMUs of pinsight-measure's tests, one copy for both suites.
#[path = "../../measure/tests/common.rs"]
mod measure_common;

#[test]
fn to_gets_per_thread_sfs_from_counters() {
    let Some((big, small)) = crate::two_usable_cpus("TO with counters needs two usable CPUs")
    else {
        return;
    };
    let sampler = SfSampler::software_stand_in(
        measure_common::two_kind_pmus(big, small),
        SfOptions {
            min_running: Duration::from_millis(1),
            ..SfOptions::default()
        },
    );
    let mut child = Command::new("sh")
        .args(["-c", "while :; do :; done"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    let cfg = Config {
        policy: Policy::to(),
        period: Duration::from_millis(50),
        capacity: Capacity {
            big: vec![Cpu::new(big as u32)],
            small: vec![Cpu::new(small as u32)],
        },
        follow_children: false,
        group_children: false,
        orphans_of: None,
    };
    let mut m = Manager::new(
        FsRoot::live(),
        cfg,
        &[child.id() as i32],
        Box::new(CounterSf::new(sampler)),
    )
    .unwrap();
    // The stand-in counts on both groups whatever the CPU: five samples
    // of each kind take five periods; allow a loaded machine many more.
    let mut sf = None;
    for i in 0..100 {
        std::thread::sleep(Duration::from_millis(60));
        m.step();
        sf = m
            .report(Duration::from_secs(1), Default::default())
            .programs[0]
            .sf;
        if i >= 6 && sf.is_some() {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    m.finish(Duration::from_secs(1));
    let sf = sf.expect("no SF from counters after 100 periods");
    assert!(
        (1.0..=4.0).contains(&sf),
        "SF {sf} outside the estimator's clamp"
    );
}
