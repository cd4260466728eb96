//! Set-up shared by the test modules: the header of a test experiment.

use pinsight_compare::journal::{ArmHeader, ArmPlan, Header, Machine, SCHEMA};
use pinsight_cpuset::CpuSet;

/// Arm `id` (its policy too) running two threads in `mask`, pinned one
/// to each of `places` (none: floating).
pub fn arm(id: &str, mask: &str, places: Vec<CpuSet>) -> ArmHeader {
    ArmHeader {
        id: id.into(),
        policy: id.into(),
        governor: None,
        plan: ArmPlan {
            policy: id.into(),
            threads: 2,
            process_mask: CpuSet::parse_list(mask).unwrap(),
            pinned: !places.is_empty(),
            places,
            memory: None,
        },
        env: vec![],
        notes: vec![],
    }
}

/// An experiment of `command` over `arms` (the policies are their ids):
/// `runs` measured runs and `warmup` warm-ups per arm in the order of
/// `seed`; no other setting, nothing not applicable, no program metrics.
pub fn header(
    command: &[&str],
    arms: Vec<ArmHeader>,
    runs: usize,
    warmup: usize,
    seed: u64,
) -> Header {
    Header {
        schema: SCHEMA.into(),
        pinsight_version: "test".into(),
        created: "2025-01-01T00:00:00Z".into(),
        command: command.iter().map(|c| c.to_string()).collect(),
        prepare: None,
        policies: arms.iter().map(|a| a.id.clone()).collect(),
        governors: vec![],
        threads: None,
        oversubscribe: false,
        latency: None,
        weights: None,
        mem: None,
        near: None,
        runs,
        warmup,
        seed,
        timeout_s: None,
        arms,
        not_applicable: vec![],
        machine: Machine::default(),
        kind: None,
        extension: None,
        metrics: Vec::new(),
        unavailable: Default::default(),
    }
}
