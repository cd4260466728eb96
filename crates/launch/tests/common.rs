//! Shared helpers for the live tests (not a test by itself).
#![allow(dead_code)]

use pinsight_cpuset::CpuSet;
use pinsight_plan::Plan;
use std::collections::BTreeMap;

pub const PROBE: &str = env!("PINSIGHT_PROBE_BIN");
pub const OMP_PROBE: &str = env!("PINSIGHT_OMP_PROBE_BIN");
pub const STATIC_PROBE: &str = env!("PINSIGHT_STATIC_PROBE_BIN");

/// The statically linked probe; a test that needs it fails without it.
pub fn static_probe() -> &'static str {
    assert!(
        !STATIC_PROBE.is_empty(),
        "the C compiler could not link a static probe at build time: install the static C library (Debian: libc6-dev)"
    );
    STATIC_PROBE
}

pub fn cpus(list: &str) -> CpuSet {
    CpuSet::parse_list(list).unwrap()
}

/// A plan with these places (pinned) or this mask (set).
pub fn pinned_plan(places: &[&str]) -> Plan {
    let places: Vec<CpuSet> = places.iter().map(|p| cpus(p)).collect();
    let mask = places.iter().fold(CpuSet::new(), |a, p| a.union(p));
    Plan {
        policy: "cpus:test".into(),
        threads: places.len(),
        process_mask: mask,
        places,
        pinned: true,
        tasks_per_cpu: None,
        notes: vec![],
    }
}

pub fn set_plan(mask: &str, threads: usize) -> Plan {
    Plan {
        policy: "cpus-set:test".into(),
        threads,
        process_mask: cpus(mask),
        places: vec![cpus(mask); threads],
        pinned: false,
        tasks_per_cpu: None,
        notes: vec![],
    }
}

pub fn os_plan() -> Plan {
    Plan {
        policy: "os".into(),
        threads: 1,
        process_mask: cpus("0-1"),
        places: vec![],
        pinned: false,
        tasks_per_cpu: None,
        notes: vec![],
    }
}

/// One line of probe output.
#[derive(Debug, Clone)]
pub struct ProbeLine {
    pub phase: String,
    pub index: usize,
    pub tid: i32,
    pub cpu: i64,
    pub affinity: String,
    pub pinned_after_us: Option<i64>,
}

/// Parses probe output: (phase, index) -> line.
pub fn parse_probe(text: &str) -> BTreeMap<(String, usize), ProbeLine> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 || !matches!(f[0], "start" | "after" | "omp" | "created" | "fork") {
            continue;
        }
        let l = ProbeLine {
            phase: f[0].into(),
            index: f[1].parse().unwrap(),
            tid: f[3].parse().unwrap(),
            cpu: f[5].parse().unwrap(),
            affinity: f[7].into(),
            pinned_after_us: f.get(9).and_then(|v| v.parse().ok()),
        };
        out.insert((l.phase.clone(), l.index), l);
    }
    out
}

/// The CPUs this test process may use (the tests need two).
pub fn usable() -> CpuSet {
    pinsight_launch::affinity::get_affinity(0).unwrap()
}

pub fn need_two_cpus() -> bool {
    let u = usable();
    if !(u.contains(0) && u.contains(1)) {
        println!("skipped: needs CPUs 0 and 1 (have {u})");
        return false;
    }
    true
}
