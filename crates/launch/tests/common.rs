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

/// The test plans and expectations are written over two logical CPUs, 0
/// and 1; they stand for the two lowest CPUs this test may use, whatever
/// their ids (any runner with two usable CPUs runs the live tests).
/// Read once, so a test that narrows its own thread's mask cannot change it.
fn pair() -> (usize, usize) {
    static PAIR: std::sync::OnceLock<(usize, usize)> = std::sync::OnceLock::new();
    *PAIR.get_or_init(|| {
        let u = usable();
        let mut it = u.iter();
        match (it.next(), it.next()) {
            (Some(a), Some(b)) => (a, b),
            _ => (0, 1),
        }
    })
}

/// A CPU list over logical CPUs 0 and 1 (other ids kept) on the real CPUs.
pub fn cpus(list: &str) -> CpuSet {
    on_pair(list, pair())
}

/// `list` over logical CPUs 0 and 1 with 0 = `a`, 1 = `b`.
pub fn on_pair(list: &str, (a, b): (usize, usize)) -> CpuSet {
    CpuSet::parse_list(list)
        .unwrap()
        .iter()
        .map(|c| match c {
            0 => a,
            1 => b,
            c => c,
        })
        .collect()
}

/// A real CPU in logical terms: the pair's CPUs become 0 and 1; any other
/// CPU is shifted by 10000 so it can never pass for one of them.
pub fn logical_cpu(cpu: usize) -> usize {
    logical_cpu_of(cpu, pair())
}

/// `cpu` in logical terms when the pair is (`a`, `b`).
pub fn logical_cpu_of(cpu: usize, (a, b): (usize, usize)) -> usize {
    match cpu {
        c if c == a => 0,
        c if c == b => 1,
        c => c + 10_000,
    }
}

/// A real CPU set as a logical CPU list (see [`logical_cpu`]).
pub fn logical(set: &CpuSet) -> String {
    set.iter()
        .map(logical_cpu)
        .collect::<CpuSet>()
        .to_list_string()
}

/// A plan with these places (pinned) or this mask (set).
pub fn pinned_plan(places: &[&str]) -> Plan {
    let places: Vec<CpuSet> = places.iter().map(|p| cpus(p)).collect();
    Plan::pinned_to("cpus:test".into(), places, vec![])
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
        memory: None,
        near: None,
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
        memory: None,
        near: None,
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

/// Parses probe output: (phase, index) -> line, CPUs in logical terms
/// (see [`cpus`]).
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
            cpu: match f[5].parse::<i64>().unwrap() {
                c if c >= 0 => logical_cpu(c as usize) as i64,
                c => c,
            },
            affinity: logical(&CpuSet::parse_list(f[7]).unwrap()),
            pinned_after_us: f.get(9).and_then(|v| v.parse().ok()),
        };
        out.insert((l.phase.clone(), l.index), l);
    }
    out
}

/// The CPUs this test process may use (the tests need two).
pub fn usable() -> CpuSet {
    pinsight_sys::affinity::get_affinity(0).unwrap()
}

/// Whether two CPUs are usable (any two: see [`cpus`]); says why on
/// stderr when not.
pub fn need_two_cpus() -> bool {
    let u = usable();
    if u.len() < 2 {
        pinsight_testkit::skip(format!("needs two usable CPUs (have {u})"));
        return false;
    }
    true
}

/// Asserts that each (phase, index, CPU list) of `want` is the affinity
/// of that line of the probe's output (`lines`, parsed from `text`, shown
/// when one is not).
#[track_caller]
pub fn assert_affinities(
    lines: &BTreeMap<(String, usize), ProbeLine>,
    text: &str,
    want: &[(&str, usize, &str)],
) {
    for &(phase, index, cpus) in want {
        assert_eq!(
            lines[&(phase.to_string(), index)].affinity,
            cpus,
            "{phase} {index}: {text}"
        );
    }
}
