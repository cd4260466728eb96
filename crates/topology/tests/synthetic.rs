//! Core kinds and topology on hand-made machines (see pinsight-testkit's `synth.rs`):
//! the cases the recorded hwloc dumps do not cover.

use crate::common;
use crate::common::{discover_machine, set};

use common::synth;
use pinsight_cpuset::CpuSet;
use pinsight_model::{CoreType, KindSource, RankSource, Topology};
use pinsight_sys::FsRoot;
use pinsight_topology::discover;
use std::path::Path;

fn committed(name: &str) -> Topology {
    discover(&FsRoot::at(common::synthetic(name)).unwrap())
}

fn kind_sets(t: &Topology) -> Vec<CpuSet> {
    t.kinds.iter().map(|k| k.cpus.clone()).collect()
}

/// Every file under `dir`, relative, with its contents.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((
                    p.strip_prefix(dir).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// How `generated` (what the generator writes) differs from `committed`
/// (the tree in the repository): one line per path, at most `limit`.
fn tree_diff(
    generated: &[(String, Vec<u8>)],
    committed: &[(String, Vec<u8>)],
    limit: usize,
) -> Vec<String> {
    let committed: std::collections::BTreeMap<&str, &[u8]> = committed
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    let generated_map: std::collections::BTreeMap<&str, &[u8]> = generated
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    let mut out = Vec::new();
    for (path, new) in &generated_map {
        match committed.get(path) {
            None => out.push(format!("  + {path} (generated, not committed)")),
            Some(old) if old != new => out.push(format!(
                "  ~ {path}: committed {:?}, generated {:?}",
                String::from_utf8_lossy(old),
                String::from_utf8_lossy(new)
            )),
            Some(_) => {}
        }
    }
    for path in committed.keys() {
        if !generated_map.contains_key(path) {
            out.push(format!("  - {path} (committed, no longer generated)"));
        }
    }
    let more = out.len().saturating_sub(limit);
    out.truncate(limit);
    if more > 0 {
        out.push(format!("  ... and {more} more"));
    }
    out
}

/// The shared trees every suite reads (written once per build directory
/// by `pinsight_testkit::fixtures::synthetic`, kept across runs) are
/// exactly what the generator writes now: a cached tree can never stand
/// in for a changed generator or be altered by a test.
#[test]
fn shared_synthetic_fixtures_are_generated() {
    let mut stale = Vec::new();
    for (name, m) in synth::committed() {
        let tmp = common::tempdir();
        m.write(tmp.path());
        let diff = tree_diff(&tree(tmp.path()), &tree(&common::synthetic(name)), 20);
        if !diff.is_empty() {
            stale.push(format!("{name}:\n{}", diff.join("\n")));
        }
    }
    assert!(
        stale.is_empty(),
        "shared synthetic trees (under {}) differ from what pinsight-testkit's synth.rs writes:\n{}\n\
         a test wrote into one: tests must copy a machine before altering it",
        pinsight_testkit::fixtures::cache_dir().display(),
        stale.join("\n")
    );
}

#[test]
fn tree_diff_names_added_changed_and_removed_files() {
    let f = |p: &str, b: &str| (p.to_string(), b.as_bytes().to_vec());
    let generated = [f("a", "1\n"), f("b", "2\n"), f("new", "x")];
    let committed = [f("a", "1\n"), f("b", "3\n"), f("old", "y")];
    assert_eq!(
        tree_diff(&generated, &committed, 20),
        [
            "  ~ b: committed \"3\\n\", generated \"2\\n\"",
            "  + new (generated, not committed)",
            "  - old (committed, no longer generated)",
        ]
    );
    assert!(tree_diff(&generated, &generated, 20).is_empty());
    assert_eq!(
        tree_diff(&generated, &committed, 1).len(),
        2,
        "one line and a count"
    );
}

#[test]
fn arm_phone_has_three_kinds_little_to_big() {
    let t = committed("arm-phone-3cluster");
    assert_eq!(kind_sets(&t), vec![set("0-3"), set("4-5"), set("6-7")]);
    assert_eq!(
        common::kind_names(&t),
        ["Cortex-A55", "Cortex-A76", "Cortex-X1"]
    );
    assert!(t
        .kinds
        .iter()
        .all(|k| k.source == KindSource::Midr && k.rank_source == RankSource::Capacity));
    assert_eq!(t.kinds[0].capacity_raw, Some(160));
    assert_eq!(t.kinds[2].capacity, Some(1.0));
    assert!((t.kinds[1].capacity.unwrap() - 498.0 / 1024.0).abs() < 1e-9);
    assert_eq!(t.kinds[2].max_mhz, Some(2841));
    assert_eq!(t.cpu(5).unwrap().kind, Some(1));
    assert_eq!(t.arch.as_deref(), Some("aarch64"));
    assert_eq!(
        t.clusters.len(),
        3,
        "one cluster per core type is meaningful"
    );
    assert_eq!(t.cores.len(), 8);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

#[test]
fn intel_hybrid_with_flat_firmware_frequencies_uses_pmu_lists() {
    let t = committed("intel-hybrid-laptop");
    assert_eq!(kind_sets(&t), vec![set("8-15"), set("0-7")]);
    assert_eq!(common::kind_labels(&t), [("E-core", "E"), ("P-core", "P")]);
    assert!(t
        .kinds
        .iter()
        .all(|k| k.source == KindSource::HybridPmu && k.rank_source == RankSource::CoreType));
    assert_eq!(t.cpu(3).unwrap().core_type, Some(CoreType::Core));
    assert_eq!(t.cores.len(), 12);
    assert_eq!(
        t.caches_at(2).count(),
        6,
        "4 P-core L2s and 2 E-core module L2s"
    );
    assert!(t.clusters.is_empty(), "clusters equal to L2s add nothing");
    assert_eq!(
        t.model_name.as_deref(),
        Some("12th Gen Intel(R) Core(TM) i7-1260P")
    );
    // The flat max frequency is itself worth a warning: firmware that
    // reports one max frequency everywhere hides the kinds' order.
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(t.warnings[0].contains("cpuinfo_max_freq: every CPU reports 4700 MHz"));
}

#[test]
fn meteor_lake_has_lp_e_cores_below_e_cores() {
    let t = committed("meteorlake-lp-ecores");
    assert_eq!(kind_sets(&t), vec![set("20-21"), set("12-19"), set("0-11")]);
    assert_eq!(common::kind_marks(&t), ["L", "E", "P"]);
    assert_eq!(t.kinds[0].name, "LP E-core");
    assert_eq!(t.kinds[0].core_type, Some(CoreType::LowPower));
    common::assert_ranked_by(&t, RankSource::MaxFrequency);
    assert_eq!(t.kinds[2].base_mhz, Some(1400));
}

#[test]
fn gb10_capacity_is_read_by_cpu_number_not_position() {
    let t = committed("gb10-low-cpus-offline");
    assert_eq!(t.online(), set("5-19"));
    assert_eq!(kind_sets(&t), vec![set("5-9"), set("10-19")]);
    assert_eq!(t.kinds[0].name, "Cortex-A725");
    assert_eq!(t.kinds[1].name, "Cortex-X925");
    assert_eq!(t.kinds[1].capacity_raw, Some(1024));
    assert_eq!(t.cpu(5).unwrap().capacity, Some(470));
    assert_eq!(t.cpu(10).unwrap().capacity, Some(1017), "cpu10's own file");
    assert!(t.cpu(0).unwrap().kind.is_none());
    // Without MIDRs (neither `midr_el1` nor the fields of
    // `/proc/cpuinfo`), capacities alone still give the same two kinds.
    let mut m = synth::gb10_low_offline();
    m.cpus.iter_mut().for_each(|c| c.midr = None);
    m.cpuinfo = synth::arm_cpuinfo(&m.cpus);
    let t = discover_machine(&m);
    assert_eq!(kind_sets(&t), vec![set("5-9"), set("10-19")]);
    assert!(t.kinds.iter().all(|k| k.source == KindSource::Capacity));
    assert_eq!(
        (t.kinds[0].name.as_str(), t.kinds[1].name.as_str()),
        ("little", "big")
    );
}

#[test]
fn identical_cores_with_slightly_different_capacities_are_one_kind() {
    for with_midr in [true, false] {
        let t = discover_machine(&synth::identical_a72(with_midr));
        assert_eq!(kind_sets(&t), vec![set("0-3")], "with MIDR: {with_midr}");
        assert_eq!(t.kinds[0].rank_source, RankSource::Uniform);
        assert_eq!(t.kinds[0].capacity_raw, Some(731));
        if with_midr {
            assert_eq!(t.kinds[0].name, "Cortex-A72");
        }
    }
}

#[test]
fn turbo_boost_favoured_cores_are_one_kind() {
    // Cores 1 and 3 are favoured: 5200 MHz instead of 5000, same base.
    let m = synth::small_smt(|cpu| {
        (
            if cpu % 4 == 1 || cpu % 4 == 3 {
                5_200_000
            } else {
                5_000_000
            },
            1_900_000,
        )
    });
    let t = discover_machine(&m);
    assert_eq!(kind_sets(&t), vec![set("0-7")]);
    assert_eq!(t.kinds[0].max_mhz, Some(5200));
    assert_eq!(t.kinds[0].source, KindSource::Frequency);
    // A real difference (base differs) splits them, ranked by max frequency.
    let m = synth::small_smt(|cpu| {
        if cpu % 4 < 2 {
            (5_000_000, 1_900_000)
        } else {
            (3_900_000, 1_400_000)
        }
    });
    let t = discover_machine(&m);
    assert_eq!(kind_sets(&t), vec![set("2-3,6-7"), set("0-1,4-5")]);
    assert_eq!(t.kinds[0].rank_source, RankSource::MaxFrequency);
}

#[test]
fn homogeneous_machine_without_any_data_has_one_uniform_kind() {
    let mut m = synth::small_smt(|_| (0, 0));
    m.cpus.iter_mut().for_each(|c| {
        c.max_khz = None;
        c.base_khz = None;
    });
    let t = discover_machine(&m);
    assert_eq!(t.kinds.len(), 1);
    assert_eq!(t.kinds[0].cpus, set("0-7"));
    assert_eq!(t.kinds[0].source, KindSource::Uniform);
    assert_eq!(t.kinds[0].rank_source, RankSource::Uniform);
    assert!(t.cpus.iter().all(|c| c.kind == Some(0)));
}

#[test]
fn offline_cpu0_is_listed_and_its_sibling_stands_alone() {
    let mut m = synth::small_smt(|_| (3_000_000, 2_000_000));
    m.cpus[0].online = false;
    let t = discover_machine(&m);
    assert_eq!(t.online(), set("1-7"));
    let c0 = t.cpu(0).expect("cpu0 present");
    assert!(
        !c0.online
            && c0.core.is_none()
            && c0.package.is_none()
            && c0.numa.is_none()
            && c0.kind.is_none()
    );
    assert_eq!(
        t.siblings(4),
        set("4"),
        "cpu4's mask names offline cpu0: intersected away"
    );
    assert_eq!(t.cores[0].cpus, set("1,5"));
    assert_eq!(t.cores.iter().map(|g| g.cpus.len()).sum::<usize>(), 7);
    assert!(t.caches.iter().all(|c| !c.cpus.contains(0)));
    assert_eq!(t.numa_nodes[0].cpus, set("1-7"));
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

#[test]
fn machine_with_2048_cpus() {
    let m = synth::big_server(8, 128, 2);
    let t = discover_machine(&m);
    assert_eq!(t.cpus.len(), 2048);
    assert_eq!(t.online().len(), 2048);
    assert_eq!(t.cores.len(), 1024);
    assert!(t.cores.iter().all(|c| c.cpus.len() == 2));
    assert_eq!(t.siblings(0), set("0,1024"));
    assert_eq!(t.packages.len(), 8);
    assert_eq!(t.numa_nodes.len(), 8);
    assert_eq!(t.caches_at(3).count(), 8);
    assert_eq!(t.kinds.len(), 1);
    assert_eq!(
        t.numa_distances.as_ref().unwrap()[0],
        vec![10, 20, 20, 20, 20, 20, 20, 20]
    );
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}
