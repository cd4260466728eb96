//! Latency domains of recorded machines (matrices from core-to-core-latency,
//! MIT, see crates/latency/tests/fixtures/LICENSE-core-to-core-latency).

use crate::fixture;
use pinsight_cpuset::CpuSet;
use pinsight_latency_model::{domains, Basis, DomainTree, LatencyMatrix, Level};

fn sets(level: &Level) -> Vec<String> {
    level.domains.iter().map(|d| d.cpus.to_string()).collect()
}

fn list(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

/// The domains of `m`, checked to be nested partitions.
fn nested_domains(m: &LatencyMatrix) -> DomainTree {
    let t = domains(m);
    assert_nested_partitions(&t);
    t
}

/// Every level is a partition of all CPUs and each domain of a level is a
/// union of domains of the next finer level.
fn assert_nested_partitions(t: &DomainTree) {
    for l in &t.levels {
        let mut all = CpuSet::new();
        for d in &l.domains {
            assert!(!all.intersects(&d.cpus), "domains overlap");
            all = all.union(&d.cpus);
        }
        assert_eq!(all, t.cpus);
    }
    for w in t.levels.windows(2) {
        for fine in &w[1].domains {
            assert!(
                w[0].domains.iter().any(|c| fine.cpus.is_subset(&c.cpus)),
                "{} not nested",
                fine.cpus
            );
        }
    }
}

#[test]
fn ryzen_5950x_two_ccds_with_smt_siblings() {
    let t = nested_domains(&fixture("AMD_Ryzen_9_5950X_3.40_GHz.csv"));
    assert_eq!(t.levels.len(), 1);
    assert_eq!(sets(&t.levels[0]), ["0-7,16-23", "8-15,24-31"]);
    // SMT siblings (n, n+16) are the pair level, inside the CCDs.
    let pairs = t.pairs.as_ref().unwrap();
    assert_eq!(pairs.domains.len(), 16);
    assert!(pairs
        .domains
        .iter()
        .all(|d| d.cpus.len() == 2 && d.cpus.last().unwrap() == d.cpus.first().unwrap() + 16));
}

#[test]
fn dual_xeon_gold_6242_two_sockets() {
    let t = nested_domains(&fixture("Dual_Intel_R_Xeon_Gold_6242_2.8GHz.csv"));
    assert_eq!(t.levels.len(), 1);
    assert_eq!(sets(&t.levels[0]), ["0-15,32-47", "16-31,48-63"]);
}

#[test]
fn epyc_7r13_twelve_ccds_in_sockets() {
    let t = nested_domains(&fixture("AMD_EPYC_7R13_48-Core_Processor.csv"));
    let finest = t.finest().unwrap();
    let want: Vec<String> = (0..12)
        .map(|c| format!("{}-{},{}-{}", c * 8, c * 8 + 7, 96 + c * 8, 96 + c * 8 + 7))
        .collect();
    assert_eq!(sets(finest), want);
    assert!(finest.domains.iter().all(|d| d.cpus.len() == 16));
    // Coarsest: the two sockets. Socket 1's CCDs are 186-207 ns apart, as
    // far as from socket 0 (182-209 ns), so no latency jump shows socket 1;
    // its CCDs are grouped because each sees socket 0 alike (profile level).
    assert_eq!(t.levels.len(), 3);
    assert_eq!(sets(&t.levels[0]), ["0-47,96-143", "48-95,144-191"]);
    assert_eq!(t.levels[0].basis, Basis::Profile);
    // Middle (latency): socket 0's CCDs (88-111 ns apart) join; socket 1's
    // stay apart.
    let middle = &t.levels[1];
    assert_eq!(middle.basis, Basis::Latency);
    assert_eq!(middle.domains[0].cpus, list("0-47,96-143"));
    assert_eq!(middle.domains.len(), 7);
    assert_eq!(t.pairs.as_ref().unwrap().domains.len(), 96);
}

#[test]
fn apple_m1_pro_clusters() {
    let t = nested_domains(&fixture("Apple_M1_Pro.csv"));
    assert_eq!(t.levels.len(), 1);
    assert_eq!(sets(&t.levels[0]), ["0-1", "2-4", "5-7"]);
    assert!(t.pairs.is_none());
}

#[test]
fn threadripper_1950x_four_ccxs_in_dies() {
    let t = nested_domains(&fixture("AMD_Ryzen_Threadripper_1950X.csv"));
    assert_eq!(
        sets(t.finest().unwrap()),
        ["0-3,16-19", "4-7,20-23", "8-11,24-27", "12-15,28-31"]
    );
    // Coarsest: the two dies. Die 0's two CCXs are 156 ns apart in this
    // recording, as far as across dies (153 ns), so latency alone joins only
    // die 1 (91 ns, the middle level); die 0 is found by profile.
    assert_eq!(t.levels.len(), 3);
    assert_eq!(sets(&t.levels[0]), ["0-7,16-23", "8-15,24-31"]);
    assert_eq!(t.levels[0].basis, Basis::Profile);
    assert_eq!(sets(&t.levels[1]), ["0-3,16-19", "4-7,20-23", "8-15,24-31"]);
}

#[test]
fn other_machines_are_sensible() {
    let t = domains(&fixture("AMD_Ryzen_9_7950X.csv"));
    assert_eq!(sets(&t.levels[0]), ["0-15", "16-31"]);
    for (name, sockets) in [
        (
            "Intel_R_Xeon_R_CPU_E5-2695_v4_2.10GHz.csv",
            ["0-17,36-53", "18-35,54-71"],
        ),
        (
            "Intel_R_Xeon_R_Platinum_8375C_CPU_2.90GHz.csv",
            ["0-31,64-95", "32-63,96-127"],
        ),
    ] {
        let t = nested_domains(&fixture(name));
        assert_eq!(t.levels.len(), 1, "{name}");
        assert_eq!(sets(&t.levels[0]), sockets, "{name}");
    }
    // One mesh: no domains.
    let t = domains(&fixture("AWS_Graviton3.csv"));
    assert!(t.levels.is_empty() && t.pairs.is_none());
    // i9-12900K: only the P-core SMT pairs stand out. Its E-cores are 44 ns
    // apart inside a 4-core cluster but 33-40 ns from P-cores, so by latency
    // the E clusters are not domains.
    let t = domains(&fixture("Intel_Core_i9-12900K.csv"));
    assert!(t.levels.is_empty());
    assert_eq!(
        sets(t.pairs.as_ref().unwrap())[..8],
        ["0-1", "2-3", "4-5", "6-7", "8-9", "10-11", "12-13", "14-15"]
    );
}

#[test]
fn describe_names_every_domain() {
    let t = domains(&fixture("Apple_M1_Pro.csv"));
    let text = t.describe();
    assert!(text.starts_with("level 1 of 1: 3 domains"), "{text}");
    for cpus in ["0-1", "2-4", "5-7"] {
        assert!(text.contains(&format!("\n  {cpus} ")), "{text}");
    }
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["levels"][0]["domains"][1]["cpus"], "2-4");
}
