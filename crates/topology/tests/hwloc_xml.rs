//! hwloc XML import against real lstopo exports (hwloc's test suite
//! machines, re-exported by lstopo 2.9; hwloc's own v3 expected output; this
//! build machine) and hand-written v1/v2/v3 files. Expected figures come
//! from hwloc's `lstopo -v` outputs for the same machines (`*.console` in
//! hwloc's test suite), not from our own code.

use crate::common::set;
use pinsight_cpuset::CpuSet;
use pinsight_model::*;
use pinsight_sys::FsRoot;
use pinsight_topology::discover;
use pinsight_topology::hwloc_xml;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/xml")
        .join(name)
}

fn load(name: &str) -> Topology {
    hwloc_xml::load(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn cache_count(t: &Topology, level: u8, ty: CacheType) -> usize {
    t.caches
        .iter()
        .filter(|c| c.level == level && c.cache_type == ty)
        .count()
}

/// Invariants every imported model must satisfy, whatever the file.
fn check_invariants(t: &Topology) {
    assert!(t.cpus.windows(2).all(|w| w[0].id < w[1].id), "cpus sorted");
    for groups in [&t.cores, &t.packages, &t.dies, &t.clusters] {
        for (i, g) in groups.iter().enumerate() {
            assert_eq!(g.id, i, "dense ids");
            assert!(!g.cpus.is_empty());
            assert!(
                g.cpus.is_subset(&t.online()),
                "groups hold online CPUs only"
            );
        }
        assert!(
            groups
                .windows(2)
                .all(|w| w[0].cpus.first() < w[1].cpus.first()),
            "ordered by first CPU"
        );
    }
    for groups in [&t.cores, &t.packages, &t.dies, &t.clusters] {
        let total: usize = groups.iter().map(|g| g.cpus.len()).sum();
        let union = groups.iter().fold(CpuSet::new(), |a, g| a.union(&g.cpus));
        assert_eq!(total, union.len(), "groups of a level are disjoint");
    }
    for c in &t.cpus {
        if c.online {
            let core = c.core.expect("online CPU has a core");
            assert!(t.cores[core].cpus.contains(c.id));
            let pkg = c.package.expect("online CPU has a package");
            assert!(t.packages[pkg].cpus.contains(c.id));
        } else {
            assert!(c.core.is_none() && c.package.is_none() && c.kind.is_none());
        }
    }
    for (rank, k) in t.kinds.iter().enumerate() {
        assert_eq!(k.rank, rank);
        for c in &k.cpus {
            assert_eq!(t.cpu(c).unwrap().kind, Some(rank));
        }
    }
    if let Some(d) = &t.numa_distances {
        assert_eq!(d.len(), t.numa_nodes.len());
        assert!(d.iter().all(|row| row.len() == t.numa_nodes.len()));
    }
    assert!(t.numa_nodes.windows(2).all(|w| w[0].id < w[1].id));
}

#[test]
fn hwloc_v3_expected_output_cgroup2() {
    // hwloc's own expected v3 export: a 4-socket Opteron of 32 CPUs seen
    // from a cgroup holding CPUs 0-5.
    let t = load("32amd64-4s2n4c-cgroup2.xml");
    check_invariants(&t);
    assert_eq!(
        t.source,
        Source::HwlocXml(fixture("32amd64-4s2n4c-cgroup2.xml").display().to_string())
    );
    assert_eq!(t.cpus.len(), 32);
    assert_eq!(t.online(), set("0-5"));
    assert_eq!(t.usable(), set("0-5"));
    assert_eq!(t.cores.len(), 6);
    // Core os ids restart per NUMA node (P#0..3, then P#0..1).
    assert_eq!(
        t.cores.iter().map(|c| c.os_id).collect::<Vec<_>>(),
        [0, 1, 2, 3, 0, 1].map(Some)
    );
    assert_eq!(
        t.packages.len(),
        1,
        "packages 1-2 have no CPU in the cpuset"
    );
    assert_eq!(cache_count(&t, 3, CacheType::Unified), 2);
    assert_eq!(cache_count(&t, 2, CacheType::Unified), 6);
    assert_eq!(cache_count(&t, 1, CacheType::Data), 6);
    let l3 = t.caches_at(3).next().unwrap();
    assert_eq!(
        (l3.size_kib, l3.line_size, l3.ways),
        (Some(5118), Some(64), Some(48))
    );
    assert_eq!(l3.cpus, set("0-3"));
    assert_eq!(
        t.numa_nodes.iter().map(|n| n.id).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4, 5]
    );
    assert_eq!(t.numa_nodes[1].cpus, set("4-5"));
    assert_eq!(t.numa_nodes[1].memory_mib, Some(16384));
    assert!(t.numa_nodes[2].cpus.is_empty());
    let d = t.numa_distances.as_ref().unwrap();
    assert_eq!(d[0], vec![10, 16, 16, 22, 16, 22]);
    assert_eq!(d[5], vec![22, 16, 22, 16, 16, 10]);
    assert_eq!(
        t.model_name.as_deref(),
        Some("AMD Opteron(tm) Processor 6134")
    );
    assert_eq!(t.kinds.len(), 1);
    assert_eq!(t.kinds[0].cpus, set("0-5"));
    assert_eq!(t.kinds[0].max_mhz, Some(2300));
    assert_eq!(t.kinds[0].rank_source, RankSource::Uniform);
    assert_eq!(t.cpu(3).unwrap().max_mhz, Some(2300));
    crate::common::assert_warned(&t, &["6-31", "offline"]);
}

#[test]
fn hybrid_raptor_lake_from_lstopo() {
    // i7-1370P: 6 P-cores with SMT (0-11), 8 E-cores (12-19) in two L2
    // clusters. lstopo from sysfs has no CPUID core type, and its kinds
    // carry frequencies only: ranked by max frequency, as hwloc's v3
    // output ranks them (E-cores efficiency 0).
    let t = load("20em64t-hybrid-1p6c2t+2ca4co1t.hwloc29.xml");
    check_invariants(&t);
    assert_eq!(t.cpus.len(), 20);
    assert_eq!(t.cores.len(), 14);
    assert_eq!(t.packages.len(), 1);
    assert!(t.dies.is_empty() && t.clusters.is_empty());
    assert_eq!(cache_count(&t, 3, CacheType::Unified), 1);
    assert_eq!(cache_count(&t, 2, CacheType::Unified), 8);
    assert_eq!(cache_count(&t, 1, CacheType::Data), 14);
    assert_eq!(cache_count(&t, 1, CacheType::Instruction), 14);
    assert_eq!(
        t.caches_at(2)
            .map(|c| c.size_kib.unwrap())
            .collect::<Vec<_>>(),
        [1280, 1280, 1280, 1280, 1280, 1280, 2048, 2048]
    );
    assert_eq!(t.siblings(4), set("4-5"));
    assert_eq!(t.siblings(13), set("13"));
    assert_eq!(t.kinds.len(), 2);
    assert_eq!(t.kinds[0].cpus, set("12-19"));
    assert_eq!(t.kinds[1].cpus, set("0-11"));
    assert_eq!(t.kinds[0].rank_source, RankSource::MaxFrequency);
    // Named as discovery names this machine's kinds (an Intel CPU with
    // two kinds told apart by frequency): E-cores and P-cores.
    assert_eq!(
        crate::common::kind_labels(&t),
        [("E-core", "E"), ("P-core", "P")]
    );
    assert_eq!(
        (t.kinds[1].max_mhz, t.kinds[1].base_mhz),
        (Some(5000), Some(1900))
    );
    assert_eq!(t.kinds[0].source, KindSource::HwlocXml);
    assert_eq!(t.fastest_kind().unwrap().cpus, set("0-11"));
    assert_eq!(t.cpu(15).unwrap().kind, Some(0));
    assert_eq!(t.cpu(15).unwrap().max_mhz, Some(3900));
    assert_eq!(
        t.arch, None,
        "lstopo on a sysfs dump of x86 records no architecture"
    );
}

#[test]
fn hybrid_v3_with_forced_efficiency_and_core_types() {
    let t = load("hybrid-i7-1370p-like.v3.xml");
    check_invariants(&t);
    assert_eq!(t.cpus.len(), 20);
    assert!(
        t.cpus.iter().all(|c| c.online && c.allowed),
        "0xf...f allowed set cut at the last CPU"
    );
    assert_eq!(t.cores.len(), 14);
    assert_eq!(t.cores[6].os_id, Some(24));
    assert!(t.clusters.is_empty(), "clusters equal to an L2 add nothing");
    let (e, p) = (&t.kinds[0], &t.kinds[1]);
    assert_eq!(
        (e.name.as_str(), e.mark.as_str(), e.cpus.clone()),
        ("E-core", "E", set("12-19"))
    );
    assert_eq!(
        (p.name.as_str(), p.mark.as_str(), p.cpus.clone()),
        ("P-core", "P", set("0-11"))
    );
    assert_eq!(e.rank_source, RankSource::HwlocEfficiency);
    assert_eq!(
        (e.core_type, p.core_type),
        (Some(CoreType::Atom), Some(CoreType::Core))
    );
    assert_eq!((e.capacity_raw, p.capacity_raw), (Some(446), Some(1024)));
    assert_eq!(p.capacity, Some(1.0));
    assert!((e.capacity.unwrap() - 446.0 / 1024.0).abs() < 1e-9);
    let cpu13 = t.cpu(13).unwrap();
    assert_eq!(
        (
            cpu13.capacity,
            cpu13.core_type,
            cpu13.max_mhz,
            cpu13.base_mhz
        ),
        (Some(446), Some(CoreType::Atom), Some(3900), Some(1400))
    );
    assert_eq!(
        t.model_name.as_deref(),
        Some("13th Gen Intel(R) Core(TM) i7-1370P")
    );
    assert_eq!(t.numa_nodes[0].memory_mib, Some(31885));
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

#[test]
fn v2_abbreviated_sets_distances_clusters() {
    let t = load("two-package-abbrev.v2.xml");
    check_invariants(&t);
    assert_eq!(
        t.cpus.iter().map(|c| c.id).collect::<CpuSet>(),
        set("0-7,64-72")
    );
    assert_eq!(t.online(), set("0-7,64-71"));
    assert_eq!(t.usable(), set("0-7,64,66-71"));
    assert!(!t.cpu(72).unwrap().online);
    assert_eq!(
        t.packages
            .iter()
            .map(|p| p.cpus.clone())
            .collect::<Vec<_>>(),
        vec![set("0-7"), set("64-71")]
    );
    assert_eq!(t.packages[1].os_id, Some(1));
    assert_eq!(t.cores.len(), 8);
    assert_eq!(t.cores[4].cpus, set("64-65"));
    assert_eq!(
        t.clusters
            .iter()
            .map(|c| c.cpus.clone())
            .collect::<Vec<_>>(),
        vec![set("0-3"), set("4-7"), set("64-67"), set("68-71")]
    );
    assert_eq!(t.cpu(69).unwrap().cluster, Some(3));
    assert_eq!(t.cpu(69).unwrap().numa, Some(2));
    assert!(t.dies.is_empty());
    let l3 = t.caches_at(3).next().unwrap();
    assert_eq!(l3.ways, Some(0), "hwloc -1 = fully associative");
    assert_eq!(
        t.numa_nodes.iter().map(|n| n.id).collect::<Vec<_>>(),
        vec![0, 2]
    );
    assert_eq!(
        t.numa_distances,
        Some(vec![vec![10, 21], vec![21, 10]]),
        "the latency matrix, not bandwidth"
    );
    assert_eq!(t.kinds.len(), 1);
    assert_eq!(
        (t.kinds[0].source, t.kinds[0].rank_source),
        (KindSource::Uniform, RankSource::Uniform)
    );
    assert_eq!(t.kinds[0].cpus, t.online());
    assert_eq!(t.model_name.as_deref(), Some("Example CPU 8C"));
}

#[test]
fn v1_format() {
    let t = load("numa-first-v1.xml");
    check_invariants(&t);
    assert_eq!(t.cpus.len(), 8);
    assert_eq!(t.online(), set("0-2,4-6"));
    assert_eq!(t.packages.len(), 2);
    assert_eq!(t.cores.len(), 6);
    assert_eq!(cache_count(&t, 2, CacheType::Unified), 3);
    assert_eq!(cache_count(&t, 1, CacheType::Data), 3);
    assert_eq!(
        t.numa_nodes
            .iter()
            .map(|n| (n.id, n.cpus.clone()))
            .collect::<Vec<_>>(),
        vec![(0, set("0-2")), (1, set("4-6"))]
    );
    assert_eq!(t.numa_distances, Some(vec![vec![10, 21], vec![21, 10]]));
    assert_eq!(
        t.model_name.as_deref(),
        Some("Intel(R) Xeon(R) CPU E5430 @ 2.66GHz")
    );
}

/// The CPUs the model holds as offline.
fn offline_ids(t: &Topology) -> CpuSet {
    t.cpus.iter().filter(|c| !c.online).map(|c| c.id).collect()
}

#[test]
fn offline_cpus() {
    // hwloc: "4 processors not represented in topology: 0x00006024".
    let t = load("16em64t-4s2c2t-offlines.hwloc29.xml");
    check_invariants(&t);
    assert_eq!(t.cpus.len(), 16);
    assert_eq!(t.online().len(), 12);
    assert_eq!(offline_ids(&t), set("2,5,13,14"));
    assert_eq!(t.packages.len(), 4);
    assert_eq!(t.cores.len(), 7);
    assert_eq!(cache_count(&t, 3, CacheType::Unified), 4);
    assert_eq!(cache_count(&t, 2, CacheType::Unified), 7);
    // hwloc: "7 processors not represented in topology: 0x00e0000f".
    let t = load("offline-cpu0-node0.hwloc29.xml");
    check_invariants(&t);
    assert_eq!(t.cpus.len(), 24);
    assert_eq!(offline_ids(&t), set("0-3,21-23"));
    assert_eq!((t.packages.len(), t.cores.len()), (2, 17));
    assert_eq!(
        t.numa_nodes.iter().map(|n| n.id).collect::<Vec<_>>(),
        vec![1]
    );
}

#[test]
fn sparse_numa_ids_and_distances() {
    let t = load("48amd64-4d2n6c-sparse.hwloc29.xml");
    check_invariants(&t);
    assert_eq!((t.cpus.len(), t.cores.len(), t.packages.len()), (48, 48, 4));
    assert_eq!(cache_count(&t, 3, CacheType::Unified), 8);
    assert_eq!(
        t.numa_nodes.iter().map(|n| n.id).collect::<Vec<_>>(),
        vec![0, 1, 2, 33, 34, 45, 72, 73]
    );
    // hwloc's matrix by logical index equals ours by sorted OS id here
    // (logical order follows the OS ids on this machine).
    let d = t.numa_distances.as_ref().unwrap();
    assert_eq!(d[0], vec![10, 16, 16, 22, 16, 22, 16, 22]);
    assert_eq!(d[3], vec![22, 16, 16, 10, 16, 16, 22, 22]);
    assert_eq!(d[7], vec![22, 16, 16, 22, 22, 16, 16, 10]);
    assert!(t.numa_nodes.iter().all(|n| n.cpus.len() == 6));
}

#[test]
fn dies_and_memory_groups() {
    // 4 packages x 2 dies x 2 NUMA nodes; hwloc's memory Groups (kind 1001)
    // are bookkeeping, not clusters. Each die equals its L3, which
    // discovery treats as adding nothing (NOTES #4).
    let t = load("fakecpuid1f-64intel64-2p4d2n2c2t.hwloc29.xml");
    check_invariants(&t);
    assert_eq!((t.cpus.len(), t.cores.len(), t.packages.len()), (64, 32, 4));
    assert!(t.clusters.is_empty());
    assert!(t.dies.is_empty());
    assert_eq!(cache_count(&t, 3, CacheType::Unified), 8);
    assert_eq!(cache_count(&t, 1, CacheType::Data), 64);
    assert_eq!(t.numa_nodes.len(), 16);
    assert_eq!(t.numa_distances.as_ref().unwrap()[15][15], 10);
}

#[test]
fn dies_distinct_from_l3_are_kept() {
    let xml = r#"<topology version="2.0">
      <object type="Machine" cpuset="0x000000ff" complete_cpuset="0x000000ff">
        <object type="Package" os_index="0" cpuset="0x000000ff">
          <object type="Die" os_index="0" cpuset="0x0000000f">
            <object type="Core" os_index="0" cpuset="0x00000003"><object type="PU" os_index="0"/><object type="PU" os_index="1"/></object>
            <object type="Core" os_index="1" cpuset="0x0000000c"><object type="PU" os_index="2"/><object type="PU" os_index="3"/></object>
          </object>
          <object type="Group" kind="104" cpuset="0x000000f0">
            <object type="Core" os_index="2" cpuset="0x00000030"><object type="PU" os_index="4"/><object type="PU" os_index="5"/></object>
            <object type="Core" os_index="3" cpuset="0x000000c0"><object type="PU" os_index="6"/><object type="PU" os_index="7"/></object>
          </object>
        </object>
      </object>
    </topology>"#;
    let t = hwloc_xml::parse(xml, "dies.xml").unwrap();
    check_invariants(&t);
    assert_eq!(
        t.dies.iter().map(|d| d.cpus.clone()).collect::<Vec<_>>(),
        vec![set("0-3"), set("4-7")]
    );
    assert_eq!(t.cpu(6).unwrap().die, Some(1));
    assert_eq!(t.numa_nodes.len(), 0);
    assert_eq!(t.kinds[0].cpus, set("0-7"));
}

#[test]
fn memory_side_caches_and_snc() {
    let t = load("memorysidecaches.hwloc29.xml");
    check_invariants(&t);
    assert_eq!((t.cpus.len(), t.cores.len(), t.packages.len()), (80, 40, 2));
    assert_eq!(
        t.numa_nodes.len(),
        4,
        "NUMA nodes under MemCache objects are found"
    );
    assert!(
        t.caches.iter().all(|c| c.level <= 3),
        "memory-side caches are not CPU caches"
    );
    let d = t.numa_distances.as_ref().unwrap();
    assert_eq!(d[0], vec![10, 21, 11, 21]);
}

#[test]
fn arm_with_partial_cpukind() {
    // cpufreq only on cpu0 (NOTES #8): hwloc's only kind lists CPU 0. One
    // kind is no evidence of a second, so CPU 1 joins it, with a warning,
    // but is not credited with CPU 0's frequency.
    let t = load("2arm-2c.hwloc29.xml");
    check_invariants(&t);
    assert_eq!(t.packages[0].os_id, Some(3));
    assert_eq!(t.kinds.len(), 1);
    assert_eq!(t.kinds[0].cpus, set("0-1"));
    assert_eq!(t.kinds[0].max_mhz, Some(800));
    // The Machine object carries /proc/cpuinfo's CPU part: a Cortex-A9.
    assert_eq!(t.kinds[0].name, "Cortex-A9");
    assert_eq!(t.cpu(1).unwrap().midr, Some(0x412f_c091));
    assert_eq!(
        (t.cpu(0).unwrap().max_mhz, t.cpu(1).unwrap().max_mhz),
        (Some(800), None)
    );
    assert_eq!(t.cpu(1).unwrap().kind, Some(0));
    crate::common::assert_warned(&t, &["CPUs 1 have no kind information"]);
    assert_eq!(t.model_name.as_deref(), Some("ARMv7 Processor rev 1 (v7l)"));
    assert_eq!(t.arch.as_deref(), Some("arm"));
}

/// Two cpukinds at one maximum clock whose PUs name different Arm parts
/// (a Cortex-A55 little and a Cortex-A78 big, made up: no recorded Arm
/// XML has two parts): ranked by the Arm core table as sysfs discovery
/// ranks them, not left unranked by the equal clocks; the big core first
/// even when its CPUs come first. With a kernel capacity on every kind
/// the capacity decides, as in discovery.
#[test]
fn arm_cpukinds_at_one_clock_rank_by_the_core_table() {
    let xml = |caps: [&str; 2]| {
        format!(
            r#"<topology version="2.0">
      <object type="Machine" cpuset="0x0000000f">
        <info name="Architecture" value="aarch64"/>
        <object type="PU" os_index="0"><info name="CPUImplementer" value="0x41"/><info name="CPUPart" value="0xd41"/></object>
        <object type="PU" os_index="1"><info name="CPUImplementer" value="0x41"/><info name="CPUPart" value="0xd41"/></object>
        <object type="PU" os_index="2"><info name="CPUImplementer" value="0x41"/><info name="CPUPart" value="0xd05"/></object>
        <object type="PU" os_index="3"><info name="CPUImplementer" value="0x41"/><info name="CPUPart" value="0xd05"/></object>
      </object>
      <cpukind cpuset="0x00000003"><info name="FrequencyMaxMHz" value="2000"/>{}</cpukind>
      <cpukind cpuset="0x0000000c"><info name="FrequencyMaxMHz" value="2000"/>{}</cpukind>
    </topology>"#,
            caps[0], caps[1]
        )
    };
    let t = hwloc_xml::parse(&xml(["", ""]), "arm-two-parts.xml").unwrap();
    check_invariants(&t);
    let names: Vec<(String, CpuSet)> = t
        .kinds
        .iter()
        .map(|k| (k.name.clone(), k.cpus.clone()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("Cortex-A55".to_string(), set("2-3")),
            ("Cortex-A78".to_string(), set("0-1"))
        ]
    );
    crate::common::assert_ranked_by(&t, RankSource::MicroarchTable);
    // A kernel capacity on every kind decides instead (it says the A55s
    // are faster here; the table is not consulted).
    let cap = |v: u32| format!(r#"<info name="LinuxCapacity" value="{v}"/>"#);
    let t = hwloc_xml::parse(&xml([&cap(400), &cap(1024)]), "arm-two-parts-cap.xml").unwrap();
    assert_eq!(t.kinds[0].cpus, set("0-1"), "{:?}", t.kinds);
    assert!(t
        .kinds
        .iter()
        .all(|k| k.rank_source != RankSource::MicroarchTable));
}

#[test]
fn cpus_outside_every_kind_of_several() {
    let xml = r#"<topology version="2.0">
      <object type="Machine" cpuset="0x0000000f">
        <object type="PU" os_index="0"/><object type="PU" os_index="1"/><object type="PU" os_index="2"/><object type="PU" os_index="3"/>
      </object>
      <cpukind cpuset="0x00000001"><info name="FrequencyMaxMHz" value="3000"/></cpukind>
      <cpukind cpuset="0x00000002"><info name="FrequencyMaxMHz" value="2000"/></cpukind>
      <cpukind cpuset="0x00000004"><info name="FrequencyMaxMHz" value="2000"/></cpukind>
    </topology>"#;
    let t = hwloc_xml::parse(xml, "k.xml").unwrap();
    check_invariants(&t);
    assert_eq!(
        t.kinds
            .iter()
            .map(|k| k.cpus.to_list_string())
            .collect::<Vec<_>>(),
        ["0", "1", "2"]
    );
    assert!(
        t.kinds
            .iter()
            .all(|k| k.rank_source == RankSource::Unranked),
        "2000 = 2000: a tie"
    );
    assert_eq!(t.kinds[1].name, "kind 1");
    assert_eq!(t.cpu(3).unwrap().kind, None);
    assert!(t
        .warnings
        .iter()
        .any(|w| w.contains("CPUs 3 are in no cpukind")));
    assert_eq!(
        t.cores.len(),
        4,
        "PUs without a Core are each their own core"
    );
    assert_eq!(t.packages.len(), 1);
}

#[test]
fn this_build_machine_as_exported_by_lstopo() {
    // `lstopo-no-graphics --of xml --no-io` on the 2-vCPU KVM guest the
    // project is built on (AMD EPYC); its sysfs said the same.
    let t = load("live-kvm-epyc-2c.hwloc29.xml");
    check_invariants(&t);
    assert_eq!(t.online(), set("0-1"));
    assert_eq!((t.cores.len(), t.packages.len()), (2, 1));
    assert_eq!(t.model_name.as_deref(), Some("AMD EPYC"));
    let sizes: Vec<(u8, CacheType, Option<u64>, CpuSet)> = t
        .caches
        .iter()
        .map(|c| (c.level, c.cache_type, c.size_kib, c.cpus.clone()))
        .collect();
    assert_eq!(
        sizes,
        vec![
            (1, CacheType::Data, Some(32), set("0")),
            (1, CacheType::Data, Some(32), set("1")),
            (1, CacheType::Instruction, Some(32), set("0")),
            (1, CacheType::Instruction, Some(32), set("1")),
            (2, CacheType::Unified, Some(1024), set("0")),
            (2, CacheType::Unified, Some(1024), set("1")),
            (3, CacheType::Unified, Some(32768), set("0-1")),
        ]
    );
    assert_eq!(t.kinds.len(), 1);
}

/// Cross-check of two independent readers: lstopo's view of this machine
/// against our sysfs discovery. Skipped when lstopo is not installed.
#[test]
fn live_lstopo_export_matches_discovery() {
    let Ok(out) = std::process::Command::new("lstopo-no-graphics")
        .args(["--of", "xml", "--no-io", "-"])
        .output()
    else {
        pinsight_testkit::skip_test!("lstopo-no-graphics not installed (.ci/deps installs hwloc)");
    };
    // Installed but failing is a broken hwloc, not a reason to pass.
    assert!(
        out.status.success(),
        "lstopo-no-graphics failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let xml = hwloc_xml::parse(&String::from_utf8(out.stdout).unwrap(), "lstopo").unwrap();
    let sys = discover(&FsRoot::live());
    check_invariants(&xml);
    let cpus = |t: &Topology| t.cpus.iter().map(|c| (c.id, c.online)).collect::<Vec<_>>();
    assert_eq!(cpus(&xml), cpus(&sys));
    let sets = |g: &[Group]| g.iter().map(|g| g.cpus.clone()).collect::<Vec<_>>();
    assert_eq!(sets(&xml.cores), sets(&sys.cores));
    assert_eq!(sets(&xml.packages), sets(&sys.packages));
    let caches = |t: &Topology| {
        let mut v: Vec<_> = t
            .caches
            .iter()
            .map(|c| {
                (
                    c.level,
                    format!("{:?}", c.cache_type),
                    c.size_kib,
                    c.cpus.to_list_string(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(caches(&xml), caches(&sys));
    let numa = |t: &Topology| {
        t.numa_nodes
            .iter()
            .map(|n| (n.id, n.cpus.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(numa(&xml), numa(&sys));
}

/// hwloc v1 exports (`lstopo --export-xml-flags 1`, what hwloc 1.x reads)
/// of recorded machines: every one must keep its NUMA latency matrix, the
/// one sysfs discovery reads from the same recorded machine and the one the
/// v2 export of the same machine carries. hwloc's own v1 exporter writes
/// `relative_depth` relative to the v2 tree (NUMA nodes sit at depth 2 or
/// more there, at depth 1 or next to sockets in the v1 tree), so a reader
/// matching the depth loses the matrix; hwloc's importer matches by count.
mod v1_distances {
    use super::*;

    /// (v1 export, v2 export of the same machine, recorded machine).
    const MACHINES: &[(&str, &str, &str)] = &[
        (
            "16amd64-8n2c.v1.xml",
            "16amd64-8n2c.hwloc29.xml",
            "16amd64-8n2c",
        ),
        (
            "16amd64-8n2c-cpusets.v1.xml",
            "16amd64-8n2c-cpusets.hwloc29.xml",
            "16amd64-8n2c-cpusets",
        ),
        (
            "16amd64-4n4c-cgroup-distance-merge.v1.xml",
            "16amd64-4n4c-cgroup-distance-merge.hwloc29.xml",
            "16amd64-4n4c-cgroup-distance-merge",
        ),
        (
            "32amd64-4s2n4c-cgroup2.v1.xml",
            "32amd64-4s2n4c-cgroup2.xml",
            "32amd64-4s2n4c-cgroup2",
        ),
        (
            "32intel64-2p8co2t+8ve.v1.xml",
            "32intel64-2p8co2t+8ve.hwloc29.xml",
            "32intel64-2p8co2t+8ve",
        ),
    ];

    /// The recorded machine's root, or a path that is no directory when
    /// no machine of that name is recorded.
    fn recorded(name: &str) -> PathBuf {
        pinsight_testkit::fixtures::hwloc_if_recorded(name)
            .unwrap_or_else(|| pinsight_testkit::fixtures::hwloc_dir().join(name))
    }

    /// The NUMA node ids and the latency matrix over them.
    fn numa(t: &Topology) -> (Vec<u32>, Option<Vec<Vec<u32>>>) {
        (
            t.numa_nodes.iter().map(|n| n.id).collect(),
            t.numa_distances.clone(),
        )
    }

    /// `t`'s matrix restricted to the nodes `ids` (in that order).
    fn sub_matrix(t: &Topology, ids: &[u32]) -> Option<Vec<Vec<u32>>> {
        let d = t.numa_distances.as_ref()?;
        let pos = |id: &u32| t.numa_nodes.iter().position(|n| n.id == *id);
        let idx: Vec<usize> = ids.iter().map(pos).collect::<Option<_>>()?;
        Some(
            idx.iter()
                .map(|&i| idx.iter().map(|&j| d[i][j]).collect())
                .collect(),
        )
    }

    /// The v1 export against its v2 export and sysfs discovery.
    fn check(v1: &Topology, v2: &Topology, dir: &Path, what: &str) {
        check_invariants(v1);
        let (ids, matrix) = numa(v1);
        assert!(ids.len() >= 2, "{what}: a NUMA machine");
        assert!(
            matrix.is_some(),
            "{what}: v1 matrix lost ({:?})",
            v1.warnings
        );
        assert_eq!((ids.clone(), matrix.clone()), numa(v2), "{what}: v1 vs v2");
        let node_cpus = |t: &Topology| {
            t.numa_nodes
                .iter()
                .map(|n| n.cpus.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            node_cpus(v1),
            node_cpus(v2),
            "{what}: NUMA node CPUs, v1 vs v2"
        );
        let sys = discover(&FsRoot::at(dir).unwrap());
        assert_eq!(matrix, sub_matrix(&sys, &ids), "{what}: v1 vs discovery");
        crate::common::assert_not_warned(v1, "distances", what);
    }

    #[test]
    fn v1_exports_keep_the_numa_matrix() {
        for (v1, v2, machine) in MACHINES {
            check(&load(v1), &load(v2), &recorded(machine), v1);
        }
        // The recorded NUMA distances, for one machine in full.
        let t = load("16amd64-8n2c.v1.xml");
        let d = t.numa_distances.unwrap();
        assert_eq!(d[0], vec![10, 20, 20, 20, 20, 20, 20, 20]);
        assert_eq!(d.len(), 8);
    }

    /// `<distances>` with `rows` × `rows` values: `diag` on the diagonal,
    /// `far` elsewhere.
    fn matrix(rows: usize, depth: usize, base: &str, diag: &str, far: &str) -> String {
        let mut m = format!(
            "<distances nbobjs=\"{rows}\" relative_depth=\"{depth}\" latency_base=\"{base}\">"
        );
        for i in 0..rows * rows {
            let v = if i / rows == i % rows { diag } else { far };
            m.push_str(&format!("<latency value=\"{v}\"/>"));
        }
        m + "</distances>"
    }

    /// The real 8-node Opteron export with `extra` inserted before (or
    /// after) its own NUMA matrix.
    fn opteron_with(extra: &str, before: bool) -> Topology {
        let text = std::fs::read_to_string(fixture("16amd64-8n2c.v1.xml")).unwrap();
        let at = if before {
            text.find("<distances ").unwrap()
        } else {
            text.find("</distances>").unwrap() + "</distances>".len()
        };
        let mut altered = text.clone();
        altered.insert_str(at, extra);
        hwloc_xml::parse(&altered, "altered.v1.xml").unwrap()
    }

    #[test]
    fn every_distances_element_is_read() {
        // A 16×16 matrix ahead of the NUMA one (hwloc 1.x exported any
        // level's distances, e.g. PU distances set by the user); depth 3
        // is this file's L2 level, 16 caches.
        let t = opteron_with(&matrix(16, 3, "1", "1", "2"), true);
        check_invariants(&t);
        assert_eq!(
            t.numa_distances.as_ref().unwrap()[0],
            vec![10, 20, 20, 20, 20, 20, 20, 20]
        );
        crate::common::assert_warned(
            &t,
            &[
                "between 16 objects",
                "relative_depth 3: 16 Cache objects",
                "ignored",
            ],
        );
    }

    #[test]
    fn relative_depth_breaks_ties_between_numa_sized_matrices() {
        // A second 8×8 matrix whose relative_depth (1) names this file's
        // NUMA level wins over the lstopo one (depth 2: the 8 sockets).
        let t = opteron_with(&matrix(8, 1, "10", "1", "1.7"), false);
        let d = t.numa_distances.as_ref().unwrap();
        assert_eq!(d[0][0..2], [10, 17]);
        crate::common::assert_warned(&t, &["2 v1 distance matrices", "relative_depth names"]);
        // Neither naming the NUMA level: the first one.
        let t = opteron_with(&matrix(8, 3, "10", "1", "1.7"), false);
        assert_eq!(t.numa_distances.as_ref().unwrap()[0][1], 20);
    }

    #[test]
    fn fractional_latencies_are_scaled_by_1000_as_hwloc_does() {
        let text = std::fs::read_to_string(fixture("16amd64-8n2c.v1.xml")).unwrap();
        let altered = text
            .replace("latency_base=\"1.000000\"", "latency_base=\"0.5\"")
            .replacen(
                "<latency value=\"20.000000\"/>",
                "<latency value=\"21.000000\"/>",
                1,
            );
        let t = hwloc_xml::parse(&altered, "altered.v1.xml").unwrap();
        let d = t.numa_distances.as_ref().unwrap();
        assert_eq!(d[0][0..3], [5000, 10500, 10000]);
        assert!(t.warnings.iter().any(|w| w.contains("scaled by 1000")));
        // Whole numbers after latency_base: kept as they are.
        let halved = text.replace("latency_base=\"1.000000\"", "latency_base=\"0.5\"");
        let t = hwloc_xml::parse(&halved, "altered.v1.xml").unwrap();
        assert_eq!(t.numa_distances.as_ref().unwrap()[0][0..2], [5, 10]);
    }

    #[test]
    fn distances_of_other_objects_or_incomplete_are_ignored() {
        let text = std::fs::read_to_string(fixture("16amd64-8n2c.v1.xml")).unwrap();
        // Moved into the first NUMA node: hwloc reads root distances only.
        let start = text.find("<distances ").unwrap();
        let end = text.find("</distances>").unwrap() + "</distances>".len();
        let block = text[start..end].to_string();
        let mut moved = text.replace(&block, "");
        let node = moved.find("<object type=\"NUMANode\"").unwrap();
        let inside = node + moved[node..].find('>').unwrap() + 1;
        moved.insert_str(inside, &block);
        let t = hwloc_xml::parse(&moved, "moved.v1.xml").unwrap();
        assert_eq!(t.numa_distances, None);
        crate::common::assert_warned(&t, &["attached to a NUMANode"]);
        // One latency short.
        let short = text.replacen("<latency value=\"10.000000\"/>", "", 1);
        let t = hwloc_xml::parse(&short, "short.v1.xml").unwrap();
        assert_eq!(t.numa_distances, None);
        assert!(t.warnings.iter().any(|w| w.contains("nbobjs=8 but 63")));
        // A negative latency is refused, naming the element.
        let neg = text.replacen(
            "<latency value=\"10.000000\"/>",
            "<latency value=\"-1\"/>",
            1,
        );
        let e = hwloc_xml::parse(&neg, "neg.v1.xml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 11") && e.contains("latency value"), "{e}");
    }

    /// Every recorded NUMA machine, exported by the installed lstopo in
    /// both formats (the large ones are not committed as XML).
    #[test]
    fn every_recorded_numa_machine_through_lstopo() {
        let tmp = tempfile::tempdir().unwrap();
        let export = |machine: &str, v1: bool| -> Option<Topology> {
            let out = tmp
                .path()
                .join(format!("{machine}.{}.xml", if v1 { 1 } else { 2 }));
            let mut cmd = std::process::Command::new("lstopo-no-graphics");
            cmd.env("HWLOC_FSROOT", recorded(machine))
                .env("HWLOC_COMPONENTS", "-x86")
                .args(["--of", "xml", "--no-io", "-f"]);
            if v1 {
                cmd.args(["--export-xml-flags", "1"]);
            }
            let status = cmd.arg(&out).output().ok()?.status;
            assert!(status.success(), "lstopo on {machine}");
            Some(hwloc_xml::load(&out).unwrap_or_else(|e| panic!("{e}")))
        };
        let mut checked = 0;
        for machine in pinsight_testkit::fixtures::hwloc_names() {
            let path = recorded(&machine);
            let Some(v2) = export(&machine, false) else {
                pinsight_testkit::skip_test!(
                    "lstopo-no-graphics not installed (.ci/deps installs hwloc)"
                );
            };
            let v1 = export(&machine, true).unwrap();
            if v2.numa_nodes.len() < 2 {
                assert_eq!(numa(&v1), numa(&v2), "{machine}");
                continue;
            }
            check(&v1, &v2, &path, &machine);
            checked += 1;
        }
        assert!(checked >= 10, "{checked} NUMA machines");
    }
}

/// One kind-naming rule for both paths: an XML export names, marks, orders
/// and splits kinds as sysfs discovery does on the recorded machine it was
/// exported from.
mod kind_names {
    use super::*;

    /// The recorded machine's root, or a path that is no directory when
    /// no machine of that name is recorded.
    fn recorded(name: &str) -> PathBuf {
        pinsight_testkit::fixtures::hwloc_if_recorded(name)
            .unwrap_or_else(|| pinsight_testkit::fixtures::hwloc_dir().join(name))
    }

    /// (name, mark, CPUs) in rank order.
    fn kinds(t: &Topology) -> Vec<(String, String, CpuSet)> {
        t.kinds
            .iter()
            .map(|k| (k.name.clone(), k.mark.clone(), k.cpus.clone()))
            .collect()
    }

    use pinsight_testkit::copy_tree;
    /// Every XML export of a recorded machine (the hwloc29 and v1 exports,
    /// hwloc's own v3 output) whose recording is here: (file, machine).
    fn recorded_exports() -> Vec<(String, String)> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(fixture("")).unwrap() {
            let file = entry.unwrap().file_name().into_string().unwrap();
            let Some(machine) = [".hwloc29.xml", ".v1.xml", ".xml"]
                .iter()
                .find_map(|suffix| file.strip_suffix(suffix))
            else {
                continue;
            };
            // The 48-CPU machine's directory is named after its packages.
            let machine = machine.replace("4d2n6c", "4pa2n6c");
            if recorded(&machine).is_dir() {
                out.push((file, machine));
            }
        }
        out
    }

    /// Every XML export of a recorded machine (the hwloc29 and v1 exports,
    /// hwloc's own v3 output) against discovery of that machine.
    #[test]
    fn exports_name_kinds_as_discovery_does() {
        let mut checked = 0;
        for (file, machine) in recorded_exports() {
            if machine == "2arm-2c" {
                continue;
            }
            let xml = load(&file);
            let sys = discover(&FsRoot::at(recorded(&machine)).unwrap());
            // lstopo leaves CPUs outside its cgroup out of the machine's
            // cpuset: compare over the CPUs the export calls online.
            let online = xml.online();
            let within = |t: &Topology| -> Vec<(String, String, CpuSet)> {
                kinds(t)
                    .into_iter()
                    .map(|(n, m, c)| (n, m, c.intersection(&online)))
                    .filter(|k| !k.2.is_empty())
                    .collect()
            };
            assert_eq!(kinds(&xml), within(&sys), "{file}");
            checked += 1;
        }
        assert!(checked >= 12, "{checked} exports checked");
    }

    /// Every XML export of a recorded machine carries the same NUMA nodes
    /// as discovery of that machine: CPUs, locality (hwloc nests a
    /// memory-only node under its initiators' CPUs), DAX device, and the
    /// memory kind wherever hwloc names one (hwloc 2.9 names kinds only on
    /// machines with several; discovery always names a CPU node's DRAM).
    /// Nodes a cgroup hides from the export are the ones discovery marks
    /// not allowed.
    #[test]
    fn exports_carry_memory_as_discovery_does() {
        let mut checked = 0;
        let mut kinds_seen = 0;
        for (file, machine) in recorded_exports() {
            let xml = load(&file);
            let sys = discover(&FsRoot::at(recorded(&machine)).unwrap());
            let online = xml.online();
            for x in &xml.numa_nodes {
                let s = sys
                    .numa_nodes
                    .iter()
                    .find(|n| n.id == x.id)
                    .unwrap_or_else(|| panic!("{file}: node {} not discovered", x.id));
                let ctx = format!("{file}: node {}", x.id);
                assert_eq!(x.cpus, s.cpus.intersection(&online), "{ctx} CPUs");
                assert_eq!(
                    x.memory.locality,
                    s.memory.locality.intersection(&online),
                    "{ctx} locality"
                );
                assert_eq!(x.memory.locality_source, LocalitySource::HwlocXml);
                assert!(s.memory.allowed, "{ctx} is shown, so allowed");
                assert_eq!(x.memory.allowed, s.memory.allowed, "{ctx} allowed");
                assert_eq!(x.memory.dax, s.memory.dax, "{ctx} DAX");
                if let Some(k) = x.memory.kind {
                    assert_eq!(Some(k), s.memory.kind, "{ctx} kind");
                    assert_eq!(x.memory.kind_source, Some(MemoryKindSource::HwlocXml));
                    kinds_seen += 1;
                }
            }
            for s in &sys.numa_nodes {
                if !xml.numa_nodes.iter().any(|x| x.id == s.id) {
                    assert!(!s.memory.allowed, "{file}: node {} missing", s.id);
                }
            }
            checked += 1;
        }
        assert!(checked >= 12, "{checked} exports checked");
        assert_eq!(kinds_seen, 7, "fakeheteromemtiers names its 7 nodes");
    }

    /// lstopo's export of the heterogeneous-memory machine: HBM and NVM
    /// nodes hang under the CPUs of their initiators without taking them
    /// (node 2, HBM, is the only node of CPUs 4-5 and keeps them), and the
    /// bandwidth memory attributes give the same HMAT figures as sysfs.
    #[test]
    fn heterogeneous_memory_export() {
        let xml = load("fakeheteromemtiers.hwloc29.xml");
        let sys = discover(&FsRoot::at(recorded("fakeheteromemtiers")).unwrap());
        assert_eq!(crate::common::cpuless_nodes(&xml), vec![4, 6, 8, 9]);
        for (x, s) in xml.numa_nodes.iter().zip(&sys.numa_nodes) {
            assert_eq!(x.id, s.id);
            assert_eq!(
                x.memory.read_bandwidth_mbps(),
                s.memory.read_bandwidth_mbps(),
                "node {}",
                x.id
            );
            let xa = &x.memory.access[0];
            let sa = &s.memory.access[0];
            assert_eq!(xa.write_bandwidth_mbps, sa.write_bandwidth_mbps);
            assert_eq!(xa.initiators, sa.initiators, "node {}", x.id);
            assert!(x.memory.has_memory);
        }
        check_invariants(&xml);
        assert!(xml.cpus.iter().all(|c| c.numa.is_some()));
    }

    /// The i7-1370P: lstopo's kinds carry frequencies only; discovery of
    /// the same dump (no PMU lists) splits by frequency. Both: E-cores and
    /// P-cores, marked E and P, E-cores ranked first.
    #[test]
    fn hybrid_without_core_types() {
        let dir = recorded("20em64t-hybrid-1p6c2t+2ca4co1t");
        let sys = discover(&FsRoot::at(&dir).unwrap());
        let expected = vec![
            ("E-core".to_string(), "E".to_string(), set("12-19")),
            ("P-core".to_string(), "P".to_string(), set("0-11")),
        ];
        assert_eq!(kinds(&sys), expected);
        assert_eq!(
            kinds(&load("20em64t-hybrid-1p6c2t+2ca4co1t.hwloc29.xml")),
            expected
        );
        // With CoreType infos and forced efficiencies (hwloc 3 with CPUID).
        assert_eq!(kinds(&load("hybrid-i7-1370p-like.v3.xml")), expected);
    }

    /// Two ARM parts and no cpukind (v1 has none): one kind per part, as
    /// discovery splits by `midr_el1`; nothing ranks them. Built from the
    /// recorded 2-CPU ARM and its v1 export, given a part per CPU.
    #[test]
    fn arm_parts_without_cpukinds_split_like_discovery() {
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(&recorded("2arm-2c"), tmp.path());
        let parts = [(0, "0xd03", "0x410fd034"), (1, "0xd08", "0x410fd083")];
        for (cpu, _, midr) in parts {
            let regs = tmp.path().join(format!(
                "sys/devices/system/cpu/cpu{cpu}/regs/identification"
            ));
            std::fs::create_dir_all(&regs).unwrap();
            std::fs::write(regs.join("midr_el1"), format!("{midr}\n")).unwrap();
        }
        let sys = discover(&FsRoot::at(tmp.path()).unwrap());

        let text = std::fs::read_to_string(fixture("2arm-2c.v1.xml")).unwrap();
        let mut altered = text.replace("<info name=\"CPUPart\" value=\"0xc09\"/>", "");
        for (cpu, part, _) in parts {
            let pu = format!("<object type=\"PU\" os_index=\"{cpu}\"");
            let at = altered.find(&pu).unwrap();
            let end = at + altered[at..].find("/>").unwrap();
            altered.replace_range(
                end..end + 2,
                &format!("><info name=\"CPUPart\" value=\"{part}\"/></object>"),
            );
        }
        let xml = hwloc_xml::parse(&altered, "two-parts.v1.xml").unwrap();
        check_invariants(&xml);
        let expected = [
            ("Cortex-A53".to_string(), "0".to_string(), set("0")),
            ("Cortex-A72".to_string(), "1".to_string(), set("1")),
        ];
        // Discovery ranks them by the Arm core table (A72 big above A53
        // little, no clock here), hence the E/P marks; the XML import uses
        // the same table, so both rank alike.
        let ranked: Vec<(String, String, CpuSet)> = expected
            .iter()
            .zip(["E", "P"])
            .map(|((n, _, c), m)| (n.clone(), m.to_string(), c.clone()))
            .collect();
        assert_eq!(kinds(&sys), ranked);
        assert!(sys
            .kinds
            .iter()
            .all(|k| k.rank_source == RankSource::MicroarchTable));
        assert_eq!(kinds(&xml), ranked);
        assert!(xml
            .kinds
            .iter()
            .all(|k| k.source == KindSource::Midr && k.rank_source == RankSource::MicroarchTable));
        assert_eq!(
            xml.cpu(1).unwrap().midr,
            Some(0x412f_d081),
            "variant and revision of the Machine"
        );
    }

    /// Core types on both paths, with a low-power island (Meteor Lake
    /// style): the recorded i7-1370P given the hybrid PMU lists (two of
    /// its E-cores made LP E-cores, slower), and its lstopo export given
    /// the `CoreType` infos hwloc's x86 backend writes, for the same split.
    #[test]
    fn core_types_and_low_power_island() {
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(&recorded("20em64t-hybrid-1p6c2t+2ca4co1t"), tmp.path());
        let sys_dir = tmp.path().join("sys/devices");
        for (pmu, cpus) in [
            ("cpu_core", "0-11"),
            ("cpu_atom", "12-17"),
            ("cpu_lowpower", "18-19"),
        ] {
            std::fs::create_dir_all(sys_dir.join(pmu)).unwrap();
            std::fs::write(sys_dir.join(pmu).join("cpus"), format!("{cpus}\n")).unwrap();
        }
        for cpu in [18, 19] {
            let f = sys_dir.join(format!("system/cpu/cpu{cpu}/cpufreq/cpuinfo_max_freq"));
            std::fs::write(f, "2500000\n").unwrap();
        }
        let sys = discover(&FsRoot::at(tmp.path()).unwrap());

        let text =
            std::fs::read_to_string(fixture("20em64t-hybrid-1p6c2t+2ca4co1t.hwloc29.xml")).unwrap();
        let kinds_at = text.find("  <cpukind").unwrap();
        let end = text.rfind("</cpukind>").unwrap() + "</cpukind>".len();
        let cpukind = |set: &str, core_type: &str, max: u32, base: u32| {
            format!(
                "<cpukind cpuset=\"{set}\"><info name=\"FrequencyMaxMHz\" value=\"{max}\"/><info name=\"FrequencyBaseMHz\" value=\"{base}\"/><info name=\"CoreType\" value=\"{core_type}\"/></cpukind>"
            )
        };
        let altered = format!(
            "{}{}{}{}{}",
            &text[..kinds_at],
            cpukind("0x0003f000", "IntelAtom", 3900, 1400),
            cpukind("0x000c0000", "IntelAtom", 2500, 1400),
            cpukind("0x00000fff", "IntelCore", 5000, 1900),
            &text[end..]
        );
        let xml = hwloc_xml::parse(&altered, "mtl-like.xml").unwrap();
        check_invariants(&xml);
        let expected = vec![
            ("LP E-core".to_string(), "L".to_string(), set("18-19")),
            ("E-core".to_string(), "E".to_string(), set("12-17")),
            ("P-core".to_string(), "P".to_string(), set("0-11")),
        ];
        assert_eq!(kinds(&sys), expected);
        assert_eq!(kinds(&xml), expected);
        assert_eq!(
            xml.kinds.iter().map(|k| k.core_type).collect::<Vec<_>>(),
            sys.kinds.iter().map(|k| k.core_type).collect::<Vec<_>>()
        );
        assert!(xml.kinds.iter().all(|k| k.source == KindSource::HwlocXml));
        assert_eq!(xml.cpu(18).unwrap().core_type, Some(CoreType::LowPower));
    }

    /// The ARMv7 dump lists its part in /proc/cpuinfo only, which
    /// discovery does not read; an arm64 kernel also writes `midr_el1`.
    /// With it added (the value /proc/cpuinfo spells out), discovery names
    /// the kind after the part, as the export's `CPUPart` does.
    #[test]
    fn arm_part_names_the_kind() {
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(&recorded("2arm-2c"), tmp.path());
        for cpu in 0..2 {
            let regs = tmp.path().join(format!(
                "sys/devices/system/cpu/cpu{cpu}/regs/identification"
            ));
            std::fs::create_dir_all(&regs).unwrap();
            // implementer 0x41, variant 0x2, architecture 0xf, part 0xc09,
            // revision 1.
            std::fs::write(regs.join("midr_el1"), "0x00000000412fc091\n").unwrap();
        }
        let sys = discover(&FsRoot::at(tmp.path()).unwrap());
        let expected = vec![("Cortex-A9".to_string(), "0".to_string(), set("0-1"))];
        assert_eq!(kinds(&sys), expected);
        for file in ["2arm-2c.hwloc29.xml", "2arm-2c.v1.xml"] {
            let t = load(file);
            assert_eq!(kinds(&t), expected, "{file}");
            assert_eq!(
                t.cpus.iter().map(|c| c.midr).collect::<Vec<_>>(),
                sys.cpus.iter().map(|c| c.midr).collect::<Vec<_>>(),
                "{file}"
            );
        }
    }
}

mod errors {
    use super::*;

    fn err(xml: &str) -> String {
        let e = hwloc_xml::parse(xml, "bad.xml").unwrap_err().to_string();
        assert!(e.starts_with("hwloc XML 'bad.xml'"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
        e
    }

    #[test]
    fn malformed_xml_names_position() {
        let e = err(
            "<topology version=\"2.0\">\n  <object type=\"Machine\" cpuset=\"0x1\">\n</topology>",
        );
        assert!(e.contains("malformed XML") && e.contains("3:"), "{e}");
        assert!(err("").contains("malformed XML"));
        assert!(err("not xml at all").contains("malformed XML"));
    }

    #[test]
    fn wrong_root_element() {
        let e = err("<html><body/></html>");
        assert!(
            e.contains("root element is <html>, expected <topology>"),
            "{e}"
        );
    }

    #[test]
    fn missing_sets_and_objects() {
        assert!(err("<topology version=\"2.0\"/>").contains("no root <object>"));
        assert!(err("<topology><object type=\"Machine\"/></topology>")
            .contains("root object has no cpuset"));
        let e = err("<topology>\n<object type=\"Machine\" cpuset=\"0x3\">\n  <object type=\"Core\" os_index=\"0\"/>\n</object></topology>");
        assert!(
            e.contains("line 3, column 3") && e.contains("Core object has no cpuset"),
            "{e}"
        );
        let e =
            err("<topology><object type=\"Machine\" cpuset=\"0x3\"><cpukind/></object></topology>");
        assert!(e.contains("cpukind without cpuset"), "{e}");
    }

    #[test]
    fn bad_values_name_the_attribute() {
        let e = err("<topology><object type=\"Machine\" cpuset=\"0xZZ\"/></topology>");
        assert!(e.contains("attribute cpuset") && e.contains("0xZZ"), "{e}");
        let e = err("<topology><object type=\"Machine\" cpuset=\"0x1\"><object type=\"L2Cache\" cpuset=\"0x1\" cache_size=\"big\"/></object></topology>");
        assert!(e.contains("cache_size='big'"), "{e}");
        let e = err("<topology><object type=\"Machine\" cpuset=\"0x1\"><object type=\"PU\" os_index=\"-1\"/></object></topology>");
        assert!(e.contains("os_index '-1'"), "{e}");
        assert!(err("<topology><object type=\"Machine\" cpuset=\"0x1\"><object type=\"PU\"/></object></topology>").contains("PU object without os_index"));
        assert!(err(
            "<topology version=\"9.1\"><object type=\"Machine\" cpuset=\"0x1\"/></topology>"
        )
        .contains("unsupported format version '9.1'"));
        let e = err("<topology version=\"2.0\"><object type=\"Machine\" cpuset=\"0x1\"><object type=\"NUMANode\" os_index=\"0\" cpuset=\"0x1\"/></object><distances2 type=\"NUMANode\" nbobjs=\"2\" indexing=\"os\"><indexes>0 1</indexes><u64values>10 20 20</u64values></distances2></topology>");
        assert!(e.contains("nbobjs=2 but 2 indexes and 3 values"), "{e}");
    }

    #[test]
    fn errors_stay_on_one_line() {
        // Found by the hwloc_xml fuzz target: the XML parser quotes the
        // offending character, here a newline.
        let e = err("<topology/\n>");
        assert!(e.contains("\\n"), "{e}");
        // A newline as a character reference inside a value, and a long value.
        let e = err("<topology><object type=\"Machine\" cpuset=\"0x&#10;1\"/></topology>");
        assert!(e.contains("attribute cpuset") && e.contains("\\n"), "{e}");
        let long = format!("<topology><object type=\"Machine\" cpuset=\"0x1\"><object type=\"L2Cache\" cpuset=\"0x1\" cache_size=\"{}\"/></object></topology>", "9".repeat(500));
        assert!(err(&long).len() < 200);
    }

    #[test]
    fn overlapping_objects_of_one_type() {
        let pus = "<object type=\"PU\" os_index=\"0\"/><object type=\"PU\" os_index=\"1\"/><object type=\"PU\" os_index=\"2\"/>";
        let e = err(&format!("<topology><object type=\"Machine\" cpuset=\"0x7\"><object type=\"Core\" cpuset=\"0x3\"/><object type=\"Core\" cpuset=\"0x6\"/>{pus}</object></topology>"));
        assert!(e.contains("two Core objects share CPUs 1"), "{e}");
        let e = err(&format!("<topology><object type=\"Machine\" cpuset=\"0x7\">{pus}</object><cpukind cpuset=\"0x3\"/><cpukind cpuset=\"0x6\"/></topology>"));
        assert!(e.contains("two cpukind elements share CPUs 1"), "{e}");
        // Repeated identical objects are merged, not refused.
        let t = hwloc_xml::parse(&format!("<topology><object type=\"Machine\" cpuset=\"0x7\"><object type=\"Package\" cpuset=\"0x7\"/><object type=\"Package\" cpuset=\"0x7\"/>{pus}</object></topology>"), "x").unwrap();
        assert_eq!(t.packages.len(), 1);
    }

    #[test]
    fn too_many_cpus() {
        let e = err("<topology><object type=\"Machine\" cpuset=\"0xf...f\"><object type=\"PU\" os_index=\"1000000\"/></object></topology>");
        assert!(e.contains("more than the 65536"), "{e}");
    }

    #[test]
    fn load_names_the_file() {
        let e = hwloc_xml::load(Path::new("/no/such/machine.xml"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("/no/such/machine.xml") && !e.contains('\n'),
            "{e}"
        );
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("latin1.xml");
        std::fs::write(&p, b"<topology>\xe9</topology>").unwrap();
        let e = hwloc_xml::load(&p).unwrap_err().to_string();
        assert!(e.contains("latin1.xml") && e.contains("not UTF-8"), "{e}");
    }
}

mod props {
    use super::*;
    use proptest::prelude::*;

    /// Pieces a mutation splices in: XML syntax, set syntax and numbers
    /// that stress the importer's checks.
    const TOKENS: &[&str] = &[
        "<", ">", "/>", "\"", "=", "<object type=\"Core\">", "</object>", "<object type=\"PU\" os_index=\"7\"/>",
        "0xf...f", ",,", "0x", "ffffffff", "-1", "99999999999", "1048575", "<cpukind cpuset=\"0x3\">", "</cpukind>",
        "forced_efficiency=\"2\" ", "cache_type=\"7\" ", "type=\"NUMANode\" ", "<!--", "-->", "&amp;", "&bogus;",
        "<distances2 type=\"NUMANode\" nbobjs=\"1\"><indexes>0</indexes><u64values>10</u64values></distances2>",
        "\u{0}", "é",
        "<distances nbobjs=\"2\" relative_depth=\"1\" latency_base=\"0.5\"><latency value=\"1\"/><latency value=\"3\"/><latency value=\"3\"/><latency value=\"1\"/></distances>",
        "<latency value=\"1e40\"/>", "relative_depth=\"0\" ", "<info name=\"CPUPart\" value=\"0xd0b\"/>",
        "<info name=\"CPUImplementer\" value=\"0x41\"/>",
    ];

    fn base_texts() -> Vec<String> {
        [
            "hybrid-i7-1370p-like.v3.xml",
            "two-package-abbrev.v2.xml",
            "numa-first-v1.xml",
            "2arm-2c.hwloc29.xml",
            "16amd64-4n4c-cgroup-distance-merge.v1.xml",
        ]
        .iter()
        .map(|n| std::fs::read_to_string(fixture(n)).unwrap())
        .collect()
    }

    #[derive(Debug, Clone)]
    enum Mutation {
        Delete(usize, usize),
        Insert(usize, usize),
        Duplicate(usize, usize),
        FlipDigit(usize, u8),
    }

    fn mutation() -> impl Strategy<Value = Mutation> {
        prop_oneof![
            (any::<usize>(), 1usize..64).prop_map(|(p, l)| Mutation::Delete(p, l)),
            (any::<usize>(), 0..TOKENS.len()).prop_map(|(p, t)| Mutation::Insert(p, t)),
            (any::<usize>(), 1usize..400).prop_map(|(p, l)| Mutation::Duplicate(p, l)),
            (any::<usize>(), 0u8..10).prop_map(|(p, d)| Mutation::FlipDigit(p, d)),
        ]
    }

    fn boundary(s: &str, p: usize) -> usize {
        let mut p = p % (s.len() + 1);
        while !s.is_char_boundary(p) {
            p -= 1;
        }
        p
    }

    fn apply(mut s: String, m: &Mutation) -> String {
        match *m {
            Mutation::Delete(p, l) => {
                let a = boundary(&s, p);
                let b = boundary(&s, a + l);
                s.replace_range(a..b.max(a), "");
            }
            Mutation::Insert(p, t) => {
                let a = boundary(&s, p);
                s.insert_str(a, TOKENS[t]);
            }
            Mutation::Duplicate(p, l) => {
                let a = boundary(&s, p);
                let b = boundary(&s, a + l).max(a);
                let chunk = s[a..b].to_string();
                s.insert_str(b, &chunk);
            }
            Mutation::FlipDigit(p, d) => {
                let a = boundary(&s, p);
                if let Some((i, _)) = s[a..].char_indices().find(|(_, c)| c.is_ascii_digit()) {
                    s.replace_range(a + i..a + i + 1, &d.to_string());
                }
            }
        }
        s
    }

    /// The 8-node Opteron's v1 export with its matrix replaced by one of
    /// `n` × `n` values: kept exactly when it has one row per NUMA node
    /// (whole values as they are, fractional ones × 1000), whatever its
    /// `relative_depth`, and otherwise dropped with a warning.
    fn v1_with_matrix(n: usize, depth: usize, base: f64, values: &[f64]) -> String {
        let text = std::fs::read_to_string(fixture("16amd64-8n2c.v1.xml")).unwrap();
        let start = text.find("<distances ").unwrap();
        let end = text.find("</distances>").unwrap() + "</distances>".len();
        let mut m = format!(
            "<distances nbobjs=\"{n}\" relative_depth=\"{depth}\" latency_base=\"{base}\">"
        );
        for v in values {
            m.push_str(&format!("<latency value=\"{v}\"/>"));
        }
        m.push_str("</distances>");
        format!("{}{m}{}", &text[..start], &text[end..])
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
        #[test]
        fn v1_matrices_are_kept_exactly_when_numa_sized(
            n in 1usize..11,
            depth in 1usize..7,
            halves in any::<bool>(),
            raw in proptest::collection::vec(1u32..400, 100),
        ) {
            let base = if halves { 0.5 } else { 1.0 };
            let values: Vec<f64> = raw.iter().take(n * n).map(|&v| f64::from(v)).collect();
            let t = hwloc_xml::parse(&v1_with_matrix(n, depth, base, &values), "m.v1.xml").unwrap();
            check_invariants(&t);
            if n == 8 {
                let fractional = values.iter().any(|v| (v * base).fract() != 0.0);
                let expected: Vec<Vec<u32>> = values
                    .chunks(8)
                    .map(|row| {
                        row.iter()
                            .map(|v| if fractional { (v * base * 1000.0) as u32 } else { (v * base) as u32 })
                            .collect()
                    })
                    .collect();
                prop_assert_eq!(t.numa_distances, Some(expected));
            } else {
                prop_assert_eq!(t.numa_distances, None);
                prop_assert!(t.warnings.iter().any(|w| w.contains(&format!("between {n} objects"))), "{:?}", t.warnings);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]
        #[test]
        fn mutated_exports_never_panic(which in 0usize..5, muts in proptest::collection::vec(mutation(), 1..8)) {
            let mut text = base_texts().swap_remove(which);
            for m in &muts {
                text = apply(text, m);
            }
            match hwloc_xml::parse(&text, "mutated.xml") {
                Ok(t) => check_invariants(&t),
                Err(e) => {
                    let e = e.to_string();
                    prop_assert!(e.starts_with("hwloc XML 'mutated.xml'") && !e.contains('\n'), "{}", e)
                }
            }
        }
    }
}
