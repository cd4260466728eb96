//! The memory policy of a plan is set in the child before it executes
//! the program: the program starts with it, the launcher's thread keeps
//! its own (also when the start fails), and a policy the kernel refuses
//! is reported as the policy's error, not as the program's.

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

#[test]
fn a_refused_policy_is_the_policys_error_not_the_programs() {
    if get_mempolicy().is_err() {
        return pinsight_testkit::skip("get_mempolicy unavailable (kernel without NUMA)");
    }
    let before = get_mempolicy().unwrap();
    // Node 1000 exists on no machine: set_mempolicy refuses it (EINVAL)
    // in the child, which never executes `true`.
    let plan = os_plan_with(MemPlan::new(MemMode::Bind, vec![1000]));
    let opts = pinsight_launch::RunOptions::new("true", vec![]);
    let e = pinsight_launch::run(&plan, &opts).unwrap_err();
    assert!(
        matches!(&e, pinsight_launch::LaunchError::MemPolicy { .. }),
        "{e:?}"
    );
    assert_eq!(e.exit_code(), 1);
    assert!(
        e.to_string()
            .starts_with("cannot apply memory policy bind:1000: "),
        "{e}"
    );
    assert_eq!(get_mempolicy().unwrap(), before);
}
