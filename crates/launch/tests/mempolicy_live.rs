//! The memory policy of a plan is set on the spawning thread for the span
//! of the spawn only: the program starts with it, and the launcher's thread
//! has its own policy back afterwards, also when the spawn fails.

use pinsight_plan::{MemMode, MemPlan, Plan};
use pinsight_sys::mempolicy::get_mempolicy;

fn os_plan_with(mem: MemPlan) -> Plan {
    Plan {
        process_mask: pinsight_sys::affinity::get_affinity(0).unwrap(),
        memory: Some(mem),
        ..crate::common::os_plan()
    }
}

#[test]
fn policy_is_applied_to_the_child_and_restored_on_every_path() {
    let Ok(before) = get_mempolicy() else {
        return pinsight_testkit::skip("get_mempolicy unavailable (kernel without NUMA)");
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let node: u32 = status
        .lines()
        .find_map(|l| l.strip_prefix("Mems_allowed_list:"))
        .and_then(|v| v.trim().split([',', '-']).next()?.parse().ok())
        .expect("Mems_allowed_list");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("maps");
    let plan = os_plan_with(MemPlan::new(MemMode::Bind, vec![node]));
    let script = format!("grep ' heap ' /proc/self/numa_maps > {}", out.display());
    let opts = pinsight_launch::RunOptions::new("sh", vec!["-c".into(), script.into()]);
    let outcome = pinsight_launch::run(&plan, &opts).unwrap();
    assert_eq!(outcome.exit_code, 0);
    assert_eq!(
        outcome.memory.as_deref(),
        Some(format!("bind:{node}").as_str())
    );
    let maps = std::fs::read_to_string(&out).unwrap();
    assert!(maps.contains(&format!(" bind:{node} heap")), "{maps}");
    assert_eq!(get_mempolicy().unwrap(), before, "restored after the spawn");

    // A program that cannot start: the error, and the policy restored.
    let opts = pinsight_launch::RunOptions::new("/nonexistent/pinsight-probe", vec![]);
    assert!(pinsight_launch::run(&plan, &opts).is_err());
    assert_eq!(
        get_mempolicy().unwrap(),
        before,
        "restored after a failed spawn"
    );
}
